//! The fused epilogue in kiln's checks: its inputs on the device and as stored, the f64
//! reference `y = act(alpha * conv * scale[k] + bias[k] + beta * z)`, and reading a channel
//! slice of a wider y back (every element outside the slice must still hold its poison).

use kiln_format::{ConvProblem, DataType};

use super::verify::{random_values, upload};
use crate::backend::{Device, DeviceBuffer};
use crate::context::EpilogueArgs;
use crate::error::RunError;

/// A fused problem's epilogue inputs: each tensor on the device and as stored (f64).
pub struct EpilogueInputs {
    scale: Option<(DeviceBuffer, Vec<f64>)>,
    bias: Option<(DeviceBuffer, Vec<f64>)>,
    /// z as a whole buffer (the slice's wider tensor when z is a slice).
    residual: Option<(DeviceBuffer, Vec<f64>)>,
    alpha: f32,
    beta: f32,
    param: f32,
    /// y's first channel in its wider tensor.
    pub y_offset: u32,
    z_offset: u32,
    /// x's gate `s[N][C]` (x's type), where the fusion scales x.
    gate: Option<(DeviceBuffer, Vec<f64>)>,
}

/// The channel offset checks use for a slice `ld` wide holding `k` channels: the last
/// multiple of 8 that fits, so that both edges of the slice are exercised.
pub fn slice_offset(ld: u32, k: u32) -> u32 {
    if ld == 0 {
        0
    } else {
        (ld - k) / 8 * 8
    }
}

impl EpilogueInputs {
    /// Seeded inputs for `p`'s fusion: scale in [0.5, 1.5), bias in [-0.5, 0.5), z in
    /// [-1, 1) in y's type; alpha 0.75 and beta 0.5 so that neither factor can be dropped
    /// unnoticed. `None` for a plain convolution.
    pub fn new(device: &Device, p: &ConvProblem, seed: u64) -> Result<Option<Self>, RunError> {
        let f = p.fusion();
        if f.is_none() {
            return Ok(None);
        }
        let k = p.k() as usize;
        // k FP32 values in [centre - 0.5, centre + 0.5), uploaded where the fusion has them.
        let per_channel = |wanted: bool, seed: u64, centre: f32| {
            wanted
                .then(|| {
                    let values: Vec<f32> = random_values(k, seed)
                        .into_iter()
                        .map(|v| v * 0.5 + centre)
                        .collect();
                    upload(device, DataType::Fp32, &values)
                })
                .transpose()
        };
        let scale = per_channel(f.scale, seed ^ 0x5CA1E, 1.0)?;
        let bias = per_channel(f.bias, seed ^ 0xB1A5, 0.0)?;
        let z_offset = slice_offset(f.z_ld, p.k());
        let residual = if f.residual {
            let n = (p.z_extent() + z_offset as u64) as usize;
            Some(upload(
                device,
                p.data_types()[2],
                &random_values(n, seed ^ 0x2E51D),
            )?)
        } else {
            None
        };
        // A gate in (0, 1), as the sigmoid that makes a squeeze-and-excitation gate gives.
        let gate = if f.x_scale {
            let values: Vec<f32> = random_values((p.n() * p.c()) as usize, seed ^ 0x6A7E)
                .into_iter()
                .map(|v| 0.5 + 0.45 * v)
                .collect();
            Some(upload(device, p.data_types()[0], &values)?)
        } else {
            None
        };
        Ok(Some(EpilogueInputs {
            gate,
            scale,
            bias,
            residual,
            alpha: 0.75,
            beta: 0.5,
            param: f.activation.default_param(),
            y_offset: slice_offset(f.y_ld, p.k()),
            z_offset,
        }))
    }

