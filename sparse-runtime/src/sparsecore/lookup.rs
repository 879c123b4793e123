//! The lookup (`SparseDenseMatmul`) run on the chip model: functionally exact on the CPU, with a
//! report of what each tile and SparseCore would do (SparseCore reference §8 and "Memory").
//!
//! [`lookup`] reads one device's preprocessed buffers ([`DeviceBuffers`]) as the chip does: for
//! each local SparseCore, minibatch after minibatch, partition after partition, the row
//! pointers give each partition's entries `(local id, sample id, gain)`; partition `p`'s local id
//! `l` is the table row `col_id = l * num_scs + p` (mod sharding: the shard of SparseCore `p`
//! holds the rows `p, p + num_scs, ...`). Each entry adds `gain * table[col_id]` (quantized
//! first when asked) to its sample's output row.
//!
//! **Tiles.** A SparseCore's samples are split evenly over its tiles (tile `t` owns samples
//! `[t * B / T, (t + 1) * B / T)` of `B = batch_size_per_sc`, the `(sample_count *
//! feature_width) / tiles` rule of the reference); a tile handles the entries of its samples in
//! buffer order. Each sample is therefore accumulated by one tile, in buffer order: the result
//! equals the plain sequential computation bit for bit ([`reference_activations`]).
//!
//! **TileSpmem.** A tile holds its output rows (`samples * width * 4` bytes) and stages the
//! gathered rows through two buffers (double buffering) of `chunk` rows each. If the output rows
//! alone do not fit, the lookup fails with the chip's words `Gather operand too large`; if not
//! even one row can be staged beside them, with `Fixed size allocations (N bytes) do not fit in
//! TileSpmem (M bytes)`. `chunk` is the largest that fits, at most the tile's entries. The rule
//! is [`tile_spmem_plan`] (in `sparse-ir`); when the configuration carries the partition limits
//! ([`LookupConfig::partition_limits`], set by [`LookupConfig::from_sparsecore`]), the fixed
//! allocations also hold each tile's share of one partition
//! ([`tile_spmem_plan_with_limits`], the rule the compile-time `sparsecore(...)` check of
//! `sparse_format!` applies to the same chip presets).
//!
//! **Report.** Per tile and SparseCore: ids (entries), unique ids (distinct columns), HBM bytes
//! (`unique ids * width * 4` gathered, `12` bytes per entry read from the buffers, `samples *
//! width * 4` written), peak TileSpmem, the modelled time ([`ChipModel::step`]); the
//! imbalance (slowest tile over the mean), padding waste (buffer slots that hold PAD inside the
//! used range, and gathered bytes of padded columns) and the reference's HBM stack estimates.

use rayon::prelude::*;

use super::chip::{ChipError, ChipModel, DType, StepCost, TileLoad};
use super::{round_up, DeviceBuffers, ALIGNMENT, PAD};
use super::{tile_spmem_plan, tile_spmem_plan_with_limits, SparseCoreConfig, SpmemError};

/// An embedding table as the lookup reads it: row `col_id` (the stacked id space, after shift
/// and offset) at `data[col_id * width..(col_id + 1) * width]`, `width` padded to a multiple of
/// 8 (reference §7).
#[derive(Clone, Debug, PartialEq)]
pub struct EmbeddingTable {
    /// Rows (vocabulary, padded to a multiple of `8 * num_scs`).
    pub rows: usize,
    /// Values per row (padded width).
    pub width: usize,
    /// `rows * width` values, row-major.
    pub data: Vec<f32>,
}

/// Simulated quantization of the gathered rows (reference §8): clip to `[low, high]`, round half
/// up to the grid `low + k * (high - low) / (num_buckets - 1)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LookupQuantization {
    /// Values below are clipped to it.
    pub low: f32,
    /// Values above are clipped to it.
    pub high: f32,
    /// Grid points (`>= 2`; 256 for 8 bits).
    pub num_buckets: u32,
}

impl LookupQuantization {
    /// `x` clipped and rounded to the grid (half up), in `f32`.
    pub fn apply(&self, x: f32) -> f32 {
        let step = (self.high - self.low) / (self.num_buckets - 1) as f32;
        let k = ((x.clamp(self.low, self.high) - self.low) / step + 0.5).floor();
        self.low + k * step
    }
}

