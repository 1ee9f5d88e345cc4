//! Checking GPU results: random inputs in the problem's type, a CPU reference computed in f64,
//! poisoned outputs, relative error, and timing with device events. Used by `kiln run`,
//! `kiln selftest`, the demo and the GPU tests.

use kiln_format::{ConvProblem, DataType};

use super::timing::time_gpu_only_fitted;
use crate::backend::{Device, DeviceBuffer, Stream};
use crate::context::Context;
use crate::error::RunError;
use crate::resolve::Variant;

pub use crate::elements::{
    bf16_to_f32, decode, encode, f16_to_f32, f32_to_bf16, f32_to_f16, round_to,
};

/// Uniform values in [-1, 1) from a seeded xorshift (fresh inputs per seed).
pub fn random_values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A problem's geometry, for computing its outputs one by one in f64.
struct ReferenceConv {
    cl: bool,
    n_c_k_g: [usize; 4],
    input: [usize; 3],
    filter: [usize; 3],
    output: [usize; 3],
    pad: [i64; 3],
    stride: [i64; 3],
    dilation: [i64; 3],
}

impl ReferenceConv {
    fn new(p: &ConvProblem) -> Self {
        let us = |v: [u32; 3]| v.map(|d| d as usize);
        ReferenceConv {
            cl: p.layouts()[0].channels_last(),
            n_c_k_g: [p.n(), p.c(), p.k(), p.groups()].map(|v| v as usize),
            input: us(p.input()),
            filter: us(p.filter()),
            output: us(p.output()),
            pad: p.pad().map(|v| v as i64),
            stride: p.stride().map(|v| v as i64),
            dilation: p.dilation().map(|v| v as i64),
        }
    }

    /// y's element count.
    fn outputs(&self) -> usize {
        let [n, _, k, _] = self.n_c_k_g;
        n * k * self.output.iter().product::<usize>()
    }

    /// y's element `r` (its flat index in y's layout).
    fn at(&self, x: &[f64], w: &[f64], r: usize) -> f64 {
        let cl = self.cl;
        let [_, c, k, g] = self.n_c_k_g;
        let (cpg, kpg) = (c / g, k / g);
        let [id, ih, iw] = self.input;
        let [fd, fh, fw] = self.filter;
        let [od, oh, ow] = self.output;
        let [pd, ph, pw] = self.pad;
        let [sd, sh, sw] = self.stride;
        let [dd, dh, dw] = self.dilation;
        let mut r = r;
        let (kk, oww, ohh, odd, nn);
        if cl {
            kk = r % k;
            r /= k;
            oww = r % ow;
            r /= ow;
            ohh = r % oh;
            r /= oh;
            odd = r % od;
            nn = r / od;
        } else {
            oww = r % ow;
            r /= ow;
            ohh = r % oh;
            r /= oh;
            odd = r % od;
            r /= od;
            kk = r % k;
            nn = r / k;
        }
        let grp = kk / kpg;
        let mut acc = 0f64;
        for cg in 0..cpg {
            let cc = grp * cpg + cg;
            for a in 0..fd {
                let zd = odd as i64 * sd - pd + a as i64 * dd;
                if zd < 0 || zd >= id as i64 {
                    continue;
                }
                for b in 0..fh {
                    let zh = ohh as i64 * sh - ph + b as i64 * dh;
                    if zh < 0 || zh >= ih as i64 {
                        continue;
                    }
                    for e in 0..fw {
                        let zw = oww as i64 * sw - pw + e as i64 * dw;
                        if zw < 0 || zw >= iw as i64 {
                            continue;
                        }
                        let (zd, zh, zw) = (zd as usize, zh as usize, zw as usize);
                        let (xi, wi) = if cl {
                            (
                                (((nn * id + zd) * ih + zh) * iw + zw) * c + cc,
                                (((kk * fd + a) * fh + b) * fw + e) * cpg + cg,
                            )
                        } else {
                            (
                                (((nn * c + cc) * id + zd) * ih + zh) * iw + zw,
                                (((kk * cpg + cg) * fd + a) * fh + b) * fw + e,
                            )
                        };
                        acc += x[xi] * w[wi];
                    }
                }
            }
        }
        acc
    }
}

