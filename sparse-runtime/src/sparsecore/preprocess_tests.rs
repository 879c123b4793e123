//! Unit tests of the preprocessing with exact arrays (reference §4 to §6 and the public checks).

use super::*;

const P: i32 = PAD;

fn cfg(s: u32, max_ids: u32, max_unique: u32) -> PreprocessConfig {
    PreprocessConfig::new(s, 1, 1, max_ids, max_unique)
}

fn feature(samples: &[Vec<i64>]) -> Feature {
    Feature::from_samples("f", samples, None).unwrap()
}

#[test]
fn public_check_eight_samples_of_0_1_2_3() {
    let f = feature(&vec![vec![0, 1, 2, 3]; 8]);
    let out = preprocess(&cfg(4, 8, 8), &[f]).unwrap();
    let d = &out.devices[0];
    for k in 0..4 {
        assert_eq!(
            d.row_pointers[k * 8..k * 8 + 8],
            [2, 10, 18, 26, 32, 32, 32, 32]
        );
    }
    assert_eq!(d.embedding_ids.len(), 128);
    let seg: Vec<i32> = d.embedding_ids[..32].to_vec();
    let mut want = vec![P; 32];
    let mut samples = [P; 32];
    for p in 0..4 {
        want[p * 8] = 0;
        want[p * 8 + 1] = 0;
        samples[p * 8] = 0;
        samples[p * 8 + 1] = 1;
    }
    assert_eq!(seg, want);
    assert_eq!(d.sample_ids[32..64], samples[..]);
    assert_eq!(d.gains[0], 1.0);
    assert!(d.gains[2].is_nan());
    assert_eq!(d.max_ids_per_partition, vec![2, 2, 2, 2]);
    assert_eq!(d.max_unique_ids_per_partition, vec![1, 1, 1, 1]);
    assert_eq!(d.required_buffer_size, vec![32, 32, 32, 32]);
    assert_eq!(
        d.coo[1][0],
        CooEntry {
            row_id: 2,
            col_id: 0,
            gain: 1.0
        }
    );
    assert_eq!((out.dropped_id_count, out.num_minibatches), (0, 1));
}

fn pads(v: &[(usize, i32)], len: usize) -> Vec<i32> {
    let mut out = vec![P; len];
    for &(i, x) in v {
        out[i] = x;
    }
    out
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|g| g.to_bits()).collect()
}

fn gains_at(v: &[(usize, f32)], len: usize) -> Vec<u32> {
    let mut out = vec![f32::NAN; len];
    for &(i, x) in v {
        out[i] = x;
    }
    bits(&out)
}

/// Four samples [5], [5, 6, 7], [6, 6, 9], [] with weights and the mean combiner, on 2 SCs.
fn weighted_batch() -> Feature {
    let samples = [vec![5], vec![5, 6, 7], vec![6, 6, 9], vec![]];
    let weights = [vec![1.0], vec![1.0, 2.0, 3.0], vec![1.0, 2.0, 4.0], vec![]];
    Feature::from_samples("f", &samples, Some(&weights)).unwrap()
}

