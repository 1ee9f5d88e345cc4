//! Tests that need a GPU. They are `#[ignore]`d so that a machine without one skips them
//! loudly; `ci/device-run.sh` runs them on the H100 with `--ignored`.

use kiln::backend::Stream;
use kiln::context::Context;
use kiln::harness::verify::run_checked;
use kiln::resolve::Variant;
use kiln::{ConvProblem, ConvSpec, DataType, Layout, RunError};

fn ctx() -> Context {
    Context::new(kiln::backend::open(Some("cuda:0")).expect("a CUDA device"))
        .expect("an embedded target for it")
}

#[test]
#[ignore = "needs a GPU (ci/device-run.sh)"]
fn every_solver_matches_the_reference() {
    let ctx = ctx();
    let problems = [
        ConvSpec {
            n: 2,
            c: 32,
            k: 48,
            input: [1, 19, 17],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            ..ConvSpec::default()
        },
        ConvSpec {
            n: 2,
            c: 32,
            k: 48,
            input: [1, 12, 12],
            filter: [1, 1, 1],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        },
        ConvSpec {
            spatial_dims: 3,
            n: 1,
            c: 8,
            k: 8,
            input: [6, 8, 8],
            filter: [3, 3, 3],
            pad: [1, 1, 1],
            groups: 8,
            layouts: [Layout::Ncdhw; 3],
            data_types: [DataType::Bf16; 3],
            ..ConvSpec::default()
        },
    ];
    let mut runs = 0;
    for spec in problems {
        let p = ConvProblem::new(spec).unwrap();
        for c in ctx.find_solutions(&p).unwrap().iter() {
            let r = run_checked(&ctx, &p, &c.variant, 42, 2).unwrap();
            assert!(
                r.passed,
                "{} [{}] on {}: error {}",
                c.variant.solver.id(),
                c.variant.params,
                p.find_db_key(),
                r.error
            );
            runs += 1;
        }
    }
    assert!(runs >= 6);
}

#[test]
#[ignore = "needs a GPU (ci/device-run.sh)"]
fn buffers_are_checked_and_invokers_cached() {
    let ctx = ctx();
    let p = ConvProblem::new(ConvSpec {
        n: 1,
        c: 8,
        k: 8,
        input: [1, 8, 8],
        filter: [1, 3, 3],
        ..ConvSpec::default()
    })
    .unwrap();
    let c = ctx.find_solutions(&p).unwrap().best().variant;
    let a = ctx.prepare(&p, &c).unwrap();
    let b = ctx.prepare(&p, &c).unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&a, &b),
        "same (network config, solver, perf config) -> same invoker"
    );
    // Another perf config of the same solver is another kernel: never the cached one.
    let igemm = kiln::solvers::by_id("ConvImplicitGemmFwd").unwrap();
    for &params in igemm.entry.params {
        let v = Variant {
            solver: igemm,
            params,
        };
        let inv = ctx.prepare(&p, &v).unwrap();
        assert_eq!(inv.variant.params, params);
        let planned = igemm.plan(&p, &ctx.caps(), params).unwrap();
        assert!(inv.launches().eq(planned.kernels.iter()));
    }
    assert!(igemm.entry.params.len() >= 2);
    let dev = ctx.device();
    let small = dev.alloc(16).unwrap();
    let ok = dev.alloc(1 << 20).unwrap();
    let e = ctx
        .run(&a, &small, &ok, &ok, None, &Stream::default())
        .unwrap_err();
    assert!(
        matches!(
            e,
            RunError::BufferTooSmall {
                which: "x",
                needed: 2048,
                given: 16
            }
        ),
        "{e}"
    );
    // A variant that does not apply to the problem is refused before any module load or launch
    // (review D7: the 1x1 GEMM on a padded 3x3 problem would read x out of bounds).
    let gemm1x1 = Variant {
        solver: kiln::solvers::by_id("ConvGemm1x1Fwd").unwrap(),
        params: "64,64,16",
    };
    let e = ctx.prepare(&p, &gemm1x1).unwrap_err();
    assert!(matches!(e, RunError::Solver { .. }), "{e}");
    assert!(e.to_string().contains("does not apply"), "{e}");
    // A buffer of another open device (here: a second context on the same GPU) is refused.
    let other = kiln::backend::open(Some("cuda:0")).unwrap();
    let foreign = other.alloc(1 << 20).unwrap();
    let e = ctx
        .run(&a, &foreign, &ok, &ok, None, &Stream::default())
        .unwrap_err();
    assert!(matches!(e, RunError::ForeignBuffer { which: "x" }), "{e}");
}

