//! `kiln-tools find` and `kiln-tools tune` (kiln's Tuna): every applicable solver and perf
//! config of each listed problem measured on the device ([`crate::tune::measure`]), the winners
//! merged into the target's find-db and perf-db (MIOpen's formats), saved after every problem,
//! so a stopped run resumes.

use std::path::{Path, PathBuf};

use clap::Args;
use kiln::ConvProblem;
use kiln_embed::perfdb::PerfDb;

use super::{write_atomic, DeviceArgs};
use crate::CliResult;

#[derive(Args)]
pub struct FindArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// Problem lists: one find-db key per line, '#' comments (ci/problems/*.txt).
    #[arg(long, num_args = 1.., required_unless_present_any = ["worker", "models"])]
    problems: Vec<PathBuf>,
    /// Measure a network's convolutions, as it runs them (fused): a built-in network
    /// (resnet50, ...) or a definition file (`kiln net show`, `kiln-tools net import`).
    #[arg(long = "model", num_args = 1..)]
    models: Vec<String>,
    /// Batch sizes of --model's problems.
    #[arg(long = "batch", value_delimiter = ',', default_value = "1,32")]
    batches: Vec<u32>,
    /// Data type of --model's problems: FP16, BF16, FP32.
    #[arg(long = "model-type", default_value = "FP16")]
    model_type: String,
    /// Measure on several GPUs at once: `all`, or devices separated by commas (cuda:0,cuda:1),
    /// one worker process each, fed from one queue; the DBs get the same bytes whatever the
    /// number of workers.
    #[arg(long, conflicts_with = "device")]
    devices: Option<String>,
    /// Worker processes per device of --devices (default 1; or, with --from-log, in all: the
    /// queue checked without a GPU).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    workers: Option<u32>,
    /// Serve as one worker of a --devices run: problems on stdin, measurements on stdout.
    #[arg(long, hide = true)]
    worker: bool,
    /// Where the target's <base>.HIP.fdb.txt and <base>.db.txt are read and merged (default targets/<base>).
    #[arg(long)]
    db_dir: Option<PathBuf>,
    /// Append every measurement here (tab-separated).
    #[arg(long)]
    log: Option<PathBuf>,
    /// Timed repeats per candidate.
    #[arg(long, default_value_t = 10)]
    pub(crate) repeats: usize,
    /// Time each candidate with L2 evicted before each call (a 128 MiB write, its own time
    /// subtracted), as a network runs its layers: their weights and earlier activations come
    /// from device memory, not from L2 as in back-to-back replays. Launches then wait for the
    /// eviction (no programmatic dependent launch).
    #[arg(long)]
    pub(crate) cold_l2: bool,
    /// Measure again problems the find-db already has.
    #[arg(long)]
    force: bool,
    /// Measure again problems whose find-db record lacks a solver that applies to them now
    /// (a record made before the solver existed). Resumable, unlike --force.
    #[arg(long)]
    refresh: bool,
    /// Only problems in these layouts (NCHW, NHWC, ...); none = all.
    #[arg(long = "layout", num_args = 1..)]
    layouts: Vec<String>,
    /// Only problems of these data types (FP32, FP16, BF16); none = all.
    #[arg(long = "type", num_args = 1..)]
    types: Vec<String>,
    /// Measure FP32 problems with TF32 allowed, so their records also rank the TF32 solvers
    /// (which the runtime considers only for problems that opt in).
    #[arg(long)]
    tf32: bool,
    /// Record the listed problems from this find log (an earlier run's `--log`, made on
    /// another machine) instead of measuring: no GPU needed, `--target` names the target.
    /// Where the log holds a variant more than once, its last line wins.
    #[arg(long, requires = "target")]
    from_log: Option<PathBuf>,
    /// The target whose DBs `--from-log` writes (`sm_90_132`).
    #[arg(long, requires = "from_log")]
    target: Option<String>,
    /// Measure only shard I of N (0 <= I < N) of the listed problems, a stable partition by
    /// perf-db key, into --db-dir, which records the device, driver and kiln version; N jobs
    /// (hosts, array tasks) cover the lists once; `kiln-tools db merge` joins their directories.
    #[arg(long, value_parser = crate::shard::Shard::parse, requires = "db_dir")]
    shard: Option<crate::shard::Shard>,
}

