//! SparseCore data both sides need: the chip presets (SparseCore reference §9) and the pure
//! TileSpmem sizing rules of the lookup (`SparseDenseMatmul`), in one place.
//!
//! The runtime's chip model (`sparse_runtime::sparsecore::chip::ChipModel`) is built from
//! [`ChipPreset`]s and its lookup (`sparse_runtime::sparsecore::lookup`) sizes a tile's
//! TileSpmem with [`tile_spmem_plan`] (or [`tile_spmem_plan_with_limits`] when it knows the
//! partition limits); the code generator (`sparse-dsl`) reads the same presets
//! and the same rule at compile time for a declaration's `sparsecore(...)` clause
//! ([`SparseCoreConfig`]), so a configuration the macro accepts is one the lookup accepts, with
//! the same numbers and the same words when it does not fit.
//!
//! # The TileSpmem rule ([`tile_spmem_plan`])
//!
//! A SparseCore's `samples` (its `batch_size_per_sc`) are split evenly over its `tiles`; a tile
//! holds its output rows, `ceil(samples / tiles)` rows of `width` `f32` values (the reference's
//! `(sample_count * feature_width) / kNumTiles`, the *gather operand*), and stages gathered rows
//! through two buffers (double buffering) of `staging_rows` rows each. With `row_bytes = width
//! * 4` and `M` bytes of TileSpmem per tile:
//!
//! - `gather_operand_bytes = ceil(samples / tiles) * row_bytes`; more than `M` is
//!   [`SpmemError::GatherTooLarge`] (`Gather operand too large: ...`);
//! - `fixed_allocation_bytes = gather_operand_bytes + 2 * row_bytes` (the output rows and one
//!   staged row per buffer); more than `M` is [`SpmemError::FixedAllocations`] (`Fixed size
//!   allocations (N bytes) do not fit in TileSpmem (M bytes)`);
//! - `staging_rows = (M - gather_operand_bytes) / (2 * row_bytes)`: the largest buffers that fit.
//!
//! # The limits-aware rule ([`tile_spmem_plan_with_limits`])
//!
//! The reference ("Memory"): *SPMEM buffers are sized from `max_ids_per_partition` and
//! `max_unique_ids_per_partition` at compile time, so that all data of one partition's ids fits
//! for non-elementwise work such as dedup or building a CSR of the partition.* The rule above
//! leaves those buffers out; [`tile_spmem_plan_with_limits`] adds them to the fixed allocations.
//! The model (ours: the chip's allocator is not published), with `T` tiles per SparseCore:
//!
//! - a partition's work is shared by the SparseCore's tiles as its samples are, so each tile
//!   holds a `1 / T` share of one partition, rounded up to whole vector registers of 8 entries
//!   (the buffers' alignment, reference §5): `entries = roundup8(ceil(max_ids_per_partition /
//!   T))` and `unique_ids = roundup8(ceil(max_unique_ids_per_partition / T))`; together the
//!   tiles hold the whole partition;
//! - an entry is what the preprocessed buffers hold for it, a row (sample) id, a column
//!   (embedding) id and a gain: [`PARTITION_ENTRY_BYTES`] = 4 + 4 + 4 bytes; a unique id is one
//!   column id: [`UNIQUE_ID_BYTES`] = 4 bytes (the deduplicated columns, the CSR's column array);
//! - `partition_bytes = entries * 12 + unique_ids * 4` ([`partition_share`]);
//!   `fixed_allocation_bytes = gather_operand_bytes + 2 * row_bytes + partition_bytes`, and
//!   `staging_rows = (M - gather_operand_bytes - partition_bytes) / (2 * row_bytes)`.
//!
//! The example (v5p, limits 256 and 64, width 128, batch 4096): `entries =
//! roundup8(16) = 16`, `unique_ids = roundup8(4) = 8`, `partition_bytes = 16 * 12 + 8 * 4 = 224`,
//! fixed allocations `131072 + 1024 + 224 = 132320` bytes, `383` staging rows.
//! [`SparseCoreConfig::new`] (the compile-time check of `sparsecore(...)`) and the runtime
//! lookup, when its configuration carries the limits, use this rule; [`tile_spmem_plan`] is the
//! same rule with `partition_bytes = 0`.
//!
//! All arithmetic saturates at `u64::MAX` (no overflow, whatever the inputs).

