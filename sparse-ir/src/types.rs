//! Element types, typed scalar values and tensor types: the MLIR builtin types that surround an
//! encoding (`tensor<20x30xf32, #sparse_tensor.encoding<{...}>>`), the values of `explicitVal` /
//! `implicitVal`, and the uniform quantized types of the `quant` dialect.
//!
//! Everything here is `Eq + Hash`: floating-point numbers are stored as the bits of an `f64`
//! holding the value already rounded to its type (`1.0 : f32` keeps `(1.0f32 as f64).to_bits()`).
//! `Display` gives MLIR's canonical text (`1.000000e+00 : f32`, `!quant.uniform<i8:f32, 1.000000e-02:50>`).

use std::fmt;

use crate::verify::VerifiedEncoding;

/// Signedness of an integer type: `iN` (signless), `siN` (signed), `uiN` (unsigned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signedness {
    /// `iN`: no sign semantics (values print as signed).
    Signless,
    /// `siN`.
    Signed,
    /// `uiN`.
    Unsigned,
}

/// A floating-point type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatKind {
    /// IEEE half precision `f16`.
    F16,
    /// bfloat16 `bf16`.
    BF16,
    /// IEEE single precision `f32`.
    F32,
    /// IEEE double precision `f64`.
    F64,
}

impl FloatKind {
    /// The MLIR spelling (`f16`, `bf16`, `f32`, `f64`).
    pub fn mlir_name(self) -> &'static str {
        match self {
            FloatKind::F16 => "f16",
            FloatKind::BF16 => "bf16",
            FloatKind::F32 => "f32",
            FloatKind::F64 => "f64",
        }
    }

    /// Width in bits.
    pub fn bits(self) -> u32 {
        match self {
            FloatKind::F16 | FloatKind::BF16 => 16,
            FloatKind::F32 => 32,
            FloatKind::F64 => 64,
        }
    }

    /// Rounds an `f64` to this type (round to nearest, ties to even) and returns it as an `f64`.
    pub fn round(self, v: f64) -> f64 {
        match self {
            FloatKind::F64 => v,
            FloatKind::F32 => f64::from(v as f32),
            FloatKind::F16 => f64::from(f16_bits_to_f32(f32_to_f16_bits(v as f32))),
            FloatKind::BF16 => {
                f64::from(f32::from_bits(u32::from(f32_to_bf16_bits(v as f32)) << 16))
            }
        }
    }

    /// The bit pattern of `v` (already rounded to this type) in this type's format.
    pub fn to_bits(self, v: f64) -> u64 {
        match self {
            FloatKind::F64 => v.to_bits(),
            FloatKind::F32 => u64::from((v as f32).to_bits()),
            FloatKind::F16 => u64::from(f32_to_f16_bits(v as f32)),
            FloatKind::BF16 => u64::from(f32_to_bf16_bits(v as f32)),
        }
    }

    /// The value whose bit pattern in this type's format is `bits` (`None` if `bits` is wider
    /// than the type).
    pub fn from_bits(self, bits: u64) -> Option<f64> {
        match self {
            FloatKind::F64 => Some(f64::from_bits(bits)),
            FloatKind::F32 => Some(f64::from(f32::from_bits(u32::try_from(bits).ok()?))),
            FloatKind::F16 => Some(f64::from(f16_bits_to_f32(u16::try_from(bits).ok()?))),
            FloatKind::BF16 => Some(f64::from(f32::from_bits(
                u32::from(u16::try_from(bits).ok()?) << 16,
            ))),
        }
    }

    /// APFloat's "natural" number of significant decimal digits: `2 + precision * 59 / 196`.
    fn natural_digits(self) -> usize {
        let precision = match self {
            FloatKind::F16 => 11,
            FloatKind::BF16 => 8,
            FloatKind::F32 => 24,
            FloatKind::F64 => 53,
        };
        2 + precision * 59 / 196
    }
}

fn f32_to_bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) as u16) | 0x40;
    }
    let round = 0x7FFF + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

