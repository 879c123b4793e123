//! Kernels declared in `sparse_format!` (issue 9): the generated Rust against a dense reference
//! and against the sparsifier's interpreter, on random small inputs. The generated loops add in
//! the interpreter's order (a row's sum in four partial sums in both, `Program::partial_sum`),
//! so results are compared bit for bit (no term is `-0.0`: stored values and the dense
//! operands are nonzero).

use proptest::prelude::*;
use sparse::runtime::{CooTensor, DynamicStorage};
use sparse::sparse_format;
use sparse::Par;
use sparse_sparsifier::interp::{run, Operand, Output};
use sparse_sparsifier::{compile, TensorDecl, ValueType};

sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    pub Csc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>;
    pub Dcsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>;
    pub Dense = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>;
    pub kernel spmv(y: &mut [f64], a: &Csr<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    // rows iterated where stored, not every row: `y` is cleared first
    pub kernel spmv_dcsr(y: &mut [f64], a: &Dcsr<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel spgemm(c: &mut Csr<f64>, a: &Csr<f64>, b: &Csr<f64>) { c(i, j) = a(i, k) * b(k, j) }
    // rows of `a` with one pattern run together: a 0-d operand, and `b`'s rows merged with `a`'s
    pub kernel spgemm_scaled(c: &mut Csr<f64>, alpha: f64, a: &Csr<f64>, b: &Csr<f64>) { c(i, j) = alpha * a(i, k) * b(k, j) }
    pub kernel spgemm_dcsr(c: &mut Csr<f64>, a: &Csr<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, k) * b(k, j) }
    // a pattern `a` (`explicitVal`): its value is a constant, the same in every lane
    pub Pattern = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), explicitVal = 1.0 : f64 }>;
    pub kernel spgemm_pattern(c: &mut Csr<f64>, a: &Pattern<f64>, b: &Csr<f64>) { c(i, j) = a(i, k) * b(k, j) }
    pub kernel sddmm(c: &mut Csr<f64>, s: &Csr<f64>, a: &Dense<f64>, b: &Dense<f64>) { c(i, j) = s(i, j) * a(i, k) * b(j, k) }
    pub kernel rowmin(m: &mut [f64], a: &Csr<f64>) { m(i) = min(j, a(i, j)) }
    pub kernel scaled_spmv(y: &mut [f64], alpha: f64, a: &Csr<f64>, x: &[f64]) { y(i) += alpha * a(i, j) * x(j) - 0.5 * x(i) }
    // `b` in CSC conflicts with `a`'s row order: the sparsifier converts it first
    pub kernel add(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    // faer's parallelism argument: row ranges of `y` as rayon tasks
    pub kernel spmv_with(par: Par, y: &mut [f64], a: &Csr<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel add_rows(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    // 8-bit positions and coordinates: the output's arrays are filled in place, widths checked
    pub Narrow = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 8, crdWidth = 8 }>;
    pub kernel add_narrow(c: &mut Narrow<f64>, a: &Csr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    // `b`'s columns may sit in any order in a row: the union converts it to ordered first
    pub Unordered = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed(nonordered)) }>;
    pub kernel add_unordered(c: &mut Csr<f64>, a: &Csr<f64>, b: &Unordered<f64>) { c(i, j) = a(i, j) + b(i, j) }
    // unsigned values: wrapping arithmetic, as MLIR's `arith` ops on `ui32`/`ui64`
    pub kernel spmv_u32(y: &mut [u32], a: &Csr<u32>, x: &[u32]) { y(i) = a(i, j) * x(j) }
    pub kernel ratio_i32(y: &mut [i32], a: &Csr<i32>, x: &[i32]) { y(i) = a(i, j) / x(j) }
    pub kernel ratio_par_i32(par: Par, y: &mut [i32], a: &Csr<i32>, x: &[i32]) { y(i) = a(i, j) / x(j) }
    pub kernel spgemm_u64(c: &mut Csr<u64>, a: &Csr<u64>, b: &Csr<u64>) { c(i, j) = a(i, k) * b(k, j) + 1 }
    // an entry of `b` alone is negated: `(*load).wrapping_neg()`
    pub kernel sub_i32(c: &mut Csr<i32>, a: &Csr<i32>, b: &Csr<i32>) { c(i, j) = a(i, j) - b(i, j) }
    // rows of unequal lengths merge without a branch per entry, an absent side read as the
    // identity of `+` or `-`: signed zeros must come out as the cases give them
    pub kernel sub_f64(c: &mut Csr<f64>, a: &Csr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) - b(i, j) }
    pub kernel add_f64(c: &mut Csr<f64>, a: &Csr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel add_f32(c: &mut Csr<f32>, a: &Csr<f32>, b: &Csr<f32>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel sub_i64(c: &mut Csr<i64>, a: &Csr<i64>, b: &Csr<i64>) { c(i, j) = a(i, j) - b(i, j) }
    // sums in partial sums: one register carried from row to row, and `f32` rows
    pub kernel total(s: &mut f64, a: &Csr<f64>) { s = sum(i j, a(i, j)) }
    pub kernel spmv_f32(y: &mut [f32], a: &Csr<f32>, x: &[f32]) { y(i) = a(i, j) * x(j) }
    // a block's row summed, then added to `y` once
    pub Bsr = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense) }>;
    pub kernel spmv_bsr(y: &mut [f64], a: &Bsr<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    // a sum over a dense range (an all-dense operand is read by random access)
    pub kernel dense_mv(y: &mut [f64], a: &Dense<f64>, x: &[f64]) { y(i) = a(i, k) * x(k) }
    // a sum across 2:4 segments (two positions each) in partial sums
    pub Nv24 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4) }>;
    pub kernel spmv_nm(y: &mut [f64], a: &Nv24<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
}

/// `terms` summed as a generated row sum and the interpreter add them
/// (`sparse_sparsifier::loops::Program::partial_sum`): term `4s + k` of each whole step of four
/// into lane `k`, the terms left over into lane 0, lanes from `0.0`, then lane 0 plus
/// `(l1 + l2) + l3`.
fn partial_sums(terms: &[f64]) -> f64 {
    partial_sums_from(0.0, terms)
}

/// A random `rows x cols` matrix: about a third of the entries stored, values in [-4, 4] and
/// never zero, as `(row, col, value)` in row-major order.
fn matrix(rows: usize, cols: usize) -> impl Strategy<Value = Vec<(usize, usize, f64)>> {
    proptest::collection::vec((0..3u8, 0.25f64..4.0, any::<bool>()), rows * cols).prop_map(
        move |cells| {
            cells
                .into_iter()
                .enumerate()
                .filter(|(_, (keep, _, _))| *keep == 0)
                .map(|(f, (_, v, neg))| (f / cols, f % cols, if neg { -v } else { v }))
                .collect()
        },
    )
}

fn nonzero_vec(n: usize) -> impl Strategy<Value = Vec<f64>> {
    proptest::collection::vec((0.25f64..4.0, any::<bool>()), n)
        .prop_map(|v| v.into_iter().map(|(x, n)| if n { -x } else { x }).collect())
}

fn csr_encoding() -> sparse::runtime::sparse_ir::ir::VerifiedEncoding {
    match sparse_dsl::parse::parse_declaration(Csr::<f64>::ENCODING)
        .unwrap()
        .declared
    {
        sparse_dsl::parse::Declared::Encoding(e) => e,
        sparse_dsl::parse::Declared::Tensor(_) => unreachable!("an encoding"),
    }
}

fn storage(shape: [usize; 2], entries: &[(usize, usize, f64)]) -> Operand<f64> {
    let mut coo = CooTensor::new(shape.to_vec());
    for &(i, j, v) in entries {
        coo.push(&[i, j], v);
    }
    Operand::Storage(Box::new(
        DynamicStorage::from_coo(&csr_encoding(), &coo).unwrap(),
    ))
}

fn decl(name: &str, shape: &[usize], sparse: bool) -> TensorDecl {
    TensorDecl {
        name: name.into(),
        shape: shape.iter().map(|&n| Some(n)).collect(),
        value: ValueType::F64,
        encoding: sparse.then(csr_encoding),
    }
}

