//! Transpose as a view (issue 11): `DynamicStorage::transpose` turns the storage of `A` into
//! the storage of `Aᵀ` in the transposed encoding (CSR <-> CSC, BSR <-> BSC, DCSR <-> DCSC, COO
//! in column order, ELL by columns) by changing the encoding only: the arrays stay where they
//! are. Property: transposing then reading equals `Aᵀ`, and transposing commutes with
//! building the storage (from `A` then transposed = from `Aᵀ` in the transposed encoding).

use proptest::prelude::*;
use sparse::runtime::storage::SparseStorage;
use sparse::runtime::{CooTensor, DynamicStorage, StorageError};
use sparse_dsl::parse::parse_encoding;

const FORMATS: [&str; 7] = [
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 32, crdWidth = 16 }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>",
];

fn coo(shape: [usize; 2], entries: &[(usize, usize, f64)]) -> CooTensor<f64> {
    let mut t = CooTensor::new(shape.to_vec());
    for &(i, j, v) in entries {
        t.push(&[i, j], v);
    }
    t
}

/// Per level: its positions and its coordinates, where it stores them.
type LevelArrays = Vec<(Option<Vec<usize>>, Option<Vec<usize>>)>;

/// Every array of the storage: per level positions and coordinates, then the values.
fn arrays(s: &DynamicStorage<f64>) -> (LevelArrays, Vec<f64>) {
    let levels = (0..s.encoding().lvl_rank())
        .map(|l| {
            (
                s.position_buffer(l).map(|b| b.to_vec()),
                s.coordinate_buffer(l).map(|b| b.to_vec()),
            )
        })
        .collect();
    (levels, s.values().to_vec())
}

/// A random `rows x cols` matrix (even rows, columns a multiple of 6 so every block fits).
fn matrix() -> impl Strategy<Value = ([usize; 2], Vec<(usize, usize, f64)>)> {
    (1usize..4, 1usize..3).prop_flat_map(|(r, c)| {
        let shape = [2 * r, 6 * c];
        let cell = (0..shape[0], 0..shape[1], -8i32..8);
        (
            Just(shape),
            proptest::collection::vec(cell, 0..20).prop_map(|v| {
                v.into_iter()
                    .map(|(i, j, x)| (i, j, f64::from(x) + 0.5))
                    .collect()
            }),
        )
    })
}

proptest! {
    #[test]
    fn transpose_commutes_with_building((shape, entries) in matrix()) {
        let a = coo(shape, &entries);
        let t: Vec<(usize, usize, f64)> = entries.iter().map(|&(i, j, v)| (j, i, v)).collect();
        let at = coo([shape[1], shape[0]], &t);
        for text in FORMATS {
            let enc = parse_encoding(text).unwrap().encoding;
            let enc_t = enc.permute_dims(&[1, 0]).unwrap().verify().unwrap();
            let s = DynamicStorage::from_coo(&enc, &a).unwrap();
            let values = s.values().as_ptr();
            let viewed = s.transpose().unwrap();
            // the same value array, at the same address
            prop_assert_eq!(viewed.values().as_ptr(), values, "{}", text);
            prop_assert_eq!(viewed.shape(), &[shape[1], shape[0]][..]);
            prop_assert_eq!(viewed.encoding(), &enc_t, "{}", text);
            // reading the view gives Aᵀ
            let built = DynamicStorage::from_coo(&enc_t, &at).unwrap();
            prop_assert_eq!(viewed.to_dense().unwrap(), built.to_dense().unwrap(), "{}", text);
            // building from Aᵀ in the transposed encoding stores the same arrays
            prop_assert_eq!(arrays(&viewed), arrays(&built), "{}", text);
            // and transposing back is the original storage
            let back = viewed.transpose().unwrap();
            prop_assert_eq!(back, DynamicStorage::from_coo(&enc, &a).unwrap(), "{}", text);
        }
    }
}

#[test]
fn csr_of_a_is_csc_of_a_transposed_known_arrays() {
    // A = [[1, 0, 2], [0, 3, 0]]: CSR pos (0, 2, 3), crd (0, 2, 1), values (1, 2, 3)
    let csr = parse_encoding(FORMATS[0]).unwrap().encoding;
    let a = DynamicStorage::from_coo(&csr, &coo([2, 3], &[(0, 0, 1.0), (0, 2, 2.0), (1, 1, 3.0)]))
        .unwrap();
    let t = a.transpose().unwrap();
    assert_eq!(
        t.encoding().to_string(),
        "#sparse_tensor.encoding<{ map = (d0, d1) -> (d1 : dense, d0 : compressed) }>"
    );
    assert_eq!(t.shape(), &[3, 2]);
    assert_eq!(t.to_dense().unwrap(), [1.0, 0.0, 0.0, 3.0, 2.0, 0.0]);
    assert_eq!(t.position_buffer(1).unwrap().to_vec(), [0, 2, 3]);
    assert_eq!(t.coordinate_buffer(1).unwrap().to_vec(), [0, 2, 1]);
    assert_eq!(t.values(), [1.0, 2.0, 3.0]);
}

