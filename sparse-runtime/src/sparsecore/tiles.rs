//! Tile kernels of the formats `sparse_format!` declares, run on the chip model: a kernel's
//! work split over every tile of every SparseCore of one device, with a report of what each
//! tile would move and how long the step would take (SparseCore reference, "Tiles" and
//! "Memory").
//!
//! **SpMV** ([`run_rows`]). The output's units (rows, or block rows of a blocked format) are
//! split into `sparsecores_per_device * tiles_per_sc` contiguous ranges of about equal stored
//! entries ([`crate::storage::balanced_splits`], the split `spmv_par` uses); range `k` is tile
//! `k % tiles_per_sc` of SparseCore `k / tiles_per_sc`. Each tile runs the sparsifier's
//! row-range loops of the format on its units, so the result equals the serial kernel bit for
//! bit. A tile holds its output rows in TileSpmem while its entries stream through; if they do
//! not fit, the run fails with the chip's words `Fixed size allocations (N bytes) do not fit in
//! TileSpmem (M bytes)` ([`TileError::Spmem`]). A format whose outermost level is not the rows
//! runs whole on tile 0 ([`run_whole`]). A format without back-to-back segments on level 1
//! counts its entries and ids through [`UnitIds`].
//!
//! **SparseDenseMatmul** ([`run_staged`]). The stored entries grouped by sample
//! ([`SampleEntries`]), the samples split evenly over the tiles; each tile stages its entries
//! through a TileSpmem sized by [`tile_spmem_plan`] (the rule of the runtime's lookup and of the
//! compile-time check): gathered in chunks of `staging_rows` table rows, scaled by the gains,
//! accumulated per sample, in the order of the entries. A chunk that cannot be staged fails with
//! the chip's words (`Gather operand too large: ...` / `Fixed size allocations ...`).
//! [`shard_samples`] mod-shards the ids first.
//!
//! **Cost.** Per tile: its stored entries are the ids it gathers (one operand element or row
//! each) and its HBM bytes follow the kernel's bytes model ([`TileBytes`], given by the
//! generated code: bytes per stored entry, per distinct id and per output unit);
//! [`ChipModel::step`] gives each tile's, each SparseCore's and the step's modelled time. Values
//! are modelled as `f32` lanes whatever their Rust type (the chip computes in `f32`/`bf16`;
//! reference "Vector units").
//!
//! **Report** ([`TileRun`]): per tile ([`TileWork`]) and per SparseCore ([`ScWork`]: its tiles'
//! entries, HBM bytes and time, the distinct ids over its units, its largest TileSpmem), the
//! modelled step with its imbalance, the table's padding (SparseDenseMatmul), and after
//! [`TileRun::with_stack`] the gathered padding waste and the reference's forward/backward HBM
//! stack estimates.

use std::ops::Range;

use super::chip::{ChipError, ChipModel, DType, StepCost, TileLoad};
use super::stack::padded_width;
use super::{tile_spmem_plan, SpmemError};
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
    /// Rows of the table as the chip holds it: the vocabulary padded to a multiple of `8 *
    /// num_scs`, `num_scs` the device's SparseCores (preprocessing reference §7, which makes it
    /// the multiple of the SparseCores the SparseCore reference's "Memory" asks for); 0 for a
    /// kernel without a table (SpMV).
    pub padded_vocabulary: u64,
    /// HBM bytes of that table spent on padding: `padded_vocabulary * roundup8(feature_width) *
    /// 4 - vocabulary * feature_width * 4` (padded columns of every row, padded rows whole); 0
    /// for a kernel without a table.
    pub table_padding_bytes: u64,
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
/// ids past the last are zeros: never gathered, so §7's NaN padding is not needed, and value
/// types without a NaN work alike). A kernel that runs a sample's entries in column order then
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

