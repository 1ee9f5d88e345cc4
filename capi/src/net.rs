//! Whole networks from C: one of kiln's network definitions (`kiln_net_model_name`), built on
//! a handle's device for one batch size and data type from safetensors bytes (or seeded random
//! weights), its forward pass captured once and replayed on the caller's stream.

use std::ffi::{c_char, c_void, CString};
use std::mem::ManuallyDrop;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};

use kiln::backend::Stream;
use kiln::net::{models, NetError, Network, NetworkDef, Shape, Weights};

use super::{
    arg, clear, destroy, fixed, give, guard, put, text, Failure, Shared, KILN_ERROR_BAD_PARAM,
    KILN_ERROR_BUFFER_TOO_SMALL, KILN_NAME_BYTES,
};
use crate::desc::{data_type, kiln_data_type};

/// A network built on a device: its weights, activation memory and captured forward pass.
pub struct kiln_net {
    /// Borrows the context inside `shared`; declared first, so it is dropped first.
    network: ManuallyDrop<Network<'static>>,
    _shared: Arc<Shared>,
    info: kiln_net_info,
}

impl Drop for kiln_net {
    fn drop(&mut self) {
        // SAFETY: dropped once, here, while `_shared` (which owns the context the network
        // borrows) is still alive.
        unsafe { ManuallyDrop::drop(&mut self.network) };
    }
}

/// What a network is, as `kiln_net_get_info` writes it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct kiln_net_info {
    /// `sizeof(kiln_net_info)` as this library knows it (later versions may add fields).
    pub struct_size: u32,
    /// The network's name (`resnet50`), NUL-terminated.
    pub name: [c_char; KILN_NAME_BYTES],
    /// Samples per run.
    pub batch: u32,
    /// Every tensor's `KILN_DATA_*` type.
    pub data_type: kiln_data_type,
    /// Tensors the network returns (`kiln_net_get_output`).
    pub outputs: u32,
    /// Kernel launches per forward pass (all in one captured graph).
    pub launches: u32,
    /// Zero (keeps the struct free of padding, so copies compare byte for byte).
    pub reserved: u32,
    /// Device memory for activations, bytes (input and outputs included).
    pub activation_bytes: u64,
}

/// A network's input or output tensor: NHWC, `batch x h x w x c` elements of its data type.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct kiln_net_tensor {
    /// `sizeof(kiln_net_tensor)` as this library knows it (later versions may add fields).
    pub struct_size: u32,
    /// Channels.
    pub c: u32,
    /// Height.
    pub h: u32,
    /// Width.
    pub w: u32,
    /// Bytes of the whole batch.
    pub bytes: u64,
    /// Its device address (valid while the network lives).
    pub device_ptr: *mut c_void,
}

impl From<NetError> for Failure {
    fn from(e: NetError) -> Failure {
        match e {
            NetError::Run { node, source } => {
                let f = Failure::from(source);
                Failure::new(f.status, format!("node {node}: {}", f.message))
            }
            other => Failure::new(KILN_ERROR_BAD_PARAM, other.to_string()),
        }
    }
}

/// The names of kiln's networks, NUL-terminated, made once.
fn model_names() -> &'static [CString] {
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    NAMES.get_or_init(|| {
        models::NAMES
            .iter()
            .filter_map(|n| CString::new(*n).ok())
            .collect()
    })
}

/// The name of kiln's `index`-th network definition (`"resnet50"`, `"mobilenet_v2"`,
/// `"efficientnet_b0"`, `"yolov8n"`, ...), a static string; NULL past the last.
#[unsafe(no_mangle)]
pub extern "C" fn kiln_net_model_name(index: u32) -> *const c_char {
    model_names()
        .get(index as usize)
        .map_or(std::ptr::null(), |n| n.as_ptr())
}

/// The definition `model` names, or an error listing the known ones.
fn definition(model: &str) -> Result<NetworkDef, Failure> {
    models::by_name(model).ok_or_else(|| {
        Failure::bad_param(format!(
            "model {model:?}: no such network (known: {})",
            models::NAMES.join(", ")
        ))
    })
}

/// The body of the create calls: `out` cleared, the model named, its weights from `weights`,
/// the network built.
///
/// # Safety
/// `handle` is NULL or live; `model` is NULL or a NUL-terminated string; `out` is NULL or
/// writable.
unsafe fn create(
    handle: *const super::kiln_handle,
    model: *const c_char,
    batch: u32,
    dtype: kiln_data_type,
    out: *mut *mut kiln_net,
    weights: impl FnOnce(&NetworkDef) -> Result<Weights, Failure>,
) -> super::kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        unsafe { clear(out, "out")? };
        // SAFETY: the caller's contract.
        let def = definition(unsafe { text(model, "model")? })?;
        let w = weights(&def)?;
        build(handle, &def, &w, batch, dtype, out)
    }))
}

