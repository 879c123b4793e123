//! The `sparse` command line against the contract of `../shared/conformance/README.md`, and
//! `sparse spmv` on a real matrix against an independent computation.

#[path = "../../sparse-tests/tests/common/mod.rs"]
mod common;

use std::process::Command;

use common::{data, shared};

mod run;
use run::sparse;

/// Runs `sparse` with `input` on its standard input; returns (exit code, stdout, stderr). The exit
/// code is -1 when the process was killed by a signal (an abort).
fn sparse_stdin(args: &[&str], input: &str) -> (i32, String, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_sparse"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run sparse");
    let mut stdin = child.stdin.take().expect("stdin");
    // The command may exit before reading everything (an error): ignore a broken pipe.
    let _ = stdin.write_all(input.as_bytes());
    drop(stdin);
    let out = child.wait_with_output().expect("wait for sparse");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A fresh empty directory `sparse-cli-{test}-*` for one test, removed when dropped.
fn temp_dir(test: &str) -> tempfile::TempDir {
    run::temp_dir("cli", test)
}

const CSR: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>";

/// y = A x for bcsstk16 (symmetric, lower triangle stored), computed straight from the file's
/// text with no project code: each off-diagonal entry contributes to both rows.
fn independent_spmv(path: &std::path::Path) -> Vec<f64> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('%'));
    let size: Vec<usize> = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    let x: Vec<f64> = (0..size[1]).map(|j| 1.0 + (j % 7) as f64).collect();
    let mut y = vec![0.0; size[0]];
    for l in lines {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() < 3 {
            continue;
        }
        let (i, j, v) = (
            w[0].parse::<usize>().unwrap() - 1,
            w[1].parse::<usize>().unwrap() - 1,
            w[2].parse::<f64>().unwrap(),
        );
        y[i] += v * x[j];
        if i != j {
            y[j] += v * x[i];
        }
    }
    y
}

#[test]
fn spmv_bcsstk16_matches_independent_computation() {
    let path = data("bcsstk16.mtx");
    let want = independent_spmv(&path);
    for enc in [CSR, "#sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed), posWidth = 32, crdWidth = 16 }>"] {
        let (rc, out, err) = sparse(&["spmv", "--encoding", enc, path.to_str().unwrap()]);
        assert_eq!(rc, 0, "{err}");
        let got: Vec<f64> = out.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(got.len(), 4884);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "y[{i}] = {g}, expected {w}");
        }
    }
}

#[test]
fn spmv_with_x_file_and_errors() {
    let dir = temp_dir("spmv");
    let m = dir.path().join("m.mtx");
    std::fs::write(
        &m,
        "%%MatrixMarket matrix coordinate real general\n2 3 3\n1 1 2.5\n1 3 1\n2 2 -1\n",
    )
    .unwrap();
    let x = dir.path().join("x.txt");
    std::fs::write(&x, "1\n2\n0.1\n").unwrap();
    let (rc, out, _) = sparse(&[
        "spmv",
        "--encoding",
        CSR,
        m.to_str().unwrap(),
        "--x",
        x.to_str().unwrap(),
    ]);
    assert_eq!(rc, 0);
    assert_eq!(out, "2.6\n-2\n");
    std::fs::write(&x, "1\n2\n").unwrap();
    let (rc, _, err) = sparse(&[
        "spmv",
        "--encoding",
        CSR,
        m.to_str().unwrap(),
        "--x",
        x.to_str().unwrap(),
    ]);
    assert_eq!(rc, 1);
    assert_eq!(
        err,
        format!(
            "error: --x {} holds 2 numbers, but {} is 2 x 3: x needs 3, one per column\n",
            x.display(),
            m.display()
        )
    );
    std::fs::write(
        &m,
        "%%MatrixMarket matrix coordinate real general\n2 3 1\n1 4 2.5\n",
    )
    .unwrap();
    let (rc, _, err) = sparse(&["inspect", "--encoding", CSR, m.to_str().unwrap()]);
    assert_eq!(rc, 1);
    assert!(
        err.contains("line 3") && err.contains("column index 4"),
        "{err}"
    );
    std::fs::write(
        &m,
        "%%MatrixMarket matrix coordinate real general\n2 3 1\n1 3 2.5\n",
    )
    .unwrap();
    let (rc, _, err) = sparse(&[
        "inspect",
        "--encoding",
        "#sparse_tensor.encoding<{ map = (i) -> (i : dense) }>",
        m.to_str().unwrap(),
    ]);
    assert_eq!(rc, 1);
    assert!(err.contains("rank mismatch"), "{err}");
}

