//! Exact diagnostics (message, span, help) for the cases of issue 13, item 10: MLIR's message
//! first and unchanged, reported once, at the most precise place, with a help line.

use sparse_dsl::diag::Diagnostic;
use sparse_dsl::parse::parse_declaration;

/// Every diagnostic as `(spanned text, start, message, help)`.
fn diags(text: &str) -> Vec<(&str, usize, String, Option<String>)> {
    match parse_declaration(text) {
        Ok(p) => panic!("{text}: accepted as {}", p.declared),
        Err(ds) => ds
            .into_iter()
            .map(|d| (&text[d.start..d.end], d.start, d.message, d.help))
            .collect(),
    }
}

#[test]
fn help_is_printed_only_in_the_alternate_form() {
    let d = Diagnostic::new("ab\ncd", 4, 5, "bad").with_help("use c");
    assert_eq!(d.help.as_deref(), Some("use c"));
    // the plain form (what `sparse check` prints) is unchanged: `LINE:COL: MESSAGE`
    assert_eq!(d.to_string(), "2:2: bad");
    assert_eq!(format!("{d:#}"), "2:2: bad\n  = help: use c");
    let plain = Diagnostic::new("ab", 0, 1, "bad");
    assert_eq!(plain.help, None);
    assert_eq!(format!("{plain:#}"), "1:1: bad");
}

#[test]
fn spans_end_at_the_last_token_not_the_whitespace_after_it() {
    // `implicitVal` that is not zero: at the value (it was the whole encoding)
    let text = "tensor<8x8xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), implicitVal = 1.0 : f32 }>>";
    assert_eq!(
        diags(text),
        vec![(
            "1.0 : f32",
            101,
            "implicit value must be zero".to_string(),
            None
        )]
    );
}
