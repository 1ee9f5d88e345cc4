//! `ConvDot1x1Fwd` (`kernels/conv_dot1x1.cpp`): 1x1 convolutions over few output pixels
//! (squeeze-and-excitation layers on pooled 1x1 maps, classifier heads) on CUDA cores, each warp
//! a tile of (pixel, output channel) dot products with its lanes along the channels, FP32
//! accumulation. A GEMM kernel's 64 x 64 tiles leave most SMs idle on these layers and run the
//! whole reduction in one block; here the work spreads over every warp the problem has.
//! NVIDIA archs (manifest). Perf config: `vec,pixels_per_warp,channels_per_warp,warps`.

use kiln_format::{ConvProblem, Layout};

use super::params::values;
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// The solver's id.
pub const ID: &str = "ConvDot1x1Fwd";

/// Most output pixels (N x OH x OW) the solver takes: past this a GEMM's tiles are full and win.
pub const MAX_PIXELS: u64 = 256;

/// The few-pixel 1x1 solver.
pub struct Dot1x1;

/// A perf config, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Channels per vector load.
    vec: u32,
    /// Output pixels and output channels per warp.
    tile: [u32; 2],
    warps: u32,
}

impl Config {
    fn parse(params: &str) -> Option<Config> {
        let &[vec, tm, tk, warps] = values(params).as_slice() else {
            return None;
        };
        (matches!(vec, 1 | 2 | 4 | 8)
            && (1..=8).contains(&tm)
            && (1..=8).contains(&tk)
            && tm * tk <= 32
            && (1..=8).contains(&warps))
        .then_some(Config {
            vec,
            tile: [tm, tk],
            warps,
        })
    }

    /// Warp tiles: pixel tiles x output-channel tiles.
    fn warp_tiles(&self, p: &ConvProblem) -> u64 {
        pixels(p).div_ceil(self.tile[0] as u64) * (p.k() as u64).div_ceil(self.tile[1] as u64)
    }
}

/// Output pixels of every image: the rows of x and y.
fn pixels(p: &ConvProblem) -> u64 {
    let [_, h, w] = p.output();
    p.n() as u64 * h as u64 * w as u64
}

impl TunableSolver for Dot1x1 {
    type Config = Config;
    const CONFIG_FORM: &'static str =
        "perf config is not vec,pixels,channels,warps (vec 1, 2, 4 or 8)";

