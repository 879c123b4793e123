//! Diagnostics as rustc shows them: the file, line and column, then the source line with a caret
//! under the offending text.
//!
//! ```text
//! csr.mlir:2:64: unknown level format: compresed
//!   |
//! 2 | #CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compresed) }>
//!   |                                                                ^^^^^^^^^
//!   |
//!   = help: did you mean `compressed`? ...
//! ```

use sparse_dsl::diag::Diagnostic;

/// `d`, found in `text` read from `name`, as `NAME:LINE:COL: MESSAGE` followed by the source line
/// and a caret line, then rustc's `= help: ...` line when the diagnostic has help (no trailing
/// newline). The carets cover the diagnostic's span on its first
/// line (at least one caret: an error at the end of the input points just past the text).
pub fn render(name: &str, text: &str, d: &Diagnostic) -> String {
    let mut start = d.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let source = &text[line_start..line_end];
    let source = source.strip_suffix('\r').unwrap_or(source);
    // The caret goes under the same characters; a tab stays a tab so that it lines up.
    let pad: String = text[line_start..start]
        .chars()
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let end = d.end.clamp(start, line_start + source.len());
    let carets = text.get(start..end).map_or(0, |s| s.chars().count()).max(1);
    let number = d.line.to_string();
    let gutter = " ".repeat(number.len());
    let sep = if source.is_empty() { "" } else { " " };
    let mut out = format!(
        "{name}:{d}\n{gutter} |\n{number} |{sep}{source}\n{gutter} | {pad}{}",
        "^".repeat(carets)
    );
    if let Some(help) = &d.help {
        out.push_str(&format!("\n{gutter} |\n{gutter} = help: {help}"));
    }
    out
}

/// Every diagnostic rendered, separated by a newline and `error: ` (the caller prints the first
/// `error: `).
pub fn render_all(name: &str, text: &str, diags: &[Diagnostic]) -> String {
    diags
        .iter()
        .map(|d| render(name, text, d))
        .collect::<Vec<_>>()
        .join("\nerror: ")
}