/// Runs `f` over `out`'s elements on the CPU's cores, with each element's position.
fn par_fill(out: &mut [f64], f: impl Fn(usize) -> f64 + Sync) {
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1)
        .min(64);
    let chunk = out.len().div_ceil(threads).max(1);
    let f = &f;
    std::thread::scope(|s| {
        for (ci, part) in out.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                for (j, v) in part.iter_mut().enumerate() {
                    *v = f(ci * chunk + j);
                }
            });
        }
    });
}

/// The forward convolution in f64, output in y's layout. Spread over the CPU's cores.
pub fn reference(p: &ConvProblem, x: &[f64], w: &[f64]) -> Vec<f64> {
    let conv = ReferenceConv::new(p);
    let mut y = vec![0f64; conv.outputs()];
    par_fill(&mut y, |r| conv.at(x, w, r));
    y
}

/// The reference's elements at `indices` (flat, in y's layout) only.
pub fn reference_at(p: &ConvProblem, x: &[f64], w: &[f64], indices: &[usize]) -> Vec<f64> {
    let conv = ReferenceConv::new(p);
    let mut y = vec![0f64; indices.len()];
    par_fill(&mut y, |i| conv.at(x, w, indices[i]));
    y
}

/// Multiply-adds of CPU reference `kiln run` spends at most (about a second on a few cores):
/// past it, a sample of the outputs is checked, so that a large layer's check stays bounded.
pub const REFERENCE_BUDGET_MACS: u64 = 1 << 28;

/// The outputs a check of `p` compares within `budget` multiply-adds: `None` when every output
/// fits, else a sorted pseudo-random sample (seeded) of as many outputs as fit, at least 4096.
pub fn sample_outputs(p: &ConvProblem, budget: u64, seed: u64) -> Option<Vec<usize>> {
    let total = p.element_counts()[2];
    let per_output =
        (p.group_channels() as u64) * p.filter().iter().map(|&v| v as u64).product::<u64>();
    if total.saturating_mul(per_output) <= budget {
        return None;
    }
    let count = (budget / per_output.max(1)).max(4096);
    if count >= total {
        return None;
    }
    let count = count as usize;
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut picked: Vec<usize> = (0..count)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % total) as usize
        })
        .collect();
    picked.sort_unstable();
    picked.dedup();
    Some(picked)
}

