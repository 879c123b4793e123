//! Side-by-side SpMV (`y = A·x`, f64, single thread): the formats `sparse_format!` generates,
//! the dynamic storage, and the peers sprs, nalgebra-sparse and faer, on real SuiteSparse
//! matrices plus one synthetic large matrix, all in one criterion binary so that ratios between
//! implementations are measured under the same machine conditions.
//!
//! ```text
//! cargo bench --manifest-path bench/Cargo.toml            # everything (a few minutes)
//! cargo bench --manifest-path bench/Cargo.toml -- bcsstk16 # one matrix (criterion filter)
//! ```
//!
//! Matrices are read from `../../shared/data` relative to this crate (the shared data beside
//! the checkout) or from `$SPARSE_BENCH_DATA`.
//!
//! Setup (not timed) builds every implementation from the same `CooTensor`, runs one SpMV with
//! each and panics unless every y matches our generated CSR's y to 1e-12, componentwise relative
//! to `(|A|·|x|)_i` (the scale of the row's terms, so cancellation cannot inflate the ratio).
//!
//! After each matrix's criterion group, an interleaved round robin (every implementation timed
//! in turn, many rounds, median per implementation) prints a markdown table of medians and ratios
//! to our Csr: on a loaded machine those ratios are steadier than ratios of criterion medians
//! taken a minute apart. `SPARSE_BENCH_NO_INTERLEAVE=1` skips it.
//!
//! Each benchmark's criterion throughput is the bytes the implementation must at least read and
//! write per SpMV: its own storage arrays (positions/pointers, coordinates/indices, values) plus
//! x and y, so criterion's GB/s column is an effective-bandwidth estimate.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use sparse::dsl::parse::parse_encoding;
use sparse::runtime::{CooTensor, DynamicStorage};
use sparse_bench::{block_diagonal, load};

sparse::sparse_format! {
    /// Compressed sparse row with 32-bit positions and coordinates.
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// CSR with 16-bit coordinates (only when the matrix has at most 65,536 columns).
    pub Csr16 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16 }>;
    /// Block sparse row, 2x2 blocks (only when both dimensions are even).
    pub Bsr = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense), posWidth = 32, crdWidth = 32 }>;
    /// Sorted coordinate format, coordinates array-of-structs (default widths).
    pub Coo = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>;
}

/// The encoding the dynamic storage interprets: the same CSR as `Csr`.
const DYN_CSR: &str =
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>";

/// The real matrices (west0067 is too small to time meaningfully).
const MATRICES: [&str; 4] = ["cryg2500", "bcsstk13", "bayer10", "bcsstk16"];
/// Copies of bcsstk16 on the diagonal of the synthetic matrix.
const KRON_COPIES: usize = 20;

/// A plain CSR (rows sorted, columns sorted within a row, duplicates summed) built independently
/// of our storage, from which the peers are constructed.
struct PlainCsr {
    nrows: usize,
    ncols: usize,
    row_ptr: Vec<usize>,
    col_idx: Vec<usize>,
    values: Vec<f64>,
}

impl PlainCsr {
    fn from_coo(coo: &CooTensor<f64>) -> Self {
        let (nrows, ncols) = (coo.shape[0], coo.shape[1]);
        let mut order: Vec<usize> = (0..coo.len()).collect();
        order.sort_by_key(|&e| (coo.coords[2 * e], coo.coords[2 * e + 1]));
        let mut row_ptr = vec![0usize; nrows + 1];
        let mut col_idx: Vec<usize> = Vec::with_capacity(order.len());
        let mut values: Vec<f64> = Vec::with_capacity(order.len());
        let mut last: Option<(usize, usize)> = None;
        for e in order {
            let (i, j) = (coo.coords[2 * e], coo.coords[2 * e + 1]);
            if last == Some((i, j)) {
                *values.last_mut().expect("a previous entry") += coo.values[e];
            } else {
                row_ptr[i + 1] += 1;
                col_idx.push(j);
                values.push(coo.values[e]);
                last = Some((i, j));
            }
        }
        for i in 0..nrows {
            row_ptr[i + 1] += row_ptr[i];
        }
        PlainCsr {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
        }
    }

    fn nnz(&self) -> usize {
        self.values.len()
    }

    /// `(|A|·|x|)_i`, the scale each row's sum is compared against.
    fn abs_product(&self, x: &[f64]) -> Vec<f64> {
        (0..self.nrows)
            .map(|i| {
                (self.row_ptr[i]..self.row_ptr[i + 1])
                    .map(|p| (self.values[p] * x[self.col_idx[p]]).abs())
                    .sum()
            })
            .collect()
    }

