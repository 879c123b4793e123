//! Bytes held by each format for a real matrix, as `memory_bytes` measures them; prints the
//! Markdown table of README.md.
//!
//! ```text
//! cargo run --release --example memory [-- path/to/matrix.mtx]
//! ```
//! Without an argument it reads `data/bcsstk16.mtx` (HB/bcsstk16, at most 81 entries per row).

use std::path::PathBuf;

use sparse::runtime::mmio::read_matrix_market;

sparse::sparse_format! {
    /// CSR, 32-bit positions and coordinates.
    pub Csr32 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// CSR, 32-bit positions, 16-bit coordinates.
    pub Csr16 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16 }>;
    /// CSR, native (64-bit) positions and coordinates.
    pub CsrNative = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    /// BSR with 2x2 blocks, 32-bit.
    pub Bsr2 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense), posWidth = 32, crdWidth = 32 }>;
    /// Sorted COO, 32-bit coordinates (array of structs).
    pub Coo32 = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton), posWidth = 32, crdWidth = 32 }>;
    /// Doubly compressed sparse row, 32-bit.
    pub Dcsr32 = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// ELL with 81 slices (the longest row of bcsstk16), 32-bit.
    pub Ell81 = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 81 * i : dense, i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
}

macro_rules! row {
    ($ty:ident, $what:expr, $coo:expr, $nnz:expr) => {
        match $ty::<f64>::from_coo_tensor($coo) {
            Ok(a) => println!(
                "| `{}` | {} | {} | {} | {:.2} |",
                stringify!($ty),
                $what,
                a.nse(),
                a.memory_bytes(),
                a.memory_bytes() as f64 / $nnz as f64
            ),
            Err(e) => println!("| `{}` | {} | - | {} | - |", stringify!($ty), $what, e),
        }
    };
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/bcsstk16.mtx"));
    let mm = match read_matrix_market(&path) {
        Ok(mm) => mm,
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            std::process::exit(1);
        }
    };
    let coo = &mm.tensor;
    let nnz = coo.len().max(1);
    println!(
        "{}: {} x {}, nnz = {}, f64 values\n",
        path.display(),
        coo.shape[0],
        coo.shape[1],
        coo.len()
    );
    println!("| format | arrays (widths) | nse | bytes | bytes / nnz |");
    println!("|---|---|---|---|---|");
    row!(Csr32, "CSR, pos u32, crd u32", coo, nnz);
    row!(Csr16, "CSR, pos u32, crd u16", coo, nnz);
    row!(CsrNative, "CSR, pos/crd usize", coo, nnz);
    row!(Bsr2, "BSR 2x2, u32 (explicit zeros in blocks)", coo, nnz);
    row!(Coo32, "COO, AoS crd u32", coo, nnz);
    row!(Dcsr32, "DCSR, u32", coo, nnz);
    row!(Ell81, "ELL, 81 slices, u32", coo, nnz);
}
