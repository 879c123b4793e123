//! Property tests of SparseCore preprocessing: the buffers decode back to the deduplicated COO
//! of an independent reference (so every id lands in exactly one partition), computed
//! minibatches respect the limits per partition, and nothing depends on the thread count.

use std::collections::BTreeMap;

use proptest::prelude::*;
use sparse_runtime::sparsecore::{
    preprocess, Combiner, DeviceBuffers, Feature, PreprocessConfig, Preprocessed,
};

/// One feature: samples of (id, weight), weighted or not, col_shift, col_offset / num_scs.
type FeatureCase = (Vec<Vec<(i64, f32)>>, bool, i64, i64);

/// (partition, local id, row) and the gain.
type Decoded = ((i64, i64, i64), f32);

#[derive(Clone, Debug)]
struct Case {
    s: u32,
    local: u32,
    global: u32,
    combiner: Combiner,
    /// Per feature: samples (ids, weights), col_shift, col_offset multiple.
    features: Vec<FeatureCase>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::sample::select(vec![1u32, 2, 4]),
        1u32..=2,
        prop::sample::select(vec![Combiner::Sum, Combiner::Mean, Combiner::Sqrtn]),
    )
        .prop_flat_map(|(s, global, combiner)| {
            (1..=global).prop_flat_map(move |local| {
                let slices = (local * s) as usize;
                let feature = (
                    (1usize..=3).prop_flat_map(move |per| {
                        prop::collection::vec(
                            prop::collection::vec(
                                (0i64..40, prop::sample::select(vec![0.5f32, 1.0, 2.0, 3.0])),
                                0..6,
                            ),
                            per * slices,
                        )
                    }),
                    any::<bool>(),
                    0i64..8,
                    0i64..3,
                );
                prop::collection::vec(feature, 1..=2).prop_map(move |features| Case {
                    s,
                    local,
                    global,
                    combiner,
                    features,
                })
            })
        })
}

impl Case {
    fn num_scs(&self) -> i64 {
        i64::from(self.s * self.global)
    }

    fn features(&self) -> Vec<Feature> {
        let mut row_offset = 0u64;
        self.features
            .iter()
            .enumerate()
            .map(|(i, (samples, weighted, shift, off))| {
                let ids: Vec<Vec<i64>> = samples
                    .iter()
                    .map(|s| s.iter().map(|p| p.0).collect())
                    .collect();
                let ws: Vec<Vec<f32>> = samples
                    .iter()
                    .map(|s| s.iter().map(|p| p.1).collect())
                    .collect();
                let mut f =
                    Feature::from_samples(&format!("f{i}"), &ids, weighted.then_some(&ws[..]))
                        .unwrap();
                f.row_offset = row_offset;
                f.col_shift = *shift;
                f.col_offset = off * self.num_scs();
                // Global rows: this host's samples times the devices per host.
                row_offset +=
                    (samples.len() as u64 / u64::from(self.local)) * u64::from(self.global);
                f
            })
            .collect()
    }

    fn config(&self, max_ids: u32, max_unique: u32) -> PreprocessConfig {
        let mut c = PreprocessConfig::new(self.s, self.local, self.global, max_ids, max_unique);
        c.combiner = self.combiner;
        c
    }

    /// The deduplicated COO per (device, local SC), computed without the library: rows of §1,
    /// columns of §2, gains of §3, duplicates summed in input order.
    fn reference(&self) -> Vec<BTreeMap<(i64, i64, i64), f32>> {
        let (s, l) = (self.s as usize, self.local as usize);
        let n = self.num_scs();
        let per: Vec<usize> = self.features.iter().map(|f| f.0.len() / (l * s)).collect();
        let bs: usize = per.iter().sum();
        let mut out = vec![BTreeMap::new(); l * s];
        for (t, map) in out.iter_mut().enumerate() {
            let k = t % s;
            let mut first_row = 0;
            for (fi, (samples, weighted, shift, off)) in self.features.iter().enumerate() {
                for j in 0..per[fi] {
                    let sample = &samples[t * per[fi] + j];
                    let row = (k * bs + first_row + j) as i64;
                    let w: Vec<f32> = sample
                        .iter()
                        .map(|p| if *weighted { p.1 } else { 1.0 })
                        .collect();
                    let divisor = match (self.combiner, weighted) {
                        (Combiner::Sum, _) => 1.0,
                        (Combiner::Mean, true) => w.iter().fold(0.0f32, |a, &x| a + x),
                        (Combiner::Mean, false) => w.len() as f32,
                        (Combiner::Sqrtn, true) => w
                            .iter()
                            .fold(0.0f32, |a, &x| (f64::from(a) + f64::from(x * x)) as f32)
                            .sqrt(),
                        (Combiner::Sqrtn, false) => (w.len() as f32).sqrt(),
                    };
                    for (p, &wi) in sample.iter().zip(&w) {
                        let col = (p.0 + shift) % n + p.0 / n * n + off * n;
                        *map.entry((col % n, col / n, row)).or_insert(0.0f32) += wi / divisor;
                    }
                }
                first_row += per[fi];
            }
        }
        out
    }
}

