//! The level formats of the runtime: one module per format behind one small interface,
//! [`LevelKind`], mirroring the code generator's `LevelGen` (one unit per format on both sides).
//!
//! A format answers four questions:
//! - assembly (MLIR `appendCrd` / `finalizeSegment`): how a coordinate is appended and how
//!   segments are closed, on the shared [`Builder`];
//! - reading: which positions `(lo, hi)` of the level lie under a parent position
//!   ([`LevelKind::segment`] on [`Arrays`]);
//! - validation: which invariants the level's arrays obey ([`LevelKind::check`] on a
//!   [`SparseStorage`] view).
//!
//! Positions are *global* (counted over all batches, batch-major); the positions *stored* in a
//! `pos` array below `batch` levels are local to their batch (see [`crate::dynamic`]).

pub(crate) mod batch;
pub(crate) mod compressed;
pub(crate) mod dense;
pub(crate) mod loose_compressed;
pub(crate) mod n_out_of_m;
pub(crate) mod singleton;

use sparse_ir::ir::{Encoding, LevelFormat};
use sparse_ir::level::{PositionCount, PositionsArray};

use crate::error::{BufferKind, StorageError};
use crate::index::IndexBuffer;
use crate::packed::{CrdBuffer, IndexView};
use crate::storage::SparseStorage;
use crate::value::Value;

/// The per-format rules (static functions; dispatched by [`dispatch!`] on a [`LevelFormat`]).
pub(crate) trait LevelKind {
    /// MLIR `appendCrd`: appends coordinate `crd` at level `l`, whose open segment already holds
    /// coordinates `0..full` (dense levels only use `full`).
    fn append_crd<V: Value>(
        b: &mut Builder<'_, V>,
        l: usize,
        full: usize,
        crd: usize,
    ) -> Result<(), StorageError>;
    /// MLIR `finalizeSegment`: closes `count` segments of level `l`, the first of which already
    /// holds coordinates `0..full`.
    fn finalize_segment<V: Value>(
        b: &mut Builder<'_, V>,
        l: usize,
        full: usize,
        count: usize,
    ) -> Result<(), StorageError>;
    /// `(lo, hi)`: the global positions of level `l` under global parent position `parent`.
    fn segment(a: &Arrays<'_>, l: usize, parent: usize) -> (usize, usize);
    /// Checks the arrays of level `l`, whose parent level has `parent` global positions, and
    /// returns the number of global positions of level `l`.
    fn check<S: SparseStorage + ?Sized>(
        cx: &Check<'_, S>,
        l: usize,
        parent: usize,
    ) -> Result<usize, StorageError>;
}

/// Runs `$e` with `$K` bound to the [`LevelKind`] implementation of format `$f`.
macro_rules! dispatch {
    ($f:expr, $K:ident => $e:expr) => {{
        use sparse_ir::ir::LevelFormat as LF;
        match $f {
            LF::Dense => {
                type $K = $crate::level::dense::Dense;
                $e
            }
            LF::Batch => {
                type $K = $crate::level::batch::Batch;
                $e
            }
            LF::Compressed => {
                type $K = $crate::level::compressed::Compressed;
                $e
            }
            LF::LooseCompressed => {
                type $K = $crate::level::loose_compressed::LooseCompressed;
                $e
            }
            LF::Singleton => {
                type $K = $crate::level::singleton::Singleton;
                $e
            }
            LF::NOutOfM { .. } => {
                type $K = $crate::level::n_out_of_m::NOutOfM;
                $e
            }
        }
    }};
}
pub(crate) use dispatch;

/// Assembly state: MLIR's `lvlCursor` plus per-level node counts.
///
/// Positions are global numbers. Without batch levels they are built in place in the encoding's
/// `posWidth` (width-checked as they are appended; nothing is converted or copied when assembly
/// ends); with batch levels they are native and are rebased to batch-local numbers and narrowed
/// in place at the end ([`crate::dynamic::rebase_batches_in_place`],
/// [`IndexBuffer::from_native`]). A level whose ancestors are all dense (CSR's `pos`, BSR's,
/// ELL's) knows its final length up front and reserves exactly that.
pub(crate) struct Builder<'e, V> {
    pub enc: &'e Encoding,
    pub lvl_sizes: &'e [usize],
    /// Global positions per level (compressed: starts with 0; loose: `(lo, hi)` pairs).
    pub positions: Vec<Option<IndexBuffer>>,
    pub coordinates: Vec<Option<CrdBuffer>>,
    pub values: Vec<V>,
    pub cursor: Vec<usize>,
    /// Nodes (stored positions) created so far at each level.
    pub count: Vec<usize>,
    /// loose_compressed: where the next segment starts.
    pub loose_start: Vec<usize>,
    /// n:m: the open block's `(in-block coordinate, value)` entries.
    pub pending: Vec<(usize, V)>,
    /// Per level: the level whose coordinate buffer holds its coordinates (`crd_location`'s
    /// owner, looked up once instead of per pushed coordinate).
    crd_owner: Vec<Option<usize>>,
}

