//! The line loop shared by MIOpen's text databases (find-db `.fdb.txt`, perf-db `.db.txt`):
//! one `KEY=...` record per line, `\r\n` tolerated, blank lines skipped, a key at most once;
//! every error names file:line and the line.

use std::collections::HashSet;
use std::path::Path;

use crate::error::{Error, Result};

/// Parses each non-blank line of `text` with `parse_line`, refusing a key seen before.
pub(crate) fn parse_lines<R>(
    text: &str,
    file: &Path,
    parse_line: impl Fn(&str) -> std::result::Result<R, String>,
    key_of: impl Fn(&R) -> &str,
) -> Result<Vec<R>> {
    let mut records = Vec::new();
    let mut seen = HashSet::new();
    for (idx, raw) in text.split('\n').enumerate() {
        let line_no = idx + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.is_empty() {
            continue;
        }
        let record =
            parse_line(line).map_err(|reason| Error::parse(file, line_no, line, reason))?;
        if !seen.insert(key_of(&record).to_string()) {
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
