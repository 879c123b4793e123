//! Kernels over uniform quantized formats (issue 11): loads dequantize on the fly and the
//! arithmetic is `f32`; a quantized output is computed in `f32` and quantized once, at the end.
//! Exact answers of `sparse eval` (`sparse-cli/tests/eval.rs`, `quantized_values`) and the
//! interpreter on the dequantized values (what `sparse eval` runs) on random inputs.

use proptest::prelude::*;
use sparse::runtime::{CooTensor, DynamicStorage, SparseStorage};
use sparse::sparse_format;
use sparse_sparsifier::interp::{run, Operand, Output};
use sparse_sparsifier::{compile, TensorDecl, ValueType};

sparse_format! {
    pub Q = tensor<?x?x!quant.uniform<i8:f32, 0.5:10>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub QRange = tensor<?x?x!quant.uniform<i8<-100:100>:f32, 0.5:10>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub Q0 = tensor<?x?x!quant.uniform<i8:f32, 0.5>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub QB = tensor<?x?x!quant.uniform<i16:f32, 0.125:-3>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub QAxis = tensor<?x?x!quant.uniform<i8:f32:1, {0.2:20, 0.1:10, 0.3:30}>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub QRows = tensor<?x?x!quant.uniform<i8:f32:0, {0.5:1, 0.25:-2, 1.0:0, 0.125:5, 2.0:-1}>, #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>>;
    pub QX = tensor<?x!quant.uniform<u8:f32, 0.1:3>, #sparse_tensor.encoding<{ map = (i) -> (i : dense) }>>;
    pub QY = tensor<?x!quant.uniform<i8<-100:100>:f32, 2.0>, #sparse_tensor.encoding<{ map = (i) -> (i : dense) }>>;
    pub Csr32 = tensor<?x?xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub kernel spmv_q(y: &mut [f32], a: &Q<i8>, x: &[f32]) { y(i) = a(i, j) * x(j) }
    pub kernel spmv_range(y: &mut [f32], a: &QRange<i8>, x: &[f32]) { y(i) = a(i, j) * x(j) }
    pub kernel spmv_qy(y: &mut QY<i8>, a: &Q<i8>, x: &[f32]) { y(i) = a(i, j) * x(j) }
    pub kernel spmv_qx(y: &mut [f32], a: &Q0<i8>, x: &QX<u8>) { y(i) = a(i, j) * x(j) }
    pub kernel spmv_axis(y: &mut [f32], a: &QAxis<i8>, x: &[f32]) { y(i) = a(i, j) * x(j) }
    pub kernel spmv_rows(y: &mut [f32], a: &QRows<i8>, x: &[f32]) { y(i) = a(i, j) * x(j) }
    pub kernel copy_q(c: &mut Q<i8>, a: &Q<i8>) { c(i, j) = a(i, j) }
    pub kernel add_q(c: &mut Q<i8>, a: &Q<i8>, b: &Csr32<f32>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel spgemm_q(c: &mut Csr32<f32>, a: &Q<i8>, b: &QB<i16>) { c(i, j) = a(i, k) * b(k, j) }
    pub kernel mul_qb(c: &mut QB<i16>, a: &Q<i8>, b: &QB<i16>) { c(i, j) = a(i, j) * b(i, j) * 2.0 }
    // outputs whose levels add fill (a block's other elements, a 2:4 group's): rebuilt from
    // the real values, so the fill holds the zero point
    pub QBsr = tensor<?x?x!quant.uniform<i8:f32, 0.5:10>, #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>>;
    pub Q24 = tensor<?x?x!quant.uniform<i8:f32, 0.25:-7>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4) }>>;
    pub kernel copy_bsr(c: &mut QBsr<i8>, a: &Q<i8>) { c(i, j) = a(i, j) }
    pub kernel copy_24(c: &mut Q24<i8>, a: &Q<i8>) { c(i, j) = a(i, j) }
    // per-axis quantized sparse outputs: rebuilt from the real entries, each with its pair
    pub kernel copy_axis(c: &mut QAxis<i8>, a: &Q<i8>) { c(i, j) = a(i, j) }
    pub kernel spgemm_axis(c: &mut QAxis<i8>, a: &Csr32<f32>, b: &Csr32<f32>) { c(i, j) = a(i, k) * b(k, j) }
    // a dense one, written in place: each element quantized with its own pair
    pub QYAxis = tensor<?x!quant.uniform<i8:f32:0, {0.5:1, 2.0:-3}>, #sparse_tensor.encoding<{ map = (i) -> (i : dense) }>>;
    pub kernel spmv_axis_out(y: &mut QYAxis<i8>, a: &Q<i8>, x: &[f32]) { y(i) = a(i, j) * x(j) }
    // `b` in CSC next to `a` in CSR: converted first, as its real values
    pub QCsc = tensor<?x?x!quant.uniform<i8:f32, 0.25:-7>, #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>>;
    pub kernel add_qcsc(c: &mut Csr32<f32>, a: &Q<i8>, b: &QCsc<i8>) { c(i, j) = a(i, j) + b(i, j) }
}