/// [`shard_ids`] as [`run_staged`] reads it: the sharded operand's entries grouped by sample,
/// each sample's ordered by sharded id (partition, then local id: the order of the
/// preprocessed buffers, reference §4; stably, so entries of one id keep their order), and the
/// sharded table (`roundup(ids, S)` rows: the vocabulary padded to a multiple of the device's
/// SparseCores, the rows past the last id zeros). The operand is not rebuilt in any format, so
/// every format's entries can be sharded, an n:m one's included (its blocks could not hold the
/// permuted ids).
///
/// Errors: as [`shard_ids`].
#[allow(clippy::type_complexity)]
pub fn shard_samples<V: Copy + num_traits::Zero>(
    chip: &ChipModel,
    shape: [usize; 2],
    entries: impl IntoIterator<Item = ([usize; 2], V)>,
    table: &[V],
    n: usize,
) -> Result<(SampleEntries<V>, Vec<V>), TileError> {
    let (operand, shards) = shard_ids(chip, shape, entries, table, n)?;
    let sharded_ids = operand.shape.get(1).copied().unwrap_or(0);
    let pairs = operand
        .coords
        .chunks_exact(2)
        .zip(&operand.values)
        .map(|(at, &v)| ([at[0], at[1]], v));
    let mut samples = SampleEntries::new([shape[0], sharded_ids], pairs)?;
    samples.sort_ids_within_samples();
    Ok((samples, shards))
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

/// `tiles + 1` boundaries splitting `units` evenly (`floor(units * k / tiles)`: counts per
/// tile differ by at most one), as SparseCore splits a step's samples over its tiles (the
/// reference's `(sample_count * feature_width) / tiles` rule); `[units]` alone for no tiles.
fn even_splits(units: usize, tiles: usize) -> Vec<usize> {
    (0..=tiles)
        .map(|k| {
            (units as u128 * k as u128)
                .checked_div(tiles as u128)
                .map_or(units, |b| b as usize)
        })
        .collect()
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
    let spmem = |units: u64, _| units * bytes.spmem_per_unit;
    let (work, cost) = plan(chip, splits, &before, &distinct, bytes, spmem, 1)?;
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
    let spmem = |units: u64, _| units * bytes.spmem_per_unit;
    let (work, cost) = plan(chip, &splits, &before, &distinct, bytes, spmem, 1)?;
    let scs = sc_work(chip, &splits, &work, &cost, &distinct);
    all(out)?;
    Ok(report(chip, work, scs, cost))
}

/// The ids of an operand's stored entries grouped by output unit (row, or block row): unit
/// `u` holds `ids[starts[u]..starts[u + 1]]`, in the order the entries were given. What a tile
/// kernel counts for a format whose level 1 has no back-to-back segments (loose compressed,
/// dense, n:m): its stored entries per unit and the distinct ids of a range of units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitIds {
    /// `units + 1` boundaries into `ids`, non-decreasing from 0.
    starts: Vec<usize>,
    /// One id per stored entry, unit after unit.
    ids: Vec<usize>,
}

impl UnitIds {
    /// Groups `entries` (`(unit, id)`, one per stored entry, any order) by unit, keeping their
    /// order within a unit (a stable counting sort: `O(entries + units)`).
    ///
    /// Errors: [`StorageError::CoordinateOutOfRange`] (`dim` 0) for a unit not below `units`.
    pub fn new(
        units: usize,
        entries: impl IntoIterator<Item = (usize, usize)>,
    ) -> Result<Self, StorageError> {
        let (starts, order, pairs) = group(units, entries.into_iter())?;
        let ids = order.iter().map(|&k| pairs[k].1).collect();
        Ok(UnitIds { starts, ids })
    }

    /// Output units.
    pub fn units(&self) -> usize {
        self.starts.len() - 1
    }

    /// Stored entries in units `0..r` (`r` clamped to the units): non-decreasing, the `before`
    /// of [`run_rows`].
    pub fn before(&self, r: usize) -> usize {
        self.starts[r.min(self.units())]
    }

    /// The ids of units `lo..hi` (clamped), unit after unit.
    pub fn ids(&self, lo: usize, hi: usize) -> &[usize] {
        let hi = self.before(hi);
        &self.ids[self.before(lo).min(hi)..hi]
    }

    /// Distinct ids in units `lo..hi`: the operand rows (elements) a tile of those units
    /// gathers once each.
    pub fn distinct(&self, lo: usize, hi: usize) -> u64 {
        let mut v = self.ids(lo, hi).to_vec();
        v.sort_unstable();
        v.dedup();
        v.len() as u64
    }
}

