//! `singleton`: exactly one coordinate per parent position, no positions. In an array-of-structs
//! COO region its coordinates are interleaved in the buffer of the region's first level.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::compressed::owned_crd_fields;
use super::level::{LevelCtx, LevelGen};

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
}
