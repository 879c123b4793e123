//! n:m structured sparsity (`structured[n, m]`, `block2_4`): the last level, below dense levels;
//! block `q` (the parent position) owns positions `q * n .. q * n + n`, each holding its in-block
//! coordinate (`0..m`) in `crd`; no positions array. `crdWidth = 2` packs four coordinates per
//! byte (`sparse_runtime::packed::PackedBuffer`).
//!
//! Assembly collects one block's entries in the builder's `pending` list; closing the block
//! writes them padded to `n` with explicit zeros at the lowest free in-block coordinates (more
//! than `n` is `StorageError::NOutOfMOverflow`), exactly as the runtime's n:m level does.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

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

impl NOutOfM {}

impl LevelGen for NOutOfM {
    fn fields(&self, cx: &LevelCtx) -> Vec<(Ident, TokenStream)> {
        owned_crd_fields(cx)
    }
    fn segment(&self, cx: &LevelCtx, parent: TokenStream) -> TokenStream {
        let (n, _) = n_m(cx);
        quote!((#parent * #n, #parent * #n + #n))
    }
    fn emit_loop(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream {
        let (p, c, parent) = (cx.p(), cx.c(), cx.parent());
        let (n, _) = n_m(cx);
        let read = cx.read_crd(&cx.base, &quote!(#p));
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
        let read = cx.read_crd(&cx.base, &quote!(#p));
        quote! {
            for #p in #parent * #n..#parent * #n + #n {
                if #read == #c {
                    #body
                }
            }
        }
    }
}
