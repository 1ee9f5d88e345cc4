//! `kiln-tools db import`: MIOpen find-db / perf-db / kdb files into `targets/<base>/`, each
//! pinned by sha256 in the target's `target.toml`.
//!
//! Nothing is touched until everything was read and validated: every input is parsed whole
//! (read into memory first, so importing a target's own file onto itself is safe), a kdb must
//! be built for the target's arch, an alias must not name another target, and the merged
//! `target.toml` is rendered and parsed back. Then the import is all or nothing: every file,
//! `target.toml` with it, is staged beside its place, and only once all are staged are they
//! renamed in (rolled back if a rename fails), so the pins always match the files. An existing
//! `target.toml` is merged: files and pins not imported now, and the toolchain, are kept.

use std::path::{Path, PathBuf};

use clap::Args;
use kiln_embed::finddb::FindDb;
use kiln_embed::kdb::{hex, KernelDb};
use kiln_embed::perfdb::PerfDb;
use kiln_embed::target::{render_target_toml, TargetConfig, TargetFiles};

use kiln::format::text::excerpt;
use kiln_embed::input::{temp_beside, write_all_or_nothing};

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
                excerpt(alias)
            )
            .into());
        }
    }
    let dir = a.targets_dir.join(base);
    check_aliases_are_free(&a.targets_dir, base, &a.alias)?;

    // 1. Read and validate every input, whole, before anything is written.
    let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
    if let Some(src) = &a.find_db {
        let db = FindDb::read(src)?;
        // Written in v2.0 form (legacy v1.0 items converted, as MIOpen does).
        outputs.push((format!("{base}.HIP.fdb.txt"), db.to_text().into_bytes()));
        kiln::outln!("find-db: {} records", db.records.len());
    }
    if let Some(src) = &a.perf_db {
        let db = PerfDb::read(src)?;
        outputs.push((format!("{base}.db.txt"), db.to_text().into_bytes()));
        kiln::outln!("perf-db: {} configs", db.records.len());
    }
    if let Some(src) = &a.kdb {
        let bytes = kiln_embed::input::read_input(src)?;
        // Validate exactly these bytes, not the path again: a private copy, created exclusively
        // under an unpredictable name in the output's own folder, removed when dropped.
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut check = temp_beside(&dir.join(format!("{base}.kdb")))?;
        std::io::Write::write_all(&mut check, &bytes)
            .map_err(|e| format!("{}: {e}", check.path().display()))?;
        let db = KernelDb::read(check.path()).map_err(|e| format!("{}: {e}", src.display()))?;
        drop(check);
        check_kdb_arch(&db, &id.arch).map_err(|e| format!("{}: {e}", src.display()))?;
        kiln::outln!("kdb: {} code objects, MD5s verified", db.entries.len());
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

    // 3. Write all or nothing: every file staged, then renamed in, target.toml last.
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<(PathBuf, Vec<u8>)> = outputs
        .into_iter()
        .map(|(name, bytes)| (dir.join(name), bytes))
        .collect();
    files.push((dir.join("target.toml"), toml.into_bytes()));
    write_all_or_nothing(&files)?;
    for (path, _) in &files {
        kiln::outln!("  -> {}", path.display());
    }
    Ok(())
}

/// Refuses aliases that another target in `targets_dir` has as its basename or alias (the next
/// build would fail with "name or alias used by two enabled targets").
fn check_aliases_are_free(targets_dir: &Path, base: &str, aliases: &[String]) -> CliResult {
    if aliases.is_empty() {
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(targets_dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let other = entry.file_name().to_string_lossy().into_owned();
        if other == base || !entry.path().join("target.toml").is_file() {
            continue;
        }
        let Ok(cfg) = TargetConfig::load(&entry.path()) else {
            continue;
        };
        for alias in aliases {
            if alias == &cfg.basename || cfg.aliases.contains(alias) {
                return Err(format!(
                    "--alias '{}' already names target {} ({}): an alias must be unique",
                    excerpt(alias),
                    cfg.basename,
                    entry.path().join("target.toml").display()
                )
                .into());
            }
        }
    }
    Ok(())
}

/// Every code object of a kdb must be built for `arch`: its `kernel_args` end in MIOpen's
/// `-mcpu=<arch>` (with `:feature` suffixes allowed, as MIOpen writes `gfx90a:xnack-`).
fn check_kdb_arch(db: &KernelDb, arch: &str) -> Result<(), String> {
    for e in &db.entries {
        let built_for = e
            .kernel_args
            .split_whitespace()
            .filter_map(|t| t.strip_prefix("-mcpu="))
            .next_back()
            .map(|t| t.split(':').next().unwrap_or(t));
        match built_for {
            Some(a) if a == arch => {}
            Some(other) => {
                return Err(format!(
                    "kernel '{}' is built for {} (-mcpu), not this target's {arch}",
                    excerpt(&e.kernel_name),
                    excerpt(other)
                ))
            }
            None => {
                return Err(format!(
                    "kernel '{}' names no arch (no -mcpu= in its kernel_args '{}')",
                    excerpt(&e.kernel_name),
                    excerpt(&e.kernel_args)
                ))
            }
        }
    }
    Ok(())
}
