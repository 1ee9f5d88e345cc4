//! `kiln selftest`: the appliance's boot check. Every registered solver and precompiled perf
//! config (split-K values included) on a fixed problem set (2-D and 3-D, both layout families,
//! three types, TF32 opt-in, groups, depthwise, padding, stride, dilation, odd sizes, deep
//! reductions), each checked against the f64 reference on fresh inputs with the output
//! poisoned; every variant also with IEEE special values (inf, NaN, subnormals, values near
//! overflow) compared class by class; and every problem again with a fused epilogue (scale,
//! bias, a residual, each activation in turn, channel-slice outputs). Non-zero exit on any
//! failure.

use kiln::harness::selftest::{self, OPERATORS};
use kiln::{ConvProblem, DataType, MathMode};

use crate::args::SelftestArgs;
use crate::json::Json;
use kiln::harness::output::{Classified, ExitClass};

use crate::CliResult;

/// The problems of the lists given with `--problems`, in order, duplicates dropped; each FP32
/// problem also with TF32 allowed (as in the built-in set).
fn listed_problems(files: &[std::path::PathBuf]) -> Result<Vec<ConvProblem>, String> {
    let mut out: Vec<ConvProblem> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for file in files {
        let list = kiln::harness::problem_list::read(file).map_err(|e| format!("selftest: {e}"))?;
        for (_, p) in list {
            let mut add = |p: ConvProblem| {
                if seen.insert(p) {
                    out.push(p);
                }
            };
            add(p);
            if p.data_types()[0] == DataType::Fp32 {
                add(p.with_math(MathMode::AllowTf32));
            }
        }
    }
    if out.is_empty() {
        return Err("selftest: the --problems lists hold no problem".into());
    }
    Ok(out)
}

pub fn run(a: &SelftestArgs) -> CliResult {
    let json = a.output.json;
    // The lists are read before the device opens: a bad one fails fast, GPU or not.
    let problems = if a.problems.is_empty() {
        selftest::problems()
    } else {
        listed_problems(&a.problems)?
    };
    let ctx = a.device.context()?;
    if !json {
        kiln::outln!(
            "kiln selftest on {} [{}]",
            ctx.describe(),
            ctx.device().info().uuid
        );
    }
    if let Some(unknown) = a
        .solvers
        .iter()
        .find(|id| kiln::solvers::by_id(id).is_none() && *id != OPERATORS)
    {
        return Err(format!("selftest: no solver {unknown:?} is registered").into());
    }
    let chosen = |id: &str| a.solvers.is_empty() || a.solvers.iter().any(|s| s == id);
    let mut failed_runs: Vec<Json> = Vec::new();
    let mut printed: Result<(), kiln::harness::output::StdoutError> = Ok(());
    // The operators are not run with --problems: those lists are convolutions.
    let report = selftest::run(
        &ctx,
        &problems,
        chosen,
        chosen(OPERATORS) && a.problems.is_empty(),
        |f| {
            if json {
                failed_runs.push(Json::obj([
                    ("solver", Json::str(f.solver)),
                    ("params", Json::str(f.params)),
                    ("problem", Json::str(&f.problem)),
                    ("math", Json::str(f.math.map_or("", |m| m.name()))),
                    ("error", Json::str(&f.error)),
                ]));
            } else if printed.is_ok() {
                use std::io::Write as _;
                printed = writeln!(
                    std::io::stdout().lock(),
                    "FAIL {} [{}] {}{}: {}",
                    f.solver,
                    f.params,
                    f.problem,
                    if f.math == Some(MathMode::AllowTf32) {
                        " (TF32)"
                    } else {
                        ""
                    },
                    f.error
                )
                .map_err(kiln::harness::output::StdoutError);
            }
        },
    );
    printed?;
    let (runs, failures) = (report.runs, report.failures);
    if json {
        let info = ctx.device().info();
        let solvers = report
            .per_solver
            .iter()
            .map(|(s, (n, f))| {
                Json::obj([
                    ("solver", Json::str(*s)),
                    ("variants", Json::uint(*n as u64)),
                    ("failed", Json::uint(*f as u64)),
                ])
            })
            .collect();
        kiln::outln!(
            "{}",
            Json::obj([
                ("device", Json::str(&info.spec)),
                ("device_name", Json::str(&info.name)),
                ("uuid", Json::str(&info.uuid)),
                ("target", Json::str(ctx.target().basename)),
                ("exact_target", Json::Bool(ctx.exact_target())),
                ("problems", Json::uint(problems.len() as u64)),
                ("runs", Json::uint(runs as u64)),
                ("failures", Json::uint(failures as u64)),
                ("passed", Json::Bool(report.passed())),
                ("solvers", Json::Arr(solvers)),
                ("failed_runs", Json::Arr(failed_runs)),
            ])
        );
        return verdict(failures, runs);
    }
    kiln::outln!("{} problems, {runs} variants (every applicable solver and perf config, fresh random inputs, outputs poisoned; each also with inf/NaN/subnormal/near-overflow inputs)", problems.len());
    for (s, (n, f)) in &report.per_solver {
        kiln::outln!("  {s:<22} {n:>4} variants  {f} failed");
    }
    verdict(failures, runs)?;
    kiln::outln!("selftest passed");
    Ok(())
}

/// A selftest that found a wrong result, or checked nothing, fails with exit class 5.
fn verdict(failures: usize, runs: usize) -> CliResult {
    if failures > 0 || runs == 0 {
        return Err(Classified::boxed(
            ExitClass::SelftestFailed,
            format!("selftest: {failures} of {runs} runs failed"),
        ));
    }
    Ok(())
}
