//! Building a target's kernel db from `kernels/manifest.toml`: every (solver, data type, perf
//! config) compiled for the target's arch, stored in MIOpen's kdb schema under MIOpen's key rule
//! (`kernel_name` = source + `.o`, `kernel_args` = options + ` -mcpu=<arch>`). Entries are sorted
//! and the compilers are deterministic, so a rebuild is byte-identical.

use std::path::Path;

use serde::Deserialize;

use kiln_format::manifest::{compile_options, kernel_args, kernel_name};
use kiln_format::Vendor;

use crate::compile::{compile_amd, Nvrtc};
use crate::error::{Error, Result};
use crate::kdb::{KdbEntry, KernelDb};
use crate::library;

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
    /// Data types to build; absent or empty = the manifest's `data_types`.
    #[serde(default)]
    pub data_types: Vec<String>,
    /// Trailing perf-config values that are run-time parameters (kept out of the kdb key).
    #[serde(default)]
    pub runtime_values: usize,
    /// `""` (kiln's dialect) or `"cutlass"` (built against the pinned CUTLASS headers).
    #[serde(default)]
    pub library: String,
    /// Entry point that builds the kernel's parameter block at prepare time (`""`: none).
    #[serde(default)]
    pub builder: String,
    /// `""` or `"tf32"` (an opt-in math mode).
    #[serde(default)]
    pub math: String,
    /// Build NVIDIA code objects for the arch-specific variant (`sm_90` -> `sm_90a`: wgmma and
    /// TMA need it). Such a cubin loads only on that exact compute capability; the kdb key
    /// still names the target's arch. `archs` must then list NVIDIA arches only.
    #[serde(default)]
    pub arch_specific: bool,
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
            "::kiln_format::SolverEntry {{ id: {:?}, algorithm: {:?}, source: {:?}, functions: &[{}], options: {:?}, params: &[{}], archs: &[{}], data_types: &[{}], runtime_values: {}, library: {:?}, builder: {:?}, math: {:?} }}",
            self.id,
            self.algorithm,
            self.source,
            list(&self.functions),
            self.options,
            list(&self.params),
            list(&self.archs),
            list(&self.data_types),
            self.runtime_values,
            self.library,
            self.builder,
            self.math
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
    /// Standalone operators (pooling, resizing, elementwise, softmax): no perf configs.
    #[serde(rename = "operator", default)]
    pub operators: Vec<ManifestOperator>,
}

/// One `[[operator]]` of the manifest: a kernel file of standalone operators, compiled once per
/// data type on every arch (kdb key: the file + `.o`, `-DKILN_DTYPE_<type> -mcpu=<arch>`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ManifestOperator {
    /// Kernel source file in `kernels/`.
    pub source: String,
    /// Its `extern "C"` entry points.
    pub functions: Vec<String>,
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
        for (i, op) in m.operators.iter().enumerate() {
            if op.functions.is_empty() {
                return Err(bad(format!(
                    "operator {} names no kernel function",
                    op.source
                )));
            }
            if m.operators[..i].iter().any(|o| o.source == op.source)
                || m.solvers.iter().any(|s| s.source == op.source)
            {
                return Err(bad(format!(
                    "operator source {} is listed twice or shared with a solver",
                    op.source
                )));
            }
        }
        for (i, s) in m.solvers.iter().enumerate() {
            if m.solvers[..i].iter().any(|o| o.id == s.id) {
                return Err(bad(format!("solver {} is listed twice", s.id)));
            }
            if s.functions.is_empty() {
                return Err(bad(format!("solver {} names no kernel function", s.id)));
            }
            for p in &s.params {
                let compiled = kiln_format::manifest::compiled_part(p, s.runtime_values);
                if s.runtime_values > 0 && p.split(',').count() <= s.runtime_values {
                    return Err(bad(format!(
                        "solver {} params '{p}': fewer values than its {} run-time values",
                        s.id, s.runtime_values
                    )));
                }
                compile_options(&s.options, "FP32", compiled)
                    .map_err(|e| bad(format!("solver {} params '{p}': {e}", s.id)))?;
            }
            if let Some(d) = s.data_types.iter().find(|d| !m.data_types.contains(d)) {
                return Err(bad(format!(
                    "solver {} data type {d} is not in data_types",
                    s.id
                )));
            }
            if !matches!(s.library.as_str(), "" | library::CUTLASS) {
                return Err(bad(format!(
                    "solver {} library '{}': expected \"\" or \"cutlass\"",
                    s.id, s.library
                )));
            }
            if s.arch_specific
                && (s.archs.is_empty() || s.archs.iter().any(|a| !a.starts_with("sm_")))
            {
                return Err(bad(format!(
                    "solver {} is arch_specific: its archs must be listed, NVIDIA (sm_) only",
                    s.id
                )));
            }
            if !matches!(s.math.as_str(), "" | "tf32") {
                return Err(bad(format!(
                    "solver {} math '{}': expected \"\" or \"tf32\"",
                    s.id, s.math
                )));
            }
        }
        Ok(m)
    }
}