#[test]
fn mean_gains_dedup_and_two_partitions() {
    let mut c = cfg(2, 4, 4);
    c.combiner = Combiner::Mean;
    let out = preprocess(&c, &[weighted_batch()]).unwrap();
    let d = &out.devices[0];
    assert_eq!(
        d.row_pointers,
        [1, 11, 16, 16, 16, 16, 16, 16, 1, 9, 16, 16, 16, 16, 16, 16]
    );
    assert_eq!(
        d.embedding_ids,
        pads(&[(0, 3), (8, 2), (9, 2), (10, 3), (16, 3), (24, 4)], 32)
    );
    assert_eq!(
        d.sample_ids,
        pads(&[(0, 1), (8, 0), (9, 1), (10, 1), (16, 0), (24, 0)], 32)
    );
    let g = [
        (0, 2.0f32 / 6.0),
        (8, 1.0),
        (9, 1.0 / 6.0),
        (10, 3.0 / 6.0),
        (16, 1.0f32 / 7.0 + 2.0f32 / 7.0),
        (24, 4.0 / 7.0),
    ];
    assert_eq!(bits(&d.gains), gains_at(&g, 32));
    assert_eq!(d.max_ids_per_partition, [1, 3]);
    assert_eq!(d.max_unique_ids_per_partition, [1, 2]);
    assert_eq!(d.required_buffer_size, [16, 16]);
    assert_eq!(
        d.coo[1],
        [
            CooEntry {
                row_id: 2,
                col_id: 6,
                gain: 1.0f32 / 7.0 + 2.0f32 / 7.0
            },
            CooEntry {
                row_id: 2,
                col_id: 9,
                gain: 4.0 / 7.0
            },
        ]
    );

    // With minibatching but no limit exceeded: one minibatch, SC 1 starts at
    // required_buffer_size[0], pointers absolute, buffers 64 times longer.
    c.minibatching = true;
    let out = preprocess(&c, &[weighted_batch()]).unwrap();
    let d = &out.devices[0];
    assert_eq!(out.num_minibatches, 1);
    assert_eq!(d.embedding_ids.len(), 2048);
    assert_eq!(
        d.row_pointers,
        [1, 11, 16, 16, 16, 16, 16, 16, 17, 25, 32, 32, 32, 32, 32, 32]
    );
    assert_eq!(d.embedding_ids[16], 3);
    assert_eq!(d.embedding_ids[24], 4);
}

#[test]
fn sqrtn_and_sum_gains() {
    let mut c = cfg(2, 4, 4);
    c.combiner = Combiner::Sqrtn;
    let out = preprocess(&c, &[weighted_batch()]).unwrap();
    let d = &out.devices[0];
    let s1 = 14.0f32.sqrt();
    assert_eq!(d.gains[9].to_bits(), (1.0 / s1).to_bits());
    assert_eq!(
        d.gains[16].to_bits(),
        (1.0 / 21.0f32.sqrt() + 2.0 / 21.0f32.sqrt()).to_bits()
    );
    // Without weights, sqrtn of sample 1 (3 ids) is 1 / sqrt(3).
    let f = feature(&[vec![5], vec![5, 6, 7], vec![6, 6, 9], vec![]]);
    let out = preprocess(&c, std::slice::from_ref(&f)).unwrap();
    assert_eq!(
        out.devices[0].gains[9].to_bits(),
        (1.0 / 3.0f32.sqrt()).to_bits()
    );
    c.combiner = Combiner::Sum;
    let out = preprocess(&c, &[f]).unwrap();
    // Sample 2's two 6s are merged: gain 2.
    assert_eq!(out.devices[0].gains[16], 2.0);
}

#[test]
fn limits_are_errors_without_dropping() {
    let f = feature(&[vec![1, 2, 3, 1], vec![1, 3]]);
    let e = preprocess(&cfg(1, 2, 2), std::slice::from_ref(&f)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Observed max ids per partition: 5 for table: table is greater than the set max ids per \
         partition: 2. Use `allow_id_dropping` or increase the `max_ids_per_partition`. You could \
         also try to reduce the batch size."
    );
    let mut c = cfg(1, 10, 2);
    c.table = "t".into();
    let e = preprocess(&c, &[f]).unwrap_err();
    assert!(e.to_string().starts_with(
        "Observed max unique ids per partition: 3 for table: t is greater than the set max unique \
         ids per partition: 2."
    ));
}

#[test]
fn dropping_keeps_the_first_ids_and_columns() {
    let f = feature(&[vec![1, 2, 3, 1], vec![1, 3]]);
    let mut c = cfg(1, 2, 2);
    c.allow_id_dropping = true;
    let out = preprocess(&c, &[f]).unwrap();
    let d = &out.devices[0];
    assert_eq!(out.dropped_id_count, 3);
    assert_eq!(d.row_pointers, [2, 8, 8, 8, 8, 8, 8, 8]);
    assert_eq!(d.embedding_ids, pads(&[(0, 1), (1, 1)], 8));
    assert_eq!(d.sample_ids, pads(&[(0, 0), (1, 1)], 8));
    assert_eq!(bits(&d.gains), gains_at(&[(0, 2.0), (1, 1.0)], 8));
    // Observed counts, before dropping.
    assert_eq!(d.max_ids_per_partition, [5]);
    assert_eq!(d.max_unique_ids_per_partition, [3]);
    assert_eq!(d.required_buffer_size, [8]);

    // A duplicate of a dropped entry is dropped too, and not counted as an id.
    let f = feature(&[vec![1, 2, 2]]);
    let mut c = cfg(1, 1, 5);
    c.allow_id_dropping = true;
    let out = preprocess(&c, &[f]).unwrap();
    assert_eq!(out.dropped_id_count, 2);
    assert_eq!(out.devices[0].max_ids_per_partition, [2]);
    assert_eq!(out.devices[0].coo[0].len(), 1);
}

