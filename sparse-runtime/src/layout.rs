//! Dense layouts as XLA describes them: a minor-to-major dimension order, optional padded
//! dimensions and a padding value (`../shared/reference/dense-layout.md`; XLA's `Layout` and
//! `IndexUtil::MultidimensionalIndexToLinearIndex` / `LinearIndexToMultidimensionalIndex`).
//!
//! Dimensions are numbered `0..N` in listing order, which says nothing about memory order;
//! `minor_to_major` lists them fastest-varying first. The default layout is `[N-1, ..., 1, 0]`
//! (row-major for rank 2). With `padded_dimensions`, memory is that of the padded array in the
//! same order, the padding holding `padding_value`.

/// Why a layout or an index does not fit a shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// `minor_to_major` is not a permutation of `0..rank`.
    #[error("minor_to_major {minor_to_major:?} is not a permutation of 0..{rank}")]
    NotAPermutation {
        /// The order given.
        minor_to_major: Vec<usize>,
        /// The shape's rank.
        rank: usize,
    },
    /// `padded_dimensions` has another length than the rank, or pads a dimension below its size.
    #[error("padded_dimensions {padded:?} does not pad the shape {shape:?}")]
    Padding {
        /// The padded sizes given.
        padded: Vec<usize>,
        /// The shape.
        shape: Vec<usize>,
    },
    /// The buffer size (elements) overflows `usize`.
    #[error("the padded shape {0:?} has more than usize::MAX elements")]
    Overflow(Vec<usize>),
    /// A multi-index of the wrong rank or with a coordinate not below its dimension's size.
    #[error("index {index:?} is outside the shape {shape:?}")]
    Index {
        /// The index.
        index: Vec<usize>,
        /// The shape.
        shape: Vec<usize>,
    },
    /// A linear index at or past the buffer's end, or in the padding.
    #[error("linear index {0} is outside the array (or in its padding)")]
    Linear(usize),
    /// A layout whose `minor_to_major` is not the order a [`DenseArray`]'s type fixes.
    #[error("minor_to_major {found:?} is not the order {expected:?} of the array's type")]
    Order {
        /// The type's order ([`StaticOrder::MINOR_TO_MAJOR`]).
        expected: Vec<usize>,
        /// The layout's.
        found: Vec<usize>,
    },
    /// A buffer whose length (elements) is not the layout's [`DenseLayout::buffer_len`].
    #[error("a buffer of {found} elements for a layout of {expected}")]
    BufferLength {
        /// The layout's buffer length.
        expected: usize,
        /// The buffer's.
        found: usize,
    },
}

/// XLA's dense `Layout` for one shape: memory order and padding. `T` is the element type of the
/// padding value.
#[derive(Clone, Debug, PartialEq)]
pub struct DenseLayout<T> {
    /// Dimension sizes (elements), in dimension order.
    shape: Vec<usize>,
    /// Dimensions fastest-varying first (a permutation of `0..rank`).
    minor_to_major: Vec<usize>,
    /// The sizes the dimensions are padded to (each `>=` the size), if padded.
    padded_dimensions: Option<Vec<usize>>,
    /// The value of the padding elements.
    padding_value: T,
    /// Stride (elements) of each dimension in the buffer.
    strides: Vec<usize>,
    /// Buffer length (elements): the product of the padded sizes.
    len: usize,
}

