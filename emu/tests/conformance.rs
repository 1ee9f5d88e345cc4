//! kiln's AMD code objects executed: on each AMD target the emulator runs, a kiln context on
//! an emulated GPU of that architecture runs every solver and perf config of the target's
//! kdb on a set of small problems, checked by kiln's selftest against the f64 CPU reference
//! with random inputs and again with IEEE special values. kiln's own resolver, invokers and
//! argument packing drive the launches, as on a real HIP device.
//!
//! The standalone operators (pooling, resizing, elementwise, softmax, in every type) run
//! too. The problems (each in FP32, FP16 and BF16, NCHW and NHWC, plain and with a fused
//! epilogue) cover 3x3, 1x1, strided, padded, dilated, grouped and depthwise convolutions, and
//! sizes that leave partial tiles at every edge. Every variant a solver offers for a problem
//! runs; nothing is sampled. Planted faults show the run can fail: a kernarg offset that the
//! code disagrees with, wave32 code run as wave64, and a descriptor that allocates fewer VGPRs
//! than the code uses.

use kiln::context::ContextOptions;
use kiln::harness::selftest;
use kiln_emu::conformance::{self, problems};
use kiln_emu::driver::EmulatedGpu;

/// Every embedded AMD target: gfx9 (wave64) and gfx10/gfx11 (wave32).
fn amd_targets() -> Vec<&'static kiln::format::EmbeddedTarget> {
    kiln::targets()
        .iter()
        .filter(|t| t.vendor == kiln::format::Vendor::Amd)
        .collect()
}

#[test]
fn every_solver_of_every_amd_target_matches_the_cpu_reference() {
    let targets = amd_targets();
    assert_eq!(targets.len(), 10, "the ten AMD targets");
    for t in &targets {
        assert!(
            kiln_emu::program::known_arch(t.arch).is_some(),
            "{}: {} is not modelled",
            t.basename,
            t.arch
        );
    }
    let problems = problems();
    // Two threads, each taking the next target (CI has two cores; targets are independent).
    let next = std::sync::atomic::AtomicUsize::new(0);
    let reports: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (problems, targets, next) = (&problems, &targets, &next);
                s.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(t) = targets.get(i) else {
                            break done;
                        };
                        let mut failures = Vec::new();
                        let (report, totals) = conformance::run(
                            t,
                            problems,
                            |_| true,
                            true,
                            |f| {
                                failures.push(format!(
                                    "{} {} {}: {}",
                                    f.solver, f.params, f.problem, f.error
                                ))
                            },
                        )
                        .unwrap();
                        done.push((t.basename, report, failures, totals));
                    }
                })
            })
            .collect();
        let mut all: Vec<_> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        all.sort_by_key(|r| r.0);
        all
    });
    let mut all = Vec::new();
    let mut summary = String::new();
    for (base, report, failures, totals) in &reports {
        let solvers: Vec<String> = report
            .per_solver
            .iter()
            .map(|(s, (runs, failed))| format!("{s} {runs}/{failed}"))
            .collect();
        let line = format!(
            "{base}: {} runs of {} problems, {} failed; {} launches, {} wave instructions; per solver (runs/failed): {}",
            report.runs,
            report.problems,
            report.failures,
            totals.launches,
            totals.work.instructions,
            solvers.join(", ")
        );
        println!("{line}");
        summary += &line;
        summary.push('\n');
        all.extend(failures.iter().map(|f| format!("{base}: {f}")));
        // Every AMD solver ran here: the portable kernels each target builds.
        for s in [
            selftest::OPERATORS,
            "ConvDirectNaiveFwd",
            "ConvDirectTiledFwd",
            "ConvImplicitGemmFwd",
            "ConvGemm1x1Fwd",
            "ConvDirectGroupedFwd",
        ] {
            assert!(
                report.per_solver.get(s).is_some_and(|r| r.0 > 0),
                "{base}: {s} never ran"
            );
        }
        // And the matrix-core solvers where they are built.
        let matrix = match *base {
            "gfx90a68" | "gfx942130" => Some("ConvMfmaImplicitGemmFwd"),
            "gfx1100_48" | "gfx1151_20" => Some("ConvWmmaImplicitGemmFwd"),
            _ => None,
        };
        if let Some(s) = matrix {
            assert!(
                report.per_solver.get(s).is_some_and(|r| r.0 > 0),
                "{base}: {s} never ran"
            );
        }
    }
    // `make test` prints this file: the counts per target appear in CI's log.
    std::fs::write(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("kiln-emu-conformance.txt"),
        &summary,
    )
    .unwrap();
    assert!(
        all.is_empty(),
        "{} failures:\n{}",
        all.len(),
        all.join("\n")
    );
}

