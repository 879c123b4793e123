//! The SparseCore chip model: the numbers of SparseCore reference §9 as public fields
//! (every one overridable), and a cost model.
//!
//! # Cost model (assumptions)
//!
//! The model prices one lookup step from what each tile does; it is a model, not a
//! measurement, and each assumption is a field or stated here:
//!
//! 1. **Memory.** A tile's HBM traffic takes `bytes / (hbm_bandwidth / (sparsecores_per_chip *
//!    tiles_per_sc))` seconds: the chip's bandwidth is shared evenly by all tiles of all its
//!    SparseCores (no other traffic, no bank conflicts).
//! 2. **Compute.** A lookup of one id into a row of `width` values of `f32` (or `bf16`) costs
//!    `ceil(width / lanes)` vector cycles per operation (scale by the gain, accumulate: one
//!    fused multiply-add per lane group), `lanes` = [`ChipModel::f32_lanes`] or
//!    [`ChipModel::bf16_lanes`]; cycles become seconds at [`ChipModel::clock_hz`].
//! 3. **Overlap.** Staging through TileSpmem is double-buffered, so a tile's time is the
//!    larger of its memory and compute time, not their sum.
//! 4. **Step.** A SparseCore's time is its slowest tile's; the step's time is the slowest
//!    tile of all SparseCores (they run in parallel and the step waits for all).
//!
//! `clock_hz` is not published in the reference: every preset uses the placeholder 1 GHz
//! ([`ASSUMED_CLOCK_HZ`]); override it when a better number is known.
//!
//! The preset numbers live in `sparse-ir` ([`sparse_ir::sparsecore`], re-exported here:
//! [`ChipPreset`], [`V4`], [`V5P`], [`V6E`], [`TPU7X`]) so the code generator reads the same
//! data at compile time; [`ChipModel`] is built from them.

pub use sparse_ir::sparsecore::{
    preset, ChipPreset, ASSUMED_CLOCK_HZ, PRESETS, PRESET_NAMES, TPU7X, V4, V5P, V6E,
};

/// One SparseCore generation (SparseCore reference §9). All fields are public: a preset (the
/// constant data of [`sparse_ir::sparsecore`], re-exported here) is a starting point, override
/// what you know better.
#[derive(Clone, Debug, PartialEq)]
pub struct ChipModel {
    /// The preset's name (`v4`, `v5p`, `v6e`, `tpu7x`), or what the user calls it.
    pub name: String,
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
    /// Clock of the tiles, Hz (an assumption, see the module docs).
    pub clock_hz: f64,
}

impl From<&ChipPreset> for ChipModel {
    /// The model with the preset's numbers (its name as an owned `String`).
    fn from(p: &ChipPreset) -> ChipModel {
        ChipModel {
            name: p.name.to_string(),
            sparsecores_per_device: p.sparsecores_per_device,
            sparsecores_per_chip: p.sparsecores_per_chip,
            tiles_per_sc: p.tiles_per_sc,
            f32_lanes: p.f32_lanes,
            bf16_lanes: p.bf16_lanes,
            tile_spmem_bytes: p.tile_spmem_bytes,
            shared_spmem_bytes: p.shared_spmem_bytes,
            hbm_bytes: p.hbm_bytes,
            hbm_bandwidth: p.hbm_bandwidth,
            clock_hz: p.clock_hz,
        }
    }
}

/// Element types the cost model knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    /// 4 bytes, [`ChipModel::f32_lanes`] lanes.
    F32,
    /// 2 bytes, [`ChipModel::bf16_lanes`] lanes.
    Bf16,
}

impl DType {
    /// Bytes per value.
    pub fn bytes(self) -> u64 {
        match self {
            DType::F32 => 4,
            DType::Bf16 => 2,
        }
    }
}

/// What one tile does in one step: ids looked up and bytes moved from/to HBM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TileLoad {
    /// Ids the tile gathers (each a row of the table).
    pub ids: u64,
    /// HBM bytes the tile moves.
    pub hbm_bytes: u64,
}

/// The modelled time of one step.
#[derive(Clone, Debug, PartialEq)]
pub struct StepCost {
    /// Seconds per tile, `[sc][tile]`.
    pub tile_seconds: Vec<Vec<f64>>,
    /// Seconds per SparseCore: its slowest tile.
    pub sc_seconds: Vec<f64>,
    /// The step: the slowest tile of all.
    pub step_seconds: f64,
    /// `(sc, tile)` of the slowest tile (the first in order on ties).
    pub slowest: (usize, usize),
    /// Slowest tile over the mean tile time (1 when balanced; 0 for an empty step).
    pub imbalance: f64,
}

/// What the chip model rejects.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChipError {
    /// A preset name that is not known.
    #[error("unknown chip '{name}' (known: {known})")]
    UnknownChip {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// A step whose loads do not have the chip's shape.
    #[error("a step needs {expected} loads ({what}), got {got}")]
    LoadShape {
        /// What was counted (SparseCores or tiles of one).
        what: String,
        /// The chip's count.
        expected: usize,
        /// The loads given.
        got: usize,
    },
}

