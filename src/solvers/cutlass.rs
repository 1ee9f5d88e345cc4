//! The tensor-core solvers built from CUTLASS 2.x implicit-GEMM convolution
//! (`kernels/nv/cutlass_conv.cu`, NVIDIA sm_80+, NHWC, 2-D, one group):
//! `ConvCutlassIgemmFwd` (FP16/BF16, FP32 accumulation), `ConvCutlass3xTf32Fwd` (FP32 data,
//! FP32 accuracy through 3xTF32), `ConvCutlassTf32Fwd` (FP32 data as TF32: opt-in only) and
//! `ConvCutlassFirstLayerFwd`, `ConvCutlassFirstLayer3xTf32Fwd` and `ConvCutlassFirstLayerTf32Fwd`
//! (1-4 input channels, padded to 4 into the workspace, then CUTLASS's fixed-channels iterators:
//! a network's first layer), and `ConvCutlassIgemmScalarOutFwd` (FP16/BF16 with any number of
//! output channels: one-element stores).
//!
//! The GEMM is M = N*P*Q output pixels, N = K output channels, K = C*R*S. Perf config:
//! `tb_m,tb_n,tb_k,warp_m,warp_n,stages,align,split_k`; the first seven select the code object,
//! `split_k` (serial split-K slices) is a run-time value. These kernels take CUTLASS's own
//! `Params` block, built on the device at prepare time by the code object's
//! `kiln_cutlass_params` entry (see `crate::invoker`).

use kiln_format::{ConvProblem, DataType, Layout};

use super::params::{tile_fill, values};
use super::{KernelLaunch, LaunchPlan, NotApplicable, Solver, TargetCaps};

/// A perf config, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CutlassConfig {
    /// Block tile M (output pixels), N (output channels), K (reduction step).
    pub tile: [u32; 3],
    /// Warp tile M, N.
    pub warp: [u32; 2],
    /// Pipeline stages.
    pub stages: u32,
    /// Elements per vector access: C and K must be multiples.
    pub align: u32,
    /// Serial split-K slices.
    pub split_k: u32,
}

impl CutlassConfig {
    /// Parses `tb_m,tb_n,tb_k,warp_m,warp_n,stages,align,split_k`.
    pub fn parse(params: &str) -> Option<CutlassConfig> {
        match values(params).as_slice() {
            &[m, n, k, wm, wn, stages, align, split_k]
                if [m, n, k, wm, wn, stages, align, split_k]
                    .iter()
                    .all(|&v| v > 0)
                    && m % wm == 0
                    && n % wn == 0 =>
            {
                Some(CutlassConfig {
                    tile: [m, n, k],
                    warp: [wm, wn],
                    stages,
                    align,
                    split_k,
                })
            }
            _ => None,
        }
    }

    /// Threads per block: one warp per warp tile.
    pub fn threads(&self) -> u32 {
        (self.tile[0] / self.warp[0]) * (self.tile[1] / self.warp[1]) * 32
    }

    /// Shared memory of the main loop (A and B tiles of every stage): what the kernel's
    /// `SharedStorage` holds at its largest for these configs.
    pub fn shared_bytes(&self, element_bytes: u32) -> u32 {
        let [m, n, k] = self.tile;
        self.stages * (m * k + k * n) * element_bytes
    }
}

/// Dynamic shared memory one block may use on an NVIDIA arch (opt-in maximum).
pub fn max_shared_per_block(arch: &str) -> u32 {
    match arch {
        "sm_80" | "sm_87" => 163 * 1024,
        "sm_86" | "sm_89" => 99 * 1024,
        "sm_90" | "sm_90a" => 227 * 1024,
        _ => 48 * 1024,
    }
}

/// The GEMM shape `[M, N, K]` of a forward convolution.
fn gemm_shape(p: &ConvProblem) -> [u64; 3] {
    let [_, oh, ow] = p.output();
    let [_, fh, fw] = p.filter();
    [
        p.n() as u64 * oh as u64 * ow as u64,
        p.k() as u64,
        p.c() as u64 * fh as u64 * fw as u64,
    ]
}

/// SMs the cost model assumes when it charges for a grid too small to fill the GPU.
const NOMINAL_SMS: f64 = 132.0;

/// One of the CUTLASS solvers.
pub struct Cutlass {
    id: &'static str,
    /// Data types it runs.
    types: &'static [DataType],
    /// Sustained tensor-core rate the cost model assumes, GFLOP/s.
    gflops: f64,
    /// Pads 1-4 input channels to 4 in the workspace first (a first layer).
    pad_channels: bool,
    /// Stores one output element at a time: any K, for K not a multiple of the vector width.
    scalar_out: bool,
}

