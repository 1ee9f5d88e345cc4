//! The AMD matrix-core solvers (`kernels/conv_mma_amd.cpp`): an implicit GEMM over output
//! pixels x output channels for 2-D NHWC FP16/BF16 convolutions of one group, 64 x 64 per
//! block of 256 threads, FP32 accumulation, the fused epilogue. `ConvMfmaImplicitGemmFwd` runs
//! v_mfma_f32_32x32x8 on gfx90a/gfx942 (wave64), `ConvWmmaImplicitGemmFwd`
//! v_wmma_f32_16x16x16 on gfx1100/gfx1151 (wave32). Perf config: `64,64,16` (block pixels,
//! channels, reduction step), the one compiled.
//!
//! Verified in kiln-emu against the CPU reference; never timed on hardware (no AMD GPU here),
//! so they are ranked by a cost model: the arch's published matrix peak (FLOPs per CU per
//! cycle from AMD's matrix instruction calculator, CUs, clock) times the fraction of it that
//! MIOpen's own matrix-core solvers reached on the same size class of FP16 forward problems in
//! the gfx942130 find-db (the measured figures embedded with that target).

use kiln_format::{ConvProblem, DataType};

use super::params::three;
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// The one compiled config: block pixels, block channels, reduction step.
const CONFIG: [u32; 3] = [64, 64, 16];
/// Threads per block the kernel is written for.
const BLOCK: u32 = 256;

/// An AMD matrix-core implicit-GEMM solver: its id and the kernel it launches.
pub struct MmaAmd {
    id: &'static str,
    kernel: &'static str,
}

/// `ConvMfmaImplicitGemmFwd`: CDNA 2/3's v_mfma_f32_32x32x8.
pub static MFMA: MmaAmd = MmaAmd {
    id: "ConvMfmaImplicitGemmFwd",
    kernel: "conv_mfma_fwd",
};
/// `ConvWmmaImplicitGemmFwd`: RDNA 3's v_wmma_f32_16x16x16.
pub static WMMA: MmaAmd = MmaAmd {
    id: "ConvWmmaImplicitGemmFwd",
    kernel: "conv_wmma_fwd",
};

/// Dense FP16 matrix peak of an AMD arch, FLOPs per second: FLOPs per unit per cycle (AMD's
/// matrix instruction calculator: MFMA 32x32x8 f16 1024 per CU on CDNA 2, 2048 on CDNA 3;
/// WMMA 16x16x16 f16 1024 per WGP on RDNA 3) x units (kiln's targets count RDNA 3 in WGPs, as
/// MIOpen does) x the product's peak engine clock (MI210 1.7 GHz, MI300X 2.1 GHz, RX 7900 XTX
/// 2.5 GHz, Radeon 8060S 2.9 GHz).
pub fn matrix_peak_flops(arch: &str, units: u32) -> Option<f64> {
    let (per_cycle, ghz) = match arch {
        "gfx90a" => (1024.0, 1.7),
        "gfx942" => (2048.0, 2.1),
        "gfx1100" => (1024.0, 2.5),
        "gfx1151" => (1024.0, 2.9),
        _ => return None,
    };
    Some(per_cycle * units as f64 * ghz * 1e9)
}

/// The fraction of the matrix peak MIOpen's best solver reached on MI300X (gfx942130's
/// find-db: 1,348 FP16 forward problems, median per size class of 2 x MACs): below 0.1 GFLOP
/// 0.0023, to 1 GFLOP 0.0088, to 10 GFLOP 0.0378, above 0.1436 (`tests/measured_amd.rs`
/// recomputes these from the committed find-db).
pub const MIOPEN_PEAK_FRACTION: [(f64, f64); 4] = [
    (1e8, 0.0023),
    (1e9, 0.0088),
    (1e10, 0.0378),
    (f64::INFINITY, 0.1436),
];

/// The least time of any of those problems: launch and a minimal grid, ms.
pub const MIOPEN_FLOOR_MS: f64 = 0.0123;