    fn id(&self) -> &'static str {
        ID
    }

    fn waits_on_predecessor(&self) -> bool {
        true
    }

    fn parse(&self, params: &str) -> Option<Config> {
        Config::parse(params)
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        if p.spatial_dims() != 2 || p.groups() != 1 {
            return Err("needs a 2-D convolution with one group");
        }
        if p.filter() != [1, 1, 1]
            || p.stride() != [1, 1, 1]
            || p.pad() != [0, 0, 0]
            || p.dilation() != [1, 1, 1]
        {
            return Err("needs a 1x1 filter, stride 1, no padding or dilation");
        }
        // x, w and y must be [pixels][C], [K][C] and [pixels][K]: NHWC, or NCHW over 1x1 maps.
        let [_, h, w] = p.input();
        if p.layouts()[0] != Layout::Nhwc && (h, w) != (1, 1) {
            return Err("needs NHWC, or NCHW over 1x1 maps");
        }
        if pixels(p) > MAX_PIXELS {
            return Err("more than 256 output pixels (a GEMM kernel's tiles fill there)");
        }
        Ok(())
    }

    fn valid(&self, p: &ConvProblem, _: &TargetCaps, cfg: &Config) -> Result<(), NotApplicable> {
        if !p.c().is_multiple_of(cfg.vec) {
            return Err("C is not a multiple of the config's vector width");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, cfg: &Config) -> LaunchPlan {
        let blocks = cfg.warp_tiles(p).div_ceil(cfg.warps as u64);
        LaunchPlan::single(
            "conv_dot1x1_fwd",
            [blocks.min(u32::MAX as u64) as u32, 1, 1],
            [32 * cfg.warps, 1, 1],
        )
    }

    /// The config the cost model ranks fastest. The default rule (the largest tile giving
    /// the GPU 256 blocks, else the smallest) measures tiles by vector width times pixels, and
    /// on a pooled 1x1 map no config gives 256 warps' worth of blocks, so it took `1,1,8,4`:
    /// scalar loads, a dependent step per 32 channels, about 3x the vector configs' time on
    /// MobileNetV3's excitation layers, where CUTLASS then ranked first.
    fn default_config(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        candidates: &mut dyn Iterator<Item = (&'static str, Config)>,
    ) -> Option<&'static str> {
        self.fastest(p, caps, candidates)
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> f64 {
        // Each warp walks C in steps of 32 lanes x vec channels, one dependent step after
        // another (about 0.5 us each from L2, the first from memory); each SM runs up to 64
        // warps side by side. The weights are read once, from memory.
        let steps = (p.c() as u64).div_ceil(32 * cfg.vec as u64) as f64;
        let waves = (cfg.warp_tiles(p) as f64 / (caps.compute_units as f64 * 64.0)).ceil();
        let [_, w, _] = p.element_counts();
        let weight_ms = (w * p.data_types()[0].size_bytes() as u64) as f64 / 2.5e9;
        // Lanes past C idle: 48 channels in 8-channel loads keep 6 of 32 busy. That costs
        // time only where warps queue for the SMs; in one wave each step waits on latency.
        let lane_fill = if waves > 1.0 {
            p.c() as f64 / (steps * 32.0 * cfg.vec as f64)
        } else {
            1.0
        };
        (waves * (0.001 + steps * 0.0005) / lane_fill.max(0.25)).max(weight_ms) + 0.002
    }

    fn tile(&self, cfg: &Config) -> u64 {
        cfg.vec as u64 * cfg.tile[0] as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::Solver;
    use kiln_format::{ConvSpec, DataType};

    fn squeeze(n: u32, c: u32, k: u32, hw: u32, layout: Layout) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            n,
            c,
            k,
            input: [1, hw, hw],
            layouts: [layout; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn plans_an_excitation_layer() {
        let caps = crate::solvers::devices::h100();
        // EfficientNet-B0's last excitation: 48 -> 1152 channels on 1x1 maps, batch 32.
        let p = squeeze(32, 48, 1152, 1, Layout::Nhwc);
        assert!(Dot1x1.check(&p, &caps, "8,4,4,4").is_ok());
        let plan = Dot1x1
            .launch_plan(&p, &crate::solvers::devices::h100(), "8,4,4,4")
            .unwrap();
        // 8 pixel tiles x 288 channel tiles, 4 warps a block.
        assert_eq!(plan.kernels[0].grid, [8 * 288 / 4, 1, 1]);
        assert_eq!(plan.kernels[0].block, [128, 1, 1]);
        assert_eq!(plan.workspace_bytes, 0);
        // NCHW over 1x1 maps is the same bytes.
        assert!(Dot1x1
            .check(&squeeze(32, 48, 1152, 1, Layout::Nchw), &caps, "8,4,4,4")
            .is_ok());
    }

    #[test]
    fn unmeasured_excitation_layers_take_vector_loads_and_rank_first() {
        let caps = crate::solvers::devices::h100();
        // MobileNetV3's excitation layers with nothing measured near them (the cost model
        // alone): the dot kernel with 16- or 8-byte loads, ahead of CUTLASS. In the sm_90_132
        // find log the dot kernel ran them 2.5-5.5x faster than CUTLASS's 3xTF32 kernels, and
        // its scalar `1,1,8,4` (the old default, by tile size) about 3x slower than `8,4,4,4`.
        for key in [
            "960-1-1-1x1-240-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F",
            "120-1-1-1x1-32-1-1-1-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-F",
            "72-1-1-1x1-24-1-1-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-F",
        ] {
            let p = ConvProblem::from_find_db_key(key).unwrap();
            let plan = crate::resolve::rank_unmeasured(&p, &[], &caps, None).unwrap();
            let best = plan.best();
            assert_eq!(best.variant.solver.id(), ID, "{key}");
            let cfg = Config::parse(best.variant.params).unwrap();
            assert!(cfg.vec >= 4, "{key}: {}", best.variant.params);
        }
        // In one wave a step waits on latency, not on its lanes: 72 channels take one step
        // at 8 or 4 channels a lane, estimated alike.
        let p = ConvProblem::from_find_db_key(
            "72-1-1-1x1-24-1-1-1-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-F",
        )
        .unwrap();
        let wide = Dot1x1.estimate(&p, &caps, &Config::parse("8,4,4,4").unwrap());
        let narrow = Dot1x1.estimate(&p, &caps, &Config::parse("4,4,4,4").unwrap());
        assert_eq!(wide, narrow);
    }

    #[test]
    fn refuses_what_the_kernel_cannot_run() {
        let caps = crate::solvers::devices::h100();
        assert_eq!(
            Dot1x1.check(&squeeze(1, 48, 64, 7, Layout::Nchw), &caps, "8,4,4,4"),
            Err("needs NHWC, or NCHW over 1x1 maps")
        );
        assert_eq!(
            Dot1x1.check(&squeeze(32, 48, 64, 7, Layout::Nhwc), &caps, "8,4,4,4"),
            Err("more than 256 output pixels (a GEMM kernel's tiles fill there)")
        );
        assert_eq!(
            Dot1x1.check(&squeeze(32, 6, 144, 1, Layout::Nhwc), &caps, "8,4,4,4"),
            Err("C is not a multiple of the config's vector width")
        );
        assert!(Dot1x1
            .check(&squeeze(32, 6, 144, 1, Layout::Nhwc), &caps, "2,4,4,4")
            .is_ok());
        let padded = ConvProblem::new(ConvSpec {
            pad: [0, 1, 1],
            ..squeeze(1, 8, 8, 4, Layout::Nhwc).spec()
        })
        .unwrap();
        assert_eq!(
            Dot1x1.check(&padded, &caps, "8,4,4,4"),
            Err("needs a 1x1 filter, stride 1, no padding or dilation")
        );
        assert!(Config::parse("3,4,4,4").is_none());
        assert!(Config::parse("8,4,4").is_none());
        // A warp's tile holds at most one sum a lane.
        assert!(Config::parse("8,8,8,4").is_none());
    }
}
