//! GPU backends behind one small trait: CUDA through cudarc with the driver loaded at run time,
//! and HIP through hip-runtime-sys behind the `hip` feature. A missing driver or device is an
//! error, never a panic.

pub mod cuda;
#[cfg(feature = "hip")]
pub mod hip;

use core::fmt;

/// A device as the backend reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `cuda:0`, `hip:1`.
    pub spec: String,
    /// Marketing name.
    pub name: String,
    /// Arch as used for code-object checks: `sm_90`, or AMD's target ID `gfx90a:sramecc+:xnack-`.
    pub arch: String,
    /// SMs or CUs.
    pub compute_units: u32,
    /// `GPU-xxxxxxxx-...` (CUDA) or the HIP UUID.
    pub uuid: String,
}

/// Opaque handles owned by the backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Module(pub u64);
/// A kernel entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Function(pub u64);
/// A device address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DevicePtr(pub u64);
/// A stream (0 = the default stream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stream(pub u64);

/// A backend error: which call failed and the driver's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendError {
    /// The driver call or step.
    pub call: &'static str,
    /// The driver's error name or message.
    pub message: String,
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.call, self.message)
    }
}

impl std::error::Error for BackendError {}

/// What kiln needs from a GPU API.
pub trait Backend: Send + Sync {
    /// The device.
    fn info(&self) -> &DeviceInfo;
    /// Loads a code object from memory (`cuModuleLoadData` / `hipModuleLoadData`).
    fn load_module(&self, image: &[u8]) -> Result<Module, BackendError>;
    /// Looks up an entry point.
    fn function(&self, module: Module, name: &str) -> Result<Function, BackendError>;
    /// Allocates device memory.
    fn alloc(&self, bytes: usize) -> Result<DevicePtr, BackendError>;
    /// Frees device memory.
    fn free(&self, ptr: DevicePtr);
    /// Host to device copy.
    fn upload(&self, dst: DevicePtr, src: &[u8]) -> Result<(), BackendError>;
    /// Device to host copy.
    fn download(&self, src: DevicePtr, dst: &mut [u8]) -> Result<(), BackendError>;
    /// Sets `bytes` bytes to `value`.
    fn fill(&self, dst: DevicePtr, value: u8, bytes: usize) -> Result<(), BackendError>;
    /// Launches `f` with kernel parameters given as pointers to each argument's value.
    fn launch(
        &self,
        f: Function,
        grid: [u32; 3],
        block: [u32; 3],
        stream: Stream,
        params: &mut [*mut core::ffi::c_void],
    ) -> Result<(), BackendError>;
    /// Waits for all work.
    fn synchronize(&self) -> Result<(), BackendError>;
    /// Records a timing event on `stream`.
    fn record_event(&self, stream: Stream) -> Result<u64, BackendError>;
    /// Milliseconds between two recorded events (waits for the second).
    fn elapsed_ms(&self, start: u64, end: u64) -> Result<f32, BackendError>;
    /// Destroys an event.
    fn destroy_event(&self, event: u64);
}

/// Lists every device of every compiled-in backend (none without drivers; never panics).
pub fn list_devices() -> Vec<DeviceInfo> {
    #[allow(unused_mut)]
    let mut out = cuda::list().unwrap_or_default();
    #[cfg(feature = "hip")]
    out.extend(hip::list().unwrap_or_default());
    out
}

