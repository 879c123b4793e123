//! The counting-sort assembly of generated formats (`from_coo`, issue 12) against simple
//! references on shuffled entries with many duplicates and values whose sums depend on the
//! order of the additions: CSR against a reference built with the standard library's stable
//! sort, and CSR, CSC, DCSR, COO, BSR (both block orders, several widths) against the dynamic
//! storage's sorting assembly, arrays equal and values equal bit for bit. Errors (coordinate
//! out of range, width overflow) are the dynamic storage's.

use proptest::prelude::*;
use sparse::runtime::{CooTensor, DynamicStorage, SparseStorage};

sparse::sparse_format! {
    Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    CsrNative = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    CsrNarrow = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 8, crdWidth = 8 }>;
    CsrNonunique = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed(nonunique)), posWidth = 32, crdWidth = 16 }>;
    Csc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 16, crdWidth = 16 }>;
    Dcsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed), crdWidth = 32 }>;
    Coo = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>;
    Bsr23 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense), posWidth = 32, crdWidth = 32 }>;
    Bsc23 = #sparse_tensor.encoding<{ map = (i, j) -> (j floordiv 3 : dense, i floordiv 2 : compressed, j mod 3 : dense, i mod 2 : dense), posWidth = 64, crdWidth = 16 }>;
}

/// Per level: (positions, owned coordinate buffer), widened.
type LevelArrays = Vec<(Option<Vec<usize>>, Option<Vec<usize>>)>;

fn arrays<S: SparseStorage>(s: &S) -> LevelArrays {
    (0..s.lvl_types().len())
        .map(|l| {
            (
                s.position_buffer(l).map(|b| b.to_vec()),
                s.coordinate_buffer(l).map(|b| b.to_vec()),
            )
        })
        .collect()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// CSR arrays `(pos, crd, values)` by the standard library's stable sort on `(i, j)`, duplicates
/// summed in input order (the first assigned, the next added).
fn reference_csr(rows: usize, entries: &[([usize; 2], f64)]) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
    let mut sorted = entries.to_vec();
    sorted.sort_by_key(|e| e.0);
    let mut pos = vec![0; rows + 1];
    let (mut crd, mut vals): (Vec<usize>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut prev = None;
    for ([i, j], v) in sorted {
        if prev == Some([i, j]) {
            *vals.last_mut().unwrap() += v;
        } else {
            crd.push(j);
            vals.push(v);
            pos[i + 1] += 1;
            prev = Some([i, j]);
        }
    }
    for r in 0..rows {
        pos[r + 1] += pos[r];
    }
    (pos, crd, vals)
}

/// Shape `[6a, 6b]` (so every block size divides it) and entries drawn from a few coordinates
/// (many duplicates), values of mixed magnitudes (sums depend on their order), shuffled.
fn shuffled() -> impl Strategy<Value = ([usize; 2], Vec<([usize; 2], f64)>)> {
    (1usize..8, 1usize..8, 1usize..40)
        .prop_flat_map(|(a, b, distinct)| {
            let (m, n) = (6 * a, 6 * b);
            let value = prop_oneof![-1e6f64..1e6, -1e-9f64..1e-9, Just(-0.0), Just(0.0)];
            let coords = proptest::collection::vec((0..m, 0..n), distinct);
            (Just([m, n]), coords).prop_flat_map(move |(shape, coords)| {
                let k = coords.len();
                let entry = (0..k, value.clone());
                (
                    Just(shape),
                    proptest::collection::vec(entry, 0..300).prop_map(move |es| {
                        es.into_iter()
                            .map(|(c, v)| ([coords[c].0, coords[c].1], v))
                            .collect::<Vec<_>>()
                    }),
                )
            })
        })
        .prop_flat_map(|(shape, entries)| (Just(shape), Just(entries).prop_shuffle()))
}

macro_rules! same_as_dynamic {
    ($ty:ident, $shape:expr, $entries:expr) => {{
        let (shape, entries) = ($shape, $entries);
        let mut coo = CooTensor::new(shape.to_vec());
        for (c, v) in entries.iter() {
            coo.push(&c[..], *v);
        }
        let enc = $ty::<f64>::encoding().verify().unwrap();
        let want = DynamicStorage::from_coo(&enc, &coo);
        let got = $ty::<f64>::from_coo(shape, entries.iter().copied());
        match (got, want) {
            (Ok(g), Ok(d)) => {
                prop_assert_eq!(arrays(&g), arrays(&d), "{} arrays", stringify!($ty));
                prop_assert_eq!(
                    bits(g.values()),
                    bits(d.values()),
                    "{} values",
                    stringify!($ty)
                );
                g.validate().unwrap();
            }
            (Err(g), Err(d)) => prop_assert_eq!(g, d, "{} error", stringify!($ty)),
            (g, d) => prop_assert!(false, "{}: {:?} vs {:?}", stringify!($ty), g.err(), d.err()),
        }
    }};
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn csr_matches_std_sort((shape, entries) in shuffled()) {
        let (pos, crd, vals) = reference_csr(shape[0], &entries);
        let g = Csr::<f64>::from_coo(shape, entries.iter().copied()).unwrap();
        let a = arrays(&g);
        prop_assert_eq!(a[1].0.as_ref(), Some(&pos));
        prop_assert_eq!(a[1].1.as_ref(), Some(&crd));
        prop_assert_eq!(bits(g.values()), bits(&vals));
    }

    #[test]
    fn formats_match_dynamic((shape, entries) in shuffled()) {
        same_as_dynamic!(Csr, shape, &entries);
        same_as_dynamic!(CsrNative, shape, &entries);
        same_as_dynamic!(CsrNarrow, shape, &entries);
        same_as_dynamic!(CsrNonunique, shape, &entries);
        same_as_dynamic!(Csc, shape, &entries);
        same_as_dynamic!(Dcsr, shape, &entries);
        same_as_dynamic!(Coo, shape, &entries);
        same_as_dynamic!(Bsr23, shape, &entries);
        same_as_dynamic!(Bsc23, shape, &entries);
    }

    #[test]
    fn wide_matrices_overflow_as_dynamic(
        n in 200usize..400,
        js in proptest::collection::vec((0usize..4, 0usize..400), 1..600),
    ) {
        // columns past 255 overflow crdWidth = 8, more than 255 entries posWidth = 8
        let entries: Vec<([usize; 2], f64)> =
            js.iter().map(|&(i, j)| ([i, j % n], 1.5)).collect();
        same_as_dynamic!(CsrNarrow, [4, n], &entries);
    }
}

#[test]
fn out_of_range_names_the_first_bad_entry() {
    let entries = [([0, 0], 1.0), ([1, 7], 2.0), ([9, 0], 3.0)];
    let err = Csr::<f64>::from_coo([6, 6], entries.iter().copied()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "entry 1: coordinate 7 of dimension 1 is out of range (size 6)"
    );
}

#[test]
fn empty_and_one_row() {
    let e: Vec<([usize; 2], f64)> = Vec::new();
    let g = Csr::<f64>::from_coo([3, 4], e.iter().copied()).unwrap();
    assert_eq!(arrays(&g)[1].0.as_ref(), Some(&vec![0, 0, 0, 0]));
    let b = Bsr23::<f64>::from_coo([6, 6], e.iter().copied()).unwrap();
    assert!(b.values().is_empty());
}

/// 1,100,000 shuffled entries (past the coarse path's 2^20) on 20 distinct columns per row
/// (duplicates summed in input order), `m x n`, from a fixed-seed generator.
fn large(m: usize, n: usize) -> Vec<([usize; 2], f64)> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    (0..1_100_000)
        .map(|_| {
            let i = (next() % m as u64) as usize;
            let j = (next() % 20) as usize * (n / 20) + i % (n / 20);
            let v = (next() % 2001) as f64 * 1e-3 - 1.0 + [0.0, 1e9, -1e-9][i % 3];
            ([i, j], v)
        })
        .collect()
}

