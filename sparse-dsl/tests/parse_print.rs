//! Parser, verifier and canonical printer: exact canonical strings, IR shapes, diagnostics with
//! exact positions.

use sparse_dsl::diag::Diagnostic;
use sparse_dsl::ir::{AffineExpr, DimSlice, LevelFormat, LevelType};
use sparse_dsl::parse::parse_encoding;

fn canon(text: &str) -> String {
    let p = parse_encoding(text).unwrap_or_else(|d| panic!("{text}: {d:?}"));
    let printed = p.encoding.to_string();
    let again = parse_encoding(&printed).unwrap_or_else(|d| panic!("reparse {printed}: {d:?}"));
    assert_eq!(again.encoding, p.encoding, "round trip of {printed}");
    printed
}

fn errors(text: &str) -> Vec<String> {
    match parse_encoding(text) {
        Ok(p) => panic!("{text}: unexpectedly accepted as {}", p.encoding),
        Err(d) => d.iter().map(|d| d.to_string()).collect(),
    }
}

fn var(v: usize) -> AffineExpr {
    AffineExpr::Var(v)
}
fn cst(c: i64) -> AffineExpr {
    AffineExpr::Constant(c)
}
fn add(a: AffineExpr, b: AffineExpr) -> AffineExpr {
    AffineExpr::Add(Box::new(a), Box::new(b))
}
fn mul(a: AffineExpr, b: AffineExpr) -> AffineExpr {
    AffineExpr::Mul(Box::new(a), Box::new(b))
}

#[test]
fn canonical_strings() {
    assert_eq!(
        canon("#CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>"),
        "#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>"
    );
    assert_eq!(
        canon("#DCSC = #sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed), posWidth = 32, crdWidth = 8 }>"),
        "#sparse_tensor.encoding<{ map = (d0, d1) -> (d1 : compressed, d0 : compressed), posWidth = 32, crdWidth = 8 }>"
    );
    // keys in any order, printed in canonical order
    assert_eq!(
        canon("#sparse_tensor.encoding<{ crdWidth = 8, posWidth = 32, map = (i, j) -> (j : compressed, i : compressed) }>"),
        "#sparse_tensor.encoding<{ map = (d0, d1) -> (d1 : compressed, d0 : compressed), posWidth = 32, crdWidth = 8 }>"
    );
    assert_eq!(
        canon("#BSR = #sparse_tensor.encoding<{ map = ( i, j ) -> ( i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense ) }>"),
        "#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 floordiv 2 : dense, d1 floordiv 3 : compressed, d0 mod 2 : dense, d1 mod 3 : dense) }>"
    );
    assert_eq!(
        canon("#COO = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>"),
        "#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : compressed(nonunique), d1 : singleton) }>"
    );
    assert_eq!(
        canon("#S = #sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(0, 4, 1)>, j : #sparse_tensor<slice(0, 8, ?)>) -> (i : dense, j : compressed) }>"),
        "#sparse_tensor.encoding<{ map = (d0 : #sparse_tensor<slice(0, 4, 1)>, d1 : #sparse_tensor<slice(0, 8, ?)>) -> (d0 : dense, d1 : compressed) }>"
    );
    // a dimension without a slice gets (0, ?, 1) once another one has a slice
    assert_eq!(
        canon("#sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(?, ?, ?)>, j) -> (i : dense, j : compressed) }>"),
        "#sparse_tensor.encoding<{ map = (d0 : #sparse_tensor<slice(?, ?, ?)>, d1 : #sparse_tensor<slice(0, ?, 1)>) -> (d0 : dense, d1 : compressed) }>"
    );
    assert_eq!(
        canon("#ELL = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 3 * i : dense, i : dense, j : compressed) }>"),
        // MLIR moves the symbolic factor right: `(s0 * 3) * d0` is `d0 * (s0 * 3)`
        "#sparse_tensor.encoding<{ map = [s0](d0, d1) -> (d0 * (s0 * 3) : dense, d0 : dense, d1 : compressed) }>"
    );
    assert_eq!(
        canon("#NV = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 2 }>"),
        "#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 floordiv 4 : dense, d1 mod 4 : structured[2, 4]), crdWidth = 2 }>"
    );
    assert_eq!(
        canon("#sparse_tensor.encoding<{ map = (i, j, k) -> (i : dense, j : compressed(nonunique, high), k : singleton) }>"),
        "#sparse_tensor.encoding<{ map = (d0, d1, d2) -> (d0 : dense, d1 : loose_compressed(nonunique), d2 : singleton) }>"
    );
    assert_eq!(
        canon("#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique, nonordered), j : singleton(nonordered, soa)) }>"),
        "#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : compressed(nonunique, nonordered), d1 : singleton(nonordered, soa)) }>"
    );
    assert_eq!(
        canon("#sparse_tensor.encoding<{ map = (i, j) -> (i : batch, j : compressed), posWidth = 0 }>"),
        "#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : batch, d1 : compressed) }>"
    );
    // expressions: folding, subtraction, precedence
    assert_eq!(
        canon("#sparse_tensor.encoding<{ map = {a, b, c, d, e} (i = a, j = b) -> (a = i : dense, b = j : dense, c = i - 3 + 2 * 2 : dense, d = -(i + j) * 2 : dense, e = (i - j) floordiv -2 : dense) }>"),
        "#sparse_tensor.encoding<{ map = {l0, l1, l2, l3, l4}(d0 = l0, d1 = l1) -> (l0 = d0 : dense, l1 = d1 : dense, l2 = d0 + 1 : dense, l3 = (d0 + d1) * -2 : dense, l4 = (d0 - d1) floordiv -2 : dense) }>"
    );
}

