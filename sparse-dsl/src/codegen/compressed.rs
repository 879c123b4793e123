//! `compressed`: `pos` (parent-size + 1 entries) and `crd`; the segment under parent `q` is
//! `crd[pos[q] .. pos[q + 1]]`, segments back to back.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::level::{LevelCtx, LevelGen};

/// The compressed level format.
pub struct Compressed;

/// Fields of a level with positions and (if it owns them) coordinates.
pub(super) fn pos_crd_fields(cx: &LevelCtx) -> Vec<(Ident, TokenStream)> {
    let mut out = vec![(
        cx.pos_field.clone().expect("positions"),
        cx.pos_field_type(),
    )];
    if let Some(loc) = cx.crd.as_ref().filter(|c| c.owner) {
        out.push((loc.field.clone(), cx.crd_field_type()));
    }
    out
}

/// Statements binding, for global parent position `parent` of a level below batch levels:
/// `__q` (the parent), `__pp` (parents per batch) and `__pc` (positions of this level per batch),
/// read from the struct's `counts` and `batches`.
pub(super) fn batch_split(cx: &LevelCtx, parent: TokenStream) -> TokenStream {
    let base = &cx.base;
    let l = cx.l;
    let parents = if l == 0 {
        quote!(1usize)
    } else {
        quote!(#base.counts[#l - 1])
    };
    quote! {
        let __q: usize = #parent;
        let __nb = #base.batches.max(1);
        let __pp = #parents / __nb;
        let __pc = #base.counts[#l] / __nb;
    }
}

/// A loop over the positions of segment `seg` (an expression `(lo, hi)`), binding `p{l}` and
/// `c{l}` around `body`.
pub(super) fn loop_over_segment(cx: &LevelCtx, seg: TokenStream, body: TokenStream) -> TokenStream {
    let (p, c) = (cx.p(), cx.c());
    let read = cx.read_crd(&cx.base, &quote!(#p));
    quote! {
        let (lo, hi) = #seg;
        for #p in lo..hi {
            let #c = #read;
            #body
        }
    }
}

/// The fields of a level whose only array is the coordinate buffer it may own (singleton, n:m).
pub(super) fn owned_crd_fields(cx: &LevelCtx) -> Vec<(Ident, TokenStream)> {
    match cx.crd.as_ref() {
        Some(loc) if loc.owner => vec![(loc.field.clone(), cx.crd_field_type())],
        _ => Vec::new(),
    }
}

/// Locating `c{l}` in the segment `(lo, hi)`: binary search when the level is ordered and
/// unique with a plain coordinate buffer, else a scan visiting every match.
pub(super) fn locate_in_segment(cx: &LevelCtx, seg: TokenStream, body: TokenStream) -> TokenStream {
    let base = &cx.base;
    let (p, c) = (cx.p(), cx.c());
    let loc = cx.crd.as_ref().expect("coordinates");
    if cx.lt.is_unique() && cx.lt.is_ordered() && loc.stride == 1 {
        let f = &loc.field;
        quote! {{
            let (lo, hi) = #seg;
            if let Ok(k) = #base.#f[lo..hi].binary_search_by(|stored| stored.index().cmp(&#c)) {
                let #p = lo + k;
                #body
            }
        }}
    } else {
        let read = cx.read_crd(&cx.base, &quote!(#p));
        quote! {{
            let (lo, hi) = #seg;
            for #p in lo..hi {
                if #read == #c {
                    #body
                }
            }
        }}
    }
}

impl LevelGen for Compressed {
    fn fields(&self, cx: &LevelCtx) -> Vec<(Ident, TokenStream)> {
        pos_crd_fields(cx)
    }
    fn segment(&self, cx: &LevelCtx, parent: TokenStream) -> TokenStream {
        let f = cx.pos_field.as_ref().expect("positions");
        if cx.batched {
            // batch b's positions sit at b * (parents per batch + 1) and count from b's base
            let split = batch_split(cx, parent);
            let (lo, hi) = (cx.pos_at(f, quote!(__at)), cx.pos_at(f, quote!(__at + 1)));
            return quote! {{
                #split
                let (__b, r) = if __pp == 0 { (0, __q) } else { (__q / __pp, __q % __pp) };
                let __at = __b * (__pp + 1) + r;
                (__b * __pc + #lo, __b * __pc + #hi)
            }};
        }
        if super::level::is_root(&parent) {
            let (lo, hi) = (cx.pos_at(f, quote!(0)), cx.pos_at(f, quote!(1)));
            return quote!((#lo, #hi));
        }
        let (lo, hi) = (
            cx.pos_at(f, quote!(#parent)),
            cx.pos_at(f, quote!(#parent + 1)),
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
