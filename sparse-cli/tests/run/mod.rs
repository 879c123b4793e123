//! Runs the `sparse` binary of this package: `(exit status, stdout, stderr)`; and the
//! temporary files the tests give it.

use std::process::Command;

/// `sparse ARGS...`; the status is -1 if the process was killed by a signal.
pub fn sparse(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sparse"))
        .args(args)
        .output()
        .expect("run sparse");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A fresh empty directory `sparse-{kind}-{test}-*` in the temporary directory, for one test's
/// files; removed when dropped (a failing test's too).
#[allow(dead_code)] // not every test binary including this module writes files
pub fn temp_dir(kind: &str, test: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("sparse-{kind}-{test}-"))
        .tempdir()
        .unwrap()
}

/// Writes `text` to a file named `name` in `dir`; returns its path.
#[allow(dead_code)] // as `temp_dir`
pub fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}
