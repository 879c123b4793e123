//! Conversions to and from the Rust peers (features `sprs`, `nalgebra-sparse`, `faer`,
//! `ndarray`; this file builds only with all four, see Cargo.toml): round trips on real matrices
//! and on random ones give identical arrays, native-width conversions keep the very buffers
//! (pointer comparisons), and every refusal is an error, not a panic.

use proptest::prelude::*;
use sparse_runtime::interop::{self, CompressedParts, Layout};
use sparse_runtime::mmio::read_matrix_market;
use sparse_runtime::{BufferKind, CooTensor, DynamicStorage, IndexSlice, StorageError};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/");

fn enc(layout: Layout, pos: u32, crd: u32) -> sparse_runtime::sparse_ir::ir::VerifiedEncoding {
    layout.encoding(pos, crd).expect("a valid encoding")
}

fn real(file: &str) -> CooTensor<f64> {
    read_matrix_market(format!("{DATA}{file}"))
        .unwrap_or_else(|e| panic!("{file}: {e}"))
        .tensor
}

fn store(layout: Layout, pos: u32, crd: u32, coo: &CooTensor<f64>) -> DynamicStorage<f64> {
    DynamicStorage::from_coo(&enc(layout, pos, crd), coo).expect("storable")
}

/// Pointers of the values and of level 1's positions and coordinates (null where absent).
fn ptrs(s: &DynamicStorage<f64>) -> [usize; 3] {
    let p = |x: Option<IndexSlice<'_>>| match x {
        Some(IndexSlice::Native(v)) => v.as_ptr() as usize,
        Some(_) => 1,
        None => 0,
    };
    [
        s.values().as_ptr() as usize,
        p(s.positions(1)),
        p(s.coordinates(1)),
    ]
}

/// `s` through every peer holding its layout and back: the same arrays each time.
fn round_trips(s: &DynamicStorage<f64>) {
    let e = s.encoding().clone();
    match Layout::of(&e).expect("a peer layout") {
        Layout::Csr => {
            let back =
                interop::sprs::into_dynamic(interop::sprs::from_dynamic(s.clone()).unwrap(), &e);
            assert_eq!(&back.unwrap(), s, "sprs");
            let m = interop::nalgebra_sparse::csr_from_dynamic(s.clone()).unwrap();
            let back = interop::nalgebra_sparse::csr_into_dynamic(m, &e);
            assert_eq!(&back.unwrap(), s, "nalgebra-sparse");
            let m = interop::faer::row_from_dynamic(s.clone()).unwrap();
            assert_eq!(&interop::faer::row_into_dynamic(m, &e).unwrap(), s, "faer");
        }
        Layout::Csc => {
            let back =
                interop::sprs::into_dynamic(interop::sprs::from_dynamic(s.clone()).unwrap(), &e);
            assert_eq!(&back.unwrap(), s, "sprs");
            let m = interop::nalgebra_sparse::csc_from_dynamic(s.clone()).unwrap();
            let back = interop::nalgebra_sparse::csc_into_dynamic(m, &e);
            assert_eq!(&back.unwrap(), s, "nalgebra-sparse");
            let m = interop::faer::col_from_dynamic(s.clone()).unwrap();
            assert_eq!(&interop::faer::col_into_dynamic(m, &e).unwrap(), s, "faer");
        }
        Layout::Coo => {
            let m = interop::nalgebra_sparse::coo_from_dynamic(s.clone()).unwrap();
            let back = interop::nalgebra_sparse::coo_into_dynamic(m, &e);
            assert_eq!(&back.unwrap(), s, "nalgebra-sparse");
        }
        Layout::DenseRowMajor | Layout::DenseColMajor => {}
    }
    let a = interop::ndarray::from_dynamic(s.clone()).unwrap();
    assert_eq!(
        a.iter().copied().collect::<Vec<_>>(),
        s.to_dense().unwrap(),
        "ndarray"
    );
}

