//! Help texts: why a map cannot be inverted, block sizes, nearest level format or property
//! (edit distance), allowed widths, ordinals, and the sampling check of explicit inverses.

use super::*;

/// Help for a level expression MLIR cannot invert (`i + j`, `i * 2`, a constant).
pub(super) const NOT_A_BLOCK_LEVEL: &str =
    "each level must be a dimension (`i`) or half of a block pair \
    (`i floordiv 2` and `i mod 2`); for any other map, give every dimension its inverse \
    explicitly (`{l0, l1} (d0 = ..., d1 = ...) -> (l0 = ..., l1 = ...)`)";

/// What [`why_not_invertible`] blames: a level (its expression) or a dimension (its variable).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Culprit {
    Level(usize),
    Dim(usize),
}

/// Why MLIR cannot invert `dim_to_lvl` (a map without symbols that is not a permutation or a
/// block map, see [`crate::infer::is_block_sparsity`]): the first level, in level order, whose
/// expression breaks the rule, else the first dimension no level stores, with a help text naming
/// the dimensions as written (`names`). One pass over the levels and one over the dimensions.
pub(super) fn why_not_invertible(
    dim_to_lvl: &AffineMap,
    names: &[&str],
) -> (Option<Culprit>, String) {
    let n = dim_to_lvl.num_vars;
    let name = |d: usize| names.get(d).copied().unwrap_or("d");
    let pair = |d: usize, b: i64| {
        format!(
            "a block map needs both `{0} floordiv {b}` and `{0} mod {b}`",
            name(d)
        )
    };
    // per dimension: the first level storing it whole, and its first floordiv / mod `(level, b)`
    let mut plain: Vec<Option<usize>> = vec![None; n];
    let mut div: Vec<Option<(usize, i64)>> = vec![None; n];
    let mut modulo: Vec<Option<(usize, i64)>> = vec![None; n];
    let mut found: Option<(usize, String)> = None;
    for (l, r) in dim_to_lvl.results.iter().enumerate() {
        let (d, kind, b) = match r {
            AffineExpr::Var(d) if *d < n => (*d, 0, 0),
            AffineExpr::FloorDiv(a, c) | AffineExpr::Mod(a, c) => {
                let kind = if matches!(r, AffineExpr::FloorDiv(..)) {
                    1
                } else {
                    2
                };
                match (a.as_var().filter(|d| *d < n), c.as_constant()) {
                    (Some(d), Some(b)) if b > 0 => (d, kind, b),
                    (Some(d), Some(b)) => {
                        let b = b.unsigned_abs().max(2);
                        let help = format!(
                            "a block size must be a positive constant: `{0} floordiv {b}` and \
                             `{0} mod {b}`",
                            name(d)
                        );
                        found.get_or_insert((l, help));
                        continue;
                    }
                    _ => {
                        found.get_or_insert((l, NOT_A_BLOCK_LEVEL.to_string()));
                        continue;
                    }
                }
            }
            _ => {
                found.get_or_insert((l, NOT_A_BLOCK_LEVEL.to_string()));
                continue;
            }
        };
        let earlier_block = div[d].or(modulo[d]);
        let problem = match kind {
            0 => match (plain[d], earlier_block) {
                (Some(l0), _) => Some(format!(
                    "dimension `{}` is already level {l0}: each dimension must be exactly one \
                     level, or split into `floordiv` and `mod` levels",
                    name(d)
                )),
                (None, Some((l0, b0))) => Some(format!(
                    "dimension `{0}` is already split into blocks at level {l0}: use either `{0}` \
                     or the pair `{0} floordiv {b0}` and `{0} mod {b0}`",
                    name(d)
                )),
                (None, None) => {
                    plain[d] = Some(l);
                    None
                }
            },
            _ => {
                let (this, other) = if kind == 1 {
                    ("floordiv", "mod")
                } else {
                    ("mod", "floordiv")
                };
                let seen = if kind == 1 {
                    &mut div[d]
                } else {
                    &mut modulo[d]
                };
                match (plain[d], *seen) {
                    (Some(l0), _) => Some(format!(
                        "dimension `{0}` is already level {l0}: use either `{0}` or the pair \
                         `{0} floordiv {b}` and `{0} mod {b}`",
                        name(d)
                    )),
                    (None, Some((l0, _))) => Some(format!(
                        "`{0}` already has a `{this}` at level {l0}: a block map needs exactly one \
                         `{0} floordiv b` and one `{0} mod b` (`{other}` is missing or repeated)",
                        name(d)
                    )),
                    (None, None) => {
                        *seen = Some((l, b));
                        None
                    }
                }
            }
        };
        if let Some(help) = problem {
            found.get_or_insert((l, help));
        }
    }
    // pairs: a floordiv without its mod (or the reverse), or with a different block size; blamed
    // at the lone level, or at the later one of a mismatched pair
    for d in 0..n {
        let candidate = match (div[d], modulo[d]) {
            (Some((l, b)), None) | (None, Some((l, b))) => Some((l, pair(d, b))),
            (Some((l1, b1)), Some((l2, b2))) if b1 != b2 => {
                let b = if l1 < l2 { b1 } else { b2 };
                Some((l1.max(l2), format!("{} (the same block size)", pair(d, b))))
            }
            _ => None,
        };
        if let Some((l, help)) = candidate {
            if found.as_ref().is_none_or(|(l0, _)| l < *l0) {
                found = Some((l, help));
            }
        }
    }
    if let Some((l, help)) = found {
        return (Some(Culprit::Level(l)), help);
    }
    // a dimension no level stores
    for d in 0..n {
        if plain[d].is_none() && div[d].is_none() && modulo[d].is_none() {
            let help = format!(
                "dimension `{0}` is not stored in any level: every dimension must be a level \
                 (e.g. `{0} : compressed`) or split into `{0} floordiv b` and `{0} mod b`",
                name(d)
            );
            return (Some(Culprit::Dim(d)), help);
        }
    }
    (
        None,
        "each dimension must be exactly one level, or split into `floordiv` and `mod` levels"
            .into(),
    )
}

