//! `kiln net run`: a whole network on the GPU, from its safetensors weights, as one captured
//! graph; timed GPU-only (graph replays between device events).

use kiln::harness::timing::{time_device, time_gpu_only, L2Eviction};
use kiln::net::{models, Network, Weights};
use kiln::DataType;

use super::human;
use crate::args::NetShowArgs;
use crate::args::{NetPlanArgs, NetRunArgs};
use crate::CliResult;

/// The network `model` names (a built-in network, or a file holding a definition's text form)
/// and the data type `dtype` names; errors list what exists, or name the file and line.
fn network(model: &str, dtype: &str) -> Result<(kiln::net::NetworkDef, DataType), String> {
    let path = std::path::Path::new(model);
    let def = if let Some(def) = models::by_name(model) {
        def
    } else if let Some(m) = kiln::embedded::model(model) {
        kiln::net::NetworkDef::from_text(m.definition)
            .map_err(|e| format!("net: embedded model {model}: {e}"))?
    } else if path.exists() {
        kiln::harness::net::read_definition(path).map_err(|e| format!("net: {e}"))?
    } else {
        return Err(format!(
            "net: no network {model:?} (known: {}{}; or a file holding a definition, as `kiln net show` prints)",
            models::NAMES.join(", "),
            kiln::embedded::models().iter().map(|m| format!(", {}", m.name)).collect::<String>()
        ));
    };
    let dtype = kiln::net::data_type(dtype)
        .ok_or_else(|| format!("net: --type {dtype:?}: expected FP16, BF16 or FP32"))?;
    Ok((def, dtype))
}

/// `kiln net show`: a network's definition in its text form (the start of one of your own,
/// which `kiln net plan` and `kiln net run` take as a file).
pub fn show(a: &NetShowArgs) -> CliResult {
    let (def, _) = network(&a.model, "FP16")?;
    let text = def
        .to_text()
        .map_err(|e| format!("net: {}: {e}", a.model))?;
    kiln::outln!("{}", text.trim_end());
    Ok(())
}

/// `kiln net plan`: every convolution resolved on each target, no GPU needed. Fails when a
/// node has no solution on a target.
pub fn plan(a: &NetPlanArgs) -> CliResult {
    let (def, dtype) = network(&a.model, &a.dtype)?;
    let problems = def.conv_problems(a.batch, dtype)?;
    if a.keys {
        // The folded squeeze-and-excitation twins too, so that a find measures them.
        let twins = def.excitation_twins(a.batch, dtype)?;
        let mut seen = std::collections::BTreeSet::new();
        for (_, p) in problems.iter().chain(&twins) {
            let key = p.find_db_key().to_string();
            if seen.insert(key.clone()) {
                kiln::outln!("{key}");
            }
        }
        return Ok(());
    }
    let targets: Vec<&'static kiln::EmbeddedTarget> = match &a.target {
        Some(t) => vec![kiln::named_target(t)?],
        None => kiln::targets().iter().collect(),
    };
    for target in targets {
        let mut measured = 0;
        if !a.brief {
            kiln::outln!(
                "{} {} N={} on {}: {} convolutions, {} other operators",
                def.name,
                dtype.name(),
                a.batch,
                target.basename,
                problems.len(),
                def.nodes.len() - problems.len()
            );
        }
        let mut objects = std::collections::BTreeSet::new();
        for (node, p) in &problems {
            let plan = kiln::resolve::resolve(target, p)
                .map_err(|e| format!("net plan: {}: node {node}: {e}", target.basename))?;
            let best = plan.best();
            if best.provenance.name() != "cost model" {
                measured += 1;
            }
            // The chosen code object must be embedded and pass its ELF and target checks.
            let v = &best.variant;
            let (name, args) = v
                .solver
                .entry
                .kdb_key(p.data_types()[0].name(), v.params, target.arch)
                .map_err(|e| format!("net plan: {}: node {node}: {e}", target.basename))?;
            if objects.insert((name.clone(), args.clone())) {
                let object = target
                    .code_object(&name, &args)
                    .map_err(|e| format!("net plan: {}: node {node}: {e}", target.basename))?
                    .ok_or_else(|| {
                        format!(
                            "net plan: {}: node {node}: no code object '{name}' '{args}' embedded",
                            target.basename
                        )
                    })?;
                kiln::codeobject::check_for_device(object.bytes, target.arch).map_err(|e| {
                    format!(
                        "net plan: {}: node {node}: '{name}' '{args}': {e}",
                        target.basename
                    )
                })?;
            }
            if !a.brief {
                kiln::outln!(
                    "  {node:<28} {}: {} [{}] ({})",
                    p.find_db_key(),
                    best.variant.solver.id(),
                    best.variant.params,
                    best.provenance.name()
                );
            }
        }
        // The standalone operators' object of this data type.
        let (name, args) =
            kiln::format::manifest::kdb_key(kiln::ops::SOURCE, "", dtype.name(), "", target.arch)
                .map_err(|e| format!("net plan: {}: operators: {e}", target.basename))?;
        let ops = target
            .code_object(&name, &args)
            .map_err(|e| format!("net plan: {}: operators: {e}", target.basename))?
            .ok_or_else(|| {
                format!(
                    "net plan: {}: no operators object '{name}' '{args}'",
                    target.basename
                )
            })?;
        kiln::codeobject::check_for_device(ops.bytes, target.arch).map_err(|e| {
            format!(
                "net plan: {}: operators '{name}' '{args}': {e}",
                target.basename
            )
        })?;
        objects.insert((name, args));
        if a.brief {
            kiln::outln!(
                "{} {} N={} on {:<12} {} convolutions resolved ({measured} ranked from measurements), {} code objects embedded and checked",
                def.name,
                dtype.name(),
                a.batch,
                target.basename,
                problems.len(),
                objects.len()
            );
        } else {
            kiln::outln!(
                "  {measured} of {} ranked from measurements; {} code objects embedded and checked",
                problems.len(),
                objects.len()
            );
        }
    }
    Ok(())
}

