//! `sparse sparsecore`: SparseCore host preprocessing and minibatch splits, JSON in and out.
//!
//! Contract (issue 10; rules: `../shared/reference/sparsecore-preprocessing.md`):
//!
//! - `sparse sparsecore preprocess CONFIG.json BATCH.json` does for one stacked table what
//!   jax-tpu-embedding's `preprocess_sparse_dense_matmul_input` does and prints one JSON object
//!   (`{"devices": [...], "dropped_id_count": N, "num_minibatches": N}`) on one line.
//! - `sparse sparsecore split COUNTS.json --limit N` prints `{"split": MASK, "num_minibatches":
//!   popcount(MASK) + 1}` for a JSON array of per-bucket counts (a power of two in number, at
//!   most 64). `--limit` is the per-minibatch limit of one partition (a `max_ids_per_partition`
//!   or `max_unique_ids_per_partition`): a tree node whose two halves together count more than
//!   it is split (reference §6).
//!
//! `minibatch_hash`: `identity` (default, bucket = `col_id & 63`) or `highway` (the peer's
//! production HighwayHash under its fixed key).
//!
//! Beyond the contract, optional debug checks: CONFIG `check_id_bounds` (each id below its
//! feature's `vocab_size`) and `check_nan` (finite weights and gains), both default false; and
//! `max_host_bytes`, the most host memory the buffers the configuration sizes may take
//! (default 1 GiB, `sparse_runtime::sparsecore::DEFAULT_MAX_HOST_BYTES`): a config with huge
//! counts (`global_device_count`, `num_sc_per_device`, `max_ids_per_partition`,
//! `suggested_coo_buffer_size`, with minibatching's factor 64) is an `error:` naming the sizes
//! and the keys they come from, not an out-of-memory kill.
//!
//! Errors: `error: MESSAGE` on stderr, exit status 1; unknown keys are ignored.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde::{Deserialize, Serialize};
use sparse_runtime::sparsecore::{
    compute_split, preprocess_minibatches, preprocess_with_hash, Combiner, CooEntry, Feature,
    HighwayHash, IdentityHash, PreprocessConfig, PreprocessError, Preprocessed,
};

use crate::input;

/// The subcommands of `sparse sparsecore`.
#[derive(Subcommand)]
pub enum Command {
    /// Preprocess one stacked table's batch as jax-tpu-embedding does; print the buffers and
    /// statistics as one JSON object.
    Preprocess {
        /// The configuration: a JSON object (`num_sc_per_device`, `local_device_count`,
        /// `global_device_count`, `max_ids_per_partition`, `max_unique_ids_per_partition`;
        /// optional `allow_id_dropping`, `minibatching`, `combiner`,
        /// `suggested_coo_buffer_size`, `table`, `minibatch_hash`, `check_id_bounds`,
        /// `check_nan`, `max_host_bytes`); `-` reads standard input.
        config: PathBuf,
        /// The batch: `{"features": [...]}` or, with minibatching, `{"minibatches":
        /// [{"features": [...]}, ...]}`; `-` reads standard input.
        batch: PathBuf,
    },
    /// Compute the minibatch split of per-bucket counts (reference §6); print `{"split": MASK,
    /// "num_minibatches": N}`.
    Split {
        /// A JSON array of per-bucket counts (a power of two in number, at most 64); `-` reads
        /// standard input.
        counts: PathBuf,
        /// The limit of one partition per minibatch: a node whose halves together count more
        /// is split.
        /// Required; a missing or bad value is an error (exit status 1).
        #[arg(long, allow_hyphen_values = true, value_name = "N")]
        limit: Option<String>,
    },
}

/// Runs a `sparse sparsecore` subcommand; the error is the message after `error: `.
pub fn run(command: Command) -> Result<(), String> {
    match command {
        Command::Preprocess { config, batch } => {
            if input::is_stdin(&config) && input::is_stdin(&batch) {
                input::stdin_once(&["CONFIG -", "BATCH -"])?;
            }
            let out = run_preprocess(&config, &batch)?;
            crate::write_stdout(|w| writeln!(w, "{out}"))
        }
        Command::Split { counts, limit } => {
            let Some(limit) = limit else {
                return Err(
                    "sparsecore split needs --limit N, the limit of one partition per \
                            minibatch (a max_ids_per_partition or max_unique_ids_per_partition)"
                        .into(),
                );
            };
            let out = run_split(&counts, &limit)?;
            crate::write_stdout(|w| writeln!(w, "{out}"))
        }
    }
}

