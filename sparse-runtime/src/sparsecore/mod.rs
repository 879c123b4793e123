//! SparseCore: a chip model and the host preprocessing of jax-tpu-embedding.
//!
//! No SparseCore is reachable from this project: [`chip`] models one (the numbers of
//! `../shared/reference/sparsecore-preprocessing.md` §9 and a documented cost model), and
//! [`preprocess()`] turns a batch of ragged ids into the input buffers of the `SparseDenseMatmul`
//! custom call *bit for bit* as jax-tpu-embedding's `preprocess_sparse_dense_matmul_input` does
//! (its C++ path, `jax_tpu_embedding/sparsecore/lib/core/input_preprocessing*.cc`), by the rules
//! of `../shared/reference/sparsecore-preprocessing.md`:
//!
//! - §1 rows: each feature's samples split evenly over `local_device_count * S` slices;
//! - §2 columns: mod sharding, [`col_id`];
//! - §3 gains: [`Combiner`];
//! - §4 sort, dedup, per-partition statistics, limits (errors or dropping);
//! - §5 the "CSR-wrapped COO" buffers ([`DeviceBuffers`]);
//! - §6 vocabulary-dimension minibatching ([`minibatch`]);
//! - §7 table stacking ([`stack`]).
//!
//! Work is parallel over SparseCores (rayon); the result does not depend on the thread count.
//!
//! - [`chip`]: [`ChipModel`](chip::ChipModel), presets `v4`, `v5p`, `v6e`, `tpu7x` (their data
//!   and the TileSpmem rules [`tile_spmem_plan`] and [`tile_spmem_plan_with_limits`] live in
//!   [`sparse_ir::sparsecore`], which the
//!   compile-time `sparsecore(...)` check of `sparse_format!` reads too), cost model;
//! - [`minibatch`]: the 64-bucket split tree and the pluggable bucket hash;
//! - [`stack`]: table stacking (padding, row offsets in a shard, shard rotation);
//! - `preprocess` (private): the pipeline behind [`preprocess()`], [`preprocess_with_hash`] and
//!   [`preprocess_minibatches`].

pub mod chip;
pub mod lookup;
pub mod minibatch;
mod preprocess;
pub mod stack;
pub mod tiles;

pub use minibatch::{compute_split, HighwayHash, IdentityHash, MinibatchHash, NUM_BUCKETS};
pub use preprocess::{preprocess, preprocess_minibatches, preprocess_with_hash};
/// The compile-time configuration and TileSpmem rule, shared with the code generator (defined
/// in [`sparse_ir::sparsecore`]).
pub use sparse_ir::sparsecore::{
    partition_share, tile_spmem_plan, tile_spmem_plan_with_limits, PartitionShare,
    SparseCoreConfig, SparseCoreConfigError, SpmemError, TileSpmemPlan,
};

/// The padding value of `embedding_ids` and `sample_ids` (`i32::MAX`, the peer's `INT_MAX`);
/// padded gains are NaN. Source: SparseCore reference §5.
pub const PAD: i32 = i32::MAX;

/// Alignment of partitions and segments in the buffers: one vector register of 8 entries
/// (the peer's `TPU_VECTOR_REGISTER_ALIGNMENT_SIZE`).
pub const ALIGNMENT: usize = 8;

/// The default of [`PreprocessConfig::max_host_bytes`]: 1 GiB (2^30 bytes).
///
/// Why this number: the configuration alone sizes the output buffers (`roundup8(max_ids) * S *
/// num_scs` entries per device, 64 times more with minibatching), so a few large integers in a
/// config would otherwise ask for terabytes and get the process killed by the kernel's
/// out-of-memory killer (Linux overcommits, so `try_reserve` succeeds and the first write is
/// fatal). 1 GiB holds every configuration of the reference's examples many times over (the
/// public 8 x [0, 1, 2, 3] check needs 1,824 bytes; a 1024-SparseCore system with `S = 4`,
/// `max_ids_per_partition = 256` and minibatching needs 0.8 GB for one local device) and
/// leaves room on a small host for the command line's JSON text, about twice the buffers.
/// Raise it per configuration ([`PreprocessConfig::max_host_bytes`], CONFIG key
/// `max_host_bytes`) on a larger host.
pub const DEFAULT_MAX_HOST_BYTES: u64 = 1 << 30;

