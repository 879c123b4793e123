//! The preprocessing pipeline (reference §1 to §6), one stacked table at a time.
//!
//! Per local SparseCore (in parallel, rayon): extract the COO entries of its slice of every
//! feature (§1 rows, §2 columns, §3 gains), sort them by a key `(bucket, rotated col_id, data)`
//! as the peer's `GetGroupingKey` does, then dedup, count and drop in one pass (the peer's
//! `GroupAndDeduplicateCooTensorsForLocalSparseCore`). Per device (in parallel): fill the
//! buffers segment by segment (the peer's `FillBufferSegment`). Every task writes only its own
//! output and results are gathered in task order, so nothing depends on the thread count.
//!
//! Two details the reference leaves open, settled as the peer's code does:
//! - the tie-break of the sort (`data`): the entry's index in extraction order when any feature
//!   of the stack has weights, else its row id (ties then hold equal gains);
//! - dropping keeps counting: an entry past `max_ids` of its (partition, bucket) is dropped,
//!   a new column past `max_unique` drops all its entries, a duplicate of a dropped entry is
//!   dropped (counted) without being counted as an observed id.

use rayon::prelude::*;

use super::minibatch::{bucket_minibatches, bucket_of, split_in_place, MinibatchHash, NUM_BUCKETS};
use super::{
    col_id, round_up, CooEntry, DeviceBuffers, Feature, IdentityHash, PreprocessConfig,
    PreprocessError, Preprocessed, ALIGNMENT, PAD,
};

type Result<T> = std::result::Result<T, PreprocessError>;

/// Preprocesses one stacked table's batch with the identity bucket hash; see
/// [`preprocess_with_hash`].
pub fn preprocess(cfg: &PreprocessConfig, features: &[Feature]) -> Result<Preprocessed> {
    preprocess_with_hash(cfg, features, &IdentityHash)
}

/// Preprocesses one stacked table's batch: this host's samples of every feature of the stack
/// (taken in ascending `row_offset`, stable), to the `SparseDenseMatmul` input buffers of each
/// local device and their statistics, as jax-tpu-embedding's
/// `preprocess_sparse_dense_matmul_input` does (SparseCore reference §1 to §6).
///
/// With `cfg.minibatching`, minibatching is computed: when a partition exceeds a limit, ids go
/// to 64 buckets by `hash` and the split of §6 decides the minibatches; limits (errors or
/// dropping) then apply per (partition, bucket). Statistics are always those of the whole batch.
///
/// Errors: the configuration ([`PreprocessError::LocalDeviceCount`],
/// [`GlobalDeviceCount`](PreprocessError::GlobalDeviceCount),
/// [`GlobalBelowLocal`](PreprocessError::GlobalBelowLocal),
/// [`NumScPerDevice`](PreprocessError::NumScPerDevice),
/// [`NotPowerOfTwo`](PreprocessError::NotPowerOfTwo),
/// [`LimitNotPositive`](PreprocessError::LimitNotPositive),
/// [`SuggestedTooLarge`](PreprocessError::SuggestedTooLarge),
/// [`BufferSize`](PreprocessError::BufferSize)); the batch ([`NoFeatures`](PreprocessError::NoFeatures),
/// [`RowSplits`](PreprocessError::RowSplits), [`WeightsShape`](PreprocessError::WeightsShape),
/// [`UnevenSamples`](PreprocessError::UnevenSamples),
/// [`BatchTooSmall`](PreprocessError::BatchTooSmall), [`RowOffset`](PreprocessError::RowOffset),
/// [`ColOffset`](PreprocessError::ColOffset), [`NegativeId`](PreprocessError::NegativeId),
/// [`ColIdRange`](PreprocessError::ColIdRange)); a configuration whose buffers exceed
/// `cfg.max_host_bytes` ([`HostMemory`](PreprocessError::HostMemory), before anything is
/// allocated); limits exceeded without dropping
/// ([`MaxIdsExceeded`](PreprocessError::MaxIdsExceeded), checked first, then
/// [`MaxUniqueIdsExceeded`](PreprocessError::MaxUniqueIdsExceeded), the observed value the
/// largest); [`Alloc`](PreprocessError::Alloc).
pub fn preprocess_with_hash<H: MinibatchHash + Sync + ?Sized>(
    cfg: &PreprocessConfig,
    features: &[Feature],
    hash: &H,
) -> Result<Preprocessed> {
    let geo = Geometry::new(cfg)?;
    let factor = if cfg.minibatching {
        NUM_BUCKETS as u64
    } else {
        1
    };
    let len = geo.buffer_len(cfg, factor)?;
    geo.check_host_memory(cfg, len, factor)?;
    let stack = Stack::new(cfg, &geo, features)?;
    let extracted = extract_all(&geo, &stack)?;

    // Pass A: no buckets; it drops only without minibatching.
    let drop_a = cfg.allow_id_dropping && !cfg.minibatching;
    let pass_a: Vec<Grouped> = extracted
        .par_iter()
        .map(|ex| group(ex, &geo, cfg, stack.has_weights, 1, hash, drop_a))
        .collect();
    let stats = device_stats(&geo, [pass_a.as_slice()]);
    let exceeds = |g: &Grouped| {
        g.ids.iter().any(|&n| n > cfg.max_ids_per_partition)
            || g.unique
                .iter()
                .any(|&n| n > cfg.max_unique_ids_per_partition)
    };
    let needed = cfg.minibatching && pass_a.iter().any(exceeds);

    let (segments, dropped, split, num_mb) = if !needed {
        if !cfg.minibatching && !cfg.allow_id_dropping {
            check_limits(cfg, &pass_a)?;
        }
        let dropped = pass_a.iter().map(|g| g.dropped).sum::<u64>();
        let segs: Vec<Vec<Segment>> = pass_a
            .into_iter()
            .map(|g| {
                vec![Segment {
                    entries: g.entries,
                    batch_size_per_sc: stack.batch_size_per_sc,
                }]
            })
            .collect();
        (segs, dropped, 0, 1)
    } else {
        drop(pass_a);
        let pass_b: Vec<Grouped> = extracted
            .par_iter()
            .map(|ex| {
                group(
                    ex,
                    &geo,
                    cfg,
                    stack.has_weights,
                    NUM_BUCKETS,
                    hash,
                    cfg.allow_id_dropping,
                )
            })
            .collect();
        if !cfg.allow_id_dropping {
            check_limits(cfg, &pass_b)?;
        }
        let mut split = 0u64;
        let mut buf = [0u64; NUM_BUCKETS];
        for g in &pass_b {
            for (counts, limit) in [
                (&g.ids, cfg.max_ids_per_partition),
                (&g.unique, cfg.max_unique_ids_per_partition),
            ] {
                for row in counts.chunks_exact(NUM_BUCKETS) {
                    for (b, &n) in buf.iter_mut().zip(row) {
                        *b = u64::from(n);
                    }
                    split |= split_in_place(&mut buf, u64::from(limit));
                }
            }
        }
        let mb_of = bucket_minibatches(split, NUM_BUCKETS);
        let num_mb = split.count_ones() as usize + 1;
        let dropped = pass_b.iter().map(|g| g.dropped).sum::<u64>();
        let mask = geo.num_scs - 1;
        let segs: Vec<Vec<Segment>> = pass_b
            .into_par_iter()
            .map(|g| {
                let mut out: Vec<Segment> = (0..num_mb)
                    .map(|_| Segment {
                        entries: Vec::new(),
                        batch_size_per_sc: stack.batch_size_per_sc,
                    })
                    .collect();
                for b in 0..NUM_BUCKETS {
                    let part = &g.entries[g.offsets[b]..g.offsets[b + 1]];
                    out[mb_of[b]].entries.extend_from_slice(part);
                }
                // Buckets merged into one minibatch are merged stably on partition.
                for s in &mut out {
                    s.entries.sort_by_key(|e| e.col_id & mask);
                }
                out
            })
            .collect();
        (segs, dropped, split, num_mb)
    };
    assemble(
        &geo,
        len,
        segments,
        stats,
        dropped,
        split,
        num_mb,
        cfg.minibatching,
    )
}