#[test]
#[ignore = "needs a GPU (ci/device-run.sh)"]
fn a_foreign_code_object_is_refused_before_the_driver() {
    let ctx = ctx();
    let other = kiln::named_target("gfx90a68").unwrap();
    let solver = kiln::solvers::by_id("ConvDirectNaiveFwd").unwrap();
    let (name, args) = solver
        .entry
        .kdb_key(DataType::Fp32.name(), "", "gfx90a")
        .unwrap();
    let obj = other.code_object(&name, &args).unwrap().unwrap();
    let e = kiln::codeobject::check_for_device(obj.bytes, &ctx.device().info().arch)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the binary has AMD gfx90a") && e.contains("the device is sm_90"),
        "{e}"
    );
}

/// Distinct small problems of every layout family and type (the same list for every caller).
fn varied_problems(count: usize) -> Vec<ConvProblem> {
    let mut out = Vec::new();
    let mut i = 0u32;
    while out.len() < count {
        let c = 4 + (i % 13) * 4;
        let k = 4 + (i / 13 % 11) * 4;
        let hw = 5 + i / 143 % 29;
        let f = [1, 3, 5][(i % 3) as usize];
        let (layout, dtype) = [
            (Layout::Nchw, DataType::Fp32),
            (Layout::Nhwc, DataType::Fp16),
            (Layout::Nchw, DataType::Bf16),
            (Layout::Nhwc, DataType::Fp32),
        ][(i / 7 % 4) as usize];
        i += 1;
        if let Ok(p) = ConvProblem::new(ConvSpec {
            n: 1 + i % 3,
            c,
            k,
            input: [1, hw, hw],
            filter: [1, f, f],
            pad: [0, f / 2, f / 2],
            layouts: [layout; 3],
            data_types: [dtype; 3],
            ..ConvSpec::default()
        }) {
            out.push(p);
        }
    }
    out
}

/// Runs `p`'s best solution on seeded inputs; returns the output bytes.
fn output_bytes(ctx: &Context, p: &ConvProblem, seed: u64) -> Vec<u8> {
    use kiln::harness::verify::{random_values, upload};
    let dtype = p.data_types()[0];
    let [xn, wn, _] = p.element_counts();
    let (x, _) = upload(ctx.device(), dtype, &random_values(xn as usize, seed)).unwrap();
    let (w, _) = upload(ctx.device(), dtype, &random_values(wn as usize, seed + 1)).unwrap();
    let y = ctx.device().alloc(p.byte_counts()[2]).unwrap();
    y.fill(0xFF).unwrap();
    let plan = ctx.find_solutions(p).unwrap();
    let inv = ctx.prepare(p, &plan.best().variant).unwrap();
    let ws = kiln::harness::verify::workspace_for(ctx.device(), &inv).unwrap();
    let stream = Stream::default();
    ctx.run(&inv, &x, &w, &y, ws.as_ref(), &stream).unwrap();
    ctx.device().synchronize().unwrap();
    let mut out = vec![0u8; y.bytes() as usize];
    y.download(&mut out).unwrap();
    out
}

#[test]
#[ignore = "needs a GPU (ci/device-run.sh)"]
fn sixteen_threads_sharing_a_context_match_one_thread_bit_for_bit() {
    let problems = varied_problems(96);
    let single = ctx();
    let expected: Vec<Vec<u8>> = problems
        .iter()
        .enumerate()
        .map(|(i, p)| output_bytes(&single, p, i as u64))
        .collect();
    drop(single);
    // A fresh context: the 16 threads resolve, prepare (one shared invoker cache) and run at once.
    let shared = ctx();
    let t0 = std::time::Instant::now();
    let mismatches = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..16 {
            let (shared, problems, expected, mismatches) =
                (&shared, &problems, &expected, &mismatches);
            s.spawn(move || {
                for round in 0..3 {
                    for (i, p) in problems.iter().enumerate() {
                        if (i + round) % 16 != t {
                            continue;
                        }
                        if output_bytes(shared, p, i as u64) != expected[i] {
                            mismatches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                    }
                }
            });
        }
    });
    println!(
        "16 threads x {} problems x 3 rounds in {:.2} s: {} mismatches; {} invokers cached",
        problems.len(),
        t0.elapsed().as_secs_f64(),
        mismatches.load(std::sync::atomic::Ordering::SeqCst),
        shared.cached_invokers()
    );
    assert_eq!(mismatches.into_inner(), 0);
}

