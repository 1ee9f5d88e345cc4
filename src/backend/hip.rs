//! HIP, loaded at run time: `KILN_HIP_LIBRARY` if set (a path or soname), else
//! `libamdhip64.so.6`, then `libamdhip64.so.5`, then `libamdhip64.so`. Nothing links against
//! ROCm, so one binary starts on machines with either runtime, or none (then every entry point
//! here returns an error naming what was tried).
//!
//! Entry points are declared here with `i32` results (an error code a newer runtime adds must
//! not be undefined behaviour). `hipDeviceProp_t` changed layout in ROCm 6; kiln reads the
//! ROCm 5 layout (`hipGetDevicePropertiesR0000` where the runtime versions the call, else
//! `hipGetDeviceProperties`), with the offsets checked against hip-runtime-sys's bindings by the
//! `hip-abi-check` feature.
//!
//! No AMD GPU exists where kiln is developed: loading the library and the no-device path are
//! tested; loading and launching on AMD hardware has not been run.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::sync::{Arc, OnceLock};

use kiln_format::text::excerpt;

use super::{
    select_ordinal, BackendError, Device, DeviceInfo, Driver, Raw, TensorMap, TensorMapShape,
    TmaElement,
};

/// The environment variable naming the HIP runtime library to load.
pub const LIBRARY_ENV: &str = "KILN_HIP_LIBRARY";

/// Sonames tried in order when [`LIBRARY_ENV`] is unset.
pub const SONAMES: [&str; 3] = ["libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"];

/// Byte offsets in ROCm 5's `hipDeviceProp_t` (`hipDeviceProp_tR0000` in ROCm 6).
pub(crate) mod props {
    /// `char name[256]`.
    pub const NAME: usize = 0;
    /// `int multiProcessorCount`.
    pub const MULTIPROCESSOR_COUNT: usize = 336;
    /// `char gcnArchName[256]`.
    pub const GCN_ARCH_NAME: usize = 396;
    /// `sizeof(hipDeviceProp_t)`.
    pub const SIZE: usize = 792;
}

type Rc = c_int;

/// The HIP entry points kiln calls.
#[allow(non_snake_case)]
struct Api {
    // Keeps the library mapped while the function pointers below are used.
    _lib: libloading::Library,
    path: String,
    hipInit: unsafe extern "C" fn(c_uint) -> Rc,
    hipGetDeviceCount: unsafe extern "C" fn(*mut c_int) -> Rc,
    hipGetDeviceProperties: unsafe extern "C" fn(*mut c_void, c_int) -> Rc,
    hipDeviceGetUuid: unsafe extern "C" fn(*mut [u8; 16], c_int) -> Rc,
    hipDeviceTotalMem: unsafe extern "C" fn(*mut usize, c_int) -> Rc,
    hipSetDevice: unsafe extern "C" fn(c_int) -> Rc,
    hipGetErrorString: unsafe extern "C" fn(Rc) -> *const c_char,
    hipModuleLoadData: unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> Rc,
    hipModuleUnload: unsafe extern "C" fn(*mut c_void) -> Rc,
    hipModuleGetFunction: unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const c_char) -> Rc,
    hipMalloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> Rc,
    hipFree: unsafe extern "C" fn(*mut c_void) -> Rc,
    hipMemcpyHtoD: unsafe extern "C" fn(*mut c_void, *mut c_void, usize) -> Rc,
    hipMemcpyDtoH: unsafe extern "C" fn(*mut c_void, *mut c_void, usize) -> Rc,
    hipMemsetD8: unsafe extern "C" fn(*mut c_void, u8, usize) -> Rc,
    hipMemsetD32Async: unsafe extern "C" fn(*mut c_void, c_int, usize, *mut c_void) -> Rc,
    hipStreamCreateWithFlags: unsafe extern "C" fn(*mut *mut c_void, c_uint) -> Rc,
    hipStreamDestroy: unsafe extern "C" fn(*mut c_void) -> Rc,
    #[allow(clippy::type_complexity)]
    hipModuleLaunchKernel: unsafe extern "C" fn(
        *mut c_void,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        *mut c_void,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> Rc,
    hipDeviceSynchronize: unsafe extern "C" fn() -> Rc,
    hipMemGetInfo: unsafe extern "C" fn(*mut usize, *mut usize) -> Rc,
    hipEventCreate: unsafe extern "C" fn(*mut *mut c_void) -> Rc,
    hipEventRecord: unsafe extern "C" fn(*mut c_void, *mut c_void) -> Rc,
    hipEventSynchronize: unsafe extern "C" fn(*mut c_void) -> Rc,
    hipStreamWaitEvent: unsafe extern "C" fn(*mut c_void, *mut c_void, u32) -> Rc,
    hipEventElapsedTime: unsafe extern "C" fn(*mut f32, *mut c_void, *mut c_void) -> Rc,
    hipEventDestroy: unsafe extern "C" fn(*mut c_void) -> Rc,
}

