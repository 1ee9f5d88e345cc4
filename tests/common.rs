//! Paths shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared/miopen-db`, MIOpen's real files (CI has it beside the checkout).
pub fn shared_db() -> PathBuf {
    repo().join("../shared/miopen-db")
}

/// The committed gfx942130 target folder.
pub fn gfx942130() -> PathBuf {
    repo().join("targets/gfx942130")
}
