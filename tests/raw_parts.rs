//! Generated `from_raw_parts` on hostile arrays, against `DynamicStorage::from_raw_parts`: huge
//! shapes (every size computation of validation is checked), and the level properties of
//! singleton levels and ELL slices.

use sparse::runtime::{CrdBuffer, DynamicStorage, IndexBuffer, PackedBuffer, StorageError};

sparse::sparse_format! {
    Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    DenseMat = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>;
    Bsr22 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>;
    LooseCsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>;
    Nv24 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 2 }>;
    Ell = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 3 * i : dense, i : dense, j : compressed) }>;
    BatchCsr = #sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : compressed), posWidth = 16 }>;
    Batch2Csr = #sparse_tensor.encoding<{ map = (a, b, i, j) -> (a : batch, b : batch, i : dense, j : compressed) }>;
}

const MAX: usize = usize::MAX;

/// `Invariant { level, "array lengths fit usize", position, detail }`.
fn overflow(level: usize, position: usize, detail: &str) -> StorageError {
    StorageError::Invariant {
        level,
        invariant: "array lengths fit usize",
        position,
        detail: detail.into(),
    }
}

/// The invariant name and level of an `Invariant` error.
fn invariant(e: StorageError) -> (usize, &'static str, usize) {
    match e {
        StorageError::Invariant {
            level,
            invariant,
            position,
            ..
        } => (level, invariant, position),
        other => panic!("expected an invariant, got {other:?}"),
    }
}

/// Empty arrays of the right kinds for `T`'s encoding on `shape`, through the dynamic storage.
fn dynamic_empty(enc: sparse::dsl::ir::Encoding, shape: &[usize]) -> StorageError {
    let positions = (0..enc.lvl_rank())
        .map(|l| {
            enc.lvl_types[l]
                .has_positions()
                .then(|| IndexBuffer::new(enc.pos_width).unwrap())
        })
        .collect();
    let coordinates = (0..enc.lvl_rank())
        .map(|l| {
            enc.owns_crd_buffer(l)
                .then(|| CrdBuffer::new(enc.crd_width).unwrap())
        })
        .collect();
    DynamicStorage::<f64>::from_raw_parts(&enc, shape, positions, coordinates, vec![]).unwrap_err()
}

/// Before: "attempt to add with overflow" (positions length `parent + 1`), or in a release build
/// a loop of 2^64 steps; the 2-batch-level struct panicked computing its batch count.
#[test]
fn huge_shapes_are_named_errors_generated_and_dynamic() {
    let csr_err = overflow(
        1,
        0,
        "positions length (18446744073709551615 parents + 1) x 1 batch(es) overflows usize",
    );
    let e = Csr::<f64>::from_raw_parts(CsrParts {
        dim_shape: [MAX, 4],
        pos_1: vec![],
        crd_1: vec![],
        values: vec![],
    })
    .unwrap_err();
    assert_eq!(e, csr_err);
    assert_eq!(dynamic_empty(Csr::<f64>::encoding(), &[MAX, 4]), csr_err);

    let dense_err = overflow(
        1,
        0,
        "18446744073709551615 parent positions x level size 2 overflows usize",
    );
    let e = DenseMat::<f64>::from_raw_parts(DenseMatParts {
        dim_shape: [MAX, 2],
        values: vec![],
    })
    .unwrap_err();
    assert_eq!(e, dense_err);
    assert_eq!(
        dynamic_empty(DenseMat::<f64>::encoding(), &[MAX, 2]),
        dense_err
    );

    // BSR: MAX is not a multiple of the block; MAX - 1 is, and its positions are just too short
    let e = Bsr22::<f64>::from_raw_parts(Bsr22Parts {
        dim_shape: [MAX, 4],
        pos_1: vec![],
        crd_1: vec![],
        values: vec![],
    })
    .unwrap_err();
    assert_eq!(
        e,
        StorageError::BlockShape {
            dim: 0,
            size: MAX,
            block: 2
        }
    );
    let e = Bsr22::<f64>::from_raw_parts(Bsr22Parts {
        dim_shape: [MAX - 1, 4],
        pos_1: vec![],
        crd_1: vec![],
        values: vec![],
    })
    .unwrap_err();
    assert_eq!(
        invariant(e),
        (1, "3.8 positions length is parent size + 1", 0)
    );

    let loose_err = overflow(
        1,
        0,
        "positions length 2 x 18446744073709551615 parents overflows usize",
    );
    let e = LooseCsr::<f64>::from_raw_parts(LooseCsrParts {
        dim_shape: [MAX, 4],
        pos_1: vec![],
        crd_1: vec![],
        values: vec![],
    })
    .unwrap_err();
    assert_eq!(e, loose_err);
    assert_eq!(
        dynamic_empty(LooseCsr::<f64>::encoding(), &[MAX, 4]),
        loose_err
    );

    let nm_err = overflow(
        2,
        0,
        "coordinates length 18446744073709551615 blocks x n = 2 overflows usize",
    );
    let e = Nv24::<f64>::from_raw_parts(Nv24Parts {
        dim_shape: [MAX, 4],
        crd_2: PackedBuffer::new(2).unwrap(),
        values: vec![],
    })
    .unwrap_err();
    assert_eq!(e, nm_err);
    assert_eq!(dynamic_empty(Nv24::<f64>::encoding(), &[MAX, 4]), nm_err);

    // ELL with 3 slices over MAX / 3 rows: MAX parents of the compressed level
    let ell_err = overflow(
        2,
        0,
        "positions length (18446744073709551615 parents + 1) x 1 batch(es) overflows usize",
    );
    let e = Ell::<f64>::from_raw_parts(EllParts {
        dim_shape: [MAX / 3, 4],
        pos_2: vec![],
        crd_2: vec![],
        values: vec![],
    })
    .unwrap_err();
    assert_eq!(e, ell_err);
    assert_eq!(
        dynamic_empty(Ell::<f64>::encoding(), &[MAX / 3, 4]),
        ell_err
    );

    let batch_err = overflow(
        2,
        0,
        "positions length (18446744073709551615 parents + 1) x 1 batch(es) overflows usize",
    );
    let e = BatchCsr::<f64>::from_raw_parts(BatchCsrParts {
        dim_shape: [1, MAX, 4],
        pos_2: vec![],
        crd_2: vec![],
        values: vec![],
    })
    .unwrap_err();
    assert_eq!(e, batch_err);
    assert_eq!(
        dynamic_empty(BatchCsr::<f64>::encoding(), &[1, MAX, 4]),
        batch_err
    );

    // two batch levels whose product overflows
    let e = Batch2Csr::<f64>::from_raw_parts(Batch2CsrParts {
        dim_shape: [1 << 33, 1 << 33, 1, 4],
        pos_3: vec![],
        crd_3: vec![],
        values: vec![],
    })
    .unwrap_err();
    assert_eq!(
        e,
        overflow(
            1,
            0,
            "batch count 8589934592 x level size 8589934592 overflows usize"
        )
    );
}
