//! Building "library" kernels: NVIDIA code objects compiled against the pinned CUTLASS headers
//! (`ci/cuda-wheels.txt`: nvidia-cutlass, CCCL and CUDA runtime headers, NVRTC, ptxas).
//!
//! The route is NVRTC -> PTX -> unreferenced module-scope globals stripped -> `ptxas` -> cubin.
//! NVRTC needs `-default-device` for CUTLASS (it has unannotated `constexpr` functions), which
//! turns every `constexpr` static member into a device global: thousands of them, none used,
//! and a cubin that takes 10-50 ms to load. Stripping them gives the same code in a cubin that
//! loads in about 0.1 ms. The build gates each object: no local memory (a spilling perf config
//! must leave the manifest), no `C7510` (wgmma serialized across a function boundary), and the
//! output is a pure function of its inputs, cached under their sha256.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::compile::Nvrtc;
use crate::error::{Error, Result};

/// `library = "cutlass"` in the manifest.
pub const CUTLASS: &str = "cutlass";

fn fail(what: impl Into<String>, reason: impl Into<String>) -> Error {
    Error::Target {
        target: what.into(),
        reason: reason.into(),
    }
}

/// The installed wheels a library build reads (from `ci/setup.sh`).
#[derive(Clone, Debug)]
pub struct LibraryToolchain {
    wheels: PathBuf,
    /// Installed wheel versions (`nvidia_cutlass-4.2.0.0`, ...): part of every cache key.
    pub versions: Vec<String>,
}