#[test]
fn check_prints_canonical_form_or_errors() {
    let valid = shared().join("conformance/encodings/valid/dcsc_widths.mlir");
    let (rc, out, _) = sparse(&["check", valid.to_str().unwrap()]);
    assert_eq!(rc, 0);
    assert_eq!(out, "ok: #sparse_tensor.encoding<{ map = (d0, d1) -> (d1 : compressed, d0 : compressed), posWidth = 32, crdWidth = 8 }>\n");
    let invalid = shared().join("conformance/encodings/invalid/unknown_format.mlir");
    let (rc, out, _) = sparse(&["check", invalid.to_str().unwrap()]);
    assert_eq!(rc, 1);
    assert_eq!(out, "error: 2:64: unknown level format: compresed\n");
}

#[test]
fn inspect_prints_storage() {
    let m = shared().join("conformance/storage/bsr_2x2_seed/matrix.mtx");
    let enc = format!(
        "@{}",
        shared()
            .join("conformance/storage/bsr_2x2_seed/encoding.mlir")
            .display()
    );
    let (rc, out, err) = sparse(&["inspect", "--encoding", &enc, m.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(
        out,
        "---- Sparse Tensor ----\nnse = 12\ndim = ( 4, 6 )\nlvl = ( 2, 3, 2, 2 )\npos[1] : ( 0, 2, 3 )\ncrd[1] : ( 0, 2, 1 )\nvalues : ( 1, 2, 0, 3, 4, 0, 0, 5, 6, 7, 8, 0 )\n----\n"
    );
}

#[test]
fn expand_prints_formatted_code() {
    let f = shared().join("conformance/encodings/valid/csr.mlir");
    let (rc, out, err) = sparse(&["expand", f.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("pub struct CSR<V = f64> {"), "{out}");
    assert!(out.contains("pos_1: ::std::vec::Vec<usize>,"), "{out}");
    assert!(out.contains("pub fn spmv("), "{out}");
}

#[test]
fn inspect_reads_frostt_tensors() {
    let dir = temp_dir("tns");
    let t = dir.path().join("t.tns");
    std::fs::write(&t, "# a 2x2x3 tensor\n1 1 1 1.5\n2 2 3 -2\n1 2 1 4\n").unwrap();
    let csf = "#sparse_tensor.encoding<{ map = (i, j, k) -> (i : compressed, j : compressed, k : compressed) }>";
    let (rc, out, err) = sparse(&["inspect", "--encoding", csf, t.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(
        out,
        "---- Sparse Tensor ----\nnse = 3\ndim = ( 2, 2, 3 )\nlvl = ( 2, 2, 3 )\npos[0] : ( 0, 2 )\ncrd[0] : ( 0, 1 )\npos[1] : ( 0, 2, 3 )\ncrd[1] : ( 0, 1, 1 )\npos[2] : ( 0, 1, 2, 3 )\ncrd[2] : ( 0, 0, 2 )\nvalues : ( 1.5, 4, -2 )\n----\n"
    );
    let (rc, out, _) = sparse(&[
        "inspect",
        "--encoding",
        csf,
        "--shape",
        "3,3,3",
        t.to_str().unwrap(),
    ]);
    assert_eq!(rc, 0);
    assert!(out.contains("dim = ( 3, 3, 3 )"), "{out}");
    std::fs::write(&t, "1 1 1 1.5\n2 x 3 -2\n").unwrap();
    let (rc, _, err) = sparse(&["inspect", "--encoding", csf, t.to_str().unwrap()]);
    assert_eq!(rc, 1);
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn spmv_huge_declared_shape_is_an_error_not_an_abort() {
    let dir = temp_dir("huge");
    // 2^62 columns: x would need 2^65 bytes, more than any address space, so the allocation fails
    // on every machine (the 2 x 4000000000 fails the same way where 32 GB are not free).
    let m = dir.path().join("wide.mtx");
    let header = "%%MatrixMarket matrix coordinate real general";
    std::fs::write(&m, format!("{header}\n2 4611686018427387904 1\n1 1 2.5\n")).unwrap();
    let m = m.to_str().unwrap();
    let (rc, out, err) = sparse(&["spmv", "--encoding", CSR, m]);
    assert_eq!(rc, 1, "{err}");
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!(
            "error: cannot allocate x: 4611686018427387904 values of f64 \
             (36893488147419103232 bytes), one per column of {m} (2 x 4611686018427387904)\n"
        )
    );
    // y: one value per row (a COO encoding, so the storage itself is small).
    let coo =
        "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>";
    let t = dir.path().join("tall.mtx");
    std::fs::write(&t, format!("{header}\n4611686018427387904 2 1\n1 1 2.5\n")).unwrap();
    let t = t.to_str().unwrap();
    let (rc, out, err) = sparse(&["spmv", "--encoding", coo, t]);
    assert_eq!(rc, 1, "{err}");
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!(
            "error: cannot allocate y: 4611686018427387904 values of f64 \
             (36893488147419103232 bytes), one per row of {t} (4611686018427387904 x 2)\n"
        )
    );
    // inspect handles both files.
    let (rc, out, err) = sparse(&["inspect", "--encoding", CSR, m]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("dim = ( 2, 4611686018427387904 )"), "{out}");
}

#[test]
fn missing_files_are_named_once() {
    let dir = temp_dir("missing");
    let enoent = "No such file or directory (os error 2)";
    for name in ["none.mtx", "none.tns"] {
        let m = dir.path().join(name);
        let m = m.to_str().unwrap();
        for cmd in ["inspect", "spmv"] {
            let (rc, out, err) = sparse(&[cmd, "--encoding", CSR, m]);
            assert_eq!((rc, out.as_str()), (1, ""), "{err}");
            assert_eq!(err, format!("error: cannot open {m}: {enoent}\n"));
        }
    }
    let f = dir.path().join("none.mlir");
    let f = f.to_str().unwrap();
    let (rc, out, err) = sparse(&["check", f]);
    assert_eq!(
        (rc, out, err),
        (1, format!("error: cannot read {f}: {enoent}\n"), "".into())
    );
    for cmd in ["fmt", "expand"] {
        let (rc, out, err) = sparse(&[cmd, f]);
        assert_eq!(
            (rc, out, err),
            (1, "".into(), format!("error: cannot read {f}: {enoent}\n"))
        );
    }
    let m = shared().join("conformance/storage/bsr_2x2_seed/matrix.mtx");
    let (rc, _, err) = sparse(&[
        "inspect",
        "--encoding",
        &format!("@{f}"),
        m.to_str().unwrap(),
    ]);
    assert_eq!(
        (rc, err),
        (1, format!("error: cannot read {f}: {enoent}\n"))
    );
}

#[test]
fn encoding_errors_name_the_file_and_show_a_caret() {
    let dir = temp_dir("caret");
    let f = dir.path().join("typo.mlir");
    std::fs::write(
        &f,
        "// CSR, misspelled\n\
         #CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compresed) }>\n",
    )
    .unwrap();
    let f = f.to_str().unwrap();
    let rendered = format!(
        "error: {f}:2:66: unknown level format: compresed\n  \
           |\n\
         2 | #CSR = #sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compresed) }}>\n  \
           | {}^^^^^^^^^\n  \
           |\n  \
           = help: did you mean `compressed`? valid level formats: `dense`, `batch`, \
         `compressed`, `loose_compressed`, `singleton`, `structured[n, m]`\n",
        " ".repeat(65)
    );
    // check: the contract's line on stdout, the rendering on stderr.
    let (rc, out, err) = sparse(&["check", f]);
    assert_eq!(rc, 1);
    assert_eq!(out, "error: 2:66: unknown level format: compresed\n");
    assert_eq!(err, rendered);
    for cmd in ["fmt", "expand"] {
        let (rc, out, err) = sparse(&[cmd, f]);
        assert_eq!((rc, out.as_str()), (1, ""));
        assert_eq!(err, rendered, "{cmd}");
    }
    let m = shared().join("conformance/storage/bsr_2x2_seed/matrix.mtx");
    let m = m.to_str().unwrap();
    for cmd in ["inspect", "spmv"] {
        let (rc, out, err) = sparse(&[cmd, "--encoding", &format!("@{f}"), m]);
        assert_eq!((rc, out.as_str()), (1, ""));
        assert_eq!(err, rendered, "{cmd}");
    }
    // The encoding text itself.
    let enc = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compresed) }>";
    let (rc, _, err) = sparse(&["inspect", "--encoding", enc, m]);
    assert_eq!(rc, 1);
    assert_eq!(
        err,
        "error: <--encoding>:1:59: unknown level format: compresed\n  \
           |\n\
         1 | #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compresed) }>\n  \
           |                                                           ^^^^^^^^^\n  \
           |\n  \
           = help: did you mean `compressed`? valid level formats: `dense`, `batch`, \
         `compressed`, `loose_compressed`, `singleton`, `structured[n, m]`\n"
    );
    // An error at the end of the input points past the last line; a tab stays a tab.
    let f = dir.path().join("cut.mlir");
    std::fs::write(
        &f,
        "#X = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense\n",
    )
    .unwrap();
    let f = f.to_str().unwrap();
    let (rc, out, err) = sparse(&["check", f]);
    assert_eq!(
        (rc, out.as_str()),
        (1, "error: 2:1: expected ')' in level-specifier list\n")
    );
    assert_eq!(
        err,
        format!("error: {f}:2:1: expected ')' in level-specifier list\n  |\n2 |\n  | ^\n")
    );
    let f = dir.path().join("tab.mlir");
    std::fs::write(
        &f,
        "#X = #sparse_tensor.encoding<{\r\n\tmap = (i, j) -> (i : dense, j : bogus)\r\n}>\r\n",
    )
    .unwrap();
    let f = f.to_str().unwrap();
    let (rc, out, err) = sparse(&["check", f]);
    assert_eq!(
        (rc, out.as_str()),
        (1, "error: 2:34: unknown level format: bogus\n")
    );
    assert_eq!(
        err,
        format!(
            "error: {f}:2:34: unknown level format: bogus\n  |\n\
             2 | \tmap = (i, j) -> (i : dense, j : bogus)\n  \
               | \t                                ^^^^^\n  |\n  \
             = help: valid level formats: `dense`, `batch`, `compressed`, `loose_compressed`, \
             `singleton`, `structured[n, m]`\n"
        )
    );
}

#[test]
fn encoding_naming_a_file_without_at_hints_at_it() {
    let dir = temp_dir("hint");
    let f = dir.path().join("csr.mlir");
    std::fs::write(&f, format!("#CSR = {CSR}\n")).unwrap();
    let f = f.to_str().unwrap();
    let m = shared().join("conformance/storage/bsr_2x2_seed/matrix.mtx");
    let (rc, out, err) = sparse(&["inspect", "--encoding", f, m.to_str().unwrap()]);
    assert_eq!((rc, out.as_str()), (1, ""));
    assert_eq!(
        err,
        format!(
            "error: <--encoding>:1:1: expected '#sparse_tensor.encoding'\n  |\n1 | {f}\n  | ^\n\
             help: did you mean @{f}? (--encoding takes @FILE or the encoding text; \
             the file {f} exists)\n"
        )
    );
    // No hint when there is no such file.
    let (rc, _, err) = sparse(&["spmv", "--encoding", "nofile.mlir", m.to_str().unwrap()]);
    assert_eq!(rc, 1);
    assert_eq!(
        err,
        "error: <--encoding>:1:1: expected '#sparse_tensor.encoding'\n  |\n\
         1 | nofile.mlir\n  | ^^^^^^^^^^^\n"
    );
}

#[test]
fn dash_reads_standard_input() {
    let bsr = shared().join("conformance/storage/bsr_2x2_seed");
    let enc = std::fs::read_to_string(bsr.join("encoding.mlir")).unwrap();
    let mtx = std::fs::read_to_string(bsr.join("matrix.mtx")).unwrap();
    let bsr_mtx = bsr.join("matrix.mtx");
    let bsr_mtx = bsr_mtx.to_str().unwrap();
    let printed = "---- Sparse Tensor ----\nnse = 12\ndim = ( 4, 6 )\nlvl = ( 2, 3, 2, 2 )\n\
                   pos[1] : ( 0, 2, 3 )\ncrd[1] : ( 0, 2, 1 )\n\
                   values : ( 1, 2, 0, 3, 4, 0, 0, 5, 6, 7, 8, 0 )\n----\n";
    let canonical = "#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>";
    // check -, fmt -, expand -
    let (rc, out, err) = sparse_stdin(&["check", "-"], &format!("#CSR = {CSR}\n"));
    assert_eq!((rc, out, err), (0, format!("ok: {canonical}\n"), "".into()));
    let bad = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compresed) }>";
    let (rc, out, err) = sparse_stdin(&["check", "-"], bad);
    assert_eq!(
        (rc, out.as_str()),
        (1, "error: 1:59: unknown level format: compresed\n")
    );
    assert!(
        err.starts_with("error: <stdin>:1:59: unknown level format: compresed\n"),
        "{err}"
    );
    let (rc, out, err) = sparse_stdin(&["fmt", "-"], &format!("#CSR = {CSR}\n"));
    assert_eq!(
        (rc, out, err),
        (0, format!("#CSR = {canonical}\n"), "".into())
    );
    let (rc, out, err) = sparse_stdin(&["expand", "-"], &format!("#CSR = {CSR}\n"));
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("pub struct CSR<V = f64> {"), "{out}");
    // --encoding @-
    let (rc, out, err) = sparse_stdin(&["inspect", "--encoding", "@-", bsr_mtx], &enc);
    assert_eq!((rc, out.as_str(), err.as_str()), (0, printed, ""));
    let (rc, _, err) = sparse_stdin(&["inspect", "--encoding", "@-", bsr_mtx], bad);
    assert_eq!(rc, 1);
    assert!(
        err.starts_with("error: <stdin>:1:59: unknown level format: compresed\n"),
        "{err}"
    );
    // The matrix: Matrix Market from standard input.
    let (rc, out, err) = sparse_stdin(&["inspect", "--encoding", &enc, "-"], &mtx);
    assert_eq!((rc, out.as_str(), err.as_str()), (0, printed, ""));
    let small = "%%MatrixMarket matrix coordinate real general\n2 3 3\n1 1 2.5\n1 3 1\n2 2 -1\n";
    let (rc, out, err) = sparse_stdin(&["spmv", "--encoding", CSR, "-"], small);
    assert_eq!((rc, out.as_str(), err.as_str()), (0, "5.5\n-2\n", ""));
    let broken = "%%MatrixMarket matrix coordinate real general\n2 3 1\n1 4 2.5\n";
    let (rc, out, err) = sparse_stdin(&["inspect", "--encoding", CSR, "-"], broken);
    assert_eq!(
        (rc, out.as_str(), err.as_str()),
        (
            1,
            "",
            "error: <stdin>: line 3: column index 4 out of range 1..=3\n"
        )
    );
    // Standard input is read once.
    let (rc, out, err) = sparse_stdin(&["spmv", "--encoding", "@-", "-"], small);
    assert_eq!(
        (rc, out.as_str(), err.as_str()),
        (
            1,
            "",
            "error: standard input can be read only once, but --encoding @- and the matrix - \
             both name it\n"
        )
    );
}

