//! The parts of a `sparse_format!` struct that are the same for every format, written once.
//!
//! The generated inherent methods (`from_coo_tensor`, `from_dense`, `to_dense`, `to_coo`,
//! `convert`, `spmv_par`, ...) are one-line calls into this module, so each generated struct
//! carries only what its format decides: its arrays, its assembly, its loops. A generated struct
//! implements [`Entries`] (its nested-loop visit); the functions here are generic over it.
//!
//! Shapes are dimension sizes in elements, `D` the dimension rank. Errors are
//! [`StorageError`]s, as the generated methods document them.

use crate::storage::FromCoo;
use crate::{CooTensor, Index, StorageError, Value};

/// A tensor that can visit its stored entries in storage order with dimension coordinates:
/// what every generated struct provides (as nested loops over its levels).
pub trait Entries<const D: usize> {
    /// The value type.
    type Value;
    /// The dimension sizes.
    fn shape_array(&self) -> [usize; D];
    /// Calls `f(dimension coordinates, &value)` for every stored entry (explicit zeros
    /// included) in storage order.
    fn visit(&self, f: impl FnMut([usize; D], &Self::Value));
}

/// The shape of a COO tensor of rank `D` and its entries as `(coordinates, value)`, for
/// `from_coo`.
///
/// Errors: [`StorageError::RankMismatch`] if the rank is not `D`;
/// [`StorageError::LengthMismatch`] (operand `"COO coordinates"`) if there are not `D`
/// coordinates per value.
#[allow(clippy::type_complexity)]
pub fn coo_entries<const D: usize, V: Value>(
    coo: &CooTensor<V>,
) -> Result<([usize; D], impl Iterator<Item = ([usize; D], V)> + '_), StorageError> {
    let shape: [usize; D] =
        coo.shape
            .as_slice()
            .try_into()
            .map_err(|_| StorageError::RankMismatch {
                expected: D,
                got: coo.shape.len(),
            })?;
    let expected = coo.values.len().saturating_mul(D);
    if coo.coords.len() != expected {
        return Err(StorageError::LengthMismatch {
            operand: "COO coordinates",
            expected,
            got: coo.coords.len(),
        });
    }
    let entries = coo.coords.chunks_exact(D).map(|c| {
        let mut a = [0usize; D];
        a.copy_from_slice(c);
        a
    });
    Ok((shape, entries.zip(coo.values.iter().copied())))
}

/// The entries of a dense row-major array of `shape` (last dimension fastest) that are not
/// zero, as `(coordinates, value)`, for `from_coo`.
///
/// Errors: [`StorageError::ShapeOverflow`] if the element count does not fit `usize`;
/// [`StorageError::LengthMismatch`] (operand `"dense input"`) if `data.len()` is not the
/// product of `shape`.
pub fn dense_entries<const D: usize, V: Value>(
    shape: [usize; D],
    data: &[V],
) -> Result<impl Iterator<Item = ([usize; D], V)> + '_, StorageError> {
    let total = crate::dynamic::checked_product(&shape)?;
    if data.len() != total {
        return Err(StorageError::LengthMismatch {
            operand: "dense input",
            expected: total,
            got: data.len(),
        });
    }
    let mut idx = [0usize; D];
    Ok(data
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.is_zero())
        .map(move |(flat, v)| {
            crate::dynamic::unflatten(flat, &shape, &mut idx);
            (idx, *v)
        }))
}

/// The dense row-major array (last dimension fastest) of `s`; stored duplicates are summed.
///
/// Errors: [`StorageError::ShapeOverflow`] if the element count does not fit `usize`.
pub fn to_dense<const D: usize, V: Value, S: Entries<D, Value = V>>(
    s: &S,
) -> Result<Vec<V>, StorageError> {
    let shape = s.shape_array();
    let total = crate::dynamic::checked_product(&shape)?;
    let mut out = vec![V::zero(); total];
    s.visit(|c, v| {
        let flat = c
            .iter()
            .zip(shape.iter())
            .fold(0usize, |acc, (c, s)| acc * s + c);
        out[flat] += *v;
    });
    Ok(out)
}

