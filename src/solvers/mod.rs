//! kiln's convolution solvers: one type per solver, one file each, listed once in [`SOLVERS`].
//!
//! A solver's kernels and precompiled perf configs come from `kernels/manifest.toml` (compiled
//! into every kdb); its behaviour lives here: which problems and targets it applies to, how its
//! kernels are launched ([`LaunchPlan`]: one or more kernels in order, grid, block, dynamic
//! shared memory, workspace), what it costs when nothing was measured, and its default perf
//! config. The tests at the bottom fail when the manifest and [`SOLVERS`] disagree.
//!
//! Adding a solver: a kernel in `kernels/`, a `[[solver]]` entry in the manifest, a file here
//! implementing [`Solver`], and one line in [`SOLVERS`].

pub mod cutlass;
mod depthwise;
mod dot1x1;
mod gemm1x1;
mod grouped;
mod igemm;
mod naive;
mod narrow;
mod params;
mod tiled;
mod wgmma;

use kiln_format::{ConvProblem, DataType, Direction, EmbeddedTarget, SolverEntry, Vendor};

pub use params::{value_at, values};

/// Why a solver does not apply.
pub type NotApplicable = &'static str;

/// What a solver may ask of the target it would run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetCaps {
    /// Vendor.
    pub vendor: Vendor,
    /// Arch whose limits apply (`sm_90`, `gfx942`): the device's.
    pub arch: &'static str,
    /// Arch the target's code objects were built for: the manifest's `archs` gate reads it. The
    /// same as `arch`, except on a device running a lower arch's objects (sm_86 running sm_80).
    pub code_arch: &'static str,
    /// SM or CU count.
    pub compute_units: u32,
}

/// NVIDIA arches a device may report, as static names (a device description's arch is a
/// `String`; caps hold `&'static str`).
const NVIDIA_ARCHS: &[&str] = &[
    "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_100",
    "sm_101", "sm_103", "sm_110", "sm_120", "sm_121",
];

impl TargetCaps {
    /// The capabilities of an embedded target.
    pub fn of(t: &EmbeddedTarget) -> TargetCaps {
        TargetCaps {
            vendor: t.vendor,
            arch: t.arch,
            code_arch: t.arch,
            compute_units: t.compute_units,
        }
    }

    /// What a device running target `t` gives: the target's caps, except that a device of a
    /// higher arch of the same NVIDIA major version (an sm_86 running sm_80 objects) brings its
    /// own limits (sm_86 gives a block 99 KiB of shared memory, sm_80 163 KiB) and SM count.
    pub fn on_device(t: &EmbeddedTarget, device_arch: &str, compute_units: u32) -> TargetCaps {
        match NVIDIA_ARCHS.iter().find(|a| **a == device_arch) {
            Some(arch) if t.vendor == Vendor::Nvidia && *arch != t.arch => TargetCaps {
                vendor: t.vendor,
                arch,
                code_arch: t.arch,
                compute_units,
            },
            _ => TargetCaps::of(t),
        }
    }
}

/// An H100's caps: what the solver tests plan against.
#[cfg(test)]
pub(crate) const H100_CAPS: TargetCaps = TargetCaps {
    vendor: Vendor::Nvidia,
    arch: "sm_90",
    code_arch: "sm_90",
    compute_units: 132,
};

/// Most kernels one solution launches.
pub const MAX_KERNELS: usize = 4;

/// One kernel launch of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelLaunch {
    /// Index into the solver's manifest `functions`.
    pub kernel: usize,
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Dynamic shared memory, bytes.
    pub shared_bytes: u32,
    /// Blocks per thread-block cluster along x (1: no clusters; CUDA sm_90 only, the grid a
    /// whole number of clusters).
    pub cluster: u32,
}

/// How a solution runs: its kernels in launch order, each receiving
/// `(x, w, y, KernelArgs)`, and the workspace it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchPlan {
    /// Kernels, in order.
    pub kernels: heapless::Vec<KernelLaunch, MAX_KERNELS>,
    /// Workspace bytes the caller must provide.
    pub workspace_bytes: u64,
    /// Index in `kernels` of the launch a library's parameter builder describes (the library
    /// kernel among layout or padding kernels; unused by solvers without a builder).
    pub library: usize,
}

impl LaunchPlan {
    /// A plan of one kernel (the manifest's first function) with no shared memory or workspace.
    pub fn single(grid: [u32; 3], block: [u32; 3]) -> LaunchPlan {
        LaunchPlan::single_with_shared(grid, block, 0)
    }

    /// A plan of one kernel with `shared_bytes` of dynamic shared memory and no workspace.
    pub fn single_with_shared(grid: [u32; 3], block: [u32; 3], shared_bytes: u32) -> LaunchPlan {
        let mut kernels = heapless::Vec::new();
        // Capacity MAX_KERNELS >= 1.
        let _ = kernels.push(KernelLaunch {
            kernel: 0,
            grid,
            block,
            shared_bytes,
            cluster: 1,
        });
        LaunchPlan {
            kernels,
            workspace_bytes: 0,
            library: 0,
        }
    }

