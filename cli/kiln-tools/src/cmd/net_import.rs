//! `kiln-tools net import`: an ONNX model as a kiln network definition (text form) and its
//! weights (safetensors: filters in FP32, FP16 or BF16, per-channel vectors in FP32), checked
//! as kiln will read them before anything is written.

use std::path::PathBuf;

use clap::Args;

use super::write_atomic;
use crate::CliResult;

/// Largest ONNX file read (weights inside; models with external data are refused).
const MODEL_CAP: u64 = 2 << 30;

#[derive(Args)]
pub struct ImportArgs {
    /// The ONNX model (weights inside the file).
    model: PathBuf,
    /// Where <name>.txt (the definition) and <name>.safetensors (the weights) are written.
    #[arg(long)]
    out: PathBuf,
    /// The network's name (default: the file's stem).
    #[arg(long)]
    name: Option<String>,
    /// Precision the filters are stored in: FP32 (as exported), FP16 or BF16 (half the bytes,
    /// in the file and embedded; kiln converts to the run's type when it loads them).
    #[arg(long = "weights-type", default_value = "FP32")]
    weights_type: String,
}

pub fn run(a: &ImportArgs) -> CliResult {
    let shown = kiln::format::text::escaped(&a.model.to_string_lossy());
    let name = match &a.name {
        Some(n) => n.clone(),
        None => a
            .model
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .ok_or_else(|| format!("{shown}: no file name to name the network by; give --name"))?,
    };
    let bytes = kiln::format::file::read_capped(&a.model, MODEL_CAP)
        .map_err(|e| format!("{shown}: {e}"))?;
    let imported = crate::onnx::import(&bytes, &name).map_err(|e| format!("{shown}: {e}"))?;
    let text = imported
        .def
        .to_text()
        .map_err(|e| format!("{shown}: {e}"))?;
    let storage = kiln::net::data_type(&a.weights_type).ok_or_else(|| {
        format!(
            "--weights-type {:?}: expected FP32, FP16 or BF16",
            a.weights_type
        )
    })?;
    let weights = crate::onnx::safetensors_bytes(&imported.weights, storage)
        .map_err(|e| format!("{shown}: {e}"))?;
    // Read back as kiln will, before anything is written: the definition, and every
    // convolution's and linear layer's weights at their shapes.
    let def = kiln::net::NetworkDef::from_text(&text).map_err(|e| format!("{shown}: {e}"))?;
    let loaded =
        kiln::net::Weights::from_safetensors(&weights).map_err(|e| format!("{shown}: {e}"))?;
    let shapes = def.shapes().map_err(|e| format!("{shown}: {e}"))?;
    for node in &def.nodes {
        if let Some(c) = kiln::net::NetworkDef::as_conv(node) {
            let cin = shapes[node.inputs[0].as_str()].c;
            loaded
                .of_conv_node(node, &c, cin)
                .map_err(|e| format!("{shown}: {e}"))?;
        }
    }
    std::fs::create_dir_all(&a.out)?;
    let (def_path, weights_path) = (
        a.out.join(format!("{name}.txt")),
        a.out.join(format!("{name}.safetensors")),
    );
    // Pins, as sha256sum writes them (`sha256sum -c` checks them; KILN_MODELS embeds only
    // files that match).
    let pins_path = a.out.join(format!("{name}.sha256"));
    let sha = |b: &[u8]| kiln_embed::kdb::hex(&<sha2::Sha256 as sha2::Digest>::digest(b));
    let pins = format!(
        "{}  {name}.txt\n{}  {name}.safetensors\n",
        sha(text.as_bytes()),
        sha(&weights)
    );
    write_atomic(&weights_path, &weights)?;
    write_atomic(&def_path, &text)?;
    write_atomic(&pins_path, pins)?;
    kiln::outln!(
        "{name}: {} nodes, {} weights ({} values) -> {}, {}",
        def.nodes.len(),
        imported.weights.len(),
        imported
            .weights
            .iter()
            .map(|(_, t)| t.values.len())
            .sum::<usize>(),
        def_path.display(),
        weights_path.display()
    );
    Ok(())
}

#[derive(Args)]
pub struct ReferenceArgs {
    /// The network definition (text form: `kiln net show`, `kiln-tools net import`).
    def: PathBuf,
    /// Its weights (safetensors).
    #[arg(long)]
    weights: PathBuf,
    /// The input: raw little-endian FP32, NHWC, `batch` samples.
    #[arg(long)]
    input: PathBuf,
    /// Samples in the input.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    batch: u32,
    /// Where the outputs go: raw little-endian FP32, NHWC, the network's outputs one after
    /// another.
    #[arg(long)]
    out: PathBuf,
}

/// `kiln-tools net reference`: a network's CPU reference (f64 arithmetic, FP32 tensors) on a
/// given input, no GPU: what kiln's GPU results are checked against, and what the ONNX import
/// is checked with against onnxruntime.
pub fn reference(a: &ReferenceArgs) -> CliResult {
    let read = |p: &std::path::Path, cap: u64| {
        kiln::format::file::read_capped(p, cap)
            .map_err(|e| format!("{}: {e}", kiln::format::text::escaped(&p.to_string_lossy())))
    };
    let def = kiln::harness::net::read_definition(&a.def)?;
    let weights = kiln::net::Weights::from_safetensors(&read(&a.weights, 4 << 30)?)
        .map_err(|e| format!("{}: {e}", a.weights.display()))?;
    let s = def.input.1;
    let want = u64::from(a.batch) * u64::from(s.c) * u64::from(s.h) * u64::from(s.w) * 4;
    let bytes = read(&a.input, want)?;
    if bytes.len() as u64 != want {
        return Err(format!(
            "{}: {} bytes; {} x {s} FP32 is {want}",
            a.input.display(),
            bytes.len(),
            a.batch
        )
        .into());
    }
    let image: Vec<f64> = bytes
        .chunks_exact(4)
        .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        .collect();
    let outputs =
        kiln::harness::net::forward(&def, &weights, a.batch, kiln::DataType::Fp32, &image)
            .map_err(|e| format!("{}: {e}", a.def.display()))?;
    let out: Vec<u8> = outputs
        .iter()
        .flatten()
        .flat_map(|&v| (v as f32).to_le_bytes())
        .collect();
    write_atomic(&a.out, &out)?;
    kiln::outln!(
        "{}: {} output(s), {} values -> {}",
        def.name,
        outputs.len(),
        out.len() / 4,
        a.out.display()
    );
    Ok(())
}
