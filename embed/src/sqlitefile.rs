//! Writing a SQLite database file (kdb, perf-db) without ever leaving a half-written one: the
//! schema and rows go into a temporary file beside `path` inside one transaction, and only a
//! complete file is renamed over `path`. A failure leaves the old file as it was.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, Transaction};

use crate::error::{Error, Result};

/// Creates `path` from `schema` and the rows `fill` inserts.
pub(crate) fn write_new(
    path: &Path,
    schema: &str,
    fill: impl FnOnce(&Transaction) -> Result<()>,
) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".kiln-tmp");
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        if tmp.exists() {
            std::fs::remove_file(&tmp).map_err(|e| Error::io(&tmp, e))?;
        }
        let mut conn = Connection::open(&tmp).map_err(|e| Error::sqlite(path, e))?;
        conn.execute_batch(schema)
            .map_err(|e| Error::sqlite(path, e))?;
        let tx = conn.transaction().map_err(|e| Error::sqlite(path, e))?;
        fill(&tx)?;
        tx.commit().map_err(|e| Error::sqlite(path, e))?;
        conn.close().map_err(|(_, e)| Error::sqlite(path, e))?;
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
