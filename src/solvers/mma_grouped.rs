//! `ConvMmaGroupedFwd` (`kernels/nv/mma_grouped.cu`): tensor-core grouped 2-D convolution in NHWC
//! FP16 / BF16 for groups of 4, 8, 16 or 24 channels in and out (ResNeXt's and RegNet's
//! grouped 3x3 layers, and dense layers of 16 or 24 channels as one group), NVIDIA sm_80+. A block
//! covers a slab of whole groups (at most 64 channels) over a tile of output pixels: it loads the
//! tile's input patch of the slab's channels once into shared memory, and every filter tap reads
//! its operand from the patch with ldmatrix. Each group multiplies its own channels only (groups of 4 share a 16-byte
//! granule: the other group's channels are zeroed in the operand), so no product mixes groups
//! and an inf in one group never becomes a NaN in another. Products are mma.sync m16n8k16 /
//! m16n8k8, FP32 accumulation. Perf config: `group_width,groups_per_block,tile_h,tile_w,warps`
//! (`tile_w % 16 == 0`; the group width and groups per block are compiled in).

use kiln_format::ConvProblem;

use super::caps::RESERVED_SHARED_PER_BLOCK;
use super::params::{half_nhwc_2d, patch_extent, values};
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// The solver's id.
pub const ID: &str = "ConvMmaGroupedFwd";

/// The narrow-group tensor-core solver.
pub struct MmaGrouped;

/// Group widths (channels per group, in and out) with a build. At 32 the kernel ran 2-6x
/// slower than CUTLASS's group fprop (and than the implicit GEMMs on dense 32-channel layers)
/// on every problem measured, so no width-32 build is made.
const GROUP_WIDTHS: [u32; 4] = [4, 8, 16, 24];

/// Bytes the kernel may skip to start its patch 128-byte aligned (its swizzled addresses move
/// between a pixel's granules with one XOR).
const PATCH_ALIGN_SLACK: u64 = 128;

/// A perf config, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Channels per group (`KILN_GW`).
    group_width: u32,
    /// Groups a block covers (`KILN_SG`).
    groups_per_block: u32,
    /// Output rows and columns of a block's tile.
    tile: [u32; 2],
    warps: u32,
}

impl Config {
    fn parse(params: &str) -> Option<Config> {
        let &[group_width, groups_per_block, th, tw, warps] = values(params).as_slice() else {
            return None;
        };
        let m16_groups = th * tw / 16;
        let slab = group_width * groups_per_block;
        (GROUP_WIDTHS.contains(&group_width)
            && groups_per_block > 0
            && slab <= 64
            && slab.is_multiple_of(8)
            && th > 0
            && tw > 0
            && tw.is_multiple_of(16)
            && warps > 0
            && m16_groups.is_multiple_of(warps))
        .then_some(Config {
            group_width,
            groups_per_block,
            tile: [th, tw],
            warps,
        })
    }

    /// Channels of a slab (`KILN_CB`): whole groups, at most 64.
    fn slab(&self) -> u32 {
        self.group_width * self.groups_per_block
    }

    /// Bytes of one patch pixel in shared memory: the slab's 16-byte granules rounded up to a
    /// power of two (a 48-channel slab leaves two unused), so that the swizzle is an XOR.
    fn patch_pixel_bytes(&self) -> u64 {
        16 * (self.slab() as u64 / 8).next_power_of_two()
    }

    /// Input rows and columns of a tile's patch.
    fn patch(&self, p: &ConvProblem) -> [u64; 2] {
        patch_extent(p, self.tile)
    }

    /// Dynamic shared memory with `patches` patch buffers: alignment slack, the patches (whole
    /// 128-byte lines) and the slab's filter (a row of the group's channels, at least one
    /// 16-byte granule, per tap and output channel).
    fn shared_bytes(&self, p: &ConvProblem, patches: u64) -> u64 {
        let [rows, cols] = self.patch(p);
        let [_, fh, fw] = p.filter();
        let filter_row = (self.group_width as u64 * 2).max(16);
        PATCH_ALIGN_SLACK
            + patches * (rows * cols * self.patch_pixel_bytes()).next_multiple_of(128)
            + fh as u64 * fw as u64 * self.slab() as u64 * filter_row
    }

