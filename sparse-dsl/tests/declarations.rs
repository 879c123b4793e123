//! Tensor types, element types, explicit/implicit values and declaration files.

use sparse_dsl::parse::{
    parse_declaration, parse_declarations, parse_encoding, Declared, ElementType, FloatKind,
    ScalarValue, Signedness,
};

fn canon_decl(text: &str) -> String {
    let p = parse_declaration(text).unwrap_or_else(|d| panic!("{text}: {:?}", msgs(&d)));
    let printed = p.declared.to_string();
    let again =
        parse_declaration(&printed).unwrap_or_else(|d| panic!("reparse {printed}: {:?}", msgs(&d)));
    assert_eq!(again.declared, p.declared, "round trip of {printed}");
    printed
}

fn msgs(d: &[sparse_dsl::diag::Diagnostic]) -> Vec<String> {
    d.iter().map(|d| d.to_string()).collect()
}

fn decl_errors(text: &str) -> Vec<String> {
    match parse_declaration(text) {
        Ok(p) => panic!("{text}: unexpectedly accepted as {}", p.declared),
        Err(d) => msgs(&d),
    }
}

const CSR: &str = "#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>";

#[test]
fn values_print_in_mlir_canonical_form() {
    let cases = [
        ("explicitVal = 1.0 : f32, implicitVal = 0.0 : f32", "explicitVal = 1.000000e+00 : f32, implicitVal = 0.000000e+00 : f32"),
        ("explicitVal = 1.0 : f64, implicitVal = 0.0 : f64", "explicitVal = 1.000000e+00 : f64, implicitVal = 0.000000e+00 : f64"),
        ("explicitVal = 1 : i32, implicitVal = 0 : i32", "explicitVal = 1 : i32, implicitVal = 0 : i32"),
        ("implicitVal = 0 : i64, explicitVal = 1 : i64", "explicitVal = 1 : i64, implicitVal = 0 : i64"),
        (
            "explicitVal = #complex.number<:f32 1.0, 0.0>, implicitVal = #complex.number<:f32 0.0, 0.0>",
            "explicitVal = #complex.number<:f32 1.000000e+00, 0.000000e+00> : complex<f32>, implicitVal = #complex.number<:f32 0.000000e+00, 0.000000e+00> : complex<f32>",
        ),
        (
            "explicitVal = #complex.number<:f64 1.5, -2.0> : complex<f64>",
            "explicitVal = #complex.number<:f64 1.500000e+00, -2.000000e+00> : complex<f64>",
        ),
        // untyped literals default to i64 / f64, as in MLIR
        ("explicitVal = 2", "explicitVal = 2 : i64"),
        ("explicitVal = 2.5", "explicitVal = 2.500000e+00 : f64"),
        ("explicitVal = true", "explicitVal = true"),
        ("explicitVal = 0.1 : f64", "explicitVal = 1.000000e-01 : f64"),
        ("explicitVal = 0.123456789 : f64", "explicitVal = 0.123456789 : f64"),
        ("explicitVal = 0x7F800000 : f32", "explicitVal = 0x7F800000 : f32"),
        ("explicitVal = -3 : si8", "explicitVal = -3 : si8"),
        ("explicitVal = 200 : ui8", "explicitVal = 200 : ui8"),
        ("explicitVal = 255 : i8", "explicitVal = -1 : i8"),
        ("explicitVal = 1.0 : bf16", "explicitVal = 1.000000e+00 : bf16"),
        ("explicitVal = 7 : index", "explicitVal = 7 : index"),
    ];
    for (vals, printed) in cases {
        let text = format!("#sparse_tensor.encoding<{{ map = (d0, d1) -> (d0 : dense, d1 : compressed), posWidth = 64, {vals} }}>");
        let p = parse_encoding(&text).unwrap_or_else(|d| panic!("{text}: {:?}", msgs(&d)));
        let s = p.encoding.to_string();
        assert_eq!(
            s,
            format!("#sparse_tensor.encoding<{{ map = (d0, d1) -> (d0 : dense, d1 : compressed), posWidth = 64, {printed} }}>")
        );
        let again = parse_encoding(&s).unwrap();
        assert_eq!(again.encoding, p.encoding, "{s}");
    }
    let e = parse_encoding(&CSR.replace(" }>", ", explicitVal = 1.0 : f32 }>"))
        .unwrap()
        .encoding;
    let v = e.explicit_val.clone().unwrap();
    assert_eq!(v.ty, ElementType::Float(FloatKind::F32));
    assert_eq!(v.value, ScalarValue::Float(1.0f64.to_bits()));
}

