//! The standalone operators' CPU reference (f64) and their checked runs: the selftest's
//! operator set, fresh random inputs and inputs with inf/NaN/subnormal/near-overflow values,
//! outputs poisoned first, and a channel-slice output checked for writes outside its slice.

use kiln_format::{Activation, DataType, Layout};

use super::verify::{compare_special, decode, poisoned, random_values, relative_error, upload};
use crate::backend::Stream;
use crate::context::Context;
use crate::elements::round_to;
use crate::error::RunError;
use crate::ops::{
    EltwiseOp, ExpandDepthwise, OpKind, OpProblem, Pool2d, PoolMode, ResizeMode, SqueezeExcite,
};

/// Where element (n, ch, y, x) of a tensor with `c` channels and `h x w` pixels lies, with
/// pixels `ld` apart when channels-last (as the kernels index it).
fn index(layout: Layout, c: u32, [h, w]: [u32; 2], ld: u32, [n, ch, y, x]: [u32; 4]) -> usize {
    let (c, h, w, ld) = (c as usize, h as usize, w as usize, ld as usize);
    let (n, ch, y, x) = (n as usize, ch as usize, y as usize, x as usize);
    if layout.channels_last() {
        ((n * h + y) * w + x) * if ld == 0 { c } else { ld } + ch
    } else {
        ((n * c + ch) * h + y) * w + x
    }
}

/// `max` as the kernels take it: NaN wins, and stays.
fn nan_max(acc: f64, v: f64) -> f64 {
    if acc.is_nan() || v.is_nan() {
        f64::NAN
    } else {
        acc.max(v)
    }
}

/// The operator's output in f64: a buffer of `op.y_elements()` values, NaN where the
/// operator writes nothing (between the pixels of a channel slice). `a` and `b` are the
/// inputs as stored (rounded to the data type), in their buffers' layout; a
/// squeeze-and-excitation head's (or a fused expansion's) `b` is its parameters unpacked,
/// `[w1, b1, w2, b2]` one after another ([`SqueezeExcite::pack`] and
/// [`ExpandDepthwise::pack`] name them).
pub fn reference(op: &OpProblem, a: &[f64], b: Option<&[f64]>) -> Vec<f64> {
    match op.kind {
        OpKind::SqueezeExcite(se) => return squeeze_excite(op, se, a, b.unwrap_or(&[])),
        OpKind::ExpandDepthwise(xd) => return expand_depthwise(op, xd, a, b.unwrap_or(&[])),
        _ => {}
    }
    let [oh, ow] = op.output();
    let mut y = vec![f64::NAN; op.y_elements() as usize];
    let at = |ch, yy, xx, n| a[index(op.layout, op.c, op.input, op.a_ld, [n, ch, yy, xx])];
    let act = |v: f64| match op.activation {
        Activation::Identity => v,
        act => act.apply(v, op.activation_param as f64),
    };
    for n in 0..op.n {
        if op.kind == OpKind::Softmax {
            for yy in 0..oh {
                for xx in 0..ow {
                    let vals: Vec<f64> = (0..op.c).map(|ch| at(ch, yy, xx, n)).collect();
                    let m = vals.iter().copied().fold(f64::NEG_INFINITY, nan_max);
                    let sum: f64 = vals.iter().map(|v| (v - m).exp()).sum();
                    for (ch, v) in vals.iter().enumerate() {
                        let i = index(op.layout, op.c, [oh, ow], op.y_ld, [n, ch as u32, yy, xx]);
                        y[i] = (v - m).exp() / sum;
                    }
                }
            }
            continue;
        }
        for ch in 0..op.c {
            for yy in 0..oh {
                for xx in 0..ow {
                    let v = match op.kind {
                        OpKind::Pool(Pool2d {
                            mode,
                            window,
                            stride,
                            pad,
                            ..
                        }) => pool(op, &at, [n, ch, yy, xx], mode, window, stride, pad),
                        OpKind::GlobalAveragePool => {
                            let [h, w] = op.input;
                            pool(
                                op,
                                &at,
                                [n, ch, 0, 0],
                                PoolMode::Average,
                                [h, w],
                                [1, 1],
                                [0, 0],
                            )
                        }
                        OpKind::GlobalAveragePoolFinish { partials } => {
                            partial_mean(op, partials, a, n, ch)
                        }
                        OpKind::Resize { mode, out } => resize(op, &at, [n, ch, yy, xx], mode, out),
                        OpKind::Eltwise { op: e, broadcast } => {
                            let v = at(ch, yy, xx, n);
                            let other = || {
                                let b = b.unwrap_or(&[]);
                                if broadcast {
                                    b[(n * op.c + ch) as usize]
                                } else {
                                    b[index(op.layout, op.c, op.input, 0, [n, ch, yy, xx])]
                                }
                            };
                            match e {
                                EltwiseOp::Copy => v,
                                EltwiseOp::Add => v + other(),
                                EltwiseOp::Mul => v * other(),
                            }
                        }
                        OpKind::Softmax | OpKind::SqueezeExcite(_) | OpKind::ExpandDepthwise(_) => {
                            unreachable!("handled above")
                        }
                    };
                    y[index(op.layout, op.c, [oh, ow], op.y_ld, [n, ch, yy, xx])] = act(v);
                }
            }
        }
    }
    y
}

