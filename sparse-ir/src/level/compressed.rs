//! `compressed`: only the coordinates that hold entries; `pos` (parent count + 1) bounds the
//! segments, which follow one another without gaps.

use crate::ir::LevelFormat;

use super::{LevelCapabilities, PositionCount, PositionsArray, Spelling};

/// The capabilities of `compressed`.
pub(crate) const CAPABILITIES: LevelCapabilities = LevelCapabilities {
    positions: PositionsArray::SegmentBounds,
    coordinates: true,
    count: PositionCount::Stored,
    full: false,
    compact: true,
    branchless: false,
    locate: false,
    append: true,
    insert: false,
    batch: false,
};

/// How `compressed` is written and which level properties it takes.
pub(crate) const SPELLING: Spelling = Spelling {
    name: "compressed",
    shown: "compressed",
    properties: &["nonunique", "nonordered", "soa", "high"],
    format: LevelFormat::Compressed,
};
