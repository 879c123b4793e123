//! Matrix Market reader (placeholder, being written).