pub fn run(a: &NetRunArgs) -> CliResult {
    let (def, dtype) = network(&a.model, &a.dtype)?;
    // Files are read before the device opens: a bad one fails fast, GPU or not.
    let weights = match &a.weights {
        Some(path) => {
            let bytes = kiln::format::file::read_capped(path, 4 << 30)
                .map_err(|e| format!("net: --weights {}: {e}", path.display()))?;
            Weights::from_safetensors(&bytes)
                .map_err(|e| format!("net: --weights {}: {e}", path.display()))?
        }
        None if a.random_weights => Weights::random(&def, 11)?,
        None => {
            // A missing flag is a usage error (exit 2), as clap's own are.
            let m = kiln::embedded::model(&a.model).ok_or_else(|| {
                kiln::harness::output::Classified::boxed(
                    kiln::harness::output::ExitClass::Usage,
                    format!("net: {}: give --weights FILE or --random-weights (only embedded networks carry their own)", a.model),
                )
            })?;
            Weights::from_safetensors(&m.weights()?)
                .map_err(|e| format!("net: model {}: {e}", m.name))?
        }
    };
    if a.batch == 0 {
        return Err("net: --batch must be at least 1".into());
    }
    let s = def.input.1;
    let in_bytes = u64::from(a.batch) * u64::from(s.c * s.h * s.w) * dtype.size_bytes() as u64;
    // The input is read (at most the bytes the batch needs) and checked before the device
    // opens, so that a wrong file fails fast, GPU or not.
    let input = match &a.input {
        Some(path) if path.extension().is_some_and(|e| e == "npy") => {
            let values = kiln::harness::npy::read_nchw(path, a.batch, (s.c, s.h, s.w))
                .map_err(|e| format!("net: --input {}: {e}", path.display()))?;
            Some(kiln::elements::encode(dtype, &values).0)
        }
        Some(path) => {
            let b = kiln::format::file::read_capped(path, in_bytes)
                .map_err(|e| format!("net: --input {}: {e}", path.display()))?;
            if b.len() as u64 != in_bytes {
                return Err(format!(
                    "net: --input {} holds {} B; {} x {}x{}x{} (NHWC) {} needs {in_bytes} B",
                    path.display(),
                    b.len(),
                    a.batch,
                    s.h,
                    s.w,
                    s.c,
                    dtype.name()
                )
                .into());
            }
            Some(b)
        }
        None => None,
    };
    let ctx = a.device.context()?;
    let t0 = std::time::Instant::now();
    let options = kiln::net::NetOptions {
        programmatic_launch: !a.no_pdl,
        lanes: a.lanes,
        fold_excitation: !a.unfolded_excitation,
        excitation_heads: a.excitation_heads,
        fused_expansions: a.fused_expansions,
    };
    let net = Network::with_options(&ctx, &def, &weights, a.batch, dtype, options)?;
    let build_s = t0.elapsed().as_secs_f64();
    let image = match input {
        Some(b) => b,
        None => {
            let values =
                kiln::harness::verify::random_values((in_bytes as usize) / dtype.size_bytes(), 7);
            kiln::elements::encode(dtype, &values).0
        }
    };
    net.input().upload(&image)?;
    net.run()?;
    let outputs = net.download_outputs()?;
    let graph = net.graph().ok_or("net: no captured graph")?;
    let timing = time_device(ctx.device(), 3, a.repeats, |_| {
        Ok(graph.launch(&kiln::backend::Stream::default())?)
    })?;
    if let Some(path) = &a.output {
        std::fs::write(path, outputs.concat())
            .map_err(|e| format!("net: --output {}: {e}", path.display()))?;
    }
    let values: Vec<Vec<f64>> = outputs
        .iter()
        .map(|o| kiln::elements::decode(dtype, o))
        .collect();
    let check = if a.check {
        let image_values = kiln::elements::decode(dtype, &image);
        Some(check_against_cpu(
            &def,
            &weights,
            a.batch,
            dtype,
            &image_values,
            &values,
        )?)
    } else {
        None
    };
    kiln::outln!(
        "{} {} N={} on {}: {} launches in one graph on {} stream(s), {} weights tensors, activations {}, built in {:.1} s",
        def.name,
        dtype.name(),
        a.batch,
        ctx.describe(),
        net.launches(),
        net.schedule().lanes,
        weights.len(),
        human(net.activation_bytes()),
        build_s
    );
    if a.verbose {
        for (key, solver, params) in net.solvers() {
            kiln::outln!("  {key}: {solver} [{params}]");
        }
    }
    if a.profile {
        let mut steps = Vec::with_capacity(net.launches());
        for i in 0..net.launches() {
            // A graph of ten launches of the step, replayed: GPU time only, as in the network's
            // own graph (timing single launches would add the host's launch path to each).
            let (t, _) = time_gpu_only(ctx.device(), 10, 20, |s, _| {
                net.enqueue_step(i, s).map_err(profile_error)
            })?;
            steps.push((t.median_ms, i));
        }
        let context = if a.profile_in_place {
            Some(profile_in_place(ctx.device(), &net)?)
        } else {
            None
        };
        let total: f64 = steps.iter().map(|s| s.0).sum();
        let names: Vec<String> = (0..net.launches())
            .map(|i| net.step_name(i).unwrap_or_default())
            .collect();
        let convs: f64 = steps
            .iter()
            .filter(|s| names[s.1].contains('['))
            .map(|s| s.0)
            .sum();
        // --verbose lists every launch in network order; else the slowest dozen.
        let (order, shown) = if a.verbose {
            ("in order", steps.len())
        } else {
            steps.sort_by(|a, b| b.0.total_cmp(&a.0));
            ("slowest", 12)
        };
        kiln::outln!(
            "profile: launches alone sum to {total:.4} ms: convolutions {convs:.4} ms, other operators {:.4} ms; {order}:",
            total - convs
        );
        if let Some(context) = &context {
            let cold: f64 = context.iter().map(|c| c.0).sum();
            let in_place: f64 = context.iter().map(|c| c.1).sum();
            kiln::outln!(
                "  after an L2 eviction they sum to {cold:.4} ms; in their place (one stream) to {in_place:.4} ms"
            );
            kiln::outln!("  alone ms  L2-evicted  in place  launch");
        }
        for &(ms, i) in steps.iter().take(shown) {
            match &context {
                Some(c) => kiln::outln!(
                    "  {ms:.4}    {:.4}      {:.4}    {}",
                    c[i].0,
                    c[i].1,
                    names[i]
                ),
                None => kiln::outln!("  {ms:.4} ms  {}", names[i]),
            }
        }
    }
    kiln::outln!(
        "forward pass: {:.4} ms GPU-only (graph replay, median of {}; min {:.4} ms)",
        timing.median_ms,
        timing.repeats,
        timing.min_ms
    );
    let shapes: Vec<String> = (0..net.outputs())
        .filter_map(|i| net.output(i))
        .map(|(_, s)| format!("{}x{}x{}x{}", a.batch, s.h, s.w, s.c))
        .collect();
    kiln::outln!("outputs (NHWC): {}", shapes.join(", "));
    if let Some((_, o)) = net.output(0).filter(|(_, o)| o.h == 1 && o.w == 1) {
        let top1: Vec<usize> = values[0].chunks(o.c as usize).map(argmax).collect();
        kiln::outln!(
            "top-1 of the first samples: {:?}",
            &top1[..top1.len().min(8)]
        );
    }
    if let Some(c) = check {
        let per: Vec<String> = c.per_output.iter().map(|d| format!("{d:.3e}")).collect();
        let top1 = c
            .top1_agree
            .map(|n| format!(", top-1 agrees on {n} of {}", a.batch))
            .unwrap_or_default();
        kiln::outln!(
            "CPU reference (f64): largest difference {:.3e} (per output: {}; tolerance {:.0e}){top1}",
            c.max_abs,
            per.join(", "),
            c.tolerance,
        );
        if c.max_abs > c.tolerance {
            return Err(format!(
                "net: {} differs from its CPU reference by {:.3e}, over {:.0e}",
                def.name, c.max_abs, c.tolerance
            )
            .into());
        }
    }
    Ok(())
}

