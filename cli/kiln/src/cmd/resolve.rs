//! `kiln resolve`: the problem's keys, its find-db record as stored, and kiln's plan (what kiln
//! would run, best first), each rank with where it came from. The plan is the resolver's own
//! answer: nothing here re-derives its policy.

use kiln::resolve::{PlanSource, Provenance};

use super::pick_target;
use crate::args::ResolveArgs;
use crate::CliResult;

pub fn run(a: &ResolveArgs) -> CliResult {
    let target = pick_target(a.target.as_deref())?;
    let problem = a.problem()?;
    println!(
        "target:         {} ({} {} CUs/SMs)",
        target.basename, target.arch, target.compute_units
    );
    println!("find-db key:    {}", problem.find_db_key());
    println!("perf-db key:    {}", problem.perf_db_key());
    println!("network config: {}", problem.network_config());
    match target.find_record(&problem)? {
        None => println!(
            "not in the find-db of {}: no measured solution for this problem",
            target.basename
        ),
        Some(solutions) => {
            let ranked = solutions.ranked()?;
            println!("find-db: {} solution(s), fastest first:", ranked.len());
            println!(
                "  {:<4} {:<46} {:>10} {:>12}  algorithm",
                "rank", "solver", "time ms", "workspace"
            );
            for (i, s) in ranked.iter().enumerate() {
                let runnable = if kiln::solvers::by_id(s.solver).is_some() {
                    ""
                } else {
                    "  (MIOpen's; kiln cannot run it)"
                };
                println!(
                    "  {:<4} {:<46} {:>10} {:>12}  {}{runnable}",
                    i + 1,
                    s.solver,
                    kiln::format::records::format_g6(s.time_ms),
                    s.workspace,
                    s.algorithm
                );
                if let Some(p) = target.perf_params(&problem, s.solver)? {
                    println!("       perf params: {p}");
                }
            }
        }
    }
    if target.kdb.is_none() {
        println!(
            "kiln's plan: none ({} embeds no kiln kernels)",
            target.basename
        );
        return Ok(());
    }
    let plan = kiln::resolve::resolve(target, &problem)?;
    match plan.source {
        PlanSource::FindDb => println!("kiln's plan, ranked by the find-db record:"),
        PlanSource::Nearest { key, distance } => println!(
            "kiln's plan, ranked by the nearest measured problem {key} (distance {distance:.1}):"
        ),
        PlanSource::CostModel { nearest: Some((key, d)) } => println!(
            "kiln's plan, ranked by the cost model (nearest measured problem {key} is at distance {d:.1}, beyond {}):",
            kiln::resolve::NEAR_DISTANCE
        ),
        PlanSource::CostModel { nearest: None } => println!(
            "kiln's plan, ranked by the cost model (no measured problem of this type and layout):"
        ),
    }
    for r in plan.iter() {
        let from = match r.provenance {
            Provenance::Nearest { key, .. } => format!("nearest: {key}"),
            p => p.name().to_string(),
        };
        println!(
            "  {:<22} params {:<10} {:>9.4} ms  workspace {:>4}  ({from})",
            r.variant.solver.id(),
            r.variant.params,
            r.time_ms,
            r.workspace
        );
    }
    if a.repeat > 0 {
        let before = crate::alloc_count::allocations();
        let t = std::time::Instant::now();
        for _ in 0..a.repeat {
            std::hint::black_box(kiln::resolve::resolve(
                target,
                std::hint::black_box(&problem),
            )?);
        }
        let ns = t.elapsed().as_secs_f64() * 1e9 / a.repeat as f64;
        let allocations = crate::alloc_count::allocations() - before;
        println!(
            "resolved {} times: {ns:.0} ns per resolve, {allocations} heap allocations",
            a.repeat
        );
    }
    Ok(())
}