impl<'e, V: Value> Builder<'e, V> {
    /// An empty builder for `batches` batches (1 without batch levels).
    ///
    /// Errors: [`StorageError::Unsupported`] for a width no buffer has;
    /// [`StorageError::ShapeOverflow`] (naming the level sizes) when the positions of a level
    /// below dense levels cannot be had (their count overflows `usize`, or the allocation fails).
    pub fn new(
        enc: &'e Encoding,
        lvl_sizes: &'e [usize],
        batches: usize,
    ) -> Result<Self, StorageError> {
        let lvl_rank = enc.lvl_rank();
        let batched = enc
            .lvl_types
            .first()
            .is_some_and(|t| t.capabilities().batch);
        let width = if batched { 0 } else { enc.pos_width };
        let too_large = || StorageError::ShapeOverflow {
            shape: lvl_sizes.to_vec(),
        };
        let mut positions = Vec::with_capacity(lvl_rank);
        let mut coordinates = Vec::with_capacity(lvl_rank);
        for l in 0..lvl_rank {
            let lt = enc.lvl_types[l];
            positions.push(if lt.has_positions() {
                let mut buf = IndexBuffer::new(width).ok_or_else(|| StorageError::Unsupported {
                    reason: format!("posWidth = {width}"),
                })?;
                // below dense levels every parent gets its segment: the final length is known
                // (batch-local: one extra leading 0 per batch)
                if enc.lvl_types[..l].iter().all(|t| t.is_dense()) {
                    let parents = lvl_sizes[..l]
                        .iter()
                        .try_fold(1usize, |a, &s| a.checked_mul(s))
                        .ok_or_else(too_large)?;
                    let len = if lt.capabilities().positions == PositionsArray::SegmentBounds {
                        parents.checked_add(batches.max(1))
                    } else {
                        parents.checked_mul(2)
                    }
                    .ok_or_else(too_large)?;
                    buf.try_reserve_exact(len).map_err(|_| too_large())?;
                }
                if lt.capabilities().positions == PositionsArray::SegmentBounds {
                    buf.push(0).map_err(|_| too_large())?;
                }
                Some(buf)
            } else {
                None
            });
            coordinates.push(if enc.owns_crd_buffer(l) {
                Some(crd_buffer_for(enc, l)?)
            } else {
                None
            });
        }
        Ok(Builder {
            enc,
            lvl_sizes,
            positions,
            coordinates,
            values: Vec::new(),
            cursor: vec![0; lvl_rank],
            count: vec![0; lvl_rank],
            loose_start: vec![0; lvl_rank],
            pending: Vec::new(),
            crd_owner: (0..lvl_rank)
                .map(|l| enc.crd_location(l).map(|(owner, _, _)| owner))
                .collect(),
        })
    }

    /// Number of levels.
    pub fn lvl_rank(&self) -> usize {
        self.enc.lvl_rank()
    }