/// Relative error ||gpu - ref||_2 / ||ref||_2 (infinite if the GPU wrote a non-finite value).
pub fn relative_error(gpu: &[f64], reference: &[f64]) -> f64 {
    if gpu.len() != reference.len() || gpu.iter().any(|v| !v.is_finite()) {
        return f64::INFINITY;
    }
    let (mut num, mut den) = (0f64, 0f64);
    for (a, b) in gpu.iter().zip(reference) {
        num += (a - b) * (a - b);
        den += b * b;
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
}

/// Tolerance kiln holds a problem's results to: 1e-2 for FP16 and BF16, 1e-5 for FP32
/// (FFMA or 3xTF32), 5e-3 for FP32 problems that opted in to TF32 math.
pub fn tolerance(p: &ConvProblem) -> f64 {
    match (p.data_types()[0], p.math()) {
        (DataType::Fp16 | DataType::Bf16, _) => 1e-2,
        (_, kiln_format::MathMode::AllowTf32) => 5e-3,
        _ => 1e-5,
    }
}

/// The workspace an invoker needs (`None` when it needs none).
pub fn workspace_for(
    device: &Device,
    inv: &crate::invoker::Invoker,
) -> Result<Option<DeviceBuffer>, RunError> {
    match inv.workspace_bytes() {
        0 => Ok(None),
        n => Ok(Some(device.alloc(n)?)),
    }
}

/// One checked run.
#[derive(Clone, Debug)]
pub struct CheckedRun {
    /// Relative error against the f64 reference.
    pub error: f64,
    /// Median kernel time over the timed repeats (ms).
    pub time_ms: f64,
    /// Whether the error is within [`tolerance`].
    pub passed: bool,
    /// Outputs compared with the reference: all of them, or a sample on large problems
    /// ([`REFERENCE_BUDGET_MACS`]).
    pub compared: u64,
    /// y's element count.
    pub outputs: u64,
}

/// A new buffer holding `values` encoded as `dtype`, and the values as stored (rounded to
/// `dtype`, in f64), which is what a reference computation must use.
pub fn upload(
    device: &Device,
    dtype: DataType,
    values: &[f32],
) -> Result<(DeviceBuffer, Vec<f64>), RunError> {
    let (bytes, stored) = encode(dtype, values);
    let b = device.alloc(bytes.len() as u64)?;
    b.upload(&bytes)?;
    Ok((b, stored))
}

/// A new buffer of `elements` values of `dtype`, poisoned (see [`poison`]).
pub fn poisoned(device: &Device, dtype: DataType, elements: u64) -> Result<DeviceBuffer, RunError> {
    let b = device.alloc(elements.saturating_mul(dtype.size_bytes() as u64))?;
    poison(&b)?;
    Ok(b)
}

/// Fills `b` with 0xFF bytes (NaN in every float type), so that an element a kernel never
/// writes fails every check.
pub fn poison(b: &DeviceBuffer) -> Result<(), RunError> {
    Ok(b.fill(0xFF)?)
}

/// Waits for the device, then reads `b` back as f64 values of `dtype`.
pub fn download(b: &DeviceBuffer, dtype: DataType) -> Result<Vec<f64>, RunError> {
    let len = usize::try_from(b.bytes()).map_err(|_| {
        crate::backend::BackendError::kiln("download", "buffer larger than host memory can hold")
    })?;
    let mut out = vec![0u8; len];
    b.device().synchronize()?;
    b.download(&mut out)?;
    Ok(decode(dtype, &out))
}

/// One problem's inputs on the device, an output buffer and the f64 reference of the inputs,
/// made once and shared by every variant checked on the problem: on large problems the CPU
/// reference costs far more than the kernels.
pub struct ProblemCheck<'a> {
    ctx: &'a Context,
    problem: ConvProblem,
    x: DeviceBuffer,
    w: DeviceBuffer,
    y: DeviceBuffer,
    epilogue: Option<super::epilogue::EpilogueInputs>,
    /// Where a problem fusing a global pool's sums has the pool end (n x k, y's type).
    pooled: Option<DeviceBuffer>,
    /// The outputs compared, when a sample ([`sample_outputs`]); `None`: every output.
    sample: Option<Vec<usize>>,
    /// The reference at the compared outputs.
    reference: Vec<f64>,
}

impl<'a> ProblemCheck<'a> {
    /// Random inputs (seeded) in the problem's type.
    pub fn random(ctx: &'a Context, p: &ConvProblem, seed: u64) -> Result<Self, RunError> {
        let [xn, wn, _] = p.element_counts();
        Self::with_inputs(
            ctx,
            p,
            &random_values(xn as usize, seed),
            &random_values(wn as usize, seed ^ 0xABCD),
            None,
        )
    }

    /// As [`ProblemCheck::random`], with the CPU reference held to `budget` multiply-adds: a
    /// larger problem compares a sample of its outputs ([`sample_outputs`]), and every output
    /// must still be finite (none left poisoned).
    pub fn random_within(
        ctx: &'a Context,
        p: &ConvProblem,
        seed: u64,
        budget: u64,
    ) -> Result<Self, RunError> {
        let [xn, wn, _] = p.element_counts();
        Self::with_inputs(
            ctx,
            p,
            &random_values(xn as usize, seed),
            &random_values(wn as usize, seed ^ 0xABCD),
            sample_outputs(p, budget, seed),
        )
    }

    /// Inputs with [`special_values`] (inf, NaN, subnormals, near-overflow) among random ones.
    pub fn special(ctx: &'a Context, p: &ConvProblem, seed: u64) -> Result<Self, RunError> {
        let [xn, wn, _] = p.element_counts();
        let (xs, ws) = special_values(xn as usize, wn as usize, seed);
        Self::with_inputs(ctx, p, &xs, &ws, None)
    }

