//! The tile kernels every rank-2 format gets (issue 10): run on the SparseCore model, the
//! tile SpMV and SparseDenseMatmul equal the serial `spmv`/`spmm` bit for bit, split the rows
//! over every tile, report what each tile read, and fail with the chip's words when a tile's
//! rows do not fit; the mod-sharded SparseDenseMatmul sums each sample partition by partition.

mod common;

use proptest::prelude::*;
use sparse::runtime::sparsecore::chip::ChipModel;
use sparse::runtime::sparsecore::tiles::{TileError, TileRun};
use sparse::runtime::sparsecore::SpmemError;
use sparse::runtime::storage::FromCoo;
use sparse::runtime::CooTensor;
use sparse::sparse_format;

sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    pub Bsr = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>;
    pub Coo = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>;
    pub Csc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>;
}

fn v5p() -> ChipModel {
    ChipModel::by_name("v5p").unwrap()
}

/// Every tile of the report: contiguous units covering `0..units` in order.
fn check_split(run: &TileRun, chip: &ChipModel, units: usize) {
    assert_eq!(run.tiles.len(), chip.sparsecores_per_device as usize);
    let mut next = 0;
    for sc in &run.tiles {
        assert_eq!(sc.len(), chip.tiles_per_sc as usize);
        for t in sc {
            assert_eq!(t.units.start, next);
            next = t.units.end;
        }
    }
    assert_eq!(next, units);
}

fn coo(rows: usize, cols: usize, cells: &[(bool, f64)]) -> CooTensor<f64> {
    let mut t = CooTensor::new(vec![rows, cols]);
    for (f, &(keep, v)) in cells.iter().enumerate() {
        if keep {
            t.push(&[f / cols, f % cols], v);
        }
    }
    t
}

