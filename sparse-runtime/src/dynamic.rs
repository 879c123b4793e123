//! The dynamic (interpreted) storage: any [`Encoding`] built at run time.
//!
//! This is the reference every generated format is tested against: for the same input it must
//! hold exactly the arrays the generated struct holds. Assembly follows MLIR's
//! `SparseTensorStorage` (`lexInsert` / `endPath` / `finalizeSegment` of the sparse runtime
//! library): entries are sorted in level order, then inserted one by one; a dense level fills
//! the coordinates nobody inserted with explicit zeros, a compressed level closes its segments
//! by appending positions.
//!
//! Supported now: `dense`, `compressed`, `loose_compressed`, `singleton` levels (any properties),
//! maps that are permutations or `floordiv`/`mod` block splits with a constant block size. Other
//! features (`batch`, n:m levels, slices, counting symbols) give [`StorageError::Unsupported`].

use std::fmt;

use sparse_dsl::ir::{Encoding, LevelFormat};

use crate::coo::CooTensor;
use crate::error::{BufferKind, StorageError};
use crate::index::{IndexBuffer, IndexSlice};
use crate::storage::{self, SparseStorage};
use crate::value::Value;

/// A sparse tensor whose format is an [`Encoding`] value chosen at run time.
///
/// Arrays: for each level `l`, `positions[l]` (compressed: parent-size + 1 entries;
/// loose_compressed: 2 x parent-size entries, `(lo, hi)` pairs) and `coordinates[l]` (one per
/// stored position of the level, or for an array-of-structs COO region, one interleaved buffer on
/// the region's first level holding all the region's coordinates entry by entry), both with the
/// encoding's widths; `values` holds one value per stored position of the last level (`nse`).
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicStorage<V> {
    encoding: Encoding,
    dim_shape: Vec<usize>,
    lvl_sizes: Vec<usize>,
    positions: Vec<Option<IndexBuffer>>,
    coordinates: Vec<Option<IndexBuffer>>,
    values: Vec<V>,
}

/// Checks that the storage layer can hold `encoding` with `dim_shape`, and returns the level sizes.
fn check_supported(encoding: &Encoding, dim_shape: &[usize]) -> Result<Vec<usize>, StorageError> {
    if dim_shape.len() != encoding.dim_rank() {
        return Err(StorageError::RankMismatch { expected: encoding.dim_rank(), got: dim_shape.len() });
    }
    for (l, lt) in encoding.lvl_types.iter().enumerate() {
        match lt.format {
            LevelFormat::Batch | LevelFormat::NOutOfM { .. } => {
                return Err(StorageError::Unsupported { reason: format!("level {l}: level format {} is not stored yet", lt.format.mlir_name()) })
            }
            _ => {}
        }
    }
    if encoding.dim_slices.is_some() {
        return Err(StorageError::Unsupported { reason: "dimension slices are not stored yet".into() });
    }
    if encoding.dim_to_lvl.num_symbols > 0 {
        return Err(StorageError::Unsupported { reason: "counting symbols (ELL) are not stored yet".into() });
    }
    for r in &encoding.dim_to_lvl.results {
        if let sparse_dsl::ir::AffineExpr::FloorDiv(a, b) = r {
            if let (Some(dim), Some(block)) = (a.as_var(), b.as_constant().and_then(|b| usize::try_from(b).ok())) {
                if block > 0 && dim_shape[dim] % block != 0 {
                    return Err(StorageError::BlockShape { dim, size: dim_shape[dim], block });
                }
            }
        }
    }
    let sizes = encoding.lvl_sizes(dim_shape).ok_or_else(|| StorageError::Unsupported {
        reason: "level sizes cannot be derived from the map (only permutations and floordiv/mod blocks)".into(),
    })?;
    Ok(sizes)
}

/// Assembly state: MLIR's `lvlCursor` plus per-level node counts.
struct Builder<'e, V> {
    enc: &'e Encoding,
    lvl_sizes: &'e [usize],
    positions: Vec<Option<IndexBuffer>>,
    coordinates: Vec<Option<IndexBuffer>>,
    values: Vec<V>,
    cursor: Vec<usize>,
    /// Nodes (stored positions) created so far at each level.
    count: Vec<usize>,
    /// loose_compressed: where the next segment starts.
    loose_start: Vec<usize>,
}

