//! The performance report of record (issue 12), in one command and one process:
//!
//! ```text
//! cargo bench --manifest-path bench/Cargo.toml --bench report     # about a minute here
//! ```
//!
//! Measures every kernel against its peers on the shared matrices (cryg2500, bcsstk16; SpGEMM,
//! A + Aᵀ and the conversion also on bcsstk13, jagmesh7, west0067 and bayer10) and the
//! DRAM-bound synthetic `kron(I_40, bcsstk16)`, each group of implementations timed interleaved
//! (`sparse_bench::interleave`) together with the bandwidth probes, checks every result against
//! a peer first, then writes the section of `BENCHMARKS.md` between the report markers and the
//! plot `bench/report.svg` (`sparse_bench::report`). A missing matrix file is reported and
//! skipped. `SPARSE_BENCH_SECONDS` sets the time per group (default 3). `SPARSE_BENCH_PIN=1`
//! pins rayon's threads one per CPU (`sparse_bench::pin_rayon_threads`); the report of record
//! does not: a parallel kernel's calling thread runs a range itself, and with the workers
//! pinned the scheduler can leave it on the CPU of the worker running the other range
//! (`spmv_par` of bcsstk16 at 0.88x the serial kernel pinned, 1.92x unpinned, in a scratch
//! run).

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use sparse::runtime::generated::DenseOrder;
use sparse::runtime::CooTensor;
use sparse_bench::report::{self, Bound, Machine, Measure, Probes};
use sparse_bench::{block_diagonal, data_dir, interleave, pin_rayon_threads, sprs_csr, Timed};

sparse::sparse_format! {
    /// CSR, 32-bit positions and coordinates.
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// CSR with 16-bit coordinates (matrices of at most 65,536 columns).
    pub Csr16 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16 }>;
    /// CSC, 32-bit positions and coordinates (the conversion's target).
    pub Csc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 32, crdWidth = 32 }>;
    /// BSR with 3x3 blocks (bcsstk16 has 3 unknowns per node).
    pub Bsr3 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 3 : dense, j floordiv 3 : compressed, i mod 3 : dense, j mod 3 : dense), posWidth = 32, crdWidth = 32 }>;
    /// ELL with 5 slots per row (cryg2500's rows hold at most 5 entries).
    pub Ell5 = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 5 * i : dense, i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// 2:4 structured sparsity: at most 2 entries in every group of 4 columns of a row.
    pub Nv24 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 8 }>;
    /// Row-major dense (SpMM's operands).
    pub Dense = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>;
    pub kernel spgemm(c: &mut Csr<f64>, a: &Csr<f64>, b: &Csr<f64>) { c(i, j) = a(i, k) * b(k, j) }
    pub kernel add(c: &mut Csr<f64>, a: &Csr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel spmm(c: &mut Dense<f64>, a: &Csr<f64>, b: &Dense<f64>) { c(i, j) = a(i, k) * b(k, j) }
    /// The built-in `spmv`'s statement declared as a user kernel (issue 12: every kernel the
    /// sparsifier generates meets the built-ins' numbers).
    pub kernel spmv_declared(y: &mut [f64], a: &Csr<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
}

/// Dense columns of SpMM.
const K: usize = 16;
/// Copies of bcsstk16 on the diagonal of the DRAM-bound matrix.
const KRON_COPIES: usize = 40;
/// `f64` elements of each probe array (128 MB: far past the caches).
const PROBE_LEN: usize = 1 << 24;
/// The label of the synthetic matrix.
const KRON: &str = "kron(I40,bcsstk16) (synthetic, from HB/bcsstk16)";
/// Copies of bcsstk16 whose columns the folded DRAM-bound matrix keeps ([`fold_columns`]):
/// 13 x 4,884 = 63,492 columns, within 16-bit coordinates.
const FOLD_COPIES: usize = 13;
/// The label of the folded matrix.
const FOLDED: &str = "kron(I40,bcsstk16), columns mod 63492 (synthetic, from HB/bcsstk16)";
/// The label of the synthetic 2:4 matrix ([`two_of_four`]).
const NM: &str = "2:4 layer 2048x4096 (synthetic)";

/// The kernels' bytes models, printed in the report.
const MODELS: [(&str, &str); 10] = [
    ("SpMV", "nnz·(value + coordinate bytes) + (rows+1)·position bytes + x + y (each read or written once)"),
    ("SpMV ELL, 2:4", "the format's stored arrays (`memory_bytes`: positions, coordinates, values with their padding) + x + y"),
    ("SpMV transposed", "as SpMV (`y = Aᵀ·x`: A read once, x read, y written); 2 threads: CSC's (positions per column), against the two-thread probe"),
    ("SpMV BSR 3x3", "blocks·(9 values + 1 coordinate) + (block rows+1)·position bytes + x + y"),
    ("SpMV 2 threads", "as SpMV (BSR: as BSR 3x3), against the two-thread probe"),
    ("SpMM k=16", "nnz·12 + (rows+1)·4 + B (cols·16·8) + C (rows·16·8): B read once"),
    ("SpGEMM A·A, A + Aᵀ", "none (not bound by one read stream): time and ratio only"),
    ("COO→CSR assembly", "triplets read (nnz·(2·8 + 8)) + CSR written (nnz·12 + (rows+1)·4); BSR: the same triplets + BSR written (`memory_bytes`)"),
    ("CSR→CSC conversion", "CSR read + CSC written (each nnz·12 + (n+1)·4)"),
    ("probes", "read: 2^24 u64 summed as two streams (its halves side by side, as a dot product reads two vectors); triad: three arrays of 2^24 f64 (a = b + s·c); two threads' scaling: eight chains of multiply-adds (about 100 µs) on the calling thread, against a copy there and one on a thread of rayon's pool (2 × one ÷ two)"),
];

/// Seconds each interleaved group runs (at least 7 rounds).
fn group_time() -> Duration {
    let s = std::env::var("SPARSE_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(3.0);
    Duration::from_secs_f64(s)
}

/// The probes' data: `read` for the read probes (non-zero: pages of zeros may all map to one
/// shared page, which stays in cache), `a`, `b`, `c` for the triad, and `chains`, the
/// iterations of [`chains`] that take about 100 µs on this machine.
struct ProbeArrays {
    read: Vec<u64>,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    chains: u64,
}

impl ProbeArrays {
    fn new() -> Self {
        let v: Vec<f64> = (0..PROBE_LEN).map(|k| (k % 7) as f64).collect();
        ProbeArrays {
            read: vec![1; PROBE_LEN],
            a: vec![1.0; PROBE_LEN],
            b: v.clone(),
            c: v,
            chains: chains_for(Duration::from_micros(100)),
        }
    }
}

/// Work in registers alone: eight independent chains of multiply-adds, `n` steps each (no
/// load or store in the loop).
fn chains(n: u64) -> f64 {
    let mut a = [1.0f64; 8];
    for i in 0..n {
        let d = 1e-9 * i as f64;
        for x in &mut a {
            *x = *x * 1.000_000_1 + d;
        }
    }
    a.iter().sum()
}

/// The steps of [`chains`] that take at least `t` on this machine (doubling from 2^10).
fn chains_for(t: Duration) -> u64 {
    let mut n = 1u64 << 10;
    loop {
        let start = std::time::Instant::now();
        black_box(chains(black_box(n)));
        if start.elapsed() >= t {
            return n;
        }
        n *= 2;
    }
}

/// A read-only pass over `x` as two streams, its halves side by side (as a dot product reads
/// its two vectors): a wrapping integer sum, which the compiler vectorizes with no chain of
/// dependent adds (a float sum would be ordered).
fn sum(x: &[u64]) -> u64 {
    let (lo, hi) = x.split_at(x.len() / 2);
    lo.iter()
        .zip(hi)
        .fold(0u64, |s, (&a, &b)| s.wrapping_add(a).wrapping_add(b))
}

/// The probes as five timed closures; their medians give [`Probes`].
fn probe_impls(p: &mut ProbeArrays) -> Vec<Timed<'_>> {
    let ProbeArrays {
        read,
        a,
        b,
        c,
        chains: n,
    } = p;
    let (read, b, c, n): (&[u64], &[f64], &[f64], u64) = (read, b, c, *n);
    vec![
        (
            "probe: read, 1 thread",
            Box::new(move || {
                black_box(sum(black_box(read)));
            }),
        ),
        (
            "probe: read, 2 threads",
            Box::new(move || {
                // as a parallel kernel runs: the calling thread reads one half while a
                // thread of rayon's pool reads the other
                let (lo, hi) = read.split_at(read.len() / 2);
                let mut x = 0;
                let y = sparse::runtime::rayon::in_place_scope(|s| {
                    s.spawn(|_| x = sum(lo));
                    sum(hi)
                });
                black_box(x.wrapping_add(y));
            }),
        ),
        (
            "probe: STREAM triad",
            Box::new(move || {
                for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                    *a = b + 3.0 * c;
                }
                black_box(&a);
            }),
        ),
        (
            "probe: chains, 1 thread",
            Box::new(move || {
                black_box(chains(black_box(n)));
            }),
        ),
        (
            "probe: chains, 2 threads",
            Box::new(move || {
                // as a parallel kernel runs: one copy on the calling thread, one on a thread
                // of rayon's pool
                let mut x = 0.0;
                let y = sparse::runtime::rayon::in_place_scope(|s| {
                    s.spawn(|_| x = chains(black_box(n)));
                    chains(black_box(n))
                });
                black_box(x + y);
            }),
        ),
    ]
}