    /// Appends coordinate `crd` of level `l` to the buffer that holds it (its own, or the
    /// interleaved buffer of its AoS COO region), width-checked.
    pub fn push_crd(&mut self, l: usize, crd: usize) -> Result<(), StorageError> {
        let owner = self.crd_owner[l].expect("level stores coordinates");
        let width = self.enc.crd_width;
        let buf = self.coordinates[owner]
            .as_mut()
            .expect("owner has a buffer");
        buf.push(crd).map_err(|value| StorageError::WidthOverflow {
            level: l,
            kind: BufferKind::Coordinate,
            value,
            width,
        })
    }

    /// Appends `times` explicit zeros to the values.
    ///
    /// Errors: [`StorageError::ShapeOverflow`] if the memory cannot be had (a dense level over a
    /// huge shape), instead of aborting.
    pub fn push_zeros(&mut self, times: usize) -> Result<(), StorageError> {
        grow(&mut self.values, times, V::zero(), self.lvl_sizes)
    }

    /// Format-dispatched `finalizeSegment`.
    pub fn finalize_segment(
        &mut self,
        l: usize,
        full: usize,
        count: usize,
    ) -> Result<(), StorageError> {
        if count == 0 {
            return Ok(());
        }
        dispatch!(self.enc.lvl_types[l].format, K => K::finalize_segment(self, l, full, count))
    }

    /// Format-dispatched `appendCrd`.
    pub fn append_crd(&mut self, l: usize, full: usize, crd: usize) -> Result<(), StorageError> {
        dispatch!(self.enc.lvl_types[l].format, K => K::append_crd(self, l, full, crd))
    }

    /// First level where `lc` differs from the previous insertion (MLIR `lexDiff`); a
    /// non-unique level with an equal coordinate counts as different (a new node per entry).
    fn lex_diff(&self, lc: &[usize]) -> Option<usize> {
        (0..self.lvl_rank())
            .find(|&l| lc[l] != self.cursor[l] || !self.enc.lvl_types[l].is_unique())
    }

    /// MLIR `endPath`: closes the open segments of levels `diff..`.
    fn end_path(&mut self, diff: usize) -> Result<(), StorageError> {
        for l in (diff..self.lvl_rank()).rev() {
            self.finalize_segment(l, self.cursor[l] + 1, 1)?;
        }
        Ok(())
    }

    /// MLIR `lexInsert`: `lc` must not precede the previous insertion in level order.
    pub fn lex_insert(&mut self, first: bool, lc: &[usize], v: V) -> Result<(), StorageError> {
        let (diff, mut full) = if first {
            (0, 0)
        } else {
            let d = self
                .lex_diff(lc)
                .expect("duplicates are merged before insertion");
            self.end_path(d + 1)?;
            (d, self.cursor[d] + 1)
        };
        for (l, &c) in lc.iter().enumerate().skip(diff) {
            self.append_crd(l, full, c)?;
            full = 0;
            self.cursor[l] = c;
        }
        let last = self.lvl_rank() - 1;
        if matches!(self.enc.lvl_types[last].format, LevelFormat::NOutOfM { .. }) {
            self.pending.last_mut().expect("n:m appended an entry").1 = v;
        } else {
            self.values.push(v);
        }
        Ok(())
    }

    /// Closes every open segment (or, for an empty tensor, the root segment).
    pub fn end_insert(&mut self, empty: bool) -> Result<(), StorageError> {
        if empty {
            self.finalize_segment(0, 0, 1)
        } else {
            self.end_path(0)
        }
    }
}

