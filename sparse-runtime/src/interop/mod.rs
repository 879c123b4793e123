//! Conversions between this crate's storage and the Rust peers, each behind its cargo feature
//! (all off by default): [`sprs`](mod@self::sprs) (`sprs::CsMat`, CSR and CSC),
//! [`nalgebra_sparse`](mod@self::nalgebra_sparse) (`CsrMatrix`, `CscMatrix`, `CooMatrix`),
//! [`faer`](mod@self::faer) (`SparseRowMat`, `SparseColMat`) and [`ndarray`](mod@self::ndarray)
//! (dense `Array2`/`ArrayView2`).
//!
//! # Which layout maps to which encoding
//!
//! Rank-2 encodings are recognised by their level formats and their map alone ([`Layout::of`]);
//! level properties and widths are free, and the storage checks them:
//! - CSR: `(i, j) -> (i : dense, j : compressed)`: `pos_1` are the row offsets (rows + 1),
//!   `crd_1` the column indices;
//! - CSC: `(i, j) -> (j : dense, i : compressed)`: `pos_1` are the column offsets (columns + 1),
//!   `crd_1` the row indices;
//! - COO: `(i, j) -> (i : compressed(nonunique), j : singleton)`: `pos_0 = [0, nse]`; with
//!   `singleton(soa)` the row indices are `crd_0` and the column indices `crd_1`, without it
//!   (MLIR's default, array of structs) `crd_0` holds both, interleaved `i0, j0, i1, j1, ..`;
//! - dense (ndarray only): `(i, j) -> (i : dense, j : dense)` is row-major (C order),
//!   `(i, j) -> (j : dense, i : dense)` column-major (Fortran order).
//!
//! Any other encoding is [`StorageError::Interop`] naming the peer and the layout it needs
//! (ndarray aside: it takes every encoding, copying through the dense tensor).
//!
//! # When nothing is copied
//!
//! The peers hold `usize` indices. Positions and coordinates of the native width (`posWidth =
//! crdWidth = 0`, the `usize` buffers of [`IndexBuffer::Native`] or a generated struct's
//! `Vec<usize>` fields) move into the peer's matrix and back without a copy: the same heap
//! buffers, as a pointer comparison in the tests shows; the values always move without a copy.
//! Other widths are converted: widened on the way out (never fails on a 64-bit target), narrowed
//! on the way in, where a number that does not fit is [`StorageError::WidthOverflow`] naming the
//! level, the buffer kind, the number and the width (nothing is converted then). sprs also
//! indexes with `u16`, `u32` and `u64`: its `*_parts_i` functions give a `CsMatI` at a generated
//! struct's own widths (`posWidth = crdWidth = 32` is `CsMatI<V, u32, u32>`), every buffer
//! moved. An
//! array-of-structs COO is split or interleaved (a copy); a faer matrix with per-row (column)
//! counts is compacted (a copy).
//!
//! # Checks
//!
//! No input makes a conversion panic. Into this crate's storage every array is checked by
//! [`DynamicStorage::from_raw_parts`] (all of [`DynamicStorage::validate`]); a generated
//! struct's `from_raw_parts` checks the arrays the `*_into_parts` functions return. Out to a
//! peer, CSR and CSC arrays are first checked by this crate's rules (offsets `n + 1`, from 0,
//! non-decreasing, ending at the number of indices and values; indices in range and strictly
//! increasing per row or column), as [`StorageError::Invariant`] naming the rule and position,
//! because the peers' own checks can panic (faer's `new_checked` asserts; sprs and
//! nalgebra-sparse index before comparing); then the peer's checked constructor runs, and its
//! refusal is [`StorageError::Interop`] with the peer's message. So a `nonordered` or
//! `nonunique` CSR or CSC tensor may be refused on the way out.
//!
//! # Generated structs
//!
//! A format declared with `sparse_format!` takes itself apart with `into_raw_parts()` (fields
//! `dim_shape`, `pos_1`, `crd_1`, `values` for a CSR or CSC) and back with `from_raw_parts`.
//! Each peer module has generic functions over those plain arrays, for every width:
//! `csr_from_parts(dim_shape, pos_1, crd_1, values)` gives the peer's matrix, and
//! `csr_into_parts::<V, P, C>(matrix)` gives [`CompressedParts`] to fill the struct's `Parts`
//! with (the same for `csc_`, and for nalgebra-sparse's COO `coo_` with [`CooParts`], for a
//! `singleton(soa)` COO).

