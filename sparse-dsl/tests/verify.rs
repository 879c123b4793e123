//! `sparse_ir::verify` on encodings built in code gives the parser's messages, in the parser's
//! order (issue 8, item 1): an `Encoding` that skips the text gets the same rules.

use std::fs;
use std::path::PathBuf;

use sparse_dsl::ir::{AffineExpr, AffineMap, DimSlice, Encoding, LevelFormat, LevelType};
use sparse_dsl::parse::parse_encoding;
use sparse_dsl::verify::{verify, Location, VerifyError};

fn wrap(body: &str) -> String {
    format!("#sparse_tensor.encoding<{{ {body} }}>")
}

/// Every message the parser reports for `text`, in order.
fn parse_errors(text: &str) -> Vec<String> {
    match parse_encoding(text) {
        Ok(p) => panic!("{text}: accepted as {}", p.encoding),
        Err(d) => d.into_iter().map(|d| d.message).collect(),
    }
}

fn parse_ok(text: &str) -> Encoding {
    match parse_encoding(text) {
        Ok(p) => p.encoding.into_inner(),
        Err(d) => panic!("{text}: {:?}", d),
    }
}

fn messages(errors: &[VerifyError]) -> Vec<String> {
    errors.iter().map(|e| e.message.clone()).collect()
}

fn verify_errors(enc: &Encoding) -> Vec<VerifyError> {
    match verify(enc) {
        Ok(()) => panic!("{enc:?}: verified"),
        Err(e) => e,
    }
}

/// `(i, j) -> (i : lt0, j : lt1)` built in code, widths native.
fn two_levels(lt0: LevelFormat, lt1: LevelFormat) -> Encoding {
    Encoding {
        lvl_types: vec![LevelType::new(lt0), LevelType::new(lt1)],
        dim_to_lvl: AffineMap::identity(2),
        lvl_to_dim: AffineMap::identity(2),
        pos_width: 0,
        crd_width: 0,
        dim_slices: None,
        explicit_val: None,
        implicit_val: None,
    }
}

#[test]
fn code_built_encoding_gets_the_parsers_message() {
    use LevelFormat::{Batch, Compressed, Dense, Singleton};
    // singleton as the first level
    let enc = two_levels(Singleton, Compressed);
    let errs = verify_errors(&enc);
    assert_eq!(
        messages(&errs),
        parse_errors(&wrap("map = (i, j) -> (i : singleton, j : compressed)"))
    );
    assert_eq!(
        errs[0].message,
        "expected compressed or loose_compressed level before singleton level"
    );
    assert_eq!(errs[0].at, Location::Level(0));

    // a batch level after a dense one
    let enc = two_levels(Dense, Batch);
    let errs = verify_errors(&enc);
    assert_eq!(
        messages(&errs),
        parse_errors(&wrap("map = (i, j) -> (i : dense, j : batch)"))
    );
    assert_eq!(errs[0].message, "Batch lvlType can only be leading levels.");
    assert_eq!(errs[0].at, Location::Level(1));

    // posWidth = 7
    let mut enc = two_levels(Dense, Compressed);
    enc.pos_width = 7;
    let errs = verify_errors(&enc);
    assert_eq!(
        messages(&errs),
        parse_errors(&wrap(
            "map = (i, j) -> (i : dense, j : compressed), posWidth = 7"
        ))
    );
    assert_eq!(errs[0].message, "unexpected position bitwidth: 7");
    assert_eq!(errs[0].at, Location::PosWidth);
    assert!(errs[0].help.is_some());
    assert_eq!(enc.verify(), Err(errs));
}

