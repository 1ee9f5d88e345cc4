//! A whole network through kiln's Rust API: ResNet-50 (or `--model`; FP16, channels-last) with
//! seeded random weights, built for one batch size on the device (every convolution a fused
//! problem with its batch norm, residual and ReLU; the pools and softmax as kiln's operators;
//! one captured graph), run on a fixed image pattern; a classifier's top-1 classes are printed,
//! and every output's hash (`y<i> fnv1a64 0x...`, as examples/c/network.c prints for the same
//! network through the C library). Without a GPU it resolves every convolution of the network
//! for a named target, prints the count and the no-device error, and exits 0.
//!
//! ```text
//! cargo run --release --example network -- [--device SPEC] [--target NAME] [--model NAME] [-n BATCH]
//! ```
//!
//! Weights from a PyTorch `state_dict` exported as safetensors load with
//! `Weights::from_safetensors` (feature `safetensors`).

use kiln::context::Context;
use kiln::net::{models, Network, Weights};
use kiln::DataType;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let batch: u32 = flag("-n").map_or(Ok(1), |v| v.parse())?;
    let model = flag("--model").unwrap_or("resnet50".into());
    let def = models::by_name(&model)
        .ok_or_else(|| format!("no network {model:?} (known: {})", models::NAMES.join(", ")))?;
    let weights = Weights::random(&def, 11)?;
    let ctx = match Context::open(flag("--device").as_deref()) {
        Ok(ctx) => ctx,
        Err(e) => {
            let target = kiln::named_target(&flag("--target").unwrap_or("sm_90_132".into()))?;
            let problems = def.conv_problems(batch, DataType::Fp16)?;
            let mut measured = 0;
            for (_, p) in &problems {
                let plan = kiln::resolve::resolve(target, p)?;
                measured += usize::from(plan.best().provenance.name() != "cost model");
            }
            println!(
                "{}: {} fused convolutions resolved on {} ({measured} ranked from measurements)",
                def.name,
                problems.len(),
                target.basename
            );
            println!("no device: {e}");
            return Ok(());
        }
    };
    let net = Network::new(&ctx, &def, &weights, batch, DataType::Fp16)?;
    let s = net.input_shape();
    let pixels = (batch * s.c * s.h * s.w) as usize;
    // Values in [-1, 1) as FP16 bits (a fixed pattern: any image will do).
    let image: Vec<f32> = (0..pixels)
        .map(|i| ((i * 7919) % 2000) as f32 / 1000.0 - 1.0)
        .collect();
    let (bytes, _) = kiln::elements::encode(DataType::Fp16, &image);
    net.input().upload(&bytes)?;
    net.run()?;
    for (i, out) in net.download_outputs()?.iter().enumerate() {
        let Some((_, shape)) = net.output(i) else {
            continue;
        };
        println!(
            "y{i}: {batch} x {} x {} x {} (NHWC)",
            shape.h, shape.w, shape.c
        );
        if shape.h == 1 && shape.w == 1 {
            // A classifier's probabilities: top-1 per sample.
            let probs = kiln::elements::decode(DataType::Fp16, out);
            for (s, row) in probs.chunks(shape.c as usize).take(8).enumerate() {
                let (best, p) =
                    row.iter()
                        .enumerate()
                        .fold(
                            (0, f64::NEG_INFINITY),
                            |b, (j, &v)| if v > b.1 { (j, v) } else { b },
                        );
                println!("sample {s}: class {best} (p = {p:.3})");
            }
        }
        println!("y{i} fnv1a64 0x{:016x}", fnv1a64(out));
    }
    println!(
        "{} on {}: {} launches in one graph, {:.1} MiB of activations",
        def.name,
        ctx.describe(),
        net.launches(),
        net.activation_bytes() as f64 / (1 << 20) as f64
    );
    Ok(())
}

/// FNV-1a, 64-bit (the C example's hash).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
