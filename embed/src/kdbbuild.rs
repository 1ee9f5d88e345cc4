//! Building a target's kernel db from `kernels/manifest.toml`: every (solver, data type, perf
//! config) compiled for the target's arch, stored in MIOpen's kdb schema under MIOpen's key rule
//! (`kernel_name` = source + `.o`, `kernel_args` = options + ` -mcpu=<arch>`). Entries are sorted
//! and the compilers are deterministic, so a rebuild is byte-identical.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use kiln_format::manifest::{compile_options, kernel_args, kernel_name};
use kiln_format::Vendor;

use crate::compile::{compile_amd, Nvrtc};
use crate::error::{Error, Result};
use crate::kdb::{KdbEntry, KernelDb};

/// One solver of the manifest (the owned, TOML form of [`kiln_format::SolverEntry`]).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ManifestSolver {
    /// kiln's solver id.
    pub id: String,
    /// MIOpen algorithm name.
    pub algorithm: String,
    /// Kernel source file in `kernels/`.
    pub source: String,
    /// `extern "C"` entry points, launched in this order.
    pub functions: Vec<String>,
    /// Compile-option template; `{0}`, `{1}`... are the perf-config values.
    pub options: String,
    /// Perf configs (comma-separated values; `""` for none).
    pub params: Vec<String>,
    /// Archs to build for (`sm_90`, `gfx942`); absent or empty = every arch.
    #[serde(default)]
    pub archs: Vec<String>,
}

impl ManifestSolver {
    /// Rust source of this solver as a `::kiln_format::SolverEntry` literal.
    pub fn to_static(&self) -> String {
        let list = |v: &[String]| {
            v.iter()
                .map(|x| format!("{x:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "::kiln_format::SolverEntry {{ id: {:?}, algorithm: {:?}, source: {:?}, functions: &[{}], options: {:?}, params: &[{}], archs: &[{}] }}",
            self.id,
            self.algorithm,
            self.source,
            list(&self.functions),
            self.options,
            list(&self.params),
            list(&self.archs)
        )
    }
}

/// `kernels/manifest.toml`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Data types every solver is compiled for (`FP32`, `FP16`, `BF16`).
    pub data_types: Vec<String>,
    /// Solvers.
    #[serde(rename = "solver")]
    pub solvers: Vec<ManifestSolver>,
}

impl Manifest {
    /// Reads and checks the manifest.
    pub fn load(path: &Path) -> Result<Manifest> {
        let text = crate::input::read_text(path)?;
        let m: Manifest = toml::from_str(&text).map_err(|e| Error::Target {
            target: "kernels".into(),
            reason: format!("{}: {e}", path.display()),
        })?;
        let bad = |reason: String| Error::Target {
            target: "kernels".into(),
            reason: format!("{}: {reason}", path.display()),
        };
        for (i, s) in m.solvers.iter().enumerate() {
            if m.solvers[..i].iter().any(|o| o.id == s.id) {
                return Err(bad(format!("solver {} is listed twice", s.id)));
            }
            if s.functions.is_empty() {
                return Err(bad(format!("solver {} names no kernel function", s.id)));
            }
            for p in &s.params {
                compile_options(&s.options, "FP32", p)
                    .map_err(|e| bad(format!("solver {} params '{p}': {e}", s.id)))?;
            }
        }
        Ok(m)
    }
}

/// Toolchain description recorded next to a kdb.
pub fn toolchain(vendor: Vendor) -> Result<String> {
    if vendor == Vendor::Amd {
        crate::compile::clang_version()
    } else {
        Ok(format!("NVRTC {}", Nvrtc::load()?.version()?))
    }
}

/// Compiles every variant for `arch` and returns the kdb entries, sorted by key.
pub fn build_entries(
    manifest: &Manifest,
    kernels_dir: &Path,
    arch: &str,
    vendor: Vendor,
) -> Result<Vec<KdbEntry>> {
    let mut jobs: Vec<(String, PathBuf, Vec<String>, String)> = Vec::new();
    for s in manifest
        .solvers
        .iter()
        .filter(|s| kiln_format::manifest::builds_for(&s.archs, arch))
    {
        for dt in &manifest.data_types {
            for p in &s.params {
                let opts = compile_options(&s.options, dt, p).map_err(|e| Error::Target {
                    target: arch.into(),
                    reason: format!("solver {} params '{p}': {e}", s.id),
                })?;
                let args = kernel_args(&opts, arch);
                let options: Vec<String> = opts.split(' ').map(String::from).collect();
                jobs.push((s.source.clone(), kernels_dir.join(&s.source), options, args));
            }
        }
    }
    let mut entries: Vec<KdbEntry> = if vendor == Vendor::Amd {
        // clang runs one process per object: spread them over the cores.
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let chunk = jobs.len().div_ceil(threads).max(1);
        let results: Vec<Result<Vec<KdbEntry>>> = std::thread::scope(|sc| {
            let handles: Vec<_> = jobs
                .chunks(chunk)
                .map(|part| {
                    sc.spawn(move || {
                        part.iter()
                            .map(|(src, path, opts, args)| {
                                Ok(KdbEntry {
                                    kernel_name: kernel_name(src),
                                    kernel_args: args.clone(),
                                    object: compile_amd(path, kernels_dir, arch, opts)?,
                                })
                            })
                            .collect()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Target {
                            target: arch.into(),
                            reason: "compile thread panicked".into(),
                        })
                    })
                })
                .collect()
        });
        let mut all = Vec::new();
        for r in results {
            all.extend(r?);
        }
        all
    } else {
        let nvrtc = Nvrtc::load()?;
        let mut headers: Vec<(String, String)> = Vec::new();
        for h in ["kiln_gpu.h", "igemm.h"] {
            let p = kernels_dir.join(h);
            headers.push((
                h.to_string(),
                std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?,
            ));
        }
        let hdrs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, s)| (n.as_str(), s.as_str()))
            .collect();
        let mut out = Vec::new();
        for (src, path, opts, args) in &jobs {
            let source = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
            out.push(KdbEntry {
                kernel_name: kernel_name(src),
                kernel_args: args.clone(),
                object: nvrtc.compile_cubin(src, &source, &hdrs, arch, opts)?,
            });
        }
        out
    };
    entries.sort_by(|a, b| (&a.kernel_name, &a.kernel_args).cmp(&(&b.kernel_name, &b.kernel_args)));
    Ok(entries)
}

/// Builds `<targets_dir>/<base>/<base>.kdb`; returns (path, entries, toolchain).
pub fn build_target_kdb(
    manifest: &Manifest,
    kernels_dir: &Path,
    target_dir: &Path,
    out: &Path,
) -> Result<(usize, String)> {
    let cfg = crate::target::TargetConfig::load(target_dir)?;
    let entries = build_entries(manifest, kernels_dir, &cfg.arch, cfg.vendor)?;
    let n = entries.len();
    KernelDb { entries }.write(out)?;
    Ok((n, toolchain(cfg.vendor)?))
}
