//! The view every sparse tensor (generated or dynamic) gives of its arrays, and the algorithms
//! that need nothing more than that view: MLIR's `sparse_tensor.print` form and `validate`.

use std::fmt;

use sparse_ir::ir::LevelType;
use sparse_ir::level::PositionCount;

use crate::error::StorageError;
use crate::index::IndexSlice;
use crate::level::{dispatch, inv, overflow, Check, LevelKind};
use crate::packed::IndexView;

/// Read access to the arrays of a sparse tensor, level by level.
///
/// Implemented by every struct `sparse_format!` generates and by
/// [`DynamicStorage`](crate::dynamic::DynamicStorage).
pub trait SparseStorage {
    /// The stored value type.
    type Value;
    /// Dimension sizes (elements), one per dimension.
    fn dim_shape(&self) -> &[usize];
    /// Level sizes (elements), one per level.
    fn lvl_sizes(&self) -> &[usize];
    /// Level types, outermost first.
    fn lvl_types(&self) -> &[LevelType];
    /// The positions array owned by level `l`, if the level stores one.
    fn position_buffer(&self, l: usize) -> Option<IndexSlice<'_>>;
    /// The coordinate buffer owned by level `l`, if the level owns one (for an AoS COO region,
    /// the interleaved buffer is owned by the region's first level; its singletons own none).
    fn coordinate_buffer(&self, l: usize) -> Option<IndexSlice<'_>>;
    /// The values array (`nse` elements, explicit zeros included); empty for a format whose
    /// encoding has an `explicitVal`, which stores none ([`Self::explicit_value`]).
    fn value_slice(&self) -> &[Self::Value];
    /// The constant every stored entry holds when the encoding has an `explicitVal` (a pattern
    /// format: no values array is stored, [`Self::value_slice`] is empty); `None` (the default)
    /// for a format that stores its values. The implicit value (`implicitVal`, always zero) is
    /// that of every entry not stored, with or without this constant.
    fn explicit_value(&self) -> Option<&Self::Value> {
        None
    }
    /// The coordinate buffer owned by level `l` as a view that also covers packed sub-byte
    /// buffers (`crdWidth` 1, 2, 4 of n:m levels). The default wraps
    /// [`Self::coordinate_buffer`]; storages with packed buffers override it. Print, validate and
    /// memory accounting read coordinates through this method.
    fn coordinate_view(&self, l: usize) -> Option<IndexView<'_>> {
        self.coordinate_buffer(l).map(IndexView::Plain)
    }
    /// The levels of an ELL counting map (`[c](i, j) -> (c * K * i : dense, i : dense, j : ..)`),
    /// which [`validate`] needs for the ELL slice rules; `None` (the default) for a format
    /// without a counting symbol, or whose counted dimension is not a level of its own.
    /// Generated structs and [`DynamicStorage`](crate::dynamic::DynamicStorage) with an ELL
    /// encoding override it.
    fn ell_levels(&self) -> Option<EllLevels> {
        None
    }
}

/// The two levels of an ELL counting map that [`validate`] reads: for
/// `[c](i, j) -> (c * K * i : dense, i : dense, j : compressed)`, `counting = 0` (the level whose
/// `dim_to_lvl` result holds the symbol; extent `K`, one slice per coordinate) and `row = 1` (the
/// level whose result is the counted dimension `i` alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EllLevels {
    /// The counting level (0-based).
    pub counting: usize,
    /// The level holding the counted dimension (the row), 0-based.
    pub row: usize,
}

