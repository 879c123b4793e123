//! `sparse eval` against issue 9's contract: exact stdout for sparse, dense and 0-d outputs,
//! and `error: MESSAGE` with exit status 1 for every error.

use tempfile::TempDir;

mod run;
use run::{sparse, write as file};

/// A fresh directory `sparse-eval-{test}-*` for one test's files, removed when dropped.
fn tempdir(test: &str) -> TempDir {
    run::temp_dir("eval", test)
}

const CSR: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>";
const CSC: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>";
const DCSR: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>";
const SV: &str = "#sparse_tensor.encoding<{ map = (i) -> (i : compressed) }>";

/// A = [[1, 0, 2], [0, 3, 4]]
const A_MTX: &str =
    "%%MatrixMarket matrix coordinate real general\n2 3 4\n1 1 1\n1 3 2\n2 2 3\n2 3 4\n";
/// x = [1, 2, 3] (FROSTT, 1-based)
const X_TNS: &str = "1 1\n2 2\n3 3\n";

fn ok(args: &[&str]) -> String {
    let (code, out, err) = sparse(args);
    assert_eq!((code, err.as_str()), (0, ""), "{args:?}");
    out
}

fn fails(args: &[&str]) -> String {
    let (code, out, err) = sparse(args);
    assert_eq!(code, 1, "{args:?}: {out}");
    assert_eq!(out, "");
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err.trim_end().to_string()
}

#[test]
fn spmv_dense_output() {
    let dir = tempdir("spmv");
    let a = file(&dir, "a.mtx", A_MTX);
    let x = file(&dir, "x.tns", X_TNS);
    let ta = format!("A=tensor<2x3xf64, {CSR}>");
    let ia = format!("A={a}");
    let ix = format!("x={x}");
    let base = [
        "eval",
        "y(i) = A(i,j) * x(j)",
        "--tensor",
        &ta,
        "--tensor",
        "x=tensor<3xf64>",
        "--tensor",
        "y=tensor<2xf64>",
        "--input",
        &ia,
        "--input",
        &ix,
    ];
    assert_eq!(ok(&base), "( 7, 18 )\n");
    // the type from a file
    let ty = file(&dir, "a.mlir", &format!("tensor<2x3xf64, {CSR}>\n"));
    let at = format!("A=@{ty}");
    let mut args = base.to_vec();
    args[3] = &at;
    assert_eq!(ok(&args), "( 7, 18 )\n");
    // the same through a CSC operand (scattered into y) and with += onto y's input
    let tc = format!("A=tensor<2x3xf64, {CSC}>");
    let mut args = base.to_vec();
    args[3] = &tc;
    assert_eq!(ok(&args), "( 7, 18 )\n");
    let y = file(&dir, "y.tns", "1 10\n");
    let iy = format!("y={y}");
    let mut args = base.to_vec();
    args[1] = "y(i) += A(i,j) * x(j)";
    args.extend(["--input", &iy]);
    assert_eq!(ok(&args), "( 17, 18 )\n");
}

#[test]
fn sparse_outputs() {
    let dir = tempdir("sparse");
    let a = file(&dir, "a.mtx", A_MTX);
    let ta = format!("A=tensor<2x3xf64, {CSR}>");
    let tc = format!("C=tensor<2x3xf64, {DCSR}>");
    let ia = format!("A={a}");
    let args = [
        "eval",
        "C(i,j) = A(i,j) * 2 + A(i,j)",
        "--tensor",
        &ta,
        "--tensor",
        &tc,
        "--input",
        &ia,
    ];
    assert_eq!(
        ok(&args),
        "---- Sparse Tensor ----\nnse = 4\ndim = ( 2, 3 )\nlvl = ( 2, 3 )\npos[0] : ( 0, 2 )\ncrd[0] : ( 0, 1 )\npos[1] : ( 0, 2, 4 )\ncrd[1] : ( 0, 2, 1, 2 )\nvalues : ( 3, 6, 9, 12 )\n----\n"
    );
    let mut dense = args.to_vec();
    dense.extend(["--print", "dense"]);
    assert_eq!(ok(&dense), "( ( 3, 0, 6 ), ( 0, 9, 12 ) )\n");
    // transpose into DCSR (coordinate buffer), SpGEMM (workspace)
    let to = format!("O=tensor<3x2xf64, {DCSR}>");
    assert_eq!(
        ok(&[
            "eval",
            "O(j,i) = A(i,j)",
            "--tensor",
            &ta,
            "--tensor",
            &to,
            "--input",
            &ia,
            "--print",
            "dense"
        ]),
        "( ( 1, 0 ), ( 0, 3 ), ( 2, 4 ) )\n"
    );
    let tb = format!("B=tensor<3x2xf64, {CSR}>");
    let b = file(
        &dir,
        "b.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 2 3\n1 1 1\n2 2 2\n3 1 5\n",
    );
    let ib = format!("B={b}");
    let tc2 = format!("C=tensor<2x2xf64, {CSR}>");
    assert_eq!(
        ok(&["eval", "C(i,j) = A(i,k) * B(k,j)", "--tensor", &ta, "--tensor", &tb, "--tensor", &tc2, "--input", &ia, "--input", &ib]),
        "---- Sparse Tensor ----\nnse = 3\ndim = ( 2, 2 )\nlvl = ( 2, 2 )\npos[1] : ( 0, 1, 3 )\ncrd[1] : ( 0, 0, 1 )\nvalues : ( 11, 20, 6 )\n----\n"
    );
    // a row with no stored entry gives no output entry for a sparse output
    let tm = format!("m=tensor<3xf64, {SV}>");
    let m = file(
        &dir,
        "m.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 2 3\n1 1 2\n1 2 -3\n3 2 5\n",
    );
    let im = format!("M={m}");
    let tmm = format!("M=tensor<3x2xf64, {CSR}>");
    assert_eq!(
        ok(&["eval", "m(i) = prod(j, M(i,j))", "--tensor", &tmm, "--tensor", &tm, "--input", &im]),
        "---- Sparse Tensor ----\nnse = 2\ndim = ( 3 )\nlvl = ( 3 )\npos[0] : ( 0, 2 )\ncrd[0] : ( 0, 2 )\nvalues : ( -6, 5 )\n----\n"
    );
}