impl FindArgs {
    /// How each candidate is timed.
    pub(crate) fn timed(&self) -> crate::tune::Timed {
        crate::tune::Timed {
            repeats: self.repeats,
            cold_l2: self.cold_l2,
        }
    }
}

/// Where `find` takes its measurements from.
pub enum Source<'a> {
    /// Measured now, on this device.
    Device(Box<kiln::context::Context>),
    /// Read from an earlier run's find log (`--from-log`), and that log's file.
    Log(Vec<LogLine>, &'a Path),
    /// Measured by worker processes (`--devices`, `--workers`).
    Workers(super::find_workers::Pool),
}

/// One line of a find log: key, solver, perf config, median ms, relative error, ok.
pub struct LogLine {
    /// The problem's find-db key.
    pub key: String,
    /// Solver id.
    pub solver: String,
    /// Perf config (empty for none).
    pub params: String,
    /// Median ms.
    pub time_ms: f64,
    /// Relative error against the reference.
    pub error: f64,
    /// Whether it ran within tolerance.
    pub ok: bool,
}

/// Reads a find log (`--log`'s tab-separated lines; `.zst` as committed); errors name
/// file:line.
fn read_find_log(file: &Path) -> Result<Vec<LogLine>, Box<dyn std::error::Error>> {
    let text = kiln_embed::input::read_text(file)?;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        lines.push(parse_log_line(line, &|| {
            format!("{}:{}", file.display(), i + 1)
        })?);
    }
    Ok(lines)
}

/// One find-log line; `at` names where it came from in errors.
pub fn parse_log_line(
    line: &str,
    at: &dyn Fn() -> String,
) -> Result<LogLine, Box<dyn std::error::Error>> {
    let f: Vec<&str> = line.split('\t').collect();
    let [key, solver, params, ms, error, ok] = f.as_slice() else {
        return Err(format!(
            "{}: expected 6 tab-separated fields, found {}",
            at(),
            f.len()
        )
        .into());
    };
    let num = |v: &str, what: &str| -> Result<f64, String> {
        v.parse::<f64>()
            .map_err(|_| format!("{}: {what} {v:?} is not a number", at()))
    };
    Ok(LogLine {
        key: key.to_string(),
        solver: solver.to_string(),
        params: params.to_string(),
        time_ms: num(ms, "time")?,
        error: num(error, "error")?,
        ok: match *ok {
            "true" => true,
            "false" => false,
            other => return Err(format!("{}: ok {other:?} is not true or false", at()).into()),
        },
    })
}

/// `p`'s measurements from a find log: the last line of each variant that the target's
/// solvers still offer for `p` (a config since removed from the manifest is dropped).
pub fn logged_measurements(
    log: &[LogLine],
    key: &str,
    p: &ConvProblem,
    caps: &kiln::solvers::TargetCaps,
) -> Vec<crate::tune::Measurement> {
    let mut out: Vec<crate::tune::Measurement> = Vec::new();
    for l in log.iter().filter(|l| l.key == key) {
        let Some(solver) = kiln::solvers::by_id(&l.solver) else {
            continue;
        };
        let params = if l.params.is_empty() {
            Some("")
        } else {
            solver.offered_params(p, caps).find(|o| **o == l.params)
        };
        let Some(params) = params else { continue };
        let m = crate::tune::Measurement {
            variant: kiln::resolve::Variant { solver, params },
            time_ms: l.time_ms,
            error: l.error,
            ok: l.ok,
        };
        match out
            .iter_mut()
            .find(|o| o.variant.solver.id() == solver.id() && o.variant.params == params)
        {
            Some(o) => *o = m,
            None => out.push(m),
        }
    }
    out
}