#[test]
fn a_quantized_operand_is_converted_as_its_real_values() {
    let a = Q::from_coo_real([2, 3], a_entries()).unwrap();
    // b stores an explicit real 0 (its zero point -7) at (1, 0): left out by the conversion
    let b =
        QCsc::from_coo_real([2, 3], vec![([0, 1], 1.5), ([1, 0], 0.0), ([1, 2], -1.0)]).unwrap();
    assert_eq!(b.values(), &[-7, -1, -11]);
    let mut c = Csr32::from_coo([2, 3], []).unwrap();
    add_qcsc(&mut c, &a, &b).unwrap();
    // a's reals [[0, 0, 1.5], [0, 1, 58.5]] (its 0.25 reads 0 and is stored), b's [[0, 1.5, 0],
    // [0, 0, -1]]
    let got: Vec<([usize; 2], f32)> = c.iter().map(|(ij, v)| (ij, *v)).collect();
    assert_eq!(
        got,
        vec![
            ([0, 0], 0.0),
            ([0, 1], 1.5),
            ([0, 2], 1.5),
            ([1, 1], 1.0),
            ([1, 2], 57.5)
        ]
    );
}

#[test]
fn a_dense_per_axis_output_quantizes_each_element_with_its_pair() {
    let a = Q::from_coo_real([2, 3], a_entries()).unwrap();
    let mut y = QYAxis::from_dense_real([2], &[0.0, 0.0]).unwrap();
    spmv_axis_out(&mut y, &a, &X).unwrap();
    // y = (4.5, 177.5): 4.5 / 0.5 + 1 = 10; 177.5 / 2 - 3 = 85.75 -> 86, reading back 178
    assert_eq!(y.values(), &[10, 86]);
    assert_eq!(y.to_dense_real().unwrap(), vec![4.5, 178.0]);
}

#[test]
fn per_axis_sparse_outputs_quantize_each_column_with_its_pair() {
    // column j has (scale, zero point) (0.2, 20), (0.1, 10), (0.3, 30)
    let a = Q::from_coo_real([2, 3], a_entries()).unwrap();
    let mut c = QAxis::from_coo([2, 3], []).unwrap();
    copy_axis(&mut c, &a).unwrap();
    // a's reals: 0 (0.25 -> q 10 -> 0), 1.5, 1 (0.75 -> 1.5 -> q 12), 58.5 (100 saturates at
    // q 127)
    let reals: Vec<([usize; 2], f32)> =
        vec![([0, 0], 0.0), ([0, 2], 1.5), ([1, 1], 1.0), ([1, 2], 58.5)];
    assert_eq!(
        a.to_dense_real().unwrap(),
        vec![0.0, 0.0, 1.5, 0.0, 1.0, 58.5]
    );
    // quantized per column: 0 / 0.2 + 20 = 20; 1.5 / 0.3 + 30 = 35; 1 / 0.1 + 10 = 20;
    // 58.5 / 0.3 + 30 = 225 -> 127
    assert_eq!(c.values(), &[20, 35, 20, 127]);
    assert_eq!(c, QAxis::from_coo_real([2, 3], reals).unwrap());
    // SpGEMM through a workspace: [[1, 2], [0, 3]] * [[0.5, 0, 1], [0, 1, 0]]
    let a = Csr32::from_coo([2, 2], vec![([0, 0], 1.0), ([0, 1], 2.0), ([1, 1], 3.0)]).unwrap();
    let b = Csr32::from_coo([2, 3], vec![([0, 0], 0.5), ([0, 2], 1.0), ([1, 1], 1.0)]).unwrap();
    spgemm_axis(&mut c, &a, &b).unwrap();
    // [[0.5, 2, 1], [0, 3, 0]]: 0.5 / 0.2 + 20 = 22.5 -> 22 (ties to even); 2 / 0.1 + 10 = 30;
    // 1 / 0.3 + 30 = 33.3 -> 33; 3 / 0.1 + 10 = 40
    assert_eq!(c.values(), &[22, 30, 33, 40]);
    assert_eq!(c.to_dense_real().unwrap()[4], 3.0);
}

