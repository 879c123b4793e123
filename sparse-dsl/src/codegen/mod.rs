//! The code generator: one [`Declaration`] (a name and an [`Encoding`]) in, the Rust items of a
//! monomorphised storage struct out, as a `proc_macro2::TokenStream`.
//!
//! The generated struct holds exactly the arrays the format needs (`pos_{l}` for each level with
//! positions, `crd_{l}` for each level owning a coordinate buffer, `values`) with the element
//! types the widths ask for, and gets constructors (`from_coo`, `from_coo_tensor`, `from_dense`),
//! `to_dense`, iteration, lookup, `spmv`, `spmv_par`, `spmv_transpose`, `spmm`, `validate`,
//! `memory_bytes` and MLIR's
//! `sparse_tensor.print` as `Display`.
//!
//! Each level format contributes its pieces through [`level::LevelGen`] (one file per format:
//! [`dense`], [`compressed`], [`loose_compressed`], [`singleton`], [`n_out_of_m`]). This module
//! reads a declaration into a `Ctx` (names, ranks, widths, level contexts) and asks one module
//! per concern for its items: `storage` (the struct, `Parts`, accessors, `SparseStorage`),
//! `assembly` (the builder, `from_coo`, `from_dense`, raw parts), `access` (iteration, `get`,
//! `to_dense`, `to_coo`), `batch_slice` (slices and batch bookkeeping), `kernels` (the built-in
//! kernels, compiled by the sparsifier) and `display` (printing); `encoding_data` emits
//! `encoding()`, `sparsecore` the `SPARSECORE` constant of a `sparsecore(...)` clause.

mod access;
mod assembly;
mod batch_slice;
mod blocks;
pub mod compressed;
pub mod dense;
mod display;
mod encoding_data;
mod kernels;
pub mod level;
pub mod loose_compressed;
pub mod n_out_of_m;
pub mod quant;
pub mod singleton;
mod sparsecore;
mod storage;
pub mod transpose;

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::ir::{AffineExpr, Encoding, VerifiedEncoding};
use crate::parse::Declared;
use level::{level_gen, CrdLoc, LevelCtx, LevelGen};
use sparse_ir::level::PositionsArray;

/// One `pub Name = <encoding>;` declaration of `sparse_format!`.
#[derive(Clone, Debug)]
pub struct Declaration {
    /// Outer attributes to put on the struct (doc comments, `#[derive]`s are added anyway).
    pub attrs: Vec<TokenStream>,
    /// Visibility (`pub`, `pub(crate)`, or empty).
    pub vis: TokenStream,
    /// The struct name.
    pub name: Ident,
    /// The verified encoding.
    pub encoding: VerifiedEncoding,
    /// Static dimension sizes when the declaration is a tensor type (`tensor<20x?xf32, ...>`
    /// gives `[Some(20), None]`); `None` for a bare encoding. Constructors reject other sizes
    /// for the static dimensions.
    pub static_shape: Option<Vec<Option<u64>>>,
    /// The default value type `V` (from a tensor type's element type); `f64` when `None`.
    pub value_type: Option<TokenStream>,
    /// The checked `sparsecore(...)` clause, emitted as `Name::SPARSECORE` (`sparsecore.rs`).
    pub sparsecore: Option<sparse_ir::sparsecore::SparseCoreConfig>,
    /// A private struct a kernel generates for an operand it converts: only what the kernel
    /// reads (the struct, its basics and `from_coo` assembly, the `FromCoo` impl), no
    /// accessors, built-in kernels or `Display`.
    pub converted: bool,
    /// The uniform quantized element type of a tensor type (`!quant.uniform<i8:f32,
    /// 0.5:10>`): the struct stores its integers and gets the quantization (`quant.rs`).
    pub quant: Option<quant::QuantInfo>,
}

impl Declaration {
    /// A declaration of a bare encoding (no static shape, `V = f64`).
    pub fn new(vis: TokenStream, name: Ident, encoding: VerifiedEncoding) -> Self {
        Declaration {
            attrs: Vec::new(),
            vis,
            name,
            encoding,
            static_shape: None,
            value_type: None,
            sparsecore: None,
            converted: false,
            quant: None,
        }
    }

