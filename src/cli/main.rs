//! The `kiln` command line: inspect the embedded targets, resolve problems against them, and
//! work with MIOpen database files.
//!
//! `no_main`: std's start-up reads `/proc/self/maps` (glibc's `pthread_getattr_np`, to place the
//! main thread's stack guard). An appliance binary should open nothing but its libraries, so
//! kiln enters through C's `main` and skips that step; argv still reaches `std::env::args`
//! (glibc hands it to std at load time).
#![no_main]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use kiln::{ConvProblem, ConvSpec, DataType, Direction, Layout};
use kiln_embed::finddb::FindDb;
use kiln_embed::kdb::KernelDb;
use kiln_embed::perfdb::PerfDb;

mod bench;
mod cudnn;
mod regret;

#[derive(Parser)]
#[command(
    name = "kiln",
    version,
    about = "GPU kernels and their tuning databases, baked into one binary"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Embedded targets, per-table record counts, raw vs embedded bytes, provenance.
    Info,
    /// Resolve a convolution problem to ranked solutions and their perf params.
    Resolve(ResolveArgs),
    /// Work with MIOpen database files.
    #[command(subcommand)]
    Db(DbCommand),
    /// Build kernel dbs from kernels/manifest.toml.
    #[command(subcommand)]
    Kdb(KdbCommand),
    /// GPUs found, and the embedded target each maps to.
    Devices,
    /// Run one problem on the GPU with random inputs, checked against a CPU reference (f64).
    Run(RunArgs),
    /// Boot check: every embedded solver and perf config on a problem set, checked; non-zero exit on any failure.
    Selftest(DeviceArgs),
    /// The main job: every ResNet-50 conv layer through kiln (on a GPU: run and verify; without: resolve and verify code objects).
    Demo(DemoArgs),
    /// Cold start inside one process: from a ready context to the first convolution's result, by phase.
    Coldstart(DeviceArgs),
    /// Measure every applicable solver and perf config on the device; write find-db and perf-db.
    Find(FindArgs),
    /// As find, but write only the perf-db (best perf config per problem and solver).
    Tune(FindArgs),
    /// On the GPU: cold start by phase against an NVRTC compile, lookup cost, every ResNet-50 layer against cuDNN.
    Bench(bench::BenchArgs),
    /// Measure the fallback for problems missing from the find-db on problems held out of it: regret = time of its pick / time of the best, from a find run's log.
    Regret(regret::RegretArgs),
}

#[derive(Args)]
struct FindArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// Problem lists: one find-db key per line, '#' comments (ci/problems/*.txt).
    #[arg(long, num_args = 1.., required = true)]
    problems: Vec<PathBuf>,
    /// Where the target's <base>.HIP.fdb.txt and <base>.db.txt are read and merged (default targets/<base>).
    #[arg(long)]
    db_dir: Option<PathBuf>,
    /// Append every measurement here (tab-separated).
    #[arg(long)]
    log: Option<PathBuf>,
    /// Timed repeats per candidate.
    #[arg(long, default_value_t = 10)]
    repeats: usize,
    /// Measure again problems the find-db already has.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
struct DeviceArgs {
    /// cuda:0, cuda://GPU-<uuid>, hip:0, hip://<uuid> (default: KILN_DEVICE, else the first GPU).
    #[arg(long)]
    device: Option<String>,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    problem: ResolveArgs,
    #[command(flatten)]
    device: DeviceArgs,
    /// Timed repeats.
    #[arg(long, default_value_t = 20)]
    repeats: usize,
}

#[derive(Args)]
struct DemoArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// Batch size.
    #[arg(short = 'n', default_value_t = 1)]
    n: u32,
    /// FP32, FP16 or BF16.
    #[arg(long = "type", default_value = "FP32")]
    dtype: String,
    /// NCHW or NHWC.
    #[arg(long, default_value = "NCHW")]
    layout: String,
}

#[derive(Subcommand)]
enum KdbCommand {
    /// Compile every (solver, data type, perf config) for a target into targets/<base>/<base>.kdb.
    Build {
        /// Target basenames; none = every target folder whose target.toml lists a kdb.
        #[arg(long = "target")]
        targets: Vec<String>,
        /// Build into a scratch file and fail if it differs from the committed kdb.
        #[arg(long)]
        check: bool,
        /// The targets folder.
        #[arg(long, default_value = "targets")]
        targets_dir: PathBuf,
        /// The kernels folder.
        #[arg(long, default_value = "kernels")]
        kernels_dir: PathBuf,
    },
}

