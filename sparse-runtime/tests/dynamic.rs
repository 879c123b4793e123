//! Exact arrays of the dynamic storage on hand-checked examples.

use sparse_dsl::ir::{
    AffineExpr as E, AffineMap, Encoding, LevelFormat as F, LevelType, VerifiedEncoding,
};
use sparse_runtime::{BufferKind, CooTensor, DynamicStorage, StorageError};

fn lt(f: F) -> LevelType {
    LevelType::new(f)
}
fn nonunique(f: F) -> LevelType {
    let mut t = LevelType::new(f);
    t.properties.nonunique = true;
    t
}
fn perm(types: Vec<LevelType>, perm: &[usize], pos: u32, crd: u32) -> VerifiedEncoding {
    let n = perm.len();
    let mut inv = vec![E::Var(0); n];
    for (l, &d) in perm.iter().enumerate() {
        inv[d] = E::Var(l);
    }
    Encoding {
        lvl_types: types,
        dim_to_lvl: AffineMap {
            num_vars: n,
            num_symbols: 0,
            results: perm.iter().map(|&d| E::Var(d)).collect(),
        },
        lvl_to_dim: AffineMap {
            num_vars: n,
            num_symbols: 0,
            results: inv,
        },
        pos_width: pos,
        crd_width: crd,
        dim_slices: None,
        explicit_val: None,
        implicit_val: None,
    }
    .verify()
    .expect("a valid encoding")
}
fn bsr(b: i64) -> VerifiedEncoding {
    let c = |v| Box::new(E::Constant(v));
    let d = |v| Box::new(E::Var(v));
    Encoding {
        lvl_types: vec![lt(F::Dense), lt(F::Compressed), lt(F::Dense), lt(F::Dense)],
        dim_to_lvl: AffineMap {
            num_vars: 2,
            num_symbols: 0,
            results: vec![
                E::FloorDiv(d(0), c(b)),
                E::FloorDiv(d(1), c(b)),
                E::Mod(d(0), c(b)),
                E::Mod(d(1), c(b)),
            ],
        },
        lvl_to_dim: AffineMap {
            num_vars: 4,
            num_symbols: 0,
            results: vec![
                E::Add(Box::new(E::Mul(d(0), c(b))), d(2)),
                E::Add(Box::new(E::Mul(d(1), c(b))), d(3)),
            ],
        },
        pos_width: 0,
        crd_width: 0,
        dim_slices: None,
        explicit_val: None,
        implicit_val: None,
    }
    .verify()
    .expect("a valid encoding")
}
fn coo(shape: &[usize], entries: &[(usize, usize, f64)]) -> CooTensor<f64> {
    let mut t = CooTensor::new(shape.to_vec());
    for &(i, j, v) in entries {
        t.push(&[i, j], v);
    }
    t
}

#[test]
fn csr_with_empty_rows_and_duplicates() {
    let e = perm(vec![lt(F::Dense), lt(F::Compressed)], &[0, 1], 32, 32);
    let a = coo(
        &[4, 5],
        &[(2, 4, 1.0), (0, 1, 2.0), (2, 0, 3.0), (0, 1, 0.5)],
    );
    let s = DynamicStorage::from_coo(&e, &a).unwrap();
    assert_eq!(s.positions(1).unwrap().to_vec(), vec![0, 1, 1, 3, 3]);
    assert_eq!(s.coordinates(1).unwrap().to_vec(), vec![1, 0, 4]);
    assert_eq!(s.values(), &[2.5, 3.0, 1.0]);
    assert_eq!(s.get(&[2, 4]), Some(&1.0));
    assert_eq!(s.get(&[1, 4]), None);
    s.validate().unwrap();
    let mut y = vec![0.0; 4];
    s.spmv(&[1.0, 2.0, 3.0, 4.0, 5.0], &mut y).unwrap();
    assert_eq!(y, vec![5.0, 0.0, 8.0, 0.0]);
}

