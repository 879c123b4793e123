//! `sparse advise` (issue 12): the report on real matrices, the candidates offered for
//! hand-made structures, and every error. (That the recommendation is the fastest in a repeated
//! measurement is a unit test of `src/advise.rs`, which can call the measuring function.)

#[path = "../../sparse-tests/tests/common/mod.rs"]
mod common;

mod run;
use run::sparse;

use common::data;

/// A fresh empty directory `sparse-advise-{test}-*` for one test, removed when dropped.
fn temp_dir(test: &str) -> tempfile::TempDir {
    run::temp_dir("advise", test)
}

/// Writes a general real Matrix Market file of `entries` (0-based) into `dir`.
fn write_mtx(
    dir: &std::path::Path,
    name: &str,
    shape: [usize; 2],
    entries: &[(usize, usize)],
) -> String {
    let mut text = format!(
        "%%MatrixMarket matrix coordinate real general\n{} {} {}\n",
        shape[0],
        shape[1],
        entries.len()
    );
    for (k, (i, j)) in entries.iter().enumerate() {
        text.push_str(&format!("{} {} {}\n", i + 1, j + 1, 1 + k % 5));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// The table rows of a report: the lines between the column header and the probe row, as
/// (format name, fill column).
fn table(out: &str) -> Vec<(String, String)> {
    out.lines()
        .skip_while(|l| !l.starts_with("format "))
        .skip(1)
        .take_while(|l| !l.starts_with("probe "))
        .map(|l| {
            // The name column is 12 characters wide (names such as `CSR u32` hold a space).
            let (name, rest) = l.split_at(12);
            let fill = rest.split_whitespace().nth(1).expect("a fill column");
            (name.trim().to_string(), fill.to_string())
        })
        .collect()
}

/// Checks the kernel line: `kernel: WHAT; N interleaved rounds, median per candidate` with N
/// from 7 to 41 (the number depends on the machine's speed).
fn rounds(line: &str, what: &str) -> Option<()> {
    let n: usize = line
        .strip_prefix(&format!("kernel: {what}; "))?
        .strip_suffix(" interleaved rounds, median per candidate")?
        .parse()
        .ok()?;
    (7..=41).contains(&n).then_some(())
}

/// Runs `sparse advise ARGS`, asserts success and an empty stderr (no terminal: no progress
/// bar), returns stdout.
fn advise_ok(args: &[&str]) -> String {
    let mut all = vec!["advise"];
    all.extend_from_slice(args);
    let (code, out, err) = sparse(&all);
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(err, "");
    out
}

/// The report on a real matrix: header, a CSR u32 row, the fastest marked, and a recommended
/// encoding that `sparse check` accepts as it is printed.
fn real_matrix(name: &str, header: &str, narrow: &str) {
    let path = data(name);
    let path = path.to_str().unwrap();
    let out = advise_ok(&[path]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("{path}: {header}"), "{out}");
    assert_eq!(
        rounds(lines[1], "spmv (y = A·x), 1 thread"),
        Some(()),
        "{out}"
    );
    let rows = table(&out);
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["CSR u32", narrow], "{out}");
    assert!(rows.iter().all(|(_, fill)| fill == "1.00"));
    let fastest: Vec<&&str> = lines.iter().filter(|l| l.ends_with("<- fastest")).collect();
    assert_eq!(fastest.len(), 1, "{out}");
    let n = lines.len();
    let recommended = lines[n - 2].strip_prefix("recommended: ").expect(&out);
    assert!(fastest[0].starts_with(recommended.split(" (").next().unwrap()));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("bytes model: GB/s = (the format's stored bytes")));
    // The line to paste: `pub Csr = ENCODING;`, ENCODING valid and canonical.
    let paste = lines[n - 1];
    let encoding = paste
        .strip_prefix("pub Csr = ")
        .and_then(|e| e.strip_suffix(';'))
        .expect(paste);
    let dir = temp_dir(name);
    let file = dir.path().join("rec.mlir");
    std::fs::write(&file, format!("#Csr = {encoding}\n")).unwrap();
    let (code, out, err) = sparse(&["check", file.to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, format!("ok: {encoding}\n"));
    assert!(encoding.starts_with(
        "#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed), posWidth = 32, crdWidth = "
    ));
}

#[test]
fn west0067_report() {
    real_matrix(
        "west0067.mtx",
        "67 x 67, 294 entries (per row: mean 4.4, max 6; 0 empty rows)",
        "CSR p32/c8",
    );
}

#[test]
fn lp_afiro_report() {
    real_matrix(
        "lp_afiro.mtx",
        "27 x 51, 102 entries (per row: mean 3.8, max 10; 0 empty rows)",
        "CSR p32/c8",
    );
}

