//! An emulated AMD GPU behind kiln's driver interface (`kiln::backend::Driver`), so that
//! kiln's own context, resolver, invokers and argument packing run unchanged on it: a launch
//! receives the same parameter pointers `hipModuleLaunchKernel` would, and packs them into
//! the kernarg segment by the kernel's metadata as the HIP runtime does. Work runs when it is
//! enqueued (streams are only names); timing and graph capture are refused.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Mutex;

use kiln::backend::{
    amd, BackendError, DeviceInfo, Driver, Raw, TensorMap, TensorMapShape, TmaElement,
};

use crate::code_object::CodeObject;
use crate::launch::{self, Dispatch, Stats};
use crate::memory::Memory;
use crate::program::{arch_of_mach, known_arch, Program};

/// Device memory of an emulated GPU unless told otherwise.
pub const DEFAULT_MEMORY_BYTES: usize = 1 << 30;
/// Wave instructions one launch may run: a kernel that never ends stops here.
pub const INSTRUCTION_LIMIT: u64 = 1 << 32;

struct State {
    memory: Memory,
    modules: HashMap<Raw, CodeObject>,
    functions: HashMap<Raw, Program>,
    next_handle: Raw,
    totals: Totals,
}

/// What an emulated GPU has run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Kernel launches.
    pub launches: u64,
    /// Workgroups, waves and wave instructions over all launches.
    pub work: Stats,
}

/// Rewrites a code object's bytes as it loads.
pub type ObjectRewrite = Box<dyn Fn(&[u8]) -> Vec<u8> + Send + Sync>;

/// An emulated AMD GPU of one architecture.
pub struct EmulatedGpu {
    info: DeviceInfo,
    arch: &'static str,
    rewrite: Option<ObjectRewrite>,
    state: Mutex<State>,
}

fn err(call: &'static str, e: impl std::fmt::Display) -> BackendError {
    BackendError::kiln(call, e.to_string())
}

impl EmulatedGpu {
    /// An emulated `arch` GPU (`gfx90a`, ...) reporting `compute_units` CUs (kiln picks its
    /// embedded target by them), with `memory_bytes` of device memory.
    pub fn new(
        arch: &str,
        compute_units: u32,
        memory_bytes: usize,
    ) -> Result<EmulatedGpu, BackendError> {
        let known = known_arch(arch).ok_or_else(|| {
            err(
                "open emulated device",
                format!("architecture {arch:?} is not one kiln-emu models"),
            )
        })?;
        Ok(EmulatedGpu {
            info: DeviceInfo {
                spec: format!("emu:{arch}"),
                name: format!("kiln-emu {arch} ({compute_units} CUs)"),
                arch: arch.to_string(),
                compute_units,
                uuid: format!("EMU-{arch}"),
                driver_version: None,
                total_memory: memory_bytes as u64,
            },
            arch: known,
            rewrite: None,
            state: Mutex::new(State {
                memory: Memory::new(memory_bytes),
                modules: HashMap::new(),
                functions: HashMap::new(),
                next_handle: 1,
                totals: Totals::default(),
            }),
        })
    }

    /// The same, rewriting every code object as it loads: tests plant faults with it (a
    /// kernarg offset the code disagrees with, a descriptor's wrong wave size) to show that
    /// a conformance run catches them.
    pub fn with_object_rewrite(mut self, rewrite: ObjectRewrite) -> EmulatedGpu {
        self.rewrite = Some(rewrite);
        self
    }

