//! `ConvDirectGroupedNchwFwd` (`kernels/conv_grouped_nchw.cpp`): grouped and depthwise 2-D
//! convolution in NCHW on CUDA cores / vector ALUs, a block per output channel's plane (or a
//! band of its rows), each thread computing `px` outputs of a row `tx` apart, the channel's
//! filter staged in shared memory. Both vendors; FP32. Perf config: `tx,ty,px` (threads along a
//! row, rows per block, outputs per thread).

use kiln_format::{ConvProblem, Layout};

use super::params::{tensor_bytes, three, tile_fill};
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// Shared memory the filter may take: the default per-block limit on every GPU kiln targets.
const MAX_FILTER_BYTES: u64 = 48 * 1024;

/// The largest grid y and z dimension.
const MAX_GRID_YZ: u64 = 65_535;

/// The grouped / depthwise NCHW direct solver.
pub struct DirectGroupedNchw;

/// One output channel's filter in shared memory, as FP32.
fn filter_bytes(p: &ConvProblem) -> u64 {
    let [_, fh, fw] = p.filter();
    p.group_channels() as u64 * fh as u64 * fw as u64 * 4
}

/// The grid: planes (images x output channels), row bands, column bands.
fn grid(p: &ConvProblem, [tx, ty, px]: [u32; 3]) -> [u64; 3] {
    let [_, oh, ow] = p.output();
    [
        p.n() as u64 * p.k() as u64,
        (oh as u64).div_ceil(ty as u64),
        (ow as u64).div_ceil(tx as u64 * px as u64),
    ]
}

impl TunableSolver for DirectGroupedNchw {
    /// `[tx, ty, px]`.
    type Config = [u32; 3];
    const CONFIG_FORM: &'static str = "perf config is not tx,ty,px";