impl<T: Copy> DenseLayout<T> {
    /// A layout of `shape`.
    ///
    /// # Errors
    /// [`LayoutError::NotAPermutation`], [`LayoutError::Padding`] (wrong length or a padded size
    /// below the size), [`LayoutError::Overflow`].
    pub fn new(
        shape: &[usize],
        minor_to_major: &[usize],
        padded_dimensions: Option<&[usize]>,
        padding_value: T,
    ) -> Result<Self, LayoutError> {
        let rank = shape.len();
        let mut sorted = minor_to_major.to_vec();
        sorted.sort_unstable();
        if !sorted.iter().copied().eq(0..rank) {
            return Err(LayoutError::NotAPermutation {
                minor_to_major: minor_to_major.to_vec(),
                rank,
            });
        }
        let padded = match padded_dimensions {
            Some(p) if p.len() != rank || p.iter().zip(shape).any(|(p, s)| p < s) => {
                return Err(LayoutError::Padding {
                    padded: p.to_vec(),
                    shape: shape.to_vec(),
                })
            }
            Some(p) => p.to_vec(),
            None => shape.to_vec(),
        };
        let mut strides = vec![0; rank];
        let mut len = 1usize;
        for &d in minor_to_major {
            strides[d] = len;
            len = len
                .checked_mul(padded[d])
                .ok_or_else(|| LayoutError::Overflow(padded.clone()))?;
        }
        Ok(Self {
            shape: shape.to_vec(),
            minor_to_major: minor_to_major.to_vec(),
            padded_dimensions: padded_dimensions.map(<[usize]>::to_vec),
            padding_value,
            strides,
            len,
        })
    }

    /// XLA's default layout: major-to-minor in dimension order (`minor_to_major = [N-1, ...,
    /// 0]`), no padding.
    ///
    /// # Errors
    /// [`LayoutError::Overflow`].
    pub fn row_major(shape: &[usize], padding_value: T) -> Result<Self, LayoutError> {
        let order: Vec<usize> = (0..shape.len()).rev().collect();
        Self::new(shape, &order, None, padding_value)
    }

    /// Dimension sizes.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Dimensions fastest-varying first.
    pub fn minor_to_major(&self) -> &[usize] {
        &self.minor_to_major
    }

    /// The padded sizes, if padded.
    pub fn padded_dimensions(&self) -> Option<&[usize]> {
        self.padded_dimensions.as_deref()
    }

    /// The padding value.
    pub fn padding_value(&self) -> T {
        self.padding_value
    }

    /// Stride (elements) of each dimension.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// Buffer length in elements (the padded array's element count).
    pub fn buffer_len(&self) -> usize {
        self.len
    }

    /// The linear index of multi-index `index` (XLA's `MultidimensionalIndexToLinearIndex`).
    ///
    /// # Errors
    /// [`LayoutError::Index`] for a wrong rank or a coordinate outside the (unpadded) shape.
    pub fn linear_index(&self, index: &[usize]) -> Result<usize, LayoutError> {
        if index.len() != self.shape.len() || index.iter().zip(&self.shape).any(|(i, s)| i >= s) {
            return Err(LayoutError::Index {
                index: index.to_vec(),
                shape: self.shape.clone(),
            });
        }
        Ok(index.iter().zip(&self.strides).map(|(i, s)| i * s).sum())
    }

    /// The multi-index at linear index `linear` (XLA's `LinearIndexToMultidimensionalIndex`).
    ///
    /// # Errors
    /// [`LayoutError::Linear`] past the buffer's end or in the padding.
    pub fn multi_index(&self, linear: usize) -> Result<Vec<usize>, LayoutError> {
        if linear >= self.len {
            return Err(LayoutError::Linear(linear));
        }
        let padded = self.padded_dimensions.as_deref().unwrap_or(&self.shape);
        let mut index = vec![0; self.shape.len()];
        let mut rest = linear;
        for &d in &self.minor_to_major {
            index[d] = rest % padded[d];
            rest /= padded[d];
        }
        if index.iter().zip(&self.shape).any(|(i, s)| i >= s) {
            return Err(LayoutError::Linear(linear));
        }
        Ok(index)
    }

    /// Lays out `values`, given row-major over the shape, into a buffer of this layout, the
    /// padding filled with the padding value.
    ///
    /// # Errors
    /// [`LayoutError::Index`] (with an empty index) if `values` has not exactly the shape's
    /// element count.
    pub fn from_row_major(&self, values: &[T]) -> Result<Vec<T>, LayoutError> {
        let count: usize = self.shape.iter().product();
        if values.len() != count {
            return Err(LayoutError::Index {
                index: vec![],
                shape: self.shape.clone(),
            });
        }
        let mut buffer = vec![self.padding_value; self.len];
        for (&v, at) in values
            .iter()
            .zip(row_major_offsets(&self.shape, &self.strides))
        {
            buffer[at] = v;
        }
        Ok(buffer)
    }
}

