//! The run-time API: a device context picks its embedded target, resolves problems
//! ([`crate::resolve`]: never benchmarks, never compiles), prepares an invoker from the embedded
//! kdb (cached by network config, solver and perf config: MIOpen's invoker cache plus the
//! config), and runs it on device buffers whose sizes are checked before any launch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use kiln_format::abi::KernelArgs;
use kiln_format::{ConvProblem, EmbeddedTarget, TableKind};

use crate::backend::{Device, DeviceBuffer, Stream};
use crate::error::RunError;
pub use crate::invoker::Invoker;
use crate::resolve::{Plan, Variant};
use crate::select::{select_target, Selection};
use crate::solvers::{LaunchPlan, TargetCaps};

/// Time spent in each step of a cold `prepare`.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrepareTimes {
    /// kdb lookup, block decode and sha256 (first touch of the block).
    pub decompress_s: f64,
    /// ELF structure and target checks.
    pub verify_s: f64,
    /// Module load (`cuModuleLoadData` / `hipModuleLoadData`).
    pub module_load_s: f64,
    /// Invoker set-up: function lookup and, for a library kernel, its parameter builder's run
    /// and read-back.
    pub invoker_s: f64,
}

/// (network config, solver, perf config): MIOpen keys its invoker cache by the first two, as
/// its perf config per problem is fixed by the perf-db; kiln callers (find, tune, selftest) run
/// several perf configs of one solver, and each is its own kernel.
type InvokerKey = (String, &'static str, &'static str);

/// Invokers a context keeps by default (each holds a loaded module).
pub const DEFAULT_INVOKER_CAPACITY: usize = 1024;

/// The invoker cache: bounded, least recently used evicted first. An evicted invoker's module
/// unloads once no caller holds it any more.
struct InvokerCache {
    map: HashMap<InvokerKey, (Arc<Invoker>, u64)>,
    clock: u64,
    capacity: usize,
}

impl InvokerCache {
    fn get(&mut self, key: &InvokerKey) -> Option<Arc<Invoker>> {
        self.clock += 1;
        let clock = self.clock;
        self.map.get_mut(key).map(|(inv, used)| {
            *used = clock;
            inv.clone()
        })
    }

    /// Inserts `inv` unless another thread got there first; returns the cached one.
    fn insert(&mut self, key: InvokerKey, inv: Arc<Invoker>) -> Arc<Invoker> {
        if let Some(existing) = self.get(&key) {
            return existing;
        }
        if self.map.len() >= self.capacity {
            // A linear scan over at most `capacity` entries, on the cold path only.
            if let Some(oldest) = self
                .map
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
            {
                self.map.remove(&oldest);
            }
        }
        self.clock += 1;
        self.map.insert(key, (inv.clone(), self.clock));
        inv
    }
}

/// A device and the embedded target it runs.
pub struct Context {
    device: Device,
    target: &'static EmbeddedTarget,
    /// The device's limits on the target's solutions (its own arch's, when it runs a lower
    /// arch's objects).
    caps: TargetCaps,
    exact: bool,
    invokers: Mutex<InvokerCache>,
    /// What library parameter builders write into ([`crate::invoker::BUILDER_SCRATCH_BYTES`]),
    /// allocated once when the context opens.
    builder_scratch: Mutex<DeviceBuffer>,
    warmup_s: f64,
    launch_warmup_s: f64,
    /// Launch kernels that wait on their predecessor with programmatic dependent launch.
    programmatic: std::sync::atomic::AtomicBool,
    /// The standalone operators' code object of each data type, loaded on first use.
    op_modules: Mutex<Vec<(kiln_format::DataType, Arc<crate::backend::Module>)>>,
}

/// How a context opens.
#[derive(Clone, Copy, Debug)]
pub struct ContextOptions {
    /// Invokers kept loaded (at least 1).
    pub invoker_capacity: usize,
    /// Run one tiny problem end to end while opening (see [`Context::with_options`]).
    pub warm_up: bool,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            invoker_capacity: DEFAULT_INVOKER_CAPACITY,
            warm_up: true,
        }
    }
}

impl Context {
    /// Opens the device a spec names (`cuda:0`, `hip://<uuid>`; `None`: `KILN_DEVICE`, else the
    /// first GPU found) and a context on it.
    pub fn open(spec: Option<&str>) -> Result<Context, RunError> {
        Context::open_with(spec, ContextOptions::default())
    }

    /// As [`Context::open`], with `options` (see [`Context::with_options`]).
    pub fn open_with(spec: Option<&str>, options: ContextOptions) -> Result<Context, RunError> {
        Context::with_options(crate::backend::open(spec)?, options)
    }

    /// Opens a context on a device: the embedded target is chosen by arch and CU count.
    pub fn new(device: Device) -> Result<Context, RunError> {
        Context::with_invoker_capacity(device, DEFAULT_INVOKER_CAPACITY)
    }

