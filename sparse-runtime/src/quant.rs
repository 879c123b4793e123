//! Uniform quantization with StableHLO's semantics: quantize, dequantize, requantize.
//!
//! A uniform quantized type `!quant.uniform<storage<min:max>:expressed[:axis], params>` (the
//! IR's [`QuantizedType`]) stores integers `q` for values `real = scale * (q - zero_point)`
//! (`../shared/reference/quantization.md`). The arithmetic follows the StableHLO specification,
//! "Quantization computations": it is done in the expressed type, the scale rounded to that type
//! first, and
//! - quantize: `round_nearest_even(clamp(storage_min, x / scale + zero_point, storage_max))`,
//!   converted to the storage type saturating; `±inf` clamp; NaN gives 0 (as StableHLO's
//!   reference interpreter does);
//! - dequantize: `convert(q - zero_point) * scale`, the subtraction in integers;
//! - requantize: `quantize(dequantize(q, from), to)`.
//!
//! Per-axis types give element `i` of a tensor the pair `params[i[axis]]`.

use crate::sparse_ir::types::{FloatKind, QuantizedType};

/// A float type values are expressed in (`f32`, `f64`): the operations quantization needs,
/// done in that type.
pub trait Expressed: Copy + PartialOrd + std::fmt::Debug {
    /// Rounds an `f64` scale to this type (nearest).
    fn from_f64(x: f64) -> Self;
    /// Converts an integer to this type (nearest, ties to even).
    fn from_i64(x: i64) -> Self;
    /// `x / scale + zero_point` clamped to `[min, max]` and rounded to nearest even, as an
    /// integer (saturating); NaN gives 0.
    fn quantize(self, scale: Self, zero_point: i64, min: i64, max: i64) -> i64;
    /// `self * scale`.
    fn scaled(self, scale: Self) -> Self;
    /// `true` if finite and greater than zero.
    fn is_positive_finite(self) -> bool;
}

macro_rules! expressed {
    ($t:ty) => {
        impl Expressed for $t {
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            fn from_i64(x: i64) -> Self {
                x as $t
            }
            fn quantize(self, scale: Self, zero_point: i64, min: i64, max: i64) -> i64 {
                if self.is_nan() {
                    return 0;
                }
                let v = self / scale + zero_point as $t;
                let v = v.clamp(min as $t, max as $t).round_ties_even();
                // `as` saturates; the clamp in integers undoes a bound that rounded outward
                (v as i64).clamp(min, max)
            }
            fn scaled(self, scale: Self) -> Self {
                self * scale
            }
            fn is_positive_finite(self) -> bool {
                self.is_finite() && self > 0.0
            }
        }
    };
}
expressed!(f32);
expressed!(f64);

/// `dequantize` of one storage integer: `convert(q - zero_point) * scale`, the subtraction in
/// integers (exact: both lie within 32 bits), the conversion to `E` rounded to nearest, the
/// product in `E` (StableHLO's `dequantize`). What generated quantized structs and kernels call.
#[inline]
pub fn dequantize_value<E: Expressed>(q: i64, scale: E, zero_point: i64) -> E {
    // saturating: exact for storage integers, and no overflow panic for any other `q`
    E::from_i64(q.saturating_sub(zero_point)).scaled(scale)
}

/// `quantize` of one expressed value: `round_nearest_even(clamp(storage_min, x / scale +
/// zero_point, storage_max))` computed in `E`, as an integer within `[storage_min,
/// storage_max]`; `±inf` clamp, NaN gives 0 ([`Expressed::quantize`], StableHLO's
/// `quantize`). What generated quantized structs and kernels call.
#[inline]
pub fn quantize_value<E: Expressed>(
    x: E,
    scale: E,
    zero_point: i64,
    storage_min: i64,
    storage_max: i64,
) -> i64 {
    x.quantize(scale, zero_point, storage_min, storage_max)
}

/// A Rust integer type that holds the storage integers of a uniform quantized type in a
/// generated struct (`i8` for `i1`..`i8` storage, `i16`, `i32`, `u8`, `u16`, `u32`): lossless
/// conversions to and from `i64` within the type's range.
pub trait StorageInt: Copy + 'static {
    /// The value as an `i64` (exact).
    fn to_i64(self) -> i64;
    /// `v` in this type, saturating at the type's bounds (callers pass integers already
    /// clamped to a storage range inside them, so nothing saturates).
    fn from_i64(v: i64) -> Self;
}

