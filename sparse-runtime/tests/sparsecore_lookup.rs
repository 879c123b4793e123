//! The lookup on the chip model (`sparsecore::lookup`): exact activations on a hand example and
//! on random batches (equal to the plain computation bit for bit, to a dense f64 reference within
//! rounding, independent of the thread count), TileSpmem failures in the chip's words, and the
//! simulated quantization grid.

use proptest::prelude::*;
use sparse_runtime::sparsecore::chip::ChipModel;
use sparse_runtime::sparsecore::lookup::{
    lookup, reference_activations, EmbeddingTable, LookupConfig, LookupError, LookupQuantization,
};
use sparse_runtime::sparsecore::{preprocess, Feature, PreprocessConfig};

/// `rows x width` table with `table[r][c] = r * 10 + c`.
fn table(rows: usize, width: usize) -> EmbeddingTable {
    let data = (0..rows * width)
        .map(|i| ((i / width) * 10 + i % width) as f32)
        .collect();
    EmbeddingTable { rows, width, data }
}

fn config(s: u32, num_scs: u32, bs: u32, width: usize) -> LookupConfig {
    LookupConfig {
        num_sc_per_device: s,
        num_scs,
        batch_size_per_sc: bs,
        num_minibatches: 1,
        minibatching: false,
        feature_width: width,
        logical_replica_count: 1,
        quantization: None,
        partition_limits: None,
    }
}

fn chip(s: u32) -> ChipModel {
    let mut c = ChipModel::v5p();
    c.sparsecores_per_device = s;
    c
}

#[test]
fn eight_samples_of_ids_0_to_3_on_four_sparsecores() {
    let samples = vec![vec![0i64, 1, 2, 3]; 8];
    let f = Feature::from_samples("f", &samples, None).unwrap();
    let pre = preprocess(&PreprocessConfig::new(4, 1, 1, 256, 256), &[f]).unwrap();
    let t = table(32, 8);
    let (act, report) = lookup(&chip(4), &pre.devices[0], &t, &config(4, 4, 2, 8)).unwrap();
    // every sample: rows 0..3 summed = 60 + 4c
    let row: Vec<f32> = (0..8).map(|c| 60.0 + 4.0 * c as f32).collect();
    assert_eq!(act, row.repeat(8));
    assert_eq!(
        report.scs.iter().map(|s| s.ids).collect::<Vec<_>>(),
        vec![8; 4]
    );
    assert_eq!(
        report.scs.iter().map(|s| s.unique_ids).collect::<Vec<_>>(),
        vec![4; 4]
    );
    // row pointers 2, 10, 18, 26: holes of 6 after each of the first three partitions
    assert_eq!(report.scs[0].padding_slots, 18);
    assert_eq!(report.max_unique_nz_per_row, 4);
    assert_eq!(report.forward_hbm_stack_bytes, (2 * 8 + 1) * 4 * 4);
    assert_eq!(report.backward_hbm_stack_bytes, 3 * 8 * 4 * 4);
    assert_eq!(report.padding_waste_bytes, 0);
    // tile 0 of each SparseCore owns sample 0 (bs 2 over 16 tiles: samples 0 and 1 at tiles 7, 15)
    let busy: Vec<usize> = (0..16)
        .filter(|&t| report.scs[0].tiles[t].ids > 0)
        .collect();
    assert_eq!(busy, vec![7, 15]);
    assert_eq!(report.cost.slowest.1, 7);
}

