//! n:m structured sparsity (`structured[n, m]`, `block2_4`): exactly `n` stored values per block
//! of `m`, each with its in-block coordinate `0..m`. The level is last and its parents are dense,
//! so block `q` (global parent position) owns positions `q * n .. q * n + n` of `crd` (no `pos`).
//!
//! Assembly collects one block's entries; more than `n` is
//! [`StorageError::NOutOfMOverflow`]; fewer are padded with explicit zeros at the lowest free
//! in-block coordinates, and the block is stored in coordinate order. With `crdWidth = 2` the
//! coordinates are packed four per byte ([`crate::packed`]).

use sparse_ir::ir::LevelFormat;

use super::{inv, Arrays, Builder, Check, LevelKind};
use crate::error::StorageError;
use crate::storage::SparseStorage;
use crate::value::Value;

/// The n:m level format.
pub(crate) struct NOutOfM;

/// `(n, m)` of level `l` (`(1, 1)` for other formats: never used).
pub(crate) fn n_m(format: LevelFormat) -> (usize, usize) {
    match format {
        LevelFormat::NOutOfM { n, m } => (n as usize, m as usize),
        _ => (1, 1),
    }
}

/// Writes one block: the entries `pending` (sorted by in-block coordinate) padded to `n`.
fn flush<V: Value>(b: &mut Builder<'_, V>, l: usize) -> Result<(), StorageError> {
    let (n, m) = n_m(b.enc.lvl_types[l].format);
    let pending = std::mem::take(&mut b.pending);
    if pending.len() > n {
        let row = if l >= 2 { b.cursor[l - 2] } else { 0 };
        let block = if l >= 1 { b.cursor[l - 1] } else { 0 };
        return Err(StorageError::NOutOfMOverflow {
            level: l,
            row,
            block,
            count: pending.len(),
            n,
            m,
        });
    }
    let mut pads = n - pending.len();
    let mut it = pending.into_iter().peekable();
    let mut c = 0;
    while it.peek().is_some() || pads > 0 {
        match it.peek() {
            Some(&(pc, _)) if pc <= c || pads == 0 => {
                let (pc, v) = it.next().expect("peeked");
                b.push_crd(l, pc)?;
                b.values.push(v);
                c = c.max(pc + 1);
            }
            _ => {
                b.push_crd(l, c)?;
                b.push_zeros(1)?;
                pads -= 1;
                c += 1;
            }
        }
    }
    b.count[l] += n;
    Ok(())
}

impl LevelKind for NOutOfM {
    fn append_crd<V: Value>(
        b: &mut Builder<'_, V>,
        _l: usize,
        _full: usize,
        crd: usize,
    ) -> Result<(), StorageError> {
        b.pending.push((crd, V::zero()));
        Ok(())
    }

    fn finalize_segment<V: Value>(
        b: &mut Builder<'_, V>,
        l: usize,
        _full: usize,
        count: usize,
    ) -> Result<(), StorageError> {
        let mut blocks = count;
        if !b.pending.is_empty() {
            flush(b, l)?;
            blocks -= 1;
        }
        for _ in 0..blocks {
            flush(b, l)?;
        }
        Ok(())
    }

    fn segment(a: &Arrays<'_>, l: usize, parent: usize) -> (usize, usize) {
        let (n, _) = n_m(a.lvl_types[l].format);
        (parent * n, parent * n + n)
    }

    fn check<S: SparseStorage + ?Sized>(
        cx: &Check<'_, S>,
        l: usize,
        parent: usize,
    ) -> Result<usize, StorageError> {
        let (n, _) = n_m(cx.s.lvl_types()[l].format);
        let (_, ncrd) = cx.own_coords(l)?;
        let want = parent.checked_mul(n).ok_or_else(|| {
            super::overflow(
                l,
                ncrd,
                format!("coordinates length {parent} blocks x n = {n} overflows usize"),
            )
        })?;
        if ncrd != want {
            return Err(inv(
                l,
                "n:m: n coordinates per block",
                ncrd.min(want),
                format!("{ncrd} coordinates for {parent} blocks of {n}"),
            ));
        }
        for q in 0..parent {
            cx.check_segment(l, q * n, q * n + n)?;
        }
        Ok(want)
    }
}
