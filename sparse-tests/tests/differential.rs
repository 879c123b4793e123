//! Differential property tests: every generated format against the dynamic reference storage
//! (same arrays), against the dense tensor (to_dense, get, iter), and SpMV against dense SpMV.

use proptest::prelude::*;
use sparse::runtime::{CooTensor, DynamicStorage, Index};

sparse::sparse_format! {
    Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    Csc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 16, crdWidth = 16 }>;
    Csc32 = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 32, crdWidth = 32 }>;
    Csr8 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 8, crdWidth = 8 }>;
    Dcsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed), crdWidth = 8 }>;
    Dcsc = #sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed), posWidth = 32, crdWidth = 8 }>;
    Coo = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>;
    CooSoa = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)) }>;
    CooDup = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(nonunique)), posWidth = 64 }>;
    CscCoo = #sparse_tensor.encoding<{ map = (i, j) -> (j : compressed(nonunique), i : singleton) }>;
    LooseCsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>;
    UnorderedCsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed(nonordered)) }>;
    DenseMat = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>;
    Bsr22 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>;
    BsrColBlocks = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, j mod 3 : dense, i mod 2 : dense) }>;
    Bsc23 = #sparse_tensor.encoding<{ map = (i, j) -> (j floordiv 3 : dense, i floordiv 2 : compressed, j mod 3 : dense, i mod 2 : dense) }>;
    Csf = #sparse_tensor.encoding<{ map = (i, j, k) -> (i : compressed, j : compressed, k : compressed) }>;
    Coo3 = #sparse_tensor.encoding<{ map = (i, j, k) -> (i : compressed(nonunique), j : singleton, k : singleton) }>;
    Mode1 = #sparse_tensor.encoding<{ map = (i, j, k) -> (j : dense, k : compressed, i : compressed) }>;
    SparseVector = #sparse_tensor.encoding<{ map = (i) -> (i : compressed), posWidth = 8, crdWidth = 8 }>;
    Nv24 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 2 }>;
    Ell = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 3 * i : dense, i : dense, j : compressed) }>;
    EllCsc = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 2 * j : dense, j : dense, i : compressed(nonunique)), posWidth = 16 }>;
    BatchCsr = #sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : compressed), posWidth = 16 }>;
    BatchCoo = #sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : compressed(nonunique), j : singleton) }>;
    BatchLoose = #sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : loose_compressed) }>;
    Nv13 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 3 : dense, j mod 3 : structured[1, 3]), crdWidth = 8 }>;
    // patterns (`explicitVal`): no values array, every stored entry holds 1
    PatCsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32, explicitVal = 1.0 : f64, implicitVal = 0.0 : f64 }>;
    PatDcsc = #sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed), explicitVal = 1.0 : f64 }>;
    PatCoo = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)), explicitVal = 1.0 : f64 }>;
    PatEll = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 4 * i : dense, i : dense, j : compressed), explicitVal = 1.0 : f64 }>;
    PatCsf = #sparse_tensor.encoding<{ map = (i, j, k) -> (i : compressed, j : compressed, k : compressed), crdWidth = 8, explicitVal = 1.0 : f64 }>;
}

/// Per level: (positions, owned coordinate buffer), widened.
type LevelArrays = Vec<(Option<Vec<usize>>, Option<Vec<usize>>)>;

fn arrays<S: sparse::runtime::SparseStorage>(s: &S) -> LevelArrays {
    (0..s.lvl_types().len())
        .map(|l| {
            (
                s.position_buffer(l).map(|b| b.to_vec()),
                s.coordinate_buffer(l).map(|b| b.to_vec()),
            )
        })
        .collect()
}

fn dense_of<const R: usize>(shape: [usize; R], entries: &[([usize; R], f64)]) -> Vec<f64> {
    let mut d = vec![0.0; shape.iter().product()];
    for (c, v) in entries {
        let flat = c.iter().zip(shape.iter()).fold(0, |a, (c, s)| a * s + c);
        d[flat] += v;
    }
    d
}

macro_rules! check_format {
    ($ty:ident, $shape:expr, $entries:expr) => {{
        let shape = $shape;
        let entries: &Vec<(_, f64)> = $entries;
        let g = $ty::<f64>::from_coo(shape, entries.iter().cloned()).unwrap();
        let mut coo = CooTensor::new(shape.to_vec());
        for (c, v) in entries {
            coo.push(&c[..], *v);
        }
        let d = DynamicStorage::from_coo(&$ty::<f64>::encoding().verify().unwrap(), &coo).unwrap();
        prop_assert_eq!(arrays(&g), arrays(&d), "{} arrays", stringify!($ty));
        prop_assert_eq!(g.values(), d.values());
        prop_assert_eq!(g.to_string(), d.to_string());
        g.validate().unwrap();
        let dense = dense_of(shape, entries);
        prop_assert_eq!(&g.to_dense().unwrap(), &dense);
        prop_assert_eq!(&d.to_dense().unwrap(), &dense);
        let gi: Vec<(Vec<usize>, f64)> = g.iter().map(|(c, v)| (c.to_vec(), *v)).collect();
        let di: Vec<(Vec<usize>, f64)> = d.iter().map(|(c, v)| (c, *v)).collect();
        prop_assert_eq!(&gi, &di);
        let mut fe = Vec::new();
        g.for_each(|c, v| fe.push((c.to_vec(), *v)));
        prop_assert_eq!(&fe, &gi);
        for (c, _) in entries.iter().take(20) {
            let flat = c.iter().zip(shape.iter()).fold(0, |a, (c, s)| a * s + c);
            let got = g.get(*c).copied();
            prop_assert_eq!(got, d.get(&c[..]).copied());
            if $ty::<f64>::LVL_TYPES.last().unwrap().is_unique() {
                prop_assert_eq!(got, Some(dense[flat]));
            }
        }
        prop_assert_eq!(g.memory_bytes(), d.memory_bytes());
        prop_assert_eq!(g.to_coo(), d.to_coo());
        let again = $ty::<f64>::from_raw_parts(g.clone().into_raw_parts()).unwrap();
        prop_assert_eq!(&again, &g);
        g
    }};
}