#[test]
fn the_fill_of_blocked_outputs_is_the_zero_point() {
    // A = [[0.5, 0, 1.5, 0], [0, 1, 0, 0], [0, 0, 0, 2], [0, 0, 0, 0]]: every value exact in
    // the three types
    let entries = vec![([0, 0], 0.5), ([0, 2], 1.5), ([1, 1], 1.0), ([2, 3], 2.0)];
    let a = Q::from_coo_real([4, 4], entries).unwrap();
    let want = a.to_dense_real().unwrap();
    let mut bsr = QBsr::from_coo([4, 4], []).unwrap();
    copy_bsr(&mut bsr, &a).unwrap();
    // three 2x2 blocks stored (rows 0-1 x cols 0-1 and 2-3, rows 2-3 x cols 2-3): eight of
    // their twelve elements are fill, each the zero point 10 (real 0)
    assert_eq!(bsr.values().len(), 12);
    assert_eq!(bsr.values().iter().filter(|&&q| q == 10).count(), 8);
    assert_eq!(bsr.to_dense_real().unwrap(), want);
    let mut nm = Q24::from_coo([4, 4], []).unwrap();
    copy_24(&mut nm, &a).unwrap();
    // two slots per group of 4 (one group per row): four unused slots, each the zero point -7
    assert_eq!(nm.values().len(), 8);
    assert_eq!(nm.values().iter().filter(|&&q| q == -7).count(), 4);
    assert_eq!(nm.to_dense_real().unwrap(), want);
}

/// A = [[0.25, 0, 1.3], [0, 0.75, 100]], the eval test's matrix; x = [1, 2, 3].
fn a_entries() -> Vec<([usize; 2], f32)> {
    vec![
        ([0, 0], 0.25),
        ([0, 2], 1.3),
        ([1, 1], 0.75),
        ([1, 2], 100.0),
    ]
}

const X: [f32; 3] = [1.0, 2.0, 3.0];

#[test]
fn spmv_matches_sparse_eval() {
    let a = Q::from_coo_real([2, 3], a_entries()).unwrap();
    let mut y = [7.0f32; 2];
    spmv_q(&mut y, &a, &X).unwrap();
    // `sparse eval`: ( 4.5, 177.5 )
    assert_eq!(y, [4.5, 177.5]);
    // a storage range clamps 210 to 100 (45): ( 4.5, 137 )
    let r = QRange::from_coo_real([2, 3], a_entries()).unwrap();
    spmv_range(&mut y, &r, &X).unwrap();
    assert_eq!(y, [4.5, 137.0]);
    // x quantized too (u8, scale 0.1, zero point 3: reads 1, 2, 3), A with zero point 0
    // (0, 1.5, 1, 63.5): ( 4.5, 192.5 )
    let a0 = Q0::from_coo_real([2, 3], a_entries()).unwrap();
    let x = QX::from_dense_real([3], &X).unwrap();
    assert_eq!(x.values(), &[13u8, 23, 33]);
    spmv_qx(&mut y, &a0, &x).unwrap();
    assert_eq!(y, [4.5, 192.5]);
}

