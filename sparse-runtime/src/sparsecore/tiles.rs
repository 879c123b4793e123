//! Tile kernels of the formats `sparse_format!` declares, run on the chip model: a kernel's
//! rows split over every tile of every SparseCore of one device, each tile running the
//! sparsifier's row-range loops of that format on its rows, with a report of what each tile
//! would move and how long the step would take (SparseCore reference, "Tiles" and "Memory").
//!
//! **Split.** The output's units (rows, or block rows of a blocked format) are split into
//! `sparsecores_per_device * tiles_per_sc` contiguous ranges of about equal stored entries
//! ([`crate::storage::balanced_splits`], the split `spmv_par` uses); range `k` is tile
//! `k % tiles_per_sc` of SparseCore `k / tiles_per_sc`. Each unit is computed by one tile with
//! the same loops as the serial kernel, so the result equals it bit for bit.
//!
//! **TileSpmem.** A tile holds its output rows in TileSpmem while its entries stream through;
//! if a tile's rows do not fit, the run fails with the chip's words `Fixed size allocations (N
//! bytes) do not fit in TileSpmem (M bytes)` ([`TileError::Spmem`]).
//!
//! **Cost.** Per tile: its stored entries are the ids it gathers (one operand element each)
//! and its HBM bytes follow the kernel's bytes model (given by the caller: bytes per stored
//! entry and per output unit); [`ChipModel::step`] gives each tile's, each SparseCore's and
//! the step's modelled time. Values are modelled as `f32` lanes whatever their Rust type (the
//! chip computes in `f32`/`bf16`; reference "Vector units").
//!
//! **Report** ([`TileRun`]): per tile ([`TileWork`]) and per SparseCore ([`ScWork`]: its tiles'
//! entries, HBM bytes and time, the distinct ids over its rows, its largest TileSpmem), the
//! modelled step with its imbalance, and after [`TileRun::with_stack`] the padding waste and the
//! reference's forward/backward HBM stack estimates.

use std::ops::Range;

use super::chip::{ChipError, ChipModel, DType, StepCost, TileLoad};
use super::SpmemError;
use crate::StorageError;

/// What one tile of a tile kernel did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileWork {
    /// The output units (rows, or block rows) it computed.
    pub units: Range<usize>,
    /// Stored entries it read (one id each).
    pub entries: u64,
    /// Distinct ids among them: the operand rows it gathers once each.
    pub unique_ids: u64,
    /// HBM bytes it moves under the kernel's bytes model.
    pub hbm_bytes: u64,
    /// TileSpmem bytes its output rows hold.
    pub spmem_bytes: u64,
}

/// What one SparseCore of a tile kernel did: its tiles together.
#[derive(Clone, Debug, PartialEq)]
pub struct ScWork {
    /// The output units its tiles computed (contiguous).
    pub units: Range<usize>,
    /// Stored entries its tiles read.
    pub entries: u64,
    /// Distinct ids over its units (an id two of its tiles gather counts once here).
    pub unique_ids: u64,
    /// HBM bytes its tiles move.
    pub hbm_bytes: u64,
    /// Peak TileSpmem: the largest of its tiles'.
    pub peak_spmem_bytes: u64,
    /// Modelled seconds: its slowest tile's ([`StepCost::sc_seconds`]).
    pub seconds: f64,
}

/// The report of a tile kernel run.
#[derive(Clone, Debug, PartialEq)]
pub struct TileRun {
    /// Per SparseCore, per tile (`[sc][tile]`).
    pub tiles: Vec<Vec<TileWork>>,
    /// Per SparseCore, its tiles together (ids, unique ids, HBM bytes, peak TileSpmem, time).
    pub scs: Vec<ScWork>,
    /// The modelled step: per tile, per SparseCore, the slowest tile and the imbalance
    /// (slowest tile over the mean).
    pub cost: StepCost,
    /// Values per gathered row (`feature_width`: `n` for `SparseDenseMatmul`, 1 for SpMV); 0
    /// until [`TileRun::with_stack`].
    pub feature_width: u64,
    /// Distinct ids of the sample (output row) with the most (`max_unique_nz_per_row`); 0 until
    /// [`TileRun::with_stack`].
    pub max_unique_nz_per_row: u64,
    /// Forward HBM stack estimate, bytes: `(2 * feature_width + 1) * max_unique_nz_per_row *
    /// logical_replica_count * 4` (SparseCore reference, "Memory"), one replica (one device).
    pub forward_hbm_stack_bytes: u64,
    /// Backward HBM stack estimate, bytes: `3 * feature_width * max_unique_nz_per_row *
    /// logical_replica_count * 4`, one replica.
    pub backward_hbm_stack_bytes: u64,
    /// Gathered bytes spent on padding: the feature dimension is padded to a 32-byte line (8
    /// `f32`, reference "Memory"), so each gathered row moves `(roundup8(feature_width) -
    /// feature_width) * 4` bytes more.
    pub padding_waste_bytes: u64,
}

