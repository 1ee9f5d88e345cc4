//! kiln's runtime errors: lookups and selection ([`Error`]), and running on a device
//! ([`RunError`]). Each names what went wrong and where (target, table, key, solver).

use core::fmt;

use kiln_format::{LookupError, ProblemError};

use crate::backend::BackendError;
use crate::codeobject::CodeObjectError;

/// Lookup and selection errors. Creating one may allocate; successful lookups never do.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An embedded table or record is damaged (digest mismatch, bad bounds).
    Lookup(LookupError),
    /// A problem key that does not parse.
    BadKey {
        /// The key text.
        key: String,
        /// Which field is wrong.
        source: ProblemError,
    },
    /// A problem description that is not valid.
    BadProblem(ProblemError),
    /// No embedded target fits the device.
    NoTarget {
        /// Device arch.
        arch: String,
        /// Device CU/SM count.
        compute_units: u32,
        /// Basenames compiled into this binary.
        embedded: Vec<&'static str>,
    },
    /// A named target that is not compiled in.
    UnknownTarget {
        /// The name given.
        name: String,
        /// Basenames and aliases compiled into this binary.
        embedded: Vec<&'static str>,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Lookup(e) => write!(f, "{e}"),
            Error::BadKey { key, source } => write!(f, "bad problem key '{}': {source}", excerpt(key)),
            Error::BadProblem(e) => write!(f, "bad convolution problem: {e}"),
            Error::NoTarget { arch, compute_units, embedded } => write!(
                f,
                "no embedded target for {arch} with {compute_units} compute units; this binary embeds [{}] \
                 (enable the target's cargo feature, e.g. --features <basename>)",
                embedded.join(", ")
            ),
            Error::UnknownTarget { name, embedded } => write!(
                f,
                "target '{}' is not compiled into this binary; available: [{}]",
                excerpt(name),
                embedded.join(", ")
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Lookup(e) => Some(e),
            Error::BadKey { source, .. } => Some(source),
            Error::BadProblem(e) => Some(e),
            _ => None,
        }
    }
}

impl From<LookupError> for Error {
    fn from(e: LookupError) -> Self {
        Error::Lookup(e)
    }
}

pub(crate) use kiln_format::text::excerpt;

