//! Whole networks: a list of operators over named tensors, validated when it is built, its
//! activation memory planned, its weights loaded from safetensors bytes (batch norm folded
//! into the convolutions' epilogues), and every launch captured into one CUDA graph per batch
//! size ([`Network`]), its independent branches on streams of their own ([`Schedule`]).
//!
//! A definition ([`NetworkDef`]) is per sample: batch, data type and layout are chosen when a
//! [`Network`] is built on a device. Tensors are NHWC; each is written once (by the node that
//! names it as its output) and read by later nodes. Convolutions carry their batch norm or
//! bias, a residual and an activation, which run in the convolution's fused epilogue; the
//! operators of [`crate::ops`] run what is left. A concatenation's parts are written straight
//! into its channel slices where their writer and readers allow ([`View`]). A classifier's
//! head is [`Op::Linear`]: a 1x1 convolution on a 1x1 map with a fused bias.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::ops::{Pool2d, ResizeMode};
use crate::Activation;

pub mod models;
mod runner;
mod schedule;
pub mod text;
pub mod weights;

pub use runner::{NetOptions, Network, DEFAULT_LANES};
pub use schedule::Schedule;

/// The data type a network runs in, by name (FP16, BF16 or FP32: the types its kernels and
/// operators are built for).
pub fn data_type(name: &str) -> Option<crate::DataType> {
    use crate::DataType::{Bf16, Fp16, Fp32};
    crate::DataType::from_name(name).filter(|d| matches!(d, Fp16 | Bf16 | Fp32))
}
pub use text::TextError;
pub use weights::Weights;

/// A tensor's per-sample shape: channels, height, width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Channels.
    pub c: u32,
    /// Height.
    pub h: u32,
    /// Width.
    pub w: u32,
}

impl Shape {
    /// Bytes of `batch` samples of this shape in `dtype`.
    pub fn bytes(&self, batch: u32, dtype: crate::DataType) -> u64 {
        u64::from(batch)
            * u64::from(self.c)
            * u64::from(self.h)
            * u64::from(self.w)
            * dtype.size_bytes() as u64
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.c, self.h, self.w)
    }
}

/// What follows a convolution's sums, per output channel, before the residual and activation.
#[derive(Clone, Debug, PartialEq)]
pub enum Norm {
    /// Nothing.
    None,
    /// A bias, the weight named.
    Bias(String),
    /// An inference batch norm whose `<prefix>.weight`, `.bias`, `.running_mean` and
    /// `.running_var` are folded into a scale and bias when the weights load.
    BatchNorm {
        /// The weights' name prefix (PyTorch's module path, e.g. `layer1.0.bn1`).
        prefix: String,
        /// Added to the variance.
        eps: f32,
    },
}

/// A convolution and what its epilogue fuses.
#[derive(Clone, Debug, PartialEq)]
pub struct Conv {
    /// The filter's name in the weights (`[K, C/groups, R, S]`, PyTorch's layout).
    pub weight: String,
    /// Output channels.
    pub out: u32,
    /// Filter `[h, w]`.
    pub kernel: [u32; 2],
    /// Stride `[h, w]`.
    pub stride: [u32; 2],
    /// Zero padding `[h, w]`.
    pub pad: [u32; 2],
    /// Groups (`groups == c == out`: depthwise).
    pub groups: u32,
    /// Scale and bias.
    pub norm: Norm,
    /// A tensor of the output's shape added before the activation.
    pub residual: Option<String>,
    /// A `c x 1 x 1` tensor (the input's channels) multiplying the input per channel before
    /// the convolution: a squeeze-and-excitation gate folded in
    /// ([`NetworkDef::fold_channel_muls`]).
    pub x_scale: Option<String>,
    /// A depthwise layer only: the 1x1 expansion node folded in before it
    /// ([`NetworkDef::fold_expansions`]). The layer then reads the expansion's input, and the
    /// expansion's output (the layer's input as written in the definition) is never stored.
    pub expand: Option<Box<Node>>,
}

/// What a node computes.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// A convolution with a fused epilogue; one input.
    Conv(Conv),
    /// A fully connected layer on a `c x 1 x 1` input: `weight` `[out, c]`, optional bias.
    Linear {
        /// The weight's name.
        weight: String,
        /// The bias's name.
        bias: Option<String>,
        /// Output features.
        out: u32,
    },
    /// 2-D pooling; one input.
    Pool(Pool2d),
    /// Mean over the pixels: a `c x 1 x 1` output.
    GlobalAvgPool,
    /// Upsampling by an integer factor.
    Resize {
        /// Nearest or bilinear.
        mode: ResizeMode,
        /// The factor (2 for the usual 2x upsample).
        factor: u32,
    },
    /// The sum of two tensors of one shape.
    Add,
    /// The product of a tensor and a `c x 1 x 1` one, broadcast over the pixels
    /// (squeeze-and-excitation); inputs `[x, scale]`.
    ChannelMul,
    /// The node's activation alone; one input.
    Activation,
    /// Softmax over channels; one input.
    Softmax,
    /// The inputs' channels, concatenated in order (same height and width).
    Concat,
    /// Channels `start .. start + channels` of one input (a split's part).
    Slice {
        /// The first channel taken.
        start: u32,
        /// How many.
        channels: u32,
    },
}

/// One operator of a network.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The node's name, for messages (PyTorch's module path, where it has one).
    pub name: String,
    /// What it computes.
    pub op: Op,
    /// The tensors it reads.
    pub inputs: Vec<String>,
    /// The tensor it writes (a new name).
    pub output: String,
    /// Applied last (fused where the op has an epilogue).
    pub activation: Activation,
}

/// A network, per sample: its input, nodes in execution order, and outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkDef {
    /// The network's name.
    pub name: String,
    /// The input tensor's name and shape.
    pub input: (String, Shape),
    /// The nodes, each reading only tensors written before it.
    pub nodes: Vec<Node>,
    /// The tensors the network returns, in order (a classifier's probabilities; a detector's
    /// maps, one per scale).
    pub outputs: Vec<String>,
}

