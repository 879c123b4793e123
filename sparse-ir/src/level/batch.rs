//! `batch`: a leading dense level whose coordinate selects an independent tensor; every buffer
//! below holds one batch after another, positions local to their batch (MLIR `batch`).

use crate::ir::LevelFormat;

use super::{LevelCapabilities, PositionCount, PositionsArray, Spelling};

/// The capabilities of `batch`.
pub(crate) const CAPABILITIES: LevelCapabilities = LevelCapabilities {
    positions: PositionsArray::None,
    coordinates: false,
    count: PositionCount::LevelSize,
    full: true,
    compact: true,
    branchless: false,
    locate: true,
    append: false,
    insert: true,
    batch: true,
};

/// How `batch` is written and which level properties it takes.
pub(crate) const SPELLING: Spelling = Spelling {
    name: "batch",
    shown: "batch",
    properties: &[],
    format: LevelFormat::Batch,
};