    /// Checks every launch against the grid and block limits both vendors share (grid x
    /// below 2^31, y and z at most 65,535; at most 1,024 threads a block; no empty dimension).
    pub fn within_launch_limits(&self) -> Result<(), NotApplicable> {
        for k in &self.kernels {
            if k.grid.contains(&0) || k.block.contains(&0) {
                return Err("a launch dimension is 0");
            }
            if k.grid[0] > i32::MAX as u32 || k.grid[1] > 65_535 || k.grid[2] > 65_535 {
                return Err("grid past the device limits (x < 2^31, y and z <= 65535)");
            }
            if k.block.iter().map(|&b| b as u64).product::<u64>() > 1024 {
                return Err("more than 1024 threads per block");
            }
        }
        Ok(())
    }
}

/// Which of the problem's tensors a TMA tensor map views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmaOperand {
    /// The input.
    X,
    /// The filter.
    W,
    /// The input's packed copy in the workspace ([`FirstLayerPacking`]).
    PackedX,
    /// The filter's packed copy in the workspace.
    PackedW,
}

/// Where a first-layer kernel packs x and w in the workspace, and how (`x_packed`, `w_packed`,
/// `row_flags`, `in_h`, `in_w`, `row_elems`, `lead` of `KilnTmaConvParams`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FirstLayerPacking {
    /// Byte offsets in the workspace of packed x, packed w and the per-input-row flags.
    pub offsets: [u64; 3],
    /// Input height and width.
    pub input: [i32; 2],
    /// Elements of one packed filter row (a multiple of 16).
    pub row_elems: i32,
    /// Zero taps before the filter's first in a packed row.
    pub lead: i32,
}

/// One tensor map of a TMA kernel's argument: which tensor, and how it is viewed and loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmaView {
    /// The tensor.
    pub operand: TmaOperand,
    /// Its extents and boxes.
    pub shape: crate::backend::TensorMapShape,
}

/// The argument of a kernel that takes host-built TMA tensor maps (`KilnTmaConvParams` in
/// `kernels/nv/wgmma_conv.cu`): two maps, y's address, three sizes and the geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmaArguments {
    /// The maps, in the argument's order.
    pub views: [TmaView; 2],
    /// The kernel's `m, k, c`: GEMM rows, output channels, input channels.
    pub sizes: [i32; 3],
    /// Split-K slices (1: none).
    pub splits: i32,
    /// `out_h, out_w, filter_h, filter_w, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w`.
    pub geometry: [i32; 10],
    /// First-layer kernels: their packed copies of x and w.
    pub packing: Option<FirstLayerPacking>,
    /// 32-bit words at the workspace's start to zero before each launch (stream-K's flags).
    pub zeroed_words: u32,
}

/// A convolution solver: what MIOpen calls a solver (`IsApplicable`, `GetSolution`, a perf
/// config), for kiln's precompiled kernels.
pub trait Solver: Sync {
    /// The solver id: the manifest's `id` and the name in find-db and perf-db records.
    fn id(&self) -> &'static str;

    /// Whether the solver applies to `p` on `target` with perf config `params` (one of its
    /// manifest's `params`). Checks shared by every solver ([`common_checks`], the manifest's
    /// `archs`, launch limits) are made by [`SolverRef::applicable`] around this.
    fn applicable(
        &self,
        p: &ConvProblem,
        target: &TargetCaps,
        params: &str,
    ) -> Result<(), NotApplicable>;

    /// How to launch the solution (call only when applicable).
    fn launch_plan(&self, p: &ConvProblem, params: &str) -> LaunchPlan;

    /// Estimated time in ms with perf config `params`, for ranking what was never measured.
    fn estimated_ms(&self, p: &ConvProblem, params: &str) -> f64;

