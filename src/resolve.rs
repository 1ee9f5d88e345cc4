//! The resolver: a problem and an embedded target -> a ranked plan of runnable solutions, each
//! saying where its rank came from. No device, no allocation: everything is on the stack.
//!
//! Policy, in order:
//! 1. the find-db record of the problem: kiln's solvers it names, in measured order;
//! 2. no record: the solver order and tuned perf configs of the nearest measured problem of the
//!    same class ([`kiln_format::measured`]), when one lies within [`NEAR_DISTANCE`], times
//!    scaled by the work ratio;
//! 3. every other applicable solver by its cost model ([`TunableSolver::estimate`]).
//!
//! A 3-D problem with no record whose depth folds away ([`crate::solvers::folded`]: a filter
//! one plane deep, or 1x1 across) is also ranked as that 2-D problem, by the same policy, and the
//! two rankings merged: the 2-D solvers then run it as the 2-D problem, on the same buffers.
//!
//! Each solver's perf config is the problem's own perf-db record when there is one, else, of
//! the configs the nearest measured problems ran it with (where they apply), and each one's
//! counterpart shaped for the problem ([`TunableSolver::refit`]: a narrow layer's 32-column
//! tile for a neighbour's 64-column one, a 160-column tile for 160 output channels), the one
//! whose measured time scaled to the problem by the solver's cost model is smallest, else the
//! solver's default.
//!
//! [`TunableSolver::estimate`]: crate::solvers::TunableSolver::estimate
//! [`TunableSolver::refit`]: crate::solvers::TunableSolver::refit

use kiln_format::measured::{macs, nearest_k, MeasuredProblem};

pub use kiln_format::measured::NEAR_DISTANCE;
use kiln_format::{ConvProblem, EmbeddedTarget};

use crate::error::RunError;
use crate::solvers::{registered, SolverRef, TargetCaps};

/// Most solvers a plan holds (plans are built on the stack).
pub const MAX_SOLVERS: usize = 48;

/// Measured problems the fallback looks through for a perf config that applies.
const NEIGHBOURS_FOR_PARAMS: usize = 8;

/// The near measured problems, each with its key parsed (none where the key does not parse).
type Neighbours<'m> =
    heapless::Vec<(&'m MeasuredProblem<'static>, Option<ConvProblem>), NEIGHBOURS_FOR_PARAMS>;

/// A problem's own perf-db record: (solver, params) pairs.
type PerfRecord =
    heapless::Vec<(&'static str, &'static str), { kiln_format::lookup::MAX_SOLUTIONS }>;

/// Where a solution's rank came from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Provenance {
    /// The problem's own find-db record (a measured time).
    FindDb,
    /// The nearest measured problem: its time for this solver, scaled by the work ratio.
    Nearest {
        /// The measured problem's find-db key.
        key: &'static str,
        /// Its feature distance from the problem.
        distance: f32,
    },
    /// The solver's cost model.
    CostModel,
}

impl Provenance {
    /// `find-db`, `nearest` or `cost model`, for tables.
    pub fn name(&self) -> &'static str {
        match self {
            Provenance::FindDb => "find-db",
            Provenance::Nearest { .. } => "nearest",
            Provenance::CostModel => "cost model",
        }
    }
}

/// What to run: a solver and its perf config.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Variant {
    /// The solver.
    pub solver: SolverRef,
    /// Its perf config (one of the manifest's).
    pub params: &'static str,
}

/// A ranked solution of a plan.
#[derive(Clone, Copy, Debug)]
pub struct Ranked {
    /// What to run.
    pub variant: Variant,
    /// Measured or estimated time, ms.
    pub time_ms: f64,
    /// Workspace bytes it needs.
    pub workspace: u64,
    /// Where the rank came from.
    pub provenance: Provenance,
}

/// Why the problem was ranked the way it was.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PlanSource {
    /// The target's find-db has the problem.
    FindDb,
    /// The nearest measured problem within [`NEAR_DISTANCE`] ranked it.
    Nearest {
        /// Its find-db key.
        key: &'static str,
        /// Its feature distance.
        distance: f32,
    },
    /// The cost model ranked it: no measured problem of this class, or none near enough.
    CostModel {
        /// The nearest measured problem beyond [`NEAR_DISTANCE`], if any.
        nearest: Option<(&'static str, f32)>,
    },
}

/// A ranked plan: runnable solutions, best first.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Where the ranking came from (for a folded problem, the best solution's ranking).
    pub source: PlanSource,
    /// Solutions, best first (never empty).
    pub ranked: heapless::Vec<Ranked, MAX_SOLVERS>,
    /// The 2-D problem a 3-D one folds into ([`crate::solvers::folded`]), when some of the
    /// solutions were ranked as that problem: those solvers run it
    /// ([`SolverRef::runs_as`](crate::solvers::SolverRef::runs_as)).
    pub folded: Option<ConvProblem>,
}

impl Plan {
    /// The best solution.
    pub fn best(&self) -> &Ranked {
        // A plan is only built with at least one solution.
        &self.ranked[0]
    }
}

impl core::ops::Deref for Plan {
    type Target = [Ranked];
    fn deref(&self) -> &[Ranked] {
        &self.ranked
    }
}

/// Resolves `p` on `target`: its find-db record when there is one, else the fallback.
pub fn resolve(target: &'static EmbeddedTarget, p: &ConvProblem) -> Result<Plan, RunError> {
    resolve_on(target, &TargetCaps::of(target), p)
}

