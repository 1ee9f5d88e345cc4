//! CUDA through cudarc's driver bindings (`cudarc::driver::sys`), with libcuda loaded at run
//! time: a machine without the driver gets an error from every entry point here (cudarc would
//! panic; kiln probes first). The device's primary context is retained while the device is open
//! and released when the last handle of it is dropped.

use std::ffi::{c_void, CStr, CString};
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys;

use super::{
    select_ordinal, BackendError, Device, DeviceInfo, Driver, Raw, TensorMap, TensorMapShape,
    TmaBoxes, TmaElement,
};

/// Whether libcuda can be loaded (probed once).
pub fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the driver library.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// The driver library, or why it could not be loaded.
pub fn library() -> Result<&'static str, BackendError> {
    if driver_present() {
        Ok("libcuda.so")
    } else {
        Err(BackendError::kiln(
            "loading CUDA",
            "the CUDA driver (libcuda.so) is not installed",
        ))
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
        code: rc as i32,
        message: text,
    })
}

fn init() -> Result<(), BackendError> {
    if !driver_present() {
        return Err(BackendError::kiln(
            "cuInit",
            "the CUDA driver (libcuda.so) is not installed",
        ));
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

/// The newest CUDA version the driver supports, `(major, minor)`.
fn driver_version() -> Result<(u32, u32), BackendError> {
    let mut v = 0;
    // SAFETY: valid out-pointer.
    check("cuDriverGetVersion", unsafe {
        sys::cuDriverGetVersion(&mut v)
    })?;
    let v = v.max(0) as u32;
    Ok((v / 1000, v % 1000 / 10))
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
    let mut total_memory = 0usize;
    // SAFETY: valid out-pointer.
    check("cuDeviceTotalMem", unsafe {
        sys::cuDeviceTotalMem_v2(&mut total_memory, dev)
    })?;
    Ok((
        dev,
        DeviceInfo {
            spec: format!("cuda:{ordinal}"),
            name,
            arch: format!("sm_{major}{minor}"),
            compute_units: sms.max(0) as u32,
            uuid,
            driver_version: Some(driver_version()?),
            total_memory: total_memory as u64,
        },
    ))
}

/// Every CUDA device (an error when the driver is missing or fails).
pub fn list() -> Result<Vec<DeviceInfo>, BackendError> {
    (0..count()?).map(|i| describe(i).map(|(_, d)| d)).collect()
}

/// An open CUDA device with its primary context.
pub struct CudaDriver {
    info: DeviceInfo,
    device: sys::CUdevice,
    ctx: sys::CUcontext,
    /// Whether kiln retained the device's primary context (released on drop); false for a
    /// caller's context ([`adopt_context`]), which the caller keeps and destroys.
    retained_primary: bool,
}

// SAFETY: a CUDA context may be used from any thread once made current there, which every
// call does first; the driver API is thread-safe.
unsafe impl Send for CudaDriver {}
// SAFETY: see Send.
unsafe impl Sync for CudaDriver {}

/// Opens `:<ordinal>` or `://GPU-<uuid>`.
pub fn open(rest: &str) -> Result<Device, BackendError> {
    let ordinal = select_ordinal(rest, "cuda", count()?, |i| {
        describe(i).ok().map(|(_, d)| d.uuid)
    })?;
    let (device, info) = describe(ordinal)?;
    let mut ctx = std::ptr::null_mut();
    // SAFETY: valid out-pointer and device.
    check("cuDevicePrimaryCtxRetain", unsafe {
        sys::cuDevicePrimaryCtxRetain(&mut ctx, device)
    })?;
    let d = CudaDriver {
        info,
        device,
        ctx,
        retained_primary: true,
    };
    d.current()?;
    Ok(Device::new(Arc::new(d)))
}

/// Opens the device of a context the caller created (`CUcontext`): kiln makes it current on
/// the calling thread for each of its calls, as the runtime API does, and never destroys it.
///
/// # Safety
/// `ctx` is a live CUDA context that outlives every kiln object made from the returned device.
pub unsafe fn adopt_context(ctx: Raw) -> Result<Device, BackendError> {
    init()?;
    if ctx == 0 {
        return Err(BackendError::kiln(
            "adopt CUDA context",
            "the context is null",
        ));
    }
    let ctx = ctx as sys::CUcontext;
    // SAFETY: the caller passes a live context.
    check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) })?;
    let mut dev = 0;
    // SAFETY: valid out-pointer; a context is current.
    check("cuCtxGetDevice", unsafe { sys::cuCtxGetDevice(&mut dev) })?;
    // A CUdevice is its ordinal on every driver so far; look it up rather than assume so.
    let mut found = None;
    for i in 0..count()? {
        let mut d = 0;
        // SAFETY: valid out-pointer.
        check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut d, i as i32) })?;
        if d == dev {
            found = Some(i);
            break;
        }
    }
    let ordinal = found.ok_or_else(|| {
        BackendError::kiln(
            "adopt CUDA context",
            format!("the context's device {dev} is not among the driver's devices"),
        )
    })?;
    let (device, info) = describe(ordinal)?;
    Ok(Device::new(Arc::new(CudaDriver {
        info,
        device,
        ctx,
        retained_primary: false,
    })))
}