/// Why a network cannot be built or run, naming the node and tensor.
#[derive(Debug)]
pub enum NetError {
    /// The definition is inconsistent.
    Definition {
        /// The node (or `input`/`output`).
        node: String,
        /// What is wrong, naming the tensor.
        reason: String,
    },
    /// A weight is missing, of the wrong shape or type, or the file is not safetensors.
    Weights {
        /// The node that needs it (or the file).
        node: String,
        /// What is wrong, naming the weight.
        reason: String,
    },
    /// A node's problem has no solver, or the device refused something.
    Run {
        /// The node.
        node: String,
        /// The error.
        source: crate::RunError,
    },
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetError::Definition { node, reason } => write!(f, "node {node}: {reason}"),
            NetError::Weights { node, reason } => write!(f, "node {node}: {reason}"),
            NetError::Run { node, source } => write!(f, "node {node}: {source}"),
        }
    }
}

impl std::error::Error for NetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NetError::Run { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<crate::backend::BackendError> for NetError {
    fn from(e: crate::backend::BackendError) -> Self {
        NetError::Run {
            node: "graph".into(),
            source: e.into(),
        }
    }
}

fn bad(node: &str, reason: String) -> NetError {
    NetError::Definition {
        node: node.to_string(),
        reason,
    }
}

/// The input a depthwise layer with the expansion `e` folded in sees, from the expansion's
/// input `x`: `e`'s output channels on `x`'s map. `e` must be a plain 1x1 layer (errors
/// name `node`, the depthwise layer).
fn expanded_input(e: &Node, x: Shape, node: &str) -> Result<Shape, NetError> {
    match &e.op {
        Op::Conv(c) if c.is_pointwise() && c.groups == 1 && c.out > 0 => {
            Ok(Shape { c: c.out, ..x })
        }
        _ => Err(bad(
            node,
            format!(
                "the expansion {} folded in is not a 1x1 layer at stride 1 without padding",
                e.name
            ),
        )),
    }
}

impl Conv {
    /// A 1x1 filter at stride 1 without padding, with no residual, gate or folded expansion.
    pub fn is_pointwise(&self) -> bool {
        self.kernel == [1, 1]
            && self.stride == [1, 1]
            && self.pad == [0, 0]
            && self.residual.is_none()
            && self.x_scale.is_none()
            && self.expand.is_none()
    }
}

impl Node {
    /// The node as the definition wrote it: a depthwise layer with a folded expansion
    /// ([`NetworkDef::fold_expansions`]) is the expansion's node and then the layer reading
    /// its output; any other node is itself.
    pub fn unfolded(&self) -> Vec<Node> {
        let Op::Conv(c) = &self.op else {
            return vec![self.clone()];
        };
        let Some(e) = &c.expand else {
            return vec![self.clone()];
        };
        let mut layer = self.clone();
        if let Op::Conv(c) = &mut layer.op {
            c.expand = None;
        }
        layer.inputs[0] = e.output.clone();
        vec![(**e).clone(), layer]
    }

    /// The tensors the node reads: its inputs and a convolution's residual and gate.
    pub fn reads(&self) -> impl Iterator<Item = &String> {
        let (residual, gate) = match &self.op {
            Op::Conv(c) => (c.residual.as_ref(), c.x_scale.as_ref()),
            _ => (None, None),
        };
        self.inputs.iter().chain(residual).chain(gate)
    }
}

impl NetworkDef {
    /// Every tensor's shape, in the order written; checks that each node reads tensors
    /// written before it, writes a new one, and fits its inputs' shapes.
    pub fn shapes(&self) -> Result<HashMap<&str, Shape>, NetError> {
        let mut shapes: HashMap<&str, Shape> = HashMap::new();
        let (input, s0) = (&self.input.0, self.input.1);
        if s0.c == 0 || s0.h == 0 || s0.w == 0 {
            return Err(bad(
                "input",
                format!("tensor {input} has an empty shape {s0}"),
            ));
        }
        shapes.insert(input, s0);
        for node in &self.nodes {
            let name = node.name.as_str();
            let mut ins = Vec::with_capacity(node.inputs.len());
            for t in &node.inputs {
                match shapes.get(t.as_str()) {
                    Some(s) => ins.push(*s),
                    None => {
                        return Err(bad(
                            name,
                            format!("reads tensor {t}, which no earlier node writes"),
                        ))
                    }
                }
            }
            let arity = |n: usize| -> Result<(), NetError> {
                if ins.len() == n {
                    Ok(())
                } else {
                    Err(bad(
                        name,
                        format!("takes {n} input(s), {} given", ins.len()),
                    ))
                }
            };
            let out = match &node.op {
                Op::Conv(c) => {
                    arity(1)?;
                    let x = match c.expand.as_deref() {
                        None => ins[0],
                        Some(e) => expanded_input(e, ins[0], name)?,
                    };
                    if c.groups == 0 || x.c % c.groups != 0 || c.out % c.groups != 0 {
                        return Err(bad(
                            name,
                            format!(
                                "groups {} must divide the input's {} and the output's {} channels",
                                c.groups, x.c, c.out
                            ),
                        ));
                    }
                    if c.out == 0 || c.kernel.contains(&0) || c.stride.contains(&0) {
                        return Err(bad(
                            name,
                            "output channels, kernel and stride must be at least 1".into(),
                        ));
                    }
                    let dim = |i: usize, size: u32| {
                        let span = u64::from(size) + 2 * u64::from(c.pad[i]);
                        span.checked_sub(u64::from(c.kernel[i]))
                            .map(|r| (r / u64::from(c.stride[i]) + 1) as u32)
                    };
                    let (Some(h), Some(w)) = (dim(0, x.h), dim(1, x.w)) else {
                        return Err(bad(
                            name,
                            format!("kernel {:?} is larger than the padded input {x}", c.kernel),
                        ));
                    };
                    let y = Shape { c: c.out, h, w };
                    // A tensor the convolution also reads must exist with its shape.
                    let read = |role: &str, t: &str, want: Shape, what: &str| match shapes.get(t) {
                        Some(s) if *s == want => Ok(()),
                        Some(s) => Err(bad(name, format!("{role} {t} is {s}, {what} {want}"))),
                        None => Err(bad(
                            name,
                            format!("{role} {t} is written by no earlier node"),
                        )),
                    };
                    if let Some(g) = &c.x_scale {
                        read(
                            "x-scale",
                            g,
                            Shape { c: x.c, h: 1, w: 1 },
                            "the input's gate is",
                        )?;
                    }
                    if let Some(r) = &c.residual {
                        read("residual", r, y, "the output is")?;
                    }
                    y
                }
                Op::Linear { out, .. } => {
                    arity(1)?;
                    if ins[0].h != 1 || ins[0].w != 1 {
                        return Err(bad(
                            name,
                            format!("a linear layer takes a Cx1x1 input, {} given", ins[0]),
                        ));
                    }
                    Shape {
                        c: *out,
                        h: 1,
                        w: 1,
                    }
                }
                Op::Pool(_) => {
                    arity(1)?;
                    let p = self
                        .op_problem(node, ins[0])
                        .ok_or_else(|| bad(name, "not an operator".into()))?;
                    p.validate().map_err(|e| bad(name, e.reason))?;
                    let [h, w] = p.output();
                    Shape { c: ins[0].c, h, w }
                }
                Op::GlobalAvgPool => {
                    arity(1)?;
                    Shape {
                        c: ins[0].c,
                        h: 1,
                        w: 1,
                    }
                }
                Op::Resize { factor, .. } => {
                    arity(1)?;
                    if *factor == 0 {
                        return Err(bad(name, "resize factor must be at least 1".into()));
                    }
                    Shape {
                        c: ins[0].c,
                        h: ins[0].h.saturating_mul(*factor),
                        w: ins[0].w.saturating_mul(*factor),
                    }
                }
                Op::Add => {
                    arity(2)?;
                    if ins[0] != ins[1] {
                        return Err(bad(
                            name,
                            format!(
                                "adds {} ({}) and {} ({}): shapes differ",
                                node.inputs[0], ins[0], node.inputs[1], ins[1]
                            ),
                        ));
                    }
                    ins[0]
                }
                Op::ChannelMul => {
                    arity(2)?;
                    let s = ins[1];
                    if s.c != ins[0].c || s.h != 1 || s.w != 1 {
                        return Err(bad(
                            name,
                            format!(
                                "scales {} ({}) by {} ({}): the scale must be {}x1x1",
                                node.inputs[0], ins[0], node.inputs[1], s, ins[0].c
                            ),
                        ));
                    }
                    ins[0]
                }
                Op::Activation | Op::Softmax => {
                    arity(1)?;
                    ins[0]
                }
                Op::Slice { start, channels } => {
                    arity(1)?;
                    if *channels == 0
                        || u64::from(*start) + u64::from(*channels) > u64::from(ins[0].c)
                    {
                        return Err(bad(
                            name,
                            format!(
                                "takes channels {start}..{} of {} ({}): out of range or empty",
                                u64::from(*start) + u64::from(*channels),
                                node.inputs[0],
                                ins[0]
                            ),
                        ));
                    }
                    Shape {
                        c: *channels,
                        ..ins[0]
                    }
                }
                Op::Concat => {
                    if ins.is_empty() {
                        return Err(bad(name, "concatenates nothing".into()));
                    }
                    if ins.iter().any(|s| s.h != ins[0].h || s.w != ins[0].w) {
                        return Err(bad(
                            name,
                            "concatenated tensors differ in height or width".into(),
                        ));
                    }
                    let c = ins.iter().map(|s| u64::from(s.c)).sum::<u64>();
                    Shape {
                        c: u32::try_from(c).map_err(|_| bad(name, "too many channels".into()))?,
                        h: ins[0].h,
                        w: ins[0].w,
                    }
                }
            };
            if node.op == Op::Softmax && node.activation != Activation::Identity {
                return Err(bad(name, "softmax takes no activation".into()));
            }
            if shapes.insert(node.output.as_str(), out).is_some() {
                return Err(bad(
                    name,
                    format!("writes tensor {}, which is already written", node.output),
                ));
            }
        }
        if self.outputs.is_empty() {
            return Err(bad("output", "the network returns no tensor".into()));
        }
        for (i, t) in self.outputs.iter().enumerate() {
            if !shapes.contains_key(t.as_str()) {
                return Err(bad("output", format!("tensor {t} is written by no node")));
            }
            if self.outputs[..i].contains(t) {
                return Err(bad("output", format!("tensor {t} is returned twice")));
            }
        }
        Ok(shapes)
    }

