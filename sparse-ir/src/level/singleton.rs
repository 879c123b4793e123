//! `singleton`: one coordinate per parent position, no positions (the trailing levels of a COO
//! region).

use super::{LevelCapabilities, PositionCount, PositionsArray};

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