fn f32_to_f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xFF) as i32;
    let man = b & 0x7F_FFFF;
    if exp == 0xFF {
        return sign | 0x7C00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1F {
        return sign | 0x7C00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1u32 << shift) - 1);
        let mut r = m >> shift;
        if rest > half || (rest == half && (r & 1) == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1FFF;
    if rest > 0x1000 || (rest == 0x1000 && (r & 1) == 1) {
        r += 1; // may carry into the exponent, up to infinity: correct
    }
    sign | r as u16
}

fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1F);
    let man = u32::from(h & 0x3FF);
    let bits = if exp == 0 {
        if man == 0 {
            sign
        } else {
            let v = man as f32 * (1.0 / 16_777_216.0); // man * 2^-24
            return if sign != 0 { -v } else { v };
        }
    } else if exp == 0x1F {
        sign | 0x7F80_0000 | (man << 13)
    } else {
        sign | ((exp + 127 - 15) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

/// An element type: MLIR builtin integer, index, float and complex types, and the `quant`
/// dialect's uniform quantized types.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// `iN` / `siN` / `uiN`, `width` in bits (1 ..= 16777215, as in MLIR).
    Int {
        /// Width in bits.
        width: u32,
        /// Signless, signed or unsigned.
        signedness: Signedness,
    },
    /// `index` (a target-sized integer; 64 bits for values).
    Index,
    /// `f16`, `bf16`, `f32`, `f64`.
    Float(FloatKind),
    /// `complex<T>` with a float element type.
    Complex(Box<ElementType>),
    /// `!quant.uniform<...>`.
    Quant(Box<QuantizedType>),
}

/// A uniform quantized type `!quant.uniform<storage<min:max>:expressed[:axis], params>`:
/// `real = scale * (stored - zero_point)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct QuantizedType {
    /// `true` for `iN` storage, `false` for `uN`.
    pub storage_signed: bool,
    /// Storage width in bits.
    pub storage_width: u32,
    /// Smallest storable value (defaults to the storage type's minimum).
    pub storage_min: i64,
    /// Largest storable value (defaults to the storage type's maximum).
    pub storage_max: i64,
    /// The float type the values express (`f32` in `!quant.uniform<i8:f32, 0.5>`).
    pub expressed: FloatKind,
    /// Per-axis quantization: the quantized dimension; `None` for per-tensor.
    pub axis: Option<u32>,
    /// `(scale as f64 bits, zero_point)`: one pair per tensor, or one per slice along `axis`.
    pub params: Vec<(u64, i64)>,
}

impl QuantizedType {
    /// Default storage range of a `width`-bit integer (`None` for widths above 64).
    pub fn default_range(signed: bool, width: u32) -> Option<(i64, i64)> {
        match (signed, width) {
            (_, 0) | (_, 65..) => None,
            (true, 64) => Some((i64::MIN, i64::MAX)),
            (true, w) => Some((-(1i64 << (w - 1)), (1i64 << (w - 1)) - 1)),
            (false, 64) => None,
            (false, w) => Some((0, (1i64 << w) - 1)),
        }
    }
}

impl ElementType {
    /// The Rust type that holds one value of this element type, for the code generator:
    /// `i1` -> `bool`, `iN`/`siN` (N = 8, 16, 32, 64, 128) -> `iN`, `uiN` -> `uN`, `index` ->
    /// `usize`, `f16`/`bf16` -> `half::f16`/`half::bf16`, `f32`, `f64`. `None` for other widths,
    /// complex and quantized types (not stored yet).
    pub fn rust_type(&self) -> Option<&'static str> {
        Some(match self {
            ElementType::Int { width: 1, .. } => "bool",
            ElementType::Int { width, signedness } => {
                let unsigned = *signedness == Signedness::Unsigned;
                match (width, unsigned) {
                    (8, false) => "i8",
                    (16, false) => "i16",
                    (32, false) => "i32",
                    (64, false) => "i64",
                    (128, false) => "i128",
                    (8, true) => "u8",
                    (16, true) => "u16",
                    (32, true) => "u32",
                    (64, true) => "u64",
                    (128, true) => "u128",
                    _ => return None,
                }
            }
            ElementType::Index => "usize",
            ElementType::Float(FloatKind::F16) => "half::f16",
            ElementType::Float(FloatKind::BF16) => "half::bf16",
            ElementType::Float(FloatKind::F32) => "f32",
            ElementType::Float(FloatKind::F64) => "f64",
            ElementType::Complex(_) | ElementType::Quant(_) => return None,
        })
    }

    /// The float kind, if this is a float type.
    pub fn as_float(&self) -> Option<FloatKind> {
        match self {
            ElementType::Float(k) => Some(*k),
            _ => None,
        }
    }

    /// `true` for integer and index types.
    pub fn is_integer_like(&self) -> bool {
        matches!(self, ElementType::Int { .. } | ElementType::Index)
    }
}

