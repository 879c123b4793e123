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

use sparse_dsl::codegen::{generate, transpose, Declaration};
use sparse_dsl::diag::Diagnostic;
use sparse_dsl::kernel::{generate_kernel, KernelDecl, KernelParam, ParamKind};
use sparse_dsl::parse::parse_declaration;
use sparse_ir::verify::VerifiedEncoding;
use sparse_sparsifier::ValueType;

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
///
/// A declaration may end with a SparseCore configuration, `sparsecore(chip = v5p,
/// max_ids_per_partition = 256, max_unique_ids_per_partition = 64, feature_width = 128, batch =
/// 4096)`: it is checked with the runtime lookup's TileSpmem rule (`Fixed size allocations (N
/// bytes) do not fit in TileSpmem (M bytes)` or `Gather operand too large: ...` at compile time)
/// and becomes the constant `Name::SPARSECORE`.
/// The generated code names the runtime as `::sparse::runtime`.
#[proc_macro]
pub fn sparse_format(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    match syn::parse::<Declarations>(input) {
        Ok(decls) => expand(decls).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

struct Declarations(Vec<RawDeclaration>, Vec<RawKernel>);

/// `vis kernel name(params) { statement }`.
struct RawKernel {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    params: Vec<(Ident, syn::Type)>,
    body: TokenStream,
    body_span: Span,
}

impl RawKernel {
    fn parse(attrs: Vec<Attribute>, vis: Visibility, input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        let content;
        syn::parenthesized!(content in input);
        let mut params = Vec::new();
        while !content.is_empty() {
            let p: Ident = content.parse()?;
            content.parse::<Token![:]>()?;
            let ty: syn::Type = content.parse()?;
            params.push((p, ty));
            if content.is_empty() {
                break;
            }
            content.parse::<Token![,]>()?;
        }
        let body;
        let brace = syn::braced!(body in input);
        let body: TokenStream = body.parse()?;
        Ok(RawKernel {
            attrs,
            vis,
            name,
            params,
            body,
            body_span: brace.span.join(),
        })
    }
}

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
        let mut kernels = Vec::new();
        while !input.is_empty() {
            let attrs = input.call(Attribute::parse_outer)?;
            let vis: Visibility = input.parse()?;
            // `kernel name(` starts a kernel item (`kernel = ...` is a format named `kernel`)
            let fork = input.fork();
            if fork.parse::<Ident>().is_ok_and(|i| i == "kernel") && fork.peek(Ident) {
                input.parse::<Ident>()?;
                kernels.push(RawKernel::parse(attrs, vis, input)?);
                continue;
            }
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
        Ok(Declarations(out, kernels))
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
    let mut formats: Vec<Format> = Vec::new();
    let mut declared: Vec<Declaration> = Vec::new();
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
                decl.sparsecore = parsed.sparsecore;
                formats.push((
                    decl.name.clone(),
                    decl.encoding.clone(),
                    decl.static_shape.clone(),
                    decl.quant.clone(),
                ));
                match generate(&decl, &rt) {
                    Ok(tokens) => out.extend(tokens),
                    Err(e) => add_error(syn::Error::new(d.name.span(), e.to_string())),
                }
                declared.push(decl);
            }
        }
    }
    // `transpose` between declarations whose encodings are each other's transposes
    match transpose::emit(&declared.iter().collect::<Vec<_>>(), &rt) {
        Ok(tokens) => out.extend(tokens),
        Err(e) => add_error(syn::Error::new(Span::call_site(), e.to_string())),
    }
    for k in decls.1 {
        match kernel(k, &formats, &rt) {
            Ok(tokens) => out.extend(tokens),
            Err(e) => add_error(e),
        }
    }
    if let Some(e) = errors {
        out.extend(e.to_compile_error());
    }
    out
}

/// A declared format: its name, encoding, static shape (tensor-type declarations) and
/// quantization (a uniform quantized element type).
type Format = (
    Ident,
    VerifiedEncoding,
    Option<Vec<Option<u64>>>,
    Option<sparse_dsl::codegen::quant::QuantInfo>,
);

