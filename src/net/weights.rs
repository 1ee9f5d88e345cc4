//! A network's weights: tensors read from safetensors bytes (the format PyTorch and Hugging
//! Face export), kept as f32 on the host until a [`super::Network`] converts them: filters to
//! kiln's channels-last `KRSC` layout in the network's data type, batch norms folded into an
//! FP32 scale and bias per output channel.

use std::collections::HashMap;

use super::NetError;

/// One weight tensor: its shape (PyTorch's order) and values.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// Values, row-major.
    pub values: Vec<f32>,
}

/// Named weight tensors.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Weights {
    tensors: HashMap<String, Tensor>,
}

/// Largest safetensors header kiln reads (the format's own parsers cap it at 100 MB).
#[cfg(feature = "safetensors")]
const MAX_HEADER_BYTES: u64 = 100 << 20;

impl Weights {
    /// Reads safetensors bytes (feature `safetensors`): every F32, F16 and BF16 tensor (other types are refused,
    /// naming the tensor). Errors name what is malformed.
    #[cfg(feature = "safetensors")]
    pub fn from_safetensors(bytes: &[u8]) -> Result<Weights, NetError> {
        let fail = |reason: String| NetError::Weights {
            node: "weights".into(),
            reason,
        };
        if bytes.len() >= 8 {
            let header = u64::from_le_bytes(bytes[..8].try_into().unwrap_or([0; 8]));
            if header > MAX_HEADER_BYTES {
                return Err(fail(format!(
                    "not a safetensors file: its header of {header} B is over the 100 MB limit"
                )));
            }
        }
        let st = safetensors::SafeTensors::deserialize(bytes)
            .map_err(|e| fail(format!("not a safetensors file: {e}")))?;
        let mut tensors = HashMap::new();
        for (name, view) in st.tensors() {
            let data = view.data();
            let values: Vec<f32> = match view.dtype() {
                safetensors::Dtype::F32 => data
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
                safetensors::Dtype::F16 => data
                    .chunks_exact(2)
                    .map(|c| crate::elements::f16_to_f32(u16::from_le_bytes([c[0], c[1]])))
                    .collect(),
                safetensors::Dtype::BF16 => data
                    .chunks_exact(2)
                    .map(|c| crate::elements::bf16_to_f32(u16::from_le_bytes([c[0], c[1]])))
                    .collect(),
                // Batch norms' step counters and the like are not weights.
                safetensors::Dtype::I64 if name.ends_with("num_batches_tracked") => continue,
                other => {
                    return Err(fail(format!(
                        "tensor {name} is {other:?}: weights must be F32, F16 or BF16"
                    )))
                }
            };
            tensors.insert(
                name.to_string(),
                Tensor {
                    shape: view.shape().to_vec(),
                    values,
                },
            );
        }
        Ok(Weights { tensors })
    }

