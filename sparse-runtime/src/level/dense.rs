//! `dense`: every coordinate of the level is present implicitly; no arrays. Position `q * size + c`
//! holds coordinate `c` under parent position `q`. Assembly fills the coordinates nobody
//! inserted with explicit zeros (MLIR `finalizeSegment` for dense levels), which is how stored
//! BSR blocks get their zeros.

use super::{Arrays, Builder, Check, LevelKind};
use crate::error::StorageError;
use crate::storage::SparseStorage;
use crate::value::Value;

/// The `dense` level format.
pub(crate) struct Dense;

/// Adds `n` empty children below level `l` (explicit zeros when `l` is the last level).
pub(crate) fn fill<V: Value>(
    b: &mut Builder<'_, V>,
    l: usize,
    n: usize,
) -> Result<(), StorageError> {
    if l + 1 == b.lvl_rank() {
        b.push_zeros(n)
    } else {
        b.finalize_segment(l + 1, 0, n)
    }
}

impl LevelKind for Dense {
    fn append_crd<V: Value>(
        b: &mut Builder<'_, V>,
        l: usize,
        full: usize,
        crd: usize,
    ) -> Result<(), StorageError> {
        if crd > full {
            fill(b, l, crd - full)?;
        }
        b.count[l] += 1;
        Ok(())
    }

    fn finalize_segment<V: Value>(
        b: &mut Builder<'_, V>,
        l: usize,
        full: usize,
        count: usize,
    ) -> Result<(), StorageError> {
        let size = b.lvl_sizes[l];
        let n = count
            .checked_mul(size.saturating_sub(full))
            .ok_or_else(|| StorageError::ShapeOverflow {
                shape: b.lvl_sizes.to_vec(),
            })?;
        fill(b, l, n)
    }

    fn segment(a: &Arrays<'_>, l: usize, parent: usize) -> (usize, usize) {
        let s = a.lvl_sizes[l];
        (parent * s, parent * s + s)
    }

    fn check<S: SparseStorage + ?Sized>(
        cx: &Check<'_, S>,
        l: usize,
        parent: usize,
    ) -> Result<usize, StorageError> {
        let size = cx.s.lvl_sizes()[l];
        parent.checked_mul(size).ok_or_else(|| {
            super::overflow(
                l,
                0,
                format!("{parent} parent positions x level size {size} overflows usize"),
            )
        })
    }
}
