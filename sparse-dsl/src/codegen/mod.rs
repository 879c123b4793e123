//! The code generator: one [`Declaration`] (a name and an [`Encoding`]) in, the Rust items of a
//! monomorphised storage struct out, as a `proc_macro2::TokenStream`.
//!
//! The generated struct holds exactly the arrays the format needs (`pos_{l}` for each level with
//! positions, `crd_{l}` for each level owning a coordinate buffer, `values`) with the element
//! types the widths ask for, and gets constructors (`from_coo`, `from_coo_tensor`, `from_dense`),
//! `to_dense`, iteration, lookup, `spmv`, `validate`, `memory_bytes` and MLIR's
//! `sparse_tensor.print` as `Display`. Each level format contributes its pieces through
//! [`level::LevelGen`] (one file per format: [`dense`], [`compressed`], [`loose_compressed`],
//! [`singleton`]); this module only stacks them.

pub mod compressed;
pub mod dense;
mod encoding_data;
pub mod level;
pub mod loose_compressed;
pub mod n_out_of_m;
pub mod singleton;

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::ir::{AffineExpr, Encoding, LevelFormat};
use crate::parse::Declared;
use level::{level_gen, CrdLoc, LevelCtx};

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
    pub encoding: Encoding,
    /// Static dimension sizes when the declaration is a tensor type (`tensor<20x?xf32, ...>`
    /// gives `[Some(20), None]`); `None` for a bare encoding. Constructors reject other sizes
    /// for the static dimensions.
    pub static_shape: Option<Vec<Option<u64>>>,
    /// The default value type `V` (from a tensor type's element type); `f64` when `None`.
    pub value_type: Option<TokenStream>,
}

impl Declaration {
    /// A declaration of a bare encoding (no static shape, `V = f64`).
    pub fn new(vis: TokenStream, name: Ident, encoding: Encoding) -> Self {
        Declaration {
            attrs: Vec::new(),
            vis,
            name,
            encoding,
            static_shape: None,
            value_type: None,
        }
    }