    /// As [`Context::new`], keeping at most `capacity` invokers (at least 1) loaded.
    pub fn with_invoker_capacity(device: Device, capacity: usize) -> Result<Context, RunError> {
        Context::with_options(
            device,
            ContextOptions {
                invoker_capacity: capacity,
                ..ContextOptions::default()
            },
        )
    }

    /// Opens a context on a device with `options`.
    ///
    /// Opening decodes the target's find-db and perf-db, and (with `warm_up`) runs one tiny
    /// problem through resolve, kdb decode, module load, launch and synchronize, on a kernel
    /// that no real problem is likely to share, then unloads it. The driver and the decoder
    /// pay their first-use costs there (a context's first module load takes several times
    /// longer than the next), so the first real problem pays only for its own kernel; and a
    /// device whose embedded objects cannot load or run is refused when it opens, not at its
    /// first problem.
    pub fn with_options(device: Device, options: ContextOptions) -> Result<Context, RunError> {
        let info = device.info();
        let sel = check_device(info)?;
        let caps = TargetCaps::on_device(sel.target, &info.arch, info.compute_units);
        // Every problem reads the find-db and perf-db: they are decoded and verified while the
        // context opens (driver start-up already costs hundreds of ms), so the first problem
        // pays only for its own kernel. Code objects stay lazy: most are never used.
        let t0 = std::time::Instant::now();
        for kind in [TableKind::FindDb, TableKind::PerfDb] {
            sel.target.decode_table(kind)?;
        }
        let warmup_s = t0.elapsed().as_secs_f64();
        let scratch = device.alloc(crate::invoker::BUILDER_SCRATCH_BYTES)?;
        let mut ctx = Context {
            caps,
            device,
            target: sel.target,
            exact: sel.exact,
            invokers: Mutex::new(InvokerCache {
                map: HashMap::new(),
                clock: 0,
                capacity: options.invoker_capacity.max(1),
            }),
            builder_scratch: Mutex::new(scratch),
            warmup_s,
            launch_warmup_s: 0.0,
            programmatic: std::sync::atomic::AtomicBool::new(true),
            op_modules: Mutex::new(Vec::new()),
        };
        if options.warm_up {
            let t1 = std::time::Instant::now();
            ctx.warm_up()?;
            ctx.launch_warmup_s = t1.elapsed().as_secs_f64();
        }
        Ok(ctx)
    }

    /// The problem a context runs when it opens: one FP32 NCHW 1x1 convolution of 4x4 pixels,
    /// 4 channels in and out, which every target's own kernels run and no network layer is.
    pub fn warm_up_problem() -> Result<ConvProblem, kiln_format::ProblemError> {
        ConvProblem::new(kiln_format::ConvSpec {
            n: 1,
            c: 4,
            k: 4,
            input: [1, 4, 4],
            filter: [1, 1, 1],
            ..kiln_format::ConvSpec::default()
        })
    }

    /// Runs [`Context::warm_up_problem`] once, uncached, on zeroed buffers.
    fn warm_up(&self) -> Result<(), RunError> {
        let p =
            Context::warm_up_problem().map_err(|e| RunError::Kiln(crate::Error::BadProblem(e)))?;
        // Unlogged: the warm-up problem is in no find-db, and its ranking by the cost model is
        // no news worth a warning.
        let plan = crate::resolve::resolve_on(self.target, &self.caps, &p)?;
        let v = plan.best().variant;
        let (key_text, bytes) = self.embedded_object(&p, &v)?;
        let checked = self.checked(&v, &key_text, bytes)?;
        let inv = self.load(&p, &v, checked)?;
        let [xb, wb, yb] = p.byte_counts();
        let (x, w, y) = (
            self.device.alloc(xb)?,
            self.device.alloc(wb)?,
            self.device.alloc(yb)?,
        );
        x.fill(0)?;
        w.fill(0)?;
        let ws = match inv.workspace_bytes() {
            0 => None,
            bytes => Some(self.device.alloc(bytes)?),
        };
        self.run(&inv, &x, &w, &y, ws.as_ref(), &Stream::default())?;
        self.device.synchronize()?;
        Ok(())
    }

    /// Seconds the context spent decoding and verifying its target's find-db and perf-db when
    /// it opened.
    pub fn table_warmup_s(&self) -> f64 {
        self.warmup_s
    }

    /// Seconds the context spent on its warm-up problem when it opened (0 without one).
    pub fn launch_warmup_s(&self) -> f64 {
        self.launch_warmup_s
    }

    /// Invokers in the cache now.
    pub fn cached_invokers(&self) -> usize {
        self.cache().map.len()
    }

    /// The device.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// `cuda:0 (NVIDIA H100 80GB HBM3 sm_90, 132 SMs/CUs) -> target sm_90_132`, saying when the
    /// target is not an exact match (the log says why).
    pub fn describe(&self) -> String {
        let info = self.device.info();
        format!(
            "{} ({} {}, {} SMs/CUs) -> target {}{}",
            info.spec,
            info.name,
            info.arch,
            info.compute_units,
            self.target.basename,
            if self.exact {
                ""
            } else {
                " (inexact target: closest CU count or a lower arch; see the log)"
            }
        )
    }

