//! Invokers: a solution prepared for one problem (kernels loaded, launch shapes and arguments
//! computed), and the two argument conventions kiln's kernels use.
//!
//! * kiln's own kernels take `(x, w, y, KilnConvArgs)`.
//! * Library kernels (CUTLASS) take one parameter block in the library's own layout, which
//!   only the library's device code knows how to fill. Their code object exports a builder
//!   (`SolverEntry::builder`) that one GPU thread runs at prepare time:
//!   `builder(KilnConvArgs, int runtime_value, void* block, KilnBuilderInfo* info)`. It writes
//!   the block with null tensor pointers and reports its size, the launch shape and where the
//!   pointers sit; every run copies the block to the stack, patches x, w, y and the workspace
//!   in, and passes it as the kernel's single argument.
//! * Hopper TMA kernels (`kernels/nv/wgmma_conv.cu`) take one block of TMA tensor maps the
//!   host encodes through the driver ([`crate::solvers::TunableSolver::tma_arguments`]): prepare
//!   encodes them for the problem's shapes; every run copies the block, points the maps at its
//!   x and w (`cuTensorMapReplaceAddress`, host-only) and writes y's address.

use std::ffi::c_void;
use std::sync::Arc;

use kiln_format::abi::{BuilderInfo, Epilogue, KernelArgs, Pointers, TmaConvParams};
use kiln_format::ConvProblem;

use crate::backend::{Device, DeviceBuffer, Function, Module, Stream, TensorMap, TmaElement};
use crate::error::RunError;
use crate::resolve::Variant;
use crate::solvers::{KernelLaunch, LaunchPlan, TmaArguments, TmaOperand};

/// Largest parameter block a kernel may take (the driver's 4 KiB kernel-parameter limit).
pub const MAX_PARAM_BLOCK: usize = 4096;

/// Device bytes a library builder writes: the parameter block's room, then its report.
pub const BUILDER_SCRATCH_BYTES: u64 = (MAX_PARAM_BLOCK + BuilderInfo::BYTES) as u64;

/// Which buffer a pointer slot of a parameter block gets, and at what byte offset in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    X,
    W,
    Y,
    Workspace(u64),
}

/// A library kernel's parameter block, with its pointer slots.
#[derive(Debug)]
pub struct ParamBlock {
    bytes: heapless::Vec<u8, MAX_PARAM_BLOCK>,
    /// The slots of x, w, y (source), y (destination), the semaphores: offset and content.
    slots: [(usize, Base); 5],
    zeroed_words: u64,
    zeroed_at: u64,
    /// The problem, passed to every kernel of the plan beside the block.
    args: KernelArgs,
}

/// A stack buffer aligned like any kernel parameter the driver copies from.
#[repr(C, align(64))]
struct AlignedBlock([u8; MAX_PARAM_BLOCK]);

/// A TMA kernel's argument encoded for one problem, and which tensor each map views.
#[derive(Debug)]
pub(crate) struct TmaInvocation {
    block: TmaConvParams,
    operands: [TmaOperand; 2],
    /// The maps of y and z are encoded (`TmaArguments::epilogue_map`) for rows K elements
    /// apart.
    epilogue_maps: bool,
    packing: Option<crate::solvers::Packing>,
    /// Words at the workspace's start zeroed before each launch (stream-K's flags).
    zeroed_words: u32,
}