#[test]
fn a_full_buffer_drops_the_rest() {
    let f = feature(&[(0..12).collect()]);
    let mut c = cfg(1, 16, 16);
    c.suggested_coo_buffer_size = Some(8);
    let out = preprocess(&c, std::slice::from_ref(&f)).unwrap();
    let d = &out.devices[0];
    assert_eq!(d.embedding_ids, (0..8).collect::<Vec<i32>>());
    assert_eq!(d.row_pointers, [8; 8]);
    assert_eq!(out.dropped_id_count, 4);
    assert_eq!(d.coo[0].len(), 12);
    c.suggested_coo_buffer_size = Some(17);
    assert_eq!(
        preprocess(&c, std::slice::from_ref(&f))
            .unwrap_err()
            .to_string(),
        "Suggested Coo Buffer Size is larger than the theoretical max for table table: 24 vs 16. \
         Adjust the suggested size or the max_ids_per_partition values."
    );
    // The rounding saturates: the largest suggestion is too large, not an overflow.
    c.suggested_coo_buffer_size = Some(u64::MAX);
    assert_eq!(
        preprocess(&c, &[f]).unwrap_err(),
        PreprocessError::SuggestedTooLarge {
            table: "table".into(),
            suggested: u64::MAX,
            max: 16
        }
    );
}

#[test]
fn two_devices_take_their_own_slices() {
    let f = feature(&[vec![0], vec![1], vec![2], vec![3]]);
    let c = PreprocessConfig::new(1, 2, 2, 1, 1);
    let out = preprocess(&c, &[f]).unwrap();
    assert_eq!(out.devices.len(), 2);
    for (d, local) in out.devices.iter().zip([0, 1]) {
        assert_eq!(d.row_pointers, [1, 9, 16, 16, 16, 16, 16, 16]);
        assert_eq!(d.embedding_ids, pads(&[(0, local), (8, local)], 16));
        assert_eq!(d.sample_ids, pads(&[(0, 0), (8, 1)], 16));
        assert_eq!(d.max_ids_per_partition, [1, 1]);
    }
}

#[test]
fn features_in_ascending_row_offset() {
    let mut a = feature(&[vec![0], vec![1]]);
    a.name = "a".into();
    a.row_offset = 2;
    let mut b = feature(&[vec![2], vec![3]]);
    b.name = "b".into();
    b.col_offset = 4;
    let out = preprocess(&cfg(1, 4, 4), &[a, b]).unwrap();
    let rows: Vec<(u32, u32)> = out.devices[0].coo[0]
        .iter()
        .map(|e| (e.row_id, e.col_id))
        .collect();
    assert_eq!(rows, [(2, 0), (3, 1), (0, 6), (1, 7)]);
    assert_eq!(out.devices[0].sample_ids[..4], [2, 3, 0, 1]);
}

#[test]
fn computed_minibatching_splits_the_buckets() {
    let f = feature(&[vec![0, 1, 2, 3]]);
    let mut c = cfg(1, 2, 2);
    c.minibatching = true;
    let out = preprocess(&c, &[f]).unwrap();
    // The node over buckets 0..3 is the first of the second level: node 32.
    assert_eq!((out.split, out.num_minibatches), (1 << 32, 2));
    let d = &out.devices[0];
    assert_eq!(d.embedding_ids.len(), 512);
    assert_eq!(
        d.row_pointers,
        [2, 8, 8, 8, 8, 8, 8, 8, 10, 16, 16, 16, 16, 16, 16, 16]
    );
    assert_eq!(
        d.embedding_ids[..16],
        pads(&[(0, 0), (1, 1), (8, 2), (9, 3)], 16)[..]
    );
    assert_eq!(d.max_ids_per_partition, [4]);
    assert_eq!(d.required_buffer_size, [8]);
    assert_eq!(out.dropped_id_count, 0);
}