#[test]
fn spmv_x_is_a_file_numbers_or_standard_input() {
    let dir = temp_dir("x");
    let m = dir.path().join("m.mtx");
    let small = "%%MatrixMarket matrix coordinate real general\n2 3 3\n1 1 2.5\n1 3 1\n2 2 -1\n";
    std::fs::write(&m, small).unwrap();
    let m = m.to_str().unwrap();
    let spmv = |x: &str| sparse(&["spmv", "--encoding", CSR, m, "--x", x]);
    let ok = |out: &str| (0, out.to_string(), String::new());
    // The numbers themselves: commas and/or whitespace, a leading minus sign.
    assert_eq!(spmv("1,2,0.1"), ok("2.6\n-2\n"));
    assert_eq!(spmv("1 2\t0.1"), ok("2.6\n-2\n"));
    assert_eq!(spmv("1, 2, 0.1"), ok("2.6\n-2\n"));
    assert_eq!(spmv("-1,2,3"), ok("0.5\n-2\n"));
    // A file, with either separator.
    let x = dir.path().join("x.txt");
    std::fs::write(&x, "1,2\n0.1\n").unwrap();
    let x = x.to_str().unwrap();
    assert_eq!(spmv(x), ok("2.6\n-2\n"));
    // Standard input.
    assert_eq!(
        sparse_stdin(&["spmv", "--encoding", CSR, m, "--x", "-"], "1\n2\n0.1\n"),
        ok("2.6\n-2\n")
    );
    // Errors name where x came from.
    let err = |msg: &str| (1, String::new(), format!("error: {msg}\n"));
    assert_eq!(spmv("1,x,3"), err("--x: x[1] = 'x' is not a number"));
    assert_eq!(
        spmv("nofile.txt"),
        err("--x nofile.txt: no such file, and not a list of numbers")
    );
    assert_eq!(
        spmv("1,2"),
        err(&format!(
            "--x holds 2 numbers, but {m} is 2 x 3: x needs 3, one per column"
        ))
    );
    std::fs::write(x, "1 x 3\n").unwrap();
    assert_eq!(spmv(x), err(&format!("{x}: x[1] = 'x' is not a number")));
    assert_eq!(
        sparse_stdin(&["spmv", "--encoding", CSR, m, "--x", "-"], "7\n"),
        err(&format!(
            "--x - holds 1 number, but {m} is 2 x 3: x needs 3, one per column"
        ))
    );
    assert_eq!(
        sparse_stdin(&["spmv", "--encoding", CSR, "-", "--x", "-"], small),
        err("standard input can be read only once, but the matrix - and --x - both name it")
    );
}