    /// The standalone operator a pooling, resizing, elementwise or softmax node runs on an
    /// input of shape `x` (batch 1, NHWC FP32: the caller sets those); `None` for the others.
    pub(crate) fn op_problem(&self, node: &Node, x: Shape) -> Option<crate::ops::OpProblem> {
        use crate::ops::{EltwiseOp, OpKind, OpProblem};
        let kind = match node.op {
            Op::Pool(pool) => OpKind::Pool(pool),
            Op::GlobalAvgPool => OpKind::GlobalAveragePool,
            Op::Resize { mode, factor } => OpKind::Resize {
                mode,
                out: [x.h.saturating_mul(factor), x.w.saturating_mul(factor)],
            },
            Op::Add => OpKind::Eltwise {
                op: EltwiseOp::Add,
                broadcast: false,
            },
            Op::ChannelMul => OpKind::Eltwise {
                op: EltwiseOp::Mul,
                broadcast: true,
            },
            Op::Activation | Op::Concat | Op::Slice { .. } => OpKind::Eltwise {
                op: EltwiseOp::Copy,
                broadcast: false,
            },
            Op::Softmax => OpKind::Softmax,
            Op::Conv(_) | Op::Linear { .. } => return None,
        };
        let mut p = OpProblem::new(
            kind,
            1,
            x.c,
            [x.h, x.w],
            crate::Layout::Nhwc,
            crate::DataType::Fp32,
        );
        p.activation = node.activation;
        p.activation_param = node.activation.default_param();
        if let Op::Slice { channels, .. } = node.op {
            // A copy of `channels` from the wider input (its first one set at run time).
            (p.c, p.a_ld) = (channels, x.c);
        }
        Some(p)
    }

    /// The operator `node` runs on an input of shape `x` for `batch` samples of `dtype`;
    /// an error naming the node for a convolution or linear layer.
    pub(crate) fn batched_op_problem(
        &self,
        node: &Node,
        x: Shape,
        batch: u32,
        dtype: crate::DataType,
    ) -> Result<crate::ops::OpProblem, NetError> {
        let mut p = self
            .op_problem(node, x)
            .ok_or_else(|| bad(&node.name, "not an operator".into()))?;
        (p.n, p.data_type) = (batch, dtype);
        Ok(p)
    }

    /// For each tensor a node writes, the index of that node.
    pub(crate) fn producers(&self) -> HashMap<&str, usize> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, node)| (node.output.as_str(), i))
            .collect()
    }

    /// For each tensor, the index of the last node that reads it (the network's outputs and
    /// input live to the end).
    fn last_reads(&self) -> HashMap<&str, usize> {
        let mut last: HashMap<&str, usize> = HashMap::new();
        for (i, node) in self.nodes.iter().enumerate() {
            for t in node.reads() {
                last.insert(t.as_str(), i);
            }
        }
        for t in &self.outputs {
            last.insert(t.as_str(), usize::MAX);
        }
        last.insert(self.input.0.as_str(), usize::MAX);
        last
    }
}