#[test]
fn integer_only_spmv() {
    // A stores 10, 13, 12, 127 (zero point 10), x stores 13, 23, 33 (zero point 3):
    // y = 0.05 * (0*10 + 3*30, 2*20 + 117*30) = (4.5, 177.5), the f32 kernel's answer here
    let a = Q0::from_coo_real([2, 3], a_entries()).unwrap();
    let a10 = Q::from_coo_real([2, 3], a_entries()).unwrap();
    let x = QX::from_dense_real([3], &X).unwrap();
    let mut y = [0.0f32; 2];
    a10.spmv_int(x.values(), QX::<u8>::QUANT_PARAMS[0], &mut y)
        .unwrap();
    assert_eq!(y, [4.5, 177.5]);
    // per axis 0: each row's scale and zero point
    let r = QRows::from_coo_real([5, 3], vec![([0, 0], 1.0), ([4, 2], 3.0)]).unwrap();
    let mut y5 = [9.0f32; 5];
    r.spmv_int(x.values(), QX::<u8>::QUANT_PARAMS[0], &mut y5)
        .unwrap();
    // row 0: 1/0.5 + 1 = 3 -> (3-1) * 0.5 * 1 = 1; row 4: 3/2 - 1 = 0.5 -> 0 (half to even)
    // -> (0+1) * 2 * 3 = 6
    assert_eq!(y5, [1.0, 0.0, 0.0, 0.0, 6.0]);
    assert!(a.spmv_int(&[1u8, 2], (1.0, 0), &mut y).is_err());
}

#[test]
fn quantized_output_is_quantized_once() {
    let a = Q::from_coo_real([2, 3], a_entries()).unwrap();
    // 4.5 / 2 = 2.25 -> 2, 177.5 / 2 = 88.75 -> 89: `sparse eval` prints ( 2, 89 )
    let mut y = QY::from_dense([2], &[0i8, 0]).unwrap();
    spmv_qy(&mut y, &a, &X).unwrap();
    assert_eq!(y.values(), &[2i8, 89]);
    assert_eq!(y.to_dense_real().unwrap(), vec![4.0, 178.0]);
    // a sparse quantized output: the copy stores the same integers (`sparse eval`'s
    // `values : ( 10, 13, 12, 127 )`)
    let mut c = Q::from_coo([2, 3], vec![]).unwrap();
    copy_q(&mut c, &a).unwrap();
    assert_eq!(c.values(), &[10i8, 13, 12, 127]);
    assert_eq!(c, a);
    // an intersection into a quantized i16 output with a literal: B stores -1, 7, 3, 797
    // (0.25, 1.25, 0.75, 100); 2 * A * B = 0, 3.75, 1.5, 11700 -> -3, 27, 9, 32767 (clamped)
    let b = QB::from_coo_real([2, 3], a_entries()).unwrap();
    assert_eq!(b.values(), &[-1i16, 7, 3, 797]);
    let mut c = QB::from_coo([2, 3], vec![]).unwrap();
    mul_qb(&mut c, &a, &b).unwrap();
    assert_eq!(c.values(), &[-3i16, 27, 9, 32767]);
}

#[test]
fn per_axis_operands_pick_the_pair_by_the_dimension_coordinate() {
    // column j has pair j: (0.2, 20), (0.1, 10), (0.3, 30)
    let entries = vec![
        ([0, 0], 1.0f32),
        ([0, 1], 1.0),
        ([0, 2], 1.0),
        ([1, 1], -0.25),
        ([1, 2], 0.45),
    ];
    let a = QAxis::from_coo_real([2, 3], entries).unwrap();
    assert_eq!(a.values(), &[25i8, 20, 33, 8, 32]);
    let mut y = [0.0f32; 2];
    spmv_axis(&mut y, &a, &X).unwrap();
    let v = |q: i64, zp: i64, s: f32| (q - zp) as f32 * s;
    let y0 = v(25, 20, 0.2) * 1.0 + v(20, 10, 0.1) * 2.0 + v(33, 30, 0.3) * 3.0;
    let y1 = v(8, 10, 0.1) * 2.0 + v(32, 30, 0.3) * 3.0;
    assert_eq!(y, [y0, y1]);
    // a pair count other than the dimension's size is refused by the constructor
    assert!(QAxis::from_coo_real([2, 4], vec![]).is_err());
}