fn fmt_scale(bits: u64) -> String {
    // raw_ostream << double: printf("%e").
    sci(f64::from_bits(bits), 6)
}

impl fmt::Display for ElementType {
    /// MLIR's spelling: `i32`, `si8`, `ui16`, `index`, `f32`, `complex<f64>`,
    /// `!quant.uniform<i8:f32:1, {2.000000e-01:20,1.000000e-01:10}>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElementType::Int { width, signedness } => {
                let p = match signedness {
                    Signedness::Signless => "i",
                    Signedness::Signed => "si",
                    Signedness::Unsigned => "ui",
                };
                write!(f, "{p}{width}")
            }
            ElementType::Index => f.write_str("index"),
            ElementType::Float(k) => f.write_str(k.mlir_name()),
            ElementType::Complex(t) => write!(f, "complex<{t}>"),
            ElementType::Quant(q) => {
                write!(
                    f,
                    "!quant.uniform<{}{}",
                    if q.storage_signed { "i" } else { "u" },
                    q.storage_width
                )?;
                if QuantizedType::default_range(q.storage_signed, q.storage_width)
                    != Some((q.storage_min, q.storage_max))
                {
                    write!(f, "<{}:{}>", q.storage_min, q.storage_max)?;
                }
                write!(f, ":{}", q.expressed.mlir_name())?;
                let pair = |(s, z): &(u64, i64)| {
                    if *z == 0 {
                        fmt_scale(*s)
                    } else {
                        format!("{}:{z}", fmt_scale(*s))
                    }
                };
                match q.axis {
                    Some(a) => write!(
                        f,
                        ":{a}, {{{}}}>",
                        q.params.iter().map(pair).collect::<Vec<_>>().join(",")
                    ),
                    None => write!(f, ", {}>", q.params.first().map(pair).unwrap_or_default()),
                }
            }
        }
    }
}

/// The value part of a [`TypedValue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarValue {
    /// An integer (signed view for `iN`/`siN`, unsigned for `uiN`; `i1` is 0 or 1).
    Int(i128),
    /// A float: `f64` bits of the value rounded to its type.
    Float(u64),
    /// A complex number: `f64` bits of the real and imaginary parts (rounded to the element type).
    Complex(u64, u64),
}

/// A typed constant, as in `explicitVal = 1.0 : f32`: MLIR's `IntegerAttr`, `FloatAttr` or
/// `complex::NumberAttr`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TypedValue {
    /// The value.
    pub value: ScalarValue,
    /// Its type (`ElementType::Complex` for complex values).
    pub ty: ElementType,
}

impl ScalarValue {
    /// The real part as an `f64`: an integer converted (`i as f64`, to nearest), a float as
    /// stored, a complex number's real part. With [`Self::imag`] and [`Self::integer`], the one
    /// conversion of a constant (`explicitVal`) into a value type, shared by the runtime
    /// (`sparse_runtime::value::FromScalar`) and the code generator's literals.
    pub fn real(&self) -> f64 {
        match *self {
            ScalarValue::Int(v) => v as f64,
            ScalarValue::Float(b) | ScalarValue::Complex(b, _) => f64::from_bits(b),
        }
    }

    /// The imaginary part as an `f64` (`0` for an integer or a float).
    pub fn imag(&self) -> f64 {
        match *self {
            ScalarValue::Complex(_, b) => f64::from_bits(b),
            ScalarValue::Int(_) | ScalarValue::Float(_) => 0.0,
        }
    }