/// `run` (the tile kernel) against `serial` on `coo` stored as `S`, bit for bit; its report.
fn check<S: FromCoo<f64>>(
    coo: &CooTensor<f64>,
    run: impl Fn(&S, &mut [f64]) -> Result<TileRun, TileError>,
    serial: impl Fn(&S, &mut [f64]),
) -> TileRun {
    let a = S::from_coo_tensor(coo).unwrap();
    let rows = coo.shape[0];
    let (mut want, mut got) = (vec![0.0; rows], vec![f64::NAN; rows]);
    serial(&a, &mut want);
    let report = run(&a, &mut got).unwrap();
    assert_eq!(
        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    report
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn tile_spmv_equals_spmv(
        cells in proptest::collection::vec((any::<bool>(), -4.0f64..4.0), 20 * 12),
        x in proptest::collection::vec(-2.0f64..2.0, 12),
    ) {
        let t = coo(20, 12, &cells);
        let chip = v5p();
        let nnz = t.values.len() as u64;
        let r = check::<Csr<f64>>(&t, |a, y| a.sparsecore_spmv(&chip, &x, y), |a, y| a.spmv(&x, y).unwrap());
        check_split(&r, &chip, 20);
        prop_assert_eq!(r.entries(), nnz);
        let r = check::<Bsr<f64>>(&t, |a, y| a.sparsecore_spmv(&chip, &x, y), |a, y| a.spmv(&x, y).unwrap());
        check_split(&r, &chip, 10);
        // COO and CSC cannot be cut into row ranges: tile 0 runs them whole
        for r in [
            check::<Coo<f64>>(&t, |a, y| a.sparsecore_spmv(&chip, &x, y), |a, y| a.spmv(&x, y).unwrap()),
            check::<Csc<f64>>(&t, |a, y| a.sparsecore_spmv(&chip, &x, y), |a, y| a.spmv(&x, y).unwrap()),
        ] {
            check_split(&r, &chip, 20);
            prop_assert_eq!(r.tiles[0][0].units.clone(), 0..20);
            prop_assert_eq!(r.entries(), nnz);
            let mut cols: Vec<usize> = t.coords.chunks(2).map(|c| c[1]).collect();
            cols.sort_unstable();
            cols.dedup();
            prop_assert_eq!(r.tiles[0][0].unique_ids, cols.len() as u64);
        }
    }
}

#[test]
fn bcsstk16_on_v5p_balances_the_tiles() {
    let m = sparse::runtime::mmio::read_matrix_market(common::data("bcsstk16.mtx")).unwrap();
    let a = Csr::from_coo_tensor(&m.tensor).unwrap();
    let n = m.tensor.shape[0];
    let x: Vec<f64> = (0..n).map(|i| 1.0 + (i % 7) as f64).collect();
    let (mut want, mut got) = (vec![0.0; n], vec![0.0; n]);
    a.spmv(&x, &mut want).unwrap();
    let chip = v5p();
    let run = a.sparsecore_spmv(&chip, &x, &mut got).unwrap();
    assert_eq!(got, want);
    check_split(&run, &chip, n);
    assert_eq!(run.entries(), a.nse() as u64);
    // unique ids per tile: the distinct columns of its rows, counted here from the entries
    let mut unique = 0;
    for w in run.tiles.iter().flatten() {
        let mut cols: Vec<usize> = a
            .iter()
            .filter(|(c, _)| w.units.contains(&c[0]))
            .map(|(c, _)| c[1])
            .collect();
        cols.sort_unstable();
        cols.dedup();
        assert_eq!(w.unique_ids, cols.len() as u64, "tile {:?}", w.units);
        unique += w.unique_ids;
    }
    // HBM bytes: per stored entry its value and u32 column; per distinct column of a tile its
    // x element; per row its u32 position and y element
    assert_eq!(
        run.hbm_bytes(),
        a.nse() as u64 * (8 + 4) + unique * 8 + n as u64 * (8 + 4)
    );
    // split by stored entries: no tile holds much more than its share
    assert!(run.cost.imbalance < 1.2, "imbalance {}", run.cost.imbalance);
}

#[test]
fn rows_that_do_not_fit_tile_spmem_are_the_chips_error() {
    let t = coo(64, 4, &[(true, 1.0); 256]);
    let a = Csr::from_coo_tensor(&t).unwrap();
    let mut chip = v5p();
    chip.sparsecores_per_device = 1;
    chip.tiles_per_sc = 2;
    chip.tile_spmem_bytes = 100;
    let mut y = vec![7.0; 64];
    let e = a.sparsecore_spmv(&chip, &[1.0; 4], &mut y).unwrap_err();
    // 32 rows of f64 per tile: 256 bytes
    assert_eq!(
        e,
        TileError::Spmem(SpmemError::FixedAllocations {
            needed: 256,
            available: 100
        })
    );
    assert_eq!(
        e.to_string(),
        "Fixed size allocations (256 bytes) do not fit in TileSpmem (100 bytes)"
    );
    assert_eq!(y, vec![7.0; 64], "nothing written");
    // a chip without tiles is an error, not an uncomputed output
    chip.tiles_per_sc = 0;
    assert!(matches!(
        a.sparsecore_spmv(&chip, &[1.0; 4], &mut y),
        Err(TileError::Chip(_))
    ));
    // operands are checked as `spmv` checks them
    chip.tiles_per_sc = 2;
    assert!(matches!(
        a.sparsecore_spmv(&chip, &[1.0; 3], &mut y),
        Err(TileError::Storage(_))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    /// SparseDenseMatmul on the tiles: samples x ids with the gains as values, the table
    /// row-major; equal to the serial `spmm` bit for bit, samples split evenly over the tiles.
    #[test]
    fn tile_sparse_dense_matmul_equals_spmm(
        cells in proptest::collection::vec((any::<bool>(), -4.0f64..4.0), 40 * 10),
        table in proptest::collection::vec(-2.0f64..2.0, 10 * 8),
    ) {
        use sparse::runtime::generated::DenseOrder;
        let t = coo(40, 10, &cells);
        let chip = v5p();
        let nnz = t.values.len() as u64;
        let n = 8;
        let mut blocks: Vec<(usize, usize)> = t.coords.chunks(2).map(|c| (c[0] / 2, c[1] / 2)).collect();
        blocks.sort_unstable();
        blocks.dedup();
        let blocks = blocks.len() as u64;
        macro_rules! each {
            ($($s:ty),*) => {$({
                let a = <$s>::from_coo_tensor(&t).unwrap();
                let mut want = vec![0.0; 40 * n];
                a.spmm(&table, &mut want, n, DenseOrder::RowMajor).unwrap();
                let mut got = vec![f64::NAN; 40 * n];
                let run = a.sparsecore_spmm(&chip, &table, &mut got, n).unwrap();
                prop_assert_eq!(
                    got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
                // every stored value is an id gathered: a BSR stores whole 2x2 blocks
                let stored = if stringify!($s).starts_with("Bsr") { blocks * 4 } else { nnz };
                prop_assert_eq!(run.entries(), stored, "{}", stringify!($s));
                // every format's samples are split over the tiles, whatever its outermost level
                prop_assert_eq!(check_tiles(&run, &chip), 40, "{}", stringify!($s));
            })*};
        }
        each!(Csr<f64>, Bsr<f64>, Coo<f64>, Csc<f64>);
        // CSR: 40 samples over v5p's tiles, evenly (at most one apart)
        let a = Csr::from_coo_tensor(&t).unwrap();
        let mut c = vec![0.0; 40 * n];
        let run = a.sparsecore_spmm(&chip, &table, &mut c, n).unwrap();
        prop_assert_eq!(run.entries(), nnz);
        let sizes: Vec<usize> = run.tiles.iter().flatten().map(|w| w.units.len()).collect();
        let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        prop_assert!(hi - lo <= 1, "{:?}", sizes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    /// SparseDenseMatmul with the ids mod-sharded over `scs` SparseCores: a sample's products
    /// are summed partition by partition (`id % scs`), local ids ascending, as the
    /// preprocessed buffers order them. CSR equals that plain computation bit for bit, every
    /// format the dense product to rounding; the report counts every entry once.
    #[test]
    fn sharded_sparse_dense_matmul_sums_partition_by_partition(
        cells in proptest::collection::vec((any::<bool>(), -4.0f64..4.0), 40 * 10),
        table in proptest::collection::vec(-2.0f64..2.0, 10 * 8),
        scs in 1u32..5,
    ) {
        let (rows, ids, n) = (40, 10, 8);
        let t = coo(rows, ids, &cells);
        let mut chip = v5p();
        chip.sparsecores_per_device = scs;
        let s = scs as usize;
        let mut want = vec![0.0; rows * n];
        let mut dense = vec![0.0; rows * n];
        for i in 0..rows {
            for p in 0..s {
                for j in (p..ids).step_by(s) {
                    let (keep, v) = cells[i * ids + j];
                    if keep {
                        for k in 0..n {
                            want[i * n + k] += v * table[j * n + k];
                        }
                    }
                }
            }
            for j in 0..ids {
                let (keep, v) = cells[i * ids + j];
                if keep {
                    for k in 0..n {
                        dense[i * n + k] += v * table[j * n + k];
                    }
                }
            }
        }
        let a = Csr::from_coo_tensor(&t).unwrap();
        let mut got = vec![f64::NAN; rows * n];
        let run = a.sparsecore_spmm_sharded(&chip, &table, &mut got, n).unwrap();
        prop_assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        prop_assert_eq!(run.entries(), t.values.len() as u64);
        prop_assert_eq!(run.tiles.len(), s);
        macro_rules! each {
            ($($f:ty),*) => {$({
                let a = <$f>::from_coo_tensor(&t).unwrap();
                let mut got = vec![f64::NAN; rows * n];
                a.sparsecore_spmm_sharded(&chip, &table, &mut got, n).unwrap();
                for (g, d) in got.iter().zip(&dense) {
                    prop_assert!((g - d).abs() <= 1e-12 * d.abs().max(1.0), "{} vs {}", g, d);
                }
            })*};
        }
        each!(Bsr<f64>, Coo<f64>, Csc<f64>);
    }
}

#[test]
fn sharding_moves_ids_to_their_partitions() {
    // ids 0..5 over 2 SparseCores: partition 0 holds 0, 2, 4 (local 0, 1, 2), partition 1
    // holds 1, 3 and a zero row for the missing id 5: columns 0 2 4 | 1 3 -> 0 1 2 | 3 4
    let mut chip = v5p();
    chip.sparsecores_per_device = 2;
    let table: Vec<f64> = (0..5).map(|j| j as f64).collect();
    let entries = [([0, 3], 1.0), ([1, 4], 2.0), ([1, 1], 3.0)];
    let (operand, shards) =
        sparse::runtime::sparsecore::tiles::shard_ids(&chip, [2, 5], entries, &table, 1).unwrap();
    assert_eq!(operand.shape, [2, 6]);
    assert_eq!(operand.coords, [0, 4, 1, 2, 1, 3]);
    assert_eq!(shards, [0.0, 2.0, 4.0, 1.0, 3.0, 0.0]);
    // a table of the wrong length, an id past the shape: the operand's errors
    assert!(matches!(
        sparse::runtime::sparsecore::tiles::shard_ids(&chip, [2, 5], entries, &table[..4], 1),
        Err(TileError::Storage(
            sparse::runtime::StorageError::LengthMismatch { operand: "b", .. }
        ))
    ));
    assert!(matches!(
        sparse::runtime::sparsecore::tiles::shard_ids(&chip, [2, 3], entries, &table[..3], 1),
        Err(TileError::Storage(
            sparse::runtime::StorageError::CoordinateOutOfRange {
                entry: 0,
                dim: 1,
                coordinate: 3,
                size: 3
            }
        ))
    ));
}

#[test]
fn sparse_dense_matmul_checks_lengths_and_tile_spmem() {
    let t = coo(64, 4, &[(true, 1.0); 256]);
    let a = Csr::from_coo_tensor(&t).unwrap();
    let mut chip = v5p();
    chip.sparsecores_per_device = 1;
    chip.tiles_per_sc = 2;
    chip.tile_spmem_bytes = 1000;
    let table = [1.0; 4 * 8];
    let mut c = vec![3.0; 64 * 8];
    // 32 samples per tile of 8 values held as f32: 1024 bytes of output rows
    let e = a.sparsecore_spmm(&chip, &table, &mut c, 8).unwrap_err();
    assert_eq!(
        e,
        TileError::Spmem(SpmemError::GatherTooLarge {
            needed: 1024,
            available: 1000
        })
    );
    assert_eq!(
        e.to_string(),
        "Gather operand too large: (sample_count * feature_width) / tiles = 1024 bytes per tile \
         exceeds TileSpmem (1000 bytes)"
    );
    assert_eq!(c, vec![3.0; 64 * 8], "nothing written");
    // 5 values pad to 8 (a 32-byte line): the same 1024 bytes of output rows fit in 1050, but
    // not with one staged row of 32 bytes in each of the two buffers (1088 bytes)
    chip.tile_spmem_bytes = 1050;
    let mut c = vec![3.0; 64 * 5];
    let e = a
        .sparsecore_spmm(&chip, &table[..4 * 5], &mut c, 5)
        .unwrap_err();
    assert_eq!(
        e,
        TileError::Spmem(SpmemError::FixedAllocations {
            needed: 1088,
            available: 1050
        })
    );
    assert_eq!(
        e.to_string(),
        "Fixed size allocations (1088 bytes) do not fit in TileSpmem (1050 bytes)"
    );
    assert_eq!(c, vec![3.0; 64 * 5], "nothing written");
    // the sharded form stages the same way
    assert_eq!(
        a.sparsecore_spmm_sharded(&chip, &table[..4 * 5], &mut c, 5)
            .unwrap_err(),
        e
    );
    assert_eq!(c, vec![3.0; 64 * 5], "nothing written");
    chip.tile_spmem_bytes = 1000;
    let mut c = vec![3.0; 64 * 8];
    assert!(matches!(
        a.sparsecore_spmm(&chip, &table[..31], &mut c, 8),
        Err(TileError::Storage(
            sparse::runtime::StorageError::LengthMismatch { operand: "b", .. }
        ))
    ));
}

#[test]
fn quantized_sparse_dense_matmul_against_a_dense_reference() {
    use sparse::runtime::sparsecore::lookup::LookupQuantization;
    use sparse::runtime::sparsecore::tiles::quantized_table;
    sparse_format! {
        pub Lookup = tensor<6x5xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    }
    // samples x ids with the gains as values; a 5 x 4 table
    let gains = [
        (0, 1, 1.0f32),
        (0, 4, 0.5),
        (2, 0, 2.0),
        (3, 1, 1.0),
        (3, 3, 0.25),
        (5, 2, 1.0),
    ];
    let a = Lookup::<f32>::from_coo([6, 5], gains.iter().map(|&(i, j, g)| ([i, j], g))).unwrap();
    let table: Vec<f32> = (0..20).map(|f| (f as f32 - 7.0) * 0.3).collect();
    let q = LookupQuantization {
        low: -1.0,
        high: 1.0,
        num_buckets: 5,
    };
    let qt = quantized_table(&table, &q).unwrap();
    // the grid is -1, -0.5, 0, 0.5, 1: every quantized value is on it
    assert!(
        qt.iter().all(|v| [-1.0, -0.5, 0.0, 0.5, 1.0].contains(v)),
        "{qt:?}"
    );
    let mut c = vec![0.0f32; 6 * 4];
    let run = a.sparsecore_spmm(&v5p(), &qt, &mut c, 4).unwrap();
    let mut want = vec![0.0f32; 6 * 4];
    for &(i, j, g) in &gains {
        for d in 0..4 {
            want[i * 4 + d] += g * q.apply(table[j * 4 + d]);
        }
    }
    assert_eq!(c, want);
    assert_eq!(run.entries(), 6);
    let bad = LookupQuantization {
        low: 1.0,
        high: -1.0,
        num_buckets: 5,
    };
    assert_eq!(
        quantized_table(&table, &bad).unwrap_err().to_string(),
        "quantization needs low < high and num_buckets >= 2, got (1, -1, 5)"
    );
}

#[test]
fn tile_reports_carry_the_hbm_stack_estimates() {
    // samples x ids: sample 2 holds the most distinct ids (3; the duplicate (2, 0) sums)
    let entries = [
        (0, 1),
        (0, 3),
        (1, 2),
        (2, 0),
        (2, 2),
        (2, 3),
        (2, 0),
        (3, 1),
    ];
    let mut t = CooTensor::new(vec![4, 4]);
    for &(i, j) in &entries {
        t.push(&[i, j], 1.0);
    }
    let chip = v5p();
    let (n, table) = (5, vec![1.0; 4 * 5]);
    // a BSR stores (and gathers) whole 2x2 blocks: its sample 2 holds 4 stored ids
    macro_rules! each {
        ($($f:ty: $m:expr),*) => {$({
            let a = <$f>::from_coo_tensor(&t).unwrap();
            let mut c = vec![0.0; 4 * n];
            let run = a.sparsecore_spmm(&chip, &table, &mut c, n).unwrap();
            assert_eq!(run.feature_width, 5, stringify!($f));
            assert_eq!(run.max_unique_nz_per_row, $m, stringify!($f));
            // (2 * 5 + 1) * m * 4 and 3 * 5 * m * 4 (SparseCore reference, "Memory")
            assert_eq!(run.forward_hbm_stack_bytes, 44 * $m, stringify!($f));
            assert_eq!(run.backward_hbm_stack_bytes, 60 * $m, stringify!($f));
            // 5 values pad to 8: 12 bytes more per gathered row
            assert_eq!(run.padding_waste_bytes, run.unique_ids() * 12, stringify!($f));
            assert!(run.unique_ids() >= 4, stringify!($f));
            let mut y = vec![0.0; 4];
            let run = a.sparsecore_spmv(&chip, &[1.0; 4], &mut y).unwrap();
            assert_eq!(y, [2.0, 1.0, 4.0, 1.0], stringify!($f));
            assert_eq!(
                (run.forward_hbm_stack_bytes, run.backward_hbm_stack_bytes),
                (3 * $m * 4, 3 * $m * 4),
                stringify!($f)
            );
            assert_eq!(run.padding_waste_bytes, run.unique_ids() * 7 * 4, stringify!($f));
        })*};
    }
    each!(Csr<f64>: 3, Bsr<f64>: 4, Coo<f64>: 3, Csc<f64>: 3);
}

// The other rank-2 formats of `kernel_formats.rs`: every one gets the tile kernels.
sparse_format! {
    pub Dcsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>;
    pub Dcsc = #sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed) }>;
    pub CooSoa = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)) }>;
    pub Nv24 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4) }>;
    pub Loose = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>;
    pub Ell = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 8 * i : dense, i : dense, j : compressed) }>;
    pub Dense = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>;
}

