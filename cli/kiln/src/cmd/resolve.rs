//! `kiln resolve`: the problem's keys, its find-db record as stored, and kiln's plan (what kiln
//! would run, best first), each rank with where it came from. The plan is the resolver's own
//! answer: nothing here re-derives its policy. Exits 1 when nothing can run the problem.

use kiln::resolve::{Plan, PlanSource, Provenance};
use kiln::EmbeddedTarget;

use super::pick_target;
use crate::args::ResolveArgs;
use crate::json::Json;
use crate::CliResult;

/// The plan, or the error saying why nothing can run the problem on `target`.
fn plan(
    target: &'static EmbeddedTarget,
    problem: &kiln::ConvProblem,
) -> Result<Plan, Box<dyn std::error::Error>> {
    if target.kdb.is_none() {
        return Err(format!(
            "nothing can run {} on {}: the target embeds no kiln kernels (its find-db ranks MIOpen's solvers only)",
            problem.find_db_key().as_str(),
            target.basename
        )
        .into());
    }
    Ok(kiln::resolve::resolve_logged(target, problem)?)
}

pub fn run(a: &ResolveArgs) -> CliResult {
    let target = pick_target(a.target.as_deref())?;
    let problem = a.problem()?;
    if a.json {
        let plan = plan(target, &problem)?;
        let timing = repeat(a, target, &problem)?;
        kiln::outln!("{}", as_json(target, &problem, &plan, timing)?);
        return Ok(());
    }
    kiln::outln!(
        "target:         {} ({} {} CUs/SMs)",
        target.basename,
        target.arch,
        target.compute_units
    );
    kiln::outln!("find-db key:    {}", problem.find_db_key());
    kiln::outln!("perf-db key:    {}", problem.perf_db_key());
    kiln::outln!("network config: {}", problem.network_config());
    match target.find_record(&problem)? {
        None => kiln::outln!(
            "not in the find-db of {}: no measured solution for this problem",
            target.basename
        ),
        Some(solutions) => {
            let ranked = solutions.ranked()?;
            kiln::outln!("find-db: {} solution(s), fastest first:", ranked.len());
            kiln::outln!(
                "  {:<4} {:<46} {:>10} {:>12}  algorithm",
                "rank",
                "solver",
                "time ms",
                "workspace"
            );
            for (i, s) in ranked.iter().enumerate() {
                let runnable = if kiln::solvers::by_id(s.solver).is_some() {
                    ""
                } else {
                    "  (MIOpen's; kiln cannot run it)"
                };
                kiln::outln!(
                    "  {:<4} {:<46} {:>10} {:>12}  {}{runnable}",
                    i + 1,
                    s.solver,
                    kiln::format::records::format_g6(s.time_ms),
                    s.workspace,
                    s.algorithm
                );
                if let Some(p) = target.perf_params(&problem, s.solver)? {
                    kiln::outln!("       perf params: {p}");
                }
            }
        }
    }
    let plan = plan(target, &problem)?;
    match plan.source {
        PlanSource::FindDb => kiln::outln!("kiln's plan, ranked by the find-db record:"),
        PlanSource::Nearest { key, distance } => kiln::outln!(
            "kiln's plan, ranked by the nearest measured problem {key} (distance {distance:.1}):"
        ),
        PlanSource::CostModel { nearest: Some((key, d)) } => kiln::outln!(
            "kiln's plan, ranked by the cost model (nearest measured problem {key} is at distance {d:.1}, beyond {}):",
            kiln::resolve::NEAR_DISTANCE
        ),
        PlanSource::CostModel { nearest: None } => kiln::outln!(
            "kiln's plan, ranked by the cost model (no measured problem of this type and layout):"
        ),
    }
    let caps = kiln::solvers::TargetCaps::of(target);
    if let Some(q) = plan.folded {
        kiln::outln!(
            "  (its depth folds away: also ranked as the 2-D problem {}, which the 2-D solvers run)",
            q.find_db_key().as_str()
        );
    }
    for r in plan.iter() {
        let mut from = match r.provenance {
            Provenance::Nearest { key, .. } => format!("nearest: {key}"),
            p => p.name().to_string(),
        };
        if plan
            .folded
            .is_some_and(|q| r.variant.solver.runs_as(&problem, &caps) == q)
        {
            from.push_str(", as 2-D");
        }
        kiln::outln!(
            "  {:<22} params {:<10} {:>9.4} ms  workspace {:>4}  ({from})",
            r.variant.solver.id(),
            r.variant.params,
            r.time_ms,
            r.workspace
        );
    }
    if let Some((ns, allocations)) = repeat(a, target, &problem)? {
        kiln::outln!(
            "resolved {} times: {ns:.0} ns per resolve, {allocations} heap allocations",
            a.repeat
        );
    }
    Ok(())
}

