//! kiln's runtime error: what went wrong and where (which target, which table, which key).

use core::fmt;

use kiln_format::records::PayloadError;
use kiln_format::table::TableError;
use kiln_format::ProblemError;

/// Runtime errors. Creating one may allocate; successful lookups never do.
#[derive(Debug)]
pub enum Error {
    /// An embedded table is damaged (digest mismatch, bad bounds) or unreadable.
    Table {
        /// Target basename.
        target: &'static str,
        /// `find-db`, `perf-db`, `kdb`.
        table: &'static str,
        /// What failed.
        source: TableError,
    },
    /// A record payload is damaged.
    Payload {
        /// Target basename.
        target: &'static str,
        /// Table.
        table: &'static str,
        /// What failed.
        source: PayloadError,
    },
    /// A problem key that does not parse.
    BadKey {
        /// The key text.
        key: String,
        /// Which field is wrong.
        source: ProblemError,
    },
    /// A problem description that is not valid.
    BadProblem(ProblemError),
    /// No embedded target fits the device.
    NoTarget {
        /// Device arch.
        arch: String,
        /// Device CU/SM count.
        compute_units: u32,
        /// Basenames compiled into this binary.
        embedded: Vec<&'static str>,
    },
    /// A named target that is not compiled in.
    UnknownTarget {
        /// The name given.
        name: String,
        /// Basenames and aliases compiled into this binary.
        embedded: Vec<&'static str>,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Table { target, table, source } => write!(f, "target {target} {table}: {source}"),
            Error::Payload { target, table, source } => write!(f, "target {target} {table}: {source}"),
            Error::BadKey { key, source } => write!(f, "bad problem key '{key}': {source}"),
            Error::BadProblem(e) => write!(f, "bad convolution problem: {e}"),
            Error::NoTarget { arch, compute_units, embedded } => write!(
                f,
                "no embedded target for {arch} with {compute_units} compute units; this binary embeds [{}] \
                 (enable the target's cargo feature, e.g. --features <basename>)",
                embedded.join(", ")
            ),
            Error::UnknownTarget { name, embedded } => write!(
                f,
                "target '{name}' is not compiled into this binary; available: [{}]",
                embedded.join(", ")
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Table { source, .. } => Some(source),
            Error::Payload { source, .. } => Some(source),
            Error::BadKey { source, .. } => Some(source),
            Error::BadProblem(e) => Some(e),
            _ => None,
        }
    }
}

/// Result alias.
pub type Result<T, E = Error> = core::result::Result<T, E>;
