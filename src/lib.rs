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
//! if let Some(solutions) = sel.target.find_solutions(&problem)? {
//!     for s in solutions.ranked()? {
//!         println!("{} {} ms", s.solver, s.time_ms);
//!     }
//! }
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod backend;
pub mod codeobject;
pub mod context;
pub mod db;
pub mod embedded;
pub mod error;
pub mod networks;
pub mod select;
pub mod solvers;
pub mod timing;
pub mod tune;
pub mod verify;

pub use db::{CodeObject, Solution, Solutions};
pub use embedded::{build_provenance, target, targets, EmbeddedTarget, InputFile};
pub use error::{Error, Result};
pub use kiln_format::{ConvProblem, ConvSpec, DataType, Direction, Layout, TargetId, Vendor};
pub use select::{named_target, select_target, Selection};
