//! Value types stored in sparse tensors.

use std::fmt::{Debug, Display};
use std::ops::{AddAssign, Mul};

use sparse_ir::types::ScalarValue;

/// A stored value: any copyable numeric type with zero, `+=` and `*`
/// (`f32`, `f64`, the integer types, `half::f16` and `half::bf16`, `Complex<f32>` and
/// `Complex<f64>`, [`I1`] for MLIR's `i1`) that an encoding's constant converts to ([`FromScalar`], for `explicitVal`).
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

/// MLIR's `i1`: one bit, the values 0 and 1, computed as MLIR's `arith` ops on `i1` compute:
/// modulo 2. `+` and `-` are exclusive or, `*` and `&` are and, `|` or, `^` exclusive or,
/// negation keeps the value (`-1` is `1` modulo 2); the `wrapping_*` methods are the same
/// operations under the names the integer types give them (generated kernels call those on
/// every integer type), and a division by 1 keeps the dividend while a division by 0 is
/// `StorageError::DivisionByZero` (`generated::int_div`), as for the other integers. Ordered
/// `0 < 1` (the values read as unsigned, as `vector.print` prints them), so `min` is and and
/// `max` or. Displayed `1` or `0`, as MLIR's `vector.print` and `sparse_tensor.print` print an
/// `i1`. A storage of `I1` is a boolean sparse tensor (`tensor<?x?xi1, #CSR>`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct I1(pub bool);

impl I1 {
    /// Addition modulo 2: exclusive or.
    #[inline]
    pub fn wrapping_add(self, b: I1) -> I1 {
        I1(self.0 ^ b.0)
    }
    /// Subtraction modulo 2: exclusive or.
    #[inline]
    pub fn wrapping_sub(self, b: I1) -> I1 {
        I1(self.0 ^ b.0)
    }
    /// Multiplication modulo 2: and.
    #[inline]
    pub fn wrapping_mul(self, b: I1) -> I1 {
        I1(self.0 & b.0)
    }
    /// Negation modulo 2: the value itself.
    #[inline]
    pub fn wrapping_neg(self) -> I1 {
        self
    }
}

impl From<bool> for I1 {
    fn from(b: bool) -> I1 {
        I1(b)
    }
}

impl From<I1> for bool {
    fn from(b: I1) -> bool {
        b.0
    }
}

impl Display for I1 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0 { "1" } else { "0" })
    }
}

/// Addition modulo 2: exclusive or.
impl std::ops::Add for I1 {
    type Output = I1;
    #[inline]
    fn add(self, b: I1) -> I1 {
        self.wrapping_add(b)
    }
}

/// Addition modulo 2: exclusive or.
impl AddAssign for I1 {
    #[inline]
    fn add_assign(&mut self, b: I1) {
        *self = self.wrapping_add(b);
    }
}

/// Subtraction modulo 2: exclusive or.
impl std::ops::Sub for I1 {
    type Output = I1;
    #[inline]
    fn sub(self, b: I1) -> I1 {
        self.wrapping_sub(b)
    }
}

/// Multiplication modulo 2: and.
impl Mul for I1 {
    type Output = I1;
    #[inline]
    fn mul(self, b: I1) -> I1 {
        self.wrapping_mul(b)
    }
}

/// Multiplication modulo 2: and.
impl std::ops::MulAssign for I1 {
    #[inline]
    fn mul_assign(&mut self, b: I1) {
        *self = self.wrapping_mul(b);
    }
}

/// Negation modulo 2: the value itself.
impl std::ops::Neg for I1 {
    type Output = I1;
    #[inline]
    fn neg(self) -> I1 {
        self
    }
}

impl std::ops::BitAnd for I1 {
    type Output = I1;
    #[inline]
    fn bitand(self, b: I1) -> I1 {
        I1(self.0 & b.0)
    }
}

impl std::ops::BitOr for I1 {
    type Output = I1;
    #[inline]
    fn bitor(self, b: I1) -> I1 {
        I1(self.0 | b.0)
    }
}

impl std::ops::BitXor for I1 {
    type Output = I1;
    #[inline]
    fn bitxor(self, b: I1) -> I1 {
        I1(self.0 ^ b.0)
    }
}

impl std::ops::BitAndAssign for I1 {
    #[inline]
    fn bitand_assign(&mut self, b: I1) {
        self.0 &= b.0;
    }
}

impl std::ops::BitOrAssign for I1 {
    #[inline]
    fn bitor_assign(&mut self, b: I1) {
        self.0 |= b.0;
    }
}

impl std::ops::BitXorAssign for I1 {
    #[inline]
    fn bitxor_assign(&mut self, b: I1) {
        self.0 ^= b.0;
    }
}

impl num_traits::Zero for I1 {
    fn zero() -> I1 {
        I1(false)
    }
    fn is_zero(&self) -> bool {
        !self.0
    }
}

/// An `explicitVal` as an `i1`: `1` unless the constant is zero (`true`).
impl FromScalar for I1 {
    fn from_scalar(v: &ScalarValue) -> I1 {
        I1(v.integer() != 0 || v.real() != 0.0 || v.imag() != 0.0)
    }
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
