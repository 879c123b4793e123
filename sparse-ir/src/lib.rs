//! The verified IR of the sparse tensor encoding language, alone: what an encoding *means*
//! (MLIR's `SparseTensorEncodingAttr`), element and tensor types, map inference and the canonical
//! printer, with no parser and no code generator.
//!
//! Every layer meets here: the parser (`sparse-dsl`) produces an [`ir::Encoding`], the code
//! generator and the CLI consume it, and the runtime (`sparse-runtime`: the dynamic storage,
//! printing, validation) depends on this crate only, so a user's program links no compiler.
//!
//! - [`ir`]: level formats and properties, affine maps, slices, the `Encoding`;
//! - [`types`]: element types, typed values, tensor types;
//! - [`level`]: each level format's storage and capabilities as data, one file per format;
//! - [`infer`]: the inverse (`lvlToDim`) MLIR infers from `dimToLvl`;
//! - [`print`](mod@print): MLIR's canonical text form (`Display` for `Encoding`);
//! - [`sparsecore`]: SparseCore chip presets and the TileSpmem sizing rule, shared by the
//!   runtime's chip model and the compile-time `sparsecore(...)` check;
//! - [`verify`](mod@verify): MLIR's semantic rules on an `Encoding` built in code.
#![warn(missing_docs)]

pub mod infer;
pub mod ir;
pub mod level;
pub mod print;
pub mod sparsecore;
pub mod types;
pub mod verify;
