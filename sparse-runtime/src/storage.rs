//! The view every sparse tensor (generated or dynamic) gives of its arrays, and the algorithms
//! that need nothing more than that view: MLIR's `sparse_tensor.print` form and `validate`.

use std::fmt;

use sparse_dsl::ir::{LevelFormat, LevelType};

use crate::error::StorageError;
use crate::index::IndexSlice;

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
    /// The values array (`nse` elements, explicit zeros included).
    fn value_slice(&self) -> &[Self::Value];
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
/// coordinate buffer, in level order, `pos` before `crd`; values last, in `Display` form.
pub fn fmt_sparse_tensor<S>(s: &S, f: &mut fmt::Formatter<'_>) -> fmt::Result
where
    S: SparseStorage + ?Sized,
    S::Value: fmt::Display,
{
    fn list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: impl Iterator<Item = T>) -> fmt::Result {
        f.write_str("( ")?;
        for (i, x) in items.enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{x}")?;
        }
        f.write_str(" )")
    }
    writeln!(f, "---- Sparse Tensor ----")?;
    writeln!(f, "nse = {}", s.value_slice().len())?;
    f.write_str("dim = ")?;
    list(f, s.dim_shape().iter())?;
    f.write_str("\nlvl = ")?;
    list(f, s.lvl_sizes().iter())?;
    f.write_str("\n")?;
    for l in 0..s.lvl_types().len() {
        if let Some(p) = s.position_buffer(l) {
            write!(f, "pos[{l}] : ")?;
            list(f, p.to_vec().into_iter())?;
            f.write_str("\n")?;
        }
        if let Some(c) = s.coordinate_buffer(l) {
            write!(f, "crd[{l}] : ")?;
            list(f, c.to_vec().into_iter())?;
            f.write_str("\n")?;
        }
    }
    f.write_str("values : ")?;
    list(f, s.value_slice().iter())?;
    f.write_str("\n----\n")
}

/// Bytes held by the position, coordinate and value arrays (not counting `Vec` headers).
pub fn memory_bytes<S: SparseStorage + ?Sized>(s: &S) -> usize {
    let mut total = std::mem::size_of_val(s.value_slice());
    for l in 0..s.lvl_types().len() {
        total += s.position_buffer(l).map_or(0, |b| b.bytes());
        total += s.coordinate_buffer(l).map_or(0, |b| b.bytes());
    }
    total
}

/// Checks the storage invariants level by level, outermost first, and returns the first
/// violation as [`StorageError::Invariant`] naming the invariant, the level and the position.
///
/// Per level, with `parent` = number of positions of the level above (1 for level 0) and
/// `size` = the level size:
/// - dense: `count = parent * size`;
/// - compressed: `pos` has `parent + 1` entries, `pos[0] == 0`, non-decreasing, last entry equals
///   the number of coordinates (PyTorch's compressed invariants 5.1-5.6 for one level);
/// - loose_compressed: `pos` has `2 * parent` entries, `lo <= hi <= count` for each pair;
/// - singleton: one coordinate per parent position;
/// - every coordinate `< size`; strictly increasing within a segment when the level is ordered and
///   unique, non-decreasing when ordered only.
///
/// Finally the number of values must equal the count of the last level.
pub fn validate<S: SparseStorage + ?Sized>(s: &S) -> Result<(), StorageError> {
    let types = s.lvl_types();
    let sizes = s.lvl_sizes();
    let lvl_rank = types.len();
    // coordinate of level l at position p, honouring AoS interleaving
    let crd_at = |l: usize, p: usize| -> Option<usize> {
        // find owner: walk back over singleton levels to a buffer owner
        let mut owner = l;
        loop {
            if let Some(buf) = s.coordinate_buffer(owner) {
                if owner == l {
                    // own buffer: either plain, or AoS region start with stride
                    let stride = aos_stride(s, l);
                    return buf.get(p * stride);
                }
                let stride = aos_stride(s, owner);
                return buf.get(p * stride + (l - owner));
            }
            if owner == 0 || types[owner].format != LevelFormat::Singleton {
                return None;
            }
            owner -= 1;
        }
    };
    let mut parent = 1usize;
    for l in 0..lvl_rank {
        let lt = types[l];
        let size = sizes[l];
        let count;
        // segments (lo, hi) per parent position
        let mut segments: Vec<(usize, usize)> = Vec::new();
        match lt.format {
            LevelFormat::Dense | LevelFormat::Batch => {
                count = parent.checked_mul(size).ok_or(StorageError::ShapeOverflow { shape: sizes.to_vec() })?;
            }
            LevelFormat::Compressed => {
                let pos = s.position_buffer(l).ok_or_else(|| inv(l, "positions present", 0, "no positions array".into()))?;
                if pos.len() != parent + 1 {
                    return Err(inv(l, "positions length is parent size + 1", pos.len(), format!("{} positions for {} parents", pos.len(), parent)));
                }
                let pos = pos.to_vec();
                if pos[0] != 0 {
                    return Err(inv(l, "positions start at 0", 0, format!("pos[0] = {}", pos[0])));
                }
                for p in 1..pos.len() {
                    if pos[p] < pos[p - 1] {
                        return Err(inv(l, "positions non-decreasing", p, format!("pos[{}] = {} < pos[{}] = {}", p, pos[p], p - 1, pos[p - 1])));
                    }
                    segments.push((pos[p - 1], pos[p]));
                }
                count = pos[parent];
            }
            LevelFormat::LooseCompressed => {
                let pos = s.position_buffer(l).ok_or_else(|| inv(l, "positions present", 0, "no positions array".into()))?;
                if pos.len() != 2 * parent {
                    return Err(inv(l, "positions length is 2 x parent size", pos.len(), format!("{} positions for {} parents", pos.len(), parent)));
                }
                let pos = pos.to_vec();
                let mut hi_max = 0;
                for q in 0..parent {
                    let (lo, hi) = (pos[2 * q], pos[2 * q + 1]);
                    if lo > hi {
                        return Err(inv(l, "segment lo <= hi", 2 * q, format!("lo = {lo} > hi = {hi}")));
                    }
                    hi_max = hi_max.max(hi);
                    segments.push((lo, hi));
                }
                count = hi_max;
            }
            LevelFormat::Singleton | LevelFormat::NOutOfM { .. } => {
                count = parent;
                segments.extend((0..parent).map(|q| (q, q + 1)));
            }
        }
        if lt.has_coordinates() {
            for &(lo, hi) in &segments {
                let mut prev: Option<usize> = None;
                for p in lo..hi {
                    let c = crd_at(l, p).ok_or_else(|| inv(l, "coordinates cover positions", p, format!("no coordinate at position {p}")))?;
                    if c >= size {
                        return Err(inv(l, "coordinates in range", p, format!("coordinate {c} >= level size {size}")));
                    }
                    if let (Some(q), true) = (prev, lt.is_ordered() && lt.format != LevelFormat::Singleton) {
                        if lt.is_unique() && c <= q {
                            return Err(inv(l, "coordinates strictly increasing in a segment", p, format!("{c} after {q}")));
                        }
                        if !lt.is_unique() && c < q {
                            return Err(inv(l, "coordinates non-decreasing in a segment", p, format!("{c} after {q}")));
                        }
                    }
                    prev = Some(c);
                }
            }
        }
        parent = count;
    }
    if s.value_slice().len() != parent {
        return Err(inv(lvl_rank.saturating_sub(1), "one value per stored position", s.value_slice().len(), format!("{} values for {} positions", s.value_slice().len(), parent)));
    }
    Ok(())
}