/// A problem list (`ci/problems/*.txt`): one find-db key per line, `#` comments; errors name
/// file:line (the appliance's reader, so both binaries apply the same rules).
pub fn read_problem_list(
    file: &Path,
) -> Result<Vec<(String, ConvProblem)>, Box<dyn std::error::Error>> {
    Ok(kiln::harness::problem_list::read(file)?)
}

/// Records in shard directory `dir` where its records are measured, or refuses a directory
/// already measured elsewhere (another device, driver, kiln or shard), naming the field.
fn record_shard(
    dir: &Path,
    base: &str,
    shard: crate::shard::Shard,
    source: &Source,
    a: &FindArgs,
) -> Result<(), Box<dyn std::error::Error>> {
    use crate::shard::Provenance;
    let (_, device, driver) = source_identity(source, a)?;
    let now = Provenance {
        target: base.to_string(),
        device,
        driver,
        kiln: env!("CARGO_PKG_VERSION").to_string(),
        shard,
    };
    let file = Provenance::path(dir, base);
    if file.exists() {
        let before = Provenance::read(&file)?;
        if let Some((field, was, is)) = before.differs(&now) {
            return Err(format!(
                "{}: this shard directory was measured with {field} {was:?}, this run has {is:?}: give another --db-dir",
                dir.display()
            )
            .into());
        }
        if before.shard != shard {
            return Err(format!(
                "{}: this directory is shard {}, not {shard}: give another --db-dir",
                dir.display(),
                before.shard
            )
            .into());
        }
        return Ok(());
    }
    write_atomic(&file, now.to_text())?;
    Ok(())
}

/// What became of one problem: its measurements, or why it was skipped.
pub enum Outcome {
    /// Every variant measured (or recorded from the log).
    Measured(Vec<crate::tune::Measurement>),
    /// Not measured, and why (no kiln solver runs it, or the log lacks it).
    Skipped(String),
}

/// Measures problem `p` (the `i`-th to measure) from `source`.
pub fn measure_one(
    source: &Source,
    key: &str,
    p: &ConvProblem,
    caps: &kiln::solvers::TargetCaps,
    timed: crate::tune::Timed,
    i: usize,
) -> Result<Outcome, Box<dyn std::error::Error>> {
    // A problem no kiln solver runs (INT8, backward, ...) is skipped, not fatal. A gate on x
    // or a pool's partial sums (which the reference solver does not fuse; the CPU reference
    // checks them) count as run where the problem without them is.
    let reference = kiln::solvers::by_id(kiln::solvers::REFERENCE_SOLVER)
        .ok_or("the reference solver is not in the manifest")?;
    let plain = p.with_fusion(p.fusion().without_x_scale().without_pool())?;
    if let Err(why) = reference.applicable(&plain, caps, "") {
        return Ok(Outcome::Skipped(why.to_string()));
    }
    Ok(match source {
        Source::Device(ctx) => {
            Outcome::Measured(crate::tune::measure(ctx, p, timed, 1 + i as u64)?)
        }
        Source::Log(log, _) => {
            let ms = logged_measurements(log, key, p, caps);
            if ms.is_empty() {
                Outcome::Skipped("not in the log".into())
            } else {
                Outcome::Measured(ms)
            }
        }
        Source::Workers(_) => return Err("a worker pool measures through its workers".into()),
    })
}