/// Resident host memory of this process, bytes.
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

#[test]
#[ignore = "needs a GPU (ci/device-run.sh)"]
fn five_thousand_distinct_problems_keep_memory_bounded() {
    // A cache of 256 invokers: older ones are evicted and their modules unloaded.
    let ctx =
        Context::with_invoker_capacity(kiln::backend::open(Some("cuda:0")).unwrap(), 256).unwrap();
    let problems = varied_problems(5000);
    let mut samples = Vec::new();
    let t0 = std::time::Instant::now();
    for (i, p) in problems.iter().enumerate() {
        let _ = output_bytes(&ctx, p, i as u64);
        if (i + 1) % 500 == 0 {
            let (free, _) = ctx.device().memory_info().unwrap();
            samples.push((i + 1, rss_bytes(), free, ctx.cached_invokers()));
        }
    }
    for (n, rss, free, cached) in &samples {
        println!(
            "after {n:>5} problems: host RSS {:>7.1} MiB, device free {:>9.1} MiB, {cached} invokers cached",
            *rss as f64 / 1048576.0,
            *free as f64 / 1048576.0
        );
    }
    println!(
        "{} problems in {:.1} s",
        problems.len(),
        t0.elapsed().as_secs_f64()
    );
    // From the first sample on (the cache is full by then), memory stays flat.
    let (_, rss0, free0, _) = samples[1];
    let (_, rss1, free1, cached) = *samples.last().unwrap();
    assert!(cached <= 256);
    assert!(
        rss1 < rss0 + (64 << 20),
        "host memory grew {} MiB",
        (rss1 - rss0) >> 20
    );
    assert!(
        free1 + (256 << 20) > free0,
        "device memory shrank {} MiB",
        (free0 - free1) >> 20
    );
}

/// 3xTF32 with IEEE special values, on the H100: NaN inputs give NaN, values near the top of
/// the FP32 range stay exact to 1e-6, and an input infinity gives +inf as in FP32 (CUTLASS's
/// own big/small split gave NaN: kiln's split in `kernels/nv/cutlass_conv.cu` keeps it).
#[test]
#[ignore = "needs a GPU (ci/device-run.sh)"]
fn three_tf32_special_values() {
    use kiln::harness::verify::{download, poisoned, upload};
    let ctx = ctx();
    let solver = kiln::solvers::by_id("ConvCutlass3xTf32Fwd").unwrap();
    let p = ConvProblem::new(ConvSpec {
        n: 1,
        c: 32,
        k: 8,
        input: [1, 4, 4],
        filter: [1, 1, 1],
        layouts: [Layout::Nhwc; 3],
        ..ConvSpec::default()
    })
    .unwrap();
    let dev = ctx.device();
    for params in solver.entry.params.iter().filter(|q| q.ends_with(",1")) {
        let inv = ctx.prepare(&p, &Variant { solver, params }).unwrap();
        // Pixel 0, channel 0 holds the special value; every other x is 0.25, every w is 1.
        for (x0, want) in [
            (3.0e38f32, 3.0e38 + 31.0 * 0.25),
            (f32::NAN, f64::NAN),
            (f32::INFINITY, f64::INFINITY),
        ] {
            let mut x = vec![0.25f32; 16 * 32];
            x[0] = x0;
            let (xb, _) = upload(dev, DataType::Fp32, &x).unwrap();
            let (wb, _) = upload(dev, DataType::Fp32, &[1.0f32; 8 * 32]).unwrap();
            let yb = poisoned(dev, DataType::Fp32, 16 * 8).unwrap();
            ctx.run(&inv, &xb, &wb, &yb, None, &Stream::default())
                .unwrap();
            let y = download(&yb, DataType::Fp32).unwrap();
            for &got in &y[..8] {
                if !want.is_finite() {
                    assert!(
                        got == want || (want.is_nan() && got.is_nan()),
                        "[{params}] x0={x0}: {got}"
                    );
                } else {
                    assert!(
                        ((got - want) / want).abs() <= 1e-6,
                        "[{params}] x0={x0}: {got}"
                    );
                }
            }
            // Pixel 1 never reads the special value.
            assert!(
                y[8..16].iter().all(|&v| (v - 8.0).abs() <= 8e-6),
                "[{params}] {:?}",
                &y[8..16]
            );
        }
    }
}

