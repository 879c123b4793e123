//! The MLIR sparse tensor encoding language: grammar, verifier, semantic IR, canonical printer
//! and code generator.
//!
//! - [`ir`]: the semantic IR ([`ir::Encoding`]) every layer shares (re-exported from the crate
//!   `sparse-ir`, with [`types`], [`infer`] and [`print`](mod@print), so that the runtime
//!   depends on the IR without the parser) and [`verify`](mod@verify), the IR-only checks;
//! - [`parse`]: the pest grammar and the verifier, text -> `Encoding` with [`diag::Diagnostic`]s;
//! - [`print`](mod@print): MLIR's canonical text form of an `Encoding`;
//! - [`types`]: element types, typed values and tensor types around an encoding;
//! - [`diag`]: diagnostics with byte spans and line:column;
//! - [`codegen`]: the Rust items generated for one declaration;
//! - [`build`]: the same code from `.mlir` files in build scripts.
#![warn(missing_docs)]

pub mod build;
pub mod codegen;
pub mod diag;
pub mod kernel;
pub mod parse;

pub use sparse_ir::{infer, ir, print, types, verify};
