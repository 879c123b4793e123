//! Shared helpers of the benchmarks in `benches/` (`spmv.rs`, `kernels.rs`, `assembly.rs`):
//! where the shared matrices are, how they are read, and the DRAM-bound synthetic matrix
//! `kron(I_copies, A)` built from one of them. See README.md.

use std::path::PathBuf;

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
