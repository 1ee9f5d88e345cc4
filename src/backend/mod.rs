//! GPU backends in three layers, as cudarc layers its driver API:
//!
//! 1. each driver module (`cuda.rs`, `hip.rs`) binds its library, loaded at run time, and
//!    implements [`Driver`]: thin calls that return [`BackendError`] with the driver's code.
//!    Calls that take a raw handle are `unsafe fn`: their safety rests on the handle.
//! 2. [`Device`], [`DeviceBuffer`], [`Module`], [`Function`], [`Event`]: owning handles over a
//!    driver. Buffers free, modules unload and events are destroyed on drop; a function keeps
//!    its module alive. Their methods check sizes and are safe, except [`Device::launch`]
//!    (kernel arguments cannot be checked) and module loading from bytes that were not
//!    checked ([`Device::load_module`] takes a [`CheckedObject`]).
//! 3. [`BACKENDS`]: one table of (scheme, list devices, open) entries; [`open`] and
//!    [`list_devices`] go through it, so a backend registers in one place.
//!
//! A missing driver library or device is an error, never a panic.

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "hip")]
pub mod hip;

use core::fmt;
use std::ffi::c_void;
use std::sync::Arc;

use crate::codeobject::CheckedObject;

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
    /// The newest CUDA version the driver supports (`cuDriverGetVersion`: 13.0 is `(13, 0)`);
    /// `None` for HIP.
    pub driver_version: Option<(u32, u32)>,
    /// Device memory, bytes (0 when the runtime does not say).
    pub total_memory: u64,
}

/// A backend error: which call failed, the driver's code and its words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendError {
    /// The driver call or step.
    pub call: &'static str,
    /// The driver's numeric result (`CUresult`, `hipError_t`); 0 when the error is kiln's own
    /// (no library, bad device spec).
    pub code: i32,
    /// The driver's error name or message.
    pub message: String,
}

impl BackendError {
    /// An error kiln reports itself (no driver code).
    pub fn kiln(call: &'static str, message: impl Into<String>) -> BackendError {
        BackendError {
            call,
            code: 0,
            message: message.into(),
        }
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.call, self.message)
    }
}

impl std::error::Error for BackendError {}

/// A raw driver handle or device address (`CUmodule`, `hipFunction_t`, `CUdeviceptr`, ...).
pub type Raw = u64;

pub use kiln_format::abi::TensorMap;

/// Element types TMA tensor maps are encoded for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmaElement {
    /// IEEE half.
    F16,
    /// bfloat16.
    Bf16,
    /// IEEE single (TF32 kernels read its top 19 bits).
    F32,
}

/// How the loads of a tensor map address the tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmaBoxes {
    /// Boxes of these extents, innermost dimension first (each at most 256; the innermost at
    /// most 128 bytes, the swizzle span).
    Tiled([u32; 5]),
    /// im2col (an NHWC-like tensor, channels innermost): each load takes `channels` channels of
    /// `pixels` consecutive filter-window anchors, which run between the `lower` and `upper`
    /// corners (spatial dimensions, innermost first, relative to the tensor's edges) in steps
    /// of `traversal` (every dimension, innermost first: the convolution's strides).
    Im2col {
        /// Lower corner per spatial dimension (minus the padding).
        lower: [i32; 3],
        /// Upper corner per spatial dimension (padding minus the filter's dilated extent).
        upper: [i32; 3],
        /// Channels per pixel and load.
        channels: u32,
        /// Pixels per load.
        pixels: u32,
        /// Traversal stride per dimension.
        traversal: [u32; 5],
    },
}

/// A packed tensor as TMA loads it: zeros past the edges, boxes swizzled or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMapShape {
    /// Dimensions used, 2 to 5 (3 to 5 for im2col).
    pub rank: usize,
    /// Extents, innermost first (the row pitch must be a multiple of 16 bytes).
    pub dims: [u64; 5],
    /// How loads address it.
    pub boxes: TmaBoxes,
    /// Swizzled across the box's innermost row, which must then be 32, 64 or 128 bytes (the
    /// layouts wgmma's swizzled operands name); `false`: boxes land row-major as they are.
    pub swizzle: bool,
}

