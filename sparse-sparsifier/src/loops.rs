//! The loop IR: one small tree between the notation and the back ends (the printer, the
//! interpreter, and later the Rust back end of `sparse_format!`), and the builder that lowers a
//! checked kernel into it (TACO's lowering of concrete index notation, MLIR's sparsifier).
//!
//! A [`Program`] is a list of [`Stmt`]s. A [`Loop`] binds one loop variable: its [`Driver`] is
//! a dense range (every coordinate, sparse iterators tested by coordinate) or a merge of the
//! iterators (two-pointer / k-way over ordered levels); its [`Case`]s are the lattice points,
//! tried in order at each coordinate: the first case whose iterators all stand there runs.
//! [`Stmt::Locate`] computes a located level's position; [`Stmt::Compute`] assigns or reduces
//! (with a "visited" flag) into a target; temporaries hold nested reductions; the output is
//! appended in order, through a workspace (expand/compress) or through a coordinate buffer
//! sorted once ([`Strategy`]). Everything a back end needs is data here; nothing refers to
//! Rust.

use crate::check::{Expr, Kernel, ValueType};
use crate::error::Error;
use crate::lattice::lattice;
use crate::notation::ReduceOp;
use crate::order::{self, loops_of, Extent, Graph, IndexLoops, Levels};
use sparse_ir::ir::Encoding;

/// How a computed value is combined into its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// Overwrite (each target element is written once).
    Assign,
    /// Combine with the reduction: the first visit stores, later visits combine (MLIR's
    /// `sparse_tensor.reduce` over visited values only).
    Reduce(ReduceOp),
}

/// Where [`Stmt::Compute`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The random-access output at the output's coordinates (dense or 0-d), with a visited
    /// flag per element.
    Output,
    /// A temporary register with a visited flag.
    Temp(usize),
    /// Append one entry to the sparse output at the output's coordinates (in level order).
    Append,
    /// The workspace, at the coordinate of the output's last index.
    Workspace,
    /// Push `(output coordinates, value)` into the coordinate buffer.
    Buffer,
}

/// How the sparse output is assembled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// The output is random access (dense or 0-d): written in place.
    InPlace,
    /// Entries arrive in the output's level order: appended.
    Append,
    /// All output levels but the last arrive in order; the last is scattered into a dense
    /// workspace with a list of touched coordinates, sorted and appended when the enclosing
    /// loop body ends (Gustavson; MLIR's expand/compress). `var` is its loop variable.
    Workspace {
        /// Loop variable of the output's last index.
        var: usize,
    },
    /// Entries arrive out of order: buffered, sorted once by the output's coordinates
    /// (combining duplicates with the reduction) and assembled at the end (MLIR inserts a
    /// conversion).
    Buffer,
}

/// How a loop visits coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// Every coordinate `0..extent`; iterators are tested against it (if-coordinate).
    Range,
    /// Only coordinates where the iterators stand (merge of ordered levels, the smallest
    /// coordinate first); ends when no case can be met any more.
    Merge,
}

/// One lattice point of a loop.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// Iterators that must all stand at the coordinate.
    pub iters: Vec<usize>,
    /// What runs then.
    pub body: Vec<Stmt>,
}

/// A loop over one loop variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    /// The loop variable.
    pub var: usize,
    /// Dense range or merge.
    pub driver: Driver,
    /// The iterators co-iterated here (the union of the cases').
    pub iters: Vec<usize>,
    /// The cases, most specific first.
    pub cases: Vec<Case>,
}

/// A statement of the loop IR.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// A loop.
    Loop(Loop),
    /// `pos(it) = locate(level, pos(parent), coordinate of its variable)`.
    Locate(usize),
    /// Clear a temporary (not visited).
    InitTemp(usize),
    /// Evaluate `expr` and combine it into `target`.
    Compute {
        /// Where.
        target: Target,
        /// How.
        combine: Combine,
        /// What.
        expr: Expr,
    },
    /// Append the temporary to the sparse output at the output's coordinates, if visited.
    AppendTemp(usize),
    /// Clear the workspace (MLIR's `expand`).
    Expand,
    /// Sort the workspace's touched coordinates and append them (MLIR's `compress`).
    Compress,
}

/// A conversion before the loops: tensor `to` (appended to the kernel's tensors) is tensor
/// `from` in another format (MLIR's `sparse_tensor.convert`, inserted when an operand cannot be
/// iterated in its stored level order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conversion {
    /// The declared tensor.
    pub from: usize,
    /// The converted tensor the accesses read.
    pub to: usize,
}

/// A sum across the segments of an n:m level ([`Program::nm_sum`]).
#[derive(Clone, Copy, Debug)]
pub struct NmSum<'a> {
    /// The temporary summed into.
    pub temp: usize,
    /// The locates before the segment, per coordinate of the range.
    pub locates: &'a [Stmt],
    /// The loop over the segment.
    pub inner: &'a Loop,
    /// Its iterator (on the n:m level).
    pub iter: usize,
    /// The summand.
    pub expr: &'a Expr,
    /// Positions per segment (`n` of n:m: 1, 2 or 4).
    pub n: usize,
}

