//! kiln's own Hopper solvers (`kernels/nv/wgmma_conv.cu`): NHWC FP16/BF16 convolution, and FP32
//! convolution in the opt-in TF32 math mode, as the GEMM `y[N*P*Q, K] = A[N*P*Q, R*S*C] * w[K, R*S*C]^T`, with TMA loads into a shared-memory
//! ring and wgmma tensor-core products (sm_90a code objects: they load on compute capability
//! 9.0 only).
//!
//! * `ConvWgmmaGemm1x1Fwd`: 1x1 filter, stride 1, no padding: A is x, read as a matrix.
//! * `ConvWgmmaImplicitGemmFwd`: any 2-D filter, stride, padding and dilation TMA's im2col mode
//!   can express: A is gathered from x by the TMA unit, one filter tap and 128 bytes of channels
//!   per load.
//! * `ConvWgmmaGemm1x1GatedFwd`, `ConvWgmmaImplicitGemmGatedFwd`: the two kernels above for
//!   layers whose x a squeeze-and-excitation gate multiplies (`+gate`), the producer
//!   warpgroup's idle warps scaling each stage (`KILN_GATED`; no other object carries that
//!   code). A gated layer never measured is ranked by its plain twin's records of the plain
//!   solvers.
//! * `ConvWgmmaImplicitGemm3dFwd`: the im2col kernel over NDHWC tensors (3-D convolution), a
//!   5-D im2col map gathering one filter tap (t, r, s) per load.
//! * `ConvWgmmaImplicitGemm3dSwapFwd`: the 3-D kernel with the products transposed, for layers
//!   of at most 64 output channels.
//! * `ConvWgmmaGroupedFwd`: grouped convolution (2-D or 3-D) on the transposed kernel, the
//!   groups folded into its 64-channel tiles (`KILN_GROUPED`).
//! * `ConvWgmmaGemm1x1Tf32Fwd`, `ConvWgmmaImplicitGemmTf32Fwd`: the same kernels for FP32 data
//!   multiplied as TF32 (manifest `math = "tf32"`: only problems that opt in).
//!
//! The kernels take one argument, `KilnTmaConvParams`: TMA tensor maps of x and w (and, for the
//! persistent kernels' epilogue, of y and the residual z) that kiln encodes on the host through
//! the driver at prepare time, y's address, the sizes and the geometry. A launch patches the
//! maps' addresses for its buffers (`cuTensorMapReplaceAddress`, a host-only call). The
//! persistent kernels stage each output tile in TMA's swizzled layout: z arrives in it by one
//! tensor copy per 128-byte box and y leaves it the same way, or, where y or z is a channel
//! slice of a wider tensor, by the threads' 16-byte copies. Perf config: `bm,bn,stages,splits` (block tile rows, a multiple of 64: one
//! consumer warpgroup per 64; block tile output channels, 64, 128 or 256; pipeline stages;
//! split-K slices, a run-time value; 0 is stream-K). Problems with more tiles than SMs launch
//! the persistent entry, the others one block per tile. Split-K adds the slices' FP32 partials
//! in a second kernel, or, where they would be large, inside one thread-block cluster per tile
//! through distributed shared memory (`Config::cluster_split`). Stream-K launches one block per SM, each
//! taking an even share of the steps of every tile laid end to end; a tile split between blocks
//! is finished in the same launch by the block that computed its first steps, from the others'
//! FP32 partials (flags in the workspace, zeroed before each launch). Every block must be
//! resident at once (the grid is at most one block per SM), as in CUTLASS's stream-K.

use kiln_format::{ConvProblem, DataType, Layout};

use super::caps::RESERVED_SHARED_PER_BLOCK;
use super::params::{tile_fill, values, volume};
use super::{
    KernelLaunch, LaunchPlan, NotApplicable, TargetCaps, TmaArguments, TmaOperand, TmaView,
    TunableSolver,
};
use crate::backend::{TensorMapShape, TmaBoxes};

/// The 1x1 solver's id.
pub const ID: &str = "ConvWgmmaGemm1x1Fwd";

/// The im2col solver's id.
pub const IMPLICIT_GEMM_ID: &str = "ConvWgmmaImplicitGemmFwd";

/// The 1x1 solver's id for layers whose x is gated (`+gate`): objects with the scaler code.
pub const GATED_ID: &str = "ConvWgmmaGemm1x1GatedFwd";

/// The im2col solver's id for layers whose x is gated (`+gate`).
pub const IMPLICIT_GEMM_GATED_ID: &str = "ConvWgmmaImplicitGemmGatedFwd";

/// Each gated solver beside the plain solver whose objects it builds with the scaler code: a
/// gated problem never measured is ranked by its plain twin's records of the plain solver.
pub const GATED_SIBLINGS: [(&str, &str); 2] =
    [(ID, GATED_ID), (IMPLICIT_GEMM_ID, IMPLICIT_GEMM_GATED_ID)];

/// The im2col solver's id with steps of 16 or 32 channels, for inputs of few channels.
pub const IMPLICIT_GEMM_NARROW_ID: &str = "ConvWgmmaImplicitGemmNarrowFwd";

/// The 3-D im2col solver's id.
pub const IMPLICIT_GEMM_3D_ID: &str = "ConvWgmmaImplicitGemm3dFwd";

/// The 3-D im2col solver's id with the products transposed (one warpgroup per 64 channels).
pub const IMPLICIT_GEMM_3D_SWAP_ID: &str = "ConvWgmmaImplicitGemm3dSwapFwd";

/// The grouped solver's id: groups folded into the transposed kernel's 64-channel tiles.
pub const GROUPED_ID: &str = "ConvWgmmaGroupedFwd";

/// Output channels of the grouped solver's tiles (`KILN_BN`, one consumer warpgroup).
const GROUP_TILE: u32 = 64;

/// Output channels per group at least for the grouped solver: its products spend
/// `64 / group_out` times the groups' own multiply-adds, and the mma.sync kernel for narrow
/// groups keeps the narrower ones.
const GROUP_MIN_OUT: u32 = 4;

/// The 1x1 solver's id for FP32 data in TF32 math.
pub const TF32_ID: &str = "ConvWgmmaGemm1x1Tf32Fwd";

/// The im2col solver's id for FP32 data in TF32 math.
pub const IMPLICIT_GEMM_TF32_ID: &str = "ConvWgmmaImplicitGemmTf32Fwd";

/// Every wgmma solver's id (they share a block shape: a producer warpgroup and one consumer
/// warpgroup per 64 rows).
#[cfg(test)]
pub const IDS: [&str; 9] = [
    ID,
    IMPLICIT_GEMM_ID,
    GATED_ID,
    IMPLICIT_GEMM_GATED_ID,
    IMPLICIT_GEMM_NARROW_ID,
    IMPLICIT_GEMM_3D_ID,
    TF32_ID,
    IMPLICIT_GEMM_TF32_ID,
    FIRST_LAYER_ID,
];

/// TMA im2col corners: signed 8-bit per spatial dimension of a 4-D tensor, signed 5-bit of a
/// 5-D one (the driver's `cuTensorMapEncodeIm2col`).
const CORNER_LIMIT: i64 = 128;
const CORNER_LIMIT_5D: i64 = 16;

/// Bytes of the reduction one pipeline stage holds per row: one 128-byte swizzle row
/// (`KILN_BK` elements: 64 FP16/BF16, 32 FP32), unless the config narrows the step.
const ROW_BYTES: u32 = 128;

/// Channels per step of the narrow-step solver (`KILN_STEP_CHANNELS`): 64- and 32-byte rows
/// of FP16/BF16, the narrower wgmma swizzles.
const NARROW_STEPS: [u32; 2] = [16, 32];

/// Input channels at most for the narrow-step solver: where a 64-channel step is at least half
/// padding.
const NARROW_MAX_CHANNELS: u32 = 32;

/// Bytes of one element of `p`'s tensors (the solvers take FP16, BF16 and FP32).
fn element_bytes(p: &ConvProblem) -> u32 {
    if p.data_types()[0] == DataType::Fp32 {
        4
    } else {
        2
    }
}

/// A perf config, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    rows: u32,
    cols: u32,
    stages: u32,
    /// Split-K slices (a run-time value: the same code object for every count); 0: stream-K.
    splits: u32,
    /// Channels per step where the config narrows it (`rows,cols,stages,channels,splits`);
    /// `None`: one 128-byte row (`rows,cols,stages,splits`).
    step: Option<u32>,
}

/// The largest block tile (rows x columns) a gated object is built for (`KILN_GATED`): the
/// 128 x 256 and 256 x 128 persistent entries already spill a little without the scaler code.
const GATE_MAX_PRODUCTS: u32 = 192 * 128;

/// The most images a gated tile's rows may span (`KILN_GATE_IMAGES`): the scaler threads
/// hold one 16-byte chunk of the stage's gate slice each, 8 an image.
const GATE_MAX_IMAGES: u64 = 12;

/// What a gated problem's kernel adds to its block's shared memory: past the z barriers'
/// [`Z_BARRIER_BYTES`], a barrier per stage and the stage's gate slice (16-byte aligned).
fn gate_shared_bytes(stages: u32) -> u32 {
    Z_BARRIER_BYTES + (stages * 8).next_multiple_of(16) + GATE_MAX_IMAGES as u32 * 128
}

/// Bytes of stream-K flags at the workspace's start (`KILN_SK_FLAGS_BYTES`): one 32-bit word
/// per block and consumer warpgroup, zeroed before each launch.
const STREAM_K_FLAGS_BYTES: u64 = 4096;

impl Config {
    fn parse(params: &str) -> Option<Config> {
        let (rows, cols, stages, step, splits) = match *values(params).as_slice() {
            [rows, cols, stages, splits] => (rows, cols, stages, None, splits),
            [rows, cols, stages, step, splits] if NARROW_STEPS.contains(&step) => {
                (rows, cols, stages, Some(step), splits)
            }
            _ => return None,
        };
        (rows % 64 == 0
            && (64..=256).contains(&rows)
            && matches!(cols, 32 | 64 | 96 | 128 | 160 | 192 | 256)
            && stages >= 2
            && splits <= 64)
            .then_some(Config {
                rows,
                cols,
                stages,
                splits,
                step,
            })
    }

    /// `KILN_BK`: reduction elements per stage.
    fn block_k(&self, element_bytes: u32) -> u32 {
        self.step.unwrap_or(ROW_BYTES / element_bytes)
    }

    /// Bytes of one stage row (`KILN_ROW_BYTES`).
    fn row_bytes(&self, element_bytes: u32) -> u32 {
        self.block_k(element_bytes) * element_bytes
    }

    /// One producer warpgroup and one consumer warpgroup per 64 rows.
    fn threads(&self) -> u32 {
        (self.rows / 64 + 1) * 128
    }

    /// Bytes of the pipeline stages.
    fn stage_bytes(&self, element_bytes: u32) -> u32 {
        self.stages * (self.rows + self.cols) * self.row_bytes(element_bytes)
    }

    /// The stages, their barriers and the alignment: what every entry's block takes.
    fn base_shared_bytes(&self, element_bytes: u32) -> u32 {
        self.stage_bytes(element_bytes) + self.stages * 16 + 1024
    }

    /// The persistent entry's block with two TMA epilogue tiles of rows x cols elements and
    /// the z barriers.
    fn two_tile_shared_bytes(&self, element_bytes: u32) -> u32 {
        self.base_shared_bytes(element_bytes)
            + 2 * self.rows * self.cols * element_bytes
            + Z_BARRIER_BYTES
    }

    /// Whether the persistent kernel double-buffers its TMA epilogue's output tile
    /// (`KILN_EPILOGUE_AHEAD`): where the object has that epilogue (`tma_epilogue`) and two
    /// tiles fit beside the stages in what sm_90 gives a block. Each consumer warpgroup then
    /// copies the next unit's z in while it finishes this one, and writes y while the previous
    /// unit's store is still reading the other tile.
    fn epilogue_ahead(&self, tma_epilogue: bool, element_bytes: u32) -> bool {
        tma_epilogue && self.two_tile_shared_bytes(element_bytes) <= SM90_SHARED_PER_BLOCK
    }

    /// `KILN_SHARED_BYTES`: the stages; the persistent kernel's output staging tile (rows x
    /// (cols x element bytes / 4 + 4) 32-bit words, or two TMA epilogue tiles of rows x cols
    /// elements: `epilogue_ahead`) and its z barriers; two 8-byte barriers per stage; and 1 KiB
    /// to align the stages to the 1024-byte swizzle atom.
    fn shared_bytes(&self, persistent: bool, tma_epilogue: bool, element_bytes: u32) -> u32 {
        if !persistent {
            self.base_shared_bytes(element_bytes)
        } else if self.epilogue_ahead(tma_epilogue, element_bytes) {
            self.two_tile_shared_bytes(element_bytes)
        } else {
            self.base_shared_bytes(element_bytes)
                + self.rows * (self.cols * element_bytes / 4 + 4) * 4
                + Z_BARRIER_BYTES
        }
    }

    /// Output tiles.
    fn tiles(&self, p: &ConvProblem) -> u64 {
        gemm_rows(p).div_ceil(self.rows as u64) * (p.k() as u64).div_ceil(self.cols as u64)
    }

    /// Work units: output tiles times split-K slices.
    fn units(&self, p: &ConvProblem) -> u64 {
        self.tiles(p) * self.splits.max(1) as u64
    }

    fn stream_k(&self) -> bool {
        self.splits == 0
    }

    /// Stream-K blocks: one per SM (every block resident at once), at most one per
    /// reduction step.
    fn stream_k_blocks(&self, p: &ConvProblem, caps: &TargetCaps) -> u64 {
        (self.tiles(p) * reduction_steps(p, self)).min(caps.compute_units as u64)
    }

    /// Whether `p` runs a persistent entry (one block per SM): stream-K, or more work units
    /// than SMs. Else one block per unit, which measured about 10% faster where every unit
    /// gets its own SM.
    fn persistent(&self, p: &ConvProblem, caps: &TargetCaps) -> bool {
        self.stream_k() || self.units(p) > caps.compute_units as u64
    }

    /// Whether `p`'s split-K slices are reduced in a thread-block cluster (one cluster per
    /// tile, one block per slice: the partials travel through distributed shared memory into
    /// the stages of the block that stores them) rather than through FP32 partials in the
    /// workspace and a second kernel. Where the one-tile kernel runs, the cluster is at most
    /// the device's portable size (8 on sm_90), the partials a block receives fit its stages
    /// (the block ranked g % splits stores consumer warpgroup g's 64 rows and receives the
    /// other slices' partials of them), and the workspace's partials would be at least
    /// [`CLUSTER_MIN_PARTIAL_BYTES`].
    fn cluster_split(&self, p: &ConvProblem, caps: &TargetCaps) -> bool {
        let consumers = self.rows / 64;
        let splits = self.splits.max(1);
        let received = consumers.div_ceil(splits) * (splits - 1) * 64 * self.cols * 4;
        let partial_bytes = splits as u64 * gemm_rows(p) * p.k() as u64 * 4;
        (2..=caps.max_cluster).contains(&splits)
            && !self.persistent(p, caps)
            && received <= self.stage_bytes(element_bytes(p))
            && partial_bytes >= CLUSTER_MIN_PARTIAL_BYTES
    }
}

/// Split-K partials (FP32, every slice) from which the cluster reduction replaces the
/// workspace pass. Measured on the H100 over ResNet-50 NHWC (FP16, BF16, TF32; N = 1 and 32;
/// `benches/runs/2026-11-24-h100/`): each of the 59 configs with at least 8 MiB of partials
/// ran faster in a cluster (0.70-0.97x: writing the partials and reading them back costs more
/// than the cluster's two barriers), while with less (batch 1) clusters ran up to 2x slower:
/// short blocks wait at the cluster barrier for the slowest of their cluster, and a cluster
/// waits for free SMs of one GPC.
const CLUSTER_MIN_PARTIAL_BYTES: u64 = 8 << 20;

