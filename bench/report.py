#!/usr/bin/env python3
"""Prints a markdown table of the last `cargo bench` run from target/criterion.

median = criterion's median time per SpMV; GB/s = (storage bytes + x + y bytes) / median,
with 1 GB = 1e9 bytes; "vs ours Csr" = median / median of "ours Csr (u32,u32)" on the same
matrix (> 1 means slower than our CSR).

    python3 bench/report.py [path/to/target/criterion]
"""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "target" / "criterion")
GROUPS = ["cryg2500", "bcsstk13", "bayer10", "bcsstk16", "synthetic kron(I20,bcsstk16)"]
ORDER = [
    "ours Csr (u32,u32)", "ours Csr16 (u32,u16)", "ours Bsr 2x2", "ours Coo", "ours DynamicStorage csr",
    "sprs CsMatI<u32>", "nalgebra-sparse CsrMatrix", "faer SparseRowMat<u32>", "faer SparseColMat<u32>",
]


def fmt_time(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} µs"


rows = {}
for bench in root.glob("*/*/new/benchmark.json"):
    meta = json.loads(bench.read_text())
    est = json.loads((bench.parent / "estimates.json").read_text())
    rows[(meta["group_id"], meta["function_id"])] = (est["median"]["point_estimate"], meta["throughput"]["Bytes"])

print("| matrix | implementation | median | GB/s | vs ours Csr |")
print("|---|---|---:|---:|---:|")
for g in GROUPS + sorted({g for g, _ in rows} - set(GROUPS)):
    base = rows.get((g, ORDER[0]))
    for f in ORDER + sorted({f for gg, f in rows if gg == g} - set(ORDER)):
        if (g, f) not in rows:
            continue
        ns, nbytes = rows[(g, f)]
        ratio = f"{ns / base[0]:.2f}x" if base else "-"
        print(f"| {g} | {f} | {fmt_time(ns)} | {nbytes / ns:.1f} | {ratio} |")