    fn with_inputs(
        ctx: &'a Context,
        p: &ConvProblem,
        xs: &[f32],
        ws: &[f32],
        sample: Option<Vec<usize>>,
    ) -> Result<Self, RunError> {
        let dtype = p.data_types()[0];
        let dev = ctx.device();
        let (x, xv) = upload(dev, dtype, xs)?;
        let (w, wv) = upload(dev, dtype, ws)?;
        let epilogue = super::epilogue::EpilogueInputs::new(dev, p, xs.len() as u64)?;
        // A fused gate multiplies x before the convolution reads it.
        let xv = match &epilogue {
            Some(e) if p.fusion().x_scale => e.gated_x(p, &xv),
            _ => xv,
        };
        let y_offset = epilogue.as_ref().map_or(0, |e| e.y_offset as u64);
        let y = dev.alloc((p.y_extent() + y_offset).saturating_mul(dtype.size_bytes() as u64))?;
        // A fused pool's means are compared after y (every output is needed for them).
        let pooled = match p.fusion().pool && sample.is_none() {
            true => {
                Some(dev.alloc(u64::from(p.n()) * u64::from(p.k()) * dtype.size_bytes() as u64)?)
            }
            false => None,
        };
        let reference = match &sample {
            None => {
                let mut all = reference(p, &xv, &wv);
                if let Some(e) = &epilogue {
                    e.apply(p, &mut all);
                }
                if pooled.is_some() {
                    let means = pool_means(p, &all);
                    all.extend(means);
                }
                all
            }
            Some(indices) => {
                let mut some = reference_at(p, &xv, &wv, indices);
                if let Some(e) = &epilogue {
                    for (v, &i) in some.iter_mut().zip(indices) {
                        *v = e.apply_one(p, i, *v);
                    }
                }
                some
            }
        };
        Ok(ProblemCheck {
            ctx,
            problem: *p,
            x,
            w,
            y,
            epilogue,
            pooled,
            sample,
            reference,
        })
    }

    /// Runs `v` once into the poisoned output and reads the output back, with the invoker
    /// and workspace it ran with.
    fn run(&self, v: &Variant) -> Result<(Vec<f64>, Invoked), RunError> {
        let dtype = self.problem.data_types()[0];
        poison(&self.y)?;
        let inv = self.ctx.prepare(&self.problem, v)?;
        let ws = workspace_for(self.ctx.device(), &inv)?;
        let pool = match inv.pool_partials() {
            Some(l) => Some(
                self.ctx
                    .device()
                    .alloc(l.bytes(self.problem.n(), self.problem.k()))?,
            ),
            None => None,
        };
        self.launch(&inv, ws.as_ref(), pool.as_ref(), &Stream::default())?;
        let offset = self.epilogue.as_ref().map_or(0, |e| e.y_offset);
        let mut out = super::epilogue::gather_y(&self.problem, download(&self.y, dtype)?, offset);
        if let (Some(pooled), Some(sums), Some(partials)) =
            (&self.pooled, &pool, inv.pool_partials())
        {
            out.extend(self.finish_pool(pooled, sums, partials)?);
        }
        Ok((self.compared(out), Invoked { inv, ws, pool }))
    }

    /// The means of the pool whose sums a run wrote into `sums`, by the pool's finishing
    /// operator (into `pooled`, poisoned first), read back.
    fn finish_pool(
        &self,
        pooled: &DeviceBuffer,
        sums: &DeviceBuffer,
        partials: crate::solvers::PoolPartials,
    ) -> Result<Vec<f64>, RunError> {
        let p = &self.problem;
        let dtype = p.data_types()[2];
        let [_, oh, ow] = p.output();
        let op = crate::ops::OpProblem::new(
            crate::ops::OpKind::GlobalAveragePoolFinish { partials },
            p.n(),
            p.k(),
            [oh, ow],
            kiln_format::Layout::Nhwc,
            dtype,
        );
        let inv = self.ctx.prepare_op(&op)?;
        poison(pooled)?;
        self.ctx.run_op(
            &inv,
            sums,
            None,
            pooled,
            crate::ops::ChannelOffsets::default(),
            None,
            &Stream::default(),
        )?;
        download(pooled, dtype)
    }

