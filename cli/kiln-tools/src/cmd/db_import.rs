//! `kiln-tools db import`: MIOpen find-db / perf-db / kdb files into `targets/<base>/`, each
//! pinned by sha256 in the target's `target.toml`.

use std::path::{Path, PathBuf};

use clap::Args;
use kiln_embed::finddb::FindDb;
use kiln_embed::kdb::KernelDb;
use kiln_embed::perfdb::PerfDb;

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
    /// Cargo feature aliases to record.
    #[arg(long)]
    alias: Vec<String>,
    /// The targets folder.
    #[arg(long, default_value = "targets")]
    targets_dir: PathBuf,
}

fn sha256_hex(path: &Path) -> Result<String, Box<dyn std::error::Error>> {
    Ok(kiln_embed::fetch::sha256_file(path)?)
}

pub fn run(a: &ImportArgs) -> CliResult {
    let id = kiln::TargetId::parse_basename(&a.target)?;
    let dir = a.targets_dir.join(&a.target);
    std::fs::create_dir_all(&dir)?;
    let base = &a.target;
    let mut files = kiln_embed::target::TargetFiles::default();
    let mut pins = std::collections::BTreeMap::new();
    if let Some(src) = &a.find_db {
        let db = FindDb::read(src)?;
        let name = format!("{base}.HIP.fdb.txt");
        let out = dir.join(&name);
        // Written back in v2.0 form (legacy v1.0 items converted); v2.0 input is copied as is.
        let text = std::fs::read_to_string(src)?;
        let normalized = db.to_text();
        std::fs::write(&out, if text == normalized { text } else { normalized })?;
        println!("find-db: {} records -> {}", db.records.len(), out.display());
        pins.insert(name.clone(), sha256_hex(&out)?);
        files.find_db = Some(name);
    }
    if let Some(src) = &a.perf_db {
        let db = PerfDb::read(src)?;
        let name = format!("{base}.db.txt");
        let out = dir.join(&name);
        std::fs::write(&out, db.to_text())?;
        println!("perf-db: {} configs -> {}", db.records.len(), out.display());
        pins.insert(name.clone(), sha256_hex(&out)?);
        files.perf_db = Some(name);
    }
    if let Some(src) = &a.kdb {
        let db = KernelDb::read(src)?;
        let name = format!("{base}.kdb");
        let out = dir.join(&name);
        std::fs::copy(src, &out)?;
        println!(
            "kdb: {} code objects -> {}",
            db.entries.len(),
            out.display()
        );
        pins.insert(name.clone(), sha256_hex(&out)?);
        files.kdb = Some(name);
    }
    let vendor = id.vendor();
    let cfg = kiln_embed::target::TargetConfig {
        basename: base.clone(),
        vendor,
        arch: id.arch.clone(),
        compute_units: id.compute_units,
        code_object: kiln::CodeObjectKind::of(vendor),
        aliases: a.alias.clone(),
        origin: a.origin.clone(),
        toolchain: None,
        files,
        pins,
    };
    std::fs::write(
        dir.join("target.toml"),
        kiln_embed::target::render_target_toml(&cfg),
    )?;
    // Re-read what was written, exactly as build.rs will.
    kiln_embed::target::TargetConfig::load(&dir)?;
    println!("wrote {}", dir.join("target.toml").display());
    Ok(())
}