/// A 60 x 60 matrix of 20 dense 3x3 blocks on the diagonal, written as `blocks.mtx` in a
/// fresh directory named after `name` (kept alive by the returned guard).
fn diagonal_blocks(name: &str) -> (tempfile::TempDir, String) {
    let entries: Vec<(usize, usize)> = (0..20)
        .flat_map(|b| (0..9).map(move |k| (3 * b + k / 3, 3 * b + k % 3)))
        .collect();
    let dir = temp_dir(name);
    let path = write_mtx(dir.path(), "blocks.mtx", [60, 60], &entries);
    (dir, path)
}

#[test]
fn block_diagonal_offers_bsr3_and_ell() {
    // 20 dense 3x3 blocks on the diagonal: BSR 3x3 stores no zero, 2x2 and 4x4 tiles do.
    let (_dir, path) = diagonal_blocks("blocks");
    let out = advise_ok(&["--kernel", "spmm", "--threads", "2", &path]);
    assert!(
        out.contains("note: spmm_par splits the rows of C over the threads for the formats whose outermost level runs over those rows (CSR, BSR's block rows, 2:4); the other formats run on 1 thread\n"),
        "{out}"
    );
    let rows = table(&out);
    let want: Vec<(String, String)> = [
        ("CSR u32", "1.00"),
        ("CSR p32/c8", "1.00"),
        ("ELL 4", "1.00"),
        ("BSR 3x3", "1.00"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(rows, want, "{out}");
    let not: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("not offered: "))
        .collect();
    assert_eq!(
        not,
        [
            "DCSR: 0 of 60 rows empty, not more than half",
            "BSR 2x2: fill 1.56, not below 1.5",
            "BSR 4x4: fill 3.11, not below 1.5",
            "2:4: a group of 4 columns of a row holds 3 entries",
        ],
        "{out}"
    );
    let kernel = out.lines().nth(1).unwrap();
    assert_eq!(
        rounds(kernel, "spmm_par (C = A·B, B 60 x 16 row-major), 2 threads"),
        Some(()),
        "{out}"
    );
    assert!(out.contains("+ B + C, 15360 bytes) / median time"));
}

#[test]
fn transposed_product_offers_csc() {
    // the same 20 blocks: `y = Aᵀ·x` offers CSC beside the row formats and BSC beside BSR,
    // with the parallel kernel on 2 threads (CSC's columns split, the row formats serial)
    let (_dir, path) = diagonal_blocks("transposed");
    let out = advise_ok(&["--kernel", "spmv-transpose", "--threads", "2", &path]);
    let names: Vec<String> = table(&out).into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        names,
        [
            "CSR u32",
            "CSR p32/c8",
            "CSC u32",
            "CSC p32/c8",
            "ELL 4",
            "BSR 3x3",
            "BSC 3x3"
        ],
        "{out}"
    );
    let kernel = out.lines().nth(1).unwrap();
    assert_eq!(
        rounds(kernel, "spmv_transpose_par (y = Aᵀ·x), 2 threads"),
        Some(()),
        "{out}"
    );
    assert!(
        out.contains("note: spmv_transpose_par splits the columns of the column formats (CSC, BSC) over the threads; the other formats scatter into y and run on 1 thread\n"),
        "{out}"
    );
    // on 1 thread: the serial kernel, no note
    let out = advise_ok(&["--kernel", "spmv-transpose", &path]);
    let kernel = out.lines().nth(1).unwrap();
    assert_eq!(
        rounds(kernel, "spmv_transpose (y = Aᵀ·x), 1 thread"),
        Some(()),
        "{out}"
    );
    assert!(!out.contains("note: spmv_transpose_par"), "{out}");
}

#[test]
fn mostly_empty_rows_offer_dcsr_not_ell() {
    // 90 of 100 rows empty; the others hold 5 entries each.
    let entries: Vec<(usize, usize)> = (0..10)
        .flat_map(|r| (0..5).map(move |k| (10 * r, (r + 17 * k) % 100)))
        .collect();
    let dir = temp_dir("dcsr");
    let path = write_mtx(dir.path(), "dcsr.mtx", [100, 100], &entries);
    let out = advise_ok(&[&path]);
    assert!(out.starts_with(&format!(
        "{path}: 100 x 100, 50 entries (per row: mean 0.5, max 5; 90 empty rows)\n"
    )));
    let names: Vec<String> = table(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["CSR u32", "CSR p32/c8", "DCSR"], "{out}");
    assert!(
        out.contains("not offered: ELL: the longest row (5) is more than 1.25 x the mean (0.5)\n")
    );
    assert!(!out.contains("not offered: DCSR"));
}

