//! An appliance in one file: the network embedded at build time (`KILN_MODELS`, `kiln-tools net
//! import`) runs on a raw FP32 NHWC image on the GPU, nothing else read; prints its top-1 class.
use kiln::context::Context;
use kiln::net::{Network, NetworkDef, Weights};
use kiln::DataType::Fp16;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(model) = kiln::embedded::models().first() else {
        println!("no network embedded: build with KILN_MODELS=<name>.txt (kiln-tools net import)");
        return Ok(());
    };
    let def = NetworkDef::from_text(model.definition)?;
    let weights = Weights::from_safetensors(&model.weights()?)?;
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: appliance IMAGE.f32")?;
    let bytes = std::fs::read(&path)?;
    let image: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let s = def.input.1;
    if image.len() != (s.c * s.h * s.w) as usize {
        return Err(format!(
            "{path}: {} values; {} takes {s} (CxHxW, stored NHWC)",
            image.len(),
            model.name
        )
        .into());
    }
    let ctx = match Context::open(None) {
        Ok(ctx) => ctx,
        Err(e) => {
            println!("{}: ready, but no device: {e}", model.name);
            return Ok(());
        }
    };
    let net = Network::new(&ctx, &def, &weights, 1, Fp16)?;
    net.input()
        .upload(&kiln::elements::encode(Fp16, &image).0)?;
    net.run()?;
    let out = kiln::elements::decode(Fp16, &net.download_outputs()?[0]);
    let best = out
        .iter()
        .enumerate()
        .fold((0, f64::MIN), |b, (i, &v)| if v > b.1 { (i, v) } else { b });
    println!("{}: class {} ({:.3})", model.name, best.0, best.1);
    Ok(())
}
