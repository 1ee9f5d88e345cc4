//! kiln's build-time half. Reads and writes MIOpen's database formats (kdb, find-db, perf-db in
//! SQLite and text form), fetches target files pinned by sha256, and packs them into the
//! perfect-hash tables that `build.rs` compiles into the `kiln` binary.

#![warn(missing_docs)]

pub mod codegen;
pub mod compile;
pub mod error;
pub mod fetch;
pub mod finddb;
pub mod input;
pub mod kdb;
pub mod kdbbuild;
pub mod library;
pub mod measured;
pub mod models;
pub mod pack;
pub mod perfdb;
mod sqlitefile;
pub mod target;
mod textdb;

pub use error::{Error, Result};
