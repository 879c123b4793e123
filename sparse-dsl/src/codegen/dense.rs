//! `dense`: every coordinate of the level present implicitly; stores nothing.
//! Position of coordinate `c` under parent `q` is `q * size + c`.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::level::{is_root, Insert, InsertNames, LevelCtx, LevelGen};

/// The dense level format.
pub struct Dense;

impl LevelGen for Dense {
    fn fields(&self, _cx: &LevelCtx) -> Vec<(Ident, TokenStream)> {
        Vec::new()
    }
    fn segment(&self, cx: &LevelCtx, parent: TokenStream) -> TokenStream {
        let size = &cx.size;
        quote!((#parent * #size, #parent * #size + #size))
    }
    fn emit_loop(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream {
        let (p, c, parent, size) = (cx.p(), cx.c(), cx.parent(), &cx.size);
        if cx.l == 0 {
            // the root segment starts at position 0: positions are the coordinates
            return quote! {
                for #c in 0..#size {
                    let #p = #c;
                    #body
                }
            };
        }
        if size.to_string().parse::<usize>().is_ok() {
            // a constant size (block level): no binding for it
            return quote! {
                for #c in 0..#size {
                    let #p = #parent * #size + #c;
                    #body
                }
            };
        }
        quote! {
            let size = #size;
            let lo = #parent * size;
            for #c in 0..size {
                let #p = lo + #c;
                #body
            }
        }
    }
    fn emit_locate(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream {
        let (p, c, parent, size) = (cx.p(), cx.c(), cx.parent(), &cx.size);
        // no block of its own: the names it binds are unique to its level
        if cx.l == 0 {
            return quote! {
                let #p = #c;
                #body
            };
        }
        quote! {
            let #p = #parent * #size + #c;
            #body
        }
    }
    fn insert(&self, cx: &LevelCtx, names: &InsertNames) -> Option<Insert> {
        // nothing stored: the position follows from the parent's
        let InsertNames {
            q,
            parent,
            c,
            parents,
            ..
        } = names;
        let size = &cx.size;
        if is_root(parent) {
            return Some(Insert {
                count: size.clone(),
                position: Some(c.clone()),
                ..Insert::default()
            });
        }
        Some(Insert {
            step: quote!(let #q = #parent * #size + #c;),
            count: quote!(#parents * #size),
            ..Insert::default()
        })
    }
}
