//! `kiln demo`, kiln's main job: every ResNet-50 conv layer through kiln. On a GPU each layer's
//! best solution runs and is checked against the f64 reference; without one, the plan is
//! resolved for every embedded target and every code object it needs is decoded and checked
//! (sha256, ELF bounds, target) for that target's arch.

use kiln::format::text::excerpt;
use kiln::harness::networks::{resnet50, Layer};
use kiln::harness::verify::run_checked;
use kiln::{DataType, Layout};

use crate::args::DemoArgs;
use crate::CliResult;

pub fn run(a: &DemoArgs) -> CliResult {
    let dtype = DataType::from_name(&a.dtype)
        .filter(|d| matches!(d, DataType::Fp32 | DataType::Fp16 | DataType::Bf16))
        .ok_or_else(|| format!("--type '{}': use FP32, FP16 or BF16", excerpt(&a.dtype)))?;
    let layout = Layout::from_name(&a.layout)
        .filter(|l| matches!(l, Layout::Nchw | Layout::Nhwc))
        .ok_or_else(|| format!("--layout '{}': use NCHW or NHWC", excerpt(&a.layout)))?;
    let layers = resnet50(a.n, dtype, layout, false).map_err(|e| format!("-n {}: {e}", a.n))?;
    // Only a machine with no GPU at all, where no device was asked for, resolves instead: a
    // device that was named (--device, KILN_DEVICE) and cannot be opened is an error.
    let asked = a.device.device.is_some()
        || std::env::var_os(kiln::backend::DEVICE_VARIABLE).is_some_and(|v| !v.is_empty());
    match a.device.context() {
        Ok(ctx) => on_gpu(&ctx, &layers),
        Err(e) if asked || !kiln::backend::list_devices().is_empty() => Err(e),
        Err(e) => {
            kiln::outln!("no GPU: {e}");
            kiln::outln!("resolving ResNet-50 (N={}, {}, {}) for every embedded target instead, verifying every code object the plan needs", a.n, dtype.name(), layout.name());
            plan_only(&layers)
        }
    }
}

fn on_gpu(ctx: &kiln::context::Context, layers: &[Layer]) -> CliResult {
    let info = ctx.device().info();
    kiln::outln!(
        "ResNet-50 on {} ({} {}) with target {}",
        info.spec,
        info.name,
        info.arch,
        ctx.target().basename
    );
    kiln::outln!(
        "{:<22} {:<48} {:<22} {:<10} {:>10} {:>10}",
        "layer",
        "problem",
        "solver",
        "params",
        "time ms",
        "rel error"
    );
    let (mut total, mut worst, mut failed) = (0.0, 0.0f64, 0);
    for (i, l) in layers.iter().enumerate() {
        let best = *ctx.find_solutions(&l.problem)?.best();
        let r = run_checked(ctx, &l.problem, &best.variant, 1000 + i as u64, 10)?;
        total += r.time_ms;
        worst = worst.max(r.error);
        failed += usize::from(!r.passed);
        kiln::outln!(
            "{:<22} {:<48} {:<22} {:<10} {:>10.4} {:>10.2e}{}",
            l.name,
            l.problem.find_db_key().as_str(),
            best.variant.solver.id(),
            best.variant.params,
            r.time_ms,
            r.error,
            if r.passed { "" } else { "  FAIL" }
        );
    }
    kiln::outln!(
        "{} layers, total {:.3} ms, worst relative error {:.2e}",
        layers.len(),
        total,
        worst
    );
    if failed > 0 {
        return Err(format!("{failed} layers outside tolerance").into());
    }
    whole_network(ctx)
}

/// The whole ResNet-50 (FP16, N=1, seeded random weights) through kiln as one captured graph,
/// its output checked against the network's CPU reference.
fn whole_network(ctx: &kiln::context::Context) -> CliResult {
    use kiln::net::{models, Network, Weights};
    let def = models::resnet50(1000);
    let weights = Weights::random(&def, 11)?;
    let dtype = DataType::Fp16;
    let net = Network::new(ctx, &def, &weights, 1, dtype)?;
    let s = net.input_shape();
    let values = kiln::harness::verify::random_values((s.c * s.h * s.w) as usize, 5);
    let (bytes, image) = kiln::elements::encode(dtype, &values);
    net.input().upload(&bytes)?;
    net.run()?;
    let gpu: Vec<Vec<f64>> = net
        .download_outputs()?
        .iter()
        .map(|o| kiln::elements::decode(dtype, o))
        .collect();
    let graph = net.graph().ok_or("no captured graph")?;
    let t = kiln::harness::timing::time_device(ctx.device(), 3, 20, |_| {
        Ok(graph.launch(&kiln::backend::Stream::default())?)
    })?;
    let c = super::net::check_against_cpu(&def, &weights, 1, dtype, &image, &gpu)?;
    kiln::outln!(
        "\nwhole ResNet-50 (FP16, N=1, random weights): {} launches in one graph, {:.4} ms GPU-only; CPU reference: largest difference {:.2e} (tolerance {:.0e}), top-1 {}",
        net.launches(),
        t.median_ms,
        c.max_abs,
        c.tolerance,
        if c.top1_agree == Some(1) {
            "agrees"
        } else {
            "differs"
        }
    );
    if c.max_abs > c.tolerance {
        return Err("the whole network differs from its CPU reference".into());
    }
    Ok(())
}

/// A device arch string for a target, as its runtime would report it (AMD: the target ID with
/// the features kiln's objects are built for).
fn device_arch_of(t: &kiln::EmbeddedTarget) -> String {
    match t.vendor {
        kiln::Vendor::Amd => format!("{}:sramecc+:xnack-", t.arch),
        kiln::Vendor::Nvidia => t.arch.to_string(),
    }
}

fn plan_only(layers: &[Layer]) -> CliResult {
    for t in kiln::targets().iter().filter(|t| t.kdb.is_some()) {
        let device = device_arch_of(t);
        let mut solvers_used: std::collections::BTreeMap<&str, usize> = Default::default();
        let mut objects = std::collections::BTreeSet::new();
        for l in layers {
            let v = kiln::resolve::resolve(t, &l.problem)?.best().variant;
            *solvers_used.entry(v.solver.id()).or_default() += 1;
            let (name, args) =
                v.solver
                    .entry
                    .kdb_key(l.problem.data_types()[0].name(), v.params, t.arch)?;
            let obj = t
                .code_object(&name, &args)?
                .ok_or_else(|| format!("{}: no code object {name} {args}", t.basename))?;
            kiln::codeobject::check_for_device(obj.bytes, &device)?;
            objects.insert((name, args));
        }
        let used: Vec<String> = solvers_used
            .iter()
            .map(|(s, n)| format!("{s} x{n}"))
            .collect();
        kiln::outln!(
            "{:<11} {} layers resolved, {} code objects decoded, sha256- and ELF-verified for {}: {}",
            t.basename,
            layers.len(),
            objects.len(),
            device,
            used.join(", ")
        );
    }
    kiln::outln!("no GPU was found: nothing was run (the plan above is what a device of each target would run)");
    Ok(())
}