/// Toolchain description recorded next to a kdb.
pub fn toolchain(manifest: &Manifest, vendor: Vendor) -> Result<String> {
    if vendor == Vendor::Amd {
        return crate::compile::clang_version();
    }
    let mut line = format!("NVRTC {}", Nvrtc::load()?.version()?);
    if manifest
        .solvers
        .iter()
        .any(|s| s.library == library::CUTLASS)
    {
        let tc = library::LibraryToolchain::find(&crate::compile::default_wheels_dir())?;
        line.push_str(&format!(", {}", tc.describe()));
    }
    Ok(line)
}

/// One code object to build.
#[derive(Clone)]
struct Job {
    kernel_name: String,
    kernel_args: String,
    source: String,
    options: Vec<String>,
    library: String,
    /// The arch NVRTC compiles for (`sm_90a` for an arch-specific solver).
    compile_arch: String,
}

/// The code objects of `manifest` for `arch`, one per kdb key (perf configs that differ only
/// in run-time values share one), sorted by key.
fn jobs(manifest: &Manifest, arch: &str) -> Result<Vec<Job>> {
    let mut jobs: Vec<Job> = Vec::new();
    for s in manifest
        .solvers
        .iter()
        .filter(|s| kiln_format::manifest::builds_for(&s.archs, arch))
    {
        for dt in manifest
            .data_types
            .iter()
            .filter(|d| s.data_types.is_empty() || s.data_types.contains(d))
        {
            for p in &s.params {
                let compiled = kiln_format::manifest::compiled_part(p, s.runtime_values);
                let opts =
                    compile_options(&s.options, dt, compiled).map_err(|e| Error::Target {
                        target: arch.into(),
                        reason: format!("solver {} params '{p}': {e}", s.id),
                    })?;
                let args = kernel_args(&opts, arch);
                let name = kernel_name(&s.source);
                if jobs
                    .iter()
                    .any(|j| j.kernel_name == name && j.kernel_args == args)
                {
                    continue;
                }
                jobs.push(Job {
                    kernel_name: name,
                    kernel_args: args,
                    source: s.source.clone(),
                    options: opts.split(' ').map(String::from).collect(),
                    library: s.library.clone(),
                    compile_arch: if s.arch_specific {
                        format!("{arch}a")
                    } else {
                        arch.to_string()
                    },
                });
            }
        }
    }
    for op in &manifest.operators {
        for dt in &manifest.data_types {
            let opts = compile_options("", dt, "").map_err(|e| Error::Target {
                target: arch.into(),
                reason: format!("operator {}: {e}", op.source),
            })?;
            jobs.push(Job {
                kernel_name: kernel_name(&op.source),
                kernel_args: kernel_args(&opts, arch),
                source: op.source.clone(),
                options: opts.split(' ').map(String::from).collect(),
                library: String::new(),
                compile_arch: arch.to_string(),
            });
        }
    }
    jobs.sort_by(|a, b| (&a.kernel_name, &a.kernel_args).cmp(&(&b.kernel_name, &b.kernel_args)));
    Ok(jobs)
}

/// kiln's own kernel headers (`kernels/*.h`).
pub const KILN_HEADERS: [&str; 6] = [
    "kiln_gpu.h",
    "igemm.h",
    "epilogue.h",
    "library_abi.h",
    "cutlass_config.h",
    "nv_shared.h",
];

/// kiln's own headers (`kernels/*.h`), passed to NVRTC in memory and hashed into library
/// cache keys.
pub fn kiln_headers(kernels_dir: &Path) -> Result<Vec<(String, String)>> {
    let mut headers = Vec::new();
    for h in KILN_HEADERS {
        let p = kernels_dir.join(h);
        headers.push((h.to_string(), crate::input::read_text(&p)?));
    }
    Ok(headers)
}