#[test]
fn explicit_inverse() {
    let bsr = parse_encoding(
        "#BSR_explicit = #sparse_tensor.encoding<{ map = { ib, jb, ii, jj } ( i = ib * 2 + ii, j = jb * 3 + jj ) -> \
         ( ib = i floordiv 2 : dense, jb = j floordiv 3 : compressed, ii = i mod 2 : dense, jj = j mod 3 : dense ) }>",
    )
    .unwrap();
    let implicit = parse_encoding(
        "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense) }>",
    )
    .unwrap();
    assert_eq!(bsr.alias.as_deref(), Some("BSR_explicit"));
    assert_eq!(bsr.encoding, implicit.encoding);
    assert_eq!(bsr.encoding.lvl_to_dim.num_vars, 4);
    assert_eq!(
        bsr.encoding.lvl_to_dim.results,
        vec![
            add(mul(var(0), cst(2)), var(2)),
            add(mul(var(1), cst(3)), var(3))
        ]
    );
    // commuted but equivalent explicit inverse: accepted, canonical (inferred) form stored
    let commuted = parse_encoding(
        "#sparse_tensor.encoding<{ map = {a, b, c, d} (i = c + 2 * a, j = d + b * 3) -> \
         (a = i floordiv 2 : dense, b = j floordiv 3 : compressed, c = i mod 2 : dense, d = j mod 3 : dense) }>",
    )
    .unwrap();
    assert_eq!(commuted.encoding, implicit.encoding);
    // a non-inferable inverse is kept and printed explicitly
    let text = "#sparse_tensor.encoding<{ map = {a, b} (i = a + b, j = b) -> (a = i - j : dense, b = j : compressed) }>";
    let e = parse_encoding(text).unwrap().encoding;
    assert_eq!(e.lvl_to_dim.results, vec![add(var(0), var(1)), var(1)]);
    assert_eq!(e.dim_to_lvl.results[0], add(var(0), mul(var(1), cst(-1))));
    assert_eq!(
        canon(text),
        "#sparse_tensor.encoding<{ map = {l0, l1}(d0 = l0 + l1, d1 = l1) -> (l0 = d0 - d1 : dense, l1 = d1 : compressed) }>"
    );
}

