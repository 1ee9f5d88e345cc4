//! What kiln's build time (`kiln-embed`) and run time (`kiln`) agree on, in one place:
//! MIOpen's problem keys, target basenames, and the layout of the tables compiled into the
//! binary. Nothing here allocates on a lookup.

#![warn(missing_docs)]

pub mod heuristic;
pub mod keybuf;
pub mod problem;
pub mod records;
pub mod table;
pub mod target;

pub use keybuf::KeyBuf;
pub use problem::{ConvProblem, ConvSpec, DataType, Direction, Layout, ProblemError};
pub use target::{TargetId, Vendor};