impl TileRun {
    /// Stored entries over all tiles (the operand's stored entries for a full run).
    pub fn entries(&self) -> u64 {
        self.tiles.iter().flatten().map(|t| t.entries).sum()
    }
    /// HBM bytes over all tiles.
    pub fn hbm_bytes(&self) -> u64 {
        self.tiles.iter().flatten().map(|t| t.hbm_bytes).sum()
    }
    /// Distinct ids over all tiles (an id gathered by two tiles counts twice: each gathers it).
    pub fn unique_ids(&self) -> u64 {
        self.tiles.iter().flatten().map(|t| t.unique_ids).sum()
    }
    /// The report with the reference's HBM stack estimates and the padding waste filled in for
    /// gathered rows of `feature_width` values and the sample with the most distinct ids
    /// holding `max_unique_nz_per_row` of them ([`max_unique_per_row`]).
    pub fn with_stack(mut self, feature_width: u64, max_unique_nz_per_row: u64) -> Self {
        let (fw, m) = (feature_width, max_unique_nz_per_row);
        self.feature_width = fw;
        self.max_unique_nz_per_row = m;
        self.forward_hbm_stack_bytes = (2 * fw + 1) * m * 4;
        self.backward_hbm_stack_bytes = 3 * fw * m * 4;
        self.padding_waste_bytes = self.unique_ids() * (fw.next_multiple_of(8) - fw) * 4;
        self
    }
}

/// The most distinct ids (columns) any sample (row) holds, from entries `(row, column)` in
/// any order, duplicates allowed: the reference's `max_unique_nz_per_row`.
pub fn max_unique_per_row(entries: impl IntoIterator<Item = (usize, usize)>) -> u64 {
    let mut pairs: Vec<(usize, usize)> = entries.into_iter().collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs
        .chunk_by(|a, b| a.0 == b.0)
        .map(|row| row.len() as u64)
        .max()
        .unwrap_or(0)
}