/// All stored entries of `s` (explicit zeros included) as a COO tensor in storage order;
/// `nse` is the number of stored entries (the capacity to reserve).
pub fn to_coo<const D: usize, V: Value, S: Entries<D, Value = V>>(
    s: &S,
    nse: usize,
) -> CooTensor<V> {
    let mut coo = CooTensor::new(s.shape_array().to_vec());
    coo.coords.reserve(nse.saturating_mul(D));
    coo.values.reserve(nse);
    s.visit(|c, v| coo.push(&c, *v));
    coo
}

/// `s` in another format `T`, re-assembled from the stored entries that are not zero (explicit
/// zeros of `s` are not carried over, as in `DynamicStorage::convert`).
///
/// Errors: as `T::from_coo_tensor`.
pub fn convert<const D: usize, V: Value, S: Entries<D, Value = V>, T: FromCoo<V>>(
    s: &S,
) -> Result<T, StorageError> {
    let mut coo = CooTensor::new(s.shape_array().to_vec());
    s.visit(|c, v| {
        if !v.is_zero() {
            coo.push(&c, *v);
        }
    });
    T::from_coo_tensor(&coo)
}

/// Checks the operands of `y = A · x` for a matrix of `shape` (rows, columns).
///
/// Errors: [`StorageError::LengthMismatch`] naming `"x"` (must have `shape[1]` elements) or
/// `"y"` (must have `shape[0]`).
pub fn check_spmv(shape: [usize; 2], x: usize, y: usize) -> Result<(), StorageError> {
    if x != shape[1] {
        return Err(StorageError::LengthMismatch {
            operand: "x",
            expected: shape[1],
            got: x,
        });
    }
    if y != shape[0] {
        return Err(StorageError::LengthMismatch {
            operand: "y",
            expected: shape[0],
            got: y,
        });
    }
    Ok(())
}

/// Runs a row kernel over `y` in parallel (rayon). `y` holds `unit` elements per row unit (1
/// for CSR, the block height for BSR); `before(r)` is the number of stored entries before unit
/// `r` (non-decreasing, defined for `r <= units`), used to split the units into ranges of about
/// equal work; `rows(chunk, first_unit)` computes the part of `y` starting at unit
/// `first_unit`. Each range is one task; the result equals one serial `rows(y, 0)`.
pub fn par_rows<V: Send>(
    y: &mut [V],
    unit: usize,
    before: impl Fn(usize) -> usize,
    rows: impl Fn(&mut [V], usize) + Sync,
) {
    let units = y.len() / unit.max(1);
    let splits = crate::storage::balanced_splits(units, rayon::current_num_threads() * 4, before);
    let rows = &rows;
    rayon::scope(|s| {
        let mut rest: &mut [V] = y;
        for w in splits.windows(2) {
            let (chunk, tail) = std::mem::take(&mut rest).split_at_mut((w[1] - w[0]) * unit);
            rest = tail;
            let row0 = w[0];
            if !chunk.is_empty() {
                s.spawn(move |_| rows(chunk, row0));
            }
        }
    });
}

/// Appends `value` `times` times to the positions array `buf` of level `level`, as assembly
/// closes `times` segments; `lvl_sizes` names the shape in an overflow error.
///
/// Errors: [`StorageError::WidthOverflow`] if `value` does not fit `T`;
/// [`StorageError::ShapeOverflow`] if the array cannot grow.
pub fn push_positions<T: Index>(
    buf: &mut Vec<T>,
    value: usize,
    times: usize,
    level: usize,
    lvl_sizes: &[usize],
) -> Result<(), StorageError> {
    let x = T::from_usize(value).ok_or(StorageError::WidthOverflow {
        level,
        kind: crate::BufferKind::Position,
        value,
        width: T::WIDTH,
    })?;
    buf.try_reserve(times)
        .map_err(|_| StorageError::ShapeOverflow {
            shape: lvl_sizes.to_vec(),
        })?;
    let n = buf.len() + times;
    buf.resize(n, x);
    Ok(())
}

