//! n:m (`structured[n, m]`): exactly `n` entries per block of `m`, each with its in-block
//! coordinate; no positions (the segment of block `q` is `q * n .. (q + 1) * n`).

use super::{LevelCapabilities, PositionCount, PositionsArray};

/// The capabilities of n:m.
pub(crate) const CAPABILITIES: LevelCapabilities = LevelCapabilities {
    positions: PositionsArray::None,
    coordinates: true,
    count: PositionCount::NPerParent,
    full: false,
    compact: true,
    branchless: false,
    locate: false,
    append: true,
    insert: false,
    batch: false,
};
