//! Reading input files defensively: only regular files (a symlink to `/dev/zero` or a FIFO is
//! refused, not read until memory runs out), under a size cap, and error messages that quote at
//! most a short excerpt of what was wrong.

use std::path::{Path, PathBuf};

use kiln_format::file::{self, FileError};

use crate::error::{Error, Result};

/// Largest database, manifest or list file kiln reads: twice MIOpen's largest shipped find-db
/// (60 MB of text). Reading a text database whole costs about 3.3 times its size (measured on
/// a 34 MB find-db: 110 MiB), so a file at the cap stays under 512 MiB.
pub const MAX_INPUT_BYTES: u64 = 128 << 20;

/// Longest key a database record may have (MIOpen's keys are under 200 bytes).
pub const MAX_KEY_BYTES: usize = 1024;

/// Checks that `path` is a regular file (after following links) of at most
/// [`MAX_INPUT_BYTES`]; returns its size.
pub fn check_regular(path: &Path) -> Result<u64> {
    file::check_regular(path, MAX_INPUT_BYTES).map_err(|e| file_error(path, e))
}

/// Reads a whole regular file of at most [`MAX_INPUT_BYTES`] (also if it grows while read).
pub fn read_input(path: &Path) -> Result<Vec<u8>> {
    file::read_capped(path, MAX_INPUT_BYTES).map_err(|e| file_error(path, e))
}

/// Reads a regular file as UTF-8 text; a decoding error names the line. A file named `*.zst`
/// is zstd-decompressed first (the committed find logs are), to at most [`MAX_INPUT_BYTES`].
pub fn read_text(path: &Path) -> Result<String> {
    let mut bytes = read_input(path)?;
    if path.extension().is_some_and(|e| e == "zst") {
        bytes = decompress_capped(path, &bytes)?;
    }
    file::utf8(bytes).map_err(|e| file_error(path, e))
}

/// zstd frames decompressed to at most [`MAX_INPUT_BYTES`]: a small bomb is refused, not
/// inflated until memory runs out.
fn decompress_capped(path: &Path, compressed: &[u8]) -> Result<Vec<u8>> {
    use std::io::Read;
    let corrupt = |e: std::io::Error| {
        Error::io(
            path,
            std::io::Error::other(format!("not a zstd stream: {e}")),
        )
    };
    let decoder = zstd::stream::read::Decoder::new(compressed).map_err(corrupt)?;
    let mut out = Vec::new();
    decoder
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(corrupt)?;
    if out.len() as u64 > MAX_INPUT_BYTES {
        return Err(Error::io(
            path,
            std::io::Error::other(format!("decompresses to more than {MAX_INPUT_BYTES} bytes")),
        ));
    }
    Ok(out)
}

