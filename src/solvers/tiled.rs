//! `ConvDirectTiledFwd` (`kernels/conv_tiled.cpp`): a tile of output pixels for a few output
//! channels per block, input patch and filters staged in shared memory. 2-D, channels first.
//! Perf config: `tile_h,tile_w,k_per_block`.

use kiln_format::ConvProblem;

use super::params::{three, tile_fill};
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// Shared-memory bounds compiled into the kernel.
const PATCH_MAX: u64 = 2048;
const FILTER_MAX: u64 = 1024;

/// The tiled direct solver.
pub struct DirectTiled;

impl TunableSolver for DirectTiled {
    /// `[tile_h, tile_w, k_per_block]`.
    type Config = [u32; 3];
    const CONFIG_FORM: &'static str = "perf config is not tile_h,tile_w,k_per_block";

    fn id(&self) -> &'static str {
        "ConvDirectTiledFwd"
    }

    fn parse(&self, params: &str) -> Option<[u32; 3]> {
        three(params)
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        if p.spatial_dims() != 2 || p.layouts()[0].channels_last() {
            return Err("tiled direct is 2-D channels-first only");
        }
        Ok(())
    }

    fn valid(
        &self,
        p: &ConvProblem,
        _: &TargetCaps,
        &[th, tw, kpb]: &[u32; 3],
    ) -> Result<(), NotApplicable> {
        let span = |tile: u32, i: usize| {
            (tile as u64 - 1) * p.stride()[i] as u64
                + (p.filter()[i] as u64 - 1) * p.dilation()[i] as u64
                + 1
        };
        if span(th, 1) * span(tw, 2) > PATCH_MAX {
            return Err("input patch does not fit in shared memory");
        }
        if kpb as u64 * p.filter()[1] as u64 * p.filter()[2] as u64 > FILTER_MAX {
            return Err("filters do not fit in shared memory");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, &[th, tw, kpb]: &[u32; 3]) -> LaunchPlan {
        let kpg = p.group_outputs();
        let [_, oh, ow] = p.output();
        let tiles = oh.div_ceil(th) as u64 * ow.div_ceil(tw) as u64;
        let channel_blocks = p.groups() as u64 * kpg.div_ceil(kpb) as u64;
        let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
        LaunchPlan::single(
            "conv_tiled_fwd",
            [clamp(tiles), clamp(channel_blocks), p.n()],
            [th * tw, 1, 1],
        )
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, &[_, _, kpb]: &[u32; 3]) -> f64 {
        let kpg = p.group_outputs().max(1) as f64;
        // Each thread walks the whole reduction: at least 0.128 us per element on the H100
        // (the least of 2,816 measurements, `data/find-logs/sm_90_132.tsv.zst`).
        let serial = super::igemm::reduction_length(p) as f64 * 0.000128;
        (2.0 * kiln_format::measured::macs(p)
            / (2500.0 * caps.throughput_scale() * tile_fill(kpg, kpb as f64) * 1e6))
            .max(serial)
            + 0.004
    }

    fn tile(&self, &[th, tw, _]: &[u32; 3]) -> u64 {
        th as u64 * tw as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::devices;

    #[test]
    fn a_block_runs_one_thread_per_pixel_of_its_tile() {
        let p = ConvProblem::new(kiln_format::ConvSpec::default()).unwrap();
        let plan = DirectTiled.plan(&p, &devices::h100(), &[8, 16, 4]);
        assert_eq!(plan.kernels[0].block, [8 * 16, 1, 1]);
    }
}