    /// The value as an integer: an integer as stored, a float's (or a complex number's real
    /// part's) integer part, rounded toward zero and saturating (`f64 as i128`: NaN gives 0).
    pub fn integer(&self) -> i128 {
        match *self {
            ScalarValue::Int(v) => v,
            ScalarValue::Float(b) | ScalarValue::Complex(b, _) => f64::from_bits(b) as i128,
        }
    }
}

impl TypedValue {
    /// `true` if the value is zero (`0`, `0.0`, `-0.0`, `(0, 0)`).
    pub fn is_zero(&self) -> bool {
        match self.value {
            ScalarValue::Int(v) => v == 0,
            ScalarValue::Float(b) => f64::from_bits(b) == 0.0,
            ScalarValue::Complex(r, i) => f64::from_bits(r) == 0.0 && f64::from_bits(i) == 0.0,
        }
    }
}

impl fmt::Display for TypedValue {
    /// MLIR's canonical form: `1 : i64`, `true` (i1), `1.000000e+00 : f32`,
    /// `#complex.number<:f32 1.000000e+00, 0.000000e+00> : complex<f32>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.value, &self.ty) {
            (ScalarValue::Int(v), ElementType::Int { width: 1, .. }) => {
                f.write_str(if *v != 0 { "true" } else { "false" })
            }
            (ScalarValue::Int(v), t) => write!(f, "{v} : {t}"),
            (ScalarValue::Float(b), ElementType::Float(k)) => {
                write!(
                    f,
                    "{} : {}",
                    format_float(f64::from_bits(*b), *k),
                    k.mlir_name()
                )
            }
            (ScalarValue::Complex(r, i), ElementType::Complex(inner)) => {
                let k = inner.as_float().unwrap_or(FloatKind::F64);
                write!(
                    f,
                    "#complex.number<:{} {}, {}> : {}",
                    k.mlir_name(),
                    format_float(f64::from_bits(*r), k),
                    format_float(f64::from_bits(*i), k),
                    self.ty
                )
            }
            // Inconsistent hand-built values: print something parseable-looking.
            (ScalarValue::Float(b), t) => write!(
                f,
                "{} : {t}",
                format_float(f64::from_bits(*b), FloatKind::F64)
            ),
            (ScalarValue::Complex(r, i), t) => write!(
                f,
                "#complex.number<:f64 {}, {}> : {t}",
                format_float(f64::from_bits(*r), FloatKind::F64),
                format_float(f64::from_bits(*i), FloatKind::F64)
            ),
        }
    }
}

/// `%.{digits}e` with at least two exponent digits (`1.000000e+00`).
fn sci(v: f64, digits: usize) -> String {
    let s = format!("{:.*e}", digits, v);
    match s.split_once('e') {
        Some((m, e)) => {
            let e: i32 = e.parse().unwrap_or(0);
            format!(
                "{m}e{}{:02}",
                if e < 0 { '-' } else { '+' },
                e.unsigned_abs()
            )
        }
        None => s,
    }
}

/// Prints a float the way MLIR's `AsmPrinter` does: `%.6e`-style scientific form when it reads
/// back to the same value, else APFloat's shortest natural form (when it contains a `.`), else
/// the bit pattern in hexadecimal (`0x7F800000` for `inf : f32`).
pub fn format_float(v: f64, kind: FloatKind) -> String {
    if v.is_finite() {
        let s = sci(v, 6);
        if let Ok(back) = s.parse::<f64>() {
            if kind.to_bits(kind.round(back)) == kind.to_bits(v) {
                return s;
            }
        }
        let s = apfloat_natural(v, kind);
        if s.contains('.') {
            return s;
        }
    }
    format!("0x{:X}", kind.to_bits(v))
}

