//! The dynamic (interpreted) storage: any [`Encoding`] built at run time.
//!
//! This is the reference every generated format is tested against: for the same input it must
//! hold exactly the arrays the generated struct holds. Assembly follows MLIR's
//! `SparseTensorStorage` (`lexInsert` / `endPath` / `finalizeSegment` of the sparse runtime
//! library): entries are mapped to level coordinates, put in level order (a counting sort on the
//! first level coordinate, then a stable comparison sort only inside buckets that are not
//! already in order; nothing when the input is sorted), duplicates summed when the last level is
//! unique, then inserted one by one; a dense level fills the coordinates nobody inserted with
//! explicit zeros, a compressed level closes its segments by appending positions. The per-format
//! rules live in `crate::level` (`src/level/`), one module per level format.
//!
//! Supported: `dense`, `batch` (leading), `compressed`, `loose_compressed`, `singleton`, n:m
//! (`structured[n, m]` / `block2_4`, last level below dense levels) with any properties; maps that
//! are permutations, `floordiv`/`mod` block splits with a constant block size, and ELL counting
//! maps. Slices are views over a parent storage ([`DynamicStorage::slice`]). Maps are evaluated
//! in `usize` arithmetic both ways, as the generated code does, so every coordinate below its
//! dimension size maps (also beyond `i64::MAX`).
//!
//! # Arrays
//!
//! For each level `l`: `positions[l]` (compressed: parent-size + 1 entries; loose_compressed:
//! 2 x parent-size entries, `(lo, hi)` pairs; none for the other formats) and `coordinates[l]`
//! (one per stored position of the level; an array-of-structs COO region keeps one interleaved
//! buffer on the region's first level holding all the region's coordinates entry by entry; an n:m
//! level holds the in-block coordinate `0..m` of each stored value, packed four per byte under
//! `crdWidth = 2`), both with the encoding's widths; `values` holds one value per stored position
//! of the last level (`nse`).
//!
//! # Patterns (`explicitVal`)
//!
//! An encoding with `explicitVal = c` stores no values array (`values` is empty): every stored
//! entry holds `c` (converted to `V` by [`FromScalar`](crate::value::FromScalar)), which reads
//! ([`DynamicStorage::get`], iteration, [`DynamicStorage::to_dense`], printing, conversions)
//! give back, and [`DynamicStorage::explicit_value`] returns. Constructors refuse any entry
//! that would hold another value ([`StorageError::ExplicitValueMismatch`]): an input entry
//! (after duplicates are summed by a unique last level) or an explicit zero the format stores
//! (BSR block fill, n:m padding, a dense last level). `implicitVal` (always zero: the verifier
//! refuses any other) is the value of every entry not stored, as without it.
//!
//! # Batch layout
//!
//! Leading `batch` levels (sizes `b0, b1, ..`) make `B = b0 * b1 * ..` independent batches, each
//! stored like a tensor of the remaining levels; every buffer gets a leading batch dimension and
//! is kept flat, batch-major (batch 0's part first; batches flattened row-major over the batch
//! levels), like PyTorch's batched CSR/BSR:
//! - a compressed level's `pos` has shape `[B, P + 1]` (`P` = its parent size within one batch),
//!   and its numbers are *local* to the batch (every batch's part starts at 0);
//! - a loose_compressed level's `pos` has shape `[B, 2P]`, local to the batch;
//! - every `crd` buffer has shape `[B, C]` (`C` = stored coordinates of the level per batch);
//! - `values` has shape `[B, nse / B]`.
//!
//! Batches may have different patterns, but every batch must store the same number of positions
//! at every level (the same nse for CSR-like formats), otherwise
//! [`StorageError::BatchNse`] names the level and the first batch that differs.
//!
//! # ELL counting
//!
//! `[c](i, j) -> (c * K * i : dense, i : dense, j : compressed)`: the counting level (the one
//! whose expression holds the symbol; here level 0) has extent `K`; the k-th stored element of
//! row `i` (in level order of the other levels, after merging duplicates) gets level coordinates
//! `(k, i, j)`. The arrays are those of the `(K, rows, cols)` tensor with the encoding's level
//! formats: for the form above `pos[2]` has `K * rows + 1` entries (slice `k`, row `i` is segment
//! `k * rows + i`, holding 0 or 1 coordinate), `crd[2]` the column of each stored element, slice
//! by slice, and `values` in the same order. A row with more than `K` elements is
//! [`StorageError::EllRowOverflow`]. Iteration maps back through `lvl_to_dim` (which ignores the
//! counting level); `get` tries every slice. `from_raw_parts` checks this layout (entry `k` of a
//! row in slice `k`, and no entry twice when the last level is unique).

use std::fmt;

use sparse_ir::ir::{AffineExpr, Encoding, LevelFormat, VerifiedEncoding};
use sparse_ir::level::PositionsArray;

use crate::coo::CooTensor;
use crate::error::StorageError;
use crate::index::{IndexBuffer, IndexSlice};
use crate::level::{dispatch, Arrays, Builder, LevelKind};
use crate::packed::{CrdBuffer, IndexView};
use crate::storage::{self, SparseStorage};
use crate::value::Value;

/// A sparse tensor whose format is an [`Encoding`] value chosen at run time.
///
/// See the module docs for the arrays (including the batch and ELL layouts).
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicStorage<V> {
    encoding: VerifiedEncoding,
    dim_shape: Vec<usize>,
    lvl_sizes: Vec<usize>,
    positions: Vec<Option<IndexBuffer>>,
    coordinates: Vec<Option<CrdBuffer>>,
    /// Empty when `explicit` is set.
    values: Vec<V>,
    /// The `explicitVal` every stored entry holds (no values array), converted to `V`.
    explicit: Option<V>,
    /// Global stored positions per level.
    counts: Vec<usize>,
    /// Product of the leading batch level sizes (1 without batch levels).
    batches: usize,
    counting: Option<Counting>,
}

/// The arrays of a [`DynamicStorage`] taken apart by [`DynamicStorage::into_raw_parts`]; the
/// arguments of [`DynamicStorage::from_raw_parts`].
#[derive(Clone, Debug, PartialEq)]
pub struct RawParts<V> {
    /// The encoding.
    pub encoding: VerifiedEncoding,
    /// Dimension sizes.
    pub dim_shape: Vec<usize>,
    /// Per level: the positions array, present exactly for compressed and loose_compressed
    /// levels, width `posWidth`.
    pub positions: Vec<Option<IndexBuffer>>,
    /// Per level: the coordinate buffer the level owns (see the module docs), width `crdWidth`.
    pub coordinates: Vec<Option<CrdBuffer>>,
    /// One value per stored position of the last level; empty for an encoding with
    /// `explicitVal` (see the module docs), which stores none.
    pub values: Vec<V>,
}

/// The counting level of an ELL map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counting {
    /// The level whose expression holds the symbol.
    level: usize,
    /// The counted dimension (the row).
    dim: usize,
    /// Number of slices `K` (the level's extent).
    slices: usize,
}

