//! What kiln's build time (`kiln-embed`, `build.rs`) and run time (`kiln`) agree on, in one
//! place: MIOpen's problem keys, target basenames, the kernel manifest and kdb key rule, the
//! kernels' argument block, the description of an embedded target, and the layout of the tables
//! compiled into the binary with their lookups. The generated code names only this crate's
//! paths. Nothing here allocates on a lookup.

#![warn(missing_docs)]

pub mod abi;
pub mod embedded;
pub mod file;
pub mod keybuf;
pub mod lookup;
pub mod manifest;
pub mod measured;
pub mod problem;
pub mod records;
pub mod table;
pub mod target;
pub mod text;

/// What the code `kiln-embed` generates needs from other crates, re-exported so that the
/// generated code names only `::kiln_format` paths (the runtime crate need not depend on them).
#[doc(hidden)]
pub mod codegen {
    pub use include_bytes_aligned::include_bytes_aligned;
    pub use phf;
}

pub use embedded::{CodeObjectKind, EmbeddedTarget, InputFile};
pub use keybuf::KeyBuf;
pub use lookup::{CodeObject, LookupError, Solution, Solutions};
pub use manifest::SolverEntry;
pub use problem::{
    Activation, ConvProblem, ConvSpec, DataType, Direction, Fusion, Layout, MathMode, ProblemError,
};
pub use table::TableKind;
pub use target::{TargetId, Vendor};
