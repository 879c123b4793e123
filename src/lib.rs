//! `sparse`: declare sparse tensor formats in MLIR's encoding language and get, at compile time,
//! specialised Rust storage and kernels for each.
//!
//! ```
//! sparse::sparse_format! {
//!     /// Compressed sparse row with 32-bit positions and coordinates.
//!     pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
//! }
//!
//! let a = Csr::<f64>::from_coo([2, 3], [([0, 2], 1.5), ([1, 0], 2.0)]).unwrap();
//! assert_eq!(a.positions(1), Some(&[0u32, 1, 2][..]));
//! let mut y = [0.0; 2];
//! a.spmv(&[1.0, 1.0, 2.0], &mut y).unwrap();
//! assert_eq!(y, [3.0, 2.0]);
//! ```
//!
//! - [`sparse_format!`]: the macro (crate `sparse-macros`);
//! - [`runtime`]: buffers, storage view, COO operand, Matrix Market reader, dynamic storage
//!   (crate `sparse-runtime`); with the features `sprs`, `nalgebra-sparse`, `faer`, `ndarray`
//!   (off by default), `runtime::interop` converts to and from those crates' matrices;
//! - `dsl` (feature `dsl`, off by default): the language: parser, verifier, IR, printer, code
//!   generator (crate `sparse-dsl`); the `sparse` CLI is the package `sparse-cli`.

#![warn(missing_docs)]

extern crate self as sparse;

#[cfg(feature = "dsl")]
pub use sparse_dsl as dsl;
pub use sparse_macros::sparse_format;
pub use sparse_runtime as runtime;
pub use sparse_runtime::Par;
/// The error of storage constructors and of kernels (`sparse_runtime::StorageError`).
pub use sparse_runtime::StorageError as Error;

/// The README's code blocks, compiled and run as doc-tests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
