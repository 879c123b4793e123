//! `sprs::CsMat` (feature `sprs`): CSR and CSC with `usize` indices, and `sprs::CsMatI` at the
//! generated struct's own widths (`*_parts_i`: `posWidth` is sprs's `Iptr`, `crdWidth` its `I`;
//! every array moves, whatever the width).
//!
//! A CSR `CsMat` is the encoding `(i, j) -> (i : dense, j : compressed)`, a CSC one
//! `(i, j) -> (j : dense, i : compressed)`; `indptr` is `pos_1`, `indices` is `crd_1`, `data` is
//! `values`. Native-width arrays (`posWidth = crdWidth = 0`, `usize`) move without a copy both
//! ways; other widths are converted (see [the module rules](super)). sprs wants the indices of
//! every row (column) sorted and unique. Arrays going to sprs are checked by this crate's rules
//! first ([`StorageError::Invariant`] naming the rule and position: sprs's own checks can panic on
//! an offset past the indices), then by [`CsMat::try_new`] / [`CsMat::try_new_csc`], whose
//! refusal is [`StorageError::Interop`].

use sparse_ir::ir::VerifiedEncoding;
use sprs::{CompressedStorage, CsMat, CsMatI, SpIndex};

use super::{
    build_compressed, check_compressed, native_into_parts, parts_into_native, refused,
    take_compressed, CompressedParts, Layout,
};
use crate::error::StorageError;
use crate::index::Index;
use crate::{DynamicStorage, Value};

const PEER: &str = "sprs";

/// Builds a sprs matrix in `layout` (CSR or CSC) from `usize` arrays with sprs's checked
/// constructor.
fn build<V>(
    layout: Layout,
    shape: [usize; 2],
    pos: Vec<usize>,
    crd: Vec<usize>,
    values: Vec<V>,
) -> Result<CsMat<V>, StorageError> {
    build_i(layout, shape, pos, crd, values)
}

/// Splits a sprs matrix into `[rows, cols]`, `indptr`, `indices` and `data` (no copy), with its
/// layout.
fn split<V>(m: CsMat<V>) -> (Layout, [usize; 2], Vec<usize>, Vec<usize>, Vec<V>) {
    let layout = layout_of(&m);
    let (rows, cols) = m.shape();
    let (indptr, indices, data) = m.into_raw_storage();
    (layout, [rows, cols], indptr, indices, data)
}

/// The CSR or CSC storage `s` as a `CsMat` of the same orientation (`CsMat::storage()` is
/// `CSR` for a CSR encoding, `CSC` for a CSC one). Zero-copy at the native width, converted
/// otherwise; the values move.
///
/// Errors: [`StorageError::Interop`] if the encoding is neither CSR nor CSC (naming both);
/// [`StorageError::Invariant`] naming the position of indices unsorted or repeated within a row
/// or column (possible for a `nonordered` or `nonunique` level).
pub fn from_dynamic<V: Value>(s: DynamicStorage<V>) -> Result<CsMat<V>, StorageError> {
    let c = take_compressed(PEER, &[Layout::Csr, Layout::Csc], s)?;
    build(c.layout, c.shape, c.pos, c.crd, c.values)
}

/// The storage of `m` in `encoding`, which must be CSR for a CSR `CsMat` and CSC for a CSC one
/// (any level properties and widths, e.g. from [`Layout::encoding`]). Zero-copy at the native
/// width; narrowed otherwise; the values move.
///
/// Errors: [`StorageError::Interop`] if `encoding` is not `m`'s layout;
/// [`StorageError::WidthOverflow`] naming level 1 and the number for an offset or index that does
/// not fit the encoding's width; as [`DynamicStorage::from_raw_parts`] (every invariant checked).
pub fn into_dynamic<V: Value>(
    m: CsMat<V>,
    encoding: &VerifiedEncoding,
) -> Result<DynamicStorage<V>, StorageError> {
    let (layout, shape, pos, crd, values) = split(m);
    build_compressed(PEER, layout, encoding, shape, pos, crd, values)
}