/// APFloat::toString(FormatPrecision = 0, FormatMaxPadding = 3, TruncateZero = true).
fn apfloat_natural(v: f64, kind: FloatKind) -> String {
    let p = kind.natural_digits();
    let s = format!("{:.*e}", p - 1, v.abs());
    let Some((mant, e)) = s.split_once('e') else {
        return s;
    };
    let e: i64 = e.parse().unwrap_or(0);
    let mut digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    let n = digits.len() as i64;
    let exp = e - (n - 1); // exponent of the last digit
    let scientific = if exp >= 0 {
        exp > 3 || n + exp > p as i64
    } else if e >= 0 {
        false
    } else {
        -e > 3
    };
    let mut out = String::new();
    if v.is_sign_negative() {
        out.push('-');
    }
    if scientific {
        out.push_str(&digits[..1]);
        out.push('.');
        if n == 1 {
            out.push('0');
        } else {
            out.push_str(&digits[1..]);
        }
        out.push('E');
        out.push(if e >= 0 { '+' } else { '-' });
        out.push_str(&e.unsigned_abs().to_string());
    } else if exp >= 0 {
        out.push_str(&digits);
        out.push_str(&"0".repeat(exp as usize));
    } else if e >= 0 {
        let k = (e + 1) as usize;
        out.push_str(&digits[..k]);
        out.push('.');
        out.push_str(&digits[k..]);
    } else {
        out.push_str("0.");
        out.push_str(&"0".repeat((-e - 1) as usize));
        out.push_str(&digits);
    }
    out
}

/// A ranked tensor type `tensor<20x?xf32, #encoding>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// One entry per dimension: `Some(size)` for a static size, `None` for `?`.
    pub shape: Vec<Option<u64>>,
    /// The element type.
    pub element: ElementType,
    /// The sparse encoding, if any (`tensor<4xf32>` has none), verified.
    pub encoding: Option<VerifiedEncoding>,
}

impl fmt::Display for TensorType {
    /// `tensor<20x30xf32, #sparse_tensor.encoding<{ ... }>>`, `?` for dynamic sizes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        for d in &self.shape {
            match d {
                Some(n) => write!(f, "{n}x")?,
                None => f.write_str("?x")?,
            }
        }
        write!(f, "{}", self.element)?;
        if let Some(e) = &self.encoding {
            write!(f, ", {e}")?;
        }
        f.write_str(">")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_printing() {
        assert_eq!(format_float(1.0, FloatKind::F32), "1.000000e+00");
        assert_eq!(format_float(0.0, FloatKind::F64), "0.000000e+00");
        assert_eq!(format_float(-0.0, FloatKind::F64), "-0.000000e+00");
        assert_eq!(format_float(0.1, FloatKind::F64), "1.000000e-01");
        assert_eq!(
            format_float(FloatKind::F32.round(0.1), FloatKind::F32),
            "1.000000e-01"
        );
        assert_eq!(format_float(0.123456789, FloatKind::F64), "0.123456789");
        assert_eq!(
            format_float(0.1 + 0.2, FloatKind::F64),
            "0.30000000000000004"
        );
        assert_eq!(format_float(f64::INFINITY, FloatKind::F32), "0x7F800000");
        assert_eq!(
            format_float(f64::NEG_INFINITY, FloatKind::F64),
            "0xFFF0000000000000"
        );
        assert_eq!(
            format_float(123456789.0, FloatKind::F64),
            "0x419D6F3454000000"
        );
        assert_eq!(
            format_float(1.5e-10 + 1e-25, FloatKind::F64),
            "1.500000000000001E-10"
        );
        assert_eq!(format_float(1.0, FloatKind::F16), "1.000000e+00");
        assert_eq!(
            format_float(FloatKind::F16.round(0.1), FloatKind::F16),
            "9.997559e-02"
        );
    }

    #[test]
    fn half_rounding() {
        for (x, bits) in [
            (1.0f32, 0x3C00u16),
            (65504.0, 0x7BFF),
            (65520.0, 0x7C00),
            (5.96e-8, 0x0001),
            (-2.0, 0xC000),
        ] {
            assert_eq!(f32_to_f16_bits(x), bits, "{x}");
        }
        assert_eq!(f16_bits_to_f32(0x3C00), 1.0);
        assert_eq!(f16_bits_to_f32(0x0001), 5.960_464_5e-8);
        assert_eq!(f32_to_bf16_bits(1.0), 0x3F80);
    }
}
