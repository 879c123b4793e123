//! nalgebra-sparse's `CsrMatrix`, `CscMatrix` and `CooMatrix` (feature `nalgebra-sparse`), all
//! with `usize` indices.
//!
//! `CsrMatrix` is the encoding `(i, j) -> (i : dense, j : compressed)` (row offsets `pos_1`,
//! column indices `crd_1`), `CscMatrix` `(i, j) -> (j : dense, i : compressed)` (column offsets,
//! row indices), `CooMatrix` `(i, j) -> (i : compressed(nonunique), j : singleton)` (`pos_0 =
//! [0, nse]`; row indices `crd_0` and column indices `crd_1` with `singleton(soa)`, interleaved
//! in `crd_0` without). Native-width arrays (`usize`) move without a copy both ways, a
//! `singleton(soa)` COO included; other widths are converted, an array-of-structs COO is split
//! or interleaved (see [the module rules](super)).
//!
//! CSR and CSC arrays going to nalgebra-sparse are checked by this crate's rules first
//! ([`StorageError::Invariant`]: nalgebra-sparse's own check can panic on an offset past the
//! indices), then by its checked constructors, whose refusal is [`StorageError::Interop`].
//! nalgebra-sparse's COO takes entries in any order with duplicates; coming back, the COO
//! encoding's level properties decide what is accepted (an `ordered` COO needs its entries
//! sorted: use `nonordered` levels, or [`DynamicStorage::from_coo`], for any order).

use nalgebra_sparse::{CooMatrix, CscMatrix, CsrMatrix};
use sparse_ir::ir::VerifiedEncoding;

use super::{
    buffer_from_native, buffer_into_native, build_compressed, check_compressed, native_into_parts,
    parts_into_native, refused, take_compressed, vec_from_native, vec_into_native, wrong_layout,
    CompressedParts, CooParts, Layout,
};
use crate::error::{BufferKind, StorageError};
use crate::index::Index;
use crate::packed::CrdBuffer;
use crate::{DynamicStorage, Value};

const PEER: &str = "nalgebra-sparse";

fn csr<V>(
    [rows, cols]: [usize; 2],
    pos: Vec<usize>,
    crd: Vec<usize>,
    values: Vec<V>,
) -> Result<CsrMatrix<V>, StorageError> {
    check_compressed(rows, cols, &pos, &crd, values.len())?;
    CsrMatrix::try_from_csr_data(rows, cols, pos, crd, values).map_err(|e| refused(PEER, e))
}

fn csc<V>(
    [rows, cols]: [usize; 2],
    pos: Vec<usize>,
    crd: Vec<usize>,
    values: Vec<V>,
) -> Result<CscMatrix<V>, StorageError> {
    check_compressed(cols, rows, &pos, &crd, values.len())?;
    CscMatrix::try_from_csc_data(rows, cols, pos, crd, values).map_err(|e| refused(PEER, e))
}

/// The CSR storage `s` as a `CsrMatrix`. Zero-copy at the native width, widened otherwise; the
/// values move.
///
/// Errors: [`StorageError::Interop`] if the encoding is not CSR; [`StorageError::Invariant`]
/// naming the position of column indices unsorted or repeated within a row (possible for a
/// `nonordered` or `nonunique` level).
pub fn csr_from_dynamic<V: Value>(s: DynamicStorage<V>) -> Result<CsrMatrix<V>, StorageError> {
    let c = take_compressed(PEER, &[Layout::Csr], s)?;
    csr(c.shape, c.pos, c.crd, c.values)
}

/// The CSC storage `s` as a `CscMatrix`; as [`csr_from_dynamic`].
///
/// Errors: [`StorageError::Interop`] if the encoding is not CSC; [`StorageError::Invariant`]
/// as [`csr_from_dynamic`].
pub fn csc_from_dynamic<V: Value>(s: DynamicStorage<V>) -> Result<CscMatrix<V>, StorageError> {
    let c = take_compressed(PEER, &[Layout::Csc], s)?;
    csc(c.shape, c.pos, c.crd, c.values)
}

/// The storage of `m` in the CSR `encoding` (any level properties and widths). Zero-copy at the
/// native width; narrowed otherwise; the values move.
///
/// Errors: [`StorageError::Interop`] if `encoding` is not CSR; [`StorageError::WidthOverflow`]
/// naming level 1 for an offset or index that does not fit; as
/// [`DynamicStorage::from_raw_parts`].
pub fn csr_into_dynamic<V: Value>(
    m: CsrMatrix<V>,
    encoding: &VerifiedEncoding,
) -> Result<DynamicStorage<V>, StorageError> {
    let shape = [m.nrows(), m.ncols()];
    let (pos, crd, values) = m.disassemble();
    build_compressed(PEER, Layout::Csr, encoding, shape, pos, crd, values)
}