/// Where the dynamic loader would find the library `name` (a path, or a soname searched in
/// `LD_LIBRARY_PATH` and the usual library folders), checked to be a regular file whose ELF
/// headers, segments and sections all lie inside it. `Ok(None)`: a soname found in none of
/// those folders (the loader's own search, e.g. its cache, then decides).
fn library_file(name: &str) -> Result<Option<String>, String> {
    let path = if name.contains('/') {
        std::path::PathBuf::from(name)
    } else {
        let dirs = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
        let found = dirs
            .split(':')
            .filter(|d| !d.is_empty())
            .chain(LIBRARY_DIRS)
            .map(|d| std::path::Path::new(d).join(name))
            .find(|p| std::fs::symlink_metadata(p).is_ok());
        match found {
            Some(p) => p,
            None => return Ok(None),
        }
    };
    let shown = excerpt(&path.to_string_lossy());
    // No size cap: the library is read only where its headers point, never whole.
    let len =
        kiln_format::file::check_regular(&path, u64::MAX).map_err(|e| format!("{shown}: {e}"))?;
    let file = std::fs::File::open(&path).map_err(|e| format!("{shown}: {e}"))?;
    let read_at = |off: u64, size: u64| {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; usize::try_from(size).ok()?];
        file.read_exact_at(&mut buf, off).ok().map(|()| buf)
    };
    crate::codeobject::check_elf_layout(len, &read_at).map_err(|why| {
        format!("{shown}: not a usable shared library ({why}; damaged or truncated?)")
    })?;
    Ok(Some(path.to_string_lossy().into_owned()))
}

/// Folders searched for a soname after `LD_LIBRARY_PATH`: ROCm's, then the system's.
const LIBRARY_DIRS: [&str; 7] = [
    "/opt/rocm/lib",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib64",
    "/lib",
];

impl Api {
    fn load() -> Result<Api, String> {
        let env = std::env::var(LIBRARY_ENV).ok().filter(|v| !v.is_empty());
        let candidates: Vec<String> = match &env {
            Some(v) => vec![v.clone()],
            None => SONAMES.iter().map(|s| s.to_string()).collect(),
        };
        let mut tried = Vec::new();
        for name in &candidates {
            // dlopen maps the file and runs its code: a FIFO would block it and a truncated
            // library kill the process (SIGBUS), so the file is checked first.
            let name = match library_file(name) {
                Ok(Some(path)) => path,
                Ok(None) => name.clone(),
                Err(e) => {
                    tried.push(e);
                    continue;
                }
            };
            // SAFETY: loading the HIP runtime runs its initialisers, which is what using HIP
            // means; no kiln state is touched.
            match unsafe { libloading::Library::new(&name) } {
                Ok(lib) => {
                    return Api::bind(lib, &name).map_err(|e| format!("{}: {e}", excerpt(&name)));
                }
                // The loader's message repeats the name: quoted short and escaped too.
                Err(e) => tried.push(format!("{}: {}", excerpt(&name), excerpt(&e.to_string()))),
            }
        }
        Err(match env {
            Some(v) => format!(
                "{LIBRARY_ENV}='{}' could not be loaded ({})",
                excerpt(&v),
                tried.join("; ")
            ),
            None => format!(
                "no HIP runtime found (tried {}; set {LIBRARY_ENV} to its path)",
                SONAMES.join(", ")
            ),
        })
    }