/// Runs `impls` and the probes interleaved; returns the kernels' medians and adds the
/// probes' GB/s and two-thread scaling to `seen`.
fn run_group<'a>(
    label: &str,
    mut impls: Vec<Timed<'a>>,
    probes: &'a mut ProbeArrays,
    seen: &mut Vec<Probes>,
) -> Vec<f64> {
    let kernels = impls.len();
    impls.extend(probe_impls(probes));
    let (rounds, medians) = interleave(&mut impls, group_time(), Duration::from_millis(2));
    let bytes = (PROBE_LEN * 8) as f64;
    seen.push(Probes {
        read_1: bytes / medians[kernels] / 1e9,
        read_2: bytes / medians[kernels + 1] / 1e9,
        triad: 3.0 * bytes / medians[kernels + 2] / 1e9,
        two_threads: 2.0 * medians[kernels + 3] / medians[kernels + 4],
    });
    eprintln!("{label}: {rounds} rounds");
    for ((name, _), t) in impls.iter().zip(&medians) {
        eprintln!("  {name}: {}", report::time(*t));
    }
    medians[..kernels].to_vec()
}

/// The report's run: the probe arrays every group times, each group's probes (GB/s: read on
/// one thread, on two, triad; two threads' scaling) and the measures so far.
struct Run {
    probes: ProbeArrays,
    seen: Vec<Probes>,
    measures: Vec<Measure>,
}

impl Run {
    /// Runs one group (which calls [`run_group`] once) and keeps its measures, each with the
    /// probes timed in that group's own rounds, so its percent of bound compares times taken
    /// in the same seconds.
    fn group(&mut self, group: impl FnOnce(&mut ProbeArrays, &mut Vec<Probes>) -> Vec<Measure>) {
        let measures = group(&mut self.probes, &mut self.seen);
        let own = self.seen.last().copied();
        self.measures
            .extend(measures.into_iter().map(|m| Measure { probes: own, ..m }));
    }
}

/// Panics unless `got` equals `want` to 1e-12 relative to max(|want|, 1), elementwise.
fn check(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs().max(1.0),
            "{what}: element {k}: {g} vs {w}"
        );
    }
}

/// Panics unless `got` equals `want` to 1e-12 relative to max(`scale`, 1) elementwise, `scale`
/// the sum of the terms' magnitudes (`|A|·|x|` for a product): the error bound of a sum in
/// any order, as a row whose terms cancel (bcsstk16's) is summed in another order by the
/// reassociated built-in SpMV than by the peer.
fn check_sum(what: &str, got: &[f64], want: &[f64], scale: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (k, ((g, w), s)) in got.iter().zip(want).zip(scale).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * s.max(1.0),
            "{what}: element {k}: {g} vs {w} (terms' magnitude {s})"
        );
    }
}

/// The entries of a matrix that are not zero, sorted by `(row, column)`.
fn nonzero_sorted(entries: impl Iterator<Item = ([usize; 2], f64)>) -> Vec<([usize; 2], f64)> {
    let mut v: Vec<([usize; 2], f64)> = entries.filter(|&(_, x)| x != 0.0).collect();
    v.sort_by_key(|&(c, _)| c);
    v
}