/// What storage needs to know about an encoding on a shape.
struct Layout {
    lvl_sizes: Vec<usize>,
    batch_levels: usize,
    batches: usize,
    counting: Option<Counting>,
}

fn contains_symbol(e: &AffineExpr) -> bool {
    match e {
        AffineExpr::Symbol(_) => true,
        AffineExpr::Var(_) | AffineExpr::Constant(_) => false,
        AffineExpr::Add(a, b)
        | AffineExpr::Mul(a, b)
        | AffineExpr::FloorDiv(a, b)
        | AffineExpr::CeilDiv(a, b)
        | AffineExpr::Mod(a, b) => contains_symbol(a) || contains_symbol(b),
    }
}

fn unsupported(reason: impl Into<String>) -> StorageError {
    StorageError::Unsupported {
        reason: reason.into(),
    }
}

/// Checks that the storage layer can hold the (verified) `encoding` with `dim_shape` (slices
/// aside), and derives the level sizes, batches and counting level.
fn analyze(encoding: &Encoding, dim_shape: &[usize]) -> Result<Layout, StorageError> {
    if dim_shape.len() != encoding.dim_rank() {
        return Err(StorageError::RankMismatch {
            expected: encoding.dim_rank(),
            got: dim_shape.len(),
        });
    }
    let lvl_rank = encoding.lvl_rank();
    if encoding.dim_to_lvl.results.len() != lvl_rank || lvl_rank == 0 {
        return Err(unsupported("dim_to_lvl must have one result per level"));
    }
    let batch_levels = encoding
        .lvl_types
        .iter()
        .take_while(|t| t.capabilities().batch)
        .count();
    if encoding.lvl_types[batch_levels..]
        .iter()
        .any(|t| t.capabilities().batch)
    {
        return Err(unsupported("batch levels must be leading"));
    }
    for (l, lt) in encoding.lvl_types.iter().enumerate() {
        if let LevelFormat::NOutOfM { n, m } = lt.format {
            if l + 1 != lvl_rank || !encoding.lvl_types[..l].iter().all(|t| t.is_dense()) {
                return Err(unsupported(format!(
                    "level {l}: an n:m level must be the last level, below dense levels"
                )));
            }
            if n == 0 || n > m {
                return Err(unsupported(format!(
                    "level {l}: structured[{n}, {m}] needs 0 < n <= m"
                )));
            }
        }
    }
    let mut counting = None;
    let mut lvl_sizes = Vec::with_capacity(lvl_rank);
    for (l, r) in encoding.dim_to_lvl.results.iter().enumerate() {
        if contains_symbol(r) {
            let (dim, slices) = r
                .as_counting()
                .filter(|&(d, _)| d < dim_shape.len())
                .ok_or_else(|| {
                    unsupported(format!(
                        "level {l}: a symbol is only stored as an ELL counting level `c * K * i`"
                    ))
                })?;
            if counting.is_some() || encoding.dim_to_lvl.num_symbols != 1 {
                return Err(unsupported(
                    "ELL counting stores one counting symbol and one counting level",
                ));
            }
            counting = Some(Counting {
                level: l,
                dim,
                slices,
            });
            lvl_sizes.push(slices);
            continue;
        }
        let size = match r {
            AffineExpr::Var(d) => dim_shape.get(*d).copied(),
            AffineExpr::FloorDiv(a, b) => match (
                a.as_var(),
                b.as_constant().and_then(|b| usize::try_from(b).ok()),
            ) {
                (Some(d), Some(b)) if b > 0 && d < dim_shape.len() => {
                    if !dim_shape[d].is_multiple_of(b) {
                        return Err(StorageError::BlockShape {
                            dim: d,
                            size: dim_shape[d],
                            block: b,
                        });
                    }
                    Some(dim_shape[d] / b)
                }
                _ => None,
            },
            AffineExpr::Mod(a, b) => a
                .as_var()
                .filter(|&d| d < dim_shape.len())
                .and_then(|_| b.as_constant())
                .and_then(|b| usize::try_from(b).ok())
                .filter(|&b| b > 0),
            _ => None,
        };
        lvl_sizes.push(size.ok_or_else(|| {
            unsupported(format!("level {l}: level sizes cannot be derived from the map (only permutations, floordiv/mod blocks and ELL counting)"))
        })?);
    }
    if let Some(LevelFormat::NOutOfM { m, .. }) = encoding.lvl_types.last().map(|t| t.format) {
        if lvl_sizes[lvl_rank - 1] != m as usize {
            return Err(unsupported(format!(
                "level {}: an n:m level needs the in-block map `j mod {m}`",
                lvl_rank - 1
            )));
        }
    }
    for l in 0..batch_levels {
        if encoding.dim_to_lvl.results[l].as_var().is_none() {
            return Err(unsupported(format!(
                "level {l}: a batch level must be a bare dimension"
            )));
        }
    }
    let batches = lvl_sizes[..batch_levels]
        .iter()
        .try_fold(1usize, |a, &s| a.checked_mul(s))
        .ok_or_else(|| StorageError::ShapeOverflow {
            shape: dim_shape.to_vec(),
        })?;
    Ok(Layout {
        lvl_sizes,
        batch_levels,
        batches,
        counting,
    })
}

/// Evaluates `e` over the non-negative coordinates `vars` in `usize` arithmetic, as the
/// generated code does (so coordinates beyond `i64::MAX` map as they do there); a symbol is 0
/// (the ELL counting level's coordinate is assigned during assembly). `None` for a negative
/// constant, a division by zero or an overflow.
fn eval_usize(e: &AffineExpr, vars: &[usize]) -> Option<usize> {
    let both = |a: &AffineExpr, b: &AffineExpr| Some((eval_usize(a, vars)?, eval_usize(b, vars)?));
    match e {
        AffineExpr::Var(v) => vars.get(*v).copied(),
        AffineExpr::Symbol(_) => Some(0),
        AffineExpr::Constant(c) => usize::try_from(*c).ok(),
        AffineExpr::Add(a, b) => both(a, b).and_then(|(a, b)| a.checked_add(b)),
        AffineExpr::Mul(a, b) => both(a, b).and_then(|(a, b)| a.checked_mul(b)),
        AffineExpr::FloorDiv(a, b) => both(a, b).and_then(|(a, b)| a.checked_div(b)),
        AffineExpr::CeilDiv(a, b) => both(a, b).and_then(|(a, b)| (b != 0).then(|| a.div_ceil(b))),
        AffineExpr::Mod(a, b) => both(a, b).and_then(|(a, b)| a.checked_rem(b)),
    }
}

