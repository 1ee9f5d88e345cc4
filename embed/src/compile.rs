//! Compiling kernel sources to code objects ahead of time: clang-19 for AMD (raw HIP mode, one
//! ELF per arch, code object v4) and NVRTC 12.9 for NVIDIA (cubin), with flags that make the
//! output byte-identical from run to run.

use std::ffi::{c_char, c_int, CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// A compile failure or a missing toolchain.
fn fail(what: impl Into<String>, reason: impl Into<String>) -> Error {
    Error::Target {
        target: what.into(),
        reason: reason.into(),
    }
}

/// The clang used for AMD (`KILN_CLANG`, default `clang++-19`).
pub fn clang() -> String {
    std::env::var("KILN_CLANG").unwrap_or_else(|_| "clang++-19".into())
}

/// clang's version line, for provenance.
pub fn clang_version() -> Result<String> {
    let out = Command::new(clang())
        .arg("--version")
        .output()
        .map_err(|e| {
            fail(
                "clang",
                format!("cannot run {} ({e}); run ci/setup.sh", clang()),
            )
        })?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string())
}

/// Compiles `source` for an AMD arch. `options` are the variant's `-D...` flags.
pub fn compile_amd(
    source: &Path,
    include_dir: &Path,
    arch: &str,
    options: &[String],
) -> Result<Vec<u8>> {
    // A name unique to this call: parallel compiles of one source for one arch (different
    // options) must never share an output file.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let tmp = std::env::temp_dir().join(format!(
        "kiln-{}-{}-{}-{arch}.co",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        source.file_stem().and_then(|s| s.to_str()).unwrap_or("k")
    ));
    let out = Command::new(clang())
        .args([
            "-x",
            "hip",
            "-DKILN_AMD_RAW",
            "-nogpulib",
            "-nogpuinc",
            "-mcode-object-version=4",
        ])
        // clang-19 otherwise emits a random __hip_cuid_* symbol: outputs would differ per run.
        .arg("-fuse-cuid=none")
        .arg(format!("--offload-arch={arch}"))
        .args([
            "--cuda-device-only",
            "--no-gpu-bundle-output",
            "-O3",
            "-std=c++17",
        ])
        .arg(format!("-I{}", include_dir.display()))
        .args(options)
        .arg(source)
        .arg("-o")
        .arg(&tmp)
        .output()
        .map_err(|e| {
            fail(
                source.display().to_string(),
                format!("cannot run {} ({e}); run ci/setup.sh", clang()),
            )
        })?;
    if !out.status.success() {
        return Err(fail(
            source.display().to_string(),
            format!(
                "clang for {arch} {options:?} failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ),
        ));
    }
    let bytes = std::fs::read(&tmp).map_err(|e| Error::io(&tmp, e))?;
    let _ = std::fs::remove_file(&tmp);
    Ok(bytes)
}

type NvrtcProgram = *mut std::ffi::c_void;
type CreateFn = unsafe extern "C" fn(
    *mut NvrtcProgram,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type CompileFn = unsafe extern "C" fn(NvrtcProgram, c_int, *const *const c_char) -> c_int;
type SizeFn = unsafe extern "C" fn(NvrtcProgram, *mut usize) -> c_int;
type GetFn = unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut NvrtcProgram) -> c_int;
type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;

/// NVRTC loaded at run time from the PyPI wheel (`nvidia-cuda-nvrtc-cu12`).
pub struct Nvrtc {
    lib: libloading::Library,
    /// Where it was loaded from.
    pub path: PathBuf,
}

/// Where `ci/setup.sh` puts the CUDA wheels.
pub fn default_wheels_dir() -> PathBuf {
    let tools = std::env::var_os("KILN_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/kiln-tools")
        });
    tools.join("cuda-wheels")
}

impl Nvrtc {
    /// Loads `KILN_NVRTC` or the wheel's `libnvrtc.so.12` (kept beside its builtins library,
    /// which it needs).
    pub fn load() -> Result<Nvrtc> {
        let path = std::env::var_os("KILN_NVRTC")
            .map(PathBuf::from)
            .unwrap_or_else(|| default_wheels_dir().join("nvidia/cuda_nvrtc/lib/libnvrtc.so.12"));
        // SAFETY: loading NVRTC runs its initialisers, which have no preconditions.
        let lib = unsafe { libloading::Library::new(&path) }.map_err(|e| {
            fail(
                "nvrtc",
                format!(
                    "cannot load {} ({e}); run ci/setup.sh or set KILN_NVRTC",
                    path.display()
                ),
            )
        })?;
        Ok(Nvrtc { lib, path })
    }

    fn sym<T: Copy>(&self, name: &[u8]) -> Result<T> {
        // SAFETY: the symbol types above match NVRTC 12's C declarations.
        unsafe { self.lib.get::<T>(name).map(|s| *s) }.map_err(|e| {
            fail(
                "nvrtc",
                format!(
                    "{} lacks {}: {e}",
                    self.path.display(),
                    String::from_utf8_lossy(name)
                ),
            )
        })
    }