    /// The device's limits on the target's solutions (the target's own, unless the device
    /// runs a lower arch's objects).
    pub fn caps(&self) -> TargetCaps {
        self.caps
    }

    /// Whether [`Context::run`] launches kernels that wait on their predecessor with
    /// programmatic dependent launch (on by default; CUDA sm_90 objects only: such a kernel may
    /// be scheduled while the previous kernel in the stream still runs, shortening the gap
    /// between consecutive layers). Off: every kernel starts after its predecessor ends.
    pub fn set_programmatic_launch(&self, on: bool) {
        self.programmatic
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// The embedded target in use.
    pub fn target(&self) -> &'static EmbeddedTarget {
        self.target
    }

    /// Whether the target's CU/SM count is the device's (else it is the closest of its arch).
    pub fn exact_target(&self) -> bool {
        self.exact
    }

    /// The ranked plan for `p` (logged: a warning when the cost model ranked it).
    pub fn find_solutions(&self, p: &ConvProblem) -> Result<Plan, RunError> {
        crate::resolve::resolve_logged_on(self.target, &self.caps, p)
    }

    /// Loads (or reuses) the invoker of `v` for `p`.
    pub fn prepare(&self, p: &ConvProblem, v: &Variant) -> Result<Arc<Invoker>, RunError> {
        self.prepare_timed(p, v).map(|(i, _)| i)
    }

    fn cache(&self) -> MutexGuard<'_, InvokerCache> {
        // A panic elsewhere while holding the lock cannot leave the map half-written (every
        // insert is one call), so a poisoned cache is still a valid cache.
        self.invokers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// As [`Context::prepare`], also reporting where a cold prepare spent its time.
    pub fn prepare_timed(
        &self,
        p: &ConvProblem,
        v: &Variant,
    ) -> Result<(Arc<Invoker>, PrepareTimes), RunError> {
        // A 3-D problem may run on a 2-D solver as the 2-D problem it folds into: the same
        // buffers, and the invoker checks them against that problem's equal sizes.
        let p = &v.solver.runs_as(p, &self.caps);
        let key = (
            p.network_config().as_str().to_string(),
            v.solver.id(),
            v.params,
        );
        if let Some(inv) = self.cache().get(&key) {
            return Ok((inv.clone(), PrepareTimes::default()));
        }
        let mut times = PrepareTimes::default();
        let t0 = std::time::Instant::now();
        let (key_text, bytes) = self.embedded_object(p, v)?;
        let t1 = std::time::Instant::now();
        let checked = self.checked(v, &key_text, bytes)?;
        let t2 = std::time::Instant::now();
        let (module, args, plan) = self.load_module(p, v, checked)?;
        let t3 = std::time::Instant::now();
        let inv = Arc::new(self.invoker(&module, p, v, args, plan)?);
        let t4 = std::time::Instant::now();
        times.decompress_s = (t1 - t0).as_secs_f64();
        times.verify_s = (t2 - t1).as_secs_f64();
        times.module_load_s = (t3 - t2).as_secs_f64();
        times.invoker_s = (t4 - t3).as_secs_f64();
        log::debug!(
            "loaded {} [{}] for {}: decompress {:.3} ms, verify {:.3} ms, module load {:.3} ms, invoker {:.3} ms",
            v.solver.id(),
            v.params,
            p.find_db_key().as_str(),
            times.decompress_s * 1e3,
            times.verify_s * 1e3,
            times.module_load_s * 1e3,
            times.invoker_s * 1e3
        );
        let inv = self.cache().insert(key, inv);
        Ok((inv, times))
    }

    /// An invoker for `v` on `p` from a code object the caller supplies (built at run time,
    /// e.g. by NVRTC, instead of taken from the embedded kdb). The object gets the same ELF
    /// and target checks; the invoker is not cached. `kiln-tools bench` compares cold starts
    /// with it.
    ///
    /// # Safety
    /// The ELF checks bound the object's headers, sections and segments, not what the driver
    /// reads inside them (symbols, notes, code): `object` must come from a compiler for this
    /// device (as embedded objects do, whose sha256 is checked), and define `v`'s kernels with
    /// kiln's argument list.
    pub unsafe fn invoker_from_object(
        &self,
        p: &ConvProblem,
        v: &Variant,
        object: &[u8],
    ) -> Result<Invoker, RunError> {
        let checked = self.checked(v, "caller-supplied object", object)?;
        self.load(&v.solver.runs_as(p, &self.caps), v, checked)
    }

