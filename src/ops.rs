//! Standalone operators: the work around a network's convolutions that no fused epilogue
//! absorbs. Max and average pooling (window, stride, padding, ceil mode), global average
//! pooling, nearest and bilinear resizing (2x upsampling), elementwise copy/add/multiply with
//! an optional per-(n, c) broadcast (squeeze-and-excitation), and softmax over channels.
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
pub const FUNCTIONS: [&str; 6] = [
    "kiln_pool2d",
    "kiln_resize",
    "kiln_eltwise",
    "kiln_softmax",
    "kiln_global_pool_partial",
    "kiln_global_pool_finish",
];

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
            OpKind::GlobalAveragePool | OpKind::GlobalAveragePoolFinish { .. } => [1, 1],
            OpKind::Resize { out, .. } => out,
            OpKind::Eltwise { .. } | OpKind::Softmax => self.input,
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
            OpKind::GlobalAveragePoolFinish { partials } => partials.bytes(self.n, self.c) / 4,
            _ => self.extent(self.input, self.a_ld),
        }
    }

    /// Bytes of the input: its elements in the data type, or FP32 partial sums.
    pub fn a_bytes(&self) -> u64 {
        let element = match self.kind {
            OpKind::GlobalAveragePoolFinish { .. } => 4,
            _ => self.data_type.size_bytes() as u64,
        };
        self.a_elements() * element
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
        self.extent(self.output(), self.y_ld)
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
        }
    }

    /// The launch: blocks of [`BLOCK_THREADS`] threads (one block per pixel for softmax, one
    /// thread per output element otherwise), at most 65,536 blocks.
    pub fn blocks(&self) -> u32 {
        let [oh, ow] = self.output();
        let work = match self.kind {
            OpKind::Softmax => u64::from(self.n) * u64::from(oh) * u64::from(ow),
            // The partial sums' blocks (the finishing kernel needs fewer).
            OpKind::GlobalAveragePool => self.pool_blocks(self.vector_width()),
            // A block per sample and 32 channels.
            OpKind::GlobalAveragePoolFinish { .. } => {
                u64::from(self.n) * u64::from(self.c.div_ceil(32))
            }
            _ => (self.dense([oh, ow]) / u64::from(self.vector_width()))
                .div_ceil(u64::from(BLOCK_THREADS)),
        };
        work.clamp(1, MAX_BLOCKS) as u32
    }

    /// The kernel's argument block (of a validated problem).
    pub fn args(&self) -> OpArgs {
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
        }
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
            y_ld: ld(self.y_ld),
            b_ld,
            act: self.activation.code(),
            act_a: self.activation_param,
            grid_threads: (self.blocks() * BLOCK_THREADS) as i32,
            splits: splits as i32,
            vec: self.vector_width() as i32,
            strips: strips as i32,
            strip_group: strip_group as i32,
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
}
