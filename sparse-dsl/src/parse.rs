//! Parser and verifier: encoding text -> [`Encoding`], or [`Diagnostic`]s.
//!
//! The syntax is MLIR's `#sparse_tensor.encoding<{ ... }>` (grammar in `src/grammar.pest`),
//! optionally preceded by `#Alias =`; `//` comments and whitespace may appear between any two
//! tokens. Keys: `map`, `posWidth`, `crdWidth`, `explicitVal`, `implicitVal` (the last two are
//! checked syntactically and dropped: the IR does not carry them yet).
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
//! `a + b * -1` and unary minus as `x * -1`, except that operations whose operands are all constants
//! are folded (`-3` is `Constant(-3)`, `2 * 3` is `Constant(6)`, `i - 3` is `i + Constant(-3)`).
//! Folding makes the canonical printer's output (`d0 - 3`) parse back to the same IR.
//!
//! # The inverse map (`lvl_to_dim`)
//! Each dimension `d` is recovered from a level that is exactly `d` (the first such level), or
//! from a pair of levels `d floordiv b` and `d mod b` (same constant `b > 0`) as
//! `l1 * b + l2`; otherwise `failed to infer lvlToDim from dimToLvl`. Dimension expressions written
//! explicitly (`{l0, l1} (i = l0 * 2 + l1) -> ...`) must be an inverse of the level expressions
//! (checked by evaluation on sample coordinates); when inference succeeds the inferred (canonical)
//! form is stored, otherwise the explicit one. Level expressions containing a symbol (ELL's
//! counting `c * 3 * i`) are ignored by inference.

use std::collections::HashMap;

use pest::error::{ErrorVariant, InputLocation};
use pest::iterators::Pair;
use pest::{Parser as _, Span};

use crate::diag::Diagnostic;
use crate::ir::{
    AffineExpr, AffineMap, DimSlice, Encoding, LevelFormat, LevelProperties, LevelType,
};

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
    pub encoding: Encoding,
}

/// Bracket nesting deeper than this is rejected before parsing (keeps recursion bounded).
const MAX_NESTING: usize = 64;
/// Affine expression trees deeper than this are rejected.
const MAX_EXPR_DEPTH: usize = 200;
/// At most this many diagnostics are reported.
const MAX_DIAGS: usize = 100;

/// Parses and verifies one encoding. Never panics; syntax errors give exactly one diagnostic,
/// semantic errors give one diagnostic per problem found (sorted by position).
pub fn parse_encoding(text: &str) -> Result<ParsedEncoding, Vec<Diagnostic>> {
    if let Some(d) = check_nesting(text) {
        return Err(vec![d]);
    }
    let mut pairs = match EncodingParser::parse(Rule::file, text) {
        Ok(p) => p,
        Err(e) => return Err(vec![syntax_diagnostic(text, &e)]),
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
    };
    let result = cx.file(file);
    match result {
        Some(p) if cx.diags.is_empty() => Ok(p),
        _ => {
            let mut diags = cx.diags;
            if diags.is_empty() {
                diags.push(Diagnostic::new(text, 0, 0, "invalid encoding"));
            }
            diags.sort_by_key(|d| (d.start, d.end));
            diags.dedup();
            diags.truncate(MAX_DIAGS);
            Err(diags)
        }
    }
}

/// Rejects absurd bracket nesting before pest recurses into it.
fn check_nesting(text: &str) -> Option<Diagnostic> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'(' | b'[' | b'{' | b'<' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(Diagnostic::new(
                        text,
                        i,
                        i + 1,
                        "brackets nested too deeply",
                    ));
                }
            }
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b')' | b']' | b'}' | b'>' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Syntax errors
// ---------------------------------------------------------------------------------------------

fn syntax_diagnostic(text: &str, e: &pest::error::Error<Rule>) -> Diagnostic {
    let (start, end) = match e.location {
        InputLocation::Pos(p) => (p, p),
        InputLocation::Span((s, e)) => (s, e),
    };
    let message = match &e.variant {
        ErrorVariant::ParsingError {
            positives,
            negatives,
        } => expected_message(positives, negatives),
        ErrorVariant::CustomError { message } => message.clone(),
    };
    let end = if end > start {
        end
    } else {
        token_end(text, start)
    };
    Diagnostic::new(text, start, end, message)
}

/// End of the token starting at `start` (a word, or one character), for diagnostic spans.
fn token_end(text: &str, start: usize) -> usize {
    let Some(rest) = text.get(start..) else {
        return start.min(text.len());
    };
    let mut chars = rest.char_indices();
    match chars.next() {
        None => start,
        Some((_, c)) if c.is_alphanumeric() || c == '_' => {
            let len = rest
                .char_indices()
                .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '$' || *c == '.'))
                .map_or(rest.len(), |(i, _)| i);
            start + len
        }
        Some((_, c)) => start + c.len_utf8(),
    }
}