/// Why a tile kernel did not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TileError {
    /// The operands: as the serial kernel (`LengthMismatch`, ...).
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A tile's output rows do not fit in its TileSpmem (the chip's own wording).
    #[error(transparent)]
    Spmem(#[from] SpmemError),
    /// The chip model rejected the step (a preset with no tiles, ...).
    #[error(transparent)]
    Chip(#[from] ChipError),
    /// A quantization the lookup would refuse (the lookup's own words).
    #[error("{0}")]
    Quantization(String),
}

/// The embedding table with every value quantized as SparseCore's lookup quantizes a gathered
/// row (`(low, high, num_buckets)`: clipped, then rounded half up to the grid; SparseCore
/// reference §8, [`super::lookup::LookupQuantization::apply`]): what a format's
/// `sparsecore_spmm` multiplies when the step quantizes. Quantizing is elementwise, so
/// quantizing the table once equals quantizing each gathered row.
///
/// Errors: [`TileError::Quantization`] unless `low < high`, both finite, and `num_buckets >= 2`
/// (the lookup's check and wording).
pub fn quantized_table(
    table: &[f32],
    q: &super::lookup::LookupQuantization,
) -> Result<Vec<f32>, TileError> {
    let ordered = q.low < q.high && q.low.is_finite() && q.high.is_finite();
    if !ordered || q.num_buckets < 2 {
        return Err(TileError::Quantization(format!(
            "quantization needs low < high and num_buckets >= 2, got ({}, {}, {})",
            q.low, q.high, q.num_buckets
        )));
    }
    Ok(table.iter().map(|&x| q.apply(x)).collect())
}

/// The operand and table of a `SparseDenseMatmul` with the ids mod-sharded over the
/// SparseCores of one device (SparseCore reference, "Sharding and routing": id `j` belongs to
/// SparseCore `p = j % num_scs`, the owner of that partition of the table, at local row
/// `l = j / num_scs`). Id `j` of `entries` (samples x ids, `shape`) becomes column
/// `p * per + l` with `per = ceil(ids / num_scs)`, and `table` (`ids x n`, row-major) is laid
/// out partition by partition the same way, each SparseCore's HBM shard contiguous (the rows of
/// ids past the last are zeros). A kernel that runs a sample's entries in column order then
/// gathers partition by partition, local ids ascending: the order of the preprocessed buffers
/// (`(partition, local id, row)`, reference §4), so the products are summed in that order.
/// `num_scs` is `chip.sparsecores_per_device` (the model runs one device).
///
/// Errors: [`TileError::Storage`] (`LengthMismatch` naming `"b"`) when `table` is not `ids * n`
/// long, (`CoordinateOutOfRange`) for an entry outside `shape`; [`TileError::Chip`] for a chip
/// without SparseCores.
pub fn shard_ids<V: Copy + num_traits::Zero>(
    chip: &ChipModel,
    shape: [usize; 2],
    entries: impl IntoIterator<Item = ([usize; 2], V)>,
    table: &[V],
    n: usize,
) -> Result<(crate::CooTensor<V>, Vec<V>), TileError> {
    let num_scs = chip.sparsecores_per_device as usize;
    if num_scs == 0 {
        return Err(ChipError::LoadShape {
            what: "SparseCores of the device (at least one)".into(),
            expected: 1,
            got: 0,
        }
        .into());
    }
    let [samples, ids] = shape;
    if ids.checked_mul(n) != Some(table.len()) {
        return Err(StorageError::LengthMismatch {
            operand: "b",
            expected: ids.saturating_mul(n),
            got: table.len(),
        }
        .into());
    }
    let per = ids.div_ceil(num_scs);
    // `per * num_scs < ids + num_scs`, and `ids * n` fit in `usize`
    let sharded_ids = per * num_scs;
    let column = |j: usize| (j % num_scs) * per + j / num_scs;
    let mut operand = crate::CooTensor::new(vec![samples, sharded_ids]);
    for (entry, ([i, j], v)) in entries.into_iter().enumerate() {
        if let Some((dim, coordinate, size)) = [(0, i, samples), (1, j, ids)]
            .into_iter()
            .find(|&(_, c, size)| c >= size)
        {
            return Err(StorageError::CoordinateOutOfRange {
                entry,
                dim,
                coordinate,
                size,
            }
            .into());
        }
        operand.push(&[i, column(j)], v);
    }
    let mut shards = vec![V::zero(); sharded_ids * n];
    if n > 0 {
        for (j, row) in table.chunks_exact(n).enumerate() {
            let at = column(j) * n;
            shards[at..at + n].copy_from_slice(row);
        }
    }
    Ok((operand, shards))
}

/// The bytes model of a tile kernel: HBM bytes per stored entry it reads, per distinct id it
/// gathers and per output unit it writes, and TileSpmem bytes per output unit it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileBytes {
    /// Bytes moved per stored entry (its value and coordinate).
    pub per_entry: u64,
    /// Bytes gathered per distinct id (the operand's row or element it reads).
    pub per_unique: u64,
    /// Bytes moved per output unit (its positions and its output values).
    pub per_unit: u64,
    /// TileSpmem bytes per output unit (its output values).
    pub spmem_per_unit: u64,
}