/// Help for a static size `n` of dimension `d` that block size `b` does not divide: the nearest
/// multiples of `b` (not 0), or a dynamic size.
pub(super) fn block_size_help(d: usize, n: u64, b: u64) -> String {
    let below = n - n % b;
    let above = below.checked_add(b);
    let multiples = match (below, above) {
        (0, Some(a)) => format!("e.g. {a}"),
        (lo, Some(a)) => format!("e.g. {lo} or {a}"),
        (lo, None) => format!("e.g. {lo}"),
    };
    format!(
        "dimension {d} is split into blocks of {b} (`floordiv {b}` and `mod {b}`): make its size \
         a multiple of {b} ({multiples}) or dynamic (`?`)"
    )
}

/// Level property names (`name`, spelling in help).
pub(super) const LEVEL_PROPERTIES: &[(&str, &str)] = &[
    ("nonunique", "nonunique"),
    ("nonordered", "nonordered"),
    ("soa", "soa"),
    ("high", "high"),
];

/// Help for an unknown name: the nearest valid one by edit distance, if close enough, and the
/// list of valid ones: "did you mean `compressed`? valid level formats: `dense`, ...".
pub(super) fn choices_help(name: &str, choices: &[(&str, &str)], what: &str) -> String {
    let list = choices
        .iter()
        .map(|(_, shown)| format!("`{shown}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let lower = name.to_ascii_lowercase();
    let nearest = choices
        .iter()
        .filter_map(|(c, shown)| {
            let limit = (c.len() / 3).max(1);
            edit_distance(&lower, c, limit).map(|d| (d, *shown))
        })
        .min_by_key(|(d, _)| *d);
    match nearest {
        Some((_, shown)) => format!("did you mean `{shown}`? {what}: {list}"),
        None => format!("{what}: {list}"),
    }
}

/// Levenshtein distance between `a` and `b` (in characters) if it is at most `limit`, else
/// `None`. Linear in `a` for a short `b` (and immediate for lengths that differ by more than
/// `limit`), so an enormous name costs nothing.
pub(super) fn edit_distance(a: &str, b: &str, limit: usize) -> Option<usize> {
    let b: Vec<char> = b.chars().collect();
    if a.len() > 4 * (b.len() + limit) {
        return None;
    }
    let a: Vec<char> = a.chars().collect();
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[b.len()]).filter(|d| *d <= limit)
}

/// Help for a bad `posWidth` (`k == 0`) or `crdWidth` (`k == 1`): the allowed widths (`2` is a
/// coordinate width only with an n:m level, `nm`).
pub(super) fn width_help(k: usize, nm: bool) -> String {
    match (k, nm) {
        (0, _) => "allowed posWidth values: 0 (native `usize`), 8, 16, 32 and 64".into(),
        (_, true) => "allowed crdWidth values: 0 (native `usize`), 2, 8, 16, 32 and 64".into(),
        _ => "allowed crdWidth values: 0 (native `usize`), 8, 16, 32 and 64 (and 2 with a \
              `structured[n, m]` level)"
            .into(),
    }
}

/// MLIR's ordinal: `0th`, `1st`, `2nd`, then `3th`, `4th`, ... (sic).
pub(super) fn nth(n: usize) -> String {
    match n {
        1 => "1st".into(),
        2 => "2nd".into(),
        n => format!("{n}th"),
    }
}

/// Checks on sample coordinates that each explicit dimension expression `(d, x)` (over level
/// variables) recovers dimension `d` from the levels `dim_to_lvl` computes; one flag per
/// expression (the verifier's [`inverse_samples_ok`](sparse_ir::verify::inverse_samples_ok)).
pub(super) fn explicit_inverses_ok(
    dim_to_lvl: &AffineMap,
    xs: &[(usize, &AffineExpr)],
) -> Vec<bool> {
    sparse_ir::verify::inverse_samples_ok(dim_to_lvl, xs, dim_to_lvl.num_symbols)
}
