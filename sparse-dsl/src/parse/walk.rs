//! The semantic walker: [`Cx`] turns pest pairs into the IR (`Encoding`, maps, level types,
//! slices, tensor types), reporting each rule's diagnostic with the rank MLIR checks it at.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Binding {
    Symbol(usize),
    Dim(usize),
    Lvl(usize),
}

/// Which side of the map an expression lives on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    /// A dimension expression: variables are level variables.
    DimExpr,
    /// A level expression: variables are dimension variables.
    LvlExpr,
}

pub(super) struct Cx<'t> {
    pub(super) text: &'t str,
    /// `(declaration index, rank, diagnostic)`: sorted by declaration, then rank (0 = parser
    /// errors, higher = verifier rules in MLIR's order), then position.
    pub(super) diags: Vec<(usize, u32, Diagnostic)>,
    /// Rank given to diagnostics reported by [`Cx::error`].
    pub(super) rank: u32,
    /// Index of the declaration being parsed (for [`parse_declarations`]).
    pub(super) decl_index: usize,
    /// Encodings declared so far by alias (for [`parse_declarations`]).
    pub(super) aliases: HashMap<String, Encoding>,
    /// Byte spans of the level specifiers of the last encoding parsed.
    pub(super) lvl_spans: Vec<(usize, usize)>,
    /// Byte spans of the last `posWidth` / `crdWidth` entries.
    pub(super) width_spans: [Option<(usize, usize)>; 2],
    /// Byte span of the last `implicitVal` value.
    pub(super) implicit_span: Option<(usize, usize)>,
    /// Span of a `!Alias` name bound to the declaration being parsed.
    pub(super) type_alias_span: Option<Span<'t>>,
}

/// The result of walking a `map = ...` entry.
pub(super) struct MapOut {
    dim_to_lvl: AffineMap,
    lvl_to_dim: AffineMap,
    lvl_types: Vec<LevelType>,
    slices: Option<Vec<DimSlice>>,
}

/// A dimension specifier: its name, optional expression and optional slice.
pub(super) type DimSpec<'t> = (
    Pair<'t, Rule>,
    Option<Pair<'t, Rule>>,
    Option<Pair<'t, Rule>>,
);

/// Intermediate level information (before cross-level checks).
pub(super) struct LvlInfo<'t> {
    expr: Option<AffineExpr>,
    expr_span: Span<'t>,
    lt: Option<LevelType>,
    lt_span: Span<'t>,
}

pub(super) fn inner<'t>(p: Pair<'t, Rule>) -> impl Iterator<Item = Pair<'t, Rule>> {
    p.into_inner()
}

impl<'t> Cx<'t> {
    pub(super) fn error(&mut self, span: Span<'_>, message: impl Into<String>) {
        let rank = self.rank;
        self.error_at(span.start(), span.end(), rank, message);
    }

    /// Reports a verifier rule: `rank` orders rules as MLIR checks them.
    fn verify_error(&mut self, span: Span<'_>, rank: u32, message: impl Into<String>) {
        self.error_at(span.start(), span.end(), rank, message);
    }

    pub(super) fn error_at(
        &mut self,
        start: usize,
        end: usize,
        rank: u32,
        message: impl Into<String>,
    ) {
        self.push_diag(start, end, rank, message.into(), None);
    }

    /// [`Cx::error_at`] with a help line (how to fix it).
    pub(super) fn error_help(
        &mut self,
        (start, end): (usize, usize),
        rank: u32,
        message: &str,
        help: String,
    ) {
        self.push_diag(start, end, rank, message.to_string(), Some(help));
    }

    fn push_diag(
        &mut self,
        start: usize,
        end: usize,
        rank: u32,
        message: String,
        help: Option<String>,
    ) {
        if self.diags.len() < MAX_DIAGS {
            let mut d = Diagnostic::new(self.text, start, end, message);
            // a rule's span may end with the whitespace after it (`i + j ` before `:`)
            if let Some(spanned) = self.text.get(d.start..d.end) {
                d.end = d.start + spanned.trim_end().len();
            }
            d.help = help;
            self.diags.push((self.decl_index, rank, d));
        }
    }

    pub(super) fn file(&mut self, file: Pair<'t, Rule>) -> Option<ParsedEncoding> {
        let span = file.as_span();
        let mut alias = None;
        let mut encoding = None;
        for p in inner(file) {
            match p.as_rule() {
                Rule::alias_def => alias = alias_of(p),
                Rule::encoding => encoding = self.encoding(p),
                _ => {}
            }
        }
        let encoding = self.verified(encoding?, span)?;
        Some(ParsedEncoding { alias, encoding })
    }

    pub(super) fn declaration(&mut self, decl: Pair<'t, Rule>) -> Option<ParsedDeclaration> {
        let span = decl.as_span();
        let mut alias = None;
        let mut declared = None;
        let mut sparsecore = None;
        // the end of the last part (the optional clause may leave skipped whitespace in `span`)
        let mut end = span.end();
        for p in inner(decl) {
            end = p.as_span().end();
            match p.as_rule() {
                Rule::alias_def => {
                    if let Some(name) = inner(p.clone()).next() {
                        if name.as_rule() == Rule::type_alias_name {
                            self.type_alias_span = Some(name.as_span());
                        }
                    }
                    alias = alias_of(p);
                }
                Rule::encoding => {
                    let at = p.as_span();
                    declared = self
                        .encoding(p)
                        .and_then(|e| self.verified(e, at))
                        .map(Declared::Encoding);
                }
                Rule::tensor_type => declared = self.tensor_type(p).map(Declared::Tensor),
                Rule::sparsecore => sparsecore = self.sparsecore(p),
                _ => {}
            }
        }
        if let (Some(at), Some(Declared::Encoding(_))) = (self.type_alias_span.take(), &declared) {
            self.error(
                at,
                "expected '#' alias for an attribute (use '!' for types only)",
            );
            return None;
        }
        Some(ParsedDeclaration {
            alias,
            declared: declared?,
            sparsecore,
            start: span.start(),
            end,
        })
    }