#[test]
fn inspect_summary_prints_sizes_not_values() {
    let storage = shared().join("conformance/storage");
    let seed = storage.join("bsr_2x2_seed/matrix.mtx");
    let seed = seed.to_str().unwrap();
    let summary = |enc: &str, m: &str| {
        let (rc, out, err) = sparse(&["inspect", "--summary", "--encoding", enc, m]);
        assert_eq!((rc, err.as_str()), (0, ""), "{enc}");
        out
    };
    let at = |p: std::path::PathBuf| format!("@{}", p.display());
    assert_eq!(
        summary(&at(storage.join("bsr_2x2_seed/encoding.mlir")), seed),
        "nse = 12\n\
         dim = ( 4, 6 )\n\
         lvl = ( 2, 3, 2, 2 )\n\
         pos[1] : 3 x usize = 24 bytes\n\
         crd[1] : 3 x usize = 24 bytes\n\
         values : 12 x f64 = 96 bytes\n\
         total = 144 bytes\n"
    );
    // Narrow widths.
    let dcsc = shared().join("conformance/encodings/valid/dcsc_widths.mlir");
    assert_eq!(
        summary(&at(dcsc), seed),
        "nse = 8\n\
         dim = ( 4, 6 )\n\
         lvl = ( 6, 4 )\n\
         pos[0] : 2 x u32 = 8 bytes\n\
         crd[0] : 6 x u8 = 6 bytes\n\
         pos[1] : 7 x u32 = 28 bytes\n\
         crd[1] : 8 x u8 = 8 bytes\n\
         values : 8 x f64 = 64 bytes\n\
         total = 114 bytes\n"
    );
    // Packed 2-bit coordinates (2:4 structured).
    let nv = storage.join("nv_24_seed");
    assert_eq!(
        summary(
            &at(nv.join("encoding.mlir")),
            nv.join("matrix.mtx").to_str().unwrap()
        ),
        "nse = 128\n\
         dim = ( 16, 16 )\n\
         lvl = ( 16, 4, 4 )\n\
         crd[2] : 128 x u2 = 32 bytes\n\
         values : 128 x f64 = 1024 bytes\n\
         total = 1056 bytes\n"
    );
    // bcsstk16: seven short lines instead of megabytes of values.
    let csr32 = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), \
                 posWidth = 32, crdWidth = 32 }>";
    assert_eq!(
        summary(csr32, data("bcsstk16.mtx").to_str().unwrap()),
        "nse = 290378\n\
         dim = ( 4884, 4884 )\n\
         lvl = ( 4884, 4884 )\n\
         pos[1] : 4885 x u32 = 19540 bytes\n\
         crd[1] : 290378 x u32 = 1161512 bytes\n\
         values : 290378 x f64 = 2323024 bytes\n\
         total = 3504076 bytes\n"
    );
}