/// A network step's error as the timing harness's.
fn profile_error(e: kiln::net::NetError) -> kiln::RunError {
    kiln::RunError::Backend(kiln::backend::BackendError::kiln("profile", e.to_string()))
}

/// Each step's time (ms) after an L2 eviction, and in its place: (evicted, in place), in step
/// order. Evicted: [`L2Eviction::time_gpu_only`] of the step launched in order. In place:
/// graphs of the first i steps in order on one stream; step i's time is what it adds to the
/// graph of the steps before it, so the times sum to the whole one-stream graph.
fn profile_in_place(
    device: &kiln::backend::Device,
    net: &Network,
) -> Result<Vec<(f64, f64)>, kiln::RunError> {
    let eviction = L2Eviction::new(device)?;
    let mut times = Vec::with_capacity(net.launches());
    let mut before = 0.0;
    for i in 0..net.launches() {
        let evicted = eviction.time_gpu_only(device, 20, |s, _| {
            net.enqueue_step_in_order(i, s).map_err(profile_error)
        })?;
        let (prefix, _) = time_gpu_only(device, 1, 30, |s, _| {
            net.enqueue_steps(0..i + 1, s).map_err(profile_error)
        })?;
        times.push((evicted.median_ms, prefix.median_ms - before));
        before = prefix.median_ms;
    }
    Ok(times)
}

