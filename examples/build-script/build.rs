//! Generates the structs of `formats.mlir` into `OUT_DIR/formats.rs`.
fn main() {
    if let Err(e) = sparse_dsl::build::compile("formats.mlir") {
        // One `FILE:LINE:COL: MESSAGE` line per problem, then fail the build.
        for line in e.to_string().lines() {
            println!("cargo:warning={line}");
        }
        std::process::exit(1);
    }
}
