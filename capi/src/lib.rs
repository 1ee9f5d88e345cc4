//! kiln's C interface (`kiln.h`, `libkiln.a`, `libkiln.so`), shaped like MIOpen's Find 2.0:
//!
//! 1. a **handle** on a device (`kiln_handle_create`, or a caller's CUDA context or HIP
//!    device), or a planning handle on a named target without any device;
//! 2. a **problem** from a convolution description (`kiln_conv_desc`: three packed tensors,
//!    padding, stride, dilation, groups, math mode) or from a MIOpen find-db key;
//! 3. **find**: the ranked solutions, each with its workspace size and where its rank came
//!    from (the target's find-db, the nearest measured problem, or the cost model);
//! 4. a **solution**: one of them chosen (its kernels loaded), saved as bytes and loaded back;
//! 5. **run** on the caller's device buffers and stream.
//!
//! Whole networks (`kiln_net_*`): one of kiln's definitions built on a handle's device for a
//! batch size, from safetensors bytes, its forward pass replayed on the caller's stream.
//!
//! Every call returns a `kiln_status`; `kiln_last_error()` says what was wrong and where (per
//! thread). No panic crosses the boundary. Every object has a destroy function, which accepts
//! NULL. Threads: handles, problems and solutions are immutable once made and may be used from
//! several threads at once (the invoker cache inside a handle is locked); runs are ordered by
//! the stream they are given.

#![allow(non_camel_case_types)]
#![warn(missing_docs)]

mod desc;
mod host;
mod net;
mod saved;
mod status;

use std::ffi::{c_char, c_void, CStr};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use kiln::backend::{Device, DeviceBuffer, Stream};
use kiln::context::Context;
use kiln::format::text::excerpt;
use kiln::invoker::Invoker;
use kiln::resolve::{Provenance, Variant};
use kiln::solvers::TargetCaps;
use kiln::{ConvProblem, EmbeddedTarget};

pub use desc::*;
pub use host::*;
pub use net::*;
pub use status::*;

/// Where a solution's rank came from: one of the `KILN_PROVENANCE_*` values.
pub type kiln_provenance = i32;
/// The problem's own find-db record (measured on this target).
pub const KILN_PROVENANCE_FIND_DB: kiln_provenance = 0;
/// The nearest measured problem's time for the solver, scaled by the work ratio.
pub const KILN_PROVENANCE_NEAREST: kiln_provenance = 1;
/// The solver's cost model (nothing measured near the problem).
pub const KILN_PROVENANCE_COST_MODEL: kiln_provenance = 2;
/// Loaded from saved bytes (`kiln_solution_load`): no rank.
pub const KILN_PROVENANCE_SAVED: kiln_provenance = 3;

/// Longest solver id, perf config or find-db key a `kiln_solution_info` holds, NUL included.
pub const KILN_NAME_BYTES: usize = 128;

/// One ranked solution, as `kiln_find_solutions` writes it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct kiln_solution_info {
    /// `sizeof(kiln_solution_info)` as this library knows it (later versions may add fields).
    pub struct_size: u32,
    /// 1 for the best.
    pub rank: u32,
    /// A `KILN_PROVENANCE_*` value.
    pub provenance: kiln_provenance,
    /// Zero (keeps the struct free of padding, so copies compare byte for byte).
    pub reserved: u32,
    /// Measured or estimated time, milliseconds.
    pub time_ms: f64,
    /// Device workspace the solution needs, bytes (pass at least this much to run).
    pub workspace_bytes: u64,
    /// The solver's id, NUL-terminated.
    pub solver: [c_char; KILN_NAME_BYTES],
    /// Its perf config, NUL-terminated.
    pub params: [c_char; KILN_NAME_BYTES],
    /// For `KILN_PROVENANCE_NEAREST`: the measured problem's find-db key; else empty.
    pub nearest_key: [c_char; KILN_NAME_BYTES],
}

/// What a handle runs on, as `kiln_handle_get_info` writes it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct kiln_handle_info {
    /// `sizeof(kiln_handle_info)` as this library knows it (later versions may add fields).
    pub struct_size: u32,
    /// The embedded target's basename (`sm_90_132`), NUL-terminated.
    pub target: [c_char; KILN_NAME_BYTES],
    /// The device: spec and name (`cuda:0 NVIDIA H100 80GB HBM3`); empty for a planning handle.
    pub device: [c_char; KILN_NAME_BYTES],
    /// The device's arch (`sm_90`), or the target's for a planning handle.
    pub arch: [c_char; KILN_NAME_BYTES],
    /// The device's SM/CU count, or the target's for a planning handle.
    pub compute_units: u32,
    /// 1 when the handle has a device (can run), 0 for a planning handle.
    pub has_device: i32,
    /// 1 when the target was built for this arch and CU count; 0 when it is the closest CU
    /// count of the arch, or (NVIDIA) a lower arch of the same major version.
    pub exact_target: i32,
    /// 1 when the target's find-db measured kiln's solvers, 0 when every rank is the cost
    /// model's.
    pub measured_find_db: i32,
}