    fn bind(lib: libloading::Library, path: &str) -> Result<Api, String> {
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the declared type matches HIP's C declaration of the symbol (with
                // `int` results), and `lib` stays loaded inside the returned Api.
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("symbol {}: {e}", $name))?
            };
        }
        // ROCm 6 versions this call; its unsuffixed layout is ROCm 6's, R0000 is ROCm 5's.
        // SAFETY: as in sym!.
        let props = match unsafe { lib.get(b"hipGetDevicePropertiesR0000\0") } {
            Ok(f) => *f,
            Err(_) => sym!("hipGetDeviceProperties"),
        };
        Ok(Api {
            path: path.to_string(),
            hipInit: sym!("hipInit"),
            hipGetDeviceCount: sym!("hipGetDeviceCount"),
            hipGetDeviceProperties: props,
            hipDeviceGetUuid: sym!("hipDeviceGetUuid"),
            hipDeviceTotalMem: sym!("hipDeviceTotalMem"),
            hipSetDevice: sym!("hipSetDevice"),
            hipGetErrorString: sym!("hipGetErrorString"),
            hipModuleLoadData: sym!("hipModuleLoadData"),
            hipModuleUnload: sym!("hipModuleUnload"),
            hipModuleGetFunction: sym!("hipModuleGetFunction"),
            hipMalloc: sym!("hipMalloc"),
            hipFree: sym!("hipFree"),
            hipMemcpyHtoD: sym!("hipMemcpyHtoD"),
            hipMemcpyDtoH: sym!("hipMemcpyDtoH"),
            hipMemsetD8: sym!("hipMemsetD8"),
            hipMemsetD32Async: sym!("hipMemsetD32Async"),
            hipStreamCreateWithFlags: sym!("hipStreamCreateWithFlags"),
            hipStreamDestroy: sym!("hipStreamDestroy"),
            hipModuleLaunchKernel: sym!("hipModuleLaunchKernel"),
            hipDeviceSynchronize: sym!("hipDeviceSynchronize"),
            hipMemGetInfo: sym!("hipMemGetInfo"),
            hipEventCreate: sym!("hipEventCreate"),
            hipEventRecord: sym!("hipEventRecord"),
            hipEventSynchronize: sym!("hipEventSynchronize"),
            hipStreamWaitEvent: sym!("hipStreamWaitEvent"),
            hipEventElapsedTime: sym!("hipEventElapsedTime"),
            hipEventDestroy: sym!("hipEventDestroy"),
            _lib: lib,
        })
    }

    fn check(&self, call: &'static str, rc: Rc) -> Result<(), BackendError> {
        if rc == 0 {
            return Ok(());
        }
        // SAFETY: hipGetErrorString returns a static string for any code (or null).
        let text = unsafe {
            let p = (self.hipGetErrorString)(rc);
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Err(BackendError {
            call,
            code: rc,
            message: format!("HIP error {rc}: {text}"),
        })
    }
}

/// The HIP runtime, loaded once per process (the environment is read on first use).
fn api() -> Result<&'static Api, BackendError> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(Api::load)
        .as_ref()
        .map_err(|e| BackendError::kiln("loading HIP", e.clone()))
}

/// Where the HIP runtime was loaded from, or why it was not.
pub fn library() -> Result<&'static str, BackendError> {
    api().map(|a| a.path.as_str())
}

fn count(api: &Api) -> Result<usize, BackendError> {
    // SAFETY: plain runtime calls with valid out-pointers.
    unsafe {
        api.check("hipInit", (api.hipInit)(0))?;
        let mut n = 0;
        api.check("hipGetDeviceCount", (api.hipGetDeviceCount)(&mut n))?;
        Ok(n.max(0) as usize)
    }
}

