//! n:m structured sparsity (`structured[n, m]`, `block2_4`): the last level, below dense levels;
//! block `q` (the parent position) owns positions `q * n .. q * n + n`, each holding its in-block
//! coordinate (`0..m`) in `crd`; no positions array. `crdWidth = 2` packs four coordinates per
//! byte (`sparse_runtime::packed::PackedBuffer`).
//!
//! Assembly collects one block's entries in the builder's `pending` list; closing the block
//! writes them padded to `n` with explicit zeros at the lowest free in-block coordinates (more
//! than `n` is `StorageError::NOutOfMOverflow`), exactly as the runtime's n:m level does.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::compressed::owned_crd_fields;
use super::level::{LevelCtx, LevelGen};
use crate::ir::LevelFormat;

/// The n:m level format.
pub struct NOutOfM;

/// The unit's own format parameters (`n` is also `LevelFormat::n_per_parent`; `m`, the block
/// size, is a parameter of this format only, not a capability).
fn n_m(cx: &LevelCtx) -> (usize, usize) {
    match cx.lt.format {
        LevelFormat::NOutOfM { n, m } => (n as usize, m as usize),
        _ => (1, 1),
    }
}

impl NOutOfM {
    /// The builder method writing one block (`flush_{l}`).
    pub fn flush_method(cx: &LevelCtx) -> TokenStream {
        let rt = &cx.rt;
        let l = cx.l;
        let (n, m) = n_m(cx);
        let f = format_ident!("flush_{}", l);
        let push = cx.push_crd();
        let row = if l >= 2 {
            quote!(self.cursor[#l - 2])
        } else {
            quote!(0usize)
        };
        let block = if l >= 1 {
            quote!(self.cursor[#l - 1])
        } else {
            quote!(0usize)
        };
        quote! {
            fn #f(&mut self) -> ::core::result::Result<(), #rt::StorageError> {
                let pending = ::core::mem::take(&mut self.pending);
                if pending.len() > #n {
                    return ::core::result::Result::Err(#rt::StorageError::NOutOfMOverflow {
                        level: #l, row: #row, block: #block, count: pending.len(), n: #n, m: #m,
                    });
                }
                let mut pads = #n - pending.len();
                let mut it = pending.into_iter().peekable();
                let mut c = 0usize;
                while it.peek().is_some() || pads > 0 {
                    match it.peek() {
                        ::core::option::Option::Some(&(pc, _)) if pc <= c || pads == 0 => {
                            let (crd, v) = it.next().expect("peeked");
                            #push
                            self.values.push(v);
                            c = c.max(crd + 1);
                        }
                        _ => {
                            let crd = c;
                            #push
                            self.values.push(<V as #rt::num_traits::Zero>::zero());
                            pads -= 1;
                            c += 1;
                        }
                    }
                }
                self.count[#l] += #n;
                ::core::result::Result::Ok(())
            }
        }
    }
}

impl LevelGen for NOutOfM {
    fn fields(&self, cx: &LevelCtx) -> Vec<(Ident, TokenStream)> {
        owned_crd_fields(cx)
    }
    fn init(&self, cx: &LevelCtx) -> Vec<(Ident, TokenStream)> {
        self.fields(cx)
            .into_iter()
            .map(|(f, _)| (f, cx.crd_field_init()))
            .collect()
    }
    fn append_crd(&self, cx: &LevelCtx) -> TokenStream {
        let rt = &cx.rt;
        quote! {
            self.pending.push((crd, <V as #rt::num_traits::Zero>::zero()));
            ::core::result::Result::Ok(())
        }
    }
    fn finalize_segment(&self, cx: &LevelCtx) -> TokenStream {
        let f = format_ident!("flush_{}", cx.l);
        quote! {
            let mut blocks = count;
            if !self.pending.is_empty() {
                self.#f()?;
                blocks -= 1;
            }
            for _ in 0..blocks {
                self.#f()?;
            }
            ::core::result::Result::Ok(())
        }
    }
    fn segment(&self, cx: &LevelCtx, parent: TokenStream) -> TokenStream {
        let (n, _) = n_m(cx);
        quote!((#parent * #n, #parent * #n + #n))
    }
    fn coord(&self, cx: &LevelCtx, _parent: TokenStream, p: TokenStream) -> TokenStream {
        cx.read_crd(&quote!(self), &p)
    }
    fn emit_loop(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream {
        let (p, c, parent) = (cx.p(), cx.c(), cx.parent());
        let (n, _) = n_m(cx);
        let read = cx.read_crd(&quote!(self), &quote!(#p));
        quote! {
            for #p in #parent * #n..#parent * #n + #n {
                let #c = #read;
                #body
            }
        }
    }
    fn emit_locate(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream {
        let (p, c, parent) = (cx.p(), cx.c(), cx.parent());
        let (n, _) = n_m(cx);
        let read = cx.read_crd(&quote!(self), &quote!(#p));
        quote! {
            for #p in #parent * #n..#parent * #n + #n {
                if #read == #c {
                    #body
                }
            }
        }
    }
}
