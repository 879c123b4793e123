//! Loop variables over *levels*, the iteration graph and the iteration order.
//!
//! Loops run over level variables, not dimensions: an index that some iterated operand stores
//! through a block map (`i floordiv 2`, `i mod 2`, BSR and n:m) becomes two loop variables
//! `i/2` and `i%2`, and the dimension coordinate is rebuilt as `2 * (i/2) + (i%2)` wherever a
//! located operand or the output needs it (MLIR's `sparse-reinterpret-map`). Each level of an
//! iterated operand is bound to one loop variable and is either *iterated* (a segment of
//! stored positions: compressed, loose_compressed, singleton, n:m) or *located* (computed
//! from the coordinate: dense, batch), read from [`LevelCapabilities`] (`full`, `locate`),
//! never from a format's name. Operands whose levels are all full and locatable, and dense
//! tensors, are *random access*: read at the coordinates, adding no constraint.
//!
//! The iteration graph (MLIR's sparse iteration order, TACO's concrete index notation) has an
//! edge from each level's variable to the next level's, for every iterated operand; a
//! reduction nested inside an expression adds edges from the output's variables to its
//! variables. A topological order (output variables first on ties) is the loop order. The
//! output then picks how it is assembled (MLIR's way, only a statement no strategy serves is
//! an error): in order (append), through a workspace of its last level (Gustavson, MLIR's
//! expand/compress) or through a coordinate buffer sorted once.
//!
//! [`LevelCapabilities`]: sparse_ir::level::LevelCapabilities

use std::collections::BTreeSet;

use sparse_ir::ir::{AffineExpr, Encoding};
use sparse_ir::verify::VerifiedEncoding;

use crate::check::{Expr, Kernel};
use crate::error::Error;
use crate::notation::{BinOp, ReduceOp};

/// How an index variable maps onto loop variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexLoops {
    /// One loop variable.
    Plain(usize),
    /// Blocked by `block`: `index = block * hi + lo`.
    Split {
        /// Loop variable of `index floordiv block`.
        hi: usize,
        /// Loop variable of `index mod block`.
        lo: usize,
        /// The block size.
        block: usize,
    },
}

/// The extent of a loop variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    /// `extent(index) / div` (`div` is 1 for a plain index); `value` when statically known.
    Index {
        /// The index variable.
        index: usize,
        /// The divisor (block size of a split's outer variable, else 1).
        div: usize,
        /// The static value, if the shapes fix it.
        value: Option<usize>,
    },
    /// A constant (a block size).
    Const(usize),
}

/// A loop variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopVar {
    /// Printable name: `i`, or `i/2` and `i%2` for a split index.
    pub name: String,
    /// Its extent.
    pub extent: Extent,
    /// The index variable it belongs to (`usize::MAX` for an ELL slot loop).
    pub index: usize,
}

/// One level of one iterated access: its loop variable and whether it is iterated or located.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelIter {
    /// The access (index into `Kernel::accesses`).
    pub access: usize,
    /// The level.
    pub level: usize,
    /// The loop variable the level's coordinate is.
    pub var: usize,
    /// `true`: a segment of stored positions is iterated; `false`: the position is located.
    pub iterate: bool,
    /// The level is ordered (merging needs it).
    pub ordered: bool,
    /// For a slice (`#sparse_tensor<slice(offset, size, stride)>` on the level's dimension):
    /// that dimension. Iteration keeps the stored coordinates `offset + c * stride` (`c <
    /// size`) and yields `c`; locating `c` reads coordinate `offset + c * stride` (MLIR's
    /// slice-driven loops).
    pub slice_dim: Option<usize>,
}

/// The loop variables and level bindings of a kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Levels {
    /// Loop variables.
    pub vars: Vec<LoopVar>,
    /// Per index variable: its loop variables.
    pub index_loops: Vec<IndexLoops>,
    /// All level iterators.
    pub iters: Vec<LevelIter>,
    /// Per access: its level iterators in level order, or `None` for a random-access operand.
    pub access_iters: Vec<Option<Vec<usize>>>,
    /// Loop variables of ELL counting levels (one per counting access; summed over, and not
    /// the variable of any index: their `index` is `usize::MAX`).
    pub slots: Vec<usize>,
}