/// A compiled kernel: the checked kernel, its loop variables and level iterators, the output
/// strategy and the loop tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The checked kernel (converted tensors appended after the declared ones).
    pub kernel: Kernel,
    /// Conversions run before the loops.
    pub conversions: Vec<Conversion>,
    /// Loop variables and level iterators.
    pub levels: Levels,
    /// The loop order chosen.
    pub order: Vec<usize>,
    /// How the output is assembled.
    pub strategy: Strategy,
    /// Number of temporaries.
    pub temps: usize,
    /// The loop tree.
    pub body: Vec<Stmt>,
    /// Every element of the random-access output is assigned exactly once by the loop tree
    /// (`assigns_every_element`): the back ends need not clear it first.
    pub overwrites: bool,
    /// Rows of the outermost loop that may run together (`shares_rows`); `None` when the
    /// kernel is not of that form. A permission, not a different result: a back end may
    /// ignore it (the interpreter does).
    pub shared_rows: Option<SharedRows>,
    /// Rows of a [`SharedRows`] kernel that may be summed in a window of the workspace
    /// (`windows_rows`); `None` when the kernel is not of that form. A permission too: the
    /// interpreter ignores it.
    pub windowed_rows: Option<WindowedRows>,
}

/// A [`SharedRows`] kernel whose loop over the shared matrix's compressed level (`A`'s `k`)
/// locates a row of another matrix stored by rows (`B`: a dense level 0 at `k`, then an
/// ordered, unique compressed level 1, no slice) and only sums an arithmetic result into the
/// workspace over that row's coordinates (`j`): `C(i,j) = A(i,k) * B(k,j)`. Row `i`'s
/// coordinates are then the union of the segments of `B` selected by row `i` of `A`, known
/// before any product is summed. The Rust back end takes the coordinates of the rows whose
/// union spans at most 64 columns from those segments' bit patterns (`generated::RowWindow`),
/// and of the rows whose products are many for the span from the least to the greatest
/// coordinate of those segments from a flag per product read back by one scan of the span
/// (`generated::RowSpans`), and sums their products into a workspace holding the sum's
/// identity (`-0.0`: `-0.0 + v` is `v` for an arithmetic `v`, never a signaling NaN), with no
/// first-touch test and no sort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowedRows {
    /// The iterator of `B`'s compressed level, whose segments are windowed.
    pub iter: usize,
}

/// A Gustavson kernel whose outermost loop (the output's rows) reaches its operands only
/// through one matrix stored by rows (a dense level, then a unique compressed one): its rows
/// whose segments hold the same coordinates select the same rows of the other operands and
/// touch the same workspace coordinates, so a back end may run up to a few of them in one pass,
/// each in its own lane of the workspace. The Rust back end does so for `f64` sums
/// (`generated::shared_rows`): finite-element matrices store the unknowns of one node as rows
/// with one pattern (bcsstk16's `A·A` took 24 ms instead of 25-62 ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedRows {
    /// The outermost loop variable.
    pub var: usize,
    /// The matrix's access.
    pub access: usize,
    /// The level iterator of its compressed level, whose segments are compared.
    pub iter: usize,
}

struct Builder<'a> {
    k: &'a Kernel,
    lv: &'a Levels,
    order: Vec<usize>,
    temps: usize,
    target: Target,
    combine: Combine,
    /// The access whose level is not ordered but must be merged, when that stopped the build.
    unordered: Option<usize>,
}

/// Lowers a checked kernel to the loop IR.
///
/// Errors: as [`order::levels`] and [`order::operand_graph`] (an operand whose level order
/// conflicts with the others', naming it and suggesting the transposed format or a
/// conversion); a reduction nested in an expression whose operands need one of its variables
/// before an output variable. An operand with a `nonordered` level that must be merged with
/// others is converted to the same levels ordered (as MLIR converts an unordered operand of a
/// co-iteration) and the kernel built again.
pub fn build(k: Kernel) -> Result<Program, Error> {
    let mut k = k;
    let mut conversions = Vec::new();
    loop {
        let mut unordered = None;
        match build_with(k.clone(), conversions.clone(), &mut unordered) {
            Err(e) => {
                // each round orders one access for good: at most one round per access
                let rounds_left = conversions.len() <= 2 * k.accesses.len() + 2;
                let ordered = unordered.filter(|_| rounds_left).and_then(|a| {
                    let t = &k.tensors[k.accesses[a].tensor];
                    let mut enc: Encoding = (**t.encoding.as_ref()?).clone();
                    for lt in &mut enc.lvl_types {
                        lt.properties.nonordered = false;
                    }
                    Some((a, enc.verify().ok()?))
                });
                let Some((a, enc)) = ordered else {
                    return Err(e);
                };
                convert(&mut k, &mut conversions, a, enc);
            }
            ok => return ok,
        }
    }
}

