//! The statement language: TACO's index notation, as the `sparse eval` contract and the
//! `kernel` items of `sparse_format!` write it.
//!
//! ```text
//! statement := access ('=' | '+=') expr
//! access    := NAME '(' INDEX (',' INDEX)* ')' | NAME           (a bare name is a 0-d operand)
//! expr      := or ;  or := xor ('|' xor)* ;  xor := and ('^' and)* ;  and := add ('&' add)*
//! add       := mul (('+' | '-') mul)* ;  mul := unary (('*' | '/') unary)*
//! unary     := '-' unary | primary
//! primary   := NUMBER | '(' expr ')' | REDUCE '(' INDEX+ ',' expr ')' | access
//! REDUCE    := sum | prod | min | max | and | or | xor          (reserved before '(')
//! ```
//!
//! Bitwise operators bind as in C (looser than `+`); `+ -` looser than `* /`. A hand-written
//! lexer and recursive-descent parser produce an AST with byte spans; every error is a
//! [`Error`] with the span of the offending token and a message, never a panic (nesting is
//! bounded by [`MAX_DEPTH`]).

use std::fmt;

use crate::error::{Error, Span};

/// Parentheses and unary minus nest at most this deep (keeps the recursion bounded).
pub const MAX_DEPTH: usize = 64;

/// A statement holds at most this many operators (keeps every later recursion bounded).
pub const MAX_OPERATORS: usize = 256;

/// An index variable as written, with its span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    /// The name (`i`, `k1`).
    pub name: String,
    /// Where it is written.
    pub span: Span,
}

/// A tensor access `A(i, k)`, or a bare name `alpha` (a 0-d operand, no indices).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// The tensor's name.
    pub name: Ident,
    /// The index variables, one per dimension (empty for a bare name).
    pub indices: Vec<Ident>,
    /// The whole access.
    pub span: Span,
}

/// A binary operator. `*`, `/` and `&` intersect the stored entries of their operands; `+`,
/// `-`, `|` and `^` unite them (MLIR's `Merger`, TACO's merge lattices).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+` (union).
    Add,
    /// `-` (union; where only the right side is stored the value is `-b`).
    Sub,
    /// `*` (intersection).
    Mul,
    /// `/` (intersection).
    Div,
    /// `&`, integers only (intersection).
    And,
    /// `|`, integers only (union).
    Or,
    /// `^`, integers only (union).
    Xor,
}

impl BinOp {
    /// `true` for the operators whose result is stored only where both operands are
    /// (intersection): `*`, `/`, `&`.
    pub fn intersects(self) -> bool {
        matches!(self, BinOp::Mul | BinOp::Div | BinOp::And)
    }
    /// `true` for the bitwise operators, defined for integer values only.
    pub fn is_bitwise(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or | BinOp::Xor)
    }
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Xor => "^",
        }
    }
}

/// A reduction operator (`sum(k, E)` ...), MLIR's `sparse_tensor.reduce` semantics: only the
/// values the iteration visits (stored entries) are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `sum`.
    Sum,
    /// `prod`.
    Prod,
    /// `min`.
    Min,
    /// `max`.
    Max,
    /// `and` (bitwise, integers only).
    And,
    /// `or` (bitwise, integers only).
    Or,
    /// `xor` (bitwise, integers only).
    Xor,
}

impl ReduceOp {
    /// The operator's name as written (`sum`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
            ReduceOp::And => "and",
            ReduceOp::Or => "or",
            ReduceOp::Xor => "xor",
        }
    }
    /// The reduction named `name`, if it is one.
    pub fn from_name(name: &str) -> Option<ReduceOp> {
        Some(match name {
            "sum" => ReduceOp::Sum,
            "prod" => ReduceOp::Prod,
            "min" => ReduceOp::Min,
            "max" => ReduceOp::Max,
            "and" => ReduceOp::And,
            "or" => ReduceOp::Or,
            "xor" => ReduceOp::Xor,
            _ => return None,
        })
    }
    /// `true` for `and`, `or`, `xor` (integers only).
    pub fn is_bitwise(self) -> bool {
        matches!(self, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor)
    }
}

