//! Standalone operators: the work around a network's convolutions that no fused epilogue
//! absorbs. Max and average pooling (window, stride, padding, ceil mode), global average
//! pooling, nearest and bilinear resizing (2x upsampling), elementwise copy/add/multiply with
//! an optional per-(n, c) broadcast (squeeze-and-excitation), softmax over channels, a
//! squeeze-and-excitation head (pool, squeeze and excitation layers) in one kernel, and an
//! inverted residual's expansion and depthwise layer in one kernel.
//!
//! Like MIOpen's pooling, activation and softmax primitives they need no find-db: each is one
//! memory-bound kernel of `kernels/ops.cpp`, compiled once per data type into every target's
//! kdb. Tensors are 2-D (`NCHW` or `NHWC`) in FP32, FP16 or BF16; channels-last tensors may be
//! channel slices of wider ones (`a_ld`, `y_ld`), so a concatenation's parts are written in
//! place. A fully connected layer is a 1x1 convolution on a 1x1 map with a fused bias
//! ([`crate::Fusion`]), ranked and run like every convolution.

use core::fmt;

use kiln_format::abi::OpArgs;
use kiln_format::{Activation, DataType, Layout};

/// The kernel file of the operators (`kernels/manifest.toml`'s `[[operator]]`).
pub const SOURCE: &str = "ops.cpp";

/// The kernel file's entry points, in the manifest's order.
pub const FUNCTIONS: [&str; 8] = [
    "kiln_pool2d",
    "kiln_resize",
    "kiln_eltwise",
    "kiln_softmax",
    "kiln_global_pool_partial",
    "kiln_global_pool_finish",
    "kiln_squeeze_excite",
    "kiln_expand_depthwise",
];

/// Most pooled channels a squeeze-and-excitation head takes (`KILN_SE_MAX_C`: the kernel
/// keeps them in shared memory).
pub const SQUEEZE_EXCITE_MAX_C: u32 = 2048;

/// Most squeeze channels a squeeze-and-excitation head takes (`KILN_SE_MAX_S`).
pub const SQUEEZE_EXCITE_MAX_S: u32 = 256;

/// Most input channels an expansion fused with its depthwise layer takes
/// (`KILN_XD_MAX_C`: the kernel keeps a patch of them in shared memory).
pub const EXPAND_DEPTHWISE_MAX_C: u32 = 32;

/// Input-patch pixels a block of the fused expansion and depthwise layer holds
/// (`KILN_XD_PIXELS`): its output tile is as large as its patch fits in these.
const EXPAND_DEPTHWISE_PIXELS: u32 = 160;

/// Blocks a squeeze-and-excitation head aims to launch over the whole batch: each block reads
/// its image's whole squeeze weights, so more blocks an image buy parallelism on the
/// excitation only, at the cost of reading those weights again.
const SQUEEZE_EXCITE_BLOCKS: u32 = 64;

/// Bytes of a squeeze-and-excitation head's weights each block of a cluster reads, at most
/// (about a microsecond of one SM's L2 bandwidth).
const SQUEEZE_EXCITE_CLUSTER_SHARE: u64 = 32 << 10;

/// Most pixel ranges a global pool sums apart.
const MAX_SPLITS: u32 = 64;

/// Blocks that fill an H100-class GPU twice over: a vectorized global pool must keep at least
/// these, or as many as the scalar one.
const POOL_FULL_BLOCKS: u64 = 264;

/// Channel vectors a global pool's partial-sum block covers side by side (at 8 channels a
/// vector, 256 channels: the widest span).
const POOL_SPAN_VECTORS: u32 = 32;

/// Threads per block of every operator (the softmax kernel's reduction assumes it).
pub const BLOCK_THREADS: u32 = 256;

/// Most blocks an operator launches; the kernels stride over what remains.
const MAX_BLOCKS: u64 = 1 << 16;

/// How a pooling window reduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolMode {
    /// The window's maximum (NaN if it holds one).
    Max,
    /// The window's mean, padding counted in the divisor (PyTorch's default).
    Average,
    /// The window's mean over the input elements it covers.
    AverageExcludePad,
}

/// How a resize samples its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResizeMode {
    /// Source element `floor(dst * in / out)` (PyTorch's `nearest`).
    Nearest,
    /// Bilinear with half-pixel centres (`align_corners` false).
    Bilinear,
}

/// An elementwise operation of the input `a` and the second input `b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EltwiseOp {
    /// `a` alone (a standalone activation, or a copy into a channel slice).
    Copy,
    /// `a + b`.
    Add,
    /// `a * b`.
    Mul,
}

/// A 2-D pooling window: what a pooling operator and a network's pooling node both describe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool2d {
    /// Max or average.
    pub mode: PoolMode,
    /// Window `[h, w]`.
    pub window: [u32; 2],
    /// Stride `[h, w]`.
    pub stride: [u32; 2],
    /// Padding on each side `[h, w]` (at most half the window, as PyTorch requires).
    pub pad: [u32; 2],
    /// Output size rounded up, as PyTorch's `ceil_mode` (a window that would start in the
    /// right or bottom padding is dropped).
    pub ceil_mode: bool,
}

/// What an operator computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// 2-D pooling.
    Pool(Pool2d),
    /// Mean over all pixels: an `n x c x 1 x 1` output.
    GlobalAveragePool,
    /// The mean of a global average pool whose sums a convolution's epilogue took
    /// ([`kiln_format::Fusion::pool`]): the input `a` is that convolution's FP32 partial sums,
    /// laid out as `partials` says ([`crate::invoker::Invoker::pool_partials`]); `input` is the
    /// pooled tensor's `[h, w]` (the divisor). An `n x c x 1 x 1` output.
    GlobalAveragePoolFinish {
        /// How the partial sums lie.
        partials: crate::solvers::PoolPartials,
    },
    /// Resizing to `out` `[h, w]`.
    Resize {
        /// Nearest or bilinear.
        mode: ResizeMode,
        /// Output size `[h, w]`.
        out: [u32; 2],
    },
    /// `y = act(a op b)`.
    Eltwise {
        /// The operation.
        op: EltwiseOp,
        /// `b` holds one value per (n, c), broadcast over the pixels (squeeze-and-excitation);
        /// else `b` has the output's shape.
        broadcast: bool,
    },
    /// Softmax over the channels of each pixel.
    Softmax,
    /// A squeeze-and-excitation head: `y = act(W2 s + b2)` with `s = act_s(W1 pooled + b1)`
    /// and `pooled` the mean of each channel of the input (`a`: the pooled tensor, `n x c x 1 x
    /// 1`, or a convolution's FP32 partial sums), every product in FP32, `pooled` and `s`
    /// rounded to the data type as the unfused layers store them. `b` holds the parameters as
    /// [`SqueezeExcite::pack`] lays them out; `y` is `n x out x 1 x 1`. One kernel where a
    /// network otherwise launches a pool's finish and two 1x1 layers, each waiting for the last.
    SqueezeExcite(SqueezeExcite),
    /// An inverted residual's expansion and depthwise layer: `y = act(dw(e) + b2)` with `e =
    /// act_e(W1 a + b1)`, a 1x1 layer from the input's `c` channels to `expanded` and a
    /// depthwise `filter x filter` layer at `stride` with "same" padding (`filter / 2`). `e` is
    /// rounded to the data type, as the unfused expansion stores it, but never leaves the
    /// kernel. `b` holds the parameters as [`ExpandDepthwise::pack`] lays them out; `y` is
    /// `n x expanded x oh x ow`. NHWC, dense tensors.
    ExpandDepthwise(ExpandDepthwise),
}

