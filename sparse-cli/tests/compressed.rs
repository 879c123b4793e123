//! `sparse compressed check` against the contract of issue 11: the `ok:` line for valid
//! arguments, every PyTorch invariant violated once with its number (PyTorch's order), and
//! malformed files as `error: FILE: MESSAGE`; exit status 1 on every error.

mod run;
use run::sparse;

/// A fresh directory `sparse-compressed-{test}-*` for one check's file, removed when dropped.
fn dir(test: &str) -> tempfile::TempDir {
    run::temp_dir("compressed", test)
}

/// Runs `compressed check` on `json` written to a temporary file named after `test`.
fn check(test: &str, json: &str) -> (i32, String, String, String) {
    let d = dir(test);
    let p = d.path().join(format!("{test}.json"));
    std::fs::write(&p, json).unwrap();
    let path = p.to_string_lossy().into_owned();
    let (code, out, err) = sparse(&["compressed", "check", &path]);
    (code, out, err, path)
}

/// An array member.
fn a(data: &str, dtype: &str) -> String {
    format!(r#"{{"data": {data}, "dtype": "{dtype}"}}"#)
}

fn args(layout: &str, c: &str, p: &str, v: &str, size: &str) -> String {
    format!(
        r#"{{"layout": "{layout}", "compressed_indices": {c}, "plain_indices": {p},
            "values": {v}, "size": {size}}}"#
    )
}

/// The reference's 4 x 6 BSR (blocksize 2 x 3), with one member replaced.
fn bsr(c: &str, p: &str, size: &str) -> String {
    let values = "[[[0,1,2],[6,7,8]],[[3,4,5],[9,10,11]],[[12,13,14],[18,19,20]],\
                  [[15,16,17],[21,22,23]]]";
    args("sparse_bsr", c, p, &a(values, "float32"), size)
}

fn ok(test: &str, json: &str) -> String {
    let (code, out, err, _) = check(test, json);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    out
}

fn invariant(test: &str, json: &str) -> String {
    let (code, out, err, _) = check(test, json);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err.trim_end().to_string()
}

#[test]
fn valid_arguments_print_the_ok_line() {
    let i64s = |d: &str| a(d, "int64");
    assert_eq!(
        ok(
            "bsr",
            &bsr(&i64s("[0, 2, 4]"), &i64s("[0, 1, 0, 1]"), "[4, 6]")
        ),
        "ok: sparse_bsr size=[4, 6] batch=[] blocksize=[2, 3] dense=[] nnz=4\n"
    );
    assert_eq!(
        ok(
            "bsr_null",
            &bsr(&i64s("[0, 2, 4]"), &i64s("[0, 1, 0, 1]"), "null")
        ),
        "ok: sparse_bsr size=[4, 6] batch=[] blocksize=[2, 3] dense=[] nnz=4 (size estimated)\n"
    );
    // batched hybrid CSR: 2 batches of 2 x 3 with a dense dimension of 4; values' data null
    let csr = args(
        "sparse_csr",
        &a("[[0, 1, 3], [0, 2, 3]]", "int32"),
        &a("[[1, 0, 2], [0, 2, 1]]", "int32"),
        r#"{"data": null, "shape": [2, 3, 4], "dtype": "float64"}"#,
        "null",
    );
    assert_eq!(
        ok("batched", &csr),
        "ok: sparse_csr size=[2, 2, 3, 4] batch=[2] blocksize=[1, 1] dense=[4] nnz=3 (size estimated)\n"
    );
    // an empty CSC: the shape of values says what its data cannot (0 x 5)
    let csc = args(
        "sparse_csc",
        &i64s("[0, 0, 0]"),
        &i64s("[]"),
        r#"{"data": [], "shape": [0, 5], "dtype": "float64"}"#,
        "[3, 2, 5]",
    );
    assert_eq!(
        ok("empty_csc", &csc),
        "ok: sparse_csc size=[3, 2, 5] batch=[] blocksize=[1, 1] dense=[5] nnz=0\n"
    );
    // BSC: the transpose of the reference BSR (6 x 4, blocks 3 x 2), complex values as pairs
    let bsc = args(
        "sparse_bsc",
        &i64s("[0, 2, 4]"),
        &i64s("[0, 1, 0, 1]"),
        r#"{"data": [[[[0,0],[6,0]],[[1,0],[7,0]],[[2,0],[8,0]]],
                     [[[3,0],[9,0]],[[4,0],[10,0]],[[5,0],[11,0]]],
                     [[[12,0],[18,0]],[[13,0],[19,0]],[[14,0],[20,0]]],
                     [[[15,0],[21,0]],[[16,0],[22,0]],[[17,0],[23,0]]]],
            "shape": [4, 3, 2], "dtype": "complex64", "strides": [6, 1, 3]}"#,
        "[6, 4]",
    );
    assert_eq!(
        ok("bsc", &bsc),
        "ok: sparse_bsc size=[6, 4] batch=[] blocksize=[3, 2] dense=[] nnz=4\n"
    );
}

