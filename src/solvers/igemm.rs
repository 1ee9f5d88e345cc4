//! `ConvImplicitGemmFwd` (`kernels/conv_igemm.cpp` over `kernels/igemm.h`): the convolution as
//! a GEMM (M = output channels of a group, N = batch x output pixels, K = input channels of a
//! group x filter), gathered on the fly. Perf config: `block_m,block_n,block_k`.

use kiln_format::ConvProblem;

use super::params::{three, tile_fill};
use super::{LaunchPlan, NotApplicable, Solver, TargetCaps};

/// Threads per block `igemm.h` is written for.
pub(super) const BLOCK: u32 = 256;

/// The implicit-GEMM solver.
pub struct ImplicitGemm;

/// Applicability shared with the 1x1 GEMM (same kernel body, `igemm.h`).
pub(super) fn gemm_applicable(p: &ConvProblem, params: &str) -> Result<(), NotApplicable> {
    let [_, _, bk] = three(params).ok_or("perf config is not block_m,block_n,block_k")?;
    if p.groups() > 65_535 {
        return Err("more than 65535 groups (grid z)");
    }
    // igemm.h indexes a filter, a reduction row and an image's output pixels in 32-bit ints.
    let product = |v: &[u32]| v.iter().map(|&x| x as u64).product::<u64>();
    let [fd, fh, fw] = p.filter();
    let [od, oh, ow] = p.output();
    let cpg = (p.c() / p.groups().max(1)) as u64;
    let int_max = i32::MAX as u64;
    if cpg * product(&[fd, fh, fw]) + bk as u64 > int_max {
        return Err("reduction length (channels per group x filter) past 32-bit indexing");
    }
    if product(&[od, oh, ow]) > int_max {
        return Err("output pixels per image past 32-bit indexing");
    }
    Ok(())
}

/// Launch shared with the 1x1 GEMM: x over output columns, y over channel tiles, z over groups.
pub(super) fn gemm_plan(p: &ConvProblem, params: &str) -> LaunchPlan {
    let [bm, bn, _] = three(params).unwrap_or([1, 1, 1]);
    let kpg = p.k() / p.groups().max(1);
    let output_pixels: u64 = p.output().iter().map(|&x| x as u64).product();
    let columns = p.n() as u64 * output_pixels;
    let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
    LaunchPlan::single(
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
    (p.c() / p.groups().max(1)) as u64 * p.filter().iter().map(|&f| f as u64).product::<u64>()
}

/// The least time one `block_k` step of `igemm.h`'s main loop took on the H100 over 18,224
/// measurements (`benches/h100-find/find-log.tsv`): 2.12 us, whatever the problem. A block
/// walks its reduction serially, so a deep reduction over few outputs (a squeeze-excite 1x1 at
/// one pixel, 1152 channels: 72 steps, 147 us measured) costs at least steps x this.
const GEMM_STEP_MS: f64 = 0.0021;

/// Cost shared with the 1x1 GEMM: work / throughput, charging the unfilled share of M tiles,
/// and never less than one block's serial walk over the reduction.
pub(super) fn gemm_estimate(p: &ConvProblem, params: &str, gflops: f64) -> f64 {
    let kpg = (p.k() / p.groups().max(1)).max(1) as f64;
    let [bm, _, bk] = three(params).unwrap_or([1, 1, 1]);
    let throughput =
        2.0 * kiln_format::measured::macs(p) / (gflops * tile_fill(kpg, bm as f64) * 1e6);
    let steps = reduction_length(p).div_ceil(bk as u64) as f64;
    throughput.max(steps * GEMM_STEP_MS) + 0.004
}

impl Solver for ImplicitGemm {
    fn id(&self) -> &'static str {
        "ConvImplicitGemmFwd"
    }

    fn applicable(
        &self,
        p: &ConvProblem,
        _: &TargetCaps,
        params: &str,
    ) -> Result<(), NotApplicable> {
        gemm_applicable(p, params)
    }

    fn launch_plan(&self, p: &ConvProblem, params: &str) -> LaunchPlan {
        gemm_plan(p, params)
    }

    fn estimated_ms(&self, p: &ConvProblem, params: &str) -> f64 {
        gemm_estimate(p, params, 6000.0)
    }
}
