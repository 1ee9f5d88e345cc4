//! `kiln-tools net import`: an ONNX model as a kiln network definition (text form) and its
//! weights (safetensors, FP32), checked as kiln will read them before anything is written.

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
    let weights = crate::onnx::safetensors_bytes(&imported.weights)?;
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
                .conv(
                    &node.name,
                    &c,
                    cin,
                    matches!(node.op, kiln::net::Op::Linear { .. }),
                )
                .map_err(|e| format!("{shown}: {e}"))?;
        }
    }
    std::fs::create_dir_all(&a.out)?;
    let (def_path, weights_path) = (
        a.out.join(format!("{name}.txt")),
        a.out.join(format!("{name}.safetensors")),
    );
    write_atomic(&weights_path, &weights)?;
    write_atomic(&def_path, &text)?;
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
