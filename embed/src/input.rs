//! Reading input files defensively: only regular files (a symlink to `/dev/zero` or a FIFO is
//! refused, not read until memory runs out), under a size cap, and error messages that quote at
//! most a short excerpt of what was wrong.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};

/// Largest database, manifest or list file kiln reads (MIOpen's largest shipped find-db is
/// 60 MB of text).
pub const MAX_INPUT_BYTES: u64 = 1 << 30;

/// Longest key a database record may have (MIOpen's keys are under 200 bytes).
pub const MAX_KEY_BYTES: usize = 1024;

/// Checks that `path` is a regular file (after following links) of at most
/// [`MAX_INPUT_BYTES`]; returns its size.
pub fn check_regular(path: &Path) -> Result<u64> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::io(
            path,
            std::io::Error::other(
                "not a regular file (devices, FIFOs and directories are refused)",
            ),
        ));
    }
    if meta.len() > MAX_INPUT_BYTES {
        return Err(Error::io(
            path,
            std::io::Error::other(format!(
                "{} bytes, above the {} MiB input cap",
                meta.len(),
                MAX_INPUT_BYTES >> 20
            )),
        ));
    }
    Ok(meta.len())
}

/// Reads a whole regular file of at most [`MAX_INPUT_BYTES`] (also if it grows while read).
pub fn read_input(path: &Path) -> Result<Vec<u8>> {
    let len = check_regular(path)?;
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut out = Vec::with_capacity(len as usize);
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::io(path, e))?;
    if out.len() as u64 > MAX_INPUT_BYTES {
        return Err(Error::io(
            path,
            std::io::Error::other("grew past the input cap while being read"),
        ));
    }
    Ok(out)
}

/// Reads a regular file as UTF-8 text; a decoding error names the line.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = read_input(path)?;
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        Error::parse(path, line, "", "not UTF-8 text")
    })
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`: a failed
/// write leaves the old file whole (and a symlink at `path` is replaced, not written through).
/// Errors name the path.
pub fn write_atomic(path: &Path, bytes: impl AsRef<[u8]>) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.kiln-tmp{}", std::process::id()));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
}

/// At most 60 characters of `s`, with `…` when cut: what error messages quote.
pub fn excerpt(s: &str) -> String {
    const MAX: usize = 60;
    match s.char_indices().nth(MAX) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}… ({} bytes)", &s[..cut], s.len()),
    }
}

/// A database key as MIOpen's readers treat it: opaque text. Every row MIOpen writes is
/// accepted here (transposed problems, negative sizes, old 3-D forms); whether kiln can run the
/// problem is asked when it is resolved. Only what would break the file format is refused.
pub fn check_key(key: &str) -> std::result::Result<(), String> {
    if key.is_empty() {
        return Err("empty key".into());
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(format!(
            "key of {} bytes (at most {MAX_KEY_BYTES})",
            key.len()
        ));
    }
    if let Some(c) = key
        .chars()
        .find(|c| !c.is_ascii_graphic() || matches!(c, '=' | ';'))
    {
        return Err(format!(
            "key '{}' contains {c:?}, which no MIOpen key holds",
            excerpt(key)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_under_the_cap_are_read() {
        let e = read_input(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("x.fdb.txt");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(read_input(&link)
            .unwrap_err()
            .to_string()
            .contains("not a regular file"));
        assert!(read_input(dir.path()).is_err());
        let f = dir.path().join("ok.txt");
        std::fs::write(&f, "abc").unwrap();
        assert_eq!(read_input(&f).unwrap(), b"abc");
    }

    #[test]
    fn excerpts_are_short_and_keys_opaque() {
        let long = "A".repeat(100 << 20);
        assert!(excerpt(&long).len() < 100);
        assert_eq!(excerpt("short"), "short");
        // Real MIOpen rows kiln cannot run are still valid keys.
        for k in [
            "2x4x2x2x1x3x3x1x3x32x0x0x0x2x2x0x1x1x0x0x1xNCHWxFP32xF",
            "2x1024x-5x-5x1x7x7x1x256x400x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP32xB",
            "1024-4-14-14-1x1x1-2048-2-7-7-4-0x0-2x2x2-1x1x1-0-NCHW-FP32-F",
        ] {
            assert_eq!(check_key(k), Ok(()));
        }
        assert!(check_key("").is_err());
        assert!(check_key("a b").is_err());
        assert!(check_key(&"1".repeat(2000)).is_err());
    }
}