/// What one lookup step needs beyond the buffers and the table.
#[derive(Clone, Debug, PartialEq)]
pub struct LookupConfig {
    /// `S`: the device's SparseCores (must equal the chip's `sparsecores_per_device`).
    pub num_sc_per_device: u32,
    /// SparseCores of the system (`S * global_device_count`): partitions per buffer segment.
    pub num_scs: u32,
    /// Samples each SparseCore sends (its output rows).
    pub batch_size_per_sc: u32,
    /// Minibatches in the buffers (1 without minibatching).
    pub num_minibatches: usize,
    /// `true` if the buffers were filled with minibatching (absolute row pointers, packed
    /// segments).
    pub minibatching: bool,
    /// The table's width before padding (for the padding waste; `<=` the table's width).
    pub feature_width: usize,
    /// Replicas of the table's computation (`logical_replica_count` of the HBM stack
    /// estimate; the number of devices).
    pub logical_replica_count: u64,
    /// Simulated quantization of the gathered rows, if any.
    pub quantization: Option<LookupQuantization>,
    /// The limits the buffers were preprocessed with, `(max_ids_per_partition,
    /// max_unique_ids_per_partition)`, when known: TileSpmem is then sized with the partition
    /// buffers they need ([`tile_spmem_plan_with_limits`], the compile-time rule of
    /// `sparsecore(...)`); `None`: [`tile_spmem_plan`], without them.
    pub partition_limits: Option<(u32, u32)>,
}

impl LookupConfig {
    /// The configuration of a lookup step for a format declared with `sparsecore(...)`
    /// (its generated `SPARSECORE` constant) on `global_device_count` devices: `S` the chip's
    /// `sparsecores_per_device`, `num_scs = S * global_device_count`, `batch_size_per_sc =
    /// cfg.batch`, `feature_width = cfg.feature_width`, `logical_replica_count =
    /// global_device_count`, `partition_limits` the clause's two limits (so TileSpmem is sized
    /// as at compile time), one minibatch, no minibatching, no quantization (set those fields
    /// afterwards when the buffers were preprocessed otherwise). The table must be
    /// `cfg.padded_width` values wide for the compile-time TileSpmem sizes to be the lookup's.
    pub fn from_sparsecore(cfg: &SparseCoreConfig, global_device_count: u32) -> LookupConfig {
        let s = cfg.chip.sparsecores_per_device;
        LookupConfig {
            num_sc_per_device: s,
            num_scs: s.saturating_mul(global_device_count),
            batch_size_per_sc: cfg.batch,
            num_minibatches: 1,
            minibatching: false,
            feature_width: cfg.feature_width as usize,
            logical_replica_count: u64::from(global_device_count),
            quantization: None,
            partition_limits: Some((cfg.max_ids_per_partition, cfg.max_unique_ids_per_partition)),
        }
    }
}

/// One tile's share of a step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TileReport {
    /// Entries (ids with their sample and gain) the tile handles.
    pub ids: u64,
    /// Distinct columns among them (rows gathered from HBM).
    pub unique_ids: u64,
    /// HBM bytes moved: gathered rows, buffer entries read, output rows written.
    pub hbm_bytes: u64,
    /// Peak TileSpmem bytes: output rows plus the two staging buffers (plus the partition
    /// share when the limits are known).
    pub peak_spmem_bytes: u64,
    /// Modelled seconds ([`ChipModel::tile_seconds`]).
    pub seconds: f64,
}

/// One SparseCore's share of a step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScReport {
    /// Its tiles, in order.
    pub tiles: Vec<TileReport>,
    /// Entries over all tiles.
    pub ids: u64,
    /// Distinct columns over the SparseCore.
    pub unique_ids: u64,
    /// HBM bytes over all tiles.
    pub hbm_bytes: u64,
    /// The largest tile peak.
    pub peak_spmem_bytes: u64,
    /// Modelled seconds: its slowest tile.
    pub seconds: f64,
    /// Buffer slots inside its used range holding PAD (alignment holes).
    pub padding_slots: u64,
}

/// What the chip would do in one lookup step of one device.
#[derive(Clone, Debug, PartialEq)]
pub struct LookupReport {
    /// Per local SparseCore.
    pub scs: Vec<ScReport>,
    /// The modelled step ([`ChipModel::step`]).
    pub cost: StepCost,
    /// Gathered bytes spent on padded columns (`unique ids * (width - feature_width) * 4`).
    pub padding_waste_bytes: u64,
    /// Distinct columns of the sample with the most (`max_unique_nz_per_row`).
    pub max_unique_nz_per_row: u64,
    /// Forward HBM stack estimate: `(2 * feature_width + 1) * max_unique_nz_per_row *
    /// logical_replica_count * 4` bytes (SparseCore reference, "Memory").
    pub forward_hbm_stack_bytes: u64,
    /// Backward HBM stack estimate: `3 * feature_width * max_unique_nz_per_row *
    /// logical_replica_count * 4` bytes.
    pub backward_hbm_stack_bytes: u64,
}

