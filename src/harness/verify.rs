//! Checking GPU results: random inputs in the problem's type, a CPU reference computed in f64,
//! poisoned outputs, relative error, and timing with device events. Used by `kiln run`,
//! `kiln selftest`, the demo and the GPU tests.

use kiln_format::{ConvProblem, DataType};

use super::timing::time_device;
use crate::backend::{Device, DeviceBuffer, Stream};
use crate::context::Context;
use crate::error::RunError;
use crate::resolve::Variant;

/// f32 -> IEEE half bits, round to nearest even (as `kernels/kiln_gpu.h`).
pub fn f32_to_f16(f: f32) -> u16 {
    let b = f.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let abs = b & 0x7fff_ffff;
    if abs > 0x7f80_0000 {
        return sign | 0x7e00;
    }
    if abs >= 0x477f_f000 {
        return sign | 0x7c00;
    }
    if abs < 0x3880_0000 {
        let a = f32::from_bits(abs) * 16_777_216.0;
        let mut r = a as u32;
        let frac = a - r as f32;
        if frac > 0.5 || (frac == 0.5 && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let rounded = abs + 0xfff + ((abs >> 13) & 1);
    sign | ((rounded - 0x3800_0000) >> 13) as u16
}

/// IEEE half bits -> f32.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    match exp {
        0x1f => f32::from_bits(sign | 0x7f80_0000 | (man << 13)),
        0 if man == 0 => f32::from_bits(sign),
        0 => {
            let v = man as f32 / 16_777_216.0;
            if sign != 0 {
                -v
            } else {
                v
            }
        }
        _ => f32::from_bits(sign | ((exp + 112) << 23) | (man << 13)),
    }
}

/// f32 -> bfloat16 bits, round to nearest even.
pub fn f32_to_bf16(f: f32) -> u16 {
    let b = f.to_bits();
    if b & 0x7fff_ffff > 0x7f80_0000 {
        return ((b >> 16) | 0x40) as u16;
    }
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// bfloat16 bits -> f32.
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// Encodes values in `dtype`; returns the bytes and the values as stored (rounded).
pub fn encode(dtype: DataType, values: &[f32]) -> (Vec<u8>, Vec<f64>) {
    let mut bytes = Vec::with_capacity(values.len() * dtype.size_bytes());
    let mut stored = Vec::with_capacity(values.len());
    for &v in values {
        match dtype {
            DataType::Fp16 => {
                let h = f32_to_f16(v);
                bytes.extend_from_slice(&h.to_le_bytes());
                stored.push(f16_to_f32(h) as f64);
            }
            DataType::Bf16 => {
                let h = f32_to_bf16(v);
                bytes.extend_from_slice(&h.to_le_bytes());
                stored.push(bf16_to_f32(h) as f64);
            }
            _ => {
                bytes.extend_from_slice(&v.to_le_bytes());
                stored.push(v as f64);
            }
        }
    }
    (bytes, stored)
}

/// Decodes device bytes of `dtype`.
pub fn decode(dtype: DataType, bytes: &[u8]) -> Vec<f64> {
    match dtype {
        DataType::Fp16 => bytes
            .chunks_exact(2)
            .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])) as f64)
            .collect(),
        DataType::Bf16 => bytes
            .chunks_exact(2)
            .map(|c| bf16_to_f32(u16::from_le_bytes([c[0], c[1]])) as f64)
            .collect(),
        _ => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect(),
    }
}

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

/// Tolerance kiln holds each type to.
pub fn tolerance(dtype: DataType) -> f64 {
    match dtype {
        DataType::Fp16 | DataType::Bf16 => 1e-2,
        _ => 1e-5,
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

/// Runs `v` on `p` with fresh random inputs (seeded), output poisoned first, and checks it
/// against the CPU reference; then times `repeats` launches (after 2 warm-ups).
pub fn run_checked(
    ctx: &Context,
    p: &ConvProblem,
    v: &Variant,
    seed: u64,
    repeats: usize,
) -> Result<CheckedRun, RunError> {
    let dtype = p.data_types()[0];
    let [xn, wn, yn] = p.element_counts();
    let dev = ctx.device();
    let (x, xv) = upload(dev, dtype, &random_values(xn as usize, seed))?;
    let (w, wv) = upload(dev, dtype, &random_values(wn as usize, seed ^ 0xABCD))?;
    let y = poisoned(dev, dtype, yn)?;
    let inv = ctx.prepare(p, v)?;
    let stream = Stream::default();
    ctx.run(&inv, &x, &w, &y, None, &stream)?;
    let out = download(&y, dtype)?;
    let error = relative_error(&out, &reference(p, &xv, &wv));
    let time_ms = time_device(dev, 2, repeats, |_| {
        ctx.run(&inv, &x, &w, &y, None, &stream)
    })?
    .median_ms;
    Ok(CheckedRun {
        error,
        time_ms,
        passed: error <= tolerance(dtype),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_format::ConvSpec;

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
