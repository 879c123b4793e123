//! `sparsecore(...)` on a `sparse_format!` declaration: the generated `SPARSECORE` constant holds
//! the exact numbers of issue 10's example, equals the configuration computed at run time, and
//! agrees with the runtime lookup (its peak TileSpmem, and its words when a size does not fit).
//! The compile errors are in `ui/sparsecore_*.rs`.

use sparse::runtime::sparsecore::chip::{ChipModel, TPU7X, V4, V5P, V6E};
use sparse::runtime::sparsecore::lookup::{lookup, EmbeddingTable, LookupConfig};
use sparse::runtime::sparsecore::{
    preprocess, Feature, PreprocessConfig, SparseCoreConfig, TileSpmemPlan,
};

sparse::sparse_format! {
    /// The example of issue 10.
    pub Lookup = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
        sparsecore(chip = v5p, max_ids_per_partition = 256, max_unique_ids_per_partition = 64,
                   feature_width = 128, batch = 4096);
    /// A width that pads (100 -> 104), on v4.
    pub OnV4 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
        sparsecore(chip = v4, max_ids_per_partition = 32, max_unique_ids_per_partition = 16,
                   feature_width = 100, batch = 1024);
    /// A tensor type (default value type `f32`) and the chip's other name.
    pub OnV6e = tensor<?x?xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>
        sparsecore(chip = trillium, max_ids_per_partition = 8, max_unique_ids_per_partition = 8,
                   feature_width = 8, batch = 16);
    /// The string form.
    pub OnTpu7x = "#sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }> sparsecore(chip = tpu7x, max_ids_per_partition = 8, max_unique_ids_per_partition = 8, feature_width = 16, batch = 0x40)";
}

/// Usable in constant context.
const LOOKUP: SparseCoreConfig = Lookup::SPARSECORE;

#[test]
fn the_issue_example_has_these_numbers() {
    assert_eq!(
        LOOKUP,
        SparseCoreConfig {
            chip: &V5P,
            max_ids_per_partition: 256,
            max_unique_ids_per_partition: 64,
            feature_width: 128,
            padded_width: 128,
            batch: 4096,
            tile_spmem: TileSpmemPlan {
                // 512 KiB per tile
                tile_spmem_bytes: 524_288,
                // 4096 samples over 16 tiles
                samples_per_tile: 256,
                // 128 f32
                row_bytes: 512,
                // 256 * 512
                gather_operand_bytes: 131_072,
                // + 2 * 512 + the partition share
                fixed_allocation_bytes: 132_320,
                // (524288 - 131072 - 224) / 1024
                staging_rows: 383,
                // each tile's share of a partition: roundup8(ceil(256 / 16)) = 16 entries of 12
                // bytes, roundup8(ceil(64 / 16)) = 8 unique ids of 4 bytes
                partition_bytes: 224,
            },
        }
    );
    // 131072 + 2 * 383 * 512 + 224: the staging rows are whole, 800 bytes stay free
    assert_eq!(LOOKUP.tile_spmem.max_peak_bytes(), 523_488);
    assert_eq!(
        Ok(LOOKUP),
        SparseCoreConfig::new(&V5P, 256, 64, 128, 4096),
        "the constant is what the shared rule computes at run time"
    );
}

#[test]
fn every_preset_and_form() {
    let v4 = OnV4::SPARSECORE;
    assert_eq!(v4.chip, &V4);
    assert_eq!(v4.padded_width, 104);
    assert_eq!(v4.tile_spmem.row_bytes, 416);
    // 1024 / 16 = 64 rows of 416 bytes; partition share roundup8(2) = 8 entries and
    // roundup8(1) = 8 unique ids, 128 bytes; (163840 - 26624 - 128) / 832 = 164 staging rows
    assert_eq!(v4.tile_spmem.gather_operand_bytes, 26_624);
    assert_eq!(v4.tile_spmem.partition_bytes, 128);
    assert_eq!(v4.tile_spmem.staging_rows, 164);
    assert_eq!(Ok(v4), SparseCoreConfig::new(&V4, 32, 16, 100, 1024));
    assert_eq!(OnV6e::SPARSECORE.chip, &V6E);
    assert_eq!(OnV6e::SPARSECORE.chip.name, "v6e");
    assert_eq!(OnTpu7x::SPARSECORE.chip, &TPU7X);
    assert_eq!(OnTpu7x::SPARSECORE.batch, 64);
}

