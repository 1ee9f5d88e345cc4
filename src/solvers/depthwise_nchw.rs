//! `ConvDirectDepthwiseNchwFwd` (`kernels/conv_depthwise_nchw.cpp`): depthwise 2-D convolution
//! in NCHW (one input channel per group, any channel multiplier) on CUDA cores / vector ALUs,
//! the threads laid flat over the output rows so that small planes (7x7 to 24x24, the late
//! stages of MobileNet and EfficientNet) leave no thread idle. Both vendors; FP32. Perf config:
//! `threads,px` (threads per block, neighbouring outputs per thread).

use kiln_format::{ConvProblem, Layout};

use super::params::{tensor_bytes, tile_fill, two};
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// The flat depthwise NCHW solver.
pub struct DirectDepthwiseNchw;

/// Threads the layer needs: one per `px` outputs of a row.
fn threads(p: &ConvProblem, px: u32) -> u64 {
    let [_, oh, ow] = p.output();
    p.n() as u64 * p.k() as u64 * oh as u64 * (ow as u64).div_ceil(px as u64)
}

impl TunableSolver for DirectDepthwiseNchw {
    /// `[threads, px]`.
    type Config = [u32; 2];
    const CONFIG_FORM: &'static str = "perf config is not threads,px";

    fn id(&self) -> &'static str {
        "ConvDirectDepthwiseNchwFwd"
    }

    fn parse(&self, params: &str) -> Option<[u32; 2]> {
        two(params).filter(|&[t, px]| t <= 1024 && t % 32 == 0 && px <= 8)
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        if p.groups() < 2 || p.group_channels() != 1 {
            return Err("not a depthwise convolution (one input channel per group)");
        }
        if p.layouts() != [Layout::Nchw; 3] {
            return Err("needs 2-D NCHW tensors");
        }
        Ok(())
    }

    fn valid(&self, p: &ConvProblem, _: &TargetCaps, cfg: &[u32; 2]) -> Result<(), NotApplicable> {
        // The kernel indexes threads in 32 bits.
        if threads(p, cfg[1]) > i32::MAX as u64 {
            return Err("more than 2^31 threads");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, cfg: &[u32; 2]) -> LaunchPlan {
        let [block, px] = *cfg;
        let blocks = threads(p, px).div_ceil(block as u64);
        LaunchPlan::single(
            "conv_depthwise_nchw_fwd",
            [blocks as u32, 1, 1],
            [block, 1, 1],
        )
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &[u32; 2]) -> f64 {
        // Memory-bound at about 2 TB/s; FP32 products at about 2 TFLOP/s (scalar loads, bounds
        // checks); a row's last strip idles its missing outputs.
        let [_, _, ow] = p.output();
        let fill = tile_fill(ow as f64, cfg[1] as f64);
        let bytes = tensor_bytes(p);
        let compute_ms =
            2.0 * kiln_format::measured::macs(p) / (2_000.0 * caps.throughput_scale() * 1e6);
        (bytes / 2.0e9).max(compute_ms / fill) + 0.003
    }

    fn tile(&self, cfg: &[u32; 2]) -> u64 {
        cfg[0] as u64 * cfg[1] as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::Solver;
    use kiln_format::{ConvSpec, DataType};

    fn caps() -> TargetCaps {
        crate::solvers::devices::h100()
    }

    fn depthwise(c: u32, k: u32, groups: u32, hw: u32, layout: Layout) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            n: 2,
            c,
            k,
            groups,
            input: [1, hw, hw],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            layouts: [layout; 3],
            data_types: [DataType::Fp32; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn applies_to_depthwise_nchw_and_covers_the_rows_flat() {
        // EfficientNet's 2304 channels on a 10x10 plane: 2 x 2304 x 10 rows of 5 two-output
        // strips, 230,400 threads in 900 blocks of 256.
        let dw = depthwise(2304, 2304, 2304, 10, Layout::Nchw);
        assert!(DirectDepthwiseNchw.check(&dw, &caps(), "256,2").is_ok());
        let plan = DirectDepthwiseNchw
            .launch_plan(&dw, &caps(), "256,2")
            .unwrap();
        assert_eq!(plan.kernels[0].grid, [900, 1, 1]);
        assert_eq!(plan.kernels[0].block, [256, 1, 1]);
        assert_eq!(plan.kernels[0].shared_bytes, 0);
        // A channel multiplier of 2 is still one input channel per group.
        assert!(DirectDepthwiseNchw
            .check(&depthwise(32, 64, 32, 10, Layout::Nchw), &caps(), "256,2")
            .is_ok());
        assert_eq!(
            DirectDepthwiseNchw.check(&depthwise(64, 64, 32, 10, Layout::Nchw), &caps(), "256,2"),
            Err("not a depthwise convolution (one input channel per group)")
        );
        assert_eq!(
            DirectDepthwiseNchw.check(&depthwise(32, 32, 32, 10, Layout::Nhwc), &caps(), "256,2"),
            Err("needs 2-D NCHW tensors")
        );
        assert!(DirectDepthwiseNchw.check(&dw, &caps(), "100,2").is_err());
    }
}
