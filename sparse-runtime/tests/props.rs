//! Property tests of the dynamic storage over every family: random COO -> storage -> to_dense,
//! to_coo, iter, get and raw-parts round trips; conversion round trips between encodings.

use proptest::prelude::*;
use sparse_runtime::{CooTensor, DynamicStorage, StorageError};

fn enc(text: &str) -> sparse_dsl::ir::VerifiedEncoding {
    sparse_dsl::parse::parse_encoding(text)
        .unwrap_or_else(|e| panic!("{e:?}"))
        .encoding
}

/// Matrix encodings (shapes are multiples of 4 so every block divides).
const MATRIX: &[&str] = &[
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 16, crdWidth = 8 }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(nonunique)) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed(nonordered)) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (j floordiv 4 : dense, i floordiv 2 : compressed, j mod 4 : dense, i mod 2 : dense) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 2 }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[4, 4]) }>",
    "#sparse_tensor.encoding<{ map = [c](i, j) -> (c * 8 * i : dense, i : dense, j : compressed) }>",
];

/// A random matrix (shape multiple of 4, up to 8 x 8) with duplicates; at most 2 entries per
/// 1x4 block and per row 8 (so n:m and ELL targets can hold it).
fn matrix() -> impl Strategy<Value = CooTensor<f64>> {
    (1usize..3, 1usize..3).prop_flat_map(|(m, n)| {
        let (rows, cols) = (4 * m, 4 * n);
        proptest::collection::vec(((0..rows, 0..cols), -4i32..5), 0..20).prop_map(move |es| {
            let mut t = CooTensor::new(vec![rows, cols]);
            let mut per_block = std::collections::HashMap::new();
            for ((i, j), v) in es {
                let blk = per_block.entry((i, j / 4)).or_insert_with(Vec::new);
                if !blk.contains(&j) {
                    if blk.len() == 2 {
                        continue;
                    }
                    blk.push(j);
                }
                t.push(&[i, j], v as f64);
            }
            t
        })
    })
}

