//! `compressed`: only the coordinates that hold entries. `pos` has parent-size + 1 entries per
//! batch (local to the batch), segment `q` is `crd[pos[q] .. pos[q + 1]]`; segments follow one
//! another without holes. Validation applies PyTorch's CSR/BSR index invariants 5.1-5.6
//! (`../shared/reference/bsr-invariants.md`) to every batch.

use super::{inv, Arrays, Builder, Check, LevelKind};
use crate::error::StorageError;
use crate::storage::SparseStorage;
use crate::value::Value;

/// The `compressed` level format.
pub(crate) struct Compressed;

impl LevelKind for Compressed {
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
        b: &mut Builder<'_, V>,
        l: usize,
        _full: usize,
        count: usize,
    ) -> Result<(), StorageError> {
        let c = b.count[l];
        let pos = b.positions[l].as_mut().expect("compressed has positions");
        super::push_positions(pos, l, c, count, b.enc.pos_width, b.lvl_sizes)
    }

    fn segment(a: &Arrays<'_>, l: usize, parent: usize) -> (usize, usize) {
        let Some(pos) = a.positions[l].as_ref() else {
            return (0, 0);
        };
        let (b, r, per_parent, per_count) = a.batch_split(l, parent);
        let at = b * (per_parent + 1) + r;
        let base = b * per_count;
        (
            base + pos.get(at).unwrap_or(0),
            base + pos.get(at + 1).unwrap_or(0),
        )
    }

    fn check<S: SparseStorage + ?Sized>(
        cx: &Check<'_, S>,
        l: usize,
        parent: usize,
    ) -> Result<usize, StorageError> {
        let lt = cx.s.lvl_types()[l];
        let size = cx.s.lvl_sizes()[l];
        let pos =
            cx.s.position_buffer(l)
                .ok_or_else(|| inv(l, "positions present", 0, "no positions array".into()))?;
        let (_, ncrd) = cx.own_coords(l)?;
        let nb = cx.batches;
        if nb == 0 {
            if !pos.is_empty() || ncrd != 0 {
                return Err(inv(
                    l,
                    "no arrays for zero batches",
                    0,
                    format!("{} positions, {ncrd} coordinates", pos.len()),
                ));
            }
            return Ok(0);
        }
        let per_parent = parent / nb;
        let want = per_parent
            .checked_add(1)
            .and_then(|per| per.checked_mul(nb))
            .ok_or_else(|| {
                super::overflow(
                    l,
                    pos.len(),
                    format!(
                        "positions length ({per_parent} parents + 1) x {nb} batch(es) overflows \
                         usize"
                    ),
                )
            })?;
        if pos.len() != want {
            return Err(inv(
                l,
                "3.8 positions length is parent size + 1",
                pos.len(),
                format!(
                    "{} positions for {} parents in {} batch(es)",
                    pos.len(),
                    per_parent,
                    nb
                ),
            ));
        }
        if ncrd % nb != 0 {
            return Err(inv(
                l,
                "batches hold equal numbers of coordinates",
                ncrd,
                format!("{ncrd} coordinates in {nb} batches"),
            ));
        }
        let per_count = ncrd / nb;
        for b in 0..nb {
            let start = b * (per_parent + 1);
            let first = pos.get(start).unwrap_or(0);
            if first != 0 {
                return Err(inv(
                    l,
                    "5.1 positions start at 0",
                    start,
                    format!("pos[{start}] = {first}"),
                ));
            }
            let mut prev = 0;
            for r in 1..=per_parent {
                let p = pos.get(start + r).unwrap_or(0);
                if p < prev {
                    return Err(inv(
                        l,
                        "5.3 positions non-decreasing",
                        start + r,
                        format!("pos[{}] = {p} < pos[{}] = {prev}", start + r, start + r - 1),
                    ));
                }
                if lt.is_unique() && p - prev > size {
                    return Err(inv(
                        l,
                        "5.3 segment length at most the level size",
                        start + r,
                        format!("segment of {} coordinates, level size {size}", p - prev),
                    ));
                }
                prev = p;
            }
            if prev != per_count {
                return Err(inv(
                    l,
                    "5.2 last position equals the number of coordinates",
                    start + per_parent,
                    format!(
                        "pos[{}] = {prev}, {per_count} coordinates{}",
                        start + per_parent,
                        if nb > 1 { " per batch" } else { "" }
                    ),
                ));
            }
            let base = b * per_count;
            let mut lo = 0;
            for r in 1..=per_parent {
                let hi = pos.get(start + r).unwrap_or(0);
                cx.check_segment(l, base + lo, base + hi)?;
                lo = hi;
            }
        }
        Ok(ncrd)
    }
}
