//! Test support for rdbx: a libmdbx oracle (through `mdbx-sys`), a parser for
//! `mdbx_dump`/`mdbx_stat` text, a small operation-script format shared with the
//! `mdbx-oracle` binary, a deterministic PRNG, and LMDB (a benchmark peer).
//!
//! The oracle is a development tool only: the engine never links libmdbx.
#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(feature = "engine")]
pub mod engine;
pub mod golden;
pub mod lmdb;
pub mod model;
pub mod ops;
pub mod oracle;
pub mod rng;
pub mod schema;
