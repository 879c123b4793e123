//! COO -> CSR (and BSR 3x3) assembly from shuffled triplets, side by side with the peers (issue
//! 12): our generated `Csr::from_coo` (u32 positions and coordinates) and `Bsr3::from_coo`
//! against sprs's `TriMat::to_csr` (usize indices, and `TriMatI<f64, u32>`) and faer's
//! `SparseRowMat::<u32, f64>::try_new_from_triplets`, on the DRAM-bound `kron(I_40, bcsstk16)`
//! ("synthetic, from HB/bcsstk16": 195,360 rows, about 11.6M stored entries) with its triplets
//! shuffled by a fixed seed.
//!
//! ```text
//! cargo bench --manifest-path bench/Cargo.toml --bench assembly
//! ```
//!
//! Every result is checked against sprs's before anything is timed. Then criterion times each
//! implementation, an interleaved round robin (each in turn, several rounds, medians) prints the
//! time ratios, and one more run of each under a counting global allocator prints its peak
//! extra memory (the most bytes allocated at once during the call, above what was allocated
//! before it, the input included in the baseline) against the bytes of its own result and of
//! ours. The input is borrowed by every implementation (ours reads `entries.iter().copied()`);
//! the memory table also shows ours consuming an owned `Vec` of the entries (freed as it is read).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

use sparse_bench::{block_diagonal, interleave, load, Timed};

sparse::sparse_format! {
    /// Compressed sparse row with 32-bit positions and coordinates.
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// Block sparse row, 3x3 blocks, 32-bit positions and coordinates.
    pub Bsr3 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 3 : dense, j floordiv 3 : compressed, i mod 3 : dense, j mod 3 : dense), posWidth = 32, crdWidth = 32 }>;
}

/// Copies of bcsstk16 on the diagonal of the DRAM-bound matrix.
const KRON_COPIES: usize = 40;
/// Seed of the shuffle of the triplets.
const SEED: u64 = 0x5eed_0012;

/// The system allocator, counting the bytes live now and the most live at once.
struct Counting;

/// Bytes allocated and not yet freed.
static CURRENT: AtomicUsize = AtomicUsize::new(0);
/// The largest `CURRENT` since the last [`reset_peak`] (a `realloc` counts old and new blocks
/// together, as both exist while it copies).
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(live_at_once: usize) {
    PEAK.fetch_max(live_at_once, Relaxed);
}