/// As [`resolve`], for a device whose limits differ from the target's (`caps`: see
/// [`TargetCaps::on_device`]): solutions the device cannot run are left out.
pub fn resolve_on(
    target: &'static EmbeddedTarget,
    caps: &TargetCaps,
    p: &ConvProblem,
) -> Result<Plan, RunError> {
    let caps = *caps;
    // A fused problem never measured is ranked by its plain convolution's records: the
    // epilogue adds the same per-element work to every solver that takes it, and the solvers
    // that do not are left out below (their configs do not apply).
    // Before it, the same epilogue with the other form of its per-channel affine part: a
    // bias alone and a folded batch norm (scale and bias) cost every solver the same, and
    // networks hold either (an ONNX exporter folds batch norms into the weights and a bias).
    // First of all, the same epilogue writing a dense y (and reading a dense z): a
    // concatenation's part written into its channel slice stores as many bytes.
    // The kin are built only when the problem's own records are missing (resolve is a hot
    // path; a problem with no epilogue has none).
    // A problem whose epilogue also writes a global pool's partial sums, or whose x is gated,
    // and that was never measured itself is looked up as its twin without them: the other
    // solvers are left out when planned, and the twin's order is the best guess (a find
    // measures what the sums and the gate cost: the gate doubled some layers' time).
    let twin = match p.fusion() {
        f if (f.pool || f.x_scale) && target.find_record(p)?.is_none() => {
            p.with_fusion(f.without_pool().without_x_scale()).ok()
        }
        _ => None,
    };
    let keyed = twin.as_ref().unwrap_or(p);
    let plain = p.without_fusion();
    let mut tuned = target.perf_record(keyed)?;
    let mut record = target.find_record(keyed)?;
    if (tuned.is_empty() || record.is_none()) && plain != *keyed {
        let dense = dense_sibling(keyed);
        let kin = [
            dense,
            dense.as_ref().and_then(affine_sibling),
            affine_sibling(keyed),
            Some(plain),
        ];
        for q in kin.iter().flatten() {
            if tuned.is_empty() {
                tuned = target.perf_record(q)?;
            }
            if record.is_none() {
                record = target.find_record(q)?;
            }
        }
    }
    // Ranked by the twin's records, a gated problem runs on the gated sibling of each plain
    // solver measured there (the same kernel with the scaler code), at its tuned config.
    let gated_twin = twin.is_some() && p.fusion().x_scale;
    let mut ranked = heapless::Vec::new();
    if let Some(found) = record {
        for s in found.iter() {
            let s = s?;
            let Some(measured) = crate::solvers::by_id(s.solver) else {
                continue; // one of MIOpen's solvers: kiln cannot run it
            };
            let solver = match crate::solvers::gated_sibling(measured) {
                Some(gated) if gated_twin => gated,
                _ => measured,
            };
            let Some(params) = tuned_params(&tuned, measured.id(), p, &caps, solver)
                .or_else(|| solver.default_params(p, &caps))
            else {
                continue;
            };
            if ranked
                .push(Ranked {
                    variant: Variant { solver, params },
                    time_ms: s.time_ms,
                    workspace: s.workspace,
                    provenance: Provenance::FindDb,
                })
                .is_err()
            {
                break;
            }
        }
    }
    let measured = !ranked.is_empty();
    // The record says what was measured here; every other applicable solver follows by the
    // cost model. Without a record, the fallback ranks everything.
    let model = if measured { &[][..] } else { target.measured };
    // A fused problem far from every measured fused one is ranked from its plain
    // convolution's neighbours, when they are nearer: fused measurements cover a few
    // networks' layers, plain ones every tuned list, and the epilogue's cost is small beside
    // a solver that does not fit the shape.
    let nearest = |q: &ConvProblem| {
        nearest_k::<1>(model, q)
            .first()
            .map_or(f32::INFINITY, |&(_, d)| d)
    };
    let query = if plain != *keyed && nearest(&plain) < nearest(keyed) {
        &plain
    } else {
        keyed
    };
    let (fallback, source) = fallback(p, query, model, &caps, &tuned);
    for c in fallback {
        if !ranked
            .iter()
            .any(|o: &Ranked| o.variant.solver == c.variant.solver)
            && ranked.push(c).is_err()
        {
            break;
        }
    }
    if !measured {
        if let Some(q) = crate::solvers::folded(p) {
            return with_folded(p, &caps, ranked, source, resolve_on(target, &caps, &q), q);
        }
    }
    finish(
        p,
        &caps,
        ranked,
        if measured { PlanSource::FindDb } else { source },
    )
}