/// Writes a tensor in the form of MLIR's `sparse_tensor.print`:
/// ```text
/// ---- Sparse Tensor ----
/// nse = 12
/// dim = ( 4, 6 )
/// lvl = ( 2, 3, 2, 2 )
/// pos[1] : ( 0, 2, 3 )
/// crd[1] : ( 0, 2, 1 )
/// values : ( 1, 2, 0, 3, 4, 0, 0, 5, 6, 7, 8, 0 )
/// ----
/// ```
/// One `pos[l]` line per level that stores positions and one `crd[l]` line per level that owns a
/// coordinate buffer, in level order, `pos` before `crd`; values last, in `Display` form. A
/// format with `explicitVal` ([`SparseStorage::explicit_value`]) stores no values array; its
/// `values` line holds the constant once per stored entry, as MLIR prints the values buffer of
/// such a tensor (its storage keeps one, which its sparsifier never reads).
///
/// With leading `batch` levels (sizes `b0, b1, ..`) every buffer is printed as MLIR prints its
/// batched memrefs (shape `b0 x b1 x .. x n`): one nested group per batch level and, innermost,
/// every element followed by a comma, e.g. `pos[2] : ( ( 0, 2, 3,  )( 0, 1, 3,  ) )`; `nse` is
/// the number of entries of one batch (the size of the innermost values dimension).
pub fn fmt_sparse_tensor<S>(s: &S, f: &mut fmt::Formatter<'_>) -> fmt::Result
where
    S: SparseStorage + ?Sized,
    S::Value: fmt::Display,
{
    fn list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
        f.write_str("( ")?;
        for (i, x) in items.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{x}")?;
        }
        f.write_str(" )")
    }
    // MLIR's printContents on a memref of rank > 1: nested groups, no separator between groups,
    // and (as its loop emits it) a comma after every innermost element.
    fn nested<T: fmt::Display>(
        f: &mut fmt::Formatter<'_>,
        items: &[T],
        batch_shape: &[usize],
    ) -> fmt::Result {
        f.write_str("( ")?;
        match batch_shape.split_first() {
            None => {
                for x in items {
                    write!(f, "{x}, ")?;
                }
            }
            Some((&b, rest)) => {
                let chunk = items.len().checked_div(b).unwrap_or(0);
                for k in 0..b {
                    nested(f, &items[k * chunk..(k + 1) * chunk], rest)?;
                }
            }
        }
        f.write_str(" )")
    }
    fn buffer<T: fmt::Display>(
        f: &mut fmt::Formatter<'_>,
        items: &[T],
        batch_shape: &[usize],
    ) -> fmt::Result {
        if batch_shape.is_empty() {
            list(f, items)
        } else {
            nested(f, items, batch_shape)
        }
    }
    let types = s.lvl_types();
    let sizes = s.lvl_sizes();
    let batch_levels = types
        .iter()
        .take_while(|t| t.capabilities().batch)
        .count()
        .min(sizes.len());
    let batch_shape = &sizes[..batch_levels];
    let batches: usize = batch_shape.iter().product();
    let stored = stored_entries(s);
    let nse = stored.checked_div(batches).unwrap_or(0);
    writeln!(f, "---- Sparse Tensor ----")?;
    writeln!(f, "nse = {nse}")?;
    f.write_str("dim = ")?;
    list(f, s.dim_shape())?;
    f.write_str("\nlvl = ")?;
    list(f, sizes)?;
    f.write_str("\n")?;
    for l in 0..types.len() {
        if let Some(p) = s.position_buffer(l) {
            write!(f, "pos[{l}] : ")?;
            buffer(f, &p.to_vec(), batch_shape)?;
            f.write_str("\n")?;
        }
        if let Some(c) = s.coordinate_view(l) {
            write!(f, "crd[{l}] : ")?;
            buffer(f, &c.to_vec(), batch_shape)?;
            f.write_str("\n")?;
        }
    }
    f.write_str("values : ")?;
    match s.explicit_value() {
        Some(v) => buffer(f, &vec![v; stored], batch_shape)?,
        None => buffer(f, s.value_slice(), batch_shape)?,
    }
    f.write_str("\n----\n")
}

/// Number of stored entries of `s` over all batches (MLIR's `nse` times the batch count): the
/// length of its values array, or for a format with `explicitVal` (no values array) the count
/// of its last level (0 when the arrays overflow a count, which [`validate`] reports).
pub fn stored_entries<S: SparseStorage + ?Sized>(s: &S) -> usize {
    match s.explicit_value() {
        Some(_) => level_counts(s)
            .ok()
            .and_then(|c| c.last().copied())
            .unwrap_or(0),
        None => s.value_slice().len(),
    }
}