    /// The embedded code object of `v` for `p`: its kdb key (`'name' 'args'`, for messages)
    /// and its bytes, decoded and digest-checked on first use.
    fn embedded_object(
        &self,
        p: &ConvProblem,
        v: &Variant,
    ) -> Result<(String, &'static [u8]), RunError> {
        let (name, args) = v
            .solver
            .entry
            .kdb_key(p.data_types()[0].name(), v.params, self.target.arch)
            .map_err(|e| RunError::Solver {
                solver: v.solver.id(),
                reason: format!("perf config '{}': {e}", v.params),
            })?;
        let key = format!("'{name}' '{args}'");
        match self.target.code_object(&name, &args)? {
            Some(object) => Ok((key, object.bytes)),
            None => Err(RunError::MissingKernel {
                target: self.target.basename,
                key,
            }),
        }
    }

    /// The ELF and target checks of `v`'s code object (`key` names it in errors) against this
    /// device.
    fn checked<'s>(
        &'s self,
        v: &Variant,
        key: &str,
        bytes: &'s [u8],
    ) -> Result<crate::codeobject::CheckedObject<'s>, RunError> {
        crate::codeobject::check_for_device(bytes, &self.device.info().arch).map_err(|source| {
            RunError::CodeObject {
                solver: v.solver.id(),
                key: key.to_string(),
                source,
            }
        })
    }

    /// Checks that `v` applies to `p` here, loads the checked object and builds the invoker.
    fn load(
        &self,
        p: &ConvProblem,
        v: &Variant,
        object: crate::codeobject::CheckedObject<'_>,
    ) -> Result<Invoker, RunError> {
        let (module, args, plan) = self.load_module(p, v, object)?;
        self.invoker(&module, p, v, args, plan)
    }

    /// Checks that `v` applies to `p` here and loads the checked object; returns the module
    /// with the kernels' arguments and launch plan.
    fn load_module(
        &self,
        p: &ConvProblem,
        v: &Variant,
        object: crate::codeobject::CheckedObject<'_>,
    ) -> Result<(Arc<crate::backend::Module>, KernelArgs, LaunchPlan), RunError> {
        let not_applicable = |reason: &str| RunError::Solver {
            solver: v.solver.id(),
            reason: format!(
                "[{}] does not apply to {}: {reason}",
                v.params,
                p.find_db_key()
            ),
        };
        let plan = v
            .solver
            .plan(p, &self.caps, v.params)
            .map_err(not_applicable)?;
        let args = KernelArgs::of(p).ok_or_else(|| not_applicable("sizes exceed i32"))?;
        Ok((self.device.load_module(object)?, args, plan))
    }

    /// The invoker of `v` on `p` from its loaded module (a library builder runs here).
    fn invoker(
        &self,
        module: &Arc<crate::backend::Module>,
        p: &ConvProblem,
        v: &Variant,
        args: KernelArgs,
        plan: LaunchPlan,
    ) -> Result<Invoker, RunError> {
        let scratch = self
            .builder_scratch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Only objects built for sm_90+ hold the wait (`griddepcontrol`).
        let programmatic = v.solver.waits_on_predecessor() && self.caps.code_at_least(9, 0);
        let tma = v
            .solver
            .tma_arguments(p, &self.caps, v.params)
            .map_err(|reason| RunError::Solver {
                solver: v.solver.id(),
                reason: format!("[{}] on {}: {reason}", v.params, p.find_db_key()),
            })?;
        let mut invoker = Invoker::new(&self.device, &scratch, module, p, v, args, plan, tma)?;
        invoker.programmatic = programmatic;
        Ok(invoker)
    }

    /// Runs an invoker on `x`, `w`, `y` (and `workspace`, when its plan needs one) on
    /// `stream`. Every buffer must be on this context's device and large enough for the
    /// problem; both are checked before anything is launched. A problem whose epilogue needs
    /// tensors (scale, bias, residual) runs with [`Context::run_fused`].
    pub fn run(
        &self,
        inv: &Invoker,
        x: &DeviceBuffer,
        w: &DeviceBuffer,
        y: &DeviceBuffer,
        workspace: Option<&DeviceBuffer>,
        stream: &Stream,
    ) -> Result<(), RunError> {
        let args = EpilogueArgs::defaults(&inv.problem);
        self.run_fused(inv, x, w, y, workspace, stream, &args)
    }

    /// [`Context::run`] with the epilogue's values: the tensors the problem's fusion names
    /// (and no others), the factors, the activation's parameter and y's (and z's) first
    /// channel in the wider tensor a channel slice belongs to. All are checked against the
    /// problem before anything is launched.
    #[allow(clippy::too_many_arguments)]
    pub fn run_fused(
        &self,
        inv: &Invoker,
        x: &DeviceBuffer,
        w: &DeviceBuffer,
        y: &DeviceBuffer,
        workspace: Option<&DeviceBuffer>,
        stream: &Stream,
        epilogue: &EpilogueArgs<'_>,
    ) -> Result<(), RunError> {
        let programmatic = self.programmatic.load(std::sync::atomic::Ordering::Relaxed);
        self.run_fused_launching(inv, x, w, y, workspace, stream, epilogue, programmatic)
    }

    /// [`Context::run_fused`] with programmatic dependent launch on or off for this launch,
    /// whatever the context's setting.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_fused_launching(
        &self,
        inv: &Invoker,
        x: &DeviceBuffer,
        w: &DeviceBuffer,
        y: &DeviceBuffer,
        workspace: Option<&DeviceBuffer>,
        stream: &Stream,
        epilogue: &EpilogueArgs<'_>,
        programmatic: bool,
    ) -> Result<(), RunError> {
        let p = &inv.problem;
        let bytes = p.byte_counts();
        let pool_bytes = inv.pool_partials.map_or(0, |l| l.bytes(p.n(), p.k()));
        let (ep, y_offset) = epilogue.checked(p, &self.device, pool_bytes)?;
        let y_bytes = (p.y_extent() + y_offset) * p.data_types()[2].size_bytes() as u64;
        for (which, buf, needed) in [("x", x, bytes[0]), ("w", w, bytes[1]), ("y", y, y_bytes)] {
            check_buffer(&self.device, which, buf, needed)?;
        }
        let ws_given = workspace.map_or(0, |b| b.bytes());
        if inv.workspace_bytes > ws_given {
            return Err(RunError::BufferTooSmall {
                which: "workspace",
                needed: inv.workspace_bytes,
                given: ws_given,
            });
        }
        if workspace.is_some_and(|b| !b.device().same_as(&self.device)) {
            return Err(RunError::ForeignBuffer { which: "workspace" });
        }
        let element = p.data_types()[2].size_bytes() as u64;
        inv.launch(
            &self.device,
            x,
            w,
            y.device_ptr() + y_offset * element,
            &ep,
            workspace,
            stream,
            programmatic,
        )
    }
}