/// The shape of a fused expansion and depthwise layer ([`OpKind::ExpandDepthwise`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpandDepthwise {
    /// The expansion's output channels (E): the depthwise layer's and the output's.
    pub expanded: u32,
    /// The depthwise filter's height and width: 3 or 5.
    pub filter: u32,
    /// Its stride on both axes: 1 or 2.
    pub stride: u32,
    /// The expansion's activation (the depthwise layer's is the problem's).
    pub expand_activation: Activation,
    /// Its parameter's bits (ReLU6's ceiling, leaky ReLU's slope), as `f32::to_bits`.
    pub expand_param_bits: u32,
}

impl ExpandDepthwise {
    /// The expansion activation's parameter.
    pub fn expand_param(&self) -> f32 {
        f32::from_bits(self.expand_param_bits)
    }

    /// Padding on each side: half the filter.
    pub fn pad(&self) -> u32 {
        self.filter / 2
    }

    /// The parameter parts' element counts for `c` input channels: `[b1, b2, W1, W2]`.
    fn parts(&self, c: u32) -> [u64; 4] {
        let e = u64::from(self.expanded);
        let taps = u64::from(self.filter) * u64::from(self.filter);
        [e, e, e * u64::from(c), e * taps]
    }

    /// Bytes of the packed parameters ([`ExpandDepthwise::pack`]).
    pub fn params_bytes(&self, c: u32, dtype: DataType) -> u64 {
        two_layer_offsets(self.parts(c), dtype.size_bytes() as u64)[4]
    }

    /// The parameters as the kernel reads them: `b1` and `b2` (`expanded` each) in FP32, then
    /// `w1` (`expanded x c`, the expansion's `[E][C][1][1]` weights) and `w2` (`expanded x
    /// filter x filter`, the depthwise layer's `[E][1][S][S]`) in `dtype`; each part 16-byte
    /// aligned. Refuses slices of the wrong length, naming the tensor.
    pub fn pack(&self, c: u32, dtype: DataType, layers: [&[f32]; 4]) -> Result<Vec<u8>, String> {
        let names = [
            "expansion weights",
            "expansion bias",
            "depthwise weights",
            "depthwise bias",
        ];
        pack_two_layers(self.parts(c), names, "layer pair", dtype, layers)
    }

    /// The output tile `[h, w]` a block covers for an `out` `[h, w]` output: the one whose
    /// patches sum to the fewest input pixels over the map (each patch at most
    /// 160, the kernel's shared memory), the larger tile on a tie.
    pub fn tile(&self, out: [u32; 2]) -> [u32; 2] {
        let (s, f) = (u64::from(self.stride), u64::from(self.filter));
        let span = |t: u64| (t - 1) * s + f;
        let mut best = ([1, 1], u64::MAX);
        for th in 1..=u64::from(out[0]).min(32) {
            for tw in 1..=u64::from(out[1]).min(64) {
                let patch = span(th) * span(tw);
                if patch > u64::from(EXPAND_DEPTHWISE_PIXELS) {
                    break;
                }
                let tiles = u64::from(out[0]).div_ceil(th) * u64::from(out[1]).div_ceil(tw);
                let cost = tiles * patch;
                if cost < best.1 || (cost == best.1 && th * tw > u64::from(best.0[0] * best.0[1])) {
                    best = ([th as u32, tw as u32], cost);
                }
            }
        }
        best.0
    }

    /// Blocks over the whole problem: an image's tiles x slices of 32 expanded channels.
    fn blocks(&self, n: u32, out: [u32; 2]) -> u64 {
        let [th, tw] = self.tile(out);
        u64::from(n)
            * u64::from(out[0].div_ceil(th))
            * u64::from(out[1].div_ceil(tw))
            * u64::from(self.expanded.div_ceil(32))
    }
}

/// Byte offsets of two layers' parameters packed as `[b1, b2, W1, W2]` (FP32 biases, weights of
/// `element` bytes, each part 16-byte aligned) from their element counts: `[b1, b2, W1, W2,
/// end]`.
fn two_layer_offsets([b1, b2, w1, w2]: [u64; 4], element: u64) -> [u64; 5] {
    let align = |v: u64| v.div_ceil(16) * 16;
    let w1_at = align((b1 + b2) * 4);
    let w2_at = w1_at + align(w1 * element);
    [0, b1 * 4, w1_at, w2_at, w2_at + w2 * element]
}

/// Two layers' parameters (`[w1, b1, w2, b2]`, of the element counts `[b1, b2, W1, W2]` in
/// `parts`) packed as [`two_layer_offsets`] lays them out; a slice of the wrong length is
/// refused, named by `names` (in `layers`' order).
fn pack_two_layers(
    parts: [u64; 4],
    names: [&str; 4],
    what: &str,
    dtype: DataType,
    [w1, b1, w2, b2]: [&[f32]; 4],
) -> Result<Vec<u8>, String> {
    let wants = [parts[2], parts[0], parts[3], parts[1]];
    for ((name, got), want) in names
        .iter()
        .zip([w1.len(), b1.len(), w2.len(), b2.len()])
        .zip(wants)
    {
        if got as u64 != want {
            return Err(format!("{name}: {got} values, the {what} needs {want}"));
        }
    }
    let at = two_layer_offsets(parts, dtype.size_bytes() as u64).map(|v| v as usize);
    let mut out = vec![0u8; at[4]];
    for (i, v) in b1.iter().chain(b2).enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    let (w1_bytes, _) = crate::elements::encode(dtype, w1);
    out[at[2]..at[2] + w1_bytes.len()].copy_from_slice(&w1_bytes);
    let (w2_bytes, _) = crate::elements::encode(dtype, w2);
    out[at[3]..at[4]].copy_from_slice(&w2_bytes);
    Ok(out)
}

/// The shape of a squeeze-and-excitation head ([`OpKind::SqueezeExcite`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqueezeExcite {
    /// The squeeze's output channels (S).
    pub squeeze: u32,
    /// The excitation's output channels (K, the gate's).
    pub out: u32,
    /// The squeeze's activation (the excitation's is the problem's).
    pub squeeze_activation: Activation,
    /// Its parameter's bits (ReLU6's ceiling, leaky ReLU's slope), as `f32::to_bits`.
    pub squeeze_param_bits: u32,
    /// Where the input is a convolution's partial sums, how they lie; `None`: the input is
    /// the pooled tensor.
    pub partials: Option<crate::solvers::PoolPartials>,
}

impl SqueezeExcite {
    /// The squeeze activation's parameter.
    pub fn squeeze_param(&self) -> f32 {
        f32::from_bits(self.squeeze_param_bits)
    }

    /// The parameter parts' element counts for `c` pooled channels: `[b1, b2, W1, W2]`.
    fn layer_parts(&self, c: u32) -> [u64; 4] {
        let (s, k) = (u64::from(self.squeeze), u64::from(self.out));
        [s, k, s * u64::from(c), k * s]
    }

    /// Bytes of the packed parameters ([`SqueezeExcite::pack`]).
    pub fn params_bytes(&self, c: u32, dtype: DataType) -> u64 {
        two_layer_offsets(self.layer_parts(c), dtype.size_bytes() as u64)[4]
    }

    /// The parameters as the kernel reads them: `b1` (`squeeze`) and `b2` (`out`) in FP32,
    /// then `w1` (`squeeze x c`, a squeeze layer's `[S][C][1][1]` weights) and `w2` (`out x
    /// squeeze`, the excitation's) in `dtype`; each part 16-byte aligned. Refuses slices of
    /// the wrong length, naming the tensor.
    pub fn pack(&self, c: u32, dtype: DataType, layers: [&[f32]; 4]) -> Result<Vec<u8>, String> {
        let names = [
            "squeeze weights",
            "squeeze bias",
            "excitation weights",
            "excitation bias",
        ];
        pack_two_layers(self.layer_parts(c), names, "head", dtype, layers)
    }