/// The value type named by `ty`: `f64`, `f32`, `i64`, `i32`, `i16`, `i8`, `u64`, `u32`,
/// `u16`, `u8`, `f16`/`bf16` (the `half` crate's), `I1` (the runtime's `value::I1`, MLIR's
/// `i1`), or `Complex<f64>`/`Complex<f32>` (also `Complex64`/`Complex32`, num-complex's), the
/// last three kinds by any path ending in that name.
fn value_type(ty: &syn::Type) -> syn::Result<ValueType> {
    let last = match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    };
    // `Complex<f64>`: the name with its one argument, `Complex<f64>`
    let name = last.map(|s| match &s.arguments {
        syn::PathArguments::AngleBracketed(a) => {
            let args: Vec<String> = a
                .args
                .iter()
                .map(|g| g.to_token_stream().to_string())
                .collect();
            format!("{}<{}>", s.ident, args.join(","))
        }
        _ => s.ident.to_string(),
    });
    let plain = matches!(ty, syn::Type::Path(p) if p.path.get_ident().is_some());
    match name.as_deref() {
        Some("f64") if plain => Ok(ValueType::F64),
        Some("f32") if plain => Ok(ValueType::F32),
        Some("f16") => Ok(ValueType::F16),
        Some("bf16") => Ok(ValueType::BF16),
        Some("i64") if plain => Ok(ValueType::I64),
        Some("i32") if plain => Ok(ValueType::I32),
        Some("i16") if plain => Ok(ValueType::I16),
        Some("i8") if plain => Ok(ValueType::I8),
        Some("u64") if plain => Ok(ValueType::U64),
        Some("u32") if plain => Ok(ValueType::U32),
        Some("u16") if plain => Ok(ValueType::U16),
        Some("u8") if plain => Ok(ValueType::U8),
        Some("I1") => Ok(ValueType::I1),
        Some("Complex<f32>" | "Complex32") => Ok(ValueType::C32),
        Some("Complex<f64>" | "Complex64") => Ok(ValueType::C64),
        _ => Err(syn::Error::new_spanned(
            ty,
            "expected a value type: f64, f32, f16, bf16, i64, i32, i16, i8, u64, u32, u16, u8, I1, Complex<f32> or Complex<f64>",
        )),
    }
}

/// One kernel parameter: `&[T]`, `&mut [T]`, `&Fmt<T>`, `&mut Fmt<T>`, `&DenseArray<T, Fmt>`,
/// `&mut DenseArray<T, Fmt>` (an all-dense `Fmt` naming the order), `T` or `&mut T` (a 0-d
/// output).
fn kernel_param(name: Ident, ty: &syn::Type, formats: &[Format]) -> syn::Result<KernelParam> {
    let expected = "expected `&[T]`, `&mut [T]`, `&Format<T>`, `&mut Format<T>` (a format declared in this block), `&DenseArray<T, Format>` (`&mut` for the output; `Format` all-dense, naming the order) or `T` (`&mut T` for the output) for a 0-d operand, or `Par`";
    let syn::Type::Reference(r) = ty else {
        // `par: Par` (or a path ending in `Par`): the parallelism argument
        if let syn::Type::Path(p) = ty {
            if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Par") {
                return Ok(KernelParam {
                    name,
                    kind: ParamKind::Par,
                    value: ValueType::F64,
                });
            }
        }
        let value = value_type(ty).map_err(|_| syn::Error::new_spanned(ty, expected))?;
        return Ok(KernelParam {
            name,
            kind: ParamKind::Scalar { mutable: false },
            value,
        });
    };
    let mutable = r.mutability.is_some();
    if let (true, Ok(value)) = (mutable, value_type(&r.elem)) {
        return Ok(KernelParam {
            name,
            kind: ParamKind::Scalar { mutable },
            value,
        });
    }
    match &*r.elem {
        syn::Type::Slice(s) => Ok(KernelParam {
            name,
            kind: ParamKind::Slice { mutable },
            value: value_type(&s.elem)?,
        }),
        syn::Type::Path(p)
            if p.qself.is_none()
                && p.path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "DenseArray") =>
        {
            let Some(seg) = p.path.segments.last() else {
                return Err(syn::Error::new_spanned(ty, expected));
            };
            dense_array_param(name, mutable, seg, formats)
        }
        syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            let seg = &p.path.segments[0];
            let Some((_, encoding, shape, quant)) =
                formats.iter().find(|(f, _, _, _)| *f == seg.ident)
            else {
                return Err(syn::Error::new_spanned(
                    &seg.ident,
                    format!("unknown format `{}`: declare it in this block", seg.ident),
                ));
            };
            let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
                return Err(syn::Error::new_spanned(ty, expected));
            };
            let [syn::GenericArgument::Type(v)] = &args.args.iter().collect::<Vec<_>>()[..] else {
                return Err(syn::Error::new_spanned(ty, expected));
            };
            // a quantized format passed with its storage type holds quantized values; with
            // another value type (`&Q<f32>`, its `dequantized()` form), plain ones
            let quant = quant
                .as_ref()
                .filter(|q| matches!(v, syn::Type::Path(p) if p.path.is_ident(q.storage)));
            let value = match quant {
                Some(q) => ValueType::Quant {
                    signed: q.signed,
                    width: q.width,
                },
                None => value_type(v)?,
            };
            Ok(KernelParam {
                name,
                kind: ParamKind::Format {
                    mutable,
                    format: seg.ident.clone(),
                    encoding: Box::new(encoding.clone()),
                    shape: shape.clone(),
                    quant: quant.cloned(),
                },
                value,
            })
        }
        _ => Err(syn::Error::new_spanned(ty, expected)),
    }
}

