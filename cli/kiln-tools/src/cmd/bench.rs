//! `kiln-tools bench`: what kiln costs on a real GPU, measured in one process.
//!
//! - Cold start by phase (resolve, kdb decode + sha256, ELF checks, module load, first launch)
//!   beside an NVRTC compile of the same kernel from source (what a runtime without embedded
//!   code objects pays).
//! - Lookup cost of the embedded databases on the host CPU.
//! - Every ResNet-50 conv layer through kiln's resolved solution and through cuDNN's fastest
//!   algorithm, on the same buffers, outputs compared, each timed with device events
//!   (warm-up, median of repeats, inputs rotated over three copies); and the whole network
//!   launched back to back.
//!
//! The report is Markdown, written to `--out` and printed.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use kiln::backend::{BackendError, DeviceBuffer, Stream};
use kiln::context::{Context, Invoker};
use kiln::harness::coldstart::{cold_problem, cold_start, inputs, launch_to_result_s};
use kiln::harness::networks::resnet50;
use kiln::harness::timing::time_device;
use kiln::harness::verify::{download, poison, random_values, relative_error, tolerance, upload};
use kiln::resolve::Ranked;
use kiln::{ConvProblem, ConvSpec, DataType, Layout, RunError};

use super::DeviceArgs;
use crate::cudnn::{Cudnn, CudnnConv};
use crate::CliResult;

/// Arguments of `kiln bench`.
#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// Write the Markdown report here too.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Timed repeats per layer (after 3 warm-ups).
    #[arg(long, default_value_t = 20)]
    repeats: usize,
    /// Batch sizes to compare.
    #[arg(long, num_args = 1.., default_values_t = [1u32, 32])]
    batch: Vec<u32>,
    /// Workspace cuDNN may use, MiB.
    #[arg(long, default_value_t = 1024)]
    cudnn_workspace_mib: usize,
}

/// A buffer of `p`'s x (`which` 0) or w (1) holding seeded random values.
fn random_tensor(
    ctx: &Context,
    p: &ConvProblem,
    which: usize,
    seed: u64,
) -> Result<DeviceBuffer, RunError> {
    let n = p.element_counts()[which] as usize;
    Ok(upload(ctx.device(), p.data_types()[0], &random_values(n, seed))?.0)
}

/// Kernel sources, for compiling the cold-start kernel with NVRTC as a JIT runtime would.
const KERNEL_SOURCES: [(&str, &str); 6] = [
    ("kiln_gpu.h", include_str!("../../../../kernels/kiln_gpu.h")),
    ("igemm.h", include_str!("../../../../kernels/igemm.h")),
    (
        "conv_naive.cpp",
        include_str!("../../../../kernels/conv_naive.cpp"),
    ),
    (
        "conv_tiled.cpp",
        include_str!("../../../../kernels/conv_tiled.cpp"),
    ),
    (
        "conv_igemm.cpp",
        include_str!("../../../../kernels/conv_igemm.cpp"),
    ),
    (
        "conv_gemm1x1.cpp",
        include_str!("../../../../kernels/conv_gemm1x1.cpp"),
    ),
];

/// The JIT path for the same kernel: NVRTC load, compile, checks + module load, first launch.
struct JitStart {
    nvrtc: String,
    load_s: f64,
    compile_s: f64,
    module_load_s: f64,
    first_launch_s: f64,
    cubin_bytes: usize,
}

fn jit_start(
    ctx: &Context,
    p: &ConvProblem,
    c: &Ranked,
) -> Result<JitStart, Box<dyn std::error::Error>> {
    let target = ctx.target();
    let entry = c.variant.solver.entry;
    let source = KERNEL_SOURCES
        .iter()
        .find(|(n, _)| *n == entry.source)
        .ok_or_else(|| format!("no source for {}", entry.source))?
        .1;
    let opts = kiln::format::manifest::compile_options(
        entry.options,
        p.data_types()[0].name(),
        c.variant.params,
    )?;
    let options: Vec<String> = opts.split_whitespace().map(String::from).collect();
    let t0 = Instant::now();
    let nvrtc = kiln_embed::compile::Nvrtc::load()?;
    let t1 = Instant::now();
    let cubin = nvrtc.compile_cubin(
        entry.source,
        source,
        &KERNEL_SOURCES[..2],
        target.arch,
        &options,
    )?;
    let t2 = Instant::now();
    // SAFETY: NVRTC just compiled this cubin for this device from kiln's own kernel source,
    // with the options of the variant it is used for.
    let inv = unsafe { ctx.invoker_from_object(p, &c.variant, &cubin) }?;
    let t3 = Instant::now();
    let first_launch_s = launch_to_result_s(ctx, &inv, &inputs(ctx, p)?)?;
    Ok(JitStart {
        nvrtc: format!("NVRTC {} ({})", nvrtc.version()?, nvrtc.path.display()),
        load_s: (t1 - t0).as_secs_f64(),
        compile_s: (t2 - t1).as_secs_f64(),
        module_load_s: (t3 - t2).as_secs_f64(),
        first_launch_s,
        cubin_bytes: cubin.len(),
    })
}