/// The convolution problems of `--model`'s networks (fused, as each network runs them) at each
/// `--batch`, keyed; errors name the network, or the file and line.
fn model_problems(a: &FindArgs) -> Result<Vec<(String, ConvProblem)>, Box<dyn std::error::Error>> {
    let dtype = kiln::net::data_type(&a.model_type).ok_or_else(|| {
        format!(
            "--model-type {:?}: expected FP16, BF16 or FP32",
            a.model_type
        )
    })?;
    let mut out = Vec::new();
    for model in &a.models {
        let def = match kiln::net::models::by_name(model) {
            Some(def) => def,
            None => kiln::harness::net::read_definition(Path::new(model)).map_err(|e| {
                format!(
                    "--model {e} (not a built-in network: {})",
                    kiln::net::models::NAMES.join(", ")
                )
            })?,
        };
        for &batch in &a.batches {
            if batch == 0 {
                return Err("--batch 0: batches are at least 1".into());
            }
            for (_, p) in def
                .conv_problems(batch, dtype)
                .map_err(|e| format!("--model {model}: {e}"))?
            {
                out.push((p.find_db_key().to_string(), p));
            }
        }
    }
    Ok(out)
}

/// A listed problem as `find` measures it: with TF32 allowed where `--tf32` asks.
pub fn as_measured(a: &FindArgs, p: ConvProblem) -> ConvProblem {
    if a.tf32 && p.data_types()[0] == kiln::DataType::Fp32 {
        p.with_math(kiln::MathMode::AllowTf32)
    } else {
        p
    }
}

/// The measurement source of this process: the worker pool (`--devices`, or `--workers` with
/// a log), the log, or the device.
fn open_source(a: &FindArgs) -> Result<Source<'_>, Box<dyn std::error::Error>> {
    if a.devices.is_some() || a.workers.is_some() {
        let workers = a.workers.unwrap_or(1);
        let mut specs: Vec<Vec<String>> = Vec::new();
        match (&a.devices, &a.from_log, &a.target) {
            (Some(_), Some(_), _) => {
                return Err("--devices measures on GPUs; --from-log reads a log: give one".into())
            }
            (Some(list), None, _) => {
                let all: Vec<String> = if list == "all" {
                    kiln::backend::list_devices()
                        .into_iter()
                        .map(|d| d.spec)
                        .collect()
                } else {
                    list.split(',').map(|s| s.trim().to_string()).collect()
                };
                if all.is_empty() || all.iter().any(String::is_empty) {
                    return Err(format!("--devices {list:?}: no devices").into());
                }
                for spec in all {
                    for _ in 0..workers {
                        specs.push(vec!["--device".into(), spec.clone()]);
                    }
                }
            }
            (None, Some(log), Some(target)) => {
                for _ in 0..workers {
                    specs.push(vec![
                        "--from-log".into(),
                        log.display().to_string(),
                        "--target".into(),
                        target.clone(),
                    ]);
                }
            }
            (None, _, _) => {
                return Err("--workers needs --devices, or --from-log with --target".into())
            }
        }
        let mut common = vec!["--repeats".to_string(), a.repeats.to_string()];
        if a.tf32 {
            common.push("--tf32".into());
        }
        if a.cold_l2 {
            common.push("--cold-l2".into());
        }
        for s in &mut specs {
            s.extend(common.iter().cloned());
        }
        return Ok(Source::Workers(super::find_workers::Pool::spawn(&specs)?));
    }
    Ok(match &a.from_log {
        Some(f) => Source::Log(read_find_log(f)?, f),
        None => {
            let ctx = a.device.context()?;
            // A launch after the eviction must not start before the eviction ends.
            if a.cold_l2 {
                ctx.set_programmatic_launch(false);
            }
            Source::Device(Box::new(ctx))
        }
    })
}