/// Panics unless `got` and `want` hold the same non-zero entries (coordinates exactly, values
/// to 1e-12 relative to max(|want|, 1)): the dense check without the dense arrays, so
/// bayer10's 13,436 x 13,436 product is checked too.
fn check_entries(
    what: &str,
    got: impl Iterator<Item = ([usize; 2], f64)>,
    want: impl Iterator<Item = ([usize; 2], f64)>,
) {
    let (got, want) = (nonzero_sorted(got), nonzero_sorted(want));
    assert_eq!(got.len(), want.len(), "{what}: non-zero entries");
    for ((gc, g), (wc, w)) in got.iter().zip(&want) {
        assert_eq!(gc, wc, "{what}: coordinates");
        assert!(
            (g - w).abs() <= 1e-12 * w.abs().max(1.0),
            "{what}: entry {gc:?}: {g} vs {w}"
        );
    }
}

/// A sprs matrix's entries as `([row, column], value)`.
fn sprs_entries(a: &sprs::CsMat<f64>) -> impl Iterator<Item = ([usize; 2], f64)> + '_ {
    a.iter().map(|(v, (i, j))| ([i, j], *v))
}

/// Reads `name.mtx` from the shared data, or says why not.
fn read(name: &str) -> Option<CooTensor<f64>> {
    let path = data_dir().join(format!("{name}.mtx"));
    match sparse::runtime::mmio::read_matrix_market(&path) {
        Ok(mm) => Some(mm.tensor),
        Err(e) => {
            eprintln!("skipping {name}: cannot read {}: {e}", path.display());
            None
        }
    }
}

/// faer's row-major matrix over copies of CSR arrays (`m x n`, 32-bit indices).
fn faer_rows<T>(
    m: usize,
    n: usize,
    pos: &[u32],
    crd: &[u32],
    values: Vec<T>,
) -> faer::sparse::SparseRowMat<u32, T> {
    faer::sparse::SparseRowMat::new(
        faer::sparse::SymbolicSparseRowMat::new_checked(m, n, pos.to_vec(), None, crd.to_vec()),
        values,
    )
}

/// The peers' copies of one CSR matrix.
struct Peers {
    /// sprs, 32-bit indices.
    sprs: sprs::CsMatI<f64, u32, u32>,
    /// nalgebra-sparse (`usize` indices).
    nalgebra: nalgebra_sparse::CsrMatrix<f64>,
    /// faer, 32-bit indices.
    faer: faer::sparse::SparseRowMat<u32, f64>,
}

/// `a` as each peer stores it, from the same arrays.
fn peers(a: &Csr<f64>) -> Peers {
    let [m, n] = a.shape();
    let (pos, crd) = (&a.pos_1, &a.crd_1);
    Peers {
        sprs: sprs::CsMatI::new((m, n), pos.clone(), crd.clone(), a.values().to_vec()),
        nalgebra: nalgebra_sparse::CsrMatrix::try_from_csr_data(
            m,
            n,
            pos.iter().map(|&p| p as usize).collect(),
            crd.iter().map(|&c| c as usize).collect(),
            a.values().to_vec(),
        )
        .expect("nalgebra-sparse"),
        faer: faer_rows(m, n, pos, crd, a.values().to_vec()),
    }
}

/// nalgebra-sparse's `y = op(A)·x` (`spmm_csr_dense` with one column; `y` zeroed inside the
/// timed call, as it reads `y` even with `beta = 0`).
fn nalgebra_spmv(
    a: nalgebra_sparse::ops::Op<&nalgebra_sparse::CsrMatrix<f64>>,
    x: &[f64],
    y: &mut [f64],
) {
    use nalgebra::{DMatrixView, DMatrixViewMut};
    use nalgebra_sparse::ops::{serial::spmm_csr_dense, Op};
    y.iter_mut().for_each(|v| *v = 0.0);
    let (rows, cols) = (y.len(), x.len());
    spmm_csr_dense(
        0.0,
        DMatrixViewMut::from_slice(y, rows, 1),
        1.0,
        a,
        Op::NoOp(DMatrixView::from_slice(black_box(x), cols, 1)),
    );
}

/// faer's SpMV `y = A·x` (`sparse_dense_matmul`, one thread, `y` overwritten).
macro_rules! faer_spmv {
    ($a:expr, $x:expr, $y:expr, $one:expr) => {{
        use faer::{Accum, ColMut, ColRef, Par};
        faer::sparse::linalg::matmul::sparse_dense_matmul(
            ColMut::from_slice_mut($y).as_mat_mut(),
            Accum::Replace,
            $a.as_ref(),
            ColRef::from_slice($x).as_mat(),
            $one,
            Par::Seq,
        )
    }};
}

