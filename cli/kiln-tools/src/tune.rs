//! Measuring solvers on the device (kiln's Tuna): for one problem, every applicable solver and
//! precompiled perf config is run, checked against the reference solver's output on the same
//! inputs, and timed with device events (warm-up, then the median of repeats with the input
//! rotated over several buffers so that caches do not flatter). The winners become find-db and
//! perf-db records in MIOpen's formats, as data (written by kiln-embed's writers).

use kiln::backend::{DeviceBuffer, Stream};
use kiln::context::{Context, EpilogueArgs};
use kiln::harness::epilogue::EpilogueInputs;
use kiln::harness::timing::{time_gpu_only_fitted, L2Eviction};
use kiln::harness::verify::{
    download, poison, random_values, relative_error, tolerance, upload, workspace_for,
    ProblemCheck, REFERENCE_BUDGET_MACS,
};
use kiln::resolve::Variant;
use kiln::solvers::REFERENCE_SOLVER;
use kiln::{ConvProblem, RunError};
use kiln_embed::finddb::{FindItem, FindRecord};
use kiln_embed::perfdb::{PerfItem, PerfRecord};

/// One measured (solver, perf config).
#[derive(Clone, Debug)]
pub struct Measurement {
    /// The solver and perf config.
    pub variant: Variant,
    /// Median time in ms (infinite if it failed).
    pub time_ms: f64,
    /// Relative error against the reference solver.
    pub error: f64,
    /// Whether it ran and stayed within tolerance (only those may win).
    pub ok: bool,
}

/// Input copies the timed loop rotates through.
const ROTATE: usize = 3;

/// How each candidate is timed.
#[derive(Clone, Copy, Debug)]
pub struct Timed {
    /// Timed repeats per candidate.
    pub repeats: usize,
    /// L2 evicted before each call ([`L2Eviction`]), as in a network; the context must then
    /// launch without programmatic dependent launch.
    pub cold_l2: bool,
}

/// Measures every applicable (solver, perf config) of `p`.
pub fn measure(
    ctx: &Context,
    p: &ConvProblem,
    timed: Timed,
    seed: u64,
) -> Result<Vec<Measurement>, RunError> {
    let eviction = if timed.cold_l2 {
        Some(L2Eviction::new(ctx.device())?)
    } else {
        None
    };
    let dtype = p.data_types()[0];
    let [xn, wn, _] = p.element_counts();
    let dev = ctx.device();
    let mut xs = Vec::new();
    for r in 0..ROTATE {
        xs.push(upload(dev, dtype, &random_values(xn as usize, seed + r as u64))?.0);
    }
    let (w, _) = upload(dev, dtype, &random_values(wn as usize, seed ^ 0x5EED))?;
    // A fused problem runs with its epilogue's tensors (the same for every candidate and the
    // reference), into y's slice when y is one.
    let epilogue = EpilogueInputs::new(dev, p, seed)?;
    let args = epilogue
        .as_ref()
        .map_or_else(|| EpilogueArgs::defaults(p), |e| e.args());
    let y_offset = epilogue.as_ref().map_or(0, |e| e.y_offset);
    let y_elements = p.y_extent() + u64::from(y_offset);
    let y = dev.alloc(y_elements * p.data_types()[2].size_bytes() as u64)?;

    let run_once = |v: &Variant, x: &DeviceBuffer| -> Result<Vec<f64>, RunError> {
        poison(&y)?;
        let inv = ctx.prepare(p, v)?;
        let ws = workspace_for(ctx.device(), &inv)?;
        ctx.run_fused(&inv, x, &w, &y, ws.as_ref(), &Stream::default(), &args)?;
        Ok(kiln::harness::epilogue::gather_y(
            p,
            download(&y, dtype)?,
            y_offset,
        ))
    };
    let reference_solver = kiln::solvers::by_id(REFERENCE_SOLVER).ok_or(RunError::NoSolution {
        problem: p.find_db_key().as_str().to_string(),
        reasons: vec![(REFERENCE_SOLVER, "not in the manifest")],
    })?;
    let caps = ctx.caps();
    // Fused work the reference solver does not do (a gate on x, a global pool's partial sums)
    // is checked against the CPU reference instead, on its own inputs (sampled outputs on
    // large problems); the timed runs below are the same either way.
    let check = match reference_solver.applicable(p, &caps, "") {
        Ok(()) => Check::ReferenceSolver(run_once(
            &Variant {
                solver: reference_solver,
                params: "",
            },
            &xs[0],
        )?),
        Err(_) => Check::Cpu(Box::new(ProblemCheck::random_within(
            ctx,
            p,
            seed,
            REFERENCE_BUDGET_MACS,
        )?)),
    };

    let mut out = Vec::new();
    for solver in kiln::solvers::registered() {
        for params in solver.offered_params(p, &caps) {
            let v = Variant { solver, params };
            let checked = match &check {
                Check::Cpu(cpu) => cpu.error(&v),
                Check::ReferenceSolver(reference) => {
                    run_once(&v, &xs[0]).map(|got| relative_error(&got, reference))
                }
            };
            // TF32 solvers are held to the TF32 tolerance, every other to the type's own,
            // also when the problem allows TF32.
            let limit = if solver.entry.math_mode() == kiln::MathMode::AllowTf32 {
                tolerance(p)
            } else {
                tolerance(&p.with_math(kiln::MathMode::Default))
            };
            let (error, ok) = match checked {
                Ok(e) => (e, e <= limit),
                Err(e) => {
                    // A failed variant is recorded as such; say why on stderr.
                    eprintln!("{} [{params}] on {}: {e}", solver.id(), p.find_db_key());
                    (f64::INFINITY, false)
                }
            };
            let time_ms = if ok {
                time(
                    ctx,
                    p,
                    &v,
                    &xs,
                    &w,
                    &y,
                    &args,
                    timed.repeats,
                    eviction.as_ref(),
                )?
            } else {
                f64::INFINITY
            };
            out.push(Measurement {
                variant: v,
                time_ms,
                error,
                ok,
            });
        }
    }
    Ok(out)
}