#[derive(Args)]
struct ResolveArgs {
    /// A find-db key (`64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F`); else use the flags.
    key: Option<String>,
    /// Target basename or alias (default: the only embedded target).
    #[arg(long)]
    target: Option<String>,
    /// Batch size.
    #[arg(short = 'n', default_value_t = 1)]
    n: u32,
    /// Input channels.
    #[arg(short = 'c', default_value_t = 1)]
    c: u32,
    /// Input height.
    #[arg(short = 'H', default_value_t = 1)]
    h: u32,
    /// Input width.
    #[arg(short = 'W', default_value_t = 1)]
    w: u32,
    /// Output channels.
    #[arg(short = 'k', default_value_t = 1)]
    k: u32,
    /// Filter height.
    #[arg(short = 'y', default_value_t = 1)]
    fy: u32,
    /// Filter width.
    #[arg(short = 'x', default_value_t = 1)]
    fx: u32,
    /// Padding height.
    #[arg(short = 'p', default_value_t = 0)]
    pad_h: u32,
    /// Padding width.
    #[arg(short = 'q', default_value_t = 0)]
    pad_w: u32,
    /// Stride height.
    #[arg(short = 'u', default_value_t = 1)]
    stride_h: u32,
    /// Stride width.
    #[arg(short = 'v', default_value_t = 1)]
    stride_w: u32,
    /// Dilation height.
    #[arg(short = 'l', default_value_t = 1)]
    dil_h: u32,
    /// Dilation width.
    #[arg(short = 'j', default_value_t = 1)]
    dil_w: u32,
    /// Group count.
    #[arg(short = 'g', default_value_t = 1)]
    groups: u32,
    /// Direction as MIOpenDriver's -F: 1 forward, 2 backward data, 4 backward weights.
    #[arg(short = 'F', default_value_t = 1)]
    direction: u32,
    /// Spatial dimensions (2 or 3).
    #[arg(long = "spatial_dim", default_value_t = 2)]
    spatial_dim: u8,
    /// Input depth (3-D).
    #[arg(long = "in_d", default_value_t = 1)]
    in_d: u32,
    /// Filter depth (3-D).
    #[arg(long = "fil_d", default_value_t = 1)]
    fil_d: u32,
    /// Padding depth (3-D).
    #[arg(long = "pad_d", default_value_t = 0)]
    pad_d: u32,
    /// Stride depth (3-D).
    #[arg(long = "conv_stride_d", default_value_t = 1)]
    stride_d: u32,
    /// Dilation depth (3-D).
    #[arg(long = "dilation_d", default_value_t = 1)]
    dil_d: u32,
    /// Layout of all tensors: NCHW, NHWC, NCDHW, NDHWC.
    #[arg(long, default_value = "NCHW")]
    layout: String,
    /// Data type: FP32, FP16, BF16, INT8.
    #[arg(long = "type", default_value = "FP32")]
    dtype: String,
}

#[derive(Subcommand)]
enum DbCommand {
    /// Import MIOpen find-db / perf-db / kdb files into targets/<base>/ with sha256 pins.
    Import(ImportArgs),
    /// Parse files fully; report counts, or the first error with file:line.
    Check {
        /// Files (.fdb.txt, .db.txt, .db, .kdb).
        files: Vec<PathBuf>,
    },
    /// Convert between forms: perf-db SQLite <-> text (`sqlite2txt`), find-db v1.0 -> v2.0.
    Convert {
        /// Input file.
        input: PathBuf,
        /// Output file; its name picks the form (.db = SQLite, .db.txt = text, .fdb.txt).
        output: PathBuf,
    },
    /// Statistics: records, solvers, key mix.
    Stats {
        /// A database file.
        file: PathBuf,
    },
}

#[derive(Args)]
struct ImportArgs {
    /// Target basename (`gfx942130`, `sm_90_132`).
    #[arg(long)]
    target: String,
    /// Find-db text file.
    #[arg(long)]
    find_db: Option<PathBuf>,
    /// Perf-db, SQLite or text (stored as text `<base>.db.txt`).
    #[arg(long)]
    perf_db: Option<PathBuf>,
    /// Kernel db.
    #[arg(long)]
    kdb: Option<PathBuf>,
    /// Where the files came from (recorded in target.toml, printed by `kiln info`).
    #[arg(long)]
    origin: String,
    /// Cargo feature aliases to record.
    #[arg(long)]
    alias: Vec<String>,
    /// The targets folder.
    #[arg(long, default_value = "targets")]
    targets_dir: PathBuf,
}

type CliResult = Result<(), Box<dyn std::error::Error>>;

/// C entry point (see the module docs for why not `fn main`).
#[unsafe(no_mangle)]
pub extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    match run() {
        ExitCode::SUCCESS => 0,
        _ => 1,
    }
}

