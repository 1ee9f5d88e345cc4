//! What a host program needs around the convolution calls: kiln's version as numbers, its log
//! routed to the program's own callback, and the devices kiln can see with the target each maps
//! to.

use std::ffi::{c_char, c_void, CString};
use std::panic::AssertUnwindSafe;

use super::{fixed, guard, put, truncated, Failure, KILN_NAME_BYTES};

/// kiln's major version (the header's; `kiln_version_numbers` gives the library's).
pub const KILN_VERSION_MAJOR: u32 = 0;
/// kiln's minor version.
pub const KILN_VERSION_MINOR: u32 = 1;
/// kiln's patch version.
pub const KILN_VERSION_PATCH: u32 = 0;

/// Writes the library's version (compare with the header's `KILN_VERSION_*` to catch a
/// program built against another header). NULL pointers are skipped.
///
/// # Safety
/// Each pointer is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_version_numbers(major: *mut u32, minor: *mut u32, patch: *mut u32) {
    let parse = |s: &str| s.parse::<u32>().unwrap_or(0);
    for (out, v) in [
        (major, parse(env!("CARGO_PKG_VERSION_MAJOR"))),
        (minor, parse(env!("CARGO_PKG_VERSION_MINOR"))),
        (patch, parse(env!("CARGO_PKG_VERSION_PATCH"))),
    ] {
        // SAFETY: the caller's contract: NULL or writable.
        if let Some(o) = unsafe { out.as_mut() } {
            *o = v;
        }
    }
}

/// A log line's level: one of the `KILN_LOG_*` values.
pub type kiln_log_level = i32;
/// Nothing is logged (as `max_level`).
pub const KILN_LOG_OFF: kiln_log_level = 0;
/// kiln cannot do what was asked.
pub const KILN_LOG_ERROR: kiln_log_level = 1;
/// kiln degrades: the closest target, an unmeasured find-db, a cost-model rank.
pub const KILN_LOG_WARN: kiln_log_level = 2;
/// How problems were ranked.
pub const KILN_LOG_INFO: kiln_log_level = 3;
/// Details.
pub const KILN_LOG_DEBUG: kiln_log_level = 4;
/// Everything.
pub const KILN_LOG_TRACE: kiln_log_level = 5;

/// A host program's log function: `level`, the line (NUL-terminated, valid during the call),
/// and the `user` pointer given with it. kiln may call it from any thread that calls kiln, and
/// from several at once.
pub type kiln_log_callback =
    Option<unsafe extern "C" fn(level: kiln_log_level, message: *const c_char, user: *mut c_void)>;

/// The callback and its user pointer, callable from any thread (the caller's contract).
struct Callback {
    function: unsafe extern "C" fn(kiln_log_level, *const c_char, *mut c_void),
    user: *mut c_void,
}

impl Callback {
    fn call(&self, level: kiln_log_level, line: &str) {
        let text = CString::new(line.replace('\0', "\\0")).unwrap_or_default();
        // SAFETY: the contract of kiln_set_log_callback.
        unsafe { (self.function)(level, text.as_ptr(), self.user) };
    }
}

// SAFETY: kiln_set_log_callback's contract: the callback may be called from any thread with
// this user pointer.
unsafe impl Send for Callback {}
// SAFETY: as above; kiln never touches what `user` points to.
unsafe impl Sync for Callback {}

