//! The tensor-core solvers built from CUTLASS 2.x implicit-GEMM convolution
//! (`kernels/nv/cutlass_conv.cu`, NVIDIA sm_80+, NHWC, 2-D, one group):
//! `ConvCutlassIgemmFwd` (FP16/BF16, FP32 accumulation), `ConvCutlass3xTf32Fwd` (FP32 data,
//! FP32 accuracy through 3xTF32), `ConvCutlassTf32Fwd` (FP32 data as TF32: opt-in only) and
//! `ConvCutlassFirstLayerFwd`, `ConvCutlassFirstLayer3xTf32Fwd` and `ConvCutlassFirstLayerTf32Fwd`
//! (1-4 input channels, padded to 4 into the workspace, then CUTLASS's fixed-channels iterators:
//! a network's first layer), `ConvCutlassIgemmScalarOutFwd` (FP16/BF16 with any number of
//! output channels: one-element stores), and `ConvCutlassNchwIgemmFwd`,
//! `ConvCutlassNchw3xTf32Fwd`, `ConvCutlassNchw3xTf32WideFwd`, `ConvCutlassNchwTf32Fwd` (NCHW
//! problems: x and w transposed into NHWC copies in the workspace, the NHWC kernel, y
//! transposed back), and
//! `ConvCutlassGroupedFwd` (grouped NHWC convolution: CUTLASS's group fprop, a block within one
//! group), and `ConvCutlass3dFwd`, `ConvCutlass3dScalarOutFwd`, `ConvCutlass3d3xTf32Fwd` (3-D
//! NDHWC convolution: CUTLASS's Conv3d fprop, channels padded in the workspace where C is not a
//! multiple of the 16-byte vector), and `ConvCutlassNchwGemm3xTf32Fwd` (NCHW 1x1 and NCDHW
//! 1x1x1 layers as a batched GEMM, `kernels/nv/cutlass_gemm.cu`: no copies at stride 1), and
//! `ConvCutlassNchwFirstLayer3xTf32Fwd` (an NCHW first layer: padded NHWC copies made from the
//! NCHW tensors in one pass, the first-layer kernel, y transposed back), and
//! `ConvCutlass3dNchw3xTf32Fwd` (FP32 NCDHW through NDHWC copies, as the 2-D NCHW forms).
//!
//! The GEMM is M = N*Z*P*Q output pixels, N = K output channels, K = C*T*R*S (per group for grouped
//! problems: the reduction runs over one group's C/groups channels). Perf config:
//! `tb_m,tb_n,tb_k,warp_m,warp_n,stages,align,split_k`; the first seven select the code object,
//! `split_k` (serial split-K slices) is a run-time value. These kernels take CUTLASS's own
//! `Params` block, built on the device at prepare time by the code object's
//! `kiln_cutlass_params` entry (see `crate::invoker`).

use kiln_format::{ConvProblem, DataType, Layout};

use super::params::{tile_fill, values, volume};
use super::{KernelLaunch, LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

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

/// The GEMM shape `[M, N, K]` of a forward convolution.
fn gemm_shape(p: &ConvProblem) -> [u64; 3] {
    [
        p.n() as u64 * volume(p.output()),
        p.k() as u64,
        p.group_channels() as u64 * volume(p.filter()),
    ]
}

/// One of the CUTLASS solvers.
pub struct Cutlass {
    id: &'static str,
    /// Data types it runs.
    types: &'static [DataType],
    /// Sustained tensor-core rate the cost model assumes, GFLOP/s.
    gflops: f64,
    /// What runs around the CUTLASS kernel.
    form: Form,
    /// Tried only where its output tiles give every SM at least one: the library grid's M x N
    /// tiles, split-K slices not counted (only an NCHW-through-copies solver sets it, so the
    /// grid's third dimension is never the batched GEMM's images).
    needs_full_wave: bool,
}

/// The forms of the CUTLASS solvers: what their plans launch around the library kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// The kernel alone, on NHWC tensors.
    Nhwc,
    /// 1-4 input channels padded to 4 in the workspace first (a first layer).
    PadChannels,
    /// One-element output stores: any K, for K not a multiple of the vector width.
    ScalarStores,
    /// NCHW tensors: x and w transposed into the workspace, the kernel, y transposed back.
    Nchw,
    /// Grouped NHWC: a block's output channels within one group (K/groups a multiple of the
    /// tile's N).
    Grouped,
    /// 3-D NDHWC; x and w copied with their channels padded to the vector width first where C
    /// is not a multiple of it.
    Volume,
    /// 3-D NDHWC with one-element output stores: any K.
    VolumeScalarStores,
    /// NCHW 1x1 or NCDHW 1x1x1, no padding: a batched GEMM over images, w (K x C) times x[n]
    /// (C x pixels) into y[n] (K x pixels); at stride 1 no copies, else x's strided pixels
    /// copied first.
    NchwGemm,
    /// NCHW with 1-4 input channels: x and w copied as 4-channel NHWC / KRSC, the first-layer
    /// kernel into an NHWC y in the workspace, y transposed into the caller's.
    NchwPadChannels,
    /// 3-D NCDHW: x and w transposed into NDHWC / KTRSC copies, the 3-D kernel, y transposed
    /// back (as `Nchw` for 2-D).
    VolumeNchw,
}

impl Form {
    fn is_volume(self) -> bool {
        matches!(self, Form::Volume | Form::VolumeScalarStores)
    }
}

/// Threads per block of the grid-strided copies (the channel padding, the strided-pixel copy),
/// and most blocks each launches.
const COPY_THREADS: u32 = 256;
const PAD_MAX_BLOCKS: u64 = 4096;
const SUBSAMPLE_MAX_BLOCKS: u64 = 1 << 16;

/// A grid-strided copy's launch of `kernel` over `items`: one thread each, grid-strided past
/// `max_blocks` blocks.
fn copy_launch(kernel: &'static str, items: u64, max_blocks: u64) -> KernelLaunch {
    KernelLaunch {
        kernel,
        grid: [
            items.div_ceil(COPY_THREADS as u64).clamp(1, max_blocks) as u32,
            1,
            1,
        ],
        block: [COPY_THREADS, 1, 1],
        shared_bytes: 0,
        cluster: 1,
    }
}

/// Threads per block of the layout transforms (32 x 8: one 32x32 tile per pass), and most
/// blocks they launch (they stride over the tiles).
const TRANSPOSE_BLOCK: [u32; 3] = [32, 8, 1];
const TRANSPOSE_MAX_BLOCKS: u64 = 1 << 16;

/// 32x32 tiles of `batches` matrices of `rows` x `cols`, as the transform kernels count them.
fn transpose_tiles(batches: u64, rows: u64, cols: u64) -> u64 {
    batches * rows.div_ceil(32) * cols.div_ceil(32)
}

/// The library kernel, in every form.
const FPROP: &str = "kiln_cutlass_fprop";
/// The first layers' channel padding.
const PAD_CHANNELS: &str = "kiln_cutlass_pad_channels";
/// The NCHW forms' transforms into and out of NHWC.
const NCHW_IN: &str = "kiln_cutlass_nchw_in";
const NCHW_OUT: &str = "kiln_cutlass_nchw_out";
/// The batched GEMM's copy of a strided layer's pixels.
const SUBSAMPLE: &str = "kiln_cutlass_subsample";

/// A layout transform launch of `kernel` over `tiles` tiles.
fn transpose_launch(kernel: &'static str, tiles: u64) -> KernelLaunch {
    KernelLaunch {
        kernel,
        grid: [tiles.clamp(1, TRANSPOSE_MAX_BLOCKS) as u32, 1, 1],
        block: TRANSPOSE_BLOCK,
        shared_bytes: 0,
        cluster: 1,
    }
}

/// Workspace a copy of `bytes` takes: the kernels' builder starts each copy at a 256-byte
/// boundary.
fn copy_bytes(bytes: u64) -> u64 {
    bytes.div_ceil(256) * 256
}