/// With `--repeat`: ns per resolve and the heap allocations of all of them.
fn repeat(
    a: &ResolveArgs,
    target: &'static EmbeddedTarget,
    problem: &kiln::ConvProblem,
) -> Result<Option<(f64, u64)>, Box<dyn std::error::Error>> {
    if a.repeat == 0 {
        return Ok(None);
    }
    let before = crate::alloc_count::allocations();
    let t = std::time::Instant::now();
    for _ in 0..a.repeat {
        std::hint::black_box(kiln::resolve::resolve(
            target,
            std::hint::black_box(problem),
        )?);
    }
    let ns = t.elapsed().as_secs_f64() * 1e9 / a.repeat as f64;
    Ok(Some((ns, crate::alloc_count::allocations() - before)))
}

fn as_json(
    target: &'static EmbeddedTarget,
    problem: &kiln::ConvProblem,
    plan: &Plan,
    timing: Option<(f64, u64)>,
) -> Result<Json, Box<dyn std::error::Error>> {
    let source = match plan.source {
        PlanSource::FindDb => Json::obj([("kind", Json::str("find-db"))]),
        PlanSource::Nearest { key, distance } => Json::obj([
            ("kind", Json::str("nearest")),
            ("key", Json::str(key)),
            ("distance", Json::Num(distance.into())),
        ]),
        PlanSource::CostModel { nearest } => Json::obj([
            ("kind", Json::str("cost model")),
            ("nearest_key", Json::opt_str(nearest.map(|n| n.0))),
            (
                "nearest_distance",
                nearest.map_or(Json::Null, |n| Json::Num(n.1.into())),
            ),
        ]),
    };
    let solutions = plan
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (near, distance) = match r.provenance {
                Provenance::Nearest { key, distance } => {
                    (Json::str(key), Json::Num(distance.into()))
                }
                _ => (Json::Null, Json::Null),
            };
            Json::obj([
                ("rank", Json::uint(i as u64 + 1)),
                ("solver", Json::str(r.variant.solver.id())),
                ("params", Json::str(r.variant.params)),
                ("time_ms", Json::Num(r.time_ms)),
                ("workspace_bytes", Json::uint(r.workspace)),
                ("provenance", Json::str(r.provenance.name())),
                ("nearest_key", near),
                ("nearest_distance", distance),
            ])
        })
        .collect();
    let record = match target.find_record(problem)? {
        None => Json::Null,
        Some(found) => Json::Arr(
            found
                .ranked()?
                .iter()
                .map(|s| {
                    Json::obj([
                        ("solver", Json::str(s.solver)),
                        ("time_ms", Json::Num(s.time_ms)),
                        ("workspace_bytes", Json::uint(s.workspace)),
                        ("algorithm", Json::str(s.algorithm)),
                        (
                            "kiln_runs_it",
                            Json::Bool(kiln::solvers::by_id(s.solver).is_some()),
                        ),
                    ])
                })
                .collect(),
        ),
    };
    let mut out = vec![
        ("target", Json::str(target.basename)),
        ("find_db_key", Json::str(problem.find_db_key().as_str())),
        ("perf_db_key", Json::str(problem.perf_db_key().as_str())),
        (
            "network_config",
            Json::str(problem.network_config().as_str()),
        ),
        ("math", Json::str(problem.math().name())),
        ("find_db_record", record),
        ("plan_source", source),
        (
            "folded_2d_key",
            plan.folded
                .map_or(Json::Null, |q| Json::str(q.find_db_key().as_str())),
        ),
        ("solutions", Json::Arr(solutions)),
    ];
    if let Some((ns, allocations)) = timing {
        out.push(("ns_per_resolve", Json::Num(ns)));
        out.push(("heap_allocations", Json::uint(allocations)));
    }
    Ok(Json::Obj(out))
}