/// The fused convolution problem a convolution node (or a linear layer, as `c`) runs on an
/// input of shape `x`: NHWC, `batch` samples of `dtype`, its norm, residual and activation
/// in the epilogue.
pub fn conv_problem(
    node: &str,
    c: &Conv,
    activation: Activation,
    x: Shape,
    batch: u32,
    dtype: crate::DataType,
) -> Result<crate::ConvProblem, NetError> {
    let (scale, bias) = match c.norm {
        Norm::None => (false, false),
        Norm::Bias(_) => (false, true),
        // Its scale folds into the filter as the weights load (`ConvWeights::fold_scale`);
        // where that is refused, [`with_kept_scale`] puts it back.
        Norm::BatchNorm { .. } => (false, true),
    };
    let fusion = crate::Fusion {
        scale,
        bias,
        residual: c.residual.is_some(),
        activation,
        x_scale: c.x_scale.is_some(),
        ..crate::Fusion::NONE
    };
    crate::ConvProblem::new(crate::ConvSpec {
        n: batch,
        c: x.c,
        k: c.out,
        input: [1, x.h, x.w],
        filter: [1, c.kernel[0], c.kernel[1]],
        pad: [0, c.pad[0], c.pad[1]],
        stride: [1, c.stride[0], c.stride[1]],
        groups: c.groups,
        layouts: [crate::Layout::Nhwc; 3],
        data_types: [dtype; 3],
        fusion,
        ..crate::ConvSpec::default()
    })
    .map_err(|e| bad(node, e.to_string()))
}

/// `p` (convolution node `node`'s problem) with the per-channel scale in its epilogue: a batch
/// norm whose scale did not fold into the filter (`ConvWeights::fold_scale` refused it).
pub fn with_kept_scale(p: crate::ConvProblem, node: &str) -> Result<crate::ConvProblem, NetError> {
    p.with_fusion(crate::Fusion {
        scale: true,
        ..p.fusion()
    })
    .map_err(|e| bad(node, e.to_string()))
}

/// `p` (convolution node `node`'s problem) writing its output into the channel slice `y` and
/// reading its residual from the slice `z` ([`NetworkDef::concat_views`]): the fusion's `y_ld`
/// and `z_ld`; `p` itself when both are dense.
pub fn in_slices(
    p: crate::ConvProblem,
    node: &str,
    [y, z]: [Option<&View>; 2],
) -> Result<crate::ConvProblem, NetError> {
    if y.is_none() && z.is_none() {
        return Ok(p);
    }
    p.with_fusion(crate::Fusion {
        y_ld: y.map_or(0, |v| v.ld),
        z_ld: z.map_or(0, |v| v.ld),
        ..p.fusion()
    })
    .map_err(|e| bad(node, e.to_string()))
}

impl NetworkDef {
    /// The convolution node `node` as a [`Conv`] (a linear layer as a 1x1 convolution with a
    /// bias); `None` for the other operators.
    pub fn as_conv(node: &Node) -> Option<Conv> {
        match &node.op {
            Op::Conv(c) => Some(c.clone()),
            Op::Linear { weight, bias, out } => Some(Conv {
                weight: weight.clone(),
                out: *out,
                kernel: [1, 1],
                stride: [1, 1],
                pad: [0, 0],
                groups: 1,
                norm: bias.clone().map_or(Norm::None, Norm::Bias),
                residual: None,
                x_scale: None,
                expand: None,
            }),
            _ => None,
        }
    }

    /// `self` with each squeeze-and-excitation multiply folded into the convolution that reads
    /// its output, where `folds(convolution node)` says that convolution takes it: a channel
    /// multiply `mul(t, s)` without an activation, not an output of the network, read once, as
    /// the input of a convolution (not a linear layer) that has no gate yet. The multiply's
    /// node goes; the convolution reads `t` with `x_scale` `s`. The result computes the same
    /// tensors, each product rounded as the multiply would store it.
    pub fn fold_channel_muls(&self, folds: impl Fn(&Node) -> bool) -> NetworkDef {
        self.fold_into_readers(|node, reader| {
            if node.op != Op::ChannelMul || node.activation != Activation::Identity {
                return None;
            }
            let Op::Conv(c) = &reader.op else {
                return None;
            };
            if reader.inputs[0] != node.output || c.x_scale.is_some() || !folds(reader) {
                return None;
            }
            let mut folded = reader.clone();
            if let Op::Conv(c) = &mut folded.op {
                c.x_scale = Some(node.inputs[1].clone());
            }
            folded.inputs[0] = node.inputs[0].clone();
            Some(folded)
        })
    }

    /// `self` with each inverted residual's expansion folded into the depthwise layer that
    /// reads its output, where `folds(expansion, depthwise)` says so: a plain 1x1 layer (one
    /// group, no residual or gate), its output not a network output and read only by a
    /// depthwise layer (groups = channels, no residual or gate) as its input. The expansion's
    /// node goes; the depthwise layer reads its input, the expansion in its
    /// [`Conv::expand`]. What the runner runs as one kernel
    /// ([`crate::ops::OpKind::ExpandDepthwise`]).
    pub fn fold_expansions(&self, folds: impl Fn(&Node, &Node) -> bool) -> NetworkDef {
        self.fold_into_readers(|node, reader| {
            let (Op::Conv(e), Op::Conv(d)) = (&node.op, &reader.op) else {
                return None;
            };
            let depthwise = d.groups == e.out
                && d.out == e.out
                && d.residual.is_none()
                && d.x_scale.is_none()
                && d.expand.is_none();
            if !e.is_pointwise()
                || e.groups != 1
                || !depthwise
                || reader.inputs[0] != node.output
                || !folds(node, reader)
            {
                return None;
            }
            let mut folded = reader.clone();
            if let Op::Conv(d) = &mut folded.op {
                d.expand = Some(Box::new(node.clone()));
            }
            folded.inputs[0] = node.inputs[0].clone();
            Some(folded)
        })
    }