/// Shared memory sm_90 gives one block (227 KiB): `KILN_EPILOGUE_AHEAD`'s bound in the kernel.
const SM90_SHARED_PER_BLOCK: u32 = 232_448;

/// The persistent kernel's z barriers: two per consumer warpgroup (one per epilogue tile), at
/// most four warpgroups.
const Z_BARRIER_BYTES: u32 = 64;

/// What reducing split-K slices in a cluster adds to a launch, in the cost model: the blocks
/// meet at two cluster barriers, and a cluster waits for free SMs of one GPC. In the find logs
/// a 14x14 3x3 layer at N=32 with half the input channels (128 against ResNet-50's 256) took
/// 0.64x as long unsplit (128 x 128) but 0.94x split in two (192 x 128): about 0.006-0.01 ms
/// of the split's time does not shrink with the reduction. With 0.001 here the fallback gave
/// GoogLeNet's 14x14 layers at N=32 the split config (p90 regret 1.226); every value from
/// 0.004 to 0.012 gives 1.128 and leaves every other row of the regret report as it is or
/// better (the report, `kiln-tools regret`).
const CLUSTER_SPLIT_MS: f64 = 0.006;

/// Whether a tile of `cols` columns, between the powers of two, fits `k` output channels: it
/// pads them no more than 64-column tiles do and less than 128-column ones (160 channels: one
/// 160-column tile, where 128-column tiles compute 256 columns in twice the blocks' time).
fn between_powers_fit(k: u32, cols: u32) -> bool {
    let padding = |t: u32| k.div_ceil(t) * t - k;
    padding(cols) <= padding(64) && padding(cols) < padding(128)
}

/// Elements of one 16-byte vector: the TMA row alignment and the epilogue's store width.
fn vector_elems(p: &ConvProblem) -> u32 {
    16 / element_bytes(p)
}

/// Whether K fills whole 16-byte vectors, so the epilogue's 16-byte stores, the residual's
/// copies and the split-K partials' rows stay aligned.
fn k_vectors(p: &ConvProblem) -> bool {
    p.k().is_multiple_of(vector_elems(p))
}

/// The residual is staged with 16-byte copies (`kiln_stage_z_issue`): its rows must hold whole
/// vectors, whatever K the epilogue's element stores take.
fn residual_fits(p: &ConvProblem) -> Result<(), NotApplicable> {
    if p.fusion().residual && !k_vectors(p) {
        return Err("a residual needs K in multiples of 16 bytes");
    }
    Ok(())
}

/// Rows of the GEMM: output pixels (or voxels) of every image.
fn gemm_rows(p: &ConvProblem) -> u64 {
    p.n() as u64 * volume(p.output())
}

/// Input channels one output tile reduces over: all of them, or, for a grouped problem on
/// the grouped solver's 64-channel tiles, those of the groups a tile meets, the most any
/// tile meets (`group_tile_in`): 64 / 8 groups of 8 channels (64), one group of 128 (128), or
/// up to two groups of 48 (96).
fn tile_input_channels(p: &ConvProblem) -> u64 {
    if p.groups() <= 1 {
        // Dense: every channel, padded to whole 16-byte vectors where the solver pads them.
        return (p.c() as u64).next_multiple_of(vector_elems(p) as u64);
    }
    let (group_in, group_out) = (p.group_channels() as u64, (p.k() / p.groups()) as u64);
    let (k, tile) = (p.k() as u64, GROUP_TILE as u64);
    let groups_met = (0..k.div_ceil(tile))
        .map(|t| ((t * tile + tile).min(k) - 1) / group_out - t * tile / group_out + 1)
        .max()
        .unwrap_or(1);
    groups_met * group_in
}

/// Whether the grouped solver packs w first: groups that are not whole tiles (the other wgmma
/// solvers take no grouped problem).
fn packs_groups(p: &ConvProblem) -> bool {
    p.groups() > 1 && !(p.k() / p.groups()).is_multiple_of(GROUP_TILE)
}

/// Bytes of x and w with their channels padded to whole 16-byte vectors
/// (`kiln_wgmma_pad_channels`, [`Wgmma::pads_channels`]): where packed w starts, and the end.
fn padded_bytes(p: &ConvProblem) -> (u64, u64) {
    let c = tile_input_channels(p);
    let [x, _, _] = p.element_counts();
    let e = element_bytes(p) as u64;
    let x_padded = x / p.c() as u64 * c * e;
    let w_at = x_padded.next_multiple_of(256);
    (w_at, w_at + p.k() as u64 * volume(p.filter()) * c * e)
}

/// Steps of the main loop: `KILN_BK` channels of one filter tap each.
fn reduction_steps(p: &ConvProblem, cfg: &Config) -> u64 {
    volume(p.filter()) * tile_input_channels(p).div_ceil(cfg.block_k(element_bytes(p)) as u64)
}

/// Bytes of the grouped solver's packed w: `[K, taps, tile input channels]`.
fn packed_group_bytes(p: &ConvProblem) -> u64 {
    p.k() as u64 * volume(p.filter()) * tile_input_channels(p) * element_bytes(p) as u64
}

/// Threads per block of the split-K reduction, and most blocks it launches per SM (it strides).
const REDUCE_THREADS: u32 = 256;
const REDUCE_BLOCKS_PER_SM: u64 = 8;

/// The kernel entries of a wgmma object (the manifest's `functions`, in this order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    /// One block per work unit.
    OneTile,
    /// Adds split-K slices' FP32 partials into y.
    Reduce,
    /// One block per SM, striding over the units.
    Persistent,
    /// One block per SM, each an even share of every tile's steps (TF32 objects only).
    StreamK,
}

/// The im2col corners of dimension `i` (0 = d, 1 = h, 2 = w): `(-pad, pad - (R - 1) *
/// dilation)`.
fn corners(p: &ConvProblem, i: usize) -> (i64, i64) {
    let pad = p.pad()[i] as i64;
    let reach = (p.filter()[i] as i64 - 1) * p.dilation()[i] as i64;
    (-pad, pad - reach)
}

/// One of the wgmma solvers.
pub struct Wgmma {
    id: &'static str,
    /// Whether A is gathered with TMA's im2col mode (else read as a matrix: 1x1 only).
    im2col: bool,
    /// FP32 data in TF32 math (else FP16 or BF16). The TF32 objects also carry the stream-K
    /// entry (split-K value 0): the only layers where it measured faster.
    tf32: bool,
    /// Steps of 16 or 32 channels (64- or 32-byte rows) for inputs of at most 32 channels;
    /// its configs name the step (`rows,cols,stages,channels,splits`).
    narrow: bool,
    /// 3-D (NDHWC) convolution: a 5-D im2col map (im2col solvers only).
    volume: bool,
    /// Products transposed (`KILN_SWAP`): one consumer warpgroup per 64 output channels, each
    /// spanning every pixel of the tile.
    swap: bool,
    /// Grouped convolution, the groups folded into the 64-channel tiles (`KILN_GROUPED`: with
    /// `swap` and `volume`; 2-D problems run one plane deep).
    grouped: bool,
    /// The objects built with the scaler code (`KILN_GATED`): problems whose x is gated
    /// (`+gate`) only, and no other solver takes those.
    gated: bool,
}

/// `ConvWgmmaGemm1x1Fwd`.
pub static GEMM_1X1: Wgmma = Wgmma {
    id: ID,
    im2col: false,
    tf32: false,
    narrow: false,
    volume: false,
    swap: false,
    grouped: false,
    gated: false,
};

/// `ConvWgmmaImplicitGemmFwd`.
pub static IMPLICIT_GEMM: Wgmma = Wgmma {
    id: IMPLICIT_GEMM_ID,
    im2col: true,
    tf32: false,
    narrow: false,
    volume: false,
    swap: false,
    grouped: false,
    gated: false,
};

/// `ConvWgmmaGemm1x1GatedFwd`.
pub static GEMM_1X1_GATED: Wgmma = Wgmma {
    id: GATED_ID,
    gated: true,
    ..GEMM_1X1
};

/// `ConvWgmmaImplicitGemmGatedFwd`.
pub static IMPLICIT_GEMM_GATED: Wgmma = Wgmma {
    id: IMPLICIT_GEMM_GATED_ID,
    gated: true,
    ..IMPLICIT_GEMM
};

/// `ConvWgmmaImplicitGemmNarrowFwd`.
pub static IMPLICIT_GEMM_NARROW: Wgmma = Wgmma {
    id: IMPLICIT_GEMM_NARROW_ID,
    im2col: true,
    tf32: false,
    narrow: true,
    volume: false,
    swap: false,
    grouped: false,
    gated: false,
};

/// `ConvWgmmaImplicitGemm3dFwd`.
pub static IMPLICIT_GEMM_3D: Wgmma = Wgmma {
    id: IMPLICIT_GEMM_3D_ID,
    im2col: true,
    tf32: false,
    narrow: false,
    volume: true,
    swap: false,
    grouped: false,
    gated: false,
};

/// `ConvWgmmaImplicitGemm3dSwapFwd`.
pub static IMPLICIT_GEMM_3D_SWAP: Wgmma = Wgmma {
    id: IMPLICIT_GEMM_3D_SWAP_ID,
    im2col: true,
    tf32: false,
    narrow: false,
    volume: true,
    swap: true,
    grouped: false,
    gated: false,
};

/// `ConvWgmmaGroupedFwd`.
pub static GROUPED: Wgmma = Wgmma {
    id: GROUPED_ID,
    im2col: true,
    tf32: false,
    narrow: false,
    volume: true,
    swap: true,
    grouped: true,
    gated: false,
};

/// `ConvWgmmaGemm1x1Tf32Fwd`.
pub static GEMM_1X1_TF32: Wgmma = Wgmma {
    id: TF32_ID,
    im2col: false,
    tf32: true,
    narrow: false,
    volume: false,
    swap: false,
    grouped: false,
    gated: false,
};

/// `ConvWgmmaImplicitGemmTf32Fwd`.
pub static IMPLICIT_GEMM_TF32: Wgmma = Wgmma {
    id: IMPLICIT_GEMM_TF32_ID,
    im2col: true,
    tf32: true,
    narrow: false,
    volume: false,
    swap: false,
    grouped: false,
    gated: false,
};

impl Wgmma {
    /// Whether the kernels multiply x's stages by the gate of a problem fusing `x_scale`
    /// (`kiln_scale_unit`): the gated solvers' objects (the FP16/BF16 2-D dense 1x1 and im2col
    /// kernels, which take only such problems and never pad channels), on tiles of at most
    /// [`GATE_MAX_PRODUCTS`] whose rows span at most [`GATE_MAX_IMAGES`] images, without
    /// stream-K.
    fn scales_x(&self, p: &ConvProblem, cfg: &Config) -> bool {
        let pixels = volume(p.output()).max(1);
        self.gated
            && !cfg.stream_k()
            && cfg.rows * cfg.cols <= GATE_MAX_PRODUCTS
            // A tile's rows may start mid-image: one image more than they fill.
            && (cfg.rows as u64).div_ceil(pixels) < GATE_MAX_IMAGES
    }

    /// Whether the solver copies x and w into the workspace with their channels padded to
    /// whole 16-byte vectors (TMA rows start 16-byte aligned) before the products: dense FP16
    /// or BF16 layers whose input channels do not fill them (r(2+1)d's 45, 230, 460 and 921),
    /// on the im2col solvers that step 64 channels. Not for 32 channels or fewer, whose
    /// 64-channel steps would be mostly zeros: RGB and other narrow inputs have the
    /// first-layer and CUDA-core kernels.
    fn pads_channels(&self, p: &ConvProblem) -> bool {
        self.im2col
            && !self.grouped
            && !self.gated
            && !self.narrow
            && !self.tf32
            && p.groups() == 1
            && p.c() > NARROW_MAX_CHANNELS
            && !p.c().is_multiple_of(vector_elems(p))
    }

    /// The grouped solver's rules for `p`'s groups: at least [`GROUP_MIN_OUT`] output channels
    /// a group, and each tile's input channels starting 16 bytes apart (TMA rows): whole
    /// 16-byte vectors a group, or groups that divide the tile into such vectors.
    fn group_fits(&self, p: &ConvProblem) -> Result<(), NotApplicable> {
        if p.groups() < 2 {
            return Err("dense convolution (the grouped solver's tiles fold groups)");
        }
        let (group_in, group_out) = (p.group_channels(), p.k() / p.groups());
        if group_out < GROUP_MIN_OUT {
            return Err("fewer than 4 output channels a group");
        }
        let vector = vector_elems(p);
        let whole_vectors = group_in.is_multiple_of(vector);
        let tiles_of_vectors = GROUP_TILE.is_multiple_of(group_out)
            && (GROUP_TILE / group_out * group_in).is_multiple_of(vector);
        if !whole_vectors && !tiles_of_vectors {
            return Err("a tile's input channels do not start 16 bytes apart");
        }
        Ok(())
    }

    /// The manifest function of an entry of this solver's object.
    fn kernel(&self, entry: Entry) -> &'static str {
        match (entry, self.im2col) {
            (Entry::Reduce, _) => "kiln_wgmma_splitk_reduce",
            (Entry::OneTile, true) => "kiln_wgmma_implicit_gemm",
            (Entry::OneTile, false) => "kiln_wgmma_gemm1x1",
            (Entry::Persistent, true) => "kiln_wgmma_implicit_gemm_persistent",
            (Entry::Persistent, false) => "kiln_wgmma_gemm1x1_persistent",
            (Entry::StreamK, true) => "kiln_wgmma_implicit_gemm_streamk",
            (Entry::StreamK, false) => "kiln_wgmma_gemm1x1_streamk",
        }
    }
}

impl TunableSolver for Wgmma {
    type Config = Config;
    const CONFIG_FORM: &'static str = "perf config is not bm,bn,stages[,channels],splits";