/// Preprocesses minibatches chosen by the caller, as the Python reference
/// `input_preprocessing.py` takes them: each minibatch is preprocessed as a batch of its own
/// (its own sample ids, limits checked per minibatch, no buckets), and the segments are packed
/// SC by SC, minibatch after minibatch, into buffers `roundup8(max_ids_per_partition) * S *
/// num_scs * minibatches.len()` long (row pointers absolute). `max_*` statistics are the maximum
/// over minibatches, `required_buffer_size` and `dropped_id_count` their sum.
///
/// Errors: [`PreprocessError::MinibatchesWithoutMinibatching`] unless `cfg.minibatching`,
/// [`PreprocessError::NoMinibatches`] for an empty list, and every error of
/// [`preprocess_with_hash`] for each minibatch.
pub fn preprocess_minibatches(
    cfg: &PreprocessConfig,
    minibatches: &[Vec<Feature>],
) -> Result<Preprocessed> {
    if !cfg.minibatching {
        return Err(PreprocessError::MinibatchesWithoutMinibatching);
    }
    let geo = Geometry::new(cfg)?;
    if minibatches.is_empty() {
        return Err(PreprocessError::NoMinibatches);
    }
    let len = geo.buffer_len(cfg, minibatches.len() as u64)?;
    geo.check_host_memory(cfg, len, minibatches.len() as u64)?;
    let n_tasks = geo.tasks();
    let mut segments: Vec<Vec<Segment>> = (0..n_tasks).map(|_| Vec::new()).collect();
    let mut passes = Vec::with_capacity(minibatches.len());
    let mut dropped = 0;
    for features in minibatches {
        let stack = Stack::new(cfg, &geo, features)?;
        let extracted = extract_all(&geo, &stack)?;
        let pass: Vec<Grouped> = extracted
            .par_iter()
            .map(|ex| {
                group(
                    ex,
                    &geo,
                    cfg,
                    stack.has_weights,
                    1,
                    &IdentityHash,
                    cfg.allow_id_dropping,
                )
            })
            .collect();
        if !cfg.allow_id_dropping {
            check_limits(cfg, &pass)?;
        }
        dropped += pass.iter().map(|g| g.dropped).sum::<u64>();
        passes.push((pass, stack.batch_size_per_sc));
    }
    let stats = device_stats(&geo, passes.iter().map(|(p, _)| p.as_slice()));
    for (pass, bs) in passes {
        for (t, g) in pass.into_iter().enumerate() {
            segments[t].push(Segment {
                entries: g.entries,
                batch_size_per_sc: bs,
            });
        }
    }
    assemble(
        &geo,
        len,
        segments,
        stats,
        dropped,
        0,
        minibatches.len(),
        true,
    )
}