/// Threads per block of the channel-padding kernel, and most blocks it launches (it strides).
const PAD_THREADS: u32 = 256;
const PAD_MAX_BLOCKS: u64 = 4096;

/// Bytes of a 4-channel copy of `positions` pixels (or filter positions), rounded up to 256
/// as the kernel's builder places them in the workspace.
fn padded_bytes(positions: u64, element_bytes: u32) -> u64 {
    (positions * 4 * element_bytes as u64).div_ceil(256) * 256
}

/// `ConvCutlassIgemmFwd`.
pub static IGEMM: Cutlass = Cutlass {
    id: "ConvCutlassIgemmFwd",
    types: &[DataType::Fp16, DataType::Bf16],
    gflops: 300_000.0,
    pad_channels: false,
    scalar_out: false,
};

/// `ConvCutlassFirstLayerFwd`.
pub static FIRST_LAYER: Cutlass = Cutlass {
    id: "ConvCutlassFirstLayerFwd",
    types: &[DataType::Fp16, DataType::Bf16],
    gflops: 150_000.0,
    pad_channels: true,
    scalar_out: false,
};

/// `ConvCutlassFirstLayer3xTf32Fwd`: FP32 first layers, FP32-accurate.
pub static FIRST_LAYER_3XTF32: Cutlass = Cutlass {
    id: "ConvCutlassFirstLayer3xTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 40_000.0,
    pad_channels: true,
    scalar_out: false,
};

/// `ConvCutlassFirstLayerTf32Fwd`: FP32 first layers in the opt-in TF32 math mode.
pub static FIRST_LAYER_TF32: Cutlass = Cutlass {
    id: "ConvCutlassFirstLayerTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 80_000.0,
    pad_channels: true,
    scalar_out: false,
};

/// `ConvCutlassIgemmScalarOutFwd`.
pub static IGEMM_SCALAR_OUT: Cutlass = Cutlass {
    id: "ConvCutlassIgemmScalarOutFwd",
    types: &[DataType::Fp16, DataType::Bf16],
    gflops: 250_000.0,
    pad_channels: false,
    scalar_out: true,
};

/// `ConvCutlass3xTf32Fwd`.
pub static THREE_TF32: Cutlass = Cutlass {
    id: "ConvCutlass3xTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 60_000.0,
    pad_channels: false,
    scalar_out: false,
};

/// `ConvCutlass3xTf32WideFwd`: the 3xTF32 kernel with wide warp tiles, sm_90 only (it spills
/// on the other arches' register allocation).
pub static THREE_TF32_WIDE: Cutlass = Cutlass {
    id: "ConvCutlass3xTf32WideFwd",
    types: &[DataType::Fp32],
    gflops: 70_000.0,
    pad_channels: false,
    scalar_out: false,
};

/// `ConvCutlassTf32Fwd`.
pub static TF32: Cutlass = Cutlass {
    id: "ConvCutlassTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 120_000.0,
    pad_channels: false,
    scalar_out: false,
};

impl Cutlass {
    fn element_bytes(p: &ConvProblem) -> u32 {
        p.data_types()[0].size_bytes() as u32
    }

    /// Pixels of x and filter positions of w (what the padding kernel copies).
    fn positions(p: &ConvProblem) -> (u64, u64) {
        let [_, h, w] = p.input();
        let [_, r, s] = p.filter();
        (
            p.n() as u64 * h as u64 * w as u64,
            p.k() as u64 * r as u64 * s as u64,
        )
    }
}