/// A numeric literal as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// Digits only (`3`): usable with every value type.
    Int(i128),
    /// With a point or an exponent (`2.0`, `1e-3`): float value types only.
    Float(f64),
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Int(v) => write!(f, "{v}"),
            Literal::Float(v) if v.fract() == 0.0 && v.is_finite() => write!(f, "{v:.1}"),
            Literal::Float(v) => write!(f, "{v}"),
        }
    }
}

/// An expression node with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What the node is.
    pub kind: ExprKind,
    /// The source text it covers.
    pub span: Span,
}

/// The kinds of expression nodes.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A tensor access or a 0-d operand.
    Access(Access),
    /// A numeric literal.
    Literal(Literal),
    /// Unary minus.
    Neg(Box<Expr>),
    /// A binary operation.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// An explicit reduction `op(k l, body)`.
    Reduce(ReduceOp, Vec<Ident>, Box<Expr>),
}

/// `=` or `+=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignOp {
    /// `=`: the output is overwritten.
    Assign,
    /// `+=`: the result is added to the output's previous values.
    AddAssign,
}

/// A parsed statement `lhs = rhs` / `lhs += rhs`.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// The output access.
    pub lhs: Access,
    /// `=` or `+=`.
    pub op: AssignOp,
    /// The right-hand side.
    pub rhs: Expr,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Number(Literal),
    LParen,
    RParen,
    Comma,
    Assign,
    AddAssign,
    Op(BinOp),
    End,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(n) => format!("`{n}`"),
        Tok::Number(l) => format!("`{l}`"),
        Tok::LParen => "`(`".into(),
        Tok::RParen => "`)`".into(),
        Tok::Comma => "`,`".into(),
        Tok::Assign => "`=`".into(),
        Tok::AddAssign => "`+=`".into(),
        Tok::Op(o) => format!("`{}`", o.symbol()),
        Tok::End => "the end of the statement".into(),
    }
}

fn lex(text: &str) -> Result<Vec<(Tok, Span)>, Error> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(text[start..i].to_string()), Span::new(start, i)));
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let mut float = false;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i < b.len() && b[i] == b'.' {
                float = true;
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                let mut k = i + 1;
                if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
                    k += 1;
                }
                if k < b.len() && b[k].is_ascii_digit() {
                    float = true;
                    i = k;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let s = &text[start..i];
            let span = Span::new(start, i);
            let lit = if float {
                Literal::Float(
                    s.parse()
                        .map_err(|_| Error::new(span, format!("`{s}` is not a number")))?,
                )
            } else {
                Literal::Int(
                    s.parse()
                        .map_err(|_| Error::new(span, format!("the literal `{s}` is too large")))?,
                )
            };
            out.push((Tok::Number(lit), span));
            continue;
        }
        let (tok, len) = match c {
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b',' => (Tok::Comma, 1),
            b'=' => (Tok::Assign, 1),
            b'+' if b.get(i + 1) == Some(&b'=') => (Tok::AddAssign, 2),
            b'+' => (Tok::Op(BinOp::Add), 1),
            b'-' => (Tok::Op(BinOp::Sub), 1),
            b'*' => (Tok::Op(BinOp::Mul), 1),
            b'/' => (Tok::Op(BinOp::Div), 1),
            b'&' => (Tok::Op(BinOp::And), 1),
            b'|' => (Tok::Op(BinOp::Or), 1),
            b'^' => (Tok::Op(BinOp::Xor), 1),
            _ => {
                let ch = text[i..].chars().next().unwrap_or('?');
                return Err(Error::new(
                    Span::new(i, i + ch.len_utf8()),
                    format!("unexpected character `{ch}` in the statement"),
                ));
            }
        };
        i += len;
        out.push((tok, Span::new(start, i)));
    }
    out.push((Tok::End, Span::new(text.len(), text.len())));
    Ok(out)
}

