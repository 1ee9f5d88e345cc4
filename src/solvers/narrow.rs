//! `ConvMmaNarrowFwd` (`kernels/nv/mma_narrow.cu`): tensor-core 2-D convolution in NHWC FP16 /
//! BF16 for layers with at most 16 output channels (a decoder's RGB head, a segmentation mask,
//! a depth map), NVIDIA sm_80+. A block loads the input patch of its output tile once per
//! channel chunk into shared memory and every filter tap reads its operand from that patch
//! (ldmatrix with per-lane row addresses), so the input is read once, not once per tap as an
//! implicit GEMM tiled for wide K reads it; products are mma.sync m16n8k16, FP32 accumulation.
//! Perf config: `tile_h,tile_w,warps,channels_per_chunk,n_tiles` (K <= 8 * n_tiles).

use kiln_format::ConvProblem;

use super::params::{half_nhwc_2d, patch_extent, values};
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// The solver's id.
pub const ID: &str = "ConvMmaNarrowFwd";

/// The narrow-K tensor-core solver.
pub struct MmaNarrow;

/// A perf config, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Output rows and columns of a block's tile.
    tile: [u32; 2],
    warps: u32,
    /// Input channels per shared-memory chunk.
    chunk: u32,
    /// n8 tiles of output channels.
    n_tiles: u32,
}

impl Config {
    fn parse(params: &str) -> Option<Config> {
        let &[th, tw, warps, chunk, n_tiles] = values(params).as_slice() else {
            return None;
        };
        let groups = th * tw / 16;
        (th > 0
            && tw > 0
            && tw.is_multiple_of(16)
            && warps > 0
            && groups.is_multiple_of(warps)
            && matches!(chunk, 16 | 32 | 64)
            && matches!(n_tiles, 1 | 2))
        .then_some(Config {
            tile: [th, tw],
            warps,
            chunk,
            n_tiles,
        })
    }

    /// Input rows and columns of a tile's patch.
    fn patch(&self, p: &ConvProblem) -> [u64; 2] {
        patch_extent(p, self.tile)
    }

    /// Dynamic shared memory: two stages of (patch + filter slice), 2-byte elements.
    fn shared_bytes(&self, p: &ConvProblem) -> u64 {
        let [rows, cols] = self.patch(p);
        let [_, fh, fw] = p.filter();
        let filter = fh as u64 * fw as u64 * 8 * self.n_tiles as u64;
        2 * (rows * cols + filter) * self.chunk as u64 * 2
    }

    /// Blocks: output tiles of every image.
    fn grid(&self, p: &ConvProblem) -> [u64; 2] {
        let [_, oh, ow] = p.output();
        [
            (oh as u64).div_ceil(self.tile[0] as u64) * (ow as u64).div_ceil(self.tile[1] as u64),
            p.n() as u64,
        ]
    }
}