/// The report covers every tile of every SparseCore of `chip` with contiguous units from 0.
fn check_tiles(run: &TileRun, chip: &ChipModel) -> usize {
    assert_eq!(run.tiles.len(), chip.sparsecores_per_device as usize);
    let mut next = 0;
    for sc in &run.tiles {
        assert_eq!(sc.len(), chip.tiles_per_sc as usize);
        for t in sc {
            assert_eq!(t.units.start, next);
            next = t.units.end;
        }
    }
    next
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    /// DCSR, DCSC, COO (SoA), 2:4, loose CSR, ELL and all-dense: the tile SpMV and
    /// SparseDenseMatmul equal the serial `spmv` / `spmm` bit for bit, the report covers every
    /// tile and counts every stored value, and the mod-sharded SparseDenseMatmul (2:4's
    /// included) equals the dense product to rounding.
    #[test]
    fn every_other_rank2_format_on_the_tiles(
        cells in proptest::collection::vec((any::<bool>(), -4.0f64..4.0), 20 * 12),
        x in proptest::collection::vec(-2.0f64..2.0, 12),
        table in proptest::collection::vec(-2.0f64..2.0, 12 * 8),
    ) {
        use sparse::runtime::generated::DenseOrder;
        let (rows, ids, n) = (20, 12, 8);
        // at most 2 stored per block of 4 along a row, so 2:4 can store it too
        let mut cells = cells;
        for block in cells.chunks_mut(4) {
            let mut kept = 0;
            for c in block.iter_mut().filter(|c| c.0) {
                kept += 1;
                c.0 = kept <= 2;
            }
        }
        let t = coo(rows, ids, &cells);
        let chip = v5p();
        let mut dense = vec![0.0; rows * n];
        for (f, &(keep, v)) in cells.iter().enumerate() {
            if keep {
                for k in 0..n {
                    dense[(f / ids) * n + k] += v * table[(f % ids) * n + k];
                }
            }
        }
        macro_rules! each {
            ($($f:ty: $stored:expr),*) => {$({
                let name = stringify!($f);
                let a = <$f>::from_coo_tensor(&t).unwrap();
                let (mut want, mut got) = (vec![0.0; rows], vec![f64::NAN; rows]);
                a.spmv(&x, &mut want).unwrap();
                let run = a.sparsecore_spmv(&chip, &x, &mut got).unwrap();
                prop_assert_eq!(
                    got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    "sparsecore_spmv {}", name
                );
                prop_assert!(check_tiles(&run, &chip) > 0, "units {}", name);
                // every stored value counts: 2:4 stores 2 per block of 4, all-dense everything
                let stored: u64 = $stored;
                prop_assert_eq!(run.entries(), stored, "entries {}", name);
                let mut want = vec![0.0; rows * n];
                a.spmm(&table, &mut want, n, DenseOrder::RowMajor).unwrap();
                let mut got = vec![f64::NAN; rows * n];
                let run = a.sparsecore_spmm(&chip, &table, &mut got, n).unwrap();
                prop_assert_eq!(
                    got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    "sparsecore_spmm {}", name
                );
                check_tiles(&run, &chip);
                prop_assert_eq!(run.feature_width, n as u64, "{}", name);
                prop_assert_eq!(run.entries(), stored, "entries {}", name);
                let mut got = vec![f64::NAN; rows * n];
                let run = a.sparsecore_spmm_sharded(&chip, &table, &mut got, n).unwrap();
                for (g, d) in got.iter().zip(&dense) {
                    prop_assert!((g - d).abs() <= 1e-12 * d.abs().max(1.0), "{}: {} vs {}", name, g, d);
                }
                prop_assert_eq!(run.entries(), stored, "sharded entries {}", name);
            })*};
        }
        let nnz = t.values.len() as u64;
        let all = (rows * ids) as u64;
        each!(
            Dcsr<f64>: nnz,
            Dcsc<f64>: nnz,
            CooSoa<f64>: nnz,
            Nv24<f64>: all / 2,
            Loose<f64>: nnz,
            Ell<f64>: nnz,
            Dense<f64>: all
        );
    }
}