/// Channel `ch`'s mean over image `n` from a convolution's FP32 partial sums `a`, laid out as
/// `partials` says, over `op.input`'s pixels.
fn partial_mean(
    op: &OpProblem,
    partials: crate::solvers::PoolPartials,
    a: &[f64],
    n: u32,
    ch: u32,
) -> f64 {
    let (first, last) = partials.blocks_of(u64::from(n));
    let row = |s: u64| (u64::from(n) * u64::from(partials.slots()) + s) * u64::from(op.c);
    let sum: f64 = (0..=last - first)
        .map(|s| a[(row(s) + u64::from(ch)) as usize])
        .sum();
    sum / (f64::from(op.input[0]) * f64::from(op.input[1]))
}

/// A squeeze-and-excitation head's gate, `n x out`: each image's channel means (rounded to the
/// data type where they come from partial sums, as a pool's finish stores them), the squeeze
/// (rounded likewise), then the excitation. Sums in f64; each stored value passes through f32,
/// so what overflows the kernels' FP32 overflows here too.
fn squeeze_excite(op: &OpProblem, se: SqueezeExcite, a: &[f64], params: &[f64]) -> Vec<f64> {
    let (c, s, k) = (op.c as usize, se.squeeze as usize, se.out as usize);
    let dtype = op.data_type;
    let (w1, rest) = params.split_at(s * c);
    let (b1, rest) = rest.split_at(s);
    let (w2, b2) = rest.split_at(k * s);
    let single = |v: f64| v as f32 as f64;
    let mut y = vec![f64::NAN; op.n as usize * k];
    for n in 0..op.n as usize {
        let pooled: Vec<f64> = (0..c)
            .map(|ch| match se.partials {
                Some(p) => round_to(dtype, partial_mean(op, p, a, n as u32, ch as u32)),
                None => a[n * c + ch],
            })
            .collect();
        let squeezed: Vec<f64> = (0..s)
            .map(|j| {
                let t = b1[j] + (0..c).map(|ch| w1[j * c + ch] * pooled[ch]).sum::<f64>();
                let t = match se.squeeze_activation {
                    Activation::Identity => single(t),
                    act => act.apply(single(t), f64::from(se.squeeze_param())),
                };
                round_to(dtype, t)
            })
            .collect();
        for o in 0..k {
            let t = b2[o] + (0..s).map(|j| w2[o * s + j] * squeezed[j]).sum::<f64>();
            y[n * k + o] = match op.activation {
                Activation::Identity => single(t),
                act => act.apply(single(t), f64::from(op.activation_param)),
            };
        }
    }
    y
}