/// [`build`] after `conversions` (already applied to `k`); sets `unordered` to the access
/// when a merge over a level that is not ordered stops it.
fn build_with(
    mut k: Kernel,
    mut conversions: Vec<Conversion>,
    unordered: &mut Option<usize>,
) -> Result<Program, Error> {
    // an operand whose level order conflicts with the others' is converted first (MLIR inserts
    // a `sparse_tensor.convert`): its levels permuted to follow the others' order
    // flatten `out = op(R, body)` into one nest when body holds no other reduction
    let (flat, top_op, expr) = match &k.expr {
        Expr::Reduce(op, vars, body)
            if !body.has_reduce() && (!k.accumulate || *op == ReduceOp::Sum) =>
        {
            (Some(vars.clone()), *op, (**body).clone())
        }
        e => (None, ReduceOp::Sum, e.clone()),
    };
    let mut rounds = 0;
    let (lv, g) = loop {
        rounds += 1;
        if rounds > 2 * k.accesses.len() + 2 {
            return Err(Error::new(
                k.output.span,
                "no conversion makes the operands iterable together",
            ));
        }
        let lv = match order::levels(&k) {
            Ok(lv) => lv,
            Err(e) => {
                let targets = match &e {
                    order::LevelsError::Access { access, .. } => vec![*access],
                    order::LevelsError::Block { index, .. } => order::blocking(&k, *index),
                };
                let mut converted = false;
                for a in targets {
                    let t = &k.tensors[k.accesses[a].tensor];
                    if let Some(enc) = t.encoding.as_ref().and_then(|e| order::unblocked(e)) {
                        convert(&mut k, &mut conversions, a, enc);
                        converted = true;
                    }
                }
                if !converted {
                    return Err(e.error());
                }
                continue;
            }
        };
        let mut nested = Graph::default();
        let outer: Vec<usize> = k
            .output
            .indices
            .iter()
            .flat_map(|&ix| loops_of(&lv, ix))
            .collect();
        order::nested_edges(&expr, &outer, &lv, &mut nested);
        match order::operand_graph(&k, &lv, nested) {
            Ok(g) => break (lv, g),
            Err(c) => {
                let unblock = || {
                    let t = &k.tensors[k.accesses[c.access].tensor];
                    let e = t.encoding.as_ref()?;
                    let u = order::unblocked(e)?;
                    (u != *e).then_some(u)
                };
                let reorder = order::reordered(&k, &lv, c.access, &c.before);
                let Some(enc) = reorder.or_else(unblock) else {
                    return Err(c.error);
                };
                convert(&mut k, &mut conversions, c.access, enc);
            }
        }
    };
    let n = lv.vars.len();
    let out_vars: Vec<usize> = k
        .output
        .indices
        .iter()
        .flat_map(|&ix| loops_of(&lv, ix))
        .collect();
    let mut red_vars: Vec<usize> = flat
        .iter()
        .flatten()
        .flat_map(|&ix| loops_of(&lv, ix))
        .collect();
    // ELL slots are summed like the reduced indices
    red_vars.extend(&lv.slots);
    // ties: follow the operands' level chains (first operand first), then the output
    let mut operand_pref: Vec<usize> = Vec::new();
    for its in lv.access_iters.iter().flatten() {
        for &i in its {
            if !operand_pref.contains(&lv.iters[i].var) {
                operand_pref.push(lv.iters[i].var);
            }
        }
    }
    let mut pref = operand_pref.clone();
    pref.extend(&out_vars);
    let Some(free_order) = g.order(n, &pref) else {
        return Err(Error::new(k.output.span, "no iteration order exists"));
    };
    let out_t = &k.tensors[k.output.tensor];
    // a dense or all-dense (full, locatable levels) output is written in place
    let random_out = out_t.is_random_access();
    let out_level_vars: Option<Vec<usize>> = out_t.encoding.as_ref().and_then(|e| {
        let perm = e.dim_permutation()?;
        perm.iter()
            .map(|&d| match lv.index_loops[k.output.indices[d]] {
                order::IndexLoops::Plain(v) => Some(v),
                _ => None,
            })
            .collect()
    });
    let chain = |g: &mut Graph, vars: &[usize]| {
        for w in vars.windows(2) {
            g.edges.insert((w[0], w[1]));
        }
    };
    let before = |g: &mut Graph, a: &[usize], b: &[usize]| {
        for &x in a {
            for &y in b {
                if x != y {
                    g.edges.insert((x, y));
                }
            }
        }
    };
    let (strategy, order) = if random_out {
        (Strategy::InPlace, free_order)
    } else {
        let mut pick = None;
        if let Some(olv) = &out_level_vars {
            let mut h = g.clone();
            chain(&mut h, olv);
            before(&mut h, olv, &red_vars);
            let mut pref = olv.clone();
            pref.extend(&operand_pref);
            if let Some(o) = h.order(n, &pref) {
                pick = Some((Strategy::Append, o));
            } else if let (Some(_), Some((last, init))) = (&flat, olv.split_last()) {
                let mut h = g.clone();
                chain(&mut h, init);
                before(&mut h, init, &red_vars);
                before(&mut h, init, &[*last]);
                if let Some(o) = h.order(n, &pref) {
                    pick = Some((Strategy::Workspace { var: *last }, o));
                }
            }
        }
        pick.unwrap_or((Strategy::Buffer, free_order))
    };
    let (target, combine) = match strategy {
        Strategy::InPlace if flat.is_some() => (Target::Output, Combine::Reduce(top_op)),
        Strategy::InPlace if k.accumulate => (Target::Output, Combine::Reduce(ReduceOp::Sum)),
        Strategy::InPlace => (Target::Output, Combine::Assign),
        Strategy::Append => (Target::Append, Combine::Assign),
        Strategy::Workspace { .. } => (Target::Workspace, Combine::Reduce(top_op)),
        Strategy::Buffer => (Target::Buffer, Combine::Reduce(top_op)),
    };
    let mut b = Builder {
        k: &k,
        lv: &lv,
        order: order.clone(),
        temps: 0,
        target,
        combine,
        unordered: None,
    };
    let mut nest: Vec<usize> = order
        .iter()
        .copied()
        .filter(|v| out_vars.contains(v) || red_vars.contains(v))
        .collect();
    // output indices that appear only on the left still loop over their extent
    nest.dedup();
    let body = b.nest(&expr, &nest, 0, strategy, &red_vars, top_op);
    *unordered = b.unordered;
    let mut body = body?;
    let temps = b.temps;
    let overwrites = strategy == Strategy::InPlace && assigns_every_element(&k, &lv, &mut body);
    let shared_rows = shares_rows(&k, &lv, strategy, &body);
    let windowed_rows = shared_rows.and_then(|sr| windows_rows(&k, &lv, sr, &body));
    Ok(Program {
        conversions,
        levels: lv,
        order,
        strategy,
        temps,
        body,
        kernel: k,
        overwrites,
        shared_rows,
        windowed_rows,
    })
}