/// `items` (`(unit, payload)`) grouped by unit, stable: the `units + 1` boundaries, the indices
/// of `items` in grouped order, and the items.
#[allow(clippy::type_complexity)]
fn group<T>(
    units: usize,
    items: impl Iterator<Item = (usize, T)>,
) -> Result<(Vec<usize>, Vec<usize>, Vec<(usize, T)>), StorageError> {
    let items: Vec<(usize, T)> = items.collect();
    let mut starts = vec![0usize; units + 1];
    for (entry, &(u, _)) in items.iter().enumerate() {
        if u >= units {
            return Err(StorageError::CoordinateOutOfRange {
                entry,
                dim: 0,
                coordinate: u,
                size: units,
            });
        }
        starts[u + 1] += 1;
    }
    crate::index::running_sum(&mut starts);
    let mut next = starts.clone();
    let mut order = vec![0usize; items.len()];
    for (k, &(u, _)) in items.iter().enumerate() {
        order[next[u]] = k;
        next[u] += 1;
    }
    Ok((starts, order, items))
}

/// The stored entries of a `SparseDenseMatmul` operand (samples x ids, the stored values the
/// gains) grouped by sample, as SparseCore reads them: each sample's `(id, gain)` pairs in the
/// order given (the operand's storage order, in which its serial `spmm` sums a sample), or
/// after [`SampleEntries::sort_ids_within_samples`] by id.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleEntries<V> {
    /// Samples x ids.
    shape: [usize; 2],
    /// The ids, grouped by sample.
    ids: UnitIds,
    /// The gain of each id, in the same order.
    gains: Vec<V>,
}

impl<V: Copy> SampleEntries<V> {
    /// Groups `entries` (`([sample, id], gain)`, one per stored entry, any order) of an operand
    /// of `shape` (samples x ids) by sample, keeping their order within a sample.
    ///
    /// Errors: [`StorageError::CoordinateOutOfRange`] for an entry outside `shape`.
    pub fn new(
        shape: [usize; 2],
        entries: impl IntoIterator<Item = ([usize; 2], V)>,
    ) -> Result<Self, StorageError> {
        let mut pairs = Vec::new();
        for (entry, ([i, j], v)) in entries.into_iter().enumerate() {
            if j >= shape[1] {
                return Err(StorageError::CoordinateOutOfRange {
                    entry,
                    dim: 1,
                    coordinate: j,
                    size: shape[1],
                });
            }
            pairs.push((i, (j, v)));
        }
        let (starts, order, pairs) = group(shape[0], pairs.into_iter())?;
        let ids = order.iter().map(|&k| pairs[k].1 .0).collect();
        let gains = order.iter().map(|&k| pairs[k].1 .1).collect();
        Ok(SampleEntries {
            shape,
            ids: UnitIds { starts, ids },
            gains,
        })
    }

    /// Orders each sample's entries by id, stably (entries of one id keep their order): the
    /// order of the preprocessed buffers once ids are mod-sharded ([`shard_ids`]: partition,
    /// then local id).
    pub fn sort_ids_within_samples(&mut self) {
        for u in 0..self.ids.units() {
            let (lo, hi) = (self.ids.starts[u], self.ids.starts[u + 1]);
            let mut pairs: Vec<(usize, V)> = self.ids.ids[lo..hi]
                .iter()
                .copied()
                .zip(self.gains[lo..hi].iter().copied())
                .collect();
            pairs.sort_by_key(|p| p.0);
            for (k, (id, gain)) in pairs.into_iter().enumerate() {
                self.ids.ids[lo + k] = id;
                self.gains[lo + k] = gain;
            }
        }
    }

    /// Samples x ids.
    pub fn shape(&self) -> [usize; 2] {
        self.shape
    }

    /// The ids grouped by sample (per sample entries, distinct ids).
    pub fn ids(&self) -> &UnitIds {
        &self.ids
    }