/// The plan of a 3-D problem `p` with no record of its own that folds into the 2-D problem `q`:
/// `q`'s plan (`folded`: its record, or its 2-D neighbours, or the cost model) merged with
/// `p`'s own (`ranked`, from `source`: 3-D neighbours, whose records time the 2-D solvers too
/// where they fold), each solver once (as `q` ranks it, where both do), ordered as the
/// fallback orders: times from a measurement first, by time, then the cost model's. Solutions
/// of `q`'s plan whose solver takes `p` itself are left out: that solver runs `p`, not `q`.
/// (On the torchvision video layers, ranking `q` alone first picked worse at batch 32: its 2-D
/// neighbours are far from a batch of 512 planes, and its cost model misjudged unaligned
/// channels, which the 3-D kernels pad; `data/heuristic-regret.md`.)
fn with_folded(
    p: &ConvProblem,
    caps: &TargetCaps,
    ranked: heapless::Vec<Ranked, MAX_SOLVERS>,
    source: PlanSource,
    folded: Result<Plan, RunError>,
    q: ConvProblem,
) -> Result<Plan, RunError> {
    let runs_q = |r: &Ranked| r.variant.solver.runs_as(p, caps) == q;
    let mut merged: heapless::Vec<Ranked, MAX_SOLVERS> = heapless::Vec::new();
    let Ok(folded) = folded else {
        return finish(p, caps, ranked, source);
    };
    merged.extend(folded.iter().filter(|r| runs_q(r)).copied());
    if merged.is_empty() {
        return finish(p, caps, ranked, source);
    }
    for r in ranked.iter() {
        if !merged.iter().any(|o| o.variant.solver == r.variant.solver) && merged.push(*r).is_err()
        {
            break;
        }
    }
    // As the fallback orders: times taken from a measurement (here or near) first.
    let measured = |r: &Ranked| r.provenance != Provenance::CostModel;
    merged.sort_unstable_by(|a, b| {
        measured(b)
            .cmp(&measured(a))
            .then(a.time_ms.total_cmp(&b.time_ms))
    });
    let best_source = if runs_q(&merged[0]) {
        folded.source
    } else {
        source
    };
    let mut plan = finish(p, caps, merged, best_source)?;
    plan.folded = Some(q);
    Ok(plan)
}

/// `p` with a bias alone where it has a scale and a bias, or with both where it has a bias
/// alone; `None` without a bias.
/// `p` writing its whole y and reading a whole z (no channel slices); `None` when it does.
fn dense_sibling(p: &ConvProblem) -> Option<ConvProblem> {
    let mut f = p.fusion();
    if f.y_ld == 0 && f.z_ld == 0 {
        return None;
    }
    (f.y_ld, f.z_ld) = (0, 0);
    p.with_fusion(f).ok()
}

fn affine_sibling(p: &ConvProblem) -> Option<ConvProblem> {
    let mut f = p.fusion();
    if !f.bias {
        return None;
    }
    f.scale = !f.scale;
    p.with_fusion(f).ok()
}

/// As [`resolve`], and says through the log how the plan was ranked: a warning when the cost
/// model ranked it (nothing measured near the problem), info when the nearest measured problem
/// did, debug for the problem's own find-db record. [`crate::context::Context::find_solutions`]
/// and the `kiln` binary resolve through it; [`resolve`] itself stays silent for hot loops.
pub fn resolve_logged(target: &'static EmbeddedTarget, p: &ConvProblem) -> Result<Plan, RunError> {
    resolve_logged_on(target, &TargetCaps::of(target), p)
}

/// As [`resolve_logged`], with a device's caps ([`resolve_on`]).
pub fn resolve_logged_on(
    target: &'static EmbeddedTarget,
    caps: &TargetCaps,
    p: &ConvProblem,
) -> Result<Plan, RunError> {
    let plan = resolve_on(target, caps, p)?;
    let key = p.find_db_key();
    if let Some(q) = plan.folded {
        log::debug!(
            "{}: {} folds into the 2-D problem {}, and was ranked as that too",
            target.basename,
            key.as_str(),
            q.find_db_key().as_str()
        );
    }
    match plan.source {
        PlanSource::FindDb => log::debug!(
            "{}: {} ranked by its {}find-db record",
            target.basename,
            key.as_str(),
            if p.fusion().is_none() || target.find_record(p).ok().flatten().is_some() {
                ""
            } else {
                "convolution's "
            }
        ),
        PlanSource::Nearest { key: near, distance } => log::info!(
            "{}: {} is not in the find-db; ranked by the nearest measured problem {near} (distance {distance:.1})",
            target.basename,
            key.as_str()
        ),
        PlanSource::CostModel { nearest } => {
            let why = match nearest {
                Some((near, d)) => format!(
                    "the nearest measured problem {near} is at distance {d:.1}, beyond {NEAR_DISTANCE}"
                ),
                None => "no problem of this type and layout was measured".to_string(),
            };
            log::warn!(
                "{}: {} ranked by the cost model, not by a measurement ({why}); its choice may be slow",
                target.basename,
                key.as_str()
            );
        }
    }
    Ok(plan)
}

