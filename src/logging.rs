//! kiln's log: warnings when it degrades (the closest-CU target instead of an exact one, a
//! target without a measured find-db, a problem ranked by the cost model), details at lower
//! levels. The library only speaks through the [`log`] facade, so a host program routes it
//! where it wants; [`init_from_env`] installs kiln's own stderr logger, set by
//! `KILN_LOG_LEVEL`, as the `kiln` binary and the C library do.
//!
//! Without a logger installed nothing is formatted: a `log` macro is one relaxed atomic load,
//! so logging costs the no-allocation lookup path nothing.

use std::sync::{OnceLock, RwLock};

pub use log::{Level, LevelFilter};

/// Where kiln's logger sends a line instead of stderr (a host program's callback): the level
/// and the formatted message.
pub type Sink = Box<dyn Fn(Level, &str) + Send + Sync>;

/// The installed sink, if any.
static SINK: RwLock<Option<Sink>> = RwLock::new(None);

/// The variable that sets the level.
pub const LEVEL_VARIABLE: &str = "KILN_LOG_LEVEL";

/// The level when `KILN_LOG_LEVEL` is unset or empty: warnings and errors, as MIOpen's
/// default.
pub const DEFAULT_LEVEL: LevelFilter = LevelFilter::Warn;

/// Parses a level: `off`, `error`, `warn`/`warning`, `info`, `debug`, `trace` (any case), or
/// MIOpen's numbers as in `MIOPEN_LOG_LEVEL` (0 default, 1 quiet, 2 fatal, 3 error, 4 warning,
/// 5 info, 6 info2 (debug), 7 trace).
pub fn parse_level(text: &str) -> Result<LevelFilter, String> {
    let t = text.trim();
    let level = match t.to_ascii_lowercase().as_str() {
        "" | "0" => DEFAULT_LEVEL,
        "off" | "quiet" | "1" => LevelFilter::Off,
        "error" | "fatal" | "2" | "3" => LevelFilter::Error,
        "warn" | "warning" | "4" => LevelFilter::Warn,
        "info" | "5" => LevelFilter::Info,
        "debug" | "info2" | "6" => LevelFilter::Debug,
        "trace" | "7" => LevelFilter::Trace,
        _ => {
            return Err(format!(
                "{LEVEL_VARIABLE}='{}': not a log level (off, error, warn, info, debug, trace, or 0-7 as MIOPEN_LOG_LEVEL)",
                kiln_format::text::excerpt(t)
            ))
        }
    };
    Ok(level)
}

/// The level `KILN_LOG_LEVEL` asks for (the default when unset).
pub fn level_from_env() -> Result<LevelFilter, String> {
    match std::env::var(LEVEL_VARIABLE) {
        Ok(v) => parse_level(&v),
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT_LEVEL),
        Err(std::env::VarError::NotUnicode(v)) => Err(format!(
            "{LEVEL_VARIABLE}='{}': not valid UTF-8, so not a log level",
            kiln_format::text::excerpt(&v.to_string_lossy())
        )),
    }
}

/// Writes `kiln: warning: ...` lines to stderr.
struct StderrLogger;

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let level = match record.level() {
            log::Level::Error => "error",
            log::Level::Warn => "warning",
            log::Level::Info => "info",
            log::Level::Debug => "debug",
            log::Level::Trace => "trace",
        };
        if let Ok(sink) = SINK.read() {
            if let Some(sink) = sink.as_ref() {
                sink(record.level(), &record.args().to_string());
                return;
            }
        }
        // The stderr lock is held for the whole line: lines from concurrent threads do not
        // interleave.
        use std::io::Write;
        let _ = writeln!(std::io::stderr().lock(), "kiln: {level}: {}", record.args());
    }

    fn flush(&self) {}
}

static LOGGER: StderrLogger = StderrLogger;
/// Whether kiln's logger is the process's (decided by the first [`init_from_env`]).
static OURS: OnceLock<bool> = OnceLock::new();

/// Installs kiln's stderr logger at the level `KILN_LOG_LEVEL` names (once per process; later
/// calls only re-read the level). When the host program installed its own logger first, kiln
/// leaves it in place and logs through it, only raising the facade's level if needed. A bad
/// `KILN_LOG_LEVEL` is an error naming it; the level then stays as it was.
pub fn init_from_env() -> Result<LevelFilter, String> {
    let level = level_from_env()?;
    set_level(level);
    Ok(level)
}

/// Installs kiln's logger (as [`init_from_env`] does) at `level`, sending its lines to `sink`
/// instead of stderr (`None`: stderr again). With a host's own logger in place, the sink is
/// kept but unused: lines go through the host's logger.
pub fn install(level: LevelFilter, sink: Option<Sink>) {
    if let Ok(mut s) = SINK.write() {
        *s = sink;
    }
    set_level(level);
}

fn set_level(level: LevelFilter) {
    if *OURS.get_or_init(|| log::set_logger(&LOGGER).is_ok()) {
        log::set_max_level(level);
    } else {
        log::set_max_level(level.max(log::max_level()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_by_name_and_by_miopen_number() {
        assert_eq!(parse_level("WARN").unwrap(), LevelFilter::Warn);
        assert_eq!(parse_level(" debug ").unwrap(), LevelFilter::Debug);
        assert_eq!(parse_level("").unwrap(), DEFAULT_LEVEL);
        assert_eq!(parse_level("1").unwrap(), LevelFilter::Off);
        assert_eq!(parse_level("5").unwrap(), LevelFilter::Info);
        assert_eq!(parse_level("7").unwrap(), LevelFilter::Trace);
        let e = parse_level("loud").unwrap_err();
        assert!(e.contains("KILN_LOG_LEVEL='loud'"), "{e}");
        assert!(parse_level("8").is_err());
    }
}