    /// Seeded random weights for every tensor `def` names, in PyTorch's shapes: filters and
    /// linear layers uniform within He's bound (sqrt(6 / fan_in)), biases in [-0.1, 0.1), batch
    /// norms near identity (gamma and var in [0.5, 1.5), beta and mean in [-0.1, 0.1)). For
    /// demos and checks with no weights file.
    pub fn random(def: &super::NetworkDef, seed: u64) -> Result<Weights, NetError> {
        let shapes = def.shapes()?;
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut uniform = |n: usize, lo: f32, hi: f32| -> Vec<f32> {
            (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    lo + (hi - lo) * ((state >> 40) as f32 / (1u64 << 24) as f32)
                })
                .collect()
        };
        let mut w = Weights::default();
        let put = |w: &mut Weights, name: &str, shape: Vec<usize>, values: Vec<f32>| {
            w.insert(name, Tensor { shape, values });
        };
        for node in &def.nodes {
            let Some(c) = super::NetworkDef::as_conv(node) else {
                continue;
            };
            let x = shapes[node.inputs[0].as_str()];
            let (k, cpg) = (c.out as usize, (x.c / c.groups.max(1)) as usize);
            let (r, s) = (c.kernel[0] as usize, c.kernel[1] as usize);
            let bound = (6.0 / (cpg * r * s) as f32).sqrt();
            let shape = if matches!(node.op, super::Op::Linear { .. }) {
                vec![k, cpg]
            } else {
                vec![k, cpg, r, s]
            };
            let n = shape.iter().product();
            put(&mut w, &c.weight, shape, uniform(n, -bound, bound));
            match &c.norm {
                super::Norm::None => {}
                super::Norm::Bias(b) => put(&mut w, b, vec![k], uniform(k, -0.1, 0.1)),
                super::Norm::BatchNorm { prefix, .. } => {
                    for (what, lo, hi) in [
                        ("weight", 0.5, 1.5),
                        ("bias", -0.1, 0.1),
                        ("running_mean", -0.1, 0.1),
                        ("running_var", 0.5, 1.5),
                    ] {
                        put(
                            &mut w,
                            &format!("{prefix}.{what}"),
                            vec![k],
                            uniform(k, lo, hi),
                        );
                    }
                }
            }
        }
        Ok(w)
    }

    /// Adds (or replaces) a tensor.
    pub fn insert(&mut self, name: impl Into<String>, tensor: Tensor) {
        self.tensors.insert(name.into(), tensor);
    }

    /// How many tensors there are.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// How many values they hold together.
    pub fn values(&self) -> usize {
        self.tensors.values().map(|t| t.values.len()).sum()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// The tensor `name`, which `node` needs with exactly `shape`.
    pub fn get(&self, node: &str, name: &str, shape: &[usize]) -> Result<&Tensor, NetError> {
        let fail = |reason: String| NetError::Weights {
            node: node.to_string(),
            reason,
        };
        let t = self
            .tensors
            .get(name)
            .ok_or_else(|| fail(format!("weight {name} is missing")))?;
        if t.shape != shape {
            return Err(fail(format!(
                "weight {name} has shape {:?}, expected {shape:?}",
                t.shape
            )));
        }
        if t.values.len() != shape.iter().product::<usize>() {
            return Err(fail(format!(
                "weight {name} holds the wrong number of values"
            )));
        }
        if let Some(i) = t.values.iter().position(|v| !v.is_finite()) {
            return Err(fail(format!(
                "weight {name} holds a non-finite value at {i}"
            )));
        }
        Ok(t)
    }

    /// A batch norm folded for inference: `scale = gamma / sqrt(var + eps)`,
    /// `bias = beta - mean * scale`, from `<prefix>.weight`, `.bias`, `.running_mean` and
    /// `.running_var` of `k` channels.
    pub fn folded_batch_norm(
        &self,
        node: &str,
        prefix: &str,
        k: usize,
        eps: f32,
    ) -> Result<(Vec<f32>, Vec<f32>), NetError> {
        let get = |what: &str| self.get(node, &format!("{prefix}.{what}"), &[k]);
        let (gamma, beta) = (get("weight")?, get("bias")?);
        let (mean, var) = (get("running_mean")?, get("running_var")?);
        let mut scale = Vec::with_capacity(k);
        let mut bias = Vec::with_capacity(k);
        for i in 0..k {
            let v = f64::from(var.values[i]) + f64::from(eps);
            if v <= 0.0 {
                return Err(NetError::Weights {
                    node: node.to_string(),
                    reason: format!("{prefix}.running_var[{i}] + eps is not positive"),
                });
            }
            let s = f64::from(gamma.values[i]) / v.sqrt();
            scale.push(s as f32);
            bias.push((f64::from(beta.values[i]) - f64::from(mean.values[i]) * s) as f32);
        }
        Ok((scale, bias))
    }
}

/// A convolution's weights as kiln runs them: the filter in channels-last `KRSC`, and the
/// per-output-channel scale and bias its norm folds to.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvWeights {
    /// `[K, R, S, C/groups]`.
    pub krsc: Vec<f32>,
    /// The folded batch norm's scale, when the norm is one.
    pub scale: Option<Vec<f32>>,
    /// The bias (a batch norm's folded one, or the layer's own).
    pub bias: Option<Vec<f32>>,
}

