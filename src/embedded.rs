//! The targets compiled into this binary: the code `build.rs` generates through `kiln-embed`
//! (every type it names is `kiln_format`'s), and accessors over it.

use kiln_format::{EmbeddedTarget, SolverEntry};

mod generated {
    include!(concat!(env!("OUT_DIR"), "/kiln_embedded.rs"));
}

/// Every embedded target, sorted by basename.
pub fn targets() -> &'static [EmbeddedTarget] {
    generated::TARGETS
}

/// An embedded target by basename or alias.
pub fn target(name: &str) -> Option<&'static EmbeddedTarget> {
    generated::TARGET_INDEX
        .get(name)
        .and_then(|&i| generated::TARGETS.get(i))
}

/// How this binary's tables were built: kiln version, rustc, profile, zstd, table format.
pub fn build_provenance() -> &'static [(&'static str, &'static str)] {
    generated::BUILD_PROVENANCE
}

/// The solvers of `kernels/manifest.toml`, as compiled into every kdb.
pub fn kernel_manifest() -> &'static [SolverEntry] {
    generated::KERNEL_MANIFEST
}

/// Data types every kernel is compiled for.
pub fn kernel_data_types() -> &'static [&'static str] {
    generated::KERNEL_DATA_TYPES
}
