//! `kiln-tools kdb build`: every (solver, data type, perf config) of `kernels/manifest.toml`
//! compiled for each target into `targets/<base>/<base>.kdb` (or, with `--check`, compared
//! with the committed kdb: rebuilds are byte-identical).

use std::path::PathBuf;

use clap::Args;

use crate::CliResult;

#[derive(Args)]
pub struct KdbBuildArgs {
    /// Target basenames; none = every target folder whose target.toml lists a kdb.
    #[arg(long = "target")]
    targets: Vec<String>,
    /// Build into a scratch file and fail if it differs from the committed kdb.
    #[arg(long)]
    check: bool,
    /// The targets folder.
    #[arg(long, default_value = "targets")]
    targets_dir: PathBuf,
    /// The kernels folder.
    #[arg(long, default_value = "kernels")]
    kernels_dir: PathBuf,
}

pub fn run(a: &KdbBuildArgs) -> CliResult {
    let (targets, check) = (&a.targets, a.check);
    let (targets_dir, kernels_dir) = (a.targets_dir.as_path(), a.kernels_dir.as_path());
    use kiln_embed::target::{render_target_toml, TargetConfig};
    let manifest = kiln_embed::kdbbuild::Manifest::load(&kernels_dir.join("manifest.toml"))?;
    let mut dirs = Vec::new();
    if targets.is_empty() {
        for d in kiln_embed::target::list_targets(targets_dir)? {
            if TargetConfig::load(&d)?.files.kdb.is_some() {
                dirs.push(d);
            }
        }
    } else {
        dirs.extend(targets.iter().map(|t| targets_dir.join(t)));
    }
    let mut stale = Vec::new();
    for dir in dirs {
        let mut cfg = TargetConfig::load(&dir)?;
        let name = format!("{}.kdb", cfg.basename);
        let started = std::time::Instant::now();
        if check {
            let tmp =
                std::env::temp_dir().join(format!("kiln-check-{}-{name}", std::process::id()));
            let (n, _) =
                kiln_embed::kdbbuild::build_target_kdb(&manifest, kernels_dir, &dir, &tmp, None)?;
            let fresh = std::fs::read(&tmp)?;
            let _ = std::fs::remove_file(&tmp);
            let committed = std::fs::read(dir.join(&name)).unwrap_or_default();
            let same = fresh == committed;
            kiln::outln!(
                "{}: {n} code objects, {}",
                cfg.basename,
                if same {
                    "identical to the committed kdb"
                } else {
                    "DIFFERS from the committed kdb"
                }
            );
            if !same {
                stale.push(cfg.basename.clone());
            }
            continue;
        }
        let out = dir.join(&name);
        let (n, toolchain) = kiln_embed::kdbbuild::build_target_kdb(
            &manifest,
            kernels_dir,
            &dir,
            &out,
            Some(&kiln_embed::library::default_cache_dir()),
        )?;
        cfg.pins
            .insert(name.clone(), kiln_embed::fetch::sha256_file(&out)?);
        cfg.files.kdb = Some(name);
        cfg.toolchain = Some(toolchain.clone());
        super::write_atomic(&dir.join("target.toml"), render_target_toml(&cfg))?;
        TargetConfig::load(&dir)?;
        kiln::outln!(
            "{}: {n} code objects -> {} ({} B, {:.1} s, {toolchain})",
            cfg.basename,
            out.display(),
            std::fs::metadata(&out)?.len(),
            started.elapsed().as_secs_f64()
        );
    }
    if !stale.is_empty() {
        return Err(format!(
            "stale kdb for [{}]: kernels or compilers changed; run `make kdb` and commit",
            stale.join(", ")
        )
        .into());
    }
    Ok(())
}