    /// The outputs the reference covers: all of `out`, or its sample. A sampled check of
    /// random inputs also needs every output finite: an element left poisoned (NaN) outside
    /// the sample makes the compared values NaN, which fails every check.
    fn compared(&self, out: Vec<f64>) -> Vec<f64> {
        let Some(indices) = &self.sample else {
            return out;
        };
        let all_finite = out.iter().all(|v| v.is_finite());
        indices
            .iter()
            .map(|&i| match out.get(i) {
                Some(&v) if all_finite => v,
                _ => f64::NAN,
            })
            .collect()
    }

    /// How many outputs the check compares, and y's element count.
    pub fn compared_outputs(&self) -> (usize, u64) {
        (self.reference.len(), self.problem.element_counts()[2])
    }

    /// One run of `inv` on the check's buffers, with the epilogue's inputs when it has some.
    fn launch(
        &self,
        inv: &crate::invoker::Invoker,
        ws: Option<&DeviceBuffer>,
        pool: Option<&DeviceBuffer>,
        stream: &Stream,
    ) -> Result<(), RunError> {
        let mut args = match &self.epilogue {
            Some(e) => e.args(),
            None => crate::context::EpilogueArgs::defaults(&self.problem),
        };
        args.pool = pool;
        self.ctx
            .run_fused(inv, &self.x, &self.w, &self.y, ws, stream, &args)
    }

    /// The relative error of `v`'s output against the reference (see [`relative_error`]).
    pub fn error(&self, v: &Variant) -> Result<f64, RunError> {
        Ok(relative_error(&self.run(v)?.0, &self.reference))
    }

    /// `v`'s output compared with the reference class by class ([`compare_special`]), and
    /// whether it passes: every class matches and the finite ones are within [`tolerance`].
    pub fn special_classes(&self, v: &Variant) -> Result<(SpecialCheck, bool), RunError> {
        let dtype = self.problem.data_types()[0];
        let check = compare_special(dtype, &self.run(v)?.0, &self.reference);
        let passed = check.class_mismatches == 0 && check.error <= tolerance(&self.problem);
        Ok((check, passed))
    }
}

/// A prepared invoker and its workspace, kept for timing after the checked run.
struct Invoked {
    inv: std::sync::Arc<crate::invoker::Invoker>,
    ws: Option<DeviceBuffer>,
    /// The partial sums of a fused pool.
    pool: Option<DeviceBuffer>,
}

/// Runs `v` on `p` with fresh random inputs (seeded), output poisoned first, and checks it
/// against the CPU reference; then times it GPU-only (a graph of back-to-back calls, replayed
/// `repeats` times: [`time_gpu_only_fitted`]).
pub fn run_checked(
    ctx: &Context,
    p: &ConvProblem,
    v: &Variant,
    seed: u64,
    repeats: usize,
) -> Result<CheckedRun, RunError> {
    let check = ProblemCheck::random_within(ctx, p, seed, REFERENCE_BUDGET_MACS)?;
    let (out, Invoked { inv, ws, pool }) = check.run(v)?;
    let error = relative_error(&out, &check.reference);
    let (compared, outputs) = check.compared_outputs();
    let time_ms = time_gpu_only_fitted(ctx.device(), repeats, |s, _| {
        check.launch(&inv, ws.as_ref(), pool.as_ref(), s)
    })?
    .0
    .median_ms;
    Ok(CheckedRun {
        error,
        time_ms,
        passed: error <= tolerance(p),
        compared: compared as u64,
        outputs,
    })
}

/// The per-(image, channel) means of `y`, the f64 output of `p` in its dense channels-last
/// layout: what a global average pool of y computes (a fused pool sums y before rounding).
pub fn pool_means(p: &ConvProblem, y: &[f64]) -> Vec<f64> {
    let (n, k) = (p.n() as usize, p.k() as usize);
    let pixels = y.len() / (n * k).max(1);
    let mut means = vec![0.0; n * k];
    for (i, v) in y.iter().enumerate() {
        means[i / (pixels * k) * k + i % k] += v;
    }
    for m in &mut means {
        *m /= pixels as f64;
    }
    means
}

