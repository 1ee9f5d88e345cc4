//! `ConvGemmGroupedNchwFwd` (`kernels/conv_gemm_grouped_nchw.cpp`): grouped convolution in
//! NCHW or NCDHW, FP32 on CUDA cores, as one implicit GEMM per group (output channels of the
//! group by output pixels, reducing over taps, then the group's input channels; over (channel,
//! tap) flattened where a group has fewer channels than a step). For groups of 4 or more input
//! channels, and for dense layers of at most 48 channels with a filter larger than 1x1: a
//! 16-32-channel layer at 14x14 fills few tensor-core tiles, so fixed costs decide, and an RGB
//! stem of a video network has no tensor-core path in NCDHW. NVIDIA archs (manifest). Perf
//! config: `bm,bn,bk` (output channels of a group and output pixels a block covers, channels
//! or reduction elements a step).

use kiln_format::{ConvProblem, Layout};

use super::params::{tensor_bytes, three, tile_fill, volume};
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// Threads per block, fixed in the kernel.
const THREADS: u32 = 256;

/// Narrower groups leave most of a step's channels empty; the per-plane kernel takes them.
const MIN_GROUP_CHANNELS: u32 = 4;

/// Most input channels of a dense (one-group) layer. A block reduces over taps x channels
/// serially, so a small dense layer runs at that chain's latency: on the H200 (2026-12-02,
/// `ci/problems/dense_nchw_small_grid.txt`) 3x3 and 5x5 layers of 12-40 channels took
/// 7.7-16.9 us here against 10.3-25.4 us on the next solver (won 50 of 57), while unseen
/// 3x3 layers of 128 channels took 57 us against CUTLASS's 21-22 us.
const MAX_DENSE_CHANNELS: u32 = 48;

/// The grouped NCHW implicit-GEMM solver.
pub struct GemmGroupedNchw;

/// Output pixels of every image: the GEMM's columns.
fn columns(p: &ConvProblem) -> u64 {
    p.n() as u64 * volume(p.output())
}