/// Appends the coordinate `crd` to the coordinate array `buf` of level `level`.
///
/// Errors: [`StorageError::WidthOverflow`] if `crd` does not fit `T`.
pub fn push_coordinate<T: Index>(
    buf: &mut Vec<T>,
    crd: usize,
    level: usize,
) -> Result<(), StorageError> {
    let x = T::from_usize(crd).ok_or(StorageError::WidthOverflow {
        level,
        kind: crate::BufferKind::Coordinate,
        value: crd,
        width: T::WIDTH,
    })?;
    buf.push(x);
    Ok(())
}

/// The result of one assembly step of a generated builder.
pub type Step = Result<(), StorageError>;

/// The per-level steps of a generated builder (MLIR's `appendCrd` and `finalizeSegment`, one
/// pair per level), which [`insert_sorted`] drives. `L` is the level rank.
pub trait LevelBuilder<const L: usize> {
    /// The value type.
    type Value: Value;
    /// Per level: `true` if the level is unique (a new node only when its coordinate changes).
    const UNIQUE: [bool; L];
    /// The level coordinates of the last inserted entry (read by n:m levels while appending).
    fn cursor(&mut self) -> &mut [usize; L];
    /// Records a new node with coordinate `crd` at level `l`; `full` coordinates `0..full` of
    /// its segment are already closed.
    ///
    /// Errors: [`StorageError::WidthOverflow`], [`StorageError::ShapeOverflow`] and the level
    /// format's own (n:m block overflow).
    fn append_crd(&mut self, l: usize, full: usize, crd: usize) -> Result<(), StorageError>;
    /// Closes `count` segments of level `l`, the first holding coordinates `0..full`.
    ///
    /// Errors: as [`LevelBuilder::append_crd`].
    fn finalize_segment(&mut self, l: usize, full: usize, count: usize)
        -> Result<(), StorageError>;
    /// Stores the value of the entry just appended at the last level.
    fn push_value(&mut self, v: Self::Value);
}

/// Inserts the entries `keys[order[k]]` (level coordinates) with values `vals[order[k]]` into
/// the builder `b` in the given (level) order and closes every open segment. With `merge`,
/// consecutive equal keys become one entry holding their sum (the last level is unique).
///
/// Errors: the first error of a [`LevelBuilder`] step.
pub fn insert_sorted<const L: usize, V: Value, B: LevelBuilder<L, Value = V>>(
    b: &mut B,
    keys: &[[usize; L]],
    vals: &[V],
    order: &[usize],
    merge: bool,
) -> Result<(), StorageError> {
    fn end_path<const L: usize, B: LevelBuilder<L>>(
        b: &mut B,
        diff: usize,
    ) -> Result<(), StorageError> {
        for l in (diff..L).rev() {
            let full = b.cursor()[l] + 1;
            b.finalize_segment(l, full, 1)?;
        }
        Ok(())
    }
    let n = order.len();
    if n == 0 {
        return b.finalize_segment(0, 0, 1);
    }
    let mut k = 0;
    let mut first = true;
    while k < n {
        let e = order[k];
        let mut v = vals[e];
        k += 1;
        if merge {
            while k < n && keys[order[k]] == keys[e] {
                v += vals[order[k]];
                k += 1;
            }
        }
        let lc = &keys[e];
        // the first level where this entry leaves the previous one's path
        let (diff, mut full) = if first {
            (0, 0)
        } else {
            let cursor = *b.cursor();
            let d = (0..L)
                .find(|&l| !B::UNIQUE[l] || lc[l] != cursor[l])
                .unwrap_or(L - 1);
            end_path(b, d + 1)?;
            (d, cursor[d] + 1)
        };
        for (l, &c) in lc.iter().enumerate().skip(diff) {
            b.append_crd(l, full, c)?;
            full = 0;
            b.cursor()[l] = c;
        }
        b.push_value(v);
        first = false;
    }
    end_path(b, 0)
}