/// SpMV (f64, f32, 16-bit coordinates, BSR 3x3, two threads) against sprs, nalgebra-sparse and
/// faer on `coo`.
fn spmv_group(
    label: &str,
    coo: &CooTensor<f64>,
    probes: &mut ProbeArrays,
    seen: &mut Vec<Probes>,
) -> Vec<Measure> {
    let a = Csr::from_coo_tensor(coo).expect("Csr");
    let [m, n] = a.shape();
    let nnz = a.values().len();
    let a32: Csr<f32> =
        Csr::from_coo([m, n], a.iter().map(|(c, v)| (c, *v as f32))).expect("Csr<f32>");
    let a16 = (n <= 1 << 16).then(|| Csr16::from_coo_tensor(coo).expect("Csr16"));
    let bsr = (m % 3 == 0 && n % 3 == 0).then(|| Bsr3::from_coo_tensor(coo).expect("Bsr3"));
    let x: Vec<f64> = (0..n).map(|j| 1.0 + (j % 13) as f64 / 8.0).collect();
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    // the peers, from the same arrays
    let Peers {
        sprs: sprs_a,
        nalgebra: na,
        faer: faer_a,
    } = peers(&a);
    let faer_a32 = faer_rows(m, n, &a.pos_1, &a.crd_1, a32.values().to_vec());
    // every result against sprs's before timing
    let mut want = vec![0.0; m];
    sprs::prod::mul_acc_mat_vec_csr(sprs_a.view(), &x, &mut want[..]);
    // |A|·|x|: the error bound of each row's sum
    let mut scale = vec![0.0; m];
    for ([i, j], v) in a.iter() {
        scale[i] += v.abs() * x[j].abs();
    }
    let mut y = vec![f64::NAN; m];
    a.spmv(&x, &mut y).expect("spmv");
    check_sum(&format!("{label} spmv"), &y, &want, &scale);
    a.spmv_par(&x, &mut y).expect("spmv_par");
    check_sum(&format!("{label} spmv_par"), &y, &want, &scale);
    if let Some(b) = &bsr {
        b.spmv(&x, &mut y).expect("bsr spmv");
        check_sum(&format!("{label} Bsr3 spmv"), &y, &want, &scale);
        b.spmv_par(&x, &mut y).expect("bsr spmv_par");
        check_sum(&format!("{label} Bsr3 spmv_par"), &y, &want, &scale);
    }
    if let Some(a16) = &a16 {
        a16.spmv(&x, &mut y).expect("Csr16 spmv");
        check_sum(&format!("{label} Csr16 spmv"), &y, &want, &scale);
    }
    spmv_declared(&mut y, &a, &x).expect("declared spmv");
    check_sum(&format!("{label} declared spmv"), &y, &want, &scale);

    let (mut y1, mut y2, mut y3, mut y4, mut y5, mut y6, mut y7) = (
        vec![0.0; m],
        vec![0.0; m],
        vec![0.0; m],
        vec![0.0; m],
        vec![0.0; m],
        vec![0.0; m],
        vec![0.0; m],
    );
    let (mut z1, mut z2) = (vec![0.0f32; m], vec![0.0f32; m]);
    let mut y8 = vec![0.0; m];
    let mut y9 = vec![0.0; m];
    let mut impls: Vec<Timed<'_>> = vec![
        (
            "ours Csr<f64> (u32) spmv",
            Box::new(|| a.spmv(black_box(&x), &mut y1).expect("spmv")),
        ),
        (
            "sprs CsMatI<u32>",
            Box::new(|| {
                y2.iter_mut().for_each(|v| *v = 0.0);
                sprs::prod::mul_acc_mat_vec_csr(sprs_a.view(), black_box(&x), &mut y2[..]);
            }),
        ),
        (
            "nalgebra-sparse CsrMatrix",
            Box::new(|| nalgebra_spmv(nalgebra_sparse::ops::Op::NoOp(&na), &x, &mut y3)),
        ),
        (
            "faer SparseRowMat<u32>",
            Box::new(|| faer_spmv!(faer_a, &x, &mut y4, 1.0)),
        ),
        (
            "ours Csr<f32> (u32) spmv",
            Box::new(|| a32.spmv(black_box(&x32), &mut z1).expect("spmv f32")),
        ),
        (
            "faer SparseRowMat<u32, f32>",
            Box::new(|| faer_spmv!(faer_a32, &x32, &mut z2, 1.0f32)),
        ),
        (
            "ours Csr<f64> spmv_par",
            Box::new(|| a.spmv_par(black_box(&x), &mut y5).expect("spmv_par")),
        ),
    ];
    if let Some(b) = &bsr {
        impls.push((
            "ours Bsr3 spmv",
            Box::new(|| b.spmv(black_box(&x), &mut y6).expect("bsr")),
        ));
        impls.push((
            "ours Bsr3 spmv_par",
            Box::new(|| b.spmv_par(black_box(&x), &mut y9).expect("bsr spmv_par")),
        ));
    }
    if let Some(a16) = &a16 {
        impls.push((
            "ours Csr16 (u32, u16) spmv",
            Box::new(|| a16.spmv(black_box(&x), &mut y7).expect("csr16")),
        ));
    }
    impls.push((
        "ours spmv (declared kernel)",
        Box::new(|| spmv_declared(&mut y8, black_box(&a), black_box(&x)).expect("declared")),
    ));
    let t = run_group(&format!("{label} SpMV"), impls, probes, seen);
    let vecs = |v: usize| ((n + m) * v) as f64;
    let csr =
        |value: usize, crd: usize| Some((nnz * (value + crd) + (m + 1) * 4) as f64 + vecs(value));
    let peers = vec![
        ("sprs".to_string(), t[1]),
        ("nalgebra-sparse".to_string(), t[2]),
        ("faer".to_string(), t[3]),
    ];
    let measure = |kernel: &str,
                   ours: &str,
                   seconds: f64,
                   bytes: Option<f64>,
                   bound: Bound,
                   peers: Vec<(String, f64)>| Measure {
        probes: None,
        matrix: label.to_string(),
        kernel: kernel.to_string(),
        ours: ours.to_string(),
        seconds,
        bytes,
        bound,
        peers,
    };
    let mut out = vec![
        measure(
            "SpMV f64",
            "Csr (u32)",
            t[0],
            csr(8, 4),
            Bound::OneThread,
            peers,
        ),
        measure(
            "SpMV f32",
            "Csr<f32> (u32)",
            t[4],
            csr(4, 4),
            Bound::OneThread,
            vec![("faer f32".into(), t[5]), ("ours f64".into(), t[0])],
        ),
        measure(
            "SpMV f64, 2 threads",
            "Csr spmv_par",
            t[6],
            csr(8, 4),
            Bound::TwoThreads,
            vec![("ours serial".into(), t[0])],
        ),
    ];
    let mut next = 7;
    if let Some(b) = &bsr {
        let blocks = b.values().len() / 9;
        let bytes = (blocks * (9 * 8 + 4) + (m / 3 + 1) * 4) as f64 + vecs(8);
        out.push(measure(
            "SpMV BSR 3x3",
            "Bsr3 (u32)",
            t[next],
            Some(bytes),
            Bound::OneThread,
            vec![("faer CSR".into(), t[3]), ("ours CSR".into(), t[0])],
        ));
        out.push(measure(
            "SpMV BSR 3x3, 2 threads",
            "Bsr3 spmv_par",
            t[next + 1],
            Some(bytes),
            Bound::TwoThreads,
            vec![
                ("ours BSR serial".into(), t[next]),
                ("ours CSR spmv_par".into(), t[6]),
            ],
        ));
        next += 2;
    }
    if a16.is_some() {
        out.push(measure(
            "SpMV u16 coordinates",
            "Csr16 (u32, u16)",
            t[next],
            csr(8, 2),
            Bound::OneThread,
            vec![("ours u32".into(), t[0]), ("faer".into(), t[3])],
        ));
    }
    out.push(measure(
        "SpMV f64, declared kernel",
        "kernel spmv (generated)",
        t[t.len() - 1],
        csr(8, 4),
        Bound::OneThread,
        vec![("ours built-in".into(), t[0]), ("faer".into(), t[3])],
    ));
    out
}

