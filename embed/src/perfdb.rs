//! MIOpen perf-db in both forms: SQLite (`config` + `perf_db` tables) and text (`.db.txt`,
//! `KEY=Solver:params;...` with the `x`-joined key `sqlite2txt` writes).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::input::excerpt;

/// One (solver, params) entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerfItem {
    /// Solver DB name.
    pub solver: String,
    /// Serialized PerformanceConfig (opaque to kiln's readers).
    pub params: String,
}

/// One perf-db record: a problem key and the tuned params of each solver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerfRecord {
    /// `2x...xNCHWxFP32xF`.
    pub key: String,
    /// Entries in file (or SQLite row) order.
    pub items: Vec<PerfItem>,
}

/// A whole perf-db.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerfDb {
    /// Records.
    pub records: Vec<PerfRecord>,
}

/// Integer columns of `config`, in `sqlite2txt`'s key order.
pub const CONFIG_INT_COLUMNS: [&str; 21] = kiln_format::problem::PERF_KEY_INT_FIELDS;
/// Text columns of `config`, after the integers in the key.
pub const CONFIG_TEXT_COLUMNS: [&str; 3] = ["layout", "data_type", "direction"];

/// MIOpen's perf-db schema (as in the shipped `gfx942130.db`).
pub const SCHEMA: &str = "CREATE TABLE `config` (`id` INTEGER PRIMARY KEY ASC,`layout` TEXT NOT NULL,`data_type` TEXT NOT NULL,`direction` TEXT NOT NULL,`spatial_dim` INT NOT NULL,`in_channels` INT NOT NULL,`in_h` INT NOT NULL,`in_w` INT NOT NULL,`in_d` INT NOT NULL,`fil_h` INT NOT NULL,`fil_w` INT NOT NULL,`fil_d` INT NOT NULL,`out_channels` INT NOT NULL, `batchsize` INT NOT NULL,`pad_h` INT NOT NULL,`pad_w` INT NOT NULL,`pad_d` INT NOT NULL,`conv_stride_h` INT NOT NULL,`conv_stride_w` INT NOT NULL,`conv_stride_d` INT NOT NULL,`dilation_h` INT NOT NULL,`dilation_w` INT NOT NULL,`dilation_d` INT NOT NULL,`bias` INT NOT NULL,`group_count` INT NOT NULL);
CREATE TABLE `perf_db` (`id` INTEGER PRIMARY KEY ASC,`solver` TEXT NOT NULL,`config` INTEGER NOT NULL, `params` TEXT NOT NULL);
CREATE UNIQUE INDEX `idx_config` ON config( layout,data_type,direction,spatial_dim,in_channels,in_h,in_w,in_d,fil_h,fil_w,fil_d,out_channels,batchsize,pad_h,pad_w,pad_d,conv_stride_h,conv_stride_w,conv_stride_d,dilation_h,dilation_w,dilation_d,bias,group_count );
CREATE UNIQUE INDEX `idx_perf_db` ON perf_db(solver, config);";

/// Most solvers one record may hold (MIOpen's own records hold under 30).
pub const MAX_ITEMS: usize = u8::MAX as usize;

fn valid_solver(s: &str) -> bool {
    !s.is_empty() && !s.contains([';', ':', '=']) && !s.contains(char::is_whitespace)
}

/// Checks one record's key and items; returns a reason on failure.
fn check_record(key: &str, items: &[PerfItem]) -> std::result::Result<(), String> {
    crate::input::check_key(key)?;
    if items.len() > MAX_ITEMS {
        return Err(format!("more than {MAX_ITEMS} solvers in one record"));
    }
    let mut seen = HashSet::new();
    for it in items {
        if !valid_solver(&it.solver) {
            return Err(format!("bad solver name '{}'", excerpt(&it.solver)));
        }
        if it.params.contains(';') || it.params.chars().any(char::is_control) {
            return Err(format!(
                "params of {} contain ';' or a control character",
                excerpt(&it.solver)
            ));
        }
        if !seen.insert(it.solver.as_str()) {
            return Err(format!("solver {} appears twice", excerpt(&it.solver)));
        }
    }
    Ok(())
}

