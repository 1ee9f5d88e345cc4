//! `kiln-tools kdb build`: every (solver, data type, perf config) of `kernels/manifest.toml`
//! compiled for each target into `targets/<base>/<base>.kdb` (or, with `--check`, compared
//! with the committed kdb: rebuilds are byte-identical; `--sample N` rebuilds a share of them).

use std::path::PathBuf;

use clap::Args;

use crate::CliResult;

#[derive(Args)]
pub struct KdbBuildArgs {
    /// Target basenames; none = every target folder whose target.toml lists a kdb.
    #[arg(long = "target")]
    targets: Vec<String>,
    /// Check the committed kdb instead of writing one: its keys must be the manifest's, and
    /// rebuilt objects must be byte-identical to its own (fails if not).
    #[arg(long)]
    check: bool,
    /// With --check: rebuild about one object in N of each source file (at least one per
    /// source) rather than all of them.
    #[arg(long, value_name = "N", requires = "check",
          value_parser = clap::value_parser!(u64).range(1..))]
    sample: Option<u64>,
    /// With --sample: picks the objects (default: the UTC day number, so runs on different
    /// days rebuild different objects; it is printed, to repeat a run).
    #[arg(long, requires = "sample")]
    seed: Option<u64>,
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
    let scope = match a.sample {
        None => kiln_embed::kdbbuild::CheckScope::All,
        Some(one_in) => {
            let one_in = usize::try_from(one_in).unwrap_or(usize::MAX);
            let seed = a.seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() / 86_400)
            });
            if check {
                kiln::outln!("kdb check: one object in {one_in} per source file, seed {seed}");
            }
            kiln_embed::kdbbuild::CheckScope::Sample { one_in, seed }
        }
    };
    let mut stale = Vec::new();
    for dir in dirs {
        let mut cfg = TargetConfig::load(&dir)?;
        let name = format!("{}.kdb", cfg.basename);
        let started = std::time::Instant::now();
        if check {
            let report = kiln_embed::kdbbuild::check_target_kdb(
                &manifest,
                kernels_dir,
                &dir,
                &dir.join(&name),
                scope,
            )?;
            kiln::outln!(
                "{}: {} code objects, {} rebuilt ({:.1} s): {}",
                cfg.basename,
                report.objects,
                report.rebuilt,
                started.elapsed().as_secs_f64(),
                if report.stale.is_empty() {
                    "identical to the committed kdb"
                } else {
                    "DIFFERS from the committed kdb"
                }
            );
            for line in report.stale.iter().take(10) {
                kiln::outln!("  {line}");
            }
            if !report.stale.is_empty() {
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