/// Median host time of `f` in ns, over `rounds` rounds of `iters` calls.
fn host_ns(rounds: usize, iters: usize, mut f: impl FnMut()) -> f64 {
    let mut per_call: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_secs_f64() * 1e9 / iters as f64
        })
        .collect();
    per_call.sort_by(f64::total_cmp);
    per_call[per_call.len() / 2]
}

fn cudnn_err(e: crate::cudnn::CudnnError) -> RunError {
    RunError::Backend(BackendError::kiln(e.call, e.message))
}

/// One distinct ResNet-50 layer prepared for both runtimes.
struct LayerBench {
    name: String,
    problem: ConvProblem,
    count: usize,
    xs: [DeviceBuffer; 3],
    w: DeviceBuffer,
    y_kiln: DeviceBuffer,
    y_cudnn: DeviceBuffer,
    candidate: Ranked,
    invoker: std::sync::Arc<Invoker>,
}

/// Results of one (type, layout, batch) configuration.
struct ConfigResult {
    label: String,
    rows: String,
    kiln_sum_ms: f64,
    cudnn_sum_ms: f64,
    kiln_network_ms: f64,
    cudnn_network_ms: f64,
    disagreements: usize,
}

#[allow(clippy::too_many_arguments)]
fn bench_config(
    ctx: &Context,
    cudnn: &Cudnn,
    workspace: &DeviceBuffer,
    dtype: DataType,
    layout: Layout,
    n: u32,
    repeats: usize,
) -> Result<ConfigResult, Box<dyn std::error::Error>> {
    let be = ctx.device();
    let all = resnet50(n, dtype, layout, false)?;
    let unique = resnet50(n, dtype, layout, true)?;
    let stream = Stream::default();
    let mut layers = Vec::new();
    for (i, l) in unique.iter().enumerate() {
        let p = l.problem;
        let seed = 100 * i as u64;
        let xs = [
            random_tensor(ctx, &p, 0, seed)?,
            random_tensor(ctx, &p, 0, seed + 1)?,
            random_tensor(ctx, &p, 0, seed + 2)?,
        ];
        let w = random_tensor(ctx, &p, 1, seed + 3)?;
        let y_bytes = p.byte_counts()[2];
        let candidate = *ctx.find_solutions(&p)?.best();
        layers.push(LayerBench {
            name: l.name.clone(),
            problem: p,
            count: all
                .iter()
                .filter(|a| a.problem.find_db_key() == p.find_db_key())
                .count(),
            xs,
            w,
            y_kiln: be.alloc(y_bytes)?,
            y_cudnn: be.alloc(y_bytes)?,
            invoker: ctx.prepare(&p, &candidate.variant)?,
            candidate,
        });
    }
    let mut convs = Vec::new();
    for l in &layers {
        convs.push(CudnnConv::new(
            cudnn,
            &l.problem,
            l.xs[0].device_ptr(),
            l.w.device_ptr(),
            l.y_cudnn.device_ptr(),
            workspace.device_ptr(),
            workspace.bytes() as usize,
        )?);
    }
    let label = format!("{} {} N={n}", dtype.name(), layout.name());
    let mut rows = String::new();
    let (mut kiln_sum, mut cudnn_sum, mut disagreements) = (0.0, 0.0, 0);
    for (l, conv) in layers.iter().zip(&convs) {
        // Same inputs through both, outputs compared (cuDNN's FP16 path may use tensor cores,
        // so agreement is judged at the type's tolerance).
        poison(&l.y_kiln)?;
        poison(&l.y_cudnn)?;
        ctx.run(&l.invoker, &l.xs[0], &l.w, &l.y_kiln, None, &stream)?;
        conv.run(
            l.xs[0].device_ptr(),
            l.w.device_ptr(),
            l.y_cudnn.device_ptr(),
            workspace.device_ptr(),
        )
        .map_err(cudnn_err)?;
        let error = relative_error(&download(&l.y_kiln, dtype)?, &download(&l.y_cudnn, dtype)?);
        let agree = error <= tolerance(dtype);
        disagreements += usize::from(!agree);
        let kiln_t = time_device(be, 3, repeats, |i| {
            ctx.run(&l.invoker, &l.xs[i % 3], &l.w, &l.y_kiln, None, &stream)
        })?;
        let cudnn_t = time_device(be, 3, repeats, |i| {
            conv.run(
                l.xs[i % 3].device_ptr(),
                l.w.device_ptr(),
                l.y_cudnn.device_ptr(),
                workspace.device_ptr(),
            )
            .map_err(cudnn_err)
        })?;
        kiln_sum += kiln_t.median_ms * l.count as f64;
        cudnn_sum += cudnn_t.median_ms * l.count as f64;
        writeln!(
            rows,
            "| {} | `{}` | {} | {} [{}] | {:.4} | {} | {:.4} | {:.2} | {:.1e}{} |",
            l.name,
            l.problem.find_db_key(),
            l.count,
            l.candidate.variant.solver.id(),
            l.candidate.variant.params,
            kiln_t.median_ms,
            conv.algorithm,
            cudnn_t.median_ms,
            kiln_t.median_ms / cudnn_t.median_ms,
            error,
            if agree { "" } else { " DISAGREE" }
        )?;
    }
    // The whole network back to back (53 launches, distinct layers reuse their buffers).
    let order: Vec<usize> = all
        .iter()
        .map(|a| {
            layers
                .iter()
                .position(|l| l.problem.find_db_key() == a.problem.find_db_key())
                .unwrap_or(0)
        })
        .collect();
    let kiln_net = time_device(be, 1, 5, |i| {
        for &j in &order {
            let l = &layers[j];
            ctx.run(&l.invoker, &l.xs[i % 3], &l.w, &l.y_kiln, None, &stream)?;
        }
        Ok(())
    })?;
    let cudnn_net = time_device(be, 1, 5, |i| {
        for &j in &order {
            let l = &layers[j];
            convs[j]
                .run(
                    l.xs[i % 3].device_ptr(),
                    l.w.device_ptr(),
                    l.y_cudnn.device_ptr(),
                    workspace.device_ptr(),
                )
                .map_err(cudnn_err)?;
        }
        Ok(())
    })?;
    drop(convs);
    Ok(ConfigResult {
        label,
        rows,
        kiln_sum_ms: kiln_sum,
        cudnn_sum_ms: cudnn_sum,
        kiln_network_ms: kiln_net.median_ms,
        cudnn_network_ms: cudnn_net.median_ms,
        disagreements,
    })
}

