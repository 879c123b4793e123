//! Uniform quantized element types (`tensor<?x?x!quant.uniform<i8:f32, 0.5:10>, #enc>`): the
//! struct stores the storage integers (`V` defaults to the storage type), and this module emits
//! the quantization as data and the conversions between real `f32` values and stored integers,
//! with StableHLO's arithmetic from the runtime (`sparse_runtime::quant`):
//!
//! - constants `STORAGE_MIN`, `STORAGE_MAX`, `QUANTIZED_AXIS`, `QUANT_PARAMS` (scales rounded to
//!   `f32`, zero points) and the per-element functions `quant_pair`, `quantize_value`,
//!   `dequantize_value` (what generated kernels call on the fly);
//! - on the real struct (`Name<f32>`): `quantize()`; on the stored struct (`Name<i8>`):
//!   `from_coo_real`, `from_dense_real` (assembled in `f32`, then quantized position by
//!   position, so a position no entry reaches, a dense level's or a block's fill, holds the
//!   zero point: a real 0), `dequantized()`, `to_dense_real()`, `quantization()` and
//!   `check_storage_range()`, which the integer constructors call (`StorageError::StorageRange`),
//!   and `requantize::<T>()` (StableHLO's `quantize(dequantize(q))` into another quantized
//!   format, through the runtime's `QuantizedFormat` trait, which the stored struct implements);
//!   rank-2 formats quantized per tensor or per row also get `spmv_int`, the integer-only
//!   product (an `i32` sum of `(a - zp_a) * (x - zp_x)`, scaled once).
//!
//! A per-axis type picks the pair of each element by its dimension coordinate on the quantized
//! axis.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use sparse_ir::types::{FloatKind, QuantizedType};

use super::{CodegenError, Ctx};

/// A quantized element type checked for code generation: the Rust storage type and the pairs
/// with their scales rounded to `f32`.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantInfo {
    /// `true` for `iN` storage, `false` for `uN`.
    pub signed: bool,
    /// The storage width `N` in bits.
    pub width: u32,
    /// The Rust integer type of the stored values (`i8`, `i16`, `i32`, `u8`, `u16`, `u32`).
    pub storage: &'static str,
    /// `storage_min`.
    pub min: i64,
    /// `storage_max`.
    pub max: i64,
    /// The quantized dimension of a per-axis type.
    pub axis: Option<usize>,
    /// `(scale, zero_point)` pairs, scales rounded to `f32`.
    pub params: Vec<(f32, i64)>,
}

impl QuantInfo {
    /// Checks `q` for a tensor of `rank` dimensions of static sizes `shape` (`None` for `?`).
    ///
    /// Errors: storage wider than 32 bits; an expressed type other than `f32`; a scale not
    /// positive and finite in `f32`; a zero point outside the storage range; an axis not below
    /// the rank; a per-axis pair count other than a static quantized dimension's size.
    pub fn new(q: &QuantizedType, shape: &[Option<u64>]) -> Result<Self, CodegenError> {
        let err = |m: String| Err(CodegenError(m));
        let sign = if q.storage_signed { "i" } else { "u" };
        let Some(storage) = storage_name(q.storage_signed, q.storage_width) else {
            let w = q.storage_width;
            return err(format!(
                "quantized storage type {sign}{w} is not stored yet (iN or uN with N <= 32)"
            ));
        };
        if q.expressed != FloatKind::F32 {
            return err(format!(
                "quantized types expressed in {} are not stored yet (f32)",
                sparse_ir_float(q.expressed)
            ));
        }
        let axis = match q.axis {
            None => None,
            Some(a) => {
                let a = a as usize;
                if a >= shape.len() {
                    return err(format!(
                        "quantized axis {a} is not below the rank {}",
                        shape.len()
                    ));
                }
                if let Some(n) = shape[a] {
                    if n != q.params.len() as u64 {
                        return err(format!(
                            "{} scale:zero_point pairs, but dimension {a} has size {n}",
                            q.params.len()
                        ));
                    }
                }
                Some(a)
            }
        };
        if q.params.is_empty() {
            return err("a quantized type without scale:zero_point pairs".into());
        }
        let mut params = Vec::with_capacity(q.params.len());
        for &(bits, zp) in &q.params {
            let written = f64::from_bits(bits);
            let scale = written as f32;
            if !(scale.is_finite() && scale > 0.0) {
                return err(format!(
                    "scale {written:e} is not positive and finite in f32"
                ));
            }
            if zp < q.storage_min || zp > q.storage_max {
                return err(format!(
                    "zero point {zp} is outside the storage range [{}, {}]",
                    q.storage_min, q.storage_max
                ));
            }
            params.push((scale, zp));
        }
        Ok(QuantInfo {
            signed: q.storage_signed,
            width: q.storage_width,
            storage,
            min: q.storage_min,
            max: q.storage_max,
            axis,
            params,
        })
    }

