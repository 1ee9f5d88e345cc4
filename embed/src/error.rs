//! kiln-embed's error type: every variant says which file (and line, key or row) was wrong.

use std::fmt;
use std::path::PathBuf;

/// Errors from reading, validating, fetching or packing databases.
#[derive(Debug)]
pub enum Error {
    /// A text database line that does not parse.
    Parse {
        /// File (or label) being read.
        file: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The offending text (shortened).
        text: String,
        /// What is wrong.
        reason: String,
    },
    /// A SQLite database that cannot be read as MIOpen's schema.
    Sqlite {
        /// File.
        file: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A kernel-db row whose blob or hash is wrong.
    Kdb {
        /// File.
        file: PathBuf,
        /// `kernel_name` / `kernel_args` of the row.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A file or directory that cannot be read or written.
    Io {
        /// Path.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// A fetched or local file whose sha256 differs from its pin.
    PinMismatch {
        /// File name.
        file: String,
        /// Where it came from.
        origin: String,
        /// Pinned digest.
        expected: String,
        /// Digest of what was read.
        actual: String,
    },
    /// A download that failed, or that cannot happen (offline, no cached copy).
    Fetch {
        /// URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// A target folder or `target.toml` that is wrong.
    Target {
        /// Target basename.
        target: String,
        /// What is wrong.
        reason: String,
    },
    /// Packing failed (duplicate keys, too many strings, compression error).
    Pack {
        /// Which table.
        table: String,
        /// What went wrong.
        reason: String,
    },
}

impl Error {
    /// Wraps an I/O error with its path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn parse(
        file: &std::path::Path,
        line: usize,
        text: &str,
        reason: impl Into<String>,
    ) -> Self {
        Error::Parse {
            file: file.to_path_buf(),
            line,
            text: kiln_format::text::excerpt(text),
            reason: reason.into(),
        }
    }

    pub(crate) fn sqlite(file: &std::path::Path, reason: impl fmt::Display) -> Self {
        Error::Sqlite {
            file: file.to_path_buf(),
            reason: reason.to_string(),
        }
    }
}

/// A path as messages show it: control characters escaped.
fn shown(path: &std::path::Path) -> String {
    kiln_format::text::escaped(&path.to_string_lossy())
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Parse { file, line, text, reason } => {
                write!(f, "{}:{}: {}: '{}'", shown(file), line, reason, text)
            }
            Error::Sqlite { file, reason } => write!(f, "{}: {}", shown(file), reason),
            Error::Kdb { file, key, reason } => write!(f, "{}: kernel {}: {}", shown(file), key, reason),
            Error::Io { path, source } => write!(f, "{}: {}", shown(path), source),
            Error::PinMismatch { file, origin, expected, actual } => write!(
                f,
                "{file} from {origin}: sha256 {actual} does not match the pin {expected} kept in the repo"
            ),
            Error::Fetch { url, reason } => write!(f, "fetching {url}: {reason}"),
            Error::Target { target, reason } => write!(f, "target {target}: {reason}"),
            Error::Pack { table, reason } => write!(f, "packing {table}: {reason}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;