fn expected_message(positives: &[Rule], negatives: &[Rule]) -> String {
    let has = |r: Rule| positives.contains(&r);
    if has(Rule::arrow) {
        return "expected '->'".into();
    }
    if has(Rule::map) || has(Rule::dim_list) || has(Rule::dim_lparen) {
        return "expected '(' in dimension-specifier list".into();
    }
    if has(Rule::lvl_list) || has(Rule::lvl_lparen) {
        return "expected '(' in level-specifier list".into();
    }
    if has(Rule::dim_spec) || has(Rule::bare_id) {
        return "expected bare identifier".into();
    }
    if has(Rule::lvl_spec) {
        return "expected level specifier (affine expression ':' level format)".into();
    }
    if has(Rule::dim_rparen) {
        return "expected ')' in dimension-specifier list".into();
    }
    if has(Rule::lvl_rparen) {
        return "expected ')' in level-specifier list".into();
    }
    if has(Rule::colon) {
        return "expected ':'".into();
    }
    if positives.is_empty() {
        if let Some(r) = negatives.first() {
            return format!("unexpected {}", describe(*r));
        }
        return "syntax error".into();
    }
    let mut descs: Vec<&'static str> = Vec::new();
    for r in positives {
        let d = describe(*r);
        if !descs.contains(&d) {
            descs.push(d);
        }
    }
    let list = match descs.len() {
        1 => descs[0].to_string(),
        n => format!("{} or {}", descs[..n - 1].join(", "), descs[n - 1]),
    };
    format!("expected {list}")
}

fn describe(r: Rule) -> &'static str {
    match r {
        Rule::EOI => "end of input",
        Rule::alias_def | Rule::alias_name => "alias ('#Name =')",
        Rule::file | Rule::encoding | Rule::enc_kw => "'#sparse_tensor.encoding'",
        Rule::entry | Rule::unknown_key | Rule::unknown_entry => "attribute key",
        Rule::map_entry | Rule::kw_map => "'map'",
        Rule::pos_width_entry | Rule::kw_pos_width => "'posWidth'",
        Rule::crd_width_entry | Rule::kw_crd_width => "'crdWidth'",
        Rule::explicit_val_entry | Rule::kw_explicit_val => "'explicitVal'",
        Rule::implicit_val_entry | Rule::kw_implicit_val => "'implicitVal'",
        Rule::skip_value => "attribute value",
        Rule::typed_value => "typed value (e.g. '1.0 : f32')",
        Rule::complex_attr | Rule::complex_kw => "'#complex.number'",
        Rule::number | Rule::float => "number",
        Rule::type_expr | Rule::type_name => "type",
        Rule::map => "affine map",
        Rule::symbol_list => "symbol list",
        Rule::lvl_decl_list => "level-variable list",
        Rule::dim_list => "dimension-specifier list",
        Rule::dim_spec => "dimension specifier",
        Rule::dim_slice | Rule::slice_kw => "'#sparse_tensor'",
        Rule::kw_slice => "'slice'",
        Rule::slice_val => "slice value (integer or '?')",
        Rule::lvl_list => "level-specifier list",
        Rule::lvl_spec => "level specifier",
        Rule::lvl_binding => "level variable",
        Rule::lvl_type | Rule::format_name => "level format",
        Rule::structured_sizes => "'['",
        Rule::lvl_props => "'('",
        Rule::prop_name => "level property",
        Rule::affine_expr | Rule::affine_term | Rule::affine_unary => "affine expression",
        Rule::bare_id => "bare identifier",
        Rule::integer | Rule::signed_int => "integer",
        Rule::kw_floordiv => "'floordiv'",
        Rule::kw_ceildiv => "'ceildiv'",
        Rule::kw_mod => "'mod'",
        Rule::arrow => "'->'",
        Rule::plus => "'+'",
        Rule::minus => "'-'",
        Rule::star => "'*'",
        Rule::equal => "'='",
        Rule::comma => "','",
        Rule::colon => "':'",
        Rule::question => "'?'",
        Rule::langle => "'<'",
        Rule::rangle => "'>'",
        Rule::lbrace => "'{'",
        Rule::rbrace => "'}'",
        Rule::lbracket => "'['",
        Rule::rbracket => "']'",
        Rule::lparen | Rule::dim_lparen | Rule::lvl_lparen => "'('",
        Rule::rparen | Rule::dim_rparen | Rule::lvl_rparen => "')'",
        _ => "token",
    }
}

// ---------------------------------------------------------------------------------------------
// Semantic pass
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Binding {
    Symbol(usize),
    Dim(usize),
    Lvl(usize),
}

/// Which side of the map an expression lives on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// A dimension expression: variables are level variables.
    DimExpr,
    /// A level expression: variables are dimension variables.
    LvlExpr,
}

struct Cx<'t> {
    text: &'t str,
    diags: Vec<Diagnostic>,
}

/// The result of walking a `map = ...` entry.
struct MapOut {
    dim_to_lvl: AffineMap,
    lvl_to_dim: AffineMap,
    lvl_types: Vec<LevelType>,
    slices: Option<Vec<DimSlice>>,
}

/// A dimension specifier: its name, optional expression and optional slice.
type DimSpec<'t> = (
    Pair<'t, Rule>,
    Option<Pair<'t, Rule>>,
    Option<Pair<'t, Rule>>,
);

