//! One SparseCore embedding lookup step on real data, on the `v5p` chip model.
//!
//! `cargo run --release --example embedding [CRITEO.csv [PNG]]`
//!
//! 1. The Criteo sample (`data/criteo_sample.csv`, 200 samples): each of the 26 categorical
//!    features `C1..C26` (32-bit hex hashes, empty = missing) becomes a table of `VOCAB` rows
//!    (id = hash mod `VOCAB`); the 26 tables (width 16) are stacked as jax-tpu-embedding stacks
//!    them (`stack_tables`: row offsets in a shard, shard rotation), their features stacked in
//!    one batch (`row_offset` = samples of the earlier features). The batch is preprocessed
//!    (`preprocess`) and looked up on the chip model (`lookup`), the result checked against the
//!    plain computation (a difference is an error: CI runs this example), and the statistics,
//!    the report and an ASCII heat map of per-tile load printed; the heat map is also written as a PNG (`target/embedding_tiles.png`, or the second
//!    argument), one cell per tile, SparseCores as rows, darker = more ids.
//! 2. A skewed synthetic batch (Zipf ids, s = 1.2, fixed seed; labelled synthetic) with limits
//!    low enough to force vocabulary-dimension minibatching, showing the split.
//!
//! The table values are synthetic (a fixed function of row and column); only the ids are real.

use std::error::Error;

use sparse::runtime::sparsecore::chip::ChipModel;
use sparse::runtime::sparsecore::lookup::{
    lookup, reference_activations, EmbeddingTable, LookupConfig, LookupReport,
};
use sparse::runtime::sparsecore::stack::{stack_tables, TableSpec};
use sparse::runtime::sparsecore::{preprocess, Feature, PreprocessConfig, Preprocessed};

/// Rows of each Criteo table.
const VOCAB: u64 = 1000;
/// Embedding width of every table.
const WIDTH: u32 = 16;

fn main() -> Result<(), Box<dyn Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/data/criteo_sample.csv").into());
    let chip = ChipModel::by_name("v5p")?;
    let s = chip.sparsecores_per_device;
    let num_scs = u64::from(s);

    // ---- 1. Criteo: 26 tables stacked, one lookup step ----
    let columns = read_criteo(&path)?;
    let samples = columns.first().map_or(0, Vec::len);
    println!(
        "{path}: {samples} samples, {} categorical features, vocabulary {VOCAB} each",
        columns.len()
    );
    let specs: Vec<TableSpec> = (1..=columns.len())
        .map(|c| TableSpec {
            name: format!("C{c:02}"),
            vocab: VOCAB,
            width: WIDTH,
        })
        .collect();
    let stacks = stack_tables(&specs, s, num_scs)?;
    let stack = &stacks[0];
    println!(
        "stacked: {} tables, width {} (padded), {} rows",
        stack.tables.len(),
        stack.padded_width,
        stack.stack_vocab
    );
    let mut features = Vec::new();
    for (i, t) in stack.tables.iter().enumerate() {
        let c: usize = t.name[1..].parse()?;
        let mut f = Feature::from_samples(&t.name, &columns[c - 1], None)?;
        f.row_offset = (i * samples) as u64;
        f.col_offset = i64::try_from(t.col_offset)?;
        f.col_shift = i64::try_from(t.col_shift)?;
        features.push(f);
    }
    let mut cfg = PreprocessConfig::new(s, 1, 1, 512, 512);
    cfg.table = "criteo".into();
    let pre = preprocess(&cfg, &features)?;
    print_stats(&pre);
    let rows = usize::try_from(stack.stack_vocab)?;
    let table = synthetic_table(rows, stack.padded_width as usize);
    let lcfg = LookupConfig {
        num_sc_per_device: s,
        num_scs: s,
        batch_size_per_sc: (features.len() * samples / s as usize) as u32,
        num_minibatches: pre.num_minibatches,
        minibatching: false,
        feature_width: WIDTH as usize,
        logical_replica_count: 1,
        quantization: None,
        // the buffers' limits: TileSpmem holds each tile's share of a partition too
        partition_limits: Some((cfg.max_ids_per_partition, cfg.max_unique_ids_per_partition)),
    };
    let (act, report) = lookup(&chip, &pre.devices[0], &table, &lcfg)?;
    let plain = reference_activations(&pre.devices[0], &table, &lcfg)?;
    println!(
        "activations: {} rows x {}, equal to the plain computation: {}",
        act.len() / table.width,
        table.width,
        act == plain
    );
    if act != plain {
        // CI runs this example: a lookup that disagrees with the plain computation fails it
        return Err("the lookup's activations differ from the plain computation".into());
    }
    print_report(&report);
    let png = std::env::args().nth(2).unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/target/embedding_tiles.png").into()
    });
    write_heat_map(&report, &png)?;
    println!("  heat map of per-tile load written to {png}");

    // ---- 2. skewed synthetic batch forcing minibatching ----
    println!("\nsynthetic (Zipf s = 1.2 over 100000 ids, 4096 samples x 8 ids, seed 7):");
    let zipf = Zipf::new(100_000, 1.2);
    let mut rng = 7u64;
    let batch: Vec<Vec<i64>> = (0..4096)
        .map(|_| (0..8).map(|_| zipf.sample(&mut rng) as i64).collect())
        .collect();
    let mut cfg = PreprocessConfig::new(s, 1, 1, 512, 256);
    cfg.minibatching = true;
    cfg.allow_id_dropping = true;
    cfg.table = "synthetic".into();
    let f = Feature::from_samples("zipf", &batch, None)?;
    let pre = preprocess(&cfg, &[f])?;
    println!(
        "split mask {:#066b}: {} minibatches; dropped {} ids",
        pre.split, pre.num_minibatches, pre.dropped_id_count
    );
    print_stats(&pre);
    Ok(())
}

