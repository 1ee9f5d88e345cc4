//! Writing a SQLite database file (kdb, perf-db) without ever leaving a half-written one: the
//! schema and rows go into a temporary file beside `path` inside one transaction, and only a
//! complete file is renamed over `path`. A failure leaves the old file as it was.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, Transaction};

use crate::error::{Error, Result};

/// Creates `path` from `schema` and the rows `fill` inserts. The temporary file is made by
/// [`crate::input::temp_beside`] (exclusive, unpredictable name) and written with no journal
/// (it is thrown away whole on failure), so nothing but it can be left behind.
pub(crate) fn write_new(
    path: &Path,
    schema: &str,
    fill: impl FnOnce(&Transaction) -> Result<()>,
) -> Result<()> {
    let tmp = crate::input::temp_beside(path)?;
    let mut conn = Connection::open(tmp.path()).map_err(|e| Error::sqlite(path, e))?;
    conn.execute_batch("PRAGMA journal_mode = OFF;")
        .and_then(|()| conn.execute_batch(schema))
        .map_err(|e| Error::sqlite(path, e))?;
    let tx = conn.transaction().map_err(|e| Error::sqlite(path, e))?;
    fill(&tx)?;
    tx.commit().map_err(|e| Error::sqlite(path, e))?;
    conn.close().map_err(|(_, e)| Error::sqlite(path, e))?;
    crate::input::replace_with(tmp, path)
}

/// Opens a database file to read it and nothing else: `immutable=1`, so SQLite takes no locks
/// and creates no `-wal`, `-shm` or journal beside it (a WAL database in a read-only folder
/// reads too), and the statements of one reader cannot grow SQLite's heap past
/// [`READER_HEAP_BYTES`].
pub(crate) fn open_read_only(path: &Path) -> Result<Connection> {
    let mut uri = String::from("file:");
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'%' | b'?' | b'#' => uri.push_str(&format!("%{b:02X}")),
            _ if b.is_ascii() && !b.is_ascii_control() => uri.push(*b as char),
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri.push_str("?immutable=1");
    let conn = Connection::open_with_flags(
        &uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(|e| Error::sqlite(path, format!("cannot open as SQLite: {e}")))?;
    // Sorts and temporary tables in memory, never in $TMPDIR, under the heap limit.
    conn.execute_batch(&format!(
        "PRAGMA temp_store = MEMORY; PRAGMA hard_heap_limit = {READER_HEAP_BYTES};"
    ))
    .map_err(|e| Error::sqlite(path, e))?;
    Ok(conn)
}

/// SQLite's heap limit while kiln reads a database (MIOpen's largest perf-db needs a few MiB).
pub const READER_HEAP_BYTES: u64 = 256 << 20;