/// How a candidate's output is checked.
enum Check<'a> {
    /// Against the reference solver's output on the same inputs (its values).
    ReferenceSolver(Vec<f64>),
    /// Against the CPU reference, for fused work the reference solver does not do.
    Cpu(Box<ProblemCheck<'a>>),
}

#[allow(clippy::too_many_arguments)]
fn time(
    ctx: &Context,
    p: &ConvProblem,
    v: &Variant,
    xs: &[DeviceBuffer],
    w: &DeviceBuffer,
    y: &DeviceBuffer,
    args: &EpilogueArgs<'_>,
    repeats: usize,
    eviction: Option<&L2Eviction>,
) -> Result<f64, RunError> {
    let inv = ctx.prepare(p, v)?;
    let ws = workspace_for(ctx.device(), &inv)?;
    // A fused pool's partial sums are written (and timed) into a buffer of the invoker's
    // layout.
    let pool = match inv.pool_partials() {
        Some(l) => Some(ctx.device().alloc(l.bytes(p.n(), p.k()))?),
        None => None,
    };
    let args = EpilogueArgs {
        pool: pool.as_ref(),
        ..*args
    };
    let launch =
        |s: &Stream, i: usize| ctx.run_fused(&inv, &xs[i % xs.len()], w, y, ws.as_ref(), s, &args);
    // GPU-only: a graph of back-to-back calls, replayed (each after an L2 eviction where
    // asked).
    Ok(match eviction {
        Some(e) => e.time_gpu_only(ctx.device(), repeats, launch)?.median_ms,
        None => {
            time_gpu_only_fitted(ctx.device(), repeats, launch)?
                .0
                .median_ms
        }
    })
}

/// The fastest measurement of each solver, in first-seen order.
fn best_per_solver<'a>(ms: impl Iterator<Item = &'a Measurement>) -> Vec<&'a Measurement> {
    let mut best: Vec<&Measurement> = Vec::new();
    for m in ms {
        match best
            .iter_mut()
            .find(|b| b.variant.solver == m.variant.solver)
        {
            Some(b) if m.time_ms < b.time_ms => *b = m,
            Some(_) => {}
            None => best.push(m),
        }
    }
    best
}

/// The find-db record of a measured problem: each passing solver at its best perf config,
/// fastest first.
pub fn find_record(key: &str, ms: &[Measurement]) -> Option<FindRecord> {
    let mut best = best_per_solver(ms.iter().filter(|m| m.ok));
    if best.is_empty() {
        return None;
    }
    best.sort_by(|a, b| a.time_ms.total_cmp(&b.time_ms));
    let items = best
        .iter()
        .map(|m| FindItem {
            solver: m.variant.solver.id().to_string(),
            // Written with MIOpen's 6 significant digits by the find-db writer.
            time_ms: m.time_ms,
            workspace: 0,
            algorithm: m.variant.solver.entry.algorithm.to_string(),
        })
        .collect();
    Some(FindRecord {
        key: key.to_string(),
        items,
    })
}

/// The perf-db record: each tunable solver's best perf config.
pub fn perf_record(perf_key: &str, ms: &[Measurement]) -> Option<PerfRecord> {
    let best = best_per_solver(ms.iter().filter(|m| m.ok && !m.variant.params.is_empty()));
    if best.is_empty() {
        return None;
    }
    let items = best
        .iter()
        .map(|m| PerfItem {
            solver: m.variant.solver.id().to_string(),
            params: m.variant.params.to_string(),
        })
        .collect();
    Some(PerfRecord {
        key: perf_key.to_string(),
        items,
    })
}
