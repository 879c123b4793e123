//! The built-in kernels of every rank-2 format, compiled by the sparsifier from index notation
//! (no kernel is written per format): `spmv` (`y(i) = A(i, j) * x(j)`), `spmv_transpose`
//! (`y(j) = A(i, j) * x(i)`), `spmm` (`C(i, k) = A(i, j) * B(j, k)`, `B` and `C` dense,
//! row-major or column-major) and `spmv_par`. The loops are the sparsifier's for the format's
//! levels (rows of CSR, block rows of BSR, the pairs of COO, the columns of CSC scattering
//! into `y`, ELL slots, ...), emitted as methods generic over the value type.
//!
//! `spmv_par` splits the outermost level, when it is a dense range over the rows of `y` (CSR,
//! BSR, loose CSR, all-dense), into ranges of about equal stored entries (the positions of
//! level 1 when it has segment bounds), one rayon task each, each running the row-range form
//! of the same loops; other formats run the serial `spmv`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{CodegenError, Ctx};
use crate::kernel::{emit, KernelDecl, KernelParam, Method, ParamKind};
use sparse_ir::level::PositionsArray;
use sparse_sparsifier::ValueType;

/// What a built-in is: its method name, visibility, statement, form and doc lines.
struct Spec<'a> {
    name: &'a str,
    public: bool,
    statement: &'a str,
    rows: bool,
    doc: &'a [&'a str],
}

/// One built-in: compiles its statement over the receiver `a` and `params` into a method with
/// `extra` parameters after the operands.
fn method(
    cx: &Ctx,
    spec: Spec,
    params: Vec<KernelParam>,
    extra: Vec<TokenStream>,
) -> Result<TokenStream, sparse_sparsifier::Error> {
    let Spec {
        name,
        public,
        statement,
        rows,
        doc,
    } = spec;
    let mut enc = cx.decl.encoding.clone().into_inner();
    enc.dim_slices = None;
    let encoding = enc
        .verify()
        .map_err(|_| sparse_sparsifier::Error::plain("the stored encoding does not verify"))?;
    let mut all = vec![KernelParam {
        name: format_ident!("a"),
        kind: ParamKind::Format {
            mutable: false,
            format: cx.name.clone(),
            encoding: Box::new(encoding),
            shape: None,
        },
        value: ValueType::F64,
    }];
    all.extend(params);
    let k = KernelDecl {
        vis: if public { quote!(pub) } else { quote!() },
        name: format_ident!("{}", name),
        params: all,
        statement: statement.to_string(),
        method: Some(Method {
            receiver: 0,
            rows,
            doc: doc.iter().map(|l| format!(" {l}")).collect(),
            extra,
        }),
    };
    let program = sparse_sparsifier::compile(&k.statement, &k.tensor_decls())?;
    emit::emit(&k, &program, &cx.rt)
}

fn slice(name: &str, mutable: bool) -> KernelParam {
    KernelParam {
        name: format_ident!("{}", name),
        kind: ParamKind::Slice { mutable },
        value: ValueType::F64,
    }
}

fn matrix(name: &str, mutable: bool, col_major: bool, rows: TokenStream) -> KernelParam {
    KernelParam {
        name: format_ident!("{}", name),
        kind: ParamKind::Matrix {
            mutable,
            col_major,
            dims: [rows, quote!(n)],
        },
        value: ValueType::F64,
    }
}

