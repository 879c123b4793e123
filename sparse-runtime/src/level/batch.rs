//! `batch`: a leading level that behaves like `dense` for addressing (position `q * size + c`)
//! but splits every buffer below it into one independent part per batch: positions stored below
//! batch levels are local to their batch (see [`crate::dynamic`] for the array layout).

use super::dense::Dense;
use super::{Arrays, Builder, Check, LevelKind};
use crate::error::StorageError;
use crate::storage::SparseStorage;
use crate::value::Value;

/// The `batch` level format.
pub(crate) struct Batch;

impl LevelKind for Batch {
    fn append_crd<V: Value>(
        b: &mut Builder<'_, V>,
        l: usize,
        full: usize,
        crd: usize,
    ) -> Result<(), StorageError> {
        Dense::append_crd(b, l, full, crd)
    }
    fn finalize_segment<V: Value>(
        b: &mut Builder<'_, V>,
        l: usize,
        full: usize,
        count: usize,
    ) -> Result<(), StorageError> {
        Dense::finalize_segment(b, l, full, count)
    }
    fn segment(a: &Arrays<'_>, l: usize, parent: usize) -> (usize, usize) {
        Dense::segment(a, l, parent)
    }
    fn check<S: SparseStorage + ?Sized>(
        cx: &Check<'_, S>,
        l: usize,
        parent: usize,
    ) -> Result<usize, StorageError> {
        Dense::check(cx, l, parent)
    }
}