/// What the lookup rejects.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LookupError {
    /// The configuration disagrees with the chip or the table.
    #[error("{0}")]
    Config(String),
    /// The buffers are not what preprocessing writes (a row pointer out of range, a local id
    /// past the table, a sample id past the batch).
    #[error("malformed buffers: {0}")]
    Buffer(String),
    /// A tile's output rows do not fit its TileSpmem (the chip's words, from
    /// [`SpmemError::GatherTooLarge`]).
    #[error("{}", SpmemError::GatherTooLarge { needed: *.needed, available: *.available })]
    GatherTooLarge {
        /// Output bytes of the largest tile.
        needed: u64,
        /// TileSpmem bytes.
        available: u64,
    },
    /// Output rows plus one staged row per buffer do not fit (the chip's words, from
    /// [`SpmemError::FixedAllocations`]).
    #[error("{}", SpmemError::FixedAllocations { needed: *.needed, available: *.available })]
    FixedAllocations {
        /// Bytes needed.
        needed: u64,
        /// TileSpmem bytes.
        available: u64,
    },
    /// The chip model rejected the loads.
    #[error(transparent)]
    Chip(#[from] ChipError),
}

impl From<SpmemError> for LookupError {
    /// The variant of the same name and fields.
    fn from(e: SpmemError) -> Self {
        match e {
            SpmemError::GatherTooLarge { needed, available } => {
                LookupError::GatherTooLarge { needed, available }
            }
            SpmemError::FixedAllocations { needed, available } => {
                LookupError::FixedAllocations { needed, available }
            }
        }
    }
}

/// One entry as decoded from the buffers.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Entry {
    col: usize,
    sample: usize,
    gain: f32,
}

/// The entries of local SparseCore `k`, in buffer order, decoded from the row pointers; and the
/// PAD slots inside its used range.
fn decode_sc(
    b: &DeviceBuffers,
    cfg: &LookupConfig,
    k: usize,
    chained: &mut usize,
) -> Result<(Vec<Entry>, u64), LookupError> {
    let len = b.embedding_ids.len();
    let s = cfg.num_sc_per_device as usize;
    let ns = cfg.num_scs as usize;
    let r = ns.max(ALIGNMENT);
    let per_sc = len / s.max(1);
    let bad = |m: String| LookupError::Buffer(m);
    let mut out = Vec::new();
    let mut holes = 0u64;
    let required_before: usize = b.required_buffer_size[..k]
        .iter()
        .map(|&x| x as usize)
        .sum();
    for m in 0..cfg.num_minibatches {
        let (begin, base) = if !cfg.minibatching {
            (k * per_sc, k * per_sc)
        } else if cfg.num_minibatches == 1 {
            (required_before.min(len), 0)
        } else {
            (*chained, 0)
        };
        let first = (k * cfg.num_minibatches + m) * r;
        let ptrs = b
            .row_pointers
            .get(first..first + r)
            .ok_or_else(|| bad(format!("no row pointers for SparseCore {k}, minibatch {m}")))?;
        let mut start = begin;
        let mut end_of_segment = begin;
        for (p, &ptr) in ptrs.iter().enumerate().take(ns) {
            let end = usize::try_from(ptr)
                .ok()
                .map(|e| e + base)
                .filter(|&e| e >= start && e <= len)
                .ok_or_else(|| {
                    bad(format!(
                        "row pointer {ptr} of SparseCore {k}, minibatch {m}, partition {p} is \
                         outside [{start}, {len}]"
                    ))
                })?;
            for i in start..end {
                let (id, sample, gain) = (b.embedding_ids[i], b.sample_ids[i], b.gains[i]);
                if id == PAD || sample == PAD {
                    return Err(bad(format!("slot {i} of partition {p} holds PAD")));
                }
                let (Ok(id), Ok(sample)) = (usize::try_from(id), usize::try_from(sample)) else {
                    return Err(bad(format!("slot {i} holds a negative id or sample id")));
                };
                if sample >= cfg.batch_size_per_sc as usize {
                    return Err(bad(format!(
                        "slot {i}: sample id {sample} is not below batch_size_per_sc = {}",
                        cfg.batch_size_per_sc
                    )));
                }
                out.push(Entry {
                    col: id * ns + p,
                    sample,
                    gain,
                });
            }
            end_of_segment = end;
            let next = (round_up(end as u64, ALIGNMENT as u64) as usize).min(len);
            if p + 1 < ns {
                holes += (next - end) as u64;
            }
            start = next;
        }
        *chained = (round_up(end_of_segment as u64, ALIGNMENT as u64) as usize).min(len);
    }
    Ok((out, holes))
}

