//! kiln's own Hopper solvers (`kernels/nv/wgmma_conv.cu`): NHWC FP16/BF16 convolution as the
//! GEMM `y[N*P*Q, K] = A[N*P*Q, R*S*C] * w[K, R*S*C]^T`, with TMA loads into a shared-memory
//! ring and wgmma tensor-core products (sm_90a code objects: they load on compute capability
//! 9.0 only).
//!
//! * `ConvWgmmaGemm1x1Fwd`: 1x1 filter, stride 1, no padding: A is x, read as a matrix.
//! * `ConvWgmmaImplicitGemmFwd`: any 2-D filter, stride, padding and dilation TMA's im2col mode
//!   can express: A is gathered from x by the TMA unit, one filter tap and 64 channels per load.
//!
//! The kernels take one argument, `KilnTmaConvParams`: two TMA tensor maps (x and w) that kiln
//! encodes on the host through the driver at prepare time, y's address, the sizes and the
//! geometry. A launch patches the maps' addresses for its buffers (`cuTensorMapReplaceAddress`,
//! a host-only call). Perf config: `bm,bn,stages,splits` (block tile rows, a multiple of 64: one
//! consumer warpgroup per 64; block tile output channels, 64, 128 or 256; pipeline stages;
//! split-K slices, a run-time value). Problems with more tiles than SMs launch the persistent
//! entry, the others one block per tile.

use kiln_format::{ConvProblem, DataType, Layout};

use super::cutlass::max_shared_per_block;
use super::params::{tile_fill, values};
use super::{LaunchPlan, NotApplicable, Solver, TargetCaps, TmaArguments, TmaOperand, TmaView};
use crate::backend::{TensorMapShape, TmaBoxes};

/// The 1x1 solver's id.
pub const ID: &str = "ConvWgmmaGemm1x1Fwd";

/// The im2col solver's id.
pub const IMPLICIT_GEMM_ID: &str = "ConvWgmmaImplicitGemmFwd";

/// TMA im2col corners are signed 8-bit per spatial dimension of a 4-D tensor.
const CORNER_LIMIT: i64 = 128;

/// Elements of the reduction one pipeline stage holds: 64 FP16/BF16 values, one 128-byte
/// swizzle row (`KILN_BK`).
const BLOCK_K: u32 = 64;

/// A perf config, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Config {
    rows: u32,
    cols: u32,
    stages: u32,
    /// Split-K slices (a run-time value: the same code object for every count).
    splits: u32,
}

impl Config {
    fn parse(params: &str) -> Option<Config> {
        let &[rows, cols, stages, splits] = values(params).as_slice() else {
            return None;
        };
        (rows % 64 == 0
            && (64..=256).contains(&rows)
            && matches!(cols, 64 | 128 | 256)
            && stages >= 2
            && (1..=64).contains(&splits))
        .then_some(Config {
            rows,
            cols,
            stages,
            splits,
        })
    }

    /// One producer warpgroup and one consumer warpgroup per 64 rows.
    fn threads(&self) -> u32 {
        (self.rows / 64 + 1) * 128
    }

    /// `KILN_SHARED_BYTES`: the stages, the persistent kernel's output staging tile (rows x
    /// (cols / 2 + 4) 32-bit words), two 8-byte barriers per stage, and 1 KiB to align the
    /// stages to the 1024-byte swizzle atom.
    fn shared_bytes(&self, persistent: bool) -> u32 {
        self.stages * (self.rows + self.cols) * BLOCK_K * 2
            + if persistent {
                self.rows * (self.cols / 2 + 4) * 4
            } else {
                0
            }
            + self.stages * 16
            + 1024
    }

    /// Work units: output tiles times split-K slices.
    fn units(&self, p: &ConvProblem) -> u64 {
        gemm_rows(p).div_ceil(self.rows as u64)
            * (p.k() as u64).div_ceil(self.cols as u64)
            * self.splits as u64
    }

    /// Whether `p` runs the persistent entry: more work units than SMs.
    fn persistent(&self, p: &ConvProblem) -> bool {
        self.units(p) > PERSISTENT_BLOCKS
    }
}

