//! Verifier ranks: MLIR checks rules in this order and reports the first failure; diagnostics are
//! sorted by declaration, then rank, then position.

pub const POS_WIDTH: u32 = 10;
pub const CRD_WIDTH: u32 = 11;
/// The cross-level rules of `sparse_ir::verify::verify_level_types`, in its order: the k-th
/// error gets `LVL_TYPES + k` (k <= MAX_DIAGS).
pub const LVL_TYPES: u32 = 20;
pub const EMPTY: u32 = 200;
pub const INFER: u32 = 201;
pub const INVERSE: u32 = 202;
pub const DIM_GT_LVL: u32 = 203;
pub const SLICES: u32 = 204;
pub const TENSOR: u32 = 300;
/// The `sparsecore(...)` clause (not MLIR): after everything MLIR checks.
pub const SPARSECORE: u32 = 400;
