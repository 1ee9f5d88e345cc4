//! Running a binary on a table of bad inputs: each case must end with the exit code it expects
//! (0 ok, 1 error, 2 usage, 3 no device, 4 no solution) within a time limit and under
//! [`MAX_RSS_BYTES`] of peak memory (optionally inside an address-space limit), with an error
//! message of one short line, no panic, no signal, no raw terminal control character in its
//! output, and leave every watched file byte-identical.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The exit a case must end with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(dead_code)] // each table uses some of the classes
pub enum Expect {
    /// Exit 0.
    Ok,
    /// Exit 1 and `<binary>: error: ...` on one line.
    Error,
    /// Exit 2 (command-line usage).
    Usage,
    /// Exit 3 and one error line: no GPU or runtime found.
    NoDevice,
    /// Exit 4 and one error line: no solver can run the problem.
    NoSolution,
}

impl Expect {
    fn code(self) -> i32 {
        match self {
            Expect::Ok => 0,
            Expect::Error => 1,
            Expect::Usage => 2,
            Expect::NoDevice => 3,
            Expect::NoSolution => 4,
        }
    }
}

/// Peak resident memory any case may reach.
pub const MAX_RSS_BYTES: u64 = 512 << 20;

/// One bad input.
pub struct Case {
    pub name: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub expect: Expect,
    /// Standard output goes to this file (e.g. `/dev/full`) instead of a pipe.
    pub stdout: Option<PathBuf>,
    /// An address-space limit (`RLIMIT_AS`) for the case, in bytes.
    pub memory_limit: Option<u64>,
}

impl Case {
    pub fn new(name: impl Into<String>, args: &[&str], expect: Expect) -> Case {
        Case {
            name: name.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
            expect,
            stdout: None,
            memory_limit: None,
        }
    }

    #[allow(dead_code)] // used by some of the tables
    pub fn stdout_to(mut self, path: &str) -> Case {
        self.stdout = Some(path.into());
        self
    }

    #[allow(dead_code)] // used by some of the tables
    pub fn memory_limit(mut self, bytes: u64) -> Case {
        self.memory_limit = Some(bytes);
        self
    }

    #[allow(dead_code)] // used by some of the tables
    pub fn env(mut self, k: &str, v: &str) -> Case {
        self.env.push((k.into(), v.into()));
        self
    }
}

fn digest(p: &Path) -> Option<Vec<u8>> {
    use sha2::Digest;
    std::fs::read(p)
        .ok()
        .map(|b| sha2::Sha256::digest(&b).to_vec())
}

/// Runs every case and fails the test, listing every case that misbehaved.
#[allow(dead_code)] // used by some of the tables
pub fn assert_all_behave(bin: &Path, cwd: &Path, cases: &[Case], watched: &[PathBuf]) {
    let failures = run_all(bin, cwd, cases, watched);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Runs every case; returns one line per failure (empty when all behave).
pub fn run_all(bin: &Path, cwd: &Path, cases: &[Case], watched: &[PathBuf]) -> Vec<String> {
    let before: Vec<Option<Vec<u8>>> = watched.iter().map(|p| digest(p)).collect();
    let tool = bin.file_name().unwrap().to_string_lossy().into_owned();
    let mut failures = Vec::new();
    let (mut ok, mut errors, mut usage) = (0, 0, 0);
    for c in cases {
        let (out, peak) = match run_one(bin, cwd, c) {
            Some(r) => r,
            None => {
                failures.push(format!("{}: HANG (killed after 60 s)", c.name));
                continue;
            }
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        let status = out.status;
        let code = status.code();
        let want = c.expect.code();
        let mut why = Vec::new();
        if code.is_none() {
            why.push(format!("killed by a signal ({status})"));
        } else if code != Some(want) {
            why.push(format!("exit {code:?}, expected {want}"));
        }
        if stderr.contains("panicked") {
            why.push("panicked".into());
        }
        if peak > MAX_RSS_BYTES {
            why.push(format!("peak RSS {} MiB", peak >> 20));
        }
        let raw_control = |b: &[u8]| {
            String::from_utf8_lossy(b)
                .chars()
                .any(|ch| (ch.is_control() && ch != '\n' && ch != '\t') || ch == '\u{202e}')
        };
        if raw_control(&out.stderr) || raw_control(&out.stdout) {
            why.push("raw control characters in the output".into());
        }
        if out.stderr.len() + out.stdout.len() > 1 << 20 {
            why.push(format!(
                "{} bytes of output",
                out.stderr.len() + out.stdout.len()
            ));
        }
        if !matches!(c.expect, Expect::Ok | Expect::Usage) && code == Some(want) {
            let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
            let clear = lines.len() == 1
                && lines[0].starts_with(&format!("{tool}: error: "))
                && lines[0].len() <= 1500;
            if !clear {
                why.push(format!(
                    "unclear error: {:?}",
                    stderr.chars().take(300).collect::<String>()
                ));
            }
        }
        if why.is_empty() {
            match c.expect {
                Expect::Ok => ok += 1,
                Expect::Usage => usage += 1,
                _ => errors += 1,
            }
        } else {
            failures.push(format!(
                "{}: {} [args {:?}]",
                c.name,
                why.join("; "),
                c.args
            ));
        }
    }
    for (p, d) in watched.iter().zip(before) {
        if digest(p) != d {
            failures.push(format!("{} was modified", p.display()));
        }
    }
    println!(
        "{tool}: {} cases: {errors} clear errors, {usage} usage errors, {ok} accepted; {} failures",
        cases.len(),
        failures.len()
    );
    failures
}

/// Runs one case; returns its output and peak RSS in bytes, or `None` if it was killed after
/// 60 s. The child is reaped by `wait4` (for its rusage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run_one(bin: &Path, cwd: &Path, c: &Case) -> Option<(std::process::Output, u64)> {
    use std::io::Read;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let mut cmd = Command::new(bin);
    cmd.args(&c.args)
        .envs(c.env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    match &c.stdout {
        Some(p) => cmd.stdout(std::fs::OpenOptions::new().write(true).open(p).unwrap()),
        None => cmd.stdout(Stdio::piped()),
    };
    if let Some(limit) = c.memory_limit {
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().expect("the binary starts");
    let pid = child.id() as libc::pid_t;
    // Output is drained while waiting (a full pipe must not look like a hang).
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: an all-zero rusage is valid; wait4 reaps the child std never waits on.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        let _ = tx.send((r, status, usage.ru_maxrss as u64 * 1024));
    });
    let Ok((r, status, peak)) = rx.recv_timeout(Duration::from_secs(60)) else {
        // SAFETY: plain kill of the child's pid.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        return None;
    };
    assert_eq!(r, pid, "wait4 failed");
    let out = std::process::Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    drop(child);
    Some((out, peak))
}