/// A pattern format (`explicitVal = 1.0`) against the dynamic storage and the dense tensor, as
/// `check_format!` (no values array: the constant, the print form with it, `nse`).
macro_rules! check_pattern {
    ($ty:ident, $shape:expr, $entries:expr) => {{
        let shape = $shape;
        let entries: &Vec<(_, f64)> = $entries;
        let g = $ty::<f64>::from_coo(shape, entries.iter().cloned()).unwrap();
        let mut coo = CooTensor::new(shape.to_vec());
        for (c, v) in entries {
            coo.push(&c[..], *v);
        }
        let d = DynamicStorage::from_coo(&$ty::<f64>::encoding().verify().unwrap(), &coo).unwrap();
        prop_assert_eq!(arrays(&g), arrays(&d), "{} arrays", stringify!($ty));
        prop_assert!(d.values().is_empty());
        prop_assert_eq!(g.explicit_value(), 1.0);
        prop_assert_eq!(d.explicit_value(), Some(&1.0));
        prop_assert_eq!(g.nse(), d.nse());
        prop_assert_eq!(g.to_string(), d.to_string());
        g.validate().unwrap();
        let dense = dense_of(shape, entries);
        prop_assert_eq!(&g.to_dense().unwrap(), &dense);
        prop_assert_eq!(&d.to_dense().unwrap(), &dense);
        let gi: Vec<(Vec<usize>, f64)> = g.iter().map(|(c, v)| (c.to_vec(), *v)).collect();
        let di: Vec<(Vec<usize>, f64)> = d.iter().map(|(c, v)| (c, *v)).collect();
        prop_assert_eq!(&gi, &di);
        prop_assert_eq!(gi.len(), g.nse());
        for (c, _) in entries.iter().take(20) {
            prop_assert_eq!(g.get(*c).copied(), d.get(&c[..]).copied());
        }
        prop_assert_eq!(g.memory_bytes(), d.memory_bytes());
        prop_assert_eq!(g.to_coo(), d.to_coo());
        let again = $ty::<f64>::from_raw_parts(g.clone().into_raw_parts()).unwrap();
        prop_assert_eq!(&again, &g);
        g
    }};
}

/// A pattern: distinct coordinates, each holding 1.
fn pattern_matrix() -> impl Strategy<Value = ([usize; 2], Vec<([usize; 2], f64)>)> {
    matrix().prop_map(|(shape, entries)| {
        let mut cs: Vec<[usize; 2]> = entries.into_iter().map(|(c, _)| c).collect();
        cs.sort();
        cs.dedup();
        (shape, cs.into_iter().rev().map(|c| (c, 1.0)).collect())
    })
}

fn matrix() -> impl Strategy<Value = ([usize; 2], Vec<([usize; 2], f64)>)> {
    (1usize..13, 1usize..13).prop_flat_map(|(m, n)| {
        let entry = ((0..m, 0..n), -4i32..5).prop_map(|((i, j), v)| ([i, j], v as f64));
        (Just([m, n]), proptest::collection::vec(entry, 0..60))
    })
}

fn blocked_matrix() -> impl Strategy<Value = ([usize; 2], Vec<([usize; 2], f64)>)> {
    (1usize..6, 1usize..4).prop_flat_map(|(a, b)| {
        let (m, n) = (2 * a, 6 * b);
        let entry = ((0..m, 0..n), -4i32..5).prop_map(|((i, j), v)| ([i, j], v as f64));
        (Just([m, n]), proptest::collection::vec(entry, 0..60))
    })
}

fn tensor3() -> impl Strategy<Value = ([usize; 3], Vec<([usize; 3], f64)>)> {
    (1usize..6, 1usize..6, 1usize..6).prop_flat_map(|(a, b, c)| {
        let entry = ((0..a, 0..b, 0..c), -4i32..5).prop_map(|((i, j, k), v)| ([i, j, k], v as f64));
        (Just([a, b, c]), proptest::collection::vec(entry, 0..40))
    })
}

