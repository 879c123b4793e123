//! Slices: a tensor whose dimensions carry `#sparse_tensor<slice(offset, size, stride)>` is a
//! strided view over a parent's storage. [`SliceView`] borrows any parent that gives
//! [`DimAccess`] (a [`DynamicStorage`] or a struct `sparse_format!` generates) and maps
//! every coordinate: view coordinate `c` of dimension `d` is parent coordinate
//! `offset[d] + c * stride[d]`, for `c < size[d]`. Nothing is copied: iteration walks the parent's
//! stored entries (O(parent nse)) and keeps those that fall on the slice; `get` locates
//! `offset + c * stride` in the parent.
//!
//! Dynamic `?` values are given at run time, in dimension order and within a dimension in the
//! order offset, size, stride (the order they are written in).

use sparse_ir::ir::{DimSlice, Encoding};

use crate::coo::CooTensor;
use crate::dynamic::{checked_product, DynamicStorage};
use crate::error::StorageError;
use crate::value::Value;

/// Access in dimension coordinates: what a [`SliceView`] needs of its parent.
pub trait DimAccess {
    /// The stored value type.
    type Value;
    /// Dimension sizes.
    fn dims(&self) -> &[usize];
    /// Every stored entry in storage order as `(dimension coordinates, &value)`.
    fn entries(&self) -> Box<dyn Iterator<Item = (Vec<usize>, &Self::Value)> + '_>;
    /// The value stored at dimension coordinates `coords`, if any (`None` out of range).
    fn lookup(&self, coords: &[usize]) -> Option<&Self::Value>;
}

impl<V> DimAccess for DynamicStorage<V> {
    type Value = V;
    fn dims(&self) -> &[usize] {
        self.shape()
    }
    fn entries(&self) -> Box<dyn Iterator<Item = (Vec<usize>, &V)> + '_> {
        Box::new(self.iter())
    }
    fn lookup(&self, coords: &[usize]) -> Option<&V> {
        self.get(coords)
    }
}

/// A strided view of a parent tensor `S` (see the module docs).
#[derive(Debug)]
pub struct SliceView<'a, S: ?Sized> {
    parent: &'a S,
    offset: Vec<usize>,
    size: Vec<usize>,
    stride: Vec<usize>,
}

impl<S: ?Sized> Clone for SliceView<'_, S> {
    fn clone(&self) -> Self {
        SliceView {
            parent: self.parent,
            offset: self.offset.clone(),
            size: self.size.clone(),
            stride: self.stride.clone(),
        }
    }
}

impl<V> DynamicStorage<V> {
    /// A view of this tensor through `sliced`: the same encoding as this tensor's plus
    /// `dim_slices`. `dynamic` supplies the `?` values (module docs for the order).
    ///
    /// Errors: [`StorageError::Unsupported`] if `sliced` has no slices or differs from this
    /// tensor's encoding in anything but the slices; as [`Self::slice_dims`] otherwise.
    pub fn slice(
        &self,
        sliced: &Encoding,
        dynamic: &[usize],
    ) -> Result<SliceView<'_, Self>, StorageError> {
        let Some(slices) = sliced.dim_slices.as_ref() else {
            return Err(StorageError::Unsupported {
                reason: "the encoding has no dimension slices".into(),
            });
        };
        let mut plain = sliced.clone();
        plain.dim_slices = None;
        if &plain != self.encoding() {
            return Err(StorageError::Unsupported {
                reason: "a slice views a tensor of the same encoding (apart from the slices)"
                    .into(),
            });
        }
        self.slice_dims(slices, dynamic)
    }

    /// A view of this tensor through one [`DimSlice`] per dimension; `dynamic` supplies the
    /// `None` (`?`) values in order.
    ///
    /// Errors: [`StorageError::RankMismatch`] if `slices` does not have one entry per dimension;
    /// [`StorageError::Slice`] naming the dimension when a dynamic value is missing, when
    /// dynamic values are left over (dimension = rank), for a zero size or stride, or when the
    /// slice's last element `offset + (size - 1) * stride` is outside the parent dimension.
    pub fn slice_dims(
        &self,
        slices: &[DimSlice],
        dynamic: &[usize],
    ) -> Result<SliceView<'_, Self>, StorageError> {
        SliceView::new(self, slices, dynamic)
    }
}

