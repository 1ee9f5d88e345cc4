//! kiln: an embedded, firmware-style GPU kernel runtime.
//!
//! At build time (`build.rs` + `kiln-embed`) the MIOpen-format databases of every enabled target
//! feature are validated, compressed and indexed with perfect hashes, then compiled into the
//! binary. At run time nothing is read from the filesystem:
//!
//! ```
//! use kiln::{ConvProblem, ConvSpec};
//! // Pick the embedded target for a device (exact basename, else closest CU count).
//! # if let Ok(sel) = kiln::select_target("gfx942", 304) {
//! let problem = ConvProblem::new(ConvSpec { n: 16, c: 1008, k: 192, input: [1, 14, 14], ..ConvSpec::default() })?;
//! if let Some(solutions) = sel.target.find_record(&problem)? {
//!     for s in solutions.ranked()? {
//!         println!("{} {} ms", s.solver, s.time_ms);
//!     }
//! }
//! // kiln's own plan: what it would run, best first, and where each rank came from.
//! for r in kiln::resolve::resolve(sel.target, &problem)?.iter() {
//!     println!("{} [{}] {:.3} ms ({})", r.variant.solver.id(), r.variant.params, r.time_ms, r.provenance.name());
//! }
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! On a device: [`backend::open`] -> [`context::Context::new`] -> `find_solutions` ->
//! `prepare` -> `run` (see the README).
//!
//! Features: `cuda` and `hip` (the backends, both loaded at run time), one per target
//! (`sm_90_132`, `gfx942130`, ... and aliases), and `harness` (the CPU reference, checked runs,
//! event timing and ResNet-50's layers, for the `kiln` binary's selftest and demo).

#![warn(missing_docs)]

pub mod backend;
pub mod codeobject;
pub mod context;
pub mod driver;
pub mod elements;
pub mod embedded;
pub mod error;
#[cfg(feature = "harness")]
pub mod harness;
pub mod invoker;
pub mod logging;
pub mod net;
pub mod ops;
pub mod resolve;
pub mod select;
pub mod solvers;

/// The build/run contract crate (problem keys, manifest, tables), for callers that need more
/// than the re-exports below.
pub use kiln_format as format;

pub use embedded::{build_provenance, target, targets};
pub use error::{Error, Result, RunError};
pub use kiln_format::{
    Activation, CodeObject, CodeObjectKind, ConvProblem, ConvSpec, DataType, Direction,
    EmbeddedTarget, Fusion, InputFile, Layout, MathMode, Solution, Solutions, TableKind, TargetId,
    Vendor,
};
pub use select::{named_target, select_target, Selection};
