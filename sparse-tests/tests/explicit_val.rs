//! `explicitVal` / `implicitVal` (issue 11): a format whose every stored entry holds one
//! constant stores no values array (a pattern: indices only). Exact arrays, the print form, the
//! errors of every constructor, the dynamic storage, and the built-in and declared kernels
//! against the plain format with all-ones values and the interpreter.

use sparse::runtime::{CooTensor, DynamicStorage, IndexBuffer, SparseStorage, StorageError};
use sparse::sparse_format;
use sparse_sparsifier::interp::{run, Operand, Output};
use sparse_sparsifier::{compile, TensorDecl, ValueType};

sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    pub PatCsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), explicitVal = 1.0 : f64, implicitVal = 0.0 : f64 }>;
    pub PatCsc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), explicitVal = 1.0 : f64, implicitVal = 0.0 : f64 }>;
    pub PatCoo = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(nonunique)), explicitVal = 1.0 : f64 }>;
    pub PatBsr = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense), explicitVal = 1.0 : f64 }>;
    pub PatI32 = tensor<?x?xi32, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), explicitVal = 1 : i32, implicitVal = 0 : i32 }>>;
    pub Minus = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), explicitVal = -2.5 : f64 }>;
    pub kernel spmv_pat(y: &mut [f64], a: &PatCsr<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel spmv_minus(y: &mut [f64], a: &Minus<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel spmv_coo(y: &mut [f64], a: &PatCoo<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel spmv_i32(y: &mut [i32], a: &PatI32<i32>, x: &[i32]) { y(i) = a(i, j) * x(j) }
    pub kernel add_pat(c: &mut Csr<f64>, a: &PatCsr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel spgemm_pat(c: &mut Csr<f64>, a: &PatCsr<f64>, b: &PatCsr<f64>) { c(i, j) = a(i, k) * b(k, j) }
    // `b` by columns conflicts with `a`'s rows: the sparsifier converts the pattern first
    pub kernel add_csc(c: &mut Csr<f64>, a: &Csr<f64>, b: &PatCsc<f64>) { c(i, j) = a(i, j) + b(i, j) }
}

/// The 3 x 4 pattern of every test: rows 0 and 2, columns given out of order.
fn pattern() -> Vec<[usize; 2]> {
    vec![[0, 3], [2, 0], [0, 1], [2, 2]]
}

fn ones(p: &[[usize; 2]]) -> Vec<([usize; 2], f64)> {
    p.iter().map(|&c| (c, 1.0)).collect()
}

const DENSE: [f64; 12] = [0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0];

const PRINT: &str = "---- Sparse Tensor ----
nse = 4
dim = ( 3, 4 )
lvl = ( 3, 4 )
pos[1] : ( 0, 2, 2, 4 )
crd[1] : ( 1, 3, 0, 2 )
values : ( 1, 1, 1, 1 )
----
";

/// The pattern CSR's encoding, for the dynamic storage.
fn encoding() -> sparse::runtime::sparse_ir::verify::VerifiedEncoding {
    PatCsr::<f64>::encoding().verify().unwrap()
}

fn coo(shape: [usize; 2], entries: &[([usize; 2], f64)]) -> CooTensor<f64> {
    let mut t = CooTensor::new(shape.to_vec());
    for (c, v) in entries {
        t.push(c, *v);
    }
    t
}

#[test]
fn pattern_csr_arrays_print_and_reads() {
    let p = PatCsr::<f64>::from_coo([3, 4], ones(&pattern())).unwrap();
    assert_eq!(p.positions(1), Some(&[0usize, 2, 2, 4][..]));
    assert_eq!(p.coordinates(1), Some(&[1usize, 3, 0, 2][..]));
    assert_eq!(p.nse(), 4);
    assert_eq!(p.explicit_value(), 1.0);
    assert!(p.value_slice().is_empty());
    assert_eq!(SparseStorage::explicit_value(&p), Some(&1.0));
    assert_eq!(p.to_string(), PRINT);
    assert_eq!(p.to_dense().unwrap(), DENSE);
    assert_eq!(p.get([0, 3]), Some(&1.0));
    assert_eq!(p.get([1, 3]), None);
    assert_eq!(p.get([3, 0]), None);
    let it: Vec<([usize; 2], f64)> = p.iter().map(|(c, v)| (c, *v)).collect();
    assert_eq!(
        it,
        vec![([0, 1], 1.0), ([0, 3], 1.0), ([2, 0], 1.0), ([2, 2], 1.0)]
    );
    let mut fe = Vec::new();
    p.for_each(|c, v| fe.push((c, *v)));
    assert_eq!(fe, it);
    let lv: Vec<([usize; 2], f64)> = p.iter_levels().map(|(c, v)| (c, *v)).collect();
    assert_eq!(lv, it);
    let c = p.to_coo();
    assert_eq!(c.coords, vec![0, 1, 0, 3, 2, 0, 2, 2]);
    assert_eq!(c.values, vec![1.0; 4]);
    p.validate().unwrap();
    // the dense form stores the entries that are not zero, each of which is explicitVal
    let d = PatCsr::<f64>::from_dense([3, 4], &DENSE).unwrap();
    assert_eq!(d, p);
    // raw parts: no values
    let parts = p.clone().into_raw_parts();
    assert_eq!(parts.pos_1, vec![0, 2, 2, 4]);
    assert_eq!(parts.crd_1, vec![1, 3, 0, 2]);
    assert_eq!(PatCsr::<f64>::from_raw_parts(parts).unwrap(), p);
    // another value type: the constant converted
    let q = PatCsr::<f32>::from_dense([3, 4], &DENSE.map(|v| v as f32)).unwrap();
    assert_eq!(q.explicit_value(), 1.0f32);
    assert_eq!(q.to_string(), PRINT);
    let i = PatI32::from_coo([3, 4], pattern().into_iter().map(|c| (c, 1))).unwrap();
    assert_eq!(i.explicit_value(), 1i32);
    assert_eq!(i.to_dense().unwrap(), DENSE.map(|v| v as i32));
}

#[test]
fn memory_is_the_plain_csr_minus_its_values() {
    let p = PatCsr::<f64>::from_coo([3, 4], ones(&pattern())).unwrap();
    let c = Csr::<f64>::from_coo([3, 4], ones(&pattern())).unwrap();
    // 4 positions and 4 coordinates of 8 bytes; the plain CSR adds 4 values of 8 bytes
    assert_eq!(p.memory_bytes(), 64);
    assert_eq!(c.memory_bytes(), 96);
    assert_eq!(
        c.memory_bytes() - p.memory_bytes(),
        4 * std::mem::size_of::<f64>()
    );
    let d = DynamicStorage::from_coo(&encoding(), &coo([3, 4], &ones(&pattern()))).unwrap();
    assert_eq!(d.memory_bytes(), 64);
}

#[test]
fn a_value_other_than_explicit_val_is_an_error() {
    let msg = |e: StorageError| e.to_string();
    let mut entries = ones(&pattern());
    entries[1].1 = 2.0; // [2, 0]
    let e = PatCsr::<f64>::from_coo([3, 4], entries.clone()).unwrap_err();
    assert_eq!(
        e,
        StorageError::ExplicitValueMismatch {
            coords: vec![2, 0],
            value: "2".into(),
            explicit: "1".into()
        }
    );
    assert_eq!(
        msg(e),
        "entry at [2, 0]: value 2 differs from explicitVal 1"
    );
    let d = DynamicStorage::from_coo(&encoding(), &coo([3, 4], &entries)).unwrap_err();
    assert_eq!(
        msg(d),
        "entry at [2, 0]: value 2 differs from explicitVal 1"
    );
    // from_dense: an element neither zero nor explicitVal
    let mut dense = DENSE;
    dense[10] = 0.5; // [2, 2]
    let e = PatCsr::<f64>::from_dense([3, 4], &dense).unwrap_err();
    assert_eq!(
        msg(e),
        "entry at [2, 2]: value 0.5 differs from explicitVal 1"
    );
    let d = DynamicStorage::from_dense(&encoding(), &[3, 4], &dense).unwrap_err();
    assert_eq!(
        msg(d),
        "entry at [2, 2]: value 0.5 differs from explicitVal 1"
    );
    // duplicates are summed by a unique last level: two ones at [0, 1] hold 2
    let mut dup = ones(&pattern());
    dup.push(([0, 1], 1.0));
    let e = PatCsr::<f64>::from_coo([3, 4], dup.clone()).unwrap_err();
    assert_eq!(
        msg(e),
        "entry at [0, 1]: value 2 differs from explicitVal 1"
    );
    // ... and kept apart by a non-unique one
    let c = PatCoo::<f64>::from_coo([3, 4], dup.clone()).unwrap();
    assert_eq!(c.nse(), 5);
    assert_eq!(c.to_dense().unwrap()[1], 2.0);
    // an explicit zero the format stores (a BSR block's fill) differs too
    let e = PatBsr::<f64>::from_coo([2, 4], vec![([0, 0], 1.0)]).unwrap_err();
    assert_eq!(
        msg(e),
        "entry at [0, 1]: value 0 differs from explicitVal 1"
    );
    let full: Vec<([usize; 2], f64)> = [[0, 2], [0, 3], [1, 2], [1, 3]]
        .iter()
        .map(|&c| (c, 1.0))
        .collect();
    let b = PatBsr::<f64>::from_coo([2, 4], full).unwrap();
    assert_eq!(
        b.to_dense().unwrap(),
        [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0]
    );
    // the dynamic storage's raw parts: no values, or one per stored entry equal to explicitVal
    let pos = || vec![None, Some(IndexBuffer::Native(vec![0, 2, 2, 4]))];
    let crd = || vec![None, Some(IndexBuffer::Native(vec![1, 3, 0, 2]).into())];
    let enc = encoding();
    let s = DynamicStorage::<f64>::from_raw_parts(&enc, &[3, 4], pos(), crd(), vec![]).unwrap();
    assert_eq!(s.to_dense().unwrap(), DENSE);
    let t = DynamicStorage::from_raw_parts(&enc, &[3, 4], pos(), crd(), vec![1.0; 4]).unwrap();
    assert_eq!(t, s);
    let e = DynamicStorage::from_raw_parts(&enc, &[3, 4], pos(), crd(), vec![1.0, 1.0, 3.0, 1.0])
        .unwrap_err();
    assert_eq!(
        msg(e),
        "entry at [2, 0]: value 3 differs from explicitVal 1"
    );
    let e = DynamicStorage::from_raw_parts(&enc, &[3, 4], pos(), crd(), vec![1.0; 3]).unwrap_err();
    assert_eq!(
        msg(e),
        "level 1: invariant 'one value per stored position' violated at position 3: 3 values for 4 positions"
    );
    // a conversion into a pattern checks the same way
    let plain = Csr::<f64>::from_coo([3, 4], entries).unwrap();
    let e = plain.convert::<PatCsr<f64>>().unwrap_err();
    assert_eq!(
        msg(e),
        "entry at [2, 0]: value 2 differs from explicitVal 1"
    );
}

#[test]
fn the_dynamic_storage_agrees() {
    let p = PatCsr::<f64>::from_coo([3, 4], ones(&pattern())).unwrap();
    let d = DynamicStorage::from_coo(&encoding(), &coo([3, 4], &ones(&pattern()))).unwrap();
    assert_eq!(d.to_string(), PRINT);
    assert!(d.values().is_empty());
    assert_eq!(d.explicit_value(), Some(&1.0));
    assert_eq!(d.nse(), 4);
    assert_eq!(d.value_at(3), Some(&1.0));
    assert_eq!(d.value_at(4), None);
    assert_eq!(d.get(&[2, 2]), Some(&1.0));
    assert_eq!(d.to_coo(), p.to_coo());
    assert_eq!(d.to_dense().unwrap(), DENSE);
    for l in 0..2 {
        assert_eq!(
            d.position_buffer(l).map(|b| b.to_vec()),
            p.position_buffer(l).map(|b| b.to_vec())
        );
        assert_eq!(
            d.coordinate_buffer(l).map(|b| b.to_vec()),
            p.coordinate_buffer(l).map(|b| b.to_vec())
        );
    }
    let text = d.clone().map_values(|v| format!("<{v}>"));
    assert_eq!(text.explicit_value().map(String::as_str), Some("<1>"));
    assert!(text.to_string().contains("values : ( <1>, <1>, <1>, <1> )"));
    let raw = d.clone().into_raw_parts();
    assert!(raw.values.is_empty());
    // transposes are views: the constant moves with the arrays
    let t = d.transpose().unwrap();
    assert_eq!(t.explicit_value(), Some(&1.0));
    let pt = p.clone().transpose();
    assert_eq!(pt.explicit_value(), 1.0);
    assert_eq!(pt.coordinates(1), p.coordinates(1));
    assert_eq!(pt.get([3, 0]), Some(&1.0));
    let tt: Vec<(Vec<usize>, f64)> = t.iter().map(|(c, v)| (c, *v)).collect();
    let ptt: Vec<(Vec<usize>, f64)> = pt.iter().map(|(c, v)| (c.to_vec(), *v)).collect();
    assert_eq!(tt, ptt);
    // a conversion out of a pattern carries the constant as each entry's value
    let c: Csr<f64> = p.convert().unwrap();
    assert_eq!(c.values(), &[1.0; 4]);
    let back: PatCsr<f64> = c.convert().unwrap();
    assert_eq!(back, p);
    let dc = DynamicStorage::from_coo(&encoding(), &coo([3, 4], &ones(&pattern())))
        .unwrap()
        .convert(&Csr::<f64>::encoding().verify().unwrap())
        .unwrap();
    assert_eq!(dc.values(), &[1.0; 4]);
}

#[test]
fn built_in_kernels_equal_the_plain_csr_with_ones() {
    let p = PatCsr::<f64>::from_coo([3, 4], ones(&pattern())).unwrap();
    let c = Csr::<f64>::from_coo([3, 4], ones(&pattern())).unwrap();
    let x = [0.5, -2.0, 3.25, 7.0];
    let (mut yp, mut yc) = (vec![f64::NAN; 3], vec![f64::NAN; 3]);
    p.spmv(&x, &mut yp).unwrap();
    c.spmv(&x, &mut yc).unwrap();
    assert_eq!(yp, vec![5.0, 0.0, 3.75]);
    assert_eq!(yp, yc);
    let mut yq = vec![f64::NAN; 3];
    p.spmv_par(&x, &mut yq).unwrap();
    assert_eq!(yq, yp);
    let (mut tp, mut tc) = (vec![f64::NAN; 4], vec![f64::NAN; 4]);
    let z = [1.5, 4.0, -1.0];
    p.spmv_transpose(&z, &mut tp).unwrap();
    c.spmv_transpose(&z, &mut tc).unwrap();
    assert_eq!(tp, vec![-1.0, 1.5, -1.0, 1.5]);
    assert_eq!(tp, tc);
    let b: Vec<f64> = (0..8).map(|k| k as f64 - 2.5).collect();
    let (mut cp, mut cc) = (vec![f64::NAN; 6], vec![f64::NAN; 6]);
    p.spmm(
        &b,
        &mut cp,
        2,
        sparse::runtime::generated::DenseOrder::RowMajor,
    )
    .unwrap();
    c.spmm(
        &b,
        &mut cc,
        2,
        sparse::runtime::generated::DenseOrder::RowMajor,
    )
    .unwrap();
    assert_eq!(cp, cc);
    // a full-block BSR pattern against its dense product
    let full: Vec<([usize; 2], f64)> = [[0, 2], [0, 3], [1, 2], [1, 3]]
        .iter()
        .map(|&c| (c, 1.0))
        .collect();
    let bsr = PatBsr::<f64>::from_coo([2, 4], full).unwrap();
    let mut y = vec![f64::NAN; 2];
    bsr.spmv(&x, &mut y).unwrap();
    assert_eq!(y, vec![10.25, 10.25]);
}

fn decl(
    name: &str,
    shape: &[usize],
    value: ValueType,
    encoding: Option<sparse::runtime::sparse_ir::verify::VerifiedEncoding>,
) -> TensorDecl {
    TensorDecl {
        name: name.into(),
        shape: shape.iter().map(|&n| Some(n)).collect(),
        value,
        encoding,
    }
}

fn dense(shape: &[usize], values: &[f64]) -> Operand<f64> {
    Operand::Dense {
        shape: shape.to_vec(),
        values: values.to_vec(),
    }
}

fn interp_dense(out: Output<f64>) -> Vec<f64> {
    match out {
        Output::Dense { values, .. } => values,
        Output::Sparse(s) => s.to_dense().unwrap(),
    }
}

fn sparse_entries(out: Output<f64>) -> Vec<(Vec<usize>, u64)> {
    match out {
        Output::Sparse(s) => s.iter().map(|(c, v)| (c, v.to_bits())).collect(),
        Output::Dense { .. } => panic!("a sparse output was expected"),
    }
}

fn csr_entries(c: &Csr<f64>) -> Vec<(Vec<usize>, u64)> {
    c.iter().map(|(c, v)| (c.to_vec(), v.to_bits())).collect()
}

#[test]
fn declared_kernels_read_the_constant_as_the_interpreter_does() {
    let pat = encoding();
    let plain = Csr::<f64>::encoding().verify().unwrap();
    let p = PatCsr::<f64>::from_coo([3, 4], ones(&pattern())).unwrap();
    let pd = DynamicStorage::from_coo(&pat, &coo([3, 4], &ones(&pattern()))).unwrap();
    let x = [0.5, -2.0, 3.25, 7.0];

    // SpMV
    let mut y = vec![7.0; 3];
    spmv_pat(&mut y, &p, &x).unwrap();
    assert_eq!(y, vec![5.0, 0.0, 3.75]);
    let prog = compile(
        "y(i) = a(i, j) * x(j)",
        &[
            decl("y", &[3], ValueType::F64, None),
            decl("a", &[3, 4], ValueType::F64, Some(pat.clone())),
            decl("x", &[4], ValueType::F64, None),
        ],
    )
    .unwrap();
    let ops = [
        dense(&[3], &[0.0; 3]),
        Operand::Storage(Box::new(pd.clone())),
        dense(&[4], &x),
    ];
    assert_eq!(interp_dense(run(&prog, &ops).unwrap()), y);

    // a negative constant, emitted as a literal
    let m = Minus::<f64>::from_coo([3, 4], pattern().into_iter().map(|c| (c, -2.5))).unwrap();
    let mut ym = vec![7.0; 3];
    spmv_minus(&mut ym, &m, &x).unwrap();
    assert_eq!(ym, vec![-12.5, 0.0, -9.375]);

    // COO with duplicates: each stored copy holds the constant
    let mut dup = ones(&pattern());
    dup.push(([2, 2], 1.0));
    let c = PatCoo::<f64>::from_coo([3, 4], dup.clone()).unwrap();
    let mut yc = vec![7.0; 3];
    spmv_coo(&mut yc, &c, &x).unwrap();
    assert_eq!(yc, vec![5.0, 0.0, 7.0]);
    let cd = DynamicStorage::from_coo(
        &PatCoo::<f64>::encoding().verify().unwrap(),
        &coo([3, 4], &dup),
    )
    .unwrap();
    let prog = compile(
        "y(i) = a(i, j) * x(j)",
        &[
            decl("y", &[3], ValueType::F64, None),
            decl("a", &[3, 4], ValueType::F64, Some(cd.encoding().clone())),
            decl("x", &[4], ValueType::F64, None),
        ],
    )
    .unwrap();
    let ops = [
        dense(&[3], &[0.0; 3]),
        Operand::Storage(Box::new(cd)),
        dense(&[4], &x),
    ];
    assert_eq!(interp_dense(run(&prog, &ops).unwrap()), yc);

    // i32 values
    let i = PatI32::from_coo([3, 4], pattern().into_iter().map(|c| (c, 1))).unwrap();
    let mut yi = vec![0i32; 3];
    spmv_i32(&mut yi, &i, &[1, 2, 3, 4]).unwrap();
    assert_eq!(yi, vec![6, 0, 4]);

    // a sparse output from a pattern and a plain operand
    let b =
        Csr::<f64>::from_coo([3, 4], vec![([0, 1], 0.25), ([1, 1], 2.0), ([2, 3], -1.0)]).unwrap();
    let mut out = Csr::<f64>::from_coo([3, 4], vec![]).unwrap();
    add_pat(&mut out, &p, &b).unwrap();
    let bd = DynamicStorage::from_coo(&plain, &b.to_coo()).unwrap();
    let prog = compile(
        "c(i, j) = a(i, j) + b(i, j)",
        &[
            decl("c", &[3, 4], ValueType::F64, Some(plain.clone())),
            decl("a", &[3, 4], ValueType::F64, Some(pat.clone())),
            decl("b", &[3, 4], ValueType::F64, Some(plain.clone())),
        ],
    )
    .unwrap();
    let empty = DynamicStorage::from_coo(&plain, &coo([3, 4], &[])).unwrap();
    let ops = [
        Operand::Storage(Box::new(empty.clone())),
        Operand::Storage(Box::new(pd.clone())),
        Operand::Storage(Box::new(bd.clone())),
    ];
    let want = sparse_entries(run(&prog, &ops).unwrap());
    assert_eq!(csr_entries(&out), want);
    assert_eq!(
        out.to_dense().unwrap(),
        [0.0, 1.25, 0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 1.0, 0.0, 1.0, -1.0]
    );

    // SpGEMM of two patterns (a workspace): counts of paths
    let q = PatCsr::<f64>::from_coo(
        [4, 3],
        vec![([1, 0], 1.0), ([3, 0], 1.0), ([3, 2], 1.0), ([0, 1], 1.0)],
    )
    .unwrap();
    let mut g = Csr::<f64>::from_coo([3, 3], vec![]).unwrap();
    spgemm_pat(&mut g, &p, &q).unwrap();
    assert_eq!(
        g.to_dense().unwrap(),
        [2.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    );
    let qd = DynamicStorage::from_coo(&pat, &q.to_coo()).unwrap();
    let prog = compile(
        "c(i, j) = a(i, k) * b(k, j)",
        &[
            decl("c", &[3, 3], ValueType::F64, Some(plain.clone())),
            decl("a", &[3, 4], ValueType::F64, Some(pat.clone())),
            decl("b", &[4, 3], ValueType::F64, Some(pat.clone())),
        ],
    )
    .unwrap();
    let ops = [
        Operand::Storage(Box::new(
            DynamicStorage::from_coo(&plain, &coo([3, 3], &[])).unwrap(),
        )),
        Operand::Storage(Box::new(pd.clone())),
        Operand::Storage(Box::new(qd)),
    ];
    assert_eq!(csr_entries(&g), sparse_entries(run(&prog, &ops).unwrap()));

    // a pattern operand the kernel converts (columns to rows) first
    let pc = p.clone().transpose(); // 4 x 3 by columns
    let a = Csr::<f64>::from_coo([4, 3], vec![([0, 2], 0.5), ([3, 0], 4.0)]).unwrap();
    let mut s = Csr::<f64>::from_coo([4, 3], vec![]).unwrap();
    add_csc(&mut s, &a, &pc).unwrap();
    assert_eq!(
        s.to_dense().unwrap(),
        [0.0, 0.0, 1.5, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 5.0, 0.0, 0.0]
    );
}
