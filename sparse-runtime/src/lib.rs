//! Runtime of the `sparse` project: what generated code calls and what users hold.
//!
//! - [`index`]: typed position/coordinate buffers per bit width;
//! - [`value`]: the value-type trait;
//! - [`coo`]: the COO operand;
//! - [`storage`]: the level-by-level view every tensor gives, `sparse_tensor.print` and `validate`;
//! - [`dynamic`]: the reference storage built at run time from an [`Encoding`](sparse_ir::ir::Encoding);
//! - [`mmio`]: Matrix Market reading and writing;
//! - [`packed`]: sub-byte coordinate buffers (`crdWidth = 2` of n:m levels) and index views;
//! - [`mod@slice`]: strided views over a storage (`#sparse_tensor<slice(..)>` dimensions);
//! - [`frostt`]: FROSTT `.tns` reading and writing;
//! - `interop` (features `sprs`, `nalgebra-sparse`, `faer`, `ndarray`, off by default):
//!   conversions to and from the Rust peers, zero-copy at the native width;
//! - [`error`]: the storage errors.
#![warn(missing_docs)]

pub(crate) mod bucket;
pub mod coo;
pub mod dynamic;
pub mod error;
pub mod frostt;
pub mod generated;
mod huge;
pub mod index;
#[cfg(any(
    feature = "sprs",
    feature = "nalgebra-sparse",
    feature = "faer",
    feature = "ndarray"
))]
pub mod interop;
pub mod layout;
pub(crate) mod level;
pub mod mmio;
#[cfg(feature = "npz")]
pub mod npz;
pub mod packed;
pub mod prefetch;
pub mod quant;
pub mod slice;
mod small_sort;
pub mod sparsecore;
pub mod storage;
pub mod torch;
pub mod value;

pub use coo::CooTensor;
pub use dynamic::{DynamicStorage, RawParts};
pub use error::{BufferKind, StorageError};
pub use generated::Par;
/// The `half` crate: `f16` and `bf16` values in storage and generated kernels (which
/// compute them in `f32`).
pub use half;
pub use index::{Index, IndexBuffer, IndexSlice};
/// The `num-complex` crate: `Complex<f32>` and `Complex<f64>` values in storage and generated
/// kernels.
pub use num_complex;
pub use num_traits;
pub use packed::{CrdBuffer, IndexView, PackedBuffer};
pub use rayon;
pub use slice::SliceView;
pub use sparse_ir;
pub use storage::SparseStorage;
pub use value::Value;