impl Context {
    /// An invoker for a standalone operator: the problem validated, its data type's code object
    /// (`ops.cpp`, embedded once per type) checked and loaded on first use.
    pub fn prepare_op(
        &self,
        op: &crate::ops::OpProblem,
    ) -> Result<crate::ops::OpInvoker, RunError> {
        op.validate()?;
        let module = self.op_module(op.data_type)?;
        let functions = op
            .functions()
            .iter()
            .map(|f| module.function(f))
            .collect::<Result<_, _>>()?;
        let cluster = op.cluster(self.caps.max_cluster);
        Ok(crate::ops::OpInvoker {
            op: *op,
            functions,
            args: op.args_in_clusters(cluster),
            cluster,
        })
    }

    /// The operators' module for `dtype`, loaded once.
    fn op_module(
        &self,
        dtype: kiln_format::DataType,
    ) -> Result<Arc<crate::backend::Module>, RunError> {
        let mut modules = self
            .op_modules
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, m)) = modules.iter().find(|(d, _)| *d == dtype) {
            return Ok(m.clone());
        }
        let (name, args) = kiln_format::manifest::kdb_key(
            crate::ops::SOURCE,
            "",
            dtype.name(),
            "",
            self.target.arch,
        )
        .map_err(|e| RunError::Solver {
            solver: "operators",
            reason: e.to_string(),
        })?;
        let key = format!("'{name}' '{args}'");
        let bytes = match self.target.code_object(&name, &args)? {
            Some(object) => object.bytes,
            None => {
                return Err(RunError::MissingKernel {
                    target: self.target.basename,
                    key,
                })
            }
        };
        let checked = crate::codeobject::check_for_device(bytes, &self.device.info().arch)
            .map_err(|source| RunError::CodeObject {
                solver: "operators",
                key,
                source,
            })?;
        let module = self.device.load_module(checked)?;
        modules.push((dtype, module.clone()));
        Ok(module)
    }

    /// Runs an operator: `a` its input, `b` the second input of an elementwise add or
    /// multiply (else `None`), `y` the output (`offsets` the first channels of `a` and `y`
    /// when they are channel slices of wider tensors), `workspace` at least [`crate::ops::OpProblem::workspace_bytes`] (a
    /// global pool's partial sums; else `None`), on `stream`. Buffers are checked against the
    /// problem (present, large enough, on this device) before anything is launched.
    #[allow(clippy::too_many_arguments)]
    pub fn run_op(
        &self,
        inv: &crate::ops::OpInvoker,
        a: &DeviceBuffer,
        b: Option<&DeviceBuffer>,
        y: &DeviceBuffer,
        offsets: crate::ops::ChannelOffsets,
        workspace: Option<&DeviceBuffer>,
        stream: &Stream,
    ) -> Result<(), RunError> {
        let programmatic = self.programmatic.load(std::sync::atomic::Ordering::Relaxed);
        self.run_op_launching(inv, a, b, y, offsets, workspace, stream, programmatic)
    }

    /// [`Context::run_op`] with programmatic dependent launch on or off for this launch (the
    /// operators wait on their predecessor in their sm_90+ objects), whatever
    /// [`Context::set_programmatic_launch`] says.
    #[allow(clippy::too_many_arguments)]
    pub fn run_op_launching(
        &self,
        inv: &crate::ops::OpInvoker,
        a: &DeviceBuffer,
        b: Option<&DeviceBuffer>,
        y: &DeviceBuffer,
        offsets: crate::ops::ChannelOffsets,
        workspace: Option<&DeviceBuffer>,
        stream: &Stream,
        programmatic: bool,
    ) -> Result<(), RunError> {
        // Only objects built for sm_90+ hold the wait (`griddepcontrol`).
        let programmatic = programmatic && self.caps.code_at_least(9, 0);
        let op = &inv.op;
        let fail = |reason: String| {
            Err(RunError::Operator(crate::ops::OpError {
                op: op.describe(),
                reason,
            }))
        };
        let element = op.data_type.size_bytes() as u64;
        let slice = |name: &str, offset: u32, ld: u32| {
            let ld = if ld == 0 { op.c } else { ld };
            if u64::from(offset) + u64::from(op.c) > u64::from(ld) {
                return Err(RunError::Operator(crate::ops::OpError {
                    op: op.describe(),
                    reason: format!(
                        "{name}'s channel offset {offset} + c = {} passes its stride {name}_ld = {ld}",
                        op.c
                    ),
                }));
            }
            Ok(u64::from(offset) * element)
        };
        let a_offset = slice("a", offsets.a, op.a_ld)?;
        let y_offset = slice("y", offsets.y, op.y_ld)?;
        check_buffer(&self.device, "a", a, op.a_bytes() + a_offset)?;
        check_buffer(&self.device, "y", y, op.y_elements() * element + y_offset)?;
        let b_needed = op.b_bytes();
        let bp = match (b, b_needed) {
            (Some(b), n) if n > 0 => {
                check_buffer(&self.device, "b", b, n)?;
                b.device_ptr()
            }
            (None, 0) => 0,
            (Some(_), _) => return fail("takes no second input b".into()),
            (None, _) => return fail("needs its second input b".into()),
        };
        let ws_needed = op.workspace_bytes();
        let wp = match workspace {
            Some(w) if ws_needed > 0 => {
                check_buffer(&self.device, "workspace", w, ws_needed)?;
                w.device_ptr()
            }
            _ if ws_needed == 0 => 0,
            _ => {
                return Err(RunError::BufferTooSmall {
                    which: "workspace",
                    needed: ws_needed,
                    given: 0,
                })
            }
        };
        let (ap, yp) = (a.device_ptr() + a_offset, y.device_ptr() + y_offset);
        // A global pool: partial sums from a into the workspace, then the workspace into y
        // (over one pixel range, the first kernel stores y: its b is then unused).
        let launches: [(u64, u64, u64, u32); 2] = if inv.functions.len() == 2 {
            let finish = (u64::from(op.n) * u64::from(op.c))
                .div_ceil(u64::from(crate::ops::BLOCK_THREADS))
                .clamp(1, 1 << 16) as u32;
            [(ap, wp, 0, op.blocks()), (wp, 0, yp, finish)]
        } else {
            [
                (ap, bp, yp, op.blocks_in_clusters(inv.cluster)),
                (0, 0, 0, 0),
            ]
        };
        for (function, &(mut a0, mut b0, mut y0, blocks)) in inv.functions.iter().zip(&launches) {
            let mut args = inv.args;
            args.grid_threads = (blocks * crate::ops::BLOCK_THREADS) as i32;
            // 16-byte accesses need channel offsets that keep the rows 16-byte aligned.
            if !(offsets.a.is_multiple_of(8) && offsets.y.is_multiple_of(8)) {
                args.vec = 1;
            }
            let mut params: [*mut core::ffi::c_void; 4] = [
                (&mut a0 as *mut u64).cast(),
                (&mut b0 as *mut u64).cast(),
                (&mut y0 as *mut u64).cast(),
                (&mut args as *mut kiln_format::abi::OpArgs).cast(),
            ];
            // SAFETY: the operators take (a, b, y, KilnOpArgs), mirrored by abi::OpArgs
            // (checked against ops.cpp); the problem is validated, so its indices fit the
            // kernels' 32-bit types, and the buffers (workspace included) are on this device
            // and hold the extents the arguments address.
            unsafe {
                self.device.launch(
                    programmatic,
                    function,
                    [blocks, 1, 1],
                    [crate::ops::BLOCK_THREADS, 1, 1],
                    0,
                    stream,
                    &mut params,
                    inv.cluster,
                )
            }?;
        }
        Ok(())
    }
}

