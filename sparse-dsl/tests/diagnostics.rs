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

fn enc(map_and_rest: &str) -> String {
    format!("#sparse_tensor.encoding<{{ map = {map_and_rest} }}>")
}

/// `(text, start, message, help)` with owned strings, for comparisons.
fn one(
    spanned: &'static str,
    start: usize,
    message: &str,
    help: &str,
) -> (&'static str, usize, String, Option<String>) {
    (spanned, start, message.to_string(), Some(help.to_string()))
}

const INFER: &str = "failed to infer lvlToDim from dimToLvl";
const NOT_A_BLOCK_LEVEL: &str = "each level must be a dimension (`i`) or half of a block pair \
    (`i floordiv 2` and `i mod 2`); for any other map, give every dimension its inverse explicitly \
    (`{l0, l1} (d0 = ..., d1 = ...) -> (l0 = ..., l1 = ...)`)";

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

#[test]
fn a_map_that_cannot_be_inverted_is_reported_once_at_the_level_expression() {
    // (map, spanned text, start, help): one diagnostic, MLIR's message, at the level expression
    // (the map starts at byte 32)
    let cases = [
        (
            "(i, j) -> (i + j : dense, j : compressed)",
            "i + j",
            43,
            NOT_A_BLOCK_LEVEL.to_string(),
        ),
        (
            "(i, j) -> (i floordiv 2 : dense, j : compressed)",
            "i floordiv 2",
            43,
            "a block map needs both `i floordiv 2` and `i mod 2`".to_string(),
        ),
        (
            "(i, j) -> (i mod 2 : dense, j : compressed)",
            "i mod 2",
            43,
            "a block map needs both `i floordiv 2` and `i mod 2`".to_string(),
        ),
        (
            "(i, j) -> (i floordiv 2 : dense, j : dense, i mod 3 : dense)",
            "i mod 3",
            76,
            "a block map needs both `i floordiv 2` and `i mod 2` (the same block size)".to_string(),
        ),
        (
            "(i, j) -> (i : dense, i : compressed)",
            "i",
            54,
            "dimension `i` is already level 0: each dimension must be exactly one level, or split \
             into `floordiv` and `mod` levels"
                .to_string(),
        ),
        (
            "(i, j) -> (i : dense, j floordiv 3 : compressed, i floordiv 3 : dense, j mod 3 : dense)",
            "i floordiv 3",
            81,
            "dimension `i` is already level 0: use either `i` or the pair `i floordiv 3` and \
             `i mod 3`"
                .to_string(),
        ),
        (
            "(i, j) -> (i mod 2 : dense, i : dense, i floordiv 2 : dense, j : dense)",
            "i",
            60,
            "dimension `i` is already split into blocks at level 0: use either `i` or the pair \
             `i floordiv 2` and `i mod 2`"
                .to_string(),
        ),
        (
            "(i) -> (i floordiv 2 : dense, i floordiv 2 : dense, i mod 2 : dense)",
            "i floordiv 2",
            62,
            "`i` already has a `floordiv` at level 0: a block map needs exactly one \
             `i floordiv b` and one `i mod b` (`mod` is missing or repeated)"
                .to_string(),
        ),
        (
            "(i, j) -> (i floordiv -3 : dense, j floordiv -3 : compressed, i mod 3 : dense, j mod 3 : dense)",
            "i floordiv -3",
            43,
            "a block size must be a positive constant: `i floordiv 3` and `i mod 3`".to_string(),
        ),
        // only the dimensions without an explicit inverse need inference
        (
            "{a, b} (i = a, j) -> (a = i : dense, b = i + j : dense)",
            "i + j",
            73,
            NOT_A_BLOCK_LEVEL.to_string(),
        ),
    ];
    for (map, spanned, start, help) in cases {
        let text = enc(map);
        assert_eq!(
            diags(&text),
            vec![(spanned, start, INFER.to_string(), Some(help))],
            "{text}"
        );
    }
}

#[test]
fn a_dimension_in_no_level_is_reported_at_its_variable() {
    // then MLIR's next rule (more dimensions than levels), as before
    let text = enc("(i, j) -> (i : dense)");
    assert_eq!(
        diags(&text),
        vec![
            one(
                "j",
                36,
                INFER,
                "dimension `j` is not stored in any level: every dimension must be a level (e.g. \
                 `j : compressed`) or split into `j floordiv b` and `j mod b`"
            ),
            (
                "(i : dense)",
                42,
                "unexpected dimToLvl mapping from 2 to 1".to_string(),
                None
            ),
        ]
    );
}

