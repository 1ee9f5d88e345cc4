//! The line loop shared by MIOpen's text databases (find-db `.fdb.txt`, perf-db `.db.txt`):
//! one `KEY=...` record per line, `\r\n` tolerated, blank lines skipped, a key at most once,
//! and the last line ended by a newline as MIOpen always writes it (a file cut short is refused,
//! not read as fewer records); every error names file:line and the line.

use std::collections::HashSet;
use std::path::Path;

use crate::error::{Error, Result};

/// Parses each non-blank `KEY=...` line of `text` with `parse_line`, refusing a key seen before.
pub(crate) fn parse_lines<'t, R>(
    text: &'t str,
    file: &Path,
    parse_line: impl Fn(&'t str) -> std::result::Result<R, String>,
) -> Result<Vec<R>> {
    if !text.is_empty() && !text.ends_with('\n') {
        let last = text.rsplit('\n').next().unwrap_or_default();
        return Err(Error::parse(
            file,
            text.bytes().filter(|&b| b == b'\n').count() + 1,
            last,
            "truncated: the last line has no newline at its end (MIOpen ends every line with one)",
        ));
    }
    let mut records = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for (idx, raw) in text.split('\n').enumerate() {
        let line_no = idx + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.is_empty() {
            continue;
        }
        let record =
            parse_line(line).map_err(|reason| Error::parse(file, line_no, line, reason))?;
        // Both formats are `KEY=...`, and the line parsed, so it has its '='. The set borrows
        // the keys from `text` (no copy of every key).
        let key = line.split_once('=').map_or(line, |(k, _)| k);
        if !seen.insert(key) {
            return Err(Error::parse(
                file,
                line_no,
                line,
                "duplicate key (each key has one line)",
            ));
        }
        records.push(record);
    }
    Ok(records)
}