/// Maps dimension coordinates to level coordinates (`usize` arithmetic, see [`eval_usize`]); a
/// counting level gets 0. `Err(l)` names the first level whose expression does not evaluate
/// (never for the maps [`analyze`] accepts: permutations, `d floordiv b`, `d mod b`, ELL
/// counting).
fn dim_to_lvl(
    enc: &Encoding,
    perm: Option<&[usize]>,
    dc: &[usize],
    lc: &mut [usize],
) -> Result<(), usize> {
    if let Some(perm) = perm {
        for (l, d) in perm.iter().enumerate() {
            lc[l] = *dc.get(*d).ok_or(l)?;
        }
        return Ok(());
    }
    for (l, r) in enc.dim_to_lvl.results.iter().enumerate() {
        lc[l] = eval_usize(r, dc).ok_or(l)?;
    }
    Ok(())
}

/// Maps level coordinates back to dimension coordinates through `lvl_to_dim`, in `usize`
/// arithmetic (the generated code's); falls back to the encoding's `i64` evaluation for an
/// expression with a negative term.
fn lvl_to_dim(enc: &Encoding, lc: &[usize], dc: &mut [usize]) {
    for (d, r) in enc.lvl_to_dim.results.iter().enumerate() {
        match eval_usize(r, lc) {
            Some(c) => dc[d] = c,
            None => {
                enc.lvl_to_dim_coords(lc, dc);
                return;
            }
        }
    }
}

/// The order that puts `n` entries (keys of `r` level coordinates each, entry-major) in level
/// order, stably: identity when already sorted; else a counting sort on the first level
/// coordinate (when the first level size is at most `4n + 1024`) followed by a stable comparison
/// sort of the buckets that are not in order; else a stable comparison sort.
///
/// `keys` must be below `size0` on level 0 (the counting sort's bucket count). Generated code
/// calls this with its `[usize; L]` keys flattened, so both sides order entries identically.
pub fn level_order(keys: &[usize], r: usize, n: usize, size0: usize) -> Vec<usize> {
    let key = |e: usize| &keys[e * r..(e + 1) * r];
    let mut order: Vec<usize> = (0..n).collect();
    if r == 0 || (1..n).all(|e| key(e - 1) <= key(e)) {
        return order;
    }
    if size0 <= n.saturating_mul(4).saturating_add(1024) {
        let mut start = vec![0usize; size0 + 1];
        for e in 0..n {
            start[keys[e * r] + 1] += 1;
        }
        crate::index::running_sum(&mut start);
        let bounds = start.clone();
        for e in 0..n {
            let b = keys[e * r];
            order[start[b]] = e;
            start[b] += 1;
        }
        if r > 1 {
            for b in 0..size0 {
                let bucket = &mut order[bounds[b]..bounds[b + 1]];
                if !bucket.windows(2).all(|w| key(w[0])[1..] <= key(w[1])[1..]) {
                    bucket.sort_by(|&a, &b| key(a)[1..].cmp(&key(b)[1..]));
                }
            }
        }
    } else {
        order.sort_by(|&a, &b| key(a).cmp(key(b)));
    }
    order
}

/// Sort keys for encodings with `nonordered` levels: `keys` (`n` entries of `r` level
/// coordinates, entry-major) with the coordinate of every nonordered level `l` replaced by the
/// input-order rank of the first entry with the same coordinates on levels `0..=l`. Sorting by
/// these keys keeps the input order of a nonordered level's coordinates inside each segment
/// (first occurrence first, duplicates adjacent) and sorts every ordered level. `None` when no
/// level is nonordered. The level-0 keys stay below `max(n, size of level 0)`.
pub fn nonordered_sort_keys(
    keys: &[usize],
    r: usize,
    n: usize,
    nonordered: &[bool],
) -> Option<Vec<usize>> {
    if !nonordered.iter().any(|&b| b) {
        return None;
    }
    let mut out = keys.to_vec();
    for l in (0..r).filter(|&l| nonordered[l]) {
        let mut first: std::collections::HashMap<&[usize], usize> =
            std::collections::HashMap::new();
        for e in 0..n {
            let prefix = &keys[e * r..e * r + l + 1];
            let next = first.len();
            out[e * r + l] = *first.entry(prefix).or_insert(next);
        }
    }
    Some(out)
}

/// Rebases the global positions of level `l` (format `format`, compressed or loose_compressed;
/// other formats are copied) to batch-local ones (module docs, "Batch layout"), checking that
/// every batch stores the same number of positions. A copying form of
/// [`rebase_batches_in_place`].
///
/// Errors: [`StorageError::BatchNse`] naming the level and the first batch that differs.
pub fn rebase_batches(
    l: usize,
    format: LevelFormat,
    global: &[usize],
    batches: usize,
) -> Result<Vec<usize>, StorageError> {
    let mut out = Vec::with_capacity(global.len() + batches);
    out.extend_from_slice(global);
    rebase_batches_in_place(l, format, &mut out, batches)?;
    Ok(out)
}

/// Rebases the global positions `pos` of level `l` (format `format`) to batch-local ones in
/// place (module docs, "Batch layout"), checking that every batch stores the same number of
/// positions; the dynamic storage's and the generated builders' last step for batched formats.
///
/// A compressed level's `B * P + 1` global positions (`P` parents per batch) become `B * (P + 1)`
/// local ones: the vector grows by `B - 1` (reserve them beforehand to avoid a reallocation) and
/// is rewritten from the back, without a second buffer. A loose_compressed level's `2 * B * P`
/// pairs keep their length. Other formats are left as they are; zero batches empty `pos`.
///
/// Errors: [`StorageError::BatchNse`] naming the level and the first batch that differs (`pos`
/// is then unspecified).
pub fn rebase_batches_in_place(
    l: usize,
    format: LevelFormat,
    pos: &mut Vec<usize>,
    batches: usize,
) -> Result<(), StorageError> {
    if batches == 0 {
        pos.clear();
        return Ok(());
    }
    let at = |pos: &[usize], i: usize| pos.get(i).copied().unwrap_or(0);
    let mut expected = None;
    let mut check = |b: usize, got: usize| {
        let want = *expected.get_or_insert(got);
        if got == want {
            Ok(())
        } else {
            Err(StorageError::BatchNse {
                level: l,
                batch: b,
                expected: want,
                got,
            })
        }
    };
    match format.capabilities().positions {
        PositionsArray::SegmentBounds if !pos.is_empty() => {
            let per = (pos.len() - 1) / batches;
            for b in 0..batches {
                check(b, at(pos, (b + 1) * per).saturating_sub(at(pos, b * per)))?;
            }
            // batch b's positions move from b * per to b * (per + 1): back to front, every
            // entry is read before anything is written over it
            pos.resize(batches * (per + 1), 0);
            for b in (0..batches).rev() {
                let base = pos[b * per];
                for r in (0..=per).rev() {
                    pos[b * (per + 1) + r] = pos[b * per + r].saturating_sub(base);
                }
            }
        }
        PositionsArray::LoHiPairs => {
            let per = pos.len() / 2 / batches;
            let mut base = 0;
            for b in 0..batches {
                let pairs = &mut pos[2 * b * per..2 * (b + 1) * per];
                let got: usize = pairs.chunks(2).map(|p| p[1].saturating_sub(p[0])).sum();
                check(b, got)?;
                pairs.iter_mut().for_each(|p| *p = p.saturating_sub(base));
                base += got;
            }
        }
        _ => {}
    }
    Ok(())
}