impl PerfDb {
    /// Reads either form, chosen by content: SQLite files start with `SQLite format 3\0`. A
    /// file named `.db` / `.udb` must be SQLite (an empty or text `.db` is refused, not read
    /// as an empty text perf-db).
    pub fn read(path: &Path) -> Result<PerfDb> {
        crate::input::check_regular(path)?;
        let mut head = [0u8; 16];
        let n = {
            use std::io::Read;
            let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
            f.take(16).read(&mut head).map_err(|e| Error::io(path, e))?
        };
        if n == 16 && &head == b"SQLite format 3\0" {
            return PerfDb::read_sqlite(path);
        }
        let name = path.to_string_lossy();
        if name.ends_with(".db") || name.ends_with(".udb") {
            return Err(Error::sqlite(
                path,
                "not a SQLite database (a text perf-db is named .db.txt)",
            ));
        }
        PerfDb::read_text(path)
    }

    /// Reads the text form.
    pub fn read_text(path: &Path) -> Result<PerfDb> {
        PerfDb::parse_text(&crate::input::read_text(path)?, path)
    }

    /// Parses the text form; `file` names the source in errors.
    pub fn parse_text(text: &str, file: &Path) -> Result<PerfDb> {
        let records = crate::textdb::parse_lines(text, file, parse_text_line)?;
        Ok(PerfDb { records })
    }

    /// Reads the SQLite form as MIOpen's `sqlite2txt` does (`perf_db INNER JOIN config`, rows
    /// of one config in row order), without letting SQLite do the join: `config` is read into
    /// a map whose ids must be unique, then `perf_db` is streamed against it, so a file whose
    /// `config.id` repeats cannot multiply into a join larger than memory, and a record stops
    /// at [`MAX_ITEMS`] items while it is read.
    pub fn read_sqlite(path: &Path) -> Result<PerfDb> {
        crate::input::check_regular(path)?;
        let conn = crate::sqlitefile::open_read_only(path)?;
        check_columns(
            &conn,
            path,
            "config",
            &[&CONFIG_INT_COLUMNS[..], &CONFIG_TEXT_COLUMNS[..], &["id"]].concat(),
        )?;
        check_columns(
            &conn,
            path,
            "perf_db",
            &["id", "solver", "config", "params"],
        )?;
        let fields: Vec<&str> = CONFIG_INT_COLUMNS
            .iter()
            .chain(CONFIG_TEXT_COLUMNS.iter())
            .copied()
            .collect();
        let sql = format!("SELECT id, {} FROM config", fields.join(", "));
        let mut stmt = conn.prepare(&sql).map_err(|e| Error::sqlite(path, e))?;
        let mut rows = stmt.query([]).map_err(|e| Error::sqlite(path, e))?;
        // config id -> index of its record (created when its first perf_db row is seen).
        let mut keys: HashMap<i64, (String, Option<usize>)> = HashMap::new();
        let mut row_no = 0usize;
        while let Some(row) = rows.next().map_err(|e| Error::sqlite(path, e))? {
            row_no += 1;
            let bad = |col: &str, e: rusqlite::Error| {
                Error::sqlite(path, format!("config row {row_no}: column {col}: {e}"))
            };
            let id: i64 = row.get(0).map_err(|e| bad("id", e))?;
            let mut key = String::new();
            for (i, name) in CONFIG_INT_COLUMNS.iter().enumerate() {
                let v: i64 = row.get(1 + i).map_err(|e| bad(name, e))?;
                if !key.is_empty() {
                    key.push('x');
                }
                key.push_str(&v.to_string());
            }
            for (i, name) in CONFIG_TEXT_COLUMNS.iter().enumerate() {
                let v: String = row
                    .get(1 + CONFIG_INT_COLUMNS.len() + i)
                    .map_err(|e| bad(name, e))?;
                key.push('x');
                key.push_str(&v);
            }
            crate::input::check_key(&key)
                .map_err(|reason| Error::sqlite(path, format!("config row {row_no}: {reason}")))?;
            if keys.insert(id, (key, None)).is_some() {
                return Err(Error::sqlite(
                    path,
                    format!("config row {row_no}: id {id} appears twice (MIOpen's schema makes config.id the primary key)"),
                ));
            }
        }
        drop(rows);
        drop(stmt);
        let mut stmt = conn
            .prepare("SELECT solver, params, config FROM perf_db")
            .map_err(|e| Error::sqlite(path, e))?;
        let mut rows = stmt.query([]).map_err(|e| Error::sqlite(path, e))?;
        let mut records: Vec<PerfRecord> = Vec::new();
        let mut row_no = 0usize;
        while let Some(row) = rows.next().map_err(|e| Error::sqlite(path, e))? {
            row_no += 1;
            let bad = |col: &str, e: rusqlite::Error| {
                Error::sqlite(path, format!("perf_db row {row_no}: column {col}: {e}"))
            };
            let config: i64 = row.get(2).map_err(|e| bad("config", e))?;
            // The inner join drops rows of no config, as `sqlite2txt` does.
            let Some((key, slot)) = keys.get_mut(&config) else {
                continue;
            };
            let solver: String = row.get(0).map_err(|e| bad("solver", e))?;
            let params: String = row.get(1).map_err(|e| bad("params", e))?;
            let index = *slot.get_or_insert_with(|| {
                records.push(PerfRecord {
                    key: key.clone(),
                    items: Vec::new(),
                });
                records.len() - 1
            });
            let items = &mut records[index].items;
            if items.len() == MAX_ITEMS {
                return Err(Error::sqlite(
                    path,
                    format!(
                        "config {}: more than {MAX_ITEMS} solvers in one record",
                        excerpt(key)
                    ),
                ));
            }
            items.push(PerfItem { solver, params });
        }
        for r in &records {
            check_record(&r.key, &r.items).map_err(|reason| {
                Error::sqlite(path, format!("config {}: {reason}", excerpt(&r.key)))
            })?;
        }
        Ok(PerfDb { records })
    }