#[test]
fn scalars_integers_in_place() {
    let dir = tempdir("scalars");
    let a = file(&dir, "a.mtx", A_MTX);
    let ia = format!("A={a}");
    let ta = format!("A=tensor<2x3xi64, {CSR}>");
    // 0-d output and 0-d operand by bare name
    assert_eq!(
        ok(&[
            "eval",
            "s = alpha * sum(i j, A(i,j))",
            "--tensor",
            &ta,
            "--tensor",
            "s=tensor<i64>",
            "--tensor",
            "alpha=tensor<i64>",
            "--input",
            &ia,
            "--input",
            "alpha=-2"
        ]),
        "-20\n"
    );
    assert_eq!(
        ok(&[
            "eval",
            "m(i) = xor(j, A(i,j)) | 8",
            "--tensor",
            &ta,
            "--tensor",
            "m=tensor<2xi64>",
            "--input",
            &ia
        ]),
        "( 11, 15 )\n"
    );
    // the einsum sum covers the whole quotient: sum(j, 12 / A(i,j))
    assert_eq!(
        ok(&[
            "eval",
            "y(i) = 12 / A(i,j)",
            "--tensor",
            &ta,
            "--tensor",
            "y=tensor<2xi64>",
            "--input",
            &ia
        ]),
        "( 18, 7 )\n"
    );
    // in place: the output is also an input
    assert_eq!(
        ok(&[
            "eval",
            "A(i,j) = A(i,j) * 3",
            "--tensor",
            &ta,
            "--input",
            &ia,
            "--print",
            "dense"
        ]),
        "( ( 3, 0, 6 ), ( 0, 9, 12 ) )\n"
    );
    // floats print shortest round-trip text
    let tf = format!("A=tensor<2x3xf32, {CSR}>");
    assert_eq!(
        ok(&[
            "eval",
            "y(i) = A(i,j) / 10",
            "--tensor",
            &tf,
            "--tensor",
            "y=tensor<2xf32>",
            "--input",
            &ia
        ]),
        "( 0.3, 0.70000005 )\n"
    );
}

#[test]
fn slice_operand_reads_its_parent_file() {
    let dir = tempdir("slice");
    let a = file(&dir, "a.mtx", A_MTX);
    let x = file(&dir, "x.tns", "1 5\n2 7\n");
    let ia = format!("A={a}");
    let ix = format!("x={x}");
    // rows 1.., columns 0 and 2 of A: [[0, 4]]
    let ta = "A=tensor<1x2xf64, #sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(1, 1, 1)>, j : #sparse_tensor<slice(0, 2, 2)>) -> (i : dense, j : compressed) }>>";
    let args = [
        "eval",
        "y(i) = A(i,j) * x(j)",
        "--tensor",
        ta,
        "--tensor",
        "x=tensor<2xf64>",
        "--tensor",
        "y=tensor<1xf64>",
        "--input",
        &ia,
        "--input",
        &ix,
    ];
    assert_eq!(ok(&args), "( 28 )\n");
    assert_eq!(
        fails(&args[..8]),
        "error: `A` is a slice: give its parent tensor with --input A=FILE"
    );
    // a quantized slice: its parent's values are quantized (4 as 4/0.5 + 1 = 9, read back as
    // 4); per axis it is refused (the file's coordinates are the parent's)
    let slice = "#sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(1, 1, 1)>, j : #sparse_tensor<slice(0, 2, 2)>) -> (i : dense, j : compressed) }>";
    let tq = format!("A=tensor<1x2x!quant.uniform<i8:f32, 0.5:1>, {slice}>");
    let mut quant = args.to_vec();
    quant[3] = &tq;
    quant[5] = "x=tensor<2xf32>";
    quant[7] = "y=tensor<1xf32>";
    assert_eq!(ok(&quant), "( 28 )\n");
    let tp = format!("A=tensor<1x2x!quant.uniform<i8:f32:1, {{0.5:1, 1.0:0}}>, {slice}>");
    quant[3] = &tp;
    assert_eq!(
        fails(&quant),
        "error: --tensor A: a slice cannot be quantized per axis (quantize it per tensor)"
    );
}

#[test]
fn nonordered_operand_of_a_merge_is_converted() {
    let dir = tempdir("nonordered");
    // row 0 stored as columns 2, 0: a merge needs them ordered, so `A` is converted first
    let a = file(
        &dir,
        "a.mtx",
        "%%MatrixMarket matrix coordinate real general\n2 3 4\n1 3 2\n1 1 1\n2 3 4\n2 2 3\n",
    );
    let b = file(&dir, "b.mtx", A_MTX);
    let ta = "A=tensor<2x3xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed(nonordered)) }>>";
    let (tb, tc) = (
        format!("B=tensor<2x3xf64, {CSR}>"),
        format!("C=tensor<2x3xf64, {CSR}>"),
    );
    let (ia, ib) = (format!("A={a}"), format!("B={b}"));
    let args = [
        "eval",
        "C(i,j) = A(i,j) + B(i,j)",
        "--tensor",
        ta,
        "--tensor",
        &tb,
        "--tensor",
        &tc,
        "--input",
        &ia,
        "--input",
        &ib,
    ];
    assert_eq!(
        ok(&[&args[..], &["--print", "dense"]].concat()),
        "( ( 2, 0, 4 ), ( 0, 6, 8 ) )\n"
    );
    assert!(ok(&[&args[..], &["--emit", "loops"]].concat()).contains(
        "A' = convert A to #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>"
    ));
}

#[test]
fn emit_rust_of_a_converting_kernel_keeps_the_converted_struct_small() {
    // `B` in CSC is converted to row order inside the function: its private struct has the
    // storage basics and the assembly only (no accessors, built-in kernels or Display)
    let (ta, tb, tc) = (
        format!("A=tensor<8x8xf64, {CSR}>"),
        format!("B=tensor<8x8xf64, {CSC}>"),
        format!("C=tensor<8x8xf64, {CSR}>"),
    );
    let rust = ok(&[
        "eval",
        "C(i,j) = A(i,j) + B(i,j)",
        "--tensor",
        &ta,
        "--tensor",
        &tb,
        "--tensor",
        &tc,
        "--emit",
        "rust",
    ]);
    assert!(rust.contains("struct BConverted<V"), "{rust}");
    assert!(
        rust.contains("let B_converted: BConverted<f64> = B.convert()?;"),
        "{rust}"
    );
    for absent in ["fn spmv", "fn iter", "Display for"] {
        assert!(!rust.contains(absent), "{absent}");
    }
    // the struct and its impls, up to the conversion that uses them (the kernel's loops,
    // which grow with the merge's forms, are not counted)
    let start = rust.find("    struct BConverted<V").expect("the struct");
    let end = rust.find("    let B_converted").expect("the conversion");
    let lines = rust[start..end].lines().count();
    assert!(lines <= 300, "{lines} lines");
}