impl<V: Value> DynamicStorage<V> {
    /// Builds the storage of `coo` (dimension coordinates, any order, duplicates allowed) in the
    /// format `encoding`.
    ///
    /// Entries are put in level order (stable); entries with equal coordinates are summed when
    /// the last level is unique and kept apart otherwise. n:m blocks with fewer than `n` entries
    /// are padded with explicit zeros at the lowest free in-block coordinates; stored BSR blocks
    /// get explicit zeros.
    ///
    /// Errors: [`StorageError::RankMismatch`] if `coo.shape` does not have the encoding's dimension
    /// rank; [`StorageError::LengthMismatch`] if `coo.coords` does not hold `rank` coordinates per
    /// value; [`StorageError::CoordinateOutOfRange`] naming the entry, dimension and value;
    /// [`StorageError::BlockShape`] for a blocked dimension that is not a multiple of its block;
    /// [`StorageError::WidthOverflow`] naming the level, value and width when a position or
    /// coordinate does not fit `posWidth`/`crdWidth`; [`StorageError::NOutOfMOverflow`] naming the
    /// row and block of an n:m block with more than `n` entries;
    /// [`StorageError::EllRowOverflow`] naming a row with more elements than ELL slices;
    /// [`StorageError::BatchNse`] when batches differ in their number of stored positions;
    /// [`StorageError::Unsupported`] for what cannot be stored (an encoding with slices is a view:
    /// build the parent and call [`Self::slice`]). The encoding is a [`VerifiedEncoding`]: an
    /// encoding built in code gets
    /// the parser's rules through `Encoding::verify` before it can reach the storage.
    pub fn from_coo(encoding: &VerifiedEncoding, coo: &CooTensor<V>) -> Result<Self, StorageError> {
        if encoding.dim_slices.is_some() {
            return Err(unsupported("an encoding with dimension slices is a view: build the parent storage and call DynamicStorage::slice"));
        }
        let layout = analyze(encoding, &coo.shape)?;
        let dim_rank = encoding.dim_rank();
        let lvl_rank = encoding.lvl_rank();
        let n = coo.len();
        if coo.coords.len()
            != n.checked_mul(dim_rank)
                .ok_or_else(|| StorageError::ShapeOverflow {
                    shape: coo.shape.clone(),
                })?
        {
            return Err(StorageError::LengthMismatch {
                operand: "COO coordinates",
                expected: n * dim_rank,
                got: coo.coords.len(),
            });
        }
        let perm = encoding.dim_permutation();
        let mut keys = vec![0usize; n * lvl_rank];
        for e in 0..n {
            let dc = &coo.coords[e * dim_rank..(e + 1) * dim_rank];
            for (d, (&c, &size)) in dc.iter().zip(&coo.shape).enumerate() {
                if c >= size {
                    return Err(StorageError::CoordinateOutOfRange {
                        entry: e,
                        dim: d,
                        coordinate: c,
                        size,
                    });
                }
            }
            dim_to_lvl(
                encoding,
                perm.as_deref(),
                dc,
                &mut keys[e * lvl_rank..(e + 1) * lvl_rank],
            )
            .map_err(|l| {
                unsupported(format!(
                    "entry {e}: the map's level {l} expression does not evaluate on coordinates \
                     {dc:?} in usize arithmetic"
                ))
            })?;
        }
        let merge = encoding.lvl_types.last().is_some_and(|t| t.is_unique());
        let mut values = coo.values.clone();
        if let Some(cnt) = layout.counting {
            (keys, values) =
                assign_slices(cnt, &coo.coords, dim_rank, keys, values, lvl_rank, merge)?;
        }
        let n = values.len();
        let nonordered: Vec<bool> = encoding.lvl_types.iter().map(|t| !t.is_ordered()).collect();
        let order = match nonordered_sort_keys(&keys, lvl_rank, n, &nonordered) {
            Some(sort_keys) => level_order(&sort_keys, lvl_rank, n, n.max(layout.lvl_sizes[0])),
            None => level_order(&keys, lvl_rank, n, layout.lvl_sizes[0]),
        };
        let key = |e: usize| &keys[e * lvl_rank..(e + 1) * lvl_rank];

        let mut b = Builder::new(encoding, &layout.lvl_sizes, layout.batches)?;
        let mut first = true;
        let mut k = 0;
        while k < n {
            let e = order[k];
            let mut v = values[e];
            k += 1;
            if merge {
                while k < n && key(order[k]) == key(e) {
                    v += values[order[k]];
                    k += 1;
                }
            }
            b.lex_insert(first, key(e), v)?;
            first = false;
        }
        b.end_insert(n == 0)?;
        let Builder {
            positions: gpos,
            coordinates,
            values,
            ..
        } = b;
        // without batch levels the positions are final; with them, rebase and narrow in place
        let mut positions = Vec::with_capacity(lvl_rank);
        for (l, p) in gpos.into_iter().enumerate() {
            positions.push(match p {
                Some(IndexBuffer::Native(mut g)) if layout.batch_levels > 0 => {
                    rebase_batches_in_place(
                        l,
                        encoding.lvl_types[l].format,
                        &mut g,
                        layout.batches,
                    )?;
                    let width = encoding.pos_width;
                    let narrowed = IndexBuffer::from_native(width, g)
                        .ok_or_else(|| unsupported(format!("posWidth = {width}")))?
                        .map_err(|value| StorageError::WidthOverflow {
                            level: l,
                            kind: crate::error::BufferKind::Position,
                            value,
                            width,
                        })?;
                    Some(narrowed)
                }
                p => p,
            });
        }
        let mut s = DynamicStorage {
            encoding: encoding.clone(),
            dim_shape: coo.shape.clone(),
            lvl_sizes: layout.lvl_sizes,
            positions,
            coordinates,
            values,
            explicit: None,
            counts: Vec::new(),
            batches: layout.batches,
            counting: layout.counting,
        };
        s.counts = storage::level_counts(&s)?;
        if let Some(c) = &encoding.explicit_val {
            let explicit = V::from_scalar(&c.value);
            let values = std::mem::take(&mut s.values);
            storage::check_explicit_values(&explicit, &values, |p| s.coords_at(p))?;
            s.explicit = Some(explicit);
        }
        Ok(s)
    }

    /// The dimension coordinates of the entry at stored position `p` of the last level
    /// (empty if no entry is stored there).
    fn coords_at(&self, p: usize) -> Vec<usize> {
        let a = self.arrays();
        let mut lc = vec![0; self.encoding.lvl_rank()];
        let mut found = None;
        self.walk(&a, 0, 0, &mut lc, &mut |lc, q| {
            if q == p && found.is_none() {
                found = Some(lc.to_vec());
            }
        });
        found.map_or_else(Vec::new, |lc| {
            let mut dc = vec![0; self.encoding.dim_rank()];
            lvl_to_dim(&self.encoding, &lc, &mut dc);
            dc
        })
    }

