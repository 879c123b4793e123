//! ndarray's `Array2`/`ArrayView2` for dense operands (feature `ndarray`).
//!
//! The dense encodings are ndarray's two memory orders: `(i, j) -> (i : dense, j : dense)` holds
//! its values row-major (C order, [`Array2::is_standard_layout`]), `(i, j) -> (j : dense,
//! i : dense)` column-major (Fortran order). An array whose memory order is the encoding's moves
//! in and out without a copy (the same buffer); any other array is copied in the encoding's
//! order. Sparse encodings go through the dense tensor (a copy; zeros are not stored).
//!
//! Generated kernels take dense operands as row-major slices (`&[V]` of `rows * cols` values):
//! [`view`] and [`view_mut`] show such a slice as an array, [`into_row_major`] gives an array's
//! values row-major (the same buffer when it is already standard), [`from_row_major`] the
//! reverse.

use ndarray::{Array2, ArrayView2, ArrayViewMut2, ShapeBuilder};
use sparse_ir::ir::VerifiedEncoding;

use super::{refused, Layout};
use crate::error::StorageError;
use crate::{DynamicStorage, Value};

const PEER: &str = "ndarray";

/// `rows * cols`, or [`StorageError::ShapeOverflow`].
fn count([rows, cols]: [usize; 2]) -> Result<usize, StorageError> {
    rows.checked_mul(cols)
        .ok_or_else(|| StorageError::ShapeOverflow {
            shape: vec![rows, cols],
        })
}

/// A `rows x cols` array over the row-major `data` (no copy).
///
/// Errors: [`StorageError::LengthMismatch`] if `data.len()` is not `rows * cols`;
/// [`StorageError::ShapeOverflow`] if that product overflows.
pub fn view<V>(shape: [usize; 2], data: &[V]) -> Result<ArrayView2<'_, V>, StorageError> {
    let n = count(shape)?;
    ArrayView2::from_shape((shape[0], shape[1]), data).map_err(|_| StorageError::LengthMismatch {
        operand: "dense operand",
        expected: n,
        got: data.len(),
    })
}

/// A mutable `rows x cols` array over the row-major `data` (no copy), e.g. a kernel's output.
///
/// Errors: as [`view`].
pub fn view_mut<V>(
    shape: [usize; 2],
    data: &mut [V],
) -> Result<ArrayViewMut2<'_, V>, StorageError> {
    let n = count(shape)?;
    let got = data.len();
    ArrayViewMut2::from_shape((shape[0], shape[1]), data).map_err(|_| {
        StorageError::LengthMismatch {
            operand: "dense operand",
            expected: n,
            got,
        }
    })
}

/// A `rows x cols` array owning the row-major `data` (no copy).
///
/// Errors: as [`view`].
pub fn from_row_major<V>(shape: [usize; 2], data: Vec<V>) -> Result<Array2<V>, StorageError> {
    let n = count(shape)?;
    let got = data.len();
    Array2::from_shape_vec((shape[0], shape[1]), data).map_err(|_| StorageError::LengthMismatch {
        operand: "dense operand",
        expected: n,
        got,
    })
}

/// The values of `a` in memory order when it is `order` (its own buffer, no copy), else in
/// `order`'s order (a copy).
fn take<V: Copy>(a: Array2<V>, col_major: bool) -> Vec<V> {
    let n = a.len();
    let contiguous = if col_major {
        a.t().is_standard_layout()
    } else {
        a.is_standard_layout()
    };
    if !contiguous {
        return if col_major {
            a.t().iter().copied().collect()
        } else {
            a.iter().copied().collect()
        };
    }
    let (mut v, offset) = a.into_raw_vec_and_offset();
    let start = offset.unwrap_or(0);
    if start == 0 && v.len() == n {
        return v;
    }
    // a contiguous part of a larger buffer: the elements in order from the offset
    v.truncate(start.saturating_add(n));
    v.drain(..start.min(v.len()));
    v
}

/// The values of `a` row-major: its own buffer when `a` is in standard layout over all of it
/// (no copy), a copy otherwise.
pub fn into_row_major<V: Copy>(a: Array2<V>) -> Vec<V> {
    take(a, false)
}

/// The rank-2 storage `s` as an array. The dense row-major and column-major encodings give their
/// values array as the array's buffer (no copy; a column-major tensor is a Fortran-order array);
/// any other encoding is expanded into a row-major array (a copy, duplicates summed).
///
/// Errors: [`StorageError::RankMismatch`] if `s` is not rank 2; [`StorageError::ShapeOverflow`]
/// if the dense size overflows.
pub fn from_dynamic<V: Value>(s: DynamicStorage<V>) -> Result<Array2<V>, StorageError> {
    if s.shape().len() != 2 {
        return Err(StorageError::RankMismatch {
            expected: 2,
            got: s.shape().len(),
        });
    }
    let (rows, cols) = (s.shape()[0], s.shape()[1]);
    let (values, col_major) = match Layout::of(s.encoding()) {
        Some(Layout::DenseRowMajor) => (s.into_raw_parts_with_values().values, false),
        Some(Layout::DenseColMajor) => (s.into_raw_parts_with_values().values, true),
        _ => (s.to_dense()?, false),
    };
    let made = if col_major {
        Array2::from_shape_vec((rows, cols).f(), values)
    } else {
        Array2::from_shape_vec((rows, cols), values)
    };
    made.map_err(|e| refused(PEER, e))
}

/// The storage of `a` in `encoding`. A dense row-major encoding takes a standard-layout array's
/// buffer, a dense column-major one a Fortran-order array's buffer (no copy); other arrays are
/// copied in the encoding's order. Any other rank-2 encoding stores the nonzero elements
/// ([`DynamicStorage::from_dense`], a copy).
///
/// Errors: as [`DynamicStorage::from_raw_parts`] / [`DynamicStorage::from_dense`] (for example
/// [`StorageError::RankMismatch`] for an encoding that is not rank 2, or
/// [`StorageError::WidthOverflow`] for a sparse encoding with narrow widths).
pub fn into_dynamic<V: Value>(
    a: Array2<V>,
    encoding: &VerifiedEncoding,
) -> Result<DynamicStorage<V>, StorageError> {
    let shape = [a.nrows(), a.ncols()];
    match Layout::of(encoding) {
        Some(l @ (Layout::DenseRowMajor | Layout::DenseColMajor)) => {
            let values = take(a, l == Layout::DenseColMajor);
            DynamicStorage::from_raw_parts(
                encoding,
                &shape,
                vec![None, None],
                vec![None, None],
                values,
            )
        }
        _ => DynamicStorage::from_dense(encoding, &shape, &take(a, false)),
    }
}