    /// The storage type as tokens.
    pub fn storage_type(&self) -> TokenStream {
        let t = format_ident!("{}", self.storage);
        quote!(#t)
    }
}

/// The Rust integer type holding `iN` (`signed`) or `uN` storage of `width` bits: the
/// narrowest of `i8`, `i16`, `i32` (`u8`, `u16`, `u32`) that holds it; `None` above 32 bits.
pub fn storage_name(signed: bool, width: u32) -> Option<&'static str> {
    Some(match (signed, width) {
        (true, 1..=8) => "i8",
        (true, 9..=16) => "i16",
        (true, 17..=32) => "i32",
        (false, 1..=8) => "u8",
        (false, 9..=16) => "u16",
        (false, 17..=32) => "u32",
        _ => return None,
    })
}

fn sparse_ir_float(k: FloatKind) -> &'static str {
    match k {
        FloatKind::F16 => "f16",
        FloatKind::BF16 => "bf16",
        FloatKind::F32 => "f32",
        FloatKind::F64 => "f64",
    }
}

/// The quantization items of a quantized declaration (nothing for the others).
pub(super) fn emit(cx: &Ctx) -> TokenStream {
    let Some(q) = &cx.decl.quant else {
        return TokenStream::new();
    };
    let Ctx {
        name,
        rt,
        field_names,
        ..
    } = cx;
    let dim_rank = cx.dim_rank;
    let s = q.storage_type();
    let (min, max) = (q.min, q.max);
    let n = q.params.len();
    let pairs: Vec<TokenStream> = q
        .params
        .iter()
        .map(|&(scale, zp)| {
            let scale = proc_macro2::Literal::f32_suffixed(scale);
            let zp = proc_macro2::Literal::i64_suffixed(zp);
            quote!((#scale, #zp))
        })
        .collect();
    let (axis_const, pair_body, axis_of) = match q.axis {
        None => (quote!(None), quote!(Self::QUANT_PARAMS[0]), quote!(0usize)),
        Some(a) => (
            quote!(Some(#a)),
            quote! {
                match Self::QUANT_PARAMS.get(k) {
                    Some(&p) => p,
                    None => Self::QUANT_PARAMS[#n - 1],
                }
            },
            quote!(c[#a]),
        ),
    };
    let batch_copy = if cx.batched {
        quote!(counts: self.counts, batches: self.batches,)
    } else {
        quote!()
    };
    // per stored position, the pair's index: the dimension coordinate on the quantized axis
    // of the entry stored there (found by its address in `values`); a position no entry
    // reaches keeps pair 0
    let axis_coords = match q.axis {
        None => quote! {
            fn quant_axis_coords(&self) -> ::std::vec::Vec<usize> {
                ::std::vec::Vec::new()
            }
        },
        Some(_) => quote! {
            fn quant_axis_coords(&self) -> ::std::vec::Vec<usize> {
                let mut k = ::std::vec![0usize; self.values.len()];
                let base = self.values.as_ptr() as usize;
                let size = ::core::mem::size_of::<V>().max(1);
                self.for_each(|c, v| {
                    let at = (v as *const V as usize).wrapping_sub(base) / size;
                    if let Some(slot) = k.get_mut(at) {
                        *slot = #axis_of;
                    }
                });
                k
            }
        },
    };
    let per_axis_shape = match q.axis {
        None => quote!(),
        Some(a) => quote! {
            if shape[#a] != #n {
                return Err(StorageError::ShapeMismatch { dim: #a, expected: #n, got: shape[#a] });
            }
        },
    };
    // the integer-only alternative of a matrix-vector product (rank 2, a scale per row at
    // most: a per-column scale cannot leave the sum)
    let int_dot = if dim_rank == 2 && q.axis.is_none_or(|a| a == 0) {
        quote! {
            /// SpMV on the integers, the alternative to a `kernel` that dequantizes: `y(i) =
            /// (scale_a(i) * scale_x) * sum_j (a(i, j) - zp_a(i)) * (x(j) - zp_x)`, the sum
            /// accumulated in `i32` over the stored entries (wrapping on overflow, as the
            /// integer `dot_general` lowerings of quantized StableHLO accumulate), converted to
            /// `f32` once and scaled by the product of the scales (rounded to `f32`). `x` holds
            /// the storage integers of a vector quantized per tensor by `x_pair = (scale,
            /// zero_point)` (`QX::<u8>::QUANT_PARAMS[0]`); a missing entry of `self` is a real
            /// 0 and adds nothing. The result can differ from the `f32` kernel in the last
            /// bits (one rounding instead of one per term). Generated for rank-2 formats
            /// quantized per tensor or per axis 0.
            ///
            /// Errors: `StorageError::LengthMismatch` when `x` or `y` does not have the
            /// length of dimension 1 or 0.
            pub fn spmv_int<X: #rt::quant::StorageInt>(
                &self,
                x: &[X],
                x_pair: (f32, i64),
                y: &mut [f32],
            ) -> Result<(), StorageError> {
                let [rows, cols] = self.dim_shape;
                if x.len() != cols {
                    return Err(StorageError::LengthMismatch { operand: "x", expected: cols, got: x.len() });
                }
                if y.len() != rows {
                    return Err(StorageError::LengthMismatch { operand: "y", expected: rows, got: y.len() });
                }
                let (x_scale, x_zp) = x_pair;
                let mut acc = ::std::vec![0i32; rows];
                self.for_each(|c, &q| {
                    // stored coordinates lie below the shape: both are found
                    if let (Some(xv), Some(slot)) = (x.get(c[1]), acc.get_mut(c[0])) {
                        let (_, zp) = Self::quant_pair(c[0]);
                        let a = <#s as #rt::quant::StorageInt>::to_i64(q).wrapping_sub(zp) as i32;
                        let xv = xv.to_i64().wrapping_sub(x_zp) as i32;
                        *slot = slot.wrapping_add(a.wrapping_mul(xv));
                    }
                });
                for (i, (o, &s)) in y.iter_mut().zip(&acc).enumerate() {
                    let (scale, _) = Self::quant_pair(i);
                    *o = s as f32 * (scale * x_scale);
                }
                Ok(())
            }
        }
    } else {
        quote!()
    };
    let doc_from_coo = format!(
        " Builds the storage from real `f32` entries `(dimension coordinates, value)` in any \
         order: assembled as `{name}::<f32>::from_coo` assembles them (duplicates summed in \
         `f32` when the last level is unique), then every stored position quantized by \
         [`{name}::<f32>::quantize`] (StableHLO's `uniform_quantize`: `x / scale + \
         zero_point` clamped to `[STORAGE_MIN, STORAGE_MAX]`, rounded half to even; NaN gives \
         0). A position no entry reaches holds the zero point (a real 0)."
    );
    quote! {
        impl<V> #name<V> {
            /// The smallest stored integer of the quantized element type (its storage range,
            /// `i8<-100:100>`, or the storage type's minimum).
            pub const STORAGE_MIN: i64 = #min;
            /// The largest stored integer of the quantized element type.
            pub const STORAGE_MAX: i64 = #max;
            /// The quantized dimension of a per-axis type (`!quant.uniform<i8:f32:1, {...}>`
            /// gives `Some(1)`); `None` per tensor.
            pub const QUANTIZED_AXIS: Option<usize> = #axis_const;
            /// The `(scale, zero_point)` pairs: one per tensor, or one per coordinate of the
            /// quantized dimension; scales rounded to `f32` (the expressed type), as StableHLO
            /// rounds them. `real = scale * (stored - zero_point)`.
            pub const QUANT_PARAMS: [(f32, i64); #n] = [#(#pairs),*];

            /// The `(scale, zero_point)` of an element whose dimension coordinate on the
            /// quantized axis is `k` (ignored per tensor). Never panics: a `k` past the pairs
            /// takes the last pair.
            #[inline]
            pub fn quant_pair(k: usize) -> (f32, i64) {
                let _ = k;
                #pair_body
            }

            /// StableHLO's `dequantize` of stored integer `q` of an element whose dimension
            /// coordinate on the quantized axis is `k`: `f32::from(q - zero_point) * scale`, the
            /// subtraction in integers (`sparse_runtime::quant::dequantize_value`).
            #[inline]
            pub fn dequantize_value(q: i64, k: usize) -> f32 {
                let (scale, zp) = Self::quant_pair(k);
                #rt::quant::dequantize_value(q, scale, zp)
            }

            /// StableHLO's `quantize` of real `x` for an element whose dimension coordinate on
            /// the quantized axis is `k`: `round_nearest_even(clamp(STORAGE_MIN, x / scale +
            /// zero_point, STORAGE_MAX))` in `f32`; `±inf` clamp, NaN gives 0
            /// (`sparse_runtime::quant::quantize_value`).
            #[inline]
            pub fn quantize_value(x: f32, k: usize) -> i64 {
                let (scale, zp) = Self::quant_pair(k);
                #rt::quant::quantize_value(x, scale, zp, #min, #max)
            }

            /// Per stored position, the index of its pair (empty per tensor).
            #axis_coords

            /// `shape` against the per-axis pair count.
            fn check_quant_shape(shape: &[usize; #dim_rank]) -> Result<(), StorageError> {
                let _ = shape;
                #per_axis_shape
                Ok(())
            }
        }

        impl #name<f32> {
            /// The stored struct of these real values: each stored value quantized by
            /// [`Self::quantize_value`] with the pair of its dimension coordinate (a position
            /// no entry reaches takes the first pair); the arrays are the same.
            ///
            /// Errors: `StorageError::ShapeMismatch` when a per-axis type's pair count differs
            /// from the quantized dimension's size.
            pub fn quantize(&self) -> Result<#name<#s>, StorageError> {
                Self::check_quant_shape(&self.dim_shape)?;
                let k = self.quant_axis_coords();
                let values = self
                    .values
                    .iter()
                    .enumerate()
                    .map(|(p, &x)| {
                        let q = Self::quantize_value(x, k.get(p).copied().unwrap_or(0));
                        <#s as #rt::quant::StorageInt>::from_i64(q)
                    })
                    .collect();
                Ok(#name {
                    dim_shape: self.dim_shape,
                    lvl_sizes: self.lvl_sizes,
                    #( #field_names: ::core::clone::Clone::clone(&self.#field_names), )*
                    values,
                    #batch_copy
                })
            }
        }

        impl #name<#s> {
            #[doc = #doc_from_coo]
            ///
            /// Errors: as `from_coo` (shape, coordinates, widths), and
            /// `StorageError::ShapeMismatch` when a per-axis type's pair count differs from the
            /// quantized dimension's size.
            pub fn from_coo_real(
                shape: [usize; #dim_rank],
                entries: impl IntoIterator<Item = ([usize; #dim_rank], f32)>,
            ) -> Result<Self, StorageError> {
                Self::check_quant_shape(&shape)?;
                #name::<f32>::from_coo(shape, entries)?.quantize()
            }

            /// Builds the storage from a dense row-major array of real `f32` values (last
            /// dimension fastest): real zeros are not stored (they read back as real 0), the
            /// others quantized as [`Self::from_coo_real`] quantizes them.
            ///
            /// Errors: `StorageError::LengthMismatch` if `data.len()` is not the product of
            /// `shape`; otherwise as [`Self::from_coo_real`].
            pub fn from_dense_real(shape: [usize; #dim_rank], data: &[f32]) -> Result<Self, StorageError> {
                Self::check_quant_shape(&shape)?;
                #name::<f32>::from_dense(shape, data)?.quantize()
            }

            /// The real values: the same arrays, each stored integer dequantized by
            /// [`Self::dequantize_value`] with the pair of its dimension coordinate.
            pub fn dequantized(&self) -> #name<f32> {
                let k = self.quant_axis_coords();
                let values = self
                    .values
                    .iter()
                    .enumerate()
                    .map(|(p, &q)| {
                        let q = <#s as #rt::quant::StorageInt>::to_i64(q);
                        Self::dequantize_value(q, k.get(p).copied().unwrap_or(0))
                    })
                    .collect();
                #name {
                    dim_shape: self.dim_shape,
                    lvl_sizes: self.lvl_sizes,
                    #( #field_names: ::core::clone::Clone::clone(&self.#field_names), )*
                    values,
                    #batch_copy
                }
            }

            /// StableHLO's requantization into the quantized format `T` (any format, any
            /// quantized type of the same rank): `quantize(dequantize(q))` element by element
            /// (`sparse_runtime::quant::requantize`). `convert` instead copies the integers
            /// as they are (and, as for any integer format, drops stored integer zeros).
            ///
            /// Errors: as `convert` between the formats over `f32`, and `ShapeMismatch` for a
            /// per-axis pair count of `T` other than its quantized dimension's size.
            pub fn requantize<T>(&self) -> Result<T, StorageError>
            where
                T: #rt::quant::QuantizedFormat,
                T::Real: #rt::storage::FromCoo<f32>,
            {
                #rt::quant::requantize(self)
            }

            #int_dot

            /// The dense row-major real array (last dimension fastest): every stored entry
            /// dequantized, duplicates summed in `f32`, a real 0 where nothing is stored.
            ///
            /// Errors: `StorageError::ShapeOverflow` when the number of elements overflows
            /// `usize`.
            pub fn to_dense_real(&self) -> Result<::std::vec::Vec<f32>, StorageError> {
                self.dequantized().to_dense()
            }

            /// The quantization as the runtime's [`Quantization`](sparse_runtime::quant::Quantization)
            /// over this tensor's shape (for `quantize`/`dequantize` of whole arrays).
            pub fn quantization(&self) -> #rt::quant::Quantization<f32> {
                #rt::quant::Quantization {
                    shape: self.dim_shape.to_vec(),
                    storage_min: #min,
                    storage_max: #max,
                    axis: Self::QUANTIZED_AXIS,
                    params: Self::QUANT_PARAMS.to_vec(),
                }
            }

            /// Checks that every stored integer lies in `[STORAGE_MIN, STORAGE_MAX]` (and a
            /// per-axis type's pair count against the shape); the integer constructors
            /// (`from_coo`, `from_dense`, `from_raw_parts`, `convert`) call it.
            ///
            /// Errors: `StorageError::StorageRange` naming the first entry in storage order
            /// (its dimension coordinates) whose integer lies outside;
            /// `StorageError::ShapeMismatch` for a per-axis pair count.
            pub fn check_storage_range(&self) -> Result<(), StorageError> {
                Self::check_quant_shape(&self.dim_shape)?;
                let mut bad: Option<([usize; #dim_rank], i64)> = None;
                self.for_each(|c, &q| {
                    let q = <#s as #rt::quant::StorageInt>::to_i64(q);
                    if bad.is_none() && !(#min..=#max).contains(&q) {
                        bad = Some((c, q));
                    }
                });
                match bad {
                    Some((c, value)) => Err(StorageError::StorageRange {
                        coords: c.to_vec(),
                        value,
                        min: #min,
                        max: #max,
                    }),
                    None => Ok(()),
                }
            }
        }
    }
}

/// The `QuantizedFormat` impl of the stored struct.
pub(super) fn emit_trait(cx: &Ctx) -> TokenStream {
    let Some(q) = &cx.decl.quant else {
        return TokenStream::new();
    };
    let (name, rt) = (&cx.name, &cx.rt);
    let s = q.storage_type();
    quote! {
        impl #rt::quant::QuantizedFormat for #name<#s> {
            type Real = #name<f32>;
            fn quantize_real(real: &#name<f32>) -> Result<Self, StorageError> {
                real.quantize()
            }
            fn dequantize_real(&self) -> #name<f32> {
                self.dequantized()
            }
        }
    }
}

/// The check an integer constructor of a quantized declaration runs on the struct `s` it
/// built, when `V` is the storage type (nothing otherwise).
pub(super) fn check(cx: &Ctx, s: TokenStream) -> TokenStream {
    let Some(q) = &cx.decl.quant else {
        return TokenStream::new();
    };
    let name = &cx.name;
    let ty = q.storage_type();
    quote! {
        if let Some(q) = (&#s as &dyn ::core::any::Any).downcast_ref::<#name<#ty>>() {
            q.check_storage_range()?;
        }
    }
}
