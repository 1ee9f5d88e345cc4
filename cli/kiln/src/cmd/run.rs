//! `kiln run`: one problem on the GPU with random inputs, its plan's best solution checked
//! against the f64 CPU reference (a sample of the outputs past 2^28 multiply-adds), then timed GPU-only (a CUDA graph of back-to-back calls,
//! replayed; median per call).

use kiln::harness::verify::{run_checked, tolerance};

use crate::args::RunArgs;
use crate::CliResult;

pub fn run(a: &RunArgs) -> CliResult {
    let p = a.problem.problem()?;
    let ctx = a.device.context()?;
    kiln::outln!("device {}", ctx.describe());
    kiln::outln!("problem {}", p.find_db_key());
    let best = *ctx.find_solutions(&p)?.best();
    let r = run_checked(&ctx, &p, &best.variant, 1, a.repeats)?;
    // A large layer's reference covers a sample of its outputs (every output still finite).
    let sampled = if r.compared < r.outputs {
        format!(" over {} of {} outputs", r.compared, r.outputs)
    } else {
        String::new()
    };
    kiln::outln!(
        "{} [{}] ({}): {:.4} ms GPU-only (graph replay, median of {}), relative error {:.2e}{sampled} (tolerance {:.0e}) {}",
        best.variant.solver.id(),
        best.variant.params,
        best.provenance.name(),
        r.time_ms,
        a.repeats,
        r.error,
        tolerance(&p),
        if r.passed { "PASS" } else { "FAIL" }
    );
    if !r.passed {
        return Err("result outside tolerance".into());
    }
    Ok(())
}