    fn id(&self) -> &'static str {
        self.id
    }

    fn parse(&self, params: &str) -> Option<Config> {
        Config::parse(params)
    }

    fn timed_like(&self) -> Option<&'static str> {
        // A gated object is its plain sibling's with the scaler warps added.
        GATED_SIBLINGS
            .iter()
            .find(|(_, gated)| *gated == self.id)
            .map(|(plain, _)| *plain)
    }

    fn applicable(&self, p: &ConvProblem, caps: &TargetCaps) -> Result<(), NotApplicable> {
        if self.gated && !p.fusion().x_scale {
            return Err("the gated objects take only problems whose x is gated (+gate)");
        }
        if self.grouped {
            self.group_fits(p)?;
        } else if p.groups() != 1 {
            return Err("grouped convolution");
        }
        if self.swap {
            // One warpgroup's products span 64 output channels. Past 64 the usual tiles were as
            // fast or faster (r3d_18's 128-channel 3x3x3 layer at N=32: 0.303 ms at best on
            // the 3-D kernel, 0.307 transposed). Grouped tiles hold 64 channels whatever K.
            if p.k() > 64 && !self.grouped {
                return Err("transposed products for at most 64 output channels");
            }
            if p.fusion().residual {
                return Err("transposed products take no residual");
            }
            if !k_vectors(p) {
                return Err("transposed products need K in multiples of 16 bytes");
            }
        }
        if !caps.is_sm(9, 0) {
            return Err("sm_90a code: runs on compute capability 9.0 only");
        }
        if self.tf32 && p.data_types()[0] != DataType::Fp32 {
            return Err("FP32 only (TF32 math)");
        }
        if !self.tf32 && !matches!(p.data_types()[0], DataType::Fp16 | DataType::Bf16) {
            return Err("FP16 or BF16 only");
        }
        if self.grouped {
            // 2-D problems run as one plane deep.
            if !matches!(p.layouts()[0], Layout::Nhwc | Layout::Ndhwc) {
                return Err("needs NHWC or NDHWC tensors");
            }
        } else if self.volume {
            if p.layouts()[0] != Layout::Ndhwc {
                return Err("needs 3-D NDHWC tensors");
            }
        } else if p.layouts()[0] != Layout::Nhwc {
            return Err("needs 2-D NHWC tensors");
        }
        if self.narrow && p.c() > NARROW_MAX_CHANNELS {
            return Err("narrow steps only for inputs of at most 32 channels");
        }
        if !self.im2col
            && (p.filter() != [1, 1, 1] || p.stride() != [1, 1, 1] || p.pad() != [0, 0, 0])
        {
            return Err("needs a 1x1 filter, stride 1 and no padding");
        }
        if self.im2col {
            // What TMA's im2col mode can express: traversal strides 1-8, corners within a
            // signed byte (5 bits for a 5-D tensor), filter offsets within 16 bits.
            let (first, limit) = if self.volume {
                (0, CORNER_LIMIT_5D)
            } else {
                (1, CORNER_LIMIT)
            };
            if p.stride()[first..].iter().any(|&u| u > 8) {
                return Err("stride past 8 (TMA traversal strides)");
            }
            for i in first..3 {
                let (lower, upper) = corners(p, i);
                if !(-limit..limit).contains(&lower) || !(-limit..limit).contains(&upper) {
                    return Err("padding or dilated filter extent past TMA's im2col corners");
                }
                let reach = (p.filter()[i] as u64 - 1) * p.dilation()[i] as u64;
                if reach > u16::MAX as u64 {
                    return Err("dilated filter extent past TMA's 16-bit im2col offsets");
                }
            }
        }
        // TMA rows must start 16-byte aligned. Any K: the epilogue stores element by element
        // where its 16-byte chunks would not be whole, but the residual's copies and the
        // split-K partials are 16 bytes a row chunk (see `valid`).
        if !p.c().is_multiple_of(vector_elems(p)) && !self.pads_channels(p) {
            return Err("C is not a multiple of 16 bytes");
        }
        residual_fits(p)?;
        if gemm_rows(p) > i32::MAX as u64 {
            return Err("output pixels past 32-bit indexing");
        }
        Ok(())
    }

    fn valid(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> Result<(), NotApplicable> {
        if self.swap {
            if cfg.cols != 64 {
                return Err("transposed products run 64-channel tiles");
            }
            if cfg.splits != 1 {
                return Err("transposed products run whole tiles only");
            }
        }
        if cfg.step.is_some() != self.narrow {
            return Err(if self.narrow {
                "perf config does not name the channels per step"
            } else {
                "perf config names channels per step (the narrow-step solver's)"
            });
        }
        if cfg.splits as u64 > reduction_steps(p, cfg) {
            return Err("more split-K slices than reduction steps");
        }
        if self.pads_channels(p) && cfg.splits != 1 {
            return Err("padded channels run whole tiles only (the workspace holds the copies)");
        }
        if cfg.splits > 1 && !k_vectors(p) && !cfg.cluster_split(p, caps) {
            return Err("split-K partials in the workspace need K in multiples of 16 bytes");
        }
        if cfg.stream_k() && !self.tf32 {
            return Err("stream-K is built into the TF32 objects only");
        }
        // The stream-K entry spills registers at 256 rows (two warpgroups' worth of owner
        // bookkeeping on top of 64 accumulators per thread).
        if cfg.stream_k() && cfg.rows > 128 {
            return Err("stream-K is built for tiles of at most 128 rows");
        }
        let tma_epilogue = self.tma_epilogue(cfg, element_bytes(p));
        if cfg.shared_bytes(cfg.persistent(p, caps), tma_epilogue, element_bytes(p))
            > caps.shared_per_block
        {
            return Err("tile needs more shared memory than this arch gives a block");
        }
        Ok(())
    }

    fn worth_trying(
        &self,
        p: &ConvProblem,
        _: &TargetCaps,
        cfg: &Config,
    ) -> Result<(), NotApplicable> {
        if let Some(step) = cfg.step {
            // The one step that fits: 16 channels for inputs of up to 16, else 32 (16-channel
            // steps on 32 channels pad nothing more and double the barrier rounds: measured
            // slower on every such layer of the find log).
            if step != if p.c() <= 16 { 16 } else { 32 } {
                return Err("narrow steps of 16 channels for inputs of up to 16, else 32");
            }
            // A 1x1 layer is memory-bound: the 128-byte rows of ConvWgmmaGemm1x1Fwd load the
            // same bytes in fewer steps (it matched or beat narrow steps on every 1x1 layer
            // of the find log).
            if p.filter()[1] * p.filter()[2] == 1 {
                return Err("narrow steps only for filters of several taps");
            }
        }
        // 32-column tiles only where a 64-column tile would be at least half padding (16-48
        // output channels, or a remainder of 1-32 past a multiple of 64): elsewhere they read
        // each A tile twice as often for nothing.
        if cfg.cols == 32 && !(1..=32).contains(&(p.k() % 64)) {
            return Err("32-column tiles only where a 64-column tile is at least half padding");
        }
        if !cfg.cols.is_power_of_two() && !between_powers_fit(p.k(), cfg.cols) {
            return Err("96-, 160- and 192-column tiles only where they pad less than 128 columns and no more than 64");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> LaunchPlan {
        let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
        let persistent = cfg.persistent(p, caps);
        let sms = caps.compute_units as u64;
        let (blocks, entry) = if cfg.stream_k() {
            (cfg.stream_k_blocks(p, caps), Entry::StreamK)
        } else if persistent {
            (sms, Entry::Persistent)
        } else {
            (cfg.units(p), Entry::OneTile)
        };
        let threads = if self.swap {
            (cfg.cols / 64 + 1) * 128
        } else {
            cfg.threads()
        };
        let mut shared = cfg.shared_bytes(
            persistent,
            self.tma_epilogue(cfg, element_bytes(p)),
            element_bytes(p),
        );
        // A gated problem's kernel also holds the scaled barriers and the gate slice.
        let scales_x = self.scales_x(p, cfg)
            && shared + gate_shared_bytes(cfg.stages) <= SM90_SHARED_PER_BLOCK;
        if scales_x {
            shared += gate_shared_bytes(cfg.stages);
        }
        let mut plan = LaunchPlan::single_with_shared(
            self.kernel(entry),
            [clamp(blocks), 1, 1],
            [threads, 1, 1],
            shared,
        );
        plan.scales_x = scales_x;
        // A first kernel that copies operands into the workspace (`PACK_THREADS`-thread
        // blocks striding over `items`), then the products; whole tiles only.
        let mut copy_first = |kernel: &'static str, items: u64, bytes: u64| {
            let copy = KernelLaunch {
                kernel,
                grid: [
                    clamp(items.div_ceil(PACK_THREADS as u64).min(sms * 8)),
                    1,
                    1,
                ],
                block: [PACK_THREADS, 1, 1],
                shared_bytes: 0,
                cluster: 1,
            };
            let _ = plan.kernels.insert(0, copy);
            plan.library = 1;
            plan.workspace_bytes = bytes;
        };
        if self.pads_channels(p) {
            // x and w with padded channels, 16 bytes a thread and step.
            let (_, end) = padded_bytes(p);
            copy_first("kiln_wgmma_pad_channels", end / 16, end);
            return plan;
        }
        if packs_groups(p) {
            // w packed block-diagonally, an element a thread and step.
            let bytes = packed_group_bytes(p);
            copy_first(
                "kiln_wgmma_group_pack",
                bytes / element_bytes(p) as u64,
                bytes,
            );
            return plan;
        }
        if cfg.stream_k() {
            // The flags, then one FP32 partial tile per block.
            plan.workspace_bytes =
                STREAM_K_FLAGS_BYTES + blocks * cfg.rows as u64 * cfg.cols as u64 * 4;
        }
        if cfg.cluster_split(p, caps) {
            // One cluster per tile; no workspace, no second kernel.
            plan.kernels[0].cluster = cfg.splits;
        } else if cfg.splits > 1 {
            // The slices' FP32 partials, then one pass adding them into y.
            let outputs = gemm_rows(p) * p.k() as u64;
            plan.workspace_bytes = cfg.splits as u64 * outputs * 4;
            let blocks = (outputs / vector_elems(p) as u64)
                .div_ceil(REDUCE_THREADS as u64)
                .clamp(1, REDUCE_BLOCKS_PER_SM * sms);
            let _ = plan.kernels.push(KernelLaunch {
                kernel: self.kernel(Entry::Reduce),
                grid: [blocks as u32, 1, 1],
                block: [REDUCE_THREADS, 1, 1],
                shared_bytes: 0,
                cluster: 1,
            });
        }
        plan
    }

    fn waits_on_predecessor(&self) -> bool {
        true
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &Config) -> f64 {
        let sms = caps.compute_units as f64;
        // Channels are read in whole `block_k` steps per tap: 144 FP16 channels cost 192.
        let (m, n, k) = (
            gemm_rows(p) as f64,
            p.k() as f64,
            (reduction_steps(p, cfg) * cfg.block_k(element_bytes(p)) as u64) as f64,
        );
        let splits = cfg.splits.max(1) as f64;
        let blocks = (m / cfg.rows as f64).ceil() * (n / cfg.cols as f64).ceil() * splits;
        // Sustained wgmma rate on these small GEMMs (measured 300-600 TFLOP/s on ResNet-50's
        // 1x1 layers in FP16; TF32's peak is half FP16's), HBM3 bandwidth, and a launch.
        let rate = if self.tf32 { 225_000.0 } else { 450_000.0 } * caps.throughput_scale();
        let compute_ms = if cfg.stream_k() {
            let fill = tile_fill(m, cfg.rows as f64) * tile_fill(n, cfg.cols as f64);
            let occupancy = (cfg.stream_k_blocks(p, caps) as f64 / sms).min(1.0);
            2.0 * m * n * k / (rate * fill * occupancy * 1e6)
        } else {
            // One block per SM (the stages fill its shared memory): blocks run in waves of SMs,
            // each a whole tile's work (padding included) plus, after the first, a fixed cost
            // (pipeline fill, epilogue). 64-column tiles run at 80% of the rate (each A tile
            // read from shared memory feeds half the columns). Both figures fitted on the find
            // log: they minimise the fallback's regret (`kiln-tools regret`).
            let waves = (blocks / sms).ceil();
            // Transposed products span the tile's pixels whatever its columns.
            let column_rate = match cfg.cols {
                _ if self.swap => 1.0,
                32 => 0.6,
                64 => 0.8,
                _ => 1.0,
            };
            let tile_ms =
                2.0 * (cfg.rows * cfg.cols) as f64 * k / splits / (rate * column_rate * 1e6 / sms);
            waves * tile_ms + (waves - 1.0) * 0.002
        };
        // x as the tiles read it: only the pixels under some window (a 1x1 filter at stride 2
        // reads a quarter of them).
        let [x, w, y] = p.element_counts();
        let read = (0..3)
            .map(|i| {
                let input = p.input()[i] as u64;
                let touched = p.output()[i] as u64 * p.filter()[i] as u64;
                touched.min(input) as f64 / input as f64
            })
            .product::<f64>();
        let bytes = (x as f64 * read + (w + y) as f64) * element_bytes(p) as f64;
        // Split-K in a cluster: partials through distributed shared memory, two cluster
        // barriers. Else it writes and reads back FP32 partials, in a second launch.
        let split_ms = if cfg.cluster_split(p, caps) {
            CLUSTER_SPLIT_MS
        } else if cfg.splits > 1 {
            2.0 * splits * m * n * 4.0 / 2.8e9 + 0.002
        } else if cfg.stream_k() {
            // Partial tiles out and back in, and the flags' memset.
            2.0 * (cfg.stream_k_blocks(p, caps) * (cfg.rows * cfg.cols) as u64 * 4) as f64 / 2.8e9
                + 0.001
        } else {
            0.0
        };
        // The grouped solver's packing: one more launch, w read and its packed copy written.
        // Padded channels: x and w read, their copies written, by one more launch.
        let pack_ms = if self.pads_channels(p) {
            ((x + w) as f64 * element_bytes(p) as f64 + padded_bytes(p).1 as f64) / 2.8e9 + 0.002
        } else if packs_groups(p) {
            (w as f64 * element_bytes(p) as f64 + packed_group_bytes(p) as f64) / 2.8e9 + 0.002
        } else {
            0.0
        };
        compute_ms.max(bytes / 2.8e9) + split_ms + pack_ms + 0.0025
    }

    /// The config the cost model ranks fastest, stream-K left out: measured on ResNet-50 it
    /// won 3 of 138 layers (TF32 at batch 32, by 2-7%), so it runs only where a perf-db record
    /// names it.
    fn tile(&self, cfg: &Config) -> u64 {
        cfg.rows as u64 * cfg.cols as u64
    }

    fn default_config(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        candidates: &mut dyn Iterator<Item = (&'static str, Config)>,
    ) -> Option<&'static str> {
        // Of configs the model times alike (all bound by memory), the widest tile: each column
        // tile reads its rows of x again (on a strided 1x1 layer at batch 512, 192 x 64 ran
        // 1.34x slower than 192 x 128).
        candidates
            .filter(|(_, c)| !c.stream_k())
            .map(|(q, c)| (q, self.estimate(p, caps, &c), c.cols))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(b.2.cmp(&a.2)))
            .map(|(q, _, _)| q)
    }

    /// For a power-of-two-column config whose tiles pad `p`'s output channels: the tile
    /// shaped for them, among the applicable configs with the same split and at most the
    /// same rows, the one the cost model ranks fastest. Where a 64-column tile is at least
    /// half padding, the 32-column tile of the same rows (in the find log's 148 narrow
    /// (problem, solver) pairs that ran both, 64 x 32 beat 64 x 64 on 114, median time ratio
    /// 0.97; 128 x 32 beat 128 x 64 on 128, median 0.91); where 96, 160 or 192 columns pad
    /// less than 128 (`between_powers_fit`), those tiles (160 channels at 14x14, batch 32: 64 x
    /// 160 in 5.1 us, 192 x 64 in 6.8). A neighbour whose output channels are a power of two
    /// never names either.
    fn refit(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        from: &Config,
        candidates: &mut dyn Iterator<Item = (&'static str, Config)>,
    ) -> Option<&'static str> {
        if !from.cols.is_power_of_two() {
            return None;
        }
        // The candidates are worth trying on `p`: 32-column and 96-192-column tiles are among
        // them only where `worth_trying` found them fitting `p`'s output channels. A 128-column
        // tile's 256-column counterpart too, where the output channels fill it: a neighbour
        // whose channels did not (640 across five 128-column tiles) never names it, while on 512
        // channels it ran 1.48x faster than the 128-column tile (r3d_18's last layers, N=32).
        // No narrower counterpart of a 256-column tile: tried, it raised the video layers'
        // regret (p90 1.15 -> 1.31).
        candidates
            .filter(|(_, c)| c.splits == from.splits && c.step == from.step)
            .filter(|(_, c)| {
                (from.cols == 64 && c.cols == 32 && c.rows == from.rows)
                    || (!c.cols.is_power_of_two() && c.rows <= from.rows)
                    || (from.cols == 128
                        && c.cols == 256
                        && c.rows == from.rows
                        && p.k().is_multiple_of(256))
            })
            // Ties (equal waves of equal tiles) to the fewer column tiles: each reads A once
            // more (192 channels at 14x14: 64 x 192 in 6.1 us, 128 x 96 in 6.3).
            .min_by(|(_, ca), (_, cb)| {
                let column_tiles = |c: &Config| p.k().div_ceil(c.cols);
                self.estimate(p, caps, ca)
                    .total_cmp(&self.estimate(p, caps, cb))
                    .then(column_tiles(ca).cmp(&column_tiles(cb)))
            })
            .map(|(q, _)| q)
    }

    fn tma_arguments(&self, p: &ConvProblem, _: &TargetCaps, cfg: &Config) -> Option<TmaArguments> {
        // Channels as the products see them: padded to whole 16-byte vectors where the solver
        // copies x and w so (the copies' maps, over the workspace).
        let pads = self.pads_channels(p);
        let (m, c, k) = (
            gemm_rows(p),
            if pads {
                tile_input_channels(p)
            } else {
                p.c() as u64
            },
            p.k() as u64,
        );
        let [d, h, w] = p.input();
        let [t, r, s] = p.filter();
        let [od, oh, ow] = p.output();
        let [stride_d, stride_h, stride_w] = p.stride();
        let taps = volume(p.filter());
        let block_k = cfg.block_k(element_bytes(p));
        let (x, w_map) = if self.im2col {
            let (lower_d, upper_d) = corners(p, 0);
            let (lower_h, upper_h) = corners(p, 1);
            let (lower_w, upper_w) = corners(p, 2);
            let x = if self.volume {
                // [N, D, H, W, C]: windows across rows, planes and images.
                TensorMapShape {
                    rank: 5,
                    dims: [c, w as u64, h as u64, d as u64, p.n() as u64],
                    swizzle: true,
                    boxes: TmaBoxes::Im2col {
                        lower: [lower_w as i32, lower_h as i32, lower_d as i32],
                        upper: [upper_w as i32, upper_h as i32, upper_d as i32],
                        channels: block_k,
                        pixels: cfg.rows,
                        traversal: [1, stride_w, stride_h, stride_d, 1],
                    },
                }
            } else {
                TensorMapShape {
                    rank: 4,
                    dims: [c, w as u64, h as u64, p.n() as u64, 1],
                    swizzle: true,
                    boxes: TmaBoxes::Im2col {
                        lower: [lower_w as i32, lower_h as i32, 0],
                        upper: [upper_w as i32, upper_h as i32, 0],
                        channels: block_k,
                        pixels: cfg.rows,
                        traversal: [1, stride_w, stride_h, 1, 1],
                    },
                }
            };
            (
                x,
                // [K, T*R*S, C]: a load past C reads zeros, not the next tap's weights. Grouped:
                // [K, T*R*S, the channels a tile reduces over] (w packed, or one group's w).
                TensorMapShape {
                    rank: 3,
                    dims: [tile_input_channels(p), taps, k, 1, 1],
                    boxes: TmaBoxes::Tiled([block_k, 1, cfg.cols, 1, 1]),
                    swizzle: true,
                },
            )
        } else {
            (
                TensorMapShape {
                    rank: 2,
                    dims: [c, m, 1, 1, 1],
                    boxes: TmaBoxes::Tiled([block_k, cfg.rows, 1, 1, 1]),
                    swizzle: true,
                },
                TensorMapShape {
                    rank: 2,
                    dims: [c, k, 1, 1, 1],
                    boxes: TmaBoxes::Tiled([block_k, cfg.cols, 1, 1, 1]),
                    swizzle: true,
                },
            )
        };
        let [pad_d, pad_h, pad_w] = p.pad();
        let [dil_d, dil_h, dil_w] = p.dilation();
        let packs = packs_groups(p);
        Some(TmaArguments {
            views: [
                TmaView {
                    operand: if pads {
                        TmaOperand::PackedX
                    } else {
                        TmaOperand::X
                    },
                    shape: x,
                },
                TmaView {
                    operand: if packs || pads {
                        TmaOperand::PackedW
                    } else {
                        TmaOperand::W
                    },
                    shape: w_map,
                },
            ],
            sizes: [m as i32, k as i32, c as i32],
            splits: cfg.splits as i32,
            geometry: [oh, ow, r, s, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w]
                .map(|v| v as i32),
            depth: [od, t, stride_d, pad_d, dil_d].map(|v| v as i32),
            input: [d, h, w].map(|v| v as i32),
            group_widths: if self.grouped {
                [
                    p.group_channels() as u64,
                    (p.k() / p.groups()) as u64,
                    tile_input_channels(p),
                ]
                .map(|v| v as i32)
            } else if pads {
                // The padding kernel reads the layer's channels as one group's input.
                [p.c() as i32, p.k() as i32, c as i32]
            } else {
                [0; 3]
            },
            // Grouped: packed w at the workspace's start. Padded channels: x's copy there, w's
            // after it.
            packing: (packs || pads).then(|| super::Packing {
                offsets: if pads {
                    [0, padded_bytes(p).0, 0]
                } else {
                    [0; 3]
                },
                row_elems: 0,
                lead: 0,
            }),
            zeroed_words: if cfg.stream_k() {
                (STREAM_K_FLAGS_BYTES / 4) as u32
            } else {
                0
            },
            epilogue_map: self.epilogue_map(p, cfg),
        })
    }
}

