//! `kiln-tools regret`: how good the fallback is for problems missing from the find-db.
//!
//! The fallback's model is rebuilt from the committed find-db and perf-db with some problems
//! held out; each held-out problem is then ranked by the fallback alone (`rank_unmeasured`,
//! without its own records), and its pick is looked up in the log of the find run, which holds
//! the measured time of every solver and perf config on every problem. Regret = time of the
//! pick / time of the fastest measured candidate. Two ways of holding out:
//!
//! - leave one network out: every problem of one network (ResNet-50, MobileNetV2, the decoder,
//!   the detector) is held out at once, the model built from problems no list of that network
//!   names; the honest test for a network kiln was never tuned on;
//! - five folds by key hash: every problem held out once, the model built from the rest.
//!
//! And networks never measured into the DBs (`--unseen`, DenseNet-121, EfficientNet-B0 and
//! GoogLeNet): their problems ranked with every committed problem in the model, as a device
//! running these DBs ranks them, their picks looked up in the log of a find run on them into
//! a scratch DB (`data/heldout/`).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use kiln::resolve::{rank_unmeasured, Ranked};
use kiln::solvers::TargetCaps;
use kiln::ConvProblem;
use kiln_embed::finddb::FindDb;
use kiln_embed::kdbbuild::Manifest;
use kiln_embed::measured::{self as neighbours, Measured};
use kiln_embed::perfdb::PerfDb;
use kiln_format::measured::{MeasuredProblem, MeasuredSolver};

use super::find::read_problem_list;
use crate::CliResult;

/// Arguments of `kiln-tools regret`.
#[derive(Args)]
pub struct RegretArgs {
    /// The find run's log (problem, solver, params, time ms, error, ok; tab-separated).
    #[arg(long, default_value = "data/find-logs/sm_90_132.tsv.zst")]
    log: PathBuf,
    /// Target folder holding the measured find-db and perf-db.
    #[arg(long, default_value = "targets/sm_90_132")]
    target_dir: PathBuf,
    /// Problem lists, one per network (their file names name the networks).
    #[arg(long, num_args = 1.., default_values = ["ci/problems/resnet50.txt", "ci/problems/mobilenet_v2.txt", "ci/problems/vae_decoder.txt", "ci/problems/yolo_detector.txt", "ci/problems/mobilenet_v3_se.txt"])]
    problems: Vec<PathBuf>,
    /// Networks never measured into the DBs (their problem lists) and the log of a find run on
    /// them into a scratch DB: their problems are ranked by the fallback with every committed
    /// problem in the model, as a device with these DBs would rank them.
    #[arg(long, num_args = 1.., default_values = ["data/heldout/densenet121.txt", "data/heldout/efficientnet_b0.txt", "data/heldout/googlenet.txt", "data/heldout/grouped_unseen.txt", "data/heldout/video_unseen.txt"])]
    unseen: Vec<PathBuf>,
    /// The find log of the `--unseen` networks.
    #[arg(long, default_value = "data/find-logs/heldout.tsv.zst")]
    unseen_log: PathBuf,
    /// kernels/manifest.toml.
    #[arg(long, default_value = "kernels/manifest.toml")]
    manifest: PathBuf,
    /// Write the Markdown report here too.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write every unseen network's problems here too, one per line (network, problem, pick,
    /// fastest measured, regret; tab-separated).
    #[arg(long)]
    outcomes: Option<PathBuf>,
    /// Fail when a split's median regret is above this.
    #[arg(long, default_value_t = 1.15)]
    max_median: f64,
    /// Fail when a split's 90th-percentile regret is above this.
    #[arg(long, default_value_t = 1.5)]
    max_p90: f64,
}

/// Measured times of one problem: (solver, params) -> ms, passing candidates only.
type Times = HashMap<(String, String), f64>;