/// A fused expansion and depthwise layer's output, NHWC: the expansion of every input pixel
/// (rounded to the data type, as the unfused layer stores it), then the depthwise layer over
/// it with zero padding. Sums in f64; stored values pass through f32.
fn expand_depthwise(op: &OpProblem, xd: ExpandDepthwise, a: &[f64], params: &[f64]) -> Vec<f64> {
    let (c, e, f) = (op.c as usize, xd.expanded as usize, xd.filter as usize);
    let [h, w] = op.input.map(|v| v as usize);
    let [oh, ow] = op.output().map(|v| v as usize);
    let (stride, pad) = (xd.stride as usize, xd.pad() as i64);
    let (w1, rest) = params.split_at(e * c);
    let (b1, rest) = rest.split_at(e);
    let (w2, b2) = rest.split_at(e * f * f);
    let single = |v: f64| v as f32 as f64;
    let act = |v: f64, a: Activation, param: f32| match a {
        Activation::Identity => single(v),
        a => a.apply(single(v), f64::from(param)),
    };
    let mut y = vec![f64::NAN; op.y_elements() as usize];
    for n in 0..op.n as usize {
        let pixel = |yy: usize, xx: usize| (n * h + yy) * w + xx;
        let expanded: Vec<f64> = (0..h * w * e)
            .map(|i| {
                let (p, k) = (i / e, i % e);
                let t = b1[k]
                    + (0..c)
                        .map(|ch| w1[k * c + ch] * a[pixel(p / w, p % w) * c + ch])
                        .sum::<f64>();
                round_to(
                    op.data_type,
                    act(t, xd.expand_activation, xd.expand_param()),
                )
            })
            .collect();
        for oy in 0..oh {
            for ox in 0..ow {
                for k in 0..e {
                    let mut t = b2[k];
                    for fy in 0..f {
                        for fx in 0..f {
                            let iy = (oy * stride + fy) as i64 - pad;
                            let ix = (ox * stride + fx) as i64 - pad;
                            if (0..h as i64).contains(&iy) && (0..w as i64).contains(&ix) {
                                let p = iy as usize * w + ix as usize;
                                t += w2[(k * f + fy) * f + fx] * expanded[p * e + k];
                            }
                        }
                    }
                    y[((n * oh + oy) * ow + ox) * e + k] =
                        act(t, op.activation, op.activation_param);
                }
            }
        }
    }
    y
}

/// One pooled output (PyTorch's window and divisor rules).
fn pool(
    op: &OpProblem,
    at: &dyn Fn(u32, u32, u32, u32) -> f64,
    [n, ch, oy, ox]: [u32; 4],
    mode: PoolMode,
    window: [u32; 2],
    stride: [u32; 2],
    pad: [u32; 2],
) -> f64 {
    let span = |o: u32, i: usize| {
        let start = i64::from(o) * i64::from(stride[i]) - i64::from(pad[i]);
        let end = (start + i64::from(window[i])).min(i64::from(op.input[i]) + i64::from(pad[i]));
        (start, end)
    };
    let ((y0, y1), (x0, x1)) = (span(oy, 0), span(ox, 1));
    let padded = ((y1 - y0) * (x1 - x0)) as f64;
    let (y0, x0) = (y0.max(0), x0.max(0));
    let (y1, x1) = (y1.min(op.input[0].into()), x1.min(op.input[1].into()));
    let mut acc = if mode == PoolMode::Max {
        f64::NEG_INFINITY
    } else {
        0.0
    };
    for iy in y0..y1 {
        for ix in x0..x1 {
            let v = at(ch, iy as u32, ix as u32, n);
            acc = if mode == PoolMode::Max {
                nan_max(acc, v)
            } else {
                acc + v
            };
        }
    }
    match mode {
        PoolMode::Max => acc,
        PoolMode::Average => acc / padded,
        PoolMode::AverageExcludePad => acc / ((y1 - y0) * (x1 - x0)) as f64,
    }
}

/// One resized output: nearest (floor of dst * in / out) or bilinear with half-pixel centres.
fn resize(
    op: &OpProblem,
    at: &dyn Fn(u32, u32, u32, u32) -> f64,
    [n, ch, oy, ox]: [u32; 4],
    mode: ResizeMode,
    out: [u32; 2],
) -> f64 {
    let scale = |i: usize| f64::from(op.input[i]) / f64::from(out[i]);
    let last = |i: usize| op.input[i] - 1;
    match mode {
        ResizeMode::Nearest => {
            let iy = ((f64::from(oy) * scale(0)) as u32).min(last(0));
            let ix = ((f64::from(ox) * scale(1)) as u32).min(last(1));
            at(ch, iy, ix, n)
        }
        ResizeMode::Bilinear => {
            let src = |o: u32, i: usize| ((f64::from(o) + 0.5) * scale(i) - 0.5).max(0.0);
            let (fy, fx) = (src(oy, 0), src(ox, 1));
            let (y0, x0) = (fy as u32, fx as u32);
            let (y1, x1) = ((y0 + 1).min(last(0)), (x0 + 1).min(last(1)));
            let (ly, lx) = (fy - f64::from(y0), fx - f64::from(x0));
            (1.0 - ly) * ((1.0 - lx) * at(ch, y0, x0, n) + lx * at(ch, y0, x1, n))
                + ly * ((1.0 - lx) * at(ch, y1, x0, n) + lx * at(ch, y1, x1, n))
        }
    }
}

