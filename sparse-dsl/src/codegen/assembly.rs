//! Assembly: the builder (MLIR's `appendCrd`/`finalizeSegment` per level, hidden in a
//! `const _` block), `from_coo`, `from_coo_tensor`, `from_dense`, the raw parts
//! (`into_raw_parts`, `from_raw_parts`, `from_raw_parts_unchecked`) and the `FromCoo` impl.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::{encoding_data, n_out_of_m, CodegenError, Ctx};
use sparse_ir::level::{PositionCount, PositionsArray};

/// The builder and the constructors.
pub(super) fn emit(cx: &Ctx) -> Result<TokenStream, CodegenError> {
    let Ctx {
        e,
        name,
        rt,
        gens,
        ctxs,
        bctxs,
        counting,
        builder,
        parts,
        field_names,
        static_shape_check,
        block_checks,
        batch_init_zero,
        set_counts,
        batch_let,
        ..
    } = cx;
    let (dim_rank, lvl_rank, batched, counting) = (cx.dim_rank, cx.lvl_rank, cx.batched, *counting);
    // Inside the `const _` block the runtime is `__rt` (a `use` there), outside its full path.
    let pub_rt = rt;
    let rt = &quote!(__rt);
    let builder_field_types: Vec<TokenStream> = gens
        .iter()
        .zip(bctxs)
        .flat_map(|(g, cx)| g.fields(cx))
        .map(|(_, t)| t)
        .collect();
    let init: Vec<(Ident, TokenStream)> = gens
        .iter()
        .zip(bctxs)
        .flat_map(|(g, cx)| g.init(cx))
        .collect();
    // The struct's fields from the finished builder `b` (batched positions rebased and narrowed).
    let field_inits: Vec<TokenStream> = gens
        .iter()
        .zip(ctxs)
        .flat_map(|(g, cx)| g.fields(cx).into_iter().map(move |(f, _)| (cx, f)))
        .map(|(cx, f)| {
            if batched && cx.pos_field.as_ref() == Some(&f) {
                let l = cx.l;
                let ty = &cx.pos_ty;
                let lt = encoding_data::level_type(&cx.lt, &quote!(#rt::sparse_ir::ir::));
                // rebased and narrowed in place: no second positions buffer
                quote! {{
                    let mut __p: ::std::vec::Vec<usize> = b.#f;
                    #rt::dynamic::rebase_batches_in_place(#l, #lt.format, &mut __p, batches)?;
                    #rt::index::narrow_vec::<#ty>(__p).map_err(|value| #rt::StorageError::WidthOverflow {
                        level: #l, kind: #rt::BufferKind::Position, value, width: <#ty as #rt::Index>::WIDTH,
                    })?
                }}
            } else {
                quote!(b.#f)
            }
        })
        .collect();
    let merge = e.lvl_types.last().is_some_and(|t| t.is_unique());
    let nonordered: Vec<bool> = e.lvl_types.iter().map(|t| !t.is_ordered()).collect();
    let levels: Vec<usize> = (0..lvl_rank).collect();
    let unique: Vec<bool> = e.lvl_types.iter().map(|t| t.is_unique()).collect();
    let append_names: Vec<Ident> = (0..lvl_rank)
        .map(|l| format_ident!("append_crd_{}", l))
        .collect();
    let finalize_names: Vec<Ident> = (0..lvl_rank)
        .map(|l| format_ident!("finalize_segment_{}", l))
        .collect();
    let has_nm = e
        .lvl_types
        .iter()
        .any(|t| t.capabilities().count == PositionCount::NPerParent);
    let has_loose = e
        .lvl_types
        .iter()
        .any(|t| t.capabilities().positions == PositionsArray::LoHiPairs);
    let (pending_decl, pending_init) = if has_nm {
        (
            quote!(pending: ::std::vec::Vec<(usize, V)>,),
            quote!(pending: ::std::vec::Vec::new(),),
        )
    } else {
        (quote!(), quote!())
    };
    let (loose_decl, loose_init) = if has_loose {
        (
            quote!(loose_start: [usize; #lvl_rank],),
            quote!(loose_start: [0; #lvl_rank],),
        )
    } else {
        (quote!(), quote!())
    };
    // Level order, as the dynamic storage does it (counting sort on level 0, stable).
    let order = if nonordered.iter().any(|&b| b) {
        quote! {
            const NONORDERED: [bool; #lvl_rank] = [#(#nonordered),*];
            let order = match #rt::dynamic::nonordered_sort_keys(flat, #lvl_rank, n, &NONORDERED) {
                ::core::option::Option::Some(sort_keys) => #rt::dynamic::level_order(&sort_keys, #lvl_rank, n, n.max(lvl_sizes[0])),
                ::core::option::Option::None => #rt::dynamic::level_order(flat, #lvl_rank, n, lvl_sizes[0]),
            };
        }
    } else {
        quote!(let order = #rt::dynamic::level_order(flat, #lvl_rank, n, lvl_sizes[0]);)
    };
    // The struct from its fields: built in place, or completed with the batch counts.
    let finish = |fields: TokenStream| {
        if batched {
            quote! {{
                let mut s = #name { #fields #batch_init_zero };
                #set_counts
                s
            }}
        } else {
            quote!(#name { #fields })
        }
    };
    let raw_struct = finish(quote! {
        dim_shape: parts.dim_shape,
        lvl_sizes: Self::lvl_sizes_for(&parts.dim_shape),
        #( #field_names: parts.#field_names, )*
        values: parts.values,
    });
    let assembled_struct = finish(quote! {
        dim_shape: shape,
        lvl_sizes,
        #( #field_names: #field_inits, )*
        values: b.values,
    });
    let shape_checks = if static_shape_check.is_empty() && block_checks.is_empty() {
        quote!()
    } else {
        quote! {
            let shape = parts.dim_shape;
            #static_shape_check
            #(#block_checks)*
        }
    };
    let init_names: Vec<&Ident> = init.iter().map(|(f, _)| f).collect();
    let init_exprs: Vec<&TokenStream> = init.iter().map(|(_, x)| x).collect();
    let flush_fns: Vec<TokenStream> = bctxs
        .iter()
        .filter(|c| c.lt.capabilities().count == PositionCount::NPerParent)
        .map(n_out_of_m::NOutOfM::flush_method)
        .collect();
    let push_value = if e
        .lvl_types
        .last()
        .is_some_and(|t| t.capabilities().count == PositionCount::NPerParent)
    {
        quote!(self.pending.last_mut().expect("n:m appended an entry").1 = v;)
    } else {
        quote!(self.values.push(v);)
    };
    // Positions of a level below dense levels only: the final length is known (every parent
    // gets its segment; batch-local compressed positions have one leading 0 per batch), so the
    // builder reserves exactly that and never over-allocates or copies.
    let batch_sizes: Vec<usize> = (0..e
        .lvl_types
        .iter()
        .take_while(|t| t.capabilities().batch)
        .count())
        .collect();
    let reserve_positions: Vec<TokenStream> = ctxs
        .iter()
        .filter(|cx| cx.pos_field.is_some() && e.lvl_types[..cx.l].iter().all(|t| t.is_dense()))
        .map(|cx| {
            let f = cx.pos_field.as_ref().expect("positions");
            let above: Vec<usize> = (0..cx.l).collect();
            let len = if cx.lt.capabilities().positions == PositionsArray::LoHiPairs {
                quote!(__parents.checked_mul(2))
            } else {
                if batch_sizes.is_empty() {
                    quote!(__parents.checked_add(1))
                } else {
                    quote! {
                        __parents.checked_add(
                            #rt::dynamic::checked_product(&[#( lvl_sizes[#batch_sizes] ),*]).map_or(1, |b| b.max(1)),
                        )
                    }
                }
            };
            let parents = match above.as_slice() {
                [] => quote!(let __parents: usize = 1;),
                [l] => quote!(let __parents = lvl_sizes[#l];),
                _ => quote! {
                    let __parents = #rt::dynamic::checked_product(&[#( lvl_sizes[#above] ),*]).map_err(|_| __too_large())?;
                },
            };
            quote! {{
                let __too_large = || #rt::StorageError::ShapeOverflow { shape: lvl_sizes.to_vec() };
                #parents
                let __len = #len.ok_or_else(__too_large)?;
                b.#f.try_reserve_exact(__len.saturating_sub(b.#f.len())).map_err(|_| __too_large())?;
            }}
        })
        .collect();
    // Builder methods (assembly), one pair per level.
    let append_fns: Vec<TokenStream> = gens
        .iter()
        .zip(bctxs)
        .map(|(g, cx)| {
            let f = format_ident!("append_crd_{}", cx.l);
            let body = g.append_crd(cx);
            quote!(fn #f(&mut self, full: usize, crd: usize) -> #rt::generated::Step { #body })
        })
        .collect();
    let finalize_fns: Vec<TokenStream> = gens
        .iter()
        .zip(bctxs)
        .map(|(g, cx)| {
            let f = format_ident!("finalize_segment_{}", cx.l);
            let body = g.finalize_segment(cx);
            quote!(fn #f(&mut self, full: usize, count: usize) -> #rt::generated::Step { #body })
        })
        .collect();
    let mut counting_pass = quote!();
    let (rows_decl, rows_push) = match counting {
        Some((_, (cd, _))) => (
            quote!(let mut entries_rows: ::std::vec::Vec<usize> = ::std::vec::Vec::with_capacity(cap);),
            quote!(entries_rows.push(c[#cd]);),
        ),
        None => (quote!(), quote!()),
    };
    if let Some((cl, (cd, k))) = counting {
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
                return ::core::result::Result::Err(#pub_rt::StorageError::EllRowOverflow { row, count, slices: #k });
            }
            per_row.iter_mut().for_each(|c| *c = 0);
            for (key, &r) in mk.iter_mut().zip(&mrow) {
                key[#cl] = per_row[r];
                per_row[r] += 1;
            }
            let (keys, vals) = (mk, mv);
        };
    }
    Ok(quote! {
        impl<V> #name<V> {
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
                Self::from_parts(parts)
            }
        }

        impl<V: #pub_rt::Value> #name<V> {
            /// Builds the storage from entries `(dimension coordinates, value)` in any order.
            /// Duplicates are summed when the last level is unique, kept otherwise.
            ///
            /// Errors: `StorageError::ShapeMismatch` if `shape` differs from a declared static
            /// shape; `StorageError::BlockShape` if a blocked dimension is not a multiple of its
            /// block size; `StorageError::CoordinateOutOfRange` naming the entry, dimension and
            /// value; `StorageError::WidthOverflow` naming the level when a position or
            /// coordinate does not fit the width.
            pub fn from_coo<I>(shape: [usize; #dim_rank], entries: I) -> ::core::result::Result<Self, #pub_rt::StorageError>
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
                            return ::core::result::Result::Err(#pub_rt::StorageError::CoordinateOutOfRange { entry, dim, coordinate: c[dim], size: shape[dim] });
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
            pub fn from_coo_tensor(coo: &#pub_rt::CooTensor<V>) -> ::core::result::Result<Self, #pub_rt::StorageError> {
                let (shape, entries) = #pub_rt::generated::coo_entries(coo)?;
                Self::from_coo(shape, entries)
            }

            /// Builds the storage from a dense row-major array (last dimension fastest); zeros
            /// are not stored (except where a dense level stores them anyway).
            ///
            /// Errors: `StorageError::LengthMismatch` if
            /// `data.len()` is not the product of `shape`; otherwise as [`Self::from_coo`].
            pub fn from_dense(shape: [usize; #dim_rank], data: &[V]) -> ::core::result::Result<Self, #pub_rt::StorageError> {
                Self::from_coo(shape, #pub_rt::generated::dense_entries(shape, data)?)
            }

            /// Builds the storage from arrays and checks them with `validate`.
            ///
            /// Errors: `StorageError::ShapeMismatch` / `StorageError::BlockShape` for a shape the
            /// format cannot hold; `StorageError::Invariant` naming the invariant, level and
            /// position of the first violation (see `sparse_runtime::storage::validate`: among
            /// them `"array lengths fit usize"` for a shape whose arrays cannot be addressed,
            /// the COO tuple order and uniqueness of singleton levels, and the ELL slice layout).
            /// Never panics.
            pub fn from_raw_parts(parts: #parts<V>) -> ::core::result::Result<Self, #pub_rt::StorageError> {
                #shape_checks
                // the arrays are validated before the struct is returned
                let s = Self::from_parts(parts);
                s.validate()?;
                ::core::result::Result::Ok(s)
            }
        }

        impl<V: #pub_rt::Value> #pub_rt::storage::FromCoo<V> for #name<V> {
            fn from_coo_tensor(coo: &#pub_rt::CooTensor<V>) -> ::core::result::Result<Self, #pub_rt::StorageError> {
                #name::from_coo_tensor(coo)
            }
        }

        // The builder and `assemble`, out of the user's namespace (as `serde_derive` does).
        const _: () = {
            use #pub_rt as __rt;
            #[allow(non_camel_case_types)]
            struct #builder<V> {
                lvl_sizes: [usize; #lvl_rank],
                #( #field_names: #builder_field_types, )*
                values: ::std::vec::Vec<V>,
                #pending_decl
                cursor: [usize; #lvl_rank],
                count: [usize; #lvl_rank],
                #loose_decl
            }

            #[allow(unused_variables)]
            impl<V: #rt::Value> #builder<V> {
                #(#append_fns)*
                #(#finalize_fns)*
                #(#flush_fns)*
            }

            impl<V: #rt::Value> #rt::generated::LevelBuilder<#lvl_rank> for #builder<V> {
                type Value = V;
                const UNIQUE: [bool; #lvl_rank] = [#(#unique),*];
                fn cursor(&mut self) -> &mut [usize; #lvl_rank] {
                    &mut self.cursor
                }
                fn append_crd(&mut self, l: usize, full: usize, crd: usize) -> #rt::generated::Step {
                    match l {
                        #( #levels => self.#append_names(full, crd), )*
                        _ => ::core::result::Result::Ok(()),
                    }
                }
                fn finalize_segment(&mut self, l: usize, full: usize, count: usize) -> #rt::generated::Step {
                    match l {
                        #( #levels => self.#finalize_names(full, count), )*
                        _ => ::core::result::Result::Ok(()),
                    }
                }
                fn push_value(&mut self, v: V) {
                    #push_value
                }
            }

            impl<V> #name<V> {
                /// The struct over `parts`, unchecked (`from_raw_parts` validates it).
                fn from_parts(parts: #parts<V>) -> Self {
                    #raw_struct
                }
            }

            impl<V: #rt::Value> #name<V> {
                fn assemble(
                    shape: [usize; #dim_rank],
                    keys: ::std::vec::Vec<[usize; #lvl_rank]>,
                    vals: ::std::vec::Vec<V>,
                ) -> ::core::result::Result<Self, #rt::StorageError> {
                    let lvl_sizes = Self::lvl_sizes_for(&shape);
                    let n = keys.len();
                    let flat: &[usize] = keys.as_flattened();
                    #order
                    let mut b = #builder::<V> {
                        lvl_sizes,
                        #( #init_names: #init_exprs, )*
                        values: ::std::vec::Vec::with_capacity(n),
                        #pending_init
                        cursor: [0; #lvl_rank],
                        count: [0; #lvl_rank],
                        #loose_init
                    };
                    #(#reserve_positions)*
                    #rt::generated::insert_sorted(&mut b, &keys, &vals, &order, #merge)?;
                    #batch_let
                    ::core::result::Result::Ok(#assembled_struct)
                }
            }
        };
    })
}
