//! `kiln-tools db convert`: perf-db SQLite <-> text (MIOpen's `sqlite2txt`), find-db v1.0 ->
//! v2.0. Outputs are written to a temporary file and renamed, so a failure leaves no partial
//! output; the input is never the output.

use std::path::PathBuf;

use clap::Args;
use kiln_embed::finddb::FindDb;
use kiln_embed::perfdb::PerfDb;

use super::{kind_of, write_atomic, DbKind};
use crate::CliResult;

#[derive(Args)]
pub struct ConvertArgs {
    /// Input file.
    input: PathBuf,
    /// Output file; its name picks the form (.db = SQLite, .db.txt = text, .fdb.txt).
    output: PathBuf,
}

pub fn run(a: &ConvertArgs) -> CliResult {
    let (input, output) = (a.input.as_path(), a.output.as_path());
    if std::fs::canonicalize(input)
        .ok()
        .is_some_and(|i| std::fs::canonicalize(output).ok() == Some(i))
    {
        return Err(format!("{}: input and output are the same file", input.display()).into());
    }
    match (kind_of(input)?, kind_of(output)?) {
        (DbKind::Perf, DbKind::Perf) => {
            let db = PerfDb::read(input)?;
            let out_name = output.to_string_lossy();
            if out_name.ends_with(".txt") {
                write_atomic(output, db.to_text())?;
            } else {
                db.write_sqlite(output)?;
            }
            kiln::outln!("{} configs -> {}", db.records.len(), output.display());
        }
        (DbKind::Find, DbKind::Find) => {
            let db = FindDb::read(input)?;
            write_atomic(output, db.to_text())?;
            kiln::outln!(
                "{} records -> {} (v2.0)",
                db.records.len(),
                output.display()
            );
        }
        _ => return Err(
            "convert works perf-db <-> perf-db (SQLite/text) and find-db -> find-db (v1.0 -> v2.0)"
                .into(),
        ),
    }
    Ok(())
}
