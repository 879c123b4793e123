//! `singleton`: exactly one coordinate per parent position, no positions. In an array-of-structs
//! COO region its coordinates are interleaved in the buffer of the region's first level.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::compressed::{coordinate_width_check, owned_crd_fields};
use super::level::{output_buffer, to_index, Insert, InsertNames, LevelCtx, LevelGen};

/// The singleton level format.
pub struct Singleton;

impl LevelGen for Singleton {
    fn fields(&self, cx: &LevelCtx) -> Vec<(Ident, TokenStream)> {
        owned_crd_fields(cx)
    }
    fn segment(&self, _cx: &LevelCtx, parent: TokenStream) -> TokenStream {
        quote!((#parent, #parent + 1))
    }
    fn emit_loop(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream {
        let (p, c, parent) = (cx.p(), cx.c(), cx.parent());
        let read = cx.read_crd(&cx.base, &quote!(#p));
        quote! {{
            let #p = #parent;
            let #c = #read;
            #body
        }}
    }
    fn emit_locate(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream {
        let (p, c, parent) = (cx.p(), cx.c(), cx.parent());
        let read = cx.read_crd(&cx.base, &quote!(#p));
        quote! {{
            let #p = #parent;
            if #read == #c {
                #body
            }
        }}
    }
    fn insert(&self, cx: &LevelCtx, names: &InsertNames) -> Option<Insert> {
        if cx.batched || cx.packed() {
            return None;
        }
        let loc = cx.crd.as_ref()?;
        let crd = names.crd.as_ref()?;
        let InsertNames {
            parent, c, parents, ..
        } = names;
        let ty = &cx.crd_ty;
        let mut init = TokenStream::new();
        if loc.owner {
            let (base, f) = (&cx.base, &loc.field);
            init.extend(output_buffer(
                &cx.rt,
                crd,
                ty,
                base,
                f,
                names.reuse.as_ref(),
            ));
        }
        // one coordinate per parent position, in the parent's order
        let v = to_index(ty, c.clone());
        Some(Insert {
            check: coordinate_width_check(cx),
            init,
            step: quote!(#crd.push(#v);),
            count: parents.clone(),
            position: Some(parent.clone()),
            ..Insert::default()
        })
    }
}