/// Bytes held by the position, coordinate and value arrays (not counting `Vec` headers); a
/// format with `explicitVal` holds no value array, so no value bytes count.
pub fn memory_bytes<S: SparseStorage + ?Sized>(s: &S) -> usize {
    let mut total = std::mem::size_of_val(s.value_slice());
    for l in 0..s.lvl_types().len() {
        total += s.position_buffer(l).map_or(0, |b| b.bytes());
        total += s.coordinate_view(l).map_or(0, |b| b.bytes());
    }
    total
}

/// Checks the storage invariants level by level, outermost first, and returns the first
/// violation as [`StorageError::Invariant`] naming the invariant, the level and the position
/// (an index into the level's `pos` array, or a global position of its coordinates).
///
/// Leading `batch` levels split every buffer below them into `B` equal parts (`B` = product of
/// the batch level sizes); the rules below hold for every batch. Per level, with `parent` = number
/// of positions of the level above (1 for level 0) and `size` = the level size:
/// - dense, batch: `count = parent * size`;
/// - compressed (PyTorch's CSR/BSR index invariants of `bsr-invariants.md`, per batch):
///   `3.8` `pos` has `parent + 1` entries per batch; `5.1` it starts at 0; `5.3` it is
///   non-decreasing and (unique levels) no segment is longer than `size`; `5.2` the last entry
///   equals the number of coordinates; `5.5` every coordinate is `< size` (5.4, `>= 0`, holds
///   for unsigned buffers); `5.6` coordinates are sorted and distinct in a segment (ordered and
///   unique levels; non-decreasing for ordered non-unique levels; distinct for unique
///   non-ordered levels);
/// - loose_compressed: `pos` has `2 * parent` entries; each `(lo, hi)` pair has `lo <= hi <=`
///   the number of coordinates (segments may be in any order, with gaps); coordinates as above;
/// - singleton: one coordinate per parent position, `< size`;
/// - n:m: exactly `n` coordinates per block (`parent * n`), each `< m`, sorted and distinct in
///   a block;
/// - singleton (the trailing levels of a COO region `s..=e`, `s` (loose_)compressed): in each
///   segment of level `s`, within every run of neighbouring positions with the same prefix
///   `(crd[s], .., crd[k - 1])`, the coordinates of an ordered singleton level `k` are
///   non-decreasing ("coordinate tuples non-decreasing in a segment"), and increasing when `k`
///   is the region's last level `e` and unique ("coordinate tuples sorted and distinct in a
///   segment"); a unique `e` with a nonordered level in the region needs the whole tuples
///   distinct in the segment ("coordinate tuples distinct in a segment"). As in MLIR
///   (`isCOOType`), a COO's uniqueness is its last level's. For an ordered region the COO is
///   thus sorted lexicographically, and coalesced when unique (MLIR's ordered/unique properties;
///   PyTorch's `is_coalesced`);
/// - an AoS COO buffer holds whole tuples (its length is a multiple of the region length).
///
/// Finally the number of values must equal the count of the last level (a format with
/// `explicitVal` stores none: [`SparseStorage::explicit_value`]).
///
/// ELL counting maps ([`SparseStorage::ell_levels`], last level not dense): the stored entries of
/// a row, in level order of the levels other than the counting level, sit in slices `0, 1, ..`
/// one each ("ELL: entry k of a row in slice k", the layout `from_coo` builds, see
/// [`crate::dynamic`]), and with a unique last level no two of them have the same coordinates
/// ("ELL: a row's entries distinct across slices"); both are reported at the last level, at the
/// position of the offending entry.
///
/// Every length derived from the level sizes (`parent * size`, `parent + 1` positions per batch,
/// `2 * parent`, `parent * n`, the batch count) is computed with checked arithmetic: a shape whose
/// arrays could not be addressed is [`StorageError::Invariant`] `"array lengths fit usize"`
/// naming the level and the overflowing computation, before any loop over the level runs. Every
/// loop is bounded by the length of an array it reads. Never panics, whatever the arrays hold.
pub fn validate<S: SparseStorage + ?Sized>(s: &S) -> Result<(), StorageError> {
    let types = s.lvl_types();
    let sizes = s.lvl_sizes();
    let lvl_rank = types.len();
    if sizes.len() != lvl_rank {
        return Err(inv(
            0,
            "one size per level",
            sizes.len(),
            format!("{} sizes for {lvl_rank} levels", sizes.len()),
        ));
    }
    let mut batches = 1usize;
    for (l, t) in types.iter().enumerate() {
        if !t.capabilities().batch {
            break;
        }
        batches = batches.checked_mul(sizes[l]).ok_or_else(|| {
            overflow(
                l,
                0,
                format!(
                    "batch count {batches} x level size {} overflows usize",
                    sizes[l]
                ),
            )
        })?;
    }
    let mut cx = Check {
        s,
        batches,
        counts: Vec::with_capacity(lvl_rank),
    };
    let mut parent = 1usize;
    for (l, t) in types.iter().enumerate() {
        parent = dispatch!(t.format, K => K::check(&cx, l, parent))?;
        cx.counts.push(parent);
    }
    if s.explicit_value().is_none() && s.value_slice().len() != parent {
        return Err(inv(
            lvl_rank.saturating_sub(1),
            "one value per stored position",
            s.value_slice().len(),
            format!("{} values for {} positions", s.value_slice().len(), parent),
        ));
    }
    if let Some(ell) = s.ell_levels() {
        check_ell(&cx, ell)?;
    }
    Ok(())
}