#[test]
fn real_matrices_round_trip_through_every_peer() {
    for file in ["bcsstk16.mtx", "cryg2500.mtx"] {
        let coo = real(file);
        for layout in [Layout::Csr, Layout::Csc, Layout::Coo] {
            for (pos, crd) in [(0, 0), (32, 32), (64, 16)] {
                if file == "bcsstk16.mtx" && crd == 16 {
                    continue; // 290 378 entries: the positions fit 32 bits, 4 884 columns fit 16
                }
                round_trips(&store(layout, pos, crd, &coo));
            }
        }
    }
}

#[test]
fn real_matrix_peers_agree_with_our_spmv() {
    let coo = real("cryg2500.mtx");
    let s = store(Layout::Csr, 0, 0, &coo);
    let x: Vec<f64> = (0..2500).map(|i| (i % 7) as f64 - 3.0).collect();
    let mut y = vec![0.0; 2500];
    s.spmv(&x, &mut y).unwrap();
    let m = interop::sprs::from_dynamic(s).unwrap();
    let mut z = vec![0.0; 2500];
    for (row, vec) in m.outer_iterator().enumerate() {
        z[row] = vec.iter().map(|(j, v)| v * x[j]).sum();
    }
    for (a, b) in y.iter().zip(&z) {
        assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{a} vs {b}");
    }
}

#[test]
fn native_width_moves_the_buffers() {
    let coo = real("cryg2500.mtx");
    // sprs, CSR and CSC
    for layout in [Layout::Csr, Layout::Csc] {
        let s = store(layout, 0, 0, &coo);
        let before = ptrs(&s);
        let m = interop::sprs::from_dynamic(s).unwrap();
        assert_eq!(m.data().as_ptr() as usize, before[0]);
        assert_eq!(m.indptr().raw_storage().as_ptr() as usize, before[1]);
        assert_eq!(m.indices().as_ptr() as usize, before[2]);
        let back = interop::sprs::into_dynamic(m, &enc(layout, 0, 0)).unwrap();
        assert_eq!(ptrs(&back), before, "sprs {layout:?}");
    }
    // nalgebra-sparse CSR
    let s = store(Layout::Csr, 0, 0, &coo);
    let before = ptrs(&s);
    let m = interop::nalgebra_sparse::csr_from_dynamic(s).unwrap();
    assert_eq!(m.values().as_ptr() as usize, before[0]);
    assert_eq!(m.row_offsets().as_ptr() as usize, before[1]);
    assert_eq!(m.col_indices().as_ptr() as usize, before[2]);
    let back = interop::nalgebra_sparse::csr_into_dynamic(m, &enc(Layout::Csr, 0, 0)).unwrap();
    assert_eq!(ptrs(&back), before, "nalgebra-sparse CSR");
    // nalgebra-sparse COO (singleton(soa): rows are crd_0, columns crd_1)
    let s = store(Layout::Coo, 0, 0, &coo);
    let rows = match s.coordinates(0) {
        Some(IndexSlice::Native(v)) => v.as_ptr() as usize,
        _ => unreachable!(),
    };
    let before = ptrs(&s);
    let m = interop::nalgebra_sparse::coo_from_dynamic(s).unwrap();
    assert_eq!(m.row_indices().as_ptr() as usize, rows);
    assert_eq!(m.col_indices().as_ptr() as usize, before[2]);
    assert_eq!(m.values().as_ptr() as usize, before[0]);
    let back = interop::nalgebra_sparse::coo_into_dynamic(m, &enc(Layout::Coo, 0, 0)).unwrap();
    assert_eq!([ptrs(&back)[0], ptrs(&back)[2]], [before[0], before[2]]);
    // faer CSC
    let s = store(Layout::Csc, 0, 0, &coo);
    let before = ptrs(&s);
    let m = interop::faer::col_from_dynamic(s).unwrap();
    assert_eq!(m.val().as_ptr() as usize, before[0]);
    assert_eq!(m.symbolic().col_ptr().as_ptr() as usize, before[1]);
    assert_eq!(m.symbolic().row_idx().as_ptr() as usize, before[2]);
    let back = interop::faer::col_into_dynamic(m, &enc(Layout::Csc, 0, 0)).unwrap();
    assert_eq!(ptrs(&back), before, "faer CSC");
    // ndarray, both memory orders
    for layout in [Layout::DenseRowMajor, Layout::DenseColMajor] {
        let s = DynamicStorage::from_dense(&enc(layout, 0, 0), &[3, 4], &[1.0; 12]).unwrap();
        let before = s.values().as_ptr();
        let a = interop::ndarray::from_dynamic(s).unwrap();
        assert_eq!(a.as_ptr(), before);
        let back = interop::ndarray::into_dynamic(a, &enc(layout, 0, 0)).unwrap();
        assert_eq!(back.values().as_ptr(), before, "ndarray {layout:?}");
    }
}

