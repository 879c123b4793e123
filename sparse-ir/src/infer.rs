//! Map inference: the level-to-dimension map (`lvlToDim`) MLIR infers from a dimension-to-level
//! map (`dimToLvl`) when none is written (`inferLvlToDim` in MLIR's `SparseTensorDialect.cpp`).
//!
//! A permutation inverts to its inverse permutation; a block map (`i floordiv b`, `i mod b`)
//! inverts to `l1 * b + l2`. Everything here is linear in the size of the map.

use std::collections::HashMap;

use crate::ir::{AffineExpr, AffineMap};

/// `true` if `dim_to_lvl` is a permutation or a block map in MLIR's sense (`isBlockSparsity`),
/// with the floordiv/mod pair of a dimension in any order: every result is `d`, `d floordiv c`
/// or `d mod c` (`c > 0`); every dimension appears either exactly once as itself, or exactly once
/// in a floordiv and once in a mod with the same constant.
pub fn is_block_sparsity(dim_to_lvl: &AffineMap) -> bool {
    #[derive(Clone, Copy, Default)]
    struct Seen {
        plain: usize,
        div: Option<i64>,
        divs: usize,
        modulo: Option<i64>,
        mods: usize,
    }
    let mut seen = vec![Seen::default(); dim_to_lvl.num_vars];
    for r in &dim_to_lvl.results {
        let (d, kind, c) = match r {
            AffineExpr::Var(d) => (*d, 0, 0),
            AffineExpr::FloorDiv(a, b) | AffineExpr::Mod(a, b) => {
                let (Some(d), Some(c)) = (a.as_var(), b.as_constant()) else {
                    return false;
                };
                if c <= 0 {
                    return false;
                }
                (
                    d,
                    if matches!(r, AffineExpr::FloorDiv(..)) {
                        1
                    } else {
                        2
                    },
                    c,
                )
            }
            _ => return false,
        };
        let Some(s) = seen.get_mut(d) else {
            return false;
        };
        match kind {
            0 => s.plain += 1,
            1 => {
                s.divs += 1;
                s.div = Some(c);
            }
            _ => {
                s.mods += 1;
                s.modulo = Some(c);
            }
        }
    }
    seen.iter().all(|s| {
        (s.plain == 1 && s.divs == 0 && s.mods == 0)
            || (s.plain == 0 && s.divs == 1 && s.mods == 1 && s.div == s.modulo)
    })
}

/// Infers the expression of every dimension over level variables, where possible (see module
/// docs): the first level that is exactly `d`, else `l1 * b + l2` for the first level
/// `l1 = d floordiv b` (`b > 0`) that has a matching `l2 = d mod b` (the first such level).
///
/// One pass over the levels and one over the `floordiv` levels: linear in the size of the map.
pub fn infer_dims(dim_to_lvl: &AffineMap) -> Vec<Option<AffineExpr>> {
    let n = dim_to_lvl.num_vars;
    // first plain level of each dimension
    let mut plain: Vec<Option<usize>> = vec![None; n];
    // `(d, level, b)` of every `d floordiv b` (b > 0), in level order
    let mut divs: Vec<(usize, usize, i64)> = Vec::new();
    // first level of each `d mod b`
    let mut mods: HashMap<(usize, i64), usize> = HashMap::new();
    for (l, r) in dim_to_lvl.results.iter().enumerate() {
        match r {
            AffineExpr::Var(d) if *d < n => {
                plain[*d].get_or_insert(l);
            }
            AffineExpr::FloorDiv(a, b) | AffineExpr::Mod(a, b) => {
                let (Some(d), Some(c)) = (a.as_var(), b.as_constant()) else {
                    continue;
                };
                if d >= n {
                    continue;
                }
                if matches!(r, AffineExpr::Mod(..)) {
                    mods.entry((d, c)).or_insert(l);
                } else if c > 0 {
                    divs.push((d, l, c));
                }
            }
            _ => {}
        }
    }
    let mut out: Vec<Option<AffineExpr>> =
        plain.into_iter().map(|l| l.map(AffineExpr::Var)).collect();
    for (d, l1, b) in divs {
        if out[d].is_some() {
            continue;
        }
        if let Some(&l2) = mods.get(&(d, b)) {
            out[d] = Some(AffineExpr::Add(
                Box::new(AffineExpr::Mul(
                    Box::new(AffineExpr::Var(l1)),
                    Box::new(AffineExpr::Constant(b)),
                )),
                Box::new(AffineExpr::Var(l2)),
            ));
        }
    }
    out
}

/// Infers the whole inverse map. Without symbols this is MLIR's rule (a permutation or a block
/// map, see [`is_block_sparsity`]); with symbols (ELL's counting symbol) every dimension that is
/// exactly one level or a block pair is recovered, and `None` if one is not. Linear in the size
/// of the map.
pub fn infer_lvl_to_dim(dim_to_lvl: &AffineMap) -> Option<AffineMap> {
    if dim_to_lvl.num_symbols == 0 && !is_block_sparsity(dim_to_lvl) {
        return None;
    }
    let results = infer_dims(dim_to_lvl)
        .into_iter()
        .collect::<Option<Vec<_>>>()?;
    Some(AffineMap {
        num_vars: dim_to_lvl.results.len(),
        num_symbols: dim_to_lvl.num_symbols,
        results,
    })
}