/// CONFIG.json.
#[derive(Deserialize)]
struct ConfigJson {
    num_sc_per_device: i64,
    local_device_count: i64,
    global_device_count: i64,
    max_ids_per_partition: i64,
    max_unique_ids_per_partition: i64,
    #[serde(default)]
    allow_id_dropping: bool,
    #[serde(default)]
    minibatching: bool,
    #[serde(default)]
    combiner: Option<String>,
    #[serde(default)]
    suggested_coo_buffer_size: Option<u64>,
    #[serde(default)]
    table: Option<String>,
    #[serde(default)]
    minibatch_hash: Option<String>,
    #[serde(default)]
    check_id_bounds: bool,
    #[serde(default)]
    check_nan: bool,
    #[serde(default)]
    max_host_bytes: Option<u64>,
}

/// BATCH.json: features, or minibatches of features.
#[derive(Deserialize)]
struct BatchJson {
    #[serde(default)]
    features: Option<Vec<FeatureJson>>,
    #[serde(default)]
    minibatches: Option<Vec<MinibatchJson>>,
}

#[derive(Deserialize)]
struct MinibatchJson {
    features: Vec<FeatureJson>,
}

#[derive(Deserialize)]
struct FeatureJson {
    name: String,
    samples: Vec<Vec<i64>>,
    #[serde(default)]
    weights: Option<Vec<Vec<f64>>>,
    #[serde(default)]
    row_offset: u64,
    #[serde(default)]
    col_shift: i64,
    #[serde(default)]
    col_offset: i64,
    #[serde(default)]
    vocab_size: Option<u64>,
}

#[derive(Serialize)]
struct OutputJson {
    devices: Vec<DeviceJson>,
    dropped_id_count: u64,
    num_minibatches: usize,
}

#[derive(Serialize)]
struct DeviceJson {
    row_pointers: Vec<i32>,
    embedding_ids: Vec<i32>,
    sample_ids: Vec<i32>,
    gains: Vec<Option<f32>>,
    coo: Vec<Vec<(u32, u32, Option<f32>)>>,
    max_ids_per_partition: Vec<u32>,
    max_unique_ids_per_partition: Vec<u32>,
    required_buffer_size: Vec<u32>,
}

#[derive(Serialize)]
struct SplitJson {
    split: u64,
    num_minibatches: u32,
}

/// Parses `text` (read from `path`) as JSON of type `T`; errors name the file.
fn parse_json<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("{}: {e}", input::name(path)))
}

/// A finite gain, or `None` (printed `null`) for NaN and infinities, which JSON cannot hold.
fn gain(g: f32) -> Option<f32> {
    g.is_finite().then_some(g)
}

/// The configuration, checked in the peer's order with the peer's words for counts <= 0.
fn config(c: ConfigJson) -> Result<(PreprocessConfig, Hash), String> {
    let err = |e: PreprocessError| e.to_string();
    if c.local_device_count <= 0 {
        return Err(err(PreprocessError::LocalDeviceCount(c.local_device_count)));
    }
    if c.global_device_count <= 0 {
        return Err(err(PreprocessError::GlobalDeviceCount(
            c.global_device_count,
        )));
    }
    if c.global_device_count < c.local_device_count {
        return Err(err(PreprocessError::GlobalBelowLocal {
            global: c.global_device_count.try_into().unwrap_or(u32::MAX),
            local: c.local_device_count.try_into().unwrap_or(u32::MAX),
        }));
    }
    if c.num_sc_per_device <= 0 {
        return Err(err(PreprocessError::NumScPerDevice(c.num_sc_per_device)));
    }
    let num_scs = (c.num_sc_per_device as u64).saturating_mul(c.global_device_count as u64);
    if !num_scs.is_power_of_two() {
        return Err(err(PreprocessError::NotPowerOfTwo(num_scs)));
    }
    for (name, value) in [
        ("max_ids_per_partition", c.max_ids_per_partition),
        (
            "max_unique_ids_per_partition",
            c.max_unique_ids_per_partition,
        ),
    ] {
        if value <= 0 {
            return Err(err(PreprocessError::LimitNotPositive { name, value }));
        }
    }
    let small = |name: &str, v: i64| {
        u32::try_from(v).map_err(|_| format!("{name} {v} is too large (at most {})", u32::MAX))
    };
    let mut cfg = PreprocessConfig::new(
        small("num_sc_per_device", c.num_sc_per_device)?,
        small("local_device_count", c.local_device_count)?,
        small("global_device_count", c.global_device_count)?,
        small("max_ids_per_partition", c.max_ids_per_partition)?,
        small(
            "max_unique_ids_per_partition",
            c.max_unique_ids_per_partition,
        )?,
    );
    cfg.allow_id_dropping = c.allow_id_dropping;
    cfg.minibatching = c.minibatching;
    if let Some(name) = &c.combiner {
        cfg.combiner = name.parse::<Combiner>().map_err(err)?;
    }
    cfg.suggested_coo_buffer_size = c.suggested_coo_buffer_size;
    cfg.check_id_bounds = c.check_id_bounds;
    cfg.check_nan = c.check_nan;
    if let Some(m) = c.max_host_bytes {
        cfg.max_host_bytes = m;
    }
    if let Some(t) = c.table {
        cfg.table = t;
    }
    let hash = match c.minibatch_hash.as_deref() {
        None | Some("identity") => Hash::Identity,
        Some("highway") => Hash::Highway,
        Some(other) => return Err(err(PreprocessError::UnknownHash(other.to_string()))),
    };
    Ok((cfg, hash))
}