use std::any::Any;

use sparse_ir::ir::{AffineExpr, AffineMap, Encoding, LevelFormat, LevelType, VerifiedEncoding};

use crate::error::{BufferKind, StorageError};
use crate::index::{narrow_vec, Index, IndexBuffer};
use crate::packed::CrdBuffer;
use crate::DynamicStorage;

#[cfg(feature = "faer")]
pub mod faer;
#[cfg(feature = "nalgebra-sparse")]
pub mod nalgebra_sparse;
#[cfg(feature = "ndarray")]
pub mod ndarray;
#[cfg(feature = "sprs")]
pub mod sprs;

/// A rank-2 layout the peers share, recognised from an encoding (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `(i, j) -> (i : dense, j : compressed)`.
    Csr,
    /// `(i, j) -> (j : dense, i : compressed)`.
    Csc,
    /// `(i, j) -> (i : compressed(nonunique), j : singleton)`, `soa` or not.
    Coo,
    /// `(i, j) -> (i : dense, j : dense)`: row-major.
    DenseRowMajor,
    /// `(i, j) -> (j : dense, i : dense)`: column-major.
    DenseColMajor,
}

impl Layout {
    /// The layout of `encoding`: its level formats and its map (the identity or the transpose),
    /// whatever its level properties and widths; `None` for anything else (another rank, other
    /// formats, blocks, slices).
    pub fn of(encoding: &Encoding) -> Option<Layout> {
        if encoding.dim_rank() != 2 || encoding.lvl_rank() != 2 || encoding.dim_slices.is_some() {
            return None;
        }
        let r = &encoding.dim_to_lvl.results;
        let identity = r[0].as_var() == Some(0) && r[1].as_var() == Some(1);
        let transpose = r[0].as_var() == Some(1) && r[1].as_var() == Some(0);
        use LevelFormat::{Compressed, Dense, Singleton};
        match (encoding.lvl_types[0].format, encoding.lvl_types[1].format) {
            (Dense, Compressed) if identity => Some(Layout::Csr),
            (Dense, Compressed) if transpose => Some(Layout::Csc),
            (Compressed, Singleton) if identity => Some(Layout::Coo),
            (Dense, Dense) if identity => Some(Layout::DenseRowMajor),
            (Dense, Dense) if transpose => Some(Layout::DenseColMajor),
            _ => None,
        }
    }

    /// The canonical encoding of the layout with `pos_width` and `crd_width` (0 for native
    /// `usize`, the zero-copy width; 8, 16, 32, 64): default level properties, except the COO's
    /// first level, `nonunique`, and its singleton, `soa` (so its index arrays are the peers'
    /// row and column arrays).
    ///
    /// Errors: [`StorageError::InvalidEncoding`] with the verifier's messages for a width it
    /// refuses.
    pub fn encoding(
        self,
        pos_width: u32,
        crd_width: u32,
    ) -> Result<VerifiedEncoding, StorageError> {
        let lt = LevelType::new;
        let (types, transpose) = match self {
            Layout::Csr => (
                vec![lt(LevelFormat::Dense), lt(LevelFormat::Compressed)],
                false,
            ),
            Layout::Csc => (
                vec![lt(LevelFormat::Dense), lt(LevelFormat::Compressed)],
                true,
            ),
            Layout::Coo => {
                let mut first = lt(LevelFormat::Compressed);
                first.properties.nonunique = true;
                let mut second = lt(LevelFormat::Singleton);
                second.properties.soa = true;
                (vec![first, second], false)
            }
            Layout::DenseRowMajor => (vec![lt(LevelFormat::Dense), lt(LevelFormat::Dense)], false),
            Layout::DenseColMajor => (vec![lt(LevelFormat::Dense), lt(LevelFormat::Dense)], true),
        };
        let map = |a, b| AffineMap {
            num_vars: 2,
            num_symbols: 0,
            results: vec![AffineExpr::Var(a), AffineExpr::Var(b)],
        };
        let (a, b) = if transpose { (1, 0) } else { (0, 1) };
        Encoding {
            lvl_types: types,
            dim_to_lvl: map(a, b),
            lvl_to_dim: map(a, b),
            pos_width,
            crd_width,
            dim_slices: None,
            explicit_val: None,
            implicit_val: None,
        }
        .verify()
        .map_err(|errors| StorageError::InvalidEncoding {
            messages: errors.iter().map(|e| e.to_string()).collect(),
        })
    }

