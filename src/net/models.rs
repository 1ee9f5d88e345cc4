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
        "yolov8n" => Some(yolov8n(80)),
        _ => None,
    }
}

/// The names [`by_name`] knows.
pub const NAMES: [&str; 4] = ["resnet50", "mobilenet_v2", "efficientnet_b0", "yolov8n"];

/// Builds nodes in order, naming tensors after the nodes that write them.
struct Builder {
    nodes: Vec<Node>,
    /// Every batch norm's eps.
    bn_eps: f32,
}

impl Builder {
    fn new(bn_eps: f32) -> Self {
        Builder {
            nodes: Vec::new(),
            bn_eps,
        }
    }

    /// A convolution with its batch norm (`bn`), optional residual and activation; returns
    /// its output tensor.
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
                    eps: self.bn_eps,
                },
                residual: residual.map(String::from),
                x_scale: None,
                expand: None,
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
                x_scale: None,
                expand: None,
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
            outputs: vec![probs],
        }
    }

    /// Ultralytics' `Conv` under module path `p`: a convolution (`p.conv`, padded to keep
    /// the size at stride 1), its batch norm (`p.bn`) and SiLU.
    fn conv_silu(&mut self, p: &str, x: &str, out: u32, kernel: u32, stride: u32) -> String {
        self.conv_bn(
            &format!("{p}.conv"),
            &format!("{p}.bn"),
            x,
            out,
            kernel,
            stride,
            1,
            None,
            Activation::Silu,
        )
    }

    /// A C2f block: `cv1` (1x1, 2 x out/2 channels), its second half through `n`
    /// bottlenecks (two 3x3 layers; the input added after the second's SiLU when
    /// `shortcut`), `cv1`'s output and every bottleneck's concatenated, then `cv2` (1x1).
    fn c2f(&mut self, p: &str, x: &str, out: u32, n: u32, shortcut: bool) -> String {
        let c = out / 2;
        let t = self.conv_silu(&format!("{p}.cv1"), x, 2 * c, 1, 1);
        let mut last = self.node(
            &format!("{p}.split"),
            Op::Slice {
                start: c,
                channels: c,
            },
            &[&t],
            Activation::Identity,
        );
        let mut parts = vec![t];
        for i in 0..n {
            let m = format!("{p}.m.{i}");
            let h = self.conv_silu(&format!("{m}.cv1"), &last, c, 3, 1);
            let h = self.conv_silu(&format!("{m}.cv2"), &h, c, 3, 1);
            // The residual comes after the activation, so it is an add of its own.
            last = if shortcut {
                self.node(
                    &format!("{m}.add"),
                    Op::Add,
                    &[&last, &h],
                    Activation::Identity,
                )
            } else {
                h
            };
            parts.push(last.clone());
        }
        self.concat_cv2(p, &parts, out)
    }

    /// SPPF: `cv1` (1x1, half the `channels`), three 5x5 stride-1 max pools in a row, the
    /// four concatenated, `cv2` (1x1).
    fn sppf(&mut self, p: &str, x: &str, channels: u32, out: u32) -> String {
        let a = self.conv_silu(&format!("{p}.cv1"), x, channels / 2, 1, 1);
        let pool = Op::Pool(Pool2d {
            mode: PoolMode::Max,
            window: [5, 5],
            stride: [1, 1],
            pad: [2, 2],
            ceil_mode: false,
        });
        let mut parts = vec![a];
        for i in 0..3 {
            let m = self.node(
                &format!("{p}.m.{i}"),
                pool.clone(),
                &[&parts[i]],
                Activation::Identity,
            );
            parts.push(m);
        }
        self.concat_cv2(p, &parts, out)
    }

    /// `parts` concatenated (`p.cat`), then `p.cv2` (1x1, `out` channels): how C2f and SPPF
    /// end.
    fn concat_cv2(&mut self, p: &str, parts: &[String], out: u32) -> String {
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        let cat = self.node(
            &format!("{p}.cat"),
            Op::Concat,
            &parts,
            Activation::Identity,
        );
        self.conv_silu(&format!("{p}.cv2"), &cat, out, 1, 1)
    }

    /// A nearest-neighbour 2x upsample.
    fn upsample(&mut self, name: &str, x: &str) -> String {
        self.node(
            name,
            Op::Resize {
                mode: crate::ops::ResizeMode::Nearest,
                factor: 2,
            },
            &[x],
            Activation::Identity,
        )
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
    let mut b = Builder::new(1e-5);
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
    let mut b = Builder::new(1e-5);
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
    let mut b = Builder::new(1e-5);
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

/// A YOLO-style detector with YOLOv8n's structure and module names (`model.<i>...`, so an
/// Ultralytics `state_dict` exported to safetensors loads as is): a CSP backbone of C2f
/// blocks (a 1x1 convolution, split in two, bottlenecks on the second half, every part
/// concatenated), SPPF (three 5x5 stride-1 max pools, concatenated), a feature pyramid of
/// nearest 2x upsamples and concatenations, and a decoupled head per scale (box: 4 x 16
/// distribution bins; class scores), on a 640x640 image. Every convolution carries a batch
/// norm (eps 1e-3, as Ultralytics sets it) and SiLU. Returns the three scales' raw maps
/// (`p3`, `p4`, `p5`: 144 channels at 80x80, 40x40 and 20x20), before box decoding.
pub fn yolov8n(classes: u32) -> NetworkDef {
    let mut b = Builder::new(1e-3);
    let p = |i: u32| format!("model.{i}");
    let x = b.conv_silu(&p(0), "image", 16, 3, 2);
    let x = b.conv_silu(&p(1), &x, 32, 3, 2);
    let x = b.c2f(&p(2), &x, 32, 1, true);
    let x = b.conv_silu(&p(3), &x, 64, 3, 2);
    let p3 = b.c2f(&p(4), &x, 64, 2, true);
    let x = b.conv_silu(&p(5), &p3, 128, 3, 2);
    let p4 = b.c2f(&p(6), &x, 128, 2, true);
    let x = b.conv_silu(&p(7), &p4, 256, 3, 2);
    let x = b.c2f(&p(8), &x, 256, 1, true);
    let p5 = b.sppf(&p(9), &x, 256, 256);
    let up = b.upsample(&p(10), &p5);
    let x = b.node(&p(11), Op::Concat, &[&up, &p4], Activation::Identity);
    let h4 = b.c2f(&p(12), &x, 128, 1, false);
    let up = b.upsample(&p(13), &h4);
    let x = b.node(&p(14), Op::Concat, &[&up, &p3], Activation::Identity);
    let o3 = b.c2f(&p(15), &x, 64, 1, false);
    let x = b.conv_silu(&p(16), &o3, 64, 3, 2);
    let x = b.node(&p(17), Op::Concat, &[&x, &h4], Activation::Identity);
    let o4 = b.c2f(&p(18), &x, 128, 1, false);
    let x = b.conv_silu(&p(19), &o4, 128, 3, 2);
    let x = b.node(&p(20), Op::Concat, &[&x, &p5], Activation::Identity);
    let o5 = b.c2f(&p(21), &x, 256, 1, false);
    // Detect: box channels max(16, 64 / 4, 4 x 16), class channels max(64, min(classes, 100)).
    let head = p(22);
    let (box_width, cls_width) = (64, classes.clamp(64, 100));
    let mut outputs = Vec::new();
    for (i, (level, name)) in [(o3, "p3"), (o4, "p4"), (o5, "p5")].into_iter().enumerate() {
        let branch = |b: &mut Builder, cv: &str, width: u32, out: u32| {
            let x = b.conv_silu(&format!("{head}.{cv}.{i}.0"), &level, width, 3, 1);
            let x = b.conv_silu(&format!("{head}.{cv}.{i}.1"), &x, width, 3, 1);
            b.conv_bias(&format!("{head}.{cv}.{i}.2"), &x, out, Activation::Identity)
        };
        let boxes = branch(&mut b, "cv2", box_width, 64);
        let scores = branch(&mut b, "cv3", cls_width, classes);
        outputs.push(b.node(name, Op::Concat, &[&boxes, &scores], Activation::Identity));
    }
    NetworkDef {
        name: "yolov8n".into(),
        input: (
            "image".into(),
            Shape {
                c: 3,
                h: 640,
                w: 640,
            },
        ),
        nodes: b.nodes,
        outputs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::MemoryPlan;

    #[test]
    fn a_detectors_concatenations_are_written_in_place_where_every_reader_allows() {
        let def = yolov8n(80);
        let views = def.concat_views().unwrap();
        let at = |t: &str| views.get(t).map(|v| (v.root.as_str(), v.offset, v.ld));
        // SPPF: cv1 and the three pools (read by the next pool, an operator) all in place.
        assert_eq!(at("model.9.cv1.conv"), Some(("model.9.cat", 0, 512)));
        assert_eq!(at("model.9.m.2"), Some(("model.9.cat", 384, 512)));
        // C2f: cv1's output (read by the split, an operator) and the last bottleneck's.
        assert_eq!(at("model.2.cv1.conv"), Some(("model.2.cat", 0, 48)));
        assert_eq!(at("model.2.m.0.add"), Some(("model.2.cat", 32, 48)));
        // A bottleneck read by the next one's convolution stays dense, and so is copied.
        assert_eq!(at("model.4.m.0.add"), None);
        // The heads write straight into the network's outputs' halves, but an output itself
        // is never a part.
        assert_eq!(at("model.22.cv3.0.2"), Some(("p3", 64, 144)));
        assert_eq!(at("p3"), None);
        // Neck: the upsample lies in place; the backbone's P4 (read by a convolution) is copied.
        assert_eq!(at("model.10"), Some(("model.11", 0, 384)));
        assert_eq!(at("model.6.cv2.conv"), None);
        // The fused problems say where their output lies.
        let problems = def.conv_problems(2, crate::DataType::Fp16).unwrap();
        let key = |n: &str| {
            problems
                .iter()
                .find(|(name, _)| name == n)
                .unwrap()
                .1
                .find_db_key()
                .to_string()
        };
        assert!(
            key("model.22.cv3.0.2").ends_with("-F+bias+ld144"),
            "{}",
            key("model.22.cv3.0.2")
        );
        assert!(!key("model.5.conv").contains("+ld"));
        // A classifier has nothing to concatenate.
        assert!(resnet50(1000).concat_views().unwrap().is_empty());
    }

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
    fn yolov8n_has_its_scales_and_layers() {
        let d = yolov8n(80);
        let s = d.shapes().unwrap();
        let shape = |c, h| Shape { c, h, w: h };
        assert_eq!(d.outputs, ["p3", "p4", "p5"]);
        assert_eq!(s["p3"], shape(144, 80));
        assert_eq!(s["p4"], shape(144, 40));
        assert_eq!(s["p5"], shape(144, 20));
        assert_eq!(s["model.9.cat"], shape(512, 20));
        assert_eq!(s["model.4.split"], shape(32, 80));
        assert_eq!(s["model.11"], shape(384, 40));
        // YOLOv8n: 63 convolutions (57 with a batch norm, the head's last 6 with a bias) and
        // 3,157,184 trainable parameters (Ultralytics' count, less the box decoder's 16).
        let convs: Vec<_> = d.nodes.iter().filter_map(NetworkDef::as_conv).collect();
        assert_eq!(convs.len(), 63);
        let w = crate::net::Weights::random(&d, 1).unwrap();
        let statistics: usize = convs
            .iter()
            .filter(|c| matches!(c.norm, Norm::BatchNorm { .. }))
            .map(|c| 2 * c.out as usize)
            .sum();
        assert_eq!(w.values() - statistics, 3_157_184);
    }

    #[cfg(feature = "sm_90_132")]
    #[test]
    fn a_summary_counts_what_the_find_db_ranks_by_its_own_records() {
        use crate::net::NetworkSummary;
        let def = resnet50(1000);
        let targets = crate::embedded::targets();
        let at = |n| def.summary(n, crate::DataType::Fp16, targets).unwrap();
        let (one, many) = (at(1), at(32));
        // 53 convolutions and the classifier (a 1x1 on a 1x1 map), all measured on sm_90_132
        // (ci/problems/fused_resnet50.txt); every other target, none or some.
        assert_eq!((one.operators, one.convolutions), (def.nodes.len(), 54));
        let sm90 = |s: &NetworkSummary| {
            s.find_db_coverage
                .iter()
                .find(|(t, _)| *t == "sm_90_132")
                .unwrap()
                .1
        };
        assert_eq!((sm90(&one), sm90(&many)), (54, 54));
        assert_eq!(one.find_db_coverage.len(), targets.len());
        // FP16 activation memory: the plan's buffers, 32 samples 32 times one's.
        let plan = MemoryPlan::plan(&def, |s| s.bytes(1, crate::DataType::Fp16)).unwrap();
        assert_eq!(one.activation_bytes, plan.total_bytes());
        assert_eq!(many.activation_bytes, 32 * one.activation_bytes);
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
