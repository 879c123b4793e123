//! The Rust back end of the sparsifier: loop IR ([`Program`]) → Rust tokens.
//!
//! Each loop of the IR becomes a Rust loop over the storage struct's arrays: a dense level is a
//! range (its position `parent * size + coordinate`), a compressed level is the segment
//! `pos[p]..pos[p + 1]` of its parent position with coordinates `crd[p]` (MLIR's
//! `sparse_tensor` lowering; TACO's level functions). Index extents are read once, every operand
//! dimension is checked against them (an error, not a panic), then the loop nest runs with
//! unchecked indexing: storage structs are validated when built, dense operands were checked.
//!
//! Order of additions: the same as the interpreter (`sparse_sparsifier::interp`): one
//! accumulation per visited entry, in the iteration order. The only difference: a sum into a
//! random-access output starts from `0` where the interpreter stores the first term, so a sum
//! whose every term is `-0.0` gives `+0.0` here (IEEE: `0.0 + -0.0 == +0.0`).
//!
//! Not generated yet (a compile error naming the form): sparse outputs (append, workspace,
//! coordinate buffer), merges of several iterators, sparse iterators inside dense ranges,
//! conversions, levels other than dense and compressed, blocked indices, 0-d outputs.

use proc_macro2::{Ident, Literal as Lit, TokenStream};
use quote::{format_ident, quote};
use sparse_ir::ir::{AffineExpr, LevelFormat};
use sparse_sparsifier::check::Expr;
use sparse_sparsifier::loops::{Combine, Driver, Loop, Program, Stmt, Strategy, Target};
use sparse_sparsifier::notation::{BinOp, Literal, ReduceOp};
use sparse_sparsifier::order::{Extent, IndexLoops};
use sparse_sparsifier::{Error, ValueType};

use super::{KernelDecl, KernelParam, ParamKind};

struct Cx<'a> {
    k: &'a KernelDecl,
    p: &'a Program,
    /// Per kernel tensor: its parameter.
    param_of: Vec<usize>,
    rt: &'a TokenStream,
    /// Set when a compressed level is read (the loops call `Index::index`).
    uses_index: std::cell::Cell<bool>,
    /// Per temporary: its reduction (a sum needs no visited flag).
    temp_ops: Vec<Option<ReduceOp>>,
    /// Per temporary: appended to the sparse output (needs its visited flag).
    temp_appended: Vec<bool>,
}

fn unsupported(what: &str) -> Error {
    Error::plain(format!(
        "the Rust back end does not generate {what} yet (`sparse eval` runs it through the interpreter)"
    ))
}