    /// The most distinct ids any sample holds (`max_unique_nz_per_row` of the HBM stack
    /// estimates).
    pub fn max_unique_per_sample(&self) -> u64 {
        (0..self.ids.units())
            .map(|u| self.ids.distinct(u, u + 1))
            .max()
            .unwrap_or(0)
    }
}

/// SparseCore's `SparseDenseMatmul` on the tiles of `chip` (one device): `c = A · table` with
/// `A` the `entries` (samples x ids, the gains), `table` `ids x n` and `c` `samples x n`, both
/// row-major, `c` overwritten; returns the report (before [`TileRun::with_stack`]).
///
/// **Tiles.** The samples are split evenly over every tile of every SparseCore (tile `k %
/// tiles_per_sc` of SparseCore `k / tiles_per_sc` takes range `k`).
///
/// **TileSpmem** ([`tile_spmem_plan`], the rule of the runtime's lookup and of the
/// compile-time `sparsecore(...)` check): the table is modelled as the chip holds it, `f32`
/// rows padded to a 32-byte line (`roundup8(n)` values, reference "Memory"); a tile holds its
/// output rows (`ceil(samples / tiles)` of them at most) and two staging buffers of
/// `staging_rows` rows. Each tile walks its entries (sample after sample, each sample's in the
/// order of `entries`) in chunks of `staging_rows`: it gathers the chunk's table rows into the
/// staging buffer, then scales each by its gain and accumulates it into its sample's output row.
/// A sample's products are thus added in the order of `entries`, as the operand's serial
/// `spmm` adds them: `c` equals it bit for bit. A tile's peak TileSpmem is its output rows plus
/// two buffers of the largest chunk it staged (`min(staging_rows, its entries)` rows).
///
/// **Cost.** Per tile: its entries are the ids it gathers; HBM bytes `entries *
/// bytes.per_entry + distinct ids * bytes.per_unique + samples * bytes.per_unit`;
/// [`ChipModel::step`] with rows of `roundup8(n)` values. The report's `padded_vocabulary` is
/// `vocabulary` (the table's ids before any padding) padded to a multiple of `8 * S` for the
/// device's `S` SparseCores (`stack::padded_vocab`, preprocessing reference §7), and
/// `table_padding_bytes` the padding of that `f32` table.
/// `bytes.spmem_per_unit` is not read: TileSpmem follows the staging rule.
///
/// Errors: [`TileError::Storage`] (`LengthMismatch` naming `"b"` or `"c"`) when `table` is
/// not `ids * n` or `c` not `samples * n` long; [`TileError::Chip`] for a chip without tiles;
/// [`TileError::Spmem`] with the chip's words when a tile's output rows exceed TileSpmem
/// (`GatherTooLarge`: `Gather operand too large: ...`) or leave no room to stage one row per
/// buffer (`FixedAllocations`: `Fixed size allocations (N bytes) do not fit in TileSpmem (M
/// bytes)`). Nothing is written to `c` on an error.
pub fn run_staged<V: crate::Value>(
    chip: &ChipModel,
    entries: &SampleEntries<V>,
    table: &[V],
    c: &mut [V],
    n: usize,
    vocabulary: usize,
    bytes: TileBytes,
) -> Result<TileRun, TileError> {
    staged(chip, entries, table, c, n, vocabulary, bytes, None)
}

/// [`run_staged`] whose tiles compute with the operand's own row loops: `rows(out, row0)`
/// computes the output rows `row0 ..` that `out` holds (`n` values each), as the sparsifier's
/// row-range form of `c(i, k) = a(i, j) * b(j, k)` does (`spmm_rows` of a generated format
/// whose outermost level is the samples). `entries` must be the same operand's entries
/// grouped by sample in storage order: they give the report (entries, distinct ids, the
/// chunks of `staging_rows` each tile stages, its peak TileSpmem) and the split, so the
/// report equals [`run_staged`]'s; the row loops add each sample's products in storage order,
/// so `c` does as well, bit for bit.
///
/// Errors: as [`run_staged`]; nothing is written to `c` on an error.
#[allow(clippy::too_many_arguments)]
pub fn run_staged_rows<V: crate::Value>(
    chip: &ChipModel,
    entries: &SampleEntries<V>,
    table: &[V],
    c: &mut [V],
    n: usize,
    vocabulary: usize,
    bytes: TileBytes,
    rows: impl Fn(&mut [V], usize) + Sync,
) -> Result<TileRun, TileError> {
    staged(chip, entries, table, c, n, vocabulary, bytes, Some(&rows))
}

