//! Code generation from build scripts: the same structs `sparse_format!` generates, from `.mlir`
//! files, written into `OUT_DIR`.
//!
//! ```text
//! // build.rs
//! fn main() {
//!     sparse_dsl::build::compile("formats.mlir").expect("formats.mlir");
//! }
//! // src/lib.rs:  include!(concat!(env!("OUT_DIR"), "/formats.rs"));
//! ```
//! (`examples/build-script/` in the repository is a complete crate doing this.)
//!
//! A `.mlir` file holds any number of declarations `#Name = <encoding or tensor type>`, with
//! `//` comments; each alias becomes a `pub struct Name<V>`. The generated code names the runtime
//! `::sparse::runtime`, so the crate depends on `sparse`.

use std::fmt;
use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::quote;

use crate::codegen::{generate, Declaration};
use crate::diag::Diagnostic;
use crate::parse::parse_declarations;

/// Why a build-script generation failed.
#[derive(Debug)]
pub enum BuildError {
    /// Reading the input or writing the output failed.
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `OUT_DIR` is not set (not running inside a build script) and no output directory was given.
    NoOutDir,
    /// The file has syntax or verifier errors, each rendered `FILE:LINE:COL: MESSAGE`.
    Invalid {
        /// One line per problem.
        messages: Vec<String>,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            BuildError::NoOutDir => {
                f.write_str("OUT_DIR is not set: call from a build script or use compile_to")
            }
            BuildError::Invalid { messages } => f.write_str(&messages.join("\n")),
        }
    }
}

impl std::error::Error for BuildError {}

/// Generates the Rust items for every declaration of `text` (the contents of a `.mlir` file).
/// `rt` is the runtime path the generated code uses (`::sparse::runtime`).
///
/// Errors: one [`Diagnostic`] per problem (syntax, verifier, a declaration without an alias, an
/// element type or encoding the code generator cannot store yet).
pub fn generate_items(text: &str, rt: &TokenStream) -> Result<TokenStream, Vec<Diagnostic>> {
    let decls = parse_declarations(text)?;
    let mut out = TokenStream::new();
    let mut errors = Vec::new();
    let mut declared = Vec::new();
    for d in decls {
        let err = |msg: String| Diagnostic::new(text, d.start, d.end, msg);
        let Some(alias) = d.alias.clone() else {
            errors.push(err(
                "a declaration in a .mlir file needs an alias (`#Name = ...`) to name its struct"
                    .into(),
            ));
            continue;
        };
        let name = match syn::parse_str::<syn::Ident>(&alias) {
            Ok(i) => i,
            Err(_) => {
                errors.push(err(format!("alias `{alias}` is not a Rust identifier")));
                continue;
            }
        };
        let mut decl = match Declaration::from_declared(quote!(pub), name, d.declared) {
            Ok(decl) => decl,
            Err(e) => {
                errors.push(err(e.to_string()));
                continue;
            }
        };
        let doc = format!("Declared as `#{alias}` in a `.mlir` file.");
        decl.attrs.push(quote!(#[doc = #doc]));
        decl.sparsecore = d.sparsecore;
        match generate(&decl, rt) {
            Ok(tokens) => out.extend(tokens),
            Err(e) => errors.push(err(e.to_string())),
        }
        declared.push(decl);
    }
    // `transpose` between declarations whose encodings are each other's transposes (a
    // declaration the generator refused is reported above; it generates nothing here)
    if errors.is_empty() {
        match crate::codegen::transpose::emit(&declared.iter().collect::<Vec<_>>(), rt) {
            Ok(tokens) => out.extend(tokens),
            Err(e) => errors.push(Diagnostic::new(text, 0, 0, e.to_string())),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Reads `input`, generates its structs, and writes them to `out_dir/<input stem>.rs`, formatted
/// with `prettyplease` and with each `unsafe` block's `// SAFETY:` comment
/// ([`crate::codegen::print`]). Returns the written path.
///
/// Errors: [`BuildError::Io`] on read/write failures, [`BuildError::Invalid`] with one
/// `FILE:LINE:COL: MESSAGE` line per problem.
pub fn compile_to(
    input: impl AsRef<Path>,
    out_dir: impl AsRef<Path>,
) -> Result<PathBuf, BuildError> {
    let input = input.as_ref();
    let text = std::fs::read_to_string(input).map_err(|source| BuildError::Io {
        path: input.to_path_buf(),
        source,
    })?;
    let tokens =
        generate_items(&text, &quote!(::sparse::runtime)).map_err(|diags| BuildError::Invalid {
            messages: diags
                .iter()
                .map(|d| format!("{}:{d:#}", input.display()))
                .collect(),
        })?;
    let file: syn::File = syn::parse2(tokens).map_err(|e| BuildError::Invalid {
        messages: vec![format!("generated code does not parse: {e}")],
    })?;
    let stem = input
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "formats".into());
    let out = out_dir.as_ref().join(format!("{stem}.rs"));
    let code = format!(
        "// Generated by sparse-dsl from {}. Do not edit.\n\n{}",
        input.display(),
        crate::codegen::print(&file)
    );
    std::fs::write(&out, code).map_err(|source| BuildError::Io {
        path: out.clone(),
        source,
    })?;
    Ok(out)
}

/// [`compile_to`] into `OUT_DIR`, for build scripts; also prints `cargo:rerun-if-changed` for
/// `input`.
///
/// Errors: [`BuildError::NoOutDir`] outside a build script; otherwise as [`compile_to`].
pub fn compile(input: impl AsRef<Path>) -> Result<PathBuf, BuildError> {
    let out_dir = std::env::var_os("OUT_DIR").ok_or(BuildError::NoOutDir)?;
    println!("cargo:rerun-if-changed={}", input.as_ref().display());
    compile_to(input, out_dir)
}