/// A CSR `CsMat` from the arrays of a generated CSR struct (`into_raw_parts()`: `dim_shape`,
/// `pos_1` row offsets, `crd_1` column indices, `values`), of any widths `P` and `C`. Zero-copy
/// when `P` and `C` are `usize`; widened otherwise.
///
/// Errors: [`StorageError::Invariant`] naming the rule and position for wrong lengths, offsets
/// that decrease or pass the indices, indices out of range, unsorted or repeated within a row.
pub fn csr_from_parts<V, P: Index, C: Index>(
    dim_shape: [usize; 2],
    pos: Vec<P>,
    crd: Vec<C>,
    values: Vec<V>,
) -> Result<CsMat<V>, StorageError> {
    let (pos, crd) = parts_into_native(pos, crd);
    build(Layout::Csr, dim_shape, pos, crd, values)
}

/// A CSC `CsMat` from the arrays of a generated CSC struct (`pos_1` column offsets, `crd_1` row
/// indices); as [`csr_from_parts`].
///
/// Errors: as [`csr_from_parts`].
pub fn csc_from_parts<V, P: Index, C: Index>(
    dim_shape: [usize; 2],
    pos: Vec<P>,
    crd: Vec<C>,
    values: Vec<V>,
) -> Result<CsMat<V>, StorageError> {
    let (pos, crd) = parts_into_native(pos, crd);
    build(Layout::Csc, dim_shape, pos, crd, values)
}

/// The arrays of a CSR `CsMat` in the widths `P` (`pos_1`) and `C` (`crd_1`) of a generated CSR
/// struct, for its `from_raw_parts` (which checks them). Zero-copy when `P` and `C` are
/// `usize`; narrowed otherwise.
///
/// Errors: [`StorageError::Interop`] if `m` is CSC (convert it with `m.to_other_storage()`, a
/// copy); [`StorageError::WidthOverflow`] naming level 1 for a number that does not fit.
pub fn csr_into_parts<V, P: Index, C: Index>(
    m: CsMat<V>,
) -> Result<CompressedParts<P, C, V>, StorageError> {
    into_parts(Layout::Csr, m)
}

/// The arrays of a CSC `CsMat` for a generated CSC struct; as [`csr_into_parts`].
///
/// Errors: [`StorageError::Interop`] if `m` is CSR; [`StorageError::WidthOverflow`] naming
/// level 1.
pub fn csc_into_parts<V, P: Index, C: Index>(
    m: CsMat<V>,
) -> Result<CompressedParts<P, C, V>, StorageError> {
    into_parts(Layout::Csc, m)
}

fn into_parts<V, P: Index, C: Index>(
    want: Layout,
    m: CsMat<V>,
) -> Result<CompressedParts<P, C, V>, StorageError> {
    let (layout, shape, pos, crd, values) = split(m);
    same_layout(layout, want)?;
    native_into_parts(shape, pos, crd, values)
}

/// The layout of a sprs matrix.
fn layout_of<V, I: SpIndex, Iptr: SpIndex>(m: &CsMatI<V, I, Iptr>) -> Layout {
    match m.storage() {
        CompressedStorage::CSR => Layout::Csr,
        CompressedStorage::CSC => Layout::Csc,
    }
}

/// Errors: [`StorageError::Interop`] unless `layout` is `want`.
fn same_layout(layout: Layout, want: Layout) -> Result<(), StorageError> {
    if layout == want {
        return Ok(());
    }
    Err(refused(
        PEER,
        format!("the matrix is {layout:?}, not {want:?} (convert it with `to_other_storage`)"),
    ))
}

