//! A whole network's CPU reference: every node in f64, each tensor rounded to the network's
//! data type as the GPU stores it, weights as the GPU holds them (filters rounded to the data
//! type, scales and biases in FP32), so that the comparison measures kiln's arithmetic, not
//! the storage format.

use std::collections::HashMap;

use kiln_format::DataType;

use super::verify::{reference as conv_reference, round_to};
use crate::net::weights::Weights;
use crate::net::{conv_problem, NetError, NetworkDef, Op, Shape};

/// Values rounded to `dtype`, as the device stores them.
fn stored(dtype: DataType, values: impl IntoIterator<Item = f64>) -> Vec<f64> {
    values.into_iter().map(|v| round_to(dtype, v)).collect()
}

/// `def`'s outputs, in order, for `batch` samples of `image` (NHWC, `batch x h x w x c`), in
/// f64.
pub fn forward(
    def: &NetworkDef,
    weights: &Weights,
    batch: u32,
    dtype: DataType,
    image: &[f64],
) -> Result<Vec<Vec<f64>>, NetError> {
    let shapes = def.shapes()?;
    let (input, s0) = (&def.input.0, def.input.1);
    let pixels = |s: Shape| batch as usize * (s.c * s.h * s.w) as usize;
    if image.len() != pixels(s0) {
        return Err(NetError::Definition {
            node: "input".into(),
            reason: format!(
                "image holds {} values, {} x {s0} needs {}",
                image.len(),
                batch,
                pixels(s0)
            ),
        });
    }
    let mut tensors: HashMap<&str, Vec<f64>> = HashMap::new();
    tensors.insert(input, stored(dtype, image.iter().copied()));
    for node in &def.nodes {
        let name = node.name.as_str();
        let x = shapes[node.inputs[0].as_str()];
        let y_shape = shapes[node.output.as_str()];
        let out = if let Some(c) = NetworkDef::as_conv(node) {
            let k = c.out as usize;
            // The weights as the runner folds them (the scale into the filter, where it
            // folds), so that the reference rounds as kiln does.
            let mut cw = weights.of_conv_node(node, &c, x.c)?;
            cw.fold_scale(dtype);
            let w = stored(dtype, cw.krsc.iter().map(|&v| f64::from(v)));
            let (scale, bias) = (cw.scale, cw.bias);
            let p = conv_problem(name, &c, node.activation, x, batch, dtype)?;
            let input = &tensors[node.inputs[0].as_str()];
            // A folded gate multiplies x per image and channel first, rounded as stored.
            let gated = c.x_scale.as_deref().map(|g| {
                let (gate, channels) = (&tensors[g], x.c as usize);
                let image = (x.c * x.h * x.w) as usize;
                let values = input.iter().enumerate();
                stored(
                    dtype,
                    values.map(|(i, v)| v * gate[i / image * channels + i % channels]),
                )
            });
            let mut y = conv_reference(&p.without_fusion(), gated.as_deref().unwrap_or(input), &w);
            let z = c.residual.as_deref().map(|r| &tensors[r]);
            for (i, v) in y.iter_mut().enumerate() {
                let ch = i % k;
                let mut t = *v;
                if let Some(s) = &scale {
                    t *= f64::from(s[ch]);
                }
                if let Some(b) = &bias {
                    t += f64::from(b[ch]);
                }
                if let Some(z) = z {
                    t += z[i];
                }
                t = node
                    .activation
                    .apply(t, f64::from(node.activation.default_param()));
                *v = round_to(dtype, t);
            }
            y
        } else if node.op == Op::Concat {
            let mut y = vec![0.0; pixels(y_shape)];
            let mut offset = 0;
            for t in &node.inputs {
                let part = &tensors[t.as_str()];
                let c = shapes[t.as_str()].c as usize;
                for (i, v) in part.iter().enumerate() {
                    y[i / c * y_shape.c as usize + offset + i % c] = *v;
                }
                offset += c;
            }
            y
        } else {
            let p = def.batched_op_problem(node, x, batch, dtype)?;
            let b = node.inputs.get(1).map(|t| tensors[t.as_str()].as_slice());
            // A slice reads its channels from within the wider input.
            let start = match node.op {
                Op::Slice { start, .. } => start as usize,
                _ => 0,
            };
            let a = &tensors[node.inputs[0].as_str()][start..];
            stored(dtype, super::ops::reference(&p, a, b))
        };
        tensors.insert(node.output.as_str(), out);
    }
    Ok(def
        .outputs
        .iter()
        .map(|t| tensors.get(t.as_str()).cloned().unwrap_or_default())
        .collect())
}