/// Why [`levels`] failed: what a conversion may fix.
#[derive(Clone, Debug)]
pub enum LevelsError {
    /// An access whose levels cannot be loop variables (ELL counting, other maps).
    Access {
        /// The access.
        access: usize,
        /// The error if no conversion serves.
        error: Error,
    },
    /// Operands block an index differently (or one reads it whole).
    Block {
        /// The index.
        index: usize,
        /// The error if no conversion serves.
        error: Error,
    },
}

impl LevelsError {
    /// The error to report.
    pub fn error(self) -> Error {
        match self {
            LevelsError::Access { error, .. } | LevelsError::Block { error, .. } => error,
        }
    }
}

/// The accesses that block `index` (store it through `floordiv`/`mod` levels).
pub fn blocking(k: &Kernel, index: usize) -> Vec<usize> {
    (0..k.accesses.len())
        .filter(|&a| {
            let acc = &k.accesses[a];
            let t = &k.tensors[acc.tensor];
            !t.is_random_access()
                && t.encoding.as_ref().is_some_and(|e| {
                    e.dim_to_lvl.results.iter().any(|r| {
                        matches!(level_expr(r), Some(LevelExpr::Hi(d, _) | LevelExpr::Lo(d, _)) if acc.indices.get(d) == Some(&index))
                    })
                })
        })
        .collect()
}

/// The encoding of `enc` without blocks or counting levels: a blocked dimension becomes one
/// level of its outer block level's format (compressed when an inner block level stores
/// entries sparsely), inner block levels and ELL counting levels are dropped (BSR becomes
/// CSR, ELL becomes CSR, 2:4 becomes CSR). The target of the conversion inserted when
/// operands block an index differently. `None` if the result is not a valid permutation
/// encoding.
pub fn unblocked(enc: &Encoding) -> Option<VerifiedEncoding> {
    use sparse_ir::ir::{LevelFormat, LevelType};
    let mut dims = Vec::new();
    let mut types: Vec<LevelType> = Vec::new();
    for (l, r) in enc.dim_to_lvl.results.iter().enumerate() {
        match level_expr(r) {
            Some(LevelExpr::Whole(d)) => {
                dims.push(d);
                types.push(enc.lvl_types[l]);
            }
            Some(LevelExpr::Hi(d, _)) => {
                let sparse_inner = enc.dim_to_lvl.results.iter().enumerate().any(|(m, r2)| {
                    matches!(level_expr(r2), Some(LevelExpr::Lo(d2, _)) if d2 == d)
                        && !enc.lvl_types[m].capabilities().full
                });
                let mut lt = enc.lvl_types[l];
                if sparse_inner && lt.capabilities().full {
                    lt.format = LevelFormat::Compressed;
                }
                dims.push(d);
                types.push(lt);
            }
            _ => {}
        }
    }
    if dims.len() != enc.dim_rank() {
        return None;
    }

    let mut e = enc.clone();
    e.dim_slices = None;
    e.lvl_types = types;
    e.dim_to_lvl.results = dims.iter().map(|&d| AffineExpr::Var(d)).collect();
    e.dim_to_lvl.num_symbols = 0;
    let mut inverse = vec![AffineExpr::Var(0); dims.len()];
    for (l, &d) in dims.iter().enumerate() {
        inverse[d] = AffineExpr::Var(l);
    }
    e.lvl_to_dim.results = inverse;
    e.lvl_to_dim.num_vars = dims.len();
    e.lvl_to_dim.num_symbols = 0;
    e.verify().ok()
}

/// `true` if an ELL counting level of access `a` can be a loop of its own: the statement is
/// one sum (`out = sum(R, body)`, no other reduction) and `a` sits in `body` under products,
/// quotients (as dividend) and negations only, so summing over the slots sums its entries
/// (each stored entry lives in exactly one slot).
fn counting_ok(k: &Kernel, a: usize) -> bool {
    fn linear(e: &Expr, a: usize) -> Option<bool> {
        match e {
            Expr::Access(b) => (*b == a).then_some(true),
            Expr::Neg(x) => linear(x, a),
            Expr::Binary(op, x, y) => {
                let (lx, ly) = (linear(x, a), linear(y, a));
                match (lx, ly) {
                    (Some(_), Some(_)) => Some(false),
                    (Some(l), None) => Some(l && matches!(op, BinOp::Mul | BinOp::Div)),
                    (None, Some(l)) => Some(l && *op == BinOp::Mul),
                    (None, None) => None,
                }
            }
            Expr::Reduce(_, _, b) => linear(b, a).map(|_| false),
            _ => None,
        }
    }
    match &k.expr {
        Expr::Reduce(ReduceOp::Sum, _, body) if !body.has_reduce() => linear(body, a) == Some(true),
        _ => false,
    }
}

