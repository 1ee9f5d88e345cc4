//! Problem lists: one find-db key per line, `#` comments, blank lines ignored (the format of
//! `ci/problems/*.txt`, read by `kiln selftest --problems` and `kiln-tools find`, `bench` and
//! `regret`). Read under the same rules as kiln's database readers: regular files only, a size
//! cap, duplicates dropped in linear time, and errors that quote at most a short escaped excerpt
//! of the bad line.

use std::collections::HashSet;
use std::path::Path;

use kiln_format::file::{self, FileError};
use kiln_format::text::{escaped, excerpt};
use kiln_format::ConvProblem;

/// Largest problem list read (a key is under 100 bytes: this is some 150,000 problems).
pub const MAX_LIST_BYTES: u64 = 16 << 20;

/// Reads and parses the problem list at `path`. Devices, FIFOs and directories are refused
/// before they are opened for reading, and so is a file over [`MAX_LIST_BYTES`] (also one that
/// grows past it while read). A key listed twice is kept once, at its first line.
pub fn read(path: &Path) -> Result<Vec<(String, ConvProblem)>, String> {
    let shown = escaped(&path.to_string_lossy());
    let text = file::read_capped(path, MAX_LIST_BYTES)
        .and_then(file::utf8)
        .map_err(|e| match e {
            FileError::NotUtf8 { line } => format!("{shown}:{line}: not UTF-8 text"),
            other => format!("{shown}: {other}"),
        })?;
    parse(&text, &shown)
}

/// Parses a problem list's text; `origin` (a file name) starts every error, which names the
/// line and quotes an escaped excerpt of it: `list.txt:3: key: ...: '64-56-...'`. Keys stay as
/// written, in order of first appearance; repeats are dropped.
pub fn parse(text: &str, origin: &str) -> Result<Vec<(String, ConvProblem)>, String> {
    let mut out = Vec::new();
    let mut seen: HashSet<ConvProblem> = HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let p = ConvProblem::from_find_db_key(line)
            .map_err(|e| format!("{origin}:{}: {e}: '{}'", i + 1, excerpt(line)))?;
        if seen.insert(p) {
            out.push((line.to_string(), p));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F";

    #[test]
    fn parses_keys_and_names_the_bad_line() {
        let list = parse(&format!("# ResNet\n\n  {KEY}  \n{KEY}\n"), "l.txt").unwrap();
        assert_eq!(list.len(), 1, "the repeat is dropped");
        assert_eq!(list[0].0, KEY);
        assert_eq!(list[0].1.find_db_key().as_str(), KEY);
        let err = parse(&format!("{KEY}\n64-56-x\n"), "l.txt").unwrap_err();
        assert!(err.starts_with("l.txt:2: "), "{err}");
        assert!(err.ends_with("'64-56-x'"), "{err}");
    }

    #[test]
    fn a_bad_line_is_quoted_short_and_escaped() {
        let line = format!("\u{1b}]0;x\u{7}{}", "9".repeat(100 << 20));
        let err = parse(&line, "l.txt").unwrap_err();
        assert!(err.len() < 400, "{} bytes", err.len());
        assert!(err.contains("\\u{1b}]0;x\\u{7}999"), "{err}");
        assert!(!err.contains('\u{1b}'));
    }

    #[test]
    fn large_lists_deduplicate_in_linear_time() {
        // 200,000 lines of 2,000 distinct problems: quadratic de-duplication took minutes.
        let mut text = String::new();
        for i in 0..200_000 {
            text.push_str(&format!(
                "{}-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F\n",
                1 + i % 2000
            ));
        }
        let start = std::time::Instant::now();
        assert_eq!(parse(&text, "l.txt").unwrap().len(), 2000);
        assert!(start.elapsed().as_secs() < 20);
    }

    #[test]
    fn only_regular_files_under_the_cap_are_read() {
        for special in ["/dev/zero", "/dev/null", "/"] {
            let e = read(Path::new(special)).unwrap_err();
            assert!(e.contains("not a regular file"), "{special}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.txt");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        assert!(read(&fifo).unwrap_err().contains("not a regular file"));
        let sparse = dir.path().join("sparse.txt");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(2 << 30)
            .unwrap();
        let e = read(&sparse).unwrap_err();
        assert!(e.contains("above the 16 MiB input cap"), "{e}");
        let ok = dir.path().join("ok.txt");
        std::fs::write(&ok, format!("{KEY}\n")).unwrap();
        assert_eq!(read(&ok).unwrap().len(), 1);
        std::fs::write(&ok, b"\xff\n").unwrap();
        assert!(read(&ok).unwrap_err().ends_with("ok.txt:1: not UTF-8 text"));
    }
}
