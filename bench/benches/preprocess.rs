//! SparseCore host preprocessing (`sparse::runtime::sparsecore::preprocess`): ids per second on
//! a synthetic batch of 1,048,576 ids (16,384 samples of 64 ids; labelled synthetic).
//!
//! ```text
//! cargo bench --manifest-path bench/Cargo.toml --bench preprocess
//! ```
//!
//! Configuration: a v5p-like slice, `num_sc_per_device = 4`, one local device of 16
//! (`num_scs = 64`), sum combiner, no weights. Cases:
//! - `uniform`: ids uniform in `0..10_000_000`, limits 8192 (nothing dropped, one minibatch);
//! - `skewed+minibatching`: ids log-uniform in `0..10_000_000` (small ids far more frequent),
//!   limits 2048 with `minibatching` and `allow_id_dropping`, buckets by the peer's production
//!   HighwayHash, so the split of the reference's §6 is computed and applied (the hottest
//!   columns alone exceed the limit and are partly dropped), buffer length suggested as 2 entries
//!   per id (the default would be 64 times the non-minibatching buffer, 403 MB to fill).
//!
//! Criterion's throughput is in elements = ids, so its report reads ids per second. The ids come
//! from a fixed xorshift sequence, so every run preprocesses the same batch. (With `num_scs = 64`
//! the identity hash would put each partition in one bucket, bucket = partition = `col_id & 63`,
//! so splitting buckets could never shrink a partition.)

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use sparse::runtime::sparsecore::{preprocess_with_hash, Feature, HighwayHash, PreprocessConfig};

const SAMPLES: usize = 16_384;
const IDS_PER_SAMPLE: usize = 64;
const VOCAB: f64 = 10_000_000.0;

/// xorshift64*: a fixed pseudo-random sequence in [0, 1).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn batch(skewed: bool) -> Feature {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let samples: Vec<Vec<i64>> = (0..SAMPLES)
        .map(|_| {
            (0..IDS_PER_SAMPLE)
                .map(|_| {
                    let u = rng.next();
                    if skewed {
                        VOCAB.powf(u) as i64 - 1
                    } else {
                        (u * VOCAB) as i64
                    }
                })
                .collect()
        })
        .collect();
    Feature::from_samples("synthetic", &samples, None).expect("a valid batch")
}

fn bench(c: &mut Criterion) {
    let ids = (SAMPLES * IDS_PER_SAMPLE) as u64;
    let mut group = c.benchmark_group("sparsecore_preprocess");
    group.throughput(Throughput::Elements(ids));
    group.sample_size(10);
    for (name, skewed) in [("uniform", false), ("skewed+minibatching", true)] {
        let features = [batch(skewed)];
        let mut cfg = PreprocessConfig::new(4, 1, 16, 8192, 8192);
        if skewed {
            cfg = PreprocessConfig::new(4, 1, 16, 2048, 2048);
            cfg.minibatching = true;
            cfg.allow_id_dropping = true;
            // The default buffer is 64 times the theoretical one (33,554,432 entries, 403 MB
            // per device); a suggested size, as production sets, keeps it to 2 entries per id.
            cfg.suggested_coo_buffer_size = Some(2 * ids);
        }
        let out =
            preprocess_with_hash(&cfg, &features, &HighwayHash).expect("preprocessing succeeds");
        eprintln!(
            "{name}: {} ids, {} minibatches, {} dropped, max ids per partition {:?}",
            ids,
            out.num_minibatches,
            out.dropped_id_count,
            out.devices[0].max_ids_per_partition.iter().max()
        );
        group.bench_function(name, |b| {
            b.iter(|| preprocess_with_hash(black_box(&cfg), black_box(&features), &HighwayHash))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
