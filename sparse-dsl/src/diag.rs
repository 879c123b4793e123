//! Diagnostics: a message with a byte span into the parsed text, its 1-based line:column, and
//! an optional help line (rendered like rustc's `= help: ...`).

use std::fmt;

/// One problem found in an encoding text.
///
/// `start`/`end` are byte offsets into the parsed text (`end` exclusive, `end >= start`); an error
/// at the end of the input has `start == end == text.len()`. `line` and `column` are 1-based and
/// describe `start`; the column counts characters (not bytes) from the beginning of the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The message, in MLIR's wording where MLIR has one (e.g. `expected '->'`).
    pub message: String,
    /// Byte offset of the first byte of the offending text.
    pub start: usize,
    /// Byte offset one past the offending text (`>= start`).
    pub end: usize,
    /// 1-based line of `start`.
    pub line: usize,
    /// 1-based column (in characters) of `start`.
    pub column: usize,
    /// How to fix it (e.g. "did you mean `compressed`?"), when the parser knows; never part of the
    /// message, so MLIR's wording of the message is unchanged.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic for `text[start..end]`, computing line and column of `start`.
    ///
    /// Offsets beyond the text are clamped to `text.len()`, offsets inside a multi-byte character
    /// are moved back to its first byte, and `end` is raised to at least `start`.
    pub fn new(text: &str, start: usize, end: usize, message: impl Into<String>) -> Self {
        let start = floor_char_boundary(text, start);
        let end = floor_char_boundary(text, end).max(start);
        let before = &text[..start];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = text[line_start..start].chars().count() + 1;
        Diagnostic {
            message: message.into(),
            start,
            end,
            line,
            column,
            help: None,
        }
    }

    /// The same diagnostic with a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

fn floor_char_boundary(text: &str, pos: usize) -> usize {
    let mut pos = pos.min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    pos
}

impl fmt::Display for Diagnostic {
    /// `LINE:COL: MESSAGE`; the alternate form (`{:#}`) adds the help, if any, on a second line
    /// as rustc writes it: `LINE:COL: MESSAGE\n  = help: HELP`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)?;
        if let (true, Some(help)) = (f.alternate(), &self.help) {
            write!(f, "\n  = help: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}
