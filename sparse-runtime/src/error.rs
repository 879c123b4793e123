//! Errors of the storage layer: every variant names what was wrong and where.

use thiserror::Error;

/// Which kind of index buffer a width overflow happened in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferKind {
    /// A positions (`pos`) array, width `posWidth`.
    Position,
    /// A coordinates (`crd`) array, width `crdWidth`.
    Coordinate,
}

impl std::fmt::Display for BufferKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BufferKind::Position => "position",
            BufferKind::Coordinate => "coordinate",
        })
    }
}

/// Why building, checking or using a sparse tensor failed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum StorageError {
    /// The encoding breaks a rule of the language: an [`Encoding`](sparse_ir::ir::Encoding)
    /// built in code is checked by [`sparse_ir::verify::verify`] before anything is stored, and
    /// gets MLIR's messages, as the parser gives them for the same text (all of them, in MLIR's
    /// order, each with its help when it has one).
    #[error("invalid encoding: {}", messages.join("; "))]
    InvalidEncoding {
        /// One message per broken rule.
        messages: Vec<String>,
    },
    /// A shape or coordinate tuple has the wrong number of dimensions.
    #[error("rank mismatch: expected {expected} dimensions, got {got}")]
    RankMismatch {
        /// Dimension rank of the encoding.
        expected: usize,
        /// Rank that was given.
        got: usize,
    },
    /// An input coordinate is not below its dimension size.
    #[error(
        "entry {entry}: coordinate {coordinate} of dimension {dim} is out of range (size {size})"
    )]
    CoordinateOutOfRange {
        /// Index of the offending entry in the input (0-based).
        entry: usize,
        /// Dimension (0-based).
        dim: usize,
        /// The coordinate given.
        coordinate: usize,
        /// The dimension size.
        size: usize,
    },
    /// A position or coordinate does not fit in the encoding's `posWidth`/`crdWidth`.
    #[error("level {level}: {kind} {value} does not fit in {width} bits")]
    WidthOverflow {
        /// Level whose buffer overflowed (0-based).
        level: usize,
        /// Positions or coordinates.
        kind: BufferKind,
        /// The value that does not fit.
        value: usize,
        /// The width in bits.
        width: u32,
    },
    /// A dense operand or input has the wrong number of elements.
    #[error("{operand}: expected {expected} elements, got {got}")]
    LengthMismatch {
        /// Which operand (`"x"`, `"y"`, `"dense input"`).
        operand: &'static str,
        /// Elements required.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// The shape's element count or a level size does not fit in `usize`.
    #[error("shape {shape:?} is too large to address")]
    ShapeOverflow {
        /// The dimension sizes.
        shape: Vec<usize>,
    },
    /// A shape differs from the static shape of a declared tensor type
    /// (`tensor<20x30xf32, ...>` fixes dimension 0 to 20 and dimension 1 to 30).
    #[error("dimension {dim} has size {got}, the declared tensor type fixes it to {expected}")]
    ShapeMismatch {
        /// Dimension (0-based).
        dim: usize,
        /// The static size.
        expected: usize,
        /// The size given.
        got: usize,
    },
    /// A blocked dimension's size is not a multiple of its block size (as PyTorch's BSR and
    /// MLIR's static block shapes require).
    #[error("dimension {dim} of size {size} is not a multiple of the block size {block}")]
    BlockShape {
        /// Dimension (0-based).
        dim: usize,
        /// Its size.
        size: usize,
        /// The block size (the constant of `floordiv`/`mod`).
        block: usize,
    },
    /// The encoding uses a feature this storage cannot hold yet.
    #[error("unsupported encoding: {reason}")]
    Unsupported {
        /// What is not supported.
        reason: String,
    },
    /// A storage invariant does not hold (see `validate`).
    #[error("level {level}: invariant '{invariant}' violated at position {position}: {detail}")]
    Invariant {
        /// Level (0-based).
        level: usize,
        /// Short name of the invariant (e.g. `"positions non-decreasing"`).
        invariant: &'static str,
        /// Index into the level's array where it fails.
        position: usize,
        /// What was found.
        detail: String,
    },
    /// An n:m block holds more than `n` entries.
    #[error("level {level}: row {row}, block {block} holds {count} entries, more than n = {n} of m = {m}")]
    NOutOfMOverflow {
        /// The n:m level (0-based).
        level: usize,
        /// The row: the level coordinate two levels above the n:m level (for
        /// `(i, j floordiv m, j mod m)` the matrix row `i`).
        row: usize,
        /// The block: the level coordinate directly above the n:m level (`j floordiv m`).
        block: usize,
        /// Entries found in the block.
        count: usize,
        /// Stored values per block.
        n: usize,
        /// Block size.
        m: usize,
    },
    /// ELL counting: a row holds more stored elements than there are slices.
    #[error("row {row} holds {count} stored elements, more than the {slices} ELL slices")]
    EllRowOverflow {
        /// The counted dimension's coordinate (the row).
        row: usize,
        /// Stored elements in the row (after merging duplicates).
        count: usize,
        /// Number of slices (the constant `K` of `c * K * i`).
        slices: usize,
    },
    /// Batches differ in their number of stored positions at a level (every batch must have the
    /// same nse, as PyTorch's batched CSR/BSR require).
    #[error("level {level}: batch {batch} stores {got} positions, batch 0 stores {expected}")]
    BatchNse {
        /// Level (0-based).
        level: usize,
        /// The first batch (0-based, flattened over the batch levels) that differs.
        batch: usize,
        /// Positions of batch 0.
        expected: usize,
        /// Positions of `batch`.
        got: usize,
    },
    /// A dimension slice is invalid for the parent tensor or its dynamic values are missing.
    #[error("dimension {dim}: {reason}")]
    Slice {
        /// Dimension (0-based).
        dim: usize,
        /// What is wrong.
        reason: String,
    },
    /// A conversion to or from a Rust peer (`interop` module: sprs, nalgebra-sparse, faer,
    /// ndarray) cannot be made: the encoding is not the layout the peer holds, or the peer's
    /// checked constructor refused the arrays (its message).
    #[error("{peer}: {reason}")]
    Interop {
        /// The peer crate (`"sprs"`, `"nalgebra-sparse"`, `"faer"`, `"ndarray"`).
        peer: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A generated kernel on integer values divided by zero (the interpreter's error too;
    /// floats follow IEEE instead). Integer division otherwise wraps (`i32::MIN / -1` is
    /// `i32::MIN`), as MLIR's `arith.divsi`/`divui` are lowered.
    #[error("integer division by zero")]
    DivisionByZero,
    /// A stored entry of a format whose encoding has an `explicitVal` (a pattern: no values
    /// array, every stored entry holds that constant) would hold another value: an input entry
    /// of `from_coo` / `from_dense` (after duplicates are summed by a unique last level), an
    /// explicit zero the format stores (a BSR block's fill, n:m padding, the elements of a dense
    /// last level), or a value given to `DynamicStorage::from_raw_parts`. Values are named in
    /// their `Display` form.
    #[error("entry at {coords:?}: value {value} differs from explicitVal {explicit}")]
    ExplicitValueMismatch {
        /// The entry's dimension coordinates.
        coords: Vec<usize>,
        /// The value it would hold.
        value: String,
        /// The encoding's `explicitVal`, converted to the value type.
        explicit: String,
    },
    /// A stored integer of a uniform quantized format (`!quant.uniform<i8<-100:100>:f32,
    /// ...>`) lies outside the type's storage range `[storage_min, storage_max]` (StableHLO's
    /// constraint on quantized values): a value given to a generated quantized struct's
    /// `from_coo`, `from_dense`, `from_raw_parts` or `convert`, first in storage order.
    #[error(
        "entry at {coords:?}: stored integer {value} is outside the storage range [{min}, {max}]"
    )]
    StorageRange {
        /// The entry's dimension coordinates.
        coords: Vec<usize>,
        /// The stored integer.
        value: i64,
        /// storage_min.
        min: i64,
        /// storage_max.
        max: i64,
    },
    /// Raw parts given to `from_raw_parts` do not have the encoding's shape of arrays (which
    /// levels have positions or coordinates, widths, number of levels).
    #[error("raw parts, level {level}: {reason}")]
    RawParts {
        /// Level (0-based).
        level: usize,
        /// What is wrong.
        reason: String,
    },
}
