//! Peak memory of assembling a CSR with many (mostly empty) rows, the case where the positions
//! array dominates: run it under `/usr/bin/time -v` and read "Maximum resident set size".
//!
//! ```text
//! cargo build --release --example build_peak
//! /usr/bin/time -v target/release/examples/build_peak dynamic 50000000
//! /usr/bin/time -v target/release/examples/build_peak generated 50000000
//! ```
//!
//! Modes: `dynamic` (`DynamicStorage`, native positions), `dynamic64` (`posWidth = 64`),
//! `generated` (a `sparse_format!` CSR, native positions), `generated64` (`posWidth = 64`),
//! `batched` (a generated batched CSR, 2 batches of `rows / 2` rows, 64-bit positions),
//! `dynamic-batched` (the same through `DynamicStorage`). The
//! matrix has `rows` rows and 4 columns with one entry every 1000 rows; the positions array holds
//! `rows + 1` 8-byte numbers (400 MB for 5e7 rows). Prints the bytes the arrays hold.

use sparse::runtime::{CooTensor, DynamicStorage};

sparse::sparse_format! {
    /// CSR, native positions and coordinates.
    pub CsrNative = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    /// CSR, 64-bit positions and 32-bit coordinates.
    pub Csr64 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 32 }>;
    /// Batched CSR, 64-bit positions.
    pub BatchCsr64 = #sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : compressed), posWidth = 64 }>;
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "dynamic".into());
    let rows: usize = args
        .next()
        .map(|r| r.parse().expect("rows: a number"))
        .unwrap_or(50_000_000);
    let entries = (0..rows).step_by(1000).map(|i| ([i, i % 4], 1.0f64));
    let bytes = match mode.as_str() {
        "dynamic" | "dynamic64" => {
            let enc = if mode == "dynamic" {
                CsrNative::<f64>::encoding()
            } else {
                Csr64::<f64>::encoding()
            };
            let mut coo = CooTensor::new(vec![rows, 4]);
            for (c, v) in entries {
                coo.push(&c, v);
            }
            DynamicStorage::from_coo(&enc.verify().expect("verified"), &coo)
                .expect("builds")
                .memory_bytes()
        }
        "generated" => CsrNative::<f64>::from_coo([rows, 4], entries)
            .expect("builds")
            .memory_bytes(),
        "generated64" => Csr64::<f64>::from_coo([rows, 4], entries)
            .expect("builds")
            .memory_bytes(),
        "batched" | "dynamic-batched" => {
            let half = rows / 2;
            let batched = (0..2).flat_map(|b| {
                (0..half)
                    .step_by(1000)
                    .map(move |i| ([b, i, i % 4], 1.0f64))
            });
            if mode == "batched" {
                BatchCsr64::<f64>::from_coo([2, half, 4], batched)
                    .expect("builds")
                    .memory_bytes()
            } else {
                let mut coo = CooTensor::new(vec![2, half, 4]);
                for (c, v) in batched {
                    coo.push(&c, v);
                }
                DynamicStorage::from_coo(
                    &BatchCsr64::<f64>::encoding().verify().expect("verified"),
                    &coo,
                )
                .expect("builds")
                .memory_bytes()
            }
        }
        other => {
            eprintln!(
                "unknown mode {other}: dynamic, dynamic64, generated, generated64, batched, \
                 dynamic-batched"
            );
            std::process::exit(2);
        }
    };
    println!("{mode}: {rows} rows, arrays hold {bytes} bytes");
}