#[test]
fn emit_loops() {
    let ta = format!("A=tensor<2x3xf64, {CSR}>");
    assert_eq!(
        ok(&["eval", "y(i) = A(i,j) * x(j)", "--tensor", &ta, "--tensor", "x=tensor<3xf64>", "--tensor", "y=tensor<2xf64>", "--emit", "loops"]),
        "# y(i) = sum(j, A(i,j) * x(j))\n# order: i, j; output y: in place, every element assigned once\nfor i in 0..2:\n  locate A.0 at i\n  t0 = none\n  for j in A.1:  # in 4 interleaved partial sums\n    t0 += A(i,j) * x(j)\n  y(i) = t0\n"
    );
}

#[test]
fn errors() {
    let dir = tempdir("errors");
    let a = file(&dir, "a.mtx", A_MTX);
    let ia = format!("A={a}");
    let ta = format!("A=tensor<2x3xf64, {CSR}>");
    let e = |args: &[&str]| fails(args);
    assert_eq!(
        e(&["eval", "y(i) = B(i,j) * x(j)", "--tensor", "y=tensor<2xf64>"]),
        "error: <statement>:1:8: unknown tensor `B`: it is not declared (help: declare it, e.g. --tensor B=tensor<...>)"
    );
    assert_eq!(
        e(&[
            "eval",
            "y(i) = A(i,j,k)",
            "--tensor",
            &ta,
            "--tensor",
            "y=tensor<2xf64>"
        ]),
        "error: <statement>:1:8: `A` has 2 dimensions but is indexed with 3 indices"
    );
    assert_eq!(
        e(&["eval", "y(i) = A(i,j) * x(j)", "--tensor", &ta, "--tensor", "x=tensor<4xf64>", "--tensor", "y=tensor<2xf64>"]),
        "error: <statement>:1:19: index `j` has extent 3 in `A` (dimension 1) but 4 in `x` (dimension 0)"
    );
    assert_eq!(
        e(&[
            "eval",
            "y(i) = A(i,j) * x(j)",
            "--tensor",
            &ta,
            "--tensor",
            "x=tensor<3xf32>",
            "--tensor",
            "y=tensor<2xf64>"
        ]),
        "error: <statement>:1:17: value type mismatch: `x` holds f32 but `y` holds f64"
    );
    assert_eq!(
        e(&[
            "eval",
            "y(i) = A(i,j) & x(j)",
            "--tensor",
            &ta,
            "--tensor",
            "x=tensor<3xf64>",
            "--tensor",
            "y=tensor<2xf64>"
        ]),
        "error: <statement>:1:8: the operator `&` needs integer values, but `y` holds f64"
    );
    assert_eq!(
        e(&["eval", "y(i) = A(i,j) $ x(j)", "--tensor", &ta]),
        "error: <statement>:1:15: unexpected character `$` in the statement"
    );
    assert_eq!(
        e(&[
            "eval",
            "y(i) = A(i,j) * x(j)",
            "--tensor",
            &ta,
            "--tensor",
            "x=tensor<3xf64>",
            "--tensor",
            "y=tensor<2xf64>",
            "--input",
            "A=/nonexistent/a.mtx"
        ]),
        "error: cannot open /nonexistent/a.mtx: No such file or directory (os error 2)"
    );
    let bad = file(&dir, "bad.tns", "1 x\n");
    let ib = format!("x={bad}");
    let err = e(&[
        "eval",
        "y(i) = A(i,j) * x(j)",
        "--tensor",
        &ta,
        "--tensor",
        "x=tensor<3xf64>",
        "--tensor",
        "y=tensor<2xf64>",
        "--input",
        &ib,
    ]);
    assert!(err.starts_with(&format!("error: {bad}: line 1")), "{err}");
    let ta4 = "A=tensor<4x3xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>";
    assert_eq!(
        e(&[
            "eval",
            "y(i) = A(i,j) * x(j)",
            "--tensor",
            ta4,
            "--tensor",
            "x=tensor<3xf64>",
            "--tensor",
            "y=tensor<4xf64>",
            "--input",
            &ia
        ]),
        format!("error: --input A: {a} has size 2 in dimension 0, but `A` has 4")
    );
    assert_eq!(
        e(&[
            "eval",
            "y(i) = A(i,j) * x(j)",
            "--tensor",
            &ta,
            "--tensor",
            "x=tensor<3xf64>",
            "--tensor",
            "y=tensor<2xf64>",
            "--input",
            "z=1"
        ]),
        "error: --input z: no tensor z is declared (add --tensor z=TYPE)"
    );
    assert_eq!(
        e(&[
            "eval",
            "y(i) = A(i,j)",
            "--tensor",
            &ta,
            "--tensor",
            "y=tensor<2xf64>",
            "--print",
            "csv"
        ]),
        "error: --print csv: expected storage or dense"
    );
    assert_eq!(
        e(&[
            "eval",
            "y(i) = A(i,j)",
            "--tensor",
            "A=tensor<?x3xf64>",
            "--tensor",
            "y=tensor<?xf64>"
        ]),
        "error: `y` has a dynamic size (?) and no --input to take it from"
    );
    let ti = format!("A=tensor<2x3xi64, {CSR}>");
    assert_eq!(
        e(&[
            "eval",
            "y(i) = A(i,j) / z",
            "--tensor",
            &ti,
            "--tensor",
            "y=tensor<2xi64>",
            "--tensor",
            "z=tensor<i64>",
            "--input",
            &ia,
            "--input",
            "z=0"
        ]),
        "error: integer division by zero"
    );
    assert!(e(&[
        "eval",
        "y(i) = A(i,j)",
        "--tensor",
        "A=tensor<2x3xf64, #bad>"
    ])
    .starts_with("error: --tensor A: 1:"));
    assert_eq!(
        e(&["eval", "y(i) = A(i,j)", "--tensor", "A"]),
        "error: --tensor A: expected NAME=TYPE"
    );
}