/// The operator set `kiln selftest` checks: every kind and mode, both layouts, with
/// activations, channel slices and ragged sizes, in `dtype`.
pub fn problems(dtype: DataType) -> Vec<OpProblem> {
    let pool = |mode, window: u32, stride: u32, pad: u32, ceil_mode| {
        OpKind::Pool(Pool2d {
            mode,
            window: [window; 2],
            stride: [stride; 2],
            pad: [pad; 2],
            ceil_mode,
        })
    };
    let mut out = Vec::new();
    for layout in [Layout::Nhwc, Layout::Nchw] {
        let op = |kind, n, c, hw: [u32; 2]| OpProblem::new(kind, n, c, hw, layout, dtype);
        out.extend([
            // ResNet's stem pool, GoogLeNet's ceil-mode pools, YOLO's SPPF pool.
            op(pool(PoolMode::Max, 3, 2, 1, false), 2, 64, [28, 28]),
            op(pool(PoolMode::Max, 3, 2, 0, true), 1, 24, [13, 13]),
            op(pool(PoolMode::Max, 5, 1, 2, false), 1, 32, [10, 10]),
            op(pool(PoolMode::Average, 3, 1, 1, false), 2, 16, [9, 7]),
            op(
                pool(PoolMode::AverageExcludePad, 3, 2, 1, true),
                1,
                8,
                [10, 10],
            ),
            op(OpKind::GlobalAveragePool, 3, 40, [7, 7]),
            op(OpKind::GlobalAveragePool, 1, 1280, [7, 7]),
            // Few channels over many pixels: the pool sums pixel ranges apart (channels-last,
            // 8-channel vectors); ragged channels, one at a time; more channels than one
            // block's 256 vectorized ones, over pixel ranges.
            op(OpKind::GlobalAveragePool, 2, 40, [56, 61]),
            op(OpKind::GlobalAveragePool, 2, 36, [56, 61]),
            op(OpKind::GlobalAveragePool, 2, 264, [30, 30]),
            // Batches whose blocks still fill the GPU in 8-channel vectors (channels-last):
            // 32 channels as 4 vector lanes, and an excitation's 144 as 18.
            op(OpKind::GlobalAveragePool, 16, 32, [40, 40]),
            op(OpKind::GlobalAveragePool, 32, 144, [48, 48]),
            op(
                OpKind::Resize {
                    mode: ResizeMode::Nearest,
                    out: [20, 26],
                },
                2,
                16,
                [10, 13],
            ),
            op(
                OpKind::Resize {
                    mode: ResizeMode::Bilinear,
                    out: [14, 14],
                },
                1,
                24,
                [7, 7],
            ),
            op(
                OpKind::Eltwise {
                    op: EltwiseOp::Add,
                    broadcast: false,
                },
                2,
                24,
                [5, 6],
            )
            .with_activation(Activation::Relu),
            op(
                OpKind::Eltwise {
                    op: EltwiseOp::Mul,
                    broadcast: true,
                },
                2,
                96,
                [7, 7],
            ),
            op(
                OpKind::Eltwise {
                    op: EltwiseOp::Copy,
                    broadcast: false,
                },
                1,
                72,
                [4, 4],
            )
            .with_activation(Activation::HardSwish),
            op(
                OpKind::Eltwise {
                    op: EltwiseOp::Copy,
                    broadcast: false,
                },
                1,
                16,
                [3, 3],
            )
            .with_activation(Activation::Sigmoid),
            op(OpKind::Softmax, 4, 1000, [1, 1]),
            op(OpKind::Softmax, 1, 19, [6, 5]),
        ]);
    }
    // A pool's mean from a depthwise convolution's partial sums: images whose strips span
    // two blocks (and blocks that span images), and many slots with ragged channels.
    let finish = |strips, group| OpKind::GlobalAveragePoolFinish {
        partials: crate::solvers::PoolPartials { strips, group },
    };
    out.push(OpProblem::new(
        finish(14, 32),
        5,
        40,
        [7, 7],
        Layout::Nhwc,
        dtype,
    ));
    out.push(OpProblem::new(
        finish(49, 16),
        3,
        72,
        [7, 14],
        Layout::Nhwc,
        dtype,
    ));
    out.push(OpProblem::new(
        finish(3136, 32),
        2,
        36,
        [112, 112],
        Layout::Nhwc,
        dtype,
    ));
    // Squeeze-and-excitation heads: EfficientNet-B0's last (1152 channels from partial sums
    // spanning two blocks, squeezed to 48) and first (32 to 8) at a batch of 3, MobileNetV3's
    // ReLU / hard-sigmoid head on a pooled tensor, ragged channels (one at a time), an
    // excitation wider than one block (slices of it over blocks) at batch 1.
    use Activation::{ClippedRelu, HardSigmoid, Relu, Sigmoid, Silu};
    let strips = |strips, group| Some(crate::solvers::PoolPartials { strips, group });
    // (batch, channels, the pooled map, squeeze, its activation, the partial sums' strips
    // (none: the pooled tensor), the gate's activation).
    let heads = [
        (3, 1152, [7, 7], 48, Silu, strips(14, 32), Sigmoid),
        (2, 32, [112, 112], 8, Silu, strips(3136, 32), Sigmoid),
        (3, 96, [1, 1], 24, Relu, None, HardSigmoid),
        (2, 60, [7, 7], 7, Silu, strips(49, 16), Sigmoid),
        (1, 600, [1, 1], 20, ClippedRelu, None, Sigmoid),
    ];
    for (n, c, map, squeeze, squeeze_activation, partials, act) in heads {
        let kind = OpKind::SqueezeExcite(SqueezeExcite {
            squeeze,
            out: c,
            squeeze_activation,
            squeeze_param_bits: squeeze_activation.default_param().to_bits(),
            partials,
        });
        out.push(OpProblem::new(kind, n, c, map, Layout::Nhwc, dtype).with_activation(act));
    }
    // Expansions fused with their depthwise layer: MobileNetV2's first (16 -> 96, 3x3 stride
    // 2, ReLU6 both) on a small map whose tiles do not divide it, its stride-1 form (24 ->
    // 144), EfficientNet's 5x5 stride 2 with SiLU, a ragged slice (E = 36: a slice of 32 and
    // one of 4) on one image, and the widest input (32 channels).
    // (batch, input channels, map, expanded, filter, stride, activation of both).
    let fused = [
        (2, 16, [13, 17], 96, 3, 2, ClippedRelu),
        (2, 24, [11, 9], 144, 3, 1, ClippedRelu),
        (1, 16, [15, 10], 96, 5, 2, Silu),
        (1, 8, [6, 7], 36, 5, 1, Relu),
        (3, 32, [7, 7], 64, 3, 1, ClippedRelu),
    ];
    for (n, c, map, expanded, filter, stride, act) in fused {
        let kind = OpKind::ExpandDepthwise(ExpandDepthwise {
            expanded,
            filter,
            stride,
            expand_activation: act,
            expand_param_bits: act.default_param().to_bits(),
        });
        out.push(OpProblem::new(kind, n, c, map, Layout::Nhwc, dtype).with_activation(act));
    }
    // Channel counts that are not multiples of 8 (one channel per thread in NHWC too).
    let nhwc = |kind, c, hw: [u32; 2]| OpProblem::new(kind, 2, c, hw, Layout::Nhwc, dtype);
    out.push(nhwc(pool(PoolMode::Max, 3, 2, 1, false), 13, [9, 9]));
    out.push(nhwc(
        OpKind::Eltwise {
            op: EltwiseOp::Mul,
            broadcast: true,
        },
        20,
        [5, 5],
    ));
    // Channel slices (NHWC): a concatenation's part read and written in place.
    let mut sliced = OpProblem::new(
        OpKind::Pool(Pool2d {
            mode: PoolMode::Max,
            window: [5; 2],
            stride: [1; 2],
            pad: [2; 2],
            ceil_mode: false,
        }),
        1,
        16,
        [6, 6],
        Layout::Nhwc,
        dtype,
    );
    sliced.y_ld = 64;
    sliced.a_ld = 32;
    out.push(sliced);
    let mut copy = OpProblem::new(
        OpKind::Eltwise {
            op: EltwiseOp::Copy,
            broadcast: false,
        },
        2,
        24,
        [4, 4],
        Layout::Nhwc,
        dtype,
    )
    .with_activation(Activation::LeakyRelu);
    copy.y_ld = 40;
    out.push(copy);
    out
}