/// Routes kiln's log lines to `callback` (with `user`), up to `max_level` (`KILN_LOG_*`), instead
/// of stderr; a NULL callback returns them to stderr at `max_level`. A Rust host that installed
/// its own `log` logger first keeps it: kiln then logs through that logger.
///
/// # Safety
/// `callback` is NULL or a function that may be called from any thread, with `user`, until it
/// is replaced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_set_log_callback(
    callback: kiln_log_callback,
    user: *mut c_void,
    max_level: kiln_log_level,
) -> super::kiln_status {
    guard(AssertUnwindSafe(|| {
        use kiln::logging::LevelFilter;
        let level = match max_level {
            KILN_LOG_OFF => LevelFilter::Off,
            KILN_LOG_ERROR => LevelFilter::Error,
            KILN_LOG_WARN => LevelFilter::Warn,
            KILN_LOG_INFO => LevelFilter::Info,
            KILN_LOG_DEBUG => LevelFilter::Debug,
            KILN_LOG_TRACE => LevelFilter::Trace,
            v => {
                return Err(Failure::bad_param(format!(
                    "max_level = {v}: not a KILN_LOG_* value (0 off .. 5 trace)"
                )))
            }
        };
        let sink = callback.map(|function| {
            let cb = Callback { function, user };
            Box::new(move |level: kiln::logging::Level, line: &str| {
                let level = match level {
                    kiln::logging::Level::Error => KILN_LOG_ERROR,
                    kiln::logging::Level::Warn => KILN_LOG_WARN,
                    kiln::logging::Level::Info => KILN_LOG_INFO,
                    kiln::logging::Level::Debug => KILN_LOG_DEBUG,
                    kiln::logging::Level::Trace => KILN_LOG_TRACE,
                };
                cb.call(level, line);
            }) as kiln::logging::Sink
        });
        kiln::logging::install(level, sink);
        Ok(())
    }))
}

/// A device kiln can see, as `kiln_device_get_info` writes it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct kiln_device_info {
    /// `sizeof(kiln_device_info)` as this library knows it.
    pub struct_size: u32,
    /// Its spec for `kiln_handle_create` (`cuda:0`, `hip:1`), NUL-terminated.
    pub spec: [c_char; KILN_NAME_BYTES],
    /// The marketing name.
    pub name: [c_char; KILN_NAME_BYTES],
    /// The arch (`sm_90`, `gfx90a:sramecc+:xnack-`).
    pub arch: [c_char; KILN_NAME_BYTES],
    /// SMs or CUs.
    pub compute_units: u32,
    /// `GPU-...` (CUDA) or the HIP UUID.
    pub uuid: [c_char; KILN_NAME_BYTES],
    /// Device memory, bytes (0 when the runtime does not say).
    pub total_memory: u64,
    /// The newest CUDA version the driver supports (13.0: 13 and 0); 0 and 0 for HIP.
    pub driver_major: u32,
    /// See `driver_major`.
    pub driver_minor: u32,
    /// The embedded target it maps to (`sm_90_132`), empty when none fits.
    pub target: [c_char; KILN_NAME_BYTES],
    /// 1 when the target was built for this arch and CU count, else 0.
    pub exact_target: i32,
    /// Why no target fits (empty when one does).
    pub no_target_reason: [c_char; 256],
    /// Zero (keeps the struct free of padding, so copies compare byte for byte).
    pub reserved: u32,
}

/// Counts the devices of every GPU runtime found (0 without a GPU or runtime: not an error).
///
/// # Safety
/// `count` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_device_count(count: *mut u32) -> super::kiln_status {
    guard(AssertUnwindSafe(|| {
        let n = kiln::backend::list_devices().len() as u32;
        // SAFETY: the caller's contract.
        unsafe { put(count, "count", n) }
    }))
}

/// Describes device `index` (0 .. count - 1, in `kiln_device_count`'s order) and the target kiln
/// would run it with.
///
/// # Safety
/// `info` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_device_get_info(
    index: u32,
    info: *mut kiln_device_info,
) -> super::kiln_status {
    guard(AssertUnwindSafe(|| {
        let devices = kiln::backend::list_devices();
        let d = devices.get(index as usize).ok_or_else(|| {
            Failure::bad_param(format!(
                "index {index}: kiln sees {} device(s)",
                devices.len()
            ))
        })?;
        let (driver_major, driver_minor) = d.driver_version.unwrap_or((0, 0));
        let (target, exact, reason) = match kiln::context::check_device(d) {
            Ok(sel) => (sel.target.basename.to_string(), sel.exact, String::new()),
            Err(e) => (String::new(), false, e.to_string()),
        };
        let out = kiln_device_info {
            struct_size: std::mem::size_of::<kiln_device_info>() as u32,
            spec: fixed(&d.spec, "device spec")?,
            name: fixed(&d.name, "device name")?,
            arch: fixed(&d.arch, "device arch")?,
            compute_units: d.compute_units,
            uuid: fixed(&d.uuid, "device UUID")?,
            total_memory: d.total_memory,
            driver_major,
            driver_minor,
            target: fixed(&target, "target")?,
            exact_target: i32::from(exact),
            no_target_reason: truncated(&reason),
            reserved: 0,
        };
        // SAFETY: the caller's contract.
        unsafe { put(info, "info", out) }
    }))
}

