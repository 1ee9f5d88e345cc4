//! `ConvDirectGroupedFwd` (`kernels/conv_grouped.cpp`): grouped and depthwise 2-D convolution
//! in NHWC on CUDA cores / vector ALUs, each thread computing `vec` consecutive output channels
//! of one output pixel, the block's filter slice staged in shared memory. Both vendors.
//! Perf config: `vec,threads_x,threads_y` (channels per thread, channel vectors per block,
//! output pixels per block).

use kiln_format::ConvProblem;

use super::params::{tensor_bytes, three, tile_fill};
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

pub(super) const ID: &str = "ConvDirectGroupedFwd";

/// Shared memory the filter slice may take: the default per-block limit on every GPU kiln
/// targets, so no opt-in attribute is needed.
const MAX_SLICE_BYTES: u64 = 48 * 1024;

/// The grouped / depthwise NHWC direct solver.
pub struct DirectGrouped;

/// Output channels one block covers: `vec x threads_x`.
fn slice([vec, tx, _]: [u32; 3]) -> u32 {
    vec * tx
}

/// Filter slice bytes in shared memory: taps x channels per group x slice, as FP32.
fn slice_bytes(p: &ConvProblem, slice: u32) -> u64 {
    let [_, fh, fw] = p.filter();
    let cpg = p.group_channels() as u64;
    fh as u64 * fw as u64 * cpg * slice as u64 * 4
}

impl TunableSolver for DirectGrouped {
    /// `[vec, threads_x, threads_y]`.
    type Config = [u32; 3];
    const CONFIG_FORM: &'static str = "perf config is not vec,threads_x,threads_y";