macro_rules! storage_int {
    ($($t:ty),*) => {$(
        impl StorageInt for $t {
            #[inline]
            fn to_i64(self) -> i64 {
                i64::from(self)
            }
            #[inline]
            fn from_i64(v: i64) -> Self {
                v.clamp(i64::from(<$t>::MIN), i64::from(<$t>::MAX)) as $t
            }
        }
    )*};
}
storage_int!(i8, i16, i32, u8, u16, u32);

/// A generated struct of a uniform quantized format over its storage integers (`sparse_format!`
/// implements it for `Name<i8>` of `tensor<?x?x!quant.uniform<i8:f32, ...>, #enc>`): the
/// conversions between it and the same format over real values, which
/// [`requantize`] composes.
pub trait QuantizedFormat: Sized {
    /// The same format over real `f32` values (`Name<f32>`).
    type Real;
    /// Quantizes every stored real value (StableHLO's `uniform_quantize`, the pair of a
    /// per-axis type chosen by the value's dimension coordinate).
    ///
    /// # Errors
    /// [`StorageError::ShapeMismatch`](crate::StorageError::ShapeMismatch) when a per-axis
    /// type's pair count differs from the quantized dimension's size.
    fn quantize_real(real: &Self::Real) -> Result<Self, crate::StorageError>;
    /// Dequantizes every stored integer (StableHLO's `dequantize`).
    fn dequantize_real(&self) -> Self::Real;
}

/// StableHLO's `uniform_quantize` of a quantized tensor into another quantized type
/// (requantization): `quantize(dequantize(q, from), to)` element by element, `from` stored in
/// `S`'s format, `to` in `T`'s (any format: the real values are converted in between). An
/// entry whose real value is 0 is not stored in `T` unless `T`'s levels store it (then it holds
/// `T`'s zero point).
///
/// # Errors
/// As `convert` between the two formats over real values (shapes, widths), and
/// [`QuantizedFormat::quantize_real`]'s.
pub fn requantize<const D: usize, S, T>(s: &S) -> Result<T, crate::StorageError>
where
    S: QuantizedFormat,
    S::Real: crate::generated::Entries<D, Value = f32>,
    T: QuantizedFormat,
    T::Real: crate::storage::FromCoo<f32>,
{
    let real = s.dequantize_real();
    let converted = <T::Real as crate::storage::FromCoo<f32>>::from_entries(&real)?;
    T::quantize_real(&converted)
}

/// Why a quantized type or an operand cannot be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum QuantError {
    /// A scale is not positive and finite once rounded to the expressed type.
    #[error("scale {scale:e} is not positive and finite in {expressed}")]
    Scale {
        /// The scale as written (f64).
        scale: f64,
        /// The expressed type.
        expressed: &'static str,
    },
    /// A zero point outside `[storage_min, storage_max]`.
    #[error("zero point {zero_point} is outside the storage range [{min}, {max}]")]
    ZeroPoint {
        /// The zero point.
        zero_point: i64,
        /// storage_min.
        min: i64,
        /// storage_max.
        max: i64,
    },
    /// Storage wider than 32 bits or not an integer of 1..=32 bits.
    #[error("storage type {0} is not supported (iN or uN with N <= 32)")]
    Storage(String),
    /// An expressed type other than f32 and f64.
    #[error("expressed type {0} is not supported (f32 or f64)")]
    ExpressedType(&'static str),
    /// A per-axis axis not below the rank.
    #[error("quantized axis {axis} is not below the rank {rank}")]
    Axis {
        /// The axis.
        axis: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// A per-axis pair count other than the quantized dimension's size, or a per-tensor type
    /// with other than one pair.
    #[error("{pairs} scale:zero_point pairs, but {what} needs {needed}")]
    Pairs {
        /// Pairs given.
        pairs: usize,
        /// What fixes the count (`dimension 1 of size 3`).
        what: String,
        /// Pairs needed.
        needed: usize,
    },
    /// An integer outside `[storage_min, storage_max]`.
    #[error("element {index}: {value} is outside the storage range [{min}, {max}]")]
    Stored {
        /// Row-major element number.
        index: usize,
        /// The integer.
        value: i64,
        /// storage_min.
        min: i64,
        /// storage_max.
        max: i64,
    },
}

/// A uniform quantized tensor type with a static shape, checked: scales rounded to the
/// expressed type `E`, zero points within the storage range, one pair per tensor or per slice.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantization<E> {
    /// The static shape (elements per dimension).
    pub shape: Vec<usize>,
    /// storage_min.
    pub storage_min: i64,
    /// storage_max.
    pub storage_max: i64,
    /// The quantized dimension of a per-axis type.
    pub axis: Option<usize>,
    /// `(scale, zero_point)` pairs, scales in the expressed type.
    pub params: Vec<(E, i64)>,
}

