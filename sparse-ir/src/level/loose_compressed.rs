//! `loose_compressed`: like compressed with a `(lo, hi)` pair per parent, so segments may leave
//! gaps (room to grow in place).

use super::{LevelCapabilities, PositionCount, PositionsArray};

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