/// `n` rounded up to a multiple of `m` (`m > 0`), saturating at `u64::MAX` (a suggested buffer
/// size near `u64::MAX` is then too large, not an overflow).
pub(crate) fn round_up(n: u64, m: u64) -> u64 {
    n.div_ceil(m).saturating_mul(m)
}

/// The column of an id after the stacking transformation (reference §2):
/// `col_id = (id + col_shift) % num_scs + (id / num_scs) * num_scs + col_offset`.
///
/// `num_scs` is a power of two (the callers check it), so this equals the peer's
/// `((id + col_shift) & (num_scs - 1)) + (id & ~(num_scs - 1)) + col_offset`; a negative
/// `col_shift` is taken modulo `num_scs` as that two's-complement mask does;
/// the caller checks that the result fits the 31-bit ids of the buffers.
/// Computed exactly (no overflow); a result beyond `i64` saturates.
///
/// Public checks (id, col_shift, col_offset, num_scs) -> col_id: (2, 4, 32, 4) -> 34,
/// (38, 0, 0, 4) -> 38, (10, 0, 32, 8) -> 42, (26, 0, 0, 4) -> 26, (127, 1, 32, 4) -> 156.
pub fn col_id(id: i64, col_shift: i64, col_offset: i64, num_scs: u32) -> i64 {
    // The fast path: a power of two and no overflow (the peer's masks).
    if num_scs.is_power_of_two() {
        let mask = i64::from(num_scs) - 1;
        if let Some(c) = id
            .checked_add(col_shift)
            .and_then(|s| (s & mask).checked_add(id & !mask))
            .and_then(|c| c.checked_add(col_offset))
        {
            return c;
        }
    }
    // In i128, so no input overflows; the result saturates to the i64 range.
    let n = i128::from(num_scs.max(1));
    let id = i128::from(id);
    let c =
        (id + i128::from(col_shift)).rem_euclid(n) + id.div_euclid(n) * n + i128::from(col_offset);
    c.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// How the weights of one sample become gains (reference §3): `gain_i = w_i / divisor`, the
/// divisor taken over the sample's raw weights before dedup, in `f32` as the peer computes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Combiner {
    /// Divisor 1.
    #[default]
    Sum,
    /// Divisor `Σ w` (with no weights: the number of ids of the sample, duplicates counted).
    Mean,
    /// Divisor `sqrt(Σ w²)`; each `w²` is added in `f64` and the sum rounded to `f32` per step,
    /// as the peer's `sum += std::pow(weight, 2)` on a `float` does.
    Sqrtn,
}

impl Combiner {
    /// The name as the peer spells it: `sum`, `mean`, `sqrtn`.
    pub fn name(self) -> &'static str {
        match self {
            Combiner::Sum => "sum",
            Combiner::Mean => "mean",
            Combiner::Sqrtn => "sqrtn",
        }
    }

    /// The divisor of a sample with these weights (reference §3).
    pub fn divisor(self, weights: impl IntoIterator<Item = f32>) -> f32 {
        match self {
            Combiner::Sum => 1.0,
            Combiner::Mean => weights.into_iter().fold(0.0f32, |s, w| s + w),
            Combiner::Sqrtn => weights
                .into_iter()
                .fold(0.0f32, |s, w| {
                    (f64::from(s) + f64::from(w) * f64::from(w)) as f32
                })
                .sqrt(),
        }
    }
}

impl std::str::FromStr for Combiner {
    type Err = PreprocessError;

    /// `sum`, `mean` or `sqrtn`; anything else is [`PreprocessError::UnknownCombiner`] (the peer
    /// silently falls back to sum).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "sum" => Ok(Combiner::Sum),
            "mean" => Ok(Combiner::Mean),
            "sqrtn" => Ok(Combiner::Sqrtn),
            _ => Err(PreprocessError::UnknownCombiner(s.to_string())),
        }
    }
}