    /// Output tiles of the whole batch, and slabs of channels.
    fn tiles(&self, p: &ConvProblem) -> [u64; 2] {
        let [_, oh, ow] = p.output();
        let per_image =
            (oh as u64).div_ceil(self.tile[0] as u64) * (ow as u64).div_ceil(self.tile[1] as u64);
        [
            per_image * p.n() as u64,
            (p.c() as u64).div_ceil(self.slab() as u64),
        ]
    }

    /// Blocks of `shared` bytes that one SM holds at once, by its shared memory, threads and
    /// registers. Registers are estimated: 48 a thread beside the accumulators (the compiled
    /// kernels measured 80 for groups of 8 and 122 for groups of 4 at one m16 group a warp).
    fn resident_per_unit(&self, caps: &TargetCaps, shared: u64) -> u64 {
        let threads = 32 * self.warps as u64;
        let m16_per_warp = (self.tile[0] * self.tile[1] / 16 / self.warps) as u64;
        let accumulators_per_group = if self.group_width == 4 { 2 } else { 1 };
        let accumulators = 4 * m16_per_warp * (self.slab() / 8) as u64 * accumulators_per_group;
        let registers = (48 + accumulators).next_multiple_of(8);
        let by_shared = caps.shared_per_unit as u64 / (shared + RESERVED_SHARED_PER_BLOCK);
        let by_threads = MAX_THREADS_PER_UNIT / threads;
        let by_registers = REGISTERS_PER_UNIT / (threads * registers);
        by_shared.min(by_threads).min(by_registers).clamp(1, 32)
    }

    /// The launch: blocks along x, the slabs along z, and the dynamic shared memory. Where the
    /// batch's tiles fill more than one wave of blocks and a second patch buffer costs no
    /// block an SM, one wave, each block looping over several tiles with two buffers; else a
    /// block a tile with one buffer. (Halving the blocks an SM to double-buffer ran 1.2-3.5x
    /// slower on strided and 16-channel-group layers; at equal blocks it ran up to 1.6x faster.)
    fn launch(&self, p: &ConvProblem, caps: &TargetCaps) -> ([u64; 3], u64) {
        let [tiles, slabs] = self.tiles(p);
        let (single, double) = (self.shared_bytes(p, 1), self.shared_bytes(p, 2));
        if double <= caps.shared_per_block as u64 {
            let resident = self.resident_per_unit(caps, double);
            if resident >= self.resident_per_unit(caps, single) {
                let blocks = (resident * caps.compute_units as u64)
                    .div_ceil(slabs)
                    .max(1);
                if blocks < tiles {
                    return ([blocks, 1, slabs], double);
                }
            }
        }
        ([tiles, 1, slabs], single)
    }
}

/// Threads and 32-bit registers of one SM (sm_80 and sm_90).
const MAX_THREADS_PER_UNIT: u64 = 2048;
const REGISTERS_PER_UNIT: u64 = 65536;

impl TunableSolver for MmaGrouped {
    type Config = Config;
    const CONFIG_FORM: &'static str =
        "perf config is not group_width,groups_per_block,tile_h,tile_w,warps";