/// Inputs with IEEE special values among random ones: x holds +inf, -inf, NaN, FP32
/// subnormals and values near the top of FP32's range (every 997th element, in turn); w holds
/// finite normal values. Stored as FP16 or BF16, the tiny values round to zero and the huge ones
/// to inf (FP16) or stay huge (BF16).
pub fn special_values(xn: usize, wn: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    const SPECIAL: [f32; 7] = [
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1.0e-40,
        -3.0e-39,
        1.0e37,
        -2.0e37,
    ];
    let mut x = random_values(xn, seed);
    for (i, v) in x.iter_mut().enumerate().filter(|(i, _)| i % 997 == 13) {
        *v = SPECIAL[(i / 997) % SPECIAL.len()];
    }
    (x, random_values(wn, seed ^ 0xABCD))
}

/// How a result with special values compares with the f64 reference: outputs whose class
/// differs (NaN, +inf, -inf or finite), and the relative error over outputs finite in both.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecialCheck {
    /// Outputs whose class differs from the reference's.
    pub class_mismatches: usize,
    /// Of those, outputs that are NaN where the reference is +-inf.
    pub inf_as_nan: usize,
    /// Outputs that are not finite in the reference.
    pub non_finite: usize,
    /// Relative error over the outputs finite in both.
    pub error: f64,
}