impl<'a, S: DimAccess + ?Sized> SliceView<'a, S> {
    /// A view of `parent` through one [`DimSlice`] per dimension; `dynamic` supplies the `None`
    /// (`?`) values in order (module docs).
    ///
    /// Errors: [`StorageError::RankMismatch`] if `slices` does not have one entry per dimension;
    /// [`StorageError::Slice`] naming the dimension when a dynamic value is missing, when
    /// dynamic values are left over (dimension = rank), for a zero size or stride, or when the
    /// slice's last element `offset + (size - 1) * stride` is outside the parent dimension.
    pub fn new(
        parent: &'a S,
        slices: &[DimSlice],
        dynamic: &[usize],
    ) -> Result<Self, StorageError> {
        let shape = parent.dims();
        if slices.len() != shape.len() {
            return Err(StorageError::RankMismatch {
                expected: shape.len(),
                got: slices.len(),
            });
        }
        let mut dynamic = dynamic.iter().copied();
        let mut take = |d: usize, v: Option<u64>, what: &str| -> Result<usize, StorageError> {
            match v {
                Some(v) => usize::try_from(v).map_err(|_| StorageError::Slice {
                    dim: d,
                    reason: format!("{what} {v} does not fit usize"),
                }),
                None => dynamic.next().ok_or_else(|| StorageError::Slice {
                    dim: d,
                    reason: format!("no dynamic value given for the {what} `?`"),
                }),
            }
        };
        let (mut offset, mut size, mut stride) = (Vec::new(), Vec::new(), Vec::new());
        for (d, s) in slices.iter().enumerate() {
            let (o, n, t) = (
                take(d, s.offset, "offset")?,
                take(d, s.size, "size")?,
                take(d, s.stride, "stride")?,
            );
            if n == 0 || t == 0 {
                return Err(StorageError::Slice {
                    dim: d,
                    reason: format!("size {n} and stride {t} must be positive"),
                });
            }
            let last = (n - 1).checked_mul(t).and_then(|x| x.checked_add(o));
            if last.is_none_or(|last| last >= shape[d]) {
                return Err(StorageError::Slice {
                    dim: d,
                    reason: format!(
                        "slice({o}, {n}, {t}) reaches past the parent dimension of size {}",
                        shape[d]
                    ),
                });
            }
            offset.push(o);
            size.push(n);
            stride.push(t);
        }
        let left = dynamic.count();
        if left > 0 {
            return Err(StorageError::Slice {
                dim: shape.len(),
                reason: format!("{left} dynamic value(s) left over"),
            });
        }
        Ok(SliceView {
            parent,
            offset,
            size,
            stride,
        })
    }
}

impl<'a, S: DimAccess + ?Sized> SliceView<'a, S> {
    /// The parent storage (borrowed, never copied).
    pub fn parent(&self) -> &'a S {
        self.parent
    }
    /// The view's dimension sizes (the slice sizes).
    pub fn shape(&self) -> &[usize] {
        &self.size
    }
    /// Per dimension: offset into the parent dimension (elements).
    pub fn offsets(&self) -> &[usize] {
        &self.offset
    }
    /// Per dimension: step between consecutive view elements in the parent (elements).
    pub fn strides(&self) -> &[usize] {
        &self.stride
    }

    /// The view coordinates of parent coordinates `pc`, if they fall on the slice.
    fn to_view(&self, pc: &[usize]) -> Option<Vec<usize>> {
        pc.iter()
            .enumerate()
            .map(|(d, &c)| {
                let r = c.checked_sub(self.offset[d])?;
                (r % self.stride[d] == 0 && r / self.stride[d] < self.size[d])
                    .then_some(r / self.stride[d])
            })
            .collect()
    }

    /// The stored entries that fall on the slice, in the parent's storage order, as
    /// `(view coordinates, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (Vec<usize>, &'a S::Value)> + '_ {
        self.parent
            .entries()
            .filter_map(move |(pc, v)| self.to_view(&pc).map(|c| (c, v)))
    }

    /// The value stored at view coordinates `coords` (parent coordinates
    /// `offset + coords * stride`), or `None` if nothing is stored there or `coords` is out of
    /// the view.
    pub fn get(&self, coords: &[usize]) -> Option<&'a S::Value> {
        if coords.len() != self.size.len() || coords.iter().zip(&self.size).any(|(c, s)| c >= s) {
            return None;
        }
        let pc: Vec<usize> = coords
            .iter()
            .enumerate()
            .map(|(d, &c)| self.offset[d] + c * self.stride[d])
            .collect();
        self.parent.lookup(&pc)
    }
}

impl<V: Value, S: DimAccess<Value = V> + ?Sized> SliceView<'_, S> {
    /// The view's stored entries as a COO tensor of the view's shape.
    pub fn to_coo(&self) -> CooTensor<V> {
        let mut coo = CooTensor::new(self.size.clone());
        for (c, v) in self.iter() {
            coo.push(&c, *v);
        }
        coo
    }

    /// The view as a dense tensor, row-major; stored duplicates are summed.
    ///
    /// Errors: [`StorageError::ShapeOverflow`] if the element count does not fit `usize`.
    pub fn to_dense(&self) -> Result<Vec<V>, StorageError> {
        let mut out = vec![V::zero(); checked_product(&self.size)?];
        for (c, v) in self.iter() {
            let flat = c.iter().zip(&self.size).fold(0, |a, (c, s)| a * s + c);
            out[flat] += *v;
        }
        Ok(out)
    }

    /// `y = A · x` for a rank-2 view: `x` has `shape[1]` elements, `y` has `shape[0]`
    /// (overwritten).
    ///
    /// Errors: [`StorageError::RankMismatch`] for a view that is not rank 2;
    /// [`StorageError::LengthMismatch`] naming `"x"` or `"y"`.
    pub fn spmv(&self, x: &[V], y: &mut [V]) -> Result<(), StorageError> {
        if self.size.len() != 2 {
            return Err(StorageError::RankMismatch {
                expected: 2,
                got: self.size.len(),
            });
        }
        if x.len() != self.size[1] {
            return Err(StorageError::LengthMismatch {
                operand: "x",
                expected: self.size[1],
                got: x.len(),
            });
        }
        if y.len() != self.size[0] {
            return Err(StorageError::LengthMismatch {
                operand: "y",
                expected: self.size[0],
                got: y.len(),
            });
        }
        y.iter_mut().for_each(|v| *v = V::zero());
        for (c, v) in self.iter() {
            y[c[0]] += *v * x[c[1]];
        }
        Ok(())
    }
}
