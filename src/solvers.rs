//! kiln's convolution solvers: which problems each applies to, its workspace, how to launch its
//! kernel (the invoker's grid, block and arguments), and a cost model for ranking when the
//! find-db has no record. The kernels and perf configs themselves come from
//! `kernels/manifest.toml` (compiled into every kdb; see [`manifest`]).

use kiln_format::{ConvProblem, DataType, Direction};

/// A solver as `kernels/manifest.toml` describes it (emitted by the build).
#[derive(Debug)]
pub struct ManifestSolver {
    /// kiln's solver id.
    pub id: &'static str,
    /// MIOpen algorithm name.
    pub algorithm: &'static str,
    /// Kernel source file (`kernel_name` = this + `.o`).
    pub source: &'static str,
    /// Kernel entry point.
    pub function: &'static str,
    /// Compile-option template (`{0}`, `{1}` ... = perf-config values).
    pub options: &'static str,
    /// Precompiled perf configs.
    pub params: &'static [&'static str],
}

/// The manifest's solvers.
pub fn manifest() -> &'static [ManifestSolver] {
    crate::embedded::kernel_manifest()
}

/// A manifest solver by id.
pub fn by_id(id: &str) -> Option<&'static ManifestSolver> {
    manifest().iter().find(|s| s.id == id)
}

/// Mirror of `KilnConvArgs` in `kernels/kiln_gpu.h`: the problem as every kernel receives it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelArgs {
    /// Batch, input channels, output channels, groups.
    pub n: i32,
    /// Input channels.
    pub c: i32,
    /// Output channels.
    pub k: i32,
    /// Groups.
    pub groups: i32,
    /// Input `[d, h, w]`.
    pub input: [i32; 3],
    /// Filter `[d, h, w]`.
    pub filter: [i32; 3],
    /// Output `[d, h, w]`.
    pub output: [i32; 3],
    /// Padding `[d, h, w]`.
    pub pad: [i32; 3],
    /// Stride `[d, h, w]`.
    pub stride: [i32; 3],
    /// Dilation `[d, h, w]`.
    pub dilation: [i32; 3],
    /// 1 for channels-last tensors.
    pub channels_last: i32,
    /// Padding to 96 bytes.
    pub reserved: i32,
}

impl KernelArgs {
    /// The arguments of a problem (sizes are bounded by `MAX_DIM`, so they fit in i32).
    pub fn of(p: &ConvProblem) -> KernelArgs {
        let c = |v: [u32; 3]| v.map(|x| x as i32);
        KernelArgs {
            n: p.n() as i32,
            c: p.c() as i32,
            k: p.k() as i32,
            groups: p.groups() as i32,
            input: c(p.input()),
            filter: c(p.filter()),
            output: c(p.output()),
            pad: c(p.pad()),
            stride: c(p.stride()),
            dilation: c(p.dilation()),
            channels_last: p.layouts()[0].channels_last() as i32,
            reserved: 0,
        }
    }
}

/// Grid and block of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDims {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
}

/// Why a solver does not apply.
pub type NotApplicable = &'static str;

fn common_checks(p: &ConvProblem) -> Result<(), NotApplicable> {
    if p.direction() != Direction::Forward {
        return Err("kiln's kernels are forward only");
    }
    let t = p.data_types();
    if !(t[0] == t[1] && t[1] == t[2]) {
        return Err("mixed data types");
    }
    if !matches!(t[0], DataType::Fp32 | DataType::Fp16 | DataType::Bf16) {
        return Err("data type not FP32, FP16 or BF16");
    }
    let l = p.layouts();
    if !(l[0] == l[1] && l[1] == l[2]) {
        return Err("tensors in different layouts");
    }
    if p.spec().cast_types.iter().any(Option::is_some) {
        return Err("cast types");
    }
    let [x, w, y] = p.element_counts();
    if x.max(w).max(y) >= i32::MAX as u64 * 64 {
        return Err("tensor too large for 32-bit per-dimension indexing");
    }
    Ok(())
}