/// The coarse path of the counting sort (entries read into groups of rows, each group put in
/// order within the caches): CSR (radix keys of 23 bits) against the standard library's
/// stable sort, BSR against the entries summed densely in input order, and keys past 32 bits
/// (2^26 columns: the scatter and per-row sort) against the stable sort. The unit tests of
/// `bucket.rs` compare the coarse path with the one-pass counting sort on random input.
#[test]
fn coarse_groups_assemble_large_inputs_like_the_sorting_assembly() -> Result<(), TestCaseError> {
    for n in [6000, 1 << 26] {
        let entries = large(600, n);
        let (pos, crd, vals) = reference_csr(600, &entries);
        let g = Csr::<f64>::from_coo([600, n], entries.iter().copied()).unwrap();
        prop_assert_eq!(g.position_buffer(1).unwrap().to_vec(), pos);
        prop_assert_eq!(g.coordinate_buffer(1).unwrap().to_vec(), crd);
        prop_assert_eq!(bits(g.values()), bits(&vals));
    }
    // BSR: every element of its blocks against the entries summed in input order
    let entries = large(600, 6000);
    let mut want = vec![0.0f64; 600 * 6000];
    for ([i, j], v) in &entries {
        want[i * 6000 + j] += v;
    }
    let b = Bsr23::<f64>::from_coo([600, 6000], entries.iter().copied()).unwrap();
    b.validate().unwrap();
    prop_assert_eq!(b.to_dense().unwrap(), want);
    Ok(())
}
