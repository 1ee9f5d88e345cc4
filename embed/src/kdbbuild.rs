//! Building a target's kernel db from `kernels/manifest.toml`: every (solver, data type, perf
//! config) compiled for the target's arch, stored in MIOpen's kdb schema under MIOpen's key rule
//! (`kernel_name` = source + `.o`, `kernel_args` = options + ` -mcpu=<arch>`). Entries are sorted
//! and the compilers are deterministic, so a rebuild is byte-identical.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::compile::{compile_amd, Nvrtc};
use crate::error::{Error, Result};
use crate::kdb::{kernel_args, kernel_name, KdbEntry, KernelDb};

/// One solver of the manifest.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ManifestSolver {
    /// kiln's solver id.
    pub id: String,
    /// MIOpen algorithm name.
    pub algorithm: String,
    /// Kernel source file in `kernels/`.
    pub source: String,
    /// `extern "C"` entry point.
    pub function: String,
    /// Compile-option template; `{0}`, `{1}`... are the perf-config values.
    pub options: String,
    /// Perf configs (comma-separated values; `""` for none).
    pub params: Vec<String>,
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
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let m: Manifest = toml::from_str(&text).map_err(|e| Error::Target {
            target: "kernels".into(),
            reason: format!("{}: {e}", path.display()),
        })?;
        for s in &m.solvers {
            for p in &s.params {
                compile_options(s, "FP32", p).map_err(|reason| Error::Target {
                    target: "kernels".into(),
                    reason: format!("{}: solver {} params '{p}': {reason}", path.display(), s.id),
                })?;
            }
        }
        Ok(m)
    }
}

/// The compile options of one variant: the data type, then the solver's substituted template.
pub fn compile_options(
    s: &ManifestSolver,
    data_type: &str,
    params: &str,
) -> std::result::Result<String, String> {
    let values: Vec<&str> = if params.is_empty() {
        Vec::new()
    } else {
        params.split(',').collect()
    };
    let mut opts = s.options.clone();
    for (i, v) in values.iter().enumerate() {
        if !v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!("value '{v}' is not a plain token"));
        }
        let slot = format!("{{{i}}}");
        if !opts.contains(&slot) {
            return Err(format!("template has no {slot}"));
        }
        opts = opts.replace(&slot, v);
    }
    if opts.contains('{') {
        return Err("template has slots left after substitution".into());
    }
    let mut out = format!("-DKILN_DTYPE_{data_type}");
    if !opts.is_empty() {
        out.push(' ');
        out.push_str(&opts);
    }
    Ok(out)
}

/// MIOpen's `kernel_args` of one variant (a leading space, as in MIOpen's logs).
pub fn variant_args(
    s: &ManifestSolver,
    data_type: &str,
    params: &str,
    arch: &str,
) -> std::result::Result<String, String> {
    Ok(kernel_args(
        &format!(" {}", compile_options(s, data_type, params)?),
        arch,
    ))
}

/// Toolchain description recorded next to a kdb.
pub fn toolchain(vendor_amd: bool) -> Result<String> {
    if vendor_amd {
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
    amd: bool,
) -> Result<Vec<KdbEntry>> {
    let mut jobs: Vec<(String, PathBuf, Vec<String>, String)> = Vec::new();
    for s in &manifest.solvers {
        for dt in &manifest.data_types {
            for p in &s.params {
                let opts = compile_options(s, dt, p).map_err(|reason| Error::Target {
                    target: arch.into(),
                    reason,
                })?;
                let args = kernel_args(&format!(" {opts}"), arch);
                let options: Vec<String> = opts.split(' ').map(String::from).collect();
                jobs.push((s.source.clone(), kernels_dir.join(&s.source), options, args));
            }
        }
    }
    let mut entries: Vec<KdbEntry> = if amd {
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
    let amd = cfg.vendor == "amd";
    let entries = build_entries(manifest, kernels_dir, &cfg.arch, amd)?;
    let n = entries.len();
    KernelDb { entries }.write(out)?;
    Ok((n, toolchain(amd)?))
}
