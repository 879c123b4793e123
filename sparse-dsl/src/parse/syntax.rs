//! Syntax diagnostics: the nesting guard, pest errors turned into MLIR's messages, and the name
//! resolution of a map before a syntax error (`undeclared_before` / `scan_map`, over the token
//! stream of the grammar's `tokens` rule: the parser has one tokenizer, pest's).

use super::*;

pub(super) fn check_nesting(text: &str) -> Option<Diagnostic> {
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

pub(super) fn syntax_diagnostic(text: &str, e: &pest::error::Error<Rule>) -> Diagnostic {
    let (start, end) = match e.location {
        InputLocation::Pos(p) => (p, p),
        InputLocation::Span((s, e)) => (s, e),
    };
    // MLIR's lexer rejects characters that start no token before any parser rule sees them.
    let bad_char = text
        .get(start..)
        .and_then(|r| r.chars().next())
        .filter(|c| {
            !(c.is_ascii_alphanumeric()
                || c.is_whitespace()
                || "#!@%^\"()[]{}<>,:=+-*?._/|$".contains(*c))
        });
    let message = match &e.variant {
        _ if bad_char.is_some() => "unexpected character".to_string(),
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
pub(super) fn token_end(text: &str, start: usize) -> usize {
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

/// The first diagnostic MLIR's map parser reports before byte `limit` while resolving names in a
/// `map = ...` value (an undeclared identifier, or a missing `=` after a declared level
/// variable), found as MLIR's map parser meets it: names in dimension expressions must be symbols
/// or forward-declared level variables, in level expressions symbols or dimensions, and with
/// forward declarations every level specifier starts with a declared level variable. Scanning a
/// map stops at the first token MLIR's grammar would not accept there (the syntax error).
pub(super) fn undeclared_before(text: &str, limit: usize) -> Option<Diagnostic> {
    let toks = map_tokens(text);
    let mut i = 0;
    while i + 1 < toks.len() && toks[i].1 < limit {
        if toks[i].0 == "map" && toks[i + 1].0 == "=" {
            if let Some((s, e, msg)) = scan_map(&toks, i + 2) {
                if s < limit {
                    return Some(Diagnostic::new(text, s, e, msg));
                }
                return None;
            }
        }
        i += 1;
    }
    None
}

/// Tokens `(text, start, end)` for [`undeclared_before`], read with the grammar's own token rules
/// (`tokens` in `grammar.pest`: words (identifiers, also `#name`, and numbers), `->`, and single
/// punctuation characters; whitespace, `//` comments and strings are skipped), so the parser has
/// one tokenizer.
pub(super) fn map_tokens(text: &str) -> Vec<(&str, usize, usize)> {
    let Ok(pairs) = EncodingParser::parse(Rule::tokens, text) else {
        return Vec::new();
    };
    pairs
        .flat_map(|p| p.into_inner())
        .filter(|t| {
            matches!(
                t.as_rule(),
                Rule::word_token | Rule::arrow | Rule::punct_token
            )
        })
        .map(|t| (t.as_str(), t.as_span().start(), t.as_span().end()))
        .collect()
}

/// Scans one map value from token `i` (see [`undeclared_before`]); `Some((start, end, message))`
/// for the first undeclared identifier, `None` if there is none before the map's syntax ends or
/// breaks.
pub(super) fn scan_map(
    toks: &[(&str, usize, usize)],
    mut i: usize,
) -> Option<(usize, usize, String)> {
    #[derive(Clone, Copy, PartialEq)]
    enum K {
        Sym,
        Lvl,
        Dim,
    }
    let is_ident = |t: &str| t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    let tok = |i: usize| toks.get(i).map_or("", |t| t.0);
    let mut names: HashMap<&str, K> = HashMap::new();
    let decl_list =
        |i: &mut usize, close: &str, kind: K, names: &mut HashMap<_, _>| -> Option<()> {
            *i += 1;
            loop {
                let t = tok(*i);
                if t == close {
                    *i += 1;
                    return Some(());
                }
                if is_ident(t) {
                    names.insert(t, kind);
                } else if t != "," {
                    return None;
                }
                *i += 1;
            }
        };
    if tok(i) == "[" {
        decl_list(&mut i, "]", K::Sym, &mut names)?;
    }
    let has_decls = tok(i) == "{";
    if has_decls {
        decl_list(&mut i, "}", K::Lvl, &mut names)?;
    }
    // An affine expression: every name must be one of `allowed`; stops at a token that cannot
    // continue it (depth 0).
    let expr = |i: &mut usize,
                names: &HashMap<&str, K>,
                allowed: [K; 2]|
     -> Result<(), (usize, usize, String)> {
        let mut depth = 0usize;
        loop {
            let (t, s, e) = toks
                .get(*i)
                .copied()
                .unwrap_or(("", usize::MAX, usize::MAX));
            match t {
                "(" => depth += 1,
                ")" if depth > 0 => depth -= 1,
                "+" | "-" | "*" | "floordiv" | "ceildiv" | "mod" => {}
                _ if is_ident(t) => {
                    if !names.get(t).is_some_and(|k| allowed.contains(k)) {
                        return Err((s, e, "use of undeclared identifier".to_string()));
                    }
                }
                _ if t.starts_with(|c: char| c.is_ascii_digit()) => {}
                _ => return Ok(()),
            }
            *i += 1;
        }
    };
    // Skips a slice or level type up to `,` / `)` at depth 0.
    let skip = |i: &mut usize| {
        let mut depth = 0usize;
        loop {
            match tok(*i) {
                "" => return,
                "(" | "[" | "<" => depth += 1,
                ")" | "]" | ">" if depth > 0 => depth -= 1,
                "," | ")" if depth == 0 => return,
                _ => {}
            }
            *i += 1;
        }
    };
    if tok(i) != "(" {
        return None;
    }
    i += 1;
    if tok(i) == ")" {
        i += 1;
    } else {
        loop {
            let t = tok(i);
            if !is_ident(t) {
                return None;
            }
            i += 1;
            if tok(i) == "=" {
                i += 1;
                if let Err(u) = expr(&mut i, &names, [K::Sym, K::Lvl]) {
                    return Some(u);
                }
            }
            names.insert(t, K::Dim);
            if tok(i) == ":" {
                i += 1;
                skip(&mut i);
            }
            match tok(i) {
                "," => i += 1,
                ")" => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    if tok(i) != "->" || tok(i + 1) != "(" {
        return None;
    }
    i += 2;
    if tok(i) == ")" {
        return None;
    }
    loop {
        if has_decls {
            let (t, s, e) = toks.get(i).copied()?;
            if !is_ident(t) {
                return None;
            }
            if names.get(t) != Some(&K::Lvl) {
                return Some((s, e, format!("use of undeclared identifier '{t}'")));
            }
            if tok(i + 1) != "=" {
                // MLIR requires the binding once level variables are declared
                let (_, s, e) = toks.get(i + 1).copied()?;
                return Some((s, e, "expected '='".to_string()));
            }
            i += 2;
        }
        if let Err(u) = expr(&mut i, &names, [K::Sym, K::Dim]) {
            return Some(u);
        }
        if tok(i) != ":" {
            return None;
        }
        i += 1;
        skip(&mut i);
        match tok(i) {
            "," => i += 1,
            _ => return None,
        }
    }
}

pub(super) fn expected_message(positives: &[Rule], negatives: &[Rule]) -> String {
    let has = |r: Rule| positives.contains(&r);
    if has(Rule::lvl_type) || has(Rule::format_name) || has(Rule::kw_structured) {
        return "expected valid level format (e.g. dense, compressed or singleton)".into();
    }
    if has(Rule::prop_name) {
        return "expected valid level property (e.g. nonordered, nonunique or high)".into();
    }
    if has(Rule::dim_slice) || has(Rule::slice_kw) {
        return "expected attribute value".into();
    }
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

pub(super) fn describe(r: Rule) -> &'static str {
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
        Rule::elem_type | Rule::builtin_type | Rule::complex_type | Rule::kw_complex => "type",
        Rule::quant_type | Rule::quant_kw => "'!quant.uniform'",
        Rule::tensor_type | Rule::kw_tensor => "'tensor'",
        Rule::declaration => "'#sparse_tensor.encoding' or 'tensor'",
        Rule::sparsecore | Rule::kw_sparsecore => "'sparsecore'",
        Rule::sc_option | Rule::sc_key => "sparsecore option",
        Rule::sc_lparen => "'('",
        Rule::sc_rparen => "')'",
        Rule::shape => "dimension list",
        Rule::tensor_enc | Rule::alias_ref => "encoding",
        Rule::bool_lit => "'true' or 'false'",
        Rule::width_value => "integer",
        Rule::bad_value => "attribute value",
        Rule::kw_structured => "level format",
        Rule::structured_size | Rule::skip_size => "structured size",
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