    /// The text form (`sqlite2txt` output), one line per record in record order.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for r in &self.records {
            out.push_str(&r.key);
            out.push('=');
            for (i, it) in r.items.iter().enumerate() {
                if i > 0 {
                    out.push(';');
                }
                out.push_str(&it.solver);
                out.push(':');
                out.push_str(&it.params);
            }
            out.push('\n');
        }
        out
    }

    /// Writes the SQLite form with MIOpen's schema (replacing `path` only once complete).
    pub fn write_sqlite(&self, path: &Path) -> Result<()> {
        crate::sqlitefile::write_new(path, SCHEMA, |tx| {
            let cols: Vec<&str> = CONFIG_TEXT_COLUMNS
                .iter()
                .chain(CONFIG_INT_COLUMNS.iter())
                .copied()
                .collect();
            let marks = vec!["?"; cols.len()].join(",");
            let mut cfg = tx
                .prepare(&format!(
                    "INSERT INTO config({}) VALUES({marks})",
                    cols.join(",")
                ))
                .map_err(|e| Error::sqlite(path, e))?;
            let mut perf = tx
                .prepare("INSERT INTO perf_db(solver, config, params) VALUES(?, ?, ?)")
                .map_err(|e| Error::sqlite(path, e))?;
            for r in &self.records {
                let fields: Vec<&str> = r.key.split('x').collect();
                if fields.len() != 24 {
                    return Err(Error::sqlite(
                        path,
                        format!("key {} does not have 24 fields", r.key),
                    ));
                }
                let mut values: Vec<rusqlite::types::Value> = Vec::new();
                for t in &fields[21..24] {
                    values.push(rusqlite::types::Value::Text(t.to_string()));
                }
                for v in &fields[..21] {
                    let n: i64 = v.parse().map_err(|_| {
                        Error::sqlite(path, format!("key {}: '{v}' is not a number", r.key))
                    })?;
                    values.push(rusqlite::types::Value::Integer(n));
                }
                cfg.execute(rusqlite::params_from_iter(values.iter()))
                    .map_err(|e| Error::sqlite(path, e))?;
                let id = tx.last_insert_rowid();
                for it in &r.items {
                    perf.execute(rusqlite::params![it.solver, id, it.params])
                        .map_err(|e| Error::sqlite(path, e))?;
                }
            }
            Ok(())
        })
    }

    /// Merges `other` into `self`: new keys are appended, and for existing keys the items of
    /// `other` replace same-solver items (MIOpen's perf-db merge policy: the newer record wins
    /// per solver).
    pub fn merge(&mut self, other: PerfDb) {
        let mut index: HashMap<String, usize> = self
            .records
            .iter()
            .enumerate()
            .map(|(i, r)| (r.key.clone(), i))
            .collect();
        for rec in other.records {
            match index.get(&rec.key) {
                Some(&i) => {
                    for it in rec.items {
                        let items = &mut self.records[i].items;
                        match items.iter_mut().find(|x| x.solver == it.solver) {
                            Some(x) => *x = it,
                            None => items.push(it),
                        }
                    }
                }
                None => {
                    index.insert(rec.key.clone(), self.records.len());
                    self.records.push(rec);
                }
            }
        }
    }
}