impl TmaInvocation {
    /// Encodes the maps `tma` describes for `p`'s element type, pointing at `placeholder` (a
    /// live device allocation: the driver encodes the address, and each launch replaces it).
    fn encode(
        device: &Device,
        p: &ConvProblem,
        tma: &TmaArguments,
        placeholder: u64,
    ) -> Result<TmaInvocation, String> {
        let element = match p.data_types()[0] {
            kiln_format::DataType::Fp16 => TmaElement::F16,
            kiln_format::DataType::Bf16 => TmaElement::Bf16,
            kiln_format::DataType::Fp32 => TmaElement::F32,
            other => return Err(format!("TMA maps of {} are not supported", other.name())),
        };
        let mut maps = [TensorMap([0; 16]); 2];
        let [m, k, c] = tma.sizes;
        let [out_h, out_w, filter_h, filter_w, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w] =
            tma.geometry;
        let [out_d, filter_d, stride_d, pad_d, dil_d] = tma.depth;
        for (map, view) in maps.iter_mut().zip(&tma.views) {
            *map = device
                .encode_tensor_map(element, placeholder, &view.shape)
                .map_err(|e| format!("{:?} tensor map: {e}", view.operand))?;
        }
        // y and z share one view; z's map is y's, pointed elsewhere at launch.
        let epilogue_map = match &tma.epilogue_map {
            Some(shape) => device
                .encode_tensor_map(element, placeholder, shape)
                .map_err(|e| format!("y tensor map: {e}"))?,
            None => TensorMap([0; 16]),
        };
        Ok(TmaInvocation {
            block: TmaConvParams {
                x: maps[0],
                w: maps[1],
                y_map: epilogue_map,
                z_map: epilogue_map,
                y: 0,
                m,
                k,
                c,
                splits: tma.splits,
                out_h,
                out_w,
                filter_h,
                filter_w,
                stride_h,
                stride_w,
                pad_h,
                pad_w,
                dil_h,
                dil_w,
                out_d,
                filter_d,
                stride_d,
                pad_d,
                dil_d,
                workspace: 0,
                x_data: 0,
                w_data: 0,
                x_packed: 0,
                w_packed: 0,
                row_flags: 0,
                in_h: tma.input[1],
                in_w: tma.input[2],
                row_elems: tma.packing.map_or(0, |f| f.row_elems),
                lead: tma.packing.map_or(0, |f| f.lead),
                in_d: tma.input[0],
                group_in: tma.group_widths[0],
                group_out: tma.group_widths[1],
                group_tile_in: tma.group_widths[2],
                tma_epilogue: 0,
                reserved: 0,
                ep: Epilogue::plain(p),
            },
            epilogue_maps: tma.epilogue_map.is_some(),
            packing: tma.packing,
            operands: tma.views.map(|v| v.operand),
            zeroed_words: tma.zeroed_words,
        })
    }

    /// The block for one launch: maps pointed at x and w, y's and the workspace's addresses
    /// written.
    fn for_buffers(
        &self,
        device: &Device,
        solver: &'static str,
        [x, w, y, workspace]: [u64; 4],
        epilogue: &Epilogue,
    ) -> Result<TmaConvParams, RunError> {
        // A packing kernel's maps point into the workspace.
        let workspace_check = if self.packing.is_some() { workspace } else { 0 };
        for (which, address) in [("x", x), ("w", w), ("y", y), ("workspace", workspace_check)] {
            if address % 16 != 0 {
                return Err(RunError::Solver {
                    solver,
                    reason: format!("{which} at {address:#x} is not 16-byte aligned (TMA)"),
                });
            }
        }
        let mut block = self.block;
        let packed = self
            .packing
            .map_or([0; 3], |f| f.offsets.map(|o| workspace + o));
        for (map, operand) in [&mut block.x, &mut block.w].into_iter().zip(self.operands) {
            let address = match operand {
                TmaOperand::X => x,
                TmaOperand::W => w,
                TmaOperand::PackedX => packed[0],
                TmaOperand::PackedW => packed[1],
            };
            device.replace_tensor_map_address(map, address)?;
        }
        block.y = y;
        block.ep = *epilogue;
        // The TMA epilogue where y's and z's rows are K elements apart (not a channel slice of
        // a wider tensor) and z, like y, is 16-byte aligned.
        let k = block.k;
        let z = epilogue.z;
        let tma_epilogue = self.epilogue_maps
            && epilogue.y_ld == k
            && (z == 0 || (epilogue.z_ld == k && z.is_multiple_of(16)));
        block.tma_epilogue = tma_epilogue as i32;
        if tma_epilogue {
            device.replace_tensor_map_address(&mut block.y_map, y)?;
            if z != 0 {
                device.replace_tensor_map_address(&mut block.z_map, z)?;
            }
        }
        block.workspace = workspace;
        block.x_data = x;
        block.w_data = w;
        [block.x_packed, block.w_packed, block.row_flags] = packed;
        Ok(block)
    }
}

/// How an invoker passes its arguments.
#[derive(Debug)]
pub(crate) enum Arguments {
    /// `(x, w, y, KilnConvArgs, KilnEpilogue)`.
    Kiln(KernelArgs),
    /// One library parameter block (boxed: 4 KiB beside a 100-byte variant).
    Block(Box<ParamBlock>),
    /// One block of host-encoded TMA tensor maps.
    TensorMaps(Box<TmaInvocation>),
}