    /// The run's arguments.
    pub fn args(&self) -> EpilogueArgs<'_> {
        EpilogueArgs {
            scale: self.scale.as_ref().map(|(b, _)| b),
            bias: self.bias.as_ref().map(|(b, _)| b),
            residual: self.residual.as_ref().map(|(b, _)| b),
            alpha: self.alpha,
            beta: self.beta,
            activation_param: self.param,
            y_channel_offset: self.y_offset,
            z_channel_offset: self.z_offset,
            pool: None,
            x_scale: self.gate.as_ref().map(|(b, _)| b),
        }
    }

    /// x as the convolution reads it: each element times its image's and channel's gate,
    /// rounded to x's type as the kernels round the product (`x` as stored, in x's layout);
    /// x itself where the fusion has no gate.
    pub fn gated_x(&self, p: &ConvProblem, x: &[f64]) -> Vec<f64> {
        let Some((_, gate)) = &self.gate else {
            return x.to_vec();
        };
        let (c, dtype) = (p.c() as usize, p.data_types()[0]);
        let image = x.len() / p.n() as usize;
        let pixels = image / c;
        let channels_last = p.layouts()[0].channels_last();
        x.iter()
            .enumerate()
            .map(|(i, v)| {
                let (n, ch) = if channels_last {
                    (i / image, i % c)
                } else {
                    (i / image, i / pixels % c)
                };
                crate::elements::round_to(dtype, v * gate[n * c + ch])
            })
            .collect()
    }

    /// Applies the epilogue to `conv`, the f64 convolution in y's dense layout.
    pub fn apply(&self, p: &ConvProblem, conv: &mut [f64]) {
        for (e, v) in conv.iter_mut().enumerate() {
            *v = self.apply_one(p, e, *v);
        }
    }

    /// The epilogue on y's element `e` (flat, in y's layout), whose convolution is `conv`.
    pub fn apply_one(&self, p: &ConvProblem, e: usize, conv: f64) -> f64 {
        let f = p.fusion();
        let k = p.k() as usize;
        let channels_last = p.layouts()[2].channels_last();
        let plane = p.output().iter().map(|&v| v as usize).product::<usize>();
        let (pixel, ch) = if channels_last {
            (e / k, e % k)
        } else {
            (e, (e / plane) % k)
        };
        let mut out = self.alpha as f64 * conv;
        if let Some((_, s)) = &self.scale {
            out *= s[ch];
        }
        if let Some((_, b)) = &self.bias {
            out += b[ch];
        }
        if let Some((_, z)) = &self.residual {
            let zi = if channels_last {
                pixel * f.z_stride(p.k()) as usize + self.z_offset as usize + ch
            } else {
                e
            };
            out += self.beta as f64 * z[zi];
        }
        f.activation.apply(out, self.param as f64)
    }
}

/// y's elements in dense order from the whole buffer `wide` a run wrote (a channel slice at
/// `offset` when `p`'s fusion sets `y_ld`). An element outside the slice that no longer holds
/// the poison (NaN) was overwritten: the result then holds NaN there, which fails every check.
pub fn gather_y(p: &ConvProblem, wide: Vec<f64>, offset: u32) -> Vec<f64> {
    let f = p.fusion();
    if f.y_ld == 0 {
        return wide;
    }
    let (k, ld, offset) = (p.k() as usize, f.y_ld as usize, offset as usize);
    let pixels = (p.element_counts()[2] / p.k() as u64) as usize;
    let mut out = Vec::with_capacity(pixels * k);
    let mut intact = true;
    for (i, v) in wide.iter().enumerate() {
        let ch = i % ld;
        if ch >= offset && ch < offset + k {
            if i / ld < pixels {
                out.push(*v);
            }
        } else if !v.is_nan() {
            intact = false;
        }
    }
    if !intact {
        if let Some(first) = out.first_mut() {
            *first = f64::NAN;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_format::{Activation, ConvSpec, Fusion, Layout};

    #[test]
    fn a_slice_is_read_back_and_a_write_outside_it_is_caught() {
        let p = ConvProblem::new(ConvSpec {
            k: 8,
            input: [1, 1, 2],
            layouts: [Layout::Nhwc; 3],
            fusion: Fusion {
                y_ld: 24,
                activation: Activation::Relu,
                ..Fusion::NONE
            },
            ..ConvSpec::default()
        })
        .unwrap();
        assert_eq!(slice_offset(24, 8), 16);
        let mut wide = vec![f64::NAN; 2 * 24];
        for px in 0..2 {
            for c in 0..8 {
                wide[px * 24 + 16 + c] = (px * 8 + c) as f64;
            }
        }
        let got = gather_y(&p, wide.clone(), 16);
        assert_eq!(got, (0..16).map(|v| v as f64).collect::<Vec<_>>());
        wide[3] = 0.0;
        assert!(gather_y(&p, wide, 16)[0].is_nan());
    }
}
