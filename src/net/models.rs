//! Network definitions, named as torchvision names their weights (a `state_dict` exported to
//! safetensors loads as is).

use super::{Conv, NetworkDef, Node, Norm, Op, Shape};
use crate::ops::{Pool2d, PoolMode};
use crate::Activation;

/// The networks kiln defines, by name.
pub fn by_name(name: &str) -> Option<NetworkDef> {
    match name {
        "resnet50" => Some(resnet50(1000)),
        "mobilenet_v2" => Some(mobilenet_v2(1000)),
        "efficientnet_b0" => Some(efficientnet_b0(1000)),
        _ => None,
    }
}

/// The names [`by_name`] knows.
pub const NAMES: [&str; 3] = ["resnet50", "mobilenet_v2", "efficientnet_b0"];

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

    /// An inverted residual's first half under module path `p`: a 1x1 expansion to `hidden`
    /// channels (`p.0`, when `expand`), then a `kernel` depthwise convolution (the next index),
    /// each with its batch norm and `act`. Returns the output and the depthwise layer's index.
    #[allow(clippy::too_many_arguments)]
    fn expand_depthwise(
        &mut self,
        p: &str,
        x: &str,
        hidden: u32,
        expand: bool,
        kernel: u32,
        stride: u32,
        act: Activation,
    ) -> (String, usize) {
        let mut h = x.to_string();
        let mut layer = 0;
        if expand {
            h = self.conv_bn(
                &format!("{p}.0.0"),
                &format!("{p}.0.1"),
                &h,
                hidden,
                1,
                1,
                1,
                None,
                act,
            );
            layer = 1;
        }
        let h = self.conv_bn(
            &format!("{p}.{layer}.0"),
            &format!("{p}.{layer}.1"),
            &h,
            hidden,
            kernel,
            stride,
            hidden,
            None,
            act,
        );
        (h, layer)
    }

    /// A 1x1 convolution with a bias on a 1x1 map (a squeeze-and-excitation layer).
    fn conv_bias(&mut self, name: &str, input: &str, out: u32, activation: Activation) -> String {
        self.nodes.push(Node {
            name: name.into(),
            op: Op::Conv(Conv {
                weight: format!("{name}.weight"),
                out,
                kernel: [1, 1],
                stride: [1, 1],
                pad: [0, 0],
                groups: 1,
                norm: Norm::Bias(format!("{name}.bias")),
                residual: None,
            }),
            inputs: vec![input.into()],
            output: name.into(),
            activation,
        });
        name.into()
    }

    /// The classifier: global average pool, a linear layer (`name`), softmax.
    fn head(mut self, name: &str, x: &str, classes: u32, input: Shape, net: &str) -> NetworkDef {
        let pooled = self.node("avgpool", Op::GlobalAvgPool, &[x], Activation::Identity);
        let logits = self.node(
            name,
            Op::Linear {
                weight: format!("{name}.weight"),
                bias: Some(format!("{name}.bias")),
                out: classes,
            },
            &[&pooled],
            Activation::Identity,
        );
        let probs = self.node("softmax", Op::Softmax, &[&logits], Activation::Identity);
        NetworkDef {
            name: net.into(),
            input: ("image".into(), input),
            nodes: self.nodes,
            output: probs,
        }
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
        Op::Pool(Pool2d {
            mode: PoolMode::Max,
            window: [3, 3],
            stride: [2, 2],
            pad: [1, 1],
            ceil_mode: false,
        }),
        &[&x],
        Activation::Identity,
    );
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
        }
    }
    b.head("fc", &x, classes, IMAGE, "resnet50")
}

const IMAGE: Shape = Shape {
    c: 3,
    h: 224,
    w: 224,
};

/// torchvision's MobileNetV2: inverted residuals (1x1 expand, 3x3 depthwise, 1x1 project),
/// ReLU6, the residual added in the projection's epilogue.
pub fn mobilenet_v2(classes: u32) -> NetworkDef {
    let mut b = Builder { nodes: Vec::new() };
    let relu6 = Activation::ClippedRelu;
    let mut x = b.conv_bn(
        "features.0.0",
        "features.0.1",
        "image",
        32,
        3,
        2,
        1,
        None,
        relu6,
    );
    let mut channels = 32;
    let mut index = 1;
    for (t, c, n, s) in [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ] {
        for i in 0..n {
            let p = format!("features.{index}.conv");
            let stride = if i == 0 { s } else { 1 };
            let (h, layer) = b.expand_depthwise(&p, &x, channels * t, t != 1, 3, stride, relu6);
            let residual = (stride == 1 && channels == c).then_some(x.as_str());
            x = b.conv_bn(
                &format!("{p}.{}", layer + 1),
                &format!("{p}.{}", layer + 2),
                &h,
                c,
                1,
                1,
                1,
                residual,
                Activation::Identity,
            );
            channels = c;
            index += 1;
        }
    }
    x = b.conv_bn(
        "features.18.0",
        "features.18.1",
        &x,
        1280,
        1,
        1,
        1,
        None,
        relu6,
    );
    b.head("classifier.1", &x, classes, IMAGE, "mobilenet_v2")
}

