//! The interpreter against a dense reference computed here, on random inputs, for the kernels
//! of issue 9 across level formats. Values are small integers, so f64 sums are exact and every
//! comparison is exact (i64 runs too for the bitwise reductions).

use proptest::prelude::*;
use sparse_dsl::parse::{parse_declaration, Declared};
use sparse_ir::ir::VerifiedEncoding;
use sparse_runtime::{CooTensor, DynamicStorage};
use sparse_sparsifier::interp::{run, Num, Operand, Output};
use sparse_sparsifier::{compile, TensorDecl, ValueType};

const CSR: &str = "(i, j) -> (i : dense, j : compressed)";
const CSC: &str = "(i, j) -> (j : dense, i : compressed)";
const DCSR: &str = "(i, j) -> (i : compressed, j : compressed)";
const COO: &str = "(i, j) -> (i : compressed(nonunique), j : singleton)";
const BSR: &str =
    "(i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense)";
const NV24: &str = "(i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4)";
const LOOSE: &str = "(i, j) -> (i : dense, j : loose_compressed)";
const DCSC: &str = "(i, j) -> (j : compressed, i : compressed)";
const ELL: &str = "[c](i, j) -> (c * 8 * i : dense, i : dense, j : compressed)";

/// Every rank-2 format of the tests; `None` is a dense tensor.
const FORMATS: [Option<&str>; 10] = [
    Some(ELL),
    None,
    Some(CSR),
    Some(CSC),
    Some(DCSR),
    Some(COO),
    Some(BSR),
    Some(NV24),
    Some(LOOSE),
    Some(DCSC),
];
/// Formats a sparse output can take (assembled through from_coo in any case).
const OUT_FORMATS: [Option<&str>; 6] =
    [None, Some(CSR), Some(CSC), Some(DCSR), Some(COO), Some(BSR)];

fn encoding(map: &str) -> VerifiedEncoding {
    let text = format!("#sparse_tensor.encoding<{{ map = {map} }}>");
    match parse_declaration(&text).unwrap().declared {
        Declared::Encoding(e) => e,
        Declared::Tensor(_) => unreachable!(),
    }
}

fn decl(name: &str, shape: &[usize], map: Option<&str>, v: ValueType) -> TensorDecl {
    TensorDecl {
        name: name.into(),
        shape: shape.iter().map(|&n| Some(n)).collect(),
        value: v,
        encoding: map.map(encoding),
    }
}

/// A dense row-major tensor of small integers.
#[derive(Clone, Debug)]
struct T {
    shape: Vec<usize>,
    v: Vec<i64>,
}

impl T {
    fn zeros(shape: &[usize]) -> T {
        T {
            shape: shape.to_vec(),
            v: vec![0; shape.iter().product()],
        }
    }
    fn at(&self, c: &[usize]) -> i64 {
        self.v[c.iter().zip(&self.shape).fold(0, |a, (c, s)| a * s + c)]
    }
    fn set(&mut self, c: &[usize], x: i64) {
        let at = c.iter().zip(&self.shape).fold(0, |a, (c, s)| a * s + c);
        self.v[at] = x;
    }
    /// Keeps at most 2 nonzeros per block of 4 along the last dimension (2:4 storable).
    fn prune_2_4(&self) -> T {
        let mut t = self.clone();
        let n = *t.shape.last().unwrap();
        for row in t.v.chunks_mut(n) {
            for block in row.chunks_mut(4) {
                let mut kept = 0;
                for x in block.iter_mut() {
                    if *x != 0 {
                        kept += 1;
                        if kept > 2 {
                            *x = 0;
                        }
                    }
                }
            }
        }
        t
    }
    fn for_format(&self, map: Option<&str>) -> T {
        if map == Some(NV24) {
            self.prune_2_4()
        } else {
            self.clone()
        }
    }
}

