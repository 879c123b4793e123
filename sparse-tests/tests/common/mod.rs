//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

/// `../shared` beside the repository (the workspace root: the first folder up from the test's
/// package that holds `Cargo.lock`).
pub fn shared() -> PathBuf {
    let package = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = package
        .ancestors()
        .find(|d| d.join("Cargo.lock").exists())
        .unwrap_or(&package);
    root.join("../shared")
}

/// A real matrix from `../shared/data`.
pub fn data(name: &str) -> PathBuf {
    shared().join("data").join(name)
}

/// The `sparse_tensor.print` lines of `text` as `key -> numbers`, in order.
pub fn parse_print(text: &str) -> Vec<(String, Vec<f64>)> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        let Some((key, rest)) = line.split_once([':', '=']) else {
            continue;
        };
        let key = key.trim();
        let known = ["nse", "dim", "lvl", "values"].contains(&key)
            || key.starts_with("pos[")
            || key.starts_with("crd[");
        if !known {
            continue;
        }
        let nums = rest
            .split(|c: char| c == ',' || c == '(' || c == ')' || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .map(|w| {
                w.parse::<f64>()
                    .unwrap_or_else(|_| panic!("not a number in '{line}': {w}"))
            })
            .collect();
        out.push((key.to_string(), nums));
    }
    out
}

/// Asserts that `got` (our print) matches `expected` (a conformance `expected.txt`): same lines in
/// the same order, integers exact, values to a relative 1e-12.
pub fn assert_print_matches(got: &str, expected: &str, case: &str) {
    let (g, e) = (parse_print(got), parse_print(expected));
    let gk: Vec<&str> = g.iter().map(|(k, _)| k.as_str()).collect();
    let ek: Vec<&str> = e.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(gk, ek, "{case}: printed lines differ");
    assert!(
        got.starts_with("---- Sparse Tensor ----\n"),
        "{case}: header"
    );
    for ((k, a), (_, b)) in g.iter().zip(&e) {
        assert_eq!(a.len(), b.len(), "{case}: {k} length");
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            let tol = if k == "values" {
                1e-12 * y.abs().max(1.0)
            } else {
                0.0
            };
            assert!((x - y).abs() <= tol, "{case}: {k}[{i}] = {x}, expected {y}");
        }
    }
}

/// The storage cases of `../shared/conformance/storage`: `(name, encoding text, matrix path,
/// expected print)`.
pub fn storage_cases() -> BTreeMap<String, (String, PathBuf, String)> {
    let dir = shared().join("conformance/storage");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("../shared/conformance/storage") {
        let case = entry.unwrap().path();
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let enc = std::fs::read_to_string(case.join("encoding.mlir")).unwrap();
        let mtx = if case.join("matrix.mtx").exists() {
            case.join("matrix.mtx")
        } else {
            case.join(
                std::fs::read_to_string(case.join("matrix.txt"))
                    .unwrap()
                    .trim(),
            )
        };
        let expected = std::fs::read_to_string(case.join("expected.txt")).unwrap();
        out.insert(name, (enc, mtx, expected));
    }
    out
}
