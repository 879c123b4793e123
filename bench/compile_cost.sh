#!/usr/bin/env bash
# Compile cost of `sparse_format!` (issue 12): a user crate declaring 20 formats and 10 kernels
# against the same crate with an empty `main`, both depending on this checkout's `sparse`.
# Each is built once (dependencies warm), then a constant in `src/main.rs` is edited and the
# crate rebuilt, release profile, incremental (the macro runs again on every rebuild; the code
# it generated is reused where it did not change); the rebuild times are compared (best of RUNS
# rebuilds each). The same rebuilds without incremental compilation (every generated function
# compiled again) are reported beside them.
#
#   bash bench/compile_cost.sh            # prints the times and the difference, exits 1 above 3 s
#   RUNS=5 bash bench/compile_cost.sh
#
# The crates live in a temporary directory with one shared target directory, so `sparse`, the
# macro crate and every other dependency are compiled once and reused by both.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-3}"
limit="${LIMIT_SECONDS:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="$work/target"
export CARGO_INCREMENTAL=1

crate() {
    # crate NAME: a binary crate depending on this checkout's `sparse`
    mkdir -p "$work/$1/src"
    cat > "$work/$1/Cargo.toml" <<EOF
[package]
name = "$1"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
sparse = { path = "$root" }

[profile.release]
incremental = true
EOF
}

crate empty
cat > "$work/empty/src/main.rs" <<'EOF'
fn main() {
    println!("{}", std::hint::black_box(1));
}
EOF

crate formats
cat > "$work/formats/src/main.rs" <<'EOF'
sparse::sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    pub Csr32 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    pub Csr16 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16 }>;
    pub Csr8 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 16, crdWidth = 8 }>;
    pub Csc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>;
    pub Dcsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>;
    pub Dcsc = #sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed) }>;
    pub Coo = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>;
    pub CooSoa = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)) }>;
    pub Bsr2 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>;
    pub Bsr3 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 3 : dense, j floordiv 3 : compressed, i mod 3 : dense, j mod 3 : dense) }>;
    pub Bsc2 = #sparse_tensor.encoding<{ map = (i, j) -> (j floordiv 2 : dense, i floordiv 2 : compressed, j mod 2 : dense, i mod 2 : dense) }>;
    pub Ell = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 8 * i : dense, i : dense, j : compressed) }>;
    pub Nv24 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4) }>;
    pub Loose = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>;
    pub Unordered = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed(nonordered)) }>;
    pub Dense = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>;
    pub Batched = #sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : compressed) }>;
    pub Csf = #sparse_tensor.encoding<{ map = (i, j, k) -> (i : compressed, j : compressed, k : compressed) }>;
    pub SparseVector = #sparse_tensor.encoding<{ map = (i) -> (i : compressed) }>;

    pub kernel spmv(y: &mut [f64], a: &Csr<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel spmv_bsr(y: &mut [f64], a: &Bsr3<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel spgemm(c: &mut Csr32<f64>, a: &Csr32<f64>, b: &Csr32<f64>) { c(i, j) = a(i, k) * b(k, j) }
    pub kernel add(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel sddmm(c: &mut Csr<f64>, s: &Csr<f64>, a: &Dense<f64>, b: &Dense<f64>) { c(i, j) = s(i, j) * a(i, k) * b(j, k) }
    pub kernel rowmin(m: &mut [f64], a: &Csr<f64>) { m(i) = min(j, a(i, j)) }
    pub kernel spmm(c: &mut Dense<f64>, a: &Ell<f64>, b: &Dense<f64>) { c(i, j) = a(i, k) * b(k, j) }
    pub kernel transpose(c: &mut Dcsr<f64>, a: &Coo<f64>) { c(j, i) = a(i, j) }
    pub kernel ttv(c: &mut Dcsr<f64>, a: &Csf<f64>, v: &[f64]) { c(i, j) = a(i, j, k) * v(k) }
    pub kernel dot(s: &mut f64, a: &SparseVector<f64>, b: &SparseVector<f64>) { s = a(i) * b(i) }
}

fn main() {
    let a = Csr::<f64>::from_coo([2, 2], [([0, 0], 1.0), ([1, 1], 2.0)]).unwrap();
    let mut y = [0.0; 2];
    spmv(&mut y, &a, &[1.0, 1.0]).unwrap();
    println!("{y:?} {}", std::hint::black_box(1));
}
EOF

# best of `runs` rebuilds of crate $1 after an edit of its main.rs, in seconds
# (CARGO_INCREMENTAL as set by the caller)
rebuild() {
    (cd "$work/$1" && cargo build --release --quiet)
    local best=""
    for n in $(seq "$runs"); do
        sed -i "s/black_box([0-9]*)/black_box($RANDOM$n)/" "$work/$1/src/main.rs"
        local s e t
        s=$(date +%s.%N)
        (cd "$work/$1" && cargo build --release --quiet)
        e=$(date +%s.%N)
        t=$(echo "$e - $s" | bc)
        if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
    done
    echo "$best"
}

empty=$(rebuild empty)
formats=$(rebuild formats)
diff=$(echo "$formats - $empty" | bc)
export CARGO_INCREMENTAL=0
full_empty=$(rebuild empty)
full_formats=$(rebuild formats)
printf 'release rebuild after an edit of main.rs, best of %d:\n' "$runs"
printf '                             incremental   not incremental\n'
printf 'empty crate:                 %8.2f s    %8.2f s\n' "$empty" "$full_empty"
printf '20 formats and 10 kernels:   %8.2f s    %8.2f s\n' "$formats" "$full_formats"
printf 'difference (incremental):    %.2f s (target: under %s s)\n' "$diff" "$limit"
if [ "$(echo "$diff < $limit" | bc)" = 1 ]; then
    echo "met"
else
    echo "not met"
    exit 1
fi
