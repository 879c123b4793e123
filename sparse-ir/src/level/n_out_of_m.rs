//! n:m (`structured[n, m]`): exactly `n` entries per block of `m`, each with its in-block
//! coordinate; no positions (the segment of block `q` is `q * n .. (q + 1) * n`).

use crate::ir::LevelFormat;

use super::{LevelCapabilities, PositionCount, PositionsArray, Spelling};

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

/// How `structured[n, m]` is written and which level properties it takes.
pub(crate) const SPELLING: Spelling = Spelling {
    name: "structured",
    shown: "structured[n, m]",
    properties: &[],
    format: LevelFormat::NOutOfM { n: 0, m: 0 },
};