#[test]
fn all_errors_together_in_the_parsers_order() {
    use LevelFormat::{Compressed, Dense, Singleton};
    // rules of different ranks, written in the opposite order: widths first, then singleton
    let mut enc = two_levels(Singleton, Compressed);
    enc.pos_width = 7;
    enc.crd_width = 12;
    let errs = verify_errors(&enc);
    assert_eq!(
        messages(&errs),
        parse_errors(&wrap(
            "map = (i, j) -> (i : singleton, j : compressed), posWidth = 7, crdWidth = 12"
        ))
    );
    assert_eq!(errs.len(), 3);
    assert_eq!(
        errs.iter().map(|e| e.at).collect::<Vec<_>>(),
        [Location::PosWidth, Location::CrdWidth, Location::Level(0)]
    );

    // soa off a singleton level, then a dense level after a nonunique one
    let mut enc = two_levels(Compressed, Dense);
    enc.lvl_types[0].properties.nonunique = true;
    enc.lvl_types[0].properties.soa = true;
    let errs = verify_errors(&enc);
    assert_eq!(
        messages(&errs),
        parse_errors(&wrap(
            "map = (i, j) -> (i : compressed(nonunique, soa), j : dense)"
        ))
    );
    assert_eq!(errs.len(), 2);
}

/// `(text that parses, the same text with a rule broken, the break applied to the parsed IR)`.
type Case = (&'static str, &'static str, fn(&mut Encoding));

#[test]
fn breaking_a_rule_in_the_ir_matches_breaking_it_in_the_text() {
    let cases: Vec<Case> = vec![
        (
            "map = (i, j) -> (i : dense, j : compressed)",
            "map = (i, j) -> (i : dense, j : compressed), crdWidth = 7",
            |e| e.crd_width = 7,
        ),
        (
            "map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4])",
            "map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4]), crdWidth = 4",
            |e| e.crd_width = 4,
        ),
        (
            "map = (i, j) -> (i : compressed(nonunique), j : singleton)",
            "map = (i, j) -> (i : dense, j : singleton)",
            |e| e.lvl_types[0] = LevelType::new(LevelFormat::Dense),
        ),
        (
            "map = (i, j) -> (i : compressed(nonunique), j : singleton(soa))",
            "map = (i, j) -> (i : compressed(nonunique), j : dense(soa))",
            |e| e.lvl_types[1].format = LevelFormat::Dense,
        ),
        (
            "map = (i, j, k) -> (i : compressed(nonunique), j : singleton(nonunique), k : singleton)",
            "map = (i, j, k) -> (i : compressed(nonunique), j : singleton(nonunique), k : singleton(soa))",
            |e| e.lvl_types[2].properties.soa = true,
        ),
        (
            "map = (i, j) -> (i : dense, j : compressed)",
            "map = (i : #sparse_tensor<slice(1, 0, 1)>, j) -> (i : singleton, j : compressed(soa))",
            |e| {
                e.lvl_types[0].format = LevelFormat::Singleton;
                e.lvl_types[1].properties.soa = true;
                let s = DimSlice { offset: Some(1), size: Some(0), stride: Some(1) };
                let full = DimSlice { offset: Some(0), size: None, stride: Some(1) };
                e.dim_slices = Some(vec![s, full]);
            },
        ),
        (
            "map = (i, j) -> (i : compressed(nonunique), j : compressed)",
            "map = (i, j) -> (i : compressed(nonunique), j : dense)",
            |e| e.lvl_types[1].format = LevelFormat::Dense,
        ),
        (
            "map = (i, j) -> (i : batch, j : dense)",
            "map = (i, j) -> (i : dense, j : batch)",
            |e| e.lvl_types.reverse(),
        ),
        (
            "map = (i, j) -> (i : dense, j : dense)",
            "map = (i, j) -> (i : structured[2, 4], j : dense)",
            |e| e.lvl_types[0].format = LevelFormat::NOutOfM { n: 2, m: 4 },
        ),
        (
            "map = (i, j) -> (i : compressed, j : dense)",
            "map = (i, j) -> (i : compressed, j : structured[2, 4])",
            |e| e.lvl_types[1].format = LevelFormat::NOutOfM { n: 2, m: 4 },
        ),
        (
            "map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4])",
            "map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 8])",
            |e| e.lvl_types[2].format = LevelFormat::NOutOfM { n: 2, m: 8 },
        ),
        (
            "map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4])",
            "map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[5, 4])",
            |e| e.lvl_types[2].format = LevelFormat::NOutOfM { n: 5, m: 4 },
        ),
        (
            "map = (i, j) -> (i : dense, j : compressed)",
            "map = (i, j) -> (i : dense(nonordered), j : compressed)",
            |e| e.lvl_types[0].properties.nonordered = true,
        ),
        (
            "map = (i, j) -> (i : dense, j : compressed)",
            "map = (i, j) -> (i + j : dense, j : compressed)",
            |e| {
                e.dim_to_lvl.results[0] = AffineExpr::Add(
                    Box::new(AffineExpr::Var(0)),
                    Box::new(AffineExpr::Var(1)),
                );
                e.lvl_to_dim.results.clear();
            },
        ),
        (
            "map = (i, j) -> (i : dense, j : compressed)",
            "map = (i, j) -> (i + j : dense, j : compressed), posWidth = 7, crdWidth = 1",
            |e| {
                e.dim_to_lvl.results[0] = AffineExpr::Add(
                    Box::new(AffineExpr::Var(0)),
                    Box::new(AffineExpr::Var(1)),
                );
                e.lvl_to_dim.results.clear();
                e.pos_width = 7;
                e.crd_width = 1;
            },
        ),
        (
            "map = (i, j) -> (i : dense, j : compressed)",
            "map = (i, j) -> (i : dense)",
            |e| {
                e.lvl_types.pop();
                e.dim_to_lvl.results.pop();
                e.lvl_to_dim.results.clear();
                e.lvl_to_dim.num_vars = 1;
            },
        ),
        (
            "map = (i : #sparse_tensor<slice(1, 4, 1)>, j) -> (i : dense, j : compressed)",
            "map = (i : #sparse_tensor<slice(1, 0, 1)>, j) -> (i : dense, j : compressed)",
            |e| e.dim_slices.as_mut().unwrap()[0].size = Some(0),
        ),
        (
            "map = (i : #sparse_tensor<slice(1, 4, 1)>, j) -> (i : dense, j : compressed)",
            "map = (i : #sparse_tensor<slice(1, 4, 0)>, j) -> (i : dense, j : compressed)",
            |e| e.dim_slices.as_mut().unwrap()[0].stride = Some(0),
        ),
    ];
    for (ok, bad, brk) in cases {
        let mut enc = parse_ok(&wrap(ok));
        assert_eq!(verify(&enc), Ok(()), "{ok}");
        brk(&mut enc);
        let want = parse_errors(&wrap(bad));
        let got = messages(&verify_errors(&enc));
        assert_eq!(got, want, "{bad}");
    }
}