    fn csr_u32(&self) -> (Vec<u32>, Vec<u32>) {
        let u = |v: &[usize]| {
            v.iter()
                .map(|&k| u32::try_from(k).expect("fits in u32"))
                .collect::<Vec<u32>>()
        };
        (u(&self.row_ptr), u(&self.col_idx))
    }
}

/// Panics unless `y` matches `reference` componentwise to 1e-12 relative to `scale`.
fn verify(matrix: &str, name: &str, y: &[f64], reference: &[f64], scale: &[f64]) {
    assert_eq!(
        y.len(),
        reference.len(),
        "{matrix}: {name}: y has {} elements, expected {}",
        y.len(),
        reference.len()
    );
    let mut worst = (0.0f64, 0usize);
    for (i, ((a, b), s)) in y.iter().zip(reference).zip(scale).enumerate() {
        let err = (a - b).abs();
        let rel = if *s > 0.0 {
            err / s
        } else if err == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        if rel.is_nan() || rel > worst.0 {
            worst = (rel, i);
        }
    }
    if worst.0.is_nan() || worst.0 > 1e-12 {
        let i = worst.1;
        panic!(
            "{matrix}: {name} disagrees with our Csr: y[{i}] = {:e}, Csr gives {:e} (relative difference {:.3e} > 1e-12)",
            y[i], reference[i], worst.0
        );
    }
}