#[test]
fn minibatches_merge_stably_on_partition() {
    // 2 SCs in all, so partition = bucket parity. Partition 0 holds 0, 2, 4 (3 > 2): the
    // pairs and the nodes over 0..3 and 4..7 fit, the node over 0..7 (node 48) splits. Buckets
    // 0..3 share a minibatch, merged stably on partition: 0, 2 (partition 0), then 1, 3.
    let f = feature(&[vec![4, 3, 2, 1, 0]]);
    let mut c = PreprocessConfig::new(1, 1, 2, 2, 2);
    c.minibatching = true;
    let out = preprocess(&c, std::slice::from_ref(&f)).unwrap();
    let cols: Vec<u32> = out.devices[0].coo[0].iter().map(|e| e.col_id).collect();
    assert_eq!((out.split, out.num_minibatches), (1 << 48, 2));
    assert_eq!(cols, [0, 2, 1, 3, 4]);
    let d = &out.devices[0];
    // Minibatch 0: partition 0 at 0..2, partition 1 at 8..10; minibatch 1 from 16.
    assert_eq!(
        d.row_pointers,
        [2, 10, 16, 16, 16, 16, 16, 16, 17, 24, 24, 24, 24, 24, 24, 24]
    );
    assert_eq!(
        d.embedding_ids[..17],
        pads(&[(0, 0), (1, 1), (8, 0), (9, 1), (16, 2)], 17)[..]
    );

    // A pluggable hash: bucket = (col + 4) & 63 moves partition 0 to buckets 4, 6, 8, and the
    // split to the node over 0..15 (node 56).
    struct Shift4;
    impl MinibatchHash for Shift4 {
        fn hash(&self, col_id: u32) -> u32 {
            col_id + 4
        }
    }
    let out = preprocess_with_hash(&c, &[f], &Shift4).unwrap();
    assert_eq!((out.split, out.num_minibatches), (1 << 56, 2));
}

#[test]
fn caller_minibatches_are_chained() {
    let mut c = cfg(1, 2, 2);
    c.minibatching = true;
    let out = preprocess_minibatches(
        &c,
        &[vec![feature(&[vec![0, 1]])], vec![feature(&[vec![5]])]],
    )
    .unwrap();
    let d = &out.devices[0];
    assert_eq!(out.num_minibatches, 2);
    assert_eq!(d.embedding_ids, pads(&[(0, 0), (1, 1), (8, 5)], 16));
    assert_eq!(
        d.row_pointers,
        [2, 8, 8, 8, 8, 8, 8, 8, 9, 16, 16, 16, 16, 16, 16, 16]
    );
    assert_eq!(d.max_ids_per_partition, [2]);
    assert_eq!(d.required_buffer_size, [16]);
    c.minibatching = false;
    assert_eq!(
        preprocess_minibatches(&c, &[]).unwrap_err(),
        PreprocessError::MinibatchesWithoutMinibatching
    );
}