/// The activations the lookup must produce, computed plainly: for each local SparseCore, each
/// entry in buffer order adds `gain * row` to output row `k * batch_size_per_sc + sample`.
/// `activations` is `S * batch_size_per_sc` rows of `table.width` values.
///
/// # Errors
/// As [`lookup`] for malformed buffers.
pub fn reference_activations(
    b: &DeviceBuffers,
    table: &EmbeddingTable,
    cfg: &LookupConfig,
) -> Result<Vec<f32>, LookupError> {
    let bs = cfg.batch_size_per_sc as usize;
    let w = table.width;
    let mut act = vec![0.0f32; cfg.num_sc_per_device as usize * bs * w];
    let mut chained = 0;
    for k in 0..cfg.num_sc_per_device as usize {
        let (entries, _) = decode_sc(b, cfg, k, &mut chained)?;
        for e in entries {
            let row = table_row(table, e.col)?;
            let out = &mut act[(k * bs + e.sample) * w..][..w];
            for (o, &x) in out.iter_mut().zip(row) {
                let x = cfg.quantization.map_or(x, |q| q.apply(x));
                *o += e.gain * x;
            }
        }
    }
    Ok(act)
}

fn table_row(table: &EmbeddingTable, col: usize) -> Result<&[f32], LookupError> {
    if col >= table.rows {
        return Err(LookupError::Buffer(format!(
            "column {col} is not below the table's {} rows",
            table.rows
        )));
    }
    Ok(&table.data[col * table.width..][..table.width])
}

