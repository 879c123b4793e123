//! Peak memory of the counting-sort assembly on a large shuffled input (issue 12: extra peak
//! memory at most about twice the bytes of the result), measured by a counting allocator. A
//! test binary of its own: the allocator counts every allocation of the process, and this is
//! the only test in it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

sparse::sparse_format! {
    Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    Bsr3 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 3 : dense, j floordiv 3 : compressed, i mod 3 : dense, j mod 3 : dense), posWidth = 32, crdWidth = 32 }>;
}

/// Bytes allocated now, and the most since the last [`reset_peak`].
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

fn grew(now: usize) {
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged; the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(CURRENT.fetch_add(l.size(), Relaxed) + l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `alloc`/`realloc` above with layout `l`
        unsafe { System.dealloc(p, l) };
        CURRENT.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // counted as held twice while it moves, as a copy would
        grew(CURRENT.load(Relaxed) + new);
        // SAFETY: as `GlobalAlloc::realloc` requires, passed on
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            CURRENT.fetch_add(new, Relaxed);
            CURRENT.fetch_sub(l.size(), Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Runs `f` and returns its result and the most bytes it held at once beyond what was held
/// before it.
fn peak_extra<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.load(Relaxed);
    PEAK.store(base, Relaxed);
    let out = f();
    (out, PEAK.load(Relaxed) - base)
}

/// A finite-element-like matrix of full 3x3 blocks, 11 blocks in each of 12,000 block rows
/// (1,188,000 entries, past the coarse path's 2^20), in a shuffled order from a fixed seed.
fn shuffled_blocks() -> (usize, Vec<([usize; 2], f64)>) {
    let rows = 12_000;
    let mut entries = Vec::new();
    for r in 0..rows {
        for t in 0..11 {
            let c = (r * 7 + t * 1091) % rows;
            for e in 0..9 {
                let v = ((r * 31 + t * 17 + e) % 997) as f64 - 498.5;
                entries.push(([3 * r + e / 3, 3 * c + e % 3], v));
            }
        }
    }
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    for k in (1..entries.len()).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        entries.swap(k, (s % (k as u64 + 1)) as usize);
    }
    (3 * rows, entries)
}

/// BSR assembled from coarse groups frees each group once it is built, so the groups and the
/// values are never all held together: the peak is twice the values (their pieces and the
/// joined array), not the groups' 12 bytes an entry on top of them (2.5x the result before).
/// CSR's output, as large as the groups, starts at three quarters of the entries and grows
/// once the groups read by then are freed: about 1.75x (2.01x with the whole output next to
/// all the groups). Issue 12's target: at most 2x.
#[test]
fn assembly_peak_memory_is_at_most_twice_the_result() {
    let (n, entries) = shuffled_blocks();
    // the peak of one assembly over its result's bytes, and the number of values stored
    let ratio = |assemble: &dyn Fn() -> (usize, usize)| {
        let ((result, values), extra) = peak_extra(assemble);
        assert_eq!(values, entries.len());
        extra as f64 / result as f64
    };
    let bsr = ratio(&|| {
        let b = Bsr3::<f64>::from_coo([n, n], entries.iter().copied()).unwrap();
        (b.memory_bytes(), b.values().len())
    });
    assert!(bsr <= 2.0, "Bsr3: peak extra {bsr:.2}x its result");
    let csr = ratio(&|| {
        let c = Csr::<f64>::from_coo([n, n], entries.iter().copied()).unwrap();
        (c.memory_bytes(), c.values().len())
    });
    assert!(csr < 1.85, "Csr: peak extra {csr:.2}x its result");
}