/// The ELL slice rules (see [`validate`]) over the checked levels of `cx`.
fn check_ell<S: SparseStorage + ?Sized>(
    cx: &Check<'_, S>,
    ell: EllLevels,
) -> Result<(), StorageError> {
    let types = cx.s.lvl_types();
    let rank = types.len();
    if ell.counting >= rank
        || ell.row >= rank
        || ell.counting == ell.row
        || types[rank - 1].is_dense()
    {
        return Ok(());
    }
    let last = rank - 1;
    // (row, coordinates of the other levels, slice, position of the last level)
    let mut entries: Vec<(usize, Vec<usize>, usize, usize)> = Vec::new();
    cx.for_each_entry(&mut |lc, p| {
        let key = (0..rank)
            .filter(|&l| l != ell.counting)
            .map(|l| lc[l])
            .collect();
        entries.push((lc[ell.row], key, lc[ell.counting], p));
        Ok(())
    })?;
    entries.sort_unstable();
    let show = |key: &[usize]| {
        let c: Vec<String> = key.iter().map(|c| c.to_string()).collect();
        format!("({})", c.join(", "))
    };
    let mut k = 0;
    for i in 0..entries.len() {
        let (row, key, slice, p) = &entries[i];
        if i > 0 && entries[i - 1].0 == *row {
            k += 1;
            let prev = &entries[i - 1];
            if types[last].is_unique() && prev.1 == *key {
                return Err(inv(
                    last,
                    "ELL: a row's entries distinct across slices",
                    *p,
                    format!(
                        "row {row}: level coordinates {} (without the counting level {}) in slices {} and {slice}",
                        show(key),
                        ell.counting,
                        prev.2
                    ),
                ));
            }
        } else {
            k = 0;
        }
        if *slice != k {
            return Err(inv(
                last,
                "ELL: entry k of a row in slice k",
                *p,
                format!(
                    "row {row}: entry {k} of the row in level order, level coordinates {} (without the counting level {}), sits in slice {slice}",
                    show(key),
                    ell.counting
                ),
            ));
        }
    }
    Ok(())
}

