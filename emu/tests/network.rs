//! A whole network on an emulated GPU: kiln's network runner, which launches back to back where
//! the driver captures no graphs, runs a small network with a squeeze-and-excitation block on
//! an emulated gfx90a in FP16, BF16 and FP32, once with the block's pool, squeeze and
//! excitation as separate launches and once as one squeeze-and-excitation head
//! (`NetOptions::excitation_heads`). Both must agree to a few units in the last place, and the
//! head must save the launches it stands for.

use kiln::net::{NetOptions, Network, NetworkDef, Weights};
use kiln::DataType;
use kiln_emu::conformance;

/// A stem, a depthwise layer, its squeeze-and-excitation block (24 channels squeezed to 6;
/// ragged on purpose: not a multiple of 8 on the squeeze side) and a projection that takes the
/// gate.
const NET: &str = "kiln-network 1
name se-block
input image 3x10x10
node stem conv from=image to=stem act=silu weight=stem.weight k=24 kernel=3x3 stride=1x1 pad=1x1 groups=1 bn=stem.bn eps=0.00001
node dw conv from=stem to=dw act=silu weight=dw.weight k=24 kernel=3x3 stride=1x1 pad=1x1 groups=24 bn=dw.bn eps=0.00001
node se.pool gap from=dw to=se.pool act=identity
node se.fc1 conv from=se.pool to=se.fc1 act=silu weight=se.fc1.weight k=6 kernel=1x1 stride=1x1 pad=0x0 groups=1 bias=se.fc1.bias
node se.fc2 conv from=se.fc1 to=se.fc2 act=sigmoid weight=se.fc2.weight k=24 kernel=1x1 stride=1x1 pad=0x0 groups=1 bias=se.fc2.bias
node se.scale channel-mul from=dw,se.fc2 to=se.scale act=identity
node project conv from=se.scale to=project act=identity weight=project.weight k=16 kernel=1x1 stride=1x1 pad=0x0 groups=1 bn=project.bn eps=0.00001
output project
";

#[test]
fn a_squeeze_and_excitation_head_matches_its_layers_on_an_emulated_gpu() {
    let def = NetworkDef::from_text(NET).unwrap();
    assert_eq!(def.excitation_heads(), vec![[2, 3, 4]]);
    let weights = Weights::random(&def, 11).unwrap();
    let target = kiln::targets()
        .iter()
        .find(|t| t.basename == "gfx90a68")
        .unwrap();
    let (_gpu, ctx) = conformance::context(target, |g| g, Default::default()).unwrap();
    let batch = 2;
    let image: Vec<f32> = kiln::harness::verify::random_values(batch as usize * 3 * 10 * 10, 5);
    for (dtype, tolerance) in [
        (DataType::Fp16, 2e-3),
        (DataType::Bf16, 1e-2),
        (DataType::Fp32, 1e-6),
    ] {
        let (input, _) = kiln::elements::encode(dtype, &image);
        let run = |excitation_heads: bool| {
            let options = NetOptions {
                excitation_heads,
                ..NetOptions::default()
            };
            let net = Network::with_options(&ctx, &def, &weights, batch, dtype, options).unwrap();
            assert!(net.graph().is_none(), "AMD drivers capture no graphs");
            net.input().upload(&input).unwrap();
            net.run().unwrap();
            let out = net.download_outputs().unwrap().remove(0);
            let values: Vec<f32> = kiln::elements::decode(dtype, &out)
                .into_iter()
                .map(|v| v as f32)
                .collect();
            (values, net.launches())
        };
        let (layers, layer_launches) = run(false);
        let (head, head_launches) = run(true);
        let what = dtype.name();
        assert_eq!(layers.len(), batch as usize * 16 * 10 * 10, "{what}");
        assert!(layers.iter().all(|v| v.is_finite()), "{what}");
        // The pool's finish (or the pool) stays where no convolution sums it; the two 1x1
        // layers become the head's one launch.
        assert_eq!(head_launches + 1, layer_launches, "{what}: launches");
        let scale = layers.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let worst = layers
            .iter()
            .zip(&head)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(scale > 0.1, "{what}: outputs of size {scale}");
        // The head rounds where the layers do; only the order of FP32 sums differs (here the
        // 16-bit outputs came out bit for bit the same): a few units in the last place.
        assert!(
            worst <= tolerance * scale,
            "{what}: worst difference {worst} at scale {scale}"
        );
    }
}
