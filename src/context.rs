//! The public run-time API: a device context picks its embedded target, ranks solutions for a
//! problem (find-db, else a heuristic over the applicable solvers: never benchmarks, never
//! compiles), prepares an invoker from the embedded kdb (cached by network config, solver and
//! perf config, as MIOpen's invoker cache plus the config), and runs it on device buffers whose
//! sizes are checked.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use kiln_format::ConvProblem;

use crate::backend::{Backend, BackendError, DevicePtr, Function, Stream};
use crate::embedded::EmbeddedTarget;
use crate::select::select_target;
use crate::solvers::{self, KernelArgs, LaunchDims, ManifestSolver};

/// Errors of the run-time API.
#[derive(Debug)]
pub enum RunError {
    /// Lookup or selection error.
    Kiln(crate::Error),
    /// The driver refused something.
    Backend(BackendError),
    /// A code object failed its checks.
    CodeObject {
        /// Solver.
        solver: &'static str,
        /// kdb key.
        key: String,
        /// What failed.
        source: crate::codeobject::CodeObjectError,
    },
    /// The kdb has no object for a solver variant.
    MissingKernel {
        /// Target.
        target: &'static str,
        /// `kernel_name` / `kernel_args`.
        key: String,
    },
    /// No embedded solver applies.
    NoSolution {
        /// The problem's find-db key.
        problem: String,
        /// Why each solver was rejected.
        reasons: Vec<(&'static str, &'static str)>,
    },
    /// A buffer is smaller than the problem needs.
    BufferTooSmall {
        /// `x`, `w`, `y` or `workspace`.
        which: &'static str,
        /// Bytes needed.
        needed: u64,
        /// Bytes given.
        given: u64,
    },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Kiln(e) => write!(f, "{e}"),
            RunError::Backend(e) => write!(f, "{e}"),
            RunError::CodeObject {
                solver,
                key,
                source,
            } => write!(f, "solver {solver}, kernel {key}: {source}"),
            RunError::MissingKernel { target, key } => write!(
                f,
                "target {target} embeds no code object {key} (rebuild the kdb: make kdb)"
            ),
            RunError::NoSolution { problem, reasons } => {
                write!(f, "no embedded solver applies to {problem}:")?;
                for (s, r) in reasons {
                    write!(f, " {s}: {r};")?;
                }
                Ok(())
            }
            RunError::BufferTooSmall {
                which,
                needed,
                given,
            } => write!(
                f,
                "buffer {which} holds {given} B, the problem needs {needed} B"
            ),
        }
    }
}

impl std::error::Error for RunError {}

impl From<crate::Error> for RunError {
    fn from(e: crate::Error) -> Self {
        RunError::Kiln(e)
    }
}
impl From<BackendError> for RunError {
    fn from(e: BackendError) -> Self {
        RunError::Backend(e)
    }
}

/// Where a candidate's rank came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ranking {
    /// A measured find-db record.
    FindDb,
    /// Not in the find-db: the solver order and perf config of the nearest measured problem
    /// (see [`kiln_format::heuristic`]), its time scaled by the work ratio.
    Nearest,
    /// The cost model: no measured problem of this class, or a solver none measured.
    Heuristic,
}

/// A runnable solution.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    /// The solver.
    pub solver: &'static ManifestSolver,
    /// Its perf config.
    pub params: &'static str,
    /// Measured (find-db) or estimated time in ms.
    pub time_ms: f64,
    /// Workspace bytes.
    pub workspace: u64,
    /// Where the rank came from.
    pub ranking: Ranking,
}

/// A prepared solution: kernel loaded, launch computed.
#[derive(Debug)]
pub struct Invoker {
    /// The solver.
    pub solver: &'static ManifestSolver,
    /// Its perf config.
    pub params: &'static str,
    function: Function,
    dims: LaunchDims,
    args: KernelArgs,
    problem: ConvProblem,
}

impl Invoker {
    /// Grid and block of the launch.
    pub fn dims(&self) -> LaunchDims {
        self.dims
    }
}

/// A device buffer (address and size in bytes).
#[derive(Clone, Copy, Debug)]
pub struct Buffer {
    /// Device address.
    pub ptr: DevicePtr,
    /// Size in bytes.
    pub bytes: u64,
}