fn build(
    handle: *const super::kiln_handle,
    def: &NetworkDef,
    weights: &Weights,
    batch: u32,
    dtype: kiln_data_type,
    out: *mut *mut kiln_net,
) -> Result<(), Failure> {
    // SAFETY: the caller's contract (handle is live).
    let shared = unsafe { arg(handle, "handle")? }.shared.clone();
    let dtype = data_type("net", dtype)?;
    let ctx = shared.context()?;
    // SAFETY: the network borrows the context owned by `shared`, which `kiln_net` keeps
    // alive (behind an Arc, so it does not move) until after the network is dropped.
    let ctx: &'static kiln::context::Context = unsafe { &*(ctx as *const _) };
    let network = Network::new(ctx, def, weights, batch, dtype)?;
    let info = kiln_net_info {
        struct_size: std::mem::size_of::<kiln_net_info>() as u32,
        name: fixed(&def.name, "network name")?,
        batch,
        data_type: match dtype {
            kiln::DataType::Fp16 => crate::desc::KILN_DATA_HALF,
            kiln::DataType::Bf16 => crate::desc::KILN_DATA_BFLOAT16,
            _ => crate::desc::KILN_DATA_FLOAT,
        },
        outputs: network.outputs() as u32,
        launches: network.launches() as u32,
        reserved: 0,
        activation_bytes: network.activation_bytes(),
    };
    let net = kiln_net {
        network: ManuallyDrop::new(network),
        _shared: shared,
        info,
    };
    // SAFETY: the caller checked `out` writable.
    unsafe { give(out, net) };
    Ok(())
}

/// Builds network `model` (`kiln_net_model_name`) on the handle's device for `batch` samples
/// of `data_type` (`KILN_DATA_HALF`, `KILN_DATA_BFLOAT16` or `KILN_DATA_FLOAT`; NHWC), with
/// the weights in `weights` (the bytes of a safetensors file, PyTorch's names and shapes;
/// batch norms are folded into the convolutions). Every convolution is resolved, the weights
/// uploaded, activation memory allocated and the forward pass captured. Errors name the node
/// and tensor (a missing or misshapen weight, a problem no solver takes).
///
/// # Safety
/// `handle` is live; `model` is a NUL-terminated string; `weights` holds `weights_bytes`
/// bytes; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_net_create(
    handle: *const super::kiln_handle,
    model: *const c_char,
    weights: *const c_void,
    weights_bytes: u64,
    batch: u32,
    data_type: kiln_data_type,
    out: *mut *mut kiln_net,
) -> super::kiln_status {
    let load = |_: &NetworkDef| {
        if weights.is_null() {
            return Err(Failure::bad_param(
                "weights is NULL (kiln_net_create_random makes seeded random weights)",
            ));
        }
        let len = usize::try_from(weights_bytes)
            .map_err(|_| Failure::bad_param("weights_bytes does not fit this machine"))?;
        // SAFETY: the caller's contract: weights holds weights_bytes bytes.
        let bytes = unsafe { std::slice::from_raw_parts(weights.cast::<u8>(), len) };
        Ok(Weights::from_safetensors(bytes)?)
    };
    // SAFETY: the caller's contract.
    unsafe { create(handle, model, batch, data_type, out, load) }
}

/// As `kiln_net_create`, with seeded random weights (He-uniform filters, batch norms near
/// identity): for demos and checks without a weights file. The same seed gives the same
/// weights.
///
/// # Safety
/// `handle` is live; `model` is a NUL-terminated string; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_net_create_random(
    handle: *const super::kiln_handle,
    model: *const c_char,
    seed: u64,
    batch: u32,
    data_type: kiln_data_type,
    out: *mut *mut kiln_net,
) -> super::kiln_status {
    // SAFETY: the caller's contract.
    unsafe {
        create(handle, model, batch, data_type, out, |def| {
            Ok(Weights::random(def, seed)?)
        })
    }
}

/// Writes what the network is.
///
/// # Safety
/// `net` is live; `info` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_net_get_info(
    net: *const kiln_net,
    info: *mut kiln_net_info,
) -> super::kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let n = unsafe { arg(net, "net")? };
        // SAFETY: the caller's contract.
        unsafe { put(info, "info", n.info) }
    }))
}

fn tensor(n: &kiln_net, buffer: &kiln::backend::DeviceBuffer, s: Shape) -> kiln_net_tensor {
    kiln_net_tensor {
        struct_size: std::mem::size_of::<kiln_net_tensor>() as u32,
        c: s.c,
        h: s.h,
        w: s.w,
        bytes: s.bytes(n.info.batch, n.network.data_type()),
        device_ptr: buffer.device_ptr() as *mut c_void,
    }
}

