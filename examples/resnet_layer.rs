//! A ResNet-50 layer through kiln's Rust API: open the device, resolve the layer, run the best
//! solution and check the result against a double-precision reference on the CPU. Without a
//! GPU it prints the plan for a named target and the no-device error, and exits 0.
//!
//! ```text
//! cargo run --release --example resnet_layer -- [--device SPEC] [--target NAME] [-n BATCH]
//! ```
//!
//! Same layer, inputs and output hash (`y fnv1a64 0x...`) as examples/c/resnet_layer.c, the C
//! library's path: the two lines must be equal.

use kiln::context::Context;
use kiln::{ConvProblem, ConvSpec, DataType, Layout};

/// ResNet-50 conv2_x 3x3: 64 -> 64 channels on 56x56, padding 1.
const C: usize = 64;
const K: usize = 64;
const H: usize = 56;
const W: usize = 56;
const R: usize = 3;
const S: usize = 3;
const PAD: usize = 1;

fn layer(n: u32) -> Result<ConvProblem, kiln::format::ProblemError> {
    ConvProblem::new(ConvSpec {
        n,
        c: C as u32,
        k: K as u32,
        input: [1, H as u32, W as u32],
        filter: [1, R as u32, S as u32],
        pad: [0, PAD as u32, PAD as u32],
        layouts: [Layout::Nhwc; 3],
        data_types: [DataType::Fp32; 3],
        ..ConvSpec::default()
    })
}

/// The C example's generator: exact floats in [-1, 1).
fn fill(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / 16_777_216.0 * 2.0 - 1.0
        })
        .collect()
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// max |y - ref| / max |ref|, the reference in f64 (NHWC input, KRSC filter, NHWC output).
fn reference_error(n: usize, x: &[f32], w: &[f32], y: &[f32]) -> f64 {
    let (mut worst, mut scale) = (0f64, 0f64);
    for b in 0..n {
        for oh in 0..H {
            for ow in 0..W {
                for k in 0..K {
                    let mut acc = 0f64;
                    for r in 0..R {
                        let Some(ih) = (oh + r).checked_sub(PAD).filter(|&v| v < H) else {
                            continue;
                        };
                        for s in 0..S {
                            let Some(iw) = (ow + s).checked_sub(PAD).filter(|&v| v < W) else {
                                continue;
                            };
                            let xs = &x[((b * H + ih) * W + iw) * C..][..C];
                            let ws = &w[((k * R + r) * S + s) * C..][..C];
                            acc += xs
                                .iter()
                                .zip(ws)
                                .map(|(a, b)| f64::from(*a) * f64::from(*b))
                                .sum::<f64>();
                        }
                    }
                    let got = f64::from(y[((b * H + oh) * W + ow) * K + k]);
                    let diff = if got.is_nan() {
                        f64::INFINITY
                    } else {
                        (got - acc).abs()
                    };
                    worst = worst.max(diff);
                    scale = scale.max(acc.abs());
                }
            }
        }
    }
    worst / if scale > 0.0 { scale } else { 1.0 }
}

fn print_plan(plan: &kiln::resolve::Plan) {
    println!(
        "  {:<4} {:<26} {:<24} {:>10} {:>10}  ranked by",
        "rank", "solver", "params", "time ms", "workspace"
    );
    for (i, r) in plan.iter().enumerate() {
        let near = match r.provenance {
            kiln::resolve::Provenance::Nearest { key, .. } => format!(" {key}"),
            _ => String::new(),
        };
        println!(
            "  {:<4} {:<26} {:<24} {:>10.4} {:>10}  {}{near}",
            i + 1,
            r.variant.solver.id(),
            r.variant.params,
            r.time_ms,
            r.workspace,
            r.provenance.name()
        );
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (mut device, mut target, mut n) = (None, "sm_90_132".to_string(), 1u32);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--device", Some(v)) => device = Some(v),
            ("--target", Some(v)) => target = v,
            ("-n", Some(v)) => n = v.parse()?,
            _ => {
                return Err("usage: resnet_layer [--device SPEC] [--target NAME] [-n BATCH]".into())
            }
        }
    }
    kiln::logging::init_from_env()?;
    println!("kiln {}, Rust API", env!("CARGO_PKG_VERSION"));
    let problem = layer(n)?;
    let ctx = match kiln::backend::open(device.as_deref()) {
        Ok(d) => Context::new(d)?,
        Err(e) => {
            println!("no device: {e}");
            let t = kiln::named_target(&target)?;
            let plan = kiln::resolve::resolve_logged(t, &problem)?;
            println!(
                "plan for {} on target {} (no device: nothing runs):",
                problem.find_db_key().as_str(),
                t.basename
            );
            print_plan(&plan);
            return Ok(());
        }
    };
    println!("device {}", ctx.describe());
    let plan = ctx.find_solutions(&problem)?;
    println!(
        "problem {}: {} solution(s)",
        problem.find_db_key().as_str(),
        plan.len()
    );
    print_plan(&plan);
    let best = plan.best();
    let invoker = ctx.prepare(&problem, &best.variant)?;

    let n = n as usize;
    let x = fill(n * C * H * W, 1);
    let w = fill(K * C * R * S, 2);
    let as_bytes = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
    let dev = ctx.device();
    let (bx, bw) = (
        dev.alloc(x.len() as u64 * 4)?,
        dev.alloc(w.len() as u64 * 4)?,
    );
    let by = dev.alloc((n * K * H * W) as u64 * 4)?;
    let ws = match invoker.workspace_bytes() {
        0 => None,
        bytes => Some(dev.alloc(bytes)?),
    };
    bx.upload(&as_bytes(&x))?;
    bw.upload(&as_bytes(&w))?;
    let stream = kiln::backend::Stream::default();
    for _ in 0..10 {
        ctx.run(&invoker, &bx, &bw, &by, ws.as_ref(), &stream)?;
    }
    let mut out = vec![0u8; n * K * H * W * 4];
    by.download(&mut out)?;
    let y: Vec<f32> = out
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let err = reference_error(n, &x, &w, &y);
    println!(
        "ran {} [{}]: max |y - ref| / max |ref| = {err:.3e} (FP32 bound 1e-5)",
        best.variant.solver.id(),
        best.variant.params
    );
    println!("y fnv1a64 0x{:016x}", fnv1a64(&out));
    if err > 1e-5 || err.is_nan() {
        return Err(format!("relative error {err:.3e} exceeds 1e-5").into());
    }
    println!("passed");
    Ok(())
}