/// What a handle holds; solutions and buffers keep it alive.
struct Shared {
    target: &'static EmbeddedTarget,
    exact: bool,
    /// `None` for a planning handle.
    context: Option<Context>,
}

impl Shared {
    fn context(&self) -> Result<&Context, Failure> {
        self.context.as_ref().ok_or_else(|| {
            Failure::new(
                KILN_ERROR_NO_DEVICE,
                format!(
                    "this handle plans for target {} without a device; create it with kiln_handle_create to run",
                    self.target.basename
                ),
            )
        })
    }
}

/// A device (or a target, for planning) and kiln's state on it.
pub struct kiln_handle {
    shared: Arc<Shared>,
}

/// A convolution problem.
pub struct kiln_problem {
    problem: ConvProblem,
}

/// A chosen solution of a problem, its kernels loaded when the handle has a device.
pub struct kiln_solution {
    shared: Arc<Shared>,
    problem: ConvProblem,
    variant: Variant,
    invoker: Option<Arc<Invoker>>,
    info: kiln_solution_info,
}

/// Device memory kiln allocated (for callers without a GPU SDK of their own).
pub struct kiln_buffer {
    buffer: DeviceBuffer,
    _shared: Arc<Shared>,
}

/// `*p`, or an error naming the argument.
///
/// # Safety
/// `p` is null or points to a live `T`.
unsafe fn arg<'a, T>(p: *const T, name: &str) -> Result<&'a T, Failure> {
    // SAFETY: the caller's contract.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::bad_param(format!("{name} is NULL")))
}

/// A C string argument as UTF-8.
///
/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn text<'a>(p: *const c_char, name: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::bad_param(format!("{name} is NULL")));
    }
    // SAFETY: the caller's contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Failure::bad_param(format!("{name} is not UTF-8")))
}

/// Writes `value` to an out-pointer, or fails naming it.
///
/// # Safety
/// `out` is null or writable.
unsafe fn put<T>(out: *mut T, name: &str, value: T) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::bad_param(format!("{name} is NULL")));
    }
    // SAFETY: the caller's contract; checked non-null.
    unsafe { out.write(value) };
    Ok(())
}

/// Copies `s` into a fixed, NUL-terminated C array.
fn fixed(s: &str, what: &str) -> Result<[c_char; KILN_NAME_BYTES], Failure> {
    if s.len() >= KILN_NAME_BYTES || s.as_bytes().contains(&0) {
        return Err(Failure::new(
            KILN_ERROR_INTERNAL,
            format!(
                "{what} '{s}' does not fit kiln's {KILN_NAME_BYTES}-byte names (a kiln bug: a test keeps them shorter)"
            ),
        ));
    }
    let mut out = [0 as c_char; KILN_NAME_BYTES];
    for (o, b) in out.iter_mut().zip(s.bytes()) {
        *o = b as c_char;
    }
    Ok(out)
}

/// Copies as much of `s` as fits into a fixed C array, NUL-terminated (for free text, such as
/// a message, where a cut is better than an error).
fn truncated<const N: usize>(s: &str) -> [c_char; N] {
    let mut out = [0 as c_char; N];
    for (o, b) in out.iter_mut().zip(s.bytes().take(N.saturating_sub(1))) {
        *o = b as c_char;
    }
    out
}

/// A fixed C array's string (up to its NUL), or an error naming the field.
fn unfixed<'a>(a: &'a [c_char; KILN_NAME_BYTES], what: &str) -> Result<&'a str, Failure> {
    // SAFETY: c_char and u8 have the same size and alignment.
    let bytes: &[u8] = unsafe { std::slice::from_raw_parts(a.as_ptr().cast(), a.len()) };
    let end = bytes.iter().position(|&b| b == 0).ok_or_else(|| {
        Failure::bad_param(format!(
            "{what} is not NUL-terminated within {KILN_NAME_BYTES} bytes"
        ))
    })?;
    std::str::from_utf8(&bytes[..end])
        .map_err(|_| Failure::bad_param(format!("{what} is not UTF-8")))
}

/// Frees an object the caller got from kiln (NULL: nothing); a panic in its drop is caught.
///
/// # Safety
/// `p` is NULL or came from `Box::into_raw` in this crate and is not used afterwards.
unsafe fn destroy<T>(p: *mut T) {
    if !p.is_null() {
        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the caller's contract.
            drop(unsafe { Box::from_raw(p) })
        }));
    }
}

/// Hands a new object to the caller through `out`.
///
/// # Safety
/// `out` is writable.
unsafe fn give<T>(out: *mut *mut T, value: T) {
    // SAFETY: the caller's contract.
    unsafe { out.write(Box::into_raw(Box::new(value))) }
}

fn start_logging() -> Result<(), Failure> {
    kiln::logging::init_from_env()
        .map(|_| ())
        .map_err(Failure::bad_param)
}

fn new_handle(out: *mut *mut kiln_handle, shared: Shared) -> Result<(), Failure> {
    // SAFETY: the caller checked `out`.
    unsafe {
        give(
            out,
            kiln_handle {
                shared: Arc::new(shared),
            },
        )
    };
    Ok(())
}