/// What kiln needs from a GPU API. Implemented once per driver; used through [`Device`].
pub trait Driver: Send + Sync {
    /// The device.
    fn info(&self) -> &DeviceInfo;
    /// Loads a code object.
    ///
    /// # Safety
    /// `image` must be a complete code object whose headers lie within the slice (the driver
    /// reads it by its own headers; HIP takes no length).
    unsafe fn load_module(&self, image: &[u8]) -> Result<Raw, BackendError>;
    /// Unloads a module.
    ///
    /// # Safety
    /// `module` came from [`Driver::load_module`] of this driver and is not used afterwards.
    unsafe fn unload_module(&self, module: Raw);
    /// Looks up an entry point.
    ///
    /// # Safety
    /// `module` came from [`Driver::load_module`] of this driver and is still loaded.
    unsafe fn function(&self, module: Raw, name: &str) -> Result<Raw, BackendError>;
    /// Allocates `bytes` of device memory (at least 1).
    fn alloc(&self, bytes: usize) -> Result<Raw, BackendError>;
    /// Frees device memory.
    ///
    /// # Safety
    /// `ptr` came from [`Driver::alloc`] of this driver and is not used afterwards.
    unsafe fn free(&self, ptr: Raw);
    /// Host to device copy.
    ///
    /// # Safety
    /// `dst` addresses at least `src.len()` bytes of this driver's device memory.
    unsafe fn upload(&self, dst: Raw, src: &[u8]) -> Result<(), BackendError>;
    /// Device to host copy.
    ///
    /// # Safety
    /// `src` addresses at least `dst.len()` bytes of this driver's device memory.
    unsafe fn download(&self, src: Raw, dst: &mut [u8]) -> Result<(), BackendError>;
    /// Sets `bytes` bytes to `value`.
    ///
    /// # Safety
    /// `dst` addresses at least `bytes` bytes of this driver's device memory.
    unsafe fn fill(&self, dst: Raw, value: u8, bytes: usize) -> Result<(), BackendError>;
    /// Zeroes `words` 32-bit words at `dst`, ordered on `stream` (serial split-K semaphores).
    ///
    /// # Safety
    /// `dst` addresses at least `4 * words` bytes of this driver's device memory; `stream` is
    /// null or a live stream of this device.
    unsafe fn zero_async(&self, dst: Raw, words: usize, stream: Raw) -> Result<(), BackendError>;
    /// Lets `function` use up to `bytes` of dynamic shared memory (above the 48 KiB default).
    ///
    /// # Safety
    /// `function` is a live function of this driver.
    unsafe fn set_max_dynamic_shared(&self, function: Raw, bytes: u32) -> Result<(), BackendError>;
    /// Launches `function` with parameters given as pointers to each argument's value; with
    /// `programmatic` (CUDA sm_90+; other drivers ignore it), with programmatic dependent
    /// launch: the kernel may be scheduled before the previous kernel in the stream finishes;
    /// with `cluster` > 1 (CUDA sm_90+; other drivers refuse), as thread-block clusters of
    /// that many blocks along x.
    ///
    /// # Safety
    /// `function` is a live function of this driver; `params` match its parameter list in
    /// number, order and type; every pointer argument addresses memory the kernel may access
    /// as far as it will; `stream` is null or a live stream of this device; with
    /// `programmatic`, the kernel waits for its predecessor (`griddepcontrol.wait`) before it
    /// touches memory.
    #[allow(clippy::too_many_arguments)]
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
    ) -> Result<(), BackendError>;
    /// Waits for all work on the device.
    fn synchronize(&self) -> Result<(), BackendError>;
    /// Free and total device memory, bytes.
    fn memory_info(&self) -> Result<(u64, u64), BackendError>;
    /// Creates a timing event.
    fn create_event(&self) -> Result<Raw, BackendError>;
    /// Records an event on a stream.
    ///
    /// # Safety
    /// `event` came from [`Driver::create_event`]; `stream` is null or a live stream.
    unsafe fn record_event(&self, event: Raw, stream: Raw) -> Result<(), BackendError>;
    /// Makes the work enqueued on `stream` after this call wait until `event`'s recorded
    /// point is reached (in a capture: a dependency between the streams' graph nodes).
    ///
    /// # Safety
    /// `event` came from [`Driver::create_event`] and was recorded; `stream` is null or a
    /// live stream.
    unsafe fn stream_wait_event(&self, stream: Raw, event: Raw) -> Result<(), BackendError>;
    /// Milliseconds between two recorded events (waits for the second).
    ///
    /// # Safety
    /// Both events came from [`Driver::create_event`] and were recorded.
    unsafe fn elapsed_ms(&self, start: Raw, end: Raw) -> Result<f32, BackendError>;
    /// Destroys an event.
    ///
    /// # Safety
    /// `event` came from [`Driver::create_event`] and is not used afterwards.
    unsafe fn destroy_event(&self, event: Raw);
    /// Creates a stream that does not synchronize with the default stream.
    fn create_stream(&self) -> Result<Raw, BackendError>;
    /// Destroys a stream.
    ///
    /// # Safety
    /// `stream` came from [`Driver::create_stream`] and is not used afterwards.
    unsafe fn destroy_stream(&self, stream: Raw);
    /// Whether [`Driver::begin_capture`] can work: false where it refuses every capture (kiln's
    /// AMD drivers), so that callers launch back to back instead.
    fn captures_graphs(&self) -> bool {
        true
    }
    /// Starts capturing the work enqueued on `stream` (this thread's) into a graph.
    ///
    /// # Safety
    /// `stream` came from [`Driver::create_stream`].
    unsafe fn begin_capture(&self, stream: Raw) -> Result<(), BackendError>;
    /// Ends the capture and returns an executable graph of the work.
    ///
    /// # Safety
    /// A capture was begun on `stream`.
    unsafe fn end_capture(&self, stream: Raw) -> Result<Raw, BackendError>;
    /// Replays an executable graph on `stream`.
    ///
    /// # Safety
    /// `graph` came from [`Driver::end_capture`]; `stream` is null or a live stream.
    unsafe fn launch_graph(&self, graph: Raw, stream: Raw) -> Result<(), BackendError>;
    /// Destroys an executable graph.
    ///
    /// # Safety
    /// `graph` came from [`Driver::end_capture`] and is not used afterwards.
    unsafe fn destroy_graph(&self, graph: Raw);
    /// Encodes a TMA tensor map of `element`s at `address` (CUDA on sm_90+; other drivers
    /// refuse). Host-only: nothing is read from the address.
    fn encode_tensor_map(
        &self,
        element: TmaElement,
        address: Raw,
        shape: &TensorMapShape,
    ) -> Result<TensorMap, BackendError>;
    /// Points an encoded tensor map at another address of the same shape (host-only).
    fn replace_tensor_map_address(
        &self,
        map: &mut TensorMap,
        address: Raw,
    ) -> Result<(), BackendError>;
}

