//! `kiln-tools db stats`: records, solvers and the mix of problem kinds of a database file.

use std::path::PathBuf;

use clap::Args;
use kiln::ConvProblem;
use kiln_embed::finddb::FindDb;
use kiln_embed::kdb::KernelDb;
use kiln_embed::perfdb::PerfDb;

use super::{kind_of, DbKind};
use crate::CliResult;

#[derive(Args)]
pub struct StatsArgs {
    /// A database file.
    file: PathBuf,
}

use kiln::format::text::excerpt;

pub fn run(a: &StatsArgs) -> CliResult {
    let file = a.file.as_path();
    use std::collections::BTreeMap;
    let mut solvers: BTreeMap<String, usize> = BTreeMap::new();
    let mut mix: BTreeMap<String, usize> = BTreeMap::new();
    let mut unreadable: Vec<(String, kiln::format::ProblemError)> = Vec::new();
    let mut note = |p: &ConvProblem| {
        let l = p.layouts()[0].name();
        let t = p.data_types()[0].name();
        let d = p.direction().key();
        let g = if p.groups() > 1 { " grouped" } else { "" };
        *mix.entry(format!("{}-D {l} {t} {d}{g}", p.spatial_dims()))
            .or_default() += 1;
    };
    match kind_of(file)? {
        DbKind::Find => {
            let db = FindDb::read(file)?;
            for r in &db.records {
                match ConvProblem::from_find_db_key(&r.key) {
                    Ok(p) => note(&p),
                    Err(e) => unreadable.push((r.key.clone(), e)),
                }
                for i in &r.items {
                    *solvers.entry(i.solver.clone()).or_default() += 1;
                }
            }
            kiln::outln!("{}: find-db, {} records", file.display(), db.records.len());
        }
        DbKind::Perf => {
            let db = PerfDb::read(file)?;
            for r in &db.records {
                match ConvProblem::from_perf_db_key(&r.key) {
                    Ok(p) => note(&p),
                    Err(e) => unreadable.push((r.key.clone(), e)),
                }
                for i in &r.items {
                    *solvers.entry(i.solver.clone()).or_default() += 1;
                }
            }
            kiln::outln!("{}: perf-db, {} configs", file.display(), db.records.len());
        }
        DbKind::Kdb => {
            let db = KernelDb::read(file)?;
            for e in &db.entries {
                *solvers.entry(e.kernel_name.clone()).or_default() += 1;
            }
            kiln::outln!("{}: kdb, {} code objects", file.display(), db.entries.len());
        }
    }
    kiln::outln!("problems by kind:");
    if !unreadable.is_empty() {
        // MIOpen records problems kiln would not build (transposed convolutions stored with a
        // filter larger than the input, older 3-D keys): valid rows, counted apart.
        kiln::outln!(
            "  {:>7}  not convolutions kiln can describe, e.g. {} ({})",
            unreadable.len(),
            excerpt(&unreadable[0].0),
            unreadable[0].1
        );
    }
    for (k, v) in &mix {
        kiln::outln!("  {v:>7}  {k}");
    }
    let mut by_count: Vec<_> = solvers.into_iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    kiln::outln!("entries by solver (kdb: by kernel file):");
    for (s, n) in by_count {
        // Names come from the file: shown escaped and short (a terminal escape or a 10 MB name
        // is the file's problem, not the reader's terminal's).
        kiln::outln!("  {n:>7}  {}", excerpt(&s));
    }
    Ok(())
}
