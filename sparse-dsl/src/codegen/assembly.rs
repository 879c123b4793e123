//! Assembly: `from_coo`, `from_coo_tensor`, `from_dense`, the raw parts (`into_raw_parts`,
//! `from_raw_parts`, `from_raw_parts_unchecked`) and the `FromCoo` impl. Entries are assembled
//! by the runtime's one assembly (`generated::assemble`, driven by the encoding's level types);
//! the arrays it builds move into the struct's typed fields without a copy. A format with
//! `explicitVal` checks the values assembly produced against its constant
//! (`generated::check_explicit`) and keeps none of them.

use proc_macro2::TokenStream;
use quote::quote;

use super::{CodegenError, Ctx};

/// The constructors.
pub(super) fn emit(cx: &Ctx) -> Result<TokenStream, CodegenError> {
    let Ctx {
        name,
        rt,
        ctxs,
        parts,
        field_names,
        shape_check,
        batch_init_zero,
        set_counts,
        ..
    } = cx;
    let dim_rank = cx.dim_rank;
    let explicit = cx.explicit();
    // a quantized format's integers must lie in the storage range (when `V` is its storage)
    let qcheck = super::quant::check(cx, quote!(s));
    // a pattern's `Parts` holds no values, so it has no value type parameter
    let parts_ty = if explicit.is_some() {
        quote!(#parts)
    } else {
        quote!(#parts<V>)
    };
    // The struct from its fields: built in place, or completed with the batch counts (and the
    // number of stored entries of a pattern, which has no values to count).
    let (values_field, values_move, set_nse, raw_bound) = match &explicit {
        Some(c) => (
            quote!(explicit: #c, nse: 0,),
            quote!(),
            quote! {
                // unchecked arrays may overflow a count (then `validate` reports it): no panic
                s.nse = #rt::storage::level_counts(&s)
                    .ok()
                    .and_then(|c| c.last().copied())
                    .unwrap_or(0);
            },
            quote!(V: #rt::value::FromScalar),
        ),
        None => (
            quote!(values: parts.values,),
            quote!(values: self.values,),
            quote!(),
            quote!(V),
        ),
    };
    let raw_fields = quote! {
        dim_shape: parts.dim_shape,
        lvl_sizes: Self::lvl_sizes_for(&parts.dim_shape),
        #( #field_names: parts.#field_names, )*
        #values_field
    };
    let raw_struct = if cx.batched || explicit.is_some() {
        quote! {
            let mut s = #name { #raw_fields #batch_init_zero };
            #set_counts
            #set_nse
            s
        }
    } else {
        quote!(#name { #raw_fields })
    };
    // Each field taken out of the assembled arrays `a`.
    let assembled: Vec<TokenStream> = ctxs
        .iter()
        .flat_map(|c| {
            let pos = c.pos_field.as_ref().map(|f| {
                let l = c.l;
                quote!(#f: a.positions(#l)?)
            });
            let crd = c.crd.as_ref().filter(|x| x.owner).map(|x| {
                let (f, l) = (&x.field, c.l);
                quote!(#f: a.coordinates(#l)?)
            });
            pos.into_iter().chain(crd)
        })
        .collect();
    let shape_checks = if shape_check.is_empty() {
        quote!()
    } else {
        quote! {
            let shape = parts.dim_shape;
            #shape_check
        }
    };
    // a pattern keeps none of the values assembly produced: each must equal its constant
    let from_assembled = match &explicit {
        Some(_) => quote! {
            let values = ::core::mem::take(&mut a.values);
            let parts = #parts {
                dim_shape: shape,
                #(#assembled,)*
            };
            let s = Self::from_parts(parts);
            #rt::generated::check_explicit(&s, &values, Self::lvl_to_dim)?;
            Ok(s)
        },
        None => quote! {
            let parts = #parts {
                dim_shape: shape,
                #(#assembled,)*
                values: a.values,
            };
            Ok(Self::from_parts(parts))
        },
    };
    let (explicit_errors, dense_doc) = if explicit.is_some() {
        (
            " `StorageError::ExplicitValueMismatch` naming the first entry in storage order \
             whose value (after duplicates are summed by a unique last level; an explicit zero \
             the format stores, such as a block's fill, counts too) differs from `explicitVal`;",
            " With `explicitVal` every element that is not zero (the implicit value) must equal \
             it, and the format stores the pattern of those elements (a 0/1 matrix for \
             `explicitVal = 1.0`).",
        )
    } else {
        ("", "")
    };
    let from_coo_doc = format!(
        " Errors: `StorageError::ShapeMismatch` if `shape` differs from a declared static \
         shape; `StorageError::BlockShape` if a blocked dimension is not a multiple of its \
         block size; `StorageError::CoordinateOutOfRange` naming the entry, dimension and \
         value; `StorageError::WidthOverflow` naming the level when a position or coordinate \
         does not fit the width;{explicit_errors} as `DynamicStorage::from_coo` for the rest."
    );
    let from_dense_doc = format!(
        " Builds the storage from a dense row-major array (last dimension fastest); zeros are \
         not stored (except where a dense level stores them anyway).{dense_doc}"
    );
    Ok(quote! {
        impl<V> #name<V> {
            /// Takes the storage apart into its arrays (no copy).
            pub fn into_raw_parts(self) -> #parts_ty {
                #parts {
                    dim_shape: self.dim_shape,
                    #( #field_names: self.#field_names, )*
                    #values_move
                }
            }
        }

        impl<#raw_bound> #name<V> {
            /// Builds the storage from arrays without checking them.
            ///
            /// # Safety
            /// The arrays must satisfy every invariant `validate` checks for this format and
            /// `parts.dim_shape` (as `from_raw_parts` verifies); otherwise later calls may panic
            /// or return wrong results.
            pub unsafe fn from_raw_parts_unchecked(parts: #parts_ty) -> Self {
                Self::from_parts(parts)
            }

            /// The struct over `parts`, unchecked (`from_raw_parts` validates it).
            fn from_parts(parts: #parts_ty) -> Self {
                #raw_struct
            }
        }

        impl<V: #rt::Value> #name<V> {
            /// Builds the storage from entries `(dimension coordinates, value)` in any order.
            /// Duplicates are summed when the last level is unique, kept otherwise.
            ///
            #[doc = #from_coo_doc]
            pub fn from_coo(
                shape: [usize; #dim_rank],
                entries: impl IntoIterator<Item = ([usize; #dim_rank], V)>,
            ) -> Result<Self, StorageError> {
                #shape_check
                let a = #rt::generated::assemble(
                    Self::encoding(),
                    shape,
                    Self::lvl_sizes_for(&shape),
                    entries,
                    Self::dim_to_lvl,
                )?;
                let s = Self::from_assembled(shape, a)?;
                #qcheck
                Ok(s)
            }

            /// Builds the storage from entries already in the format's level order, each
            /// coordinate once (what a kernel's in-order output produces), without sorting;
            /// entries out of that order go through [`Self::from_coo`]. Same errors.
            #[doc(hidden)]
            pub fn from_ordered_coo(
                shape: [usize; #dim_rank],
                entries: ::std::vec::Vec<([usize; #dim_rank], V)>,
            ) -> Result<Self, StorageError> {
                #shape_check
                let a = #rt::generated::assemble_in_order(
                    Self::encoding(),
                    shape,
                    Self::lvl_sizes_for(&shape),
                    entries,
                    Self::dim_to_lvl,
                )?;
                Self::from_assembled(shape, a)
            }

            /// [`Self::encoding`], built once per program: a conversion into a small format
            /// would spend a tenth of its time building and dropping it.
            fn encoding_once() -> &'static ir::Encoding {
                static ENCODING: ::std::sync::OnceLock<ir::Encoding> = ::std::sync::OnceLock::new();
                ENCODING.get_or_init(Self::encoding)
            }

            /// The struct over the arrays `assemble` built.
            fn from_assembled(
                shape: [usize; #dim_rank],
                mut a: #rt::generated::Assembled<V>,
            ) -> Result<Self, StorageError> {
                #from_assembled
            }

            /// Builds the storage from a `CooTensor` (e.g. read from a Matrix Market file).
            ///
            /// Errors: `StorageError::RankMismatch` if its rank is not the dimension rank;
            /// otherwise as [`Self::from_coo`].
            pub fn from_coo_tensor(coo: &#rt::CooTensor<V>) -> Result<Self, StorageError> {
                let (shape, entries) = #rt::generated::coo_entries(coo)?;
                Self::from_coo(shape, entries)
            }

            #[doc = #from_dense_doc]
            ///
            /// Errors: `StorageError::LengthMismatch` if `data.len()` is not the product of
            /// `shape`; otherwise as [`Self::from_coo`].
            pub fn from_dense(shape: [usize; #dim_rank], data: &[V]) -> Result<Self, StorageError> {
                Self::from_coo(shape, #rt::generated::dense_entries(shape, data)?)
            }

            /// Builds the storage from arrays and checks them with `validate`.
            ///
            /// Errors: `StorageError::ShapeMismatch` / `StorageError::BlockShape` for a shape the
            /// format cannot hold; `StorageError::Invariant` naming the invariant, level and
            /// position of the first violation (see `sparse_runtime::storage::validate`: among
            /// them `"array lengths fit usize"` for a shape whose arrays cannot be addressed,
            /// the COO tuple order and uniqueness of singleton levels, and the ELL slice layout).
            /// Never panics.
            pub fn from_raw_parts(parts: #parts_ty) -> Result<Self, StorageError> {
                #shape_checks
                let s = Self::from_parts(parts);
                s.validate()?;
                #qcheck
                Ok(s)
            }
        }

        impl<V: #rt::Value> #rt::storage::FromCoo<V> for #name<V> {
            fn from_coo_tensor(coo: &#rt::CooTensor<V>) -> Result<Self, StorageError> {
                #name::from_coo_tensor(coo)
            }

            fn from_entries<const D: usize, S: #rt::generated::Entries<D, Value = V>>(
                s: &S,
            ) -> Result<Self, StorageError> {
                let from = s.shape_array();
                if D != #dim_rank {
                    return Err(StorageError::RankMismatch { expected: #dim_rank, got: D });
                }
                let shape: [usize; #dim_rank] = ::core::array::from_fn(|d| from[d]);
                #shape_check
                let a = #rt::generated::assemble_entries(
                    Self::encoding_once(),
                    shape,
                    Self::lvl_sizes_for(&shape),
                    s,
                    Self::dim_to_lvl,
                )?;
                let s = Self::from_assembled(shape, a)?;
                #qcheck
                Ok(s)
            }
        }
    })
}