impl TunableSolver for MmaNarrow {
    type Config = Config;
    const CONFIG_FORM: &'static str =
        "perf config is not tile_h,tile_w,warps,chunk,n_tiles (tile_w % 16 == 0)";

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
        Ok(())
    }

    fn valid(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> Result<(), NotApplicable> {
        if p.k() > 8 * cfg.n_tiles {
            return Err("more output channels than the config's n8 tiles hold");
        }
        if !p.c().is_multiple_of(8) {
            return Err("C is not a multiple of 8 (16-byte channel granules)");
        }
        if cfg.shared_bytes(p) > caps.shared_per_block as u64 {
            return Err("the tile's input patch and filter do not fit in shared memory");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, cfg: &Config) -> LaunchPlan {
        let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
        let [tiles, images] = cfg.grid(p);
        LaunchPlan::single_with_shared(
            "kiln_mma_narrow",
            [clamp(tiles), clamp(images), 1],
            [32 * cfg.warps, 1, 1],
            clamp(cfg.shared_bytes(p)),
        )
    }

    fn waits_on_predecessor(&self) -> bool {
        true
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> f64 {
        // Bound by reading the input (patches overlap by the filter's halo, mostly from L2)
        // and by ldmatrix's shared-memory traffic: 512 bytes per m16n8k16 product.
        let [rows, cols] = cfg.patch(p);
        let [tiles, images] = cfg.grid(p);
        let c = (p.c() as u64).div_ceil(cfg.chunk as u64) * cfg.chunk as u64;
        let patch_bytes = (tiles * images * rows * cols * c * 2) as f64;
        let [_, fh, fw] = p.filter();
        let mmas = (tiles * images * (cfg.tile[0] * cfg.tile[1] / 16) as u64)
            * (fh * fw) as u64
            * (c / 16)
            * cfg.n_tiles as u64;
        let smem_ms = mmas as f64 * 512.0 / (caps.compute_units as f64 * 128.0 * 1.7e9) * 1e3;
        let [_, _, y] = p.element_counts();
        let memory_ms = (patch_bytes / 2.0 + y as f64 * 2.0) / 2.5e9;
        // Each chunk of a block waits for its own loads once (about a microsecond); two
        // blocks of a wave share an SM.
        let waves = (tiles * images).div_ceil(2 * caps.compute_units as u64) as f64;
        let latency_ms = waves * (c / cfg.chunk as u64) as f64 * 0.0008;
        memory_ms.max(smem_ms) + latency_ms + 0.003
    }

    fn tile(&self, cfg: &Config) -> u64 {
        cfg.tile[0] as u64 * cfg.tile[1] as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::Solver;
    use kiln_format::{ConvSpec, DataType};

    fn head(c: u32, k: u32, hw: u32, n: u32) -> ConvProblem {
        super::super::params::nhwc_fp16(n, c, k, hw, 3)
    }

    #[test]
    fn plans_the_vae_rgb_head() {
        let caps = crate::solvers::devices::h100();
        let s = &MmaNarrow;
        // The VAE decoder's last layer: 64 -> 3 channels, 3x3, 128x128, batch 32.
        let p = head(64, 3, 128, 32);
        assert!(s.check(&p, &caps, "4,64,4,32,1").is_ok());
        let plan = s
            .launch_plan(&p, &crate::solvers::devices::h100(), "4,64,4,32,1")
            .unwrap();
        // 32 x 2 tiles of 4 x 64 per image; patch 6 x 66 pixels x 32 channels plus 9 taps x
        // 8 rows x 32 channels, two stages of 2-byte elements.
        assert_eq!(plan.kernels[0].grid, [32 * 2, 32, 1]);
        assert_eq!(plan.kernels[0].block, [128, 1, 1]);
        assert_eq!(plan.kernels[0].shared_bytes, 2 * (6 * 66 + 9 * 8) * 32 * 2);
        assert_eq!(plan.workspace_bytes, 0);
    }

    #[test]
    fn refuses_what_the_kernel_cannot_run() {
        let caps = crate::solvers::devices::h100();
        let s = &MmaNarrow;
        assert_eq!(
            s.check(&head(64, 9, 128, 1), &caps, "4,64,4,32,1"),
            Err("more output channels than the config's n8 tiles hold")
        );
        assert!(s.check(&head(64, 9, 128, 1), &caps, "4,64,4,32,2").is_ok());
        assert_eq!(
            s.check(&head(20, 3, 64, 1), &caps, "4,64,4,32,1"),
            Err("C is not a multiple of 8 (16-byte channel granules)")
        );
        let fp32 = ConvProblem::new(ConvSpec {
            data_types: [DataType::Fp32; 3],
            ..head(64, 3, 64, 1).spec()
        })
        .unwrap();
        assert_eq!(
            s.check(&fp32, &caps, "4,64,4,32,1"),
            Err("FP16 or BF16 only")
        );
        // A 31x31 filter's patch cannot fit: refused, not launched.
        let huge = ConvProblem::new(ConvSpec {
            filter: [1, 31, 31],
            pad: [0, 15, 15],
            ..head(64, 3, 128, 1).spec()
        })
        .unwrap();
        assert_eq!(
            s.check(&huge, &caps, "8,64,4,64,1"),
            Err("the tile's input patch and filter do not fit in shared memory")
        );
        assert!(Config::parse("4,60,4,32,1").is_none());
        assert!(Config::parse("4,64,4,48,1").is_none());
    }
}
