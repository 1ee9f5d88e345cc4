//! `kiln coldstart`: from a ready context to the first convolution's result, by phase.

use std::time::Instant;

use kiln::context::ContextOptions;
use kiln::harness::coldstart::{cold_problem, cold_start};

use crate::args::ColdstartArgs;
use crate::CliResult;

pub fn run(a: &ColdstartArgs) -> CliResult {
    let t_open = Instant::now();
    let ctx = a.device.context_with(ContextOptions {
        warm_up: !a.no_warm_up,
        ..ContextOptions::default()
    })?;
    let opened = t_open.elapsed().as_secs_f64();
    let cs = cold_start(&ctx, &cold_problem()?)?;
    let info = ctx.device().info();
    kiln::outln!(
        "cold start on {} ({}), solver {} [{}], context opened in {:.1} ms (not counted: driver init + primary context, {:.3} ms of find-db/perf-db decode, {})",
        info.spec,
        info.name,
        cs.ranked.variant.solver.id(),
        cs.ranked.variant.params,
        opened * 1e3,
        ctx.table_warmup_s() * 1e3,
        if a.no_warm_up {
            "no warm-up problem".to_string()
        } else {
            format!("{:.3} ms of warm-up problem", ctx.launch_warmup_s() * 1e3)
        }
    );
    for (what, s) in [
        ("resolve (find-db/fallback)", cs.resolve_s),
        ("kdb decode + sha256", cs.prepare.decompress_s),
        ("ELF + target checks", cs.prepare.verify_s),
        ("module load", cs.prepare.module_load_s),
        ("functions + parameter builder", cs.prepare.invoker_s),
        ("first launch + synchronize", cs.first_launch_s),
        ("total, ready context -> result", cs.total_s()),
    ] {
        kiln::outln!("  {what:<32} {:.3} ms", s * 1e3);
    }
    Ok(())
}