struct Parser {
    toks: Vec<(Tok, Span)>,
    at: usize,
    depth: usize,
    ops: usize,
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.at.min(self.toks.len() - 1)].0
    }
    fn span(&self) -> Span {
        self.toks[self.at.min(self.toks.len() - 1)].1
    }
    fn bump(&mut self) -> (Tok, Span) {
        let t = self.toks[self.at.min(self.toks.len() - 1)].clone();
        if self.at < self.toks.len() - 1 {
            self.at += 1;
        }
        t
    }
    fn unexpected(&self, wanted: &str) -> Error {
        Error::new(
            self.span(),
            format!("expected {wanted}, found {}", describe(self.peek())),
        )
    }
    fn expect(&mut self, t: Tok, wanted: &str) -> Result<Span, Error> {
        if *self.peek() == t {
            Ok(self.bump().1)
        } else {
            Err(self.unexpected(wanted))
        }
    }

    fn ident(&mut self, wanted: &str) -> Result<Ident, Error> {
        match self.peek().clone() {
            Tok::Ident(name) => {
                let span = self.bump().1;
                Ok(Ident { name, span })
            }
            _ => Err(self.unexpected(wanted)),
        }
    }

    fn access(&mut self, name: Ident) -> Result<Access, Error> {
        if *self.peek() != Tok::LParen {
            return Ok(Access {
                span: name.span,
                name,
                indices: Vec::new(),
            });
        }
        self.bump();
        let mut indices = vec![self.ident("an index variable")?];
        while *self.peek() == Tok::Comma {
            self.bump();
            indices.push(self.ident("an index variable")?);
        }
        let end = self.expect(Tok::RParen, "`,` or `)` after an index variable")?;
        Ok(Access {
            span: name.span.to(end),
            name,
            indices,
        })
    }

    fn binary(&mut self, level: usize) -> Result<Expr, Error> {
        const LEVELS: [&[BinOp]; 5] = [
            &[BinOp::Or],
            &[BinOp::Xor],
            &[BinOp::And],
            &[BinOp::Add, BinOp::Sub],
            &[BinOp::Mul, BinOp::Div],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Tok::Op(op) if LEVELS[level].contains(op) => *op,
                _ => return Ok(lhs),
            };
            let at = self.bump().1;
            self.ops += 1;
            if self.ops > MAX_OPERATORS {
                return Err(Error::new(
                    at,
                    format!("the statement has more than {MAX_OPERATORS} operators"),
                ));
            }
            let rhs = self.binary(level + 1)?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span,
            };
        }
    }

    fn nest(&mut self) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::new(
                self.span(),
                format!("the expression nests deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    fn unary(&mut self) -> Result<Expr, Error> {
        if *self.peek() == Tok::Op(BinOp::Sub) {
            let start = self.bump().1;
            self.nest()?;
            let e = self.unary()?;
            self.depth -= 1;
            let span = start.to(e.span);
            return Ok(Expr {
                kind: ExprKind::Neg(Box::new(e)),
                span,
            });
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, Error> {
        match self.peek().clone() {
            Tok::Number(lit) => {
                let span = self.bump().1;
                Ok(Expr {
                    kind: ExprKind::Literal(lit),
                    span,
                })
            }
            Tok::LParen => {
                let start = self.bump().1;
                self.nest()?;
                let mut e = self.binary(0)?;
                self.depth -= 1;
                let end = self.expect(Tok::RParen, "`)`")?;
                e.span = start.to(end);
                Ok(e)
            }
            Tok::Ident(name) => {
                let id = self.ident("a name")?;
                let next = self.toks.get(self.at).map(|t| &t.0);
                if let (Some(op), Some(Tok::LParen)) = (ReduceOp::from_name(&name), next) {
                    self.bump();
                    let mut vars = vec![self.ident("the reduction's index variables")?];
                    while let Tok::Ident(_) = self.peek() {
                        vars.push(self.ident("an index variable")?);
                    }
                    self.expect(
                        Tok::Comma,
                        "`,` between the reduction's index variables and its expression",
                    )?;
                    self.nest()?;
                    let body = self.binary(0)?;
                    self.depth -= 1;
                    let end = self.expect(Tok::RParen, "`)` closing the reduction")?;
                    return Ok(Expr {
                        kind: ExprKind::Reduce(op, vars, Box::new(body)),
                        span: id.span.to(end),
                    });
                }
                let a = self.access(id)?;
                Ok(Expr {
                    span: a.span,
                    kind: ExprKind::Access(a),
                })
            }
            _ => Err(self.unexpected("an operand, a number or `(`")),
        }
    }
}

/// Parses one statement.
///
/// Errors (each with the span of the offending token): an unexpected character, a malformed
/// number or one too large for `i128`, a missing operand, `=`, `,` or `)`, text after the
/// statement, nesting deeper than [`MAX_DEPTH`].
pub fn parse_statement(text: &str) -> Result<Statement, Error> {
    let toks = lex(text)?;
    let mut p = Parser {
        toks,
        at: 0,
        depth: 0,
        ops: 0,
    };
    let name = p.ident("the output tensor's name")?;
    let lhs = p.access(name)?;
    let op = match p.peek() {
        Tok::Assign => AssignOp::Assign,
        Tok::AddAssign => AssignOp::AddAssign,
        _ => return Err(p.unexpected("`=` or `+=` after the output")),
    };
    p.bump();
    let rhs = p.binary(0)?;
    if *p.peek() != Tok::End {
        return Err(p.unexpected("an operator or the end of the statement"));
    }
    Ok(Statement { lhs, op, rhs })
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name.name)?;
        if !self.indices.is_empty() {
            let idx: Vec<&str> = self.indices.iter().map(|i| i.name.as_str()).collect();
            write!(f, "({})", idx.join(","))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Access(a) => a.to_string(),
            ExprKind::Literal(l) => l.to_string(),
            ExprKind::Neg(x) => format!("(-{})", show(x)),
            ExprKind::Binary(op, a, b) => format!("({} {} {})", show(a), op.symbol(), show(b)),
            ExprKind::Reduce(op, vs, b) => {
                let v: Vec<&str> = vs.iter().map(|i| i.name.as_str()).collect();
                format!("{}({}, {})", op.name(), v.join(" "), show(b))
            }
        }
    }

    #[test]
    fn precedence_and_forms() {
        let s = parse_statement("r(i) = b(i) - A(i,k) * x(k) | 3 ^ -c & 2.5").unwrap();
        assert_eq!(
            show(&s.rhs),
            "((b(i) - (A(i,k) * x(k))) | (3 ^ ((-c) & 2.5)))"
        );
        let s = parse_statement("m(i) += max(j k, A(i,j) / B(j,k))").unwrap();
        assert_eq!(s.op, AssignOp::AddAssign);
        assert_eq!(show(&s.rhs), "max(j k, (A(i,j) / B(j,k)))");
        assert_eq!(s.rhs.span, Span::new(8, 33));
    }

    #[test]
    fn errors_have_spans() {
        let e = parse_statement("y(i) = A(i,j) * ").unwrap_err();
        assert_eq!(
            e.message,
            "expected an operand, a number or `(`, found the end of the statement"
        );
        assert_eq!(e.span, Some(Span::new(16, 16)));
        let e = parse_statement("y(i) = A(i,j) $ x(j)").unwrap_err();
        assert_eq!(e.span, Some(Span::new(14, 15)));
        let e = parse_statement("y(i) A(i)").unwrap_err();
        assert_eq!(
            e.message,
            "expected `=` or `+=` after the output, found `A`"
        );
        let deep = format!("y = {}1{}", "(".repeat(300), ")".repeat(300));
        assert!(parse_statement(&deep)
            .unwrap_err()
            .message
            .contains("nests deeper"));
        let long = format!("y = 1{}", " + 1".repeat(300));
        assert!(parse_statement(&long)
            .unwrap_err()
            .message
            .contains("operators"));
        let e = parse_statement("y = 99999999999999999999999999999999999999999").unwrap_err();
        assert!(e.message.contains("too large"));
    }
}