fn c_string_at(bytes: &[u8], offset: usize) -> String {
    let s = &bytes[offset..(offset + 256).min(bytes.len())];
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    String::from_utf8_lossy(&s[..end]).into_owned()
}

fn describe(api: &Api, ordinal: usize) -> Result<DeviceInfo, BackendError> {
    // Room to spare: a runtime may write more than the ROCm 5 struct.
    let mut buf = vec![0u8; props::SIZE + 4096];
    // SAFETY: the buffer is larger than the struct the call fills.
    api.check("hipGetDeviceProperties", unsafe {
        (api.hipGetDeviceProperties)(buf.as_mut_ptr().cast(), ordinal as c_int)
    })?;
    let mut cus = [0u8; 4];
    cus.copy_from_slice(&buf[props::MULTIPROCESSOR_COUNT..props::MULTIPROCESSOR_COUNT + 4]);
    let mut uuid = [0u8; 16];
    // SAFETY: valid 16-byte out-pointer.
    let uuid = match unsafe { (api.hipDeviceGetUuid)(&mut uuid, ordinal as c_int) } {
        0 => uuid.iter().map(|b| format!("{b:02x}")).collect(),
        _ => String::new(),
    };
    let mut total_memory = 0usize;
    // SAFETY: valid out-pointer; a runtime that cannot say leaves 0.
    let _ = unsafe { (api.hipDeviceTotalMem)(&mut total_memory, ordinal as c_int) };
    Ok(DeviceInfo {
        spec: format!("hip:{ordinal}"),
        name: c_string_at(&buf, props::NAME),
        arch: c_string_at(&buf, props::GCN_ARCH_NAME),
        compute_units: i32::from_ne_bytes(cus).max(0) as u32,
        uuid,
        driver_version: None,
        total_memory: total_memory as u64,
    })
}

/// Every HIP device (an error when the runtime is missing or fails).
pub fn list() -> Result<Vec<DeviceInfo>, BackendError> {
    let api = api()?;
    (0..count(api)?).map(|i| describe(api, i)).collect()
}

/// An open HIP device.
pub struct HipDriver {
    api: &'static Api,
    info: DeviceInfo,
    ordinal: c_int,
}

/// Opens `:<ordinal>` or `://<uuid>`.
pub fn open(rest: &str) -> Result<Device, BackendError> {
    let api = api()?;
    let ordinal = select_ordinal(rest, "hip", count(api)?, |i| {
        describe(api, i).ok().map(|d| d.uuid)
    })?;
    let d = HipDriver {
        api,
        info: describe(api, ordinal)?,
        ordinal: ordinal as c_int,
    };
    d.current()?;
    Ok(Device::new(Arc::new(d)))
}

impl HipDriver {
    /// Binds the device to the calling thread (HIP's current device is per thread).
    fn current(&self) -> Result<(), BackendError> {
        // SAFETY: plain runtime call.
        self.api.check("hipSetDevice", unsafe {
            (self.api.hipSetDevice)(self.ordinal)
        })
    }
}

impl Driver for HipDriver {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    unsafe fn load_module(&self, image: &[u8]) -> Result<Raw, BackendError> {
        self.current()?;
        let mut m = std::ptr::null_mut();
        // SAFETY: the caller guarantees every header of the object lies within the slice.
        self.api.check("hipModuleLoadData", unsafe {
            (self.api.hipModuleLoadData)(&mut m, image.as_ptr().cast())
        })?;
        Ok(m as Raw)
    }

    unsafe fn unload_module(&self, module: Raw) {
        if self.current().is_ok() {
            // SAFETY: the caller passes a loaded module, unused afterwards.
            unsafe { (self.api.hipModuleUnload)(module as *mut c_void) };
        }
    }