/// Clears an out-pointer first, so a failed call leaves NULL there.
///
/// # Safety
/// `out` is null or writable.
unsafe fn clear<T>(out: *mut *mut T, name: &str) -> Result<(), Failure> {
    // SAFETY: the caller's contract.
    unsafe { put(out, name, std::ptr::null_mut()) }
}

fn on_device(device: Device) -> Result<Shared, Failure> {
    let context = Context::new(device)?;
    Ok(Shared {
        target: context.target(),
        exact: context.exact_target(),
        context: Some(context),
    })
}

/// kiln's version, `major.minor.patch` (a static string).
#[unsafe(no_mangle)]
pub extern "C" fn kiln_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The message of the last failed kiln call on this thread (empty if none). Valid until this
/// thread's next failing kiln call.
#[unsafe(no_mangle)]
pub extern "C" fn kiln_last_error() -> *const c_char {
    last_error_ptr()
}

/// The driver's numeric result (`CUresult` / `hipError_t`) of this thread's last failed kiln
/// call, 0 when that failure was not the driver's. A CUDA context error that sticks (700
/// `CUDA_ERROR_ILLEGAL_ADDRESS` and the like) means the handle must be recreated.
#[unsafe(no_mangle)]
pub extern "C" fn kiln_last_error_code() -> i32 {
    status::last_driver_code()
}

/// A status's name (`"KILN_ERROR_BAD_PARAM"`; `"KILN_UNKNOWN_STATUS"` for other values).
#[unsafe(no_mangle)]
pub extern "C" fn kiln_status_name(status: kiln_status) -> *const c_char {
    STATUS_NAMES
        .iter()
        .find(|(s, _)| *s == status)
        .map_or("KILN_UNKNOWN_STATUS\0", |(_, n)| n)
        .as_ptr()
        .cast()
}

/// Opens a device (`"cuda:0"`, `"cuda://GPU-<uuid>"`, `"hip:0"`; NULL: `KILN_DEVICE`, else the
/// first GPU found) and the embedded target for it (exact CU count, else the closest of its
/// arch, with a warning in the log). Also installs kiln's stderr logger at `KILN_LOG_LEVEL`.
///
/// # Safety
/// `device_spec` is NULL or a NUL-terminated string; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_handle_create(
    device_spec: *const c_char,
    out: *mut *mut kiln_handle,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        unsafe { clear(out, "out")? };
        let spec = if device_spec.is_null() {
            None
        } else {
            // SAFETY: non-null, the caller's contract.
            Some(unsafe { text(device_spec, "device_spec")? })
        };
        start_logging()?;
        let device = kiln::backend::open(spec)
            .map_err(|e| Failure::new(KILN_ERROR_NO_DEVICE, e.to_string()))?;
        new_handle(out, on_device(device)?)
    }))
}

/// A planning handle: resolves problems for an embedded target (basename or alias,
/// `"sm_90_132"`, `"h100"`; NULL: the only embedded target) without any device. Solutions can
/// be chosen and saved; running one gives `KILN_ERROR_NO_DEVICE`.
///
/// # Safety
/// `target` is NULL or a NUL-terminated string; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_handle_create_for_target(
    target: *const c_char,
    out: *mut *mut kiln_handle,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        unsafe { clear(out, "out")? };
        start_logging()?;
        let target = if target.is_null() {
            match kiln::targets() {
                [only] => only,
                all => {
                    return Err(Failure::bad_param(format!(
                        "target is NULL but {} targets are embedded; name one of [{}]",
                        all.len(),
                        all.iter()
                            .map(|t| t.basename)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )))
                }
            }
        } else {
            // SAFETY: non-null, the caller's contract.
            kiln::named_target(unsafe { text(target, "target")? })?
        };
        kiln::context::warn_if_unmeasured(target);
        new_handle(
            out,
            Shared {
                target,
                exact: true,
                context: None,
            },
        )
    }))
}

/// A handle on the device of a CUDA context the caller made (`CUcontext`). kiln makes it
/// current on the calling thread during its calls and never destroys it.
///
/// # Safety
/// `cu_context` is a live `CUcontext` that outlives the handle and everything made from it;
/// `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_handle_create_from_cuda_context(
    cu_context: *mut c_void,
    out: *mut *mut kiln_handle,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        unsafe { clear(out, "out")? };
        if cu_context.is_null() {
            return Err(Failure::bad_param("cu_context is NULL"));
        }
        start_logging()?;
        #[cfg(feature = "cuda")]
        {
            // SAFETY: the caller's contract: a live context that outlives the handle.
            let device = unsafe { kiln::backend::cuda::adopt_context(cu_context as u64) }
                .map_err(|e| Failure::new(KILN_ERROR_NO_DEVICE, e.to_string()))?;
            new_handle(out, on_device(device)?)
        }
        #[cfg(not(feature = "cuda"))]
        Err(Failure::new(
            KILN_ERROR_NO_DEVICE,
            "this kiln was built without the CUDA backend (feature cuda)",
        ))
    }))
}