/// Bytes of a 4-channel copy of `positions` pixels (or filter positions) in the workspace.
fn padded_bytes(positions: u64, element_bytes: u32) -> u64 {
    copy_bytes(positions * 4 * element_bytes as u64)
}

/// `ConvCutlassIgemmFwd`.
pub static IGEMM: Cutlass = Cutlass {
    id: "ConvCutlassIgemmFwd",
    types: &[DataType::Fp16, DataType::Bf16],
    gflops: 300_000.0,
    form: Form::Nhwc,
    needs_full_wave: false,
};

/// `ConvCutlassFirstLayerFwd`.
pub static FIRST_LAYER: Cutlass = Cutlass {
    id: "ConvCutlassFirstLayerFwd",
    types: &[DataType::Fp16, DataType::Bf16],
    gflops: 150_000.0,
    form: Form::PadChannels,
    needs_full_wave: false,
};

/// `ConvCutlassFirstLayer3xTf32Fwd`: FP32 first layers, FP32-accurate.
pub static FIRST_LAYER_3XTF32: Cutlass = Cutlass {
    id: "ConvCutlassFirstLayer3xTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 40_000.0,
    form: Form::PadChannels,
    needs_full_wave: false,
};

/// `ConvCutlassFirstLayerTf32Fwd`: FP32 first layers in the opt-in TF32 math mode.
pub static FIRST_LAYER_TF32: Cutlass = Cutlass {
    id: "ConvCutlassFirstLayerTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 80_000.0,
    form: Form::PadChannels,
    needs_full_wave: false,
};

/// `ConvCutlassIgemmScalarOutFwd`.
pub static IGEMM_SCALAR_OUT: Cutlass = Cutlass {
    id: "ConvCutlassIgemmScalarOutFwd",
    types: &[DataType::Fp16, DataType::Bf16],
    gflops: 250_000.0,
    form: Form::ScalarStores,
    needs_full_wave: false,
};

/// `ConvCutlassNchwIgemmFwd`: FP16/BF16 NCHW through NHWC copies.
pub static NCHW_IGEMM: Cutlass = Cutlass {
    id: "ConvCutlassNchwIgemmFwd",
    types: &[DataType::Fp16, DataType::Bf16],
    gflops: 300_000.0,
    form: Form::Nchw,
    needs_full_wave: false,
};

/// `ConvCutlassNchw3xTf32Fwd`: FP32 NCHW through NHWC copies, FP32-accurate.
pub static NCHW_3XTF32: Cutlass = Cutlass {
    id: "ConvCutlassNchw3xTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 60_000.0,
    form: Form::Nchw,
    needs_full_wave: false,
};

/// `ConvCutlassNchwTf32Fwd`: FP32 NCHW through NHWC copies, opt-in TF32.
pub static NCHW_TF32: Cutlass = Cutlass {
    id: "ConvCutlassNchwTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 120_000.0,
    form: Form::Nchw,
    needs_full_wave: false,
};

/// `ConvCutlassGroupedFwd`: grouped FP16/BF16 NHWC, a block within one group.
pub static GROUPED: Cutlass = Cutlass {
    id: "ConvCutlassGroupedFwd",
    types: &[DataType::Fp16, DataType::Bf16],
    gflops: 250_000.0,
    form: Form::Grouped,
    needs_full_wave: false,
};

/// `ConvCutlass3dFwd`: 3-D FP16/BF16 NDHWC.
pub static VOLUME: Cutlass = Cutlass {
    id: "ConvCutlass3dFwd",
    types: &[DataType::Fp16, DataType::Bf16],
    gflops: 280_000.0,
    form: Form::Volume,
    needs_full_wave: false,
};

/// `ConvCutlass3dScalarOutFwd`: 3-D FP16/BF16 NDHWC, K not a multiple of the vector width.
pub static VOLUME_SCALAR_OUT: Cutlass = Cutlass {
    id: "ConvCutlass3dScalarOutFwd",
    types: &[DataType::Fp16, DataType::Bf16],
    gflops: 230_000.0,
    form: Form::VolumeScalarStores,
    needs_full_wave: false,
};

/// `ConvCutlass3d3xTf32Fwd`: 3-D FP32 NDHWC, FP32-accurate.
pub static VOLUME_3XTF32: Cutlass = Cutlass {
    id: "ConvCutlass3d3xTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 60_000.0,
    form: Form::Volume,
    needs_full_wave: false,
};

/// `ConvCutlassNchw3xTf32WideFwd`: [`NCHW_3XTF32`] with the wide warp tiles of
/// [`THREE_TF32_WIDE`], sm_90 only. Only where its tiles fill the GPU: on layers that leave SMs
/// idle (batch 1 at 14x14 and 28x28) it ran 1.1-2.5x slower than the 64x64 tiles, or than the
/// batched GEMM on 1x1 layers.
pub static NCHW_3XTF32_WIDE: Cutlass = Cutlass {
    id: "ConvCutlassNchw3xTf32WideFwd",
    types: &[DataType::Fp32],
    gflops: 70_000.0,
    form: Form::Nchw,
    needs_full_wave: true,
};

/// `ConvCutlassNchwGemm3xTf32Fwd`: FP32 NCHW 1x1 and NCDHW 1x1x1 layers as a batched GEMM,
/// FP32-accurate.
pub static NCHW_GEMM_3XTF32: Cutlass = Cutlass {
    id: "ConvCutlassNchwGemm3xTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 60_000.0,
    form: Form::NchwGemm,
    needs_full_wave: false,
};

/// `ConvCutlassNchwFirstLayer3xTf32Fwd`: FP32 NCHW first layers, FP32-accurate.
pub static NCHW_FIRST_LAYER_3XTF32: Cutlass = Cutlass {
    id: "ConvCutlassNchwFirstLayer3xTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 40_000.0,
    form: Form::NchwPadChannels,
    needs_full_wave: false,
};

/// `ConvCutlass3dNchw3xTf32Fwd`: FP32 NCDHW through NDHWC copies, FP32-accurate.
pub static VOLUME_NCHW_3XTF32: Cutlass = Cutlass {
    id: "ConvCutlass3dNchw3xTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 60_000.0,
    form: Form::VolumeNchw,
    needs_full_wave: false,
};

/// `ConvCutlass3xTf32Fwd`.
pub static THREE_TF32: Cutlass = Cutlass {
    id: "ConvCutlass3xTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 60_000.0,
    form: Form::Nhwc,
    needs_full_wave: false,
};

/// `ConvCutlass3xTf32WideFwd`: the 3xTF32 kernel with wide warp tiles, sm_90 only (it spills
/// on the other arches' register allocation).
pub static THREE_TF32_WIDE: Cutlass = Cutlass {
    id: "ConvCutlass3xTf32WideFwd",
    types: &[DataType::Fp32],
    gflops: 70_000.0,
    form: Form::Nhwc,
    needs_full_wave: false,
};

/// `ConvCutlassTf32Fwd`.
pub static TF32: Cutlass = Cutlass {
    id: "ConvCutlassTf32Fwd",
    types: &[DataType::Fp32],
    gflops: 120_000.0,
    form: Form::Nhwc,
    needs_full_wave: false,
};

impl Cutlass {
    fn element_bytes(p: &ConvProblem) -> u32 {
        p.data_types()[0].size_bytes() as u32
    }

    /// The `[M, N, K]` of one launch's GEMM: the convolution's, or for the batched GEMM of an
    /// NCHW 1x1 layer one image's (M = K output channels, N = P*Q output pixels, K = C).
    fn gemm(&self, p: &ConvProblem) -> [u64; 3] {
        match self.form {
            Form::NchwGemm => [p.k() as u64, volume(p.output()), p.group_channels() as u64],
            _ => gemm_shape(p),
        }
    }

