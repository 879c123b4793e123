//! faer's `SparseRowMat<usize, V>` and `SparseColMat<usize, V>` (feature `faer`), and at a
//! generated struct's own widths `SparseRowMat<I, V>` / `SparseColMat<I, V>` (`*_parts_i`: `I`
//! is `u32`, `u64` or `usize`, the one index type faer uses for offsets and indices; every
//! array moves).
//!
//! `SparseRowMat` is the encoding `(i, j) -> (i : dense, j : compressed)` (`row_ptr` is `pos_1`,
//! `col_idx` is `crd_1`), `SparseColMat` `(i, j) -> (j : dense, i : compressed)` (`col_ptr`,
//! `row_idx`). Native-width arrays (`usize`) move without a copy both ways; other widths are
//! converted (see [the module rules](super)). A faer matrix with per-row (per-column) counts
//! (`row_nnz`/`col_nnz`, gaps between rows) is compacted on the way in, a copy.
//!
//! faer's checked constructors (`new_checked`) panic on bad arrays, so this module checks the
//! same rules first (offsets `n + 1`, starting at 0, non-decreasing, ending at the number of
//! indices and values; indices in range, strictly increasing per row or column; dimensions up
//! to `isize::MAX`), returning [`StorageError::Invariant`] naming the rule and position.

use faer::sparse::{SparseColMat, SparseRowMat, SymbolicSparseColMat, SymbolicSparseRowMat};
use sparse_ir::ir::VerifiedEncoding;

use super::{
    build_compressed, check_compressed, native_into_parts, parts_into_native, take_compressed,
    CompressedParts, Layout,
};
use crate::error::StorageError;
use crate::index::Index;
use crate::{DynamicStorage, Value};

const PEER: &str = "faer";

/// Checks faer's rules for `outer` segments of `inner` coordinates (see the module docs), at
/// faer's index type `I`: its dimensions may not pass `I`'s signed maximum (`isize::MAX` for
/// `usize`, `i32::MAX` for `u32`).
fn check<I: Index + faer::Index>(
    outer: usize,
    inner: usize,
    pos: &[I],
    crd: &[I],
    n: usize,
) -> Result<(), StorageError> {
    use faer::traits::SignedIndex as _;
    let max = <I as faer::traits::Index>::Signed::MAX.zx();
    if outer.max(inner) > max {
        return Err(super::refused(
            PEER,
            format!(
                "dimensions {outer} x {inner} pass {max}, the signed maximum of its index type"
            ),
        ));
    }
    check_compressed(outer, inner, pos, crd, n)
}

fn rows<I: Index + faer::Index, V>(
    [nrows, ncols]: [usize; 2],
    pos: Vec<I>,
    crd: Vec<I>,
    values: Vec<V>,
) -> Result<SparseRowMat<I, V>, StorageError> {
    check(nrows, ncols, &pos, &crd, values.len())?;
    let symbolic = SymbolicSparseRowMat::new_checked(nrows, ncols, pos, None, crd);
    Ok(SparseRowMat::new(symbolic, values))
}

fn cols<I: Index + faer::Index, V>(
    [nrows, ncols]: [usize; 2],
    pos: Vec<I>,
    crd: Vec<I>,
    values: Vec<V>,
) -> Result<SparseColMat<I, V>, StorageError> {
    check(ncols, nrows, &pos, &crd, values.len())?;
    let symbolic = SymbolicSparseColMat::new_checked(nrows, ncols, pos, None, crd);
    Ok(SparseColMat::new(symbolic, values))
}