/// Iterates the stored entries of any [`SparseStorage`] of level rank `L` in storage order,
/// yielding `(level coordinates, value position)`: one walk over the levels that reads each
/// level's segments and coordinates through its format's capabilities (MLIR's
/// `SparseIterator`), so a generated struct needs no iterator of its own. Arrays that break the
/// storage invariants (only reachable through `from_raw_parts_unchecked`) end the walk early or
/// read as coordinate 0; it never panics on them.
pub struct LevelIter<'a, S: ?Sized, const L: usize> {
    cx: Check<'a, S>,
    parent: [usize; L],
    pos: [usize; L],
    end: [usize; L],
    lc: [usize; L],
    depth: usize,
}

impl<'a, S: SparseStorage + ?Sized, const L: usize> LevelIter<'a, S, L> {
    /// Starts at the first stored entry of `s` (nothing if its level rank is not `L`).
    pub fn new(s: &'a S) -> Self {
        let types = s.lvl_types();
        let batches = (0..types.len())
            .take_while(|&l| types[l].capabilities().batch)
            .try_fold(1usize, |b, l| b.checked_mul(s.lvl_sizes()[l]))
            .unwrap_or(0);
        let counts = match level_counts(s) {
            Ok(c) if c.len() == L => c,
            _ => vec![0; L],
        };
        let cx = Check { s, batches, counts };
        let (lo, hi) = if L == 0 { (0, 0) } else { cx.segment(0, 0) };
        let mut pos = [0; L];
        let mut end = [0; L];
        if L > 0 {
            pos[0] = lo;
            end[0] = hi;
        }
        LevelIter {
            cx,
            parent: [0; L],
            pos,
            end,
            lc: [0; L],
            depth: 0,
        }
    }
}

impl<S: SparseStorage + ?Sized, const L: usize> Iterator for LevelIter<'_, S, L> {
    type Item = ([usize; L], usize);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if L == 0 {
            return None;
        }
        loop {
            let d = self.depth;
            if self.pos[d] < self.end[d] {
                let p = self.pos[d];
                self.pos[d] += 1;
                self.lc[d] = self.cx.coord(d, self.parent[d], p);
                if d + 1 == L {
                    return Some((self.lc, p));
                }
                let (lo, hi) = self.cx.segment(d + 1, p);
                self.parent[d + 1] = p;
                self.pos[d + 1] = lo;
                self.end[d + 1] = hi;
                self.depth = d + 1;
            } else if d == 0 {
                return None;
            } else {
                self.depth = d - 1;
            }
        }
    }
}

/// A format that can be assembled from a COO tensor: every struct `sparse_format!` generates.
/// The target of `convert::<T>()`.
pub trait FromCoo<V>: Sized {
    /// Builds the storage of `coo` (dimension coordinates, any order, duplicates summed by a
    /// unique last level).
    ///
    /// Errors: as the format's `from_coo` ([`StorageError::RankMismatch`],
    /// [`StorageError::CoordinateOutOfRange`], [`StorageError::WidthOverflow`], ...).
    fn from_coo_tensor(coo: &crate::coo::CooTensor<V>) -> Result<Self, StorageError>;

    /// Builds the storage of the stored entries of `s` that are not zero (a conversion; see
    /// [`crate::generated::convert`]). The default goes through a COO tensor in `s`'s order
    /// ([`crate::generated::nonzero_coo`]); generated formats assemble straight from `s`
    /// ([`crate::generated::assemble_entries`]).
    ///
    /// Errors: as [`FromCoo::from_coo_tensor`].
    fn from_entries<const D: usize, S: crate::generated::Entries<D, Value = V>>(
        s: &S,
    ) -> Result<Self, StorageError>
    where
        V: crate::Value,
    {
        Self::from_coo_tensor(&crate::generated::nonzero_coo(s))
    }
}