/// The storage of `m` in the CSC `encoding`; as [`csr_into_dynamic`].
///
/// Errors: as [`csr_into_dynamic`], for CSC.
pub fn csc_into_dynamic<V: Value>(
    m: CscMatrix<V>,
    encoding: &VerifiedEncoding,
) -> Result<DynamicStorage<V>, StorageError> {
    let shape = [m.nrows(), m.ncols()];
    let (pos, crd, values) = m.disassemble();
    build_compressed(PEER, Layout::Csc, encoding, shape, pos, crd, values)
}

/// The COO storage `s` as a `CooMatrix` (entries in storage order, duplicates kept). Zero-copy
/// for a native-width `singleton(soa)` COO; an array-of-structs COO is split (a copy), other
/// widths widened.
///
/// Errors: [`StorageError::Interop`] if the encoding is not COO.
pub fn coo_from_dynamic<V: Value>(s: DynamicStorage<V>) -> Result<CooMatrix<V>, StorageError> {
    if Layout::of(s.encoding()) != Some(Layout::Coo) {
        return Err(wrong_layout(PEER, &[Layout::Coo], s.encoding()));
    }
    let parts = s.into_raw_parts_with_values();
    let [rows, cols] = [parts.dim_shape[0], parts.dim_shape[1]];
    let mut crd = parts.coordinates.into_iter().map(|c| match c {
        Some(CrdBuffer::Plain(b)) => Some(buffer_into_native(b)),
        _ => None,
    });
    let (rows_idx, cols_idx) = match (crd.next().flatten(), crd.next().flatten()) {
        (Some(r), Some(c)) => (r, c),
        (Some(both), None) => (
            both.iter().step_by(2).copied().collect(),
            both.iter().skip(1).step_by(2).copied().collect(),
        ),
        _ => return Err(wrong_layout(PEER, &[Layout::Coo], &parts.encoding)),
    };
    CooMatrix::try_from_triplets(rows, cols, rows_idx, cols_idx, parts.values)
        .map_err(|e| refused(PEER, e))
}

/// The storage of `m` in the COO `encoding` (e.g. `Layout::Coo.encoding(0, 0)`, `singleton(soa)`:
/// zero-copy at the native width; array-of-structs: interleaved, a copy). The entries keep
/// nalgebra-sparse's order, duplicates included, and are checked against the encoding's level
/// properties.
///
/// Errors: [`StorageError::Interop`] if `encoding` is not COO; [`StorageError::WidthOverflow`]
/// naming the level for a number that does not fit; [`StorageError::Invariant`] (from
/// [`DynamicStorage::from_raw_parts`]) for entries out of order under `ordered` levels, or
/// repeated under a `unique` level.
pub fn coo_into_dynamic<V: Value>(
    m: CooMatrix<V>,
    encoding: &VerifiedEncoding,
) -> Result<DynamicStorage<V>, StorageError> {
    if Layout::of(encoding) != Some(Layout::Coo) {
        return Err(wrong_layout(PEER, &[Layout::Coo], encoding));
    }
    let shape = [m.nrows(), m.ncols()];
    let (rows, cols, values) = m.disassemble();
    let pos = buffer_from_native(
        encoding.pos_width,
        vec![0, values.len()],
        0,
        BufferKind::Position,
    )?;
    let w = encoding.crd_width;
    let coordinates = if encoding.owns_crd_buffer(1) {
        vec![
            Some(buffer_from_native(w, rows, 0, BufferKind::Coordinate)?.into()),
            Some(buffer_from_native(w, cols, 1, BufferKind::Coordinate)?.into()),
        ]
    } else {
        let both = rows.iter().zip(&cols).flat_map(|(&i, &j)| [i, j]).collect();
        vec![
            Some(buffer_from_native(w, both, 0, BufferKind::Coordinate)?.into()),
            None,
        ]
    };
    DynamicStorage::from_raw_parts(encoding, &shape, vec![Some(pos), None], coordinates, values)
}

