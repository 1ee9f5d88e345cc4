//! `kiln-tools bench`: what kiln costs on a real GPU, measured in one process.
//!
//! - Cold start by phase (resolve, kdb decode + sha256, ELF checks, module load, first launch)
//!   beside an NVRTC compile of the same kernel from source (what a runtime without embedded
//!   code objects pays).
//! - Lookup cost of the embedded databases on the host CPU.
//! - Every ResNet-50 conv layer through kiln's resolved solution and through cuDNN's fastest
//!   algorithm, on the same buffers, outputs compared, each timed with device events
//!   (warm-up, median of repeats, inputs rotated over three copies); and the whole network
//!   launched back to back.
//!
//! The report is Markdown, written to `--out` and printed.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use kiln::backend::{BackendError, DeviceBuffer, Stream};
use kiln::context::{Context, Invoker};
use kiln::harness::coldstart::{cold_problem, cold_start, inputs, launch_to_result_s};
use kiln::harness::networks::resnet50;
use kiln::harness::timing::{time_gpu_only, time_gpu_only_fitted, GpuMethod};
use kiln::harness::verify::{
    download, poison, random_values, relative_error, tolerance, upload, workspace_for,
};
use kiln::resolve::Ranked;
use kiln::{ConvProblem, ConvSpec, DataType, Layout, MathMode, RunError};

use super::DeviceArgs;
use crate::cudnn::{Cudnn, CudnnConv, CudnnMath};
use crate::CliResult;

/// Arguments of `kiln-tools bench`.
#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub(super) device: DeviceArgs,
    /// Write the Markdown report here too.
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
    /// Graph replays timed per layer (median reported).
    #[arg(long, default_value_t = 7)]
    pub(super) replays: usize,
    /// Which comparisons to run (fp32, tf32, fp16, bf16, fp32-nchw); none = all.
    #[arg(long, num_args = 1..)]
    cases: Vec<String>,
    /// Batch sizes to compare.
    #[arg(long, num_args = 1.., default_values_t = [1u32, 32])]
    pub(super) batch: Vec<u32>,
    /// Workspace cuDNN may use, MiB.
    #[arg(long, default_value_t = 1024)]
    cudnn_workspace_mib: usize,
    /// Compare these problem lists (`ci/problems/*.txt`) instead of ResNet-50: each distinct
    /// 2-D layer in the case's type, layout and batch; reports the per-layer geometric mean of
    /// kiln / cuDNN. Skips the cold-start and lookup sections.
    #[arg(long, num_args = 1..)]
    problems: Vec<PathBuf>,
    /// A whole network instead (`resnet50`, `mobilenet_v2`, `efficientnet_b0`, `yolov8n`):
    /// kiln's captured graph against cuDNN's convolutions alone, PyTorch eager and
    /// torch.compile, at each `--batch`.
    #[arg(long)]
    pub(super) net: Option<String>,
    /// The network's data type: FP16, BF16 or FP32.
    #[arg(long = "type", default_value = "FP16")]
    pub(super) net_type: String,
    /// The Python with PyTorch that times the network's anchors (`none`: skip them).
    #[arg(long, default_value = "python3")]
    pub(super) torch: String,
}

/// The layers one comparison runs: every layer in network order (for the network graph and
/// the weighted sums) and the distinct ones (each timed once).
struct Network {
    all: Vec<kiln::harness::networks::Layer>,
    unique: Vec<kiln::harness::networks::Layer>,
}

impl Network {
    fn resnet50(case: &Case, n: u32) -> Result<Network, Box<dyn std::error::Error>> {
        Ok(Network {
            all: resnet50(n, case.dtype, case.layout, false)?,
            unique: resnet50(n, case.dtype, case.layout, true)?,
        })
    }

    /// A problem list's distinct 2-D forward layers, recast to the case's type, layout and
    /// batch (the lists hold FP32 NCHW and NHWC variants of the same layers).
    fn from_list(
        keys: &[(String, ConvProblem)],
        case: &Case,
        n: u32,
    ) -> Result<Network, Box<dyn std::error::Error>> {
        let mut unique: Vec<kiln::harness::networks::Layer> = Vec::new();
        for (i, (_, p)) in keys.iter().enumerate() {
            if p.spatial_dims() != 2 || p.direction() != kiln::Direction::Forward {
                continue;
            }
            let spec = ConvSpec {
                n,
                layouts: [case.layout; 3],
                data_types: [case.dtype; 3],
                ..p.spec()
            };
            let q = ConvProblem::new(spec)?;
            if unique
                .iter()
                .all(|l| l.problem.find_db_key() != q.find_db_key())
            {
                unique.push(kiln::harness::networks::Layer {
                    name: format!("#{}", i + 1),
                    problem: q,
                });
            }
        }
        Ok(Network {
            all: unique.clone(),
            unique,
        })
    }
}

/// A buffer of `p`'s x (`which` 0) or w (1) holding seeded random values.
fn random_tensor(
    ctx: &Context,
    p: &ConvProblem,
    which: usize,
    seed: u64,
) -> Result<DeviceBuffer, RunError> {
    let n = p.element_counts()[which] as usize;
    Ok(upload(ctx.device(), p.data_types()[0], &random_values(n, seed))?.0)
}

/// kiln's kernel headers, every one a kernel source may include (`kiln_embed::kdbbuild`
/// passes the same ones to NVRTC).
const KERNEL_HEADERS: [(&str, &str); 6] = [
    ("kiln_gpu.h", include_str!("../../../../kernels/kiln_gpu.h")),
    ("igemm.h", include_str!("../../../../kernels/igemm.h")),
    ("epilogue.h", include_str!("../../../../kernels/epilogue.h")),
    (
        "library_abi.h",
        include_str!("../../../../kernels/library_abi.h"),
    ),
    (
        "cutlass_config.h",
        include_str!("../../../../kernels/cutlass_config.h"),
    ),
    (
        "nv_shared.h",
        include_str!("../../../../kernels/nv_shared.h"),
    ),
];

