//! Cold start inside one process: from a ready context to the first convolution's result, by
//! phase (resolve, kdb decode + sha256, ELF checks, module load, first launch). `kiln coldstart`
//! prints it; `kiln-tools bench` sets it beside an NVRTC compile of the same kernel.

use std::time::Instant;

use kiln_format::{ConvProblem, ConvSpec, DataType, Layout, ProblemError};

use super::verify::{random_values, upload};
use crate::backend::{DeviceBuffer, Stream};
use crate::context::{Context, Invoker, PrepareTimes};
use crate::error::RunError;
use crate::resolve::Ranked;

/// Where a cold start spends its time, in seconds.
#[derive(Clone, Copy, Debug)]
pub struct ColdStart {
    /// The solution the first problem resolved to.
    pub ranked: Ranked,
    /// find-db / perf-db lookup and ranking.
    pub resolve_s: f64,
    /// kdb decode, sha256, ELF checks, module load.
    pub prepare: PrepareTimes,
    /// First launch until its result is on the device (synchronize).
    pub first_launch_s: f64,
}

impl ColdStart {
    /// Every phase together: ready context to result.
    pub fn total_s(&self) -> f64 {
        self.resolve_s
            + self.prepare.decompress_s
            + self.prepare.verify_s
            + self.prepare.module_load_s
            + self.prepare.invoker_s
            + self.first_launch_s
    }
}

/// The problem the cold start measures: ResNet-50's 3x3 64-channel layer at batch 1 in FP16
/// NHWC, the appliance's case (on sm_80+ it resolves to a tensor-core solver).
pub fn cold_problem() -> Result<ConvProblem, ProblemError> {
    ConvProblem::new(ConvSpec {
        n: 1,
        c: 64,
        k: 64,
        input: [1, 56, 56],
        filter: [1, 3, 3],
        pad: [0, 1, 1],
        layouts: [Layout::Nhwc; 3],
        data_types: [DataType::Fp16; 3],
        ..ConvSpec::default()
    })
}

/// Seeded random x and w of `p` and room for y, on the device when this returns.
pub fn inputs(
    ctx: &Context,
    p: &ConvProblem,
) -> Result<(DeviceBuffer, DeviceBuffer, DeviceBuffer), RunError> {
    let dtype = p.data_types()[0];
    let [xn, wn, _] = p.element_counts();
    let (x, _) = upload(ctx.device(), dtype, &random_values(xn as usize, 7))?;
    let (w, _) = upload(ctx.device(), dtype, &random_values(wn as usize, 8))?;
    let y = ctx.device().alloc(p.byte_counts()[2])?;
    ctx.device().synchronize()?;
    Ok((x, w, y))
}

/// Seconds from launching `inv` until its result is on the device.
pub fn launch_to_result_s(
    ctx: &Context,
    inv: &Invoker,
    (x, w, y): &(DeviceBuffer, DeviceBuffer, DeviceBuffer),
) -> Result<f64, RunError> {
    let ws = super::verify::workspace_for(ctx.device(), inv)?;
    let t = Instant::now();
    ctx.run(inv, x, w, y, ws.as_ref(), &Stream::default())?;
    ctx.device().synchronize()?;
    Ok(t.elapsed().as_secs_f64())
}

/// Measures the cold path of `p` in a context whose embedded tables nothing has used yet.
pub fn cold_start(ctx: &Context, p: &ConvProblem) -> Result<ColdStart, RunError> {
    // Inputs go up first, so that the phases below time only kiln's own work.
    let io = inputs(ctx, p)?;
    let t0 = Instant::now();
    let ranked = *ctx.find_solutions(p)?.best();
    let t1 = Instant::now();
    let (inv, prepare) = ctx.prepare_timed(p, &ranked.variant)?;
    Ok(ColdStart {
        ranked,
        resolve_s: (t1 - t0).as_secs_f64(),
        prepare,
        first_launch_s: launch_to_result_s(ctx, &inv, &io)?,
    })
}