#[test]
fn generic_parts_are_zero_copy_for_usize_and_convert_other_widths() {
    let coo = real("cryg2500.mtx");
    let s = store(Layout::Csr, 0, 0, &coo);
    let parts = s.clone().into_raw_parts();
    let shape = [2500, 2500];
    let native = |b: Option<sparse_runtime::IndexBuffer>| match b {
        Some(sparse_runtime::IndexBuffer::Native(v)) => v,
        other => panic!("{other:?}"),
    };
    let pos: Vec<usize> = native(parts.positions[1].clone());
    let crd: Vec<usize> = match parts.coordinates[1].clone() {
        Some(sparse_runtime::CrdBuffer::Plain(b)) => native(Some(b)),
        other => panic!("{other:?}"),
    };
    let (pp, cp, vp) = (pos.as_ptr(), crd.as_ptr(), parts.values.as_ptr());
    let m = interop::sprs::csr_from_parts(shape, pos, crd, parts.values).unwrap();
    assert_eq!(
        (
            m.indptr().raw_storage().as_ptr(),
            m.indices().as_ptr(),
            m.data().as_ptr()
        ),
        (pp, cp, vp)
    );
    let back: CompressedParts<usize, usize, f64> = interop::sprs::csr_into_parts(m).unwrap();
    assert_eq!(
        (back.pos.as_ptr(), back.crd.as_ptr(), back.values.as_ptr()),
        (pp, cp, vp)
    );
    // u32 positions, u16 columns: converted both ways, the same numbers
    let narrow: CompressedParts<u32, u16, f64> = interop::sprs::csr_into_parts(
        interop::sprs::csr_from_parts(
            shape,
            back.pos.clone(),
            back.crd.clone(),
            back.values.clone(),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        narrow.pos.iter().map(|&p| p as usize).collect::<Vec<_>>(),
        back.pos
    );
    assert_eq!(
        narrow.crd.iter().map(|&c| c as usize).collect::<Vec<_>>(),
        back.crd
    );
    let m = interop::nalgebra_sparse::csr_from_parts(shape, narrow.pos, narrow.crd, narrow.values)
        .unwrap();
    assert_eq!(m.row_offsets(), &back.pos[..]);
    let f =
        interop::faer::row_from_parts::<f64, usize, usize>(shape, back.pos, back.crd, back.values)
            .unwrap();
    assert_eq!(f.symbolic().row_ptr().len(), 2501);
}

#[test]
fn wrong_encoding_is_refused_with_the_layout_needed() {
    let coo = real("cryg2500.mtx");
    let coo_storage = store(Layout::Coo, 0, 0, &coo);
    let e = interop::sprs::from_dynamic(coo_storage.clone()).unwrap_err();
    assert!(
        matches!(&e, StorageError::Interop { peer: "sprs", reason } if reason.contains("CSR") && reason.contains("CSC")),
        "{e}"
    );
    let e = interop::faer::row_from_dynamic(store(Layout::Csc, 0, 0, &coo)).unwrap_err();
    assert!(
        matches!(&e, StorageError::Interop { peer: "faer", .. }),
        "{e}"
    );
    let csr = interop::nalgebra_sparse::csr_from_dynamic(store(Layout::Csr, 0, 0, &coo)).unwrap();
    let e = interop::nalgebra_sparse::csr_into_dynamic(csr, &enc(Layout::Csc, 0, 0)).unwrap_err();
    assert!(
        matches!(
            &e,
            StorageError::Interop {
                peer: "nalgebra-sparse",
                ..
            }
        ),
        "{e}"
    );
    let m = interop::sprs::from_dynamic(store(Layout::Csc, 0, 0, &coo)).unwrap();
    let e = interop::sprs::csr_into_parts::<f64, usize, usize>(m).unwrap_err();
    assert!(
        matches!(&e, StorageError::Interop { peer: "sprs", .. }),
        "{e}"
    );
    let e = interop::nalgebra_sparse::coo_from_dynamic(store(Layout::Csr, 0, 0, &coo)).unwrap_err();
    assert!(e.to_string().contains("COO"), "{e}");
}

#[test]
fn unsorted_indices_are_refused_going_to_sprs() {
    // row 0 holds columns 2 then 0
    let e = interop::sprs::csr_from_parts(
        [2, 3],
        vec![0usize, 2, 3],
        vec![2usize, 0, 1],
        vec![1.0, 2.0, 3.0],
    )
    .unwrap_err();
    assert!(
        matches!(
            &e,
            StorageError::Invariant {
                level: 1,
                invariant: "coordinates strictly increasing",
                position: 1,
                ..
            }
        ),
        "{e}"
    );
    // a nonordered CSR storage holds them; sprs does not take it
    let mut e = enc(Layout::Csr, 0, 0).into_inner();
    e.lvl_types[1].properties.nonordered = true;
    let e = e.verify().unwrap();
    let mut coo = CooTensor::new(vec![2, 3]);
    coo.push(&[0, 2], 1.0);
    coo.push(&[0, 0], 2.0);
    let s = DynamicStorage::from_coo(&e, &coo).unwrap();
    assert_eq!(s.coordinates(1).unwrap().to_vec(), vec![2, 0]);
    assert!(matches!(
        interop::sprs::from_dynamic(s.clone()).unwrap_err(),
        StorageError::Invariant { level: 1, .. }
    ));
    assert!(interop::faer::row_from_dynamic(s.clone()).is_err());
    assert!(interop::nalgebra_sparse::csr_from_dynamic(s).is_err());
}

#[test]
fn width_overflow_into_u8_coordinates_names_the_level() {
    let coo = real("cryg2500.mtx");
    let m = interop::sprs::from_dynamic(store(Layout::Csr, 0, 0, &coo)).unwrap();
    let e = interop::sprs::into_dynamic(m.clone(), &enc(Layout::Csr, 0, 8)).unwrap_err();
    assert!(
        matches!(e, StorageError::WidthOverflow { level: 1, kind: BufferKind::Coordinate, width: 8, value } if value > 255),
        "{e}"
    );
    let e = interop::sprs::csr_into_parts::<f64, u32, u8>(m).unwrap_err();
    assert!(
        matches!(
            e,
            StorageError::WidthOverflow {
                level: 1,
                kind: BufferKind::Coordinate,
                width: 8,
                ..
            }
        ),
        "{e}"
    );
    let m = interop::nalgebra_sparse::coo_from_dynamic(store(Layout::Coo, 0, 0, &coo)).unwrap();
    let e = interop::nalgebra_sparse::coo_into_dynamic(m.clone(), &enc(Layout::Coo, 8, 32))
        .unwrap_err();
    assert!(
        matches!(
            e,
            StorageError::WidthOverflow {
                level: 0,
                kind: BufferKind::Position,
                width: 8,
                value: 12_349
            }
        ),
        "{e}"
    );
    let e = interop::nalgebra_sparse::coo_into_parts::<f64, u32, u8>(m).unwrap_err();
    assert!(
        matches!(
            e,
            StorageError::WidthOverflow {
                level: 0,
                width: 8,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn malformed_arrays_are_errors_not_panics() {
    // an offset past the indices (nalgebra-sparse and sprs would index out of bounds)
    let bad = || (vec![0usize, 5, 2], vec![0usize, 1], vec![1.0, 2.0]);
    let (p, c, v) = bad();
    assert!(interop::sprs::csr_from_parts([2, 2], p, c, v).is_err());
    let (p, c, v) = bad();
    assert!(interop::nalgebra_sparse::csr_from_parts([2, 2], p, c, v).is_err());
    let (p, c, v) = bad();
    assert!(interop::faer::row_from_parts([2, 2], p, c, v).is_err());
    // a wrong number of offsets, an index out of range, values of the wrong length
    for (p, c, v) in [
        (vec![0usize, 1], vec![0usize], vec![1.0]),
        (vec![0, 1, 1], vec![7], vec![1.0]),
        (vec![0, 1, 1], vec![0], vec![]),
        (vec![], vec![], vec![]),
    ] {
        assert!(interop::sprs::csc_from_parts([2, 2], p.clone(), c.clone(), v.clone()).is_err());
        assert!(
            interop::nalgebra_sparse::csc_from_parts([2, 2], p.clone(), c.clone(), v.clone())
                .is_err()
        );
        assert!(interop::faer::col_from_parts([2, 2], p, c, v).is_err());
    }
    assert!(interop::nalgebra_sparse::coo_from_parts(
        [2, 2],
        vec![0usize, 1],
        vec![0usize],
        vec![0],
        vec![1.0, 2.0]
    )
    .is_err());
    assert!(interop::nalgebra_sparse::coo_from_parts(
        [2, 2],
        vec![0usize, 1],
        vec![0usize],
        vec![5],
        vec![1.0]
    )
    .is_err());
    // ndarray: a slice of the wrong length
    assert!(matches!(
        interop::ndarray::view([2, 3], &[1.0; 5]),
        Err(StorageError::LengthMismatch {
            expected: 6,
            got: 5,
            ..
        })
    ));
    assert!(interop::ndarray::view([usize::MAX, 3], &[1.0; 5]).is_err());
}

#[test]
fn ndarray_dense_operands() {
    use ndarray::{Array2, ShapeBuilder};
    let data: Vec<f64> = (0..12).map(f64::from).collect();
    let v = interop::ndarray::view([3, 4], &data).unwrap();
    assert_eq!(v[[1, 2]], 6.0);
    // a Fortran-order array goes into the column-major encoding without a copy ...
    let f = Array2::from_shape_vec((3, 4).f(), data.clone()).unwrap();
    let g = f.clone();
    let ptr = g.as_ptr();
    let s = interop::ndarray::into_dynamic(g, &enc(Layout::DenseColMajor, 0, 0)).unwrap();
    assert_eq!(s.values().as_ptr(), ptr);
    assert_eq!(s.values(), &data[..]);
    // ... and into the row-major one by a copy in row-major order
    let r = interop::ndarray::into_dynamic(f.clone(), &enc(Layout::DenseRowMajor, 0, 0)).unwrap();
    assert_eq!(r.values(), f.iter().copied().collect::<Vec<_>>());
    assert_eq!(r.to_dense().unwrap(), s.to_dense().unwrap());
    // a sparse encoding stores the nonzeros; back to an array
    let csr = interop::ndarray::into_dynamic(f.clone(), &enc(Layout::Csr, 0, 0)).unwrap();
    assert_eq!(csr.nse(), 11);
    assert_eq!(interop::ndarray::from_dynamic(csr).unwrap(), f);
    // a row-slice of a larger array, a transposed view
    let big = Array2::from_shape_vec((4, 4), (0..16).map(f64::from).collect()).unwrap();
    let rows = big.slice_move(ndarray::s![1..3, ..]);
    assert_eq!(
        interop::ndarray::into_row_major(rows),
        (4..12).map(f64::from).collect::<Vec<_>>()
    );
    let t = Array2::from_shape_vec((2, 2), vec![1.0, 2.0, 3.0, 4.0])
        .unwrap()
        .reversed_axes();
    assert_eq!(
        interop::ndarray::into_row_major(t),
        vec![1.0, 3.0, 2.0, 4.0]
    );
    let a = interop::ndarray::from_row_major([2, 2], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
    let p = a.as_ptr();
    let v = interop::ndarray::into_row_major(a);
    assert_eq!(v.as_ptr(), p);
}

#[test]
fn faer_row_counts_are_compacted() {
    use faer::sparse::{SparseRowMat, SymbolicSparseRowMat};
    // row 0 holds 1 of its 2 slots, row 1 its 1 slot
    let sym = SymbolicSparseRowMat::new_checked(
        2,
        3,
        vec![0usize, 2, 3],
        Some(vec![1, 1]),
        vec![0, 2, 1],
    );
    let m = SparseRowMat::new(sym, vec![1.0, 9.0, 2.0]);
    let s = interop::faer::row_into_dynamic(m, &enc(Layout::Csr, 0, 0)).unwrap();
    assert_eq!(s.positions(1).unwrap().to_vec(), vec![0, 1, 2]);
    assert_eq!(s.coordinates(1).unwrap().to_vec(), vec![0, 1]);
    assert_eq!(s.values(), &[1.0, 2.0]);
}

/// A random `rows x cols` COO with entries below 1000 (duplicates summed by the unique formats).
fn arb_coo() -> impl Strategy<Value = CooTensor<f64>> {
    (0usize..12, 0usize..12).prop_flat_map(|(r, c)| {
        let entry = (0..r.max(1), 0..c.max(1), 1i32..1000);
        prop::collection::vec(entry, 0..40).prop_map(move |es| {
            let mut coo = CooTensor::new(vec![r, c]);
            if r > 0 && c > 0 {
                for (i, j, v) in es {
                    coo.push(&[i, j], f64::from(v));
                }
            }
            coo
        })
    })
}

proptest! {
    #[test]
    fn random_matrices_round_trip(
        coo in arb_coo(),
        layout in prop::sample::select(vec![Layout::Csr, Layout::Csc, Layout::Coo, Layout::DenseRowMajor, Layout::DenseColMajor]),
        widths in prop::sample::select(vec![(0u32, 0u32), (8, 8), (16, 32), (64, 8)]),
    ) {
        let Ok(s) = DynamicStorage::from_coo(&enc(layout, widths.0, widths.1), &coo) else {
            return Ok(()); // a width the matrix does not fit
        };
        round_trips(&s);
        if let (Layout::DenseRowMajor | Layout::DenseColMajor, Ok(a)) = (layout, interop::ndarray::from_dynamic(s.clone())) {
            prop_assert_eq!(&interop::ndarray::into_dynamic(a, s.encoding()).unwrap(), &s);
        }
    }

    /// Arbitrary arrays never panic any peer constructor.
    #[test]
    fn arbitrary_arrays_never_panic(
        shape in (0usize..5, 0usize..5),
        pos in prop::collection::vec(0usize..8, 0..7),
        crd in prop::collection::vec(0usize..8, 0..8),
        nvals in 0usize..8,
    ) {
        let shape = [shape.0, shape.1];
        let v = vec![1.0; nvals];
        let _ = interop::sprs::csr_from_parts(shape, pos.clone(), crd.clone(), v.clone());
        let _ = interop::sprs::csc_from_parts(shape, pos.clone(), crd.clone(), v.clone());
        let _ = interop::nalgebra_sparse::csr_from_parts(shape, pos.clone(), crd.clone(), v.clone());
        let _ = interop::nalgebra_sparse::csc_from_parts(shape, pos.clone(), crd.clone(), v.clone());
        let _ = interop::nalgebra_sparse::coo_from_parts(shape, pos.clone(), crd.clone(), crd.clone(), v.clone());
        let _ = interop::faer::row_from_parts(shape, pos.clone(), crd.clone(), v.clone());
        let _ = interop::faer::col_from_parts(shape, pos, crd, v);
    }
}