/// The validated shape of the system.
struct Geometry {
    /// `S`.
    s: usize,
    /// Local devices.
    local: usize,
    /// Global devices.
    global: u64,
    /// `S * global`, a power of two.
    num_scs: u32,
    /// `log2(num_scs)`.
    bits: u32,
}

impl Geometry {
    fn new(cfg: &PreprocessConfig) -> Result<Geometry> {
        if cfg.local_device_count == 0 {
            return Err(PreprocessError::LocalDeviceCount(0));
        }
        if cfg.global_device_count == 0 {
            return Err(PreprocessError::GlobalDeviceCount(0));
        }
        if cfg.global_device_count < cfg.local_device_count {
            return Err(PreprocessError::GlobalBelowLocal {
                global: cfg.global_device_count,
                local: cfg.local_device_count,
            });
        }
        if cfg.num_sc_per_device == 0 {
            return Err(PreprocessError::NumScPerDevice(0));
        }
        let n = cfg.num_scs();
        if !n.is_power_of_two() {
            return Err(PreprocessError::NotPowerOfTwo(n));
        }
        // The buffer holds at least 8 * S * num_scs entries, below i32::MAX.
        if n > 1 << 28 {
            return Err(PreprocessError::BufferSize {
                table: cfg.table.clone(),
                size: n.saturating_mul(8 * u64::from(cfg.num_sc_per_device)),
            });
        }
        for (name, value) in [
            ("max_ids_per_partition", cfg.max_ids_per_partition),
            (
                "max_unique_ids_per_partition",
                cfg.max_unique_ids_per_partition,
            ),
        ] {
            if value == 0 {
                return Err(PreprocessError::LimitNotPositive {
                    name,
                    value: i64::from(value),
                });
            }
        }
        Ok(Geometry {
            s: cfg.num_sc_per_device as usize,
            local: cfg.local_device_count as usize,
            global: u64::from(cfg.global_device_count),
            num_scs: n as u32,
            bits: n.trailing_zeros(),
        })
    }

    /// Local SparseCores of the host (`L * S`), the parallel tasks.
    fn tasks(&self) -> usize {
        self.local * self.s
    }

    /// The buffer length per device: `roundup8(max_ids) * S * num_scs * factor`, or the
    /// suggested size rounded up to `8 * S` (at most that).
    fn buffer_len(&self, cfg: &PreprocessConfig, factor: u64) -> Result<usize> {
        let max = round_up(u64::from(cfg.max_ids_per_partition), ALIGNMENT as u64)
            .saturating_mul(self.s as u64)
            .saturating_mul(u64::from(self.num_scs))
            .saturating_mul(factor);
        let size = match cfg.suggested_coo_buffer_size {
            None => max,
            Some(sug) => {
                let sug = round_up(sug, ALIGNMENT as u64 * self.s as u64);
                if sug > max {
                    return Err(PreprocessError::SuggestedTooLarge {
                        table: cfg.table.clone(),
                        suggested: sug,
                        max,
                    });
                }
                sug
            }
        };
        if size == 0 || size >= i32::MAX as u64 {
            return Err(PreprocessError::BufferSize {
                table: cfg.table.clone(),
                size,
            });
        }
        Ok(size as usize)
    }