    /// Builds the storage of a dense tensor given row-major (last dimension fastest) in `data`;
    /// elements equal to zero (the implicit value) are not stored (except where a dense level
    /// stores them anyway). With `explicitVal` every element that is not zero must equal it
    /// (a 0/1 matrix for `explicitVal = 1.0`), and the format stores the pattern of those.
    ///
    /// Errors: [`StorageError::LengthMismatch`] if `data.len()` is not the product of `dim_shape`;
    /// otherwise as [`Self::from_coo`] ([`StorageError::ExplicitValueMismatch`] for an element
    /// that is neither zero nor `explicitVal`).
    pub fn from_dense(
        encoding: &VerifiedEncoding,
        dim_shape: &[usize],
        data: &[V],
    ) -> Result<Self, StorageError> {
        let total = checked_product(dim_shape)?;
        if data.len() != total {
            return Err(StorageError::LengthMismatch {
                operand: "dense input",
                expected: total,
                got: data.len(),
            });
        }
        let mut coo = CooTensor::new(dim_shape.to_vec());
        let mut idx = vec![0usize; dim_shape.len()];
        for (flat, &v) in data.iter().enumerate() {
            if !v.is_zero() {
                unflatten(flat, dim_shape, &mut idx);
                coo.push(&idx, v);
            }
        }
        Self::from_coo(encoding, &coo)
    }

    /// Builds a tensor from its arrays (as [`Self::into_raw_parts`] gives them), checking the
    /// arrays' presence and widths against the encoding and then every invariant
    /// ([`Self::validate`]). A loose_compressed level may have gaps and segments in any order;
    /// a non-ordered level may hold its coordinates in any order (kept as given); a non-unique
    /// level may hold duplicates.
    ///
    /// `positions[l]` must be present exactly for compressed and loose_compressed levels, with
    /// width `posWidth`; `coordinates[l]` exactly for the levels that own a coordinate buffer
    /// (see the module docs), with width `crdWidth`. With `explicitVal`, `values` is empty (as
    /// [`Self::into_raw_parts`] gives it) or holds one value per stored position, each equal to
    /// the constant (then dropped: nothing of it is stored).
    ///
    /// Errors: [`StorageError::RawParts`] naming the level for a missing, extra or mis-sized
    /// array; [`StorageError::Invariant`] naming the invariant, level and position;
    /// [`StorageError::ExplicitValueMismatch`] naming the first given value that differs from
    /// `explicitVal`; as [`Self::from_coo`] for an encoding or shape that cannot be stored.
    /// Never panics.
    pub fn from_raw_parts(
        encoding: &VerifiedEncoding,
        dim_shape: &[usize],
        positions: Vec<Option<IndexBuffer>>,
        coordinates: Vec<Option<CrdBuffer>>,
        values: Vec<V>,
    ) -> Result<Self, StorageError> {
        if encoding.dim_slices.is_some() {
            return Err(unsupported("an encoding with dimension slices is a view: build the parent storage and call DynamicStorage::slice"));
        }
        analyze(encoding, dim_shape)?;
        let lvl_rank = encoding.lvl_rank();
        let raw = |level: usize, reason: String| StorageError::RawParts { level, reason };
        if positions.len() != lvl_rank {
            return Err(raw(
                positions.len().min(lvl_rank),
                format!("{} position arrays for {lvl_rank} levels", positions.len()),
            ));
        }
        if coordinates.len() != lvl_rank {
            return Err(raw(
                coordinates.len().min(lvl_rank),
                format!(
                    "{} coordinate arrays for {lvl_rank} levels",
                    coordinates.len()
                ),
            ));
        }
        for l in 0..lvl_rank {
            let lt = encoding.lvl_types[l];
            match (&positions[l], lt.has_positions()) {
                (Some(p), true) if p.as_slice().width() != encoding.pos_width => {
                    return Err(raw(
                        l,
                        format!(
                            "positions have width {}, posWidth is {}",
                            p.as_slice().width(),
                            encoding.pos_width
                        ),
                    ))
                }
                (Some(_), false) => {
                    return Err(raw(
                        l,
                        format!("a {} level has no positions array", lt.format.mlir_name()),
                    ))
                }
                (None, true) => {
                    return Err(raw(
                        l,
                        format!("a {} level needs a positions array", lt.format.mlir_name()),
                    ))
                }
                _ => {}
            }
            match (&coordinates[l], encoding.owns_crd_buffer(l)) {
                (Some(c), true) if c.width() != encoding.crd_width => {
                    return Err(raw(
                        l,
                        format!(
                            "coordinates have width {}, crdWidth is {}",
                            c.width(),
                            encoding.crd_width
                        ),
                    ))
                }
                (Some(_), false) => {
                    return Err(raw(l, "the level owns no coordinate buffer".into()))
                }
                (None, true) => return Err(raw(l, "the level needs a coordinate buffer".into())),
                _ => {}
            }
        }
        // the values of a pattern are checked below, once the stored positions are known
        let (values, given) = match encoding.explicit_val {
            Some(_) => (Vec::new(), values),
            None => (values, Vec::new()),
        };
        // SAFETY: the arrays are checked by `validate` before the value is returned.
        let s = unsafe {
            Self::from_raw_parts_unchecked(encoding, dim_shape, positions, coordinates, values)
        };
        s.validate()?;
        if let (Some(explicit), false) = (&s.explicit, given.is_empty()) {
            let nse = s.nse();
            if given.len() != nse {
                return Err(StorageError::Invariant {
                    level: encoding.lvl_rank().saturating_sub(1),
                    invariant: "one value per stored position",
                    position: given.len(),
                    detail: format!("{} values for {nse} positions", given.len()),
                });
            }
            storage::check_explicit_values(explicit, &given, |p| s.coords_at(p))?;
        }
        Ok(s)
    }

    /// [`Self::from_raw_parts`] without any check.
    ///
    /// # Safety
    ///
    /// The arrays must be exactly what [`Self::from_raw_parts`] accepts for `encoding` and
    /// `dim_shape` (with `explicitVal`, `values` is dropped unread). No memory unsafety follows
    /// otherwise (this crate has no `unsafe` access), but reading inconsistent arrays may panic
    /// or give wrong results.
    pub unsafe fn from_raw_parts_unchecked(
        encoding: &VerifiedEncoding,
        dim_shape: &[usize],
        positions: Vec<Option<IndexBuffer>>,
        coordinates: Vec<Option<CrdBuffer>>,
        values: Vec<V>,
    ) -> Self {
        let (lvl_sizes, batches, counting) = match analyze(encoding, dim_shape) {
            Ok(l) => (l.lvl_sizes, l.batches, l.counting),
            Err(_) => (vec![0; encoding.lvl_rank()], 1, None),
        };
        let explicit = encoding
            .explicit_val
            .as_ref()
            .map(|c| V::from_scalar(&c.value));
        let mut s = DynamicStorage {
            encoding: encoding.clone(),
            dim_shape: dim_shape.to_vec(),
            lvl_sizes,
            positions,
            coordinates,
            values: if explicit.is_some() {
                Vec::new()
            } else {
                values
            },
            explicit,
            counts: Vec::new(),
            batches,
            counting,
        };
        // arrays that break the contract may overflow a count; validation reports it
        s.counts = storage::level_counts(&s).unwrap_or_else(|_| vec![0; encoding.lvl_rank()]);
        s
    }