/// Emits the kernel function for `p`, compiled from `k`.
///
/// Errors: a parameter passed in a way the statement cannot use; a loop form not generated yet
/// (see the module documentation).
pub fn emit(k: &KernelDecl, p: &Program, rt: &TokenStream) -> Result<TokenStream, Error> {
    if !p.conversions.is_empty() {
        return Err(unsupported("conversions of operands"));
    }
    // kernel tensors (output first, in order of appearance) → parameters, by name
    let mut param_of = Vec::with_capacity(p.kernel.tensors.len());
    for t in &p.kernel.tensors {
        match k.params.iter().position(|q| q.name == t.name) {
            Some(i) => param_of.push(i),
            None => return Err(Error::plain(format!("no parameter `{}`", t.name))),
        }
    }
    let out = param_of[p.kernel.output.tensor];
    for (i, param) in k.params.iter().enumerate() {
        if !param_of.contains(&i) {
            return Err(Error::plain(format!(
                "the parameter `{}` is not used by the statement",
                param.name
            )));
        }
        let mutable = match param.kind {
            ParamKind::Slice { mutable } | ParamKind::Format { mutable, .. } => mutable,
            ParamKind::Scalar => false,
        };
        if (i == out) != mutable {
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
    if matches!(k.params[out].kind, ParamKind::Scalar) {
        return Err(unsupported("0-d outputs"));
    }
    if p.levels
        .index_loops
        .iter()
        .any(|l| !matches!(l, IndexLoops::Plain(_)))
    {
        return Err(unsupported("blocked indices"));
    }
    let mut cx = Cx {
        k,
        p,
        param_of,
        rt,
        uses_index: std::cell::Cell::new(false),
        temp_ops: vec![None; p.temps],
        temp_appended: vec![false; p.temps],
    };
    collect_temps(&p.body, &mut cx.temp_ops, &mut cx.temp_appended);
    let sparse_out = match (&k.params[out].kind, p.strategy) {
        (_, Strategy::InPlace) => None,
        (ParamKind::Format { format, .. }, _) => Some(format.clone()),
        _ => return Err(Error::plain("a sparse output strategy for a dense output")),
    };
    let params = k.params.iter().map(|param| {
        let name = &param.name;
        let v = value_type(param.value);
        match &param.kind {
            ParamKind::Slice { mutable: true } => quote!(#name: &mut [#v]),
            ParamKind::Slice { mutable: false } => quote!(#name: &[#v]),
            ParamKind::Scalar => quote!(#name: #v),
            ParamKind::Format {
                mutable: true,
                format,
                ..
            } => quote!(#name: &mut #format<#v>),
            ParamKind::Format { format, .. } => quote!(#name: &#format<#v>),
        }
    });
    let extents = cx.extents();
    let mut init = TokenStream::new();
    let mut finish = TokenStream::new();
    match &sparse_out {
        None => init.extend(cx.init_output()?),
        Some(format) => {
            let v = value_type(k.params[out].value);
            let rank = usize_lit(p.kernel.output.indices.len());
            let o = &k.params[out].name;
            init.extend(quote!(let mut entries: ::std::vec::Vec<([usize; #rank], #v)> = ::std::vec::Vec::new();));
            if let Strategy::Workspace { var } = p.strategy {
                let n = cx.extent(var);
                let zero = cx.zero();
                init.extend(quote! {
                    let mut workspace = ::std::vec![#zero; #n];
                    let mut visited = ::std::vec![false; #n];
                    let mut touched: ::std::vec::Vec<usize> = ::std::vec::Vec::new();
                });
            }
            finish.extend(quote!(*#o = #format::from_coo(#o.dim_shape, entries)?;));
        }
    }
    let body = cx.stmts(&p.body)?;
    let name = &k.name;
    let vis = &k.vis;
    let index = if cx.uses_index.get() {
        quote!(use #rt::Index as _;)
    } else {
        TokenStream::new()
    };
    let doc = [
        format!(" `{}`, compiled by the sparsifier.", k.statement.trim()),
        String::new(),
        String::from(
            " Errors: `StorageError::LengthMismatch` naming the operand (and dimension) whose",
        ),
        String::from(" size differs from the extent of its index."),
    ];
    Ok(quote! {
        #(#[doc = #doc])*
        #vis fn #name(#(#params),*) -> ::core::result::Result<(), #rt::StorageError> {
            #index
            #extents
            #init
            #rt::safety!("every position read lies in a segment of its level's positions and every stored coordinate is below its level size (`from_coo` builds such arrays, `from_raw_parts` validates them, `from_raw_parts_unchecked` makes it the caller's promise); every dense operand's size was checked against its indices' extents above.");
            unsafe {
                #body
            }
            #finish
            ::core::result::Result::Ok(())
        }
    })
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

fn value_type(v: ValueType) -> TokenStream {
    match v {
        ValueType::F64 => quote!(f64),
        ValueType::F32 => quote!(f32),
        ValueType::I64 => quote!(i64),
        ValueType::I32 => quote!(i32),
    }
}

fn usize_lit(n: usize) -> Lit {
    Lit::usize_unsuffixed(n)
}

impl Cx<'_> {
    fn zero(&self) -> TokenStream {
        if self.p.kernel.value.is_integer() {
            quote!(0)
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
            .map(|&ix| self.index_ident(ix));
        quote!([#(#c),*])
    }

    /// The parameter of kernel tensor `t`.
    fn param(&self, t: usize) -> &KernelParam {
        &self.k.params[self.param_of[t]]
    }

    fn tensor_name(&self, t: usize) -> &Ident {
        &self.param(t).name
    }

    /// The size of dimension `d` of tensor `t` at run time.
    fn dim_size(&self, t: usize, d: usize) -> TokenStream {
        let name = self.tensor_name(t);
        let d = usize_lit(d);
        match self.param(t).kind {
            ParamKind::Slice { .. } => quote!(#name.len()),
            _ => quote!(#name.dim_shape[#d]),
        }
    }

    fn extent_ident(&self, index: usize) -> Ident {
        format_ident!("n_{}", self.p.kernel.indices[index].name)
    }

    fn extent(&self, var: usize) -> TokenStream {
        match self.p.levels.vars[var].extent {
            Extent::Const(c) | Extent::Index { value: Some(c), .. } => {
                let c = usize_lit(c);
                quote!(#c)
            }
            Extent::Index { index, .. } => {
                let n = self.extent_ident(index);
                quote!(#n)
            }
        }
    }

    /// `let n_i = ...;` per index read at run time, then a check of every other dimension.
    fn extents(&self) -> TokenStream {
        let rt = self.rt;
        let kern = &self.p.kernel;
        let mut out = TokenStream::new();
        for (ix, var) in kern.indices.iter().enumerate() {
            let n = self.extent_ident(ix);
            let (t, d) = var.source;
            let first = self.dim_size(t, d);
            out.extend(quote!(let #n = #first;));
        }
        let mut uses: Vec<(usize, &[usize])> = vec![(kern.output.tensor, &kern.output.indices)];
        uses.extend(kern.accesses.iter().map(|a| (a.tensor, &a.indices[..])));
        let mut seen = Vec::new();
        for (t, indices) in uses {
            for (d, &ix) in indices.iter().enumerate() {
                if kern.indices[ix].source == (t, d) || seen.contains(&(t, d)) {
                    continue;
                }
                seen.push((t, d));
                let size = self.dim_size(t, d);
                let n = self.extent_ident(ix);
                let what = match self.param(t).kind {
                    ParamKind::Slice { .. } => self.tensor_name(t).to_string(),
                    _ => format!("{} (dimension {d})", self.tensor_name(t)),
                };
                out.extend(quote! {
                    if #size != #n {
                        return ::core::result::Result::Err(#rt::StorageError::LengthMismatch {
                            operand: #what,
                            expected: #n,
                            got: #size,
                        });
                    }
                });
            }
        }
        out
    }

    /// Clears the random-access output (unless `+=`), and its visited flags when a reduction
    /// other than a sum writes it.
    fn init_output(&self) -> Result<TokenStream, Error> {
        let out = self.output_values();
        let zero = self.zero();
        let mut s = TokenStream::new();
        if !self.p.kernel.accumulate {
            s.extend(quote!(#out.fill(#zero);));
            if self.output_flags() {
                let flags = self.flags_ident();
                s.extend(quote!(let mut #flags = ::std::vec![false; #out.len()];));
            }
        }
        Ok(s)
    }

    fn flags_ident(&self) -> Ident {
        format_ident!("{}_visited", self.tensor_name(self.p.kernel.output.tensor))
    }

    /// Whether the output needs visited flags: a reduction other than a sum, not `+=` (with `+=`
    /// every element counts as visited).
    fn output_flags(&self) -> bool {
        !self.p.kernel.accumulate
            && output_combines(&self.p.body)
                .iter()
                .any(|c| matches!(c, Combine::Reduce(op) if *op != ReduceOp::Sum))
    }

    fn output_values(&self) -> TokenStream {
        let t = self.p.kernel.output.tensor;
        let name = self.tensor_name(t);
        match self.param(t).kind {
            ParamKind::Slice { .. } => quote!(#name),
            _ => quote!(#name.values),
        }
    }

    fn var_ident(&self, v: usize) -> Ident {
        format_ident!("{}", self.p.levels.vars[v].name)
    }

    fn index_ident(&self, ix: usize) -> Ident {
        match self.p.levels.index_loops[ix] {
            IndexLoops::Plain(v) | IndexLoops::Split { hi: v, .. } => self.var_ident(v),
        }
    }

    fn pos_ident(&self, it: usize) -> Ident {
        let li = &self.p.levels.iters[it];
        let acc = &self.p.kernel.accesses[li.access];
        let name = self.tensor_name(acc.tensor);
        let repeated = self
            .p
            .kernel
            .accesses
            .iter()
            .filter(|a| a.tensor == acc.tensor)
            .count()
            > 1;
        if repeated {
            format_ident!(
                "{}{}_p{}",
                name.to_string().to_lowercase(),
                li.access,
                li.level
            )
        } else {
            format_ident!("{}_p{}", name.to_string().to_lowercase(), li.level)
        }
    }

    fn format_level(&self, it: usize) -> Result<LevelFormat, Error> {
        let li = &self.p.levels.iters[it];
        let t = self.p.kernel.accesses[li.access].tensor;
        match &self.param(t).kind {
            ParamKind::Format { encoding, .. } => {
                if li.slice_dim.is_some() {
                    return Err(unsupported("slices"));
                }
                let lt = encoding.lvl_types[li.level];
                match lt.format {
                    LevelFormat::Dense => Ok(LevelFormat::Dense),
                    LevelFormat::Compressed if lt.is_unique() => Ok(LevelFormat::Compressed),
                    _ => Err(unsupported(
                        &format!("{:?} levels", lt.format).to_lowercase(),
                    )),
                }
            }
            _ => Err(Error::plain("an iterated operand is a storage struct")),
        }
    }

    /// The position of the parent of iterator `it`, `None` at level 0 (the root position 0).
    fn parent(&self, it: usize) -> Option<Ident> {
        let li = &self.p.levels.iters[it];
        let its = self.p.levels.access_iters[li.access].as_ref()?;
        li.level.checked_sub(1).map(|l| self.pos_ident(its[l]))
    }

    /// `let a_p1 = a_p0 * a.lvl_sizes[1] + j;` for a dense level at the loop variable's
    /// coordinate.
    fn dense_pos(&self, it: usize) -> TokenStream {
        let li = &self.p.levels.iters[it];
        let p = self.pos_ident(it);
        let c = self.var_ident(li.var);
        let t = self.tensor_name(self.p.kernel.accesses[li.access].tensor);
        let l = usize_lit(li.level);
        match self.parent(it) {
            None => quote!(let #p = #c;),
            Some(parent) => quote!(let #p = #parent * #t.lvl_sizes[#l] + #c;),
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
            Stmt::Locate(it) => match self.format_level(*it)? {
                LevelFormat::Dense => self.dense_pos(*it),
                _ => return Err(unsupported("locating in a compressed level")),
            },
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
                                quote!(#name += #v;)
                            }
                            Combine::Reduce(op) => {
                                let c = combine_tokens(*op, quote!(#name), quote!(__v));
                                quote! {
                                    let __v = #v;
                                    #name = if #seen { #c } else { __v };
                                    #seen = true;
                                }
                            }
                        }
                    }
                    Target::Append | Target::Buffer => {
                        if matches!(combine, Combine::Reduce(op) if *op != ReduceOp::Sum)
                            && *target == Target::Buffer
                        {
                            return Err(unsupported("buffered outputs combined by min, max, prod or a bitwise reduction"));
                        }
                        let c = self.out_coords();
                        quote!(entries.push((#c, #v));)
                    }
                    Target::Workspace => {
                        let Strategy::Workspace { var } = self.p.strategy else {
                            return Err(Error::plain("a workspace without its strategy"));
                        };
                        let j = self.var_ident(var);
                        let c = match combine {
                            Combine::Reduce(op) => {
                                combine_assign(*op, quote!(*__slot), quote!(__v))
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
                                touched.push(#j);
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
                let c = self.out_coords();
                quote! {
                    if #seen {
                        entries.push((#c, #name));
                    }
                }
            }
            // the workspace is clear before the first row and `Compress` clears what it
            // touched: MLIR's `expand` has nothing left to do here
            Stmt::Expand => TokenStream::new(),
            Stmt::Compress => {
                let Strategy::Workspace { var } = self.p.strategy else {
                    return Err(Error::plain("a workspace without its strategy"));
                };
                let j = self.var_ident(var);
                let c = self.out_coords();
                quote! {
                    touched.sort_unstable();
                    for &#j in &touched {
                        entries.push((#c, *workspace.get_unchecked(#j)));
                        *visited.get_unchecked_mut(#j) = false;
                    }
                    touched.clear();
                }
            }
        })
    }

    fn store_output(&self, combine: Combine, v: TokenStream) -> Result<TokenStream, Error> {
        let kern = &self.p.kernel;
        let out = self.output_values();
        let t = kern.output.tensor;
        let at = match &self.param(t).kind {
            ParamKind::Slice { .. } => {
                let c = self.index_ident(kern.output.indices[0]);
                quote!(#c)
            }
            ParamKind::Format { encoding, .. } => {
                self.dense_flat(t, encoding, &kern.output.indices)?
            }
            ParamKind::Scalar => return Err(unsupported("0-d outputs")),
        };
        let slot = quote!(*#out.get_unchecked_mut(#at));
        Ok(match combine {
            Combine::Assign => quote!(#slot = #v;),
            Combine::Reduce(ReduceOp::Sum) => quote!(#slot += #v;),
            Combine::Reduce(op) if !self.output_flags() => {
                let c = combine_assign(op, quote!(*__slot), quote!(__v));
                quote! {
                    let __v = #v;
                    let __slot = #out.get_unchecked_mut(#at);
                    #c
                }
            }
            Combine::Reduce(op) => {
                let flags = self.flags_ident();
                let c = combine_assign(op, quote!(*__slot), quote!(__v));
                quote! {
                    let __v = #v;
                    let __slot = #out.get_unchecked_mut(#at);
                    let __seen = #flags.get_unchecked_mut(#at);
                    if *__seen {
                        #c
                    } else {
                        *__slot = __v;
                        *__seen = true;
                    }
                }
            }
        })
    }

    /// The flat position of a random-access (all-dense) storage at the coordinates of
    /// `indices`: levels in order, each `parent * lvl_sizes[l] + coordinate` (the map must be
    /// a permutation).
    fn dense_flat(
        &self,
        t: usize,
        encoding: &sparse_ir::verify::VerifiedEncoding,
        indices: &[usize],
    ) -> Result<TokenStream, Error> {
        let name = self.tensor_name(t);
        let mut at: Option<TokenStream> = None;
        for (l, r) in encoding.dim_to_lvl.results.iter().enumerate() {
            let AffineExpr::Var(d) = r else {
                return Err(unsupported("dense operands with a non-permutation map"));
            };
            let c = self.index_ident(indices[*d]);
            let l = usize_lit(l);
            at = Some(match at {
                None => quote!(#c),
                Some(p) => quote!(#p * #name.lvl_sizes[#l] + #c),
            });
        }
        Ok(at.unwrap_or_else(|| quote!(0)))
    }

    fn loop_(&self, l: &Loop) -> Result<TokenStream, Error> {
        let c = self.var_ident(l.var);
        if l.driver == Driver::Merge && l.iters.len() > 1 {
            return self.merge(l);
        }
        let [case] = &l.cases[..] else {
            return Err(unsupported("several cases in a dense range"));
        };
        let body = self.stmts(&case.body)?;
        match l.driver {
            Driver::Range => {
                let mut pos = TokenStream::new();
                for &it in &l.iters {
                    match self.format_level(it)? {
                        LevelFormat::Dense => pos.extend(self.dense_pos(it)),
                        _ => return Err(unsupported("sparse iterators inside dense ranges")),
                    }
                }
                let n = self.extent(l.var);
                Ok(quote! {
                    for #c in 0..#n {
                        #pos
                        #body
                    }
                })
            }
            Driver::Merge => {
                let [it] = &l.iters[..] else {
                    return Err(unsupported("merges of several iterators"));
                };
                let it = *it;
                let li = &self.p.levels.iters[it];
                let p = self.pos_ident(it);
                let t = self.tensor_name(self.p.kernel.accesses[li.access].tensor);
                match self.format_level(it)? {
                    LevelFormat::Compressed => {
                        let pos = format_ident!("pos_{}", li.level);
                        let crd = format_ident!("crd_{}", li.level);
                        let (lo, hi) = match self.parent(it) {
                            None => (quote!(0), quote!(1)),
                            Some(parent) => (quote!(#parent), quote!(#parent + 1)),
                        };
                        self.uses_index.set(true);
                        let begin = format_ident!("{}_begin", p);
                        let end = format_ident!("{}_end", p);
                        Ok(quote! {
                            let #begin = #t.#pos.get_unchecked(#lo).index();
                            let #end = #t.#pos.get_unchecked(#hi).index();
                            for #p in #begin..#end {
                                let #c = #t.#crd.get_unchecked(#p).index();
                                #body
                            }
                        })
                    }
                    _ => {
                        let n = self.extent(l.var);
                        let pos = self.dense_pos(it);
                        Ok(quote! {
                            for #c in 0..#n {
                                #pos
                                #body
                            }
                        })
                    }
                }
            }
        }
    }

    /// A two-pointer (k-way) merge over ordered compressed levels (TACO's merge loop): the
    /// smallest coordinate first; the first case whose iterators all stand there runs; every
    /// iterator standing there advances. Ends when no case can be met (an exhausted iterator
    /// reads `usize::MAX`, above every coordinate).
    fn merge(&self, l: &Loop) -> Result<TokenStream, Error> {
        let c = self.var_ident(l.var);
        let mut setup = TokenStream::new();
        let mut reads = TokenStream::new();
        let mut advance = TokenStream::new();
        let mut alive = Vec::new();
        let mut crd_of = Vec::new();
        for &it in &l.iters {
            if self.format_level(it)? != LevelFormat::Compressed {
                return Err(unsupported("merges over levels other than compressed"));
            }
            self.uses_index.set(true);
            let li = &self.p.levels.iters[it];
            let p = self.pos_ident(it);
            let t = self.tensor_name(self.p.kernel.accesses[li.access].tensor);
            let pos = format_ident!("pos_{}", li.level);
            let crd = format_ident!("crd_{}", li.level);
            let end = format_ident!("{}_end", p);
            let at = format_ident!("{}_{}", c, p);
            let (lo, hi) = match self.parent(it) {
                None => (quote!(0), quote!(1)),
                Some(parent) => (quote!(#parent), quote!(#parent + 1)),
            };
            setup.extend(quote! {
                let mut #p = #t.#pos.get_unchecked(#lo).index();
                let #end = #t.#pos.get_unchecked(#hi).index();
            });
            reads.extend(quote! {
                let #at = if #p < #end { #t.#crd.get_unchecked(#p).index() } else { usize::MAX };
            });
            advance.extend(quote! {
                if #at == #c {
                    #p += 1;
                }
            });
            alive.push((it, quote!(#p < #end)));
            crd_of.push((it, at));
        }
        let find = |it: usize, v: &[(usize, TokenStream)]| {
            v.iter().find(|(i, _)| *i == it).map(|(_, t)| t.clone())
        };
        let mut cond = Vec::new();
        let mut branches = Vec::new();
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
            let here: Vec<TokenStream> = case
                .iters
                .iter()
                .filter_map(|&i| crd_of.iter().find(|(j, _)| *j == i).map(|(_, a)| a))
                .map(|a| quote!(#a == #c))
                .collect();
            let body = self.stmts(&case.body)?;
            branches.push(quote!(if #(#here)&&* { #body }));
        }
        let crds: Vec<&Ident> = crd_of.iter().map(|(_, a)| a).collect();
        let (first, rest) = crds
            .split_first()
            .ok_or_else(|| Error::plain("an empty merge"))?;
        Ok(quote! {
            #setup
            while #(#cond)||* {
                #reads
                let #c = #first #(.min(#rest))*;
                #(#branches)else*
                #advance
            }
        })
    }

    fn expr(&self, e: &Expr) -> Result<TokenStream, Error> {
        Ok(match e {
            Expr::Access(a) => self.load(*a)?,
            Expr::Literal(l) => self.literal(l),
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
                if matches!(**a, Expr::Binary(..)) {
                    quote!(-(#inner))
                } else {
                    quote!(-#inner)
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
        let lit = match (l, self.p.kernel.value) {
            (Literal::Int(v), ValueType::F64) => Lit::f64_unsuffixed(*v as f64),
            (Literal::Int(v), ValueType::F32) => Lit::f32_unsuffixed(*v as f32),
            (Literal::Int(v), ValueType::I64) => Lit::i64_unsuffixed(*v as i64),
            (Literal::Int(v), ValueType::I32) => Lit::i32_unsuffixed(*v as i32),
            (Literal::Float(v), ValueType::F32) => Lit::f32_unsuffixed(*v as f32),
            (Literal::Float(v), _) => Lit::f64_unsuffixed(*v),
        };
        quote!(#lit)
    }

    fn load(&self, a: usize) -> Result<TokenStream, Error> {
        let acc = &self.p.kernel.accesses[a];
        let name = self.tensor_name(acc.tensor);
        if let Some(its) = &self.p.levels.access_iters[a] {
            let p = match its.last() {
                Some(&last) => {
                    let p = self.pos_ident(last);
                    quote!(#p)
                }
                None => quote!(0),
            };
            return Ok(quote!(*#name.values.get_unchecked(#p)));
        }
        Ok(match &self.param(acc.tensor).kind {
            ParamKind::Scalar => quote!(#name),
            ParamKind::Slice { .. } => {
                let c = self.index_ident(acc.indices[0]);
                quote!(*#name.get_unchecked(#c))
            }
            ParamKind::Format { encoding, .. } => {
                let at = self.dense_flat(acc.tensor, encoding, &acc.indices)?;
                quote!(*#name.values.get_unchecked(#at))
            }
        })
    }
}

fn output_combines(body: &[Stmt]) -> Vec<Combine> {
    let mut out = Vec::new();
    for s in body {
        match s {
            Stmt::Loop(l) => l
                .cases
                .iter()
                .for_each(|c| out.extend(output_combines(&c.body))),
            Stmt::Compute {
                target: Target::Output,
                combine,
                ..
            } => out.push(*combine),
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
fn combine_assign(op: ReduceOp, a: TokenStream, b: TokenStream) -> TokenStream {
    match op {
        ReduceOp::Sum => quote!(#a += #b;),
        ReduceOp::Prod => quote!(#a *= #b;),
        ReduceOp::Min => quote!(if #b < #a { #a = #b; }),
        ReduceOp::Max => quote!(if #b > #a { #a = #b; }),
        ReduceOp::And => quote!(#a &= #b;),
        ReduceOp::Or => quote!(#a |= #b;),
        ReduceOp::Xor => quote!(#a ^= #b;),
    }
}

/// `a op b` for a reduction (min/max keep `a` on ties, as the interpreter does).
fn combine_tokens(op: ReduceOp, a: TokenStream, b: TokenStream) -> TokenStream {
    match op {
        ReduceOp::Sum => quote!(#a + #b),
        ReduceOp::Prod => quote!(#a * #b),
        ReduceOp::Min => quote!(if #b < #a { #b } else { #a }),
        ReduceOp::Max => quote!(if #b > #a { #b } else { #a }),
        ReduceOp::And => quote!(#a & #b),
        ReduceOp::Or => quote!(#a | #b),
        ReduceOp::Xor => quote!(#a ^ #b),
    }
}