    /// The bytes the configuration sizes (the model of [`PreprocessError::HostMemory`], exact
    /// in `u128`: no product can overflow) for buffers `len` entries long per device and
    /// minibatch factor `factor`; more than `cfg.max_host_bytes` is that error.
    fn check_host_memory(&self, cfg: &PreprocessConfig, len: usize, factor: u64) -> Result<()> {
        let l = self.local as u128;
        let s = self.s as u128;
        let ns = u128::from(self.num_scs);
        let f = u128::from(factor);
        let buffers = l * len as u128 * 12;
        let row_pointers = l * s * f * ns.max(ALIGNMENT as u128) * 4;
        let counters = l * ns * 8 * (s * f + 1);
        let needed = buffers + row_pointers + counters;
        if needed <= u128::from(cfg.max_host_bytes) {
            return Ok(());
        }
        let mb_key = if cfg.minibatching {
            format!(" x minibatches {factor}")
        } else {
            String::new()
        };
        let len_rule = match cfg.suggested_coo_buffer_size {
            Some(sug) => {
                format!("suggested_coo_buffer_size = {sug} rounded up to 8 x num_sc_per_device")
            }
            None => format!(
                "roundup8(max_ids_per_partition = {}) x num_sc_per_device x num_scs{mb_key}",
                cfg.max_ids_per_partition
            ),
        };
        let detail = format!(
            "{buffers} bytes of output buffers (local_device_count {l} x buffer length {len} x \
             12 bytes; buffer length = {len_rule}), {row_pointers} bytes of row pointers \
             (local_device_count x num_sc_per_device{mb_key} x max(num_scs, 8) x 4 bytes), \
             {counters} bytes of partition counters and statistics (local_device_count x \
             num_scs x 8 x (num_sc_per_device{mb_key} + 1) bytes); num_sc_per_device = {s}, \
             num_scs = num_sc_per_device x global_device_count = {s} x {g} = {ns}",
            g = self.global,
        );
        Err(PreprocessError::HostMemory {
            table: cfg.table.clone(),
            needed,
            limit: cfg.max_host_bytes,
            detail,
        })
    }
}

/// The features of the stack in processing order, checked.
struct Stack<'a> {
    features: Vec<&'a Feature>,
    batch_size_per_sc: u32,
    has_weights: bool,
    combiner: super::Combiner,
    check_id_bounds: bool,
    check_nan: bool,
}

impl<'a> Stack<'a> {
    fn new(cfg: &PreprocessConfig, geo: &Geometry, features: &'a [Feature]) -> Result<Self> {
        if features.is_empty() {
            return Err(PreprocessError::NoFeatures);
        }
        let mut sorted: Vec<&Feature> = features.iter().collect();
        sorted.sort_by_key(|f| f.row_offset); // stable
        let slices = (geo.local * geo.s) as u64;
        let mut batch_for_device = 0u64;
        for f in &sorted {
            check_ragged(f)?;
            let n = f.num_samples();
            if !(n as u64).is_multiple_of(slices) {
                return Err(PreprocessError::UnevenSamples {
                    feature: f.name.clone(),
                    samples: n,
                    slices,
                });
            }
            batch_for_device += n as u64 / geo.local as u64;
            if f.col_offset < 0 || f.col_offset % i64::from(geo.num_scs) != 0 {
                return Err(PreprocessError::ColOffset {
                    feature: f.name.clone(),
                    col_offset: f.col_offset,
                    num_scs: u64::from(geo.num_scs),
                });
            }
        }
        if batch_for_device < geo.s as u64 * sorted.len() as u64 {
            return Err(PreprocessError::BatchTooSmall {
                batch: batch_for_device,
                features: sorted.len(),
                sc: cfg.num_sc_per_device,
            });
        }
        let bs = batch_for_device / geo.s as u64;
        // Rows (`k * bs + row`) are 31-bit in the buffers.
        if bs.saturating_mul(geo.s as u64) >= i32::MAX as u64 {
            return Err(PreprocessError::BufferSize {
                table: cfg.table.clone(),
                size: bs.saturating_mul(geo.s as u64),
            });
        }
        for f in &sorted {
            let first = f.row_offset / (geo.global * geo.s as u64);
            let end = first.saturating_add(f.num_samples() as u64 / slices);
            if end > bs {
                return Err(PreprocessError::RowOffset {
                    feature: f.name.clone(),
                    row_offset: f.row_offset,
                    first,
                    end,
                    batch_size_per_sc: bs,
                });
            }
        }
        let has_weights = sorted.iter().any(|f| f.weights.is_some());
        Ok(Stack {
            features: sorted,
            batch_size_per_sc: bs as u32,
            has_weights,
            combiner: cfg.combiner,
            check_id_bounds: cfg.check_id_bounds,
            check_nan: cfg.check_nan,
        })
    }
}

fn check_ragged(f: &Feature) -> Result<()> {
    let bad = |detail: String| PreprocessError::RowSplits {
        feature: f.name.clone(),
        detail,
    };
    let rs = &f.row_splits;
    if rs.is_empty() {
        return Err(bad(
            "is empty (a batch of n samples has n + 1 splits)".into()
        ));
    }
    if rs[0] != 0 {
        return Err(bad(format!("starts at {}, not 0", rs[0])));
    }
    if let Some(s) = rs.windows(2).position(|w| w[1] < w[0]) {
        return Err(bad(format!("decrease at sample {s}")));
    }
    if rs[rs.len() - 1] != f.ids.len() {
        return Err(bad(format!(
            "end at {}, but the feature has {} ids",
            rs[rs.len() - 1],
            f.ids.len()
        )));
    }
    if let Some(w) = &f.weights {
        if w.len() != f.ids.len() {
            return Err(PreprocessError::WeightsShape {
                feature: f.name.clone(),
                detail: format!("{} weights for {} ids", w.len(), f.ids.len()),
            });
        }
    }
    Ok(())
}