/// The fallback alone for `p` with measured problems `model` (e.g. a model with some problems
/// held out, as `kiln-tools regret` uses), perf configs from `perf`'s perf-db when given.
pub fn rank_unmeasured(
    p: &ConvProblem,
    model: &[MeasuredProblem<'static>],
    caps: &TargetCaps,
    perf: Option<&'static EmbeddedTarget>,
) -> Result<Plan, RunError> {
    let tuned = match perf {
        Some(t) => t.perf_record(p)?,
        None => PerfRecord::new(),
    };
    let (ranked, source) = fallback(p, p, model, caps, &tuned);
    match crate::solvers::folded(p) {
        Some(q) => {
            let folded = rank_unmeasured(&q, model, caps, perf);
            with_folded(p, caps, ranked, source, folded, q)
        }
        None => finish(p, caps, ranked, source),
    }
}

fn finish(
    p: &ConvProblem,
    caps: &TargetCaps,
    ranked: heapless::Vec<Ranked, MAX_SOLVERS>,
    source: PlanSource,
) -> Result<Plan, RunError> {
    if ranked.is_empty() {
        return Err(RunError::NoSolution {
            problem: p.find_db_key().as_str().to_string(),
            reasons: registered().map(|s| (s.id(), s.why_not(p, caps))).collect(),
        });
    }
    Ok(Plan {
        source,
        ranked,
        folded: None,
    })
}

/// The config a perf-db record holds for solver `measured`, if `solver` (which runs `p` in its
/// place, or is it) compiles it and it applies to `p`.
fn tuned_params(
    tuned: &[(&'static str, &'static str)],
    measured: &str,
    p: &ConvProblem,
    caps: &TargetCaps,
    solver: SolverRef,
) -> Option<&'static str> {
    let (_, q) = tuned.iter().find(|(s, _)| *s == measured)?;
    solver.usable_config(p, caps, q)
}

