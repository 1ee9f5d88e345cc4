//! Input files as every kiln reader takes them, at build time (databases, manifests) and in the
//! binaries (problem lists, the HIP library checked before it is loaded): regular files only (a
//! symlink to `/dev/zero`, a FIFO or a directory is refused before it is opened for reading),
//! under a size cap that also holds when the file grows while read.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// Why an input file was not read.
#[derive(Debug)]
pub enum FileError {
    /// The file system's own error.
    Io(std::io::Error),
    /// A device, FIFO, directory or socket.
    NotRegular,
    /// Larger than the cap.
    TooLarge {
        /// Its size.
        len: u64,
        /// The cap.
        cap: u64,
    },
    /// It grew past the cap while being read.
    Grew,
    /// Not UTF-8 from this 1-based line on.
    NotUtf8 {
        /// The first line that is not.
        line: usize,
    },
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Io(e) => write!(f, "{e}"),
            FileError::NotRegular => {
                f.write_str("not a regular file (devices, FIFOs and directories are refused)")
            }
            FileError::TooLarge { len, cap } if cap.is_multiple_of(1 << 20) => {
                write!(f, "{len} bytes, above the {} MiB input cap", cap >> 20)
            }
            // A cap that is no whole MiB (an exact size a reader expects) says its bytes.
            FileError::TooLarge { len, cap } => {
                write!(f, "{len} bytes, above the {cap}-byte input cap")
            }
            FileError::Grew => f.write_str("grew past the input cap while being read"),
            FileError::NotUtf8 { line } => write!(f, "{line}: not UTF-8 text"),
        }
    }
}

impl std::error::Error for FileError {}

/// Checks that `path` is a regular file (after following links) of at most `cap` bytes;
/// returns its size.
pub fn check_regular(path: &Path, cap: u64) -> Result<u64, FileError> {
    let meta = std::fs::metadata(path).map_err(FileError::Io)?;
    if !meta.is_file() {
        return Err(FileError::NotRegular);
    }
    if meta.len() > cap {
        return Err(FileError::TooLarge {
            len: meta.len(),
            cap,
        });
    }
    Ok(meta.len())
}

/// Reads a whole regular file of at most `cap` bytes.
pub fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, FileError> {
    let len = check_regular(path, cap)?;
    let file = std::fs::File::open(path).map_err(FileError::Io)?;
    let mut out = Vec::with_capacity(len as usize);
    file.take(cap + 1)
        .read_to_end(&mut out)
        .map_err(FileError::Io)?;
    if out.len() as u64 > cap {
        return Err(FileError::Grew);
    }
    Ok(out)
}

/// The bytes as UTF-8 text; an error names the first line that is not.
pub fn utf8(bytes: Vec<u8>) -> Result<String, FileError> {
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        FileError::NotUtf8 { line }
    })
}