fn operand<V: Num + From<i32>>(t: &T, map: Option<&str>) -> Operand<V> {
    let conv = |x: i64| V::from(x as i32);
    match map {
        None => Operand::Dense {
            shape: t.shape.clone(),
            values: t.v.iter().map(|&x| conv(x)).collect(),
        },
        Some(m) => {
            let mut coo = CooTensor::new(t.shape.clone());
            let mut idx = vec![0; t.shape.len()];
            for (f, &x) in t.v.iter().enumerate() {
                if x != 0 {
                    sparse_runtime::dynamic::unflatten(f, &t.shape, &mut idx);
                    coo.push(&idx, conv(x));
                }
            }
            Operand::Storage(Box::new(
                DynamicStorage::from_coo(&encoding(m), &coo).unwrap(),
            ))
        }
    }
}

fn dense_of<V: Num>(out: Output<V>) -> Vec<V> {
    match out {
        Output::Sparse(s) => {
            s.validate().unwrap();
            s.to_dense().unwrap()
        }
        Output::Dense { values, .. } => values,
    }
}

/// Runs `stmt`; `tensors` are `(name, reference, format)`, the output first.
fn eval<V: Num + From<i32>>(
    stmt: &str,
    tensors: &[(&str, &T, Option<&str>)],
    vt: ValueType,
) -> Vec<V> {
    let decls: Vec<TensorDecl> = tensors
        .iter()
        .map(|(n, t, m)| decl(n, &t.shape, *m, vt))
        .collect();
    let p = compile(stmt, &decls).unwrap_or_else(|e| panic!("{stmt} {tensors:?}: {e}"));
    let ops: Vec<Operand<V>> = p.kernel.tensors[..p.inputs()]
        .iter()
        .map(|d| {
            let (_, t, m) = tensors.iter().find(|(n, _, _)| *n == d.name).unwrap();
            operand::<V>(t, *m)
        })
        .collect();
    dense_of(run(&p, &ops).unwrap_or_else(|e| panic!("{stmt}: {e}")))
}