#[test]
fn narrow_and_unsigned_value_types() {
    let dir = tempdir("narrow");
    // f16 and bf16 are stored narrow and computed in f32: 0.1 is stored as f16's nearest
    // (0.0999755859375), times 3 in f32, stored back to the nearest f16 (0.2998046875), and
    // printed as the shortest text that reads back to it; 70000 overflows f16 to inf
    let h = file(
        &dir,
        "h.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 0.1\n1 3 2.5\n2 2 70000\n3 1 -1.25\n",
    );
    let ih = format!("A={h}");
    let scaled = |t: &str| {
        let (tc, ta) = (
            format!("C=tensor<3x3x{t}, {CSR}>"),
            format!("A=tensor<3x3x{t}, {CSR}>"),
        );
        let out = ok(&[
            "eval",
            "C(i,j) = A(i,j) * 3",
            "--tensor",
            &tc,
            "--tensor",
            &ta,
            "--input",
            &ih,
        ]);
        out.lines()
            .find(|l| l.starts_with("values"))
            .unwrap()
            .to_string()
    };
    assert_eq!(scaled("f16"), "values : ( 0.2998, 7.5, inf, -3.75 )");
    // bf16 keeps f32's range with 8 significant bits: 70000 is stored as 70144, 3x that
    // (210432) as 210944, printed 211000
    assert_eq!(scaled("bf16"), "values : ( 0.3, 7.5, 211000, -3.75 )");
    assert_eq!(scaled("f32"), "values : ( 0.3, 7.5, 210000, -3.75 )");

    // 8- and 16-bit integers are computed in i32 and stored back wrapping: 100*100 + 2*1 =
    // 10002 is 18 as i8 and ui8 (10002 mod 256), 10000 is 16
    let a = file(
        &dir,
        "u.mtx",
        "%%MatrixMarket matrix coordinate integer general\n3 3 4\n1 1 100\n1 3 2\n2 2 7\n3 1 100\n",
    );
    let x = file(&dir, "x.tns", "1 100\n2 3\n3 1\n");
    let (ia, ix) = (format!("A={a}"), format!("x={x}"));
    let spmv = |t: &str| {
        let (ty, ta, tx) = (
            format!("y=tensor<3x{t}>"),
            format!("A=tensor<3x3x{t}, {CSR}>"),
            format!("x=tensor<3x{t}>"),
        );
        ok(&[
            "eval",
            "y(i) = A(i,j) * x(j)",
            "--tensor",
            &ty,
            "--tensor",
            &ta,
            "--tensor",
            &tx,
            "--input",
            &ia,
            "--input",
            &ix,
        ])
    };
    for t in ["i8", "ui8"] {
        assert_eq!(spmv(t), "( 18, 21, 16 )\n", "{t}");
    }
    for t in ["i16", "ui16", "ui32", "ui64", "i32", "i64"] {
        assert_eq!(spmv(t), "( 10002, 21, 10000 )\n", "{t}");
    }
    // a value that does not fit the stored type is an error naming it
    let n = file(
        &dir,
        "n.mtx",
        "%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 -7\n",
    );
    let tn = format!("A=tensor<1x1xui8, {CSR}>");
    let tc = format!("C=tensor<1x1xui8, {CSR}>");
    let inn = format!("A={n}");
    assert_eq!(
        fails(&[
            "eval",
            "C(i,j) = A(i,j)",
            "--tensor",
            &tc,
            "--tensor",
            &tn,
            "--input",
            &inn
        ]),
        format!("error: --input A: {n}: value -7 is not an exact ui8")
    );
    // a type the interpreter does not compute: the error lists the types it does
    let tz = format!("C=tensor<3x3xcomplex<f16>, {CSR}>");
    assert_eq!(
        fails(&["eval", "C(i,j) = C(i,j) * 3", "--tensor", &tz]),
        "error: --tensor C: value type complex<f16> is not supported by sparse eval (f64, f32, f16, bf16, i64, i32, i16, i8, ui64, ui32, ui16, ui8, i1, complex<f32>, complex<f64>, !quant.uniform<...:f32, ...>)"
    );
    // the Rust back end computes narrow kernels as the interpreter does: loads widen to f32, the
    // sparse output's values are stored back rounded once
    let tc = format!("C=tensor<3x3xf16, {CSR}>");
    let ta = format!("A=tensor<3x3xf16, {CSR}>");
    let rust = ok(&[
        "eval",
        "C(i,j) = A(i,j) * 3",
        "--tensor",
        &tc,
        "--tensor",
        &ta,
        "--emit",
        "rust",
    ]);
    assert!(
        rust.contains("A: &AFormat<::sparse::runtime::half::f16>"),
        "{rust}"
    );
    assert!(
        rust.contains("(*A.values.get_unchecked(a_p1)).to_f32() * 3.0"),
        "{rust}"
    );
    assert!(
        rust.contains(".map(|w| ::sparse::runtime::half::f16::from_f32(w))"),
        "{rust}"
    );
}