/// kiln-embed's error for a file that was not read: the line of a decoding error, else an I/O
/// error naming the path.
fn file_error(path: &Path, e: FileError) -> Error {
    match e {
        FileError::Io(io) => Error::io(path, io),
        FileError::NotUtf8 { line } => Error::parse(path, line, "", "not UTF-8 text"),
        other => Error::io(path, std::io::Error::other(other.to_string())),
    }
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`: a failed
/// write leaves the old file whole (and a symlink at `path` is replaced, not written through).
/// Errors name the path.
pub fn write_atomic(path: &Path, bytes: impl AsRef<[u8]>) -> Result<()> {
    replace_with(stage(path, bytes.as_ref())?, path)
}

/// `bytes`, written whole and synced to a new temporary file beside `path`.
fn stage(path: &Path, bytes: &[u8]) -> Result<tempfile::NamedTempFile> {
    let mut tmp = temp_beside(path)?;
    std::io::Write::write_all(&mut tmp, bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| Error::io(path, e))?;
    Ok(tmp)
}

/// A new, empty temporary file in `path`'s directory, for a complete `path` to be written to and
/// then renamed over it ([`replace_with`]). Created with `O_CREAT | O_EXCL` under an
/// unpredictable name (a planted file or symlink makes the creation fail or is skipped, never
/// written through); removed again if dropped. Temporary files that earlier runs killed before
/// they could clean up (their process is gone) are removed first.
pub fn temp_beside(path: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let prefix = temp_prefix(path);
    remove_stale_temps(dir, &prefix);
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", std::process::id()))
        .tempfile_in(dir)
        .map_err(|e| Error::io(path, e))
}

/// Renames the finished temporary file over `path`, keeping the permissions of the file it
/// replaces (a new file gets 0644, as an ordinary `create` under the usual umask).
pub fn replace_with(tmp: tempfile::NamedTempFile, path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => m.permissions().mode() & 0o7777,
        _ => 0o644,
    };
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(|e| Error::io(path, e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// Writes every `(path, bytes)` or none: each is first staged whole in a temporary file beside
/// its path (a failure there, such as a full disk, leaves every path as it was), then the
/// staged files are renamed into place in order, each old file kept under a temporary name
/// until all are in; if a rename fails, the ones already renamed are rolled back.
pub fn write_all_or_nothing(files: &[(PathBuf, Vec<u8>)]) -> Result<()> {
    let staged = files
        .iter()
        .map(|(path, bytes)| stage(path, bytes))
        .collect::<Result<Vec<_>>>()?;
    // (path, the old file's backup, if there was an old file) of each file renamed so far.
    let mut done: Vec<(&Path, Option<tempfile::TempPath>)> = Vec::new();
    let mut failure = None;
    for ((path, _), tmp) in files.iter().zip(staged) {
        let backup = match backup_of(path) {
            Ok(b) => b,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        match replace_with(tmp, path) {
            Ok(()) => done.push((path, backup)),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let Some(failure) = failure else {
        return Ok(());
    };
    for (path, backup) in done.into_iter().rev() {
        match backup {
            Some(old) => {
                let _ = old.persist(path);
            }
            None => {
                let _ = std::fs::remove_file(path);
            }
        }
    }
    Err(failure)
}

/// A hard link to the file at `path` under a fresh temporary name beside it (removed when the
/// returned path is dropped), or `None` when there is no file there.
fn backup_of(path: &Path) -> Result<Option<tempfile::TempPath>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => {}
        _ => return Ok(None),
    }
    let reserved = temp_beside(path)?.into_temp_path();
    std::fs::remove_file(&reserved).map_err(|e| Error::io(path, e))?;
    std::fs::hard_link(path, &reserved).map_err(|e| Error::io(path, e))?;
    Ok(Some(reserved))
}

/// `.<name>.kiln-tmp-`: the start of every temporary name beside `path` (the writer's pid and
/// a random part follow).
fn temp_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".{name}.kiln-tmp-")
}

/// Removes `<prefix><pid>-*` files (and SQLite's `-journal` beside them) whose writer is no
/// longer running: what a SIGKILL left behind. A live writer's files are left alone.
fn remove_stale_temps(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten().take(100_000) {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let alive = pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists();
        if !alive && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

pub use kiln_format::text::excerpt;

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
        // A temporary file a killed writer left is removed; a live one's is kept.
        let stale = dir.path().join(".ok.txt.kiln-tmp-999999999-abc");
        let live = dir
            .path()
            .join(format!(".ok.txt.kiln-tmp-{}-abc", std::process::id()));
        std::fs::write(&stale, "x").unwrap();
        std::fs::write(&live, "x").unwrap();
        std::fs::write(&f, "abc").unwrap();
        write_atomic(&f, "abc").unwrap();
        assert_eq!(read_input(&f).unwrap(), b"abc");
        assert!(!stale.exists() && live.exists());
        // The replaced file's mode is kept; a new one is 0644.
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&f), 0o644);
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&f, "abcd").unwrap();
        assert_eq!(mode(&f), 0o600);
        // A symlink at the path is replaced, not written through.
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        write_atomic(&link, "new").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&link).unwrap(), b"new");
    }

    #[test]
    fn zst_text_is_decompressed_and_a_bad_stream_named() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("log.tsv.zst");
        std::fs::write(&good, zstd::encode_all(&b"a\tb\n"[..], 3).unwrap()).unwrap();
        assert_eq!(read_text(&good).unwrap(), "a\tb\n");
        let bad = dir.path().join("bad.tsv.zst");
        std::fs::write(&bad, b"a\tb\n").unwrap();
        let e = read_text(&bad).unwrap_err().to_string();
        assert!(
            e.contains("bad.tsv.zst") && e.contains("not a zstd stream"),
            "{e}"
        );
        // The same bytes without the extension are plain text.
        let plain = dir.path().join("plain.tsv");
        std::fs::write(&plain, b"a\tb\n").unwrap();
        assert_eq!(read_text(&plain).unwrap(), "a\tb\n");
    }

    #[test]
    fn several_files_are_written_all_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a.txt"),
            dir.path().join("b.txt"),
            dir.path().join("c"),
        );
        std::fs::write(&a, "old a").unwrap();
        // The last rename fails (c is a folder): a is rolled back, b (new) removed.
        std::fs::create_dir(&c).unwrap();
        std::fs::write(c.join("x"), "").unwrap();
        let files = [
            (a.clone(), b"new a".to_vec()),
            (b.clone(), b"new b".to_vec()),
            (c.clone(), b"new c".to_vec()),
        ];
        write_all_or_nothing(&files).unwrap_err();
        assert_eq!(std::fs::read(&a).unwrap(), b"old a");
        assert!(!b.exists());
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(
            left.len(),
            2,
            "no temporary or backup file is left: {left:?}"
        );
        // Without the obstacle, all are written.
        std::fs::remove_dir_all(&c).unwrap();
        write_all_or_nothing(&files).unwrap();
        for (p, bytes) in &files {
            assert_eq!(&std::fs::read(p).unwrap(), bytes);
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    }

    #[test]
    fn excerpts_are_short_and_keys_opaque() {
        let long = "A".repeat(100 << 20);
        assert!(excerpt(&long).len() < 110);
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
