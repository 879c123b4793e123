//! The workspace's integration tests of the facade `sparse` (generated formats against the dynamic
//! storage and dense computation, conformance vectors, raw parts, slices, tensor types, compile
//! errors with trybuild), in their own package so that their dev-dependencies (proptest, trybuild)
//! stay out of the facade's examples and of users' builds. The tests are in `tests/`; this library
//! is empty.