fn f(v: &[i64]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

fn mat(m: usize, n: usize) -> impl Strategy<Value = T> {
    proptest::collection::vec(prop_oneof![3 => Just(0i64), 2 => -4i64..5], m * n).prop_map(
        move |v| T {
            shape: vec![m, n],
            v,
        },
    )
}

fn vec_t(n: usize) -> impl Strategy<Value = T> {
    proptest::collection::vec(prop_oneof![1 => Just(0i64), 2 => -4i64..5], n)
        .prop_map(move |v| T { shape: vec![n], v })
}

const M: usize = 4;
const K: usize = 8;
const N: usize = 4;

fn matmul(a: &T, b: &T) -> T {
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    let mut c = T::zeros(&[m, n]);
    for i in 0..m {
        for j in 0..n {
            let s = (0..k).map(|l| a.at(&[i, l]) * b.at(&[l, j])).sum();
            c.set(&[i, j], s);
        }
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn spmv_spmm(a in mat(M, K), x in vec_t(K), b in mat(K, N)) {
        for fa in FORMATS {
            let a = a.for_format(fa);
            let y = T::zeros(&[M]);
            let want: Vec<i64> = (0..M).map(|i| (0..K).map(|j| a.at(&[i, j]) * x.at(&[j])).sum()).collect();
            let got = eval::<f64>("y(i) = A(i,j) * x(j)", &[("y", &y, None), ("A", &a, fa), ("x", &x, None)], ValueType::F64);
            prop_assert_eq!(got, f(&want), "spmv {:?}", fa);
            let c = T::zeros(&[M, N]);
            let want = matmul(&a, &b);
            let got = eval::<i64>("C(i,j) = A(i,k) * B(k,j)", &[("C", &c, None), ("A", &a, fa), ("B", &b, None)], ValueType::I64);
            prop_assert_eq!(got, want.v, "spmm {:?}", fa);
        }
    }

}

proptest! {
    // every pairing of formats per case: few cases
    #![proptest_config(ProptestConfig { cases: 3, ..ProptestConfig::default() })]

    #[test]
    fn spgemm(a in mat(M, K), b in mat(K, N)) {
        for (ia, fa) in FORMATS.into_iter().enumerate() {
            for (ib, fb) in [Some(CSR), Some(DCSR), Some(CSC), Some(COO), Some(NV24), None].into_iter().enumerate() {
                for fc in [OUT_FORMATS[(ia + ib) % OUT_FORMATS.len()], OUT_FORMATS[(ia + ib + 3) % OUT_FORMATS.len()]] {
                    let (a, b) = (a.for_format(fa), b.for_format(fb));
                    let c = T::zeros(&[M, N]);
                    let want = matmul(&a, &b);
                    let got = eval::<f64>("C(i,j) = A(i,k) * B(k,j)", &[("C", &c, fc), ("A", &a, fa), ("B", &b, fb)], ValueType::F64);
                    prop_assert_eq!(got, f(&want.v), "spgemm {:?} {:?} -> {:?}", fa, fb, fc);
                }
            }
        }
    }

    #[test]
    fn add_sub_mul(a in mat(M, K), b in mat(M, K)) {
        for (ia, fa) in FORMATS.into_iter().enumerate() {
            for (ib, fb) in FORMATS.into_iter().enumerate() {
                for (stmt, op) in [("C(i,j) = A(i,j) + B(i,j)", 0), ("C(i,j) = A(i,j) - B(i,j)", 1), ("C(i,j) = A(i,j) * B(i,j)", 2)] {
                    // each output format meets every operand format across the pairs
                    let outs = [None, Some(CSR), Some(DCSR), Some(CSC), Some(COO)];
                    {
                        let fc = outs[(ia + ib + op) % outs.len()];
                        let (a, b) = (a.for_format(fa), b.for_format(fb));
                        let want: Vec<i64> = a.v.iter().zip(&b.v).map(|(x, y)| match op { 0 => x + y, 1 => x - y, _ => x * y }).collect();
                        let c = T::zeros(&[M, K]);
                        let got = eval::<i64>(stmt, &[("C", &c, fc), ("A", &a, fa), ("B", &b, fb)], ValueType::I64);
                        prop_assert_eq!(got, want, "{} {:?} {:?} -> {:?}", stmt, fa, fb, fc);
                    }
                }
            }
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn sddmm_transpose_scaled(s in mat(M, N), a in mat(M, K), b in mat(N, K), x in vec_t(N), t in mat(M, N)) {
        for fs in FORMATS {
            let s = s.for_format(fs);
            for fc in [None, Some(CSR), Some(DCSR)] {
                let c = T::zeros(&[M, N]);
                let mut want = T::zeros(&[M, N]);
                for i in 0..M { for j in 0..N {
                    let d: i64 = (0..K).map(|k| a.at(&[i, k]) * b.at(&[j, k])).sum();
                    want.set(&[i, j], s.at(&[i, j]) * d);
                }}
                let got = eval::<f64>("C(i,j) = S(i,j) * A(i,k) * B(j,k)", &[("C", &c, fc), ("S", &s, fs), ("A", &a, None), ("B", &b, None)], ValueType::F64);
                prop_assert_eq!(got, f(&want.v), "sddmm {:?} -> {:?}", fs, fc);
            }
            for fo in [None, Some(CSR), Some(DCSR), Some(CSC), Some(COO)] {
                let o = T::zeros(&[N, M]);
                let mut want = T::zeros(&[N, M]);
                for i in 0..M { for j in 0..N { want.set(&[j, i], s.at(&[i, j])); } }
                let got = eval::<f64>("O(j,i) = S(i,j)", &[("O", &o, fo), ("S", &s, fs)], ValueType::F64);
                prop_assert_eq!(got, f(&want.v), "transpose {:?} -> {:?}", fs, fo);
            }
            // scaled add then SpMV
            for ft in [Some(CSR), Some(DCSC), None] {
                let y = T::zeros(&[M]);
                let want: Vec<i64> = (0..M).map(|i| (0..N).map(|j| (s.at(&[i, j]) + 2 * t.at(&[i, j])) * x.at(&[j])).sum()).collect();
                let got = eval::<f64>("y(i) = (S(i,j) + 2 * T(i,j)) * x(j)", &[("y", &y, None), ("S", &s, fs), ("T", &t, ft), ("x", &x, None)], ValueType::F64);
                prop_assert_eq!(got, f(&want), "scaled add spmv {:?} {:?}", fs, ft);
            }
            // in-place scale
            let want: Vec<i64> = s.v.iter().map(|x| 3 * x).collect();
            if fs != Some(NV24) {
                let got = eval::<i64>("S(i,j) = S(i,j) * 3", &[("S", &s, fs)], ValueType::I64);
                prop_assert_eq!(got, want, "scale {:?}", fs);
            }
            // einsum with a subtracted term: r(i) = b(i) - S(i,j) * x(j)
            let bv = T { shape: vec![M], v: (0..M as i64).collect() };
            let want: Vec<i64> = (0..M).map(|i| bv.v[i] - (0..N).map(|j| s.at(&[i, j]) * x.at(&[j])).sum::<i64>()).collect();
            let r = T::zeros(&[M]);
            let got = eval::<i64>("r(i) = b(i) - S(i,j) * x(j)", &[("r", &r, None), ("b", &bv, None), ("S", &s, fs), ("x", &x, None)], ValueType::I64);
            prop_assert_eq!(got, want, "residual {:?}", fs);
        }
    }

    #[test]
    fn reductions(a in mat(M, K)) {
        for fa in FORMATS {
            let a = a.for_format(fa);
            let st = operand::<i64>(&a, fa);
            // the visited values of row i: the stored entries (explicit zeros included)
            let rows: Vec<Vec<i64>> = (0..M).map(|i| match &st {
                Operand::Storage(s) => s.iter().filter(|(c, _)| c[0] == i).map(|(_, v)| *v).collect(),
                _ => (0..K).map(|j| a.at(&[i, j])).collect(),
            }).collect();
            for (op, fold) in [
                ("sum", (|r: &[i64]| r.iter().sum::<i64>()) as fn(&[i64]) -> i64),
                ("prod", |r| r.iter().product()),
                ("min", |r| *r.iter().min().unwrap()),
                ("max", |r| *r.iter().max().unwrap()),
                ("or", |r| r.iter().fold(0, |a, b| a | b)),
                ("xor", |r| r.iter().fold(0, |a, b| a ^ b)),
            ] {
                let stmt = format!("m(i) = {op}(j, A(i,j))");
                let want: Vec<i64> = rows.iter().map(|r| if r.is_empty() { 0 } else { fold(r) }).collect();
                for fm in [None, Some("(i) -> (i : compressed)")] {
                    let m = T::zeros(&[M]);
                    let got = eval::<i64>(&stmt, &[("m", &m, fm), ("A", &a, fa)], ValueType::I64);
                    prop_assert_eq!(&got, &want, "{} {:?} -> {:?}", stmt, fa, fm);
                }
            }
        }
    }

    #[test]
    fn dot_ttv_mttkrp(a in vec_t(K), b in vec_t(K), t in proptest::collection::vec(prop_oneof![3 => Just(0i64), 1 => -4i64..5], 3 * 4 * 2), v in vec_t(2), bm in mat(4, 3), cm in mat(2, 3)) {
        let sv = Some("(i) -> (i : compressed)");
        for fa in [sv, None] {
            for fb in [sv, None] {
                let s = T::zeros(&[]);
                let want: i64 = (0..K).map(|i| a.v[i] * b.v[i]).sum();
                let got = eval::<f64>("s = a(i) * b(i)", &[("s", &s, None), ("a", &a, fa), ("b", &b, fb)], ValueType::F64);
                prop_assert_eq!(got, vec![want as f64], "dot {:?} {:?}", fa, fb);
            }
        }
        let csf = Some("(i, j, k) -> (i : compressed, j : compressed, k : compressed)");
        let tt = T { shape: vec![3, 4, 2], v: t };
        for ft in [csf, None, Some("(i, j, k) -> (i : dense, j : compressed, k : compressed)")] {
            let y = T::zeros(&[3, 4]);
            let mut want = T::zeros(&[3, 4]);
            for i in 0..3 { for j in 0..4 { want.set(&[i, j], (0..2).map(|k| tt.at(&[i, j, k]) * v.v[k]).sum()); } }
            for fy in [None, Some(DCSR)] {
                let got = eval::<i64>("Y(i,j) = T(i,j,k) * v(k)", &[("Y", &y, fy), ("T", &tt, ft), ("v", &v, None)], ValueType::I64);
                prop_assert_eq!(got, want.v.clone(), "ttv {:?} -> {:?}", ft, fy);
            }
            // mttkrp: A(i,j) = T(i,k,l) * B(k,j) * C(l,j)
            let o = T::zeros(&[3, 3]);
            let mut want = T::zeros(&[3, 3]);
            for i in 0..3 { for j in 0..3 {
                let mut s = 0;
                for k in 0..4 { for l in 0..2 { s += tt.at(&[i, k, l]) * bm.at(&[k, j]) * cm.at(&[l, j]); } }
                want.set(&[i, j], s);
            }}
            let got = eval::<i64>("O(i,j) = T(i,k,l) * B(k,j) * C(l,j)", &[("O", &o, None), ("T", &tt, ft), ("B", &bm, None), ("C", &cm, None)], ValueType::I64);
            prop_assert_eq!(got, want.v, "mttkrp {:?}", ft);
        }
    }
}

/// MLIR's BSR matmul check (`sparse_block_matmul.mlir`): A stored 2x2-BSR times itself dense.
#[test]
fn mlir_bsr_matmul() {
    let a = T {
        shape: vec![4, 4],
        v: vec![1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 7, 8, 5, 6, 7, 8],
    };
    let c = T::zeros(&[4, 4]);
    let got = eval::<f64>(
        "C(i,j) = A(i,k) * B(k,j)",
        &[("C", &c, None), ("A", &a, Some(BSR)), ("B", &a, None)],
        ValueType::F64,
    );
    let want = [
        38, 48, 58, 68, 38, 48, 58, 68, 86, 112, 138, 164, 86, 112, 138, 164,
    ];
    assert_eq!(got, f(&want));
}

/// Batched SpMV over a `batch` level (every batch the same pattern, as batches must store the
/// same nse).
#[test]
fn batched_spmv() {
    let map = "(b, i, j) -> (b : batch, i : dense, j : compressed)";
    let mut a = T::zeros(&[2, 3, 4]);
    for (b, i, j, v) in [(0, 0, 1, 2), (0, 2, 3, 5), (1, 0, 1, -1), (1, 2, 3, 7)] {
        a.set(&[b, i, j], v);
    }
    let x = T {
        shape: vec![2, 4],
        v: vec![1, 2, 3, 4, 5, 6, 7, 8],
    };
    let y = T::zeros(&[2, 3]);
    let got = eval::<i64>(
        "y(b,i) = A(b,i,j) * x(b,j)",
        &[("y", &y, None), ("A", &a, Some(map)), ("x", &x, None)],
        ValueType::I64,
    );
    assert_eq!(got, vec![4, 0, 20, -6, 0, 56]);
}

/// `map` with the slice rows `1 + i` (4 of them) and columns `2 * j` (4 of them).
fn sliced(map: &str) -> String {
    map.replacen(
        "(i, j) ->",
        "(i : #sparse_tensor<slice(1, 4, 1)>, j : #sparse_tensor<slice(0, 4, 2)>) ->",
        1,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// Slices iterate their parent's levels, keeping the coordinates on the slice (MLIR's
    /// slice-driven loops): SpMV, a union with a CSR operand, a max reduction, and a CSC
    /// slice next to a CSR operand (converted).
    #[test]
    fn slices(p in mat(8, 8), b in mat(4, 4), x in vec_t(4)) {
        let view = {
            let mut v = T::zeros(&[4, 4]);
            for i in 0..4 { for j in 0..4 { v.set(&[i, j], p.at(&[1 + i, 2 * j])); } }
            v
        };
        for map in [CSR, DCSR, COO, CSC, "(i, j) -> (i : dense, j : dense)"] {
            let smap = sliced(map);
            let parent = operand::<i64>(&p, Some(map));
            let Operand::Storage(parent) = parent else { unreachable!() };
            let sl = Operand::slice(*parent, &encoding(&smap)).unwrap();
            let run_with = |stmt: &str, out: (&str, &T, Option<&str>), others: &[(&str, &T, Option<&str>)]| -> Vec<i64> {
                let mut decls = vec![decl(out.0, &out.1.shape, out.2, ValueType::I64), decl("S", &[4, 4], Some(&smap), ValueType::I64)];
                decls.extend(others.iter().map(|(n, t, m)| decl(n, &t.shape, *m, ValueType::I64)));
                let p = compile(stmt, &decls).unwrap_or_else(|e| panic!("{stmt}: {e}"));
                let ops: Vec<Operand<i64>> = p.kernel.tensors[..p.inputs()].iter().map(|d| {
                    if d.name == "S" { return sl.clone(); }
                    if d.name == out.0 { return operand::<i64>(out.1, out.2); }
                    let (_, t, m) = others.iter().find(|(n, _, _)| *n == d.name).unwrap();
                    operand::<i64>(t, *m)
                }).collect();
                dense_of(run(&p, &ops).unwrap())
            };
            let y = T::zeros(&[4]);
            let want: Vec<i64> = (0..4).map(|i| (0..4).map(|j| view.at(&[i, j]) * x.at(&[j])).sum()).collect();
            prop_assert_eq!(run_with("y(i) = S(i,j) * x(j)", ("y", &y, None), &[("x", &x, None)]), want, "spmv {}", map);
            let c = T::zeros(&[4, 4]);
            let want: Vec<i64> = view.v.iter().zip(&b.v).map(|(s, t)| s + t).collect();
            for fb in [Some(CSR), Some(CSC)] {
                prop_assert_eq!(run_with("C(i,j) = S(i,j) + B(i,j)", ("C", &c, Some(DCSR)), &[("B", &b, fb)]), want.clone(), "add {} {:?}", map, fb);
            }
        }
    }
}

/// Two reductions over the same index in one statement, each its own inner loop; `+=` into a
/// sparse output keeps its old entries (a union with its previous value).
#[test]
fn two_reductions_and_sparse_accumulate() {
    let a = T {
        shape: vec![3, 4],
        v: vec![1, 0, 2, 0, 0, 0, 0, 0, -3, 4, 0, 5],
    };
    let y = T::zeros(&[3]);
    let got = eval::<i64>(
        "y(i) = sum(k, A(i,k)) + max(k, A(i,k)) * 10",
        &[("y", &y, None), ("A", &a, Some(DCSR))],
        ValueType::I64,
    );
    assert_eq!(got, vec![3 + 20, 0, 6 + 50]);
    let c = T {
        shape: vec![3, 4],
        v: vec![0, 7, 1, 0, 0, 0, 0, 9, 0, 0, 0, 0],
    };
    let got = eval::<i64>(
        "C(i,j) += A(i,j) * 2",
        &[("C", &c, Some(CSR)), ("A", &a, Some(DCSR))],
        ValueType::I64,
    );
    assert_eq!(got, vec![2, 7, 5, 0, 0, 0, 0, 9, -6, 8, 0, 10]);
}