#[test]
fn per_sparsecore_totals_of_the_report() {
    let m = sparse::runtime::mmio::read_matrix_market(common::data("bcsstk16.mtx")).unwrap();
    let a = Csr::from_coo_tensor(&m.tensor).unwrap();
    let n = m.tensor.shape[0];
    let chip = v5p();
    let mut y = vec![0.0; n];
    let run = a.sparsecore_spmv(&chip, &vec![1.0; n], &mut y).unwrap();
    assert_eq!(run.scs.len(), chip.sparsecores_per_device as usize);
    let mut next = 0;
    for (k, (sc, tiles)) in run.scs.iter().zip(&run.tiles).enumerate() {
        assert_eq!(sc.units.start, next);
        assert_eq!(sc.units.start, tiles[0].units.start);
        assert_eq!(sc.units.end, tiles.last().unwrap().units.end);
        next = sc.units.end;
        assert_eq!(sc.entries, tiles.iter().map(|t| t.entries).sum::<u64>());
        assert_eq!(sc.hbm_bytes, tiles.iter().map(|t| t.hbm_bytes).sum::<u64>());
        let peak = tiles.iter().map(|t| t.spmem_bytes).max().unwrap();
        assert_eq!(sc.peak_spmem_bytes, peak);
        assert_eq!(sc.seconds, run.cost.sc_seconds[k]);
        // the distinct columns of its rows, each counted once however many tiles read it
        let mut cols: Vec<usize> = a
            .iter()
            .filter(|(c, _)| sc.units.contains(&c[0]))
            .map(|(c, _)| c[1])
            .collect();
        cols.sort_unstable();
        cols.dedup();
        assert_eq!(sc.unique_ids, cols.len() as u64, "SparseCore {k}");
        assert!(sc.unique_ids <= tiles.iter().map(|t| t.unique_ids).sum::<u64>());
    }
    assert_eq!(next, n);
    assert_eq!(
        run.scs.iter().map(|s| s.entries).sum::<u64>(),
        a.nse() as u64
    );

    // a format run whole: SparseCore 0 did everything, the others nothing
    let c = Coo::from_coo_tensor(&m.tensor).unwrap();
    let run = c.sparsecore_spmv(&chip, &vec![1.0; n], &mut y).unwrap();
    assert_eq!(run.scs[0].units, 0..n);
    assert_eq!(run.scs[0].entries, c.nse() as u64);
    assert_eq!(run.scs[0].unique_ids, n as u64);
    for sc in &run.scs[1..] {
        assert_eq!(
            (sc.units.len(), sc.entries, sc.unique_ids, sc.hbm_bytes),
            (0, 0, 0, 0)
        );
    }
}

