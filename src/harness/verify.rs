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

/// The forward convolution in f64, output in y's layout. Spread over the CPU's cores.
pub fn reference(p: &ConvProblem, x: &[f64], w: &[f64]) -> Vec<f64> {
    let [_, ih, iw] = p.input();
    let id = p.input()[0];
    let [fd, fh, fw] = p.filter();
    let [od, oh, ow] = p.output();
    let (n, c, k, g) = (
        p.n() as usize,
        p.c() as usize,
        p.k() as usize,
        p.groups() as usize,
    );
    let (cpg, kpg) = (c / g, k / g);
    let cl = p.layouts()[0].channels_last();
    let [pd, ph, pw] = p.pad().map(|v| v as i64);
    let [sd, sh, sw] = p.stride().map(|v| v as i64);
    let [dd, dh, dw] = p.dilation().map(|v| v as i64);
    let (id, ih, iw, fd, fh, fw, od, oh, ow) = (
        id as usize,
        ih as usize,
        iw as usize,
        fd as usize,
        fh as usize,
        fw as usize,
        od as usize,
        oh as usize,
        ow as usize,
    );
    let total = n * k * od * oh * ow;
    let mut y = vec![0f64; total];
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1)
        .min(64);
    let chunk = total.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (ci, part) in y.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                for (j, out) in part.iter_mut().enumerate() {
                    let mut r = ci * chunk + j;
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
                    *out = acc;
                }
            });
        }
    });
    y
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
        )
    }

    /// Inputs with [`special_values`] (inf, NaN, subnormals, near-overflow) among random ones.
    pub fn special(ctx: &'a Context, p: &ConvProblem, seed: u64) -> Result<Self, RunError> {
        let [xn, wn, _] = p.element_counts();
        let (xs, ws) = special_values(xn as usize, wn as usize, seed);
        Self::with_inputs(ctx, p, &xs, &ws)
    }

    fn with_inputs(
        ctx: &'a Context,
        p: &ConvProblem,
        xs: &[f32],
        ws: &[f32],
    ) -> Result<Self, RunError> {
        let dtype = p.data_types()[0];
        let dev = ctx.device();
        let (x, xv) = upload(dev, dtype, xs)?;
        let (w, wv) = upload(dev, dtype, ws)?;
        let epilogue = super::epilogue::EpilogueInputs::new(dev, p, xs.len() as u64)?;
        let y_offset = epilogue.as_ref().map_or(0, |e| e.y_offset as u64);
        let y = dev.alloc((p.y_extent() + y_offset).saturating_mul(dtype.size_bytes() as u64))?;
        let mut reference = reference(p, &xv, &wv);
        if let Some(e) = &epilogue {
            e.apply(p, &mut reference);
        }
        Ok(ProblemCheck {
            ctx,
            problem: *p,
            x,
            w,
            y,
            epilogue,
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
        self.launch(&inv, ws.as_ref(), &Stream::default())?;
        let offset = self.epilogue.as_ref().map_or(0, |e| e.y_offset);
        let out = super::epilogue::gather_y(&self.problem, download(&self.y, dtype)?, offset);
        Ok((out, Invoked { inv, ws }))
    }

    /// One run of `inv` on the check's buffers, with the epilogue's inputs when it has some.
    fn launch(
        &self,
        inv: &crate::invoker::Invoker,
        ws: Option<&DeviceBuffer>,
        stream: &Stream,
    ) -> Result<(), RunError> {
        let args = match &self.epilogue {
            Some(e) => e.args(),
            None => crate::context::EpilogueArgs::defaults(&self.problem),
        };
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
    let check = ProblemCheck::random(ctx, p, seed)?;
    let (out, Invoked { inv, ws }) = check.run(v)?;
    let error = relative_error(&out, &check.reference);
    let time_ms = time_gpu_only_fitted(ctx.device(), repeats, |s, _| {
        check.launch(&inv, ws.as_ref(), s)
    })?
    .0
    .median_ms;
    Ok(CheckedRun {
        error,
        time_ms,
        passed: error <= tolerance(p),
    })
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
}