    /// Blocks an image takes: slices of the excitation's outputs. In clusters of `cluster`
    /// blocks (more than 1), the cluster; else at least 256 outputs a slice and about
    /// [`SQUEEZE_EXCITE_BLOCKS`] blocks over the batch.
    fn parts(&self, n: u32, cluster: u32) -> u32 {
        if cluster > 1 {
            return cluster;
        }
        (SQUEEZE_EXCITE_BLOCKS / n.max(1)).clamp(1, self.out.div_ceil(BLOCK_THREADS))
    }

    /// The cluster an image's blocks form where the GPU launches clusters of up to
    /// `max_cluster` blocks (sm_90): enough blocks that each reads at most about
    /// 32 KiB of the two layers' weights (each block then
    /// computes its share of the squeeze and reads the rest from its peers), a power of two
    /// up to 8; 1 (no cluster) for heads whose weights are smaller.
    pub fn cluster(&self, c: u32, dtype: DataType, max_cluster: u32) -> u32 {
        let weights = u64::from(self.squeeze)
            * (u64::from(c) + u64::from(self.out))
            * dtype.size_bytes() as u64;
        let wanted = weights
            .div_ceil(SQUEEZE_EXCITE_CLUSTER_SHARE)
            .next_power_of_two();
        wanted.min(u64::from(max_cluster.min(8))).max(1) as u32
    }
}

/// One operator on one input shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpProblem {
    /// What it computes.
    pub kind: OpKind,
    /// Batch.
    pub n: u32,
    /// Channels (of the input and the output).
    pub c: u32,
    /// Input `[h, w]`.
    pub input: [u32; 2],
    /// `Nchw` or `Nhwc`, for every tensor.
    pub layout: Layout,
    /// FP32, FP16 or BF16, for every tensor.
    pub data_type: DataType,
    /// Applied to the result (not with softmax).
    pub activation: Activation,
    /// The activation's parameter (ReLU6's ceiling, leaky ReLU's slope).
    pub activation_param: f32,
    /// Channels-last only: elements from one input pixel to the next, when the input is a
    /// channel slice of a wider tensor (0: dense, `c`).
    pub a_ld: u32,
    /// The same for the output.
    pub y_ld: u32,
}

/// Where an operator's input and output start within wider channels-last tensors (a split's
/// half, a concatenation's part): the first channel of each, counted against `a_ld` and
/// `y_ld`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelOffsets {
    /// The input's first channel.
    pub a: u32,
    /// The output's first channel.
    pub y: u32,
}

/// Why an operator cannot run as described.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpError {
    /// The operator ([`OpProblem::describe`]).
    pub op: String,
    /// What is wrong, naming the field.
    pub reason: String,
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "operator {}: {}", self.op, self.reason)
    }
}

impl std::error::Error for OpError {}

impl OpProblem {
    /// An operator on a dense `n x c x h x w` input, identity activation.
    pub fn new(
        kind: OpKind,
        n: u32,
        c: u32,
        input: [u32; 2],
        layout: Layout,
        data_type: DataType,
    ) -> Self {
        OpProblem {
            kind,
            n,
            c,
            input,
            layout,
            data_type,
            activation: Activation::Identity,
            activation_param: Activation::Identity.default_param(),
            a_ld: 0,
            y_ld: 0,
        }
    }

    /// The same operator with `activation` (its default parameter) applied to the result.
    pub fn with_activation(mut self, activation: Activation) -> Self {
        self.activation = activation;
        self.activation_param = activation.default_param();
        self
    }

    /// A short name for messages: `maxpool 3x3 s2 p1 on 32x64x112x112 NHWC FP16`.
    pub fn describe(&self) -> String {
        let what = match self.kind {
            OpKind::Pool(Pool2d {
                mode,
                window,
                stride,
                pad,
                ceil_mode,
            }) => format!(
                "{} {}x{} s{}x{} p{}x{}{}",
                match mode {
                    PoolMode::Max => "maxpool",
                    PoolMode::Average => "avgpool",
                    PoolMode::AverageExcludePad => "avgpool-exclude-pad",
                },
                window[0],
                window[1],
                stride[0],
                stride[1],
                pad[0],
                pad[1],
                if ceil_mode { " ceil" } else { "" }
            ),
            OpKind::GlobalAveragePool => "global-avgpool".into(),
            OpKind::GlobalAveragePoolFinish { partials } => format!(
                "global-avgpool-finish (of {} strips an image, {} a block)",
                partials.strips, partials.group
            ),
            OpKind::Resize { mode, out } => format!(
                "resize-{} to {}x{}",
                match mode {
                    ResizeMode::Nearest => "nearest",
                    ResizeMode::Bilinear => "bilinear",
                },
                out[0],
                out[1]
            ),
            OpKind::Eltwise { op, broadcast } => format!(
                "{}{}",
                match op {
                    EltwiseOp::Copy => "copy",
                    EltwiseOp::Add => "add",
                    EltwiseOp::Mul => "mul",
                },
                if broadcast { "-broadcast" } else { "" }
            ),
            OpKind::Softmax => "softmax".into(),
            OpKind::SqueezeExcite(se) => format!(
                "squeeze-excite {}>{}{}>{}{}",
                self.c,
                se.squeeze,
                match se.squeeze_activation {
                    Activation::Identity => String::new(),
                    a => format!("+{}", a.name()),
                },
                se.out,
                match se.partials {
                    Some(p) => format!(" (of {} strips an image, {} a block)", p.strips, p.group),
                    None => String::new(),
                }
            ),
            OpKind::ExpandDepthwise(xd) => format!(
                "expand-depthwise {}>{}{} dw{}x{} s{}",
                self.c,
                xd.expanded,
                match xd.expand_activation {
                    Activation::Identity => String::new(),
                    a => format!("+{}", a.name()),
                },
                xd.filter,
                xd.filter,
                xd.stride
            ),
        };
        let act = match self.activation {
            Activation::Identity => String::new(),
            a => format!("+{}", a.name()),
        };
        format!(
            "{what}{act} on {}x{}x{}x{} {} {}",
            self.n,
            self.c,
            self.input[0],
            self.input[1],
            self.layout.name(),
            self.data_type.name()
        )
    }

    /// The output's `[h, w]` (its batch and channels are the input's). Valid only for a
    /// problem [`OpProblem::validate`] accepts.
    pub fn output(&self) -> [u32; 2] {
        match self.kind {
            OpKind::Pool(Pool2d {
                window,
                stride,
                pad,
                ceil_mode,
                ..
            }) => {
                let dim = |i: usize| {
                    let span = u64::from(self.input[i]) + 2 * u64::from(pad[i]);
                    let (k, s) = (u64::from(window[i]), u64::from(stride[i]).max(1));
                    let reach = span.saturating_sub(k);
                    let mut out = if ceil_mode {
                        reach.div_ceil(s)
                    } else {
                        reach / s
                    } + 1;
                    // A window starting in the trailing padding is dropped (PyTorch's rule).
                    if ceil_mode && (out - 1) * s >= u64::from(self.input[i]) + u64::from(pad[i]) {
                        out -= 1;
                    }
                    u32::try_from(out).unwrap_or(u32::MAX)
                };
                [dim(0), dim(1)]
            }
            OpKind::GlobalAveragePool
            | OpKind::GlobalAveragePoolFinish { .. }
            | OpKind::SqueezeExcite(_) => [1, 1],
            OpKind::Resize { out, .. } => out,
            OpKind::Eltwise { .. } | OpKind::Softmax => self.input,
            OpKind::ExpandDepthwise(xd) => self.input.map(|v| {
                let span = u64::from(v) + 2 * u64::from(xd.pad());
                let out =
                    span.saturating_sub(u64::from(xd.filter)) / u64::from(xd.stride.max(1)) + 1;
                u32::try_from(out).unwrap_or(u32::MAX)
            }),
        }
    }

