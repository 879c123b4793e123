//! `loose_compressed`: a `(lo, hi)` pair per parent position (`pos` has 2 x parent-size
//! entries) and `crd`; segments may sit in any order with room between them. Assembly lays them
//! back to back.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::compressed::{batch_split, locate_in_segment, loop_over_segment, pos_crd_fields};
use super::level::{LevelCtx, LevelGen};

/// The loose_compressed level format.
pub struct LooseCompressed;

impl LevelGen for LooseCompressed {
    fn fields(&self, cx: &LevelCtx) -> Vec<(Ident, TokenStream)> {
        pos_crd_fields(cx)
    }
    fn segment(&self, cx: &LevelCtx, parent: TokenStream) -> TokenStream {
        let f = cx.pos_field.as_ref().expect("positions");
        if cx.batched {
            // pairs are global-indexed; their values count from batch b's base
            let split = batch_split(cx, parent);
            let (lo, hi) = (
                cx.pos_at(f, quote!(2 * __q)),
                cx.pos_at(f, quote!(2 * __q + 1)),
            );
            return quote! {{
                #split
                let __b = if __pp == 0 { 0 } else { __q / __pp };
                (__b * __pc + #lo, __b * __pc + #hi)
            }};
        }
        if super::level::is_root(&parent) {
            let (lo, hi) = (cx.pos_at(f, quote!(0)), cx.pos_at(f, quote!(1)));
            return quote!((#lo, #hi));
        }
        let (lo, hi) = (
            cx.pos_at(f, quote!(2 * #parent)),
            cx.pos_at(f, quote!(2 * #parent + 1)),
        );
        quote!((#lo, #hi))
    }
    fn emit_loop(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream {
        loop_over_segment(cx, self.segment(cx, cx.parent()), body)
    }
    fn emit_locate(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream {
        locate_in_segment(cx, self.segment(cx, cx.parent()), body)
    }
}
