//! The `sparsecore(...)` clause of a declaration: the configuration read, and every diagnostic
//! with its exact text and position (the spans the macro maps back to tokens).

use sparse_dsl::parse::{parse_declaration, parse_declarations};
use sparse_ir::sparsecore::{tile_spmem_plan_with_limits, SparseCoreConfig, V4, V5P, V6E};

const CSR: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>";

/// `LINE:COL: MESSAGE` and the spanned text of every diagnostic.
fn errors(text: &str) -> Vec<(String, String)> {
    match parse_declaration(text) {
        Ok(p) => panic!("{text}: unexpectedly accepted: {:?}", p.sparsecore),
        Err(d) => d
            .iter()
            .map(|d| (d.to_string(), text[d.start..d.end].to_string()))
            .collect(),
    }
}

fn with(clause: &str) -> String {
    format!("{CSR} {clause}")
}

#[test]
fn the_issue_example() {
    let text = with(
        "sparsecore(chip = v5p, max_ids_per_partition = 256, max_unique_ids_per_partition = 64, \
         feature_width = 128, batch = 4096)",
    );
    let p = parse_declaration(&text).unwrap();
    let c = p.sparsecore.unwrap();
    assert_eq!(c, SparseCoreConfig::new(&V5P, 256, 64, 128, 4096).unwrap());
    assert_eq!(c.chip.name, "v5p");
    assert_eq!(c.padded_width, 128);
    // the limits size each tile's partition share: 16 entries of 12 bytes, 8 unique ids of 4
    assert_eq!(
        c.tile_spmem,
        tile_spmem_plan_with_limits(524_288, 16, 4096, 128, 256, 64).unwrap()
    );
    assert_eq!(c.tile_spmem.gather_operand_bytes, 131_072);
    assert_eq!(c.tile_spmem.partition_bytes, 224);
    assert_eq!(c.tile_spmem.fixed_allocation_bytes, 132_320);
    assert_eq!(c.tile_spmem.staging_rows, 383);
    // without the clause, none; the declaration's text is unchanged
    assert_eq!(parse_declaration(CSR).unwrap().sparsecore, None);
    assert_eq!(p.declared, parse_declaration(CSR).unwrap().declared);
}

#[test]
fn options_in_any_order_hex_values_aliases_and_tensor_types() {
    let text = "tensor<?x?xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : \
                compressed) }>> sparsecore(batch = 0x100, feature_width = 5, chip = trillium, \
                max_unique_ids_per_partition = 1, max_ids_per_partition = 2,)";
    let c = parse_declaration(text).unwrap().sparsecore.unwrap();
    assert_eq!(c, SparseCoreConfig::new(&V6E, 2, 1, 5, 256).unwrap());
    assert_eq!(c.padded_width, 8);
    // in a declarations file too
    let file = format!("#A = {CSR} sparsecore(chip = v4, max_ids_per_partition = 8, max_unique_ids_per_partition = 8, feature_width = 8, batch = 16)\n#B = {CSR}");
    let d = parse_declarations(&file).unwrap();
    assert_eq!(d[0].sparsecore.unwrap().chip, &V4);
    assert_eq!(d[1].sparsecore, None);
}

#[test]
fn each_error_at_its_token() {
    let e = errors(&with(
        "sparsecore(chip = v9, max_ids = 3, batch = 1.5, batch = 2, feature_width = -1)",
    ));
    assert_eq!(
        e,
        vec![
            (
                "1:74: missing sparsecore option: max_ids_per_partition".into(),
                "sparsecore".into()
            ),
            (
                "1:74: missing sparsecore option: max_unique_ids_per_partition".into(),
                "sparsecore".into()
            ),
            (
                "1:92: unknown chip 'v9' (known: v4, v5p, v6e, tpu7x)".into(),
                "v9".into()
            ),
            (
                "1:96: unexpected sparsecore option: max_ids".into(),
                "max_ids".into()
            ),
            (
                "1:117: expected an unsigned 32-bit integer for batch".into(),
                "1.5".into()
            ),
            (
                "1:122: duplicate sparsecore option: batch".into(),
                "batch".into()
            ),
            (
                "1:149: expected an unsigned 32-bit integer for feature_width".into(),
                "-1".into()
            ),
        ]
    );
    let d =
        parse_declaration(&with("sparsecore(chip = v5p, max_id_per_partition = 1)")).unwrap_err();
    let unknown = d
        .iter()
        .find(|d| d.message.starts_with("unexpected"))
        .unwrap();
    assert_eq!(
        unknown.help.as_deref(),
        Some(
            "did you mean `max_ids_per_partition`? sparsecore options: `chip`, \
             `max_ids_per_partition`, `max_unique_ids_per_partition`, `feature_width`, `batch`"
        )
    );
    assert_eq!(
        errors(&with(
            "sparsecore(chip = v5p, max_ids_per_partition = 4294967296, \
             max_unique_ids_per_partition = 1, feature_width = 8, batch = 8)"
        ))[0]
            .0,
        "1:121: expected an unsigned 32-bit integer for max_ids_per_partition"
    );
    assert_eq!(
        errors(&with(
            "sparsecore(chip = v5p, max_ids_per_partition = 1, max_unique_ids_per_partition = 1, \
             feature_width = 0, batch = 8)"
        )),
        vec![(
            "1:174: feature_width must be positive, got 0.".into(),
            "0".into()
        )]
    );
}

