//! Generated structs to and from the Rust peers through their raw parts (feature `peers` of this
//! package, which turns on `sparse`'s `sprs`, `nalgebra-sparse`, `faer` and `ndarray`): native
//! widths keep the buffers, 32-bit ones convert, and the struct's `from_raw_parts` checks what
//! comes back.

use sparse::runtime::interop;
use sparse::runtime::StorageError;

sparse::sparse_format! {
    Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    Csr32 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    Csc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>;
    CooSoa = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)) }>;
    Csr8 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), crdWidth = 8 }>;
}

fn entries() -> Vec<([usize; 2], f64)> {
    (0..300)
        .map(|k| ([k % 40, (k * 7) % 290], k as f64 + 1.0))
        .collect()
}

#[test]
fn native_csr_moves_through_sprs_and_back() {
    let a = Csr::<f64>::from_coo([40, 290], entries()).unwrap();
    let expected = a.clone();
    let CsrParts {
        dim_shape,
        pos_1,
        crd_1,
        values,
    } = a.into_raw_parts();
    let ptrs = (pos_1.as_ptr(), crd_1.as_ptr(), values.as_ptr());
    let m = interop::sprs::csr_from_parts(dim_shape, pos_1, crd_1, values).unwrap();
    assert_eq!(m.nnz(), expected.values().len());
    let p: interop::CompressedParts<usize, usize, f64> = interop::sprs::csr_into_parts(m).unwrap();
    assert_eq!((p.pos.as_ptr(), p.crd.as_ptr(), p.values.as_ptr()), ptrs);
    let back = Csr::<f64>::from_raw_parts(CsrParts {
        dim_shape: p.dim_shape,
        pos_1: p.pos,
        crd_1: p.crd,
        values: p.values,
    })
    .unwrap();
    assert_eq!(back, expected);
}

#[test]
fn csr32_and_csc_through_nalgebra_and_faer() {
    let a = Csr32::<f64>::from_coo([40, 290], entries()).unwrap();
    let expected = a.clone();
    let parts = a.into_raw_parts();
    let m = interop::nalgebra_sparse::csr_from_parts(
        parts.dim_shape,
        parts.pos_1,
        parts.crd_1,
        parts.values,
    )
    .unwrap();
    let p = interop::nalgebra_sparse::csr_into_parts::<f64, u32, u32>(m).unwrap();
    let back = Csr32::from_raw_parts(Csr32Parts {
        dim_shape: p.dim_shape,
        pos_1: p.pos,
        crd_1: p.crd,
        values: p.values,
    })
    .unwrap();
    assert_eq!(back, expected);

    let c = Csc::<f64>::from_coo([40, 290], entries()).unwrap();
    let expected = c.clone();
    let parts = c.into_raw_parts();
    let m = interop::faer::col_from_parts(parts.dim_shape, parts.pos_1, parts.crd_1, parts.values)
        .unwrap();
    let p = interop::faer::col_into_parts::<f64, usize, usize>(m).unwrap();
    let back = Csc::from_raw_parts(CscParts {
        dim_shape: p.dim_shape,
        pos_1: p.pos,
        crd_1: p.crd,
        values: p.values,
    })
    .unwrap();
    assert_eq!(back, expected);
}

#[test]
fn soa_coo_through_nalgebra() {
    let a = CooSoa::<f64>::from_coo([40, 290], entries()).unwrap();
    let expected = a.clone();
    let parts = a.into_raw_parts();
    let rows = parts.crd_0.as_ptr();
    let m = interop::nalgebra_sparse::coo_from_parts(
        parts.dim_shape,
        parts.pos_0,
        parts.crd_0,
        parts.crd_1,
        parts.values,
    )
    .unwrap();
    assert_eq!(m.row_indices().as_ptr(), rows);
    let p = interop::nalgebra_sparse::coo_into_parts::<f64, usize, usize>(m).unwrap();
    let back = CooSoa::from_raw_parts(CooSoaParts {
        dim_shape: p.dim_shape,
        pos_0: p.pos,
        crd_0: p.rows,
        crd_1: p.cols,
        values: p.values,
    })
    .unwrap();
    assert_eq!(back, expected);
}

#[test]
fn narrow_struct_refuses_wide_columns() {
    let a = Csr::<f64>::from_coo([40, 290], entries()).unwrap();
    let p = a.into_raw_parts();
    let m = interop::sprs::csr_from_parts(p.dim_shape, p.pos_1, p.crd_1, p.values).unwrap();
    let e = interop::sprs::csr_into_parts::<f64, usize, u8>(m).unwrap_err();
    assert!(
        matches!(
            e,
            StorageError::WidthOverflow {
                level: 1,
                width: 8,
                ..
            }
        ),
        "{e}"
    );
    let _ = Csr8::<f64>::encoding();
}

#[test]
fn dense_operand_through_ndarray() {
    let a = Csr::<f64>::from_coo([40, 290], entries()).unwrap();
    let x =
        interop::ndarray::from_row_major([290, 1], (0..290).map(|j| j as f64).collect()).unwrap();
    let x = interop::ndarray::into_row_major(x);
    let mut y = vec![0.0; 40];
    a.spmv(&x, &mut y).unwrap();
    let y = interop::ndarray::view([40, 1], &y).unwrap();
    let expected: f64 = entries()
        .iter()
        .filter(|(c, _)| c[0] == 3)
        .map(|(c, v)| v * c[1] as f64)
        .sum();
    assert_eq!(y[[3, 0]], expected);
}