/// `DenseArray<T, Fmt>` (any path ending so, e.g. `sparse::runtime::layout::DenseArray`): a
/// dense operand whose order is the declared format `Fmt`'s, which must be all-dense with a
/// permutation map (an error at `Fmt` otherwise).
fn dense_array_param(
    name: Ident,
    mutable: bool,
    seg: &syn::PathSegment,
    formats: &[Format],
) -> syn::Result<KernelParam> {
    let usage = "expected `DenseArray<T, Format>`: a value type and a format declared in this block whose levels are all `dense` (its map gives the order)";
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
        return Err(syn::Error::new_spanned(seg, usage));
    };
    let [syn::GenericArgument::Type(v), syn::GenericArgument::Type(o)] =
        &args.args.iter().collect::<Vec<_>>()[..]
    else {
        return Err(syn::Error::new_spanned(args, usage));
    };
    let value = value_type(v)?;
    let order = match o {
        syn::Type::Path(p) if p.qself.is_none() => p.path.get_ident(),
        _ => None,
    }
    .ok_or_else(|| syn::Error::new_spanned(o, usage))?;
    let Some((_, encoding, _, _)) = formats.iter().find(|(f, _, _, _)| f == order) else {
        return Err(syn::Error::new_spanned(
            order,
            format!("unknown format `{order}`: declare it in this block"),
        ));
    };
    let Some(minor_to_major) = encoding.dense_minor_to_major() else {
        return Err(syn::Error::new_spanned(
            order,
            format!(
                "`{order}` is not a dense layout: the order of a `DenseArray` is a format whose levels are all `dense` (no properties, no slices, no `explicitVal`) and whose map permutes the dimensions, as `(i, j) -> (j : dense, i : dense)` for column-major"
            ),
        ));
    };
    Ok(KernelParam {
        name,
        kind: ParamKind::DenseArray {
            mutable,
            order: order.clone(),
            rank: minor_to_major.len(),
            minor_to_major: Some(minor_to_major),
        },
        value,
    })
}

/// Compiles one kernel item: the statement rendered to text (spans kept), the parameters
/// resolved against the formats of the block; a sparsifier error at the offending tokens.
fn kernel(k: RawKernel, formats: &[Format], rt: &TokenStream) -> syn::Result<TokenStream> {
    let params = k
        .params
        .iter()
        .map(|(name, ty)| kernel_param(name.clone(), ty, formats))
        .collect::<syn::Result<Vec<_>>>()?;
    let mut r = Rendered {
        text: String::new(),
        pieces: Vec::new(),
    };
    r.render(k.body, &mut false);
    let decl = KernelDecl {
        vis: k.vis.to_token_stream(),
        name: k.name.clone(),
        params,
        statement: r.text.clone(),
        method: None,
    };
    match generate_kernel(&decl, rt) {
        Ok(f) => {
            let attrs = &k.attrs;
            Ok(quote!(#(#attrs)* #f))
        }
        Err(e) => {
            let (start, end) = match e.span {
                Some(s) => r.span_range(s.start, s.end, k.body_span),
                None => (k.name.span(), k.name.span()),
            };
            let diag = Diagnostic {
                message: e.message.clone(),
                help: e.help.clone(),
                ..Diagnostic::new(&decl.statement, 0, 0, String::new())
            };
            Err(spanned_error(start, end, &diag, false))
        }
    }
}
