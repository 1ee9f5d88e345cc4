//! Standard output for kiln's binaries: [`outln!`](crate::outln) and [`out!`](crate::out) are
//! `println!` and `print!` that return a failed write (a closed pipe, a full disk) as an
//! error instead of panicking, and [`ExitClass`] maps every error a command returns to the exit
//! code of its class, so both binaries exit alike.

use std::fmt;

/// A write to standard output that failed.
#[derive(Debug)]
pub struct StdoutError(pub std::io::Error);

impl fmt::Display for StdoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write to standard output: {}", self.0)
    }
}

impl std::error::Error for StdoutError {}

/// `println!` into standard output that returns [`StdoutError`] with `?` on a failed write.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        writeln!(::std::io::stdout().lock(), $($arg)*)
            .map_err($crate::harness::output::StdoutError)?
    }};
}

/// `print!` into standard output that returns [`StdoutError`] with `?` on a failed write.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        write!(::std::io::stdout().lock(), $($arg)*)
            .and_then(|()| ::std::io::stdout().lock().flush())
            .map_err($crate::harness::output::StdoutError)?
    }};
}

/// The classes of failure kiln's binaries tell apart by exit code (documented in their
/// `--help` and the README).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitClass {
    /// 0: success.
    Success = 0,
    /// 1: any other error (bad input, a failed write, a driver error).
    Error = 1,
    /// 2: command-line usage (a bad flag, a bad `KILN_LOG_LEVEL`).
    Usage = 2,
    /// 3: no GPU, driver or runtime found, or the device asked for cannot be opened.
    NoDevice = 3,
    /// 4: no solution: no solver kiln carries can run the problem.
    NoSolution = 4,
    /// 5: the self-test ran and found a wrong result.
    SelftestFailed = 5,
}

/// An error whose exit class a command states itself (the others are classified by
/// [`classify`]).
#[derive(Debug)]
pub struct Classified {
    /// Its class.
    pub class: ExitClass,
    /// The message.
    pub message: String,
}

impl Classified {
    /// An error of `class` saying `message`.
    pub fn boxed(class: ExitClass, message: impl Into<String>) -> Box<dyn std::error::Error> {
        Box::new(Classified {
            class,
            message: message.into(),
        })
    }
}

impl fmt::Display for Classified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Classified {}

/// What a binary does with the error a command returned: `None` to exit quietly (standard
/// output is a closed pipe, as Unix tools end), else the exit class to print it under.
pub fn classify(e: &(dyn std::error::Error + 'static)) -> Option<ExitClass> {
    if let Some(StdoutError(io)) = e.downcast_ref::<StdoutError>() {
        return (io.kind() != std::io::ErrorKind::BrokenPipe).then_some(ExitClass::Error);
    }
    if let Some(c) = e.downcast_ref::<Classified>() {
        return Some(c.class);
    }
    if let Some(crate::RunError::NoSolution { .. }) = e.downcast_ref::<crate::RunError>() {
        return Some(ExitClass::NoSolution);
    }
    Some(ExitClass::Error)
}

/// Opens the device `spec` names (as [`crate::backend::open`]); a device that cannot be found
/// or opened (no driver, no runtime, no GPU, an ordinal or UUID no GPU has) is an error of class
/// [`ExitClass::NoDevice`], a spec that names no backend of this build one of class
/// [`ExitClass::Error`].
pub fn open_device(
    spec: Option<&str>,
) -> Result<crate::backend::Device, Box<dyn std::error::Error>> {
    crate::backend::open(spec).map_err(|e| {
        let class = if e.call == crate::backend::SPEC_CALL {
            ExitClass::Error
        } else {
            ExitClass::NoDevice
        };
        Classified::boxed(class, e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_their_class() {
        let pipe = StdoutError(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert_eq!(classify(&pipe), None);
        let full = StdoutError(std::io::Error::from_raw_os_error(28));
        assert_eq!(classify(&full), Some(ExitClass::Error));
        let picked = Classified::boxed(ExitClass::SelftestFailed, "2 wrong");
        assert_eq!(classify(picked.as_ref()), Some(ExitClass::SelftestFailed));
        let none = crate::RunError::NoSolution {
            problem: "k".into(),
            reasons: Vec::new(),
        };
        assert_eq!(classify(&none), Some(ExitClass::NoSolution));
        let other: Box<dyn std::error::Error> = "plain".into();
        assert_eq!(classify(other.as_ref()), Some(ExitClass::Error));
        if crate::backend::list_devices().is_empty() {
            let e = open_device(Some("cuda:9")).unwrap_err();
            assert_eq!(classify(e.as_ref()), Some(ExitClass::NoDevice), "{e}");
        }
        let e = open_device(Some("vulkan:0")).unwrap_err();
        assert_eq!(classify(e.as_ref()), Some(ExitClass::Error), "{e}");
    }
}