/// Kernel sources, for compiling the cold-start kernel with NVRTC as a JIT runtime would.
const KERNEL_SOURCES: [(&str, &str); 4] = [
    (
        "conv_naive.cpp",
        include_str!("../../../../kernels/conv_naive.cpp"),
    ),
    (
        "conv_tiled.cpp",
        include_str!("../../../../kernels/conv_tiled.cpp"),
    ),
    (
        "conv_igemm.cpp",
        include_str!("../../../../kernels/conv_igemm.cpp"),
    ),
    (
        "conv_gemm1x1.cpp",
        include_str!("../../../../kernels/conv_gemm1x1.cpp"),
    ),
];

/// The JIT path for the same kernel: NVRTC load, compile, checks + module load, first launch.
struct JitStart {
    nvrtc: String,
    kernel: String,
    load_s: f64,
    compile_s: f64,
    module_load_s: f64,
    first_launch_s: f64,
    cubin_bytes: usize,
}

fn jit_start(
    ctx: &Context,
    p: &ConvProblem,
    c: &Ranked,
) -> Result<JitStart, Box<dyn std::error::Error>> {
    let target = ctx.target();
    // Library kernels (CUTLASS) need their headers to compile, which an appliance does not
    // carry: the JIT path then compiles kiln's own implicit GEMM for the same problem.
    let own;
    let c = if KERNEL_SOURCES
        .iter()
        .any(|(n, _)| *n == c.variant.solver.entry.source)
    {
        c
    } else {
        let solver = kiln::solvers::by_id("ConvImplicitGemmFwd").ok_or("no implicit GEMM")?;
        let caps = kiln::solvers::TargetCaps::of(target);
        let params = solver
            .default_params(p, &caps)
            .ok_or("implicit GEMM does not apply")?;
        own = Ranked {
            variant: kiln::resolve::Variant { solver, params },
            ..*c
        };
        &own
    };
    let entry = c.variant.solver.entry;
    let source = KERNEL_SOURCES
        .iter()
        .find(|(n, _)| *n == entry.source)
        .ok_or_else(|| format!("no source for {}", entry.source))?
        .1;
    let opts = kiln::format::manifest::compile_options(
        entry.options,
        p.data_types()[0].name(),
        c.variant.params,
    )?;
    let options: Vec<String> = opts.split_whitespace().map(String::from).collect();
    let t0 = Instant::now();
    let nvrtc = kiln_embed::compile::Nvrtc::load()?;
    let t1 = Instant::now();
    let cubin =
        nvrtc.compile_cubin(entry.source, source, &KERNEL_HEADERS, target.arch, &options)?;
    let t2 = Instant::now();
    // SAFETY: NVRTC just compiled this cubin for this device from kiln's own kernel source,
    // with the options of the variant it is used for.
    let inv = unsafe { ctx.invoker_from_object(p, &c.variant, &cubin) }?;
    let t3 = Instant::now();
    let first_launch_s = launch_to_result_s(ctx, &inv, &inputs(ctx, p)?)?;
    Ok(JitStart {
        nvrtc: format!("NVRTC {} ({})", nvrtc.version()?, nvrtc.path.display()),
        kernel: format!("{} [{}]", entry.id, c.variant.params),
        load_s: (t1 - t0).as_secs_f64(),
        compile_s: (t2 - t1).as_secs_f64(),
        module_load_s: (t3 - t2).as_secs_f64(),
        first_launch_s,
        cubin_bytes: cubin.len(),
    })
}

/// One library code object's module loads: its name, the median and the slowest of
/// [`LOADS_PER_OBJECT`] loads in ms, its size in bytes.
type ModuleLoad = (String, f64, f64, usize);

/// Times each object is loaded (and unloaded): one load is a single host-timed call of
/// 0.05-0.2 ms, where a stray page fault or driver lock doubles it.
const LOADS_PER_OBJECT: usize = 5;

/// Host time to check and load every library code object of the device's target and look up
/// its first function, each object [`LOADS_PER_OBJECT`] times (the module unloaded between).
fn library_module_loads(ctx: &Context) -> Result<Vec<ModuleLoad>, Box<dyn std::error::Error>> {
    let target = ctx.target();
    let arch = ctx.device().info().arch.clone();
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for s in kiln::solvers::registered().filter(|s| !s.entry.library.is_empty()) {
        if !s.entry.builds_for(target.arch) {
            continue;
        }
        for dtype in s.entry.data_types {
            for params in s.entry.params {
                let (name, args) = s.entry.kdb_key(dtype, params, target.arch)?;
                if !seen.insert((name.clone(), args.clone())) {
                    continue;
                }
                let Some(object) = target.code_object(&name, &args)? else {
                    return Err(format!("{}: no code object {name} {args}", target.basename).into());
                };
                let mut times = Vec::with_capacity(LOADS_PER_OBJECT);
                for _ in 0..LOADS_PER_OBJECT {
                    let t = Instant::now();
                    let checked = kiln::codeobject::check_for_device(object.bytes, &arch)?;
                    let module = ctx.device().load_module(checked)?;
                    let _f = module.function(s.entry.functions[0])?;
                    times.push(t.elapsed().as_secs_f64() * 1e3);
                }
                times.sort_by(f64::total_cmp);
                out.push((
                    format!("{} {dtype} [{params}]", s.id()),
                    times[times.len() / 2],
                    times[times.len() - 1],
                    object.bytes.len(),
                ));
            }
        }
    }
    Ok(out)
}