    /// `self` with each node whose output only one node reads (and that is no network
    /// output) folded into that reader where `fold(node, reader)` gives the reader as it
    /// becomes: the node goes, its reader is replaced.
    fn fold_into_readers(&self, fold: impl Fn(&Node, &Node) -> Option<Node>) -> NetworkDef {
        let mut reads: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, node) in self.nodes.iter().enumerate() {
            for t in node.reads() {
                reads.entry(t.as_str()).or_default().push(i);
            }
        }
        let mut folded = self.clone();
        let mut gone = vec![false; self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            let out = node.output.as_str();
            if self.outputs.iter().any(|o| o == out) {
                continue;
            }
            let &[j] = reads.get(out).map_or(&[][..], Vec::as_slice) else {
                continue;
            };
            if let Some(reader) = fold(node, &self.nodes[j]) {
                folded.nodes[j] = reader;
                gone[i] = true;
            }
        }
        let mut index = 0;
        folded.nodes.retain(|_| {
            index += 1;
            !gone[index - 1]
        });
        folded
    }

    /// The squeeze-and-excitation heads that may run as one kernel
    /// ([`crate::ops::OpKind::SqueezeExcite`]), as `[pool, squeeze, excitation]` node indices:
    /// a global average pool (no activation) read only by a 1x1 convolution, stride 1, no
    /// padding, one group, no residual or gate, whose output only a second such convolution
    /// reads; neither the pool's nor the squeeze's output is a network output. What the runner
    /// fuses where the head's sizes and its lanes allow ([`crate::net::NetOptions`]).
    pub fn excitation_heads(&self) -> Vec<[usize; 3]> {
        let mut readers: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, node) in self.nodes.iter().enumerate() {
            for t in node.reads() {
                readers.entry(t.as_str()).or_default().push(i);
            }
        }
        let is_output = |t: &str| self.outputs.iter().any(|o| o == t);
        // The one node that reads `t`, where it is a plain 1x1 layer reading it as x.
        let only_pointwise_reader = |t: &str| -> Option<usize> {
            let &[j] = readers.get(t).map_or(&[][..], Vec::as_slice) else {
                return None;
            };
            let node = &self.nodes[j];
            let Op::Conv(c) = &node.op else {
                return None;
            };
            let plain = c.is_pointwise() && c.groups == 1;
            (plain && node.inputs[0] == t && !is_output(t)).then_some(j)
        };
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.op == Op::GlobalAvgPool && n.activation == Activation::Identity)
            .filter_map(|(i, pool)| {
                let squeeze = only_pointwise_reader(&pool.output)?;
                let excite = only_pointwise_reader(&self.nodes[squeeze].output)?;
                Some([i, squeeze, excite])
            })
            .collect()
    }

    /// The tensors whose global pool may end from the partial sums of the convolution that
    /// writes them ([`crate::Fusion::pool`]): read by a global-average-pool node, written whole
    /// by a convolution (not a channel slice of a wider tensor, per `is_slice`), and read by
    /// no other global pool.
    pub fn pools_of_convolutions(&self, is_slice: impl Fn(&str) -> bool) -> HashSet<&str> {
        let producers = self.producers();
        let mut readers: HashMap<&str, usize> = HashMap::new();
        for node in self.nodes.iter().filter(|n| n.op == Op::GlobalAvgPool) {
            *readers.entry(node.inputs[0].as_str()).or_default() += 1;
        }
        readers
            .into_iter()
            .filter(|&(t, count)| {
                count == 1
                    && !is_slice(t)
                    && producers
                        .get(t)
                        .is_some_and(|&i| Self::as_conv(&self.nodes[i]).is_some())
            })
            .map(|(t, _)| t)
            .collect()
    }

    /// The problems the network runner may run in place of [`NetworkDef::conv_problems`]'
    /// where it folds a squeeze-and-excitation block ([`crate::net::NetOptions`]): each
    /// convolution whose output a global pool reads, with the pool's sums
    /// ([`crate::Fusion::pool`]: depthwise layers, whose solver writes the sums), and each
    /// that reads a channel multiply's output, with the gate ([`crate::Fusion::x_scale`]:
    /// dense FP16 and BF16 layers, whose Hopper solvers take it); with the node's name. What
    /// tuning for the network measures beside the plain problems.
    pub fn excitation_twins(
        &self,
        batch: u32,
        dtype: crate::DataType,
    ) -> Result<Vec<(String, crate::ConvProblem)>, NetError> {
        let views = self.concat_views()?;
        let pooled = self.pools_of_convolutions(|t| views.contains_key(t));
        let gated = self.fold_channel_muls(|_| true);
        let mut out = Vec::new();
        for (def, gate) in [(self, false), (&gated, true)] {
            let shapes = def.shapes()?;
            for node in &def.nodes {
                let Some(c) = Self::as_conv(node) else {
                    continue;
                };
                let x = shapes[node.inputs[0].as_str()];
                let depthwise = c.groups > 1 && c.groups == x.c && c.out == x.c;
                let pool = !gate && depthwise && pooled.contains(node.output.as_str());
                let dense_16 = c.groups == 1 && dtype != crate::DataType::Fp32;
                if !(pool || gate && dense_16 && c.x_scale.is_some()) {
                    continue;
                }
                let p = conv_problem(&node.name, &c, node.activation, x, batch, dtype)?;
                let slices = [
                    views.get(&node.output),
                    c.residual.as_ref().and_then(|r| views.get(r)),
                ];
                let p = in_slices(p, &node.name, slices)?;
                let p = p
                    .with_fusion(crate::Fusion { pool, ..p.fusion() })
                    .map_err(|e| bad(&node.name, e.to_string()))?;
                out.push((node.name.clone(), p));
            }
        }
        Ok(out)
    }

    /// Every convolution's fused problem at `batch` and `dtype`, with its node's name, in
    /// order (what a device resolves, and what tuning for this network measures).
    pub fn conv_problems(
        &self,
        batch: u32,
        dtype: crate::DataType,
    ) -> Result<Vec<(String, crate::ConvProblem)>, NetError> {
        let shapes = self.shapes()?;
        let views = self.concat_views()?;
        let mut out = Vec::new();
        for node in &self.nodes {
            if let Some(c) = Self::as_conv(node) {
                let x = shapes[node.inputs[0].as_str()];
                let p = conv_problem(&node.name, &c, node.activation, x, batch, dtype)?;
                let slices = [
                    views.get(&node.output),
                    c.residual.as_ref().and_then(|r| views.get(r)),
                ];
                out.push((node.name.clone(), in_slices(p, &node.name, slices)?));
            }
        }
        Ok(out)
    }
}