impl<'e, V: Value> Builder<'e, V> {
    fn new(enc: &'e Encoding, lvl_sizes: &'e [usize]) -> Result<Self, StorageError> {
        let lvl_rank = enc.lvl_rank();
        let mut positions = Vec::with_capacity(lvl_rank);
        let mut coordinates = Vec::with_capacity(lvl_rank);
        let bad_width = |w: u32| StorageError::Unsupported { reason: format!("bit width {w}") };
        for l in 0..lvl_rank {
            let lt = enc.lvl_types[l];
            let mut pos = None;
            if lt.has_positions() {
                let mut b = IndexBuffer::new(enc.pos_width).ok_or_else(|| bad_width(enc.pos_width))?;
                if lt.format == LevelFormat::Compressed {
                    b.push(0).expect("0 fits any width");
                }
                pos = Some(b);
            }
            positions.push(pos);
            coordinates.push(if enc.owns_crd_buffer(l) {
                Some(IndexBuffer::new(enc.crd_width).ok_or_else(|| bad_width(enc.crd_width))?)
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
        })
    }

    fn lvl_rank(&self) -> usize {
        self.enc.lvl_rank()
    }

    /// First level where `lc` differs from the previous insertion (MLIR `lexDiff`); a
    /// non-unique level with an equal coordinate counts as different (a new node per entry).
    fn lex_diff(&self, lc: &[usize]) -> Option<usize> {
        (0..self.lvl_rank()).find(|&l| lc[l] != self.cursor[l] || !self.enc.lvl_types[l].is_unique())
    }

    fn push_pos(&mut self, l: usize, value: usize, times: usize) -> Result<(), StorageError> {
        let width = self.enc.pos_width;
        let buf = self.positions[l].as_mut().expect("level has positions");
        buf.push_n(value, times).map_err(|value| StorageError::WidthOverflow { level: l, kind: BufferKind::Position, value, width })
    }

    /// MLIR `finalizeSegment`: closes `count` segments of level `l`, the first of which already
    /// holds coordinates `0..full` (dense levels only).
    fn finalize_segment(&mut self, l: usize, full: usize, count: usize) -> Result<(), StorageError> {
        if count == 0 {
            return Ok(());
        }
        match self.enc.lvl_types[l].format {
            LevelFormat::Compressed => self.push_pos(l, self.count[l], count),
            LevelFormat::LooseCompressed => {
                for _ in 0..count {
                    let (lo, hi) = (self.loose_start[l], self.count[l]);
                    self.push_pos(l, lo, 1)?;
                    self.push_pos(l, hi, 1)?;
                    self.loose_start[l] = hi;
                }
                Ok(())
            }
            LevelFormat::Singleton | LevelFormat::NOutOfM { .. } => Ok(()),
            LevelFormat::Dense | LevelFormat::Batch => {
                let size = self.lvl_sizes[l];
                let n = count
                    .checked_mul(size - full)
                    .ok_or_else(|| StorageError::ShapeOverflow { shape: self.lvl_sizes.to_vec() })?;
                if l + 1 == self.lvl_rank() {
                    self.values.resize(self.values.len() + n, V::zero());
                    Ok(())
                } else {
                    self.finalize_segment(l + 1, 0, n)
                }
            }
        }
    }

    /// MLIR `appendCrd`.
    fn append_crd(&mut self, l: usize, full: usize, crd: usize) -> Result<(), StorageError> {
        let lt = self.enc.lvl_types[l];
        if lt.is_dense() {
            if crd > full {
                if l + 1 == self.lvl_rank() {
                    self.values.resize(self.values.len() + (crd - full), V::zero());
                } else {
                    self.finalize_segment(l + 1, 0, crd - full)?;
                }
            }
        } else {
            let (owner, _, _) = self.enc.crd_location(l).expect("level stores coordinates");
            let width = self.enc.crd_width;
            let buf = self.coordinates[owner].as_mut().expect("owner has a buffer");
            buf.push(crd).map_err(|value| StorageError::WidthOverflow { level: l, kind: BufferKind::Coordinate, value, width })?;
        }
        self.count[l] += 1;
        Ok(())
    }

    /// MLIR `endPath`: closes the open segments of levels `diff..`.
    fn end_path(&mut self, diff: usize) -> Result<(), StorageError> {
        for l in (diff..self.lvl_rank()).rev() {
            self.finalize_segment(l, self.cursor[l] + 1, 1)?;
        }
        Ok(())
    }

    /// MLIR `lexInsert`: `lc` must not precede the previous insertion in level order.
    fn lex_insert(&mut self, first: bool, lc: &[usize], v: V) -> Result<(), StorageError> {
        let (diff, mut full) = if first {
            (0, 0)
        } else {
            let d = self.lex_diff(lc).expect("duplicates are merged before insertion");
            self.end_path(d + 1)?;
            (d, self.cursor[d] + 1)
        };
        for (l, &c) in lc.iter().enumerate().skip(diff) {
            self.append_crd(l, full, c)?;
            full = 0;
            self.cursor[l] = c;
        }
        self.values.push(v);
        Ok(())
    }

    fn end_insert(&mut self, empty: bool) -> Result<(), StorageError> {
        if empty {
            self.finalize_segment(0, 0, 1)
        } else {
            self.end_path(0)
        }
    }
}

impl<V: Value> DynamicStorage<V> {
    /// Builds the storage of `coo` (dimension coordinates, any order, duplicates allowed) in the
    /// format `encoding`.
    ///
    /// Entries are sorted in level order (stable); entries with equal coordinates are summed when
    /// the last level is unique and kept apart otherwise.
    ///
    /// Errors: [`StorageError::RankMismatch`] if `coo.shape` does not have the encoding's dimension
    /// rank; [`StorageError::CoordinateOutOfRange`] naming the entry, dimension and value;
    /// [`StorageError::WidthOverflow`] naming the level when a position or coordinate does not
    /// fit `posWidth`/`crdWidth`; [`StorageError::Unsupported`] for features not stored yet.
    pub fn from_coo(encoding: &Encoding, coo: &CooTensor<V>) -> Result<Self, StorageError> {
        let lvl_sizes = check_supported(encoding, &coo.shape)?;
        let dim_rank = encoding.dim_rank();
        let lvl_rank = encoding.lvl_rank();
        if coo.coords.len() != coo.values.len() * dim_rank {
            return Err(StorageError::LengthMismatch { operand: "COO coordinates", expected: coo.values.len() * dim_rank, got: coo.coords.len() });
        }
        let n = coo.len();
        let mut lvl_coords = vec![0usize; n * lvl_rank];
        for e in 0..n {
            let dc = coo.entry_coords(e);
            for (d, (&c, &size)) in dc.iter().zip(&coo.shape).enumerate() {
                if c >= size {
                    return Err(StorageError::CoordinateOutOfRange { entry: e, dim: d, coordinate: c, size });
                }
            }
            encoding
                .dim_to_lvl_coords(dc, &mut lvl_coords[e * lvl_rank..(e + 1) * lvl_rank])
                .ok_or_else(|| StorageError::Unsupported { reason: "dim_to_lvl does not evaluate".into() })?;
        }
        let key = |e: usize| &lvl_coords[e * lvl_rank..(e + 1) * lvl_rank];
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| key(a).cmp(key(b)));
        let merge = encoding.lvl_types.last().is_some_and(|t| t.is_unique());