/// What every AMD driver refuses alike (the HIP backend and an emulated GPU): AMD GPUs have
/// no thread-block clusters and no TMA tensor maps, give a workgroup at most 64 KiB of LDS,
/// and kiln captures no graphs on them.
pub mod amd {
    use super::BackendError;

    /// LDS one AMD workgroup may have, bytes (no opt-in above it exists).
    pub const MAX_LDS_BYTES: u32 = 65_536;

    /// `Ok` for `bytes` of dynamic LDS within [`MAX_LDS_BYTES`].
    pub fn check_lds(bytes: u32) -> Result<(), BackendError> {
        if bytes <= MAX_LDS_BYTES {
            Ok(())
        } else {
            Err(BackendError::kiln(
                "set_max_dynamic_shared",
                format!("{bytes} B of LDS: AMD workgroups have at most {MAX_LDS_BYTES}"),
            ))
        }
    }

    /// `Ok` for a launch of single blocks (`cluster` <= 1).
    pub fn check_no_clusters(cluster: u32) -> Result<(), BackendError> {
        if cluster > 1 {
            Err(BackendError::kiln(
                "launch",
                "thread-block clusters exist on NVIDIA sm_90+ only",
            ))
        } else {
            Ok(())
        }
    }

    /// The refusal of a graph-capture call.
    pub fn no_graphs(call: &'static str) -> BackendError {
        BackendError::kiln(call, "graph capture is not implemented for HIP")
    }

