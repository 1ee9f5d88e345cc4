//! The selftest: every registered solver and precompiled perf config (split-K values included)
//! on a problem set, each checked against the f64 reference on fresh inputs with the output
//! poisoned, and again with IEEE special values (inf, NaN, subnormals, values near overflow)
//! compared class by class; the standalone operators too. The `kiln selftest` command and the
//! C library's `kiln_selftest` both run it.

use std::collections::BTreeMap;

use kiln_format::{Activation, ConvProblem, ConvSpec, DataType, Fusion, Layout, MathMode};

use super::verify::{tolerance, ProblemCheck};
use crate::context::Context;
use crate::resolve::Variant;

/// The `--solver` name of the standalone operators (pooling, resizing, elementwise, softmax).
pub const OPERATORS: &str = "operators";

/// One run that failed.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The solver's id, or [`OPERATORS`].
    pub solver: &'static str,
    /// Its perf config (empty for an operator).
    pub params: &'static str,
    /// The problem's find-db key, or the operator's description.
    pub problem: String,
    /// The problem's math mode (`None` for an operator).
    pub math: Option<MathMode>,
    /// What was wrong.
    pub error: String,
}

/// What a selftest found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Problems in the set.
    pub problems: usize,
    /// Runs checked (each variant once with random and once with special values counts once).
    pub runs: usize,
    /// Runs that failed.
    pub failures: usize,
    /// Per solver (and [`OPERATORS`]): variants run and failed.
    pub per_solver: BTreeMap<&'static str, (usize, usize)>,
}

impl Report {
    /// Every run passed, and something ran.
    pub fn passed(&self) -> bool {
        self.failures == 0 && self.runs > 0
    }
}

/// A 2-D convolution's shape in the selftest's notation: n, c, k, input [h, w], filter,
/// padding, stride, dilation (each [h, w]) and groups; NCHW FP32 until the caller says.
#[allow(clippy::too_many_arguments)]
pub fn d2(
    n: u32,
    c: u32,
    k: u32,
    hw: [u32; 2],
    f: [u32; 2],
    pad: [u32; 2],
    stride: [u32; 2],
    dil: [u32; 2],
    groups: u32,
) -> ConvSpec {
    ConvSpec {
        n,
        c,
        k,
        input: [1, hw[0], hw[1]],
        filter: [1, f[0], f[1]],
        pad: [0, pad[0], pad[1]],
        stride: [1, stride[0], stride[1]],
        dilation: [1, dil[0], dil[1]],
        groups,
        ..ConvSpec::default()
    }
}

/// A 3-D problem, ungrouped and undilated.
fn d3(
    n: u32,
    c: u32,
    k: u32,
    input: [u32; 3],
    f: [u32; 3],
    pad: [u32; 3],
    stride: [u32; 3],
) -> ConvSpec {
    ConvSpec {
        spatial_dims: 3,
        n,
        c,
        k,
        input,
        filter: f,
        pad,
        stride,
        ..ConvSpec::default()
    }
}

