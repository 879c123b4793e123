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
    /// A shape or coordinate tuple has the wrong number of dimensions.
    #[error("rank mismatch: expected {expected} dimensions, got {got}")]
    RankMismatch {
        /// Dimension rank of the encoding.
        expected: usize,
        /// Rank that was given.
        got: usize,
    },
    /// An input coordinate is not below its dimension size.
    #[error("entry {entry}: coordinate {coordinate} of dimension {dim} is out of range (size {size})")]
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
}