    /// NVRTC's version, e.g. `12.9`.
    pub fn version(&self) -> Result<String> {
        let f: VersionFn = self.sym(b"nvrtcVersion\0")?;
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two valid out-pointers.
        unsafe { f(&mut major, &mut minor) };
        Ok(format!("{major}.{minor}"))
    }

    /// Compiles `source` (with in-memory headers) to a cubin for `arch` (`sm_90`).
    pub fn compile_cubin(
        &self,
        name: &str,
        source: &str,
        headers: &[(&str, &str)],
        arch: &str,
        options: &[String],
    ) -> Result<Vec<u8>> {
        self.compile(name, source, headers, arch, options, false)
    }

    /// Compiles `source` to PTX for the virtual arch of `arch` (`sm_90` -> `compute_90`).
    pub fn compile_ptx(
        &self,
        name: &str,
        source: &str,
        arch: &str,
        options: &[String],
    ) -> Result<String> {
        let virtual_arch = arch.replacen("sm_", "compute_", 1);
        let bytes = self.compile(name, source, &[], &virtual_arch, options, true)?;
        let text = CStr::from_bytes_until_nul(&bytes)
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned());
        Ok(text)
    }

    fn compile(
        &self,
        name: &str,
        source: &str,
        headers: &[(&str, &str)],
        arch: &str,
        options: &[String],
        ptx: bool,
    ) -> Result<Vec<u8>> {
        let create: CreateFn = self.sym(b"nvrtcCreateProgram\0")?;
        let compile: CompileFn = self.sym(b"nvrtcCompileProgram\0")?;
        let log_size: SizeFn = self.sym(b"nvrtcGetProgramLogSize\0")?;
        let log: GetFn = self.sym(b"nvrtcGetProgramLog\0")?;
        let (cubin_size, cubin): (SizeFn, GetFn) = if ptx {
            (self.sym(b"nvrtcGetPTXSize\0")?, self.sym(b"nvrtcGetPTX\0")?)
        } else {
            (
                self.sym(b"nvrtcGetCUBINSize\0")?,
                self.sym(b"nvrtcGetCUBIN\0")?,
            )
        };
        let destroy: DestroyFn = self.sym(b"nvrtcDestroyProgram\0")?;
        let cstr = |s: &str| {
            CString::new(s).map_err(|_| fail(name, "NUL byte in source, header or option"))
        };
        let src = cstr(source)?;
        let cname = cstr(name)?;
        let hdr_src: Vec<CString> = headers
            .iter()
            .map(|(_, s)| cstr(s))
            .collect::<Result<_>>()?;
        let hdr_name: Vec<CString> = headers
            .iter()
            .map(|(n, _)| cstr(n))
            .collect::<Result<_>>()?;
        let hdr_src_p: Vec<*const c_char> = hdr_src.iter().map(|c| c.as_ptr()).collect();
        let hdr_name_p: Vec<*const c_char> = hdr_name.iter().map(|c| c.as_ptr()).collect();
        let mut opts: Vec<CString> = vec![
            cstr(&format!("--gpu-architecture={arch}"))?,
            cstr("--std=c++17")?,
        ];
        for o in options {
            opts.push(cstr(o)?);
        }
        let opts_p: Vec<*const c_char> = opts.iter().map(|c| c.as_ptr()).collect();
        let mut prog: NvrtcProgram = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call; counts match the arrays.
        let rc = unsafe {
            create(
                &mut prog,
                src.as_ptr(),
                cname.as_ptr(),
                headers.len() as c_int,
                hdr_src_p.as_ptr(),
                hdr_name_p.as_ptr(),
            )
        };
        if rc != 0 {
            return Err(fail(name, format!("nvrtcCreateProgram failed ({rc})")));
        }
        // SAFETY: prog was created above; buffers are sized from NVRTC's own answers.
        let result = unsafe {
            let rc = compile(prog, opts_p.len() as c_int, opts_p.as_ptr());
            if rc != 0 {
                let mut n = 0usize;
                log_size(prog, &mut n);
                let mut buf = vec![0u8; n.max(1)];
                log(prog, buf.as_mut_ptr().cast());
                let text = CStr::from_bytes_until_nul(&buf)
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_default();
                Err(fail(
                    name,
                    format!("NVRTC for {arch} {options:?} failed ({rc}):\n{text}"),
                ))
            } else {
                let mut n = 0usize;
                cubin_size(prog, &mut n);
                let mut buf = vec![0u8; n];
                if cubin(prog, buf.as_mut_ptr().cast()) != 0 || n == 0 {
                    Err(fail(name, "NVRTC returned no output"))
                } else {
                    Ok(buf)
                }
            }
        };
        // SAFETY: prog is valid and destroyed once.
        unsafe { destroy(&mut prog) };
        result
    }
}