/// Most values a perf config holds.
const MAX_PARAM_VALUES: usize = 8;

/// The values of a perf config (on the stack: ranking never allocates).
fn values(params: &str) -> heapless::Vec<u32, MAX_PARAM_VALUES> {
    params
        .split(',')
        .filter_map(|v| v.parse().ok())
        .take(MAX_PARAM_VALUES)
        .collect()
}

/// Value `i` of a perf config's values; 1 where it is missing or 0 (an applicable config has
/// every value, and 1 keeps a malformed one from dividing by zero).
fn value_at(values: &[u32], i: usize) -> u32 {
    values.get(i).copied().unwrap_or(1).max(1)
}

/// Tiled solver bounds, as in `kernels/conv_tiled.cpp`.
const TILED_PATCH_MAX: u32 = 2048;
const TILED_FILTER_MAX: u32 = 1024;

/// Whether `solver` applies to `p` with perf config `params`.
pub fn applicable(
    solver: &ManifestSolver,
    p: &ConvProblem,
    params: &str,
) -> Result<(), NotApplicable> {
    common_checks(p)?;
    match solver.id {
        "ConvDirectNaiveFwd" => {
            let out = p.element_counts()[2];
            if out.div_ceil(256) > i32::MAX as u64 {
                return Err("too many output elements for one grid");
            }
            Ok(())
        }
        "ConvDirectTiledFwd" => {
            if p.spatial_dims() != 2 || p.layouts()[0].channels_last() {
                return Err("tiled direct is 2-D channels-first only");
            }
            let [th, tw, kpb] = match values(params).as_slice() {
                &[th, tw, kpb] if th > 0 && tw > 0 && kpb > 0 => [th, tw, kpb],
                _ => return Err("perf config is not tile_h,tile_w,k_per_block"),
            };
            let ph = (th - 1) * p.stride()[1] + (p.filter()[1] - 1) * p.dilation()[1] + 1;
            let pw = (tw - 1) * p.stride()[2] + (p.filter()[2] - 1) * p.dilation()[2] + 1;
            if ph as u64 * pw as u64 > TILED_PATCH_MAX as u64 {
                return Err("input patch does not fit in shared memory");
            }
            if kpb * p.filter()[1] * p.filter()[2] > TILED_FILTER_MAX {
                return Err("filters do not fit in shared memory");
            }
            if p.n() > 65535 {
                return Err("batch above 65535 (grid z)");
            }
            Ok(())
        }
        "ConvImplicitGemmFwd" | "ConvGemm1x1Fwd" => {
            if !matches!(values(params).as_slice(), &[m, n, k] if m > 0 && n > 0 && k > 0) {
                return Err("perf config is not block_m,block_n,block_k");
            }
            if solver.id == "ConvGemm1x1Fwd"
                && (p.filter() != [1, 1, 1] || p.stride() != [1, 1, 1] || p.pad() != [0, 0, 0])
            {
                return Err("1x1 GEMM needs a 1x1 filter, stride 1 and no padding");
            }
            if p.groups() > 65535 {
                return Err("more than 65535 groups (grid z)");
            }
            Ok(())
        }
        _ => Err("unknown solver"),
    }
}

