//! The candidate formats of `sparse advise`, declared with `sparse_format!` so that what is
//! measured is the project's generated storage and kernels: a fixed, compile-time set, of which
//! `advise.rs` offers the ones the matrix's structure suits.
//!
//! Every format here stores `f64` values; [`Measurable`] is the object-safe face of their
//! inherent methods (`from_coo_tensor`, `memory_bytes`, `spmv`, `spmv_par`, `spmv_transpose`,
//! `spmm`).

use sparse::runtime::generated::DenseOrder;
use sparse::runtime::{CooTensor, StorageError};

sparse::sparse_format! {
    /// CSR, 32-bit positions and coordinates: the baseline every speed-up is relative to.
    pub CsrP32C32 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// CSR, 32-bit positions, 16-bit coordinates (at most 65,536 columns).
    pub CsrP32C16 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16 }>;
    /// CSR, 32-bit positions, 8-bit coordinates (at most 256 columns).
    pub CsrP32C8 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 8 }>;
    /// CSR, 64-bit positions (more than 2^32 - 1 entries), 32-bit coordinates.
    pub CsrP64C32 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 32 }>;
    /// CSR, 64-bit positions, 16-bit coordinates.
    pub CsrP64C16 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 16 }>;
    /// CSR, 64-bit positions, 8-bit coordinates.
    pub CsrP64C8 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 8 }>;
    /// Doubly compressed rows: only the non-empty rows are stored.
    pub Dcsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// Block sparse row, 2x2 dense blocks.
    pub Bsr2 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense), posWidth = 32, crdWidth = 32 }>;
    /// Block sparse row, 3x3 dense blocks.
    pub Bsr3 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 3 : dense, j floordiv 3 : compressed, i mod 3 : dense, j mod 3 : dense), posWidth = 32, crdWidth = 32 }>;
    /// Block sparse row, 4x4 dense blocks.
    pub Bsr4 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 4 : dense, j floordiv 4 : compressed, i mod 4 : dense, j mod 4 : dense), posWidth = 32, crdWidth = 32 }>;
    /// ELL with 4 slots per row (rows of at most 4 entries).
    pub Ell4 = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 4 * i : dense, i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// ELL with 8 slots per row.
    pub Ell8 = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 8 * i : dense, i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// ELL with 16 slots per row.
    pub Ell16 = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 16 * i : dense, i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// ELL with 32 slots per row.
    pub Ell32 = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 32 * i : dense, i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// ELL with 64 slots per row.
    pub Ell64 = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 64 * i : dense, i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    /// CSC, 32-bit positions and coordinates (offered for `y = Aᵀ·x`, which it sums column by
    /// column).
    pub CscP32C32 = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 32, crdWidth = 32 }>;
    /// CSC, 32-bit positions, 16-bit coordinates (at most 65,536 rows).
    pub CscP32C16 = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 32, crdWidth = 16 }>;
    /// CSC, 32-bit positions, 8-bit coordinates (at most 256 rows).
    pub CscP32C8 = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 32, crdWidth = 8 }>;
    /// CSC, 64-bit positions (more than 2^32 - 1 entries), 32-bit coordinates.
    pub CscP64C32 = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 64, crdWidth = 32 }>;
    /// Block sparse column, 2x2 dense blocks (offered for `y = Aᵀ·x`, which it sums block
    /// column by block column).
    pub Bsc2 = #sparse_tensor.encoding<{ map = (i, j) -> (j floordiv 2 : dense, i floordiv 2 : compressed, j mod 2 : dense, i mod 2 : dense), posWidth = 32, crdWidth = 32 }>;
    /// Block sparse column, 3x3 dense blocks.
    pub Bsc3 = #sparse_tensor.encoding<{ map = (i, j) -> (j floordiv 3 : dense, i floordiv 3 : compressed, j mod 3 : dense, i mod 3 : dense), posWidth = 32, crdWidth = 32 }>;
    /// Block sparse column, 4x4 dense blocks.
    pub Bsc4 = #sparse_tensor.encoding<{ map = (i, j) -> (j floordiv 4 : dense, i floordiv 4 : compressed, j mod 4 : dense, i mod 4 : dense), posWidth = 32, crdWidth = 32 }>;
    /// 2:4 structured sparsity: at most 2 entries in every group of 4 columns of a row.
    pub Nv24 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 8 }>;
}

/// The ELL slot counts declared above, smallest first.
pub const ELL_SLOTS: [usize; 5] = [4, 8, 16, 32, 64];