impl ConvWeights {
    /// Folds the per-output-channel scale (a batch norm's) into the filter, as inference
    /// engines do when they build a plan: `w'[k] = w[k] * scale[k]`, rounded once to `dtype`
    /// where the filter is stored, leaving the epilogue a bias alone. Measured on the H200
    /// (`benches/runs/2026-12-03-h200-folded-scale/`): MobileNetV2 1.1% and EfficientNet-B0
    /// 0.5% faster at N=32, ResNet-50 unchanged; on the Hopper kernels the epilogue's cost is
    /// the bias's, with or without the scale.
    ///
    /// Refused (false, nothing changed) where a folded weight would overflow `dtype`, where the
    /// scale is not finite, or where a channel would lose more to `dtype`'s subnormal range
    /// than its rounding loses anyway: each folded weight below the smallest normal value is
    /// off by up to half the subnormal spacing, and those errors together must stay within
    /// half an ulp of the channel's weights (`eps * sum |w'|`), so that the channel's
    /// worst-case error at most doubles. Then the epilogue keeps the scale: a channel scaled
    /// far below its weights' size. (Refusing any weight pushed below the smallest normal
    /// value would keep the scale almost everywhere: a layer of random or trained weights
    /// nearly always holds one just above it.)
    pub fn fold_scale(&mut self, dtype: crate::DataType) -> bool {
        let Some(scale) = &self.scale else {
            return false;
        };
        // Largest finite value, smallest normal value, half the subnormal spacing, half an ulp.
        let (max, min_normal, subnormal_error, eps) = match dtype {
            crate::DataType::Fp16 => (65504.0, 2f64.powi(-14), 2f64.powi(-25), 2f64.powi(-11)),
            crate::DataType::Bf16 => (
                3.389_531_389_251_535e38,
                2f64.powi(-126),
                2f64.powi(-134),
                2f64.powi(-8),
            ),
            crate::DataType::Fp32 => (
                f64::from(f32::MAX),
                2f64.powi(-126),
                2f64.powi(-150),
                2f64.powi(-24),
            ),
            // Quantized filters: a fold would change their quantization.
            _ => return false,
        };
        let per_channel = self.krsc.len() / scale.len().max(1);
        if per_channel == 0 || per_channel * scale.len() != self.krsc.len() {
            return false;
        }
        let channel_folds = |ws: &[f32], s: f32| {
            if !s.is_finite() {
                return false;
            }
            let (mut sum, mut lost) = (0.0f64, 0.0f64);
            for &w in ws {
                let f = (f64::from(w) * f64::from(s)).abs();
                if f > max {
                    return false;
                }
                sum += f;
                if f != 0.0 && f < min_normal {
                    lost += subnormal_error;
                }
            }
            lost <= eps * sum
        };
        let safe = self
            .krsc
            .chunks(per_channel)
            .zip(scale)
            .all(|(ws, &s)| channel_folds(ws, s));
        if !safe {
            return false;
        }
        for (ws, &s) in self.krsc.chunks_mut(per_channel).zip(scale) {
            for w in ws {
                *w = (f64::from(*w) * f64::from(s)) as f32;
            }
        }
        self.scale = None;
        true
    }
}

impl Weights {
    /// The weights of `node`, whose convolution is `c` ([`super::NetworkDef::as_conv`]), on
    /// an input of `in_channels`: a linear node's weight is `[out, in]` (a 1x1 filter without
    /// its unit dimensions), a convolution's `[K, C/groups, R, S]`.
    pub fn of_conv_node(
        &self,
        node: &super::Node,
        c: &super::Conv,
        in_channels: u32,
    ) -> Result<ConvWeights, NetError> {
        let linear = matches!(node.op, super::Op::Linear { .. });
        let node = node.name.as_str();
        let (k, cpg) = (c.out as usize, (in_channels / c.groups.max(1)) as usize);
        let [r, s] = [c.kernel[0] as usize, c.kernel[1] as usize];
        let shape: &[usize] = if linear { &[k, cpg] } else { &[k, cpg, r, s] };
        let filter = self.get(node, &c.weight, shape)?;
        let (scale, bias) = match &c.norm {
            super::Norm::None => (None, None),
            super::Norm::Bias(b) => (None, Some(self.get(node, b, &[k])?.values.clone())),
            super::Norm::BatchNorm { prefix, eps } => {
                let (s, b) = self.folded_batch_norm(node, prefix, k, *eps)?;
                (Some(s), Some(b))
            }
        };
        Ok(ConvWeights {
            krsc: krsc_from_kcrs(&filter.values, [k, cpg, r, s]),
            scale,
            bias,
        })
    }
}

/// PyTorch's `[K, C, R, S]` filter as kiln's channels-last `[K, R, S, C]`.
pub fn krsc_from_kcrs(values: &[f32], [k, c, r, s]: [usize; 4]) -> Vec<f32> {
    let mut out = vec![0.0; values.len()];
    for ki in 0..k {
        for ci in 0..c {
            for ri in 0..r {
                for si in 0..s {
                    out[((ki * r + ri) * s + si) * c + ci] =
                        values[((ki * c + ci) * r + ri) * s + si];
                }
            }
        }
    }
    out
}

#[cfg(all(test, feature = "safetensors"))]
mod safetensors_tests {
    use super::*;