/// An empty coordinate buffer for level `l` with the encoding's `crdWidth`; packed widths
/// (1, 2, 4) only for n:m levels.
pub(crate) fn crd_buffer_for(enc: &Encoding, l: usize) -> Result<CrdBuffer, StorageError> {
    let w = enc.crd_width;
    let nm = matches!(enc.lvl_types[l].format, LevelFormat::NOutOfM { .. });
    if crate::packed::is_packed_width(w) && !nm {
        return Err(StorageError::Unsupported {
            reason: format!("level {l}: crdWidth = {w} packs coordinates below a byte, which only n:m levels allow"),
        });
    }
    CrdBuffer::new(w).ok_or_else(|| StorageError::Unsupported {
        reason: format!("crdWidth = {w}"),
    })
}

/// Appends `count` copies of position `value` to level `l`'s positions `pos` (reserving first).
///
/// Errors: [`StorageError::ShapeOverflow`] (naming `lvl_sizes`) if the memory cannot be had;
/// [`StorageError::WidthOverflow`] naming the level and value if `value` does not fit `posWidth`
/// (`width`).
pub(crate) fn push_positions(
    pos: &mut IndexBuffer,
    l: usize,
    value: usize,
    count: usize,
    width: u32,
    lvl_sizes: &[usize],
) -> Result<(), StorageError> {
    pos.try_reserve(count)
        .map_err(|_| StorageError::ShapeOverflow {
            shape: lvl_sizes.to_vec(),
        })?;
    pos.push_n(value, count)
        .map_err(|value| StorageError::WidthOverflow {
            level: l,
            kind: BufferKind::Position,
            value,
            width,
        })
}

/// Read-side view of the dynamic storage's arrays, as [`LevelKind::segment`] needs them.
pub(crate) struct Arrays<'a> {
    pub lvl_sizes: &'a [usize],
    pub lvl_types: &'a [sparse_ir::ir::LevelType],
    pub positions: &'a [Option<IndexBuffer>],
    /// Global stored positions per level.
    pub counts: &'a [usize],
    /// Number of batches (product of the leading batch level sizes; 1 without batch levels).
    pub batches: usize,
}

impl Arrays<'_> {
    /// Global positions of the level above `l` (1 for level 0).
    pub fn parent_count(&self, l: usize) -> usize {
        if l == 0 {
            1
        } else {
            self.counts[l - 1]
        }
    }
    /// `(batch, local parent, parents per batch, positions per batch)` of global parent `q` at
    /// level `l`.
    pub fn batch_split(&self, l: usize, q: usize) -> (usize, usize, usize, usize) {
        let b = self.batches.max(1);
        let per_parent = self.parent_count(l) / b;
        let per_count = self.counts[l] / b;
        if per_parent == 0 {
            return (0, q, 0, per_count);
        }
        (q / per_parent, q % per_parent, per_parent, per_count)
    }
}

/// A callback of [`Check::for_each_entry`]: `(level coordinates, position of the last level)`.
pub(crate) type EntryFn<'f> = dyn FnMut(&[usize], usize) -> Result<(), StorageError> + 'f;

/// Validation context over any [`SparseStorage`].
pub(crate) struct Check<'a, S: ?Sized> {
    pub s: &'a S,
    /// Number of batches (1 without batch levels; may be 0 for an empty batch level).
    pub batches: usize,
    /// Global stored positions of the levels checked so far (outermost first).
    pub counts: Vec<usize>,
}