/// Reads the find log; errors name file:line.
fn read_log(path: &Path) -> Result<BTreeMap<String, Times>, Box<dyn std::error::Error>> {
    let text = kiln_embed::input::read_text(path)?;
    let mut out: BTreeMap<String, Times> = BTreeMap::new();
    let mut last_key = "";
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        let bad = |what: &str| format!("{}:{}: {what}: '{line}'", path.display(), i + 1);
        if f.len() != 6 {
            return Err(bad("expected 6 tab-separated fields").into());
        }
        let time: f64 = f[3].parse().map_err(|_| bad("time is not a number"))?;
        if f[0] != last_key {
            // A run measures every candidate of a problem in one block of lines: a problem
            // measured again (a new solver, a changed kernel) keeps only its latest run, as the
            // find-db does; a config measured before and since removed is no candidate.
            out.insert(f[0].to_string(), Times::new());
            last_key = f[0];
        }
        if f[5] == "true" && time.is_finite() {
            if let Some(times) = out.get_mut(f[0]) {
                times.insert((f[1].to_string(), f[2].to_string()), time);
            }
        }
    }
    Ok(out)
}

/// One held-out problem's outcome.
#[derive(Clone)]
struct Outcome {
    key: String,
    pick: String,
    regret: f64,
    baseline_regret: f64,
    /// Regret had the pick's solver run its best perf config: the part due to the solver.
    solver_regret: f64,
    best: String,
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Summary of a set of regrets: median, p90, max, share within 10% of the best.
fn summary(regrets: &[f64]) -> (f64, f64, f64, f64) {
    let mut v = regrets.to_vec();
    v.sort_by(f64::total_cmp);
    let within = v.iter().filter(|&&r| r <= 1.10).count() as f64 / v.len().max(1) as f64;
    (
        percentile(&v, 0.5),
        percentile(&v, 0.9),
        v.last().copied().unwrap_or(f64::NAN),
        within,
    )
}

/// A summary row's figures after the problem count: median, p90, max, share within 10% of the
/// best, the cost model's median and p90, and the solver's and the config's parts of p90.
fn figures(outcomes: &[Outcome]) -> String {
    let regrets: Vec<f64> = outcomes.iter().map(|o| o.regret).collect();
    let base: Vec<f64> = outcomes.iter().map(|o| o.baseline_regret).collect();
    let (med, p90, max, within) = summary(&regrets);
    let (bmed, bp90, _, _) = summary(&base);
    let solver: Vec<f64> = outcomes.iter().map(|o| o.solver_regret).collect();
    let config: Vec<f64> = outcomes
        .iter()
        .map(|o| o.regret / o.solver_regret)
        .collect();
    let (_, sp90, _, _) = summary(&solver);
    let (_, cp90, _, _) = summary(&config);
    format!(
        "{med:.3} | {p90:.3} | {max:.2} | {:.0}% | {bmed:.3} | {bp90:.3} | {sp90:.3} | {cp90:.3}",
        within * 100.0
    )
}

/// Keys as a comma-separated list of Markdown code spans.
fn code_list(keys: &std::collections::BTreeSet<String>) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The measured DBs and what judges applicability: the fallback's inputs.
struct Dbs<'a> {
    find: &'a FindDb,
    perf: &'a PerfDb,
    manifest: &'a Manifest,
    caps: &'a TargetCaps,
}