/// A tile's row loops in [`run_staged_rows`]: `rows(out, row0)` fills the output rows `row0 ..`.
type RowLoops<'a, V> = &'a (dyn Fn(&mut [V], usize) + Sync);

/// [`run_staged`] and [`run_staged_rows`]: each tile stages its entries, or runs `rows`.
#[allow(clippy::too_many_arguments)]
fn staged<V: crate::Value>(
    chip: &ChipModel,
    entries: &SampleEntries<V>,
    table: &[V],
    c: &mut [V],
    n: usize,
    vocabulary: usize,
    bytes: TileBytes,
    rows: Option<RowLoops<'_, V>>,
) -> Result<TileRun, TileError> {
    let [samples, ids] = entries.shape;
    for (what, rows, len) in [("b", ids, table.len()), ("c", samples, c.len())] {
        if rows.checked_mul(n) != Some(len) {
            return Err(StorageError::LengthMismatch {
                operand: what,
                expected: rows.saturating_mul(n),
                got: len,
            }
            .into());
        }
    }
    let tiles = chip.sparsecores_per_device as usize * chip.tiles_per_sc as usize;
    if tiles == 0 {
        return Err(ChipError::LoadShape {
            what: "tiles of the device (at least one)".into(),
            expected: 1,
            got: 0,
        }
        .into());
    }
    let width = padded_width(u32::try_from(n).unwrap_or(u32::MAX));
    let staging = tile_spmem_plan(
        chip.tile_spmem_bytes,
        chip.sparsecores_per_device
            .saturating_mul(chip.tiles_per_sc),
        samples as u64,
        u64::from(width),
    )?;
    let splits = even_splits(samples, tiles);
    let groups = &entries.ids;
    let before = |r: usize| groups.before(r);
    let distinct = |lo: usize, hi: usize| groups.distinct(lo, hi);
    let spmem = |units: u64, ids: u64| staging.peak_bytes(units, ids);
    let (work, cost) = plan(chip, &splits, &before, &distinct, bytes, spmem, width)?;
    let scs = sc_work(chip, &splits, &work, &cost, &distinct);
    // at least one row per chunk (`staging_rows` is 0 only for rows of no bytes)
    let chunk = usize::try_from(staging.staging_rows)
        .unwrap_or(usize::MAX)
        .max(1);
    if n > 0 {
        rayon::scope(|s| {
            let mut rest: &mut [V] = c;
            for t in &work {
                let (out, tail) = std::mem::take(&mut rest).split_at_mut(t.units.len() * n);
                rest = tail;
                let units = t.units.clone();
                match rows {
                    _ if out.is_empty() => {}
                    Some(rows) => s.spawn(move |_| rows(out, units.start)),
                    None => s.spawn(move |_| stage_tile(entries, table, out, units, n, chunk)),
                }
            }
        });
    }
    let mut run = report(chip, work, scs, cost);
    let scs_per_device = u64::from(chip.sparsecores_per_device.max(1));
    let padded_vocabulary = super::stack::padded_vocab(vocabulary as u64, scs_per_device);
    run.padded_vocabulary = padded_vocabulary;
    run.table_padding_bytes = padded_vocabulary
        .saturating_mul(u64::from(width))
        .saturating_sub((vocabulary as u64).saturating_mul(n as u64))
        .saturating_mul(4);
    Ok(run)
}