/// The [`SharedRows`] of a kernel of this form, which `C(i,j) = A(i,k) * B(k,j)` with `A` in
/// CSR has: the output is assembled through a workspace of `f64` sums (every computation adds
/// into it, no temporary) and is not read (no `+=`); the loop tree is one dense loop over the
/// outermost variable, with no iterator tested, whose body locates one access's dense level 0,
/// expands the workspace, loops over that access's compressed level 1 (unique; merged or not
/// with other operands' levels) and compresses; no other access is indexed by the outermost
/// variable.
fn shares_rows(k: &Kernel, lv: &Levels, strategy: Strategy, body: &[Stmt]) -> Option<SharedRows> {
    if !matches!(strategy, Strategy::Workspace { .. })
        || k.accumulate
        || k.value != crate::check::ValueType::F64
        || k.accesses.iter().any(|a| a.tensor == k.output.tensor)
    {
        return None;
    }
    let [Stmt::Loop(outer)] = body else {
        return None;
    };
    let ([case], true, Driver::Range) = (&outer.cases[..], outer.iters.is_empty(), outer.driver)
    else {
        return None;
    };
    let [Stmt::Locate(row), Stmt::Expand, Stmt::Loop(inner), Stmt::Compress] = &case.body[..]
    else {
        return None;
    };
    let row_it = &lv.iters[*row];
    let access = row_it.access;
    // the matrix's compressed level, merged with iterators of operands not indexed by the row
    let &col_it = inner
        .iters
        .iter()
        .find(|&&it| lv.iters[it].access == access)?;
    let col = &lv.iters[col_it];
    let enc = k.tensors[k.accesses[access].tensor].encoding.as_ref()?;
    let levels_fit = matches!(
        &enc.lvl_types[..],
        [l0, l1] if l0.format == sparse_ir::ir::LevelFormat::Dense
            && l1.format == sparse_ir::ir::LevelFormat::Compressed
            && l1.is_unique()
    );
    /// Only sums into the workspace, and locates.
    fn sums_into_workspace(s: &Stmt) -> bool {
        match s {
            Stmt::Compute {
                target, combine, ..
            } => *target == Target::Workspace && *combine == Combine::Reduce(ReduceOp::Sum),
            Stmt::Loop(l) => l
                .cases
                .iter()
                .all(|c| c.body.iter().all(sums_into_workspace)),
            Stmt::Locate(_) => true,
            _ => false,
        }
    }
    let indexed_by_row = |a: &crate::check::Access| {
        a.indices
            .iter()
            .any(|&ix| matches!(lv.index_loops[ix], order::IndexLoops::Plain(v) if v == outer.var))
    };
    let ok = levels_fit
        && enc.dim_slices.is_none()
        && row_it.level == 0
        && !row_it.iterate
        && row_it.var == outer.var
        && col.access == access
        && col.level == 1
        && col.iterate
        && col.slice_dim.is_none()
        && inner.driver == Driver::Merge
        && inner
            .cases
            .iter()
            .all(|c| c.body.iter().all(sums_into_workspace))
        && k.accesses
            .iter()
            .enumerate()
            .all(|(a, acc)| a == access || !indexed_by_row(acc));
    ok.then_some(SharedRows {
        var: outer.var,
        access,
        iter: col_it,
    })
}

