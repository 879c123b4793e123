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
            return quote! {{
                #split
                let __b = if __pp == 0 { 0 } else { __q / __pp };
                (__b * __pc + self.#f[2 * __q].index(), __b * __pc + self.#f[2 * __q + 1].index())
            }};
        }
        if super::level::is_root(&parent) {
            return quote!((self.#f[0].index(), self.#f[1].index()));
        }
        quote!((self.#f[2 * #parent].index(), self.#f[2 * #parent + 1].index()))
    }
    fn emit_loop(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream {
        loop_over_segment(cx, self.segment(cx, cx.parent()), body)
    }
    fn emit_locate(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream {
        locate_in_segment(cx, self.segment(cx, cx.parent()), body)
    }
}
