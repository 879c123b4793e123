//! The hand-written SpMV per format family (`spmv`, `spmv_par`): CSR-like row loops, BSR
//! block-row loops, the AoS COO pair walk, and nested loops scattering into `y` for the rest.
//! They are the baseline a future sparsifier must match (same results, same speed).
//!
//! The family detection below is the one place in the code generator besides the registration
//! in `level.rs` (and the spelling of level types in `encoding_data.rs`) that tests format
//! names: each family is a hand-written kernel for a named format pattern (CSR, BSR, COO), not a
//! capability-driven lowering. It goes when the sparsifier replaces these kernels.

use proc_macro2::TokenStream;
use quote::quote;

use super::Ctx;
use crate::ir::{AffineExpr, LevelFormat};

/// `spmv_rows` (row formats), `spmv_par` and `spmv` for rank-2 formats; nothing otherwise.
pub(super) fn emit(cx: &Ctx) -> TokenStream {
    let Ctx {
        e,
        name,
        rt,
        gens,
        ctxs,
        cs,
        p_last,
        ..
    } = cx;
    let (dim_rank, lvl_rank) = (cx.dim_rank, cx.lvl_rank);
    let nest = |inner, locate| cx.nest(inner, locate);
    // SpMV: a row-accumulating loop when level 0 is dense over dimension 0 and level 1 is the
    // last level over dimension 1 (CSR and loose CSR); otherwise nested loops scattering into y.
    let spmv = if dim_rank == 2 {
        let perm = e.dim_permutation();
        let csr_like = lvl_rank == 2
            && perm.as_deref() == Some(&[0, 1][..])
            && e.lvl_types[0].format == LevelFormat::Dense
            && e.lvl_types[1].has_positions();
        // BSR with row-major blocks: (i floordiv B : dense, j floordiv C : compressed,
        // i mod B : dense, j mod C : dense) -> constant-size block loops.
        let block = |r: &AffineExpr, div: bool| -> Option<(usize, usize)> {
            match (r, div) {
                (AffineExpr::FloorDiv(a, b), true) | (AffineExpr::Mod(a, b), false) => Some((
                    a.as_var()?,
                    usize::try_from(b.as_constant()?).ok().filter(|&b| b > 0)?,
                )),
                _ => None,
            }
        };
        let res = &e.dim_to_lvl.results;
        let bsr = if lvl_rank == 4
            && e.lvl_types[0].format == LevelFormat::Dense
            && e.lvl_types[1].format == LevelFormat::Compressed
            && e.lvl_types[2].format == LevelFormat::Dense
            && e.lvl_types[3].format == LevelFormat::Dense
        {
            match (
                block(&res[0], true),
                block(&res[1], true),
                block(&res[2], false),
                block(&res[3], false),
            ) {
                (Some((0, b)), Some((1, c)), Some((0, b2)), Some((1, c2)))
                    if b == b2 && c == c2 =>
                {
                    Some((b, c))
                }
                _ => None,
            }
        } else {
            None
        };
        // Sorted COO, array of structs: (d : compressed(nonunique), d' : singleton), one
        // interleaved coordinate buffer walked in pairs.
        let coo_aos = if lvl_rank == 2
            && e.lvl_types[0].format == LevelFormat::Compressed
            && !e.lvl_types[0].is_unique()
            && e.lvl_types[1].format == LevelFormat::Singleton
            && !e.lvl_types[1].properties.soa
            && !ctxs[0].packed()
        {
            match perm.as_deref() {
                Some([0, 1]) => Some((
                    true,
                    ctxs[0].crd.as_ref().expect("coordinates").field.clone(),
                )),
                Some([1, 0]) => Some((
                    false,
                    ctxs[0].crd.as_ref().expect("coordinates").field.clone(),
                )),
                _ => None,
            }
        } else {
            None
        };
        // Row formats (CSR, loose CSR, BSR) get `(rows per unit, segment starts are
        // non-decreasing)` here: their kernel runs on any range of rows, in parallel too.
        let mut row_kernel: Option<(usize, bool)> = None;
        let kernel = if let Some((bb, cc)) = bsr {
            let seg = gens[1].segment(&ctxs[1], quote!(ib));
            let crd_field = &ctxs[1]
                .crd
                .as_ref()
                .expect("compressed level has coordinates")
                .field;
            let bc = bb * cc;
            row_kernel = Some((bb, e.lvl_types[1].format == LevelFormat::Compressed));
            quote! {
                let vals = &self.values[..];
                let crd = &self.#crd_field[..];
                for (k, yb) in y.chunks_exact_mut(#bb).enumerate() {
                    let ib = row0 + k;
                    let (lo, hi) = #seg;
                    let mut acc = [<V as #rt::num_traits::Zero>::zero(); #bb];
                    for p in lo..hi {
                        let jb = crd[p].index();
                        let block: &[V; #bc] = vals[p * #bc..p * #bc + #bc].try_into().expect("block");
                        let xb: &[V; #cc] = x[jb * #cc..jb * #cc + #cc].try_into().expect("block of x");
                        for ii in 0..#bb {
                            for jj in 0..#cc {
                                acc[ii] += block[ii * #cc + jj] * xb[jj];
                            }
                        }
                    }
                    yb.copy_from_slice(&acc);
                }
            }
        } else if let Some((row_first, crd0)) = coo_aos {
            let (i, j) = if row_first {
                (quote!(c[0]), quote!(c[1]))
            } else {
                (quote!(c[1]), quote!(c[0]))
            };
            quote! {
                for yi in y.iter_mut() {
                    *yi = <V as #rt::num_traits::Zero>::zero();
                }
                for (c, v) in self.#crd0.chunks_exact(2).zip(self.values.iter()) {
                    let (i, j) = (#i.index(), #j.index());
                    debug_assert!(i < y.len() && j < x.len());
                    #rt::safety!("every stored coordinate is below its level size (`from_coo` builds such arrays, `from_raw_parts` validates them, `from_raw_parts_unchecked` makes it the caller's promise), and the level sizes are the dimension sizes `y.len()` and `x.len()`, checked by `check_spmv` before this loop.");
                    unsafe { *y.get_unchecked_mut(i) += *v * *x.get_unchecked(j) };
                }
            }
        } else if csr_like {
            let seg = gens[1].segment(&ctxs[1], quote!(i));
            let crd_field = &ctxs[1]
                .crd
                .as_ref()
                .expect("compressed level has coordinates")
                .field;
            row_kernel = Some((1, e.lvl_types[1].format == LevelFormat::Compressed));
            quote! {
                let vals = &self.values[..];
                let crd = &self.#crd_field[..];
                for (k, yi) in y.iter_mut().enumerate() {
                    let i = row0 + k;
                    let (lo, hi) = #seg;
                    let mut acc = <V as #rt::num_traits::Zero>::zero();
                    for (v, c) in vals[lo..hi].iter().zip(&crd[lo..hi]) {
                        let j = c.index();
                        debug_assert!(j < x.len());
                        #rt::safety!("every coordinate of level 1 is below its level size `shape()[1]`, which equals `x.len()` (`check_spmv` checks it before this kernel runs): `from_coo` builds such arrays, `from_raw_parts` validates them (invariant 5.5) and `from_raw_parts_unchecked` makes it the caller's promise.");
                        acc += *v * unsafe { *x.get_unchecked(j) };
                    }
                    *yi = acc;
                }
            }
        } else {
            let scatter = nest(
                quote! {
                    let [i, j] = Self::lvl_to_dim(&[#(#cs),*]);
                    y[i] += self.values[#p_last] * x[j];
                },
                false,
            );
            quote! {
                for yi in y.iter_mut() {
                    *yi = <V as #rt::num_traits::Zero>::zero();
                }
                #scatter
            }
        };
        let checks = quote!(#rt::generated::check_spmv(self.dim_shape, x.len(), y.len())?;);
        let (serial_body, rows_fn, par_body) = match &row_kernel {
            Some((unit, monotonic)) => {
                let unit = proc_macro2::Literal::usize_unsuffixed(*unit);
                let before = match (&ctxs[1].pos_field, *monotonic) {
                    // entries before row r: the compressed level's pos[r] (defined for r <= rows)
                    (Some(pf), true) => quote!(|r| self.#pf[r].index()),
                    _ => quote!(|r| r),
                };
                (
                    quote!(self.spmv_rows(x, y, 0);),
                    quote! {
                        /// The row kernel: `y` holds rows (block rows for BSR) `row0..`, overwritten.
                        #[allow(clippy::needless_range_loop)]
                        fn spmv_rows(&self, x: &[V], y: &mut [V], row0: usize) {
                            #kernel
                        }
                    },
                    quote! {
                        #rt::generated::par_rows(y, #unit, #before, |chunk, row0| self.spmv_rows(x, chunk, row0));
                    },
                )
            }
            None => (kernel.clone(), quote!(), quote!(self.spmv(x, y)?;)),
        };
        quote! {
            #rows_fn

            /// `y = A · x` in parallel (rayon): rows are split into ranges of about equal stored
            /// entries, one task each. Formats that scatter into `y` (COO, column-major ones) run
            /// the serial [`Self::spmv`]. Same operands and errors as `spmv`; the result is
            /// identical (each row is summed in the same order).
            pub fn spmv_par(&self, x: &[V], y: &mut [V]) -> Result<(), StorageError> {
                #checks
                #par_body
                Ok(())
            }

            /// `y = A · x`: `x` has `shape()[1]` elements, `y` has `shape()[0]` and is overwritten.
            ///
            /// Errors: `StorageError::LengthMismatch` naming `"x"` or `"y"` when a length is wrong.
            #[allow(clippy::needless_range_loop)]
            pub fn spmv(&self, x: &[V], y: &mut [V]) -> Result<(), StorageError> {
                #checks
                #serial_body
                Ok(())
            }
        }
    } else {
        quote!()
    };
    quote! {
        impl<V: #rt::Value> #name<V> {
            #spmv
        }
    }
}