/// Runs `rows(chunk, unit0)` once per tile of `chip`, in parallel (rayon), over `out` split
/// into ranges of whole units (`unit` elements each) of about equal stored entries
/// (`before(r)`: entries in units `0..r`, non-decreasing; `distinct(lo, hi)`: distinct ids in
/// units `lo..hi`); returns the per-tile report.
///
/// Errors: [`TileError::Spmem`] (`FixedAllocations`) when a tile's units need more TileSpmem
/// than `chip.tile_spmem_bytes` (checked before any tile runs, `out` untouched);
/// [`TileError::Chip`] as [`ChipModel::step`].
pub fn run_rows<V: Send>(
    chip: &ChipModel,
    out: &mut [V],
    unit: usize,
    before: impl Fn(usize) -> usize,
    distinct: impl Fn(usize, usize) -> u64,
    bytes: TileBytes,
    rows: impl Fn(&mut [V], usize) + Sync,
) -> Result<TileRun, TileError> {
    let tiles = chip.sparsecores_per_device as usize * chip.tiles_per_sc as usize;
    let units = out.len() / unit.max(1);
    let mut splits = crate::storage::balanced_splits(units, tiles, &before);
    // one range per tile, the last ones empty when there are fewer units than tiles
    splits.resize(tiles + 1, units);
    run_split(chip, out, unit, &splits, before, distinct, bytes, rows)
}

/// [`run_rows`] with the units split evenly (the same count per tile, the first tiles one more
/// when they do not divide), as SparseCore splits a step's samples over its tiles (the
/// reference's `(sample_count * feature_width) / tiles` rule); `before` still counts each
/// tile's stored entries for the report.
///
/// Errors: as [`run_rows`].
pub fn run_rows_even<V: Send>(
    chip: &ChipModel,
    out: &mut [V],
    unit: usize,
    before: impl Fn(usize) -> usize,
    distinct: impl Fn(usize, usize) -> u64,
    bytes: TileBytes,
    rows: impl Fn(&mut [V], usize) + Sync,
) -> Result<TileRun, TileError> {
    let tiles = chip.sparsecores_per_device as usize * chip.tiles_per_sc as usize;
    let units = out.len() / unit.max(1);
    let splits: Vec<usize> = (0..=tiles)
        .map(|k| {
            (units as u128 * k as u128)
                .checked_div(tiles as u128)
                .map_or(units, |b| b as usize)
        })
        .collect();
    run_split(chip, out, unit, &splits, before, distinct, bytes, rows)
}

/// Runs `rows` per tile over the unit boundaries `splits` (`tiles + 1` of them).
#[allow(clippy::too_many_arguments)]
fn run_split<V: Send>(
    chip: &ChipModel,
    out: &mut [V],
    unit: usize,
    splits: &[usize],
    before: impl Fn(usize) -> usize,
    distinct: impl Fn(usize, usize) -> u64,
    bytes: TileBytes,
    rows: impl Fn(&mut [V], usize) + Sync,
) -> Result<TileRun, TileError> {
    let (work, cost) = plan(chip, splits, &before, &distinct, bytes)?;
    let scs = sc_work(chip, splits, &work, &cost, &distinct);
    let rows = &rows;
    rayon::scope(|s| {
        let mut rest: &mut [V] = out;
        for t in &work {
            let len = (t.units.end - t.units.start) * unit;
            let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(len);
            rest = tail;
            let unit0 = t.units.start;
            if !chunk.is_empty() {
                s.spawn(move |_| rows(chunk, unit0));
            }
        }
    });
    Ok(report(chip, work, scs, cost))
}

/// [`run_rows`] for a kernel whose loops cannot be cut into row ranges (a format whose
/// outermost level is not the output's rows: COO, column-major, ELL): tile 0 of SparseCore 0
/// runs `all(out)` on every unit, the other tiles idle, and the report says so. `entries` is
/// the operand's stored entries.
///
/// Errors: as [`run_rows`]; the error of `all` as [`TileError::Storage`].
pub fn run_whole<V>(
    chip: &ChipModel,
    out: &mut [V],
    unit: usize,
    entries: usize,
    unique_ids: u64,
    bytes: TileBytes,
    all: impl FnOnce(&mut [V]) -> Result<(), StorageError>,
) -> Result<TileRun, TileError> {
    let tiles = chip.sparsecores_per_device as usize * chip.tiles_per_sc as usize;
    let units = out.len() / unit.max(1);
    let mut splits = vec![units; tiles + 1];
    splits[0] = 0;
    let before = |r: usize| if r == 0 { 0 } else { entries };
    let distinct = |lo: usize, hi: usize| if lo < hi { unique_ids } else { 0 };
    let (work, cost) = plan(chip, &splits, &before, &distinct, bytes)?;
    let scs = sc_work(chip, &splits, &work, &cost, &distinct);
    all(out)?;
    Ok(report(chip, work, scs, cost))
}