/// What one checked operator run found.
#[derive(Clone, Debug)]
pub struct OpCheck {
    /// Relative error over the outputs written (random inputs), or of the finite outputs
    /// (special inputs).
    pub error: f64,
    /// Outputs whose class (NaN, +inf, -inf, finite) differs from the reference's.
    pub class_mismatches: usize,
    /// Elements between the pixels of a channel-slice output that the kernel changed.
    pub written_outside: usize,
    /// Within tolerance, classes match, nothing written outside the slice.
    pub passed: bool,
}

/// Tolerance of an operator's result: one rounding to the data type, plus FP32 sums.
pub fn tolerance(dtype: DataType) -> f64 {
    match dtype {
        DataType::Fp16 | DataType::Bf16 => 1e-2,
        _ => 1e-5,
    }
}

/// Random parameters of a two-layer operator (a squeeze-and-excitation head, a fused expansion
/// and depthwise layer), packed and uploaded, with their values as stored (`[w1, b1, w2, b2]`,
/// as [`reference()`] takes them); `None` for other operators. Weights are scaled by their
/// fan-in's square root, so that sums stay near 1 (and a gate is not all 0 or 1).
fn two_layer_params(
    ctx: &Context,
    op: &OpProblem,
    seed: u64,
) -> Result<Option<(crate::backend::DeviceBuffer, Vec<f64>)>, RunError> {
    let c = op.c as usize;
    // Each layer's (outputs, fan-in).
    let [(s, fan1), (k, fan2)] = match op.kind {
        OpKind::SqueezeExcite(se) => [
            (se.squeeze as usize, c),
            (se.out as usize, se.squeeze as usize),
        ],
        OpKind::ExpandDepthwise(xd) => {
            let taps = (xd.filter * xd.filter) as usize;
            [(xd.expanded as usize, c), (xd.expanded as usize, taps)]
        }
        _ => return Ok(None),
    };
    let scaled = |n: usize, fan_in: usize, seed: u64| -> Vec<f32> {
        let f = 1.0 / (fan_in as f32).sqrt();
        random_values(n, seed).iter().map(|v| v * f).collect()
    };
    let (w1, b1) = (scaled(s * fan1, fan1, seed), scaled(s, 1, seed ^ 1));
    let (w2, b2) = (scaled(k * fan2, fan2, seed ^ 2), scaled(k, 1, seed ^ 3));
    let layers = [w1.as_slice(), &b1, &w2, &b2];
    let packed = match op.kind {
        OpKind::SqueezeExcite(se) => se.pack(op.c, op.data_type, layers),
        OpKind::ExpandDepthwise(xd) => xd.pack(op.c, op.data_type, layers),
        _ => unreachable!("matched above"),
    };
    let bytes = packed.map_err(|reason| {
        RunError::Operator(crate::ops::OpError {
            op: op.describe(),
            reason,
        })
    })?;
    let buffer = ctx.device().alloc(bytes.len() as u64)?;
    buffer.upload(&bytes)?;
    let weight = |v: &f32| round_to(op.data_type, f64::from(*v));
    let bias = |v: &f32| f64::from(*v);
    let stored = w1
        .iter()
        .map(weight)
        .chain(b1.iter().map(bias))
        .chain(w2.iter().map(weight))
        .chain(b2.iter().map(bias))
        .collect();
    Ok(Some((buffer, stored)))
}

