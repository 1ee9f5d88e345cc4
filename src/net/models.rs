//! Network definitions, named as torchvision names their weights (a `state_dict` exported to
//! safetensors loads as is).

use super::{Conv, NetworkDef, Node, Norm, Op, Shape};
use crate::ops::PoolMode;
use crate::Activation;

/// The networks kiln defines, by name.
pub fn by_name(name: &str) -> Option<NetworkDef> {
    match name {
        "resnet50" => Some(resnet50(1000)),
        _ => None,
    }
}

/// The names [`by_name`] knows.
pub const NAMES: [&str; 1] = ["resnet50"];

/// Builds nodes in order, naming tensors after the nodes that write them.
struct Builder {
    nodes: Vec<Node>,
}

impl Builder {
    /// A convolution with its batch norm (`bn`, PyTorch's eps 1e-5), optional residual and
    /// activation; returns its output tensor.
    #[allow(clippy::too_many_arguments)]
    fn conv_bn(
        &mut self,
        name: &str,
        bn: &str,
        input: &str,
        out: u32,
        kernel: u32,
        stride: u32,
        groups: u32,
        residual: Option<&str>,
        activation: Activation,
    ) -> String {
        self.nodes.push(Node {
            name: name.into(),
            op: Op::Conv(Conv {
                weight: format!("{name}.weight"),
                out,
                kernel: [kernel; 2],
                stride: [stride; 2],
                pad: [kernel / 2; 2],
                groups,
                norm: Norm::BatchNorm {
                    prefix: bn.into(),
                    eps: 1e-5,
                },
                residual: residual.map(String::from),
            }),
            inputs: vec![input.into()],
            output: name.into(),
            activation,
        });
        name.into()
    }

    fn node(&mut self, name: &str, op: Op, inputs: &[&str], activation: Activation) -> String {
        self.nodes.push(Node {
            name: name.into(),
            op,
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            output: name.into(),
            activation,
        });
        name.into()
    }
}

/// torchvision's ResNet-50 (v1.5: the stride on the 3x3 convolution), `classes` outputs,
/// ending in a softmax. Every batch norm folds into its convolution; each bottleneck's
/// residual add and ReLU run in its last convolution's epilogue.
pub fn resnet50(classes: u32) -> NetworkDef {
    let mut b = Builder { nodes: Vec::new() };
    let relu = Activation::Relu;
    let mut x = b.conv_bn("conv1", "bn1", "image", 64, 7, 2, 1, None, relu);
    x = b.node(
        "maxpool",
        Op::Pool {
            mode: PoolMode::Max,
            window: [3, 3],
            stride: [2, 2],
            pad: [1, 1],
            ceil_mode: false,
        },
        &[&x],
        Activation::Identity,
    );
    let mut channels = 64;
    for (stage, (blocks, width)) in [(3, 64), (4, 128), (6, 256), (3, 512)]
        .into_iter()
        .enumerate()
    {
        for i in 0..blocks {
            let p = format!("layer{}.{i}", stage + 1);
            let stride = if i == 0 && stage > 0 { 2 } else { 1 };
            let shortcut = if i == 0 {
                b.conv_bn(
                    &format!("{p}.downsample.0"),
                    &format!("{p}.downsample.1"),
                    &x,
                    width * 4,
                    1,
                    stride,
                    1,
                    None,
                    Activation::Identity,
                )
            } else {
                x.clone()
            };
            let a = b.conv_bn(
                &format!("{p}.conv1"),
                &format!("{p}.bn1"),
                &x,
                width,
                1,
                1,
                1,
                None,
                relu,
            );
            let m = b.conv_bn(
                &format!("{p}.conv2"),
                &format!("{p}.bn2"),
                &a,
                width,
                3,
                stride,
                1,
                None,
                relu,
            );
            x = b.conv_bn(
                &format!("{p}.conv3"),
                &format!("{p}.bn3"),
                &m,
                width * 4,
                1,
                1,
                1,
                Some(&shortcut),
                relu,
            );
            channels = width * 4;
        }
    }
    let pooled = b.node("avgpool", Op::GlobalAvgPool, &[&x], Activation::Identity);
    let logits = b.node(
        "fc",
        Op::Linear {
            weight: "fc.weight".into(),
            bias: Some("fc.bias".into()),
            out: classes,
        },
        &[&pooled],
        Activation::Identity,
    );
    let _ = channels;
    let probs = b.node("softmax", Op::Softmax, &[&logits], Activation::Identity);
    NetworkDef {
        name: "resnet50".into(),
        input: (
            "image".into(),
            Shape {
                c: 3,
                h: 224,
                w: 224,
            },
        ),
        nodes: b.nodes,
        output: probs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::MemoryPlan;

    #[test]
    fn resnet50_is_valid_and_its_memory_is_planned() {
        let def = resnet50(1000);
        let shapes = def.shapes().unwrap();
        assert_eq!(
            shapes["conv1"],
            Shape {
                c: 64,
                h: 112,
                w: 112
            }
        );
        assert_eq!(
            shapes["maxpool"],
            Shape {
                c: 64,
                h: 56,
                w: 56
            }
        );
        assert_eq!(
            shapes["layer4.2.conv3"],
            Shape {
                c: 2048,
                h: 7,
                w: 7
            }
        );
        assert_eq!(
            shapes["softmax"],
            Shape {
                c: 1000,
                h: 1,
                w: 1
            }
        );
        // 53 convolutions (+ fc), the pools and the softmax.
        let convs = def
            .nodes
            .iter()
            .filter(|n| matches!(n.op, Op::Conv(_)))
            .count();
        assert_eq!((convs, def.nodes.len()), (53, 57));
        // FP16 at batch 1: a handful of buffers, far less than every tensor's sum.
        let plan = MemoryPlan::plan(&def, |s| u64::from(s.c * s.h * s.w) * 2).unwrap();
        let every: u64 = shapes
            .values()
            .map(|s| u64::from(s.c * s.h * s.w) * 2)
            .sum();
        assert!(plan.buffers.len() <= 6, "{:?}", plan.buffers);
        assert!(
            plan.total_bytes() * 4 < every,
            "{} of {every}",
            plan.total_bytes()
        );
    }
}
