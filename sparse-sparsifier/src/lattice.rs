//! Merge lattices (TACO's `merge_lattice`, MLIR's `Merger`): at one loop variable, which
//! operands must be co-iterated and which sub-expression holds while exactly those are stored.
//!
//! Built bottom-up: a leaf whose level at the variable must be iterated (compressed, singleton,
//! n:m, loose_compressed) is the point `{it}`; a leaf located there (dense, batch) or without a
//! level there is *full*, the point `{}`. `L(a * b) = L(a) ∧ L(b)` (pairwise unions of iterator
//! sets) for the intersecting operators `* / &`; `L(a + b) = L(a) ∧ L(b) ∪ L(a) ∪ L(b)` for the
//! uniting ones `+ - | ^`, where `L(a)` alone stands for `a` with `b` absent (`a - 0 = a`,
//! `0 - b = -b`). Points with the same iterator set keep the first (largest) expression;
//! points are ordered by decreasing set size, so the first point whose iterators all stand at a
//! coordinate is the case to run. A lattice with a `{}` point is iterated densely (every
//! coordinate), the others by merging their iterators.

use crate::check::Expr;
use crate::notation::BinOp;

/// One lattice point: the iterators that must all stand at the coordinate, and the expression
/// that holds then (absent operands removed).
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Iterator ids, sorted.
    pub iters: Vec<usize>,
    /// The expression for this case.
    pub expr: Expr,
}

/// The lattice of `e` at one loop variable. `leaf(access)` gives the iterator that must be
/// merged for that access at this variable (`None`: the access is full here).
pub fn lattice(e: &Expr, leaf: &dyn Fn(usize) -> Option<usize>) -> Vec<Point> {
    let mut pts = build(e, leaf);
    let mut out: Vec<Point> = Vec::new();
    for p in pts.drain(..) {
        if !out.iter().any(|q| q.iters == p.iters) {
            out.push(p);
        }
    }
    out.sort_by_key(|p| std::cmp::Reverse(p.iters.len()));
    out
}

fn union(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut v: Vec<usize> = a.iter().chain(b).copied().collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn build(e: &Expr, leaf: &dyn Fn(usize) -> Option<usize>) -> Vec<Point> {
    match e {
        Expr::Access(a) => vec![Point {
            iters: leaf(*a).into_iter().collect(),
            expr: e.clone(),
        }],
        Expr::Literal(_) | Expr::Temp(_) => vec![Point {
            iters: Vec::new(),
            expr: e.clone(),
        }],
        Expr::Zero => Vec::new(),
        Expr::Neg(a) => build(a, leaf)
            .into_iter()
            .map(|p| Point {
                iters: p.iters,
                expr: Expr::Neg(Box::new(p.expr)),
            })
            .collect(),
        Expr::Reduce(op, vars, body) => build(body, leaf)
            .into_iter()
            .map(|p| Point {
                iters: p.iters,
                expr: Expr::Reduce(*op, vars.clone(), Box::new(p.expr)),
            })
            .collect(),
        Expr::Binary(op, a, b) => {
            let la = build(a, leaf);
            let lb = build(b, leaf);
            let mut out = Vec::new();
            for pa in &la {
                for pb in &lb {
                    out.push(Point {
                        iters: union(&pa.iters, &pb.iters),
                        expr: Expr::Binary(
                            *op,
                            Box::new(pa.expr.clone()),
                            Box::new(pb.expr.clone()),
                        ),
                    });
                }
            }
            if !op.intersects() {
                out.extend(la);
                out.extend(lb.into_iter().map(|p| Point {
                    iters: p.iters,
                    expr: if *op == BinOp::Sub {
                        Expr::Neg(Box::new(p.expr))
                    } else {
                        p.expr
                    },
                }));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(a: usize) -> Box<Expr> {
        Box::new(Expr::Access(a))
    }

    #[test]
    fn union_and_intersection() {
        // a + b, both merged: {a,b} -> a+b, {a} -> a, {b} -> b
        let e = Expr::Binary(BinOp::Add, acc(0), acc(1));
        let l = lattice(&e, &|a| Some(a));
        let sets: Vec<_> = l.iter().map(|p| p.iters.clone()).collect();
        assert_eq!(sets, vec![vec![0, 1], vec![0], vec![1]]);
        assert_eq!(l[2].expr, Expr::Access(1));
        // a - b: where only b, -b
        let e = Expr::Binary(BinOp::Sub, acc(0), acc(1));
        assert_eq!(lattice(&e, &|a| Some(a))[2].expr, Expr::Neg(acc(1)));
        // a * b: one point
        let e = Expr::Binary(BinOp::Mul, acc(0), acc(1));
        assert_eq!(lattice(&e, &|a| Some(a)).len(), 1);
        // a * x with x dense (full): iterate a only
        let l = lattice(&e, &|a| (a == 0).then_some(0));
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].iters, vec![0]);
        // a + d with d full: {a} -> a+d, {} -> d (dense iteration)
        let e = Expr::Binary(BinOp::Add, acc(0), acc(1));
        let l = lattice(&e, &|a| (a == 0).then_some(0));
        let sets: Vec<_> = l.iter().map(|p| p.iters.clone()).collect();
        assert_eq!(sets, vec![vec![0], vec![]]);
        assert_eq!(l[1].expr, Expr::Access(1));
    }
}
