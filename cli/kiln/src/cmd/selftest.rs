//! `kiln selftest`: the appliance's boot check. Every registered solver and precompiled perf
//! config (split-K values included) on a fixed problem set (2-D and 3-D, both layout families,
//! three types, TF32 opt-in, groups, depthwise, padding, stride, dilation, odd sizes, deep
//! reductions), each checked against the f64 reference on fresh inputs with the output
//! poisoned; every variant also with IEEE special values (inf, NaN, subnormals, values near
//! overflow) compared class by class; and every problem again with a fused epilogue (scale,
//! bias, a residual, each activation in turn, channel-slice outputs). Non-zero exit on any
//! failure.

use kiln::harness::verify::{tolerance, ProblemCheck};
use kiln::resolve::Variant;
use kiln::{Activation, ConvProblem, ConvSpec, DataType, Fusion, Layout, MathMode};

use crate::args::SelftestArgs;
use crate::json::Json;
use kiln::harness::output::{Classified, ExitClass};

use crate::CliResult;

/// The selftest problem set: 2-D and 3-D, both layout families, three types, groups and
/// depthwise, padding, stride, dilation, odd sizes.
pub fn problems() -> Vec<ConvProblem> {
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
        // More stride-2 first layers: 3x3 on odd and even sizes, one channel under an even
        // filter with unequal padding, four channels with none along the height.
        d2(2, 3, 32, [17, 20], [3, 3], [1, 1], [2, 2], [1, 1], 1),
        d2(1, 1, 8, [12, 15], [4, 4], [1, 2], [2, 2], [1, 1], 1),
        d2(1, 4, 24, [10, 9], [5, 5], [0, 2], [2, 2], [1, 1], 1),
        // A stride-1 first layer, and a stride-2 one whose output rows are wider than one
        // Hopper first-layer unit (128 pixels).
        d2(2, 3, 16, [20, 18], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        d2(1, 3, 32, [9, 300], [3, 3], [1, 1], [2, 2], [1, 1], 1),
        // Depthwise with a channel multiplier of 2 (one input, two outputs per group), 5x5, s2.
        d2(2, 24, 48, [13, 11], [5, 5], [2, 2], [2, 2], [1, 1], 24),
        // Depthwise 5x5 stride 2, 3x3 stride 2 and 7x7 on widths that end strips early.
        d2(2, 40, 40, [17, 15], [5, 5], [2, 2], [2, 2], [1, 1], 40),
        d2(1, 64, 64, [12, 19], [3, 3], [1, 1], [2, 2], [1, 1], 64),
        d2(1, 16, 16, [9, 30], [7, 7], [3, 3], [1, 1], [1, 1], 16),
        d2(4, 64, 64, [8, 8], [3, 3], [2, 2], [1, 1], [2, 2], 1),
        // Output channels that are not a multiple of 8: an image out of a decoder, a 1x1 head.
        d2(2, 64, 3, [19, 17], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        d2(1, 32, 21, [11, 11], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        // Narrow heads (ConvMmaNarrowFwd): one output channel at stride 2 over 24 channels (a
        // partly empty k16 step) on a row wider than a tile; 16 over 136 channels (five chunks).
        d2(2, 24, 1, [37, 70], [3, 3], [1, 1], [2, 2], [1, 1], 1),
        d2(1, 136, 16, [10, 21], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        // Deep reductions (split-K applies) and a strided 1x1 with many channels.
        d2(1, 256, 128, [7, 7], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        d2(2, 128, 256, [9, 9], [1, 1], [0, 0], [2, 2], [1, 1], 1),
        // Tensor-core-aligned channels (multiples of 8) under TMA's im2col gathering: a strided
        // 3x3 whose tiles cross images, and a 5x3 filter with unequal padding, stride and
        // dilation.
        d2(3, 64, 64, [15, 15], [3, 3], [1, 1], [2, 2], [1, 1], 1),
        d2(2, 40, 72, [21, 18], [5, 3], [2, 1], [2, 1], [1, 2], 1),
        // A deep 1x1 over few pixels: split-K of the 1x1 GEMM, partial output-channel tiles.
        d2(1, 320, 40, [6, 5], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        // Squeeze-and-excitation layers on pooled 1x1 maps (ConvDot1x1Fwd): a squeeze to 6
        // channels over 144, an excitation from 6 (2-channel loads), and 40 pixels x 1160
        // channels (a partial last load step and pixel tile).
        d2(32, 144, 6, [1, 1], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(5, 6, 144, [1, 1], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(10, 1160, 48, [2, 2], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        // Split-K with 8 MiB of partials over at most 132 blocks: the Hopper kernels reduce
        // the slices in a thread-block cluster (a 1x1 with two reduction steps, a 3x3).
        d2(4, 128, 256, [32, 32], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(4, 64, 256, [32, 32], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        // More output tiles than SMs (the persistent Hopper kernels), partial channel tiles.
        d2(4, 64, 96, [56, 56], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        d2(4, 64, 96, [40, 40], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        // Narrow steps (16 or 32 channels a step, 32- or 64-byte swizzled rows): 8 channels (a
        // partly empty step either way), a strided dilated filter, and more tiles than SMs.
        d2(3, 8, 32, [21, 17], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        d2(2, 32, 64, [23, 19], [5, 3], [2, 1], [2, 1], [1, 2], 1),
        d2(4, 16, 32, [56, 56], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        // 96-, 160- and 192-column Hopper tiles (wgmma n = 96, 160, 192): a strided 3x3, a 1x1,
        // and more tiles than SMs.
        d2(2, 32, 96, [15, 13], [3, 3], [1, 1], [2, 1], [1, 1], 1),
        d2(2, 72, 160, [14, 14], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        d2(8, 64, 192, [40, 40], [1, 1], [0, 0], [1, 1], [1, 1], 1),
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
                    let fused = p.with_fusion(fusion_for(out.len(), &p)).ok();
                    for p in std::iter::once(p).chain(fused) {
                        out.push(p);
                        // FP32 also with TF32 allowed (only the TF32 solvers run it).
                        if dtype == DataType::Fp32 {
                            out.push(p.with_math(MathMode::AllowTf32));
                        }
                    }
                }
            }
        }
    }
    out
}

/// The epilogue the fused copy of the `i`-th problem gets: every activation in turn (with
/// the problem set's order, each solver family meets all ten), scale and bias always (a folded
/// batch norm), a residual on every other copy, and on channels-last outputs every third copy
/// writes a channel slice of a wider tensor (its residual too, every sixth).
fn fusion_for(i: usize, p: &ConvProblem) -> Fusion {
    let residual = i.is_multiple_of(2);
    let slice = p.layouts()[2].channels_last() && i.is_multiple_of(3);
    let wide = p.k().next_multiple_of(8) + 16;
    Fusion {
        scale: true,
        bias: true,
        residual,
        activation: Activation::ALL[i % Activation::ALL.len()],
        y_ld: if slice { wide } else { 0 },
        z_ld: if slice && residual { wide + 8 } else { 0 },
    }
}

/// The problems of the lists given with `--problems`, in order, duplicates dropped; each FP32
/// problem also with TF32 allowed (as in the built-in set).
fn listed_problems(files: &[std::path::PathBuf]) -> Result<Vec<ConvProblem>, String> {
    let mut out: Vec<ConvProblem> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for file in files {
        let list = kiln::harness::problem_list::read(file).map_err(|e| format!("selftest: {e}"))?;
        for (_, p) in list {
            let mut add = |p: ConvProblem| {
                if seen.insert(p) {
                    out.push(p);
                }
            };
            add(p);
            if p.data_types()[0] == DataType::Fp32 {
                add(p.with_math(MathMode::AllowTf32));
            }
        }
    }
    if out.is_empty() {
        return Err("selftest: the --problems lists hold no problem".into());
    }
    Ok(out)
}

/// The `--solver` name of the standalone operators (pooling, resizing, elementwise, softmax).
const OPERATORS: &str = "operators";

pub fn run(a: &SelftestArgs) -> CliResult {
    let json = a.output.json;
    // The lists are read before the device opens: a bad one fails fast, GPU or not.
    let problems = if a.problems.is_empty() {
        problems()
    } else {
        listed_problems(&a.problems)?
    };
    let ctx = a.device.context()?;
    if !json {
        kiln::outln!(
            "kiln selftest on {} [{}]",
            ctx.describe(),
            ctx.device().info().uuid
        );
    }
    let mut failed_runs: Vec<Json> = Vec::new();
    let caps = ctx.caps();
    if let Some(unknown) = a
        .solvers
        .iter()
        .find(|id| kiln::solvers::by_id(id).is_none() && *id != OPERATORS)
    {
        return Err(format!("selftest: no solver {unknown:?} is registered").into());
    }
    let chosen = |id: &str| a.solvers.is_empty() || a.solvers.iter().any(|s| s == id);
    let (mut runs, mut failures) = (0, 0);
    let mut per_solver: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    for (i, p) in problems.iter().enumerate() {
        let tf32 = p.math() == MathMode::AllowTf32;
        // A TF32 problem checks the TF32 solvers; every other solver ran it as FP32.
        let mut variants: Vec<Variant> = Vec::new();
        for solver in kiln::solvers::registered() {
            if chosen(solver.id())
                && !(tf32 && solver.entry.math_mode() != kiln::MathMode::AllowTf32)
            {
                let params = solver.offered_params(p, &caps);
                variants.extend(params.map(|params| Variant { solver, params }));
            }
        }
        if variants.is_empty() {
            continue;
        }
        // Inputs and references once per problem, shared by its variants.
        let seed = 1 + i as u64;
        let random = ProblemCheck::random(&ctx, p, seed);
        let special = ProblemCheck::special(&ctx, p, seed);
        for v in &variants {
            let (solver, params) = (v.solver, v.params);
            runs += 1;
            let e = per_solver.entry(solver.id()).or_default();
            let mut fail = |what: String| -> Result<(), kiln::harness::output::StdoutError> {
                failures += 1;
                e.1 += 1;
                if json {
                    failed_runs.push(Json::obj([
                        ("solver", Json::str(solver.id())),
                        ("params", Json::str(params)),
                        ("problem", Json::str(p.find_db_key().as_str())),
                        ("math", Json::str(p.math().name())),
                        ("error", Json::str(what)),
                    ]));
                } else {
                    kiln::outln!(
                        "FAIL {} [{params}] {}{}: {what}",
                        solver.id(),
                        p.find_db_key(),
                        if tf32 { " (TF32)" } else { "" }
                    );
                }
                Ok(())
            };
            e.0 += 1;
            let tolerance = tolerance(p);
            match random
                .as_ref()
                .map_err(|e| e.to_string())
                .and_then(|c| c.error(v).map_err(|e| e.to_string()))
            {
                Ok(error) if error <= tolerance => {}
                Ok(error) => fail(format!("relative error {error:.3e}"))?,
                Err(err) => fail(err)?,
            }
            match special.as_ref().map_err(|e| e.to_string()).and_then(|c| c.special_classes(v).map_err(|e| e.to_string())) {
                Ok((_, true)) => {}
                Ok((c, false)) => fail(format!(
                    "with inf/NaN/subnormal/near-overflow inputs: {} of {} non-finite outputs differ in class, finite relative error {:.3e}",
                    c.class_mismatches, c.non_finite, c.error
                ))?,
                Err(err) => fail(format!("with special values: {err}"))?,
            }
        }
    }
    // The standalone operators (not with --problems: those lists are convolutions).
    if chosen(OPERATORS) && a.problems.is_empty() {
        let e = per_solver.entry(OPERATORS).or_default();
        for dtype in [DataType::Fp32, DataType::Fp16, DataType::Bf16] {
            for (i, op) in kiln::harness::ops::problems(dtype).iter().enumerate() {
                for special in [false, true] {
                    runs += 1;
                    e.0 += 1;
                    let what = match kiln::harness::ops::check(&ctx, op, 1 + i as u64, special) {
                        Ok(c) if c.passed => continue,
                        Ok(c) => format!(
                            "relative error {:.3e}, {} outputs of another class, {} written outside the slice",
                            c.error, c.class_mismatches, c.written_outside
                        ),
                        Err(err) => err.to_string(),
                    };
                    let what = if special {
                        format!("with special values: {what}")
                    } else {
                        what
                    };
                    failures += 1;
                    e.1 += 1;
                    if json {
                        failed_runs.push(Json::obj([
                            ("solver", Json::str(OPERATORS)),
                            ("problem", Json::str(op.describe())),
                            ("error", Json::str(what)),
                        ]));
                    } else {
                        kiln::outln!("FAIL {}: {what}", op.describe());
                    }
                }
            }
        }
    }
    if json {
        let info = ctx.device().info();
        let solvers = per_solver
            .iter()
            .map(|(s, (n, f))| {
                Json::obj([
                    ("solver", Json::str(*s)),
                    ("variants", Json::uint(*n as u64)),
                    ("failed", Json::uint(*f as u64)),
                ])
            })
            .collect();
        kiln::outln!(
            "{}",
            Json::obj([
                ("device", Json::str(&info.spec)),
                ("device_name", Json::str(&info.name)),
                ("uuid", Json::str(&info.uuid)),
                ("target", Json::str(ctx.target().basename)),
                ("exact_target", Json::Bool(ctx.exact_target())),
                ("problems", Json::uint(problems.len() as u64)),
                ("runs", Json::uint(runs as u64)),
                ("failures", Json::uint(failures as u64)),
                ("passed", Json::Bool(failures == 0 && runs > 0)),
                ("solvers", Json::Arr(solvers)),
                ("failed_runs", Json::Arr(failed_runs)),
            ])
        );
        return verdict(failures, runs);
    }
    kiln::outln!("{} problems, {runs} variants (every applicable solver and perf config, fresh random inputs, outputs poisoned; each also with inf/NaN/subnormal/near-overflow inputs)", problems.len());
    for (s, (n, f)) in &per_solver {
        kiln::outln!("  {s:<22} {n:>4} variants  {f} failed");
    }
    verdict(failures, runs)?;
    kiln::outln!("selftest passed");
    Ok(())
}

/// A selftest that found a wrong result, or checked nothing, fails with exit class 5.
fn verdict(failures: usize, runs: usize) -> CliResult {
    if failures > 0 || runs == 0 {
        return Err(Classified::boxed(
            ExitClass::SelftestFailed,
            format!("selftest: {failures} of {runs} runs failed"),
        ));
    }
    Ok(())
}