#[test]
fn bsr_seed_matches_reference_document() {
    // ../shared/reference/encoding.md, "BSR, 2x2 blocks, 4 x 6 matrix"
    let a = coo(
        &[4, 6],
        &[
            (0, 0, 1.),
            (0, 1, 2.),
            (0, 4, 4.),
            (1, 1, 3.),
            (1, 5, 5.),
            (2, 2, 6.),
            (2, 3, 7.),
            (3, 2, 8.),
        ],
    );
    let s = DynamicStorage::from_coo(&bsr(2), &a).unwrap();
    assert_eq!(s.positions(1).unwrap().to_vec(), vec![0, 2, 3]);
    assert_eq!(s.coordinates(1).unwrap().to_vec(), vec![0, 2, 1]);
    assert_eq!(
        s.values(),
        &[1., 2., 0., 3., 4., 0., 0., 5., 6., 7., 8., 0.]
    );
    assert_eq!(s.nse(), 12);
    let text = s.to_string();
    assert!(text.contains("lvl = ( 2, 3, 2, 2 )"), "{text}");
    let dense = s.to_dense().unwrap();
    assert_eq!(dense[4], 4.0);
    assert_eq!(dense[6 + 5], 5.0);
    s.validate().unwrap();
}

#[test]
fn coo_is_array_of_structs_unless_soa() {
    let mut types = vec![nonunique(F::Compressed), lt(F::Singleton)];
    let a = coo(&[3, 3], &[(2, 1, 1.), (0, 2, 2.), (0, 0, 3.)]);
    let s = DynamicStorage::from_coo(&perm(types.clone(), &[0, 1], 0, 0), &a).unwrap();
    assert_eq!(s.positions(0).unwrap().to_vec(), vec![0, 3]);
    assert_eq!(s.coordinates(0).unwrap().to_vec(), vec![0, 0, 0, 2, 2, 1]);
    assert!(s.coordinates(1).is_none());
    assert_eq!(s.values(), &[3., 2., 1.]);
    assert_eq!(s.get(&[0, 2]), Some(&2.0));
    s.validate().unwrap();
    types[1].properties.soa = true;
    let s = DynamicStorage::from_coo(&perm(types, &[0, 1], 0, 0), &a).unwrap();
    assert_eq!(s.coordinates(0).unwrap().to_vec(), vec![0, 0, 2]);
    assert_eq!(s.coordinates(1).unwrap().to_vec(), vec![0, 2, 1]);
    s.validate().unwrap();
}

#[test]
fn width_overflow_names_level_and_value() {
    let e = perm(vec![lt(F::Dense), lt(F::Compressed)], &[0, 1], 8, 8);
    let a = coo(
        &[1, 300],
        &(0..300).map(|j| (0, j, 1.0)).collect::<Vec<_>>(),
    );
    let err = DynamicStorage::from_coo(&e, &a).unwrap_err();
    assert_eq!(
        err,
        StorageError::WidthOverflow {
            level: 1,
            kind: BufferKind::Coordinate,
            value: 256,
            width: 8
        }
    );
    let e = perm(vec![lt(F::Dense), lt(F::Compressed)], &[0, 1], 8, 16);
    let err = DynamicStorage::from_coo(&e, &a).unwrap_err();
    assert_eq!(
        err,
        StorageError::WidthOverflow {
            level: 1,
            kind: BufferKind::Position,
            value: 300,
            width: 8
        }
    );
    assert_eq!(
        err.to_string(),
        "level 1: position 300 does not fit in 8 bits"
    );
}

#[test]
fn out_of_range_and_empty() {
    let e = perm(vec![lt(F::Compressed), lt(F::Compressed)], &[1, 0], 0, 0);
    let err = DynamicStorage::from_coo(&e, &coo(&[2, 2], &[(0, 2, 1.0)])).unwrap_err();
    assert_eq!(
        err,
        StorageError::CoordinateOutOfRange {
            entry: 0,
            dim: 1,
            coordinate: 2,
            size: 2
        }
    );
    let s = DynamicStorage::from_coo(&e, &coo(&[2, 2], &[])).unwrap();
    assert_eq!(s.positions(0).unwrap().to_vec(), vec![0, 0]);
    assert_eq!(s.positions(1).unwrap().to_vec(), vec![0]);
    assert_eq!(s.nse(), 0);
    s.validate().unwrap();
}