    /// Checks the problem; the error names the field that is wrong.
    pub fn validate(&self) -> Result<(), OpError> {
        let fail = |reason: String| {
            Err(OpError {
                op: self.describe(),
                reason,
            })
        };
        if !matches!(self.layout, Layout::Nchw | Layout::Nhwc) {
            return fail(format!(
                "layout {}: operators take NCHW or NHWC",
                self.layout.name()
            ));
        }
        if !matches!(
            self.data_type,
            DataType::Fp32 | DataType::Fp16 | DataType::Bf16
        ) {
            return fail(format!(
                "data type {}: operators take FP32, FP16 or BF16",
                self.data_type.name()
            ));
        }
        if self.n == 0 || self.c == 0 || self.input[0] == 0 || self.input[1] == 0 {
            return fail("n, c, h and w must be at least 1".into());
        }
        for (name, ld) in [("a_ld", self.a_ld), ("y_ld", self.y_ld)] {
            if ld != 0 && (!self.layout.channels_last() || ld < self.c) {
                return fail(format!(
                    "{name} {ld}: a channel slice needs NHWC and a stride of at least c = {}",
                    self.c
                ));
            }
        }
        if !self.activation_param.is_finite() {
            return fail("the activation's parameter must be finite".into());
        }
        match self.kind {
            OpKind::Pool(Pool2d {
                window,
                stride,
                pad,
                ..
            }) => {
                for i in 0..2 {
                    let axis = ["h", "w"][i];
                    if window[i] == 0 || stride[i] == 0 {
                        return fail(format!("window and stride ({axis}) must be at least 1"));
                    }
                    if 2 * u64::from(pad[i]) > u64::from(window[i]) {
                        return fail(format!(
                            "pad {} ({axis}) is more than half the window {}",
                            pad[i], window[i]
                        ));
                    }
                    if u64::from(window[i]) > u64::from(self.input[i]) + 2 * u64::from(pad[i]) {
                        return fail(format!(
                            "window {} ({axis}) is larger than the padded input {}",
                            window[i],
                            u64::from(self.input[i]) + 2 * u64::from(pad[i])
                        ));
                    }
                }
            }
            OpKind::Resize { out, .. } => {
                if out[0] == 0 || out[1] == 0 {
                    return fail("resize output must be at least 1x1".into());
                }
            }
            OpKind::Eltwise { op, broadcast } => {
                if broadcast && op == EltwiseOp::Copy {
                    return fail("a broadcast needs a second input (add or mul)".into());
                }
            }
            OpKind::Softmax => {
                if self.activation != Activation::Identity {
                    return fail("softmax takes no activation".into());
                }
            }
            OpKind::GlobalAveragePool => {}
            OpKind::SqueezeExcite(se) => {
                if se.squeeze == 0 || se.out == 0 {
                    return fail(
                        "the squeeze's and the excitation's channels must be at least 1".into(),
                    );
                }
                if self.c > SQUEEZE_EXCITE_MAX_C || se.squeeze > SQUEEZE_EXCITE_MAX_S {
                    return fail(format!(
                        "{} channels squeezed to {}: the head takes at most {SQUEEZE_EXCITE_MAX_C} \
                         and {SQUEEZE_EXCITE_MAX_S}",
                        self.c, se.squeeze
                    ));
                }
                if self.a_ld != 0 || self.y_ld != 0 {
                    return fail("a squeeze-and-excitation head's tensors are dense".into());
                }
                if !se.squeeze_param().is_finite() {
                    return fail("the squeeze activation's parameter must be finite".into());
                }
                match se.partials {
                    Some(p) => {
                        if p.strips == 0 || p.group == 0 {
                            return fail(
                                "the partial sums' strips and group must be at least 1".into(),
                            );
                        }
                        if p.bytes(self.n, self.c) / 4 > i32::MAX as u64 {
                            return fail("more partial sums than 32-bit indexing reaches".into());
                        }
                    }
                    None if self.input != [1, 1] => {
                        return fail(format!(
                            "input {}x{}: without partial sums the head reads the pooled 1x1 map",
                            self.input[0], self.input[1]
                        ));
                    }
                    None => {}
                }
                if u64::from(self.n) * 8 > MAX_BLOCKS {
                    return fail(format!(
                        "batch {}: a head takes at most {} images (8 blocks each)",
                        self.n,
                        MAX_BLOCKS / 8
                    ));
                }
                let params = se.params_bytes(self.c, self.data_type);
                let outputs = u64::from(self.n) * u64::from(se.out);
                if params > i32::MAX as u64 || outputs > i32::MAX as u64 {
                    return fail("more parameters or outputs than 32-bit indexing reaches".into());
                }
            }
            OpKind::ExpandDepthwise(xd) => {
                if !self.layout.channels_last() || self.a_ld != 0 || self.y_ld != 0 {
                    return fail(
                        "an expansion with its depthwise layer takes dense NHWC tensors".into(),
                    );
                }
                if !self.c.is_multiple_of(4) || self.c > EXPAND_DEPTHWISE_MAX_C {
                    return fail(format!(
                        "{} input channels: the fused expansion takes a multiple of 4, at most \
                         {EXPAND_DEPTHWISE_MAX_C}",
                        self.c
                    ));
                }
                if xd.expanded == 0 || !xd.expanded.is_multiple_of(4) {
                    return fail(format!(
                        "{} expanded channels: a multiple of 4, at least 4",
                        xd.expanded
                    ));
                }
                if !matches!(xd.filter, 3 | 5) || !matches!(xd.stride, 1 | 2) {
                    return fail(format!(
                        "depthwise {}x{} at stride {}: the fused layer takes 3x3 or 5x5 at \
                         stride 1 or 2",
                        xd.filter, xd.filter, xd.stride
                    ));
                }
                if !xd.expand_param().is_finite() {
                    return fail("the expansion activation's parameter must be finite".into());
                }
                let [oh, ow] = self.output();
                let y = u64::from(self.n) * u64::from(oh) * u64::from(ow) * u64::from(xd.expanded);
                let params = xd.params_bytes(self.c, self.data_type);
                if y > i32::MAX as u64 || params > i32::MAX as u64 {
                    return fail(format!(
                        "an output of {y} elements: the kernel indexes at most 2^31 - 1"
                    ));
                }
            }
            OpKind::GlobalAveragePoolFinish { partials } => {
                if partials.strips == 0 || partials.group == 0 {
                    return fail("the partial sums' strips and group must be at least 1".into());
                }
                if self.a_ld != 0 {
                    return fail("the partial sums are dense (a_ld must be 0)".into());
                }
                if partials.bytes(self.n, self.c) / 4 > i32::MAX as u64 {
                    return fail("more partial sums than 32-bit indexing reaches".into());
                }
            }
        }
        let [oh, ow] = self.output();
        let fits = |v: u64| v <= i32::MAX as u64;
        let pixels_in = u64::from(self.input[0]) * u64::from(self.input[1]);
        let pixels_out = u64::from(oh) * u64::from(ow);
        let widest = u64::from(self.c.max(self.a_ld).max(self.y_ld));
        // The kernels index with 32 bits: every tensor's extent stays below 2^31 elements.
        let extent = u64::from(self.n)
            .checked_mul(pixels_in.max(pixels_out))
            .and_then(|v| v.checked_mul(widest));
        if !fits(u64::from(oh)) || !fits(u64::from(ow)) || !extent.is_some_and(fits) {
            return fail(format!(
                "a tensor of {} elements: the kernels index at most 2^31 - 1",
                extent.map_or("over 2^64".to_string(), |e| e.to_string())
            ));
        }
        Ok(())
    }