/// A tensor written straight into a channel slice of a wider one: a concatenation's part,
/// which then costs no copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// The concatenation's output, whose buffer holds the part.
    pub root: String,
    /// The part's first channel in the root.
    pub offset: u32,
    /// The root's channels: elements from one pixel to the next.
    pub ld: u32,
}

/// Whether `op` can write its output into a channel slice of a wider tensor (the fused
/// epilogue's `y_ld`, the operators' `y_ld`).
fn writes_slices(op: &Op) -> bool {
    matches!(
        op,
        Op::Conv(_)
            | Op::Pool(_)
            | Op::Resize { .. }
            | Op::Add
            | Op::ChannelMul
            | Op::Activation
            | Op::Slice { .. }
    )
}

/// Whether `op` can read its input `slot` (`None`: a convolution's residual) from a channel
/// slice: the operators' first input (`a_ld`) and a residual (`z_ld`); never a convolution's
/// input.
fn reads_slice(op: &Op, slot: Option<usize>) -> bool {
    match op {
        Op::Conv(_) => slot.is_none(),
        Op::Pool(_)
        | Op::Resize { .. }
        | Op::Add
        | Op::ChannelMul
        | Op::Activation
        | Op::Slice { .. }
        | Op::GlobalAvgPool => slot == Some(0),
        _ => false,
    }
}

impl NetworkDef {
    /// The concatenations' parts written in place ([`View`]), by tensor. A part is, when its
    /// writer can write a channel slice, every other reader can read one, it starts at a
    /// multiple of 8 channels of a concatenation whose width is one, it appears once there,
    /// and it is neither the network's input or output nor a concatenation itself (and a
    /// tensor joins the first concatenation that takes it). The other parts are copied.
    pub fn concat_views(&self) -> Result<HashMap<String, View>, NetError> {
        let shapes = self.shapes()?;
        let producer = self.producers();
        let mut readers: HashMap<&str, Vec<(usize, Option<usize>)>> = HashMap::new();
        for (i, node) in self.nodes.iter().enumerate() {
            for (slot, t) in node.inputs.iter().enumerate() {
                readers.entry(t.as_str()).or_default().push((i, Some(slot)));
            }
            if let Op::Conv(Conv {
                residual: Some(r), ..
            }) = &node.op
            {
                readers.entry(r.as_str()).or_default().push((i, None));
            }
            // A gate is read past the inputs' slots (never from a slice).
            if let Op::Conv(Conv {
                x_scale: Some(g), ..
            }) = &node.op
            {
                let slot = Some(node.inputs.len());
                readers.entry(g.as_str()).or_default().push((i, slot));
            }
        }
        let mut views: HashMap<String, View> = HashMap::new();
        for (host, node) in self.nodes.iter().enumerate() {
            if node.op != Op::Concat {
                continue;
            }
            let width = shapes[node.output.as_str()].c;
            let mut offset = 0;
            for t in &node.inputs {
                let here = offset;
                offset += shapes[t.as_str()].c;
                let once = node.inputs.iter().filter(|u| *u == t).count() == 1;
                let boundary = self.outputs.contains(t) || *t == self.input.0;
                let Some(&p) = producer.get(t.as_str()) else {
                    continue;
                };
                let others_read_slices = readers[t.as_str()]
                    .iter()
                    .all(|&(r, slot)| r == host || reads_slice(&self.nodes[r].op, slot));
                if width.is_multiple_of(8)
                    && here.is_multiple_of(8)
                    && once
                    && !boundary
                    && !views.contains_key(t)
                    && writes_slices(&self.nodes[p].op)
                    && others_read_slices
                {
                    views.insert(
                        t.clone(),
                        View {
                            root: node.output.clone(),
                            offset: here,
                            ld: width,
                        },
                    );
                }
            }
        }
        Ok(views)
    }
}

/// Where each tensor lives: activation memory reused once a tensor is dead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    /// Each buffer's bytes.
    pub buffers: Vec<u64>,
    /// The buffer of each tensor, by name.
    pub placement: HashMap<String, usize>,
}

impl MemoryPlan {
    /// Plans `def`'s tensors, `bytes(shape)` each, for nodes run one after another: a tensor
    /// takes the smallest free buffer that holds it (growing the largest free one if none
    /// does), and its buffer is free again after the last node that reads it. A tensor is
    /// never placed where a node's input lies, so no node reads and writes one buffer.
    pub fn plan(def: &NetworkDef, bytes: impl Fn(Shape) -> u64) -> Result<MemoryPlan, NetError> {
        Self::plan_scheduled(def, bytes, &Schedule::sequential(def.nodes.len()))
    }