/// A handle on HIP device `device_ordinal` (the ordinal `hipSetDevice` takes); runs go on the
/// streams the caller passes.
///
/// # Safety
/// `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_handle_create_from_hip_device(
    device_ordinal: i32,
    out: *mut *mut kiln_handle,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        unsafe { clear(out, "out")? };
        if device_ordinal < 0 {
            return Err(Failure::bad_param(format!(
                "device_ordinal = {device_ordinal}: must be 0 or more"
            )));
        }
        start_logging()?;
        #[cfg(feature = "hip")]
        {
            let device = kiln::backend::hip::open(&format!(":{device_ordinal}"))
                .map_err(|e| Failure::new(KILN_ERROR_NO_DEVICE, e.to_string()))?;
            new_handle(out, on_device(device)?)
        }
        #[cfg(not(feature = "hip"))]
        Err(Failure::new(
            KILN_ERROR_NO_DEVICE,
            "this kiln was built without the HIP backend (feature hip)",
        ))
    }))
}

/// Destroys a handle (NULL: nothing). Solutions and buffers made from it stay valid until
/// they are destroyed; the device is released after the last of them.
///
/// # Safety
/// `handle` is NULL or came from a `kiln_handle_create*` call and is not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_handle_destroy(handle: *mut kiln_handle) {
    // SAFETY: the caller's contract: NULL, or from Box::into_raw and destroyed once.
    unsafe { destroy(handle) }
}

/// What a handle runs on.
///
/// # Safety
/// `handle` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_handle_get_info(
    handle: *const kiln_handle,
    out: *mut kiln_handle_info,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let s = &unsafe { arg(handle, "handle")? }.shared;
        let t = s.target;
        let (device, arch, units) = match &s.context {
            Some(c) => {
                let i = c.device().info();
                (
                    format!("{} {}", i.spec, i.name),
                    i.arch.clone(),
                    i.compute_units,
                )
            }
            None => (String::new(), t.arch.to_string(), t.compute_units),
        };
        let device: String = device.chars().take(KILN_NAME_BYTES - 1).collect();
        let info = kiln_handle_info {
            struct_size: std::mem::size_of::<kiln_handle_info>() as u32,
            target: fixed(t.basename, "target")?,
            device: fixed(&device, "device")?,
            arch: fixed(&arch, "arch")?,
            compute_units: units,
            has_device: s.context.is_some() as i32,
            exact_target: s.exact as i32,
            measured_find_db: !t.measured.is_empty() as i32,
        };
        // SAFETY: the caller's contract.
        unsafe { put(out, "out", info) }
    }))
}

/// Waits for all work on the handle's device.
///
/// # Safety
/// `handle` is a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_handle_synchronize(handle: *const kiln_handle) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let ctx = unsafe { arg(handle, "handle")? }.shared.context()?;
        ctx.device().synchronize().map_err(|e| Failure::driver(&e))
    }))
}

/// Fills `desc` with `struct_size` and neutral values: FP32 NCHW 1x1x1x1 tensors, no padding,
/// stride and dilation 1, one group, forward, default math.
///
/// # Safety
/// `desc` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_conv_desc_init(desc: *mut kiln_conv_desc) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        unsafe { put(desc, "desc", kiln_conv_desc::neutral()) }
    }))
}

/// A problem from a description; every field is checked and an error names the first bad one
/// (`"w.dims[1] (c/groups) = 32 with groups = 1, but x has c = 64 channels"`).
///
/// # Safety
/// `desc` points to a `kiln_conv_desc`; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_problem_create(
    desc: *const kiln_conv_desc,
    out: *mut *mut kiln_problem,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        unsafe { clear(out, "out")? };
        // SAFETY: the caller's contract.
        let problem = desc::problem(unsafe { arg(desc, "desc")? })?;
        // SAFETY: checked writable above.
        unsafe { give(out, kiln_problem { problem }) };
        Ok(())
    }))
}

/// A problem from a MIOpen find-db key (`"64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NHWC-FP32-F"`)
/// and a `KILN_MATH_*` mode.
///
/// # Safety
/// `key` is a NUL-terminated string; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_problem_create_from_key(
    key: *const c_char,
    math: kiln_math,
    out: *mut *mut kiln_problem,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        unsafe { clear(out, "out")? };
        // SAFETY: the caller's contract.
        let key = unsafe { text(key, "key")? };
        let problem = ConvProblem::from_find_db_key(key)
            .map_err(|e| Failure::bad_param(format!("bad find-db key '{}': {e}", excerpt(key))))?
            .with_math(desc::math(math)?);
        // SAFETY: checked writable above.
        unsafe { give(out, kiln_problem { problem }) };
        Ok(())
    }))
}

/// Destroys a problem (NULL: nothing).
///
/// # Safety
/// `problem` is NULL or came from `kiln_problem_create*` / `kiln_solution_get_problem` and is
/// not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_problem_destroy(problem: *mut kiln_problem) {
    // SAFETY: the caller's contract: NULL, or from Box::into_raw and destroyed once.
    unsafe { destroy(problem) }
}

