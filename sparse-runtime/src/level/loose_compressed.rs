//! `loose_compressed`: a `(lo, hi)` pair per parent position (`pos` has 2 x parent-size entries
//! per batch, local to the batch); segment `q` is `crd[pos[2q] .. pos[2q + 1]]`. Segments may come
//! in any order with unused room between them (from raw parts); assembly lays them back to back.

use super::{inv, Arrays, Builder, Check, LevelKind};
use crate::error::StorageError;
use crate::storage::SparseStorage;
use crate::value::Value;

/// The `loose_compressed` level format.
pub(crate) struct LooseCompressed;

impl LevelKind for LooseCompressed {
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
        let (width, sizes) = (b.enc.pos_width, b.lvl_sizes);
        for _ in 0..count {
            let (lo, hi) = (b.loose_start[l], b.count[l]);
            let pos = b.positions[l]
                .as_mut()
                .expect("loose_compressed has positions");
            super::push_positions(pos, l, lo, 1, width, sizes)?;
            super::push_positions(pos, l, hi, 1, width, sizes)?;
            b.loose_start[l] = hi;
        }
        Ok(())
    }

    fn segment(a: &Arrays<'_>, l: usize, parent: usize) -> (usize, usize) {
        let Some(pos) = a.positions[l].as_ref() else {
            return (0, 0);
        };
        let (b, _, _, per_count) = a.batch_split(l, parent);
        let base = b * per_count;
        (
            base + pos.get(2 * parent).unwrap_or(0),
            base + pos.get(2 * parent + 1).unwrap_or(0),
        )
    }

    fn check<S: SparseStorage + ?Sized>(
        cx: &Check<'_, S>,
        l: usize,
        parent: usize,
    ) -> Result<usize, StorageError> {
        let pos =
            cx.s.position_buffer(l)
                .ok_or_else(|| inv(l, "positions present", 0, "no positions array".into()))?;
        let (_, ncrd) = cx.own_coords(l)?;
        let want = parent.checked_mul(2).ok_or_else(|| {
            super::overflow(
                l,
                pos.len(),
                format!("positions length 2 x {parent} parents overflows usize"),
            )
        })?;
        if pos.len() != want {
            return Err(inv(
                l,
                "positions length is 2 x parent size",
                pos.len(),
                format!("{} positions for {parent} parents", pos.len()),
            ));
        }
        let nb = cx.batches;
        if nb == 0 {
            return if ncrd == 0 {
                Ok(0)
            } else {
                Err(inv(
                    l,
                    "no arrays for zero batches",
                    0,
                    format!("{ncrd} coordinates"),
                ))
            };
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
        let per_parent = parent / nb;
        let size = cx.s.lvl_sizes()[l];
        let lt = cx.s.lvl_types()[l];
        for q in 0..parent {
            let (lo, hi) = (pos.get(2 * q).unwrap_or(0), pos.get(2 * q + 1).unwrap_or(0));
            if lo > hi {
                return Err(inv(
                    l,
                    "5.3 segment lo <= hi",
                    2 * q,
                    format!("lo = {lo} > hi = {hi}"),
                ));
            }
            if hi > per_count {
                return Err(inv(
                    l,
                    "5.2 segments within the coordinates",
                    2 * q + 1,
                    format!("hi = {hi} > {per_count} coordinates"),
                ));
            }
            if lt.is_unique() && hi - lo > size {
                return Err(inv(
                    l,
                    "5.3 segment length at most the level size",
                    2 * q + 1,
                    format!("segment of {} coordinates, level size {size}", hi - lo),
                ));
            }
            let base = (q / per_parent.max(1)) * per_count;
            cx.check_segment(l, base + lo, base + hi)?;
        }
        Ok(ncrd)
    }
}
