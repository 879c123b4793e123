//! Benchmarks live in `benches/spmv.rs`; see README.md.
