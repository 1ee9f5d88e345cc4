//! `ConvDirectFirstLayerNchwFwd` (`kernels/conv_first_nchw.cpp`): a network's first layer (1-4
//! input channels) in FP32 NCHW, direct on CUDA cores with FP32 products. A block stages its
//! output channels' filters and its output rows' input patch in shared memory; each thread
//! computes 4 or 8 neighbouring output columns for 4 or 8 output channels and stores them into
//! NCHW y. NVIDIA; FP32. Perf config: `tx,tk,rows,filter,stride,wpt,kpt` (threads along a row,
//! threads along the output channels, output rows per block; the square filter size and the
//! stride the object is built for; output columns and channels per thread).

use kiln_format::{ConvProblem, Layout};

use super::params::{patch_extent, tensor_bytes, tile_fill, values, volume};
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// The largest grid y and z dimension.
const MAX_GRID_YZ: u64 = 65_535;

/// The first-layer NCHW direct solver.
pub struct DirectFirstLayerNchw;

/// A perf config, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Threads along an output row.
    tx: u32,
    /// Threads along the output channels.
    tk: u32,
    /// Output rows per block.
    rows: u32,
    /// The square filter size compiled in.
    filter: u32,
    /// The stride compiled in (both directions).
    stride: u32,
    /// Output columns a thread computes (the kernel's `KILN_FL_WPT`).
    wpt: u32,
    /// Output channels a thread computes (the kernel's `KILN_FL_KPT`).
    kpt: u32,
}

impl Config {
    fn parse(params: &str) -> Option<Config> {
        let &[tx, tk, rows, filter, stride, wpt, kpt] = values(params).as_slice() else {
            return None;
        };
        let threads = tx as u64 * tk as u64;
        (threads > 0
            && threads <= 1024
            && rows > 0
            && rows <= 64
            && filter > 0
            && filter <= 16
            && stride > 0
            && stride <= 8
            && matches!(wpt, 4 | 8)
            && matches!(kpt, 4 | 8))
        .then_some(Config {
            tx,
            tk,
            rows,
            filter,
            stride,
            wpt,
            kpt,
        })
    }

    /// Output columns and channels a block computes.
    fn tile(&self) -> [u32; 2] {
        [self.tx * self.wpt, self.tk * self.kpt]
    }

    /// Shared memory of one block for `p` (whose filter and stride are the config's): the
    /// filters, then the input patch with one skipped word per thread's column span (the
    /// kernel's layout).
    fn shared_bytes(&self, p: &ConvProblem) -> u64 {
        let [tile_w, tile_k] = self.tile();
        let [rows, cols] = patch_extent(p, [self.rows, tile_w]);
        let pitch = cols + cols / (self.wpt as u64 * self.stride as u64) + 1;
        p.c() as u64 * (volume(p.filter()) * tile_k as u64 + rows * pitch) * 4
    }

    /// The grid: column tiles x row tiles, channel tiles, images.
    fn grid(&self, p: &ConvProblem) -> [u64; 3] {
        let [_, oh, ow] = p.output();
        let [tile_w, tile_k] = self.tile();
        [
            (ow as u64).div_ceil(tile_w as u64) * (oh as u64).div_ceil(self.rows as u64),
            (p.k() as u64).div_ceil(tile_k as u64),
            p.n() as u64,
        ]
    }
}

impl TunableSolver for DirectFirstLayerNchw {
    type Config = Config;
    const CONFIG_FORM: &'static str = "perf config is not tx,tk,rows,filter,stride,wpt,kpt";