impl Solver for Cutlass {
    fn id(&self) -> &'static str {
        self.id
    }

    fn applicable(
        &self,
        p: &ConvProblem,
        target: &TargetCaps,
        params: &str,
    ) -> Result<(), NotApplicable> {
        let cfg = CutlassConfig::parse(params)
            .ok_or("perf config is not tb_m,tb_n,tb_k,warp_m,warp_n,stages,align,split_k")?;
        if !self.types.contains(&p.data_types()[0]) {
            return Err("data type not built for this solver");
        }
        if p.layouts()[0] != Layout::Nhwc {
            return Err("needs 2-D NHWC tensors");
        }
        if p.groups() != 1 {
            return Err("grouped convolution");
        }
        if self.pad_channels {
            if p.c() > 4 {
                return Err("more than 4 input channels (a first-layer solver)");
            }
            if !p.k().is_multiple_of(cfg.align) {
                return Err("K is not a multiple of the config's vector width");
            }
        } else if self.scalar_out {
            if !p.c().is_multiple_of(cfg.align) {
                return Err("C is not a multiple of the config's vector width");
            }
            if p.k().is_multiple_of(cfg.align) {
                return Err("K is a multiple of the vector width (vector stores serve it)");
            }
        } else if !p.c().is_multiple_of(cfg.align) || !p.k().is_multiple_of(cfg.align) {
            return Err("C or K is not a multiple of the config's vector width");
        }
        let [_, fh, fw] = p.filter();
        if fh > 32 || fw > 32 {
            return Err("filter taller or wider than 32 (the iterator's mask bits)");
        }
        // CUTLASS 2.x conv indexes GEMM rows, columns and tensor elements in 32-bit ints.
        let [m, n, k] = gemm_shape(p);
        let int_max = i32::MAX as u64;
        if m > int_max || n > int_max || k > int_max {
            return Err("GEMM extent past 32-bit indexing");
        }
        if p.element_counts().iter().any(|&e| e > int_max) {
            return Err("a tensor past 2^31 elements");
        }
        let k_tiles = k.div_ceil(cfg.tile[2] as u64);
        if cfg.split_k as u64 > k_tiles {
            return Err("more split-K slices than reduction tiles");
        }
        if cfg.shared_bytes(Self::element_bytes(p)) > max_shared_per_block(target.arch) {
            return Err("tile needs more shared memory than this arch gives a block");
        }
        Ok(())
    }

    fn launch_plan(&self, p: &ConvProblem, params: &str) -> LaunchPlan {
        let Some(cfg) = CutlassConfig::parse(params) else {
            return LaunchPlan::single([0, 0, 0], [0, 0, 0]);
        };
        let [m, n, _] = gemm_shape(p);
        let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
        let tiles = [
            m.div_ceil(cfg.tile[0] as u64),
            n.div_ceil(cfg.tile[1] as u64),
        ];
        let mut kernels = heapless::Vec::new();
        let mut workspace = 0;
        if self.pad_channels {
            let (pixels, taps) = Self::positions(p);
            let blocks = (pixels + taps)
                .div_ceil(PAD_THREADS as u64)
                .clamp(1, PAD_MAX_BLOCKS);
            // Capacity MAX_KERNELS >= 2.
            let _ = kernels.push(KernelLaunch {
                kernel: 0,
                grid: [blocks as u32, 1, 1],
                block: [PAD_THREADS, 1, 1],
                shared_bytes: 0,
            });
            let e = Self::element_bytes(p);
            workspace = padded_bytes(pixels, e) + padded_bytes(taps, e);
        }
        let _ = kernels.push(KernelLaunch {
            kernel: kernels.len(),
            grid: [clamp(tiles[0]), clamp(tiles[1]), cfg.split_k],
            block: [cfg.threads(), 1, 1],
            shared_bytes: cfg.shared_bytes(Self::element_bytes(p)),
        });
        LaunchPlan {
            kernels,
            // Serial split-K: one zeroed semaphore per output tile, after any padded copies.
            workspace_bytes: workspace
                + if cfg.split_k > 1 {
                    tiles[0] * tiles[1] * 4
                } else {
                    0
                },
        }
    }

    fn estimated_ms(&self, p: &ConvProblem, params: &str) -> f64 {
        let Some(cfg) = CutlassConfig::parse(params) else {
            return f64::INFINITY;
        };
        let [m, n, k] = gemm_shape(p);
        let fill =
            tile_fill(m as f64, cfg.tile[0] as f64) * tile_fill(n as f64, cfg.tile[1] as f64);
        let blocks = (m.div_ceil(cfg.tile[0] as u64) * n.div_ceil(cfg.tile[1] as u64)) as f64
            * cfg.split_k as f64;
        let occupancy = (blocks / NOMINAL_SMS).min(1.0);
        let flops = 2.0 * m as f64 * n as f64 * k as f64;
        let bytes = (p.element_counts().iter().sum::<u64>() * Self::element_bytes(p) as u64) as f64;
        // Each split-K slice after the first re-reads and re-writes the output.
        let split_bytes =
            (cfg.split_k as f64 - 1.0) * 2.0 * (m * n) as f64 * Self::element_bytes(p) as f64;
        let compute_ms = flops / (self.gflops * fill * occupancy * 1e6);
        let memory_ms = (bytes + split_bytes) / 2.5e9;
        compute_ms.max(memory_ms) + 0.003 + 0.001 * (cfg.split_k as f64 - 1.0)
    }

    fn default_params(
        &self,
        p: &ConvProblem,
        candidates: &mut dyn Iterator<Item = &'static str>,
    ) -> Option<&'static str> {
        candidates.min_by(|a, b| self.estimated_ms(p, a).total_cmp(&self.estimated_ms(p, b)))
    }

    fn timed_like(&self) -> Option<&'static str> {
        // One-element stores change only the epilogue: on a layer with K % 8 != 0 the nearest
        // measured problems (K % 8 == 0) timed the vector-store kernel, not this one.
        self.scalar_out.then_some(IGEMM.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_format::ConvSpec;

    fn h100() -> TargetCaps {
        super::super::H100_CAPS
    }

    fn nhwc(n: u32, c: u32, k: u32, hw: u32, f: u32, t: DataType) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            n,
            c,
            k,
            input: [1, hw, hw],
            filter: [1, f, f],
            pad: [0, f / 2, f / 2],
            layouts: [Layout::Nhwc; 3],
            data_types: [t; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn configs_parse_and_size() {
        let c = CutlassConfig::parse("128,64,64,64,32,4,8,2").unwrap();
        assert_eq!(c.threads(), 128);
        assert_eq!(c.shared_bytes(2), 4 * (128 * 64 + 64 * 64) * 2);
        assert_eq!(c.split_k, 2);
        assert!(CutlassConfig::parse("128,64,64,64,32,4,8").is_none());
        assert!(CutlassConfig::parse("128,64,64,48,32,4,8,1").is_none());
    }

    #[test]
    fn applicability_names_each_limit() {
        let caps = h100();
        let ok = nhwc(32, 64, 64, 56, 3, DataType::Fp16);
        assert!(IGEMM
            .applicable(&ok, &caps, "128,64,64,64,32,4,8,1")
            .is_ok());
        let nchw = ConvProblem::new(ConvSpec {
            layouts: [Layout::Nchw; 3],
            ..ok.spec()
        })
        .unwrap();
        assert_eq!(
            IGEMM.applicable(&nchw, &caps, "128,64,64,64,32,4,8,1"),
            Err("needs 2-D NHWC tensors")
        );
        let fp32 = nhwc(32, 64, 64, 56, 3, DataType::Fp32);
        assert!(IGEMM
            .applicable(&fp32, &caps, "128,64,64,64,32,4,8,1")
            .is_err());
        assert!(THREE_TF32
            .applicable(&fp32, &caps, "64,64,32,32,32,4,4,1")
            .is_ok());
        let odd = nhwc(1, 3, 64, 224, 7, DataType::Fp16);
        assert_eq!(
            IGEMM.applicable(&odd, &caps, "64,64,64,32,32,4,2,1"),
            Err("C or K is not a multiple of the config's vector width")
        );
        let six = nhwc(1, 6, 64, 32, 3, DataType::Fp16);
        assert!(IGEMM
            .applicable(&six, &caps, "64,64,64,32,32,4,2,1")
            .is_ok());
        // 128x256x64 in 3 stages needs 144 KiB: an H100 block has it, an sm_89 block not.
        let big = "128,256,64,64,64,3,8,1";
        assert!(IGEMM.applicable(&ok, &caps, big).is_ok());
        let ada = TargetCaps {
            arch: "sm_89",
            ..caps
        };
        assert!(IGEMM.applicable(&ok, &ada, big).is_err());
        // 1x1 with C = 64: K = 64 has two 32-wide reduction tiles, not four.
        let one = nhwc(1, 64, 64, 7, 1, DataType::Fp32);
        assert!(THREE_TF32
            .applicable(&one, &caps, "64,64,32,32,32,4,4,4")
            .is_err());
    }

    #[test]
    fn plans_match_cutlass_grids_and_workspace() {
        let p = nhwc(1, 512, 512, 7, 3, DataType::Fp16);
        let plan = IGEMM.launch_plan(&p, "64,64,64,32,32,5,8,4");
        let k = &plan.kernels[0];
        assert_eq!(k.grid, [1, 8, 4]); // M = 49 pixels, N = 512 channels, 4 slices
        assert_eq!(k.block, [128, 1, 1]);
        assert_eq!(plan.workspace_bytes, 8 * 4);
        assert_eq!(
            IGEMM
                .launch_plan(&p, "64,64,64,32,32,5,8,1")
                .workspace_bytes,
            0
        );
    }

    #[test]
    fn the_first_layer_pads_into_the_workspace_then_convolves() {
        let caps = h100();
        let conv1 = ConvProblem::new(ConvSpec {
            n: 32,
            c: 3,
            k: 64,
            input: [1, 224, 224],
            filter: [1, 7, 7],
            pad: [0, 3, 3],
            stride: [1, 2, 2],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap();
        let q = "128,64,32,64,32,3,4,1";
        assert!(FIRST_LAYER.applicable(&conv1, &caps, q).is_ok());
        assert!(IGEMM
            .applicable(&conv1, &caps, "64,64,64,32,32,4,2,1")
            .is_err());
        let plan = FIRST_LAYER.launch_plan(&conv1, q);
        assert_eq!(plan.kernels.len(), 2);
        assert_eq!((plan.kernels[0].kernel, plan.kernels[1].kernel), (0, 1));
        // M = 32 x 112 x 112 output pixels in 128-row tiles, K = 64 channels in one 64 tile.
        assert_eq!(plan.kernels[1].grid, [3136, 1, 1]);
        let x4 = (32 * 224 * 224 * 4 * 2u64).div_ceil(256) * 256;
        let w4 = (64 * 7 * 7 * 4 * 2u64).div_ceil(256) * 256;
        assert_eq!(plan.workspace_bytes, x4 + w4);
        let wide = ConvProblem::new(ConvSpec {
            c: 8,
            ..conv1.spec()
        })
        .unwrap();
        assert_eq!(
            FIRST_LAYER.applicable(&wide, &caps, q),
            Err("more than 4 input channels (a first-layer solver)")
        );
    }

    #[test]
    fn scalar_stores_serve_the_output_channel_counts_vector_stores_cannot() {
        let caps = h100();
        let q8 = "64,64,64,32,32,5,8,1";
        // A decoder's RGB output: K = 3.
        let rgb = nhwc(1, 64, 3, 128, 3, DataType::Fp16);
        assert!(IGEMM.applicable(&rgb, &caps, q8).is_err());
        assert!(IGEMM_SCALAR_OUT.applicable(&rgb, &caps, q8).is_ok());
        // YOLO's 255-channel head: odd K, C = 512.
        let head = nhwc(1, 512, 255, 11, 1, DataType::Bf16);
        assert!(IGEMM_SCALAR_OUT.applicable(&head, &caps, q8).is_ok());
        assert!(IGEMM_SCALAR_OUT
            .applicable(&head, &caps, "64,64,64,32,32,4,2,1")
            .is_ok());
        // K a multiple of the width: the vector-store solver's.
        let even = nhwc(1, 64, 64, 28, 3, DataType::Fp16);
        assert_eq!(
            IGEMM_SCALAR_OUT.applicable(&even, &caps, q8),
            Err("K is a multiple of the vector width (vector stores serve it)")
        );
        // Loads over C stay vectors.
        let odd_c = nhwc(1, 12, 3, 28, 3, DataType::Fp16);
        assert_eq!(
            IGEMM_SCALAR_OUT.applicable(&odd_c, &caps, q8),
            Err("C is not a multiple of the config's vector width")
        );
        assert!(IGEMM_SCALAR_OUT
            .applicable(&nhwc(1, 64, 3, 28, 3, DataType::Fp32), &caps, q8)
            .is_err());
    }

    #[test]
    fn fp32_first_layers_have_their_own_solvers() {
        let caps = h100();
        let conv1 = nhwc(32, 3, 64, 224, 7, DataType::Fp32);
        let q = "64,64,16,32,32,4,4,1";
        assert!(FIRST_LAYER_3XTF32.applicable(&conv1, &caps, q).is_ok());
        assert!(FIRST_LAYER.applicable(&conv1, &caps, q).is_err());
        let plan = FIRST_LAYER_3XTF32.launch_plan(&conv1, q);
        assert_eq!(plan.kernels.len(), 2);
        let x4 = (32 * 224 * 224 * 4 * 4u64).div_ceil(256) * 256;
        let w4 = (64 * 7 * 7 * 4 * 4u64).div_ceil(256) * 256;
        assert_eq!(plan.workspace_bytes, x4 + w4);
    }

    #[test]
    fn the_model_prefers_split_k_for_a_small_deep_layer_and_big_tiles_for_a_big_one() {
        let small = nhwc(1, 512, 512, 7, 3, DataType::Fp16);
        let one = IGEMM.estimated_ms(&small, "64,64,64,32,32,5,8,1");
        let four = IGEMM.estimated_ms(&small, "64,64,64,32,32,5,8,4");
        assert!(four < one, "{four} vs {one}");
        let big = nhwc(32, 256, 256, 28, 3, DataType::Fp16);
        assert!(
            IGEMM.estimated_ms(&big, "128,128,64,64,64,3,8,1")
                <= IGEMM.estimated_ms(&big, "64,64,64,32,32,5,8,4")
        );
    }
}
