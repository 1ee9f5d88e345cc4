//! `kiln-tools`, kiln's workshop: everything that reads or writes database files, builds
//! kdbs, or measures on a GPU to produce tuning data and reports. The appliance binary `kiln`
//! carries none of it (no SQLite, bzip2, TOML or compiler loaders).
//!
//! Exit codes as `kiln`'s (`kiln::harness::output::ExitClass`): 0 success, 1 error, 2 usage
//! (a bad flag or `KILN_LOG_LEVEL`), 3 no GPU or runtime found, 4 no solution; a closed standard
//! output ends the command quietly; a panic is reported as an error.

mod cmd;
mod cudnn;
mod onnx;
mod shard;
mod svg;
mod tune;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// What a command returns: `Err` is printed as `kiln-tools: error: ...` with exit code 1.
pub type CliResult = Result<(), Box<dyn std::error::Error>>;

#[derive(Parser)]
#[command(
    name = "kiln-tools",
    version,
    about = "kiln's workshop: MIOpen databases, kdb builds, tuning on a GPU, benchmarks",
    after_help = "Environment:\n  KILN_LOG_LEVEL    off, error, warn (default), info, debug, trace, or MIOpen's 0-7\n  KILN_DEVICE       device when --device is not given (cuda:0, hip:0, ...)\n  KILN_HIP_LIBRARY  the HIP runtime to load\n  KILN_NVRTC, KILN_CLANG, KILN_TOOLS, KILN_OBJECT_CACHE  kdb build toolchains (README)\n\nExit codes:\n  0 success   1 error   2 usage   3 no GPU or runtime found   4 no solution"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Work with MIOpen database files.
    #[command(subcommand)]
    Db(DbCommand),
    /// Build kernel dbs from kernels/manifest.toml.
    #[command(subcommand)]
    Kdb(KdbCommand),
    /// Measure every applicable solver and perf config on the device; write find-db and perf-db.
    Find(cmd::find::FindArgs),
    /// As find, but write only the perf-db (best perf config per problem and solver).
    Tune(cmd::find::FindArgs),
    /// On the GPU: cold start by phase against an NVRTC compile, lookup cost, every ResNet-50 layer against cuDNN.
    Bench(cmd::bench::BenchArgs),
    /// The fallback's regret on problems held out of the measured DBs (time of its pick / time of the best).
    Regret(cmd::regret::RegretArgs),
    /// A run's whole-network figures (a raw.tsv of benches/runs/) as an SVG chart.
    Plot(cmd::plot::PlotArgs),
    /// Whole networks.
    #[command(subcommand)]
    Net(NetCommand),
    /// Run an AMD target's embedded code objects in kiln-emu, no GPU needed: the selftest's
    /// checks against the CPU reference (function, not speed).
    #[cfg(feature = "emulate")]
    Emulate(cmd::emulate::EmulateArgs),
}

#[derive(Subcommand)]
enum NetCommand {
    /// An ONNX model as a kiln network: <name>.txt (the definition `kiln net plan|run` take)
    /// and <name>.safetensors (its weights).
    Import(cmd::net_import::ImportArgs),
    /// A network's CPU reference on a given input (raw FP32 NHWC in and out), no GPU.
    Reference(cmd::net_import::ReferenceArgs),
}

#[derive(Subcommand)]
enum DbCommand {
    /// Import MIOpen find-db / perf-db / kdb files into targets/<base>/ with sha256 pins.
    Import(cmd::db_import::ImportArgs),
    /// Parse files fully; report counts, or the first error with file:line.
    Check(cmd::db_check::CheckArgs),
    /// Convert between forms: perf-db SQLite <-> text (`sqlite2txt`), find-db v1.0 -> v2.0.
    Convert(cmd::db_convert::ConvertArgs),
    /// Statistics: records, solvers, key mix.
    Stats(cmd::db_stats::StatsArgs),
    /// Merge the directories of `find --shard I/N` jobs into a target's find-db and perf-db.
    Merge(cmd::db_merge::MergeArgs),
}

#[derive(Subcommand)]
enum KdbCommand {
    /// Compile every (solver, data type, perf config) for a target into targets/<base>/<base>.kdb.
    Build(cmd::kdb_build::KdbBuildArgs),
}

fn main() -> ExitCode {
    // The same logger, set the same way, as `kiln`'s.
    if let Err(e) = kiln::logging::init_from_env() {
        eprintln!("kiln-tools: error: {e}");
        return ExitCode::from(2);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match std::panic::catch_unwind(|| dispatch(cli)) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => match kiln::harness::output::classify(e.as_ref()) {
            None => ExitCode::SUCCESS,
            Some(class) => {
                eprintln!("kiln-tools: error: {e}");
                ExitCode::from(class as u8)
            }
        },
        Err(_) => {
            eprintln!("kiln-tools: error: internal error (a panic, reported above)");
            ExitCode::FAILURE
        }
    }
}

fn dispatch(cli: Cli) -> CliResult {
    match cli.command {
        Command::Db(DbCommand::Import(a)) => cmd::db_import::run(&a),
        Command::Db(DbCommand::Check(a)) => cmd::db_check::run(&a),
        Command::Db(DbCommand::Convert(a)) => cmd::db_convert::run(&a),
        Command::Db(DbCommand::Stats(a)) => cmd::db_stats::run(&a),
        Command::Db(DbCommand::Merge(a)) => cmd::db_merge::run(&a),
        Command::Net(NetCommand::Import(a)) => cmd::net_import::run(&a),
        Command::Net(NetCommand::Reference(a)) => cmd::net_import::reference(&a),
        Command::Kdb(KdbCommand::Build(a)) => cmd::kdb_build::run(&a),
        Command::Find(a) => cmd::find::run(&a, true),
        Command::Tune(a) => cmd::find::run(&a, false),
        Command::Bench(a) => cmd::bench::run(&a),
        Command::Plot(a) => cmd::plot::run(&a),
        Command::Regret(a) => cmd::regret::run(&a),
        #[cfg(feature = "emulate")]
        Command::Emulate(a) => cmd::emulate::run(&a),
    }
}