/// The bucket hash of computed minibatching.
#[derive(Clone, Copy)]
enum Hash {
    /// `bucket = col_id & 63` (the default).
    Identity,
    /// The peer's production HighwayHash.
    Highway,
}

fn features(fs: Vec<FeatureJson>) -> Result<Vec<Feature>, String> {
    fs.into_iter()
        .map(|f| {
            let weights: Option<Vec<Vec<f32>>> = f.weights.map(|w| {
                w.into_iter()
                    .map(|s| s.into_iter().map(|x| x as f32).collect())
                    .collect()
            });
            let mut feature = Feature::from_samples(&f.name, &f.samples, weights.as_deref())
                .map_err(|e| e.to_string())?;
            feature.row_offset = f.row_offset;
            feature.col_shift = f.col_shift;
            feature.col_offset = f.col_offset;
            feature.vocab_size = f.vocab_size;
            Ok(feature)
        })
        .collect()
}

/// `sparse sparsecore preprocess`: the JSON text of the output object.
fn run_preprocess(config_path: &Path, batch_path: &Path) -> Result<String, String> {
    let text = input::read_text(config_path)?;
    let c: ConfigJson = parse_json(config_path, &text)?;
    let (cfg, hash) = config(c)?;
    let text = input::read_text(batch_path)?;
    let b: BatchJson = parse_json(batch_path, &text)?;
    let name = input::name(batch_path);
    let out = match (b.features, b.minibatches) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "{name}: holds both \"features\" and \"minibatches\"; give one"
            ))
        }
        (None, None) => return Err(format!("{name}: missing field `features`")),
        (Some(fs), None) => {
            let fs = features(fs)?;
            match hash {
                Hash::Identity => preprocess_with_hash(&cfg, &fs, &IdentityHash),
                Hash::Highway => preprocess_with_hash(&cfg, &fs, &HighwayHash),
            }
        }
        (None, Some(mbs)) => {
            if !cfg.minibatching {
                return Err(PreprocessError::MinibatchesWithoutMinibatching.to_string());
            }
            let mbs = mbs
                .into_iter()
                .map(|m| features(m.features))
                .collect::<Result<Vec<_>, _>>()?;
            preprocess_minibatches(&cfg, &mbs)
        }
    }
    .map_err(|e| e.to_string())?;
    serde_json::to_string(&output(out)).map_err(|e| format!("cannot write the output: {e}"))
}

fn output(p: Preprocessed) -> OutputJson {
    let entry = |e: &CooEntry| (e.row_id, e.col_id, gain(e.gain));
    OutputJson {
        devices: p
            .devices
            .into_iter()
            .map(|d| DeviceJson {
                row_pointers: d.row_pointers,
                embedding_ids: d.embedding_ids,
                sample_ids: d.sample_ids,
                gains: d.gains.into_iter().map(gain).collect(),
                coo: d
                    .coo
                    .iter()
                    .map(|sc| sc.iter().map(entry).collect())
                    .collect(),
                max_ids_per_partition: d.max_ids_per_partition,
                max_unique_ids_per_partition: d.max_unique_ids_per_partition,
                required_buffer_size: d.required_buffer_size,
            })
            .collect(),
        dropped_id_count: p.dropped_id_count,
        num_minibatches: p.num_minibatches,
    }
}

/// `sparse sparsecore split`: the JSON text of `{"split", "num_minibatches"}`.
fn run_split(path: &Path, limit: &str) -> Result<String, String> {
    let limit: u64 = limit
        .trim()
        .parse()
        .map_err(|_| format!("--limit {limit}: not a non-negative integer"))?;
    let text = input::read_text(path)?;
    let counts: Vec<u64> = parse_json(path, &text).map_err(|e| {
        format!("{e} (COUNTS must be a JSON array of non-negative integer per-bucket counts)")
    })?;
    let split = compute_split(&counts, limit).map_err(|e| format!("{}: {e}", input::name(path)))?;
    serde_json::to_string(&SplitJson {
        split,
        num_minibatches: split.count_ones() + 1,
    })
    .map_err(|e| format!("cannot write the output: {e}"))
}