pub fn run(a: &FindArgs, write_find_db: bool) -> CliResult {
    use std::io::Write as _;
    if a.worker {
        return super::find_workers::serve(a, open_source(a)?);
    }
    // Where the measurements come from: the device, an earlier run's log, or worker processes.
    let source = open_source(a)?;
    let target = source_target(&source, a)?;
    let base = target.basename;
    let dir = a
        .db_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("targets").join(base));
    std::fs::create_dir_all(&dir)?;
    let super::TargetDbs {
        find_path: fdb_path,
        find: mut fdb,
        perf_path: pdb_path,
        perf: mut pdb,
    } = super::TargetDbs::read(&dir, base)?;
    let mut problems: Vec<(String, ConvProblem)> = Vec::new();
    let mut listed = Vec::new();
    for file in &a.problems {
        listed.extend(read_problem_list(file)?);
    }
    listed.extend(model_problems(a)?);
    for (key, p) in listed {
        if !a.layouts.is_empty() && !a.layouts.iter().any(|l| l == p.layouts()[0].name()) {
            continue;
        }
        if !a.types.is_empty() && !a.types.iter().any(|t| t == p.data_types()[0].name()) {
            continue;
        }
        let p = as_measured(a, p);
        if a.shard.is_some_and(|s| !s.owns(p.perf_db_key().as_str())) {
            continue;
        }
        if !problems.iter().any(|(k, _)| *k == key) {
            problems.push((key, p));
        }
    }
    let caps = kiln::solvers::TargetCaps::of(target);
    let stale = |k: &String, p: &ConvProblem| match fdb.records.iter().find(|r| &r.key == k) {
        None => true,
        Some(r) => {
            a.force
                || (a.refresh
                    && kiln::solvers::registered().any(|s| {
                        s.offered_params(p, &caps).next().is_some()
                            && !r.items.iter().any(|i| i.solver == s.id())
                    }))
        }
    };
    let todo: Vec<&(String, ConvProblem)> = problems.iter().filter(|(k, p)| stale(k, p)).collect();
    if let Some(shard) = a.shard {
        record_shard(&dir, base, shard, &source, a)?;
    }
    let origin = match &source {
        Source::Device(ctx) => format!("on {}", ctx.device().info().spec),
        Source::Log(_, file) => format!("from {}", file.display()),
        Source::Workers(pool) => format!("on {}", pool.describe()),
    };
    kiln::outln!(
        "{} problems, {} already measured, {} to measure {origin} ({base})",
        problems.len(),
        problems.len() - todo.len(),
        todo.len(),
    );
    let mut log = match &a.log {
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)?,
        ),
        None => None,
    };
    let bar = indicatif::ProgressBar::new(todo.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    // The DBs as read, and the records of this run by their place in the list: whatever the
    // order measurements finish in (workers), a record already there is replaced in place and
    // new ones follow in list order, so the bytes do not depend on how many measured.
    // Find-db records of keys already there are replaced in place (found through `in_base`);
    // records of new keys wait in `new_find` and follow the base records in list order.
    let base_find_len = fdb.records.len();
    let in_base: std::collections::HashMap<String, usize> = fdb
        .records
        .iter()
        .enumerate()
        .map(|(j, r)| (r.key.clone(), j))
        .collect();
    let base_pdb = pdb.clone();
    let mut new_find: std::collections::BTreeMap<usize, kiln_embed::finddb::FindRecord> =
        Default::default();
    let mut new_perf: std::collections::BTreeMap<usize, kiln_embed::perfdb::PerfRecord> =
        Default::default();
    let mut record = |i: usize, outcome: Outcome| -> Result<(), Box<dyn std::error::Error>> {
        let (key, p) = todo[i];
        let ms = match outcome {
            Outcome::Measured(ms) => ms,
            Outcome::Skipped(why) => {
                bar.println(format!("skipped {key}: {why}"));
                bar.inc(1);
                return Ok(());
            }
        };
        if let Some(f) = log.as_mut() {
            for m in &ms {
                f.write_all(log_line(key, m).as_bytes())?;
            }
        }
        if write_find_db {
            if let Some(rec) = crate::tune::find_record(key, &ms) {
                match in_base.get(&rec.key) {
                    Some(&j) => fdb.records[j] = rec,
                    None => {
                        new_find.insert(i, rec);
                        fdb.records.truncate(base_find_len);
                        fdb.records.extend(new_find.values().cloned());
                    }
                }
                write_atomic(&fdb_path, fdb.to_text())?;
            }
        }
        let pkey = p.perf_db_key();
        if let Some(rec) = crate::tune::perf_record(pkey.as_str(), &ms) {
            new_perf.insert(i, rec);
            pdb = base_pdb.clone();
            pdb.merge(PerfDb {
                records: new_perf.values().cloned().collect(),
            });
            write_atomic(&pdb_path, pdb.to_text())?;
        }
        bar.inc(1);
        Ok(())
    };
    match &source {
        Source::Workers(pool) => {
            let jobs: Vec<(usize, &str)> = todo
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (i, k.as_str()))
                .collect();
            pool.run(&jobs, |i, reply| {
                let (key, p) = todo[i];
                let outcome = match reply {
                    super::find_workers::Reply::Lines(lines) => {
                        Outcome::Measured(logged_measurements(&lines, key, p, &caps))
                    }
                    super::find_workers::Reply::Skipped(why) => Outcome::Skipped(why),
                };
                record(i, outcome)
            })?;
        }
        _ => {
            for (i, (key, p)) in todo.iter().enumerate() {
                bar.set_message(key.clone());
                let outcome = measure_one(&source, key, p, &caps, a.timed(), i)?;
                record(i, outcome)?;
            }
        }
    }
    bar.finish();
    kiln::outln!(
        "find-db {} records -> {}; perf-db {} configs -> {}",
        fdb.records.len(),
        fdb_path.display(),
        pdb.records.len(),
        pdb_path.display()
    );
    Ok(())
}