#[test]
fn tile_spmem_errors_over_the_clause_with_the_computation() {
    let clause = "sparsecore(chip = v4, max_ids_per_partition = 256, \
                  max_unique_ids_per_partition = 64, feature_width = 128, batch = 5120)";
    let d = parse_declaration(&with(clause)).unwrap_err();
    assert_eq!(d.len(), 1);
    // 320 output rows of 512 bytes fill the 163840 bytes; + 2 staged rows + the partition
    // share (16 * 12 + 8 * 4 = 224 bytes)
    assert_eq!(
        d[0].message,
        "Fixed size allocations (165088 bytes) do not fit in TileSpmem (163840 bytes)"
    );
    assert_eq!(&with(clause)[d[0].start..d[0].end], clause);
    assert_eq!(
        d[0].help.as_deref(),
        Some(
            "v4 has 16 tiles per SparseCore with 163840 bytes of TileSpmem each: a tile holds \
             ceil(batch 5120 / 16) = 320 output rows of 512 bytes (feature_width 128 padded to \
             128 f32), stages 2 more rows and holds its share of one partition, \
             roundup8(ceil(max_ids_per_partition 256 / 16)) = 16 entries of 12 bytes (row id, \
             column id, gain) and roundup8(ceil(max_unique_ids_per_partition 64 / 16)) = 8 \
             unique ids of 4 bytes (224 bytes); lower batch, feature_width or the limits"
        )
    );
    let d = parse_declaration(&with(&clause.replace("5120", "8192"))).unwrap_err();
    assert_eq!(
        d[0].message,
        "Gather operand too large: (sample_count * feature_width) / tiles = 262144 bytes per \
         tile exceeds TileSpmem (163840 bytes)"
    );
    // the output rows alone: the help leaves the limits out
    assert_eq!(
        d[0].help.as_deref(),
        Some(
            "v4 has 16 tiles per SparseCore with 163840 bytes of TileSpmem each: a tile holds \
             ceil(batch 8192 / 16) = 512 output rows of 512 bytes (feature_width 128 padded to \
             128 f32) and stages 2 more rows; lower batch or feature_width"
        )
    );
}

/// The limits size the partition buffers (the reference: SPMEM is sized from
/// `max_ids_per_partition` and `max_unique_ids_per_partition` at compile time): limits large
/// enough fail even when the output rows leave most of TileSpmem free.
#[test]
fn large_limits_do_not_fit_at_compile_time() {
    // v5p, the issue's width and batch: 131072 + 1024 bytes fixed without the partition, so
    // 392192 bytes are left for it
    let clause = |ids: u32, unique: u32| {
        format!(
            "sparsecore(chip = v5p, max_ids_per_partition = {ids}, \
             max_unique_ids_per_partition = {unique}, feature_width = 128, batch = 4096)"
        )
    };
    // 2^20 ids over 16 tiles: 65536 entries (786432 bytes); 2^16 unique: 4096 (16384 bytes)
    let text = with(&clause(1 << 20, 1 << 16));
    let d = parse_declaration(&text).unwrap_err();
    assert_eq!(d.len(), 1);
    assert_eq!(
        d[0].message,
        "Fixed size allocations (934912 bytes) do not fit in TileSpmem (524288 bytes)"
    );
    assert_eq!(&text[d[0].start..d[0].end], clause(1 << 20, 1 << 16));
    assert_eq!(
        d[0].help.as_deref(),
        Some(
            "v5p has 16 tiles per SparseCore with 524288 bytes of TileSpmem each: a tile holds \
             ceil(batch 4096 / 16) = 256 output rows of 512 bytes (feature_width 128 padded to \
             128 f32), stages 2 more rows and holds its share of one partition, \
             roundup8(ceil(max_ids_per_partition 1048576 / 16)) = 65536 entries of 12 bytes \
             (row id, column id, gain) and roundup8(ceil(max_unique_ids_per_partition 65536 / \
             16)) = 4096 unique ids of 4 bytes (802816 bytes); lower batch, feature_width or \
             the limits"
        )
    );
    // the largest limits that fit: 32680 entries and 8 unique ids per tile fill it exactly
    let c = parse_declaration(&with(&clause(32_680 * 16, 8 * 16)))
        .unwrap()
        .sparsecore
        .unwrap();
    assert_eq!(c.tile_spmem.fixed_allocation_bytes, 524_288);
    assert_eq!(c.tile_spmem.staging_rows, 1);
    let d = parse_declaration(&with(&clause(32_680 * 16 + 1, 8 * 16))).unwrap_err();
    assert_eq!(
        d[0].message,
        "Fixed size allocations (524384 bytes) do not fit in TileSpmem (524288 bytes)"
    );
    // the largest u32 limits: an error, never an overflow
    let d = parse_declaration(&with(&clause(u32::MAX, u32::MAX))).unwrap_err();
    assert_eq!(
        d[0].message,
        "Fixed size allocations (4295099392 bytes) do not fit in TileSpmem (524288 bytes)"
    );
}

#[test]
fn syntax_errors_and_encoding_errors_together() {
    // a clause needs its parentheses and `=`
    assert_eq!(
        errors(&with("sparsecore chip = v5p"))[0].0,
        "1:85: expected '('"
    );
    assert_eq!(errors(&with("sparsecore(chip)"))[0].0, "1:89: expected '='");
    // a bad encoding and a bad clause: both reported, MLIR's first
    let text = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compresed) }> \
                sparsecore(chip = v9, max_ids_per_partition = 1, max_unique_ids_per_partition = 1, \
                feature_width = 8, batch = 8)";
    let e = errors(text);
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e[0].0, "1:59: unknown level format: compresed");
    assert_eq!(e[1].1, "v9");
}
