//! `ConvDirectNaiveFwd` (`kernels/conv_naive.cpp`): one thread per output element, any
//! problem. The reference every other solver is checked against.

use kiln_format::ConvProblem;

use super::{LaunchPlan, NotApplicable, Solver, TargetCaps};

pub(super) const ID: &str = "ConvDirectNaiveFwd";
const BLOCK: u32 = 256;

/// The naive direct solver.
pub struct DirectNaive;

impl Solver for DirectNaive {
    fn id(&self) -> &'static str {
        ID
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps, _: &str) -> Result<(), NotApplicable> {
        if p.element_counts()[2].div_ceil(BLOCK as u64) > i32::MAX as u64 {
            return Err("too many output elements for one grid");
        }
        Ok(())
    }

    fn launch_plan(&self, p: &ConvProblem, _: &str) -> LaunchPlan {
        let blocks = p.element_counts()[2].div_ceil(BLOCK as u64);
        LaunchPlan::single([blocks.min(u32::MAX as u64) as u32, 1, 1], [BLOCK, 1, 1])
    }

    fn estimated_ms(&self, p: &ConvProblem, _: &str) -> f64 {
        // One thread per output walks the whole reduction: at least 0.15 us per element on
        // the H100 (the least of 2,955 measurements, `benches/h100-find/find-log.tsv`).
        let serial = super::igemm::reduction_length(p) as f64 * 0.00015;
        (2.0 * kiln_format::measured::macs(p) / (700.0 * 1e6)).max(serial) + 0.004
    }
}
