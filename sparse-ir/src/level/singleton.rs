//! `singleton`: one coordinate per parent position, no positions (the trailing levels of a COO
//! region).

use crate::ir::LevelFormat;

use super::{LevelCapabilities, PositionCount, PositionsArray, Spelling};

/// The capabilities of `singleton`.
pub(crate) const CAPABILITIES: LevelCapabilities = LevelCapabilities {
    positions: PositionsArray::None,
    coordinates: true,
    count: PositionCount::OnePerParent,
    full: false,
    compact: true,
    branchless: true,
    locate: false,
    append: true,
    insert: false,
    batch: false,
};

/// How `singleton` is written and which level properties it takes.
pub(crate) const SPELLING: Spelling = Spelling {
    name: "singleton",
    shown: "singleton",
    properties: &["nonunique", "nonordered", "soa"],
    format: LevelFormat::Singleton,
};