#[test]
fn ir_shapes() {
    let e =
        parse_encoding("#sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>")
            .unwrap()
            .encoding;
    assert_eq!(
        e.lvl_types,
        vec![
            LevelType::new(LevelFormat::Dense),
            LevelType::new(LevelFormat::Compressed)
        ]
    );
    assert_eq!(e.dim_to_lvl.results, vec![var(1), var(0)]);
    assert_eq!(e.lvl_to_dim.results, vec![var(1), var(0)]);
    assert_eq!((e.pos_width, e.crd_width, &e.dim_slices), (0, 0, &None));

    let e = parse_encoding("#sparse_tensor.encoding<{ map = (i, j : #sparse_tensor<slice(1, ?, 2)>) -> (i : dense, j : compressed) }>")
        .unwrap()
        .encoding;
    assert_eq!(
        e.dim_slices,
        Some(vec![
            DimSlice {
                offset: Some(0),
                size: None,
                stride: Some(1)
            },
            DimSlice {
                offset: Some(1),
                size: None,
                stride: Some(2)
            }
        ])
    );

    // unary minus on a non-constant is x * -1; on a literal it folds
    let e = parse_encoding("#sparse_tensor.encoding<{ map = {a, b, c, d} (i = a) -> (a = i : dense, b = -i : dense, c = -5 : dense, d = i - 7 : dense) }>")
        .unwrap()
        .encoding;
    assert_eq!(e.dim_to_lvl.results[1], mul(var(0), cst(-1)));
    assert_eq!(e.dim_to_lvl.results[2], cst(-5));
    assert_eq!(e.dim_to_lvl.results[3], add(var(0), cst(-7)));
    let e = parse_encoding(
        "#sparse_tensor.encoding<{ map = {a, b, c} (i = b, j = c) -> (a = i - j : dense, b = i : dense, c = j : dense) }>",
    )
    .unwrap()
    .encoding;
    assert_eq!(e.dim_to_lvl.results[0], add(var(0), mul(var(1), cst(-1))));

    // n:m spellings
    for f in ["block2_4", "structured[2, 4]", "structured [ 2 , 4 ]"] {
        let t = format!("#sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : {f}) }}>");
        let e = parse_encoding(&t).unwrap().encoding;
        assert_eq!(e.lvl_types[2].format, LevelFormat::NOutOfM { n: 2, m: 4 });
    }
}

#[test]
fn whitespace_comments_and_macro_spacing() {
    let expected = "#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed), posWidth = 32 }>";
    for t in [
        "#sparse_tensor.encoding < { map = ( i , j ) -> ( i : dense , j : compressed ) , posWidth = 32 } >",
        "#sparse_tensor.encoding<{map=(i,j)->(i:dense,j:compressed),posWidth=32}>",
        "// leading comment\n#A =\n #sparse_tensor.encoding<{ // c\n map = (i, j) // c\n -> (i : dense, // c\n j : compressed), posWidth = 32, // c\n }> // trailing",
        "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 0x20 }>",
    ] {
        assert_eq!(canon(t), expected, "{t}");
    }
    assert_eq!(
        errors("#sparse_tensor.encoding < { map = ( i : #sparse_tensor < slice ( 0 , 4 , - 1 ) > ) -> ( i : dense ) } >"),
        vec!["1:74: expect positive value or ? for slice offset/size/stride"]
    );
}

#[test]
fn error_positions() {
    // line:column, 1-based, of the offending token
    assert_eq!(
        errors("#X = #sparse_tensor.encoding<{\n  map = (i, j) (i : dense, j : compressed)\n}>"),
        vec!["2:16: expected '->'"]
    );
    assert_eq!(
        errors("#X = #sparse_tensor.encoding<{\n  map = (i, j) -> (i : dense,\n     k : compressed)\n}>"),
        vec!["3:6: use of undeclared identifier"]
    );
    assert_eq!(
        errors("#X = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed),\n  crdBits = 8 }>"),
        vec!["2:3: unexpected key: crdBits"]
    );
    // several semantic errors are all reported, in source order
    assert_eq!(
        errors("#sparse_tensor.encoding<{ map = (i, i) -> (i : dense, k : compresed, j : compressed(unsorted)), posWidth = 12 }>"),
        vec![
            "1:37: redefinition of identifier 'i'",
            "1:55: use of undeclared identifier",
            "1:59: unknown level format: compresed",
            "1:70: use of undeclared identifier",
            "1:85: unknown level property: unsorted",
            "1:108: unexpected position bitwidth: 12",
        ]
    );
    // column counts characters, not bytes
    assert_eq!(
        errors("// é\n#sparse_tensor.encoding<{ map = (é) -> (i : dense) }>"),
        vec!["2:34: unexpected character"]
    );
    // end of input
    let text = "#sparse_tensor.encoding<{ map = (i) -> (i : dense) }";
    let d = parse_encoding(text).unwrap_err();
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].start, d[0].end, d[0].line, d[0].column),
        (text.len(), text.len(), 1, text.len() + 1)
    );
    assert_eq!(d[0].message, "expected '>'");
}