/// Stride of the coordinate buffer owned by level `l`: the length of the AoS COO region that
/// starts at `l` (1 for a plain buffer).
fn aos_stride<S: SparseStorage + ?Sized>(s: &S, l: usize) -> usize {
    let types = s.lvl_types();
    let mut k = l + 1;
    while k < types.len() && types[k].format == LevelFormat::Singleton && s.coordinate_buffer(k).is_none() {
        k += 1;
    }
    k - l
}

fn inv(level: usize, invariant: &'static str, position: usize, detail: String) -> StorageError {
    StorageError::Invariant { level, invariant, position, detail }
}

/// Segment-level access used by the generic iterator [`LevelIter`]: the two questions every level
/// format answers (MLIR's `SparseIterator`: where does the segment under a parent position start
/// and end, and which coordinate sits at a position).
///
/// `L` is the level rank. Implemented by generated structs with one `match` arm per level.
pub trait LevelAccess<const L: usize> {
    /// `(lo, hi)`: the positions of level `l` under parent position `parent` (0 for level 0).
    fn segment(&self, l: usize, parent: usize) -> (usize, usize);
    /// The level-`l` coordinate at position `p` (whose parent position is `parent`).
    fn coord(&self, l: usize, parent: usize, p: usize) -> usize;
}

/// Iterates the stored entries of a [`LevelAccess`] in storage order, yielding
/// `(level coordinates, value position)`.
#[derive(Clone, Debug)]
pub struct LevelIter<'a, S, const L: usize> {
    s: &'a S,
    parent: [usize; L],
    pos: [usize; L],
    end: [usize; L],
    lc: [usize; L],
    depth: usize,
}

impl<'a, S: LevelAccess<L>, const L: usize> LevelIter<'a, S, L> {
    /// Starts at the first stored entry of `s`.
    pub fn new(s: &'a S) -> Self {
        let (lo, hi) = if L == 0 { (0, 0) } else { s.segment(0, 0) };
        let mut pos = [0; L];
        let mut end = [0; L];
        if L > 0 {
            pos[0] = lo;
            end[0] = hi;
        }
        LevelIter { s, parent: [0; L], pos, end, lc: [0; L], depth: 0 }
    }
}

impl<S: LevelAccess<L>, const L: usize> Iterator for LevelIter<'_, S, L> {
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
                self.lc[d] = self.s.coord(d, self.parent[d], p);
                if d + 1 == L {
                    return Some((self.lc, p));
                }
                let (lo, hi) = self.s.segment(d + 1, p);
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