/// The [`WindowedRows`] of a [`SharedRows`] kernel of that form: the loop over the shared
/// matrix's level has one case, which locates `B`'s level 0 at its variable and loops over
/// `B`'s level 1 alone, whose one case sums a binary operation's result into the workspace.
fn windows_rows(k: &Kernel, lv: &Levels, sr: SharedRows, body: &[Stmt]) -> Option<WindowedRows> {
    let [Stmt::Loop(outer)] = body else {
        return None;
    };
    let [outer_case] = &outer.cases[..] else {
        return None;
    };
    let [Stmt::Locate(_), Stmt::Expand, Stmt::Loop(inner), Stmt::Compress] = &outer_case.body[..]
    else {
        return None;
    };
    let ([it], [case], Driver::Merge) = (&inner.iters[..], &inner.cases[..], inner.driver) else {
        return None;
    };
    let [Stmt::Locate(row), Stmt::Loop(cols)] = &case.body[..] else {
        return None;
    };
    let ([col], [col_case], Driver::Merge) = (&cols.iters[..], &cols.cases[..], cols.driver) else {
        return None;
    };
    let [Stmt::Compute {
        target: Target::Workspace,
        combine: Combine::Reduce(ReduceOp::Sum),
        expr: Expr::Binary(..),
    }] = &col_case.body[..]
    else {
        return None;
    };
    let (row_it, col_it) = (&lv.iters[*row], &lv.iters[*col]);
    let enc = k.tensors[k.accesses[col_it.access].tensor]
        .encoding
        .as_ref()?;
    let levels_fit = matches!(
        &enc.lvl_types[..],
        [l0, l1] if l0.format == sparse_ir::ir::LevelFormat::Dense
            && l1.format == sparse_ir::ir::LevelFormat::Compressed
            && l1.is_unique()
            && l1.is_ordered()
    );
    let ok = *it == sr.iter
        && case.iters == [*it]
        && col_case.iters == [*col]
        && levels_fit
        && enc.dim_slices.is_none()
        && row_it.access == col_it.access
        && row_it.level == 0
        && !row_it.iterate
        && row_it.var == inner.var
        && row_it.slice_dim.is_none()
        && lv.iters[*it].var == inner.var
        && col_it.level == 1
        && col_it.iterate
        && col_it.slice_dim.is_none();
    ok.then_some(WindowedRows { iter: *col })
}

/// Turns the one sum into a random-access output into an assignment when the loops visit
/// every output element once and add into it once, and says whether it did: the loops over
/// the output's indices are dense ranges nested in dimension order, each with one case and no
/// iterator tested (a CSR operand's dense level is located, not iterated), and the innermost
/// one's body ends in the only statement writing the output, `Output += t` of a plain `=`
/// statement (not `+=`) whose right-hand side does not read the output. CSR SpMV's `y(i) +=
/// t0` after `y.fill(0)` becomes `y(i) = t0`: no pass clearing `y`, no read of `y` per row.
fn assigns_every_element(k: &Kernel, lv: &Levels, body: &mut [Stmt]) -> bool {
    let out = &k.output;
    if k.accumulate || out.indices.is_empty() || k.accesses.iter().any(|a| a.tensor == out.tensor) {
        return false;
    }
    let mut vars = Vec::new();
    for &ix in &out.indices {
        match lv.index_loops[ix] {
            order::IndexLoops::Plain(v) => vars.push(v),
            _ => return false,
        }
    }
    let mut stmts = body;
    for (d, &var) in vars.iter().enumerate() {
        // before the loop: only locates and temporaries
        let Some((Stmt::Loop(l), before)) = stmts.split_last_mut() else {
            return false;
        };
        if before
            .iter()
            .any(|s| !matches!(s, Stmt::Locate(_) | Stmt::InitTemp(_)))
            || l.var != var
            || l.driver != Driver::Range
            || !l.iters.is_empty()
            || l.cases.len() != 1
        {
            return false;
        }
        stmts = &mut l.cases[0].body;
        if d + 1 < vars.len() {
            continue;
        }
        let Some((last, before)) = stmts.split_last_mut() else {
            return false;
        };
        if before.iter().any(writes_output) {
            return false;
        }
        if let Stmt::Compute {
            target: Target::Output,
            combine: combine @ Combine::Reduce(ReduceOp::Sum),
            ..
        } = last
        {
            *combine = Combine::Assign;
            return true;
        }
    }
    false
}

/// Whether `s` (or a statement inside it) writes the random-access output.
fn writes_output(s: &Stmt) -> bool {
    match s {
        Stmt::Compute { target, .. } => *target == Target::Output,
        Stmt::Loop(l) => l.cases.iter().any(|c| c.body.iter().any(writes_output)),
        _ => false,
    }
}

/// Makes access `a` read its tensor converted to `enc` (a new tensor, `NAME'`).
fn convert(
    k: &mut Kernel,
    conversions: &mut Vec<Conversion>,
    a: usize,
    enc: sparse_ir::verify::VerifiedEncoding,
) {
    let mut from = k.accesses[a].tensor;
    // convert the declared tensor, not an earlier conversion of it
    if let Some(c) = conversions.iter().find(|c| c.to == from) {
        from = c.from;
    }
    let mut t = k.tensors[from].clone();
    t.name = format!("{}'", t.name);
    t.encoding = Some(enc);
    k.tensors.push(t);
    let to = k.tensors.len() - 1;
    k.accesses[a].tensor = to;
    conversions.push(Conversion { from, to });
}

