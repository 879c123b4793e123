//! Shared helpers of the benchmarks in `benches/` (`spmv.rs`, `kernels.rs`, `assembly.rs`):
//! where the shared matrices are, how they are read, and the DRAM-bound synthetic matrix
//! `kron(I_copies, A)` built from one of them. See README.md.

pub mod report;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use sparse::runtime::mmio::read_matrix_market;
use sparse::runtime::CooTensor;

/// The directory of the shared Matrix Market files: `$SPARSE_BENCH_DATA` if set, else
/// `../shared/data` beside the checkout (relative to this package's manifest directory).
pub fn data_dir() -> PathBuf {
    match std::env::var_os("SPARSE_BENCH_DATA") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"),
    }
}

/// Reads `NAME.mtx` from [`data_dir`] as a COO tensor of shape `[rows, columns]` (symmetric
/// files expanded by the reader into both triangles).
///
/// Panics (benchmark setup only) if the file is absent or unreadable, naming the path and
/// `SPARSE_BENCH_DATA`.
pub fn load(name: &str) -> CooTensor<f64> {
    let path = data_dir().join(format!("{name}.mtx"));
    match read_matrix_market(&path) {
        Ok(mm) => mm.tensor,
        Err(e) => panic!(
            "cannot read {} (set SPARSE_BENCH_DATA to the directory holding the .mtx files): {e}",
            path.display()
        ),
    }
}

/// `kron(I_copies, a)`: `copies` copies of the matrix `a` (shape `[m, n]`) on the block
/// diagonal, shape `[m * copies, n * copies]`, `copies` times `a`'s entries, copy `k` holding
/// entry `(i, j)` of `a` at `(k * m + i, k * n + j)`; entries in copy order, each copy in `a`'s
/// order.
pub fn block_diagonal(a: &CooTensor<f64>, copies: usize) -> CooTensor<f64> {
    let [m, n] = [a.shape[0], a.shape[1]];
    let mut out = CooTensor::new(vec![m * copies, n * copies]);
    out.coords.reserve(a.coords.len() * copies);
    out.values.reserve(a.values.len() * copies);
    for k in 0..copies {
        for (c, v) in a.iter() {
            out.push(&[k * m + c[0], k * n + c[1]], *v);
        }
    }
    out
}

/// Builds rayon's global pool with one thread per CPU, thread `i` pinned to CPU `i` (Linux;
/// elsewhere the pool is left as rayon builds it). On a small virtual machine the scheduler
/// may otherwise leave both threads of a parallel kernel on one CPU for milliseconds after a
/// one-thread run beside them (seen: `spmv_par` of bcsstk16 at 170 µs against 57 µs, 2 vCPUs,
/// when the calling thread slept while the pool ran every range). Now that the calling thread
/// runs a range itself, pinning the workers hurts instead: the scheduler may leave the
/// (unpinned) calling thread on the CPU of the worker running the other range (scratch runs:
/// `spmv_par` of `kron(I_40, bcsstk16)` at 1.00x the serial kernel pinned, 1.89x unpinned),
/// so the report pins only with `SPARSE_BENCH_PIN=1`. Returns whether the threads were pinned.
pub fn pin_rayon_threads() -> bool {
    #[cfg(target_os = "linux")]
    {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        sparse::runtime::rayon::ThreadPoolBuilder::new()
            .num_threads(cpus)
            .start_handler(|i| {
                // SAFETY: a zeroed `cpu_set_t` is the empty set; `sched_setaffinity(0, ...)`
                // reads it and changes only the calling thread
                unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(i, &mut set);
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                }
            })
            .build_global()
            .is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// One implementation in an interleaved round robin: its name and one run.
pub type Timed<'a> = (&'a str, Box<dyn FnMut() + 'a>);

/// Times `impls` in turn, round after round, for at least `time` and 7 rounds, so that drift
/// on a shared machine hits all of them alike. A turn runs an implementation `reps` times,
/// `reps` chosen once from a warm call so that a turn lasts about `batch` (at most 1000; 1
/// when `batch` is zero), after untimed calls for about `batch` too (at least one) unless
/// `batch` is zero: the caches, a parallel kernel's threads and the CPUs they run on are warm
/// when the timing starts, whatever ran before. The bandwidth probes read far more than the
/// caches hold: without a call first, the kernel timed first after them, one call a turn, ran
/// 12% slower than the same code timed later (BSR SpMV of `kron(I_40, bcsstk16)`). And a CPU
/// left idle through a serial turn takes about 2 ms to come back to speed on a shared virtual
/// machine: bcsstk16's `spmv_par` after 2 ms of serial SpMV ran its first 20-25 calls in 70-100
/// µs, the later ones in 55-58 µs (a Zen 2, scratch, four rounds), so a turn after one warm
/// call timed mostly that ramp. Returns the number of rounds and each implementation's median
/// seconds per run.
pub fn interleave(impls: &mut [Timed<'_>], time: Duration, batch: Duration) -> (usize, Vec<f64>) {
    let reps: Vec<u32> = impls
        .iter_mut()
        .map(|(_, f)| {
            if batch.is_zero() {
                return 1;
            }
            // a warm call first: a cold one (a parallel kernel waking its thread pool) would
            // make turns of one or two calls, each paying the wake-up again
            f();
            let s = Instant::now();
            f();
            let t = s.elapsed().max(Duration::from_nanos(1));
            (batch.as_nanos() / t.as_nanos()).clamp(1, 1000) as u32
        })
        .collect();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); impls.len()];
    let start = Instant::now();
    let mut rounds = 0;
    while rounds < 7 || start.elapsed() < time {
        for (k, (_, f)) in impls.iter_mut().enumerate() {
            if !batch.is_zero() {
                let warm = Instant::now();
                f();
                while warm.elapsed() < batch {
                    f();
                }
            }
            let s = Instant::now();
            for _ in 0..reps[k] {
                f();
            }
            samples[k].push(s.elapsed().as_secs_f64() / f64::from(reps[k]));
        }
        rounds += 1;
    }
    let medians = samples
        .iter_mut()
        .map(|v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect();
    (rounds, medians)
}

/// sprs's CSR (`CsMat<f64>`, usize indices) of `entries` (any order; duplicates summed), shape
/// `[rows, columns]`: the peer's side of a comparison, built through its own `TriMat`.
pub fn sprs_csr(
    shape: [usize; 2],
    entries: impl IntoIterator<Item = ([usize; 2], f64)>,
) -> sprs::CsMat<f64> {
    let mut tri = sprs::TriMat::new((shape[0], shape[1]));
    for ([i, j], v) in entries {
        tri.add_triplet(i, j, v);
    }
    tri.to_csr()
}

/// The dense row-major array (`rows * columns` elements) of a sprs matrix.
pub fn sprs_dense(a: &sprs::CsMat<f64>) -> Vec<f64> {
    let (m, n) = a.shape();
    let mut d = vec![0.0; m * n];
    for (v, (i, j)) in a.iter() {
        d[i * n + j] += *v;
    }
    d
}
