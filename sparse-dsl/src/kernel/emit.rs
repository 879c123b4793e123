//! The Rust back end of the sparsifier: loop IR ([`Program`]) → Rust tokens.
//!
//! Each loop of the IR becomes a Rust loop over the storage structs' arrays. What a level
//! stores and how its segment under a parent position is found comes from its format's
//! codegen unit ([`LevelGen::segment`], [`LevelCtx::read_crd`]), never from a format name
//! here: a located level (full and locatable: dense, batch) has position
//! `parent * size + coordinate`; an iterated level (compressed, loose_compressed, singleton,
//! n:m) runs over the positions of its segment, reading coordinates; a non-unique level yields
//! groups of equal coordinates (`p .. p_next`), whose children span the segments of the whole
//! group (MLIR's `sparse_tensor` lowering; TACO's level functions). Blocked indices (BSR, n:m)
//! are two loop variables, the dimension coordinate `block * hi + lo`; ELL slots are a loop of
//! their own; a slice keeps the stored coordinates `offset + c * stride` (`c < size`).
//! Operands the sparsifier converts (an order conflict, a block size another operand does not
//! share) are converted at the start into a private struct of the target format, generated in
//! the function (MLIR's `sparse_tensor.convert`).
//!
//! Index extents are read once, every operand dimension is checked against them (an error, not
//! a panic), then the loop nest runs with unchecked coordinate reads: storage structs are
//! validated when built, dense operands were checked.
//!
//! Order of additions: the same as the interpreter (`sparse_sparsifier::interp`): one
//! accumulation per visited entry, in the iteration order. The only difference: a sum into a
//! random-access output starts from `0` where the interpreter stores the first term, so a sum
//! whose every term is `-0.0` gives `+0.0` here (IEEE: `0.0 + -0.0 == +0.0`).
//!
//! Values stored narrow (`f16`, `bf16`, 8- and 16-bit integers) are computed in their
//! [`ValueType::compute`] type, as the interpreter does: every load widens (`x.to_f32()`,
//! `i32::from(x)`), a dense or 0-d output is shadowed by a buffer of the wide type (a widened
//! copy when the statement reads it or adds to it), a sparse output's values are collected
//! wide, and everything is stored back once after the loops (rounded to nearest, or wrapping).
//!
//! Quantized operands (a format declared with a `!quant.uniform` element type and passed with
//! its storage type, `&Q<i8>`) compute in `f32`, as the interpreter under `sparse eval` does:
//! each load dequantizes on the fly through the struct's `dequantize_value(q, k)` (StableHLO's
//! `convert(q - zero_point) * scale`, `k` the access's dimension coordinate on a per-axis
//! type's quantized axis), `f32` operands are read as they are, a quantized operand the
//! sparsifier converts is converted as its real values (`dequantized()`) and read as `f32`, and
//! a quantized output is computed in `f32` and quantized once after the loops by its
//! `quantize_value` (round half to even, clamped to the storage range; per axis, with the pair
//! of each value's coordinate). Refused (named in the error): quantized operands that are not
//! formats and per-axis quantized outputs the statement reads.
//!
//! Sparse outputs are collected as coordinates in the IR's strategy (in order, through a
//! workspace, or buffered) and assembled with the output format's `from_coo`.

use proc_macro2::{Ident, Literal as Lit, TokenStream};
use quote::{format_ident, quote};
use sparse_ir::ir::{AffineExpr, DimSlice, Encoding, LevelFormat};
use sparse_sparsifier::check::Expr;
use sparse_sparsifier::loops::{
    Combine, Driver, Loop, NmSum, Program, SharedRows, Stmt, Strategy, Target, WindowedRows,
};
use sparse_sparsifier::notation::{BinOp, Literal, ReduceOp};
use sparse_sparsifier::order::{Extent, IndexLoops};
use sparse_sparsifier::{Error, ValueType};

use super::{KernelDecl, ParamKind};
use crate::codegen::level::{InsertNames, LevelCtx, LevelGen};

/// One tensor of the kernel as the emitted code sees it: a parameter, or the private
/// conversion of one.
struct Operand {
    /// The variable the code reads (`self` for a method's receiver).
    name: Ident,
    /// The prefix of its position variables (`a` in `a_p1`).
    prefix: String,
    /// How it is passed (a conversion is a `Format` of its private struct).
    kind: ParamKind,
    /// The declared tensor it converts (`None` for a parameter).
    converts: Option<usize>,
    /// Per level: its generator and context (storage structs only).
    levels: Vec<(&'static dyn LevelGen, LevelCtx)>,
    /// Per dimension: `(offset, size, stride)` of a sliced format.
    slices: Option<Vec<(usize, usize, usize)>>,
    /// The encoding without slices (storage structs only).
    encoding: Option<Encoding>,
}

struct Cx<'a> {
    p: &'a Program,
    /// Per kernel tensor.
    ops: Vec<Operand>,
    rt: &'a TokenStream,
    /// Per temporary: its reduction (a sum needs no visited flag).
    temp_ops: Vec<Option<ReduceOp>>,
    /// Per temporary: appended to the sparse output (needs its visited flag).
    temp_appended: Vec<bool>,
    /// The copy of the output's input values that the right-hand side reads when the output
    /// is written in place and read too (`a(i, j) = a(i, j) * 2.0`).
    snapshot: Option<Ident>,
    /// A method of a storage struct: values are its generic `V`.
    generic: bool,
    /// Innermost sums into a register run in partial sums ([`Program::partial_sum`]) and
    /// block rows are summed before the output ([`Program::block_sum`]): a built-in's
    /// [`crate::kernel::Method::reassociate`], a user kernel's [`Program::reassociates`].
    reassociate: bool,
    /// The row-range form: the block size of the output's first index (1 if not blocked).
    rows: Option<usize>,
    /// Set while emitting the outermost loop's header (the row-range form replaces its range).
    outermost: std::cell::Cell<bool>,
    /// The `par: Par` parameter of a user kernel run in row ranges.
    par: Option<Ident>,
    /// A sparse output filled in its own arrays as the loops produce its entries in level
    /// order; `None` when entries are collected and assembled by the runtime.
    insert: Option<OutputInsert>,
    /// Values read once before the innermost loop that does not move them (loop-invariant
    /// loads, as MLIR's and TACO's code motion hoist `A(i,k)` out of the `j` loop): access and
    /// the variable holding its value.
    hoisted: std::cell::RefCell<Vec<(usize, Ident)>>,
    /// The slice of a dense format output's values the loops write (`c_values`).
    out_slice: Option<Ident>,
    /// The value type the operands store when the kernel computes in a wider one
    /// ([`ValueType::compute`]): loads widen, the output is stored back narrowed. For a kernel
    /// over quantized operands, the output's quantized type (`None` for an `f32` output).
    stored: Option<ValueType>,
    /// Per kernel tensor: its quantization when it holds quantized values.
    quant: Vec<Option<QuantOp>>,
    /// Set while emitting the body that runs rows sharing a pattern together
    /// ([`Self::shared_rows`]): the shared matrix's values, the workspace updates and the
    /// compress work on lanes.
    lanes: std::cell::Cell<bool>,
    /// How the row being emitted finds its coordinates ([`RowSum`]): by first touches, by the
    /// bits of a window, or by the flags of its span.
    row_sum: std::cell::Cell<RowSum>,
    /// What the rarer rows of a Gustavson kernel may take into functions of their own
    /// ([`Outline`]); `None` where they stay inline.
    outline: Option<Outline>,
    /// The values array of the operand whose streams the loops prefetch ([`Cx::prefetches`]),
    /// once one loop does: the kernel then asks `prefetch::enabled` and `prefetch::locality`
    /// of it before its loops.
    prefetched: std::cell::RefCell<Option<TokenStream>>,
    /// Set once a loop prefetches the blocks of a block row ([`Streamed::Block`]): the
    /// outermost loop over the output's rows (or a range of them) then runs in
    /// `prefetch::row_order`, two streams of block rows when the kernel prefetches.
    streams_blocks: std::cell::Cell<bool>,
}

/// The kernel-level values the rarer rows of a Gustavson kernel (spanned rows, rows run
/// together) may take as arguments when [`Cx::outlined`] moves their loops into a function of
/// their own, out of the loop that sums the other rows.
///
/// A free kernel that runs rows together emits all its row loops in one loop; the code of the
/// rarer ones took registers from the marker's product loop (it reloaded `B`'s values pointer
/// from the stack each product). With them in functions of their own, `A·A` (the macro's
/// build, old and new alternating, AMD EPYC (Zen 4), 2026-11-28): cryg2500 114-118 -> 110-111
/// µs, jagmesh7 84-85 -> 82-83 µs, bayer10 2% faster, bcsstk13 4.0 -> 3.7 ms, bcsstk16 8.9 ->
/// 8.2 ms. The windowed rows stay inline: a call a row cost west0067's short rows 10%.
struct Outline {
    /// Per value a body may name: its name, the parameter that takes it and the argument
    /// that passes it (`&mut` for a buffer the body fills, by value for a number).
    values: Vec<(String, TokenStream, TokenStream)>,
    /// Every name the kernel binds before its loops: a body that names one of them not in
    /// `values` stays inline.
    locals: std::collections::BTreeSet<String>,
}

/// Where a loop streaming a stored operand prefetches ([`Cx::prefetches`]).
#[derive(Clone, Copy)]
enum Streamed<'a> {
    /// A row summed in partial sums (CSR's SpMV): its segment `lo..hi` of coordinates and
    /// values, before its loop (`prefetch::row_unchecked`: a segment lies within the arrays).
    Row,
    /// A block of a block row (BSR's), at its position in the loop (`prefetch::ahead`, its
    /// values `prefetch::blocks_ahead`: per row, they ran 1.3-1.5x slower than per block on
    /// Zen 2).
    Block(&'a Ident),
    /// A step of an n:m level's partial sums (2:4's SpMV), at the step's first position: the
    /// values alone (`prefetch::ahead`), the coordinates (a byte or less an entry) left to the
    /// hardware. On Zen 2 (scratch, the report's 2:4 layer of 2,048 x 4,096, `f64`): 3.8-4.7
    /// ms without, 2.4-2.5 ms with (about 90% of the read probe); the coordinates prefetched
    /// too, 2.5-2.6 ms.
    Values(&'a Ident),
    /// A row whose entries the loop adds into a dense output at their coordinates (CSR's
    /// transposed SpMV, `y(j) += A(i, j) * x(i)`): its segment `lo..hi`, before its loop
    /// (`prefetch::row_unchecked`), into all cache levels whatever the values' width
    /// (`Locality::Temporal`: the scattered writes keep the output's lines close to the core,
    /// and the streams' lines prefetched past the L2 were gone again by their turn). On Zen 2
    /// (scratch, `kron(I_40, bcsstk16)`, `f64`, six runs interleaved): 11.4-12.7 ms without,
    /// 11.0-11.6 ms non-temporal, 10.5-11.1 ms temporal; in cache (bcsstk16 alone) 195 against
    /// 238 µs, which `prefetch::enabled` leaves out.
    Scattered,
}

/// How a row of a Gustavson kernel with [`WindowedRows`] finds the coordinates it touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RowSum {
    /// Each product tests its slot for the untouched marker; a first touch is listed
    /// (`Touched`) and the list sorted.
    FirstTouch,
    /// The row lies within 64 columns (`generated::RowWindow`): the loop over `B`'s row adds
    /// its bits to the row's pattern, the workspace updates add into `window_sums` without a
    /// test, and the compress reads the pattern.
    Window,
    /// The row is summed over its span (`generated::RowSpans`): the updates add into
    /// `window_sums` (`window_sums_rows` for rows run together) without a test and set the
    /// coordinate's flag, and the compress scans the span's flags.
    Span,
}

/// The compress of rows run together (`rows` lanes from row `row` on), given the row's
/// coordinates as `touched_now`: for each lane, the output's levels above the workspace's
/// (`parent`), the coordinates (`extend`) and that lane's values of `array` appended to
/// `values`; then `reset` for each coordinate `j`, which leaves its slot ready for the next
/// rows.
fn lanes_out(
    (j, row, parent, extend, values): (&Ident, &Ident, &TokenStream, &TokenStream, &Ident),
    array: TokenStream,
    reset: TokenStream,
) -> TokenStream {
    quote! {
        // the rows have the same coordinates, each its lane's values
        for lane in 0..rows {
            let #row = #row + lane;
            #parent
            #extend
            let lane_values = touched_now.iter().map(|&#j| #array.get_unchecked(#j)[lane]);
            #values.extend(lane_values);
        }
        for &#j in touched_now {
            #reset
        }
    }
}

/// A two-way union merge that also runs without a branch per entry
/// ([`Cx::branch_free_union`]).
struct BranchFree {
    /// The left operand of `x ± y`: its iterator, its access and the index of the case where
    /// only it stands.
    left: (usize, usize, usize),
    /// The right operand, likewise.
    right: (usize, usize, usize),
    /// `x - y` rather than `x + y`.
    sub: bool,
}

/// A quantized operand: the format struct whose associated functions (de)quantize its values
/// (`Fmt::<i8>::dequantize_value(q, k)`), its storage type, and its quantized axis.
struct QuantOp {
    format: Ident,
    storage: TokenStream,
    axis: Option<usize>,
}

/// In-order insertion into the output's arrays (MLIR's `sparse_tensor.insert`), each level's
/// part from its codegen unit ([`LevelGen::insert`]).
struct OutputInsert {
    /// Before the loops: the buffers.
    init: TokenStream,
    /// Per entry, before its value: the levels' steps.
    step: TokenStream,
    /// The same steps split for a loop over the last level's coordinates under one parent
    /// (a workspace's compress), when the levels above store one position per coordinate.
    per_parent: Option<PerParent>,
    /// The values buffer (`c_values`).
    values: Ident,
    /// The last level's position of the entry when it is dense (values are written at it,
    /// with the gaps zero), `None` when every entry appends a value.
    leaf: Option<TokenStream>,
    /// After the loops: closes the levels and moves the arrays into the output.
    finish: TokenStream,
}

/// How many times `name` occurs in `t` as an identifier, at any depth of groups.
fn count_ident(t: &TokenStream, name: &str) -> usize {
    t.clone()
        .into_iter()
        .map(|t| match t {
            proc_macro2::TokenTree::Ident(i) => usize::from(i == name),
            proc_macro2::TokenTree::Group(g) => count_ident(&g.stream(), name),
            _ => 0,
        })
        .sum()
}

/// `t` without its top-level statement `let NAME = ...;`.
fn drop_let(t: &TokenStream, name: &str) -> TokenStream {
    let tokens: Vec<proc_macro2::TokenTree> = t.clone().into_iter().collect();
    let is_let = |k: usize| {
        matches!(&tokens[k], proc_macro2::TokenTree::Ident(i) if i == "let")
            && matches!(tokens.get(k + 1), Some(proc_macro2::TokenTree::Ident(i)) if i == name)
    };
    let Some(start) = (0..tokens.len()).find(|&k| is_let(k)) else {
        return t.clone();
    };
    let end = (start..tokens.len())
        .find(|&k| matches!(&tokens[k], proc_macro2::TokenTree::Punct(p) if p.as_char() == ';'))
        .map_or(tokens.len(), |k| k + 1);
    tokens[..start]
        .iter()
        .chain(&tokens[end..])
        .cloned()
        .collect()
}

/// Whether `name` occurs in `t` as an identifier, at any depth of groups.
fn mentions(t: &TokenStream, name: &str) -> bool {
    count_ident(t, name) > 0
}

/// How [`Cx::partial_sums`] reads a level's coordinates: `one` at the position variable,
/// and `pair(at)` the coordinates at `at` and `at + 1` with one load, where the level allows it
/// ([`crate::codegen::level::LevelCtx::read_crd_pair`]).
struct Reads<'a> {
    one: &'a TokenStream,
    pair: &'a dyn Fn(TokenStream) -> Option<TokenStream>,
}

/// [`OutputInsert`]'s steps for the entries of one parent (a workspace's compress).
struct PerParent {
    /// The last level's coordinate, as tokens (`j`).
    coord: String,
    /// Once per parent, before its entries: the levels above and the last level's `open`.
    parent: TokenStream,
    /// Per entry: the last level's step.
    step: TokenStream,
    /// All entries at once: [`Insert::extend`] over `touched_now`.
    extend: Option<TokenStream>,
    /// Every level above is dense: `parent` computes positions and opens a segment, and may
    /// run for a parent that gets no entry (an empty segment is stored the same either way),
    /// so entries appended in order open their row once, before the loop over `coord`.
    dense_above: bool,
}

fn unsupported(what: &str) -> Error {
    Error::plain(format!(
        "the Rust back end does not generate {what} yet (`sparse eval` runs it through the interpreter)"
    ))
}

fn mutable(kind: &ParamKind) -> bool {
    match kind {
        ParamKind::Slice { mutable }
        | ParamKind::Matrix { mutable, .. }
        | ParamKind::DenseArray { mutable, .. }
        | ParamKind::Format { mutable, .. }
        | ParamKind::Scalar { mutable } => *mutable,
        ParamKind::Par => false,
    }
}