/// Each tile's work for the unit boundaries `splits`, checked against TileSpmem, and the
/// modelled step.
fn plan(
    chip: &ChipModel,
    splits: &[usize],
    before: &impl Fn(usize) -> usize,
    distinct: &impl Fn(usize, usize) -> u64,
    bytes: TileBytes,
) -> Result<(Vec<TileWork>, StepCost), TileError> {
    if splits.len() < 2 {
        // a chip without tiles would leave the output uncomputed
        return Err(ChipError::LoadShape {
            what: "tiles of the device (at least one)".into(),
            expected: 1,
            got: 0,
        }
        .into());
    }
    let work: Vec<TileWork> = splits
        .windows(2)
        .map(|w| {
            let entries = before(w[1]).saturating_sub(before(w[0])) as u64;
            let unique_ids = distinct(w[0], w[1]);
            let n = (w[1] - w[0]) as u64;
            TileWork {
                units: w[0]..w[1],
                entries,
                unique_ids,
                hbm_bytes: entries * bytes.per_entry
                    + unique_ids * bytes.per_unique
                    + n * bytes.per_unit,
                spmem_bytes: n * bytes.spmem_per_unit,
            }
        })
        .collect();
    if let Some(t) = work.iter().find(|t| t.spmem_bytes > chip.tile_spmem_bytes) {
        return Err(SpmemError::FixedAllocations {
            needed: t.spmem_bytes,
            available: chip.tile_spmem_bytes,
        }
        .into());
    }
    let loads: Vec<Vec<TileLoad>> = work
        .chunks((chip.tiles_per_sc as usize).max(1))
        .map(|sc| {
            sc.iter()
                .map(|t| TileLoad {
                    ids: t.entries,
                    hbm_bytes: t.hbm_bytes,
                })
                .collect()
        })
        .collect();
    let cost = chip.step(&loads, 1, DType::F32)?;
    Ok((work, cost))
}

/// Each SparseCore's tiles together: SparseCore `k` holds tiles `k * tiles_per_sc ..` of
/// `work`, whose units run from `splits[k * tiles_per_sc]` to `splits[(k + 1) * tiles_per_sc]`.
fn sc_work(
    chip: &ChipModel,
    splits: &[usize],
    work: &[TileWork],
    cost: &StepCost,
    distinct: &impl Fn(usize, usize) -> u64,
) -> Vec<ScWork> {
    let per = (chip.tiles_per_sc as usize).max(1);
    work.chunks(per)
        .enumerate()
        .map(|(k, tiles)| {
            let (lo, hi) = (splits[k * per], splits[k * per + tiles.len()]);
            ScWork {
                units: lo..hi,
                entries: tiles.iter().map(|t| t.entries).sum(),
                unique_ids: if lo < hi { distinct(lo, hi) } else { 0 },
                hbm_bytes: tiles.iter().map(|t| t.hbm_bytes).sum(),
                peak_spmem_bytes: tiles.iter().map(|t| t.spmem_bytes).max().unwrap_or(0),
                seconds: cost.sc_seconds.get(k).copied().unwrap_or(0.0),
            }
        })
        .collect()
}

/// The per-SparseCore report of `work`.
fn report(chip: &ChipModel, work: Vec<TileWork>, scs: Vec<ScWork>, cost: StepCost) -> TileRun {
    let per = (chip.tiles_per_sc as usize).max(1);
    let mut tiles = Vec::with_capacity(chip.sparsecores_per_device as usize);
    let mut it = work.into_iter();
    for _ in 0..chip.sparsecores_per_device {
        tiles.push(it.by_ref().take(per).collect());
    }
    TileRun {
        tiles,
        scs,
        cost,
        feature_width: 0,
        max_unique_nz_per_row: 0,
        forward_hbm_stack_bytes: 0,
        backward_hbm_stack_bytes: 0,
        padding_waste_bytes: 0,
    }
}

/// How many distinct values `ids` holds (coordinates of any index width): a tile's unique ids.
pub fn distinct<C: crate::Index>(ids: &[C]) -> u64 {
    let mut v: Vec<usize> = ids.iter().map(|c| c.index()).collect();
    v.sort_unstable();
    v.dedup();
    v.len() as u64
}
