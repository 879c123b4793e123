//! `dense`: every coordinate of the level present implicitly; stores nothing.
//! Position of coordinate `c` under parent `q` is `q * size + c`.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::level::{LevelCtx, LevelGen};

/// The dense level format.
pub struct Dense;

impl Dense {
    /// Statements adding `n` (an expression) implicit entries below this level: zeros in the
    /// values when this is the last level, else `n` empty segments of the next level.
    fn fill(cx: &LevelCtx, n: TokenStream) -> TokenStream {
        let rt = &cx.rt;
        if cx.is_last() {
            quote! {
                let __t: usize = #n;
                self.values
                    .try_reserve(__t)
                    .map_err(|_| #rt::StorageError::ShapeOverflow { shape: self.lvl_sizes.to_vec() })?;
                let __n = self.values.len() + __t;
                self.values.resize(__n, <V as #rt::num_traits::Zero>::zero());
            }
        } else {
            let next = cx.next_finalize();
            quote!(self.#next(0, #n)?;)
        }
    }
}

impl LevelGen for Dense {
    fn fields(&self, _cx: &LevelCtx) -> Vec<(Ident, TokenStream)> {
        Vec::new()
    }
    fn init(&self, _cx: &LevelCtx) -> Vec<(Ident, TokenStream)> {
        Vec::new()
    }
    fn append_crd(&self, cx: &LevelCtx) -> TokenStream {
        let l = cx.l;
        let fill = Self::fill(cx, quote!(crd - full));
        quote! {
            if crd > full {
                #fill
            }
            self.count[#l] += 1;
            ::core::result::Result::Ok(())
        }
    }
    fn finalize_segment(&self, cx: &LevelCtx) -> TokenStream {
        let rt = &cx.rt;
        let size = &cx.size;
        let fill = Self::fill(cx, quote!(__m));
        quote! {
            if count == 0 {
                return ::core::result::Result::Ok(());
            }
            let __m = count
                .checked_mul(#size - full)
                .ok_or_else(|| #rt::StorageError::ShapeOverflow { shape: self.lvl_sizes.to_vec() })?;
            #fill
            ::core::result::Result::Ok(())
        }
    }
    fn segment(&self, cx: &LevelCtx, parent: TokenStream) -> TokenStream {
        let size = &cx.size;
        quote!((#parent * #size, #parent * #size + #size))
    }
    fn coord(&self, cx: &LevelCtx, parent: TokenStream, p: TokenStream) -> TokenStream {
        let size = &cx.size;
        quote!(#p - #parent * #size)
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
                let __lo = #parent * #size;
                for #c in 0..#size {
                    let #p = __lo + #c;
                    #body
                }
            };
        }
        quote! {
            let __sz = #size;
            let __lo = #parent * __sz;
            for #c in 0..__sz {
                let #p = __lo + #c;
                #body
            }
        }
    }
    fn emit_locate(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream {
        let (p, c, parent, size) = (cx.p(), cx.c(), cx.parent(), &cx.size);
        if cx.l == 0 {
            return quote! {{
                let #p = #c;
                #body
            }};
        }
        quote! {{
            let #p = #parent * #size + #c;
            #body
        }}
    }
}