#[test]
fn every_invariant_once_in_pytorchs_order() {
    let i64s = |d: &str| a(d, "int64");
    let c = i64s("[0, 2, 4]");
    let p = i64s("[0, 1, 0, 1]");
    let cases: Vec<(&str, String, &str)> = vec![
        ("3.2", bsr(&i64s("0"), &i64s("0"), "[4, 6]"),
         "error: invariant 3.2: crow_indices must have dimensionality >= 1 but got 0"),
        ("3.3", bsr(&c, &i64s("[[0, 1, 0, 1]]"), "[4, 6]"),
         "error: invariant 3.3: crow_indices and col_indices dimensionalities must be equal but got 1 and 2, respectively"),
        ("3.4", args("sparse_bsr", &c, &p, &a("[1, 2, 3, 4]", "float32"), "[4, 6]"),
         "error: invariant 3.4: values must have dimensionality > sum of batch and block dimensionalities (=0 + 2) but got 1"),
        ("3.6", bsr(r#"{"data": [0, 2, 4], "dtype": "int64", "strides": [2]}"#,
                    r#"{"data": [0, 1, 0, 1], "dtype": "int64", "strides": [2]}"#, "[4, 6]"),
         "error: invariant 3.6: col_indices must be contiguous per batch: col_indices.stride(-1) = 2, expected 1"),
        ("3.5", bsr(r#"{"data": [0, 2, 4], "dtype": "int64", "strides": [2]}"#, &p, "[4, 6]"),
         "error: invariant 3.5: crow_indices must be contiguous per batch: crow_indices.stride(-1) = 2, expected 1"),
        ("3.1", bsr(&c, &p, "[4, 6, 1]"),
         "error: invariant 3.1: tensor dimensionality must be sum of batch, base, and dense dimensionalities (=0 + 2 + 0) but got 3"),
        ("3.8b", args("sparse_csr", &i64s("[[0, 1], [0, 1]]"), &i64s("[[0], [0]]"), &a("[[1], [2]]", "float64"), "[3, 1, 1]"),
         "error: invariant 3.8: all batch dimensions of crow_indices (=[2]) must be equal to tensor batch dimensions (=[3])"),
        ("3.9b", args("sparse_csr", &i64s("[[0, 1], [0, 1]]"), &i64s("[[0], [0], [0]]"), &a("[[1], [2]]", "float64"), "[2, 1, 1]"),
         "error: invariant 3.9: all batch dimensions of col_indices (=[3]) must be equal to tensor batch dimensions (=[2])"),
        ("3.10b", args("sparse_csr", &i64s("[[0, 1], [0, 1]]"), &i64s("[[0], [0]]"), &a("[[1], [2], [3]]", "float64"), "[2, 1, 1]"),
         "error: invariant 3.10: all batch dimensions of values (=[3]) must be equal to tensor batch dimensions (=[2])"),
        ("3.1d", bsr(&c, &p, "[4, 7]"),
         "error: invariant 3.1: tensor shape[1] (=7) must be divisible with blocksize[1] (=3) as defined by values shape"),
        ("3.8", bsr(&c, &p, "[6, 6]"),
         "error: invariant 3.8: crow_indices.shape[-1] = 3, expected nrows + 1 = 4"),
        ("3.9", bsr(&c, &i64s("[0, 1, 0]"), "[4, 6]"),
         "error: invariant 3.9: col_indices.shape[-1] = 3, expected nnz = values.shape[0] = 4"),
        ("3.10", args("sparse_csr", &i64s("[0, 1]"), &i64s("[0]"), &a("[[1, 2]]", "float64"), "[1, 1, 3]"),
         "error: invariant 3.10: values.shape[1:] = [2], expected the dense dimensions size[2:] = [3]"),
        ("1.1", bsr(&c, &a("[0, 1, 0, 1]", "int32"), "[4, 6]"),
         "error: invariant 1.1: crow_indices and col_indices must have the same dtype, but got int64 and int32, respectively"),
        ("1.3", bsr(&a("[0, 2, 4]", "int16"), &a("[0, 1, 0, 1]", "int16"), "[4, 6]"),
         "error: invariant 1.3: crow_indices and col_indices dtype must be int32 or int64, but got int16"),
        ("5.4", bsr(&c, &i64s("[0, 1, -1, 1]"), "[4, 6]"),
         "error: invariant 5.4: col_indices.min() = -1, expected >= 0"),
        ("5.5", bsr(&c, &i64s("[0, 1, 0, 2]"), "[4, 6]"),
         "error: invariant 5.5: col_indices.max() = 2, expected < ncols = 2"),
        ("5.1", bsr(&i64s("[1, 2, 4]"), &p, "[4, 6]"),
         "error: invariant 5.1: crow_indices[0] = 1, expected 0"),
        ("5.2", bsr(&i64s("[0, 2, 3]"), &p, "[4, 6]"),
         "error: invariant 5.2: crow_indices[2] = 3, expected nnz = 4"),
        ("5.3", bsr(&i64s("[0, 4, 4]"), &p, "[4, 6]"),
         "error: invariant 5.3: crow_indices[1] - crow_indices[0] = 4 > ncols = 2"),
        ("5.3n", args("sparse_csc", &i64s("[[0, 2, 1, 3]]"), &i64s("[[0, 1, 2]]"), &a("[[1, 2, 3]]", "float64"), "[1, 3, 3]"),
         "error: invariant 5.3: ccol_indices[0, 2] - ccol_indices[0, 1] = -1 < 0"),
        ("5.6", bsr(&c, &i64s("[1, 1, 0, 1]"), "[4, 6]"),
         "error: invariant 5.6: col_indices[1] = 1 is not greater than col_indices[0] = 1: col_indices must strictly increase within each compressed slice (row 0)"),
    ];
    for (test, json, want) in cases {
        assert_eq!(invariant(test, &json), want, "case {test}");
    }
}

#[test]
fn malformed_files_name_the_file() {
    let i64s = |d: &str| a(d, "int64");
    let c = i64s("[0, 2, 4]");
    let p = i64s("[0, 1, 0, 1]");
    let cases: Vec<(&str, String, &str)> = vec![
        ("json", "{".into(), "EOF while parsing"),
        (
            "layout",
            bsr(&c, &p, "[4, 6]").replace("sparse_bsr", "sparse_coo"),
            "unknown layout \"sparse_coo\"",
        ),
        (
            "dtype",
            bsr(&a("[0, 2, 4]", "int128"), &p, "[4, 6]"),
            "unknown dtype \"int128\"",
        ),
        (
            "member",
            r#"{"layout": "sparse_csr", "compressed_indices": {"data": [0], "dtype": "int64"}}"#
                .into(),
            "missing member \"plain_indices\"",
        ),
        (
            "ragged",
            bsr(&c, &i64s("[[0, 1], [0]]"), "[4, 6]"),
            "col_indices.data is ragged",
        ),
        (
            "shape",
            bsr(
                r#"{"data": [0, 2, 4], "dtype": "int64", "shape": [4]}"#,
                &p,
                "[4, 6]",
            ),
            "crow_indices.shape = [4] disagrees with its data, which has shape [3]",
        ),
        (
            "strides",
            bsr(
                r#"{"data": [0, 2, 4], "dtype": "int64", "strides": [1, 1]}"#,
                &p,
                "[4, 6]",
            ),
            "crow_indices.strides has 2 entries but crow_indices has 1 dimensions",
        ),
        (
            "float_index",
            bsr(&i64s("[0, 2.5, 4]"), &p, "[4, 6]"),
            "is not an integer",
        ),
        (
            "null_index",
            bsr(&i64s("null"), &p, "[4, 6]"),
            "index data must be listed",
        ),
        (
            "size",
            bsr(&c, &p, "[4, -6]"),
            "size[1] = -6 is not a non-negative integer",
        ),
    ];
    for (test, json, want) in cases {
        let (code, out, err, path) = check(test, &json);
        assert_eq!((code, out.as_str()), (1, ""), "case {test}: {err}");
        let prefix = format!("error: {path}: ");
        assert!(err.starts_with(&prefix), "case {test}: {err}");
        assert!(err.contains(want), "case {test}: {err:?} lacks {want:?}");
        assert_eq!(err.lines().count(), 1, "case {test}: {err}");
    }
    let (code, _, err) = sparse(&["compressed", "check", "/nonexistent/args.json"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: /nonexistent/args.json: cannot read: "),
        "{err}"
    );
}