/// A CSR `CsMatI` over the arrays of a generated CSR struct at their own widths: `P` (the
/// struct's `posWidth`) is sprs's `Iptr`, `C` (`crdWidth`) its `I`, so `posWidth = crdWidth =
/// 32` gives a `CsMatI<V, u32, u32>`. Zero-copy at every width sprs indexes with (`u16`,
/// `u32`, `u64`, `usize`): the three vectors move into sprs.
///
/// Errors: as [`csr_from_parts`] ([`StorageError::Invariant`] naming the rule and position,
/// checked before sprs's own checks; [`StorageError::Interop`] for sprs's refusal, e.g. an
/// index type too narrow for the number of entries).
pub fn csr_from_parts_i<V, P: Index + SpIndex, C: Index + SpIndex>(
    dim_shape: [usize; 2],
    pos: Vec<P>,
    crd: Vec<C>,
    values: Vec<V>,
) -> Result<CsMatI<V, C, P>, StorageError> {
    build_i(Layout::Csr, dim_shape, pos, crd, values)
}

/// A CSC `CsMatI` over the arrays of a generated CSC struct at their own widths; as
/// [`csr_from_parts_i`].
///
/// Errors: as [`csr_from_parts_i`].
pub fn csc_from_parts_i<V, P: Index + SpIndex, C: Index + SpIndex>(
    dim_shape: [usize; 2],
    pos: Vec<P>,
    crd: Vec<C>,
    values: Vec<V>,
) -> Result<CsMatI<V, C, P>, StorageError> {
    build_i(Layout::Csc, dim_shape, pos, crd, values)
}

/// The arrays of a CSR `CsMatI<V, C, P>` for a generated CSR struct of the same widths (its
/// `from_raw_parts` checks them). Zero-copy: the three vectors move out of sprs.
///
/// Errors: [`StorageError::Interop`] if `m` is CSC (convert it with `m.to_other_storage()`, a
/// copy).
pub fn csr_into_parts_i<V, P: Index + SpIndex, C: Index + SpIndex>(
    m: CsMatI<V, C, P>,
) -> Result<CompressedParts<P, C, V>, StorageError> {
    into_parts_i(Layout::Csr, m)
}

/// The arrays of a CSC `CsMatI` for a generated CSC struct of the same widths; as
/// [`csr_into_parts_i`].
///
/// Errors: [`StorageError::Interop`] if `m` is CSR.
pub fn csc_into_parts_i<V, P: Index + SpIndex, C: Index + SpIndex>(
    m: CsMatI<V, C, P>,
) -> Result<CompressedParts<P, C, V>, StorageError> {
    into_parts_i(Layout::Csc, m)
}

/// [`build`] at the arrays' own index types.
fn build_i<V, P: Index + SpIndex, C: Index + SpIndex>(
    layout: Layout,
    [rows, cols]: [usize; 2],
    pos: Vec<P>,
    crd: Vec<C>,
    values: Vec<V>,
) -> Result<CsMatI<V, C, P>, StorageError> {
    let (outer, inner) = if layout == Layout::Csr {
        (rows, cols)
    } else {
        (cols, rows)
    };
    check_compressed(outer, inner, &pos, &crd, values.len())?;
    let made = if layout == Layout::Csr {
        CsMatI::try_new((rows, cols), pos, crd, values)
    } else {
        CsMatI::try_new_csc((rows, cols), pos, crd, values)
    };
    made.map_err(|(_, _, _, e)| refused(PEER, e))
}

/// [`into_parts`] at the matrix's own index types.
fn into_parts_i<V, P: Index + SpIndex, C: Index + SpIndex>(
    layout: Layout,
    m: CsMatI<V, C, P>,
) -> Result<CompressedParts<P, C, V>, StorageError> {
    same_layout(layout_of(&m), layout)?;
    let (rows, cols) = m.shape();
    let (pos, crd, values) = m.into_raw_storage();
    Ok(CompressedParts {
        dim_shape: [rows, cols],
        pos,
        crd,
        values,
    })
}