    /// The encoding text of the layout's canonical form, for messages.
    fn describe(self) -> &'static str {
        match self {
            Layout::Csr => "CSR `(i, j) -> (i : dense, j : compressed)`",
            Layout::Csc => "CSC `(i, j) -> (j : dense, i : compressed)`",
            Layout::Coo => "COO `(i, j) -> (i : compressed(nonunique), j : singleton)`",
            Layout::DenseRowMajor => "dense row-major `(i, j) -> (i : dense, j : dense)`",
            Layout::DenseColMajor => "dense column-major `(i, j) -> (j : dense, i : dense)`",
        }
    }
}

/// The arrays of a CSR or CSC matrix in the widths of a generated struct's fields: what the
/// `csr_into_parts` / `csc_into_parts` functions of the peer modules return, to be put into the
/// struct's `Parts` (`pos_1: pos`, `crd_1: crd`) and given to its `from_raw_parts`, which
/// checks them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompressedParts<P, C, V> {
    /// `[rows, columns]`.
    pub dim_shape: [usize; 2],
    /// Offsets into `crd` and `values`: rows + 1 of them for CSR, columns + 1 for CSC.
    pub pos: Vec<P>,
    /// Column indices (CSR) or row indices (CSC), one per value.
    pub crd: Vec<C>,
    /// The stored values.
    pub values: Vec<V>,
}

/// The arrays of a COO matrix in the widths of a generated `singleton(soa)` COO struct's fields
/// (`pos_0: pos`, `crd_0: rows`, `crd_1: cols`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CooParts<P, C, V> {
    /// `[rows, columns]`.
    pub dim_shape: [usize; 2],
    /// `[0, nse]`.
    pub pos: Vec<P>,
    /// Row index of each entry.
    pub rows: Vec<C>,
    /// Column index of each entry.
    pub cols: Vec<C>,
    /// The stored values.
    pub values: Vec<V>,
}

/// The error for an encoding that is not the layout a peer needs.
pub(crate) fn wrong_layout(
    peer: &'static str,
    want: &[Layout],
    encoding: &Encoding,
) -> StorageError {
    let want: Vec<&str> = want.iter().map(|l| l.describe()).collect();
    StorageError::Interop {
        peer,
        reason: format!("needs {}, not `{encoding}`", want.join(" or ")),
    }
}

/// A peer's refusal as a [`StorageError::Interop`].
pub(crate) fn refused(peer: &'static str, reason: impl std::fmt::Display) -> StorageError {
    StorageError::Interop {
        peer,
        reason: reason.to_string(),
    }
}

/// `v` as `usize` numbers: the same buffer when `P` is `usize` (no copy, no pass over it),
/// widened otherwise (in place for `u64` on 64-bit targets).
pub(crate) fn vec_into_native<P: Index>(v: Vec<P>) -> Vec<usize> {
    let any: Box<dyn Any> = Box::new(v);
    match any.downcast::<Vec<usize>>() {
        Ok(native) => *native,
        Err(any) => match any.downcast::<Vec<P>>() {
            Ok(v) => v.into_iter().map(Index::index).collect(),
            Err(_) => unreachable!("the box holds a Vec<P>"),
        },
    }
}