    fn id(&self) -> &'static str {
        "ConvDirectFirstLayerNchwFwd"
    }

    fn parse(&self, params: &str) -> Option<Config> {
        Config::parse(params)
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        if p.layouts() != [Layout::Nchw; 3] {
            return Err("needs 2-D NCHW tensors");
        }
        if p.groups() != 1 {
            return Err("grouped convolution");
        }
        if p.c() > 4 {
            return Err("more than 4 input channels (a first-layer solver)");
        }
        if p.dilation() != [1, 1, 1] {
            return Err("dilated filter");
        }
        Ok(())
    }

    fn valid(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> Result<(), NotApplicable> {
        let [_, fh, fw] = p.filter();
        if fh != cfg.filter || fw != cfg.filter {
            return Err("built for another filter size (square filters)");
        }
        let [_, sh, sw] = p.stride();
        if sh != cfg.stride || sw != cfg.stride {
            return Err("built for another stride (the same in both directions)");
        }
        if cfg.shared_bytes(p) > caps.shared_per_block as u64 {
            return Err("the block's filters and input patch exceed the shared memory per block");
        }
        let [tiles, channel_tiles, images] = cfg.grid(p);
        if tiles > i32::MAX as u64 || channel_tiles > MAX_GRID_YZ || images > MAX_GRID_YZ {
            return Err("grid past the launch limits");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, cfg: &Config) -> LaunchPlan {
        let [tiles, channel_tiles, images] = cfg.grid(p);
        LaunchPlan::single_with_shared(
            "conv_first_nchw_fwd",
            [tiles as u32, channel_tiles as u32, images as u32],
            [cfg.tx * cfg.tk, 1, 1],
            cfg.shared_bytes(p) as u32,
        )
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> f64 {
        // FP32 FMAs at about 35 TFLOP/s on 132 SMs (ResNet-50's stem ran 31 on an H200, half
        // the FFMA peak: the shared loads of windows and weights share the issue slots), over
        // the share of each tile that holds outputs; a grid smaller than the GPU leaves SMs
        // idle.
        let [_, oh, ow] = p.output();
        let [tile_w, tile_k] = cfg.tile();
        let fill = tile_fill(ow as f64, tile_w as f64)
            * tile_fill(oh as f64, cfg.rows as f64)
            * tile_fill(p.k() as f64, tile_k as f64);
        let blocks = cfg.grid(p).iter().product::<u64>() as f64;
        let occupancy = (blocks / caps.compute_units as f64).min(1.0);
        let compute_ms = 2.0 * kiln_format::measured::macs(p)
            / (35_000.0 * caps.throughput_scale() * fill * occupancy * 1e6);
        (tensor_bytes(p) / 2.5e9).max(compute_ms) + 0.003
    }

    fn tile(&self, cfg: &Config) -> u64 {
        let [tile_w, tile_k] = cfg.tile();
        tile_w as u64 * tile_k as u64 * cfg.rows as u64
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

    /// ResNet-50's first layer: 3 -> 64 channels, 224x224, 7x7, stride 2, padding 3.
    fn stem(n: u32, c: u32, layout: Layout) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            n,
            c,
            k: 64,
            input: [1, 224, 224],
            filter: [1, 7, 7],
            pad: [0, 3, 3],
            stride: [1, 2, 2],
            layouts: [layout; 3],
            data_types: [DataType::Fp32; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn plans_row_tiles_with_filters_and_patch_in_shared_memory() {
        let p = stem(32, 3, Layout::Nchw);
        let plan = DirectFirstLayerNchw
            .launch_plan(&p, &caps(), "28,8,2,7,2,4,8")
            .unwrap();
        // 112 columns in one 112-wide tile, 112 rows in pairs; 64 channels in one tile; 32
        // images.
        assert_eq!(plan.kernels[0].grid, [56, 1, 32]);
        assert_eq!(plan.kernels[0].block, [224, 1, 1]);
        // Per input channel: 49 taps x 64 channels of filters, and 9 patch rows of 229 columns
        // at a pitch of 229 + 229 / 8 + 1 = 258 words.
        assert_eq!(plan.kernels[0].shared_bytes, 3 * (49 * 64 + 9 * 258) * 4);
        // A 100-column output leaves a partial tile; K = 40 a partial channel tile.
        let narrow = ConvProblem::new(ConvSpec {
            k: 40,
            input: [1, 200, 200],
            ..p.spec()
        })
        .unwrap();
        let plan = DirectFirstLayerNchw
            .launch_plan(&narrow, &caps(), "16,8,2,7,2,4,8")
            .unwrap();
        assert_eq!(plan.kernels[0].grid, [2 * 50, 1, 32]);
        // 8 columns by 4 channels a thread: 14 x 8 columns in a tile, 16 x 4 channels; a window
        // span of 16 columns, so a pitch of 229 + 229 / 16 + 1 = 244 words.
        let plan = DirectFirstLayerNchw
            .launch_plan(&p, &caps(), "14,16,2,7,2,8,4")
            .unwrap();
        assert_eq!(plan.kernels[0].grid, [56, 1, 32]);
        assert_eq!(plan.kernels[0].block, [224, 1, 1]);
        assert_eq!(plan.kernels[0].shared_bytes, 3 * (49 * 64 + 9 * 244) * 4);
    }

    #[test]
    fn takes_fp32_nchw_first_layers_of_its_filter_and_stride_alone() {
        let p = stem(1, 3, Layout::Nchw);
        assert!(DirectFirstLayerNchw
            .check(&p, &caps(), "28,8,2,7,2,4,8")
            .is_ok());
        assert_eq!(
            DirectFirstLayerNchw.check(&stem(1, 8, Layout::Nchw), &caps(), "28,8,2,7,2,4,8"),
            Err("more than 4 input channels (a first-layer solver)")
        );
        assert_eq!(
            DirectFirstLayerNchw.check(&stem(1, 3, Layout::Nhwc), &caps(), "28,8,2,7,2,4,8"),
            Err("needs 2-D NCHW tensors")
        );
        assert_eq!(
            DirectFirstLayerNchw.check(&p, &caps(), "28,4,4,3,2,4,8"),
            Err("built for another filter size (square filters)")
        );
        let stride_one = ConvProblem::new(ConvSpec {
            stride: [1, 1, 1],
            ..p.spec()
        })
        .unwrap();
        assert_eq!(
            DirectFirstLayerNchw.check(&stride_one, &caps(), "28,8,2,7,2,4,8"),
            Err("built for another stride (the same in both directions)")
        );
        // 64 rows a block: the patch and filters need 3 x (49 x 64 + 133 x 258) x 4 bytes, past
        // an SM's 227 KiB.
        assert_eq!(
            DirectFirstLayerNchw.check(&p, &caps(), "28,8,64,7,2,4,8"),
            Err("the block's filters and input patch exceed the shared memory per block")
        );
        for bad in [
            "28,8,2,7,2",
            "0,8,2,7,2,4,8",
            "28,8,2,0,2,4,8",
            "64,32,2,7,2,4,8",
            "28,8,2,7,2,2,8",
        ] {
            assert!(DirectFirstLayerNchw.parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_estimate_sees_idle_sms_at_batch_one() {
        // At N=1 the 2-row tiles make 56 blocks for 132 SMs; single rows make 112.
        let p = stem(1, 3, Layout::Nchw);
        let pairs = DirectFirstLayerNchw.parse("28,8,2,7,2,4,8").unwrap();
        let singles = DirectFirstLayerNchw.parse("28,8,1,7,2,4,8").unwrap();
        assert!(
            DirectFirstLayerNchw.estimate(&p, &caps(), &singles)
                < DirectFirstLayerNchw.estimate(&p, &caps(), &pairs)
        );
    }
}