/// Launch dimensions of `solver` with `params` for `p` (call only when applicable).
pub fn launch_dims(solver: &ManifestSolver, p: &ConvProblem, params: &str) -> LaunchDims {
    let v = values(params);
    let at = |i: usize| value_at(&v, i);
    let kpg = p.k() / p.groups();
    match solver.id {
        "ConvDirectTiledFwd" => {
            let (th, tw, kpb) = (at(0), at(1), at(2));
            let [_, oh, ow] = p.output();
            LaunchDims {
                grid: [
                    oh.div_ceil(th) * ow.div_ceil(tw),
                    p.groups() * kpg.div_ceil(kpb),
                    p.n(),
                ],
                block: [th * tw, 1, 1],
            }
        }
        "ConvImplicitGemmFwd" | "ConvGemm1x1Fwd" => {
            let (bm, bn) = (at(0), at(1));
            let osp: u64 = p.output().iter().map(|&x| x as u64).product();
            let cols = p.n() as u64 * osp;
            LaunchDims {
                grid: [
                    cols.div_ceil(bn as u64) as u32,
                    kpg.div_ceil(bm),
                    p.groups(),
                ],
                block: [256, 1, 1],
            }
        }
        _ => {
            let out = p.element_counts()[2];
            LaunchDims {
                grid: [out.div_ceil(256) as u32, 1, 1],
                block: [256, 1, 1],
            }
        }
    }
}

/// Workspace bytes (none of kiln's solvers needs one).
pub fn workspace(_solver: &ManifestSolver, _p: &ConvProblem) -> u64 {
    0
}

/// Estimated time in ms of `solver` with perf config `params`, for ranking without
/// measurements: work / modelled throughput, where a tiled solver only gets the share of its
/// tile that the problem fills (a depthwise problem has one output channel per group, so a GEMM
/// tile 32 channels tall is 1/32 busy). Used when neither the find-db nor a nearby measured
/// problem says more (MIOpen's immediate-mode fallback plays the same role).
pub fn estimated_ms(solver: &ManifestSolver, p: &ConvProblem, params: &str) -> f64 {
    let macs = kiln_format::heuristic::macs(p);
    let kpg = (p.k() / p.groups().max(1)).max(1) as f64;
    let fill = |size: f64, tile: f64| size / ((size / tile).ceil() * tile);
    let v = values(params);
    let tile = |i: usize| value_at(&v, i) as f64;
    let (gflops, utilisation) = match solver.id {
        "ConvGemm1x1Fwd" => (9000.0, fill(kpg, tile(0))),
        "ConvImplicitGemmFwd" => (6000.0, fill(kpg, tile(0))),
        "ConvDirectTiledFwd" => (2500.0, fill(kpg, tile(2))),
        _ => (700.0, 1.0),
    };
    2.0 * macs / (gflops * utilisation * 1e6) + 0.004
}

/// A perf config for `p` without a perf-db record: the largest tile that still gives the GPU
/// enough blocks, among the applicable precompiled configs.
pub fn default_params(solver: &ManifestSolver, p: &ConvProblem) -> Option<&'static str> {
    let applicable = || {
        solver
            .params
            .iter()
            .copied()
            .filter(|q| applicable(solver, p, q).is_ok())
    };
    let blocks = |q: &str| {
        let d = launch_dims(solver, p, q);
        d.grid.iter().map(|&g| g as u64).product::<u64>()
    };
    let tile = |q: &str| values(q).iter().take(2).map(|&v| v as u64).product::<u64>();
    applicable()
        .filter(|q| blocks(q) >= 256)
        .max_by_key(|q| tile(q))
        .or_else(|| applicable().min_by_key(|q| tile(q)))
}

/// MIOpen-style `kernel_args` of a solver's variant on `arch`.
pub fn kernel_args(solver: &ManifestSolver, dtype: DataType, params: &str, arch: &str) -> String {
    let vals: Vec<&str> = if params.is_empty() {
        Vec::new()
    } else {
        params.split(',').collect()
    };
    let mut opts = solver.options.to_string();
    for (i, v) in vals.iter().enumerate() {
        opts = opts.replace(&format!("{{{i}}}"), v);
    }
    let mut out = format!(" -DKILN_DTYPE_{}", dtype.name());
    if !opts.is_empty() {
        out.push(' ');
        out.push_str(&opts);
    }
    out.push_str(" -mcpu=");
    out.push_str(arch);
    out
}

/// The kdb `kernel_name` of a solver.
pub fn kernel_name(solver: &ManifestSolver) -> String {
    format!("{}.o", solver.source)
}