use std::fmt;

/// The placeholder clock of every preset (1 GHz): not a published number.
pub const ASSUMED_CLOCK_HZ: f64 = 1.0e9;

/// Bytes of one `f32` value (the lookup gathers and accumulates `f32` rows).
pub const F32_BYTES: u64 = 4;

/// Bytes of one partition entry in TileSpmem: a row (sample) id, a column (embedding) id and
/// a gain, `i32` + `i32` + `f32`, as the preprocessed buffers hold them (module docs).
pub const PARTITION_ENTRY_BYTES: u64 = 12;

/// Bytes of one unique id of a partition in TileSpmem: one `i32` column id (module docs).
pub const UNIQUE_ID_BYTES: u64 = 4;

/// Entries per vector register: a tile's partition share is rounded up to a multiple of it
/// (reference §5's alignment).
const REGISTER_ENTRIES: u64 = 8;

/// Bytes in a KiB.
const KIB: u64 = 1024;
/// Bytes in a GiB.
const GIB: u64 = 1024 * 1024 * 1024;

/// The published numbers of one SparseCore generation (SparseCore reference §9), as constant
/// data. The runtime's `ChipModel` is built from one (`ChipModel::from(&V5P)`) and may override
/// any field; the code generator reads them at compile time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChipPreset {
    /// The preset's name: `v4`, `v5p`, `v6e`, `tpu7x`.
    pub name: &'static str,
    /// SparseCores one device addresses: `num_sc_per_device` (S) of preprocessing.
    pub sparsecores_per_device: u32,
    /// SparseCores on the chip (TPU7x: 2 per device, 4 physical).
    pub sparsecores_per_chip: u32,
    /// Tiles per SparseCore.
    pub tiles_per_sc: u32,
    /// `f32` lanes of a tile's vector unit.
    pub f32_lanes: u32,
    /// `bf16` lanes (v4 and v5p publish a SIMD width of 8 only: 8).
    pub bf16_lanes: u32,
    /// TileSpmem per tile, bytes.
    pub tile_spmem_bytes: u64,
    /// Shared Spmem per SparseCore, bytes; published only for v4 (2.5 MiB), `None` elsewhere.
    pub shared_spmem_bytes: Option<u64>,
    /// HBM capacity, bytes.
    pub hbm_bytes: u64,
    /// HBM bandwidth, bytes per second.
    pub hbm_bandwidth: f64,
    /// Clock of the tiles, Hz ([`ASSUMED_CLOCK_HZ`] in every preset: not published).
    pub clock_hz: f64,
}

/// TPU v4: 4 SparseCores of 16 tiles, 8 lanes, ~160 KiB TileSpmem per tile (2.5 MiB per SC,
/// also its shared Spmem), 32 GiB HBM at 1200 GB/s.
pub const V4: ChipPreset = ChipPreset {
    name: "v4",
    sparsecores_per_device: 4,
    sparsecores_per_chip: 4,
    tiles_per_sc: 16,
    f32_lanes: 8,
    bf16_lanes: 8,
    tile_spmem_bytes: 160 * KIB,
    shared_spmem_bytes: Some(2560 * KIB),
    hbm_bytes: 32 * GIB,
    hbm_bandwidth: 1200e9,
    clock_hz: ASSUMED_CLOCK_HZ,
};

/// TPU v5p: 4 SparseCores of 16 tiles, 8 lanes, 512 KiB TileSpmem per tile, 95 GB HBM (§9; the
/// architecture table says 96 GiB) at 2765 GB/s.
pub const V5P: ChipPreset = ChipPreset {
    name: "v5p",
    sparsecores_per_device: 4,
    sparsecores_per_chip: 4,
    tiles_per_sc: 16,
    f32_lanes: 8,
    bf16_lanes: 8,
    tile_spmem_bytes: 512 * KIB,
    shared_spmem_bytes: None,
    hbm_bytes: 95_000_000_000,
    hbm_bandwidth: 2765e9,
    clock_hz: ASSUMED_CLOCK_HZ,
};