/// SpGEMM `A·A` and `A + Aᵀ` against sprs, and CSR→CSC conversion against sprs and faer.
fn sparse_group(
    label: &str,
    coo: &CooTensor<f64>,
    probes: &mut ProbeArrays,
    seen: &mut Vec<Probes>,
) -> Vec<Measure> {
    let a = Csr::from_coo_tensor(coo).expect("Csr");
    let [m, n] = a.shape();
    let at = Csr::from_coo([n, m], a.iter().map(|([i, j], v)| ([j, i], *v))).expect("Aᵀ");
    let (sa, sat) = (
        sprs_csr(a.shape(), a.iter().map(|(c, v)| (c, *v))),
        sprs_csr(at.shape(), at.iter().map(|(c, v)| (c, *v))),
    );
    let mut prod = Csr::from_coo([m, n], []).expect("empty");
    spgemm(&mut prod, &a, &a).expect("spgemm");
    check_entries(
        &format!("{label} A·A"),
        prod.iter().map(|(c, v)| (c, *v)),
        sprs_entries(&(&sa * &sa)),
    );
    let mut sum = Csr::from_coo([m, n], []).expect("empty");
    add(&mut sum, &a, &at).expect("add");
    check_entries(
        &format!("{label} A+Aᵀ"),
        sum.iter().map(|(c, v)| (c, *v)),
        sprs_entries(&(&sa + &sat)),
    );
    let csc: Csc<f64> = a.convert().expect("convert");
    check_entries(
        &format!("{label} CSR→CSC"),
        csc.iter().map(|(c, v)| (c, *v)),
        a.iter().map(|(c, v)| (c, *v)),
    );
    let faer_a = faer_rows(m, n, &a.pos_1, &a.crd_1, a.values().to_vec());
    let impls: Vec<Timed<'_>> = vec![
        (
            "ours spgemm (generated)",
            Box::new(|| spgemm(&mut prod, black_box(&a), black_box(&a)).expect("spgemm")),
        ),
        (
            "sprs &a * &a",
            Box::new(|| {
                black_box(&sa * &sa);
            }),
        ),
        (
            "ours add (generated)",
            Box::new(|| add(&mut sum, black_box(&a), black_box(&at)).expect("add")),
        ),
        (
            "sprs &a + &at",
            Box::new(|| {
                black_box(&sa + &sat);
            }),
        ),
        (
            "ours Csr::convert::<Csc>",
            Box::new(|| {
                black_box(a.convert::<Csc<f64>>().expect("convert"));
            }),
        ),
        (
            "sprs to_other_storage",
            Box::new(|| {
                black_box(sa.to_other_storage());
            }),
        ),
        (
            "faer to_col_major",
            Box::new(|| {
                black_box(faer_a.to_col_major().expect("faer"));
            }),
        ),
    ];
    let t = run_group(&format!("{label} sparse"), impls, probes, seen);
    let nnz = a.values().len();
    let convert = ((nnz * 12 + (m + 1) * 4) + (nnz * 12 + (n + 1) * 4)) as f64;
    let m_ =
        |kernel: &str, ours: &str, s: f64, bytes: Option<f64>, peers: Vec<(String, f64)>| Measure {
            probes: None,
            matrix: label.to_string(),
            kernel: kernel.to_string(),
            ours: ours.to_string(),
            seconds: s,
            bytes,
            bound: Bound::OneThread,
            peers,
        };
    vec![
        m_(
            "SpGEMM A·A",
            "spgemm (generated)",
            t[0],
            None,
            vec![("sprs".into(), t[1])],
        ),
        m_(
            "A + Aᵀ",
            "add (generated)",
            t[2],
            None,
            vec![("sprs".into(), t[3])],
        ),
        m_(
            "CSR→CSC conversion",
            "Csr::convert",
            t[4],
            Some(convert),
            vec![("sprs".into(), t[5]), ("faer".into(), t[6])],
        ),
    ]
}

