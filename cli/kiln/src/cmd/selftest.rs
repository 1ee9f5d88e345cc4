//! `kiln selftest`: the appliance's boot check. Every registered solver and precompiled perf
//! config on a fixed problem set (2-D and 3-D, both layout families, three types, groups,
//! depthwise, padding, stride, dilation, odd sizes), each checked against the f64 reference on
//! fresh inputs with the output poisoned. Non-zero exit on any failure.

use kiln::harness::verify::run_checked;
use kiln::resolve::Variant;
use kiln::solvers::TargetCaps;
use kiln::{ConvProblem, ConvSpec, DataType, Layout};

use super::describe_context;
use crate::args::DeviceArgs;
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
        d2(4, 64, 64, [8, 8], [3, 3], [2, 2], [1, 1], [2, 2], 1),
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
                    out.push(p);
                }
            }
        }
    }
    out
}

pub fn run(a: &DeviceArgs) -> CliResult {
    let ctx = a.context()?;
    println!(
        "kiln selftest on {} [{}]",
        describe_context(&ctx),
        ctx.device().info().uuid
    );
    let caps = TargetCaps::of(ctx.target());
    let problems = problems();
    let (mut runs, mut failures) = (0, 0);
    let mut per_solver: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    let mut seed = 1u64;
    for p in &problems {
        for solver in kiln::solvers::registered() {
            for params in solver.applicable_params(p, &caps) {
                seed += 1;
                let r = run_checked(&ctx, p, &Variant { solver, params }, seed, 3);
                runs += 1;
                let e = per_solver.entry(solver.id()).or_default();
                e.0 += 1;
                match r {
                    Ok(r) if r.passed => {}
                    Ok(r) => {
                        failures += 1;
                        e.1 += 1;
                        println!(
                            "FAIL {} [{params}] {}: relative error {:.3e}",
                            solver.id(),
                            p.find_db_key(),
                            r.error
                        );
                    }
                    Err(err) => {
                        failures += 1;
                        e.1 += 1;
                        println!("FAIL {} [{params}] {}: {err}", solver.id(), p.find_db_key());
                    }
                }
            }
        }
    }
    println!("{} problems, {runs} runs (every applicable solver and perf config, fresh random inputs, outputs poisoned)", problems.len());
    for (s, (n, f)) in &per_solver {
        println!("  {s:<22} {n:>4} runs  {f} failed");
    }
    if failures > 0 || runs == 0 {
        return Err(format!("selftest: {failures} of {runs} runs failed").into());
    }
    println!("selftest passed");
    Ok(())
}
