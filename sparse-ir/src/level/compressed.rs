//! `compressed`: only the coordinates that hold entries; `pos` (parent count + 1) bounds the
//! segments, which follow one another without gaps.

use super::{LevelCapabilities, PositionCount, PositionsArray};

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