    /// The refusal of a tensor-map call.
    pub fn no_tensor_maps() -> BackendError {
        BackendError::kiln(
            "encoding a tensor map",
            "TMA tensor maps exist on NVIDIA sm_90+ only",
        )
    }
}

/// An open device: a shared handle to its driver. Cheap to clone.
#[derive(Clone)]
pub struct Device {
    driver: Arc<dyn Driver>,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device").field("info", self.info()).finish()
    }
}

impl Device {
    /// Wraps a driver.
    pub fn new(driver: Arc<dyn Driver>) -> Device {
        Device { driver }
    }

    /// The device.
    pub fn info(&self) -> &DeviceInfo {
        self.driver.info()
    }

    /// Whether `other` is this same open device.
    pub fn same_as(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.driver, &other.driver)
    }

    /// Loads a code object that passed the code-object checks for this device.
    pub fn load_module(&self, object: CheckedObject<'_>) -> Result<Arc<Module>, BackendError> {
        if object.device_arch() != self.info().arch {
            return Err(BackendError::kiln(
                "load module",
                format!(
                    "the object was checked for {}, the device is {}",
                    object.device_arch(),
                    self.info().arch
                ),
            ));
        }
        // SAFETY: a CheckedObject's ELF headers, sections and segments lie within its bytes.
        let raw = unsafe { self.driver.load_module(object.bytes()) }?;
        Ok(Arc::new(Module {
            raw,
            device: self.clone(),
        }))
    }

    /// Allocates `bytes` of device memory, freed when the buffer is dropped.
    pub fn alloc(&self, bytes: u64) -> Result<DeviceBuffer, BackendError> {
        let len = usize::try_from(bytes).map_err(|_| {
            BackendError::kiln("alloc", format!("{bytes} B does not fit this host's usize"))
        })?;
        let raw = self.driver.alloc(len.max(1))?;
        Ok(DeviceBuffer {
            raw,
            bytes,
            device: self.clone(),
            owned: true,
        })
    }

    /// A view of `bytes` of device memory at `ptr` that the caller allocated and frees (kiln
    /// never frees it): how a caller's buffers reach [`crate::context::Context::run`].
    ///
    /// # Safety
    /// `ptr` addresses at least `bytes` bytes of this device's memory, alive while the view is
    /// used.
    pub unsafe fn borrow_memory(&self, ptr: Raw, bytes: u64) -> DeviceBuffer {
        DeviceBuffer {
            raw: ptr,
            bytes,
            device: self.clone(),
            owned: false,
        }
    }

    /// Launches `function`, with programmatic dependent launch when `programmatic` is set and
    /// as clusters of `cluster` blocks when it is > 1 ([`Driver::launch`]).
    ///
    /// # Safety
    /// As [`Driver::launch`]: `params` match the kernel's parameters, every buffer the kernel
    /// reaches is large enough for what it will access, and with `programmatic` the kernel
    /// waits on its predecessor (`griddepcontrol.wait`) before it touches memory.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn launch(
        &self,
        programmatic: bool,
        function: &Function,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        stream: &Stream,
        params: &mut [*mut c_void],
        cluster: u32,
    ) -> Result<(), BackendError> {
        if !function.module.device.same_as(self) {
            return Err(BackendError::kiln(
                "launch",
                "the function belongs to another device",
            ));
        }
        // SAFETY: the function is alive (it holds its module); the rest is the caller's.
        unsafe {
            self.driver.launch(
                function.raw,
                grid,
                block,
                shared_bytes,
                stream.0,
                params,
                programmatic,
                cluster,
            )
        }
    }

    /// Encodes a TMA tensor map (CUDA sm_90+ only).
    pub fn encode_tensor_map(
        &self,
        element: TmaElement,
        address: Raw,
        shape: &TensorMapShape,
    ) -> Result<TensorMap, BackendError> {
        self.driver.encode_tensor_map(element, address, shape)
    }

    /// Points `map` at `address` (a launch's buffer).
    pub fn replace_tensor_map_address(
        &self,
        map: &mut TensorMap,
        address: Raw,
    ) -> Result<(), BackendError> {
        self.driver.replace_tensor_map_address(map, address)
    }

    /// Zeroes `words` 32-bit words of `buffer` from byte `offset` (a multiple of 4), ordered on
    /// `stream`.
    pub fn zero_async(
        &self,
        buffer: &DeviceBuffer,
        offset: u64,
        words: u64,
        stream: &Stream,
    ) -> Result<(), BackendError> {
        if !buffer.device.same_as(self) {
            return Err(BackendError::kiln(
                "zero_async",
                "the buffer belongs to another device",
            ));
        }
        if !offset.is_multiple_of(4) {
            return Err(BackendError::kiln(
                "zero_async",
                format!("offset {offset} is not a multiple of 4"),
            ));
        }
        let end = words.saturating_mul(4).saturating_add(offset);
        buffer.check_len("zero_async", usize::try_from(end).unwrap_or(usize::MAX))?;
        // SAFETY: the buffer is alive and holds offset + 4 * words bytes (checked above); the
        // stream is the caller's live stream (Stream's contract).
        unsafe {
            self.driver
                .zero_async(buffer.raw + offset, words as usize, stream.0)
        }
    }

    /// Waits for all work on the device.
    pub fn synchronize(&self) -> Result<(), BackendError> {
        self.driver.synchronize()
    }

    /// Free and total device memory, bytes.
    pub fn memory_info(&self) -> Result<(u64, u64), BackendError> {
        self.driver.memory_info()
    }

    /// A stream of this device, destroyed on drop.
    pub fn create_stream(&self) -> Result<OwnedStream, BackendError> {
        let raw = self.driver.create_stream()?;
        Ok(OwnedStream {
            stream: Stream(raw),
            device: self.clone(),
        })
    }

    /// Whether this device captures graphs ([`Device::capture`]); AMD devices do not, and
    /// their work launches back to back.
    pub fn captures_graphs(&self) -> bool {
        self.driver.captures_graphs()
    }

    /// Captures the work `enqueue` puts on `stream` into a graph that can be replayed (a
    /// CUDA graph: one launch for many kernels, no host work between them). Nothing runs
    /// during the capture.
    pub fn capture<E: From<BackendError>>(
        &self,
        stream: &OwnedStream,
        enqueue: impl FnOnce(&Stream) -> Result<(), E>,
    ) -> Result<Graph, E> {
        if !stream.device.same_as(self) {
            return Err(
                BackendError::kiln("capture", "the stream belongs to another device").into(),
            );
        }
        // SAFETY: the stream is this device's own (created by create_stream, alive).
        unsafe { self.driver.begin_capture(stream.stream.0) }?;
        let enqueued = enqueue(&stream.stream);
        // The capture must end even when enqueueing failed, or the stream stays unusable.
        // SAFETY: a capture was begun on this stream above.
        let ended = unsafe { self.driver.end_capture(stream.stream.0) };
        enqueued?;
        Ok(Graph {
            raw: ended?,
            device: self.clone(),
        })
    }

    /// Records an event on `stream`: to time work, or for another stream to wait on
    /// ([`Event::wait_on`]).
    pub fn record_event(&self, stream: &Stream) -> Result<Event, BackendError> {
        let raw = self.driver.create_event()?;
        let event = Event {
            raw,
            device: self.clone(),
        };
        // SAFETY: the event was just created; the stream is null or live (Stream's contract).
        unsafe { self.driver.record_event(raw, stream.0) }?;
        Ok(event)
    }
}