/// Every solver applicable to `p`: those measured near `query` (`p`, or a fused problem's
/// plain convolution) first, by time scaled by the work ratio (each solver's time and perf
/// config from the nearest measured problem within [`NEAR_DISTANCE`], or, where that problem
/// could not run the solver, from the nearest one that did), then the rest by the cost model.
fn fallback(
    p: &ConvProblem,
    query: &ConvProblem,
    model: &[MeasuredProblem<'static>],
    caps: &TargetCaps,
    tuned: &[(&'static str, &'static str)],
) -> (heapless::Vec<Ranked, MAX_SOLVERS>, PlanSource) {
    let mut near = nearest_k::<NEIGHBOURS_FOR_PARAMS>(model, query);
    let source = match near.first() {
        Some(&(m, d)) if d <= NEAR_DISTANCE => PlanSource::Nearest {
            key: m.key,
            distance: d,
        },
        first => {
            // A model whose nearest problem is far says less than the cost model.
            let nearest = first.map(|&(m, d)| (m.key, d));
            near.clear();
            PlanSource::CostModel { nearest }
        }
    };
    let closest = near.first().copied();
    // Each near problem parsed once, for the cost model's estimates of it.
    let neighbours: Neighbours = near
        .iter()
        .map(|&(m, _)| (m, ConvProblem::from_find_db_key(m.key).ok()))
        .collect();
    let mut out: heapless::Vec<(Option<f64>, Ranked), MAX_SOLVERS> = heapless::Vec::new();
    for solver in registered() {
        let from_neighbours = || {
            fastest_neighbour_config(p, caps, solver, &neighbours)
                .map(|(params, _)| params)
                .or_else(|| {
                    near.first()?;
                    let (_, s, d) = kiln_format::measured::nearest_with(model, query, solver.id())?;
                    solver
                        .offered_config(p, caps, s.params)
                        .filter(|_| d <= NEAR_DISTANCE)
                })
        };
        let Some(params) = tuned_params(tuned, solver.id(), p, caps, solver)
            .or_else(from_neighbours)
            .or_else(|| solver.default_params(p, caps))
        else {
            continue;
        };
        // Time from the nearest problem when it measured this solver; else from the nearest
        // problem that did (the nearest one may not have been able to run it), within the
        // same distance bound; else the nearest problem's time of the solver it is timed like.
        let time_on = |id: &str| {
            let (m, d) = closest?;
            let s = m.solvers.iter().find(|s| s.solver == id)?;
            Some((s.time_ms as f64 * macs(p) / m.macs.max(1.0), m.key, d))
        };
        let measured = time_on(solver.id())
            .or_else(|| {
                closest?;
                let (m, s, d) = kiln_format::measured::nearest_with(model, query, solver.id())?;
                (d <= NEAR_DISTANCE)
                    .then(|| (s.time_ms as f64 * macs(p) / m.macs.max(1.0), m.key, d))
            })
            .or_else(|| time_on(solver.timed_like()?));
        // The config was offered for `p`, so it plans; one that does not is left out.
        let (Ok(plan), Ok(estimate)) = (
            solver.plan(p, caps, params),
            solver.estimate(p, caps, params),
        ) else {
            continue;
        };
        let ranked = Ranked {
            variant: Variant { solver, params },
            time_ms: measured.map_or(estimate, |m| m.0),
            workspace: plan.workspace_bytes,
            provenance: match measured {
                Some((_, key, distance)) => Provenance::Nearest { key, distance },
                None => Provenance::CostModel,
            },
        };
        // A manifest larger than MAX_SOLVERS is refused by a test; never silently here.
        if out.push((measured.map(|_| estimate), ranked)).is_err() {
            break;
        }
    }
    (order_measured_first(out), source)
}

/// How much faster than the fastest measured solver the calibrated cost model must make a
/// solver no near problem ran before it ranks ahead of the measured ones. Chosen on the regret
/// report (`data/heuristic-regret.md`): 1.5 improved every split it moved (the held-out stems
/// 11-23x -> at most 3.3x over the five folds), 1.25 let picks through that no find had
/// timed, and 3-5 left the detector's and GoogLeNet's gains.
const CALIBRATED_LEAD: f64 = 1.5;

/// The fallback's solutions in order: each with its cost model's estimate where its time was
/// taken from a measurement (`Some`), else `None` (its time is the estimate). Times from a
/// measurement first, by time; a solver no near problem ran follows them, unless the cost model,
/// calibrated on this problem by the fastest measured solver (that solver's time over its
/// estimate), makes it [`CALIBRATED_LEAD`] times faster than that solver: the model ranks what
/// no neighbour measured (a stem's first-layer kernel, whose configs are built per filter size,
/// measured only on other filters), and a neighbour's time of a generic kernel would otherwise
/// always outrank it.
fn order_measured_first(
    out: heapless::Vec<(Option<f64>, Ranked), MAX_SOLVERS>,
) -> heapless::Vec<Ranked, MAX_SOLVERS> {
    let fastest = out
        .iter()
        .filter_map(|(e, r)| Some((r.time_ms, (*e)?)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .filter(|&(t, e)| t.is_finite() && e > 0.0);
    let key = |(e, r): &(Option<f64>, Ranked)| match (e, fastest) {
        (Some(_), _) => (0, r.time_ms),
        (None, Some((t, e))) if r.time_ms * (t / e) * CALIBRATED_LEAD < t => {
            (0, r.time_ms * (t / e) * CALIBRATED_LEAD)
        }
        (None, _) => (1, r.time_ms),
    };
    let mut keyed: heapless::Vec<((u8, f64), Ranked), MAX_SOLVERS> =
        out.iter().map(|c| (key(c), c.1)).collect();
    keyed.sort_unstable_by(|(a, _), (b, _)| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    keyed.into_iter().map(|(_, c)| c).collect()
}

/// Of the perf configs the near problems measured for `solver` (those that apply to `p`), the
/// one whose measured time, scaled to `p` by the solver's cost model, is smallest: a neighbour's
/// time says how well its config ran there, the model says how that config's tiles fit `p`
/// (waves on the SMs, padded rows, columns and channels), which a config copied from the
/// nearest problem alone ignores.
fn fastest_neighbour_config(
    p: &ConvProblem,
    caps: &TargetCaps,
    solver: SolverRef,
    near: &[(&MeasuredProblem<'static>, Option<ConvProblem>)],
) -> Option<(&'static str, f64)> {
    let mut best: Option<(&'static str, f64)> = None;
    for (m, there) in near {
        let Some(s) = m.solvers.iter().find(|s| s.solver == solver.id()) else {
            continue;
        };
        // The refit first: where the model cannot tell the two apart (both bound by memory,
        // say), the tile shaped for the problem stands.
        let refit = solver.refit(p, caps, s.params);
        let as_run = solver.offered_config(p, caps, s.params);
        for params in [refit, as_run].into_iter().flatten() {
            let time =
                s.time_ms as f64 * scale_to(p, caps, m, there.as_ref(), solver, s.params, params);
            if best.is_none_or(|(_, t)| time < t) {
                best = Some((params, time));
            }
        }
    }
    best
}

/// How much longer `solver` should take on `p` with `params` than it took on the measured `m`
/// (`there`, its key parsed) with `measured_params`: the ratio of its cost model's estimates
/// where both are finite, else the ratio of their work.
fn scale_to(
    p: &ConvProblem,
    caps: &TargetCaps,
    m: &MeasuredProblem<'static>,
    there: Option<&ConvProblem>,
    solver: SolverRef,
    measured_params: &str,
    params: &str,
) -> f64 {
    let work = macs(p) / m.macs.max(1.0);
    let Some(there) = there else {
        return work;
    };
    match (
        solver.estimate(p, caps, params),
        solver.estimate(there, caps, measured_params),
    ) {
        (Ok(here), Ok(then)) if (here / then).is_finite() && here / then > 0.0 => here / then,
        _ => work,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_fits_a_stack_plan() {
        assert!(crate::embedded::kernel_manifest().len() <= MAX_SOLVERS);
    }

    #[test]
    fn a_concatenations_slice_is_ranked_by_its_dense_records() {
        let Some(t) = crate::embedded::target("sm_90_132") else {
            return; // a build without the measured Hopper target
        };
        let dense = ConvProblem::from_find_db_key(
            "32-160-160-1x1-32-160-160-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F+scale+bias+silu",
        )
        .unwrap();
        let sliced = dense
            .with_fusion(kiln_format::Fusion {
                y_ld: 64,
                ..dense.fusion()
            })
            .unwrap();
        // (The detector's own slice, +ld48, has been measured.)
        assert!(sliced.find_db_key().as_str().ends_with("+ld64"));
        assert!(t.find_record(&sliced).unwrap().is_none());
        let (a, b) = (resolve(t, &dense).unwrap(), resolve(t, &sliced).unwrap());
        assert_eq!(b.source, PlanSource::FindDb);
        assert_eq!(a.source, PlanSource::FindDb);
        let first = |p: &Plan| (p.ranked[0].variant.solver.id(), p.ranked[0].variant.params);
        assert_eq!(first(&a), first(&b));
        assert_eq!(a.ranked[0].time_ms, b.ranked[0].time_ms);
    }

    #[test]
    fn a_pools_sums_are_ranked_by_the_twin_without_them() {
        let Some(t) = crate::embedded::target("sm_90_132") else {
            return; // a build without the measured Hopper target
        };
        // MobileNetV2's stride-2 depthwise layer at N=32, measured without a pool (MobileNetV2
        // has no squeeze-and-excitation).
        let twin = ConvProblem::from_find_db_key(
            "144-56-56-3x3-144-28-28-32-1x1-2x2-1x1-0-NHWC-NHWC-NHWC-FP16-F_g144+bias+clippedrelu",
        )
        .unwrap();
        let pooled = twin
            .with_fusion(kiln_format::Fusion {
                pool: true,
                ..twin.fusion()
            })
            .unwrap();
        assert!(pooled
            .find_db_key()
            .as_str()
            .ends_with("+bias+clippedrelu+pool"));
        assert!(t.find_record(&pooled).unwrap().is_none());
        let (a, b) = (resolve(t, &twin).unwrap(), resolve(t, &pooled).unwrap());
        assert_eq!(b.source, PlanSource::FindDb);
        let best = |p: &Plan| (p.ranked[0].variant.solver.id(), p.ranked[0].variant.params);
        assert_eq!(best(&a), best(&b));
        assert_eq!(best(&b).0, "ConvDirectDepthwiseFwd");
        // Only solvers that write the sums are ranked: the depthwise kernel alone.
        let caps = TargetCaps::of(t);
        for r in b.iter() {
            assert!(r
                .variant
                .solver
                .plan(&pooled, &caps, r.variant.params)
                .is_ok());
            assert_eq!(r.variant.solver.id(), "ConvDirectDepthwiseFwd");
        }
        let grouped = crate::solvers::registered()
            .find(|s| {
                s.id() != "ConvDirectDepthwiseFwd"
                    && s.offered_params(&twin, &caps).next().is_some()
            })
            .unwrap();
        let params = grouped.offered_params(&twin, &caps).next().unwrap();
        assert_eq!(
            grouped.plan(&pooled, &caps, params).unwrap_err(),
            "fused global-pool partial sums: this solver does not write them"
        );
    }

    #[test]
    fn a_gated_layer_is_ranked_by_its_twin_on_the_solvers_that_scale_x() {
        let Some(t) = crate::embedded::target("sm_90_132") else {
            return; // a build without the measured Hopper target
        };
        // MobileNetV2's 576 -> 96 projection at N=32 (with its block's residual), its input
        // gated as no network's is: measured without the gate only.
        let twin = ConvProblem::from_find_db_key(
            "576-14-14-1x1-96-14-14-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F+bias+add",
        )
        .unwrap();
        let gated = twin
            .with_fusion(kiln_format::Fusion {
                x_scale: true,
                ..twin.fusion()
            })
            .unwrap();
        assert!(gated.find_db_key().as_str().ends_with("+bias+add+gate"));
        assert!(t.find_record(&gated).unwrap().is_none());
        let (a, b) = (resolve(t, &twin).unwrap(), resolve(t, &gated).unwrap());
        assert_eq!(b.source, PlanSource::FindDb);
        let caps = TargetCaps::of(t);
        for r in b.iter() {
            let plan = r
                .variant
                .solver
                .plan(&gated, &caps, r.variant.params)
                .unwrap();
            assert!(plan.scales_x, "{}", r.variant.solver.id());
        }
        // The twin's best, where it has a gated sibling, runs gated first, at its measured
        // time and (where the gated objects build it) config.
        let best = a.ranked[0].variant;
        let sibling = crate::solvers::gated_sibling(best.solver).unwrap();
        assert_eq!(b.ranked[0].variant.solver, sibling);
        assert_eq!(a.ranked[0].time_ms, b.ranked[0].time_ms);
        if sibling.entry.params.contains(&best.params) {
            assert_eq!(b.ranked[0].variant.params, best.params);
        }
        assert!(b
            .iter()
            .all(|r| r.variant.solver.id().ends_with("GatedFwd")));
        let expand = crate::solvers::by_id("ConvMmaExpand1x1Fwd").unwrap();
        let small = ConvProblem::from_find_db_key(
            "32-112-112-1x1-16-112-112-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F+bias+gate",
        )
        .unwrap();
        let plain = small.with_fusion(small.fusion().without_x_scale()).unwrap();
        let params = expand.offered_params(&plain, &caps).next().unwrap();
        assert_eq!(
            expand.plan(&small, &caps, params).unwrap_err(),
            "x scaled per image and channel: this solver does not scale its input"
        );
    }

    #[test]
    fn a_solver_never_measured_near_is_timed_like_its_kin() {
        use kiln_format::measured::MeasuredSolver;
        use kiln_format::{ConvSpec, DataType, Layout};
        let spec = |k| ConvSpec {
            n: 1,
            c: 512,
            k,
            input: [1, 11, 11],
            filter: [1, 1, 1],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        };
        // Measured: a 256-channel 1x1 layer, where the vector-store CUTLASS kernel won.
        let seen = ConvProblem::new(spec(256)).unwrap();
        static SOLVERS: [MeasuredSolver<'static>; 2] = [
            MeasuredSolver {
                solver: "ConvCutlassIgemmFwd",
                time_ms: 0.004,
                params: "64,64,64,32,32,5,8,1",
            },
            MeasuredSolver {
                solver: "ConvGemm1x1Fwd",
                time_ms: 0.030,
                params: "32,32,16",
            },
        ];
        let model = [measured_as("seen", &seen, &SOLVERS)];
        // A 255-channel head: ConvCutlassIgemmFwd cannot run it, ConvGemm1x1Fwd was measured,
        // the scalar-store kernel was not, and ranks first on its kin's time.
        let head = ConvProblem::new(spec(255)).unwrap();
        let caps = crate::solvers::devices::h100();
        let plan = rank_unmeasured(&head, &model, &caps, None).unwrap();
        assert_eq!(
            plan.best().variant.solver.id(),
            "ConvCutlassIgemmScalarOutFwd"
        );
        assert!(matches!(
            plan.best().provenance,
            Provenance::Nearest { key: "seen", .. }
        ));
        assert!((plan.best().time_ms - 0.004 * 255.0 / 256.0).abs() < 1e-9);
    }

    /// `p` as the fallback's model holds it, measured under `key` with `solvers`.
    fn measured_as(
        key: &'static str,
        p: &ConvProblem,
        solvers: &'static [kiln_format::measured::MeasuredSolver<'static>],
    ) -> MeasuredProblem<'static> {
        use kiln_format::measured::{class, features};
        MeasuredProblem {
            key,
            class: class(p),
            features: features(p),
            macs: macs(p),
            solvers,
        }
    }

    #[test]
    fn a_stem_kernel_no_neighbour_ran_outranks_a_generic_kernel_one_did() {
        use kiln_format::measured::MeasuredSolver;
        // ResNet-50's stem at N=1 measured with the CUDA-core implicit GEMM only (as if its
        // first-layer kernel had never run there): an unmeasured stem beside it.
        let seen = ConvProblem::from_find_db_key(
            "3-224-224-7x7-64-112-112-1-3x3-2x2-1x1-0-NHWC-NHWC-NHWC-FP16-F",
        )
        .unwrap();
        static SOLVERS: [MeasuredSolver<'static>; 1] = [MeasuredSolver {
            solver: "ConvImplicitGemmFwd",
            time_ms: 0.0669,
            params: "64,64,16",
        }];
        let model = [measured_as("seen", &seen, &SOLVERS)];
        let stem = ConvProblem::from_find_db_key(
            "3-224-224-7x7-48-112-112-1-3x3-2x2-1x1-0-NHWC-NHWC-NHWC-FP16-F",
        )
        .unwrap();
        let caps = crate::solvers::devices::h100();
        let plan = rank_unmeasured(&stem, &model, &caps, None).unwrap();
        let (first, generic) = (
            plan.ranked[0],
            plan.iter()
                .find(|r| r.variant.solver.id() == "ConvImplicitGemmFwd")
                .unwrap(),
        );
        assert_eq!(first.variant.solver.id(), "ConvWgmmaFirstLayerFwd");
        assert_eq!(first.provenance, Provenance::CostModel);
        assert!(matches!(
            generic.provenance,
            Provenance::Nearest { key: "seen", .. }
        ));
    }

    #[test]
    fn the_calibrated_cost_model_needs_its_lead_to_pass_a_measurement() {
        let solver = |id| crate::solvers::by_id(id).unwrap();
        let ranked = |id, time_ms, provenance| Ranked {
            variant: Variant {
                solver: solver(id),
                params: "",
            },
            time_ms,
            workspace: 0,
            provenance,
        };
        let near = Provenance::Nearest {
            key: "seen",
            distance: 0.1,
        };
        let order = |model_ms: f64| {
            let mut out: heapless::Vec<(Option<f64>, Ranked), MAX_SOLVERS> = heapless::Vec::new();
            // Measured 0.02 ms where the model said 0.01: the model runs 2x fast here.
            out.push((Some(0.01), ranked("ConvImplicitGemmFwd", 0.02, near)))
                .unwrap();
            out.push((Some(0.02), ranked("ConvDirectTiledFwd", 0.03, near)))
                .unwrap();
            out.push((
                None,
                ranked("ConvWgmmaFirstLayerFwd", model_ms, Provenance::CostModel),
            ))
            .unwrap();
            out.push((
                None,
                ranked("ConvDirectNaiveFwd", 0.5, Provenance::CostModel),
            ))
            .unwrap();
            order_measured_first(out)
                .iter()
                .map(|r| r.variant.solver.id())
                .collect::<Vec<_>>()
        };
        // Calibrated 2 x 0.006 = 0.012 ms, with the lead 0.018 < 0.02: first.
        assert_eq!(
            order(0.006),
            [
                "ConvWgmmaFirstLayerFwd",
                "ConvImplicitGemmFwd",
                "ConvDirectTiledFwd",
                "ConvDirectNaiveFwd"
            ]
        );
        // Calibrated 0.016 ms, with the lead 0.024: faster, but not by enough to pass.
        assert_eq!(
            order(0.008),
            [
                "ConvImplicitGemmFwd",
                "ConvDirectTiledFwd",
                "ConvWgmmaFirstLayerFwd",
                "ConvDirectNaiveFwd"
            ]
        );
    }

    #[test]
    fn a_neighbours_config_is_judged_by_how_its_tiles_fit_the_problem() {
        use kiln_format::measured::{class, features, MeasuredSolver};
        let key = |c, k, hw| {
            format!("{c}-{hw}-{hw}-3x3-{k}-{hw}-{hw}-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F")
        };
        let problem = |k: &str| ConvProblem::from_find_db_key(k).unwrap();
        let measured = |k: &'static str, solvers: &'static [MeasuredSolver<'static>]| {
            let p = problem(k);
            MeasuredProblem {
                key: k,
                class: class(&p),
                features: features(&p),
                macs: macs(&p),
                solvers,
            }
        };
        // A 160 -> 384 3x3 layer at 14x14, batch 32: 6272 x 384 outputs. The nearer
        // neighbour's 128 x 128 tiles make 147 blocks (two waves on 132 SMs, the second 11%
        // full); the farther one's 192 x 128 tiles make 99 (one wave). (384 channels: no tile
        // between the powers of two fits better, so no refit competes.)
        let near: &'static str = key(128, 256, 14).leak();
        let far: &'static str = key(192, 384, 7).leak();
        static NEAR: [MeasuredSolver<'static>; 1] = [MeasuredSolver {
            solver: "ConvWgmmaImplicitGemmFwd",
            time_ms: 0.0115,
            params: "128,128,4,1",
        }];
        static FAR: [MeasuredSolver<'static>; 1] = [MeasuredSolver {
            solver: "ConvWgmmaImplicitGemmFwd",
            time_ms: 0.0100,
            params: "192,128,4,1",
        }];
        let model = [measured(near, &NEAR), measured(far, &FAR)];
        let p = problem(&key(160, 384, 14));
        let caps = crate::solvers::devices::h100();
        let found = nearest_k::<NEIGHBOURS_FOR_PARAMS>(&model, &p);
        assert_eq!(found[0].0.key, near, "the 256-channel layer is the nearest");
        let parsed: Vec<_> = found
            .iter()
            .map(|&(m, _)| (m, ConvProblem::from_find_db_key(m.key).ok()))
            .collect();
        let solver = crate::solvers::by_id("ConvWgmmaImplicitGemmFwd").unwrap();
        let (params, time) = fastest_neighbour_config(&p, &caps, solver, &parsed).unwrap();
        assert_eq!(params, "192,128,4,1");
        // Its time is the farther layer's, scaled by the model: both one wave of 192 x 128
        // tiles, and 160 channels cost three 64-channel steps per tap, as 192 do.
        assert!((time - 0.0100).abs() < 1e-6, "{time}");
        let plan = rank_unmeasured(&p, &model, &caps, None).unwrap();
        assert_eq!(plan.best().variant.params, "192,128,4,1");
    }

    #[test]
    fn a_neighbours_wide_tile_is_refit_to_a_narrow_layer() {
        use kiln_format::measured::{class, features, MeasuredSolver};
        // GoogLeNet's 528 -> 32 1x1 layer at 14x14, batch 32, and a measured 512 -> 64 layer
        // whose best config was 64 x 64 tiles: on 32 output channels half of each such tile
        // is padding, and the 64 x 32 tile (faster on 114 of the find log's 148 narrow pairs)
        // fits. Only the refit can name it: no neighbour ran it.
        let seen: &'static str = "512-14-14-1x1-64-14-14-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F";
        let there = ConvProblem::from_find_db_key(seen).unwrap();
        static SOLVERS: [MeasuredSolver<'static>; 1] = [MeasuredSolver {
            solver: "ConvWgmmaGemm1x1Fwd",
            time_ms: 0.0038,
            params: "64,64,8,1",
        }];
        let model = [MeasuredProblem {
            key: seen,
            class: class(&there),
            features: features(&there),
            macs: macs(&there),
            solvers: &SOLVERS,
        }];
        let caps = crate::solvers::devices::h100();
        // The 1x1 wgmma solver's perf config in the fallback's plan for output channels k.
        let config_for = |k: u32| {
            let key = format!("528-14-14-1x1-{k}-14-14-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F");
            let p = ConvProblem::from_find_db_key(&key).unwrap();
            let plan = rank_unmeasured(&p, &model, &caps, None).unwrap();
            plan.ranked
                .iter()
                .find(|r| r.variant.solver.id() == "ConvWgmmaGemm1x1Fwd")
                .map(|r| r.variant.params)
        };
        assert_eq!(config_for(32), Some("64,32,8,1"));
        // 64 output channels fill the tile: the measured config stands.
        assert_eq!(config_for(64), Some("64,64,8,1"));
    }

    #[test]
    #[cfg(feature = "sm_90_132")]
    fn every_plan_says_where_it_came_from() {
        use kiln_format::ConvSpec;
        let t = crate::named_target("sm_90_132").unwrap();
        // A ResNet-50 layer the find-db has.
        let measured =
            ConvProblem::from_find_db_key("64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NCHW-FP32-F")
                .unwrap();
        let plan = resolve(t, &measured).unwrap();
        assert_eq!(plan.source, PlanSource::FindDb);
        assert_eq!(plan.best().provenance, Provenance::FindDb);
        // One it lacks: an odd size near measured ones.
        let near = ConvProblem::new(ConvSpec {
            n: 1,
            c: 64,
            k: 64,
            input: [1, 57, 57],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            ..ConvSpec::default()
        })
        .unwrap();
        let plan = resolve(t, &near).unwrap();
        assert!(
            matches!(plan.source, PlanSource::Nearest { .. }),
            "{:?}",
            plan.source
        );
        assert!(matches!(plan.best().provenance, Provenance::Nearest { .. }));
        // Nothing measured: the cost model, and the plan says so.
        let caps = TargetCaps::of(t);
        let plan = rank_unmeasured(&near, &[], &caps, None).unwrap();
        assert_eq!(plan.source, PlanSource::CostModel { nearest: None });
        assert!(plan.iter().all(|r| r.provenance == Provenance::CostModel));
    }
}
