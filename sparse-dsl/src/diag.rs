//! Diagnostics (being written).
