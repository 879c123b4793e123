//! Runs the `sparse` binary of this package: `(exit status, stdout, stderr)`.

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