impl Builder<'_> {
    /// The iterator of access `a` at loop variable `v` that must be merged, if any.
    fn merged(&self, a: usize, v: usize) -> Option<usize> {
        self.lv.access_iters[a]
            .as_ref()?
            .iter()
            .copied()
            .find(|&i| self.lv.iters[i].var == v && self.lv.iters[i].iterate)
    }

    fn located(&self, e: &Expr, v: usize) -> Vec<usize> {
        let mut acc = Vec::new();
        e.accesses(&mut acc);
        let mut out = Vec::new();
        for a in acc {
            if let Some(its) = &self.lv.access_iters[a] {
                for &i in its {
                    if self.lv.iters[i].var == v && !self.lv.iters[i].iterate {
                        out.push(i);
                    }
                }
            }
        }
        out
    }

    /// Lowers `e` over the loop variables `nest[d..]` (the top nest when `top`).
    fn nest(
        &mut self,
        e: &Expr,
        nest: &[usize],
        d: usize,
        strategy: Strategy,
        red_vars: &[usize],
        top_op: ReduceOp,
    ) -> Result<Vec<Stmt>, Error> {
        // output-assembly hooks of the top nest
        if strategy == Strategy::Append
            && self.target == Target::Append
            && !red_vars.is_empty()
            && nest[d..].iter().all(|v| red_vars.contains(v))
        {
            let t = self.temps;
            self.temps += 1;
            let saved = (self.target, self.combine);
            self.target = Target::Temp(t);
            self.combine = Combine::Reduce(top_op);
            let mut body = vec![Stmt::InitTemp(t)];
            body.extend(self.nest(e, nest, d, Strategy::InPlace, red_vars, top_op)?);
            body.push(Stmt::AppendTemp(t));
            (self.target, self.combine) = saved;
            return Ok(body);
        }
        // a sum into the random-access output over all its reduced variables, innermost:
        // accumulate in a register and store once (MLIR's scalarized reduction, `iter_args`)
        if strategy == Strategy::InPlace
            && self.target == Target::Output
            && self.combine == Combine::Reduce(ReduceOp::Sum)
            && d < nest.len()
            && nest[d..].iter().all(|v| red_vars.contains(v))
            // the whole reduction: a partial one (BSR's inner block columns) would change the
            // order of additions
            && red_vars
                .iter()
                .all(|v| nest[d..].contains(v) || !nest.contains(v))
        {
            let t = self.temps;
            self.temps += 1;
            self.target = Target::Temp(t);
            let mut body = vec![Stmt::InitTemp(t)];
            body.extend(self.nest(e, nest, d, Strategy::InPlace, red_vars, top_op)?);
            self.target = Target::Output;
            body.push(Stmt::Compute {
                target: Target::Output,
                combine: Combine::Reduce(ReduceOp::Sum),
                expr: Expr::Temp(t),
            });
            return Ok(body);
        }
        if let Strategy::Workspace { var } = strategy {
            if nest[d..].iter().all(|v| red_vars.contains(v) || *v == var) {
                let mut body = vec![Stmt::Expand];
                body.extend(self.nest(e, nest, d, Strategy::InPlace, red_vars, top_op)?);
                body.push(Stmt::Compress);
                return Ok(body);
            }
        }
        if d == nest.len() {
            return self.compute(e);
        }
        let v = nest[d];
        let points = lattice(e, &|a| self.merged(a, v));
        if points.is_empty() {
            return Ok(Vec::new());
        }
        let driver = if points.iter().any(|p| p.iters.is_empty()) {
            Driver::Range
        } else {
            Driver::Merge
        };
        let mut iters: Vec<usize> = points.iter().flat_map(|p| p.iters.clone()).collect();
        iters.sort_unstable();
        iters.dedup();
        if iters.len() > 1 || (driver == Driver::Range && !iters.is_empty()) {
            if let Some(&bad) = iters.iter().find(|&&i| !self.lv.iters[i].ordered) {
                let it = &self.lv.iters[bad];
                let acc = &self.k.accesses[it.access];
                let name = &self.k.tensors[acc.tensor].name;
                self.unordered = Some(it.access);
                return Err(Error::new(
                    acc.span,
                    format!(
                        "level {} of `{name}` is not ordered, but it must be merged with other operands at `{}`",
                        it.level, self.lv.vars[v].name
                    ),
                )
                .with_help(format!("convert `{name}` to an ordered format")));
            }
        }
        let mut cases = Vec::new();
        for p in points {
            let mut body: Vec<Stmt> = self
                .located(&p.expr, v)
                .into_iter()
                .map(Stmt::Locate)
                .collect();
            body.extend(self.nest(&p.expr, nest, d + 1, strategy, red_vars, top_op)?);
            cases.push(Case {
                iters: p.iters,
                body,
            });
        }
        Ok(vec![Stmt::Loop(Loop {
            var: v,
            driver,
            iters,
            cases,
        })])
    }

    /// The innermost body: nested reductions become inner nests into temporaries, then the
    /// value is combined into the target.
    fn compute(&mut self, e: &Expr) -> Result<Vec<Stmt>, Error> {
        let mut pre = Vec::new();
        let e = self.lift(e, &mut pre)?;
        pre.push(Stmt::Compute {
            target: self.target,
            combine: self.combine,
            expr: e,
        });
        Ok(pre)
    }

    fn lift(&mut self, e: &Expr, pre: &mut Vec<Stmt>) -> Result<Expr, Error> {
        Ok(match e {
            Expr::Reduce(op, vars, body) => {
                let t = self.temps;
                self.temps += 1;
                let inner: Vec<usize> = vars.iter().flat_map(|&ix| loops_of(self.lv, ix)).collect();
                let nest: Vec<usize> = self
                    .order
                    .iter()
                    .copied()
                    .filter(|v| inner.contains(v))
                    .collect();
                let saved = (self.target, self.combine);
                self.target = Target::Temp(t);
                self.combine = Combine::Reduce(*op);
                pre.push(Stmt::InitTemp(t));
                let stmts = self.nest(body, &nest, 0, Strategy::InPlace, &[], *op)?;
                pre.extend(stmts);
                (self.target, self.combine) = saved;
                Expr::Temp(t)
            }
            Expr::Neg(a) => Expr::Neg(Box::new(self.lift(a, pre)?)),
            Expr::Binary(op, a, b) => {
                let a = self.lift(a, pre)?;
                let b = self.lift(b, pre)?;
                Expr::Binary(*op, Box::new(a), Box::new(b))
            }
            other => other.clone(),
        })
    }
}

