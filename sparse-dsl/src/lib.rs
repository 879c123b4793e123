//! The MLIR sparse tensor encoding language: grammar, verifier, semantic IR, canonical printer
//! and code generator.
//!
//! - [`ir`]: the semantic IR ([`ir::Encoding`]) every layer shares;
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
pub mod ir;
pub mod parse;
pub mod print;
pub mod types;
