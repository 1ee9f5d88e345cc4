//! CUDA through cudarc's driver bindings, with libcuda loaded at run time: a machine without
//! the driver gets an error from every entry point here (cudarc would panic; kiln probes first).

use std::ffi::{c_void, CStr, CString};
use std::sync::OnceLock;

use cudarc::driver::sys;

use super::{
    select_ordinal, Backend, BackendError, DeviceInfo, DevicePtr, Function, Module, Stream,
};

/// Whether libcuda can be loaded (probed once).
pub fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the driver library.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// Why no CUDA device is usable, for messages.
pub fn absence_reason() -> String {
    if !driver_present() {
        "the CUDA driver (libcuda.so) is not installed".into()
    } else {
        match count() {
            Ok(0) => "the CUDA driver reports no device".into(),
            Ok(n) => format!("{n} CUDA device(s)"),
            Err(e) => e.to_string(),
        }
    }
}

fn check(call: &'static str, rc: sys::CUresult) -> Result<(), BackendError> {
    if rc == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut msg: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: cuGetErrorString writes a pointer to a static string or leaves it null.
    let text = unsafe {
        sys::cuGetErrorString(rc, &mut msg);
        if msg.is_null() {
            format!("{rc:?}")
        } else {
            format!("{rc:?}: {}", CStr::from_ptr(msg).to_string_lossy())
        }
    };
    Err(BackendError {
        call,
        message: text,
    })
}

fn init() -> Result<(), BackendError> {
    if !driver_present() {
        return Err(BackendError {
            call: "cuInit",
            message: "the CUDA driver (libcuda.so) is not installed".into(),
        });
    }
    static INIT: OnceLock<Result<(), BackendError>> = OnceLock::new();
    // SAFETY: plain driver call.
    INIT.get_or_init(|| check("cuInit", unsafe { sys::cuInit(0) }))
        .clone()
}

fn count() -> Result<usize, BackendError> {
    init()?;
    let mut n = 0;
    // SAFETY: valid out-pointer.
    check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut n) })?;
    Ok(n.max(0) as usize)
}

fn attr(dev: sys::CUdevice, a: sys::CUdevice_attribute) -> Result<i32, BackendError> {
    let mut v = 0;
    // SAFETY: valid out-pointer and device.
    check("cuDeviceGetAttribute", unsafe {
        sys::cuDeviceGetAttribute(&mut v, a, dev)
    })?;
    Ok(v)
}

fn describe(ordinal: usize) -> Result<(sys::CUdevice, DeviceInfo), BackendError> {
    let mut dev = 0;
    // SAFETY: valid out-pointer; ordinal is checked by the driver.
    check("cuDeviceGet", unsafe {
        sys::cuDeviceGet(&mut dev, ordinal as i32)
    })?;
    let mut name = [0 as std::ffi::c_char; 256];
    // SAFETY: the buffer is 256 bytes, as passed.
    check("cuDeviceGetName", unsafe {
        sys::cuDeviceGetName(name.as_mut_ptr(), 256, dev)
    })?;
    // SAFETY: the driver NUL-terminates the name.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let major = attr(
        dev,
        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
    )?;
    let minor = attr(
        dev,
        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
    )?;
    let sms = attr(
        dev,
        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    )?;
    let mut uuid = sys::CUuuid { bytes: [0; 16] };
    // SAFETY: valid out-pointer.
    check("cuDeviceGetUuid", unsafe {
        sys::cuDeviceGetUuid_v2(&mut uuid, dev)
    })?;
    let b: Vec<u8> = uuid.bytes.iter().map(|&c| c as u8).collect();
    let hex =
        |r: std::ops::Range<usize>| b[r].iter().map(|x| format!("{x:02x}")).collect::<String>();
    let uuid = format!(
        "GPU-{}-{}-{}-{}-{}",
        hex(0..4),
        hex(4..6),
        hex(6..8),
        hex(8..10),
        hex(10..16)
    );
    Ok((
        dev,
        DeviceInfo {
            spec: format!("cuda:{ordinal}"),
            name,
            arch: format!("sm_{major}{minor}"),
            compute_units: sms.max(0) as u32,
            uuid,
        },
    ))
}

/// Every CUDA device.
pub fn list() -> Result<Vec<DeviceInfo>, BackendError> {
    (0..count()?).map(|i| describe(i).map(|(_, d)| d)).collect()
}

/// An open CUDA device with its primary context.
pub struct CudaBackend {
    info: DeviceInfo,
    ctx: sys::CUcontext,
}

