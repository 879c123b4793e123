//! Value types stored in sparse tensors.

use std::fmt::{Debug, Display};
use std::ops::{AddAssign, Mul};

use sparse_ir::types::ScalarValue;

/// A stored value: any copyable numeric type with zero, `+=` and `*`
/// (`f32`, `f64`, the integer types, `half::f16` and `half::bf16`, `Complex<f32>` and
/// `Complex<f64>`) that an encoding's constant converts to ([`FromScalar`], for `explicitVal`).
///
/// `Display` must print the shortest round-trip form (Rust's float `Display` does), as used by
/// `sparse_tensor.print` and the CLI.
pub trait Value:
    Copy
    + PartialEq
    + Debug
    + Display
    + num_traits::Zero
    + AddAssign
    + Mul<Output = Self>
    + FromScalar
    + Send
    + Sync
    + 'static
{
}

impl<T> Value for T where
    T: Copy
        + PartialEq
        + Debug
        + Display
        + num_traits::Zero
        + AddAssign
        + Mul<Output = T>
        + FromScalar
        + Send
        + Sync
        + 'static
{
}

/// A value type an encoding's constant (`explicitVal = 1.0 : f64`, a [`ScalarValue`]) converts
/// to: the value every stored entry of a format with `explicitVal` holds.
///
/// The conversion is Rust's `as` from the constant's parts ([`ScalarValue::real`],
/// [`ScalarValue::imag`], [`ScalarValue::integer`]): a float type takes the real part rounded to
/// nearest (`1 : i32` is `1.0`), an integer type the integer part saturated to its range
/// (`2.5 : f64` is `2` in `i32`, `300 : i32` is `127` in `i8`), a complex type both parts, a real
/// type the real part of a complex constant. The constant and the value type agree when the
/// format is declared as a tensor type (`tensor<?x?xf32, #enc>` with `explicitVal = 1.0 : f32`),
/// and then nothing is lost. The code generator emits the same conversion for the literals of
/// its kernels.
pub trait FromScalar {
    /// `v` in this type.
    fn from_scalar(v: &ScalarValue) -> Self;
}

impl FromScalar for f64 {
    #[inline]
    fn from_scalar(v: &ScalarValue) -> f64 {
        v.real()
    }
}

impl FromScalar for f32 {
    #[inline]
    fn from_scalar(v: &ScalarValue) -> f32 {
        v.real() as f32
    }
}

impl FromScalar for half::f16 {
    #[inline]
    fn from_scalar(v: &ScalarValue) -> half::f16 {
        half::f16::from_f64(v.real())
    }
}

impl FromScalar for half::bf16 {
    #[inline]
    fn from_scalar(v: &ScalarValue) -> half::bf16 {
        half::bf16::from_f64(v.real())
    }
}

macro_rules! int_from_scalar {
    ($($t:ty),*) => {$(
        impl FromScalar for $t {
            #[inline]
            fn from_scalar(v: &ScalarValue) -> $t {
                v.integer().clamp(<$t>::MIN as i128, <$t>::MAX as i128) as $t
            }
        }
    )*};
}
int_from_scalar!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, i128);

impl FromScalar for u128 {
    #[inline]
    fn from_scalar(v: &ScalarValue) -> u128 {
        v.integer().max(0) as u128
    }
}

impl FromScalar for num_complex::Complex<f64> {
    #[inline]
    fn from_scalar(v: &ScalarValue) -> Self {
        num_complex::Complex::new(v.real(), v.imag())
    }
}

impl FromScalar for num_complex::Complex<f32> {
    #[inline]
    fn from_scalar(v: &ScalarValue) -> Self {
        num_complex::Complex::new(v.real() as f32, v.imag() as f32)
    }
}

#[cfg(test)]
mod tests {
    use super::FromScalar;
    use sparse_ir::types::ScalarValue;

    #[test]
    fn constants_convert_as_rust_casts() {
        let one = ScalarValue::Float(1.0f64.to_bits());
        assert_eq!(f64::from_scalar(&one), 1.0);
        assert_eq!(i32::from_scalar(&one), 1);
        assert_eq!(half::f16::from_scalar(&one), half::f16::ONE);
        let big = ScalarValue::Int(300);
        assert_eq!(i8::from_scalar(&big), 127);
        assert_eq!(u8::from_scalar(&ScalarValue::Int(-3)), 0);
        assert_eq!(f32::from_scalar(&big), 300.0);
        let c = ScalarValue::Complex(1.5f64.to_bits(), (-2.0f64).to_bits());
        assert_eq!(
            num_complex::Complex::<f32>::from_scalar(&c),
            num_complex::Complex::new(1.5, -2.0)
        );
        assert_eq!(f64::from_scalar(&c), 1.5);
        assert_eq!(i64::from_scalar(&ScalarValue::Float(2.5f64.to_bits())), 2);
    }
}