/// The `(offset, size, stride)` triples of static slices; an error for a dynamic `?`.
fn static_slices(slices: &[DimSlice]) -> Result<Vec<(usize, usize, usize)>, Error> {
    slices
        .iter()
        .map(|s| match (s.offset, s.size, s.stride) {
            (Some(o), Some(z), Some(t)) => Ok((o as usize, z as usize, (t as usize).max(1))),
            _ => Err(unsupported("slices with dynamic (`?`) values")),
        })
        .collect()
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Emits the kernel function for `p`, compiled from `k`.
///
/// Errors: a parameter passed in a way the statement cannot use; a loop form or a value type
/// (quantized operands other than formats, per-axis quantized outputs the statement reads) not generated yet (named in the message); an `i1` literal other
/// than 0 and 1.
pub fn emit(k: &KernelDecl, p: &Program, rt: &TokenStream) -> Result<TokenStream, Error> {
    // values stored narrow (`f16`, `bf16`, 8- and 16-bit integers) are computed in a wider
    // type, as the interpreter does: loads widen, the output is computed in a buffer of the
    // wide type and stored back once, at the end
    let stored = p.kernel.value;
    // quantized operands compute in `f32` (their expressed type): loads dequantize, a
    // quantized output is computed in an `f32` buffer and quantized once, at the end
    let quantized = p.kernel.tensors.iter().any(|t| t.value.is_quantized());
    let out_value = p.kernel.tensors[p.kernel.output.tensor].value;
    let stored = if quantized { out_value } else { stored };
    let wide_program;
    let p = if quantized && stored == ValueType::F32 {
        let mut wide = p.clone();
        wide.kernel.value = ValueType::F32;
        wide_program = wide;
        &wide_program
    } else if stored.compute() == stored {
        p
    } else {
        let mut wide = p.clone();
        wide.kernel.value = stored.compute();
        wide_program = wide;
        &wide_program
    };
    let inputs = p.inputs();
    let mut ops: Vec<Operand> = Vec::with_capacity(p.kernel.tensors.len());
    let mut param_of = Vec::with_capacity(inputs);
    for t in &p.kernel.tensors[..inputs] {
        match k.params.iter().position(|q| q.name == t.name) {
            Some(i) => param_of.push(i),
            None => return Err(Error::plain(format!("no parameter `{}`", t.name))),
        }
    }
    let out = param_of[p.kernel.output.tensor];
    for (i, param) in k.params.iter().enumerate() {
        if matches!(param.kind, ParamKind::Par) {
            continue;
        }
        if !param_of.contains(&i) {
            return Err(Error::plain(format!(
                "the parameter `{}` is not used by the statement",
                param.name
            )));
        }
        if (i == out) != mutable(&param.kind) {
            let msg = if i == out {
                format!("the output `{}` must be passed by `&mut`", param.name)
            } else {
                format!(
                    "the input `{}` must be passed by `&`, not `&mut`",
                    param.name
                )
            };
            return Err(Error::plain(msg));
        }
    }
    let vtok = |v: ValueType| {
        if k.method.is_some() {
            quote!(V)
        } else {
            value_type(v, rt)
        }
    };
    let mut conversions = TokenStream::new();
    for (t, decl) in p.kernel.tensors.iter().enumerate() {
        let (name, kind, converts) = if t < inputs {
            let param = &k.params[param_of[t]];
            let name = match &k.method {
                Some(m) if m.receiver == param_of[t] => Ident::new("self", param.name.span()),
                _ => param.name.clone(),
            };
            (name, param.kind.clone(), None)
        } else {
            let c = p
                .conversions
                .iter()
                .find(|c| c.to == t)
                .ok_or_else(|| Error::plain("a converted tensor without its conversion"))?;
            let from = &k.params[param_of[c.from]].name;
            let encoding = decl
                .encoding
                .clone()
                .ok_or_else(|| Error::plain("a conversion to a dense tensor"))?;
            // an earlier conversion of the same tensor may have been superseded (the
            // sparsifier converts the declared tensor again): number the later ones
            let earlier = p
                .conversions
                .iter()
                .filter(|e| e.from == c.from && e.to < t)
                .count();
            let suffix = if earlier == 0 {
                String::new()
            } else {
                (earlier + 1).to_string()
            };
            let format = format_ident!("{}Converted{}", upper_first(&from.to_string()), suffix);
            let name = format_ident!("{}_converted{}", from, suffix);
            let used = p.kernel.accesses.iter().any(|a| a.tensor == t);
            if used {
                let mut d = crate::codegen::Declaration::new(
                    TokenStream::new(),
                    format.clone(),
                    encoding.clone(),
                );
                d.converted = true;
                let items =
                    crate::codegen::generate(&d, rt).map_err(|e| Error::plain(e.to_string()))?;
                let quantized = matches!(
                    &k.params[param_of[c.from]].kind,
                    ParamKind::Format { quant: Some(_), .. }
                );
                conversions.extend(if quantized {
                    // converted as its real values (an integer zero point is a real 0, which
                    // the conversion leaves out as it leaves out every zero): the kernel reads
                    // the converted operand as plain `f32`
                    let v = value_type(ValueType::F32, rt);
                    quote! {
                        #items
                        let #name: #format<#v> = #from.dequantized().convert()?;
                    }
                } else {
                    let v = vtok(decl.value);
                    quote! {
                        #items
                        let #name: #format<#v> = #from.convert()?;
                    }
                });
            }
            (
                name,
                ParamKind::Format {
                    mutable: false,
                    format,
                    encoding: Box::new(encoding),
                    shape: None,
                    quant: None,
                },
                Some(c.from),
            )
        };
        let (levels, slices, encoding) = match &kind {
            ParamKind::Format { encoding, .. } => {
                let mut e = (**encoding).clone().into_inner();
                let slices = match e.dim_slices.take() {
                    Some(s) => Some(static_slices(&s)?),
                    None => None,
                };
                let (gens, ctxs) = crate::codegen::level_contexts(&e, rt, &quote!(#name), true)
                    .map_err(|e| Error::plain(e.to_string()))?;
                (gens.into_iter().zip(ctxs).collect(), slices, Some(e))
            }
            _ => (Vec::new(), None, None),
        };
        let prefix = if t < inputs {
            k.params[param_of[t]].name.to_string().to_lowercase()
        } else {
            name.to_string().to_lowercase()
        };
        ops.push(Operand {
            name,
            prefix,
            kind,
            converts,
            levels,
            slices,
            encoding,
        });
    }
    // per tensor, the quantization its loads (and the output's stores) go through
    let mut quant: Vec<Option<QuantOp>> = Vec::with_capacity(ops.len());
    for (t, (decl, op)) in p.kernel.tensors.iter().zip(&ops).enumerate() {
        if !decl.value.is_quantized() {
            quant.push(None);
            continue;
        }
        let q = match (&op.kind, op.converts) {
            (ParamKind::Format { format, quant: Some(q), .. }, None) => QuantOp {
                format: format.clone(),
                storage: q.storage_type(),
                axis: q.axis,
            },
            (_, Some(_)) => {
                // converted as its real values (`Fmt::dequantized`): read as plain `f32`
                quant.push(None);
                continue;
            }
            _ => {
                return Err(unsupported(&format!(
                    "quantized operands other than formats (`{}`: declare it as a format with the quantized tensor type)",
                    decl.name
                )))
            }
        };
        let output_read = p.kernel.accumulate || p.kernel.accesses.iter().any(|a| a.tensor == t);
        if t == p.kernel.output.tensor && q.axis.is_some() && output_read {
            // written, a sparse one is rebuilt from its real entries, each quantized with its
            // pair, a dense one quantized position by position with the pair of its
            // coordinate; but the output's own loads dequantize with one pair
            let mut e = unsupported(&format!(
                "per-axis quantized outputs that the statement reads (`{}`: `+=` or on the right; quantize it per tensor, or compute into f32)",
                decl.name
            ));
            e.span = Some(p.kernel.output.span);
            return Err(e);
        }
        quant.push(Some(q));
    }
    let mut cx = Cx {
        p,
        ops,
        quant,
        rt,
        temp_ops: vec![None; p.temps],
        temp_appended: vec![false; p.temps],
        snapshot: None,
        generic: k.method.is_some(),
        // a built-in as its method says, a user kernel as the program says (the interpreter
        // adds in the same order)
        reassociate: k
            .method
            .as_ref()
            .map_or(p.reassociates(), |m| m.reassociate),
        rows: None,
        outermost: std::cell::Cell::new(false),
        par: None,
        insert: None,
        hoisted: Default::default(),
        out_slice: None,
        stored: (stored != p.kernel.value).then_some(stored),
        lanes: std::cell::Cell::new(false),
        row_sum: std::cell::Cell::new(RowSum::FirstTouch),
        outline: None,
        prefetched: std::cell::RefCell::new(None),
        streams_blocks: std::cell::Cell::new(false),
    };
    if k.method.as_ref().is_some_and(|m| m.rows) {
        cx.rows = Some(cx.rows_unit()?);
    }
    if let Some(par) = k.params.iter().find(|q| matches!(q.kind, ParamKind::Par)) {
        let why = |what: &str| Error::plain(format!("`{}: Par` needs {what}", par.name));
        cx.rows = Some(cx.rows_unit().map_err(|_| {
            why("the outermost loop to run over the rows of a dense output slice (the output's first index, not reduced)")
        })?);
        if !p.conversions.is_empty() {
            return Err(why("operands the kernel reads without converting them"));
        }
        if p.kernel
            .accesses
            .iter()
            .any(|a| a.tensor == p.kernel.output.tensor)
        {
            return Err(why("an output the statement does not read"));
        }
        cx.par = Some(par.name.clone());
    }
    collect_temps(&p.body, &mut cx.temp_ops, &mut cx.temp_appended);
    // a parameter must not be shadowed by a variable of the generated loops
    let locals = cx.locals();
    if let Some(param) = k
        .params
        .iter()
        .find(|q| locals.contains(&q.name.to_string()))
    {
        return Err(Error::plain(format!(
            "the parameter `{}` has the name of a variable of the generated loops (an index, a position, an extent or a buffer); rename it",
            param.name
        )));
    }
    let out_t = p.kernel.output.tensor;
    // a pattern output (`explicitVal`) would need every computed value checked against its
    // constant: refused at the output (the interpreter assembles it and checks each value)
    if cx.ops[out_t]
        .encoding
        .as_ref()
        .is_some_and(|e| e.explicit_val.is_some())
    {
        let mut e = unsupported(&format!(
            "outputs whose format has an `explicitVal` (`{}`)",
            cx.ops[out_t].name
        ));
        e.span = Some(p.kernel.output.span);
        return Err(e);
    }
    let sparse_out = match (&cx.ops[out_t].kind, p.strategy) {
        (_, Strategy::InPlace) => None,
        (ParamKind::Format { format, .. }, _) => Some(format.clone()),
        _ => return Err(Error::plain("a sparse output strategy for a dense output")),
    };
    let receiver = k.method.as_ref().map(|m| m.receiver);
    let mut params: Vec<TokenStream> = k
        .params
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != receiver)
        .map(|(_, param)| {
            let name = &param.name;
            let v = vtok(param.value);
            match &param.kind {
                ParamKind::Slice { mutable: true } | ParamKind::Matrix { mutable: true, .. } => {
                    quote!(#name: &mut [#v])
                }
                ParamKind::Slice { mutable: false } | ParamKind::Matrix { mutable: false, .. } => {
                    quote!(#name: &[#v])
                }
                ParamKind::Scalar { mutable: true } => quote!(#name: &mut #v),
                ParamKind::Scalar { mutable: false } => quote!(#name: #v),
                ParamKind::DenseArray {
                    mutable: true,
                    order,
                    ..
                } => quote!(#name: &mut #rt::layout::DenseArray<#v, #order>),
                ParamKind::DenseArray { order, .. } => {
                    quote!(#name: &#rt::layout::DenseArray<#v, #order>)
                }
                ParamKind::Format {
                    mutable: true,
                    format,
                    ..
                } => quote!(#name: &mut #format<#v>),
                ParamKind::Format { format, .. } => quote!(#name: &#format<#v>),
                ParamKind::Par => quote!(#name: #rt::Par),
            }
        })
        .collect();
    if let Some(r) = receiver {
        let kind = &k.params[r].kind;
        params.insert(
            0,
            if mutable(kind) {
                quote!(&mut self)
            } else {
                quote!(&self)
            },
        );
    }
    if let Some(m) = &k.method {
        params.extend(m.extra.iter().cloned());
    }
    if k.method.as_ref().is_some_and(|m| m.rows) {
        params.push(quote!(row0: usize));
    }
    let (extent_lets, checks) = cx.extents();
    let mut init = TokenStream::new();
    let out_read = p.kernel.accesses.iter().any(|a| a.tensor == out_t);
    let (widen_out, narrow_out, wide_values) = if p.strategy == Strategy::InPlace {
        cx.wide_output(p.kernel.accumulate || out_read)?
    } else {
        (TokenStream::new(), TokenStream::new(), None)
    };
    if p.strategy == Strategy::InPlace && out_read && !p.kernel.accumulate {
        // the output is cleared before the loops: the right-hand side reads a copy
        let name = &cx.ops[out_t].name;
        let snap = format_ident!("{}_input", name);
        init.extend(match cx.ops[out_t].kind {
            ParamKind::Scalar { .. } => quote!(let #snap = *#name;),
            ParamKind::Slice { .. } | ParamKind::Matrix { .. } => {
                quote!(let #snap = #name.to_vec();)
            }
            // taken before the array is cleared ([`Cx::dense_arrays`])
            ParamKind::DenseArray { .. } => TokenStream::new(),
            ParamKind::Format { .. } => match &wide_values {
                Some(wide) => quote!(let #snap = #wide.clone();),
                None => quote!(let #snap = #name.values.clone();),
            },
            ParamKind::Par => return Err(Error::plain("`Par` is not an operand")),
        });
        cx.snapshot = Some(snap);
    }
    let mut finish = TokenStream::new();
    if let Some(wide) = &wide_values {
        // the loops read and write the wide copy of a dense format's values
        let vals = format_ident!("{}_values", cx.ops[out_t].prefix);
        init.extend(quote!(let #vals = &mut #wide[..];));
        cx.out_slice = Some(vals);
    } else if sparse_out.is_none()
        && matches!(cx.ops[out_t].kind, ParamKind::Format { .. })
        && !(out_read && cx.snapshot.is_none())
    {
        // a dense format written in place: its values as a slice, so the loops keep the
        // pointer in a register (the statement reads the output through its copy, if at all)
        let name = &cx.ops[out_t].name;
        let vals = format_ident!("{}_values", cx.ops[out_t].prefix);
        init.extend(quote!(let #vals = &mut #name.values[..];));
        cx.out_slice = Some(vals);
    }
    match &sparse_out {
        None => init.extend(cx.init_output()),
        Some(format) => {
            let v = vtok(p.kernel.value);
            let rank = usize_lit(p.kernel.output.indices.len());
            let o = &k.params[out].name;
            let in_order = matches!(p.strategy, Strategy::Append | Strategy::Workspace { .. });
            // a per-axis quantized output is quantized with the pair of each entry's
            // coordinate: rebuilt from its real entries (`from_coo_real`), not inserted
            let per_axis = cx.quant[out_t].as_ref().is_some_and(|q| q.axis.is_some());
            cx.insert = if in_order && !per_axis {
                cx.output_insert(o, format, &v)?
            } else {
                None
            };
            match &cx.insert {
                Some(ins) => {
                    init.extend(ins.init.clone());
                    finish.extend(ins.finish.clone());
                }
                None => init.extend(quote!(let mut entries: ::std::vec::Vec<([usize; #rank], #v)> = ::std::vec::Vec::new();)),
            }
            if let Strategy::Workspace { var } = p.strategy {
                let n = cx.extent(var);
                if cx.marks_untouched() {
                    let rt = cx.rt;
                    let inputs = cx.operand_values();
                    init.extend(quote! {
                        // a slot not touched in this row holds a signaling NaN no operand holds,
                        // which arithmetic on them never yields
                        let untouched = #rt::generated::untouched_marker(&[#(#inputs),*]);
                        let mut workspace = ::std::vec![untouched; #n];
                        let mut touched = #rt::generated::Touched::new(#n);
                    });
                    if cx.shared_rows().is_some() {
                        init.extend(quote! {
                            // lanes for rows run together, allocated when two rows first share
                            let mut workspace_rows: ::std::vec::Vec<[f64; #rt::generated::SHARED_ROWS]> = ::std::vec::Vec::new();
                        });
                    }
                    if let Some(w) = cx.windowed_rows() {
                        let (_, _, lcx) = cx.level(w.iter);
                        let base = &lcx.base;
                        let pos = lcx.pos_field.as_ref().expect("checked in windowed_rows");
                        let crd = &lcx.crd.as_ref().expect("checked in windowed_rows").field;
                        init.extend(quote! {
                            // rows whose coordinates lie within 64 columns are summed from `-0.0`
                            // with no first-touch test, and their coordinates read from the bits of
                            // the rows of B they reach; so are rows with many products for their
                            // span, their coordinates flagged and read by one scan of the span
                            let window = #rt::generated::RowWindow::new(&#base.#pos, &#base.#crd);
                            let mut window_sums = if window.is_some() {
                                ::std::vec![-0.0; #n]
                            } else {
                                ::std::vec::Vec::new()
                            };
                            let mut spans = #rt::generated::RowSpans::new(#n);
                            let mut window_sums_rows: ::std::vec::Vec<[f64; #rt::generated::SHARED_ROWS]> = ::std::vec::Vec::new();
                        });
                    }
                } else if cx.sum_workspace() {
                    let identity = cx.sum_identity();
                    let rt = cx.rt;
                    init.extend(quote! {
                        let identity = #identity;
                        let mut workspace = ::std::vec![identity; #n];
                        let mut visited = ::std::vec![false; #n];
                        let mut touched = #rt::generated::Touched::new(#n);
                    });
                } else {
                    let zero = cx.zero();
                    let rt = cx.rt;
                    init.extend(quote! {
                        let mut workspace = ::std::vec![#zero; #n];
                        let mut visited = ::std::vec![false; #n];
                        let mut touched = #rt::generated::Touched::new(#n);
                    });
                }
            }
            let buffered_op = output_reduce(&p.body);
            let narrow = cx.narrow(quote!(w));
            if p.strategy == Strategy::Buffer
                && (narrow.is_some() || !matches!(buffered_op, None | Some(ReduceOp::Sum)))
            {
                // `from_coo` sums duplicates (in the stored type): combine them with the
                // reduction first, in the order they were produced (a stable sort)
                let c = combine_assign(
                    buffered_op.unwrap_or(ReduceOp::Sum),
                    quote!(last.1),
                    quote!(v),
                    cx.wraps(),
                );
                finish.extend(quote! {
                    entries.sort_by(|a, b| a.0.cmp(&b.0));
                    let mut combined: ::std::vec::Vec<([usize; #rank], #v)> = ::std::vec::Vec::with_capacity(entries.len());
                    for (c, v) in entries {
                        match combined.last_mut() {
                            Some(last) if last.0 == c => { #c }
                            _ => combined.push((c, v)),
                        }
                    }
                    let entries = combined;
                });
            }
            // a quantized output rebuilt from its entries is assembled from the real values
            // and quantized whole: the fill its levels add (a block's other elements, an n:m
            // group's, ELL's) holds the zero point, a real 0, not the integer 0
            let quantized_out = match (&cx.stored, &cx.quant[out_t]) {
                (Some(ValueType::Quant { .. }), Some(q)) if cx.insert.is_none() => Some(q),
                _ => None,
            };
            if let (Some(narrow), None, None) = (&narrow, &cx.insert, quantized_out) {
                finish.extend(quote! {
                    let entries: ::std::vec::Vec<_> = entries.into_iter().map(|(c, w)| (c, #narrow)).collect();
                });
            }
            // appended in order or through a workspace: already in level order
            if cx.insert.is_some() {
                // inserted into the output's arrays
            } else if let Some(QuantOp {
                format, storage, ..
            }) = quantized_out
            {
                finish.extend(
                    quote!(*#o = #format::<#storage>::from_coo_real(#o.dim_shape, entries)?;),
                );
            } else if in_order {
                finish.extend(quote!(*#o = #format::from_ordered_coo(#o.dim_shape, entries)?;));
            } else {
                finish.extend(quote!(*#o = #format::from_coo(#o.dim_shape, entries)?;));
            }
        }
    }
    let ok = cx.result_variant("Ok");
    cx.outermost.set(cx.rows.is_some());
    if k.method.is_none() && cx.par.is_none() && cx.shared_rows().is_some() {
        let before = quote!(#checks #conversions #widen_out #init);
        cx.outline = Some(cx.outline_values(&k.params, &params, &extent_lets, &before));
    }
    let body = cx.stmts(&p.body)?;
    // whether the loops prefetch their streamed operand, asked once per call (per range of
    // a parallel kernel)
    let init = match cx.prefetched.borrow().as_ref() {
        Some(values) => {
            // (the scattered rows' prefetches name their locality)
            let locality = mentions(&body, "locality")
                .then(|| quote!(let locality = #rt::prefetch::locality(#values);));
            quote! {
                #init
                let prefetch = #rt::prefetch::enabled(#values);
                #locality
            }
        }
        None => init,
    };
    // read only the extents something uses
    let arrays = cx.dense_arrays();
    let used =
        idents(&quote!(#checks #arrays #conversions #widen_out #init #body #finish #narrow_out));
    let extent_lets: Vec<(Ident, TokenStream)> = extent_lets
        .into_iter()
        .filter(|(n, _)| used.contains(&n.to_string()))
        .collect();
    let extents: TokenStream = extent_lets
        .iter()
        .map(|(n, e)| quote!(let #n = #e;))
        .collect();
    let safety = quote!(#rt::safety!("every position read lies in a segment of its level's positions and every stored coordinate is below its level size (`from_coo` builds such arrays, `from_raw_parts` validates them, `from_raw_parts_unchecked` makes it the caller's promise); every dense operand's size was checked against its indices' extents above."););
    let (init, body) = match &cx.par {
        None => (init, quote!(#safety unsafe { #body })),
        Some(par) => {
            // the loops run on row ranges of the output, each a task of `par`
            let out = &k.params[out].name;
            let v = vtok(p.kernel.value);
            let unit = usize_lit(cx.rows.unwrap_or(1));
            let before = cx.balance();
            let run = if idents(&body).contains("int_div") {
                // an integer division can fail: so can each range
                quote! {
                    let rows = |#out: &mut [#v], row0: usize| -> ::core::result::Result<(), #rt::StorageError> {
                        #init
                        #safety
                        unsafe { #body }
                        ::core::result::Result::Ok(())
                    };
                    #rt::generated::par_rows_try(#par, #out, #unit, #before, rows)?;
                }
            } else {
                quote! {
                    let rows = |#out: &mut [#v], row0: usize| {
                        #init
                        #safety
                        unsafe { #body }
                    };
                    #rt::generated::par_rows_with(#par, #out, #unit, #before, rows);
                }
            };
            (TokenStream::new(), run)
        }
    };
    let name = &k.name;
    let vis = &k.vis;
    // a dense array whose order is a type parameter may have any rank: checked first
    let err = cx.result_variant("Err");
    let ranks: TokenStream = cx
        .ops
        .iter()
        .filter_map(|op| match &op.kind {
            ParamKind::DenseArray {
                minor_to_major: None,
                rank,
                ..
            } => {
                let name = &op.name;
                let rank = usize_lit(*rank);
                Some(quote! {
                    if #name.shape().len() != #rank {
                        return #err(#rt::StorageError::RankMismatch {
                            expected: #rank,
                            got: #name.shape().len(),
                        });
                    }
                })
            }
            _ => None,
        })
        .collect();
    let generics = match &k.method {
        Some(m) if !m.generics.is_empty() => {
            let g = &m.generics;
            quote!(<#(#g),*>)
        }
        _ => TokenStream::new(),
    };
    let index = if cx
        .ops
        .iter()
        .any(|o| o.levels.iter().any(|(_, l)| !l.lt.is_dense()))
    {
        quote!(use #rt::Index as _;)
    } else {
        TokenStream::new()
    };
    let doc = match &k.method {
        Some(m) => m.doc.clone(),
        None => vec![
            format!(" `{}`, compiled by the sparsifier.", k.statement.trim()),
            String::new(),
            String::from(
                " Errors: `StorageError::LengthMismatch` naming the operand (and dimension) whose",
            ),
            String::from(" size differs from the extent of its index."),
        ],
    };
    // a dense array's buffer read from its struct carries no `noalias` for the optimizer (a
    // store to the output might change any operand), so a free kernel with dense arrays runs
    // its loops in a function of its own that takes the buffers as slices (8% off an SpMM of
    // bcsstk16 with k = 16)
    let loops_fn = format_ident!("{}_loops", name);
    let separate = k.method.is_none()
        && cx.par.is_none()
        && cx
            .ops
            .iter()
            .any(|o| matches!(o.kind, ParamKind::DenseArray { .. }))
        && !k.params.iter().any(|q| q.name == loops_fn);
    let loops = quote!(#conversions #widen_out #init #body #finish #narrow_out #ok(()));
    if separate {
        let mut inner = Vec::new();
        let mut args = Vec::new();
        for (param, outer) in k.params.iter().zip(&params) {
            let n = &param.name;
            let v = vtok(param.value);
            inner.push(match &param.kind {
                ParamKind::DenseArray { mutable: true, .. } => quote!(#n: &mut [#v]),
                ParamKind::DenseArray { .. } => quote!(#n: &[#v]),
                _ => outer.clone(),
            });
            args.push(quote!(#n));
        }
        let strides = cx.ops.iter().flat_map(|o| match &o.kind {
            ParamKind::DenseArray {
                minor_to_major: Some(m),
                ..
            } => m[1..]
                .iter()
                .map(|d| format_ident!("{}_stride{}", o.name, d))
                .collect(),
            ParamKind::DenseArray { rank, .. } => (0..*rank)
                .map(|d| format_ident!("{}_stride{}", o.name, d))
                .collect(),
            _ => Vec::new(),
        });
        for n in extent_lets
            .iter()
            .map(|(n, _)| n)
            .chain(strides.collect::<Vec<_>>().iter())
        {
            inner.push(quote!(#n: usize));
            args.push(quote!(#n));
        }
        let out_t = p.kernel.output.tensor;
        if let (Some(snap), ParamKind::DenseArray { .. }) = (&cx.snapshot, &cx.ops[out_t].kind) {
            // the copy of the output the statement reads, taken before it was cleared
            let v = value_type(p.kernel.value, rt);
            inner.push(quote!(#snap: &[#v]));
            args.push(quote!(&#snap));
        }
        return Ok(quote! {
            #(#[doc = #doc])*
            #vis fn #name #generics(#(#params),*) -> ::core::result::Result<(), #rt::StorageError> {
                #[allow(clippy::too_many_arguments)]
                #[inline(never)]
                fn #loops_fn(#(#inner),*) -> ::core::result::Result<(), #rt::StorageError> {
                    #index
                    #loops
                }
                #ranks
                #extents
                #checks
                #arrays
                #loops_fn(#(#args),*)
            }
        });
    }
    Ok(quote! {
        #(#[doc = #doc])*
        #vis fn #name #generics(#(#params),*) -> ::core::result::Result<(), #rt::StorageError> {
            #index
            #ranks
            #extents
            #checks
            #arrays
            #loops
        }
    })
}

/// `e` as the receiver of a method call: parenthesized when it is an operation.
fn receiver_of(e: &TokenStream) -> TokenStream {
    let compound = e.clone().into_iter().any(
        |t| matches!(t, proc_macro2::TokenTree::Punct(p) if "+-*/%&|^<>=!".contains(p.as_char())),
    );
    if compound {
        quote!((#e))
    } else {
        e.clone()
    }
}

/// Every identifier in `ts`.
fn idents(ts: &TokenStream) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for t in ts.clone() {
        match t {
            proc_macro2::TokenTree::Ident(i) => {
                out.insert(i.to_string());
            }
            proc_macro2::TokenTree::Group(g) => out.extend(idents(&g.stream())),
            _ => {}
        }
    }
    out
}

/// The names `body` reads from outside itself (its free variables): a path of one identifier
/// not bound in scope by a `let`, a closure's parameters, a `for` loop's, an `if let`'s or a
/// `while let`'s pattern or a `match` arm's; in a macro's tokens, every identifier not bound.
/// `None` when `body` does not parse as statements.
fn free_names(body: &TokenStream) -> Option<std::collections::BTreeSet<String>> {
    use syn::visit::{self, Visit};
    struct Names(Vec<String>);
    impl<'ast> Visit<'ast> for Names {
        fn visit_pat_ident(&mut self, i: &'ast syn::PatIdent) {
            self.0.push(i.ident.to_string());
            visit::visit_pat_ident(self, i);
        }
    }
    struct Free {
        scopes: Vec<Vec<String>>,
        free: std::collections::BTreeSet<String>,
    }
    impl Free {
        fn read(&mut self, name: String) {
            if !self.scopes.iter().any(|s| s.contains(&name)) {
                self.free.insert(name);
            }
        }
        fn bind(&mut self, pat: &syn::Pat) {
            let mut names = Names(Vec::new());
            names.visit_pat(pat);
            if let Some(scope) = self.scopes.last_mut() {
                scope.extend(names.0);
            }
        }
        /// `cond`, then `body` with the pattern of an `if let` or `while let` bound in it.
        fn guarded(&mut self, cond: &syn::Expr, body: &syn::Block) {
            match cond {
                syn::Expr::Let(l) => {
                    self.visit_expr(&l.expr);
                    self.scoped(Some(&l.pat), |v| v.visit_block(body));
                }
                cond => {
                    self.visit_expr(cond);
                    self.visit_block(body);
                }
            }
        }
        fn scoped(&mut self, pat: Option<&syn::Pat>, f: impl FnOnce(&mut Self)) {
            self.scopes.push(Vec::new());
            if let Some(pat) = pat {
                self.bind(pat);
            }
            f(self);
            self.scopes.pop();
        }
    }
    impl<'ast> Visit<'ast> for Free {
        fn visit_block(&mut self, b: &'ast syn::Block) {
            self.scoped(None, |v| visit::visit_block(v, b));
        }
        fn visit_local(&mut self, l: &'ast syn::Local) {
            if let Some(init) = &l.init {
                self.visit_expr(&init.expr);
                if let Some((_, diverge)) = &init.diverge {
                    self.visit_expr(diverge);
                }
            }
            self.bind(&l.pat);
        }
        fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
            self.scoped(None, |v| {
                for p in &c.inputs {
                    v.bind(p);
                }
                v.visit_expr(&c.body);
            });
        }
        fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
            self.visit_expr(&f.expr);
            self.scoped(Some(&f.pat), |v| v.visit_block(&f.body));
        }
        fn visit_expr_if(&mut self, e: &'ast syn::ExprIf) {
            self.guarded(&e.cond, &e.then_branch);
            if let Some((_, e)) = &e.else_branch {
                self.visit_expr(e);
            }
        }
        fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
            self.guarded(&w.cond, &w.body);
        }
        fn visit_arm(&mut self, a: &'ast syn::Arm) {
            self.scoped(Some(&a.pat), |v| visit::visit_arm(v, a));
        }
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            if p.qself.is_none() && p.path.leading_colon.is_none() && p.path.segments.len() == 1 {
                self.read(p.path.segments[0].ident.to_string());
            }
            visit::visit_expr_path(self, p);
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            for name in idents(&m.tokens) {
                self.read(name);
            }
        }
    }
    let block: syn::Block = syn::parse2(quote!({ #body })).ok()?;
    let mut free = Free {
        scopes: Vec::new(),
        free: Default::default(),
    };
    free.visit_block(&block);
    Some(free.free)
}

/// The names `ts` binds with `let` at its top level (not inside its groups), each with
/// whether it is `mut` and its type when the `let` writes one (`let mut c_pos_1:
/// ::std::vec::Vec<u32> = ...`).
fn top_level_lets(ts: &TokenStream) -> Vec<(String, bool, Option<TokenStream>)> {
    use proc_macro2::{Spacing, TokenTree};
    let tokens: Vec<TokenTree> = ts.clone().into_iter().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let TokenTree::Ident(kw) = &tokens[i] else {
            i += 1;
            continue;
        };
        if kw != "let" {
            i += 1;
            continue;
        }
        i += 1;
        let mutable = matches!(tokens.get(i), Some(TokenTree::Ident(m)) if m == "mut");
        if mutable {
            i += 1;
        }
        let Some(TokenTree::Ident(name)) = tokens.get(i) else {
            continue;
        };
        let name = name.to_string();
        i += 1;
        let mut ty = None;
        if let Some(TokenTree::Punct(colon)) = tokens.get(i) {
            if colon.as_char() == ':' && colon.spacing() == Spacing::Alone {
                // the type: up to the `=` outside angle brackets
                let (mut t, mut depth) = (TokenStream::new(), 0i32);
                i += 1;
                while let Some(tok) = tokens.get(i) {
                    if let TokenTree::Punct(p) = tok {
                        match p.as_char() {
                            '<' => depth += 1,
                            '>' => depth -= 1,
                            '=' if depth == 0 && p.spacing() == Spacing::Alone => break,
                            _ => {}
                        }
                    }
                    t.extend([tok.clone()]);
                    i += 1;
                }
                ty = Some(t);
            }
        }
        out.push((name, mutable, ty));
    }
    out
}

fn collect_temps(body: &[Stmt], ops: &mut Vec<Option<ReduceOp>>, appended: &mut Vec<bool>) {
    for s in body {
        match s {
            Stmt::Loop(l) => l
                .cases
                .iter()
                .for_each(|c| collect_temps(&c.body, ops, appended)),
            Stmt::AppendTemp(t) => appended[*t] = true,
            Stmt::Compute {
                target: Target::Temp(t),
                combine: Combine::Reduce(op),
                ..
            } => ops[*t] = Some(*op),
            _ => {}
        }
    }
}

/// The reduction a buffered output combines duplicates with.
fn output_reduce(body: &[Stmt]) -> Option<ReduceOp> {
    for s in body {
        match s {
            Stmt::Loop(l) => {
                if let Some(op) = l.cases.iter().find_map(|c| output_reduce(&c.body)) {
                    return Some(op);
                }
            }
            Stmt::Compute {
                target: Target::Buffer,
                combine: Combine::Reduce(op),
                ..
            } => return Some(*op),
            _ => {}
        }
    }
    None
}

/// The Rust type of value type `v` (`f16` and `bf16` are the `half` crate's, through the
/// runtime's re-export).
fn value_type(v: ValueType, rt: &TokenStream) -> TokenStream {
    match v {
        ValueType::F64 => quote!(f64),
        ValueType::F32 => quote!(f32),
        ValueType::F16 => quote!(#rt::half::f16),
        ValueType::BF16 => quote!(#rt::half::bf16),
        ValueType::I64 => quote!(i64),
        ValueType::I32 => quote!(i32),
        ValueType::I16 => quote!(i16),
        ValueType::I8 => quote!(i8),
        ValueType::U64 => quote!(u64),
        ValueType::U32 => quote!(u32),
        ValueType::U16 => quote!(u16),
        ValueType::U8 => quote!(u8),
        // MLIR's `i1`, computed modulo 2 by its operators and `wrapping_*` methods
        ValueType::I1 => quote!(#rt::value::I1),
        // the storage integers (the kernel computes in `f32`)
        ValueType::Quant { signed, width } => {
            let t = format_ident!(
                "{}",
                crate::codegen::quant::storage_name(signed, width).unwrap_or("i32")
            );
            quote!(#t)
        }
        ValueType::C32 => quote!(#rt::num_complex::Complex<f32>),
        ValueType::C64 => quote!(#rt::num_complex::Complex<f64>),
    }
}

fn usize_lit(n: usize) -> Lit {
    Lit::usize_unsuffixed(n)
}

/// A Rust identifier for a loop variable's printable name (`i/2` → `i_div2`, `i%2` →
/// `i_mod2`, `a.slot` → `a_slot`).
fn ident_of(name: &str) -> Ident {
    let s = name
        .replace('/', "_div")
        .replace('%', "_mod")
        .replace(['.', '\''], "_");
    format_ident!("{}", s)
}

impl Cx<'_> {
    /// `Ok` / `Err`: bare in a method (the generated `const _` block imports them), by path
    /// in a free function (the user's namespace).
    fn result_variant(&self, v: &str) -> TokenStream {
        let v = format_ident!("{}", v);
        if self.generic {
            quote!(#v)
        } else {
            quote!(::core::result::Result::#v)
        }
    }

    /// Every name the generated function binds besides its parameters.
    fn locals(&self) -> std::collections::BTreeSet<String> {
        let mut out: std::collections::BTreeSet<String> = [
            "lo",
            "hi",
            "entries",
            "workspace",
            "visited",
            "touched",
            "touched_now",
            "identity",
            "combined",
            "workspace_rows",
            "rows",
            "shift",
            "lane",
            // the units' entries of a parallel split ([`Cx::balance`])
            "unit",
            // whether the loops prefetch ([`Cx::prefetches`])
            "prefetch",
            // the functions of the rarer rows ([`Cx::outlined`])
            "spanned_row",
            "rows_together",
            "spanned_rows_together",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let vars: Vec<Ident> = (0..self.p.levels.vars.len())
            .map(|v| self.var_ident(v))
            .collect();
        for v in &vars {
            out.insert(v.to_string());
        }
        for ix in 0..self.p.kernel.indices.len() {
            out.insert(self.extent_ident(ix).to_string());
        }
        for it in 0..self.p.levels.iters.len() {
            let p = self.pos_ident(it);
            out.insert(format!("{p}_end"));
            out.insert(format!("{p}_next"));
            for v in &vars {
                out.insert(format!("{v}_{p}"));
            }
            out.insert(p.to_string());
        }
        for t in 0..self.p.temps {
            out.insert(format!("t{t}"));
            out.insert(format!("t{t}_visited"));
        }
        for op in &self.ops {
            if op.converts.is_some() {
                out.insert(op.name.to_string());
                if let ParamKind::Format { format, .. } = &op.kind {
                    out.insert(format.to_string());
                }
            }
        }
        for a in 0..self.p.kernel.accesses.len() {
            out.insert(self.hoisted_ident(a).to_string());
        }
        // the output's insertion buffers
        let out_op = &self.ops[self.p.kernel.output.tensor];
        out.insert(format!("{}_values", out_op.prefix));
        for l in 0..out_op.levels.len() {
            for what in ["pos", "crd"] {
                out.insert(format!("{}_{what}_{l}", out_op.prefix));
            }
            out.insert(format!("{}_q{l}", out_op.prefix));
        }
        out.insert("parts".to_string());
        out.insert(self.flags_ident().to_string());
        out.insert(format!(
            "{}_input",
            self.tensor_name(self.p.kernel.output.tensor)
        ));
        out
    }

    fn zero(&self) -> TokenStream {
        if self.generic {
            let rt = self.rt;
            return quote!(<V as #rt::num_traits::Zero>::zero());
        }
        if self.p.kernel.value == ValueType::I1 {
            let rt = self.rt;
            return quote!(#rt::value::I1(false));
        }
        if self.wraps() {
            // typed: a method call (`wrapping_add`) on it needs its type
            let zero = match self.p.kernel.value {
                ValueType::I64 => Lit::i64_suffixed(0),
                ValueType::I32 => Lit::i32_suffixed(0),
                ValueType::I16 => Lit::i16_suffixed(0),
                ValueType::I8 => Lit::i8_suffixed(0),
                ValueType::U64 => Lit::u64_suffixed(0),
                ValueType::U32 => Lit::u32_suffixed(0),
                ValueType::U16 => Lit::u16_suffixed(0),
                _ => Lit::u8_suffixed(0),
            };
            quote!(#zero)
        } else if self.p.kernel.value.is_integer() {
            quote!(0)
        } else if self.p.kernel.value.is_complex() {
            self.complex(quote!(0.0))
        } else {
            quote!(0.0)
        }
    }

    /// Whether temporary `t` keeps a visited flag (a reduction other than a sum, or appended).
    fn temp_flag(&self, t: usize) -> bool {
        self.temp_appended[t] || !matches!(self.temp_ops[t], Some(ReduceOp::Sum) | None)
    }

    /// The output's dimension coordinates, `[i, j]`.
    fn out_coords(&self) -> TokenStream {
        let c = self
            .p
            .kernel
            .output
            .indices
            .iter()
            .map(|&ix| self.index_expr(ix));
        quote!([#(#c),*])
    }

    /// A workspace that only sums (with concrete values): it holds the sum's identity where
    /// nothing was added (`-0.0` for floats: `-0.0 + v` is `v` bit for bit, `0` for integers),
    /// so every update is an unconditional `+=` (the touched coordinates are kept by
    /// `generated::Touched` in every workspace).
    fn sum_workspace(&self) -> bool {
        !self.generic
            && combines(&self.p.body, Target::Workspace)
                .iter()
                .all(|c| *c == Combine::Reduce(ReduceOp::Sum))
    }

    /// Whether a sum workspace of `f64` values marks its untouched slots with a signaling NaN
    /// no operand holds (`generated::untouched_marker`), in place of a separate array of
    /// visited flags: the update then reads one array, not two (16% off the SpGEMM of
    /// cryg2500).
    fn marks_untouched(&self) -> bool {
        self.sum_workspace() && self.p.kernel.value == ValueType::F64
    }

    /// The loop program's [`SharedRows`] when this back end runs them together: an `f64`
    /// workspace with its untouched marker, a compress that extends the output's last level
    /// (CSR), a sequential kernel, and the shared matrix's level a plain `pos`/`crd` pair.
    fn shared_rows(&self) -> Option<SharedRows> {
        let sr = self.p.shared_rows?;
        // the names the loop over shared rows binds around the statement's code
        if self.names_taken(&["rows", "shift", "lane"]) {
            return None;
        }
        let extends = self.insert.as_ref().is_some_and(|ins| {
            ins.leaf.is_none()
                && ins
                    .per_parent
                    .as_ref()
                    .is_some_and(|pp| pp.extend.is_some())
        });
        (self.marks_untouched()
            && extends
            && self.plain_level(sr.iter)
            && self.rows.is_none()
            && self.snapshot.is_none())
        .then_some(sr)
    }

    /// Whether an index of the statement is named one of `names` (the generated code binds
    /// them around the statement's code).
    fn names_taken(&self, names: &[&str]) -> bool {
        self.p
            .kernel
            .indices
            .iter()
            .any(|ix| names.contains(&ix.name.as_str()))
    }

    /// Whether iterator `it`'s level is a plain `pos`/`crd` pair (no batch, a coordinate array
    /// of its own with stride 1, not packed).
    fn plain_level(&self, it: usize) -> bool {
        let (_, _, lcx) = self.level(it);
        lcx.pos_field.is_some()
            && !lcx.batched
            && lcx.crd.as_ref().is_some_and(|c| c.owner && c.stride == 1)
            && !lcx.packed()
    }

    /// The loop program's [`WindowedRows`] when this back end sums rows in a window: its rows
    /// run together ([`Self::shared_rows`]), `B`'s level is a plain `pos`/`crd` pair, and no
    /// index takes a name the windowed row binds.
    fn windowed_rows(&self) -> Option<WindowedRows> {
        let w = self.p.windowed_rows?;
        self.shared_rows()?;
        let taken = self.names_taken(&[
            "window",
            "window_sums",
            "window_sums_rows",
            "window_pattern",
            "base",
            "spans",
            "span",
        ]);
        (!taken && self.plain_level(w.iter)).then_some(w)
    }

    /// In the body over rows run together: the position variable of access `a`'s compressed
    /// level when `a` is the shared matrix (its value differs from lane to lane).
    fn lane_position(&self, a: usize) -> Option<Ident> {
        let sr = self
            .shared_rows()
            .filter(|sr| self.lanes.get() && sr.access == a)?;
        Some(self.pos_ident(sr.iter))
    }

    /// A workspace update over rows run together: `v` per lane (the shared matrix's value, or
    /// its position, taken from the lane), the first product of a slot stored in all lanes,
    /// the next ones added lane by lane.
    fn lane_update(&self, j: &Ident, v: TokenStream) -> TokenStream {
        let rt = self.rt;
        let mut per_lane = TokenStream::new();
        if let Some(sr) = self.shared_rows() {
            let h = self.hoisted_ident(sr.access);
            if mentions(&v, &h.to_string()) {
                per_lane.extend(quote!(let #h = #h[lane];));
            }
            let p = self.pos_ident(sr.iter);
            if mentions(&v, &p.to_string()) {
                per_lane.extend(quote!(let #p = #p + shift[lane];));
            }
        }
        // a term without the shared matrix's value is the same in every lane
        let lane = if per_lane.is_empty() {
            quote!(_)
        } else {
            quote!(lane)
        };
        if self.row_sum.get() == RowSum::Span {
            // the rows' coordinates come from the span's flags: no first touch to find
            return quote! {
                let __v = #rt::generated::lanes(|#lane| {
                    #per_lane
                    #v
                });
                for (sum, v) in window_sums_rows.get_unchecked_mut(#j).iter_mut().zip(__v) {
                    *sum += v;
                }
                spans.mark_unchecked(#j);
            };
        }
        quote! {
            let __v = #rt::generated::lanes(|#lane| {
                #per_lane
                #v
            });
            let __slot = workspace_rows.get_unchecked_mut(#j);
            if __slot[0].to_bits() == untouched.to_bits() {
                #rt::generated::cold();
                *__slot = __v;
                touched.push_unchecked(#j);
            } else {
                for (sum, v) in __slot.iter_mut().zip(__v) {
                    *sum += v;
                }
            }
        }
    }

    /// The [`Outline`] of a free kernel whose parameters are `params` (declared as `decls`),
    /// extents `extents`, and whose code before its loops is `before`: the parameters, the
    /// extents, the buffers `before` declares with their types (the output's arrays), and the
    /// workspace's own values.
    fn outline_values(
        &self,
        params: &[crate::kernel::KernelParam],
        decls: &[TokenStream],
        extents: &[(Ident, TokenStream)],
        before: &TokenStream,
    ) -> Outline {
        let rt = self.rt;
        let mut values = Vec::new();
        for (param, decl) in params.iter().zip(decls) {
            let name = &param.name;
            let arg = match &param.kind {
                ParamKind::Par => continue,
                kind if mutable(kind) => quote!(&mut *#name),
                _ => quote!(#name),
            };
            values.push((name.to_string(), decl.clone(), arg));
        }
        for (n, _) in extents {
            values.push((n.to_string(), quote!(#n: usize), quote!(#n)));
        }
        let lets = top_level_lets(before);
        // the buffers declared with their types (the output's arrays, the lanes)
        for (name, mutable, ty) in &lets {
            let Some(ty) = ty else { continue };
            let n = format_ident!("{}", name);
            values.push(if *mutable {
                (name.clone(), quote!(#n: &mut #ty), quote!(&mut #n))
            } else {
                (name.clone(), quote!(#n: &#ty), quote!(&#n))
            });
        }
        // the workspace's values declared without their types (as `Vec`s, not slices: in the
        // order and form measured, scratch runs with slices ran jagmesh7's `A·A` 3% slower)
        let workspace: [(&str, TokenStream, bool); 6] = [
            ("untouched", quote!(f64), false),
            ("workspace", quote!(::std::vec::Vec<f64>), true),
            ("touched", quote!(#rt::generated::Touched), true),
            (
                "window",
                quote!(::core::option::Option<#rt::generated::RowWindow>),
                false,
            ),
            ("window_sums", quote!(::std::vec::Vec<f64>), true),
            ("spans", quote!(#rt::generated::RowSpans), true),
        ];
        for (name, ty, buffer) in workspace {
            if !lets.iter().any(|(n, _, t)| n == name && t.is_none()) {
                continue;
            }
            let n = format_ident!("{}", name);
            values.push(match (buffer, name) {
                (true, _) => (name.to_string(), quote!(#n: &mut #ty), quote!(&mut #n)),
                (false, "untouched") => (name.to_string(), quote!(#n: #ty), quote!(#n)),
                (false, _) => (name.to_string(), quote!(#n: &#ty), quote!(&#n)),
            });
        }
        let locals = lets
            .into_iter()
            .map(|(n, _, _)| n)
            .chain(extents.iter().map(|(n, _)| n.to_string()))
            .collect();
        Outline { values, locals }
    }

    /// `body` (the loops of a rarer kind of row) in an `#[inline(never)]` function `name` of
    /// its own, called in its place with the kernel-level values it names and `args` (the
    /// row's own values, by value); `body` itself where the kernel has no [`Outline`] or
    /// `body` names a kernel-level value the outline cannot pass.
    fn outlined(
        &self,
        name: &str,
        body: TokenStream,
        args: &[(Ident, TokenStream)],
    ) -> TokenStream {
        let Some(outline) = &self.outline else {
            return body;
        };
        let Some(used) = free_names(&body) else {
            return body;
        };
        let (mut decls, mut passed) = (Vec::new(), Vec::new());
        for (n, ty) in args {
            if used.contains(&n.to_string()) {
                decls.push(quote!(#n: #ty));
                passed.push(quote!(#n));
            }
        }
        for (n, decl, arg) in &outline.values {
            if used.contains(n) {
                decls.push(decl.clone());
                passed.push(arg.clone());
            }
        }
        let known = |n: &String| {
            outline.values.iter().any(|(v, _, _)| v == n) || args.iter().any(|(a, _)| a == n)
        };
        if outline.locals.iter().any(|n| used.contains(n) && !known(n)) {
            return body;
        }
        let rt = self.rt;
        let name = format_ident!("{}", name);
        quote! {
            /// # Safety
            /// The kernel's: its operands' arrays are valid and its dense operands' sizes
            /// were checked.
            #[allow(non_snake_case, clippy::too_many_arguments, clippy::ptr_arg)]
            #[inline(never)]
            unsafe fn #name(#(#decls),*) {
                use #rt::Index as _;
                #rt::safety!("the caller's promise (the kernel's, as above)");
                unsafe { #body }
            }
            #name(#(#passed),*);
        }
    }

    /// The outermost loop over rows `sr.var` when rows sharing a pattern run together: the rows
    /// before the next one that shares (`generated::next_shared_row`) run one at a time in an
    /// inner loop that holds only the plain loop's body, then `rows` rows
    /// (`generated::shared_rows`) run in lanes of `workspace_rows`, reading the other operands
    /// once for them all. (One loop asking of each row which body to run, both inside it,
    /// cost the `A·A` of matrices without shared rows 11-15%, and bcsstk16's, which has them,
    /// 13%: jagmesh7 106 -> 94 µs, cryg2500 129 -> 111 µs, bcsstk16 11.9 -> 10.3 ms in one
    /// scratch binary on an AMD EPYC (Zen 4), 2026-11-28.)
    fn shared_rows_loop(&self, l: &Loop, sr: SharedRows) -> Result<TokenStream, Error> {
        let [case] = &l.cases[..] else {
            return Err(Error::plain("several cases in the loop over shared rows"));
        };
        let rt = self.rt;
        let c = self.var_ident(l.var);
        let n = self.extent(l.var);
        let Strategy::Workspace { var } = self.p.strategy else {
            return Err(Error::plain("shared rows without a workspace"));
        };
        let n_ws = self.extent(var);
        let one = self.stmts(&case.body)?;
        let (_, _, lcx) = self.level(sr.iter);
        let base = &lcx.base;
        let pos = lcx.pos_field.as_ref().expect("checked in shared_rows");
        let crd = &lcx.crd.as_ref().expect("checked in shared_rows").field;
        let summed = |how: RowSum, lanes: bool| {
            self.row_sum.set(how);
            self.lanes.set(lanes);
            let body = self.stmts(&case.body);
            self.row_sum.set(RowSum::FirstTouch);
            self.lanes.set(false);
            body
        };
        let spanned = self.windowed_rows().map(|w| {
            let (_, _, b) = self.level(w.iter);
            let b_pos = b.pos_field.as_ref().expect("checked in windowed_rows");
            let b_crd = &b.crd.as_ref().expect("checked in windowed_rows").field;
            let b = &b.base;
            // the row's products are many for the columns they fall in
            quote!(spans.reach_unchecked(&#base.#pos, &#base.#crd, #c, &#b.#b_pos, &#b.#b_crd))
        });
        // the row's own values a rarer row's function takes
        let c_arg = (c.clone(), quote!(usize));
        let span_arg = (format_ident!("span"), quote!(#rt::generated::RowSpan));
        let lane_args = [
            c_arg.clone(),
            (format_ident!("rows"), quote!(usize)),
            (
                format_ident!("shift"),
                quote!([usize; #rt::generated::SHARED_ROWS]),
            ),
        ];
        // rows run together through the marker's first touches, in lanes of `workspace_rows`
        let together = self.outlined(
            "rows_together",
            summed(RowSum::FirstTouch, true)?,
            &lane_args,
        );
        let together = quote! {
            if workspace_rows.is_empty() {
                workspace_rows = ::std::vec![[untouched; #rt::generated::SHARED_ROWS]; #n_ws];
            }
            #together
        };
        let (one, together) = match spanned {
            Some(reach) => {
                let windowed = summed(RowSum::Window, false)?;
                let spanned = self.outlined(
                    "spanned_row",
                    summed(RowSum::Span, false)?,
                    &[c_arg.clone(), span_arg.clone()],
                );
                let mut args = lane_args.to_vec();
                args.push(span_arg);
                let spanned_together =
                    self.outlined("spanned_rows_together", summed(RowSum::Span, true)?, &args);
                let one = quote! {
                    if let Some(window) = &window {
                        // the row's coordinates lie within 64 columns from `base`
                        if let Some(base) = window.reach_unchecked(&#base.#pos, &#base.#crd, #c) {
                            #windowed
                            #c += 1;
                            continue;
                        }
                    }
                    if let Some(span) = #reach {
                        if window_sums.is_empty() {
                            window_sums = ::std::vec![-0.0; #n_ws];
                        }
                        #spanned
                        #c += 1;
                        continue;
                    }
                    #one
                };
                let together = quote! {
                    if let Some(span) = #reach {
                        if window_sums_rows.is_empty() {
                            window_sums_rows = ::std::vec![[-0.0; #rt::generated::SHARED_ROWS]; #n_ws];
                        }
                        #spanned_together
                    } else {
                        #together
                    }
                };
                (one, together)
            }
            None => (one, together),
        };
        Ok(quote! {
            let mut #c = 0;
            while #c < #n {
                // the rows before the next one that shares its coordinates with the row after
                // it, one at a time
                let shared_from = #rt::generated::next_shared_row(&#base.#pos, &#base.#crd, #c, #n);
                while #c < shared_from {
                    #one
                    #c += 1;
                }
                if #c >= #n {
                    break;
                }
                // the next rows with row #c's coordinates select the same rows of the other
                // operands: up to four run in one pass, each in a lane of `workspace_rows`
                let (rows, shift) = #rt::generated::shared_rows(&#base.#pos, &#base.#crd, #c, #n);
                #together
                #c += rows;
            }
        })
    }

    /// Every input operand's values as a slice expression (`&[f64]`), the output's too when
    /// the statement adds to it (`+=`), for `generated::untouched_marker`.
    fn operand_values(&self) -> Vec<TokenStream> {
        let output = self.p.kernel.output.tensor;
        (0..self.ops.len())
            .filter(|&t| t != output || self.p.kernel.accumulate)
            .filter_map(|t| {
                let name = self.tensor_name(t);
                Some(match &self.ops[t].kind {
                    ParamKind::Par => return None,
                    ParamKind::Scalar { mutable: false } => quote!(::core::slice::from_ref(&#name)),
                    ParamKind::Scalar { mutable: true } => quote!(::core::slice::from_ref(&*#name)),
                    ParamKind::Slice { .. }
                    | ParamKind::Matrix { .. }
                    | ParamKind::DenseArray { .. } => quote!(&#name[..]),
                    ParamKind::Format { .. } => match self.explicit_value(t) {
                        Some(c) => quote!(::core::slice::from_ref(&#c)),
                        None => quote!(&#name.values[..]),
                    },
                })
            })
            .collect()
    }

    /// Whether integer arithmetic wraps in the generated code (concrete integer values: as
    /// MLIR's `arith` ops and the interpreter, with no overflow panic in debug builds); the
    /// generic built-ins use the value type's own operators.
    fn wraps(&self) -> bool {
        !self.generic && self.p.kernel.value.is_integer()
    }

    /// `slot += v` (wrapping for integers, [`Self::wraps`]); `slot` is a place expression.
    fn add_assign(&self, slot: TokenStream, v: TokenStream) -> TokenStream {
        if self.wraps() {
            quote! {
                let __acc = &mut #slot;
                *__acc = __acc.wrapping_add(#v);
            }
        } else {
            quote!(#slot += #v;)
        }
    }

    /// The identity of a sum (`-0.0` for floats and both parts of a complex, `0` for
    /// integers).
    fn sum_identity(&self) -> TokenStream {
        if self.p.kernel.value.is_integer() {
            self.zero()
        } else if self.p.kernel.value.is_complex() {
            let rt = self.rt;
            quote!(#rt::num_complex::Complex::new(-0.0, -0.0))
        } else {
            quote!(-0.0)
        }
    }

    /// The complex number with real part `re` (a literal) and imaginary part zero.
    fn complex(&self, re: TokenStream) -> TokenStream {
        let rt = self.rt;
        quote!(#rt::num_complex::Complex::new(#re, 0.0))
    }

    /// The code that adds the output entry at the current coordinates with value `v`.
    fn append(&self, v: TokenStream) -> TokenStream {
        let Some(ins) = &self.insert else {
            let c = self.out_coords();
            return quote!(entries.push((#c, #v)););
        };
        match self.row_open() {
            Some(pp) => self.append_after(&pp.step, v),
            None => self.append_after(&ins.step, v),
        }
    }

    /// Entries appended in order under dense parent levels: the steps that open the entry's
    /// parent segment run once before each loop over the last level's coordinate (not per
    /// entry), and an entry runs the last level's step alone.
    fn row_open(&self) -> Option<&PerParent> {
        if self.p.strategy != Strategy::Append {
            return None;
        }
        self.insert
            .as_ref()?
            .per_parent
            .as_ref()
            .filter(|pp| pp.dense_above)
    }

    /// [`Self::append`] with `step` as the levels' insertion steps (all of them, or the last
    /// level's alone when the rest ran once for the parent).
    fn append_after(&self, step: &TokenStream, v: TokenStream) -> TokenStream {
        let Some(ins) = &self.insert else {
            return TokenStream::new();
        };
        let values = &ins.values;
        match &ins.leaf {
            None => quote! {
                #step
                #values.push(#v);
            },
            Some(q) => {
                let zero = self.zero();
                quote! {
                    #step
                    if #values.len() <= #q {
                        #values.resize(#q + 1, #zero);
                    }
                    #values[#q] = #v;
                }
            }
        }
    }

    /// The output's coordinate at level `l`: its `dim_to_lvl` result over the statement's
    /// index variables (a block split's own loop variables where the loops split it).
    fn out_level_coord(&self, e: &AffineExpr) -> Option<TokenStream> {
        let out = &self.p.kernel.output;
        let block = |b: &AffineExpr| b.as_constant().and_then(|b| usize::try_from(b).ok());
        let dim = |a: &AffineExpr| a.as_var().map(|d| out.indices[d]);
        let coord = |ix: usize| match self.p.levels.index_loops[ix] {
            IndexLoops::Plain(_) => self.index_expr(ix),
            IndexLoops::Split { .. } => {
                let e = self.index_expr(ix);
                quote!((#e))
            }
        };
        Some(match e {
            AffineExpr::Var(d) => coord(out.indices[*d]),
            AffineExpr::FloorDiv(a, b) => {
                let (ix, b) = (dim(a)?, block(b)?);
                match self.p.levels.index_loops[ix] {
                    IndexLoops::Split { hi, block, .. } if block == b => {
                        let hi = self.var_ident(hi);
                        quote!(#hi)
                    }
                    _ => {
                        let (c, b) = (coord(ix), usize_lit(b));
                        quote!((#c / #b))
                    }
                }
            }
            AffineExpr::Mod(a, b) => {
                let (ix, b) = (dim(a)?, block(b)?);
                match self.p.levels.index_loops[ix] {
                    IndexLoops::Split { lo, block, .. } if block == b => {
                        let lo = self.var_ident(lo);
                        quote!(#lo)
                    }
                    _ => {
                        let (c, b) = (coord(ix), usize_lit(b));
                        quote!((#c % #b))
                    }
                }
            }
            _ => return None,
        })
    }

    /// Names of the output's insertion buffers: `{prefix}_pos_{l}`, ...
    fn insert_ident(&self, what: &str) -> Ident {
        let out = &self.ops[self.p.kernel.output.tensor];
        format_ident!("{}_{}", out.prefix, what)
    }

    /// In-order insertion into output `o` (struct `format`, values `v`) when every level of
    /// its format supports it (no batch levels, ELL slots or packed coordinates).
    fn output_insert(
        &self,
        o: &Ident,
        format: &Ident,
        v: &TokenStream,
    ) -> Result<Option<OutputInsert>, Error> {
        let out = &self.ops[self.p.kernel.output.tensor];
        let Some(enc) = &out.encoding else {
            return Ok(None);
        };
        if enc.dim_to_lvl.num_symbols > 0 || out.slices.is_some() {
            return Ok(None);
        }
        let (mut init, mut step, mut finish) =
            (TokenStream::new(), TokenStream::new(), TokenStream::new());
        // the levels' checks, all before any buffer
        let mut checks = TokenStream::new();
        // the output's own arrays are emptied and refilled when nothing between that and the
        // end can fail: loops that cannot (no integer division) and do not read the output,
        // and, decided at run time, an output whose every entry count fits its positions
        let out_t = self.p.kernel.output.tensor;
        let reuse = (!self.wraps() && !self.p.kernel.accesses.iter().any(|a| a.tensor == out_t))
            .then(|| self.insert_ident("reuse"));
        // the steps of the levels above the current one, and the current one's coordinate
        let mut above = TokenStream::new();
        let mut per_parent = None;
        let mut once_per_parent = true;
        let mut dense_above = true;
        let mut parent = quote!(0usize);
        let mut parents = quote!(1usize);
        let mut fields = Vec::new();
        let rank = out.levels.len();
        let mut leaf = None;
        for (l, (g, lcx)) in out.levels.iter().enumerate() {
            let Some(c) = self.out_level_coord(&enc.dim_to_lvl.results[l]) else {
                return Ok(None);
            };
            let pos = lcx
                .pos_field
                .as_ref()
                .map(|f| self.insert_ident(&f.to_string()));
            let crd = lcx
                .crd
                .as_ref()
                .map(|loc| self.insert_ident(&loc.field.to_string()));
            let q = self.insert_ident(&format!("q{l}"));
            let names = InsertNames {
                pos: pos.clone(),
                crd: crd.clone(),
                q: q.clone(),
                parent: parent.clone(),
                c: c.clone(),
                parents: parents.clone(),
                coords: format_ident!("touched_now"),
                reuse: reuse.clone(),
            };
            let Some(ins) = g.insert(lcx, &names) else {
                return Ok(None);
            };
            checks.extend(ins.check);
            init.extend(ins.init);
            if l + 1 == rank {
                let coord = c.to_string();
                // the levels above must not read the last level's coordinate, and must store
                // one position per coordinate (a nonunique level appends one per entry)
                if !mentions(&above, &coord) && once_per_parent {
                    let mut parent = above.clone();
                    parent.extend(ins.open.clone());
                    per_parent = Some(PerParent {
                        coord,
                        parent,
                        step: ins.step.clone(),
                        extend: ins.extend.clone(),
                        dense_above,
                    });
                }
            }
            dense_above &= lcx.lt.is_dense();
            once_per_parent &= lcx.lt.is_dense()
                || (lcx.lt.format == LevelFormat::Compressed && lcx.lt.is_unique());
            above.extend(ins.open.clone());
            above.extend(ins.step.clone());
            step.extend(ins.open);
            step.extend(ins.step);
            finish.extend(ins.finish);
            if let (Some(f), Some(local)) = (&lcx.pos_field, &pos) {
                fields.push(quote!(#f: #local));
            }
            if let (Some(loc), Some(local)) = (lcx.crd.as_ref().filter(|c| c.owner), &crd) {
                let f = &loc.field;
                fields.push(quote!(#f: #local));
            }
            let position = ins.position.unwrap_or_else(|| quote!(#q));
            if l + 1 == rank && lcx.lt.is_dense() {
                leaf = Some(position.clone());
            }
            parent = position;
            parents = ins.count;
        }
        // a position no later level, value or segment reads (a COO level's, whose singleton
        // below takes its position from the entry count) is not bound at all
        for l in 0..rank {
            let q = self.insert_ident(&format!("q{l}")).to_string();
            let reads = count_ident(&step, &q)
                + count_ident(&finish, &q)
                + leaf.as_ref().map_or(0, |t| count_ident(t, &q));
            if reads == 1 {
                step = drop_let(&step, &q);
                if let Some(pp) = per_parent.as_mut() {
                    pp.parent = drop_let(&pp.parent, &q);
                    pp.step = drop_let(&pp.step, &q);
                }
            }
        }
        let values = self.insert_ident("values");
        let rt = self.rt;
        // (values stored narrower than they are computed go to a new buffer)
        let reuse_values = reuse.as_ref().filter(|_| self.narrow(quote!(w)).is_none());
        init.extend(crate::codegen::level::output_buffer(
            rt,
            &values,
            v,
            &quote!(#o),
            &format_ident!("values"),
            reuse_values,
        ));
        if let Some(reuse) = &reuse {
            // the narrowest position width bounds the entries the output may hold
            let narrowest = out
                .levels
                .iter()
                .filter(|(_, l)| l.pos_field.is_some())
                .filter_map(|(_, l)| {
                    crate::codegen::compressed::narrow_bits(&l.pos_ty).map(|b| (b, &l.pos_ty))
                })
                .min_by_key(|(b, _)| *b);
            let max = match narrowest {
                Some((_, t)) => quote!(#t::MAX as usize),
                None => quote!(usize::MAX),
            };
            checks.extend(quote! {
                let #reuse = #rt::generated::refills(&#o.lvl_sizes, #max);
            });
        }
        init = quote!(#checks #init);
        if leaf.is_some() {
            // every position of the last (dense) level holds a value
            let zero = self.zero();
            finish.extend(quote!(#values.resize(#parents, #zero);));
        }
        let parts = format_ident!("{}Parts", format);
        let stored_values = match self.narrow(quote!(w)) {
            Some(narrow) => quote!(#values.into_iter().map(|w| #narrow).collect()),
            None => quote!(#values),
        };
        let safety = quote!(#rt::safety!("the loops inserted the entries in the format's level order, each coordinate once and below its level size, and closed every segment: the arrays satisfy `validate`."););
        finish.extend(quote! {
            let parts = #parts {
                dim_shape: #o.dim_shape,
                #(#fields,)*
                values: #stored_values,
            };
            #safety
            *#o = unsafe { #format::from_raw_parts_unchecked(parts) };
        });
        Ok(Some(OutputInsert {
            init,
            step,
            per_parent,
            values,
            leaf,
            finish,
        }))
    }

    fn tensor_name(&self, t: usize) -> &Ident {
        &self.ops[t].name
    }

    /// The size of dimension `d` of tensor `t` at run time (a slice's size for a sliced
    /// format).
    fn dim_size(&self, t: usize, d: usize) -> TokenStream {
        let op = &self.ops[t];
        let name = &op.name;
        if let Some(s) = &op.slices {
            let z = usize_lit(s[d].1);
            return quote!(#z);
        }
        match &op.kind {
            ParamKind::Slice { .. } => quote!(#name.len()),
            ParamKind::Matrix { dims, .. } => dims[d].clone(),
            ParamKind::DenseArray { .. } => {
                let d = usize_lit(d);
                quote!(#name.shape()[#d])
            }
            _ => {
                let d = usize_lit(d);
                quote!(#name.dim_shape[#d])
            }
        }
    }

    fn extent_ident(&self, index: usize) -> Ident {
        format_ident!("n_{}", self.p.kernel.indices[index].name)
    }

    fn extent(&self, var: usize) -> TokenStream {
        match self.p.levels.vars[var].extent {
            Extent::Index { div, .. } if div != 1 => {
                let n = self.extent_bare(var);
                quote!((#n))
            }
            _ => self.extent_bare(var),
        }
    }

    /// [`Self::extent`] without parentheses around a quotient: a function's argument.
    fn extent_bare(&self, var: usize) -> TokenStream {
        match self.p.levels.vars[var].extent {
            Extent::Const(c) | Extent::Index { value: Some(c), .. } => {
                let c = usize_lit(c);
                quote!(#c)
            }
            Extent::Index { index, div: 1, .. } => {
                let n = self.extent_ident(index);
                quote!(#n)
            }
            Extent::Index { index, div, .. } => {
                let n = self.extent_ident(index);
                let div = usize_lit(div);
                quote!(#n / #div)
            }
        }
    }

    /// `let n_i = ...;` per index read at run time, then a check of every other dimension.
    fn extents(&self) -> (Vec<(Ident, TokenStream)>, TokenStream) {
        let rt = self.rt;
        let kern = &self.p.kernel;
        let err = self.result_variant("Err");
        let mut lets = Vec::new();
        let mut out = TokenStream::new();
        // a method's receiver fixes the extents of its indices (the other operands are checked
        // against it); otherwise the index's first occurrence does
        let receiver = self.ops.iter().position(|o| o.name == "self");
        let source = |ix: usize| -> (usize, usize) {
            receiver
                .and_then(|r| {
                    kern.accesses
                        .iter()
                        .filter(|a| a.tensor == r)
                        .find_map(|a| a.indices.iter().position(|&i| i == ix).map(|d| (r, d)))
                })
                .unwrap_or(kern.indices[ix].source)
        };
        for ix in 0..kern.indices.len() {
            let n = self.extent_ident(ix);
            let (t, d) = source(ix);
            let first = self.dim_size(t, d);
            lets.push((n, first));
        }
        if self.rows.is_some() && self.par.is_none() {
            // the row-range form of a built-in runs on operands its caller checked
            return (lets, out);
        }
        let mut uses: Vec<(usize, &[usize])> = vec![(kern.output.tensor, &kern.output.indices)];
        uses.extend(kern.accesses.iter().map(|a| (a.tensor, &a.indices[..])));
        let mut seen = Vec::new();
        for (t, indices) in uses {
            // a conversion has the shape of the tensor it converts
            let t = self.ops[t].converts.unwrap_or(t);
            for (d, &ix) in indices.iter().enumerate() {
                if source(ix) == (t, d) || seen.contains(&(t, d)) {
                    continue;
                }
                seen.push((t, d));
                let size = self.dim_size(t, d);
                let n = self.extent_ident(ix);
                let source_size = lets[ix].1.to_string();
                if size.to_string() == source_size {
                    // the same size read twice (a matrix whose rows are the receiver's)
                    continue;
                }
                let what = match self.ops[t].kind {
                    ParamKind::Slice { .. } | ParamKind::Matrix { .. } => {
                        self.tensor_name(t).to_string()
                    }
                    _ => format!("{} (dimension {d})", self.tensor_name(t)),
                };
                out.extend(quote! {
                    if #size != #n {
                        return #err(#rt::StorageError::LengthMismatch {
                            operand: #what,
                            expected: #n,
                            got: #size,
                        });
                    }
                });
            }
        }
        // a dense matrix in a slice holds exactly its elements
        for op in &self.ops {
            if let ParamKind::Matrix { dims: [d0, d1], .. } = &op.kind {
                let (d0, d1) = (receiver_of(d0), receiver_of(d1));
                let name = &op.name;
                let what = name.to_string();
                out.extend(quote! {
                    if #d0.checked_mul(#d1) != ::core::option::Option::Some(#name.len()) {
                        return #err(#rt::StorageError::LengthMismatch {
                            operand: #what,
                            expected: #d0.saturating_mul(#d1),
                            got: #name.len(),
                        });
                    }
                });
            }
        }
        (lets, out)
    }

    /// `before(unit)` for splitting the outermost loop's units: the positions of level 1 of the
    /// first operand iterated under it, when they are segment bounds (entries before `unit`);
    /// else `|unit| unit`. (`unit` is a name of the generated code: no parameter has it.)
    fn balance(&self) -> TokenStream {
        let unit = quote!(|unit| unit);
        let Some(Stmt::Loop(outer)) = self.p.body.first() else {
            return unit;
        };
        for (a, its) in self.p.levels.access_iters.iter().enumerate() {
            let Some(its) = its else { continue };
            let op = &self.ops[self.p.kernel.accesses[a].tensor];
            let (Some(&first), Some((_, l1))) = (its.first(), op.levels.get(1)) else {
                continue;
            };
            if self.p.levels.iters[first].var != outer.var || op.slices.is_some() || l1.batched {
                continue;
            }
            if l1.lt.capabilities().positions == sparse_ir::level::PositionsArray::SegmentBounds {
                if let Some(f) = &l1.pos_field {
                    let name = &op.name;
                    return quote!(|unit| #name.#f[unit].index());
                }
            }
        }
        unit
    }

    /// Whether `l` is the outermost loop of a serial kernel (not the row-range form, no `Par`)
    /// whose iterations write rows of the output no other iteration reads or writes: the
    /// row-range form would apply ([`Self::rows_unit`]), so the rows may run in any order.
    fn independent_rows(&self, l: &Loop) -> bool {
        self.rows.is_none()
            && self.par.is_none()
            && matches!(self.p.body.first(), Some(Stmt::Loop(outer)) if std::ptr::eq(outer, l))
            && self.rows_unit().is_ok()
    }

    /// The block size of the output's first index (1 if not blocked), after checking that the
    /// row-range form applies: the outermost loop is a dense range over the output's first
    /// index (its block index if blocked) and the output is a slice.
    fn rows_unit(&self) -> Result<usize, Error> {
        let kern = &self.p.kernel;
        let not = || unsupported("the row-range form of this kernel");
        let rows_contiguous = matches!(
            self.ops[kern.output.tensor].kind,
            ParamKind::Slice { .. }
                | ParamKind::Matrix {
                    col_major: false,
                    ..
                }
        );
        if !rows_contiguous {
            return Err(not());
        }
        let (var, unit) = match self.p.levels.index_loops[kern.output.indices[0]] {
            IndexLoops::Plain(v) => (v, 1),
            IndexLoops::Split { hi, block, .. } => (hi, block),
        };
        match self.p.body.first() {
            Some(Stmt::Loop(l))
                if l.var == var
                    && l.iters.is_empty()
                    && l.driver == Driver::Range
                    && self.p.body.len() == 1 =>
            {
                Ok(unit)
            }
            _ => Err(not()),
        }
    }

    /// Clears the random-access output (unless `+=`), and its visited flags when a reduction
    /// other than a sum writes it.
    /// A value of the stored narrow type ([`Self::stored`]) in the compute type: `x.to_f32()`
    /// for `f16`/`bf16`, `i32::from(x)` for 8- and 16-bit integers (exact); `e` itself when the
    /// kernel computes in its stored type.
    fn widen(&self, e: TokenStream) -> TokenStream {
        match self.stored {
            None => e,
            Some(ValueType::Quant { .. }) => {
                // the output's stored integers (per tensor: per-axis outputs are refused)
                match &self.quant[self.p.kernel.output.tensor] {
                    Some(QuantOp {
                        format, storage, ..
                    }) => quote!(#format::<#storage>::dequantize_value(i64::from(#e), 0)),
                    None => e,
                }
            }
            Some(ValueType::F16 | ValueType::BF16) => {
                let r = receiver_of(&e);
                quote!(#r.to_f32())
            }
            Some(_) => quote!(i32::from(#e)),
        }
    }

    /// The computed value `w` (an identifier) stored back in the narrow type: rounded to
    /// nearest (ties to even) for `f16`/`bf16` (`half`'s `from_f32`), wrapping for integers
    /// (`as`), as the interpreter and MLIR's `arith.truncf`/`arith.trunci` do. `None` when the
    /// kernel computes in its stored type.
    fn narrow(&self, w: TokenStream) -> Option<TokenStream> {
        let rt = self.rt;
        Some(match self.stored? {
            ValueType::Quant { .. } => {
                let QuantOp {
                    format, storage, ..
                } = self.quant[self.p.kernel.output.tensor].as_ref()?;
                quote!(<#storage as #rt::quant::StorageInt>::from_i64(#format::<#storage>::quantize_value(#w, 0)))
            }
            ValueType::F16 => quote!(#rt::half::f16::from_f32(#w)),
            ValueType::BF16 => quote!(#rt::half::bf16::from_f32(#w)),
            t => {
                let ty = value_type(t, rt);
                quote!(#w as #ty)
            }
        })
    }

    /// For an output written in place and stored narrow: the code that shadows it with a buffer
    /// of the compute type (a widened copy when the statement reads it or adds to it, zeros
    /// otherwise), the code that stores the buffer back narrowed after the loops, and, for a
    /// dense format, the buffer's name (the loops write it through `out_slice`). Nothing when
    /// the kernel computes in its stored type.
    fn wide_output(&self, read: bool) -> Result<(TokenStream, TokenStream, Option<Ident>), Error> {
        let Some(narrow) = self.narrow(quote!(w)) else {
            return Ok((TokenStream::new(), TokenStream::new(), None));
        };
        let t = self.p.kernel.output.tensor;
        let name = self.tensor_name(t);
        let wide = format_ident!("{}_wide", name);
        let kept = format_ident!("{}_stored", name);
        let v = value_type(self.p.kernel.value, self.rt);
        let zero = self.zero();
        let widened = |values: TokenStream| {
            let w = self.widen(quote!(v));
            quote!(#values.iter().map(|&v| #w).collect())
        };
        // a dense array's padding goes through the wide copy and back unchanged
        let read = read || matches!(self.ops[t].kind, ParamKind::DenseArray { .. });
        Ok(match &self.ops[t].kind {
            ParamKind::Slice { .. } | ParamKind::Matrix { .. } | ParamKind::DenseArray { .. } => {
                let start = if read {
                    widened(quote!(#name))
                } else {
                    quote!(::std::vec![#zero; #name.len()])
                };
                (
                    quote! {
                        let mut #wide: ::std::vec::Vec<#v> = #start;
                        let (#kept, #name) = (#name, &mut #wide[..]);
                    },
                    quote! {
                        for (o, &w) in #kept.iter_mut().zip(#name.iter()) {
                            *o = #narrow;
                        }
                    },
                    None,
                )
            }
            ParamKind::Scalar { .. } => {
                let start = if read {
                    self.widen(quote!(*#name))
                } else {
                    zero
                };
                (
                    quote! {
                        let mut #wide: #v = #start;
                        let (#kept, #name) = (#name, &mut #wide);
                    },
                    quote! {
                        let w = *#name;
                        *#kept = #narrow;
                    },
                    None,
                )
            }
            ParamKind::Format { .. } => {
                let start = if read {
                    widened(quote!(#name.values))
                } else {
                    quote!(::std::vec![#zero; #name.values.len()])
                };
                let store = match &self.quant[t] {
                    // per axis: each position quantized with the pair of its coordinate on the
                    // axis (the statement does not read such an output: refused in `emit`)
                    Some(QuantOp {
                        format,
                        storage,
                        axis: Some(_),
                    }) => {
                        let rt = self.rt;
                        quote! {
                            let axis_coords = #name.quant_axis_coords();
                            for ((o, &w), &k) in #name.values.iter_mut().zip(#wide.iter()).zip(&axis_coords) {
                                *o = <#storage as #rt::quant::StorageInt>::from_i64(#format::<#storage>::quantize_value(w, k));
                            }
                        }
                    }
                    _ => quote! {
                        for (o, &w) in #name.values.iter_mut().zip(#wide.iter()) {
                            *o = #narrow;
                        }
                    },
                };
                (
                    quote!(let mut #wide: ::std::vec::Vec<#v> = #start;),
                    store,
                    Some(wide),
                )
            }
            ParamKind::Par => return Err(Error::plain("`Par` is not an operand")),
        })
    }

    fn init_output(&self) -> TokenStream {
        let t = self.p.kernel.output.tensor;
        let name = self.tensor_name(t);
        let zero = self.zero();
        let mut s = TokenStream::new();
        // `+=` starts from the output's values; the loops of an overwriting program assign
        // every element (`Program::overwrites`)
        if self.p.kernel.accumulate || (self.p.overwrites && !self.output_flags()) {
            return s;
        }
        // a wide output buffer the statement does not read starts at zero ([`Self::wide_output`])
        // a dense array is cleared before the loops, its padding kept ([`Self::dense_arrays`])
        let cleared = (self.stored.is_some()
            && !self.p.kernel.accesses.iter().any(|a| a.tensor == t))
            || matches!(self.ops[t].kind, ParamKind::DenseArray { .. });
        let flags = self.flags_ident();
        match self.ops[t].kind {
            ParamKind::Scalar { .. } => {
                if !cleared {
                    s.extend(quote!(*#name = #zero;));
                }
                if self.output_flags() {
                    s.extend(quote!(let mut #flags = false;));
                }
            }
            _ => {
                let out = self.output_values();
                if !cleared {
                    s.extend(quote!(#out.fill(#zero);));
                }
                if self.output_flags() {
                    s.extend(quote!(let mut #flags = ::std::vec![false; #out.len()];));
                }
            }
        }
        s
    }

    fn flags_ident(&self) -> Ident {
        format_ident!("{}_visited", self.tensor_name(self.p.kernel.output.tensor))
    }

    /// Whether the output needs visited flags: a reduction other than a sum, not `+=` (with `+=`
    /// every element counts as visited).
    fn output_flags(&self) -> bool {
        !self.p.kernel.accumulate
            && combines(&self.p.body, Target::Output)
                .iter()
                .any(|c| matches!(c, Combine::Reduce(op) if *op != ReduceOp::Sum))
    }

    fn output_values(&self) -> TokenStream {
        let t = self.p.kernel.output.tensor;
        let name = self.tensor_name(t);
        if let Some(vals) = &self.out_slice {
            return quote!(#vals);
        }
        match self.ops[t].kind {
            ParamKind::Slice { .. } | ParamKind::Matrix { .. } | ParamKind::DenseArray { .. } => {
                quote!(#name)
            }
            _ => quote!(#name.values),
        }
    }

    fn var_ident(&self, v: usize) -> Ident {
        ident_of(&self.p.levels.vars[v].name)
    }

    /// The dimension coordinate of index `ix`: its loop variable, or `block * hi + lo`.
    fn index_expr(&self, ix: usize) -> TokenStream {
        match self.p.levels.index_loops[ix] {
            IndexLoops::Plain(v) => {
                let v = self.var_ident(v);
                quote!(#v)
            }
            IndexLoops::Split { hi, lo, block } => {
                let (hi, lo, b) = (self.var_ident(hi), self.var_ident(lo), usize_lit(block));
                quote!(#b * #hi + #lo)
            }
        }
    }

    /// [`Self::index_expr`] as an operand of `*` or `/` (parenthesized when it is a sum).
    fn index_factor(&self, ix: usize) -> TokenStream {
        let e = self.index_expr(ix);
        match self.p.levels.index_loops[ix] {
            IndexLoops::Plain(_) => e,
            IndexLoops::Split { .. } => quote!((#e)),
        }
    }

    /// The operand, level generator and context of iterator `it`.
    fn level(&self, it: usize) -> (&Operand, &'static dyn LevelGen, &LevelCtx) {
        let li = &self.p.levels.iters[it];
        let op = &self.ops[self.p.kernel.accesses[li.access].tensor];
        let (g, cx) = &op.levels[li.level];
        (op, *g, cx)
    }

    fn pos_ident(&self, it: usize) -> Ident {
        let li = &self.p.levels.iters[it];
        let acc = &self.p.kernel.accesses[li.access];
        let name = &self.ops[acc.tensor].prefix;
        let repeated = self
            .p
            .kernel
            .accesses
            .iter()
            .filter(|a| a.tensor == acc.tensor)
            .count()
            > 1;
        if repeated {
            format_ident!("{}{}_p{}", name, li.access, li.level)
        } else {
            format_ident!("{}_p{}", name, li.level)
        }
    }

    /// `p_next`: the end of the group of equal coordinates at a non-unique level.
    fn next_ident(&self, it: usize) -> Ident {
        format_ident!("{}_next", self.pos_ident(it))
    }

    /// Iterator `it` walks a non-unique level: its position is a group `p .. p_next`.
    fn grouped(&self, it: usize) -> bool {
        let li = &self.p.levels.iters[it];
        li.iterate && !self.level(it).2.lt.is_unique()
    }

    /// The iterator of the parent level of `it`, `None` at level 0.
    fn parent_iter(&self, it: usize) -> Option<usize> {
        let li = &self.p.levels.iters[it];
        let its = self.p.levels.access_iters[li.access].as_ref()?;
        li.level.checked_sub(1).map(|l| its[l])
    }

    /// The segment `(lo, hi)` of iterator `it` under its parent's position (or group).
    fn segment(&self, it: usize) -> TokenStream {
        let (_, g, cx) = self.level(it);
        match self.parent_iter(it) {
            None => g.segment(cx, quote!(0usize)),
            Some(pit) => {
                let pp = self.pos_ident(pit);
                if self.grouped(pit) {
                    let next = self.next_ident(pit);
                    let first = g.segment(cx, quote!(#pp));
                    let last = g.segment(cx, quote!((#next - 1)));
                    quote!({
                        let (lo, _) = #first;
                        let (_, hi) = #last;
                        (lo, hi)
                    })
                } else {
                    g.segment(cx, quote!(#pp))
                }
            }
        }
    }

    /// `(offset, size, stride)` of the slice iterator `it` reads, if any.
    fn slice_of(&self, it: usize) -> Option<(usize, usize, usize)> {
        let li = &self.p.levels.iters[it];
        let d = li.slice_dim?;
        let (op, _, _) = self.level(it);
        op.slices.as_ref().map(|s| s[d])
    }

    /// `let p = parent * size + c;` for a located level at its loop variable's coordinate (a
    /// full, locatable level: position `parent * size + coordinate`).
    fn locate(&self, it: usize) -> TokenStream {
        let li = &self.p.levels.iters[it];
        let p = self.pos_ident(it);
        let c = self.var_ident(li.var);
        let c = match self.slice_of(it) {
            None | Some((0, _, 1)) => quote!(#c),
            Some((o, _, 1)) => {
                let o = usize_lit(o);
                quote!((#o + #c))
            }
            Some((o, _, s)) => {
                let (o, s) = (usize_lit(o), usize_lit(s));
                quote!((#o + #c * #s))
            }
        };
        let size = &self.level(it).2.size;
        match self.parent_iter(it) {
            None => quote!(let #p = #c;),
            Some(pit) => {
                let parent = self.pos_ident(pit);
                quote!(let #p = #parent * #size + #c;)
            }
        }
    }

    /// The stored coordinate at position expression `at`, as `usize`.
    fn read(&self, it: usize, at: TokenStream) -> TokenStream {
        let (_, _, cx) = self.level(it);
        cx.read_crd(&cx.base, &at)
    }

    /// `raw` (a stored coordinate) is in the slice `(offset, size, stride)`.
    fn member(raw: &TokenStream, (o, z, s): (usize, usize, usize)) -> TokenStream {
        let (ol, zl, sl) = (usize_lit(o), usize_lit(z), usize_lit(s));
        match (o, s) {
            (0, 1) => quote!(#raw < #zl),
            (0, _) => quote!(#raw % #sl == 0 && #raw / #sl < #zl),
            (_, 1) => quote!(#raw >= #ol && #raw - #ol < #zl),
            _ => quote!(#raw >= #ol && (#raw - #ol) % #sl == 0 && (#raw - #ol) / #sl < #zl),
        }
    }

    /// The slice coordinate of a stored coordinate `raw` in the slice.
    fn in_slice(raw: TokenStream, (o, _, s): (usize, usize, usize)) -> TokenStream {
        let (ol, sl) = (usize_lit(o), usize_lit(s));
        match (o, s) {
            (0, 1) => raw,
            (0, _) => quote!(#raw / #sl),
            (_, 1) => quote!(#raw - #ol),
            _ => quote!((#raw - #ol) / #sl),
        }
    }

    fn stmts(&self, body: &[Stmt]) -> Result<TokenStream, Error> {
        let mut out = TokenStream::new();
        for s in body {
            out.extend(self.stmt(s)?);
        }
        Ok(out)
    }

    fn stmt(&self, s: &Stmt) -> Result<TokenStream, Error> {
        Ok(match s {
            Stmt::Loop(l) => self.loop_(l)?,
            Stmt::Locate(it) => self.locate(*it),
            Stmt::InitTemp(t) => {
                let name = format_ident!("t{}", *t);
                let zero = self.zero();
                if self.temp_flag(*t) {
                    let seen = format_ident!("t{}_visited", *t);
                    quote!(let mut #name = #zero; let mut #seen = false;)
                } else {
                    quote!(let mut #name = #zero;)
                }
            }
            Stmt::Compute {
                target,
                combine,
                expr,
            } => {
                let v = self.expr(expr)?;
                match target {
                    Target::Output => self.store_output(*combine, v)?,
                    Target::Temp(t) => {
                        let name = format_ident!("t{}", *t);
                        let seen = format_ident!("t{}_visited", *t);
                        match combine {
                            Combine::Assign if self.temp_flag(*t) => {
                                quote!(#name = #v; #seen = true;)
                            }
                            Combine::Assign => quote!(#name = #v;),
                            Combine::Reduce(ReduceOp::Sum) if !self.temp_flag(*t) => {
                                self.add_assign(quote!(#name), v)
                            }
                            Combine::Reduce(op) => {
                                let c =
                                    combine_tokens(*op, quote!(#name), quote!(__v), self.wraps());
                                quote! {
                                    let __v = #v;
                                    #name = if #seen { #c } else { __v };
                                    #seen = true;
                                }
                            }
                        }
                    }
                    Target::Append | Target::Buffer => self.append(v),
                    Target::Workspace => {
                        let rt = self.rt;
                        let Strategy::Workspace { var } = self.p.strategy else {
                            return Err(Error::plain("a workspace without its strategy"));
                        };
                        let j = self.var_ident(var);
                        if self.marks_untouched() && self.lanes.get() {
                            return Ok(self.lane_update(&j, v));
                        }
                        match self.row_sum.get() {
                            // the row's coordinates are known: no first touch to find
                            RowSum::Window => {
                                return Ok(quote!(*window_sums.get_unchecked_mut(#j) += #v;));
                            }
                            RowSum::Span => {
                                return Ok(quote! {
                                    *window_sums.get_unchecked_mut(#j) += #v;
                                    spans.mark_unchecked(#j);
                                });
                            }
                            RowSum::FirstTouch => {}
                        }
                        if self.marks_untouched() {
                            // the first product of a slot is stored (`-0.0 + v` is `v`), the
                            // next ones added; one load tells whether the slot is new
                            return Ok(quote! {
                                let __v = #v;
                                let __slot = workspace.get_unchecked_mut(#j);
                                if __slot.to_bits() == untouched.to_bits() {
                                    #rt::generated::cold();
                                    *__slot = __v;
                                    touched.push_unchecked(#j);
                                } else {
                                    *__slot += __v;
                                }
                            });
                        }
                        if self.sum_workspace() {
                            // a branch, not a count of `!seen`: the count would chain every
                            // update to the previous one's load of its flag
                            let add = self.add_assign(quote!(*workspace.get_unchecked_mut(#j)), v);
                            return Ok(quote! {
                                let __seen = visited.get_unchecked_mut(#j);
                                if !*__seen {
                                    *__seen = true;
                                    touched.push_unchecked(#j);
                                }
                                #add
                            });
                        }
                        let c = match combine {
                            Combine::Reduce(op) => {
                                combine_assign(*op, quote!(*__slot), quote!(__v), self.wraps())
                            }
                            Combine::Assign => quote!(*__slot = __v;),
                        };
                        quote! {
                            let __v = #v;
                            let __slot = workspace.get_unchecked_mut(#j);
                            let __seen = visited.get_unchecked_mut(#j);
                            if *__seen {
                                #c
                            } else {
                                touched.push_unchecked(#j);
                                *__slot = __v;
                                *__seen = true;
                            }
                        }
                    }
                }
            }
            Stmt::AppendTemp(t) => {
                let name = format_ident!("t{}", *t);
                let seen = format_ident!("t{}_visited", *t);
                let append = self.append(quote!(#name));
                quote! {
                    if #seen {
                        #append
                    }
                }
            }
            // the workspace is clear before the first row and `Compress` clears what it
            // touched: MLIR's `expand` has nothing left to do here
            Stmt::Expand if self.row_sum.get() == RowSum::Window => {
                quote!(let mut window_pattern = 0u64;)
            }
            Stmt::Expand => TokenStream::new(),
            Stmt::Compress => {
                let Strategy::Workspace { var } = self.p.strategy else {
                    return Err(Error::plain("a workspace without its strategy"));
                };
                let j = self.var_ident(var);
                let value = quote!(*workspace.get_unchecked(#j));
                // the output's levels above the workspace's, once per row when the
                // workspace's coordinate is the last level's
                let ins = self.insert.as_ref();
                let per_parent = ins
                    .and_then(|i| i.per_parent.as_ref())
                    .filter(|pp| j == pp.coord);
                let (parent, append) = match per_parent {
                    Some(pp) => (pp.parent.clone(), self.append_after(&pp.step, value)),
                    None => (TokenStream::new(), self.append(value)),
                };
                // a workspace that only sums refills each slot it drains: with the marker of an
                // untouched slot (`f64`), or with the sum's identity and its flag cleared
                let refill = if self.marks_untouched() {
                    Some((quote!(untouched), TokenStream::new()))
                } else if self.sum_workspace() {
                    let identity = self.sum_identity();
                    Some((identity, quote!(*visited.get_unchecked_mut(#j) = false;)))
                } else {
                    None
                };
                if self.row_sum.get() != RowSum::FirstTouch {
                    let rt = self.rt;
                    let (Some(pp), Some(ins)) = (per_parent, ins) else {
                        return Err(Error::plain("a window without a compress by rows"));
                    };
                    let (Some(extend), None) = (&pp.extend, &ins.leaf) else {
                        return Err(Error::plain("a window without a compress by rows"));
                    };
                    let values = &ins.values;
                    if self.lanes.get() {
                        let Some(sr) = self.shared_rows() else {
                            return Err(Error::plain("rows run together without shared rows"));
                        };
                        let row = self.var_ident(sr.var);
                        let out = lanes_out(
                            (&j, &row, &parent, extend, values),
                            quote!(window_sums_rows),
                            quote!(*window_sums_rows.get_unchecked_mut(#j) = [-0.0; #rt::generated::SHARED_ROWS];),
                        );
                        return Ok(quote! {
                            let touched_now = spans.take(span);
                            #out
                        });
                    }
                    let touched_now = if self.row_sum.get() == RowSum::Window {
                        quote!(touched.take_window(window_pattern, base))
                    } else {
                        quote!(spans.take(span))
                    };
                    return Ok(quote! {
                        let touched_now = #touched_now;
                        #parent
                        #extend
                        let drained = touched_now.iter().map(|&#j| {
                            ::core::mem::replace(window_sums.get_unchecked_mut(#j), -0.0)
                        });
                        #values.extend(drained);
                    });
                }
                if let (true, Some(pp), Some(ins)) = (self.lanes.get(), per_parent, ins) {
                    let (Some(extend), Some(sr)) = (&pp.extend, self.shared_rows()) else {
                        return Err(Error::plain("shared rows without a compress by rows"));
                    };
                    let values = &ins.values;
                    let row = self.var_ident(sr.var);
                    let out = lanes_out(
                        (&j, &row, &parent, extend, values),
                        quote!(workspace_rows),
                        quote!(workspace_rows.get_unchecked_mut(#j)[0] = untouched;),
                    );
                    return Ok(quote! {
                        if !touched.is_empty() {
                            let touched_now = touched.take_sorted();
                            #out
                        }
                    });
                }
                if let Some((fill, clear)) = refill {
                    // a compressed last level takes the row's coordinates and values in two
                    // `extend` calls (one capacity check each, not one per entry)
                    if let (Some(pp), Some(ins)) = (per_parent, ins) {
                        if let (Some(extend), None) = (&pp.extend, &ins.leaf) {
                            let values = &ins.values;
                            return Ok(quote! {
                                if !touched.is_empty() {
                                    let touched_now = touched.take_sorted();
                                    #parent
                                    #extend
                                    // each value read, its slot refilled
                                    let drained = touched_now.iter().map(|&#j| {
                                        #clear
                                        ::core::mem::replace(workspace.get_unchecked_mut(#j), #fill)
                                    });
                                    #values.extend(drained);
                                }
                            });
                        }
                    }
                    return Ok(quote! {
                        if !touched.is_empty() {
                            let touched_now = touched.take_sorted();
                            #parent
                            for &#j in touched_now {
                                #append
                                *workspace.get_unchecked_mut(#j) = #fill;
                                #clear
                            }
                        }
                    });
                }
                quote! {
                    if !touched.is_empty() {
                        let touched_now = touched.take_sorted();
                        #parent
                        for &#j in touched_now {
                            #append
                            *visited.get_unchecked_mut(#j) = false;
                        }
                    }
                }
            }
        })
    }

    fn store_output(&self, combine: Combine, v: TokenStream) -> Result<TokenStream, Error> {
        let kern = &self.p.kernel;
        let t = kern.output.tensor;
        let name = self.tensor_name(t);
        let out = self.output_values();
        let (slot, flag) = match &self.ops[t].kind {
            ParamKind::Scalar { .. } => {
                let flags = self.flags_ident();
                (quote!(*#name), quote!(#flags))
            }
            kind => {
                let at = match kind {
                    ParamKind::Slice { .. } => {
                        let i = self.index_expr(kern.output.indices[0]);
                        match self.rows {
                            // the slice holds units `row0..`
                            Some(1) => quote!(#i - row0),
                            Some(unit) => {
                                let unit = usize_lit(unit);
                                quote!(#i - #unit * row0)
                            }
                            None => i,
                        }
                    }
                    ParamKind::Matrix { .. } if self.rows.is_some() => {
                        // the row-range form: the slice holds rows `unit * row0 ..`
                        let i = self.index_expr(kern.output.indices[0]);
                        let c = self.index_expr(kern.output.indices[1]);
                        let cols = self.extent_ident(kern.output.indices[1]);
                        match self.rows {
                            Some(1) => quote!((#i - row0) * #cols + #c),
                            Some(unit) => {
                                let unit = usize_lit(unit);
                                quote!((#i - #unit * row0) * #cols + #c)
                            }
                            None => quote!(#i * #cols + #c),
                        }
                    }
                    ParamKind::Matrix { .. } => self.matrix_flat(t, &kern.output.indices),
                    ParamKind::DenseArray { .. } => self.strided_flat(t, &kern.output.indices),
                    _ => self.dense_flat(t, &kern.output.indices)?,
                };
                let flags = self.flags_ident();
                (
                    quote!(*#out.get_unchecked_mut(#at)),
                    quote!(*#flags.get_unchecked_mut(#at)),
                )
            }
        };
        Ok(match combine {
            Combine::Assign => quote!(#slot = #v;),
            Combine::Reduce(ReduceOp::Sum) => self.add_assign(slot, v),
            Combine::Reduce(op) if !self.output_flags() => {
                let c = combine_assign(op, quote!(#slot), quote!(__v), self.wraps());
                quote! {
                    let __v = #v;
                    #c
                }
            }
            Combine::Reduce(op) => {
                let c = combine_assign(op, quote!(#slot), quote!(__v), self.wraps());
                quote! {
                    let __v = #v;
                    if #flag {
                        #c
                    } else {
                        #slot = __v;
                        #flag = true;
                    }
                }
            }
        })
    }

    /// The flat position in a dense matrix slice at the coordinates of `indices`: row-major
    /// `r * cols + c` or column-major `c * rows + r` (dimension sizes are the indices'
    /// extents, checked against the slice's length).
    fn matrix_flat(&self, t: usize, indices: &[usize]) -> TokenStream {
        match self.ops[t].kind {
            ParamKind::Matrix {
                col_major: true, ..
            } => {
                let (r, c) = (self.index_expr(indices[0]), self.index_factor(indices[1]));
                let rows = self.extent_ident(indices[0]);
                quote!(#c * #rows + #r)
            }
            _ => {
                let (r, c) = (self.index_factor(indices[0]), self.index_expr(indices[1]));
                let cols = self.extent_ident(indices[1]);
                quote!(#r * #cols + #c)
            }
        }
    }

    /// The position in a dense array's buffer at the coordinates of `indices`: `c * stride`
    /// summed over its dimensions, major to minor, the fastest dimension's stride 1
    /// ([`Self::dense_arrays`] reads the others).
    fn strided_flat(&self, t: usize, indices: &[usize]) -> TokenStream {
        let ParamKind::DenseArray {
            minor_to_major,
            rank,
            ..
        } = &self.ops[t].kind
        else {
            return quote!(0);
        };
        let name = &self.ops[t].name;
        let term = |d: usize| {
            let stride = format_ident!("{}_stride{}", name, d);
            let c = self.index_factor(indices[d]);
            quote!(#stride * #c)
        };
        let terms: Vec<TokenStream> = match minor_to_major {
            Some(order) => order
                .iter()
                .rev()
                .map(|&d| {
                    if d == order[0] {
                        self.index_expr(indices[d])
                    } else {
                        term(d)
                    }
                })
                .collect(),
            // a type parameter's order: every stride a local, the fastest one the constant 1
            None => (0..*rank).map(term).collect(),
        };
        quote!(#(#terms)+*)
    }

    /// For each dense array operand: the stride of every dimension but the fastest, read once
    /// (`b_stride0`), then the name bound to its buffer (`values()`, `values_mut()` for the
    /// output, cleared first element by element unless the statement adds to it: the padding
    /// is never written).
    fn dense_arrays(&self) -> TokenStream {
        let mut out = TokenStream::new();
        for (t, op) in self.ops.iter().enumerate() {
            let ParamKind::DenseArray {
                minor_to_major,
                rank,
                ..
            } = &op.kind
            else {
                continue;
            };
            let name = &op.name;
            match minor_to_major {
                Some(m) => {
                    for &d in &m[1..] {
                        let stride = format_ident!("{}_stride{}", name, d);
                        let d = usize_lit(d);
                        out.extend(quote!(let #stride = #name.strides()[#d];));
                    }
                }
                None => {
                    // the fastest one the constant 1 of the instantiated order
                    let strides = (0..*rank).map(|d| format_ident!("{}_stride{}", name, d));
                    out.extend(quote!(let [#(#strides),*] = #name.order_strides();));
                }
            }
            if t == self.p.kernel.output.tensor {
                if let Some(snap) = &self.snapshot {
                    // the statement reads the output: a copy (of the computed type) first
                    out.extend(match self.stored {
                        None => quote!(let #snap = #name.values().to_vec();),
                        Some(_) => {
                            let w = self.widen(quote!(v));
                            quote!(let #snap: ::std::vec::Vec<_> = #name.values().iter().map(|&v| #w).collect();)
                        }
                    });
                }
                if !self.p.kernel.accumulate {
                    let zero = match self.stored {
                        None => self.zero(),
                        // the stored type is narrower than the computed one's `zero()`
                        Some(_) => quote!(::core::default::Default::default()),
                    };
                    out.extend(quote!(#name.fill(#zero);));
                }
                out.extend(quote!(let #name = #name.values_mut();));
            } else {
                out.extend(quote!(let #name = #name.values();));
            }
        }
        out
    }

    /// The flat position of a random-access (all-dense) storage at the coordinates of
    /// `indices`: levels in order, each `parent * level size + level coordinate`, the level
    /// coordinate `d`, `d floordiv b` or `d mod b` of a dimension coordinate.
    fn dense_flat(&self, t: usize, indices: &[usize]) -> Result<TokenStream, Error> {
        let op = &self.ops[t];
        let Some(e) = &op.encoding else {
            return Err(Error::plain("a dense storage without its encoding"));
        };
        let mut at: Option<(TokenStream, bool)> = None;
        for (l, r) in e.dim_to_lvl.results.iter().enumerate() {
            let c = match r {
                AffineExpr::Var(d) => self.index_factor(indices[*d]),
                AffineExpr::FloorDiv(..) | AffineExpr::Mod(..) => {
                    let Some((d, b)) = r.as_block() else {
                        return Err(unsupported("dense operands with this map"));
                    };
                    let hi = matches!(r, AffineExpr::FloorDiv(..));
                    match self.p.levels.index_loops[indices[d]] {
                        IndexLoops::Split { hi: h, lo, block } if block == b => {
                            let v = self.var_ident(if hi { h } else { lo });
                            quote!(#v)
                        }
                        _ => {
                            let x = self.index_factor(indices[d]);
                            let b = usize_lit(b);
                            if hi {
                                quote!((#x / #b))
                            } else {
                                quote!((#x % #b))
                            }
                        }
                    }
                }
                _ => return Err(unsupported("dense operands with this map")),
            };
            // a whole dimension's level is as long as its index's extent (checked on entry):
            // the extent, read once, rather than the level size read in the loop
            let size = match r {
                AffineExpr::Var(d) if op.slices.is_none() => {
                    let n = self.extent_ident(indices[*d]);
                    quote!(#n)
                }
                _ => op.levels[l].1.size.clone(),
            };
            // `(flat so far) * size + c`: a sum so far is parenthesized
            at = Some(match at {
                None => (c, false),
                Some((p, false)) => (quote!(#p * #size + #c), true),
                Some((p, true)) => (quote!((#p) * #size + #c), true),
            });
        }
        Ok(at.map(|(e, _)| e).unwrap_or_else(|| quote!(0)))
    }

    fn loop_(&self, l: &Loop) -> Result<TokenStream, Error> {
        let c = self.var_ident(l.var);
        match self.row_open() {
            Some(pp) if c == pp.coord => {
                let open = pp.parent.clone();
                let body = self.loop_body(l)?;
                Ok(quote!(#open #body))
            }
            _ => self.loop_body(l),
        }
    }

    /// [`Self::loop_`] without the output's row opening.
    fn loop_body(&self, l: &Loop) -> Result<TokenStream, Error> {
        if let Some(sr) = self.shared_rows().filter(|sr| sr.var == l.var) {
            return self.shared_rows_loop(l, sr);
        }
        let c = self.var_ident(l.var);
        let n = self.extent(l.var);
        if self.outermost.replace(false) {
            // the row-range form: units `row0 ..` of the output slice
            let [case] = &l.cases[..] else {
                return Err(Error::plain("several cases in the outermost loop"));
            };
            let body = self.stmts(&case.body)?;
            let out = self.output_values();
            // elements of the output per unit: a row-major matrix's rows hold its columns
            let kern = &self.p.kernel;
            let per = match self.ops[kern.output.tensor].kind {
                ParamKind::Matrix { .. } => {
                    let cols = self.extent_ident(kern.output.indices[1]);
                    Some(quote!(#cols))
                }
                _ => None,
            };
            let len = match (self.rows, per) {
                (Some(1) | None, None) => quote!(#out.len()),
                (Some(1) | None, Some(cols)) => quote!(#out.len() / #cols),
                (Some(unit), None) => {
                    let unit = usize_lit(unit);
                    quote!(#out.len() / #unit)
                }
                (Some(unit), Some(cols)) => {
                    let unit = usize_lit(unit);
                    quote!(#out.len() / (#unit * #cols))
                }
            };
            if self.streams_blocks.get() {
                // the range's block rows as two streams when the kernel prefetches (as the
                // serial kernel's, [`Self::independent_rows`])
                let rt = self.rt;
                return Ok(quote! {
                    for #c in #rt::prefetch::row_order(row0..row0 + #len, prefetch) {
                        #body
                    }
                });
            }
            return Ok(quote! {
                for #c in row0..row0 + #len {
                    #body
                }
            });
        }
        if l.iters.is_empty() {
            let [case] = &l.cases[..] else {
                return Err(Error::plain("several cases without iterators"));
            };
            if let Some((locates, expr)) = self.block_sum(l) {
                // a block's row summed on its own, then added to the output once: the chain
                // of additions carried from block to block is one long, not the block's width
                let (hoisted, (locates, v)) = self.hoist_then(l.var, &case.body, || {
                    Ok((self.stmts(locates)?, self.expr(expr)?))
                })?;
                // the first term starts the sum: an addition to zero is not folded away for
                // floats (`0.0 + -0.0` is `0.0`), and costs a third of a 3-wide block's adds
                let first = quote! {
                    let #c = 0;
                    #locates
                    #v
                };
                let store = self.store_output(Combine::Reduce(ReduceOp::Sum), quote!(block_sum))?;
                if matches!(self.p.levels.vars[l.var].extent, Extent::Const(1)) {
                    return Ok(quote! {
                        #hoisted
                        let block_sum = { #first };
                        #store
                    });
                }
                let add = self.add_assign(quote!(block_sum), v);
                return Ok(quote! {
                    #hoisted
                    let mut block_sum = { #first };
                    for #c in 1..#n {
                        #locates
                        #add
                    }
                    #store
                });
            }
            if let Some((t, expr)) = self.partial_sum(l) {
                let (hoisted, v) = self.hoist_then(l.var, &case.body, || self.expr(expr))?;
                return Ok(self.range_partial_sums(t, hoisted, &c, &n, v));
            }
            if let Some(sum) = self.nm_sum(l) {
                return self.nm_partial_sums(l, sum, &n);
            }
            let (hoisted, body) = self.hoist(l.var, &case.body)?;
            if self.streams_blocks.get() && self.independent_rows(l) {
                // the serial kernel's rows, independent of each other: two streams of block
                // rows when the kernel prefetches (`prefetch::row_order`)
                let rt = self.rt;
                let n = self.extent_bare(l.var);
                return Ok(quote! {
                    #hoisted
                    for #c in #rt::prefetch::row_order(0..#n, prefetch) {
                        #body
                    }
                });
            }
            return Ok(quote! {
                #hoisted
                for #c in 0..#n {
                    #body
                }
            });
        }
        if let ([it], [case], Driver::Merge) = (&l.iters[..], &l.cases[..], l.driver) {
            if self.slice_of(*it).is_none() {
                return self.single(*it, l.var, &case.body, self.partial_sum(l));
            }
        }
        self.coiterate(l)
    }

    /// The variable a hoisted value of access `a` lives in: the tensor's prefix and the
    /// statement's index names (`a_ik`).
    fn hoisted_ident(&self, a: usize) -> Ident {
        let acc = &self.p.kernel.accesses[a];
        let names: String = acc
            .indices
            .iter()
            .map(|&ix| self.p.kernel.indices[ix].name.as_str())
            .collect();
        format_ident!("{}_{}", self.ops[acc.tensor].prefix, names)
    }

    /// `body` of the innermost loop over `var` (no loop inside it), with the values its
    /// computations read that do not depend on `var` loaded once before the loop: the `let`s
    /// and the body. Accesses of the output (its values change in the loop) and sums of
    /// duplicate groups stay where they are.
    fn hoist(&self, var: usize, body: &[Stmt]) -> Result<(TokenStream, TokenStream), Error> {
        self.hoist_then(var, body, || self.stmts(body))
    }

    /// [`Self::hoist`] with the body emitted by `emit`, while the hoisted values are in scope.
    fn hoist_then<T>(
        &self,
        var: usize,
        body: &[Stmt],
        emit: impl FnOnce() -> Result<T, Error>,
    ) -> Result<(TokenStream, T), Error> {
        let innermost = body
            .iter()
            .all(|s| !matches!(s, Stmt::Loop(_) | Stmt::Locate(_)));
        let mut accesses = Vec::new();
        if innermost {
            for s in body {
                if let Stmt::Compute { expr, .. } = s {
                    expr.accesses(&mut accesses);
                }
            }
        }
        let depends = |a: usize| {
            self.p.kernel.accesses[a].indices.iter().any(|&ix| {
                match self.p.levels.index_loops[ix] {
                    IndexLoops::Plain(v) => v == var,
                    IndexLoops::Split { hi, lo, .. } => hi == var || lo == var,
                }
            })
        };
        let grouped = |a: usize| {
            self.p.levels.access_iters[a]
                .as_ref()
                .and_then(|its| its.last())
                .is_some_and(|&last| self.grouped(last))
        };
        let mut lets = TokenStream::new();
        let before = self.hoisted.borrow().len();
        for a in accesses {
            let acc = &self.p.kernel.accesses[a];
            if acc.tensor == self.p.kernel.output.tensor
                || depends(a)
                || grouped(a)
                || self.hoisted.borrow().iter().any(|(b, _)| *b == a)
            {
                continue;
            }
            let h = self.hoisted_ident(a);
            if !self.hoisted.borrow().iter().any(|(_, g)| *g == h) {
                let v = self.load(a)?;
                match self.lane_position(a) {
                    // one value per row run together, read at its row's position
                    Some(p) => {
                        let rt = self.rt;
                        // (a pattern's constant value is the same in every lane)
                        lets.extend(if mentions(&v, &p.to_string()) {
                            quote! {
                                let #h = #rt::generated::lanes(|lane| {
                                    let #p = #p + shift[lane];
                                    #v
                                });
                            }
                        } else {
                            quote!(let #h = #rt::generated::lanes(|_| #v);)
                        });
                    }
                    None => lets.extend(quote!(let #h = #v;)),
                }
            }
            self.hoisted.borrow_mut().push((a, h));
        }
        let body = emit();
        self.hoisted.borrow_mut().truncate(before);
        Ok((lets, body?))
    }

    /// One iterator over its segment (no merge): a `for` over the positions, or, at a
    /// non-unique level, a `while` over groups of equal coordinates.
    fn single(
        &self,
        it: usize,
        var: usize,
        body: &[Stmt],
        partial: Option<(usize, &Expr)>,
    ) -> Result<TokenStream, Error> {
        let body_stmts = body;
        let c = self.var_ident(var);
        let p = self.pos_ident(it);
        let seg = self.segment(it);
        let read = self.read(it, quote!(#p));
        if let (false, Some((t, expr))) = (self.grouped(it), partial) {
            let (hoisted, v) = self.hoist_then(var, body, || self.expr(expr))?;
            let (_, _, cx) = self.level(it);
            let pair = |at: TokenStream| cx.read_crd_pair(&cx.base, &at);
            let reads = Reads {
                one: &read,
                pair: &pair,
            };
            let prefetch = self.prefetches(it, Streamed::Row);
            return Ok(self.partial_sums(t, hoisted, &seg, &p, &c, reads, v, prefetch));
        }
        let (hoisted, body) = self.hoist(var, body)?;
        let windowed = self
            .windowed_rows()
            .filter(|w| self.row_sum.get() == RowSum::Window && w.iter == it)
            .and_then(|_| self.parent_iter(it));
        if !self.grouped(it) {
            // in a windowed row, each row of `B` adds its bits to the row's pattern
            let pattern = windowed.map(|pit| {
                let pp = self.pos_ident(pit);
                quote!(window_pattern |= window.pattern_unchecked(#pp, base);)
            });
            // a block row of BSR's SpMV: its blocks streamed from memory
            let prefetch = if windowed.is_none() && self.sums_blocks(body_stmts) {
                self.prefetches(it, Streamed::Block(&p))
            } else {
                TokenStream::new()
            };
            // a row scattered into the output (the transposed SpMV): streamed from memory
            // and unrolled
            let scattered = windowed.is_none()
                && prefetch.is_empty()
                && self.positioned(it)
                && !self.one_entry_segments(it)
                && scatters(body_stmts);
            if scattered {
                let before = self.prefetches(it, Streamed::Scattered);
                return Ok(self.unrolled(hoisted, pattern, &seg, before, &p, &c, &read, &body));
            }
            if self.one_entry_segments(it) {
                return Ok(quote! {
                    #hoisted
                    #pattern
                    let (lo, hi) = #seg;
                    if lo < hi {
                        let #p = lo;
                        #prefetch
                        let #c = #read;
                        #body
                    }
                });
            }
            return Ok(quote! {
                #hoisted
                #pattern
                let (lo, hi) = #seg;
                for #p in lo..hi {
                    #prefetch
                    let #c = #read;
                    #body
                }
            });
        }
        let next = self.next_ident(it);
        let read_next = self.read(it, quote!(#next));
        let end = format_ident!("{}_end", p);
        Ok(quote! {
            #hoisted
            let (mut #p, #end) = #seg;
            while #p < #end {
                let #c = #read;
                let mut #next = #p + 1;
                while #next < #end && #read_next == #c {
                    #next += 1;
                }
                #body
                #p = #next;
            }
        })
    }

    /// The loop over segment `seg` (after `before`) running `body` at each position `p` with
    /// coordinate `c` read by `read`, [`SCATTER_UNROLL`] positions a turn and the rest one by
    /// one: the same statements in the same order as a `for` over the segment. For a row
    /// scattered into a dense output (the transposed SpMV), whose loop LLVM keeps as it is:
    /// on Zen 2 (scratch, interleaved), kron's transposed SpMV 8-12% faster unrolled by four,
    /// bcsstk16's in cache 7-26%.
    #[allow(clippy::too_many_arguments)]
    fn unrolled(
        &self,
        hoisted: TokenStream,
        pattern: Option<TokenStream>,
        seg: &TokenStream,
        before: TokenStream,
        p: &Ident,
        c: &Ident,
        read: &TokenStream,
        body: &TokenStream,
    ) -> TokenStream {
        let width = usize_lit(SCATTER_UNROLL);
        let steps = (1..SCATTER_UNROLL).map(|k| {
            let k = usize_lit(k);
            quote! {{
                let #p = #p + #k;
                let #c = #read;
                #body
            }}
        });
        quote! {
            #hoisted
            #pattern
            let (lo, hi) = #seg;
            #before
            let mut #p = lo;
            while #p + #width <= hi {
                {
                    let #c = #read;
                    #body
                }
                #(#steps)*
                #p += #width;
            }
            while #p < hi {
                let #c = #read;
                #body
                #p += 1;
            }
        }
    }

    /// Whether iterator `it`'s level finds its segments in a positions array (compressed,
    /// loose_compressed): segments of any length, as against a singleton's one position or an
    /// n:m block's `n`.
    fn positioned(&self, it: usize) -> bool {
        let li = &self.p.levels.iters[it];
        self.ops[self.p.kernel.accesses[li.access].tensor]
            .encoding
            .as_ref()
            .is_some_and(|enc| enc.lvl_types[li.level].has_positions())
    }

    /// Whether every segment of iterator `it`'s level holds at most one stored entry: the last
    /// level, not dense, of an ELL operand whose counting level and the level of the dimension
    /// it counts both lie above it. `validate` guarantees it (ELL's slice rules: entry `k` of a
    /// row sits in slice `k`, so a slice holds at most one entry of a row) and `from_coo` builds
    /// it; the loop over such a segment is then a test, `if lo < hi`, the same sums in the
    /// same order. ELL's SpMV of cryg2500 (5 slices, 4.9 entries a row) ran 18.0 µs with a
    /// loop of zero or one turn per slice and row, 13.9 µs with the test (scratch, interleaved,
    /// AMD EPYC Zen 2, 2026-12-02).
    fn one_entry_segments(&self, it: usize) -> bool {
        let li = &self.p.levels.iters[it];
        let Some(enc) = &self.ops[self.p.kernel.accesses[li.access].tensor].encoding else {
            return false;
        };
        li.level + 1 == enc.lvl_types.len()
            && !enc.lvl_types[li.level].is_dense()
            && enc
                .ell_levels()
                .is_some_and(|(counting, row)| counting < li.level && row < li.level)
    }

    /// The prefetches of the streams iterator `it` reads (its level's coordinates and its
    /// operand's values), behind the kernel's `prefetch` flag and with its `locality`
    /// (non-temporal for 8-byte values), for a loop that streams a stored operand in position
    /// order ([`Streamed`] says which loop and where). Only where the kernel reassociates its
    /// sums (the loops of SpMV; the built-ins' and the kernels declaring `reassociate`), the
    /// operand (an input) stores its values, its levels below `it` are dense of constant sizes
    /// (the values of position `p` start at `p` times their product), the level owns its
    /// coordinates unpacked (unless only the values are prefetched) and no other operand is
    /// prefetched; nothing otherwise. Records the operand as the one the kernel asks
    /// `prefetch::enabled` and `prefetch::locality` about.
    fn prefetches(&self, it: usize, at: Streamed<'_>) -> TokenStream {
        if !self.reassociate && !matches!(at, Streamed::Scattered) {
            return TokenStream::new();
        }
        let li = &self.p.levels.iters[it];
        let t = self.p.kernel.accesses[li.access].tensor;
        let (op, _, cx) = self.level(it);
        let crd = cx
            .crd
            .as_ref()
            .filter(|loc| loc.stride == 1 && loc.owner && !cx.packed());
        if (crd.is_none() && !matches!(at, Streamed::Values(_)))
            || !cx.unchecked
            || cx.batched
            || t == self.p.kernel.output.tensor
            || self.explicit_value(t).is_some()
        {
            return TokenStream::new();
        }
        // values per position: the product of the constant sizes of the dense levels below
        let mut block = 1usize;
        for (_, below) in &op.levels[li.level + 1..] {
            match below.size.to_string().parse::<usize>() {
                Ok(n) if below.lt.is_dense() => block *= n,
                _ => return TokenStream::new(),
            }
        }
        if !matches!(at, Streamed::Block(_)) && block != 1 {
            return TokenStream::new();
        }
        let name = self.tensor_name(t);
        let values = quote!(&#name.values);
        let mut prefetched = self.prefetched.borrow_mut();
        match prefetched.as_ref() {
            Some(v) if v.to_string() != values.to_string() => return TokenStream::new(),
            Some(_) => {}
            None => *prefetched = Some(values.clone()),
        }
        let rt = self.rt;
        let coordinates = crd.map(|loc| {
            let f = &loc.field;
            quote!(&#name.#f)
        });
        match (at, coordinates) {
            // a row's lines before its loop: with the kernel's locality, or into all cache
            // levels when the row is scattered
            (Streamed::Row | Streamed::Scattered, Some(crd)) => {
                let (bind, locality) = match at {
                    Streamed::Scattered => (
                        quote!(let temporal = #rt::prefetch::Locality::Temporal;),
                        quote!(temporal),
                    ),
                    _ => (TokenStream::new(), quote!(locality)),
                };
                quote! {
                    if prefetch {
                        #bind
                        #rt::prefetch::row_unchecked(#crd, lo, hi, #locality);
                        #rt::prefetch::row_unchecked(#values, lo, hi, #locality);
                    }
                }
            }
            (Streamed::Block(p), Some(crd)) => {
                self.streams_blocks.set(true);
                let values = match block {
                    1 => quote!(#rt::prefetch::ahead(#values, #p, locality);),
                    n => {
                        let n = usize_lit(n);
                        quote!(#rt::prefetch::blocks_ahead(#values, #p * #n, locality);)
                    }
                };
                quote! {
                    if prefetch {
                        #rt::prefetch::ahead(#crd, #p, locality);
                        #values
                    }
                }
            }
            (Streamed::Values(p), _) => quote! {
                if prefetch {
                    #rt::prefetch::ahead(#values, #p, locality);
                }
            },
            // (turned down above)
            (_, None) => TokenStream::new(),
        }
    }

    /// Whether `body` sums block rows ([`Self::block_sum`]) in one of its loops.
    fn sums_blocks(&self, body: &[Stmt]) -> bool {
        body.iter().any(|s| match s {
            Stmt::Loop(l) => {
                self.block_sum(l).is_some() || l.cases.iter().any(|c| self.sums_blocks(&c.body))
            }
            _ => false,
        })
    }

    /// The locates and the summand of a loop summing a block's row into the output, when
    /// block rows are summed first ([`Self::reassociate`], [`Program::block_sum`]):
    /// BSR's SpMV, whose inner loop over a block row then sums into a local before the output
    /// (as MLIR's vectorizer reassociates a reduction).
    fn block_sum<'b>(&self, l: &'b Loop) -> Option<(&'b [Stmt], &'b Expr)> {
        if !self.reassociate {
            return None;
        }
        self.p.block_sum(l)
    }

    /// The sum across an n:m level's segments, when it runs in partial sums
    /// ([`Self::reassociate`], [`Program::nm_sum`]).
    fn nm_sum<'b>(&self, l: &'b Loop) -> Option<NmSum<'b>> {
        if !self.reassociate {
            return None;
        }
        self.p.nm_sum(l)
    }

    /// The temporary loop `l` only sums into, and the summand, when that sum runs in partial
    /// sums ([`Self::reassociate`], [`Program::partial_sum`]).
    fn partial_sum<'b>(&self, l: &'b Loop) -> Option<(usize, &'b Expr)> {
        if !self.reassociate {
            return None;
        }
        self.p.partial_sum(l)
    }

    /// The loop over one segment summing into temporary `t` in
    /// [`crate::kernel::REASSOCIATE_LANES`] partial sums: lane `k` (`t` itself for lane 0,
    /// `t_k` after it) adds the value `v` at position `p + k` of each step, the positions left
    /// over go into `t`, and the other lanes' sum is added to `t` after the loop.
    ///
    /// Where the level reads two coordinates with one load (`reads.pair`), a step reads its
    /// coordinates first, two at a time (`c` and `c_1`, `c_2` and `c_3`), and lane `k` binds
    /// `c` to `c_k`.
    #[allow(clippy::too_many_arguments)]
    fn partial_sums(
        &self,
        t: usize,
        hoisted: TokenStream,
        seg: &TokenStream,
        p: &Ident,
        c: &Ident,
        reads: Reads<'_>,
        v: TokenStream,
        prefetch: TokenStream,
    ) -> TokenStream {
        let read = reads.one;
        let name = format_ident!("t{}", t);
        let zero = self.zero();
        let lanes = crate::kernel::REASSOCIATE_LANES;
        let acc: Vec<Ident> = (0..lanes)
            .map(|k| match k {
                0 => name.clone(),
                k => format_ident!("t{}_{}", t, k),
            })
            .collect();
        let lane_crd = |k: usize| match k {
            0 => c.clone(),
            k => format_ident!("{}_{}", c, k),
        };
        // the coordinates of a step, two per load
        let paired: Option<Vec<TokenStream>> = lanes
            .is_multiple_of(2)
            .then(|| {
                (0..lanes)
                    .step_by(2)
                    .map(|k| {
                        let at = match k {
                            0 => quote!(#p),
                            k => {
                                let k = usize_lit(k);
                                quote!(#p + #k)
                            }
                        };
                        let (c0, c1) = (lane_crd(k), lane_crd(k + 1));
                        let pair = (reads.pair)(at)?;
                        Some(quote!(let (#c0, #c1) = #pair;))
                    })
                    .collect()
            })
            .flatten();
        let step: Vec<TokenStream> = acc
            .iter()
            .enumerate()
            .map(|(k, acc)| {
                // lane 0 reads at `p` itself; lane `k` rebinds `p` to `p + k` in its block
                let at = match k {
                    0 => TokenStream::new(),
                    k => {
                        let k = usize_lit(k);
                        quote!(let #p = #p + #k;)
                    }
                };
                let crd = match (k, &paired) {
                    (0, Some(_)) => TokenStream::new(),
                    (k, Some(_)) => {
                        let ck = lane_crd(k);
                        quote!(let #c = #ck;)
                    }
                    (_, None) => quote!(let #c = #read;),
                };
                let add = self.add_assign(quote!(#acc), v.clone());
                if at.is_empty() && crd.is_empty() {
                    // lane 0 at `p` with its coordinate read: nothing to rebind
                    return add;
                }
                quote! {{
                    #at
                    #crd
                    #add
                }}
            })
            .collect();
        let paired = paired.unwrap_or_default();
        let lane = &acc[1..];
        let n = usize_lit(lanes);
        let add = self.add_assign(quote!(#name), v.clone());
        let combine = self.combine_lanes(t, lane, quote!(hi > lo));
        quote! {
            #hoisted
            let (lo, hi) = #seg;
            #prefetch
            #(let mut #lane = #zero;)*
            let mut #p = lo;
            while #p + #n <= hi {
                #(#paired)*
                #(#step)*
                #p += #n;
            }
            while #p < hi {
                let #c = #read;
                #add
                #p += 1;
            }
            #combine
        }
    }

    /// The sum across an n:m level's segments ([`Program::nm_sum`]) in
    /// [`crate::kernel::REASSOCIATE_LANES`] partial sums: each step runs `4 / n` whole
    /// segments of the range `0..n_range` (locates, then the segment's `n` positions read one
    /// after the other), position `k` of the step adding into lane `k` (`t` itself for lane
    /// 0); the segments left over (none when a step is one segment, at most one when it is
    /// two) add into `t` after the steps, and the other lanes' sum is added to `t` after.
    fn nm_partial_sums(
        &self,
        l: &Loop,
        sum: NmSum<'_>,
        n_range: &TokenStream,
    ) -> Result<TokenStream, Error> {
        let c = self.var_ident(l.var);
        let p = self.pos_ident(sum.iter);
        let ci = self.var_ident(sum.inner.var);
        let seg = self.segment(sum.iter);
        // the segment's start alone: an n:m segment is the `n` positions from `parent * n`
        let lo = match self.parent_iter(sum.iter) {
            Some(pit) if !self.grouped(pit) => {
                let pp = self.pos_ident(pit);
                match sum.n {
                    1 => quote!(#pp),
                    n => {
                        let n = usize_lit(n);
                        quote!(#pp * #n)
                    }
                }
            }
            _ => quote!(#seg.0),
        };
        let read = self.read(sum.iter, quote!(#p));
        let (hoisted, (locates, v)) = self.hoist_then(l.var, &sum.inner.cases[0].body, || {
            Ok((self.stmts(sum.locates)?, self.expr(sum.expr)?))
        })?;
        let t = sum.temp;
        let name = format_ident!("t{}", t);
        let zero = self.zero();
        let lanes = crate::kernel::REASSOCIATE_LANES;
        let lane: Vec<Ident> = (1..lanes).map(|k| format_ident!("t{}_{}", t, k)).collect();
        let acc = |k: usize| match k {
            0 => name.clone(),
            k => lane[k - 1].clone(),
        };
        let groups = lanes / sum.n;
        let step = (0..groups).map(|g| {
            let at = match g {
                0 => TokenStream::new(),
                g => {
                    let g = usize_lit(g);
                    quote!(let #c = #c + #g;)
                }
            };
            let adds = (0..sum.n).map(|k| {
                let lane = acc(g * sum.n + k);
                let add = self.add_assign(quote!(#lane), v.clone());
                let at = match k {
                    0 => quote!(lo),
                    k => {
                        let k = usize_lit(k);
                        quote!(lo + #k)
                    }
                };
                quote! {{
                    let #p = #at;
                    let #ci = #read;
                    #add
                }}
            });
            // the step's values prefetched once, at its first segment
            let prefetch = match g {
                0 => self.prefetches(sum.iter, Streamed::Values(&format_ident!("lo"))),
                _ => TokenStream::new(),
            };
            quote! {{
                #at
                #locates
                let lo = #lo;
                #prefetch
                #(#adds)*
            }}
        });
        let add = self.add_assign(quote!(#name), v.clone());
        let width = usize_lit(groups);
        let combine = self.combine_lanes(t, &lane, quote!(#n_range > 0));
        let segment = quote! {
            #locates
            let (lo, hi) = #seg;
            for #p in lo..hi {
                let #ci = #read;
                #add
            }
        };
        // the segments a step leaves: none when a step is one segment, at most one when it is
        // two (an `if`: a loop of at most one turn kept LLVM from unswitching the steps' loop
        // on the prefetch flag, 2:4's SpMV 2.54-2.57 against 2.27-2.29 ms on Zen 2)
        let rest = match groups {
            1 => TokenStream::new(),
            2 => quote! {
                if #c < #n_range {
                    #segment
                }
            },
            _ => quote! {
                while #c < #n_range {
                    #segment
                    #c += 1;
                }
            },
        };
        Ok(quote! {
            #hoisted
            #(let mut #lane = #zero;)*
            let mut #c = 0;
            while #c + #width <= #n_range {
                #(#step)*
                #c += #width;
            }
            #rest
            #combine
        })
    }

    /// After a loop in partial sums: lanes 1 to 3 summed, `(l1 + l2) + l3`, and added to
    /// temporary `t` (lane 0); a temporary appended to a sparse output is marked visited when
    /// `added` (the loop added a term).
    fn combine_lanes(&self, t: usize, lane: &[Ident], added: TokenStream) -> TokenStream {
        let name = format_ident!("t{}", t);
        let lanes_sum = lane
            .iter()
            .map(|l| quote!(#l))
            .reduce(|a, b| quote!(#a + #b))
            .unwrap_or_else(|| self.zero());
        let mut combine = self.add_assign(quote!(#name), lanes_sum);
        if self.temp_flag(t) {
            let seen = format_ident!("t{}_visited", t);
            combine.extend(quote!(#seen |= #added;));
        }
        combine
    }

    /// The loop over the dense range `0..n` summing the value `v` of coordinate `c` into
    /// temporary `t` in [`crate::kernel::REASSOCIATE_LANES`] partial sums
    /// ([`Program::partial_sum`]): lane `k` (`t` itself for lane 0, `t_k` after it) adds
    /// coordinate `c + k` of each step, the coordinates left over go into `t`, and the other
    /// lanes' sum is added to `t` after the loop.
    fn range_partial_sums(
        &self,
        t: usize,
        hoisted: TokenStream,
        c: &Ident,
        n: &TokenStream,
        v: TokenStream,
    ) -> TokenStream {
        let name = format_ident!("t{}", t);
        let zero = self.zero();
        let lanes = crate::kernel::REASSOCIATE_LANES;
        let lane: Vec<Ident> = (1..lanes).map(|k| format_ident!("t{}_{}", t, k)).collect();
        let add = self.add_assign(quote!(#name), v.clone());
        let steps = lane.iter().enumerate().map(|(k, acc)| {
            let k = usize_lit(k + 1);
            let add = self.add_assign(quote!(#acc), v.clone());
            quote! {{
                let #c = #c + #k;
                #add
            }}
        });
        let width = usize_lit(lanes);
        let combine = self.combine_lanes(t, &lane, quote!(#n > 0));
        quote! {
            #hoisted
            #(let mut #lane = #zero;)*
            let mut #c = 0;
            while #c + #width <= #n {
                #add
                #(#steps)*
                #c += #width;
            }
            while #c < #n {
                #add
                #c += 1;
            }
            #combine
        }
    }

    /// Co-iteration (TACO's merge loop): over a dense range (every coordinate, iterators
    /// tested against it) or a merge (the smallest coordinate where an iterator stands); the
    /// first case whose iterators all stand there runs; every iterator standing there
    /// advances. A merge ends when no case can be met (an exhausted iterator reads
    /// `usize::MAX`, above every coordinate).
    fn coiterate(&self, l: &Loop) -> Result<TokenStream, Error> {
        let c = self.var_ident(l.var);
        let mut setup = TokenStream::new();
        let mut reads = TokenStream::new();
        let mut advance = TokenStream::new();
        let mut alive = Vec::new();
        let mut crd_of = Vec::new();
        let mut merged = Vec::new();
        for &it in &l.iters {
            let li = &self.p.levels.iters[it];
            if !li.iterate {
                return Err(Error::plain("a located level co-iterated"));
            }
            let p = self.pos_ident(it);
            let end = format_ident!("{}_end", p);
            let at = format_ident!("{}_{}", c, p);
            let seg = self.segment(it);
            let raw = self.read(it, quote!(#p));
            let slice = self.slice_of(it);
            let settle = match slice {
                None => TokenStream::new(),
                Some(s) => {
                    let raw_p = self.read(it, quote!(#p));
                    let m = Self::member(&quote!(__raw), s);
                    quote! {
                        while #p < #end {
                            let __raw = #raw_p;
                            if #m {
                                break;
                            }
                            #p += 1;
                        }
                    }
                }
            };
            setup.extend(quote! {
                let (mut #p, #end) = #seg;
                #settle
            });
            let crd = match slice {
                None => raw.clone(),
                Some(s) => Self::in_slice(quote!((#raw)), s),
            };
            reads.extend(quote! {
                let #at = if #p < #end { #crd } else { usize::MAX };
            });
            let step = if self.grouped(it) {
                let next = self.next_ident(it);
                let read_next = self.read(it, quote!(#next));
                reads.extend(quote! {
                    let mut #next = #p + 1;
                    if #p < #end {
                        let __raw = #raw;
                        while #next < #end && #read_next == __raw {
                            #next += 1;
                        }
                    }
                });
                quote!(#p = #next;)
            } else {
                quote!(#p += 1;)
            };
            advance.extend(quote! {
                if #at == #c {
                    #step
                    #settle
                }
            });
            alive.push((it, quote!(#p < #end)));
            crd_of.push((it, at));
            merged.push((it, p, end, crd));
        }
        let find = |it: usize, v: &[(usize, TokenStream)]| {
            v.iter().find(|(i, _)| *i == it).map(|(_, t)| t.clone())
        };
        let mut cond = Vec::new();
        let mut branches = Vec::new();
        let mut otherwise = None;
        for case in &l.cases {
            // a case implied by a case over fewer iterators adds nothing to the condition
            let implied = l.cases.iter().any(|o| {
                o.iters.len() < case.iters.len() && o.iters.iter().all(|i| case.iters.contains(i))
            });
            if !implied {
                let live: Vec<TokenStream> =
                    case.iters.iter().filter_map(|&i| find(i, &alive)).collect();
                cond.push(if live.len() == 1 || l.cases.len() == 1 {
                    quote!(#(#live)&&*)
                } else {
                    quote!((#(#live)&&*))
                });
            }
            let body = self.stmts(&case.body)?;
            if case.iters.is_empty() {
                otherwise = Some(body);
                break;
            }
            let here: Vec<TokenStream> = case
                .iters
                .iter()
                .filter_map(|&i| crd_of.iter().find(|(j, _)| *j == i).map(|(_, a)| a))
                .map(|a| quote!(#a == #c))
                .collect();
            branches.push(quote!(if #(#here)&&* { #body }));
        }
        let dispatch = match otherwise {
            Some(body) if branches.is_empty() => body,
            Some(body) => quote!(#(#branches)else* else { #body }),
            None => quote!(#(#branches)else*),
        };
        match l.driver {
            Driver::Range => {
                let n = self.extent(l.var);
                Ok(quote! {
                    #setup
                    for #c in 0..#n {
                        #reads
                        #dispatch
                        #advance
                    }
                })
            }
            Driver::Merge => {
                let crds: Vec<&Ident> = crd_of.iter().map(|(_, a)| a).collect();
                let (first, rest) = crds
                    .split_first()
                    .ok_or_else(|| Error::plain("an empty merge"))?;
                let merge = quote! {
                    while #(#cond)||* {
                        #reads
                        let #c = #first #(.min(#rest))*;
                        #dispatch
                        #advance
                    }
                };
                let Some(u) = self.branch_free_union(l) else {
                    return Ok(quote!(#setup #merge));
                };
                let part = |it: usize| {
                    merged
                        .iter()
                        .find(|m| m.0 == it)
                        .cloned()
                        .ok_or_else(|| Error::plain("a merged iterator without a position"))
                };
                let (_, px, ex, cx) = part(u.left.0)?;
                let (_, py, ey, cy) = part(u.right.0)?;
                let [at_x, at_y] = [u.left.0, u.right.0].map(|it| {
                    crd_of
                        .iter()
                        .find(|(i, _)| *i == it)
                        .map(|(_, a)| a.clone())
                });
                let (Some(at_x), Some(at_y)) = (at_x, at_y) else {
                    return Err(Error::plain("a merged iterator without a coordinate"));
                };
                let (load_x, load_y) = (self.load(u.left.1)?, self.load(u.right.1)?);
                let (id_x, id_y) = (
                    self.sum_identity(),
                    if u.sub {
                        self.zero()
                    } else {
                        self.sum_identity()
                    },
                );
                let (vx, vy) = (format_ident!("__left"), format_ident!("__right"));
                let depth = self.hoisted.borrow().len();
                self.hoisted
                    .borrow_mut()
                    .extend([(u.left.1, vx.clone()), (u.right.1, vy.clone())]);
                let both = self.stmts(&l.cases[0].body);
                self.hoisted.borrow_mut().truncate(depth);
                let both = both?;
                let only_x = self.stmts(&l.cases[u.left.2].body)?;
                let only_y = self.stmts(&l.cases[u.right.2].body)?;
                Ok(quote! {
                    #setup
                    if #ex - #px == #ey - #py {
                        #merge
                    } else {
                        while #px < #ex && #py < #ey {
                            let #at_x = #cx;
                            let #at_y = #cy;
                            let #c = #at_x.min(#at_y);
                            let #vx = ::core::hint::select_unpredictable(#at_x == #c, #load_x, #id_x);
                            let #vy = ::core::hint::select_unpredictable(#at_y == #c, #load_y, #id_y);
                            #both
                            #px += usize::from(#at_x == #c);
                            #py += usize::from(#at_y == #c);
                        }
                        while #px < #ex {
                            let #c = #cx;
                            #only_x
                            #px += 1;
                        }
                        while #py < #ey {
                            let #c = #cy;
                            #only_y
                            #py += 1;
                        }
                    }
                })
            }
        }
    }

    /// A merge of two iterators that [`Self::coiterate`] also runs without a branch per
    /// entry: its cases are `x ± y` where both stand, `x` where only the left one does and `y`
    /// (`-y` for `-`) where only the right one does, each one statement into the same target,
    /// on values of `f64`, `f32` or 32- and 64-bit integers (computed in their own type), the
    /// levels unique and not sliced. The value of an absent operand is then the identity that
    /// makes `x ± y` equal its case bit for bit: `-0.0` (`-0.0 + v` and `v + -0.0` are `v`;
    /// `-0.0 - v` is `-v`), `+0.0` on the right of `-` (`v - 0.0` is `v`), `0` for integers;
    /// NaNs aside: a NaN keeps its payload, but a signaling one comes out quiet and one on the
    /// right of `-` alone keeps its sign (`-0.0 - NaN` is that NaN; `-NaN` flips the sign).
    ///
    /// The merge of two sorted rows decides at every entry which side comes next, a branch
    /// that mispredicts about every other time on rows of unrelated patterns: bayer10's
    /// `A + Aᵀ` (13,436 rows of 7 entries, an unsymmetric pattern) took 630 µs branching and
    /// 565 µs with the side chosen by a select (the same process, 2026-11-28, Zen 4). On rows of
    /// one pattern (a symmetric matrix's `A + Aᵀ`) the branches predict and the select, which
    /// chains each step to the previous one's loads, was 5% slower: a row pair of equal
    /// lengths keeps the branching merge.
    fn branch_free_union(&self, l: &Loop) -> Option<BranchFree> {
        let direct = matches!(
            self.p.kernel.value,
            ValueType::F64
                | ValueType::F32
                | ValueType::I64
                | ValueType::I32
                | ValueType::U64
                | ValueType::U32
        );
        if self.generic
            || !direct
            || self.stored.is_some()
            || self.lanes.get()
            || self.quant.iter().any(Option::is_some)
        {
            return None;
        }
        let [a, b] = l.iters[..] else {
            return None;
        };
        if [a, b]
            .iter()
            .any(|&it| self.grouped(it) || self.slice_of(it).is_some())
        {
            return None;
        }
        let compute = |k: usize| match l.cases.get(k).map(|c| &c.body[..]) {
            Some(
                [Stmt::Compute {
                    target,
                    combine,
                    expr,
                }],
            ) => Some((*target, *combine, expr)),
            _ => None,
        };
        let (target, combine, both) = compute(0)?;
        if l.cases.len() != 3 || l.cases[0].iters.len() != 2 {
            return None;
        }
        let Expr::Binary(op @ (BinOp::Add | BinOp::Sub), x, y) = both else {
            return None;
        };
        let (&Expr::Access(x), &Expr::Access(y)) = (&**x, &**y) else {
            return None;
        };
        let iter_of = |acc: usize| {
            self.p.levels.access_iters[acc]
                .as_ref()
                .and_then(|its| its.last().copied())
        };
        let (ix, iy) = (iter_of(x)?, iter_of(y)?);
        if !((ix, iy) == (a, b) || (ix, iy) == (b, a)) {
            return None;
        }
        let sub = *op == BinOp::Sub;
        let only_y = if sub {
            Expr::Neg(Box::new(Expr::Access(y)))
        } else {
            Expr::Access(y)
        };
        let (mut case_x, mut case_y) = (None, None);
        for k in 1..3 {
            let (t, c, e) = compute(k)?;
            if (t, c) != (target, combine) {
                return None;
            }
            match l.cases[k].iters[..] {
                [it] if it == ix && *e == Expr::Access(x) => case_x = Some(k),
                [it] if it == iy && *e == only_y => case_y = Some(k),
                _ => return None,
            }
        }
        Some(BranchFree {
            left: (ix, x, case_x?),
            right: (iy, y, case_y?),
            sub,
        })
    }

    fn expr(&self, e: &Expr) -> Result<TokenStream, Error> {
        Ok(match e {
            Expr::Access(a) => self.load(*a)?,
            Expr::Literal(l) => {
                if self.generic {
                    return Err(unsupported(
                        "literals in kernels generic over the value type",
                    ));
                }
                if self.p.kernel.value == ValueType::I1
                    && !matches!(l, Literal::Int(0) | Literal::Int(1))
                {
                    // as the interpreter (`Num::literal`)
                    return Err(Error::plain(format!("the literal {l} does not fit i1")));
                }
                self.literal(l)
            }
            Expr::Zero => self.zero(),
            Expr::Temp(t) => {
                let name = format_ident!("t{}", *t);
                if self.temp_flag(*t) {
                    let seen = format_ident!("t{}_visited", *t);
                    let zero = self.zero();
                    quote!((if #seen { #name } else { #zero }))
                } else {
                    quote!(#name)
                }
            }
            Expr::Neg(a) => {
                let inner = self.expr(a)?;
                let compound = matches!(**a, Expr::Binary(..));
                match (self.wraps(), compound) {
                    // a load (`*p`) is a receiver in parentheses too
                    (true, _) => {
                        let r = receiver_of(&inner);
                        quote!(#r.wrapping_neg())
                    }
                    (false, true) => quote!(-(#inner)),
                    (false, false) => quote!(-#inner),
                }
            }
            Expr::Binary(op, a, b) => {
                let prec = precedence(*op);
                let side = |e: &Expr, right: bool| -> Result<TokenStream, Error> {
                    let t = self.expr(e)?;
                    // left-associative: a right operand of equal precedence keeps its parentheses
                    Ok(match e {
                        Expr::Binary(inner, ..)
                            if precedence(*inner) < prec
                                || (right && precedence(*inner) == prec) =>
                        {
                            quote!((#t))
                        }
                        _ => t,
                    })
                };
                if self.wraps() && *op == BinOp::Div {
                    // an error for a zero divisor, as the interpreter (never a panic)
                    let rt = self.rt;
                    let (a, b) = (self.expr(a)?, self.expr(b)?);
                    return Ok(quote!(#rt::generated::int_div(#a, #b)?));
                }
                if self.wraps() {
                    let method = match op {
                        BinOp::Add => Some(quote!(wrapping_add)),
                        BinOp::Sub => Some(quote!(wrapping_sub)),
                        BinOp::Mul => Some(quote!(wrapping_mul)),
                        _ => None,
                    };
                    if let Some(method) = method {
                        // the receiver of a method call binds tighter than any operator
                        let recv = self.expr(a)?;
                        let mut tokens = recv.clone().into_iter();
                        let simple = matches!(
                            (tokens.next(), tokens.next()),
                            (Some(proc_macro2::TokenTree::Ident(_)), None)
                        );
                        let recv = if simple { recv } else { quote!((#recv)) };
                        let arg = self.expr(b)?;
                        return Ok(quote!(#recv.#method(#arg)));
                    }
                }
                let (a, b) = (side(a, false)?, side(b, true)?);
                let op = match op {
                    BinOp::Add => quote!(+),
                    BinOp::Sub => quote!(-),
                    BinOp::Mul => quote!(*),
                    BinOp::Div => quote!(/),
                    BinOp::And => quote!(&),
                    BinOp::Or => quote!(|),
                    BinOp::Xor => quote!(^),
                };
                quote!(#a #op #b)
            }
            Expr::Reduce(..) => return Err(Error::plain("a reduction left in a compute")),
        })
    }

    fn literal(&self, l: &Literal) -> TokenStream {
        let value = self.p.kernel.value;
        let real = |l: &Literal, single: bool| match (l, single) {
            (Literal::Int(v), true) => Lit::f32_unsuffixed(*v as f32),
            (Literal::Int(v), false) => Lit::f64_unsuffixed(*v as f64),
            (Literal::Float(v), true) => Lit::f32_unsuffixed(*v as f32),
            (Literal::Float(v), false) => Lit::f64_unsuffixed(*v),
        };
        let lit = match (l, value) {
            (Literal::Int(v), ValueType::I1) => {
                // 0 or 1 (`expr` refuses the others)
                let rt = self.rt;
                let b = *v != 0;
                return quote!(#rt::value::I1(#b));
            }
            (_, ValueType::C32 | ValueType::C64) => {
                let re = real(l, value == ValueType::C32);
                return self.complex(quote!(#re));
            }
            (_, ValueType::F64 | ValueType::F32) => real(l, value == ValueType::F32),
            (Literal::Int(v), ValueType::I64) => Lit::i64_unsuffixed(*v as i64),
            (Literal::Int(v), ValueType::I32) => Lit::i32_unsuffixed(*v as i32),
            (Literal::Int(v), ValueType::U64) => Lit::u64_unsuffixed(*v as u64),
            (Literal::Int(v), ValueType::U32) => Lit::u32_unsuffixed(*v as u32),
            // only compute types reach here (narrow types compute in `f32` or `i32`); the
            // checker refuses a float literal with integer values
            (Literal::Int(v), _) => Lit::i64_unsuffixed(*v as i64),
            (Literal::Float(v), _) => Lit::f64_unsuffixed(*v),
        };
        quote!(#lit)
    }

    fn load(&self, a: usize) -> Result<TokenStream, Error> {
        if let Some((_, h)) = self.hoisted.borrow().iter().find(|(b, _)| *b == a) {
            return Ok(quote!(#h));
        }
        let acc = &self.p.kernel.accesses[a];
        if let Some(its) = &self.p.levels.access_iters[a] {
            return Ok(match its.last() {
                Some(&last) if self.grouped(last) => {
                    // a group of duplicates at the last level: their sum, from the identity
                    // of a sum (`-0.0 + v` is `v`, a stored `-0.0` included)
                    let p = self.pos_ident(last);
                    let next = self.next_ident(last);
                    let zero = if self.generic {
                        self.zero()
                    } else {
                        self.sum_identity()
                    };
                    let add = self.add_assign(quote!(__s), self.value_load(acc, quote!(__q)));
                    quote!({
                        let mut __s = #zero;
                        for __q in #p..#next {
                            #add
                        }
                        __s
                    })
                }
                Some(&last) => {
                    let p = self.pos_ident(last);
                    self.value_load(acc, quote!(#p))
                }
                None => self.value_load(acc, quote!(0)),
            });
        }
        let output = acc.tensor == self.p.kernel.output.tensor;
        if !output {
            // an input stores its values narrow; the output was shadowed by a wide buffer
            return Ok(self.widen_input(acc, self.load_stored(acc)?));
        }
        if let (Some(vals), true) = (&self.out_slice, self.stored.is_some()) {
            if matches!(self.ops[acc.tensor].kind, ParamKind::Format { .. })
                && self.snapshot.is_none()
            {
                let at = self.dense_flat(acc.tensor, &acc.indices)?;
                return Ok(quote!(*#vals.get_unchecked(#at)));
            }
        }
        self.load_stored(acc)
    }

    /// The stored value of tensor `t` at position `at` of its last level, widened: a load from
    /// its values array, or for a pattern (`explicitVal`) its constant, which loads nothing.
    fn value_load(&self, acc: &sparse_sparsifier::check::Access, at: TokenStream) -> TokenStream {
        let t = acc.tensor;
        match self.explicit_value(t) {
            Some(c) => c,
            None => {
                let name = self.tensor_name(t);
                let e = quote!(*#name.values.get_unchecked(#at));
                if t == self.p.kernel.output.tensor {
                    self.widen(e)
                } else {
                    self.widen_input(acc, e)
                }
            }
        }
    }

    /// The stored value `e` of an input read through `acc`, in the compute type: a quantized
    /// operand dequantized on the fly (StableHLO's `dequantize`, the pair of a per-axis type
    /// chosen by the access's dimension coordinate on the quantized axis); an `f32` operand of
    /// a kernel whose output is quantized as it is; otherwise [`Self::widen`].
    fn widen_input(&self, acc: &sparse_sparsifier::check::Access, e: TokenStream) -> TokenStream {
        if let Some(QuantOp {
            format,
            storage,
            axis,
        }) = &self.quant[acc.tensor]
        {
            let k = match axis {
                Some(a) => self.index_expr(acc.indices[*a]),
                None => quote!(0),
            };
            return quote!(#format::<#storage>::dequantize_value(i64::from(#e), #k));
        }
        if matches!(self.stored, Some(ValueType::Quant { .. })) {
            return e;
        }
        self.widen(e)
    }

    /// The constant every stored entry of tensor `t` holds when its format has an
    /// `explicitVal` (a pattern: no values array), in the compute type: a literal for the
    /// types that compute as themselves, converted from the encoding's scalar as the runtime's
    /// `FromScalar` converts it (the struct's `explicit_value()`); the runtime's conversion
    /// itself (folded by the compiler) for narrow types, non-finite floats and methods generic
    /// over `V`. `None` for an operand that stores its values.
    fn explicit_value(&self, t: usize) -> Option<TokenStream> {
        let c = &self.ops[t].encoding.as_ref()?.explicit_val.as_ref()?.value;
        let rt = self.rt;
        let scalar = crate::codegen::scalar_value(c, rt);
        if self.generic {
            return Some(quote!(<V as #rt::value::FromScalar>::from_scalar(&#scalar)));
        }
        let stored = self.p.kernel.tensors[t].value;
        let paren = |neg: bool, l: Lit| if neg { quote!((#l)) } else { quote!(#l) };
        let (re, im) = (c.real(), c.imag());
        let int = |min: i128, max: i128| c.integer().clamp(min, max);
        Some(match stored {
            ValueType::F64 if re.is_finite() => paren(re < 0.0, Lit::f64_unsuffixed(re)),
            ValueType::F32 if (re as f32).is_finite() => {
                paren(re < 0.0, Lit::f32_unsuffixed(re as f32))
            }
            ValueType::I64 => {
                let v = int(i64::MIN.into(), i64::MAX.into()) as i64;
                paren(v < 0, Lit::i64_suffixed(v))
            }
            ValueType::I32 => {
                let v = int(i32::MIN.into(), i32::MAX.into()) as i32;
                paren(v < 0, Lit::i32_suffixed(v))
            }
            ValueType::U64 => {
                let l = Lit::u64_suffixed(int(0, u64::MAX.into()) as u64);
                quote!(#l)
            }
            ValueType::U32 => {
                let l = Lit::u32_suffixed(int(0, u32::MAX.into()) as u32);
                quote!(#l)
            }
            ValueType::C64 if re.is_finite() && im.is_finite() => {
                let (re, im) = (Lit::f64_unsuffixed(re), Lit::f64_unsuffixed(im));
                quote!(#rt::num_complex::Complex::new(#re, #im))
            }
            ValueType::C32 if (re as f32).is_finite() && (im as f32).is_finite() => {
                let re = Lit::f32_unsuffixed(re as f32);
                let im = Lit::f32_unsuffixed(im as f32);
                quote!(#rt::num_complex::Complex::new(#re, #im))
            }
            _ => {
                let ty = value_type(stored, rt);
                self.widen(quote!(<#ty as #rt::value::FromScalar>::from_scalar(&#scalar)))
            }
        })
    }

    /// A random-access read of `acc` as its operand holds it (the output: its copy, if any).
    fn load_stored(&self, acc: &sparse_sparsifier::check::Access) -> Result<TokenStream, Error> {
        let name = self.tensor_name(acc.tensor);
        let snapshot = self
            .snapshot
            .as_ref()
            .filter(|_| acc.tensor == self.p.kernel.output.tensor);
        Ok(match (&self.ops[acc.tensor].kind, snapshot) {
            (ParamKind::Par, _) => return Err(Error::plain("`Par` is not an operand")),
            (ParamKind::Scalar { .. }, Some(snap)) => quote!(#snap),
            (ParamKind::Scalar { mutable: false }, None) => quote!(#name),
            (ParamKind::Scalar { mutable: true }, None) => quote!(*#name),
            (ParamKind::Slice { .. }, snap) => {
                let c = self.index_expr(acc.indices[0]);
                let from = snap.unwrap_or(name);
                quote!(*#from.get_unchecked(#c))
            }
            (ParamKind::DenseArray { .. }, snap) => {
                let at = self.strided_flat(acc.tensor, &acc.indices);
                let from = snap.unwrap_or(name);
                quote!(*#from.get_unchecked(#at))
            }
            (ParamKind::Matrix { .. }, snap) => {
                let at = self.matrix_flat(acc.tensor, &acc.indices);
                let from = snap.unwrap_or(name);
                quote!(*#from.get_unchecked(#at))
            }
            (ParamKind::Format { .. }, snap) => {
                let at = self.dense_flat(acc.tensor, &acc.indices)?;
                match (snap, self.explicit_value(acc.tensor)) {
                    (Some(snap), _) => quote!(*#snap.get_unchecked(#at)),
                    // every element of an all-dense pattern is stored and holds the constant
                    (None, Some(c)) => c,
                    (None, None) => quote!(*#name.values.get_unchecked(#at)),
                }
            }
        })
    }
}

/// Positions a turn of the loop over a row scattered into a dense output ([`Cx::unrolled`]).
const SCATTER_UNROLL: usize = 4;

/// Whether `body`, the body of a loop over a segment, adds each entry into the dense output
/// and does nothing else but locate (no loop: the transposed SpMV's `y(j) += A(i, j) * x(i)`,
/// whose rows [`Streamed::Scattered`] prefetches).
fn scatters(body: &[Stmt]) -> bool {
    let output = |s: &Stmt| {
        matches!(
            s,
            Stmt::Compute {
                target: Target::Output,
                combine: Combine::Reduce(_),
                ..
            }
        )
    };
    body.iter().any(output)
        && body
            .iter()
            .all(|s| output(s) || matches!(s, Stmt::Locate(_)))
}

/// How every computation into `target` combines its value.
fn combines(body: &[Stmt], target: Target) -> Vec<Combine> {
    let mut out = Vec::new();
    for s in body {
        match s {
            Stmt::Loop(l) => l
                .cases
                .iter()
                .for_each(|c| out.extend(combines(&c.body, target))),
            Stmt::Compute {
                target: t, combine, ..
            } if *t == target => out.push(*combine),
            _ => {}
        }
    }
    out
}

/// Rust's precedence of the operator (higher binds tighter).
fn precedence(op: BinOp) -> u8 {
    match op {
        BinOp::Mul | BinOp::Div => 5,
        BinOp::Add | BinOp::Sub => 4,
        BinOp::And => 3,
        BinOp::Xor => 2,
        BinOp::Or => 1,
    }
}

/// `a op= b;` for a reduction (min/max replace `a` only when `b` is smaller/larger, as the
/// interpreter keeps `a` on ties).
/// `a op= b` for a reduction; with `wrap` (integer values) sums and products wrap, as MLIR's
/// `arith` ops and the interpreter do.
fn combine_assign(op: ReduceOp, a: TokenStream, b: TokenStream, wrap: bool) -> TokenStream {
    match op {
        ReduceOp::Sum if wrap => quote!({ let __acc = &mut #a; *__acc = __acc.wrapping_add(#b); }),
        ReduceOp::Prod if wrap => quote!({ let __acc = &mut #a; *__acc = __acc.wrapping_mul(#b); }),
        ReduceOp::Sum => quote!(#a += #b;),
        ReduceOp::Prod => quote!(#a *= #b;),
        ReduceOp::Min => quote!(if #b < #a { #a = #b; }),
        ReduceOp::Max => quote!(if #b > #a { #a = #b; }),
        ReduceOp::And => quote!(#a &= #b;),
        ReduceOp::Or => quote!(#a |= #b;),
        ReduceOp::Xor => quote!(#a ^= #b;),
    }
}

/// `a op b` for a reduction (min/max keep `a` on ties, as the interpreter does; with `wrap`,
/// integer sums and products wrap).
fn combine_tokens(op: ReduceOp, a: TokenStream, b: TokenStream, wrap: bool) -> TokenStream {
    match op {
        ReduceOp::Sum if wrap => quote!(#a.wrapping_add(#b)),
        ReduceOp::Prod if wrap => quote!(#a.wrapping_mul(#b)),
        ReduceOp::Sum => quote!(#a + #b),
        ReduceOp::Prod => quote!(#a * #b),
        ReduceOp::Min => quote!(if #b < #a { #b } else { #a }),
        ReduceOp::Max => quote!(if #b > #a { #b } else { #a }),
        ReduceOp::And => quote!(#a & #b),
        ReduceOp::Or => quote!(#a | #b),
        ReduceOp::Xor => quote!(#a ^ #b),
    }
}

#[cfg(test)]
mod tests {
    use super::{free_names, top_level_lets};
    use quote::quote;

    /// A body's free names: what it reads from outside, not what it binds itself (a `let`
    /// after its initializer, a closure's, a `for` loop's, an `if let`'s, a `while let`'s
    /// or a `match` arm's pattern), a name used before it is shadowed counted once.
    #[test]
    fn free_names_are_the_names_a_body_does_not_bind() {
        let body = quote! {
            let a = x + 1;
            for (s, v) in y.iter_mut().zip(z) {
                *s += v + a;
            }
            let f = |&c| c + w;
            if let Some(q) = o { q + p } else { r };
            while let Some(t) = u.pop() { t; }
            match e { Some(m) => m, None => 0 };
            let b = b + ::std::vec![g; n].len();
        };
        let free: Vec<String> = free_names(&body).unwrap().into_iter().collect();
        assert_eq!(
            free,
            ["b", "e", "g", "n", "o", "p", "r", "u", "w", "x", "y", "z"]
        );
        // not statements: no answer
        assert_eq!(free_names(&quote!(let = ;)), None);
    }

    /// The `let`s at a token stream's top level, with `mut` and the written type (angle
    /// brackets and all), none inside its blocks.
    #[test]
    fn top_level_lets_give_names_and_written_types() {
        let ts = quote! {
            let mut c_pos_1: ::std::vec::Vec<u32> = ::std::vec::Vec::with_capacity(n);
            let untouched = marker();
            if x { let inner: u8 = 1; }
            let w: Option<Vec<[f64; 4]>> = None;
            let mut flag = a == b;
        };
        let lets: Vec<(String, bool, Option<String>)> = top_level_lets(&ts)
            .into_iter()
            .map(|(n, m, t)| (n, m, t.map(|t| t.to_string())))
            .collect();
        assert_eq!(
            lets,
            [
                (
                    "c_pos_1".into(),
                    true,
                    Some(":: std :: vec :: Vec < u32 >".into())
                ),
                ("untouched".into(), false, None),
                (
                    "w".into(),
                    false,
                    Some("Option < Vec < [f64 ; 4] >>".into())
                ),
                ("flag".into(), true, None),
            ]
        );
    }
}