/// Median host time of `f` in ns, over `rounds` rounds of `iters` calls.
fn host_ns(rounds: usize, iters: usize, mut f: impl FnMut()) -> f64 {
    let mut per_call: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_secs_f64() * 1e9 / iters as f64
        })
        .collect();
    per_call.sort_by(f64::total_cmp);
    per_call[per_call.len() / 2]
}

fn cudnn_err(e: crate::cudnn::CudnnError) -> RunError {
    RunError::Backend(BackendError::kiln(e.call, e.message))
}

/// One comparison: kiln's type, layout and math mode against cuDNN set up as PyTorch sets it
/// up, cuDNN timed in each of `cudnn_layouts` (the faster counts per layer).
struct Case {
    name: &'static str,
    label: &'static str,
    dtype: DataType,
    layout: Layout,
    math: MathMode,
    cudnn_math: CudnnMath,
    cudnn_layouts: &'static [Layout],
}

const CASES: [Case; 5] = [
    Case {
        name: "fp32",
        label: "FP32: kiln NHWC (FP32-accurate: 3xTF32 or FFMA) vs cuDNN FP32 with FMA math (no TF32), NCHW or NHWC",
        dtype: DataType::Fp32,
        layout: Layout::Nhwc,
        math: MathMode::Default,
        cudnn_math: CudnnMath::Fma,
        cudnn_layouts: &[Layout::Nchw, Layout::Nhwc],
    },
    Case {
        name: "tf32",
        label: "TF32 (opted in): kiln NHWC vs cuDNN FP32 with TF32 allowed, NCHW or NHWC",
        dtype: DataType::Fp32,
        layout: Layout::Nhwc,
        math: MathMode::AllowTf32,
        cudnn_math: CudnnMath::AllowTf32,
        cudnn_layouts: &[Layout::Nchw, Layout::Nhwc],
    },
    Case {
        name: "fp16",
        label: "FP16 NHWC: kiln vs cuDNN tensor-op math",
        dtype: DataType::Fp16,
        layout: Layout::Nhwc,
        math: MathMode::Default,
        cudnn_math: CudnnMath::TensorOp,
        cudnn_layouts: &[Layout::Nhwc],
    },
    Case {
        name: "bf16",
        label: "BF16 NHWC: kiln vs cuDNN tensor-op math",
        dtype: DataType::Bf16,
        layout: Layout::Nhwc,
        math: MathMode::Default,
        cudnn_math: CudnnMath::TensorOp,
        cudnn_layouts: &[Layout::Nhwc],
    },
    Case {
        name: "fp32-nchw",
        label: "FP32 NCHW: kiln (3xTF32 through NHWC copies, or CUDA-core kernels) vs cuDNN FMA math",
        dtype: DataType::Fp32,
        layout: Layout::Nchw,
        math: MathMode::Default,
        cudnn_math: CudnnMath::Fma,
        cudnn_layouts: &[Layout::Nchw],
    },
];

/// Calls per captured graph and replays timed, for per-layer figures.
const GRAPH_CALLS: usize = 20;

/// One distinct ResNet-50 layer prepared for kiln.
struct LayerBench {
    name: String,
    problem: ConvProblem,
    count: usize,
    xs: [DeviceBuffer; 3],
    w: DeviceBuffer,
    y: DeviceBuffer,
    ws: Option<DeviceBuffer>,
    candidate: Ranked,
    invoker: std::sync::Arc<Invoker>,
}

/// cuDNN's best for one layer: the algorithm, layout and buffers it runs on, and its output on
/// kiln's inputs (when cuDNN runs kiln's layout at all).
struct CudnnBest<'a> {
    conv: CudnnConv<'a>,
    layout: Layout,
    ms: f64,
    bufs: [std::rc::Rc<DeviceBuffer>; 3],
    reference: Option<Vec<f64>>,
}

/// Results of one (case, batch) configuration.
struct ConfigResult {
    label: String,
    rows: String,
    /// Each distinct layer: its name, kiln's and cuDNN's ms per call (for the chart).
    layers: Vec<(String, f64, f64)>,
    kiln_unique_ms: f64,
    cudnn_unique_ms: f64,
    kiln_weighted_ms: f64,
    cudnn_weighted_ms: f64,
    kiln_network_ms: f64,
    /// The same graph with programmatic dependent launch off (every kernel waits for the end
    /// of the one before it).
    kiln_network_serial_ms: f64,
    cudnn_network_ms: f64,
    worst_ratio: f64,
    worst_error: f64,
    disagreements: usize,
    /// Sum of ln(kiln / cuDNN) over the distinct layers, and their number: the geometric mean.
    log_ratio_sum: f64,
    layer_count: usize,
}

impl ConfigResult {
    /// Per-layer geometric mean of kiln / cuDNN.
    fn geomean(&self) -> f64 {
        (self.log_ratio_sum / self.layer_count.max(1) as f64).exp()
    }
}

/// One configuration's distinct layers, kiln against cuDNN, as an SVG chart.
fn layer_chart(c: &ConfigResult) -> String {
    let groups: Vec<crate::svg::Group> = c
        .layers
        .iter()
        .map(|(name, k, cu)| crate::svg::Group {
            label: name.clone(),
            values: vec![Some(k * 1e3), Some(cu * 1e3)],
        })
        .collect();
    crate::svg::grouped_bars(
        &format!("ResNet-50 layers, {}: us per call", c.label),
        &["kiln", "cuDNN"],
        &groups,
        "us",
    )
}