#[test]
fn configuration_and_batch_errors() {
    let f = feature(&[vec![0]]);
    let msg = |c: PreprocessConfig, fs: &[Feature]| preprocess(&c, fs).unwrap_err().to_string();
    assert_eq!(
        msg(
            PreprocessConfig::new(1, 0, 1, 1, 1),
            std::slice::from_ref(&f)
        ),
        "local_device_count must be greater than 0, but got 0"
    );
    assert_eq!(
        msg(
            PreprocessConfig::new(1, 2, 1, 1, 1),
            std::slice::from_ref(&f)
        ),
        "global_device_count must be greater than or equal to local_device_count, but got 1 vs 2"
    );
    assert_eq!(
        msg(
            PreprocessConfig::new(3, 1, 1, 1, 1),
            std::slice::from_ref(&f)
        ),
        "Total number of SparseCores (3) must be a power of 2."
    );
    assert_eq!(
        msg(cfg(1, 1, 1), &[]),
        "input_batches cannot be empty (the stack has no features)"
    );
    assert_eq!(
        msg(cfg(2, 1, 1), &[feature(&[vec![0], vec![1], vec![2]])]),
        "feature f has 3 samples, which do not split evenly over local_device_count * \
         num_sc_per_device = 2 slices"
    );
    assert_eq!(
        msg(cfg(1, 1, 1), &[feature(&[vec![-4]])]),
        "feature f, sample 0: id -4 is negative"
    );
    let mut g = feature(&[vec![0], vec![0]]);
    g.col_offset = 3;
    assert_eq!(
        msg(
            PreprocessConfig::new(2, 1, 1, 1, 1),
            &[feature(&[vec![0], vec![0]]), g]
        ),
        "feature f: col_offset 3 is not a non-negative multiple of num_scs (2)"
    );
    let mut h = feature(&[vec![0]]);
    h.row_offset = 1;
    assert!(msg(cfg(1, 1, 1), &[h]).starts_with("feature f: row_offset 1"));
}

#[test]
fn debug_checks_id_bounds_and_nan() {
    let mut f = feature(&[vec![0, 7]]);
    f.vocab_size = Some(7);
    let mut c = cfg(1, 4, 4);
    assert!(preprocess(&c, std::slice::from_ref(&f)).is_ok());
    c.check_id_bounds = true;
    assert_eq!(
        preprocess(&c, std::slice::from_ref(&f))
            .unwrap_err()
            .to_string(),
        "feature f, sample 0: id 7 is out of bounds of its table (7 rows)"
    );
    // A mean over weights summing to 0 divides by 0.
    let g = Feature::from_samples("g", &[vec![1, 2]], Some(&[vec![1.0, -1.0]])).unwrap();
    let mut c = cfg(1, 4, 4);
    c.combiner = Combiner::Mean;
    let out = preprocess(&c, std::slice::from_ref(&g)).unwrap();
    assert_eq!(out.devices[0].gains[0], f32::INFINITY);
    c.check_nan = true;
    assert_eq!(
        preprocess(&c, &[g]).unwrap_err().to_string(),
        "feature g, sample 0: gain is inf (NaN check)"
    );
}

// The worked examples of the peer's own tests (jax-tpu-embedding,
// `lib/core/tests/input_preprocessing_util_test.cc` `SortAndGroupTest.IdDropping` and
// `tests/input_preprocessing_test.py` `InputPreprocessingMinibatchingTest`), with their expected
// values.

#[test]
fn peer_id_dropping() {
    // 16 samples of [0, 1, 2, 3] on 4 SCs, max_ids 2, max_unique 1, dropping allowed: each SC
    // keeps its first two samples per partition.
    let f = feature(&vec![vec![0, 1, 2, 3]; 16]);
    let mut c = cfg(4, 2, 1);
    c.allow_id_dropping = true;
    let out = preprocess(&c, &[f]).unwrap();
    assert_eq!(out.dropped_id_count, 32);
    let d = &out.devices[0];
    assert_eq!(d.max_ids_per_partition, [4, 4, 4, 4]);
    assert_eq!(d.max_unique_ids_per_partition, [1, 1, 1, 1]);
    assert_eq!(d.required_buffer_size, [32, 32, 32, 32]);
    for (k, coo) in d.coo.iter().enumerate() {
        let want: Vec<CooEntry> = (0..4)
            .flat_map(|col| {
                (0..2).map(move |r| CooEntry {
                    row_id: 4 * k as u32 + r,
                    col_id: col,
                    gain: 1.0,
                })
            })
            .collect();
        assert_eq!(coo, &want);
    }
}

