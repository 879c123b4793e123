//! Kernels on complex values (issue 11): `Complex<f64>` and `Complex<f32>` (num-complex, through
//! the runtime's re-export) in `sparse_format!` kernels, against a dense reference computed in
//! the same order; literals are real (`2` is `2 + 0i`); `min`/`max` refuse complex values.

use sparse::runtime::num_complex::Complex;
use sparse::sparse_format;
use sparse_sparsifier::{compile, TensorDecl, ValueType};

type C = Complex<f64>;

sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    pub Dcsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>;
    pub kernel spmv_c(y: &mut [Complex<f64>], a: &Csr<Complex<f64>>, x: &[Complex<f64>]) { y(i) = a(i, j) * x(j) }
    pub kernel spgemm_c(c: &mut Csr<Complex<f64>>, a: &Csr<Complex<f64>>, b: &Csr<Complex<f64>>) { c(i, j) = a(i, k) * b(k, j) }
    pub kernel combine_c(c: &mut Dcsr<Complex<f64>>, a: &Csr<Complex<f64>>, b: &Csr<Complex<f64>>) { c(i, j) = 2 * a(i, j) - b(i, j) / 4.0 }
    pub kernel total_c(s: &mut Complex<f64>, a: &Csr<Complex<f64>>) { s = sum(i j, a(i, j)) }
    pub kernel add_spmv_c32(y: &mut [Complex<f32>], a: &Csr<Complex<f32>>, x: &[Complex<f32>]) { y(i) += a(i, j) * x(j) }
}

/// A 5 x 4 pattern with complex values (row 2 empty).
fn a_entries() -> Vec<([usize; 2], C)> {
    vec![
        ([0, 0], C::new(1.0, 2.0)),
        ([0, 3], C::new(-0.5, 0.25)),
        ([1, 1], C::new(0.0, -3.0)),
        ([3, 0], C::new(4.0, 0.0)),
        ([3, 2], C::new(1.5, -1.5)),
        ([4, 3], C::new(-2.0, 1.0)),
    ]
}

/// The dense row-major array of `entries` (`m x n`).
fn dense(m: usize, n: usize, entries: &[([usize; 2], C)]) -> Vec<C> {
    let mut d = vec![C::new(0.0, 0.0); m * n];
    for &([i, j], v) in entries {
        d[i * n + j] += v;
    }
    d
}

fn stored(c: &Csr<C>) -> Vec<([usize; 2], C)> {
    c.iter().map(|(ij, v)| (ij, *v)).collect()
}

#[test]
fn complex_spmv_and_sum_equal_the_dense_computation() {
    let a = Csr::from_coo([5, 4], a_entries()).unwrap();
    let x = [
        C::new(1.0, 1.0),
        C::new(2.0, -1.0),
        C::new(0.0, 0.5),
        C::new(-1.0, 0.0),
    ];
    let mut y = [C::new(9.0, 9.0); 5];
    spmv_c(&mut y, &a, &x).unwrap();
    let d = dense(5, 4, &a_entries());
    // each row's stored products added in column order, from 0
    let want: Vec<C> = (0..5)
        .map(|i| {
            (0..4)
                .filter(|&j| d[i * 4 + j] != C::new(0.0, 0.0))
                .fold(C::new(0.0, 0.0), |s, j| s + d[i * 4 + j] * x[j])
        })
        .collect();
    assert_eq!(y.to_vec(), want);
    // (1+2i)(1+i) + (-0.5+0.25i)(-1) = (-1+3i) + (0.5-0.25i)
    assert_eq!(y[0], C::new(-0.5, 2.75));
    assert_eq!(y[2], C::new(0.0, 0.0));

    let mut s = C::new(7.0, 7.0);
    total_c(&mut s, &a).unwrap();
    let sum = a_entries()
        .iter()
        .fold(C::new(0.0, 0.0), |s, &(_, v)| s + v);
    assert_eq!(s, sum);
}

