//! Canonical printer (being written).
