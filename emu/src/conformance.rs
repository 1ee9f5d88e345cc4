//! Conformance: kiln's selftest on an emulated GPU of an AMD target. A kiln context on an
//! [`EmulatedGpu`] of the target's architecture and CU count runs every solver and perf config
//! of the target's kdb (and, when asked, the standalone operators) on small problems, each
//! checked against the f64 CPU reference with random inputs and again with IEEE special values.
//! kiln's own resolver, invokers and argument packing drive the launches, as on a HIP device.
//! `tests/conformance.rs` runs it on every AMD target; `kiln-tools emulate` on one.

use std::sync::Arc;

use kiln::backend::Device;
use kiln::context::Context;
use kiln::format::{Activation, ConvProblem, ConvSpec, DataType, EmbeddedTarget, Fusion, Layout};
use kiln::harness::selftest::{self, d2, Failure, Report};

use crate::driver::{EmulatedGpu, Totals, DEFAULT_MEMORY_BYTES};

/// The conformance problems: 3x3, 1x1, strided, padded, dilated, grouped and depthwise shapes
/// whose sizes leave partial tiles at every edge, each in FP32, FP16 and BF16, NCHW and NHWC,
/// plain and with a fused epilogue (a folded batch norm, a residual on every other shape, each
/// shape its own activation).
pub fn problems() -> Vec<ConvProblem> {
    let shapes = [
        // 3x3, padded, odd sizes: partial tiles on every edge.
        d2(2, 8, 12, [9, 7], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        // 1x1 over an odd pixel count, channels not a multiple of any tile.
        d2(2, 12, 20, [5, 7], [1, 1], [0, 0], [1, 1], [1, 1], 1),
        // Strided 3x3 and an unpadded 5x3 with unequal stride and dilation.
        d2(1, 4, 8, [11, 10], [3, 3], [1, 1], [2, 2], [1, 1], 1),
        d2(1, 8, 8, [12, 11], [5, 3], [2, 0], [2, 1], [1, 2], 1),
        // More output channels than one 64-wide tile (a second, partial column of blocks).
        d2(1, 24, 72, [6, 5], [3, 3], [1, 1], [1, 1], [1, 1], 1),
        // Grouped (2 groups of 8) and depthwise (16 channels, 3x3 stride 2).
        d2(1, 16, 16, [7, 9], [3, 3], [1, 1], [1, 1], [1, 1], 2),
        d2(2, 16, 16, [9, 8], [3, 3], [1, 1], [2, 2], [1, 1], 16),
    ];
    let mut out = Vec::new();
    for (i, base) in shapes.into_iter().enumerate() {
        for dtype in [DataType::Fp32, DataType::Fp16, DataType::Bf16] {
            for layout in [Layout::Nchw, Layout::Nhwc] {
                let spec = ConvSpec {
                    layouts: [layout; 3],
                    data_types: [dtype; 3],
                    ..base
                };
                let Ok(p) = ConvProblem::new(spec) else {
                    continue;
                };
                let fusion = Fusion {
                    scale: true,
                    bias: true,
                    residual: i % 2 == 0,
                    activation: Activation::ALL[(3 * i + 1) % Activation::ALL.len()],
                    y_ld: 0,
                    z_ld: 0,
                    pool: false,
                    x_scale: false,
                };
                out.push(p);
                out.extend(p.with_fusion(fusion).ok());
            }
        }
    }
    out
}

/// A kiln context on a fresh emulated GPU of `target`'s architecture and CU count, the GPU
/// first passed through `setup` (an instruction limit, a planted fault).
pub fn context(
    target: &EmbeddedTarget,
    setup: impl FnOnce(EmulatedGpu) -> EmulatedGpu,
    options: kiln::context::ContextOptions,
) -> Result<(Arc<EmulatedGpu>, Context), String> {
    let gpu = EmulatedGpu::new(target.arch, target.compute_units, DEFAULT_MEMORY_BYTES)
        .map_err(|e| e.to_string())?;
    let gpu = Arc::new(setup(gpu));
    let ctx = Context::with_options(Device::new(gpu.clone()), options)
        .map_err(|e| format!("{}: the emulated GPU's context: {e}", target.basename))?;
    if ctx.target().basename != target.basename {
        return Err(format!(
            "an emulated {} with {} CUs selects {}, not {}",
            target.arch,
            target.compute_units,
            ctx.target().basename,
            target.basename
        ));
    }
    Ok((gpu, ctx))
}

/// Runs the selftest of `target` in emulation: `problems` on every solver `chosen` accepts,
/// then the standalone operators when `operators`; each failure goes to `on_failure`.
/// Returns the selftest's report and what the emulated GPU ran.
pub fn run(
    target: &EmbeddedTarget,
    problems: &[ConvProblem],
    chosen: impl Fn(&str) -> bool,
    operators: bool,
    on_failure: impl FnMut(&Failure),
) -> Result<(Report, Totals), String> {
    let (gpu, ctx) = context(target, |g| g, Default::default())?;
    let report = selftest::run(&ctx, problems, chosen, operators, on_failure);
    Ok((report, gpu.totals()))
}