#[test]
fn csr32_moves_through_sprs_at_its_own_widths() {
    // posWidth = crdWidth = 32: a `CsMatI<f64, u32, u32>` holding the very same buffers
    let a = Csr32::<f64>::from_coo([40, 290], entries()).unwrap();
    let expected = a.clone();
    let p = a.into_raw_parts();
    let ptrs = (p.pos_1.as_ptr(), p.crd_1.as_ptr(), p.values.as_ptr());
    let m = interop::sprs::csr_from_parts_i(p.dim_shape, p.pos_1, p.crd_1, p.values).unwrap();
    assert_eq!(
        (m.rows(), m.cols(), m.nnz()),
        (40, 290, expected.values().len())
    );
    // sprs computes with it: row 3 of A times ones is the sum of row 3's values
    let row3: f64 = expected
        .iter()
        .filter(|(ij, _)| ij[0] == 3)
        .map(|(_, v)| *v)
        .sum();
    assert_eq!(m.outer_view(3).unwrap().data().iter().sum::<f64>(), row3);
    let back = interop::sprs::csr_into_parts_i(m).unwrap();
    assert_eq!(
        (back.pos.as_ptr(), back.crd.as_ptr(), back.values.as_ptr()),
        ptrs
    );
    let back = Csr32::from_raw_parts(Csr32Parts {
        dim_shape: back.dim_shape,
        pos_1: back.pos,
        crd_1: back.crd,
        values: back.values,
    })
    .unwrap();
    assert_eq!(back, expected);
    // the wrong orientation is refused, naming both
    let c =
        interop::sprs::csc_from_parts_i([2, 2], vec![0u32, 1, 1], vec![1u32], vec![5.0]).unwrap();
    let e = interop::sprs::csr_into_parts_i(c).unwrap_err();
    assert!(e.to_string().contains("the matrix is Csc, not Csr"), "{e}");
    // an offset past the indices is our error, not a panic in sprs
    let e = interop::sprs::csr_from_parts_i([2, 2], vec![0u32, 3, 3], vec![0u32], vec![1.0])
        .unwrap_err();
    assert!(matches!(e, StorageError::Invariant { level: 1, .. }), "{e}");
}

#[test]
fn csr32_moves_through_faer_at_its_own_widths() {
    // posWidth = crdWidth = 32: a faer `SparseRowMat<u32, f64>` holding the very same buffers
    let a = Csr32::<f64>::from_coo([40, 290], entries()).unwrap();
    let expected = a.clone();
    let p = a.into_raw_parts();
    let ptrs = (p.pos_1.as_ptr(), p.crd_1.as_ptr(), p.values.as_ptr());
    let m = interop::faer::row_from_parts_i(p.dim_shape, p.pos_1, p.crd_1, p.values).unwrap();
    assert_eq!((m.nrows(), m.ncols()), (40, 290));
    // faer reads it: row 3's values sum as ours do
    let row3: f64 = expected
        .iter()
        .filter(|(ij, _)| ij[0] == 3)
        .map(|(_, v)| *v)
        .sum();
    assert_eq!(m.val_of_row(3).iter().sum::<f64>(), row3);
    let back = interop::faer::row_into_parts_i(m).unwrap();
    assert_eq!(
        (back.pos.as_ptr(), back.crd.as_ptr(), back.values.as_ptr()),
        ptrs
    );
    let back = Csr32::from_raw_parts(Csr32Parts {
        dim_shape: back.dim_shape,
        pos_1: back.pos,
        crd_1: back.crd,
        values: back.values,
    })
    .unwrap();
    assert_eq!(back, expected);
    // an offset past the indices is our error, not a panic in faer
    let e = interop::faer::row_from_parts_i([2, 2], vec![0u32, 3, 3], vec![0u32], vec![1.0])
        .unwrap_err();
    assert!(matches!(e, StorageError::Invariant { level: 1, .. }), "{e}");
    // faer's u32 matrices hold at most i32::MAX columns: refused (before the arrays are
    // looked at), not a panic
    let e = interop::faer::col_from_parts_i::<f64, u32>([1, 1 << 31], vec![0, 0], vec![], vec![])
        .unwrap_err();
    assert!(e.to_string().contains("signed maximum"), "{e}");
}

/// A pattern (`explicitVal`, no values array) leaves for a peer with its constant written out
/// as each stored entry's value.
#[test]
fn a_pattern_leaves_with_its_constant_as_values() {
    let enc = sparse::runtime::sparse_ir::ir::Encoding {
        explicit_val: Some(sparse::runtime::sparse_ir::types::TypedValue {
            value: sparse::runtime::sparse_ir::types::ScalarValue::Float(1.0f64.to_bits()),
            ty: sparse::runtime::sparse_ir::types::ElementType::Float(
                sparse::runtime::sparse_ir::types::FloatKind::F64,
            ),
        }),
        ..Csr::<f64>::encoding()
    }
    .verify()
    .unwrap();
    let mut coo = sparse::runtime::CooTensor::new(vec![3, 4]);
    for c in [[0, 3], [2, 0], [0, 1]] {
        coo.push(&c, 1.0);
    }
    let d = sparse::runtime::DynamicStorage::from_coo(&enc, &coo).unwrap();
    assert!(d.values().is_empty());
    let m = interop::sprs::from_dynamic(d.clone()).unwrap();
    assert_eq!(m.data(), &[1.0, 1.0, 1.0]);
    assert_eq!(m.indices(), &[1, 3, 0]);
    let n = interop::nalgebra_sparse::csr_from_dynamic(d).unwrap();
    assert_eq!(n.values(), &[1.0, 1.0, 1.0]);
}
