//! `ConvImplicitGemmFwd` (`kernels/conv_igemm.cpp` over `kernels/igemm.h`): the convolution as
//! a GEMM (M = output channels of a group, N = batch x output pixels, K = input channels of a
//! group x filter), gathered on the fly. Perf config: `block_m,block_n,block_k`.

use kiln_format::ConvProblem;

use super::params::{three, tile_fill, volume};
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// Threads per block `igemm.h` is written for.
pub(super) const BLOCK: u32 = 256;

/// The implicit-GEMM solver.
pub struct ImplicitGemm;

/// How the GEMM solvers' perf configs are written.
pub(super) const GEMM_CONFIG_FORM: &str = "perf config is not block_m,block_n,block_k";

/// Applicability shared with the 1x1 GEMM (same kernel body, `igemm.h`).
pub(super) fn gemm_applicable(p: &ConvProblem) -> Result<(), NotApplicable> {
    if p.groups() > 65_535 {
        return Err("more than 65535 groups (grid z)");
    }
    // igemm.h indexes a filter, a reduction row and an image's output pixels in 32-bit ints.
    let int_max = i32::MAX as u64;
    if volume(p.output()) > int_max {
        return Err("output pixels per image past 32-bit indexing");
    }
    // The main loop reads one block_k step past the reduction's end (at most 64).
    if reduction_length(p) + 64 > int_max {
        return Err("reduction length (channels per group x filter) past 32-bit indexing");
    }
    Ok(())
}

/// A GEMM config: `[block_m, block_n, block_k]`, each positive, block_k at most 64.
pub(super) fn gemm_config(params: &str) -> Option<[u32; 3]> {
    three(params).filter(|&[_, _, bk]| bk <= 64)
}

/// Launch shared with the 1x1 GEMM: x over output columns, y over channel tiles, z over groups.
pub(super) fn gemm_plan(
    kernel: &'static str,
    p: &ConvProblem,
    [bm, bn, _]: [u32; 3],
) -> LaunchPlan {
    let kpg = p.group_outputs();
    let columns = p.n() as u64 * volume(p.output());
    let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
    LaunchPlan::single(
        kernel,
        [
            clamp(columns.div_ceil(bn as u64)),
            kpg.div_ceil(bm),
            p.groups(),
        ],
        [BLOCK, 1, 1],
    )
}

/// Reduction length of one output: input channels of a group times filter taps.
pub(super) fn reduction_length(p: &ConvProblem) -> u64 {
    p.group_channels() as u64 * volume(p.filter())
}

/// The least time one `block_k` step of `igemm.h`'s main loop took on the H100 over 18,224
/// measurements (`data/find-logs/sm_90_132.tsv.zst`): 2.12 us, whatever the problem. A block
/// walks its reduction serially, so a deep reduction over few outputs (a squeeze-excite 1x1 at
/// one pixel, 1152 channels: 72 steps, 147 us measured) costs at least steps x this.
const GEMM_STEP_MS: f64 = 0.0021;

/// Cost shared with the 1x1 GEMM: work / throughput, charging the unfilled share of M tiles,
/// and never less than one block's serial walk over the reduction.
pub(super) fn gemm_estimate(p: &ConvProblem, [bm, _, bk]: [u32; 3], gflops: f64) -> f64 {
    let kpg = p.group_outputs().max(1) as f64;
    let throughput =
        2.0 * kiln_format::measured::macs(p) / (gflops * tile_fill(kpg, bm as f64) * 1e6);
    let steps = reduction_length(p).div_ceil(bk as u64) as f64;
    throughput.max(steps * GEMM_STEP_MS) + 0.004
}

impl TunableSolver for ImplicitGemm {
    type Config = [u32; 3];
    const CONFIG_FORM: &'static str = GEMM_CONFIG_FORM;

    fn id(&self) -> &'static str {
        "ConvImplicitGemmFwd"
    }

    fn parse(&self, params: &str) -> Option<[u32; 3]> {
        gemm_config(params)
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        gemm_applicable(p)
    }

    fn valid(&self, _: &ConvProblem, _: &TargetCaps, _: &[u32; 3]) -> Result<(), NotApplicable> {
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, cfg: &[u32; 3]) -> LaunchPlan {
        gemm_plan("conv_igemm_fwd", p, *cfg)
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &[u32; 3]) -> f64 {
        gemm_estimate(p, *cfg, 6000.0 * caps.throughput_scale())
    }

    fn tile(&self, &[bm, bn, _]: &[u32; 3]) -> u64 {
        bm as u64 * bn as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::{devices, Solver};

    #[test]
    fn a_block_is_the_256_threads_igemm_h_is_written_for() {
        let p = ConvProblem::new(kiln_format::ConvSpec::default()).unwrap();
        let plan = ImplicitGemm
            .launch_plan(&p, &devices::h100(), "64,64,16")
            .unwrap();
        assert_eq!(plan.kernels[0].block, [256, 1, 1]);
        assert_eq!(plan.kernels[0].kernel, "conv_igemm_fwd");
        // The 1x1 GEMM runs the same body.
        let plan = super::super::gemm1x1::Gemm1x1
            .launch_plan(&p, &devices::h100(), "64,128,8")
            .unwrap();
        assert_eq!(plan.kernels[0].block, [256, 1, 1]);
        assert_eq!(plan.kernels[0].kernel, "conv_gemm1x1_fwd");
        // A config that does not parse is one error, not a plan of [1, 1, 1] tiles.
        assert_eq!(
            ImplicitGemm.launch_plan(&p, &devices::h100(), "64,64"),
            Err(GEMM_CONFIG_FORM)
        );
        assert_eq!(
            ImplicitGemm.estimated_ms(&p, &devices::h100(), "64,x,16"),
            Err(GEMM_CONFIG_FORM)
        );
    }
}