/// A loaded code object; unloaded when the last [`Function`] of it and the module are dropped.
pub struct Module {
    raw: Raw,
    device: Device,
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Module({:#x} on {})", self.raw, self.device.info().spec)
    }
}

impl Module {
    /// An entry point of this module; it keeps the module loaded.
    pub fn function(self: &Arc<Module>, name: &str) -> Result<Function, BackendError> {
        // SAFETY: the module is loaded while self lives.
        let raw = unsafe { self.device.driver.function(self.raw, name) }?;
        Ok(Function {
            raw,
            module: self.clone(),
        })
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: the raw module came from this driver; no Function outlives its Arc<Module>.
        unsafe { self.device.driver.unload_module(self.raw) }
    }
}

/// A kernel entry point, holding its module.
#[derive(Clone)]
pub struct Function {
    raw: Raw,
    module: Arc<Module>,
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Function({:#x} in {:?})", self.raw, self.module)
    }
}

impl Function {
    /// Lets the function use up to `bytes` of dynamic shared memory per block (launches
    /// above 48 KiB need this first).
    pub fn set_max_dynamic_shared(&self, bytes: u32) -> Result<(), BackendError> {
        // SAFETY: the function is alive (it holds its module).
        unsafe {
            self.module
                .device
                .driver
                .set_max_dynamic_shared(self.raw, bytes)
        }
    }
}

/// Device memory, freed on drop (unless borrowed from the caller: [`Device::borrow_memory`]).
pub struct DeviceBuffer {
    raw: Raw,
    bytes: u64,
    device: Device,
    owned: bool,
}

impl fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceBuffer({:#x}, {} B)", self.raw, self.bytes)
    }
}

impl DeviceBuffer {
    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The device address (for handing to another library, e.g. cuDNN; using it is unsafe
    /// there).
    pub fn device_ptr(&self) -> Raw {
        self.raw
    }

    /// The device it lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    fn check_len(&self, call: &'static str, len: usize) -> Result<(), BackendError> {
        if len as u64 > self.bytes {
            return Err(BackendError::kiln(
                call,
                format!("{len} B do not fit a {} B buffer", self.bytes),
            ));
        }
        Ok(())
    }