        let mut b = Builder::new(encoding, &lvl_sizes)?;
        let mut first = true;
        let mut k = 0;
        while k < n {
            let e = order[k];
            let mut v = coo.values[e];
            k += 1;
            if merge {
                while k < n && key(order[k]) == key(e) {
                    v += coo.values[order[k]];
                    k += 1;
                }
            }
            b.lex_insert(first, key(e), v)?;
            first = false;
        }
        b.end_insert(n == 0)?;
        Ok(DynamicStorage {
            encoding: encoding.clone(),
            dim_shape: coo.shape.clone(),
            positions: b.positions,
            coordinates: b.coordinates,
            values: b.values,
            lvl_sizes,
        })
    }

    /// Builds the storage of a dense tensor given row-major (last dimension fastest) in `data`;
    /// elements equal to zero are not stored (except where a dense level stores them anyway).
    ///
    /// Errors: [`StorageError::LengthMismatch`] if `data.len()` is not the product of `dim_shape`;
    /// otherwise as [`Self::from_coo`].
    pub fn from_dense(encoding: &Encoding, dim_shape: &[usize], data: &[V]) -> Result<Self, StorageError> {
        let total = checked_product(dim_shape)?;
        if data.len() != total {
            return Err(StorageError::LengthMismatch { operand: "dense input", expected: total, got: data.len() });
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

    /// The encoding.
    pub fn encoding(&self) -> &Encoding {
        &self.encoding
    }
    /// Dimension sizes.
    pub fn shape(&self) -> &[usize] {
        &self.dim_shape
    }
    /// Number of stored entries (explicit zeros included), MLIR's `nse`.
    pub fn nse(&self) -> usize {
        self.values.len()
    }
    /// The values array.
    pub fn values(&self) -> &[V] {
        &self.values
    }
    /// The positions array of level `l`, if it stores one.
    pub fn positions(&self, l: usize) -> Option<IndexSlice<'_>> {
        self.positions.get(l)?.as_ref().map(|b| b.as_slice())
    }
    /// The coordinate buffer owned by level `l` (see [`SparseStorage::coordinate_buffer`]).
    pub fn coordinates(&self, l: usize) -> Option<IndexSlice<'_>> {
        self.coordinates.get(l)?.as_ref().map(|b| b.as_slice())
    }