/// Compares `gpu` with `reference` class by class (the reference rounded to the output type
/// `dtype` first, as the kernel's result would be: past FP16's range a finite sum is inf).
pub fn compare_special(dtype: DataType, gpu: &[f64], reference: &[f64]) -> SpecialCheck {
    let class = |v: f64| {
        if v.is_nan() {
            0
        } else if v == f64::INFINITY {
            1
        } else if v == f64::NEG_INFINITY {
            2
        } else {
            3
        }
    };
    let (mut mismatches, mut inf_as_nan, mut non_finite, mut num, mut den) = (0, 0, 0, 0f64, 0f64);
    for (g, r) in gpu.iter().zip(reference) {
        let r = round_to(dtype, *r);
        non_finite += usize::from(!r.is_finite());
        if class(*g) != class(r) {
            mismatches += 1;
            inf_as_nan += usize::from(g.is_nan() && r.is_infinite());
        } else if r.is_finite() {
            num += (g - r) * (g - r);
            den += r * r;
        }
    }
    mismatches += gpu.len().abs_diff(reference.len());
    SpecialCheck {
        class_mismatches: mismatches,
        inf_as_nan,
        non_finite,
        error: if den == 0.0 {
            num.sqrt()
        } else {
            (num / den).sqrt()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_format::ConvSpec;

    #[test]
    fn special_values_compare_by_class() {
        let inf = f64::INFINITY;
        let f32 = DataType::Fp32;
        let r = compare_special(f32, &[1.0, inf, f64::NAN, 2.0], &[1.0, inf, f64::NAN, 2.0]);
        assert_eq!((r.class_mismatches, r.non_finite, r.error), (0, 2, 0.0));
        let r = compare_special(f32, &[1.0, f64::NAN, -inf, 2.0], &[1.0, inf, f64::NAN, 2.5]);
        assert_eq!((r.class_mismatches, r.inf_as_nan), (2, 1));
        assert!((r.error - 0.5 / (1.0f64 + 6.25).sqrt()).abs() < 1e-12);
        // A reference beyond FP32's range is +inf as an FP32 result.
        assert_eq!(compare_special(f32, &[inf], &[1e39]).class_mismatches, 0);
        // Past FP16's range (65504) it is inf as an FP16 result, but finite as a BF16 one.
        assert_eq!(
            compare_special(DataType::Fp16, &[inf], &[7e4]).class_mismatches,
            0
        );
        assert_eq!(
            compare_special(DataType::Bf16, &[inf], &[7e4]).class_mismatches,
            1
        );
        let (x, w) = special_values(3000, 100, 1);
        assert!(x[13].is_infinite() && x[1010].is_infinite() && x[2007].is_nan());
        assert!(w.iter().all(|v| v.is_normal()));
    }

    #[test]
    fn half_conversions_round_trip() {
        for v in [0.0f32, 1.0, -2.5, 0.1, 65504.0, 6.1e-5, 3.0e-7, -0.333] {
            let h = f32_to_f16(v);
            assert!((f16_to_f32(h) - v).abs() <= v.abs() * 1e-3 + 6e-8, "{v}");
            let b = f32_to_bf16(v);
            assert!((bf16_to_f32(b) - v).abs() <= v.abs() * 8e-3, "{v}");
        }
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        assert!(f16_to_f32(0xffff).is_nan(), "the poison pattern is NaN");
    }

    #[test]
    fn reference_matches_hand_computation() {
        // 1x1x3x3 input, 2x2 filter of ones, pad 0: each output sums a 2x2 window.
        let p = ConvProblem::new(ConvSpec {
            input: [1, 3, 3],
            filter: [1, 2, 2],
            ..ConvSpec::default()
        })
        .unwrap();
        let x: Vec<f64> = (1..=9).map(f64::from).collect();
        let y = reference(&p, &x, &[1.0; 4]);
        assert_eq!(y, vec![12.0, 16.0, 24.0, 28.0]);
        // Depthwise, channels last: each channel convolves with its own filter.
        let p = ConvProblem::new(ConvSpec {
            c: 2,
            k: 2,
            groups: 2,
            input: [1, 1, 2],
            filter: [1, 1, 1],
            layouts: [kiln_format::Layout::Nhwc; 3],
            ..ConvSpec::default()
        })
        .unwrap();
        let y = reference(&p, &[1.0, 10.0, 2.0, 20.0], &[3.0, 5.0]);
        assert_eq!(y, vec![3.0, 50.0, 6.0, 100.0]);
    }

    #[test]
    fn a_sampled_reference_holds_the_full_one_at_its_outputs() {
        // 3-D, grouped, strided and dilated, channels last: every index path of the reference.
        let p = ConvProblem::new(ConvSpec {
            spatial_dims: 3,
            n: 2,
            c: 6,
            k: 4,
            groups: 2,
            input: [5, 7, 6],
            filter: [3, 3, 2],
            pad: [1, 1, 0],
            stride: [1, 2, 1],
            dilation: [1, 1, 2],
            layouts: [kiln_format::Layout::Ndhwc; 3],
            ..ConvSpec::default()
        })
        .unwrap();
        let [xn, wn, yn] = p.element_counts();
        let x: Vec<f64> = random_values(xn as usize, 3)
            .into_iter()
            .map(f64::from)
            .collect();
        let w: Vec<f64> = random_values(wn as usize, 4)
            .into_iter()
            .map(f64::from)
            .collect();
        let full = reference(&p, &x, &w);
        assert_eq!(full.len() as u64, yn);
        // 54 multiply-adds an output (3 channels a group x 3x3x2 taps); fewer than 4096
        // outputs are always checked whole.
        assert_eq!(sample_outputs(&p, yn * 54, 1), None);
        assert_eq!(sample_outputs(&p, 54, 1), None);
        let picked: Vec<usize> = (0..yn as usize).step_by(7).collect();
        let at = reference_at(&p, &x, &w, &picked);
        for (v, &i) in at.iter().zip(&picked) {
            assert_eq!(*v, full[i], "output {i}");
        }
        // A large layer: 4096 outputs at least, as many as the budget pays for.
        let big = ConvProblem::from_find_db_key(
            "512-2-7-7-3x3x3-512-2-7-7-32-1x1x1-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F",
        )
        .unwrap();
        let s = sample_outputs(&big, REFERENCE_BUDGET_MACS, 1).unwrap();
        let want = (REFERENCE_BUDGET_MACS / (512 * 27)) as usize;
        assert!(s.len() <= want && s.len() > want * 9 / 10, "{}", s.len());
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(*s.last().unwrap() < big.element_counts()[2] as usize);
    }
}