    fn id(&self) -> &'static str {
        ID
    }

    fn parse(&self, params: &str) -> Option<Config> {
        Config::parse(params)
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        half_nhwc_2d(p)?;
        if p.group_channels() != p.group_outputs() {
            return Err("C/groups differs from K/groups");
        }
        if !GROUP_WIDTHS.contains(&p.group_channels()) {
            return Err("groups not of 4, 8, 16 or 24 channels");
        }
        if !p.c().is_multiple_of(8) {
            return Err("C is not a multiple of 8 (16-byte channel granules)");
        }
        Ok(())
    }

    fn valid(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> Result<(), NotApplicable> {
        if cfg.group_width != p.group_channels() {
            return Err("the config is built for another group width");
        }
        // A dense layer is one group: a block of several would compute zeros.
        if cfg.groups_per_block > p.groups() {
            return Err("more groups a block than the layer has");
        }
        if cfg.shared_bytes(p, 1) > caps.shared_per_block as u64 {
            return Err("the tile's input patch and filter do not fit in shared memory");
        }
        let [tiles, slabs] = cfg.tiles(p);
        // The kernel counts tiles in 32-bit integers, a tile index plus two strides of blocks.
        if tiles > i32::MAX as u64 / 3 || slabs > 65_535 {
            return Err("more tiles than 2^31 / 3 or channel slabs past the grid's 65535 blocks");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> LaunchPlan {
        let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
        let (grid, shared) = cfg.launch(p, caps);
        LaunchPlan::single_with_shared(
            "kiln_mma_grouped",
            grid.map(clamp),
            [32 * cfg.warps, 1, 1],
            clamp(shared),
        )
    }

    fn tiles_launched(&self, p: &ConvProblem, _: &TargetCaps, cfg: &Config) -> u64 {
        let [tiles, slabs] = cfg.tiles(p);
        tiles * slabs
    }

    fn waits_on_predecessor(&self) -> bool {
        true
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> f64 {
        // Bound by reading the patches (they overlap by the filter's halo, mostly from L2),
        // writing y, and by issuing the products: one mma.sync per m16 pixels, tap, group
        // granule step and n8 tile (groups of 4: two per granule, each keeping half its
        // columns), with an ldmatrix each.
        let [rows, cols] = cfg.patch(p);
        let [tiles, slabs] = cfg.tiles(p);
        let blocks = tiles * slabs;
        let patch_bytes = (blocks * rows * cols * cfg.slab() as u64 * 2) as f64;
        let [_, fh, fw] = p.filter();
        let width = cfg.group_width as u64;
        let steps_per_group = if width == 4 {
            2
        } else {
            width.div_ceil(16) * (width / 8)
        };
        let groups_per_slab = cfg.groups_per_block as u64;
        let mmas = blocks
            * (cfg.tile[0] * cfg.tile[1] / 16) as u64
            * (fh * fw) as u64
            * groups_per_slab
            * steps_per_group;
        let issue_ms = mmas as f64 * 2.0 / (caps.compute_units as f64 * 4.0 * 1.7e9) * 1e3;
        let [_, _, y] = p.element_counts();
        let memory_ms = (patch_bytes / 2.0 + y as f64 * 2.0) / 2.5e9;
        // Each block waits for its loads once (about a microsecond); a few blocks share an SM.
        let waves = blocks.div_ceil(4 * caps.compute_units as u64) as f64;
        memory_ms.max(issue_ms) + waves * 0.001 + 0.003
    }

    fn tile(&self, cfg: &Config) -> u64 {
        cfg.tile[0] as u64 * cfg.tile[1] as u64
    }

    fn default_config(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        candidates: &mut dyn Iterator<Item = (&'static str, Config)>,
    ) -> Option<&'static str> {
        // The block-count rule, with the most groups a block among tiles of one size: at N=32
        // two groups of 24 a block ran 1.1-1.5x faster than one on every unseen layer
        // measured, and no grid problem has groups of 24 to hand its config over.
        super::largest_tile_filling_the_gpu_by(self, p, caps, candidates, |c| c.groups_per_block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::Solver;
    use kiln_format::{ConvSpec, DataType, Layout};

    /// A grouped 3x3 NHWC FP16 layer, padding 1.
    fn grouped(n: u32, c: u32, groups: u32, hw: u32, stride: u32) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            n,
            c,
            k: c,
            groups,
            input: [1, hw, hw],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            stride: [1, stride, stride],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn plans_resnext_and_regnet_layers() {
        let caps = crate::solvers::devices::h100();
        let s = &MmaGrouped;
        // ResNeXt-50 32x4d's first stage: 128 channels in 32 groups of 4, 56x56, batch 32.
        let p = grouped(32, 128, 32, 56, 1);
        let plan = s.launch_plan(&p, &caps, "4,16,8,16,4").unwrap();
        // 7 x 4 tiles of 8 x 16 per image, two slabs of 64 channels; patch 10 x 18 pixels of
        // 128 bytes, filter 9 taps x 64 rows of one granule. The batch's 896 tiles a slab are
        // more than a wave, and registers (128 threads of an estimated 176: two m16 groups x 8
        // n8 tiles x 2 accumulators of 4) hold an SM to 2 blocks with one patch buffer or two:
        // 264 blocks over two slabs, each looping over 6-7 tiles, double-buffered.
        assert_eq!(plan.kernels[0].kernel, "kiln_mma_grouped");
        assert_eq!(plan.kernels[0].grid, [132, 1, 2]);
        assert_eq!(plan.kernels[0].block, [128, 1, 1]);
        assert_eq!(
            plan.kernels[0].shared_bytes,
            128 + 2 * 10 * 18 * 128 + 9 * 64 * 16
        );
        assert_eq!(plan.workspace_bytes, 0);
        assert_eq!(
            s.tiles_launched(&p, &caps, &s.parse("4,16,8,16,4").unwrap()),
            28 * 32 * 2
        );
        // The wave is the device's: 2 blocks on each of a 108-SM A100's SMs.
        let a100 = crate::solvers::devices::a100();
        let plan = s.launch_plan(&p, &a100, "4,16,8,16,4").unwrap();
        assert_eq!(plan.kernels[0].grid, [108, 1, 2]);
        // At batch 1 every tile has a block, with one patch buffer.
        let p = grouped(1, 128, 32, 56, 1);
        let plan = s.launch_plan(&p, &caps, "4,16,8,16,4").unwrap();
        assert_eq!(plan.kernels[0].grid, [7 * 4, 1, 2]);
        assert_eq!(
            plan.kernels[0].shared_bytes,
            128 + 10 * 18 * 128 + 9 * 64 * 16
        );
        // RegNetY-1.6GF's two groups of 24 at 56x56, stride 2: one 48-channel slab, a 17 x 33
        // patch, filter rows of 24 channels. A second patch would drop an SM from 3 blocks to
        // 2, so each of the 448 tiles gets a block.
        let p = grouped(32, 48, 2, 56, 2);
        let plan = s.launch_plan(&p, &caps, "24,2,4,16,4").unwrap();
        assert_eq!(plan.kernels[0].grid, [7 * 2 * 32, 1, 1]);
        assert_eq!(
            plan.kernels[0].shared_bytes,
            128 + 9 * 33 * 128 + 9 * 48 * 48
        );
    }

    #[test]
    fn a_narrow_dense_layer_is_one_group() {
        let caps = crate::solvers::devices::h100();
        let s = &MmaGrouped;
        // 24 -> 24 channels at 192x192, batch 32 (3.1x cuDNN on the implicit GEMMs).
        let p = grouped(32, 24, 1, 192, 1);
        let plan = s.launch_plan(&p, &caps, "24,1,8,16,4").unwrap();
        // 24 x 12 tiles an image, a block each (a second patch would cost one of 7 blocks an
        // SM); patch pixels of 4 granules (3 used), filter rows of 24 channels for 24 outputs a
        // tap.
        assert_eq!(plan.kernels[0].grid, [24 * 12 * 32, 1, 1]);
        assert_eq!(
            plan.kernels[0].shared_bytes,
            128 + 10 * 18 * 64 + 9 * 24 * 48
        );
        assert_eq!(
            s.check(&p, &caps, "24,2,8,16,8"),
            Err("more groups a block than the layer has")
        );
    }

    #[test]
    fn the_default_config_fills_the_gpu_with_the_most_groups_a_block() {
        let caps = crate::solvers::devices::h100();
        let s: &dyn crate::solvers::Solver = &MmaGrouped;
        let default = |p: &ConvProblem| {
            let listed = [
                "24,2,4,16,4",
                "24,1,8,16,4",
                "24,2,8,16,8",
                "16,4,4,16,4",
                "16,1,8,16,4",
            ];
            s.default_params(
                p,
                &caps,
                &mut listed.into_iter().filter(|q| s.check(p, &caps, q).is_ok()),
            )
        };
        // RegNetY's groups of 24 at N=32: two groups of 8 x 16 (1.1-1.5x faster than one).
        assert_eq!(default(&grouped(32, 336, 14, 28, 2)), Some("24,2,8,16,8"));
        // A dense 24-channel layer has one group: the 8 x 16 tile of one.
        assert_eq!(default(&grouped(32, 24, 1, 192, 1)), Some("24,1,8,16,4"));
        assert_eq!(default(&grouped(32, 512, 32, 14, 1)), Some("16,1,8,16,4"));
        // One image of two groups at 56x56: no config gives 256 blocks, so the smallest tile.
        assert_eq!(default(&grouped(1, 48, 2, 56, 1)), Some("24,2,4,16,4"));
    }

    #[test]
    fn refuses_what_the_kernel_cannot_run() {
        let caps = crate::solvers::devices::h100();
        let s = &MmaGrouped;
        let width8 = grouped(1, 64, 8, 28, 1);
        assert!(s.check(&width8, &caps, "8,8,8,16,4").is_ok());
        assert_eq!(
            s.check(&width8, &caps, "16,4,8,16,4"),
            Err("the config is built for another group width")
        );
        assert_eq!(
            s.check(&grouped(1, 96, 2, 28, 1), &caps, "8,8,8,16,4"),
            Err("groups not of 4, 8, 16 or 24 channels")
        );
        assert_eq!(
            s.check(&grouped(1, 64, 1, 28, 1), &caps, "8,8,8,16,4"),
            Err("groups not of 4, 8, 16 or 24 channels")
        );
        // Three groups of 4: C = 12 is not whole 16-byte granules.
        assert_eq!(
            s.check(&grouped(1, 12, 3, 28, 1), &caps, "4,16,8,16,4"),
            Err("C is not a multiple of 8 (16-byte channel granules)")
        );
        let widening = ConvProblem::new(ConvSpec {
            k: 128,
            ..grouped(1, 64, 8, 28, 1).spec()
        })
        .unwrap();
        assert_eq!(
            s.check(&widening, &caps, "8,8,8,16,4"),
            Err("C/groups differs from K/groups")
        );
        let fp32 = ConvProblem::new(ConvSpec {
            data_types: [DataType::Fp32; 3],
            ..width8.spec()
        })
        .unwrap();
        assert_eq!(
            s.check(&fp32, &caps, "8,8,8,16,4"),
            Err("FP16 or BF16 only")
        );
        // A 15x15 filter's patch at stride 2 does not fit: refused, not launched.
        let huge = ConvProblem::new(ConvSpec {
            filter: [1, 15, 15],
            pad: [0, 7, 7],
            stride: [1, 2, 2],
            ..width8.spec()
        })
        .unwrap();
        assert_eq!(
            s.check(&huge, &caps, "8,8,8,16,4"),
            Err("the tile's input patch and filter do not fit in shared memory")
        );
        assert!(Config::parse("12,4,8,16,4").is_none());
        assert!(Config::parse("8,8,8,12,4").is_none());
        assert!(Config::parse("8,8,8,16,3").is_none());
        // Slabs of whole granules, at most 64 channels.
        assert!(Config::parse("4,1,8,16,4").is_none());
        assert!(Config::parse("24,3,8,16,4").is_none());
    }
}