/// torchvision's EfficientNet-B0: MBConv blocks (expand, depthwise, squeeze-and-excitation,
/// project), SiLU; the excitation's two 1x1 layers run as convolutions on a 1x1 map and
/// its scale as a channel-broadcast multiply.
pub fn efficientnet_b0(classes: u32) -> NetworkDef {
    let mut b = Builder { nodes: Vec::new() };
    let silu = Activation::Silu;
    let mut x = b.conv_bn(
        "features.0.0",
        "features.0.1",
        "image",
        32,
        3,
        2,
        1,
        None,
        silu,
    );
    let mut channels = 32;
    let stages = [
        (1, 3, 1, 16, 1),
        (6, 3, 2, 24, 2),
        (6, 5, 2, 40, 2),
        (6, 3, 2, 80, 3),
        (6, 5, 1, 112, 3),
        (6, 5, 2, 192, 4),
        (6, 3, 1, 320, 1),
    ];
    for (stage, (expand, kernel, s, out, layers)) in stages.into_iter().enumerate() {
        for i in 0..layers {
            let p = format!("features.{}.{i}.block", stage + 1);
            let stride = if i == 0 { s } else { 1 };
            let hidden = channels * expand;
            let (mut h, layer) =
                b.expand_depthwise(&p, &x, hidden, expand != 1, kernel, stride, silu);
            let se = format!("{p}.{}", layer + 1);
            let squeeze = (channels / 4).max(1);
            let pooled = b.node(
                &format!("{se}.avgpool"),
                Op::GlobalAvgPool,
                &[&h],
                Activation::Identity,
            );
            let s1 = b.conv_bias(&format!("{se}.fc1"), &pooled, squeeze, silu);
            let s2 = b.conv_bias(&format!("{se}.fc2"), &s1, hidden, Activation::Sigmoid);
            h = b.node(
                &format!("{se}.scale"),
                Op::ChannelMul,
                &[&h, &s2],
                Activation::Identity,
            );
            let residual = (stride == 1 && channels == out).then_some(x.as_str());
            x = b.conv_bn(
                &format!("{p}.{}.0", layer + 2),
                &format!("{p}.{}.1", layer + 2),
                &h,
                out,
                1,
                1,
                1,
                residual,
                Activation::Identity,
            );
            channels = out;
        }
    }
    x = b.conv_bn(
        "features.8.0",
        "features.8.1",
        &x,
        1280,
        1,
        1,
        1,
        None,
        silu,
    );
    b.head("classifier.1", &x, classes, IMAGE, "efficientnet_b0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::MemoryPlan;

    #[test]
    fn mobilenet_and_efficientnet_are_valid() {
        let m = mobilenet_v2(1000);
        let s = m.shapes().unwrap();
        assert_eq!(
            s["features.18.0"],
            Shape {
                c: 1280,
                h: 7,
                w: 7
            }
        );
        let convs = |d: &NetworkDef| {
            d.nodes
                .iter()
                .filter(|n| matches!(n.op, Op::Conv(_)))
                .count()
        };
        // torchvision's MobileNetV2 has 52 convolutions; EfficientNet-B0 81 (16 blocks'
        // two excitation layers included).
        assert_eq!(convs(&m), 52);
        assert_eq!(s["features.17.conv.2"], Shape { c: 320, h: 7, w: 7 });
        let e = efficientnet_b0(1000);
        let s = e.shapes().unwrap();
        assert_eq!(
            s["features.8.0"],
            Shape {
                c: 1280,
                h: 7,
                w: 7
            }
        );
        assert_eq!(s["features.6.3.block.2.fc1"], Shape { c: 48, h: 1, w: 1 });
        assert_eq!(convs(&e), 81);
    }

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