/// v6e (Trillium): 2 SparseCores of 16 tiles, 8 f32 / 16 bf16 lanes, 256 KiB TileSpmem per tile,
/// 32 GB HBM at 1638 GB/s.
pub const V6E: ChipPreset = ChipPreset {
    name: "v6e",
    sparsecores_per_device: 2,
    sparsecores_per_chip: 2,
    tiles_per_sc: 16,
    f32_lanes: 8,
    bf16_lanes: 16,
    tile_spmem_bytes: 256 * KIB,
    shared_spmem_bytes: None,
    hbm_bytes: 32_000_000_000,
    hbm_bandwidth: 1638e9,
    clock_hz: ASSUMED_CLOCK_HZ,
};

/// TPU7x (Ironwood): 2 SparseCores per device (4 physical) of 16 tiles, 16 f32 / 32 bf16 lanes,
/// 512 KiB TileSpmem per tile, 192 GB HBM at 7.4 TB/s.
pub const TPU7X: ChipPreset = ChipPreset {
    name: "tpu7x",
    sparsecores_per_device: 2,
    sparsecores_per_chip: 4,
    tiles_per_sc: 16,
    f32_lanes: 16,
    bf16_lanes: 32,
    tile_spmem_bytes: 512 * KIB,
    shared_spmem_bytes: None,
    hbm_bytes: 192_000_000_000,
    hbm_bandwidth: 7.4e12,
    clock_hz: ASSUMED_CLOCK_HZ,
};

/// Every preset, in order.
pub const PRESETS: [ChipPreset; 4] = [V4, V5P, V6E, TPU7X];

/// The preset names, in order (`v4`, `v5p`, `v6e`, `tpu7x`).
pub const PRESET_NAMES: [&str; 4] = [V4.name, V5P.name, V6E.name, TPU7X.name];

/// The preset called `name` (`v4`, `v5p`, `v6e`, `tpu7x`; `trillium` and `ironwood` are
/// accepted for the last two); `None` for any other name.
pub fn preset(name: &str) -> Option<&'static ChipPreset> {
    match name {
        "v4" => Some(&V4),
        "v5p" => Some(&V5P),
        "v6e" | "trillium" => Some(&V6E),
        "tpu7x" | "ironwood" => Some(&TPU7X),
        _ => None,
    }
}

/// An embedding width padded to a multiple of 8 values (one 32-byte line of `f32`; SparseCore
/// reference, "Memory" and §7), saturating at the largest multiple of 8.
pub fn padded_width(width: u32) -> u32 {
    width.div_ceil(8).saturating_mul(8)
}

/// How one tile's TileSpmem is used by a lookup step ([`tile_spmem_plan`], module docs). All
/// sizes in bytes unless stated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileSpmemPlan {
    /// TileSpmem of one tile (`M`).
    pub tile_spmem_bytes: u64,
    /// Output rows a tile holds: `ceil(samples / tiles)` (samples).
    pub samples_per_tile: u64,
    /// Bytes of one row: `width * 4`.
    pub row_bytes: u64,
    /// The gather operand: `samples_per_tile * row_bytes`.
    pub gather_operand_bytes: u64,
    /// The fixed allocations: `gather_operand_bytes + 2 * row_bytes + partition_bytes`.
    pub fixed_allocation_bytes: u64,
    /// Rows of each of the two staging buffers: `(M - gather_operand_bytes - partition_bytes)
    /// / (2 * max(row_bytes, 1))` (rows; at least 1 when `row_bytes > 0`).
    pub staging_rows: u64,
    /// A tile's share of one partition's data ([`partition_share`]), part of the fixed
    /// allocations; 0 from [`tile_spmem_plan`], which does not know the limits.
    pub partition_bytes: u64,
}

impl TileSpmemPlan {
    /// Peak TileSpmem of a tile holding `samples` output rows that looks up `entries` ids: its
    /// output rows, two staging buffers of `min(staging_rows, entries)` rows and its partition
    /// share (`partition_bytes`, allocated whatever the tile's load).
    pub fn peak_bytes(&self, samples: u64, entries: u64) -> u64 {
        let chunk = self.staging_rows.min(entries);
        samples
            .saturating_mul(self.row_bytes)
            .saturating_add(chunk.saturating_mul(2).saturating_mul(self.row_bytes))
            .saturating_add(self.partition_bytes)
    }