/// `spmv`, `spmv_transpose`, `spmm`, `spmv_par` (and their private helpers) for rank-2
/// formats; nothing otherwise.
///
/// Errors: a built-in the sparsifier or its back end cannot compile for this format (named).
pub(super) fn emit(cx: &Ctx) -> Result<TokenStream, CodegenError> {
    if cx.dim_rank != 2 {
        return Ok(quote!());
    }
    let rt = &cx.rt;
    let fail = |what: &str, e: sparse_sparsifier::Error| {
        CodegenError(format!("the built-in `{what}` cannot be generated: {e}"))
    };
    let spmv = method(
        cx,
        Spec {
            name: "spmv",
            public: true,
            statement: "y(i) = a(i, j) * x(j)",
            rows: false,
            doc: &[
            "`y = A · x`: `x` has `shape()[1]` elements, `y` has `shape()[0]` and is overwritten.",
            "Compiled by the sparsifier from `y(i) = a(i, j) * x(j)` for this format's levels.",
            "",
            "Errors: `StorageError::LengthMismatch` naming `\"x\"` or `\"y\"` when a length is wrong.",
        ],
        },
        vec![slice("x", false), slice("y", true)],
        Vec::new(),
    )
    .map_err(|e| fail("spmv", e))?;
    let spmv_transpose = method(
        cx,
        Spec {
            name: "spmv_transpose",
            public: true,
            statement: "y(j) = a(i, j) * x(i)",
            rows: false,
            doc: &[
            "`y = Aᵀ · x`: `x` has `shape()[0]` elements, `y` has `shape()[1]` and is overwritten.",
            "Compiled by the sparsifier from `y(j) = a(i, j) * x(i)` for this format's levels (a",
            "row format scatters into `y`, a column format accumulates per element).",
            "",
            "Errors: `StorageError::LengthMismatch` naming `\"x\"` or `\"y\"` when a length is wrong.",
        ],
        },
        vec![slice("x", false), slice("y", true)],
        Vec::new(),
    )
    .map_err(|e| fail("spmv_transpose", e))?;
    let spmm_doc = |order: &str| {
        [
            format!("`C = A · B` with `B` and `C` dense and {order}: `B` is `shape()[1] x n`, `C`"),
            String::from("is `shape()[0] x n`, overwritten. Compiled by the sparsifier from"),
            String::from("`c(i, k) = a(i, j) * b(j, k)`."),
            String::new(),
            String::from(
                "Errors: `StorageError::LengthMismatch` naming `\"b\"` or `\"c\"` when a length is",
            ),
            String::from("not its rows times `n`."),
        ]
    };
    let mut spmm = TokenStream::new();
    for (name, col_major, order) in [
        ("spmm_row_major", false, "row-major"),
        ("spmm_col_major", true, "column-major"),
    ] {
        let doc = spmm_doc(order);
        let doc: Vec<&str> = doc.iter().map(String::as_str).collect();
        spmm.extend(
            method(
                cx,
                Spec {
                    name,
                    public: false,
                    statement: "c(i, k) = a(i, j) * b(j, k)",
                    rows: false,
                    doc: &doc,
                },
                vec![
                    matrix("b", false, col_major, quote!(self.dim_shape[1])),
                    matrix("c", true, col_major, quote!(self.dim_shape[0])),
                ],
                vec![quote!(n: usize)],
            )
            .map_err(|e| fail("spmm", e))?,
        );
    }
    // the row-range form, when the outermost loop runs over the rows of `y`
    let rows = method(
        cx,
        Spec {
            name: "spmv_rows",
            public: false,
            statement: "y(i) = a(i, j) * x(j)",
            rows: true,
            doc: &["`y = A · x` for the rows (block rows) `row0 .. row0 + len` that `y` holds."],
        },
        vec![slice("x", false), slice("y", true)],
        Vec::new(),
    )
    .ok();
    // units of the outermost level: rows, or block rows of `unit0` rows
    let unit0 = match &cx.e.dim_to_lvl.results[0] {
        crate::ir::AffineExpr::FloorDiv(_, b) => b.as_constant().unwrap_or(1) as usize,
        _ => 1,
    };
    // entries before unit r: level 1's segment start, when segments are back to back
    // (`pos[r]`, defined for r <= units)
    let before0 = match (cx.e.lvl_types.get(1), cx.ctxs.get(1)) {
        (Some(lt), Some(c))
            if lt.capabilities().positions == PositionsArray::SegmentBounds && !cx.batched =>
        {
            match &c.pos_field {
                Some(f) => quote!(|r: usize| self.#f[r].index()),
                None => quote!(|r: usize| r),
            }
        }
        _ => quote!(|r: usize| r),
    };
    let par_body = match &rows {
        Some(_) => {
            let unit = proc_macro2::Literal::usize_unsuffixed(unit0);
            let before = &before0;
            quote! {
                #rt::generated::check_spmv(self.dim_shape, x.len(), y.len())?;
                #rt::generated::par_rows(y, #unit, #before, |chunk, row0| {
                    // the row-range form checks nothing and converts nothing: it cannot fail
                    let done = self.spmv_rows(x, chunk, row0);
                    debug_assert!(done.is_ok());
                });
            }
        }
        None => quote!(self.spmv(x, y)?;),
    };
    // SparseDenseMatmul's row-range form: rows `row0 ..` of a row-major `c`
    let spmm_rows = method(
        cx,
        Spec {
            name: "spmm_rows",
            public: false,
            statement: "c(i, k) = a(i, j) * b(j, k)",
            rows: true,
            doc: &["`C = A · B` (row-major) for the rows (block rows) `row0 ..` that `c` holds."],
        },
        vec![
            matrix("b", false, false, quote!(self.dim_shape[1])),
            matrix("c", true, false, quote!(self.dim_shape[0])),
        ],
        vec![quote!(n: usize)],
    )
    .ok();
    // a tile's distinct ids: its level-1 coordinates (columns, or block columns), when level 1
    // stores plain coordinates in segments; else its entries (an upper bound)
    let distinct = match (cx.e.lvl_types.get(1), cx.ctxs.get(1)) {
        (Some(lt), Some(c))
            if lt.capabilities().positions == PositionsArray::SegmentBounds
                && !cx.batched
                && !c.packed()
                && c.crd.as_ref().is_some_and(|l| l.owner && l.stride == 1) =>
        {
            let pos = c.pos_field.as_ref().map(|f| quote!(#f));
            let crd = c.crd.as_ref().map(|l| {
                let f = &l.field;
                quote!(#f)
            });
            quote! {
                |lo: usize, hi: usize| #rt::sparsecore::tiles::distinct(
                    &self.#crd[self.#pos[lo].index()..self.#pos[hi].index()],
                )
            }
        }
        _ => quote!(|lo: usize, hi: usize| (before(hi) - before(lo)) as u64),
    };
    // every distinct column of a format run whole on tile 0
    let all_distinct = quote! {{
        let mut ids: Vec<usize> = self.iter().map(|(c, _)| c[1]).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len() as u64
    }};
    // the reference's `max_unique_nz_per_row` for the HBM stack estimates
    let max_unique =
        quote!(#rt::sparsecore::tiles::max_unique_per_row(self.iter().map(|(c, _)| (c[0], c[1]))));
    // the tile kernel: the same row ranges, one per tile of the SparseCore model
    let (pos_ty, crd_ty) = (&cx.pos_ty, &cx.crd_ty);
    let sc = quote!(#rt::sparsecore::tiles);
    let sc_body = match &rows {
        Some(_) => {
            let unit = unit0;
            // no arithmetic on a unit of 1 in the generated code
            let (units, unit_values) = if unit == 1 {
                (quote!(y.len()), quote!(value))
            } else {
                let u = proc_macro2::Literal::usize_unsuffixed(unit);
                (quote!(y.len() / #u), quote!(#u * value))
            };
            let unit = proc_macro2::Literal::usize_unsuffixed(unit);
            quote! {
                let before = #before0;
                let stored = before(#units).max(1);
                let block = (self.values.len() / stored).max(1);
                let bytes = #sc::TileBytes {
                    // per stored position: its values (a block's) and its coordinate; per
                    // distinct id the elements of `x` it reads (a block's columns)
                    per_entry: (block * value + crd) as u64,
                    per_unique: (#unit_values) as u64,
                    per_unit: (#unit_values + pos) as u64,
                    spmem_per_unit: (#unit_values) as u64,
                };
                #sc::run_rows(chip, y, #unit, before, #distinct, bytes, |chunk, row0| {
                    // the row-range form checks nothing and converts nothing: it cannot fail
                    let done = self.spmv_rows(x, chunk, row0);
                    debug_assert!(done.is_ok());
                })
            }
        }
        None => quote! {
            let bytes = #sc::TileBytes {
                per_entry: (value + crd) as u64,
                per_unique: value as u64,
                per_unit: (value + pos) as u64,
                spmem_per_unit: value as u64,
            };
            #sc::run_whole(chip, y, 1, self.values.len(), #all_distinct, bytes, |y| self.spmv(x, y))
        },
    };
    let sdm_body = match &spmm_rows {
        Some(_) => {
            // elements of `c` per unit of the outermost level (a block row holds `unit0` rows)
            let rows_per_unit = if unit0 == 1 {
                quote!(n)
            } else {
                let u = proc_macro2::Literal::usize_unsuffixed(unit0);
                quote!(#u * n)
            };
            quote! {
                let before = #before0;
                let bytes = #sc::TileBytes {
                    per_entry: (value + crd) as u64,
                    per_unique: (n * value) as u64,
                    per_unit: (#rows_per_unit * value + pos) as u64,
                    spmem_per_unit: (#rows_per_unit * value) as u64,
                };
                #sc::run_rows_even(chip, c, #rows_per_unit, before, #distinct, bytes, |chunk, row0| {
                    // the row-range form checks nothing and converts nothing: it cannot fail
                    let done = self.spmm_rows(b, chunk, n, row0);
                    debug_assert!(done.is_ok());
                })
            }
        }
        None => quote! {
            let bytes = #sc::TileBytes {
                per_entry: (value + crd) as u64,
                per_unique: (n * value) as u64,
                per_unit: (n * value + pos) as u64,
                spmem_per_unit: (n * value) as u64,
            };
            #sc::run_whole(chip, c, n, self.values.len(), #all_distinct, bytes, |c| {
                self.spmm_row_major(b, c, n)
            })
        },
    };
    let rows = rows.unwrap_or_default();
    let spmm_rows = spmm_rows.unwrap_or_default();
    let name = &cx.name;
    Ok(quote! {
        impl<V: #rt::Value> #name<V> {
            #spmv

            /// `y = A · x` in parallel (rayon): when the outermost level runs over the rows of
            /// `y` (CSR, BSR, all-dense), its units are split into ranges of about equal stored
            /// entries, one task each, running the same loops as [`Self::spmv`] on their rows;
            /// other formats (COO, column-major ones, ELL) run the serial `spmv`. Same operands
            /// and errors as `spmv`; the result is identical (each row is summed in the same
            /// order).
            pub fn spmv_par(&self, x: &[V], y: &mut [V]) -> Result<(), StorageError> {
                #par_body
                Ok(())
            }

            #rows

            /// `y = A · x` as a tile kernel on the SparseCore model `chip` (one device): the
            /// rows of `y` split over every tile of every SparseCore by stored entries, each
            /// tile running [`Self::spmv`]'s loops on its rows, in parallel; the result equals
            /// `spmv`'s bit for bit. Formats whose outermost level is not the rows of `y` (COO,
            /// column-major, ELL) run whole on tile 0. Returns what each tile read and moved
            /// (HBM bytes: values, coordinates and `x` elements per stored entry, positions and
            /// `y` per row), the modelled step and the HBM stack estimates for a feature width
            /// of 1 (`TileRun::with_stack`; `sparse_runtime::sparsecore::tiles`).
            ///
            /// Errors: `TileError::Storage` as `spmv`; `TileError::Spmem` (`Fixed size
            /// allocations ... do not fit in TileSpmem ...`) when a tile's rows of `y` exceed
            /// its TileSpmem; `TileError::Chip` for a chip without tiles.
            pub fn sparsecore_spmv(
                &self,
                chip: &#rt::sparsecore::chip::ChipModel,
                x: &[V],
                y: &mut [V],
            ) -> Result<#sc::TileRun, #sc::TileError> {
                #rt::generated::check_spmv(self.dim_shape, x.len(), y.len())?;
                let (value, pos, crd) = (
                    ::core::mem::size_of::<V>(),
                    ::core::mem::size_of::<#pos_ty>(),
                    ::core::mem::size_of::<#crd_ty>(),
                );
                let run = { #sc_body }?;
                Ok(run.with_stack(1, #max_unique))
            }

            /// SparseCore's `SparseDenseMatmul` as a tile kernel on the chip model `chip` (one
            /// device): `c = A · b` with `A` samples x ids (its stored values the gains), `b`
            /// the embedding table (`shape()[1] x n`, row-major) and `c` the activations
            /// (`shape()[0] x n`, row-major, overwritten). The samples are split evenly over
            /// every tile of every SparseCore (the reference's `(sample_count * feature_width)
            /// / tiles` rule); each tile runs [`Self::spmm`]'s loops on its samples, in
            /// parallel, so `c` equals `spmm`'s bit for bit. A format whose outermost level is
            /// not the samples runs whole on tile 0. Returns per tile the stored entries (ids
            /// gathered), HBM bytes (per entry its value, id and gathered row of `n` values;
            /// per sample its position and output row), TileSpmem bytes (its output rows),
            /// the modelled step, and the reference's forward/backward HBM stack estimates and
            /// padding waste for a feature width of `n` (`TileRun::with_stack`;
            /// `sparse_runtime::sparsecore::tiles`).
            ///
            /// Errors: `TileError::Storage` (`LengthMismatch` naming `"b"` or `"c"`) when a
            /// length is not its rows times `n`; `TileError::Spmem` (`Fixed size allocations
            /// ... do not fit in TileSpmem ...`) when a tile's output rows exceed its TileSpmem
            /// (`c` untouched); `TileError::Chip` for a chip without tiles.
            pub fn sparsecore_spmm(
                &self,
                chip: &#rt::sparsecore::chip::ChipModel,
                b: &[V],
                c: &mut [V],
                n: usize,
            ) -> Result<#sc::TileRun, #sc::TileError> {
                for (what, rows, len) in [("b", self.dim_shape[1], b.len()), ("c", self.dim_shape[0], c.len())] {
                    if rows.checked_mul(n) != Some(len) {
                        return Err(StorageError::LengthMismatch {
                            operand: what,
                            expected: rows.saturating_mul(n),
                            got: len,
                        }
                        .into());
                    }
                }
                let (value, pos, crd) = (
                    ::core::mem::size_of::<V>(),
                    ::core::mem::size_of::<#pos_ty>(),
                    ::core::mem::size_of::<#crd_ty>(),
                );
                let run = { #sdm_body }?;
                Ok(run.with_stack(n as u64, #max_unique))
            }

            /// [`Self::sparsecore_spmm`] with the ids mod-sharded over the SparseCores of `chip`
            /// (SparseCore reference, "Sharding and routing"): id `j` is owned by SparseCore
            /// `j % S` and read from its shard of the table, so each sample's products are
            /// summed partition by partition, local ids `j / S` ascending, the order of the
            /// preprocessed buffers (`sparse_runtime::sparsecore::tiles::shard_ids` builds the
            /// sharded operand in this format and the sharded table). The result equals
            /// `spmm`'s up to that order of additions (bit for bit when `S` is 1); the report
            /// counts the sharded operand (the same entries and distinct ids).
            ///
            /// Errors: as [`Self::sparsecore_spmm`]; `TileError::Storage` (`WidthOverflow`) when
            /// the sharded ids (`ceil(ids / S) * S`) do not fit in the coordinate width, or the
            /// format's own `from_coo` error for the permuted ids (`NOutOfMOverflow` for an n:m
            /// format whose blocks they overfill).
            pub fn sparsecore_spmm_sharded(
                &self,
                chip: &#rt::sparsecore::chip::ChipModel,
                b: &[V],
                c: &mut [V],
                n: usize,
            ) -> Result<#sc::TileRun, #sc::TileError> {
                let entries = self.iter().map(|(at, v)| (at, *v));
                let (operand, table) = #sc::shard_ids(chip, self.dim_shape, entries, b, n)?;
                let sharded = <Self as #rt::storage::FromCoo<V>>::from_coo_tensor(&operand)?;
                sharded.sparsecore_spmm(chip, &table, c, n)
            }

            #spmm_rows

            #spmv_transpose

            /// `C = A · B` with `B` (`shape()[1] x n`) and `C` (`shape()[0] x n`, overwritten)
            /// dense in `order`.
            ///
            /// Errors: `StorageError::LengthMismatch` naming `"b"` or `"c"` when a length is
            /// not its rows times `n`.
            pub fn spmm(
                &self,
                b: &[V],
                c: &mut [V],
                n: usize,
                order: #rt::generated::DenseOrder,
            ) -> Result<(), StorageError> {
                match order {
                    #rt::generated::DenseOrder::RowMajor => self.spmm_row_major(b, c, n),
                    #rt::generated::DenseOrder::ColMajor => self.spmm_col_major(b, c, n),
                }
            }

            #spmm
        }
    })
}
