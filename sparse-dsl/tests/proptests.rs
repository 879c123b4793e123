//! Property tests: the parser never panics, and print/parse round-trips every accepted encoding
//! (which `sparse_ir::verify` accepts too).

use proptest::prelude::*;
use sparse_dsl::parse::parse_encoding;

fn check_no_panic(text: &str) {
    match parse_encoding(text) {
        Ok(p) => {
            // whatever is accepted must round-trip through the canonical printer
            let printed = p.encoding.to_string();
            let again =
                parse_encoding(&printed).unwrap_or_else(|d| panic!("{text:?} -> {printed}: {d:?}"));
            assert_eq!(again.encoding, p.encoding, "{text:?} -> {printed}");
            // and the IR verifier accepts it too: it checks no rule the parser does not
            assert_eq!(sparse_dsl::verify::verify(&p.encoding), Ok(()), "{text:?}");
        }
        Err(diags) => {
            assert!(!diags.is_empty());
            for d in diags {
                assert!(d.start <= d.end && d.end <= text.len(), "{text:?}: {d:?}");
                assert!(text.is_char_boundary(d.start) && text.is_char_boundary(d.end));
                assert!(d.line >= 1 && d.column >= 1);
            }
        }
    }
}

const TOKENS: &[&str] = &[
    "#sparse_tensor.encoding",
    "#sparse_tensor",
    "#A",
    "=",
    "<",
    ">",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    ":",
    "->",
    "-",
    "+",
    "*",
    "?",
    "map",
    "posWidth",
    "crdWidth",
    "explicitVal",
    "implicitVal",
    "slice",
    "i",
    "j",
    "k",
    "c",
    "floordiv",
    "ceildiv",
    "mod",
    "dense",
    "batch",
    "compressed",
    "loose_compressed",
    "singleton",
    "structured",
    "block2_4",
    "block0_0",
    "nonunique",
    "nonordered",
    "soa",
    "high",
    "0",
    "1",
    "2",
    "4",
    "8",
    "32",
    "-1",
    "9223372036854775807",
    "99999999999999999999",
    "0x",
    "0xff",
    "1.0",
    "f32",
    "// c\n",
    "\n",
    "é",
    "#complex.number",
];

fn soup() -> impl Strategy<Value = String> {
    (
        prop::bool::ANY,
        prop::collection::vec(prop::sample::select(TOKENS), 0..60),
        prop::collection::vec(prop::sample::select(&[" ", "", "  "][..]), 60),
    )
        .prop_map(|(prefix, toks, seps)| {
            let mut s = String::new();
            if prefix {
                s.push_str("#sparse_tensor.encoding<{ map = ");
            }
            for (t, sep) in toks.iter().zip(seps) {
                s.push_str(t);
                s.push_str(sep);
            }
            s
        })
}

/// A random affine expression over dims `x0..` and symbols `y0..` (fully parenthesized text).
fn expr_text(nd: usize, ns: usize) -> BoxedStrategy<String> {
    let cst = (-12i64..12).prop_map(|c| c.to_string());
    let nonzero = prop_oneof![
        (1i64..9).prop_map(|c| c.to_string()),
        (-9i64..0).prop_map(|c| c.to_string())
    ];
    let (sym, sym_nz) = if ns > 0 {
        (
            prop_oneof![cst.clone(), (0..ns).prop_map(|s| format!("y{s}"))].boxed(),
            prop_oneof![nonzero.clone(), (0..ns).prop_map(|s| format!("y{s}"))].boxed(),
        )
    } else {
        (cst.clone().boxed(), nonzero.clone().boxed())
    };
    let leaf = prop_oneof![3 => (0..nd).prop_map(|d| format!("x{d}")), 1 => sym.clone()];
    leaf.prop_recursive(3, 24, 2, move |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) + ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) - ({b})")),
            inner.clone().prop_map(|a| format!("-({a})")),
            inner.clone().prop_map(|a| format!("- {a}")),
            (inner.clone(), sym.clone()).prop_map(|(a, c)| format!("({a}) * ({c})")),
            (sym.clone(), inner.clone()).prop_map(|(c, a)| format!("{c} * ({a})")),
            (
                inner.clone(),
                sym_nz.clone(),
                prop::sample::select(&["floordiv", "ceildiv", "mod"][..])
            )
                .prop_map(|(a, c, op)| format!("({a}) {op} ({c})")),
        ]
    })
    .boxed()
}