/// Result alias.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Errors of preparing and running solutions on a device.
#[derive(Debug)]
#[non_exhaustive]
pub enum RunError {
    /// Lookup or selection error.
    Kiln(Error),
    /// The driver refused something.
    Backend(BackendError),
    /// A code object failed its checks.
    CodeObject {
        /// Solver.
        solver: &'static str,
        /// kdb key.
        key: String,
        /// What failed.
        source: CodeObjectError,
    },
    /// The kdb has no object for a solver variant.
    MissingKernel {
        /// Target.
        target: &'static str,
        /// `kernel_name` / `kernel_args`.
        key: String,
    },
    /// A solver that the manifest names cannot be keyed or launched as asked.
    Solver {
        /// Solver id.
        solver: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// No embedded solver applies.
    NoSolution {
        /// The problem's find-db key.
        problem: String,
        /// Why each solver was rejected.
        reasons: Vec<(&'static str, &'static str)>,
    },
    /// A buffer is smaller than the problem needs.
    BufferTooSmall {
        /// `x`, `w`, `y` or `workspace`.
        which: &'static str,
        /// Bytes needed.
        needed: u64,
        /// Bytes given.
        given: u64,
    },
    /// A buffer belongs to another device or backend than the invoker's context.
    ForeignBuffer {
        /// `x`, `w`, `y` or `workspace`.
        which: &'static str,
    },
    /// A fused problem's epilogue arguments do not match its fusion.
    Epilogue {
        /// The problem's find-db key.
        problem: String,
        /// What is wrong, naming the tensor or value.
        reason: String,
    },
    /// A standalone operator cannot run as described (its shape, type, layout or buffers).
    Operator(crate::ops::OpError),
    /// The GPU driver is older than the toolkit the target's code objects were built with.
    OldDriver {
        /// The target.
        target: &'static str,
        /// The newest CUDA version the driver supports.
        driver: (u32, u32),
        /// The CUDA version of the compiler that built the target's cubins.
        toolkit: (u32, u32),
    },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Kiln(e) => write!(f, "{e}"),
            RunError::Backend(e) => write!(f, "{e}"),
            RunError::CodeObject {
                solver,
                key,
                source,
            } => write!(f, "solver {solver}, kernel {key}: {source}"),
            RunError::MissingKernel { target, key } => write!(
                f,
                "target {target} embeds no code object {key} (rebuild the kdb: make kdb)"
            ),
            RunError::Solver { solver, reason } => write!(f, "solver {solver}: {reason}"),
            RunError::NoSolution { problem, reasons } => {
                // Each reason once, with the solvers it rejected (most share one: a data type
                // or direction no kernel takes), so the line stays short as solvers are added.
                write!(f, "no embedded solver applies to {problem}:")?;
                for (i, &(_, reason)) in reasons.iter().enumerate() {
                    if reasons[..i].iter().any(|&(_, r)| r == reason) {
                        continue;
                    }
                    let mut solvers = reasons.iter().filter(|&&(_, r)| r == reason);
                    if let Some((first, _)) = solvers.next() {
                        write!(f, " {first}")?;
                    }
                    for (s, _) in solvers {
                        write!(f, ", {s}")?;
                    }
                    write!(f, ": {reason};")?;
                }
                Ok(())
            }
            RunError::BufferTooSmall {
                which,
                needed,
                given,
            } => write!(
                f,
                "buffer {which} holds {given} B, the problem needs {needed} B"
            ),
            RunError::ForeignBuffer { which } => write!(
                f,
                "buffer {which} was allocated on another device than the context's"
            ),
            RunError::Epilogue { problem, reason } => {
                write!(f, "epilogue of {problem}: {reason}")
            }
            RunError::Operator(e) => write!(f, "{e}"),
            RunError::OldDriver {
                target,
                driver,
                toolkit,
            } => write!(
                f,
                "the CUDA driver supports CUDA {}.{}, but target {target}'s cubins were built with CUDA {}.{} \
                 and need a driver for CUDA {}.0 or newer (CUDA's minor-version compatibility): update the driver",
                driver.0, driver.1, toolkit.0, toolkit.1, toolkit.0
            ),
        }
    }
}

impl std::error::Error for RunError {}

impl From<Error> for RunError {
    fn from(e: Error) -> Self {
        RunError::Kiln(e)
    }
}

impl From<LookupError> for RunError {
    fn from(e: LookupError) -> Self {
        RunError::Kiln(Error::Lookup(e))
    }
}

impl From<crate::ops::OpError> for RunError {
    fn from(e: crate::ops::OpError) -> Self {
        RunError::Operator(e)
    }
}

impl From<BackendError> for RunError {
    fn from(e: BackendError) -> Self {
        RunError::Backend(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_solution_names_each_reason_once_with_its_solvers() {
        let e = RunError::NoSolution {
            problem: "8-8-8-1x1-8-8-8-1-0x0-1x1-1x1-0-NCHW-INT8-F".into(),
            reasons: vec![
                ("A", "data type not FP32, FP16 or BF16"),
                ("B", "needs 2-D NHWC tensors"),
                ("C", "data type not FP32, FP16 or BF16"),
                ("D", "data type not FP32, FP16 or BF16"),
            ],
        };
        assert_eq!(
            e.to_string(),
            "no embedded solver applies to 8-8-8-1x1-8-8-8-1-0x0-1x1-1x1-0-NCHW-INT8-F: \
             A, C, D: data type not FP32, FP16 or BF16; B: needs 2-D NHWC tensors;"
        );
    }
}
