//! Dense operands in XLA layouts (issue 11): kernels taking `DenseArray<T, Order>`, whose order
//! is an all-dense format of the block and whose padding is chosen at run time, against a
//! dense reference computed on the row-major elements; the padding is never read (it holds a
//! NaN that would poison any sum) and never written.

use proptest::prelude::*;
use sparse::runtime::half::f16;
use sparse::runtime::layout::{DenseArray, DenseLayout, StaticOrder};
use sparse::runtime::Value;
use sparse::sparse_format;

sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    pub Rm = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>;
    pub Cm = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : dense) }>;
    pub Vector = #sparse_tensor.encoding<{ map = (i) -> (i : dense) }>;
    // minor_to_major = [1, 0, 2]: `k` slowest, then `i`, `j` fastest
    pub KIJ = #sparse_tensor.encoding<{ map = (i, j, k) -> (k : dense, i : dense, j : dense) }>;
    pub kernel spmm_cm(c: &mut DenseArray<f64, Cm>, a: &Csr<f64>, b: &DenseArray<f64, Cm>) { c(i, k) = a(i, j) * b(j, k) }
    pub kernel spmm_rm_cm(c: &mut DenseArray<f64, Rm>, a: &Csr<f64>, b: &DenseArray<f64, Cm>) { c(i, k) = a(i, j) * b(j, k) }
    pub kernel spmv(y: &mut DenseArray<f64, Vector>, a: &Csr<f64>, x: &DenseArray<f64, Vector>) { y(i) = a(i, j) * x(j) }
    pub kernel add_into(c: &mut DenseArray<f64, Cm>, a: &Csr<f64>) { c(i, j) += a(i, j) }
    pub kernel scale(c: &mut DenseArray<f64, Rm>, a: &Csr<f64>) { c(i, j) = c(i, j) * a(i, j) }
    pub kernel rowmax(m: &mut [f64], t: &DenseArray<f64, KIJ>) { m(i) = max(j k, t(i, j, k)) }
    pub kernel spmm_f16(c: &mut DenseArray<f16, Cm>, a: &Csr<f16>, b: &DenseArray<f16, Rm>) { c(i, k) = a(i, j) * b(j, k) }
}

/// The padding value: a NaN, so a read of the padding shows in every result it touches.
const PAD: f64 = f64::NAN;

/// A random `rows x cols` sparse matrix as `(row, col, value)`, about a third stored, values
/// small integers (sums are exact, so results compare exactly).
fn triplets(rows: usize, cols: usize) -> impl Strategy<Value = Vec<(usize, usize, f64)>> {
    proptest::collection::vec((0..3u8, -4i8..=4), rows * cols).prop_map(move |cells| {
        cells
            .into_iter()
            .enumerate()
            .filter(|(_, (keep, v))| *keep == 0 && *v != 0)
            .map(|(f, (_, v))| (f / cols, f % cols, f64::from(v)))
            .collect()
    })
}

fn csr<V: Value>(shape: [usize; 2], t: &[(usize, usize, f64)], v: impl Fn(f64) -> V) -> Csr<V> {
    Csr::from_coo(shape, t.iter().map(|&(i, j, x)| ([i, j], v(x)))).unwrap()
}

/// `values` (row-major over `shape`) in `O`'s order, each dimension padded by `extra`.
fn array<V: Copy, O: StaticOrder>(
    shape: &[usize],
    extra: &[usize],
    values: &[V],
    pad: V,
) -> DenseArray<V, O> {
    let padded: Vec<usize> = shape.iter().zip(extra).map(|(s, e)| s + e).collect();
    let layout = DenseLayout::new(shape, O::MINOR_TO_MAJOR, Some(&padded), pad).unwrap();
    DenseArray::from_row_major(layout, values).unwrap()
}

/// The padding elements of `a`, as bits (NaN compares by its bits).
fn padding<V: Copy, O>(a: &DenseArray<V, O>, bits: impl Fn(V) -> u64) -> Vec<u64> {
    let l = a.layout();
    (0..l.buffer_len())
        .filter(|&at| l.multi_index(at).is_err())
        .map(|at| bits(a.values()[at]))
        .collect()
}

