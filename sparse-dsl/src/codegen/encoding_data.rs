//! The encoding as data: the Rust expression that rebuilds a verified [`Encoding`] value in the
//! generated code, so `Name::encoding()` costs no parsing at run time and a user's binary links
//! no parser.
//!
//! Emits a function body that imports the IR types from the path `ir` (the IR crate as the generated code
//! names it) and spells the value out as struct and enum literals, field for field, as the
//! verifier produced it.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use crate::ir::{AffineExpr, AffineMap, DimSlice, Encoding, LevelProperties, LevelType};
use crate::types::{ElementType, FloatKind, QuantizedType, ScalarValue, Signedness, TypedValue};

/// The statements `use ir::*; Encoding::new(..)` (a function body, `ir` the IR module as the
/// generated code names it) whose value equals `enc`: `Encoding::new` over the storage's
/// `Self::LVL_TYPES` and the two maps (`AffineMap::identity(n)` where a map is the identity),
/// with only the fields that differ from its defaults spelled out.
pub(crate) fn encoding_expr(enc: &Encoding, ir: &TokenStream) -> TokenStream {
    let dim_to_lvl = affine_map(&enc.dim_to_lvl);
    let lvl_to_dim = affine_map(&enc.lvl_to_dim);
    let new = quote!(Encoding::new(Self::LVL_TYPES.to_vec(), #dim_to_lvl, #lvl_to_dim));
    let mut fields = Vec::new();
    if enc.pos_width != 0 {
        let w = Literal::u32_unsuffixed(enc.pos_width);
        fields.push(quote!(pos_width: #w));
    }
    if enc.crd_width != 0 {
        let w = Literal::u32_unsuffixed(enc.crd_width);
        fields.push(quote!(crd_width: #w));
    }
    if let Some(s) = &enc.dim_slices {
        let s = s.iter().map(dim_slice);
        fields.push(quote!(dim_slices: Some(::std::vec![#(#s),*])));
    }
    if let Some(v) = &enc.explicit_val {
        let v = typed_value(v);
        fields.push(quote!(explicit_val: Some(#v)));
    }
    if let Some(v) = &enc.implicit_val {
        let v = typed_value(v);
        fields.push(quote!(implicit_val: Some(#v)));
    }
    let types_import = (enc.explicit_val.is_some() || enc.implicit_val.is_some())
        .then(|| quote!(use #ir::types::*;));
    let value = if fields.is_empty() {
        new
    } else {
        quote!(Encoding { #(#fields,)* ..#new })
    };
    let identity = |m: &AffineMap| *m == AffineMap::identity(m.num_vars);
    let variants =
        (!identity(&enc.dim_to_lvl) || !identity(&enc.lvl_to_dim)).then(|| quote!(AffineExpr::*,));
    quote! {
        use #ir::ir::{#variants *};
        #types_import
        #value
    }
}

fn option<T>(v: Option<&T>, f: impl FnOnce(&T) -> TokenStream) -> TokenStream {
    match v {
        Some(v) => {
            let v = f(v);
            quote!(Some(#v))
        }
        None => quote!(None),
    }
}

/// The expression for one level type, the one spelling of level types in generated code (the
/// encoding's value here and the storage's `LVL_TYPES` constant). `ir` is the path prefix of the
/// IR types: empty where `ir::ir::*` is imported, else `<crate>::sparse_ir::ir::`.
pub(crate) fn level_type(t: &LevelType, ir: &TokenStream) -> TokenStream {
    // the variant as Rust spells it: `Dense`, `NOutOfM { n: 2, m: 4 }` (its `Debug` form, so a
    // new level format needs no line here)
    let format: TokenStream = format!("{:?}", t.format).parse().unwrap_or_else(|_| {
        quote!(::core::compile_error!(
            "a level format whose Debug form is not Rust"
        ))
    });
    let p = t.properties;
    if p == LevelProperties::default() {
        return quote!(#ir LevelType::new(#ir LevelFormat::#format));
    }
    let (nonunique, nonordered, soa) = (p.nonunique, p.nonordered, p.soa);
    quote! {
        #ir LevelType {
            format: #ir LevelFormat::#format,
            properties: #ir LevelProperties {
                nonunique: #nonunique,
                nonordered: #nonordered,
                soa: #soa,
            },
        }
    }
}

fn affine_map(m: &AffineMap) -> TokenStream {
    if *m == AffineMap::identity(m.num_vars) {
        let n = Literal::usize_unsuffixed(m.num_vars);
        return quote!(AffineMap::identity(#n));
    }
    let num_vars = Literal::usize_unsuffixed(m.num_vars);
    let num_symbols = Literal::usize_unsuffixed(m.num_symbols);
    // a product at the top of an element is parenthesised: clippy's `possible_missing_comma`
    // reads `a * b` in an array built by a macro as a missing comma before `*b`
    let results = m.results.iter().map(|r| {
        let t = affine_expr(r);
        if matches!(r, AffineExpr::Mul(..)) {
            quote!((#t))
        } else {
            t
        }
    });
    quote!(AffineMap::new(#num_vars, #num_symbols, [#(#results),*]))
}

/// `e` as Rust over the imported variants (`Var`, `Symbol`, `Constant`) with the IR's operators
/// (`+`, `*`, `%`) and `floor_div` / `ceil_div`, parenthesised so that it parses back to the
/// same tree.
fn affine_expr(e: &AffineExpr) -> TokenStream {
    use AffineExpr as E;
    let paren = |x: &AffineExpr, wrap: bool| {
        let t = affine_expr(x);
        if wrap {
            quote!((#t))
        } else {
            t
        }
    };
    let is_add = |x: &AffineExpr| matches!(x, E::Add(..));
    let is_product = |x: &AffineExpr| matches!(x, E::Add(..) | E::Mul(..) | E::Mod(..));
    match e {
        E::Var(v) => {
            let v = Literal::usize_unsuffixed(*v);
            quote!(Var(#v))
        }
        E::Symbol(s) => {
            let s = Literal::usize_unsuffixed(*s);
            quote!(Symbol(#s))
        }
        E::Constant(c) => {
            let c = Literal::i64_unsuffixed(*c);
            quote!(Constant(#c))
        }
        E::Add(a, b) => {
            let (a, b) = (paren(a, false), paren(b, is_add(b)));
            quote!(#a + #b)
        }
        E::Mul(a, b) => {
            let (a, b) = (paren(a, is_add(a)), paren(b, is_product(b)));
            quote!(#a * #b)
        }
        E::Mod(a, b) => {
            let (a, b) = (paren(a, is_add(a)), paren(b, is_product(b)));
            quote!(#a % #b)
        }
        E::FloorDiv(a, b) => {
            let (a, b) = (paren(a, is_product(a)), affine_expr(b));
            quote!(#a.floor_div(#b))
        }
        E::CeilDiv(a, b) => {
            let (a, b) = (paren(a, is_product(a)), affine_expr(b));
            quote!(#a.ceil_div(#b))
        }
    }
}

fn dim_slice(d: &DimSlice) -> TokenStream {
    let opt = |v: Option<u64>| option(v.as_ref(), |v| quote!(#v));
    let (offset, size, stride) = (opt(d.offset), opt(d.size), opt(d.stride));
    quote! {
        DimSlice { offset: #offset, size: #size, stride: #stride }
    }
}

fn typed_value(v: &TypedValue) -> TokenStream {
    let value = match v.value {
        ScalarValue::Int(i) => {
            let i = Literal::i128_unsuffixed(i);
            quote!(Int(#i))
        }
        ScalarValue::Float(bits) => quote!(Float(#bits)),
        ScalarValue::Complex(re, im) => quote!(Complex(#re, #im)),
    };
    let ty = element_type(&v.ty);
    quote! {
        TypedValue { value: ScalarValue::#value, ty: #ty }
    }
}

fn float_kind(k: FloatKind) -> TokenStream {
    let k = match k {
        FloatKind::F16 => quote!(F16),
        FloatKind::BF16 => quote!(BF16),
        FloatKind::F32 => quote!(F32),
        FloatKind::F64 => quote!(F64),
    };
    quote!(FloatKind::#k)
}

fn element_type(t: &ElementType) -> TokenStream {
    match t {
        ElementType::Int { width, signedness } => {
            let s = match signedness {
                Signedness::Signless => quote!(Signless),
                Signedness::Signed => quote!(Signed),
                Signedness::Unsigned => quote!(Unsigned),
            };
            quote! {
                ElementType::Int { width: #width, signedness: Signedness::#s }
            }
        }
        ElementType::Index => quote!(ElementType::Index),
        ElementType::Float(k) => {
            let k = float_kind(*k);
            quote!(ElementType::Float(#k))
        }
        ElementType::Complex(e) => {
            let e = element_type(e);
            quote!(ElementType::Complex(Box::new(#e)))
        }
        ElementType::Quant(q) => {
            let q = quantized_type(q);
            quote!(ElementType::Quant(Box::new(#q)))
        }
    }
}

fn quantized_type(q: &QuantizedType) -> TokenStream {
    let QuantizedType {
        storage_signed,
        storage_width,
        storage_min,
        storage_max,
        expressed,
        axis,
        params,
    } = q;
    let expressed = float_kind(*expressed);
    let axis = option(axis.as_ref(), |a| quote!(#a));
    let params = params.iter().map(|(scale, zero)| quote!((#scale, #zero)));
    quote! {
        QuantizedType {
            storage_signed: #storage_signed,
            storage_width: #storage_width,
            storage_min: #storage_min,
            storage_max: #storage_max,
            expressed: #expressed,
            axis: #axis,
            params: ::std::vec![#(#params),*],
        }
    }
}