    /// The largest peak any tile can reach: `gather_operand_bytes + 2 * staging_rows *
    /// row_bytes + partition_bytes` (`<= tile_spmem_bytes`).
    pub fn max_peak_bytes(&self) -> u64 {
        self.peak_bytes(self.samples_per_tile, self.staging_rows)
    }
}

/// A tile whose data does not fit its TileSpmem, in the chip's words (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpmemError {
    /// A tile's output rows alone exceed its TileSpmem.
    GatherTooLarge {
        /// Output bytes of the largest tile (`gather_operand_bytes`).
        needed: u64,
        /// TileSpmem bytes.
        available: u64,
    },
    /// Output rows plus one staged row per buffer (plus the partition buffers, with limits)
    /// exceed TileSpmem.
    FixedAllocations {
        /// Bytes needed (`fixed_allocation_bytes`).
        needed: u64,
        /// TileSpmem bytes.
        available: u64,
    },
}

impl fmt::Display for SpmemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpmemError::GatherTooLarge { needed, available } => write!(
                f,
                "Gather operand too large: (sample_count * feature_width) / tiles = {needed} \
                 bytes per tile exceeds TileSpmem ({available} bytes)"
            ),
            SpmemError::FixedAllocations { needed, available } => write!(
                f,
                "Fixed size allocations ({needed} bytes) do not fit in TileSpmem ({available} \
                 bytes)"
            ),
        }
    }
}

impl std::error::Error for SpmemError {}

/// The TileSpmem of a tile when a SparseCore of `tiles` tiles with `tile_spmem_bytes` per tile
/// looks up `samples` samples (its `batch_size_per_sc`) of rows `width` `f32` values wide (the
/// table's padded width): the rule of the module docs. `tiles = 0` counts as 1.
///
/// # Errors
/// [`SpmemError::GatherTooLarge`] when the output rows exceed TileSpmem, else
/// [`SpmemError::FixedAllocations`] when they leave no room for one staged row per buffer.
pub fn tile_spmem_plan(
    tile_spmem_bytes: u64,
    tiles: u32,
    samples: u64,
    width: u64,
) -> Result<TileSpmemPlan, SpmemError> {
    plan(tile_spmem_bytes, tiles, samples, width, 0)
}

/// A tile's share of one partition's data (module docs, the limits-aware rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionShare {
    /// Entries a tile holds: `roundup8(ceil(max_ids_per_partition / tiles))`.
    pub entries: u64,
    /// Unique ids a tile holds: `roundup8(ceil(max_unique_ids_per_partition / tiles))`.
    pub unique_ids: u64,
    /// `entries * PARTITION_ENTRY_BYTES + unique_ids * UNIQUE_ID_BYTES` bytes.
    pub bytes: u64,
}

/// The share of one partition a tile of a SparseCore with `tiles` tiles holds under the
/// limits `max_ids_per_partition` and `max_unique_ids_per_partition` (module docs; `tiles =
/// 0` counts as 1; saturating). Example: 16 tiles, limits 256 and 64: 16 entries and 8 unique
/// ids, 224 bytes.
pub fn partition_share(
    tiles: u32,
    max_ids_per_partition: u32,
    max_unique_ids_per_partition: u32,
) -> PartitionShare {
    let t = u64::from(tiles.max(1));
    let share = |n: u32| {
        u64::from(n)
            .div_ceil(t)
            .div_ceil(REGISTER_ENTRIES)
            .saturating_mul(REGISTER_ENTRIES)
    };
    let entries = share(max_ids_per_partition);
    let unique_ids = share(max_unique_ids_per_partition);
    PartitionShare {
        entries,
        unique_ids,
        bytes: entries
            .saturating_mul(PARTITION_ENTRY_BYTES)
            .saturating_add(unique_ids.saturating_mul(UNIQUE_ID_BYTES)),
    }
}