/// The buffer offsets of the elements of an array of `shape` with `strides`, in row-major order
/// of the multi-indices (the last dimension fastest); none if a size is 0.
fn row_major_offsets<'s>(
    shape: &'s [usize],
    strides: &'s [usize],
) -> impl Iterator<Item = usize> + 's {
    let count: usize = shape.iter().product();
    let mut index = vec![0; shape.len()];
    (0..count).map(move |_| {
        let at = index.iter().zip(strides).map(|(i, s)| i * s).sum();
        for d in (0..index.len()).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
        at
    })
}

/// A memory order fixed by a type: the `minor_to_major` of every [`DenseArray`] of that type,
/// so that kernels taking one (`b: &DenseArray<f64, Cm>` in a `sparse_format!` kernel) are
/// compiled for it. `sparse_format!` implements it for every declared format whose levels are
/// all `dense` and whose map permutes the dimensions: MLIR's dense layout, levels major to
/// minor, so `(i, j) -> (j : dense, i : dense)` is `minor_to_major = [0, 1]` (column-major).
pub trait StaticOrder {
    /// Dimensions fastest-varying first: a permutation of `0..rank`.
    const MINOR_TO_MAJOR: &'static [usize];
}

/// An owned dense array in an XLA layout whose order is fixed by the type `O` and whose
/// padding is chosen at run time: a kernel operand (`&DenseArray<V, O>` or `&mut DenseArray<V,
/// O>` in a `sparse_format!` kernel, with `O` a declared all-dense format) read and written
/// through the layout's strides, the padding never read and never written.
pub struct DenseArray<V, O> {
    /// Shape, order (`O::MINOR_TO_MAJOR`), padding, strides.
    layout: DenseLayout<V>,
    /// [`DenseLayout::buffer_len`] elements, padding included.
    values: Vec<V>,
    order: core::marker::PhantomData<fn() -> O>,
}

// by hand: the order type `O` is a marker, held by no value
impl<V: Clone, O> Clone for DenseArray<V, O> {
    fn clone(&self) -> Self {
        Self {
            layout: self.layout.clone(),
            values: self.values.clone(),
            order: core::marker::PhantomData,
        }
    }
}

impl<V: core::fmt::Debug, O> core::fmt::Debug for DenseArray<V, O> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DenseArray")
            .field("layout", &self.layout)
            .field("values", &self.values)
            .finish()
    }
}

impl<V: PartialEq, O> PartialEq for DenseArray<V, O> {
    fn eq(&self, other: &Self) -> bool {
        self.layout == other.layout && self.values == other.values
    }
}

impl<V: Copy, O: StaticOrder> DenseArray<V, O> {
    /// The array over `values`, a buffer of `layout` (padding included).
    ///
    /// # Errors
    /// [`LayoutError::Order`] if `layout`'s order is not `O`'s; [`LayoutError::BufferLength`]
    /// if `values` is not [`DenseLayout::buffer_len`] elements long.
    pub fn new(layout: DenseLayout<V>, values: Vec<V>) -> Result<Self, LayoutError> {
        if layout.minor_to_major() != O::MINOR_TO_MAJOR {
            return Err(LayoutError::Order {
                expected: O::MINOR_TO_MAJOR.to_vec(),
                found: layout.minor_to_major().to_vec(),
            });
        }
        if values.len() != layout.buffer_len() {
            return Err(LayoutError::BufferLength {
                expected: layout.buffer_len(),
                found: values.len(),
            });
        }
        Ok(Self {
            layout,
            values,
            order: core::marker::PhantomData,
        })
    }