    /// A declaration of what the parser read: a bare encoding, or a tensor type (which fixes the
    /// static shape and the default value type).
    ///
    /// Errors: [`CodegenError`] for a tensor type without an encoding or with an element type that
    /// has no Rust value type yet (quantized, complex).
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
            quote!((#a + #b))
        }
        AffineExpr::Mul(a, b) => {
            let (a, b) = (lvl_to_dim_expr(a)?, lvl_to_dim_expr(b)?);
            quote!((#a * #b))
        }
        _ => {
            return Err(CodegenError(
                "lvl_to_dim expression with negative or divided terms; not generated yet".into(),
            ))
        }
    })
}

fn level_type_tokens(e: &Encoding, rt: &TokenStream) -> Vec<TokenStream> {
    e.lvl_types
        .iter()
        .map(|lt| {
            let format = match lt.format {
                LevelFormat::Dense => quote!(Dense),
                LevelFormat::Batch => quote!(Batch),
                LevelFormat::Compressed => quote!(Compressed),
                LevelFormat::LooseCompressed => quote!(LooseCompressed),
                LevelFormat::Singleton => quote!(Singleton),
                LevelFormat::NOutOfM { n, m } => quote!(NOutOfM { n: #n, m: #m }),
            };
            let (nu, no, soa) = (lt.properties.nonunique, lt.properties.nonordered, lt.properties.soa);
            quote! {
                #rt::sparse_ir::ir::LevelType {
                    format: #rt::sparse_ir::ir::LevelFormat::#format,
                    properties: #rt::sparse_ir::ir::LevelProperties { nonunique: #nu, nonordered: #no, soa: #soa },
                }
            }
        })
        .collect()
}

/// Generates the items for one declaration. `rt` is the path of the runtime crate as the
/// generated code should name it (`::sparse::runtime` for users of the facade).
///
/// Errors: [`CodegenError`] for encodings the generator does not handle yet (batch and n:m
/// levels, slices, counting symbols, level expressions other than `d`, `d floordiv b`, `d mod b`).
pub fn generate(decl: &Declaration, rt: &TokenStream) -> Result<TokenStream, CodegenError> {
    // A sliced encoding stores its parent's arrays; the slices become a view (`view`).
    let declared_slices = decl.encoding.dim_slices.clone();
    let mut parent_encoding = decl.encoding.clone();
    parent_encoding.dim_slices = None;
    let e = &parent_encoding;
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

    let batched = e
        .lvl_types
        .first()
        .is_some_and(|t| t.format == LevelFormat::Batch);
    // Level contexts and generators.
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
            size: quote!(self.lvl_sizes[#l]),
            pos_field: lt.has_positions().then(|| format_ident!("pos_{}", l)),
            crd,
            pos_ty: pos_ty.clone(),
            crd_ty: crd_ty.clone(),
            crd_width: e.crd_width,
            rt: rt.clone(),
            batched,
        });
        gens.push(g);
    }
    // The builder collects global positions as usize when batched (rebased and narrowed in place
    // at the end, like the dynamic storage); otherwise with the struct's own types, so the
    // finished arrays move into the struct without a copy.
    let bctxs: Vec<LevelCtx> = ctxs
        .iter()
        .map(|cx| {
            let mut b = cx.clone();
            if batched {
                b.pos_ty = quote!(usize);
            }
            b
        })
        .collect();

    let size_exprs = e
        .dim_to_lvl
        .results
        .iter()
        .map(|r| dim_to_lvl_expr(r, true))
        .collect::<Result<Vec<_>, _>>()?;
    let d2l_exprs = e
        .dim_to_lvl
        .results
        .iter()
        .map(|r| dim_to_lvl_expr(r, false))
        .collect::<Result<Vec<_>, _>>()?;
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
                        None => Ok(quote!(::core::option::Option::None)),
                        Some(n) => usize::try_from(*n)
                            .map(|n| quote!(::core::option::Option::Some(#n)))
                            .map_err(|_| {
                                CodegenError(format!("dimension size {n} does not fit usize"))
                            }),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            )
        }
    };
    let static_shape_const = match &static_shape {
        None => quote! {
            /// The static dimension sizes of the declared tensor type (`None` for a bare encoding).
            pub const STATIC_SHAPE: ::core::option::Option<[::core::option::Option<usize>; #dim_rank]> = ::core::option::Option::None;
        },
        Some(dims) => quote! {
            /// The static dimension sizes of the declared tensor type (`None` for a dynamic `?`).
            pub const STATIC_SHAPE: ::core::option::Option<[::core::option::Option<usize>; #dim_rank]> = ::core::option::Option::Some([#(#dims),*]);
        },
    };
    let static_shape_check = if static_shape.is_some() {
        quote! {
            if let ::core::option::Option::Some(dims) = Self::STATIC_SHAPE {
                for (dim, (want, got)) in dims.iter().zip(shape.iter()).enumerate() {
                    if let ::core::option::Option::Some(want) = want {
                        if want != got {
                            return ::core::result::Result::Err(#rt::StorageError::ShapeMismatch { dim, expected: *want, got: *got });
                        }
                    }
                }
            }
        }
    } else {
        quote!()
    };
    let value_type = decl.value_type.clone().unwrap_or_else(|| quote!(f64));
    let block_checks: Vec<TokenStream> = e
        .dim_to_lvl
        .results
        .iter()
        .filter_map(|r| match r {
            AffineExpr::FloorDiv(a, b) => Some((a.as_var()?, usize::try_from(b.as_constant()?).ok()?)),
            _ => None,
        })
        .map(|(dim, block)| {
            quote! {
                if shape[#dim] % #block != 0 {
                    return ::core::result::Result::Err(#rt::StorageError::BlockShape { dim: #dim, size: shape[#dim], block: #block });
                }
            }
        })
        .collect();
    let l2d_exprs = e
        .lvl_to_dim
        .results
        .iter()
        .map(lvl_to_dim_expr)
        .collect::<Result<Vec<_>, _>>()?;

    // Struct fields.
    let mut field_names = Vec::new();
    let mut field_types = Vec::new();
    let mut field_docs = Vec::new();
    for (g, cx) in gens.iter().zip(&ctxs) {
        for (f, ty) in g.fields(cx) {
            let doc = if cx.pos_field.as_ref() == Some(&f) {
                let what = if cx.lt.format == LevelFormat::LooseCompressed {
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
    let init: Vec<(Ident, TokenStream)> = gens
        .iter()
        .zip(&bctxs)
        .flat_map(|(g, cx)| g.init(cx))
        .collect();
    let builder_field_types: Vec<TokenStream> = gens
        .iter()
        .zip(&bctxs)
        .flat_map(|(g, cx)| g.fields(cx))
        .map(|(_, t)| t)
        .collect();
    // The struct's fields from the finished builder `b` (batched positions rebased and narrowed).
    let field_inits: Vec<TokenStream> = gens
        .iter()
        .zip(&ctxs)
        .flat_map(|(g, cx)| g.fields(cx).into_iter().map(move |(f, _)| (cx, f)))
        .map(|(cx, f)| {
            if batched && cx.pos_field.as_ref() == Some(&f) {
                let l = cx.l;
                let ty = &cx.pos_ty;
                let format = if cx.lt.format == LevelFormat::LooseCompressed { quote!(LooseCompressed) } else { quote!(Compressed) };
                // rebased and narrowed in place: no second positions buffer
                quote! {{
                    let mut __p: ::std::vec::Vec<usize> = b.#f;
                    #rt::dynamic::rebase_batches_in_place(#l, #rt::sparse_ir::ir::LevelFormat::#format, &mut __p, batches)?;
                    #rt::index::narrow_vec::<#ty>(__p).map_err(|value| #rt::StorageError::WidthOverflow {
                        level: #l, kind: #rt::BufferKind::Position, value, width: <#ty as #rt::Index>::WIDTH,
                    })?
                }}
            } else {
                quote!(b.#f)
            }
        })
        .collect();
    let batch_count = {
        let sizes: Vec<usize> = (0..e
            .lvl_types
            .iter()
            .take_while(|t| t.format == LevelFormat::Batch)
            .count())
            .collect();
        quote!(#rt::dynamic::checked_product(&[#( lvl_sizes[#sizes] ),*]))
    };
    let (batch_fields, batch_decl, batch_init_zero) = if batched {
        (
            quote!(counts, batches,),
            quote! {
                /// Global stored positions per level (over all batches).
                counts: [usize; #lvl_rank],
                /// Number of batches (product of the batch level sizes).
                batches: usize,
            },
            quote!(counts: [0; #lvl_rank], batches: 0,),
        )
    } else {
        (quote!(), quote!(), quote!())
    };
    let set_counts = if batched {
        quote! {
            // unchecked arrays may overflow a count (then `validate` reports it): no panic here
            if let ::core::result::Result::Ok(__counts) = #rt::storage::level_counts(&s) {
                s.counts.copy_from_slice(&__counts);
            }
            let lvl_sizes = s.lvl_sizes;
            s.batches = #batch_count.unwrap_or(0);
        }
    } else {
        quote!()
    };
    let _ = &batch_fields;
    let batch_let = if batched {
        quote!(let batches = #batch_count?;)
    } else {
        quote!()
    };
    let init_names: Vec<&Ident> = init.iter().map(|(f, _)| f).collect();
    let init_exprs: Vec<&TokenStream> = init.iter().map(|(_, x)| x).collect();

    let pos_levels: Vec<usize> = ctxs
        .iter()
        .filter(|c| c.pos_field.is_some())
        .map(|c| c.l)
        .collect();
    let pos_fields: Vec<&Ident> = ctxs.iter().filter_map(|c| c.pos_field.as_ref()).collect();
    let owners: Vec<&LevelCtx> = ctxs
        .iter()
        .filter(|c| c.crd.as_ref().is_some_and(|x| x.owner))
        .collect();
    let crd_levels: Vec<usize> = owners.iter().filter(|c| !c.packed()).map(|c| c.l).collect();
    let crd_fields: Vec<&Ident> = owners
        .iter()
        .filter(|c| !c.packed())
        .map(|c| &c.crd.as_ref().expect("owner").field)
        .collect();
    let packed_levels: Vec<usize> = owners.iter().filter(|c| c.packed()).map(|c| c.l).collect();
    let packed_fields: Vec<&Ident> = owners
        .iter()
        .filter(|c| c.packed())
        .map(|c| &c.crd.as_ref().expect("owner").field)
        .collect();
    let flush_fns: Vec<TokenStream> = bctxs
        .iter()
        .filter(|c| matches!(c.lt.format, LevelFormat::NOutOfM { .. }))
        .map(n_out_of_m::NOutOfM::flush_method)
        .collect();
    let push_value = if matches!(
        e.lvl_types.last().map(|t| t.format),
        Some(LevelFormat::NOutOfM { .. })
    ) {
        quote!(self.pending.last_mut().expect("n:m appended an entry").1 = v;)
    } else {
        quote!(self.values.push(v);)
    };

    let lvl_types = level_type_tokens(e, rt);
    let canonical = decl.encoding.to_string();
    let encoding_data = encoding_data::encoding_expr(&decl.encoding, &quote!(#rt::sparse_ir));
    let opt = |v: Option<u64>| match v {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    };
    let slice_items = match &declared_slices {
        None => quote!(),
        Some(slices) => {
            let (o, z, t): (Vec<_>, Vec<_>, Vec<_>) = (
                slices.iter().map(|x| opt(x.offset)).collect(),
                slices.iter().map(|x| opt(x.size)).collect(),
                slices.iter().map(|x| opt(x.stride)).collect(),
            );
            quote! {
                /// The declared dimension slices (`None` for a dynamic `?`).
                pub const SLICES: [#rt::sparse_ir::ir::DimSlice; #dim_rank] =
                    [#( #rt::sparse_ir::ir::DimSlice { offset: #o, size: #z, stride: #t } ),*];

                /// The declared slice of this tensor, a view without copying; `dynamic` gives the
                /// `?` values in dimension order (offset, size, stride within a dimension).
                ///
                /// Errors: `StorageError::Slice` naming the dimension for a missing or left-over
                /// dynamic value, a zero size or stride, or a slice past the dimension's end.
                pub fn view(&self, dynamic: &[usize]) -> ::core::result::Result<#rt::slice::SliceView<'_, Self>, #rt::StorageError> {
                    #rt::slice::SliceView::new(self, &Self::SLICES, dynamic)
                }
            }
        }
    };
    // ELL: the counting level and the level holding the counted dimension, for `validate`.
    let ell_levels = match counting.and_then(|(cl, (cd, _))| {
        let row = e
            .dim_to_lvl
            .results
            .iter()
            .position(|r| r.as_var() == Some(cd))?;
        Some((cl, row))
    }) {
        Some((cl, row)) => quote! {
            fn ell_levels(&self) -> ::core::option::Option<#rt::storage::EllLevels> {
                ::core::option::Option::Some(#rt::storage::EllLevels { counting: #cl, row: #row })
            }
        },
        None => quote!(),
    };
    // Positions of a level below dense levels only: the final length is known (every parent
    // gets its segment; batch-local compressed positions have one leading 0 per batch), so the
    // builder reserves exactly that and never over-allocates or copies.
    let batch_sizes: Vec<usize> = (0..e
        .lvl_types
        .iter()
        .take_while(|t| t.format == LevelFormat::Batch)
        .count())
        .collect();
    let reserve_positions: Vec<TokenStream> = ctxs
        .iter()
        .filter(|cx| cx.pos_field.is_some() && e.lvl_types[..cx.l].iter().all(|t| t.is_dense()))
        .map(|cx| {
            let f = cx.pos_field.as_ref().expect("positions");
            let above: Vec<usize> = (0..cx.l).collect();
            let len = if cx.lt.format == LevelFormat::LooseCompressed {
                quote!(__parents.checked_mul(2))
            } else {
                quote! {
                    __parents.checked_add(
                        #rt::dynamic::checked_product(&[#( lvl_sizes[#batch_sizes] ),*]).map_or(1, |b| b.max(1)),
                    )
                }
            };
            quote! {{
                let __too_large = || #rt::StorageError::ShapeOverflow { shape: lvl_sizes.to_vec() };
                let __parents = #rt::dynamic::checked_product(&[#( lvl_sizes[#above] ),*]).map_err(|_| __too_large())?;
                let __len = #len.ok_or_else(__too_large)?;
                b.#f.try_reserve_exact(__len.saturating_sub(b.#f.len())).map_err(|_| __too_large())?;
            }}
        })
        .collect();
    let builder = format_ident!("__{}Builder", name);
    let parts = format_ident!("{}Parts", name);
    let parts_doc = format!(" The arrays of a [`{name}`], taken apart by `into_raw_parts` and given to `from_raw_parts`: the same fields, public.");

    // Builder methods (assembly), one pair per level.
    let append_fns: Vec<TokenStream> = gens
        .iter()
        .zip(&bctxs)
        .map(|(g, cx)| {
            let f = format_ident!("append_crd_{}", cx.l);
            let body = g.append_crd(cx);
            quote!(fn #f(&mut self, full: usize, crd: usize) -> ::core::result::Result<(), #rt::StorageError> { #body })
        })
        .collect();
    let finalize_fns: Vec<TokenStream> = gens
        .iter()
        .zip(&bctxs)
        .map(|(g, cx)| {
            let f = format_ident!("finalize_segment_{}", cx.l);
            let body = g.finalize_segment(cx);
            quote!(fn #f(&mut self, full: usize, count: usize) -> ::core::result::Result<(), #rt::StorageError> { #body })
        })
        .collect();
    let lex_diff_steps: Vec<TokenStream> = ctxs
        .iter()
        .map(|cx| {
            let l = cx.l;
            if cx.lt.is_unique() {
                quote!(if lc[#l] != self.cursor[#l] { return #l; })
            } else {
                quote!(return #l;)
            }
        })
        .collect();
    let end_path_steps: Vec<TokenStream> = (0..lvl_rank)
        .rev()
        .map(|l| {
            let f = format_ident!("finalize_segment_{}", l);
            quote!(if diff <= #l { self.#f(self.cursor[#l] + 1, 1)?; })
        })
        .collect();
    let insert_steps: Vec<TokenStream> = (0..lvl_rank)
        .map(|l| {
            let f = format_ident!("append_crd_{}", l);
            quote!(if diff <= #l { self.#f(full, lc[#l])?; full = 0; self.cursor[#l] = lc[#l]; })
        })
        .collect();
    let merge = e.lvl_types.last().is_some_and(|t| t.is_unique());
    let nonordered: Vec<bool> = e.lvl_types.iter().map(|t| !t.is_ordered()).collect();

    // Level access (iterator support).
    let seg_arms: Vec<TokenStream> = gens
        .iter()
        .zip(&ctxs)
        .map(|(g, cx)| g.segment(cx, quote!(parent)))
        .collect();
    let coord_arms: Vec<TokenStream> = gens
        .iter()
        .zip(&ctxs)
        .map(|(g, cx)| g.coord(cx, quote!(parent), quote!(p)))
        .collect();
    let levels: Vec<usize> = (0..lvl_rank).collect();

    // Nested loops over all stored entries.
    let cs: Vec<Ident> = (0..lvl_rank).map(|l| format_ident!("c{}", l)).collect();
    let p_last = format_ident!("p{}", lvl_rank - 1);
    let nest = |inner: TokenStream, locate: bool| -> TokenStream {
        let mut body = inner;
        for (g, cx) in gens.iter().zip(&ctxs).rev() {
            body = if locate {
                g.emit_locate(cx, body)
            } else {
                g.emit_loop(cx, body)
            };
        }
        body
    };
    let for_each_body = nest(
        quote!(f(Self::lvl_to_dim(&[#(#cs),*]), &self.values[#p_last]);),
        false,
    );
    let mut get_body = nest(
        quote!(return ::core::option::Option::Some(&self.values[#p_last]);),
        true,
    );
    let mut counting_pass = quote!();
    let (rows_decl, rows_push) = match counting {
        Some((_, (cd, _))) => (
            quote!(let mut entries_rows: ::std::vec::Vec<usize> = ::std::vec::Vec::with_capacity(cap);),
            quote!(entries_rows.push(c[#cd]);),
        ),
        None => (quote!(), quote!()),
    };
    if let Some((cl, (cd, k))) = counting {
        // `get` tries every slice of the counting level.
        let ccl = format_ident!("c{}", cl);
        get_body = quote! {
            for #ccl in 0..#k {
                #get_body
            }
        };
        // Assembly: order by the other levels, merge duplicates, then the k-th element of each
        // row goes to slice k (as the runtime's ELL storage does).
        let merge_dups = if e.lvl_types.last().is_some_and(|t| t.is_unique()) {
            quote! {
                let mut k = 0;
                while k < order.len() {
                    let first = order[k];
                    let mut v = vals[first];
                    k += 1;
                    while k < order.len() && keys[order[k]] == keys[first] {
                        v += vals[order[k]];
                        k += 1;
                    }
                    mk.push(keys[first]);
                    mv.push(v);
                    mrow.push(rows[first]);
                }
            }
        } else {
            quote! {
                for &e in &order {
                    mk.push(keys[e]);
                    mv.push(vals[e]);
                    mrow.push(rows[e]);
                }
            }
        };
        counting_pass = quote! {
            let rows: ::std::vec::Vec<usize> = entries_rows;
            let mut order: ::std::vec::Vec<usize> = (0..keys.len()).collect();
            order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
            let mut mk: ::std::vec::Vec<[usize; #lvl_rank]> = ::std::vec::Vec::with_capacity(keys.len());
            let mut mv: ::std::vec::Vec<V> = ::std::vec::Vec::with_capacity(keys.len());
            let mut mrow: ::std::vec::Vec<usize> = ::std::vec::Vec::with_capacity(keys.len());
            #merge_dups
            let mut per_row = ::std::vec![0usize; shape[#cd]];
            for &r in &mrow {
                per_row[r] += 1;
            }
            if let ::core::option::Option::Some((row, &count)) = per_row.iter().enumerate().find(|(_, &c)| c > #k) {
                return ::core::result::Result::Err(#rt::StorageError::EllRowOverflow { row, count, slices: #k });
            }
            per_row.iter_mut().for_each(|c| *c = 0);
            for (key, &r) in mk.iter_mut().zip(&mrow) {
                key[#cl] = per_row[r];
                per_row[r] += 1;
            }
            let (keys, vals) = (mk, mv);
        };
    }

    // SpMV: a row-accumulating loop when level 0 is dense over dimension 0 and level 1 is the
    // last level over dimension 1 (CSR and loose CSR); otherwise nested loops scattering into y.
    let spmv = if dim_rank == 2 {
        let perm = e.dim_permutation();
        let csr_like = lvl_rank == 2
            && perm.as_deref() == Some(&[0, 1][..])
            && e.lvl_types[0].format == LevelFormat::Dense
            && e.lvl_types[1].has_positions();
        // BSR with row-major blocks: (i floordiv B : dense, j floordiv C : compressed,
        // i mod B : dense, j mod C : dense) -> constant-size block loops.
        let block = |r: &AffineExpr, div: bool| -> Option<(usize, usize)> {
            match (r, div) {
                (AffineExpr::FloorDiv(a, b), true) | (AffineExpr::Mod(a, b), false) => Some((
                    a.as_var()?,
                    usize::try_from(b.as_constant()?).ok().filter(|&b| b > 0)?,
                )),
                _ => None,
            }
        };
        let res = &e.dim_to_lvl.results;
        let bsr = if lvl_rank == 4
            && e.lvl_types[0].format == LevelFormat::Dense
            && e.lvl_types[1].format == LevelFormat::Compressed
            && e.lvl_types[2].format == LevelFormat::Dense
            && e.lvl_types[3].format == LevelFormat::Dense
        {
            match (
                block(&res[0], true),
                block(&res[1], true),
                block(&res[2], false),
                block(&res[3], false),
            ) {
                (Some((0, b)), Some((1, c)), Some((0, b2)), Some((1, c2)))
                    if b == b2 && c == c2 =>
                {
                    Some((b, c))
                }
                _ => None,
            }
        } else {
            None
        };
        // Sorted COO, array of structs: (d : compressed(nonunique), d' : singleton), one
        // interleaved coordinate buffer walked in pairs.
        let coo_aos = if lvl_rank == 2
            && e.lvl_types[0].format == LevelFormat::Compressed
            && !e.lvl_types[0].is_unique()
            && e.lvl_types[1].format == LevelFormat::Singleton
            && !e.lvl_types[1].properties.soa
            && !ctxs[0].packed()
        {
            match perm.as_deref() {
                Some([0, 1]) => Some((
                    true,
                    ctxs[0].crd.as_ref().expect("coordinates").field.clone(),
                )),
                Some([1, 0]) => Some((
                    false,
                    ctxs[0].crd.as_ref().expect("coordinates").field.clone(),
                )),
                _ => None,
            }
        } else {
            None
        };
        // Row formats (CSR, loose CSR, BSR) get `(rows per unit, segment of unit __r, segment
        // starts are non-decreasing)` here: their kernel runs on any range of rows, in parallel too.
        let mut row_kernel: Option<(usize, TokenStream, bool)> = None;
        let kernel = if let Some((bb, cc)) = bsr {
            let seg = gens[1].segment(&ctxs[1], quote!(__ib));
            let crd_field = &ctxs[1]
                .crd
                .as_ref()
                .expect("compressed level has coordinates")
                .field;
            let bc = bb * cc;
            row_kernel = Some((
                bb,
                gens[1].segment(&ctxs[1], quote!(__r)),
                e.lvl_types[1].format == LevelFormat::Compressed,
            ));
            quote! {
                let __vals = &self.values[..];
                let __crd = &self.#crd_field[..];
                for (__k, __yb) in y.chunks_exact_mut(#bb).enumerate() {
                    let __ib = __row0 + __k;
                    let (__lo, __hi) = #seg;
                    let mut __acc = [<V as #rt::num_traits::Zero>::zero(); #bb];
                    for __p in __lo..__hi {
                        let __jb = #rt::Index::index(__crd[__p]);
                        let __blk: &[V; #bc] = __vals[__p * #bc..__p * #bc + #bc].try_into().expect("block");
                        let __xb: &[V; #cc] = x[__jb * #cc..__jb * #cc + #cc].try_into().expect("block of x");
                        for __ii in 0..#bb {
                            for __jj in 0..#cc {
                                __acc[__ii] += __blk[__ii * #cc + __jj] * __xb[__jj];
                            }
                        }
                    }
                    __yb.copy_from_slice(&__acc);
                }
            }
        } else if let Some((row_first, crd0)) = coo_aos {
            let (i, j) = if row_first {
                (quote!(__c[0]), quote!(__c[1]))
            } else {
                (quote!(__c[1]), quote!(__c[0]))
            };
            quote! {
                for __yi in y.iter_mut() {
                    *__yi = <V as #rt::num_traits::Zero>::zero();
                }
                for (__c, __v) in self.#crd0.chunks_exact(2).zip(self.values.iter()) {
                    let (__i, __j) = (#rt::Index::index(#i), #rt::Index::index(#j));
                    debug_assert!(__i < y.len() && __j < x.len());
                    // SAFETY: coordinates are below their level sizes, which are the dimension
                    // sizes `y.len()` and `x.len()` (checked above); see the CSR kernel.
                    unsafe { *y.get_unchecked_mut(__i) += *__v * *x.get_unchecked(__j) };
                }
            }
        } else if csr_like {
            let seg = gens[1].segment(&ctxs[1], quote!(i));
            let crd_field = &ctxs[1]
                .crd
                .as_ref()
                .expect("compressed level has coordinates")
                .field;
            row_kernel = Some((
                1usize,
                gens[1].segment(&ctxs[1], quote!(__r)),
                e.lvl_types[1].format == LevelFormat::Compressed,
            ));
            quote! {
                let __vals = &self.values[..];
                let __crd = &self.#crd_field[..];
                for (__k, __yi) in y.iter_mut().enumerate() {
                    let i = __row0 + __k;
                    let (__lo, __hi) = #seg;
                    let mut __acc = <V as #rt::num_traits::Zero>::zero();
                    for (__v, __c) in __vals[__lo..__hi].iter().zip(&__crd[__lo..__hi]) {
                        let __j = #rt::Index::index(*__c);
                        debug_assert!(__j < x.len());
                        // SAFETY: every coordinate of level 1 is below its level size, which is
                        // `shape()[1] == x.len()` (checked above): `from_coo` builds such arrays
                        // and `from_raw_parts` validates them (`from_raw_parts_unchecked` makes
                        // it the caller's promise).
                        __acc += *__v * unsafe { *x.get_unchecked(__j) };
                    }
                    *__yi = __acc;
                }
            }
        } else {
            let scatter = nest(
                quote! {
                    let [__i, __j] = Self::lvl_to_dim(&[#(#cs),*]);
                    y[__i] += self.values[#p_last] * x[__j];
                },
                false,
            );
            quote! {
                for __yi in y.iter_mut() {
                    *__yi = <V as #rt::num_traits::Zero>::zero();
                }
                #scatter
            }
        };
        let checks = quote! {
            if x.len() != self.dim_shape[1] {
                return ::core::result::Result::Err(#rt::StorageError::LengthMismatch { operand: "x", expected: self.dim_shape[1], got: x.len() });
            }
            if y.len() != self.dim_shape[0] {
                return ::core::result::Result::Err(#rt::StorageError::LengthMismatch { operand: "y", expected: self.dim_shape[0], got: y.len() });
            }
        };
        let (serial_body, rows_fn, par_body) = match &row_kernel {
            Some((unit, seg, monotonic)) => {
                let _ = seg;
                let before = match (&ctxs[1].pos_field, *monotonic) {
                    // entries before row r: the compressed level's pos[r] (defined for r <= rows)
                    (Some(pf), true) => quote!(|__r| #rt::Index::index(self.#pf[__r])),
                    _ => quote!(|__r| __r),
                };
                (
                    quote!(self.spmv_rows(x, y, 0);),
                    quote! {
                        /// The row kernel: `y` holds rows (block rows for BSR) `__row0..`, overwritten.
                        #[allow(unused_variables, clippy::needless_range_loop)]
                        fn spmv_rows(&self, x: &[V], y: &mut [V], __row0: usize) {
                            #kernel
                        }
                    },
                    quote! {
                        let __units = y.len() / #unit;
                        let __splits = #rt::storage::balanced_splits(__units, #rt::rayon::current_num_threads() * 4, #before);
                        #rt::rayon::scope(|__s| {
                            let mut __rest: &mut [V] = y;
                            for __w in __splits.windows(2) {
                                let (__chunk, __tail) = ::core::mem::take(&mut __rest).split_at_mut((__w[1] - __w[0]) * #unit);
                                __rest = __tail;
                                let __row0 = __w[0];
                                if !__chunk.is_empty() {
                                    __s.spawn(move |_| self.spmv_rows(x, __chunk, __row0));
                                }
                            }
                        });
                    },
                )
            }
            None => (kernel.clone(), quote!(), quote!(self.spmv(x, y)?;)),
        };
        quote! {
            #rows_fn

            /// `y = A · x` in parallel (rayon): rows are split into ranges of about equal stored
            /// entries, one task each. Formats that scatter into `y` (COO, column-major ones) run
            /// the serial [`Self::spmv`]. Same operands and errors as `spmv`; the result is
            /// identical (each row is summed in the same order).
            pub fn spmv_par(&self, x: &[V], y: &mut [V]) -> ::core::result::Result<(), #rt::StorageError> {
                #checks
                #par_body
                ::core::result::Result::Ok(())
            }

            /// `y = A · x`: `x` has `shape()[1]` elements, `y` has `shape()[0]` and is overwritten.
            ///
            /// Errors: `StorageError::LengthMismatch` naming `"x"` or `"y"` when a length is wrong.
            #[allow(unused_variables, clippy::needless_range_loop)]
            pub fn spmv(&self, x: &[V], y: &mut [V]) -> ::core::result::Result<(), #rt::StorageError> {
                #checks
                #serial_body
                ::core::result::Result::Ok(())
            }
        }
    } else {
        quote!()
    };

    let doc_separator = if attrs.is_empty() {
        quote!()
    } else {
        quote!(#[doc = ""])
    };
    let doc_encoding = format!(" Encoding: `{canonical}`.");
    let doc_fields = format!(
        " Stored arrays: {}values.",
        ctxs.iter()
            .map(|cx| {
                let mut s = String::new();
                if cx.pos_field.is_some() {
                    s.push_str(&format!(
                        "`pos_{}` ({} positions), ",
                        cx.l,
                        width_name(e.pos_width)
                    ));
                }
                if let Some(loc) = cx.crd.as_ref().filter(|x| x.owner) {
                    let what = if loc.stride > 1 {
                        format!(
                            "interleaved {} coordinates of levels {}..={}",
                            loc.stride,
                            cx.l,
                            cx.l + loc.stride - 1
                        )
                    } else {
                        "coordinates".into()
                    };
                    s.push_str(&format!(
                        "`crd_{}` ({}, {}), ",
                        cx.l,
                        what,
                        width_name(e.crd_width)
                    ));
                }
                s
            })
            .collect::<String>()
    );

    Ok(quote! {
        #(#attrs)*
        #doc_separator
        #[doc = #doc_encoding]
        #[doc = ""]
        #[doc = #doc_fields]
        #[derive(Clone, Debug, PartialEq)]
        #vis struct #name<V = #value_type> {
            dim_shape: [usize; #dim_rank],
            lvl_sizes: [usize; #lvl_rank],
            #( #field_names: #field_types, )*
            values: ::std::vec::Vec<V>,
            #batch_decl
        }

        #[doc = #parts_doc]
        #[derive(Clone, Debug, PartialEq)]
        #vis struct #parts<V = #value_type> {
            /// Dimension sizes.
            pub dim_shape: [usize; #dim_rank],
            #(
                #[doc = #field_docs]
                pub #field_names: #field_types,
            )*
            /// One value per stored position of the last level.
            pub values: ::std::vec::Vec<V>,
        }

        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        struct #builder<V> {
            lvl_sizes: [usize; #lvl_rank],
            #( #field_names: #builder_field_types, )*
            values: ::std::vec::Vec<V>,
            pending: ::std::vec::Vec<(usize, V)>,
            cursor: [usize; #lvl_rank],
            count: [usize; #lvl_rank],
            loose_start: [usize; #lvl_rank],
        }

        #[allow(unused_variables, unused_mut, unused_assignments, unreachable_code, dead_code, clippy::all)]
        impl<V: #rt::Value> #builder<V> {
            #(#append_fns)*
            #(#finalize_fns)*
            #(#flush_fns)*
            fn lex_diff(&self, lc: &[usize; #lvl_rank]) -> usize {
                #(#lex_diff_steps)*
                #lvl_rank - 1
            }
            fn end_path(&mut self, diff: usize) -> ::core::result::Result<(), #rt::StorageError> {
                #(#end_path_steps)*
                ::core::result::Result::Ok(())
            }
            fn lex_insert(&mut self, first: bool, lc: &[usize; #lvl_rank], v: V) -> ::core::result::Result<(), #rt::StorageError> {
                let (diff, mut full) = if first {
                    (0, 0)
                } else {
                    let d = self.lex_diff(lc);
                    self.end_path(d + 1)?;
                    (d, self.cursor[d] + 1)
                };
                #(#insert_steps)*
                #push_value
                ::core::result::Result::Ok(())
            }
        }

        #[allow(dead_code, clippy::all)]
        impl<V> #name<V> {
            /// Number of dimensions.
            pub const DIM_RANK: usize = #dim_rank;
            /// Number of storage levels.
            pub const LVL_RANK: usize = #lvl_rank;
            #static_shape_const
            /// The encoding in MLIR's canonical form.
            pub const ENCODING: &'static str = #canonical;
            /// The level types, outermost first.
            pub const LVL_TYPES: [#rt::sparse_ir::ir::LevelType; #lvl_rank] = [#(#lvl_types),*];

            /// The encoding as the semantic IR (the verified value, built as data: nothing is
            /// parsed at run time; [`Self::ENCODING`] is its canonical text).
            pub fn encoding() -> #rt::sparse_ir::ir::Encoding {
                #encoding_data
            }

            /// Level sizes (elements) for a dimension shape.
            pub fn lvl_sizes_for(shape: &[usize; #dim_rank]) -> [usize; #lvl_rank] {
                [#(#size_exprs),*]
            }

            /// Maps dimension coordinates to level coordinates (`dim_to_lvl`).
            #[inline(always)]
            pub fn dim_to_lvl(c: &[usize; #dim_rank]) -> [usize; #lvl_rank] {
                [#(#d2l_exprs),*]
            }

            /// Maps level coordinates to dimension coordinates (`lvl_to_dim`).
            #[inline(always)]
            pub fn lvl_to_dim(lc: &[usize; #lvl_rank]) -> [usize; #dim_rank] {
                [#(#l2d_exprs),*]
            }

            /// Dimension sizes.
            pub fn shape(&self) -> [usize; #dim_rank] {
                self.dim_shape
            }

            /// Level sizes.
            pub fn lvl_sizes(&self) -> [usize; #lvl_rank] {
                self.lvl_sizes
            }

            /// Number of stored entries (explicit zeros included), MLIR's `nse`.
            pub fn nse(&self) -> usize {
                self.values.len()
            }

            /// The values array, `nse()` elements in storage order.
            pub fn values(&self) -> &[V] {
                &self.values
            }

            /// The positions array of level `lvl`; `None` if the level stores none.
            pub fn positions(&self, lvl: usize) -> ::core::option::Option<&[#pos_ty]> {
                match lvl {
                    #( #pos_levels => ::core::option::Option::Some(&self.#pos_fields), )*
                    _ => ::core::option::Option::None,
                }
            }

            /// The coordinate buffer owned by level `lvl`; `None` if the level owns none (or packs
            /// its coordinates below a byte: see `SparseStorage::coordinate_view`). In an
            /// array-of-structs COO region the region's first level owns one buffer interleaving
            /// the coordinates of all its levels, entry by entry.
            pub fn coordinates(&self, lvl: usize) -> ::core::option::Option<&[#crd_ty]> {
                match lvl {
                    #( #crd_levels => ::core::option::Option::Some(&self.#crd_fields), )*
                    _ => ::core::option::Option::None,
                }
            }

            /// Bytes held by the position, coordinate and value arrays.
            pub fn memory_bytes(&self) -> usize {
                #rt::storage::memory_bytes(self)
            }

            /// Checks every storage invariant (see `sparse_runtime::storage::validate`).
            ///
            /// Errors: `StorageError::Invariant` naming the invariant, level and position.
            pub fn validate(&self) -> ::core::result::Result<(), #rt::StorageError> {
                #rt::storage::validate(self)
            }

            #slice_items

            /// A strided view of this tensor through one `DimSlice` per dimension, without
            /// copying; `dynamic` supplies the `?` (`None`) values in order.
            ///
            /// Errors: as `SliceView::new` (`StorageError::RankMismatch`, `StorageError::Slice`).
            pub fn slice_dims(
                &self,
                slices: &[#rt::sparse_ir::ir::DimSlice],
                dynamic: &[usize],
            ) -> ::core::result::Result<#rt::slice::SliceView<'_, Self>, #rt::StorageError> {
                #rt::slice::SliceView::new(self, slices, dynamic)
            }

            /// Takes the storage apart into its arrays (no copy).
            pub fn into_raw_parts(self) -> #parts<V> {
                #parts {
                    dim_shape: self.dim_shape,
                    #( #field_names: self.#field_names, )*
                    values: self.values,
                }
            }

            /// Builds the storage from arrays without checking them.
            ///
            /// # Safety
            /// The arrays must satisfy every invariant `validate` checks for this format and
            /// `parts.dim_shape` (as `from_raw_parts` verifies); otherwise later calls may panic
            /// or return wrong results.
            pub unsafe fn from_raw_parts_unchecked(parts: #parts<V>) -> Self {
                #[allow(unused_mut)]
                let mut s = #name {
                    dim_shape: parts.dim_shape,
                    lvl_sizes: Self::lvl_sizes_for(&parts.dim_shape),
                    #( #field_names: parts.#field_names, )*
                    values: parts.values,
                    #batch_init_zero
                };
                #set_counts
                s
            }

            /// Stored entries in storage order as `(dimension coordinates, &value)`.
            pub fn iter(&self) -> impl ::core::iter::Iterator<Item = ([usize; #dim_rank], &V)> + '_ {
                #rt::storage::LevelIter::new(self).map(move |(lc, p)| (Self::lvl_to_dim(&lc), &self.values[p]))
            }

            /// Stored entries in storage order as `(level coordinates, &value)`.
            pub fn iter_levels(&self) -> impl ::core::iter::Iterator<Item = ([usize; #lvl_rank], &V)> + '_ {
                #rt::storage::LevelIter::new(self).map(move |(lc, p)| (lc, &self.values[p]))
            }

            /// Calls `f(dimension coordinates, &value)` for every stored entry in storage order
            /// (nested loops, faster than [`Self::iter`]).
            #[allow(unused_variables)]
            pub fn for_each(&self, mut f: impl FnMut([usize; #dim_rank], &V)) {
                #for_each_body
            }

            /// The value stored at `coords`; `None` if nothing is stored there or `coords` is out
            /// of range. With stored duplicates, the first in storage order.
            #[allow(unused_variables, unreachable_code)]
            pub fn get(&self, coords: [usize; #dim_rank]) -> ::core::option::Option<&V> {
                if coords.iter().zip(self.dim_shape.iter()).any(|(c, s)| c >= s) {
                    return ::core::option::Option::None;
                }
                let [#(#cs),*] = Self::dim_to_lvl(&coords);
                #get_body
                ::core::option::Option::None
            }
        }

        #[allow(dead_code, clippy::all)]
        impl<V: #rt::Value> #name<V> {
            /// Builds the storage from entries `(dimension coordinates, value)` in any order.
            /// Duplicates are summed when the last level is unique, kept otherwise.
            ///
            /// Errors: `StorageError::ShapeMismatch` if `shape` differs from a declared static
            /// shape; `StorageError::BlockShape` if a blocked dimension is not a multiple of its
            /// block size; `StorageError::CoordinateOutOfRange` naming the entry, dimension and
            /// value; `StorageError::WidthOverflow` naming the level when a position or
            /// coordinate does not fit the width.
            pub fn from_coo<I>(shape: [usize; #dim_rank], entries: I) -> ::core::result::Result<Self, #rt::StorageError>
            where
                I: ::core::iter::IntoIterator<Item = ([usize; #dim_rank], V)>,
            {
                #static_shape_check
                #(#block_checks)*
                let entries = entries.into_iter();
                let cap = entries.size_hint().0;
                let mut keys: ::std::vec::Vec<[usize; #lvl_rank]> = ::std::vec::Vec::with_capacity(cap);
                let mut vals: ::std::vec::Vec<V> = ::std::vec::Vec::with_capacity(cap);
                #rows_decl
                for (entry, (c, v)) in entries.enumerate() {
                    for dim in 0..#dim_rank {
                        if c[dim] >= shape[dim] {
                            return ::core::result::Result::Err(#rt::StorageError::CoordinateOutOfRange { entry, dim, coordinate: c[dim], size: shape[dim] });
                        }
                    }
                    keys.push(Self::dim_to_lvl(&c));
                    vals.push(v);
                    #rows_push
                }
                #counting_pass
                Self::assemble(shape, keys, vals)
            }

            /// Builds the storage from a `CooTensor` (e.g. read from a Matrix
            /// Market file).
            ///
            /// Errors: `StorageError::RankMismatch` if its rank
            /// is not the dimension rank; otherwise as [`Self::from_coo`].
            pub fn from_coo_tensor(coo: &#rt::CooTensor<V>) -> ::core::result::Result<Self, #rt::StorageError> {
                let shape: [usize; #dim_rank] = coo
                    .shape
                    .as_slice()
                    .try_into()
                    .map_err(|_| #rt::StorageError::RankMismatch { expected: #dim_rank, got: coo.shape.len() })?;
                if coo.coords.len() != coo.values.len() * #dim_rank {
                    return ::core::result::Result::Err(#rt::StorageError::LengthMismatch { operand: "COO coordinates", expected: coo.values.len() * #dim_rank, got: coo.coords.len() });
                }
                Self::from_coo(
                    shape,
                    coo.coords.chunks_exact(#dim_rank).zip(coo.values.iter()).map(|(c, v)| {
                        let mut a = [0usize; #dim_rank];
                        a.copy_from_slice(c);
                        (a, *v)
                    }),
                )
            }

            /// Builds the storage from a dense row-major array (last dimension fastest); zeros
            /// are not stored (except where a dense level stores them anyway).
            ///
            /// Errors: `StorageError::LengthMismatch` if
            /// `data.len()` is not the product of `shape`; otherwise as [`Self::from_coo`].
            pub fn from_dense(shape: [usize; #dim_rank], data: &[V]) -> ::core::result::Result<Self, #rt::StorageError> {
                let total = #rt::dynamic::checked_product(&shape)?;
                if data.len() != total {
                    return ::core::result::Result::Err(#rt::StorageError::LengthMismatch { operand: "dense input", expected: total, got: data.len() });
                }
                let mut idx = [0usize; #dim_rank];
                Self::from_coo(
                    shape,
                    data.iter().enumerate().filter(|(_, v)| !<V as #rt::num_traits::Zero>::is_zero(*v)).map(move |(flat, v)| {
                        #rt::dynamic::unflatten(flat, &shape, &mut idx);
                        (idx, *v)
                    }),
                )
            }

            /// The dense tensor, row-major (last dimension fastest); stored duplicates are summed.
            ///
            /// Errors: `StorageError::ShapeOverflow` if the
            /// element count does not fit `usize`.
            pub fn to_dense(&self) -> ::core::result::Result<::std::vec::Vec<V>, #rt::StorageError> {
                let total = #rt::dynamic::checked_product(&self.dim_shape)?;
                let mut out = ::std::vec![<V as #rt::num_traits::Zero>::zero(); total];
                let shape = self.dim_shape;
                self.for_each(|c, v| {
                    let flat = c.iter().zip(shape.iter()).fold(0usize, |acc, (c, s)| acc * s + c);
                    out[flat] += *v;
                });
                ::core::result::Result::Ok(out)
            }

            /// Builds the storage from arrays and checks them with `validate`.
            ///
            /// Errors: `StorageError::ShapeMismatch` / `StorageError::BlockShape` for a shape the
            /// format cannot hold; `StorageError::Invariant` naming the invariant, level and
            /// position of the first violation (see `sparse_runtime::storage::validate`: among
            /// them `"array lengths fit usize"` for a shape whose arrays cannot be addressed,
            /// the COO tuple order and uniqueness of singleton levels, and the ELL slice layout).
            /// Never panics.
            #[allow(unused_variables)]
            pub fn from_raw_parts(parts: #parts<V>) -> ::core::result::Result<Self, #rt::StorageError> {
                let shape = parts.dim_shape;
                #static_shape_check
                #(#block_checks)*
                // SAFETY: the arrays are validated before the struct is returned.
                let s = unsafe { Self::from_raw_parts_unchecked(parts) };
                s.validate()?;
                ::core::result::Result::Ok(s)
            }

            /// All stored entries (explicit zeros included) as a COO tensor in storage order.
            pub fn to_coo(&self) -> #rt::CooTensor<V> {
                let mut coo = #rt::CooTensor::new(self.dim_shape.to_vec());
                coo.coords.reserve(self.nse() * #dim_rank);
                coo.values.reserve(self.nse());
                self.for_each(|c, v| coo.push(&c, *v));
                coo
            }

            /// The same tensor in another format `T` (any struct `sparse_format!` generates with
            /// the same value type), re-assembled from the stored entries that are not zero:
            /// explicit zeros of this format (blocks, padding, dense levels) are not carried over,
            /// as in `DynamicStorage::convert`.
            ///
            /// Errors: as `T`'s `from_coo` (rank, shape, block size, width, n:m block overflow).
            pub fn convert<T: #rt::storage::FromCoo<V>>(&self) -> ::core::result::Result<T, #rt::StorageError> {
                let mut coo = #rt::CooTensor::new(self.dim_shape.to_vec());
                self.for_each(|c, v| {
                    if !<V as #rt::num_traits::Zero>::is_zero(v) {
                        coo.push(&c, *v);
                    }
                });
                T::from_coo_tensor(&coo)
            }

            fn assemble(
                shape: [usize; #dim_rank],
                keys: ::std::vec::Vec<[usize; #lvl_rank]>,
                vals: ::std::vec::Vec<V>,
            ) -> ::core::result::Result<Self, #rt::StorageError> {
                let lvl_sizes = Self::lvl_sizes_for(&shape);
                let n = keys.len();
                // Level order, as the dynamic storage does it (counting sort on level 0, stable).
                let flat: &[usize] = keys.as_flattened();
                const NONORDERED: [bool; #lvl_rank] = [#(#nonordered),*];
                let order = match #rt::dynamic::nonordered_sort_keys(flat, #lvl_rank, n, &NONORDERED) {
                    ::core::option::Option::Some(sort_keys) => #rt::dynamic::level_order(&sort_keys, #lvl_rank, n, n.max(lvl_sizes[0])),
                    ::core::option::Option::None => #rt::dynamic::level_order(flat, #lvl_rank, n, lvl_sizes[0]),
                };
                let mut b = #builder::<V> {
                    lvl_sizes,
                    #( #init_names: #init_exprs, )*
                    values: ::std::vec::Vec::with_capacity(n),
                    pending: ::std::vec::Vec::new(),
                    cursor: [0; #lvl_rank],
                    count: [0; #lvl_rank],
                    loose_start: [0; #lvl_rank],
                };
                #(#reserve_positions)*
                let mut first = true;
                let mut k = 0;
                while k < n {
                    let e = order[k];
                    let mut v = vals[e];
                    k += 1;
                    if #merge {
                        while k < n && keys[order[k]] == keys[e] {
                            v += vals[order[k]];
                            k += 1;
                        }
                    }
                    b.lex_insert(first, &keys[e], v)?;
                    first = false;
                }
                if n == 0 {
                    b.finalize_segment_0(0, 1)?;
                } else {
                    b.end_path(0)?;
                }
                #batch_let
                #[allow(unused_mut)]
                let mut s = #name {
                    dim_shape: shape,
                    lvl_sizes,
                    #( #field_names: #field_inits, )*
                    values: b.values,
                    #batch_init_zero
                };
                #set_counts
                ::core::result::Result::Ok(s)
            }

            #spmv
        }

        impl<V> #rt::slice::DimAccess for #name<V> {
            type Value = V;
            fn dims(&self) -> &[usize] {
                &self.dim_shape
            }
            fn entries(&self) -> ::std::boxed::Box<dyn ::core::iter::Iterator<Item = (::std::vec::Vec<usize>, &V)> + '_> {
                ::std::boxed::Box::new(self.iter().map(|(c, v)| (c.to_vec(), v)))
            }
            fn lookup(&self, coords: &[usize]) -> ::core::option::Option<&V> {
                self.get(<[usize; #dim_rank]>::try_from(coords).ok()?)
            }
        }

        impl<V: #rt::Value> #rt::storage::FromCoo<V> for #name<V> {
            fn from_coo_tensor(coo: &#rt::CooTensor<V>) -> ::core::result::Result<Self, #rt::StorageError> {
                #name::from_coo_tensor(coo)
            }
        }

        #[allow(unused_variables)]
        impl<V> #rt::storage::LevelAccess<#lvl_rank> for #name<V> {
            #[inline(always)]
            fn segment(&self, l: usize, parent: usize) -> (usize, usize) {
                match l {
                    #( #levels => #seg_arms, )*
                    _ => (0, 0),
                }
            }
            #[inline(always)]
            fn coord(&self, l: usize, parent: usize, p: usize) -> usize {
                match l {
                    #( #levels => #coord_arms, )*
                    _ => 0,
                }
            }
        }

        #[allow(clippy::all)]
        impl<V> #rt::SparseStorage for #name<V> {
            type Value = V;
            fn dim_shape(&self) -> &[usize] {
                &self.dim_shape
            }
            fn lvl_sizes(&self) -> &[usize] {
                &self.lvl_sizes
            }
            fn lvl_types(&self) -> &[#rt::sparse_ir::ir::LevelType] {
                &Self::LVL_TYPES
            }
            fn position_buffer(&self, l: usize) -> ::core::option::Option<#rt::IndexSlice<'_>> {
                self.positions(l).map(<#pos_ty as #rt::Index>::slice)
            }
            fn coordinate_buffer(&self, l: usize) -> ::core::option::Option<#rt::IndexSlice<'_>> {
                self.coordinates(l).map(<#crd_ty as #rt::Index>::slice)
            }
            fn value_slice(&self) -> &[V] {
                &self.values
            }
            fn coordinate_view(&self, l: usize) -> ::core::option::Option<#rt::packed::IndexView<'_>> {
                match l {
                    #( #packed_levels => ::core::option::Option::Some(#rt::packed::IndexView::Packed(self.#packed_fields.as_slice())), )*
                    _ => self.coordinates(l).map(|c| #rt::packed::IndexView::Plain(<#crd_ty as #rt::Index>::slice(c))),
                }
            }
            #ell_levels
        }

        impl<V: ::core::fmt::Display> ::core::fmt::Display for #name<V> {
            /// MLIR's `sparse_tensor.print` form.
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                #rt::storage::fmt_sparse_tensor(self, f)
            }
        }
    })
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
    Ok(prettyplease::unparse(&file))
}