/// A built candidate storage of an `m x n` matrix, behind one object-safe interface.
pub trait Measurable: Send + Sync {
    /// Bytes of the stored position, coordinate and value arrays (`memory_bytes`).
    fn bytes(&self) -> usize;
    /// `y = A·x` with the generated serial kernel (`x`: n values, `y`: m values, overwritten).
    ///
    /// Errors: `StorageError::LengthMismatch` when a length is wrong.
    fn spmv(&self, x: &[f64], y: &mut [f64]) -> Result<(), StorageError>;
    /// `y = A·x` with the generated parallel kernel, on the current rayon pool.
    ///
    /// Errors: as [`Measurable::spmv`].
    fn spmv_par(&self, x: &[f64], y: &mut [f64]) -> Result<(), StorageError>;
    /// `y = Aᵀ·x` with the generated serial kernel (`x`: m values, `y`: n values, overwritten).
    ///
    /// Errors: as [`Measurable::spmv`].
    fn spmv_transpose(&self, x: &[f64], y: &mut [f64]) -> Result<(), StorageError>;
    /// `y = Aᵀ·x` with the generated parallel kernel, on the current rayon pool (the columns
    /// of a column format split over the threads; the row formats run the serial kernel).
    ///
    /// Errors: as [`Measurable::spmv`].
    fn spmv_transpose_par(&self, x: &[f64], y: &mut [f64]) -> Result<(), StorageError>;
    /// `C = A·B` with `B` (`n x k`) and `C` (`m x k`, overwritten) dense and row-major.
    ///
    /// Errors: `StorageError::LengthMismatch` when a length is not its rows times `k`.
    fn spmm(&self, b: &[f64], c: &mut [f64], k: usize) -> Result<(), StorageError>;
    /// `C = A·B` as [`Measurable::spmm`] with the generated parallel kernel, on the current
    /// rayon pool (the rows of `C` split over the threads for CSR and 2:4; the other formats
    /// run the serial kernel).
    ///
    /// Errors: as [`Measurable::spmm`].
    fn spmm_par(&self, b: &[f64], c: &mut [f64], k: usize) -> Result<(), StorageError>;
    /// The number of stored values (entries plus the explicit zeros of blocks or groups).
    fn stored(&self) -> usize;
    /// The encoding in MLIR's canonical form (the generated `ENCODING`).
    fn encoding(&self) -> &'static str;
}

macro_rules! measurable {
    ($($t:ident),* $(,)?) => {$(
        impl Measurable for $t<f64> {
            fn bytes(&self) -> usize {
                self.memory_bytes()
            }
            fn spmv(&self, x: &[f64], y: &mut [f64]) -> Result<(), StorageError> {
                $t::spmv(self, x, y)
            }
            fn spmv_par(&self, x: &[f64], y: &mut [f64]) -> Result<(), StorageError> {
                $t::spmv_par(self, x, y)
            }
            fn spmv_transpose(&self, x: &[f64], y: &mut [f64]) -> Result<(), StorageError> {
                $t::spmv_transpose(self, x, y)
            }
            fn spmv_transpose_par(&self, x: &[f64], y: &mut [f64]) -> Result<(), StorageError> {
                $t::spmv_transpose_par(self, x, y)
            }
            fn spmm(&self, b: &[f64], c: &mut [f64], k: usize) -> Result<(), StorageError> {
                $t::spmm(self, b, c, k, DenseOrder::RowMajor)
            }
            fn spmm_par(&self, b: &[f64], c: &mut [f64], k: usize) -> Result<(), StorageError> {
                $t::spmm_par(self, b, c, k, DenseOrder::RowMajor)
            }
            fn stored(&self) -> usize {
                self.values().len()
            }
            fn encoding(&self) -> &'static str {
                $t::<f64>::ENCODING
            }
        }
    )*};
}

measurable!(
    CsrP32C32, CsrP32C16, CsrP32C8, CsrP64C32, CsrP64C16, CsrP64C8, Dcsr, Bsr2, Bsr3, Bsr4, Ell4,
    Ell8, Ell16, Ell32, Ell64, CscP32C32, CscP32C16, CscP32C8, CscP64C32, Bsc2, Bsc3, Bsc4, Nv24,
);

/// Builds the storage of a matrix in one format, boxed (the generated `from_coo_tensor`).
///
/// Errors: the format's (an entry beyond its widths, a shape its blocks do not divide, an ELL
/// row longer than its slots, a group of 4 columns with more than 2 entries for 2:4, ...).
pub type Build = fn(&CooTensor<f64>) -> Result<Box<dyn Measurable>, StorageError>;

/// Boxes a built storage, or passes its construction error on.
pub fn boxed<F: Measurable + 'static>(
    built: Result<F, StorageError>,
) -> Result<Box<dyn Measurable>, StorageError> {
    built.map(|f| Box::new(f) as Box<dyn Measurable>)
}