/// `y = Aᵀ·x` (the built-in `spmv_transpose`) against sprs, nalgebra-sparse and faer, each
/// multiplying by the transpose of its CSR matrix without forming it; and the same product
/// from CSC on two threads (`spmv_transpose_par`: the columns split over rayon) against our
/// serial CSR kernel and faer's.
fn transpose_group(
    label: &str,
    coo: &CooTensor<f64>,
    probes: &mut ProbeArrays,
    seen: &mut Vec<Probes>,
) -> Vec<Measure> {
    let a = Csr::from_coo_tensor(coo).expect("Csr");
    let [m, n] = a.shape();
    let nnz = a.values().len();
    let x: Vec<f64> = (0..m).map(|i| 1.0 + (i % 11) as f64 / 8.0).collect();
    let Peers {
        sprs: sprs_a,
        nalgebra: na,
        faer: faer_a,
    } = peers(&a);
    let mut want = vec![0.0; n];
    sprs::prod::mul_acc_mat_vec_csc(sprs_a.transpose_view(), &x, &mut want[..]);
    let mut scale = vec![0.0; n];
    for ([i, j], v) in a.iter() {
        scale[j] += v.abs() * x[i].abs();
    }
    let mut y = vec![f64::NAN; n];
    a.spmv_transpose(&x, &mut y).expect("spmv_transpose");
    check_sum(&format!("{label} spmv_transpose"), &y, &want, &scale);
    // the same product from CSC (each element of `y` a column's sum), split over the threads
    let csc: Csc<f64> = a.convert().expect("convert");
    let mut y = vec![f64::NAN; n];
    csc.spmv_transpose_par(&x, &mut y)
        .expect("spmv_transpose_par");
    check_sum(
        &format!("{label} Csc spmv_transpose_par"),
        &y,
        &want,
        &scale,
    );
    let (mut y1, mut y2, mut y3, mut y4) = (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let mut y5 = vec![0.0; n];
    let impls: Vec<Timed<'_>> = vec![
        (
            "ours Csr spmv_transpose",
            Box::new(|| {
                a.spmv_transpose(black_box(&x), &mut y1)
                    .expect("spmv_transpose")
            }),
        ),
        (
            "sprs transpose_view (CSC) · x",
            Box::new(|| {
                y2.iter_mut().for_each(|v| *v = 0.0);
                sprs::prod::mul_acc_mat_vec_csc(
                    sprs_a.transpose_view(),
                    black_box(&x),
                    &mut y2[..],
                );
            }),
        ),
        (
            "nalgebra-sparse Op::Transpose",
            Box::new(|| nalgebra_spmv(nalgebra_sparse::ops::Op::Transpose(&na), &x, &mut y3)),
        ),
        (
            "faer SparseRowMat<u32>.transpose()",
            Box::new(|| {
                use faer::{Accum, ColMut, ColRef, Par};
                faer::sparse::linalg::matmul::sparse_dense_matmul(
                    ColMut::from_slice_mut(&mut y4).as_mat_mut(),
                    Accum::Replace,
                    faer_a.as_ref().transpose(),
                    ColRef::from_slice(black_box(&x)).as_mat(),
                    1.0,
                    Par::Seq,
                )
            }),
        ),
        (
            "ours Csc spmv_transpose_par",
            Box::new(|| {
                csc.spmv_transpose_par(black_box(&x), &mut y5)
                    .expect("spmv_transpose_par")
            }),
        ),
    ];
    let t = run_group(&format!("{label} SpMV transposed"), impls, probes, seen);
    let bytes = (nnz * 12 + (m + 1) * 4 + (m + n) * 8) as f64;
    // CSC's positions are per column
    let csc_bytes = (nnz * 12 + (n + 1) * 4 + (m + n) * 8) as f64;
    vec![
        Measure {
            probes: None,
            matrix: label.to_string(),
            kernel: "SpMV transposed".into(),
            ours: "Csr spmv_transpose".into(),
            seconds: t[0],
            bytes: Some(bytes),
            bound: Bound::OneThread,
            peers: vec![
                ("sprs".into(), t[1]),
                ("nalgebra-sparse".into(), t[2]),
                ("faer".into(), t[3]),
            ],
        },
        Measure {
            probes: None,
            matrix: label.to_string(),
            kernel: "SpMV transposed, 2 threads".into(),
            ours: "Csc spmv_transpose_par".into(),
            seconds: t[4],
            bytes: Some(csc_bytes),
            bound: Bound::TwoThreads,
            peers: vec![("ours Csr serial".into(), t[0]), ("faer".into(), t[3])],
        },
    ]
}

/// A format other than CSR whose SpMV [`format_spmv_group`] measures.
struct FormatCase<S> {
    /// The kernel's row label (`SpMV ELL`).
    kernel: &'static str,
    /// Our implementation's label.
    ours: &'static str,
    /// The storage of a matrix, `None` when the format cannot hold it.
    build: fn(&CooTensor<f64>) -> Option<S>,
    /// `y = A·x`.
    spmv: fn(&S, &[f64], &mut [f64]),
    /// Bytes of the stored arrays.
    bytes: fn(&S) -> usize,
}

/// The [`FormatCase`] of format `$ty` (a generated struct): built by `from_coo_tensor`, its
/// `spmv`, its `memory_bytes`.
macro_rules! format_case {
    ($kernel:expr, $ours:expr, $ty:ident) => {
        FormatCase {
            kernel: $kernel,
            ours: $ours,
            build: |c| $ty::from_coo_tensor(c).ok(),
            spmv: |f, x, y| f.spmv(x, y).expect(concat!(stringify!($ty), " spmv")),
            bytes: |f| f.memory_bytes(),
        }
    };
}

/// SpMV of a format other than CSR (`Ell5`, `Nv24`) on `coo` against our CSR and faer's of the
/// same entries; nothing when the format cannot hold the matrix.
fn format_spmv_group<S>(
    label: &str,
    case: &FormatCase<S>,
    coo: &CooTensor<f64>,
    probes: &mut ProbeArrays,
    seen: &mut Vec<Probes>,
) -> Vec<Measure> {
    let FormatCase {
        kernel,
        ours,
        build,
        spmv,
        bytes: bytes_of,
    } = *case;
    let Some(f) = build(coo) else {
        eprintln!("{label}: {ours} cannot hold it, skipped");
        return Vec::new();
    };
    let a = Csr::from_coo_tensor(coo).expect("Csr");
    let [m, n] = a.shape();
    let x: Vec<f64> = (0..n).map(|j| 1.0 + (j % 13) as f64 / 8.0).collect();
    let faer_a = faer_rows(m, n, &a.pos_1, &a.crd_1, a.values().to_vec());
    let mut want = vec![0.0; m];
    a.spmv(&x, &mut want).expect("spmv");
    let mut scale = vec![0.0; m];
    for ([i, j], v) in a.iter() {
        scale[i] += v.abs() * x[j].abs();
    }
    let mut y = vec![f64::NAN; m];
    spmv(&f, &x, &mut y);
    check_sum(&format!("{label} {ours} spmv"), &y, &want, &scale);
    let (mut y1, mut y2, mut y3) = (vec![0.0; m], vec![0.0; m], vec![0.0; m]);
    let impls: Vec<Timed<'_>> = vec![
        (ours, Box::new(|| spmv(&f, black_box(&x), &mut y1))),
        (
            "ours Csr<f64> (u32) spmv",
            Box::new(|| a.spmv(black_box(&x), &mut y2).expect("spmv")),
        ),
        (
            "faer SparseRowMat<u32>",
            Box::new(|| faer_spmv!(faer_a, &x, &mut y3, 1.0)),
        ),
    ];
    let t = run_group(&format!("{label} {kernel}"), impls, probes, seen);
    vec![Measure {
        probes: None,
        matrix: label.to_string(),
        kernel: kernel.into(),
        ours: ours.into(),
        seconds: t[0],
        bytes: Some((bytes_of(&f) + (m + n) * 8) as f64),
        bound: Bound::OneThread,
        peers: vec![("ours CSR".into(), t[1]), ("faer CSR".into(), t[2])],
    }]
}

/// `a` (`m x n`) with its columns folded onto the first `copies * b` of them, `b` the column
/// count of one copy of `kron(I_c, B)` (`n / c`): entry `(i, j)` at `(i, j mod (copies * b))`.
/// For `kron(I_40, bcsstk16)` and 13 copies: 195,360 x 63,492, the same rows and entries.
fn fold_columns(a: &CooTensor<f64>, copies: usize) -> CooTensor<f64> {
    let width = a.shape[1] / KRON_COPIES * copies;
    let mut out = CooTensor::new(vec![a.shape[0], width]);
    for (c, v) in a.iter() {
        out.push(&[c[0], c[1] % width], *v);
    }
    out
}

