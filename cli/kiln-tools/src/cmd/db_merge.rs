//! `kiln-tools db merge`: the directories of `find --shard I/N` jobs merged into a target's
//! find-db and perf-db (`crate::shard::merge`: refused when the shards were measured on
//! different devices, drivers or kiln versions; the same bytes whatever their count and
//! order).

use std::path::PathBuf;

use clap::Args;

use super::write_atomic;
use crate::shard::{merge, ShardDbs};
use crate::CliResult;

#[derive(Args)]
pub struct MergeArgs {
    /// The target basename (`sm_90_132`): the shards' and the result's file names.
    #[arg(long)]
    target: String,
    /// The directory whose <base>.HIP.fdb.txt and <base>.db.txt the shards are merged into
    /// (created if missing; default targets/<base>).
    #[arg(long)]
    into: Option<PathBuf>,
    /// Shard directories (each a `find --shard I/N --db-dir` of the same N).
    #[arg(required = true, num_args = 1..)]
    shards: Vec<PathBuf>,
}

pub fn run(a: &MergeArgs) -> CliResult {
    let base = a.target.as_str();
    let shards = a
        .shards
        .iter()
        .map(|d| ShardDbs::read(d, base))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(s) = shards.iter().find(|s| s.provenance.target != base) {
        return Err(format!(
            "{}: a shard of target {}, not {base}",
            s.dir.display(),
            s.provenance.target
        )
        .into());
    }
    let dir = a
        .into
        .clone()
        .unwrap_or_else(|| PathBuf::from("targets").join(base));
    let super::TargetDbs {
        find_path: fdb_path,
        mut find,
        perf_path: pdb_path,
        mut perf,
    } = super::TargetDbs::read(&dir, base)?;
    let report = merge(&mut find, &mut perf, &shards, |key| {
        let p = kiln::ConvProblem::from_find_db_key(key)
            .map_err(|e| format!("find-db key {key}: {e}"))?;
        Ok(p.perf_db_key().as_str().to_string())
    })?;
    std::fs::create_dir_all(&dir)?;
    write_atomic(&fdb_path, find.to_text())?;
    write_atomic(&pdb_path, perf.to_text())?;
    let count = shards[0].provenance.shard.count;
    kiln::outln!(
        "{} of {count} shards ({}) -> {}: find-db {} added, {} replaced ({} records); perf-db {} added, {} updated ({} configs)",
        shards.len(),
        shards[0].provenance.device,
        dir.display(),
        report.find_added,
        report.find_replaced,
        find.records.len(),
        report.perf_added,
        report.perf_updated,
        perf.records.len()
    );
    if !report.missing.is_empty() {
        let missing: Vec<String> = report
            .missing
            .iter()
            .map(|i| format!("{i}/{count}"))
            .collect();
        kiln::outln!("not given (merge them later): shard {}", missing.join(", "));
    }
    Ok(())
}