fn dense(t: &CooTensor<f64>) -> Vec<f64> {
    let mut d = vec![0.0; t.shape.iter().product()];
    for (c, v) in t.iter() {
        let flat = c.iter().zip(&t.shape).fold(0, |a, (c, s)| a * s + c);
        d[flat] += v;
    }
    d
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_family_round_trips(t in matrix()) {
        let want = dense(&t);
        for text in MATRIX {
            let e = enc(text);
            let s = match DynamicStorage::from_coo(&e, &t) {
                Ok(s) => s,
                // duplicates may make a row overflow 8 ELL slices only with nonunique, not here
                Err(err) => { prop_assert!(false, "{text}: {err}"); unreachable!() }
            };
            s.validate().unwrap();
            prop_assert_eq!(&s.to_dense().unwrap(), &want, "{}", text);
            prop_assert_eq!(&dense(&s.to_coo()), &want, "{} to_coo", text);
            let unique = e.lvl_types.last().unwrap().is_unique();
            for (c, v) in t.iter() {
                let flat = c[0] * t.shape[1] + c[1];
                let got = s.get(c).copied();
                prop_assert!(got.is_some(), "{} get({:?})", text, c);
                if unique { prop_assert_eq!(got, Some(want[flat]), "{} get", text); } else { let _ = v; }
            }
            let x: Vec<f64> = (0..t.shape[1]).map(|k| k as f64 + 1.0).collect();
            let mut y = vec![0.0; t.shape[0]];
            s.spmv(&x, &mut y).unwrap();
            let mut yd = vec![0.0; t.shape[0]];
            for i in 0..t.shape[0] { for j in 0..t.shape[1] { yd[i] += want[i * t.shape[1] + j] * x[j]; } }
            prop_assert_eq!(y, yd);
            let p = s.clone().into_raw_parts();
            let back = DynamicStorage::from_raw_parts(&p.encoding, &p.dim_shape, p.positions, p.coordinates, p.values).unwrap();
            prop_assert_eq!(&back, &s);
        }
    }

    #[test]
    fn conversions_round_trip(t in matrix(), a in 0..MATRIX.len(), b in 0..MATRIX.len()) {
        let (ea, eb) = (enc(MATRIX[a]), enc(MATRIX[b]));
        let s = DynamicStorage::from_coo(&ea, &t).unwrap();
        let c = s.convert(&eb).unwrap();
        c.validate().unwrap();
        prop_assert_eq!(c.to_dense().unwrap(), s.to_dense().unwrap());
        let back = c.convert(&ea).unwrap();
        prop_assert_eq!(back.to_dense().unwrap(), s.to_dense().unwrap());
        // CSR -> any -> CSR gives the CSR of the tensor's nonzeros, array for array
        if a == 0 {
            let csr = DynamicStorage::from_dense(&ea, &t.shape, &dense(&t)).unwrap();
            prop_assert_eq!(s.convert(&eb).unwrap().convert(&ea).unwrap(), csr);
        }
    }

    #[test]
    fn batched_csr_round_trips(nb in 1usize..4, rows in 1usize..4, cols in 1usize..5, pattern in proptest::collection::vec(any::<bool>(), 0..60)) {
        // every batch gets the same number of entries (a shifted pattern), so nse agrees
        let e = enc("#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : compressed), posWidth = 8 }>");
        let mut t = CooTensor::new(vec![nb, rows, cols]);
        let cells = rows * cols;
        let picked: Vec<usize> = (0..cells).filter(|&k| *pattern.get(k).unwrap_or(&false)).collect();
        for b in 0..nb {
            for &k in &picked {
                let k = (k + b) % cells;
                t.push(&[b, k / cols, k % cols], (b * 100 + k) as f64);
            }
        }
        let s = DynamicStorage::from_coo(&e, &t).unwrap();
        s.validate().unwrap();
        prop_assert_eq!(s.positions(2).unwrap().len(), nb * (rows + 1));
        prop_assert_eq!(s.to_dense().unwrap(), dense(&t));
        let p = s.clone().into_raw_parts();
        prop_assert_eq!(DynamicStorage::from_raw_parts(&p.encoding, &p.dim_shape, p.positions, p.coordinates, p.values).unwrap(), s);
        if !picked.is_empty() && nb > 1 {
            t.push(&[0, picked[0] / cols, picked[0] % cols], 1.0); // duplicate: merged, nse unchanged
            prop_assert!(DynamicStorage::from_coo(&e, &t).is_ok());
            let (i, j) = ((picked[0] + 1) % cells / cols, (picked[0] + 1) % cells % cols);
            let mut t2 = t.clone();
            t2.push(&[nb - 1, i, j], 1.0);
            if let Err(err) = DynamicStorage::from_coo(&e, &t2) {
                prop_assert!(matches!(err, StorageError::BatchNse { level: 2, .. }), "{}", err);
            }
        }
    }
}

proptest! {
    /// A workspace's touched coordinates come out of `Touched` sorted and exactly the set
    /// touched, row after row: short rows sorted, long rows (which mark the next row's bits)
    /// read from the bitmap when dense in their range or sorted when spread out, and every row
    /// of a workspace of at most 256 read from its bitmap.
    #[test]
    fn touched_gives_each_row_sorted(
        rows in proptest::collection::vec(
            (proptest::collection::btree_set(0usize..400, 0..120), any::<bool>()),
            1..6,
        ),
        tiny in any::<bool>(),
    ) {
        let size = if tiny { 200 } else { 400 * 100 };
        let mut touched = sparse_runtime::generated::Touched::new(size);
        for (set, spread) in rows {
            let scale = if spread && !tiny { 100 } else { 1 };
            let want: Vec<usize> = set.iter().map(|&j| j * scale).filter(|&j| j < size).collect();
            // a workspace touches in any order: interleave residues, each run increasing
            let mut order = want.clone();
            order.sort_by_key(|&j| (j % 7, j));
            for &j in &order {
                // SAFETY: below the size, each coordinate once per row
                unsafe { touched.push_unchecked(j) };
            }
            prop_assert_eq!(touched.is_empty(), want.is_empty());
            prop_assert_eq!(touched.take_sorted(), &want[..]);
            prop_assert!(touched.is_empty());
        }
    }
}
