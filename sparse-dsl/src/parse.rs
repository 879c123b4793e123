//! Parser and verifier (being written).