// SAFETY: a CUDA context may be used from any thread once made current there, which every
// method does first.
unsafe impl Send for CudaBackend {}
// SAFETY: see Send; the driver API is thread-safe.
unsafe impl Sync for CudaBackend {}

/// Opens `:<ordinal>` or `://GPU-<uuid>`.
pub fn open(rest: &str) -> Result<CudaBackend, BackendError> {
    let ordinal = select_ordinal(rest, "cuda", count()?, |i| {
        describe(i).ok().map(|(_, d)| d.uuid)
    })?;
    let (dev, info) = describe(ordinal)?;
    let mut ctx = std::ptr::null_mut();
    // SAFETY: valid out-pointer and device.
    check("cuDevicePrimaryCtxRetain", unsafe {
        sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)
    })?;
    let b = CudaBackend { info, ctx };
    b.current()?;
    Ok(b)
}

impl CudaBackend {
    fn current(&self) -> Result<(), BackendError> {
        // SAFETY: the context is retained for the backend's lifetime.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })
    }
}

impl Backend for CudaBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn load_module(&self, image: &[u8]) -> Result<Module, BackendError> {
        self.current()?;
        let mut m = std::ptr::null_mut();
        // SAFETY: `image` is a complete cubin checked by crate::codeobject (the driver reads
        // it by its own headers, which were bounds-checked against the slice).
        check("cuModuleLoadData", unsafe {
            sys::cuModuleLoadData(&mut m, image.as_ptr().cast())
        })?;
        Ok(Module(m as u64))
    }

    fn function(&self, module: Module, name: &str) -> Result<Function, BackendError> {
        self.current()?;
        let cname = CString::new(name).map_err(|_| BackendError {
            call: "cuModuleGetFunction",
            message: "NUL in name".into(),
        })?;
        let mut f = std::ptr::null_mut();
        // SAFETY: the module handle came from load_module.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut f, module.0 as sys::CUmodule, cname.as_ptr())
        })?;
        Ok(Function(f as u64))
    }

    fn alloc(&self, bytes: usize) -> Result<DevicePtr, BackendError> {
        self.current()?;
        let mut p = 0;
        // SAFETY: valid out-pointer.
        check("cuMemAlloc", unsafe {
            sys::cuMemAlloc_v2(&mut p, bytes.max(1))
        })?;
        Ok(DevicePtr(p))
    }

    fn free(&self, ptr: DevicePtr) {
        if self.current().is_ok() {
            // SAFETY: ptr came from alloc.
            unsafe { sys::cuMemFree_v2(ptr.0) };
        }
    }

    fn upload(&self, dst: DevicePtr, src: &[u8]) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller sized dst for src (Context checks buffer sizes).
        check("cuMemcpyHtoD", unsafe {
            sys::cuMemcpyHtoD_v2(dst.0, src.as_ptr().cast(), src.len())
        })
    }

    fn download(&self, src: DevicePtr, dst: &mut [u8]) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: as upload.
        check("cuMemcpyDtoH", unsafe {
            sys::cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), src.0, dst.len())
        })
    }

    fn fill(&self, dst: DevicePtr, value: u8, bytes: usize) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: as upload.
        check("cuMemsetD8", unsafe {
            sys::cuMemsetD8_v2(dst.0, value, bytes)
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
        self.current()?;
        // SAFETY: params point at live values laid out as the kernel's parameters.
        check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                f.0 as sys::CUfunction,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                0,
                stream.0 as sys::CUstream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }

    fn synchronize(&self) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: plain driver call.
        check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
    }

    fn record_event(&self, stream: Stream) -> Result<u64, BackendError> {
        self.current()?;
        let mut e = std::ptr::null_mut();
        // SAFETY: valid out-pointer; default flags.
        check("cuEventCreate", unsafe { sys::cuEventCreate(&mut e, 0) })?;
        // SAFETY: e was just created.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(e, stream.0 as sys::CUstream)
        })?;
        Ok(e as u64)
    }

    fn elapsed_ms(&self, start: u64, end: u64) -> Result<f32, BackendError> {
        self.current()?;
        // SAFETY: events came from record_event.
        check("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(end as sys::CUevent)
        })?;
        let mut ms = 0f32;
        // SAFETY: as above.
        check("cuEventElapsedTime", unsafe {
            sys::cuEventElapsedTime(&mut ms, start as sys::CUevent, end as sys::CUevent)
        })?;
        Ok(ms)
    }

    fn destroy_event(&self, event: u64) {
        // SAFETY: event came from record_event.
        unsafe { sys::cuEventDestroy_v2(event as sys::CUevent) };
    }
}
