//! The built-in kernels of every rank-2 format, compiled by the sparsifier from index notation
//! (no kernel is written per format): `spmv` (`y(i) = A(i, j) * x(j)`), `spmv_transpose`
//! (`y(j) = A(i, j) * x(i)`), `spmm` (`C(i, k) = A(i, j) * B(j, k)`, `B` and `C` dense,
//! row-major or column-major) and `spmv_par`. The loops are the sparsifier's for the format's
//! levels (rows of CSR, block rows of BSR, the pairs of COO, the columns of CSC scattering
//! into `y`, ELL slots, ...), emitted as methods generic over the value type.
//!
//! `spmv`, `spmv_par` and `spmv_transpose` sum each row's (a column format's transposed
//! product: each column's) innermost segment in four interleaved partial sums
//! (`Method::reassociate`, as MLIR's sparsifier reassociates a vectorized reduction), so a
//! row is not one chain of dependent additions; floating-point results may differ from a
//! sequential sum in the last bits. User kernels of `f64`/`f32` values sum in the same order
//! (`Program::partial_sum`, `Program::block_sum`; the interpreter too); `spmm` keeps the
//! statement's order. The same loops read a large operand with software prefetches
//! ahead of its streams where the processor gains from them (`sparse_runtime::prefetch`).
//!
//! `spmv_par` splits the outermost level, when it is a dense range over the rows of `y` (CSR,
//! BSR, loose CSR, all-dense), into ranges of about equal stored entries (the positions of
//! level 1 when it has segment bounds), one rayon task each, each running the row-range form
//! of the same loops; other formats run the serial `spmv`. `spmv_transpose_par` does the same
//! for `y = Aᵀ·x` when the outermost level runs over the elements of that `y` (the columns of
//! CSC and BSC); the row formats, which scatter into it, run the serial `spmv_transpose`.
//! `spmm_par` splits a row-major `C`'s rows the same way when the outermost level runs over
//! them (one by one, or BSR's block rows: the row-range form `spmm_rows`); otherwise it runs
//! the serial `spmm`.

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
    /// Type parameters (`OB: StaticOrder`).
    generics: Vec<TokenStream>,
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
        generics,
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
            quant: None,
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
            reassociate: name.starts_with("spmv"),
            generics,
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

