//! `ConvGemm1x1Fwd` (`kernels/conv_gemm1x1.cpp`): the implicit GEMM specialised for 1x1
//! filters with stride 1 and no padding, where the input is the GEMM's B matrix as stored.

use kiln_format::ConvProblem;

use super::igemm::{gemm_applicable, gemm_estimate, gemm_plan};
use super::{LaunchPlan, NotApplicable, Solver, TargetCaps};

/// The 1x1 GEMM solver.
pub struct Gemm1x1;

impl Solver for Gemm1x1 {
    fn id(&self) -> &'static str {
        "ConvGemm1x1Fwd"
    }

    fn applicable(
        &self,
        p: &ConvProblem,
        _: &TargetCaps,
        params: &str,
    ) -> Result<(), NotApplicable> {
        gemm_applicable(p, params)?;
        if p.filter() != [1, 1, 1] || p.stride() != [1, 1, 1] || p.pad() != [0, 0, 0] {
            return Err("1x1 GEMM needs a 1x1 filter, stride 1 and no padding");
        }
        Ok(())
    }

    fn launch_plan(&self, p: &ConvProblem, params: &str) -> LaunchPlan {
        gemm_plan(p, params)
    }

    fn estimated_ms(&self, p: &ConvProblem, params: &str) -> f64 {
        gemm_estimate(p, params, 9000.0)
    }
}