    /// [`MemoryPlan::plan`] for nodes on `schedule`'s lanes: a tensor's buffer is free again
    /// for a node only once the tensor's writer and every reader precede that node, so nodes
    /// that may run at once never share a buffer.
    pub fn plan_scheduled(
        def: &NetworkDef,
        bytes: impl Fn(Shape) -> u64,
        schedule: &Schedule,
    ) -> Result<MemoryPlan, NetError> {
        let shapes = def.shapes()?;
        let views = def.concat_views()?;
        // A concatenation's parts written in place live in its output's buffer: what holds
        // each tensor, and every node that writes or reads it, and when it is last read.
        let storage = |t: &str| -> String { views.get(t).map_or(t, |v| v.root.as_str()).into() };
        let mut last: HashMap<String, usize> = HashMap::new();
        for (t, i) in def.last_reads() {
            let e = last.entry(storage(t)).or_insert(i);
            *e = (*e).max(i);
        }
        let mut users: HashMap<String, Vec<usize>> = HashMap::new();
        let mut writers: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, node) in def.nodes.iter().enumerate() {
            users.entry(storage(&node.output)).or_default().push(i);
            writers.entry(storage(&node.output)).or_default().push(i);
            for t in node.reads() {
                users.entry(storage(t)).or_default().push(i);
            }
        }
        let mut buffers: Vec<u64> = Vec::new();
        // Buffers whose tensor is dead, with that tensor's writer and readers: a node may take
        // one once they all precede it.
        let mut dead: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut placement: HashMap<String, usize> = HashMap::new();
        // The smallest dead buffer the nodes `writing` may take that holds `size` bytes, else
        // the largest they may take, grown; else a new one.
        let take = |size: u64,
                    writing: &[usize],
                    dead: &mut Vec<(usize, Vec<usize>)>,
                    buffers: &mut Vec<u64>| {
            let ready = |(_, (_, users)): &(usize, &(usize, Vec<usize>))| {
                writing
                    .iter()
                    .all(|&j| users.iter().all(|&u| schedule.precedes(u, j)))
            };
            let fit = dead
                .iter()
                .enumerate()
                .filter(ready)
                .filter(|(_, (b, _))| buffers[*b] >= size)
                .min_by_key(|(_, (b, _))| buffers[*b])
                .map(|(i, _)| i);
            let grow = dead
                .iter()
                .enumerate()
                .filter(ready)
                .max_by_key(|(_, (b, _))| buffers[*b])
                .map(|(i, _)| i);
            match fit.or(grow) {
                Some(i) => {
                    let (b, _) = dead.swap_remove(i);
                    buffers[b] = buffers[b].max(size);
                    b
                }
                None => {
                    buffers.push(size);
                    buffers.len() - 1
                }
            }
        };
        let input = &def.input.0;
        placement.insert(
            input.clone(),
            take(bytes(def.input.1), &[], &mut dead, &mut buffers),
        );
        for (i, node) in def.nodes.iter().enumerate() {
            // A part written in place takes its concatenation's buffer when the first part is
            // written, one that every part's writer may take.
            let held = storage(&node.output);
            let b = match placement.get(&held) {
                Some(&b) => b,
                None => {
                    let b = take(
                        bytes(shapes[held.as_str()]),
                        &writers[&held],
                        &mut dead,
                        &mut buffers,
                    );
                    placement.insert(held.clone(), b);
                    b
                }
            };
            placement.insert(node.output.clone(), b);
            // What is read for the last time here, and what nobody reads (not an output), is
            // dead after this node.
            let mut dying: Vec<String> = node
                .reads()
                .map(|t| storage(t))
                .filter(|t| last.get(t) == Some(&i))
                .collect();
            if !last.contains_key(&held) {
                dying.push(held);
            }
            for t in dying {
                let b = placement[&t];
                if dead.iter().all(|(d, _)| *d != b) {
                    dead.push((b, users.get(&t).cloned().unwrap_or_default()));
                }
            }
        }
        Ok(MemoryPlan { buffers, placement })
    }

    /// Bytes of activation memory the plan needs.
    pub fn total_bytes(&self) -> u64 {
        self.buffers.iter().sum()
    }
}

/// What `kiln info` says of a network at one batch size and data type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkSummary {
    /// Operators (nodes), convolutions included.
    pub operators: usize,
    /// Convolutions.
    pub convolutions: usize,
    /// Activation memory at this batch and type ([`MemoryPlan`]: input and outputs included).
    pub activation_bytes: u64,
    /// Per target (basename): how many of the convolutions its find-db ranks by measurements
    /// of the problem itself (or of its epilogue's kin, or its plain convolution), the rest
    /// being ranked from neighbours or the cost model.
    pub find_db_coverage: Vec<(&'static str, usize)>,
}