/// Writes the problem's find-db key, NUL-terminated, into `buf` (`buf_bytes` long);
/// `KILN_ERROR_BUFFER_TOO_SMALL` when it does not fit (`*needed`, if not NULL, says how many
/// bytes it takes, NUL included, either way).
///
/// # Safety
/// `problem` is live; `buf` is NULL or holds `buf_bytes` bytes; `needed` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_problem_get_key(
    problem: *const kiln_problem,
    buf: *mut c_char,
    buf_bytes: usize,
    needed: *mut usize,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let p = &unsafe { arg(problem, "problem")? }.problem;
        let key = p.find_db_key();
        // SAFETY: the caller's contract.
        unsafe { write_text(key.as_str(), buf, buf_bytes, needed) }
    }))
}

/// Writes `s` and a NUL into `buf`, reporting the size needed.
///
/// # Safety
/// `buf` is NULL or holds `buf_bytes` bytes; `needed` is NULL or writable.
unsafe fn write_text(
    s: &str,
    buf: *mut c_char,
    buf_bytes: usize,
    needed: *mut usize,
) -> Result<(), Failure> {
    let want = s.len() + 1;
    if !needed.is_null() {
        // SAFETY: the caller's contract.
        unsafe { needed.write(want) };
    }
    if buf.is_null() || buf_bytes < want {
        return Err(Failure::new(
            KILN_ERROR_BUFFER_TOO_SMALL,
            format!("the text needs {want} bytes (NUL included); the buffer has {buf_bytes}"),
        ));
    }
    // SAFETY: buf holds at least want bytes (checked).
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), s.len());
        buf.add(s.len()).write(0);
    }
    Ok(())
}

/// Bytes of x, w and y the problem reads and writes (`out[3]`).
///
/// # Safety
/// `problem` is live; `out` holds 3 `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_problem_get_byte_counts(
    problem: *const kiln_problem,
    out: *mut u64,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let p = &unsafe { arg(problem, "problem")? }.problem;
        if out.is_null() {
            return Err(Failure::bad_param("out is NULL"));
        }
        let counts = p.byte_counts();
        // SAFETY: the caller's contract: out holds 3 values.
        unsafe { std::ptr::copy_nonoverlapping(counts.as_ptr(), out, 3) };
        Ok(())
    }))
}

fn info_of(r: &kiln::resolve::Ranked, rank: u32) -> Result<kiln_solution_info, Failure> {
    let (provenance, near) = match r.provenance {
        Provenance::FindDb => (KILN_PROVENANCE_FIND_DB, ""),
        Provenance::Nearest { key, .. } => (KILN_PROVENANCE_NEAREST, key),
        Provenance::CostModel => (KILN_PROVENANCE_COST_MODEL, ""),
    };
    Ok(kiln_solution_info {
        struct_size: std::mem::size_of::<kiln_solution_info>() as u32,
        reserved: 0,
        rank,
        provenance,
        time_ms: r.time_ms,
        workspace_bytes: r.workspace,
        solver: fixed(r.variant.solver.id(), "solver id")?,
        params: fixed(r.variant.params, "perf config")?,
        nearest_key: fixed(near, "find-db key")?,
    })
}

/// The problem's solutions on the handle's target, best first: writes up to `capacity` of them
/// to `out` and their number to `*count` (with `out` NULL and `capacity` 0, only counts).
/// `KILN_ERROR_NO_SOLUTION` when no embedded solver can run the problem (the message gives
/// each solver's reason). A problem ranked by the cost model is logged as a warning.
///
/// # Safety
/// `handle` and `problem` are live; `out` is NULL or holds `capacity` entries; `count` is
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_find_solutions(
    handle: *const kiln_handle,
    problem: *const kiln_problem,
    out: *mut kiln_solution_info,
    capacity: usize,
    count: *mut usize,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let s = &unsafe { arg(handle, "handle")? }.shared;
        // SAFETY: the caller's contract.
        let p = &unsafe { arg(problem, "problem")? }.problem;
        if count.is_null() {
            return Err(Failure::bad_param("count is NULL"));
        }
        if out.is_null() && capacity > 0 {
            return Err(Failure::bad_param(format!(
                "out is NULL with capacity {capacity}"
            )));
        }
        if s.target.kdb.is_none() {
            return Err(Failure::new(
                KILN_ERROR_NO_SOLUTION,
                format!("target {} embeds no kiln kernels", s.target.basename),
            ));
        }
        let plan = match &s.context {
            Some(ctx) => ctx.find_solutions(p)?,
            None => kiln::resolve::resolve_logged(s.target, p)?,
        };
        let n = plan.len().min(capacity);
        for (i, r) in plan.iter().take(n).enumerate() {
            let info = info_of(r, i as u32 + 1)?;
            // SAFETY: out holds capacity >= n entries (the caller's contract).
            unsafe { out.add(i).write(info) };
        }
        // SAFETY: checked non-null.
        unsafe { count.write(if capacity == 0 { plan.len() } else { n }) };
        Ok(())
    }))
}

