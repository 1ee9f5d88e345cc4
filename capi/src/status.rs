//! Status codes, the per-thread error message, and the guard every entry point runs in: no
//! panic crosses into C, every failure leaves a message saying what was wrong and where.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, UnwindSafe};

use kiln::{Error, RunError};

/// What a kiln call returns: `KILN_SUCCESS` or one of the `KILN_ERROR_*` codes;
/// `kiln_last_error()` then says what was wrong.
#[allow(non_camel_case_types)]
pub type kiln_status = i32;

/// The call succeeded.
pub const KILN_SUCCESS: kiln_status = 0;
/// A null pointer, an unknown enum value, an invalid description or a string that does not fit.
pub const KILN_ERROR_BAD_PARAM: kiln_status = 1;
/// No GPU runtime or device, or a planning handle (no device) was asked to run.
pub const KILN_ERROR_NO_DEVICE: kiln_status = 2;
/// No embedded target fits the device, or the named target is not compiled in.
pub const KILN_ERROR_NO_TARGET: kiln_status = 3;
/// No embedded solver can run the problem.
pub const KILN_ERROR_NO_SOLUTION: kiln_status = 4;
/// A chosen or saved solution is malformed, for another target or problem, or does not apply.
pub const KILN_ERROR_BAD_SOLUTION: kiln_status = 5;
/// An output array, string buffer or device buffer is smaller than needed.
pub const KILN_ERROR_BUFFER_TOO_SMALL: kiln_status = 6;
/// The GPU driver refused a call (its code and words are in the message).
pub const KILN_ERROR_DEVICE: kiln_status = 7;
/// Embedded data failed a check (a table digest, a code object): the binary is damaged.
pub const KILN_ERROR_DATA: kiln_status = 8;
/// A bug in kiln (a panic, caught at the boundary).
pub const KILN_ERROR_INTERNAL: kiln_status = 9;
/// The device is out of memory (the driver's code is `kiln_last_error_code()`): free memory,
/// or use a smaller batch.
pub const KILN_ERROR_OUT_OF_MEMORY: kiln_status = 10;
/// `kiln_selftest` found a wrong result (the message names the first).
pub const KILN_ERROR_SELFTEST_FAILED: kiln_status = 11;

/// The driver's out-of-memory result: `CUDA_ERROR_OUT_OF_MEMORY` and `hipErrorOutOfMemory`
/// are both 2.
const DRIVER_OUT_OF_MEMORY: i32 = 2;

/// Every status and its name, for `kiln_status_name` and the tests.
pub(crate) const STATUS_NAMES: [(kiln_status, &str); 12] = [
    (KILN_SUCCESS, "KILN_SUCCESS\0"),
    (KILN_ERROR_BAD_PARAM, "KILN_ERROR_BAD_PARAM\0"),
    (KILN_ERROR_NO_DEVICE, "KILN_ERROR_NO_DEVICE\0"),
    (KILN_ERROR_NO_TARGET, "KILN_ERROR_NO_TARGET\0"),
    (KILN_ERROR_NO_SOLUTION, "KILN_ERROR_NO_SOLUTION\0"),
    (KILN_ERROR_BAD_SOLUTION, "KILN_ERROR_BAD_SOLUTION\0"),
    (KILN_ERROR_BUFFER_TOO_SMALL, "KILN_ERROR_BUFFER_TOO_SMALL\0"),
    (KILN_ERROR_DEVICE, "KILN_ERROR_DEVICE\0"),
    (KILN_ERROR_DATA, "KILN_ERROR_DATA\0"),
    (KILN_ERROR_INTERNAL, "KILN_ERROR_INTERNAL\0"),
    (KILN_ERROR_OUT_OF_MEMORY, "KILN_ERROR_OUT_OF_MEMORY\0"),
    (KILN_ERROR_SELFTEST_FAILED, "KILN_ERROR_SELFTEST_FAILED\0"),
];

/// A failed call: its status and message.
#[derive(Debug)]
pub(crate) struct Failure {
    pub status: kiln_status,
    pub message: String,
    /// The driver's numeric result when the driver refused (`CUresult`, `hipError_t`), else 0.
    pub driver_code: i32,
}

impl Failure {
    pub fn new(status: kiln_status, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
            driver_code: 0,
        }
    }

    /// The driver refused (`e.code`, never 0 here): out of memory, or a device error.
    pub fn driver(e: &kiln::backend::BackendError) -> Failure {
        let status = if e.code == DRIVER_OUT_OF_MEMORY {
            KILN_ERROR_OUT_OF_MEMORY
        } else {
            KILN_ERROR_DEVICE
        };
        Failure {
            driver_code: e.code,
            ..Failure::new(status, e.to_string())
        }
    }

    pub fn bad_param(message: impl Into<String>) -> Failure {
        Failure::new(KILN_ERROR_BAD_PARAM, message)
    }
}

impl From<RunError> for Failure {
    fn from(e: RunError) -> Failure {
        if let RunError::Backend(b) = &e {
            if b.code != 0 {
                return Failure::driver(b);
            }
        }
        let status = match &e {
            RunError::Kiln(Error::Lookup(_)) => KILN_ERROR_DATA,
            RunError::Kiln(Error::BadKey { .. } | Error::BadProblem(_)) => KILN_ERROR_BAD_PARAM,
            RunError::Kiln(Error::NoTarget { .. } | Error::UnknownTarget { .. }) => {
                KILN_ERROR_NO_TARGET
            }
            RunError::Backend(_) | RunError::OldDriver { .. } => KILN_ERROR_DEVICE,
            RunError::CodeObject { .. } | RunError::MissingKernel { .. } => KILN_ERROR_DATA,
            RunError::Solver { .. } => KILN_ERROR_BAD_SOLUTION,
            RunError::NoSolution { .. } => KILN_ERROR_NO_SOLUTION,
            RunError::BufferTooSmall { .. } => KILN_ERROR_BUFFER_TOO_SMALL,
            RunError::ForeignBuffer { .. } => KILN_ERROR_BAD_PARAM,
            // kiln's error enums are non-exhaustive: a newer kind reads as internal until
            // mapped here.
            _ => KILN_ERROR_INTERNAL,
        };
        Failure::new(status, e.to_string())
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        RunError::Kiln(e).into()
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    static LAST_DRIVER_CODE: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
}

fn set_last_error(message: &str, driver_code: i32) {
    // Interior NULs would cut the message short in C: show them as `\0`.
    let text = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|m| *m.borrow_mut() = text);
    LAST_DRIVER_CODE.with(|c| c.set(driver_code));
}

/// The driver's numeric result of this thread's last failed call (0: not the driver's).
pub(crate) fn last_driver_code() -> i32 {
    LAST_DRIVER_CODE.with(|c| c.get())
}

/// The message of the last failed call on this thread; valid until the thread's next failing
/// call.
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|m| m.borrow().as_ptr())
}

/// Runs an entry point's body: its `Err` becomes a status and this thread's message; a panic
/// becomes `KILN_ERROR_INTERNAL`, never an unwind into C.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Failure> + UnwindSafe) -> kiln_status {
    match catch_unwind(body) {
        Ok(Ok(())) => KILN_SUCCESS,
        Ok(Err(f)) => {
            set_last_error(&f.message, f.driver_code);
            f.status
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            set_last_error(
                &format!("internal error in kiln (a bug; please report it): {what}"),
                0,
            );
            KILN_ERROR_INTERNAL
        }
    }
}