impl NetworkDef {
    /// The network's [`NetworkSummary`] at `batch` and `dtype` on `targets`.
    pub fn summary(
        &self,
        batch: u32,
        dtype: crate::DataType,
        targets: &'static [kiln_format::EmbeddedTarget],
    ) -> Result<NetworkSummary, NetError> {
        let problems = self.conv_problems(batch, dtype)?;
        let plan = MemoryPlan::plan(self, |s| s.bytes(batch, dtype))?;
        let find_db_coverage = targets
            .iter()
            .map(|t| {
                let measured = problems
                    .iter()
                    .filter(|(_, p)| {
                        crate::resolve::resolve(t, p)
                            .is_ok_and(|plan| plan.source == crate::resolve::PlanSource::FindDb)
                    })
                    .count();
                (t.basename, measured)
            })
            .collect();
        Ok(NetworkSummary {
            operators: self.nodes.len(),
            convolutions: problems.len(),
            activation_bytes: plan.total_bytes(),
            find_db_coverage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(name: &str, input: &str, out: u32, k: u32, s: u32, residual: Option<&str>) -> Node {
        Node {
            name: name.into(),
            op: Op::Conv(Conv {
                weight: format!("{name}.weight"),
                out,
                kernel: [k, k],
                stride: [s, s],
                pad: [k / 2, k / 2],
                groups: 1,
                norm: Norm::None,
                residual: residual.map(String::from),
                x_scale: None,
                expand: None,
            }),
            inputs: vec![input.into()],
            output: name.into(),
            activation: Activation::Relu,
        }
    }

    fn chain() -> NetworkDef {
        NetworkDef {
            name: "t".into(),
            input: ("x".into(), Shape { c: 8, h: 16, w: 16 }),
            nodes: vec![
                conv("a", "x", 16, 3, 2, None),
                conv("b", "a", 16, 3, 1, None),
                conv("c", "b", 16, 3, 1, Some("a")),
                conv("d", "c", 16, 1, 1, None),
            ],
            outputs: vec!["d".into()],
        }
    }

    #[test]
    fn squeeze_and_excitation_heads_are_found_where_nothing_else_reads_them() {
        let b0 = super::models::efficientnet_b0(1000);
        let heads = b0.excitation_heads();
        assert_eq!(heads.len(), 16);
        for [pool, squeeze, excite] in heads {
            assert_eq!(b0.nodes[pool].op, Op::GlobalAvgPool);
            assert!(b0.nodes[squeeze].name.ends_with("fc1"));
            assert!(b0.nodes[excite].name.ends_with("fc2"));
        }
        // ResNet-50's classifier pool feeds a linear layer: no head.
        assert!(super::models::resnet50(1000).excitation_heads().is_empty());
        // A squeeze whose output the network also returns stays a layer.
        let mut shown = b0.clone();
        let squeeze = shown.nodes[b0.excitation_heads()[0][1]].output.clone();
        shown.outputs.push(squeeze);
        assert_eq!(shown.excitation_heads().len(), 15);
    }

    #[test]
    fn expansions_fold_into_their_depthwise_layers_and_unfold_as_written() {
        let v2 = super::models::mobilenet_v2(1000);
        let all = v2.fold_expansions(|_, _| true);
        // Sixteen of MobileNetV2's seventeen inverted residuals expand (the first does not).
        assert_eq!(v2.nodes.len() - all.nodes.len(), 16);
        assert_eq!(
            all.shapes().unwrap()[v2.outputs[0].as_str()],
            v2.shapes().unwrap()[v2.outputs[0].as_str()]
        );
        let folded: Vec<&Node> = all
            .nodes
            .iter()
            .filter(|n| matches!(&n.op, Op::Conv(c) if c.expand.is_some()))
            .collect();
        assert_eq!(folded.len(), 16);
        // The layer reads the expansion's input, and the text form is the definition's.
        let first = folded[0];
        let Op::Conv(c) = &first.op else {
            unreachable!()
        };
        let e = c.expand.as_deref().unwrap();
        assert_eq!(first.inputs[0], e.inputs[0]);
        assert_eq!(all.to_text().unwrap(), v2.to_text().unwrap());
        // The predicate decides each pair; ResNet-50 has no depthwise layer to fold into.
        let some = v2.fold_expansions(|e, _| e.name.contains("features.2."));
        assert_eq!(v2.nodes.len() - some.nodes.len(), 1);
        let r50 = super::models::resnet50(1000);
        assert_eq!(
            r50.fold_expansions(|_, _| true).nodes.len(),
            r50.nodes.len()
        );
        // An expansion that is no 1x1 layer is named.
        let mut broken = all.clone();
        let at = all.nodes.iter().position(|n| n.name == first.name).unwrap();
        if let Op::Conv(c) = &mut broken.nodes[at].op {
            if let Some(e) = &mut c.expand {
                if let Op::Conv(ec) = &mut e.op {
                    ec.kernel = [3, 3];
                }
            }
        }
        let err = broken.shapes().unwrap_err().to_string();
        assert!(err.contains("is not a 1x1 layer"), "{err}");
    }

    #[test]
    fn shapes_follow_the_nodes() {
        let def = chain();
        let s = def.shapes().unwrap();
        assert_eq!(s["a"], Shape { c: 16, h: 8, w: 8 });
        assert_eq!(s["d"], Shape { c: 16, h: 8, w: 8 });
    }

    #[test]
    fn bad_definitions_name_the_node_and_tensor() {
        let mut def = chain();
        def.nodes[1].inputs[0] = "nope".into();
        let e = def.shapes().unwrap_err().to_string();
        assert!(e.contains("node b") && e.contains("tensor nope"), "{e}");
        let mut def = chain();
        if let Op::Conv(c) = &mut def.nodes[2].op {
            c.residual = Some("x".into());
        }
        let e = def.shapes().unwrap_err().to_string();
        assert!(
            e.contains("node c") && e.contains("residual x is 8x16x16"),
            "{e}"
        );
        // A gate must be the input's channels on a 1x1 map, written earlier.
        for (gate, says) in [
            ("a", "x-scale a is 16x8x8, the input's gate is 16x1x1"),
            ("d", "x-scale d is written by no earlier node"),
        ] {
            let mut def = chain();
            if let Op::Conv(c) = &mut def.nodes[2].op {
                c.x_scale = Some(gate.into());
            }
            let e = def.shapes().unwrap_err().to_string();
            assert!(e.contains("node c") && e.contains(says), "{e}");
        }
        let mut def = chain();
        def.nodes[3].output = "a".into();
        assert!(def
            .shapes()
            .unwrap_err()
            .to_string()
            .contains("already written"));
        let mut def = chain();
        def.outputs = vec!["z".into()];
        assert!(def.shapes().unwrap_err().to_string().contains("tensor z"));
        let mut def = chain();
        def.outputs = vec!["d".into(), "d".into()];
        assert!(def
            .shapes()
            .unwrap_err()
            .to_string()
            .contains("tensor d is returned twice"));
        def.outputs.clear();
        assert!(def
            .shapes()
            .unwrap_err()
            .to_string()
            .contains("returns no tensor"));
    }

    #[test]
    fn operator_nodes_check_their_inputs() {
        let node = |name: &str, op: Op, inputs: &[&str]| Node {
            name: name.into(),
            op,
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            output: name.into(),
            activation: Activation::Identity,
        };
        let with = |extra: Node| {
            let mut def = chain();
            def.nodes.push(extra);
            def.outputs = vec![def.nodes.last().unwrap().output.clone()];
            def.shapes().map(|_| ()).map_err(|e| e.to_string())
        };
        // a is 16x8x8, x is 8x16x16.
        let e = with(node("s", Op::Add, &["a", "x"])).unwrap_err();
        assert!(e.contains("node s") && e.contains("shapes differ"), "{e}");
        let e = with(node("m", Op::ChannelMul, &["a", "b"])).unwrap_err();
        assert!(e.contains("the scale must be 16x1x1"), "{e}");
        let e = with(node(
            "l",
            Op::Linear {
                weight: "w".into(),
                bias: None,
                out: 10,
            },
            &["a"],
        ))
        .unwrap_err();
        assert!(e.contains("takes a Cx1x1 input, 16x8x8 given"), "{e}");
        let e = with(node("c", Op::Concat, &["a", "x"])).unwrap_err();
        assert!(e.contains("differ in height or width"), "{e}");
        let e = with(node("t", Op::Softmax, &["a", "b"])).unwrap_err();
        assert!(e.contains("takes 1 input(s), 2 given"), "{e}");
        with(node("cat", Op::Concat, &["a", "b", "c"])).unwrap();
        let e = with(node(
            "half",
            Op::Slice {
                start: 8,
                channels: 9,
            },
            &["a"],
        ))
        .unwrap_err();
        assert!(
            e.contains("node half") && e.contains("channels 8..17 of a (16x8x8)"),
            "{e}"
        );
        with(node(
            "half",
            Op::Slice {
                start: 8,
                channels: 8,
            },
            &["a"],
        ))
        .unwrap();
        with(node("g", Op::GlobalAvgPool, &["d"])).unwrap();
    }

    #[test]
    fn memory_is_reused_once_a_tensor_is_dead() {
        let def = chain();
        let plan = MemoryPlan::plan(&def, |s| u64::from(s.c * s.h * s.w) * 2).unwrap();
        // x lives to the end (the caller's input); a lives until c (its residual) reads it;
        // b's buffer is free after c, so d takes it.
        let p = &plan.placement;
        assert_ne!(p["a"], p["b"]);
        assert_ne!(p["c"], p["a"]);
        assert_ne!(p["c"], p["b"]);
        assert!(p["d"] == p["a"] || p["d"] == p["b"], "{p:?}");
        assert_eq!(plan.buffers.len(), 4);
        assert_eq!(plan.total_bytes(), 8 * 16 * 16 * 2 + 3 * 16 * 8 * 8 * 2);
    }
}
