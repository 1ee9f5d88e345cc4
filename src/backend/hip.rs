//! HIP through hip-runtime-sys (behind the `hip` feature). kiln declares the few entry points
//! it calls with `i32` results: the crate's `hipError_t` is a Rust enum, and an error code that
//! a newer runtime adds would be undefined behaviour there. The crate supplies the link to
//! libamdhip64 and the `hipDeviceProp_t` layout.
//!
//! No AMD GPU exists where kiln is developed: this backend is built and its no-device path is
//! tested in CI; loading and launching on AMD hardware has not been run.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

use super::{
    select_ordinal, Backend, BackendError, DeviceInfo, DevicePtr, Function, Module, Stream,
};

// The crate's build script links libamdhip64; keep it in the dependency graph.
use hip_runtime_sys as _;

#[allow(non_snake_case)]
extern "C" {
    fn hipInit(flags: c_uint) -> c_int;
    fn hipGetDeviceCount(count: *mut c_int) -> c_int;
    fn hipGetDeviceProperties(prop: *mut hip_runtime_sys::hipDeviceProp_t, device: c_int) -> c_int;
    fn hipDeviceGetUuid(uuid: *mut hip_runtime_sys::hipUUID, device: c_int) -> c_int;
    fn hipSetDevice(device: c_int) -> c_int;
    fn hipGetErrorString(err: c_int) -> *const c_char;
    fn hipModuleLoadData(module: *mut *mut c_void, image: *const c_void) -> c_int;
    fn hipModuleGetFunction(f: *mut *mut c_void, module: *mut c_void, name: *const c_char)
        -> c_int;
    fn hipMalloc(ptr: *mut *mut c_void, size: usize) -> c_int;
    fn hipFree(ptr: *mut c_void) -> c_int;
    fn hipMemcpyHtoD(dst: *mut c_void, src: *mut c_void, bytes: usize) -> c_int;
    fn hipMemcpyDtoH(dst: *mut c_void, src: *mut c_void, bytes: usize) -> c_int;
    fn hipMemsetD8(dst: *mut c_void, value: u8, count: usize) -> c_int;
    #[allow(clippy::too_many_arguments)]
    fn hipModuleLaunchKernel(
        f: *mut c_void,
        gx: c_uint,
        gy: c_uint,
        gz: c_uint,
        bx: c_uint,
        by: c_uint,
        bz: c_uint,
        shared: c_uint,
        stream: *mut c_void,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> c_int;
    fn hipDeviceSynchronize() -> c_int;
    fn hipEventCreate(e: *mut *mut c_void) -> c_int;
    fn hipEventRecord(e: *mut c_void, stream: *mut c_void) -> c_int;
    fn hipEventSynchronize(e: *mut c_void) -> c_int;
    fn hipEventElapsedTime(ms: *mut f32, start: *mut c_void, stop: *mut c_void) -> c_int;
    fn hipEventDestroy(e: *mut c_void) -> c_int;
}

fn check(call: &'static str, rc: c_int) -> Result<(), BackendError> {
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: hipGetErrorString returns a static string for any code (or null).
    let text = unsafe {
        let p = hipGetErrorString(rc);
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    Err(BackendError {
        call,
        message: format!("HIP error {rc}: {text}"),
    })
}

fn count() -> Result<usize, BackendError> {
    // SAFETY: plain runtime calls with valid out-pointers.
    unsafe {
        check("hipInit", hipInit(0))?;
        let mut n = 0;
        check("hipGetDeviceCount", hipGetDeviceCount(&mut n))?;
        Ok(n.max(0) as usize)
    }
}

fn describe(ordinal: usize) -> Result<DeviceInfo, BackendError> {
    // The struct is read through a buffer with slack: the runtime's hipDeviceProp_t may be larger
    // than the 5.4 headers the crate was generated from.
    #[repr(C)]
    struct Padded {
        prop: hip_runtime_sys::hipDeviceProp_t,
        slack: [u8; 4096],
    }
    // SAFETY: a zeroed plain-C struct is a valid value; the runtime fills it.
    let mut p: Box<Padded> = Box::new(unsafe { std::mem::zeroed() });
    // SAFETY: valid out-pointer with room to spare.
    check("hipGetDeviceProperties", unsafe {
        hipGetDeviceProperties(&mut p.prop, ordinal as c_int)
    })?;
    // SAFETY: both strings are NUL-terminated arrays inside the struct.
    let name = unsafe { CStr::from_ptr(p.prop.name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let arch = unsafe { CStr::from_ptr(p.prop.gcnArchName.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: zeroed plain-C struct.
    let mut uuid: hip_runtime_sys::hipUUID = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    let uuid = match unsafe { hipDeviceGetUuid(&mut uuid, ordinal as c_int) } {
        0 => uuid
            .bytes
            .iter()
            .map(|&b| format!("{:02x}", b as u8))
            .collect(),
        _ => String::new(),
    };
    Ok(DeviceInfo {
        spec: format!("hip:{ordinal}"),
        name,
        arch,
        compute_units: p.prop.multiProcessorCount.max(0) as u32,
        uuid,
    })
}

/// Every HIP device.
pub fn list() -> Result<Vec<DeviceInfo>, BackendError> {
    (0..count()?).map(describe).collect()
}

/// An open HIP device.
pub struct HipBackend {
    info: DeviceInfo,
    ordinal: c_int,
}

/// Opens `:<ordinal>` or `://<uuid>`.
pub fn open(rest: &str) -> Result<HipBackend, BackendError> {
    let ordinal = select_ordinal(rest, "hip", count()?, |i| describe(i).ok().map(|d| d.uuid))?;
    let info = describe(ordinal)?;
    let b = HipBackend {
        info,
        ordinal: ordinal as c_int,
    };
    b.current()?;
    Ok(b)
}

impl HipBackend {
    fn current(&self) -> Result<(), BackendError> {
        // SAFETY: plain runtime call.
        check("hipSetDevice", unsafe { hipSetDevice(self.ordinal) })
    }
}

impl Backend for HipBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn load_module(&self, image: &[u8]) -> Result<Module, BackendError> {
        self.current()?;
        let mut m = std::ptr::null_mut();
        // SAFETY: the image was checked by crate::codeobject: every header, section and segment
        // lies within it (HIP takes no length).
        check("hipModuleLoadData", unsafe {
            hipModuleLoadData(&mut m, image.as_ptr().cast())
        })?;
        Ok(Module(m as u64))
    }
    fn function(&self, module: Module, name: &str) -> Result<Function, BackendError> {
        let cname = CString::new(name).map_err(|_| BackendError {
            call: "hipModuleGetFunction",
            message: "NUL in name".into(),
        })?;
        let mut f = std::ptr::null_mut();
        // SAFETY: module came from load_module.
        check("hipModuleGetFunction", unsafe {
            hipModuleGetFunction(&mut f, module.0 as *mut c_void, cname.as_ptr())
        })?;
        Ok(Function(f as u64))
    }
    fn alloc(&self, bytes: usize) -> Result<DevicePtr, BackendError> {
        self.current()?;
        let mut p = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        check("hipMalloc", unsafe { hipMalloc(&mut p, bytes.max(1)) })?;
        Ok(DevicePtr(p as u64))
    }
    fn free(&self, ptr: DevicePtr) {
        // SAFETY: ptr came from alloc.
        unsafe { hipFree(ptr.0 as *mut c_void) };
    }
    fn upload(&self, dst: DevicePtr, src: &[u8]) -> Result<(), BackendError> {
        // SAFETY: the caller sized dst for src.
        check("hipMemcpyHtoD", unsafe {
            hipMemcpyHtoD(dst.0 as *mut c_void, src.as_ptr() as *mut c_void, src.len())
        })
    }
    fn download(&self, src: DevicePtr, dst: &mut [u8]) -> Result<(), BackendError> {
        // SAFETY: as upload.
        check("hipMemcpyDtoH", unsafe {
            hipMemcpyDtoH(dst.as_mut_ptr().cast(), src.0 as *mut c_void, dst.len())
        })
    }
    fn fill(&self, dst: DevicePtr, value: u8, bytes: usize) -> Result<(), BackendError> {
        // SAFETY: as upload.
        check("hipMemsetD8", unsafe {
            hipMemsetD8(dst.0 as *mut c_void, value, bytes)
        })
    }
    fn launch(
        &self,
        f: Function,
        grid: [u32; 3],
        block: [u32; 3],
        stream: Stream,
        params: &mut [*mut c_void],
    ) -> Result<(), BackendError> {
        // SAFETY: params point at live values laid out as the kernel's parameters.
        check("hipModuleLaunchKernel", unsafe {
            hipModuleLaunchKernel(
                f.0 as *mut c_void,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                0,
                stream.0 as *mut c_void,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }
    fn synchronize(&self) -> Result<(), BackendError> {
        // SAFETY: plain runtime call.
        check("hipDeviceSynchronize", unsafe { hipDeviceSynchronize() })
    }
    fn record_event(&self, stream: Stream) -> Result<u64, BackendError> {
        let mut e = std::ptr::null_mut();
        // SAFETY: valid out-pointer; e is recorded right after creation.
        unsafe {
            check("hipEventCreate", hipEventCreate(&mut e))?;
            check("hipEventRecord", hipEventRecord(e, stream.0 as *mut c_void))?;
        }
        Ok(e as u64)
    }
    fn elapsed_ms(&self, start: u64, end: u64) -> Result<f32, BackendError> {
        let mut ms = 0f32;
        // SAFETY: events came from record_event.
        unsafe {
            check(
                "hipEventSynchronize",
                hipEventSynchronize(end as *mut c_void),
            )?;
            check(
                "hipEventElapsedTime",
                hipEventElapsedTime(&mut ms, start as *mut c_void, end as *mut c_void),
            )?;
        }
        Ok(ms)
    }
    fn destroy_event(&self, event: u64) {
        // SAFETY: event came from record_event.
        unsafe { hipEventDestroy(event as *mut c_void) };
    }
}