/// One tile of [`run_staged`]: the output rows `out` of samples `units` (`n` values each)
/// from their entries, `chunk` gathered rows at a time.
fn stage_tile<V: crate::Value>(
    entries: &SampleEntries<V>,
    table: &[V],
    out: &mut [V],
    units: Range<usize>,
    n: usize,
    chunk: usize,
) {
    out.fill(V::zero());
    let starts = &entries.ids.starts;
    let (first, last) = (starts[units.start], starts[units.end]);
    let mut staged: Vec<V> = Vec::with_capacity(chunk.min(last - first) * n);
    let mut sample = units.start;
    let mut lo = first;
    while lo < last {
        let hi = last.min(lo.saturating_add(chunk));
        // gather the chunk's table rows into the staging buffer
        staged.clear();
        for &id in &entries.ids.ids[lo..hi] {
            staged.extend_from_slice(&table[id * n..(id + 1) * n]);
        }
        // scale each by its gain and accumulate it into its sample's output row
        for (row, p) in staged.chunks_exact(n).zip(lo..hi) {
            while starts[sample + 1] <= p {
                sample += 1;
            }
            let gain = entries.gains[p];
            let at = (sample - units.start) * n;
            for (o, &x) in out[at..at + n].iter_mut().zip(row) {
                *o += gain * x;
            }
        }
        lo = hi;
    }
}

/// Each tile's work for the unit boundaries `splits`, checked against TileSpmem, and the
/// modelled step. `spmem(units, entries)` is the TileSpmem a tile of that many output units
/// and stored entries holds at its peak; `width` the values per gathered row of the cost model.
#[allow(clippy::too_many_arguments)]
fn plan(
    chip: &ChipModel,
    splits: &[usize],
    before: &impl Fn(usize) -> usize,
    distinct: &impl Fn(usize, usize) -> u64,
    bytes: TileBytes,
    spmem: impl Fn(u64, u64) -> u64,
    width: u32,
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
                spmem_bytes: spmem(n, entries),
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
    let cost = chip.step(&loads, width, DType::F32)?;
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
        padded_vocabulary: 0,
        table_padding_bytes: 0,
    }
}

/// How many distinct values `ids` holds (coordinates of any index width): a tile's unique ids.
pub fn distinct<C: crate::Index>(ids: &[C]) -> u64 {
    let mut v: Vec<usize> = ids.iter().map(|c| c.index()).collect();
    v.sort_unstable();
    v.dedup();
    v.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_ids_group_stably_and_count() {
        // units 2, 0, 2, 1, 0 with ids 5, 1, 5, 3, 4
        let u = UnitIds::new(3, [(2, 5), (0, 1), (2, 5), (1, 3), (0, 4)]).unwrap();
        assert_eq!(u.units(), 3);
        assert_eq!(
            (0..=4).map(|r| u.before(r)).collect::<Vec<_>>(),
            [0, 2, 3, 5, 5]
        );
        assert_eq!(u.ids(0, 3), [1, 4, 3, 5, 5]);
        assert_eq!(u.ids(2, 1), [] as [usize; 0]);
        assert_eq!(
            (u.distinct(0, 3), u.distinct(2, 3), u.distinct(1, 1)),
            (4, 1, 0)
        );
        assert_eq!(
            UnitIds::new(2, [(0, 0), (2, 7)]).unwrap_err(),
            StorageError::CoordinateOutOfRange {
                entry: 1,
                dim: 0,
                coordinate: 2,
                size: 2
            }
        );
    }

    #[test]
    fn sample_entries_sort_ids_within_samples_stably() {
        let entries = [([1, 3], 1.0), ([0, 2], 2.0), ([1, 0], 3.0), ([1, 3], 4.0)];
        let mut s = SampleEntries::new([2, 4], entries).unwrap();
        assert_eq!(s.ids().ids(0, 2), [2, 3, 0, 3]);
        assert_eq!(s.gains, [2.0, 1.0, 3.0, 4.0]);
        assert_eq!(s.max_unique_per_sample(), 2);
        s.sort_ids_within_samples();
        assert_eq!(s.ids().ids(0, 2), [2, 0, 3, 3]);
        assert_eq!(s.gains, [2.0, 3.0, 1.0, 4.0]);
        for (at, dim, coordinate, size) in [([2, 0], 0, 2, 2), ([0, 4], 1, 4, 4)] {
            assert_eq!(
                SampleEntries::new([2, 4], [([0, 0], 1.0), (at, 1.0)]).unwrap_err(),
                StorageError::CoordinateOutOfRange {
                    entry: 1,
                    dim,
                    coordinate,
                    size
                }
            );
        }
    }
}