#[test]
fn complex_values() {
    let dir = tempdir("complex");
    // A's real values are read as x + 0i; alpha = 1+2i and beta = 1-1i on the command line
    let a = file(&dir, "a.mtx", A_MTX);
    let ia = format!("A={a}");
    let ta = format!("A=tensor<2x3xcomplex<f64>, {CSR}>");
    let tc = format!("C=tensor<2x3xcomplex<f64>, {DCSR}>");
    // A = [[1, 0, 2], [0, 3, 4]]: row sums 3 and 7, times 1+2i
    assert_eq!(
        ok(&[
            "eval",
            "y(i) = A(i,j) * alpha",
            "--tensor",
            &ta,
            "--tensor",
            "y=tensor<2xcomplex<f64>>",
            "--tensor",
            "alpha=tensor<complex<f64>>",
            "--input",
            &ia,
            "--input",
            "alpha=1+2i"
        ]),
        "( 3+6i, 7+14i )\n"
    );
    // a sparse output in its own format: (1+2i) / (1-1i) = -0.5+1.5i, times 1, 2, 3, 4
    assert_eq!(
        ok(&[
            "eval",
            "C(i,j) = A(i,j) * alpha / beta",
            "--tensor",
            &ta,
            "--tensor",
            &tc,
            "--tensor",
            "alpha=tensor<complex<f64>>",
            "--tensor",
            "beta=tensor<complex<f64>>",
            "--input",
            &ia,
            "--input",
            "alpha=1+2i",
            "--input",
            "beta=1-1i"
        ]),
        "---- Sparse Tensor ----\nnse = 4\ndim = ( 2, 3 )\nlvl = ( 2, 3 )\npos[0] : ( 0, 2 )\ncrd[0] : ( 0, 1 )\npos[1] : ( 0, 2, 4 )\ncrd[1] : ( 0, 2, 1, 2 )\nvalues : ( -0.5+1.5i, -1+3i, -1.5+4.5i, -2+6i )\n----\n"
    );
    // complex<f32> as well; 0-d output
    assert_eq!(
        ok(&[
            "eval",
            "s = sum(i j, A(i,j)) * alpha",
            "--tensor",
            "A=tensor<2x3xcomplex<f32>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>",
            "--tensor",
            "s=tensor<complex<f32>>",
            "--tensor",
            "alpha=tensor<complex<f32>>",
            "--input",
            &ia,
            "--input",
            "alpha=0.5i"
        ]),
        "0+5i\n"
    );
    // not ordered: min and max refuse complex values; a malformed complex number
    assert_eq!(
        fails(&[
            "eval",
            "m(i) = min(j, A(i,j))",
            "--tensor",
            &ta,
            "--tensor",
            "m=tensor<2xcomplex<f64>>",
            "--input",
            &ia
        ]),
        "error: <statement>:1:8: the reduction `min` needs ordered values, but `m` holds complex<f64>"
    );
    let bad = fails(&[
        "eval",
        "y(i) = A(i,j) * alpha",
        "--tensor",
        &ta,
        "--tensor",
        "y=tensor<2xcomplex<f64>>",
        "--tensor",
        "alpha=tensor<complex<f64>>",
        "--input",
        &ia,
        "--input",
        "alpha=1+2x",
    ]);
    assert_eq!(
        bad,
        "error: --input alpha=1+2x: not a number of type complex<f64>"
    );
    // a complex Matrix Market file (hermitian: (1, 2) mirrors (2, 1) conjugated) into a
    // complex tensor: A = [[1, 2i], [-2i, 0]], times 1i
    let h = file(
        &dir,
        "h.mtx",
        "%%MatrixMarket matrix coordinate complex hermitian\n2 2 2\n1 1 1 0\n2 1 0 -2\n",
    );
    let ih = format!("A={h}");
    let th = format!("A=tensor<2x2xcomplex<f64>, {CSR}>");
    assert_eq!(
        ok(&[
            "eval",
            "y(i) = A(i,j) * alpha",
            "--tensor",
            &th,
            "--tensor",
            "y=tensor<2xcomplex<f64>>",
            "--tensor",
            "alpha=tensor<complex<f64>>",
            "--input",
            &ih,
            "--input",
            "alpha=1i"
        ]),
        "( -2+1i, 2+0i )\n"
    );
    // into a real tensor it is refused, as before
    let tr = format!("A=tensor<2x2xf64, {CSR}>");
    let e = fails(&[
        "eval",
        "y(i) = A(i,j) * 2",
        "--tensor",
        &tr,
        "--tensor",
        "y=tensor<2xf64>",
        "--input",
        &ih,
    ]);
    assert!(
        e.contains("unsupported Matrix Market field `complex`"),
        "{e}"
    );
}