/// cuDNN's fastest way to run `p` in any of `layouts`: for each layout, three searches (their
/// picks vary between runs), every distinct pick timed GPU-only, the fastest kept.
#[allow(clippy::too_many_arguments)]
fn cudnn_best<'a>(
    ctx: &Context,
    cudnn: &'a Cudnn,
    case: &Case,
    p: &ConvProblem,
    kiln_bufs: (&DeviceBuffer, &DeviceBuffer, &DeviceBuffer),
    workspace: &DeviceBuffer,
    seed: u64,
    replays: usize,
) -> Result<CudnnBest<'a>, Box<dyn std::error::Error>> {
    let mut best: Option<CudnnBest<'a>> = None;
    let mut reference = None;
    let mut skipped = Vec::new();
    for &layout in case.cudnn_layouts {
        let q = ConvProblem::new(ConvSpec {
            layouts: [layout; 3],
            ..p.spec()
        })?;
        let bufs: [std::rc::Rc<DeviceBuffer>; 3] = if layout == case.layout {
            // Same layout as kiln: the same inputs, so the outputs can be compared.
            [
                std::rc::Rc::new(copy_of(ctx, kiln_bufs.0)?),
                std::rc::Rc::new(copy_of(ctx, kiln_bufs.1)?),
                std::rc::Rc::new(ctx.device().alloc(kiln_bufs.2.bytes())?),
            ]
        } else {
            [
                std::rc::Rc::new(random_tensor(ctx, &q, 0, seed + 7)?),
                std::rc::Rc::new(random_tensor(ctx, &q, 1, seed + 8)?),
                std::rc::Rc::new(ctx.device().alloc(kiln_bufs.2.bytes())?),
            ]
        };
        let (x, w, y) = (
            bufs[0].device_ptr(),
            bufs[1].device_ptr(),
            bufs[2].device_ptr(),
        );
        let (wsp, wsn) = (workspace.device_ptr(), workspace.bytes() as usize);
        // A layout cuDNN's legacy API has no algorithm for (FP32 NHWC with FMA math for some
        // layers) is skipped; the other layout stands for cuDNN.
        let mut conv = match CudnnConv::new(cudnn, &q, case.cudnn_math, x, w, y, wsp, wsn) {
            Ok(c) => c,
            Err(e) => {
                skipped.push(format!("{}: {e}", layout.name()));
                continue;
            }
        };
        // Every algorithm any of three searches ran is a candidate: cuDNN's own ranking
        // times single calls, so for small layers its first pick is often not its fastest.
        let mut picks: Vec<crate::cudnn::CudnnAlgo> = Vec::new();
        for _ in 0..3 {
            for a in conv.search(x, w, y, wsp, wsn)? {
                if !picks.contains(&a) {
                    picks.push(a);
                }
            }
        }
        if layout == case.layout {
            // cuDNN's output on kiln's inputs, for the agreement check (whichever layout ends
            // up fastest).
            poison(&bufs[2])?;
            conv.run(0, x, w, y, wsp).map_err(cudnn_err)?;
            reference = Some(download(&bufs[2], p.data_types()[0])?);
        }
        for algo in picks {
            conv.set(algo)?;
            let (t, _) = time_gpu_only_fitted(ctx.device(), 5, |s, _| {
                conv.run(s.raw(), x, w, y, wsp).map_err(cudnn_err)
            })?;
            let better = best.as_ref().is_none_or(|b| t.median_ms < b.ms);
            if better {
                // Each layout has its own descriptors; keep the conv with the winning algo set.
                let mut kept = CudnnConv::new(cudnn, &q, case.cudnn_math, x, w, y, wsp, wsn)?;
                kept.set(algo)?;
                best = Some(CudnnBest {
                    conv: kept,
                    layout,
                    ms: t.median_ms,
                    bufs: bufs.clone(),
                    reference: None,
                });
            }
        }
    }
    let mut best = best.ok_or_else(|| {
        format!(
            "cuDNN runs {} in no layout: {}",
            p.find_db_key(),
            skipped.join("; ")
        )
    })?;
    // The winner timed exactly as kiln is: GRAPH_CALLS calls per graph, `replays` replays.
    let (x, w, y) = (
        best.bufs[0].device_ptr(),
        best.bufs[1].device_ptr(),
        best.bufs[2].device_ptr(),
    );
    best.ms = time_gpu_only(ctx.device(), GRAPH_CALLS, replays, |s, _| {
        best.conv
            .run(s.raw(), x, w, y, workspace.device_ptr())
            .map_err(cudnn_err)
    })?
    .0
    .median_ms;
    best.reference = reference;
    Ok(best)
}

/// A new device buffer with `b`'s contents.
fn copy_of(ctx: &Context, b: &DeviceBuffer) -> Result<DeviceBuffer, RunError> {
    let mut host = vec![0u8; b.bytes() as usize];
    ctx.device().synchronize()?;
    b.download(&mut host)?;
    let c = ctx.device().alloc(b.bytes())?;
    c.upload(&host)?;
    Ok(c)
}

