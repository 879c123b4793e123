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
        let mut index = vec![0; self.shape.len()];
        for &v in values {
            let at: usize = index.iter().zip(&self.strides).map(|(i, s)| i * s).sum();
            buffer[at] = v;
            for d in (0..index.len()).rev() {
                index[d] += 1;
                if index[d] < self.shape[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        Ok(buffer)
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
}