impl CudaDriver {
    fn current(&self) -> Result<(), BackendError> {
        // SAFETY: the context is retained for the driver's lifetime.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })
    }
}

impl Drop for CudaDriver {
    fn drop(&mut self) {
        // Every module, buffer and event holds a Device (an Arc of this driver), so none is
        // alive any more: the context can go.
        if self.retained_primary {
            // SAFETY: retained in `open`, released once here.
            unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.device) };
        }
    }
}

impl Driver for CudaDriver {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    unsafe fn load_module(&self, image: &[u8]) -> Result<Raw, BackendError> {
        self.current()?;
        let mut m = std::ptr::null_mut();
        // SAFETY: the caller guarantees a complete cubin within the slice.
        check("cuModuleLoadData", unsafe {
            sys::cuModuleLoadData(&mut m, image.as_ptr().cast())
        })?;
        Ok(m as Raw)
    }

    unsafe fn unload_module(&self, module: Raw) {
        if self.current().is_ok() {
            // SAFETY: the caller passes a loaded module of this context, unused afterwards.
            unsafe { sys::cuModuleUnload(module as sys::CUmodule) };
        }
    }

    unsafe fn function(&self, module: Raw, name: &str) -> Result<Raw, BackendError> {
        self.current()?;
        let cname = CString::new(name)
            .map_err(|_| BackendError::kiln("cuModuleGetFunction", "NUL in name"))?;
        let mut f = std::ptr::null_mut();
        // SAFETY: the caller passes a loaded module.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut f, module as sys::CUmodule, cname.as_ptr())
        })?;
        Ok(f as Raw)
    }

    fn alloc(&self, bytes: usize) -> Result<Raw, BackendError> {
        self.current()?;
        let mut p = 0;
        // SAFETY: valid out-pointer.
        check("cuMemAlloc", unsafe {
            sys::cuMemAlloc_v2(&mut p, bytes.max(1))
        })?;
        Ok(p)
    }

    unsafe fn free(&self, ptr: Raw) {
        if self.current().is_ok() {
            // SAFETY: the caller passes an allocation of this context, unused afterwards.
            unsafe { sys::cuMemFree_v2(ptr) };
        }
    }

    unsafe fn upload(&self, dst: Raw, src: &[u8]) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller guarantees dst holds src.len() bytes.
        check("cuMemcpyHtoD", unsafe {
            sys::cuMemcpyHtoD_v2(dst, src.as_ptr().cast(), src.len())
        })
    }

    unsafe fn download(&self, src: Raw, dst: &mut [u8]) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller guarantees src holds dst.len() bytes.
        check("cuMemcpyDtoH", unsafe {
            sys::cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), src, dst.len())
        })
    }

    unsafe fn fill(&self, dst: Raw, value: u8, bytes: usize) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller guarantees dst holds `bytes` bytes.
        check("cuMemsetD8", unsafe {
            sys::cuMemsetD8_v2(dst, value, bytes)
        })
    }

    fn create_stream(&self) -> Result<Raw, BackendError> {
        self.current()?;
        let mut s = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        check("cuStreamCreate", unsafe {
            sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
        })?;
        Ok(s as Raw)
    }

    unsafe fn destroy_stream(&self, stream: Raw) {
        if self.current().is_ok() {
            // SAFETY: the caller passes a stream of this context, unused afterwards.
            unsafe { sys::cuStreamDestroy_v2(stream as sys::CUstream) };
        }
    }

    unsafe fn begin_capture(&self, stream: Raw) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller passes a live stream of this context.
        check("cuStreamBeginCapture", unsafe {
            sys::cuStreamBeginCapture_v2(
                stream as sys::CUstream,
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )
        })
    }

    unsafe fn end_capture(&self, stream: Raw) -> Result<Raw, BackendError> {
        self.current()?;
        let mut graph = std::ptr::null_mut();
        // SAFETY: the caller began a capture on this stream.
        check("cuStreamEndCapture", unsafe {
            sys::cuStreamEndCapture(stream as sys::CUstream, &mut graph)
        })?;
        let mut exec = std::ptr::null_mut();
        // SAFETY: graph is the captured graph; it is destroyed once instantiated (the
        // executable graph keeps what it needs).
        let rc = unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) };
        // SAFETY: as above.
        unsafe { sys::cuGraphDestroy(graph) };
        check("cuGraphInstantiate", rc)?;
        Ok(exec as Raw)
    }

    unsafe fn launch_graph(&self, graph: Raw, stream: Raw) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller passes a live executable graph and stream.
        check("cuGraphLaunch", unsafe {
            sys::cuGraphLaunch(graph as sys::CUgraphExec, stream as sys::CUstream)
        })
    }

    unsafe fn destroy_graph(&self, graph: Raw) {
        if self.current().is_ok() {
            // SAFETY: the caller passes an executable graph of this context, unused afterwards.
            unsafe { sys::cuGraphExecDestroy(graph as sys::CUgraphExec) };
        }
    }

    unsafe fn zero_async(&self, dst: Raw, words: usize, stream: Raw) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller guarantees dst holds 4 * words bytes and a live stream.
        check("cuMemsetD32Async", unsafe {
            sys::cuMemsetD32Async(dst, 0, words, stream as sys::CUstream)
        })
    }

    unsafe fn set_max_dynamic_shared(&self, function: Raw, bytes: u32) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller passes a live function of this context.
        check("cuFuncSetAttribute", unsafe {
            sys::cuFuncSetAttribute(
                function as sys::CUfunction,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
        })
    }

    fn encode_tensor_map(
        &self,
        element: TmaElement,
        address: Raw,
        shape: &TensorMapShape,
    ) -> Result<TensorMap, BackendError> {
        use sys::CUtensorMapDataType as T;
        let (data_type, bytes) = match element {
            TmaElement::F16 => (T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2),
            TmaElement::Bf16 => (T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2),
            TmaElement::F32 => (T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4),
        };
        let rank = shape.rank;
        if !(2..=5).contains(&rank) {
            return Err(BackendError::kiln(
                "cuTensorMapEncode",
                format!("tensor rank {rank} (2 to 5)"),
            ));
        }
        // Byte strides of the packed tensor's outer dimensions (the innermost is the element).
        let mut strides = [0u64; 4];
        let mut pitch = bytes;
        for (stride, extent) in strides.iter_mut().zip(&shape.dims[..rank - 1]) {
            pitch *= extent;
            *stride = pitch;
        }
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        // A swizzled box row spans the swizzle: 32, 64 or 128 bytes.
        let row_bytes = bytes
            * match &shape.boxes {
                TmaBoxes::Tiled(boxes) => boxes[0] as u64,
                TmaBoxes::Im2col { channels, .. } => *channels as u64,
            };
        use sys::CUtensorMapSwizzle as Z;
        let swizzle = match (shape.swizzle, row_bytes) {
            (false, _) => Z::CU_TENSOR_MAP_SWIZZLE_NONE,
            (true, 32) => Z::CU_TENSOR_MAP_SWIZZLE_32B,
            (true, 64) => Z::CU_TENSOR_MAP_SWIZZLE_64B,
            (true, 128) => Z::CU_TENSOR_MAP_SWIZZLE_128B,
            (true, other) => {
                return Err(BackendError::kiln(
                    "cuTensorMapEncode",
                    format!("a swizzled box row of {other} bytes (32, 64 or 128)"),
                ))
            }
        };
        let (interleave, promotion, fill) = (
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        );
        match &shape.boxes {
            TmaBoxes::Tiled(boxes) => {
                let element_strides = [1u32; 5];
                // SAFETY: every array holds at least `rank` entries (strides rank - 1); the map
                // is written, the address only encoded.
                check("cuTensorMapEncodeTiled", unsafe {
                    sys::cuTensorMapEncodeTiled(
                        &mut map,
                        data_type,
                        rank as u32,
                        address as *mut c_void,
                        shape.dims.as_ptr(),
                        strides.as_ptr(),
                        boxes.as_ptr(),
                        element_strides.as_ptr(),
                        interleave,
                        swizzle,
                        promotion,
                        fill,
                    )
                })?;
            }
            TmaBoxes::Im2col {
                lower,
                upper,
                channels,
                pixels,
                traversal,
            } => {
                // SAFETY: as above; the corners hold rank - 2 entries.
                check("cuTensorMapEncodeIm2col", unsafe {
                    sys::cuTensorMapEncodeIm2col(
                        &mut map,
                        data_type,
                        rank as u32,
                        address as *mut c_void,
                        shape.dims.as_ptr(),
                        strides.as_ptr(),
                        lower.as_ptr(),
                        upper.as_ptr(),
                        *channels,
                        *pixels,
                        traversal.as_ptr(),
                        interleave,
                        swizzle,
                        promotion,
                        fill,
                    )
                })?;
            }
        }
        Ok(TensorMap(map.opaque))
    }

    fn replace_tensor_map_address(
        &self,
        map: &mut TensorMap,
        address: Raw,
    ) -> Result<(), BackendError> {
        let mut raw = sys::CUtensorMap { opaque: map.0 };
        // SAFETY: raw is a map cuTensorMapEncodeTiled encoded; the address is only encoded.
        check("cuTensorMapReplaceAddress", unsafe {
            sys::cuTensorMapReplaceAddress(&mut raw, address as *mut c_void)
        })?;
        map.0 = raw.opaque;
        Ok(())
    }

    unsafe fn launch(
        &self,
        function: Raw,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        stream: Raw,
        params: &mut [*mut c_void],
        programmatic: bool,
        cluster: u32,
    ) -> Result<(), BackendError> {
        self.current()?;
        let none = sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_IGNORE,
            pad: [0; 4],
            value: sys::CUlaunchAttributeValue { pad: [0; 64] },
        };
        let mut attributes = [none; 2];
        let mut count = 0;
        if programmatic {
            attributes[count].id =
                sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            attributes[count]
                .value
                .programmaticStreamSerializationAllowed = 1;
            count += 1;
        }
        if cluster > 1 {
            attributes[count].id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            attributes[count].value.clusterDim.x = cluster;
            attributes[count].value.clusterDim.y = 1;
            attributes[count].value.clusterDim.z = 1;
            count += 1;
        }
        let config = sys::CUlaunchConfig {
            gridDimX: grid[0],
            gridDimY: grid[1],
            gridDimZ: grid[2],
            blockDimX: block[0],
            blockDimY: block[1],
            blockDimZ: block[2],
            sharedMemBytes: shared_bytes,
            hStream: stream as sys::CUstream,
            attrs: attributes.as_mut_ptr(),
            numAttrs: count as u32,
        };
        // SAFETY: the caller guarantees a live function, matching params and stream; the
        // config and its attributes live across the call.
        check("cuLaunchKernelEx", unsafe {
            sys::cuLaunchKernelEx(
                &config,
                function as sys::CUfunction,
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

    fn memory_info(&self) -> Result<(u64, u64), BackendError> {
        self.current()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: valid out-pointers.
        check("cuMemGetInfo", unsafe {
            sys::cuMemGetInfo_v2(&mut free, &mut total)
        })?;
        Ok((free as u64, total as u64))
    }

    fn create_event(&self) -> Result<Raw, BackendError> {
        self.current()?;
        let mut e = std::ptr::null_mut();
        // SAFETY: valid out-pointer; default flags.
        check("cuEventCreate", unsafe { sys::cuEventCreate(&mut e, 0) })?;
        Ok(e as Raw)
    }

    unsafe fn record_event(&self, event: Raw, stream: Raw) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller passes a live event and stream.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(event as sys::CUevent, stream as sys::CUstream)
        })
    }

    unsafe fn stream_wait_event(&self, stream: Raw, event: Raw) -> Result<(), BackendError> {
        self.current()?;
        // SAFETY: the caller passes a recorded event and a live stream; default flags.
        check("cuStreamWaitEvent", unsafe {
            sys::cuStreamWaitEvent(stream as sys::CUstream, event as sys::CUevent, 0)
        })
    }

    unsafe fn elapsed_ms(&self, start: Raw, end: Raw) -> Result<f32, BackendError> {
        self.current()?;
        // SAFETY: the caller passes recorded events.
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

    unsafe fn destroy_event(&self, event: Raw) {
        // SAFETY: the caller passes a live event, unused afterwards.
        unsafe { sys::cuEventDestroy_v2(event as sys::CUevent) };
    }
}
