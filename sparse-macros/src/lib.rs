//! The `sparse_format!` proc macro: a thin shim over `sparse-dsl` (as `pest_derive` is over
//! `pest_generator`). It reads declarations with `syn`, renders each inline encoding back to text
//! while remembering which span every piece of text came from, lets `sparse-dsl` parse, verify
//! and generate, and turns every diagnostic into a `compile_error!` over the offending tokens,
//! with the diagnostic's help (if any) as a `= help: ...` line under the message.

#![warn(missing_docs)]

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, LitStr, Token, Visibility};

use sparse_dsl::codegen::{generate, Declaration};
use sparse_dsl::diag::Diagnostic;
use sparse_dsl::parse::parse_declaration;

/// Declares sparse tensor formats in MLIR's encoding language and generates, for each, a
/// monomorphised storage struct `Name<V = f64>` with its constructors, iterators and kernels.
///
/// ```ignore
/// sparse::sparse_format! {
///     /// Compressed sparse row with 32-bit positions and coordinates.
///     pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
///     pub Coo = "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>";
/// }
/// ```
///
/// The encoding is written inline as Rust tokens exactly as MLIR writes it, or as a string
/// literal. A bad encoding is a compile error over the offending tokens (for the string form, at
/// the literal, with `line:column` inside it), with a `= help: ...` line when the parser knows a
/// fix; all errors of all declarations are reported together.
/// The generated code names the runtime as `::sparse::runtime`.
#[proc_macro]
pub fn sparse_format(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    match syn::parse::<Declarations>(input) {
        Ok(decls) => expand(decls).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

struct Declarations(Vec<RawDeclaration>);

struct RawDeclaration {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    encoding: EncodingSource,
}

enum EncodingSource {
    /// The inline tokens (may be empty; the parser then reports it).
    Tokens(TokenStream, Span),
    /// A string literal.
    Literal(LitStr),
}

impl Parse for Declarations {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut out = Vec::new();
        while !input.is_empty() {
            let attrs = input.call(Attribute::parse_outer)?;
            let vis: Visibility = input.parse()?;
            let name: Ident = input.parse()?;
            let eq: Token![=] = input.parse()?;
            let encoding = if input.peek(LitStr) {
                let lit: LitStr = input.parse()?;
                input.parse::<Token![;]>()?;
                EncodingSource::Literal(lit)
            } else {
                let mut tokens = TokenStream::new();
                let mut last = eq.span;
                loop {
                    if input.is_empty() {
                        return Err(syn::Error::new(last, "expected `;` after the encoding"));
                    }
                    if input.peek(Token![;]) {
                        input.parse::<Token![;]>()?;
                        break;
                    }
                    let tt: TokenTree = input.parse()?;
                    last = tt.span();
                    tokens.extend(std::iter::once(tt));
                }
                EncodingSource::Tokens(tokens, eq.span)
            };
            out.push(RawDeclaration {
                attrs,
                vis,
                name,
                encoding,
            });
        }
        Ok(Declarations(out))
    }
}

/// Encoding text rendered from tokens, with the span of every rendered token.
struct Rendered {
    text: String,
    /// `(start, end, span)` byte ranges of `text`, in order.
    pieces: Vec<(usize, usize, Span)>,
}

impl Rendered {
    fn push(&mut self, s: &str, span: Span, space_before: bool) {
        if space_before && !self.text.is_empty() {
            self.text.push(' ');
        }
        let start = self.text.len();
        self.text.push_str(s);
        self.pieces.push((start, self.text.len(), span));
    }

    /// Renders `tokens` as MLIR text: tokens separated by spaces, except no space after `#` and
    /// `!`, around `.` (`#sparse_tensor.encoding`, `!quant.uniform`) and after a joint punctuation
    /// (`->`); the shape of a tensor type (`tensor<?x?xf64, ...`) is glued up to its first comma.
    fn render(&mut self, tokens: TokenStream, glue: &mut bool) {
        // Tensor-shape gluing: after `tensor` `<`, until the `,` at that angle depth.
        let mut prev_tensor = false;
        let mut shape_depth: Option<usize> = None;
        for tt in tokens {
            let glued = shape_depth.is_some();
            match tt {
                TokenTree::Group(g) => {
                    let (open, close) = match g.delimiter() {
                        Delimiter::Parenthesis => ("(", ")"),
                        Delimiter::Brace => ("{", "}"),
                        Delimiter::Bracket => ("[", "]"),
                        Delimiter::None => ("", ""),
                    };
                    self.push(open, g.span_open(), !*glue && !glued);
                    *glue = false;
                    self.render(g.stream(), glue);
                    self.push(close, g.span_close(), !glued);
                    *glue = glued;
                    prev_tensor = false;
                }
                TokenTree::Punct(p) => {
                    let c = p.as_char();
                    self.push(&c.to_string(), p.span(), !*glue && !glued && c != '.');
                    *glue = c == '#'
                        || c == '!'
                        || c == '.'
                        || p.spacing() == proc_macro2::Spacing::Joint;
                    match (c, shape_depth) {
                        ('<', None) if prev_tensor => shape_depth = Some(0),
                        ('<', Some(d)) => shape_depth = Some(d + 1),
                        ('>', Some(d)) => shape_depth = d.checked_sub(1),
                        (',', Some(0)) => {
                            shape_depth = None;
                            *glue = false;
                        }
                        _ => {}
                    }
                    if shape_depth.is_some() {
                        *glue = true;
                    }
                    prev_tensor = false;
                }
                TokenTree::Ident(i) => {
                    let s = i.to_string();
                    self.push(&s, i.span(), !*glue && !glued);
                    *glue = glued;
                    prev_tensor = s == "tensor" && !glued;
                }
                TokenTree::Literal(l) => {
                    self.push(&l.to_string(), l.span(), !*glue && !glued);
                    *glue = glued;
                    prev_tensor = false;
                }
            }
        }
    }

    /// The spans of the first and the last token of the byte range `start..end`: the token at
    /// (or, in whitespace, right after) `start`, and the last token that starts before `end`
    /// (the first one again for an empty range). Binary searches: `pieces` are in text order.
    fn span_range(&self, start: usize, end: usize, fallback: Span) -> (Span, Span) {
        let Some(last) = self.pieces.len().checked_sub(1) else {
            return (fallback, fallback);
        };
        let first = self
            .pieces
            .partition_point(|(_, e, _)| *e <= start)
            .min(last);
        let until = self
            .pieces
            .partition_point(|(s, _, _)| *s < end)
            .saturating_sub(1)
            .max(first);
        (self.pieces[first].2, self.pieces[until].2)
    }
}

/// A compile error covering the tokens from `start` to `end`, with the diagnostic's help (if
/// any) on a second line of the message: rustc indents it under the message, where its own
/// notes go (`= help: ...`).
fn spanned_error(start: Span, end: Span, diag: &Diagnostic, prefix_location: bool) -> syn::Error {
    let mut message = if prefix_location {
        diag.to_string()
    } else {
        diag.message.clone()
    };
    if let Some(help) = &diag.help {
        message.push_str("\n= help: ");
        message.push_str(help);
    }
    let range: TokenStream = [Ident::new("start", start), Ident::new("end", end)]
        .into_iter()
        .map(TokenTree::Ident)
        .collect();
    syn::Error::new_spanned(range, message)
}

/// Turns a diagnostic of the rendered text into a spanned error.
type ToError = Box<dyn Fn(&Diagnostic) -> syn::Error>;

fn expand(decls: Declarations) -> TokenStream {
    let rt = quote!(::sparse::runtime);
    let mut out = TokenStream::new();
    let mut errors: Option<syn::Error> = None;
    let mut add_error = |e: syn::Error| match errors.as_mut() {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for d in decls.0 {
        let (text, to_error): (String, ToError) = match d.encoding {
            EncodingSource::Literal(lit) => {
                let span = lit.span();
                (
                    lit.value(),
                    Box::new(move |diag: &Diagnostic| spanned_error(span, span, diag, true)),
                )
            }
            EncodingSource::Tokens(tokens, fallback) => {
                let mut r = Rendered {
                    text: String::new(),
                    pieces: Vec::new(),
                };
                r.render(tokens, &mut false);
                let text = r.text.clone();
                (
                    text,
                    Box::new(move |diag: &Diagnostic| {
                        let (start, end) = r.span_range(diag.start, diag.end, fallback);
                        spanned_error(start, end, diag, false)
                    }),
                )
            }
        };
        match parse_declaration(&text) {
            Err(diags) => diags.iter().for_each(|diag| add_error(to_error(diag))),
            Ok(parsed) => {
                let mut decl = match Declaration::from_declared(
                    d.vis.to_token_stream(),
                    d.name.clone(),
                    parsed.declared,
                ) {
                    Ok(decl) => decl,
                    Err(e) => {
                        // at the declaration's first token (not over all of it)
                        add_error(to_error(&Diagnostic::new(
                            &text,
                            parsed.start,
                            parsed.start,
                            e.to_string(),
                        )));
                        continue;
                    }
                };
                decl.attrs = d.attrs.iter().map(|a| a.to_token_stream()).collect();
                match generate(&decl, &rt) {
                    Ok(tokens) => out.extend(tokens),
                    Err(e) => add_error(syn::Error::new(d.name.span(), e.to_string())),
                }
            }
        }
    }
    if let Some(e) = errors {
        out.extend(e.to_compile_error());
    }
    out
}