    /// Copies `src` to the start of the buffer.
    pub fn upload(&self, src: &[u8]) -> Result<(), BackendError> {
        self.check_len("upload", src.len())?;
        // SAFETY: the buffer holds at least src.len() bytes (checked).
        unsafe { self.device.driver.upload(self.raw, src) }
    }

    /// Copies the start of the buffer into `dst` (waits for the copy).
    pub fn download(&self, dst: &mut [u8]) -> Result<(), BackendError> {
        self.check_len("download", dst.len())?;
        // SAFETY: the buffer holds at least dst.len() bytes (checked).
        unsafe { self.device.driver.download(self.raw, dst) }
    }

    /// Sets every byte to `value`.
    pub fn fill(&self, value: u8) -> Result<(), BackendError> {
        // SAFETY: the whole buffer, as allocated.
        unsafe {
            self.device
                .driver
                .fill(self.raw, value, self.bytes as usize)
        }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: allocated by this driver; dropping ends every use.
            unsafe { self.device.driver.free(self.raw) }
        }
    }
}

/// A recorded timing event, destroyed on drop.
pub struct Event {
    raw: Raw,
    device: Device,
}

impl Event {
    /// Makes the work enqueued on `stream` from now on wait until this event's recorded point
    /// is reached: in a capture, the fork or join of two streams' branches.
    pub fn wait_on(&self, stream: &Stream) -> Result<(), BackendError> {
        // SAFETY: the event was created and recorded by Device::record_event; the stream is
        // null or live (Stream's contract).
        unsafe { self.device.driver.stream_wait_event(stream.0, self.raw) }
    }