/// The stored columns of each row of `cells` (`rows x ids`, at most 2 kept per block of 4) in
/// each format, counted here from the cells: loose CSR stores the kept cells, 2:4 each block's
/// kept cells padded to 2 with the lowest free in-block columns, all-dense every column.
fn stored_columns(cells: &[(bool, f64)], ids: usize, format: &str) -> Vec<Vec<usize>> {
    cells
        .chunks(ids)
        .map(|row| match format {
            "loose" => (0..ids).filter(|&j| row[j].0).collect(),
            "2:4" => {
                let mut cols = Vec::new();
                for b in 0..ids / 4 {
                    let mut block: Vec<usize> = (4 * b..4 * b + 4).filter(|&j| row[j].0).collect();
                    let mut free = (4 * b..4 * b + 4).filter(|j| !row[*j].0);
                    while block.len() < 2 {
                        block.push(free.next().unwrap());
                    }
                    block.sort_unstable();
                    cols.extend(block);
                }
                cols
            }
            _ => (0..ids).collect(),
        })
        .collect()
}

/// Entries and distinct columns of rows `r` of `stored`.
fn counts(stored: &[Vec<usize>], r: std::ops::Range<usize>) -> (u64, u64) {
    let mut cols: Vec<usize> = stored[r].iter().flatten().copied().collect();
    let entries = cols.len() as u64;
    cols.sort_unstable();
    cols.dedup();
    (entries, cols.len() as u64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    /// Loose CSR, 2:4 and all-dense: the tile reports count each tile's and each SparseCore's
    /// stored entries, distinct ids and HBM bytes exactly (against counts made here from the
    /// cells), and the SpMV splits the rows by stored entries (loose CSR as CSR does).
    #[test]
    fn reports_count_stored_entries_of_loose_two_four_and_dense(
        cells in proptest::collection::vec((any::<bool>(), -4.0f64..4.0), 20 * 12),
    ) {
        let (rows, ids, n) = (20, 12, 3);
        let mut cells = cells;
        for block in cells.chunks_mut(4) {
            let mut kept = 0;
            for c in block.iter_mut().filter(|c| c.0) {
                kept += 1;
                c.0 = kept <= 2;
            }
        }
        let t = coo(rows, ids, &cells);
        let chip = v5p();
        let (x, table) = (vec![1.0; ids], vec![0.5; ids * n]);
        // f64 values, usize positions and coordinates: 8 bytes each
        macro_rules! each {
            ($($f:ty: $format:expr, $crd:expr, $pos:expr),*) => {$({
                let name = $format;
                let stored = stored_columns(&cells, ids, name);
                let a = <$f>::from_coo_tensor(&t).unwrap();
                let mut y = vec![0.0; rows];
                let run = a.sparsecore_spmv(&chip, &x, &mut y).unwrap();
                // the rows split by stored entries: the runtime's rule on the counts made here
                let mut before = vec![0usize];
                for r in &stored {
                    before.push(before.last().unwrap() + r.len());
                }
                let tiles = (chip.sparsecores_per_device * chip.tiles_per_sc) as usize;
                let mut splits = sparse::runtime::storage::balanced_splits(rows, tiles, |r| before[r]);
                splits.resize(tiles + 1, rows);
                for (w, s) in run.tiles.iter().flatten().zip(splits.windows(2)) {
                    prop_assert_eq!(w.units.clone(), s[0]..s[1], "{}", name);
                    let (entries, unique) = counts(&stored, w.units.clone());
                    prop_assert_eq!((w.entries, w.unique_ids), (entries, unique), "{} {:?}", name, w.units);
                    // per entry its value and its coordinate; per distinct id its x element;
                    // per row its y element and its level-1 positions
                    let bytes = entries * (8 + $crd) + unique * 8 + w.units.len() as u64 * (8 + $pos);
                    prop_assert_eq!(w.hbm_bytes, bytes, "{} {:?}", name, w.units);
                }
                for sc in &run.scs {
                    prop_assert_eq!((sc.entries, sc.unique_ids), counts(&stored, sc.units.clone()), "{}", name);
                }
                prop_assert_eq!(run.entries(), before[rows] as u64, "{}", name);

                let mut c = vec![0.0; rows * n];
                let run = a.sparsecore_spmm(&chip, &table, &mut c, n).unwrap();
                prop_assert_eq!(check_tiles(&run, &chip), rows);
                for w in run.tiles.iter().flatten() {
                    let (entries, unique) = counts(&stored, w.units.clone());
                    prop_assert_eq!((w.entries, w.unique_ids), (entries, unique), "{} {:?}", name, w.units);
                    // per entry its gain and id; per distinct id its row of n values; per
                    // sample a position and its output row
                    let bytes = entries * 16 + unique * n as u64 * 8 + w.units.len() as u64 * (n as u64 * 8 + 8);
                    prop_assert_eq!(w.hbm_bytes, bytes, "{} {:?}", name, w.units);
                }
                for sc in &run.scs {
                    prop_assert_eq!((sc.entries, sc.unique_ids), counts(&stored, sc.units.clone()), "{}", name);
                }
                prop_assert_eq!(run.entries(), before[rows] as u64, "{}", name);
            })*};
        }
        each!(
            Loose<f64>: "loose", 8, 16,
            Nv24<f64>: "2:4", 8, 0,
            Dense<f64>: "dense", 0, 0
        );
        // loose CSR is split over the tiles as CSR is
        let (mut y, mut z) = (vec![0.0; rows], vec![0.0; rows]);
        let loose = Loose::from_coo_tensor(&t).unwrap().sparsecore_spmv(&chip, &x, &mut y).unwrap();
        let csr = Csr::from_coo_tensor(&t).unwrap().sparsecore_spmv(&chip, &x, &mut z).unwrap();
        let units = |r: &TileRun| r.tiles.iter().flatten().map(|w| w.units.clone()).collect::<Vec<_>>();
        prop_assert_eq!(units(&loose), units(&csr));
    }
}

#[test]
fn staged_chunks_set_the_peak_tile_spmem() {
    // 64 samples x 4 ids on 1 SparseCore of 2 tiles: tile 0's samples 0..32 hold 4 ids each
    // (128 entries), tile 1's samples 32..64 two entries in all
    let mut t = CooTensor::new(vec![64, 4]);
    for i in 0..32 {
        for j in 0..4 {
            t.push(&[i, j], 0.25 + (i * 4 + j) as f64 * 0.125);
        }
    }
    t.push(&[40, 1], 3.0);
    t.push(&[63, 2], -1.5);
    let a = Csr::from_coo_tensor(&t).unwrap();
    let mut chip = v5p();
    chip.sparsecores_per_device = 1;
    chip.tiles_per_sc = 2;
    // 5 values pad to 8 f32 (32 bytes a row): 32 output rows take 1024 bytes, and 192 more
    // hold two buffers of 3 staged rows
    chip.tile_spmem_bytes = 1024 + 2 * 3 * 32;
    let n = 5;
    let table: Vec<f64> = (0..4 * n).map(|k| 1.0 / (k + 3) as f64).collect();
    let mut want = vec![0.0; 64 * n];
    a.spmm(
        &table,
        &mut want,
        n,
        sparse::runtime::generated::DenseOrder::RowMajor,
    )
    .unwrap();
    let mut got = vec![f64::NAN; 64 * n];
    let run = a.sparsecore_spmm(&chip, &table, &mut got, n).unwrap();
    // chunks of 3 cross the samples' boundaries; each sample is still summed in storage order
    assert_eq!(
        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    let tiles = &run.tiles[0];
    assert_eq!((tiles[0].entries, tiles[1].entries), (128, 2));
    // tile 0 stages full chunks of 3 rows; tile 1 a single chunk of its 2
    assert_eq!(tiles[0].spmem_bytes, 1024 + 2 * 3 * 32);
    assert_eq!(tiles[1].spmem_bytes, 1024 + 2 * 2 * 32);
    assert_eq!(run.scs[0].peak_spmem_bytes, 1216);
    // HBM bytes: per entry its f64 gain and u32 id, per distinct id 5 f64, per sample a u32
    // position and 5 f64
    assert_eq!(tiles[0].hbm_bytes, 128 * 12 + 4 * 40 + 32 * 44);
    assert_eq!(tiles[1].hbm_bytes, 2 * 12 + 2 * 40 + 32 * 44);
    // padding: 3 of 8 columns of every gathered row; the 4-row table padded to 8 columns
    // and to 8 rows (a multiple of 8 * 1 SparseCore, §7) holds 8 * 8 - 4 * 5 padded f32
    assert_eq!(run.padding_waste_bytes, (4 + 2) * 3 * 4);
    assert_eq!(run.padded_vocabulary, 8);
    assert_eq!(run.table_padding_bytes, (8 * 8 - 4 * 5) * 4);
    // on 3 SparseCores the vocabulary pads to 24 rows (8 * 3)
    chip.sparsecores_per_device = 3;
    chip.tile_spmem_bytes = 512 * 1024;
    let mut c = vec![0.0; 64 * n];
    let run = a.sparsecore_spmm(&chip, &table, &mut c, n).unwrap();
    assert_eq!(run.padded_vocabulary, 24);
    assert_eq!(run.table_padding_bytes, (24 * 8 - 4 * 5) * 4);
    // the step is modelled on gathered rows of 8 values: on 2 lanes and a 1 Hz clock a tile
    // takes 4 cycles (seconds) per id
    chip.f32_lanes = 2;
    chip.clock_hz = 1.0;
    let run = a.sparsecore_spmm(&chip, &table, &mut c, n).unwrap();
    let w = &run.tiles[0][0];
    assert_eq!(w.entries, 4 * w.units.len() as u64);
    assert_eq!(run.cost.tile_seconds[0][0], (w.entries * 4) as f64);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    /// A 2:4 operand mod-sharded over 1 to 4 SparseCores: each sample summed partition by
    /// partition, local ids ascending, its blocks' explicit zeros included; equal bit for bit
    /// to that plain computation over the nonzeros (adding `0 * row` changes no bit of a sum
    /// that starts at +0) and to the dense product within rounding.
    #[test]
    fn sharded_two_four_against_the_dense_product(
        cells in proptest::collection::vec((any::<bool>(), -4.0f64..4.0), 20 * 12),
        table in proptest::collection::vec(-2.0f64..2.0, 12 * 8),
        scs in 1u32..5,
    ) {
        let (rows, ids, n) = (20, 12, 8);
        let mut cells = cells;
        for block in cells.chunks_mut(4) {
            let mut kept = 0;
            for c in block.iter_mut().filter(|c| c.0) {
                kept += 1;
                c.0 = kept <= 2;
            }
        }
        let t = coo(rows, ids, &cells);
        let mut chip = v5p();
        chip.sparsecores_per_device = scs;
        let s = scs as usize;
        let (mut want, mut dense) = (vec![0.0; rows * n], vec![0.0; rows * n]);
        for i in 0..rows {
            for p in 0..s {
                for j in (p..ids).step_by(s) {
                    let (keep, v) = cells[i * ids + j];
                    if keep {
                        for k in 0..n {
                            want[i * n + k] += v * table[j * n + k];
                        }
                    }
                }
            }
            for j in 0..ids {
                let (keep, v) = cells[i * ids + j];
                if keep {
                    for k in 0..n {
                        dense[i * n + k] += v * table[j * n + k];
                    }
                }
            }
        }
        let a = Nv24::from_coo_tensor(&t).unwrap();
        let mut got = vec![f64::NAN; rows * n];
        let run = a.sparsecore_spmm_sharded(&chip, &table, &mut got, n).unwrap();
        prop_assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        for (g, d) in got.iter().zip(&dense) {
            prop_assert!((g - d).abs() <= 1e-12 * d.abs().max(1.0), "{} vs {}", g, d);
        }
        // 2 stored per block of 4: 6 per sample, padding included
        prop_assert_eq!(run.entries(), 120);
        prop_assert_eq!(run.tiles.len(), s);
        prop_assert_eq!(run.padded_vocabulary, ids.div_ceil(8 * s) as u64 * 8 * s as u64);
    }
}