    /// The `(lo, hi)` range of positions of level `l` under parent position `parent`.
    fn segment(&self, l: usize, parent: usize) -> (usize, usize) {
        let lt = self.encoding.lvl_types[l];
        match lt.format {
            LevelFormat::Dense | LevelFormat::Batch => {
                let s = self.lvl_sizes[l];
                (parent * s, parent * s + s)
            }
            LevelFormat::Compressed => {
                let p = self.positions[l].as_ref().expect("compressed has positions");
                (p.get(parent).unwrap_or(0), p.get(parent + 1).unwrap_or(0))
            }
            LevelFormat::LooseCompressed => {
                let p = self.positions[l].as_ref().expect("loose_compressed has positions");
                (p.get(2 * parent).unwrap_or(0), p.get(2 * parent + 1).unwrap_or(0))
            }
            LevelFormat::Singleton | LevelFormat::NOutOfM { .. } => (parent, parent + 1),
        }
    }

    /// Coordinate of level `l` at position `p` (whose parent position is `parent`).
    fn crd(&self, l: usize, parent: usize, p: usize) -> usize {
        match self.encoding.crd_location(l) {
            None => p - parent * self.lvl_sizes[l],
            Some((owner, stride, offset)) => {
                self.coordinates[owner].as_ref().and_then(|b| b.get(p * stride + offset)).unwrap_or(usize::MAX)
            }
        }
    }

    /// Calls `f(level coordinates, value position)` for every stored entry in storage order.
    fn walk(&self, l: usize, parent: usize, lc: &mut Vec<usize>, f: &mut dyn FnMut(&[usize], usize)) {
        let (lo, hi) = self.segment(l, parent);
        for p in lo..hi {
            lc[l] = self.crd(l, parent, p);
            if l + 1 == lc.len() {
                f(lc, p);
            } else {
                self.walk(l + 1, p, lc, f);
            }
        }
    }