    fn encoding(&mut self, enc: Pair<'t, Rule>) -> Option<Encoding> {
        self.lvl_spans.clear();
        self.width_spans = [None, None];
        self.implicit_span = None;
        let enc_span = enc.as_span();
        let mut seen: HashMap<&'t str, ()> = HashMap::new();
        let mut map: Option<Option<MapOut>> = None;
        let mut widths: [Option<(Option<i64>, String, Span<'t>)>; 2] = [None, None];
        let mut vals: [Option<TypedValue>; 2] = [None, None];
        let mut failed = false;
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
            let entry_span = entry.as_span();
            let mut parts = inner(entry);
            let Some(key) = parts.next() else { continue };
            if rule == Rule::unknown_entry {
                self.error(key.as_span(), format!("unexpected key: {}", key.as_str()));
                failed = true;
                continue;
            }
            if seen.insert(key.as_str(), ()).is_some() {
                self.error(key.as_span(), format!("duplicate key: {}", key.as_str()));
                failed = true;
                continue;
            }
            let Some(value) = parts.find(|p| p.as_rule() != Rule::equal) else {
                continue;
            };
            let bad = value.as_rule() == Rule::bad_value;
            match rule {
                Rule::map_entry => map = Some(self.map(value)),
                Rule::pos_width_entry | Rule::crd_width_entry => {
                    let k = usize::from(rule == Rule::crd_width_entry);
                    if bad {
                        let what = [
                            "an integral position bitwidth",
                            "an integral index bitwidth",
                        ][k];
                        let at = (value.as_span().start(), value.as_span().end());
                        let help = width_help(k, false);
                        self.error_help(at, self.rank, &format!("expected {what}"), help);
                        failed = true;
                        continue;
                    }
                    self.width_spans[k] = Some((entry_span.start(), entry_span.end()));
                    match inner(value).find(|q| q.as_rule() == Rule::signed_int) {
                        Some(v) => widths[k] = Some(self.signed_int(&v)),
                        None => failed = true,
                    }
                    // an explicit integer type on the width (`32 : i64`) is accepted as in MLIR
                }
                Rule::explicit_val_entry | Rule::implicit_val_entry => {
                    let k = usize::from(rule == Rule::implicit_val_entry);
                    if bad {
                        let what = ["explicitVal", "implicitVal"][k];
                        self.error(
                            value.as_span(),
                            format!("expected a numeric value for {what}"),
                        );
                        failed = true;
                        continue;
                    }
                    if k == 1 {
                        self.implicit_span = Some((value.as_span().start(), value.as_span().end()));
                    }
                    match self.typed_value(value) {
                        Some(v) => vals[k] = Some(v),
                        None => failed = true,
                    }
                }
                _ => {}
            }
        }

        let map = match map {
            None => {
                self.verify_error(
                    rbrace_span,
                    rank::EMPTY,
                    "expected a non-empty array for lvlTypes",
                );
                None
            }
            Some(m) => m,
        };
        let has_nm = map.as_ref().is_some_and(|m| {
            m.lvl_types
                .iter()
                .any(|t| matches!(t.format, LevelFormat::NOutOfM { .. }))
        });

        let mut check_width = |cx: &mut Self, k: usize, allow2: bool| {
            let Some((v, txt, span)) = widths[k].take() else {
                return Some(0);
            };
            match v {
                Some(v @ (0 | 8 | 16 | 32 | 64)) => Some(v as u32),
                Some(2) if allow2 => Some(2),
                _ => {
                    let (what, r) = [
                        ("position", rank::POS_WIDTH),
                        ("coordinate", rank::CRD_WIDTH),
                    ][k];
                    let message = format!("unexpected {what} bitwidth: {txt}");
                    let help = width_help(k, allow2);
                    cx.error_help((span.start(), span.end()), r, &message, help);
                    None
                }
            }
        };
        let pos_width = check_width(self, 0, false);
        let crd_width = check_width(self, 1, has_nm);

        let map = map?;
        if failed {
            return None;
        }
        let [explicit_val, implicit_val] = vals;
        Some(Encoding {
            lvl_types: map.lvl_types,
            dim_to_lvl: map.dim_to_lvl,
            lvl_to_dim: map.lvl_to_dim,
            pos_width: pos_width?,
            crd_width: crd_width?,
            dim_slices: map.slices,
            explicit_val,
            implicit_val,
        })
    }

    // ---- types and values ---------------------------------------------------------------------

    fn elem_type(&mut self, p: Pair<'t, Rule>) -> Option<ElementType> {
        let p = if p.as_rule() == Rule::elem_type {
            inner(p).next()?
        } else {
            p
        };
        let span = p.as_span();
        match p.as_rule() {
            Rule::builtin_type => match builtin_type(p.as_str()) {
                Some(t) => Some(t),
                None => {
                    self.error(
                        span,
                        format!("expected non-function type (unknown type: {})", p.as_str()),
                    );
                    None
                }
            },
            Rule::complex_type => {
                let t = self.elem_type(inner(p).find(|q| q.as_rule() == Rule::elem_type)?)?;
                if !matches!(t, ElementType::Float(_) | ElementType::Int { .. }) {
                    self.error(span, "invalid element type for complex");
                    return None;
                }
                Some(ElementType::Complex(Box::new(t)))
            }
            Rule::quant_type => self.quant_type(p).map(|q| ElementType::Quant(Box::new(q))),
            _ => {
                self.error(span, "expected type");
                None
            }
        }
    }

    fn quant_type(&mut self, p: Pair<'t, Rule>) -> Option<QuantizedType> {
        let mut names = Vec::new();
        let mut range = None;
        let mut axis = None;
        let mut params = Vec::new();
        let mut per_axis = false;
        for q in inner(p) {
            match q.as_rule() {
                Rule::builtin_type => names.push(q),
                Rule::quant_range => range = Some(q),
                Rule::signed_int => axis = Some(q),
                Rule::quant_params => {
                    for pair in inner(q) {
                        match pair.as_rule() {
                            Rule::lbrace => per_axis = true,
                            Rule::quant_pair => params.push(pair),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        let (storage, expressed) = (names.first()?, names.get(1)?);
        let st = storage.as_str();
        let (signed, w) = if let Some(w) = st.strip_prefix('i') {
            (true, w)
        } else if let Some(w) = st.strip_prefix('u') {
            (false, w)
        } else {
            (true, "")
        };
        let width = w.parse::<u32>().ok().filter(|w| (1..=64).contains(w));
        let Some(width) = width.filter(|_| w.bytes().all(|b| b.is_ascii_digit())) else {
            self.error(
                storage.as_span(),
                format!("illegal storage type prefix: {st}"),
            );
            return None;
        };
        let Some((dmin, dmax)) = QuantizedType::default_range(signed, width) else {
            self.error(
                storage.as_span(),
                format!("illegal storage type size: {width}"),
            );
            return None;
        };
        let (mut smin, mut smax) = (dmin, dmax);
        if let Some(r) = range {
            let vals: Vec<_> = inner(r.clone())
                .filter(|q| q.as_rule() == Rule::signed_int)
                .collect();
            let (lo, hi) = (
                self.signed_int(vals.first()?),
                self.signed_int(vals.get(1)?),
            );
            match (lo.0, hi.0) {
                (Some(a), Some(b)) if a >= dmin && b <= dmax && a < b => (smin, smax) = (a, b),
                _ => {
                    self.error(
                        r.as_span(),
                        format!("illegal storage min and storage max: ({}:{})", lo.1, hi.1),
                    );
                    return None;
                }
            }
        }
        let Some(ElementType::Float(expressed_kind)) = builtin_type(expressed.as_str()) else {
            self.error(expressed.as_span(), "expecting float expressed type");
            return None;
        };
        let axis = match axis {
            Some(a) => match self.signed_int(&a).0.and_then(|v| u32::try_from(v).ok()) {
                Some(v) => Some(v),
                None => {
                    self.error(a.as_span(), "illegal quantized dimension");
                    return None;
                }
            },
            None => None,
        };
        if axis.is_some() != per_axis {
            let msg = if per_axis {
                "expected a quantized dimension (':axis') for per-axis parameters"
            } else {
                "expected per-axis parameters ('{scale:zero_point, ...}')"
            };
            self.error(expressed.as_span(), msg);
            return None;
        }
        let mut out = Vec::new();
        for pair in params {
            let span = pair.as_span();
            let mut scale = None;
            let mut zp = 0i64;
            for q in inner(pair) {
                match q.as_rule() {
                    Rule::number => scale = self.number(&q).map(|n| n.as_f64()),
                    Rule::signed_int => match self.signed_int(&q).0 {
                        Some(v) => zp = v,
                        None => {
                            self.error(q.as_span(), "zero point out of range");
                            return None;
                        }
                    },
                    _ => {}
                }
            }
            let scale = scale?;
            if !(scale.is_finite() && scale > 0.0) {
                self.error(span, format!("illegal scale: {scale}"));
                return None;
            }
            out.push((scale.to_bits(), zp));
        }
        Some(QuantizedType {
            storage_signed: signed,
            storage_width: width,
            storage_min: smin,
            storage_max: smax,
            expressed: expressed_kind,
            axis,
            params: out,
        })
    }

    /// A numeric literal: integer (decimal or hex) or float.
    fn number(&mut self, p: &Pair<'t, Rule>) -> Option<Number> {
        let mut neg = false;
        for q in p.clone().into_inner() {
            match q.as_rule() {
                Rule::minus => neg = !neg,
                Rule::float => {
                    let v: f64 = q.as_str().parse().ok()?;
                    return Some(Number::Float(if neg { -v } else { v }));
                }
                Rule::integer => {
                    let s = q.as_str();
                    let hex = s.starts_with("0x");
                    let v = if hex {
                        u128::from_str_radix(&s[2..], 16).ok()
                    } else {
                        s.parse::<u128>().ok()
                    };
                    let Some(v) = v.and_then(|v| i128::try_from(v).ok()) else {
                        self.error(q.as_span(), "integer constant out of range");
                        return None;
                    };
                    return Some(Number::Int {
                        value: if neg { -v } else { v },
                        hex,
                    });
                }
                _ => {}
            }
        }
        None
    }

    fn float_value(&mut self, n: Number, kind: FloatKind, span: Span<'t>) -> Option<u64> {
        match n {
            Number::Float(v) => Some(kind.round(v).to_bits()),
            Number::Int { value, hex: true } if value >= 0 => {
                match u64::try_from(value).ok().and_then(|b| kind.from_bits(b)) {
                    Some(v) => Some(v.to_bits()),
                    None => {
                        self.error(
                            span,
                            format!(
                                "hexadecimal float constant out of range for type {}",
                                kind.mlir_name()
                            ),
                        );
                        None
                    }
                }
            }
            Number::Int { .. } => {
                self.error(span, "unexpected decimal integer literal for a floating point value (add a trailing dot to make the literal a float)");
                None
            }
        }
    }

    fn typed_value(&mut self, p: Pair<'t, Rule>) -> Option<TypedValue> {
        let span = p.as_span();
        let mut complex = None;
        let mut number = None;
        let mut boolean = None;
        let mut ty = None;
        for q in inner(p) {
            match q.as_rule() {
                Rule::complex_attr => complex = Some(q),
                Rule::number => number = Some(q),
                Rule::bool_lit => boolean = Some(q.as_str() == "true"),
                Rule::elem_type => ty = Some(q),
                _ => {}
            }
        }
        let ty_span = ty.as_ref().map(|t| t.as_span());
        let ty = match ty {
            Some(t) => Some(self.elem_type(t)?),
            None => None,
        };
        if let Some(b) = boolean {
            return Some(TypedValue {
                value: ScalarValue::Int(i128::from(b)),
                ty: ElementType::Int {
                    width: 1,
                    signedness: Signedness::Signless,
                },
            });
        }
        if let Some(c) = complex {
            let cspan = c.as_span();
            let mut inner_ty = None;
            let mut parts = Vec::new();
            for q in inner(c) {
                match q.as_rule() {
                    Rule::elem_type => inner_ty = Some(q),
                    Rule::number => parts.push(q),
                    _ => {}
                }
            }
            let et = self.elem_type(inner_ty?)?;
            let Some(kind) = et.as_float() else {
                self.error(cspan, "expected a float element type for #complex.number");
                return None;
            };
            let complex_ty = ElementType::Complex(Box::new(et));
            if let Some(t) = &ty {
                if *t != complex_ty {
                    self.error(
                        ty_span.unwrap_or(span),
                        format!("complex attribute type mismatch: '{t}' != '{complex_ty}'"),
                    );
                    return None;
                }
            }
            let re = self.number(parts.first()?)?;
            let im = self.number(parts.get(1)?)?;
            let re = self.float_value(re, kind, parts[0].as_span())?;
            let im = self.float_value(im, kind, parts[1].as_span())?;
            return Some(TypedValue {
                value: ScalarValue::Complex(re, im),
                ty: complex_ty,
            });
        }
        let num_pair = number?;
        let n = self.number(&num_pair)?;
        let ty = ty.unwrap_or(match n {
            Number::Float(_) => ElementType::Float(FloatKind::F64),
            Number::Int { .. } => ElementType::Int {
                width: 64,
                signedness: Signedness::Signless,
            },
        });
        match &ty {
            ElementType::Float(k) => {
                let bits = self.float_value(n, *k, num_pair.as_span())?;
                Some(TypedValue {
                    value: ScalarValue::Float(bits),
                    ty,
                })
            }
            ElementType::Int { .. } | ElementType::Index => {
                let Number::Int { value, .. } = n else {
                    self.error(
                        num_pair.as_span(),
                        "floating point value not valid for specified type",
                    );
                    return None;
                };
                let (width, signedness) = match ty {
                    ElementType::Int { width, signedness } => (width, signedness),
                    _ => (64, Signedness::Signless),
                };
                let fits = if width >= 128 {
                    !(signedness == Signedness::Unsigned && value < 0)
                } else {
                    let w = width;
                    match signedness {
                        Signedness::Unsigned => value >= 0 && value < (1i128 << w),
                        Signedness::Signed => {
                            value >= -(1i128 << (w - 1)) && value < (1i128 << (w - 1))
                        }
                        // signless: either reading of the bits
                        Signedness::Signless => {
                            value >= -(1i128 << (w - 1)) && value < (1i128 << w)
                        }
                    }
                };
                if !fits {
                    self.error(
                        num_pair.as_span(),
                        "integer constant out of range for attribute",
                    );
                    return None;
                }
                // signless values print in their signed reading (MLIR: `255 : i8` prints `-1 : i8`)
                let value = if signedness == Signedness::Signless
                    && width < 128
                    && value >= (1i128 << (width - 1))
                {
                    value - (1i128 << width)
                } else {
                    value
                };
                let value = if width == 1 { value & 1 } else { value };
                Some(TypedValue {
                    value: ScalarValue::Int(value),
                    ty,
                })
            }
            _ => {
                self.error(
                    ty_span.unwrap_or(span),
                    format!("expected a numeric type for a value, got '{ty}'"),
                );
                None
            }
        }
    }

    fn tensor_type(&mut self, p: Pair<'t, Rule>) -> Option<TensorType> {
        let mut shape_pair = None;
        let mut elem = None;
        let mut enc = None;
        for q in inner(p) {
            match q.as_rule() {
                Rule::shape => shape_pair = Some(q),
                Rule::elem_type => elem = Some(q),
                Rule::tensor_enc => enc = inner(q).next(),
                _ => {}
            }
        }
        let shape_pair = shape_pair?;
        let shape_span = shape_pair.as_span();
        let mut shape = Vec::new();
        let mut ok = true;
        let mut off = shape_span.start();
        // byte span of each dimension's size (`20` in `20x30x`)
        let mut dim_spans = Vec::new();
        for part in shape_pair.as_str().split_terminator('x') {
            dim_spans.push((off, off + part.len()));
            if part == "?" {
                shape.push(None);
            } else {
                match part
                    .parse::<u64>()
                    .ok()
                    .filter(|v| i64::try_from(*v).is_ok())
                {
                    Some(v) => shape.push(Some(v)),
                    None => {
                        self.error_at(off, off + part.len(), 0, "invalid dimension");
                        ok = false;
                    }
                }
            }
            off += part.len() + 1;
        }
        let elem_pair = elem?;
        let elem_span = elem_pair.as_span();
        let element = self.elem_type(elem_pair);
        let (encoding, enc_span) = match enc {
            None => (None, None),
            Some(e) if e.as_rule() == Rule::encoding => {
                let span = e.as_span();
                (Some(self.encoding(e)), Some(span))
            }
            Some(e) => {
                let name = e.as_str().trim_start_matches('#');
                match self.aliases.get(name) {
                    Some(enc) => {
                        self.lvl_spans.clear();
                        self.width_spans = [None, None];
                        self.implicit_span = None;
                        (Some(Some(enc.clone())), Some(e.as_span()))
                    }
                    None => {
                        self.error(e.as_span(), format!("undefined symbol alias id '{name}'"));
                        (Some(None), None)
                    }
                }
            }
        };
        let element = element?;
        let encoding = match encoding {
            None => None,
            Some(e) => Some(e?),
        };
        if !ok {
            return None;
        }
        let encoding = match (encoding, enc_span) {
            (Some(e), Some(at)) => Some(self.verified(e, at)?),
            _ => None,
        };
        let t = TensorType {
            shape,
            element,
            encoding,
        };
        if let (Some(e), Some(es)) = (&t.encoding, enc_span) {
            if !self.check_tensor(&t, e, (shape_span, &dim_spans), elem_span, es) {
                return None;
            }
        }
        Some(t)
    }

    /// `enc` through [`Encoding::verify`], the one way to a [`VerifiedEncoding`]. The walk has
    /// applied the same rules with spans (a property test requires that whatever it accepts
    /// verifies), so an error here is a disagreement between the two: reported at `at` with the
    /// verifier's message, never a panic.
    fn verified(&mut self, enc: Encoding, at: Span<'t>) -> Option<VerifiedEncoding> {
        match enc.verify() {
            Ok(v) => Some(v),
            Err(errors) => {
                for e in errors {
                    self.error(at, e.to_string());
                }
                None
            }
        }
    }

    /// MLIR's `verifyEncoding` and the project's static-shape checks. `false` if any failed.
    fn check_tensor(
        &mut self,
        t: &TensorType,
        e: &Encoding,
        (shape_span, dim_spans): (Span<'t>, &[(usize, usize)]),
        elem_span: Span<'t>,
        enc_span: Span<'t>,
    ) -> bool {
        let before = self.diags.len();
        let shape_or_elem = if t.shape.is_empty() {
            elem_span
        } else {
            shape_span
        };
        if t.shape.is_empty() {
            self.verify_error(
                shape_or_elem,
                rank::TENSOR,
                "expected non-scalar sparse tensor",
            );
            return false;
        }
        if e.dim_rank() != t.shape.len() {
            self.verify_error(
                shape_span,
                rank::TENSOR + 1,
                format!(
                    "dimension-rank mismatch between encoding and tensor shape: {} != {}",
                    e.dim_rank(),
                    t.shape.len()
                ),
            );
            return false;
        }
        for (k, v) in [&e.explicit_val, &e.implicit_val].into_iter().enumerate() {
            if let Some(v) = v {
                if v.ty != t.element {
                    let which = ["explicit", "implicit"][k];
                    self.verify_error(
                        elem_span,
                        rank::TENSOR + 2 + k as u32,
                        format!("{which} value type mismatch between encoding and tensor element type: '{}' != '{}'", v.ty, t.element),
                    );
                }
            }
        }
        if let Some(v) = &e.implicit_val {
            if !v.is_zero() {
                // at the value when written here, else at the encoding (an alias)
                let (s, en) = self
                    .implicit_span
                    .unwrap_or((enc_span.start(), enc_span.end()));
                self.error_at(s, en, rank::TENSOR + 4, "implicit value must be zero");
            }
        }
        if self.diags.len() != before {
            return false;
        }
        self.check_static_shape(&t.shape, dim_spans, e, enc_span);
        self.diags.len() == before
    }

    /// Beyond MLIR: block sizes dividing their dimension (reported once per dimension and block
    /// size, at the dimension's size in the shape), widths holding the static level sizes.
    fn check_static_shape(
        &mut self,
        shape: &[Option<u64>],
        dim_spans: &[(usize, usize)],
        e: &Encoding,
        enc_span: Span<'t>,
    ) {
        let r = rank::TENSOR + 5;
        let lvl_span = |cx: &Self, l: usize| {
            cx.lvl_spans
                .get(l)
                .copied()
                .unwrap_or((enc_span.start(), enc_span.end()))
        };
        let mut sizes: Vec<Option<u128>> = Vec::with_capacity(e.lvl_rank());
        let mut not_dividing: std::collections::HashSet<(usize, u64)> = Default::default();
        for res in &e.dim_to_lvl.results {
            let size = match res {
                AffineExpr::Var(d) => shape.get(*d).copied().flatten().map(u128::from),
                AffineExpr::FloorDiv(a, b) | AffineExpr::Mod(a, b) => {
                    match (
                        a.as_var(),
                        b.as_constant()
                            .and_then(|c| u64::try_from(c).ok())
                            .filter(|c| *c > 0),
                    ) {
                        (Some(d), Some(b)) => {
                            if let Some(Some(n)) = shape.get(d) {
                                // once per dimension and block size (not at the floordiv and
                                // again at the mod)
                                if n % b != 0 && not_dividing.insert((d, b)) {
                                    let at = dim_spans
                                        .get(d)
                                        .copied()
                                        .unwrap_or((enc_span.start(), enc_span.end()));
                                    let message = format!(
                                        "block size {b} does not divide dimension {d} of size {n}"
                                    );
                                    self.error_help(at, r, &message, block_size_help(d, *n, b));
                                }
                            }
                            if matches!(res, AffineExpr::Mod(..)) {
                                Some(u128::from(b))
                            } else {
                                shape
                                    .get(d)
                                    .copied()
                                    .flatten()
                                    .map(|n| u128::from(n.div_ceil(b)))
                            }
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            sizes.push(size);
        }
        let max_for = |w: u32| -> u128 {
            if w >= 128 {
                u128::MAX
            } else {
                (1u128 << w) - 1
            }
        };
        if e.crd_width != 0 {
            for (l, lt) in e.lvl_types.iter().enumerate() {
                if let (true, Some(n)) = (lt.has_coordinates(), sizes.get(l).copied().flatten()) {
                    if n > 0 && n - 1 > max_for(e.crd_width) {
                        let (s, en) = self.width_spans[1].unwrap_or_else(|| lvl_span(self, l));
                        self.error_at(
                            s,
                            en,
                            r,
                            format!(
                                "crdWidth = {} is too narrow for level {l}: its largest coordinate is {} (level size {n}), more than {}",
                                e.crd_width,
                                n - 1,
                                max_for(e.crd_width)
                            ),
                        );
                    }
                }
            }
        }
        if e.pos_width != 0 {
            let mut product: Option<u128> = Some(1);
            for (l, lt) in e.lvl_types.iter().enumerate() {
                product = match (product, sizes.get(l).copied().flatten()) {
                    (Some(p), Some(n)) => p.checked_mul(n),
                    _ => None,
                };
                if let (true, Some(p)) = (lt.has_positions(), product) {
                    if p > max_for(e.pos_width) {
                        let (s, en) = self.width_spans[0].unwrap_or_else(|| lvl_span(self, l));
                        self.error_at(
                            s,
                            en,
                            r,
                            format!(
                                "posWidth = {} is too narrow for level {l}: positions reach {p} (the product of the level sizes up to level {l}), more than {}",
                                e.pos_width,
                                max_for(e.pos_width)
                            ),
                        );
                    }
                }
            }
        }
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
                    Some((x, _)) => dim_exprs.push(Some((x.canonical(), e.as_span()))),
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
            if decls.is_some() && !inner(spec.clone()).any(|q| q.as_rule() == Rule::lvl_binding) {
                // MLIR requires `lvar =` on every specifier once level variables are declared.
                let first = spec.as_str();
                let id_len = first
                    .char_indices()
                    .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.')))
                    .map_or(first.len(), |(i, _)| i);
                let (start, id) = (spec_span.start(), &first[..id_len]);
                let starts_alpha = id.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
                if !starts_alpha {
                    self.error_at(start, start + id_len.max(1), 0, "expected bare identifier");
                } else if matches!(names.get(id), Some(Binding::Lvl(_))) {
                    let rest = &first[id_len..];
                    let ws = rest.len() - rest.trim_start().len();
                    let at = start + id_len + ws;
                    self.error_at(at, at + 1, 0, "expected '='");
                } else {
                    self.error_at(
                        start,
                        start + id_len,
                        0,
                        format!("use of undeclared identifier '{id}'"),
                    );
                }
                ok = false;
                self.lvl_spans.push((spec_span.start(), spec_span.end()));
                lvls.push(info);
                continue;
            }
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
                                            "Level-variable ordering mismatch. The variable '{}' was forward-declared as the {} level; but is bound by the {} specification.",
                                            id.as_str(),
                                            nth(k),
                                            nth(idx)
                                        ),
                                    );
                                    ok = false;
                                }
                                Some(_) => {
                                    // only level variables are in scope for a level binding
                                    self.error(
                                        id.as_span(),
                                        format!("use of undeclared identifier '{}'", id.as_str()),
                                    );
                                    ok = false;
                                }
                                None => {
                                    self.error(
                                        id.as_span(),
                                        format!("use of undeclared identifier '{}'", id.as_str()),
                                    );
                                    ok = false;
                                }
                            }
                        } else {
                            // Without forward declarations MLIR parses no binding: the name is
                            // read as (the start of) the level expression.
                            self.error(id.as_span(), "use of undeclared identifier");
                            ok = false;
                        }
                    }
                    Rule::affine_expr => {
                        info.expr_span = q.as_span();
                        info.expr = self
                            .expr(q, &names, Side::LvlExpr)
                            .map(|(e, _)| e.canonical());
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
            self.lvl_spans.push((spec_span.start(), spec_span.end()));
            lvls.push(info);
        }

        if lvls.is_empty() {
            self.verify_error(
                lvl_list_span,
                rank::EMPTY,
                "expected a non-empty array for lvlTypes",
            );
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
            ok &= self.check_lvl_types(&lvls, num_dims);
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

        // Inverse map: inferred (MLIR: permutations and floordiv/mod block pairs, here in any
        // order), else an explicit inverse that checks out by evaluation; with symbols MLIR
        // accepts a map it cannot invert (the inverse is then left empty).
        let inferred = infer_lvl_to_dim(&dim_to_lvl);
        let explicit: Vec<(usize, &AffineExpr)> = dim_exprs
            .iter()
            .enumerate()
            .filter_map(|(d, e)| e.as_ref().map(|(x, _)| (d, x)))
            .collect();
        let mut explicit_checks = explicit_inverses_ok(&dim_to_lvl, &explicit).into_iter();
        let mut inv = Vec::with_capacity(num_dims);
        let mut explicit_ok = true;
        let mut all_explicit = true;
        for slot in &mut dim_exprs {
            match slot.take() {
                Some((x, span)) => {
                    if explicit_checks.next() == Some(false) {
                        self.verify_error(
                            span,
                            rank::INVERSE,
                            "expected lvlToDim to be an inverse of dimToLvl",
                        );
                        explicit_ok = false;
                    }
                    inv.push(x);
                }
                None => all_explicit = false,
            }
        }
        if inferred.is_none() && num_symbols == 0 && !all_explicit {
            // MLIR's one message, once: at the level expression that breaks the inversion (or
            // the dimension no level stores), with how to fix it
            let dim_names: Vec<&str> = dims.iter().map(|(id, _, _)| id.as_str()).collect();
            let (culprit, help) = why_not_invertible(&dim_to_lvl, &dim_names);
            let at = match culprit {
                Some(Culprit::Level(l)) => lvls.get(l).map(|info| info.expr_span),
                Some(Culprit::Dim(d)) => dims.get(d).map(|(id, _, _)| id.as_span()),
                None => None,
            }
            .unwrap_or(lvl_list_span);
            let message = "failed to infer lvlToDim from dimToLvl";
            self.error_help((at.start(), at.end()), rank::INFER, message, help);
            ok = false;
        }
        // MLIR stops at its first failed rule; a map with more dimensions than levels also breaks
        // the next one, reported too (after the first, as `unexpected dimToLvl mapping`)
        if (!ok || !explicit_ok) && num_dims > lvl_types.len() {
            self.verify_error(
                lvl_list_span,
                rank::DIM_GT_LVL,
                format!(
                    "unexpected dimToLvl mapping from {} to {}",
                    num_dims,
                    lvl_types.len()
                ),
            );
        }
        if !explicit_ok {
            return None;
        }
        let inv = match inferred {
            Some(m) => m.results,
            None if all_explicit => inv,
            None => Vec::new(),
        };
        if !ok {
            return None;
        }
        let lvl_to_dim = AffineMap {
            num_vars: lvl_types.len(),
            num_symbols,
            results: inv,
        };
        if num_dims > lvl_types.len() {
            self.verify_error(
                lvl_list_span,
                rank::DIM_GT_LVL,
                format!(
                    "unexpected dimToLvl mapping from {} to {}",
                    num_dims,
                    lvl_types.len()
                ),
            );
            return None;
        }
        if slices.iter().any(Option::is_some) && num_dims != lvl_types.len() {
            self.verify_error(
                lvl_list_span,
                rank::SLICES,
                format!(
                    "dimSlices expected dimension-rank to match level-rank: {} != {}",
                    num_dims,
                    lvl_types.len()
                ),
            );
            return None;
        }

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
        // a negative literal is a parse error in MLIR: it stops before any verifier message
        let negative = vals.iter().find_map(|v| {
            let q = v.clone().into_inner().next()?;
            (q.as_rule() != Rule::question)
                .then(|| self.signed_int(&q))
                .filter(|(val, _, _)| matches!(val, Some(x) if *x < 0))
                .map(|(_, _, span)| span)
        });
        if let Some(span) = negative {
            self.error(
                span,
                "expect positive value or ? for slice offset/size/stride",
            );
            return None;
        }
        for (k, v) in vals.iter().enumerate().take(3) {
            let Some(q) = v.clone().into_inner().next() else {
                continue;
            };
            if q.as_rule() == Rule::question {
                continue;
            }
            let (val, _, span) = self.signed_int(&q);
            // zero sizes and strides pass MLIR's parser and fail the slice verifier
            let (min, what) = match (k, val) {
                (0, _) => (0, "expect non-negative value or ? for slice offset"),
                (1, _) => (1, "expect positive value or ? for slice size"),
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
                Rule::format_name | Rule::kw_structured => name = Some(q),
                Rule::structured_sizes => sizes = Some(q),
                Rule::lvl_props => {
                    props.extend(inner(q).filter(|r| r.as_rule() == Rule::prop_name))
                }
                _ => {}
            }
        }
        let name = name?;
        let nm = |this: &mut Self, n: u64, m: u64| -> Option<LevelFormat> {
            if n > m {
                this.error(span, "expected n <= m in n_out_of_m");
                return None;
            }
            Some(LevelFormat::NOutOfM {
                n: u32::try_from(n).ok()?,
                m: u32::try_from(m).ok()?,
            })
        };
        // the name through the level formats' own spellings (`sparse_ir::level::FORMATS`); n:m
        // is written with its sizes (`structured[n, m]`) or as `blockN_M`
        let format = match sparse_ir::level::spelled(name.as_str()).map(|s| s.format) {
            Some(LevelFormat::NOutOfM { .. }) => {
                let mut vals = Vec::new();
                if let Some(sz) = sizes.clone() {
                    for v in inner(sz).filter(|q| q.as_rule() == Rule::structured_size) {
                        let Some(q) = inner(v.clone()).next() else {
                            continue;
                        };
                        if q.as_rule() != Rule::signed_int {
                            self.error(v.as_span(), "expected valid integer for structured size");
                            return None;
                        }
                        let (val, _, vspan) = self.signed_int(&q);
                        match val {
                            Some(x) if x < 0 => {
                                self.error(vspan, "expected structured size to be >= 0");
                                return None;
                            }
                            Some(x) if x <= i64::from(i32::MAX) => vals.push(x as u64),
                            _ => {
                                self.error(vspan, "failed to parse structured size");
                                return None;
                            }
                        }
                    }
                }
                if vals.len() != 2 {
                    self.error(span, "expected exactly 2 structured sizes");
                    return None;
                }
                Some(nm(self, vals[0], vals[1])?)
            }
            Some(plain) => Some(plain),
            None => match parse_block_name(name.as_str()) {
                Some(Some((n, m))) => Some(nm(self, n, m)?),
                Some(None) => {
                    self.error(
                        name.as_span(),
                        format!("invalid structured size in level format: {}", name.as_str()),
                    );
                    return None;
                }
                None => None,
            },
        };
        // MLIR reads the properties before it looks at the format name.
        let mut properties = LevelProperties::default();
        let mut high = false;
        for pr in &props {
            match pr.as_str() {
                "nonunique" => properties.nonunique = true,
                "nonordered" => properties.nonordered = true,
                "soa" => properties.soa = true,
                "high" => high = true,
                other => {
                    let at = (pr.as_span().start(), pr.as_span().end());
                    let message = format!("unknown level property: {other}");
                    let help = choices_help(other, LEVEL_PROPERTIES, "valid level properties");
                    self.error_help(at, self.rank, &message, help);
                    return None;
                }
            }
        }
        let Some(mut format) = format else {
            let at = (name.as_span().start(), name.as_span().end());
            let message = format!("unknown level format: {}", name.as_str());
            let formats: Vec<(&str, &str)> = sparse_ir::level::FORMATS
                .iter()
                .map(|s| (s.name, s.shown))
                .collect();
            let help = choices_help(name.as_str(), &formats, "valid level formats");
            self.error_help(at, self.rank, &message, help);
            return None;
        };
        let accepted = format.spelling().properties;
        let supports = props.iter().all(|p| accepted.contains(&p.as_str()));
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
        Some(LevelType { format, properties })
    }

    /// MLIR's cross-level rules (`SparseTensorEncodingAttr::verify`), checked by
    /// [`verify_level_types`] (the IR verifier's rules 4 to 8, in MLIR's order), each error at its
    /// level's format (or expression). Returns `false` if any failed.
    fn check_lvl_types(&mut self, lvls: &[LvlInfo<'t>], num_dims: usize) -> bool {
        let lts: Vec<LevelType> = lvls.iter().filter_map(|l| l.lt).collect();
        if lts.len() != lvls.len() {
            return false;
        }
        let exprs: Option<Vec<AffineExpr>> = lvls.iter().map(|l| l.expr.clone()).collect();
        let map = exprs.map(|results| AffineMap {
            num_vars: num_dims,
            num_symbols: 0,
            results,
        });
        let errors = verify_level_types(&lts, num_dims, map.as_ref());
        // already in MLIR's order: keep it (ranks below `rank::EMPTY`; at most MAX_DIAGS kept)
        for (k, e) in errors.iter().enumerate() {
            let span = match e.at {
                Location::LevelExpr(l) => lvls[l].expr_span,
                Location::Level(l) => lvls[l].lt_span,
                _ => lvls[0].lt_span,
            };
            let r = rank::LVL_TYPES + u32::try_from(k.min(MAX_DIAGS)).unwrap_or(0);
            self.verify_error(span, r, e.message.clone());
        }
        errors.is_empty()
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
        (e, _): (AffineExpr, usize),
        span: Span<'_>,
    ) -> Option<(AffineExpr, usize)> {
        // MLIR: `-x` is `x * -1`, simplified (`-(x * 2)` is `x * -2`, `-3` is the constant)
        match AffineExpr::make_mul(e, AffineExpr::Constant(-1)) {
            Some(e) => {
                let depth = e.depth();
                self.node(e, depth, span)
            }
            None => {
                self.error(span, "integer overflow in affine expression");
                None
            }
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
        (a, _): (AffineExpr, usize),
        (b, db): (AffineExpr, usize),
        span: Span<'_>,
    ) -> Option<(AffineExpr, usize)> {
        let b = if op == Rule::minus {
            self.negate((b, db), span)?.0
        } else {
            b
        };
        let cb = b.as_constant();
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
        // MLIR builds every operation with its simplifying constructors (`getAffineBinaryOpExpr`)
        let e = match op {
            Rule::plus | Rule::minus => AffineExpr::make_add(a, b),
            Rule::star => AffineExpr::make_mul(a, b),
            Rule::kw_floordiv => AffineExpr::make_floor_div(a, b),
            Rule::kw_ceildiv => AffineExpr::make_ceil_div(a, b),
            _ => AffineExpr::make_mod(a, b),
        };
        let Some(e) = e else {
            self.error(span, "integer overflow in affine expression");
            return None;
        };
        let depth = e.depth();
        self.node(e, depth, span)
    }
}

/// `true` if the expression mentions a variable (is not constant-or-symbolic).
pub(super) fn has_var(e: &AffineExpr) -> bool {
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

/// The alias name of an `alias_def` pair, without `#` / `!`.
pub(super) fn alias_of(p: Pair<'_, Rule>) -> Option<String> {
    inner(p)
        .find(|q| matches!(q.as_rule(), Rule::alias_name | Rule::type_alias_name))
        .map(|n| n.as_str()[1..].to_string())
}