    /// A solver whose measured times stand in for this one's where this one was never
    /// measured near a problem (the same main loop with another prologue or epilogue): the
    /// fallback then ranks it by that solver's time on the nearest problem, not by the cost
    /// model after every measured solver.
    fn timed_like(&self) -> Option<&'static str> {
        None
    }

    /// A perf config to weigh beside `measured`, one a near problem ran, when `measured`'s
    /// tiles would fit `p` badly and another of `candidates` (the applicable manifest configs)
    /// is its counterpart shaped for `p`: the fallback scales `measured`'s time to it by the
    /// cost model. A neighbour's best config answers for its own shape; without this, a config
    /// no measured neighbour won (a narrow tile, say) is never tried. None by default.
    fn refit(
        &self,
        _p: &ConvProblem,
        _measured: &str,
        _candidates: &mut dyn Iterator<Item = &'static str>,
    ) -> Option<&'static str> {
        None
    }

    /// For kernels whose argument is a block of TMA tensor maps the host encodes (sm_90a
    /// solvers): what the block holds. `None` for kiln's `(x, w, y, KilnConvArgs)` kernels and
    /// for library kernels with a device-side builder.
    fn tma_arguments(&self, _p: &ConvProblem, _params: &str) -> Option<TmaArguments> {
        None
    }

    /// Whether every kernel of the solver waits for the previous kernel in the stream
    /// (`griddepcontrol.wait`) before it touches memory, in its sm_90+ objects, so that kiln
    /// may launch it with programmatic dependent launch.
    fn waits_on_predecessor(&self) -> bool {
        false
    }

    /// The perf config to use when no perf-db record names one, among the applicable
    /// `candidates` (the manifest's): by default the largest tile that still gives the GPU at
    /// least 256 blocks (the last of equal tiles), else the smallest tile (the first).
    fn default_params(
        &self,
        p: &ConvProblem,
        candidates: &mut dyn Iterator<Item = &'static str>,
    ) -> Option<&'static str> {
        let blocks = |q: &str| {
            let plan = self.launch_plan(p, q);
            plan.kernels
                .iter()
                .map(|k| k.grid.iter().map(|&g| g as u64).product::<u64>())
                .max()
                .unwrap_or(0)
        };
        let tile = |q: &str| values(q).iter().take(2).map(|&v| v as u64).product::<u64>();
        let (mut big, mut small): (Option<&'static str>, Option<&'static str>) = (None, None);
        for q in candidates {
            if blocks(q) >= 256 && big.is_none_or(|b| tile(q) >= tile(b)) {
                big = Some(q);
            }
            if small.is_none_or(|s| tile(q) < tile(s)) {
                small = Some(q);
            }
        }
        big.or(small)
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
    &cutlass::NCHW_TF32,
    &grouped::DirectGrouped,
    &depthwise::DirectDepthwise,
    &dot1x1::Dot1x1,
    &narrow::MmaNarrow,
    &wgmma::GEMM_1X1,
    &wgmma::IMPLICIT_GEMM,
    &wgmma::IMPLICIT_GEMM_NARROW,
    &wgmma::GEMM_1X1_TF32,
    &wgmma::IMPLICIT_GEMM_TF32,
    &wgmma::FIRST_LAYER,
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

    /// Every check: the shared ones, the manifest's `archs`, the solver's own, the kernels'
    /// 32-bit argument block, and launch limits.
    pub fn applicable(
        &self,
        p: &ConvProblem,
        target: &TargetCaps,
        params: &str,
    ) -> Result<(), NotApplicable> {
        common_checks(p)?;
        if !self.entry.builds_for(target.code_arch) {
            return Err("not built for this arch");
        }
        if !self.entry.builds_type(p.data_types()[0].name()) {
            return Err("not built for this data type");
        }
        if self.entry.math == "tf32" && p.math() != kiln_format::MathMode::AllowTf32 {
            return Err("TF32 math: only for problems that opt in (math mode tf32)");
        }
        self.imp.applicable(p, target, params)?;
        let plan = self.imp.launch_plan(p, params);
        if plan
            .kernels
            .iter()
            .any(|k| k.kernel >= self.entry.functions.len())
        {
            return Err("launch plan names a kernel the manifest lacks");
        }
        // A library's parameter builder reports workspace offsets as 32-bit ints.
        if !self.entry.builder.is_empty() && plan.workspace_bytes > i32::MAX as u64 {
            return Err("workspace past 2 GiB (the builder's offsets are 32-bit)");
        }
        plan.within_launch_limits()
    }

    /// The manifest's perf configs that apply to `p` on `target`.
    pub fn applicable_params<'a>(
        &'a self,
        p: &'a ConvProblem,
        target: &'a TargetCaps,
    ) -> impl Iterator<Item = &'static str> + 'a {
        self.entry
            .params
            .iter()
            .copied()
            .filter(move |q| self.applicable(p, target, q).is_ok())
    }

    /// The manifest's copy of perf config `q`, if the manifest compiles it and it applies (a
    /// config read from a database may be neither).
    pub fn usable_config(
        &self,
        p: &ConvProblem,
        target: &TargetCaps,
        q: &str,
    ) -> Option<&'static str> {
        self.entry
            .params
            .iter()
            .copied()
            .find(|x| *x == q)
            .filter(|x| self.applicable(p, target, x).is_ok())
    }

    /// The counterpart of a near problem's config `measured` shaped for `p`, if the solver
    /// offers one (see [`Solver::refit`]).
    pub fn refit(
        &self,
        p: &ConvProblem,
        target: &TargetCaps,
        measured: &str,
    ) -> Option<&'static str> {
        self.imp
            .refit(p, measured, &mut self.applicable_params(p, target))
    }

    /// The default perf config among the applicable ones (see [`Solver::default_params`]).
    pub fn default_params(&self, p: &ConvProblem, target: &TargetCaps) -> Option<&'static str> {
        self.imp
            .default_params(p, &mut self.applicable_params(p, target))
    }

    /// Why no perf config of this solver applies (the first config's reason).
    pub fn why_not(&self, p: &ConvProblem, target: &TargetCaps) -> NotApplicable {
        self.entry
            .params
            .iter()
            .find_map(|q| self.applicable(p, target, q).err())
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
        H100_CAPS
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
    fn d1_wrapping_element_counts_are_refused_when_the_problem_is_built() {
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
    fn d8_32_bit_index_overflow_in_the_gemm_kernels_is_not_applicable() {
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
    fn d8_grids_past_the_launch_limits_are_not_applicable() {
        // 4,194,304 output channels: the review's plan[0], ConvGemm1x1Fwd [64,128,8], had a
        // grid.y of 65,536. Every config still offered launches within the limits.
        let p = ConvProblem::new(spec2(1, 1, 4_194_304, [1, 1], [1, 1], DataType::Fp16)).unwrap();
        let gemm = by_id("ConvGemm1x1Fwd").unwrap();
        assert!(gemm.applicable(&p, &caps(), "64,128,8").is_err());
        let plan = crate::resolve::rank_unmeasured(&p, &[], &caps(), None).unwrap();
        for r in plan.iter() {
            let launch = r.variant.solver.imp.launch_plan(&p, r.variant.params);
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
        H100_CAPS
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
        ]
        .map(|s| ConvProblem::new(s).unwrap());
        for s in registered() {
            let mut planned = 0;
            for p in &problems {
                for q in s.applicable_params(p, &caps()) {
                    let plan = s.imp.launch_plan(p, q);
                    assert!(!plan.kernels.is_empty(), "{} [{q}]", s.id());
                    assert!(plan.within_launch_limits().is_ok(), "{} [{q}]", s.id());
                    let t = s.imp.estimated_ms(p, q);
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
        assert_eq!(s.applicable_params(&plain, &caps()).count(), 0);
        assert!(s.why_not(&plain, &caps()).contains("opt in"));
        assert!(s.applicable_params(&tf32, &caps()).count() > 0);
        // The FP32-accurate solver serves both.
        let three = by_id("ConvCutlass3xTf32Fwd").unwrap();
        assert!(three.applicable_params(&plain, &caps()).count() > 0);
        assert_eq!(plain.find_db_key(), tf32.find_db_key());
    }

    #[test]
    fn block_sizes_follow_the_compiled_tiles() {
        let spec = ConvSpec {
            n: 1,
            c: 16,
            k: 32,
            input: [1, 32, 32],
            filter: [1, 1, 1],
            ..ConvSpec::default()
        };
        let nhwc16 = ConvSpec {
            layouts: [kiln_format::Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..spec
        };
        for p in [spec, nhwc16].map(|s| ConvProblem::new(s).unwrap()) {
            for s in registered() {
                for q in s.applicable_params(&p, &caps()) {
                    // The main kernel: a library's is `plan.library` (a first layer pads
                    // channels first, NCHW transposes around it); kiln's own run one.
                    let plan = s.imp.launch_plan(&p, q);
                    let block = plan.kernels[plan.library].block;
                    let v = values(q);
                    // conv_tiled.cpp runs TILE_H x TILE_W threads; igemm.h is written for
                    // 256; CUTLASS one warp per warp tile (tb_m/warp_m x tb_n/warp_n).
                    let want = match s.id() {
                        "ConvDirectTiledFwd" => [v[0] * v[1], 1, 1],
                        id if id.starts_with("ConvCutlass") => {
                            [(v[0] / v[3]) * (v[1] / v[4]) * 32, 1, 1]
                        }
                        // A producer warpgroup and one consumer warpgroup per 64 rows.
                        id if wgmma::IDS.contains(&id) => [(v[0] / 64 + 1) * 128, 1, 1],
                        _ => [256, 1, 1],
                    };
                    assert_eq!(block, want, "{} [{q}]", s.id());
                }
            }
        }
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
        let plan = LaunchPlan::single([1, 70_000, 1], [256, 1, 1]);
        assert!(plan.within_launch_limits().is_err());
        assert!(LaunchPlan::single([1, 1, 1], [32, 32, 2])
            .within_launch_limits()
            .is_err());
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
        let amd = TargetCaps {
            vendor: Vendor::Amd,
            arch: "gfx942",
            code_arch: "gfx942",
            compute_units: 304,
        };
        assert_eq!(s.applicable(&p, &amd, ""), Err("not built for this arch"));
    }
}