/// Ranks each of `test` with a model of `train` and looks its pick up in the log; a problem
/// whose pick the log never timed goes to `unmeasured` instead.
fn evaluate(
    dbs: &Dbs,
    unmeasured: &mut std::collections::BTreeSet<String>,
    log: &BTreeMap<String, Times>,
    test: &[&str],
    in_train: impl Fn(&str) -> bool,
) -> Result<Vec<Outcome>, Box<dyn std::error::Error>> {
    let Dbs {
        find,
        perf,
        manifest,
        caps,
    } = *dbs;
    let train = FindDb {
        records: find
            .records
            .iter()
            .filter(|r| in_train(&r.key))
            .cloned()
            .collect(),
    };
    // Leaked: the resolver ranks with a `'static` model, as embedded ones are (a few folds
    // per run of this tool).
    let owned: &'static [Measured] = neighbours::build(&train, Some(perf), manifest).leak();
    let solvers: &'static [Vec<MeasuredSolver<'static>>] = owned
        .iter()
        .map(|m| {
            m.solvers
                .iter()
                .map(|s| MeasuredSolver {
                    solver: &s.id,
                    time_ms: s.time_ms as f32,
                    params: &s.params,
                })
                .collect()
        })
        .collect::<Vec<_>>()
        .leak();
    let model: Vec<MeasuredProblem<'static>> = owned
        .iter()
        .zip(solvers)
        .map(|(m, s)| MeasuredProblem {
            key: &m.key,
            class: m.class,
            features: m.features,
            macs: m.macs,
            solvers: s,
        })
        .collect();
    let tf32: std::collections::HashSet<&str> = manifest
        .solvers
        .iter()
        .filter(|s| kiln::MathMode::from_name(&s.math) == Some(kiln::MathMode::AllowTf32))
        .map(|s| s.id.as_str())
        .collect();
    let mut out = Vec::new();
    for &key in test {
        let times = log
            .get(key)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| format!("{key}: no passing measurement in the log"))?;
        let p = ConvProblem::from_find_db_key(key).map_err(|e| format!("{key}: {e}"))?;
        // A key is a problem in the default math mode: TF32 solvers measured on it (for
        // problems that opt in) are no candidates.
        let times: Times = times
            .iter()
            .filter(|((s, _), _)| !tf32.contains(s.as_str()))
            .map(|(c, t)| (c.clone(), *t))
            .collect();
        let (best_c, best) = times
            .iter()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(c, t)| (c.clone(), *t))
            .ok_or("empty times")?;
        // Ok(None): the pick is a config the log never timed on this problem (one added to
        // the manifest after the problem was measured).
        let time_of = |ranked: &[Ranked]| -> Result<Option<(String, f64, f64)>, String> {
            let c = ranked
                .first()
                .ok_or_else(|| format!("{key}: the fallback ranks nothing"))?;
            let (id, params) = (c.variant.solver.id(), c.variant.params);
            let name = format!("{id} [{params}]");
            let Some(t) = times.get(&(id.to_string(), params.to_string())) else {
                return Ok(None);
            };
            let solver_best = times
                .iter()
                .filter(|((s, _), _)| s == id)
                .map(|(_, t)| *t)
                .fold(f64::INFINITY, f64::min);
            Ok(Some((name, *t, solver_best)))
        };
        let plan = rank_unmeasured(&p, &model, caps, None)?;
        let base_plan = rank_unmeasured(&p, &[], caps, None)?;
        let (Some((pick, t, t_solver)), Some((_, t_base, _))) =
            (time_of(&plan)?, time_of(&base_plan)?)
        else {
            unmeasured.insert(key.to_string());
            continue;
        };
        out.push(Outcome {
            key: key.to_string(),
            pick,
            regret: t / best,
            baseline_regret: t_base / best,
            solver_regret: t_solver / best,
            best: format!("{} [{}]", best_c.0, best_c.1),
        });
    }
    Ok(out)
}