fn bench_matrix(c: &mut Criterion, label: &str, coo: &CooTensor<f64>) {
    let plain = PlainCsr::from_coo(coo);
    let (m, n) = (plain.nrows, plain.ncols);
    let x: Vec<f64> = (0..n).map(|j| 1.0 + (j % 7) as f64).collect();
    let scale = plain.abs_product(&x);
    let vec_bytes = 8 * (m + n);
    eprintln!("{label}: {m} x {n}, nnz = {}", plain.nnz());

    // ---- ours: generated CSR (the reference every other y is checked against) ----
    let csr = Csr::<f64>::from_coo_tensor(coo).unwrap_or_else(|e| panic!("{label}: Csr: {e}"));
    assert_eq!(
        csr.nse(),
        plain.nnz(),
        "{label}: Csr stores a different number of entries"
    );
    let mut y_ref = vec![0.0; m];
    csr.spmv(&x, &mut y_ref).expect("operand lengths match");
    // Our Csr against the independent plain CSR (same summation order, so to 1e-12 as well).
    let mut y_plain = vec![0.0; m];
    for (i, yi) in y_plain.iter_mut().enumerate() {
        *yi = (plain.row_ptr[i]..plain.row_ptr[i + 1])
            .map(|p| plain.values[p] * x[plain.col_idx[p]])
            .sum();
    }
    verify(label, "plain reference CSR", &y_plain, &y_ref, &scale);

    let csr16 = match Csr16::<f64>::from_coo_tensor(coo) {
        Ok(a) => Some(a),
        Err(e) => {
            eprintln!("{label}: Csr16 skipped: {e}");
            None
        }
    };
    let bsr = match Bsr::<f64>::from_coo_tensor(coo) {
        Ok(a) => Some(a),
        Err(e) => {
            eprintln!("{label}: Bsr skipped: {e}");
            None
        }
    };
    let coo_s = Coo::<f64>::from_coo_tensor(coo).unwrap_or_else(|e| panic!("{label}: Coo: {e}"));
    let enc = parse_encoding(DYN_CSR)
        .unwrap_or_else(|d| panic!("{label}: dynamic CSR encoding: {d:?}"))
        .encoding;
    let dynamic = DynamicStorage::<f64>::from_coo(&enc, coo)
        .unwrap_or_else(|e| panic!("{label}: DynamicStorage: {e}"));

    // ---- peers, built from the plain CSR ----
    let (rp32, ci32) = plain.csr_u32();
    let sprs_csr: sprs::CsMatI<f64, u32, u32> =
        sprs::CsMatI::new((m, n), rp32.clone(), ci32.clone(), plain.values.clone());
    let na_csr = nalgebra_sparse::CsrMatrix::try_from_csr_data(
        m,
        n,
        plain.row_ptr.clone(),
        plain.col_idx.clone(),
        plain.values.clone(),
    )
    .unwrap_or_else(|e| panic!("{label}: nalgebra-sparse CsrMatrix: {e}"));
    let faer_csr = faer::sparse::SparseRowMat::<u32, f64>::new(
        faer::sparse::SymbolicSparseRowMat::new_checked(m, n, rp32.clone(), None, ci32.clone()),
        plain.values.clone(),
    );
    let faer_csc = faer_csr
        .as_ref()
        .to_col_major()
        .unwrap_or_else(|e| panic!("{label}: faer to_col_major: {e:?}"));

    // ---- every implementation as (name, storage bytes, y = A·x) ----
    let sprs_bytes = 4 * (m + 1) + 4 * plain.nnz() + 8 * plain.nnz();
    let na_bytes = 8 * (m + 1) + 8 * plain.nnz() + 8 * plain.nnz();
    let faer_csc_bytes = 4 * (n + 1) + 12 * plain.nnz();
    let ok = |r: Result<(), sparse::runtime::StorageError>| r.expect("operand lengths match");
    let mut impls: Vec<Impl<'_>> = vec![Impl::new(
        "ours Csr (u32,u32)",
        csr.memory_bytes(),
        |x, y| ok(csr.spmv(x, y)),
    )];
    if let Some(a) = &csr16 {
        impls.push(Impl::new(
            "ours Csr16 (u32,u16)",
            a.memory_bytes(),
            |x, y| ok(a.spmv(x, y)),
        ));
    }
    if let Some(a) = &bsr {
        impls.push(Impl::new("ours Bsr 2x2", a.memory_bytes(), |x, y| {
            ok(a.spmv(x, y))
        }));
    }
    impls.push(Impl::new("ours Coo", coo_s.memory_bytes(), |x, y| {
        ok(coo_s.spmv(x, y))
    }));
    impls.push(Impl::new(
        "ours DynamicStorage csr",
        dynamic.memory_bytes(),
        |x, y| ok(dynamic.spmv(x, y)),
    ));
    impls.push(Impl::new("sprs CsMatI<u32>", sprs_bytes, |x, y| {
        sprs_spmv(&sprs_csr, x, y)
    }));
    impls.push(Impl::new("nalgebra-sparse CsrMatrix", na_bytes, |x, y| {
        nalgebra_spmv(&na_csr, x, y)
    }));
    impls.push(Impl::new("faer SparseRowMat<u32>", sprs_bytes, |x, y| {
        faer_spmv_csr(&faer_csr, x, y)
    }));
    impls.push(Impl::new(
        "faer SparseColMat<u32>",
        faer_csc_bytes,
        |x, y| faer_spmv_csc(&faer_csc, x, y),
    ));

    // ---- one untimed run each, checked against our Csr (y starts as NaN: must be overwritten) ----
    let mut y = vec![0.0; m];
    for imp in impls.iter_mut() {
        y.iter_mut().for_each(|v| *v = f64::NAN);
        (imp.run)(&x, &mut y);
        verify(label, imp.name, &y, &y_ref, &scale);
    }

    // ---- timed: criterion, one benchmark per implementation ----
    let mut group = c.benchmark_group(label);
    for imp in impls.iter_mut() {
        group.throughput(Throughput::Bytes((imp.bytes + vec_bytes) as u64));
        let run = &mut imp.run;
        group.bench_function(imp.name, |b| {
            b.iter(|| run(black_box(&x), black_box(&mut y)))
        });
    }
    group.finish();

    // ---- timed: interleaved round robin, so every implementation sees the same machine load ----
    // Skipped with SPARSE_BENCH_NO_INTERLEAVE set, or when a criterion filter names another matrix.
    let filtered_out = std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !label.contains(a.as_str()));
    if std::env::var_os("SPARSE_BENCH_NO_INTERLEAVE").is_none() && !filtered_out {
        interleaved(label, &mut impls, &x, &mut y, vec_bytes);
    }
}

/// The SpMV of one implementation, `y = A·x`.
type RunSpmv<'a> = Box<dyn FnMut(&[f64], &mut [f64]) + 'a>;

/// One implementation under test.
struct Impl<'a> {
    name: &'static str,
    /// Bytes of its storage arrays.
    bytes: usize,
    run: RunSpmv<'a>,
}

impl<'a> Impl<'a> {
    fn new(name: &'static str, bytes: usize, run: impl FnMut(&[f64], &mut [f64]) + 'a) -> Self {
        Impl {
            name,
            bytes,
            run: Box::new(run),
        }
    }
}