/// The headers of `headers` that `source` includes (`#include "name"`), directly or through
/// another of them, in `headers`' order: a library object's cache key hashes exactly these,
/// so an edit to a header it does not include does not rebuild it.
fn included_headers(source: &str, headers: &[(String, String)]) -> Vec<(String, String)> {
    let includes = |text: &str, name: &str| {
        text.lines().any(|l| {
            l.trim_start()
                .strip_prefix("#include")
                .is_some_and(|rest| rest.trim() == format!("\"{name}\""))
        })
    };
    let mut taken = vec![false; headers.len()];
    // Each pass adds the headers included by the source or by a header already taken.
    loop {
        let mut grew = false;
        for (i, (name, _)) in headers.iter().enumerate() {
            if taken[i] {
                continue;
            }
            let by_taken = headers
                .iter()
                .zip(&taken)
                .any(|((_, text), &t)| t && includes(text, name));
            if includes(source, name) || by_taken {
                taken[i] = true;
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    headers
        .iter()
        .zip(taken)
        .filter(|(_, t)| *t)
        .map(|(h, _)| h.clone())
        .collect()
}

/// Compiles every variant for `arch` and returns the kdb entries, sorted by key. Objects are
/// built on every core; library objects are taken from the object cache when their inputs are
/// unchanged (`cache`: `None` rebuilds everything).
pub fn build_entries(
    manifest: &Manifest,
    kernels_dir: &Path,
    arch: &str,
    vendor: Vendor,
    cache: Option<&Path>,
) -> Result<Vec<KdbEntry>> {
    let jobs = jobs(manifest, arch)?;
    let objects = compile_jobs(&jobs, kernels_dir, arch, vendor, cache)?;
    Ok(jobs
        .into_iter()
        .zip(objects)
        .map(|(j, object)| KdbEntry {
            object,
            kernel_name: j.kernel_name,
            kernel_args: j.kernel_args,
        })
        .collect())
}

/// Compiles `jobs` for `arch`, one worker per core; the objects come back in `jobs`' order.
fn compile_jobs(
    jobs: &[Job],
    kernels_dir: &Path,
    arch: &str,
    vendor: Vendor,
    cache: Option<&Path>,
) -> Result<Vec<Vec<u8>>> {
    let nvidia = vendor == Vendor::Nvidia;
    let nvrtc = if nvidia { Some(Nvrtc::load()?) } else { None };
    let headers = kiln_headers(kernels_dir)?;
    let library = if jobs.iter().any(|j| !j.library.is_empty()) {
        Some(library::LibraryToolchain::find(
            &crate::compile::default_wheels_dir(),
        )?)
    } else {
        None
    };
    let compile = |job: &Job| -> Result<Vec<u8>> {
        let path = kernels_dir.join(&job.source);
        match (&nvrtc, job.library.as_str()) {
            (None, "") => compile_amd(&path, kernels_dir, arch, &job.options),
            (Some(nvrtc), "") => {
                let source = crate::input::read_text(&path)?;
                let hdrs: Vec<(&str, &str)> = headers
                    .iter()
                    .map(|(n, s)| (n.as_str(), s.as_str()))
                    .collect();
                nvrtc.compile_cubin(&job.source, &source, &hdrs, &job.compile_arch, &job.options)
            }
            (Some(nvrtc), library::CUTLASS) => {
                let source = crate::input::read_text(&path)?;
                let tc = library.as_ref().ok_or_else(|| Error::Target {
                    target: arch.into(),
                    reason: "CUTLASS toolchain not found".into(),
                })?;
                let included = included_headers(&source, &headers);
                library::build(
                    nvrtc,
                    tc,
                    &library::LibraryJob {
                        name: &job.source,
                        source: &source,
                        headers: &included,
                        kernels_dir,
                        arch: &job.compile_arch,
                        options: &job.options,
                    },
                    cache,
                )
            }
            (_, lib) => Err(Error::Target {
                target: arch.into(),
                reason: format!(
                    "{}: library '{lib}' cannot be built for a {} target",
                    job.source,
                    if nvidia { "NVIDIA" } else { "AMD" }
                ),
            }),
        }
    };
    // One worker per core takes the next job: compile times differ by 100x between kiln's
    // kernels and CUTLASS instances, so fixed chunks would leave cores idle.
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(jobs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Vec<(usize, Result<Vec<u8>>)>> = std::thread::scope(|sc| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                sc.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        done.push((i, compile(job)));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join().unwrap_or_else(|_| {
                    vec![(
                        usize::MAX,
                        Err(Error::Target {
                            target: arch.into(),
                            reason: "compile thread panicked".into(),
                        }),
                    )]
                })
            })
            .collect()
    });
    let mut objects: Vec<Option<Vec<u8>>> = vec![None; jobs.len()];
    // Every failure is reported, not only the first: a toolchain change can fail several
    // perf configs at once (each spilling config must leave the manifest).
    let mut failures = Vec::new();
    for (i, r) in results.into_iter().flatten() {
        match r {
            Ok(bytes) => {
                if let Some(slot) = objects.get_mut(i) {
                    *slot = Some(bytes);
                }
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    if !failures.is_empty() {
        failures.sort();
        return Err(Error::Target {
            target: arch.into(),
            reason: format!(
                "{} of {} code objects failed:\n{}",
                failures.len(),
                jobs.len(),
                failures.join("\n")
            ),
        });
    }
    jobs.iter()
        .zip(objects)
        .map(|(j, o)| {
            o.ok_or_else(|| Error::Target {
                target: arch.into(),
                reason: format!("{} {} was not built", j.kernel_name, j.kernel_args),
            })
        })
        .collect()
}

/// Which code objects a kdb check rebuilds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckScope {
    /// Every object of the target.
    All,
    /// About one object in `one_in` of each source file, and at least one per source, picked
    /// by `seed`: a changed source, header, compiler or option template changes every object
    /// of the sources it reaches, so one object per source finds it, at a fraction of the
    /// compile time (CUTLASS objects take minutes each on a small machine).
    Sample {
        /// One object in this many per source file (at least 1).
        one_in: usize,
        /// Picks which objects; the same seed picks the same ones.
        seed: u64,
    },
}

/// What a kdb check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KdbCheck {
    /// Objects the manifest asks for.
    pub objects: usize,
    /// Objects rebuilt and compared byte for byte.
    pub rebuilt: usize,
    /// Why the committed kdb is stale, one line per finding; empty when it is fresh.
    pub stale: Vec<String>,
}

/// Checks the committed kdb of `target_dir` against `manifest` and `kernels_dir`.
///
/// The committed file must hold exactly the manifest's keys, in the build's order, and be the
/// writer's own encoding of its entries; the objects `scope` picks are rebuilt (uncached) and
/// must be byte-identical to the committed ones.
pub fn check_target_kdb(
    manifest: &Manifest,
    kernels_dir: &Path,
    target_dir: &Path,
    committed: &Path,
    scope: CheckScope,
) -> Result<KdbCheck> {
    let cfg = crate::target::TargetConfig::load(target_dir)?;
    let jobs = jobs(manifest, &cfg.arch)?;
    let mut stale = Vec::new();
    let db = match KernelDb::read(committed) {
        Ok(db) => db,
        Err(e) => {
            stale.push(format!("{}: unreadable ({e})", committed.display()));
            return Ok(KdbCheck {
                objects: jobs.len(),
                rebuilt: 0,
                stale,
            });
        }
    };
    let keys_match = db.entries.len() == jobs.len()
        && db
            .entries
            .iter()
            .zip(&jobs)
            .all(|(e, j)| e.kernel_name == j.kernel_name && e.kernel_args == j.kernel_args);
    if !keys_match {
        let have: std::collections::BTreeSet<(&str, &str)> = db
            .entries
            .iter()
            .map(|e| (e.kernel_name.as_str(), e.kernel_args.as_str()))
            .collect();
        let want: std::collections::BTreeSet<(&str, &str)> = jobs
            .iter()
            .map(|j| (j.kernel_name.as_str(), j.kernel_args.as_str()))
            .collect();
        for (n, a) in want.difference(&have).take(5) {
            stale.push(format!("missing {n} {a}"));
        }
        for (n, a) in have.difference(&want).take(5) {
            stale.push(format!("not in the manifest: {n} {a}"));
        }
        if stale.is_empty() {
            stale.push(format!(
                "{} entries, {} expected, or not in the build's order",
                db.entries.len(),
                jobs.len()
            ));
        }
        return Ok(KdbCheck {
            objects: jobs.len(),
            rebuilt: 0,
            stale,
        });
    }
    // The writer is deterministic: the committed bytes must be its encoding of the entries.
    let scratch = std::env::temp_dir().join(format!(
        "kiln-check-{}-{}.kdb",
        std::process::id(),
        cfg.basename
    ));
    db.write(&scratch)?;
    let rewritten = std::fs::read(&scratch);
    let _ = std::fs::remove_file(&scratch);
    if rewritten.map_err(|e| Error::io(&scratch, e))?
        != std::fs::read(committed).map_err(|e| Error::io(committed, e))?
    {
        stale.push("the file is not the kdb writer's encoding of its entries".into());
    }
    let picked = pick_jobs(&jobs, scope);
    let subset: Vec<Job> = picked.iter().map(|&i| jobs[i].clone()).collect();
    let objects = compile_jobs(&subset, kernels_dir, &cfg.arch, cfg.vendor, None)?;
    for (&i, object) in picked.iter().zip(&objects) {
        if db.entries[i].object != *object {
            stale.push(format!(
                "{} {} rebuilds to different bytes",
                jobs[i].kernel_name, jobs[i].kernel_args
            ));
        }
    }
    Ok(KdbCheck {
        objects: jobs.len(),
        rebuilt: picked.len(),
        stale,
    })
}

/// Indices of the jobs `scope` picks, ascending.
fn pick_jobs(jobs: &[Job], scope: CheckScope) -> Vec<usize> {
    let CheckScope::Sample { one_in, seed } = scope else {
        return (0..jobs.len()).collect();
    };
    use sha2::{Digest, Sha256};
    let mut by_source: std::collections::BTreeMap<&str, Vec<(Vec<u8>, usize)>> =
        std::collections::BTreeMap::new();
    for (i, j) in jobs.iter().enumerate() {
        let rank = Sha256::new()
            .chain_update(seed.to_le_bytes())
            .chain_update(j.kernel_name.as_bytes())
            .chain_update([0])
            .chain_update(j.kernel_args.as_bytes())
            .finalize()
            .to_vec();
        by_source.entry(&j.source).or_default().push((rank, i));
    }
    let mut picked: Vec<usize> = by_source
        .into_values()
        .flat_map(|mut group| {
            group.sort();
            let take = group.len().div_ceil(one_in.max(1));
            group.into_iter().take(take).map(|(_, i)| i)
        })
        .collect();
    picked.sort_unstable();
    picked
}

/// Builds `<targets_dir>/<base>/<base>.kdb`; returns (path, entries, toolchain).
pub fn build_target_kdb(
    manifest: &Manifest,
    kernels_dir: &Path,
    target_dir: &Path,
    out: &Path,
    cache: Option<&Path>,
) -> Result<(usize, String)> {
    let cfg = crate::target::TargetConfig::load(target_dir)?;
    let entries = build_entries(manifest, kernels_dir, &cfg.arch, cfg.vendor, cache)?;
    let n = entries.len();
    KernelDb { entries }.write(out)?;
    Ok((n, toolchain(manifest, cfg.vendor)?))
}

#[cfg(test)]
mod tests {
    use super::{included_headers, pick_jobs, CheckScope, Job};

    fn job(source: &str, i: usize) -> Job {
        Job {
            kernel_name: format!("{source}.o"),
            kernel_args: format!("-DCONFIG={i}"),
            source: source.into(),
            options: Vec::new(),
            library: String::new(),
            compile_arch: "gfx942".into(),
        }
    }

    #[test]
    fn a_sample_takes_a_share_of_each_source_and_one_of_a_small_one() {
        let jobs: Vec<Job> = (0..20)
            .map(|i| job("big.cpp", i))
            .chain((0..3).map(|i| job("small.cpp", i)))
            .chain([job("one.cpp", 0)])
            .collect();
        let sample = |seed| pick_jobs(&jobs, CheckScope::Sample { one_in: 8, seed });
        let picked = sample(1);
        let count = |src: &str| picked.iter().filter(|&&i| jobs[i].source == src).count();
        // ceil(20 / 8) = 3, ceil(3 / 8) = 1, ceil(1 / 8) = 1.
        assert_eq!(
            (count("big.cpp"), count("small.cpp"), count("one.cpp")),
            (3, 1, 1)
        );
        assert!(picked.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(sample(1), picked, "the same seed picks the same objects");
        assert!(
            (2..40).any(|s| sample(s) != picked),
            "seeds pick differently"
        );
        assert_eq!(
            pick_jobs(&jobs, CheckScope::All),
            (0..24).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_library_key_hashes_only_the_headers_its_source_reaches() {
        let h = |n: &str, t: &str| (n.to_string(), t.to_string());
        let headers = [
            h("kiln_gpu.h", "#pragma once"),
            h("igemm.h", "#include \"epilogue.h\""),
            h("epilogue.h", "#include \"kiln_gpu.h\""),
        ];
        let names = |src: &str| -> Vec<String> {
            included_headers(src, &headers)
                .into_iter()
                .map(|(n, _)| n)
                .collect()
        };
        assert_eq!(names("#include \"kiln_gpu.h\"\nint x;"), ["kiln_gpu.h"]);
        // Through two levels, in the list's order.
        assert_eq!(
            names("  #include \"igemm.h\""),
            ["kiln_gpu.h", "igemm.h", "epilogue.h"]
        );
        assert!(names("// #include \"igemm.h\" is not here").is_empty());
    }
}