/// A synthetic matrix in 2:4 structured sparsity (the pattern of a pruned neural-network
/// layer, which none of the shared matrices has): `rows x cols`, in every group of 4 columns
/// of a row 2 entries at positions a hash picks, values in (0, 2).
fn two_of_four(rows: usize, cols: usize) -> CooTensor<f64> {
    let mut coo = CooTensor::new(vec![rows, cols]);
    let mut s = 0x853c_49e6_748f_ea9b_u64;
    for i in 0..rows {
        for g in 0..cols / 4 {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let r = (s >> 33) as usize;
            // one of the 6 pairs of 4 columns
            let (a, b) = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)][r % 6];
            let v = |k: usize| 0.25 + ((r >> (8 + 4 * k)) & 15) as f64 / 10.0;
            coo.push(&[i, 4 * g + a], v(0));
            coo.push(&[i, 4 * g + b], v(1));
        }
    }
    coo
}

/// SpMM with 16 dense columns (row-major `B` and `C`) against faer.
fn spmm_group(
    label: &str,
    coo: &CooTensor<f64>,
    probes: &mut ProbeArrays,
    seen: &mut Vec<Probes>,
) -> Vec<Measure> {
    let a = Csr::from_coo_tensor(coo).expect("Csr");
    let [m, n] = a.shape();
    let bvals: Vec<f64> = (0..n * K).map(|k| 1.0 + (k % 11) as f64 / 16.0).collect();
    let b = Dense::from_coo([n, K], (0..n * K).map(|k| ([k / K, k % K], bvals[k]))).expect("B");
    let mut c = Dense::from_coo([m, K], []).expect("C");
    spmm(&mut c, &a, &b).expect("spmm");
    let mut want = vec![0.0; m * K];
    a.spmm(&bvals, &mut want, K, DenseOrder::RowMajor)
        .expect("built-in spmm");
    check(&format!("{label} spmm"), c.values(), &want);
    let faer_a = faer_rows(m, n, &a.pos_1, &a.crd_1, a.values().to_vec());
    let mut fc = vec![0.0; m * K];
    let impls: Vec<Timed<'_>> = vec![
        (
            "ours spmm (generated)",
            Box::new(|| spmm(&mut c, black_box(&a), black_box(&b)).expect("spmm")),
        ),
        (
            "faer sparse_dense_matmul",
            Box::new(|| {
                use faer::{Accum, MatMut, MatRef, Par};
                faer::sparse::linalg::matmul::sparse_dense_matmul(
                    MatMut::from_row_major_slice_mut(&mut fc, m, K),
                    Accum::Replace,
                    faer_a.as_ref(),
                    MatRef::from_row_major_slice(&bvals, n, K),
                    1.0,
                    Par::Seq,
                );
            }),
        ),
    ];
    let t = run_group(&format!("{label} SpMM"), impls, probes, seen);
    let nnz = a.values().len();
    let bytes = (nnz * 12 + (m + 1) * 4 + (n + m) * K * 8) as f64;
    vec![Measure {
        probes: None,
        matrix: label.to_string(),
        kernel: "SpMM k=16".into(),
        ours: "spmm (generated)".into(),
        seconds: t[0],
        bytes: Some(bytes),
        bound: Bound::OneThread,
        peers: vec![("faer".into(), t[1])],
    }]
}

/// COO→CSR and COO→BSR 3x3 assembly from shuffled triplets against sprs's `TriMat::to_csr`
/// (sprs has no BSR; the issue's target for both is 4x its CSR assembly).
fn assembly_group(
    label: &str,
    coo: &CooTensor<f64>,
    probes: &mut ProbeArrays,
    seen: &mut Vec<Probes>,
) -> Vec<Measure> {
    let shape = [coo.shape[0], coo.shape[1]];
    let mut entries: Vec<([usize; 2], f64)> = coo.iter().map(|(c, v)| ([c[0], c[1]], *v)).collect();
    // a fixed shuffle (splitmix64)
    let mut s = 0x5eed_u64;
    for i in (1..entries.len()).rev() {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        entries.swap(i, ((z ^ (z >> 31)) % (i as u64 + 1)) as usize);
    }
    let mut tri = sprs::TriMat::<f64>::with_capacity((shape[0], shape[1]), entries.len());
    for &([i, j], v) in &entries {
        tri.add_triplet(i, j, v);
    }
    let ours = Csr::from_coo(shape, entries.iter().copied()).expect("assembly");
    check(
        &format!("{label} assembly"),
        ours.values(),
        tri.to_csr::<usize>().data(),
    );
    let nnz = ours.values().len();
    drop(ours);
    let bsr = (shape[0].is_multiple_of(3) && shape[1].is_multiple_of(3)).then(|| {
        let b = Bsr3::from_coo(shape, entries.iter().copied()).expect("BSR assembly");
        let want = Bsr3::from_coo_tensor(coo).expect("BSR from the sorted entries");
        check(&format!("{label} BSR assembly"), b.values(), want.values());
        b.memory_bytes()
    });
    let mut impls: Vec<Timed<'_>> = vec![
        (
            "ours Csr::from_coo",
            Box::new(|| {
                black_box(Csr::from_coo(shape, entries.iter().copied()).expect("assembly"));
            }),
        ),
        (
            "sprs TriMat::to_csr",
            Box::new(|| {
                black_box(tri.to_csr::<usize>());
            }),
        ),
    ];
    if bsr.is_some() {
        impls.push((
            "ours Bsr3::from_coo",
            Box::new(|| {
                black_box(Bsr3::from_coo(shape, entries.iter().copied()).expect("BSR assembly"));
            }),
        ));
    }
    let t = run_group(&format!("{label} assembly"), impls, probes, seen);
    let triplets = entries.len() * 24;
    let bytes = (triplets + nnz * 12 + (shape[0] + 1) * 4) as f64;
    let mut out = vec![Measure {
        probes: None,
        matrix: format!("{label}, shuffled triplets"),
        kernel: "COO→CSR assembly".into(),
        ours: "Csr::from_coo".into(),
        seconds: t[0],
        bytes: Some(bytes),
        bound: Bound::OneThread,
        peers: vec![("sprs".into(), t[1])],
    }];
    if let Some(stored) = bsr {
        out.push(Measure {
            probes: None,
            matrix: format!("{label}, shuffled triplets"),
            kernel: "COO→BSR 3x3 assembly".into(),
            ours: "Bsr3::from_coo".into(),
            seconds: t[2],
            bytes: Some((triplets + stored) as f64),
            bound: Bound::OneThread,
            peers: vec![("sprs CSR".into(), t[1]), ("ours CSR".into(), t[0])],
        });
    }
    out
}