    /// A safetensors file written by hand (8-byte header length, JSON header, data), as
    /// Python's `safetensors.torch.save_file` writes it.
    fn file(tensors: &[(&str, &str, &[usize], Vec<u8>)]) -> Vec<u8> {
        let mut header = String::from("{");
        let mut data = Vec::new();
        for (i, (name, dtype, shape, bytes)) in tensors.iter().enumerate() {
            let start = data.len();
            data.extend_from_slice(bytes);
            header += &format!(
                "{}\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":{shape:?},\"data_offsets\":[{start},{}]}}",
                if i > 0 { "," } else { "" },
                data.len()
            );
        }
        header.push('}');
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&data);
        out
    }

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn batch_norm_folds_into_scale_and_bias() {
        let bytes = file(&[
            ("bn.weight", "F32", &[2], f32s(&[2.0, 1.0])),
            ("bn.bias", "F32", &[2], f32s(&[0.5, -1.0])),
            ("bn.running_mean", "F32", &[2], f32s(&[1.0, 0.0])),
            ("bn.running_var", "F32", &[2], f32s(&[3.0, 0.0])),
            (
                "bn.num_batches_tracked",
                "I64",
                &[],
                7i64.to_le_bytes().to_vec(),
            ),
            ("half", "F16", &[1], 0x3c00u16.to_le_bytes().to_vec()),
        ]);
        let w = Weights::from_safetensors(&bytes).unwrap();
        assert_eq!(w.len(), 5);
        let (scale, bias) = w.folded_batch_norm("conv", "bn", 2, 1.0).unwrap();
        // gamma / sqrt(var + eps) = 2 / 2 = 1 and 1 / 1 = 1; beta - mean * scale.
        assert_eq!(scale, vec![1.0, 1.0]);
        assert_eq!(bias, vec![-0.5, -1.0]);
        assert_eq!(w.get("n", "half", &[1]).unwrap().values, vec![1.0]);
    }

    #[test]
    fn missing_and_misshaped_weights_are_named() {
        let bytes = file(&[("w", "F32", &[2, 1, 1, 1], f32s(&[1.0, 2.0]))]);
        let w = Weights::from_safetensors(&bytes).unwrap();
        let e = w.get("conv1", "w", &[4, 1, 1, 1]).unwrap_err().to_string();
        assert!(
            e.contains("node conv1") && e.contains("weight w has shape [2, 1, 1, 1]"),
            "{e}"
        );
        let e = w.get("conv1", "v", &[1]).unwrap_err().to_string();
        assert!(e.contains("weight v is missing"), "{e}");
        let e = w
            .folded_batch_norm("conv1", "bn", 2, 1e-5)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bn.weight is missing"), "{e}");
        let e = Weights::from_safetensors(b"not a file")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a safetensors file"), "{e}");
        let ints = file(&[("i", "I32", &[1], 1i32.to_le_bytes().to_vec())]);
        let e = Weights::from_safetensors(&ints).unwrap_err().to_string();
        assert!(e.contains("tensor i is I32"), "{e}");
        let nan = file(&[("n", "F32", &[1], f32s(&[f32::NAN]))]);
        let w = Weights::from_safetensors(&nan).unwrap();
        assert!(w
            .get("x", "n", &[1])
            .unwrap_err()
            .to_string()
            .contains("non-finite"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DataType;

    #[test]
    fn random_weights_cover_every_tensor_a_network_reads() {
        let def = crate::net::models::resnet50(10);
        let w = Weights::random(&def, 3).unwrap();
        // 53 convolutions with 4 batch-norm tensors each, the classifier's weight and bias.
        assert_eq!(w.len(), 53 * 5 + 2);
        assert_eq!(
            w.get("fc", "fc.weight", &[10, 2048]).unwrap().values.len(),
            20480
        );
        let (scale, _) = w.folded_batch_norm("conv1", "bn1", 64, 1e-5).unwrap();
        // gamma / sqrt(var): gamma and var in [0.5, 1.5).
        assert!(scale.iter().all(|s| (0.40..2.13).contains(s)));
        assert_eq!(Weights::random(&def, 3).unwrap(), w);
    }

    #[test]
    fn every_batch_norm_of_the_random_networks_folds_in_fp16() {
        // He-initialised filters beside batch norms near identity, as `--random-weights` runs
        // them: each layer holds weights just above FP16's smallest normal value, which the
        // scale may push below it; the channel's budget takes them, so every epilogue is the
        // bias alone that the find-db's fused records measure.
        use crate::net::{models, NetworkDef};
        for name in models::NAMES {
            let def = models::by_name(name).unwrap();
            let w = Weights::random(&def, 7).unwrap();
            let shapes = def.shapes().unwrap();
            let mut folded = 0;
            for node in &def.nodes {
                let Some(c) = NetworkDef::as_conv(node) else {
                    continue;
                };
                let x = shapes[node.inputs[0].as_str()];
                let mut cw = w.of_conv_node(node, &c, x.c).unwrap();
                if cw.scale.is_some() {
                    assert!(cw.fold_scale(DataType::Fp16), "{}", node.name);
                    folded += 1;
                }
            }
            assert!(folded >= 40, "{folded}");
        }
    }

    #[test]
    fn a_batch_norms_scale_folds_into_the_filter_where_the_type_can_hold_it() {
        let weights = |krsc: Vec<f32>, scale: Vec<f32>| ConvWeights {
            krsc,
            scale: Some(scale),
            bias: Some(vec![0.5, -0.5]),
        };
        // Two output channels of two weights each: channel k's weights times scale[k].
        let mut w = weights(vec![1.0, -2.0, 0.25, 3.0], vec![2.0, -4.0]);
        assert!(w.fold_scale(DataType::Fp16));
        assert_eq!(w.krsc, vec![2.0, -4.0, -1.0, -12.0]);
        assert_eq!((w.scale, w.bias), (None, Some(vec![0.5, -0.5])));
        // FP16 overflows past 65504; BF16 and FP32 hold it.
        let big = weights(vec![300.0, 1.0, 1.0, 1.0], vec![300.0, 1.0]);
        let mut w = big.clone();
        assert!(!w.fold_scale(DataType::Fp16));
        assert_eq!(w, big);
        assert!(big.clone().fold_scale(DataType::Bf16));
        assert!(big.clone().fold_scale(DataType::Fp32));
        // A weight pushed below FP16's smallest normal value (6.1e-5) beside one that stays
        // normal folds: its error (at most 2^-25) is far inside the channel's half ulp.
        let mut small = weights(vec![1e-2, 1.0, 1.0, 1.0], vec![1e-3, 1.0]);
        assert!(small.fold_scale(DataType::Fp16));
        assert!((small.krsc[0] - 1e-5).abs() < 1e-11 && (small.krsc[1] - 1e-3).abs() < 1e-9);
        assert!(weights(vec![1e-5, 1.0, 1.0, 1.0], vec![0.5, 1.0]).fold_scale(DataType::Fp16));
        // A channel scaled wholly into the subnormal range keeps its scale in FP16 (each
        // weight would keep 4 or 5 of its 11 bits); FP32 and BF16 hold it as normal values.
        let tiny = weights(vec![1e-2, -2e-2, 1.0, 1.0], vec![1e-4, 1.0]);
        let mut w = tiny.clone();
        assert!(!w.fold_scale(DataType::Fp16));
        assert_eq!(w, tiny);
        assert!(tiny.clone().fold_scale(DataType::Bf16));
        assert!(tiny.clone().fold_scale(DataType::Fp32));
        // The budget is the channel's: a few subnormal weights beside a normal one fold, 63
        // of them refuse (together about 6% of the channel's weight, each off by up to 3%).
        let few = weights(
            vec![1.0, 1e-3, 1e-3, 1e-3, 1.0, 1.0, 1.0, 1.0],
            vec![1e-3, 1.0],
        );
        assert!(few.clone().fold_scale(DataType::Fp16));
        let mut many = vec![1e-3f32; 128];
        many[0] = 1.0;
        assert!(!weights(many, vec![1e-3, 1.0]).fold_scale(DataType::Fp16));
        // A scale that is not finite, an INT8 filter, a shape the scale does not divide, and
        // no scale at all: nothing folds.
        assert!(!weights(vec![1.0; 4], vec![f32::INFINITY, 1.0]).fold_scale(DataType::Fp32));
        assert!(!weights(vec![1.0; 4], vec![1.0, 1.0]).fold_scale(DataType::Int8));
        assert!(!weights(vec![1.0; 5], vec![1.0, 1.0]).fold_scale(DataType::Fp32));
        let mut none = weights(vec![1.0; 4], vec![1.0, 1.0]);
        none.scale = None;
        assert!(!none.fold_scale(DataType::Fp32));
    }

    #[test]
    fn filters_become_channels_last() {
        // K=1, C=2, R=1, S=2: [[c0s0, c0s1], [c1s0, c1s1]] -> [s0c0, s0c1, s1c0, s1c1].
        assert_eq!(
            krsc_from_kcrs(&[1.0, 2.0, 3.0, 4.0], [1, 2, 1, 2]),
            vec![1.0, 3.0, 2.0, 4.0]
        );
    }
}