/// Largest network definition file read (a text form of thousands of nodes is under 1 MiB).
pub const DEFINITION_CAP: u64 = 16 << 20;

/// A network definition from a file holding its text form ([`NetworkDef::from_text`]): read
/// capped, as UTF-8; errors name the file, and the line and key.
pub fn read_definition(path: &std::path::Path) -> Result<NetworkDef, String> {
    let shown = kiln_format::text::escaped(&path.to_string_lossy());
    let bytes = kiln_format::file::read_capped(path, DEFINITION_CAP)
        .map_err(|e| format!("{shown}: {e}"))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{shown}: not UTF-8 text (a network definition's text form)"))?;
    NetworkDef::from_text(&text).map_err(|e| format!("{shown}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{Conv, Node, Norm};
    use crate::Activation;

    #[test]
    fn a_small_network_matches_hand_arithmetic() {
        // 1x1 conv (weight 2, batch norm folding to scale 0.5 and bias 1) + ReLU, then a 2x2
        // max pool and a residual-free add of the pool with itself.
        let def = NetworkDef {
            name: "t".into(),
            input: ("x".into(), Shape { c: 1, h: 2, w: 2 }),
            nodes: vec![
                Node {
                    name: "c".into(),
                    op: Op::Conv(Conv {
                        weight: "c.weight".into(),
                        out: 1,
                        kernel: [1, 1],
                        stride: [1, 1],
                        pad: [0, 0],
                        groups: 1,
                        norm: Norm::BatchNorm {
                            prefix: "bn".into(),
                            eps: 0.0,
                        },
                        residual: None,
                        x_scale: None,
                        expand: None,
                    }),
                    inputs: vec!["x".into()],
                    output: "c".into(),
                    activation: Activation::Relu,
                },
                Node {
                    name: "p".into(),
                    op: Op::Pool(crate::ops::Pool2d {
                        mode: crate::ops::PoolMode::Max,
                        window: [2, 2],
                        stride: [2, 2],
                        pad: [0, 0],
                        ceil_mode: false,
                    }),
                    inputs: vec!["c".into()],
                    output: "p".into(),
                    activation: Activation::Identity,
                },
                Node {
                    name: "a".into(),
                    op: Op::Add,
                    inputs: vec!["p".into(), "p".into()],
                    output: "a".into(),
                    activation: Activation::Identity,
                },
            ],
            outputs: vec!["a".into()],
        };
        let mut w = Weights::default();
        let t = |v: Vec<f32>| crate::net::weights::Tensor {
            shape: vec![v.len()],
            values: v,
        };
        w.insert(
            "c.weight",
            crate::net::weights::Tensor {
                shape: vec![1, 1, 1, 1],
                values: vec![2.0],
            },
        );
        // gamma 0.5, var 1, mean 0, beta 1: scale 0.5, bias 1.
        w.insert("bn.weight", t(vec![0.5]));
        w.insert("bn.bias", t(vec![1.0]));
        w.insert("bn.running_mean", t(vec![0.0]));
        w.insert("bn.running_var", t(vec![1.0]));
        // x = [-3, 1, 2, 0.5]: conv 2x, scale 0.5, +1 -> [-2, 2, 3, 1.5], ReLU -> [0, 2, 3,
        // 1.5], max 3, doubled 6.
        let y = forward(&def, &w, 1, DataType::Fp32, &[-3.0, 1.0, 2.0, 0.5]).unwrap();
        assert_eq!(y, vec![vec![6.0]]);
        let e = forward(&def, &w, 2, DataType::Fp32, &[0.0; 4])
            .unwrap_err()
            .to_string();
        assert!(e.contains("image holds 4 values"), "{e}");
    }

    #[test]
    fn a_split_and_concatenation_move_channels_per_pixel() {
        // x: 2 pixels of 4 channels. s = channels 2..4 of x (ReLU); cat = [s, x]; both
        // returned.
        let node = |name: &str, op: Op, inputs: &[&str], activation| Node {
            name: name.into(),
            op,
            inputs: inputs.iter().map(|t| t.to_string()).collect(),
            output: name.into(),
            activation,
        };
        let def = NetworkDef {
            name: "t".into(),
            input: ("x".into(), Shape { c: 4, h: 1, w: 2 }),
            nodes: vec![
                node(
                    "s",
                    Op::Slice {
                        start: 2,
                        channels: 2,
                    },
                    &["x"],
                    Activation::Relu,
                ),
                node("cat", Op::Concat, &["s", "x"], Activation::Identity),
            ],
            outputs: vec!["cat".into(), "s".into()],
        };
        let x = [1.0, 2.0, -3.0, 4.0, 5.0, 6.0, 7.0, -8.0];
        let y = forward(&def, &Weights::default(), 1, DataType::Fp32, &x).unwrap();
        assert_eq!(y[1], vec![0.0, 4.0, 7.0, 0.0]);
        assert_eq!(
            y[0],
            vec![0.0, 4.0, 1.0, 2.0, -3.0, 4.0, 7.0, 0.0, 5.0, 6.0, 7.0, -8.0]
        );
    }
}

#[cfg(test)]
mod folding {
    use super::*;
    use crate::net::models;

    /// Folding EfficientNet-B0's squeeze-and-excitation multiplies into the layers that read
    /// them (`NetworkDef::fold_channel_muls`) computes the same tensors, bit for bit: the
    /// gate's products are rounded as the multiply stored them.
    #[test]
    fn folded_gates_compute_what_the_multiplies_did() {
        let mut def = models::efficientnet_b0(10);
        def.input.1 = Shape { c: 3, h: 32, w: 32 };
        let folded = def.fold_channel_muls(|_| true);
        let muls = |d: &NetworkDef| d.nodes.iter().filter(|n| n.op == Op::ChannelMul).count();
        assert_eq!((muls(&def), muls(&folded)), (16, 0));
        assert_eq!(folded.nodes.len(), def.nodes.len() - 16);
        let gated = folded
            .nodes
            .iter()
            .filter_map(NetworkDef::as_conv)
            .filter(|c| c.x_scale.is_some())
            .count();
        assert_eq!(gated, 16);
        assert_eq!(def.fold_channel_muls(|_| false), def);
        // The text form keeps the gates.
        assert_eq!(
            NetworkDef::from_text(&folded.to_text().unwrap()).unwrap(),
            folded
        );
        let weights = Weights::random(&def, 7).unwrap();
        let batch = 2;
        let image: Vec<f64> = (0..batch * 3 * 32 * 32)
            .map(|i| ((i * 37 % 101) as f64 / 50.0) - 1.0)
            .collect();
        for dtype in [DataType::Fp16, DataType::Bf16] {
            let a = forward(&def, &weights, batch as u32, dtype, &image).unwrap();
            let b = forward(&folded, &weights, batch as u32, dtype, &image).unwrap();
            assert_eq!(a, b, "{}", dtype.name());
            assert!(a[0].iter().all(|v| v.is_finite()));
        }
    }
}
