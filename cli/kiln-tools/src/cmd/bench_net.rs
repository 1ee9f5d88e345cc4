//! `kiln-tools bench --net <name>`: a whole network through kiln against the anchors an
//! appliance builder would otherwise use, GPU-only, at each batch size:
//!
//! - kiln: the network's captured graph replayed (seeded random weights: speed does not
//!   depend on the values);
//! - PyTorch eager and torch.compile (Inductor, freezing), the same network, type, layout and
//!   head, and the network's convolutions alone (cuDNN through PyTorch, each on the input it
//!   sees in the network, nothing around them), timed by `ci/net_check.py --anchors`
//!   (embedded here) with the `--torch` Python; in FP32 with TF32 off, kiln's accuracy.
//!
//! The report is Markdown, printed and written to `--out`.

use std::collections::HashMap;
use std::fmt::Write as _;

use kiln::context::Context;
use kiln::harness::timing::time_device;
use kiln::net::{models, Network, Weights};
use kiln::DataType;

use super::bench::{utc_date, BenchArgs};
use crate::CliResult;

/// The PyTorch side's scripts, written to a temporary folder and run there.
const TORCH_SCRIPTS: [(&str, &str); 3] = [
    ("net_check.py", include_str!("../../../../ci/net_check.py")),
    (
        "yolo_module.py",
        include_str!("../../../../ci/yolo_module.py"),
    ),
    (
        "torch_conv_bench.py",
        include_str!("../../../../ci/torch_conv_bench.py"),
    ),
];

/// PyTorch's eager, torch.compile and convolutions-only ms at one batch size.
struct Anchor {
    eager_ms: f64,
    compile_ms: f64,
    convs_ms: f64,
}