/// Output `index`'s buffer and description, or an error naming the index.
fn output_of(
    n: &kiln_net,
    index: u32,
) -> Result<(&kiln::backend::DeviceBuffer, kiln_net_tensor), Failure> {
    let (b, s) = n.network.output(index as usize).ok_or_else(|| {
        Failure::bad_param(format!(
            "output {index}: the network returns {} tensor(s)",
            n.info.outputs
        ))
    })?;
    Ok((b, tensor(n, b, s)))
}

/// A host copy's length: exactly `want` bytes of `what`, from a non-NULL pointer `pointer`.
fn exact(what: &str, given: u64, want: u64, null: bool, pointer: &str) -> Result<usize, Failure> {
    if given != want {
        return Err(Failure::new(
            KILN_ERROR_BUFFER_TOO_SMALL,
            format!("{what}: {given} B given, it holds {want} B"),
        ));
    }
    if null {
        return Err(Failure::bad_param(format!("{pointer} is NULL")));
    }
    usize::try_from(want).map_err(|_| Failure::bad_param(format!("{what} does not fit memory")))
}

/// Writes the input tensor: where to put the batch of images (`kiln_net_set_input`, or the
/// caller's own copy to `device_ptr`).
///
/// # Safety
/// `net` is live; `input` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_net_get_input(
    net: *const kiln_net,
    input: *mut kiln_net_tensor,
) -> super::kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let n = unsafe { arg(net, "net")? };
        let t = tensor(n, n.network.input(), n.network.input_shape());
        // SAFETY: the caller's contract.
        unsafe { put(input, "input", t) }
    }))
}

/// Writes output tensor `index` (0 .. `outputs` - 1, in the network's order).
///
/// # Safety
/// `net` is live; `output` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_net_get_output(
    net: *const kiln_net,
    index: u32,
    output: *mut kiln_net_tensor,
) -> super::kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let n = unsafe { arg(net, "net")? };
        let (_, t) = output_of(n, index)?;
        // SAFETY: the caller's contract.
        unsafe { put(output, "output", t) }
    }))
}

/// Copies a batch of images (NHWC, the network's data type, exactly the input's `bytes`) from
/// host memory to the input (synchronous).
///
/// # Safety
/// `net` is live; `src` holds `bytes` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_net_set_input(
    net: *const kiln_net,
    src: *const c_void,
    bytes: u64,
) -> super::kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let n = unsafe { arg(net, "net")? };
        let want = tensor(n, n.network.input(), n.network.input_shape()).bytes;
        let len = exact("input", bytes, want, src.is_null(), "src")?;
        // SAFETY: the caller's contract: src holds bytes (== len) bytes.
        let data = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), len) };
        n.network.input().upload(data).map_err(super::buffer_error)
    }))
}

/// Enqueues one forward pass (the captured graph) on `stream` (`CUstream` / `hipStream_t`;
/// NULL: the default stream) and returns. Runs of one network on different streams must not
/// overlap: they share its activation memory.
///
/// # Safety
/// `net` is live; `stream` is NULL or a live stream of the handle's device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_net_run(
    net: *const kiln_net,
    stream: *mut c_void,
) -> super::kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let n = unsafe { arg(net, "net")? };
        let graph = n.network.graph().ok_or_else(|| {
            Failure::new(
                super::KILN_ERROR_INTERNAL,
                "the forward pass was not captured",
            )
        })?;
        // SAFETY: the caller's contract: null or a live stream of this device.
        let stream = unsafe { Stream::from_raw(stream as u64) };
        graph.launch(&stream).map_err(|e| Failure::driver(&e))
    }))
}

/// Copies output `index` (exactly its `bytes`) to host memory, after the work enqueued
/// before it on the default stream (synchronize a non-blocking stream of your own first).
///
/// # Safety
/// `net` is live; `dst` holds `bytes` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_net_read_output(
    net: *const kiln_net,
    index: u32,
    dst: *mut c_void,
    bytes: u64,
) -> super::kiln_status {
    guard(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let n = unsafe { arg(net, "net")? };
        let (b, t) = output_of(n, index)?;
        let len = exact(
            &format!("output {index}"),
            bytes,
            t.bytes,
            dst.is_null(),
            "dst",
        )?;
        // SAFETY: the caller's contract: dst holds bytes (== len) writable bytes.
        let data = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), len) };
        b.download(data).map_err(super::buffer_error)
    }))
}

/// Destroys a network (NULL: nothing), freeing its device memory.
///
/// # Safety
/// `net` is NULL or came from `kiln_net_create*`, is not used afterwards, and no enqueued
/// run still uses it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kiln_net_destroy(net: *mut kiln_net) {
    // SAFETY: the caller's contract: NULL, or from Box::into_raw and destroyed once.
    unsafe { destroy(net) }
}