#[test]
fn value_errors() {
    let bad = [
        (
            "explicitVal = \"str\"",
            "expected a numeric value for explicitVal",
        ),
        (
            "implicitVal = \"str\"",
            "expected a numeric value for implicitVal",
        ),
        (
            "explicitVal = 1 : f32",
            "unexpected decimal integer literal for a floating point value",
        ),
        (
            "explicitVal = 1.5 : i32",
            "floating point value not valid for specified type",
        ),
        (
            "explicitVal = 300 : i8",
            "integer constant out of range for attribute",
        ),
        (
            "explicitVal = -1 : ui8",
            "integer constant out of range for attribute",
        ),
        ("explicitVal = 1.0 : foo", "expected non-function type"),
        (
            "explicitVal = #complex.number<:f32 1.0, 0.0> : complex<f64>",
            "complex attribute type mismatch",
        ),
        ("posWidth = \"x\"", "expected an integral position bitwidth"),
        (
            "crdWidth = \"not really\"",
            "expected an integral index bitwidth",
        ),
    ];
    for (vals, msg) in bad {
        let text =
            format!("#sparse_tensor.encoding<{{ map = (d0) -> (d0 : compressed), {vals} }}>");
        let d = parse_encoding(&text).expect_err(&text);
        assert!(d[0].message.contains(msg), "{text}: {:?}", msgs(&d));
    }
}

#[test]
fn tensor_types() {
    assert_eq!(
        canon_decl(&format!("tensor<20x30xf32, {CSR}>")),
        format!("tensor<20x30xf32, {CSR}>")
    );
    assert_eq!(
        canon_decl("tensor < ? x ? x f64 >".replace(' ', "").as_str()),
        "tensor<?x?xf64>"
    );
    assert_eq!(
        canon_decl(&format!("!T = tensor<?x?xcomplex<f32>, {}>", CSR.replace(" }>", ", explicitVal = #complex.number<:f32 1.0, 0.0> }>"))),
        format!("tensor<?x?xcomplex<f32>, {}>", CSR.replace(" }>", ", explicitVal = #complex.number<:f32 1.000000e+00, 0.000000e+00> : complex<f32> }>"))
    );
    let q = "#sparse_tensor.encoding<{ map = (d0, d1, d2) -> (d0 : dense, d1 : compressed, d2 : compressed) }>";
    let p = parse_declaration(&format!(
        "#Q = tensor<4x3x2x!quant.uniform<i8:f32:1, {{0.2:20, 0.1:10, 0.3:30}}>, {q}>"
    ))
    .unwrap();
    assert_eq!(p.alias.as_deref(), Some("Q"));
    let Declared::Tensor(t) = &p.declared else {
        panic!()
    };
    assert_eq!(t.shape, vec![Some(4), Some(3), Some(2)]);
    assert_eq!(
        t.element.to_string(),
        "!quant.uniform<i8:f32:1, {2.000000e-01:20,1.000000e-01:10,3.000000e-01:30}>"
    );
    assert_eq!(t.element.rust_type(), None);
    assert_eq!(canon_decl(&p.declared.to_string()), p.declared.to_string());
    for (ty, printed) in [
        (
            "!quant.uniform<i8:f32, 0.01:50>",
            "!quant.uniform<i8:f32, 1.000000e-02:50>",
        ),
        (
            "!quant.uniform<i8:f32, 0.3>",
            "!quant.uniform<i8:f32, 3.000000e-01>",
        ),
        (
            "!quant.uniform<u8<1:200>:f16, 0.5:-3>",
            "!quant.uniform<u8<1:200>:f16, 5.000000e-01:-3>",
        ),
        ("i1", "i1"),
        ("si16", "si16"),
        ("ui32", "ui32"),
        ("index", "index"),
        ("bf16", "bf16"),
        ("complex<f64>", "complex<f64>"),
    ] {
        assert_eq!(
            canon_decl(&format!("tensor<4x{ty}>")),
            format!("tensor<4x{printed}>")
        );
    }
    let rust = |t: &str| match parse_declaration(&format!("tensor<4x{t}>"))
        .unwrap()
        .declared
    {
        Declared::Tensor(t) => t.element.rust_type(),
        _ => unreachable!(),
    };
    assert_eq!(rust("f32"), Some("f32"));
    assert_eq!(rust("ui8"), Some("u8"));
    assert_eq!(rust("i1"), Some("bool"));
    assert_eq!(rust("f16"), Some("half::f16"));
    assert_eq!(rust("i7"), None);
    assert_eq!(rust("complex<f32>"), None);
    let Declared::Tensor(t) = parse_declaration("tensor<4xsi8>").unwrap().declared else {
        panic!()
    };
    assert_eq!(
        t.element,
        ElementType::Int {
            width: 8,
            signedness: Signedness::Signed
        }
    );
    // a plain encoding is a declaration too
    assert!(matches!(
        parse_declaration(CSR).unwrap().declared,
        Declared::Encoding(_)
    ));
}