#[test]
fn a_block_size_that_does_not_divide_a_static_size_is_reported_once_at_the_size() {
    let text = "tensor<5x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : dense, i mod 2 : dense, j mod 2 : dense) }>>";
    assert_eq!(
        diags(text),
        vec![one(
            "5",
            7,
            "block size 2 does not divide dimension 0 of size 5",
            "dimension 0 is split into blocks of 2 (`floordiv 2` and `mod 2`): make its size a \
             multiple of 2 (e.g. 4 or 6) or dynamic (`?`)"
        )]
    );
    // one per dimension; below the block size, the only multiple suggested is the block size
    let text = "tensor<1x7xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 3 : dense, j floordiv 3 : compressed, i mod 3 : dense, j mod 3 : dense) }>>";
    assert_eq!(
        diags(text),
        vec![
            one(
                "1",
                7,
                "block size 3 does not divide dimension 0 of size 1",
                "dimension 0 is split into blocks of 3 (`floordiv 3` and `mod 3`): make its size \
                 a multiple of 3 (e.g. 3) or dynamic (`?`)"
            ),
            one(
                "7",
                9,
                "block size 3 does not divide dimension 1 of size 7",
                "dimension 1 is split into blocks of 3 (`floordiv 3` and `mod 3`): make its size \
                 a multiple of 3 (e.g. 6 or 9) or dynamic (`?`)"
            ),
        ]
    );
}

const FORMATS: &str = "valid level formats: `dense`, `batch`, `compressed`, `loose_compressed`, \
                       `singleton`, `structured[n, m]`";

#[test]
fn an_unknown_level_format_suggests_the_nearest_and_lists_the_valid_ones() {
    let cases = [
        ("compresed", Some("compressed")),
        ("Dense", Some("dense")),
        ("singelton", Some("singleton")),
        ("loose_compresed", Some("loose_compressed")),
        ("structred", Some("structured[n, m]")),
        ("strange", None),
        ("d", None),
    ];
    for (name, nearest) in cases {
        let text = enc(&format!("(i, j) -> (i : dense, j : {name})"));
        let help = match nearest {
            Some(n) => format!("did you mean `{n}`? {FORMATS}"),
            None => FORMATS.to_string(),
        };
        assert_eq!(
            diags(&text),
            vec![(
                name,
                58,
                format!("unknown level format: {name}"),
                Some(help)
            )],
        );
    }
    // an enormous name: no suggestion, nothing quadratic
    let name = "compressed".repeat(20_000);
    let text = enc(&format!("(i) -> (i : {name})"));
    let d = parse_declaration(&text).unwrap_err();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].help.as_deref(), Some(FORMATS));
}

#[test]
fn an_unknown_level_property_suggests_the_nearest() {
    let text = enc("(i, j) -> (i : dense, j : compressed(nonuniqe))");
    assert_eq!(
        diags(&text),
        vec![one(
            "nonuniqe",
            69,
            "unknown level property: nonuniqe",
            "did you mean `nonunique`? valid level properties: `nonunique`, `nonordered`, `soa`, \
             `high`"
        )]
    );
}

#[test]
fn a_bad_width_lists_the_allowed_widths() {
    let pos = "allowed posWidth values: 0 (native `usize`), 8, 16, 32 and 64";
    let crd = "allowed crdWidth values: 0 (native `usize`), 8, 16, 32 and 64 (and 2 with a \
               `structured[n, m]` level)";
    let csr = "(i, j) -> (i : dense, j : compressed)";
    assert_eq!(
        diags(&enc(&format!("{csr}, posWidth = 7"))),
        vec![one("7", 82, "unexpected position bitwidth: 7", pos)]
    );
    assert_eq!(
        diags(&enc(&format!("{csr}, crdWidth = 7"))),
        vec![one("7", 82, "unexpected coordinate bitwidth: 7", crd)]
    );
    assert_eq!(
        diags(&enc(&format!("{csr}, posWidth = \"x\""))),
        vec![one(
            "\"x\"",
            82,
            "expected an integral position bitwidth",
            pos
        )]
    );
    // with an n:m level, 2 is a coordinate width too
    let text = enc(
        "(i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4]), crdWidth = 7",
    );
    assert_eq!(
        diags(&text),
        vec![one(
            "7",
            116,
            "unexpected coordinate bitwidth: 7",
            "allowed crdWidth values: 0 (native `usize`), 2, 8, 16, 32 and 64"
        )]
    );
}