/// The configuration of one stacked table's preprocessing (the peer's
/// `PreprocessSparseDenseMatmulInputOptions` with the stack's `FeatureMetadataInStack`).
#[derive(Clone, Debug, PartialEq)]
pub struct PreprocessConfig {
    /// `S`, SparseCores per device (> 0).
    pub num_sc_per_device: u32,
    /// Devices of this host (> 0, at most `global_device_count`).
    pub local_device_count: u32,
    /// Devices of the system (> 0); `num_scs = S * global_device_count`, a power of two.
    pub global_device_count: u32,
    /// Limit of ids (deduplicated `(row, col)` pairs) one local SparseCore sends one partition
    /// (> 0).
    pub max_ids_per_partition: u32,
    /// Limit of distinct columns one local SparseCore sends one partition (> 0).
    pub max_unique_ids_per_partition: u32,
    /// `true`: ids past a limit are dropped and counted; `false`: exceeding a limit is an error.
    pub allow_id_dropping: bool,
    /// Vocabulary-dimension minibatching (reference §6); buffers are 64 times longer.
    pub minibatching: bool,
    /// How weights become gains.
    pub combiner: Combiner,
    /// A buffer length per device to use instead of the theoretical maximum (rounded up to a
    /// multiple of `8 * S`, at most that maximum).
    pub suggested_coo_buffer_size: Option<u64>,
    /// The stacked table's name, used in messages.
    pub table: String,
    /// Debug check (reference "Debug checks"): every id below its feature's
    /// [`Feature::vocab_size`] (features without one are not checked), else
    /// [`PreprocessError::IdOutOfBounds`].
    pub check_id_bounds: bool,
    /// Debug check: every weight and every gain finite (a NaN or infinity, e.g. a mean over
    /// weights summing to 0, is [`PreprocessError::NonFinite`]).
    pub check_nan: bool,
    /// The most host memory, in bytes, the allocations sized by the configuration alone may
    /// take (output buffers, row pointers, per-partition counters and statistics; the model is
    /// [`PreprocessError::HostMemory`]'s); more is that error, checked before anything is
    /// allocated. Default [`DEFAULT_MAX_HOST_BYTES`]. Memory proportional to the batch itself
    /// (the extracted and sorted entries) is not counted: the batch is already in memory.
    pub max_host_bytes: u64,
}

impl PreprocessConfig {
    /// A configuration with the defaults of the CLI: no dropping, no minibatching, sum, no
    /// suggested size, table name `table`.
    pub fn new(
        num_sc_per_device: u32,
        local_device_count: u32,
        global_device_count: u32,
        max_ids_per_partition: u32,
        max_unique_ids_per_partition: u32,
    ) -> Self {
        PreprocessConfig {
            num_sc_per_device,
            local_device_count,
            global_device_count,
            max_ids_per_partition,
            max_unique_ids_per_partition,
            allow_id_dropping: false,
            minibatching: false,
            combiner: Combiner::Sum,
            suggested_coo_buffer_size: None,
            table: "table".to_string(),
            check_id_bounds: false,
            check_nan: false,
            max_host_bytes: DEFAULT_MAX_HOST_BYTES,
        }
    }

    /// `num_scs = S * global_device_count` (saturating; validation rejects what is not a power
    /// of two).
    pub fn num_scs(&self) -> u64 {
        u64::from(self.num_sc_per_device) * u64::from(self.global_device_count)
    }
}

/// One feature of the stack: this host's batch of ragged ids with optional weights and the
/// feature's `FeatureIdTransformation` (`row_offset`, `col_shift`, `col_offset`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Feature {
    /// The feature's name, used in messages.
    pub name: String,
    /// All samples' ids concatenated (each >= 0; a column must fit `i32`).
    pub ids: Vec<i64>,
    /// Sample `s` holds `ids[row_splits[s]..row_splits[s + 1]]`: `samples + 1` nondecreasing
    /// entries from 0 to `ids.len()` (a sample may be empty).
    pub row_splits: Vec<usize>,
    /// One weight per id (the shape of `ids`), or `None`: all 1.
    pub weights: Option<Vec<f32>>,
    /// The global row offset of the feature in its stack (samples of the earlier features, all
    /// devices); its rows start at `row_offset / (global_device_count * S)` in each SC's batch.
    pub row_offset: u64,
    /// Shard rotation (§2, §7).
    pub col_shift: i64,
    /// Column offset, a non-negative multiple of `num_scs` (§2, §7).
    pub col_offset: i64,
    /// Rows of the feature's table, for [`PreprocessConfig::check_id_bounds`]; `None`: unknown.
    pub vocab_size: Option<u64>,
}

