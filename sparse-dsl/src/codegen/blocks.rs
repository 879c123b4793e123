//! The blocks of a blocked format as dense views (issue 11, `../shared/reference/
//! dense-layout.md`: "dense blocks stored in a blocked format"): when a format's innermost
//! levels are the `dense` levels `d mod b` of its blocked dimensions (BSR `(i floordiv 2 : dense,
//! j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense)`, BSC, blocks stored
//! column-major), each stored block is a contiguous run of `values`, a dense array in the order
//! of those levels: `block(p)` is that run as the runtime's `layout::DenseView`, its shape the
//! block sizes in dimension order and its `minor_to_major` the block levels innermost first
//! (`[1, 0]` for `i mod 2, j mod 3`, `[0, 1]` for `j mod 3, i mod 2`); `blocks()` pairs every
//! stored block with the dimension coordinates of its first element.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::Ctx;
use crate::ir::{AffineExpr, LevelFormat, LevelProperties};

/// The block levels of `cx`'s encoding: per innermost level, its dimension and block size,
/// outermost first; `None` unless the format stores values, has no slices, batch levels or ELL
/// symbols, and its innermost levels are plain `dense` `d mod b` levels, one per dimension that
/// some level divides (`d floordiv b`) by the same `b`.
fn block_levels(cx: &Ctx) -> Option<Vec<(usize, usize)>> {
    let e = &cx.e;
    if e.explicit_val.is_some()
        || cx.declared_slices.is_some()
        || cx.batched
        || e.dim_to_lvl.num_symbols > 0
    {
        return None;
    }
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    for (lt, r) in e.lvl_types.iter().zip(&e.dim_to_lvl.results).rev() {
        match r {
            AffineExpr::Mod(..)
                if lt.format == LevelFormat::Dense
                    && lt.properties == LevelProperties::default() =>
            {
                let (d, size) = r.as_block()?;
                if blocks.iter().any(|&(x, _)| x == d) {
                    return None;
                }
                blocks.push((d, size));
            }
            _ => break,
        }
    }
    blocks.reverse();
    let outer = &e.dim_to_lvl.results[..e.dim_to_lvl.results.len() - blocks.len()];
    // every blocked dimension is divided above by its block size, and no other is blocked
    let divided: Vec<(usize, usize)> = outer
        .iter()
        .filter(|r| matches!(r, AffineExpr::FloorDiv(..)))
        .filter_map(AffineExpr::as_block)
        .collect();
    let agree = divided.len() == blocks.len() && divided.iter().all(|x| blocks.contains(x));
    let plain = outer
        .iter()
        .all(|r| matches!(r, AffineExpr::Var(_) | AffineExpr::FloorDiv(..)));
    (!blocks.is_empty() && agree && plain).then_some(blocks)
}

/// `block` and `blocks` for a blocked format (see the module doc); nothing otherwise.
pub(super) fn emit(cx: &Ctx) -> TokenStream {
    let Some(blocks) = block_levels(cx) else {
        return TokenStream::new();
    };
    let (name, rt, rank) = (&cx.name, &cx.rt, cx.dim_rank);
    let lit = Literal::usize_unsuffixed;
    let r = lit(rank);
    // shape in dimension order (1 for a dimension no level blocks)
    let shape: Vec<usize> = (0..rank)
        .map(|d| blocks.iter().find(|b| b.0 == d).map_or(1, |b| b.1))
        .collect();
    // fastest first: the block levels innermost first, then the unblocked dimensions
    let mut minor_to_major: Vec<usize> = blocks.iter().rev().map(|b| b.0).collect();
    minor_to_major.extend((0..rank).filter(|d| !blocks.iter().any(|b| b.0 == *d)));
    let mut strides = vec![0; rank];
    let mut step = 1;
    for &d in &minor_to_major {
        strides[d] = step;
        step *= shape[d];
    }
    let size: usize = shape.iter().product();
    let describe = |v: &[usize]| {
        v.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let doc_block = [
        String::from(" The block stored at position `p` of the last level above the blocks (`p` below"),
        format!(" `values().len() / {size}`), as a dense view of its {size} values: shape `[{}]` (block", describe(&shape)),
        format!(" sizes in dimension order), `minor_to_major = [{}]` (the block levels, innermost", describe(&minor_to_major)),
        format!(" first), strides `[{}]` (elements); `None` past the last block.", describe(&strides)),
    ];
    let [shape, minor_to_major, strides] =
        [&shape, &minor_to_major, &strides].map(|v| v.iter().map(|&x| lit(x)).collect::<Vec<_>>());
    let size = lit(size);
    quote! {
        impl<V> #name<V> {
            #(#[doc = #doc_block])*
            pub fn block(&self, p: usize) -> Option<#rt::layout::DenseView<'_, V, #r>> {
                let values = self.values.get(p * #size..(p + 1) * #size)?;
                #rt::layout::DenseView::with_strides(
                    values,
                    [#(#shape),*],
                    [#(#minor_to_major),*],
                    [#(#strides),*],
                )
                .ok()
            }

            /// Every stored block in storage order, with the dimension coordinates of its
            /// first element (each block coordinate times its block size), as
            /// [`Self::block`] views it.
            pub fn blocks(
                &self,
            ) -> impl Iterator<Item = ([usize; #r], #rt::layout::DenseView<'_, V, #r>)> + '_ {
                // a block's first element has every block-level coordinate 0
                self.iter()
                    .step_by(#size)
                    .enumerate()
                    .filter_map(|(p, (origin, _))| Some((origin, self.block(p)?)))
            }
        }
    }
}