impl<S: SparseStorage + ?Sized> Check<'_, S> {
    /// Stride of the coordinate buffer owned by level `l`: the length of the AoS COO region that
    /// starts at `l` (1 for a plain buffer).
    pub fn aos_stride(&self, l: usize) -> usize {
        let types = self.s.lvl_types();
        let mut k = l + 1;
        while k < types.len()
            && types[k].capabilities().count == PositionCount::OnePerParent
            && self.s.coordinate_view(k).is_none()
        {
            k += 1;
        }
        k - l
    }

    /// Coordinate of level `l` at global position `p`, honouring AoS interleaving.
    pub fn crd_at(&self, l: usize, p: usize) -> Option<usize> {
        let types = self.s.lvl_types();
        let mut owner = l;
        loop {
            if let Some(buf) = self.s.coordinate_view(owner) {
                let stride = self.aos_stride(owner);
                return buf.get(p.checked_mul(stride)?.checked_add(l - owner)?);
            }
            if owner == 0 || types[owner].capabilities().count != PositionCount::OnePerParent {
                return None;
            }
            owner -= 1;
        }
    }

    /// `(lo, hi)`: the global positions of level `l` under global parent position `q`, read off
    /// the arrays of a level that is already checked (`l < self.counts.len()`). Saturating
    /// arithmetic and missing entries read as 0: never panics.
    pub fn segment(&self, l: usize, q: usize) -> (usize, usize) {
        let size = self.s.lvl_sizes().get(l).copied().unwrap_or(0);
        let nb = self.batches.max(1);
        let parents = if l == 0 {
            1
        } else {
            self.counts.get(l - 1).copied().unwrap_or(0)
        };
        let per_parent = parents / nb;
        let per_count = self.counts.get(l).copied().unwrap_or(0) / nb;
        let (b, r) = match per_parent {
            0 => (0, q),
            pp => (q / pp, q % pp),
        };
        let base = b.saturating_mul(per_count);
        let pos = |i: usize| {
            self.s
                .position_buffer(l)
                .and_then(|p| p.get(i))
                .unwrap_or(0)
        };
        let lt = self.s.lvl_types()[l];
        let caps = lt.capabilities();
        match (caps.positions, caps.count) {
            (PositionsArray::SegmentBounds, _) => {
                let at = b
                    .saturating_mul(per_parent.saturating_add(1))
                    .saturating_add(r);
                (
                    base.saturating_add(pos(at)),
                    base.saturating_add(pos(at.saturating_add(1))),
                )
            }
            (PositionsArray::LoHiPairs, _) => {
                let at = q.saturating_mul(2);
                (
                    base.saturating_add(pos(at)),
                    base.saturating_add(pos(at.saturating_add(1))),
                )
            }
            (PositionsArray::None, PositionCount::LevelSize) => {
                let lo = q.saturating_mul(size);
                (lo, lo.saturating_add(size))
            }
            (PositionsArray::None, PositionCount::NPerParent) => {
                let n = lt.format.n_per_parent().unwrap_or(1);
                let lo = q.saturating_mul(n);
                (lo, lo.saturating_add(n))
            }
            (PositionsArray::None, PositionCount::OnePerParent | PositionCount::Stored) => {
                (q, q.saturating_add(1))
            }
        }
    }

    /// Coordinate of the checked level `l` at global position `p` under global parent position
    /// `q` (dense and batch levels: `p - q * size`).
    pub fn coord(&self, l: usize, q: usize, p: usize) -> usize {
        if self.s.lvl_types()[l].is_dense() {
            let size = self.s.lvl_sizes()[l];
            p.saturating_sub(q.saturating_mul(size))
        } else {
            self.crd_at(l, p).unwrap_or(0)
        }
    }

    /// Calls `f(level coordinates, position of the last level)` for every stored entry of the
    /// checked levels, in storage order.
    pub fn for_each_entry(&self, f: &mut EntryFn<'_>) -> Result<(), StorageError> {
        fn walk<S: SparseStorage + ?Sized>(
            cx: &Check<'_, S>,
            l: usize,
            q: usize,
            lc: &mut Vec<usize>,
            f: &mut EntryFn<'_>,
        ) -> Result<(), StorageError> {
            let (lo, hi) = cx.segment(l, q);
            for p in lo..hi {
                lc[l] = cx.coord(l, q, p);
                if l + 1 == lc.len() {
                    f(lc, p)?;
                } else {
                    walk(cx, l + 1, p, lc, f)?;
                }
            }
            Ok(())
        }
        let rank = self.counts.len();
        if rank == 0 {
            return Ok(());
        }
        walk(self, 0, 0, &mut vec![0; rank], f)
    }

    /// The coordinate buffer a level with its own `pos` owns, and the number of coordinates it
    /// holds for the level (buffer length / AoS stride).
    pub fn own_coords(&self, l: usize) -> Result<(IndexView<'_>, usize), StorageError> {
        let buf = self
            .s
            .coordinate_view(l)
            .ok_or_else(|| inv(l, "coordinates present", 0, "no coordinate buffer".into()))?;
        let stride = self.aos_stride(l);
        if buf.len() % stride != 0 {
            return Err(inv(
                l,
                "coordinate buffer holds whole COO tuples",
                buf.len(),
                format!("{} coordinates for tuples of {stride}", buf.len()),
            ));
        }
        Ok((buf, buf.len() / stride))
    }

    /// Checks the coordinates of level `l` at global positions `lo..hi` (one segment): present,
    /// below the level size (5.5), sorted and distinct where the level is ordered and unique (5.6),
    /// non-decreasing where ordered only, distinct where unique only.
    pub fn check_segment(&self, l: usize, lo: usize, hi: usize) -> Result<(), StorageError> {
        let lt = self.s.lvl_types()[l];
        let size = self.s.lvl_sizes()[l];
        let mut prev: Option<usize> = None;
        let check_distinct = lt.is_unique() && !lt.is_ordered();
        let mut seen = Vec::new();
        for p in lo..hi {
            let c = self.crd_at(l, p).ok_or_else(|| {
                inv(
                    l,
                    "coordinates cover positions",
                    p,
                    format!("no coordinate at position {p}"),
                )
            })?;
            if c >= size {
                return Err(inv(
                    l,
                    "5.5 coordinates below the level size",
                    p,
                    format!("coordinate {c} >= level size {size}"),
                ));
            }
            if let Some(q) = prev {
                if lt.is_ordered() && lt.is_unique() && c <= q {
                    return Err(inv(
                        l,
                        "5.6 coordinates sorted and distinct in a segment",
                        p,
                        format!("{c} after {q}"),
                    ));
                }
                if lt.is_ordered() && !lt.is_unique() && c < q {
                    return Err(inv(
                        l,
                        "coordinates non-decreasing in a segment",
                        p,
                        format!("{c} after {q}"),
                    ));
                }
            }
            if check_distinct {
                seen.push((c, p));
            }
            prev = Some(c);
        }
        if check_distinct {
            seen.sort_unstable();
            if let Some(w) = seen.windows(2).find(|w| w[0].0 == w[1].0) {
                let p = w[0].1.max(w[1].1);
                return Err(inv(
                    l,
                    "5.6 coordinates distinct in a segment",
                    p,
                    format!("coordinate {} repeated", w[0].0),
                ));
            }
        }
        Ok(())
    }
}