impl Feature {
    /// A feature from a list of samples and optional weights of the same shape; offsets 0.
    ///
    /// Errors: [`PreprocessError::WeightsShape`] when `weights` is not shaped like `samples`.
    pub fn from_samples(
        name: &str,
        samples: &[Vec<i64>],
        weights: Option<&[Vec<f32>]>,
    ) -> Result<Feature, PreprocessError> {
        let mut row_splits = Vec::with_capacity(samples.len() + 1);
        row_splits.push(0);
        let mut ids = Vec::new();
        for s in samples {
            ids.extend_from_slice(s);
            row_splits.push(ids.len());
        }
        let weights = match weights {
            None => None,
            Some(w) => {
                if w.len() != samples.len() {
                    return Err(PreprocessError::WeightsShape {
                        feature: name.to_string(),
                        detail: format!("{} weight rows for {} samples", w.len(), samples.len()),
                    });
                }
                let mut flat = Vec::with_capacity(ids.len());
                for (s, (ws, is)) in w.iter().zip(samples).enumerate() {
                    if ws.len() != is.len() {
                        return Err(PreprocessError::WeightsShape {
                            feature: name.to_string(),
                            detail: format!(
                                "sample {s} has {} ids but {} weights",
                                is.len(),
                                ws.len()
                            ),
                        });
                    }
                    flat.extend_from_slice(ws);
                }
                Some(flat)
            }
        };
        Ok(Feature {
            name: name.to_string(),
            ids,
            row_splits,
            weights,
            row_offset: 0,
            col_shift: 0,
            col_offset: 0,
            vocab_size: None,
        })
    }

    /// The number of samples (`row_splits.len() - 1`, 0 for empty splits).
    pub fn num_samples(&self) -> usize {
        self.row_splits.len().saturating_sub(1)
    }
}

/// One entry a local SparseCore's buffer is filled from: after sort, dedup and dropping.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CooEntry {
    /// Device-level row: `row_id / batch_size_per_sc` is the local SC, `row_id %
    /// batch_size_per_sc` the sample id it sends.
    pub row_id: u32,
    /// Column after shift and offset: partition `col_id % num_scs`, local id `col_id / num_scs`.
    pub col_id: u32,
    /// The gain (weight over the combiner's divisor, duplicates summed).
    pub gain: f32,
}

/// The `SparseDenseMatmul` input of one local device and its statistics (reference §4, §5).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceBuffers {
    /// `S * num_minibatches * max(num_scs, 8)` entries: per SC and minibatch, the end of each
    /// partition's data, then the aligned end repeated (relative to the SC's segment start
    /// without minibatching, absolute with it).
    pub row_pointers: Vec<i32>,
    /// Local ids (`col_id / num_scs`), the whole buffer; unused entries [`PAD`].
    pub embedding_ids: Vec<i32>,
    /// Sample ids (`row_id % batch_size_per_sc`), the whole buffer; unused entries [`PAD`].
    pub sample_ids: Vec<i32>,
    /// Gains, the whole buffer; unused entries NaN.
    pub gains: Vec<f32>,
    /// Per local SC, the entries its buffer is filled from, in buffer order (entries dropped at
    /// the end of the buffer included).
    pub coo: Vec<Vec<CooEntry>>,
    /// Per partition (`num_scs` values), the maximum over the device's SCs of the observed
    /// (deduplicated, before dropping) ids.
    pub max_ids_per_partition: Vec<u32>,
    /// Per partition, the maximum over the device's SCs of the observed distinct columns.
    pub max_unique_ids_per_partition: Vec<u32>,
    /// Per local SC, `Σ_p roundup8(ids[p])` over the observed ids.
    pub required_buffer_size: Vec<u32>,
}

/// The result of [`preprocess()`] for one stacked table.
#[derive(Clone, Debug, PartialEq)]
pub struct Preprocessed {
    /// One per local device, in order.
    pub devices: Vec<DeviceBuffers>,
    /// Ids dropped by the limits (with `allow_id_dropping`) or at the end of a buffer, over
    /// all devices.
    pub dropped_id_count: u64,
    /// Minibatches: `popcount(split) + 1` when computed, the caller's count when given, else 1.
    pub num_minibatches: usize,
    /// The computed split mask (bit i = node i of the §6 tree); 0 without computed minibatching.
    pub split: u64,
}