/// Compressed arrays without per-segment counts: as they are when `nnz` is `None` (no copy),
/// else the first `nnz[o]` entries of each segment `o` gathered (a copy), at faer's index type.
///
/// Errors: [`StorageError::Invariant`] for a count that passes the arrays (only from a matrix
/// built with faer's unchecked constructors).
fn compact<I: Index, V: Copy>(
    dim_shape: [usize; 2],
    pos: Vec<I>,
    nnz: Option<Vec<I>>,
    crd: Vec<I>,
    values: Vec<V>,
) -> Result<CompressedParts<I, I, V>, StorageError> {
    let Some(nnz) = nnz else {
        return Ok(CompressedParts {
            dim_shape,
            pos,
            crd,
            values,
        });
    };
    let total = nnz
        .iter()
        .try_fold(0usize, |a, &n| a.checked_add(n.index()));
    let mut out_pos = Vec::with_capacity(nnz.len() + 1);
    let mut out_crd = Vec::with_capacity(total.unwrap_or(0).min(crd.len()));
    let mut out_val = Vec::with_capacity(out_crd.capacity());
    // counts within the indices keep every offset below `crd.len()`, which fits in `I`
    let offset = |k: usize| I::from_usize(k).unwrap_or(pos[0]);
    out_pos.push(offset(0));
    for (o, &n) in nnz.iter().enumerate() {
        let lo = pos.get(o).map_or(usize::MAX, |&p| p.index());
        let n = n.index();
        let range = lo..lo.saturating_add(n);
        match (crd.get(range.clone()), values.get(range)) {
            (Some(c), Some(v)) => {
                out_crd.extend_from_slice(c);
                out_val.extend_from_slice(v);
            }
            _ => {
                return Err(StorageError::Invariant {
                    level: 1,
                    invariant: "segment within the indices",
                    position: o,
                    detail: format!("offset {lo} + count {n} passes {} indices", crd.len()),
                })
            }
        }
        out_pos.push(offset(out_crd.len()));
    }
    Ok(CompressedParts {
        dim_shape,
        pos: out_pos,
        crd: out_crd,
        values: out_val,
    })
}

/// The CSR storage `s` as a `SparseRowMat`. Zero-copy at the native width, widened otherwise;
/// the values move.
///
/// Errors: [`StorageError::Interop`] if the encoding is not CSR; [`StorageError::Invariant`]
/// naming the position of column indices unsorted or repeated within a row (possible for a
/// `nonordered` or `nonunique` level).
pub fn row_from_dynamic<V: Value>(
    s: DynamicStorage<V>,
) -> Result<SparseRowMat<usize, V>, StorageError> {
    let c = take_compressed(PEER, &[Layout::Csr], s)?;
    rows(c.shape, c.pos, c.crd, c.values)
}

/// The CSC storage `s` as a `SparseColMat`; as [`row_from_dynamic`].
///
/// Errors: [`StorageError::Interop`] if the encoding is not CSC; [`StorageError::Invariant`]
/// as [`row_from_dynamic`], per column.
pub fn col_from_dynamic<V: Value>(
    s: DynamicStorage<V>,
) -> Result<SparseColMat<usize, V>, StorageError> {
    let c = take_compressed(PEER, &[Layout::Csc], s)?;
    cols(c.shape, c.pos, c.crd, c.values)
}

/// The storage of `m` in the CSR `encoding` (any level properties and widths). Zero-copy at the
/// native width without `row_nnz`; compacted (a copy) with it; narrowed for other widths.
///
/// Errors: [`StorageError::Interop`] if `encoding` is not CSR; [`StorageError::WidthOverflow`]
/// naming level 1 for a number that does not fit; as [`DynamicStorage::from_raw_parts`].
pub fn row_into_dynamic<V: Value>(
    m: SparseRowMat<usize, V>,
    encoding: &VerifiedEncoding,
) -> Result<DynamicStorage<V>, StorageError> {
    let (symbolic, values) = m.into_parts();
    let (nrows, ncols, pos, nnz, crd) = symbolic.into_parts();
    let c = compact([nrows, ncols], pos, nnz, crd, values)?;
    build_compressed(
        PEER,
        Layout::Csr,
        encoding,
        c.dim_shape,
        c.pos,
        c.crd,
        c.values,
    )
}

/// The storage of `m` in the CSC `encoding`; as [`row_into_dynamic`].
///
/// Errors: as [`row_into_dynamic`], for CSC.
pub fn col_into_dynamic<V: Value>(
    m: SparseColMat<usize, V>,
    encoding: &VerifiedEncoding,
) -> Result<DynamicStorage<V>, StorageError> {
    let (symbolic, values) = m.into_parts();
    let (nrows, ncols, pos, nnz, crd) = symbolic.into_parts();
    let c = compact([nrows, ncols], pos, nnz, crd, values)?;
    build_compressed(
        PEER,
        Layout::Csc,
        encoding,
        c.dim_shape,
        c.pos,
        c.crd,
        c.values,
    )
}

/// A `SparseRowMat` from the arrays of a generated CSR struct (`into_raw_parts()`: `dim_shape`,
/// `pos_1`, `crd_1`, `values`), of any widths. Zero-copy when `P` and `C` are `usize`; widened
/// otherwise.
///
/// Errors: [`StorageError::Invariant`] naming the rule and position (see the module docs);
/// [`StorageError::Interop`] for a dimension past `isize::MAX`.
pub fn row_from_parts<V, P: Index, C: Index>(
    dim_shape: [usize; 2],
    pos: Vec<P>,
    crd: Vec<C>,
    values: Vec<V>,
) -> Result<SparseRowMat<usize, V>, StorageError> {
    let (pos, crd) = parts_into_native(pos, crd);
    rows(dim_shape, pos, crd, values)
}

