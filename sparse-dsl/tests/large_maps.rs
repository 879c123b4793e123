//! Maps with tens of thousands of dimensions: checking them is linear in the size of the map
//! (issue 13, item 4: `check` was quadratic in the number of dimensions). No timing here; the
//! results are exact.

use sparse_dsl::ir::{AffineExpr, AffineMap, LevelFormat, LevelType};
use sparse_dsl::parse::parse_encoding;

const N: usize = 20_000;

fn join(n: usize, f: impl Fn(usize) -> String) -> String {
    (0..n).map(f).collect::<Vec<_>>().join(", ")
}

#[test]
fn identity_map_with_20000_dimensions() {
    let text = format!(
        "#sparse_tensor.encoding<{{ map = ({}) -> ({}) }}>",
        join(N, |d| format!("d{d}")),
        join(N, |d| format!("d{d} : dense")),
    );
    let e = parse_encoding(&text).unwrap().encoding;
    assert_eq!(e.dim_to_lvl, AffineMap::identity(N));
    assert_eq!(e.lvl_to_dim, AffineMap::identity(N));
    assert_eq!(e.lvl_types, vec![LevelType::new(LevelFormat::Dense); N]);
    // the canonical text is the input (the inverse is the inferred one, so not printed)
    assert_eq!(e.to_string(), text);
}

#[test]
fn reversed_permutation_with_20000_dimensions() {
    let text = format!(
        "#sparse_tensor.encoding<{{ map = ({}) -> ({}) }}>",
        join(N, |d| format!("d{d}")),
        join(N, |l| format!("d{} : compressed", N - 1 - l)),
    );
    let e = parse_encoding(&text).unwrap().encoding;
    let reversed: Vec<AffineExpr> = (0..N).rev().map(AffineExpr::Var).collect();
    assert_eq!(e.dim_to_lvl.results, reversed);
    assert_eq!(e.lvl_to_dim.num_vars, N);
    assert_eq!(e.lvl_to_dim.results, reversed);
    assert_eq!(e.to_string(), text);
}

#[test]
fn block_map_with_10000_dimensions() {
    // all floordiv levels first, then all mod levels: dimension d is `l{d} * 2 + l{n + d}`
    let n = N / 2;
    let text = format!(
        "#sparse_tensor.encoding<{{ map = ({}) -> ({}, {}) }}>",
        join(n, |d| format!("d{d}")),
        join(n, |d| format!("d{d} floordiv 2 : dense")),
        join(n, |d| format!("d{d} mod 2 : dense")),
    );
    let e = parse_encoding(&text).unwrap().encoding;
    let inverse: Vec<AffineExpr> = (0..n)
        .map(|d| {
            AffineExpr::Add(
                Box::new(AffineExpr::Mul(
                    Box::new(AffineExpr::Var(d)),
                    Box::new(AffineExpr::Constant(2)),
                )),
                Box::new(AffineExpr::Var(n + d)),
            )
        })
        .collect();
    assert_eq!(e.lvl_to_dim.num_vars, 2 * n);
    assert_eq!(e.lvl_to_dim.results, inverse);
    assert_eq!(e.to_string(), text);
}

#[test]
fn explicit_inverse_with_20000_dimensions() {
    let text = format!(
        "#sparse_tensor.encoding<{{ map = {{{}}} ({}) -> ({}) }}>",
        join(N, |l| format!("l{l}")),
        join(N, |d| format!("d{d} = l{d}")),
        join(N, |l| format!("l{l} = d{l} : dense")),
    );
    let e = parse_encoding(&text).unwrap().encoding;
    assert_eq!(e.dim_to_lvl, AffineMap::identity(N));
    assert_eq!(e.lvl_to_dim, AffineMap::identity(N));
}

#[test]
fn batch_levels_with_20000_dimensions() {
    let text = format!(
        "#sparse_tensor.encoding<{{ map = ({}) -> ({}, d{} : compressed) }}>",
        join(N, |d| format!("d{d}")),
        join(N - 1, |d| format!("d{d} : batch")),
        N - 1,
    );
    let e = parse_encoding(&text).unwrap().encoding;
    assert_eq!(e.lvl_to_dim, AffineMap::identity(N));
    let mut want = vec![LevelType::new(LevelFormat::Batch); N - 1];
    want.push(LevelType::new(LevelFormat::Compressed));
    assert_eq!(e.lvl_types, want);
}
