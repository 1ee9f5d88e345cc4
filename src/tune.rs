//! Measuring solvers on the device (kiln's Tuna): for one problem, every applicable solver and
//! precompiled perf config is run, checked against the reference solver's output on the same
//! inputs, and timed with device events (warm-up, then the median of repeats with the input
//! rotated over several buffers so that caches do not flatter). The winners become find-db and
//! perf-db records in MIOpen's formats.

use kiln_format::ConvProblem;

use crate::backend::Stream;
use crate::context::{Buffer, Candidate, Context, Ranking, RunError};
use crate::solvers::{self, ManifestSolver};
use crate::timing::time_device;
use crate::verify::{random_values, relative_error, tolerance, DeviceBuffers};

/// The solver every candidate is checked against.
pub const REFERENCE_SOLVER: &str = "ConvDirectNaiveFwd";

/// One measured (solver, perf config).
#[derive(Clone, Debug)]
pub struct Measurement {
    /// The solver.
    pub solver: &'static ManifestSolver,
    /// Its perf config.
    pub params: &'static str,
    /// Median time in ms (infinite if it failed).
    pub time_ms: f64,
    /// Relative error against the reference solver.
    pub error: f64,
    /// Whether it ran and stayed within tolerance (only those may win).
    pub ok: bool,
}

/// Input copies the timed loop rotates through.
const ROTATE: usize = 3;

/// Measures every applicable (solver, perf config) of `p`.
pub fn measure(
    ctx: &Context,
    p: &ConvProblem,
    repeats: usize,
    seed: u64,
) -> Result<Vec<Measurement>, RunError> {
    let dtype = p.data_types()[0];
    let [xn, wn, yn] = p.element_counts();
    let mut bufs = DeviceBuffers::new(ctx);
    let mut xs = Vec::new();
    for r in 0..ROTATE {
        xs.push(
            bufs.upload(dtype, &random_values(xn as usize, seed + r as u64))?
                .0,
        );
    }
    let (w, _) = bufs.upload(dtype, &random_values(wn as usize, seed ^ 0x5EED))?;
    let y = bufs.alloc(yn * dtype.size_bytes() as u64)?;

    let run_once = |c: &Candidate, x: Buffer| -> Result<Vec<f64>, RunError> {
        bufs.poison(y)?;
        let inv = ctx.prepare(p, c)?;
        ctx.run(&inv, x, w, y, None, Stream::default())?;
        bufs.download(y, dtype)
    };
    let reference_solver = solvers::by_id(REFERENCE_SOLVER).ok_or(RunError::NoSolution {
        problem: p.find_db_key().as_str().to_string(),
        reasons: vec![(REFERENCE_SOLVER, "not in the manifest")],
    })?;
    let cand = |solver, params| Candidate {
        solver,
        params,
        time_ms: 0.0,
        workspace: 0,
        ranking: Ranking::Heuristic,
    };
    let reference = run_once(&cand(reference_solver, ""), xs[0])?;

    let mut out = Vec::new();
    for solver in solvers::manifest() {
        for &params in solver.params {
            if solvers::applicable(solver, p, params).is_err() {
                continue;
            }
            let c = cand(solver, params);
            let checked = run_once(&c, xs[0]).map(|got| relative_error(&got, &reference));
            let (error, ok) = match checked {
                Ok(e) => (e, e <= tolerance(dtype)),
                Err(_) => (f64::INFINITY, false),
            };
            let time_ms = if ok {
                time(ctx, p, &c, &xs, w, y, repeats)?
            } else {
                f64::INFINITY
            };
            out.push(Measurement {
                solver,
                params,
                time_ms,
                error,
                ok,
            });
        }
    }
    Ok(out)
}

fn time(
    ctx: &Context,
    p: &ConvProblem,
    c: &Candidate,
    xs: &[Buffer],
    w: Buffer,
    y: Buffer,
    repeats: usize,
) -> Result<f64, RunError> {
    let be = ctx.backend();
    let inv = ctx.prepare(p, c)?;
    let launch = |i: usize| ctx.run(&inv, xs[i % xs.len()], w, y, None, Stream::default());
    // Slow kernels get fewer repeats (their noise is small relative to their time).
    let first = time_device(be, 0, 1, launch)?;
    let n = if first.median_ms > 5.0 { 3 } else { repeats };
    Ok(time_device(be, 1, n, |i| launch(i + 1))?.median_ms)
}

/// The fastest measurement of each solver, in first-seen order.
fn best_per_solver<'a>(ms: impl Iterator<Item = &'a Measurement>) -> Vec<&'a Measurement> {
    let mut best: Vec<&Measurement> = Vec::new();
    for m in ms {
        match best.iter_mut().find(|b| b.solver.id == m.solver.id) {
            Some(b) if m.time_ms < b.time_ms => *b = m,
            Some(_) => {}
            None => best.push(m),
        }
    }
    best
}

/// The find-db line of a measured problem: each passing solver at its best perf config,
/// fastest first, in MIOpen's v2.0 form.
pub fn find_db_line(key: &str, ms: &[Measurement]) -> Option<String> {
    let mut best = best_per_solver(ms.iter().filter(|m| m.ok));
    if best.is_empty() {
        return None;
    }
    best.sort_by(|a, b| a.time_ms.total_cmp(&b.time_ms));
    let items: Vec<String> = best
        .iter()
        .map(|m| {
            format!(
                "{}:{},0,{}",
                m.solver.id,
                kiln_format::records::format_g6(m.time_ms),
                m.solver.algorithm
            )
        })
        .collect();
    Some(format!("{key}={}", items.join(";")))
}

/// The perf-db line: each tunable solver's best perf config.
pub fn perf_db_line(perf_key: &str, ms: &[Measurement]) -> Option<String> {
    let best = best_per_solver(ms.iter().filter(|m| m.ok && !m.params.is_empty()));
    if best.is_empty() {
        return None;
    }
    let items: Vec<String> = best
        .iter()
        .map(|m| format!("{}:{}", m.solver.id, m.params))
        .collect();
    Some(format!("{perf_key}={}", items.join(";")))
}