#[test]
fn syntax_messages() {
    let cases = [
        (
            "#sparse_tensor.encoding<{ map = (i, j) - > (i : dense, j : compressed) }>",
            "expected '->'",
        ),
        (
            "#sparse_tensor.encoding<{ map = i, j) -> (i : dense, j : compressed) }>",
            "expected '(' in dimension-specifier list",
        ),
        (
            "#sparse_tensor.encoding<{ map = (i, j) -> i : dense, j : compressed) }>",
            "expected '(' in level-specifier list",
        ),
        (
            "#sparse_tensor.encoding<{ map = (i j) -> (i : dense, j : compressed) }>",
            "expected ')' in dimension-specifier list",
        ),
        (
            "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense j : compressed) }>",
            "expected ')' in level-specifier list",
        ),
        (
            "#sparse_tensor.encoding<{ map = (i, j) -> (i dense, j : compressed) }>",
            "expected ':'",
        ),
        (
            "#sparse_tensor.encoding<{ map = (i, 3) -> (i : dense) }>",
            "expected bare identifier",
        ),
        (
            "#sparse_tensor.encoding<{ map = [1](i) -> (i : dense) }>",
            "expected bare identifier",
        ),
        (
            "#X #sparse_tensor.encoding<{ map = (i) -> (i : dense) }>",
            "expected '='",
        ),
        ("", "expected '#sparse_tensor.encoding'"),
        (
            "#sparse_tensor.encoding<{ map = (i) -> (i : dense) }> extra",
            "expected end of input",
        ),
        (
            "#sparse_tensor.encoding<{ 5 }>",
            "expected attribute key or '}'",
        ),
    ];
    for (text, msg) in cases {
        let d = errors(text);
        assert_eq!(d.len(), 1, "{text}: {d:?}");
        assert!(d[0].ends_with(msg), "{text}: got {d:?}, expected {msg:?}");
    }
}