/// The COO entries of one local SparseCore in extraction order.
///
/// Gains are kept as the peer keeps them: per entry when any feature of the stack has weights,
/// else per row (`row_gain[row - row_base]`, written by each sample of the row in stack order,
/// so when features share rows, as with equal `row_offset`s, the last one's divisor holds for
/// all of them: the peer's `row_token_counts` / `row_gains`).
struct Extracted {
    rows: Vec<u32>,
    cols: Vec<u32>,
    /// Per entry (weighted stacks only).
    gains: Vec<f32>,
    /// Per row of the SC (unweighted stacks only).
    row_gain: Vec<f32>,
    /// The SC's first row: `k * batch_size_per_sc`.
    row_base: u32,
}

/// Extracts every local SC's entries (task `d * S + k`), in parallel; the first error in task
/// order wins.
fn extract_all(geo: &Geometry, stack: &Stack) -> Result<Vec<Extracted>> {
    let results: Vec<Result<Extracted>> = (0..geo.tasks())
        .into_par_iter()
        .map(|t| extract(geo, stack, t / geo.s, t % geo.s))
        .collect();
    results.into_iter().collect()
}

/// §1 to §3 for local SC `k` of device `d`: slice `d * S + k` of every feature, in stack order.
fn extract(geo: &Geometry, stack: &Stack, d: usize, k: usize) -> Result<Extracted> {
    let slices = geo.local * geo.s;
    let bs = stack.batch_size_per_sc as u64;
    let n_ids: usize = stack
        .features
        .iter()
        .map(|f| {
            let per = f.num_samples() / slices;
            let start = (d * geo.s + k) * per;
            f.row_splits[start + per] - f.row_splits[start]
        })
        .sum();
    let weighted = stack.has_weights;
    let mut ex = Extracted {
        rows: Vec::with_capacity(n_ids),
        cols: Vec::with_capacity(n_ids),
        gains: Vec::with_capacity(if weighted { n_ids } else { 0 }),
        row_gain: vec![1.0; if weighted { 0 } else { bs as usize }],
        row_base: (k as u64 * bs) as u32,
    };
    // With check_nan on an unweighted stack: who wrote each row's gain (feature, sample).
    let mut writer: Vec<(usize, usize)> = Vec::new();
    if stack.check_nan && !weighted {
        writer.resize(bs as usize, (0, 0));
    }
    let max_col = i64::from(PAD) - 1;
    let combiner = stack.combiner;
    for (fi, f) in stack.features.iter().enumerate() {
        let per = f.num_samples() / slices;
        let start = (d * geo.s + k) * per;
        let row_base = k as u64 * bs + f.row_offset / (geo.global * geo.s as u64);
        for s in start..start + per {
            let (lo, hi) = (f.row_splits[s], f.row_splits[s + 1]);
            let row = (row_base + (s - start) as u64) as u32;
            let ids = &f.ids[lo..hi];
            let divisor = match &f.weights {
                Some(w) => combiner.divisor(w[lo..hi].iter().copied()),
                None => unity_divisor(combiner, hi - lo),
            };
            if !weighted {
                let local = (row - ex.row_base) as usize;
                ex.row_gain[local] = 1.0 / divisor;
                if let Some(w) = writer.get_mut(local) {
                    *w = (fi, s);
                }
            }
            for (j, &id) in ids.iter().enumerate() {
                if id < 0 {
                    return Err(PreprocessError::NegativeId {
                        feature: f.name.clone(),
                        sample: s,
                        id,
                    });
                }
                let c = col_id(id, f.col_shift, f.col_offset, geo.num_scs);
                if !(0..=max_col).contains(&c) {
                    return Err(PreprocessError::ColIdRange {
                        feature: f.name.clone(),
                        sample: s,
                        id,
                        col_id: c,
                        max: max_col,
                    });
                }
                let w = f.weights.as_ref().map_or(1.0, |w| w[lo + j]);
                let gain = w / divisor;
                if stack.check_id_bounds {
                    if let Some(v) = f.vocab_size {
                        if id as u64 >= v {
                            return Err(PreprocessError::IdOutOfBounds {
                                feature: f.name.clone(),
                                sample: s,
                                id,
                                vocab_size: v,
                            });
                        }
                    }
                }
                if stack.check_nan && weighted {
                    for (what, value) in [("weight", w), ("gain", gain)] {
                        if !value.is_finite() {
                            return Err(PreprocessError::NonFinite {
                                feature: f.name.clone(),
                                sample: s,
                                what,
                                value,
                            });
                        }
                    }
                }
                ex.rows.push(row);
                ex.cols.push(c as u32);
                if weighted {
                    ex.gains.push(gain);
                }
            }
        }
    }
    if !writer.is_empty() {
        // The gains entries get: a non-finite one comes from the sample that wrote it.
        for &row in &ex.rows {
            let local = (row - ex.row_base) as usize;
            let value = ex.row_gain[local];
            if !value.is_finite() {
                let (fi, sample) = writer[local];
                return Err(PreprocessError::NonFinite {
                    feature: stack.features[fi].name.clone(),
                    sample,
                    what: "gain",
                    value,
                });
            }
        }
    }
    Ok(ex)
}

