//! `sparse`: declare sparse tensor formats in MLIR's encoding language, get specialised Rust.
pub use sparse_runtime as runtime;
pub use sparse_dsl as dsl;