/// Time spent in each step of a cold `prepare`.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrepareTimes {
    /// kdb lookup, block decode and sha256 (first touch of the block).
    pub decompress_s: f64,
    /// ELF structure and target checks.
    pub verify_s: f64,
    /// `cuModuleLoadData` + function lookup.
    pub module_load_s: f64,
}

/// (network config, solver, perf config): MIOpen keys its invoker cache by the first two, as
/// its perf config per problem is fixed by the perf-db; kiln callers (find, tune, selftest) run
/// several perf configs of one solver, and each is its own kernel.
type InvokerKey = (String, &'static str, &'static str);

/// A device and the embedded target it runs.
pub struct Context {
    backend: Box<dyn Backend>,
    target: &'static EmbeddedTarget,
    exact: bool,
    invokers: Mutex<HashMap<InvokerKey, Arc<Invoker>>>,
}

impl Context {
    /// Opens a context on a backend: the embedded target is chosen by arch and CU count.
    pub fn new(backend: Box<dyn Backend>) -> Result<Context, RunError> {
        let info = backend.info();
        let sel = select_target(&info.arch, info.compute_units)?;
        Ok(Context {
            backend,
            target: sel.target,
            exact: sel.exact,
            invokers: Mutex::new(HashMap::new()),
        })
    }

    /// The backend.
    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    /// The embedded target in use, and whether its CU count matched exactly.
    pub fn target(&self) -> (&'static EmbeddedTarget, bool) {
        (self.target, self.exact)
    }

    /// Ranked runnable solutions for `p`.
    pub fn find_solutions(&self, p: &ConvProblem) -> Result<Vec<Candidate>, RunError> {
        rank(self.target, p)
    }

    /// Loads (or reuses) the invoker of a candidate for `p`.
    pub fn prepare(&self, p: &ConvProblem, c: &Candidate) -> Result<Arc<Invoker>, RunError> {
        self.prepare_timed(p, c).map(|(i, _)| i)
    }

    /// As [`Context::prepare`], also reporting where a cold prepare spent its time.
    pub fn prepare_timed(
        &self,
        p: &ConvProblem,
        c: &Candidate,
    ) -> Result<(Arc<Invoker>, PrepareTimes), RunError> {
        let key = (
            p.network_config().as_str().to_string(),
            c.solver.id,
            c.params,
        );
        if let Some(inv) = self.invokers.lock().map_err(|_| poisoned())?.get(&key) {
            return Ok((inv.clone(), PrepareTimes::default()));
        }
        let mut times = PrepareTimes::default();
        let t0 = std::time::Instant::now();
        let dtype = p.data_types()[0];
        let name = solvers::kernel_name(c.solver);
        let args = solvers::kernel_args(c.solver, dtype, c.params, self.target.arch);
        let object =
            self.target
                .code_object(&name, &args)?
                .ok_or_else(|| RunError::MissingKernel {
                    target: self.target.basename,
                    key: format!("'{name}' '{args}'"),
                })?;
        let t1 = std::time::Instant::now();
        crate::codeobject::check_for_device(object.bytes, &self.backend.info().arch).map_err(
            |source| RunError::CodeObject {
                solver: c.solver.id,
                key: format!("'{name}' '{args}'"),
                source,
            },
        )?;
        let t2 = std::time::Instant::now();
        let inv = Arc::new(self.load(p, c, object.bytes)?);
        let t3 = std::time::Instant::now();
        times.decompress_s = (t1 - t0).as_secs_f64();
        times.verify_s = (t2 - t1).as_secs_f64();
        times.module_load_s = (t3 - t2).as_secs_f64();
        let mut cache = self.invokers.lock().map_err(|_| poisoned())?;
        let inv = cache.entry(key).or_insert(inv).clone();
        Ok((inv, times))
    }

    /// An invoker for `c` on `p` from a code object the caller supplies (built at run time,
    /// e.g. by NVRTC, instead of taken from the embedded kdb). The object gets the same ELF
    /// and target checks; the invoker is not cached. `kiln bench` uses it to compare cold starts.
    pub fn invoker_from_object(
        &self,
        p: &ConvProblem,
        c: &Candidate,
        object: &[u8],
    ) -> Result<Invoker, RunError> {
        crate::codeobject::check_for_device(object, &self.backend.info().arch).map_err(
            |source| RunError::CodeObject {
                solver: c.solver.id,
                key: "caller-supplied object".into(),
                source,
            },
        )?;
        self.load(p, c, object)
    }