#[allow(clippy::too_many_arguments)]
fn bench_config(
    ctx: &Context,
    cudnn: &Cudnn,
    workspace: &DeviceBuffer,
    case: &Case,
    n: u32,
    net: Network,
    replays: usize,
) -> Result<ConfigResult, Box<dyn std::error::Error>> {
    let be = ctx.device();
    let with_math = |layers: Vec<kiln::harness::networks::Layer>| {
        layers
            .into_iter()
            .map(|mut l| {
                l.problem = l.problem.with_math(case.math);
                l
            })
            .collect::<Vec<_>>()
    };
    let all = with_math(net.all);
    let unique = with_math(net.unique);
    let mut layers = Vec::new();
    for (i, l) in unique.iter().enumerate() {
        let p = l.problem;
        let seed = 100 * i as u64;
        let xs = [
            random_tensor(ctx, &p, 0, seed)?,
            random_tensor(ctx, &p, 0, seed + 1)?,
            random_tensor(ctx, &p, 0, seed + 2)?,
        ];
        let w = random_tensor(ctx, &p, 1, seed + 3)?;
        let candidate = *ctx.find_solutions(&p)?.best();
        let invoker = ctx.prepare(&p, &candidate.variant)?;
        layers.push(LayerBench {
            name: l.name.clone(),
            problem: p,
            count: all
                .iter()
                .filter(|a| a.problem.find_db_key() == p.find_db_key())
                .count(),
            xs,
            w,
            y: be.alloc(p.byte_counts()[2])?,
            ws: workspace_for(be, &invoker)?,
            invoker,
            candidate,
        });
    }
    let mut rows = String::new();
    let mut r = ConfigResult {
        label: format!("{} N={n}", case.label),
        rows: String::new(),
        layers: Vec::new(),
        kiln_unique_ms: 0.0,
        cudnn_unique_ms: 0.0,
        kiln_weighted_ms: 0.0,
        cudnn_weighted_ms: 0.0,
        kiln_network_ms: 0.0,
        kiln_network_serial_ms: 0.0,
        cudnn_network_ms: 0.0,
        worst_ratio: 0.0,
        worst_error: 0.0,
        disagreements: 0,
        log_ratio_sum: 0.0,
        layer_count: 0,
    };
    let mut bests = Vec::new();
    for (i, l) in layers.iter().enumerate() {
        let stream = Stream::default();
        let best = cudnn_best(
            ctx,
            cudnn,
            case,
            &l.problem,
            (&l.xs[0], &l.w, &l.y),
            workspace,
            1000 * i as u64,
            replays,
        )?;
        // Same inputs through both (cuDNN in kiln's layout): outputs compared at the tolerance
        // kiln holds the problem to.
        let error = match &best.reference {
            Some(reference) => {
                poison(&l.y)?;
                ctx.run(&l.invoker, &l.xs[0], &l.w, &l.y, l.ws.as_ref(), &stream)?;
                relative_error(&download(&l.y, case.dtype)?, reference)
            }
            None => f64::NAN,
        };
        let agree = error.is_nan() || error <= tolerance(&l.problem);
        r.disagreements += usize::from(!agree);
        if error.is_finite() {
            r.worst_error = r.worst_error.max(error);
        }
        let (kiln_t, _) = time_gpu_only(be, GRAPH_CALLS, replays, |s, i| {
            ctx.run(&l.invoker, &l.xs[i % 3], &l.w, &l.y, l.ws.as_ref(), s)
        })?;
        let (k, c) = (kiln_t.median_ms, best.ms);
        r.kiln_unique_ms += k;
        r.cudnn_unique_ms += c;
        r.kiln_weighted_ms += k * l.count as f64;
        r.cudnn_weighted_ms += c * l.count as f64;
        r.worst_ratio = r.worst_ratio.max(k / c);
        r.log_ratio_sum += (k / c).ln();
        r.layer_count += 1;
        r.layers.push((l.name.clone(), k, c));
        writeln!(
            rows,
            "| {} | `{}` | {} | {} [{}] | {:.1} | {} ({}) | {:.1} | {:.2} | {}{} |",
            l.name,
            l.problem.find_db_key(),
            l.count,
            l.candidate.variant.solver.id(),
            l.candidate.variant.params,
            k * 1e3,
            best.conv.chosen.describe(),
            best.layout.name(),
            c * 1e3,
            k / c,
            if error.is_nan() {
                "-".to_string()
            } else {
                format!("{error:.1e}")
            },
            if agree { "" } else { " DISAGREE" }
        )?;
        bests.push(best);
    }
    // The whole network as one graph: 53 launches back to back, distinct layers reusing their
    // buffers, replayed.
    let order: Vec<usize> = all
        .iter()
        .map(|a| {
            layers
                .iter()
                .position(|l| l.problem.find_db_key() == a.problem.find_db_key())
                .unwrap_or(0)
        })
        .collect();
    let network = |programmatic: bool| {
        ctx.set_programmatic_launch(programmatic);
        let t = time_gpu_only(be, 1, replays, |s, _| {
            for &j in &order {
                let l = &layers[j];
                ctx.run(&l.invoker, &l.xs[0], &l.w, &l.y, l.ws.as_ref(), s)?;
            }
            Ok(())
        });
        ctx.set_programmatic_launch(true);
        t.map(|t| t.0.median_ms)
    };
    r.kiln_network_serial_ms = network(false)?;
    r.kiln_network_ms = network(true)?;
    r.cudnn_network_ms = time_gpu_only(be, 1, replays, |s, _| {
        for &j in &order {
            let b = &bests[j];
            b.conv
                .run(
                    s.raw(),
                    b.bufs[0].device_ptr(),
                    b.bufs[1].device_ptr(),
                    b.bufs[2].device_ptr(),
                    workspace.device_ptr(),
                )
                .map_err(cudnn_err)?;
        }
        Ok(())
    })?
    .0
    .median_ms;
    r.rows = rows;
    Ok(r)
}

/// Today's UTC date, `YYYY-MM-DD` (days-to-civil conversion; no date crate needed for this).
pub(super) fn utc_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Prints the report and writes it to `out`.
pub(crate) fn finish(report: &str, out: Option<&std::path::Path>) -> CliResult {
    kiln::out!("{report}");
    if let Some(out) = out {
        super::write_atomic(out, report)?;
    }
    Ok(())
}