/// Chooses `solver` [`params`] for `p` on the handle's target, loading its kernels when the
/// handle has a device.
fn choose(
    shared: &Arc<Shared>,
    p: &ConvProblem,
    solver: &str,
    params: &str,
    mut info: kiln_solution_info,
) -> Result<kiln_solution, Failure> {
    let bad = |m: String| Failure::new(KILN_ERROR_BAD_SOLUTION, m);
    let solver_ref = kiln::solvers::by_id(solver).ok_or_else(|| {
        bad(format!(
            "solver '{}' is not one of this kiln's solvers",
            excerpt(solver)
        ))
    })?;
    let caps = shared
        .context
        .as_ref()
        .map_or_else(|| TargetCaps::of(shared.target), Context::caps);
    let params = solver_ref.usable_config(p, &caps, params).ok_or_else(|| {
        let why = solver_ref
            .applicable(p, &caps, params)
            .err()
            .unwrap_or("not one of its compiled perf configs");
        bad(format!(
            "{solver} [{}] cannot run {} on {}: {why}",
            excerpt(params),
            p.find_db_key().as_str(),
            shared.target.basename
        ))
    })?;
    let variant = Variant {
        solver: solver_ref,
        params,
    };
    let invoker = match &shared.context {
        Some(ctx) => Some(ctx.prepare(p, &variant)?),
        None => None,
    };
    if !(KILN_PROVENANCE_FIND_DB..=KILN_PROVENANCE_SAVED).contains(&info.provenance) {
        return Err(Failure::bad_param(format!(
            "info.provenance {} is none of the KILN_PROVENANCE_* values",
            info.provenance
        )));
    }
    info.solver = fixed(variant.solver.id(), "solver id")?;
    info.params = fixed(params, "perf config")?;
    // What the solution needs, never the caller's figure: from the loaded kernels, or on a
    // planning handle from the solver's launch plan.
    info.workspace_bytes = match &invoker {
        Some(inv) => inv.workspace_bytes(),
        None => {
            let plan = variant.solver.plan(p, &caps, params).map_err(|why| {
                bad(format!(
                    "{solver} [{}] cannot plan {}: {why}",
                    excerpt(params),
                    p.find_db_key().as_str()
                ))
            })?;
            plan.workspace_bytes
        }
    };
    Ok(kiln_solution {
        shared: shared.clone(),
        problem: *p,
        variant,
        invoker,
        info,
    })
}

/// Chooses one of `kiln_find_solutions`' answers (its `solver` and `params` are what count)
/// and, on a handle with a device, loads its kernels (cold path: kdb lookup, checks, module
/// load; cached per handle).
///
/// # Safety
/// `handle`, `problem` and `info` are live; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_solution_create(
    handle: *const kiln_handle,
    problem: *const kiln_problem,
    info: *const kiln_solution_info,
    out: *mut *mut kiln_solution,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        unsafe { clear(out, "out")? };
        // SAFETY: the caller's contract.
        let s = &unsafe { arg(handle, "handle")? }.shared;
        // SAFETY: the caller's contract.
        let p = &unsafe { arg(problem, "problem")? }.problem;
        // SAFETY: the caller's contract.
        let info = *unsafe { arg(info, "info")? };
        let size = std::mem::size_of::<kiln_solution_info>();
        if info.struct_size as usize != size {
            return Err(Failure::bad_param(format!(
                "info.struct_size = {}: pass a kiln_solution_info that kiln_find_solutions wrote (this library's is {size} bytes)",
                info.struct_size
            )));
        }
        let solver = unfixed(&info.solver, "info.solver")?.to_string();
        let params = unfixed(&info.params, "info.params")?.to_string();
        let sol = choose(s, p, &solver, &params, info)?;
        // SAFETY: checked writable above.
        unsafe { give(out, sol) };
        Ok(())
    }))
}

/// Loads a solution saved by `kiln_solution_save` (its problem comes with it:
/// `kiln_solution_get_problem`). `KILN_ERROR_BAD_SOLUTION` when the bytes are malformed
/// (the message names the line), were saved for another target, or name a solver or perf
/// config this kiln cannot run there.
///
/// # Safety
/// `handle` is live; `bytes` holds `size` bytes; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_solution_load(
    handle: *const kiln_handle,
    bytes: *const u8,
    size: usize,
    out: *mut *mut kiln_solution,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        unsafe { clear(out, "out")? };
        // SAFETY: the caller's contract.
        let s = &unsafe { arg(handle, "handle")? }.shared;
        if bytes.is_null() {
            return Err(Failure::bad_param("bytes is NULL"));
        }
        // SAFETY: the caller's contract: bytes holds size bytes.
        let data = unsafe { std::slice::from_raw_parts(bytes, size) };
        let saved = saved::parse(data)?;
        if saved.target != s.target.basename {
            return Err(Failure::new(
                KILN_ERROR_BAD_SOLUTION,
                format!(
                    "the solution was saved for target {}; this handle runs {}",
                    excerpt(saved.target),
                    s.target.basename
                ),
            ));
        }
        let info = kiln_solution_info {
            struct_size: std::mem::size_of::<kiln_solution_info>() as u32,
            reserved: 0,
            rank: 0,
            provenance: KILN_PROVENANCE_SAVED,
            time_ms: 0.0,
            workspace_bytes: 0,
            solver: [0; KILN_NAME_BYTES],
            params: [0; KILN_NAME_BYTES],
            nearest_key: [0; KILN_NAME_BYTES],
        };
        let sol = choose(s, &saved.problem, saved.solver, saved.params, info)?;
        // SAFETY: checked writable above.
        unsafe { give(out, sol) };
        Ok(())
    }))
}

