//! Running a binary on a table of bad inputs: each case must end with the exit code it expects
//! (0 ok, 1 error, 2 usage) within a time limit, with an error message of one short line, no
//! panic and no signal, and leave every watched file byte-identical.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The exit a case must end with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Exit 0.
    Ok,
    /// Exit 1 and `<binary>: error: ...` on one line.
    Error,
    /// Exit 2 (command-line usage).
    Usage,
}

/// One bad input.
pub struct Case {
    pub name: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub expect: Expect,
}

impl Case {
    pub fn new(name: impl Into<String>, args: &[&str], expect: Expect) -> Case {
        Case {
            name: name.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
            expect,
        }
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

/// Runs every case; returns one line per failure (empty when all behave).
pub fn run_all(bin: &Path, cwd: &Path, cases: &[Case], watched: &[PathBuf]) -> Vec<String> {
    let before: Vec<Option<Vec<u8>>> = watched.iter().map(|p| digest(p)).collect();
    let tool = bin.file_name().unwrap().to_string_lossy().into_owned();
    let mut failures = Vec::new();
    let (mut ok, mut errors, mut usage) = (0, 0, 0);
    for c in cases {
        let child = Command::new(bin)
            .args(&c.args)
            .envs(c.env.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let pid = child.id();
        // Output is drained while waiting (a full pipe must not look like a hang).
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let out = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(out) => out.unwrap(),
            Err(_) => {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                failures.push(format!("{}: HANG (killed after 60 s)", c.name));
                continue;
            }
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        let status = out.status;
        let code = status.code();
        let want = match c.expect {
            Expect::Ok => 0,
            Expect::Error => 1,
            Expect::Usage => 2,
        };
        let mut why = Vec::new();
        if code.is_none() {
            why.push(format!("killed by a signal ({status})"));
        } else if code != Some(want) {
            why.push(format!("exit {code:?}, expected {want}"));
        }
        if stderr.contains("panicked") {
            why.push("panicked".into());
        }
        if out.stderr.len() + out.stdout.len() > 1 << 20 {
            why.push(format!(
                "{} bytes of output",
                out.stderr.len() + out.stdout.len()
            ));
        }
        if c.expect == Expect::Error && code == Some(1) {
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
                Expect::Error => errors += 1,
                Expect::Usage => usage += 1,
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