/// `A · B` densely, `a` as triplets, `b` row-major `k x n`.
fn spmm_reference(m: usize, n: usize, a: &[(usize, usize, f64)], b: &[f64]) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for &(i, j, v) in a {
        for k in 0..n {
            c[i * n + k] += v * b[j * n + k];
        }
    }
    c
}

#[test]
fn the_orders_are_the_formats_maps() {
    assert_eq!(<Rm<f64> as StaticOrder>::MINOR_TO_MAJOR, &[1, 0]);
    assert_eq!(<Cm<f64> as StaticOrder>::MINOR_TO_MAJOR, &[0, 1]);
    assert_eq!(<Vector<f64> as StaticOrder>::MINOR_TO_MAJOR, &[0]);
    assert_eq!(<KIJ<f64> as StaticOrder>::MINOR_TO_MAJOR, &[1, 0, 2]);
}

#[test]
fn a_known_product_in_padded_column_major() {
    // A = [[1, 0, 2], [0, 3, 0]], B = [[1, 2], [3, 4], [5, 6]]: A·B = [[11, 14], [9, 12]]
    let a = csr([2, 3], &[(0, 0, 1.0), (0, 2, 2.0), (1, 1, 3.0)], |x| x);
    let b = array::<f64, Cm>(&[3, 2], &[1, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], PAD);
    let mut c = array::<f64, Cm>(&[2, 2], &[2, 0], &[-1.0; 4], -7.0);
    spmm_cm(&mut c, &a, &b).unwrap();
    assert_eq!(c.to_row_major(), vec![11.0, 14.0, 9.0, 12.0]);
    // column-major, each column padded from 2 to 4 rows: the padding kept its -7
    assert_eq!(c.values(), &[11.0, 9.0, -7.0, -7.0, 14.0, 12.0, -7.0, -7.0]);
    // a shape that differs from the extents is an error naming the operand
    let short = array::<f64, Cm>(&[2, 2], &[0, 0], &[1.0; 4], 0.0);
    let err = spmm_cm(&mut c, &a, &short).unwrap_err().to_string();
    assert!(err.contains('b'), "{err}");
}

#[test]
fn the_built_in_spmm_checks_the_ranks_of_its_arrays() {
    let a = csr([2, 3], &[(0, 0, 1.0)], |x| x);
    let b = array::<f64, Rm>(&[3, 1], &[0, 0], &[1.0, 2.0, 3.0], 0.0);
    let mut y = array::<f64, Vector>(&[2], &[0], &[0.0, 0.0], 0.0);
    assert_eq!(
        a.spmm_array(&b, &mut y),
        Err(sparse::runtime::StorageError::RankMismatch {
            expected: 2,
            got: 1
        })
    );
    let mut c = array::<f64, Cm>(&[2, 2], &[0, 0], &[0.0; 4], 0.0);
    assert!(matches!(
        a.spmm_array(&b, &mut c),
        Err(sparse::runtime::StorageError::LengthMismatch { .. })
    ));
}