#[test]
fn complex_spgemm_and_combination_equal_the_dense_computation() {
    let a = Csr::from_coo([5, 4], a_entries()).unwrap();
    let b_entries = vec![
        ([0, 1], C::new(0.5, -1.0)),
        ([1, 0], C::new(2.0, 2.0)),
        ([2, 2], C::new(-1.0, 0.0)),
        ([3, 1], C::new(0.0, 1.0)),
        ([3, 2], C::new(3.0, -0.5)),
    ];
    let b = Csr::from_coo([4, 3], b_entries.clone()).unwrap();
    let mut c = Csr::from_coo([5, 3], []).unwrap();
    spgemm_c(&mut c, &a, &b).unwrap();
    let (da, db) = (dense(5, 4, &a_entries()), dense(4, 3, &b_entries));
    let zero = C::new(0.0, 0.0);
    let mut want = Vec::new();
    for i in 0..5 {
        for j in 0..3 {
            // the products of stored pairs, k ascending (Gustavson's order)
            let terms: Vec<C> = (0..4)
                .filter(|&k| da[i * 4 + k] != zero && db[k * 3 + j] != zero)
                .map(|k| da[i * 4 + k] * db[k * 3 + j])
                .collect();
            if !terms.is_empty() {
                want.push(([i, j], terms.iter().fold(C::new(-0.0, -0.0), |s, t| s + t)));
            }
        }
    }
    assert_eq!(stored(&c), want);
    // row 0: (1+2i)(0.5-i) at (0,1) plus (-0.5+0.25i)·i at (0,1), and (-0.5+0.25i)(3-0.5i) at (0,2)
    assert_eq!(want[0], ([0, 1], C::new(2.5, 0.0) + C::new(-0.25, -0.5)));

    // 2·a - b/4 over the union of the patterns (the same shape: a's first 3 columns)
    let a3: Vec<([usize; 2], C)> = a_entries()
        .into_iter()
        .filter(|(ij, _)| ij[1] < 3)
        .collect();
    let b5: Vec<([usize; 2], C)> = b_entries
        .iter()
        .map(|&([i, j], v)| ([i + 1, j], v))
        .collect();
    let (a3s, b5s) = (
        Csr::from_coo([5, 3], a3.clone()).unwrap(),
        Csr::from_coo([5, 3], b5.clone()).unwrap(),
    );
    let mut out = Dcsr::from_coo([5, 3], []).unwrap();
    combine_c(&mut out, &a3s, &b5s).unwrap();
    let (dx, dy) = (dense(5, 3, &a3), dense(5, 3, &b5));
    let got: Vec<([usize; 2], C)> = out.iter().map(|(ij, v)| (ij, *v)).collect();
    let mut want = Vec::new();
    for i in 0..5 {
        for j in 0..3 {
            let (x, y) = (dx[i * 3 + j], dy[i * 3 + j]);
            let value = match (x != zero, y != zero) {
                (true, true) => C::new(2.0, 0.0) * x - y / C::new(4.0, 0.0),
                (true, false) => C::new(2.0, 0.0) * x,
                (false, true) => -(y / C::new(4.0, 0.0)),
                (false, false) => continue,
            };
            want.push(([i, j], value));
        }
    }
    assert_eq!(got, want);
}

#[test]
fn complex_f32_adds_into_its_output() {
    type C32 = Complex<f32>;
    let a = Csr::from_coo(
        [2, 2],
        [([0, 0], C32::new(1.0, 1.0)), ([1, 1], C32::new(0.0, 2.0))],
    )
    .unwrap();
    let mut y = [C32::new(1.0, 0.0), C32::new(0.0, 1.0)];
    add_spmv_c32(&mut y, &a, &[C32::new(3.0, 0.0), C32::new(1.0, 1.0)]).unwrap();
    // y + [(1+i)·3, 2i·(1+i)] = [1 + 3 + 3i, i - 2 + 2i]
    assert_eq!(y, [C32::new(4.0, 3.0), C32::new(-2.0, 3.0)]);
}

#[test]
fn min_and_max_refuse_complex_values() {
    let decl = |name: &str, shape: Vec<Option<usize>>| TensorDecl {
        name: name.into(),
        shape,
        value: ValueType::C64,
        encoding: None,
    };
    let decls = [decl("m", vec![Some(3)]), decl("A", vec![Some(3), Some(4)])];
    for (op, statement) in [
        ("min", "m(i) = min(j, A(i, j))"),
        ("max", "m(i) = max(j, A(i, j))"),
    ] {
        let err = compile(statement, &decls).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("the reduction `{op}` needs ordered values, but `m` holds complex<f64>"),
            "{statement}"
        );
    }
}
