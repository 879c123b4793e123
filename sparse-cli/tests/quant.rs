//! `sparse quant` against the contract of issue 11: StableHLO's quantize, dequantize and
//! requantize, exact output lines, per-axis quantization along every axis, and every listed
//! error as `error: MESSAGE` with exit status 1.

mod run;
use run::sparse;

fn ok(args: &[&str]) -> String {
    let (code, out, err) = sparse(args);
    assert_eq!((code, err.as_str()), (0, ""), "{args:?}");
    out
}

fn fails(args: &[&str], want: &str) {
    let (code, out, err) = sparse(args);
    assert_eq!((code, out.as_str()), (1, ""), "{args:?}: {err}");
    assert!(
        err.starts_with("error: ") && err.contains(want),
        "{args:?}: {err:?} lacks {want:?}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn quantize_rounds_to_nearest_even_and_clamps() {
    // in f32: 1 / 0.1 = 10, -2.5 / 0.1 = -25, 1e-45 is tiny; +-inf clamp, NaN gives 0
    let t = "tensor<2x3x!quant.uniform<i8:f32, 0.1:-30>>";
    let args = [
        "quant", "quantize", t, "1", "-2.5", "1e-45", "inf", "-INF", "NaN",
    ];
    assert_eq!(ok(&args), "-20 -55 -30 127 -128 0\n");
    // ties to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> 0; a storage range clamps
    let t = "tensor<5x!quant.uniform<i8<-100:100>:f32, 1.0>>";
    let args = ["quant", "quantize", t, "0.5", "1.5", "2.5", "-0.5", "-1000"];
    assert_eq!(ok(&args), "0 2 2 0 -100\n");
    // f64 expressed: 0.15 / 0.1 = 1.4999999999999998
    let t = "tensor<2x!quant.uniform<i8:f64, 0.1>>";
    assert_eq!(ok(&["quant", "quantize", t, "0.15", "0.25"]), "1 2\n");
}

#[test]
fn dequantize_and_requantize() {
    let t = "tensor<3x!quant.uniform<u8:f32, 7.843137254901961E-3:128>>";
    assert_eq!(
        ok(&["quant", "dequantize", t, "255", "0", "129"]),
        "0.9960785 -1.0039216 0.007843138\n"
    );
    // the shortest text: an exponent where it is shorter
    let t = "tensor<1x!quant.uniform<i8:f32, 1.0e-40>>";
    assert_eq!(ok(&["quant", "dequantize", t, "3"]), "2.99998e-40\n");
    // 100 * 0.1 = 10 -> 10 / 0.3 + 5 = 38.33 -> 38; -128 * 0.1 / 0.3 + 5 = -37.67 -> -38
    let from = "tensor<2x!quant.uniform<i8:f32, 0.1>>";
    let to = "tensor<2x!quant.uniform<i8<-127:127>:f32, 0.3:5>>";
    assert_eq!(
        ok(&["quant", "requantize", from, to, "100", "-128"]),
        "38 -38\n"
    );
}

#[test]
fn per_axis_along_every_axis() {
    let values = ["1", "2", "3", "1", "2", "3"];
    let axis0 = "tensor<2x3x!quant.uniform<i8:f32:0, {1.0:0, 0.5:10}>>";
    let axis1 = "tensor<2x3x!quant.uniform<i8:f32:1, {1.0:0, 0.5:10, 0.25:-5}>>";
    let run = |op: &str, t: &str, xs: &[&str]| {
        let mut args = vec!["quant", op, t];
        args.extend_from_slice(xs);
        ok(&args)
    };
    assert_eq!(run("quantize", axis0, &values), "1 2 3 12 14 16\n");
    assert_eq!(run("quantize", axis1, &values), "1 14 7 1 14 7\n");
    assert_eq!(
        run("dequantize", axis1, &["1", "14", "7", "1", "14", "7"]),
        "1 2 3 1 2 3\n"
    );
    let axis2 = "tensor<1x2x2x!quant.uniform<i8:f32:2, {1.0:0, 2.0:1}>>";
    assert_eq!(run("quantize", axis2, &["2", "2", "4", "4"]), "2 2 4 3\n");
}

#[test]
fn every_listed_error() {
    let q = |t: &str, xs: &[&str], want: &str| {
        let mut args = vec!["quant", "quantize", t];
        args.extend_from_slice(xs);
        fails(&args, want);
    };
    q("garbage", &["1"], "cannot parse TYPE `garbage`");
    q(
        "tensor<?x!quant.uniform<i8:f32, 0.1>>",
        &["1"],
        "does not have a static shape",
    );
    q(
        "tensor<2xf32>",
        &["1", "2"],
        "does not have a quantized element type",
    );
    q(
        "tensor<1x!quant.uniform<i8:f32, 1.0e-50>>",
        &["1"],
        "scale 1e-50 is not positive and finite in f32",
    );
    q(
        "tensor<1x!quant.uniform<i8:f32, -0.1>>",
        &["1"],
        "illegal scale",
    );
    q(
        "tensor<1x!quant.uniform<i8<-200:100>:f32, 0.1>>",
        &["1"],
        "illegal storage min and storage max",
    );
    q(
        "tensor<1x!quant.uniform<i8<10:5>:f32, 0.1>>",
        &["1"],
        "illegal storage min and storage max",
    );
    q(
        "tensor<1x!quant.uniform<i8:f32, 0.1:300>>",
        &["1"],
        "zero point 300 is outside the storage range [-128, 127]",
    );
    q(
        "tensor<2x!quant.uniform<i8:f32:1, {0.1:0, 0.2:0}>>",
        &["1", "2"],
        "quantized axis 1 is not below the rank 1",
    );
    q(
        "tensor<3x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0}>>",
        &["1", "2", "3"],
        "2 scale:zero_point pairs, but dimension 0 of size 3 needs 3",
    );
    q(
        "tensor<2x!quant.uniform<i8:f32, 0.1>>",
        &["1"],
        "has 2 elements, but 1 VALUES were given",
    );
    q(
        "tensor<2x!quant.uniform<i8:f32, 0.1>>",
        &["1", "x"],
        "VALUE 2 `x` is not a number",
    );
    q(
        "tensor<1x!quant.uniform<i64:f32, 0.1>>",
        &["1"],
        "storage type i64 is not supported",
    );
    let t = "tensor<2x!quant.uniform<i8:f32, 0.1>>";
    fails(
        &["quant", "dequantize", t, "1", "200"],
        "element 1: 200 is outside the storage range [-128, 127]",
    );
    fails(
        &["quant", "dequantize", t, "1", "1.5"],
        "INT 2 `1.5` is not a decimal integer",
    );
    fails(
        &["quant", "dequantize", t, "1", "2", "3"],
        "has 2 elements, but 3 INTS were given",
    );
    let other = "tensor<3x!quant.uniform<i8:f32, 0.1>>";
    fails(
        &["quant", "requantize", t, other, "1", "2"],
        "the shapes of FROM_TYPE and TO_TYPE differ",
    );
}