    unsafe fn function(&self, module: Raw, name: &str) -> Result<Raw, BackendError> {
        self.current()?;
        let cname = CString::new(name)
            .map_err(|_| BackendError::kiln("hipModuleGetFunction", "NUL in name"))?;
        let mut f = std::ptr::null_mut();
        // SAFETY: the caller passes a loaded module.
        self.api.check("hipModuleGetFunction", unsafe {
            (self.api.hipModuleGetFunction)(&mut f, module as *mut c_void, cname.as_ptr())
        })?;
        Ok(f as Raw)
    }

    fn alloc(&self, bytes: usize) -> Result<Raw, BackendError> {
        self.current()?;
        let mut p = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        self.api.check("hipMalloc", unsafe {
            (self.api.hipMalloc)(&mut p, bytes.max(1))
        })?;
        Ok(p as Raw)
    }

    unsafe fn free(&self, ptr: Raw) {
        if self.current().is_ok() {
            // SAFETY: the caller passes an allocation of this device, unused afterwards.
            unsafe { (self.api.hipFree)(ptr as *mut c_void) };
        }
    }

    unsafe fn upload(&self, dst: Raw, src: &[u8]) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller guarantees dst holds src.len() bytes.
        self.api.check("hipMemcpyHtoD", unsafe {
            (self.api.hipMemcpyHtoD)(dst as *mut c_void, src.as_ptr() as *mut c_void, src.len())
        })
    }

    unsafe fn download(&self, src: Raw, dst: &mut [u8]) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller guarantees src holds dst.len() bytes.
        self.api.check("hipMemcpyDtoH", unsafe {
            (self.api.hipMemcpyDtoH)(dst.as_mut_ptr().cast(), src as *mut c_void, dst.len())
        })
    }

    unsafe fn fill(&self, dst: Raw, value: u8, bytes: usize) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller guarantees dst holds `bytes` bytes.
        self.api.check("hipMemsetD8", unsafe {
            (self.api.hipMemsetD8)(dst as *mut c_void, value, bytes)
        })
    }

    fn create_stream(&self) -> Result<Raw, BackendError> {
        self.current()?;
        let mut s = std::ptr::null_mut();
        // SAFETY: valid out-pointer; 1 = hipStreamNonBlocking.
        self.api.check("hipStreamCreateWithFlags", unsafe {
            (self.api.hipStreamCreateWithFlags)(&mut s, 1)
        })?;
        Ok(s as Raw)
    }

    unsafe fn destroy_stream(&self, stream: Raw) {
        if self.current().is_ok() {
            // SAFETY: the caller passes a stream of this device, unused afterwards.
            unsafe { (self.api.hipStreamDestroy)(stream as *mut c_void) };
        }
    }

    // kiln's HIP backend does not capture graphs (no AMD GPU exists here to test them on);
    // timing falls back to back-to-back launches.
    fn captures_graphs(&self) -> bool {
        false
    }

    unsafe fn begin_capture(&self, _stream: Raw) -> Result<(), BackendError> {
        Err(super::amd::no_graphs("begin_capture"))
    }

    unsafe fn end_capture(&self, _stream: Raw) -> Result<Raw, BackendError> {
        Err(super::amd::no_graphs("end_capture"))
    }

    unsafe fn launch_graph(&self, _graph: Raw, _stream: Raw) -> Result<(), BackendError> {
        Err(super::amd::no_graphs("launch_graph"))
    }

    unsafe fn destroy_graph(&self, _graph: Raw) {}

    unsafe fn zero_async(&self, dst: Raw, words: usize, stream: Raw) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller guarantees dst holds 4 * words bytes and a live stream.
        self.api.check("hipMemsetD32Async", unsafe {
            (self.api.hipMemsetD32Async)(dst as *mut c_void, 0, words, stream as *mut c_void)
        })
    }

    unsafe fn set_max_dynamic_shared(
        &self,
        _function: Raw,
        bytes: u32,
    ) -> Result<(), BackendError> {
        // AMD GPUs give every workgroup up to 64 KiB of LDS without an opt-in; no AMD kernel
        // of kiln's asks for more.
        super::amd::check_lds(bytes)
    }

    fn encode_tensor_map(
        &self,
        _: TmaElement,
        _: Raw,
        _: &TensorMapShape,
    ) -> Result<TensorMap, BackendError> {
        Err(super::amd::no_tensor_maps())
    }

    fn replace_tensor_map_address(&self, _: &mut TensorMap, _: Raw) -> Result<(), BackendError> {
        Err(super::amd::no_tensor_maps())
    }

    unsafe fn launch(
        &self,
        function: Raw,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        stream: Raw,
        params: &mut [*mut c_void],
        _programmatic: bool,
        cluster: u32,
    ) -> Result<(), BackendError> {
        super::amd::check_no_clusters(cluster)?;
        self.current()?;
        // SAFETY: the caller guarantees a live function, matching params and stream.
        self.api.check("hipModuleLaunchKernel", unsafe {
            (self.api.hipModuleLaunchKernel)(
                function as *mut c_void,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared_bytes,
                stream as *mut c_void,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }

    fn synchronize(&self) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: plain runtime call.
        self.api.check("hipDeviceSynchronize", unsafe {
            (self.api.hipDeviceSynchronize)()
        })
    }

    fn memory_info(&self) -> Result<(u64, u64), BackendError> {
        self.current()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: valid out-pointers.
        self.api.check("hipMemGetInfo", unsafe {
            (self.api.hipMemGetInfo)(&mut free, &mut total)
        })?;
        Ok((free as u64, total as u64))
    }

    fn create_event(&self) -> Result<Raw, BackendError> {
        self.current()?;
        let mut e = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        self.api.check("hipEventCreate", unsafe {
            (self.api.hipEventCreate)(&mut e)
        })?;
        Ok(e as Raw)
    }

    unsafe fn record_event(&self, event: Raw, stream: Raw) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller passes a live event and stream.
        self.api.check("hipEventRecord", unsafe {
            (self.api.hipEventRecord)(event as *mut c_void, stream as *mut c_void)
        })
    }

    unsafe fn stream_wait_event(&self, stream: Raw, event: Raw) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller passes a recorded event and a live stream; flags must be 0.
        self.api.check("hipStreamWaitEvent", unsafe {
            (self.api.hipStreamWaitEvent)(stream as *mut c_void, event as *mut c_void, 0)
        })
    }

    unsafe fn elapsed_ms(&self, start: Raw, end: Raw) -> Result<f32, BackendError> {
        self.current()?;
        let mut ms = 0f32;
        // SAFETY: the caller passes recorded events.
        unsafe {
            self.api.check(
                "hipEventSynchronize",
                (self.api.hipEventSynchronize)(end as *mut c_void),
            )?;
            self.api.check(
                "hipEventElapsedTime",
                (self.api.hipEventElapsedTime)(&mut ms, start as *mut c_void, end as *mut c_void),
            )?;
        }
        Ok(ms)
    }

    unsafe fn destroy_event(&self, event: Raw) {
        // SAFETY: the caller passes a live event, unused afterwards.
        unsafe { (self.api.hipEventDestroy)(event as *mut c_void) };
    }
}

/// ROCm 5's `hipDeviceProp_t` as hip-runtime-sys binds it: the offsets kiln reads, checked at
/// compile time (`--features hip-abi-check`, needs ROCm headers to build the crate).
#[cfg(feature = "hip-abi-check")]
const _: () = {
    use hip_runtime_sys::hipDeviceProp_t as P;
    assert!(core::mem::offset_of!(P, name) == props::NAME);
    assert!(core::mem::offset_of!(P, multiProcessorCount) == props::MULTIPROCESSOR_COUNT);
    assert!(core::mem::offset_of!(P, gcnArchName) == props::GCN_ARCH_NAME);
    assert!(core::mem::size_of::<P>() == props::SIZE);
};