#[test]
fn tile_spmem_failures_use_the_chips_words() {
    let samples = vec![vec![0i64, 1]; 64];
    let f = Feature::from_samples("f", &samples, None).unwrap();
    let pre = preprocess(&PreprocessConfig::new(4, 1, 1, 256, 256), &[f]).unwrap();
    let t = table(32, 8);
    let mut c = chip(4);
    // 16 samples per SC over 16 tiles: 1 sample = 32 bytes of output per tile
    c.tile_spmem_bytes = 16;
    let err = lookup(&c, &pre.devices[0], &t, &config(4, 4, 16, 8)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Gather operand too large: (sample_count * feature_width) / tiles = 32 bytes per tile \
         exceeds TileSpmem (16 bytes)"
    );
    c.tile_spmem_bytes = 64;
    let err = lookup(&c, &pre.devices[0], &t, &config(4, 4, 16, 8)).unwrap_err();
    assert_eq!(
        err,
        LookupError::FixedAllocations {
            needed: 96,
            available: 64
        }
    );
    assert_eq!(
        err.to_string(),
        "Fixed size allocations (96 bytes) do not fit in TileSpmem (64 bytes)"
    );
    // With the limits the buffers were preprocessed with (256, 256), each tile also holds its
    // share of one partition: roundup8(ceil(256 / 16)) = 16 entries of 12 bytes and 16 unique
    // ids of 4 bytes, 256 bytes. 1 output row (32) + 2 staged rows (64) + 256 = 352 bytes.
    c.tile_spmem_bytes = 351;
    let limited = LookupConfig {
        partition_limits: Some((256, 256)),
        ..config(4, 4, 16, 8)
    };
    assert!(lookup(&c, &pre.devices[0], &t, &config(4, 4, 16, 8)).is_ok());
    assert_eq!(
        lookup(&c, &pre.devices[0], &t, &limited)
            .unwrap_err()
            .to_string(),
        "Fixed size allocations (352 bytes) do not fit in TileSpmem (351 bytes)"
    );
    // one byte more fits: one staging row per buffer, and every tile's peak counts the share
    c.tile_spmem_bytes = 352;
    let (_, report) = lookup(&c, &pre.devices[0], &t, &limited).unwrap();
    // tile 0 of SparseCore 0 holds sample 0 (ids 0 and 1, 1 staged row per buffer): 32 + 64 + 256
    assert_eq!(report.scs[0].tiles[0].peak_spmem_bytes, 352);
}

#[test]
fn quantization_rounds_half_up_to_the_grid() {
    let q = LookupQuantization {
        low: 0.0,
        high: 1.0,
        num_buckets: 5,
    };
    let got: Vec<f32> = [0.3, 0.375, 0.125, -1.0, 2.0, 1.0]
        .map(|x| q.apply(x))
        .to_vec();
    assert_eq!(got, vec![0.25, 0.5, 0.25, 0.0, 1.0, 1.0]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn activations_equal_the_plain_and_the_dense_computation(
        s in prop::sample::select(vec![1u32, 2, 4]),
        per in 1usize..=3,
        ids in prop::collection::vec(prop::collection::vec((0i64..40, 1u8..4), 0..5), 12),
        quantize in any::<bool>(),
    ) {
        let n = (s as usize * per).min(ids.len());
        let n = n - n % (s as usize);
        let samples: Vec<Vec<i64>> = ids[..n].iter().map(|v| v.iter().map(|p| p.0).collect()).collect();
        let weights: Vec<Vec<f32>> = ids[..n].iter().map(|v| v.iter().map(|p| f32::from(p.1)).collect()).collect();
        let f = Feature::from_samples("f", &samples, Some(&weights)).unwrap();
        let pre = preprocess(&PreprocessConfig::new(s, 1, 1, 1024, 1024), &[f]).unwrap();
        let rows = 40usize.div_ceil(8 * s as usize) * 8 * s as usize;
        let t = table(rows, 8);
        let bs = (n / s as usize) as u32;
        let mut cfg = config(s, s, bs, 8);
        if quantize {
            cfg.quantization = Some(LookupQuantization { low: 0.0, high: 200.0, num_buckets: 9 });
        }
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let two = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let (a1, r1) = one.install(|| lookup(&chip(s), &pre.devices[0], &t, &cfg)).unwrap();
        let (a2, r2) = two.install(|| lookup(&chip(s), &pre.devices[0], &t, &cfg)).unwrap();
        prop_assert_eq!(&a1, &a2);
        prop_assert_eq!(r1, r2);
        prop_assert_eq!(&a1, &reference_activations(&pre.devices[0], &t, &cfg).unwrap());
        // dense reference: every (sample, id) with its weight, duplicates summed
        for (row, sample) in samples.iter().enumerate() {
            for c in 0..8 {
                let want: f64 = sample.iter().zip(&weights[row]).map(|(&id, &w)| {
                    let x = (id as usize * 10 + c) as f32;
                    let x = cfg.quantization.map_or(x, |q| q.apply(x));
                    f64::from(w) * f64::from(x)
                }).sum();
                let got = f64::from(a1[row * 8 + c]);
                prop_assert!((got - want).abs() <= 1e-5 * want.abs().max(1.0), "row {} col {}: {} vs {}", row, c, got, want);
            }
        }
    }
}