/// The run-time values of a problem's fused epilogue
/// (`y = act(alpha * conv * scale[k] + bias[k] + beta * z)`).
#[derive(Clone, Copy, Debug)]
pub struct EpilogueArgs<'a> {
    /// `scale[K]`, FP32: given exactly when the problem's fusion has a scale.
    pub scale: Option<&'a DeviceBuffer>,
    /// `bias[K]`, FP32: given exactly when the fusion has a bias.
    pub bias: Option<&'a DeviceBuffer>,
    /// The residual z (y's type and shape; a channel slice when the fusion's `z_ld` is set):
    /// given exactly when the fusion has a residual.
    pub residual: Option<&'a DeviceBuffer>,
    /// The sums' factor.
    pub alpha: f32,
    /// The residual's factor.
    pub beta: f32,
    /// The activation's parameter (ReLU6's ceiling, leaky ReLU's slope).
    pub activation_param: f32,
    /// y's first channel in the tensor its slice belongs to (a multiple of 8; 0 when dense).
    pub y_channel_offset: u32,
    /// z's first channel likewise.
    pub z_channel_offset: u32,
    /// Where the epilogue writes a global pool's FP32 partial sums: given exactly when the
    /// fusion has `pool`, at least [`crate::solvers::PoolPartials::bytes`] of the invoker's
    /// [`Invoker::pool_partials`].
    pub pool: Option<&'a DeviceBuffer>,
    /// x's gate `s[N][C]` in x's type: given exactly when the fusion has `x_scale`.
    pub x_scale: Option<&'a DeviceBuffer>,
}