impl ChipModel {
    /// The preset names, in order ([`PRESET_NAMES`]).
    pub const PRESETS: [&'static str; 4] = PRESET_NAMES;

    /// TPU v4 ([`V4`]): 4 SparseCores of 16 tiles, 8 lanes, ~160 KiB TileSpmem per tile
    /// (2.5 MiB per SC, also its shared Spmem), 32 GiB HBM at 1200 GB/s.
    pub fn v4() -> ChipModel {
        ChipModel::from(&V4)
    }

    /// TPU v5p ([`V5P`]): 4 SparseCores of 16 tiles, 8 lanes, 512 KiB TileSpmem per tile, 95 GB
    /// HBM at 2765 GB/s.
    pub fn v5p() -> ChipModel {
        ChipModel::from(&V5P)
    }

    /// v6e, Trillium ([`V6E`]): 2 SparseCores of 16 tiles, 8 f32 / 16 bf16 lanes, 256 KiB
    /// TileSpmem per tile, 32 GB HBM at 1638 GB/s.
    pub fn v6e() -> ChipModel {
        ChipModel::from(&V6E)
    }

    /// TPU7x, Ironwood ([`TPU7X`]): 2 SparseCores per device (4 physical) of 16 tiles, 16 f32 /
    /// 32 bf16 lanes, 512 KiB TileSpmem per tile, 192 GB HBM at 7.4 TB/s.
    pub fn tpu7x() -> ChipModel {
        ChipModel::from(&TPU7X)
    }

    /// The preset called `name` (`v4`, `v5p`, `v6e`, `tpu7x`; `trillium` and `ironwood` are
    /// accepted for the last two; [`preset`]).
    ///
    /// Errors: [`ChipError::UnknownChip`] listing the known names.
    pub fn by_name(name: &str) -> Result<ChipModel, ChipError> {
        preset(name)
            .map(ChipModel::from)
            .ok_or_else(|| ChipError::UnknownChip {
                name: name.to_string(),
                known: Self::PRESETS.join(", "),
            })
    }

    /// Tiles of one device: `sparsecores_per_device * tiles_per_sc`.
    pub fn tiles_per_device(&self) -> u64 {
        u64::from(self.sparsecores_per_device) * u64::from(self.tiles_per_sc)
    }

    /// HBM bandwidth of one tile, bytes per second (assumption 1).
    pub fn tile_bandwidth(&self) -> f64 {
        self.hbm_bandwidth
            / (f64::from(self.sparsecores_per_chip.max(1)) * f64::from(self.tiles_per_sc.max(1)))
    }

    /// Seconds to move `bytes` at the whole chip's HBM bandwidth.
    pub fn hbm_seconds(&self, bytes: u64) -> f64 {
        bytes as f64 / self.hbm_bandwidth
    }

    /// Lanes of a tile for `dtype`.
    pub fn lanes(&self, dtype: DType) -> u32 {
        match dtype {
            DType::F32 => self.f32_lanes,
            DType::Bf16 => self.bf16_lanes,
        }
    }

    /// Vector cycles of a tile looking up `ids` rows of `width` values (assumption 2):
    /// `ids * ceil(width / lanes)`.
    pub fn tile_cycles(&self, ids: u64, width: u32, dtype: DType) -> u64 {
        ids * u64::from(width.div_ceil(self.lanes(dtype).max(1)))
    }

    /// Seconds of one tile (assumptions 1 to 3): `max(hbm_bytes / tile_bandwidth, cycles /
    /// clock_hz)`.
    pub fn tile_seconds(&self, load: TileLoad, width: u32, dtype: DType) -> f64 {
        let mem = load.hbm_bytes as f64 / self.tile_bandwidth();
        let compute = self.tile_cycles(load.ids, width, dtype) as f64 / self.clock_hz;
        mem.max(compute)
    }

    /// The cost of one step from each tile's load, `loads[sc][tile]` for the device's
    /// `sparsecores_per_device` SparseCores of `tiles_per_sc` tiles (assumption 4).
    ///
    /// Errors: [`ChipError::LoadShape`] when `loads` does not have that shape.
    pub fn step(
        &self,
        loads: &[Vec<TileLoad>],
        width: u32,
        dtype: DType,
    ) -> Result<StepCost, ChipError> {
        if loads.len() != self.sparsecores_per_device as usize {
            return Err(ChipError::LoadShape {
                what: "SparseCores".into(),
                expected: self.sparsecores_per_device as usize,
                got: loads.len(),
            });
        }
        if let Some(l) = loads.iter().find(|l| l.len() != self.tiles_per_sc as usize) {
            return Err(ChipError::LoadShape {
                what: "tiles of a SparseCore".into(),
                expected: self.tiles_per_sc as usize,
                got: l.len(),
            });
        }
        let tile_seconds: Vec<Vec<f64>> = loads
            .iter()
            .map(|sc| {
                sc.iter()
                    .map(|&t| self.tile_seconds(t, width, dtype))
                    .collect()
            })
            .collect();
        let sc_seconds: Vec<f64> = tile_seconds
            .iter()
            .map(|t| t.iter().copied().fold(0.0, f64::max))
            .collect();
        let mut slowest = (0, 0);
        let mut step_seconds = 0.0;
        let mut total = 0.0;
        let mut count = 0usize;
        for (s, ts) in tile_seconds.iter().enumerate() {
            for (t, &v) in ts.iter().enumerate() {
                if v > step_seconds {
                    step_seconds = v;
                    slowest = (s, t);
                }
                total += v;
                count += 1;
            }
        }
        let mean = if count == 0 {
            0.0
        } else {
            total / count as f64
        };
        let imbalance = if mean > 0.0 { step_seconds / mean } else { 0.0 };
        Ok(StepCost {
            tile_seconds,
            sc_seconds,
            step_seconds,
            slowest,
            imbalance,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_hold_the_reference_numbers() {
        let v4 = ChipModel::by_name("v4").unwrap();
        assert_eq!(
            (v4.sparsecores_per_chip, v4.tiles_per_sc, v4.f32_lanes),
            (4, 16, 8)
        );
        assert_eq!(v4.tile_spmem_bytes, 163_840);
        assert_eq!(v4.shared_spmem_bytes, Some(2_621_440));
        assert_eq!(v4.tile_spmem_bytes * 16, v4.shared_spmem_bytes.unwrap());
        assert_eq!(v4.hbm_bytes, 34_359_738_368);
        let v5p = ChipModel::by_name("v5p").unwrap();
        assert_eq!(v5p.tile_spmem_bytes, 524_288);
        assert_eq!(v5p.hbm_bandwidth, 2.765e12);
        let v6e = ChipModel::by_name("v6e").unwrap();
        assert_eq!(
            (v6e.sparsecores_per_device, v6e.f32_lanes, v6e.bf16_lanes),
            (2, 8, 16)
        );
        assert_eq!(v6e.tile_spmem_bytes, 262_144);
        let x = ChipModel::by_name("tpu7x").unwrap();
        assert_eq!((x.sparsecores_per_device, x.sparsecores_per_chip), (2, 4));
        assert_eq!((x.f32_lanes, x.bf16_lanes), (16, 32));
        assert_eq!(x.hbm_bytes, 192_000_000_000);
        assert_eq!(x.tiles_per_device(), 32);
        assert_eq!(
            ChipModel::by_name("v9").unwrap_err().to_string(),
            "unknown chip 'v9' (known: v4, v5p, v6e, tpu7x)"
        );
    }

    #[test]
    fn cost_model_exact_numbers() {
        let mut v5p = ChipModel::v5p();
        // 2765e9 / 64 tiles.
        assert_eq!(v5p.tile_bandwidth(), 43_203_125_000.0);
        assert_eq!(v5p.hbm_seconds(2_765_000_000), 0.001);
        // 128 wide f32 rows on 8 lanes: 16 cycles an id.
        assert_eq!(v5p.tile_cycles(10, 128, DType::F32), 160);
        assert_eq!(v5p.tile_cycles(10, 129, DType::F32), 170);
        // Compute bound: 1000 ids * 16 cycles at 1 GHz = 16 us; memory 0 bytes.
        let t = v5p.tile_seconds(
            TileLoad {
                ids: 1000,
                hbm_bytes: 0,
            },
            128,
            DType::F32,
        );
        assert_eq!(t, 16e-6);
        // Memory bound: 43_203_125 bytes at 43_203_125_000 B/s = 1 ms.
        let m = TileLoad {
            ids: 1,
            hbm_bytes: 43_203_125,
        };
        assert_eq!(v5p.tile_seconds(m, 128, DType::F32), 1e-3);
        // Overriding the clock changes compute time only.
        v5p.clock_hz = 2e9;
        assert_eq!(
            v5p.tile_seconds(
                TileLoad {
                    ids: 1000,
                    hbm_bytes: 0
                },
                128,
                DType::F32
            ),
            8e-6
        );
    }

    #[test]
    fn the_slowest_tile_decides_the_step() {
        let chip = ChipModel::v6e();
        let mut loads = vec![
            vec![
                TileLoad {
                    ids: 10,
                    hbm_bytes: 0
                };
                16
            ];
            2
        ];
        loads[1][5].ids = 40;
        let c = chip.step(&loads, 8, DType::F32).unwrap();
        assert_eq!(c.slowest, (1, 5));
        assert_eq!(c.step_seconds, 40e-9);
        assert_eq!(c.sc_seconds, vec![10e-9, 40e-9]);
        // mean = (31 * 10 + 40) / 32 ns.
        let want = 40.0 / ((31.0 * 10.0 + 40.0) / 32.0);
        assert!((c.imbalance - want).abs() < 1e-12, "{}", c.imbalance);
        assert!(chip.step(&loads[..1], 8, DType::F32).is_err());
    }
}