/// A prepared solution: kernels loaded, launches and arguments computed.
#[derive(Debug)]
pub struct Invoker {
    /// What it runs.
    pub variant: Variant,
    pub(crate) kernels: Vec<(Function, KernelLaunch)>,
    pub(crate) workspace_bytes: u64,
    /// Where the epilogue writes a global pool's partial sums (a problem fusing them).
    pub(crate) pool_partials: Option<crate::solvers::PoolPartials>,
    pub(crate) arguments: Arguments,
    pub(crate) problem: ConvProblem,
    /// Its kernels wait on their predecessor (`griddepcontrol.wait`): they may be launched
    /// with programmatic dependent launch.
    pub(crate) programmatic: bool,
}

impl Invoker {
    /// The launches, in order.
    pub fn launches(&self) -> impl Iterator<Item = &KernelLaunch> {
        self.kernels.iter().map(|(_, l)| l)
    }

    /// Workspace bytes [`crate::context::Context::run`] needs.
    pub fn workspace_bytes(&self) -> u64 {
        self.workspace_bytes
    }

    /// How the epilogue lays out a global pool's partial sums, for a problem that fuses them
    /// ([`kiln_format::Fusion::pool`]): the buffer [`crate::context::EpilogueArgs::pool`]
    /// must hold [`crate::solvers::PoolPartials::bytes`], and the pool's finishing operator
    /// ([`crate::ops::OpKind::GlobalAveragePoolFinish`]) reads them so.
    pub fn pool_partials(&self) -> Option<crate::solvers::PoolPartials> {
        self.pool_partials
    }

    /// The problem it was prepared for.
    pub fn problem(&self) -> &ConvProblem {
        &self.problem
    }