/// The selftest problem set: 2-D and 3-D, both layout families, three types, groups and
/// depthwise, padding, stride, dilation, odd sizes.
pub fn problems() -> Vec<ConvProblem> {
    let shapes = [
        d2(2, 16, 32, [14, 14], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        d2(3, 24, 40, [17, 13], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(2, 8, 12, [23, 19], [5, 3], [2, 0], [2, 1], [1, 2], 1),
        d2(1, 32, 32, [15, 15], [3, 3], [1, 1], [1, 1], [1, 1], 32),
        d2(2, 12, 18, [11, 9], [3, 3], [1, 1], [2, 2], [1, 1], 3),
        d2(1, 3, 16, [33, 31], [7, 7], [3, 3], [2, 2], [1, 1], 1),
        // More stride-2 first layers: 3x3 on odd and even sizes, one channel under an even
        // filter with unequal padding, four channels with none along the height.
        d2(2, 3, 32, [17, 20], [3, 3], [1, 1], [2, 2], [1, 1], 1),
        d2(1, 1, 8, [12, 15], [4, 4], [1, 2], [2, 2], [1, 1], 1),
        d2(1, 4, 24, [10, 9], [5, 5], [0, 2], [2, 2], [1, 1], 1),
        // A stride-1 first layer, and a stride-2 one whose output rows are wider than one
        // Hopper first-layer unit (128 pixels).
        d2(2, 3, 16, [20, 18], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        d2(1, 3, 32, [9, 300], [3, 3], [1, 1], [2, 2], [1, 1], 1),
        // A stride-2 first layer with 12 output channels: the 16-column Hopper tile, 4 of its
        // columns past K.
        d2(1, 3, 12, [9, 20], [3, 3], [1, 1], [2, 2], [1, 1], 1),
        // Depthwise with a channel multiplier of 2 (one input, two outputs per group), 5x5, s2.
        d2(2, 24, 48, [13, 11], [5, 5], [2, 2], [2, 2], [1, 1], 24),
        // Depthwise 5x5 stride 2, 3x3 stride 2 and 7x7 on widths that end strips early.
        d2(2, 40, 40, [17, 15], [5, 5], [2, 2], [2, 2], [1, 1], 40),
        d2(1, 64, 64, [12, 19], [3, 3], [1, 1], [2, 2], [1, 1], 64),
        d2(1, 16, 16, [9, 30], [7, 7], [3, 3], [1, 1], [1, 1], 16),
        // Depthwise with its global pool's sums: blocks of strips that span several 7x7
        // images, and images that span many blocks.
        d2(5, 48, 48, [7, 7], [3, 3], [1, 1], [1, 1], [1, 1], 48),
        d2(3, 32, 32, [58, 56], [3, 3], [1, 1], [2, 2], [1, 1], 32),
        // Depthwise 5x5 stride 1 with 11 output rows: strips of two and four rows end early.
        d2(2, 24, 24, [11, 13], [5, 5], [2, 2], [1, 1], [1, 1], 24),
        d2(4, 64, 64, [8, 8], [3, 3], [2, 2], [1, 1], [2, 2], 1),
        // Output channels that are not a multiple of 8: an image out of a decoder, a 1x1 head.
        d2(2, 64, 3, [19, 17], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        d2(1, 32, 21, [11, 11], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        // Narrow heads (ConvMmaNarrowFwd): one output channel at stride 2 over 24 channels (a
        // partly empty k16 step) on a row wider than a tile; 16 over 136 channels (five chunks).
        d2(2, 24, 1, [37, 70], [3, 3], [1, 1], [2, 2], [1, 1], 1),
        d2(1, 136, 16, [10, 21], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        // Expansion 1x1 layers (ConvMmaExpand1x1Fwd): a last pixel tile and output-channel
        // tile partly past the image and K; 16 and 56 channels (a granule past C zero-filled);
        // K not a multiple of 8 (a last vector stored channel by channel).
        d2(2, 24, 144, [13, 11], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(1, 16, 40, [9, 7], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(1, 56, 60, [5, 9], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(3, 32, 200, [7, 6], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(1, 40, 240, [10, 10], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(2, 8, 24, [6, 11], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        // 20,000 pixels: more pixel tiles than two or four blocks an SM, so blocks loop.
        d2(2, 24, 144, [100, 100], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        // Deep reductions (split-K applies) and a strided 1x1 with many channels.
        d2(1, 256, 128, [7, 7], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        d2(2, 128, 256, [9, 9], [1, 1], [0, 0], [2, 2], [1, 1], 1),
        // Strided 1x1 layers whose output pixels fill whole 4-wide vectors (the NCHW batched
        // GEMM's pixel copy): stride 2 over an odd width, unequal strides 3 and 2.
        d2(2, 64, 96, [16, 13], [1, 1], [0, 0], [2, 2], [1, 1], 1),
        d2(3, 32, 48, [17, 12], [1, 1], [0, 0], [3, 2], [1, 1], 1),
        // Tensor-core-aligned channels (multiples of 8) under TMA's im2col gathering: a strided
        // 3x3 whose tiles cross images, and a 5x3 filter with unequal padding, stride and
        // dilation.
        d2(3, 64, 64, [15, 15], [3, 3], [1, 1], [2, 2], [1, 1], 1),
        d2(2, 40, 72, [21, 18], [5, 3], [2, 1], [2, 1], [1, 2], 1),
        // A deep 1x1 over few pixels: split-K of the 1x1 GEMM, partial output-channel tiles.
        d2(1, 320, 40, [6, 5], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        // Squeeze-and-excitation layers on pooled 1x1 maps (ConvDot1x1Fwd): a squeeze to 6
        // channels over 144, an excitation from 6 (2-channel loads), and 40 pixels x 1160
        // channels (a partial last load step and pixel tile).
        d2(32, 144, 6, [1, 1], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(5, 6, 144, [1, 1], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(10, 1160, 48, [2, 2], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        // Split-K with 8 MiB of partials over at most 132 blocks: the Hopper kernels reduce
        // the slices in a thread-block cluster (a 1x1 with two reduction steps, a 3x3).
        d2(4, 128, 256, [32, 32], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(4, 64, 256, [32, 32], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        // More output tiles than SMs (the persistent Hopper kernels), partial channel tiles.
        d2(4, 64, 96, [56, 56], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        d2(4, 64, 96, [40, 40], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        // Narrow steps (16 or 32 channels a step, 32- or 64-byte swizzled rows): 8 channels (a
        // partly empty step either way), a strided dilated filter, and more tiles than SMs.
        d2(3, 8, 32, [21, 17], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        d2(2, 32, 64, [23, 19], [5, 3], [2, 1], [2, 1], [1, 2], 1),
        d2(4, 16, 32, [56, 56], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        // 96-, 160- and 192-column Hopper tiles (wgmma n = 96, 160, 192): a strided 3x3, a 1x1,
        // and more tiles than SMs.
        d2(2, 32, 96, [15, 13], [3, 3], [1, 1], [2, 1], [1, 1], 1),
        d2(2, 72, 160, [14, 14], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(8, 64, 192, [40, 40], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        // Grouped convolution on tensor cores (CUTLASS's group fprop, a block within one
        // group): 64, 32, 16 and 8 channels a group, 8 inputs to 16 outputs, 4 inputs to 16
        // and 8 to 32 (reduction tiles wider than the group: the loads past its channels are
        // masked); stride 2 and partial tiles.
        d2(2, 128, 128, [13, 11], [3, 3], [1, 1], [1, 1], [1, 1], 2),
        d2(2, 96, 96, [9, 14], [3, 3], [1, 1], [2, 2], [1, 1], 3),
        d2(2, 64, 64, [17, 15], [3, 3], [1, 1], [2, 2], [1, 1], 4),
        d2(1, 64, 64, [12, 10], [3, 3], [1, 1], [1, 1], [1, 1], 8),
        d2(2, 32, 64, [11, 9], [3, 3], [1, 1], [1, 1], [1, 1], 4),
        d2(1, 16, 64, [10, 10], [3, 3], [1, 1], [1, 1], [1, 1], 4),
        d2(2, 16, 64, [9, 7], [3, 3], [1, 1], [1, 1], [1, 1], 2),
        // Narrow groups on tensor cores (ConvMmaGroupedFwd, a slab of whole groups a block):
        // groups of 4 (two to a 16-byte granule) in one partial slab and, strided, in two
        // slabs; two and three groups of 24 (a 48-channel slab, the last one partial); groups of
        // 8 under a dilated filter.
        d2(2, 32, 32, [13, 11], [3, 3], [1, 1], [1, 1], [1, 1], 8),
        d2(1, 128, 128, [15, 14], [3, 3], [1, 1], [2, 2], [1, 1], 32),
        d2(2, 48, 48, [14, 13], [3, 3], [1, 1], [1, 1], [1, 1], 2),
        d2(1, 72, 72, [9, 17], [3, 3], [1, 1], [2, 2], [1, 1], 3),
        d2(1, 64, 64, [12, 12], [3, 3], [2, 2], [1, 1], [2, 2], 8),
        // More tiles than one wave of blocks holds: blocks loop over tiles (1-3 each on 132
        // SMs) with double-buffered patches; groups of 8, of 4, and of 16 one a block (patch
        // pixels of two granules).
        d2(4, 64, 64, [130, 130], [3, 3], [1, 1], [1, 1], [1, 1], 8),
        d2(4, 64, 64, [130, 130], [3, 3], [1, 1], [1, 1], [1, 1], 16),
        d2(2, 64, 64, [130, 130], [3, 3], [1, 1], [1, 1], [1, 1], 4),
        // Narrow dense layers as one group: 24 channels over more tiles than SMs, 16 unpadded
        // at stride 2.
        d2(2, 24, 24, [37, 35], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        d2(1, 16, 16, [21, 19], [3, 3], [0, 0], [2, 2], [1, 1], 1),
        ConvSpec {
            spatial_dims: 3,
            n: 1,
            c: 4,
            k: 8,
            input: [5, 9, 7],
            filter: [3, 3, 3],
            pad: [1, 1, 1],
            ..ConvSpec::default()
        },
        // 3-D on tensor cores (CUTLASS's Conv3d fprop): aligned channels over several depth
        // planes; an RGB stem (channels padded in the workspace); a (2+1)-D block's 45 inputs
        // and a temporal-only filter; 21 outputs (one-element stores); a strided layer deep
        // enough for split-K.
        d3(2, 16, 32, [5, 9, 11], [3, 3, 3], [1, 1, 1], [1, 1, 1]),
        d3(1, 3, 16, [6, 17, 15], [3, 7, 7], [1, 3, 3], [1, 2, 2]),
        d3(2, 45, 64, [6, 8, 8], [3, 1, 1], [1, 0, 0], [1, 1, 1]),
        d3(1, 64, 21, [4, 7, 7], [1, 3, 3], [0, 1, 1], [2, 2, 2]),
        d3(1, 128, 128, [4, 14, 14], [3, 3, 3], [1, 1, 1], [2, 2, 2]),
        // RGB stems on the 3-D first-layer kernel: at stride 2 across with output rows wider
        // than one 64-pixel unit, and at stride 1 across with depth stride 2 (the windows of
        // the first and last planes reach past the input's).
        d3(1, 3, 64, [4, 10, 150], [3, 7, 7], [1, 3, 3], [1, 2, 2]),
        d3(2, 3, 24, [5, 9, 20], [3, 3, 3], [1, 1, 1], [2, 1, 1]),
        // Hopper's 5-D im2col gathers (ConvWgmmaImplicitGemm3dFwd): a temporal-only filter whose
        // 128-voxel tiles cross planes and images, and a spatial-only one at depth stride 2.
        d3(3, 32, 48, [5, 7, 6], [3, 1, 1], [1, 0, 0], [1, 1, 1]),
        d3(2, 64, 64, [6, 12, 10], [1, 3, 3], [0, 1, 1], [2, 1, 1]),
        // Depth that folds away (the 2-D solvers run them as 2-D problems): a one-plane
        // filter at stride 2 across (channels-last: a batch of 2 x 3 planes), and a 1x1x1
        // layer (one image of 3 x 35 pixels when channels-first). The 32-channel temporal-only
        // filter above folds too (the 45-channel one stays 3-D: narrower than 8-byte vectors).
        d3(2, 32, 64, [3, 11, 9], [1, 3, 3], [0, 1, 1], [1, 2, 2]),
        d3(1, 64, 96, [3, 5, 7], [1, 1, 1], [0, 0, 0], [1, 1, 1]),
        ConvSpec {
            spatial_dims: 3,
            n: 2,
            c: 6,
            k: 6,
            input: [4, 7, 9],
            filter: [2, 3, 1],
            pad: [0, 1, 0],
            stride: [2, 1, 1],
            groups: 3,
            ..ConvSpec::default()
        },
    ];
    let mut out = Vec::new();
    for base in shapes {
        for dtype in [DataType::Fp32, DataType::Fp16, DataType::Bf16] {
            for channels_last in [false, true] {
                let layout = match (base.spatial_dims, channels_last) {
                    (2, false) => Layout::Nchw,
                    (2, true) => Layout::Nhwc,
                    (_, false) => Layout::Ncdhw,
                    (_, true) => Layout::Ndhwc,
                };
                let spec = ConvSpec {
                    layouts: [layout; 3],
                    data_types: [dtype; 3],
                    ..base
                };
                if let Ok(p) = ConvProblem::new(spec) {
                    let fused = p.with_fusion(fusion_for(out.len(), &p)).ok();
                    // Depthwise layers also sum y for a global pool (squeeze-and-excitation).
                    let pooled = (p.is_depthwise() && channels_last && base.spatial_dims == 2)
                        .then(|| p.with_fusion(pooled_fusion(out.len())).ok())
                        .flatten();
                    // Dense FP16 and BF16 layers also read x through a gate (the Hopper
                    // gated kernels fold a squeeze-and-excitation multiply so): every other
                    // one, and every 1x1 layer (the gated 1x1 solver's).
                    let gated = (channels_last
                        && base.spatial_dims == 2
                        && p.groups() == 1
                        && dtype != DataType::Fp32
                        && (out.len().is_multiple_of(2) || p.filter() == [1, 1, 1]))
                    .then(|| {
                        let mut f = fusion_for(out.len() + 1, &p);
                        f.x_scale = true;
                        p.with_fusion(f).ok()
                    })
                    .flatten();
                    for p in std::iter::once(p).chain(fused).chain(pooled).chain(gated) {
                        out.push(p);
                        // FP32 also with TF32 allowed (only the TF32 solvers run it).
                        if dtype == DataType::Fp32 {
                            out.push(p.with_math(MathMode::AllowTf32));
                        }
                    }
                }
            }
        }
    }
    out
}

/// The epilogue the fused copy of the `i`-th problem gets: every activation in turn (with
/// the problem set's order, each solver family meets all ten), scale and bias always (a folded
/// batch norm), a residual on every other copy, and on channels-last outputs every third copy
/// writes a channel slice of a wider tensor (its residual too, every sixth).
fn fusion_for(i: usize, p: &ConvProblem) -> Fusion {
    let residual = i.is_multiple_of(2);
    let slice = p.layouts()[2].channels_last() && i.is_multiple_of(3);
    let wide = p.k().next_multiple_of(8) + 16;
    Fusion {
        scale: true,
        bias: true,
        residual,
        activation: Activation::ALL[i % Activation::ALL.len()],
        y_ld: if slice { wide } else { 0 },
        z_ld: if slice && residual { wide + 8 } else { 0 },
        pool: false,
        x_scale: false,
    }
}

/// The epilogue of the `i`-th problem's copy that also writes a global pool's partial sums:
/// a bias (the batch norm folded into the filter), a scale on every other copy, and the
/// activations in turn.
fn pooled_fusion(i: usize) -> Fusion {
    Fusion {
        scale: i.is_multiple_of(2),
        bias: true,
        activation: Activation::ALL[(i + 3) % Activation::ALL.len()],
        pool: true,
        ..Fusion::NONE
    }
}

/// Runs the selftest on `ctx`: every variant of each of `problems` whose solver `chosen`
/// accepts, then (when `operators`) the standalone operators in every data type. Each failure
/// is handed to `on_failure` as it is found.
pub fn run(
    ctx: &Context,
    problems: &[ConvProblem],
    chosen: impl Fn(&str) -> bool,
    operators: bool,
    mut on_failure: impl FnMut(&Failure),
) -> Report {
    let caps = ctx.caps();
    let mut report = Report {
        problems: problems.len(),
        ..Report::default()
    };
    for (i, p) in problems.iter().enumerate() {
        let tf32 = p.math() == MathMode::AllowTf32;
        // A TF32 problem checks the TF32 solvers; every other solver ran it as FP32.
        let mut variants: Vec<Variant> = Vec::new();
        for solver in crate::solvers::registered() {
            if chosen(solver.id()) && !(tf32 && solver.entry.math_mode() != MathMode::AllowTf32) {
                let params = solver.offered_params(p, &caps);
                variants.extend(params.map(|params| Variant { solver, params }));
            }
        }
        if variants.is_empty() {
            continue;
        }
        // Inputs and references once per problem, shared by its variants.
        let seed = 1 + i as u64;
        let random = ProblemCheck::random(ctx, p, seed);
        let special = ProblemCheck::special(ctx, p, seed);
        for v in &variants {
            let (solver, params) = (v.solver, v.params);
            report.runs += 1;
            let e = report.per_solver.entry(solver.id()).or_default();
            e.0 += 1;
            let mut fail = |error: String| {
                report.failures += 1;
                e.1 += 1;
                on_failure(&Failure {
                    solver: solver.id(),
                    params,
                    problem: p.find_db_key().to_string(),
                    math: Some(p.math()),
                    error,
                });
            };
            let tolerance = tolerance(p);
            match random
                .as_ref()
                .map_err(|e| e.to_string())
                .and_then(|c| c.error(v).map_err(|e| e.to_string()))
            {
                Ok(error) if error <= tolerance => {}
                Ok(error) => fail(format!("relative error {error:.3e}")),
                Err(err) => fail(err),
            }
            match special
                .as_ref()
                .map_err(|e| e.to_string())
                .and_then(|c| c.special_classes(v).map_err(|e| e.to_string()))
            {
                Ok((_, true)) => {}
                Ok((c, false)) => fail(format!(
                    "with inf/NaN/subnormal/near-overflow inputs: {} of {} non-finite outputs differ in class, finite relative error {:.3e}",
                    c.class_mismatches, c.non_finite, c.error
                )),
                Err(err) => fail(format!("with special values: {err}")),
            }
        }
    }
    if operators {
        let e = report.per_solver.entry(OPERATORS).or_default();
        for dtype in [DataType::Fp32, DataType::Fp16, DataType::Bf16] {
            for (i, op) in super::ops::problems(dtype).iter().enumerate() {
                for special in [false, true] {
                    report.runs += 1;
                    e.0 += 1;
                    let what = match super::ops::check(ctx, op, 1 + i as u64, special) {
                        Ok(c) if c.passed => continue,
                        Ok(c) => format!(
                            "relative error {:.3e}, {} outputs of another class, {} written outside the slice",
                            c.error, c.class_mismatches, c.written_outside
                        ),
                        Err(err) => err.to_string(),
                    };
                    report.failures += 1;
                    e.1 += 1;
                    on_failure(&Failure {
                        solver: OPERATORS,
                        params: "",
                        problem: op.describe(),
                        math: None,
                        error: if special {
                            format!("with special values: {what}")
                        } else {
                            what
                        },
                    });
                }
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::{devices, registered, TargetCaps};
    use kiln_format::Vendor;

    /// `kiln selftest` with no problem list is the boot check: every solver the manifest
    /// compiles must meet at least one problem of the built-in set that one of its perf configs
    /// runs, on some device kiln targets (a solver added without one would never be checked on
    /// a GPU by the boot check).
    #[test]
    fn the_built_in_set_reaches_every_solver() {
        let amd = |arch: &'static str, units| TargetCaps::describe(Vendor::Amd, arch, arch, units);
        let devices = [
            devices::h100(),
            devices::a100(),
            devices::orin(),
            amd("gfx90a", 104),
            amd("gfx942", 304),
            amd("gfx1100", 48),
        ];
        let problems = problems();
        let unreached: Vec<&str> = registered()
            .filter(|s| {
                !problems.iter().any(|p| {
                    devices.iter().any(|caps| {
                        s.entry
                            .params
                            .iter()
                            .any(|q| s.applicable(p, caps, q).is_ok())
                    })
                })
            })
            .map(|s| s.id())
            .collect();
        assert!(
            unreached.is_empty(),
            "no built-in selftest problem for {unreached:?}"
        );
    }
}