    /// Takes the tensor apart into its arrays (no copy); [`Self::from_raw_parts`] puts them back.
    /// With `explicitVal` the values are empty (none are stored).
    pub fn into_raw_parts(self) -> RawParts<V> {
        RawParts {
            encoding: self.encoding,
            dim_shape: self.dim_shape,
            positions: self.positions,
            coordinates: self.coordinates,
            values: self.values,
        }
    }

    /// [`Self::into_raw_parts`] with the values of a pattern (`explicitVal`) written out, one
    /// copy of the constant per stored entry: what a peer that holds values needs
    /// (`interop`).
    #[cfg(any(
        feature = "sprs",
        feature = "nalgebra-sparse",
        feature = "faer",
        feature = "ndarray"
    ))]
    pub(crate) fn into_raw_parts_with_values(self) -> RawParts<V> {
        let filled = self.explicit.map(|c| vec![c; self.nse()]);
        let mut parts = self.into_raw_parts();
        if let Some(values) = filled {
            parts.values = values;
        }
        parts
    }

    /// The stored entries as a COO tensor in storage order (dimension coordinates, explicit
    /// zeros and duplicates included), with this tensor's shape.
    pub fn to_coo(&self) -> CooTensor<V> {
        let mut coo = CooTensor::new(self.dim_shape.clone());
        coo.coords.reserve(self.nse() * self.dim_shape.len());
        coo.values.reserve(self.nse());
        for (dc, v) in self.iter() {
            coo.push(&dc, *v);
        }
        coo
    }

    /// The same tensor in the format `other` (same dimension shape), re-assembled with
    /// [`Self::from_coo`] from the stored entries whose value is not zero (stored duplicates
    /// are summed by a unique target). Explicit zeros are not carried over: they are an artefact
    /// of the source format (BSR blocks, n:m padding, dense levels), and the target pads what it
    /// needs itself, so a conversion depends only on the tensor's values and `A -> B -> A` gives
    /// back `A`'s arrays whenever `A` stores no zeros. To keep stored zeros, call
    /// `DynamicStorage::from_coo(other, &self.to_coo())`.
    ///
    /// Errors: as [`Self::from_coo`] (for example a BSR target whose block does not divide the
    /// shape, an n:m target with a too full block, or an ELL target with a too long row).
    pub fn convert(&self, other: &VerifiedEncoding) -> Result<DynamicStorage<V>, StorageError> {
        let mut coo = CooTensor::new(self.dim_shape.clone());
        for (dc, v) in self.iter() {
            if !v.is_zero() {
                coo.push(&dc, *v);
            }
        }
        Self::from_coo(other, &coo)
    }
}

impl<V> DynamicStorage<V> {
    /// The encoding.
    pub fn encoding(&self) -> &VerifiedEncoding {
        &self.encoding
    }
    /// Dimension sizes.
    pub fn shape(&self) -> &[usize] {
        &self.dim_shape
    }
    /// Number of stored entries (explicit zeros included; over all batches), MLIR's `nse`.
    pub fn nse(&self) -> usize {
        match self.explicit {
            Some(_) => self.counts.last().copied().unwrap_or(0),
            None => self.values.len(),
        }
    }
    /// Number of batches: the product of the leading batch level sizes (1 without batch levels).
    pub fn batches(&self) -> usize {
        self.batches
    }
    /// The values array, one per stored entry in storage order; empty for an encoding with
    /// `explicitVal`, which stores none (see [`Self::explicit_value`]).
    pub fn values(&self) -> &[V] {
        &self.values
    }
    /// The `explicitVal` every stored entry holds, converted to `V`, when the encoding has one
    /// (then no values array is stored); `None` otherwise.
    pub fn explicit_value(&self) -> Option<&V> {
        self.explicit.as_ref()
    }
    /// The value of the stored entry at position `p` of the last level (storage order): the
    /// values array's, or `explicitVal` for a pattern; `None` when `p` is not below
    /// [`Self::nse`].
    pub fn value_at(&self, p: usize) -> Option<&V> {
        match &self.explicit {
            Some(v) => (p < self.nse()).then_some(v),
            None => self.values.get(p),
        }
    }
    /// The value at stored position `p` (a position the walk gave).
    fn value_ref(&self, p: usize) -> &V {
        match &self.explicit {
            Some(v) => v,
            None => &self.values[p],
        }
    }
    /// The same storage seen through permuted dimensions, no element moved (MLIR's
    /// dimension-to-level maps make a transpose a change of encoding only): dimension `d` of
    /// the result is dimension `perm[d]` of `self`, its encoding is
    /// [`sparse_ir::ir::Encoding::permute_dims`] of this one, and every array (positions,
    /// coordinates, values) is moved over as it is, at the same address. `[1, 0]` makes CSR
    /// storage of `A` the CSC storage of `Aᵀ`, and BSR the BSC of `Aᵀ` (blocks read transposed).
    ///
    /// Errors: [`StorageError::RankMismatch`] when `perm` has not one entry per dimension;
    /// [`StorageError::InvalidEncoding`] when it is not a permutation of `0..rank` (or the
    /// permuted encoding fails verification), with `self` dropped.
    pub fn permute_dims(self, perm: &[usize]) -> Result<DynamicStorage<V>, StorageError> {
        let rank = self.dim_shape.len();
        if perm.len() != rank {
            return Err(StorageError::RankMismatch {
                expected: rank,
                got: perm.len(),
            });
        }
        let not_a_permutation = || StorageError::InvalidEncoding {
            messages: vec![format!(
                "{perm:?} is not a permutation of the {rank} dimensions"
            )],
        };
        let encoding = self
            .encoding
            .permute_dims(perm)
            .ok_or_else(not_a_permutation)?
            .verify()
            .map_err(|errs| StorageError::InvalidEncoding {
                messages: errs.iter().map(|e| e.message.clone()).collect(),
            })?;
        let mut inverse = vec![0; rank];
        for (d, &p) in perm.iter().enumerate() {
            inverse[p] = d;
        }
        Ok(DynamicStorage {
            encoding,
            dim_shape: perm.iter().map(|&p| self.dim_shape[p]).collect(),
            lvl_sizes: self.lvl_sizes,
            positions: self.positions,
            coordinates: self.coordinates,
            values: self.values,
            explicit: self.explicit,
            counts: self.counts,
            batches: self.batches,
            counting: self.counting.map(|c| Counting {
                dim: inverse[c.dim],
                ..c
            }),
        })
    }