#[test]
fn irregular_rows_offer_no_ell_and_wide_columns_keep_csr_u32_only() {
    // A full first row over 70,000 columns, then one entry per row: irregular, and too many
    // columns for 16-bit coordinates.
    let mut entries: Vec<(usize, usize)> = (0..70_000).map(|j| (0, j)).collect();
    entries.extend((1..40).map(|i| (i, 3 * i)));
    let dir = temp_dir("irregular");
    let path = write_mtx(dir.path(), "irregular.mtx", [40, 70_000], &entries);
    let out = advise_ok(&[&path]);
    let names: Vec<String> = table(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["CSR u32"], "{out}");
    assert!(out.contains(
        "not offered: ELL: the longest row (70000) is more than 1.25 x the mean (1751.0)\n"
    ));
    assert!(out.contains("recommended: CSR u32 (1.00x CSR u32)\n"));
}

#[test]
fn two_of_four_pattern_offers_2_4() {
    // Every row: columns 0, 1, 4, 5 of 8: two entries per group of 4, and dense 2x2 blocks.
    let entries: Vec<(usize, usize)> = (0..8).flat_map(|i| [0, 1, 4, 5].map(|j| (i, j))).collect();
    let dir = temp_dir("nv24");
    let path = write_mtx(dir.path(), "nv24.mtx", [8, 8], &entries);
    let out = advise_ok(&[&path]);
    let rows = table(&out);
    assert_eq!(
        rows.iter()
            .map(|(n, f)| format!("{n} {f}"))
            .collect::<Vec<_>>(),
        [
            "CSR u32 1.00",
            "CSR p32/c8 1.00",
            "ELL 4 1.00",
            "BSR 2x2 1.00",
            "2:4 1.00"
        ],
        "{out}"
    );
}

#[test]
fn a_block_size_that_does_not_divide_the_shape_is_skipped_with_a_note() {
    // 3x3 blocks on the diagonal of a 10 x 10 matrix (plus (9, 9)): BSR 3x3's fill is low, but
    // 3 does not divide 10.
    let mut entries: Vec<(usize, usize)> = (0..3)
        .flat_map(|b| (0..9).map(move |k| (3 * b + k / 3, 3 * b + k % 3)))
        .collect();
    entries.push((9, 9));
    let dir = temp_dir("skip");
    let path = write_mtx(dir.path(), "skip.mtx", [10, 10], &entries);
    let out = advise_ok(&[&path]);
    let names: Vec<String> = table(&out).into_iter().map(|(n, _)| n).collect();
    assert!(!names.contains(&"BSR 3x3".to_string()), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("skipped: BSR 3x3: cannot store the matrix: ")),
        "{out}"
    );
}

/// `sparse advise ARGS` fails with exit status 1, nothing on stdout, and `error: ` first on
/// stderr; returns stderr.
fn advise_err(args: &[&str]) -> String {
    let mut all = vec!["advise"];
    all.extend_from_slice(args);
    let (code, out, err) = sparse(&all);
    assert_eq!(code, 1, "stdout: {out} stderr: {err}");
    assert_eq!(out, "");
    assert!(err.starts_with("error: "), "{err}");
    err
}

#[test]
fn errors() {
    let west = data("west0067.mtx");
    let west = west.to_str().unwrap();
    let err = advise_err(&["/no/such/matrix.mtx"]);
    assert_eq!(
        err,
        "error: cannot open /no/such/matrix.mtx: No such file or directory (os error 2)\n"
    );
    let err = advise_err(&[west, "--kernel", "spgemm"]);
    assert!(err.starts_with("error: invalid value 'spgemm' for '--kernel <KERNEL>'\n  [possible values: spmv, spmv-transpose, spmm]\n"), "{err}");
    let err = advise_err(&[west, "--threads", "0"]);
    assert!(err.starts_with(
        "error: invalid value '0' for '--threads <N>': must be at least 1 (1 runs the serial kernel)\n"
    ), "{err}");
    let err = advise_err(&[west, "--threads", "two"]);
    assert!(
        err.starts_with(
            "error: invalid value 'two' for '--threads <N>': not a whole number of threads\n"
        ),
        "{err}"
    );
    let dir = temp_dir("errors");
    let empty = write_mtx(dir.path(), "empty.mtx", [3, 3], &[]);
    let err = advise_err(&[&empty]);
    assert_eq!(
        err,
        format!("error: {empty} (3 x 3) has no entries: there is nothing to measure\n")
    );
    let bad = dir.path().join("bad.mtx");
    std::fs::write(&bad, "not a matrix\n").unwrap();
    let bad = bad.to_str().unwrap();
    let err = advise_err(&[bad]);
    assert!(err.starts_with(&format!("error: {bad}: ")), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