#[test]
fn closed_or_full_standard_output_is_not_a_panic() {
    use std::io::Read;
    use std::process::Stdio;
    let m = data("bcsstk16.mtx");
    let args = ["inspect", "--encoding", CSR, m.to_str().unwrap()];
    // A reader that stops early (`| head -c 100`): megabytes of output, far more than a pipe
    // holds, so the writer meets the closed pipe. The output simply ends.
    let mut child = Command::new(env!("CARGO_BIN_EXE_sparse"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run sparse");
    let mut stdout = child.stdout.take().unwrap();
    let mut head = [0u8; 100];
    stdout.read_exact(&mut head).unwrap();
    assert!(head.starts_with(b"---- Sparse Tensor ----\n"));
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), err.as_ref()), (Some(0), ""));
    // A full device is an error, named.
    if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
        let out = Command::new(env!("CARGO_BIN_EXE_sparse"))
            .args(args)
            .stdout(full)
            .output()
            .expect("run sparse");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            (out.status.code(), err.as_ref()),
            (
                Some(1),
                "error: cannot write to standard output: No space left on device (os error 28)\n"
            )
        );
    }
}

#[test]
fn storage_errors_name_the_tensor_and_the_encoding() {
    let dir = temp_dir("store");
    let m = dir.path().join("m.mtx");
    std::fs::write(
        &m,
        "%%MatrixMarket matrix coordinate real general\n2 3 1\n1 3 2.5\n",
    )
    .unwrap();
    let m = m.to_str().unwrap();
    let vector = "#sparse_tensor.encoding<{ map = (i) -> (i : compressed) }>";
    let (rc, out, err) = sparse(&["inspect", "--encoding", vector, m]);
    assert_eq!((rc, out.as_str()), (1, ""));
    assert_eq!(
        err,
        format!(
            "error: cannot store {m} (2 x 3) in the encoding: \
             rank mismatch: expected 1 dimensions, got 2\n"
        )
    );
    let f = dir.path().join("bsr.mlir");
    std::fs::write(
        &f,
        "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : \
         compressed, i mod 2 : dense, j mod 2 : dense) }>",
    )
    .unwrap();
    let f = f.to_str().unwrap();
    let (rc, out, err) = sparse(&["spmv", "--encoding", &format!("@{f}"), m]);
    assert_eq!((rc, out.as_str()), (1, ""));
    assert_eq!(
        err,
        format!(
            "error: cannot store {m} (2 x 3) in the encoding of {f}: \
             dimension 1 of size 3 is not a multiple of the block size 2\n"
        )
    );
}

