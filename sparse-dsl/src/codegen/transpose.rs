//! Transposes as views between the formats of one declaration block: when format `G`'s
//! encoding is format `F`'s with the two dimensions swapped (CSR and CSC, BSR and BSC, DCSR and
//! DCSC), `F::transpose(self) -> G` moves `F`'s arrays into `G` unchanged: the levels, their
//! types, widths and sizes are the same, only the dimensions they are read as differ (MLIR's
//! dimension-to-level maps make a transpose a change of encoding; the runtime's
//! `DynamicStorage::transpose` is the same rule for the dynamic storage).

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::{CodegenError, Ctx, Declaration};

/// `transpose` methods for every rank-2 declaration of `decls` whose transposed encoding is
/// another declaration's (the first such). Declarations with a static shape or dimension
/// slices take no part (a view type or a fixed shape would need its own rules).
///
/// Errors: as [`super::generate`] for a declaration the generator cannot store.
pub fn emit(decls: &[&Declaration], rt: &TokenStream) -> Result<TokenStream, CodegenError> {
    let plain = |d: &Declaration| {
        d.static_shape.is_none() && d.encoding.dim_slices.is_none() && !d.converted
    };
    let mut out = TokenStream::new();
    for f in decls
        .iter()
        .filter(|d| plain(d) && d.encoding.dim_to_lvl.num_vars == 2)
    {
        let Some(swapped) = f.encoding.permute_dims(&[1, 0]) else {
            continue;
        };
        let Some(g) = decls.iter().find(|g| plain(g) && *g.encoding == swapped) else {
            continue;
        };
        out.extend(method(f, &g.name, rt)?);
    }
    Ok(out)
}

/// `impl F { pub fn transpose(self) -> G }`.
fn method(f: &Declaration, g: &Ident, rt: &TokenStream) -> Result<TokenStream, CodegenError> {
    let cx = Ctx::new(f, rt)?;
    let name = &f.name;
    let fields = &cx.field_names;
    let g_parts = quote::format_ident!("{g}Parts");
    // a pattern (`explicitVal`) moves no values: `G` has the same constant, computed again
    let (values, bound) = if f.encoding.explicit_val.is_some() {
        (quote!(), quote!(V: #rt::value::FromScalar))
    } else {
        (quote!(values: p.values,), quote!(V))
    };
    let doc = format!(
        "The transpose as a view: this storage of `A` is the storage of `Aᵀ` in [`{g}`], whose \
         encoding is this one's with the two dimensions swapped. The arrays move over as they \
         are (same addresses); nothing is copied or sorted."
    );
    Ok(quote! {
        impl<#bound> #name<V> {
            #[doc = #doc]
            pub fn transpose(self) -> #g<V> {
                let p = self.into_raw_parts();
                let parts = #g_parts {
                    dim_shape: [p.dim_shape[1], p.dim_shape[0]],
                    #( #fields: p.#fields, )*
                    #values
                };
                #rt::safety!("the two formats have the same levels (level types, widths and sizes from the swapped shape), so arrays valid for one are valid for the other.");
                unsafe { #g::from_raw_parts_unchecked(parts) }
            }
        }
    })
}
