//! `ConvDirectNaiveFwd` (`kernels/conv_naive.cpp`): one thread per output element, any
//! problem. The reference every other solver is checked against.

use kiln_format::ConvProblem;

use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

pub(super) const ID: &str = "ConvDirectNaiveFwd";
const BLOCK: u32 = 256;
const KERNEL: &str = "conv_naive_fwd";

/// The naive direct solver.
pub struct DirectNaive;

impl TunableSolver for DirectNaive {
    /// One object; its only config is empty.
    type Config = ();
    const CONFIG_FORM: &'static str = "perf config is not empty (the naive solver has none)";

    fn id(&self) -> &'static str {
        ID
    }

    fn parse(&self, params: &str) -> Option<()> {
        params.is_empty().then_some(())
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        if p.element_counts()[2].div_ceil(BLOCK as u64) > i32::MAX as u64 {
            return Err("too many output elements for one grid");
        }
        Ok(())
    }

    fn valid(&self, _: &ConvProblem, _: &TargetCaps, _: &()) -> Result<(), NotApplicable> {
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, _: &()) -> LaunchPlan {
        let blocks = p.element_counts()[2].div_ceil(BLOCK as u64);
        LaunchPlan::single(
            KERNEL,
            [blocks.min(u32::MAX as u64) as u32, 1, 1],
            [BLOCK, 1, 1],
        )
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, _: &()) -> f64 {
        // One thread per output walks the whole reduction: at least 0.15 us per element on
        // the H100 (the least of 2,955 measurements, `data/find-logs/sm_90_132.tsv.zst`).
        let serial = super::igemm::reduction_length(p) as f64 * 0.00015;
        (2.0 * kiln_format::measured::macs(p) / (700.0 * caps.throughput_scale() * 1e6)).max(serial)
            + 0.004
    }

    fn tile(&self, _: &()) -> u64 {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::{devices, Solver};

    #[test]
    fn one_thread_per_output_in_blocks_of_256() {
        let p = ConvProblem::new(kiln_format::ConvSpec::default()).unwrap();
        let plan = DirectNaive.launch_plan(&p, &devices::h100(), "").unwrap();
        assert_eq!(plan.kernels[0].block, [256, 1, 1]);
        assert_eq!(
            plan.kernels[0].grid[0] as u64,
            p.element_counts()[2].div_ceil(256)
        );
        assert_eq!(
            DirectNaive.launch_plan(&p, &devices::h100(), "1"),
            Err(DirectNaive::CONFIG_FORM)
        );
    }
}