/// Writes the solution as bytes (text, at most 4096) into `buf`; `*size` gets their number.
/// With `buf` NULL or `buf_bytes` too small: `KILN_ERROR_BUFFER_TOO_SMALL` and `*size` says how
/// many are needed.
///
/// # Safety
/// `solution` is live; `buf` is NULL or holds `buf_bytes` bytes; `size` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_solution_save(
    solution: *const kiln_solution,
    buf: *mut u8,
    buf_bytes: usize,
    size: *mut usize,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let sol = unsafe { arg(solution, "solution")? };
        let text = saved::render(
            sol.shared.target.basename,
            &sol.problem,
            sol.variant.solver.id(),
            sol.variant.params,
        );
        // SAFETY: the caller's contract.
        unsafe { put(size, "size", text.len())? };
        if buf.is_null() || buf_bytes < text.len() {
            return Err(Failure::new(
                KILN_ERROR_BUFFER_TOO_SMALL,
                format!(
                    "the solution needs {} bytes; the buffer has {buf_bytes}",
                    text.len()
                ),
            ));
        }
        // SAFETY: buf holds at least text.len() bytes (checked).
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), buf, text.len()) };
        Ok(())
    }))
}

/// The solution's solver, perf config, workspace size and where its rank came from.
///
/// # Safety
/// `solution` is live; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_solution_get_info(
    solution: *const kiln_solution,
    out: *mut kiln_solution_info,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let sol = unsafe { arg(solution, "solution")? };
        // SAFETY: the caller's contract.
        unsafe { put(out, "out", sol.info) }
    }))
}

/// A new problem object equal to the solution's problem (destroy it with
/// `kiln_problem_destroy`).
///
/// # Safety
/// `solution` is live; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_solution_get_problem(
    solution: *const kiln_solution,
    out: *mut *mut kiln_problem,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        unsafe { clear(out, "out")? };
        // SAFETY: the caller's contract.
        let problem = unsafe { arg(solution, "solution")? }.problem;
        // SAFETY: checked writable above.
        unsafe { give(out, kiln_problem { problem }) };
        Ok(())
    }))
}

/// Runs the solution on device buffers (device addresses: `CUdeviceptr` / HIP pointers of the
/// handle's device) on `stream` (`CUstream` / `hipStream_t`; NULL: the default stream).
/// Returns once the work is enqueued. Sizes are checked against the problem before anything
/// is launched (`KILN_ERROR_BUFFER_TOO_SMALL` names the buffer); `workspace` may be NULL when
/// the solution's `workspace_bytes` is 0.
///
/// # Safety
/// Each pointer addresses at least its stated bytes of the handle's device memory and stays
/// valid until the work completes; `stream` is NULL or a live stream of that device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_solution_run(
    solution: *const kiln_solution,
    x: *const c_void,
    x_bytes: u64,
    w: *const c_void,
    w_bytes: u64,
    y: *mut c_void,
    y_bytes: u64,
    workspace: *mut c_void,
    workspace_bytes: u64,
    stream: *mut c_void,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let sol = unsafe { arg(solution, "solution")? };
        let ctx = sol.shared.context()?;
        let inv = sol.invoker.as_ref().ok_or_else(|| {
            Failure::new(
                KILN_ERROR_NO_DEVICE,
                "the solution was chosen without a device",
            )
        })?;
        let device = ctx.device();
        let view = |p: *const c_void, bytes: u64, name: &str| {
            if p.is_null() {
                return Err(Failure::bad_param(format!("{name} is NULL")));
            }
            // SAFETY: the caller's contract: p addresses bytes of this device's memory.
            Ok(unsafe { device.borrow_memory(p as u64, bytes) })
        };
        let xb = view(x, x_bytes, "x")?;
        let wb = view(w, w_bytes, "w")?;
        let yb = view(y, y_bytes, "y")?;
        let ws = if workspace.is_null() {
            None
        } else {
            Some(view(workspace, workspace_bytes, "workspace")?)
        };
        // SAFETY: the caller's contract: null or a live stream of this device.
        let stream = unsafe { Stream::from_raw(stream as u64) };
        ctx.run(inv, &xb, &wb, &yb, ws.as_ref(), &stream)?;
        Ok(())
    }))
}

/// Destroys a solution (NULL: nothing); its kernels stay cached in the handle.
///
/// # Safety
/// `solution` is NULL or came from `kiln_solution_create` / `kiln_solution_load` and is not
/// used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_solution_destroy(solution: *mut kiln_solution) {
    // SAFETY: the caller's contract: NULL, or from Box::into_raw and destroyed once.
    unsafe { destroy(solution) }
}