/// Checks that `table` exists as a table (SQLite compares names without regard to letter case,
/// so `Perf_Db` is `perf_db`; a view, possibly over a recursive query without end, is refused)
/// and has `columns` (MIOpen checks names only, not schema text).
pub(crate) fn check_columns(
    conn: &Connection,
    path: &Path,
    table: &str,
    columns: &[&str],
) -> Result<()> {
    let mut stmt = conn
        .prepare("SELECT type FROM sqlite_master WHERE lower(name) = lower(?1) AND type IN ('table', 'view')")
        .map_err(|e| Error::sqlite(path, format!("not a readable SQLite database: {e}")))?;
    let kinds: Vec<String> = stmt
        .query_map([table], |r| r.get::<_, String>(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| Error::sqlite(path, format!("not a readable SQLite database: {e}")))?;
    if kinds.is_empty() {
        return Err(Error::sqlite(
            path,
            format!("wrong schema: no table '{table}'"),
        ));
    }
    if let Some(other) = kinds.iter().find(|k| *k != "table") {
        return Err(Error::sqlite(
            path,
            format!(
                "wrong schema: '{table}' is a {}, not a table",
                excerpt(other)
            ),
        ));
    }
    let mut stmt = conn
        .prepare(&format!("PRAGMA table_info({table})"))
        .map_err(|e| Error::sqlite(path, format!("not a readable SQLite database: {e}")))?;
    let names: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(1))
        .and_then(|rows| rows.collect())
        .map_err(|e| Error::sqlite(path, format!("not a readable SQLite database: {e}")))?;
    let missing: Vec<&str> = columns
        .iter()
        .copied()
        .filter(|c| !names.iter().any(|n| n.eq_ignore_ascii_case(c)))
        .collect();
    if !missing.is_empty() {
        return Err(Error::sqlite(
            path,
            format!(
                "wrong schema: table '{table}' lacks column(s) {}",
                missing.join(", ")
            ),
        ));
    }
    Ok(())
}