#[test]
fn encoding_at_without_a_file_name() {
    let m = shared().join("conformance/storage/bsr_2x2_seed/matrix.mtx");
    let (rc, out, err) = sparse(&["inspect", "--encoding", "@", m.to_str().unwrap()]);
    assert_eq!(
        (rc, out.as_str(), err.as_str()),
        (
            1,
            "",
            "error: --encoding @ names no file (write @FILE, or @- for standard input)\n"
        )
    );
}

#[test]
fn usage_errors_exit_1_and_help_exits_0() {
    for args in [
        &["eval"][..],
        &["--bogus"],
        &["compressed", "check"],
        &["quant"],
        &["sparsecore"],
    ] {
        let (code, out, err) = sparse(args);
        assert_eq!((code, out.as_str()), (1, ""), "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
    let (code, out, _) = sparse(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Usage: sparse"), "{out}");
}

#[test]
fn inspect_and_eval_read_scipy_npz() {
    let data = |f: &str| format!("{}/../data/scipy/{f}", env!("CARGO_MANIFEST_DIR"));
    let csr = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>";
    let (code, out, err) = sparse(&["inspect", "--encoding", csr, &data("csr.npz")]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        "---- Sparse Tensor ----\nnse = 7\ndim = ( 4, 6 )\nlvl = ( 4, 6 )\n\
         pos[1] : ( 0, 2, 4, 5, 7 )\ncrd[1] : ( 0, 4, 1, 5, 2, 0, 3 )\n\
         values : ( 1, 2, 3, 4, 5, 6, 7 )\n----\n"
    );
    let a = format!("A=tensor<4x6xf64, {csr}>");
    let input = format!("A={}", data("csc.npz"));
    let args = [
        "eval",
        "y(i) = A(i,j)",
        "--tensor",
        &a,
        "--tensor",
        "y=tensor<4xf64>",
    ];
    let (code, out, err) = sparse(&[&args[..], &["--input", &input]].concat());
    assert_eq!(
        (code, err.as_str(), out.as_str()),
        (0, "", "( 3, 7, 5, 13 )\n")
    );
    let (code, _, err) = sparse(&["inspect", "--encoding", csr, "/nonexistent/m.npz"]);
    assert_eq!(code, 1);
    assert!(err.starts_with("error: /nonexistent/m.npz: "), "{err}");
}

#[test]
fn fmt_and_expand_keep_a_sparsecore_clause() {
    let clause = "sparsecore(chip = v5p, max_ids_per_partition = 256, \
                  max_unique_ids_per_partition = 64, feature_width = 128, batch = 4096)";
    let text = format!("#Lookup = {CSR}\n  {}\n", clause.replace(", ", ",\n    "));
    let (rc, out, err) = sparse_stdin(&["fmt", "-"], &text);
    let canonical = "#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>";
    assert_eq!(
        (rc, out, err),
        (0, format!("#Lookup = {canonical} {clause}\n"), "".into())
    );
    let (rc, out, err) = sparse_stdin(&["expand", "-"], &text);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("chip: &rt::sparsecore::chip::V5P,"), "{out}");
    // (524288 - 131072 - 224) / 1024: the limits' partition share (224 bytes) is a fixed
    // allocation of every tile
    assert!(out.contains("staging_rows: 383u64,"), "{out}");
    assert!(out.contains("partition_bytes: 224u64,"), "{out}");
    let (rc, _, err) = sparse_stdin(
        &["fmt", "-"],
        &text.replace("4096", "8192").replace("v5p", "v4"),
    );
    assert_eq!(rc, 1);
    assert!(
        err.starts_with(
            "error: <stdin>:2:3: Gather operand too large: (sample_count * feature_width) / tiles \
             = 262144 bytes per tile exceeds TileSpmem (163840 bytes)"
        ),
        "{err}"
    );
}

/// A pattern format (`explicitVal`): no values array; the print gives the constant per stored
/// entry, the summary no value bytes, a value other than the constant is an error.
#[test]
fn inspect_pattern_format() {
    let dir = temp_dir("pattern");
    let pattern = dir.path().join("p.mtx");
    std::fs::write(
        &pattern,
        "%%MatrixMarket matrix coordinate pattern general\n3 4 4\n1 2\n1 4\n3 1\n3 3\n",
    )
    .unwrap();
    let real = dir.path().join("a.mtx");
    std::fs::write(
        &real,
        "%%MatrixMarket matrix coordinate real general\n3 4 2\n1 2 1\n3 3 2.5\n",
    )
    .unwrap();
    let enc = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), explicitVal = 1.0 : f64, implicitVal = 0.0 : f64 }>";
    let (rc, out, err) = sparse(&["inspect", "--encoding", enc, pattern.to_str().unwrap()]);
    assert_eq!((rc, err.as_str()), (0, ""));
    assert_eq!(
        out,
        "---- Sparse Tensor ----\nnse = 4\ndim = ( 3, 4 )\nlvl = ( 3, 4 )\npos[1] : ( 0, 2, 2, 4 )\ncrd[1] : ( 1, 3, 0, 2 )\nvalues : ( 1, 1, 1, 1 )\n----\n"
    );
    let (rc, out, err) = sparse(&[
        "inspect",
        "--summary",
        "--encoding",
        enc,
        pattern.to_str().unwrap(),
    ]);
    assert_eq!((rc, err.as_str()), (0, ""));
    assert_eq!(
        out,
        "nse = 4\n\
         dim = ( 3, 4 )\n\
         lvl = ( 3, 4 )\n\
         pos[1] : 4 x usize = 32 bytes\n\
         crd[1] : 4 x usize = 32 bytes\n\
         values : none (explicitVal = 1)\n\
         total = 64 bytes\n"
    );
    let (rc, out, err) = sparse(&["inspect", "--encoding", enc, real.to_str().unwrap()]);
    assert_eq!((rc, out.as_str()), (1, ""));
    assert_eq!(
        err,
        format!(
            "error: cannot store {} (3 x 4) in the encoding: entry at [2, 2]: value 2.5 differs from explicitVal 1\n",
            real.display()
        )
    );
}