/// The reduction elements a step fills of its `bk`: the group's channels, or (channel, tap)
/// pairs where the kernel flattens them (groups narrower than a step).
fn step_fill(p: &ConvProblem, bk: u32) -> f64 {
    let cpg = p.group_channels();
    if cpg < bk {
        tile_fill((cpg as u64 * volume(p.filter())) as f64, bk as f64)
    } else {
        tile_fill(cpg as f64, bk as f64)
    }
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
        if p.groups() > 1 && p.group_channels() < MIN_GROUP_CHANNELS {
            return Err("fewer than 4 input channels a group");
        }
        if p.groups() == 1 {
            if p.c() > MAX_DENSE_CHANNELS {
                return Err("a dense layer of more than 48 input channels (tensor cores serve it)");
            }
            // Unseen 1x1 layers ran 1.3-1.6x slower here than on the batched GEMM.
            if p.filter() == [1, 1, 1] {
                return Err("a dense 1x1 layer (the batched GEMM serves it)");
            }
            // A 2-D first layer has its tensor-core solver; only NCDHW stems have none.
            if p.spatial_dims() == 2 && p.c() < MIN_GROUP_CHANNELS {
                return Err("a 2-D first layer (the first-layer solvers serve it)");
            }
        }
        if p.layouts() != [Layout::Nchw; 3] && p.layouts() != [Layout::Ncdhw; 3] {
            return Err("needs NCHW or NCDHW tensors");
        }
        // The kernel's pixel, plane and column offsets are 32-bit (x's image and channel
        // offsets are 64-bit); so is a flattened reduction's index.
        let flat_depth = p.group_channels() as u64 * volume(p.filter());
        if columns(p) > i32::MAX as u64
            || volume(p.input()) > i32::MAX as u64
            || flat_depth > i32::MAX as u64
        {
            return Err("output pixels, an input volume or the reduction past 32-bit indexing");
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
        let fill =
            tile_fill(kpg, bm as f64) * tile_fill(columns(p) as f64, bn as f64) * step_fill(p, bk);
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
    fn takes_one_group_and_refuses_depthwise_narrow_channels_last_and_malformed_configs() {
        let h100 = crate::solvers::devices::h100();
        // One group: the whole layer is one GEMM.
        let dense = grouped(32, 1, 14, Layout::Nchw);
        assert!(GemmGroupedNchw.check(&dense, &h100, "32,64,8").is_ok());
        let plan = GemmGroupedNchw
            .launch_plan(&dense, &h100, "32,64,8")
            .unwrap();
        assert_eq!(plan.kernels[0].grid, [1, 1, 1]);
        // Not a wide or a 1x1 dense layer.
        assert_eq!(
            GemmGroupedNchw.check(&grouped(64, 1, 14, Layout::Nchw), &h100, "32,64,8"),
            Err("a dense layer of more than 48 input channels (tensor cores serve it)")
        );
        let mut one_by_one = grouped(32, 1, 14, Layout::Nchw).spec();
        (one_by_one.filter, one_by_one.pad) = ([1, 1, 1], [0, 0, 0]);
        assert_eq!(
            GemmGroupedNchw.check(&ConvProblem::new(one_by_one).unwrap(), &h100, "32,64,8"),
            Err("a dense 1x1 layer (the batched GEMM serves it)")
        );
        assert_eq!(
            GemmGroupedNchw.check(&grouped(64, 32, 28, Layout::Nchw), &h100, "32,32,8"),
            Err("fewer than 4 input channels a group")
        );
        assert_eq!(
            GemmGroupedNchw.check(&grouped(64, 4, 28, Layout::Nhwc), &h100, "32,32,8"),
            Err("needs NCHW or NCDHW tensors")
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
    fn a_video_stem_flattens_its_three_channels_with_the_taps() {
        // r3d_18's stem at N=1: 3 -> 64 channels, 3x7x7, 16x112x112 -> 16x56x56.
        let h100 = crate::solvers::devices::h100();
        let stem = ConvProblem::new(ConvSpec {
            spatial_dims: 3,
            n: 1,
            c: 3,
            k: 64,
            input: [16, 112, 112],
            filter: [3, 7, 7],
            pad: [1, 3, 3],
            stride: [1, 2, 2],
            layouts: [Layout::Ncdhw; 3],
            data_types: [DataType::Fp32; 3],
            ..ConvSpec::default()
        })
        .unwrap();
        assert!(GemmGroupedNchw.check(&stem, &h100, "64,64,8").is_ok());
        let plan = GemmGroupedNchw
            .launch_plan(&stem, &h100, "64,64,8")
            .unwrap();
        assert_eq!(plan.kernels[0].grid, [16 * 56 * 56 / 64, 1, 1]);
        // 3 x 147 = 441 reduction elements fill 56 steps of 8 (441 / 448), where 3 channels
        // a step would fill 3 / 8.
        assert!((step_fill(&stem, 8) - 441.0 / 448.0).abs() < 1e-9);
        // A 2-D RGB first layer is the first-layer solvers'.
        let mut flat_stem = stem.spec();
        (flat_stem.spatial_dims, flat_stem.input, flat_stem.filter) = (2, [1, 224, 224], [1, 7, 7]);
        (flat_stem.pad, flat_stem.layouts) = ([0, 3, 3], [Layout::Nchw; 3]);
        assert_eq!(
            GemmGroupedNchw.check(&ConvProblem::new(flat_stem).unwrap(), &h100, "64,64,8"),
            Err("a 2-D first layer (the first-layer solvers serve it)")
        );
        // NDHWC is the NDHWC solvers'.
        let mut ndhwc = stem.spec();
        ndhwc.layouts = [Layout::Ndhwc; 3];
        assert_eq!(
            GemmGroupedNchw.check(&ConvProblem::new(ndhwc).unwrap(), &h100, "64,64,8"),
            Err("needs NCHW or NCDHW tensors")
        );
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