impl LibraryToolchain {
    /// Finds the wheels under `wheels` (normally [`crate::compile::default_wheels_dir`]) and
    /// checks that every header tree and `ptxas` is there.
    pub fn find(wheels: &Path) -> Result<LibraryToolchain> {
        let tc = LibraryToolchain {
            wheels: wheels.to_path_buf(),
            versions: Vec::new(),
        };
        for p in tc.include_dirs().iter().chain([&tc.ptxas()]) {
            if !p.exists() {
                return Err(fail(
                    "cutlass",
                    format!(
                        "{} is missing: run ci/setup.sh (installs ci/cuda-wheels.txt)",
                        p.display()
                    ),
                ));
            }
        }
        let mut versions: Vec<String> = std::fs::read_dir(wheels)
            .map_err(|e| Error::io(wheels, e))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".dist-info"))
                    .map(String::from)
            })
            .collect();
        versions.sort();
        Ok(LibraryToolchain { versions, ..tc })
    }

    /// Include folders: CUTLASS, libcu++ (CCCL), the CUDA runtime headers, nvcc's crt headers.
    pub fn include_dirs(&self) -> Vec<PathBuf> {
        [
            "cutlass_library/source/include",
            "nvidia/cuda_cccl/include",
            "nvidia/cuda_runtime/include",
            "nvidia/cuda_nvcc/include",
        ]
        .iter()
        .map(|d| self.wheels.join(d))
        .collect()
    }

    /// The wheel's `ptxas`.
    pub fn ptxas(&self) -> PathBuf {
        self.wheels.join("nvidia/cuda_nvcc/bin/ptxas")
    }

    /// One line for the target's provenance.
    pub fn describe(&self) -> String {
        self.versions
            .iter()
            .filter(|v| v.starts_with("nvidia_cutlass") || v.starts_with("nvidia_cuda_nvcc"))
            .map(|v| v.replace('_', "-"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One library object to build.
pub struct LibraryJob<'a> {
    /// File name, for messages.
    pub name: &'a str,
    /// Kernel source text.
    pub source: &'a str,
    /// kiln's own headers the source includes (name, text): part of the cache key.
    pub headers: &'a [(String, String)],
    /// kiln's kernels folder (for `#include "kiln_gpu.h"`).
    pub kernels_dir: &'a Path,
    /// `sm_80`, `sm_90`...
    pub arch: &'a str,
    /// The variant's `-D` options.
    pub options: &'a [String],
}

impl LibraryJob<'_> {
    /// sha256 over everything the object depends on.
    pub fn cache_key(&self, tc: &LibraryToolchain) -> String {
        let mut h = Sha256::new();
        let mut field = |b: &[u8]| {
            h.update((b.len() as u64).to_le_bytes());
            h.update(b);
        };
        field(b"kiln-library-object-v1");
        for v in &tc.versions {
            field(v.as_bytes());
        }
        field(self.source.as_bytes());
        for (n, t) in self.headers {
            field(n.as_bytes());
            field(t.as_bytes());
        }
        field(self.arch.as_bytes());
        for o in self.options {
            field(o.as_bytes());
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Where built objects are cached (`KILN_OBJECT_CACHE`, default `$KILN_TOOLS/object-cache`).
pub fn default_cache_dir() -> PathBuf {
    std::env::var_os("KILN_OBJECT_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            crate::compile::default_wheels_dir()
                .parent()
                .map(|p| p.join("object-cache"))
                .unwrap_or_else(|| PathBuf::from("object-cache"))
        })
}

/// Builds (or takes from `cache`) one library object.
pub fn build(
    nvrtc: &Nvrtc,
    tc: &LibraryToolchain,
    job: &LibraryJob<'_>,
    cache: Option<&Path>,
) -> Result<Vec<u8>> {
    let key = job.cache_key(tc);
    let cached = cache.map(|c| c.join(format!("{key}.cubin")));
    if let Some(path) = &cached {
        if let Ok(bytes) = std::fs::read(path) {
            return Ok(bytes);
        }
    }
    let mut options: Vec<String> = vec!["-default-device".into(), "-DNDEBUG".into()];
    options.push(format!("-I{}", job.kernels_dir.display()));
    options.extend(
        tc.include_dirs()
            .iter()
            .map(|d| format!("-I{}", d.display())),
    );
    options.extend(job.options.iter().cloned());
    let ptx = nvrtc.compile_ptx(job.name, job.source, job.arch, &options)?;
    let stripped = strip_unreferenced_globals(&ptx);
    let cubin = ptxas(tc, &stripped, job.arch).map_err(|reason| {
        fail(
            job.name,
            format!("{} {:?}: {reason}", job.arch, job.options.join(" ")),
        )
    })?;
    if let (Some(path), Some(dir)) = (&cached, cache) {
        // A cache that cannot be written only costs time.
        if std::fs::create_dir_all(dir).is_ok() {
            let _ = crate::input::write_atomic(path, &cubin);
        }
    }
    Ok(cubin)
}

/// Runs the wheel's `ptxas` on `ptx` for `arch` and applies the build gates.
fn ptxas(tc: &LibraryToolchain, ptx: &str, arch: &str) -> std::result::Result<Vec<u8>, String> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let stem = std::env::temp_dir().join(format!(
        "kiln-ptxas-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let (input, output) = (stem.with_extension("ptx"), stem.with_extension("cubin"));
    std::fs::write(&input, ptx).map_err(|e| format!("cannot write {}: {e}", input.display()))?;
    let run = Command::new(tc.ptxas())
        .arg(format!("-arch={arch}"))
        .args(["-O3", "-v"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output();
    let _ = std::fs::remove_file(&input);
    let run = run.map_err(|e| format!("cannot run {}: {e}", tc.ptxas().display()))?;
    let log = String::from_utf8_lossy(&run.stderr).into_owned();
    let result = if !run.status.success() {
        Err(format!("ptxas failed:\n{log}"))
    } else {
        check_ptxas_log(&log).and_then(|()| {
            std::fs::read(&output).map_err(|e| format!("cannot read ptxas output: {e}"))
        })
    };
    let _ = std::fs::remove_file(&output);
    result
}

/// The build gates on `ptxas -v`'s report: no stack frame, no spills, no `C7510`.
pub fn check_ptxas_log(log: &str) -> std::result::Result<(), String> {
    if log.contains("C7510") {
        return Err(format!(
            "ptxas serialized wgmma (C7510): build with -DNDEBUG and keep wgmma in one function\n{log}"
        ));
    }
    for line in log.lines() {
        let line = line.trim();
        if line.contains("bytes stack frame") {
            let counts: Vec<u64> = line
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|t| t.parse().ok())
                .collect();
            if counts.iter().any(|&n| n != 0) {
                return Err(format!(
                    "uses local memory ({line}): this perf config spills; remove it from \
                     kernels/manifest.toml"
                ));
            }
        }
    }
    Ok(())
}

/// A module-scope `.global` / `.const` declaration's symbol name, if `line` starts one.
fn declared_global(line: &str) -> Option<&str> {
    if !(line.starts_with(".global ") || line.starts_with(".const ")) {
        return None;
    }
    let head = line.split(['=', ';']).next()?.trim_end();
    let head = head.split('[').next()?.trim_end();
    head.rsplit(char::is_whitespace).next()
}

fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.'))
        .filter(|t| !t.is_empty())
}

/// Removes every module-scope `.global` / `.const` variable that no other line of `ptx`
/// names (repeated until none is left, since one initializer may name another global).
/// Everything else is kept byte for byte, so the stripped PTX is deterministic.
pub fn strip_unreferenced_globals(ptx: &str) -> String {
    // Declarations may span lines (array initializers): a declaration runs to its `;`.
    let mut items: Vec<(Option<String>, String)> = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in ptx.split_inclusive('\n') {
        if let Some((name, mut text)) = open.take() {
            text.push_str(line);
            if line.contains(';') {
                items.push((Some(name), text));
            } else {
                open = Some((name, text));
            }
            continue;
        }
        match declared_global(line) {
            Some(name) if line.contains(';') => items.push((Some(name.into()), line.into())),
            Some(name) => open = Some((name.into(), line.into())),
            None => items.push((None, line.into())),
        }
    }
    if let Some((name, text)) = open {
        items.push((Some(name), text));
    }
    loop {
        let mut used: BTreeSet<&str> = BTreeSet::new();
        for (name, text) in &items {
            let body = match name {
                // A declaration names itself once; what else it names counts.
                Some(n) => text.split_once(n.as_str()).map_or("", |(_, rest)| rest),
                None => text.as_str(),
            };
            used.extend(identifiers(body));
        }
        let before = items.len();
        let keep: Vec<bool> = items
            .iter()
            .map(|(name, _)| name.as_deref().is_none_or(|n| used.contains(n)))
            .collect();
        let mut k = keep.iter();
        items.retain(|_| *k.next().unwrap_or(&true));
        if items.len() == before {
            break;
        }
    }
    items.into_iter().map(|(_, t)| t).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreferenced_globals_go_and_used_ones_stay() {
        let ptx = "\
.version 8.8
.target sm_90
.global .align 1 .u8 _ZN4cuda3std5valueE;
.global .align 8 .u64 unused_init = 2;
.global .align 4 .b8 table[8] = {1, 2, 3, 4,
 5, 6, 7, 8};
.const .align 8 .u64 used_by_global = 7;
.global .align 8 .u64 used_ptr = generic(used_by_global);
.global .align 4 .u32 dead_chain = 1;
.global .align 8 .u64 dead_ptr = generic(dead_chain);
.visible .entry k(
)
{
\tld.global.u64 %rd1, [used_ptr];
\tld.global.u32 %r1, [table];
}
";
        let out = strip_unreferenced_globals(ptx);
        assert!(!out.contains("_ZN4cuda3std5valueE"));
        assert!(!out.contains("unused_init"));
        assert!(!out.contains("dead_chain") && !out.contains("dead_ptr"));
        assert!(out.contains(".global .align 4 .b8 table[8] = {1, 2, 3, 4,\n 5, 6, 7, 8};\n"));
        assert!(out.contains("used_by_global = 7;"));
        assert!(out.contains("used_ptr = generic(used_by_global);"));
        assert!(out.contains("ld.global.u64 %rd1, [used_ptr];"));
        assert_eq!(strip_unreferenced_globals(&out), out);
    }

    #[test]
    fn the_gates_refuse_spills_and_serialized_wgmma() {
        let clean = "ptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
        assert!(check_ptxas_log(clean).is_ok());
        let spill = "    704 bytes stack frame, 704 bytes spill stores, 704 bytes spill loads\n";
        assert!(check_ptxas_log(spill).unwrap_err().contains("spills"));
        let c7510 = "ptxas warning : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized\n";
        assert!(check_ptxas_log(c7510).unwrap_err().contains("C7510"));
    }
}