/// 4 SparseCores x 4096 samples; samples 0..256 (tile 0 of SparseCore 0) look up ids `s` and
/// `(s + 128) % 256`: 512 entries, 128 per partition, 64 distinct per partition (the limits).
fn batch() -> Feature {
    let mut samples = vec![Vec::new(); 4 * 4096];
    for (s, ids) in samples.iter_mut().take(256).enumerate() {
        let s = s as i64;
        *ids = vec![s, (s + 128) % 256];
    }
    Feature::from_samples("f", &samples, None).unwrap()
}

#[test]
fn the_runtime_lookup_uses_the_same_sizes() {
    let cfg = Lookup::SPARSECORE;
    let chip = ChipModel::from(cfg.chip);
    assert_eq!(chip, ChipModel::v5p());
    let pre = preprocess(
        &PreprocessConfig::new(
            chip.sparsecores_per_device,
            1,
            1,
            cfg.max_ids_per_partition,
            cfg.max_unique_ids_per_partition,
        ),
        &[batch()],
    )
    .expect("the batch is within the declared limits");
    let width = cfg.padded_width as usize;
    let table = EmbeddingTable {
        rows: 256,
        width,
        data: (0..256 * width).map(|i| (i % 7) as f32).collect(),
    };
    let lcfg = LookupConfig::from_sparsecore(&cfg, 1);
    assert_eq!((lcfg.num_sc_per_device, lcfg.num_scs), (4, 4));
    assert_eq!(lcfg.partition_limits, Some((256, 64)));
    assert_eq!(lcfg.batch_size_per_sc, 4096);
    let (act, report) = lookup(&chip, &pre.devices[0], &table, &lcfg).unwrap();
    assert_eq!(act.len(), 4 * 4096 * width);
    let t0 = report.scs[0].tiles[0];
    assert_eq!(t0.ids, 512);
    // 512 entries >= 383 staging rows: the tile reaches the compile-time peak exactly (the
    // lookup sizes TileSpmem with the declared limits, as the macro did)
    assert_eq!(t0.peak_spmem_bytes, cfg.tile_spmem.max_peak_bytes());
    assert_eq!(t0.peak_spmem_bytes, 523_488);
    // the other tiles hold their output rows and their partition share only
    let t1 = report.scs[0].tiles[1];
    assert_eq!(t1.peak_spmem_bytes, 131_072 + 224);
    for sc in &report.scs {
        for t in &sc.tiles {
            assert!(t.peak_spmem_bytes <= cfg.tile_spmem.tile_spmem_bytes);
        }
    }
}

#[test]
fn the_runtime_rejects_what_the_macro_rejects_with_the_same_words() {
    let pre = preprocess(&PreprocessConfig::new(4, 1, 1, 256, 64), &[batch()]).unwrap();
    let table = EmbeddingTable {
        rows: 256,
        width: 128,
        data: vec![0.0; 256 * 128],
    };
    // ui/sparsecore_fixed_allocations.rs and ui/sparsecore_gather_too_large.rs (v4, width 128)
    for batch in [5120, 8192] {
        let compile_time = SparseCoreConfig::new(&V4, 256, 64, 128, batch).unwrap_err();
        let cfg = LookupConfig {
            batch_size_per_sc: batch,
            ..LookupConfig::from_sparsecore(&Lookup::SPARSECORE, 1)
        };
        let run_time = lookup(&ChipModel::v4(), &pre.devices[0], &table, &cfg).unwrap_err();
        assert_eq!(run_time.to_string(), compile_time.to_string());
    }
}