#[test]
fn i1_values() {
    let dir = tempdir("i1");
    // A pattern file gives 1s: A = [[1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 1, 1]], x = [1, 0, 1, 0]
    let a = file(
        &dir,
        "a.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n3 4 5\n1 1\n1 3\n2 2\n3 3\n3 4\n",
    );
    let x = file(&dir, "x.tns", "1 1\n2 0\n3 1\n4 0\n");
    let (ia, ix) = (format!("A={a}"), format!("x={x}"));
    let ta = format!("A=tensor<3x4xi1, {CSR}>");
    let bool_spmv = |statement: &str| {
        ok(&[
            "eval",
            statement,
            "--tensor",
            &ta,
            "--tensor",
            "x=tensor<4xi1>",
            "--tensor",
            "y=tensor<3xi1>",
            "--input",
            &ia,
            "--input",
            &ix,
        ])
    };
    // boolean SpMV: does row i reach a set x(j)?
    assert_eq!(bool_spmv("y(i) = or(j, A(i,j) & x(j))"), "( 1, 0, 1 )\n");
    // arithmetic modulo 2: the sum of products counts the matches mod 2 (row 0 has two)
    assert_eq!(bool_spmv("y(i) = A(i,j) * x(j)"), "( 0, 0, 1 )\n");
    // `-` is exclusive or too, over the union of A's row and the dense x
    assert_eq!(bool_spmv("y(i) = -A(i,j) - x(j)"), "( 0, 1, 0 )\n");
    // reductions over the stored entries: the parity of each row, and min/max as and/or
    let reduce = |statement: &str| {
        ok(&[
            "eval",
            statement,
            "--tensor",
            &ta,
            "--tensor",
            "y=tensor<3xi1>",
            "--input",
            &ia,
        ])
    };
    assert_eq!(reduce("y(i) = xor(j, A(i,j))"), "( 0, 1, 0 )\n");
    assert_eq!(reduce("y(i) = sum(j, A(i,j))"), "( 0, 1, 0 )\n");
    assert_eq!(reduce("y(i) = and(j, A(i,j))"), "( 1, 1, 1 )\n");
    assert_eq!(reduce("y(i) = max(j, A(i,j))"), "( 1, 1, 1 )\n");
    // a sparse output in its own format prints its values as 1 and 0; 1 + 1 is 0
    let tc = format!("C=tensor<3x4xi1, {DCSR}>");
    let plus_one = [
        "eval",
        "C(i,j) = A(i,j) + A(i,j) * x(j)",
        "--tensor",
        &ta,
        "--tensor",
        "x=tensor<4xi1>",
        "--tensor",
        &tc,
        "--input",
        &ia,
        "--input",
        &ix,
    ];
    assert_eq!(
        ok(&plus_one),
        "---- Sparse Tensor ----\nnse = 5\ndim = ( 3, 4 )\nlvl = ( 3, 4 )\npos[0] : ( 0, 3 )\ncrd[0] : ( 0, 1, 2 )\npos[1] : ( 0, 2, 3, 5 )\ncrd[1] : ( 0, 2, 1, 2, 3 )\nvalues : ( 0, 0, 1, 0, 1 )\n----\n"
    );
    let mut dense = plus_one.to_vec();
    dense.extend(["--print", "dense"]);
    assert_eq!(
        ok(&dense),
        "( ( 0, 0, 0, 0 ), ( 0, 1, 0, 0 ), ( 0, 0, 0, 1 ) )\n"
    );
    // duplicates are summed modulo 2; a 0-d output; `true` on the command line
    let d = file(
        &dir,
        "d.mtx",
        "%%MatrixMarket matrix coordinate integer general\n3 4 4\n1 1 1\n1 3 1\n1 3 1\n3 2 0\n",
    );
    let id = format!("A={d}");
    let scalar = |z: &str| {
        let iz = format!("z={z}");
        sparse(&[
            "eval",
            "s = sum(i j, A(i,j)) / z",
            "--tensor",
            &ta,
            "--tensor",
            "s=tensor<i1>",
            "--tensor",
            "z=tensor<i1>",
            "--input",
            &id,
            "--input",
            &iz,
        ])
    };
    assert_eq!(scalar("true"), (0, "1\n".to_string(), String::new()));
    assert_eq!(scalar("1").1, "1\n");
    // division by zero, as for the other integers
    assert_eq!(
        scalar("0"),
        (
            1,
            String::new(),
            "error: integer division by zero\n".to_string()
        )
    );
    // values other than 0 and 1, literals other than 0 and 1, float literals
    let two = file(
        &dir,
        "two.mtx",
        "%%MatrixMarket matrix coordinate integer general\n3 4 1\n2 2 2\n",
    );
    let i2 = format!("A={two}");
    let ty = "y=tensor<3xi1>";
    assert_eq!(
        fails(&[
            "eval",
            "y(i) = A(i,j)",
            "--tensor",
            &ta,
            "--tensor",
            ty,
            "--input",
            &i2
        ]),
        format!("error: --input A: {two}: value 2 is not an exact i1")
    );
    assert_eq!(
        fails(&[
            "eval",
            "y(i) = A(i,j) * 2",
            "--tensor",
            &ta,
            "--tensor",
            ty,
            "--input",
            &ia
        ]),
        "error: the literal 2 does not fit i1"
    );
    assert_eq!(
        fails(&[
            "eval",
            "y(i) = A(i,j) * 1.0",
            "--tensor",
            &ta,
            "--tensor",
            ty
        ]),
        "error: <statement>:1:17: the literal `1.0` is not an integer, but `y` holds i1"
    );
    assert_eq!(
        fails(&[
            "eval",
            "s = z",
            "--tensor",
            "s=tensor<i1>",
            "--tensor",
            "z=tensor<i1>",
            "--input",
            "z=2"
        ]),
        "error: --input z=2: not a number of type i1"
    );
    // i1 mixes with no other type
    assert_eq!(
        fails(&[
            "eval",
            "y(i) = A(i,j)",
            "--tensor",
            &ta,
            "--tensor",
            "y=tensor<3xi8>"
        ]),
        "error: <statement>:1:8: value type mismatch: `A` holds i1 but `y` holds i8"
    );
    // the Rust back end computes in the runtime's `I1`, a sum as a wrapping (exclusive or) sum
    let rust = ok(&[
        "eval",
        "y(i) = A(i,j)",
        "--tensor",
        &ta,
        "--tensor",
        ty,
        "--emit",
        "rust",
    ]);
    assert!(
        rust.contains("y: &mut [::sparse::runtime::value::I1]"),
        "{rust}"
    );
    assert!(rust.contains(".wrapping_add("), "{rust}");
}

