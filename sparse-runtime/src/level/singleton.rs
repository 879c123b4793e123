//! `singleton`: one coordinate per parent position, no positions array (the trailing levels of
//! a COO region). In an array-of-structs region (the default) the coordinates live in the
//! interleaved buffer of the region's first level; `singleton(soa)` keeps its own buffer.

use super::{Arrays, Builder, Check, LevelKind};
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
                return Err(super::inv(
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
        Ok(parent)
    }
}