    /// Loads a checked code object and builds the invoker of `c` on `p` around it.
    fn load(&self, p: &ConvProblem, c: &Candidate, object: &[u8]) -> Result<Invoker, RunError> {
        let module = self.backend.load_module(object)?;
        let function = self.backend.function(module, c.solver.function)?;
        Ok(Invoker {
            solver: c.solver,
            params: c.params,
            function,
            dims: solvers::launch_dims(c.solver, p, c.params),
            args: KernelArgs::of(p),
            problem: *p,
        })
    }

    /// Runs an invoker on `x`, `w`, `y` (and `workspace`, unused by kiln's solvers).
    pub fn run(
        &self,
        inv: &Invoker,
        x: Buffer,
        w: Buffer,
        y: Buffer,
        workspace: Option<Buffer>,
        stream: Stream,
    ) -> Result<(), RunError> {
        let p = &inv.problem;
        let es = p.data_types()[0].size_bytes() as u64;
        let [xn, wn, yn] = p.element_counts();
        for (which, buf, n) in [("x", x, xn), ("w", w, wn), ("y", y, yn)] {
            if buf.bytes < n * es {
                return Err(RunError::BufferTooSmall {
                    which,
                    needed: n * es,
                    given: buf.bytes,
                });
            }
        }
        let need_ws = solvers::workspace(inv.solver, p);
        if need_ws > workspace.map_or(0, |b| b.bytes) {
            return Err(RunError::BufferTooSmall {
                which: "workspace",
                needed: need_ws,
                given: workspace.map_or(0, |b| b.bytes),
            });
        }
        let (mut xp, mut wp, mut yp, mut args) = (x.ptr.0, w.ptr.0, y.ptr.0, inv.args);
        let mut params: [*mut c_void; 4] = [
            (&mut xp as *mut u64).cast(),
            (&mut wp as *mut u64).cast(),
            (&mut yp as *mut u64).cast(),
            (&mut args as *mut KernelArgs).cast(),
        ];
        self.backend.launch(
            inv.function,
            inv.dims.grid,
            inv.dims.block,
            stream,
            &mut params,
        )?;
        Ok(())
    }
}

fn poisoned() -> RunError {
    RunError::Backend(BackendError {
        call: "invoker cache",
        message: "lock poisoned by a panic in another thread".into(),
    })
}

/// Most solvers a manifest may hold (rankings are built on the stack).
pub const MAX_SOLVERS: usize = 16;

/// Measured problems the fallback looks through for a perf config that applies.
const NEIGHBOURS_FOR_PARAMS: usize = 8;

/// A problem's own perf-db record: (solver, params) pairs.
type PerfRecord = heapless::Vec<(&'static str, &'static str), { crate::db::MAX_SOLUTIONS }>;

/// Ranks the runnable solutions of `p` on `target` (no device needed): the find-db's record
/// when there is one, else the fallback of [`rank_unmeasured`].
pub fn rank(target: &'static EmbeddedTarget, p: &ConvProblem) -> Result<Vec<Candidate>, RunError> {
    let tuned = target.perf_record(p)?;
    let mut out = Vec::new();
    // Measured records first: kiln's solvers named in the find-db, in measured order.
    if let Some(found) = target.find_solutions(p)? {
        for s in found.iter() {
            let s = s?;
            let Some(solver) = solvers::by_id(s.solver) else {
                continue;
            };
            let Some(params) =
                tuned_params(&tuned, p, solver).or_else(|| solvers::default_params(solver, p))
            else {
                continue;
            };
            out.push(Candidate {
                solver,
                params,
                time_ms: s.time_ms,
                workspace: s.workspace,
                ranking: Ranking::FindDb,
            });
        }
    }
    // Then every other applicable solver: by the cost model after measured ones (the record
    // already says what was measured here), else in the fallback's order.
    let model = if out.is_empty() {
        target.neighbours
    } else {
        &[]
    };
    for c in fallback(p, model, &tuned) {
        if !out.iter().any(|o| o.solver.id == c.solver.id) {
            out.push(c);
        }
    }
    if out.is_empty() {
        return Err(RunError::NoSolution {
            problem: p.find_db_key().as_str().to_string(),
            reasons: solvers::manifest()
                .iter()
                .map(|s| {
                    let why = s
                        .params
                        .iter()
                        .find_map(|q| solvers::applicable(s, p, q).err())
                        .unwrap_or("no applicable perf config");
                    (s.id, why)
                })
                .collect(),
        });
    }
    Ok(out)
}