#[test]
fn slices_need_equal_ranks() {
    // not reachable from text by a single edit that keeps the rest valid: built in code
    let mut enc = parse_ok(&wrap(
        "map = (i, j) -> (i floordiv 2 : dense, j : compressed, i mod 2 : dense)",
    ));
    assert_eq!(verify(&enc), Ok(()));
    enc.dim_slices = Some(vec![
        DimSlice {
            offset: Some(0),
            size: None,
            stride: Some(1),
        };
        2
    ]);
    let errs = verify_errors(&enc);
    assert_eq!(
        messages(&errs),
        ["dimSlices expected dimension-rank to match level-rank: 2 != 3"]
    );
    let text = "map = (i : #sparse_tensor<slice(0, ?, 1)>, j) -> (i floordiv 2 : dense, j : compressed, i mod 2 : dense)";
    assert_eq!(messages(&errs), parse_errors(&wrap(text)));
}

#[test]
fn explicit_inverse_is_checked_by_evaluation() {
    let mut enc = parse_ok(&wrap("map = (i, j) -> (j : dense, i : compressed)"));
    assert_eq!(verify(&enc), Ok(()));
    enc.lvl_to_dim = AffineMap::identity(2);
    let errs = verify_errors(&enc);
    assert_eq!(
        messages(&errs),
        [
            "expected lvlToDim to be an inverse of dimToLvl",
            "expected lvlToDim to be an inverse of dimToLvl"
        ]
    );
    assert_eq!(errs[0].at, Location::Dimension(0));
    let text = "map = {l0, l1} (i = l0, j = l1) -> (l0 = j : dense, l1 = i : compressed)";
    assert_eq!(messages(&errs)[..1], parse_errors(&wrap(text))[..1]);
}