/// Batched positions are rebased in place (no second buffer): a compressed level's
/// `B * P + 1` global positions become `B * (P + 1)` batch-local ones, a loose level's pairs keep
/// their length; batches of different nse are `BatchNse`.
#[test]
fn rebase_batches_in_place_exact() {
    use sparse_runtime::dynamic::{rebase_batches, rebase_batches_in_place};
    // 3 batches of 2 parents: segments (1, 2 | 2, 1 | 0, 3)
    let mut pos = vec![0, 1, 3, 5, 6, 6, 9];
    rebase_batches_in_place(1, F::Compressed, &mut pos, 3).unwrap();
    assert_eq!(pos, vec![0, 1, 3, 0, 2, 3, 0, 0, 3]);
    let mut loose = vec![0, 2, 2, 3, 3, 3, 3, 6];
    rebase_batches_in_place(1, F::LooseCompressed, &mut loose, 2).unwrap();
    assert_eq!(loose, vec![0, 2, 2, 3, 0, 0, 0, 3]);
    let mut bad = vec![0, 1, 3, 4, 5];
    assert_eq!(
        rebase_batches_in_place(2, F::Compressed, &mut bad, 2).unwrap_err(),
        StorageError::BatchNse {
            level: 2,
            batch: 1,
            expected: 3,
            got: 2
        }
    );
    assert_eq!(
        rebase_batches(1, F::Compressed, &[0, 1, 3, 5, 6, 6, 9], 3).unwrap(),
        vec![0, 1, 3, 0, 2, 3, 0, 0, 3]
    );
    let mut none = vec![0];
    rebase_batches_in_place(1, F::Compressed, &mut none, 0).unwrap();
    assert!(none.is_empty());
}

/// Narrowing native numbers to a width reuses the allocation and names the first number that
/// does not fit.
#[test]
fn index_buffer_from_native() {
    use sparse_runtime::IndexBuffer;
    let v = vec![0usize, 7, 255];
    assert_eq!(
        IndexBuffer::from_native(8, v.clone()),
        Some(Ok(IndexBuffer::U8(vec![0, 7, 255])))
    );
    assert_eq!(
        IndexBuffer::from_native(8, vec![1, 300, 400]),
        Some(Err(300))
    );
    assert_eq!(
        IndexBuffer::from_native(0, v.clone()),
        Some(Ok(IndexBuffer::Native(v.clone())))
    );
    assert_eq!(IndexBuffer::from_native(12, v), None);
    let wide = IndexBuffer::from_native(64, vec![5; 1000])
        .unwrap()
        .unwrap();
    assert_eq!((wide.len(), wide.capacity()), (1000, 1000));
}

/// An encoding built in code that breaks a rule gets from `Encoding::verify` (the only way to the
/// `VerifiedEncoding` every storage constructor takes) the messages the parser gives for the
/// same text.
#[test]
fn encoding_built_in_code_is_verified_like_text() {
    let text = "#sparse_tensor.encoding<{ map = (i, j) -> (i : singleton, j : compressed), posWidth = 7 }>";
    let parsed: Vec<String> = sparse_dsl::parse::parse_encoding(text)
        .expect_err("the text breaks two rules")
        .iter()
        .map(|d| d.message.clone())
        .collect();
    let enc = Encoding {
        lvl_types: vec![LevelType::new(F::Singleton), LevelType::new(F::Compressed)],
        dim_to_lvl: AffineMap::identity(2),
        lvl_to_dim: AffineMap::identity(2),
        pos_width: 7,
        crd_width: 0,
        dim_slices: None,
        explicit_val: None,
        implicit_val: None,
    };
    // the only way to the storage is a verified encoding: `verify` gives the parser's messages
    let errors = enc.verify().expect_err("invalid encoding");
    let messages: Vec<String> = errors.iter().map(|e| e.message.clone()).collect();
    assert_eq!(messages, parsed);
    assert_eq!(
        parsed,
        [
            "unexpected position bitwidth: 7",
            "expected compressed or loose_compressed level before singleton level",
        ]
    );
}