/// The 26 categorical columns: per column, per sample, the id list (empty when missing).
fn read_criteo(path: &str) -> Result<Vec<Vec<Vec<i64>>>, Box<dyn Error>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty file")?.split(',').collect();
    let cats: Vec<usize> = (0..header.len())
        .filter(|&i| header[i].starts_with('C'))
        .collect();
    let mut columns = vec![Vec::new(); cats.len()];
    for (n, line) in lines.enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != header.len() {
            return Err(format!(
                "{path}:{}: {} fields, expected {}",
                n + 2,
                fields.len(),
                header.len()
            )
            .into());
        }
        for (c, &i) in cats.iter().enumerate() {
            let ids = match fields[i] {
                "" => vec![],
                hex => {
                    let h = u32::from_str_radix(hex, 16)
                        .map_err(|e| format!("{path}:{}: {}: {e}", n + 2, header[i]))?;
                    vec![i64::from(h) % VOCAB as i64]
                }
            };
            columns[c].push(ids);
        }
    }
    Ok(columns)
}

/// `table[r][c] = ((r * 31 + c * 7) % 17) / 16 - 0.5`: small exact values.
fn synthetic_table(rows: usize, width: usize) -> EmbeddingTable {
    let data = (0..rows * width)
        .map(|i| ((i / width * 31 + i % width * 7) % 17) as f32 / 16.0 - 0.5)
        .collect();
    EmbeddingTable { rows, width, data }
}

fn print_stats(pre: &Preprocessed) {
    let d = &pre.devices[0];
    println!(
        "  max_ids_per_partition {:?}, max_unique_ids_per_partition {:?}",
        d.max_ids_per_partition, d.max_unique_ids_per_partition
    );
    println!(
        "  required_buffer_size {:?}, buffer {} entries, dropped {}",
        d.required_buffer_size,
        d.embedding_ids.len(),
        pre.dropped_id_count
    );
}

fn print_report(r: &LookupReport) {
    println!("v5p model, per SparseCore:");
    for (k, sc) in r.scs.iter().enumerate() {
        println!(
            "  SC {k}: {} ids, {} unique, {} HBM bytes, peak TileSpmem {} bytes, {:.3} us, {} padding slots",
            sc.ids,
            sc.unique_ids,
            sc.hbm_bytes,
            sc.peak_spmem_bytes,
            sc.seconds * 1e6,
            sc.padding_slots
        );
    }
    println!(
        "  step {:.3} us (slowest tile {:?}), imbalance {:.2}, padding waste {} bytes",
        r.cost.step_seconds * 1e6,
        r.cost.slowest,
        r.cost.imbalance,
        r.padding_waste_bytes
    );
    println!(
        "  HBM stack estimate: forward {} bytes, backward {} bytes (max_unique_nz_per_row {})",
        r.forward_hbm_stack_bytes, r.backward_hbm_stack_bytes, r.max_unique_nz_per_row
    );
    println!("  per-tile load (ids; rows = SparseCores, columns = tiles, ' .:-=+*#%@' by share of the max):");
    let max = busiest_tile(r);
    let shades = b" .:-=+*#%@";
    for (k, sc) in r.scs.iter().enumerate() {
        let line: String = sc
            .tiles
            .iter()
            .map(|t| shades[(t.ids * 9 / max) as usize] as char)
            .collect();
        println!("  SC {k} |{line}|");
    }
}

/// Ids of the busiest tile (at least 1, so shares divide safely).
fn busiest_tile(r: &LookupReport) -> u64 {
    r.scs
        .iter()
        .flat_map(|s| s.tiles.iter().map(|t| t.ids))
        .max()
        .unwrap_or(0)
        .max(1)
}

/// A PNG heat map of per-tile ids: one 24 x 24 cell per tile, a row per SparseCore, white (0)
/// to dark red (the busiest tile).
fn write_heat_map(r: &LookupReport, path: &str) -> Result<(), Box<dyn Error>> {
    use plotters::prelude::*;
    let tiles = r.scs.first().map_or(0, |s| s.tiles.len()) as u32;
    let cell = 24u32;
    let size = (tiles.max(1) * cell, (r.scs.len() as u32).max(1) * cell);
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    let max = busiest_tile(r);
    for (k, sc) in r.scs.iter().enumerate() {
        for (t, tile) in sc.tiles.iter().enumerate() {
            let share = tile.ids as f64 / max as f64;
            let fade = (255.0 * (1.0 - share)) as u8;
            let color = RGBColor(255 - (share * 100.0) as u8, fade, fade);
            let (x, y) = (t as i32 * cell as i32, k as i32 * cell as i32);
            root.draw(&Rectangle::new(
                [(x, y), (x + cell as i32 - 1, y + cell as i32 - 1)],
                color.filled(),
            ))?;
        }
    }
    root.present()?;
    Ok(())
}

/// Zipf over `1..=n` with exponent `s`, by inverse CDF; a xorshift generator with a fixed seed.
struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(n: usize, s: f64) -> Self {
        let mut cdf = Vec::with_capacity(n);
        let mut total = 0.0;
        for k in 1..=n {
            total += 1.0 / (k as f64).powf(s);
            cdf.push(total);
        }
        cdf.iter_mut().for_each(|c| *c /= total);
        Zipf { cdf }
    }

    fn sample(&self, state: &mut u64) -> usize {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        let u = (*state >> 11) as f64 / (1u64 << 53) as f64;
        self.cdf.partition_point(|&c| c < u)
    }
}
