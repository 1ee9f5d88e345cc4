//! `kiln coldstart`: from a ready context to the first convolution's result, by phase.

use std::time::Instant;

use kiln::harness::coldstart::{cold_problem, cold_start};

use crate::args::DeviceArgs;
use crate::CliResult;

pub fn run(a: &DeviceArgs) -> CliResult {
    let t_open = Instant::now();
    let ctx = a.context()?;
    let opened = t_open.elapsed().as_secs_f64();
    let warmup = ctx.table_warmup_s();
    let cs = cold_start(&ctx, &cold_problem()?)?;
    let info = ctx.device().info();
    println!(
        "cold start on {} ({}), solver {} [{}], context opened in {:.1} ms (driver init + primary context, and {:.3} ms of find-db/perf-db decode; not counted)",
        info.spec,
        info.name,
        cs.ranked.variant.solver.id(),
        cs.ranked.variant.params,
        opened * 1e3,
        warmup * 1e3
    );
    for (what, s) in [
        ("resolve (find-db/fallback)", cs.resolve_s),
        ("kdb decode + sha256", cs.prepare.decompress_s),
        ("ELF + target checks", cs.prepare.verify_s),
        ("module load + function lookup", cs.prepare.module_load_s),
        ("first launch + synchronize", cs.first_launch_s),
        ("total, ready context -> result", cs.total_s()),
    ] {
        println!("  {what:<32} {:.3} ms", s * 1e3);
    }
    Ok(())
}
