//! `loose_compressed`: like compressed with a `(lo, hi)` pair per parent, so segments may leave
//! gaps (room to grow in place).

use crate::ir::LevelFormat;

use super::{LevelCapabilities, PositionCount, PositionsArray, Spelling};

/// The capabilities of `loose_compressed`.
pub(crate) const CAPABILITIES: LevelCapabilities = LevelCapabilities {
    positions: PositionsArray::LoHiPairs,
    coordinates: true,
    count: PositionCount::Stored,
    full: false,
    compact: false,
    branchless: false,
    locate: false,
    append: true,
    insert: false,
    batch: false,
};

/// How `loose_compressed` is written and which level properties it takes.
pub(crate) const SPELLING: Spelling = Spelling {
    name: "loose_compressed",
    shown: "loose_compressed",
    properties: &["nonunique", "nonordered", "soa", "high"],
    format: LevelFormat::LooseCompressed,
};