    /// An array of `shape` in `O`'s order, each dimension padded to `padded_dimensions` (none
    /// if `None`), every element and the padding holding `fill`.
    ///
    /// # Errors
    /// As [`DenseLayout::new`], and [`LayoutError::NotAPermutation`] if `O`'s order has another
    /// rank than `shape`.
    pub fn filled(
        shape: &[usize],
        padded_dimensions: Option<&[usize]>,
        fill: V,
    ) -> Result<Self, LayoutError> {
        let layout = DenseLayout::new(shape, O::MINOR_TO_MAJOR, padded_dimensions, fill)?;
        let values = vec![fill; layout.buffer_len()];
        Self::new(layout, values)
    }

    /// The array of `values`, given row-major over `layout`'s shape, laid out in `layout`
    /// (the padding holding its padding value).
    ///
    /// # Errors
    /// As [`Self::new`]; [`LayoutError::Index`] (with an empty index) if `values` has not
    /// exactly the shape's element count.
    pub fn from_row_major(layout: DenseLayout<V>, values: &[V]) -> Result<Self, LayoutError> {
        let buffer = layout.from_row_major(values)?;
        Self::new(layout, buffer)
    }

    /// The strides of the first `R` dimensions (0 past the rank), the fastest dimension's the
    /// constant 1 of `O`'s order: code generic over `O` (the built-in `spmm_array`) is compiled
    /// per order with a unit stride it can see.
    #[inline(always)]
    pub fn order_strides<const R: usize>(&self) -> [usize; R] {
        let mut strides = [0; R];
        for (s, &t) in strides.iter_mut().zip(&self.layout.strides) {
            *s = t;
        }
        if let Some(s) = O::MINOR_TO_MAJOR.first().and_then(|&f| strides.get_mut(f)) {
            *s = 1;
        }
        strides
    }

    /// The elements, row-major over the shape (the padding left out).
    pub fn to_row_major(&self) -> Vec<V> {
        row_major_offsets(&self.layout.shape, &self.layout.strides)
            .map(|at| self.values[at])
            .collect()
    }
}

impl<V, O> DenseArray<V, O> {
    /// The layout.
    pub fn layout(&self) -> &DenseLayout<V> {
        &self.layout
    }

    /// Dimension sizes (elements), unpadded.
    pub fn shape(&self) -> &[usize] {
        &self.layout.shape
    }

    /// Stride (elements) of each dimension in [`Self::values`].
    pub fn strides(&self) -> &[usize] {
        &self.layout.strides
    }

    /// The buffer, padding included ([`DenseLayout::buffer_len`] elements).
    pub fn values(&self) -> &[V] {
        &self.values
    }

    /// The buffer, padding included, to write.
    pub fn values_mut(&mut self) -> &mut [V] {
        &mut self.values
    }

    /// The element at multi-index `index`; `None` for a wrong rank or a coordinate outside the
    /// (unpadded) shape.
    pub fn get(&self, index: &[usize]) -> Option<&V> {
        if index.len() != self.layout.shape.len()
            || index.iter().zip(&self.layout.shape).any(|(i, s)| i >= s)
        {
            return None;
        }
        let at: usize = index
            .iter()
            .zip(&self.layout.strides)
            .map(|(i, s)| i * s)
            .sum();
        self.values.get(at)
    }

    /// Sets every element to `value`, the padding left as it is (a kernel's dense output is
    /// cleared so before the loops).
    pub fn fill(&mut self, value: V)
    where
        V: Copy,
    {
        for at in row_major_offsets(&self.layout.shape, &self.layout.strides) {
            self.values[at] = value;
        }
    }

    /// The layout and the buffer.
    pub fn into_parts(self) -> (DenseLayout<V>, Vec<V>) {
        (self.layout, self.values)
    }
}

/// A borrowed dense array of rank `R`: a buffer read through per-dimension strides, as XLA lays
/// out an array of that shape and order (padding lies between the elements and is never read).
/// The blocks of a blocked format are such views (`Bsr::block`), in the order of the block's
/// levels; [`Self::transpose`] reads the same buffer with the dimensions swapped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DenseView<'a, V, const R: usize> {
    values: &'a [V],
    shape: [usize; R],
    minor_to_major: [usize; R],
    strides: [usize; R],
}