/// The divisor of a sample of `n` ids without weights: the peer's unity-weights path
/// (`n` as `f32` for mean, its square root for sqrtn).
fn unity_divisor(c: super::Combiner, n: usize) -> f32 {
    match c {
        super::Combiner::Sum => 1.0,
        super::Combiner::Mean => n as f32,
        super::Combiner::Sqrtn => (n as f32).sqrt(),
    }
}

/// One local SC's entries after sort, dedup and dropping, with its observed counts.
struct Grouped {
    /// Sorted by (bucket, partition, local id, data).
    entries: Vec<CooEntry>,
    /// `entries[offsets[b]..offsets[b + 1]]` is bucket `b` (`buckets + 1` values).
    offsets: Vec<usize>,
    /// Observed ids per (partition, bucket), `num_scs * buckets`, row-major.
    ids: Vec<u32>,
    /// Observed distinct columns per (partition, bucket).
    unique: Vec<u32>,
    /// Entries dropped by the limits.
    dropped: u64,
}

/// §4 for one local SC: sort, dedup (gains summed), count per (partition, bucket) and drop.
fn group<H: MinibatchHash + ?Sized>(
    ex: &Extracted,
    geo: &Geometry,
    cfg: &PreprocessConfig,
    by_index: bool,
    buckets: usize,
    hash: &H,
    drop_ids: bool,
) -> Grouped {
    let n = ex.cols.len();
    // The peer's key: bucket, then the column rotated so the partition comes first, then
    // `data` (the entry's index for weighted stacks, else its row). Packed in one u64 as the
    // peer packs it (6 + 32 + 26 bits) when `data` fits 26 bits, else as a pair.
    let data_of = |i: usize| -> u32 {
        if by_index {
            i as u32
        } else {
            ex.rows[i]
        }
    };
    let hi_of = |i: usize| -> u64 {
        let col = ex.cols[i];
        let bucket = if buckets > 1 { bucket_of(hash, col) } else { 0 };
        (u64::from(bucket) << 32) | u64::from(col.rotate_right(geo.bits))
    };
    let max_data = if by_index {
        n as u64
    } else {
        ex.rows
            .iter()
            .copied()
            .max()
            .map_or(0, |r| u64::from(r) + 1)
    };
    let sorted = sorted_keys(n, hi_of, data_of, max_data, DATA_BITS);

    let ns = geo.num_scs as usize;
    let mask = geo.num_scs - 1;
    let mut g = Grouped {
        entries: Vec::with_capacity(n),
        offsets: vec![0; buckets + 1],
        ids: vec![0; ns * buckets],
        unique: vec![0; ns * buckets],
        dropped: 0,
    };
    let mut added = vec![0usize; buckets];
    let mut last_added: Option<(u32, u32)> = None;
    let mut prev: Option<(u32, u32, usize)> = None;
    let mut dropping_col = false;
    for &(hi, data) in &sorted {
        let bucket = (hi >> 32) as usize;
        let col = (hi as u32).rotate_left(geo.bits);
        let (row, gain) = if by_index {
            (ex.rows[data as usize], ex.gains[data as usize])
        } else {
            (data, ex.row_gain[(data - ex.row_base) as usize])
        };
        if last_added == Some((row, col)) {
            if let Some(e) = g.entries.last_mut() {
                e.gain += gain;
            }
            continue;
        }
        if drop_ids && prev.is_some_and(|(r, c, _)| r == row && c == col) {
            g.dropped += 1;
            continue;
        }
        let new_col = prev.is_none_or(|(_, c, b)| c != col || b != bucket);
        let cell = (col & mask) as usize * buckets + bucket;
        g.ids[cell] += 1;
        if new_col {
            g.unique[cell] += 1;
        }
        let keep = if drop_ids {
            if new_col {
                dropping_col = g.unique[cell] > cfg.max_unique_ids_per_partition;
            }
            g.ids[cell] <= cfg.max_ids_per_partition && !dropping_col
        } else {
            true
        };
        if keep {
            g.entries.push(CooEntry {
                row_id: row,
                col_id: col,
                gain,
            });
            added[bucket] += 1;
            last_added = Some((row, col));
        } else {
            g.dropped += 1;
        }
        prev = Some((row, col, bucket));
    }
    for (b, &a) in added.iter().enumerate() {
        g.offsets[b + 1] = g.offsets[b] + a;
    }
    g
}

/// Bits of `data` in a packed key (the peer's `kDataBits`).
const DATA_BITS: u32 = 26;