impl<'a> EpilogueArgs<'a> {
    /// No tensors, alpha = beta = 1, the activation's PyTorch default parameter, no offsets.
    pub fn defaults(p: &ConvProblem) -> EpilogueArgs<'a> {
        EpilogueArgs {
            scale: None,
            bias: None,
            residual: None,
            alpha: 1.0,
            beta: 1.0,
            activation_param: p.fusion().activation.default_param(),
            y_channel_offset: 0,
            z_channel_offset: 0,
            pool: None,
            x_scale: None,
        }
    }

    /// The kernels' epilogue for `p` and y's channel offset, after checking every value
    /// against the problem's fusion.
    fn checked(
        &self,
        p: &ConvProblem,
        device: &Device,
        pool_bytes: u64,
    ) -> Result<(kiln_format::abi::Epilogue, u64), RunError> {
        let f = p.fusion();
        let fail = |reason: String| RunError::Epilogue {
            problem: p.find_db_key().as_str().to_string(),
            reason,
        };
        let element = p.data_types()[2].size_bytes() as u64;
        let k = p.k() as u64;
        let mut ep = kiln_format::abi::Epilogue::plain(p);
        ep.alpha = self.alpha;
        ep.beta = self.beta;
        ep.act_a = self.activation_param;
        // The address of a tensor the fusion names, checked; 0 for one it does not.
        let tensor = |name: &'static str,
                      wanted: bool,
                      given: Option<&DeviceBuffer>,
                      needed: u64|
         -> Result<u64, RunError> {
            match (wanted, given) {
                (true, Some(b)) => {
                    check_buffer(device, name, b, needed)?;
                    Ok(b.device_ptr())
                }
                (true, None) => Err(fail(format!("the problem fuses a {name}: none given"))),
                (false, Some(_)) => Err(fail(format!(
                    "a {name} was given, but the problem does not fuse one"
                ))),
                (false, None) => Ok(0),
            }
        };
        ep.scale = tensor("scale", f.scale, self.scale, 4 * k)?;
        ep.bias = tensor("bias", f.bias, self.bias, 4 * k)?;
        ep.pool = tensor("pool partial sums buffer", f.pool, self.pool, pool_bytes)?;
        let gate_bytes = u64::from(p.n()) * u64::from(p.c()) * element;
        ep.x_scale = tensor("gate of x", f.x_scale, self.x_scale, gate_bytes)?;
        // The kernels read the gate in 16-byte pieces.
        if !ep.x_scale.is_multiple_of(16) {
            return Err(fail(format!(
                "x's gate at device address {:#x} is not 16-byte aligned",
                ep.x_scale
            )));
        }
        let offset = |name: &str, offset: u32, ld: u32| -> Result<u64, RunError> {
            if offset == 0 {
                return Ok(0);
            }
            if ld == 0 {
                return Err(fail(format!(
                    "{name} channel offset {offset} given, but {name} is not a slice (no ld in the fusion)"
                )));
            }
            if !offset.is_multiple_of(8) || offset as u64 + k > ld as u64 {
                return Err(fail(format!(
                    "{name} channel offset {offset}: must be a multiple of 8 with offset + K ({k}) <= ld ({ld})"
                )));
            }
            Ok(offset as u64)
        };
        let y_offset = offset("y", self.y_channel_offset, f.y_ld)?;
        let z_offset = offset("z", self.z_channel_offset, f.z_ld)?;
        let z_needed = (p.z_extent() + z_offset) * element;
        ep.z = match tensor("residual", f.residual, self.residual, z_needed)? {
            0 => 0,
            z => z + z_offset * element,
        };
        // The kernels copy z in 16-byte pieces (kiln allocations are 256-byte aligned, and a
        // channel offset is a multiple of 8 elements).
        if !ep.z.is_multiple_of(16) {
            return Err(fail(format!(
                "residual at device address {:#x} is not 16-byte aligned",
                ep.z
            )));
        }
        if !(self.alpha.is_finite() && self.beta.is_finite() && self.activation_param.is_finite()) {
            return Err(fail(
                "alpha, beta and the activation's parameter must be finite".into(),
            ));
        }
        Ok((ep, y_offset))
    }
}

