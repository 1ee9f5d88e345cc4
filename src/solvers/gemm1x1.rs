//! `ConvGemm1x1Fwd` (`kernels/conv_gemm1x1.cpp`): the implicit GEMM specialised for 1x1
//! filters with stride 1 and no padding, where the input is the GEMM's B matrix as stored.

use kiln_format::ConvProblem;

use super::igemm::{gemm_applicable, gemm_config, gemm_estimate, gemm_plan, GEMM_CONFIG_FORM};
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// The 1x1 GEMM solver.
pub struct Gemm1x1;

impl TunableSolver for Gemm1x1 {
    type Config = [u32; 3];
    const CONFIG_FORM: &'static str = GEMM_CONFIG_FORM;

    fn id(&self) -> &'static str {
        "ConvGemm1x1Fwd"
    }

    fn parse(&self, params: &str) -> Option<[u32; 3]> {
        gemm_config(params)
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        gemm_applicable(p)?;
        if p.filter() != [1, 1, 1] || p.stride() != [1, 1, 1] || p.pad() != [0, 0, 0] {
            return Err("1x1 GEMM needs a 1x1 filter, stride 1 and no padding");
        }
        Ok(())
    }

    fn valid(&self, _: &ConvProblem, _: &TargetCaps, _: &[u32; 3]) -> Result<(), NotApplicable> {
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, cfg: &[u32; 3]) -> LaunchPlan {
        gemm_plan("conv_gemm1x1_fwd", p, *cfg)
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &[u32; 3]) -> f64 {
        gemm_estimate(p, *cfg, 9000.0 * caps.throughput_scale())
    }

    fn tile(&self, &[bm, bn, _]: &[u32; 3]) -> u64 {
        bm as u64 * bn as u64
    }
}
