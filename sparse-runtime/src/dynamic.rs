//! Dynamic storage (placeholder, being written).
/// placeholder
pub struct DynamicStorage;
