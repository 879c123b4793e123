//! `sparse_tensor.print` output of the dynamic storage on cases equivalent to MLIR's integration
//! tests (our own inputs, exact expected text): the print form of batch levels (nested groups,
//! per-batch `nse`), empty levels, AoS/SoA COO, loose positions, n:m and blocked level sizes.

use sparse_runtime::{CooTensor, DynamicStorage};

fn enc(text: &str) -> sparse_dsl::ir::VerifiedEncoding {
    match sparse_dsl::parse::parse_encoding(text) {
        Ok(p) => p.encoding,
        Err(e) => panic!("{text}: {e:?}"),
    }
}

fn build(encoding: &str, shape: &[usize], entries: &[(&[usize], f64)]) -> String {
    let mut t = CooTensor::new(shape.to_vec());
    for (c, v) in entries {
        t.push(c, *v);
    }
    DynamicStorage::from_coo(&enc(encoding), &t)
        .unwrap()
        .to_string()
}

/// A 4x8 matrix with 5 entries, rows 0 and 3 populated.
const M48: &[(&[usize], f64)] = &[
    (&[0, 0], 1.0),
    (&[0, 2], 2.0),
    (&[3, 2], 3.0),
    (&[3, 3], 4.0),
    (&[3, 5], 5.0),
];

#[test]
fn batch_levels_print_nested_with_per_batch_nse() {
    let mut entries = Vec::new();
    let coords: Vec<[usize; 3]> = (0..2)
        .flat_map(|b| (0..2).flat_map(move |i| (0..3).map(move |j| [b, i, j])))
        .collect();
    for (k, c) in coords.iter().enumerate() {
        if (k % 3) != 1 {
            entries.push((&c[..], (k + 1) as f64));
        }
    }
    let got = build(
        "#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : compressed) }>",
        &[2, 2, 3],
        &entries,
    );
    assert_eq!(
        got,
        "---- Sparse Tensor ----\nnse = 4\ndim = ( 2, 2, 3 )\nlvl = ( 2, 2, 3 )\n\
         pos[2] : ( ( 0, 2, 4,  )( 0, 2, 4,  ) )\n\
         crd[2] : ( ( 0, 2, 0, 2,  )( 0, 2, 0, 2,  ) )\n\
         values : ( ( 1, 3, 4, 6,  )( 7, 9, 10, 12,  ) )\n----\n"
    );
}

#[test]
fn two_batch_levels_nest_twice() {
    let entries: Vec<([usize; 3], f64)> = vec![
        ([0, 0, 1], 1.0),
        ([0, 1, 0], 2.0),
        ([1, 0, 1], 3.0),
        ([1, 1, 1], 4.0),
    ];
    let refs: Vec<(&[usize], f64)> = entries.iter().map(|(c, v)| (&c[..], *v)).collect();
    let got = build(
        "#sparse_tensor.encoding<{ map = (a, b, j) -> (a : batch, b : batch, j : compressed) }>",
        &[2, 2, 2],
        &refs,
    );
    assert_eq!(
        got,
        "---- Sparse Tensor ----\nnse = 1\ndim = ( 2, 2, 2 )\nlvl = ( 2, 2, 2 )\n\
         pos[2] : ( ( ( 0, 1,  )( 0, 1,  ) )( ( 0, 1,  )( 0, 1,  ) ) )\n\
         crd[2] : ( ( ( 1,  )( 0,  ) )( ( 1,  )( 1,  ) ) )\n\
         values : ( ( ( 1,  )( 2,  ) )( ( 3,  )( 4,  ) ) )\n----\n"
    );
}

#[test]
fn empty_sparse_vector() {
    let got = build(
        "#sparse_tensor.encoding<{ map = (d0) -> (d0 : compressed) }>",
        &[10],
        &[],
    );
    assert_eq!(got, "---- Sparse Tensor ----\nnse = 0\ndim = ( 10 )\nlvl = ( 10 )\npos[0] : ( 0, 0 )\ncrd[0] : (  )\nvalues : (  )\n----\n");
}

#[test]
fn coo_aos_interleaved_and_soa_split() {
    let aos = build("#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : compressed(nonunique), d1 : singleton) }>", &[4, 8], M48);
    assert_eq!(
        aos,
        "---- Sparse Tensor ----\nnse = 5\ndim = ( 4, 8 )\nlvl = ( 4, 8 )\npos[0] : ( 0, 5 )\n\
         crd[0] : ( 0, 0, 0, 2, 3, 2, 3, 3, 3, 5 )\nvalues : ( 1, 2, 3, 4, 5 )\n----\n"
    );
    let soa = build("#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : compressed(nonunique), d1 : singleton(soa)) }>", &[4, 8], M48);
    assert_eq!(
        soa,
        "---- Sparse Tensor ----\nnse = 5\ndim = ( 4, 8 )\nlvl = ( 4, 8 )\npos[0] : ( 0, 5 )\n\
         crd[0] : ( 0, 0, 3, 3, 3 )\ncrd[1] : ( 0, 2, 2, 3, 5 )\nvalues : ( 1, 2, 3, 4, 5 )\n----\n"
    );
}

#[test]
fn block_column_major_inside_row_blocks() {
    let got = build(
        "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : compressed, j floordiv 4 : compressed, j mod 4 : dense, i mod 2 : dense) }>",
        &[4, 8],
        M48,
    );
    assert_eq!(
        got,
        "---- Sparse Tensor ----\nnse = 24\ndim = ( 4, 8 )\nlvl = ( 2, 2, 4, 2 )\npos[0] : ( 0, 2 )\ncrd[0] : ( 0, 1 )\n\
         pos[1] : ( 0, 1, 3 )\ncrd[1] : ( 0, 0, 1 )\n\
         values : ( 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 4, 0, 0, 0, 5, 0, 0, 0, 0 )\n----\n"
    );
}

#[test]
fn loose_positions_and_nv24_level_sizes() {
    let m: &[(&[usize], f64)] = &[
        (&[0, 1], 1.0),
        (&[0, 3], 2.0),
        (&[2, 0], 3.0),
        (&[2, 3], 4.5),
    ];
    let loose = build(
        "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>",
        &[3, 4],
        m,
    );
    assert_eq!(
        loose,
        "---- Sparse Tensor ----\nnse = 4\ndim = ( 3, 4 )\nlvl = ( 3, 4 )\npos[1] : ( 0, 2, 2, 2, 2, 4 )\n\
         crd[1] : ( 1, 3, 0, 3 )\nvalues : ( 1, 2, 3, 4.5 )\n----\n"
    );
    let nv = build(
        "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 8 }>",
        &[3, 4],
        m,
    );
    assert_eq!(
        nv,
        "---- Sparse Tensor ----\nnse = 6\ndim = ( 3, 4 )\nlvl = ( 3, 1, 4 )\ncrd[2] : ( 1, 3, 0, 1, 0, 3 )\n\
         values : ( 1, 2, 0, 0, 3, 4.5 )\n----\n"
    );
}
