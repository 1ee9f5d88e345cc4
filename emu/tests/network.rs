//! A whole network on an emulated GPU: kiln's network runner, which launches back to back where
//! the driver captures no graphs, runs a small network with a squeeze-and-excitation block on
//! an emulated gfx90a in FP16, BF16 and FP32, once with the block's pool, squeeze and
//! excitation as separate launches and once as one squeeze-and-excitation head
//! (`NetOptions::excitation_heads`). Both must agree to a few units in the last place, and the
//! head must save the launches it stands for. Likewise two inverted residuals with and without
//! their expansions fused into the depthwise layers (`NetOptions::fused_expansions`).

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
    // The pool's finish (or the pool) stays where no convolution sums it; the two 1x1 layers
    // become the head's one launch. The head rounds where the layers do; only the order of
    // FP32 sums differs (here the 16-bit outputs came out bit for bit the same): a few units
    // in the last place.
    compare(
        &def,
        11,
        |o| o.excitation_heads = true,
        16 * 10 * 10,
        1,
        [2e-3, 1e-2, 1e-6],
    );
}

/// Runs `def` with random weights (`seed`) on an emulated gfx90a in FP16, BF16 and FP32, once
/// with the runner's defaults and once as `fused` changes them, and checks the fused run: its
/// outputs (`outputs` values, finite, not all small) within the type's `tolerance` of the
/// scale of the plain run's, and `saved` launches fewer.
fn compare(
    def: &NetworkDef,
    seed: u64,
    fused: fn(&mut NetOptions),
    outputs: usize,
    saved: usize,
    tolerance: [f32; 3],
) {
    let weights = Weights::random(def, seed).unwrap();
    let target = kiln::targets()
        .iter()
        .find(|t| t.basename == "gfx90a68")
        .unwrap();
    let (_gpu, ctx) = conformance::context(target, |g| g, Default::default()).unwrap();
    let batch = 2;
    let (c, h, w) = (def.input.1.c, def.input.1.h, def.input.1.w);
    let image: Vec<f32> =
        kiln::harness::verify::random_values((batch * c * h * w) as usize, seed ^ 0x11);
    let types = [DataType::Fp16, DataType::Bf16, DataType::Fp32];
    for (dtype, tolerance) in types.into_iter().zip(tolerance) {
        let (input, _) = kiln::elements::encode(dtype, &image);
        let run = |fold: bool| {
            let mut options = NetOptions::default();
            if fold {
                fused(&mut options);
            }
            let net = Network::with_options(&ctx, def, &weights, batch, dtype, options).unwrap();
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
        let (one, one_launches) = run(true);
        let what = dtype.name();
        assert_eq!(layers.len(), batch as usize * outputs, "{what}");
        assert!(layers.iter().all(|v| v.is_finite()), "{what}");
        assert_eq!(one_launches + saved, layer_launches, "{what}: launches");
        let scale = layers.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let worst = layers
            .iter()
            .zip(&one)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(scale > 0.1, "{what}: outputs of size {scale}");
        assert!(
            worst <= tolerance * scale,
            "{what}: worst difference {worst} at scale {scale}"
        );
    }
}

/// Two inverted residuals' starts: a 16 -> 48 expansion into a 3x3 stride-2 depthwise layer
/// (ReLU6, MobileNetV2's form) and a 24 -> 72 expansion into a 5x5 stride-1 one (SiLU,
/// EfficientNet's), each followed by its projection.
const INVERTED: &str = "kiln-network 1
name inverted-residuals
input image 3x11x13
node stem conv from=image to=stem act=clippedrelu weight=stem.weight k=16 kernel=3x3 stride=1x1 pad=1x1 groups=1 bn=stem.bn eps=0.00001
node a.expand conv from=stem to=a.expand act=clippedrelu weight=a.expand.weight k=48 kernel=1x1 stride=1x1 pad=0x0 groups=1 bn=a.expand.bn eps=0.00001
node a.dw conv from=a.expand to=a.dw act=clippedrelu weight=a.dw.weight k=48 kernel=3x3 stride=2x2 pad=1x1 groups=48 bn=a.dw.bn eps=0.00001
node a.project conv from=a.dw to=a.project act=identity weight=a.project.weight k=24 kernel=1x1 stride=1x1 pad=0x0 groups=1 bn=a.project.bn eps=0.00001
node b.expand conv from=a.project to=b.expand act=silu weight=b.expand.weight k=72 kernel=1x1 stride=1x1 pad=0x0 groups=1 bn=b.expand.bn eps=0.00001
node b.dw conv from=b.expand to=b.dw act=silu weight=b.dw.weight k=72 kernel=5x5 stride=1x1 pad=2x2 groups=72 bn=b.dw.bn eps=0.00001
node b.project conv from=b.dw to=b.project act=identity weight=b.project.weight k=24 kernel=1x1 stride=1x1 pad=0x0 groups=1 bn=b.project.bn eps=0.00001 residual=a.project
output b.project
";

#[test]
fn fused_expansions_match_their_layers_on_an_emulated_gpu() {
    let def = NetworkDef::from_text(INVERTED).unwrap();
    // Each expansion's launch goes into its depthwise layer's. Both round the expanded tensor
    // to the data type; only the order of FP32 sums differs (so a rounding of the expansion
    // may differ by one unit in 16 bits).
    compare(
        &def,
        12,
        |o| o.fused_expansions = true,
        24 * 6 * 7,
        2,
        [4e-3, 2e-2, 1e-6],
    );
}
