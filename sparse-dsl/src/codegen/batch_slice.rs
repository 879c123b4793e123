//! Slices (`SLICES`, `view` for a sliced encoding, `slice_dims` for any) and the batch
//! bookkeeping of a format with leading `batch` levels (`Ctx::set_counts`).

use proc_macro2::TokenStream;
use quote::quote;

use super::Ctx;

/// `SLICES` and `view` (sliced encodings only), `slice_dims`.
pub(super) fn emit(cx: &Ctx) -> TokenStream {
    let Ctx {
        name,
        rt,
        declared_slices,
        ..
    } = cx;
    let dim_rank = cx.dim_rank;
    let opt = |v: Option<u64>| match v {
        Some(v) => quote!(Some(#v)),
        None => quote!(None),
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
                pub const SLICES: [ir::DimSlice; #dim_rank] =
                    [#( ir::DimSlice { offset: #o, size: #z, stride: #t } ),*];

                /// The declared slice of this tensor, a view without copying; `dynamic` gives the
                /// `?` values in dimension order (offset, size, stride within a dimension).
                ///
                /// Errors: `StorageError::Slice` naming the dimension for a missing or left-over
                /// dynamic value, a zero size or stride, or a slice past the dimension's end.
                pub fn view(&self, dynamic: &[usize]) -> Result<#rt::slice::SliceView<'_, Self>, StorageError> {
                    #rt::slice::SliceView::new(self, &Self::SLICES, dynamic)
                }
            }
        }
    };
    quote! {
        impl<V> #name<V> {
            #slice_items

            /// A strided view of this tensor through one `DimSlice` per dimension, without
            /// copying; `dynamic` supplies the `?` (`None`) values in order.
            ///
            /// Errors: as `SliceView::new` (`StorageError::RankMismatch`, `StorageError::Slice`).
            pub fn slice_dims(
                &self,
                slices: &[ir::DimSlice],
                dynamic: &[usize],
            ) -> Result<#rt::slice::SliceView<'_, Self>, StorageError> {
                #rt::slice::SliceView::new(self, slices, dynamic)
            }
        }
    }
}