    /// [`Self::permute_dims`] `[1, 0]` of a matrix: the transpose as a view of the same arrays
    /// (CSR of `A` is CSC of `Aᵀ`, BSR is BSC, DCSR is DCSC, COO stays COO in column order).
    ///
    /// Errors: [`StorageError::RankMismatch`] unless the tensor has 2 dimensions.
    pub fn transpose(self) -> Result<DynamicStorage<V>, StorageError> {
        self.permute_dims(&[1, 0])
    }

    /// The same storage with every stored value mapped by `f`, in storage order (positions
    /// and coordinates unchanged): a change of value type, or values turned into text. With
    /// `explicitVal`, `f` maps the one constant.
    pub fn map_values<W>(self, mut f: impl FnMut(V) -> W) -> DynamicStorage<W> {
        DynamicStorage {
            encoding: self.encoding,
            dim_shape: self.dim_shape,
            lvl_sizes: self.lvl_sizes,
            positions: self.positions,
            coordinates: self.coordinates,
            explicit: self.explicit.map(&mut f),
            values: self.values.into_iter().map(f).collect(),
            counts: self.counts,
            batches: self.batches,
            counting: self.counting,
        }
    }
    /// The positions array of level `l`, if it stores one.
    pub fn positions(&self, l: usize) -> Option<IndexSlice<'_>> {
        self.positions.get(l)?.as_ref().map(|b| b.as_slice())
    }
    /// The byte-aligned coordinate buffer owned by level `l` (see
    /// [`SparseStorage::coordinate_buffer`]); `None` for a packed buffer (use
    /// [`Self::coordinate_view`]).
    pub fn coordinates(&self, l: usize) -> Option<IndexSlice<'_>> {
        self.coordinates
            .get(l)?
            .as_ref()
            .and_then(|b| b.as_index_slice())
    }
    /// The coordinate buffer owned by level `l`, byte-aligned or packed.
    pub fn coordinate_view(&self, l: usize) -> Option<IndexView<'_>> {
        self.coordinates.get(l)?.as_ref().map(|b| b.view())
    }

    /// The `(lo, hi)` range of global positions of level `l` under the global position `parent`
    /// of level `l - 1` (`0` for level 0), as the level's format defines it (dense: `parent *
    /// size ..`, compressed: `pos[parent] .. pos[parent + 1]` rebased per batch, singleton:
    /// `parent .. parent + 1`, n:m: `n` per parent). For the sparsifier's interpreter, which
    /// walks levels one at a time. Out-of-range arguments give an empty or meaningless range,
    /// never a panic.
    pub fn level_segment(&self, l: usize, parent: usize) -> (usize, usize) {
        if l >= self.encoding.lvl_rank() {
            return (0, 0);
        }
        let a = self.arrays();
        self.segment(&a, l, parent)
    }

    /// The level coordinate of level `l` at global position `p`, whose parent position is
    /// `parent` (dense levels derive it from `p - parent * size`; the others read their
    /// coordinate buffer, an n:m level giving the in-block coordinate). `usize::MAX` for a
    /// position outside the buffer; never panics.
    pub fn level_coordinate(&self, l: usize, parent: usize, p: usize) -> usize {
        if l >= self.encoding.lvl_rank() {
            return usize::MAX;
        }
        match self.encoding.crd_location(l) {
            None => parent
                .checked_mul(self.lvl_sizes[l])
                .and_then(|base| p.checked_sub(base))
                .unwrap_or(usize::MAX),
            Some(_) => self.crd(l, parent, p),
        }
    }

    fn arrays(&self) -> Arrays<'_> {
        Arrays {
            lvl_sizes: &self.lvl_sizes,
            lvl_types: &self.encoding.lvl_types,
            positions: &self.positions,
            counts: &self.counts,
            batches: self.batches,
        }
    }

    /// The `(lo, hi)` range of global positions of level `l` under parent position `parent`.
    fn segment(&self, a: &Arrays<'_>, l: usize, parent: usize) -> (usize, usize) {
        dispatch!(self.encoding.lvl_types[l].format, K => K::segment(a, l, parent))
    }

    /// Coordinate of level `l` at position `p` (whose parent position is `parent`).
    fn crd(&self, l: usize, parent: usize, p: usize) -> usize {
        match self.encoding.crd_location(l) {
            None => p - parent * self.lvl_sizes[l],
            Some((owner, stride, offset)) => self.coordinates[owner]
                .as_ref()
                .and_then(|b| b.get(p * stride + offset))
                .unwrap_or(usize::MAX),
        }
    }

    /// Calls `f(level coordinates, value position)` for every stored entry in storage order.
    fn walk(
        &self,
        a: &Arrays<'_>,
        l: usize,
        parent: usize,
        lc: &mut Vec<usize>,
        f: &mut dyn FnMut(&[usize], usize),
    ) {
        let (lo, hi) = self.segment(a, l, parent);
        for p in lo..hi {
            lc[l] = self.crd(l, parent, p);
            if l + 1 == lc.len() {
                f(lc, p);
            } else {
                self.walk(a, l + 1, p, lc, f);
            }
        }
    }

    /// Calls `f(level coordinates, value)` for every stored entry in storage order.
    pub fn for_each_level(&self, mut f: impl FnMut(&[usize], &V)) {
        let a = self.arrays();
        let mut lc = vec![0; self.encoding.lvl_rank()];
        self.walk(&a, 0, 0, &mut lc, &mut |lc, p| f(lc, self.value_ref(p)));
    }

    /// All stored entries in storage order as `(level coordinates, value)`.
    pub fn iter_levels(&self) -> impl Iterator<Item = (Vec<usize>, &V)> + '_ {
        let mut out = Vec::with_capacity(self.nse());
        let a = self.arrays();
        let mut lc = vec![0; self.encoding.lvl_rank()];
        self.walk(&a, 0, 0, &mut lc, &mut |lc, p| out.push((lc.to_vec(), p)));
        out.into_iter().map(move |(lc, p)| (lc, self.value_ref(p)))
    }

    /// All stored entries in storage order as `(dimension coordinates, value)` (through
    /// `lvl_to_dim`).
    pub fn iter(&self) -> impl Iterator<Item = (Vec<usize>, &V)> + '_ {
        let dim_rank = self.encoding.dim_rank();
        self.iter_levels().map(move |(lc, v)| {
            let mut dc = vec![0; dim_rank];
            lvl_to_dim(&self.encoding, &lc, &mut dc);
            (dc, v)
        })
    }

    /// The value stored at dimension coordinates `coords`, or `None` if nothing is stored there
    /// (or `coords` is out of range or of the wrong rank). With stored duplicates, the first.
    pub fn get(&self, coords: &[usize]) -> Option<&V> {
        if coords.len() != self.dim_shape.len()
            || coords.iter().zip(&self.dim_shape).any(|(c, s)| c >= s)
        {
            return None;
        }
        let mut lc = vec![0; self.encoding.lvl_rank()];
        dim_to_lvl(
            &self.encoding,
            self.encoding.dim_permutation().as_deref(),
            coords,
            &mut lc,
        )
        .ok()?;
        let a = self.arrays();
        self.locate(&a, 0, 0, &lc).map(|p| self.value_ref(p))
    }

    fn locate(&self, a: &Arrays<'_>, l: usize, parent: usize, lc: &[usize]) -> Option<usize> {
        let (lo, hi) = self.segment(a, l, parent);
        let last = l + 1 == lc.len();
        let next = |p: usize| {
            if last {
                Some(p)
            } else {
                self.locate(a, l + 1, p, lc)
            }
        };
        if self.counting.is_some_and(|c| c.level == l) {
            return (lo..hi).find_map(next);
        }
        if self.encoding.lvl_types[l].is_dense() {
            return if lc[l] < hi - lo {
                next(lo + lc[l])
            } else {
                None
            };
        }
        (lo..hi)
            .filter(|&p| self.crd(l, parent, p) == lc[l])
            .find_map(next)
    }

    /// Bytes held by positions, coordinates and values (no values for `explicitVal`).
    pub fn memory_bytes(&self) -> usize {
        storage::memory_bytes(self)
    }

    /// Checks every storage invariant; see [`storage::validate`].
    pub fn validate(&self) -> Result<(), StorageError> {
        storage::validate(self)
    }
}