    fn id(&self) -> &'static str {
        "ConvDirectGroupedNchwFwd"
    }

    fn parse(&self, params: &str) -> Option<[u32; 3]> {
        three(params).filter(|&[tx, ty, px]| tx as u64 * ty as u64 <= 1024 && px <= 16)
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        if p.groups() < 2 {
            return Err("not a grouped convolution");
        }
        if p.layouts() != [Layout::Nchw; 3] {
            return Err("needs 2-D NCHW tensors");
        }
        if filter_bytes(p) > MAX_FILTER_BYTES {
            return Err("an output channel's filter does not fit in 48 KiB of shared memory");
        }
        Ok(())
    }

    fn valid(&self, p: &ConvProblem, _: &TargetCaps, cfg: &[u32; 3]) -> Result<(), NotApplicable> {
        let [planes, rows, cols] = grid(p, *cfg);
        if planes > i32::MAX as u64 || rows > MAX_GRID_YZ || cols > MAX_GRID_YZ {
            return Err("grid past the launch limits");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, cfg: &[u32; 3]) -> LaunchPlan {
        let [tx, ty, _] = *cfg;
        let [planes, rows, cols] = grid(p, *cfg);
        LaunchPlan::single_with_shared(
            "conv_grouped_nchw_fwd",
            [planes as u32, rows as u32, cols as u32],
            [tx, ty, 1],
            filter_bytes(p) as u32,
        )
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &[u32; 3]) -> f64 {
        // Memory-bound when the block's columns fill the rows; FP32 products at about 1 TFLOP/s,
        // what it reached on an H100 (2026-11-27) with 4-48 channels a group: a thread reads
        // every input channel of its group with no reuse across output channels, so past
        // depthwise the tiled and implicit-GEMM kernels win (by 1.4-6x there).
        let [tx, ty, px] = *cfg;
        let [_, oh, ow] = p.output();
        let fill = tile_fill(ow as f64, tx as f64 * px as f64) * tile_fill(oh as f64, ty as f64);
        let bytes = tensor_bytes(p);
        let compute_ms =
            2.0 * kiln_format::measured::macs(p) / (1_000.0 * caps.throughput_scale() * 1e6);
        (bytes / 2.0e9).max(compute_ms) / fill + 0.004
    }

    fn tile(&self, cfg: &[u32; 3]) -> u64 {
        cfg[0] as u64 * cfg[1] as u64 * cfg[2] as u64
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

    fn grouped(c: u32, k: u32, groups: u32, hw: u32, layout: Layout) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            n: 2,
            c,
            k,
            groups,
            input: [1, hw, hw],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            stride: [1, 2, 2],
            layouts: [layout; 3],
            data_types: [DataType::Fp32; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn applies_to_grouped_nchw_and_plans_a_block_per_plane_band() {
        let dw = grouped(32, 32, 32, 112, Layout::Nchw);
        assert!(DirectGroupedNchw.check(&dw, &caps(), "32,8,2").is_ok());
        // 2 images x 32 channels; 56 output rows in bands of 8; 56 columns in 64-wide bands.
        let plan = DirectGroupedNchw
            .launch_plan(&dw, &caps(), "32,8,2")
            .unwrap();
        assert_eq!(plan.kernels[0].grid, [64, 7, 1]);
        assert_eq!(plan.kernels[0].block, [32, 8, 1]);
        assert_eq!(plan.kernels[0].shared_bytes, 9 * 4);
        assert_eq!(
            DirectGroupedNchw.check(&grouped(32, 32, 32, 112, Layout::Nhwc), &caps(), "32,8,2"),
            Err("needs 2-D NCHW tensors")
        );
        assert_eq!(
            DirectGroupedNchw.check(&grouped(32, 32, 1, 112, Layout::Nchw), &caps(), "32,8,2"),
            Err("not a grouped convolution")
        );
        // 2048 channels a group x 9 taps x 4 bytes: 72 KiB.
        assert_eq!(
            DirectGroupedNchw.check(&grouped(4096, 64, 2, 14, Layout::Nchw), &caps(), "32,8,2"),
            Err("an output channel's filter does not fit in 48 KiB of shared memory")
        );
        // ResNeXt's 4 channels a group: 36 filter values a block.
        let rx = grouped(128, 128, 32, 56, Layout::Nchw);
        let plan = DirectGroupedNchw
            .launch_plan(&rx, &caps(), "16,8,1")
            .unwrap();
        assert_eq!(plan.kernels[0].shared_bytes, 4 * 9 * 4);
        assert_eq!(plan.kernels[0].grid, [256, 4, 2]);
    }

    #[test]
    fn the_cost_model_keeps_it_to_depthwise_layers() {
        // FP32 NCHW, N=1, timed on an H100 (2026-11-27): EfficientNet's depthwise 576-19-19 ran
        // here in 0.0084 ms against the tiled kernel's 0.0124; RegNet's 192-28-28 with 4 groups
        // (48 channels a group) in 0.254 ms against 0.094. The depthwise records now name the
        // flat depthwise kernel, which beat this one on 19 of 20 tuned depthwise problems.
        // Ranked as the runtime ranks a problem its find-db lacks: by the nearest measured
        // problem of sm_90_132 where there is one (depthwise), else by the cost model.
        let Some(target) = crate::embedded::target("sm_90_132") else {
            return;
        };
        let first = |p: &ConvProblem| {
            assert!(target.find_record(p).unwrap().is_none());
            let plan =
                crate::resolve::rank_unmeasured(p, target.measured, &caps(), Some(target)).unwrap();
            plan.iter().next().unwrap().variant.solver.id()
        };
        let dw = ConvProblem::new(ConvSpec {
            n: 1,
            stride: [1, 1, 1],
            ..grouped(576, 576, 576, 19, Layout::Nchw).spec()
        })
        .unwrap();
        assert_eq!(first(&dw), "ConvDirectDepthwiseNchwFwd");
        let regnet = ConvProblem::new(ConvSpec {
            n: 1,
            stride: [1, 1, 1],
            ..grouped(192, 192, 4, 28, Layout::Nchw).spec()
        })
        .unwrap();
        assert_ne!(first(&regnet), "ConvDirectGroupedNchwFwd");
    }
}
