//! kiln's convolution solvers: one type per solver, one file each, listed once in [`SOLVERS`].
//!
//! A solver's kernels and precompiled perf configs come from `kernels/manifest.toml` (compiled
//! into every kdb); its behaviour lives here, written against [`TunableSolver`]: which problems
//! it applies to, which of its configs can run a problem on a device ([`TargetCaps`]) and which
//! are worth trying there, how its kernels are launched ([`LaunchPlan`]), what it costs when
//! nothing was measured, and its default perf config. Solver code sees a perf config only as
//! its own typed `Config`, parsed once at the contract's edge; a config that does not parse is
//! one error there. The tests at the bottom fail when the manifest and [`SOLVERS`] disagree.
//!
//! Adding a solver: a kernel in `kernels/`, a `[[solver]]` entry in the manifest, a file here
//! implementing [`TunableSolver`] (its invariants tested there), and one line in [`SOLVERS`].

mod caps;
pub mod cutlass;
mod depthwise;
mod depthwise_nchw;
mod dot1x1;
mod expand;
mod first_nchw;
mod gemm1x1;
mod gemm_grouped_nchw;
mod grouped;
mod grouped_nchw;
mod igemm;
pub mod mma_amd;
mod mma_grouped;
mod naive;
mod narrow;
mod params;
mod plan;
mod tiled;
mod wgmma;

use kiln_format::{ConvProblem, DataType, Direction, MathMode, SolverEntry};

#[cfg(test)]
pub(crate) use caps::devices;
pub use caps::{SmVersion, TargetCaps, MEASURED_SMS};
pub use plan::{
    KernelLaunch, LaunchPlan, Packing, PoolPartials, TmaArguments, TmaOperand, TmaView, MAX_KERNELS,
};

/// Why a solver does not apply.
pub type NotApplicable = &'static str;

/// A convolution solver as its file writes it: what MIOpen calls a tunable solver
/// (`IsApplicable`, `IsValidPerformanceConfig`, `GetSolution`, a typed `PerformanceConfig`),
/// for kiln's precompiled kernels. Every method but [`TunableSolver::parse`] receives the
/// config parsed; [`Solver`] is implemented for every `TunableSolver` and is what the resolver
/// and the context call.
pub trait TunableSolver: Sync {
    /// A perf config, parsed.
    type Config: Copy + core::fmt::Debug;

    /// How a perf config is written, for the error when one does not parse
    /// (`"perf config is not bm,bn,stages,splits"`).
    const CONFIG_FORM: &'static str;

    /// The solver id: the manifest's `id` and the name in find-db and perf-db records.
    fn id(&self) -> &'static str;

    /// The config `params` (one of the manifest's `params`, or a database's) says; `None`
    /// when it is malformed.
    fn parse(&self, params: &str) -> Option<Self::Config>;

    /// Whether the solver can run `p` on the device at all, whatever the config. Checks shared
    /// by every solver ([`common_checks`], the manifest's `archs`, data types and math mode)
    /// are made around this.
    fn applicable(&self, p: &ConvProblem, caps: &TargetCaps) -> Result<(), NotApplicable>;

    /// Whether config `cfg` can run `p` on the device (its code object computes the right
    /// answer within the device's limits). Launch limits are checked on the plan around this.
    fn valid(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        cfg: &Self::Config,
    ) -> Result<(), NotApplicable>;

    /// Whether a valid `cfg` is worth trying on `p`: configs the solver knows to lose there are
    /// pruned from tuning, the fallback's ranking and the default pick (a database record
    /// naming one still runs it). Everything valid by default.
    fn worth_trying(
        &self,
        _p: &ConvProblem,
        _caps: &TargetCaps,
        _cfg: &Self::Config,
    ) -> Result<(), NotApplicable> {
        Ok(())
    }

    /// How to launch the solution (called only for a valid config).
    fn plan(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Self::Config) -> LaunchPlan;

    /// Estimated time in ms, for ranking what was never measured.
    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Self::Config) -> f64;

    /// The output tile one block computes, in elements: the default pick orders configs by it.
    fn tile(&self, cfg: &Self::Config) -> u64;

    /// For kernels whose argument is a block of TMA tensor maps the host encodes (sm_90a
    /// solvers): what the block holds. `None` for kiln's `(x, w, y, KilnConvArgs)` kernels and
    /// for library kernels with a device-side builder.
    fn tma_arguments(
        &self,
        _p: &ConvProblem,
        _caps: &TargetCaps,
        _cfg: &Self::Config,
    ) -> Option<TmaArguments> {
        None
    }

    /// A solver whose measured times stand in for this one's where this one was never
    /// measured near a problem (the same main loop with another prologue or epilogue).
    fn timed_like(&self) -> Option<&'static str> {
        None
    }

    /// Whether the solver copies its input into channel vectors of its own (the first-layer
    /// kernels pack 3-channel pixels), so that a 3-D problem whose depth folds away
    /// ([`ConvProblem::as_2d`]) may run on it however few bytes its channels fill: the
    /// 8-byte rule of [`folded`] is about other kernels' loads.
    fn packs_channels(&self) -> bool {
        false
    }

    /// Whether every kernel of the solver waits for the previous kernel in the stream
    /// (`griddepcontrol.wait`) before it touches memory, in its sm_90+ objects, so that kiln
    /// may launch it with programmatic dependent launch.
    fn waits_on_predecessor(&self) -> bool {
        false
    }

    /// A config to weigh beside `measured`, one a near problem ran, when `measured`'s tiles
    /// would fit `p` badly and another of `candidates` (the configs worth trying on `p`) is
    /// its counterpart shaped for `p`: the fallback scales `measured`'s time to it by the cost
    /// model. A neighbour's best config answers for its own shape; without this, a config no
    /// measured neighbour won (a narrow tile, say) is never tried. None by default.
    fn refit(
        &self,
        _p: &ConvProblem,
        _caps: &TargetCaps,
        _measured: &Self::Config,
        _candidates: &mut dyn Iterator<Item = (&'static str, Self::Config)>,
    ) -> Option<&'static str> {
        None
    }

    /// Output tiles `cfg` cuts `p` into: by default the blocks of the plan's largest grid. A
    /// kernel whose blocks loop over several tiles says how many tiles; the default pick counts
    /// them.
    fn tiles_launched(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Self::Config) -> u64 {
        self.plan(p, caps, cfg)
            .kernels
            .iter()
            .map(|k| k.grid.iter().map(|&g| g as u64).product::<u64>())
            .max()
            .unwrap_or(0)
    }

    /// The config to use when no perf-db record names one, among `candidates` (the configs
    /// worth trying on `p`): by default the largest tile that still gives the GPU at least 256
    /// blocks (the last of equal tiles), else the smallest tile (the first).
    fn default_config(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        candidates: &mut dyn Iterator<Item = (&'static str, Self::Config)>,
    ) -> Option<&'static str> {
        largest_tile_filling_the_gpu(self, p, caps, candidates)
    }

    /// The candidate the cost model ranks fastest: the default pick of solvers whose model
    /// is good enough to choose by.
    fn fastest(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        candidates: &mut dyn Iterator<Item = (&'static str, Self::Config)>,
    ) -> Option<&'static str> {
        candidates
            .map(|(q, c)| (q, self.estimate(p, caps, &c)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(q, _)| q)
    }
}