/// Rows of the GEMM: output pixels of every image.
fn gemm_rows(p: &ConvProblem) -> u64 {
    let [_, h, w] = p.output();
    p.n() as u64 * h as u64 * w as u64
}

/// Steps of the main loop: 64 channels of one filter tap each.
fn reduction_steps(p: &ConvProblem) -> u64 {
    let [_, r, s] = p.filter();
    r as u64 * s as u64 * (p.c() as u64).div_ceil(BLOCK_K as u64)
}

/// Blocks of the persistent kernel at most: one per SM of the target (sm_90_132: 132). A device
/// with fewer SMs runs the extra blocks as a second, short wave. Problems with more work units
/// than this run the persistent kernel (manifest function 2); the others one block per unit
/// (function 0), which measured about 10% faster where every unit gets its own SM.
const PERSISTENT_BLOCKS: u64 = 132;

/// Threads per block of the split-K reduction, and most blocks it launches (it strides).
const REDUCE_THREADS: u32 = 256;
const REDUCE_MAX_BLOCKS: u64 = 132 * 8;

/// The im2col corners of dimension `i` (0 = h, 1 = w): `(-pad, pad - (R - 1) * dilation)`.
fn corners(p: &ConvProblem, i: usize) -> (i64, i64) {
    let pad = p.pad()[1 + i] as i64;
    let reach = (p.filter()[1 + i] as i64 - 1) * p.dilation()[1 + i] as i64;
    (-pad, pad - reach)
}

/// One of the wgmma solvers.
pub struct Wgmma {
    id: &'static str,
    /// Whether A is gathered with TMA's im2col mode (else read as a matrix: 1x1 only).
    im2col: bool,
}

/// `ConvWgmmaGemm1x1Fwd`.
pub static GEMM_1X1: Wgmma = Wgmma {
    id: ID,
    im2col: false,
};

/// `ConvWgmmaImplicitGemmFwd`.
pub static IMPLICIT_GEMM: Wgmma = Wgmma {
    id: IMPLICIT_GEMM_ID,
    im2col: true,
};

