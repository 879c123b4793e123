//! `dense`: every coordinate present, nothing stored; position = parent * size + coordinate.

use super::{LevelCapabilities, PositionCount, PositionsArray};

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