/// Today's UTC date, `YYYY-MM-DD` (days-to-civil conversion; no date crate needed for this).
fn utc_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Prints the report and writes it to `out`.
pub(crate) fn finish(report: &str, out: Option<&std::path::Path>) -> CliResult {
    print!("{report}");
    if let Some(out) = out {
        super::write_atomic(out, report)?;
    }
    Ok(())
}

/// `kiln-tools bench`.
pub fn run(a: &BenchArgs) -> CliResult {
    let t_open = Instant::now();
    let ctx = a.device.context()?;
    let opened_ms = t_open.elapsed().as_secs_f64() * 1e3;
    let info = ctx.device().info().clone();
    let (target, exact) = (ctx.target(), ctx.exact_target());
    let mut r = String::new();
    writeln!(
        r,
        "# kiln bench: {} ({}), {}\n",
        info.name,
        info.arch,
        utc_date()
    )?;
    writeln!(
        r,
        "Device {} ({}, {} SMs, {}), embedded target {}{}; kiln {}; context opened in {opened_ms:.1} ms (cuInit + primary context, not counted below).\n",
        info.spec,
        info.arch,
        info.compute_units,
        info.uuid,
        target.basename,
        if exact { "" } else { " (closest SM count)" },
        env!("CARGO_PKG_VERSION"),
    )?;

    // (b) Cold start first: nothing in this process has touched the embedded tables yet.
    let p = cold_problem()?;
    let cs = cold_start(&ctx, &p)?;
    writeln!(r, "## Cold start: first convolution in a fresh process\n")?;
    writeln!(
        r,
        "Problem `{}`, solver {} [{}]. kiln takes the code object from the binary; the JIT column compiles the same kernel source with the same options through NVRTC, as a runtime without embedded code objects must.\n",
        p.find_db_key(),
        cs.ranked.variant.solver.id(),
        cs.ranked.variant.params
    )?;
    let kiln_total = cs.total_s();
    match jit_start(&ctx, &p, &cs.ranked) {
        Ok(j) => {
            let jit_total = j.load_s + j.compile_s + j.module_load_s + j.first_launch_s;
            writeln!(r, "| phase | kiln (embedded), ms | JIT ({}), ms |", j.nvrtc)?;
            writeln!(r, "|---|---:|---:|")?;
            let ms = |s: f64| format!("{:.3}", s * 1e3);
            for (phase, k, jv) in [
                (
                    "resolve (find-db, perf-db)",
                    ms(cs.resolve_s),
                    ms(cs.resolve_s),
                ),
                (
                    "kdb decode + sha256 / NVRTC load",
                    ms(cs.prepare.decompress_s),
                    ms(j.load_s),
                ),
                (
                    "ELF checks / NVRTC compile",
                    ms(cs.prepare.verify_s),
                    ms(j.compile_s),
                ),
                (
                    "module load + function",
                    ms(cs.prepare.module_load_s),
                    ms(j.module_load_s),
                ),
                (
                    "first launch + synchronize",
                    ms(cs.first_launch_s),
                    ms(j.first_launch_s),
                ),
                ("total", ms(kiln_total), ms(jit_total + cs.resolve_s)),
            ] {
                writeln!(r, "| {phase} | {k} | {jv} |")?;
            }
            writeln!(
                r,
                "\nNVRTC produced a {} B cubin; its module load includes the same ELF checks kiln runs. The JIT path ran second, so the driver was already warm for it.\n",
                j.cubin_bytes
            )?;
        }
        Err(e) => {
            writeln!(r, "kiln: resolve {:.3} ms, decode {:.3} ms, checks {:.3} ms, module load {:.3} ms, first launch {:.3} ms, total {:.3} ms. JIT comparison not run: {e}\n",
                cs.resolve_s * 1e3, cs.prepare.decompress_s * 1e3, cs.prepare.verify_s * 1e3,
                cs.prepare.module_load_s * 1e3, cs.first_launch_s * 1e3, kiln_total * 1e3)?;
        }
    }

    // (c) Lookup cost on the host.
    writeln!(
        r,
        "## Lookup cost (host CPU, warm tables, median of 7 rounds)\n"
    )?;
    writeln!(r, "| lookup | ns per call |")?;
    writeln!(r, "|---|---:|")?;
    let net = resnet50(1, DataType::Fp32, Layout::Nchw, true)?;
    let problems: Vec<ConvProblem> = net.iter().map(|l| l.problem).collect();
    let per = |ns: f64| ns / problems.len() as f64;
    let find_ns = per(host_ns(7, 2000, || {
        for q in &problems {
            std::hint::black_box(target.find_record(std::hint::black_box(q)).ok());
        }
    }));
    let perf_ns = per(host_ns(7, 2000, || {
        for q in &problems {
            std::hint::black_box(target.perf_params(q, "ConvImplicitGemmFwd").ok());
        }
    }));
    let rank_ns = per(host_ns(7, 500, || {
        for q in &problems {
            std::hint::black_box(kiln::resolve::resolve(target, q).ok());
        }
    }));
    let unseen = ConvProblem::new(ConvSpec {
        n: 3,
        c: 96,
        k: 80,
        input: [1, 37, 37],
        filter: [1, 3, 3],
        pad: [0, 1, 1],
        ..ConvSpec::default()
    })?;
    let fallback_ns = host_ns(7, 500, || {
        std::hint::black_box(kiln::resolve::resolve(target, std::hint::black_box(&unseen)).ok());
    });
    let invoker_ns = host_ns(7, 2000, || {
        std::hint::black_box(ctx.prepare(&p, &cs.ranked.variant).ok());
    });
    for (what, ns) in [
        ("find-db record (ResNet-50 layers, FP32 N=1)", find_ns),
        ("perf-db record", perf_ns),
        (
            "full resolve: find-db + perf-db + applicability (`resolve`)",
            rank_ns,
        ),
        (
            "resolve of a problem not in the find-db (fallback)",
            fallback_ns,
        ),
        ("invoker cache hit (`prepare` again)", invoker_ns),
    ] {
        writeln!(r, "| {what} | {ns:.0} |")?;
    }

    // (a) Every ResNet-50 layer against cuDNN.
    let cudnn = match Cudnn::open() {
        Ok(c) => c,
        Err(e) => {
            // Keep what was measured; say why the comparison is missing.
            writeln!(r, "\n## ResNet-50 against cuDNN: not run\n\n{e}")?;
            finish(&r, a.out.as_deref())?;
            return Err(format!("cuDNN comparison not run: {e}").into());
        }
    };
    writeln!(
        r,
        "\n## ResNet-50 conv layers: kiln against cuDNN {}.{}.{}\n",
        cudnn.version / 10000,
        cudnn.version / 100 % 100,
        cudnn.version % 100
    )?;
    writeln!(r, "Same process, same device buffers. kiln runs the solution its embedded find-db ranks first; cuDNN runs the fastest algorithm `cudnnFindConvolutionForwardAlgorithmEx` found (workspace <= {} MiB). FP32 is compared with cuDNN's FMA math (true FP32, no TF32, as kiln computes); FP16 lets cuDNN use tensor cores (kiln's kernels do not). Times: median of {} event-timed launches after 3 warm-ups, inputs rotated over 3 copies. `x` = count of the layer in the network; `ratio` = kiln / cuDNN; `error` = relative difference of the two outputs.\n", a.cudnn_workspace_mib, a.repeats)?;
    let workspace = ctx.device().alloc((a.cudnn_workspace_mib as u64) << 20)?;
    let mut summary = Vec::new();
    for (dtype, layout) in [
        (DataType::Fp32, Layout::Nchw),
        (DataType::Fp32, Layout::Nhwc),
        (DataType::Fp16, Layout::Nchw),
        (DataType::Fp16, Layout::Nhwc),
    ] {
        for &n in &a.batch {
            eprintln!("bench: {} {} N={n}", dtype.name(), layout.name());
            let c = bench_config(&ctx, &cudnn, &workspace, dtype, layout, n, a.repeats)?;
            writeln!(r, "### {}\n", c.label)?;
            writeln!(r, "| layer | problem | x | kiln solver [params] | kiln ms | cuDNN algorithm | cuDNN ms | ratio | error |")?;
            writeln!(r, "|---|---|---:|---|---:|---|---:|---:|---|")?;
            r.push_str(&c.rows);
            writeln!(
                r,
                "\nSum over the 53 layers: kiln {:.3} ms, cuDNN {:.3} ms ({:.1}x). Whole network launched back to back: kiln {:.3} ms, cuDNN {:.3} ms.{}\n",
                c.kiln_sum_ms,
                c.cudnn_sum_ms,
                c.kiln_sum_ms / c.cudnn_sum_ms,
                c.kiln_network_ms,
                c.cudnn_network_ms,
                if c.disagreements > 0 { format!(" {} layers' outputs DISAGREE.", c.disagreements) } else { " Every layer's outputs agree within the type's tolerance.".into() }
            )?;
            summary.push(c);
        }
    }
    writeln!(
        r,
        "## Summary: ResNet-50 convolutions, whole network back to back\n"
    )?;
    writeln!(r, "| configuration | kiln ms | cuDNN ms | kiln / cuDNN |")?;
    writeln!(r, "|---|---:|---:|---:|")?;
    let mut failed = 0;
    for c in &summary {
        writeln!(
            r,
            "| {} | {:.3} | {:.3} | {:.1} |",
            c.label,
            c.kiln_network_ms,
            c.cudnn_network_ms,
            c.kiln_network_ms / c.cudnn_network_ms
        )?;
        failed += c.disagreements;
    }
    finish(&r, a.out.as_deref())?;
    if failed > 0 {
        return Err(format!("{failed} layers: kiln and cuDNN outputs disagree").into());
    }
    Ok(())
}