impl Wgmma {
    /// Whether the object holds the persistent kernel's TMA epilogue (`KILN_TMA_EPILOGUE`):
    /// not transposed, not the TF32 objects (which carry the stream-K entry instead), and
    /// tiles of whole 128-byte boxes of channels.
    fn tma_epilogue(&self, cfg: &Config, element_bytes: u32) -> bool {
        !self.swap && !self.tf32 && (cfg.cols * element_bytes).is_multiple_of(128)
    }

    /// The TMA epilogue's view of y and z: [M, K] matrices, one 128-byte swizzled box of
    /// channels by 64 rows per copy. Where the object has the epilogue and rows are a multiple
    /// of 16 bytes apart.
    fn epilogue_map(&self, p: &ConvProblem, cfg: &Config) -> Option<TensorMapShape> {
        let bytes = element_bytes(p) as u64;
        let applies = self.tma_epilogue(cfg, element_bytes(p))
            && !cfg.stream_k()
            && (p.k() as u64 * bytes).is_multiple_of(16);
        applies.then(|| TensorMapShape {
            rank: 2,
            dims: [p.k() as u64, gemm_rows(p), 1, 1, 1],
            boxes: TmaBoxes::Tiled([(128 / bytes) as u32, 64, 1, 1, 1]),
            swizzle: true,
        })
    }
}

/// The first-layer solver's id.
pub const FIRST_LAYER_ID: &str = "ConvWgmmaFirstLayerFwd";

/// The 3-D first-layer solver's id (RGB video stems).
pub const FIRST_LAYER_3D_ID: &str = "ConvWgmmaFirstLayer3dFwd";

/// `ConvWgmmaFirstLayerFwd`: a network's input layer (1 to 8 channels: RGB images) on Hopper
/// tensor cores. A first kernel packs x to 4 channels (stride 2) or 8 (stride 1), so that one
/// output pixel's window moves 16 bytes a pixel, packs w to match, and flags input rows holding
/// inf or NaN; the persistent second kernel loads, per unit of `bm` output pixels of one output
/// row, the filter's input rows with one TMA copy and multiplies them in place (the window
/// matrix is a wgmma operand whose core matrices overlap: no im2col gather), w resident in
/// shared memory. Perf config `bm,bn,stages,stride,mmas`: output pixels per unit (64 or 128),
/// output channels (16 to 128, at least K: one tile), patch stages, and the stride and the
/// wgmma products per unit (filter rows x packed row elements / 16) the object is built for.
///
/// The 3-D solver (`ConvWgmmaFirstLayer3dFwd`, `-DKILN_FL_DEPTH`) runs video stems the same
/// way: a unit's patch holds the filter's rows of each input plane it covers, the products run
/// plane after plane. Its configs add the filter depth: `bm,bn,stages,stride,mmas,depth`.
pub struct WgmmaFirstLayer {
    id: &'static str,
    /// Filters more than one plane deep (NDHWC), the depth a perf config's sixth value.
    volume: bool,
}

/// `ConvWgmmaFirstLayerFwd`.
pub static FIRST_LAYER: WgmmaFirstLayer = WgmmaFirstLayer {
    id: FIRST_LAYER_ID,
    volume: false,
};

/// `ConvWgmmaFirstLayer3dFwd`.
pub static FIRST_LAYER_3D: WgmmaFirstLayer = WgmmaFirstLayer {
    id: FIRST_LAYER_3D_ID,
    volume: true,
};

/// A first-layer perf config, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FirstLayerConfig {
    rows: u32,
    cols: u32,
    stages: u32,
    stride: u32,
    /// wgmma products per filter plane the object is built for (`KILN_FL_MMAS`): filter rows
    /// x packed row elements / 16.
    mmas: u32,
    /// Filter planes the object is built for (`KILN_FL_DEPTH`; 1 for 2-D).
    depth: u32,
}

/// Sizes of a first-layer solution that the kernel derives the same way
/// (`kiln_first_layout` in `wgmma_conv.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FirstLayerShape {
    /// Packed channels per pixel: 16 bytes per stride.
    cpad: u32,
    /// Zero taps before the filter's first, keeping each window 16-byte aligned.
    lead: u32,
    /// Packed elements per filter row (taps x cpad, rounded up to one wgmma's 16).
    row_elems: u32,
    /// Packed input row width in pixels (a whole number of 64-element blocks).
    packed_w: u32,
    /// Elements between a patch's first 64-element block and the unit's first window.
    skew: u32,
    /// 64-element (128-byte) blocks of one patch row: the unit's windows side by side.
    blocks: u32,
}

/// Filter planes at most for the 3-D first-layer solver: each adds one plane's w to shared
/// memory.
const FIRST_LAYER_MAX_DEPTH: u32 = 7;

impl FirstLayerConfig {
    /// `bm,bn,stages,stride,mmas`, or with `volume` those and the filter depth (2 to 7).
    fn parse(params: &str, volume: bool) -> Option<FirstLayerConfig> {
        let (rows, cols, stages, stride, mmas, depth) = match (values(params).as_slice(), volume) {
            (&[rows, cols, stages, stride, mmas], false) => (rows, cols, stages, stride, mmas, 1),
            (&[rows, cols, stages, stride, mmas, depth], true)
                if (2..=FIRST_LAYER_MAX_DEPTH).contains(&depth) =>
            {
                (rows, cols, stages, stride, mmas, depth)
            }
            _ => return None,
        };
        (matches!(rows, 64 | 128)
            && matches!(cols, 16 | 32 | 64 | 128)
            && stages >= 2
            && matches!(stride, 1 | 2)
            && mmas >= 1)
            .then_some(FirstLayerConfig {
                rows,
                cols,
                stages,
                stride,
                mmas,
                depth,
            })
    }

    /// Packed w elements of one filter plane: its rows, then zeros to a whole 64-element box
    /// (the kernel's `plane_boxes`).
    fn plane_elems(&self, p: &ConvProblem) -> u64 {
        (p.filter()[1] as u64 * self.shape(p).row_elems as u64).next_multiple_of(64)
    }

    fn shape(&self, p: &ConvProblem) -> FirstLayerShape {
        let cpad = 8 / self.stride;
        let lead = p.pad()[2] % self.stride;
        let row_elems = ((p.filter()[2] + lead) * cpad).next_multiple_of(16);
        let skew = (64 - (p.pad()[2] + lead) * cpad % 64) % 64;
        FirstLayerShape {
            cpad,
            lead,
            row_elems,
            packed_w: p.input()[2].next_multiple_of(64 / cpad),
            skew,
            blocks: (skew + (self.rows - 1) * 8 + row_elems).div_ceil(64),
        }
    }

    /// Shared bytes: w (64-element boxes of `cols` rows, whole boxes per filter plane), the
    /// patch stages (the planes' rows of 128-byte blocks, each stage rounded to 1 KiB), the
    /// output staging tile, the barriers (two per stage and w's), and 1 KiB of alignment.
    fn shared_bytes(&self, p: &ConvProblem) -> u64 {
        let shape = self.shape(p);
        let r = p.filter()[1] as u64;
        let depth = self.depth as u64;
        let w_boxes = depth * self.plane_elems(p) / 64;
        let patch = (shape.blocks as u64 * 128 * r * depth).next_multiple_of(1024);
        w_boxes * self.cols as u64 * 128
            + self.stages as u64 * patch
            + self.rows as u64 * (self.cols as u64 / 2 + 4) * 4
            + self.stages as u64 * 16
            + 8
            + 1024
    }

    /// Threads per block (`KILN_FL_THREADS`): a warpgroup per 64 pixels and one producer warp
    /// (a 3-D block, which runs alone on its SM: a producer warpgroup, measured faster).
    fn threads(&self) -> u32 {
        self.rows / 64 * 128 + if self.depth > 1 { 128 } else { 32 }
    }

    /// Blocks side by side on one SM: the kernel's bound (`KILN_FL_BLOCKS_PER_SM`, which also
    /// caps its registers so that they fit) or as many as shared memory holds, whichever is
    /// fewer; at least one.
    fn blocks_per_sm(&self, p: &ConvProblem, caps: &TargetCaps) -> u64 {
        let bound = match (self.depth, self.rows, self.cols) {
            (2.., _, _) => 1,
            (_, 64, ..=32) => 4,
            (_, 64, _) => 3,
            (_, _, ..=32) => 2,
            _ => 1,
        };
        (caps.shared_per_unit as u64 / (self.shared_bytes(p) + RESERVED_SHARED_PER_BLOCK))
            .clamp(1, bound)
    }

    /// Work units: output rows (of every output plane) times `rows`-pixel tiles per row.
    fn units(&self, p: &ConvProblem) -> u64 {
        let [od, oh, ow] = p.output();
        p.n() as u64 * od as u64 * oh as u64 * (ow as u64).div_ceil(self.rows as u64)
    }

    /// Packed x, packed w (`[K, depth, plane]`) and the row flags, each from a 256-byte
    /// boundary.
    fn workspace(&self, p: &ConvProblem) -> ([u64; 3], u64) {
        let shape = self.shape(p);
        let [d, h, _] = p.input();
        let rows = p.n() as u64 * d as u64 * h as u64;
        let x = rows * shape.packed_w as u64 * shape.cpad as u64 * 2;
        let w = p.k() as u64 * self.depth as u64 * self.plane_elems(p) * 2;
        let w_at = x.next_multiple_of(256);
        let flags_at = (w_at + w).next_multiple_of(256);
        ([0, w_at, flags_at], flags_at + rows * 4)
    }
}

/// Threads per block of the packing kernel, and the input rows one block packs (one a warp).
const PACK_THREADS: u32 = 256;
const PACK_ROWS: u64 = 8;

impl TunableSolver for WgmmaFirstLayer {
    type Config = FirstLayerConfig;
    const CONFIG_FORM: &'static str = "perf config is not bm,bn,stages,stride,mmas (stride 1 or 2)";