/// Round robin over all implementations (each round times a short batch of each, in turn) until
/// `INTERLEAVE_TIME` has passed and at least `INTERLEAVE_MIN_ROUNDS` rounds ran; prints the median
/// per implementation and its ratio to our Csr. On a loaded machine this ratio is steadier than
/// the ratio of two criterion medians measured a minute apart.
fn interleaved(label: &str, impls: &mut [Impl<'_>], x: &[f64], y: &mut [f64], vec_bytes: usize) {
    const INTERLEAVE_TIME: Duration = Duration::from_secs(3);
    const INTERLEAVE_MIN_ROUNDS: usize = 7;
    const BATCH: Duration = Duration::from_micros(300);
    // Calibrate: calls per batch so that one batch takes about BATCH.
    let reps: Vec<u32> = impls
        .iter_mut()
        .map(|imp| {
            let s = Instant::now();
            (imp.run)(x, y);
            let t = s.elapsed().max(Duration::from_nanos(1));
            (BATCH.as_nanos() / t.as_nanos()).clamp(1, 10_000) as u32
        })
        .collect();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); impls.len()];
    let start = Instant::now();
    let mut rounds = 0;
    while rounds < INTERLEAVE_MIN_ROUNDS || start.elapsed() < INTERLEAVE_TIME {
        for (k, imp) in impls.iter_mut().enumerate() {
            let s = Instant::now();
            for _ in 0..reps[k] {
                (imp.run)(black_box(x), black_box(&mut *y));
            }
            samples[k].push(s.elapsed().as_secs_f64() / f64::from(reps[k]));
        }
        rounds += 1;
    }
    let medians: Vec<f64> = samples
        .iter_mut()
        .map(|v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect();
    println!("\ninterleaved {label} ({rounds} rounds):");
    println!("| matrix | implementation | median | GB/s | vs ours Csr |");
    println!("|---|---|---:|---:|---:|");
    for (imp, t) in impls.iter().zip(&medians) {
        let time = if *t >= 1e-3 {
            format!("{:.2} ms", t * 1e3)
        } else {
            format!("{:.1} µs", t * 1e6)
        };
        let gbs = (imp.bytes + vec_bytes) as f64 / t / 1e9;
        println!(
            "| {label} | {} | {time} | {gbs:.1} | {:.2}x |",
            imp.name,
            t / medians[0]
        );
    }
}

/// sprs: what `&CsMat * &Array1` runs (`mul_acc_mat_vec_csr` into a zeroed vector), into a
/// caller-owned y instead of a freshly allocated one.
fn sprs_spmv(a: &sprs::CsMatI<f64, u32, u32>, x: &[f64], y: &mut [f64]) {
    y.iter_mut().for_each(|v| *v = 0.0);
    sprs::prod::mul_acc_mat_vec_csr(a.view(), x, &mut *y);
}

/// nalgebra-sparse: what `&CsrMatrix * &DVector` runs (a zeroed output, then the serial spmm
/// kernel with y = 0·y + 1·A·x), into a caller-owned y. The zeroing is needed: the kernel reads
/// y and 0·NaN is NaN, so without it y would not be overwritten whatever it held.
fn nalgebra_spmv(a: &nalgebra_sparse::CsrMatrix<f64>, x: &[f64], y: &mut [f64]) {
    use nalgebra::{DMatrixView, DMatrixViewMut};
    use nalgebra_sparse::ops::{serial::spmm_csr_dense, Op};
    let (m, n) = (y.len(), x.len());
    y.iter_mut().for_each(|v| *v = 0.0);
    spmm_csr_dense(
        0.0,
        DMatrixViewMut::from_slice(y, m, 1),
        1.0,
        Op::NoOp(a),
        Op::NoOp(DMatrixView::from_slice(x, n, 1)),
    );
}

/// faer: `sparse_dense_matmul` with a row-major sparse matrix (a dot product per row).
fn faer_spmv_csr(a: &faer::sparse::SparseRowMat<u32, f64>, x: &[f64], y: &mut [f64]) {
    use faer::{Accum, ColMut, ColRef, Par};
    faer::sparse::linalg::matmul::sparse_dense_matmul(
        ColMut::from_slice_mut(y).as_mat_mut(),
        Accum::Replace,
        a.as_ref(),
        ColRef::from_slice(x).as_mat(),
        1.0,
        Par::Seq,
    );
}

/// faer: `sparse_dense_matmul` with a column-major sparse matrix (an axpy per column).
fn faer_spmv_csc(a: &faer::sparse::SparseColMat<u32, f64>, x: &[f64], y: &mut [f64]) {
    use faer::{Accum, ColMut, ColRef, Par};
    faer::sparse::linalg::matmul::sparse_dense_matmul(
        ColMut::from_slice_mut(y).as_mat_mut(),
        Accum::Replace,
        a.as_ref(),
        ColRef::from_slice(x).as_mat(),
        1.0,
        Par::Seq,
    );
}

fn spmv(c: &mut Criterion) {
    for name in MATRICES {
        let coo = load(name);
        bench_matrix(c, name, &coo);
    }
    let base = load("bcsstk16");
    let big = block_diagonal(&base, KRON_COPIES);
    bench_matrix(c, "synthetic kron(I20,bcsstk16)", &big);
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(700))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! { name = benches; config = config(); targets = spmv }
criterion_main!(benches);
