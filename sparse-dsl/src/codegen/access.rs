//! Reading a stored tensor: `iter`, `iter_levels`, `for_each` (nested loops), `get` (locate),
//! `to_dense`, `to_coo`, `convert`, and the `DimAccess` impl (`iter` walks the levels with the
//! runtime's `LevelIter`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::Ctx;

/// Iteration, lookup and the conversions out.
pub(super) fn emit(cx: &Ctx) -> TokenStream {
    let Ctx {
        name,
        rt,
        counting,
        cs,
        p_last,
        ..
    } = cx;
    let (dim_rank, lvl_rank, counting) = (cx.dim_rank, cx.lvl_rank, *counting);
    let nest = |inner, locate| cx.nest(inner, locate);
    // a pattern (`explicitVal`) gives its one constant for every stored entry
    let (value_at_last, value_at) = if cx.explicit().is_some() {
        (
            quote!(&self.explicit),
            quote!(|(lc, _)| (lc, &self.explicit)),
        )
    } else {
        (
            quote!(&self.values[#p_last]),
            quote!(|(lc, p)| (lc, &self.values[p])),
        )
    };
    let for_each_body = nest(
        quote!(f(Self::lvl_to_dim(&[#(#cs),*]), #value_at_last);),
        false,
    );
    let mut get_body = nest(quote!(return Some(#value_at_last);), true);
    let compressed = compressed_arrays(cx);
    if let Some((cl, (_, k))) = counting {
        // `get` tries every slice of the counting level.
        let ccl = format_ident!("c{}", cl);
        get_body = quote! {
            for #ccl in 0..#k {
                #get_body
            }
        };
    }
    quote! {
        impl<V> #name<V> {
            /// Stored entries in storage order as `(dimension coordinates, &value)`.
            pub fn iter(&self) -> impl Iterator<Item = ([usize; #dim_rank], &V)> + '_ {
                self.iter_levels().map(|(lc, v)| (Self::lvl_to_dim(&lc), v))
            }

            /// Stored entries in storage order as `(level coordinates, &value)`.
            pub fn iter_levels(&self) -> impl Iterator<Item = ([usize; #lvl_rank], &V)> + '_ {
                #rt::storage::LevelIter::new(self).map(move #value_at)
            }

            /// Calls `f(dimension coordinates, &value)` for every stored entry in storage order
            /// (nested loops, faster than [`Self::iter`]).
            pub fn for_each(&self, mut f: impl FnMut([usize; #dim_rank], &V)) {
                #for_each_body
            }

            /// The value stored at `coords`; `None` if nothing is stored there or `coords` is out
            /// of range. With stored duplicates, the first in storage order.
            #[allow(unreachable_code)]
            pub fn get(&self, coords: [usize; #dim_rank]) -> Option<&V> {
                if coords.iter().zip(self.dim_shape.iter()).any(|(c, s)| c >= s) {
                    return None;
                }
                let [#(#cs),*] = Self::dim_to_lvl(&coords);
                #get_body
                None
            }
        }

        impl<V: #rt::Value> #name<V> {
            /// The dense tensor, row-major (last dimension fastest); stored duplicates are summed.
            ///
            /// Errors: `StorageError::ShapeOverflow` if the
            /// element count does not fit `usize`.
            pub fn to_dense(&self) -> Result<Vec<V>, StorageError> {
                #rt::generated::to_dense(self)
            }

            /// All stored entries (explicit zeros included) as a COO tensor in storage order.
            pub fn to_coo(&self) -> #rt::CooTensor<V> {
                #rt::generated::to_coo(self, self.nse())
            }

            /// The same tensor in another format `T` (any struct `sparse_format!` generates with
            /// the same value type), re-assembled from the stored entries that are not zero:
            /// explicit zeros of this format (blocks, padding, dense levels) are not carried over,
            /// as in `DynamicStorage::convert`.
            ///
            /// Errors: as `T`'s `from_coo` (rank, shape, block size, width, n:m block overflow).
            pub fn convert<T: #rt::storage::FromCoo<V>>(&self) -> Result<T, StorageError> {
                #rt::generated::convert(self)
            }
        }

        impl<V> #rt::generated::Entries<#dim_rank> for #name<V> {
            type Value = V;
            fn shape_array(&self) -> [usize; #dim_rank] {
                self.dim_shape
            }
            fn visit(&self, f: impl FnMut([usize; #dim_rank], &V)) {
                self.for_each(f);
            }
            #compressed
        }

        impl<V> #rt::slice::DimAccess for #name<V> {
            type Value = V;
            fn dims(&self) -> &[usize] {
                &self.dim_shape
            }
            fn entries(&self) -> Box<dyn Iterator<Item = (Vec<usize>, &V)> + '_> {
                Box::new(self.iter().map(|(c, v)| (c.to_vec(), v)))
            }
            fn lookup(&self, coords: &[usize]) -> Option<&V> {
                self.get(<[usize; #dim_rank]>::try_from(coords).ok()?)
            }
        }
    }
}

/// `Entries::compressed` for a two-level `dense, compressed` format (ordered and unique, its
/// own coordinate array of a byte width, a permutation of the dimensions as its map, no slices,
/// no batch): its arrays, which a conversion reads directly. Nothing for any other format (the
/// trait's default, `None`).
fn compressed_arrays(cx: &Ctx) -> TokenStream {
    use crate::ir::{AffineExpr, LevelFormat};
    let e = &cx.e;
    let t = &e.lvl_types;
    let dims: Vec<usize> = e
        .dim_to_lvl
        .results
        .iter()
        .filter_map(|x| match x {
            AffineExpr::Var(d) => Some(*d),
            _ => None,
        })
        .collect();
    let applies = t.len() == 2
        && cx.dim_rank == 2
        && t[0].format == LevelFormat::Dense
        && t[1].format == LevelFormat::Compressed
        && t.iter().all(|x| x.is_ordered() && x.is_unique())
        && e.owns_crd_buffer(1)
        && matches!(e.crd_width, 0 | 8 | 16 | 32 | 64)
        && e.dim_to_lvl.num_symbols == 0
        && cx.declared_slices.is_none()
        && !cx.batched
        && e.explicit_val.is_none()
        && (dims == [0, 1] || dims == [1, 0]);
    if !applies {
        return TokenStream::new();
    }
    let rt = &cx.rt;
    let (d0, d1) = (dims[0], dims[1]);
    quote! {
        fn compressed(&self) -> Option<#rt::generated::Compressed<'_, V>> {
            Some(#rt::generated::Compressed {
                dims: [#d0, #d1],
                positions: #rt::Index::slice(&self.pos_1),
                coordinates: #rt::Index::slice(&self.crd_1),
                values: &self.values,
            })
        }
    }
}