/// Intermediate level information (before cross-level checks).
struct LvlInfo<'t> {
    expr: Option<AffineExpr>,
    expr_span: Span<'t>,
    lt: Option<LevelType>,
    lt_span: Span<'t>,
}

fn inner<'t>(p: Pair<'t, Rule>) -> impl Iterator<Item = Pair<'t, Rule>> {
    p.into_inner()
}

impl<'t> Cx<'t> {
    fn error(&mut self, span: Span<'_>, message: impl Into<String>) {
        if self.diags.len() < MAX_DIAGS {
            self.diags.push(Diagnostic::new(
                self.text,
                span.start(),
                span.end(),
                message,
            ));
        }
    }

    fn file(&mut self, file: Pair<'t, Rule>) -> Option<ParsedEncoding> {
        let mut alias = None;
        let mut encoding = None;
        for p in inner(file) {
            match p.as_rule() {
                Rule::alias_def => {
                    if let Some(name) = inner(p).find(|q| q.as_rule() == Rule::alias_name) {
                        alias = Some(name.as_str().trim_start_matches('#').to_string());
                    }
                }
                Rule::encoding => encoding = self.encoding(p),
                _ => {}
            }
        }
        Some(ParsedEncoding {
            alias,
            encoding: encoding?,
        })
    }

