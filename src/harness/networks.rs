//! Convolution layers of reference networks, generated from their architecture (never typed
//! shape by shape).

use kiln_format::{ConvProblem, ConvSpec, DataType, Layout, ProblemError};

/// One conv layer: its name and problem.
#[derive(Clone, Debug)]
pub struct Layer {
    /// `conv1`, `layer2.0.conv2`, `layer3.0.downsample`, ...
    pub name: String,
    /// The problem.
    pub problem: ConvProblem,
}

/// Batch, type and layout shared by every layer of a network.
#[derive(Clone, Copy)]
struct Net {
    n: u32,
    dtype: DataType,
    layout: Layout,
}

fn conv(
    net: Net,
    c: u32,
    hw: u32,
    k: u32,
    f: u32,
    stride: u32,
) -> Result<ConvProblem, ProblemError> {
    let Net { n, dtype, layout } = net;
    ConvProblem::new(ConvSpec {
        n,
        c,
        k,
        input: [1, hw, hw],
        filter: [1, f, f],
        pad: [0, f / 2, f / 2],
        stride: [1, stride, stride],
        layouts: [layout; 3],
        data_types: [dtype; 3],
        ..ConvSpec::default()
    })
}

/// ResNet-50 (torchvision's v1.5: stride on the 3x3 of each bottleneck) at 224x224: the stem
/// and, per bottleneck, 1x1 reduce, 3x3, 1x1 expand, plus the downsample of each stage's first
/// block. 53 layers, 23 distinct; `unique` keeps the first of each distinct problem. An error
/// names what is wrong with the batch, type or layout (a 3-D layout, batch 0).
pub fn resnet50(
    n: u32,
    dtype: DataType,
    layout: Layout,
    unique: bool,
) -> Result<Vec<Layer>, ProblemError> {
    let net = Net { n, dtype, layout };
    let mut layers = vec![Layer {
        name: "conv1".into(),
        problem: conv(net, 3, 224, 64, 7, 2)?,
    }];
    let mut c = 64;
    let mut hw = 56;
    for (stage, (width, blocks, stride)) in
        [(64u32, 3u32, 1u32), (128, 4, 2), (256, 6, 2), (512, 3, 2)]
            .into_iter()
            .enumerate()
    {
        for b in 0..blocks {
            let s = if b == 0 { stride } else { 1 };
            let name = |what: &str| format!("layer{}.{b}.{what}", stage + 1);
            layers.push(Layer {
                name: name("conv1"),
                problem: conv(net, c, hw, width, 1, 1)?,
            });
            layers.push(Layer {
                name: name("conv2"),
                problem: conv(net, width, hw, width, 3, s)?,
            });
            let out_hw = hw / s;
            layers.push(Layer {
                name: name("conv3"),
                problem: conv(net, width, out_hw, width * 4, 1, 1)?,
            });
            if b == 0 {
                layers.push(Layer {
                    name: name("downsample"),
                    problem: conv(net, c, hw, width * 4, 1, s)?,
                });
            }
            c = width * 4;
            hw = out_hw;
        }
    }
    if unique {
        let mut seen = Vec::new();
        layers.retain(|l| {
            let k = l.problem.find_db_key();
            if seen.contains(&k) {
                false
            } else {
                seen.push(k);
                true
            }
        });
    }
    Ok(layers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resnet50_shape() {
        let all = resnet50(1, DataType::Fp32, Layout::Nchw, false).unwrap();
        assert!(resnet50(0, DataType::Fp32, Layout::Nchw, false).is_err());
        assert!(resnet50(1, DataType::Fp32, Layout::Ncdhw, false).is_err());
        assert_eq!(all.len(), 53);
        let unique = resnet50(1, DataType::Fp32, Layout::Nchw, true).unwrap();
        assert_eq!(unique.len(), 23); // as the cuDNN comparison in shared/docs/design.md counts
                                      // The last layer: 512 -> 2048 1x1 at 7x7.
        let last = &all[all.len() - 1].problem;
        assert_eq!((last.c(), last.k(), last.output()), (512, 2048, [1, 7, 7]));
        // Total multiply-accumulates of ResNet-50's convs: ~4.1 G per image.
        let macs: u64 = all
            .iter()
            .map(|l| {
                l.problem.element_counts()[2] * l.problem.element_counts()[1] / l.problem.k() as u64
            })
            .sum();
        assert!((4.0e9..4.2e9).contains(&(macs as f64)), "{macs}");
    }
}
