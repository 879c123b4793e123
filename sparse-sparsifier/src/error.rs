//! Errors of the sparsifier: a message, the byte span of the statement it points at (when
//! there is one) and an optional help line. The CLI prints `error: MESSAGE`; the macro (later)
//! maps the span onto its tokens, as `sparse-dsl`'s diagnostics do.

use std::fmt;

/// A half-open byte range `start..end` into the statement text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// `start..end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }
    /// The span from the start of `self` to the end of `other`.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// An error of the sparsifier (statement syntax, checks, iteration order) or of the interpreter
/// (a runtime condition such as an integer division by zero).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// Where in the statement, if the error belongs to a place in it.
    pub span: Option<Span>,
    /// What is wrong, naming the operand / index / operator.
    pub message: String,
    /// A suggestion (a transposed format, a conversion), if any.
    pub help: Option<String>,
}

impl Error {
    /// An error at `span`.
    pub fn new(span: Span, message: impl Into<String>) -> Error {
        Error {
            span: Some(span),
            message: message.into(),
            help: None,
        }
    }
    /// An error with no place in the statement.
    pub fn plain(message: impl Into<String>) -> Error {
        Error {
            span: None,
            message: message.into(),
            help: None,
        }
    }
    /// The same error with a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Error {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for Error {
    /// The message, then `; help: ...` when there is a suggestion (one line, for the CLI).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.help {
            write!(f, " (help: {h})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}
