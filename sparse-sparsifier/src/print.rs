//! A readable printer of the loop IR (`sparse eval --emit loops`).
//!
//! ```text
//! # y(i) = sum(j, A(i,j) * x(j))
//! # order: i, j; output y: in place, every element assigned once
//! for i in 0..4:
//!   locate A.0 at i
//!   t0 = none
//!   for j in A.1:
//!     t0 += A(i,j) * x(j)
//!   y(i) = t0
//! ```
//! A level iterator is written `TENSOR.LEVEL` (`A.1`: level 1 of `A`; a second occurrence of
//! the same tensor is `A#2.1`). `for v in 0..N` is a dense range, `for v in A.1` iterates one
//! segment, `merge v over A.1, B.1` co-iterates with the cases below it (`case A.1 & B.1:`);
//! in a dense range `if A.1 at v:` tests an iterator's coordinate. A level of a slice is
//! marked `A.1[slice d1]` (its coordinates are filtered and mapped through dimension 1's
//! slice).

use crate::check::Expr;
use crate::loops::{Combine, Driver, Program, Stmt, Strategy, Target, PARTIAL_SUMS};
use crate::notation::{BinOp, ReduceOp};
use crate::order::Extent;

struct P<'a> {
    p: &'a Program,
    out: String,
}

impl P<'_> {
    fn access(&self, a: usize) -> String {
        let k = &self.p.kernel;
        let acc = &k.accesses[a];
        let t = &k.tensors[acc.tensor];
        let mut s = self.tensor_ref(a);
        if !acc.indices.is_empty() {
            let idx: Vec<&str> = acc
                .indices
                .iter()
                .map(|&i| k.indices[i].name.as_str())
                .collect();
            s = format!("{}({})", s, idx.join(","));
        } else {
            s = t.name.clone();
        }
        s
    }

    fn tensor_ref(&self, a: usize) -> String {
        let k = &self.p.kernel;
        let t = k.accesses[a].tensor;
        let nth = k.accesses[..a].iter().filter(|x| x.tensor == t).count();
        if nth == 0 {
            k.tensors[t].name.clone()
        } else {
            format!("{}#{}", k.tensors[t].name, nth + 1)
        }
    }

    fn iter(&self, i: usize) -> String {
        let it = &self.p.levels.iters[i];
        match it.slice_dim {
            Some(d) => format!("{}.{}[slice d{d}]", self.tensor_ref(it.access), it.level),
            None => format!("{}.{}", self.tensor_ref(it.access), it.level),
        }
    }

    fn expr(&self, e: &Expr, prec: u8) -> String {
        let (s, p) = match e {
            Expr::Access(a) => (self.access(*a), 9),
            Expr::Literal(l) => (l.to_string(), 9),
            Expr::Temp(t) => (format!("t{t}"), 9),
            Expr::Zero => ("0".to_string(), 9),
            Expr::Neg(a) => (format!("-{}", self.expr(a, 8)), 8),
            Expr::Reduce(op, vars, body) => {
                let names: Vec<&str> = vars
                    .iter()
                    .map(|&v| self.p.kernel.indices[v].name.as_str())
                    .collect();
                (
                    format!("{}({}, {})", op.name(), names.join(" "), self.expr(body, 0)),
                    9,
                )
            }
            Expr::Binary(op, a, b) => {
                let p = match op {
                    BinOp::Or => 1,
                    BinOp::Xor => 2,
                    BinOp::And => 3,
                    BinOp::Add | BinOp::Sub => 4,
                    BinOp::Mul | BinOp::Div => 5,
                };
                (
                    format!(
                        "{} {} {}",
                        self.expr(a, p),
                        op.symbol(),
                        self.expr(b, p + 1)
                    ),
                    p,
                )
            }
        };
        if p < prec {
            format!("({s})")
        } else {
            s
        }
    }

    fn output(&self) -> String {
        let k = &self.p.kernel;
        let t = &k.tensors[k.output.tensor];
        if k.output.indices.is_empty() {
            return t.name.clone();
        }
        let idx: Vec<&str> = k
            .output
            .indices
            .iter()
            .map(|&i| k.indices[i].name.as_str())
            .collect();
        format!("{}({})", t.name, idx.join(","))
    }

    fn extent(&self, v: usize) -> String {
        match self.p.levels.vars[v].extent {
            Extent::Const(c) => c.to_string(),
            Extent::Index { value: Some(n), .. } => n.to_string(),
            Extent::Index { index, div, .. } => {
                let (t, d) = self.p.kernel.indices[index].source;
                let base = format!("{}.dim{d}", self.p.kernel.tensors[t].name);
                if div == 1 {
                    base
                } else {
                    format!("{base}/{div}")
                }
            }
        }
    }

    fn line(&mut self, depth: usize, s: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn stmts(&mut self, body: &[Stmt], depth: usize) {
        for s in body {
            self.stmt(s, depth);
        }
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) {
        match s {
            Stmt::Loop(l) => {
                let var = self.p.levels.vars[l.var].name.clone();
                let its: Vec<String> = l.iters.iter().map(|&i| self.iter(i)).collect();
                match l.driver {
                    Driver::Merge if l.cases.len() == 1 && l.iters.len() == 1 => {
                        // the order of additions both back ends follow
                        let partial = if self.p.reassociates() && self.p.partial_sum(l).is_some() {
                            format!("  # in {PARTIAL_SUMS} interleaved partial sums")
                        } else {
                            String::new()
                        };
                        self.line(depth, &format!("for {var} in {}:{partial}", its[0]));
                        self.stmts(&l.cases[0].body, depth + 1);
                    }
                    Driver::Merge => {
                        self.line(depth, &format!("merge {var} over {}:", its.join(", ")));
                        for c in &l.cases {
                            let when: Vec<String> = c.iters.iter().map(|&i| self.iter(i)).collect();
                            self.line(depth + 1, &format!("case {}:", when.join(" & ")));
                            self.stmts(&c.body, depth + 2);
                        }
                    }
                    Driver::Range => {
                        let ext = self.extent(l.var);
                        if l.iters.is_empty() {
                            let block = if !self.p.reassociates() {
                                String::new()
                            } else if self.p.block_sum(l).is_some() {
                                "  # summed, then added to the output once".to_string()
                            } else if self.p.partial_sum(l).is_some() {
                                format!("  # in {PARTIAL_SUMS} interleaved partial sums")
                            } else if self.p.nm_sum(l).is_some() {
                                format!(
                                    "  # in {PARTIAL_SUMS} interleaved partial sums across the segments"
                                )
                            } else {
                                String::new()
                            };
                            self.line(depth, &format!("for {var} in 0..{ext}:{block}"));
                            for c in &l.cases {
                                self.stmts(&c.body, depth + 1);
                            }
                        } else {
                            self.line(
                                depth,
                                &format!("for {var} in 0..{ext} with {}:", its.join(", ")),
                            );
                            for (n, c) in l.cases.iter().enumerate() {
                                let head = if c.iters.is_empty() {
                                    "else:".to_string()
                                } else {
                                    let when: Vec<String> =
                                        c.iters.iter().map(|&i| self.iter(i)).collect();
                                    let kw = if n == 0 { "if" } else { "else if" };
                                    format!("{kw} {} at {var}:", when.join(" & "))
                                };
                                self.line(depth + 1, &head);
                                self.stmts(&c.body, depth + 2);
                            }
                        }
                    }
                }
            }
            Stmt::Locate(i) => {
                let it = &self.p.levels.iters[*i];
                let var = &self.p.levels.vars[it.var].name;
                let s = format!("locate {} at {var}", self.iter(*i));
                self.line(depth, &s);
            }
            Stmt::InitTemp(t) => self.line(depth, &format!("t{t} = none")),
            Stmt::AppendTemp(t) => {
                let s = format!("append {} = t{t} if visited", self.output());
                self.line(depth, &s);
            }
            Stmt::Expand => self.line(depth, "expand workspace"),
            Stmt::Compress => {
                let s = format!("compress workspace into {}", self.output());
                self.line(depth, &s);
            }
            Stmt::Compute {
                target,
                combine,
                expr,
            } => {
                let lhs = match target {
                    Target::Output => self.output(),
                    Target::Temp(t) => format!("t{t}"),
                    Target::Append => format!("append {}", self.output()),
                    Target::Workspace => {
                        let Strategy::Workspace { var } = self.p.strategy else {
                            unreachable!("workspace target without a workspace strategy")
                        };
                        format!("workspace[{}]", self.p.levels.vars[var].name)
                    }
                    Target::Buffer => format!("buffer {}", self.output()),
                };
                let op = match combine {
                    Combine::Assign => "=".to_string(),
                    Combine::Reduce(ReduceOp::Sum) => "+=".to_string(),
                    Combine::Reduce(r) => format!("{}=", r.name()),
                };
                let s = format!("{lhs} {op} {}", self.expr(expr, 0));
                self.line(depth, &s);
            }
        }
    }
}