/// What a source measures on: its target, the device (name, arch, SMs/CUs, or the log's file
/// name) and the driver's major version (`hip`; `none` for a log): what a shard records.
pub fn source_identity(
    source: &Source,
    a: &FindArgs,
) -> Result<(&'static kiln_format::EmbeddedTarget, String, String), Box<dyn std::error::Error>> {
    let target = source_target(source, a)?;
    let (device, driver) = match source {
        Source::Workers(pool) => (pool.device().to_string(), pool.driver().to_string()),
        Source::Device(ctx) => {
            let info = ctx.device().info();
            (
                format!(
                    "{}, {}, {} SMs/CUs",
                    info.name, info.arch, info.compute_units
                ),
                info.driver_version
                    .map_or("hip".to_string(), |(major, _)| major.to_string()),
            )
        }
        Source::Log(_, file) => (
            format!(
                "find log {}",
                file.file_name().unwrap_or_default().to_string_lossy()
            ),
            "none".to_string(),
        ),
    };
    Ok((target, device, driver))
}

/// A measurement as a find-log line (with its newline).
pub fn log_line(key: &str, m: &crate::tune::Measurement) -> String {
    format!(
        "{key}\t{}\t{}\t{}\t{:.3e}\t{}\n",
        m.variant.solver.id(),
        m.variant.params,
        m.time_ms,
        m.error,
        m.ok
    )
}

/// The target the source measures for: the device's, the workers' (all alike), or `--target`'s
/// for a log.
fn source_target(
    source: &Source,
    a: &FindArgs,
) -> Result<&'static kiln_format::EmbeddedTarget, Box<dyn std::error::Error>> {
    let named = |name: &str| {
        kiln::embedded::targets()
            .iter()
            .find(|t| t.basename == name)
            .ok_or_else(|| format!("--target {name}: not a target this build embeds"))
    };
    Ok(match (source, &a.target) {
        (Source::Device(ctx), _) => ctx.target(),
        (Source::Workers(pool), _) => named(pool.target())?,
        (Source::Log(..), Some(name)) => named(name)?,
        (Source::Log(..), None) => return Err("--from-log needs --target".into()),
    })
}