// ---- differential: the generated kernels against the interpreter ----

fn encoding(text: &str) -> sparse::runtime::sparse_ir::ir::VerifiedEncoding {
    match sparse_dsl::parse::parse_declaration(text).unwrap().declared {
        sparse_dsl::parse::Declared::Encoding(e) => e,
        sparse_dsl::parse::Declared::Tensor(t) => t.encoding.unwrap(),
    }
}

/// The interpreter's operand for a struct's real values (what `sparse eval` computes on).
fn operand<S: SparseStorage<Value = f32>>(
    s: &S,
    text: &str,
    entries: Vec<(Vec<usize>, f32)>,
) -> Operand<f32> {
    let mut coo = CooTensor::new(s.dim_shape().to_vec());
    for (c, v) in entries {
        coo.push(&c, v);
    }
    Operand::Storage(Box::new(
        DynamicStorage::from_coo(&encoding(text), &coo).unwrap(),
    ))
}

fn decl(name: &str, rank: usize, enc: Option<&str>) -> TensorDecl {
    TensorDecl {
        name: name.into(),
        shape: vec![None; rank],
        value: ValueType::F32,
        encoding: enc.map(encoding),
    }
}

fn dense_output(out: Output<f32>) -> Vec<f32> {
    match out {
        Output::Dense { values, .. } => values,
        Output::Sparse(_) => panic!("a dense output was expected"),
    }
}

fn sparse_output(out: Output<f32>) -> Vec<(Vec<usize>, f32)> {
    match out {
        Output::Sparse(s) => s.iter().map(|(c, v)| (c, *v)).collect(),
        Output::Dense { .. } => panic!("a sparse output was expected"),
    }
}

fn matrix(rows: usize, cols: usize) -> impl Strategy<Value = Vec<([usize; 2], f32)>> {
    proptest::collection::vec((0..3u8, -40.0f32..40.0), rows * cols).prop_map(move |cells| {
        cells
            .into_iter()
            .enumerate()
            .filter(|(_, (keep, _))| *keep == 0)
            .map(|(f, (_, v))| ([f / cols, f % cols], v))
            .collect()
    })
}

