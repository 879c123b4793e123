//! The main job: declare formats with `sparse_format!`, build each from a real SuiteSparse
//! matrix, print nnz, bytes, serial and parallel SpMV time per format, and check that all give
//! the same y; then run a kernel the sparsifier generated from `y(i) = a(i, j) * x(j)` and check
//! it against the built-in `Csr::spmv`.
//!
//! ```text
//! cargo run --release --example tour [-- path/to/matrix.mtx]
//! ```
//! Without an argument it reads `data/bcsstk16.mtx` (HB/bcsstk16, see `data/SOURCES.md`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use sparse::runtime::mmio::read_matrix_market;
use sparse::runtime::CooTensor;

sparse::sparse_format! {
    /// Compressed sparse row with 32-bit positions and coordinates.
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// CSR with 16-bit coordinates (for matrices with at most 65,536 columns).
    pub Csr16 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16 }>;
    /// Compressed sparse column.
    pub Csc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 32, crdWidth = 32 }>;
    /// Doubly compressed sparse column.
    pub Dcsc = #sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed) }>;
    /// Sorted coordinate format, coordinates array-of-structs.
    pub Coo = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>;
    /// CSR with a (lo, hi) pair per row.
    pub LooseCsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed), posWidth = 32, crdWidth = 32 }>;
    /// Block sparse row, 2x2 blocks.
    pub Bsr = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense), posWidth = 32, crdWidth = 32 }>;
    /// SpMV stated once in index notation; the sparsifier generates the loops over `Csr`.
    pub kernel csr_spmv(y: &mut [f64], a: &Csr<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
}

/// Median time of `runs` calls of `f`.
fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut t: Vec<Duration> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[runs / 2]
}

struct Row {
    name: &'static str,
    nse: usize,
    bytes: usize,
    build: Duration,
    spmv: Duration,
    spmv_par: Duration,
    y: Vec<f64>,
}

macro_rules! run {
    ($rows:ident, $ty:ident, $coo:expr, $x:expr, $runs:expr) => {{
        let start = Instant::now();
        match $ty::<f64>::from_coo_tensor($coo) {
            Ok(a) => {
                let build = start.elapsed();
                let mut y = vec![0.0; a.shape()[0]];
                let spmv = time($runs, || a.spmv($x, &mut y).expect("operand lengths match"));
                let mut yp = vec![0.0; a.shape()[0]];
                let spmv_par = time($runs, || {
                    a.spmv_par($x, &mut yp).expect("operand lengths match")
                });
                assert_eq!(y, yp, "{}: spmv_par differs from spmv", stringify!($ty));
                $rows.push(Row {
                    name: stringify!($ty),
                    nse: a.nse(),
                    bytes: a.memory_bytes(),
                    build,
                    spmv,
                    spmv_par,
                    y,
                });
            }
            Err(e) => println!("{:<10} skipped: {e}", stringify!($ty)),
        }
    }};
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/bcsstk16.mtx"));
    let start = Instant::now();
    let mm = match read_matrix_market(&path) {
        Ok(mm) => mm,
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            std::process::exit(1);
        }
    };
    let coo: &CooTensor<f64> = &mm.tensor;
    println!(
        "{}: {} x {}, {} entries in the file, nnz = {} ({:?} {:?}), read in {:.1} ms",
        path.display(),
        coo.shape[0],
        coo.shape[1],
        mm.stored,
        coo.len(),
        mm.field,
        mm.symmetry,
        start.elapsed().as_secs_f64() * 1e3
    );
    let x: Vec<f64> = (0..coo.shape[1]).map(|j| 1.0 + (j % 7) as f64).collect();
    let runs = 21;
    let mut rows = Vec::new();
    run!(rows, Csr, coo, &x, runs);
    run!(rows, Csr16, coo, &x, runs);
    run!(rows, Csc, coo, &x, runs);
    run!(rows, Dcsc, coo, &x, runs);
    run!(rows, Coo, coo, &x, runs);
    run!(rows, LooseCsr, coo, &x, runs);
    run!(rows, Bsr, coo, &x, runs);

    println!(
        "{:<10} {:>10} {:>12} {:>10} {:>10} {:>10} {:>12}",
        "format", "nse", "bytes", "bytes/nnz", "build ms", "spmv us", "spmv_par us"
    );
    for r in &rows {
        println!(
            "{:<10} {:>10} {:>12} {:>10.2} {:>10.2} {:>10.1} {:>12.1}",
            r.name,
            r.nse,
            r.bytes,
            r.bytes as f64 / coo.len().max(1) as f64,
            r.build.as_secs_f64() * 1e3,
            r.spmv.as_secs_f64() * 1e6,
            r.spmv_par.as_secs_f64() * 1e6
        );
    }
    let Some(reference) = rows.first() else {
        eprintln!("error: no format could store the matrix");
        std::process::exit(1);
    };
    // each row's sum of |terms|: formats add a row's terms in different orders (the built-in
    // CSR SpMV in four partial sums), so their results agree within 1e-12 of it
    let mut scale = vec![0.0f64; coo.shape[0]];
    for (c, v) in coo.iter() {
        scale[c[0]] += v.abs() * x[c[1]].abs();
    }
    // the generated kernel against the built-in one: both sum a row in the same four partial
    // sums, so their results are equal bit for bit
    if let Ok(a) = Csr::<f64>::from_coo_tensor(coo) {
        let mut y = vec![0.0; coo.shape[0]];
        let t = time(runs, || {
            csr_spmv(&mut y, &a, &x).expect("operand lengths match")
        });
        let same = reference.name == "Csr"
            && y.iter()
                .zip(&reference.y)
                .all(|(a, b)| a.to_bits() == b.to_bits());
        println!(
            "generated kernel csr_spmv: {:.1} us, same y as Csr::spmv (bit for bit): {same}",
            t.as_secs_f64() * 1e6
        );
        if !same {
            eprintln!("error: the generated kernel differs from Csr::spmv");
            std::process::exit(1);
        }
    }
    let mut worst = 0.0f64;
    let mut worst_format = "";
    for r in &rows[1..] {
        for ((a, b), s) in r.y.iter().zip(&reference.y).zip(&scale) {
            let d = (a - b).abs() / s.max(1.0);
            if d > worst {
                (worst, worst_format) = (d, r.name);
            }
        }
    }
    if worst <= 1e-12 {
        println!(
            "all {} formats give the same y (max difference {worst:.1e} of the row's sum of |terms|)",
            rows.len()
        );
    } else {
        eprintln!(
            "error: formats disagree on y (max difference {worst:.1e} of the row's sum of |terms|, {worst_format} vs {})",
            reference.name
        );
        std::process::exit(1);
    }
}