    fn encoding(&mut self, enc: Pair<'t, Rule>) -> Option<Encoding> {
        let enc_span = enc.as_span();
        let mut seen: HashMap<&'t str, ()> = HashMap::new();
        let mut map: Option<Option<MapOut>> = None;
        let mut pos_width: Option<(Option<i64>, String, Span<'t>)> = None;
        let mut crd_width: Option<(Option<i64>, String, Span<'t>)> = None;
        let mut rbrace_span = enc_span;
        for e in inner(enc) {
            if e.as_rule() == Rule::rbrace {
                rbrace_span = e.as_span();
            }
            if e.as_rule() != Rule::entry {
                continue;
            }
            let Some(entry) = inner(e).next() else {
                continue;
            };
            let rule = entry.as_rule();
            let mut parts = inner(entry);
            let Some(key) = parts.next() else { continue };
            if rule == Rule::unknown_entry {
                self.error(key.as_span(), format!("unexpected key: {}", key.as_str()));
                continue;
            }
            if seen.insert(key.as_str(), ()).is_some() {
                self.error(key.as_span(), format!("duplicate key: {}", key.as_str()));
                continue;
            }
            let value = parts.find(|p| p.as_rule() != Rule::equal);
            match (rule, value) {
                (Rule::map_entry, Some(v)) => map = Some(self.map(v)),
                (Rule::pos_width_entry, Some(v)) => pos_width = Some(self.signed_int(&v)),
                (Rule::crd_width_entry, Some(v)) => crd_width = Some(self.signed_int(&v)),
                // explicitVal / implicitVal: syntax checked by the grammar, not in the IR yet.
                _ => {}
            }
        }

        let map = match map {
            None => {
                self.error(rbrace_span, "expected a non-empty array for lvlTypes");
                None
            }
            Some(m) => m,
        };
        let has_nm = map.as_ref().is_some_and(|m| {
            m.lvl_types
                .iter()
                .any(|t| matches!(t.format, LevelFormat::NOutOfM { .. }))
        });

        let check_width = |cx: &mut Self,
                           w: Option<(Option<i64>, String, Span<'t>)>,
                           what: &str,
                           allow2: bool| {
            let Some((v, txt, span)) = w else {
                return Some(0);
            };
            match v {
                Some(v @ (0 | 8 | 16 | 32 | 64)) => Some(v as u32),
                Some(2) if allow2 => Some(2),
                _ => {
                    cx.error(span, format!("unexpected {what} bitwidth: {txt}"));
                    None
                }
            }
        };
        let pos_width = check_width(self, pos_width, "position", false);
        let crd_width = check_width(self, crd_width, "coordinate", has_nm);

        let map = map?;
        Some(Encoding {
            lvl_types: map.lvl_types,
            dim_to_lvl: map.dim_to_lvl,
            lvl_to_dim: map.lvl_to_dim,
            pos_width: pos_width?,
            crd_width: crd_width?,
            dim_slices: map.slices,
        })
    }

    /// `signed_int` -> (value if it fits in i64, normalized text, span).
    fn signed_int(&mut self, p: &Pair<'t, Rule>) -> (Option<i64>, String, Span<'t>) {
        let mut neg = false;
        let mut digits = "";
        for q in p.clone().into_inner() {
            match q.as_rule() {
                Rule::minus => neg = !neg,
                Rule::integer => digits = q.as_str(),
                _ => {}
            }
        }
        let v = parse_uint(digits)
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| if neg { -v } else { v });
        let txt = match v {
            Some(v) => v.to_string(),
            None => format!("{}{}", if neg { "-" } else { "" }, digits),
        };
        (v, txt, p.as_span())
    }

    fn define(&mut self, names: &mut HashMap<&'t str, Binding>, id: &Pair<'t, Rule>, b: Binding) {
        let name = id.as_str();
        if names.contains_key(name) {
            self.error(id.as_span(), format!("redefinition of identifier '{name}'"));
        } else {
            names.insert(name, b);
        }
    }

    fn map(&mut self, map: Pair<'t, Rule>) -> Option<MapOut> {
        let mut names: HashMap<&'t str, Binding> = HashMap::new();
        let mut num_symbols = 0usize;
        let mut decls: Option<(usize, Span<'t>)> = None;
        let mut dims: Vec<DimSpec<'t>> = Vec::new();
        let mut lvl_list = None;
        for p in inner(map) {
            match p.as_rule() {
                Rule::symbol_list => {
                    for id in inner(p).filter(|q| q.as_rule() == Rule::bare_id) {
                        self.define(&mut names, &id, Binding::Symbol(num_symbols));
                        num_symbols += 1;
                    }
                }
                Rule::lvl_decl_list => {
                    let span = p.as_span();
                    let mut n = 0;
                    for id in inner(p).filter(|q| q.as_rule() == Rule::bare_id) {
                        self.define(&mut names, &id, Binding::Lvl(n));
                        n += 1;
                    }
                    decls = Some((n, span));
                }
                Rule::dim_list => {
                    for spec in inner(p).filter(|q| q.as_rule() == Rule::dim_spec) {
                        let mut id = None;
                        let mut expr = None;
                        let mut slice = None;
                        for q in inner(spec) {
                            match q.as_rule() {
                                Rule::bare_id => id = Some(q),
                                Rule::affine_expr => expr = Some(q),
                                Rule::dim_slice => slice = Some(q),
                                _ => {}
                            }
                        }
                        if let Some(id) = id {
                            self.define(&mut names, &id, Binding::Dim(dims.len()));
                            dims.push((id, expr, slice));
                        }
                    }
                }
                Rule::lvl_list => lvl_list = Some(p),
                _ => {}
            }
        }
        let lvl_list = lvl_list?;
        let num_dims = dims.len();
        let mut ok = true;

        // Dimension expressions (over level variables) and slices.
        let mut dim_exprs: Vec<Option<(AffineExpr, Span<'t>)>> = Vec::with_capacity(num_dims);
        let mut slices: Vec<Option<DimSlice>> = Vec::with_capacity(num_dims);
        for (_, expr, slice) in &dims {
            match expr {
                Some(e) => match self.expr(e.clone(), &names, Side::DimExpr) {
                    Some((x, _)) => dim_exprs.push(Some((x, e.as_span()))),
                    None => {
                        ok = false;
                        dim_exprs.push(None);
                    }
                },
                None => dim_exprs.push(None),
            }
            match slice {
                Some(s) => match self.slice(s.clone()) {
                    Some(s) => slices.push(Some(s)),
                    None => {
                        ok = false;
                        slices.push(None);
                    }
                },
                None => slices.push(None),
            }
        }

        // Level specifications.
        let lvl_list_span = lvl_list.as_span();
        let mut lvls: Vec<LvlInfo<'t>> = Vec::new();
        for spec in inner(lvl_list).filter(|q| q.as_rule() == Rule::lvl_spec) {
            let idx = lvls.len();
            let spec_span = spec.as_span();
            let mut info = LvlInfo {
                expr: None,
                expr_span: spec_span,
                lt: None,
                lt_span: spec_span,
            };
            for q in inner(spec) {
                match q.as_rule() {
                    Rule::lvl_binding => {
                        let Some(id) = inner(q).find(|r| r.as_rule() == Rule::bare_id) else {
                            continue;
                        };
                        if decls.is_some() {
                            match names.get(id.as_str()) {
                                Some(Binding::Lvl(k)) if *k == idx => {}
                                Some(Binding::Lvl(k)) => {
                                    let k = *k;
                                    self.error(
                                        id.as_span(),
                                        format!(
                                            "Level-variable ordering mismatch. The variable '{}' was forward-declared as the {}-th level; but is bound by the {}-th specification.",
                                            id.as_str(),
                                            k,
                                            idx
                                        ),
                                    );
                                    ok = false;
                                }
                                Some(_) => {
                                    self.error(
                                        id.as_span(),
                                        format!("redefinition of identifier '{}'", id.as_str()),
                                    );
                                    ok = false;
                                }
                                None => {
                                    self.error(id.as_span(), "use of undeclared identifier");
                                    ok = false;
                                }
                            }
                        } else {
                            let before = self.diags.len();
                            self.define(&mut names, &id, Binding::Lvl(idx));
                            ok &= self.diags.len() == before;
                        }
                    }
                    Rule::affine_expr => {
                        info.expr_span = q.as_span();
                        info.expr = self.expr(q, &names, Side::LvlExpr).map(|(e, _)| e);
                        ok &= info.expr.is_some();
                    }
                    Rule::lvl_type => {
                        info.lt_span = q.as_span();
                        info.lt = self.lvl_type(q);
                        ok &= info.lt.is_some();
                    }
                    _ => {}
                }
            }
            lvls.push(info);
        }

        if lvls.is_empty() {
            self.error(lvl_list_span, "expected a non-empty array for lvlTypes");
            return None;
        }
        if let Some((n, _)) = decls {
            if n != lvls.len() {
                self.error(
                    lvl_list_span,
                    format!(
                        "Level-rank mismatch between forward-declarations and specifiers. Declared {} level-variables; but got {} level-specifiers.",
                        n,
                        lvls.len()
                    ),
                );
                return None;
            }
        }

        // Cross-level checks on the level types (only when every level type is valid).
        if lvls.iter().all(|l| l.lt.is_some()) {
            ok &= self.check_lvl_types(&lvls);
        }
        if !ok {
            return None;
        }

        let lvl_types: Vec<LevelType> = lvls.iter().filter_map(|l| l.lt).collect();
        let results: Vec<AffineExpr> = lvls.iter().filter_map(|l| l.expr.clone()).collect();
        let dim_to_lvl = AffineMap {
            num_vars: num_dims,
            num_symbols,
            results,
        };

        // Inverse map: inferred where possible, else explicit.
        let mut inv = Vec::with_capacity(num_dims);
        for (d, (id, _, _)) in dims.iter().enumerate() {
            match (infer_dim(&dim_to_lvl, d), dim_exprs[d].take()) {
                (Some(x), None) => inv.push(x),
                (_, Some((x, span))) => {
                    if !is_inverse_for_dim(&dim_to_lvl, &x, d) {
                        self.error(span, "expected lvlToDim to be an inverse of dimToLvl");
                        ok = false;
                    }
                    inv.push(infer_dim(&dim_to_lvl, d).unwrap_or(x));
                }
                (None, None) => {
                    self.error(id.as_span(), "failed to infer lvlToDim from dimToLvl");
                    ok = false;
                }
            }
        }
        if !ok {
            return None;
        }
        let lvl_to_dim = AffineMap {
            num_vars: lvl_types.len(),
            num_symbols,
            results: inv,
        };

        let slices = if slices.iter().any(Option::is_some) {
            Some(
                slices
                    .into_iter()
                    .map(|s| {
                        s.unwrap_or(DimSlice {
                            offset: Some(0),
                            size: None,
                            stride: Some(1),
                        })
                    })
                    .collect(),
            )
        } else {
            None
        };
        Some(MapOut {
            dim_to_lvl,
            lvl_to_dim,
            lvl_types,
            slices,
        })
    }

    fn slice(&mut self, s: Pair<'t, Rule>) -> Option<DimSlice> {
        let vals: Vec<Pair<'t, Rule>> = inner(s)
            .filter(|q| q.as_rule() == Rule::slice_val)
            .collect();
        let mut out = [None; 3];
        let mut ok = vals.len() == 3;
        for (k, v) in vals.iter().enumerate().take(3) {
            let Some(q) = v.clone().into_inner().next() else {
                continue;
            };
            if q.as_rule() == Rule::question {
                continue;
            }
            let (val, _, span) = self.signed_int(&q);
            let (min, what) = match k {
                0 => (0, "expect non-negative value or ? for slice offset"),
                1 => (1, "expect positive value or ? for slice size"),
                _ => (1, "expect positive value or ? for slice stride"),
            };
            match val {
                Some(x) if x >= min => out[k] = Some(x as u64),
                _ => {
                    self.error(span, what);
                    ok = false;
                }
            }
        }
        ok.then_some(DimSlice {
            offset: out[0],
            size: out[1],
            stride: out[2],
        })
    }

    fn lvl_type(&mut self, p: Pair<'t, Rule>) -> Option<LevelType> {
        let span = p.as_span();
        let mut name = None;
        let mut sizes = None;
        let mut props = Vec::new();
        for q in inner(p) {
            match q.as_rule() {
                Rule::format_name => name = Some(q),
                Rule::structured_sizes => sizes = Some(q),
                Rule::lvl_props => {
                    props.extend(inner(q).filter(|r| r.as_rule() == Rule::prop_name))
                }
                _ => {}
            }
        }
        let name = name?;
        let nm = |this: &mut Self, n: u64, m: u64, at: Span<'_>| -> Option<LevelFormat> {
            if n > m {
                this.error(at, "expected n <= m in n_out_of_m");
                return None;
            }
            Some(LevelFormat::NOutOfM {
                n: u32::try_from(n).ok()?,
                m: u32::try_from(m).ok()?,
            })
        };
        let format = match name.as_str() {
            "dense" => Some(LevelFormat::Dense),
            "batch" => Some(LevelFormat::Batch),
            "compressed" => Some(LevelFormat::Compressed),
            "loose_compressed" => Some(LevelFormat::LooseCompressed),
            "singleton" => Some(LevelFormat::Singleton),
            "structured" => {
                let Some(sz) = sizes.clone() else {
                    self.error(name.as_span(), "expected exactly 2 structured sizes");
                    return None;
                };
                let sz_span = sz.as_span();
                let vals: Vec<Pair<'t, Rule>> = inner(sz)
                    .filter(|q| q.as_rule() == Rule::signed_int)
                    .collect();
                if vals.len() != 2 {
                    self.error(sz_span, "expected exactly 2 structured sizes");
                    return None;
                }
                let mut nm_vals = [0u64; 2];
                for (k, v) in vals.iter().enumerate() {
                    let (val, txt, vspan) = self.signed_int(v);
                    match val.and_then(|x| u32::try_from(x).ok()) {
                        Some(x) => nm_vals[k] = u64::from(x),
                        None => {
                            self.error(vspan, format!("invalid structured size: {txt}"));
                            return None;
                        }
                    }
                }
                Some(nm(self, nm_vals[0], nm_vals[1], sz_span)?)
            }
            s => match parse_block_name(s) {
                Some(Some((n, m))) => Some(nm(self, n, m, name.as_span())?),
                Some(None) => {
                    self.error(
                        name.as_span(),
                        format!("invalid structured size in level format: {s}"),
                    );
                    return None;
                }
                None => None,
            },
        };
        let Some(mut format) = format else {
            self.error(
                name.as_span(),
                format!("unknown level format: {}", name.as_str()),
            );
            return None;
        };
        if let (Some(sz), false) = (&sizes, name.as_str() == "structured") {
            self.error(
                sz.as_span(),
                format!(
                    "unexpected structured sizes on level format: {}",
                    name.as_str()
                ),
            );
            return None;
        }
        let mut properties = LevelProperties::default();
        let mut high = false;
        let mut soa_span = None;
        let mut bad = false;
        for pr in &props {
            match pr.as_str() {
                "nonunique" => properties.nonunique = true,
                "nonordered" => properties.nonordered = true,
                "soa" => {
                    properties.soa = true;
                    soa_span.get_or_insert(pr.as_span());
                }
                "high" => high = true,
                other => {
                    self.error(pr.as_span(), format!("unknown level property: {other}"));
                    bad = true;
                }
            }
        }
        if bad {
            return None;
        }
        let supports = match format {
            LevelFormat::Dense | LevelFormat::Batch | LevelFormat::NOutOfM { .. } => {
                props.is_empty()
            }
            LevelFormat::Singleton => !high,
            LevelFormat::Compressed | LevelFormat::LooseCompressed => true,
        };
        if !supports {
            self.error(
                span,
                "invalid level type: level format doesn't support the properties",
            );
            return None;
        }
        if high {
            format = LevelFormat::LooseCompressed;
        }
        if let (Some(at), false) = (soa_span, format == LevelFormat::Singleton) {
            self.error(at, "SoA is only applicable to singleton lvlTypes.");
            return None;
        }
        Some(LevelType { format, properties })
    }

    /// MLIR's cross-level rules. Returns `false` if any failed.
    fn check_lvl_types(&mut self, lvls: &[LvlInfo<'t>]) -> bool {
        let lts: Vec<LevelType> = lvls.iter().filter_map(|l| l.lt).collect();
        if lts.len() != lvls.len() {
            return false;
        }
        let mut bad = vec![false; lts.len()];
        let mut err = |cx: &mut Self, l: usize, msg: &str| {
            if !bad[l] {
                bad[l] = true;
                cx.error(lvls[l].lt_span, msg);
            }
        };
        for (l, lt) in lts.iter().enumerate() {
            if lt.format == LevelFormat::Batch
                && lts[..l].iter().any(|t| t.format != LevelFormat::Batch)
            {
                err(self, l, "Batch lvlType can only be leading levels.");
            }
            if lt.format == LevelFormat::Singleton {
                let ok_prev = l > 0
                    && matches!(
                        lts[l - 1].format,
                        LevelFormat::Compressed
                            | LevelFormat::LooseCompressed
                            | LevelFormat::Singleton
                    );
                if !ok_prev {
                    err(
                        self,
                        l,
                        "expected compressed or loose_compressed level before singleton level",
                    );
                } else if lts[l - 1].format == LevelFormat::Singleton {
                    // Same layout as the first singleton of the chain.
                    let mut first = l - 1;
                    while first > 0 && lts[first - 1].format == LevelFormat::Singleton {
                        first -= 1;
                    }
                    if lts[first].properties.soa != lt.properties.soa {
                        err(
                            self,
                            l,
                            "expected all singleton lvlTypes stored in the same memory layout (SoA vs AoS).",
                        );
                    }
                }
            }
            if lt.format == LevelFormat::Dense && l > 0 && !lts[l - 1].is_unique() {
                err(self, l, "dense level cannot follow a non-unique level");
            }
        }
        if let Some(k) = lts
            .iter()
            .position(|t| matches!(t.format, LevelFormat::NOutOfM { .. }))
        {
            if k != lts.len() - 1 {
                err(self, k, "expected n_out_of_m to be the last level type");
            } else if !lts[..k].iter().all(|t| t.format == LevelFormat::Dense) {
                err(
                    self,
                    k,
                    "expected all dense lvlTypes before a n_out_of_m level",
                );
            } else if let LevelFormat::NOutOfM { m, .. } = lts[k].format {
                if let Some(expr) = &lvls[k].expr {
                    let m = i64::from(m);
                    let blocked = match expr {
                        AffineExpr::Mod(a, b) if b.as_constant() == Some(m) => {
                            a.as_var().is_some_and(|d| {
                                lvls.iter().any(|o| {
                                    matches!(&o.expr, Some(AffineExpr::FloorDiv(x, y))
                                    if x.as_var() == Some(d) && y.as_constant() == Some(m))
                                })
                            })
                        }
                        _ => false,
                    };
                    if !blocked && !bad[k] {
                        bad[k] = true;
                        self.error(
                            lvls[k].expr_span,
                            "expected coeffiencts of Affine expressions to be equal to m of n_out_of_m level",
                        );
                    }
                }
            }
        }
        !bad.iter().any(|b| *b)
    }

    // ---- affine expressions -------------------------------------------------------------------

    /// Builds an affine expression; `None` after reporting an error. Returns the tree depth too.
    fn expr(
        &mut self,
        p: Pair<'t, Rule>,
        names: &HashMap<&'t str, Binding>,
        side: Side,
    ) -> Option<(AffineExpr, usize)> {
        match p.as_rule() {
            Rule::affine_expr | Rule::affine_term => {
                let mut acc: Option<Option<(AffineExpr, usize)>> = None;
                let mut op = Rule::plus;
                for q in inner(p) {
                    match q.as_rule() {
                        Rule::plus
                        | Rule::minus
                        | Rule::star
                        | Rule::kw_floordiv
                        | Rule::kw_ceildiv
                        | Rule::kw_mod => op = q.as_rule(),
                        _ => {
                            let span = q.as_span();
                            let rhs = self.expr(q, names, side);
                            acc = Some(match (acc, rhs) {
                                (None, r) => r,
                                (Some(Some(l)), Some(r)) => self.combine(op, l, r, span),
                                _ => None,
                            });
                        }
                    }
                }
                acc.flatten()
            }
            Rule::affine_unary => {
                let mut negs = 0usize;
                let mut value = None;
                for q in inner(p) {
                    match q.as_rule() {
                        Rule::minus => negs += 1,
                        Rule::lparen | Rule::rparen => {}
                        _ => value = Some(q),
                    }
                }
                let span = value.as_ref().map(|v| v.as_span());
                let mut e = self.expr(value?, names, side)?;
                for _ in 0..negs {
                    e = self.negate(e, span?)?;
                }
                Some(e)
            }
            Rule::integer => match parse_uint(p.as_str()).and_then(|v| i64::try_from(v).ok()) {
                Some(v) => Some((AffineExpr::Constant(v), 1)),
                None => {
                    self.error(
                        p.as_span(),
                        "integer literal too large for an affine expression",
                    );
                    None
                }
            },
            Rule::bare_id => {
                let e = match (names.get(p.as_str()), side) {
                    (Some(Binding::Symbol(s)), _) => Some(AffineExpr::Symbol(*s)),
                    (Some(Binding::Dim(d)), Side::LvlExpr) => Some(AffineExpr::Var(*d)),
                    (Some(Binding::Lvl(l)), Side::DimExpr) => Some(AffineExpr::Var(*l)),
                    _ => None,
                };
                match e {
                    Some(e) => Some((e, 1)),
                    None => {
                        self.error(p.as_span(), "use of undeclared identifier");
                        None
                    }
                }
            }
            _ => {
                self.error(p.as_span(), "expected affine expression");
                None
            }
        }
    }

    fn negate(
        &mut self,
        (e, depth): (AffineExpr, usize),
        span: Span<'_>,
    ) -> Option<(AffineExpr, usize)> {
        match e {
            AffineExpr::Constant(c) => match c.checked_neg() {
                Some(v) => Some((AffineExpr::Constant(v), 1)),
                None => {
                    self.error(span, "integer overflow in affine expression");
                    None
                }
            },
            e => self.node(
                AffineExpr::Mul(Box::new(e), Box::new(AffineExpr::Constant(-1))),
                depth + 1,
                span,
            ),
        }
    }

    fn node(&mut self, e: AffineExpr, depth: usize, span: Span<'_>) -> Option<(AffineExpr, usize)> {
        if depth > MAX_EXPR_DEPTH {
            self.error(span, "affine expression is too deeply nested");
            return None;
        }
        Some((e, depth))
    }

    fn combine(
        &mut self,
        op: Rule,
        (a, da): (AffineExpr, usize),
        (b, db): (AffineExpr, usize),
        span: Span<'_>,
    ) -> Option<(AffineExpr, usize)> {
        let (b, db) = if op == Rule::minus {
            self.negate((b, db), span)?
        } else {
            (b, db)
        };
        let depth = da.max(db) + 1;
        let (ca, cb) = (a.as_constant(), b.as_constant());
        let opname = match op {
            Rule::kw_floordiv => "floordiv",
            Rule::kw_ceildiv => "ceildiv",
            Rule::kw_mod => "mod",
            _ => "",
        };
        if !opname.is_empty() {
            if has_var(&b) {
                self.error(
                    span,
                    format!("non-affine expression: right operand of {opname} has to be either a constant or symbolic"),
                );
                return None;
            }
            if cb == Some(0) {
                self.error(
                    span,
                    format!("division by zero in affine expression ({opname} 0)"),
                );
                return None;
            }
        }
        if op == Rule::star && has_var(&a) && has_var(&b) {
            self.error(
                span,
                "non-affine expression: at least one of the multiply operands has to be either a constant or symbolic",
            );
            return None;
        }
        let (a, b) = (Box::new(a), Box::new(b));
        let e = match op {
            Rule::plus | Rule::minus => AffineExpr::Add(a, b),
            Rule::star => AffineExpr::Mul(a, b),
            Rule::kw_floordiv => AffineExpr::FloorDiv(a, b),
            Rule::kw_ceildiv => AffineExpr::CeilDiv(a, b),
            _ => AffineExpr::Mod(a, b),
        };
        if ca.is_some() && cb.is_some() {
            return match e.eval(&[], &[]) {
                Some(v) => Some((AffineExpr::Constant(v), 1)),
                None => {
                    self.error(span, "integer overflow in affine expression");
                    None
                }
            };
        }
        self.node(e, depth, span)
    }
}

/// `true` if the expression mentions a variable (is not constant-or-symbolic).
fn has_var(e: &AffineExpr) -> bool {
    match e {
        AffineExpr::Var(_) => true,
        AffineExpr::Symbol(_) | AffineExpr::Constant(_) => false,
        AffineExpr::Add(a, b)
        | AffineExpr::Mul(a, b)
        | AffineExpr::FloorDiv(a, b)
        | AffineExpr::CeilDiv(a, b)
        | AffineExpr::Mod(a, b) => has_var(a) || has_var(b),
    }
}

/// Decimal or `0x` hexadecimal unsigned integer literal.
fn parse_uint(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

/// `blockN_M` -> `Some(Some((N, M)))`; `blockX` with a malformed or huge N/M -> `Some(None)`;
/// any other name -> `None`.
fn parse_block_name(s: &str) -> Option<Option<(u64, u64)>> {
    let rest = s.strip_prefix("block")?;
    let (n, m) = rest.split_once('_')?;
    if n.is_empty()
        || m.is_empty()
        || !n.bytes().all(|b| b.is_ascii_digit())
        || !m.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    match (n.parse::<u32>(), m.parse::<u32>()) {
        (Ok(n), Ok(m)) => Some(Some((u64::from(n), u64::from(m)))),
        _ => Some(None),
    }
}

/// Infers the expression of dimension `d` over level variables, if possible (see module docs).
pub(crate) fn infer_dim(dim_to_lvl: &AffineMap, d: usize) -> Option<AffineExpr> {
    let rs = &dim_to_lvl.results;
    if let Some(l) = rs.iter().position(|r| r.as_var() == Some(d)) {
        return Some(AffineExpr::Var(l));
    }
    for (l1, r1) in rs.iter().enumerate() {
        let AffineExpr::FloorDiv(a, b) = r1 else {
            continue;
        };
        let Some(bv) = b.as_constant() else { continue };
        if a.as_var() != Some(d) || bv <= 0 {
            continue;
        }
        let l2 = rs.iter().position(|r2| {
            matches!(r2, AffineExpr::Mod(x, y) if x.as_var() == Some(d) && y.as_constant() == Some(bv))
        });
        if let Some(l2) = l2 {
            return Some(AffineExpr::Add(
                Box::new(AffineExpr::Mul(
                    Box::new(AffineExpr::Var(l1)),
                    Box::new(AffineExpr::Constant(bv)),
                )),
                Box::new(AffineExpr::Var(l2)),
            ));
        }
    }
    None
}

/// Infers the whole inverse map, if every dimension can be inferred.
pub(crate) fn infer_lvl_to_dim(dim_to_lvl: &AffineMap) -> Option<AffineMap> {
    let results = (0..dim_to_lvl.num_vars)
        .map(|d| infer_dim(dim_to_lvl, d))
        .collect::<Option<Vec<_>>>()?;
    Some(AffineMap {
        num_vars: dim_to_lvl.results.len(),
        num_symbols: dim_to_lvl.num_symbols,
        results,
    })
}

/// Checks on sample coordinates that `x` (over level variables) recovers dimension `d` from the
/// levels `dim_to_lvl` computes. Symbols are given the value 1.
fn is_inverse_for_dim(dim_to_lvl: &AffineMap, x: &AffineExpr, d: usize) -> bool {
    let n = dim_to_lvl.num_vars;
    let symbols = vec![1i64; dim_to_lvl.num_symbols];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % 97
    };
    let mut checked = 0;
    for sample in 0..300 {
        let dims: Vec<i64> = (0..n)
            .map(|k| match sample {
                0 => 0,
                1..=20 => ((sample + k * 7) % 13) as i64,
                _ => next() as i64,
            })
            .collect();
        let Some(lvls) = dim_to_lvl.eval(&dims, &symbols) else {
            continue;
        };
        checked += 1;
        if x.eval(&lvls, &symbols) != Some(dims[d]) {
            return false;
        }
    }
    checked > 0 || n == 0
}