    /// Builds the invoker of `v` for `p` from a loaded module; a library builder runs with
    /// `scratch` (at least [`BUILDER_SCRATCH_BYTES`]) as its output.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        device: &Device,
        scratch: &DeviceBuffer,
        module: &Arc<Module>,
        p: &ConvProblem,
        v: &Variant,
        args: KernelArgs,
        mut plan: LaunchPlan,
        tma: Option<TmaArguments>,
    ) -> Result<Invoker, RunError> {
        let fail = |reason: String| RunError::Solver {
            solver: v.solver.id(),
            reason: format!("[{}] on {}: {reason}", v.params, p.find_db_key()),
        };
        let entry = v.solver.entry;
        // The builder runs on the GPU while the host looks up the plan's kernels (with lazy
        // loading, each lookup loads that kernel's code): a cold prepare overlaps the two.
        let has_builder = !entry.builder.is_empty();
        if has_builder {
            let runtime_value = runtime_value(v.params, entry.runtime_values);
            let builder = module.function(entry.builder)?;
            ParamBlock::launch(device, scratch, &builder, args, runtime_value)?;
        }
        let mut functions = Vec::with_capacity(plan.kernels.len());
        for launch in &plan.kernels {
            if !entry.functions.contains(&launch.kernel) {
                return Err(fail(format!(
                    "its launch plan names {}, which the manifest does not list",
                    launch.kernel
                )));
            }
            functions.push(module.function(launch.kernel)?);
        }
        let arguments = if let Some(tma) = tma {
            let invocation =
                TmaInvocation::encode(device, p, &tma, scratch.device_ptr()).map_err(fail)?;
            Arguments::TensorMaps(Box::new(invocation))
        } else if !has_builder {
            Arguments::Kiln(args)
        } else {
            let (block, info) = ParamBlock::read(scratch, args)?;
            if info.status != 0 {
                return Err(fail(format!(
                    "the library refuses the problem (status {})",
                    info.status
                )));
            }
            // The builder is the authority on the launch of the library kernel; the
            // solver's plan must agree with it (a disagreement means the Rust mirror of the
            // library's rules is wrong).
            let k = plan
                .kernels
                .get_mut(plan.library)
                .ok_or_else(|| fail("plan without its library kernel".into()))?;
            let grid = info.grid.map(|g| g.max(0) as u32);
            if grid != k.grid || info.threads.max(0) as u32 != k.block[0] {
                return Err(fail(format!(
                    "builder launch grid {:?} x {} threads differs from the solver's {:?} x {}",
                    grid, info.threads, k.grid, k.block[0]
                )));
            }
            let needed = block.workspace_bytes();
            if needed > plan.workspace_bytes {
                return Err(fail(format!(
                    "builder needs {needed} B of workspace, the solver planned {}",
                    plan.workspace_bytes
                )));
            }
            k.shared_bytes = info.shared_bytes.max(0) as u32;
            Arguments::Block(Box::new(block))
        };
        let mut kernels = Vec::with_capacity(plan.kernels.len());
        for (function, launch) in functions.into_iter().zip(plan.kernels) {
            if launch.shared_bytes > 48 * 1024 {
                function.set_max_dynamic_shared(launch.shared_bytes)?;
            }
            kernels.push((function, launch));
        }
        Ok(Invoker {
            variant: *v,
            kernels,
            workspace_bytes: plan.workspace_bytes,
            pool_partials: plan.pool_partials,
            arguments,
            problem: *p,
            programmatic: false,
        })
    }

    /// Launches every kernel on `stream` (with programmatic dependent launch when `programmatic`
    /// allows it and the kernels wait on their predecessor). The caller has checked that the
    /// buffers are on `device` and large enough for the problem, the epilogue and the
    /// workspace; `yp` is y's address (a channel slice's first element).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch(
        &self,
        device: &Device,
        x: &DeviceBuffer,
        w: &DeviceBuffer,
        mut yp: u64,
        epilogue: &Epilogue,
        workspace: Option<&DeviceBuffer>,
        stream: &Stream,
        programmatic: bool,
    ) -> Result<(), RunError> {
        let (mut xp, mut wp) = (x.device_ptr(), w.device_ptr());
        let mut ep = *epilogue;
        let (mut args, mut kiln_params);
        let (mut buf, mut pointers, mut block_params);
        let (mut tma, mut tma_params);
        let params: &mut [*mut c_void] = match &self.arguments {
            Arguments::Kiln(a) => {
                args = *a;
                kiln_params = [
                    (&mut xp as *mut u64).cast(),
                    (&mut wp as *mut u64).cast(),
                    (&mut yp as *mut u64).cast(),
                    (&mut args as *mut KernelArgs).cast(),
                    (&mut ep as *mut Epilogue).cast(),
                ];
                &mut kiln_params
            }
            Arguments::Block(block) => {
                let ws = workspace.map_or(0, |b| b.device_ptr());
                buf = AlignedBlock([0; MAX_PARAM_BLOCK]);
                block.write(&mut buf.0, [xp, wp, yp, ws]);
                if block.zeroed_words > 0 {
                    // Checked by the caller: a plan with zeroed words has that much workspace.
                    let ws = workspace.ok_or(RunError::BufferTooSmall {
                        which: "workspace",
                        needed: block.workspace_bytes(),
                        given: 0,
                    })?;
                    device.zero_async(ws, block.zeroed_at, block.zeroed_words, stream)?;
                }
                pointers = Pointers {
                    x: xp,
                    w: wp,
                    y: yp,
                    workspace: ws,
                };
                args = block.args;
                block_params = [
                    buf.0.as_mut_ptr().cast(),
                    (&mut pointers as *mut Pointers).cast(),
                    (&mut args as *mut KernelArgs).cast(),
                ];
                &mut block_params
            }
            Arguments::TensorMaps(invocation) => {
                let ws = workspace.map_or(0, |b| b.device_ptr());
                if invocation.zeroed_words > 0 {
                    // Checked by the caller: the plan's workspace holds the flags.
                    let buffer = workspace.ok_or(RunError::BufferTooSmall {
                        which: "workspace",
                        needed: self.workspace_bytes,
                        given: 0,
                    })?;
                    device.zero_async(buffer, 0, invocation.zeroed_words as u64, stream)?;
                }
                tma = invocation.for_buffers(
                    device,
                    self.variant.solver.id(),
                    [xp, wp, yp, ws],
                    &ep,
                )?;
                tma_params = [(&mut tma as *mut TmaConvParams).cast()];
                &mut tma_params
            }
        };
        for (function, launch) in &self.kernels {
            // SAFETY: kiln's own kernels take (x, w, y, KilnConvArgs, KilnEpilogue) (the
            // manifest's contract; both mirrors are checked against their C structs); library kernels take
            // (parameter block, KilnPointers, KilnConvArgs), the block built for this problem by
            // the code object's own builder (its size and pointer slots checked against
            // MAX_PARAM_BLOCK at prepare); TMA kernels take their one KilnTmaConvParams, mirrored
            // by abi::TmaConvParams (checked against the header), its maps encoded for this problem's shapes and pointed
            // at these buffers. The buffers
            // are on this device and hold what the problem and the workspace need (checked by
            // the caller), and the solver applies to the problem (checked at prepare), so the
            // kernels stay within them.
            unsafe {
                device.launch(
                    programmatic && self.programmatic,
                    function,
                    launch.grid,
                    launch.block,
                    launch.shared_bytes,
                    stream,
                    params,
                    launch.cluster,
                )
            }?;
        }
        Ok(())
    }
}