/// `v` as `P` numbers: the same buffer when `P` is `usize` (no copy), narrowed otherwise.
///
/// Errors: [`StorageError::WidthOverflow`] naming `level`, `kind`, the first number that does
/// not fit and `P`'s width.
pub(crate) fn vec_from_native<P: Index>(
    v: Vec<usize>,
    level: usize,
    kind: BufferKind,
) -> Result<Vec<P>, StorageError> {
    let any: Box<dyn Any> = Box::new(v);
    match any.downcast::<Vec<P>>() {
        Ok(same) => Ok(*same),
        Err(any) => match any.downcast::<Vec<usize>>() {
            Ok(v) => narrow_vec::<P>(*v).map_err(|value| StorageError::WidthOverflow {
                level,
                kind,
                value,
                width: P::WIDTH,
            }),
            Err(_) => unreachable!("the box holds a Vec<usize>"),
        },
    }
}

/// An index buffer of any width as `usize` numbers (the same buffer for [`IndexBuffer::Native`]).
pub(crate) fn buffer_into_native(b: IndexBuffer) -> Vec<usize> {
    match b {
        IndexBuffer::Native(v) => v,
        IndexBuffer::U8(v) => vec_into_native(v),
        IndexBuffer::U16(v) => vec_into_native(v),
        IndexBuffer::U32(v) => vec_into_native(v),
        IndexBuffer::U64(v) => vec_into_native(v),
    }
}

/// `usize` numbers as a `width`-bit index buffer (the same buffer for width 0).
///
/// Errors: [`StorageError::WidthOverflow`] naming `level` and `kind`; [`StorageError::Unsupported`]
/// for a width no byte-aligned buffer has.
pub(crate) fn buffer_from_native(
    width: u32,
    v: Vec<usize>,
    level: usize,
    kind: BufferKind,
) -> Result<IndexBuffer, StorageError> {
    match IndexBuffer::from_native(width, v) {
        Some(Ok(b)) => Ok(b),
        Some(Err(value)) => Err(StorageError::WidthOverflow {
            level,
            kind,
            value,
            width,
        }),
        None => Err(StorageError::Unsupported {
            reason: format!("level {level}: no {kind} buffer of width {width}"),
        }),
    }
}

/// A coordinate buffer as `usize` numbers; `None` for a packed one (never for the layouts here:
/// packed widths belong to n:m levels).
fn crd_into_native(b: CrdBuffer) -> Option<Vec<usize>> {
    match b {
        CrdBuffer::Plain(b) => Some(buffer_into_native(b)),
        CrdBuffer::Packed(_) => None,
    }
}

/// A CSR or CSC storage taken apart: layout, `[rows, columns]`, positions, coordinates (as
/// `usize`, the same buffers at the native width) and values.
pub(crate) struct Compressed<V> {
    pub layout: Layout,
    pub shape: [usize; 2],
    pub pos: Vec<usize>,
    pub crd: Vec<usize>,
    pub values: Vec<V>,
}

/// Takes a CSR or CSC storage apart for `peer` (which accepts the layouts `want`).
///
/// Errors: [`StorageError::Interop`] for another layout.
pub(crate) fn take_compressed<V: crate::Value>(
    peer: &'static str,
    want: &[Layout],
    s: DynamicStorage<V>,
) -> Result<Compressed<V>, StorageError> {
    let layout = Layout::of(s.encoding())
        .filter(|l| want.contains(l))
        .ok_or_else(|| wrong_layout(peer, want, s.encoding()))?;
    let parts = s.into_raw_parts_with_values();
    let mut positions = parts.positions;
    let mut coordinates = parts.coordinates;
    let pos = positions[1].take().map(buffer_into_native);
    let crd = coordinates[1].take().and_then(crd_into_native);
    match (pos, crd) {
        (Some(pos), Some(crd)) => Ok(Compressed {
            layout,
            shape: [parts.dim_shape[0], parts.dim_shape[1]],
            pos,
            crd,
            values: parts.values,
        }),
        _ => Err(wrong_layout(peer, want, &parts.encoding)),
    }
}