    fn id(&self) -> &'static str {
        self.id
    }

    fn parse(&self, params: &str) -> Option<FirstLayerConfig> {
        FirstLayerConfig::parse(params, self.volume)
    }

    fn applicable(&self, p: &ConvProblem, caps: &TargetCaps) -> Result<(), NotApplicable> {
        if !caps.is_sm(9, 0) {
            return Err("sm_90a code: runs on compute capability 9.0 only");
        }
        if !matches!(p.data_types()[0], DataType::Fp16 | DataType::Bf16) {
            return Err("FP16 or BF16 only");
        }
        if self.volume {
            if p.layouts()[0] != Layout::Ndhwc || p.filter()[0] < 2 {
                return Err("needs 3-D NDHWC tensors and a filter at least two planes deep");
            }
        } else if p.layouts()[0] != Layout::Nhwc || p.filter()[0] != 1 {
            return Err("needs 2-D NHWC tensors");
        }
        if p.groups() != 1 {
            return Err("grouped convolution");
        }
        if p.dilation() != [1, 1, 1] {
            return Err("dilated filter");
        }
        residual_fits(p)?;
        if gemm_rows(p) > i32::MAX as u64 {
            return Err("output pixels past 32-bit indexing");
        }
        Ok(())
    }

    fn valid(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        cfg: &FirstLayerConfig,
    ) -> Result<(), NotApplicable> {
        if p.stride()[2] != cfg.stride {
            return Err("built for another horizontal stride");
        }
        if p.filter()[0] != cfg.depth {
            return Err("built for another filter depth");
        }
        let shape = cfg.shape(p);
        if p.filter()[1] * shape.row_elems / 16 != cfg.mmas {
            return Err("built for another filter size (wgmma products per unit)");
        }
        if p.c() > shape.cpad {
            return Err("more input channels than the packed pixel holds (4 at stride 2, 8 at 1)");
        }
        if p.k() > cfg.cols {
            return Err("K exceeds the tile's output channels");
        }
        // TMA box extents are at most 256.
        if shape.blocks > 256 || p.filter()[1] > 256 {
            return Err("filter too wide or tall for one TMA box");
        }
        if cfg.shared_bytes(p) > caps.shared_per_block as u64 {
            return Err("tile needs more shared memory than this arch gives a block");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &FirstLayerConfig) -> LaunchPlan {
        let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
        let [d, h, _] = p.input();
        let w_elems = p.k() as u64 * cfg.depth as u64 * cfg.plane_elems(p);
        let pack_blocks = (p.n() as u64 * d as u64 * h as u64).div_ceil(PACK_ROWS)
            + w_elems.div_ceil(PACK_THREADS as u64);
        let mut plan = LaunchPlan::single(
            "kiln_wgmma_first_layer_pack",
            [clamp(pack_blocks), 1, 1],
            [PACK_THREADS, 1, 1],
        );
        let resident = caps.compute_units as u64 * cfg.blocks_per_sm(p, caps);
        let _ = plan.kernels.push(KernelLaunch {
            kernel: "kiln_wgmma_first_layer",
            grid: [clamp(cfg.units(p).min(resident)), 1, 1],
            block: [cfg.threads(), 1, 1],
            shared_bytes: clamp(cfg.shared_bytes(p)),
            cluster: 1,
        });
        plan.library = 1;
        plan.workspace_bytes = cfg.workspace(p).1;
        plan
    }

    fn waits_on_predecessor(&self) -> bool {
        true
    }

    fn packs_channels(&self) -> bool {
        true
    }

    fn estimate(&self, p: &ConvProblem, caps: &TargetCaps, cfg: &FirstLayerConfig) -> f64 {
        let shape = cfg.shape(p);
        let m = cfg.units(p) as f64 * cfg.rows as f64;
        let k = cfg.depth as f64 * p.filter()[1] as f64 * shape.row_elems as f64;
        let occupancy = (cfg.units(p) as f64 / caps.compute_units as f64).min(1.0);
        let rate = 450_000.0 * caps.throughput_scale();
        let compute_ms = 2.0 * m * cfg.cols as f64 * k / (rate * occupancy * 1e6);
        let [xn, _, yn] = p.element_counts();
        let packed = cfg.workspace(p).1 as f64;
        // Packing reads x and writes its copy; the main kernel reads the copy (mostly from
        // L2) and writes y.
        let pack_ms = (xn as f64 * 2.0 + packed) / 2.8e9 + 0.002;
        compute_ms.max((packed + yn as f64 * 2.0) / 2.8e9) + pack_ms + 0.0025
    }

    fn tile(&self, cfg: &FirstLayerConfig) -> u64 {
        cfg.rows as u64 * cfg.cols as u64
    }

    fn default_config(
        &self,
        p: &ConvProblem,
        caps: &TargetCaps,
        candidates: &mut dyn Iterator<Item = (&'static str, FirstLayerConfig)>,
    ) -> Option<&'static str> {
        self.fastest(p, caps, candidates)
    }

    fn tma_arguments(
        &self,
        p: &ConvProblem,
        _: &TargetCaps,
        cfg: &FirstLayerConfig,
    ) -> Option<TmaArguments> {
        let shape = cfg.shape(p);
        let [d, h, w] = p.input();
        let [t, r, s] = p.filter();
        let [od, oh, ow] = p.output();
        let [stride_d, stride_h, stride_w] = p.stride();
        let [pad_d, pad_h, pad_w] = p.pad();
        let (offsets, _) = cfg.workspace(p);
        Some(TmaArguments {
            views: [
                // Packed x as [N, D, H, packed_w * cpad / 64, 64]; a load is the unit's R rows
                // of each of its T planes, `blocks` 64-element blocks each, as they are (no
                // swizzle: the kernel's operand view).
                TmaView {
                    operand: TmaOperand::PackedX,
                    shape: TensorMapShape {
                        rank: 5,
                        dims: [
                            64,
                            (shape.packed_w * shape.cpad / 64) as u64,
                            h as u64,
                            d as u64,
                            p.n() as u64,
                        ],
                        boxes: TmaBoxes::Tiled([64, shape.blocks, r, t, 1]),
                        swizzle: false,
                    },
                },
                // Packed w as [K, T * plane], 64-element swizzled boxes of `cols` rows.
                TmaView {
                    operand: TmaOperand::PackedW,
                    shape: TensorMapShape {
                        rank: 2,
                        dims: [t as u64 * cfg.plane_elems(p), p.k() as u64, 1, 1, 1],
                        boxes: TmaBoxes::Tiled([64, cfg.cols, 1, 1, 1]),
                        swizzle: true,
                    },
                },
            ],
            sizes: [gemm_rows(p) as i32, p.k() as i32, p.c() as i32],
            splits: 1,
            geometry: [oh, ow, r, s, stride_h, stride_w, pad_h, pad_w, 1, 1].map(|v| v as i32),
            depth: [od as i32, t as i32, stride_d as i32, pad_d as i32, 1],
            input: [d as i32, h as i32, w as i32],
            group_widths: [0; 3],
            packing: Some(super::Packing {
                offsets,
                row_elems: shape.row_elems as i32,
                lead: shape.lead as i32,
            }),
            zeroed_words: 0,
            epilogue_map: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::Solver;
    use kiln_format::ConvSpec;

    #[test]
    fn thirty_two_column_tiles_apply_only_where_sixty_four_would_be_half_padding() {
        let h100 = crate::solvers::devices::h100();
        for (k, applies) in [
            (16, true),
            (32, true),
            (160, true),
            (48, false),
            (64, false),
            (256, false),
        ] {
            let p = nhwc(32, 528, k, 14, 1);
            assert_eq!(
                GEMM_1X1.check_offered(&p, &h100, "128,32,8,1").is_ok(),
                applies,
                "K = {k}"
            );
            assert!(
                GEMM_1X1.check_offered(&p, &h100, "128,64,6,1").is_ok(),
                "K = {k}"
            );
        }
    }

    #[test]
    fn output_channels_short_of_a_vector_take_every_path_but_the_16_byte_ones() {
        let h100 = crate::solvers::devices::h100();
        let key = |k: &str| ConvProblem::from_find_db_key(k).unwrap();
        // r2plus1d_18's 256 -> 460 spatial layer as 2-D: 460 FP16 channels end mid-vector.
        let p = key("256-14-14-3x3-460-14-14-128-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F");
        let s = &IMPLICIT_GEMM;
        assert!(s.check(&p, &h100, "128,256,3,1").is_ok());
        // A channel slice and an epilogue are stored the same way.
        let sliced = key(
            "256-14-14-3x3-460-14-14-128-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F+scale+bias+relu+ld464",
        );
        assert!(s.check(&sliced, &h100, "128,256,3,1").is_ok());
        // The residual's 16-byte copies are not.
        let residual = key("256-14-14-3x3-460-14-14-128-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F+add");
        assert_eq!(
            s.check(&residual, &h100, "128,256,3,1"),
            Err("a residual needs K in multiples of 16 bytes")
        );
        // One output channel, with a bias: its scale and bias load one element at a time.
        let single = key("64-14-14-1x1-1-14-14-2-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F+bias");
        assert!(GEMM_1X1.check(&single, &h100, "64,32,8,1").is_ok());
        // C short of a vector: x and w are copied with padded channels first (see
        // `input_channels_short_of_a_vector_are_padded_into_the_workspace`).
        let narrow_c = key("230-14-14-3x3-256-14-14-128-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F");
        assert!(s.check(&narrow_c, &h100, "128,256,3,1").is_ok());
        assert_eq!(
            GEMM_1X1.check(
                &key("230-14-14-1x1-256-14-14-128-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F"),
                &h100,
                "128,256,3,1"
            ),
            Err("C is not a multiple of 16 bytes")
        );
        // Split-K: workspace partials (batch 1, few tiles, under the cluster's partial bytes)
        // are rows of 16-byte vectors; in a cluster the slices meet in shared memory.
        let deep = key("512-7-7-3x3-460-7-7-1-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F");
        let split = Config::parse("128,128,4,4").unwrap();
        assert!(!split.cluster_split(&deep, &h100));
        assert_eq!(
            s.check(&deep, &h100, "128,128,4,4"),
            Err("split-K partials in the workspace need K in multiples of 16 bytes")
        );
        assert!(s.check(&deep, &h100, "128,128,4,1").is_ok());
        let aligned = key("512-7-7-3x3-464-7-7-1-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F");
        assert!(s.check(&aligned, &h100, "128,128,4,4").is_ok());
        // FP32 (TF32) vectors are 4 elements: 250 ends mid-vector, 252 does not.
        for (k, whole) in [(250, false), (252, true)] {
            let p = key(&format!(
                "128-9-11-1x1-{k}-9-11-1-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-F"
            ));
            assert_eq!(k_vectors(&p), whole, "K = {k}");
        }
    }

    #[test]
    fn a_one_plane_rgb_stem_runs_on_the_first_layer_kernel_as_its_planes() {
        let h100 = crate::solvers::devices::h100();
        let key = |k: &str| ConvProblem::from_find_db_key(k).unwrap();
        // r2plus1d_18's stem: 3 channels, 1x7x7, 45 outputs. Its 3 channels fill no 8-byte
        // vector, so other 2-D solvers leave it 3-D; the first-layer kernel packs them itself.
        let stem =
            key("3-16-112-112-1x7x7-45-16-56-56-2-0x3x3-1x2x2-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F");
        let planes = key("3-112-112-7x7-45-56-56-32-3x3-2x2-1x1-0-NHWC-NHWC-NHWC-FP16-F");
        assert_eq!(crate::solvers::folded(&stem), None);
        assert_eq!(FIRST_LAYER.runs_as(&stem, &h100), planes);
        assert!(FIRST_LAYER.check(&stem, &h100, "64,64,6,2,14").is_ok());
        assert_eq!(IMPLICIT_GEMM.runs_as(&stem, &h100), stem);
        // Its residual would be staged with 16-byte copies: declined.
        let with_residual =
            key("3-112-112-7x7-45-56-56-32-3x3-2x2-1x1-0-NHWC-NHWC-NHWC-FP16-F+add");
        assert_eq!(
            FIRST_LAYER.check(&with_residual, &h100, "64,64,6,2,14"),
            Err("a residual needs K in multiples of 16 bytes")
        );
        // A tile narrower than K still declines it.
        assert_eq!(
            FIRST_LAYER.check(&stem, &h100, "64,32,6,2,14"),
            Err("K exceeds the tile's output channels")
        );
    }

    #[test]
    fn an_rgb_video_stem_runs_on_the_three_d_first_layer_kernel_plane_after_plane() {
        let h100 = crate::solvers::devices::h100();
        let key = |k: &str| ConvProblem::from_find_db_key(k).unwrap();
        // r3d_18's stem: 3 channels, 3x7x7, stride 1x2x2, 64 outputs.
        let stem =
            key("3-16-112-112-3x7x7-64-16-56-56-32-1x3x3-1x2x2-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F");
        let s = &FIRST_LAYER_3D;
        let q = "64,64,4,2,14,3";
        assert!(s.check(&stem, &h100, q).is_ok());
        assert!(FIRST_LAYER.check(&stem, &h100, "64,64,4,2,14").is_err());
        // Each solver reads its own config form.
        assert!(s.parse("64,64,4,2,14").is_none());
        assert!(FIRST_LAYER.parse(q).is_none());
        assert!(s.parse("64,64,4,2,14,8").is_none());
        let deeper =
            key("3-16-112-112-5x7x7-64-12-56-56-1-0x3x3-1x2x2-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F");
        assert_eq!(
            s.check(&deeper, &h100, q),
            Err("built for another filter depth")
        );
        let plan = s.launch_plan(&stem, &h100, q).unwrap();
        // Packing: 32 x 16 x 112 input rows, 8 a block, then 64 x 3 planes of 256 weights (7
        // rows of 32 and zeros to whole boxes) in 256-thread blocks.
        assert_eq!(plan.kernels[0].grid, [32 * 16 * 112 / 8 + 64 * 3, 1, 1]);
        // One block an SM: 32 x 16 x 56 units of one 56-pixel output row; a consumer and a
        // producer warpgroup.
        assert_eq!(plan.kernels[1].grid, [132, 1, 1]);
        assert_eq!(plan.kernels[1].block, [256, 1, 1]);
        // w: 3 planes of 4 boxes of 64 x 128 B; 4 patches of 3 x 7 rows of 10 128-byte blocks
        // (48 skew + 63 x 8 + 32 = 584 elements; 26,880 -> 27,648 B); the staging tile;
        // barriers; alignment.
        assert_eq!(
            plan.kernels[1].shared_bytes,
            12 * 64 * 128 + 4 * 27_648 + 64 * 36 * 4 + 64 + 8 + 1024
        );
        let args = s.tma_block(&stem, &h100, q).unwrap().unwrap();
        assert_eq!(args.views[0].shape.dims, [64, 7, 112, 16, 32]);
        assert_eq!(
            args.views[0].shape.boxes,
            TmaBoxes::Tiled([64, 10, 7, 3, 1])
        );
        assert_eq!(args.views[1].shape.dims, [3 * 256, 64, 1, 1, 1]);
        assert_eq!(args.depth, [16, 3, 1, 1, 1]);
        assert_eq!(args.input, [16, 112, 112]);
        let x_bytes = 32u64 * 16 * 112 * 112 * 4 * 2;
        let w_at = x_bytes.next_multiple_of(256);
        let flags_at = (w_at + 64 * 3 * 256 * 2).next_multiple_of(256);
        assert_eq!(args.packing.unwrap().offsets, [0, w_at, flags_at]);
        assert_eq!(plan.workspace_bytes, flags_at + 32 * 16 * 112 * 4);
        // The cost model ranks it ahead of the CUTLASS 3-D kernel that ran it (2.1x cuDNN).
        let cutlass = crate::solvers::cutlass::VOLUME
            .estimated_ms(&stem, &h100, "64,64,32,32,32,5,8,1")
            .unwrap();
        let ours = s.estimated_ms(&stem, &h100, q).unwrap();
        assert!(ours < cutlass, "{ours} against {cutlass}");
    }

    #[test]
    fn input_channels_short_of_a_vector_are_padded_into_the_workspace() {
        let h100 = crate::solvers::devices::h100();
        let key = |k: &str| ConvProblem::from_find_db_key(k).unwrap();
        // r(2+1)d's 460 -> 256 temporal layer: it folds to 2-D (a 3x1 filter over 4 x 196
        // images), whose 460 FP16 channels (920 bytes a pixel) TMA cannot address.
        let p =
            key("460-4-14-14-3x1x1-256-4-14-14-32-1x0x0-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F");
        let s = &IMPLICIT_GEMM;
        let q = "128,256,3,1";
        assert!(s.check(&p, &h100, q).is_ok());
        let flat = s.runs_as(&p, &h100);
        assert!(s.pads_channels(&flat));
        let plan = s.launch_plan(&p, &h100, q).unwrap();
        let kernels: Vec<_> = plan.kernels.iter().map(|k| k.kernel).collect();
        assert_eq!(
            kernels,
            [
                "kiln_wgmma_pad_channels",
                "kiln_wgmma_implicit_gemm_persistent"
            ]
        );
        assert_eq!(plan.library, 1);
        // x's copy (32 x 4 x 196 pixels of 464 channels), then w's (256 x 3 taps x 464) from
        // a 256-byte boundary.
        let x_bytes = 32u64 * 4 * 196 * 464 * 2;
        let w_at = x_bytes.next_multiple_of(256);
        assert_eq!(plan.workspace_bytes, w_at + 256 * 3 * 464 * 2);
        let args = s.tma_block(&p, &h100, q).unwrap().unwrap();
        assert_eq!(args.views[0].operand, TmaOperand::PackedX);
        assert_eq!(args.views[1].operand, TmaOperand::PackedW);
        assert_eq!(args.views[0].shape.dims[0], 464);
        assert_eq!(args.views[1].shape.dims, [464, 3, 256, 1, 1]);
        assert_eq!(args.sizes[2], 464);
        assert_eq!(args.group_widths, [460, 256, 464]);
        assert_eq!(args.packing.unwrap().offsets, [0, w_at, 0]);
        // Whole tiles only: the workspace holds the copies, not split-K's partials.
        assert_eq!(
            s.check(&p, &h100, "128,128,4,2"),
            Err("padded channels run whole tiles only (the workspace holds the copies)")
        );
        // 3-D too: r(2+1)d's 45 channels stay 3-D (narrower than 8-byte vectors).
        let temporal =
            key("45-16-56-56-3x1x1-64-16-56-56-32-1x0x0-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F");
        assert!(IMPLICIT_GEMM_3D.pads_channels(&IMPLICIT_GEMM_3D.runs_as(&temporal, &h100)));
        assert!(IMPLICIT_GEMM_3D
            .check(&temporal, &h100, "128,64,6,1")
            .is_ok());
        // Not the narrow-step, TF32 or grouped solvers, nor aligned channels.
        assert!(!IMPLICIT_GEMM_NARROW.pads_channels(&flat));
        assert!(!s.pads_channels(&key(
            "464-4-14-14-3x1x1-256-4-14-14-32-1x0x0-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F"
        )));
    }

    #[test]
    fn narrow_steps_load_sixteen_or_thirty_two_channels_for_inputs_of_at_most_thirty_two() {
        let h100 = crate::solvers::devices::h100();
        let narrow = &IMPLICIT_GEMM_NARROW;
        // GoogLeNet's 16 -> 32 3x3 layer at 28x28, batch 32.
        let p = strided(32, 16, 32, 28, 3, 1, 1);
        assert!(narrow.check_offered(&p, &h100, "64,32,8,16,1").is_ok());
        // 16 channels take the 16-channel step only; 1x1 filters take none.
        assert!(narrow.check_offered(&p, &h100, "128,64,8,32,1").is_err());
        let thirty_two = strided(32, 32, 128, 7, 3, 1, 1);
        assert!(narrow
            .check_offered(&thirty_two, &h100, "128,64,8,32,1")
            .is_ok());
        assert!(narrow
            .check_offered(&thirty_two, &h100, "128,64,8,16,1")
            .is_err());
        assert!(narrow
            .check_offered(&nhwc(32, 16, 96, 56, 1), &h100, "64,64,8,16,1")
            .is_err());
        // Each solver takes only its own config shape.
        assert!(narrow.check_offered(&p, &h100, "64,64,8,1").is_err());
        assert!(IMPLICIT_GEMM
            .check_offered(&p, &h100, "64,64,8,16,1")
            .is_err());
        assert!(
            Config::parse("64,64,8,24,1").is_none(),
            "steps of 16 or 32 channels"
        );
        // 48 channels: a 64-channel step is only a quarter padding.
        let wide = strided(32, 48, 128, 7, 3, 1, 1);
        assert!(narrow.check_offered(&wide, &h100, "64,64,8,16,1").is_err());
        // 16 channels a step: 32-byte rows (TMA and wgmma swizzle 32 B), one step per tap.
        let cfg = "64,64,8,16,1";
        let args = narrow
            .tma_block(&p, &crate::solvers::devices::h100(), cfg)
            .unwrap()
            .unwrap();
        match args.views[0].shape.boxes {
            TmaBoxes::Im2col {
                channels, pixels, ..
            } => assert_eq!((channels, pixels), (16, 64)),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            args.views[1].shape.boxes,
            TmaBoxes::Tiled([16, 1, 64, 1, 1])
        );
        let parsed = Config::parse(cfg).unwrap();
        assert_eq!(reduction_steps(&p, &parsed), 9);
        assert_eq!(reduction_steps(&p, &Config::parse("64,64,8,1").unwrap()), 9);
        // Stages of 32-byte rows: 8 x (64 + 64) x 32 bytes, the persistent kernel's two output
        // tiles (392 tiles: `epilogue_ahead`) and z barriers, the stages' barriers, the
        // alignment.
        assert_eq!(
            narrow
                .launch_plan(&p, &crate::solvers::devices::h100(), cfg)
                .unwrap()
                .kernels[0]
                .shared_bytes,
            8 * 128 * 32 + 2 * 64 * 64 * 2 + 64 + 128 + 1024
        );
        // The model counts the channels a step pads: 16 of 16, against 16 of 64.
        assert!(
            narrow
                .estimated_ms(&p, &crate::solvers::devices::h100(), "64,64,8,16,1")
                .unwrap()
                < IMPLICIT_GEMM
                    .estimated_ms(&p, &crate::solvers::devices::h100(), "64,64,8,1")
                    .unwrap()
        );
    }

    #[test]
    fn tiles_between_the_powers_of_two_apply_where_they_pad_less() {
        let h100 = crate::solvers::devices::h100();
        for (k, cols, applies) in [
            (160, 160, true),
            (160, 96, true),
            (192, 192, true),
            (144, 160, true),
            (96, 96, true),
            (320, 160, true),
            (960, 192, true),
            // Power-of-two tiles fit exactly, or pad less.
            (128, 96, false),
            (256, 160, false),
            (384, 192, false),
            (64, 96, false),
            (32, 96, false),
            (96, 160, false),
        ] {
            let p = nhwc(32, 512, k, 14, 1);
            let params = format!("64,{cols},6,1");
            assert_eq!(
                GEMM_1X1.check_offered(&p, &h100, &params).is_ok(),
                applies,
                "K = {k}, {cols} columns"
            );
        }
    }

    #[test]
    fn power_of_two_tiles_refit_to_the_columns_that_fit() {
        let h100 = crate::solvers::devices::h100();
        let solver = crate::solvers::by_id(ID).unwrap();
        for (k, from, to) in [
            (32, "64,64,8,1", Some("64,32,8,1")),
            (16, "128,64,6,1", Some("128,32,8,1")),
            // No 192 x 32 tile: 128 x 32 would double 192 x 64's waves (measured 9-16% slower
            // on GoogLeNet's 28x28 layers at batch 32).
            (16, "192,64,4,1", None),
            // 160 channels: one 160-column tile beats five 32-column ones in the model.
            (160, "64,64,8,1", Some("64,160,6,1")),
            // 192 channels: 64 x 192 (98 blocks, one wave) rather than 128 x 192 (49).
            (192, "192,128,4,1", Some("64,192,6,1")),
            // No padding, or less than half a tile of it.
            (64, "64,64,8,1", None),
            (48, "64,64,8,1", None),
            // No 32-column config splits the reduction; wider tiles are left as they are.
            (32, "64,64,8,4", None),
            (32, "128,128,4,1", None),
        ] {
            let p = nhwc(32, 528, k, 14, 1);
            assert_eq!(solver.refit(&p, &h100, from), to, "K = {k}, {from}");
        }
    }

    #[test]
    fn a_128_column_tile_refits_to_256_columns_where_the_channels_fill_them() {
        let h100 = crate::solvers::devices::h100();
        let solver = crate::solvers::by_id("ConvWgmmaImplicitGemm3dFwd").unwrap();
        // 512 channels: two full 256-column tiles, split-K kept.
        let p = ndhwc(32, 512, 512, [2, 7, 7], [3, 3, 3], [1, 1, 1]);
        assert_eq!(solver.refit(&p, &h100, "128,128,4,2"), Some("128,256,3,2"));
        assert_eq!(solver.refit(&p, &h100, "128,128,4,1"), Some("128,256,3,1"));
        // 640 channels would leave half of a third 256-column tile empty.
        let q = ndhwc(32, 640, 640, [2, 5, 5], [3, 3, 3], [1, 1, 1]);
        let refit = solver.refit(&q, &h100, "128,128,4,2");
        assert!(refit.is_none_or(|r| !r.contains(",256,")), "{refit:?}");
    }

    #[test]
    fn transposed_products_take_narrow_3d_layers_one_warpgroup_per_64_channels() {
        let h100 = crate::solvers::devices::h100();
        let s = &IMPLICIT_GEMM_3D_SWAP;
        let p = ndhwc(32, 64, 64, [16, 56, 56], [3, 3, 3], [1, 1, 1]);
        assert!(s.check(&p, &h100, "256,64,4,1").is_ok());
        // A producer warpgroup and one consumer warpgroup: 64 channels, whatever the pixels.
        let cfg = s.parse("256,64,4,1").unwrap();
        assert_eq!(s.plan(&p, &h100, &cfg).kernels[0].block, [256, 1, 1]);
        // Whole 64-channel tiles, no residual, at most 64 output channels.
        let fused = p
            .with_fusion(kiln_format::Fusion {
                residual: true,
                ..Default::default()
            })
            .unwrap();
        let wide = ndhwc(32, 64, 128, [16, 56, 56], [3, 3, 3], [1, 1, 1]);
        for (q, params, why) in [
            (&p, "256,64,4,2", "transposed products run whole tiles only"),
            (
                &p,
                "128,128,4,1",
                "transposed products run 64-channel tiles",
            ),
            (&fused, "256,64,4,1", "transposed products take no residual"),
            (
                &wide,
                "256,64,4,1",
                "transposed products for at most 64 output channels",
            ),
        ] {
            assert_eq!(s.check(q, &h100, params), Err(why), "{params}");
        }
    }

    #[test]
    fn grouped_tiles_fold_narrow_groups_and_span_wide_ones() {
        let h100 = crate::solvers::devices::h100();
        let s = &GROUPED;
        let grouped = |c: u32, k: u32, groups: u32| {
            ConvProblem::new(ConvSpec {
                n: 32,
                c,
                k,
                groups,
                input: [1, 56, 56],
                filter: [1, 3, 3],
                pad: [0, 1, 1],
                layouts: [Layout::Nhwc; 3],
                data_types: [DataType::Fp16; 3],
                ..ConvSpec::default()
            })
            .unwrap()
        };
        let cfg = s.parse("256,64,4,1").unwrap();
        // Groups of 8: eight a tile, w packed block-diagonally ([K, 9 taps, 64]) by a first
        // kernel; the main kernel reduces over 64 input channels a tap.
        let narrow = grouped(256, 256, 32);
        assert!(s.check(&narrow, &h100, "256,64,4,1").is_ok());
        assert_eq!(tile_input_channels(&narrow), 64);
        let plan = s.plan(&narrow, &h100, &cfg);
        let kernels: Vec<_> = plan.kernels.iter().map(|k| k.kernel).collect();
        assert_eq!(
            kernels,
            [
                "kiln_wgmma_group_pack",
                "kiln_wgmma_implicit_gemm_persistent"
            ]
        );
        assert_eq!(plan.workspace_bytes, 256 * 9 * 64 * 2);
        assert_eq!(plan.kernels[1].block, [256, 1, 1]);
        let tma = s.tma_arguments(&narrow, &h100, &cfg).unwrap();
        assert_eq!(tma.views[1].operand, TmaOperand::PackedW);
        assert_eq!(tma.views[1].shape.dims, [64, 9, 256, 1, 1]);
        assert_eq!(tma.group_widths, [8, 8, 64]);
        assert_eq!(tma.input, [1, 56, 56]);
        assert_eq!(tma.packing.unwrap().offsets, [0; 3]);
        // Groups of 128: a tile within one group, w read as it is, one kernel.
        let wide = grouped(512, 512, 4);
        assert!(s.check(&wide, &h100, "256,64,4,1").is_ok());
        assert_eq!(tile_input_channels(&wide), 128);
        let plan = s.plan(&wide, &h100, &s.parse("256,64,4,1").unwrap());
        assert_eq!(plan.kernels.len(), 1);
        assert_eq!(plan.workspace_bytes, 0);
        let tma = s.tma_arguments(&wide, &h100, &cfg).unwrap();
        assert_eq!(tma.views[1].operand, TmaOperand::W);
        assert_eq!(tma.views[1].shape.dims, [128, 9, 512, 1, 1]);
        // The folded products cost 64 / 8 times the groups' own: the cost model counts them as
        // groups of 64 channels, plus the packing's launch.
        let of_64 = s.estimate(&grouped(256, 256, 4), &h100, &cfg);
        let folded = s.estimate(&narrow, &h100, &cfg);
        assert!(
            folded > of_64 && folded < of_64 + 0.003,
            "{folded} against {of_64}"
        );
        // Groups of 48: a tile meets at most two (channels 64-127 take groups 1 and 2), so it
        // reduces over 96 input channels, w packed.
        let straddling = grouped(192, 192, 4);
        assert!(s.check(&straddling, &h100, "256,64,4,1").is_ok());
        assert_eq!(tile_input_channels(&straddling), 96);
        assert!(packs_groups(&straddling));
        // Groups of 24 within 64-channel tiles: at most four groups a tile.
        assert_eq!(tile_input_channels(&grouped(240, 240, 10)), 96);
        for (p, why) in [
            (
                grouped(64, 64, 1),
                "dense convolution (the grouped solver's tiles fold groups)",
            ),
            (grouped(64, 64, 32), "fewer than 4 output channels a group"),
            // Groups of 12 channels start 24 bytes apart.
            (
                grouped(96, 96, 8),
                "a tile's input channels do not start 16 bytes apart",
            ),
        ] {
            assert_eq!(
                s.check(&p, &h100, "256,64,4,1"),
                Err(why),
                "{}",
                p.find_db_key()
            );
        }
        // The other wgmma solvers decline grouped problems; 3-D grouped problems fold too.
        assert_eq!(
            IMPLICIT_GEMM.check(&narrow, &h100, "128,64,6,1"),
            Err("grouped convolution")
        );
        let video = ConvProblem::new(ConvSpec {
            spatial_dims: 3,
            n: 2,
            c: 128,
            k: 128,
            groups: 8,
            input: [8, 28, 28],
            filter: [3, 3, 3],
            pad: [1, 1, 1],
            layouts: [Layout::Ndhwc; 3],
            data_types: [DataType::Bf16; 3],
            ..ConvSpec::default()
        })
        .unwrap();
        assert!(s.check(&video, &h100, "128,64,6,1").is_ok());
        // Not on an A100: sm_90a code.
        assert!(s
            .check(&narrow, &crate::solvers::devices::a100(), "256,64,4,1")
            .is_err());
    }

    fn nhwc(n: u32, c: u32, k: u32, hw: u32, f: u32) -> ConvProblem {
        strided(n, c, k, hw, f, 0, 1)
    }

    /// `p` with its x gated per image and channel (`+gate`).
    fn gated(p: ConvProblem) -> ConvProblem {
        p.with_fusion(kiln_format::Fusion {
            x_scale: true,
            ..p.fusion()
        })
        .unwrap()
    }

    #[test]
    fn the_gated_objects_are_their_plain_siblings_with_the_scaler_code() {
        let manifest = crate::embedded::kernel_manifest();
        let entry = |id: &str| manifest.iter().find(|s| s.id == id).unwrap();
        for (plain, gated) in GATED_SIBLINGS {
            let (p, g) = (entry(plain), entry(gated));
            assert_eq!(g.options, format!("-DKILN_GATED {}", p.options), "{gated}");
            assert_eq!(g.source, p.source, "{gated}");
            assert!(
                g.functions.iter().all(|f| p.functions.contains(f)),
                "{gated}"
            );
            assert_eq!((g.data_types, g.archs), (p.data_types, p.archs), "{gated}");
            for config in g.params {
                // A config the plain solver builds, on a tile the gate is built for.
                assert!(p.params.contains(config), "{gated} [{config}]");
                let c = Config::parse(config).unwrap();
                assert!(c.rows * c.cols <= GATE_MAX_PRODUCTS, "{gated} [{config}]");
            }
            let solver = crate::solvers::by_id(gated).unwrap();
            assert_eq!(solver.timed_like(), Some(plain));
            let sibling = crate::solvers::gated_sibling(crate::solvers::by_id(plain).unwrap());
            assert_eq!(sibling, Some(solver));
        }
    }

    #[test]
    fn only_the_gated_solvers_take_a_gated_x_and_they_take_nothing_else() {
        let h100 = crate::solvers::devices::h100();
        let layers = [nhwc(32, 1152, 192, 7, 1), strided(1, 480, 80, 14, 1, 0, 1)];
        for plain in layers {
            let gated_layer = gated(plain);
            for (plain_id, gated_id) in GATED_SIBLINGS {
                let (p, g) = (
                    crate::solvers::by_id(plain_id).unwrap(),
                    crate::solvers::by_id(gated_id).unwrap(),
                );
                let config = g.offered_params(&gated_layer, &h100).next().unwrap();
                let plan = g.plan(&gated_layer, &h100, config).unwrap();
                assert!(plan.scales_x, "{gated_id} [{config}]");
                assert_eq!(
                    p.plan(&gated_layer, &h100, config).unwrap_err(),
                    "x scaled per image and channel: this solver does not scale its input"
                );
                assert_eq!(
                    g.plan(&plain, &h100, config).unwrap_err(),
                    "the gated objects take only problems whose x is gated (+gate)"
                );
                assert!(
                    p.plan(&plain, &h100, config).is_ok(),
                    "{plain_id} [{config}]"
                );
            }
        }
    }

    /// An NHWC FP16 problem with a square filter, padding and stride.
    fn strided(n: u32, c: u32, k: u32, hw: u32, f: u32, pad: u32, stride: u32) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            n,
            c,
            k,
            input: [1, hw, hw],
            filter: [1, f, f],
            pad: [0, pad, pad],
            stride: [1, stride, stride],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn a_block_is_a_producer_and_one_consumer_warpgroup_per_64_rows() {
        let h100 = crate::solvers::devices::h100();
        let tf32 = |p: ConvProblem| {
            ConvProblem::new(ConvSpec {
                data_types: [DataType::Fp32; 3],
                ..p.spec()
            })
            .unwrap()
            .with_math(kiln_format::MathMode::AllowTf32)
        };
        let problems = [
            nhwc(8, 256, 64, 28, 1),
            strided(8, 128, 128, 28, 3, 1, 1),
            strided(8, 16, 64, 56, 3, 1, 1),
            strided(8, 3, 64, 224, 7, 3, 2),
            tf32(nhwc(8, 256, 64, 28, 1)),
            tf32(strided(8, 128, 128, 28, 3, 1, 1)),
            ndhwc(2, 64, 64, [8, 28, 28], [3, 3, 3], [1, 1, 1]),
            gated(nhwc(8, 256, 64, 28, 1)),
            gated(strided(8, 128, 128, 28, 3, 1, 1)),
        ];
        for id in IDS {
            let s = crate::solvers::by_id(id).unwrap();
            let mut planned = 0;
            for p in &problems {
                for q in s.offered_params(p, &h100) {
                    let plan = s.plan(p, &h100, q).unwrap();
                    let rows = q.split(',').next().unwrap().parse::<u32>().unwrap();
                    let block = plan.kernels[plan.library].block;
                    // The 2-D first-layer kernel's producer is one warp (its other three would
                    // only hold registers while more blocks share the SM); a 3-D block runs
                    // alone on its SM, with a producer warpgroup.
                    let producer = if id.contains("FirstLayer") && !id.contains("3d") {
                        32
                    } else {
                        128
                    };
                    assert_eq!(block, [rows / 64 * 128 + producer, 1, 1], "{id} [{q}]");
                    planned += 1;
                }
            }
            assert!(planned > 0, "{id} planned nothing");
        }
    }

    #[test]
    fn persistent_grids_follow_the_device_sm_count() {
        // 784 tiles of 128 x 64: one block per SM of whichever device plans them.
        let p = nhwc(32, 256, 64, 56, 1);
        for sms in [132, 114, 66] {
            let caps = TargetCaps {
                compute_units: sms,
                ..crate::solvers::devices::h100()
            };
            let plan = GEMM_1X1.launch_plan(&p, &caps, "128,64,6,1").unwrap();
            assert_eq!(plan.kernels[0].grid, [sms, 1, 1]);
            assert_eq!(plan.kernels[0].kernel, "kiln_wgmma_gemm1x1_persistent");
        }
        // Stream-K: every block resident, so no more blocks than SMs.
        let fp32 = ConvProblem::new(ConvSpec {
            data_types: [DataType::Fp32; 3],
            ..strided(32, 256, 256, 14, 3, 1, 1).spec()
        })
        .unwrap();
        let caps = TargetCaps {
            compute_units: 114,
            ..crate::solvers::devices::h100()
        };
        let plan = IMPLICIT_GEMM_TF32
            .launch_plan(&fp32, &caps, "128,128,4,0")
            .unwrap();
        assert_eq!(plan.kernels[0].grid, [114, 1, 1]);
        // Fewer SMs, more waves: the model charges them.
        let at = |sms| {
            let caps = TargetCaps {
                compute_units: sms,
                ..crate::solvers::devices::h100()
            };
            IMPLICIT_GEMM
                .estimated_ms(&strided(32, 256, 256, 28, 3, 1, 1), &caps, "128,128,4,1")
                .unwrap()
        };
        assert!(at(66) > 1.8 * at(132), "{} vs {}", at(66), at(132));
    }

    #[test]
    fn plans_follow_the_kernel_and_refuse_what_it_cannot_run() {
        let h100 = crate::solvers::devices::h100();
        let p = nhwc(32, 256, 64, 56, 1);
        let s = &GEMM_1X1;
        assert!(s.check(&p, &h100, "128,64,6,1").is_ok());
        let plan = s
            .launch_plan(&p, &crate::solvers::devices::h100(), "128,64,6,1")
            .unwrap();
        // 32 * 56 * 56 = 100,352 rows in 128-row tiles; 64 channels in one 64-wide tile: 784
        // tiles for 132 blocks of the persistent kernel.
        assert_eq!(plan.kernels[0].grid, [132, 1, 1]);
        assert_eq!(plan.kernels[0].kernel, s.kernel(Entry::Persistent));
        assert_eq!(plan.kernels[0].block, [384, 1, 1]);
        assert_eq!(
            plan.kernels[0].shared_bytes,
            6 * 192 * 128 + 2 * 128 * 64 * 2 + 64 + 96 + 1024
        );
        let args = s
            .tma_block(&p, &crate::solvers::devices::h100(), "128,64,6,1")
            .unwrap()
            .unwrap();
        assert_eq!(args.sizes, [100_352, 64, 256]);
        assert_eq!(args.views[0].shape.dims, [256, 100_352, 1, 1, 1]);
        assert_eq!(
            args.views[1].shape.boxes,
            TmaBoxes::Tiled([64, 64, 1, 1, 1])
        );

        let sm80 = crate::solvers::devices::a100();
        assert!(s.check(&p, &sm80, "128,64,6,1").is_err());
        assert!(s
            .check(&nhwc(1, 64, 64, 56, 3), &h100, "64,64,8,1")
            .is_err());
        assert!(s
            .check(&nhwc(1, 60, 64, 56, 1), &h100, "64,64,8,1")
            .is_err());
        assert!(s.check(&p, &h100, "96,64,4,1").is_err());
        // K = 64: a 192-column tile can run but is never offered (two thirds padding).
        assert!(s.check(&p, &h100, "128,192,4,1").is_ok());
        assert!(s.check_offered(&p, &h100, "128,192,4,1").is_err());
        // 256 x 256 tiles in 4 stages: 257 KiB of shared memory.
        assert_eq!(
            s.check(&p, &h100, "256,256,4,1"),
            Err("tile needs more shared memory than this arch gives a block")
        );
    }

    #[test]
    fn im2col_maps_follow_the_convolution() {
        let h100 = crate::solvers::devices::h100();
        // ResNet-50's stride-2 3x3: 128 channels, 56x56 -> 28x28, pad 1.
        let p = strided(2, 128, 128, 56, 3, 1, 2);
        let s = &IMPLICIT_GEMM;
        assert!(s.check(&p, &h100, "128,128,4,1").is_ok());
        assert!(GEMM_1X1.check(&p, &h100, "128,128,4,1").is_err());
        let plan = s
            .launch_plan(&p, &crate::solvers::devices::h100(), "128,128,4,1")
            .unwrap();
        // 2 * 28 * 28 = 1568 output pixels: 13 tiles of 128, one block each (the one-tile
        // kernel, whose staging reuses the stages).
        assert_eq!(plan.kernels[0].grid, [13, 1, 1]);
        assert_eq!(plan.kernels[0].kernel, "kiln_wgmma_implicit_gemm");
        assert_eq!(plan.kernels[0].shared_bytes, 4 * 256 * 128 + 64 + 1024);
        let args = s
            .tma_block(&p, &crate::solvers::devices::h100(), "128,128,4,1")
            .unwrap()
            .unwrap();
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
            s.check(&wide, &h100, "128,128,4,1"),
            Err("padding or dilated filter extent past TMA's im2col corners")
        );
    }

    /// An FP16 NDHWC problem, padding 1 along each dimension of a filter of 3.
    fn ndhwc(
        n: u32,
        c: u32,
        k: u32,
        input: [u32; 3],
        filter: [u32; 3],
        stride: [u32; 3],
    ) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            spatial_dims: 3,
            n,
            c,
            k,
            input,
            filter,
            pad: filter.map(|f| f / 2),
            stride,
            layouts: [Layout::Ndhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn volume_maps_gather_windows_over_depth_rows_and_images() {
        let h100 = crate::solvers::devices::h100();
        // r3d_18's stride-2 3x3x3 at layer 3: 128 -> 256 channels, 8x28x28 -> 4x14x14.
        let p = ndhwc(2, 128, 256, [8, 28, 28], [3, 3, 3], [2, 2, 2]);
        let s = &IMPLICIT_GEMM_3D;
        assert!(s.check(&p, &h100, "128,128,4,1").is_ok());
        for two_d in [&IMPLICIT_GEMM, &GEMM_1X1] {
            assert_eq!(
                two_d.check(&p, &h100, "128,128,4,1"),
                Err("needs 2-D NHWC tensors")
            );
        }
        let plan = s.launch_plan(&p, &h100, "128,128,4,1").unwrap();
        // 2 * 4 * 14 * 14 = 1568 output voxels: 13 row tiles x 2 column tiles, one block each.
        assert_eq!(plan.kernels[0].grid, [26, 1, 1]);
        assert_eq!(plan.kernels[0].kernel, "kiln_wgmma_implicit_gemm");
        let args = s.tma_block(&p, &h100, "128,128,4,1").unwrap().unwrap();
        assert_eq!(args.sizes, [1568, 256, 128]);
        assert_eq!(args.geometry, [14, 14, 3, 3, 2, 2, 1, 1, 1, 1]);
        assert_eq!(args.depth, [4, 3, 2, 1, 1]);
        assert_eq!(args.views[0].shape.rank, 5);
        assert_eq!(args.views[0].shape.dims, [128, 28, 28, 8, 2]);
        assert_eq!(
            args.views[0].shape.boxes,
            TmaBoxes::Im2col {
                lower: [-1, -1, -1],
                upper: [-1, -1, -1],
                channels: 64,
                pixels: 128,
                traversal: [1, 2, 2, 2, 1],
            }
        );
        // w as [K, T*R*S, C].
        assert_eq!(args.views[1].shape.dims, [128, 27, 256, 1, 1]);
        // 27 taps x 2 steps of 64 channels.
        assert_eq!(
            reduction_steps(&p, &Config::parse("128,128,4,1").unwrap()),
            54
        );
        // A 5-D map's corners are signed 5-bit (-16..=15): padding 17 along the depth is past
        // them.
        let deep = ConvProblem::new(ConvSpec {
            pad: [17, 1, 1],
            ..p.spec()
        })
        .unwrap();
        assert_eq!(
            s.check(&deep, &h100, "128,128,4,1"),
            Err("padding or dilated filter extent past TMA's im2col corners")
        );
        // The 2-D kernel's maps carry a unit depth.
        let flat = strided(2, 128, 128, 56, 3, 1, 2);
        let args = IMPLICIT_GEMM
            .tma_block(&flat, &h100, "128,128,4,1")
            .unwrap()
            .unwrap();
        assert_eq!(args.depth, [1, 1, 1, 0, 1]);
        assert_eq!(
            s.check(&flat, &h100, "128,128,4,1"),
            Err("needs 3-D NDHWC tensors")
        );
    }

    #[test]
    fn stream_k_runs_one_block_per_sm_with_flags_and_partials() {
        let h100 = crate::solvers::devices::h100();
        // ResNet-50's 256 -> 256 3x3 at 14x14, batch 32, FP32 as TF32: 6272 rows, 49 x 2
        // tiles of 128 x 128, 72 steps of 32 channels each: 7056 steps over 132 blocks.
        let p = ConvProblem::new(ConvSpec {
            n: 32,
            c: 256,
            k: 256,
            input: [1, 14, 14],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Fp32; 3],
            ..ConvSpec::default()
        })
        .unwrap();
        let s = &IMPLICIT_GEMM_TF32;
        assert!(s.check(&p, &h100, "128,128,4,0").is_ok());
        let plan = s
            .launch_plan(&p, &crate::solvers::devices::h100(), "128,128,4,0")
            .unwrap();
        assert_eq!(plan.kernels.len(), 1, "no reduction kernel");
        assert_eq!(plan.kernels[0].kernel, "kiln_wgmma_implicit_gemm_streamk");
        assert_eq!(plan.kernels[0].grid, [132, 1, 1]);
        // The persistent entry's shared memory: stages plus the FP32 output staging tile and the z
        // barriers.
        assert_eq!(
            plan.kernels[0].shared_bytes,
            4 * 256 * 128 + 128 * (128 + 4) * 4 + 64 + 64 + 1024
        );
        assert_eq!(plan.workspace_bytes, 4096 + 132 * 128 * 128 * 4);
        let args = s
            .tma_block(&p, &crate::solvers::devices::h100(), "128,128,4,0")
            .unwrap()
            .unwrap();
        assert_eq!((args.splits, args.zeroed_words), (0, 1024));
        // Split-K leaves the flags alone; 256-row tiles and the FP16 objects have no stream-K.
        assert_eq!(
            s.tma_block(&p, &crate::solvers::devices::h100(), "128,128,4,2")
                .unwrap()
                .unwrap()
                .zeroed_words,
            0
        );
        assert_eq!(
            s.check(&p, &h100, "256,128,3,0"),
            Err("stream-K is built for tiles of at most 128 rows")
        );
        let half = ConvProblem::new(ConvSpec {
            data_types: [DataType::Fp16; 3],
            ..p.spec()
        })
        .unwrap();
        assert_eq!(
            IMPLICIT_GEMM.check(&half, &h100, "128,128,4,0"),
            Err("stream-K is built into the TF32 objects only")
        );
        // A 64-channel 1x1 over 49 pixels: one tile, two steps: two blocks.
        let tiny = ConvProblem::new(ConvSpec {
            data_types: [DataType::Fp32; 3],
            ..nhwc(1, 64, 64, 7, 1).spec()
        })
        .unwrap();
        assert_eq!(
            GEMM_1X1_TF32
                .launch_plan(&tiny, &crate::solvers::devices::h100(), "128,128,4,0")
                .unwrap()
                .kernels[0]
                .grid,
            [2, 1, 1]
        );
    }

    #[test]
    fn split_k_adds_a_reduction_and_its_workspace() {
        let h100 = crate::solvers::devices::h100();
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
        let plan = s
            .launch_plan(&p, &crate::solvers::devices::h100(), "64,64,8,8")
            .unwrap();
        // 1 x 8 tiles, 8 slices each: 64 work units; 0.8 MB of partials, too few for a
        // cluster: FP32 partials in the workspace and the reduction kernel.
        assert_eq!(
            (plan.kernels[0].grid, plan.kernels[0].cluster),
            ([64, 1, 1], 1)
        );
        assert_eq!(plan.kernels[1].kernel, s.kernel(Entry::Reduce));
        assert_eq!(plan.workspace_bytes, 8 * 49 * 512 * 4);
        assert_eq!(
            s.tma_block(&p, &crate::solvers::devices::h100(), "64,64,8,8")
                .unwrap()
                .unwrap()
                .splits,
            8
        );
        assert_eq!(
            s.launch_plan(&p, &crate::solvers::devices::h100(), "64,64,8,1")
                .unwrap()
                .kernels
                .len(),
            1
        );
        // Batch 32: 1568 rows. 192 x 128 tiles, 3 slices: 108 blocks, 9.6 MB of partials:
        // a cluster per tile, each block storing one warpgroup's rows (receiving 2 x 32 KiB);
        // no workspace, no second kernel.
        let batch32 = ConvProblem::new(ConvSpec { n: 32, ..p.spec() }).unwrap();
        let plan = s
            .launch_plan(&batch32, &crate::solvers::devices::h100(), "192,128,4,3")
            .unwrap();
        assert_eq!(
            (plan.kernels[0].grid, plan.kernels[0].cluster),
            ([108, 1, 1], 3)
        );
        assert_eq!((plan.kernels.len(), plan.workspace_bytes), (1, 0));
        // 2 slices: 6.4 MB of partials, under the bound.
        assert_eq!(
            s.launch_plan(&batch32, &crate::solvers::devices::h100(), "192,128,4,2")
                .unwrap()
                .kernels[0]
                .cluster,
            1
        );
        // 128 x 256, 5 slices: 130 blocks, but the 4 partials of 64 KiB a block would receive
        // do not fit its 144 KiB of stages.
        let plan = s
            .launch_plan(&batch32, &crate::solvers::devices::h100(), "128,256,3,5")
            .unwrap();
        assert_eq!(
            (plan.kernels[0].cluster, plan.kernels[1].kernel),
            (1, s.kernel(Entry::Reduce))
        );
        // More work units than SMs run the persistent kernel: never clusters.
        let plan = s
            .launch_plan(&batch32, &crate::solvers::devices::h100(), "64,64,8,8")
            .unwrap();
        assert_eq!(
            (plan.kernels[0].kernel, plan.kernels[0].cluster),
            ("kiln_wgmma_implicit_gemm_persistent", 1)
        );
        assert_eq!(plan.workspace_bytes, 8 * 32 * 49 * 512 * 4);
        assert!(s.check(&p, &h100, "64,64,8,64").is_ok());
        // A 1x1 with 64 channels has one reduction step: nothing to split.
        let q = nhwc(1, 64, 64, 7, 1);
        assert_eq!(
            GEMM_1X1.check(&q, &h100, "64,64,8,2"),
            Err("more split-K slices than reduction steps")
        );
    }

    #[test]
    fn the_persistent_epilogue_views_y_and_z_in_whole_128_byte_boxes() {
        let h100 = crate::solvers::devices::h100();
        let view = |s: &Wgmma, p: &ConvProblem, cfg: &str| {
            s.tma_block(p, &h100, cfg).unwrap().unwrap().epilogue_map
        };
        // FP16, 64 -> 256 channels at N=32: y and z as [M, K], 64 channels x 64 rows a box.
        let p = nhwc(32, 64, 256, 56, 1);
        assert_eq!(
            view(&GEMM_1X1, &p, "192,128,4,1"),
            Some(TensorMapShape {
                rank: 2,
                dims: [256, 32 * 56 * 56, 1, 1, 1],
                boxes: TmaBoxes::Tiled([64, 64, 1, 1, 1]),
                swizzle: true,
            })
        );
        // Rows of 60 FP16 values are 120 bytes, not a multiple of 16 (TMA's row pitch): the
        // threads move the tile.
        assert_eq!(
            view(&GEMM_1X1, &nhwc(32, 64, 60, 56, 1), "128,64,4,1"),
            None
        );
        // FP32 (TF32): the objects carry the stream-K entry, not the TMA epilogue.
        let f = ConvProblem::new(ConvSpec {
            data_types: [DataType::Fp32; 3],
            ..p.spec()
        })
        .unwrap();
        assert_eq!(view(&GEMM_1X1_TF32, &f, "128,64,6,1"), None);
        assert_eq!(view(&GEMM_1X1_TF32, &f, "128,128,4,0"), None);
    }

    #[test]
    fn the_persistent_epilogue_double_buffers_where_two_tiles_fit() {
        let h100 = crate::solvers::devices::h100();
        let shared = |s: &Wgmma, p: &ConvProblem, cfg: &str| {
            let plan = s.launch_plan(p, &h100, cfg).unwrap();
            assert_eq!(plan.kernels[0].kernel, "kiln_wgmma_gemm1x1_persistent");
            plan.kernels[0].shared_bytes
        };
        let p = nhwc(32, 64, 256, 56, 1);
        // 128 x 128 FP16: four stages of 256 128-byte rows, two 128 x 128 tiles of 2-byte
        // elements, the z barriers, the stage barriers, the alignment.
        assert_eq!(
            shared(&GEMM_1X1, &p, "128,128,4,1"),
            4 * 256 * 128 + 2 * 128 * 128 * 2 + 64 + 4 * 16 + 1024
        );
        // 192 x 128: two tiles would pass 227 KiB, so one padded tile (68 words a row).
        assert_eq!(
            shared(&GEMM_1X1, &p, "192,128,4,1"),
            4 * 320 * 128 + 192 * 68 * 4 + 64 + 4 * 16 + 1024
        );
        // 256 x 64 just fits two (230,528 bytes of 232,448).
        assert_eq!(
            shared(&GEMM_1X1, &nhwc(32, 64, 64, 56, 1), "256,64,4,1"),
            4 * 320 * 128 + 2 * 256 * 64 * 2 + 64 + 4 * 16 + 1024
        );
    }

    #[test]
    fn tf32_solvers_take_fp32_in_32_channel_rows() {
        let h100 = crate::solvers::devices::h100();
        let half = nhwc(32, 256, 64, 56, 1);
        let p = ConvProblem::new(ConvSpec {
            data_types: [DataType::Fp32; 3],
            ..half.spec()
        })
        .unwrap();
        let s = &GEMM_1X1_TF32;
        assert!(s.check(&p, &h100, "128,64,6,1").is_ok());
        assert_eq!(
            s.check(&half, &h100, "128,64,6,1"),
            Err("FP32 only (TF32 math)")
        );
        assert_eq!(
            GEMM_1X1.check(&p, &h100, "128,64,6,1"),
            Err("FP16 or BF16 only")
        );
        // 128-byte rows: 32 FP32 channels per load; 256 channels in 8 steps.
        let args = s
            .tma_block(&p, &crate::solvers::devices::h100(), "128,64,6,1")
            .unwrap()
            .unwrap();
        assert_eq!(
            args.views[0].shape.boxes,
            TmaBoxes::Tiled([32, 128, 1, 1, 1])
        );
        assert_eq!(
            reduction_steps(&p, &Config::parse("128,64,6,1").unwrap()),
            8
        );
        // Persistent (784 tiles): the staged output tile holds 64 FP32 values + 16 bytes a row.
        let plan = s
            .launch_plan(&p, &crate::solvers::devices::h100(), "128,64,6,1")
            .unwrap();
        assert_eq!(
            plan.kernels[0].shared_bytes,
            6 * 192 * 128 + 128 * (64 + 4) * 4 + 64 + 96 + 1024
        );
        // 16-byte rows need C and K in multiples of 4 FP32 values, not 8.
        let narrow = ConvProblem::new(ConvSpec {
            c: 12,
            k: 20,
            ..p.spec()
        })
        .unwrap();
        assert!(s.check(&narrow, &h100, "64,64,8,1").is_ok());
        // Through the registry: only problems that opt in to TF32.
        let registered = super::super::by_id(TF32_ID).unwrap();
        assert!(registered.applicable(&p, &h100, "128,64,6,1").is_err());
        let opted = p.with_math(kiln_format::MathMode::AllowTf32);
        assert!(registered.applicable(&opted, &h100, "128,64,6,1").is_ok());
    }

    #[test]
    fn first_layer_blocks_share_an_sm_as_far_as_shared_memory_and_their_bound_allow() {
        let h100 = crate::solvers::devices::h100();
        let grid_and_block = |p: &ConvProblem, q: &str| {
            let plan = FIRST_LAYER.launch_plan(p, &h100, q).unwrap();
            (plan.kernels[1].grid[0], plan.kernels[1].block[0])
        };
        // The detector's stem (3 -> 16, 3x3, stride 2, 640 -> 320, batch 32): about 27 KiB a
        // block, so the 64 x 32 tile's bound of four an SM holds: 528 blocks of 160 threads.
        let stem = strided(32, 3, 16, 640, 3, 1, 2);
        assert_eq!(grid_and_block(&stem, "64,32,4,2,3"), (4 * 132, 160));
        assert_eq!(grid_and_block(&stem, "64,16,4,2,3"), (4 * 132, 160));
        assert_eq!(grid_and_block(&stem, "64,64,4,2,3"), (3 * 132, 160));
        assert_eq!(grid_and_block(&stem, "128,32,4,2,3"), (2 * 132, 288));
        assert_eq!(grid_and_block(&stem, "128,64,4,2,3"), (132, 288));
        // ResNet-50's conv1 with six stages: about 99 KiB a block, two fit, not the bound's 3.
        let conv1 = strided(32, 3, 64, 224, 7, 3, 2);
        assert_eq!(grid_and_block(&conv1, "64,64,6,2,14"), (2 * 132, 160));
        // At batch 1 its 112 rows of two 64-pixel units are fewer than the blocks that fit.
        let conv1_n1 = strided(1, 3, 64, 224, 7, 3, 2);
        assert_eq!(grid_and_block(&conv1_n1, "64,64,4,2,14"), (224, 160));
    }

    #[test]
    fn first_layer_packs_and_plans_resnet_conv1() {
        let h100 = crate::solvers::devices::h100();
        // ResNet-50's conv1: 3 -> 64 channels, 7x7, stride 2, pad 3, 224 -> 112, batch 32.
        let p = strided(32, 3, 64, 224, 7, 3, 2);
        let s = &FIRST_LAYER;
        assert!(s.check(&p, &h100, "128,64,4,2,14").is_ok());
        assert_eq!(
            s.check(&p, &h100, "128,64,4,1,14"),
            Err("built for another horizontal stride")
        );
        assert_eq!(
            s.check(&p, &h100, "128,64,4,2,12"),
            Err("built for another filter size (wgmma products per unit)")
        );
        assert_eq!(
            s.check(&p, &h100, "128,32,4,2,14"),
            Err("K exceeds the tile's output channels")
        );
        let cfg = FirstLayerConfig::parse("128,64,4,2,14", false).unwrap();
        // Odd padding: one zero tap first keeps windows 16-byte aligned; 8 taps x 4 channels.
        assert_eq!(
            cfg.shape(&p),
            FirstLayerShape {
                cpad: 4,
                lead: 1,
                row_elems: 32,
                packed_w: 224,
                skew: 48,
                blocks: 18,
            }
        );
        let plan = s
            .launch_plan(&p, &crate::solvers::devices::h100(), "128,64,4,2,14")
            .unwrap();
        // Packing: 32 x 224 input rows, 8 a block, then 64 x 256 weights (7 x 32 and zeros to
        // whole 64-element boxes) in 256-thread blocks.
        assert_eq!(plan.kernels[0].grid, [32 * 224 / 8 + 64, 1, 1]);
        // 32 x 112 output rows of one 128-pixel unit each, on at most 132 blocks.
        assert_eq!(plan.kernels[1].grid, [132, 1, 1]);
        assert_eq!(plan.kernels[1].block, [288, 1, 1]);
        assert_eq!(plan.library, 1);
        // w: 7 x 32 = 224 elements in 4 boxes of 64 x 128 B; 4 patches of 7 rows of 18
        // 128-byte blocks (48 skew + 127 x 8 + 32 = 1,096 elements; 16,128 -> 16,384 B); the
        // staging tile; barriers; alignment.
        assert_eq!(
            plan.kernels[1].shared_bytes,
            4 * 64 * 128 + 4 * 16_384 + 128 * 36 * 4 + 64 + 8 + 1024
        );
        let x_bytes = 32 * 224 * 224 * 4 * 2;
        let w_at = (x_bytes as u64).next_multiple_of(256);
        let flags_at = (w_at + 64 * 256 * 2).next_multiple_of(256);
        assert_eq!(plan.workspace_bytes, flags_at + 32 * 224 * 4);
        let args = s
            .tma_block(&p, &crate::solvers::devices::h100(), "128,64,4,2,14")
            .unwrap()
            .unwrap();
        assert_eq!(args.views[0].operand, TmaOperand::PackedX);
        assert_eq!(args.views[0].shape.rank, 5);
        assert_eq!(args.views[0].shape.dims, [64, 14, 224, 1, 32]);
        assert_eq!(
            args.views[0].shape.boxes,
            TmaBoxes::Tiled([64, 18, 7, 1, 1])
        );
        assert!(!args.views[0].shape.swizzle);
        assert_eq!(args.views[1].shape.dims, [256, 64, 1, 1, 1]);
        assert_eq!(args.depth, [1, 1, 1, 0, 1]);
        let packing = args.packing.unwrap();
        assert_eq!(packing.offsets, [0, w_at, flags_at]);
        assert_eq!((packing.row_elems, packing.lead), (32, 1));

        // Stride 1 packs 8 channels; packed rows are whole 64-element blocks (21 -> 32 pixels
        // at stride 2).
        let s1 = ConvProblem::new(ConvSpec {
            n: 1,
            c: 8,
            k: 32,
            input: [1, 20, 21],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Bf16; 3],
            ..ConvSpec::default()
        })
        .unwrap();
        assert!(s.check(&s1, &h100, "64,32,4,1,6").is_ok());
        let shape = FirstLayerConfig::parse("64,32,4,1,6", false)
            .unwrap()
            .shape(&s1);
        assert_eq!((shape.cpad, shape.lead, shape.row_elems), (8, 0, 32));
        let odd = ConvProblem::new(ConvSpec {
            c: 3,
            stride: [1, 2, 2],
            ..s1.spec()
        })
        .unwrap();
        assert_eq!(
            FirstLayerConfig::parse("64,32,4,2,6", false)
                .unwrap()
                .shape(&odd)
                .packed_w,
            32
        );
        assert_eq!(
            s.check(&s1, &h100, "64,32,4,2,6"),
            Err("built for another horizontal stride")
        );
        let wide = ConvProblem::new(ConvSpec { c: 5, ..odd.spec() }).unwrap();
        assert!(s.check(&wide, &h100, "64,32,4,2,6").is_err());
    }

    #[test]
    fn shared_memory_is_checked() {
        let h100 = crate::solvers::devices::h100();
        let p = nhwc(32, 256, 64, 56, 1);
        let s = &GEMM_1X1;
        assert_eq!(
            s.check(&p, &h100, "256,256,4,1"),
            Err("tile needs more shared memory than this arch gives a block")
        );
    }
}