    /// Elements of the input (a's extent: up to its last element, slices included).
    pub fn a_elements(&self) -> u64 {
        match self.kind {
            OpKind::GlobalAveragePoolFinish { partials }
            | OpKind::SqueezeExcite(SqueezeExcite {
                partials: Some(partials),
                ..
            }) => partials.bytes(self.n, self.c) / 4,
            OpKind::SqueezeExcite(_) => u64::from(self.n) * u64::from(self.c),
            _ => self.extent(self.input, self.a_ld),
        }
    }

    /// Bytes of the input: its elements in the data type, or FP32 partial sums.
    pub fn a_bytes(&self) -> u64 {
        self.a_elements() * self.a_element_bytes()
    }

    /// Bytes of one element of the input: the data type's, or 4 for FP32 partial sums.
    pub fn a_element_bytes(&self) -> u64 {
        match self.kind {
            OpKind::GlobalAveragePoolFinish { .. }
            | OpKind::SqueezeExcite(SqueezeExcite {
                partials: Some(_), ..
            }) => 4,
            _ => self.data_type.size_bytes() as u64,
        }
    }

    /// Bytes of the second input `b`: its elements in the data type, or a
    /// squeeze-and-excitation head's packed parameters.
    pub fn b_bytes(&self) -> u64 {
        match self.kind {
            OpKind::SqueezeExcite(se) => se.params_bytes(self.c, self.data_type),
            OpKind::ExpandDepthwise(xd) => xd.params_bytes(self.c, self.data_type),
            _ => self.b_elements() * self.data_type.size_bytes() as u64,
        }
    }

    /// Elements of the second input `b` (0 when the operator takes none).
    pub fn b_elements(&self) -> u64 {
        match self.kind {
            OpKind::Eltwise {
                op: EltwiseOp::Add | EltwiseOp::Mul,
                broadcast,
            } => {
                if broadcast {
                    u64::from(self.n) * u64::from(self.c)
                } else {
                    self.dense(self.input)
                }
            }
            _ => 0,
        }
    }

    /// Elements of the output's extent.
    pub fn y_elements(&self) -> u64 {
        match self.kind {
            OpKind::SqueezeExcite(se) => u64::from(self.n) * u64::from(se.out),
            OpKind::ExpandDepthwise(xd) => {
                let [oh, ow] = self.output();
                u64::from(self.n) * u64::from(oh) * u64::from(ow) * u64::from(xd.expanded)
            }
            _ => self.extent(self.output(), self.y_ld),
        }
    }

    /// Channels of the output: the input's, or a squeeze-and-excitation head's gate's.
    pub fn y_channels(&self) -> u32 {
        match self.kind {
            OpKind::SqueezeExcite(se) => se.out,
            OpKind::ExpandDepthwise(xd) => xd.expanded,
            _ => self.c,
        }
    }

    /// Elements of a dense tensor of this batch and channels.
    fn dense(&self, [h, w]: [u32; 2]) -> u64 {
        u64::from(self.n) * u64::from(self.c) * u64::from(h) * u64::from(w)
    }

    /// Elements from the first to one past the last of a tensor whose pixels are `ld` apart.
    fn extent(&self, [h, w]: [u32; 2], ld: u32) -> u64 {
        if ld == 0 || ld == self.c {
            return self.dense([h, w]);
        }
        let pixels = u64::from(self.n) * u64::from(h) * u64::from(w);
        (pixels - 1) * u64::from(ld) + u64::from(self.c)
    }

    /// Pixel ranges a global pool sums apart (1 for every other operator): enough that a
    /// large map with few channels spreads over the GPU, each range at least 256 pixels, but
    /// only as many as make twice `POOL_FULL_BLOCKS` partial-sum blocks at the widest vectors
    /// (256 channels a block): each range is one more partial sum per output for the finishing
    /// kernel to add.
    pub fn splits(&self) -> u32 {
        match self.kind {
            OpKind::GlobalAveragePool => {
                let by_pixels = (self.input[0] * self.input[1]).div_ceil(256);
                let samples = u64::from(self.n) * u64::from(self.c.div_ceil(8 * POOL_SPAN_VECTORS));
                let by_blocks = (2 * POOL_FULL_BLOCKS).div_ceil(samples.max(1));
                u64::from(by_pixels)
                    .min(by_blocks)
                    .clamp(1, u64::from(MAX_SPLITS)) as u32
            }
            _ => 1,
        }
    }

    /// Workspace bytes the operator needs: a global pool's FP32 partial sums (none where it
    /// sums each sample's map as one range, in one kernel).
    pub fn workspace_bytes(&self) -> u64 {
        match self.kind {
            OpKind::GlobalAveragePool if self.splits() > 1 => {
                u64::from(self.n) * u64::from(self.c) * u64::from(self.splits()) * 4
            }
            _ => 0,
        }
    }

    /// Channels each thread moves: 8 (16-byte accesses) for pooling, resizing and elementwise
    /// ops on channels-last tensors whose channels and strides are multiples of 8, else 1. A
    /// channel offset that is not a multiple of 8 falls back to 1 at launch.
    pub fn vector_width(&self) -> u32 {
        let eight = |v: u32| v.is_multiple_of(8);
        let vectorizable = matches!(
            self.kind,
            OpKind::Pool(_)
                | OpKind::Resize { .. }
                | OpKind::Eltwise { .. }
                | OpKind::GlobalAveragePool
        );
        let whole_vectors = vectorizable
            && self.layout.channels_last()
            && eight(self.c)
            && eight(self.a_ld)
            && eight(self.y_ld);
        // A global pool's vector lanes share a block's channels, so it runs fewer blocks:
        // only where they still fill the GPU twice over or are no fewer (at batch 1 a
        // squeeze's 144 channels went from 65 blocks to 13, and ran slower).
        let pool_keeps_blocks = self.kind != OpKind::GlobalAveragePool
            || self.pool_blocks(8) >= self.pool_blocks(1).min(POOL_FULL_BLOCKS);
        if whole_vectors && pool_keeps_blocks {
            8
        } else {
            1
        }
    }

    /// A global pool's partial-sum blocks at vector width `v`: a span of channels (32, or up
    /// to 32 vectors of 8) x one pixel range of one sample each.
    fn pool_blocks(&self, v: u32) -> u64 {
        let span = if v == 1 {
            32
        } else {
            v * (self.c / v).clamp(1, POOL_SPAN_VECTORS)
        };
        u64::from(self.n) * u64::from(self.c.div_ceil(span)) * u64::from(self.splits())
    }

