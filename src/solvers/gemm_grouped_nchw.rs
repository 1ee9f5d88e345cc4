//! `ConvGemmGroupedNchwFwd` (`kernels/conv_gemm_grouped_nchw.cpp`): grouped 2-D convolution in
//! NCHW, FP32 on CUDA cores, as one implicit GEMM per group (output channels of the group by
//! output pixels, reducing over taps, then the group's input channels). For groups of 4 or more
//! input channels; NVIDIA archs (manifest). Perf config: `bm,bn,bk` (output channels of a group
//! and output pixels a block covers, channels a step).

use kiln_format::{ConvProblem, Layout};

use super::params::{tensor_bytes, three, tile_fill};
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// Threads per block, fixed in the kernel.
const THREADS: u32 = 256;

/// Narrower groups leave most of a step's channels empty; the per-plane kernel takes them.
const MIN_GROUP_CHANNELS: u32 = 4;

/// The grouped NCHW implicit-GEMM solver.
pub struct GemmGroupedNchw;

/// Output pixels of every image: the GEMM's columns.
fn columns(p: &ConvProblem) -> u64 {
    let [_, oh, ow] = p.output();
    p.n() as u64 * oh as u64 * ow as u64
}

/// The grid: pixel tiles, channel tiles of a group, groups.
fn grid(p: &ConvProblem, [bm, bn, _]: [u32; 3]) -> [u64; 3] {
    let kpg = (p.k() / p.groups()) as u64;
    [
        columns(p).div_ceil(bn as u64),
        kpg.div_ceil(bm as u64),
        p.groups() as u64,
    ]
}

impl TunableSolver for GemmGroupedNchw {
    /// `[bm, bn, bk]`.
    type Config = [u32; 3];
    const CONFIG_FORM: &'static str = "perf config is not bm,bn,bk";

    fn id(&self) -> &'static str {
        "ConvGemmGroupedNchwFwd"
    }

    fn parse(&self, params: &str) -> Option<[u32; 3]> {
        // The kernel's micro-tiles are 16 apart and every thread loads whole operands a step.
        three(params).filter(|&[bm, bn, bk]| {
            bm % 16 == 0
                && bn % 16 == 0
                && bm <= THREADS
                && bn <= THREADS
                && (bm * bk) % THREADS == 0
                && (bn * bk) % THREADS == 0
                && bm * bn <= 64 * 128
        })
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        if p.groups() < 2 {
            return Err("not a grouped convolution");
        }
        if p.group_channels() < MIN_GROUP_CHANNELS {
            return Err("fewer than 4 input channels a group");
        }
        if p.layouts() != [Layout::Nchw; 3] {
            return Err("needs 2-D NCHW tensors");
        }
        // The kernel's pixel, plane and column offsets are 32-bit (x's image and channel
        // offsets are 64-bit).
        let [_, ih, iw] = p.input();
        if columns(p) > i32::MAX as u64 || ih as u64 * iw as u64 > i32::MAX as u64 {
            return Err("output pixels or an input plane past 32-bit indexing");
        }
        Ok(())
    }

    fn valid(&self, p: &ConvProblem, _: &TargetCaps, cfg: &[u32; 3]) -> Result<(), NotApplicable> {
        let [cols, rows, groups] = grid(p, *cfg);
        if cols > i32::MAX as u64 || rows > 65_535 || groups > 65_535 {
            return Err("grid past the launch limits");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, cfg: &[u32; 3]) -> LaunchPlan {
        let [cols, rows, groups] = grid(p, *cfg);
        LaunchPlan::single(
            "conv_gemm_grouped_nchw_fwd",
            [cols as u32, rows as u32, groups as u32],
            [THREADS, 1, 1],
        )
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &[u32; 3]) -> f64 {
        // FP32 products at about 15 TFLOP/s on an H100-class part where the tiles are full
        // (shared-memory operands, 4-32 sums a thread), scaled by how much of each tile the
        // group's channels and the pixels fill and by the last wave of blocks.
        let [bm, bn, bk] = *cfg;
        let kpg = (p.k() / p.groups()) as f64;
        let fill = tile_fill(kpg, bm as f64)
            * tile_fill(columns(p) as f64, bn as f64)
            * tile_fill(p.group_channels() as f64, bk as f64);
        let blocks = grid(p, *cfg).iter().product::<u64>() as f64;
        let slots = 2.0 * caps.compute_units as f64;
        let waves = (blocks / slots).ceil() * slots / blocks;
        let compute_ms = 2.0 * kiln_format::measured::macs(p)
            / (15_000.0 * caps.throughput_scale() * 1e6)
            / fill
            * waves;
        (tensor_bytes(p) / 2.0e9).max(compute_ms) + 0.003
    }

    fn tile(&self, cfg: &[u32; 3]) -> u64 {
        cfg[0] as u64 * cfg[1] as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::Solver;
    use kiln_format::{ConvSpec, DataType};

    fn grouped(c: u32, groups: u32, hw: u32, layout: Layout) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            n: 1,
            c,
            k: c,
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
    fn plans_a_block_per_pixel_tile_channel_tile_and_group() {
        let h100 = crate::solvers::devices::h100();
        // RegNet's 192 channels in 4 groups of 48, 56x56 stride 2: 784 output pixels in 25
        // tiles of 32, 48 channels in 2 tiles of 32, 4 groups.
        let p = grouped(192, 4, 56, Layout::Nchw);
        let plan = GemmGroupedNchw.launch_plan(&p, &h100, "32,32,8").unwrap();
        assert_eq!(plan.kernels[0].grid, [25, 2, 4]);
        assert_eq!(plan.kernels[0].block, [256, 1, 1]);
        assert_eq!(plan.kernels[0].shared_bytes, 0);
        // The 64 x 128 tile covers the group's 48 channels once and 7 pixel tiles.
        let plan = GemmGroupedNchw.launch_plan(&p, &h100, "64,128,8").unwrap();
        assert_eq!(plan.kernels[0].grid, [7, 1, 4]);
    }

    #[test]
    fn refuses_dense_depthwise_narrow_channels_last_and_malformed_configs() {
        let h100 = crate::solvers::devices::h100();
        assert_eq!(
            GemmGroupedNchw.check(&grouped(64, 1, 28, Layout::Nchw), &h100, "32,32,8"),
            Err("not a grouped convolution")
        );
        assert_eq!(
            GemmGroupedNchw.check(&grouped(64, 32, 28, Layout::Nchw), &h100, "32,32,8"),
            Err("fewer than 4 input channels a group")
        );
        assert_eq!(
            GemmGroupedNchw.check(&grouped(64, 4, 28, Layout::Nhwc), &h100, "32,32,8"),
            Err("needs 2-D NCHW tensors")
        );
        assert!(GemmGroupedNchw
            .check(&grouped(64, 16, 28, Layout::Nchw), &h100, "32,32,8")
            .is_ok());
        // Tiles off 16, loads that do not split over 256 threads, tiles past the registers.
        for bad in ["24,32,8", "32,32,4", "128,128,8", "32,32"] {
            assert!(GemmGroupedNchw.parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_estimate_counts_the_tile_the_group_fills() {
        // 24-channel groups fill three quarters of a 32-channel tile and three eighths of a
        // 64-channel one: the 32 tile is estimated faster at equal pixels.
        let h100 = crate::solvers::devices::h100();
        let p = grouped(96, 4, 112, Layout::Nchw);
        assert!(
            GemmGroupedNchw.estimate(&p, &h100, &[32, 64, 8])
                < GemmGroupedNchw.estimate(&p, &h100, &[64, 64, 8])
        );
    }
}