#[derive(Clone, Copy)]
enum LevelExpr {
    /// An ELL counting level with `K` slots.
    Count(usize),
    Whole(usize),
    Hi(usize, usize),
    Lo(usize, usize),
}

fn level_expr(r: &AffineExpr) -> Option<LevelExpr> {
    match r {
        AffineExpr::Var(d) => Some(LevelExpr::Whole(*d)),
        AffineExpr::FloorDiv(..) => r.as_block().map(|(d, b)| LevelExpr::Hi(d, b)),
        AffineExpr::Mod(..) => r.as_block().map(|(d, b)| LevelExpr::Lo(d, b)),
        _ => None,
    }
}

/// Builds the loop variables and level bindings.
///
/// Errors: a level expression other than `d`, `d floordiv B`, `d mod B` on an iterated operand
/// (ELL counting levels, sums of dimensions), naming the operand and level; an index blocked
/// by two different sizes, or read whole by one iterated operand and blocked by another.
pub fn levels(k: &Kernel) -> Result<Levels, LevelsError> {
    let mut splits: Vec<Option<(usize, usize)>> = vec![None; k.indices.len()];
    let mut exprs: Vec<Option<Vec<LevelExpr>>> = Vec::new();
    for (a, acc) in k.accesses.iter().enumerate() {
        let t = &k.tensors[acc.tensor];
        if t.is_random_access() {
            exprs.push(None);
            continue;
        }
        let enc = t
            .encoding
            .as_ref()
            .expect("not random access: has an encoding");
        if enc.dim_slices.is_some() && enc.dim_permutation().is_none() {
            return Err(LevelsError::Access {
                access: a,
                error: Error::new(
                    acc.span,
                    format!(
                        "`{}` is a slice of a tensor whose levels are not a permutation of its dimensions",
                        t.name
                    ),
                )
                .with_help(format!("convert `{}` first", t.name)),
            });
        }
        let mut lv = Vec::new();
        for (l, r) in enc.dim_to_lvl.results.iter().enumerate() {
            if let Some((_, slots)) = r.as_counting().filter(|_| counting_ok(k, a)) {
                lv.push(LevelExpr::Count(slots));
                continue;
            }
            let e = level_expr(r).ok_or_else(|| LevelsError::Access {
                access: a,
                error: Error::new(
                    acc.span,
                    format!(
                        "level {l} of `{}` ({}) cannot be iterated by the sparsifier yet",
                        t.name,
                        r.to_mlir_string("d")
                    ),
                )
                .with_help(format!(
                    "convert `{}` to a format whose levels are dimensions or blocks of them",
                    t.name
                )),
            })?;
            if let LevelExpr::Hi(d, b) | LevelExpr::Lo(d, b) = e {
                let ix = acc.indices[d];
                match splits[ix] {
                    Some((b0, a0)) if b0 != b => {
                        return Err(LevelsError::Block {
                            index: ix,
                            error: Error::new(
                                acc.span,
                                format!(
                                    "`{}` blocks index `{}` by {b} but `{}` blocks it by {b0}",
                                    t.name,
                                    k.indices[ix].name,
                                    k.tensors[k.accesses[a0].tensor].name
                                ),
                            )
                            .with_help("convert one of them to the other's block size"),
                        })
                    }
                    None if b == 0 => {
                        return Err(LevelsError::Access {
                            access: a,
                            error: Error::new(acc.span, "a block size of 0".to_string()),
                        })
                    }
                    None => splits[ix] = Some((b, a)),
                    _ => {}
                }
            }
            lv.push(e);
        }
        exprs.push(Some(lv));
    }
    let mut vars = Vec::new();
    let mut index_loops = Vec::new();
    for (ix, iv) in k.indices.iter().enumerate() {
        match splits[ix] {
            None => {
                index_loops.push(IndexLoops::Plain(vars.len()));
                vars.push(LoopVar {
                    name: iv.name.clone(),
                    extent: Extent::Index {
                        index: ix,
                        div: 1,
                        value: iv.extent,
                    },
                    index: ix,
                });
            }
            Some((b, _)) => {
                index_loops.push(IndexLoops::Split {
                    hi: vars.len(),
                    lo: vars.len() + 1,
                    block: b,
                });
                vars.push(LoopVar {
                    name: format!("{}/{b}", iv.name),
                    extent: Extent::Index {
                        index: ix,
                        div: b,
                        value: iv.extent.map(|e| e / b),
                    },
                    index: ix,
                });
                vars.push(LoopVar {
                    name: format!("{}%{b}", iv.name),
                    extent: Extent::Const(b),
                    index: ix,
                });
            }
        }
    }
    let mut iters = Vec::new();
    let mut access_iters = Vec::new();
    let mut slots = Vec::new();
    for (a, lv) in exprs.iter().enumerate() {
        let Some(lv) = lv else {
            access_iters.push(None);
            continue;
        };
        let acc = &k.accesses[a];
        let t = &k.tensors[acc.tensor];
        let enc = t
            .encoding
            .as_ref()
            .expect("iterated operand has an encoding");
        let mut ids = Vec::new();
        for (l, e) in lv.iter().enumerate() {
            if let LevelExpr::Count(n) = *e {
                slots.push(vars.len());
                vars.push(LoopVar {
                    name: format!("{}.slot", t.name),
                    extent: Extent::Const(n),
                    index: usize::MAX,
                });
                let lt = enc.lvl_types[l];
                ids.push(iters.len());
                iters.push(LevelIter {
                    access: a,
                    level: l,
                    var: vars.len() - 1,
                    iterate: !(lt.capabilities().full && lt.capabilities().locate),
                    ordered: lt.is_ordered(),
                    slice_dim: None,
                });
                continue;
            }
            let var = match (*e, index_loops[acc.indices[dim_of(*e)]]) {
                (LevelExpr::Whole(_), IndexLoops::Plain(v)) => v,
                (LevelExpr::Hi(..), IndexLoops::Split { hi, .. }) => hi,
                (LevelExpr::Lo(..), IndexLoops::Split { lo, .. }) => lo,
                (_, IndexLoops::Split { block, .. }) => {
                    let ix = acc.indices[dim_of(*e)];
                    return Err(LevelsError::Block { index: ix, error: Error::new(
                        acc.span,
                        format!(
                            "`{}` stores index `{}` whole at level {l}, but another operand blocks it by {block}",
                            t.name, k.indices[ix].name
                        ),
                    )
                    .with_help(format!("convert `{}` to the same block size", t.name)) });
                }
                (_, IndexLoops::Plain(_)) => unreachable!("a blocked level splits its index"),
            };
            let lt = enc.lvl_types[l];
            let caps = lt.capabilities();
            ids.push(iters.len());
            iters.push(LevelIter {
                access: a,
                level: l,
                var,
                iterate: !(caps.full && caps.locate),
                ordered: lt.is_ordered(),
                slice_dim: enc.dim_slices.as_ref().map(|_| dim_of(*e)),
            });
        }
        access_iters.push(Some(ids));
    }
    Ok(Levels {
        vars,
        index_loops,
        iters,
        access_iters,
        slots,
    })
}