    /// A declaration of what the parser read: a bare encoding, or a tensor type (which fixes the
    /// static shape and the default value type).
    ///
    /// A uniform quantized element type stores its integers (`V` defaults to `i8` for
    /// `!quant.uniform<i8:f32, ...>`) and records the quantization ([`quant::QuantInfo`]).
    ///
    /// Errors: [`CodegenError`] for a tensor type without an encoding or with an element type that
    /// has no Rust value type yet (complex); a quantized type [`quant::QuantInfo::new`] refuses,
    /// or with an `explicitVal`.
    pub fn from_declared(
        vis: TokenStream,
        name: Ident,
        declared: Declared,
    ) -> Result<Self, CodegenError> {
        match declared {
            Declared::Encoding(e) => Ok(Declaration::new(vis, name, e)),
            Declared::Tensor(t) => {
                let enc = t.encoding.clone().ok_or_else(|| {
                    CodegenError("the tensor type has no #sparse_tensor.encoding".into())
                })?;
                if let crate::types::ElementType::Quant(q) = &t.element {
                    let info = quant::QuantInfo::new(q, &t.shape)?;
                    if enc.explicit_val.is_some() {
                        return Err(CodegenError(
                            "a quantized element type with an explicitVal is not stored yet".into(),
                        ));
                    }
                    let ty = info.storage_type();
                    let mut decl = Declaration::new(vis, name, enc);
                    decl.static_shape = Some(t.shape.clone());
                    decl.value_type = Some(ty);
                    decl.quant = Some(info);
                    return Ok(decl);
                }
                let ty = t
                    .element
                    .rust_type()
                    .and_then(|s| syn::parse_str::<syn::Type>(s).ok())
                    .ok_or_else(|| {
                        CodegenError(format!("element type {} is not stored yet", t.element))
                    })?;
                let mut decl = Declaration::new(vis, name, enc);
                decl.static_shape = Some(t.shape.clone());
                decl.value_type = Some(quote!(#ty));
                Ok(decl)
            }
        }
    }
}

/// Why an encoding cannot be generated (yet): a message for the declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodegenError(pub String);

impl std::fmt::Display for CodegenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The element type for a `posWidth`/`crdWidth` value (0 -> `usize`).
pub fn width_type(width: u32) -> Result<TokenStream, CodegenError> {
    Ok(match width {
        0 => quote!(usize),
        8 => quote!(u8),
        16 => quote!(u16),
        32 => quote!(u32),
        64 => quote!(u64),
        // packed sub-byte coordinates (n:m levels): the nominal element type
        1 | 2 | 4 => quote!(u8),
        w => {
            return Err(CodegenError(format!(
                "bit width {w} is not stored by the code generator yet"
            )))
        }
    })
}

/// `usize` code for `dim_to_lvl` result `e` over the coordinate array `c` (or, with
/// `sizes = true`, the level size over the shape array `shape`).
fn dim_to_lvl_expr(e: &AffineExpr, sizes: bool) -> Result<TokenStream, CodegenError> {
    if let Some((_, k)) = e.as_counting() {
        // the counting level: extent K; its coordinate is assigned during assembly (0 here)
        return Ok(if sizes { quote!(#k) } else { quote!(0usize) });
    }
    let unsupported = || {
        CodegenError(
            "level expression is not a dimension or a floordiv/mod block split; not generated yet"
                .to_string(),
        )
    };
    let block = |b: &AffineExpr| {
        b.as_constant()
            .and_then(|b| usize::try_from(b).ok())
            .filter(|&b| b > 0)
            .ok_or_else(unsupported)
    };
    Ok(match e {
        AffineExpr::Var(d) => {
            if sizes {
                quote!(shape[#d])
            } else {
                quote!(c[#d])
            }
        }
        AffineExpr::FloorDiv(a, b) => {
            let (d, b) = (a.as_var().ok_or_else(unsupported)?, block(b)?);
            if sizes {
                quote!(shape[#d].div_ceil(#b))
            } else {
                quote!(c[#d] / #b)
            }
        }
        AffineExpr::Mod(a, b) => {
            let (d, b) = (a.as_var().ok_or_else(unsupported)?, block(b)?);
            if sizes {
                quote!(#b)
            } else {
                quote!(c[#d] % #b)
            }
        }
        _ => return Err(unsupported()),
    })
}

/// `usize` code for a `lvl_to_dim` result over the level coordinate array `lc`.
fn lvl_to_dim_expr(e: &AffineExpr) -> Result<TokenStream, CodegenError> {
    Ok(match e {
        AffineExpr::Var(l) => quote!(lc[#l]),
        AffineExpr::Constant(c) if *c >= 0 => {
            let c = *c as usize;
            quote!(#c)
        }
        AffineExpr::Add(a, b) => {
            let (a, b) = (lvl_to_dim_expr(a)?, lvl_to_dim_expr(b)?);
            quote!(#a + #b)
        }
        AffineExpr::Mul(a, b) => {
            // a sum under a product keeps its parentheses
            let factor = |x: &AffineExpr| -> Result<TokenStream, CodegenError> {
                let t = lvl_to_dim_expr(x)?;
                Ok(if matches!(x, AffineExpr::Add(..)) {
                    quote!((#t))
                } else {
                    t
                })
            };
            let (a, b) = (factor(a)?, factor(b)?);
            quote!(#a * #b)
        }
        _ => {
            return Err(CodegenError(
                "lvl_to_dim expression with negative or divided terms; not generated yet".into(),
            ))
        }
    })
}

/// The level types of `e` as expressions over the IR module `ir` the generated code imports.
fn level_type_tokens(e: &Encoding) -> Vec<TokenStream> {
    e.lvl_types
        .iter()
        .map(|lt| encoding_data::level_type(lt, &quote!(ir::)))
        .collect()
}

/// What every emitting module needs to know about one declaration: its names, ranks, widths and
/// level contexts, and the pieces of code several modules share.
pub(crate) struct Ctx<'a> {
    /// The declaration.
    decl: &'a Declaration,
    /// Path of the runtime crate in the generated code.
    rt: TokenStream,
    /// The encoding without its dimension slices (a sliced encoding stores its parent's arrays).
    e: Encoding,
    /// The declared dimension slices, if any.
    declared_slices: Option<Vec<crate::ir::DimSlice>>,
    /// The struct name.
    name: Ident,
    /// The struct's visibility.
    vis: TokenStream,
    /// The struct's outer attributes.
    attrs: Vec<TokenStream>,
    /// Dimension rank.
    dim_rank: usize,
    /// Level rank.
    lvl_rank: usize,
    /// ELL counting: `(level, (counted dimension, K))`.
    counting: Option<(usize, (usize, usize))>,
    /// Position element type.
    pos_ty: TokenStream,
    /// Coordinate element type.
    crd_ty: TokenStream,
    /// The format has leading batch levels.
    batched: bool,
    /// One generator per level.
    gens: Vec<&'static dyn LevelGen>,
    /// One context per level, for code reading the struct.
    ctxs: Vec<LevelCtx>,
    /// The static shape of a tensor type, as `Option<usize>` expressions.
    static_shape: Option<Vec<TokenStream>>,
    /// The statement checking a `shape` in scope against the static shape and the blocks
    /// (`ShapeMismatch`, `BlockShape`); empty when there is nothing to check.
    shape_check: TokenStream,
    /// The default value type.
    value_type: TokenStream,
    /// The array fields, their types and their doc lines.
    field_names: Vec<Ident>,
    field_types: Vec<TokenStream>,
    field_docs: Vec<String>,
    /// `counts` and `batches` initialised to zero (batched formats), else nothing.
    batch_init_zero: TokenStream,
    /// Statements filling `s.counts` and `s.batches` of a struct `s` (batched formats).
    set_counts: TokenStream,
    /// The `Parts` struct's name.
    parts: Ident,
    /// `c0, c1, ...`: level coordinate names.
    cs: Vec<Ident>,
    /// `p{lvl_rank - 1}`.
    p_last: Ident,
}

impl<'a> Ctx<'a> {
    /// Reads `decl`.
    ///
    /// Errors: [`CodegenError`] as [`generate`].
    fn new(decl: &'a Declaration, rt: &TokenStream) -> Result<Self, CodegenError> {
        let rt = rt.clone();
        // A sliced encoding stores its parent's arrays; the slices become a view (`view`).
        let declared_slices = decl.encoding.dim_slices.clone();
        let mut parent_encoding = decl.encoding.clone().into_inner();
        parent_encoding.dim_slices = None;
        let e = &parent_encoding;
        let rt = &rt;
        let name = &decl.name;
        let vis = &decl.vis;
        let attrs = &decl.attrs;
        let dim_rank = e.dim_rank();
        let lvl_rank = e.lvl_rank();
        // ELL counting: one level `c * K * i` (symbol 0 counting dimension `i` into K slices).
        let counting: Vec<(usize, (usize, usize))> = e
            .dim_to_lvl
            .results
            .iter()
            .enumerate()
            .filter_map(|(l, r)| r.as_counting().map(|c| (l, c)))
            .collect();
        if e.dim_to_lvl.num_symbols > 1
            || counting.len() > 1
            || (e.dim_to_lvl.num_symbols == 1 && counting.len() != 1)
        {
            return Err(CodegenError(
                "ELL counting stores one counting symbol on one level `c * K * i`".into(),
            ));
        }
        let counting = counting.first().copied();
        let pos_ty = width_type(e.pos_width)?;
        let crd_ty = width_type(e.crd_width)?;

        let batched = e.lvl_types.first().is_some_and(|t| t.capabilities().batch);
        let (gens, ctxs) = level_contexts(e, rt, &quote!(self), false)?;
        let static_shape = match &decl.static_shape {
            None => None,
            Some(dims) => {
                if dims.len() != dim_rank {
                    return Err(CodegenError(format!(
                        "tensor shape has {} dimensions, the encoding has {}",
                        dims.len(),
                        dim_rank
                    )));
                }
                Some(
                    dims.iter()
                        .map(|d| match d {
                            None => Ok(quote!(None)),
                            Some(n) => {
                                usize::try_from(*n).map(|n| quote!(Some(#n))).map_err(|_| {
                                    CodegenError(format!("dimension size {n} does not fit usize"))
                                })
                            }
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                )
            }
        };
        let value_type = decl.value_type.clone().unwrap_or_else(|| quote!(f64));
        let blocks: Vec<TokenStream> = e
            .dim_to_lvl
            .results
            .iter()
            .filter(|r| matches!(r, AffineExpr::FloorDiv(..)))
            .filter_map(AffineExpr::as_block)
            .map(|(dim, block)| quote!((#dim, #block)))
            .collect();
        let shape_check = if static_shape.is_none() && blocks.is_empty() {
            quote!()
        } else {
            let fixed = if static_shape.is_some() {
                quote!(Self::STATIC_SHAPE)
            } else {
                quote!(None)
            };
            quote!(#rt::generated::check_shape(&shape, #fixed, &[#(#blocks),*])?;)
        };

        // Struct fields.
        let mut field_names = Vec::new();
        let mut field_types = Vec::new();
        let mut field_docs = Vec::new();
        for (g, cx) in gens.iter().zip(&ctxs) {
            for (f, ty) in g.fields(cx) {
                let doc = if cx.pos_field.as_ref() == Some(&f) {
                    let what = if cx.lt.capabilities().positions == PositionsArray::LoHiPairs {
                        "(lo, hi) position pairs"
                    } else {
                        "positions"
                    };
                    format!(
                        " The {what} of level {} ({}; batch-local below batch levels).",
                        cx.l,
                        width_name(e.pos_width)
                    )
                } else {
                    match cx.crd.as_ref() {
                        Some(loc) if loc.stride > 1 => format!(
                            " The coordinates of levels {}..={}, interleaved per stored entry ({}).",
                            cx.l,
                            cx.l + loc.stride - 1,
                            width_name(e.crd_width)
                        ),
                        _ => format!(
                            " The coordinates of level {} ({}).",
                            cx.l,
                            width_name(e.crd_width)
                        ),
                    }
                };
                field_names.push(f);
                field_types.push(ty);
                field_docs.push(doc);
            }
        }
        let batch_count = {
            let sizes: Vec<usize> = (0..e
                .lvl_types
                .iter()
                .take_while(|t| t.capabilities().batch)
                .count())
                .collect();
            quote!(#rt::dynamic::checked_product(&[#( lvl_sizes[#sizes] ),*]))
        };
        let batch_init_zero = if batched {
            quote!(counts: [0; #lvl_rank], batches: 0,)
        } else {
            quote!()
        };
        let set_counts = if batched {
            quote! {
                // unchecked arrays may overflow a count (then `validate` reports it): no panic here
                if let Ok(__counts) = #rt::storage::level_counts(&s) {
                    s.counts.copy_from_slice(&__counts);
                }
                let lvl_sizes = s.lvl_sizes;
                s.batches = #batch_count.unwrap_or(0);
            }
        } else {
            quote!()
        };
        let parts = format_ident!("{}Parts", name);
        // Nested loops over all stored entries.
        let cs: Vec<Ident> = (0..lvl_rank).map(|l| format_ident!("c{}", l)).collect();
        let p_last = format_ident!("p{}", lvl_rank - 1);
        Ok(Ctx {
            decl,
            rt: rt.clone(),
            e: parent_encoding.clone(),
            declared_slices,
            name: name.clone(),
            vis: vis.clone(),
            attrs: attrs.clone(),
            dim_rank,
            lvl_rank,
            counting,
            pos_ty,
            crd_ty,
            batched,
            gens,
            ctxs,
            static_shape,
            shape_check,
            value_type,
            field_names,
            field_types,
            field_docs,
            batch_init_zero,
            set_counts,
            parts,
            cs,
            p_last,
        })
    }

    /// For a format with `explicitVal` (no values array): the constant as a `V`, the
    /// runtime's conversion of the encoding's scalar (`FromScalar::from_scalar`); `None` for a
    /// format that stores its values.
    fn explicit(&self) -> Option<TokenStream> {
        let v = self.e.explicit_val.as_ref()?;
        let rt = &self.rt;
        let scalar = scalar_value(&v.value, rt);
        Some(quote!(<V as #rt::value::FromScalar>::from_scalar(&#scalar)))
    }

    /// Nested loops over all stored entries (`locate = false`) or over the entries at the level
    /// coordinates `c0, c1, ...` (`locate = true`), innermost `inner`.
    fn nest(&self, inner: TokenStream, locate: bool) -> TokenStream {
        let mut body = inner;
        for (g, cx) in self.gens.iter().zip(&self.ctxs).rev() {
            body = if locate {
                g.emit_locate(cx, body)
            } else {
                g.emit_loop(cx, body)
            };
        }
        body
    }
}

/// The level generators and contexts of encoding `e` (without slices): arrays read from
/// `base` (`self` in the struct's methods, the operand's name in a kernel); `unchecked` makes
/// coordinate reads `get_unchecked` (kernels, whose operands were validated when built).
///
/// Errors: [`CodegenError`] for a level format without a generator, or widths without a Rust
/// type.
pub(crate) fn level_contexts(
    e: &crate::ir::Encoding,
    rt: &TokenStream,
    base: &TokenStream,
    unchecked: bool,
) -> Result<(Vec<&'static dyn LevelGen>, Vec<LevelCtx>), CodegenError> {
    let lvl_rank = e.lvl_rank();
    let pos_ty = width_type(e.pos_width)?;
    let crd_ty = width_type(e.crd_width)?;
    let batched = e.lvl_types.first().is_some_and(|t| t.capabilities().batch);
    let mut gens = Vec::with_capacity(lvl_rank);
    let mut ctxs = Vec::with_capacity(lvl_rank);
    for (l, lt) in e.lvl_types.iter().enumerate() {
        let g = level_gen(lt.format).ok_or_else(|| {
            CodegenError(format!(
                "level {l}: level format {} is not generated yet",
                lt.format.mlir_name()
            ))
        })?;
        let crd = e.crd_location(l).map(|(owner, stride, offset)| CrdLoc {
            field: format_ident!("crd_{}", owner),
            stride,
            offset,
            owner: owner == l,
        });
        ctxs.push(LevelCtx {
            l,
            lvl_rank,
            lt: *lt,
            // a block level (`d mod b`) and the ELL counting level have constant sizes
            size: match &e.dim_to_lvl.results[l] {
                AffineExpr::Mod(_, b) if b.as_constant().is_some_and(|b| b > 0) => {
                    let b = proc_macro2::Literal::usize_unsuffixed(
                        b.as_constant().unwrap_or(1) as usize
                    );
                    quote!(#b)
                }
                r => match r.as_counting() {
                    Some((_, k)) => {
                        let k = proc_macro2::Literal::usize_unsuffixed(k);
                        quote!(#k)
                    }
                    None => {
                        let l = proc_macro2::Literal::usize_unsuffixed(l);
                        quote!(#base.lvl_sizes[#l])
                    }
                },
            },
            pos_field: lt.has_positions().then(|| format_ident!("pos_{}", l)),
            crd,
            pos_ty: pos_ty.clone(),
            crd_ty: crd_ty.clone(),
            crd_width: e.crd_width,
            rt: rt.clone(),
            batched,
            base: base.clone(),
            unchecked,
        });
        gens.push(g);
    }
    Ok((gens, ctxs))
}

/// Generates the items for one declaration. `rt` is the path of the runtime crate as the
/// generated code should name it (`::sparse::runtime` for users of the facade).
///
/// Errors: [`CodegenError`] for encodings the generator does not handle yet (level expressions
/// other than `d`, `d floordiv b`, `d mod b` and one ELL counting level, widths without a Rust
/// type), and for a struct name (or its `Parts` name) that one of the names the generated
/// `const _` block imports would shadow (`Result`, `Option`, `Some`, `StorageError`, ...: see
/// `IMPORTED`).
pub fn generate(decl: &Declaration, rt: &TokenStream) -> Result<TokenStream, CodegenError> {
    let parts = format!("{}Parts", decl.name);
    if let Some(taken) = IMPORTED.iter().find(|n| decl.name == n || parts == **n) {
        return Err(CodegenError(format!(
            "the format name `{}` would be shadowed by `{taken}`, which the generated code imports; \
             choose another name",
            decl.name
        )));
    }
    // The structs name the runtime by its full path; everything else lives in a `const _` block
    // that imports what it uses (as serde_derive's `dummy.rs` does).
    let structs = storage::emit_structs(&Ctx::new(decl, rt)?)?;
    let cx = Ctx::new(decl, &quote!(rt))?;
    let storage = storage::emit(&cx)?;
    let assembly = assembly::emit(&cx)?;
    let (access, batch_slice, spmv, display, blocks) = if decl.converted {
        Default::default()
    } else {
        (
            access::emit(&cx),
            batch_slice::emit(&cx),
            kernels::emit(&cx)?,
            display::emit(&cx),
            blocks::emit(&cx),
        )
    };
    let sparsecore = sparsecore::emit(&cx);
    let quant = quant::emit(&cx);
    let quant_trait = quant::emit_trait(&cx);
    let body = quote! {
        #quant
        #quant_trait
        #storage
        #assembly
        #access
        #blocks
        #batch_slice
        #spmv
        #display
        #sparsecore
    };
    // import exactly the names the body uses (a `build.rs` user compiles it with the lints on)
    let used = idents(&body);
    let pick = |names: &[(&str, TokenStream)]| -> Vec<TokenStream> {
        names
            .iter()
            .filter(|(n, _)| used.contains(*n))
            .map(|(_, t)| t.clone())
            .collect()
    };
    let mut imports = Vec::new();
    let rt_names = pick(&[
        ("ir", quote!(sparse_ir::ir)),
        // `.index()` on positions and coordinates
        ("index", quote!(Index as _)),
        ("StorageError", quote!(StorageError)),
    ]);
    imports.push(quote!(use #rt::{self as rt, #(#rt_names),*};));
    for (path, names) in [
        (
            quote!(::core::iter),
            pick(&[
                ("IntoIterator", quote!(IntoIterator)),
                ("Iterator", quote!(Iterator)),
            ]),
        ),
        (
            quote!(::core::option::Option),
            pick(&[
                ("Option", quote!(self)),
                ("None", quote!(None)),
                ("Some", quote!(Some)),
            ]),
        ),
        (
            quote!(::core::result::Result),
            pick(&[
                ("Result", quote!(self)),
                ("Err", quote!(Err)),
                ("Ok", quote!(Ok)),
            ]),
        ),
        (
            quote!(::std),
            pick(&[("Box", quote!(boxed::Box)), ("Vec", quote!(vec::Vec))]),
        ),
    ] {
        if !names.is_empty() {
            imports.push(quote!(use #path::{#(#names),*};));
        }
    }
    Ok(unsuffix(quote! {
        #structs
        const _: () = {
            #(#imports)*
            #body
        };
    }))
}

/// The constant `v` as a `ScalarValue` expression (`rt::sparse_ir::types::ScalarValue::Float(
/// bits)`): what generated code converts to its value type with `FromScalar`.
pub(crate) fn scalar_value(v: &crate::types::ScalarValue, rt: &TokenStream) -> TokenStream {
    use crate::types::ScalarValue;
    let value = match *v {
        ScalarValue::Int(i) => {
            let i = proc_macro2::Literal::i128_unsuffixed(i);
            quote!(Int(#i))
        }
        ScalarValue::Float(bits) => quote!(Float(#bits)),
        ScalarValue::Complex(re, im) => quote!(Complex(#re, #im)),
    };
    quote!(#rt::sparse_ir::types::ScalarValue::#value)
}

/// Every identifier in `tokens`.
fn idents(tokens: &TokenStream) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    fn walk(t: &TokenStream, out: &mut std::collections::HashSet<String>) {
        for tt in t.clone() {
            match tt {
                proc_macro2::TokenTree::Ident(i) => {
                    out.insert(i.to_string());
                }
                proc_macro2::TokenTree::Group(g) => walk(&g.stream(), out),
                _ => {}
            }
        }
    }
    walk(tokens, &mut out);
    out
}

/// The names the `const _` block of the generated code imports: a format (or its `Parts`) of
/// one of these names would be shadowed there, so the generator refuses it.
const IMPORTED: [&str; 13] = [
    "IntoIterator",
    "Iterator",
    "Option",
    "None",
    "Some",
    "Result",
    "Err",
    "Ok",
    "Box",
    "Vec",
    "StorageError",
    "rt",
    "ir",
];

/// `2usize` -> `2` everywhere in `tokens`: the `usize` literals the generator splices in
/// (ranks, levels, block sizes) read as a person writes them; their types are fixed by where
/// they stand (array lengths, indices, `usize` fields and parameters).
fn unsuffix(tokens: TokenStream) -> TokenStream {
    use proc_macro2::{Group, Literal, TokenTree};
    tokens
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Group(g) => {
                let mut out = Group::new(g.delimiter(), unsuffix(g.stream()));
                out.set_span(g.span());
                TokenTree::Group(out)
            }
            TokenTree::Literal(lit) => {
                let text = lit.to_string();
                match text.strip_suffix("usize").map(str::parse::<usize>) {
                    Some(Ok(n)) => {
                        let mut out = Literal::usize_unsuffixed(n);
                        out.set_span(lit.span());
                        TokenTree::Literal(out)
                    }
                    _ => TokenTree::Literal(lit),
                }
            }
            other => other,
        })
        .collect()
}

fn width_name(w: u32) -> String {
    match w {
        0 => "usize".into(),
        1 | 2 | 4 => format!("{w}-bit, packed"),
        w => format!("u{w}"),
    }
}

/// The generated code for `decl`, formatted with `prettyplease` (what `sparse expand` prints).
pub fn expand_to_string(decl: &Declaration, rt: &TokenStream) -> Result<String, CodegenError> {
    let tokens = generate(decl, rt)?;
    let file: syn::File = syn::parse2(tokens)
        .map_err(|e| CodegenError(format!("generated code does not parse: {e}")))?;
    Ok(print(&file))
}

/// `file` formatted with `prettyplease`, with every `rt::safety!("...");` marker (the runtime's
/// `safety!`, which expands to nothing) printed as the `// SAFETY: ...` comment it stands for,
/// wrapped at 100 columns: `quote!` drops comments, so the generator states each `unsafe`
/// block's argument in a marker right above it and the printer turns it back into a comment.
pub fn print(file: &syn::File) -> String {
    let code = prettyplease::unparse(file);
    let mut out = String::with_capacity(code.len());
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if !(trimmed.starts_with("rt::safety!(")
            || trimmed.starts_with("::sparse::runtime::safety!("))
        {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        // the marker, possibly over several lines: `rt::safety!(\n "..." \n);`
        let mut marker = trimmed.to_string();
        while !marker.ends_with(");") {
            match lines.next() {
                Some(next) => {
                    marker.push(' ');
                    marker.push_str(next.trim());
                }
                None => break,
            }
        }
        let why = match (marker.find('"'), marker.rfind('"')) {
            (Some(a), Some(b)) if a < b => marker[a + 1..b].replace("\\\"", "\""),
            _ => marker.clone(),
        };
        let indent = &line[..line.len() - trimmed.len()];
        let mut current = format!("{indent}// SAFETY:");
        let mut words_on_line = 0;
        for word in why.split_whitespace() {
            if current.len() + 1 + word.len() > 100 && words_on_line > 0 {
                out.push_str(&current);
                out.push('\n');
                current = format!("{indent}//");
                words_on_line = 0;
            }
            words_on_line += 1;
            current.push(' ');
            current.push_str(word);
        }
        out.push_str(&current);
        out.push('\n');
    }
    out
}