/// Global stored positions per level of `s` (over all batches), read off its arrays: dense and
/// batch levels `parent * size`, (loose_)compressed levels their number of coordinates
/// (coordinate buffer length / AoS stride), singleton levels one per parent, n:m levels `n` per
/// parent block.
///
/// Errors: [`StorageError::Invariant`] `"array lengths fit usize"` naming the first level whose
/// count (`parent * size`, or `parent * n`) overflows `usize` (the same error [`validate`]
/// reports). Never panics.
pub fn level_counts<S: SparseStorage + ?Sized>(s: &S) -> Result<Vec<usize>, StorageError> {
    let types = s.lvl_types();
    let sizes = s.lvl_sizes();
    let mut counts = Vec::with_capacity(types.len());
    let mut parent = 1usize;
    for (l, lt) in types.iter().enumerate() {
        let c = match lt.capabilities().count {
            PositionCount::LevelSize => {
                let size = sizes.get(l).copied().unwrap_or(0);
                parent.checked_mul(size).ok_or_else(|| {
                    overflow(
                        l,
                        0,
                        format!("{parent} parent positions x level size {size} overflows usize"),
                    )
                })?
            }
            PositionCount::Stored => {
                let mut stride = 1;
                while l + stride < types.len()
                    && types[l + stride].capabilities().count == PositionCount::OnePerParent
                    && s.coordinate_view(l + stride).is_none()
                {
                    stride += 1;
                }
                s.coordinate_view(l).map_or(0, |c| c.len() / stride)
            }
            PositionCount::OnePerParent => parent,
            PositionCount::NPerParent => {
                let n = lt.format.n_per_parent().unwrap_or(1);
                parent.checked_mul(n).ok_or_else(|| {
                    overflow(
                        l,
                        0,
                        format!("coordinates length {parent} blocks x n = {n} overflows usize"),
                    )
                })?
            }
        };
        counts.push(c);
        parent = c;
    }
    Ok(counts)
}

/// Splits `units` rows (or block rows) into at most `parts` contiguous ranges holding about the
/// same number of stored entries, for parallel kernels (nnz-balanced, as faer and MKL split
/// CSR SpMV). `before(r)` is the number of entries in rows `0..r` (non-decreasing, e.g. a
/// compressed level's `pos[r]`). Returns the range boundaries: `0 = b[0] <= b[1] <= ... = units`.
pub fn balanced_splits(units: usize, parts: usize, before: impl Fn(usize) -> usize) -> Vec<usize> {
    let parts = parts.clamp(1, units.max(1));
    let total = before(units) as u128;
    let mut out = Vec::with_capacity(parts + 1);
    out.push(0);
    for k in 1..parts {
        let target = (total * k as u128 / parts as u128) as usize;
        let (mut lo, mut hi) = (*out.last().expect("starts with 0"), units);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(mid) < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        out.push(lo);
    }
    out.push(units);
    out
}

/// The first of `values` (one per stored position, in storage order) that differs from
/// `explicit`, as [`StorageError::ExplicitValueMismatch`] with the dimension coordinates
/// `coords_of(position)` gives; `Ok` when every value equals it (`==`: a NaN constant admits no
/// stored entry).
pub fn check_explicit_values<V: PartialEq + fmt::Display>(
    explicit: &V,
    values: &[V],
    coords_of: impl FnOnce(usize) -> Vec<usize>,
) -> Result<(), StorageError> {
    match values.iter().position(|v| v != explicit) {
        None => Ok(()),
        Some(p) => Err(StorageError::ExplicitValueMismatch {
            coords: coords_of(p),
            value: values[p].to_string(),
            explicit: explicit.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::balanced_splits;

    #[test]
    fn splits_balance_entries() {
        // rows with 0, 10, 0, 10, 10, 0 entries: pos = 0 0 10 10 20 30 30
        let pos = [0usize, 0, 10, 10, 20, 30, 30];
        assert_eq!(balanced_splits(6, 3, |r| pos[r]), vec![0, 2, 4, 6]);
        assert_eq!(balanced_splits(6, 1, |r| pos[r]), vec![0, 6]);
        assert_eq!(balanced_splits(0, 4, |_| 0), vec![0, 0]);
        assert_eq!(balanced_splits(2, 8, |r| r), vec![0, 1, 2]);
    }
}
