//! Parser and verifier: encoding text -> [`Encoding`], or [`Diagnostic`]s.
//!
//! The syntax is MLIR's `#sparse_tensor.encoding<{ ... }>` (grammar in `src/grammar.pest`),
//! optionally preceded by `#Alias =`; `//` comments and whitespace may appear between any two
//! tokens. Keys: `map`, `posWidth`, `crdWidth`, `explicitVal`, `implicitVal` (typed values:
//! `1.0 : f32`, `1 : i64`, `true`, `#complex.number<:f32 1.0, 0.0>`; an untyped `1` is `i64` and
//! `1.0` is `f64`, as in MLIR). [`parse_declaration`] also takes a tensor type around an encoding
//! and [`parse_declarations`] a file of `#Alias = ...` declarations. A declaration may end with
//! a `sparsecore(...)` clause, a SparseCore configuration checked at compile time (not MLIR;
//! [`ParsedDeclaration::sparsecore`], rules in `parse/sparsecore.rs`).
//!
//! # Diagnostics order
//! MLIR stops at its first error. We report every problem found, ordered so that the first one
//! is MLIR's: parser-level errors in source order, then the verifier's rules in the order
//! `SparseTensorEncodingAttr::verify` checks them (widths, singleton, SoA layout, batch, SoA,
//! n:m, empty levels, lvlToDim inference, inverse, rank, slices), then the tensor checks.
//! The message keeps MLIR's wording; where the parser knows how to fix the problem it adds a
//! [`Diagnostic::help`] (the nearest level format, the allowed widths, what a block map needs).
//!
//! # Level formats and properties
//! Formats: `dense`, `batch`, `compressed`, `loose_compressed`, `singleton`, `structured[n, m]`
//! and `blockN_M` (the reference's spelling of `structured[N, M]`, e.g. `block2_4`).
//! Properties: `nonunique`, `nonordered`, `soa`, and `high`.
//!
//! **`high`** is not an MLIR property of its own; it comes from the reference's batched COO example
//! `compressed(nonunique, high)`. The project reads it as "each segment has its own high bound":
//! on `compressed` it turns the level into `loose_compressed` (so `compressed(nonunique, high)` is
//! exactly `loose_compressed(nonunique)`), on `loose_compressed` it is redundant and accepted, on
//! any other format it is rejected like any unsupported property.
//!
//! # Affine expressions
//! MLIR precedence: `*`, `floordiv`, `ceildiv`, `mod` bind tighter than `+` / `-`, all
//! left-associative; unary `-` applies to one operand. Subtraction `a - b` is built as
//! `a + b * -1` and unary minus as `x * -1`. Every operation is built with MLIR's simplifying
//! constructors ([`AffineExpr::make_add`] and friends, `simplifyAdd`/`simplifyMul`/... in
//! MLIR's `AffineExpr.cpp`): constants fold and move right (`2 + i` is `d0 + 2`, `c * 3 * i` is
//! `d0 * (s0 * 3)`), `i - 3 + 4` is `d0 + 1`, `i floordiv 1` is `d0`, `i - (i floordiv 4) * 4`
//! is `d0 mod 4`. The result is then brought to the tree its printed form parses back to
//! ([`AffineExpr::canonical`]), so printing and parsing again gives the same IR.
//!
//! # The inverse map (`lvl_to_dim`)
//! As MLIR: the map must be a permutation or a block map, each dimension appearing either once
//! as itself or once as `d floordiv b` and once as `d mod b` (same `b > 0`); unlike upstream the
//! pair may come in any order. A dimension used twice, or a `floordiv` without its `mod`, is
//! `failed to infer lvlToDim from dimToLvl`, reported once: at the first level expression that
//! breaks the rule (or at a dimension no level stores), with a help line saying why. Inference
//! is one pass over the levels (linear in the size of the map). The inverse is `l` for a plain
//! level and `l1 * b + l2` for a pair. Dimension expressions written explicitly
//! (`{l0, l1} (i = l0 * 2 + l1) -> (l0 = ..., l1 = ...)`, every level then needs its `lvar =`)
//! must be an inverse of the level expressions (checked by evaluation on sample coordinates,
//! else `expected lvlToDim to be an inverse of dimToLvl`); the inferred (canonical) form is stored.
//! Beyond MLIR, a map MLIR cannot invert is accepted when every dimension has an explicit inverse
//! that checks out (it is then printed explicitly). With symbols (ELL's counting `c * 3 * i`),
//! MLIR accepts a map it cannot invert: dimensions are recovered from plain/block levels where
//! possible and `lvl_to_dim` is left empty otherwise.