#[test]
fn quantized_values() {
    let dir = tempdir("quant");
    // A's real values [[0.25, 0, 1.3], [0, 0.75, 100]], x = [1, 2, 3]
    let a = file(
        &dir,
        "a.mtx",
        "%%MatrixMarket matrix coordinate real general\n2 3 4\n1 1 0.25\n1 3 1.3\n2 2 0.75\n2 3 100\n",
    );
    let x = file(&dir, "x.tns", X_TNS);
    let (ia, ix) = (format!("A={a}"), format!("x={x}"));
    const Q: &str = "!quant.uniform<i8:f32, 0.5:10>";
    let ta = format!("A=tensor<2x3x{Q}, {CSR}>");
    let spmv = |ta: &str, tx: &str, ty: &str| {
        ok(&[
            "eval",
            "y(i) = A(i,j) * x(j)",
            "--tensor",
            ta,
            "--tensor",
            tx,
            "--tensor",
            ty,
            "--input",
            &ia,
            "--input",
            &ix,
        ])
    };
    // per tensor, scale 0.5, zero point 10: A is stored as 0.25/0.5 + 10 = 10.5 -> 10 (half to
    // even), 12.6 -> 13, 11.5 -> 12, 210 -> 127 (clamped), read as 0, 1.5, 1, 58.5; the kernel
    // computes in f32 with the f32 x: y = (1.5*3, 1*2 + 58.5*3)
    assert_eq!(
        spmv(&ta, "x=tensor<3xf32>", "y=tensor<2xf32>"),
        "( 4.5, 177.5 )\n"
    );
    // a quantized output is quantized once at the end and printed as its stored integers:
    // 4.5/2 = 2.25 -> 2, 88.75 -> 89; a storage range clamps A's 210 to 100 (45): 2 + 135
    let ty = "y=tensor<2x!quant.uniform<i8<-100:100>:f32, 2.0>>";
    assert_eq!(spmv(&ta, "x=tensor<3xf32>", ty), "( 2, 89 )\n");
    let tr = format!("A=tensor<2x3x!quant.uniform<i8<-100:100>:f32, 0.5:10>, {CSR}>");
    assert_eq!(
        spmv(&tr, "x=tensor<3xf32>", "y=tensor<2xf32>"),
        "( 4.5, 137 )\n"
    );
    // quantized types mix with each other: x as ui8 with scale 0.1, zero point 3 reads back
    // 1, 2, 3; A with zero point 0 stores 0, 3, 2, 127 (0, 1.5, 1, 63.5)
    let t0 = format!("A=tensor<2x3x!quant.uniform<i8:f32, 0.5>, {CSR}>");
    assert_eq!(
        spmv(
            &t0,
            "x=tensor<3x!quant.uniform<u8:f32, 0.1:3>>",
            "y=tensor<2xf32>"
        ),
        "( 4.5, 192.5 )\n"
    );
    // the storage of a quantized sparse output: its values are the stored integers; printed
    // dense, the zero point where nothing is stored
    let copy = |ta: &str, tc: &str, dense: bool| {
        let mut args = vec![
            "eval",
            "C(i,j) = A(i,j)",
            "--tensor",
            ta,
            "--tensor",
            tc,
            "--input",
            &ia,
        ];
        if dense {
            args.extend(["--print", "dense"]);
        }
        ok(&args)
    };
    let tc = format!("C=tensor<2x3x{Q}, {CSR}>");
    assert_eq!(
        copy(&ta, &tc, false),
        "---- Sparse Tensor ----\nnse = 4\ndim = ( 2, 3 )\nlvl = ( 2, 3 )\npos[1] : ( 0, 2, 4 )\ncrd[1] : ( 0, 2, 1, 2 )\nvalues : ( 10, 13, 12, 127 )\n----\n"
    );
    assert_eq!(
        copy(&ta, &tc, true),
        "( ( 10, 10, 13 ), ( 10, 12, 127 ) )\n"
    );
    // per axis along dimension 1 (the columns): column 0 has scale 0.5, zero point 0 (0.5 ->
    // 0), column 1 0.25:4 (0.75 -> 7), column 2 1:-2 (1.3 -> -1, 100 -> 98)
    const P: &str = "!quant.uniform<i8:f32:1, {0.5:0, 0.25:4, 1.0:-2}>";
    let tp = format!("A=tensor<2x3x{P}, {CSR}>");
    let tcp = format!("C=tensor<2x3x{P}, {CSR}>");
    assert_eq!(
        copy(&tp, &tcp, false),
        "---- Sparse Tensor ----\nnse = 4\ndim = ( 2, 3 )\nlvl = ( 2, 3 )\npos[1] : ( 0, 2, 4 )\ncrd[1] : ( 0, 2, 1, 2 )\nvalues : ( 0, -1, 7, 98 )\n----\n"
    );
    assert_eq!(copy(&tp, &tcp, true), "( ( 0, 4, -1 ), ( 0, 7, 98 ) )\n");
    // read into f32: the dequantized values
    let tcf = format!("C=tensor<2x3xf32, {CSR}>");
    assert_eq!(copy(&tp, &tcf, true), "( ( 0, 0, 1 ), ( 0, 0.75, 100 ) )\n");
    // a per-axis output picks the pair by the dimension coordinate, whatever the level order:
    // the transpose into DCSR, quantized along its dimension 0
    let tt = format!("T=tensor<3x2x!quant.uniform<i8:f32:0, {{0.5:0, 0.25:4, 1.0:-2}}>, {DCSR}>");
    let tf = format!("A=tensor<2x3xf32, {CSR}>");
    let transpose = |dense: bool| {
        let mut args = vec![
            "eval",
            "T(j,i) = A(i,j)",
            "--tensor",
            &tf,
            "--tensor",
            &tt,
            "--input",
            &ia,
        ];
        if dense {
            args.extend(["--print", "dense"]);
        }
        ok(&args)
    };
    assert_eq!(
        transpose(false),
        "---- Sparse Tensor ----\nnse = 4\ndim = ( 3, 2 )\nlvl = ( 3, 2 )\npos[0] : ( 0, 3 )\ncrd[0] : ( 0, 1, 2 )\npos[1] : ( 0, 1, 2, 4 )\ncrd[1] : ( 0, 1, 0, 1 )\nvalues : ( 0, 7, -1, 98 )\n----\n"
    );
    assert_eq!(transpose(true), "( ( 0, 0 ), ( 4, 7 ), ( -1, 98 ) )\n");
    // 0-d: alpha = 0.3 is stored as 0.6 + 10 -> 11 (0.5); the sum of A (61) times 0.5 in f32,
    // and quantized with scale 0.01
    let scalar = |ts: &str| {
        ok(&[
            "eval",
            "s = sum(i j, A(i,j)) * alpha",
            "--tensor",
            &ta,
            "--tensor",
            ts,
            "--tensor",
            &format!("alpha=tensor<{Q}>"),
            "--input",
            &ia,
            "--input",
            "alpha=0.3",
        ])
    };
    assert_eq!(scalar("s=tensor<f32>"), "30.5\n");
    assert_eq!(scalar("s=tensor<!quant.uniform<i16:f32, 0.01>>"), "3050\n");

    // errors name the tensor: a per-axis axis past the rank, a pair count other than the
    // dimension's size (a dynamic size: once the input gives it), a zero point outside the
    // storage range
    let e = |ta: &str| {
        fails(&[
            "eval",
            "C(i,j) = A(i,j)",
            "--tensor",
            ta,
            "--tensor",
            &tcf,
            "--input",
            &ia,
        ])
    };
    assert_eq!(
        e(&format!(
            "A=tensor<2x3x!quant.uniform<i8:f32:2, {{0.5:0, 0.25:4}}>, {CSR}>"
        )),
        "error: --tensor A: quantized axis 2 is not below the rank 2"
    );
    assert_eq!(
        e(&format!(
            "A=tensor<2x3x!quant.uniform<i8:f32:0, {{0.5:0, 0.25:4, 1.0:-2}}>, {CSR}>"
        )),
        "error: --tensor A: 3 scale:zero_point pairs, but dimension 0 of size 2 needs 2"
    );
    assert_eq!(
        e(&format!(
            "A=tensor<?x?x!quant.uniform<i8:f32:1, {{0.5:0, 0.25:4}}>, {CSR}>"
        )),
        "error: --tensor A: 2 scale:zero_point pairs, but dimension 1 of size 3 needs 3"
    );
    assert_eq!(
        e(&format!(
            "A=tensor<2x3x!quant.uniform<i8:f32, 0.5:200>, {CSR}>"
        )),
        "error: --tensor A: zero point 200 is outside the storage range [-128, 127]"
    );
    assert_eq!(
        e(&format!("A=tensor<2x3x!quant.uniform<i8:f64, 0.5>, {CSR}>")),
        "error: --tensor A: value type !quant.uniform<i8:f64, 5.000000e-01> is not supported by sparse eval (f64, f32, f16, bf16, i64, i32, i16, i8, ui64, ui32, ui16, ui8, i1, complex<f32>, complex<f64>, !quant.uniform<...:f32, ...>)"
    );
    // quantized types mix with f32 only; no bitwise operators; no generated Rust
    let tc64 = format!("C=tensor<2x3xf64, {CSR}>");
    assert_eq!(
        fails(&["eval", "C(i,j) = A(i,j)", "--tensor", &ta, "--tensor", &tc64]),
        "error: <statement>:1:10: value type mismatch: `A` holds !quant.uniform<i8:f32> but `C` holds f64"
    );
    assert_eq!(
        fails(&[
            "eval",
            "y(i) = A(i,j) * x(j)",
            "--tensor",
            &ta,
            "--tensor",
            "x=tensor<3xf16>",
            "--tensor",
            "y=tensor<2xf32>"
        ]),
        "error: <statement>:1:17: value type mismatch: `x` holds f16 but `y` holds f32"
    );
    assert_eq!(
        fails(&["eval", "C(i,j) = A(i,j) & A(i,j)", "--tensor", &ta, "--tensor", &tc]),
        "error: <statement>:1:10: the operator `&` needs integer values, but `C` holds !quant.uniform<i8:f32>"
    );
    // `--emit rust`: the kernel `sparse_format!` generates, the quantized tensors as format
    // structs declared with their tensor types; loads dequantize, a quantized output is
    // computed in f32 and quantized once
    let rust = ok(&[
        "eval",
        "C(i,j) = A(i,j)",
        "--tensor",
        &ta,
        "--tensor",
        &tcf,
        "--emit",
        "rust",
    ]);
    assert!(rust.starts_with("// AFormat = tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01:10>, #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>>\n"), "{rust}");
    assert!(rust.contains("A: &AFormat<i8>"), "{rust}");
    assert!(rust.contains(">::dequantize_value("), "{rust}");
    let ty = "y=tensor<2x!quant.uniform<i8<-100:100>:f32, 2.0>>";
    let rust = ok(&[
        "eval",
        "y(i) = A(i,j) * x(j)",
        "--tensor",
        &ta,
        "--tensor",
        "x=tensor<3xf32>",
        "--tensor",
        ty,
        "--emit",
        "rust",
    ]);
    assert!(rust.contains("// YFormat = tensor<2x!quant.uniform<i8<-100:100>:f32, 2.000000e+00>, #sparse_tensor.encoding<{ map = (d0) -> (d0 : dense) }>>"), "{rust}");
    assert!(rust.contains("y: &mut YFormat<i8>"), "{rust}");
    assert!(
        rust.contains("YFormat::<i8>::quantize_value(w, 0)"),
        "{rust}"
    );
    // a per-axis sparse output is rebuilt from its real entries, each quantized with its pair
    let tcp = format!("C=tensor<2x3x!quant.uniform<i8:f32:1, {{0.5:0, 0.25:4, 1.0:-2}}>, {CSR}>");
    let rust = ok(&[
        "eval",
        "C(i,j) = A(i,j)",
        "--tensor",
        &ta,
        "--tensor",
        &tcp,
        "--emit",
        "rust",
    ]);
    assert!(
        rust.contains("*C = CFormat::<i8>::from_coo_real(C.dim_shape, entries)?;"),
        "{rust}"
    );
    // one read by the statement is not generated
    assert_eq!(
        fails(&["eval", "C(i,j) += A(i,j)", "--tensor", &ta, "--tensor", &tcp, "--emit", "rust"]),
        "error: --emit rust: the Rust back end does not generate per-axis quantized outputs that the statement reads (`C`: `+=` or on the right; quantize it per tensor, or compute into f32) yet (`sparse eval` runs it through the interpreter)"
    );
}