#[test]
fn a_permutation_must_name_every_dimension_once() {
    let csr = parse_encoding(FORMATS[0]).unwrap().encoding;
    let a = || DynamicStorage::<f64>::from_coo(&csr, &coo([2, 3], &[])).unwrap();
    assert!(matches!(
        a().permute_dims(&[0]),
        Err(StorageError::RankMismatch {
            expected: 2,
            got: 1
        })
    ));
    assert_eq!(
        a().permute_dims(&[1, 1]).unwrap_err().to_string(),
        "invalid encoding: [1, 1] is not a permutation of the 2 dimensions"
    );
    // ELL (a counting symbol over the rows) transposed: slots over the columns of Aᵀ
    let ell = parse_encoding(
        "#sparse_tensor.encoding<{ map = [c](i, j) -> (c * 2 * i : dense, i : dense, j : compressed) }>",
    )
    .unwrap()
    .encoding;
    let e = DynamicStorage::from_coo(&ell, &coo([2, 3], &[(0, 0, 1.0), (0, 2, 2.0), (1, 1, 3.0)]))
        .unwrap()
        .transpose()
        .unwrap();
    assert_eq!(e.to_dense().unwrap(), [1.0, 0.0, 0.0, 3.0, 2.0, 0.0]);
    // a 3-d tensor: CSF with its dimensions rotated
    let csf = parse_encoding(
        "#sparse_tensor.encoding<{ map = (i, j, k) -> (i : compressed, j : compressed, k : compressed) }>",
    )
    .unwrap()
    .encoding;
    let mut t = CooTensor::new(vec![2, 3, 4]);
    t.push(&[1, 2, 3], 5.0);
    let s = DynamicStorage::from_coo(&csf, &t)
        .unwrap()
        .permute_dims(&[2, 0, 1])
        .unwrap();
    assert_eq!(s.shape(), &[4, 2, 3]);
    assert_eq!(s.get(&[3, 1, 2]).unwrap(), &5.0);
}

sparse::sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16 }>;
    pub Csc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 32, crdWidth = 16 }>;
    pub Bsr = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense) }>;
    pub Bsc = #sparse_tensor.encoding<{ map = (i, j) -> (j floordiv 2 : dense, i floordiv 3 : compressed, j mod 2 : dense, i mod 3 : dense) }>;
}

proptest! {
    /// The generated `transpose` between declared formats: same arrays at the same addresses,
    /// read as `Aᵀ`, equal to building `Aᵀ` in the other format; and back.
    #[test]
    fn generated_transpose_is_a_view((shape, entries) in matrix()) {
        let t: Vec<([usize; 2], f64)> = entries.iter().map(|&(i, j, v)| ([j, i], v)).collect();
        let a: Vec<([usize; 2], f64)> = entries.iter().map(|&(i, j, v)| ([i, j], v)).collect();
        let ts = [shape[1], shape[0]];

        let parts = Csr::from_coo(shape, a.iter().copied()).unwrap().into_raw_parts();
        let ptrs = (parts.pos_1.as_ptr(), parts.crd_1.as_ptr(), parts.values.as_ptr());
        let csc: Csc<f64> = Csr::from_raw_parts(parts).unwrap().transpose();
        prop_assert_eq!(csc.shape(), ts);
        let built = Csc::from_coo(ts, t.iter().copied()).unwrap();
        prop_assert_eq!(csc.to_dense().unwrap(), built.to_dense().unwrap());
        let back = csc.clone().transpose().into_raw_parts();
        let parts = csc.into_raw_parts();
        // the same three arrays, at the same addresses
        prop_assert_eq!((parts.pos_1.as_ptr(), parts.crd_1.as_ptr(), parts.values.as_ptr()), ptrs);
        prop_assert_eq!(parts, built.into_raw_parts());
        prop_assert_eq!(back, Csr::from_coo(shape, a.iter().copied()).unwrap().into_raw_parts());

        // BSR with 2x3 blocks is BSC with 3x2 blocks of the transpose
        let bsr = Bsr::from_coo(shape, a.iter().copied()).unwrap();
        let values = bsr.values().as_ptr();
        let bsc: Bsc<f64> = bsr.transpose();
        prop_assert_eq!(bsc.values().as_ptr(), values);
        let built = Bsc::from_coo(ts, t.iter().copied()).unwrap();
        prop_assert_eq!(bsc.to_dense().unwrap(), built.to_dense().unwrap());
        prop_assert_eq!(bsc.into_raw_parts(), built.into_raw_parts());
    }
}