fn dense_output(out: Output<f64>) -> Vec<f64> {
    match out {
        Output::Dense { values, .. } => values,
        Output::Sparse(_) => panic!("a dense output was expected"),
    }
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn dense_operand(shape: [usize; 2], v: &[f64]) -> Operand<f64> {
    Operand::Dense {
        shape: shape.to_vec(),
        values: v.to_vec(),
    }
}

/// The entries of a generated Csr in level order, values as bits.
fn entries(c: &Csr<f64>) -> Vec<(Vec<usize>, u64)> {
    c.iter().map(|(c, v)| (c.to_vec(), v.to_bits())).collect()
}

/// The entries of the interpreter's sparse output in level order, values as bits.
fn interp_entries(out: Output<f64>) -> Vec<(Vec<usize>, u64)> {
    match out {
        Output::Sparse(s) => s.iter().map(|(c, v)| (c, v.to_bits())).collect(),
        Output::Dense { .. } => panic!("a sparse output was expected"),
    }
}

fn csr(shape: [usize; 2], entries: &[(usize, usize, f64)]) -> Csr<f64> {
    Csr::from_coo(shape, entries.iter().map(|&(i, j, v)| ([i, j], v))).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Rows of up to 15 stored entries: sums of four partial sums and of the positions left
    /// over, equal to the built-in `spmv`'s too.
    #[test]
    fn spmv_matches_reference_and_interpreter(
        (rows, cols, a, x) in (1usize..6, 1usize..16).prop_flat_map(|(r, c)| {
            (Just(r), Just(c), matrix(r, c), nonzero_vec(c))
        })
    ) {
        let mut y = vec![7.0; rows];
        let a_csr = csr([rows, cols], &a);
        spmv(&mut y, &a_csr, &x).unwrap();
        let reference: Vec<f64> = (0..rows)
            .map(|i| {
                let terms: Vec<f64> =
                    a.iter().filter(|e| e.0 == i).map(|&(_, j, v)| v * x[j]).collect();
                partial_sums(&terms)
            })
            .collect();
        prop_assert_eq!(bits(&y), bits(&reference));
        let mut builtin = vec![7.0; rows];
        a_csr.spmv(&x, &mut builtin).unwrap();
        prop_assert_eq!(bits(&y), bits(&builtin));
        let p = compile(
            "y(i) = a(i,j) * x(j)",
            &[decl("y", &[rows], false), decl("a", &[rows, cols], true), decl("x", &[cols], false)],
        )
        .unwrap();
        let ops = [
            Operand::Dense { shape: vec![rows], values: vec![0.0; rows] },
            storage([rows, cols], &a),
            Operand::Dense { shape: vec![cols], values: x.clone() },
        ];
        prop_assert_eq!(bits(&y), bits(&dense_output(run(&p, &ops).unwrap())));
    }

    #[test]
    fn rowmin_matches_reference_and_interpreter(
        (rows, cols, a) in (1usize..6, 1usize..6).prop_flat_map(|(r, c)| {
            (Just(r), Just(c), matrix(r, c))
        })
    ) {
        let mut m = vec![7.0; rows];
        rowmin(&mut m, &csr([rows, cols], &a)).unwrap();
        let mut reference = vec![None::<f64>; rows];
        for &(i, _, v) in &a {
            reference[i] = Some(reference[i].map_or(v, |r: f64| r.min(v)));
        }
        let reference: Vec<f64> = reference.into_iter().map(|r| r.unwrap_or(0.0)).collect();
        prop_assert_eq!(bits(&m), bits(&reference));
        let p = compile(
            "m(i) = min(j, a(i,j))",
            &[decl("m", &[rows], false), decl("a", &[rows, cols], true)],
        )
        .unwrap();
        let ops = [
            Operand::Dense { shape: vec![rows], values: vec![0.0; rows] },
            storage([rows, cols], &a),
        ];
        prop_assert_eq!(bits(&m), bits(&dense_output(run(&p, &ops).unwrap())));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn spgemm_matches_reference_and_interpreter(
        (m, n, q, a, b) in (1usize..5, 1usize..5, 1usize..5).prop_flat_map(|(m, n, q)| {
            (Just(m), Just(n), Just(q), matrix(m, n), matrix(n, q))
        })
    ) {
        let mut c = csr([m, q], &[]);
        spgemm(&mut c, &csr([m, n], &a), &csr([n, q], &b)).unwrap();
        // Gustavson's order: row i of a by k ascending, then row k of b
        let mut reference = std::collections::BTreeMap::new();
        for &(i, k, x) in &a {
            for &(_, j, y) in b.iter().filter(|e| e.0 == k) {
                reference.entry((i, j)).and_modify(|s: &mut f64| *s += x * y).or_insert(x * y);
            }
        }
        let reference: Vec<(Vec<usize>, u64)> =
            reference.into_iter().map(|((i, j), v)| (vec![i, j], v.to_bits())).collect();
        prop_assert_eq!(entries(&c), reference);
        let p = compile(
            "c(i,j) = a(i,k) * b(k,j)",
            &[decl("c", &[m, q], true), decl("a", &[m, n], true), decl("b", &[n, q], true)],
        )
        .unwrap();
        let ops = [storage([m, q], &[]), storage([m, n], &a), storage([n, q], &b)];
        prop_assert_eq!(entries(&c), interp_entries(run(&p, &ops).unwrap()));
    }

    /// The dense `k` of up to 9: a sum over a dense range in four partial sums, appended to
    /// the sparse output.
    #[test]
    fn sddmm_matches_reference_and_interpreter(
        (m, n, q, s, a, b) in (1usize..5, 1usize..5, 1usize..10).prop_flat_map(|(m, n, q)| {
            (Just(m), Just(n), Just(q), matrix(m, n), nonzero_vec(m * q), nonzero_vec(n * q))
        })
    ) {
        let mut c = csr([m, n], &[]);
        let da = Dense::from_dense([m, q], &a).unwrap();
        let db = Dense::from_dense([n, q], &b).unwrap();
        sddmm(&mut c, &csr([m, n], &s), &da, &db).unwrap();
        let reference: Vec<(Vec<usize>, u64)> = s
            .iter()
            .map(|&(i, j, x)| {
                let terms: Vec<f64> = (0..q).map(|k| x * a[i * q + k] * b[j * q + k]).collect();
                (vec![i, j], partial_sums(&terms).to_bits())
            })
            .collect();
        prop_assert_eq!(entries(&c), reference);
        let p = compile(
            "c(i,j) = s(i,j) * a(i,k) * b(j,k)",
            &[
                decl("c", &[m, n], true),
                decl("s", &[m, n], true),
                decl("a", &[m, q], false),
                decl("b", &[n, q], false),
            ],
        )
        .unwrap();
        let ops = [
            storage([m, n], &[]),
            storage([m, n], &s),
            dense_operand([m, q], &a),
            dense_operand([n, q], &b),
        ];
        prop_assert_eq!(entries(&c), interp_entries(run(&p, &ops).unwrap()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn add_matches_reference_and_interpreter(
        (m, n, a, b) in (1usize..5, 1usize..5).prop_flat_map(|(m, n)| {
            (Just(m), Just(n), matrix(m, n), matrix(m, n))
        })
    ) {
        let mut c = Dcsr::from_coo([m, n], []).unwrap();
        add_rows(&mut c, &csr([m, n], &a), &csr([m, n], &b)).unwrap();
        let mut reference = std::collections::BTreeMap::new();
        for &(i, j, x) in a.iter().chain(&b) {
            reference.entry((i, j)).and_modify(|s: &mut f64| *s += x).or_insert(x);
        }
        let reference: Vec<(Vec<usize>, u64)> =
            reference.into_iter().map(|((i, j), v)| (vec![i, j], v.to_bits())).collect();
        let got: Vec<(Vec<usize>, u64)> =
            c.iter().map(|(c, v)| (c.to_vec(), v.to_bits())).collect();
        prop_assert_eq!(&got, &reference);
        // the issue's `add`: `b` in CSC, converted by the kernel before the merge
        let b_csc = Csc::from_coo([m, n], b.iter().map(|&(i, j, v)| ([i, j], v))).unwrap();
        let mut c2 = Dcsr::from_coo([m, n], []).unwrap();
        add(&mut c2, &csr([m, n], &a), &b_csc).unwrap();
        let got2: Vec<(Vec<usize>, u64)> =
            c2.iter().map(|(c, v)| (c.to_vec(), v.to_bits())).collect();
        prop_assert_eq!(&got2, &reference);
        let dcsr = match sparse_dsl::parse::parse_declaration(Dcsr::<f64>::ENCODING)
            .unwrap()
            .declared
        {
            sparse_dsl::parse::Declared::Encoding(e) => e,
            sparse_dsl::parse::Declared::Tensor(_) => unreachable!("an encoding"),
        };
        let out = TensorDecl { encoding: Some(dcsr.clone()), ..decl("c", &[m, n], true) };
        let p = compile(
            "c(i,j) = a(i,j) + b(i,j)",
            &[out, decl("a", &[m, n], true), decl("b", &[m, n], true)],
        )
        .unwrap();
        let empty = DynamicStorage::from_coo(&dcsr, &CooTensor::new(vec![m, n])).unwrap();
        let ops = [
            Operand::Storage(Box::new(empty)),
            storage([m, n], &a),
            storage([m, n], &b),
        ];
        prop_assert_eq!(got, interp_entries(run(&p, &ops).unwrap()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A sum carried over the rows (`s = sum(i j, ..)`: each row's segment in partial sums into
    /// the same register) and an `f32` SpMV: the generated code and the interpreter add in the
    /// same order, bit for bit.
    #[test]
    fn partial_sums_match_the_interpreter(
        (rows, cols, a, x) in (1usize..5, 1usize..14).prop_flat_map(|(r, c)| {
            (Just(r), Just(c), matrix(r, c), nonzero_vec(c))
        })
    ) {
        let a_csr = csr([rows, cols], &a);
        let mut s = 7.0;
        total(&mut s, &a_csr).unwrap();
        // each row's lanes 1 to 3 start from zero, lane 0 from the register
        let mut want = 0.0;
        for i in 0..rows {
            let terms: Vec<f64> = a.iter().filter(|e| e.0 == i).map(|e| e.2).collect();
            want = partial_sums_from(want, &terms);
        }
        prop_assert_eq!(s.to_bits(), want.to_bits());
        let p = compile(
            "s = sum(i j, a(i,j))",
            &[decl("s", &[], false), decl("a", &[rows, cols], true)],
        )
        .unwrap();
        let ops = [Operand::Dense { shape: vec![], values: vec![0.0] }, storage([rows, cols], &a)];
        prop_assert_eq!(bits(&[s]), bits(&dense_output(run(&p, &ops).unwrap())));

        let a32 = Csr::<f32>::from_coo([rows, cols], a.iter().map(|&(i, j, v)| ([i, j], v as f32)))
            .unwrap();
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let mut y = vec![7.0f32; rows];
        spmv_f32(&mut y, &a32, &x32).unwrap();
        let mut builtin = vec![7.0f32; rows];
        a32.spmv(&x32, &mut builtin).unwrap();
        let f32_bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(f32_bits(&y), f32_bits(&builtin));
        let d32 = |name: &str, shape: &[usize], sparse: bool| TensorDecl {
            value: ValueType::F32,
            ..decl(name, shape, sparse)
        };
        let p = compile(
            "y(i) = a(i,j) * x(j)",
            &[d32("y", &[rows], false), d32("a", &[rows, cols], true), d32("x", &[cols], false)],
        )
        .unwrap();
        let mut coo = CooTensor::new(vec![rows, cols]);
        for &(i, j, v) in &a {
            coo.push(&[i, j], v as f32);
        }
        let a_dyn = DynamicStorage::from_coo(&csr_encoding(), &coo).unwrap();
        let ops = [
            Operand::Dense { shape: vec![rows], values: vec![0.0f32; rows] },
            Operand::Storage(Box::new(a_dyn)),
            Operand::Dense { shape: vec![cols], values: x32.clone() },
        ];
        let Output::Dense { values, .. } = run(&p, &ops).unwrap() else {
            panic!("a dense output")
        };
        prop_assert_eq!(f32_bits(&y), f32_bits(&values));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// BSR 2x3: each block's row summed from its first term, then added to `y` (cleared to
    /// `0.0`): the same in the generated kernel, the interpreter and the built-in `spmv`.
    #[test]
    fn block_sums_match_the_interpreter(
        (blocks_r, blocks_c, a, x) in (1usize..4, 1usize..5).prop_flat_map(|(r, c)| {
            (Just(r), Just(c), matrix(2 * r, 3 * c), nonzero_vec(3 * c))
        })
    ) {
        let (rows, cols) = (2 * blocks_r, 3 * blocks_c);
        let bsr = Bsr::from_coo([rows, cols], a.iter().map(|&(i, j, v)| ([i, j], v))).unwrap();
        let mut y = vec![7.0; rows];
        spmv_bsr(&mut y, &bsr, &x).unwrap();
        // per block, in block-column order: the row's three products from the first, added once
        let mut want = vec![0.0; rows];
        for (i, w) in want.iter_mut().enumerate() {
            for jb in 0..blocks_c {
                let stored = a.iter().any(|e| e.0 / 2 == i / 2 && e.1 / 3 == jb);
                if !stored {
                    continue;
                }
                let term = |d: usize| {
                    let j = 3 * jb + d;
                    let v = a.iter().find(|e| e.0 == i && e.1 == j).map_or(0.0, |e| e.2);
                    v * x[j]
                };
                *w += term(0) + term(1) + term(2);
            }
        }
        prop_assert_eq!(bits(&y), bits(&want));
        let mut builtin = vec![7.0; rows];
        bsr.spmv(&x, &mut builtin).unwrap();
        prop_assert_eq!(bits(&y), bits(&builtin));
        prop_assert_eq!(bits(&y), bits(&interpreted_spmv(Bsr::<f64>::ENCODING, [rows, cols], &a, &x)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A sum over a dense range of up to 13 coordinates in four partial sums: the generated
    /// kernel, the interpreter and the reference add in the same order.
    #[test]
    fn dense_range_sums_match_the_interpreter(
        (rows, cols, a, x) in (1usize..4, 1usize..14).prop_flat_map(|(r, c)| {
            (Just(r), Just(c), nonzero_vec(r * c), nonzero_vec(c))
        })
    ) {
        let dense = Dense::from_dense([rows, cols], &a).unwrap();
        let mut y = vec![7.0; rows];
        dense_mv(&mut y, &dense, &x).unwrap();
        let want: Vec<f64> = (0..rows)
            .map(|i| {
                let terms: Vec<f64> = (0..cols).map(|k| a[i * cols + k] * x[k]).collect();
                partial_sums(&terms)
            })
            .collect();
        prop_assert_eq!(bits(&y), bits(&want));
        let p = compile(
            "y(i) = a(i,k) * x(k)",
            &[decl("y", &[rows], false), decl("a", &[rows, cols], false), decl("x", &[cols], false)],
        )
        .unwrap();
        let ops = [
            Operand::Dense { shape: vec![rows], values: vec![0.0; rows] },
            dense_operand([rows, cols], &a),
            Operand::Dense { shape: vec![cols], values: x.clone() },
        ];
        prop_assert_eq!(bits(&y), bits(&dense_output(run(&p, &ops).unwrap())));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// 2:4 SpMV over 1 to 7 groups of 4 columns a row (an odd count leaves a group over),
    /// groups holding 0, 1 or 2 entries (the storage pads a group to two positions with
    /// zeros): every stored position's term, in storage order, in four partial sums across
    /// the groups (`Program::nm_sum`): the generated kernel, the built-in `spmv`, the
    /// interpreter and the reference add in the same order.
    #[test]
    fn nm_sums_match_the_interpreter(
        (rows, groups, picks, x) in (1usize..4, 1usize..8).prop_flat_map(|(r, g)| {
            (
                Just(r),
                Just(g),
                proptest::collection::vec((0usize..8, -4i32..5, -4i32..5), r * g),
                nonzero_vec(4 * g),
            )
        })
    ) {
        let cols = 4 * groups;
        let pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)];
        let mut a = Vec::new();
        for (k, &(pick, u, v)) in picks.iter().enumerate() {
            let (i, g) = (k / groups, k % groups);
            match pick {
                0..=5 => {
                    let (c0, c1) = pairs[pick];
                    for (c, w) in [(c0, u), (c1, v)] {
                        if w != 0 {
                            a.push((i, 4 * g + c, f64::from(w) / 2.0));
                        }
                    }
                }
                6 => a.push((i, 4 * g + (u.unsigned_abs() as usize % 4), 1.5)),
                _ => {}
            }
        }
        let nv = Nv24::from_coo([rows, cols], a.iter().map(|&(i, j, v)| ([i, j], v))).unwrap();
        let mut y = vec![7.0; rows];
        spmv_nm(&mut y, &nv, &x).unwrap();
        // the stored positions of row `i`, two a group, in storage order
        let want: Vec<f64> = (0..rows)
            .map(|i| {
                let terms: Vec<f64> = (2 * groups * i..2 * groups * (i + 1))
                    .map(|p| {
                        let j = 4 * (p / 2 - groups * i) + nv.crd_2[p];
                        nv.values()[p] * x[j]
                    })
                    .collect();
                partial_sums(&terms)
            })
            .collect();
        prop_assert_eq!(bits(&y), bits(&want));
        let mut builtin = vec![7.0; rows];
        nv.spmv(&x, &mut builtin).unwrap();
        prop_assert_eq!(bits(&y), bits(&builtin));
        prop_assert_eq!(bits(&y), bits(&interpreted_spmv(Nv24::<f64>::ENCODING, [rows, cols], &a, &x)));
    }
}

/// `y = A·x` through the interpreter, `A` (`shape`, `entries`) stored in the format whose
/// encoding text is `encoding` (a generated struct's `ENCODING`).
fn interpreted_spmv(
    encoding: &str,
    shape: [usize; 2],
    entries: &[(usize, usize, f64)],
    x: &[f64],
) -> Vec<f64> {
    let [rows, cols] = shape;
    let encoding = match sparse_dsl::parse::parse_declaration(encoding)
        .unwrap()
        .declared
    {
        sparse_dsl::parse::Declared::Encoding(e) => e,
        sparse_dsl::parse::Declared::Tensor(_) => unreachable!("an encoding"),
    };
    let p = compile(
        "y(i) = a(i,j) * x(j)",
        &[
            decl("y", &[rows], false),
            TensorDecl {
                encoding: Some(encoding.clone()),
                ..decl("a", &[rows, cols], true)
            },
            decl("x", &[cols], false),
        ],
    )
    .unwrap();
    let mut coo = CooTensor::new(vec![rows, cols]);
    for &(i, j, v) in entries {
        coo.push(&[i, j], v);
    }
    let ops = [
        Operand::Dense {
            shape: vec![rows],
            values: vec![0.0; rows],
        },
        Operand::Storage(Box::new(DynamicStorage::from_coo(&encoding, &coo).unwrap())),
        Operand::Dense {
            shape: vec![cols],
            values: x.to_vec(),
        },
    ];
    dense_output(run(&p, &ops).unwrap())
}

/// [`partial_sums`] into a register holding `start` (lane 0 starts from it).
fn partial_sums_from(start: f64, terms: &[f64]) -> f64 {
    let whole = terms.len() / 4 * 4;
    let mut lanes = [start, 0.0, 0.0, 0.0];
    for (p, &t) in terms.iter().enumerate() {
        let lane = if p < whole { p % 4 } else { 0 };
        lanes[lane] += t;
    }
    lanes[0] + (lanes[1] + lanes[2] + lanes[3])
}

#[test]
fn scaled_spmv_accumulates_a_0d_operand_and_literals() {
    // y += 2 * A x - 0.5 x with A = [[1, 0, 2], [0, 0, 0], [0, 3, 0]], x = [1, 2, 4]:
    // A x = [9, 0, 6]; y starts at [1, 1, 1]
    let a = csr([3, 3], &[(0, 0, 1.0), (0, 2, 2.0), (2, 1, 3.0)]);
    let mut y = vec![1.0; 3];
    scaled_spmv(&mut y, 2.0, &a, &[1.0, 2.0, 4.0]).unwrap();
    assert_eq!(y, [1.0 + 18.0 - 0.5, 1.0 - 1.0, 1.0 + 12.0 - 2.0]);
}

#[test]
fn sparse_output_known_arrays() {
    // [[1, 0, 2], [0, 0, 0], [0, 3, 0]] + [[0, 0, 1], [0, 0, 0], [4, 0, 0]]
    let a = csr([3, 3], &[(0, 0, 1.0), (0, 2, 2.0), (2, 1, 3.0)]);
    let b = csr([3, 3], &[(0, 2, 1.0), (2, 0, 4.0)]);
    let mut c = Narrow::from_coo([3, 3], []).unwrap();
    add_narrow(&mut c, &a, &b).unwrap();
    c.validate().unwrap();
    let parts = c.into_raw_parts();
    assert_eq!(parts.pos_1, [0u8, 2, 2, 4]);
    assert_eq!(parts.crd_1, [0u8, 2, 0, 1]);
    assert_eq!(parts.values, [1.0, 3.0, 4.0, 3.0]);
    let mut d = Dcsr::from_coo([3, 3], []).unwrap();
    add_rows(&mut d, &a, &b).unwrap();
    d.validate().unwrap();
    let parts = d.into_raw_parts();
    assert_eq!(parts.pos_0, [0, 2]);
    assert_eq!(parts.crd_0, [0, 2]);
    assert_eq!(parts.pos_1, [0, 2, 4]);
    assert_eq!(parts.crd_1, [0, 2, 0, 1]);
    assert_eq!(parts.values, [1.0, 3.0, 4.0, 3.0]);
}

#[test]
fn nonordered_operand_of_a_union_is_converted() {
    // b = [[5, 0, 6], [0, 0, 0], [0, 7, 8]] with row 0 and row 2 stored in reverse order
    let b = Unordered::from_raw_parts(UnorderedParts {
        dim_shape: [3, 3],
        pos_1: vec![0, 2, 2, 4],
        crd_1: vec![2, 0, 2, 1],
        values: vec![6.0, 5.0, 8.0, 7.0],
    })
    .unwrap();
    let a = csr([3, 3], &[(0, 0, 1.0), (0, 2, 2.0), (2, 1, 3.0)]);
    let mut c = csr([3, 3], &[]);
    add_unordered(&mut c, &a, &b).unwrap();
    c.validate().unwrap();
    let got: Vec<_> = c.iter().map(|(c, &v)| (c, v)).collect();
    assert_eq!(
        got,
        [([0, 0], 6.0), ([0, 2], 8.0), ([2, 1], 10.0), ([2, 2], 8.0)]
    );
}

#[test]
fn sparse_output_width_overflow_is_an_error() {
    use sparse::runtime::{BufferKind, StorageError};
    // 300 columns: coordinates up to 299 do not fit 8 bits
    let a = csr([2, 300], &[(0, 299, 1.0)]);
    let mut c = Narrow::from_coo([2, 300], []).unwrap();
    assert_eq!(
        add_narrow(&mut c, &a, &a),
        Err(StorageError::WidthOverflow {
            level: 1,
            kind: BufferKind::Coordinate,
            value: 299,
            width: 8
        })
    );
    assert_eq!(c.nse(), 0, "the output is left as it was");
    // 2 x 200 entries: the last position, 400, does not fit 8 bits
    let full: Vec<_> = (0..2)
        .flat_map(|i| (0..200).map(move |j| (i, j, 1.0)))
        .collect();
    let a = csr([2, 200], &full);
    let mut c = Narrow::from_coo([2, 200], [([1, 1], 5.0)]).unwrap();
    assert_eq!(
        add_narrow(&mut c, &a, &a),
        Err(StorageError::WidthOverflow {
            level: 1,
            kind: BufferKind::Position,
            value: 400,
            width: 8
        })
    );
    assert_eq!(c.nse(), 1, "the output is left as it was");
}

#[test]
fn a_sparse_output_is_refilled_in_its_own_arrays() {
    // an f64 kernel that cannot fail empties the output's arrays and fills them again: a second
    // product into the same output keeps its allocations and gives the same entries
    let a = csr(
        [3, 4],
        &[
            (0, 0, 1.0),
            (0, 3, 2.0),
            (1, 1, 3.0),
            (2, 0, 4.0),
            (2, 2, 5.0),
        ],
    );
    let b = csr(
        [4, 3],
        &[(0, 1, 1.5), (1, 0, -2.0), (2, 2, 0.5), (3, 1, 4.0)],
    );
    let mut c = csr([3, 3], &[(0, 0, 9.0), (1, 1, 9.0), (2, 2, 9.0)]);
    spgemm(&mut c, &a, &b).unwrap();
    c.validate().unwrap();
    let want = [([0, 1], 9.5), ([1, 0], -6.0), ([2, 1], 6.0), ([2, 2], 2.5)];
    let got: Vec<_> = c.iter().map(|(at, &v)| (at, v)).collect();
    assert_eq!(got, want);
    let (pos, crd, vals) = (
        c.positions(1).unwrap().as_ptr(),
        c.coordinates(1).unwrap().as_ptr(),
        c.values().as_ptr(),
    );
    spgemm(&mut c, &a, &b).unwrap();
    let got: Vec<_> = c.iter().map(|(at, &v)| (at, v)).collect();
    assert_eq!(got, want);
    assert_eq!(
        c.positions(1).unwrap().as_ptr(),
        pos,
        "positions reallocated"
    );
    assert_eq!(
        c.coordinates(1).unwrap().as_ptr(),
        crd,
        "coordinates reallocated"
    );
    assert_eq!(c.values().as_ptr(), vals, "values reallocated");
    // an output whose entry count could overflow its 8-bit positions (2 x 300 > 255) gets new
    // arrays, so an error leaves it as it was (`sparse_output_width_overflow_is_an_error`)
    assert!(!sparse::runtime::generated::refills(
        &[2, 300],
        u8::MAX as usize
    ));
    assert!(sparse::runtime::generated::refills(
        &[15, 17],
        u8::MAX as usize
    ));
    assert!(!sparse::runtime::generated::refills(
        &[usize::MAX, 2],
        usize::MAX
    ));
}

/// The Gustavson workspace of an `f64` SpGEMM marks untouched slots with a signaling NaN no
/// operand holds (`generated::untouched_marker`): operands holding the first candidates of
/// that marker (and other NaNs) still give every product once, in place.
#[test]
fn spgemm_operands_holding_the_workspace_marker() {
    let marker = |k: u64| f64::from_bits(0x7ff0_dead_0000_0000 + k);
    // a = [[m0, 1], [2, m1]], b = [[1, m2], [NaN, 3]]
    let a = csr(
        [2, 2],
        &[
            (0, 0, marker(0)),
            (0, 1, 1.0),
            (1, 0, 2.0),
            (1, 1, marker(1)),
        ],
    );
    let b = csr(
        [2, 2],
        &[
            (0, 0, 1.0),
            (0, 1, marker(2)),
            (1, 0, f64::NAN),
            (1, 1, 3.0),
        ],
    );
    let mut c = csr([2, 2], &[]);
    spgemm(&mut c, &a, &b).unwrap();
    let got = entries(&c);
    // every product once: four entries in order, each a NaN but c[1][0] = 2 * 1 + m1 * NaN
    let coords: Vec<Vec<usize>> = got.iter().map(|(c, _)| c.clone()).collect();
    assert_eq!(coords, [vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);
    assert!(got.iter().all(|(_, v)| f64::from_bits(*v).is_nan()));
    // the first candidate no operand holds, with either sign; a signaling NaN
    let m = sparse::runtime::generated::untouched_marker(&[&[marker(0), -marker(1)], &[marker(2)]]);
    assert_eq!(m.to_bits(), marker(3).to_bits());
    assert!(m.is_nan() && m.to_bits() & (1 << 51) == 0);
    assert_eq!(
        sparse::runtime::generated::untouched_marker(&[]).to_bits(),
        marker(0).to_bits()
    );
    // an operand passed twice (`A·A`, read once) and a prefix of it (read again)
    let held = [marker(1), marker(0)];
    let twice = sparse::runtime::generated::untouched_marker(&[&held, &held, &held[..1]]);
    assert_eq!(twice.to_bits(), marker(2).to_bits());
    // candidates in either chunk of 256 values, in the lanes read four at a time and in a
    // chunk's last values read one by one
    let mut long = vec![1.0; 302];
    (long[5], long[262], long[301]) = (marker(0), -marker(1), marker(2));
    let m = sparse::runtime::generated::untouched_marker(&[&long]);
    assert_eq!(m.to_bits(), marker(3).to_bits());
}

/// Rows of the product long enough for the workspace to mark its bitmap (more than 32
/// coordinates, a workspace wider than 256): banded rows, dense in their range, come out of the
/// bitmap; rows spread over the columns are sorted, and so are the short rows between them.
/// The result equals Gustavson's reference bit for bit.
#[test]
fn spgemm_long_rows_read_from_the_bitmap() {
    let n: usize = 600;
    let a = seeded_matrix(n, 7, |i| {
        let mut cols: Vec<usize> = match i % 5 {
            // a band of 41: product rows of up to 81 coordinates in a range of 81
            0..=2 => (i.saturating_sub(20)..(i + 21).min(n)).collect(),
            // spread: every 13th column from a random start
            3 => ((i * 7) % 13..n).step_by(13).collect(),
            // short: two entries
            _ => vec![i, (i * 31) % n],
        };
        cols.sort_unstable();
        cols.dedup();
        cols
    });
    let a_csr = csr([n, n], &a);
    let mut c = csr([n, n], &[]);
    spgemm(&mut c, &a_csr, &a_csr).unwrap();
    let reference = gustavson(1.0, &a, &a);
    let longest = (0..n)
        .map(|i| reference.iter().filter(|e| e.0[0] == i).count())
        .max()
        .unwrap();
    assert!(
        longest > 2 * 32,
        "rows long enough to mark the bitmap: {longest}"
    );
    assert_eq!(entries(&c), reference);
}

/// A matrix whose rows come in groups of one pattern (as a finite-element matrix stores a
/// node's unknowns): `(groups of (pattern, copies), values)` expanded to `(row, col, value)`
/// in row-major order, with `rows` rows. Empty patterns and groups longer than the four rows
/// the generated code runs together are among them.
fn grouped_matrix(cols: usize) -> impl Strategy<Value = (usize, Vec<(usize, usize, f64)>)> {
    let group = (proptest::collection::vec(0..3u8, cols), 1usize..7);
    proptest::collection::vec(group, 1..6).prop_flat_map(move |groups| {
        let rows: usize = groups.iter().map(|g| g.1).sum();
        (Just(groups), nonzero_vec(rows * cols)).prop_map(move |(groups, values)| {
            let mut out = Vec::new();
            let mut i = 0;
            for (pattern, copies) in groups {
                for _ in 0..copies {
                    for (j, &keep) in pattern.iter().enumerate() {
                        if keep != 0 {
                            out.push((i, j, values[i * cols + j]));
                        }
                    }
                    i += 1;
                }
            }
            (i, out)
        })
    })
}

/// Gustavson's reference: row `i` of `a` by `k` ascending, then row `k` of `b`, each product
/// scaled by `alpha` first.
fn gustavson(
    alpha: f64,
    a: &[(usize, usize, f64)],
    b: &[(usize, usize, f64)],
) -> Vec<(Vec<usize>, u64)> {
    let mut rows_of_b: std::collections::BTreeMap<usize, Vec<(usize, f64)>> = Default::default();
    for &(k, j, y) in b {
        rows_of_b.entry(k).or_default().push((j, y));
    }
    let mut reference = std::collections::BTreeMap::new();
    for &(i, k, x) in a {
        for &(j, y) in rows_of_b.get(&k).map_or(&[][..], |r| &r[..]) {
            let t = alpha * x * y;
            reference
                .entry((i, j))
                .and_modify(|s: &mut f64| *s += t)
                .or_insert(t);
        }
    }
    reference
        .into_iter()
        .map(|((i, j), v)| (vec![i, j], v.to_bits()))
        .collect()
}

/// An `n x n` matrix with the columns `cols_of(i)` (increasing, distinct) in row `i`, values in
/// [-4, 4) and never zero from a generator seeded with `seed`, in row-major order.
fn seeded_matrix(
    n: usize,
    mut seed: u64,
    cols_of: impl Fn(usize) -> Vec<usize>,
) -> Vec<(usize, usize, f64)> {
    let mut a = Vec::new();
    for i in 0..n {
        for j in cols_of(i) {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = ((seed >> 33) % 1000) as f64 / 125.0 - 4.0;
            a.push((i, j, if v == 0.0 { 0.5 } else { v }));
        }
    }
    a
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Rows of `a` with one pattern run together in lanes of the workspace: the product equals
    /// Gustavson's row-by-row reference and the interpreter bit for bit, with a 0-d factor too,
    /// and with `b` in DCSR (its rows merged with `a`'s coordinates).
    #[test]
    fn spgemm_rows_run_together_match_reference_and_interpreter(
        (n, q, (m, a), b, alpha) in (1usize..7, 1usize..7).prop_flat_map(|(n, q)| {
            (Just(n), Just(q), grouped_matrix(n), matrix(n, q), 0.25f64..4.0)
        })
    ) {
        let (a_csr, b_csr) = (csr([m, n], &a), csr([n, q], &b));
        let mut c = csr([m, q], &[]);
        spgemm(&mut c, &a_csr, &b_csr).unwrap();
        prop_assert_eq!(entries(&c), gustavson(1.0, &a, &b));
        let p = compile(
            "c(i,j) = a(i,k) * b(k,j)",
            &[decl("c", &[m, q], true), decl("a", &[m, n], true), decl("b", &[n, q], true)],
        )
        .unwrap();
        prop_assert!(p.shared_rows.is_some());
        let ops = [storage([m, q], &[]), storage([m, n], &a), storage([n, q], &b)];
        prop_assert_eq!(entries(&c), interp_entries(run(&p, &ops).unwrap()));

        let b_dcsr = Dcsr::from_coo([n, q], b.iter().map(|&(k, j, v)| ([k, j], v))).unwrap();
        let mut d = csr([m, q], &[]);
        spgemm_dcsr(&mut d, &a_csr, &b_dcsr).unwrap();
        prop_assert_eq!(entries(&d), entries(&c));

        let mut s = csr([m, q], &[]);
        spgemm_scaled(&mut s, alpha, &a_csr, &b_csr).unwrap();
        prop_assert_eq!(entries(&s), gustavson(alpha, &a, &b));

        let ones: Vec<(usize, usize, f64)> = a.iter().map(|&(i, k, _)| (i, k, 1.0)).collect();
        let pattern = Pattern::from_coo([m, n], ones.iter().map(|&(i, k, v)| ([i, k], v))).unwrap();
        let mut o = csr([m, q], &[]);
        spgemm_pattern(&mut o, &pattern, &b_csr).unwrap();
        prop_assert_eq!(entries(&o), gustavson(1.0, &ones, &b));
    }
}

/// Rows run together whose product rows are long (more than 32 coordinates, in a workspace of
/// 600 columns: the touched list marks and reads its bitmap) and rows run together next to rows
/// run alone, in one product: equal to Gustavson's reference bit for bit.
#[test]
fn spgemm_long_rows_run_together() {
    let n: usize = 600;
    let a = seeded_matrix(n, 11, |i| {
        // nodes of three unknowns share a band of 60 columns; every seventh row is alone
        let node = if i % 7 == 6 { i } else { i / 3 * 3 };
        (node.saturating_sub(30)..(node + 30).min(n))
            .step_by(2)
            .collect()
    });
    let a_csr = csr([n, n], &a);
    let shared = (0..n - 1)
        .filter(|&i| {
            let row = |r: usize| {
                a_csr.crd_1[a_csr.pos_1[r] as usize..a_csr.pos_1[r + 1] as usize].to_vec()
            };
            row(i) == row(i + 1)
        })
        .count();
    assert!(
        shared > n / 3,
        "rows sharing the next one's pattern: {shared}"
    );
    let mut c = csr([n, n], &[]);
    spgemm(&mut c, &a_csr, &a_csr).unwrap();
    assert!(c.pos_1.windows(2).any(|w| w[1] - w[0] > 32));
    assert_eq!(entries(&c), gustavson(1.0, &a, &a));
}

/// Rows summed in a 64-column window (`generated::RowWindow`) next to rows that reach a wide
/// row of `B` or a union past 64 columns, in one product: equal to Gustavson's reference and
/// to the interpreter bit for bit, signed zeros included (products of tiny values underflow to
/// `-0.0` and `+0.0`, and a row whose products are all `-0.0` sums to `-0.0`).
#[test]
fn spgemm_windowed_rows_match_reference_and_interpreter() {
    let n: usize = 300;
    let mut a = seeded_matrix(n, 5, |i| {
        if i % 10 == 7 {
            // a wide row: no row of the product that reaches it is windowed
            (i.saturating_sub(50)..(i + 50).min(n)).step_by(7).collect()
        } else if i % 23 == 11 {
            // a row reaching rows 40 apart: its product spans more than 64 columns
            [i.saturating_sub(40), i, (i + 40).min(n - 1)]
                .into_iter()
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect()
        } else {
            (i.saturating_sub(6)..(i + 7).min(n)).step_by(3).collect()
        }
    });
    for (t, e) in a.iter_mut().enumerate() {
        // rows 100..120 hold tiny values: their products underflow to signed zeros
        if (100..120).contains(&e.0) {
            e.2 = if t % 3 == 0 { -1e-200 } else { 1e-200 };
        }
    }
    let a_csr = csr([n, n], &a);
    let window = sparse::runtime::generated::RowWindow::new(&a_csr.pos_1, &a_csr.crd_1)
        .expect("most rows of a span under 64 columns");
    // SAFETY: `a_csr` is a validated CSR matrix whose columns are its own rows
    let windowed = (0..n)
        .filter(|&i| unsafe { window.reach_unchecked(&a_csr.pos_1, &a_csr.crd_1, i) }.is_some())
        .count();
    assert!(
        windowed > n / 3 && windowed < n - n / 3,
        "windowed rows: {windowed}"
    );
    let mut c = csr([n, n], &[]);
    spgemm(&mut c, &a_csr, &a_csr).unwrap();
    let reference = gustavson(1.0, &a, &a);
    assert!(reference.iter().any(|e| e.1 == (-0.0f64).to_bits()));
    assert!(reference.iter().any(|e| e.1 == 0.0f64.to_bits()));
    assert_eq!(entries(&c), reference);
    assert_eq!(entries(&c), square_by_interpreter(n, &a));
}

/// `A·A` of the `n x n` matrix `a` (CSR) by the interpreter, entries in level order; the
/// program carries the windowed rows' permission that the Rust back end takes.
fn square_by_interpreter(n: usize, a: &[(usize, usize, f64)]) -> Vec<(Vec<usize>, u64)> {
    let p = compile(
        "c(i,j) = a(i,k) * b(k,j)",
        &[
            decl("c", &[n, n], true),
            decl("a", &[n, n], true),
            decl("b", &[n, n], true),
        ],
    )
    .unwrap();
    assert!(p.windowed_rows.is_some());
    let ops = [storage([n, n], &[]), storage([n, n], a), storage([n, n], a)];
    interp_entries(run(&p, &ops).unwrap())
}

#[test]
fn spgemm_shape_mismatch_is_an_error() {
    let a = csr([2, 3], &[(0, 1, 2.0)]);
    let mut c = csr([2, 2], &[]);
    assert!(matches!(
        spgemm(&mut c, &a, &a),
        Err(sparse::Error::LengthMismatch {
            operand: "b (dimension 0)",
            expected: 3,
            got: 2
        })
    ));
}

#[test]
fn spmv_shape_mismatch_is_an_error() {
    let a = csr([2, 3], &[(0, 1, 2.0), (1, 2, 3.0)]);
    let mut y = vec![0.0; 2];
    let e = spmv(&mut y, &a, &[1.0, 2.0]).unwrap_err();
    assert_eq!(
        e.to_string(),
        sparse::runtime::StorageError::LengthMismatch {
            operand: "x",
            expected: 3,
            got: 2
        }
        .to_string()
    );
    // `y` fixes the extent of `i`: the matrix's rows are checked against it
    let mut y = vec![0.0; 3];
    assert!(matches!(
        spmv(&mut y, &a, &[1.0, 2.0, 3.0]),
        Err(sparse::Error::LengthMismatch {
            operand: "a (dimension 0)",
            expected: 3,
            got: 2
        })
    ));
}

#[test]
fn unsigned_kernels_wrap() {
    // [[3, 0, 2^31], [0, 5, 0]] times [2, 7, 2]: 6 + 2^32 wraps to 6
    let a = Csr::<u32>::from_coo([2, 3], [([0, 0], 3), ([0, 2], 1 << 31), ([1, 1], 5)]).unwrap();
    let mut y = [9; 2];
    spmv_u32(&mut y, &a, &[2, 7, 2]).unwrap();
    assert_eq!(y, [6, 35]);
    // A·A + 1, the literal everywhere (a union): [[1, 2], [0, 3]]^2 + 1 = [[2, 9], [1, 10]]
    let a = Csr::<u64>::from_coo([2, 2], [([0, 0], 1), ([0, 1], 2), ([1, 1], 3)]).unwrap();
    let mut c = Csr::<u64>::from_coo([2, 2], []).unwrap();
    spgemm_u64(&mut c, &a, &a).unwrap();
    let got: Vec<([usize; 2], u64)> = c.iter().map(|(ij, v)| (ij, *v)).collect();
    assert_eq!(got, [([0, 0], 2), ([0, 1], 9), ([1, 0], 1), ([1, 1], 10)]);
    // 2^63 * 2 wraps to 0 in u64, stored as an entry
    let a = Csr::<u64>::from_coo([1, 1], [([0, 0], 1 << 63)]).unwrap();
    let b = Csr::<u64>::from_coo([1, 1], [([0, 0], 2)]).unwrap();
    let mut c = Csr::<u64>::from_coo([1, 1], []).unwrap();
    spgemm_u64(&mut c, &a, &b).unwrap();
    assert_eq!(
        c.iter().map(|(ij, v)| (ij, *v)).collect::<Vec<_>>(),
        [([0, 0], 1)]
    );
}

#[test]
fn integer_differences_negate_the_entries_of_the_right_operand_alone() {
    // [[4, 0], [0, MIN]] - [[1, 2], [0, MIN]]: -2 alone, MIN - MIN = 0 stored
    let a = Csr::<i32>::from_coo([2, 2], [([0, 0], 4), ([1, 1], i32::MIN)]).unwrap();
    let b = Csr::<i32>::from_coo([2, 2], [([0, 0], 1), ([0, 1], 2), ([1, 1], i32::MIN)]).unwrap();
    let mut c = Csr::<i32>::from_coo([2, 2], []).unwrap();
    sub_i32(&mut c, &a, &b).unwrap();
    let got: Vec<([usize; 2], i32)> = c.iter().map(|(ij, v)| (ij, *v)).collect();
    assert_eq!(got, [([0, 0], 3), ([0, 1], -2), ([1, 1], 0)]);
    // MIN alone wraps to itself
    let mut c = Csr::<i32>::from_coo([1, 1], []).unwrap();
    let zero = Csr::<i32>::from_coo([1, 1], []).unwrap();
    let min = Csr::<i32>::from_coo([1, 1], [([0, 0], i32::MIN)]).unwrap();
    sub_i32(&mut c, &zero, &min).unwrap();
    assert_eq!(c.values(), &[i32::MIN]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// `f32` sums and wrapping `i64` differences of random matrices (rows of equal and unequal
    /// lengths, so both merge forms run) against each entry's case: `a ± b`, `a`, `b` or `-b`.
    #[test]
    fn unions_of_other_value_types_match_their_cases(
        (m, n, a, b) in (1usize..6, 1usize..9).prop_flat_map(|(m, n)| {
            (Just(m), Just(n), matrix(m, n), matrix(m, n))
        })
    ) {
        let cases = |x: Option<f64>, y: Option<f64>| -> (Option<f32>, Option<i64>) {
            // the values as f32, and as integers: times 4, the largest ones `i64::MIN` so that
            // differences and negations wrap
            let int = |v: f64| if v > 3.5 { i64::MIN } else { (v * 4.0) as i64 };
            match (x, y) {
                (Some(x), Some(y)) => (Some(x as f32 + y as f32), Some(int(x).wrapping_sub(int(y)))),
                (Some(x), None) => (Some(x as f32), Some(int(x))),
                (None, Some(y)) => (Some(y as f32), Some(int(y).wrapping_neg())),
                (None, None) => (None, None),
            }
        };
        let find = |mat: &[(usize, usize, f64)], i: usize, j: usize| {
            mat.iter().find(|t| (t.0, t.1) == (i, j)).map(|t| t.2)
        };
        let (mut want32, mut want64) = (Vec::new(), Vec::new());
        for i in 0..m {
            for j in 0..n {
                if let (Some(s), Some(d)) = cases(find(&a, i, j), find(&b, i, j)) {
                    want32.push(([i, j], s.to_bits()));
                    want64.push(([i, j], d));
                }
            }
        }
        let int = |v: f64| if v > 3.5 { i64::MIN } else { (v * 4.0) as i64 };
        let to32 = |mat: &[(usize, usize, f64)]| {
            Csr::<f32>::from_coo([m, n], mat.iter().map(|&(i, j, v)| ([i, j], v as f32))).unwrap()
        };
        let to64 = |mat: &[(usize, usize, f64)]| {
            Csr::<i64>::from_coo([m, n], mat.iter().map(|&(i, j, v)| ([i, j], int(v)))).unwrap()
        };
        let mut c32 = Csr::<f32>::from_coo([m, n], []).unwrap();
        add_f32(&mut c32, &to32(&a), &to32(&b)).unwrap();
        let got32: Vec<([usize; 2], u32)> = c32.iter().map(|(ij, v)| (ij, v.to_bits())).collect();
        prop_assert_eq!(got32, want32);
        let mut c64 = Csr::<i64>::from_coo([m, n], []).unwrap();
        sub_i64(&mut c64, &to64(&a), &to64(&b)).unwrap();
        let got64: Vec<([usize; 2], i64)> = c64.iter().map(|(ij, v)| (ij, *v)).collect();
        prop_assert_eq!(got64, want64);
    }
}

#[test]
fn unions_keep_signed_zeros_on_rows_of_unequal_lengths() {
    // row 0: a = [+0, -0, 1, -0 at column 5], b = [-0, +0 at column 1, -0 at column 3]:
    // lengths 4 and 3, so the merge runs without a branch per entry; row 1 has equal lengths
    // (the branching merge) and row 2 one side empty
    let (p, z) = (0.0f64, -0.0f64);
    let a = [
        (0, 0, p),
        (0, 2, z),
        (0, 4, 1.0),
        (0, 5, z),
        (1, 0, z),
        (1, 1, 2.0),
    ];
    let b = [
        (0, 0, z),
        (0, 1, p),
        (0, 3, z),
        (1, 1, z),
        (1, 2, p),
        (2, 3, z),
    ];
    let (ca, cb) = (csr([3, 6], &a), csr([3, 6], &b));
    let mut all: Vec<(usize, usize)> = a.iter().chain(&b).map(|&(i, j, _)| (i, j)).collect();
    all.sort_unstable();
    all.dedup();
    let find = |m: &[(usize, usize, f64)], ij: (usize, usize)| {
        m.iter().find(|&&(i, j, _)| (i, j) == ij).map(|t| t.2)
    };
    for sub in [false, true] {
        // the cases: `x ± y` where both are stored, `x` or `y` (`-y`) where one is
        let want: Vec<(Vec<usize>, u64)> = all
            .iter()
            .map(|&ij| {
                let v = match (find(&a, ij), find(&b, ij)) {
                    (Some(x), Some(y)) if sub => x - y,
                    (Some(x), Some(y)) => x + y,
                    (Some(x), None) => x,
                    (None, Some(y)) if sub => -y,
                    (None, Some(y)) => y,
                    (None, None) => unreachable!("a listed coordinate"),
                };
                (vec![ij.0, ij.1], v.to_bits())
            })
            .collect();
        let mut c = Csr::from_coo([3, 6], []).unwrap();
        if sub {
            sub_f64(&mut c, &ca, &cb).unwrap();
        } else {
            add_f64(&mut c, &ca, &cb).unwrap();
        }
        assert_eq!(entries(&c), want, "sub = {sub}");
        let statement = if sub {
            "c(i,j) = a(i,j) - b(i,j)"
        } else {
            "c(i,j) = a(i,j) + b(i,j)"
        };
        let out = TensorDecl {
            encoding: Some(csr_encoding()),
            ..decl("c", &[3, 6], true)
        };
        let p = compile(
            statement,
            &[out, decl("a", &[3, 6], true), decl("b", &[3, 6], true)],
        )
        .unwrap();
        let empty = DynamicStorage::from_coo(&csr_encoding(), &CooTensor::new(vec![3, 6])).unwrap();
        let ops = [
            Operand::Storage(Box::new(empty)),
            storage([3, 6], &a),
            storage([3, 6], &b),
        ];
        assert_eq!(
            entries(&c),
            interp_entries(run(&p, &ops).unwrap()),
            "sub = {sub}"
        );
    }
}

#[test]
fn integer_division_by_zero_is_an_error() {
    // [[7, 0, MIN], [0, -9, 0]] / [2, 3, -1]: 7 / 2 + MIN / -1 (wraps to MIN) = MIN + 3
    let a = Csr::<i32>::from_coo([2, 3], [([0, 0], 7), ([0, 2], i32::MIN), ([1, 1], -9)]).unwrap();
    let x = [2, 3, -1];
    let mut y = [5; 2];
    ratio_i32(&mut y, &a, &x).unwrap();
    assert_eq!(y, [i32::MIN + 3, -3]);
    for par in [Par::Seq, Par::rayon(2)] {
        let mut y_par = [5; 2];
        ratio_par_i32(par, &mut y_par, &a, &x).unwrap();
        assert_eq!(y_par, y);
    }
    // a zero where `a` stores an entry: the interpreter's error, not a panic
    let x = [2, 0, -1];
    assert!(matches!(
        ratio_i32(&mut y, &a, &x),
        Err(sparse::Error::DivisionByZero)
    ));
    for par in [Par::Seq, Par::rayon(2)] {
        assert!(matches!(
            ratio_par_i32(par, &mut y, &a, &x),
            Err(sparse::Error::DivisionByZero)
        ));
    }
    // a zero where `a` has no entry is never divided by (`/` intersects)
    let x = [2, 3, 0];
    let a = Csr::<i32>::from_coo([2, 3], [([0, 0], 7), ([1, 1], -9)]).unwrap();
    ratio_i32(&mut y, &a, &x).unwrap();
    assert_eq!(y, [3, -3]);
}

#[test]
fn spmv_known_result() {
    // [[1, 0, 2], [0, 0, 0], [0, 3, 0]] · [1, 2, 3] = [7, 0, 6]
    let a = csr([3, 3], &[(0, 0, 1.0), (0, 2, 2.0), (2, 1, 3.0)]);
    let mut y = vec![9.0; 3];
    spmv(&mut y, &a, &[1.0, 2.0, 3.0]).unwrap();
    assert_eq!(y, [7.0, 0.0, 6.0]);
    // CSR assigns every row (no clearing pass), DCSR visits the stored rows only
    let d = Dcsr::<f64>::from_coo([3, 3], [([0, 0], 1.0), ([0, 2], 2.0), ([2, 1], 3.0)]).unwrap();
    let mut y = vec![9.0; 3];
    spmv_dcsr(&mut y, &d, &[1.0, 2.0, 3.0]).unwrap();
    assert_eq!(y, [7.0, 0.0, 6.0]);
    let mut m = vec![9.0; 3];
    rowmin(&mut m, &a).unwrap();
    assert_eq!(m, [1.0, 0.0, 3.0]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn par_kernels_equal_the_sequential_one(
        (rows, cols, a, x) in (1usize..40, 1usize..6).prop_flat_map(|(r, c)| {
            (Just(r), Just(c), matrix(r, c), nonzero_vec(c))
        })
    ) {
        let a = csr([rows, cols], &a);
        let mut want = vec![0.0; rows];
        spmv(&mut want, &a, &x).unwrap();
        for par in [Par::Seq, Par::rayon(0), Par::rayon(2), Par::rayon(7)] {
            let mut y = vec![f64::NAN; rows];
            spmv_with(par, &mut y, &a, &x).unwrap();
            prop_assert_eq!(&y, &want, "{:?}", par);
        }
        let mut short = vec![0.0; rows + 1];
        prop_assert!(spmv_with(Par::rayon(2), &mut short, &a, &x).is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// What kernels assemble their in-order outputs with: the same arrays as `from_coo`, in
    /// order or not (out of order falls back to sorting), duplicates summed.
    #[test]
    fn ordered_assembly_equals_from_coo(
        (m, n, a, shuffle) in (1usize..6, 1usize..6).prop_flat_map(|(m, n)| {
            (Just(m), Just(n), matrix(m, n), any::<bool>())
        })
    ) {
        let mut entries: Vec<([usize; 2], f64)> = a.iter().map(|&(i, j, v)| ([i, j], v)).collect();
        if shuffle {
            entries.reverse();
            if let Some(&e) = entries.first() {
                entries.push(e);
            }
        }
        let want = Csr::from_coo([m, n], entries.clone()).unwrap();
        prop_assert_eq!(Csr::from_ordered_coo([m, n], entries.clone()).unwrap(), want);
        let want = Dcsr::from_coo([m, n], entries.clone()).unwrap();
        prop_assert_eq!(Dcsr::from_ordered_coo([m, n], entries).unwrap(), want);
    }
}

/// Rows summed over their span (`generated::RowSpans`: 16 stored entries or more, many
/// products for the columns they reach), alone and run together in lanes, next to short rows
/// that take the first-touch path and rows whose span is too wide for their products, in one
/// product: equal to Gustavson's reference and to the interpreter bit for bit, signed zeros
/// included.
#[test]
fn spgemm_spanned_rows_match_reference_and_interpreter() {
    let n: usize = 800;
    let mut a = seeded_matrix(n, 17, |i| {
        if i % 5 == 4 {
            // short rows: the first-touch path
            (i.saturating_sub(6)..(i + 7).min(n)).step_by(3).collect()
        } else if i % 31 == 3 {
            // 16 entries 50 apart, all short rows of `B`: a span of 750 columns for 80 products
            (0..16).map(|t| 4 + 50 * t).collect()
        } else {
            // nodes of two unknowns share a band of 40 columns (every other row alone)
            let node = if i % 10 < 5 { i / 2 * 2 } else { i };
            (node.saturating_sub(20)..(node + 20).min(n))
                .step_by(2)
                .collect()
        }
    });
    for (t, e) in a.iter_mut().enumerate() {
        // rows 200..240 hold tiny values: their products underflow to signed zeros
        if (200..240).contains(&e.0) {
            e.2 = if t % 3 == 0 { -1e-200 } else { 1e-200 };
        }
    }
    let a_csr = csr([n, n], &a);
    let mut spans = sparse::runtime::generated::RowSpans::new(n);
    let spanned: Vec<usize> = (0..n)
        .filter(|&i| {
            // SAFETY: `a_csr` is a validated CSR matrix whose columns are its own rows
            unsafe {
                spans.reach_unchecked(&a_csr.pos_1, &a_csr.crd_1, i, &a_csr.pos_1, &a_csr.crd_1)
            }
            .is_some()
        })
        .collect();
    assert!(
        spanned.len() > n / 2 && spanned.len() < n - n / 5,
        "spanned rows: {}",
        spanned.len()
    );
    // the wide rows are not spanned, the short ones neither
    assert!(!spanned.contains(&3) && !spanned.contains(&4));
    // rows 150 and 151 run together, 156 alone (not among the 7 rows of 16 entries or more
    // after the wide row 127, turned down unseen)
    assert!(spanned.contains(&150) && spanned.contains(&156));
    let mut c = csr([n, n], &[]);
    spgemm(&mut c, &a_csr, &a_csr).unwrap();
    let reference = gustavson(1.0, &a, &a);
    assert!(reference.iter().any(|e| e.1 == (-0.0f64).to_bits()));
    assert!(reference.iter().any(|e| e.1 == 0.0f64.to_bits()));
    assert_eq!(entries(&c), reference);
    // the workspace is clean after the call: a second product into the same output agrees
    spgemm(&mut c, &a_csr, &a_csr).unwrap();
    assert_eq!(entries(&c), reference);
    assert_eq!(entries(&c), square_by_interpreter(n, &a));
}
