//! Compile-fail tests: bad encodings and kernels in `sparse_format!` are compile errors at the
//! offending token, with MLIR's (or the sparsifier's) message. The expected compiler output is pinned in `tests/ui/*.stderr`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