/// [`TunableSolver::default_config`]'s default: the largest tile that still gives the GPU at
/// least 256 blocks (the last of equal tiles), else the smallest tile (the first).
pub(crate) fn largest_tile_filling_the_gpu<S: TunableSolver + ?Sized>(
    solver: &S,
    p: &ConvProblem,
    caps: &TargetCaps,
    candidates: &mut dyn Iterator<Item = (&'static str, S::Config)>,
) -> Option<&'static str> {
    largest_tile_filling_the_gpu_by(solver, p, caps, candidates, |_| 0)
}

/// [`largest_tile_filling_the_gpu`], preferring among tiles of one size the config whose
/// `tie` is largest (then, as there, the last of equals with 256 blocks, the first without).
pub(crate) fn largest_tile_filling_the_gpu_by<S: TunableSolver + ?Sized>(
    solver: &S,
    p: &ConvProblem,
    caps: &TargetCaps,
    candidates: &mut dyn Iterator<Item = (&'static str, S::Config)>,
    tie: impl Fn(&S::Config) -> u32,
) -> Option<&'static str> {
    let blocks = |c: &S::Config| solver.tiles_launched(p, caps, c);
    // (config, (tile, tie)) of the largest tile with 256 blocks, and of the smallest tile.
    let mut big: Option<(&'static str, (u64, u32))> = None;
    let mut small: Option<(&'static str, (u64, u32))> = None;
    for (q, c) in candidates {
        let key = (solver.tile(&c), tie(&c));
        if blocks(&c) >= 256 && big.is_none_or(|(_, b)| key >= b) {
            big = Some((q, key));
        }
        if small.is_none_or(|(_, (t, k))| key.0 < t || (key.0 == t && key.1 > k)) {
            small = Some((q, key));
        }
    }
    big.or(small).map(|(q, _)| q)
}

/// A solver as the resolver, the context and the tools see it: perf configs as the manifest
/// and the databases write them, each parsed once per call at this edge. Implemented for every
/// [`TunableSolver`]; see there for what each method means.
pub trait Solver: Sync {
    /// The solver id.
    fn id(&self) -> &'static str;

    /// The problem the solver's kernels run for `p`: `p`, or the 2-D problem a 3-D `p` folds
    /// into ([`folded`]) when the solver takes that and not `p`. Every other
    /// method lowers `p` so; the invoker must run the problem this returns.
    fn runs_as(&self, p: &ConvProblem, caps: &TargetCaps) -> ConvProblem;

    /// Whether config `params` can run `p` on the device (the solver's own checks: see
    /// [`SolverRef::applicable`] for all of them).
    fn check(&self, p: &ConvProblem, caps: &TargetCaps, params: &str) -> Result<(), NotApplicable>;

    /// Whether config `params`, once it can run `p`, is worth trying there (see
    /// [`TunableSolver::worth_trying`]).
    fn worth_trying_params(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<(), NotApplicable>;

    /// [`Solver::check`], and the config is worth trying on `p`.
    fn check_offered(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<(), NotApplicable> {
        self.check(p, caps, params)?;
        self.worth_trying_params(p, caps, params)
    }

    /// The launch plan of config `params` (checked first).
    fn launch_plan(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<LaunchPlan, NotApplicable>;

    /// The cost model's time of config `params` (checked first).
    fn estimated_ms(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<f64, NotApplicable>;

    /// The TMA argument block of config `params`, for solvers whose kernels take one.
    fn tma_block(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<Option<TmaArguments>, NotApplicable>;

    /// See [`TunableSolver::timed_like`].
    fn timed_like(&self) -> Option<&'static str>;

    /// See [`TunableSolver::waits_on_predecessor`].
    fn waits_on_predecessor(&self) -> bool;

    /// See [`TunableSolver::refit`]; `None` when `measured` does not parse.
    fn refit_params(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        measured: &str,
        candidates: &mut dyn Iterator<Item = &'static str>,
    ) -> Option<&'static str>;

    /// See [`TunableSolver::default_config`].
    fn default_params(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        candidates: &mut dyn Iterator<Item = &'static str>,
    ) -> Option<&'static str>;
}

/// `params` parsed and checked: the solver applies to `p` on the device and the config is valid.
fn checked<S: TunableSolver>(
    s: &S,
    p: &ConvProblem,
    caps: &TargetCaps,
    params: &str,
) -> Result<S::Config, NotApplicable> {
    let cfg = s.parse(params).ok_or(S::CONFIG_FORM)?;
    s.applicable(p, caps)?;
    s.valid(p, caps, &cfg)?;
    Ok(cfg)
}

/// The 2-D problem kiln may run a 3-D problem as ([`ConvProblem::as_2d`]), where its input
/// channels (a group's) fill 8-byte vectors. Narrower ones (230 FP16 channels: two a load) stay
/// 3-D: the 3-D CUTLASS kernels copy them into a padded tensor and load 16 bytes at a time,
/// where the 2-D ones would load 4 (2-element loads took 1.64x the time of 8-element ones, the
/// median of 340 problems in the sm_90_132 find log). On the four such video layers measured
/// at batch 32, the padded 3-D kernel beat every 2-D one (by 1.1-1.8x).
pub fn folded(p: &ConvProblem) -> Option<ConvProblem> {
    let bytes = p.group_channels() as u64 * p.data_types()[0].size_bytes() as u64;
    if !bytes.is_multiple_of(8) {
        return None;
    }
    p.as_2d()
}

/// The problem `s` runs for `p`: `p`, or its 2-D form ([`folded`]) where `s` does not take
/// `p` but takes that. A 3-D layer whose depth folds away then runs on the 2-D kernels, tuned
/// on many more problems than the 3-D ones.
fn runs_as<S: TunableSolver>(s: &S, p: &ConvProblem, caps: &TargetCaps) -> ConvProblem {
    lowered(s, p, caps).unwrap_or(*p)
}

/// [`runs_as`] where it differs from `p` (no copy of a 2-D problem: resolving one calls the
/// methods below thousands of times).
#[inline]
fn lowered<S: TunableSolver>(s: &S, p: &ConvProblem, caps: &TargetCaps) -> Option<ConvProblem> {
    if p.spatial_dims() != 3 {
        return None;
    }
    lowered_volume(s, p, caps)
}

/// [`lowered`] for a 3-D problem. Out of line (volumes are rare beside images): inlined, it
/// made a 2-D problem's resolve 15% slower.
#[cold]
fn lowered_volume<S: TunableSolver>(
    s: &S,
    p: &ConvProblem,
    caps: &TargetCaps,
) -> Option<ConvProblem> {
    // The shape test first: most volumes do not fold, and it is cheaper than applicability.
    let q = if s.packs_channels() {
        p.as_2d()?
    } else {
        folded(p)?
    };
    if s.applicable(p, caps).is_ok() {
        return None;
    }
    s.applicable(&q, caps).is_ok().then_some(q)
}

/// `$p` rebound to the problem `$s` runs for it ([`runs_as`]), copied only when lowered.
macro_rules! lower {
    ($s:expr, $p:ident, $caps:expr) => {
        let lowered_problem = lowered($s, $p, $caps);
        let $p = lowered_problem.as_ref().unwrap_or($p);
    };
}

impl<S: TunableSolver> Solver for S {
    fn id(&self) -> &'static str {
        TunableSolver::id(self)
    }

    fn runs_as(&self, p: &ConvProblem, caps: &TargetCaps) -> ConvProblem {
        runs_as(self, p, caps)
    }

    fn check(&self, p: &ConvProblem, caps: &TargetCaps, params: &str) -> Result<(), NotApplicable> {
        lower!(self, p, caps);
        checked(self, p, caps, params).map(|_| ())
    }

    fn worth_trying_params(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<(), NotApplicable> {
        lower!(self, p, caps);
        let cfg = self.parse(params).ok_or(S::CONFIG_FORM)?;
        self.worth_trying(p, caps, &cfg)
    }

    fn launch_plan(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<LaunchPlan, NotApplicable> {
        lower!(self, p, caps);
        let cfg = checked(self, p, caps, params)?;
        Ok(self.plan(p, caps, &cfg))
    }

    fn estimated_ms(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<f64, NotApplicable> {
        lower!(self, p, caps);
        let cfg = checked(self, p, caps, params)?;
        Ok(self.estimate(p, caps, &cfg))
    }

    fn tma_block(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<Option<TmaArguments>, NotApplicable> {
        lower!(self, p, caps);
        let cfg = checked(self, p, caps, params)?;
        Ok(self.tma_arguments(p, caps, &cfg))
    }

    fn timed_like(&self) -> Option<&'static str> {
        TunableSolver::timed_like(self)
    }

    fn waits_on_predecessor(&self) -> bool {
        TunableSolver::waits_on_predecessor(self)
    }

    fn refit_params(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        measured: &str,
        candidates: &mut dyn Iterator<Item = &'static str>,
    ) -> Option<&'static str> {
        lower!(self, p, caps);
        let measured = self.parse(measured)?;
        let mut parsed = candidates.filter_map(|q| Some((q, self.parse(q)?)));
        self.refit(p, caps, &measured, &mut parsed)
    }

    fn default_params(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        candidates: &mut dyn Iterator<Item = &'static str>,
    ) -> Option<&'static str> {
        lower!(self, p, caps);
        let mut parsed = candidates.filter_map(|q| Some((q, self.parse(q)?)));
        self.default_config(p, caps, &mut parsed)
    }
}

/// Every solver kiln implements. The manifest must list exactly these (tests below).
pub static SOLVERS: &[&dyn Solver] = &[
    &naive::DirectNaive,
    &tiled::DirectTiled,
    &igemm::ImplicitGemm,
    &gemm1x1::Gemm1x1,
    &cutlass::IGEMM,
    &cutlass::THREE_TF32,
    &cutlass::THREE_TF32_WIDE,
    &cutlass::TF32,
    &cutlass::FIRST_LAYER,
    &cutlass::FIRST_LAYER_3XTF32,
    &cutlass::FIRST_LAYER_TF32,
    &cutlass::IGEMM_SCALAR_OUT,
    &cutlass::NCHW_IGEMM,
    &cutlass::NCHW_3XTF32,
    &cutlass::NCHW_3XTF32_WIDE,
    &cutlass::NCHW_TF32,
    &cutlass::GROUPED,
    &cutlass::VOLUME,
    &cutlass::VOLUME_SCALAR_OUT,
    &cutlass::VOLUME_3XTF32,
    &cutlass::VOLUME_NCHW_3XTF32,
    &cutlass::NCHW_GEMM_3XTF32,
    &cutlass::NCHW_FIRST_LAYER_3XTF32,
    &grouped::DirectGrouped,
    &grouped_nchw::DirectGroupedNchw,
    &gemm_grouped_nchw::GemmGroupedNchw,
    &depthwise_nchw::DirectDepthwiseNchw,
    &first_nchw::DirectFirstLayerNchw,
    &depthwise::DirectDepthwise,
    &dot1x1::Dot1x1,
    &narrow::MmaNarrow,
    &expand::MmaExpand1x1,
    &mma_grouped::MmaGrouped,
    &wgmma::GEMM_1X1,
    &wgmma::IMPLICIT_GEMM,
    &wgmma::GEMM_1X1_GATED,
    &wgmma::IMPLICIT_GEMM_GATED,
    &wgmma::IMPLICIT_GEMM_NARROW,
    &wgmma::IMPLICIT_GEMM_3D,
    &wgmma::IMPLICIT_GEMM_3D_SWAP,
    &wgmma::GROUPED,
    &wgmma::GEMM_1X1_TF32,
    &wgmma::IMPLICIT_GEMM_TF32,
    &wgmma::FIRST_LAYER,
    &wgmma::FIRST_LAYER_3D,
    &mma_amd::MFMA,
    &mma_amd::WMMA,
];

/// The solver every other is checked against (`kiln selftest`, `kiln-tools find`).
pub const REFERENCE_SOLVER: &str = naive::ID;

/// A solver with its manifest entry: what the resolver ranks and the context prepares.
#[derive(Clone, Copy)]
pub struct SolverRef {
    /// The behaviour.
    pub imp: &'static dyn Solver,
    /// The manifest's description (kernels, options, perf configs).
    pub entry: &'static SolverEntry,
}

impl core::fmt::Debug for SolverRef {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.entry.id)
    }
}

impl PartialEq for SolverRef {
    fn eq(&self, other: &Self) -> bool {
        self.entry.id == other.entry.id
    }
}

impl SolverRef {
    /// The solver id.
    pub fn id(&self) -> &'static str {
        self.entry.id
    }

    /// Whether config `params` can run `p` on the device: the shared checks, the manifest's
    /// `archs`, data types and math mode, the solver's own, and on its plan the kernels it
    /// names, the builder's 32-bit workspace offsets and the launch limits.
    pub fn applicable(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<(), NotApplicable> {
        self.plan(p, caps, params).map(|_| ())
    }

    /// The launch plan of config `params`, made after every check [`SolverRef::applicable`]
    /// names (the plan's own checks are made on it).
    pub fn plan(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<LaunchPlan, NotApplicable> {
        common_checks(p)?;
        if !self.entry.builds_for(caps.code_arch) {
            return Err("not built for this arch");
        }
        if !self.entry.builds_type(p.data_types()[0].name()) {
            return Err("not built for this data type");
        }
        if self.entry.math_mode() == MathMode::AllowTf32 && p.math() != MathMode::AllowTf32 {
            return Err("TF32 math: only for problems that opt in (math mode tf32)");
        }
        let plan = self.imp.launch_plan(p, caps, params)?;
        if p.fusion().pool && plan.pool_partials.is_none() {
            return Err("fused global-pool partial sums: this solver does not write them");
        }
        if p.fusion().x_scale && !plan.scales_x {
            return Err("x scaled per image and channel: this solver does not scale its input");
        }
        if plan
            .kernels
            .iter()
            .any(|k| !self.entry.functions.contains(&k.kernel))
        {
            return Err("launch plan names a kernel the manifest lacks");
        }
        // A library's parameter builder reports workspace offsets as 32-bit ints.
        if !self.entry.builder.is_empty() && plan.workspace_bytes > i32::MAX as u64 {
            return Err("workspace past 2 GiB (the builder's offsets are 32-bit)");
        }
        plan.within_launch_limits()?;
        Ok(plan)
    }

    /// [`SolverRef::applicable`], and the solver finds the config worth trying on `p`
    /// ([`TunableSolver::worth_trying`]).
    pub fn offered(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<(), NotApplicable> {
        self.applicable(p, caps, params)?;
        self.imp.worth_trying_params(p, caps, params)
    }

    /// The manifest's perf configs worth trying on `p` on the device: what tuning measures and
    /// the fallback and the default pick choose from.
    pub fn offered_params<'a>(
        &'a self,
        p: &'a ConvProblem,
        caps: &'a TargetCaps,
    ) -> impl Iterator<Item = &'static str> + 'a {
        self.entry
            .params
            .iter()
            .copied()
            .filter(move |q| self.offered(p, caps, q).is_ok())
    }

    /// The manifest's copy of perf config `q`, if the manifest compiles it and it can run `p`
    /// (a config read from a database may be neither).
    pub fn usable_config(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        q: &str,
    ) -> Option<&'static str> {
        self.compiled(q)
            .filter(|x| self.applicable(p, caps, x).is_ok())
    }

    /// The manifest's copy of perf config `q`, if the manifest compiles it and it is worth
    /// trying on `p` (a near problem's config: the fallback offers only what tuning would).
    pub fn offered_config(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        q: &str,
    ) -> Option<&'static str> {
        self.compiled(q)
            .filter(|x| self.offered(p, caps, x).is_ok())
    }

    /// The manifest's copy of perf config `q`, if it compiles one.
    fn compiled(&self, q: &str) -> Option<&'static str> {
        self.entry.params.iter().copied().find(|x| *x == q)
    }

    /// The problem this solver's kernels run for `p` (see [`Solver::runs_as`]).
    pub fn runs_as(&self, p: &ConvProblem, caps: &TargetCaps) -> ConvProblem {
        self.imp.runs_as(p, caps)
    }

    /// The cost model's time of config `params` on `p`, in ms.
    pub fn estimate(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<f64, NotApplicable> {
        self.imp.estimated_ms(p, caps, params)
    }

    /// The TMA argument block of config `params`, for solvers whose kernels take one.
    pub fn tma_arguments(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        params: &str,
    ) -> Result<Option<TmaArguments>, NotApplicable> {
        self.imp.tma_block(p, caps, params)
    }

    /// See [`TunableSolver::timed_like`].
    pub fn timed_like(&self) -> Option<&'static str> {
        self.imp.timed_like()
    }

    /// See [`TunableSolver::waits_on_predecessor`].
    pub fn waits_on_predecessor(&self) -> bool {
        self.imp.waits_on_predecessor()
    }

    /// The counterpart of a near problem's config `measured` shaped for `p`, if the solver
    /// offers one (see [`TunableSolver::refit`]).
    pub fn refit(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        measured: &str,
    ) -> Option<&'static str> {
        self.imp
            .refit_params(p, caps, measured, &mut self.offered_params(p, caps))
    }

    /// The default perf config among those worth trying (see
    /// [`TunableSolver::default_config`]).
    pub fn default_params(&self, p: &ConvProblem, caps: &TargetCaps) -> Option<&'static str> {
        self.imp
            .default_params(p, caps, &mut self.offered_params(p, caps))
    }

    /// Why no perf config of this solver is offered for `p` (the first config's reason).
    pub fn why_not(&self, p: &ConvProblem, caps: &TargetCaps) -> NotApplicable {
        self.entry
            .params
            .iter()
            .find_map(|q| self.offered(p, caps, q).err())
            .unwrap_or("no applicable perf config")
    }
}

/// The registered solvers the manifest compiled, in manifest order (a solver missing on either
/// side is left out here and reported by the tests).
pub fn registered() -> impl Iterator<Item = SolverRef> {
    crate::embedded::kernel_manifest()
        .iter()
        .filter_map(|entry| {
            SOLVERS
                .iter()
                .find(|s| s.id() == entry.id)
                .map(|&imp| SolverRef { imp, entry })
        })
}

/// A registered solver by id.
pub fn by_id(id: &str) -> Option<SolverRef> {
    registered().find(|s| s.id() == id)
}

/// The solver that runs a gated problem (`+gate`) in place of `solver`, which measured its
/// plain twin: the plain wgmma solvers' gated siblings (`wgmma::GATED_SIBLINGS`); `None` for
/// a solver without one.
pub fn gated_sibling(solver: SolverRef) -> Option<SolverRef> {
    let (_, gated) = wgmma::GATED_SIBLINGS
        .iter()
        .find(|(plain, _)| *plain == solver.id())?;
    by_id(gated)
}

/// Checks every solver shares: forward, one supported data type, one layout, no casts, and
/// sizes that fit the kernels' `int` argument block (element offsets are 64-bit in the
/// kernels; tensors are capped below 2^37 elements).
pub fn common_checks(p: &ConvProblem) -> Result<(), NotApplicable> {
    if p.direction() != Direction::Forward {
        return Err("kiln's kernels are forward only");
    }
    let t = p.data_types();
    if !(t[0] == t[1] && t[1] == t[2]) {
        return Err("mixed data types");
    }
    if !matches!(t[0], DataType::Fp32 | DataType::Fp16 | DataType::Bf16) {
        return Err("data type not FP32, FP16 or BF16");
    }
    let l = p.layouts();
    if !(l[0] == l[1] && l[1] == l[2]) {
        return Err("tensors in different layouts");
    }
    if p.spec().cast_types.iter().any(Option::is_some) {
        return Err("cast types");
    }
    if kiln_format::abi::KernelArgs::of(p).is_none() {
        return Err("a size does not fit the kernels' 32-bit arguments");
    }
    let [x, w, y] = p.element_counts();
    if x.max(w).max(y) >= i32::MAX as u64 * 64 {
        return Err("tensor too large for 32-bit per-dimension indexing");
    }
    Ok(())
}

/// The cases of the reliability review (`shared/docs/review-reliability.md`, D1 and D8) that
/// planned a launch the kernels could not run: each is now refused with a reason.
#[cfg(test)]
mod hostile_problems {
    use super::*;
    use kiln_format::ConvSpec;

    fn caps() -> TargetCaps {
        devices::h100()
    }

    fn spec2(n: u32, c: u32, k: u32, hw: [u32; 2], f: [u32; 2], dtype: DataType) -> ConvSpec {
        ConvSpec {
            n,
            c,
            k,
            input: [1, hw[0], hw[1]],
            filter: [1, f[0], f[1]],
            data_types: [dtype; 3],
            ..ConvSpec::default()
        }
    }

    #[test]
    fn wrapping_element_counts_are_refused_when_the_problem_is_built() {
        // x and w really hold 2^64 elements; u64 arithmetic wrapped them to 0.
        let e = ConvProblem::new(spec2(
            1,
            65_536,
            1,
            [16_777_216, 16_777_216],
            [16_777_216, 16_777_216],
            DataType::Fp32,
        ))
        .unwrap_err();
        assert_eq!(e.to_string(), "x: tensor has more than 2^48 elements");
        // The same through the key.
        let key = "65536-16777216-16777216-16777216x16777216-1-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F";
        assert!(ConvProblem::from_find_db_key(key).is_err());
    }

    #[test]
    fn index_overflow_past_32_bits_in_the_gemm_kernels_is_not_applicable() {
        // 46341^2 output pixels per image: more than 2^31.
        let p =
            ConvProblem::new(spec2(1, 1, 32, [46_341, 46_341], [1, 1], DataType::Fp16)).unwrap();
        for id in ["ConvGemm1x1Fwd", "ConvImplicitGemmFwd"] {
            let s = by_id(id).unwrap();
            for q in s.entry.params {
                assert_eq!(
                    s.applicable(&p, &caps(), q),
                    Err("output pixels per image past 32-bit indexing"),
                    "{id} [{q}]"
                );
            }
        }
        // A 1291^3 filter: its size wraps a 32-bit int.
        let p = ConvProblem::new(ConvSpec {
            spatial_dims: 3,
            input: [1291; 3],
            filter: [1291; 3],
            layouts: [kiln_format::Layout::Ncdhw; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap();
        let s = by_id("ConvImplicitGemmFwd").unwrap();
        assert!(s.why_not(&p, &caps()).contains("reduction length"));
    }

    #[test]
    fn grids_past_the_launch_limits_are_not_applicable() {
        // 4,194,304 output channels: the review's plan[0], ConvGemm1x1Fwd [64,128,8], had a
        // grid.y of 65,536. Every config still offered launches within the limits.
        let p = ConvProblem::new(spec2(1, 1, 4_194_304, [1, 1], [1, 1], DataType::Fp16)).unwrap();
        let gemm = by_id("ConvGemm1x1Fwd").unwrap();
        assert!(gemm.applicable(&p, &caps(), "64,128,8").is_err());
        let plan = crate::resolve::rank_unmeasured(&p, &[], &caps(), None).unwrap();
        for r in plan.iter() {
            let launch = r
                .variant
                .solver
                .plan(&p, &caps(), r.variant.params)
                .unwrap();
            assert!(launch.within_launch_limits().is_ok(), "{:?}", r.variant);
            assert!(launch.kernels.iter().all(|k| k.grid[1] <= 65_535));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_format::ConvSpec;

    fn caps() -> TargetCaps {
        devices::h100()
    }

    #[test]
    fn every_manifest_solver_has_an_implementation_and_back() {
        let manifest = crate::embedded::kernel_manifest();
        for e in manifest {
            assert!(
                SOLVERS.iter().any(|s| s.id() == e.id),
                "manifest solver {} has no implementation in src/solvers/",
                e.id
            );
        }
        for s in SOLVERS {
            assert!(
                manifest.iter().any(|e| e.id == s.id()),
                "solver {} is registered but kernels/manifest.toml has no entry for it",
                s.id()
            );
        }
        assert_eq!(registered().count(), manifest.len());
        let mut ids: Vec<&str> = SOLVERS.iter().map(|s| s.id()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), SOLVERS.len(), "a solver is registered twice");
        assert!(by_id(REFERENCE_SOLVER).is_some());
    }

    #[test]
    fn every_registered_solver_plans_a_valid_launch_for_each_config() {
        let base = ConvSpec {
            n: 2,
            c: 64,
            k: 64,
            input: [1, 28, 28],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            ..ConvSpec::default()
        };
        let volume = ConvSpec {
            spatial_dims: 3,
            input: [4, 28, 28],
            filter: [3, 3, 3],
            pad: [1, 1, 1],
            layouts: [kiln_format::Layout::Ndhwc; 3],
            ..base
        };
        // NCHW FP32, NHWC FP16, NHWC FP32 opted in to TF32, 3-channel first layers, 3 output
        // channels and a depthwise layer: each solver runs one of them.
        let problems = [
            base,
            ConvSpec {
                layouts: [kiln_format::Layout::Nhwc; 3],
                data_types: [DataType::Fp16; 3],
                ..base
            },
            ConvSpec {
                layouts: [kiln_format::Layout::Nhwc; 3],
                math: kiln_format::MathMode::AllowTf32,
                ..base
            },
            // A first layer: 3 input channels, FP16, FP32 and FP32 opted in to TF32.
            ConvSpec {
                c: 3,
                layouts: [kiln_format::Layout::Nhwc; 3],
                data_types: [DataType::Fp16; 3],
                ..base
            },
            ConvSpec {
                c: 3,
                layouts: [kiln_format::Layout::Nhwc; 3],
                ..base
            },
            ConvSpec {
                c: 3,
                layouts: [kiln_format::Layout::Nhwc; 3],
                math: kiln_format::MathMode::AllowTf32,
                ..base
            },
            // NCHW FP16 and NCHW FP32 opted in to TF32 (the NCHW tensor-core solvers).
            ConvSpec {
                data_types: [DataType::Fp16; 3],
                ..base
            },
            ConvSpec {
                math: kiln_format::MathMode::AllowTf32,
                ..base
            },
            // 3 output channels (an image out of a decoder).
            ConvSpec {
                k: 3,
                layouts: [kiln_format::Layout::Nhwc; 3],
                data_types: [DataType::Fp16; 3],
                ..base
            },
            ConvSpec {
                groups: 64,
                layouts: [kiln_format::Layout::Nhwc; 3],
                data_types: [DataType::Fp16; 3],
                ..base
            },
            // Grouped, 16 channels a group (the grouped tensor-core solver's).
            ConvSpec {
                groups: 4,
                layouts: [kiln_format::Layout::Nhwc; 3],
                data_types: [DataType::Fp16; 3],
                ..base
            },
            // A 1x1 NHWC FP16 layer (the 1x1 GEMM solvers), and FP32 opted in to TF32.
            ConvSpec {
                filter: [1, 1, 1],
                pad: [0, 0, 0],
                layouts: [kiln_format::Layout::Nhwc; 3],
                data_types: [DataType::Fp16; 3],
                ..base
            },
            ConvSpec {
                filter: [1, 1, 1],
                pad: [0, 0, 0],
                layouts: [kiln_format::Layout::Nhwc; 3],
                math: kiln_format::MathMode::AllowTf32,
                ..base
            },
            // An input of 16 channels (the narrow-step solver's).
            ConvSpec {
                c: 16,
                layouts: [kiln_format::Layout::Nhwc; 3],
                data_types: [DataType::Fp16; 3],
                ..base
            },
            // A squeeze-and-excitation layer: 1x1 over pooled 1x1 maps.
            ConvSpec {
                input: [1, 1, 1],
                filter: [1, 1, 1],
                pad: [0, 0, 0],
                layouts: [kiln_format::Layout::Nhwc; 3],
                data_types: [DataType::Fp16; 3],
                ..base
            },
            // NCHW FP32: a 1x1 layer (the batched GEMM) and a 3-channel first layer.
            ConvSpec {
                filter: [1, 1, 1],
                pad: [0, 0, 0],
                ..base
            },
            ConvSpec { c: 3, ..base },
            // An RGB stem, 7x7 at stride 2 (the direct first-layer solver's).
            ConvSpec {
                c: 3,
                filter: [1, 7, 7],
                pad: [0, 3, 3],
                stride: [1, 2, 2],
                ..base
            },
            // A batch of 32 (the wide NCHW 3xTF32 tiles are offered only where they fill the GPU).
            ConvSpec { n: 32, ..base },
            // An NCHW FP32 depthwise layer (the channels-first grouped solver), and one of 8
            // groups (the grouped NCHW GEMM's).
            ConvSpec { groups: 64, ..base },
            ConvSpec { groups: 8, ..base },
            // 3-D in FP16 NDHWC, FP32 NDHWC and FP32 NCDHW, and FP16 with 45 output channels
            // under a temporal filter (the 3-D solvers).
            ConvSpec {
                data_types: [DataType::Fp16; 3],
                ..volume
            },
            volume,
            ConvSpec {
                layouts: [kiln_format::Layout::Ncdhw; 3],
                ..volume
            },
            ConvSpec {
                k: 45,
                filter: [3, 1, 1],
                pad: [1, 0, 0],
                data_types: [DataType::Fp16; 3],
                ..volume
            },
            // An RGB video stem (the 3-D first-layer solver's).
            ConvSpec {
                c: 3,
                filter: [3, 7, 7],
                pad: [1, 3, 3],
                stride: [1, 2, 2],
                data_types: [DataType::Fp16; 3],
                ..volume
            },
        ]
        .map(|s| ConvProblem::new(s).unwrap());
        // The 1x1 NHWC FP16 layer and the 3x3 one with their x gated (the gated solvers').
        let gated = |p: &ConvProblem| {
            p.with_fusion(kiln_format::Fusion {
                x_scale: true,
                ..p.fusion()
            })
            .unwrap()
        };
        let nhwc_fp16 = |p: &&ConvProblem| {
            p.layouts()[0] == kiln_format::Layout::Nhwc && p.data_types()[0] == DataType::Fp16
        };
        let with_gates: Vec<ConvProblem> = problems.iter().filter(nhwc_fp16).map(gated).collect();
        let problems: Vec<ConvProblem> = problems.into_iter().chain(with_gates).collect();
        for s in registered() {
            // The H100, or for a solver built for AMD archs alone the first of them.
            let caps = match s.entry.archs.first() {
                Some(arch) if arch.starts_with("gfx") && !s.entry.archs.contains(&"sm_90") => {
                    TargetCaps::describe(kiln_format::Vendor::Amd, arch, arch, 104)
                }
                _ => caps(),
            };
            let mut planned = 0;
            for p in &problems {
                for q in s.offered_params(p, &caps) {
                    let plan = s.plan(p, &caps, q).unwrap();
                    assert!(!plan.kernels.is_empty(), "{} [{q}]", s.id());
                    assert!(plan.within_launch_limits().is_ok(), "{} [{q}]", s.id());
                    for k in &plan.kernels {
                        assert!(s.entry.functions.contains(&k.kernel), "{} [{q}]", s.id());
                    }
                    let t = s.estimate(p, &caps, q).unwrap();
                    assert!(t.is_finite() && t > 0.0, "{} [{q}]: {t}", s.id());
                    planned += 1;
                }
            }
            assert!(planned > 0, "{} planned nothing", s.id());
        }
    }

    #[test]
    fn library_plans_keep_their_workspace_within_32_bit_offsets() {
        // NCHW FP32, 64 x 64 x 256 x 256: x and y are 1 GiB each, so their NHWC copies and w
        // pass 2 GiB of workspace, which the CUTLASS builder cannot address.
        let big = ConvProblem::new(ConvSpec {
            n: 64,
            c: 64,
            k: 64,
            input: [1, 256, 256],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            ..ConvSpec::default()
        })
        .unwrap();
        let s = by_id("ConvCutlassNchw3xTf32Fwd").unwrap();
        assert_eq!(
            s.applicable(&big, &caps(), "64,64,32,32,32,4,4,1"),
            Err("workspace past 2 GiB (the builder's offsets are 32-bit)")
        );
        let half = ConvProblem::new(ConvSpec {
            n: 16,
            ..big.spec()
        })
        .unwrap();
        assert!(s.applicable(&half, &caps(), "64,64,32,32,32,4,4,1").is_ok());
    }

    #[test]
    fn tf32_solvers_need_the_opt_in() {
        let spec = ConvSpec {
            n: 2,
            c: 64,
            k: 64,
            input: [1, 28, 28],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            layouts: [kiln_format::Layout::Nhwc; 3],
            ..ConvSpec::default()
        };
        let plain = ConvProblem::new(spec).unwrap();
        let tf32 = plain.with_math(kiln_format::MathMode::AllowTf32);
        let s = by_id("ConvCutlassTf32Fwd").unwrap();
        assert_eq!(s.offered_params(&plain, &caps()).count(), 0);
        assert!(s.why_not(&plain, &caps()).contains("opt in"));
        assert!(s.offered_params(&tf32, &caps()).count() > 0);
        // The FP32-accurate solver serves both.
        let three = by_id("ConvCutlass3xTf32Fwd").unwrap();
        assert!(three.offered_params(&plain, &caps()).count() > 0);
        assert_eq!(plain.find_db_key(), tf32.find_db_key());
    }

    #[test]
    fn launches_past_grid_limits_are_not_applicable() {
        // 4,194,304 output channels in FP16 at 1x1: the implicit GEMM's grid.y would be 65,536.
        let p = ConvProblem::new(ConvSpec {
            n: 1,
            c: 1,
            k: 4_194_304,
            input: [1, 1, 1],
            filter: [1, 1, 1],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap();
        let igemm = by_id("ConvImplicitGemmFwd").unwrap();
        assert_eq!(
            igemm.applicable(&p, &caps(), "64,64,16"),
            Err("grid past the device limits (x < 2^31, y and z <= 65535)")
        );
        let plan = LaunchPlan::single("k", [1, 70_000, 1], [256, 1, 1]);
        assert!(plan.within_launch_limits().is_err());
        assert!(LaunchPlan::single("k", [1, 1, 1], [32, 32, 2])
            .within_launch_limits()
            .is_err());
    }

    #[test]
    fn plans_and_estimates_use_the_device_s_own_sm_count_and_shared_memory() {
        let (h100, a100, orin) = (devices::h100(), devices::a100(), devices::orin());
        // ResNet-50's 3x3 layer at 14x14, batch 32, FP16 NHWC: compute-bound on every device.
        let p = ConvProblem::new(ConvSpec {
            n: 32,
            c: 256,
            k: 256,
            input: [1, 14, 14],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            layouts: [kiln_format::Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap();
        let s = by_id("ConvCutlassIgemmFwd").unwrap();
        let q = "64,64,64,32,32,5,8,1";
        let time = |caps: &TargetCaps| s.estimate(&p, caps, q).unwrap();
        // 98 x 4 = 392 blocks fill every SM of each: time goes with the SM count (less a
        // fixed launch cost).
        let ratio = time(&orin) / time(&a100);
        assert!(ratio > 6.0 && ratio <= 108.0 / 16.0, "Orin / A100: {ratio}");
        assert!(time(&a100) > time(&h100));
        // A grid of 98 blocks leaves 10 of the A100's SMs idle and none of the Orin's: the
        // A100 is then less than 108/16 times faster.
        let small = ConvProblem::new(ConvSpec { n: 8, ..p.spec() }).unwrap();
        let q = "128,128,64,64,64,3,8,1";
        let small_ratio =
            s.estimate(&small, &orin, q).unwrap() / s.estimate(&small, &a100, q).unwrap();
        assert!(small_ratio < 108.0 / 16.0 - 0.5, "{small_ratio}");
        // Shared memory: 128 x 256 x 64 in 3 stages takes 144 KiB, which an A100 or Orin block
        // has (163 KiB) and an sm_86 block, whose device runs the sm_80 objects, has not.
        let big = "128,256,64,64,64,3,8,1";
        assert!(s.applicable(&p, &a100, big).is_ok());
        assert!(s.applicable(&p, &orin, big).is_ok());
        let rtx3090 = TargetCaps::describe(kiln_format::Vendor::Nvidia, "sm_86", "sm_80", 82);
        assert_eq!(
            s.applicable(&p, &rtx3090, big),
            Err("tile needs more shared memory than this arch gives a block")
        );
        // The whole fallback ranks by each device's own model: every solution it ranks for
        // the Orin takes longer there than the same solution on the A100.
        let plan = crate::resolve::rank_unmeasured(&p, &[], &orin, None).unwrap();
        assert!(plan.len() >= 3);
        for r in plan.iter() {
            let v = r.variant;
            let on_a100 = v.solver.estimate(&p, &a100, v.params).unwrap();
            assert!(r.time_ms > on_a100, "{v:?}: {} vs {on_a100}", r.time_ms);
        }
    }

    #[test]
    fn arch_lists_are_honoured() {
        static ENTRY: SolverEntry = SolverEntry {
            id: "ConvDirectNaiveFwd",
            algorithm: "miopenConvolutionFwdAlgoDirect",
            source: "conv_naive.cpp",
            functions: &["conv_naive_fwd"],
            options: "",
            params: &[""],
            archs: &["sm_90"],
            data_types: &[],
            runtime_values: 0,
            library: "",
            builder: "",
            math: "",
        };
        let s = SolverRef {
            imp: &naive::DirectNaive,
            entry: &ENTRY,
        };
        let p = ConvProblem::new(ConvSpec::default()).unwrap();
        assert!(s.applicable(&p, &caps(), "").is_ok());
        let amd = TargetCaps::describe(kiln_format::Vendor::Amd, "gfx942", "gfx942", 304);
        assert_eq!(s.applicable(&p, &amd, ""), Err("not built for this arch"));
    }
}