/// `solver`'s config in a perf-db record, if the manifest compiles it and it applies to `p`.
fn tuned_params(
    tuned: &[(&'static str, &'static str)],
    p: &ConvProblem,
    solver: &'static ManifestSolver,
) -> Option<&'static str> {
    let (_, q) = tuned.iter().find(|(s, _)| *s == solver.id)?;
    usable_config(solver, p, q)
}

/// The manifest's copy of config `q` of `solver`, if the manifest compiles it and it applies
/// to `p` (a config read from a database may be neither).
fn usable_config(
    solver: &'static ManifestSolver,
    p: &ConvProblem,
    q: &str,
) -> Option<&'static str> {
    solver
        .params
        .iter()
        .copied()
        .find(|x| *x == q)
        .filter(|x| solvers::applicable(solver, p, x).is_ok())
}

/// The fallback for a problem with no find-db record, built on the stack (no allocation):
/// every applicable solver, those measured on the nearest measured problem of `model` first
/// (in its order, times scaled by the work ratio), then the rest by the cost model. When no
/// measured problem is within `NEAR_DISTANCE`, the cost model ranks everything. Each solver's
/// perf config is `p`'s own perf-db record when `target` has one, else the tuned config of the
/// nearest measured problem where that config applies, else a default.
pub fn rank_unmeasured(
    p: &ConvProblem,
    model: &[kiln_format::heuristic::MeasuredProblem<'_>],
    target: Option<&'static EmbeddedTarget>,
) -> Result<heapless::Vec<Candidate, MAX_SOLVERS>, RunError> {
    let tuned = match target {
        Some(t) => t.perf_record(p)?,
        None => PerfRecord::new(),
    };
    Ok(fallback(p, model, &tuned))
}

fn fallback(
    p: &ConvProblem,
    model: &[kiln_format::heuristic::MeasuredProblem<'_>],
    tuned: &[(&'static str, &'static str)],
) -> heapless::Vec<Candidate, MAX_SOLVERS> {
    use kiln_format::heuristic::{macs, nearest_k, NEAR_DISTANCE};
    let mut near = nearest_k::<NEIGHBOURS_FOR_PARAMS>(model, p);
    // A model whose nearest problem is far says less than the cost model: leave it out.
    if near.first().is_none_or(|&(_, d)| d > NEAR_DISTANCE) {
        near.clear();
    }
    let closest = near.first().map(|&(m, _)| m);
    let mut out: heapless::Vec<(bool, Candidate), MAX_SOLVERS> = heapless::Vec::new();
    for solver in solvers::manifest() {
        let from_neighbours = || {
            near.iter().find_map(|(m, _)| {
                let s = m.solvers.iter().find(|s| s.solver == solver.id)?;
                usable_config(solver, p, s.params)
            })
        };
        let Some(params) = tuned_params(tuned, p, solver)
            .or_else(from_neighbours)
            .or_else(|| solvers::default_params(solver, p))
        else {
            continue;
        };
        let measured = closest.and_then(|m| {
            let s = m.solvers.iter().find(|s| s.solver == solver.id)?;
            Some(s.time_ms as f64 * macs(p) / m.macs.max(1.0))
        });
        let c = Candidate {
            solver,
            params,
            time_ms: measured.unwrap_or_else(|| solvers::estimated_ms(solver, p, params)),
            workspace: solvers::workspace(solver, p),
            ranking: if measured.is_some() {
                Ranking::Nearest
            } else {
                Ranking::Heuristic
            },
        };
        // A manifest larger than MAX_SOLVERS is refused by a test; never silently here.
        if out.push((measured.is_some(), c)).is_err() {
            break;
        }
    }
    out.sort_unstable_by(|(ma, a), (mb, b)| mb.cmp(ma).then(a.time_ms.total_cmp(&b.time_ms)));
    out.into_iter().map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_fits_a_stack_ranking() {
        // rank_unmeasured keeps at most MAX_SOLVERS; a larger manifest must raise the bound.
        assert!(solvers::manifest().len() <= MAX_SOLVERS);
    }
}