fn dim_of(e: LevelExpr) -> usize {
    match e {
        LevelExpr::Whole(d) | LevelExpr::Hi(d, _) | LevelExpr::Lo(d, _) => d,
        LevelExpr::Count(_) => 0,
    }
}

/// The loop variables of an index.
pub fn loops_of(lv: &Levels, index: usize) -> Vec<usize> {
    match lv.index_loops[index] {
        IndexLoops::Plain(v) => vec![v],
        IndexLoops::Split { hi, lo, .. } => vec![hi, lo],
    }
}

/// A set of ordering constraints between loop variables.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// `(before, after)` pairs.
    pub edges: BTreeSet<(usize, usize)>,
}

impl Graph {
    /// A topological order of `n` variables, preferring the variables in `prefer` (in that
    /// order), then lower ids; `None` on a cycle.
    pub fn order(&self, n: usize, prefer: &[usize]) -> Option<Vec<usize>> {
        let mut indeg = vec![0usize; n];
        for &(_, b) in &self.edges {
            indeg[b] += 1;
        }
        let rank = |v: usize| {
            prefer
                .iter()
                .position(|&p| p == v)
                .unwrap_or(prefer.len() + v)
        };
        let mut done = vec![false; n];
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let next = (0..n)
                .filter(|&v| !done[v] && indeg[v] == 0)
                .min_by_key(|&v| rank(v))?;
            done[next] = true;
            out.push(next);
            for &(a, b) in &self.edges {
                if a == next {
                    indeg[b] -= 1;
                }
            }
        }
        Some(out)
    }
}

