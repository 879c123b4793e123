//! The sparsifier: kernels written once in TACO's index notation, compiled to co-iteration
//! loops over the declared level formats of every operand (Kjolstad et al., "The Tensor Algebra
//! Compiler"; Chou et al., "Format Abstraction for Sparse Tensor Algebra Compilers"; Bik et
//! al., MLIR's sparsifier).
//!
//! ```text
//! statement ──notation──> AST ──check──> Kernel ──order──> loop variables, iteration order
//!   ──lattice + loops──> Program (the loop IR) ──┬──> print (`sparse eval --emit loops`)
//!                                                ├──> interp (feature `interp`, `sparse eval`)
//!                                                └──> Rust back end (later, `sparse_format!`)
//! ```
//!
//! - [`notation`]: the statement language and its parser (spans, no panics);
//! - [`check`]: declared operands, ranks, extents, value types; the einsum rule;
//! - [`order`]: loop variables over levels, the iteration graph and order;
//! - [`lattice`]: merge lattices;
//! - [`loops`]: the loop IR and the builder;
//! - [`mod@print`]: the readable printer;
//! - `interp` (feature `interp`): the interpreter over `sparse_runtime::DynamicStorage`.
//!
//! This crate depends only on `sparse-ir` (and on `sparse-runtime` with `interp`), so the
//! proc-macro side can use it without linking a runtime.
#![warn(missing_docs)]

pub mod check;
pub mod error;
#[cfg(feature = "interp")]
pub mod interp;
pub mod lattice;
pub mod loops;
pub mod notation;
pub mod order;
pub mod print;

pub use check::{TensorDecl, ValueType};
pub use error::{Error, Span};
pub use loops::Program;

/// Parses, checks and lowers `statement` over the tensors `decls`.
///
/// Errors: as [`notation::parse_statement`], [`check::check`] and [`loops::build`].
pub fn compile(statement: &str, decls: &[TensorDecl]) -> Result<Program, Error> {
    let stmt = notation::parse_statement(statement)?;
    let kernel = check::check(&stmt, decls)?;
    loops::build(kernel)
}