#[test]
fn a_rank_3_reduction_reads_through_the_strides() {
    // t(i, j, k) = 100 i + 10 j + k over 2 x 3 x 4: the row maximum is 100 i + 23
    let shape = [2, 3, 4];
    let values: Vec<f64> = (0..24)
        .map(|f| f64::from(100 * (f / 12) + 10 * (f / 4 % 3) + f % 4))
        .collect();
    let t = array::<f64, KIJ>(&shape, &[1, 1, 1], &values, PAD);
    assert_eq!(t.strides(), &[4, 1, 12]);
    let mut m = vec![0.0; 2];
    rowmax(&mut m, &t).unwrap();
    assert_eq!(m, vec![23.0, 123.0]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn kernels_on_padded_layouts_match_the_dense_reference(
        (m, k, a) in (1usize..7, 1usize..7).prop_flat_map(|(m, k)| (Just(m), Just(k), triplets(m, k))),
        n in 1usize..5,
        extra in proptest::collection::vec(0usize..3, 4),
        seed in proptest::collection::vec(-4i8..=4, 64),
    ) {
        let a_csr = csr([m, k], &a, |x| x);
        let b: Vec<f64> = (0..k * n).map(|f| f64::from(seed[f % 64])).collect();
        let want = spmm_reference(m, n, &a, &b);

        // C column-major and B column-major, both padded
        let bc = array::<f64, Cm>(&[k, n], &extra[..2], &b, PAD);
        let mut c = array::<f64, Cm>(&[m, n], &extra[2..], &vec![5.0; m * n], -3.0);
        spmm_cm(&mut c, &a_csr, &bc).unwrap();
        prop_assert_eq!(c.to_row_major(), want.clone());
        prop_assert!(padding(&c, f64::to_bits).iter().all(|&p| p == (-3.0f64).to_bits()));

        // C row-major from B column-major
        let mut r = array::<f64, Rm>(&[m, n], &extra[1..3], &vec![5.0; m * n], PAD);
        spmm_rm_cm(&mut r, &a_csr, &bc).unwrap();
        prop_assert_eq!(r.to_row_major(), want.clone());
        prop_assert!(padding(&r, f64::to_bits).iter().all(|&p| p == PAD.to_bits()));

        // the built-in, generic over both orders
        let br = array::<f64, Rm>(&[k, n], &extra[1..3], &b, PAD);
        let mut r2 = array::<f64, Rm>(&[m, n], &extra[..2], &vec![5.0; m * n], PAD);
        a_csr.spmm_array(&br, &mut r2).unwrap();
        prop_assert_eq!(r2.to_row_major(), want.clone());
        prop_assert!(padding(&r2, f64::to_bits).iter().all(|&p| p == PAD.to_bits()));
        let mut c2 = array::<f64, Cm>(&[m, n], &extra[2..], &vec![5.0; m * n], -3.0);
        a_csr.spmm_array(&br, &mut c2).unwrap();
        prop_assert_eq!(c2.to_row_major(), want.clone());
        a_csr.spmm_array(&bc, &mut c2).unwrap();
        prop_assert_eq!(c2.to_row_major(), want.clone());
        prop_assert!(padding(&c2, f64::to_bits).iter().all(|&p| p == (-3.0f64).to_bits()));

        // `+=` adds to what C holds
        let mut acc = array::<f64, Cm>(&[m, k], &extra[..2], &vec![1.0; m * k], PAD);
        add_into(&mut acc, &a_csr).unwrap();
        let mut want_acc = vec![1.0; m * k];
        for &(i, j, v) in &a {
            want_acc[i * k + j] += v;
        }
        prop_assert_eq!(acc.to_row_major(), want_acc);

        // the output read on the right: `c(i, j) = c(i, j) * a(i, j)` (zero where `a` stores none)
        let start: Vec<f64> = (0..m * k).map(|f| f64::from(seed[f % 64])).collect();
        let mut s = array::<f64, Rm>(&[m, k], &extra[2..], &start, PAD);
        scale(&mut s, &a_csr).unwrap();
        let mut want_s = vec![0.0; m * k];
        for &(i, j, v) in &a {
            want_s[i * k + j] = start[i * k + j] * v;
        }
        prop_assert_eq!(s.to_row_major(), want_s);

        // rank 1: padded vectors
        let x: Vec<f64> = (0..k).map(|f| f64::from(seed[f])).collect();
        let xv = array::<f64, Vector>(&[k], &extra[..1], &x, PAD);
        let mut y = array::<f64, Vector>(&[m], &extra[1..2], &vec![9.0; m], PAD);
        spmv(&mut y, &a_csr, &xv).unwrap();
        let mut want_y = vec![0.0; m];
        for &(i, j, v) in &a {
            want_y[i] += v * x[j];
        }
        prop_assert_eq!(y.to_row_major(), want_y);

        // f16 values, computed in f32: small integers are exact
        let a16 = csr([m, k], &a, f16::from_f64);
        let b16: Vec<f16> = b.iter().map(|&v| f16::from_f64(v)).collect();
        let b16 = array::<f16, Rm>(&[k, n], &extra[..2], &b16, f16::NAN);
        let mut c16 = array::<f16, Cm>(&[m, n], &extra[2..], &vec![f16::ONE; m * n], f16::NAN);
        spmm_f16(&mut c16, &a16, &b16).unwrap();
        let got: Vec<f64> = c16.to_row_major().iter().map(|v| v.to_f64()).collect();
        prop_assert_eq!(got, want);
        prop_assert!(padding(&c16, |v| u64::from(v.to_bits())).iter().all(|&p| p == u64::from(f16::NAN.to_bits())));
    }
}