#[test]
fn peer_multi_minibatch_exact_contents() {
    let mb1 = feature(&[vec![5], vec![3], vec![9, 1], vec![6, 12, 0]]);
    let mb2 = feature(&[vec![4], vec![15, 13, 11], vec![7, 8, 14, 2], vec![10]]);
    let mut c = cfg(2, 16, 64);
    c.minibatching = true;
    let out = preprocess_minibatches(&c, &[vec![mb1], vec![mb2]]).unwrap();
    let d = &out.devices[0];
    #[rustfmt::skip]
    let rp = [
        0, 2, 8, 8, 8, 8, 8, 8,
        9, 19, 24, 24, 24, 24, 24, 24,
        27, 34, 40, 40, 40, 40, 40, 40,
        44, 49, 56, 56, 56, 56, 56, 56,
    ];
    assert_eq!(d.row_pointers, rp);
    let cells = [
        (0, 1, 1),
        (1, 2, 0),
        (8, 2, 0),
        (16, 5, 1),
        (17, 6, 1),
        (18, 7, 1),
        (24, 0, 1),
        (25, 3, 1),
        (26, 6, 1),
        (32, 0, 0),
        (33, 4, 0),
        (40, 1, 0),
        (41, 4, 0),
        (42, 5, 1),
        (43, 7, 0),
        (48, 3, 0),
    ];
    let emb: Vec<(usize, i32)> = cells.iter().map(|&(i, e, _)| (i, e)).collect();
    let smp: Vec<(usize, i32)> = cells.iter().map(|&(i, _, s)| (i, s)).collect();
    let ones: Vec<(usize, f32)> = cells.iter().map(|&(i, _, _)| (i, 1.0)).collect();
    assert_eq!(d.embedding_ids, pads(&emb, 128));
    assert_eq!(d.sample_ids, pads(&smp, 128));
    assert_eq!(bits(&d.gains), gains_at(&ones, 128));
}

#[test]
fn peer_deduplication_with_summing_gains() {
    let f = Feature::from_samples(
        "f",
        &[vec![18, 18], vec![0]],
        Some(&[vec![1.0, 2.0], vec![3.0]]),
    )
    .unwrap();
    let mut c = cfg(1, 16, 64);
    c.minibatching = true;
    let out = preprocess_minibatches(&c, &[vec![f]]).unwrap();
    let d = &out.devices[0];
    assert_eq!(d.row_pointers, [2, 8, 8, 8, 8, 8, 8, 8]);
    assert_eq!(d.embedding_ids, pads(&[(0, 0), (1, 18)], 16));
    assert_eq!(d.sample_ids, pads(&[(0, 1), (1, 0)], 16));
    assert_eq!(bits(&d.gains), gains_at(&[(0, 3.0), (1, 3.0)], 16));
}

#[test]
fn shared_rows_take_the_last_divisor_without_weights() {
    // Two features on the same rows (both row_offset 0): without weights the peer keeps one
    // divisor per row, the last feature's (3 ids: 1/3 for all five); with weights each entry
    // keeps its own sample's (1/2 and 1/3).
    let a = feature(&[vec![1, 2]]);
    let b = feature(&[vec![3, 4, 5]]);
    let mut c = cfg(1, 8, 8);
    c.combiner = Combiner::Mean;
    let out = preprocess(&c, &[a, b]).unwrap();
    let gains: Vec<f32> = out.devices[0].coo[0].iter().map(|e| e.gain).collect();
    assert_eq!(gains, [1.0 / 3.0; 5]);
    let a = Feature::from_samples("a", &[vec![1, 2]], Some(&[vec![1.0, 1.0]])).unwrap();
    let b = feature(&[vec![3, 4, 5]]);
    let out = preprocess(&c, &[a, b]).unwrap();
    let gains: Vec<f32> = out.devices[0].coo[0].iter().map(|e| e.gain).collect();
    assert_eq!(gains, [0.5, 0.5, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0]);
    // An empty sample written last makes the row's gain 1/0: the NaN check names it.
    let a = feature(&[vec![1, 2]]);
    let mut e = feature(&[vec![]]);
    e.name = "e".into();
    c.check_nan = true;
    assert_eq!(
        preprocess(&c, &[a, e]).unwrap_err().to_string(),
        "feature e, sample 0: gain is inf (NaN check)"
    );
}