impl Solver for Wgmma {
    fn id(&self) -> &'static str {
        self.id
    }

    fn applicable(
        &self,
        p: &ConvProblem,
        target: &TargetCaps,
        params: &str,
    ) -> Result<(), NotApplicable> {
        let cfg = Config::parse(params).ok_or("perf config is not bm,bn,stages,splits")?;
        if target.arch != "sm_90" {
            return Err("sm_90a code: runs on compute capability 9.0 only");
        }
        if !matches!(p.data_types()[0], DataType::Fp16 | DataType::Bf16) {
            return Err("FP16 or BF16 only");
        }
        if p.layouts()[0] != Layout::Nhwc {
            return Err("needs 2-D NHWC tensors");
        }
        if p.groups() != 1 {
            return Err("grouped convolution");
        }
        if !self.im2col
            && (p.filter() != [1, 1, 1] || p.stride() != [1, 1, 1] || p.pad() != [0, 0, 0])
        {
            return Err("needs a 1x1 filter, stride 1 and no padding");
        }
        if self.im2col {
            // What TMA's im2col mode can express: traversal strides 1-8, corners within a
            // signed byte, filter offsets within 16 bits.
            if p.stride()[1..].iter().any(|&u| u > 8) {
                return Err("stride past 8 (TMA traversal strides)");
            }
            for i in 0..2 {
                let (lower, upper) = corners(p, i);
                if !(-CORNER_LIMIT..CORNER_LIMIT).contains(&lower)
                    || !(-CORNER_LIMIT..CORNER_LIMIT).contains(&upper)
                {
                    return Err("padding or dilated filter extent past TMA's im2col corners");
                }
            }
            let [_, r, s] = p.filter();
            let reach = |f: u32, d: u32| (f as u64 - 1) * d as u64;
            if reach(r, p.dilation()[1]) > u16::MAX as u64 || reach(s, p.dilation()[2]) > 65_535 {
                return Err("dilated filter extent past TMA's 16-bit im2col offsets");
            }
        }
        // TMA rows must start 16-byte aligned; the epilogue stores 8 channels at a time.
        if !p.c().is_multiple_of(8) || !p.k().is_multiple_of(8) {
            return Err("C or K is not a multiple of 8");
        }
        if gemm_rows(p) > i32::MAX as u64 {
            return Err("output pixels past 32-bit indexing");
        }
        if cfg.splits as u64 > reduction_steps(p) {
            return Err("more split-K slices than reduction steps");
        }
        if cfg.shared_bytes(cfg.persistent(p)) > max_shared_per_block(target.arch) {
            return Err("tile needs more shared memory than this arch gives a block");
        }
        Ok(())
    }

    fn launch_plan(&self, p: &ConvProblem, params: &str) -> LaunchPlan {
        let Some(cfg) = Config::parse(params) else {
            return LaunchPlan::single([0, 0, 0], [0, 0, 0]);
        };
        let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
        let persistent = cfg.persistent(p);
        let mut plan = LaunchPlan::single(
            [clamp(cfg.units(p).min(PERSISTENT_BLOCKS)), 1, 1],
            [cfg.threads(), 1, 1],
        );
        plan.kernels[0].shared_bytes = cfg.shared_bytes(persistent);
        if persistent {
            plan.kernels[0].kernel = 2;
        }
        if cfg.splits > 1 {
            // The slices' FP32 partials, then one pass adding them into y.
            let outputs = gemm_rows(p) * p.k() as u64;
            plan.workspace_bytes = cfg.splits as u64 * outputs * 4;
            let blocks = (outputs / 8)
                .div_ceil(REDUCE_THREADS as u64)
                .clamp(1, REDUCE_MAX_BLOCKS);
            let _ = plan.kernels.push(super::KernelLaunch {
                kernel: 1,
                grid: [blocks as u32, 1, 1],
                block: [REDUCE_THREADS, 1, 1],
                shared_bytes: 0,
            });
        }
        plan
    }

    fn estimated_ms(&self, p: &ConvProblem, params: &str) -> f64 {
        let Some(cfg) = Config::parse(params) else {
            return f64::INFINITY;
        };
        let [_, r, s] = p.filter();
        let (m, n, k) = (
            gemm_rows(p) as f64,
            p.k() as f64,
            p.c() as f64 * r as f64 * s as f64,
        );
        let fill = tile_fill(m, cfg.rows as f64) * tile_fill(n, cfg.cols as f64);
        let splits = cfg.splits as f64;
        let blocks = (m / cfg.rows as f64).ceil() * (n / cfg.cols as f64).ceil() * splits;
        let occupancy = (blocks / 132.0).min(1.0);
        // Sustained wgmma rate on these small GEMMs (measured 300-600 TFLOP/s on ResNet-50's
        // 1x1 layers), HBM3 bandwidth, and a launch.
        let compute_ms = 2.0 * m * n * k / (450_000.0 * fill * occupancy * 1e6);
        let bytes = (p.element_counts().iter().sum::<u64>() * 2) as f64;
        // Split-K writes and reads back FP32 partials, in a second launch.
        let split_ms = if cfg.splits > 1 {
            2.0 * splits * m * n * 4.0 / 2.8e9 + 0.002
        } else {
            0.0
        };
        compute_ms.max(bytes / 2.8e9) + split_ms + 0.0025
    }

    fn default_params(
        &self,
        p: &ConvProblem,
        candidates: &mut dyn Iterator<Item = &'static str>,
    ) -> Option<&'static str> {
        candidates.min_by(|a, b| self.estimated_ms(p, a).total_cmp(&self.estimated_ms(p, b)))
    }

    fn tma_arguments(&self, p: &ConvProblem, params: &str) -> Option<TmaArguments> {
        let cfg = Config::parse(params)?;
        let (m, c, k) = (gemm_rows(p), p.c() as u64, p.k() as u64);
        let [_, h, w] = p.input();
        let [_, r, s] = p.filter();
        let [_, oh, ow] = p.output();
        let [_, stride_h, stride_w] = p.stride();
        let taps = r as u64 * s as u64;
        let (x, w_map) = if self.im2col {
            let (lower_h, upper_h) = corners(p, 0);
            let (lower_w, upper_w) = corners(p, 1);
            (
                TensorMapShape {
                    rank: 4,
                    dims: [c, w as u64, h as u64, p.n() as u64, 1],
                    boxes: TmaBoxes::Im2col {
                        lower: [lower_w as i32, lower_h as i32, 0],
                        upper: [upper_w as i32, upper_h as i32, 0],
                        channels: BLOCK_K,
                        pixels: cfg.rows,
                        traversal: [1, stride_w, stride_h, 1, 1],
                    },
                },
                // [K, R*S, C]: a load past C reads zeros, not the next tap's weights.
                TensorMapShape {
                    rank: 3,
                    dims: [c, taps, k, 1, 1],
                    boxes: TmaBoxes::Tiled([BLOCK_K, 1, cfg.cols, 1, 1]),
                },
            )
        } else {
            (
                TensorMapShape {
                    rank: 2,
                    dims: [c, m, 1, 1, 1],
                    boxes: TmaBoxes::Tiled([BLOCK_K, cfg.rows, 1, 1, 1]),
                },
                TensorMapShape {
                    rank: 2,
                    dims: [c, k, 1, 1, 1],
                    boxes: TmaBoxes::Tiled([BLOCK_K, cfg.cols, 1, 1, 1]),
                },
            )
        };
        let [_, pad_h, pad_w] = p.pad();
        let [_, dil_h, dil_w] = p.dilation();
        Some(TmaArguments {
            views: [
                TmaView {
                    operand: TmaOperand::X,
                    shape: x,
                },
                TmaView {
                    operand: TmaOperand::W,
                    shape: w_map,
                },
            ],
            sizes: [m as i32, k as i32, c as i32],
            splits: cfg.splits as i32,
            geometry: [oh, ow, r, s, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w]
                .map(|v| v as i32),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_format::ConvSpec;

    fn nhwc(n: u32, c: u32, k: u32, hw: u32, f: u32) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            n,
            c,
            k,
            input: [1, hw, hw],
            filter: [1, f, f],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn plans_follow_the_kernel_and_refuse_what_it_cannot_run() {
        let h100 = super::super::H100_CAPS;
        let p = nhwc(32, 256, 64, 56, 1);
        let s = &GEMM_1X1;
        assert!(s.applicable(&p, &h100, "128,64,6,1").is_ok());
        let plan = s.launch_plan(&p, "128,64,6,1");
        // 32 * 56 * 56 = 100,352 rows in 128-row tiles; 64 channels in one 64-wide tile: 784
        // tiles for 132 blocks of the persistent kernel.
        assert_eq!(plan.kernels[0].grid, [132, 1, 1]);
        assert_eq!(plan.kernels[0].kernel, 2);
        assert_eq!(plan.kernels[0].block, [384, 1, 1]);
        assert_eq!(
            plan.kernels[0].shared_bytes,
            6 * 192 * 128 + 128 * 36 * 4 + 96 + 1024
        );
        let args = s.tma_arguments(&p, "128,64,6,1").unwrap();
        assert_eq!(args.sizes, [100_352, 64, 256]);
        assert_eq!(args.views[0].shape.dims, [256, 100_352, 1, 1, 1]);
        assert_eq!(
            args.views[1].shape.boxes,
            TmaBoxes::Tiled([64, 64, 1, 1, 1])
        );

        let sm80 = TargetCaps {
            arch: "sm_80",
            code_arch: "sm_80",
            ..h100
        };
        assert!(s.applicable(&p, &sm80, "128,64,6,1").is_err());
        assert!(s
            .applicable(&nhwc(1, 64, 64, 56, 3), &h100, "64,64,8,1")
            .is_err());
        assert!(s
            .applicable(&nhwc(1, 60, 64, 56, 1), &h100, "64,64,8,1")
            .is_err());
        assert!(s.applicable(&p, &h100, "96,64,4,1").is_err());
        assert!(s.applicable(&p, &h100, "128,192,4,1").is_err());
        // 256 x 256 tiles in 4 stages: 257 KiB of shared memory.
        assert_eq!(
            s.applicable(&p, &h100, "256,256,4,1"),
            Err("tile needs more shared memory than this arch gives a block")
        );
    }

    #[test]
    fn im2col_maps_follow_the_convolution() {
        let h100 = super::super::H100_CAPS;
        // ResNet-50's stride-2 3x3: 128 channels, 56x56 -> 28x28, pad 1.
        let p = ConvProblem::new(ConvSpec {
            n: 2,
            c: 128,
            k: 128,
            input: [1, 56, 56],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            stride: [1, 2, 2],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap();
        let s = &IMPLICIT_GEMM;
        assert!(s.applicable(&p, &h100, "128,128,4,1").is_ok());
        assert!(GEMM_1X1.applicable(&p, &h100, "128,128,4,1").is_err());
        let plan = s.launch_plan(&p, "128,128,4,1");
        // 2 * 28 * 28 = 1568 output pixels: 13 tiles of 128, one block each (the one-tile
        // kernel, whose staging reuses the stages).
        assert_eq!(plan.kernels[0].grid, [13, 1, 1]);
        assert_eq!(plan.kernels[0].kernel, 0);
        assert_eq!(plan.kernels[0].shared_bytes, 4 * 256 * 128 + 64 + 1024);
        let args = s.tma_arguments(&p, "128,128,4,1").unwrap();
        assert_eq!(args.sizes, [1568, 128, 128]);
        assert_eq!(args.geometry, [28, 28, 3, 3, 2, 2, 1, 1, 1, 1]);
        assert_eq!(args.views[0].shape.dims, [128, 56, 56, 2, 1]);
        assert_eq!(
            args.views[0].shape.boxes,
            TmaBoxes::Im2col {
                lower: [-1, -1, 0],
                upper: [-1, -1, 0],
                channels: 64,
                pixels: 128,
                traversal: [1, 2, 2, 1, 1],
            }
        );
        assert_eq!(args.views[1].shape.dims, [128, 9, 128, 1, 1]);
        // Padding past TMA's signed-byte corners.
        let wide = ConvProblem::new(ConvSpec {
            pad: [0, 200, 1],
            ..p.spec()
        })
        .unwrap();
        assert_eq!(
            s.applicable(&wide, &h100, "128,128,4,1"),
            Err("padding or dilated filter extent past TMA's im2col corners")
        );
    }

    #[test]
    fn split_k_adds_a_reduction_and_its_workspace() {
        let h100 = super::super::H100_CAPS;
        // ResNet-50's 512 -> 512 3x3 at 7x7, batch 1: 49 rows, 72 reduction steps.
        let p = ConvProblem::new(ConvSpec {
            c: 512,
            k: 512,
            input: [1, 7, 7],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap();
        let s = &IMPLICIT_GEMM;
        let plan = s.launch_plan(&p, "64,64,8,8");
        // 1 x 8 tiles, 8 slices each: 64 work units.
        assert_eq!(plan.kernels[0].grid, [64, 1, 1]);
        assert_eq!(plan.kernels[1].kernel, 1);
        assert_eq!(plan.workspace_bytes, 8 * 49 * 512 * 4);
        assert_eq!(s.tma_arguments(&p, "64,64,8,8").unwrap().splits, 8);
        assert_eq!(s.launch_plan(&p, "64,64,8,1").kernels.len(), 1);
        assert!(s.applicable(&p, &h100, "64,64,8,64").is_ok());
        // A 1x1 with 64 channels has one reduction step: nothing to split.
        let q = nhwc(1, 64, 64, 7, 1);
        assert_eq!(
            GEMM_1X1.applicable(&q, &h100, "64,64,8,2"),
            Err("more split-K slices than reduction steps")
        );
    }

    #[test]
    fn shared_memory_is_checked() {
        let h100 = super::super::H100_CAPS;
        let p = nhwc(32, 256, 64, 56, 1);
        let s = &GEMM_1X1;
        assert_eq!(
            s.applicable(&p, &h100, "256,256,4,1"),
            Err("tile needs more shared memory than this arch gives a block")
        );
    }
}