/// [`tile_spmem_plan`] with the partition buffers the limits size (module docs, the
/// limits-aware rule): the fixed allocations add [`partition_share`]`(tiles,
/// max_ids_per_partition, max_unique_ids_per_partition).bytes`, and the staging buffers get what
/// is left. `tiles = 0` counts as 1. With both limits 0 it equals [`tile_spmem_plan`].
///
/// # Errors
/// [`SpmemError::GatherTooLarge`] when the output rows alone exceed TileSpmem (the partition
/// buffers do not change it), else [`SpmemError::FixedAllocations`] when the output rows, one
/// staged row per buffer and the partition share exceed it.
pub fn tile_spmem_plan_with_limits(
    tile_spmem_bytes: u64,
    tiles: u32,
    samples: u64,
    width: u64,
    max_ids_per_partition: u32,
    max_unique_ids_per_partition: u32,
) -> Result<TileSpmemPlan, SpmemError> {
    let share = partition_share(tiles, max_ids_per_partition, max_unique_ids_per_partition);
    plan(tile_spmem_bytes, tiles, samples, width, share.bytes)
}

/// The rule of the module docs with `partition_bytes` of fixed partition buffers.
fn plan(
    tile_spmem_bytes: u64,
    tiles: u32,
    samples: u64,
    width: u64,
    partition_bytes: u64,
) -> Result<TileSpmemPlan, SpmemError> {
    let row_bytes = width.saturating_mul(F32_BYTES);
    let samples_per_tile = samples.div_ceil(u64::from(tiles.max(1)));
    let gather_operand_bytes = samples_per_tile.saturating_mul(row_bytes);
    let fixed_allocation_bytes = gather_operand_bytes
        .saturating_add(row_bytes.saturating_mul(2))
        .saturating_add(partition_bytes);
    if gather_operand_bytes > tile_spmem_bytes {
        return Err(SpmemError::GatherTooLarge {
            needed: gather_operand_bytes,
            available: tile_spmem_bytes,
        });
    }
    if fixed_allocation_bytes > tile_spmem_bytes {
        return Err(SpmemError::FixedAllocations {
            needed: fixed_allocation_bytes,
            available: tile_spmem_bytes,
        });
    }
    Ok(TileSpmemPlan {
        tile_spmem_bytes,
        samples_per_tile,
        row_bytes,
        gather_operand_bytes,
        fixed_allocation_bytes,
        // fixed_allocation_bytes <= M, so neither subtraction wraps
        staging_rows: (tile_spmem_bytes - gather_operand_bytes - partition_bytes)
            / row_bytes.max(1).saturating_mul(2),
        partition_bytes,
    })
}

/// A SparseCore configuration fixed at compile time (the `sparsecore(...)` clause of a
/// `sparse_format!` declaration), with the TileSpmem sizes the runtime's lookup will use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SparseCoreConfig {
    /// The chip (one of [`PRESETS`]).
    pub chip: &'static ChipPreset,
    /// Ids (duplicates counted) one partition may receive per step; preprocessing's limit
    /// (`PreprocessConfig::max_ids_per_partition`); sizes the tiles' partition buffers
    /// ([`tile_spmem_plan_with_limits`]).
    pub max_ids_per_partition: u32,
    /// Distinct ids one partition may receive per step; preprocessing's limit; sizes the
    /// tiles' partition buffers.
    pub max_unique_ids_per_partition: u32,
    /// Values per embedding row before padding (`LookupConfig::feature_width`).
    pub feature_width: u32,
    /// The row width the lookup reads: [`padded_width`]`(feature_width)` values.
    pub padded_width: u32,
    /// Samples one SparseCore looks up per step (`LookupConfig::batch_size_per_sc`).
    pub batch: u32,
    /// TileSpmem of one tile for this configuration ([`tile_spmem_plan_with_limits`] on the
    /// chip's tiles and TileSpmem, `batch` samples, `padded_width` and the two limits).
    pub tile_spmem: TileSpmemPlan,
}

/// Why [`SparseCoreConfig::new`] rejects a configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SparseCoreConfigError {
    /// A limit, the width or the batch is 0.
    NotPositive {
        /// The option: `max_ids_per_partition`, `max_unique_ids_per_partition`,
        /// `feature_width` or `batch`.
        name: &'static str,
    },
    /// The tile's data does not fit its TileSpmem.
    Spmem(SpmemError),
}