#[test]
fn tensor_checks() {
    let cases = [
        (format!("tensor<8xi32, {CSR}>"), "dimension-rank mismatch between encoding and tensor shape: 2 != 1"),
        (format!("tensor<f64, {CSR}>"), "expected non-scalar sparse tensor"),
        (
            format!("tensor<?x?xf32, {}>", CSR.replace(" }>", ", explicitVal = 1 : i32, implicitVal = 0.0 : f32 }>")),
            "explicit value type mismatch between encoding and tensor element type: 'i32' != 'f32'",
        ),
        (
            format!("tensor<?x?xi32, {}>", CSR.replace(" }>", ", explicitVal = 1 : i32, implicitVal = 0.0 : f32 }>")),
            "implicit value type mismatch between encoding and tensor element type: 'f32' != 'i32'",
        ),
        (format!("tensor<?x?xi32, {}>", CSR.replace(" }>", ", implicitVal = 1 : i32 }>")), "implicit value must be zero"),
        (format!("tensor<?x?xf32, {}>", CSR.replace(" }>", ", implicitVal = 1.0 : f32 }>")), "implicit value must be zero"),
        (
            format!("tensor<?x?xcomplex<f32>, {}>", CSR.replace(" }>", ", implicitVal = #complex.number<:f32 1.0, 0.0> }>")),
            "implicit value must be zero",
        ),
        (
            "tensor<21x30xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense) }>>".into(),
            "block size 2 does not divide dimension 0 of size 21",
        ),
        (
            format!("tensor<300x300xf32, {}>", CSR.replace(" }>", ", crdWidth = 8 }>")),
            "crdWidth = 8 is too narrow for level 1: its largest coordinate is 299 (level size 300), more than 255",
        ),
        (
            format!("tensor<300x300xf32, {}>", CSR.replace(" }>", ", posWidth = 16 }>")),
            "posWidth = 16 is too narrow for level 1: positions reach 90000 (the product of the level sizes up to level 1), more than 65535",
        ),
        (format!("tensor<4xfoo, {CSR}>"), "expected non-function type"),
        ("tensor<4xf32, #CSR>".into(), "undefined symbol alias id 'CSR'"),
        (format!("!E = {CSR}"), "expected '#' alias for an attribute"),
    ];
    for (text, msg) in cases {
        let d = decl_errors(&text);
        assert!(d[0].contains(msg), "{text}: expected {msg:?}, got {d:?}");
    }
    // static sizes that fit are fine; dynamic sizes are not checked
    canon_decl(&format!(
        "tensor<256x256xf32, {}>",
        CSR.replace(" }>", ", crdWidth = 8 }>")
    ));
    canon_decl(&format!(
        "tensor<?x100000xf32, {}>",
        CSR.replace(" }>", ", posWidth = 8, crdWidth = 8 }>")
            .replace("crdWidth = 8", "crdWidth = 32")
    ));
    canon_decl("tensor<16x16xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 2 }>>");
}

#[test]
fn declaration_files() {
    let text = format!(
        "// formats\n#CSR = {CSR}\n\n#BSR = #sparse_tensor.encoding<{{\n  map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense)\n}}>\n!A = tensor<?x?xf64, #CSR>\n#B = tensor<4x6xf32, #BSR>\n"
    );
    let ds = parse_declarations(&text).unwrap();
    assert_eq!(
        ds.iter()
            .map(|d| d.alias.clone().unwrap())
            .collect::<Vec<_>>(),
        ["CSR", "BSR", "A", "B"]
    );
    assert_eq!(&text[ds[0].start..ds[0].end], format!("#CSR = {CSR}"));
    let Declared::Tensor(t) = &ds[2].declared else {
        panic!()
    };
    assert_eq!(t.to_string(), format!("tensor<?x?xf64, {CSR}>"));
    assert!(parse_declarations("").unwrap().is_empty());
    // errors of every declaration, in file order
    let bad = format!("#A = {CSR}\n#A = {CSR}\n#C = tensor<4x4xf32, #Nope>\n");
    let d = msgs(&parse_declarations(&bad).unwrap_err());
    assert_eq!(
        d,
        vec![
            "2:1: redefinition of alias 'A'",
            "3:22: undefined symbol alias id 'Nope'"
        ]
    );
}

#[test]
fn pretty_printing() {
    let e = parse_encoding(
        "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense), posWidth = 32, explicitVal = 1.0 : f32 }>",
    )
    .unwrap()
    .encoding;
    let pretty = e.to_pretty_string();
    assert_eq!(
        pretty,
        "#sparse_tensor.encoding<{\n  map = (d0, d1) -> (\n    d0 floordiv 2 : dense,\n    d1 floordiv 3 : compressed,\n    d0 mod 2 : dense,\n    d1 mod 3 : dense\n  ),\n  posWidth = 32,\n  explicitVal = 1.000000e+00 : f32\n}>"
    );
    assert_eq!(parse_encoding(&pretty).unwrap().encoding, e);
}