/// The machine and the run, for the report's first line.
fn machine(pinned: bool) -> Machine {
    let cmd = |program: &str, args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "unknown".into())
    };
    // the report's own outputs do not make the tree dirty: a second run after a first one
    // measures the same code
    let dirty = !cmd(
        "git",
        &[
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ":(top)",
            ":(exclude,top)BENCHMARKS.md",
            ":(exclude,top)bench/report.svg",
        ],
    )
    .is_empty();
    // the model name alone can hide the core ("AMD EPYC" on a virtual machine): the family
    // and model numbers, and the caches, tell one machine from the next
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split(':').nth(1))
            .map(|v| v.trim().to_string())
    };
    let cache = |index: u32| {
        std::fs::read_to_string(format!(
            "/sys/devices/system/cpu/cpu0/cache/index{index}/size"
        ))
        .ok()
        .map(|s| s.trim().to_string())
    };
    let mut cpu = field("model name").unwrap_or_else(|| "unknown CPU".into());
    if let (Some(family), Some(model)) = (field("cpu family"), field("model")) {
        cpu.push_str(&format!(", family {family} model {model}"));
    }
    if let (Some(l2), Some(l3)) = (cache(2), cache(3)) {
        cpu.push_str(&format!(", L2 {l2} a core, L3 {l3}"));
    }
    Machine {
        date: cmd("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        commit: format!(
            "{}{}",
            cmd("git", &["rev-parse", "--short", "HEAD"]),
            if dirty { "-dirty" } else { "" }
        ),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu,
        rustc: cmd("rustc", &["-V"]),
        pinned,
    }
}

fn main() {
    // `cargo bench` passes `--bench`: the report is whole or nothing, so a filter meant for
    // the other benches (`cargo bench -- bcsstk16`) skips it rather than rewrite the report
    if let Some(f) = std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        eprintln!("report: not run with a filter ({f}); run it alone: cargo bench --manifest-path bench/Cargo.toml --bench report");
        return;
    }
    let pinned =
        std::env::var_os("SPARSE_BENCH_PIN").is_some_and(|v| v == "1") && pin_rayon_threads();
    let started = std::time::Instant::now();
    let mut run = Run {
        probes: ProbeArrays::new(),
        seen: Vec::new(),
        measures: Vec::new(),
    };
    let mut base = None;
    for name in ["cryg2500", "bcsstk16"] {
        let Some(coo) = read(name) else { continue };
        run.group(|p, s| spmv_group(name, &coo, p, s));
        run.group(|p, s| sparse_group(name, &coo, p, s));
        if name == "cryg2500" {
            // ELL where the rows are regular (cryg2500: 4.9 entries a row, at most 5)
            let ell = format_case!("SpMV ELL", "Ell5 (5 slots a row)", Ell5);
            run.group(|p, s| format_spmv_group(name, &ell, &coo, p, s));
        }
        if name == "bcsstk16" {
            run.group(|p, s| transpose_group(name, &coo, p, s));
            run.group(|p, s| spmm_group(name, &coo, p, s));
            base = Some(coo);
        }
    }
    // 2:4 applies to none of the shared matrices (a group of 4 columns of their rows holds up
    // to 4 entries): a synthetic layer of 2,048 x 4,096 pruned to 2 of every 4 columns
    let nm = two_of_four(2048, 4096);
    let nv24 = format_case!("SpMV 2:4", "Nv24 (2:4, u8 coordinates)", Nv24);
    run.group(|p, s| format_spmv_group(NM, &nv24, &nm, p, s));
    // the other square shared matrices: SpGEMM, A + Aᵀ and the conversion (issue 9 asks for
    // "the shared real matrices"; the results are checked entry by entry, so bayer10's
    // 13,436 x 13,436 product needs no dense array)
    for name in ["bcsstk13", "jagmesh7", "west0067", "bayer10"] {
        let Some(coo) = read(name) else { continue };
        run.group(|p, s| sparse_group(name, &coo, p, s));
    }
    if let Some(base) = &base {
        let big = block_diagonal(base, KRON_COPIES);
        run.group(|p, s| spmv_group(KRON, &big, p, s));
        run.group(|p, s| transpose_group(KRON, &big, p, s));
        run.group(|p, s| spmm_group(KRON, &big, p, s));
        run.group(|p, s| assembly_group(KRON, &big, p, s));
        // 16-bit coordinates where they fit, on a matrix as large as kron's: its rows, with
        // the columns of copy `k` those of copy `k mod 13`
        let folded = fold_columns(&big, FOLD_COPIES);
        drop(big);
        let csr16 = format_case!("SpMV u16 coordinates", "Csr16 (u32, u16)", Csr16);
        run.group(|p, s| format_spmv_group(FOLDED, &csr16, &folded, p, s));
    }
    // each probe's median over the groups
    let median = |field: fn(&Probes) -> f64| {
        let mut v: Vec<f64> = run.seen.iter().map(field).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let probe = Probes {
        read_1: median(|p| p.read_1),
        read_2: median(|p| p.read_2),
        triad: median(|p| p.triad),
        two_threads: median(|p| p.two_threads),
    };
    let section = report::markdown(
        &machine(pinned),
        &probe,
        &MODELS,
        &run.measures,
        "bench/report.svg",
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc_path = root.join("../BENCHMARKS.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap_or_default();
    std::fs::write(&doc_path, report::splice(&doc, &section)).expect("write BENCHMARKS.md");
    let svg = report::svg(&run.measures).expect("plot");
    std::fs::write(root.join("report.svg"), svg).expect("write bench/report.svg");
    println!("{section}");
    eprintln!(
        "wrote {} and {} in {:.0} s",
        doc_path.display(),
        root.join("report.svg").display(),
        started.elapsed().as_secs_f64()
    );
}
