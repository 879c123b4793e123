//! `generated::Touched`, the touched-coordinate list of generated kernels' workspaces: every
//! row comes back as its coordinates in increasing order, whichever way it is read (sorted,
//! from the bitmap of a tiny workspace, or from the bitmap through its summary words).

use proptest::prelude::*;
use sparse_runtime::generated::{Touched, SORT_TOUCHED_DIRECT, SORT_TOUCHED_NETWORK};

/// Records each row of `rows` (distinct coordinates below `n`, in the given order) and checks
/// the row it gives back.
fn check_rows(n: usize, rows: &[Vec<usize>]) {
    let mut t = Touched::new(n);
    for row in rows {
        assert!(t.is_empty());
        for &j in row {
            // SAFETY: `j < n`, distinct within the row (the callers' rows are sets)
            unsafe { t.push_unchecked(j) };
        }
        if row.is_empty() {
            continue;
        }
        let mut want = row.clone();
        want.sort_unstable();
        assert_eq!(t.take_sorted(), &want[..], "n = {n}");
    }
}

/// `len` distinct coordinates below `n` drawn from `seed`, in a scrambled order.
fn row(n: usize, len: usize, seed: u64) -> Vec<usize> {
    let mut s = seed;
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 33) as usize
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    while out.len() < len.min(n) {
        let j = next() % n;
        if seen.insert(j) {
            out.push(j);
        }
    }
    out
}

#[test]
fn rows_of_every_size_come_back_sorted() {
    // a tiny workspace (every row read from its words), one with a single summary word, and one
    // with many (rows spanning several summary words, and rows within one)
    for n in [67, 1000, 20_000] {
        let sizes = [
            1,
            5,
            SORT_TOUCHED_DIRECT,
            SORT_TOUCHED_DIRECT + 1,
            40,
            3,
            200,
            2,
            SORT_TOUCHED_NETWORK,
            SORT_TOUCHED_NETWORK + 1,
            SORT_TOUCHED_NETWORK,
            64,
            64,
        ];
        let rows: Vec<Vec<usize>> = sizes
            .iter()
            .enumerate()
            .map(|(k, &len)| row(n, len, k as u64 + 1))
            .collect();
        check_rows(n, &rows);
        // coordinates close together (a banded row) after a long row, so the bitmap is read
        let near: Vec<Vec<usize>> = (0..6)
            .map(|k| (0..50).map(|d| (k * 997 + d * 3) % n).collect())
            .collect();
        check_rows(n, &near);
    }
}

proptest! {
    #[test]
    fn random_rows_come_back_sorted(
        n in 1usize..20_000,
        lens in proptest::collection::vec(0usize..120, 1..12),
        seed in any::<u64>(),
    ) {
        let rows: Vec<Vec<usize>> = lens
            .iter()
            .enumerate()
            .map(|(k, &len)| row(n, len, seed ^ (k as u64) << 7))
            .collect();
        check_rows(n, &rows);
    }
}