impl<'a, V, const R: usize> DenseView<'a, V, R> {
    /// The view of `values` as an array of `shape` in `layout`'s order and padding.
    ///
    /// # Errors
    /// [`LayoutError::Index`] (with an empty index) if `layout`'s rank is not `R`;
    /// [`LayoutError::BufferLength`] if `values` is shorter than [`DenseLayout::buffer_len`].
    pub fn new<T>(values: &'a [V], layout: &DenseLayout<T>) -> Result<Self, LayoutError> {
        let rank_error = || LayoutError::Index {
            index: Vec::new(),
            shape: layout.shape.clone(),
        };
        let shape: [usize; R] = layout
            .shape
            .as_slice()
            .try_into()
            .map_err(|_| rank_error())?;
        let minor_to_major: [usize; R] = layout
            .minor_to_major
            .as_slice()
            .try_into()
            .map_err(|_| rank_error())?;
        let strides: [usize; R] = layout
            .strides
            .as_slice()
            .try_into()
            .map_err(|_| rank_error())?;
        if values.len() < layout.len {
            return Err(LayoutError::BufferLength {
                expected: layout.len,
                found: values.len(),
            });
        }
        Ok(Self {
            values,
            shape,
            minor_to_major,
            strides,
        })
    }

    /// The view of `values` as an array of `shape` whose dimension `d` has stride `strides[d]`
    /// (elements), `minor_to_major` its order (the blocks of a blocked format: generated code
    /// passes constants, so the checks fold away).
    ///
    /// # Errors
    /// [`LayoutError::NotAPermutation`] if `minor_to_major` is not a permutation of `0..R`;
    /// [`LayoutError::BufferLength`] if the last element, `sum((shape[d] - 1) * strides[d])`,
    /// lies past the end of `values` (or the offsets overflow).
    pub fn with_strides(
        values: &'a [V],
        shape: [usize; R],
        minor_to_major: [usize; R],
        strides: [usize; R],
    ) -> Result<Self, LayoutError> {
        let mut seen = [false; R];
        for &d in &minor_to_major {
            match seen.get_mut(d) {
                Some(s) if !*s => *s = true,
                _ => {
                    return Err(LayoutError::NotAPermutation {
                        minor_to_major: minor_to_major.to_vec(),
                        rank: R,
                    })
                }
            }
        }
        if shape.contains(&0) {
            return Ok(Self {
                values,
                shape,
                minor_to_major,
                strides,
            });
        }
        let last = shape
            .iter()
            .zip(&strides)
            .try_fold(0usize, |acc, (&n, &s)| {
                acc.checked_add((n - 1).checked_mul(s)?)
            });
        match last {
            Some(last) if last < values.len() => Ok(Self {
                values,
                shape,
                minor_to_major,
                strides,
            }),
            _ => Err(LayoutError::BufferLength {
                expected: last.map_or(usize::MAX, |l| l.saturating_add(1)),
                found: values.len(),
            }),
        }
    }

    /// A view without checks, for generated code whose storage was validated when built.
    ///
    /// # Safety
    /// `minor_to_major` must be a permutation of `0..R`, `strides` those of `shape` in that
    /// order (each at least the product of the sizes of the faster dimensions), and `values`
    /// must hold every element: `sum((shape[d] - 1) * strides[d]) < values.len()` when no size
    /// is 0. [`Self::get_unchecked`] relies on it.
    pub unsafe fn new_unchecked(
        values: &'a [V],
        shape: [usize; R],
        minor_to_major: [usize; R],
        strides: [usize; R],
    ) -> Self {
        Self {
            values,
            shape,
            minor_to_major,
            strides,
        }
    }

    /// Dimension sizes (elements).
    pub fn shape(&self) -> [usize; R] {
        self.shape
    }

    /// Dimensions fastest-varying first.
    pub fn minor_to_major(&self) -> [usize; R] {
        self.minor_to_major
    }

    /// Stride (elements) of each dimension in [`Self::values`].
    pub fn strides(&self) -> [usize; R] {
        self.strides
    }

