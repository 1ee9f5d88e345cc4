//! The figures the AMD matrix-core solvers' cost model takes from MIOpen
//! (`kiln::solvers::mma_amd`): the fraction of MI300X's matrix peak that MIOpen's best solver
//! reached per size class of FP16 forward problems, and the least time, recomputed from the
//! gfx942130 find-db committed with that target (MIOpen's own, see its target.toml).

mod common;

use kiln::solvers::mma_amd::{matrix_peak_flops, MIOPEN_FLOOR_MS, MIOPEN_PEAK_FRACTION};

/// (2 x MACs, best ms) of every plain FP16 forward problem in the find-db.
fn miopen_fp16_forward() -> Vec<(f64, f64)> {
    let text =
        std::fs::read_to_string(common::repo().join("targets/gfx942130/gfx942130.HIP.fdb.txt"))
            .unwrap();
    let mut out = Vec::new();
    for line in text.lines() {
        let (key, value) = line.split_once('=').unwrap();
        // C-H-W-FHxFW-K-OH-OW-N-pad-stride-dilation-bias-layout-type-direction; grouped and
        // 3-D keys carry more fields and are left out.
        let f: Vec<&str> = key.split('-').collect();
        if f.len() != 15 || f[13] != "FP16" || f[14] != "F" {
            continue;
        }
        let n = |i: usize| f[i].parse::<f64>().unwrap();
        let (fh, fw) = f[3].split_once('x').unwrap();
        let (fh, fw): (f64, f64) = (fh.parse().unwrap(), fw.parse().unwrap());
        let flops = 2.0 * n(7) * n(4) * n(5) * n(6) * n(0) * fh * fw;
        let best = value
            .split(';')
            .map(|e| {
                let (_, rest) = e.split_once(':').unwrap();
                rest.split(',').next().unwrap().parse::<f64>().unwrap()
            })
            .fold(f64::INFINITY, f64::min);
        out.push((flops, best));
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

#[test]
fn the_cost_model_takes_miopen_s_measured_fractions_of_peak() {
    let rows = miopen_fp16_forward();
    assert_eq!(rows.len(), 1348);
    let peak = matrix_peak_flops("gfx942", 304).unwrap();
    let mut lower = 0.0;
    for (upto, fraction) in MIOPEN_PEAK_FRACTION {
        let class: Vec<f64> = rows
            .iter()
            .filter(|(flops, _)| *flops > lower && *flops <= upto)
            .map(|(flops, ms)| flops / (ms * 1e-3) / peak)
            .collect();
        assert!(class.len() > 50, "{} problems up to {upto:e}", class.len());
        let m = median(class);
        assert!(
            (m - fraction).abs() < 5e-5,
            "up to {upto:e} FLOP: MIOpen reached {m:.5} of peak, the model says {fraction}"
        );
        lower = upto;
    }
    let floor = rows.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    assert!((floor - MIOPEN_FLOOR_MS).abs() < 5e-5, "{floor}");
}

#[test]
fn the_matrix_core_solvers_lead_their_targets_plans_for_half_precision_nhwc() {
    // ResNet-50's 64-channel 3x3 layer at batch 32 (MIOpen's find-db: 0.115 ms on MI300X; the
    // CUDA-core implicit GEMM's model, 0.54 ms there).
    let key = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F";
    let p = kiln::ConvProblem::from_find_db_key(key).unwrap();
    for (target, solver) in [
        ("gfx90a68", "ConvMfmaImplicitGemmFwd"),
        ("gfx942130", "ConvMfmaImplicitGemmFwd"),
        ("gfx1100_48", "ConvWmmaImplicitGemmFwd"),
        ("gfx1151_20", "ConvWmmaImplicitGemmFwd"),
    ] {
        let plan = kiln::resolve::resolve(kiln::named_target(target).unwrap(), &p).unwrap();
        assert_eq!(plan.best().variant.solver.id(), solver, "{target}");
    }
    let mi300x = kiln::resolve::resolve(kiln::named_target("gfx942130").unwrap(), &p).unwrap();
    let ms = mi300x.best().time_ms;
    assert!((0.10..0.20).contains(&ms), "{ms}");
    // FP32 and NCHW problems are not theirs.
    let fp32 = kiln::ConvProblem::from_find_db_key(
        "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-F",
    )
    .unwrap();
    let plan = kiln::resolve::resolve(kiln::named_target("gfx942130").unwrap(), &fp32).unwrap();
    assert!(plan
        .iter()
        .all(|r| r.variant.solver.id() != "ConvMfmaImplicitGemmFwd"));
}
