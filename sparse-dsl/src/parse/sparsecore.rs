//! The `sparsecore(...)` clause after a declaration (not MLIR): a SparseCore configuration fixed
//! at compile time,
//!
//! ```text
//! sparsecore(chip = v5p, max_ids_per_partition = 256, max_unique_ids_per_partition = 64,
//!            feature_width = 128, batch = 4096)
//! ```
//!
//! read into a [`SparseCoreConfig`] and checked by the runtime lookup's own TileSpmem rule with
//! the partition buffers the limits size ([`sparse_ir::sparsecore::tile_spmem_plan_with_limits`])
//! on the chip preset's numbers. Every option is
//! required, once: `chip` (a preset name, `v4`, `v5p`, `v6e`, `tpu7x`, or `trillium` /
//! `ironwood`), then unsigned 32-bit integers (decimal or `0x` hexadecimal), all positive:
//! `max_ids_per_partition`, `max_unique_ids_per_partition` (preprocessing's limits per
//! partition and step), `feature_width` (`f32` values per embedding row, padded to a multiple
//! of 8 for the lookup) and `batch` (samples one SparseCore looks up per step).
//!
//! Diagnostics, each at its token and all reported: `unexpected sparsecore option: K` (with
//! the nearest option as help), `duplicate sparsecore option: K`, `unknown chip 'C' (known: v4,
//! v5p, v6e, tpu7x)` (the chip model's words), `expected an unsigned 32-bit integer for K`,
//! `K must be positive, got 0.`, `missing sparsecore option: K` (at `sparsecore`); when all
//! options are valid, the TileSpmem rule's `Gather operand too large: ...` or `Fixed size
//! allocations (N bytes) do not fit in TileSpmem (M bytes)` over the whole clause, with the
//! computation as help (the output rows; for the fixed allocations also the partition share the
//! limits size).

use super::*;
use sparse_ir::sparsecore::{
    padded_width, partition_share, preset, tile_spmem_plan, SparseCoreConfig,
    SparseCoreConfigError, SpmemError, PRESET_NAMES,
};

/// The options of the clause, in the order [`SparseCoreConfig::new`] takes them.
const OPTIONS: [&str; 5] = [
    "chip",
    "max_ids_per_partition",
    "max_unique_ids_per_partition",
    "feature_width",
    "batch",
];

impl<'t> Cx<'t> {
    /// Reads a `sparsecore` pair; `None` (with diagnostics) when any option is wrong.
    pub(super) fn sparsecore(&mut self, clause: Pair<'t, Rule>) -> Option<SparseCoreConfig> {
        let rank = rank::SPARSECORE;
        let whole = (clause.as_span().start(), clause.as_span().end());
        let mut kw = whole;
        let mut chip = None;
        // the four integers and the spans of their values
        let mut ints: [Option<(u32, (usize, usize))>; 4] = [None; 4];
        let mut seen = [false; 5];
        let mut failed = false;
        for p in inner(clause) {
            match p.as_rule() {
                Rule::kw_sparsecore => kw = (p.as_span().start(), p.as_span().end()),
                Rule::sc_option => {
                    let mut parts = inner(p).filter(|q| q.as_rule() != Rule::equal);
                    let (Some(key), Some(value)) = (parts.next(), parts.next()) else {
                        continue;
                    };
                    let (k, v) = (key.as_str(), value.as_str().trim_end());
                    let key_at = (key.as_span().start(), key.as_span().end());
                    let value_at = (value.as_span().start(), value.as_span().start() + v.len());
                    let Some(i) = OPTIONS.iter().position(|o| *o == k) else {
                        let choices: Vec<(&str, &str)> = OPTIONS.iter().map(|o| (*o, *o)).collect();
                        let help = choices_help(k, &choices, "sparsecore options");
                        let message = format!("unexpected sparsecore option: {k}");
                        self.error_help(key_at, rank, &message, help);
                        failed = true;
                        continue;
                    };
                    if std::mem::replace(&mut seen[i], true) {
                        let message = format!("duplicate sparsecore option: {k}");
                        self.error_at(key_at.0, key_at.1, rank, message);
                        failed = true;
                        continue;
                    }
                    if i == 0 {
                        chip = preset(v);
                        if chip.is_none() {
                            let known = PRESET_NAMES.join(", ");
                            let message = format!("unknown chip '{v}' (known: {known})");
                            self.error_at(value_at.0, value_at.1, rank, message);
                            failed = true;
                        }
                        continue;
                    }
                    match parse_uint(v).and_then(|n| u32::try_from(n).ok()) {
                        Some(n) => ints[i - 1] = Some((n, value_at)),
                        None => {
                            let message = format!("expected an unsigned 32-bit integer for {k}");
                            self.error_at(value_at.0, value_at.1, rank, message);
                            failed = true;
                        }
                    }
                }
                _ => {}
            }
        }
        for (o, _) in OPTIONS.iter().zip(seen).filter(|(_, s)| !s) {
            let help = format!("sparsecore(...) takes {}", OPTIONS.join(", "));
            self.error_help(kw, rank, &format!("missing sparsecore option: {o}"), help);
            failed = true;
        }
        let (Some(chip), false) = (chip, failed) else {
            return None;
        };
        let [Some(ids), Some(unique), Some(width), Some(batch)] = ints else {
            return None;
        };
        match SparseCoreConfig::new(chip, ids.0, unique.0, width.0, batch.0) {
            Ok(c) => Some(c),
            Err(e @ SparseCoreConfigError::NotPositive { name }) => {
                let at = [ids, unique, width, batch]
                    [OPTIONS[1..].iter().position(|o| *o == name).unwrap_or(0)]
                .1;
                self.error_at(at.0, at.1, rank, e.to_string());
                None
            }
            Err(e @ SparseCoreConfigError::Spmem(spmem)) => {
                // the same rule without a TileSpmem bound: the sizes the message is about
                let padded = padded_width(width.0);
                let tiles = chip.tiles_per_sc;
                let p = tile_spmem_plan(u64::MAX, tiles, batch.0.into(), padded.into()).ok()?;
                let rows = format!(
                    "{} has {tiles} tiles per SparseCore with {} bytes of TileSpmem each: a tile \
                     holds ceil(batch {} / {tiles}) = {} output rows of {} bytes (feature_width \
                     {} padded to {padded} f32)",
                    chip.name,
                    chip.tile_spmem_bytes,
                    batch.0,
                    p.samples_per_tile,
                    p.row_bytes,
                    width.0,
                );
                let help = match spmem {
                    // the output rows alone: the limits play no part
                    SpmemError::GatherTooLarge { .. } => {
                        format!("{rows} and stages 2 more rows; lower batch or feature_width")
                    }
                    SpmemError::FixedAllocations { .. } => {
                        let share = partition_share(tiles, ids.0, unique.0);
                        format!(
                            "{rows}, stages 2 more rows and holds its share of one partition, \
                             roundup8(ceil(max_ids_per_partition {} / {tiles})) = {} entries \
                             of 12 bytes (row id, column id, gain) and \
                             roundup8(ceil(max_unique_ids_per_partition {} / {tiles})) = {} \
                             unique ids of 4 bytes ({} bytes); lower batch, feature_width or \
                             the limits",
                            ids.0, share.entries, unique.0, share.unique_ids, share.bytes,
                        )
                    }
                };
                self.error_help(whole, rank, &e.to_string(), help);
                None
            }
        }
    }
}