/// Runs `op` once on inputs seeded by `seed` (with inf/NaN/subnormal/near-overflow values
/// when `special`) and checks it against [`reference()`].
pub fn check(ctx: &Context, op: &OpProblem, seed: u64, special: bool) -> Result<OpCheck, RunError> {
    let inv = ctx.prepare_op(op)?;
    let dtype = op.data_type;
    let values = |n: u64, seed: u64| {
        if special {
            super::verify::special_values(n as usize, 0, seed).0
        } else {
            random_values(n as usize, seed)
        }
    };
    // A channel-slice input is read from the wider tensor's last channels (a split's second
    // half), so the run covers the input's channel offset too.
    let a_offset = op.a_ld.saturating_sub(op.c);
    // A pool's finish and a squeeze-and-excitation head may read FP32 partial sums.
    let a_type = match op.a_element_bytes() {
        4 => DataType::Fp32,
        _ => dtype,
    };
    let (a, a_vals) = upload(
        ctx.device(),
        a_type,
        &values(op.a_elements() + u64::from(a_offset), seed),
    )?;
    let b = match two_layer_params(ctx, op, seed ^ 0x5bd1)? {
        Some(params) => Some(params),
        None => match op.b_elements() {
            0 => None,
            n => Some(upload(ctx.device(), dtype, &values(n, seed ^ 0x5bd1))?),
        },
    };
    let y = poisoned(ctx.device(), dtype, op.y_elements())?;
    let ws = match op.workspace_bytes() {
        0 => None,
        n => Some(ctx.device().alloc(n)?),
    };
    ctx.run_op(
        &inv,
        &a,
        b.as_ref().map(|b| &b.0),
        &y,
        crate::ops::ChannelOffsets { a: a_offset, y: 0 },
        ws.as_ref(),
        &Stream::default(),
    )?;
    let mut raw = vec![0u8; y.bytes() as usize];
    ctx.device().synchronize()?;
    y.download(&mut raw)?;
    let gpu = decode(dtype, &raw);
    let expected = reference(
        op,
        &a_vals[a_offset as usize..],
        b.as_ref().map(|b| b.1.as_slice()),
    );
    // Only the written elements count; every other one (between the pixels of a channel
    // slice) must hold the poison (0xFF bytes) still.
    let written: Vec<usize> = if op.y_ld == 0 || op.y_ld == op.c {
        (0..expected.len()).collect()
    } else {
        let [oh, ow] = op.output();
        let pixels = (op.n * oh * ow) as usize;
        (0..pixels)
            .flat_map(|p| (0..op.c as usize).map(move |ch| p * op.y_ld as usize + ch))
            .collect()
    };
    let mut is_written = vec![false; expected.len()];
    for &i in &written {
        is_written[i] = true;
    }
    let poison_bytes = dtype.size_bytes();
    let written_outside = (0..expected.len())
        .filter(|&i| {
            !is_written[i]
                && !raw[i * poison_bytes..(i + 1) * poison_bytes]
                    .iter()
                    .all(|&b| b == 0xFF)
        })
        .count();
    let (g, r): (Vec<f64>, Vec<f64>) = written.iter().map(|&i| (gpu[i], expected[i])).unzip();
    let (error, class_mismatches) = if special {
        let s = compare_special(dtype, &g, &r);
        (s.error, s.class_mismatches)
    } else {
        (relative_error(&g, &r), 0)
    };
    Ok(OpCheck {
        error,
        class_mismatches,
        written_outside,
        passed: error <= tolerance(dtype) && class_mismatches == 0 && written_outside == 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nhwc(kind: OpKind, c: u32, hw: [u32; 2]) -> OpProblem {
        OpProblem::new(kind, 1, c, hw, Layout::Nhwc, DataType::Fp32)
    }

    #[test]
    fn max_pool_takes_the_window_maximum_and_keeps_nan() {
        // 1 channel, 4x4 input 0..16, 2x2 s2: the maxima of the four quadrants.
        let op = nhwc(
            OpKind::Pool(Pool2d {
                mode: PoolMode::Max,
                window: [2, 2],
                stride: [2, 2],
                pad: [0, 0],
                ceil_mode: false,
            }),
            1,
            [4, 4],
        );
        let a: Vec<f64> = (0..16).map(f64::from).collect();
        assert_eq!(reference(&op, &a, None), vec![5.0, 7.0, 13.0, 15.0]);
        let mut with_nan = a.clone();
        with_nan[4] = f64::NAN;
        let y = reference(&op, &with_nan, None);
        assert!(y[0].is_nan() && y[1] == 7.0);
    }

    #[test]
    fn average_pool_divisors_follow_pytorch() {
        // 3x3 s1 p1 on a 2x2 map of ones: counting the padding, each window holds 4 of 9.
        let mk = |mode| {
            nhwc(
                OpKind::Pool(Pool2d {
                    mode,
                    window: [3, 3],
                    stride: [1, 1],
                    pad: [1, 1],
                    ceil_mode: false,
                }),
                1,
                [2, 2],
            )
        };
        let ones = vec![1.0; 4];
        assert_eq!(
            reference(&mk(PoolMode::Average), &ones, None),
            vec![4.0 / 9.0; 4]
        );
        assert_eq!(
            reference(&mk(PoolMode::AverageExcludePad), &ones, None),
            vec![1.0; 4]
        );
        let g = nhwc(OpKind::GlobalAveragePool, 2, [2, 2]);
        // Channels interleaved (NHWC): channel 0 holds 0, 2, 4, 6; channel 1 holds 1, 3, 5, 7.
        let a: Vec<f64> = (0..8).map(f64::from).collect();
        assert_eq!(reference(&g, &a, None), vec![3.0, 4.0]);
    }

    #[test]
    fn resizes_match_pytorchs_sampling() {
        let a = vec![1.0, 2.0, 3.0, 4.0]; // 2x2, one channel
        let near = nhwc(
            OpKind::Resize {
                mode: ResizeMode::Nearest,
                out: [4, 4],
            },
            1,
            [2, 2],
        );
        assert_eq!(
            reference(&near, &a, None),
            vec![1., 1., 2., 2., 1., 1., 2., 2., 3., 3., 4., 4., 3., 3., 4., 4.]
        );
        let bil = nhwc(
            OpKind::Resize {
                mode: ResizeMode::Bilinear,
                out: [4, 4],
            },
            1,
            [2, 2],
        );
        // torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"), first row.
        let y = reference(&bil, &a, None);
        assert_eq!(&y[..4], &[1.0, 1.25, 1.75, 2.0]);
        assert_eq!(y[5], 1.25 + 0.25 * 2.0);
    }

    #[test]
    fn eltwise_broadcasts_per_channel_and_softmax_sums_to_one() {
        let mut se = nhwc(
            OpKind::Eltwise {
                op: EltwiseOp::Mul,
                broadcast: true,
            },
            2,
            [1, 2],
        );
        se.activation = Activation::Relu;
        let y = reference(&se, &[1.0, -2.0, 3.0, 4.0], Some(&[10.0, 0.5]));
        assert_eq!(y, vec![10.0, 0.0, 30.0, 2.0]);
        let sm = nhwc(OpKind::Softmax, 3, [1, 1]);
        let y = reference(&sm, &[0.0, (2f64).ln(), 1000.0], None);
        assert!((y.iter().sum::<f64>() - 1.0).abs() < 1e-12 && y[2] > 0.999);
        // A slice output: the 8 elements between pixels stay unwritten (NaN).
        let mut sliced = nhwc(
            OpKind::Eltwise {
                op: EltwiseOp::Copy,
                broadcast: false,
            },
            8,
            [1, 2],
        );
        sliced.y_ld = 16;
        let y = reference(&sliced, &[1.0; 16], None);
        assert_eq!(y.len(), 24);
        assert!(y[..8].iter().all(|&v| v == 1.0) && y[8..16].iter().all(|v| v.is_nan()));
    }

    #[test]
    fn the_selftest_set_is_valid_in_every_type() {
        for dt in [DataType::Fp32, DataType::Fp16, DataType::Bf16] {
            let set = problems(dt);
            assert!(set.len() >= 34);
            assert!(set
                .iter()
                .any(|p| p.layout == Layout::Nhwc && p.vector_width() == 1));
            assert!(set.iter().any(|p| p.vector_width() == 8 && p.y_ld > p.c));
            for op in &set {
                op.validate().unwrap();
            }
        }
    }
}