impl Program {
    /// The number of declared tensors: the operands a caller passes (`kernel.tensors[..n]`;
    /// the rest are conversions).
    pub fn inputs(&self) -> usize {
        self.kernel.tensors.len() - self.conversions.len()
    }

    /// The loop variables of the output's indices, in dimension order (both variables of a
    /// blocked index).
    pub fn output_vars(&self) -> Vec<usize> {
        self.kernel
            .output
            .indices
            .iter()
            .flat_map(|&ix| loops_of(&self.levels, ix))
            .collect()
    }

    /// Whether the kernel's innermost sums run in [`PARTIAL_SUMS`] interleaved partial sums
    /// ([`Program::partial_sum`]): its values are `f64` or `f32` (the types whose additions
    /// are not associative and run at full speed; a chain of dependent additions would bound
    /// a sparse row's sum by their latency). Both back ends follow it, so the interpreter and
    /// the generated code add in the same order.
    pub fn reassociates(&self) -> bool {
        matches!(self.kernel.value, ValueType::F64 | ValueType::F32)
    }

    /// The temporary and the summed expression of loop `l` when it sums into a register over
    /// one segment of stored positions, or over a dense range (a dense operand's index: SDDMM's
    /// `k`), so that a back end may sum it in [`PARTIAL_SUMS`] interleaved partial sums, as
    /// MLIR's sparsifier reassociates a vectorized reduction: position `lo + 4s + k` of the
    /// segment `lo .. hi` (coordinate `4s + k` of the range `0 .. n`) goes to lane `k` for
    /// every whole step `s`, the positions left over to lane 0 (the temporary itself), lanes 1
    /// to 3 start from zero and their sum `(l1 + l2) + l3` is added to the temporary after the
    /// loop. A segment loop has one iterator, on a unique level that is not a slice (every
    /// position of the segment visited once, in order), not n:m ([`Program::nm_sum`] sums those
    /// segments); a range loop has none; either has one
    /// case whose body is one sum into a temporary into which nothing but sums are combined.
    /// A temporary appended to a sparse output (SDDMM's) counts as visited after a loop that
    /// added a term; its lane 0 starts from its value, zero until visited. `None` otherwise.
    pub fn partial_sum<'a>(&self, l: &'a Loop) -> Option<(usize, &'a Expr)> {
        match (&l.iters[..], l.driver) {
            ([], Driver::Range) => {}
            // an n:m level's segments hold `n` positions (2:4: two), too few for the lanes,
            // whose sum would add a chain of additions to every segment: [`Program::nm_sum`]
            // runs the lanes across the segments instead
            ([it], Driver::Merge) if self.segment_sum(*it) == Some(None) => {}
            _ => return None,
        }
        self.sums_into_temp(l)
    }

    /// Whether iterator `it` visits every position of its segment once, in order (an iterated,
    /// unique level that is not a slice): `Some(Some(n))` for an n:m level (segments of `n`
    /// positions), `Some(None)` for another, `None` when it does not.
    fn segment_sum(&self, it: usize) -> Option<Option<usize>> {
        let li = &self.levels.iters[it];
        let access = &self.kernel.accesses[li.access];
        let lt = self.kernel.tensors[access.tensor]
            .encoding
            .as_ref()
            .and_then(|e| e.lvl_types.get(li.level))?;
        (li.iterate && li.slice_dim.is_none() && lt.is_unique()).then(|| lt.format.n_per_parent())
    }

    /// The temporary and the summand of loop `l` when its one case, over all its iterators,
    /// is one sum into a temporary into which nothing but sums are combined.
    fn sums_into_temp<'a>(&self, l: &'a Loop) -> Option<(usize, &'a Expr)> {
        let [case] = &l.cases[..] else {
            return None;
        };
        if case.iters != l.iters {
            return None;
        }
        let [Stmt::Compute {
            target: Target::Temp(t),
            combine: Combine::Reduce(ReduceOp::Sum),
            expr,
        }] = &case.body[..]
        else {
            return None;
        };
        let only_sums = |s: &Stmt| match s {
            Stmt::Compute {
                target: Target::Temp(u),
                combine,
                ..
            } => *u != *t || *combine == Combine::Reduce(ReduceOp::Sum),
            _ => true,
        };
        every_stmt(&self.body, &only_sums).then_some((*t, expr))
    }

    /// The sum of loop `l` over a dense range whose body locates and then sums an n:m level's
    /// segment into a temporary (2:4 SpMV: `for j/4 { locate; for j%4 in A.2 { t += .. } }`),
    /// when a back end may sum it in [`PARTIAL_SUMS`] interleaved partial sums across the
    /// segments: the `e`-th position the loops visit (`e = c * n + k` for position `k` of
    /// coordinate `c`'s segment, `n` positions each) goes to lane `e % 4` while `e` is below
    /// the whole steps' `4 * floor(extent * n / 4)`, to lane 0 (the temporary) after; lanes 1
    /// to 3 start from zero and `(l1 + l2) + l3` is added to the temporary after the loop, as
    /// [`Program::partial_sum`] does along one segment. `n` divides 4 (1, 2 or 4), so a step
    /// is `4 / n` whole segments. `None` otherwise.
    pub fn nm_sum<'a>(&self, l: &'a Loop) -> Option<NmSum<'a>> {
        let ([], [case], Driver::Range) = (&l.iters[..], &l.cases[..], l.driver) else {
            return None;
        };
        let (Stmt::Loop(inner), locates) = case.body.split_last()? else {
            return None;
        };
        if !locates.iter().all(|s| matches!(s, Stmt::Locate(_))) {
            return None;
        }
        let ([it], Driver::Merge) = (&inner.iters[..], inner.driver) else {
            return None;
        };
        // the range and the segment are the block and the offset of one index (`j floordiv
        // 4`, `j mod 4`), so whatever depends on one depends on the other
        let split = self.levels.index_loops.iter().any(
            |il| matches!(il, IndexLoops::Split { hi, lo, .. } if *hi == l.var && *lo == inner.var),
        );
        if !split {
            return None;
        }
        let n = self
            .segment_sum(*it)
            .flatten()
            .filter(|n| matches!(n, 1 | 2 | 4))?;
        let (temp, expr) = self.sums_into_temp(inner)?;
        Some(NmSum {
            temp,
            locates,
            inner,
            iter: *it,
            expr,
            n,
        })
    }

    /// The locates and the summand of loop `l` when it sums a block's row into the output: a
    /// loop without iterators over a level of constant size `n >= 1` (BSR's `j mod 3`) whose
    /// one case locates positions and then adds into the random-access output at coordinates
    /// that do not depend on its variable, with no reduction but sums combined into the output
    /// (no visited flags). A back end may sum the block's row first (`v0 + v1 + ...`, from its
    /// first term) and add that to the output once, as MLIR reassociates a vectorized
    /// reduction: the chain of additions carried from block to block is then one long, not
    /// the block's width. `None` otherwise.
    pub fn block_sum<'a>(&self, l: &'a Loop) -> Option<(&'a [Stmt], &'a Expr)> {
        let ([], [case]) = (&l.iters[..], &l.cases[..]) else {
            return None;
        };
        if !matches!(self.levels.vars[l.var].extent, Extent::Const(n) if n >= 1) {
            return None;
        }
        let (
            Stmt::Compute {
                target: Target::Output,
                combine: Combine::Reduce(ReduceOp::Sum),
                expr,
            },
            locates,
        ) = case.body.split_last()?
        else {
            return None;
        };
        if !locates.iter().all(|s| matches!(s, Stmt::Locate(_))) {
            return None;
        }
        let independent =
            self.kernel
                .output
                .indices
                .iter()
                .all(|&ix| match self.levels.index_loops[ix] {
                    IndexLoops::Plain(v) => v != l.var,
                    IndexLoops::Split { hi, lo, .. } => hi != l.var && lo != l.var,
                });
        let only_sums = |s: &Stmt| match s {
            Stmt::Compute {
                target: Target::Output,
                combine: Combine::Reduce(op),
                ..
            } => *op == ReduceOp::Sum,
            _ => true,
        };
        let flags = !self.kernel.accumulate && !every_stmt(&self.body, &only_sums);
        (independent && !flags).then_some((locates, expr))
    }
}

/// The partial sums of a reassociated sum ([`Program::partial_sum`]).
pub const PARTIAL_SUMS: usize = 4;

/// Whether `f` holds for every statement of `body`, loops' cases included.
fn every_stmt(body: &[Stmt], f: &impl Fn(&Stmt) -> bool) -> bool {
    body.iter().all(|s| {
        f(s) && match s {
            Stmt::Loop(l) => l.cases.iter().all(|c| every_stmt(&c.body, f)),
            _ => true,
        }
    })
}