/// A `CsrMatrix` from the arrays of a generated CSR struct (`into_raw_parts()`: `dim_shape`,
/// `pos_1`, `crd_1`, `values`), of any widths. Zero-copy when `P` and `C` are `usize`; widened
/// otherwise.
///
/// Errors: [`StorageError::Invariant`] naming the rule and position for wrong lengths, offsets
/// that decrease or pass the indices, indices out of range, unsorted or repeated within a row.
pub fn csr_from_parts<V, P: Index, C: Index>(
    dim_shape: [usize; 2],
    pos: Vec<P>,
    crd: Vec<C>,
    values: Vec<V>,
) -> Result<CsrMatrix<V>, StorageError> {
    let (pos, crd) = parts_into_native(pos, crd);
    csr(dim_shape, pos, crd, values)
}

/// A `CscMatrix` from the arrays of a generated CSC struct; as [`csr_from_parts`].
///
/// Errors: as [`csr_from_parts`], per column.
pub fn csc_from_parts<V, P: Index, C: Index>(
    dim_shape: [usize; 2],
    pos: Vec<P>,
    crd: Vec<C>,
    values: Vec<V>,
) -> Result<CscMatrix<V>, StorageError> {
    let (pos, crd) = parts_into_native(pos, crd);
    csc(dim_shape, pos, crd, values)
}

/// The arrays of `m` in the widths of a generated CSR struct (`pos_1: pos`, `crd_1: crd`), for
/// its `from_raw_parts`. Zero-copy when `P` and `C` are `usize`; narrowed otherwise.
///
/// Errors: [`StorageError::WidthOverflow`] naming level 1 for a number that does not fit.
pub fn csr_into_parts<V, P: Index, C: Index>(
    m: CsrMatrix<V>,
) -> Result<CompressedParts<P, C, V>, StorageError> {
    let shape = [m.nrows(), m.ncols()];
    let (pos, crd, values) = m.disassemble();
    native_into_parts(shape, pos, crd, values)
}

/// The arrays of `m` for a generated CSC struct; as [`csr_into_parts`].
///
/// Errors: as [`csr_into_parts`].
pub fn csc_into_parts<V, P: Index, C: Index>(
    m: CscMatrix<V>,
) -> Result<CompressedParts<P, C, V>, StorageError> {
    let shape = [m.nrows(), m.ncols()];
    let (pos, crd, values) = m.disassemble();
    native_into_parts(shape, pos, crd, values)
}

/// A `CooMatrix` from the arrays of a generated `singleton(soa)` COO struct (`pos_0`, `crd_0`
/// row indices, `crd_1` column indices, `values`). Zero-copy for `usize` coordinates (`pos`,
/// `[0, nse]`, is dropped).
///
/// Errors: [`StorageError::Invariant`] if `pos` is not `[0, nse]`; [`StorageError::Interop`] with
/// nalgebra-sparse's message for lengths that differ or an index out of range.
pub fn coo_from_parts<V, P: Index, C: Index>(
    dim_shape: [usize; 2],
    pos: Vec<P>,
    rows: Vec<C>,
    cols: Vec<C>,
    values: Vec<V>,
) -> Result<CooMatrix<V>, StorageError> {
    let pos: Vec<usize> = pos.into_iter().map(Index::index).collect();
    if pos != [0, values.len()] {
        return Err(StorageError::Invariant {
            level: 0,
            invariant: "COO positions are [0, nse]",
            position: 0,
            detail: format!("{pos:?} for {} values", values.len()),
        });
    }
    let [nrows, ncols] = dim_shape;
    CooMatrix::try_from_triplets(
        nrows,
        ncols,
        vec_into_native(rows),
        vec_into_native(cols),
        values,
    )
    .map_err(|e| refused(PEER, e))
}

/// The arrays of `m` in the widths of a generated `singleton(soa)` COO struct (`pos_0: pos`,
/// `crd_0: rows`, `crd_1: cols`), entries in nalgebra-sparse's order, for its `from_raw_parts`
/// (which checks the order against the level properties). Zero-copy for `usize` coordinates.
///
/// Errors: [`StorageError::WidthOverflow`] naming the level (0 for positions and rows, 1 for
/// columns) for a number that does not fit.
pub fn coo_into_parts<V, P: Index, C: Index>(
    m: CooMatrix<V>,
) -> Result<CooParts<P, C, V>, StorageError> {
    let dim_shape = [m.nrows(), m.ncols()];
    let (rows, cols, values) = m.disassemble();
    Ok(CooParts {
        dim_shape,
        pos: vec_from_native(vec![0, values.len()], 0, BufferKind::Position)?,
        rows: vec_from_native(rows, 0, BufferKind::Coordinate)?,
        cols: vec_from_native(cols, 1, BufferKind::Coordinate)?,
        values,
    })
}