/// Opens a device by spec: `cuda:0`, `cuda://GPU-<uuid>`, `hip:0`, `hip://<uuid>`. With no
/// spec, `KILN_DEVICE`, else the first device found.
pub fn open(spec: Option<&str>) -> Result<Box<dyn Backend>, BackendError> {
    let env = std::env::var("KILN_DEVICE").ok().filter(|s| !s.is_empty());
    let spec = spec.map(str::to_string).or(env);
    let Some(spec) = spec else {
        let all = list_devices();
        let first = all.first().ok_or_else(|| BackendError {
            call: "device discovery",
            message: no_device_message(),
        })?;
        return open(Some(&first.spec));
    };
    if let Some(rest) = spec.strip_prefix("cuda") {
        return cuda::open(rest).map(|b| Box::new(b) as Box<dyn Backend>);
    }
    if let Some(_rest) = spec.strip_prefix("hip") {
        #[cfg(feature = "hip")]
        return hip::open(_rest).map(|b| Box::new(b) as Box<dyn Backend>);
        #[cfg(not(feature = "hip"))]
        return Err(BackendError {
            call: "hip",
            message: "this kiln was built without the `hip` feature".into(),
        });
    }
    Err(BackendError {
        call: "device spec",
        message: format!("'{spec}' is not cuda:<n>, cuda://GPU-<uuid>, hip:<n> or hip://<uuid>"),
    })
}

fn no_device_message() -> String {
    let hip = if cfg!(feature = "hip") {
        "; no HIP device either"
    } else {
        " (HIP: build with --features hip)"
    };
    format!("no GPU found: {}{hip}", cuda::absence_reason())
}

/// Parses the part of a device spec after the backend name: `:<ordinal>` or `://<uuid>`.
pub(crate) enum Selector<'a> {
    Ordinal(usize),
    Uuid(&'a str),
}

pub(crate) fn parse_selector(rest: &str) -> Result<Selector<'_>, BackendError> {
    if let Some(uuid) = rest.strip_prefix("://") {
        return Ok(Selector::Uuid(uuid));
    }
    rest.strip_prefix(':')
        .and_then(|n| n.parse().ok())
        .map(Selector::Ordinal)
        .ok_or(BackendError {
            call: "device spec",
            message: format!("'{rest}' after the backend name is neither :<ordinal> nor ://<uuid>"),
        })
}

/// The ordinal a device spec's tail (`:<ordinal>` or `://<uuid>`) names among `count` devices
/// of `backend` (`cuda`, `hip`), `uuid_of` giving each device's UUID.
pub(crate) fn select_ordinal(
    rest: &str,
    backend: &'static str,
    count: usize,
    uuid_of: impl Fn(usize) -> Option<String>,
) -> Result<usize, BackendError> {
    let call = if backend == "cuda" {
        "cuda device"
    } else {
        "hip device"
    };
    match parse_selector(rest)? {
        Selector::Ordinal(i) if i < count => Ok(i),
        Selector::Ordinal(i) => Err(BackendError {
            call,
            message: format!(
                "{backend}:{i} does not exist ({count} {} device(s))",
                backend.to_uppercase()
            ),
        }),
        Selector::Uuid(u) => (0..count)
            .find(|&i| uuid_of(i).is_some_and(|id| id.eq_ignore_ascii_case(u)))
            .ok_or_else(|| BackendError {
                call,
                message: format!("no {} device has UUID {u}", backend.to_uppercase()),
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_specs_select_ordinals_or_say_why_not() {
        let uuids = ["GPU-aaaa", "GPU-BBBB"];
        let uuid_of = |i: usize| uuids.get(i).map(|u| u.to_string());
        assert_eq!(select_ordinal(":1", "cuda", 2, uuid_of).unwrap(), 1);
        assert_eq!(
            select_ordinal("://gpu-bbbb", "cuda", 2, uuid_of).unwrap(),
            1
        );
        let e = select_ordinal(":2", "cuda", 2, uuid_of).unwrap_err();
        assert_eq!(e.message, "cuda:2 does not exist (2 CUDA device(s))");
        let e = select_ordinal("://GPU-cccc", "hip", 2, uuid_of).unwrap_err();
        assert_eq!(
            (e.call, e.message.as_str()),
            ("hip device", "no HIP device has UUID GPU-cccc")
        );
        assert!(select_ordinal("0", "cuda", 2, uuid_of).is_err());
    }
}