fn conformance(kind: &str) -> Vec<PathBuf> {
    let d = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/conformance/encodings/"
    );
    let mut files: Vec<PathBuf> = fs::read_dir(format!("{d}{kind}"))
        .expect("conformance directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mlir"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no {kind} conformance files");
    files
}

#[test]
fn valid_conformance_encodings_verify() {
    for f in conformance("valid") {
        let enc = parse_ok(&fs::read_to_string(&f).unwrap());
        assert_eq!(verify(&enc), Ok(()), "{}", f.display());
    }
}

/// Every invalid conformance encoding whose rule is IR-checkable, rebuilt in code: the parsed
/// valid text (`from` replaced by `to`) with the rule broken in the IR gives the expected error,
/// the parser's first message.
#[test]
fn invalid_conformance_encodings_verify_with_the_same_message() {
    type Fix = (&'static str, &'static str, &'static str, fn(&mut Encoding));
    let ir_checkable: &[Fix] = &[
        ("bad_crd_width", "crdWidth = 7", "crdWidth = 8", |e| {
            e.crd_width = 7
        }),
        ("bad_pos_width", "posWidth = 12", "posWidth = 8", |e| {
            e.pos_width = 12
        }),
        ("dense_with_property", "dense(nonunique)", "dense", |e| {
            e.lvl_types[0].properties.nonunique = true
        }),
        ("n_greater_m", "structured[5, 4]", "structured[4, 4]", |e| {
            e.lvl_types[2].format = LevelFormat::NOutOfM { n: 5, m: 4 }
        }),
        ("nm_not_last", "i : structured[2, 4]", "i : dense", |e| {
            e.lvl_types[0].format = LevelFormat::NOutOfM { n: 2, m: 4 }
        }),
        ("not_invertible", "i + j : dense", "i : dense", |e| {
            e.dim_to_lvl.results[0] =
                AffineExpr::Add(Box::new(AffineExpr::Var(0)), Box::new(AffineExpr::Var(1)));
            e.lvl_to_dim.results.clear();
        }),
        ("singleton_first", "i : singleton", "i : dense", |e| {
            e.lvl_types[0].format = LevelFormat::Singleton
        }),
        ("soa_not_singleton", "compressed(soa)", "compressed", |e| {
            e.lvl_types[1].properties.soa = true
        }),
    ];
    // syntax, names and negative literals: only the text can be wrong this way
    let text_only = [
        "missing_arrow",
        "negative_slice",
        "undeclared_var",
        "unknown_format",
        "unknown_key",
        "unknown_property",
    ];
    let files = conformance("invalid");
    for f in &files {
        let name = f.file_stem().unwrap().to_str().unwrap();
        let text = fs::read_to_string(f).unwrap();
        let expected = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("// expected-error: "))
            .expect("first line names the expected error");
        let Some((_, from, to, brk)) = ir_checkable.iter().find(|c| c.0 == name) else {
            assert!(text_only.contains(&name), "{name}: not classified");
            continue;
        };
        assert!(text.contains(from), "{name}: no `{from}`");
        let mut enc = parse_ok(&text.replace(from, to));
        assert_eq!(verify(&enc), Ok(()), "{name}: the fixed text");
        brk(&mut enc);
        let errs = verify_errors(&enc);
        assert!(errs[0].message.contains(expected), "{name}: {errs:?}");
        assert_eq!(errs[0].message, parse_errors(&text)[0], "{name}");
    }
    assert_eq!(files.len(), ir_checkable.len() + text_only.len());
}
