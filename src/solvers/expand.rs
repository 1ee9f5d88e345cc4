//! `ConvMmaExpand1x1Fwd` (`kernels/nv/mma_expand.cu`): tensor-core 1x1 convolution in NHWC FP16
//! / BF16 for layers with at most 64 input channels (the expansion layers of inverted
//! residuals: 16 -> 96, 24 -> 144, 32 -> 192), NVIDIA sm_80+. Such a layer's time is writing an
//! output several times wider than its input; a block takes one short step (its pixels and
//! filter rows copied once, one to four k16 products) and stores its output tile through shared
//! memory as whole 16-byte vectors, the epilogue applied in the output's order.
//! Perf config: `pixels,channels,c_padded,blocks_per_sm` (pixels and output channels a block; C
//! rounded up to 16, 32 or 64; a run-time value: 0 for a block a pixel tile, else that many
//! blocks an SM, each taking tile after tile with its filter rows and epilogue factors loaded
//! once and the next tile's pixels copied while it stores this one's outputs).

use kiln_format::ConvProblem;

use super::params::{half_nhwc_2d, values};
use super::{
    largest_tile_filling_the_gpu_by, LaunchPlan, NotApplicable, TargetCaps, TunableSolver,
};

/// The solver's id.
pub const ID: &str = "ConvMmaExpand1x1Fwd";

/// The narrow-input 1x1 tensor-core solver.
pub struct MmaExpand1x1;

/// A perf config, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Output pixels a block (64 or 128).
    pixels: u32,
    /// Output channels a block (a multiple of 8: 8-channel vectors, one a thread in the
    /// epilogue; where they do not divide 128 threads, the last threads store nothing).
    channels: u32,
    /// C rounded up to the k16 steps the object is built for (16, 32 or 64).
    c_padded: u32,
    /// Blocks an SM, each looping over pixel tiles (0: one block a tile; run-time, same object).
    blocks_per_sm: u32,
}

/// Threads a block (four warps).
const THREADS: u32 = 128;

impl Config {
    fn parse(params: &str) -> Option<Config> {
        let &[pixels, channels, c_padded, blocks_per_sm] = values(params).as_slice() else {
            return None;
        };
        (matches!(pixels, 64 | 128)
            && channels > 0
            && channels.is_multiple_of(8)
            // A warp's sums: pixels / 64 m16 groups x channels / 8 n8 tiles x 4.
            && pixels / 64 * channels / 8 * 4 <= 64
            && matches!(c_padded, 16 | 32 | 64)
            // The kernel's launch bounds hold four blocks an SM.
            && blocks_per_sm <= 4)
            .then_some(Config {
                pixels,
                channels,
                c_padded,
                blocks_per_sm,
            })
    }

    /// Dynamic shared memory: alpha * scale and bias of the block's channels, then the staged
    /// filter rows and pixels (rows padded by 16 bytes), and the FP32 sums (rows padded by 8
    /// floats): over the staged rows where a block takes one tile, after them where it loops
    /// (the next tile's pixels arrive while the sums are read).
    fn shared_bytes(&self, loops: bool) -> u64 {
        let factors = self.channels as u64 * 8;
        let row = self.c_padded as u64 * 2 + 16;
        let inputs = (self.pixels + self.channels) as u64 * row;
        let sums = self.pixels as u64 * (self.channels as u64 + 8) * 4;
        factors
            + if loops {
                inputs + sums
            } else {
                inputs.max(sums)
            }
    }

    /// Pixel tiles and output-channel tiles.
    fn tiles(&self, p: &ConvProblem) -> [u64; 2] {
        [
            pixels(p).div_ceil(self.pixels as u64),
            (p.k() as u64).div_ceil(self.channels as u64),
        ]
    }

    /// Blocks (pixel tiles, or as many blocks as the config keeps an SM, x output-channel tiles)
    /// and whether a block loops over pixel tiles.
    fn grid(&self, p: &ConvProblem, caps: &TargetCaps) -> ([u64; 2], bool) {
        let [pixel_tiles, channel_tiles] = self.tiles(p);
        let resident = (caps.compute_units as u64 * self.blocks_per_sm as u64)
            .div_ceil(channel_tiles)
            .max(1);
        let blocks = if self.blocks_per_sm == 0 {
            pixel_tiles
        } else {
            pixel_tiles.min(resident)
        };
        ([blocks, channel_tiles], blocks < pixel_tiles)
    }
}

/// Output pixels of every image.
fn pixels(p: &ConvProblem) -> u64 {
    let [_, oh, ow] = p.output();
    p.n() as u64 * oh as u64 * ow as u64
}

impl TunableSolver for MmaExpand1x1 {
    type Config = Config;
    const CONFIG_FORM: &'static str = "perf config is not pixels,channels,c_padded,blocks_per_sm";