/// What `kiln_selftest` found.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct kiln_selftest_result {
    /// `sizeof(kiln_selftest_result)` as this library knows it.
    pub struct_size: u32,
    /// Problems in the set.
    pub problems: u32,
    /// Runs checked (each solver and perf config on each problem it applies to, and each
    /// standalone operator case).
    pub runs: u32,
    /// Runs that failed.
    pub failures: u32,
    /// 1 when every run passed (and something ran), else 0.
    pub passed: i32,
    /// The first failure (`solver [params] problem: what`), NUL-terminated; empty when none.
    pub first_failure: [c_char; 512],
}

/// The boot check `kiln selftest` runs, in process, on the handle's device: every embedded
/// solver and perf config on kiln's problem set (plain and fused, random and special-value
/// inputs, checked against an f64 reference) and the standalone operators. It takes seconds to
/// a minute. Writes `result` whenever it ran; returns `KILN_ERROR_SELFTEST_FAILED` (the message
/// names the first failure) when a run failed.
///
/// # Safety
/// `handle` is live; `result` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_selftest(
    handle: *const super::kiln_handle,
    result: *mut kiln_selftest_result,
) -> super::kiln_status {
    guard(AssertUnwindSafe(|| {
        if result.is_null() {
            return Err(Failure::bad_param("result is NULL"));
        }
        // SAFETY: the caller's contract.
        let ctx = unsafe { super::arg(handle, "handle")? }.shared.context()?;
        let problems = kiln::harness::selftest::problems();
        let mut first: Option<String> = None;
        let report = kiln::harness::selftest::run(
            ctx,
            &problems,
            |_| true,
            true,
            |f| {
                first.get_or_insert_with(|| {
                    format!("{} [{}] {}: {}", f.solver, f.params, f.problem, f.error)
                });
            },
        );
        let out = kiln_selftest_result {
            struct_size: std::mem::size_of::<kiln_selftest_result>() as u32,
            problems: report.problems as u32,
            runs: report.runs as u32,
            failures: report.failures as u32,
            passed: i32::from(report.passed()),
            first_failure: truncated(first.as_deref().unwrap_or_default()),
        };
        // SAFETY: checked non-NULL above; the caller's contract.
        unsafe { put(result, "result", out) }?;
        if report.passed() {
            Ok(())
        } else {
            Err(Failure::new(
                super::KILN_ERROR_SELFTEST_FAILED,
                format!(
                    "selftest: {} of {} runs failed; first: {}",
                    report.failures,
                    report.runs,
                    first.unwrap_or_else(|| "nothing ran".into())
                ),
            ))
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_version_is_the_packages() {
        let (mut a, mut b, mut c) = (9, 9, 9);
        // SAFETY: three writable locals.
        unsafe { kiln_version_numbers(&mut a, &mut b, &mut c) };
        assert_eq!(
            (a, b, c),
            (KILN_VERSION_MAJOR, KILN_VERSION_MINOR, KILN_VERSION_PATCH),
            "capi/src/host.rs's KILN_VERSION_* must follow Cargo.toml's version"
        );
        assert_eq!(
            format!("{a}.{b}.{c}"),
            env!("CARGO_PKG_VERSION"),
            "a pre-release or build suffix is not in the numbers"
        );
    }
}