/// The expressed type's name for messages.
pub fn float_name(kind: FloatKind) -> &'static str {
    match kind {
        FloatKind::F16 => "f16",
        FloatKind::BF16 => "bf16",
        FloatKind::F32 => "f32",
        FloatKind::F64 => "f64",
    }
}

impl<E: Expressed> Quantization<E> {
    /// Checks `q` over `shape` (the caller picks `E` from `q.expressed`).
    ///
    /// # Errors
    /// [`QuantError::Storage`] for storage wider than 32 bits; [`QuantError::Axis`],
    /// [`QuantError::Pairs`], [`QuantError::Scale`], [`QuantError::ZeroPoint`] as named.
    pub fn new(q: &QuantizedType, shape: &[usize]) -> Result<Self, QuantError> {
        if q.storage_width == 0 || q.storage_width > 32 {
            let sign = if q.storage_signed { "i" } else { "u" };
            return Err(QuantError::Storage(format!("{sign}{}", q.storage_width)));
        }
        let rank = shape.len();
        let (needed, what) = match q.axis {
            Some(axis) => {
                let axis = axis as usize;
                if axis >= rank {
                    return Err(QuantError::Axis { axis, rank });
                }
                (
                    shape[axis],
                    format!("dimension {axis} of size {}", shape[axis]),
                )
            }
            None => (1, "a per-tensor type".to_string()),
        };
        if q.params.len() != needed {
            return Err(QuantError::Pairs {
                pairs: q.params.len(),
                what,
                needed,
            });
        }
        let mut params = Vec::with_capacity(q.params.len());
        for &(bits, zero_point) in &q.params {
            let written = f64::from_bits(bits);
            let scale = E::from_f64(written);
            if !scale.is_positive_finite() {
                return Err(QuantError::Scale {
                    scale: written,
                    expressed: float_name(q.expressed),
                });
            }
            if zero_point < q.storage_min || zero_point > q.storage_max {
                return Err(QuantError::ZeroPoint {
                    zero_point,
                    min: q.storage_min,
                    max: q.storage_max,
                });
            }
            params.push((scale, zero_point));
        }
        Ok(Self {
            shape: shape.to_vec(),
            storage_min: q.storage_min,
            storage_max: q.storage_max,
            axis: q.axis.map(|a| a as usize),
            params,
        })
    }

    /// Number of elements (the product of the shape).
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// `true` if the shape holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `(scale, zero_point)` of row-major element `index`.
    fn pair(&self, index: usize) -> (E, i64) {
        match self.axis {
            None => self.params[0],
            Some(axis) => {
                let inner: usize = self.shape[axis + 1..].iter().product();
                self.params[(index / inner.max(1)) % self.shape[axis].max(1)]
            }
        }
    }

    /// The `(scale, zero_point)` of the element at dimension coordinates `coords`: the one pair
    /// of a per-tensor type, the pair of slice `coords[axis]` of a per-axis type. Never panics:
    /// a coordinate past the quantized dimension takes the last pair, a `coords` too short the
    /// first, and a type without pairs (only a tensor without elements has one) scale 1 and
    /// zero point 0.
    pub fn pair_at(&self, coords: &[usize]) -> (E, i64) {
        let k = match self.axis {
            None => 0,
            Some(axis) => coords.get(axis).copied().unwrap_or(0),
        };
        match self.params.get(k).or(self.params.last()) {
            Some(&pair) => pair,
            None => (E::from_f64(1.0), 0),
        }
    }