    /// What has run so far.
    pub fn totals(&self) -> Totals {
        self.lock().totals
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data; keep using it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Driver for EmulatedGpu {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    unsafe fn load_module(&self, image: &[u8]) -> Result<Raw, BackendError> {
        let rewritten = self.rewrite.as_ref().map(|r| r(image));
        let image = rewritten.as_deref().unwrap_or(image);
        let object = CodeObject::parse(image).map_err(|e| err("load module", e))?;
        let arch = arch_of_mach(object.mach);
        if arch != Some(self.arch) {
            return Err(err(
                "load module",
                format!(
                    "the object is for {}, the device is {}",
                    arch.unwrap_or("an unknown GPU"),
                    self.arch
                ),
            ));
        }
        let mut s = self.lock();
        let h = s.next_handle;
        s.next_handle += 1;
        s.modules.insert(h, object);
        Ok(h)
    }

    unsafe fn unload_module(&self, module: Raw) {
        self.lock().modules.remove(&module);
    }

    unsafe fn function(&self, module: Raw, name: &str) -> Result<Raw, BackendError> {
        let mut s = self.lock();
        let object = s
            .modules
            .get(&module)
            .ok_or_else(|| err("function", format!("module {module} is not loaded")))?;
        let program = Program::load(object, name).map_err(|e| err("function", e))?;
        let h = s.next_handle;
        s.next_handle += 1;
        s.functions.insert(h, program);
        Ok(h)
    }

    fn alloc(&self, bytes: usize) -> Result<Raw, BackendError> {
        self.lock().memory.alloc(bytes).map_err(|e| err("alloc", e))
    }

    unsafe fn free(&self, ptr: Raw) {
        let _ = self.lock().memory.free(ptr);
    }

    unsafe fn upload(&self, dst: Raw, src: &[u8]) -> Result<(), BackendError> {
        self.lock()
            .memory
            .write(dst, src)
            .map_err(|e| err("upload", e))
    }

    unsafe fn download(&self, src: Raw, dst: &mut [u8]) -> Result<(), BackendError> {
        self.lock()
            .memory
            .read(src, dst)
            .map_err(|e| err("download", e))
    }

    unsafe fn fill(&self, dst: Raw, value: u8, bytes: usize) -> Result<(), BackendError> {
        self.lock()
            .memory
            .fill(dst, value, bytes)
            .map_err(|e| err("fill", e))
    }

    unsafe fn zero_async(&self, dst: Raw, words: usize, _stream: Raw) -> Result<(), BackendError> {
        self.lock()
            .memory
            .fill(dst, 0, words.saturating_mul(4))
            .map_err(|e| err("zero", e))
    }

    unsafe fn set_max_dynamic_shared(
        &self,
        _function: Raw,
        bytes: u32,
    ) -> Result<(), BackendError> {
        amd::check_lds(bytes)
    }

    unsafe fn launch(
        &self,
        function: Raw,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        _stream: Raw,
        params: &mut [*mut c_void],
        _programmatic: bool,
        cluster: u32,
    ) -> Result<(), BackendError> {
        amd::check_no_clusters(cluster)?;
        let mut s = self.lock();
        let State {
            memory,
            functions,
            totals,
            ..
        } = &mut *s;
        let program = functions
            .get(&function)
            .ok_or_else(|| err("launch", format!("function {function} is not loaded")))?;
        // Each parameter pointer addresses its argument's value, as many bytes as the
        // metadata says the argument has (what the HIP runtime copies).
        let explicit: Vec<_> = program.meta.args.iter().filter(|a| !a.hidden()).collect();
        if explicit.len() != params.len() {
            return Err(err(
                "launch",
                format!(
                    "kernel {}: {} parameters given, it takes {}",
                    program.name,
                    params.len(),
                    explicit.len()
                ),
            ));
        }
        let values: Vec<&[u8]> = explicit
            .iter()
            .zip(params.iter())
            .map(|(a, &p)| {
                if p.is_null() {
                    Err(err(
                        "launch",
                        format!("kernel {}: a null parameter pointer", program.name),
                    ))
                } else {
                    // SAFETY: the caller guarantees each pointer addresses a value of its
                    // argument's type, whose size the metadata gives.
                    Ok(unsafe { std::slice::from_raw_parts(p as *const u8, a.size as usize) })
                }
            })
            .collect::<Result<_, _>>()?;
        let kernarg =
            launch::pack_kernargs(&program.meta, &values).map_err(|e| err("launch", e))?;
        let stats = launch::run(
            memory,
            &Dispatch {
                program,
                grid,
                block,
                dynamic_lds: shared_bytes,
                kernarg: &kernarg,
            },
            INSTRUCTION_LIMIT,
        )
        .map_err(|e| err("launch", e))?;
        totals.launches += 1;
        totals.work.workgroups += stats.workgroups;
        totals.work.waves += stats.waves;
        totals.work.instructions += stats.instructions;
        Ok(())
    }

    fn synchronize(&self) -> Result<(), BackendError> {
        Ok(())
    }

    fn memory_info(&self) -> Result<(u64, u64), BackendError> {
        let s = self.lock();
        Ok((
            (s.memory.limit() - s.memory.used()) as u64,
            s.memory.limit() as u64,
        ))
    }

    fn create_event(&self) -> Result<Raw, BackendError> {
        Err(err(
            "create_event",
            "the emulator models function, not time: nothing it runs can be timed",
        ))
    }

    unsafe fn record_event(&self, _event: Raw, _stream: Raw) -> Result<(), BackendError> {
        Err(err("record_event", "the emulator has no events"))
    }

    unsafe fn stream_wait_event(&self, _stream: Raw, _event: Raw) -> Result<(), BackendError> {
        Err(err("stream_wait_event", "the emulator has no events"))
    }

    unsafe fn elapsed_ms(&self, _start: Raw, _end: Raw) -> Result<f32, BackendError> {
        Err(err("elapsed_ms", "the emulator has no events"))
    }

    unsafe fn destroy_event(&self, _event: Raw) {}

    fn create_stream(&self) -> Result<Raw, BackendError> {
        let mut s = self.lock();
        let h = s.next_handle;
        s.next_handle += 1;
        Ok(h)
    }

    unsafe fn destroy_stream(&self, _stream: Raw) {}

    fn captures_graphs(&self) -> bool {
        false
    }

    unsafe fn begin_capture(&self, _stream: Raw) -> Result<(), BackendError> {
        Err(amd::no_graphs("begin_capture"))
    }

    unsafe fn end_capture(&self, _stream: Raw) -> Result<Raw, BackendError> {
        Err(amd::no_graphs("end_capture"))
    }

    unsafe fn launch_graph(&self, _graph: Raw, _stream: Raw) -> Result<(), BackendError> {
        Err(amd::no_graphs("launch_graph"))
    }

    unsafe fn destroy_graph(&self, _graph: Raw) {}

    fn encode_tensor_map(
        &self,
        _: TmaElement,
        _: Raw,
        _: &TensorMapShape,
    ) -> Result<TensorMap, BackendError> {
        Err(amd::no_tensor_maps())
    }

    fn replace_tensor_map_address(&self, _: &mut TensorMap, _: Raw) -> Result<(), BackendError> {
        Err(amd::no_tensor_maps())
    }
}
