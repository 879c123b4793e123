//! Printing: `Display` as MLIR's `sparse_tensor.print` (the runtime does the work).

use proc_macro2::TokenStream;
use quote::quote;

use super::Ctx;

/// The `Display` impl.
pub(super) fn emit(cx: &Ctx) -> TokenStream {
    let Ctx { name, rt, .. } = cx;
    quote! {
        impl<V: ::core::fmt::Display> ::core::fmt::Display for #name<V> {
            /// MLIR's `sparse_tensor.print` form.
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                #rt::storage::fmt_sparse_tensor(self, f)
            }
        }
    }
}