fn vector(n: usize) -> impl Strategy<Value = Vec<f32>> {
    proptest::collection::vec(-4.0f32..4.0, n)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn spmv_matches_the_interpreter(
        (rows, cols, a, x) in (1usize..6, 1usize..6).prop_flat_map(|(r, c)| {
            (Just(r), Just(c), matrix(r, c), vector(c))
        })
    ) {
        let q = Q::from_coo_real([rows, cols], a).unwrap();
        let real = q.dequantized();
        let p = compile(
            "y(i) = a(i,j) * x(j)",
            &[decl("y", 1, None), decl("a", 2, Some(Q::<i8>::ENCODING)), decl("x", 1, None)],
        )
        .unwrap();
        let ops = [
            Operand::Dense { shape: vec![rows], values: vec![0.0; rows] },
            operand(&real, Q::<i8>::ENCODING, real.iter().map(|(c, v)| (c.to_vec(), *v)).collect()),
            Operand::Dense { shape: vec![cols], values: x.clone() },
        ];
        let expect = dense_output(run(&p, &ops).unwrap());
        let mut y = vec![1.0; rows];
        spmv_q(&mut y, &q, &x).unwrap();
        prop_assert_eq!(&y, &expect);
        // quantized output: the interpreter's f32 result quantized once
        let mut qy = QY::from_dense([rows], &vec![0i8; rows]).unwrap();
        spmv_qy(&mut qy, &q, &x).unwrap();
        let quantized: Vec<i8> = expect.iter().map(|&v| QY::<i8>::quantize_value(v, 0) as i8).collect();
        prop_assert_eq!(qy.values(), &quantized[..]);
    }

    #[test]
    fn per_axis_spmv_matches_the_interpreter(
        (cols, a, x) in (1usize..6).prop_flat_map(|c| (Just(c), matrix(5, c), vector(c)))
    ) {
        // rows quantized per axis 0 (five pairs), a compressed, compressed format
        let q = QRows::from_coo_real([5, cols], a).unwrap();
        let real = q.dequantized();
        let p = compile(
            "y(i) = a(i,j) * x(j)",
            &[decl("y", 1, None), decl("a", 2, Some(QRows::<i8>::ENCODING)), decl("x", 1, None)],
        )
        .unwrap();
        let ops = [
            Operand::Dense { shape: vec![5], values: vec![0.0; 5] },
            operand(&real, QRows::<i8>::ENCODING, real.iter().map(|(c, v)| (c.to_vec(), *v)).collect()),
            Operand::Dense { shape: vec![cols], values: x.clone() },
        ];
        let expect = dense_output(run(&p, &ops).unwrap());
        let mut y = vec![1.0; 5];
        spmv_rows(&mut y, &q, &x).unwrap();
        prop_assert_eq!(&y, &expect);
    }

    #[test]
    fn sparse_outputs_match_the_interpreter(
        (rows, cols, a, b, bq) in (1usize..6, 1usize..6).prop_flat_map(|(r, c)| {
            (Just(r), Just(c), matrix(r, c), matrix(r, c), matrix(c, r))
        })
    ) {
        let qa = Q::from_coo_real([rows, cols], a).unwrap();
        let fb = Csr32::from_coo([rows, cols], b).unwrap();
        let qb = QB::from_coo_real([cols, rows], bq).unwrap();
        let ra = qa.dequantized();
        let rb = qb.dequantized();
        let a_op = || operand(&ra, Q::<i8>::ENCODING, ra.iter().map(|(c, v)| (c.to_vec(), *v)).collect());
        let b_op = operand(&fb, Csr32::<f32>::ENCODING, fb.iter().map(|(c, v)| (c.to_vec(), *v)).collect());
        let bq_op = || operand(&rb, QB::<i16>::ENCODING, rb.iter().map(|(c, v)| (c.to_vec(), *v)).collect());
        let empty = |shape: Vec<usize>, enc: &str| operand_empty(shape, enc);

        // a quantized sparse output of a union: the f32 sums quantized once
        let p = compile(
            "c(i,j) = a(i,j) + b(i,j)",
            &[decl("c", 2, Some(Q::<i8>::ENCODING)), decl("a", 2, Some(Q::<i8>::ENCODING)), decl("b", 2, Some(Csr32::<f32>::ENCODING))],
        )
        .unwrap();
        let ops = [empty(vec![rows, cols], Q::<i8>::ENCODING), a_op(), b_op];
        let expect: Vec<(Vec<usize>, i8)> = sparse_output(run(&p, &ops).unwrap())
            .into_iter()
            .map(|(c, v)| (c, Q::<i8>::quantize_value(v, 0) as i8))
            .collect();
        let mut c = Q::from_coo([rows, cols], vec![]).unwrap();
        add_q(&mut c, &qa, &fb).unwrap();
        let got: Vec<(Vec<usize>, i8)> = c.iter().map(|(c, v)| (c.to_vec(), *v)).collect();
        prop_assert_eq!(got, expect);

        // SpGEMM of two quantized operands (i8 and i16 storage) into f32 (a workspace)
        let p = compile(
            "c(i,j) = a(i,k) * b(k,j)",
            &[decl("c", 2, Some(Csr32::<f32>::ENCODING)), decl("a", 2, Some(Q::<i8>::ENCODING)), decl("b", 2, Some(QB::<i16>::ENCODING))],
        )
        .unwrap();
        let ops = [empty(vec![rows, rows], Csr32::<f32>::ENCODING), a_op(), bq_op()];
        let expect = sparse_output(run(&p, &ops).unwrap());
        let mut c = Csr32::from_coo([rows, rows], vec![]).unwrap();
        spgemm_q(&mut c, &qa, &qb).unwrap();
        let got: Vec<(Vec<usize>, f32)> = c.iter().map(|(c, v)| (c.to_vec(), *v)).collect();
        prop_assert_eq!(got, expect);
    }
}

fn operand_empty(shape: Vec<usize>, text: &str) -> Operand<f32> {
    let coo = CooTensor::new(shape);
    Operand::Storage(Box::new(
        DynamicStorage::from_coo(&encoding(text), &coo).unwrap(),
    ))
}
