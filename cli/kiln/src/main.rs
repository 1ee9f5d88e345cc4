//! `kiln`, the appliance binary: what a device running kiln needs (inspect the embedded
//! targets, resolve, run, self-test, measure the cold start, demo). The workshop (database
//! import and conversion, kdb builds, tuning, benchmarks) is `kiln-tools`.
//!
//! `no_main`: std's start-up reads `/proc/self/maps` (glibc's `pthread_getattr_np`, to place the
//! main thread's stack guard). An appliance binary should open nothing but its libraries, so
//! kiln enters through C's `main` and skips that step; argv still reaches `std::env::args`
//! (glibc hands it to std at load time).
//!
//! Exit codes (`kiln::harness::output::ExitClass`): 0 success, 1 error (a message on stderr),
//! 2 usage (a bad flag or `KILN_LOG_LEVEL`), 3 no GPU or runtime found, 4 no solution for the
//! problem, 5 self-test failed. A closed standard output ends the command quietly; a panic is
//! caught and reported as an error (never an abort across the C entry point).
#![no_main]

mod alloc_count;
mod args;
mod cmd;
mod json;

#[global_allocator]
static ALLOCATOR: alloc_count::Counting = alloc_count::Counting;

use clap::Parser;

use args::{Cli, Command};

/// What a command returns: `Err` is printed as `kiln: error: ...` with exit code 1.
pub type CliResult = Result<(), Box<dyn std::error::Error>>;

/// C entry point (see the module docs for why not `fn main`).
#[unsafe(no_mangle)]
pub extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    // Before anything can log: kiln's warnings (closest-CU target, no measured find-db, cost
    // model) go to stderr at KILN_LOG_LEVEL.
    if let Err(e) = kiln::logging::init_from_env() {
        eprintln!("kiln: error: {e}");
        return 2;
    }
    let args = match driver_line_args(std::env::args().collect()) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("kiln: error: {e}");
            return 2;
        }
    };
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are not errors; everything else is a usage error (2).
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match std::panic::catch_unwind(|| dispatch(cli)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => match kiln::harness::output::classify(e.as_ref()) {
            None => 0,
            Some(class) => {
                eprintln!("kiln: error: {e}");
                class as i32
            }
        },
        Err(_) => {
            eprintln!("kiln: error: internal error (a panic, reported above); please report it");
            1
        }
    }
}

/// `kiln resolve|run` given the line MIOpenDriver logs (`convfp16 -n 32 -c 64 ...`, with or
/// without the program path): the line becomes its find-db key, and kiln's own options
/// (`--target`, `--json`, ...) stay. Other command lines pass through unchanged.
fn driver_line_args(args: Vec<String>) -> Result<Vec<String>, String> {
    let is_problem_command = args
        .get(1)
        .is_some_and(|c| matches!(c.as_str(), "resolve" | "run"));
    if !is_problem_command || !kiln::driver::looks_like_driver_line(&args[2..]) {
        return Ok(args);
    }
    // MIOpenDriver's run options (`-t 1`, `-V 0`, ...) say how it times and checks; kiln's
    // own flags do that here.
    let c = kiln::driver::parse(&args[2..]).map_err(|e| e.to_string())?;
    let mut out = vec![
        args[0].clone(),
        args[1].clone(),
        c.problem.find_db_key().to_string(),
    ];
    out.extend(c.rest);
    Ok(out)
}

fn dispatch(cli: Cli) -> CliResult {
    match cli.command {
        Command::Info(a) => cmd::info::run(&a),
        Command::Devices(a) => cmd::devices::run(&a),
        Command::Doctor => cmd::doctor::run(),
        Command::Resolve(a) => cmd::resolve::run(&a),
        Command::Run(a) => cmd::run::run(&a),
        Command::Selftest(a) => cmd::selftest::run(&a),
        Command::Coldstart(a) => cmd::coldstart::run(&a),
        Command::Demo(a) => cmd::demo::run(&a),
        Command::Net(args::NetCommand::Run(a)) => cmd::net::run(&a),
        Command::Net(args::NetCommand::Plan(a)) => cmd::net::plan(&a),
        Command::Net(args::NetCommand::Show(a)) => cmd::net::show(&a),
    }
}