    /// Quantizes `x`, the element at dimension coordinates `coords`, to a storage integer, as
    /// [`Self::quantize`] quantizes that element.
    pub fn quantize_at(&self, x: E, coords: &[usize]) -> i64 {
        let (scale, zp) = self.pair_at(coords);
        x.quantize(scale, zp, self.storage_min, self.storage_max)
    }

    /// Dequantizes `q`, the storage integer of the element at dimension coordinates `coords`,
    /// as [`Self::dequantize`] dequantizes that element.
    ///
    /// # Errors
    /// [`QuantError::Stored`] (with the row-major element number) for an integer outside the
    /// storage range.
    pub fn dequantize_at(&self, q: i64, coords: &[usize]) -> Result<E, QuantError> {
        if q < self.storage_min || q > self.storage_max {
            let index = coords
                .iter()
                .zip(&self.shape)
                .fold(0, |a, (c, n)| a * n + c);
            return Err(QuantError::Stored {
                index,
                value: q,
                min: self.storage_min,
                max: self.storage_max,
            });
        }
        let (scale, zp) = self.pair_at(coords);
        Ok(E::from_i64(q - zp).scaled(scale))
    }

    /// Quantizes `values` (row-major, one per element) to storage integers.
    pub fn quantize(&self, values: &[E]) -> Vec<i64> {
        values
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let (scale, zp) = self.pair(i);
                x.quantize(scale, zp, self.storage_min, self.storage_max)
            })
            .collect()
    }

    /// Dequantizes storage integers (row-major, one per element).
    ///
    /// # Errors
    /// [`QuantError::Stored`] for an integer outside the storage range.
    pub fn dequantize(&self, stored: &[i64]) -> Result<Vec<E>, QuantError> {
        stored
            .iter()
            .enumerate()
            .map(|(i, &q)| {
                if q < self.storage_min || q > self.storage_max {
                    return Err(QuantError::Stored {
                        index: i,
                        value: q,
                        min: self.storage_min,
                        max: self.storage_max,
                    });
                }
                let (scale, zp) = self.pair(i);
                Ok(E::from_i64(q - zp).scaled(scale))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn per_tensor(scale: f64, zp: i64, min: i64, max: i64) -> QuantizedType {
        QuantizedType {
            storage_signed: true,
            storage_width: 8,
            storage_min: min,
            storage_max: max,
            expressed: FloatKind::F32,
            axis: None,
            params: vec![(scale.to_bits(), zp)],
        }
    }

    #[test]
    fn quantize_rounds_half_to_even_and_clamps() {
        let q = Quantization::<f32>::new(&per_tensor(0.5, 0, -128, 127), &[6]).unwrap();
        // 0.25/0.5 = 0.5 -> 0, 0.75/0.5 = 1.5 -> 2, 1.25/0.5 = 2.5 -> 2, inf -> 127, NaN -> 0
        let x = [0.25, 0.75, 1.25, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
        assert_eq!(q.quantize(&x), vec![0, 2, 2, 127, -128, 0]);
        assert_eq!(q.dequantize(&[2, -128]).unwrap(), vec![1.0, -64.0]);
        assert!(q.dequantize(&[200]).is_err());
    }

    #[test]
    fn per_axis_pairs_follow_the_axis() {
        let mut t = per_tensor(1.0, 0, -128, 127);
        t.axis = Some(1);
        t.params = vec![(1f64.to_bits(), 0), (0.5f64.to_bits(), 10)];
        let q = Quantization::<f32>::new(&t, &[2, 2]).unwrap();
        assert_eq!(q.quantize(&[1.0, 1.0, 2.0, 2.0]), vec![1, 12, 2, 14]);
        // one element at a time, by its coordinates
        assert_eq!(q.quantize_at(2.0, &[1, 1]), 14);
        assert_eq!(q.dequantize_at(14, &[1, 1]).unwrap(), 2.0);
        assert_eq!(q.dequantize_at(14, &[0, 0]).unwrap(), 14.0);
        assert_eq!(
            q.dequantize_at(300, &[1, 0]).unwrap_err(),
            QuantError::Stored {
                index: 2,
                value: 300,
                min: -128,
                max: 127
            }
        );
        t.axis = Some(2);
        assert_eq!(
            Quantization::<f32>::new(&t, &[2, 2]).unwrap_err(),
            QuantError::Axis { axis: 2, rank: 2 }
        );
    }
}