/// What preprocessing rejects. Messages contain the peer's words where it has them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PreprocessError {
    /// `local_device_count` is 0.
    #[error("local_device_count must be greater than 0, but got {0}")]
    LocalDeviceCount(i64),
    /// `global_device_count` is 0.
    #[error("global_device_count must be greater than 0, but got {0}")]
    GlobalDeviceCount(i64),
    /// `global_device_count < local_device_count`.
    #[error(
        "global_device_count must be greater than or equal to local_device_count, but got {global} vs {local}"
    )]
    GlobalBelowLocal {
        /// `global_device_count`.
        global: u32,
        /// `local_device_count`.
        local: u32,
    },
    /// `num_sc_per_device` is 0.
    #[error("num_sc_per_device must be greater than 0, but got {0}")]
    NumScPerDevice(i64),
    /// `num_scs = S * global_device_count` is not a power of two.
    #[error("Total number of SparseCores ({0}) must be a power of 2.")]
    NotPowerOfTwo(u64),
    /// A limit is 0.
    #[error("{name} must be positive, got {value}.")]
    LimitNotPositive {
        /// `max_ids_per_partition` or `max_unique_ids_per_partition`.
        name: &'static str,
        /// The value given.
        value: i64,
    },
    /// The stack has no features.
    #[error("input_batches cannot be empty (the stack has no features)")]
    NoFeatures,
    /// Caller-chosen minibatches: the list is empty.
    #[error("minibatches cannot be empty")]
    NoMinibatches,
    /// Caller-chosen minibatches without `minibatching`.
    #[error("minibatches given, but minibatching is false (set \"minibatching\": true)")]
    MinibatchesWithoutMinibatching,
    /// A combiner name other than `sum`, `mean`, `sqrtn`.
    #[error("unknown combiner '{0}' (expected sum, mean or sqrtn)")]
    UnknownCombiner(String),
    /// A minibatch hash name other than the known ones.
    #[error("unknown minibatch_hash '{0}' (expected identity or highway)")]
    UnknownHash(String),
    /// The suggested buffer size, rounded up to `8 * S`, exceeds the theoretical maximum.
    #[error(
        "Suggested Coo Buffer Size is larger than the theoretical max for table {table}: {suggested} vs {max}. Adjust the suggested size or the max_ids_per_partition values."
    )]
    SuggestedTooLarge {
        /// The table.
        table: String,
        /// The suggested size after rounding.
        suggested: u64,
        /// `roundup8(max_ids_per_partition) * S * num_scs` (times the minibatch factor).
        max: u64,
    },
    /// The buffer length per device is 0 or not below `i32::MAX`.
    #[error("Computed Coo Buffer Size ({size}) for table {table} is out of the valid range (0, INT_MAX).")]
    BufferSize {
        /// The table.
        table: String,
        /// The computed length.
        size: u64,
    },
    /// `row_splits` of a feature is not a valid ragged layout of its ids.
    #[error("feature {feature}: row_splits {detail}")]
    RowSplits {
        /// The feature.
        feature: String,
        /// What is wrong.
        detail: String,
    },
    /// Weights not shaped like the samples.
    #[error("feature {feature}: weights must have the shape of samples: {detail}")]
    WeightsShape {
        /// The feature.
        feature: String,
        /// What differs.
        detail: String,
    },
    /// A feature's sample count does not divide by `local_device_count * S`.
    #[error(
        "feature {feature} has {samples} samples, which do not split evenly over local_device_count * num_sc_per_device = {slices} slices"
    )]
    UnevenSamples {
        /// The feature.
        feature: String,
        /// Its sample count.
        samples: usize,
        /// `local_device_count * S`.
        slices: u64,
    },
    /// Fewer samples per device than `S` times the number of features (the peer's check).
    #[error(
        "Batch size must be greater or equal to the number of features stacked together (per feature slice): {batch} samples per device for {features} features on {sc} SparseCores per device"
    )]
    BatchTooSmall {
        /// Samples per device over all features.
        batch: u64,
        /// Features in the stack.
        features: usize,
        /// `S`.
        sc: u32,
    },
    /// A feature's rows (its `row_offset` plus its samples) do not fit the SC's batch.
    #[error(
        "feature {feature}: row_offset {row_offset} puts its rows at {first}..{end} of each SparseCore's batch, which has {batch_size_per_sc} rows"
    )]
    RowOffset {
        /// The feature.
        feature: String,
        /// Its `row_offset`.
        row_offset: u64,
        /// First row per SC.
        first: u64,
        /// One past its last row per SC.
        end: u64,
        /// `batch_size_per_sc`.
        batch_size_per_sc: u64,
    },
    /// A negative id.
    #[error("feature {feature}, sample {sample}: id {id} is negative")]
    NegativeId {
        /// The feature.
        feature: String,
        /// The sample index in the feature's batch.
        sample: usize,
        /// The id.
        id: i64,
    },
    /// `col_offset` is not a non-negative multiple of `num_scs`.
    #[error("feature {feature}: col_offset {col_offset} is not a non-negative multiple of num_scs ({num_scs})")]
    ColOffset {
        /// The feature.
        feature: String,
        /// Its `col_offset`.
        col_offset: i64,
        /// `num_scs`.
        num_scs: u64,
    },
    /// A column after shift and offset that does not fit the buffers' 31-bit ids.
    #[error("feature {feature}, sample {sample}: id {id} maps to col_id {col_id}, beyond {max}")]
    ColIdRange {
        /// The feature.
        feature: String,
        /// The sample index.
        sample: usize,
        /// The id.
        id: i64,
        /// Its column.
        col_id: i64,
        /// The largest column allowed (`i32::MAX - 1`).
        max: i64,
    },
    /// An id not below its table's vocabulary ([`PreprocessConfig::check_id_bounds`]).
    #[error("feature {feature}, sample {sample}: id {id} is out of bounds of its table ({vocab_size} rows)")]
    IdOutOfBounds {
        /// The feature.
        feature: String,
        /// The sample index.
        sample: usize,
        /// The id.
        id: i64,
        /// The feature's `vocab_size`.
        vocab_size: u64,
    },
    /// A NaN or infinite weight or gain ([`PreprocessConfig::check_nan`]).
    #[error("feature {feature}, sample {sample}: {what} is {value} (NaN check)")]
    NonFinite {
        /// The feature.
        feature: String,
        /// The sample index.
        sample: usize,
        /// `weight` or `gain`.
        what: &'static str,
        /// The value.
        value: f32,
    },
    /// Observed ids per partition exceed `max_ids_per_partition`, dropping not allowed.
    #[error(
        "Observed max ids per partition: {observed} for table: {table} is greater than the set max ids per partition: {limit}. Use `allow_id_dropping` or increase the `max_ids_per_partition`. You could also try to reduce the batch size."
    )]
    MaxIdsExceeded {
        /// The table.
        table: String,
        /// The largest observed count.
        observed: u32,
        /// `max_ids_per_partition`.
        limit: u32,
    },
    /// Observed distinct columns per partition exceed `max_unique_ids_per_partition`.
    #[error(
        "Observed max unique ids per partition: {observed} for table: {table} is greater than the set max unique ids per partition: {limit}. Use `allow_id_dropping` or increase the `max_ids_per_partition`. You could also try to reduce the batch size."
    )]
    MaxUniqueIdsExceeded {
        /// The table.
        table: String,
        /// The largest observed count.
        observed: u32,
        /// `max_unique_ids_per_partition`.
        limit: u32,
    },
    /// Table stacking (§7): a table's vocabulary padded to a multiple of `8 * num_scs`, or the
    /// stack's rows with it, beyond `u64`.
    #[error(
        "table {table}: vocabulary {vocab} padded to a multiple of 8 * num_scs ({num_scs}) does not fit u64 (the stack before it has {stack_vocab} rows)"
    )]
    VocabOverflow {
        /// The table.
        table: String,
        /// Its vocabulary.
        vocab: u64,
        /// `num_scs`.
        num_scs: u64,
        /// Rows of the stack's earlier tables.
        stack_vocab: u64,
    },
    /// Bucket counts of a split: not a power of two in number, or more than 64.
    #[error("bucket counts: {0}")]
    SplitCounts(String),
    /// The allocations the configuration sizes exceed [`PreprocessConfig::max_host_bytes`]
    /// (checked, exactly in `u128`, before anything is allocated). With `L` local devices, `S`
    /// SparseCores per device, `num_scs = S * global_device_count`, `LEN` the buffer length per
    /// device and `F` the minibatch factor (64 with computed minibatching, the number of
    /// minibatches when the caller gives them, else 1), the bytes are
    /// - output buffers: `L * LEN * 12` (`embedding_ids`, `sample_ids` as `i32`, `gains` as
    ///   `f32`), `LEN = roundup8(max_ids_per_partition) * S * num_scs * F` or the suggested size;
    /// - row pointers: `L * S * F * max(num_scs, 8) * 4` (`F` the most minibatches there can be);
    /// - counters: `L * num_scs * 8 * (S * F + 1)`: per local SparseCore two `u32` counts (ids,
    ///   unique ids) per (partition, bucket or minibatch), and the per-device statistics.
    #[error(
        "table {table}: preprocessing would allocate {needed} bytes of host memory, more than max_host_bytes = {limit}: {detail}"
    )]
    HostMemory {
        /// The table.
        table: String,
        /// The bytes the configuration sizes (the sum of the three parts).
        needed: u128,
        /// [`PreprocessConfig::max_host_bytes`].
        limit: u64,
        /// Each part with the configuration keys and values it comes from.
        detail: String,
    },
    /// An output buffer could not be allocated.
    #[error("cannot allocate {what}: {len} entries")]
    Alloc {
        /// Which buffer.
        what: &'static str,
        /// Its length.
        len: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn col_id_public_checks() {
        assert_eq!(col_id(2, 4, 32, 4), 34);
        assert_eq!(col_id(38, 0, 0, 4), 38);
        assert_eq!(col_id(10, 0, 32, 8), 42);
        assert_eq!(col_id(26, 0, 0, 4), 26);
        assert_eq!(col_id(127, 1, 32, 4), 156);
        // A negative shift is taken modulo num_scs, as the peer's mask does.
        assert_eq!(col_id(5, -1, 0, 4), 4);
        assert_eq!(col_id(4, -1, 0, 4), 7);
        assert_eq!(col_id(i64::MAX, i64::MAX, i64::MAX, 4), i64::MAX);
        // Any num_scs (the general path) agrees with the masks on powers of two.
        for id in [-9i64, -1, 0, 5, 127, 1 << 40] {
            for shift in [-5i64, 0, 3, 1 << 50] {
                let fast = col_id(id, shift, 64, 8);
                let n = 8i128;
                let slow = (i128::from(id) + i128::from(shift)).rem_euclid(n)
                    + i128::from(id).div_euclid(n) * n
                    + 64;
                assert_eq!(i128::from(fast), slow);
            }
        }
        assert_eq!(col_id(10, 1, 0, 3), 11 % 3 + 9);
    }

    #[test]
    fn round_up_saturates() {
        assert_eq!(round_up(9, 8), 16);
        assert_eq!(round_up(16, 8), 16);
        assert_eq!(round_up(0, 8), 0);
        assert_eq!(round_up(u64::MAX, 8), u64::MAX);
        assert_eq!(round_up(u64::MAX - 7, 8), u64::MAX - 7);
        assert_eq!(round_up(u64::MAX - 6, 8), u64::MAX);
    }

    #[test]
    fn combiner_divisors() {
        assert_eq!(Combiner::Sum.divisor([2.0, 3.0]), 1.0);
        assert_eq!(Combiner::Mean.divisor([2.0, 3.0]), 5.0);
        assert_eq!(Combiner::Sqrtn.divisor([3.0, 4.0]), 5.0);
        assert_eq!(Combiner::Mean.divisor([]), 0.0);
        assert_eq!("sqrtn".parse::<Combiner>(), Ok(Combiner::Sqrtn));
        assert_eq!(
            "max".parse::<Combiner>().unwrap_err().to_string(),
            "unknown combiner 'max' (expected sum, mean or sqrtn)"
        );
    }

    #[test]
    fn feature_from_samples_checks_weights() {
        let f = Feature::from_samples("f", &[vec![1, 2], vec![]], Some(&[vec![1.0, 2.0], vec![]]))
            .unwrap();
        assert_eq!(f.row_splits, vec![0, 2, 2]);
        assert_eq!(f.num_samples(), 2);
        let e = Feature::from_samples("f", &[vec![1, 2]], Some(&[vec![1.0]])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "feature f: weights must have the shape of samples: sample 0 has 2 ids but 1 weights"
        );
    }
}

#[cfg(test)]
mod preprocess_tests;