use std::collections::HashMap;
use std::fmt;

use pest::error::{ErrorVariant, InputLocation};
use pest::iterators::Pair;
use pest::{Parser as _, Span};

use crate::diag::Diagnostic;
use crate::infer::infer_lvl_to_dim;
use crate::ir::{
    AffineExpr, AffineMap, DimSlice, Encoding, LevelFormat, LevelProperties, LevelType,
    VerifiedEncoding,
};
pub use crate::types::{
    ElementType, FloatKind, QuantizedType, ScalarValue, Signedness, TensorType, TypedValue,
};
use crate::verify::{verify_level_types, Location};
use sparse_ir::sparsecore::SparseCoreConfig;

mod grammar {
    #[derive(pest_derive::Parser)]
    #[grammar = "grammar.pest"]
    pub struct EncodingParser;
}

use grammar::{EncodingParser, Rule};

/// A parsed encoding together with the alias it was bound to (`#CSR = ...` gives `Some("CSR")`,
/// without the `#`).
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedEncoding {
    /// The alias name without its leading `#`, if the text starts with `#Name =`.
    pub alias: Option<String>,
    /// The verified encoding.
    pub encoding: VerifiedEncoding,
}

/// What a declaration declares: an encoding, or a tensor type (with or without an encoding).
#[derive(Clone, Debug, PartialEq)]
pub enum Declared {
    /// `#sparse_tensor.encoding<{...}>`, verified.
    Encoding(VerifiedEncoding),
    /// `tensor<20x30xf32, #sparse_tensor.encoding<{...}>>`.
    Tensor(TensorType),
}

impl Declared {
    /// The encoding declared, directly or inside the tensor type.
    pub fn encoding(&self) -> Option<&VerifiedEncoding> {
        match self {
            Declared::Encoding(e) => Some(e),
            Declared::Tensor(t) => t.encoding.as_ref(),
        }
    }
}

impl fmt::Display for Declared {
    /// The canonical text of the encoding or tensor type (without the alias).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Declared::Encoding(e) => write!(f, "{e}"),
            Declared::Tensor(t) => write!(f, "{t}"),
        }
    }
}

/// One declaration `#Alias = <encoding or tensor type>` (the alias is optional; a tensor type may
/// also be bound with MLIR's type-alias spelling `!Alias =`).
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedDeclaration {
    /// The alias name without its leading `#` / `!`.
    pub alias: Option<String>,
    /// The verified encoding or tensor type.
    pub declared: Declared,
    /// The SparseCore configuration of a `sparsecore(...)` clause after it, checked against the
    /// chip's TileSpmem (see the `sparsecore` module of this parser); `None` without one.
    pub sparsecore: Option<SparseCoreConfig>,
    /// Byte offset where the declaration starts (its alias, or the value when there is none).
    pub start: usize,
    /// Byte offset one past the end of the declaration.
    pub end: usize,
}

/// Bracket nesting deeper than this is rejected before parsing (keeps recursion bounded).
const MAX_NESTING: usize = 64;
/// Affine expression trees deeper than this are rejected.
const MAX_EXPR_DEPTH: usize = 200;
/// At most this many diagnostics are reported.
const MAX_DIAGS: usize = 100;

/// Parses and verifies one encoding (optionally `#Alias =` before it). Never panics; syntax
/// errors give exactly one diagnostic; semantic errors give one diagnostic per problem found,
/// the one MLIR reports first (parser errors in source order, then verifier rules in MLIR's
/// order). A tensor type is rejected here: use [`parse_declaration`].
pub fn parse_encoding(text: &str) -> Result<ParsedEncoding, Vec<Diagnostic>> {
    run(text, Rule::file, |cx, file| cx.file(file))
}