/// `kiln-tools regret`.
pub fn run(a: &RegretArgs) -> CliResult {
    // A gate that cannot fail is no gate: thresholds must be numbers of at least 1.
    for (name, v) in [("--max-median", a.max_median), ("--max-p90", a.max_p90)] {
        if !(v.is_finite() && v >= 1.0) {
            return Err(format!("{name} {v}: a regret threshold is a finite number >= 1").into());
        }
    }
    let log = read_log(&a.log)?;
    let base = a
        .target_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{}: not a target folder", a.target_dir.display()))?;
    let find = FindDb::read(&a.target_dir.join(format!("{base}.HIP.fdb.txt")))?;
    let perf = PerfDb::read(&a.target_dir.join(format!("{base}.db.txt")))?;
    let manifest = Manifest::load(&a.manifest)?;
    // Applicability is judged for the target the DBs were measured on.
    let caps = TargetCaps::of(kiln::named_target(base)?);
    // Network of each problem list, from its file name.
    let mut networks: Vec<(String, Vec<String>)> = Vec::new();
    for file in &a.problems {
        let name = file
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let keys = read_problem_list(file)?
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        networks.push((name, keys));
    }
    let all: Vec<&str> = find.records.iter().map(|r| r.key.as_str()).collect();
    let mut r = String::new();
    writeln!(r, "# Fallback regret on held-out problems ({base})\n")?;
    writeln!(
        r,
        "For a problem missing from the find-db, kiln ranks solvers by the nearest measured problem (same type, layout, direction, plain or fused, and dense, depthwise or grouped; log2-scale shape features) and takes its tuned perf configs. Here the model is rebuilt from `{}` and `{}` without the held-out problems, each held-out problem ranked by the fallback alone, and its pick's time read from the find run's log (`{}`, every solver and perf config measured on the H100 and H200). Regret = time of the pick / time of the fastest measured candidate. `cost model` = the fallback with no measured problems (kiln's work/throughput estimate and default perf configs), for comparison. Generated by `kiln-tools regret`.\n",
        a.target_dir.join(format!("{base}.HIP.fdb.txt")).display(),
        a.target_dir.join(format!("{base}.db.txt")).display(),
        a.log.display()
    )?;
    writeln!(r, "`solver part` = regret had the picked solver run its best perf config; `config part` = regret / solver part.\n")?;
    writeln!(r, "| held out | problems | median | p90 | max | within 10% of best | cost model median | cost model p90 | solver part p90 | config part p90 |")?;
    writeln!(r, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    let mut failures = Vec::new();
    let mut worst: Vec<Outcome> = Vec::new();
    let row = |label: &str, outcomes: &[Outcome], r: &mut String| -> CliResult {
        writeln!(
            r,
            "| {label} | {} | {} |",
            outcomes.len(),
            figures(outcomes)
        )?;
        Ok(())
    };
    let dbs = Dbs {
        find: &find,
        perf: &perf,
        manifest: &manifest,
        caps: &caps,
    };
    // Problems whose pick the log never timed: left out of the figures, and named.
    let mut unmeasured = std::collections::BTreeSet::new();
    // Leave one network out.
    let mut lono = Vec::new();
    for (name, keys) in &networks {
        let test: Vec<&str> = keys.iter().map(String::as_str).collect();
        let outcomes = evaluate(&dbs, &mut unmeasured, &log, &test, |k| {
            !keys.iter().any(|t| t == k)
        })?;
        row(&format!("network {name}"), &outcomes, &mut r)?;
        lono.extend(outcomes);
    }
    row("**all networks, one left out at a time**", &lono, &mut r)?;
    let (med, p90, _, _) = summary(&lono.iter().map(|o| o.regret).collect::<Vec<_>>());
    if lono.is_empty() {
        return Err("no held-out problem was evaluated (empty problem lists?)".into());
    }
    if med > a.max_median || p90 > a.max_p90 {
        failures.push(format!(
            "leave-one-network-out: median {med:.3}, p90 {p90:.3}"
        ));
    }
    // Five folds by key hash.
    let fold = |k: &str| fnv1a(k) % 5;
    let mut folds = Vec::new();
    for f in 0..5 {
        let test: Vec<&str> = all.iter().copied().filter(|k| fold(k) == f).collect();
        folds.extend(evaluate(&dbs, &mut unmeasured, &log, &test, |k| {
            fold(k) != f
        })?);
    }
    row("**five folds (every problem once)**", &folds, &mut r)?;
    let (med, p90, _, _) = summary(&folds.iter().map(|o| o.regret).collect::<Vec<_>>());
    if med > a.max_median || p90 > a.max_p90 {
        failures.push(format!("five folds: median {med:.3}, p90 {p90:.3}"));
    }
    // Networks the DBs never measured, against the whole model.
    let unseen_log = read_log(&a.unseen_log)?;
    let mut unseen_rows = Vec::new();
    let mut shared_with_lists = std::collections::BTreeSet::new();
    for file in &a.unseen {
        let name = file.file_stem().and_then(|n| n.to_str()).unwrap_or("?");
        let keys: Vec<String> = read_problem_list(file)?
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        // A layer another network shares (DenseNet's and GoogLeNet's first layer is
        // ResNet-50's) runs from its own find-db record, not the fallback.
        let (shared, keys): (Vec<String>, Vec<String>) =
            keys.into_iter().partition(|k| all.contains(&k.as_str()));
        shared_with_lists.extend(shared);
        for batch in [1, 32] {
            let test: Vec<&str> = keys
                .iter()
                .map(String::as_str)
                .filter(|k| ConvProblem::from_find_db_key(k).is_ok_and(|p| p.n() == batch))
                .collect();
            let outcomes = evaluate(&dbs, &mut unmeasured, &unseen_log, &test, |_| true)?;
            unseen_rows.push((format!("{name} N={batch}"), outcomes));
        }
    }
    worst.extend(lono);
    worst.sort_by(|x, y| y.regret.total_cmp(&x.regret));
    writeln!(
        r,
        "\nTargets: median <= {}, p90 <= {}.\n",
        a.max_median, a.max_p90
    )?;
    if !unmeasured.is_empty() {
        writeln!(
            r,
            "Left out of the figures where the fallback picked a perf config the log never timed on them (added to the manifest after they were measured): {}.\n",
            code_list(&unmeasured)
        )?;
    }
    if !unseen_rows.is_empty() {
        writeln!(r, "## Networks never measured into the DBs\n")?;
        writeln!(
            r,
            "Each problem ranked by the fallback with every committed problem in the model (what a device running these DBs picks), the pick's time read from a find run into a scratch DB (`{}`). `geomean` = per-layer geometric mean of pick / best.\n",
            a.unseen_log.display()
        )?;
        if !shared_with_lists.is_empty() {
            writeln!(
                r,
                "Left out: layers the find-db has (from another network's list), which run from their own record: {}.\n",
                code_list(&shared_with_lists)
            )?;
        }
        writeln!(r, "| network | problems | geomean | median | p90 | max | within 10% of best | cost model median | cost model p90 | solver part p90 | config part p90 |")?;
        writeln!(r, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")?;
        // The networks together at each batch: the figure for the fallback.
        let pooled: Vec<(String, Vec<Outcome>)> = [1, 32]
            .iter()
            .map(|batch| {
                let suffix = format!(" N={batch}");
                let all = unseen_rows
                    .iter()
                    .filter(|(label, _)| label.ends_with(&suffix))
                    .flat_map(|(_, o)| o.iter().cloned())
                    .collect();
                (format!("**all of them, N={batch}**"), all)
            })
            .collect();
        for (label, outcomes) in unseen_rows.iter().chain(&pooled) {
            let logs: f64 = outcomes.iter().map(|o| o.regret.ln()).sum();
            let geomean = (logs / outcomes.len().max(1) as f64).exp();
            writeln!(
                r,
                "| {label} | {} | {geomean:.3} | {} |",
                outcomes.len(),
                figures(outcomes)
            )?;
        }
        writeln!(r)?;
    }
    if let Some(path) = &a.outcomes {
        let mut tsv = String::from("network\tproblem\tpick\tbest\tregret\n");
        for (label, outcomes) in &unseen_rows {
            for o in outcomes {
                writeln!(
                    tsv,
                    "{label}\t{}\t{}\t{}\t{:.4}",
                    o.key, o.pick, o.best, o.regret
                )?;
            }
        }
        std::fs::write(path, tsv).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    let mut unseen_worst: Vec<&Outcome> = unseen_rows.iter().flat_map(|(_, o)| o).collect();
    unseen_worst.sort_by(|x, y| y.regret.total_cmp(&x.regret));
    for (title, outcomes) in [
        ("leave one network out", worst.iter().collect::<Vec<_>>()),
        ("networks never measured", unseen_worst),
    ] {
        if outcomes.is_empty() {
            continue;
        }
        writeln!(r, "## Worst picks, {title}\n")?;
        writeln!(
            r,
            "| problem | fallback's pick | fastest measured | regret |"
        )?;
        writeln!(r, "|---|---|---|---:|")?;
        for o in outcomes.iter().take(10) {
            writeln!(
                r,
                "| `{}` | {} | {} | {:.2} |",
                o.key, o.pick, o.best, o.regret
            )?;
        }
        writeln!(r)?;
    }
    super::bench::finish(&r, a.out.as_deref())?;
    if !failures.is_empty() {
        return Err(format!(
            "fallback regret above target (median <= {}, p90 <= {}): {}",
            a.max_median,
            a.max_p90,
            failures.join("; ")
        )
        .into());
    }
    Ok(())
}