// SAFETY: every call is forwarded to `System` with the same arguments; only counters change.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            grew(CURRENT.fetch_add(l.size(), Relaxed) + l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(l);
        if !p.is_null() {
            grew(CURRENT.fetch_add(l.size(), Relaxed) + l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        CURRENT.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        grew(CURRENT.load(Relaxed) + new);
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            CURRENT.fetch_add(new, Relaxed);
            CURRENT.fetch_sub(l.size(), Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Starts a peak measurement: returns the bytes live now (the baseline).
fn reset_peak() -> usize {
    let now = CURRENT.load(Relaxed);
    PEAK.store(now, Relaxed);
    now
}

/// Runs `f` once and returns its result and the peak extra bytes it allocated (above the bytes
/// live when it started).
fn peak_extra<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = reset_peak();
    let out = f();
    (out, PEAK.load(Relaxed).saturating_sub(base))
}

/// `v` shuffled (Fisher-Yates, splitmix64 from `seed`): the same order on every run.
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut s = seed;
    let mut next = move || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for i in (1..v.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

/// Times `impls` interleaved (`sparse_bench::interleave`: about 20 s, at least 7 rounds, one
/// run per turn) and prints the median of each and the ratio `its time ÷ first's time` (the
/// first is ours: above 1 means ours is that many times faster).
fn interleaved(label: &str, impls: &mut [Timed<'_>]) {
    let (rounds, medians) = interleave(impls, Duration::from_secs(20), Duration::ZERO);
    println!("\ninterleaved {label} ({rounds} rounds):");
    println!("| implementation | median | time ÷ first (ours Csr) |");
    println!("|---|---:|---:|");
    for ((name, _), t) in impls.iter().zip(&medians) {
        println!("| {name} | {:.1} ms | {:.2} |", t * 1e3, t / medians[0]);
    }
}

/// Panics unless our CSR holds exactly sprs's rows, columns and values (in storage order).
fn check_csr(ours: &Csr<f64>, reference: &sprs::CsMat<f64>) {
    assert_eq!(ours.shape(), [reference.rows(), reference.cols()], "shape");
    let mut n = 0;
    for (([i, j], v), (w, (ri, rj))) in ours.iter().zip(reference.iter()) {
        assert_eq!((i, j), (ri, rj), "entry {n}: coordinates");
        assert_eq!(v.to_bits(), w.to_bits(), "entry {n} ({i}, {j}): value");
        n += 1;
    }
    assert_eq!(n, reference.nnz(), "number of entries");
}

/// Panics unless the BSR's entries that are not zero are exactly the CSR's.
fn check_bsr(bsr: &Bsr3<f64>, csr: &Csr<f64>) {
    let mut got: Vec<([usize; 2], f64)> = bsr
        .iter()
        .filter(|(_, v)| **v != 0.0)
        .map(|(c, v)| (c, *v))
        .collect();
    got.sort_by_key(|e| e.0);
    let want: Vec<([usize; 2], f64)> = csr
        .iter()
        .filter(|(_, v)| **v != 0.0)
        .map(|(c, v)| (c, *v))
        .collect();
    assert!(got == want, "Bsr3 entries differ from Csr's");
}

/// The assembly benchmarks on `kron(I_40, bcsstk16)` with shuffled triplets.
fn assembly(c: &mut Criterion) {
    let label = "kron(I40,bcsstk16) (synthetic, from HB/bcsstk16), shuffled triplets";
    let big = block_diagonal(&load("bcsstk16"), KRON_COPIES);
    let shape = [big.shape[0], big.shape[1]];
    let mut entries: Vec<([usize; 2], f64)> = big.iter().map(|(c, v)| ([c[0], c[1]], *v)).collect();
    drop(big);
    shuffle(&mut entries, SEED);
    let (m, n) = (shape[0], shape[1]);
    let mut tri = sprs::TriMat::<f64>::with_capacity((m, n), entries.len());
    let mut tri32 = sprs::TriMatI::<f64, u32>::with_capacity((m, n), entries.len());
    for &([i, j], v) in &entries {
        tri.add_triplet(i, j, v);
        tri32.add_triplet(i, j, v);
    }
    let triplets: Vec<faer::sparse::Triplet<u32, u32, f64>> = entries
        .iter()
        .map(|&([i, j], v)| faer::sparse::Triplet::new(i as u32, j as u32, v))
        .collect();
    println!(
        "\n{label}: {m} x {n}, {} triplets (shuffled, seed {SEED:#x})",
        entries.len()
    );

    // ---- correctness, before anything is timed ----
    let ours = Csr::from_coo(shape, entries.iter().copied()).expect("Csr::from_coo");
    let reference = tri.to_csr::<usize>();
    check_csr(&ours, &reference);
    let bsr = Bsr3::from_coo(shape, entries.iter().copied()).expect("Bsr3::from_coo");
    check_bsr(&bsr, &ours);
    let faer_rows = faer::sparse::SparseRowMat::<u32, f64>::try_new_from_triplets(m, n, &triplets)
        .expect("faer matrix");
    assert_eq!(faer_rows.compute_nnz(), ours.values().len(), "faer nnz");
    let nnz = ours.values().len();
    let csr_bytes = ours.memory_bytes();
    let bsr_bytes = bsr.memory_bytes();
    drop((reference, faer_rows));
    println!(
        "stored: Csr {nnz} entries, {:.1} MB; Bsr3 {} values, {:.1} MB",
        csr_bytes as f64 / 1e6,
        bsr.values().len(),
        bsr_bytes as f64 / 1e6
    );

    // ---- criterion ----
    let mut g = c.benchmark_group(label);
    g.sample_size(10);
    g.bench_function("ours Csr::from_coo (u32)", |b| {
        b.iter(|| Csr::from_coo(shape, entries.iter().copied()).expect("assembly"))
    });
    g.bench_function("ours Bsr3::from_coo (u32)", |b| {
        b.iter(|| Bsr3::from_coo(shape, entries.iter().copied()).expect("assembly"))
    });
    g.bench_function("sprs TriMat::to_csr (usize)", |b| {
        b.iter(|| tri.to_csr::<usize>())
    });
    g.bench_function("sprs TriMatI<u32>::to_csr", |b| {
        b.iter(|| tri32.to_csr::<u32>())
    });
    g.bench_function("faer SparseRowMat<u32>::try_new_from_triplets", |b| {
        b.iter(|| {
            faer::sparse::SparseRowMat::<u32, f64>::try_new_from_triplets(m, n, &triplets)
                .expect("faer")
        })
    });
    g.finish();

    // ---- interleaved ratios ----
    let mut impls: Vec<Timed<'_>> = vec![
        (
            "ours Csr::from_coo (u32)",
            Box::new(|| {
                black_box(Csr::from_coo(shape, entries.iter().copied()).expect("assembly"));
            }),
        ),
        (
            "ours Bsr3::from_coo (u32)",
            Box::new(|| {
                black_box(Bsr3::from_coo(shape, entries.iter().copied()).expect("assembly"));
            }),
        ),
        (
            "sprs TriMat::to_csr (usize)",
            Box::new(|| {
                black_box(tri.to_csr::<usize>());
            }),
        ),
        (
            "sprs TriMatI<u32>::to_csr",
            Box::new(|| {
                black_box(tri32.to_csr::<u32>());
            }),
        ),
        (
            "faer SparseRowMat<u32>::try_new_from_triplets",
            Box::new(|| {
                black_box(
                    faer::sparse::SparseRowMat::<u32, f64>::try_new_from_triplets(m, n, &triplets)
                        .expect("faer"),
                );
            }),
        ),
    ];
    interleaved(label, &mut impls);
    drop(impls);

    // ---- peak extra memory ----
    println!("\npeak extra memory during one call ({label}):");
    println!("| implementation | result bytes | peak extra | ÷ its result | ÷ ours Csr result |");
    println!("|---|---:|---:|---:|---:|");
    let row = |name: &str, result: usize, extra: usize| {
        println!(
            "| {name} | {:.1} MB | {:.1} MB | {:.2} | {:.2} |",
            result as f64 / 1e6,
            extra as f64 / 1e6,
            extra as f64 / result as f64,
            extra as f64 / csr_bytes as f64
        );
    };
    let (r, extra) = peak_extra(|| Csr::from_coo(shape, entries.iter().copied()).expect("Csr"));
    row("ours Csr::from_coo (u32)", r.memory_bytes(), extra);
    drop(r);
    let owned = entries.clone();
    let (r, extra) = peak_extra(|| Csr::from_coo(shape, owned).expect("Csr"));
    row(
        "ours Csr::from_coo (u32), owned Vec input",
        r.memory_bytes(),
        extra,
    );
    drop(r);
    let (r, extra) = peak_extra(|| Bsr3::from_coo(shape, entries.iter().copied()).expect("Bsr"));
    row("ours Bsr3::from_coo (u32)", r.memory_bytes(), extra);
    drop(r);
    let (r, extra) = peak_extra(|| tri.to_csr::<usize>());
    let bytes = 8 * (r.indptr().len() + r.indices().len() + r.data().len());
    row("sprs TriMat::to_csr (usize)", bytes, extra);
    drop(r);
    let (r, extra) = peak_extra(|| tri32.to_csr::<u32>());
    let bytes = 4 * (r.indptr().len() + r.indices().len()) + 8 * r.data().len();
    row("sprs TriMatI<u32>::to_csr", bytes, extra);
    drop(r);
    let (r, extra) = peak_extra(|| {
        faer::sparse::SparseRowMat::<u32, f64>::try_new_from_triplets(m, n, &triplets)
            .expect("faer")
    });
    let bytes = 4 * (m + 1 + r.compute_nnz()) + 8 * r.compute_nnz();
    row(
        "faer SparseRowMat<u32>::try_new_from_triplets",
        bytes,
        extra,
    );
}

/// Short criterion settings (10 samples, 1 s warm-up, 5 s): the interleaved table carries the
/// ratios.
fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
}

criterion_group! {
    name = benches;
    config = config();
    targets = assembly
}
criterion_main!(benches);