    /// The operator's entry points, launched in order. A global pool over one pixel range
    /// (maps of at most 256 pixels: the late stages' squeezes, the classifier's pool) is one
    /// kernel that stores y itself: a second launch cost more than the pool at batch 1.
    pub fn functions(&self) -> &'static [&'static str] {
        match self.kind {
            OpKind::GlobalAveragePool if self.splits() == 1 => &FUNCTIONS[4..5],
            OpKind::GlobalAveragePool => &FUNCTIONS[4..6],
            OpKind::GlobalAveragePoolFinish { .. } => &FUNCTIONS[5..6],
            OpKind::Pool(_) => &FUNCTIONS[0..1],
            OpKind::Resize { .. } => &FUNCTIONS[1..2],
            OpKind::Eltwise { .. } => &FUNCTIONS[2..3],
            OpKind::Softmax => &FUNCTIONS[3..4],
            OpKind::SqueezeExcite(_) => &FUNCTIONS[6..7],
            OpKind::ExpandDepthwise(_) => &FUNCTIONS[7..8],
        }
    }

    /// The operator's (first) entry point.
    pub fn function(&self) -> &'static str {
        match self.kind {
            OpKind::Pool(_) | OpKind::GlobalAveragePool => FUNCTIONS[0],
            OpKind::GlobalAveragePoolFinish { .. } => FUNCTIONS[5],
            OpKind::Resize { .. } => FUNCTIONS[1],
            OpKind::Eltwise { .. } => FUNCTIONS[2],
            OpKind::Softmax => FUNCTIONS[3],
            OpKind::SqueezeExcite(_) => FUNCTIONS[6],
            OpKind::ExpandDepthwise(_) => FUNCTIONS[7],
        }
    }

    /// The launch: blocks of [`BLOCK_THREADS`] threads (one block per pixel for softmax, one
    /// thread per output element otherwise), at most 65,536 blocks.
    pub fn blocks(&self) -> u32 {
        self.blocks_in_clusters(1)
    }

    /// Thread-block clusters the operator launches in on a GPU that takes clusters of up to
    /// `max_cluster` blocks: a squeeze-and-excitation head's ([`SqueezeExcite::cluster`]);
    /// 1 (none) for every other operator.
    pub fn cluster(&self, max_cluster: u32) -> u32 {
        match self.kind {
            OpKind::SqueezeExcite(se) => se.cluster(self.c, self.data_type, max_cluster),
            _ => 1,
        }
    }

    /// [`OpProblem::blocks`] launched in clusters of `cluster` blocks
    /// ([`OpProblem::cluster`]): a multiple of it.
    pub fn blocks_in_clusters(&self, cluster: u32) -> u32 {
        let [oh, ow] = self.output();
        let work = match self.kind {
            OpKind::Softmax => u64::from(self.n) * u64::from(oh) * u64::from(ow),
            // The partial sums' blocks (the finishing kernel needs fewer).
            OpKind::GlobalAveragePool => self.pool_blocks(self.vector_width()),
            // A block per sample and 32 channels.
            OpKind::GlobalAveragePoolFinish { .. } => {
                u64::from(self.n) * u64::from(self.c.div_ceil(32))
            }
            // Blocks an image, each a slice of its excitation.
            OpKind::SqueezeExcite(se) => u64::from(self.n) * u64::from(se.parts(self.n, cluster)),
            // A block a tile and 32 expanded channels.
            OpKind::ExpandDepthwise(xd) => xd.blocks(self.n, [oh, ow]),
            _ => (self.dense([oh, ow]) / u64::from(self.vector_width()))
                .div_ceil(u64::from(BLOCK_THREADS)),
        };
        work.clamp(1, MAX_BLOCKS) as u32
    }

    /// The kernel's argument block (of a validated problem).
    pub fn args(&self) -> OpArgs {
        self.args_in_clusters(1)
    }

    /// [`OpProblem::args`] for a launch in clusters of `cluster` blocks.
    pub fn args_in_clusters(&self, cluster: u32) -> OpArgs {
        let [oh, ow] = self.output();
        let ld = |v: u32| if v == 0 { self.c } else { v } as i32;
        let (mut win, mut stride, mut pad, mut mode) = ([1, 1], [1, 1], [0, 0], 0);
        let mut b_ld = 0;
        let (mut splits, mut strips, mut strip_group) = (self.splits(), 0, 0);
        match self.kind {
            OpKind::Pool(Pool2d {
                mode: m,
                window,
                stride: s,
                pad: p,
                ..
            }) => {
                (win, stride, pad) = (window, s, p);
                mode = match m {
                    PoolMode::Max => 0,
                    PoolMode::Average => 1,
                    PoolMode::AverageExcludePad => 2,
                };
            }
            OpKind::GlobalAveragePool => {
                win = self.input;
                mode = 1;
            }
            OpKind::GlobalAveragePoolFinish { partials } => {
                win = self.input;
                mode = 1;
                (splits, strips, strip_group) = (partials.slots(), partials.strips, partials.group);
            }
            OpKind::Resize { mode: m, .. } => mode = (m == ResizeMode::Bilinear) as i32,
            OpKind::Eltwise { op, broadcast } => {
                mode = match op {
                    EltwiseOp::Copy => 0,
                    EltwiseOp::Add => 1,
                    EltwiseOp::Mul => 2,
                };
                b_ld = if broadcast { 0 } else { self.c as i32 };
            }
            OpKind::Softmax => {}
            OpKind::ExpandDepthwise(xd) => {
                (win, stride, pad) = ([xd.filter; 2], [xd.stride; 2], [xd.pad(); 2]);
            }
            OpKind::SqueezeExcite(se) => {
                win = self.input;
                if let Some(partials) = se.partials {
                    mode = 1;
                    (splits, strips, strip_group) =
                        (partials.slots(), partials.strips, partials.group);
                }
            }
        }
        let se = match self.kind {
            OpKind::SqueezeExcite(se) => Some(se),
            _ => None,
        };
        let xd = match self.kind {
            OpKind::ExpandDepthwise(xd) => Some(xd),
            _ => None,
        };
        let tile = xd.map_or([0, 0], |xd| xd.tile([oh, ow]));
        // The fused layer's inner activation travels in the squeeze's fields.
        let (inner_act, inner_param) = match (se, xd) {
            (Some(se), _) => (se.squeeze_activation.code(), se.squeeze_param()),
            (_, Some(xd)) => (xd.expand_activation.code(), xd.expand_param()),
            _ => (0, 0.0),
        };
        OpArgs {
            n: self.n as i32,
            c: self.c as i32,
            in_h: self.input[0] as i32,
            in_w: self.input[1] as i32,
            out_h: oh as i32,
            out_w: ow as i32,
            win_h: win[0] as i32,
            win_w: win[1] as i32,
            stride_h: stride[0] as i32,
            stride_w: stride[1] as i32,
            pad_h: pad[0] as i32,
            pad_w: pad[1] as i32,
            mode,
            channels_last: self.layout.channels_last() as i32,
            a_ld: ld(self.a_ld),
            y_ld: xd.map_or(ld(self.y_ld), |xd| xd.expanded as i32),
            b_ld,
            act: self.activation.code(),
            act_a: self.activation_param,
            grid_threads: (self.blocks_in_clusters(cluster) * BLOCK_THREADS) as i32,
            splits: splits as i32,
            vec: self.vector_width() as i32,
            strips: strips as i32,
            strip_group: strip_group as i32,
            squeeze: se.map_or(0, |se| se.squeeze as i32),
            squeeze_act: inner_act,
            squeeze_act_a: inner_param,
            out_c: se.map_or(xd.map_or(0, |xd| xd.expanded as i32), |se| se.out as i32),
            parts: se.map_or(1, |se| se.parts(self.n, cluster) as i32),
            tile_h: tile[0] as i32,
            tile_w: tile[1] as i32,
        }
    }
}

/// A standalone operator ready to launch ([`crate::context::Context::prepare_op`]); run it
/// with [`crate::context::Context::run_op`].
pub struct OpInvoker {
    pub(crate) op: OpProblem,
    /// The entry points, launched in order.
    pub(crate) functions: Vec<crate::backend::Function>,
    pub(crate) args: OpArgs,
    /// Blocks a thread-block cluster holds (1: no clusters).
    pub(crate) cluster: u32,
}