    fn id(&self) -> &'static str {
        ID
    }

    fn parse(&self, params: &str) -> Option<[u32; 3]> {
        three(params).filter(|&[vec, tx, ty]| vec as u64 * tx as u64 * ty as u64 <= 1 << 20)
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        if p.groups() < 2 {
            return Err("not a grouped convolution");
        }
        if p.spatial_dims() != 2 || !p.layouts()[0].channels_last() {
            return Err("needs 2-D NHWC tensors");
        }
        Ok(())
    }

    fn valid(&self, p: &ConvProblem, _: &TargetCaps, cfg: &[u32; 3]) -> Result<(), NotApplicable> {
        let vec = cfg[0];
        if !p.c().is_multiple_of(vec) || !p.k().is_multiple_of(vec) {
            return Err("C or K is not a multiple of the config's vector width");
        }
        if slice_bytes(p, slice(*cfg)) > MAX_SLICE_BYTES {
            return Err("the block's filter slice does not fit in 48 KiB of shared memory");
        }
        Ok(())
    }

    fn worth_trying(
        &self,
        p: &ConvProblem,
        _: &TargetCaps,
        cfg: &[u32; 3],
    ) -> Result<(), NotApplicable> {
        // Outside depthwise layers, a thread whose outputs span two groups takes the kernel's
        // per-output path (an input load and an integer division per product): measured 2.9x
        // slower than a config whose vector lies in one group (ResNeXt-50's 4-channel groups,
        // 8 outputs a thread against 4). A vector of 1 always lies in one group.
        if !(p.is_depthwise() || p.group_outputs().is_multiple_of(cfg[0])) {
            return Err(
                "a thread's outputs would span two groups (K/groups not a multiple of the vector)",
            );
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, cfg: &[u32; 3]) -> LaunchPlan {
        let [_, tx, ty] = *cfg;
        let [_, oh, ow] = p.output();
        let pixels = p.n() as u64 * oh as u64 * ow as u64;
        let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
        LaunchPlan::single_with_shared(
            "conv_grouped_nhwc_fwd",
            [
                clamp(pixels.div_ceil(ty as u64)),
                clamp((p.k() as u64).div_ceil(slice(*cfg) as u64)),
                1,
            ],
            [tx, ty, 1],
            slice_bytes(p, slice(*cfg)) as u32,
        )
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &[u32; 3]) -> f64 {
        // Memory-bound at about 2 TB/s when the channels fill the slice; a wider vector
        // issues fewer instructions per channel.
        let vec = cfg[0];
        let bytes = tensor_bytes(p);
        let fill = tile_fill(p.k() as f64, slice(*cfg) as f64);
        let compute_ms = 2.0 * kiln_format::measured::macs(p)
            / (4000.0 * caps.throughput_scale() * vec.min(8) as f64 * 1e6);
        (bytes / 2.0e9).max(compute_ms) / fill + 0.004
    }

    fn tile(&self, cfg: &[u32; 3]) -> u64 {
        slice(*cfg) as u64
    }

    fn default_config(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        candidates: &mut dyn Iterator<Item = (&'static str, [u32; 3])>,
    ) -> Option<&'static str> {
        if p.is_depthwise() {
            // Depthwise: the block-count rule (what the held-out depthwise layers were
            // measured to prefer).
            return super::largest_tile_filling_the_gpu(self, p, caps, candidates);
        }
        // Several channels a group: the widest vector (fewest loads per product), then the
        // most pixels per block, the grid's fastest config at every group width it measured
        // (8,4,64 from 8 channels a group up, 4,8,32 at 4). The block-count rule picked 1,32,8,
        // 3.8x slower on a layer no grouped problem was measured near.
        candidates
            .max_by_key(|&(_, [vec, _, pixels])| (vec, pixels))
            .map(|(q, _)| q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::Solver;
    use kiln_format::{ConvSpec, DataType, Layout};

    fn caps() -> TargetCaps {
        crate::solvers::devices::h100()
    }

    fn depthwise(c: u32, hw: u32, f: u32, layout: Layout) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            n: 32,
            c,
            k: c,
            groups: c,
            input: [1, hw, hw],
            filter: [1, f, f],
            pad: [0, f / 2, f / 2],
            layouts: [layout; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn applies_to_grouped_nhwc_only_and_names_why_not() {
        let dw = depthwise(96, 112, 3, Layout::Nhwc);
        assert!(DirectGrouped.check(&dw, &caps(), "8,8,32").is_ok());
        assert_eq!(
            DirectGrouped.check(&depthwise(96, 112, 3, Layout::Nchw), &caps(), "8,8,32"),
            Err("needs 2-D NHWC tensors")
        );
        assert_eq!(
            DirectGrouped.check(&depthwise(36, 14, 3, Layout::Nhwc), &caps(), "8,8,32"),
            Err("C or K is not a multiple of the config's vector width")
        );
        let dense = ConvProblem::new(ConvSpec {
            groups: 1,
            ..dw.spec()
        })
        .unwrap();
        assert_eq!(
            DirectGrouped.check(&dense, &caps(), "8,8,32"),
            Err("not a grouped convolution")
        );
        // 128 channels per group, 3x3, a 64-channel slice: 288 KiB of filter.
        let wide = ConvProblem::new(ConvSpec {
            c: 256,
            k: 256,
            groups: 2,
            ..dw.spec()
        })
        .unwrap();
        assert!(DirectGrouped.check(&wide, &caps(), "8,8,32").is_err());
    }

    #[test]
    fn configs_whose_vector_spans_two_groups_are_not_tried() {
        // ResNeXt-50's first grouped layer: 128 channels in 32 groups of 4.
        let p = ConvProblem::new(ConvSpec {
            groups: 32,
            ..depthwise(128, 56, 3, Layout::Nhwc).spec()
        })
        .unwrap();
        assert!(DirectGrouped.check(&p, &caps(), "8,4,64").is_ok());
        assert_eq!(
            DirectGrouped.worth_trying_params(&p, &caps(), "8,4,64"),
            Err("a thread's outputs would span two groups (K/groups not a multiple of the vector)")
        );
        assert!(DirectGrouped
            .worth_trying_params(&p, &caps(), "4,8,32")
            .is_ok());
        // Depthwise layers read a vector of channels, one group each: every vector is tried.
        let dw = depthwise(96, 112, 3, Layout::Nhwc);
        assert!(DirectGrouped
            .worth_trying_params(&dw, &caps(), "8,8,32")
            .is_ok());
    }

    #[test]
    fn the_default_config_takes_the_widest_vector_within_a_group() {
        let grouped = |c: u32, groups: u32| {
            ConvProblem::new(ConvSpec {
                groups,
                ..depthwise(c, 56, 3, Layout::Nhwc).spec()
            })
            .unwrap()
        };
        let default = |p: &ConvProblem| {
            let entry = crate::solvers::by_id(ID).unwrap().entry;
            let mut offered = entry.params.iter().copied().filter(|q| {
                DirectGrouped.check(p, &caps(), q).is_ok()
                    && DirectGrouped.worth_trying_params(p, &caps(), q).is_ok()
            });
            DirectGrouped.default_params(p, &caps(), &mut offered)
        };
        // 4 channels a group: 4 outputs a thread; 24 a group: 8, with 64 pixels a block.
        assert_eq!(default(&grouped(128, 32)), Some("4,8,32"));
        assert_eq!(default(&grouped(48, 2)), Some("8,4,64"));
    }

    #[test]
    fn the_plan_covers_every_pixel_and_channel_slice() {
        let dw = depthwise(96, 112, 3, Layout::Nhwc);
        let plan = DirectGrouped
            .launch_plan(&dw, &crate::solvers::devices::h100(), "8,8,32")
            .unwrap();
        let k = &plan.kernels[0];
        // 32 x 112 x 112 pixels in rows of 32; 96 channels in slices of 64.
        assert_eq!(k.grid, [12_544, 2, 1]);
        assert_eq!(k.block, [8, 32, 1]);
        assert_eq!(k.shared_bytes, 9 * 64 * 4);
        assert_eq!(plan.workspace_bytes, 0);
    }
}
