//! The sparsifier's kernels side by side with the peers (issue 9): SpGEMM `C = A·A` and
//! sparse + sparse `C = A + Aᵀ` against sprs, SpMM with 16 dense columns against faer, and the
//! generated CSR SpMV kernel against the built-in `Csr::spmv` (itself generated), the parallel
//! built-in `Csr::spmv_par` and faer, all in one process.
//!
//! ```text
//! cargo bench --manifest-path bench/Cargo.toml --bench kernels              # everything, ~1.5 min
//! cargo bench --manifest-path bench/Cargo.toml --bench kernels -- spgemm    # one kind of section
//! ```
//!
//! A filter (a plain substring of the group names printed, e.g. `spgemm`, `add`, `spmv`,
//! `spmm`, `bcsstk16`, `synthetic`) also skips the setup, checks and interleaved tables of the
//! sections it does not select.
//!
//! Every result is checked against the peer's before anything is timed (to 1e-12 relative to
//! the scale of the terms). Then criterion times each kernel, and an interleaved round robin
//! (each implementation in turn, many rounds, medians) prints the ratios, which hold on a
//! loaded machine better than criterion medians taken a minute apart.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

use sparse::runtime::generated::DenseOrder;
use sparse::runtime::CooTensor;
use sparse_bench::{block_diagonal, interleave, load, sprs_csr, sprs_dense, Timed};

sparse::sparse_format! {
    /// Compressed sparse row with 32-bit positions and coordinates.
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// Row-major dense.
    pub Dense = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>;
    pub kernel spmv(y: &mut [f64], a: &Csr<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel spgemm(c: &mut Csr<f64>, a: &Csr<f64>, b: &Csr<f64>) { c(i, j) = a(i, k) * b(k, j) }
    pub kernel add(c: &mut Csr<f64>, a: &Csr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel spmm(c: &mut Dense<f64>, a: &Csr<f64>, b: &Dense<f64>) { c(i, j) = a(i, k) * b(k, j) }
}

/// Dense columns of the SpMM operand.
const K: usize = 16;
/// Copies of bcsstk16 on the diagonal of the DRAM-bound matrix.
const KRON_COPIES: usize = 40;

/// The transpose of `a` as a COO tensor.
fn transpose(a: &CooTensor<f64>) -> CooTensor<f64> {
    let mut t = CooTensor::new(vec![a.shape[1], a.shape[0]]);
    for (c, v) in a.iter() {
        t.push(&[c[1], c[0]], *v);
    }
    t
}

/// faer's column-major sparse matrix of our `Csr`.
fn to_faer(a: &Csr<f64>) -> faer::sparse::SparseColMat<usize, f64> {
    let [m, n] = a.shape();
    let triplets: Vec<faer::sparse::Triplet<usize, usize, f64>> = a
        .iter()
        .map(|([i, j], v)| faer::sparse::Triplet::new(i, j, *v))
        .collect();
    faer::sparse::SparseColMat::try_new_from_triplets(m, n, &triplets).expect("faer matrix")
}

/// faer's row-major sparse matrix of our `Csr`.
fn to_faer_rows(a: &Csr<f64>) -> faer::sparse::SparseRowMat<usize, f64> {
    let [m, n] = a.shape();
    let triplets: Vec<faer::sparse::Triplet<usize, usize, f64>> = a
        .iter()
        .map(|([i, j], v)| faer::sparse::Triplet::new(i, j, *v))
        .collect();
    faer::sparse::SparseRowMat::try_new_from_triplets(m, n, &triplets).expect("faer matrix")
}

/// Panics unless `got` equals `want` to 1e-12 relative to `scale` (per element).
fn check(what: &str, got: &[f64], want: &[f64], scale: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (k, ((g, w), s)) in got.iter().zip(want).zip(scale).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * s.abs().max(1.0),
            "{what}: element {k}: {g} vs {w}"
        );
    }
}

