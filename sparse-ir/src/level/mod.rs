//! Level formats as data: what each format stores and what it can do, one file per format
//! (TACO's `mode_format_*.cpp`, MLIR's `SparseTensorLevel`). The runtime and the code generator
//! ask these capabilities instead of testing a format's name.
//!
//! A new level format adds its file here with a [`LevelCapabilities`] constant and a
//! [`Spelling`], its `mod` line, its line in [`FORMATS`] (what the parser, the printer and the
//! help texts read) and its arm in [`LevelFormat::capabilities`](crate::ir::LevelFormat::capabilities).

pub(crate) mod batch;
pub(crate) mod compressed;
pub(crate) mod dense;
pub(crate) mod loose_compressed;
pub(crate) mod n_out_of_m;
pub(crate) mod singleton;

use crate::ir::LevelFormat;

/// Every level format's spelling, in the order help texts list them: the one registration of a
/// format's name (the parser reads a format name through [`spelled`], the printer writes
/// [`LevelFormat::mlir_name`](crate::ir::LevelFormat::mlir_name) from it).
pub const FORMATS: [&Spelling; 6] = [
    &dense::SPELLING,
    &batch::SPELLING,
    &compressed::SPELLING,
    &loose_compressed::SPELLING,
    &singleton::SPELLING,
    &n_out_of_m::SPELLING,
];

/// How a level format is written (MLIR's `LevelFormat` names) and which level properties MLIR
/// accepts on it: declared by the format's unit, next to its capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Spelling {
    /// The name (`compressed`), or the keyword before a parametric format's sizes (`structured`).
    pub name: &'static str,
    /// The name as help texts list it (`structured[n, m]`).
    pub shown: &'static str,
    /// The level properties the format accepts (`nonunique`, `nonordered`, `soa`, `high`): any
    /// other known property is `invalid level type: level format doesn't support the
    /// properties` (MLIR's message).
    pub properties: &'static [&'static str],
    /// The format; for a parametric one (n:m) its variant with placeholder sizes.
    pub format: LevelFormat,
}

/// The spelling named `name` (`"compressed"`, `"structured"`), if a format has it.
pub fn spelled(name: &str) -> Option<&'static Spelling> {
    FORMATS.iter().copied().find(|s| s.name == name)
}

/// The positions array a level format keeps (MLIR's `pos` buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PositionsArray {
    /// No positions: the segment under a parent is implied (dense, batch, singleton, n:m).
    None,
    /// `parent count + 1` entries: segment `q` is `pos[q] .. pos[q + 1]`, segments back to back
    /// (`compressed`).
    SegmentBounds,
    /// A `(lo, hi)` pair per parent: `2 x parent count` entries, gaps allowed between segments
    /// (`loose_compressed`).
    LoHiPairs,
}

/// How many positions a level has, given its parent's count (how counts grow during assembly
/// and what validation expects).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PositionCount {
    /// `parent count x level size`: every coordinate is present (dense, batch).
    LevelSize,
    /// As many as the coordinates stored for the level (compressed, loose_compressed).
    Stored,
    /// One per parent position (singleton).
    OnePerParent,
    /// `n` per parent position: a block of `m` holds exactly `n` entries (n:m).
    NPerParent,
}

/// What a level format stores and can do, as data. The flags follow TACO's mode-format
/// properties (`isFull`, `isCompact`, `isBranchless`, `hasLocate`, `hasAppend`, `hasInsert`);
/// ordered and unique are level *properties* (`nonordered`, `nonunique`) and live on
/// [`LevelType`](crate::ir::LevelType).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LevelCapabilities {
    /// The positions array the level keeps.
    pub positions: PositionsArray,
    /// The level stores coordinates (its own buffer, or its part of an AoS COO buffer).
    pub coordinates: bool,
    /// How the number of positions grows from the parent's.
    pub count: PositionCount,
    /// Every coordinate of the level is present under every parent (TACO `isFull`).
    pub full: bool,
    /// Positions are contiguous, segments back to back (TACO `isCompact`).
    pub compact: bool,
    /// Exactly one child per parent: iteration needs no loop (TACO `isBranchless`).
    pub branchless: bool,
    /// The position of a coordinate is computed, not searched (TACO `hasLocate`).
    pub locate: bool,
    /// Assembly appends coordinates in order (TACO `hasAppend`).
    pub append: bool,
    /// Assembly inserts by coordinate into preallocated storage (TACO `hasInsert`).
    pub insert: bool,
    /// A batch level: every buffer below gets a leading batch dimension (MLIR `batch`).
    pub batch: bool,
}
