//! `ConvDirectDepthwiseNchwFwd` (`kernels/conv_depthwise_nchw.cpp`): depthwise 2-D convolution
//! in NCHW (one input channel per group, any channel multiplier) on CUDA cores / vector ALUs,
//! the threads laid flat over the output rows so that small planes (7x7 to 24x24, the late
//! stages of MobileNet and EfficientNet) leave no thread idle. Both vendors; FP32. Perf config:
//! `threads,px,filter,stride_w` (threads per block, neighbouring outputs per thread; then the
//! square filter size and horizontal stride the object is built for, with its tap loops
//! unrolled, or `0,0` for an object that loops over any filter).

use kiln_format::{ConvProblem, Layout};

use super::params::{built_for_square_filter, tensor_bytes, tile_fill, values};
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// The flat depthwise NCHW solver.
pub struct DirectDepthwiseNchw;

/// A perf config, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Threads per block.
    block: u32,
    /// Neighbouring outputs of a row per thread.
    px: u32,
    /// The square filter size and horizontal stride compiled in; `None`: any filter.
    built_for: Option<[u32; 2]>,
}

impl Config {
    fn parse(params: &str) -> Option<Config> {
        let &[block, px, filter, stride_w] = values(params).as_slice() else {
            return None;
        };
        let built_for = match [filter, stride_w] {
            [0, 0] => None,
            [f, s] if f > 0 && s > 0 => Some([f, s]),
            _ => return None,
        };
        (block > 0 && block <= 1024 && block % 32 == 0 && px > 0 && px <= 8).then_some(Config {
            block,
            px,
            built_for,
        })
    }
}

/// Threads the layer needs: one per `px` outputs of a row.
fn threads(p: &ConvProblem, px: u32) -> u64 {
    let [_, oh, ow] = p.output();
    p.n() as u64 * p.k() as u64 * oh as u64 * (ow as u64).div_ceil(px as u64)
}

impl TunableSolver for DirectDepthwiseNchw {
    type Config = Config;
    const CONFIG_FORM: &'static str = "perf config is not threads,px,filter,stride_w";