/// Times `impls` interleaved (`sparse_bench::interleave`: about 3 s, at least 7 rounds, turns
/// of about 2 ms) and prints the median of each and its time divided by the first's (the first
/// is ours: a ratio above 1 means ours is that many times faster, below 1 that ours is slower).
fn interleaved(label: &str, impls: &mut [Timed<'_>]) {
    let (rounds, medians) = interleave(impls, Duration::from_secs(3), Duration::from_millis(2));
    println!("\ninterleaved {label} ({rounds} rounds):");
    println!("| kernel | implementation | median | time ÷ first |");
    println!("|---|---|---:|---:|");
    for ((name, _), t) in impls.iter().zip(&medians) {
        let time = if *t >= 1e-3 {
            format!("{:.2} ms", t * 1e3)
        } else {
            format!("{:.1} µs", t * 1e6)
        };
        println!("| {label} | {name} | {time} | {:.2} |", t / medians[0]);
    }
}

/// The first positional argument of the bench binary, criterion's filter
/// (`cargo bench --bench kernels -- FILTER`), if any.
fn filter() -> Option<String> {
    std::env::args().skip(1).find(|a| !a.starts_with('-'))
}

/// Whether the section whose criterion group is `group` runs: no filter, or the filter is a
/// substring of the group's name. Lets a filtered run skip the setup, the checks and the
/// interleaved timing of the sections it does not select, not only their criterion groups.
fn wanted(group: &str) -> bool {
    match filter() {
        Some(f) => group.contains(&f),
        None => true,
    }
}

/// SpGEMM `A·A` and `A + Aᵀ` on `coo`, ours against sprs, each checked against sprs first.
fn sparse_sparse(c: &mut Criterion, label: &str, coo: &CooTensor<f64>) {
    let (mul_group, add_group) = (format!("{label} spgemm A·A"), format!("{label} add A+Aᵀ"));
    let a = Csr::from_coo_tensor(coo).expect("Csr");
    let sa = sprs_csr(a.shape(), a.iter().map(|(c, v)| (c, *v)));
    let shape = a.shape();

    if wanted(&mul_group) {
        let mut prod = Csr::from_coo(shape, []).expect("empty");
        spgemm(&mut prod, &a, &a).expect("spgemm");
        let want = sprs_dense(&(&sa * &sa));
        check(&mul_group, &prod.to_dense().expect("dense"), &want, &want);
        drop(want);

        let mut g = c.benchmark_group(&mul_group);
        g.bench_function("ours spgemm (generated)", |b| {
            b.iter(|| spgemm(&mut prod, black_box(&a), black_box(&a)).expect("spgemm"))
        });
        g.bench_function("sprs &a * &a", |b| {
            b.iter(|| black_box(&sa) * black_box(&sa))
        });
        g.finish();
        interleaved(
            &mul_group,
            &mut [
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
            ],
        );
    }

    if wanted(&add_group) {
        let at = Csr::from_coo_tensor(&transpose(coo)).expect("Csr of the transpose");
        let sat = sprs_csr(at.shape(), at.iter().map(|(c, v)| (c, *v)));
        let mut sum = Csr::from_coo(shape, []).expect("empty");
        add(&mut sum, &a, &at).expect("add");
        let want = sprs_dense(&(&sa + &sat));
        check(&add_group, &sum.to_dense().expect("dense"), &want, &want);
        drop(want);

        let mut g = c.benchmark_group(&add_group);
        g.bench_function("ours add (generated)", |b| {
            b.iter(|| add(&mut sum, black_box(&a), black_box(&at)).expect("add"))
        });
        g.bench_function("sprs &a + &at", |b| {
            b.iter(|| black_box(&sa) + black_box(&sat))
        });
        g.finish();
        interleaved(
            &add_group,
            &mut [
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
            ],
        );
    }
}

/// SpMV and SpMM (16 columns) on `coo`: the generated kernels and the built-ins against faer.
fn sparse_dense(c: &mut Criterion, label: &str, coo: &CooTensor<f64>) {
    use faer::{Accum, ColMut, ColRef, MatMut, MatRef, Par};
    let (spmv_group, spmm_group) = (format!("{label} spmv"), format!("{label} spmm k=16"));
    if !wanted(&spmv_group) && !wanted(&spmm_group) {
        return;
    }
    let a = Csr::from_coo_tensor(coo).expect("Csr");
    let (fa, far) = (to_faer(&a), to_faer_rows(&a));
    let [m, n] = a.shape();
    let x: Vec<f64> = (0..n).map(|j| 1.0 + (j % 7) as f64).collect();
    let mut y = vec![f64::NAN; m];
    let mut y_ref = vec![0.0; m];
    a.spmv(&x, &mut y_ref).expect("spmv");
    spmv(&mut y, &a, &x).expect("spmv kernel");
    // |A|·|x|: the error bound of a row's sum in any order (the built-in reassociates its
    // sums in four partial sums, the kernel adds in the statement's order)
    let mut scale = vec![0.0; m];
    for ([i, j], v) in a.iter() {
        scale[i] += v.abs() * x[j].abs();
    }
    check(
        &format!("{label}: the kernel and the built-in"),
        &y,
        &y_ref,
        &scale,
    );
    let mut yf = vec![0.0; m];
    let faer_spmv = |y: &mut [f64]| {
        faer::sparse::linalg::matmul::sparse_dense_matmul(
            ColMut::from_slice_mut(y).as_mat_mut(),
            Accum::Replace,
            far.as_ref(),
            ColRef::from_slice(&x).as_mat(),
            1.0,
            Par::Seq,
        )
    };
    faer_spmv(&mut yf);
    check(&format!("{label} spmv"), &y, &yf, &scale);
    // the parallel built-in: nnz-balanced row ranges on rayon's threads (2 on this machine)
    let mut y_par = vec![f64::NAN; m];
    a.spmv_par(&x, &mut y_par).expect("spmv_par");
    assert_eq!(y_par, y_ref, "{label}: spmv_par and spmv in the same order");

    // B: n x K; ours column-major like faer, and row-major through the kernel
    let b_cols: Vec<f64> = (0..n * K).map(|f| 1.0 + ((f * 7) % 11) as f64).collect();
    let b_rows: Vec<f64> = (0..n * K).map(|f| b_cols[(f % K) * n + f / K]).collect();
    let mut c_cols = vec![f64::NAN; m * K];
    a.spmm(&b_cols, &mut c_cols, K, DenseOrder::ColMajor)
        .expect("spmm");
    let mut cf = vec![0.0; m * K];
    let faer_spmm = |c: &mut [f64]| {
        faer::sparse::linalg::matmul::sparse_dense_matmul(
            MatMut::from_column_major_slice_mut(c, m, K),
            Accum::Replace,
            fa.as_ref(),
            MatRef::from_column_major_slice(&b_cols, n, K),
            1.0,
            Par::Seq,
        )
    };
    faer_spmm(&mut cf);
    check(&format!("{label} spmm"), &c_cols, &cf, &cf);
    let db = Dense::from_dense([n, K], &b_rows).expect("dense B");
    let mut dc = Dense::from_dense([m, K], &vec![1.0; m * K]).expect("dense C");
    spmm(&mut dc, &a, &db).expect("spmm kernel");
    let c_rows = dc.to_dense().expect("dense");
    let cf_rows: Vec<f64> = (0..m * K).map(|f| cf[(f % K) * m + f / K]).collect();
    check(&format!("{label} spmm kernel"), &c_rows, &cf_rows, &cf_rows);
    // faer on the same layouts as our kernel: CSR A, row-major B and C
    let mut cfr = vec![0.0; m * K];
    let faer_spmm_rows = |c: &mut [f64]| {
        faer::sparse::linalg::matmul::sparse_dense_matmul(
            MatMut::from_row_major_slice_mut(c, m, K),
            Accum::Replace,
            far.as_ref(),
            MatRef::from_row_major_slice(&b_rows, n, K),
            1.0,
            Par::Seq,
        )
    };
    faer_spmm_rows(&mut cfr);
    check(&format!("{label} spmm faer rows"), &c_rows, &cfr, &cfr);
    let mut c_rows_buf = vec![f64::NAN; m * K];
    a.spmm(&b_rows, &mut c_rows_buf, K, DenseOrder::RowMajor)
        .expect("spmm");
    check(
        &format!("{label} Csr::spmm row-major"),
        &c_rows_buf,
        &cfr,
        &cfr,
    );

    let mut g = c.benchmark_group(&spmv_group);
    g.bench_function("ours spmv kernel (generated)", |b| {
        b.iter(|| spmv(&mut y, black_box(&a), black_box(&x)).expect("spmv"))
    });
    g.bench_function("ours Csr::spmv (built-in, generated)", |b| {
        b.iter(|| a.spmv(black_box(&x), &mut y).expect("spmv"))
    });
    g.bench_function("faer SparseRowMat", |b| b.iter(|| faer_spmv(&mut yf)));
    g.bench_function("ours Csr::spmv_par (2 threads, generated)", |b| {
        b.iter(|| a.spmv_par(black_box(&x), &mut y_par).expect("spmv_par"))
    });
    g.finish();
    let mut g = c.benchmark_group(&spmm_group);
    g.bench_function("ours spmm kernel, row-major Dense (generated)", |b| {
        b.iter(|| spmm(&mut dc, black_box(&a), black_box(&db)).expect("spmm"))
    });
    g.bench_function("ours Csr::spmm col-major (built-in)", |b| {
        b.iter(|| {
            a.spmm(black_box(&b_cols), &mut c_cols, K, DenseOrder::ColMajor)
                .expect("spmm")
        })
    });
    g.bench_function("faer SparseColMat × col-major MatRef", |b| {
        b.iter(|| faer_spmm(&mut cf))
    });
    g.bench_function("faer SparseRowMat × row-major MatRef", |b| {
        b.iter(|| faer_spmm_rows(&mut cfr))
    });
    g.finish();

    if wanted(&spmv_group) {
        interleaved(
            &spmv_group,
            &mut [
                (
                    "ours spmv kernel (generated)",
                    Box::new(|| spmv(&mut y, black_box(&a), black_box(&x)).expect("spmv")),
                ),
                (
                    "ours Csr::spmv (built-in)",
                    Box::new(|| a.spmv(black_box(&x), &mut y_ref).expect("spmv")),
                ),
                ("faer SparseRowMat", Box::new(|| faer_spmv(&mut yf))),
                (
                    "ours Csr::spmv_par (2 threads, generated)",
                    Box::new(|| a.spmv_par(black_box(&x), &mut y_par).expect("spmv_par")),
                ),
            ],
        );
    }
    if wanted(&spmm_group) {
        interleaved(
            &spmm_group,
            &mut [
                (
                    "ours spmm kernel, row-major Dense (generated)",
                    Box::new(|| spmm(&mut dc, black_box(&a), black_box(&db)).expect("spmm")),
                ),
                (
                    "ours Csr::spmm row-major (built-in)",
                    Box::new(|| {
                        a.spmm(black_box(&b_rows), &mut c_rows_buf, K, DenseOrder::RowMajor)
                            .expect("spmm")
                    }),
                ),
                (
                    "ours Csr::spmm col-major (built-in)",
                    Box::new(|| {
                        a.spmm(black_box(&b_cols), &mut c_cols, K, DenseOrder::ColMajor)
                            .expect("spmm")
                    }),
                ),
                (
                    "faer SparseRowMat × row-major MatRef",
                    Box::new(|| faer_spmm_rows(&mut cfr)),
                ),
                (
                    "faer SparseColMat × col-major MatRef",
                    Box::new(|| faer_spmm(&mut cf)),
                ),
            ],
        );
    }
}

/// Every section: SpGEMM and `A + Aᵀ` on cryg2500 and bcsstk16; SpMV and SpMM on bcsstk16 and
/// on the synthetic `kron(I_40, bcsstk16)`.
fn kernels(c: &mut Criterion) {
    for name in ["cryg2500", "bcsstk16"] {
        sparse_sparse(c, name, &load(name));
    }
    let base = load("bcsstk16");
    sparse_dense(c, "bcsstk16", &base);
    let synthetic = "kron(I40,bcsstk16) (synthetic, from HB/bcsstk16)";
    if wanted(&format!("{synthetic} spmv")) || wanted(&format!("{synthetic} spmm k=16")) {
        let big = block_diagonal(&base, KRON_COPIES);
        sparse_dense(c, synthetic, &big);
    }
}

/// Short criterion settings (10 samples, 0.5 s warm-up, 2 s): the interleaved tables carry
/// the ratios.
fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = kernels
}
criterion_main!(benches);