/// `kiln-tools bench`.
pub fn run(a: &BenchArgs) -> CliResult {
    if let Some(model) = &a.net {
        return super::bench_net::run(a, model);
    }
    let t_open = Instant::now();
    let ctx = a.device.context()?;
    let opened_ms = t_open.elapsed().as_secs_f64() * 1e3;
    let info = ctx.device().info().clone();
    let (target, exact) = (ctx.target(), ctx.exact_target());
    let mut r = String::new();
    writeln!(
        r,
        "# kiln-tools bench: {} ({}), {}\n",
        info.name,
        info.arch,
        utc_date()
    )?;
    writeln!(
        r,
        "Device {} ({}, {} SMs, {}), embedded target {}{}; kiln {}; context opened in {opened_ms:.1} ms (cuInit + primary context, not counted below).\n",
        info.spec,
        info.arch,
        info.compute_units,
        info.uuid,
        target.basename,
        if exact { "" } else { " (closest SM count)" },
        env!("CARGO_PKG_VERSION"),
    )?;

    if !a.problems.is_empty() {
        return bench_lists(a, &ctx, r);
    }

    // (b) Cold start first: nothing in this process has touched the embedded tables yet.
    let p = cold_problem()?;
    let cs = cold_start(&ctx, &p)?;
    writeln!(r, "## Cold start: first convolution in a fresh process\n")?;
    writeln!(
        r,
        "Problem `{}`, solver {} [{}]. kiln takes the code object from the binary; the JIT column compiles the same kernel source with the same options through NVRTC, as a runtime without embedded code objects must.\n",
        p.find_db_key(),
        cs.ranked.variant.solver.id(),
        cs.ranked.variant.params
    )?;
    let kiln_total = cs.total_s();
    match jit_start(&ctx, &p, &cs.ranked) {
        Ok(j) => {
            let jit_total = j.load_s + j.compile_s + j.module_load_s + j.first_launch_s;
            writeln!(r, "| phase | kiln (embedded), ms | JIT ({}), ms |", j.nvrtc)?;
            writeln!(r, "|---|---:|---:|")?;
            let ms = |s: f64| format!("{:.3}", s * 1e3);
            for (phase, k, jv) in [
                (
                    "resolve (find-db, perf-db)",
                    ms(cs.resolve_s),
                    ms(cs.resolve_s),
                ),
                (
                    "kdb decode + sha256 / NVRTC load",
                    ms(cs.prepare.decompress_s),
                    ms(j.load_s),
                ),
                (
                    "ELF checks / NVRTC compile",
                    ms(cs.prepare.verify_s),
                    ms(j.compile_s),
                ),
                (
                    "module load + function (+ parameter builder for kiln)",
                    ms(cs.prepare.module_load_s + cs.prepare.invoker_s),
                    ms(j.module_load_s),
                ),
                (
                    "first launch + synchronize",
                    ms(cs.first_launch_s),
                    ms(j.first_launch_s),
                ),
                ("total", ms(kiln_total), ms(jit_total + cs.resolve_s)),
            ] {
                writeln!(r, "| {phase} | {k} | {jv} |")?;
            }
            writeln!(
                r,
                "\nThe JIT path compiled {} (kiln's own kernel source: CUTLASS kernels need their headers, which a deployed runtime does not carry) into a {} B cubin; its module load includes the same ELF checks kiln runs. It ran second, so the driver was already warm for it.\n",
                j.kernel, j.cubin_bytes
            )?;
        }
        Err(e) => {
            writeln!(r, "kiln: resolve {:.3} ms, decode {:.3} ms, checks {:.3} ms, module load {:.3} ms, first launch {:.3} ms, total {:.3} ms. JIT comparison not run: {e}\n",
                cs.resolve_s * 1e3, cs.prepare.decompress_s * 1e3, cs.prepare.verify_s * 1e3,
                (cs.prepare.module_load_s + cs.prepare.invoker_s) * 1e3, cs.first_launch_s * 1e3, kiln_total * 1e3)?;
        }
    }

    // Module load of every library (CUTLASS) code object: the stripped cubins' load bound.
    let loads = library_module_loads(&ctx)?;
    if !loads.is_empty() {
        let mut medians: Vec<f64> = loads.iter().map(|l| l.1).collect();
        medians.sort_by(f64::total_cmp);
        let slowest = |key: fn(&ModuleLoad) -> f64| {
            loads
                .iter()
                .max_by(|a, b| key(a).total_cmp(&key(b)))
                .cloned()
                .unwrap_or_default()
        };
        let (worst, worst_ms, _, worst_bytes) = slowest(|l| l.1);
        let (single, _, single_ms, single_bytes) = slowest(|l| l.2);
        writeln!(r, "## Module load of every CUTLASS code object\n")?;
        writeln!(
            r,
            "{} code objects, each loaded {LOADS_PER_OBJECT} times (decoded, sha256- and ELF-checked, then `cuModuleLoadData` + function lookup, timed on the host, the module unloaded between loads). Per object, the median load: median over objects {:.3} ms, p90 {:.3} ms, slowest {:.3} ms ({worst}, {worst_bytes} B). Slowest single load: {:.3} ms ({single}, {single_bytes} B).\n",
            loads.len(),
            medians[medians.len() / 2],
            medians[(medians.len() * 9 / 10).min(medians.len() - 1)],
            worst_ms,
            single_ms,
        )?;
    }

    // (c) Lookup cost on the host.
    writeln!(
        r,
        "## Lookup cost (host CPU, warm tables, median of 7 rounds)\n"
    )?;
    writeln!(r, "| lookup | ns per call |")?;
    writeln!(r, "|---|---:|")?;
    let net = resnet50(1, DataType::Fp32, Layout::Nchw, true)?;
    let problems: Vec<ConvProblem> = net.iter().map(|l| l.problem).collect();
    let per = |ns: f64| ns / problems.len() as f64;
    let find_ns = per(host_ns(7, 2000, || {
        for q in &problems {
            std::hint::black_box(target.find_record(std::hint::black_box(q)).ok());
        }
    }));
    let perf_ns = per(host_ns(7, 2000, || {
        for q in &problems {
            std::hint::black_box(target.perf_params(q, "ConvImplicitGemmFwd").ok());
        }
    }));
    let rank_ns = per(host_ns(7, 500, || {
        for q in &problems {
            std::hint::black_box(kiln::resolve::resolve(target, q).ok());
        }
    }));
    let unseen = ConvProblem::new(ConvSpec {
        n: 3,
        c: 96,
        k: 80,
        input: [1, 37, 37],
        filter: [1, 3, 3],
        pad: [0, 1, 1],
        ..ConvSpec::default()
    })?;
    let fallback_ns = host_ns(7, 500, || {
        std::hint::black_box(kiln::resolve::resolve(target, std::hint::black_box(&unseen)).ok());
    });
    let invoker_ns = host_ns(7, 2000, || {
        std::hint::black_box(ctx.prepare(&p, &cs.ranked.variant).ok());
    });
    for (what, ns) in [
        ("find-db record (ResNet-50 layers, FP32 N=1)", find_ns),
        ("perf-db record", perf_ns),
        (
            "full resolve: find-db + perf-db + applicability (`resolve`)",
            rank_ns,
        ),
        (
            "resolve of a problem not in the find-db (fallback)",
            fallback_ns,
        ),
        ("invoker cache hit (`prepare` again)", invoker_ns),
    ] {
        writeln!(r, "| {what} | {ns:.0} |")?;
    }

    // (a) Every ResNet-50 layer against cuDNN.
    let cudnn = match Cudnn::open() {
        Ok(c) => c,
        Err(e) => {
            // Keep what was measured; say why the comparison is missing.
            writeln!(r, "\n## ResNet-50 against cuDNN: not run\n\n{e}")?;
            finish(&r, a.out.as_deref())?;
            return Err(format!("cuDNN comparison not run: {e}").into());
        }
    };
    writeln!(
        r,
        "\n## ResNet-50 conv layers: kiln against cuDNN {}.{}.{}\n",
        cudnn.version / 10000,
        cudnn.version / 100 % 100,
        cudnn.version % 100
    )?;
    writeln!(r, "Same process. kiln runs the solution its embedded find-db ranks first (perf config from its perf-db). cuDNN is set up as PyTorch sets it up: tensor-op math for FP16/BF16, FMA math for FP32 without TF32, default math when TF32 is allowed; for each layout listed, three `cudnnFindConvolutionForwardAlgorithmEx` searches (workspace <= {} MiB), every algorithm they ran timed by the method below, the fastest kept and named (cuDNN's own ranking times single calls and often puts a slower algorithm first on small layers). Every time is GPU-only, by the same method for both: {}, {} calls per graph (inputs rotated over 3 copies for kiln), median of {} replays. `x` = count of the layer in the network; `ratio` = kiln / cuDNN; `error` = relative difference of the two outputs on the same inputs (cuDNN run in kiln's layout for it, whichever layout was faster). The network row is the 53 layers captured in one graph, replayed, with kiln's programmatic dependent launch on (its sm_90 kernels may be scheduled while the previous layer finishes, and wait for it before touching memory) and off.\n", a.cudnn_workspace_mib, GpuMethod::Graph.describe(), GRAPH_CALLS, a.replays)?;
    let workspace = ctx.device().alloc((a.cudnn_workspace_mib as u64) << 20)?;
    let mut summary = Vec::new();
    for case in CASES
        .iter()
        .filter(|c| a.cases.is_empty() || a.cases.iter().any(|n| n == c.name))
    {
        for &n in &a.batch {
            eprintln!("bench: {} N={n}", case.name);
            let net = Network::resnet50(case, n)?;
            let c = bench_config(&ctx, &cudnn, &workspace, case, n, net, a.replays)?;
            writeln!(r, "### {}\n", c.label)?;
            writeln!(r, "| layer | problem | x | kiln solver [params] | kiln us | cuDNN algorithm, math (layout) | cuDNN us | ratio | error |")?;
            writeln!(r, "|---|---|---:|---|---:|---|---:|---:|---|")?;
            r.push_str(&c.rows);
            writeln!(
                r,
                "\n23 unique layers: kiln {:.3} ms, cuDNN {:.3} ms ({:.2}x; worst layer {:.2}x). 53-layer sum: kiln {:.3} ms, cuDNN {:.3} ms ({:.2}x). Network graph: kiln {:.3} ms ({:.3} ms without programmatic dependent launch), cuDNN {:.3} ms ({:.2}x).{}\n",
                c.kiln_unique_ms, c.cudnn_unique_ms, c.kiln_unique_ms / c.cudnn_unique_ms, c.worst_ratio,
                c.kiln_weighted_ms, c.cudnn_weighted_ms, c.kiln_weighted_ms / c.cudnn_weighted_ms,
                c.kiln_network_ms, c.kiln_network_serial_ms, c.cudnn_network_ms, c.kiln_network_ms / c.cudnn_network_ms,
                if c.disagreements > 0 { format!(" {} layers' outputs DISAGREE.", c.disagreements) } else { format!(" Outputs agree within kiln's tolerance (worst {:.1e}).", c.worst_error) }
            )?;
            // Keep what was measured if a later configuration fails; each configuration's
            // layers as a chart beside the report.
            if let Some(out) = &a.out {
                super::write_atomic(out, &r)?;
                let svg = out.with_extension(format!("{}-n{n}.svg", case.name));
                super::write_atomic(&svg, layer_chart(&c))?;
            }
            summary.push(c);
        }
    }
    writeln!(
        r,
        "## Summary: ResNet-50 convolutions, GPU-only, kiln / cuDNN\n"
    )?;
    writeln!(r, "| configuration | 23 unique: kiln ms | cuDNN ms | ratio | worst layer | network graph: kiln ms | kiln without PDL | cuDNN ms | ratio | worst error vs cuDNN |")?;
    writeln!(r, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    let mut failed = 0;
    for c in &summary {
        writeln!(
            r,
            "| {} | {:.3} | {:.3} | {:.2} | {:.2} | {:.3} | {:.3} | {:.3} | {:.2} | {:.1e} |",
            c.label,
            c.kiln_unique_ms,
            c.cudnn_unique_ms,
            c.kiln_unique_ms / c.cudnn_unique_ms,
            c.worst_ratio,
            c.kiln_network_ms,
            c.kiln_network_serial_ms,
            c.cudnn_network_ms,
            c.kiln_network_ms / c.cudnn_network_ms,
            c.worst_error
        )?;
        failed += c.disagreements;
    }
    finish(&r, a.out.as_deref())?;
    if failed > 0 {
        return Err(format!("{failed} layers: kiln and cuDNN outputs disagree").into());
    }
    Ok(())
}

/// `--problems`: each list against cuDNN, per case and batch, with the per-layer geometric mean.
fn bench_lists(a: &BenchArgs, ctx: &Context, mut r: String) -> CliResult {
    let cudnn = Cudnn::open().map_err(|e| format!("cuDNN comparison not run: {e}"))?;
    writeln!(
        r,
        "Problem lists against cuDNN {}.{}.{}, GPU-only ({}, {} calls per graph, median of {} replays), cuDNN set up as for ResNet-50 (the fastest of every algorithm its searches ran). Each list's distinct 2-D layers in the case's type, layout and batch; kiln runs what it resolves (find-db, else the nearest measured problem, else the cost model). `geomean` = per-layer geometric mean of kiln / cuDNN.\n",
        cudnn.version / 10000,
        cudnn.version / 100 % 100,
        cudnn.version % 100,
        GpuMethod::Graph.describe(),
        GRAPH_CALLS,
        a.replays
    )?;
    let workspace = ctx.device().alloc((a.cudnn_workspace_mib as u64) << 20)?;
    let mut summary = Vec::new();
    let mut failed = 0;
    for file in &a.problems {
        let keys = super::find::read_problem_list(file)?;
        let name = file.file_stem().map_or_else(
            || file.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        for case in CASES
            .iter()
            .filter(|c| a.cases.is_empty() || a.cases.iter().any(|n| n == c.name))
        {
            for &n in &a.batch {
                eprintln!("bench: {name} {} N={n}", case.name);
                let net = Network::from_list(&keys, case, n)?;
                let mut c = bench_config(ctx, &cudnn, &workspace, case, n, net, a.replays)?;
                c.label = format!("{name} {}", c.label);
                writeln!(r, "### {}\n", c.label)?;
                writeln!(r, "| layer | problem | x | kiln solver [params] | kiln us | cuDNN algorithm, math (layout) | cuDNN us | ratio | error |")?;
                writeln!(r, "|---|---|---:|---|---:|---|---:|---:|---|")?;
                r.push_str(&c.rows);
                writeln!(
                    r,
                    "\n{} distinct layers: geomean {:.2}x, sum kiln {:.3} ms vs cuDNN {:.3} ms ({:.2}x), worst layer {:.2}x.{}\n",
                    c.layer_count,
                    c.geomean(),
                    c.kiln_unique_ms,
                    c.cudnn_unique_ms,
                    c.kiln_unique_ms / c.cudnn_unique_ms,
                    c.worst_ratio,
                    if c.disagreements > 0 { format!(" {} layers' outputs DISAGREE.", c.disagreements) } else { String::new() }
                )?;
                failed += c.disagreements;
                summary.push(c);
                if let Some(out) = &a.out {
                    super::write_atomic(out, &r)?;
                }
            }
        }
    }
    writeln!(r, "## Summary: problem lists, GPU-only, kiln / cuDNN\n")?;
    writeln!(r, "| list, configuration | layers | geomean | sum: kiln ms | cuDNN ms | ratio | worst layer |")?;
    writeln!(r, "|---|---:|---:|---:|---:|---:|---:|")?;
    for c in &summary {
        writeln!(
            r,
            "| {} | {} | {:.2} | {:.3} | {:.3} | {:.2} | {:.2} |",
            c.label,
            c.layer_count,
            c.geomean(),
            c.kiln_unique_ms,
            c.cudnn_unique_ms,
            c.kiln_unique_ms / c.cudnn_unique_ms,
            c.worst_ratio
        )?;
    }
    finish(&r, a.out.as_deref())?;
    if failed > 0 {
        return Err(format!("{failed} layers: kiln and cuDNN outputs disagree").into());
    }
    Ok(())
}

#[cfg(test)]
mod header_tests {
    #[test]
    fn the_jit_path_has_every_kernel_header_the_kdb_build_has() {
        assert_eq!(
            super::KERNEL_HEADERS.map(|(name, _)| name),
            kiln_embed::kdbbuild::KILN_HEADERS
        );
    }
}
