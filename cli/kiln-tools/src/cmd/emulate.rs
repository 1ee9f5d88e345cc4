//! `kiln-tools emulate`: an AMD target's embedded code objects run in kiln-emu, on this
//! machine, with no GPU: kiln's selftest (every solver and perf config the target's kdb offers
//! for each problem, checked against the CPU reference with random and IEEE special inputs) on
//! an emulated GPU of the target's architecture and CU count. What it shows is function, not
//! speed: the emulator has no timing.

use clap::Args;
use kiln::format::{measured, ConvProblem, Vendor};

use crate::CliResult;

/// The largest problem emulated: multiply-adds (the demo's ResNet layer, 116 million, takes
/// about 5 s per variant) and tensor elements (x, w and y together; the CPU reference holds
/// them in f64).
const MAX_MACS: f64 = (1u64 << 30) as f64;
const MAX_ELEMENTS: u64 = 1 << 26;

/// Arguments of `kiln-tools emulate`.
#[derive(Args)]
pub struct EmulateArgs {
    /// The AMD target whose objects run (gfx942130, mi300x, ...).
    #[arg(long)]
    pub target: String,
    /// A problem to check, as a find-db key (repeatable); default: the conformance set (3x3,
    /// 1x1, strided, dilated, grouped and depthwise; three types; both layouts; plain and fused).
    #[arg(long = "problem")]
    pub problems: Vec<String>,
    /// Only this solver (repeatable); default: every solver of the target.
    #[arg(long = "solver")]
    pub solvers: Vec<String>,
    /// Also the standalone operators (pooling, resizing, elementwise, softmax) in every type.
    #[arg(long)]
    pub operators: bool,
}

/// Runs `kiln-tools emulate`.
pub fn run(a: &EmulateArgs) -> CliResult {
    let target =
        kiln::named_target(&a.target).map_err(|e| format!("--target {:?}: {e}", a.target))?;
    if target.vendor != Vendor::Amd {
        return Err(format!(
            "--target {:?}: kiln-emu models AMD GPUs; {} is {:?}",
            a.target, target.basename, target.vendor
        )
        .into());
    }
    let problems: Vec<ConvProblem> = if a.problems.is_empty() {
        kiln_emu::conformance::problems()
    } else {
        a.problems
            .iter()
            .map(|k| {
                let p = ConvProblem::from_find_db_key(k)
                    .map_err(|e| format!("--problem {k:?}: {e}"))?;
                let (macs, elements) = (measured::macs(&p), p.element_counts().iter().sum::<u64>());
                if macs > MAX_MACS || elements > MAX_ELEMENTS {
                    return Err(format!(
                        "--problem {k:?}: {macs:.0} multiply-adds and {elements} tensor elements; \
                         emulation takes at most {MAX_MACS:.0} and {MAX_ELEMENTS}"
                    ));
                }
                Ok(p)
            })
            .collect::<Result<_, _>>()?
    };
    if let Some(unknown) = a.solvers.iter().find(|s| kiln::solvers::by_id(s).is_none()) {
        return Err(format!("--solver {unknown:?}: no solver of that id").into());
    }
    let chosen = |id: &str| a.solvers.is_empty() || a.solvers.iter().any(|s| s == id);
    let mut failures = Vec::new();
    let (report, totals) =
        kiln_emu::conformance::run(target, &problems, chosen, a.operators, |f| {
            failures.push(format!(
                "{} [{}] {}: {}",
                f.solver, f.params, f.problem, f.error
            ))
        })?;
    println!(
        "{} in emulation ({} {} CUs): {} problems, {} checked runs, {} failed; {} launches, {} wave instructions",
        target.basename,
        target.arch,
        target.compute_units,
        report.problems,
        report.runs,
        report.failures,
        totals.launches,
        totals.work.instructions
    );
    for (solver, (runs, failed)) in &report.per_solver {
        println!("  {solver:<28} {runs:>5} runs {failed:>4} failed");
    }
    for f in &failures {
        println!("FAIL {f}");
    }
    if report.runs == 0 {
        return Err("no solver of the target applies to these problems".into());
    }
    if report.failures > 0 {
        return Err(format!("{} failed checks in {} runs", report.failures, report.runs).into());
    }
    Ok(())
}