    fn id(&self) -> &'static str {
        ID
    }

    fn parse(&self, params: &str) -> Option<Config> {
        Config::parse(params)
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        half_nhwc_2d(p)?;
        if p.groups() != 1 {
            return Err("grouped convolution");
        }
        if p.filter() != [1, 1, 1] || p.stride() != [1, 1, 1] || p.pad() != [0, 0, 0] {
            return Err("needs a 1x1 filter, stride 1, no padding");
        }
        if p.c() > 64 || !p.c().is_multiple_of(8) {
            return Err("needs C <= 64, a multiple of 8 (16-byte channel granules)");
        }
        Ok(())
    }

    fn valid(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> Result<(), NotApplicable> {
        if p.c() > cfg.c_padded {
            return Err("more input channels than the config's k16 steps hold");
        }
        let ([blocks, channel_tiles], loops) = cfg.grid(p, caps);
        if cfg.shared_bytes(loops) > caps.shared_per_block as u64 {
            return Err("the block's inputs or sums do not fit in shared memory");
        }
        if blocks > i32::MAX as u64 || channel_tiles > u16::MAX as u64 {
            return Err("more blocks than the grid holds");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> LaunchPlan {
        // `valid` bounds the grid.
        let ([blocks, channel_tiles], loops) = cfg.grid(p, caps);
        LaunchPlan::single_with_shared(
            "kiln_mma_expand",
            [blocks as u32, channel_tiles as u32, 1],
            [THREADS, 1, 1],
            cfg.shared_bytes(loops) as u32,
        )
    }

    fn waits_on_predecessor(&self) -> bool {
        true
    }

    /// The largest tile filling the GPU, as other solvers, and among equal tiles the fewest
    /// k16 steps that hold C (steps past C are products of zeros).
    fn default_config(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        candidates: &mut dyn Iterator<Item = (&'static str, Config)>,
    ) -> Option<&'static str> {
        largest_tile_filling_the_gpu_by(self, p, caps, candidates, |c| 64 - c.c_padded)
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> f64 {
        // Writing y (and reading x once per channel tile) at about 1.7 TB/s, what the H200
        // measured for 24 -> 144 at 56x56, N=32 (25 us for 43 MB); each wave of blocks waits
        // once for its loads (about a microsecond). Blocks that loop over tiles are estimated
        // as one block a tile: unmeasured, they are not preferred.
        let [pixel_tiles, channel_tiles] = cfg.tiles(p);
        let [x, _, y] = p.element_counts();
        let bytes = (x * channel_tiles + y) * 2;
        let blocks_per_wave = caps.compute_units as u64 * 4;
        let waves = (pixel_tiles * channel_tiles).div_ceil(blocks_per_wave) as f64;
        // Output channels past K in the last channel tile still take products and stores, and
        // k16 steps past C still take products.
        let fill = p.k() as f64 / (channel_tiles * cfg.channels as u64) as f64;
        let steps = cfg.c_padded as f64 / (p.c() as f64 / 16.0).ceil().max(1.0) / 16.0;
        bytes as f64 / 1.7e9 / fill.max(0.25) * (1.0 + 0.1 * (steps - 1.0)) + waves * 0.001 + 0.002
    }

    fn tile(&self, cfg: &Config) -> u64 {
        cfg.pixels as u64 * cfg.channels as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::Solver;
    use kiln_format::{ConvSpec, DataType};

    fn expand(c: u32, k: u32, hw: u32, n: u32) -> ConvProblem {
        super::super::params::nhwc_fp16(n, c, k, hw, 1)
    }

    #[test]
    fn plans_mobilenet_v2_expansion() {
        let caps = crate::solvers::devices::h100();
        let s = &MmaExpand1x1;
        // 24 -> 144 at 56x56, batch 32: 100352 pixels in tiles of 128, 144 channels in three
        // tiles of 64; 24 channels in two k16 steps.
        let p = expand(24, 144, 56, 32);
        assert!(s.check(&p, &caps, "128,64,32,0").is_ok());
        let plan = s.launch_plan(&p, &caps, "128,64,32,0").unwrap();
        assert_eq!(plan.kernels[0].grid, [784, 3, 1]);
        assert_eq!(plan.kernels[0].block, [128, 1, 1]);
        // The factors (64 channels x 8 bytes), then the sums (128 x 72 floats), which outgrow
        // the staged rows ((128 + 64) x 80 bytes) they overlay.
        assert_eq!(plan.kernels[0].shared_bytes, 512 + 128 * 72 * 4);
        assert_eq!(plan.workspace_bytes, 0);
        assert_eq!(
            s.check(&p, &caps, "128,64,16,0"),
            Err("more input channels than the config's k16 steps hold")
        );
        // Without a perf-db record: the 128-pixel tile (784 x 3 blocks), two k16 steps, not
        // four.
        let mut candidates = [
            "128,64,16,0",
            "64,64,32,0",
            "128,64,32,0",
            "64,64,64,0",
            "128,64,64,0",
        ]
        .into_iter()
        .filter_map(|q| Config::parse(q).map(|c| (q, c)))
        .filter(|(_, c)| s.valid(&p, &caps, c).is_ok());
        assert_eq!(
            s.default_config(&p, &caps, &mut candidates),
            Some("128,64,32,0")
        );
    }

    #[test]
    fn looping_blocks_fill_the_gpu_once() {
        let caps = crate::solvers::devices::h100();
        let s = &MmaExpand1x1;
        // 24 -> 144 at 56x56, batch 32: 784 pixel tiles, three channel tiles; four blocks an
        // SM over 132 SMs is 528 blocks, 176 a channel tile, each taking four or five tiles.
        let p = expand(24, 144, 56, 32);
        let plan = s.launch_plan(&p, &caps, "128,64,32,4").unwrap();
        assert_eq!(plan.kernels[0].grid, [176, 3, 1]);
        // Factors (64 x 8 bytes), the staged rows ((128 + 64) x 80) and then the sums
        // (128 x 72 floats), apart, since the next tile's pixels arrive while the sums are read.
        assert_eq!(plan.kernels[0].shared_bytes, 512 + 192 * 80 + 128 * 72 * 4);
        // Where the tiles are fewer than the blocks an SM would hold, a block a tile, the sums
        // over the staged rows: 24 -> 144 at 56x56, batch 1, 25 pixel tiles.
        let small = expand(24, 144, 56, 1);
        let plan = s.launch_plan(&small, &caps, "128,64,32,4").unwrap();
        assert_eq!(plan.kernels[0].grid, [25, 3, 1]);
        assert_eq!(plan.kernels[0].shared_bytes, 512 + 128 * 72 * 4);
    }

    #[test]
    fn channel_tiles_that_fit_k_exactly() {
        let caps = crate::solvers::devices::h100();
        let s = &MmaExpand1x1;
        // 16 -> 96 at 112x112, batch 32, on 96-channel tiles: one channel tile (on 64-channel
        // tiles the second would hold 32 channels); 6272 pixel tiles over 528 looping blocks.
        let p = expand(16, 96, 112, 32);
        let plan = s.launch_plan(&p, &caps, "64,96,16,4").unwrap();
        assert_eq!(plan.kernels[0].grid, [528, 1, 1]);
        // Factors (96 x 8 bytes), staged rows ((64 + 96) x 48 bytes), sums (64 x 104 floats).
        assert_eq!(plan.kernels[0].shared_bytes, 768 + 160 * 48 + 64 * 104 * 4);
        // 24 -> 144 on 72-channel tiles: two, both full.
        let plan = s
            .launch_plan(&expand(24, 144, 56, 32), &caps, "64,72,32,0")
            .unwrap();
        assert_eq!(plan.kernels[0].grid, [1568, 2, 1]);
        // Unmeasured, the cost model prefers the tile that K fills.
        let full = s.estimate(&p, &caps, &Config::parse("64,96,16,0").unwrap());
        let half_idle = s.estimate(&p, &caps, &Config::parse("64,64,16,0").unwrap());
        assert!(full < half_idle, "{full} vs {half_idle}");
    }

    #[test]
    fn refuses_what_the_kernel_cannot_run() {
        let caps = crate::solvers::devices::h100();
        let s = &MmaExpand1x1;
        assert_eq!(
            s.check(&expand(96, 24, 56, 1), &caps, "64,64,64,0"),
            Err("needs C <= 64, a multiple of 8 (16-byte channel granules)")
        );
        assert_eq!(
            s.check(&expand(20, 120, 28, 1), &caps, "64,64,32,0"),
            Err("needs C <= 64, a multiple of 8 (16-byte channel granules)")
        );
        let strided = ConvProblem::new(ConvSpec {
            stride: [1, 2, 2],
            ..expand(32, 192, 28, 1).spec()
        })
        .unwrap();
        assert_eq!(
            s.check(&strided, &caps, "64,64,32,0"),
            Err("needs a 1x1 filter, stride 1, no padding")
        );
        let fp32 = ConvProblem::new(ConvSpec {
            data_types: [DataType::Fp32; 3],
            ..expand(32, 192, 28, 1).spec()
        })
        .unwrap();
        assert_eq!(
            s.check(&fp32, &caps, "64,64,32,0"),
            Err("FP16 or BF16 only")
        );
        // Configs the kernel does not build: 100 channels (not whole 8-channel vectors),
        // 128 x 128 (128 sums a thread), a 48-channel k-step.
        assert!(Config::parse("64,100,32,0").is_none());
        assert!(Config::parse("128,128,32,0").is_none());
        assert!(Config::parse("64,64,48,0").is_none());
        assert!(Config::parse("64,128,64,0").is_some());
        // Five blocks an SM pass the kernel's launch bounds; three values are the old form.
        assert!(Config::parse("64,64,32,5").is_none());
        assert!(Config::parse("64,64,32").is_none());
    }
}