/// The program as text: a header (the statement as compiled, the loop order, the output
/// strategy, the rows that may run together), then the loop tree, two spaces per level.
pub fn print(p: &Program) -> String {
    let mut pr = P {
        p,
        out: String::new(),
    };
    let head = format!("# {} = {}", pr.output(), pr.expr(&p.kernel.expr, 0));
    pr.line(0, &head);
    let order: Vec<&str> = p
        .order
        .iter()
        .map(|&v| p.levels.vars[v].name.as_str())
        .collect();
    let strategy = match p.strategy {
        Strategy::InPlace if p.overwrites => "in place, every element assigned once".to_string(),
        Strategy::InPlace => "in place".to_string(),
        Strategy::Append => "appended in level order".to_string(),
        Strategy::Workspace { var } => {
            format!(
                "workspace over {} (expand/compress)",
                p.levels.vars[var].name
            )
        }
        Strategy::Buffer => "coordinate buffer, sorted once".to_string(),
    };
    let head = format!(
        "# order: {}; output {}: {strategy}",
        order.join(", "),
        p.kernel.tensors[p.kernel.output.tensor].name
    );
    pr.line(0, &head);
    if let Some(sr) = p.shared_rows {
        let s = format!(
            "# rows {} with equal coordinates in {} may run together, a workspace lane each",
            p.levels.vars[sr.var].name,
            pr.iter(sr.iter)
        );
        pr.line(0, &s);
    }
    if let (Some(w), Some(sr)) = (p.windowed_rows, p.shared_rows) {
        let s = format!(
            "# rows {} whose segments of {} lie within 64 columns may be summed in a window, unsorted",
            p.levels.vars[sr.var].name,
            pr.iter(w.iter)
        );
        pr.line(0, &s);
    }
    for c in &p.conversions {
        let t = &p.kernel.tensors[c.to];
        let enc = t
            .encoding
            .as_ref()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let s = format!(
            "{} = convert {} to {enc}",
            t.name, p.kernel.tensors[c.from].name
        );
        pr.line(0, &s);
    }
    pr.stmts(&p.body, 0);
    pr.out
}