const FORMATS: &[&str] = &[
    "dense",
    "compressed",
    "loose_compressed",
    "compressed(nonordered)",
    "loose_compressed(nonordered)",
    "compressed(high)",
];
const WIDTHS: &[u32] = &[0, 8, 16, 32, 64];

/// The text of a random *valid* encoding.
fn valid_encoding() -> impl Strategy<Value = String> {
    (1usize..=4, 0usize..=2)
        .prop_flat_map(|(nd, ns)| {
            (
                Just((nd, ns)),
                Just((0..nd).collect::<Vec<_>>()).prop_shuffle(),
                // block size 1 is not a block: MLIR simplifies `x floordiv 1` to `x` and `x mod 1` to `0`
                prop::collection::vec(prop::option::weighted(0.3, 2i64..6), nd),
                prop::collection::vec(expr_text(nd, ns), 0..3),
                prop::collection::vec(prop::sample::select(FORMATS), 12),
                prop::option::weighted(0.3, (1usize..=3, prop::bool::ANY, prop::bool::ANY)),
                prop::collection::vec(
                    prop::option::weighted(0.3, (prop::option::of(0u64..5), prop::option::of(1u64..9), prop::option::of(1u64..4))),
                    nd,
                ),
                (prop::sample::select(WIDTHS), prop::sample::select(WIDTHS), prop::bool::ANY),
            )
        })
        .prop_map(|((nd, ns), perm, blocks, extra, formats, coo, slices, (pw, cw, alias))| {
            let mut lvls: Vec<String> = Vec::new();
            for &d in &perm {
                match blocks[d] {
                    Some(b) => lvls.push(format!("x{d} floordiv {b}")),
                    None => lvls.push(format!("x{d}")),
                }
            }
            for &d in &perm {
                if let Some(b) = blocks[d] {
                    lvls.push(format!("x{d} mod {b}"));
                }
            }
            // extra levels make the map non-invertible: MLIR accepts that only with symbols
            let ns = if extra.is_empty() { ns } else { ns.max(1) };
            lvls.extend(extra);
            let n = lvls.len();
            let mut fmts: Vec<String> = (0..n).map(|l| formats[l % formats.len()].to_string()).collect();
            if let Some((tail, nonordered, soa)) = coo {
                let tail = tail.min(n - 1);
                if tail > 0 {
                    let start = n - 1 - tail;
                    fmts[start] = if nonordered { "compressed(nonunique, nonordered)" } else { "loose_compressed(nonunique)" }.into();
                    for f in fmts.iter_mut().skip(start + 1) {
                        *f = if soa { "singleton(soa)".into() } else { "singleton".into() };
                    }
                }
            }
            let syms = if ns > 0 { format!("[{}]", (0..ns).map(|s| format!("y{s}")).collect::<Vec<_>>().join(", ")) } else { String::new() };
            // MLIR: slices need dimension-rank == level-rank
            let slices_ok = n == nd;
            let dims: Vec<String> = (0..nd)
                .map(|d| match (&slices[d], slices_ok) {
                    (Some((o, s, t)), true) => {
                        let v = |x: &Option<u64>| x.map_or("?".to_string(), |x| x.to_string());
                        format!("x{d} : #sparse_tensor<slice({}, {}, {})>", v(o), v(s), v(t))
                    }
                    _ => format!("x{d}"),
                })
                .collect();
            let specs: Vec<String> = lvls.iter().zip(&fmts).map(|(e, f)| format!("{e} : {f}")).collect();
            format!(
                "{}#sparse_tensor.encoding<{{ map = {syms}({}) -> ({}), posWidth = {pw}, crdWidth = {cw} }}>",
                if alias { "#Gen = " } else { "" },
                dims.join(", "),
                specs.join(", ")
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        check_no_panic(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn random_strings_never_panic(s in "\\PC{0,120}") {
        check_no_panic(&s);
    }

    #[test]
    fn token_soup_never_panics(s in soup()) {
        check_no_panic(&s);
    }

    #[test]
    fn valid_encodings_round_trip(text in valid_encoding()) {
        let p = parse_encoding(&text).unwrap_or_else(|d| panic!("{text}: {:?}", d.iter().map(|d| d.to_string()).collect::<Vec<_>>()));
        let printed = p.encoding.to_string();
        let again = parse_encoding(&printed).unwrap_or_else(|d| panic!("{text} -> {printed}: {d:?}"));
        prop_assert_eq!(&again.encoding, &p.encoding, "{} -> {}", text, printed);
        prop_assert_eq!(sparse_dsl::verify::verify(&p.encoding), Ok(()), "{}", text);
        prop_assert_eq!(again.encoding.to_string(), printed.clone());
        let pretty = p.encoding.to_pretty_string();
        let from_pretty = parse_encoding(&pretty).unwrap_or_else(|d| panic!("{pretty}: {d:?}"));
        prop_assert_eq!(&from_pretty.encoding, &p.encoding, "{}", pretty);
        if std::env::var("SHOW").is_ok() { eprintln!("{text}\n  {printed}"); }
    }
}

#[test]
fn deep_nesting_and_long_inputs_do_not_crash() {
    let deep = format!(
        "#sparse_tensor.encoding<{{ map = (i) -> ({}i{} : dense) }}>",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    assert!(parse_encoding(&deep).is_err());
    let ok_depth = format!(
        "#sparse_tensor.encoding<{{ map = [s](i) -> (i : dense, {}i{} : dense) }}>",
        "(".repeat(40),
        ")".repeat(40)
    );
    assert!(parse_encoding(&ok_depth).is_ok());
    let long = format!(
        "#sparse_tensor.encoding<{{ map = (i) -> (i : dense, i{} : dense) }}>",
        " + i".repeat(100_000)
    );
    assert!(parse_encoding(&long).is_err());
    let negs = format!(
        "#sparse_tensor.encoding<{{ map = (i) -> (i : dense, {}i : dense) }}>",
        "- ".repeat(100_000)
    );
    assert!(parse_encoding(&negs).is_err());
    let neg_const = format!(
        "#sparse_tensor.encoding<{{ map = [s](i) -> (i : dense, {}3 : dense) }}>",
        "- ".repeat(100_000)
    );
    assert!(parse_encoding(&neg_const).is_ok());
    let many_errors = format!(
        "#sparse_tensor.encoding<{{ map = (i) -> (i : dense, {} : dense) }}>",
        vec!["q"; 10_000].join(" + ")
    );
    let d = parse_encoding(&many_errors).unwrap_err();
    assert!(d.len() <= 100);
    // an unknown key's skipped value with many unbalanced brackets: no exponential backtracking
    let unbalanced = format!(
        "#sparse_tensor.encoding<{{ m0ap = {} map = (i) -> (i : dense) }}>",
        "((( (j(((((((( ".repeat(200)
    );
    let t = std::time::Instant::now();
    assert!(parse_encoding(&unbalanced).is_err());
    assert!(t.elapsed() < std::time::Duration::from_secs(2));
    let ws = format!(
        "{}#sparse_tensor.encoding<{{ map = (i) -> (i : dense) }}>",
        "// c\n".repeat(100_000)
    );
    assert!(parse_encoding(&ws).is_ok());
}