    fn id(&self) -> &'static str {
        "ConvDirectDepthwiseNchwFwd"
    }

    fn parse(&self, params: &str) -> Option<Config> {
        Config::parse(params)
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

    fn valid(&self, p: &ConvProblem, _: &TargetCaps, cfg: &Config) -> Result<(), NotApplicable> {
        if let Some([filter, stride_w]) = cfg.built_for {
            built_for_square_filter(p, filter, stride_w)?;
        }
        // The kernel indexes threads in 32 bits.
        if threads(p, cfg.px) > i32::MAX as u64 {
            return Err("more than 2^31 threads");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, cfg: &Config) -> LaunchPlan {
        let blocks = threads(p, cfg.px).div_ceil(cfg.block as u64);
        LaunchPlan::single(
            "conv_depthwise_nchw_fwd",
            [blocks as u32, 1, 1],
            [cfg.block, 1, 1],
        )
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> f64 {
        // Memory-bound at about 2 TB/s; FP32 products at about 2 TFLOP/s (scalar loads, bounds
        // checks); a row's last strip idles its missing outputs. An unrolled object waits for
        // memory once, not once per tap: about a microsecond less.
        let [_, _, ow] = p.output();
        let fill = tile_fill(ow as f64, cfg.px as f64);
        let bytes = tensor_bytes(p);
        let compute_ms =
            2.0 * kiln_format::measured::macs(p) / (2_000.0 * caps.throughput_scale() * 1e6);
        let latency_ms = if cfg.built_for.is_some() {
            0.002
        } else {
            0.003
        };
        (bytes / 2.0e9).max(compute_ms / fill) + latency_ms
    }

    fn tile(&self, cfg: &Config) -> u64 {
        cfg.block as u64 * cfg.px as u64
    }

    /// A neighbour's config with another filter size or stride built in (or none): the same
    /// threads and outputs per thread, built for `p`'s filter where the manifest has it, else
    /// the generic object.
    fn refit(
        &self,
        _p: &ConvProblem,
        _caps: &TargetCaps,
        measured: &Config,
        candidates: &mut dyn Iterator<Item = (&'static str, Config)>,
    ) -> Option<&'static str> {
        // The candidates are offered for `p`: an object built for a filter is built for its.
        let mut generic = None;
        for (q, c) in candidates.filter(|(_, c)| c.block == measured.block && c.px == measured.px) {
            if c.built_for.is_some() {
                return Some(q);
            }
            generic = Some(q);
        }
        generic
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
        assert!(DirectDepthwiseNchw.check(&dw, &caps(), "256,2,0,0").is_ok());
        let plan = DirectDepthwiseNchw
            .launch_plan(&dw, &caps(), "256,2,0,0")
            .unwrap();
        assert_eq!(plan.kernels[0].grid, [900, 1, 1]);
        assert_eq!(plan.kernels[0].block, [256, 1, 1]);
        assert_eq!(plan.kernels[0].shared_bytes, 0);
        // A channel multiplier of 2 is still one input channel per group.
        assert!(DirectDepthwiseNchw
            .check(
                &depthwise(32, 64, 32, 10, Layout::Nchw),
                &caps(),
                "256,2,0,0"
            )
            .is_ok());
        assert_eq!(
            DirectDepthwiseNchw.check(
                &depthwise(64, 64, 32, 10, Layout::Nchw),
                &caps(),
                "256,2,0,0"
            ),
            Err("not a depthwise convolution (one input channel per group)")
        );
        assert_eq!(
            DirectDepthwiseNchw.check(
                &depthwise(32, 32, 32, 10, Layout::Nhwc),
                &caps(),
                "256,2,0,0"
            ),
            Err("needs 2-D NCHW tensors")
        );
        assert!(DirectDepthwiseNchw
            .check(&dw, &caps(), "100,2,0,0")
            .is_err());
    }

    #[test]
    fn an_unrolled_object_takes_its_filter_and_stride_alone() {
        // 3x3 stride 1 (the helper's geometry) on the object built for it, on the generic
        // one, and not on objects built for another size or stride.
        let dw = depthwise(480, 480, 480, 14, Layout::Nchw);
        assert!(DirectDepthwiseNchw.check(&dw, &caps(), "256,1,3,1").is_ok());
        assert!(DirectDepthwiseNchw.check(&dw, &caps(), "256,1,0,0").is_ok());
        assert_eq!(
            DirectDepthwiseNchw.check(&dw, &caps(), "256,1,5,1"),
            Err("built for another filter size (square filters)")
        );
        assert_eq!(
            DirectDepthwiseNchw.check(&dw, &caps(), "256,1,3,2"),
            Err("built for another horizontal stride (or dilated)")
        );
        let dilated = ConvProblem::new(ConvSpec {
            dilation: [1, 2, 2],
            pad: [0, 2, 2],
            ..dw.spec()
        })
        .unwrap();
        assert_eq!(
            DirectDepthwiseNchw.check(&dilated, &caps(), "256,1,3,1"),
            Err("built for another horizontal stride (or dilated)")
        );
        assert!(DirectDepthwiseNchw
            .check(&dilated, &caps(), "256,1,0,0")
            .is_ok());
        // A filter size without a stride, a two-value config and a zero are not configs.
        for bad in ["256,1,3,0", "256,1", "256,0,3,1"] {
            assert!(DirectDepthwiseNchw.parse(bad).is_none(), "{bad}");
        }
        // A neighbour's 3x3 config refits to the 5x5 object of the same shape, and to the
        // generic one where no object is built for the filter.
        let five = ConvProblem::new(ConvSpec {
            filter: [1, 5, 5],
            pad: [0, 2, 2],
            ..dw.spec()
        })
        .unwrap();
        let three = DirectDepthwiseNchw.parse("256,2,3,1").unwrap();
        let offered = ["256,1,5,1", "256,2,0,0", "256,2,5,1", "128,4,5,1"];
        let mut candidates = offered
            .iter()
            .map(|&q| (q, DirectDepthwiseNchw.parse(q).unwrap()));
        assert_eq!(
            DirectDepthwiseNchw.refit(&five, &caps(), &three, &mut candidates),
            Some("256,2,5,1")
        );
        let mut candidates = offered[..2]
            .iter()
            .map(|&q| (q, DirectDepthwiseNchw.parse(q).unwrap()));
        assert_eq!(
            DirectDepthwiseNchw.refit(&five, &caps(), &three, &mut candidates),
            Some("256,2,0,0")
        );
        // The unrolled object is ranked ahead of the generic one, all else equal.
        assert!(
            DirectDepthwiseNchw.estimate(
                &dw,
                &caps(),
                &DirectDepthwiseNchw.parse("256,1,3,1").unwrap()
            ) < DirectDepthwiseNchw.estimate(
                &dw,
                &caps(),
                &DirectDepthwiseNchw.parse("256,1,0,0").unwrap()
            )
        );
    }
}