/// Estimated ms of `flops` on a matrix peak of `peak` FLOPs/s at MIOpen's measured fraction.
pub fn matrix_estimate_ms(flops: f64, peak: f64) -> f64 {
    // The last class reaches to infinity: only a NaN count falls through, to it.
    let (_, fraction) = MIOPEN_PEAK_FRACTION
        .iter()
        .find(|(upto, _)| flops <= *upto)
        .unwrap_or(&MIOPEN_PEAK_FRACTION[MIOPEN_PEAK_FRACTION.len() - 1]);
    (flops / (peak * fraction) * 1e3).max(MIOPEN_FLOOR_MS)
}

impl TunableSolver for MmaAmd {
    type Config = [u32; 3];
    const CONFIG_FORM: &'static str = "perf config is not 64,64,16";

    fn id(&self) -> &'static str {
        self.id
    }

    fn parse(&self, params: &str) -> Option<[u32; 3]> {
        three(params).filter(|c| *c == CONFIG)
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        let types = p.data_types();
        if !matches!(types[0], DataType::Fp16 | DataType::Bf16)
            || types[1] != types[0]
            || types[2] != types[0]
        {
            return Err("FP16 or BF16 tensors of one type only");
        }
        if p.spatial_dims() != 2 || !p.layouts().iter().all(|l| l.channels_last()) {
            return Err("needs 2-D NHWC tensors");
        }
        if p.groups() != 1 {
            return Err("grouped convolution");
        }
        // The kernel indexes a reduction row (C x FH x FW, plus one step) and an image's
        // output pixels in 32-bit ints.
        let [_, fh, fw] = p.filter();
        let [_, oh, ow] = p.output();
        let reduction = p.c() as u64 * fh as u64 * fw as u64;
        if reduction + 16 > i32::MAX as u64 || oh as u64 * ow as u64 > i32::MAX as u64 {
            return Err("reduction or output pixels per image past 32-bit indexing");
        }
        Ok(())
    }

    fn valid(&self, _: &ConvProblem, _: &TargetCaps, _: &[u32; 3]) -> Result<(), NotApplicable> {
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, _: &[u32; 3]) -> LaunchPlan {
        let [_, oh, ow] = p.output();
        let pixels = p.n() as u64 * oh as u64 * ow as u64;
        let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
        LaunchPlan::single(
            self.kernel,
            [
                clamp(pixels.div_ceil(CONFIG[0] as u64)),
                p.k().div_ceil(CONFIG[1]),
                1,
            ],
            [BLOCK, 1, 1],
        )
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, _: &[u32; 3]) -> f64 {
        let flops = 2.0 * kiln_format::measured::macs(p);
        // Off the archs it is built for it never runs (the manifest's gate); a large figure
        // keeps such a plan last.
        match matrix_peak_flops(caps.arch, caps.compute_units) {
            Some(peak) => matrix_estimate_ms(flops, peak),
            None => f64::MAX,
        }
    }

    fn tile(&self, _: &[u32; 3]) -> u64 {
        (CONFIG[0] * CONFIG[1]) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_are_the_published_ones() {
        // MI210 181 TFLOPS, MI300X 1307, RX 7900 XTX 123, Radeon 8060S 59 (dense FP16).
        let tflops = |arch, units| matrix_peak_flops(arch, units).unwrap() / 1e12;
        assert!((tflops("gfx90a", 104) - 181.0).abs() < 1.0);
        assert!((tflops("gfx942", 304) - 1307.4).abs() < 1.0);
        assert!((tflops("gfx1100", 48) - 122.9).abs() < 1.0);
        assert!((tflops("gfx1151", 20) - 59.4).abs() < 1.0);
        assert_eq!(matrix_peak_flops("gfx1030", 36), None);
        // A 10 GFLOP problem on MI300X at MIOpen's 3.78%: 0.202 ms; a tiny one at the floor.
        let ms = matrix_estimate_ms(1e10, 1307.4e12);
        assert!((ms - 0.2024).abs() < 1e-3, "{ms}");
        assert_eq!(matrix_estimate_ms(1e3, 1307.4e12), MIOPEN_FLOOR_MS);
    }
}