/// One line of the text form: `KEY=Solver:params;...`.
fn parse_text_line(line: &str) -> std::result::Result<PerfRecord, String> {
    let (key, content) = line
        .split_once('=')
        .ok_or("missing '=' between key and solvers")?;
    if content.is_empty() {
        return Err("no solvers after '='".into());
    }
    if content.bytes().filter(|&b| b == b';').count() >= MAX_ITEMS {
        return Err(format!("more than {MAX_ITEMS} solvers in one record"));
    }
    let mut items = Vec::new();
    for item in content.split(';') {
        let (solver, params) = item.split_once(':').ok_or_else(|| {
            format!(
                "item '{}' has no ':' between solver and params",
                excerpt(item)
            )
        })?;
        items.push(PerfItem {
            solver: solver.to_string(),
            params: params.to_string(),
        });
    }
    check_record(key, &items)?;
    Ok(PerfRecord {
        key: key.to_string(),
        items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_the_old_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.db");
        let good = PerfDb::parse_text(TEXT, Path::new("t")).unwrap();
        good.write_sqlite(&path).unwrap();
        let before = std::fs::read(&path).unwrap();
        let mut bad = good.clone();
        bad.records.push(PerfRecord {
            key: "1x2x3".into(),
            items: good.records[0].items.clone(),
        });
        let e = bad.write_sqlite(&path).unwrap_err().to_string();
        assert!(e.contains("key 1x2x3 does not have 24 fields"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");
        assert_eq!(PerfDb::read(&path).unwrap(), good);
    }

    const TEXT: &str = "2x960x8x8x1x1x1x1x960x8x0x0x0x1x1x0x1x1x0x0x1xNHWCxFP32xF=ConvAsmImplicitGemmGTCDynamicFwdXdlopsNHWC:fwd,nhwc,fp32,0,0,32,64,32,16,16,4,1,1,1,2,0,0,0,0,0,1,4,1,1,1,8,1,32,1,4,2,1,1,8,1,32,66;ConvHipImplicitGemmFwdXdlops:DeviceConv2dFwdXdl_Input_N_Hi_Wi_C_Weight_K_Y_X_C_Output_N_Ho_Wo_K<256, 128, 64, 4, Filter1x1Stride1Pad0, 4, 32, 32, 2, 1, 4, 4, 4, 4>\n";

    #[test]
    fn text_round_trip() {
        let db = PerfDb::parse_text(TEXT, Path::new("t.db.txt")).unwrap();
        assert_eq!(db.records[0].items.len(), 2);
        assert_eq!(db.to_text(), TEXT);
    }

    #[test]
    fn sqlite_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let db = PerfDb::parse_text(TEXT, Path::new("t.db.txt")).unwrap();
        let p = dir.path().join("t.db");
        db.write_sqlite(&p).unwrap();
        assert_eq!(PerfDb::read(&p).unwrap(), db);
    }

    #[test]
    fn wrong_schema_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.db");
        let c = Connection::open(&p).unwrap();
        c.execute_batch("CREATE TABLE config(id INTEGER PRIMARY KEY, layout TEXT); CREATE TABLE perf_db(id INTEGER, solver TEXT, config INTEGER, params TEXT);").unwrap();
        drop(c);
        let e = PerfDb::read(&p).unwrap_err().to_string();
        assert!(
            e.contains("wrong schema: table 'config' lacks column(s) spatial_dim"),
            "{e}"
        );
    }

    #[test]
    fn bad_text_names_line() {
        // Keys are opaque to the reader (MIOpen's own rows include sizes kiln cannot build), but
        // text that would break the format is refused.
        PerfDb::parse_text("2x1x1=Foo:1\n", Path::new("p.txt")).unwrap();
        // R8: a file cut short (no newline after its last line) is refused, naming the line.
        let e = PerfDb::parse_text(&TEXT[..TEXT.len() - 40], Path::new("p.txt"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("p.txt:1: truncated: the last line has no newline"),
            "{e}"
        );
        let e = PerfDb::parse_text("2x1 x1=Foo:1\n", Path::new("p.txt"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.txt:1: key '2x1 x1' contains ' '"), "{e}");
        let e = PerfDb::parse_text(
            &format!("{TEXT}{}", TEXT.replace('=', "")),
            Path::new("p.txt"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("p.txt:2: missing '='"), "{e}");
    }

    #[test]
    fn merge_replaces_per_solver() {
        let mut a = PerfDb::parse_text(TEXT, Path::new("a")).unwrap();
        let b = PerfDb {
            records: vec![PerfRecord {
                key: a.records[0].key.clone(),
                items: vec![PerfItem {
                    solver: "ConvHipImplicitGemmFwdXdlops".into(),
                    params: "X".into(),
                }],
            }],
        };
        a.merge(b);
        assert_eq!(a.records[0].items.len(), 2);
        assert_eq!(a.records[0].items[1].params, "X");
    }
}