/// Builds a CSR or CSC storage (`layout`, which `encoding` must have) from `usize` arrays,
/// narrowing them to the encoding's widths and checking every invariant.
///
/// Errors: [`StorageError::Interop`] if `encoding` is not `layout`;
/// [`StorageError::WidthOverflow`]; as [`DynamicStorage::from_raw_parts`].
pub(crate) fn build_compressed<V: crate::Value>(
    peer: &'static str,
    layout: Layout,
    encoding: &VerifiedEncoding,
    shape: [usize; 2],
    pos: Vec<usize>,
    crd: Vec<usize>,
    values: Vec<V>,
) -> Result<DynamicStorage<V>, StorageError> {
    if Layout::of(encoding) != Some(layout) {
        return Err(wrong_layout(peer, &[layout], encoding));
    }
    let pos = buffer_from_native(encoding.pos_width, pos, 1, BufferKind::Position)?;
    let crd = buffer_from_native(encoding.crd_width, crd, 1, BufferKind::Coordinate)?;
    DynamicStorage::from_raw_parts(
        encoding,
        &shape,
        vec![None, Some(pos)],
        vec![None, Some(crd.into())],
        values,
    )
}

/// Generic `Parts` arrays as `usize` (the same buffers when `P` and `C` are `usize`).
pub(crate) fn parts_into_native<P: Index, C: Index>(
    pos: Vec<P>,
    crd: Vec<C>,
) -> (Vec<usize>, Vec<usize>) {
    (vec_into_native(pos), vec_into_native(crd))
}

/// `usize` arrays as [`CompressedParts`] of the widths `P` and `C` (level 1's buffers).
///
/// Errors: [`StorageError::WidthOverflow`] naming level 1.
pub(crate) fn native_into_parts<P: Index, C: Index, V>(
    dim_shape: [usize; 2],
    pos: Vec<usize>,
    crd: Vec<usize>,
    values: Vec<V>,
) -> Result<CompressedParts<P, C, V>, StorageError> {
    Ok(CompressedParts {
        dim_shape,
        pos: vec_from_native(pos, 1, BufferKind::Position)?,
        crd: vec_from_native(crd, 1, BufferKind::Coordinate)?,
        values,
    })
}

/// Checks CSR (or, transposed, CSC) arrays of `outer` rows and `inner` columns against the rules
/// of the peers (offsets `outer + 1`, starting at 0, non-decreasing, ending at the number of
/// indices and values; indices below `inner` and strictly increasing in each row), without
/// panicking.
///
/// Errors: [`StorageError::Invariant`] naming level 1, the rule and the position.
pub(crate) fn check_compressed<P: Index, C: Index>(
    outer: usize,
    inner: usize,
    pos: &[P],
    crd: &[C],
    nvalues: usize,
) -> Result<(), StorageError> {
    let bad = |invariant: &'static str, position: usize, detail: String| StorageError::Invariant {
        level: 1,
        invariant,
        position,
        detail,
    };
    if outer.checked_add(1) != Some(pos.len()) {
        return Err(bad(
            "positions length",
            pos.len(),
            format!("{} positions for {outer} segments", pos.len()),
        ));
    }
    if pos[0].index() != 0 {
        return Err(bad(
            "positions start at 0",
            0,
            format!("pos[0] = {}", pos[0]),
        ));
    }
    if pos[outer].index() != crd.len() || crd.len() != nvalues {
        return Err(bad(
            "last position is the number of entries",
            outer,
            format!(
                "pos[{outer}] = {}, {} coordinates, {nvalues} values",
                pos[outer],
                crd.len()
            ),
        ));
    }
    for o in 0..outer {
        let (lo, hi) = (pos[o].index(), pos[o + 1].index());
        if lo > hi {
            return Err(bad(
                "positions non-decreasing",
                o + 1,
                format!("pos[{o}] = {lo} > pos[{}] = {hi}", o + 1),
            ));
        }
        if hi > crd.len() {
            return Err(bad(
                "positions within the coordinates",
                o + 1,
                format!("pos[{}] = {hi} > {} coordinates", o + 1, crd.len()),
            ));
        }
        for p in lo..hi {
            if crd[p].index() >= inner {
                return Err(bad(
                    "coordinates in range",
                    p,
                    format!("{} is not below {inner}", crd[p]),
                ));
            }
            if p > lo && crd[p - 1] >= crd[p] {
                return Err(bad(
                    "coordinates strictly increasing",
                    p,
                    format!("{} after {}", crd[p], crd[p - 1]),
                ));
            }
        }
    }
    Ok(())
}