    /// The library launch's grid: output tiles along the GEMM's M and N, and its layers (one
    /// image each for the batched GEMM, else the split-K slices).
    fn grid(&self, p: &ConvProblem, cfg: &CutlassConfig) -> [u64; 3] {
        let [m, n, _] = self.gemm(p);
        let layers = match self.form {
            Form::NchwGemm => p.n(),
            _ => cfg.split_k,
        };
        [
            m.div_ceil(cfg.tile[0] as u64),
            n.div_ceil(cfg.tile[1] as u64),
            layers as u64,
        ]
    }

    /// The channel-padding launch over `items` (pixels and filter positions, or elements).
    fn pad_launch(items: u64) -> KernelLaunch {
        copy_launch(PAD_CHANNELS, items, PAD_MAX_BLOCKS)
    }

    /// Elements of the batched GEMM's copy of a strided layer's pixels, (N, C, P, Q); `None`
    /// at stride 1, where the product reads x in place.
    fn subsampled_elements(&self, p: &ConvProblem) -> Option<u64> {
        (self.form == Form::NchwGemm && p.stride() != [1, 1, 1])
            .then(|| p.n() as u64 * p.c() as u64 * volume(p.output()))
    }

    /// Pixels of x and filter positions of w (what the padding kernels copy).
    fn positions(p: &ConvProblem) -> (u64, u64) {
        (
            p.n() as u64 * volume(p.input()),
            p.k() as u64 * volume(p.filter()),
        )
    }
}

impl TunableSolver for Cutlass {
    type Config = CutlassConfig;
    const CONFIG_FORM: &'static str =
        "perf config is not tb_m,tb_n,tb_k,warp_m,warp_n,stages,align,split_k";