/// A conflict found by [`operand_graph`]: the access whose levels close a cycle, the graph of
/// the operands before it, and the error to report if no conversion serves.
#[derive(Clone, Debug)]
pub struct Conflict {
    /// The access.
    pub access: usize,
    /// The constraints of the accesses before it.
    pub before: Graph,
    /// The error naming it, with the suggestion.
    pub error: Error,
}

/// Edges from the level chains of the iterated operands, added to `g` (the constraints of
/// nested reductions); on a cycle, the [`Conflict`] names the access whose levels close it.
pub fn operand_graph(k: &Kernel, lv: &Levels, mut g: Graph) -> Result<Graph, Box<Conflict>> {
    for (a, its) in lv.access_iters.iter().enumerate() {
        let Some(its) = its else { continue };
        let mut h = g.clone();
        for w in its.windows(2) {
            let (x, y) = (lv.iters[w[0]].var, lv.iters[w[1]].var);
            if x != y {
                h.edges.insert((x, y));
            }
        }
        if h.order(lv.vars.len(), &[]).is_none() {
            let acc = &k.accesses[a];
            let t = &k.tensors[acc.tensor];
            let names: Vec<&str> = its
                .iter()
                .map(|&i| lv.vars[lv.iters[i].var].name.as_str())
                .collect();
            let error = Error::new(
                acc.span,
                format!(
                    "no iteration order visits every operand in its level order: `{}` is stored with levels ({}), against the order the other operands need",
                    t.name,
                    names.join(", ")
                ),
            )
            .with_help(format!(
                "store `{}` in the transposed format (permute its dim_to_lvl), or convert it first",
                t.name
            ));
            return Err(Box::new(Conflict {
                access: a,
                before: g,
                error,
            }));
        }
        g = h;
    }
    Ok(g)
}

/// The encoding of access `a`'s tensor with its levels permuted to follow an order of
/// `before` (the same level formats, level by level): the target of the conversion MLIR
/// inserts when an operand's level order conflicts with the others'. `None` if the tensor's
/// map is not a permutation or an index is blocked.
pub fn reordered(k: &Kernel, lv: &Levels, a: usize, before: &Graph) -> Option<VerifiedEncoding> {
    let acc = &k.accesses[a];
    let enc = k.tensors[acc.tensor].encoding.as_ref()?;
    enc.dim_permutation()?;
    let order = before.order(lv.vars.len(), &[])?;
    let mut keys = Vec::new();
    for &ix in &acc.indices {
        match lv.index_loops[ix] {
            IndexLoops::Plain(v) => keys.push(order.iter().position(|&o| o == v)?),
            IndexLoops::Split { .. } => return None,
        }
    }
    let mut dims: Vec<usize> = (0..acc.indices.len()).collect();
    dims.sort_by_key(|&d| keys[d]);
    let mut e: Encoding = (**enc).clone();
    e.dim_slices = None;
    e.dim_to_lvl.results = dims.iter().map(|&d| AffineExpr::Var(d)).collect();
    let mut inverse = vec![AffineExpr::Var(0); dims.len()];
    for (l, &d) in dims.iter().enumerate() {
        inverse[d] = AffineExpr::Var(l);
    }
    e.lvl_to_dim.results = inverse;
    e.verify().ok()
}

/// Adds edges putting every variable of a reduction nested in `e` after the variables that
/// enclose it (`outer`).
pub fn nested_edges(e: &Expr, outer: &[usize], lv: &Levels, g: &mut Graph) {
    match e {
        Expr::Reduce(_, vars, body) => {
            let inner: Vec<usize> = vars.iter().flat_map(|&ix| loops_of(lv, ix)).collect();
            for &o in outer {
                for &i in &inner {
                    if o != i {
                        g.edges.insert((o, i));
                    }
                }
            }
            let mut all = outer.to_vec();
            all.extend(&inner);
            nested_edges(body, &all, lv, g);
        }
        Expr::Neg(a) => nested_edges(a, outer, lv, g),
        Expr::Binary(_, a, b) => {
            nested_edges(a, outer, lv, g);
            nested_edges(b, outer, lv, g);
        }
        _ => {}
    }
}