    /// Milliseconds from this event to `end` (waits for `end`).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32, BackendError> {
        if !self.device.same_as(&end.device) {
            return Err(BackendError::kiln(
                "event elapsed time",
                "the events belong to different devices",
            ));
        }
        // SAFETY: both events were created and recorded by Device::record_event.
        unsafe { self.device.driver.elapsed_ms(self.raw, end.raw) }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by this driver; dropping ends every use.
        unsafe { self.device.driver.destroy_event(self.raw) }
    }
}

/// A stream to launch on: the device's default (null) stream, or one the caller owns.
#[derive(Debug, Default)]
pub struct Stream(Raw);

impl Stream {
    /// A caller's stream (`CUstream` / `hipStream_t`).
    ///
    /// # Safety
    /// `raw` is a live stream of the device it will be used with, for as long as it is used.
    pub unsafe fn from_raw(raw: Raw) -> Stream {
        Stream(raw)
    }

    /// The raw handle (`CUstream` / `hipStream_t`; 0 for the default stream), for handing to
    /// another library on the same device (cuDNN, a caller's runtime).
    pub fn raw(&self) -> Raw {
        self.0
    }
}

/// A stream kiln created, destroyed on drop; use it as a [`Stream`] through `Deref`.
pub struct OwnedStream {
    stream: Stream,
    device: Device,
}

impl core::ops::Deref for OwnedStream {
    type Target = Stream;
    fn deref(&self) -> &Stream {
        &self.stream
    }
}

impl Drop for OwnedStream {
    fn drop(&mut self) {
        // SAFETY: created by this driver; dropping ends every use.
        unsafe { self.device.driver.destroy_stream(self.stream.0) }
    }
}

/// A captured, executable graph of device work, destroyed on drop.
pub struct Graph {
    raw: Raw,
    device: Device,
}

impl Graph {
    /// Replays the graph on `stream`.
    pub fn launch(&self, stream: &Stream) -> Result<(), BackendError> {
        // SAFETY: the graph is alive; the stream is null or live (Stream's contract).
        unsafe { self.device.driver.launch_graph(self.raw, stream.0) }
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: created by this driver; dropping ends every use.
        unsafe { self.device.driver.destroy_graph(self.raw) }
    }
}

/// One backend: its device-spec scheme, how to list its devices and how to open one.
pub struct BackendEntry {
    /// The scheme of its device specs (`cuda` in `cuda:0`).
    pub scheme: &'static str,
    /// The runtime library it loaded, or why it could not.
    pub runtime: fn() -> Result<&'static str, BackendError>,
    /// Every device it sees (an error says why it sees none: no library, no device).
    pub list: fn() -> Result<Vec<DeviceInfo>, BackendError>,
    /// Opens `:<ordinal>` or `://<uuid>` (the spec after the scheme).
    pub open: fn(&str) -> Result<Device, BackendError>,
}

/// The backends compiled into this binary, in the order a spec-less [`open`] tries them.
pub static BACKENDS: &[BackendEntry] = &[
    #[cfg(feature = "cuda")]
    BackendEntry {
        scheme: "cuda",
        runtime: cuda::library,
        list: cuda::list,
        open: cuda::open,
    },
    #[cfg(feature = "hip")]
    BackendEntry {
        scheme: "hip",
        runtime: hip::library,
        list: hip::list,
        open: hip::open,
    },
];