impl fmt::Display for SparseCoreConfigError {
    /// `NAME must be positive, got 0.` (preprocessing's words for its limits), or the
    /// [`SpmemError`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SparseCoreConfigError::NotPositive { name } => {
                write!(f, "{name} must be positive, got 0.")
            }
            SparseCoreConfigError::Spmem(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SparseCoreConfigError {}

impl SparseCoreConfig {
    /// The configuration of `chip` with these limits, `feature_width` (values per row before
    /// padding) and `batch` (samples per SparseCore per step), sized by
    /// [`tile_spmem_plan_with_limits`] (the limits size the tiles' partition buffers).
    ///
    /// # Errors
    /// [`SparseCoreConfigError::NotPositive`] for a zero (checked in argument order), then
    /// [`SparseCoreConfigError::Spmem`] when a tile's data does not fit its TileSpmem.
    pub fn new(
        chip: &'static ChipPreset,
        max_ids_per_partition: u32,
        max_unique_ids_per_partition: u32,
        feature_width: u32,
        batch: u32,
    ) -> Result<Self, SparseCoreConfigError> {
        for (name, value) in [
            ("max_ids_per_partition", max_ids_per_partition),
            ("max_unique_ids_per_partition", max_unique_ids_per_partition),
            ("feature_width", feature_width),
            ("batch", batch),
        ] {
            if value == 0 {
                return Err(SparseCoreConfigError::NotPositive { name });
            }
        }
        let padded = padded_width(feature_width);
        let tile_spmem = tile_spmem_plan_with_limits(
            chip.tile_spmem_bytes,
            chip.tiles_per_sc,
            u64::from(batch),
            u64::from(padded),
            max_ids_per_partition,
            max_unique_ids_per_partition,
        )
        .map_err(SparseCoreConfigError::Spmem)?;
        Ok(SparseCoreConfig {
            chip,
            max_ids_per_partition,
            max_unique_ids_per_partition,
            feature_width,
            padded_width: padded,
            batch,
            tile_spmem,
        })
    }
}

impl fmt::Display for SparseCoreConfig {
    /// The clause as written in a declaration, options in their canonical order:
    /// `sparsecore(chip = v5p, max_ids_per_partition = 256, max_unique_ids_per_partition = 64,
    /// feature_width = 128, batch = 4096)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sparsecore(chip = {}, max_ids_per_partition = {}, max_unique_ids_per_partition = {}, \
             feature_width = {}, batch = {})",
            self.chip.name,
            self.max_ids_per_partition,
            self.max_unique_ids_per_partition,
            self.feature_width,
            self.batch
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_by_name() {
        assert_eq!(PRESET_NAMES, ["v4", "v5p", "v6e", "tpu7x"]);
        for p in &PRESETS {
            assert_eq!(preset(p.name), Some(p));
        }
        assert_eq!(preset("trillium"), Some(&V6E));
        assert_eq!(preset("ironwood"), Some(&TPU7X));
        assert_eq!(preset("v9"), None);
    }

    #[test]
    fn tile_spmem_rule_exact_numbers() {
        // v5p, 4096 samples per SC over 16 tiles = 256 rows of 128 f32 (512 bytes).
        let p = tile_spmem_plan(524_288, 16, 4096, 128).unwrap();
        assert_eq!(p.samples_per_tile, 256);
        assert_eq!(p.row_bytes, 512);
        assert_eq!(p.gather_operand_bytes, 131_072);
        assert_eq!(p.fixed_allocation_bytes, 132_096);
        assert_eq!(p.staging_rows, 384);
        assert_eq!(p.max_peak_bytes(), 524_288);
        assert_eq!(p.peak_bytes(10, 3), 10 * 512 + 2 * 3 * 512);
        // v4: 320 rows of 512 bytes fill the 160 KiB exactly; no room to stage.
        assert_eq!(
            tile_spmem_plan(163_840, 16, 5120, 128).unwrap_err(),
            SpmemError::FixedAllocations {
                needed: 164_864,
                available: 163_840
            }
        );
        assert_eq!(
            tile_spmem_plan(163_840, 16, 8192, 128)
                .unwrap_err()
                .to_string(),
            "Gather operand too large: (sample_count * feature_width) / tiles = 262144 bytes per \
             tile exceeds TileSpmem (163840 bytes)"
        );
        // saturation: never an overflow
        assert!(matches!(
            tile_spmem_plan(1 << 40, 1, u64::MAX, u64::MAX),
            Err(SpmemError::GatherTooLarge {
                needed: u64::MAX,
                ..
            })
        ));
    }

    #[test]
    fn limits_size_the_partition_buffers() {
        // 16 tiles, limits 256 and 64: roundup8(16) = 16 entries, roundup8(4) = 8 unique ids
        assert_eq!(
            partition_share(16, 256, 64),
            PartitionShare {
                entries: 16,
                unique_ids: 8,
                bytes: 16 * 12 + 8 * 4
            }
        );
        // shares round up: 17 ids over 16 tiles is 2 per tile, one register of 8
        assert_eq!(partition_share(16, 17, 1).entries, 8);
        assert_eq!(partition_share(0, 3, 3), partition_share(1, 3, 3));
        assert_eq!(partition_share(1, 0, 0).bytes, 0);
        // the example on v5p: 131072 + 1024 + 224 bytes fixed, 383 staging rows
        let p = tile_spmem_plan_with_limits(524_288, 16, 4096, 128, 256, 64).unwrap();
        assert_eq!(p.partition_bytes, 224);
        assert_eq!(p.fixed_allocation_bytes, 132_320);
        assert_eq!(p.staging_rows, 383);
        assert_eq!(p.max_peak_bytes(), 131_072 + 2 * 383 * 512 + 224);
        assert_eq!(p.peak_bytes(0, 0), 224);
        // limits of 0 are the plain rule
        assert_eq!(
            tile_spmem_plan_with_limits(524_288, 16, 4096, 128, 0, 0),
            tile_spmem_plan(524_288, 16, 4096, 128)
        );
        // large limits no longer fit: 2^20 ids and 2^16 unique ids over 16 tiles are 65536
        // entries (786432 bytes) and 4096 unique ids (16384 bytes) per tile
        assert_eq!(
            tile_spmem_plan_with_limits(524_288, 16, 4096, 128, 1 << 20, 1 << 16).unwrap_err(),
            SpmemError::FixedAllocations {
                needed: 131_072 + 1024 + 786_432 + 16_384,
                available: 524_288
            }
        );
        assert_eq!(
            SparseCoreConfig::new(&V5P, 1 << 20, 1 << 16, 128, 4096)
                .unwrap_err()
                .to_string(),
            "Fixed size allocations (934912 bytes) do not fit in TileSpmem (524288 bytes)"
        );
        // just fitting: the room beside the output rows and two staged rows is 524288 -
        // 132096 = 392192 bytes, filled exactly by 32680 entries (392160 bytes, a multiple of
        // 8 entries) and 8 unique ids (32 bytes); one register of entries more does not fit
        let fit = tile_spmem_plan_with_limits(524_288, 16, 4096, 128, 32_680 * 16, 8 * 16);
        assert_eq!(fit.unwrap().fixed_allocation_bytes, 524_288);
        assert_eq!(fit.unwrap().staging_rows, 1);
        assert!(tile_spmem_plan_with_limits(524_288, 16, 4096, 128, 32_681 * 16, 8 * 16).is_err());
        // the gather operand is checked first, and nothing overflows
        assert!(matches!(
            tile_spmem_plan_with_limits(163_840, 16, 8192, 128, u32::MAX, u32::MAX),
            Err(SpmemError::GatherTooLarge {
                needed: 262_144,
                ..
            })
        ));
        assert_eq!(
            partition_share(1, u32::MAX, u32::MAX).bytes,
            u64::from(u32::MAX).div_ceil(8) * 8 * 16
        );
    }

    #[test]
    fn config_pads_the_width_and_rejects_zeros() {
        let c = SparseCoreConfig::new(&V5P, 256, 64, 100, 4096).unwrap();
        assert_eq!(c.padded_width, 104);
        assert_eq!(c.tile_spmem.row_bytes, 416);
        assert_eq!(
            c.to_string(),
            "sparsecore(chip = v5p, max_ids_per_partition = 256, \
             max_unique_ids_per_partition = 64, feature_width = 100, batch = 4096)"
        );
        assert_eq!(
            SparseCoreConfig::new(&V5P, 256, 64, 128, 0)
                .unwrap_err()
                .to_string(),
            "batch must be positive, got 0."
        );
    }
}