/// Runs one lookup step of one device on the chip model: returns the activations (`S *
/// batch_size_per_sc` rows of `table.width` values, row `k * batch_size_per_sc + sample` for
/// local SparseCore `k`) and the report. Parallel over SparseCores (rayon); the result does not
/// depend on the thread count and equals [`reference_activations`] bit for bit.
///
/// # Errors
/// [`LookupError::Config`] when `num_sc_per_device` differs from the chip's, the table's data
/// is not `rows * width` values, `feature_width > width` or the quantization is not `low <
/// high`, `num_buckets >= 2`; [`LookupError::Buffer`] for malformed buffers;
/// [`LookupError::GatherTooLarge`] / [`LookupError::FixedAllocations`] when a tile's data does
/// not fit its TileSpmem.
pub fn lookup(
    chip: &ChipModel,
    buffers: &DeviceBuffers,
    table: &EmbeddingTable,
    cfg: &LookupConfig,
) -> Result<(Vec<f32>, LookupReport), LookupError> {
    let cfg_err = |m: String| Err(LookupError::Config(m));
    if cfg.num_sc_per_device != chip.sparsecores_per_device {
        return cfg_err(format!(
            "num_sc_per_device = {} but chip {} has {} SparseCores per device",
            cfg.num_sc_per_device, chip.name, chip.sparsecores_per_device
        ));
    }
    if Some(table.data.len()) != table.rows.checked_mul(table.width) {
        return cfg_err(format!(
            "the table holds {} values, not rows * width = {} * {}",
            table.data.len(),
            table.rows,
            table.width
        ));
    }
    if cfg.feature_width > table.width {
        return cfg_err(format!(
            "feature_width {} is wider than the table's {}",
            cfg.feature_width, table.width
        ));
    }
    if let Some(q) = cfg.quantization {
        let ordered = q.low < q.high && q.low.is_finite() && q.high.is_finite();
        if !ordered || q.num_buckets < 2 {
            return cfg_err(format!(
                "quantization needs low < high and num_buckets >= 2, got ({}, {}, {})",
                q.low, q.high, q.num_buckets
            ));
        }
    }
    let s = cfg.num_sc_per_device as usize;
    if buffers.required_buffer_size.len() < s {
        return Err(LookupError::Buffer(format!(
            "{} required_buffer_size values for {s} SparseCores",
            buffers.required_buffer_size.len()
        )));
    }
    let bs = cfg.batch_size_per_sc as usize;
    let w = table.width;
    let tiles = chip.tiles_per_sc as usize;
    let spmem = match cfg.partition_limits {
        None => tile_spmem_plan(
            chip.tile_spmem_bytes,
            chip.tiles_per_sc,
            bs as u64,
            w as u64,
        )?,
        Some((max_ids, max_unique)) => tile_spmem_plan_with_limits(
            chip.tile_spmem_bytes,
            chip.tiles_per_sc,
            bs as u64,
            w as u64,
            max_ids,
            max_unique,
        )?,
    };
    let row_bytes = spmem.row_bytes;

    // decode serially (segments chain across SparseCores with minibatching), compute in parallel
    let mut chained = 0;
    let mut decoded = Vec::with_capacity(s);
    for k in 0..s {
        decoded.push(decode_sc(buffers, cfg, k, &mut chained)?);
    }
    for (entries, _) in &decoded {
        if let Some(e) = entries.iter().find(|e| e.col >= table.rows) {
            table_row(table, e.col)?;
        }
    }
    let per_sc: Vec<(Vec<f32>, Vec<TileReport>, u64)> = decoded
        .par_iter()
        .map(|(entries, _)| {
            let mut act = vec![0.0f32; bs * w];
            let mut reports = Vec::with_capacity(tiles);
            let mut sc_cols: Vec<usize> = entries.iter().map(|e| e.col).collect();
            sc_cols.sort_unstable();
            sc_cols.dedup();
            for t in 0..tiles {
                let (lo, hi) = (t * bs / tiles, (t + 1) * bs / tiles);
                let mut ids = 0u64;
                let mut cols = Vec::new();
                for e in entries.iter().filter(|e| (lo..hi).contains(&e.sample)) {
                    let row = &table.data[e.col * w..][..w];
                    let out = &mut act[e.sample * w..][..w];
                    for (o, &x) in out.iter_mut().zip(row) {
                        let x = cfg.quantization.map_or(x, |q| q.apply(x));
                        *o += e.gain * x;
                    }
                    ids += 1;
                    cols.push(e.col);
                }
                cols.sort_unstable();
                cols.dedup();
                let unique_ids = cols.len() as u64;
                let samples = (hi - lo) as u64;
                reports.push(TileReport {
                    ids,
                    unique_ids,
                    hbm_bytes: unique_ids * row_bytes + ids * 12 + samples * row_bytes,
                    peak_spmem_bytes: spmem.peak_bytes(samples, ids),
                    seconds: 0.0,
                });
            }
            (act, reports, sc_cols.len() as u64)
        })
        .collect();

    let loads: Vec<Vec<TileLoad>> = per_sc
        .iter()
        .map(|(_, tiles, _)| {
            tiles
                .iter()
                .map(|t| TileLoad {
                    ids: t.ids,
                    hbm_bytes: t.hbm_bytes,
                })
                .collect()
        })
        .collect();
    let cost = chip.step(&loads, w as u32, DType::F32)?;
    let mut activations = Vec::with_capacity(s * bs * w);
    let mut scs = Vec::with_capacity(s);
    let mut padded_gathers = 0u64;
    for (k, ((act, mut tiles, unique), (_, holes))) in per_sc.into_iter().zip(&decoded).enumerate()
    {
        activations.extend_from_slice(&act);
        for (t, tile) in tiles.iter_mut().enumerate() {
            tile.seconds = cost.tile_seconds[k][t];
        }
        padded_gathers += tiles.iter().map(|t| t.unique_ids).sum::<u64>();
        scs.push(ScReport {
            ids: tiles.iter().map(|t| t.ids).sum(),
            unique_ids: unique,
            hbm_bytes: tiles.iter().map(|t| t.hbm_bytes).sum(),
            peak_spmem_bytes: tiles.iter().map(|t| t.peak_spmem_bytes).max().unwrap_or(0),
            seconds: cost.sc_seconds[k],
            padding_slots: *holes,
            tiles,
        });
    }
    let max_unique_nz_per_row = decoded
        .iter()
        .map(|(entries, _)| {
            let mut pairs: Vec<(usize, usize)> =
                entries.iter().map(|e| (e.sample, e.col)).collect();
            pairs.sort_unstable();
            pairs.dedup();
            let mut best = 0u64;
            let mut run = 0u64;
            for (i, p) in pairs.iter().enumerate() {
                run = if i > 0 && pairs[i - 1].0 == p.0 {
                    run + 1
                } else {
                    1
                };
                best = best.max(run);
            }
            best
        })
        .max()
        .unwrap_or(0);
    let fw = cfg.feature_width as u64;
    let replicas = cfg.logical_replica_count;
    Ok((
        activations,
        LookupReport {
            scs,
            cost,
            padding_waste_bytes: padded_gathers * (w as u64 - fw) * 4,
            max_unique_nz_per_row,
            forward_hbm_stack_bytes: (2 * fw + 1) * max_unique_nz_per_row * replicas * 4,
            backward_hbm_stack_bytes: 3 * fw * max_unique_nz_per_row * replicas * 4,
        },
    ))
}
