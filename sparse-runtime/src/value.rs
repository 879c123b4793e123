//! Value types stored in sparse tensors.

use std::fmt::{Debug, Display};
use std::ops::{AddAssign, Mul};

/// A stored value: any copyable numeric type with zero, `+=` and `*`
/// (`f32`, `f64`, the integer types, `half::f16` and `half::bf16`).
///
/// `Display` must print the shortest round-trip form (Rust's float `Display` does), as used by
/// `sparse_tensor.print` and the CLI.
pub trait Value:
    Copy
    + PartialEq
    + Debug
    + Display
    + num_traits::Zero
    + AddAssign
    + Mul<Output = Self>
    + Send
    + Sync
    + 'static
{
}

impl<T> Value for T where
    T: Copy
        + PartialEq
        + Debug
        + Display
        + num_traits::Zero
        + AddAssign
        + Mul<Output = T>
        + Send
        + Sync
        + 'static
{
}
