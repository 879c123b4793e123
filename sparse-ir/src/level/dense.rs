//! `dense`: every coordinate present, nothing stored; position = parent * size + coordinate.

use crate::ir::LevelFormat;

use super::{LevelCapabilities, PositionCount, PositionsArray, Spelling};

/// The capabilities of `dense`.
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
    batch: false,
};

/// How `dense` is written and which level properties it takes.
pub(crate) const SPELLING: Spelling = Spelling {
    name: "dense",
    shown: "dense",
    properties: &[],
    format: LevelFormat::Dense,
};