    fn id(&self) -> &'static str {
        self.id
    }

    fn packs_channels(&self) -> bool {
        matches!(self.form, Form::PadChannels)
    }

    fn parse(&self, params: &str) -> Option<CutlassConfig> {
        CutlassConfig::parse(params)
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        if !p.fusion().is_none() {
            return Err(
                "fused epilogue: CUTLASS's epilogue is compiled in, not a run-time argument",
            );
        }
        if !self.types.contains(&p.data_types()[0]) {
            return Err("data type not built for this solver");
        }
        if self.form == Form::NchwGemm {
            if p.layouts() != [Layout::Nchw; 3] && p.layouts() != [Layout::Ncdhw; 3] {
                return Err("needs NCHW or NCDHW tensors (the NHWC solvers serve NHWC)");
            }
        } else if matches!(self.form, Form::Nchw | Form::NchwPadChannels) {
            if p.layouts() != [Layout::Nchw; 3] {
                return Err("needs 2-D NCHW tensors (the NHWC solvers serve NHWC)");
            }
        } else if self.form.is_volume() {
            if p.layouts() != [Layout::Ndhwc; 3] {
                return Err("needs 3-D NDHWC tensors");
            }
        } else if self.form == Form::VolumeNchw {
            if p.layouts() != [Layout::Ncdhw; 3] {
                return Err("needs 3-D NCDHW tensors");
            }
        } else if p.layouts()[0] != Layout::Nhwc {
            return Err("needs 2-D NHWC tensors");
        }
        if self.form == Form::Grouped {
            if p.groups() < 2 {
                return Err("not a grouped convolution (the ungrouped solvers serve it)");
            }
            if p.spatial_dims() != 2 {
                return Err("needs a 2-D convolution");
            }
        } else if p.groups() != 1 {
            return Err("grouped convolution");
        }
        if self.form == Form::NchwGemm && (p.filter() != [1, 1, 1] || p.pad() != [0, 0, 0]) {
            return Err("not a 1x1, unpadded layer (a product per image)");
        }
        if matches!(self.form, Form::PadChannels | Form::NchwPadChannels) && p.c() > 4 {
            return Err("more than 4 input channels (a first-layer solver)");
        }
        if p.filter().iter().any(|&f| f > 32) {
            return Err("filter deeper, taller or wider than 32 (the iterator's mask bits)");
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
        Ok(())
    }

    fn valid(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        cfg: &CutlassConfig,
    ) -> Result<(), NotApplicable> {
        match self.form {
            Form::PadChannels | Form::NchwPadChannels => {
                if !p.k().is_multiple_of(cfg.align) {
                    return Err("K is not a multiple of the config's vector width");
                }
            }
            Form::ScalarStores => {
                if !p.c().is_multiple_of(cfg.align) {
                    return Err("C is not a multiple of the config's vector width");
                }
                if p.k().is_multiple_of(cfg.align) {
                    return Err("K is a multiple of the vector width (vector stores serve it)");
                }
            }
            Form::Nhwc | Form::Nchw | Form::VolumeNchw => {
                if !p.c().is_multiple_of(cfg.align) || !p.k().is_multiple_of(cfg.align) {
                    return Err("C or K is not a multiple of the config's vector width");
                }
            }
            Form::NchwGemm => {
                if !p.c().is_multiple_of(cfg.align)
                    || !volume(p.output()).is_multiple_of(cfg.align as u64)
                {
                    return Err("C or the output pixels are not a multiple of the vector width");
                }
                if cfg.split_k != 1 {
                    return Err("split-K (the batched GEMM has none)");
                }
            }
            Form::Volume => {
                if !p.k().is_multiple_of(cfg.align) {
                    return Err("K is not a multiple of the config's vector width");
                }
            }
            Form::VolumeScalarStores => {
                if p.k().is_multiple_of(cfg.align) {
                    return Err("K is a multiple of the vector width (vector stores serve it)");
                }
            }
            Form::Grouped => {
                if !p.group_channels().is_multiple_of(cfg.align) || !p.k().is_multiple_of(cfg.align)
                {
                    return Err("C/groups or K is not a multiple of the config's vector width");
                }
                if !p.group_outputs().is_multiple_of(cfg.tile[1]) {
                    return Err(
                        "K/groups is not a multiple of the tile's N (a block within one group)",
                    );
                }
                if cfg.split_k != 1 {
                    return Err("split-K (CUTLASS's group fprop has none)");
                }
            }
        }
        let k_tiles = gemm_shape(p)[2].div_ceil(cfg.tile[2] as u64);
        if cfg.split_k as u64 > k_tiles {
            return Err("more split-K slices than reduction tiles");
        }
        if cfg.shared_bytes(Self::element_bytes(p)) > caps.shared_per_block {
            return Err("tile needs more shared memory than this arch gives a block");
        }
        Ok(())
    }

    fn worth_trying(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        cfg: &CutlassConfig,
    ) -> Result<(), NotApplicable> {
        if !self.needs_full_wave {
            return Ok(());
        }
        let [m_tiles, n_tiles, _] = self.grid(p, cfg);
        if m_tiles * n_tiles < caps.compute_units as u64 {
            return Err("its tiles leave SMs idle on this problem (split-K aside)");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, cfg: &CutlassConfig) -> LaunchPlan {
        let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
        let tiles = self.grid(p, cfg);
        let e = Self::element_bytes(p);
        let library = KernelLaunch {
            kernel: FPROP,
            grid: tiles.map(clamp),
            block: [cfg.threads(), 1, 1],
            shared_bytes: cfg.shared_bytes(e),
            cluster: 1,
        };
        // The launches (capacity MAX_KERNELS >= 3), the library kernel's index among them, and
        // the workspace its copies take (before the split-K semaphores).
        let strided_copy = self.subsampled_elements(p);
        let (launches, at, copies): (&[KernelLaunch], usize, u64) = match self.form {
            Form::NchwGemm if strided_copy.is_some() => {
                let copy = strided_copy.unwrap_or(0);
                (
                    &[copy_launch(SUBSAMPLE, copy, SUBSAMPLE_MAX_BLOCKS), library],
                    1,
                    copy_bytes(copy * e as u64),
                )
            }
            Form::Nhwc | Form::ScalarStores | Form::Grouped | Form::NchwGemm => (&[library], 0, 0),
            Form::Volume | Form::VolumeScalarStores if p.c().is_multiple_of(cfg.align) => {
                (&[library], 0, 0)
            }
            Form::Volume | Form::VolumeScalarStores => {
                let (pixels, taps) = Self::positions(p);
                let channels = p.c().next_multiple_of(cfg.align) as u64;
                // One thread per element of the copies.
                (
                    &[Self::pad_launch((pixels + taps) * channels), library],
                    1,
                    copy_bytes(pixels * channels * e as u64)
                        + copy_bytes(taps * channels * e as u64),
                )
            }
            Form::NchwPadChannels => {
                let (pixels, taps) = Self::positions(p);
                let [_, oh, ow] = p.output();
                let out_of_nhwc =
                    transpose_tiles(p.n() as u64, oh as u64 * ow as u64, p.k() as u64);
                let y_bytes = copy_bytes(p.element_counts()[2] * e as u64);
                (
                    &[
                        Self::pad_launch(pixels + taps),
                        library,
                        transpose_launch(NCHW_OUT, out_of_nhwc),
                    ],
                    1,
                    padded_bytes(pixels, e) + padded_bytes(taps, e) + y_bytes,
                )
            }
            Form::PadChannels => {
                let (pixels, taps) = Self::positions(p);
                (
                    &[Self::pad_launch(pixels + taps), library],
                    1,
                    padded_bytes(pixels, e) + padded_bytes(taps, e),
                )
            }
            Form::Nchw | Form::VolumeNchw => {
                let (n, c, k) = (p.n() as u64, p.c() as u64, p.k() as u64);
                // A 1x1 filter's KCRS is KRSC already: the kernel reads it in place.
                let taps = volume(p.filter());
                let into_nhwc = transpose_tiles(n, c, volume(p.input()))
                    + if taps == 1 {
                        0
                    } else {
                        transpose_tiles(k, c, taps)
                    };
                let out_of_nhwc = transpose_tiles(n, volume(p.output()), k);
                let copies = p
                    .element_counts()
                    .iter()
                    .map(|&count| copy_bytes(count * e as u64))
                    .sum();
                (
                    &[
                        transpose_launch(NCHW_IN, into_nhwc),
                        library,
                        transpose_launch(NCHW_OUT, out_of_nhwc),
                    ],
                    1,
                    copies,
                )
            }
        };
        let mut kernels = heapless::Vec::new();
        for &launch in launches {
            let _ = kernels.push(launch);
        }
        LaunchPlan {
            kernels,
            // Serial split-K: one zeroed semaphore per output tile, after any copies.
            workspace_bytes: copies
                + if cfg.split_k > 1 {
                    tiles[0] * tiles[1] * 4
                } else {
                    0
                },
            library: at,
            pool_partials: None,
            scales_x: false,
        }
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &CutlassConfig) -> f64 {
        let [m, n, _] = self.gemm(p);
        let fill =
            tile_fill(m as f64, cfg.tile[0] as f64) * tile_fill(n as f64, cfg.tile[1] as f64);
        let blocks = self.grid(p, cfg).iter().product::<u64>() as f64;
        // A grid smaller than the GPU leaves SMs idle.
        let occupancy = (blocks / caps.compute_units as f64).min(1.0);
        // The main loop reads each filter tap's channels in whole K tiles: 16 channels under a
        // 64-channel tile cost 64 (as in the wgmma model; it lowered the fallback's regret,
        // `benches/RESULTS.md` part 12).
        let tile_k = cfg.tile[2].max(1) as u64;
        let k_read = volume(p.filter()) * (p.group_channels() as u64).div_ceil(tile_k) * tile_k;
        let flops = 2.0 * gemm_shape(p)[0] as f64 * p.k() as f64 * k_read as f64;
        let [x_count, w_count, y_count] = p.element_counts();
        // A strided batched GEMM reads the copy of x's strided pixels, not x.
        let copied = self.subsampled_elements(p);
        let x_read = copied.unwrap_or(x_count);
        let bytes = ((x_read + w_count + y_count) * Self::element_bytes(p) as u64) as f64;
        // Each split-K slice after the first re-reads and re-writes the output.
        let split_bytes =
            (cfg.split_k as f64 - 1.0) * 2.0 * (m * n) as f64 * Self::element_bytes(p) as f64;
        // Narrow loads feed the tensor cores slower: in the sm_90_132 find log, the FP16 64x64
        // tile with 8- and 4-byte loads ran a median 1.13x and 1.64x the time of the same tile
        // with 16-byte loads, on the 340 problems that ran all three. By bytes, so FP32's
        // 4-element loads are full width; nothing narrower than 4 bytes was measured.
        let loads = match cfg.align * Self::element_bytes(p) {
            16.. => 1.0,
            8..=15 => 1.0 / 1.13,
            _ => 1.0 / 1.64,
        };
        let compute_ms =
            flops / (self.gflops * caps.throughput_scale() * fill * occupancy * loads * 1e6);
        let memory_ms = (bytes + split_bytes) / 2.5e9;
        // The layout transforms read and write every tensor once more, in two more launches;
        // the channel padding reads x and w and writes their copies.
        let transform_ms = match self.form {
            Form::Nchw | Form::NchwPadChannels | Form::VolumeNchw => 2.0 * bytes / 2.5e9 + 0.006,
            Form::Volume | Form::VolumeScalarStores if !p.c().is_multiple_of(cfg.align) => {
                2.0 * bytes / 2.5e9 + 0.003
            }
            // The pixel copy reads every stride-th row of x (whole rows: a sector holds
            // neighbouring pixels) and writes the copy (the product's read of it is in `bytes`).
            Form::NchwGemm if copied.is_some() => {
                let [stride_d, stride_h, _] = p.stride();
                let rows_read = x_count as f64 / (stride_d * stride_h) as f64;
                (rows_read + x_read as f64) * Self::element_bytes(p) as f64 / 2.5e9 + 0.003
            }
            _ => 0.0,
        };
        compute_ms.max(memory_ms) + transform_ms + 0.003 + 0.001 * (cfg.split_k as f64 - 1.0)
    }

    fn tile(&self, cfg: &CutlassConfig) -> u64 {
        cfg.tile[0] as u64 * cfg.tile[1] as u64
    }

    /// 3-D only: where the measured config's grid gives `p` fewer than two waves of blocks,
    /// the smallest tile of the same alignment and split-K. In the find logs' 3-D problems
    /// (`data/find-logs/`, H100, 2026-11-27), 64x64 beat 128x128 on 40 of the 41 problems
    /// whose 128x128 grid was under two waves (time ratio 0.40-0.94, one 1.08), and on 9 of
    /// the 27 past it (up to 1.6x slower), where the measured tile stands. The cost model
    /// ranks these tiles alike once the grid fills the GPU, so it cannot make this call.
    fn refit(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        from: &CutlassConfig,
        candidates: &mut dyn Iterator<Item = (&'static str, CutlassConfig)>,
    ) -> Option<&'static str> {
        if !self.form.is_volume() {
            return None;
        }
        if self.grid(p, from).iter().product::<u64>() >= 2 * caps.compute_units as u64 {
            return None;
        }
        candidates
            .filter(|(_, c)| c.align == from.align && c.split_k == from.split_k)
            .filter(|(_, c)| self.tile(c) < self.tile(from))
            .min_by_key(|(_, c)| self.tile(c))
            .map(|(q, _)| q)
    }

    fn default_config(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        candidates: &mut dyn Iterator<Item = (&'static str, CutlassConfig)>,
    ) -> Option<&'static str> {
        self.fastest(p, caps, candidates)
    }

    fn timed_like(&self) -> Option<&'static str> {
        // One-element stores change only the epilogue: on a layer with K % 8 != 0 the nearest
        // measured problems (K % 8 == 0) timed the vector-store kernel, not this one.
        match self.form {
            Form::ScalarStores => Some(IGEMM.id),
            Form::VolumeScalarStores => Some(VOLUME.id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::Solver;
    use kiln_format::ConvSpec;

    fn h100() -> TargetCaps {
        crate::solvers::devices::h100()
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

    /// ResNet-50's first layer at N=32.
    fn resnet50_conv1(layout: Layout, t: DataType) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            n: 32,
            c: 3,
            k: 64,
            input: [1, 224, 224],
            filter: [1, 7, 7],
            pad: [0, 3, 3],
            stride: [1, 2, 2],
            layouts: [layout; 3],
            data_types: [t; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn nchw_plans_read_a_one_by_one_filter_in_place() {
        let p = |f: u32| {
            ConvProblem::new(ConvSpec {
                n: 1,
                c: 1024,
                k: 2048,
                input: [1, 14, 14],
                filter: [1, f, f],
                pad: [0, f / 2, f / 2],
                layouts: [Layout::Nchw; 3],
                data_types: [DataType::Fp16; 3],
                ..ConvSpec::default()
            })
            .unwrap()
        };
        let params = "64,64,64,32,32,5,8,1";
        let x_tiles = transpose_tiles(1, 1024, 14 * 14);
        assert_eq!(
            NCHW_IGEMM
                .launch_plan(&p(1), &crate::solvers::devices::h100(), params)
                .unwrap()
                .kernels[0]
                .grid[0] as u64,
            x_tiles
        );
        assert_eq!(
            NCHW_IGEMM
                .launch_plan(&p(3), &crate::solvers::devices::h100(), params)
                .unwrap()
                .kernels[0]
                .grid[0] as u64,
            (x_tiles + transpose_tiles(2048, 1024, 9)).min(TRANSPOSE_MAX_BLOCKS)
        );
    }

    #[test]
    fn strided_nchw_one_by_one_layers_copy_their_pixels_before_the_product() {
        // ResNet-50's downsampling 1x1 layers at N=32: 56 -> 28 and 14 -> 7, stride 2.
        let p = |c: u32, k: u32, hw: u32, stride: u32| {
            ConvProblem::new(ConvSpec {
                n: 32,
                c,
                k,
                input: [1, hw, hw],
                filter: [1, 1, 1],
                stride: [1, stride, stride],
                layouts: [Layout::Nchw; 3],
                data_types: [DataType::Fp32; 3],
                ..ConvSpec::default()
            })
            .unwrap()
        };
        let caps = h100();
        let to28 = p(256, 512, 56, 2);
        let plan = NCHW_GEMM_3XTF32
            .launch_plan(&to28, &caps, "64,64,32,32,32,4,4,1")
            .unwrap();
        let names: Vec<_> = plan.kernels.iter().map(|k| k.kernel).collect();
        assert_eq!(names, [SUBSAMPLE, FPROP]);
        assert_eq!(plan.library, 1);
        let copied = 32 * 256 * 28 * 28;
        assert_eq!(plan.workspace_bytes, copied * 4);
        assert_eq!(plan.kernels[0].grid[0] as u64, copied / 256);
        // Tiles over K = 512 output channels and 784 output pixels, one layer per image.
        assert_eq!(plan.kernels[1].grid, [8, 13, 32]);
        // 7x7 = 49 output pixels: only the one-element vector config.
        let to7 = p(1024, 2048, 14, 2);
        assert!(NCHW_GEMM_3XTF32
            .check(&to7, &caps, "64,64,32,32,32,4,4,1")
            .is_err());
        assert!(NCHW_GEMM_3XTF32
            .check(&to7, &caps, "64,64,16,32,32,4,1,1")
            .is_ok());
        // At stride 1 the product reads x in place: no copy, no workspace.
        let same = p(256, 64, 56, 1);
        let plan = NCHW_GEMM_3XTF32
            .launch_plan(&same, &caps, "64,64,32,32,32,4,4,1")
            .unwrap();
        assert_eq!(plan.kernels.len(), 1);
        assert_eq!(plan.workspace_bytes, 0);
        // The copy costs the strided layer more than its share of the product's traffic.
        let strided = NCHW_GEMM_3XTF32.estimated_ms(&to28, &caps, "64,64,32,32,32,4,4,1");
        let compact =
            NCHW_GEMM_3XTF32.estimated_ms(&p(256, 512, 28, 1), &caps, "64,64,32,32,32,4,4,1");
        assert!(strided.unwrap() > compact.unwrap());
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
        assert!(IGEMM.check(&ok, &caps, "128,64,64,64,32,4,8,1").is_ok());
        let nchw = ConvProblem::new(ConvSpec {
            layouts: [Layout::Nchw; 3],
            ..ok.spec()
        })
        .unwrap();
        assert_eq!(
            IGEMM.check(&nchw, &caps, "128,64,64,64,32,4,8,1"),
            Err("needs 2-D NHWC tensors")
        );
        let fp32 = nhwc(32, 64, 64, 56, 3, DataType::Fp32);
        assert!(IGEMM.check(&fp32, &caps, "128,64,64,64,32,4,8,1").is_err());
        assert!(THREE_TF32
            .check(&fp32, &caps, "64,64,32,32,32,4,4,1")
            .is_ok());
        let odd = nhwc(1, 3, 64, 224, 7, DataType::Fp16);
        assert_eq!(
            IGEMM.check(&odd, &caps, "64,64,64,32,32,4,2,1"),
            Err("C or K is not a multiple of the config's vector width")
        );
        let six = nhwc(1, 6, 64, 32, 3, DataType::Fp16);
        assert!(IGEMM.check(&six, &caps, "64,64,64,32,32,4,2,1").is_ok());
        // 128x256x64 in 3 stages needs 144 KiB: an H100 block has it, an sm_89 block not.
        let big = "128,256,64,64,64,3,8,1";
        assert!(IGEMM.check(&ok, &caps, big).is_ok());
        let ada = TargetCaps::describe(kiln_format::Vendor::Nvidia, "sm_89", "sm_89", 142);
        assert!(IGEMM.check(&ok, &ada, big).is_err());
        // 1x1 with C = 64: K = 64 has two 32-wide reduction tiles, not four.
        let one = nhwc(1, 64, 64, 7, 1, DataType::Fp32);
        assert!(THREE_TF32
            .check(&one, &caps, "64,64,32,32,32,4,4,4")
            .is_err());
    }

    #[test]
    fn grouped_problems_take_the_group_solver_within_its_limits() {
        let caps = h100();
        let grouped = |c: u32, k: u32, groups: u32, t: DataType| {
            ConvProblem::new(ConvSpec {
                groups,
                ..nhwc(32, c, k, 28, 3, t).spec()
            })
            .unwrap()
        };
        // ResNeXt-50's 512 channels in 32 groups: 16 a group, a 16-column tile.
        let p = grouped(512, 512, 32, DataType::Fp16);
        assert!(GROUPED.check(&p, &caps, "64,16,32,32,16,5,4,1").is_ok());
        assert_eq!(
            GROUPED.check(&p, &caps, "128,32,32,64,32,4,8,1"),
            Err("K/groups is not a multiple of the tile's N (a block within one group)")
        );
        assert_eq!(
            IGEMM.check(&p, &caps, "128,64,64,64,32,4,8,1"),
            Err("grouped convolution")
        );
        // The reduction runs over one group's channels: 16 x 9, not 512 x 9.
        assert_eq!(gemm_shape(&p), [32 * 28 * 28, 512, 16 * 9]);
        // 4 channels a group need 4-element loads; an ungrouped problem is not the group
        // solver's; FP32 is not built.
        let narrow = grouped(128, 128, 32, DataType::Fp16);
        assert_eq!(
            GROUPED.check(&narrow, &caps, "64,16,32,32,16,5,8,1"),
            Err("C/groups or K is not a multiple of the config's vector width")
        );
        assert_eq!(
            GROUPED.check(
                &nhwc(32, 64, 64, 28, 3, DataType::Fp16),
                &caps,
                "64,64,32,32,32,5,8,1"
            ),
            Err("not a grouped convolution (the ungrouped solvers serve it)")
        );
        assert!(GROUPED
            .check(
                &grouped(512, 512, 8, DataType::Fp32),
                &caps,
                "64,64,32,32,32,5,8,1"
            )
            .is_err());
        // No split-K: CUTLASS's group kernel has none.
        assert_eq!(
            GROUPED.check(
                &grouped(512, 512, 8, DataType::Bf16),
                &caps,
                "64,64,32,32,32,5,8,2"
            ),
            Err("split-K (CUTLASS's group fprop has none)")
        );
        let plan = GROUPED
            .launch_plan(&p, &caps, "64,16,32,32,16,5,4,1")
            .unwrap();
        // 25088 pixels in 64-row tiles, 512 channels in 16-column tiles.
        assert_eq!(plan.kernels[0].grid, [392, 32, 1]);
        assert_eq!(plan.kernels[0].block, [64, 1, 1]);
    }

    #[test]
    fn a_3d_grid_under_two_waves_takes_the_smallest_tile() {
        let caps = h100();
        let solver = crate::solvers::by_id("ConvCutlass3dFwd").unwrap();
        let key = |k: &str| ConvProblem::from_find_db_key(k).unwrap();
        // r3d_18's last stage at N=32: 128x128 tiles make 25 x 4 = 100 blocks on 132 SMs, and
        // on an H100 64x64 took 0.81 of their time.
        let late = key("512-2-7-7-3x3x3-512-2-7-7-32-1x1x1-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F");
        assert_eq!(
            solver.refit(&late, &caps, "128,128,32,64,64,4,8,1"),
            Some("64,64,32,32,32,5,8,1")
        );
        // Its first stage at N=32 (12,544 blocks): the measured tile stands.
        let early =
            key("64-16-56-56-3x3x3-64-16-56-56-32-1x1x1-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F");
        assert_eq!(solver.refit(&early, &caps, "128,128,32,64,64,4,8,1"), None);
        // 2-D layers keep their measured tiles.
        let flat = key("512-7-7-3x3-512-7-7-1-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F");
        let igemm = crate::solvers::by_id("ConvCutlassIgemmFwd").unwrap();
        assert_eq!(igemm.refit(&flat, &caps, "128,128,32,64,64,5,8,1"), None);
    }

    #[test]
    fn volumes_take_the_3d_solvers_and_pad_unaligned_channels() {
        let caps = h100();
        let volume = |c: u32, k: u32, f: [u32; 3], t: DataType| {
            ConvProblem::new(ConvSpec {
                spatial_dims: 3,
                n: 2,
                c,
                k,
                input: [16, 56, 56],
                filter: f,
                pad: f.map(|v| v / 2),
                layouts: [Layout::Ndhwc; 3],
                data_types: [t; 3],
                ..ConvSpec::default()
            })
            .unwrap()
        };
        let p = volume(64, 128, [3, 3, 3], DataType::Fp16);
        // M counts depth planes, K the filter's depth too.
        assert_eq!(gemm_shape(&p), [2 * 16 * 56 * 56, 128, 64 * 27]);
        assert!(VOLUME.check(&p, &caps, "128,64,64,64,32,4,8,1").is_ok());
        assert_eq!(
            IGEMM.check(&p, &caps, "128,64,64,64,32,4,8,1"),
            Err("needs 2-D NHWC tensors")
        );
        assert_eq!(
            VOLUME.check(
                &nhwc(2, 64, 128, 56, 3, DataType::Fp16),
                &caps,
                "128,64,64,64,32,4,8,1"
            ),
            Err("needs 3-D NDHWC tensors")
        );
        // Aligned channels: the library kernel alone, no workspace.
        let plan = VOLUME
            .launch_plan(&p, &caps, "128,64,64,64,32,4,8,1")
            .unwrap();
        assert_eq!(plan.kernels.len(), 1);
        assert_eq!(plan.workspace_bytes, 0);
        assert_eq!(
            plan.kernels[0].grid,
            [(2 * 16 * 56 * 56u32).div_ceil(128), 2, 1]
        );
        // An RGB stem: x and w padded to 8 channels first, both copies in the workspace.
        let stem = volume(3, 64, [3, 7, 7], DataType::Fp16);
        let plan = VOLUME
            .launch_plan(&stem, &caps, "64,64,32,32,32,5,8,1")
            .unwrap();
        assert_eq!(plan.kernels[0].kernel, PAD_CHANNELS);
        assert_eq!(plan.library, 1);
        let x = 2 * 16 * 56 * 56 * 8 * 2u64;
        let w = 64 * 3 * 7 * 7 * 8 * 2u64;
        assert_eq!(plan.workspace_bytes, copy_bytes(x) + copy_bytes(w));
        // 45 outputs: the one-element stores, timed like the vector-store kernel.
        let odd = volume(64, 45, [3, 1, 1], DataType::Bf16);
        assert_eq!(
            VOLUME.check(&odd, &caps, "128,64,64,64,32,4,8,1"),
            Err("K is not a multiple of the config's vector width")
        );
        assert!(VOLUME_SCALAR_OUT
            .check(&odd, &caps, "128,64,64,64,32,4,8,1")
            .is_ok());
        assert_eq!(Solver::timed_like(&VOLUME_SCALAR_OUT), Some(VOLUME.id));
        // FP32 through 3xTF32 (4-element vectors); grouped and fused volumes are not theirs.
        let fp32 = volume(64, 64, [3, 3, 3], DataType::Fp32);
        assert!(VOLUME_3XTF32
            .check(&fp32, &caps, "64,64,32,32,32,4,4,1")
            .is_ok());
        assert!(VOLUME.check(&fp32, &caps, "128,64,64,64,32,4,8,1").is_err());
        let grouped = ConvProblem::new(ConvSpec {
            groups: 4,
            ..p.spec()
        })
        .unwrap();
        assert_eq!(
            VOLUME.check(&grouped, &caps, "128,64,64,64,32,4,8,1"),
            Err("grouped convolution")
        );
        // NCDHW FP32: transposed into NDHWC copies and back, three launches.
        let ncdhw = ConvProblem::new(ConvSpec {
            layouts: [Layout::Ncdhw; 3],
            ..fp32.spec()
        })
        .unwrap();
        assert_eq!(
            VOLUME_3XTF32.check(&ncdhw, &caps, "64,64,32,32,32,4,4,1"),
            Err("needs 3-D NDHWC tensors")
        );
        let plan = VOLUME_NCHW_3XTF32
            .launch_plan(&ncdhw, &caps, "64,64,32,32,32,4,4,1")
            .unwrap();
        let names: Vec<&str> = plan.kernels.iter().map(|k| k.kernel).collect();
        assert_eq!(names, [NCHW_IN, FPROP, NCHW_OUT]);
        let pixels = 16 * 56 * 56u64;
        assert_eq!(
            plan.kernels[0].grid[0] as u64,
            (transpose_tiles(2, 64, pixels) + transpose_tiles(64, 64, 27))
                .min(TRANSPOSE_MAX_BLOCKS)
        );
        let bytes = |elements: u64| copy_bytes(elements * 4);
        assert_eq!(
            plan.workspace_bytes,
            bytes(2 * 64 * pixels) + bytes(64 * 64 * 27) + bytes(2 * 64 * pixels)
        );
    }

    #[test]
    fn stride_one_nchw_one_by_one_layers_are_a_batched_gemm_without_copies() {
        let caps = h100();
        let nchw = |c: u32, k: u32, hw: u32, f: u32, stride: u32| {
            ConvProblem::new(ConvSpec {
                n: 32,
                c,
                k,
                input: [1, hw, hw],
                filter: [1, f, f],
                pad: [0, f / 2, f / 2],
                stride: [1, stride, stride],
                ..ConvSpec::default()
            })
            .unwrap()
        };
        // ResNet-50's 256 -> 64 at 56x56: M = 64 channels, N = 3136 pixels, one image a layer.
        let p = nchw(256, 64, 56, 1, 1);
        let plan = NCHW_GEMM_3XTF32
            .launch_plan(&p, &caps, "64,64,32,32,32,4,4,1")
            .unwrap();
        assert_eq!(plan.kernels.len(), 1);
        assert_eq!(plan.kernels[0].grid, [1, 49, 32]);
        assert_eq!(plan.workspace_bytes, 0);
        // 7x7 maps (49 pixels) take the one-element config only.
        let small = nchw(2048, 512, 7, 1, 1);
        assert_eq!(
            NCHW_GEMM_3XTF32.check(&small, &caps, "64,64,16,32,32,4,4,1"),
            Err("C or the output pixels are not a multiple of the vector width")
        );
        assert!(NCHW_GEMM_3XTF32
            .check(&small, &caps, "64,64,16,32,32,4,1,1")
            .is_ok());
        // Not a product per image: a 3x3; and NHWC is the NHWC solvers'.
        assert_eq!(
            NCHW_GEMM_3XTF32.check(&nchw(64, 64, 56, 3, 1), &caps, "64,64,16,32,32,4,4,1"),
            Err("not a 1x1, unpadded layer (a product per image)")
        );
        assert_eq!(
            NCHW_GEMM_3XTF32.check(
                &nhwc(32, 256, 64, 56, 1, DataType::Fp32),
                &caps,
                "64,64,16,32,32,4,4,1"
            ),
            Err("needs NCHW or NCDHW tensors (the NHWC solvers serve NHWC)")
        );
    }

    #[test]
    fn strided_ncdhw_one_by_one_layers_copy_their_pixels_over_depth_too() {
        // r3d_18's downsampling 1x1x1 layer at N=1: 64 -> 128 channels, 16x56x56 -> 8x28x28.
        let caps = h100();
        let p = |stride: [u32; 3], layout: Layout| {
            ConvProblem::new(ConvSpec {
                spatial_dims: 3,
                n: 1,
                c: 64,
                k: 128,
                input: [16, 56, 56],
                filter: [1, 1, 1],
                stride,
                layouts: [layout; 3],
                data_types: [DataType::Fp32; 3],
                ..ConvSpec::default()
            })
            .unwrap()
        };
        let cfg = "64,64,16,32,32,6,4,1";
        let down = p([2, 2, 2], Layout::Ncdhw);
        let plan = NCHW_GEMM_3XTF32.launch_plan(&down, &caps, cfg).unwrap();
        let names: Vec<_> = plan.kernels.iter().map(|k| k.kernel).collect();
        assert_eq!(names, [SUBSAMPLE, FPROP]);
        // The copy holds C x Z*P*Q; the product tiles K = 128 and 8*28*28 = 6272 pixels.
        let copied = 64 * 8 * 28 * 28;
        assert_eq!(plan.workspace_bytes, copied * 4);
        assert_eq!(plan.kernels[1].grid, [2, 98, 1]);
        // A stride over height and width only copies every depth plane.
        let plan = NCHW_GEMM_3XTF32
            .launch_plan(&p([1, 2, 2], Layout::Ncdhw), &caps, cfg)
            .unwrap();
        assert_eq!(plan.workspace_bytes, 64 * 16 * 28 * 28 * 4);
        // At stride 1 the product reads x in place.
        let plan = NCHW_GEMM_3XTF32
            .launch_plan(&p([1, 1, 1], Layout::Ncdhw), &caps, cfg)
            .unwrap();
        assert_eq!((plan.kernels.len(), plan.workspace_bytes), (1, 0));
        // NDHWC is the NDHWC solvers'.
        assert_eq!(
            NCHW_GEMM_3XTF32.check(&p([2, 2, 2], Layout::Ndhwc), &caps, cfg),
            Err("needs NCHW or NCDHW tensors (the NHWC solvers serve NHWC)")
        );
        // Reading every second depth plane's rows costs less than reading all of them.
        let half = NCHW_GEMM_3XTF32.estimated_ms(&down, &caps, cfg).unwrap();
        let all = NCHW_GEMM_3XTF32
            .estimated_ms(&p([1, 2, 2], Layout::Ncdhw), &caps, cfg)
            .unwrap();
        assert!(half < all, "{half} vs {all}");
    }

    #[test]
    fn nchw_first_layers_pad_then_transpose_back() {
        let caps = h100();
        let p = resnet50_conv1(Layout::Nchw, DataType::Fp32);
        let cfg = "64,64,16,32,32,4,4,1";
        assert!(NCHW_FIRST_LAYER_3XTF32.check(&p, &caps, cfg).is_ok());
        assert!(FIRST_LAYER_3XTF32.check(&p, &caps, cfg).is_err());
        let plan = NCHW_FIRST_LAYER_3XTF32.launch_plan(&p, &caps, cfg).unwrap();
        let names: Vec<&str> = plan.kernels.iter().map(|k| k.kernel).collect();
        assert_eq!(names, [PAD_CHANNELS, FPROP, NCHW_OUT]);
        assert_eq!(plan.library, 1);
        // Padded x and w, then the NHWC y.
        let (pixels, taps) = (32 * 224 * 224u64, 64 * 49u64);
        let y = 32 * 64 * 112 * 112 * 4u64;
        assert_eq!(
            plan.workspace_bytes,
            padded_bytes(pixels, 4) + padded_bytes(taps, 4) + copy_bytes(y)
        );
        let wide = ConvProblem::new(ConvSpec { c: 8, ..p.spec() }).unwrap();
        assert_eq!(
            NCHW_FIRST_LAYER_3XTF32.check(&wide, &caps, cfg),
            Err("more than 4 input channels (a first-layer solver)")
        );
    }

    #[test]
    fn plans_match_cutlass_grids_and_workspace() {
        let p = nhwc(1, 512, 512, 7, 3, DataType::Fp16);
        let plan = IGEMM
            .launch_plan(&p, &crate::solvers::devices::h100(), "64,64,64,32,32,5,8,4")
            .unwrap();
        let k = &plan.kernels[0];
        assert_eq!(k.grid, [1, 8, 4]); // M = 49 pixels, N = 512 channels, 4 slices
        assert_eq!(k.block, [128, 1, 1]);
        assert_eq!(plan.workspace_bytes, 8 * 4);
        assert_eq!(
            IGEMM
                .launch_plan(&p, &crate::solvers::devices::h100(), "64,64,64,32,32,5,8,1")
                .unwrap()
                .workspace_bytes,
            0
        );
    }

    #[test]
    fn the_first_layer_pads_into_the_workspace_then_convolves() {
        let caps = h100();
        let conv1 = resnet50_conv1(Layout::Nhwc, DataType::Fp16);
        let q = "128,64,32,64,32,3,4,1";
        assert!(FIRST_LAYER.check(&conv1, &caps, q).is_ok());
        assert!(IGEMM.check(&conv1, &caps, "64,64,64,32,32,4,2,1").is_err());
        let plan = FIRST_LAYER
            .launch_plan(&conv1, &crate::solvers::devices::h100(), q)
            .unwrap();
        assert_eq!(plan.kernels.len(), 2);
        assert_eq!(
            (plan.kernels[0].kernel, plan.kernels[1].kernel),
            (PAD_CHANNELS, FPROP)
        );
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
            FIRST_LAYER.check(&wide, &caps, q),
            Err("more than 4 input channels (a first-layer solver)")
        );
    }

    #[test]
    fn scalar_stores_serve_the_output_channel_counts_vector_stores_cannot() {
        let caps = h100();
        let q8 = "64,64,64,32,32,5,8,1";
        // A decoder's RGB output: K = 3.
        let rgb = nhwc(1, 64, 3, 128, 3, DataType::Fp16);
        assert!(IGEMM.check(&rgb, &caps, q8).is_err());
        assert!(IGEMM_SCALAR_OUT.check(&rgb, &caps, q8).is_ok());
        // YOLO's 255-channel head: odd K, C = 512.
        let head = nhwc(1, 512, 255, 11, 1, DataType::Bf16);
        assert!(IGEMM_SCALAR_OUT.check(&head, &caps, q8).is_ok());
        assert!(IGEMM_SCALAR_OUT
            .check(&head, &caps, "64,64,64,32,32,4,2,1")
            .is_ok());
        // K a multiple of the width: the vector-store solver's.
        let even = nhwc(1, 64, 64, 28, 3, DataType::Fp16);
        assert_eq!(
            IGEMM_SCALAR_OUT.check(&even, &caps, q8),
            Err("K is a multiple of the vector width (vector stores serve it)")
        );
        // Loads over C stay vectors.
        let odd_c = nhwc(1, 12, 3, 28, 3, DataType::Fp16);
        assert_eq!(
            IGEMM_SCALAR_OUT.check(&odd_c, &caps, q8),
            Err("C is not a multiple of the config's vector width")
        );
        assert!(IGEMM_SCALAR_OUT
            .check(&nhwc(1, 64, 3, 28, 3, DataType::Fp32), &caps, q8)
            .is_err());
    }

    #[test]
    fn fp32_first_layers_have_their_own_solvers() {
        let caps = h100();
        let conv1 = nhwc(32, 3, 64, 224, 7, DataType::Fp32);
        let q = "64,64,16,32,32,4,4,1";
        assert!(FIRST_LAYER_3XTF32.check(&conv1, &caps, q).is_ok());
        assert!(FIRST_LAYER.check(&conv1, &caps, q).is_err());
        let plan = FIRST_LAYER_3XTF32
            .launch_plan(&conv1, &crate::solvers::devices::h100(), q)
            .unwrap();
        assert_eq!(plan.kernels.len(), 2);
        let x4 = (32 * 224 * 224 * 4 * 4u64).div_ceil(256) * 256;
        let w4 = (64 * 7 * 7 * 4 * 4u64).div_ceil(256) * 256;
        assert_eq!(plan.workspace_bytes, x4 + w4);
    }

    #[test]
    fn wide_nchw_tiles_are_offered_only_where_they_fill_the_gpu() {
        let caps = h100();
        let nchw = |n, hw| {
            ConvProblem::new(ConvSpec {
                layouts: [Layout::Nchw; 3],
                ..nhwc(n, 128, 128, hw, 3, DataType::Fp32).spec()
            })
            .unwrap()
        };
        let q = "64,128,16,32,64,4,4,4";
        // ResNet-50's 128-channel 3x3 layer at N=32: 392 x 1 tiles of 64 x 128.
        let big = nchw(32, 28);
        assert!(NCHW_3XTF32_WIDE.check(&big, &caps, q).is_ok());
        assert!(NCHW_3XTF32_WIDE.worth_trying_params(&big, &caps, q).is_ok());
        // At N=1, 13 x 1 tiles on 132 SMs: it can run it, but is not offered.
        let small = nchw(1, 28);
        assert!(NCHW_3XTF32_WIDE.check(&small, &caps, q).is_ok());
        assert_eq!(
            NCHW_3XTF32_WIDE.worth_trying_params(&small, &caps, q),
            Err("its tiles leave SMs idle on this problem (split-K aside)")
        );
        assert!(NCHW_3XTF32
            .worth_trying_params(&small, &caps, "64,64,32,32,32,4,4,1")
            .is_ok());
    }

    #[test]
    fn nchw_problems_run_the_nhwc_kernel_between_two_transposes() {
        let caps = h100();
        let nchw = |t| {
            ConvProblem::new(ConvSpec {
                layouts: [Layout::Nchw; 3],
                ..nhwc(32, 64, 128, 56, 3, t).spec()
            })
            .unwrap()
        };
        let (fp16, fp32) = (nchw(DataType::Fp16), nchw(DataType::Fp32));
        let q = "64,64,64,32,32,5,8,1";
        assert!(NCHW_IGEMM.check(&fp16, &caps, q).is_ok());
        assert_eq!(
            NCHW_IGEMM.check(&nhwc(32, 64, 128, 56, 3, DataType::Fp16), &caps, q),
            Err("needs 2-D NCHW tensors (the NHWC solvers serve NHWC)")
        );
        assert!(IGEMM.check(&fp16, &caps, q).is_err());
        assert!(NCHW_3XTF32
            .check(&fp32, &caps, "64,64,32,32,32,4,4,1")
            .is_ok());
        let plan = NCHW_IGEMM
            .launch_plan(&fp16, &crate::solvers::devices::h100(), q)
            .unwrap();
        let kernels: Vec<&str> = plan.kernels.iter().map(|k| k.kernel).collect();
        assert_eq!(kernels, [NCHW_IN, FPROP, NCHW_OUT]);
        assert_eq!(plan.library, 1);
        // The library kernel: M = 32 x 56 x 56 pixels in 64-row tiles, K = 128 in 64.
        assert_eq!(plan.kernels[1].grid, [1568, 2, 1]);
        // In: x is 32 matrices of 64 x 3136 (2 x 98 tiles each), w 128 of 64 x 9 (2 x 1).
        assert_eq!(plan.kernels[0].grid, [32 * 2 * 98 + 128 * 2, 1, 1]);
        assert_eq!(plan.kernels[0].block, [32, 8, 1]);
        // Out: y is 32 matrices of 3136 x 128 (98 x 4 tiles).
        assert_eq!(plan.kernels[2].grid, [32 * 98 * 4, 1, 1]);
        let x = 32 * 64 * 56 * 56 * 2u64;
        let w = 128 * 64 * 9 * 2u64;
        let y = 32 * 128 * 56 * 56 * 2u64;
        let round = |b: u64| b.div_ceil(256) * 256;
        assert_eq!(plan.workspace_bytes, round(x) + round(w) + round(y));
        // Split-K semaphores come after the copies.
        let split = NCHW_IGEMM
            .launch_plan(
                &fp16,
                &crate::solvers::devices::h100(),
                "64,64,64,32,32,5,8,4",
            )
            .unwrap();
        assert_eq!(split.workspace_bytes, plan.workspace_bytes + 1568 * 2 * 4);
        // The transforms cost time the NHWC solver does not pay.
        assert!(
            NCHW_IGEMM
                .estimated_ms(&fp16, &crate::solvers::devices::h100(), q)
                .unwrap()
                > IGEMM
                    .estimated_ms(
                        &nhwc(32, 64, 128, 56, 3, DataType::Fp16),
                        &crate::solvers::devices::h100(),
                        q
                    )
                    .unwrap()
        );
    }

    #[test]
    fn the_model_prefers_split_k_for_a_small_deep_layer_and_big_tiles_for_a_big_one() {
        let small = nhwc(1, 512, 512, 7, 3, DataType::Fp16);
        let one = IGEMM
            .estimated_ms(
                &small,
                &crate::solvers::devices::h100(),
                "64,64,64,32,32,5,8,1",
            )
            .unwrap();
        let four = IGEMM
            .estimated_ms(
                &small,
                &crate::solvers::devices::h100(),
                "64,64,64,32,32,5,8,4",
            )
            .unwrap();
        assert!(four < one, "{four} vs {one}");
        let big = nhwc(32, 256, 256, 28, 3, DataType::Fp16);
        assert!(
            IGEMM
                .estimated_ms(
                    &big,
                    &crate::solvers::devices::h100(),
                    "128,128,64,64,64,3,8,1"
                )
                .unwrap()
                <= IGEMM
                    .estimated_ms(
                        &big,
                        &crate::solvers::devices::h100(),
                        "64,64,64,32,32,5,8,4"
                    )
                    .unwrap()
        );
    }
}