#[test]
fn verifier_messages() {
    let cases = [
        ("(i, j) -> (i : dense, j : compressed), crdWidth = 2", "unexpected coordinate bitwidth: 2"),
        ("(i, j) -> (i : dense, j : compressed), posWidth = -8", "unexpected position bitwidth: -8"),
        ("(i, j) -> (i : dense, j : compressed), posWidth = 99999999999999999999999", "unexpected position bitwidth: 99999999999999999999999"),
        ("(i, j) -> (i : dense(nonunique), j : compressed)", "invalid level type: level format doesn't support the properties"),
        ("(i, j) -> (i : structured[2, 4](nonunique), j : compressed)", "invalid level type: level format doesn't support the properties"),
        ("(i) -> (i : singleton(high))", "invalid level type: level format doesn't support the properties"),
        ("(i, j) -> (i : singleton, j : compressed)", "expected compressed or loose_compressed level before singleton level"),
        ("(i, j) -> (i : dense, j : singleton)", "expected compressed or loose_compressed level before singleton level"),
        ("(i, j, k) -> (i : compressed(nonunique), j : singleton, k : singleton(soa))", "expected all singleton lvlTypes stored in the same memory layout (SoA vs AoS)."),
        ("(i, j) -> (i : dense, j : compressed(soa))", "SoA is only applicable to singleton lvlTypes."),
        ("(i, j) -> (i : dense, j : batch)", "Batch lvlType can only be leading levels."),
        ("(i, j) -> (i : compressed(nonunique), j : dense)", "dense level cannot follow a non-unique level"),
        ("(i, j) -> (i : structured[2, 4], j : dense)", "expected n_out_of_m to be the last level type"),
        ("(i, j) -> (i : compressed, j floordiv 4 : dense, j mod 4 : block2_4)", "expected all dense lvlTypes before a n_out_of_m level"),
        ("(i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4, 1])", "expected exactly 2 structured sizes"),
        ("(i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured)", "expected exactly 2 structured sizes"),
        ("(i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[5, 4])", "expected n <= m in n_out_of_m"),
        ("(i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block5_4)", "expected n <= m in n_out_of_m"),
        ("(i, j) -> (i : dense, j floordiv 8 : dense, j mod 8 : block2_4)", "expected coeffiencts of Affine expressions to be equal to m of n_out_of_m level"),
        ("(i, j) -> (i : dense, j floordiv 2 : dense, j mod 2 : block2_4)", "expected coeffiencts of Affine expressions to be equal to m of n_out_of_m level"),
        ("(i, j) -> (i : dense, j floordiv 2 : dense, j mod 4 : block2_4)", "expected 1xm block structure for n_out_of_m level"),
        ("(i, j) -> (i floordiv 2 : dense, i mod 2 : dense, j floordiv 4 : dense, j mod 4 : block2_4)", "expected only one blocked level with the same coefficients"),
        ("(i, j) -> (i : dense, j : compresed)", "unknown level format: compresed"),
        ("(i, j) -> (i : dense, j : compressed(unsorted))", "unknown level property: unsorted"),
        ("(i, j) -> (i : dense, k : compressed)", "use of undeclared identifier"),
        ("(i, i) -> (i : dense)", "redefinition of identifier 'i'"),
        ("[i](i) -> (i : dense)", "redefinition of identifier 'i'"),
        ("() -> ()", "expected a non-empty array for lvlTypes"),
        ("{a, b} (i = a) -> (a = i : dense)", "Level-rank mismatch between forward-declarations and specifiers. Declared 2 level-variables; but got 1 level-specifiers."),
        ("{a, b} (i = a + b, j = b) -> (a = i : dense, b = j : dense)", "expected lvlToDim to be an inverse of dimToLvl"),
        ("(i, j) -> (i + j : dense, j : compressed)", "failed to infer lvlToDim from dimToLvl"),
        ("(i, j) -> (i floordiv 2 : dense, j : dense, i mod 3 : dense)", "failed to infer lvlToDim from dimToLvl"),
        ("(i : #sparse_tensor<slice(-1, 4, 1)>) -> (i : dense)", "expect positive value or ? for slice offset/size/stride"),
        ("(i : #sparse_tensor<slice(0, 0, 1)>) -> (i : dense)", "expect positive value or ? for slice size"),
        ("(i : #sparse_tensor<slice(0, 4, 0)>) -> (i : dense)", "expect positive value or ? for slice stride"),
        ("(i, j) -> (i * j : dense, i : dense, j : dense)", "non-affine expression"),
        ("(i, j) -> (i floordiv j : dense, i : dense, j : dense)", "non-affine expression"),
        ("(i) -> (i : dense, i mod 0 : dense)", "division by zero"),
        ("(i) -> (i : dense, 9223372036854775807 + 1 : dense)", "overflow"),
        ("(i) -> (i : dense, i + 99999999999999999999 : dense)", "integer literal too large"),
    ];
    for (map, msg) in cases {
        let text = format!("#sparse_tensor.encoding<{{ map = {map} }}>");
        let d = errors(&text);
        assert!(
            d.iter().any(|d| d.contains(msg)),
            "{text}: expected {msg:?}, got {d:?}"
        );
    }
    assert!(errors(
        "#sparse_tensor.encoding<{ map = (i) -> (i : dense), map = (i) -> (i : dense) }>"
    )[0]
    .contains("duplicate key: map"));
    assert!(errors("#sparse_tensor.encoding<{ posWidth = 8 }>")[0]
        .contains("expected a non-empty array for lvlTypes"));
}

#[test]
fn diagnostic_new_and_display() {
    let d = Diagnostic::new("ab\ncdé f", 7, 8, "boom");
    assert_eq!((d.line, d.column, d.start, d.end), (2, 4, 7, 8));
    assert_eq!(d.to_string(), "2:4: boom");
    // offsets are clamped and end >= start
    let d = Diagnostic::new("abc", 10, 2, "x");
    assert_eq!((d.start, d.end, d.line, d.column), (3, 3, 1, 4));
    // inside a multi-byte char: moved to its start
    let d = Diagnostic::new("é", 1, 1, "x");
    assert_eq!((d.start, d.column), (0, 1));
}

#[test]
fn ell_levels_name_the_counting_and_the_row_level() {
    let ell = |text: &str| {
        parse_encoding(text)
            .unwrap_or_else(|d| panic!("{text}: {d:?}"))
            .encoding
            .ell_levels()
    };
    assert_eq!(
        ell("#sparse_tensor.encoding<{ map = [c](i, j) -> (c * 3 * i : dense, i : dense, j : compressed) }>"),
        Some((0, 1))
    );
    // the slices below the rows, counting the columns
    assert_eq!(
        ell("#sparse_tensor.encoding<{ map = [c](i, j) -> (j : dense, c * 2 * j : dense, i : compressed) }>"),
        Some((1, 0))
    );
    assert_eq!(
        ell("#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>"),
        None
    );
}
