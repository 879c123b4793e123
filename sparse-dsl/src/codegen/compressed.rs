//! `compressed`: `pos` (parent-size + 1 entries) and `crd`; the segment under parent `q` is
//! `crd[pos[q] .. pos[q + 1]]`, segments back to back.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::level::{is_root, output_buffer, to_index, Insert, InsertNames, LevelCtx, LevelGen};

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
        if is_root(&parent) {
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
    fn insert(&self, cx: &LevelCtx, names: &InsertNames) -> Option<Insert> {
        let loc = cx.crd.as_ref()?;
        let unique = cx.lt.is_unique();
        if cx.batched || cx.packed() || (unique && loc.stride != 1) {
            return None;
        }
        let (pos, crd) = (names.pos.as_ref()?, names.crd.as_ref()?);
        let (pos_ty, crd_ty) = (&cx.pos_ty, &cx.crd_ty);
        let InsertNames {
            q,
            parent,
            c,
            parents,
            ..
        } = names;
        let stride = loc.stride;
        // positions stored so far (an AoS region interleaves `stride` coordinates per position)
        let len = if stride == 1 {
            quote!(#crd.len())
        } else {
            quote!(#crd.len() / #stride)
        };
        let end = to_index(pos_ty, len.clone());
        let root = is_root(parent);
        // the output's previous arrays tell how much room to reserve (a kernel run again on
        // similar operands then fills them without growing)
        let (base, rt, reuse) = (&cx.base, &cx.rt, names.reuse.as_ref());
        let pos_field = cx.pos_field.as_ref()?;
        let mut init = match (root, reuse) {
            (true, None) => quote!(let mut #pos: ::std::vec::Vec<#pos_ty> = ::std::vec![0];),
            (true, Some(_)) => {
                let buffer = output_buffer(rt, pos, pos_ty, base, pos_field, reuse);
                quote! {
                    #buffer
                    #pos.push(0);
                }
            }
            (false, _) => output_buffer(rt, pos, pos_ty, base, pos_field, reuse),
        };
        if loc.owner {
            init.extend(output_buffer(rt, crd, crd_ty, base, &loc.field, reuse));
        }
        // the segments of parents up to this one start here
        let open = if root {
            TokenStream::new()
        } else {
            quote! {
                while #pos.len() <= #parent {
                    #pos.push(#end);
                }
            }
        };
        let push = {
            let v = to_index(crd_ty, c.clone());
            quote!(#crd.push(#v);)
        };
        let step = if unique && !cx.is_last() {
            // the coordinate repeats while the entries below it arrive
            let fresh = if root {
                quote!(#crd.is_empty())
            } else {
                quote!(#crd.len() == #pos[#parent].index())
            };
            quote! {
                if #fresh || #crd[#crd.len() - 1].index() != #c {
                    #push
                }
                let #q = #crd.len() - 1;
            }
        } else if cx.is_last() {
            push
        } else {
            quote! {
                let #q = #len;
                #push
            }
        };
        let close = if root {
            quote!(#pos.push(#end);)
        } else {
            quote! {
                while #pos.len() <= #parents {
                    #pos.push(#end);
                }
            }
        };
        // a segment of the last level takes a sorted run of coordinates in one call
        let extend = (cx.is_last() && stride == 1).then(|| {
            let coords = &names.coords;
            if crd_ty.to_string() == "usize" {
                quote!(#crd.extend_from_slice(#coords);)
            } else {
                quote!(#crd.extend(#coords.iter().map(|&c| c as #crd_ty));)
            }
        });
        let check = position_width_check(cx, &len);
        let finish = quote! {
            #close
            #check
        };
        Some(Insert {
            check: coordinate_width_check(cx),
            init,
            open,
            step,
            extend,
            finish,
            count: len,
            position: None,
        })
    }
}

/// The bits of index type `ty` when it is narrower than `usize` on 64-bit targets.
pub(crate) fn narrow_bits(ty: &TokenStream) -> Option<u32> {
    match ty.to_string().as_str() {
        "u8" => Some(8),
        "u16" => Some(16),
        "u32" => Some(32),
        _ => None,
    }
}

/// Before insertion: `StorageError::WidthOverflow` when the level's coordinates may not fit
/// `crdWidth` (its size exceeds what the width addresses).
pub(super) fn coordinate_width_check(cx: &LevelCtx) -> TokenStream {
    let Some(width) = narrow_bits(&cx.crd_ty) else {
        return TokenStream::new();
    };
    let width_lit = proc_macro2::Literal::u32_unsuffixed(width);
    let (rt, ty, size) = (&cx.rt, &cx.crd_ty, &cx.size);
    let l = proc_macro2::Literal::usize_unsuffixed(cx.l);
    quote! {
        if #size > #ty::MAX as usize + 1 {
            return ::core::result::Result::Err(#rt::StorageError::WidthOverflow {
                level: #l,
                kind: #rt::BufferKind::Coordinate,
                value: #size - 1,
                width: #width_lit,
            });
        }
    }
}

/// After insertion: `StorageError::WidthOverflow` when the last position (`len`) does not fit
/// `posWidth`.
fn position_width_check(cx: &LevelCtx, len: &TokenStream) -> Option<TokenStream> {
    let width = narrow_bits(&cx.pos_ty)?;
    let width_lit = proc_macro2::Literal::u32_unsuffixed(width);
    let (rt, ty) = (&cx.rt, &cx.pos_ty);
    let l = proc_macro2::Literal::usize_unsuffixed(cx.l);
    Some(quote! {
        if #len > #ty::MAX as usize {
            return ::core::result::Result::Err(#rt::StorageError::WidthOverflow {
                level: #l,
                kind: #rt::BufferKind::Position,
                value: #len,
                width: #width_lit,
            });
        }
    })
}