impl OpInvoker {
    /// The operator it runs.
    pub fn problem(&self) -> &OpProblem {
        &self.op
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(window: u32, stride: u32, pad: u32, ceil_mode: bool, input: u32) -> OpProblem {
        OpProblem::new(
            OpKind::Pool(Pool2d {
                mode: PoolMode::Max,
                window: [window; 2],
                stride: [stride; 2],
                pad: [pad; 2],
                ceil_mode,
            }),
            1,
            8,
            [input; 2],
            Layout::Nhwc,
            DataType::Fp16,
        )
    }

    #[test]
    fn pooled_sizes_follow_pytorch() {
        // ResNet's stem pool, GoogLeNet's ceil-mode pools, YOLO's SPPF (5x5 s1 p2).
        assert_eq!(pool(3, 2, 1, false, 112).output(), [56, 56]);
        assert_eq!(pool(3, 2, 0, true, 112).output(), [56, 56]);
        assert_eq!(pool(3, 2, 0, false, 112).output(), [55, 55]);
        assert_eq!(pool(2, 2, 0, true, 7).output(), [4, 4]);
        assert_eq!(pool(5, 1, 2, false, 20).output(), [20, 20]);
        // ceil mode drops a window that would start in the padding: torch gives 3, not 4.
        assert_eq!(pool(2, 2, 1, true, 5).output(), [3, 3]);
        let g = OpProblem::new(
            OpKind::GlobalAveragePool,
            2,
            4,
            [7, 7],
            Layout::Nchw,
            DataType::Fp32,
        );
        assert_eq!(g.output(), [1, 1]);
        assert_eq!(g.args().win_h, 7);
        // A 112x112 map of few channels spreads over 49 pixel ranges; 7x7 takes one, in one
        // kernel with no workspace.
        assert_eq!((g.splits(), g.workspace_bytes(), g.blocks()), (1, 0, 2));
        let big = OpProblem::new(
            OpKind::GlobalAveragePool,
            1,
            32,
            [112, 112],
            Layout::Nhwc,
            DataType::Fp16,
        );
        assert_eq!(
            (big.splits(), big.workspace_bytes(), big.blocks()),
            (49, 32 * 49 * 4, 49)
        );
        // Channels-last in 8-channel vectors: a block sums up to 32 of them side by side (144
        // channels: 18, all in one block).
        let squeeze = OpProblem::new(
            OpKind::GlobalAveragePool,
            32,
            144,
            [56, 56],
            Layout::Nhwc,
            DataType::Fp16,
        );
        assert_eq!(squeeze.vector_width(), 8);
        assert_eq!((squeeze.splits(), squeeze.blocks()), (13, 32 * 13));
        // At batch 32 the 112x112 map of 32 channels stops at 17 ranges (544 blocks), not 49.
        let wide = OpProblem { n: 32, ..big };
        assert_eq!(
            (wide.splits(), wide.vector_width(), wide.blocks()),
            (17, 8, 32 * 17)
        );
        assert_eq!(wide.workspace_bytes(), 32 * 32 * 17 * 4);
        // At batch 1 that is 13 blocks against the scalar pool's 65: scalar.
        let single = OpProblem { n: 1, ..squeeze };
        assert_eq!((single.vector_width(), single.blocks()), (1, 5 * 13));
        assert_eq!(g.functions(), ["kiln_global_pool_partial"]);
        assert_eq!(
            big.functions(),
            ["kiln_global_pool_partial", "kiln_global_pool_finish"]
        );
    }

    fn head(c: u32, squeeze: u32, out: u32, n: u32) -> OpProblem {
        OpProblem::new(
            OpKind::SqueezeExcite(SqueezeExcite {
                squeeze,
                out,
                squeeze_activation: Activation::Silu,
                squeeze_param_bits: 0,
                partials: None,
            }),
            n,
            c,
            [1, 1],
            Layout::Nhwc,
            DataType::Fp16,
        )
        .with_activation(Activation::Sigmoid)
    }

    #[test]
    fn a_squeeze_and_excitation_head_packs_its_parameters_as_the_kernel_reads_them() {
        // EfficientNet-B0's last head: 1152 channels squeezed to 48.
        let p = head(1152, 48, 1152, 32);
        let OpKind::SqueezeExcite(se) = p.kind else {
            unreachable!()
        };
        assert!(p.validate().is_ok());
        // b1 and b2 (FP32), then W1 and W2^T (FP16), each 16-byte aligned.
        assert_eq!(
            two_layer_offsets(se.layer_parts(1152), 2),
            [0, 192, 4800, 4800 + 110_592, 4800 + 2 * 110_592]
        );
        assert_eq!(p.b_bytes(), 4800 + 2 * 110_592);
        let (c, s, k) = (5usize, 3usize, 4usize);
        let small = SqueezeExcite {
            squeeze: 3,
            out: 4,
            ..se
        };
        let w1: Vec<f32> = (0..s * c).map(|i| i as f32).collect();
        let b1 = [0.5f32, 1.5, 2.5];
        let w2: Vec<f32> = (0..k * s).map(|i| 100.0 + i as f32).collect();
        let b2 = [-1.0f32, -2.0, -3.0, -4.0];
        let bytes = small.pack(5, DataType::Fp32, [&w1, &b1, &w2, &b2]).unwrap();
        let at = two_layer_offsets(small.layer_parts(5), 4);
        assert_eq!(at, [0, 12, 32, 96, 144]);
        let f = |byte: u64| f32::from_le_bytes(bytes[byte as usize..][..4].try_into().unwrap());
        assert_eq!((f(4), f(at[1] + 12)), (1.5, -4.0));
        // W1[j = 2][c = 1] and W2[o = 3][j = 1] as stored.
        assert_eq!(f(at[2] + (2 * 5 + 1) * 4), 11.0);
        assert_eq!(f(at[3] + (3 * 3 + 1) * 4), 100.0 + (3 * 3 + 1) as f32);
        assert_eq!(
            small.pack(5, DataType::Fp32, [&w1, &b1, &w2[1..], &b2]),
            Err("excitation weights: 11 values, the head needs 12".into())
        );
        // A block an image at N=32 (slices cost the squeeze weights again); five slices of
        // 1152 outputs at N=1.
        assert_eq!(
            (
                head(1152, 48, 1152, 32).blocks(),
                head(1152, 48, 1152, 1).blocks()
            ),
            (64, 5)
        );
        assert_eq!(head(1152, 48, 1152, 1).args().parts, 5);
        assert_eq!(head(96, 24, 96, 1).blocks(), 1);
        // On sm_90, clusters of blocks an image, so many that each block reads at most 32 KiB
        // of the weights: EfficientNet-B0's heads of stages 7, 5 and 4 take 8, 4 and 2, its
        // small ones none; without clusters (other GPUs) one.
        let big = head(1152, 48, 1152, 32);
        let cluster = |c, s, k| head(c, s, k, 32).cluster(8);
        assert_eq!(
            (
                cluster(1152, 48, 1152),
                cluster(672, 28, 672),
                cluster(480, 20, 480)
            ),
            (8, 4, 2)
        );
        assert_eq!((cluster(240, 10, 240), big.cluster(1)), (1, 1));
        assert_eq!(big.blocks_in_clusters(8), 32 * 8);
        let args = big.args_in_clusters(8);
        assert_eq!((args.parts, args.grid_threads), (8, 32 * 8 * 256));
        // Every image's blocks fit one launch, in whole clusters.
        let e = head(1152, 48, 1152, 9000).validate().unwrap_err();
        assert!(e.reason.contains("at most 8192 images"), "{e}");
    }

    #[test]
    fn bad_squeeze_and_excitation_heads_are_refused() {
        let refused = |p: OpProblem, want: &str| {
            let e = p.validate().unwrap_err();
            assert!(e.reason.contains(want), "{e}");
            assert!(e.op.starts_with("squeeze-excite"), "{e}");
        };
        refused(head(4096, 48, 4096, 1), "at most 2048 and 256");
        refused(head(1152, 300, 1152, 1), "at most 2048 and 256");
        refused(head(1152, 0, 1152, 1), "at least 1");
        let mut sliced = head(64, 16, 64, 1);
        sliced.y_ld = 128;
        refused(sliced, "dense");
        let mut map = head(64, 16, 64, 1);
        map.input = [7, 7];
        refused(map, "reads the pooled 1x1 map");
        let mut nan = head(64, 16, 64, 1);
        if let OpKind::SqueezeExcite(se) = &mut nan.kind {
            se.squeeze_param_bits = f32::NAN.to_bits();
        }
        refused(nan, "parameter must be finite");
    }

    #[test]
    fn bad_operators_are_refused_naming_the_field() {
        let e = pool(3, 2, 2, false, 8).validate().unwrap_err();
        assert!(e.reason.contains("more than half the window"), "{e}");
        assert!(e.to_string().contains("maxpool 3x3 s2x2 p2x2"), "{e}");
        let e = pool(9, 1, 0, false, 8).validate().unwrap_err();
        assert!(e.reason.contains("larger than the padded input"), "{e}");
        let mut p = pool(3, 2, 1, false, 8);
        p.layout = Layout::Nchw;
        p.y_ld = 16;
        assert!(p.validate().unwrap_err().reason.contains("y_ld 16"));
        p.layout = Layout::Nhwc;
        p.y_ld = 4;
        assert!(p.validate().unwrap_err().reason.contains("at least c = 8"));
        p.y_ld = 16;
        p.validate().unwrap();
        p.data_type = DataType::Int8;
        assert!(p.validate().unwrap_err().reason.contains("INT8"));
        let s = OpProblem::new(OpKind::Softmax, 1, 10, [1, 1], Layout::Nhwc, DataType::Fp32)
            .with_activation(Activation::Relu);
        assert!(s.validate().unwrap_err().reason.contains("no activation"));
        let b = OpProblem::new(
            OpKind::Eltwise {
                op: EltwiseOp::Copy,
                broadcast: true,
            },
            1,
            8,
            [4, 4],
            Layout::Nhwc,
            DataType::Fp32,
        );
        assert!(b.validate().unwrap_err().reason.contains("second input"));
        let huge = OpProblem::new(
            OpKind::Softmax,
            u32::MAX,
            1 << 20,
            [1 << 15, 1 << 15],
            Layout::Nhwc,
            DataType::Fp32,
        );
        assert!(huge.validate().unwrap_err().reason.contains("over 2^64"));
        let big = OpProblem::new(
            OpKind::Softmax,
            32,
            1 << 11,
            [1 << 10, 1 << 10],
            Layout::Nhwc,
            DataType::Fp16,
        );
        let e = big.validate().unwrap_err().reason;
        assert!(
            e.contains("68719476736 elements") && e.contains("2^31 - 1"),
            "{e}"
        );
    }

    #[test]
    fn extents_count_channel_slices() {
        let mut p = OpProblem::new(
            OpKind::Eltwise {
                op: EltwiseOp::Mul,
                broadcast: true,
            },
            2,
            8,
            [3, 3],
            Layout::Nhwc,
            DataType::Fp16,
        );
        assert_eq!(
            (p.a_elements(), p.b_elements(), p.y_elements()),
            (144, 16, 144)
        );
        p.y_ld = 24;
        assert_eq!(p.y_elements(), 17 * 24 + 8);
        let a = p.args();
        assert_eq!((a.y_ld, a.a_ld, a.b_ld, a.mode, a.vec), (24, 8, 0, 2, 8));
        assert_eq!(a.grid_threads, 256);
        // 12 channels or a stride of 20 cannot move 16 bytes at a time.
        p.y_ld = 20;
        assert_eq!(p.vector_width(), 1);
        p.y_ld = 0;
        p.c = 12;
        assert_eq!(p.vector_width(), 1);
        p.c = 8;
        p.layout = Layout::Nchw;
        assert_eq!(p.vector_width(), 1);
    }

    fn fused(c: u32, map: u32, expanded: u32, filter: u32, stride: u32, n: u32) -> OpProblem {
        OpProblem::new(
            OpKind::ExpandDepthwise(ExpandDepthwise {
                expanded,
                filter,
                stride,
                expand_activation: Activation::ClippedRelu,
                expand_param_bits: 6f32.to_bits(),
            }),
            n,
            c,
            [map, map],
            Layout::Nhwc,
            DataType::Fp16,
        )
        .with_activation(Activation::ClippedRelu)
    }

    #[test]
    fn a_fused_expansion_tiles_its_output_and_packs_both_layers() {
        // MobileNetV2's first expansion at N=32: 56x56 outputs in 4 x 8 tiles (9 x 17 = 153
        // patch pixels), 14 x 7 tiles an image, 3 slices of 32 of the 96 channels.
        let p = fused(16, 112, 96, 3, 2, 32);
        assert!(p.validate().is_ok());
        let OpKind::ExpandDepthwise(xd) = p.kind else {
            unreachable!()
        };
        assert_eq!(p.output(), [56, 56]);
        assert_eq!(xd.tile([56, 56]), [4, 8]);
        assert_eq!(p.blocks(), 32 * 14 * 7 * 3);
        assert_eq!((p.y_elements(), p.y_channels()), (32 * 56 * 56 * 96, 96));
        let a = p.args();
        assert_eq!(
            (a.tile_h, a.tile_w, a.y_ld, a.out_c, a.win_h, a.stride_h, a.pad_h),
            (4, 8, 96, 96, 3, 2, 1)
        );
        assert_eq!(
            (a.squeeze_act, a.squeeze_act_a),
            (Activation::ClippedRelu.code(), 6.0)
        );
        // Stride 1: 8 x 14 tiles divide a 56x56 map (10 x 16 = 160 patch pixels, the most).
        let s1 = fused(24, 56, 144, 3, 1, 32);
        let OpKind::ExpandDepthwise(xd1) = s1.kind else {
            unreachable!()
        };
        assert_eq!(xd1.tile(s1.output()), [8, 14]);
        // Biases (FP32), then W1 [E][C] and W2 [E][3][3] (FP16), each 16-byte aligned.
        let (c, e) = (4usize, 8usize);
        let small = ExpandDepthwise { expanded: 8, ..xd };
        let w1: Vec<f32> = (0..e * c).map(|i| i as f32).collect();
        let b1: Vec<f32> = (0..e).map(|i| 0.5 + i as f32).collect();
        let w2: Vec<f32> = (0..e * 9).map(|i| 100.0 + i as f32).collect();
        let b2: Vec<f32> = (0..e).map(|i| -(i as f32)).collect();
        let bytes = small.pack(4, DataType::Fp32, [&w1, &b1, &w2, &b2]).unwrap();
        let at = two_layer_offsets(small.parts(4), 4);
        assert_eq!(at, [0, 32, 64, 192, 480]);
        assert_eq!(bytes.len(), 480);
        let f = |byte: u64| f32::from_le_bytes(bytes[byte as usize..][..4].try_into().unwrap());
        assert_eq!((f(4), f(at[1] + 28)), (1.5, -7.0));
        assert_eq!(f(at[2] + (5 * 4 + 3) * 4), 23.0);
        assert_eq!(f(at[3] + (7 * 9 + 8) * 4), 100.0 + 71.0);
        assert_eq!(
            small.pack(4, DataType::Fp32, [&w1, &b1, &w2[1..], &b2]),
            Err("depthwise weights: 71 values, the layer pair needs 72".into())
        );
        // What the kernel does not take is named.
        let refused = |p: OpProblem| p.validate().unwrap_err().reason;
        assert!(refused(fused(40, 8, 96, 3, 1, 1)).contains("at most 32"));
        assert!(refused(fused(16, 8, 98, 3, 1, 1)).contains("98 expanded channels"));
        assert!(refused(fused(16, 8, 96, 7, 1, 1)).contains("7x7 at stride 1"));
        assert!(refused(fused(16, 8, 96, 3, 3, 1)).contains("stride 3"));
        let mut sliced = fused(16, 8, 96, 3, 1, 1);
        sliced.y_ld = 128;
        assert!(refused(sliced).contains("dense NHWC"));
        assert!(refused(fused(16, 1 << 12, 96, 3, 1, 2)).contains("2^31"));
    }
}