impl<V: Value> DynamicStorage<V> {
    /// The dense tensor, row-major (last dimension fastest); stored duplicates are summed.
    ///
    /// Errors: [`StorageError::ShapeOverflow`] if the element count does not fit `usize`.
    pub fn to_dense(&self) -> Result<Vec<V>, StorageError> {
        let total = checked_product(&self.dim_shape)?;
        let mut out = vec![V::zero(); total];
        for (dc, v) in self.iter() {
            let flat = dc
                .iter()
                .zip(&self.dim_shape)
                .fold(0, |acc, (c, s)| acc * s + c);
            out[flat] += *v;
        }
        Ok(out)
    }

    /// `y = A · x` for a rank-2 tensor: `x` has `shape[1]` elements, `y` has `shape[0]`
    /// (overwritten).
    ///
    /// Errors: [`StorageError::RankMismatch`] for a tensor that is not rank 2;
    /// [`StorageError::LengthMismatch`] naming `"x"` or `"y"`.
    pub fn spmv(&self, x: &[V], y: &mut [V]) -> Result<(), StorageError> {
        if self.dim_shape.len() != 2 {
            return Err(StorageError::RankMismatch {
                expected: 2,
                got: self.dim_shape.len(),
            });
        }
        check_len("x", self.dim_shape[1], x.len())?;
        check_len("y", self.dim_shape[0], y.len())?;
        y.iter_mut().for_each(|v| *v = V::zero());
        for (dc, v) in self.iter() {
            y[dc[0]] += *v * x[dc[1]];
        }
        Ok(())
    }
}

/// ELL: gives every entry its slice `k` (the rank of the entry in its row), merging duplicates
/// first when `merge`; returns the new keys and values.
#[allow(clippy::type_complexity)]
fn assign_slices<V: Value>(
    cnt: Counting,
    coords: &[usize],
    dim_rank: usize,
    keys: Vec<usize>,
    values: Vec<V>,
    r: usize,
    merge: bool,
) -> Result<(Vec<usize>, Vec<V>), StorageError> {
    let n = values.len();
    let row = |e: usize| coords[e * dim_rank + cnt.dim];
    let key = |e: usize| &keys[e * r..(e + 1) * r];
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| row(a).cmp(&row(b)).then_with(|| key(a).cmp(key(b))));
    let mut out_keys = Vec::with_capacity(keys.len());
    let mut out_vals = Vec::with_capacity(n);
    let mut k = 0;
    while k < n {
        let i = row(order[k]);
        let mut slot = 0;
        let start = out_vals.len();
        while k < n && row(order[k]) == i {
            let e = order[k];
            let mut v = values[e];
            k += 1;
            if merge {
                while k < n && row(order[k]) == i && key(order[k]) == key(e) {
                    v += values[order[k]];
                    k += 1;
                }
            }
            let mut lc = key(e).to_vec();
            lc[cnt.level] = slot;
            out_keys.extend_from_slice(&lc);
            out_vals.push(v);
            slot += 1;
        }
        if slot > cnt.slices {
            return Err(StorageError::EllRowOverflow {
                row: i,
                count: out_vals.len() - start,
                slices: cnt.slices,
            });
        }
    }
    Ok((out_keys, out_vals))
}

impl<V> SparseStorage for DynamicStorage<V> {
    type Value = V;
    fn dim_shape(&self) -> &[usize] {
        &self.dim_shape
    }
    fn lvl_sizes(&self) -> &[usize] {
        &self.lvl_sizes
    }
    fn lvl_types(&self) -> &[sparse_ir::ir::LevelType] {
        &self.encoding.lvl_types
    }
    fn position_buffer(&self, l: usize) -> Option<IndexSlice<'_>> {
        self.positions.get(l)?.as_ref().map(|b| b.as_slice())
    }
    fn coordinate_buffer(&self, l: usize) -> Option<IndexSlice<'_>> {
        self.coordinates(l)
    }
    fn coordinate_view(&self, l: usize) -> Option<IndexView<'_>> {
        DynamicStorage::coordinate_view(self, l)
    }
    fn value_slice(&self) -> &[V] {
        &self.values
    }
    fn explicit_value(&self) -> Option<&V> {
        self.explicit.as_ref()
    }
    fn ell_levels(&self) -> Option<storage::EllLevels> {
        let c = self.counting?;
        let row = self
            .encoding
            .dim_to_lvl
            .results
            .iter()
            .position(|r| r.as_var() == Some(c.dim))?;
        Some(storage::EllLevels {
            counting: c.level,
            row,
        })
    }
}

impl<V: fmt::Display> fmt::Display for DynamicStorage<V> {
    /// MLIR's `sparse_tensor.print` form (see [`storage::fmt_sparse_tensor`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        storage::fmt_sparse_tensor(self, f)
    }
}

fn check_len(operand: &'static str, expected: usize, got: usize) -> Result<(), StorageError> {
    if expected == got {
        Ok(())
    } else {
        Err(StorageError::LengthMismatch {
            operand,
            expected,
            got,
        })
    }
}

/// Product of the dimension sizes; [`StorageError::ShapeOverflow`] if it overflows `usize`.
pub fn checked_product(shape: &[usize]) -> Result<usize, StorageError> {
    shape
        .iter()
        .try_fold(1usize, |a, &s| a.checked_mul(s))
        .ok_or_else(|| StorageError::ShapeOverflow {
            shape: shape.to_vec(),
        })
}

/// Row-major unflattening of `flat` into `idx` for `shape`.
pub fn unflatten(mut flat: usize, shape: &[usize], idx: &mut [usize]) {
    for d in (0..shape.len()).rev() {
        idx[d] = flat % shape[d];
        flat /= shape[d];
    }
}
