//! The storage struct (its fields: shape, level sizes, the `pos_{l}`/`crd_{l}` arrays the
//! format needs, values), its public `Parts` twin, the constants and plain accessors
//! (`ENCODING`, `LVL_TYPES`, `encoding()`, `positions`, `coordinates`, `values`, `validate`,
//! `memory_bytes`, ...) and the `SparseStorage` impl the runtime's generic code reads.
//!
//! A format with `explicitVal` (a pattern) has no values array: the struct holds the constant
//! once (`explicit: V`, converted by the runtime's `FromScalar`) and its number of stored
//! entries (`nse`), its `Parts` no `values`, and `explicit_value()` replaces `values()`.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::level::LevelCtx;
use super::{
    dim_to_lvl_expr, encoding_data, level_type_tokens, lvl_to_dim_expr, width_name, CodegenError,
    Ctx,
};

/// The struct, its `Parts`, the inherent constants and accessors, and `SparseStorage`.
pub(super) fn emit(cx: &Ctx) -> Result<TokenStream, CodegenError> {
    let Ctx {
        decl,
        e,
        name,
        rt,
        ctxs,
        pos_ty,
        crd_ty,
        counting,
        static_shape,
        ..
    } = cx;
    let (dim_rank, lvl_rank, counting) = (cx.dim_rank, cx.lvl_rank, *counting);
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
    let static_shape_const = match &static_shape {
        None => quote! {
            /// The static dimension sizes of the declared tensor type (`None` for a bare encoding).
            pub const STATIC_SHAPE: Option<[Option<usize>; #dim_rank]> = None;
        },
        Some(dims) => quote! {
            /// The static dimension sizes of the declared tensor type (`None` for a dynamic `?`).
            pub const STATIC_SHAPE: Option<[Option<usize>; #dim_rank]> = Some([#(#dims),*]);
        },
    };
    let l2d_exprs = e
        .lvl_to_dim
        .results
        .iter()
        .map(lvl_to_dim_expr)
        .collect::<Result<Vec<_>, _>>()?;

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
    let lvl_types = level_type_tokens(e);
    let canonical = decl.encoding.to_string();
    let encoding_data = encoding_data::encoding_expr(&decl.encoding, &quote!(#rt::sparse_ir));
    // ELL: the counting level and the level holding the counted dimension, for `validate`.
    let ell_levels = match counting.and(e.ell_levels()) {
        Some((cl, row)) => quote! {
            fn ell_levels(&self) -> Option<#rt::storage::EllLevels> {
                Some(#rt::storage::EllLevels { counting: #cl, row: #row })
            }
        },
        None => quote!(),
    };
    // the trait's default wraps `coordinate_buffer`; packed buffers need their own view
    let coordinate_view = if packed_levels.is_empty() {
        quote!()
    } else {
        quote! {
            fn coordinate_view(&self, l: usize) -> Option<rt::packed::IndexView<'_>> {
                match l {
                    #( #packed_levels => Some(rt::packed::IndexView::Packed(self.#packed_fields.as_slice())), )*
                    _ => self.coordinate_buffer(l).map(rt::packed::IndexView::Plain),
                }
            }
        }
    };
    let (value_accessors, value_slice) = if cx.explicit().is_some() {
        let text = e
            .explicit_val
            .as_ref()
            .map(|v| v.to_string())
            .unwrap_or_default();
        let doc = format!(
            " The value every stored entry holds: the encoding's `explicitVal = {text}`, \
             converted to `V` (`FromScalar`). No values array is stored."
        );
        (
            quote! {
                /// Number of stored entries (explicit zeros included), MLIR's `nse`.
                pub fn nse(&self) -> usize {
                    self.nse
                }

                #[doc = #doc]
                pub fn explicit_value(&self) -> V
                where
                    V: Copy,
                {
                    self.explicit
                }
            },
            quote! {
                fn value_slice(&self) -> &[V] {
                    &[]
                }
                fn explicit_value(&self) -> Option<&V> {
                    Some(&self.explicit)
                }
            },
        )
    } else {
        (
            quote! {
                /// Number of stored entries (explicit zeros included), MLIR's `nse`.
                pub fn nse(&self) -> usize {
                    self.values.len()
                }

                /// The values array, `nse()` elements in storage order.
                pub fn values(&self) -> &[V] {
                    &self.values
                }
            },
            quote! {
                fn value_slice(&self) -> &[V] {
                    &self.values
                }
            },
        )
    };
    // an all-dense format is a dense layout: the order of `DenseArray<V, Name>` kernel operands
    let static_order = match decl.encoding.dense_minor_to_major() {
        Some(order) => {
            let order = order
                .into_iter()
                .map(proc_macro2::Literal::usize_unsuffixed);
            quote! {
                impl<V> #rt::layout::StaticOrder for #name<V> {
                    const MINOR_TO_MAJOR: &'static [usize] = &[#(#order),*];
                }
            }
        }
        None => TokenStream::new(),
    };
    Ok(quote! {
        impl<V> #name<V> {
            /// Number of dimensions.
            pub const DIM_RANK: usize = #dim_rank;
            /// Number of storage levels.
            pub const LVL_RANK: usize = #lvl_rank;
            #static_shape_const
            /// The encoding in MLIR's canonical form.
            pub const ENCODING: &'static str = #canonical;
            /// The level types, outermost first.
            pub const LVL_TYPES: [ir::LevelType; #lvl_rank] = [#(#lvl_types),*];

            /// The encoding as the semantic IR (the verified value, built as data: nothing is
            /// parsed at run time; [`Self::ENCODING`] is its canonical text).
            pub fn encoding() -> ir::Encoding {
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

            #value_accessors

            /// The positions array of level `lvl`; `None` if the level stores none.
            pub fn positions(&self, lvl: usize) -> Option<&[#pos_ty]> {
                match lvl {
                    #( #pos_levels => Some(&self.#pos_fields), )*
                    _ => None,
                }
            }

            /// The coordinate buffer owned by level `lvl`; `None` if the level owns none (or packs
            /// its coordinates below a byte: see `SparseStorage::coordinate_view`). In an
            /// array-of-structs COO region the region's first level owns one buffer interleaving
            /// the coordinates of all its levels, entry by entry.
            pub fn coordinates(&self, lvl: usize) -> Option<&[#crd_ty]> {
                match lvl {
                    #( #crd_levels => Some(&self.#crd_fields), )*
                    _ => None,
                }
            }

            /// Bytes held by the position, coordinate and value arrays (a format with
            /// `explicitVal` holds no value array).
            pub fn memory_bytes(&self) -> usize {
                #rt::storage::memory_bytes(self)
            }

            /// Checks every storage invariant (see `sparse_runtime::storage::validate`).
            ///
            /// Errors: `StorageError::Invariant` naming the invariant, level and position.
            pub fn validate(&self) -> Result<(), StorageError> {
                #rt::storage::validate(self)
            }
        }

        impl<V> #rt::SparseStorage for #name<V> {
            type Value = V;
            fn dim_shape(&self) -> &[usize] {
                &self.dim_shape
            }
            fn lvl_sizes(&self) -> &[usize] {
                &self.lvl_sizes
            }
            fn lvl_types(&self) -> &[ir::LevelType] {
                &Self::LVL_TYPES
            }
            fn position_buffer(&self, l: usize) -> Option<#rt::IndexSlice<'_>> {
                self.positions(l).map(<#pos_ty as #rt::Index>::slice)
            }
            fn coordinate_buffer(&self, l: usize) -> Option<#rt::IndexSlice<'_>> {
                self.coordinates(l).map(<#crd_ty as #rt::Index>::slice)
            }
            #value_slice
            #coordinate_view
            #ell_levels
        }

        #static_order
    })
}

/// The struct and its `Parts` (outside the `const _` block: `rt` is the runtime's full path).
pub(super) fn emit_structs(cx: &Ctx) -> Result<TokenStream, CodegenError> {
    let Ctx {
        decl,
        e,
        name,
        vis,
        attrs,
        ctxs,
        parts,
        value_type,
        field_names,
        field_types,
        field_docs,
        ..
    } = cx;
    let (dim_rank, lvl_rank, batched) = (cx.dim_rank, cx.lvl_rank, cx.batched);
    let canonical = decl.encoding.to_string();
    let batch_decl = if batched {
        quote! {
            /// Global stored positions per level (over all batches).
            counts: [usize; #lvl_rank],
            /// Number of batches (product of the batch level sizes).
            batches: usize,
        }
    } else {
        quote!()
    };
    let parts_doc = format!(" The arrays of a [`{name}`], taken apart by `into_raw_parts` and given to `from_raw_parts`: the same fields, public.");
    let parts_doc = if cx.explicit().is_some() {
        format!("{parts_doc} A pattern (`explicitVal`): no values, so no value type parameter.")
    } else {
        parts_doc
    };
    let doc_separator = if attrs.is_empty() {
        quote!()
    } else {
        quote!(#[doc = ""])
    };
    let doc_encoding = format!(" Encoding: `{canonical}`.");
    let explicit = cx.explicit().is_some();
    let values_doc = if explicit {
        "no values array".to_string()
    } else {
        "values".to_string()
    };
    let doc_fields = format!(
        " Stored arrays: {}{values_doc}.",
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

    // what a pattern holds instead of values, and the implicit value of the entries not stored
    let mut doc_values = Vec::new();
    if let Some(v) = &e.explicit_val {
        doc_values.push(format!(
            " Every stored entry holds `explicitVal = {v}` (a pattern: `explicit_value()`, \
             converted to `V`); constructors refuse an entry with another value \
             (`StorageError::ExplicitValueMismatch`)."
        ));
    }
    if e.explicit_val.is_some() || e.implicit_val.is_some() {
        let declared = e
            .implicit_val
            .as_ref()
            .map_or_else(String::new, |v| format!(": `implicitVal = {v}`"));
        doc_values.push(format!(
            " Entries not stored hold the implicit value zero{declared} (the only implicit \
             value MLIR allows), which nothing stores."
        ));
    }
    if let Some(q) = &decl.quant {
        let axis = match q.axis {
            Some(a) => format!("per axis {a}, pair chosen by the dimension coordinate on it"),
            None => "per tensor".to_string(),
        };
        doc_values.push(format!(
            " Uniform quantized ({axis}): `values` are the storage integers (`{}`, within \
             `[STORAGE_MIN, STORAGE_MAX]` = `[{}, {}]`), each meaning the real \
             `scale * (q - zero_point)` (`QUANT_PARAMS`); `from_coo_real` / `from_dense_real` \
             quantize real `f32` values as StableHLO's `uniform_quantize`, `dequantized()` / \
             `to_dense_real()` read them back. The built-in kernels (`spmv`, ...) are generic \
             over `V` and compute on what is stored (run them on `dequantized()`); a `kernel` \
             item of `sparse_format!` over this format dequantizes its loads.",
            q.storage, q.min, q.max
        ));
    }
    let doc_values: Vec<TokenStream> = doc_values
        .iter()
        .map(|d| quote!(#[doc = ""] #[doc = #d]))
        .collect();
    // a pattern's `Parts` holds no values, so it has no value type parameter
    let (values_field, parts_values, parts_generics) = if explicit {
        (
            quote! {
                explicit: V,
                nse: usize,
            },
            quote!(),
            quote!(),
        )
    } else {
        (
            quote!(values: ::std::vec::Vec<V>,),
            quote! {
                /// One value per stored position of the last level.
                pub values: ::std::vec::Vec<V>,
            },
            quote!(<V = #value_type>),
        )
    };
    Ok(quote! {
        #(#attrs)*
        #doc_separator
        #[doc = #doc_encoding]
        #[doc = ""]
        #[doc = #doc_fields]
        #(#doc_values)*
        #[derive(Clone, Debug, PartialEq)]
        #vis struct #name<V = #value_type> {
            dim_shape: [usize; #dim_rank],
            lvl_sizes: [usize; #lvl_rank],
            #( #field_names: #field_types, )*
            #values_field
            #batch_decl
        }

        #[doc = #parts_doc]
        #[derive(Clone, Debug, PartialEq)]
        #vis struct #parts #parts_generics {
            /// Dimension sizes.
            pub dim_shape: [usize; #dim_rank],
            #(
                #[doc = #field_docs]
                pub #field_names: #field_types,
            )*
            #parts_values
        }
    })
}