/// The `n` keys `(hi_of(i), data_of(i))` in ascending order. `hi` has at most 38 bits; when every
/// `data < max_data <= 2^data_bits` they are sorted packed in one `u64` (`hi << data_bits |
/// data`), else as pairs; both give the same order.
fn sorted_keys(
    n: usize,
    hi_of: impl Fn(usize) -> u64,
    data_of: impl Fn(usize) -> u32,
    max_data: u64,
    data_bits: u32,
) -> Vec<(u64, u32)> {
    if max_data <= 1 << data_bits && data_bits <= 26 {
        let mut keys: Vec<u64> = (0..n)
            .map(|i| (hi_of(i) << data_bits) | u64::from(data_of(i)))
            .collect();
        keys.sort_unstable();
        keys.into_iter()
            .map(|k| (k >> data_bits, (k & ((1 << data_bits) - 1)) as u32))
            .collect()
    } else {
        let mut keys: Vec<(u64, u32)> = (0..n).map(|i| (hi_of(i), data_of(i))).collect();
        keys.sort_unstable();
        keys
    }
}

#[cfg(test)]
#[test]
fn packed_and_pair_keys_sort_alike() {
    let hi: Vec<u64> = (0..500u64)
        .map(|i| (i * 7919) % 97 + ((i % 5) << 32))
        .collect();
    let data: Vec<u32> = (0..500u32).map(|i| (i * 31) % 13).collect();
    let packed = sorted_keys(500, |i| hi[i], |i| data[i], 13, 4);
    let pairs = sorted_keys(500, |i| hi[i], |i| data[i], 13, 3);
    let mut want: Vec<(u64, u32)> = hi.iter().copied().zip(data.iter().copied()).collect();
    want.sort_unstable();
    assert_eq!(packed, want);
    assert_eq!(pairs, want);
}

/// Limits exceeded without dropping: the largest observed count per (partition, bucket) over
/// all SCs and devices; ids are checked before unique ids.
fn check_limits(cfg: &PreprocessConfig, pass: &[Grouped]) -> Result<()> {
    let max_ids = pass
        .iter()
        .flat_map(|g| g.ids.iter())
        .copied()
        .max()
        .unwrap_or(0);
    if max_ids > cfg.max_ids_per_partition {
        return Err(PreprocessError::MaxIdsExceeded {
            table: cfg.table.clone(),
            observed: max_ids,
            limit: cfg.max_ids_per_partition,
        });
    }
    let max_unique = pass
        .iter()
        .flat_map(|g| g.unique.iter())
        .copied()
        .max()
        .unwrap_or(0);
    if max_unique > cfg.max_unique_ids_per_partition {
        return Err(PreprocessError::MaxUniqueIdsExceeded {
            table: cfg.table.clone(),
            observed: max_unique,
            limit: cfg.max_unique_ids_per_partition,
        });
    }
    Ok(())
}

/// Per-device statistics of one or more passes (one per minibatch; the pass's counts have one
/// bucket): `max_*` per partition the maximum over the device's SCs and the passes,
/// `required_buffer_size` per SC summed over the passes.
struct Stats {
    max_ids: Vec<Vec<u32>>,
    max_unique: Vec<Vec<u32>>,
    required: Vec<Vec<u32>>,
}

fn device_stats<'a>(geo: &Geometry, passes: impl IntoIterator<Item = &'a [Grouped]>) -> Stats {
    let ns = geo.num_scs as usize;
    let mut st = Stats {
        max_ids: vec![vec![0; ns]; geo.local],
        max_unique: vec![vec![0; ns]; geo.local],
        required: vec![vec![0; geo.s]; geo.local],
    };
    for pass in passes {
        for (t, g) in pass.iter().enumerate() {
            let (d, k) = (t / geo.s, t % geo.s);
            let buckets = g.ids.len() / ns;
            for p in 0..ns {
                let ids: u32 = g.ids[p * buckets..(p + 1) * buckets].iter().sum();
                let unique: u32 = g.unique[p * buckets..(p + 1) * buckets].iter().sum();
                st.max_ids[d][p] = st.max_ids[d][p].max(ids);
                st.max_unique[d][p] = st.max_unique[d][p].max(unique);
                st.required[d][k] += round_up(u64::from(ids), ALIGNMENT as u64) as u32;
            }
        }
    }
    st
}

/// The entries of one (SC, minibatch) segment.
struct Segment {
    entries: Vec<CooEntry>,
    batch_size_per_sc: u32,
}

/// Fills every device's buffers (§5) from the segments of each local SC (task order), in
/// parallel over devices.
#[allow(clippy::too_many_arguments)]
fn assemble(
    geo: &Geometry,
    len: usize,
    segments: Vec<Vec<Segment>>,
    stats: Stats,
    dropped: u64,
    split: u64,
    num_mb: usize,
    minibatching: bool,
) -> Result<Preprocessed> {
    let mut per_device: Vec<Vec<Vec<Segment>>> = Vec::with_capacity(geo.local);
    let mut it = segments.into_iter();
    for _ in 0..geo.local {
        per_device.push(it.by_ref().take(geo.s).collect());
    }
    let Stats {
        max_ids,
        max_unique,
        required,
    } = stats;
    let filled: Vec<Result<(DeviceBuffers, u64)>> = per_device
        .into_par_iter()
        .zip(max_ids)
        .zip(max_unique)
        .zip(required)
        .map(|(((segs, mi), mu), req)| {
            fill_device(geo, len, segs, mi, mu, req, num_mb, minibatching)
        })
        .collect();
    let mut devices = Vec::with_capacity(geo.local);
    let mut dropped_id_count = dropped;
    for r in filled {
        let (dev, d) = r?;
        dropped_id_count += d;
        devices.push(dev);
    }
    Ok(Preprocessed {
        devices,
        dropped_id_count,
        num_minibatches: num_mb,
        split,
    })
}