/// The invariant every size computation of validation checks: a length or count derived from
/// the level sizes (and the arrays) must fit `usize`.
pub(crate) const ADDRESSABLE: &str = "array lengths fit usize";

/// [`StorageError::Invariant`] [`ADDRESSABLE`] at level `level`: `detail` names the computation
/// that overflowed (which numbers, multiplied or added).
pub(crate) fn overflow(level: usize, position: usize, detail: String) -> StorageError {
    inv(level, ADDRESSABLE, position, detail)
}

/// A [`StorageError::Invariant`].
pub(crate) fn inv(
    level: usize,
    invariant: &'static str,
    position: usize,
    detail: String,
) -> StorageError {
    StorageError::Invariant {
        level,
        invariant,
        position,
        detail,
    }
}

/// Appends `times` copies of `v` to `buf`, reserving first: an allocation that cannot be had is
/// [`StorageError::ShapeOverflow`] (naming the level sizes) rather than a panic or an abort.
pub(crate) fn grow<T: Clone>(
    buf: &mut Vec<T>,
    times: usize,
    v: T,
    lvl_sizes: &[usize],
) -> Result<(), StorageError> {
    buf.try_reserve(times)
        .map_err(|_| StorageError::ShapeOverflow {
            shape: lvl_sizes.to_vec(),
        })?;
    buf.resize(buf.len() + times, v);
    Ok(())
}