    /// The buffer the view reads (padding included; a block's view reads its block only).
    pub fn values(&self) -> &'a [V] {
        self.values
    }

    /// The element at `index`; `None` if a coordinate is outside the shape.
    pub fn get(&self, index: [usize; R]) -> Option<&'a V> {
        if index.iter().zip(&self.shape).any(|(i, s)| i >= s) {
            return None;
        }
        let at: usize = index.iter().zip(&self.strides).map(|(i, s)| i * s).sum();
        self.values.get(at)
    }

    /// The element at `index`, unchecked.
    ///
    /// # Safety
    /// Every coordinate must be below its dimension's size.
    pub unsafe fn get_unchecked(&self, index: [usize; R]) -> &'a V {
        let at: usize = index.iter().zip(&self.strides).map(|(i, s)| i * s).sum();
        // SAFETY: in the shape, so in the buffer (`new` checked its length, `new_unchecked`'s
        // caller promised it)
        unsafe { self.values.get_unchecked(at) }
    }

    /// The elements, row-major over the shape.
    pub fn to_row_major(&self) -> Vec<V>
    where
        V: Copy,
    {
        row_major_offsets(&self.shape, &self.strides)
            .map(|at| self.values[at])
            .collect()
    }
}

impl<'a, V> DenseView<'a, V, 2> {
    /// The same buffer read with the two dimensions swapped (a row-major block becomes a
    /// column-major one: XLA's transpose as a layout change).
    pub fn transpose(self) -> Self {
        Self {
            values: self.values,
            shape: [self.shape[1], self.shape[0]],
            minor_to_major: self.minor_to_major.map(|d| 1 - d),
            strides: [self.strides[1], self.strides[0]],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_references_examples() {
        let abc = ['a', 'b', 'c', 'd', 'e', 'f'];
        let col = DenseLayout::new(&[2, 3], &[0, 1], None, '0').unwrap();
        assert_eq!(
            col.from_row_major(&abc).unwrap(),
            "adbecf".chars().collect::<Vec<_>>()
        );
        let row = DenseLayout::row_major(&[2, 3], '0').unwrap();
        assert_eq!(row.minor_to_major(), &[1, 0]);
        assert_eq!(row.from_row_major(&abc).unwrap(), abc.to_vec());
        let padded = DenseLayout::new(&[2, 3], &[0, 1], Some(&[3, 5]), '0').unwrap();
        assert_eq!(
            padded.from_row_major(&abc).unwrap(),
            "ad0be0cf0000000".chars().collect::<Vec<_>>()
        );
        assert_eq!(padded.linear_index(&[1, 2]).unwrap(), 7);
        assert_eq!(padded.multi_index(7).unwrap(), vec![1, 2]);
        assert_eq!(padded.multi_index(2), Err(LayoutError::Linear(2)));
    }

    #[test]
    fn linear_and_multi_index_are_inverse_for_every_order() {
        let shape = [2, 3, 4];
        for order in [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ] {
            let l = DenseLayout::new(&shape, &order, Some(&[3, 3, 5]), 0.0).unwrap();
            let mut seen = std::collections::HashSet::new();
            for i in 0..2 {
                for j in 0..3 {
                    for k in 0..4 {
                        let lin = l.linear_index(&[i, j, k]).unwrap();
                        assert!(lin < l.buffer_len() && seen.insert(lin));
                        assert_eq!(l.multi_index(lin).unwrap(), vec![i, j, k]);
                    }
                }
            }
        }
    }

    #[test]
    fn bad_layouts_are_errors() {
        assert!(matches!(
            DenseLayout::new(&[2, 3], &[0, 0], None, 0),
            Err(LayoutError::NotAPermutation { .. })
        ));
        assert!(matches!(
            DenseLayout::new(&[2, 3], &[0, 2], None, 0),
            Err(LayoutError::NotAPermutation { .. })
        ));
        assert!(matches!(
            DenseLayout::new(&[2, 3], &[0, 1], Some(&[2, 2]), 0),
            Err(LayoutError::Padding { .. })
        ));
        let l = DenseLayout::row_major(&[2, 3], 0).unwrap();
        assert!(l.linear_index(&[2, 0]).is_err() && l.linear_index(&[0]).is_err());
    }

    /// Column-major, as `(i, j) -> (j : dense, i : dense)` declares it.
    struct ColMajor;
    impl StaticOrder for ColMajor {
        const MINOR_TO_MAJOR: &'static [usize] = &[0, 1];
    }

    #[test]
    fn a_dense_array_keeps_its_types_order_and_its_padding() {
        let abc = ['a', 'b', 'c', 'd', 'e', 'f'];
        let layout = DenseLayout::new(&[2, 3], &[0, 1], Some(&[3, 5]), '0').unwrap();
        let a = DenseArray::<char, ColMajor>::from_row_major(layout, &abc).unwrap();
        assert_eq!(a.values().iter().collect::<String>(), "ad0be0cf0000000");
        assert_eq!(a.strides(), &[1, 3]);
        assert_eq!(a.get(&[1, 2]), Some(&'f'));
        assert_eq!(a.get(&[2, 0]), None);
        assert_eq!(a.to_row_major(), abc.to_vec());
        let row = DenseLayout::row_major(&[2, 3], '0').unwrap();
        assert_eq!(
            DenseArray::<char, ColMajor>::new(row, abc.to_vec()),
            Err(LayoutError::Order {
                expected: vec![0, 1],
                found: vec![1, 0]
            })
        );
        let col = DenseLayout::new(&[2, 3], &[0, 1], Some(&[3, 5]), '0').unwrap();
        assert_eq!(
            DenseArray::<char, ColMajor>::new(col, abc.to_vec()),
            Err(LayoutError::BufferLength {
                expected: 15,
                found: 6
            })
        );
        let z = DenseArray::<f64, ColMajor>::filled(&[2, 2], Some(&[4, 2]), 0.5).unwrap();
        assert_eq!(z.values(), &[0.5; 8]);
        assert!(DenseArray::<f64, ColMajor>::filled(&[2, 2, 2], None, 0.0).is_err());
    }

    #[test]
    fn a_dense_view_reads_through_its_strides_and_transposes_in_place() {
        let padded = DenseLayout::new(&[2, 3], &[0, 1], Some(&[3, 5]), 0).unwrap();
        let buffer = padded.from_row_major(&[1, 2, 3, 4, 5, 6]).unwrap();
        let v = DenseView::<_, 2>::new(&buffer, &padded).unwrap();
        assert_eq!(
            (v.shape(), v.strides(), v.minor_to_major()),
            ([2, 3], [1, 3], [0, 1])
        );
        assert_eq!(v.get([1, 0]), Some(&4));
        assert_eq!(v.get([0, 3]), None);
        assert_eq!(v.to_row_major(), vec![1, 2, 3, 4, 5, 6]);
        let t = v.transpose();
        assert_eq!(
            (t.shape(), t.strides(), t.minor_to_major()),
            ([3, 2], [3, 1], [1, 0])
        );
        assert_eq!(t.to_row_major(), vec![1, 4, 2, 5, 3, 6]);
        assert!(std::ptr::eq(t.values(), v.values()));
        assert!(DenseView::<i32, 3>::new(&buffer, &padded).is_err());
        let same = DenseView::with_strides(&buffer[..], [2, 3], [0, 1], [1, 3]).unwrap();
        assert_eq!(same.to_row_major(), v.to_row_major());
        assert!(matches!(
            DenseView::with_strides(&buffer[..], [2, 3], [1, 1], [1, 3]),
            Err(LayoutError::NotAPermutation { .. })
        ));
        assert_eq!(
            DenseView::with_strides(&buffer[..7], [2, 3], [0, 1], [1, 3]),
            Err(LayoutError::BufferLength {
                expected: 8,
                found: 7
            })
        );
        assert!(DenseView::with_strides(&buffer[..0], [0, 3], [0, 1], [1, 3]).is_ok());
        assert_eq!(
            DenseView::<i32, 2>::new(&buffer[..14], &padded),
            Err(LayoutError::BufferLength {
                expected: 15,
                found: 14
            })
        );
    }
}