/// Allocates `bytes` of device memory on the handle's device (for callers without a GPU SDK;
/// memory from `cudaMalloc` / `hipMalloc` works as well).
///
/// # Safety
/// `handle` is live; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_buffer_create(
    handle: *const kiln_handle,
    bytes: u64,
    out: *mut *mut kiln_buffer,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        unsafe { clear(out, "out")? };
        // SAFETY: the caller's contract.
        let s = &unsafe { arg(handle, "handle")? }.shared;
        let buffer = s
            .context()?
            .device()
            .alloc(bytes)
            .map_err(|e| Failure::driver(&e))?;
        let b = kiln_buffer {
            buffer,
            _shared: s.clone(),
        };
        // SAFETY: checked writable above.
        unsafe { give(out, b) };
        Ok(())
    }))
}

/// The buffer's device address (NULL for a NULL buffer).
///
/// # Safety
/// `buffer` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_buffer_device_ptr(buffer: *const kiln_buffer) -> *mut c_void {
    // SAFETY: the caller's contract.
    unsafe { buffer.as_ref() }.map_or(std::ptr::null_mut(), |b| {
        b.buffer.device_ptr() as *mut c_void
    })
}

/// Copies `bytes` from host memory `src` to the start of the buffer (synchronous).
///
/// # Safety
/// `buffer` is live; `src` holds `bytes` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_buffer_upload(
    buffer: *const kiln_buffer,
    src: *const c_void,
    bytes: usize,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let b = unsafe { arg(buffer, "buffer")? };
        if src.is_null() {
            return Err(Failure::bad_param("src is NULL"));
        }
        // SAFETY: the caller's contract: src holds bytes bytes.
        let data = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), bytes) };
        b.buffer.upload(data).map_err(buffer_error)
    }))
}

/// Copies the start of the buffer to host memory `dst` (`bytes` long), waiting for the copy
/// (and, on the default stream, for the work before it).
///
/// # Safety
/// `buffer` is live; `dst` holds `bytes` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_buffer_download(
    buffer: *const kiln_buffer,
    dst: *mut c_void,
    bytes: usize,
) -> kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let b = unsafe { arg(buffer, "buffer")? };
        if dst.is_null() {
            return Err(Failure::bad_param("dst is NULL"));
        }
        // SAFETY: the caller's contract: dst holds bytes writable bytes.
        let data = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), bytes) };
        b.buffer.download(data).map_err(buffer_error)
    }))
}

fn buffer_error(e: kiln::backend::BackendError) -> Failure {
    // kiln's own size check has no driver code; the driver's refusals do.
    if e.code == 0 {
        Failure::new(KILN_ERROR_BUFFER_TOO_SMALL, e.to_string())
    } else {
        Failure::driver(&e)
    }
}

/// Frees a buffer (NULL: nothing).
///
/// # Safety
/// `buffer` is NULL or came from `kiln_buffer_create`, is not used afterwards, and no
/// enqueued work still uses it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_buffer_destroy(buffer: *mut kiln_buffer) {
    // SAFETY: the caller's contract: NULL, or from Box::into_raw and destroyed once.
    unsafe { destroy(buffer) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_a_solution_info_carries_fits() {
        for s in kiln::solvers::registered() {
            assert!(s.id().len() < KILN_NAME_BYTES, "{}", s.id());
            for q in s.entry.params {
                assert!(q.len() < KILN_NAME_BYTES, "{q}");
            }
        }
        for t in kiln::targets() {
            assert!(t.basename.len() < KILN_NAME_BYTES);
            for m in t.measured {
                assert!(m.key.len() < KILN_NAME_BYTES, "{}", m.key);
            }
        }
    }

    #[test]
    fn structs_have_no_padding() {
        // Padding would reach C uninitialised: a program comparing two results byte for byte
        // (memcmp) would read it. Each size is the sum of its fields.
        let n = KILN_NAME_BYTES;
        assert_eq!(
            std::mem::size_of::<kiln_solution_info>(),
            4 * 4 + 8 + 8 + 3 * n
        );
        assert_eq!(std::mem::size_of::<kiln_handle_info>(), 4 + 3 * n + 4 * 4);
        assert_eq!(std::mem::size_of::<kiln_net_info>(), 4 + n + 4 * 5 + 8);
        assert_eq!(std::mem::size_of::<kiln_net_tensor>(), 4 * 4 + 8 + 8);
        assert_eq!(
            std::mem::size_of::<kiln_device_info>(),
            4 + 3 * n + 4 + n + 8 + 4 + 4 + n + 4 + 256 + 4
        );
        assert_eq!(std::mem::size_of::<kiln_selftest_result>(), 4 * 5 + 512);
    }

    #[test]
    fn status_names_are_nul_terminated_and_distinct() {
        for (i, (code, name)) in STATUS_NAMES.iter().enumerate() {
            assert_eq!(*code, i as kiln_status);
            assert!(name.ends_with('\0') && name.starts_with("KILN_"));
            // SAFETY: a static NUL-terminated name.
            let back = unsafe { CStr::from_ptr(kiln_status_name(*code)) };
            assert_eq!(back.to_bytes(), name.trim_end_matches('\0').as_bytes());
        }
    }
}