fn dense_spmv(shape: [usize; 2], entries: &[([usize; 2], f64)], x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; shape[0]];
    for ([i, j], v) in entries {
        y[*i] += v * x[*j];
    }
    y
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn matrices_match_dynamic_and_dense((shape, entries) in matrix()) {
        let x: Vec<f64> = (0..shape[1]).map(|j| 1.0 + (j % 7) as f64).collect();
        let want = dense_spmv(shape, &entries, &x);
        macro_rules! with_spmv {
            ($ty:ident) => {{
                let g = check_format!($ty, shape, &entries);
                let mut y = vec![f64::NAN; shape[0]];
                g.spmv(&x, &mut y).unwrap();
                prop_assert_eq!(&y, &want, "{} spmv", stringify!($ty));
                let mut yp = vec![f64::NAN; shape[0]];
                g.spmv_par(&x, &mut yp).unwrap();
                prop_assert_eq!(&yp, &y, "{} spmv_par", stringify!($ty));
            }};
        }
        with_spmv!(Csr);
        with_spmv!(Csc);
        with_spmv!(Dcsr);
        with_spmv!(Dcsc);
        with_spmv!(Coo);
        with_spmv!(CooSoa);
        with_spmv!(CooDup);
        with_spmv!(CscCoo);
        with_spmv!(LooseCsr);
        with_spmv!(UnorderedCsr);
        with_spmv!(DenseMat);
        if shape[0] % 2 == 0 && shape[1] % 2 == 0 {
            with_spmv!(Bsr22);
        } else {
            let err = Bsr22::<f64>::from_coo(shape, entries.iter().cloned()).unwrap_err();
            prop_assert!(matches!(err, sparse::runtime::StorageError::BlockShape { block: 2, .. } ), "{err}");
        }
    }

    #[test]
    fn blocked_matrices_match_dynamic_and_dense((shape, entries) in blocked_matrix()) {
        let x: Vec<f64> = (0..shape[1]).map(|j| 1.0 + (j % 7) as f64).collect();
        let want = dense_spmv(shape, &entries, &x);
        let g = check_format!(Bsr22, shape, &entries);
        let mut y = vec![f64::NAN; shape[0]];
        g.spmv(&x, &mut y).unwrap();
        prop_assert_eq!(&y, &want);
        let mut yp = vec![f64::NAN; shape[0]];
        g.spmv_par(&x, &mut yp).unwrap();
        prop_assert_eq!(&yp, &y);
        let g = check_format!(Bsc23, shape, &entries);
        let mut y = vec![f64::NAN; shape[0]];
        g.spmv(&x, &mut y).unwrap();
        prop_assert_eq!(&y, &want);
        let g = check_format!(BsrColBlocks, shape, &entries);
        let mut y = vec![f64::NAN; shape[0]];
        g.spmv(&x, &mut y).unwrap();
        prop_assert_eq!(&y, &want);
    }

    #[test]
    fn n_out_of_m_matches_dynamic_and_dense((rows, blocks, raw) in (1usize..7, 1usize..5).prop_flat_map(|(r, b)| (Just(r), Just(b), proptest::collection::vec(((0..r), (0..12 * b), 1i32..5), 0..40)))) {
        // keep at most n entries per block (2 of 4 for Nv24, 1 of 3 for Nv13), distinct coordinates
        for (ty, m, n) in [("Nv24", 4usize, 2usize), ("Nv13", 3, 1)] {
            let cols = m * blocks;
            let mut per_block = std::collections::HashMap::new();
            let mut seen = std::collections::HashSet::new();
            let mut entries = Vec::new();
            for &(i, j, v) in &raw {
                let j = j % cols;
                let k = per_block.entry((i, j / m)).or_insert(0usize);
                if *k < n && seen.insert((i, j)) {
                    *k += 1;
                    entries.push(([i, j], v as f64));
                }
            }
            let shape = [rows, cols];
            let x: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 7) as f64).collect();
            let want = dense_spmv(shape, &entries, &x);
            let mut y = vec![f64::NAN; rows];
            if ty == "Nv24" {
                let g = check_format!(Nv24, shape, &entries);
                prop_assert_eq!(g.nse(), rows * blocks * 2);
                g.spmv(&x, &mut y).unwrap();
            } else {
                let g = check_format!(Nv13, shape, &entries);
                g.spmv(&x, &mut y).unwrap();
            }
            prop_assert_eq!(&y, &want);
        }
    }

    #[test]
    fn ell_matches_dynamic_and_dense((shape, raw) in matrix()) {
        // keep at most 3 distinct entries per row (Ell) / 2 per column (EllCsc)
        for (per, axis) in [(3usize, 0usize), (2, 1)] {
            let mut count = std::collections::HashMap::new();
            let mut seen = std::collections::HashSet::new();
            let entries: Vec<([usize; 2], f64)> = raw
                .iter()
                .filter(|(c, _)| {
                    let n = count.entry(c[axis]).or_insert(0usize);
                    if *n < per && seen.insert(*c) {
                        *n += 1;
                        true
                    } else {
                        false
                    }
                })
                .cloned()
                .collect();
            let x: Vec<f64> = (0..shape[1]).map(|j| 1.0 + (j % 7) as f64).collect();
            let want = dense_spmv(shape, &entries, &x);
            let mut y = vec![f64::NAN; shape[0]];
            if axis == 0 {
                check_format!(Ell, shape, &entries).spmv(&x, &mut y).unwrap();
            } else {
                check_format!(EllCsc, shape, &entries).spmv(&x, &mut y).unwrap();
            }
            prop_assert_eq!(&y, &want);
        }
    }

    #[test]
    fn batches_match_dynamic_and_dense(
        (nb, m, n, pattern) in (1usize..4, 1usize..6, 1usize..6).prop_flat_map(|(nb, m, n)| (Just(nb), Just(m), Just(n), proptest::collection::vec(((0..m), (0..n)), 0..12))),
        vals in proptest::collection::vec(1i32..9, 36),
    ) {
        // every batch holds the same number of distinct entries (the pattern may differ)
        let mut distinct: Vec<(usize, usize)> = pattern.clone();
        distinct.sort();
        distinct.dedup();
        let mut entries = Vec::new();
        for b in 0..nb {
            for (k, &(i, j)) in distinct.iter().enumerate() {
                // batch b shifts the pattern's rows (a different pattern, same nse)
                entries.push(([b, (i + b) % m, j], vals[(b * 7 + k) % vals.len()] as f64));
            }
        }
        let shape = [nb, m, n];
        check_format!(BatchCsr, shape, &entries);
        check_format!(BatchCoo, shape, &entries);
        check_format!(BatchLoose, shape, &entries);
    }

    #[test]
    fn tensors_match_dynamic_and_dense((shape, entries) in tensor3()) {
        check_format!(Csf, shape, &entries);
        check_format!(Coo3, shape, &entries);
        check_format!(Mode1, shape, &entries);
    }

    #[test]
    fn vectors_match((n, entries) in (1usize..200).prop_flat_map(|n| (Just(n), proptest::collection::vec(((0..n), -4i32..5).prop_map(|(i, v)| ([i], v as f64)), 0..50)))) {
        check_format!(SparseVector, [n], &entries);
    }

    #[test]
    fn dense_round_trip((shape, entries) in matrix()) {
        let dense = dense_of(shape, &entries);
        let a = Csr::<f64>::from_dense(shape, &dense).unwrap();
        prop_assert_eq!(a.to_dense().unwrap(), dense.clone());
        prop_assert!(a.values().iter().all(|v| *v != 0.0));
        if shape[0] % 2 == 0 && shape[1] % 2 == 0 {
            let b = Bsr22::<f64>::from_dense(shape, &dense).unwrap();
            prop_assert_eq!(b.to_dense().unwrap(), dense);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn patterns_match_dynamic_and_dense((shape, entries) in pattern_matrix(), bad in any::<prop::sample::Index>()) {
        let x: Vec<f64> = (0..shape[1]).map(|j| 1.0 + (j % 7) as f64).collect();
        let want = dense_spmv(shape, &entries, &x);
        macro_rules! with_spmv {
            ($ty:ident) => {{
                let g = check_pattern!($ty, shape, &entries);
                let mut y = vec![f64::NAN; shape[0]];
                g.spmv(&x, &mut y).unwrap();
                prop_assert_eq!(&y, &want, "{} spmv", stringify!($ty));
            }};
        }
        with_spmv!(PatCsr);
        with_spmv!(PatDcsc);
        with_spmv!(PatCoo);
        if entries.iter().all(|([i, _], _)| entries.iter().filter(|([r, _], _)| r == i).count() <= 4) {
            with_spmv!(PatEll);
        }
        // the plain CSR with the same entries: only the values differ in memory
        let plain = check_format!(Csr, shape, &entries);
        let pattern = PatCsr::<f64>::from_coo(shape, entries.iter().cloned()).unwrap();
        prop_assert_eq!(plain.memory_bytes() - pattern.memory_bytes(), 8 * entries.len());
        // one entry off the constant: the same error from both storages
        if !entries.is_empty() {
            let mut off = entries.clone();
            let k = bad.index(off.len());
            off[k].1 = 3.0;
            let e = PatCsr::<f64>::from_coo(shape, off.iter().cloned()).unwrap_err();
            let mut coo = CooTensor::new(shape.to_vec());
            for (c, v) in &off {
                coo.push(&c[..], *v);
            }
            let de = DynamicStorage::from_coo(&PatCsr::<f64>::encoding().verify().unwrap(), &coo).unwrap_err();
            prop_assert_eq!(&e, &de);
            prop_assert_eq!(e, sparse::runtime::StorageError::ExplicitValueMismatch {
                coords: off[k].0.to_vec(),
                value: "3".into(),
                explicit: "1".into(),
            });
        }
    }

    #[test]
    fn pattern_tensors_match_dynamic_and_dense((shape, entries) in tensor3()) {
        let mut cs: Vec<[usize; 3]> = entries.into_iter().map(|(c, _)| c).collect();
        cs.sort();
        cs.dedup();
        let ones: Vec<([usize; 3], f64)> = cs.into_iter().map(|c| (c, 1.0)).collect();
        check_pattern!(PatCsf, shape, &ones);
    }

    #[test]
    fn conversions_match_dynamic((shape, entries) in blocked_matrix()) {
        let a = Csr::<f64>::from_coo(shape, entries.iter().cloned()).unwrap();
        let mut coo = CooTensor::new(shape.to_vec());
        for (c, v) in &entries {
            coo.push(&c[..], *v);
        }
        let d = DynamicStorage::from_coo(&Csr::<f64>::encoding().verify().unwrap(), &coo).unwrap();
        macro_rules! via {
            ($ty:ident) => {{
                let g: $ty = a.convert::<$ty>().unwrap();
                let dd = d.convert(&$ty::<f64>::encoding().verify().unwrap()).unwrap();
                prop_assert_eq!(arrays(&g), arrays(&dd), "{}", stringify!($ty));
                prop_assert_eq!(g.values(), dd.values());
                let back: Csr = g.convert::<Csr>().unwrap();
                let nonzero = Csr::<f64>::from_coo(shape, entries.iter().cloned()).unwrap().convert::<Csr>().unwrap();
                prop_assert_eq!(back, nonzero);
            }};
        }
        via!(Coo);
        via!(Dcsc);
        via!(Bsr22);
        via!(Bsc23);
        via!(LooseCsr);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Conversions into CSR and CSC count and scatter straight from the source
    /// (`generated::assemble_entries`): the arrays and values equal `from_coo` of the source's
    /// nonzero entries in its storage order, from sources visited in and out of the target's
    /// order, with duplicates (COO nonunique: the fallback to `assemble`), and with widths that
    /// overflow (`Csr8`'s 8-bit coordinates: the same error as `from_coo`).
    #[test]
    fn counting_conversions_equal_the_assembly((shape, entries) in matrix(), wide in 0usize..3) {
        // column indices past 8 bits now and then, for Csr8's width error
        let shape = if wide == 0 { [shape[0], 70_000] } else { shape };
        let entries: Vec<([usize; 2], f64)> = entries
            .into_iter()
            .map(|([i, j], v)| ([i, if wide == 0 { j * 5_000 } else { j }], v))
            .collect();
        let dup = CooDup::<f64>::from_coo(shape, entries.iter().cloned()).unwrap();
        let csr = Csr::<f64>::from_coo(shape, entries.iter().cloned()).unwrap();
        let dcsc = Dcsc::<f64>::from_coo(shape, entries.iter().cloned());
        macro_rules! same {
            ($src:expr, $ty:ident) => {{
                let src = &$src;
                let got = src.convert::<$ty<f64>>();
                let mut nonzero = Vec::new();
                src.for_each(|c, v| {
                    if *v != 0.0 {
                        nonzero.push((c, *v));
                    }
                });
                let want = $ty::<f64>::from_coo(shape, nonzero);
                match (got, want) {
                    (Ok(g), Ok(w)) => {
                        prop_assert_eq!(arrays(&g), arrays(&w), "{}", stringify!($ty));
                        prop_assert_eq!(
                            g.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                            w.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                        );
                    }
                    (Err(g), Err(w)) => prop_assert_eq!(g, w),
                    (g, w) => prop_assert!(false, "{:?} vs {:?}", g.err(), w.err()),
                }
            }};
        }
        same!(csr, Csc);
        same!(csr, Csr);
        same!(dup, Csr);
        same!(dup, Csc);
        same!(csr, Csr8);
        if let Ok(d) = dcsc {
            same!(d, Csr);
        }
    }
}

#[test]
fn ell_arrays_and_row_overflow() {
    use sparse::runtime::StorageError;
    // rows: 0 -> cols 1, 3; 1 -> none; 2 -> col 0
    let a = Ell::<f64>::from_coo([3, 4], [([0, 3], 2.0), ([2, 0], 3.0), ([0, 1], 1.0)]).unwrap();
    assert_eq!(a.lvl_sizes(), [3, 3, 4]);
    // slice 0 holds the first element of each row, slice 1 the second
    assert_eq!(
        a.positions(2),
        Some(&[0usize, 1, 1, 2, 3, 3, 3, 3, 3, 3][..])
    );
    assert_eq!(a.coordinates(2), Some(&[1usize, 0, 3][..]));
    assert_eq!(a.values(), &[1.0, 3.0, 2.0]);
    assert_eq!(a.get([0, 3]), Some(&2.0));
    assert_eq!(a.get([1, 3]), None);
    let err = Ell::<f64>::from_coo([1, 5], (0..4).map(|j| ([0, j], 1.0))).unwrap_err();
    assert_eq!(
        err,
        StorageError::EllRowOverflow {
            row: 0,
            count: 4,
            slices: 3
        }
    );
}

#[test]
fn nonordered_levels_keep_input_order() {
    // row 0 gets columns 5, 2, 5 (duplicate merged at its first place), 0; row 1 gets 3, 1.
    let entries = [
        ([0, 5], 1.0),
        ([1, 3], 2.0),
        ([0, 2], 3.0),
        ([0, 5], 4.0),
        ([1, 1], 5.0),
        ([0, 0], 6.0),
    ];
    let a = UnorderedCsr::<f64>::from_coo([2, 6], entries).unwrap();
    assert_eq!(a.positions(1), Some(&[0usize, 3, 5][..]));
    assert_eq!(a.coordinates(1), Some(&[5usize, 2, 0, 3, 1][..]));
    assert_eq!(a.values(), &[5.0, 3.0, 6.0, 2.0, 5.0]);
    assert_eq!(a.get([0, 2]), Some(&3.0));
    a.validate().unwrap();
    let mut coo = CooTensor::new(vec![2, 6]);
    for (c, v) in entries {
        coo.push(&c, v);
    }
    let d =
        DynamicStorage::from_coo(&UnorderedCsr::<f64>::encoding().verify().unwrap(), &coo).unwrap();
    assert_eq!(arrays(&a), arrays(&d));
    assert_eq!(a.values(), d.values());
}

#[test]
fn batches_store_local_positions_and_equal_nse() {
    use sparse::runtime::StorageError;
    // batch 0: (0, 1), (1, 0); batch 1: (0, 0), (0, 2)
    let a = BatchCsr::<f64>::from_coo(
        [2, 2, 3],
        [
            ([0, 0, 1], 1.0),
            ([0, 1, 0], 2.0),
            ([1, 0, 0], 3.0),
            ([1, 0, 2], 4.0),
        ],
    )
    .unwrap();
    assert_eq!(a.positions(2), Some(&[0u16, 1, 2, 0, 2, 2][..]));
    assert_eq!(a.coordinates(2), Some(&[1usize, 0, 0, 2][..]));
    assert_eq!(a.get([1, 0, 2]), Some(&4.0));
    assert_eq!(a.get([1, 1, 0]), None);
    let err = BatchCsr::<f64>::from_coo(
        [2, 2, 3],
        [([0, 0, 1], 1.0), ([1, 0, 0], 3.0), ([1, 0, 2], 4.0)],
    )
    .unwrap_err();
    assert_eq!(
        err,
        StorageError::BatchNse {
            level: 2,
            batch: 1,
            expected: 1,
            got: 2
        }
    );
}

#[test]
fn loose_compressed_from_raw_parts_with_gaps() {
    // 3 rows; segments out of order with free room: row 0 at 5..7, row 1 empty, row 2 at 0..2
    let parts = LooseCsrParts::<f64> {
        dim_shape: [3, 4],
        pos_1: vec![5, 7, 3, 3, 0, 2],
        crd_1: vec![0, 3, 9, 9, 9, 1, 2],
        values: vec![1.0, 2.0, -1.0, -1.0, -1.0, 3.0, 4.0],
    };
    // the filler coordinates (9) are out of range but sit outside every segment
    let a = LooseCsr::<f64>::from_raw_parts(parts).unwrap();
    let entries: Vec<([usize; 2], f64)> = a.iter().map(|(c, v)| (c, *v)).collect();
    assert_eq!(
        entries,
        vec![([0, 1], 3.0), ([0, 2], 4.0), ([2, 0], 1.0), ([2, 3], 2.0)]
    );
    assert_eq!(a.get([2, 3]), Some(&2.0));
    let mut y = [0.0; 3];
    a.spmv(&[1.0, 1.0, 1.0, 1.0], &mut y).unwrap();
    assert_eq!(y, [7.0, 0.0, 3.0]);
    assert_eq!(
        a.to_dense().unwrap(),
        vec![0.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 2.0]
    );
}

#[test]
fn raw_parts_are_validated() {
    use sparse::runtime::StorageError;
    let a = Csr::<f64>::from_coo([3, 4], [([0, 1], 1.0), ([0, 3], 2.0), ([2, 0], 3.0)]).unwrap();
    let mut parts = a.clone().into_raw_parts();
    assert_eq!(parts.pos_1, vec![0u32, 2, 2, 3]);
    assert_eq!(Csr::<f64>::from_raw_parts(parts.clone()).unwrap(), a);
    parts.crd_1 = vec![3, 1, 0];
    match Csr::<f64>::from_raw_parts(parts.clone()).unwrap_err() {
        StorageError::Invariant {
            level: 1,
            position: 1,
            ..
        } => {}
        e => panic!("unexpected {e:?}"),
    }
    parts.crd_1 = vec![1, 4, 0];
    match Csr::<f64>::from_raw_parts(parts.clone()).unwrap_err() {
        StorageError::Invariant {
            level: 1,
            position: 1,
            ..
        } => {}
        e => panic!("unexpected {e:?}"),
    }
    parts.crd_1 = vec![1, 3, 0];
    parts.pos_1 = vec![0, 2, 1, 3];
    assert!(matches!(
        Csr::<f64>::from_raw_parts(parts.clone()).unwrap_err(),
        StorageError::Invariant { level: 1, .. }
    ));
    parts.pos_1 = vec![0, 2, 2, 3];
    parts.values.pop();
    assert!(matches!(
        Csr::<f64>::from_raw_parts(parts).unwrap_err(),
        StorageError::Invariant { .. }
    ));
}

#[test]
fn n_out_of_m_rejects_a_full_block() {
    use sparse::runtime::StorageError;
    let err =
        Nv24::<f64>::from_coo([2, 8], [([1, 4], 1.0), ([1, 5], 1.0), ([1, 7], 1.0)]).unwrap_err();
    assert_eq!(
        err,
        StorageError::NOutOfMOverflow {
            level: 2,
            row: 1,
            block: 1,
            count: 3,
            n: 2,
            m: 4
        }
    );
    // padding: one entry at in-block 2 -> stored (0: zero pad, 2: value)
    let a = Nv24::<f64>::from_coo([1, 4], [([0, 2], 5.0)]).unwrap();
    assert_eq!(a.values(), &[0.0, 5.0]);
    assert_eq!(a.to_string().lines().nth(4), Some("crd[2] : ( 0, 2 )"));
    assert_eq!(a.coordinates(2), None);
    assert_eq!(a.get([0, 2]), Some(&5.0));
    assert_eq!(a.memory_bytes(), 1 + 2 * 8);
}

#[test]
fn narrow_widths_overflow_with_level_and_value() {
    use sparse::runtime::{BufferKind, StorageError};
    // 300 entries in one row: positions under posWidth = 8 overflow at level 0 of the vector.
    let entries: Vec<([usize; 1], f64)> = (0..300).map(|i| ([i], 1.0)).collect();
    let err = SparseVector::<f64>::from_coo([300], entries).unwrap_err();
    assert_eq!(
        err,
        StorageError::WidthOverflow {
            level: 0,
            kind: BufferKind::Coordinate,
            value: 256,
            width: 8
        }
    );
    let entries: Vec<([usize; 1], f64)> = (0..256).map(|i| ([i], 1.0)).collect();
    let err = SparseVector::<f64>::from_coo([300], entries).unwrap_err();
    assert_eq!(
        err,
        StorageError::WidthOverflow {
            level: 0,
            kind: BufferKind::Position,
            value: 256,
            width: 8
        }
    );
    assert_eq!(
        err.to_string(),
        "level 0: position 256 does not fit in 8 bits"
    );
}

#[test]
fn constructors_reject_bad_input() {
    use sparse::runtime::StorageError;
    // a dense level over a huge shape: a clear error, no abort (generated and dynamic alike)
    let huge = [usize::MAX / 2, 4];
    assert!(matches!(
        Csr::<f64>::from_coo(huge, []).unwrap_err(),
        StorageError::ShapeOverflow { .. }
    ));
    assert!(matches!(
        DenseMat::<f64>::from_coo([1 << 40, 1 << 30], []).unwrap_err(),
        StorageError::ShapeOverflow { .. }
    ));
    let d = DynamicStorage::<f64>::from_coo(
        &Csr::<f64>::encoding().verify().unwrap(),
        &CooTensor::new(huge.to_vec()),
    );
    assert!(matches!(d.unwrap_err(), StorageError::ShapeOverflow { .. }));
    let err = Csr::<f64>::from_coo([2, 3], [([0, 1], 1.0), ([2, 0], 1.0)]).unwrap_err();
    assert_eq!(
        err,
        StorageError::CoordinateOutOfRange {
            entry: 1,
            dim: 0,
            coordinate: 2,
            size: 2
        }
    );
    assert_eq!(
        err.to_string(),
        "entry 1: coordinate 2 of dimension 0 is out of range (size 2)"
    );
    let err = Csr::<f64>::from_dense([2, 2], &[1.0, 2.0, 3.0]).unwrap_err();
    assert_eq!(
        err,
        StorageError::LengthMismatch {
            operand: "dense input",
            expected: 4,
            got: 3
        }
    );
    let a = Csr::<f64>::from_coo([2, 3], [([0, 1], 1.0)]).unwrap();
    let err = a.spmv(&[1.0; 2], &mut [0.0; 2]).unwrap_err();
    assert_eq!(
        err,
        StorageError::LengthMismatch {
            operand: "x",
            expected: 3,
            got: 2
        }
    );
    let err = a.spmv_par(&[1.0; 3], &mut [0.0; 3]).unwrap_err();
    assert_eq!(
        err,
        StorageError::LengthMismatch {
            operand: "y",
            expected: 2,
            got: 3
        }
    );
    let mut coo = CooTensor::new(vec![2, 2, 2]);
    coo.push(&[0, 0, 0], 1.0);
    assert_eq!(
        Csr::<f64>::from_coo_tensor(&coo).unwrap_err(),
        StorageError::RankMismatch {
            expected: 2,
            got: 3
        }
    );
}

#[test]
fn exact_csr_arrays_and_accessors() {
    // 4 x 4, nonzeros a..f (values 1..6), as in the reference's CSR example.
    let a = Csr::<f64>::from_coo(
        [4, 4],
        [
            ([0, 0], 1.0),
            ([0, 2], 2.0),
            ([1, 1], 3.0),
            ([3, 0], 4.0),
            ([3, 2], 5.0),
            ([3, 3], 6.0),
        ],
    )
    .unwrap();
    assert_eq!(a.positions(1), Some(&[0u32, 2, 3, 3, 6][..]));
    assert_eq!(a.coordinates(1), Some(&[0u32, 2, 1, 0, 2, 3][..]));
    assert_eq!(a.positions(0), None);
    assert_eq!(a.values(), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(a.get([1, 1]), Some(&3.0));
    assert_eq!(a.get([2, 1]), None);
    assert_eq!(a.get([9, 1]), None);
    assert_eq!(a.nse(), 6);
    assert_eq!(a.shape(), [4, 4]);
    assert_eq!(a.memory_bytes(), 5 * 4 + 6 * 4 + 6 * 8);
    assert_eq!(Csr::<f64>::ENCODING, "#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed), posWidth = 32, crdWidth = 32 }>");
    assert_eq!(
        a.to_string(),
        "---- Sparse Tensor ----\nnse = 6\ndim = ( 4, 4 )\nlvl = ( 4, 4 )\npos[1] : ( 0, 2, 3, 3, 6 )\ncrd[1] : ( 0, 2, 1, 0, 2, 3 )\nvalues : ( 1, 2, 3, 4, 5, 6 )\n----\n"
    );
    let c = Coo::<f64>::from_coo([4, 4], a.iter().map(|(c, v)| (c, *v))).unwrap();
    assert_eq!(
        c.coordinates(0)
            .map(|b| b.iter().map(|x| x.index()).collect::<Vec<_>>()),
        Some(vec![0, 0, 0, 2, 1, 1, 3, 0, 3, 2, 3, 3])
    );
    assert_eq!(c.coordinates(1), None);
}

#[test]
fn spmv_par_splits_a_large_matrix_and_matches_spmv() {
    // past `PAR_MIN_ENTRIES` stored values per thread, so `spmv_par` hands ranges to rayon's threads (a
    // smaller matrix runs on the calling thread); each row is summed as `spmv` sums it
    let n = 600;
    let per_thread = sparse::runtime::generated::PAR_MIN_ENTRIES;
    let entries: Vec<([usize; 2], f64)> = (0..n * n)
        .filter(|k| k % 5 != 0)
        .map(|k| ([k / n, k % n], ((k * 7919) % 1000) as f64 / 128.0 - 3.5))
        .collect();
    assert!(entries.len() >= 2 * per_thread);
    let x: Vec<f64> = (0..n).map(|j| 1.0 + (j % 11) as f64 / 4.0).collect();
    let csr = Csr::<f64>::from_coo([n, n], entries.iter().cloned()).unwrap();
    let bsr = Bsr22::<f64>::from_coo([n, n], entries.iter().cloned()).unwrap();
    let mut want = vec![0.0; n];
    csr.spmv(&x, &mut want).unwrap();
    for (i, w) in want.iter().enumerate().step_by(97) {
        let row: f64 = entries
            .iter()
            .filter(|(c, _)| c[0] == i)
            .map(|(c, v)| v * x[c[1]])
            .sum();
        assert!((row - w).abs() <= 1e-9 * row.abs().max(1.0), "row {i}");
    }
    let mut y = vec![f64::NAN; n];
    csr.spmv_par(&x, &mut y).unwrap();
    assert_eq!(y, want);
    let mut yb = vec![f64::NAN; n];
    bsr.spmv(&x, &mut yb).unwrap();
    let mut yp = vec![f64::NAN; n];
    bsr.spmv_par(&x, &mut yp).unwrap();
    assert_eq!(yp, yb);
    // loose CSR splits its rows too (by its stored values: its positions are pairs)
    let loose = LooseCsr::<f64>::from_coo([n, n], entries.iter().cloned()).unwrap();
    let mut yl = vec![f64::NAN; n];
    loose.spmv_par(&x, &mut yl).unwrap();
    assert_eq!(yl, want);
    // all-dense: every element a stored value
    let dense = DenseMat::<f64>::from_coo([n, n], entries.iter().cloned()).unwrap();
    let (mut yd, mut ydp) = (vec![f64::NAN; n], vec![f64::NAN; n]);
    dense.spmv(&x, &mut yd).unwrap();
    dense.spmv_par(&x, &mut ydp).unwrap();
    assert_eq!(ydp, yd);
    // 2:4: two stored values in every group of four columns (no segment bounds: balanced by
    // rows, counted by values)
    let nm: Vec<([usize; 2], f64)> = entries
        .iter()
        .filter(|(c, _)| c[1] % 4 == (c[0] % 3) || c[1] % 4 == 3)
        .cloned()
        .collect();
    assert!(nm.len() >= 2 * per_thread);
    let nv = Nv24::<f64>::from_coo([n, n], nm.iter().cloned()).unwrap();
    let csr_nm = Csr::<f64>::from_coo([n, n], nm.iter().cloned()).unwrap();
    let (mut yn, mut ynp) = (vec![f64::NAN; n], vec![f64::NAN; n]);
    csr_nm.spmv(&x, &mut yn).unwrap();
    nv.spmv_par(&x, &mut ynp).unwrap();
    for (i, (a, b)) in yn.iter().zip(&ynp).enumerate() {
        assert!(
            (a - b).abs() <= 1e-9 * a.abs().max(1.0),
            "2:4 row {i}: {a} vs {b}"
        );
    }
    let mut yns = vec![f64::NAN; n];
    nv.spmv(&x, &mut yns).unwrap();
    assert_eq!(ynp, yns);
    // y = Aᵀ·x: CSC's and BSC's columns split over the threads, each summed as the serial
    // kernel sums it; CSR scatters into `y` and runs the serial kernel
    let csc = Csc32::<f64>::from_coo([n, n], entries.iter().cloned()).unwrap();
    let bsc = Bsc23::<f64>::from_coo([n, n], entries.iter().cloned()).unwrap();
    let mut want_t = vec![f64::NAN; n];
    csc.spmv_transpose(&x, &mut want_t).unwrap();
    for (j, w) in want_t.iter().enumerate().step_by(89) {
        let column: f64 = entries
            .iter()
            .filter(|(c, _)| c[1] == j)
            .map(|(c, v)| v * x[c[0]])
            .sum();
        assert!(
            (column - w).abs() <= 1e-9 * column.abs().max(1.0),
            "column {j}"
        );
    }
    let mut yt = vec![f64::NAN; n];
    csc.spmv_transpose_par(&x, &mut yt).unwrap();
    assert_eq!(yt, want_t);
    let (mut ybs, mut ybp) = (vec![f64::NAN; n], vec![f64::NAN; n]);
    bsc.spmv_transpose(&x, &mut ybs).unwrap();
    bsc.spmv_transpose_par(&x, &mut ybp).unwrap();
    assert_eq!(ybp, ybs);
    let (mut ycs, mut ycp) = (vec![f64::NAN; n], vec![f64::NAN; n]);
    csr.spmv_transpose(&x, &mut ycs).unwrap();
    csr.spmv_transpose_par(&x, &mut ycp).unwrap();
    assert_eq!(ycp, ycs);
    let err = csc.spmv_transpose_par(&x[1..], &mut yt).unwrap_err();
    assert!(
        matches!(
            err,
            sparse::runtime::StorageError::LengthMismatch {
                operand: "x",
                expected: 600,
                got: 599
            }
        ),
        "{err}"
    );
    // C = A·B with B dense (n x 3): CSR's rows and BSR's block rows split over the threads when
    // C is row-major, each row summed as `spmm` sums it; column-major C runs the serial kernel
    use sparse::runtime::generated::DenseOrder;
    let k = 3;
    let b: Vec<f64> = (0..n * k).map(|f| 0.5 + (f % 13) as f64 / 8.0).collect();
    let col_blocks = BsrColBlocks::<f64>::from_coo([n, n], entries.iter().cloned()).unwrap();
    for order in [DenseOrder::RowMajor, DenseOrder::ColMajor] {
        let (mut c, mut cp) = (vec![f64::NAN; n * k], vec![f64::NAN; n * k]);
        csr.spmm(&b, &mut c, k, order).unwrap();
        csr.spmm_par(&b, &mut cp, k, order).unwrap();
        assert_eq!(cp, c, "{order:?}");
        let (mut cb, mut cbp) = (vec![f64::NAN; n * k], vec![f64::NAN; n * k]);
        bsr.spmm(&b, &mut cb, k, order).unwrap();
        bsr.spmm_par(&b, &mut cbp, k, order).unwrap();
        assert_eq!(cbp, cb, "BSR {order:?}");
        // blocks of 2 x 3 stored column by column: ranges of whole block rows (2 rows of C)
        let (mut cc, mut ccp) = (vec![f64::NAN; n * k], vec![f64::NAN; n * k]);
        col_blocks.spmm(&b, &mut cc, k, order).unwrap();
        col_blocks.spmm_par(&b, &mut ccp, k, order).unwrap();
        assert_eq!(ccp, cc, "BSR 2x3, column-major blocks, {order:?}");
        assert_eq!(cc, c, "BSR 2x3 against CSR, {order:?}");
    }
    let mut c = vec![f64::NAN; n * k];
    csr.spmm(&b, &mut c, k, DenseOrder::RowMajor).unwrap();
    let row: f64 = entries
        .iter()
        .filter(|(at, _)| at[0] == 7)
        .map(|(at, v)| v * b[at[1] * k + 2])
        .sum();
    assert!((row - c[7 * k + 2]).abs() <= 1e-9 * row.abs().max(1.0));
    let err = csr
        .spmm_par(&b, &mut c[1..], k, DenseOrder::RowMajor)
        .unwrap_err();
    assert!(
        matches!(
            err,
            sparse::runtime::StorageError::LengthMismatch { operand: "c", .. }
        ),
        "{err}"
    );
    // called from rayon's own threads (nested parallelism), the ranges still all run
    let (mut y1, mut y2) = (vec![f64::NAN; n], vec![f64::NAN; n]);
    sparse::runtime::rayon::join(
        || csr.spmv_par(&x, &mut y1).unwrap(),
        || bsr.spmv_par(&x, &mut y2).unwrap(),
    );
    assert_eq!(y1, want);
    assert_eq!(y2, yb);
}
