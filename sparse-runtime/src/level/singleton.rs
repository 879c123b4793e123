//! `singleton`: one coordinate per parent position, no positions array (the trailing levels of
//! a COO region). In an array-of-structs region (the default) the coordinates live in the
//! interleaved buffer of the region's first level; `singleton(soa)` keeps its own buffer.

use sparse_ir::level::PositionCount;

use super::{inv, Arrays, Builder, Check, LevelKind};
use crate::error::StorageError;
use crate::storage::SparseStorage;
use crate::value::Value;

/// The `singleton` level format.
pub(crate) struct Singleton;

impl LevelKind for Singleton {
    fn append_crd<V: Value>(
        b: &mut Builder<'_, V>,
        l: usize,
        _full: usize,
        crd: usize,
    ) -> Result<(), StorageError> {
        b.push_crd(l, crd)?;
        b.count[l] += 1;
        Ok(())
    }

    fn finalize_segment<V: Value>(
        _b: &mut Builder<'_, V>,
        _l: usize,
        _full: usize,
        _count: usize,
    ) -> Result<(), StorageError> {
        Ok(())
    }

    fn segment(_a: &Arrays<'_>, _l: usize, parent: usize) -> (usize, usize) {
        (parent, parent + 1)
    }

    fn check<S: SparseStorage + ?Sized>(
        cx: &Check<'_, S>,
        l: usize,
        parent: usize,
    ) -> Result<usize, StorageError> {
        if cx.s.coordinate_view(l).is_some() {
            let (_, n) = cx.own_coords(l)?;
            if n != parent {
                return Err(inv(
                    l,
                    "one singleton coordinate per parent position",
                    n,
                    format!("{n} coordinates for {parent} parents"),
                ));
            }
        }
        for q in 0..parent {
            cx.check_segment(l, q, q + 1)?;
        }
        check_tuples(cx, l)?;
        Ok(parent)
    }
}

/// The level properties of singleton level `k` over its COO region `s..=e` (`s` the region's
/// (loose_)compressed level, `e` its last singleton level): inside each segment of level `s`,
/// neighbouring positions whose prefix `(crd[s], .., crd[k - 1])` is equal (a run of one parent
/// coordinate tuple) must have `crd[k]` non-decreasing when level `k` is ordered, increasing when
/// it is also unique and ends the region (`k = e`); a unique `e` with a nonordered level in the
/// region needs the whole tuples `(crd[s], .., crd[e])` distinct in the segment (checked by
/// sorting: equal tuples need not be neighbours). As in MLIR (`isCOOType`), the uniqueness of a
/// COO is its last level's: a unique singleton in the middle of a region does not make the
/// shorter tuples distinct. For an ordered region these are MLIR's ordered/unique properties on
/// the COO form: sorted lexicographically, and coalesced when unique (PyTorch's `is_coalesced`).
fn check_tuples<S: SparseStorage + ?Sized>(
    cx: &Check<'_, S>,
    k: usize,
) -> Result<(), StorageError> {
    let types = cx.s.lvl_types();
    let lt = types[k];
    let mut s = k;
    while s > 0 && types[s].capabilities().count == PositionCount::OnePerParent {
        s -= 1;
    }
    if s == k || !types[s].has_positions() {
        return Ok(());
    }
    let ends_region = types
        .get(k + 1)
        .is_none_or(|t| t.capabilities().count != PositionCount::OnePerParent);
    let unique = lt.is_unique() && ends_region;
    let segments = if s == 0 {
        1
    } else {
        cx.counts.get(s - 1).copied().unwrap_or(0)
    };
    let crd = |j: usize, p: usize| cx.crd_at(j, p).unwrap_or(0);
    let tuple = |p: usize| -> String {
        let c: Vec<String> = (s..=k).map(|j| crd(j, p).to_string()).collect();
        format!("({})", c.join(", "))
    };
    let all_ordered = types[s..=k].iter().all(|t| t.is_ordered());
    for q in 0..segments {
        let (lo, hi) = cx.segment(s, q);
        if lt.is_ordered() {
            for p in lo.saturating_add(1)..hi {
                if !(s..k).all(|j| crd(j, p - 1) == crd(j, p)) {
                    continue;
                }
                let (a, b) = (crd(k, p - 1), crd(k, p));
                if unique && b <= a {
                    return Err(inv(
                        k,
                        "coordinate tuples sorted and distinct in a segment",
                        p,
                        format!("{} after {}", tuple(p), tuple(p - 1)),
                    ));
                }
                if !unique && b < a {
                    return Err(inv(
                        k,
                        "coordinate tuples non-decreasing in a segment",
                        p,
                        format!("{} after {}", tuple(p), tuple(p - 1)),
                    ));
                }
            }
        }
        if unique && !all_ordered {
            let mut seen: Vec<(Vec<usize>, usize)> = (lo..hi)
                .map(|p| ((s..=k).map(|j| crd(j, p)).collect(), p))
                .collect();
            seen.sort_unstable();
            if let Some(w) = seen.windows(2).find(|w| w[0].0 == w[1].0) {
                let p = w[0].1.max(w[1].1);
                return Err(inv(
                    k,
                    "coordinate tuples distinct in a segment",
                    p,
                    format!(
                        "{} repeated (positions {} and {})",
                        tuple(p),
                        w[0].1,
                        w[1].1
                    ),
                ));
            }
        }
    }
    Ok(())
}
