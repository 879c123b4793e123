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
                // stored positions of the outermost level's children: blocks for BSR
                prop_assert!(run.entries() <= nnz);
                let units: usize = run.tiles.iter().flatten().map(|w| w.units.len()).sum();
                prop_assert!(units == 40 || units == 20, "{} units", units);
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
    // 32 samples of 8 f64 per tile: 2048 bytes
    assert_eq!(
        a.sparsecore_spmm(&chip, &table, &mut c, 8)
            .unwrap_err()
            .to_string(),
        "Fixed size allocations (2048 bytes) do not fit in TileSpmem (1000 bytes)"
    );
    assert_eq!(c, vec![3.0; 64 * 8], "nothing written");
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
    /// tile, and the mod-sharded SparseDenseMatmul equals the dense product to rounding.
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
            ($($f:ty: $exact:expr),*) => {$({
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
                // stored entries are counted exactly where level 1 has back-to-back segments or
                // the format runs whole; 2:4, loose_compressed and all-dense count one per row
                // (a known gap of the code generator's `before`), so they are not checked here
                if $exact {
                    prop_assert_eq!(run.entries(), t.values.len() as u64, "entries {}", name);
                }
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
                if $exact {
                    prop_assert_eq!(run.entries(), t.values.len() as u64, "entries {}", name);
                }
                let mut got = vec![f64::NAN; rows * n];
                match a.sparsecore_spmm_sharded(&chip, &table, &mut got, n) {
                    Ok(_) => {
                        for (g, d) in got.iter().zip(&dense) {
                            prop_assert!((g - d).abs() <= 1e-12 * d.abs().max(1.0), "{}: {} vs {}", name, g, d);
                        }
                    }
                    // sharding permutes a row's ids, which a 2:4 block may then not hold
                    Err(e) => prop_assert!(
                        name.starts_with("Nv24") && matches!(e, TileError::Storage(_)),
                        "{}: {}", name, e
                    ),
                }
            })*};
        }
        each!(
            Dcsr<f64>: true,
            Dcsc<f64>: true,
            CooSoa<f64>: true,
            Nv24<f64>: false,
            Loose<f64>: false,
            Ell<f64>: true,
            Dense<f64>: false
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