/// Where a row's largest value is (the first, on ties; NaN never wins).
fn argmax(row: &[f64]) -> usize {
    row.iter()
        .enumerate()
        .fold(
            (0, f64::NEG_INFINITY),
            |b, (i, &v)| if v > b.1 { (i, v) } else { b },
        )
        .0
}

/// How a network's GPU outputs compare with their CPU reference.
pub struct NetCheck {
    /// The largest absolute difference over every output.
    pub max_abs: f64,
    /// The largest absolute difference of each output.
    pub per_output: Vec<f64>,
    /// What the data type allows.
    pub tolerance: f64,
    /// For a classifier (a first output of `classes x 1 x 1`): samples whose largest output
    /// is at the same index.
    pub top1_agree: Option<usize>,
}

/// `gpu` (the network's outputs for `image`, in order) against the CPU reference.
pub fn check_against_cpu(
    def: &kiln::net::NetworkDef,
    weights: &Weights,
    batch: u32,
    dtype: DataType,
    image: &[f64],
    gpu: &[Vec<f64>],
) -> Result<NetCheck, Box<dyn std::error::Error>> {
    let cpu = kiln::harness::net::forward(def, weights, batch, dtype, image)?;
    if cpu.len() != gpu.len() || cpu.iter().zip(gpu).any(|(c, g)| c.len() != g.len()) {
        return Err(format!(
            "net: {}: the GPU returned {} outputs of {:?} values, the CPU reference {} of {:?}",
            def.name,
            gpu.len(),
            gpu.iter().map(Vec::len).collect::<Vec<_>>(),
            cpu.len(),
            cpu.iter().map(Vec::len).collect::<Vec<_>>()
        )
        .into());
    }
    let per_output: Vec<f64> = cpu
        .iter()
        .zip(gpu)
        .map(|(cpu, gpu)| {
            cpu.iter()
                .zip(gpu)
                .map(|(c, g)| {
                    if g.is_nan() {
                        f64::INFINITY
                    } else {
                        (c - g).abs()
                    }
                })
                .fold(0.0, f64::max)
        })
        .collect();
    let shapes = def.shapes()?;
    let first = shapes[def.outputs[0].as_str()];
    let top1_agree = (first.h == 1 && first.w == 1).then(|| {
        let per = (first.c as usize).max(1);
        cpu[0]
            .chunks(per)
            .zip(gpu[0].chunks(per))
            .filter(|(c, g)| argmax(c) == argmax(g))
            .count()
    });
    // Rounding to the data type between layers is the same on both sides; what remains is
    // FP32 against f64 accumulation, and the ulp a tie can move.
    let tolerance = match dtype {
        DataType::Fp16 => 2e-2,
        DataType::Bf16 => 5e-2,
        _ => 1e-3,
    };
    Ok(NetCheck {
        max_abs: per_output.iter().copied().fold(0.0, f64::max),
        per_output,
        tolerance,
        top1_agree,
    })
}