/// Each compiled-in backend and what it found: its devices, or why none.
pub fn probe() -> Vec<(&'static str, Result<Vec<DeviceInfo>, BackendError>)> {
    BACKENDS.iter().map(|b| (b.scheme, (b.list)())).collect()
}

/// Lists every device of every compiled-in backend (none without drivers; never panics).
pub fn list_devices() -> Vec<DeviceInfo> {
    BACKENDS
        .iter()
        .flat_map(|b| (b.list)().unwrap_or_default())
        .collect()
}

/// The variable naming the device [`open`] opens when it is given no spec.
pub const DEVICE_VARIABLE: &str = "KILN_DEVICE";

/// The `call` of the error [`open`] gives for a spec that names no backend of this build.
pub const SPEC_CALL: &str = "device spec";

/// Opens a device by spec: `cuda:0`, `cuda://GPU-<uuid>`, `hip:0`, `hip://<uuid>`. With no
/// spec, `KILN_DEVICE`, else the first device found.
pub fn open(spec: Option<&str>) -> Result<Device, BackendError> {
    let env = std::env::var(DEVICE_VARIABLE)
        .ok()
        .filter(|s| !s.is_empty());
    let Some(spec) = spec.map(str::to_string).or(env) else {
        let mut why = Vec::new();
        for (scheme, found) in probe() {
            match found {
                Ok(devices) if !devices.is_empty() => return open(Some(&devices[0].spec)),
                Ok(_) => why.push(format!("{scheme}: no device")),
                Err(e) => why.push(format!("{scheme}: {}", e.message)),
            }
        }
        if why.is_empty() {
            why.push("this kiln was built with no backend (features cuda, hip)".into());
        }
        return Err(BackendError::kiln(
            "device discovery",
            format!("no GPU found ({})", why.join("; ")),
        ));
    };
    for b in BACKENDS {
        if let Some(rest) = spec.strip_prefix(b.scheme) {
            if rest.starts_with(':') {
                return (b.open)(rest);
            }
        }
    }
    let schemes: Vec<&str> = BACKENDS.iter().map(|b| b.scheme).collect();
    Err(BackendError::kiln(
        SPEC_CALL,
        format!(
            "'{}' is not <backend>:<n> or <backend>://<uuid> with a backend of this build ([{}])",
            kiln_format::text::excerpt(&spec),
            schemes.join(", ")
        ),
    ))
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
        .ok_or_else(|| {
            BackendError::kiln(
                SPEC_CALL,
                format!(
                    "'{}' after the backend name is neither :<ordinal> nor ://<uuid>",
                    kiln_format::text::excerpt(rest)
                ),
            )
        })
}

/// The ordinal a device spec's tail (`:<ordinal>` or `://<uuid>`) names among `count` devices
/// of `backend` (`cuda`, `hip`), `uuid_of` giving each device's UUID.
#[allow(dead_code)] // used by whichever backends are compiled in
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
        Selector::Ordinal(i) => Err(BackendError::kiln(
            call,
            format!(
                "{backend}:{i} does not exist ({count} {} device(s))",
                backend.to_uppercase()
            ),
        )),
        Selector::Uuid(u) => (0..count)
            .find(|&i| uuid_of(i).is_some_and(|id| id.eq_ignore_ascii_case(u)))
            .ok_or_else(|| {
                BackendError::kiln(
                    call,
                    format!(
                        "no {} device has UUID {}",
                        backend.to_uppercase(),
                        kiln_format::text::excerpt(u)
                    ),
                )
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

    #[test]
    fn every_backend_registers_once() {
        let mut schemes: Vec<&str> = BACKENDS.iter().map(|b| b.scheme).collect();
        schemes.sort();
        schemes.dedup();
        assert_eq!(schemes.len(), BACKENDS.len());
        let e = open(Some("opencl:0")).unwrap_err();
        assert!(e.message.contains("is not <backend>:<n>"), "{e}");
    }
}