/// The entries of one device's buffers, per local SC, as ((partition, local id, row), gain)
/// in buffer order. Without minibatching each SC owns `len / S` and its pointers are relative.
fn decode(d: &DeviceBuffers, s: usize, num_scs: usize, bs: usize) -> Vec<Vec<Decoded>> {
    let r = num_scs.max(8);
    let len = d.embedding_ids.len();
    (0..s)
        .map(|k| {
            let base = k * len / s;
            let rp = &d.row_pointers[k * r..(k + 1) * r];
            let mut out = Vec::new();
            let mut start = 0usize;
            for (p, &end) in rp.iter().take(num_scs).enumerate() {
                for i in start..end as usize {
                    let row = (k * bs) as i64 + i64::from(d.sample_ids[base + i]);
                    out.push((
                        (p as i64, i64::from(d.embedding_ids[base + i]), row),
                        d.gains[base + i],
                    ));
                }
                start = (end as usize).div_ceil(8) * 8;
            }
            out
        })
        .collect()
}

fn same(a: &Preprocessed, b: &Preprocessed) -> bool {
    let bits = |p: &Preprocessed| -> Vec<Vec<u32>> {
        p.devices
            .iter()
            .map(|d| d.gains.iter().map(|g| g.to_bits()).collect())
            .collect()
    };
    let strip = |p: &Preprocessed| {
        let mut p = p.clone();
        for d in &mut p.devices {
            d.gains.clear();
            for sc in &mut d.coo {
                for e in sc {
                    e.gain = 0.0;
                }
            }
        }
        p
    };
    let coo_bits = |p: &Preprocessed| -> Vec<u32> {
        p.devices
            .iter()
            .flat_map(|d| d.coo.iter().flatten().map(|e| e.gain.to_bits()))
            .collect()
    };
    bits(a) == bits(b) && strip(a) == strip(b) && coo_bits(a) == coo_bits(b)
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every deduplicated (row, col) pair is in the buffers exactly once, in its partition, in
    /// (partition, local id, row) order, with the reference's gain, bit for bit.
    #[test]
    fn buffers_decode_to_the_deduplicated_coo(c in case()) {
        let out = preprocess(&c.config(1000, 1000), &c.features()).unwrap();
        let reference = c.reference();
        let (s, n) = (c.s as usize, c.num_scs() as usize);
        let per: usize = c.features.iter().map(|f| f.0.len() / (c.local as usize * s)).sum();
        prop_assert_eq!(out.dropped_id_count, 0);
        for (d, dev) in out.devices.iter().enumerate() {
            for (k, got) in decode(dev, s, n, per).into_iter().enumerate() {
                let want: Vec<((i64, i64, i64), u32)> =
                    reference[d * s + k].iter().map(|(&key, g)| (key, g.to_bits())).collect();
                let got: Vec<((i64, i64, i64), u32)> =
                    got.into_iter().map(|(key, g)| (key, g.to_bits())).collect();
                prop_assert_eq!(got, want);
            }
        }
    }

    /// Computed minibatching with dropping: every (SC, minibatch, partition) of the buffers
    /// holds at most `max_ids` entries and `max_unique` distinct ids.
    #[test]
    fn minibatches_respect_the_limits(c in case(), max_ids in 1u32..6, max_unique in 1u32..6) {
        let mut cfg = c.config(max_ids, max_unique);
        cfg.minibatching = true;
        cfg.allow_id_dropping = true;
        let out = preprocess(&cfg, &c.features()).unwrap();
        let n = c.num_scs() as usize;
        let r = n.max(8);
        for dev in &out.devices {
            let mut start = 0usize;
            let mut slot = 0;
            for _ in 0..c.s as usize * out.num_minibatches {
                if out.num_minibatches == 1 {
                    // Single minibatch: SC k starts at the sum of required sizes before it.
                    let k = slot / r;
                    start = dev.required_buffer_size[..k].iter().sum::<u32>() as usize;
                }
                for p in 0..n {
                    let end = dev.row_pointers[slot + p] as usize;
                    prop_assert!(end >= start);
                    prop_assert!(end - start <= max_ids as usize);
                    let mut ids: Vec<i32> = dev.embedding_ids[start..end].to_vec();
                    ids.sort_unstable();
                    ids.dedup();
                    prop_assert!(ids.len() <= max_unique as usize);
                    start = end.div_ceil(8) * 8;
                }
                // The next segment starts at the aligned end of this one.
                slot += r;
            }
        }
    }

    /// The same output with 1 and 2 threads.
    #[test]
    fn independent_of_the_thread_count(c in case(), minibatching in any::<bool>()) {
        let mut cfg = c.config(3, 2);
        cfg.allow_id_dropping = true;
        cfg.minibatching = minibatching;
        let fs = c.features();
        let one = pool(1).install(|| preprocess(&cfg, &fs)).unwrap();
        let two = pool(2).install(|| preprocess(&cfg, &fs)).unwrap();
        prop_assert!(same(&one, &two));
    }
}
