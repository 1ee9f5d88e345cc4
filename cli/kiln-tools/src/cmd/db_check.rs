//! `kiln-tools db check`: parse database files fully; counts, or the first error with
//! file:line.

use std::path::PathBuf;

use clap::Args;
use kiln_embed::finddb::FindDb;
use kiln_embed::kdb::KernelDb;
use kiln_embed::perfdb::PerfDb;

use super::{kind_of, DbKind};
use crate::CliResult;

#[derive(Args)]
pub struct CheckArgs {
    /// Files (.fdb.txt, .db.txt, .db, .kdb).
    files: Vec<PathBuf>,
}

pub fn run(a: &CheckArgs) -> CliResult {
    let files = &a.files;
    if files.is_empty() {
        return Err("no files given".into());
    }
    for f in files {
        match kind_of(f)? {
            DbKind::Find => {
                let db = FindDb::read(f)?;
                let items: usize = db.records.iter().map(|r| r.items.len()).sum();
                kiln::outln!(
                    "{}: ok, find-db, {} records, {} solutions",
                    f.display(),
                    db.records.len(),
                    items
                );
            }
            DbKind::Perf => {
                let db = PerfDb::read(f)?;
                let items: usize = db.records.iter().map(|r| r.items.len()).sum();
                kiln::outln!(
                    "{}: ok, perf-db, {} configs, {} entries",
                    f.display(),
                    db.records.len(),
                    items
                );
            }
            DbKind::Kdb => {
                let db = KernelDb::read(f)?;
                let bytes: usize = db.entries.iter().map(|e| e.object.len()).sum();
                kiln::outln!(
                    "{}: ok, kdb, {} code objects, {} B uncompressed, MD5s verified",
                    f.display(),
                    db.entries.len(),
                    bytes
                );
            }
        }
    }
    Ok(())
}