/// A rank-2 `DenseArray` operand whose order is the method's type parameter `order`.
fn array(name: &str, mutable: bool, order: &str) -> KernelParam {
    KernelParam {
        name: format_ident!("{}", name),
        kind: ParamKind::DenseArray {
            mutable,
            order: format_ident!("{}", order),
            minor_to_major: None,
            rank: 2,
        },
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
            generics: Vec::new(),
            rows: false,
            doc: &[
            "`y = A · x`: `x` has `shape()[1]` elements, `y` has `shape()[0]` and is overwritten.",
            "Compiled by the sparsifier from `y(i) = a(i, j) * x(j)` for this format's levels; the",
            "innermost segment of a row is summed in four interleaved partial sums, added together",
            "at its end (reassociated: a float result may differ from a sequential sum in the",
            "last bits). A matrix whose values span `prefetch::MIN_BYTES` or more is read with",
            "software prefetches ahead of its coordinates and values on the processors that gain",
            "from them (`sparse_runtime::prefetch::enabled`; non-temporal for 8-byte values,",
            "`prefetch::locality`, but into all cache levels where a column format scatters",
            "into `y`), a blocked format's block rows then alternately from the first and the",
            "second half of the rows, as two streams (`prefetch::row_order`); the results are the",
            "same.",
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
            generics: Vec::new(),
            rows: false,
            doc: &[
            "`y = Aᵀ · x`: `x` has `shape()[0]` elements, `y` has `shape()[1]` and is overwritten.",
            "Compiled by the sparsifier from `y(j) = a(i, j) * x(i)` for this format's levels (a",
            "row format scatters into `y`, in the statement's order; a column format sums each",
            "element as `spmv` sums a row, in four interleaved partial sums, reassociated: a float",
            "result may differ from a sequential sum in the last bits). A matrix whose values span",
            "`prefetch::MIN_BYTES` or more is read with software prefetches ahead of its",
            "coordinates and values on the processors that gain from them (as `spmv`; a scattered",
            "row into all cache levels; the results are the same).",
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
                    generics: Vec::new(),
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
    let spmm_array = method(
        cx,
        Spec {
            name: "spmm_array",
            public: true,
            statement: "c(i, k) = a(i, j) * b(j, k)",
            rows: false,
            doc: &[
                "`C = A · B` with `B` (`shape()[1] x n`) and `C` (`shape()[0] x n`) dense arrays in",
                "XLA layouts (`rt::layout::DenseArray`): any order (`OB`, `OC`, such as the",
                "all-dense formats of the block), any padding, which is never read or written; the",
                "elements of `C` are overwritten. Compiled by the sparsifier from",
                "`c(i, k) = a(i, j) * b(j, k)`; each array's fastest stride is a constant of its",
                "order, so every instantiation runs loops compiled for its orders.",
                "",
                "Errors: `StorageError::LengthMismatch` naming `b` or `c` and the dimension whose",
                "size differs.",
            ],
            generics: vec![
                quote!(OB: #rt::layout::StaticOrder),
                quote!(OC: #rt::layout::StaticOrder),
            ],
        },
        vec![array("b", false, "OB"), array("c", true, "OC")],
        Vec::new(),
    )
    .map_err(|e| fail("spmm_array", e))?;
    // the row-range form, when the outermost loop runs over the rows of `y`
    let rows = method(
        cx,
        Spec {
            name: "spmv_rows",
            public: false,
            statement: "y(i) = a(i, j) * x(j)",
            generics: Vec::new(),
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
    // the body of `spmv_par` (`spmv_transpose_par`): the serial kernel below two tasks'
    // worth or without a row-range form, else the row-range form over nnz-balanced ranges of
    // the outermost level; `shape` is the operator's (rows of `y` by elements of `x`)
    let par_of = |form: &Option<TokenStream>, serial: &str, shape: TokenStream| {
        let serial = format_ident!("{serial}");
        let Some(_) = form else {
            return quote!(self.#serial(x, y)?;);
        };
        let range = format_ident!("{serial}_rows");
        let unit = proc_macro2::Literal::usize_unsuffixed(unit0);
        let before = &before0;
        quote! {
            if #rt::generated::par_tasks(self.nse()) < 2 {
                return self.#serial(x, y);
            }
            #rt::generated::check_spmv(#shape, x.len(), y.len())?;
            #rt::generated::par_rows(y, #unit, self.nse(), #before, |chunk, row0| {
                // the row-range form checks nothing and converts nothing: it cannot fail
                let done = self.#range(x, chunk, row0);
                debug_assert!(done.is_ok());
            });
        }
    };
    let par_body = par_of(&rows, "spmv", quote!(self.dim_shape));
    // the transposed product's row-range form, when the outermost level runs over the
    // elements of `y(j) = a(i, j) * x(i)` (a column format: CSC, BSC, whose columns are then
    // summed as `spmv` sums rows)
    let rows_t = method(
        cx,
        Spec {
            name: "spmv_transpose_rows",
            public: false,
            statement: "y(j) = a(i, j) * x(i)",
            generics: Vec::new(),
            rows: true,
            doc: &[
                "`y = Aᵀ · x` for the columns (block columns) `row0 .. row0 + len` that `y` holds.",
            ],
        },
        vec![slice("x", false), slice("y", true)],
        Vec::new(),
    )
    .ok();
    let par_t_body = par_of(
        &rows_t,
        "spmv_transpose",
        quote!([self.dim_shape[1], self.dim_shape[0]]),
    );
    // the row-range form of a row-major `c`, units (rows or block rows) `row0 ..`, when the
    // outermost level runs over the rows of `c`: `spmm_par`'s ranges, and SparseDenseMatmul's
    // tiles where that level is the samples one by one (a BSR block row holds several samples,
    // which the even split of samples over tiles may cut)
    let spmm_rows = if rows.is_some() {
        method(
            cx,
            Spec {
                name: "spmm_rows",
                public: false,
                statement: "c(i, k) = a(i, j) * b(j, k)",
                generics: Vec::new(),
                rows: true,
                doc: &[
                    "`C = A · B` (row-major) for the rows (block rows) `row0 ..` that `c` holds.",
                ],
            },
            vec![
                matrix("b", false, false, quote!(self.dim_shape[1])),
                matrix("c", true, false, quote!(self.dim_shape[0])),
            ],
            vec![quote!(n: usize)],
        )
        .ok()
    } else {
        None
    };
    // `spmm_par`: a row-major `C` split by rows over rayon when the row-range form exists
    let spmm_par_body = match &spmm_rows {
        Some(_) => {
            let before = &before0;
            // the elements of `c` per unit: `n` per row
            let unit = match unit0 {
                1 => quote!(n),
                rows => {
                    let rows = proc_macro2::Literal::usize_unsuffixed(rows);
                    quote!(#rows * n)
                }
            };
            quote! {
                let [m, k] = self.dim_shape;
                let fits = b.len() == k.saturating_mul(n) && c.len() == m.saturating_mul(n);
                let work = self.nse().saturating_mul(n);
                if order != #rt::generated::DenseOrder::RowMajor
                    || !fits
                    || #rt::generated::par_tasks(work) < 2
                {
                    return self.spmm(b, c, n, order);
                }
                #rt::generated::par_rows(c, #unit, work, #before, |chunk, row0| {
                    // the row-range form checks nothing and converts nothing: it cannot fail
                    let done = self.spmm_rows(b, chunk, n, row0);
                    debug_assert!(done.is_ok());
                });
                Ok(())
            }
        }
        None => quote!(self.spmm(b, c, n, order)),
    };
    // the staged run of `sparsecore_spmm`: the row loops per tile when there are some
    let spmm_staged = match spmm_rows.as_ref().filter(|_| unit0 == 1) {
        Some(_) => quote! {
            let bytes = self.sparsecore_bytes(n);
            let run = #rt::sparsecore::tiles::run_staged_rows(chip, &entries, b, c, n, self.dim_shape[1], bytes, |chunk, row0| {
                // the row-range form checks nothing and converts nothing: it cannot fail
                let done = self.spmm_rows(b, chunk, n, row0);
                debug_assert!(done.is_ok());
            })?;
            Ok(run.with_stack(n as u64, entries.max_unique_per_sample()))
        },
        None => quote!(self.sparsecore_staged(chip, &entries, b, c, n)),
    };
    // what a tile of units `lo..hi` counts: with back-to-back segments of plain coordinates on
    // level 1 (CSR, BSR) its entries are level 1's positions `pos[lo]..pos[hi]` and its ids
    // their coordinates; any other format's entries are its stored values, grouped by unit
    // from its own loops (`tiles::UnitIds`), and its ids their columns
    let segments = match (cx.e.lvl_types.get(1), cx.ctxs.get(1)) {
        (Some(lt), Some(c))
            if lt.capabilities().positions == PositionsArray::SegmentBounds
                && !cx.batched
                && !c.packed()
                && c.crd.as_ref().is_some_and(|l| l.owner && l.stride == 1) =>
        {
            c.pos_field.as_ref().zip(c.crd.as_ref()).map(|(pos, crd)| {
                let crd = &crd.field;
                quote! {
                    |lo: usize, hi: usize| #rt::sparsecore::tiles::distinct(
                        &self.#crd[self.#pos[lo].index()..self.#pos[hi].index()],
                    )
                }
            })
        }
        _ => None,
    };
    // positions of level 1 each unit reads: one bound of a compressed level (the last one is
    // not counted), a (lo, hi) pair of a loose compressed one, none of a dense or n:m level
    let unit_positions = match cx.e.lvl_types.get(1).map(|lt| lt.capabilities().positions) {
        Some(PositionsArray::SegmentBounds) => quote!(+ pos),
        Some(PositionsArray::LoHiPairs) => quote!(+ 2 * pos),
        _ => quote!(),
    };
    // a stored value's coordinate, when its level stores one
    let value_crd = if cx.ctxs.last().is_some_and(|c| c.crd.is_some()) {
        quote!(+ crd)
    } else {
        quote!()
    };
    // the reference's `max_unique_nz_per_row` for the HBM stack estimates
    let max_unique =
        quote!(#rt::sparsecore::tiles::max_unique_per_row(self.iter().map(|(c, _)| (c[0], c[1]))));
    // the tile kernel: the same row ranges, one per tile of the SparseCore model
    let (pos_ty, crd_ty) = (&cx.pos_ty, &cx.crd_ty);
    let sc = quote!(#rt::sparsecore::tiles);
    let sc_body = match &rows {
        Some(_) => {
            // no arithmetic on a unit of 1 in the generated code
            let (units, unit_values, unit_of) = if unit0 == 1 {
                (quote!(y.len()), quote!(value), quote!(at[0]))
            } else {
                let u = proc_macro2::Literal::usize_unsuffixed(unit0);
                (quote!(y.len() / #u), quote!(#u * value), quote!(at[0] / #u))
            };
            let unit = proc_macro2::Literal::usize_unsuffixed(unit0);
            let (counts, per_entry) = match &segments {
                Some(distinct) => (
                    quote! {
                        let before = #before0;
                        let distinct = #distinct;
                        // a stored position of level 1 holds a block of values (1 unless blocked)
                        let block = (self.nse() / before(#units).max(1)).max(1) as u64;
                    },
                    quote!(block * value + crd),
                ),
                None => (
                    quote! {
                        let ids = #sc::UnitIds::new(#units, self.iter().map(|(at, _)| (#unit_of, at[1])))?;
                        let before = |r: usize| ids.before(r);
                        let distinct = |lo: usize, hi: usize| ids.distinct(lo, hi);
                    },
                    quote!(value #value_crd),
                ),
            };
            quote! {
                #counts
                let bytes = #sc::TileBytes {
                    // per stored entry: its values and its coordinate; per distinct id the
                    // elements of `x` it reads (a block's columns); per unit its positions
                    // and its elements of `y`
                    per_entry: #per_entry,
                    per_unique: #unit_values,
                    per_unit: #unit_values #unit_positions,
                    spmem_per_unit: #unit_values,
                };
                #sc::run_rows(chip, y, #unit, before, distinct, bytes, |chunk, row0| {
                    // the row-range form checks nothing and converts nothing: it cannot fail
                    let done = self.spmv_rows(x, chunk, row0);
                    debug_assert!(done.is_ok());
                })
            }
        }
        None => quote! {
            let bytes = #sc::TileBytes {
                per_entry: value + crd,
                per_unique: value,
                per_unit: value + pos,
                spmem_per_unit: value,
            };
            let mut ids: Vec<usize> = self.iter().map(|(at, _)| at[1]).collect();
            ids.sort_unstable();
            ids.dedup();
            let unique = ids.len() as u64;
            #sc::run_whole(chip, y, 1, self.nse(), unique, bytes, |y| self.spmv(x, y))
        },
    };
    // the byte sizes the SpMV's bytes model reads, each bound only where it is used
    let (uses_pos, uses_crd) = match &rows {
        Some(_) => (
            !unit_positions.is_empty(),
            segments.is_some() || !value_crd.is_empty(),
        ),
        None => (true, true),
    };
    let mut spmv_sizes = quote!(let value = ::core::mem::size_of::<V>() as u64;);
    if uses_pos {
        spmv_sizes.extend(quote!(let pos = ::core::mem::size_of::<#pos_ty>() as u64;));
    }
    if uses_crd {
        spmv_sizes.extend(quote!(let crd = ::core::mem::size_of::<#crd_ty>() as u64;));
    }
    let rows = rows.unwrap_or_default();
    let rows_t = rows_t.unwrap_or_default();
    let spmm_rows = spmm_rows.unwrap_or_default();
    let name = &cx.name;
    Ok(quote! {
        impl<V: #rt::Value> #name<V> {
            #spmv

            /// `y = A · x` in parallel (rayon): when the outermost level runs over the rows of
            /// `y` (CSR, BSR, loose CSR, all-dense) and the matrix stores at least
            /// `PAR_MIN_ENTRIES` values a thread (`sparse_runtime::generated::par_rows`; a BSR
            /// block counts its block's values), its units are split into ranges of about equal
            /// stored entries, the threads taking them in turn, each running the same loops as
            /// [`Self::spmv`] on its rows; smaller matrices and other formats (COO,
            /// column-major ones, ELL) run the serial `spmv`. Same operands and errors as
            /// `spmv`; the result is identical to `spmv`'s (each row is summed in the same
            /// order).
            pub fn spmv_par(&self, x: &[V], y: &mut [V]) -> Result<(), StorageError> {
                #par_body
                Ok(())
            }

            #rows
            #spmm_rows

            /// `y = A · x` as a tile kernel on the SparseCore model `chip` (one device): the
            /// rows of `y` split over every tile of every SparseCore by stored entries, each
            /// tile running [`Self::spmv`]'s loops on its rows, in parallel; the result equals
            /// `spmv`'s bit for bit. Formats whose outermost level is not the rows of `y` (COO,
            /// column-major, ELL) run whole on tile 0. A stored entry is a stored position of
            /// level 1 for CSR and BSR (a BSR block), else a stored value (2:4: its 2 per block
            /// of 4, explicit zeros included; all-dense: every element; loose CSR: `hi - lo`
            /// per row); a tile's ids are the distinct columns (BSR: block columns) of its
            /// entries. Returns what each tile read and moved (HBM bytes: per stored entry its
            /// values and its coordinate if stored, per distinct id its `x` elements, per row
            /// its `y` element and level-1 positions: one for compressed, two for loose
            /// compressed, none for dense or n:m), the modelled step and the HBM stack
            /// estimates for a feature width of 1 (`TileRun::with_stack`;
            /// `sparse_runtime::sparsecore::tiles`).
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
                #spmv_sizes
                let run = { #sc_body }?;
                Ok(run.with_stack(1, #max_unique))
            }

            /// SparseCore's `SparseDenseMatmul` as a tile kernel on the chip model `chip` (one
            /// device): `c = A · b` with `A` samples x ids (its stored values the gains), `b`
            /// the embedding table (`shape()[1] x n`, row-major) and `c` the activations
            /// (`shape()[0] x n`, row-major, overwritten). The stored entries are grouped by
            /// sample, each sample's in storage order; the samples are split evenly over every
            /// tile of every SparseCore (the reference's `(sample_count * feature_width) /
            /// tiles` rule), whatever the format's outermost level. Each tile stages its
            /// entries through a TileSpmem of `chip.tile_spmem_bytes`, sized by the rule the
            /// runtime's lookup uses (`sparse_runtime::sparsecore::tile_spmem_plan`, the table
            /// modelled as `f32` rows padded to a multiple of 8 values): `staging_rows` table
            /// rows at a time are gathered, scaled by their gains and accumulated into their
            /// samples' output rows, in parallel over the tiles. When this format's outermost
            /// level is the samples one by one (CSR, loose CSR, 2:4, all-dense) each tile
            /// computes with the sparsifier's row-range loops of `c(i, k) = a(i, j) * b(j, k)`
            /// on its samples instead, the staging then modelled in the report alone (the same
            /// chunks and peak); other formats (BSR, whose block rows the split may cut, COO,
            /// CSC, DCSR, ELL) are read in sample order, as the sparsifier converts an operand
            /// whose levels conflict, and staged by the runtime's gather loop
            /// (`sparse_runtime::sparsecore::tiles::run_staged`). A sample's products are added
            /// in storage order, as [`Self::spmm`] adds them, so `c` equals `spmm`'s bit for
            /// bit. Returns per tile and SparseCore the stored entries (ids gathered), distinct
            /// ids, HBM bytes (per entry its gain and id, per distinct id its row of `n`
            /// values, per sample a position and its output row), peak TileSpmem (output rows
            /// and two buffers of the largest chunk staged), the modelled step, the
            /// reference's forward/backward HBM stack estimates, the gathered bytes of padded
            /// columns and the table's padding (vocabulary to a multiple of `8 * S`, reference
            /// §7) for a feature width of `n`.
            ///
            /// Errors: `TileError::Storage` (`LengthMismatch` naming `"b"` or `"c"`) when a
            /// length is not its rows times `n`; `TileError::Spmem` with the chip's words when
            /// a tile's output rows exceed its TileSpmem (`Gather operand too large: ...`) or
            /// leave no room to stage a row (`Fixed size allocations (N bytes) do not fit in
            /// TileSpmem (M bytes)`), `c` untouched; `TileError::Chip` for a chip without tiles.
            pub fn sparsecore_spmm(
                &self,
                chip: &#rt::sparsecore::chip::ChipModel,
                b: &[V],
                c: &mut [V],
                n: usize,
            ) -> Result<#sc::TileRun, #sc::TileError> {
                let entries = #sc::SampleEntries::new(self.dim_shape, self.iter().map(|(at, v)| (at, *v)))?;
                #spmm_staged
            }

            /// [`Self::sparsecore_spmm`] with the ids mod-sharded over the SparseCores of `chip`
            /// (SparseCore reference, "Sharding and routing"): id `j` is owned by SparseCore
            /// `j % S` and read from its shard of the table, so each sample's products are
            /// summed partition by partition, local ids `j / S` ascending, the order of the
            /// preprocessed buffers. `sparse_runtime::sparsecore::tiles::shard_samples` moves
            /// the stored entries to their sharded ids and orders each sample's by them, and
            /// lays the table out shard by shard. The sharded entries are staged by the
            /// runtime's gather loop, as a converted operand is.
            /// The sharded operand is not rebuilt in this format: an n:m format's blocks could
            /// not hold the permuted ids (ids `0..4` of a 2:4 block land in up to four
            /// partitions, so a rebuilt block may hold more than 2), and the entries as a
            /// sample's list in sharded order are what the staged run reads anyway. Every
            /// stored entry is kept, explicit zeros included (an n:m block's padding adds `0 *
            /// row`). The result equals `spmm`'s up to that order of additions (bit for bit
            /// when `S` is 1 and each sample's entries are stored by ascending id); the report
            /// counts the same entries and distinct ids as `sparsecore_spmm`.
            ///
            /// Errors: as [`Self::sparsecore_spmm`].
            pub fn sparsecore_spmm_sharded(
                &self,
                chip: &#rt::sparsecore::chip::ChipModel,
                b: &[V],
                c: &mut [V],
                n: usize,
            ) -> Result<#sc::TileRun, #sc::TileError> {
                let entries = self.iter().map(|(at, v)| (at, *v));
                let (sharded, table) = #sc::shard_samples(chip, self.dim_shape, entries, b, n)?;
                self.sparsecore_staged(chip, &sharded, &table, c, n)
            }

            /// The staged `SparseDenseMatmul` of [`Self::sparsecore_spmm`] on `entries` (this
            /// operand's, or their sharded form) and the table `b` they index, with this
            /// format's bytes model.
            fn sparsecore_staged(
                &self,
                chip: &#rt::sparsecore::chip::ChipModel,
                entries: &#sc::SampleEntries<V>,
                b: &[V],
                c: &mut [V],
                n: usize,
            ) -> Result<#sc::TileRun, #sc::TileError> {
                let bytes = self.sparsecore_bytes(n);
                let run = #sc::run_staged(chip, entries, b, c, n, self.dim_shape[1], bytes)?;
                Ok(run.with_stack(n as u64, entries.max_unique_per_sample()))
            }

            /// The bytes model of the `SparseDenseMatmul` tile kernels with rows of `n`
            /// values: per entry its gain and id, per distinct id its row, per sample a
            /// position and its output row.
            fn sparsecore_bytes(&self, n: usize) -> #sc::TileBytes {
                let (value, pos, crd) = (
                    ::core::mem::size_of::<V>() as u64,
                    ::core::mem::size_of::<#pos_ty>() as u64,
                    ::core::mem::size_of::<#crd_ty>() as u64,
                );
                let row = (n as u64).saturating_mul(value);
                #sc::TileBytes {
                    per_entry: value + crd,
                    per_unique: row,
                    per_unit: row.saturating_add(pos),
                    // TileSpmem follows the staging rule, not a per-sample size
                    spmem_per_unit: 0,
                }
            }


            #spmv_transpose

            /// `y = Aᵀ · x` in parallel (rayon): when the outermost level runs over the
            /// elements of `y`, the columns of `A` (CSC, BSC), and the matrix stores at least
            /// `PAR_MIN_ENTRIES` values a thread (`sparse_runtime::generated::par_rows`; a BSC
            /// block counts its block's values), its units are split into ranges of about equal
            /// stored entries, the threads taking them in turn, each running the same loops as
            /// [`Self::spmv_transpose`] on its columns; smaller matrices and other formats (the
            /// row formats, which scatter into `y`, COO, ELL) run the serial `spmv_transpose`.
            /// Same operands and errors as `spmv_transpose`; the result is identical to
            /// `spmv_transpose`'s (each column is summed in the same order).
            pub fn spmv_transpose_par(&self, x: &[V], y: &mut [V]) -> Result<(), StorageError> {
                #par_t_body
                Ok(())
            }

            #rows_t

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

            /// [`Self::spmm`] in parallel (rayon): for a row-major `C`, when the outermost
            /// level runs over the rows of `C` (CSR, BSR's block rows, loose CSR, 2:4,
            /// all-dense) and the stored values times `n` reach `PAR_MIN_ENTRIES` a thread
            /// (`sparse_runtime::generated::par_rows`; a BSR block counts its block's values),
            /// its units are split into ranges of about equal stored entries, the threads
            /// taking them in turn, each running the same loops as `spmm` on its rows; a
            /// column-major `C`, smaller products and other formats (COO, column-major ones,
            /// ELL) run the serial `spmm`. Same operands and errors as `spmm`; the result is
            /// identical to `spmm`'s (each row is summed in the same order).
            pub fn spmm_par(
                &self,
                b: &[V],
                c: &mut [V],
                n: usize,
                order: #rt::generated::DenseOrder,
            ) -> Result<(), StorageError> {
                #spmm_par_body
            }

            #spmm

            #spmm_array
        }
    })
}