/// Runs `chain` back to back on one stream, each layer reading the previous one's output, and
/// returns the last output's bytes.
fn chained_output(ctx: &Context, chain: &[ConvProblem], programmatic: bool) -> Vec<u8> {
    use kiln::harness::verify::{random_values, upload, workspace_for};
    ctx.set_programmatic_launch(programmatic);
    let dtype = chain[0].data_types()[0];
    let dev = ctx.device();
    let mut x = upload(
        dev,
        dtype,
        &random_values(chain[0].element_counts()[0] as usize, 7),
    )
    .unwrap()
    .0;
    let stream = Stream::default();
    let mut keep = Vec::new();
    for (i, p) in chain.iter().enumerate() {
        // Weights scaled by 1/sqrt(fan-in), so that activations stay near 1 down the chain
        // (an overflow to inf would hide a difference).
        let [_, fh, fw] = p.filter();
        let scale = 1.0 / ((p.c() * fh * fw) as f32).sqrt();
        let values: Vec<f32> = random_values(p.element_counts()[1] as usize, 100 + i as u64)
            .into_iter()
            .map(|v| v * scale)
            .collect();
        let w = upload(dev, dtype, &values).unwrap().0;
        let y = dev.alloc(p.byte_counts()[2]).unwrap();
        y.fill(0xFF).unwrap();
        let inv = ctx
            .prepare(p, &ctx.find_solutions(p).unwrap().best().variant)
            .unwrap();
        let ws = workspace_for(dev, &inv).unwrap();
        ctx.run(&inv, &x, &w, &y, ws.as_ref(), &stream).unwrap();
        keep.push((x, w, ws));
        x = y;
    }
    dev.synchronize().unwrap();
    ctx.set_programmatic_launch(true);
    let mut out = vec![0u8; x.bytes() as usize];
    x.download(&mut out).unwrap();
    out
}

#[test]
#[ignore = "needs a GPU (ci/device-run.sh)"]
fn chained_layers_with_programmatic_launch_match_serial_launch_bit_for_bit() {
    let ctx = ctx();
    let layer = |n, c, hw, k, f: u32| {
        ConvProblem::new(ConvSpec {
            n,
            c,
            k,
            input: [1, hw, hw],
            filter: [1, f, f],
            pad: [0, f / 2, f / 2],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    };
    // ResNet-50's 56x56 block and 7x7 stage at batch 32 (wgmma 1x1, implicit GEMM, split-K),
    // and the VAE decoder's last two layers (wgmma, then the narrow RGB head): each layer
    // reads what the one before it wrote, with no synchronization between them.
    let chains = [
        vec![
            layer(32, 64, 56, 64, 1),
            layer(32, 64, 56, 64, 3),
            layer(32, 64, 56, 256, 1),
            layer(32, 256, 56, 64, 1),
        ],
        vec![
            layer(32, 512, 7, 512, 3),
            layer(32, 512, 7, 512, 3),
            layer(32, 512, 7, 2048, 1),
            layer(32, 2048, 7, 512, 1),
        ],
        vec![layer(4, 64, 128, 64, 3), layer(4, 64, 128, 3, 3)],
    ];
    for chain in &chains {
        let waiting = chain
            .iter()
            .filter(|p| {
                let plan = ctx.find_solutions(p).unwrap();
                plan.best().variant.solver.waits_on_predecessor()
            })
            .count();
        assert!(
            waiting >= 2,
            "the chain should exercise programmatic launch"
        );
        let serial = chained_output(&ctx, chain, false);
        let finite = serial
            .chunks_exact(2)
            .filter(|h| u16::from_le_bytes([h[0], h[1]]) & 0x7c00 != 0x7c00)
            .count();
        assert_eq!(finite, serial.len() / 2, "every output finite");
        for round in 0..3 {
            assert!(
                chained_output(&ctx, chain, true) == serial,
                "round {round}: {} differs with programmatic launch",
                chain.last().unwrap().find_db_key()
            );
        }
    }
}