/// Checks that `buf` (named `which` in errors) is on `device` and holds `needed` bytes.
fn check_buffer(
    device: &Device,
    which: &'static str,
    buf: &DeviceBuffer,
    needed: u64,
) -> Result<(), RunError> {
    if !buf.device().same_as(device) {
        return Err(RunError::ForeignBuffer { which });
    }
    if buf.bytes() < needed {
        return Err(RunError::BufferTooSmall {
            which,
            needed,
            given: buf.bytes(),
        });
    }
    Ok(())
}

/// The CUDA version of the NVRTC that built a target's cubins, from its toolchain line
/// (`"NVRTC 12.9, ..."` -> `(12, 9)`).
pub fn cuda_toolkit(target: &EmbeddedTarget) -> Option<(u32, u32)> {
    let rest = target.toolchain.split("NVRTC ").nth(1)?;
    let version: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
}

/// What a device gets, from its description alone: the embedded target it runs (exact, closest
/// CU count, or for NVIDIA the nearest lower arch of its major version), refused when its
/// driver is older than the target's cubins need (CUDA's minor-version compatibility: a
/// driver of the toolkit's major version). Logs a warning for borrowed tuning.
pub fn check_device(info: &crate::backend::DeviceInfo) -> Result<Selection, RunError> {
    let sel = select_target(&info.arch, info.compute_units)?;
    if let (Some(driver), Some(toolkit)) = (info.driver_version, cuda_toolkit(sel.target)) {
        if driver.0 < toolkit.0 {
            return Err(RunError::OldDriver {
                target: sel.target.basename,
                driver,
                toolkit,
            });
        }
    }
    warn_about_target(&info.spec, &info.arch, info.compute_units, sel);
    Ok(sel)
}

/// Warns when a device runs on borrowed tuning: another arch's objects, the closest CU
/// count's target, or a target whose find-db measured none of kiln's solvers (its plans all
/// come from the cost model).
pub fn warn_about_target(spec: &str, arch: &str, compute_units: u32, sel: Selection) {
    let t = sel.target;
    if !sel.same_arch {
        log::warn!(
            "{spec} ({arch}, {compute_units} SMs) has no {arch} target in this binary: running {} ({}) cubins, which NVIDIA's binary compatibility within a major version allows; their tuning was measured on another device",
            t.basename,
            t.arch
        );
    } else if !sel.exact {
        log::warn!(
            "{spec} ({arch}, {compute_units} CUs/SMs) has no target of its own in this binary: using {} ({} CUs/SMs), the closest CU count of its arch; its tuning was measured on another device",
            t.basename,
            t.compute_units
        );
    }
    warn_if_unmeasured(t);
}

/// Warns when a target's find-db measured none of kiln's solvers: every plan on it comes from
/// the cost model.
pub fn warn_if_unmeasured(t: &EmbeddedTarget) {
    if t.measured.is_empty() {
        log::warn!(
            "target {} has no measured find-db for kiln's solvers: every problem is ranked by the cost model (kiln-tools find measures one)",
            t.basename
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every embedded target can run the warm-up problem from its own kdb: a context that opens
    /// with a warm-up never fails for want of a kernel.
    #[test]
    fn every_target_runs_the_warm_up_problem_from_its_own_kdb() {
        let p = Context::warm_up_problem().expect("valid problem");
        assert_eq!(
            p.find_db_key().as_str(),
            "4-4-4-1x1-4-4-4-1-0x0-1x1-1x1-0-NCHW-FP32-F"
        );
        assert!(!crate::embedded::targets().is_empty());
        for t in crate::embedded::targets() {
            let caps = TargetCaps::on_device(t, t.arch, t.compute_units);
            let plan = crate::resolve::resolve_on(t, &caps, &p)
                .unwrap_or_else(|e| panic!("{}: {e}", t.basename));
            let v = plan.best().variant;
            let (name, args) = v
                .solver
                .entry
                .kdb_key("FP32", v.params, t.arch)
                .expect("kdb key");
            let object = t
                .code_object(&name, &args)
                .expect("kdb readable")
                .unwrap_or_else(|| panic!("{}: no object '{name}' '{args}'", t.basename));
            crate::codeobject::check_for_device(object.bytes, t.arch)
                .unwrap_or_else(|e| panic!("{}: {e}", t.basename));
        }
    }
}