/// A `SparseColMat` from the arrays of a generated CSC struct; as [`row_from_parts`].
///
/// Errors: as [`row_from_parts`], per column.
pub fn col_from_parts<V, P: Index, C: Index>(
    dim_shape: [usize; 2],
    pos: Vec<P>,
    crd: Vec<C>,
    values: Vec<V>,
) -> Result<SparseColMat<usize, V>, StorageError> {
    let (pos, crd) = parts_into_native(pos, crd);
    cols(dim_shape, pos, crd, values)
}

/// The arrays of `m` in the widths of a generated CSR struct (`pos_1: pos`, `crd_1: crd`), for
/// its `from_raw_parts`. Zero-copy when `P` and `C` are `usize` and `m` has no `row_nnz`.
///
/// Errors: [`StorageError::WidthOverflow`] naming level 1 for a number that does not fit.
pub fn row_into_parts<V: Copy, P: Index, C: Index>(
    m: SparseRowMat<usize, V>,
) -> Result<CompressedParts<P, C, V>, StorageError> {
    let (symbolic, values) = m.into_parts();
    let (nrows, ncols, pos, nnz, crd) = symbolic.into_parts();
    let c = compact([nrows, ncols], pos, nnz, crd, values)?;
    native_into_parts(c.dim_shape, c.pos, c.crd, c.values)
}

/// The arrays of `m` for a generated CSC struct; as [`row_into_parts`].
///
/// Errors: as [`row_into_parts`].
pub fn col_into_parts<V: Copy, P: Index, C: Index>(
    m: SparseColMat<usize, V>,
) -> Result<CompressedParts<P, C, V>, StorageError> {
    let (symbolic, values) = m.into_parts();
    let (nrows, ncols, pos, nnz, crd) = symbolic.into_parts();
    let c = compact([nrows, ncols], pos, nnz, crd, values)?;
    native_into_parts(c.dim_shape, c.pos, c.crd, c.values)
}

/// A `SparseRowMat<I, V>` over the arrays of a generated CSR struct whose `posWidth` and
/// `crdWidth` are both `I`'s width (faer has one index type for both: `u32` for widths 32,
/// `u64` for 64, `usize` for 0): every array moves, no copy.
///
/// Errors: as [`row_from_parts`]; [`StorageError::Interop`] also for a dimension past `I`'s
/// signed maximum (faer's rule).
pub fn row_from_parts_i<V, I: Index + faer::Index>(
    dim_shape: [usize; 2],
    pos: Vec<I>,
    crd: Vec<I>,
    values: Vec<V>,
) -> Result<SparseRowMat<I, V>, StorageError> {
    rows(dim_shape, pos, crd, values)
}

/// A `SparseColMat<I, V>` over the arrays of a generated CSC struct of `I`'s width; as
/// [`row_from_parts_i`].
///
/// Errors: as [`row_from_parts_i`], per column.
pub fn col_from_parts_i<V, I: Index + faer::Index>(
    dim_shape: [usize; 2],
    pos: Vec<I>,
    crd: Vec<I>,
    values: Vec<V>,
) -> Result<SparseColMat<I, V>, StorageError> {
    cols(dim_shape, pos, crd, values)
}

/// The arrays of `m` for a generated CSR struct of `I`'s widths (its `from_raw_parts` checks
/// them). Zero-copy when `m` has no `row_nnz`; compacted otherwise.
///
/// Errors: as [`row_into_parts`].
pub fn row_into_parts_i<V: Copy, I: Index + faer::Index>(
    m: SparseRowMat<I, V>,
) -> Result<CompressedParts<I, I, V>, StorageError> {
    let (symbolic, values) = m.into_parts();
    let (nrows, ncols, pos, nnz, crd) = symbolic.into_parts();
    compact([nrows, ncols], pos, nnz, crd, values)
}

/// The arrays of `m` for a generated CSC struct of `I`'s widths; as [`row_into_parts_i`].
///
/// Errors: as [`row_into_parts_i`].
pub fn col_into_parts_i<V: Copy, I: Index + faer::Index>(
    m: SparseColMat<I, V>,
) -> Result<CompressedParts<I, I, V>, StorageError> {
    let (symbolic, values) = m.into_parts();
    let (nrows, ncols, pos, nnz, crd) = symbolic.into_parts();
    compact([nrows, ncols], pos, nnz, crd, values)
}
