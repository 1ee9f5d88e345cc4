//! `find --devices`: one worker process per GPU (this binary with `find --worker`), fed from one
//! queue by the parent, which alone writes the DBs and the log and draws the progress bar.
//!
//! The protocol is lines of text. A worker first says `hello<TAB>target<TAB>device<TAB>driver`;
//! then, for each `index<TAB>key` it reads, it writes the problem's find-log lines and
//! `end<TAB>index`, or `skip<TAB>index<TAB>why`, or `error<TAB>why` (and stops). It exits at the
//! end of its input. A worker that dies loses only the problem in flight: the DBs hold every
//! finished one, so running again resumes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{mpsc, Mutex};

use kiln::ConvProblem;

use super::find::{parse_log_line, FindArgs, LogLine, Outcome};
use crate::CliResult;

type Error = Box<dyn std::error::Error>;

/// A worker's answer for one problem.
pub enum Reply {
    /// Its find-log lines (every variant measured).
    Lines(Vec<LogLine>),
    /// Skipped, and why.
    Skipped(String),
}

/// One worker process.
struct Worker {
    /// How it was started (`--device cuda:1`), for messages.
    label: String,
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

/// The parent's side: started workers, all measuring for one target on one kind of device.
pub struct Pool {
    workers: Vec<Mutex<Worker>>,
    target: String,
    device: String,
    driver: String,
}

impl Pool {
    /// Starts one worker per argument list (each `find --worker` plus its source's flags) and
    /// reads their greetings; refuses workers of different targets, devices or drivers.
    pub fn spawn(specs: &[Vec<String>]) -> Result<Pool, Error> {
        let exe = std::env::current_exe()?;
        let mut workers = Vec::new();
        let mut hello: Option<(String, String, String, String)> = None;
        for spec in specs {
            let label = spec.join(" ");
            let mut child = Command::new(&exe)
                .args(["find", "--worker"])
                .args(spec)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|e| format!("starting the worker for {label}: {e}"))?;
            let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
                return Err(format!("the worker for {label}: no pipes").into());
            };
            let mut w = Worker {
                label,
                child,
                input,
                output: BufReader::new(output),
            };
            let line = w.read_line()?;
            let f: Vec<&str> = line.split('\t').collect();
            let ["hello", target, device, driver] = f.as_slice() else {
                return Err(format!("the worker for {}: {}", w.label, worker_error(&line)).into());
            };
            let this = (
                target.to_string(),
                device.to_string(),
                driver.to_string(),
                w.label.clone(),
            );
            if let Some(first) = &hello {
                if (&first.0, &first.1, &first.2) != (&this.0, &this.1, &this.2) {
                    return Err(format!(
                        "the worker for {} measures {} on {} (driver {}), the one for {} {} on {} (driver {}): one run measures one kind of GPU",
                        this.3, this.0, this.1, this.2, first.3, first.0, first.1, first.2
                    )
                    .into());
                }
            } else {
                hello = Some(this);
            }
            workers.push(Mutex::new(w));
        }
        let (target, device, driver, _) = hello.ok_or("no workers")?;
        Ok(Pool {
            workers,
            target,
            device,
            driver,
        })
    }

    /// The target basename the workers measure for.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The workers' device: name, arch, SMs/CUs (or the log they read).
    pub fn device(&self) -> &str {
        &self.device
    }

    /// The workers' driver major (`hip`, or `none` for a log).
    pub fn driver(&self) -> &str {
        &self.driver
    }

    /// `N workers on <device>`, for the run's first line.
    pub fn describe(&self) -> String {
        format!("{} workers ({})", self.workers.len(), self.device)
    }

    /// Measures `jobs` (index in the run's list, key) on the workers, each taking the next job
    /// when it is free; `done` gets each reply on this thread, in whatever order they finish.
    /// The first failure (a worker's error or death, or `done`'s) stops the run, naming the
    /// worker and the problem.
    pub fn run(
        &self,
        jobs: &[(usize, &str)],
        mut done: impl FnMut(usize, Reply) -> Result<(), Error>,
    ) -> CliResult {
        let queue = Mutex::new(jobs.iter());
        let stop = std::sync::atomic::AtomicBool::new(false);
        let (tx, rx) = mpsc::channel::<(usize, Result<Reply, String>)>();
        std::thread::scope(|scope| -> CliResult {
            for worker in &self.workers {
                let (tx, queue, stop) = (tx.clone(), &queue, &stop);
                scope.spawn(move || {
                    let Ok(mut w) = worker.lock() else { return };
                    loop {
                        if stop.load(std::sync::atomic::Ordering::Relaxed) {
                            return;
                        }
                        let next = queue.lock().ok().and_then(|mut q| q.next().copied());
                        let Some((i, key)) = next else { return };
                        let reply = w
                            .ask(i, key)
                            .map_err(|e| format!("the worker for {} on {key}: {e}", w.label));
                        let failed = reply.is_err();
                        if tx.send((i, reply)).is_err() || failed {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            for (i, reply) in rx {
                let result = reply.map_err(Error::from).and_then(|r| done(i, r));
                if let Err(e) = result {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    return Err(e);
                }
            }
            Ok(())
        })
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Closing a worker's input ends it; one that does not end is killed.
        for w in self.workers.drain(..) {
            let Ok(mut w) = w.into_inner() else { continue };
            drop(w.input);
            let waited = (0..50).any(|_| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                matches!(w.child.try_wait(), Ok(Some(_)))
            });
            if !waited {
                let _ = w.child.kill();
                let _ = w.child.wait();
            }
        }
    }
}

impl Worker {
    /// One line from the worker, without its newline; an error if it has ended.
    fn read_line(&mut self) -> Result<String, Error> {
        let mut line = String::new();
        if self.output.read_line(&mut line)? == 0 {
            // Its output closed: it is ending; give it a second to be reaped, to say how.
            let status = (0..50).find_map(|_| {
                let s = self.child.try_wait().ok().flatten();
                if s.is_none() {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                s
            });
            return Err(match status {
                Some(s) => format!("the worker ended ({s})"),
                None => "the worker closed its output".to_string(),
            }
            .into());
        }
        Ok(line.trim_end_matches(['\n', '\r']).to_string())
    }

    /// Problem `key` (the run's `index`-th) measured by this worker.
    fn ask(&mut self, index: usize, key: &str) -> Result<Reply, Error> {
        writeln!(self.input, "{index}\t{key}")?;
        self.input.flush()?;
        let mut lines = Vec::new();
        loop {
            let line = self.read_line()?;
            let at = || format!("the worker's answer for {key}");
            if let Some(rest) = line.strip_prefix("end\t") {
                if rest != index.to_string() {
                    return Err(format!("{}: ended {rest}, not {index}", at()).into());
                }
                return Ok(Reply::Lines(lines));
            }
            if let Some(rest) = line.strip_prefix("skip\t") {
                let why = rest.split_once('\t').map_or("", |(_, w)| w);
                return Ok(Reply::Skipped(why.to_string()));
            }
            if line.starts_with("error\t") {
                return Err(worker_error(&line).into());
            }
            let l = parse_log_line(&line, &at)?;
            if l.key != key {
                return Err(format!("{}: a line of {}", at(), l.key).into());
            }
            lines.push(l);
        }
    }
}

/// A worker's `error<TAB>why` line as a message (or the line itself when it is not one).
fn worker_error(line: &str) -> String {
    line.strip_prefix("error\t").unwrap_or(line).to_string()
}

/// The worker's side (`find --worker`): greets, then measures each problem it is sent from
/// `source` (its device, or a log) and answers on stdout.
pub fn serve(a: &FindArgs, source: super::find::Source) -> CliResult {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let reply = |out: &mut std::io::StdoutLock, text: String| -> CliResult {
        out.write_all(text.as_bytes())?;
        out.flush()?;
        Ok(())
    };
    let result = (|| -> CliResult {
        let (target, device, driver) = super::find::source_identity(&source, a)?;
        reply(
            &mut out,
            format!("hello\t{}\t{device}\t{driver}\n", target.basename),
        )?;
        let caps = kiln::solvers::TargetCaps::of(target);
        // Fault injection for the interruption tests: the worker dies (SIGABRT, no answer)
        // when handed the run's problem of this index, as a killed worker would.
        let die_at: Option<usize> = std::env::var("KILN_FIND_WORKER_DIES_AT")
            .ok()
            .and_then(|v| v.parse().ok());
        for line in std::io::stdin().lock().lines() {
            let line = line?;
            let (index, key) = line
                .split_once('\t')
                .ok_or_else(|| format!("expected index<TAB>key, got {line:?}"))?;
            let i: usize = index.parse().map_err(|_| format!("bad index {index:?}"))?;
            if die_at == Some(i) {
                std::process::abort();
            }
            let p = ConvProblem::from_find_db_key(key).map_err(|e| format!("{key}: {e}"))?;
            let p = super::find::as_measured(a, p);
            let text = match super::find::measure_one(&source, key, &p, &caps, a.timed(), i)? {
                Outcome::Skipped(why) => format!("skip\t{i}\t{why}\n"),
                Outcome::Measured(ms) => {
                    let mut t = String::new();
                    for m in &ms {
                        t.push_str(&super::find::log_line(key, m));
                    }
                    t + &format!("end\t{i}\n")
                }
            };
            reply(&mut out, text)?;
        }
        Ok(())
    })();
    if let Err(e) = &result {
        let _ = reply(
            &mut out,
            format!("error\t{}\n", e.to_string().replace('\n', " ")),
        );
    }
    result
}
