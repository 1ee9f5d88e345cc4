//! `kiln-tools db import`: MIOpen find-db / perf-db / kdb files into `targets/<base>/`, each
//! pinned by sha256 in the target's `target.toml`.
//!
//! Nothing is touched until everything was read and validated: every input is parsed whole
//! (read into memory first, so importing a target's own file onto itself is safe), the merged
//! `target.toml` is rendered and parsed back, and only then is each file written to a
//! temporary name and renamed into place. An existing `target.toml` is merged: files and pins
//! not imported now, and the toolchain, are kept.

use std::path::PathBuf;

use clap::Args;
use kiln_embed::finddb::FindDb;
use kiln_embed::kdb::{hex, KernelDb};
use kiln_embed::perfdb::PerfDb;
use kiln_embed::target::{render_target_toml, TargetConfig, TargetFiles};

use super::write_atomic;
use crate::CliResult;

#[derive(Args)]
pub struct ImportArgs {
    /// Target basename (`gfx942130`, `sm_90_132`).
    #[arg(long)]
    target: String,
    /// Find-db text file.
    #[arg(long)]
    find_db: Option<PathBuf>,
    /// Perf-db, SQLite or text (stored as text `<base>.db.txt`).
    #[arg(long)]
    perf_db: Option<PathBuf>,
    /// Kernel db.
    #[arg(long)]
    kdb: Option<PathBuf>,
    /// Where the files came from (recorded in target.toml, printed by `kiln info`).
    #[arg(long)]
    origin: String,
    /// Cargo feature aliases to record (replace the recorded ones when given).
    #[arg(long)]
    alias: Vec<String>,
    /// The targets folder.
    #[arg(long, default_value = "targets")]
    targets_dir: PathBuf,
}

fn sha256(bytes: &[u8]) -> String {
    hex(&<sha2::Sha256 as sha2::Digest>::digest(bytes))
}

pub fn run(a: &ImportArgs) -> CliResult {
    let id = kiln::TargetId::parse_basename(&a.target)?;
    let base = &a.target;
    if a.find_db.is_none() && a.perf_db.is_none() && a.kdb.is_none() {
        return Err("nothing to import: give --find-db, --perf-db and/or --kdb".into());
    }
    for alias in &a.alias {
        if alias.is_empty()
            || !alias
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        {
            return Err(format!(
                "--alias '{}': a cargo feature name (a-z, 0-9, _ and -)",
                kiln_embed::input::excerpt(alias)
            )
            .into());
        }
    }
    let dir = a.targets_dir.join(base);

    // 1. Read and validate every input, whole, before anything is written.
    let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
    if let Some(src) = &a.find_db {
        let db = FindDb::read(src)?;
        // Written in v2.0 form (legacy v1.0 items converted, as MIOpen does).
        outputs.push((format!("{base}.HIP.fdb.txt"), db.to_text().into_bytes()));
        println!("find-db: {} records", db.records.len());
    }
    if let Some(src) = &a.perf_db {
        let db = PerfDb::read(src)?;
        outputs.push((format!("{base}.db.txt"), db.to_text().into_bytes()));
        println!("perf-db: {} configs", db.records.len());
    }
    if let Some(src) = &a.kdb {
        let bytes = kiln_embed::input::read_input(src)?;
        // Validate exactly these bytes (a private copy), not the path again.
        let check = std::env::temp_dir().join(format!(
            "kiln-import-{}-{}.kdb",
            std::process::id(),
            sha256(&bytes)
        ));
        std::fs::write(&check, &bytes).map_err(|e| format!("{}: {e}", check.display()))?;
        let db = KernelDb::read(&check);
        let _ = std::fs::remove_file(&check);
        let db = db.map_err(|e| format!("{}: {e}", src.display()))?;
        println!("kdb: {} code objects, MD5s verified", db.entries.len());
        outputs.push((format!("{base}.kdb"), bytes));
    }

    // 2. The merged target.toml, rendered and read back before it is written.
    let vendor = id.vendor();
    let mut cfg = if dir.join("target.toml").is_file() {
        TargetConfig::load(&dir)?
    } else {
        TargetConfig {
            basename: base.clone(),
            vendor,
            arch: id.arch.clone(),
            compute_units: id.compute_units,
            code_object: kiln::CodeObjectKind::of(vendor),
            aliases: Vec::new(),
            origin: String::new(),
            toolchain: None,
            files: TargetFiles::default(),
            pins: Default::default(),
        }
    };
    cfg.origin = a.origin.clone();
    if !a.alias.is_empty() {
        cfg.aliases = a.alias.clone();
    }
    for (name, bytes) in &outputs {
        cfg.pins.insert(name.clone(), sha256(bytes));
        let slot = if name.ends_with(".HIP.fdb.txt") {
            &mut cfg.files.find_db
        } else if name.ends_with(".db.txt") {
            &mut cfg.files.perf_db
        } else {
            &mut cfg.files.kdb
        };
        if let Some(old) = slot.replace(name.clone()) {
            if &old != name {
                cfg.pins.remove(&old);
            }
        }
    }
    let toml = render_target_toml(&cfg);
    TargetConfig::parse(&toml, base, &dir.join("target.toml"))?;

    // 3. Write: each file to a temporary name, then renamed over the old one.
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (name, bytes) in &outputs {
        write_atomic(&dir.join(name), bytes)?;
        println!("  -> {}", dir.join(name).display());
    }
    write_atomic(&dir.join("target.toml"), toml.as_bytes())?;
    println!("wrote {}", dir.join("target.toml").display());
    Ok(())
}
