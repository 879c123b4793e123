//! The COO operand: a list of (coordinates, value) entries with a shape.

/// A tensor as a list of entries, in dimension coordinates, in input order.
///
/// `coords` holds `rank = shape.len()` coordinates per entry, entry-major
/// (`coords[e * rank + d]` is dimension `d` of entry `e`); `values[e]` is its value. Entries may
/// repeat coordinates (duplicates) and appear in any order. Nothing here is checked against the
/// shape: the storage constructors check every coordinate.
#[derive(Clone, Debug, PartialEq)]
pub struct CooTensor<V> {
    /// Dimension sizes.
    pub shape: Vec<usize>,
    /// Entry-major coordinates, `rank` per entry.
    pub coords: Vec<usize>,
    /// One value per entry.
    pub values: Vec<V>,
}

impl<V> CooTensor<V> {
    /// An empty tensor of the given shape.
    pub fn new(shape: Vec<usize>) -> Self {
        CooTensor {
            shape,
            coords: Vec::new(),
            values: Vec::new(),
        }
    }
    /// Dimension rank.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
    /// Number of entries (duplicates counted).
    pub fn len(&self) -> usize {
        self.values.len()
    }
    /// `true` if there are no entries.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
    /// Appends an entry; `coords.len()` must equal the rank (debug-asserted).
    pub fn push(&mut self, coords: &[usize], value: V) {
        debug_assert_eq!(coords.len(), self.rank());
        self.coords.extend_from_slice(coords);
        self.values.push(value);
    }
    /// The coordinates of entry `e`.
    pub fn entry_coords(&self, e: usize) -> &[usize] {
        let r = self.rank();
        &self.coords[e * r..(e + 1) * r]
    }
    /// Iterates `(coords, value)` in input order.
    pub fn iter(&self) -> impl Iterator<Item = (&[usize], &V)> + '_ {
        let r = self.rank().max(1);
        self.coords.chunks(r).zip(self.values.iter())
    }
}