fn run() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info => info(),
        Command::Resolve(args) => resolve(&args),
        Command::Db(DbCommand::Import(args)) => import(&args),
        Command::Db(DbCommand::Check { files }) => check(&files),
        Command::Db(DbCommand::Convert { input, output }) => convert(&input, &output),
        Command::Db(DbCommand::Stats { file }) => stats(&file),
        Command::Devices => devices(),
        Command::Run(a) => run_one(&a),
        Command::Selftest(a) => selftest(&a),
        Command::Demo(a) => demo(&a),
        Command::Coldstart(a) => bench::coldstart(&a),
        Command::Bench(a) => bench::bench(&a),
        Command::Regret(a) => regret::regret(&a),
        Command::Find(a) => find(&a, true),
        Command::Tune(a) => find(&a, false),
        Command::Kdb(KdbCommand::Build {
            targets,
            check,
            targets_dir,
            kernels_dir,
        }) => kdb_build(&targets, check, &targets_dir, &kernels_dir),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kiln: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn human(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else if bytes >= 1 << 10 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

fn info() -> CliResult {
    let targets = kiln::targets();
    println!(
        "kiln {} — {} embedded target(s)",
        env!("CARGO_PKG_VERSION"),
        targets.len()
    );
    for t in targets {
        println!();
        let aliases = if t.aliases.is_empty() {
            String::new()
        } else {
            format!(" (aliases: {})", t.aliases.join(", "))
        };
        println!(
            "{}{}: {} {} with {} {}, {} code objects",
            t.basename,
            aliases,
            t.vendor.name(),
            t.arch,
            t.compute_units,
            if t.vendor == kiln::Vendor::Amd {
                "CUs"
            } else {
                "SMs"
            },
            t.code_object
        );
        println!("  origin: {}", t.origin);
        println!(
            "  {:<8} {:>9} {:>12} {:>12} {:>12} {:>7} {:>9}",
            "table", "records", "raw", "embedded", "decoded", "blocks", "dict"
        );
        let mut raw_total = 0;
        let mut emb_total = 0;
        for (kind, table) in [
            ("find-db", t.find_db),
            ("perf-db", t.perf_db),
            ("kdb", t.kdb),
        ] {
            let Some(table) = table else { continue };
            let s = table.stats()?;
            let raw = t
                .inputs
                .iter()
                .find(|i| i.kind == kind)
                .map(|i| i.bytes)
                .unwrap_or(0);
            raw_total += raw;
            emb_total += s.embedded_bytes as u64;
            println!(
                "  {:<8} {:>9} {:>12} {:>12} {:>12} {:>7} {:>9}",
                kind,
                s.records,
                human(raw),
                human(s.embedded_bytes as u64),
                human(s.decoded_bytes),
                s.blocks,
                human(s.dict_bytes as u64)
            );
        }
        println!(
            "  {:<8} {:>9} {:>12} {:>12}",
            "total",
            "",
            human(raw_total),
            human(emb_total)
        );
        for i in t.inputs {
            println!(
                "  input {} ({}, {} B, {} records)\n    from {}\n    sha256 {}",
                i.name, i.kind, i.bytes, i.records, i.source, i.sha256
            );
        }
    }
    println!("\nbuild provenance:");
    for (k, v) in kiln::build_provenance() {
        println!("  {k}: {v}");
    }
    Ok(())
}

fn pick_target(
    name: Option<&str>,
) -> Result<&'static kiln::EmbeddedTarget, Box<dyn std::error::Error>> {
    match name {
        Some(n) => Ok(kiln::named_target(n)?),
        None => match kiln::targets() {
            [only] => Ok(only),
            all => Err(format!(
                "{} targets are embedded ([{}]); choose one with --target",
                all.len(),
                all.iter()
                    .map(|t| t.basename)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
            .into()),
        },
    }
}

fn problem_from_flags(a: &ResolveArgs) -> Result<ConvProblem, Box<dyn std::error::Error>> {
    let layout = Layout::from_name(&a.layout)
        .ok_or_else(|| format!("unknown layout '{}' (NCHW, NHWC, NCDHW, NDHWC)", a.layout))?;
    let dtype = DataType::from_name(&a.dtype)
        .ok_or_else(|| format!("unknown data type '{}' (FP32, FP16, BF16, INT8)", a.dtype))?;
    let direction = Direction::from_driver_flag(a.direction).ok_or_else(|| {
        format!(
            "-F {}: use 1 (forward), 2 (backward data) or 4 (backward weights)",
            a.direction
        )
    })?;
    // One type for all tensors, as the shipped keys write INT8 convolutions too.
    let types = [dtype; 3];
    let spec = ConvSpec {
        spatial_dims: a.spatial_dim,
        n: a.n,
        c: a.c,
        k: a.k,
        input: [a.in_d, a.h, a.w],
        filter: [a.fil_d, a.fy, a.fx],
        pad: [a.pad_d, a.pad_h, a.pad_w],
        stride: [a.stride_d, a.stride_h, a.stride_w],
        dilation: [a.dil_d, a.dil_h, a.dil_w],
        groups: a.groups,
        layouts: [layout; 3],
        data_types: types,
        cast_types: [None; 3],
        direction,
        bias: 0,
    };
    Ok(ConvProblem::new(spec)?)
}

fn resolve(a: &ResolveArgs) -> CliResult {
    let target = pick_target(a.target.as_deref())?;
    let problem = match &a.key {
        Some(key) => ConvProblem::from_find_db_key(key).map_err(|e| kiln::Error::BadKey {
            key: key.clone(),
            source: e,
        })?,
        None => problem_from_flags(a)?,
    };
    println!(
        "target:         {} ({} {} CUs/SMs)",
        target.basename, target.arch, target.compute_units
    );
    println!("find-db key:    {}", problem.find_db_key());
    println!("perf-db key:    {}", problem.perf_db_key());
    println!("network config: {}", problem.network_config());
    match target.find_solutions(&problem)? {
        None => {
            println!(
                "not in the find-db of {}: no measured solution for this problem",
                target.basename
            );
            match kiln_format::heuristic::nearest(target.neighbours, &problem) {
                Some((m, d)) if d <= kiln_format::heuristic::NEAR_DISTANCE => println!(
                    "nearest measured problem: {} (distance {d:.1}); its solver order and perf configs rank this one",
                    m.key
                ),
                Some((m, d)) => println!(
                    "nearest measured problem: {} (distance {d:.1}, beyond {}): the cost model ranks this one",
                    m.key,
                    kiln_format::heuristic::NEAR_DISTANCE
                ),
                None => println!("no measured problem of this type and layout: the cost model ranks this one"),
            }
        }
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
                    kiln_format::records::format_g6(s.time_ms),
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
    match kiln::context::rank(target, &problem) {
        Ok(plan) => {
            println!("kiln's plan (what kiln runs, best first):");
            for c in plan {
                println!(
                    "  {:<22} params {:<10} {:>9.4} ms  ({:?})",
                    c.solver.id, c.params, c.time_ms, c.ranking
                );
            }
        }
        Err(e) => println!("kiln's plan: {e}"),
    }
    Ok(())
}

fn sha256_hex(path: &Path) -> Result<String, Box<dyn std::error::Error>> {
    Ok(kiln_embed::fetch::sha256_file(path)?)
}

fn import(a: &ImportArgs) -> CliResult {
    let id = kiln::TargetId::parse_basename(&a.target)?;
    let dir = a.targets_dir.join(&a.target);
    std::fs::create_dir_all(&dir)?;
    let base = &a.target;
    let mut files = kiln_embed::target::TargetFiles::default();
    let mut pins = std::collections::BTreeMap::new();
    if let Some(src) = &a.find_db {
        let db = FindDb::read(src)?;
        let name = format!("{base}.HIP.fdb.txt");
        let out = dir.join(&name);
        // Written back in v2.0 form (legacy v1.0 items converted); v2.0 input is copied as is.
        let text = std::fs::read_to_string(src)?;
        let normalized = db.to_text();
        std::fs::write(&out, if text == normalized { text } else { normalized })?;
        println!("find-db: {} records -> {}", db.records.len(), out.display());
        pins.insert(name.clone(), sha256_hex(&out)?);
        files.find_db = Some(name);
    }
    if let Some(src) = &a.perf_db {
        let db = PerfDb::read(src)?;
        let name = format!("{base}.db.txt");
        let out = dir.join(&name);
        std::fs::write(&out, db.to_text())?;
        println!("perf-db: {} configs -> {}", db.records.len(), out.display());
        pins.insert(name.clone(), sha256_hex(&out)?);
        files.perf_db = Some(name);
    }
    if let Some(src) = &a.kdb {
        let db = KernelDb::read(src)?;
        let name = format!("{base}.kdb");
        let out = dir.join(&name);
        std::fs::copy(src, &out)?;
        println!(
            "kdb: {} code objects -> {}",
            db.entries.len(),
            out.display()
        );
        pins.insert(name.clone(), sha256_hex(&out)?);
        files.kdb = Some(name);
    }
    let vendor = id.vendor();
    let cfg = kiln_embed::target::TargetConfig {
        basename: base.clone(),
        vendor: vendor.name().into(),
        arch: id.arch.clone(),
        compute_units: id.compute_units,
        code_object: if vendor == kiln::Vendor::Amd {
            "hsaco".into()
        } else {
            "cubin".into()
        },
        aliases: a.alias.clone(),
        origin: a.origin.clone(),
        toolchain: None,
        files,
        pins,
    };
    std::fs::write(
        dir.join("target.toml"),
        kiln_embed::target::render_target_toml(&cfg),
    )?;
    // Re-read what was written, exactly as build.rs will.
    kiln_embed::target::TargetConfig::load(&dir)?;
    println!("wrote {}", dir.join("target.toml").display());
    Ok(())
}

enum DbKind {
    Find,
    Perf,
    Kdb,
}

fn kind_of(path: &Path) -> Result<DbKind, Box<dyn std::error::Error>> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name.ends_with(".fdb.txt") {
        Ok(DbKind::Find)
    } else if name.ends_with(".kdb") || name.ends_with(".ukdb") {
        Ok(DbKind::Kdb)
    } else if name.ends_with(".db.txt")
        || name.ends_with(".db")
        || name.ends_with(".udb.txt")
        || name.ends_with(".udb")
    {
        Ok(DbKind::Perf)
    } else {
        Err(format!("{}: cannot tell the database kind from the name (expected .fdb.txt, .db.txt, .db or .kdb)", path.display()).into())
    }
}

fn check(files: &[PathBuf]) -> CliResult {
    if files.is_empty() {
        return Err("no files given".into());
    }
    for f in files {
        match kind_of(f)? {
            DbKind::Find => {
                let db = FindDb::read(f)?;
                let items: usize = db.records.iter().map(|r| r.items.len()).sum();
                println!(
                    "{}: ok, find-db, {} records, {} solutions",
                    f.display(),
                    db.records.len(),
                    items
                );
            }
            DbKind::Perf => {
                let db = PerfDb::read(f)?;
                let items: usize = db.records.iter().map(|r| r.items.len()).sum();
                println!(
                    "{}: ok, perf-db, {} configs, {} entries",
                    f.display(),
                    db.records.len(),
                    items
                );
            }
            DbKind::Kdb => {
                let db = KernelDb::read(f)?;
                let bytes: usize = db.entries.iter().map(|e| e.object.len()).sum();
                println!(
                    "{}: ok, kdb, {} code objects, {} B uncompressed, MD5s verified",
                    f.display(),
                    db.entries.len(),
                    bytes
                );
            }
        }
    }
    Ok(())
}

fn convert(input: &Path, output: &Path) -> CliResult {
    match (kind_of(input)?, kind_of(output)?) {
        (DbKind::Perf, DbKind::Perf) => {
            let db = PerfDb::read(input)?;
            let out_name = output.to_string_lossy();
            if out_name.ends_with(".txt") {
                std::fs::write(output, db.to_text())?;
            } else {
                db.write_sqlite(output)?;
            }
            println!("{} configs -> {}", db.records.len(), output.display());
        }
        (DbKind::Find, DbKind::Find) => {
            let db = FindDb::read(input)?;
            std::fs::write(output, db.to_text())?;
            println!(
                "{} records -> {} (v2.0)",
                db.records.len(),
                output.display()
            );
        }
        _ => return Err(
            "convert works perf-db <-> perf-db (SQLite/text) and find-db -> find-db (v1.0 -> v2.0)"
                .into(),
        ),
    }
    Ok(())
}

fn stats(file: &Path) -> CliResult {
    use std::collections::BTreeMap;
    let mut solvers: BTreeMap<String, usize> = BTreeMap::new();
    let mut mix: BTreeMap<String, usize> = BTreeMap::new();
    let mut note = |p: &ConvProblem| {
        let l = p.layouts()[0].name();
        let t = p.data_types()[0].name();
        let d = p.direction().key();
        let g = if p.groups() > 1 { " grouped" } else { "" };
        *mix.entry(format!("{}-D {l} {t} {d}{g}", p.spatial_dims()))
            .or_default() += 1;
    };
    match kind_of(file)? {
        DbKind::Find => {
            let db = FindDb::read(file)?;
            for r in &db.records {
                note(&ConvProblem::from_find_db_key(&r.key)?);
                for i in &r.items {
                    *solvers.entry(i.solver.clone()).or_default() += 1;
                }
            }
            println!("{}: find-db, {} records", file.display(), db.records.len());
        }
        DbKind::Perf => {
            let db = PerfDb::read(file)?;
            for r in &db.records {
                note(&ConvProblem::from_perf_db_key(&r.key)?);
                for i in &r.items {
                    *solvers.entry(i.solver.clone()).or_default() += 1;
                }
            }
            println!("{}: perf-db, {} configs", file.display(), db.records.len());
        }
        DbKind::Kdb => {
            let db = KernelDb::read(file)?;
            for e in &db.entries {
                *solvers.entry(e.kernel_name.clone()).or_default() += 1;
            }
            println!("{}: kdb, {} code objects", file.display(), db.entries.len());
        }
    }
    println!("problems by kind:");
    for (k, v) in &mix {
        println!("  {v:>7}  {k}");
    }
    let mut by_count: Vec<_> = solvers.into_iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    println!("entries by solver (kdb: by kernel file):");
    for (s, n) in by_count {
        println!("  {n:>7}  {s}");
    }
    Ok(())
}

fn kdb_build(targets: &[String], check: bool, targets_dir: &Path, kernels_dir: &Path) -> CliResult {
    use kiln_embed::target::{render_target_toml, TargetConfig};
    let manifest = kiln_embed::kdbbuild::Manifest::load(&kernels_dir.join("manifest.toml"))?;
    let mut dirs = Vec::new();
    if targets.is_empty() {
        for d in kiln_embed::target::list_targets(targets_dir)? {
            if TargetConfig::load(&d)?.files.kdb.is_some() {
                dirs.push(d);
            }
        }
    } else {
        dirs.extend(targets.iter().map(|t| targets_dir.join(t)));
    }
    let mut stale = Vec::new();
    for dir in dirs {
        let mut cfg = TargetConfig::load(&dir)?;
        let name = format!("{}.kdb", cfg.basename);
        let started = std::time::Instant::now();
        if check {
            let tmp =
                std::env::temp_dir().join(format!("kiln-check-{}-{name}", std::process::id()));
            let (n, _) =
                kiln_embed::kdbbuild::build_target_kdb(&manifest, kernels_dir, &dir, &tmp)?;
            let fresh = std::fs::read(&tmp)?;
            let _ = std::fs::remove_file(&tmp);
            let committed = std::fs::read(dir.join(&name)).unwrap_or_default();
            let same = fresh == committed;
            println!(
                "{}: {n} code objects, {}",
                cfg.basename,
                if same {
                    "identical to the committed kdb"
                } else {
                    "DIFFERS from the committed kdb"
                }
            );
            if !same {
                stale.push(cfg.basename.clone());
            }
            continue;
        }
        let out = dir.join(&name);
        let (n, toolchain) =
            kiln_embed::kdbbuild::build_target_kdb(&manifest, kernels_dir, &dir, &out)?;
        cfg.pins
            .insert(name.clone(), kiln_embed::fetch::sha256_file(&out)?);
        cfg.files.kdb = Some(name);
        cfg.toolchain = Some(toolchain.clone());
        std::fs::write(dir.join("target.toml"), render_target_toml(&cfg))?;
        TargetConfig::load(&dir)?;
        println!(
            "{}: {n} code objects -> {} ({} B, {:.1} s, {toolchain})",
            cfg.basename,
            out.display(),
            std::fs::metadata(&out)?.len(),
            started.elapsed().as_secs_f64()
        );
    }
    if !stale.is_empty() {
        return Err(format!(
            "stale kdb for [{}]: kernels or compilers changed; run `make kdb` and commit",
            stale.join(", ")
        )
        .into());
    }
    Ok(())
}

fn devices() -> CliResult {
    let all = kiln::backend::list_devices();
    if all.is_empty() {
        println!("no GPU found ({})", kiln::backend::cuda::absence_reason());
        return Ok(());
    }
    for d in all {
        let target = match kiln::select_target(&d.arch, d.compute_units) {
            Ok(sel) => format!(
                "{}{}",
                sel.target.basename,
                if sel.exact { "" } else { " (closest CU count)" }
            ),
            Err(e) => format!("none: {e}"),
        };
        println!(
            "{}  {}  {}  {} SMs/CUs  {}  -> embedded target {}",
            d.spec, d.name, d.arch, d.compute_units, d.uuid, target
        );
    }
    Ok(())
}

fn open_context(a: &DeviceArgs) -> Result<kiln::context::Context, Box<dyn std::error::Error>> {
    let backend = kiln::backend::open(a.device.as_deref())?;
    Ok(kiln::context::Context::new(backend)?)
}

fn run_one(a: &RunArgs) -> CliResult {
    let p = match &a.problem.key {
        Some(key) => ConvProblem::from_find_db_key(key).map_err(|e| kiln::Error::BadKey {
            key: key.clone(),
            source: e,
        })?,
        None => problem_from_flags(&a.problem)?,
    };
    let ctx = open_context(&a.device)?;
    let info = ctx.backend().info().clone();
    let (target, exact) = ctx.target();
    println!(
        "device {} ({} {}, {} SMs/CUs) -> target {}{}",
        info.spec,
        info.name,
        info.arch,
        info.compute_units,
        target.basename,
        if exact { "" } else { " (closest)" }
    );
    println!("problem {}", p.find_db_key());
    let cands = ctx.find_solutions(&p)?;
    let c = cands[0];
    let r = kiln::verify::run_checked(&ctx, &p, &c, 1, a.repeats)?;
    println!(
        "{} [{}] ({:?}): {:.4} ms median of {}, relative error {:.2e} (tolerance {:.0e}) {}",
        c.solver.id,
        c.params,
        c.ranking,
        r.time_ms,
        a.repeats,
        r.error,
        kiln::verify::tolerance(p.data_types()[0]),
        if r.passed { "PASS" } else { "FAIL" }
    );
    if !r.passed {
        return Err("result outside tolerance".into());
    }
    Ok(())
}

/// The selftest problem set: 2-D and 3-D, both layout families, three types, groups and
/// depthwise, padding, stride, dilation, odd sizes.
fn selftest_problems() -> Vec<ConvProblem> {
    let d2 = |n,
              c,
              k,
              hw: [u32; 2],
              f: [u32; 2],
              pad: [u32; 2],
              stride: [u32; 2],
              dil: [u32; 2],
              groups| ConvSpec {
        n,
        c,
        k,
        input: [1, hw[0], hw[1]],
        filter: [1, f[0], f[1]],
        pad: [0, pad[0], pad[1]],
        stride: [1, stride[0], stride[1]],
        dilation: [1, dil[0], dil[1]],
        groups,
        ..ConvSpec::default()
    };
    let shapes = [
        d2(2, 16, 32, [14, 14], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        d2(3, 24, 40, [17, 13], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(2, 8, 12, [23, 19], [5, 3], [2, 0], [2, 1], [1, 2], 1),
        d2(1, 32, 32, [15, 15], [3, 3], [1, 1], [1, 1], [1, 1], 32),
        d2(2, 12, 18, [11, 9], [3, 3], [1, 1], [2, 2], [1, 1], 3),
        d2(1, 3, 16, [33, 31], [7, 7], [3, 3], [2, 2], [1, 1], 1),
        d2(4, 64, 64, [8, 8], [3, 3], [2, 2], [1, 1], [2, 2], 1),
        ConvSpec {
            spatial_dims: 3,
            n: 1,
            c: 4,
            k: 8,
            input: [5, 9, 7],
            filter: [3, 3, 3],
            pad: [1, 1, 1],
            ..ConvSpec::default()
        },
        ConvSpec {
            spatial_dims: 3,
            n: 2,
            c: 6,
            k: 6,
            input: [4, 7, 9],
            filter: [2, 3, 1],
            pad: [0, 1, 0],
            stride: [2, 1, 1],
            groups: 3,
            ..ConvSpec::default()
        },
    ];
    let mut out = Vec::new();
    for base in shapes {
        for dtype in [DataType::Fp32, DataType::Fp16, DataType::Bf16] {
            for channels_last in [false, true] {
                let layout = match (base.spatial_dims, channels_last) {
                    (2, false) => Layout::Nchw,
                    (2, true) => Layout::Nhwc,
                    (_, false) => Layout::Ncdhw,
                    (_, true) => Layout::Ndhwc,
                };
                let spec = ConvSpec {
                    layouts: [layout; 3],
                    data_types: [dtype; 3],
                    ..base
                };
                if let Ok(p) = ConvProblem::new(spec) {
                    out.push(p);
                }
            }
        }
    }
    out
}

fn selftest(a: &DeviceArgs) -> CliResult {
    let ctx = open_context(a)?;
    let info = ctx.backend().info().clone();
    let (target, exact) = ctx.target();
    println!(
        "kiln selftest on {} ({} {}, {} SMs/CUs, {}) -> target {}{}",
        info.spec,
        info.name,
        info.arch,
        info.compute_units,
        info.uuid,
        target.basename,
        if exact { "" } else { " (closest)" }
    );
    let problems = selftest_problems();
    let (mut runs, mut failures) = (0, 0);
    let mut per_solver: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    let mut seed = 1u64;
    for p in &problems {
        for solver in kiln::solvers::manifest() {
            for params in solver.params {
                if kiln::solvers::applicable(solver, p, params).is_err() {
                    continue;
                }
                seed += 1;
                let cand = kiln::context::Candidate {
                    solver,
                    params,
                    time_ms: 0.0,
                    workspace: 0,
                    ranking: kiln::context::Ranking::Heuristic,
                };
                let r = kiln::verify::run_checked(&ctx, p, &cand, seed, 3);
                runs += 1;
                let e = per_solver.entry(solver.id).or_default();
                e.0 += 1;
                match r {
                    Ok(r) if r.passed => {}
                    Ok(r) => {
                        failures += 1;
                        e.1 += 1;
                        println!(
                            "FAIL {} [{params}] {}: relative error {:.3e}",
                            solver.id,
                            p.find_db_key(),
                            r.error
                        );
                    }
                    Err(err) => {
                        failures += 1;
                        e.1 += 1;
                        println!("FAIL {} [{params}] {}: {err}", solver.id, p.find_db_key());
                    }
                }
            }
        }
    }
    println!("{} problems, {runs} runs (every applicable solver and perf config, fresh random inputs, outputs poisoned)", problems.len());
    for (s, (n, f)) in &per_solver {
        println!("  {s:<22} {n:>4} runs  {f} failed");
    }
    if failures > 0 || runs == 0 {
        return Err(format!("selftest: {failures} of {runs} runs failed").into());
    }
    println!("selftest passed");
    Ok(())
}

fn demo(a: &DemoArgs) -> CliResult {
    let dtype = DataType::from_name(&a.dtype).ok_or("--type must be FP32, FP16 or BF16")?;
    let layout = Layout::from_name(&a.layout).ok_or("--layout must be NCHW or NHWC")?;
    let layers = kiln::networks::resnet50(a.n, dtype, layout, false);
    match open_context(&a.device) {
        Ok(ctx) => demo_gpu(&ctx, &layers),
        Err(e) => {
            println!("no GPU: {e}");
            println!("resolving ResNet-50 (N={}, {}, {}) for every embedded target instead, verifying every code object the plan needs", a.n, dtype.name(), layout.name());
            demo_plan(&layers)
        }
    }
}

fn demo_gpu(ctx: &kiln::context::Context, layers: &[kiln::networks::Layer]) -> CliResult {
    let info = ctx.backend().info().clone();
    let (target, _) = ctx.target();
    println!(
        "ResNet-50 on {} ({} {}) with target {}",
        info.spec, info.name, info.arch, target.basename
    );
    println!(
        "{:<22} {:<48} {:<22} {:<10} {:>10} {:>10}",
        "layer", "problem", "solver", "params", "time ms", "rel error"
    );
    let (mut total, mut worst, mut failed) = (0.0, 0.0f64, 0);
    for (i, l) in layers.iter().enumerate() {
        let c = ctx.find_solutions(&l.problem)?[0];
        let r = kiln::verify::run_checked(ctx, &l.problem, &c, 1000 + i as u64, 10)?;
        total += r.time_ms;
        worst = worst.max(r.error);
        failed += usize::from(!r.passed);
        println!(
            "{:<22} {:<48} {:<22} {:<10} {:>10.4} {:>10.2e}{}",
            l.name,
            l.problem.find_db_key().as_str(),
            c.solver.id,
            c.params,
            r.time_ms,
            r.error,
            if r.passed { "" } else { "  FAIL" }
        );
    }
    println!(
        "{} layers, total {:.3} ms, worst relative error {:.2e}",
        layers.len(),
        total,
        worst
    );
    if failed > 0 {
        return Err(format!("{failed} layers outside tolerance").into());
    }
    Ok(())
}

fn demo_plan(layers: &[kiln::networks::Layer]) -> CliResult {
    for t in kiln::targets() {
        let Some(_) = t.kdb else { continue };
        let device = if t.arch.starts_with("gfx") {
            format!("{}:sramecc+:xnack-", t.arch)
        } else {
            t.arch.to_string()
        };
        let mut solvers_used: std::collections::BTreeMap<&str, usize> = Default::default();
        let mut objects = std::collections::BTreeSet::new();
        for l in layers {
            let c = kiln::context::rank(t, &l.problem)?[0];
            *solvers_used.entry(c.solver.id).or_default() += 1;
            let name = kiln::solvers::kernel_name(c.solver);
            let args =
                kiln::solvers::kernel_args(c.solver, l.problem.data_types()[0], c.params, t.arch);
            let obj = t
                .code_object(&name, &args)?
                .ok_or_else(|| format!("{}: no code object {name} {args}", t.basename))?;
            kiln::codeobject::check_for_device(obj.bytes, &device)?;
            objects.insert((name, args));
        }
        let used: Vec<String> = solvers_used
            .iter()
            .map(|(s, n)| format!("{s} x{n}"))
            .collect();
        println!("{:<11} {} layers resolved, {} code objects decoded, sha256- and ELF-verified for {}: {}", t.basename, layers.len(), objects.len(), device, used.join(", "));
    }
    println!("no GPU was found: nothing was run (AMD code objects are never run here; NVIDIA ones run on a GPU: `make device-pack`, then ci/README.md)");
    Ok(())
}

/// A problem list (`ci/problems/*.txt`): one find-db key per line, `#` comments; errors name
/// file:line.
fn read_problem_list(
    file: &Path,
) -> Result<Vec<(String, ConvProblem)>, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let p = ConvProblem::from_find_db_key(line)
            .map_err(|e| format!("{}:{}: {e}: '{line}'", file.display(), i + 1))?;
        out.push((line.to_string(), p));
    }
    Ok(out)
}

fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

fn find(a: &FindArgs, write_find_db: bool) -> CliResult {
    use std::io::Write as _;
    let ctx = open_context(&a.device)?;
    let (target, _) = ctx.target();
    let base = target.basename;
    let dir = a
        .db_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("targets").join(base));
    std::fs::create_dir_all(&dir)?;
    let fdb_path = dir.join(format!("{base}.HIP.fdb.txt"));
    let pdb_path = dir.join(format!("{base}.db.txt"));
    let mut fdb = if fdb_path.exists() {
        FindDb::read(&fdb_path)?
    } else {
        FindDb::default()
    };
    let mut pdb = if pdb_path.exists() {
        PerfDb::read(&pdb_path)?
    } else {
        PerfDb::default()
    };
    let mut problems: Vec<(String, ConvProblem)> = Vec::new();
    for file in &a.problems {
        for (key, p) in read_problem_list(file)? {
            if !problems.iter().any(|(k, _)| *k == key) {
                problems.push((key, p));
            }
        }
    }
    let todo: Vec<&(String, ConvProblem)> = problems
        .iter()
        .filter(|(k, _)| a.force || !fdb.records.iter().any(|r| &r.key == k))
        .collect();
    println!(
        "{} problems, {} already measured, {} to measure on {} ({})",
        problems.len(),
        problems.len() - todo.len(),
        todo.len(),
        ctx.backend().info().spec,
        base
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
    for (i, (key, p)) in todo.iter().enumerate() {
        bar.set_message(key.clone());
        let ms = kiln::tune::measure(&ctx, p, a.repeats, 1 + i as u64)?;
        if let Some(f) = log.as_mut() {
            for m in &ms {
                writeln!(
                    f,
                    "{key}\t{}\t{}\t{}\t{:.3e}\t{}",
                    m.solver.id, m.params, m.time_ms, m.error, m.ok
                )?;
            }
        }
        if write_find_db {
            if let Some(line) = kiln::tune::find_db_line(key, &ms) {
                let rec =
                    kiln_embed::finddb::parse_line(&line).map_err(|e| format!("{line}: {e}"))?;
                match fdb.records.iter_mut().find(|r| r.key == rec.key) {
                    Some(r) => *r = rec,
                    None => fdb.records.push(rec),
                }
                write_atomic(&fdb_path, &fdb.to_text())?;
            }
        }
        let pkey = p.perf_db_key();
        if let Some(line) = kiln::tune::perf_db_line(pkey.as_str(), &ms) {
            pdb.merge(PerfDb::parse_text(&line, Path::new("measured"))?);
            write_atomic(&pdb_path, &pdb.to_text())?;
        }
        bar.inc(1);
    }
    bar.finish();
    println!(
        "find-db {} records -> {}; perf-db {} configs -> {}",
        fdb.records.len(),
        fdb_path.display(),
        pdb.records.len(),
        pdb_path.display()
    );
    Ok(())
}