/// Parses and verifies one declaration: an encoding or a tensor type
/// (`tensor<20x30xf32, #sparse_tensor.encoding<{...}>>`, `tensor<?x?xf64>`), optionally bound to
/// an alias (`#Name =`, or `!Name =` for a tensor type). Tensor types get MLIR's tensor checks
/// (`dimension-rank mismatch between encoding and tensor shape: E != T`, value-type mismatches,
/// `implicit value must be zero`) and, with a static shape, the project's own: a block size must
/// divide its dimension, and `crdWidth`/`posWidth` must hold the largest coordinate/position of
/// the static level sizes. An encoding alias reference (`tensor<4xf32, #CSR>`) is an error here
/// (`undefined symbol alias id 'CSR'`): it needs [`parse_declarations`]. Errors as for
/// [`parse_encoding`]; never panics.
pub fn parse_declaration(text: &str) -> Result<ParsedDeclaration, Vec<Diagnostic>> {
    run(text, Rule::decl_file, |cx, file| {
        let decl = inner(file).find(|p| p.as_rule() == Rule::declaration)?;
        cx.declaration(decl)
    })
}

/// Parses a `.mlir` file of declarations (for build scripts): any number of `#Alias = ...`
/// encodings or tensor types, with `//` comments. A tensor type may name an encoding declared
/// earlier in the file (`tensor<?x?xf64, #CSR>`). Aliases must be unique
/// (`redefinition of alias 'CSR'`). All declarations are verified; diagnostics are grouped by
/// declaration in file order. Never panics.
pub fn parse_declarations(text: &str) -> Result<Vec<ParsedDeclaration>, Vec<Diagnostic>> {
    run(text, Rule::decls_file, |cx, file| {
        let mut out = Vec::new();
        let mut ok = true;
        for decl in inner(file).filter(|p| p.as_rule() == Rule::declaration) {
            let before = cx.diags.len();
            let decl_span = decl.clone();
            match cx.declaration(decl) {
                Some(d) => {
                    if let Some(name) = &d.alias {
                        if cx.aliases.contains_key(name) {
                            let span = inner(decl_span.clone())
                                .next()
                                .map_or(decl_span.as_span(), |a| a.as_span());
                            cx.error(span, format!("redefinition of alias '{name}'"));
                            ok = false;
                            continue;
                        }
                        if let Declared::Encoding(e) = &d.declared {
                            cx.aliases.insert(name.clone(), e.clone().into_inner());
                        }
                    }
                    out.push(d);
                }
                None => ok = false,
            }
            ok &= cx.diags.len() == before;
            cx.decl_index += 1;
        }
        ok.then_some(out)
    })
}

/// Shared driver: nesting check, pest, semantic pass, diagnostics ordering.
fn run<'t, T>(
    text: &'t str,
    rule: Rule,
    f: impl FnOnce(&mut Cx<'t>, Pair<'t, Rule>) -> Option<T>,
) -> Result<T, Vec<Diagnostic>> {
    if let Some(d) = check_nesting(text) {
        return Err(vec![d]);
    }
    let mut pairs = match EncodingParser::parse(rule, text) {
        Ok(p) => p,
        Err(e) => {
            let d = syntax_diagnostic(text, &e);
            // MLIR resolves names while parsing: an undeclared identifier before the syntax
            // error is reported first.
            let first = undeclared_before(text, d.start).unwrap_or(d);
            return Err(vec![first]);
        }
    };
    let Some(file) = pairs.next() else {
        return Err(vec![Diagnostic::new(
            text,
            0,
            0,
            "expected '#sparse_tensor.encoding'",
        )]);
    };
    let mut cx = Cx {
        text,
        diags: Vec::new(),
        rank: 0,
        decl_index: 0,
        aliases: HashMap::new(),
        lvl_spans: Vec::new(),
        width_spans: [None, None],
        implicit_span: None,
        type_alias_span: None,
    };
    let result = f(&mut cx, file);
    match result {
        Some(p) if cx.diags.is_empty() => Ok(p),
        _ => {
            let mut diags = cx.diags;
            if diags.is_empty() {
                diags.push((0, 0, Diagnostic::new(text, 0, 0, "invalid encoding")));
            }
            diags.sort_by_key(|(decl, rank, d)| (*decl, *rank, d.start, d.end));
            let mut out: Vec<Diagnostic> = Vec::new();
            for (_, _, d) in diags {
                if !out.contains(&d) {
                    out.push(d);
                }
            }
            out.truncate(MAX_DIAGS);
            Err(out)
        }
    }
}

mod help;
mod rank;
mod sparsecore;
mod syntax;
mod values;
mod walk;

use help::*;
use syntax::*;
use values::*;
use walk::*;