/// A pattern operand (`explicitVal`) reads its constant; a pattern output is assembled by the
/// interpreter and every computed value checked against the constant.
#[test]
fn pattern_operands_and_outputs() {
    let dir = tempdir("pattern");
    let pat = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), explicitVal = 1.0 : f64 }>";
    let p = file(
        &dir,
        "p.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n3 4 4\n1 2\n1 4\n3 1\n3 3\n",
    );
    let x = file(&dir, "x.tns", "1 1\n2 2\n3 3\n4 4\n");
    let ta = format!("A=tensor<3x4xf64, {pat}>");
    let tc = format!("C=tensor<3x4xf64, {pat}>");
    let ia = format!("A={p}");
    let ix = format!("x={x}");
    assert_eq!(
        ok(&[
            "eval",
            "y(i) = A(i,j) * x(j)",
            "--tensor",
            &ta,
            "--tensor",
            "x=tensor<4xf64>",
            "--tensor",
            "y=tensor<3xf64>",
            "--input",
            &ia,
            "--input",
            &ix,
        ]),
        "( 6, 0, 4 )\n"
    );
    // A * A keeps the constant: a pattern output
    assert_eq!(
        ok(&["eval", "C(i,j) = A(i,j) * A(i,j)", "--tensor", &ta, "--tensor", &tc, "--input", &ia]),
        "---- Sparse Tensor ----\nnse = 4\ndim = ( 3, 4 )\nlvl = ( 3, 4 )\npos[1] : ( 0, 2, 2, 4 )\ncrd[1] : ( 1, 3, 0, 2 )\nvalues : ( 1, 1, 1, 1 )\n----\n"
    );
    // A + A does not
    assert_eq!(
        fails(&[
            "eval",
            "C(i,j) = A(i,j) + A(i,j)",
            "--tensor",
            &ta,
            "--tensor",
            &tc,
            "--input",
            &ia
        ]),
        "error: cannot assemble `C`: entry at [0, 1]: value 2 differs from explicitVal 1"
    );
    // the generated Rust reads the literal, and refuses the pattern output
    let rust = ok(&[
        "eval",
        "--emit",
        "rust",
        "y(i) = A(i,j) * x(j)",
        "--tensor",
        &ta,
        "--tensor",
        "x=tensor<4xf64>",
        "--tensor",
        "y=tensor<3xf64>",
    ]);
    assert!(rust.contains("t0 += 1.0 * *x.get_unchecked(j);"), "{rust}");
    assert!(!rust.contains("values"), "{rust}");
    assert_eq!(
        fails(&["eval", "--emit", "rust", "C(i,j) = A(i,j) * A(i,j)", "--tensor", &ta, "--tensor", &tc]),
        "error: --emit rust: the Rust back end does not generate outputs whose format has an `explicitVal` (`C`) yet (`sparse eval` runs it through the interpreter)"
    );
}