fn filled_vec<T: Clone>(what: &'static str, len: usize, v: T) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| PreprocessError::Alloc {
            what,
            len: len as u64,
        })?;
    out.resize(len, v);
    Ok(out)
}

/// One device's buffers: segments (SC k, minibatch m) in that order; returns the entries
/// dropped at the end of the buffer.
#[allow(clippy::too_many_arguments)]
fn fill_device(
    geo: &Geometry,
    len: usize,
    segs: Vec<Vec<Segment>>,
    max_ids: Vec<u32>,
    max_unique: Vec<u32>,
    required: Vec<u32>,
    num_mb: usize,
    minibatching: bool,
) -> Result<(DeviceBuffers, u64)> {
    let ns = geo.num_scs as usize;
    let r = ns.max(ALIGNMENT);
    let mut out = DeviceBuffers {
        row_pointers: filled_vec("row_pointers", geo.s * num_mb * r, 0)?,
        embedding_ids: filled_vec("embedding_ids", len, PAD)?,
        sample_ids: filled_vec("sample_ids", len, PAD)?,
        gains: filled_vec("gains", len, f32::NAN)?,
        coo: Vec::with_capacity(geo.s),
        max_ids_per_partition: max_ids,
        max_unique_ids_per_partition: max_unique,
        required_buffer_size: required,
    };
    let per_sc = len / geo.s;
    let mut dropped = 0u64;
    let mut chained = 0usize;
    let mut slot = 0usize;
    let mut required_before = 0usize;
    for (k, sc_segs) in segs.into_iter().enumerate() {
        let mut coo = Vec::new();
        for seg in sc_segs {
            let (begin, end, base) = if !minibatching {
                (k * per_sc, (k + 1) * per_sc, k * per_sc)
            } else if num_mb == 1 {
                (required_before.min(len), len, 0)
            } else {
                (chained, len, 0)
            };
            let (idx, d) = fill_segment(
                &seg.entries,
                seg.batch_size_per_sc,
                geo.num_scs,
                &mut out,
                &mut slot,
                r,
                begin,
                end,
                base,
            );
            dropped += d;
            chained = (round_up(idx as u64, ALIGNMENT as u64) as usize).min(len);
            coo.extend_from_slice(&seg.entries);
        }
        required_before += out.required_buffer_size[k] as usize;
        out.coo.push(coo);
    }
    Ok((out, dropped))
}

/// The peer's `FillBufferSegment`: writes the entries of one segment from `begin`, advancing
/// partition by partition (each partition's end as a row pointer relative to `base`, the next
/// one starting 8-aligned), until `end`; entries that no longer fit are dropped. Fills the
/// segment's `r` row pointers from `*slot`; returns the index after the segment and the count
/// dropped.
#[allow(clippy::too_many_arguments)]
fn fill_segment(
    entries: &[CooEntry],
    bs: u32,
    num_scs: u32,
    out: &mut DeviceBuffers,
    slot: &mut usize,
    r: usize,
    begin: usize,
    end: usize,
    base: usize,
) -> (usize, u64) {
    let n = entries.len();
    let first_slot = *slot;
    let mut idx = begin;
    let mut partition = 0u32;
    let mut processed = 0usize;
    let valid = |idx: usize, processed: usize| idx < end || (processed == n && idx == end);
    // Advances to `target`, writing the ends of the partitions passed; false when the buffer
    // ended first.
    let advance = |partition: &mut u32,
                   idx: &mut usize,
                   slot: &mut usize,
                   processed: usize,
                   out: &mut DeviceBuffers,
                   target: u32| {
        while *partition < target {
            if !valid(*idx, processed) {
                return;
            }
            out.row_pointers[*slot] = (*idx - base) as i32;
            *slot += 1;
            // Holes are PAD / NaN already.
            *idx = (round_up(*idx as u64, ALIGNMENT as u64) as usize).min(end);
            *partition += 1;
        }
    };
    let mut dropped = 0u64;
    for e in entries {
        let target = e.col_id % num_scs;
        advance(&mut partition, &mut idx, slot, processed, out, target);
        if !valid(idx, processed) {
            dropped = (n - processed) as u64;
            break;
        }
        out.embedding_ids[idx] = (e.col_id / num_scs) as i32;
        out.sample_ids[idx] = (e.row_id % bs) as i32;
        out.gains[idx] = e.gain;
        idx += 1;
        processed += 1;
    }
    advance(&mut partition, &mut idx, slot, processed, out, num_scs);
    while *slot < first_slot + r {
        out.row_pointers[*slot] = (idx - base) as i32;
        *slot += 1;
    }
    (idx, dropped)
}
