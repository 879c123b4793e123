//! Generated storage on hostile input, against `DynamicStorage`: `from_raw_parts` with huge
//! shapes (every size computation of validation is checked), the level properties of singleton
//! levels and ELL slices; block maps over coordinates beyond `i64::MAX`.

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
    Coo = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>;
    CooSoa = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)) }>;
    CooDup = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(nonunique)) }>;
    Dbsr = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : compressed, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>;
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
fn dynamic_empty(enc: sparse_dsl::ir::Encoding, shape: &[usize]) -> StorageError {
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
    DynamicStorage::<f64>::from_raw_parts(
        &enc.verify().unwrap(),
        shape,
        positions,
        coordinates,
        vec![],
    )
    .unwrap_err()
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

fn native(v: &[usize]) -> IndexBuffer {
    IndexBuffer::Native(v.to_vec())
}

/// `Invariant { level, invariant, position, detail }`.
fn inv(level: usize, invariant: &'static str, position: usize, detail: &str) -> StorageError {
    StorageError::Invariant {
        level,
        invariant,
        position,
        detail: detail.into(),
    }
}

/// The COO of issue 13: unsorted, and (3, 0) twice in a unique singleton level. Before, it was
/// accepted, and `get([3, 0])` gave 3 while `spmv` and `to_dense` gave 9.
#[test]
fn coo_singleton_order_and_uniqueness_generated_and_dynamic() {
    let unsorted = inv(
        1,
        "coordinate tuples sorted and distinct in a segment",
        2,
        "(1, 2) after (1, 3)",
    );
    let repeated = inv(
        1,
        "coordinate tuples sorted and distinct in a segment",
        4,
        "(3, 0) after (3, 0)",
    );
    let aos = |crd: &[usize]| {
        Coo::<f64>::from_raw_parts(CooParts {
            dim_shape: [4, 4],
            pos_0: vec![0, 5],
            crd_0: crd.to_vec(),
            values: vec![1., 2., 5., 3., 6.],
        })
    };
    let dynamic = |e: sparse_dsl::ir::Encoding, crd: Vec<Option<CrdBuffer>>| {
        DynamicStorage::from_raw_parts(
            &e.verify().unwrap(),
            &[4, 4],
            vec![Some(native(&[0, 5])), None],
            crd,
            vec![1., 2., 5., 3., 6.],
        )
    };
    let issue = [0, 1, 1, 3, 1, 2, 3, 0, 3, 0];
    let sorted = [0, 1, 1, 2, 1, 3, 3, 0, 3, 0];
    assert_eq!(aos(&issue).unwrap_err(), unsorted);
    assert_eq!(aos(&sorted).unwrap_err(), repeated);
    let plain = |v: &[usize]| Some(CrdBuffer::Plain(native(v)));
    assert_eq!(
        dynamic(Coo::<f64>::encoding(), vec![plain(&issue), None]).unwrap_err(),
        unsorted
    );
    assert_eq!(
        dynamic(Coo::<f64>::encoding(), vec![plain(&sorted), None]).unwrap_err(),
        repeated
    );
    assert_eq!(
        aos(&sorted).unwrap_err().to_string(),
        "level 1: invariant 'coordinate tuples sorted and distinct in a segment' violated at \
         position 4: (3, 0) after (3, 0)"
    );
    // SoA: the same tuples in two buffers
    let soa = |rows: &[usize], cols: &[usize]| {
        CooSoa::<f64>::from_raw_parts(CooSoaParts {
            dim_shape: [4, 4],
            pos_0: vec![0, 5],
            crd_0: rows.to_vec(),
            crd_1: cols.to_vec(),
            values: vec![1., 2., 5., 3., 6.],
        })
    };
    let rows = [0, 1, 1, 3, 3];
    assert_eq!(soa(&rows, &[1, 3, 2, 0, 0]).unwrap_err(), unsorted);
    assert_eq!(soa(&rows, &[1, 2, 3, 0, 0]).unwrap_err(), repeated);
    assert_eq!(
        dynamic(
            CooSoa::<f64>::encoding(),
            vec![plain(&rows), plain(&[1, 3, 2, 0, 0])]
        )
        .unwrap_err(),
        unsorted
    );
    // sorted and distinct: accepted, and every reader agrees
    let ok = soa(&rows, &[1, 2, 3, 0, 1]).unwrap();
    assert_eq!(ok.get([3, 0]), Some(&3.0));
    assert_eq!(ok.get([1, 3]), Some(&5.0));
    let mut y = [0.0; 4];
    ok.spmv(&[1.0; 4], &mut y).unwrap();
    assert_eq!(y, [1.0, 7.0, 0.0, 9.0]);
    let again = CooSoa::<f64>::from_coo_tensor(&ok.to_coo()).unwrap();
    assert_eq!(again.into_raw_parts(), ok.into_raw_parts());
    // a nonunique singleton keeps (3, 0) twice but must still be sorted
    let dup = |crd: &[usize]| {
        CooDup::<f64>::from_raw_parts(CooDupParts {
            dim_shape: [4, 4],
            pos_0: vec![0, 5],
            crd_0: crd.to_vec(),
            values: vec![1., 2., 5., 3., 6.],
        })
    };
    let d = dup(&sorted).unwrap();
    assert_eq!(d.to_dense().unwrap()[12], 9.0);
    assert_eq!(
        dup(&issue).unwrap_err(),
        inv(
            1,
            "coordinate tuples non-decreasing in a segment",
            2,
            "(1, 2) after (1, 3)"
        )
    );
}

/// ELL whose slices hold the same (row, column) twice: before, accepted with `get` 1.0 and
/// `spmv` 3.0. Also entries in the wrong slice (the k-th entry of a row belongs in slice k).
#[test]
fn ell_slices_generated_and_dynamic() {
    // 3 slices x 2 rows: pos[2] has a segment per (slice, row), slice-major
    let ell = |pos: &[usize], crd: &[usize], values: &[f64]| {
        let g = Ell::<f64>::from_raw_parts(EllParts {
            dim_shape: [2, 4],
            pos_2: pos.to_vec(),
            crd_2: crd.to_vec(),
            values: values.to_vec(),
        });
        let d = DynamicStorage::from_raw_parts(
            &Ell::<f64>::encoding().verify().unwrap(),
            &[2, 4],
            vec![None, None, Some(native(pos))],
            vec![None, None, Some(CrdBuffer::Plain(native(crd)))],
            values.to_vec(),
        );
        assert_eq!(g.as_ref().err(), d.as_ref().err());
        g
    };
    // row 0, column 1 in slice 0 (1.0) and slice 1 (2.0)
    assert_eq!(
        ell(&[0, 1, 1, 2, 2, 2, 2], &[1, 1], &[1., 2.]).unwrap_err(),
        inv(
            2,
            "ELL: a row's entries distinct across slices",
            1,
            "row 0: level coordinates (0, 1) (without the counting level 0) in slices 0 and 1"
        )
    );
    // row 0's only entry in slice 1
    assert_eq!(
        ell(&[0, 0, 0, 1, 1, 1, 1], &[1], &[1.]).unwrap_err(),
        inv(
            2,
            "ELL: entry k of a row in slice k",
            0,
            "row 0: entry 0 of the row in level order, level coordinates (0, 1) (without the \
             counting level 0), sits in slice 1"
        )
    );
    // two entries of row 0 in slice 0's segment
    assert_eq!(
        ell(&[0, 2, 2, 2, 2, 2, 2], &[1, 2], &[1., 2.]).unwrap_err(),
        inv(
            2,
            "ELL: entry k of a row in slice k",
            1,
            "row 0: entry 1 of the row in level order, level coordinates (0, 2) (without the \
             counting level 0), sits in slice 0"
        )
    );
    // columns 1 then 3 of row 0 in slices 0 and 1, column 0 of row 1 in slice 0: the layout
    // `from_coo` builds
    let ok = ell(&[0, 1, 2, 3, 3, 3, 3], &[1, 0, 3], &[1., 4., 2.]).unwrap();
    assert_eq!(ok.get([0, 3]), Some(&2.0));
    let mut y = [0.0; 2];
    ok.spmv(&[1.0; 4], &mut y).unwrap();
    assert_eq!(y, [3.0, 4.0]);
    let again = Ell::<f64>::from_coo_tensor(&ok.to_coo()).unwrap();
    assert_eq!(again.into_raw_parts(), ok.into_raw_parts());
}

/// A block map over coordinates beyond `i64::MAX`: the dynamic storage evaluated its maps in
/// `i64` and failed with "unsupported encoding: dim_to_lvl does not evaluate" (and would have
/// mapped such level coordinates back to 0); it now computes in `usize` as the generated code
/// does, so both store the same arrays and read the same entries.
#[test]
fn block_map_beyond_i64_max_generated_and_dynamic() {
    let big = (1usize << 63) + 1;
    let shape = [MAX - 1, 4];
    let entries = [([big, 3], 5.0), ([1, 0], 2.0), ([MAX - 2, 1], 7.0)];
    let g = Dbsr::<f64>::from_coo(shape, entries).unwrap();
    let mut coo = sparse::runtime::CooTensor::new(shape.to_vec());
    for (c, v) in entries {
        coo.push(&c, v);
    }
    let d = DynamicStorage::from_coo(&Dbsr::<f64>::encoding().verify().unwrap(), &coo).unwrap();
    assert_eq!(g.positions(0), Some(&[0, 3][..]));
    assert_eq!(g.coordinates(0), Some(&[0, 1 << 62, (1 << 63) - 2][..]));
    assert_eq!(g.coordinates(1), Some(&[0, 1, 0][..]));
    assert_eq!(
        g.values(),
        &[0., 0., 2., 0., 0., 0., 0., 5., 0., 0., 0., 7.][..]
    );
    assert_eq!(
        d.coordinates(0).unwrap().to_vec(),
        vec![0, 1 << 62, (1 << 63) - 2]
    );
    assert_eq!(d.values(), g.values());
    assert_eq!(d.get(&[big, 3]), Some(&5.0));
    assert_eq!(g.get([big, 3]), Some(&5.0));
    assert_eq!(d.get(&[big, 2]), Some(&0.0));
    assert_eq!(d.get(&[big + 2, 3]), None);
    let stored: Vec<(Vec<usize>, f64)> = d
        .iter()
        .filter(|(_, v)| **v != 0.0)
        .map(|(c, v)| (c, *v))
        .collect();
    assert_eq!(
        stored,
        vec![
            (vec![1, 0], 2.0),
            (vec![big, 3], 5.0),
            (vec![MAX - 2, 1], 7.0)
        ]
    );
    assert_eq!(d.to_coo(), g.to_coo());
}

/// Assembly reserves the positions of a level below dense levels exactly (its length is known:
/// one segment per parent) and builds them in place, so nothing is over-allocated or copied
/// (issue 13: a 3e8-row CSR peaked at twice its positions array). Capacity equals length, for
/// the generated structs and the dynamic storage, with and without batches.
#[test]
fn positions_reserved_exactly() {
    let entries = [([0, 1], 1.0), ([3, 4], 2.0), ([3, 0], 3.0), ([8, 2], 4.0)];
    let coo = |shape: &[usize], entries: &[(Vec<usize>, f64)]| {
        let mut coo = sparse::runtime::CooTensor::new(shape.to_vec());
        for (c, v) in entries {
            coo.push(c, *v);
        }
        coo
    };
    let two: Vec<(Vec<usize>, f64)> = entries.iter().map(|(c, v)| (c.to_vec(), *v)).collect();
    let dynamic_capacity =
        |e: sparse_dsl::ir::Encoding, coo: &sparse::runtime::CooTensor<f64>, l: usize| {
            let parts = DynamicStorage::from_coo(&e.verify().unwrap(), coo)
                .unwrap()
                .into_raw_parts();
            let p = parts.positions[l].as_ref().unwrap();
            (p.len(), p.capacity())
        };
    let csr = Csr::<f64>::from_coo([9, 5], entries)
        .unwrap()
        .into_raw_parts();
    assert_eq!((csr.pos_1.len(), csr.pos_1.capacity()), (10, 10));
    assert_eq!(
        dynamic_capacity(Csr::<f64>::encoding(), &coo(&[9, 5], &two), 1),
        (10, 10)
    );
    let loose = LooseCsr::<f64>::from_coo([9, 5], entries)
        .unwrap()
        .into_raw_parts();
    assert_eq!((loose.pos_1.len(), loose.pos_1.capacity()), (18, 18));
    assert_eq!(
        dynamic_capacity(LooseCsr::<f64>::encoding(), &coo(&[9, 5], &two), 1),
        (18, 18)
    );
    let ell = Ell::<f64>::from_coo([9, 5], entries)
        .unwrap()
        .into_raw_parts();
    assert_eq!((ell.pos_2.len(), ell.pos_2.capacity()), (28, 28));
    assert_eq!(
        dynamic_capacity(Ell::<f64>::encoding(), &coo(&[9, 5], &two), 2),
        (28, 28)
    );
    // 3 batches of 9 x 5, the same pattern: 3 x (9 + 1) batch-local positions
    let batched: Vec<([usize; 3], f64)> = (0..3)
        .flat_map(|b| entries.iter().map(move |(c, v)| ([b, c[0], c[1]], *v)))
        .collect();
    let b = BatchCsr::<f64>::from_coo([3, 9, 5], batched.iter().copied()).unwrap();
    assert_eq!(
        &b.positions(2).unwrap()[..11],
        &[0, 1, 1, 1, 3, 3, 3, 3, 3, 4, 0]
    );
    let b = b.into_raw_parts();
    assert_eq!((b.pos_2.len(), b.pos_2.capacity()), (30, 30));
    let b3: Vec<(Vec<usize>, f64)> = batched.iter().map(|(c, v)| (c.to_vec(), *v)).collect();
    assert_eq!(
        dynamic_capacity(BatchCsr::<f64>::encoding(), &coo(&[3, 9, 5], &b3), 2),
        (30, 30)
    );
}