/// The number after `"field": ` in one JSON line.
fn json_number(line: &str, field: &str) -> Option<f64> {
    let at = line.find(&format!("\"{field}\": "))? + field.len() + 4;
    let rest = &line[at..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

/// PyTorch's times for `model` at each of `batches`, from `python`; an error says why not (no
/// Python, no torch, a failed run).
fn torch_anchors(
    python: &str,
    model: &str,
    dtype: DataType,
    batches: &[u32],
) -> Result<HashMap<u32, Anchor>, String> {
    let dir = std::env::temp_dir().join(format!("kiln-bench-net-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (name, text) in TORCH_SCRIPTS {
        std::fs::write(dir.join(name), text).map_err(|e| format!("{name}: {e}"))?;
    }
    let out = std::process::Command::new(python)
        .arg(dir.join("net_check.py"))
        .args(["--model", model, "--dtype", &dtype.name().to_lowercase()])
        .arg("--anchors")
        .args(batches.iter().map(u32::to_string))
        .current_dir(&dir)
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    let out = out.map_err(|e| format!("{python}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().last().unwrap_or("");
        return Err(format!(
            "{python} net_check.py failed ({}): {last}",
            out.status
        ));
    }
    let mut anchors = HashMap::new();
    for line in stdout.lines().filter(|l| l.starts_with("{\"anchor\"")) {
        if let (Some(n), Some(eager_ms), Some(compile_ms), Some(convs_ms)) = (
            json_number(line, "n"),
            json_number(line, "eager_ms"),
            json_number(line, "compile_ms"),
            json_number(line, "convs_ms"),
        ) {
            anchors.insert(
                n as u32,
                Anchor {
                    eager_ms,
                    compile_ms,
                    convs_ms,
                },
            );
        }
    }
    Ok(anchors)
}

/// kiln's whole-network ms at `batch`: the captured graph, median of `repeats` replays.
fn kiln_ms(
    ctx: &Context,
    def: &kiln::net::NetworkDef,
    weights: &Weights,
    batch: u32,
    dtype: DataType,
    repeats: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    let net = Network::new(ctx, def, weights, batch, dtype)?;
    let graph = net.graph().ok_or("no captured graph")?;
    let t = time_device(ctx.device(), 3, repeats, |_| {
        Ok(graph.launch(&kiln::backend::Stream::default())?)
    })?;
    Ok(t.median_ms)
}

/// Runs `kiln-tools bench --net`.
pub fn run(a: &BenchArgs, model: &str) -> CliResult {
    let def = models::by_name(model).ok_or_else(|| {
        format!(
            "bench: --net {model:?}: no such network (known: {})",
            models::NAMES.join(", ")
        )
    })?;
    let dtype = [DataType::Fp16, DataType::Bf16, DataType::Fp32]
        .into_iter()
        .find(|d| d.name().eq_ignore_ascii_case(&a.net_type))
        .ok_or_else(|| {
            format!(
                "bench: --type {:?}: expected FP16, BF16 or FP32",
                a.net_type
            )
        })?;
    let weights = Weights::random(&def, 11)?;
    let ctx = a.device.context()?;
    let info = ctx.device().info().clone();
    let mut r = String::new();
    writeln!(
        r,
        "# kiln-tools bench --net {model}: {} ({}), {}\n",
        info.name,
        info.arch,
        utc_date()
    )?;
    let anchors = match a.torch.as_str() {
        "none" => Err("--torch none".to_string()),
        python => torch_anchors(python, model, dtype, &a.batch),
    };
    if let Err(why) = &anchors {
        eprintln!("bench: PyTorch not timed: {why}");
    }
    writeln!(
        r,
        "{} {}, NHWC, GPU-only: kiln's captured graph (median of 50 replays); PyTorch eager, torch.compile (Inductor, freezing) and the network's convolutions alone (cuDNN through PyTorch, each on the input it sees in the network), as CUDA graphs{}. Times in ms.\n",
        def.name,
        dtype.name(),
        match &anchors {
            Ok(_) => String::new(),
            Err(why) => format!(" (not timed: {why})"),
        }
    )?;
    writeln!(
        r,
        "| network | N | kiln | PyTorch: convolutions only | PyTorch eager | torch.compile | kiln / eager | kiln / compile |"
    )?;
    writeln!(r, "|---|---:|---:|---:|---:|---:|---:|---:|")?;
    let cell = |v: Option<f64>, digits: usize| v.map_or("n/a".into(), |v| format!("{v:.digits$}"));
    let mut chart_groups = Vec::new();
    for &n in &a.batch {
        eprintln!("bench: {model} N={n}");
        let kiln = kiln_ms(&ctx, &def, &weights, n, dtype, 50)?;
        let anchor = anchors.as_ref().ok().and_then(|m| m.get(&n));
        chart_groups.push(crate::svg::Group {
            label: format!("N={n}"),
            values: vec![
                Some(kiln),
                anchor.map(|t| t.compile_ms),
                anchor.map(|t| t.eager_ms),
                anchor.map(|t| t.convs_ms),
            ],
        });
        writeln!(
            r,
            "| {model} | {n} | {kiln:.3} | {} | {} | {} | {} | {} |",
            cell(anchor.map(|t| t.convs_ms), 3),
            cell(anchor.map(|t| t.eager_ms), 3),
            cell(anchor.map(|t| t.compile_ms), 3),
            cell(anchor.map(|t| kiln / t.eager_ms), 2),
            cell(anchor.map(|t| kiln / t.compile_ms), 2),
        )?;
    }
    kiln::out!("{r}");
    if let Some(path) = &a.out {
        std::fs::write(path, &r).map_err(|e| format!("bench: --out {}: {e}", path.display()))?;
        // The same figures as a chart beside the report.
        let svg = path.with_extension("svg");
        let chart = crate::svg::grouped_bars(
            &format!("{model} {}, GPU-only, ms", dtype.name()),
            &[
                "kiln",
                "torch.compile",
                "PyTorch eager",
                "PyTorch convolutions only",
            ],
            &chart_groups,
            "ms",
        );
        std::fs::write(&svg, chart).map_err(|e| format!("bench: {}: {e}", svg.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_read_from_json_lines() {
        let line = r#"{"anchor": {"n": 32, "eager_ms": 2.25, "compile_ms": 1.5e0, "convs_ms": 0.9, "torch": "2.11"}}"#;
        assert_eq!(json_number(line, "n"), Some(32.0));
        assert_eq!(json_number(line, "eager_ms"), Some(2.25));
        assert_eq!(json_number(line, "compile_ms"), Some(1.5));
        assert_eq!(json_number(line, "convs_ms"), Some(0.9));
        assert_eq!(json_number(line, "missing"), None);
    }
}