/// Configurations whose buffers would take gigabytes are refused before anything is allocated
/// (no out-of-memory kill), with the bytes of each part and the keys they come from.
#[test]
fn host_memory_is_capped_before_allocating() {
    let f = feature(&[vec![1], vec![2]]);
    // global_device_count 2^27: buffers of 8 * 2^27 = 2^30 entries (12 GiB), row pointers
    // 2^27 * 4 bytes, counters 2^27 * 8 * (1 + 1) bytes.
    let mut c = PreprocessConfig::new(1, 1, 1 << 27, 8, 8);
    let e = preprocess(&c, std::slice::from_ref(&f)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "table table: preprocessing would allocate 15569256448 bytes of host memory, more than \
         max_host_bytes = 1073741824: 12884901888 bytes of output buffers (local_device_count 1 \
         x buffer length 1073741824 x 12 bytes; buffer length = roundup8(max_ids_per_partition \
         = 8) x num_sc_per_device x num_scs), 536870912 bytes of row pointers \
         (local_device_count x num_sc_per_device x max(num_scs, 8) x 4 bytes), 2147483648 bytes \
         of partition counters and statistics (local_device_count x num_scs x 8 x \
         (num_sc_per_device + 1) bytes); num_sc_per_device = 1, num_scs = num_sc_per_device x \
         global_device_count = 1 x 134217728 = 134217728"
    );
    let needed = |c: &PreprocessConfig| match preprocess(c, std::slice::from_ref(&f)) {
        Err(PreprocessError::HostMemory { needed, limit, .. }) => (needed, limit),
        other => panic!("{other:?}"),
    };
    // minibatching multiplies everything by 64: 2^20 SparseCores
    c.global_device_count = 1 << 20;
    c.minibatching = true;
    assert_eq!(
        needed(&c),
        (
            (8 << 20) * 64 * 12 + 64 * (1 << 20) * 4 + (1 << 20) * 8 * 65,
            1 << 30
        )
    );
    // a huge max_ids_per_partition on one SparseCore: 2 * 10^8 entries
    let big = PreprocessConfig::new(1, 1, 1, 200_000_000, 8);
    assert_eq!(needed(&big).0, 2_400_000_000 + 32 + 16);
    // many local devices: 2^16 devices of 8 * 2^16 entries (exact, no overflow)
    let many = PreprocessConfig::new(1, 1 << 16, 1 << 16, 8, 8);
    assert_eq!(
        needed(&many).0,
        (1u128 << 16) * ((8 << 16) * 12 + (1 << 16) * 4 + (1 << 16) * 8 * 2)
    );
    // the suggested size is what is allocated: 10^8 entries of 2^16 * 2048 allowed
    let mut sug = PreprocessConfig::new(1, 1, 1 << 16, 2048, 8);
    sug.suggested_coo_buffer_size = Some(100_000_000);
    let e = preprocess(&sug, std::slice::from_ref(&f)).unwrap_err();
    assert!(
        e.to_string().contains(
            "1200000000 bytes of output buffers (local_device_count 1 x buffer length \
             100000000 x 12 bytes; buffer length = suggested_coo_buffer_size = 100000000 \
             rounded up to 8 x num_sc_per_device)"
        ),
        "{e}"
    );
    // caller minibatches multiply by their number: 3 minibatches of 8 * 2^25 entries
    let mut mb = PreprocessConfig::new(1, 1, 1 << 25, 8, 8);
    mb.minibatching = true;
    let e = preprocess_minibatches(&mb, &[vec![f.clone()], vec![f.clone()], vec![f.clone()]])
        .unwrap_err();
    assert!(
        matches!(e, PreprocessError::HostMemory { needed, .. }
            if needed == (8u128 << 25) * 3 * 12 + 3 * (1 << 25) * 4 + (1 << 25) * 8 * 4),
        "{e:?}"
    );
    // the cap is the config's: the public check needs exactly 1824 bytes
    // (128 * 12 + 4 * 8 * 4 + 4 * 8 * 5)
    let eight = feature(&vec![vec![0, 1, 2, 3]; 8]);
    let mut small = cfg(4, 8, 8);
    small.max_host_bytes = 1824;
    assert!(preprocess(&small, std::slice::from_ref(&eight)).is_ok());
    small.max_host_bytes = 1823;
    assert_eq!(
        match preprocess(&small, std::slice::from_ref(&eight)) {
            Err(PreprocessError::HostMemory { needed, limit, .. }) => (needed, limit),
            other => panic!("{other:?}"),
        },
        (1824, 1823)
    );
}