/// Runs the first problem on every solver of `target` on a GPU whose code objects `rewrite`
/// damages; returns the failures (a context that cannot open counts as one).
fn planted(
    target: &kiln::format::EmbeddedTarget,
    rewrite: kiln_emu::driver::ObjectRewrite,
) -> usize {
    let options = ContextOptions {
        warm_up: false,
        ..ContextOptions::default()
    };
    let setup = |g: EmulatedGpu| g.with_object_rewrite(rewrite);
    let Ok((_, ctx)) = conformance::context(target, setup, options) else {
        return 1;
    };
    let report = selftest::run(&ctx, &problems()[..2], |_| true, false, |_| {});
    assert!(report.runs > 0);
    report.failures
}

/// Moves the convolution arguments (KilnConvArgs, at byte 24 of every conv kernel's
/// segment) to byte 28 in the metadata: the runtime packs them there, the code reads byte 24.
fn move_kernarg_offset(obj: &[u8]) -> Vec<u8> {
    let from = b"\xa7.offset\x18";
    let mut out = obj.to_vec();
    if let Some(at) = obj.windows(from.len()).position(|w| w == from) {
        out[at + from.len() - 1] = 28;
    }
    out
}

#[test]
fn a_kernarg_offset_the_code_disagrees_with_fails_the_run() {
    for t in amd_targets() {
        let failures = planted(t, Box::new(move_kernarg_offset));
        assert!(
            failures > 0,
            "{}: the moved kernarg offset went unnoticed",
            t.basename
        );
    }
}

/// Marks every descriptor wave64 (clears KERNEL_CODE_PROPERTY_ENABLE_WAVEFRONT_SIZE32): the
/// emulator runs 64-lane waves of code built for 32, whose EXEC and VCC writes reach only the
/// low 32 lanes.
fn claim_wave64(obj: &[u8]) -> Vec<u8> {
    clear_descriptor_bits(obj, 57, 1 << 2)
}

/// `obj` with the bits of `mask` cleared in byte `at` of every kernel descriptor.
fn clear_descriptor_bits(obj: &[u8], at: usize, mask: u8) -> Vec<u8> {
    let mut out = obj.to_vec();
    for k in kiln_emu::code_object::CodeObject::parse(obj)
        .unwrap()
        .kernels
    {
        out[k.descriptor_file_offset as usize + at] &= !mask;
    }
    out
}

#[test]
fn wave32_code_run_as_wave64_fails_the_run() {
    for t in amd_targets().iter().filter(|t| t.arch.starts_with("gfx1")) {
        let failures = planted(t, Box::new(claim_wave64));
        assert!(
            failures > 0,
            "{}: wave64 execution of wave32 code went unnoticed",
            t.basename
        );
    }
}

/// Sets every descriptor's VGPR granules to one (GRANULATED_WORKITEM_VGPR_COUNT 0: 4 or 8
/// VGPRs), fewer than any of kiln's kernels uses.
fn claim_one_vgpr_granule(obj: &[u8]) -> Vec<u8> {
    clear_descriptor_bits(obj, 48, 0x3f)
}

#[test]
fn a_descriptor_allocating_too_few_vgprs_fails_the_run() {
    for t in amd_targets() {
        let failures = planted(t, Box::new(claim_one_vgpr_granule));
        assert!(
            failures > 0,
            "{}: the short VGPR allocation went unnoticed",
            t.basename
        );
    }
}