    /// All stored entries in storage order as `(level coordinates, value)`.
    pub fn iter_levels(&self) -> impl Iterator<Item = (Vec<usize>, &V)> + '_ {
        let mut out = Vec::with_capacity(self.nse());
        let mut lc = vec![0; self.encoding.lvl_rank()];
        self.walk(0, 0, &mut lc, &mut |lc, p| out.push((lc.to_vec(), p)));
        out.into_iter().map(move |(lc, p)| (lc, &self.values[p]))
    }

    /// All stored entries in storage order as `(dimension coordinates, value)` (through
    /// `lvl_to_dim`).
    pub fn iter(&self) -> impl Iterator<Item = (Vec<usize>, &V)> + '_ {
        let dim_rank = self.encoding.dim_rank();
        self.iter_levels().map(move |(lc, v)| {
            let mut dc = vec![0; dim_rank];
            self.encoding.lvl_to_dim_coords(&lc, &mut dc);
            (dc, v)
        })
    }

    /// The value stored at dimension coordinates `coords`, or `None` if nothing is stored there
    /// (or `coords` is out of range or of the wrong rank). With stored duplicates, the first.
    pub fn get(&self, coords: &[usize]) -> Option<&V> {
        if coords.len() != self.dim_shape.len() || coords.iter().zip(&self.dim_shape).any(|(c, s)| c >= s) {
            return None;
        }
        let mut lc = vec![0; self.encoding.lvl_rank()];
        self.encoding.dim_to_lvl_coords(coords, &mut lc)?;
        self.locate(0, 0, &lc).map(|p| &self.values[p])
    }

    fn locate(&self, l: usize, parent: usize, lc: &[usize]) -> Option<usize> {
        let (lo, hi) = self.segment(l, parent);
        let last = l + 1 == lc.len();
        if self.encoding.lvl_types[l].is_dense() {
            let p = lo + lc[l];
            return if last { Some(p) } else { self.locate(l + 1, p, lc) };
        }
        (lo..hi).filter(|&p| self.crd(l, parent, p) == lc[l]).find_map(|p| if last { Some(p) } else { self.locate(l + 1, p, lc) })
    }

    /// The dense tensor, row-major (last dimension fastest); stored duplicates are summed.
    ///
    /// Errors: [`StorageError::ShapeOverflow`] if the element count does not fit `usize`.
    pub fn to_dense(&self) -> Result<Vec<V>, StorageError> {
        let total = checked_product(&self.dim_shape)?;
        let mut out = vec![V::zero(); total];
        for (dc, v) in self.iter() {
            let flat = dc.iter().zip(&self.dim_shape).fold(0, |acc, (c, s)| acc * s + c);
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
            return Err(StorageError::RankMismatch { expected: 2, got: self.dim_shape.len() });
        }
        check_len("x", self.dim_shape[1], x.len())?;
        check_len("y", self.dim_shape[0], y.len())?;
        y.iter_mut().for_each(|v| *v = V::zero());
        for (dc, v) in self.iter() {
            y[dc[0]] += *v * x[dc[1]];
        }
        Ok(())
    }

    /// Checks every storage invariant; see [`storage::validate`].
    pub fn validate(&self) -> Result<(), StorageError> {
        storage::validate(self)
    }

    /// Bytes held by positions, coordinates and values.
    pub fn memory_bytes(&self) -> usize {
        storage::memory_bytes(self)
    }
}

impl<V> SparseStorage for DynamicStorage<V> {
    type Value = V;
    fn dim_shape(&self) -> &[usize] {
        &self.dim_shape
    }
    fn lvl_sizes(&self) -> &[usize] {
        &self.lvl_sizes
    }
    fn lvl_types(&self) -> &[sparse_dsl::ir::LevelType] {
        &self.encoding.lvl_types
    }
    fn position_buffer(&self, l: usize) -> Option<IndexSlice<'_>> {
        self.positions.get(l)?.as_ref().map(|b| b.as_slice())
    }
    fn coordinate_buffer(&self, l: usize) -> Option<IndexSlice<'_>> {
        self.coordinates.get(l)?.as_ref().map(|b| b.as_slice())
    }
    fn value_slice(&self) -> &[V] {
        &self.values
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
        Err(StorageError::LengthMismatch { operand, expected, got })
    }
}

/// Product of the dimension sizes; [`StorageError::ShapeOverflow`] if it overflows `usize`.
pub fn checked_product(shape: &[usize]) -> Result<usize, StorageError> {
    shape.iter().try_fold(1usize, |a, &s| a.checked_mul(s)).ok_or_else(|| StorageError::ShapeOverflow { shape: shape.to_vec() })
}

/// Row-major unflattening of `flat` into `idx` for `shape`.
pub fn unflatten(mut flat: usize, shape: &[usize], idx: &mut [usize]) {
    for d in (0..shape.len()).rev() {
        idx[d] = flat % shape[d];
        flat /= shape[d];
    }
}