/// The run-time value of a perf config (its last value when the solver has one), else 1.
fn runtime_value(params: &str, runtime_values: usize) -> i32 {
    if runtime_values == 0 {
        return 1;
    }
    params
        .rsplit(',')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

impl ParamBlock {
    /// Launches `builder` on one GPU thread, writing into `scratch` (zeroed first), on the
    /// default stream; [`ParamBlock::read`] waits for it.
    fn launch(
        device: &Device,
        scratch: &DeviceBuffer,
        builder: &Function,
        args: KernelArgs,
        runtime_value: i32,
    ) -> Result<(), RunError> {
        // One buffer, kept by the context (an allocation and a free would cost a cold start
        // two driver calls, the free a synchronization), zeroed, read back in one copy: the
        // block, then the report.
        if scratch.bytes() < BUILDER_SCRATCH_BYTES {
            return Err(RunError::BufferTooSmall {
                which: "builder scratch",
                needed: BUILDER_SCRATCH_BYTES,
                given: scratch.bytes(),
            });
        }
        scratch.fill(0)?;
        let (mut a, mut rv, mut op, mut ip) = (
            args,
            runtime_value,
            scratch.device_ptr(),
            scratch.device_ptr() + MAX_PARAM_BLOCK as u64,
        );
        let mut params: [*mut c_void; 4] = [
            (&mut a as *mut KernelArgs).cast(),
            (&mut rv as *mut i32).cast(),
            (&mut op as *mut u64).cast(),
            (&mut ip as *mut u64).cast(),
        ];
        // SAFETY: the builder's signature is (KilnConvArgs, int, void*, KilnBuilderInfo*)
        // (kernels/README.md); it writes the block (its size, reported and checked by `read`;
        // CUTLASS's are 0.4-1.2 KiB of the 4 KiB) at the block pointer and 68 bytes (17 ints)
        // at the info pointer after it, both within `scratch` (checked above); one thread
        // runs it.
        unsafe {
            device.launch(
                false,
                builder,
                [1, 1, 1],
                [1, 1, 1],
                0,
                &Stream::default(),
                &mut params,
                1,
            )
        }?;
        Ok(())
    }

    /// Reads back what the builder [`ParamBlock::launch`] started wrote into `scratch`: the
    /// copy waits for it (a synchronous copy after the default stream's work).
    fn read(
        scratch: &DeviceBuffer,
        args: KernelArgs,
    ) -> Result<(ParamBlock, BuilderInfo), RunError> {
        const INFO_BYTES: usize = BuilderInfo::BYTES;
        let mut raw = [0u8; MAX_PARAM_BLOCK + INFO_BYTES];
        scratch.download(&mut raw)?;
        let mut report = [0u8; INFO_BYTES];
        report.copy_from_slice(&raw[MAX_PARAM_BLOCK..]);
        let info = BuilderInfo::from_bytes(&report);
        let size = usize::try_from(info.params_bytes).unwrap_or(usize::MAX);
        let bad = |what: String| {
            RunError::Backend(crate::backend::BackendError::kiln(
                "parameter builder",
                what,
            ))
        };
        // The block travels with KilnPointers and KilnConvArgs in one 4 KiB parameter list.
        let limit = MAX_PARAM_BLOCK - size_of::<Pointers>() - size_of::<KernelArgs>();
        if size == 0 || size > limit {
            return Err(bad(format!(
                "reports a {} B block (limit {limit}: the driver's 4 KiB of kernel parameters)",
                info.params_bytes
            )));
        }
        let mut offsets = [0usize; 5];
        let pointer_slots = [
            info.offset_a,
            info.offset_b,
            info.offset_c,
            info.offset_d,
            info.offset_semaphore,
        ];
        for (slot, &o) in offsets.iter_mut().zip(&pointer_slots) {
            match usize::try_from(o) {
                Ok(o) if o % 8 == 0 && o + 8 <= size => *slot = o,
                _ => {
                    return Err(bad(format!(
                        "pointer slot at {o} outside its {size} B block"
                    )))
                }
            }
        }
        let buffer = |at: i32, caller: Base| match at {
            -1 => Ok(caller),
            at if at >= 0 => Ok(Base::Workspace(at as u64)),
            at => Err(bad(format!("tensor workspace offset {at}"))),
        };
        let zeroed_at = u64::try_from(info.semaphore_in_workspace)
            .map_err(|_| bad(format!("semaphore offset {}", info.semaphore_in_workspace)))?;
        let slots = [
            (offsets[0], buffer(info.a_in_workspace, Base::X)?),
            (offsets[1], buffer(info.b_in_workspace, Base::W)?),
            (offsets[2], buffer(info.y_in_workspace, Base::Y)?),
            (offsets[3], buffer(info.y_in_workspace, Base::Y)?),
            (offsets[4], Base::Workspace(zeroed_at)),
        ];
        let mut bytes = heapless::Vec::new();
        // size <= MAX_PARAM_BLOCK (checked above).
        let _ = bytes.extend_from_slice(&raw[..size]);
        Ok((
            ParamBlock {
                bytes,
                slots,
                zeroed_words: info.semaphore_ints.max(0) as u64,
                zeroed_at,
                args,
            },
            info,
        ))
    }

    /// Workspace the block's pointers and zeroed words reach into (a lower bound on what the
    /// plan must ask for: the zeroed words come last).
    fn workspace_bytes(&self) -> u64 {
        let mut need = if self.zeroed_words > 0 {
            self.zeroed_at + self.zeroed_words * 4
        } else {
            0
        };
        for (_, base) in &self.slots[..4] {
            if let Base::Workspace(at) = base {
                need = need.max(*at + 1);
            }
        }
        need
    }

    /// Writes the block with the caller's `[x, w, y, workspace]` patched into its slots.
    fn write(&self, out: &mut [u8; MAX_PARAM_BLOCK], [x, w, y, ws]: [u64; 4]) {
        out[..self.bytes.len()].copy_from_slice(&self.bytes);
        for &(o, base) in &self.slots {
            let p = match base {
                Base::X => x,
                Base::W => w,
                Base::Y => y,
                Base::Workspace(at) => ws.wrapping_add(at),
            };
            out[o..o + 8].copy_from_slice(&p.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_patch_the_callers_pointers_into_their_slots() {
        let mut bytes = heapless::Vec::new();
        bytes.resize(400, 0xAB).unwrap();
        let block = ParamBlock {
            bytes,
            slots: [
                (96, Base::Workspace(0)),
                (168, Base::Workspace(4096)),
                (240, Base::Y),
                (312, Base::Y),
                (392, Base::Workspace(8192)),
            ],
            zeroed_words: 104,
            zeroed_at: 8192,
            args: KernelArgs::default(),
        };
        assert_eq!(block.workspace_bytes(), 8192 + 416);
        let mut out = [0u8; MAX_PARAM_BLOCK];
        block.write(&mut out, [1, 2, 3, 1 << 20]);
        assert_eq!(&out[96..104], &(1u64 << 20).to_le_bytes());
        assert_eq!(&out[168..176], &((1u64 << 20) + 4096).to_le_bytes());
        assert_eq!(&out[240..248], &3u64.to_le_bytes());
        assert_eq!(&out[392..400], &((1u64 << 20) + 8192).to_le_bytes());
        assert_eq!(out[95], 0xAB);
        assert_eq!(out[400], 0);
        assert_eq!(runtime_value("64,64,64,32,32,5,8,4", 1), 4);
        assert_eq!(runtime_value("64,64,16", 0), 1);
    }
}
