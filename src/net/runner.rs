//! A network built on a device for one batch size: every node resolved to a solver or an
//! operator, weights uploaded, activation memory allocated as planned, and the whole forward
//! pass captured into one graph, its independent branches on lanes of their own.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kiln_format::{Activation, DataType};

use super::weights::Weights;
use super::{Conv, MemoryPlan, NetError, NetworkDef, Op, Schedule, Shape, View};
use crate::backend::{DeviceBuffer, Event, Graph, OwnedStream, Stream};
use crate::context::{Context, EpilogueArgs};
use crate::invoker::Invoker;
use crate::ops::{ChannelOffsets, OpInvoker};
use crate::solvers::PoolPartials;

/// One launch of the forward pass.
enum Step {
    Conv {
        inv: Arc<Invoker>,
        x: usize,
        y: usize,
        residual: Option<usize>,
        weight: DeviceBuffer,
        scale: Option<DeviceBuffer>,
        bias: Option<DeviceBuffer>,
        activation_param: f32,
        /// y's and the residual's first channels in the tensors they are slices of.
        y_offset: u32,
        z_offset: u32,
        /// Where the epilogue writes the partial sums of the global pool that reads y.
        pool: Option<usize>,
        /// x's gate (a squeeze-and-excitation multiply folded in).
        x_scale: Option<usize>,
    },
    Op {
        inv: OpInvoker,
        a: usize,
        b: Option<usize>,
        y: usize,
        offsets: ChannelOffsets,
    },
}

/// How a network launches its kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetOptions {
    /// Launch the convolutions whose kernels wait on their predecessor (CUDA sm_90 objects)
    /// with programmatic dependent launch, so that a kernel's launch and prologue overlap the
    /// previous one's tail (other drivers and archs ignore it). On by default: the Hopper
    /// kernels release their dependents once their last loads are issued, and on an H200
    /// ResNet-50, EfficientNet-B0, MobileNet-V2 and YOLOv8n ran 0.5-6% faster with it (0.364
    /// against 0.387 ms for ResNet-50 at N=1), their outputs bit-identical
    /// (benches/runs/2026-11-28-h200-generality/). When kernels released them at entry, it was
    /// 0-10% slower. The short kernels (operators, squeeze-and-excitation 1x1 dots)
    /// wait first and release then; with them MobileNetV2 and EfficientNet-B0 ran 2-6% faster
    /// (benches/runs/2026-12-04-h200-short-kernel-pdl/).
    pub programmatic_launch: bool,
    /// Most streams the captured graph spreads the network's independent branches over
    /// ([`Schedule`]); 1 runs every node in order on one stream. A lane's first node, and a
    /// node that waits for another lane, launch without programmatic dependent launch. On an
    /// H200 four lanes ran YOLOv8n 9% faster than one at N=1 (0.504 against 0.551 ms) and 3%
    /// at N=32, ResNet-50 2% faster at N=1, the chains of MobileNetV2 and EfficientNet-B0
    /// alike, outputs bit-identical (benches/runs/2026-12-02-h200-lanes/).
    pub lanes: usize,
    /// Fold squeeze-and-excitation blocks into their layers: a global pool ends from the
    /// partial sums its depthwise layer's epilogue wrote ([`crate::Fusion::pool`]), and the
    /// gate's channel multiply becomes the next layer's gate on x ([`crate::Fusion::x_scale`]),
    /// each where a solver takes it (and, for the gate, where it saves time). On by default.
    pub fold_excitation: bool,
    /// Run each squeeze-and-excitation head (a global pool, its squeeze and its excitation
    /// layer: [`NetworkDef::excitation_heads`]) as one kernel
    /// ([`crate::ops::OpKind::SqueezeExcite`]) where its sizes allow, instead of a pool's
    /// finish and two 1x1 layers, each launch waiting for the last. Off by default: on an H100
    /// it ran EfficientNet-B0 1.6% slower at N=1 and 2.4% at N=32
    /// (`benches/runs/2026-12-06-h100-fused-expansion/`).
    pub excitation_heads: bool,
    /// Run each inverted residual's expansion and the depthwise layer that reads it
    /// ([`NetworkDef::fold_expansions`]) as one kernel ([`crate::ops::OpKind::ExpandDepthwise`])
    /// where its sizes allow (at most 32 input channels, a 3x3 or 5x5 depthwise layer at stride
    /// 1 or 2, dense tensors, no global pool of the depthwise output) and both layers' scales
    /// fold into their weights: the expanded tensor is then never written to memory (half of
    /// MobileNetV2's activation memory). Off by default: on an H100 it ran MobileNetV2 2.3%
    /// faster at N=1 but 26% slower at N=32 (`benches/runs/2026-12-06-h100-fused-expansion/`).
    pub fused_expansions: bool,
}

impl Default for NetOptions {
    fn default() -> Self {
        NetOptions {
            programmatic_launch: true,
            lanes: DEFAULT_LANES,
            fold_excitation: true,
            excitation_heads: false,
            fused_expansions: false,
        }
    }
}

/// [`NetOptions::lanes`]' default.
pub const DEFAULT_LANES: usize = 4;

/// A network ready to run on one device at one batch size.
pub struct Network<'c> {
    ctx: &'c Context,
    name: String,
    batch: u32,
    data_type: DataType,
    steps: Vec<Step>,
    /// The node (and so the lane) of each step.
    step_node: Vec<usize>,
    schedule: Schedule,
    /// The planned activation buffers, then the constants split epilogues read.
    buffers: Vec<DeviceBuffer>,
    /// Each lane's workspace (lanes may run at once, so none shares one).
    workspaces: Vec<Option<DeviceBuffer>>,
    input: (usize, Shape),
    outputs: Vec<(usize, Shape)>,
    plan: MemoryPlan,
    graph: Option<Graph>,
    stream: OwnedStream,
    /// The streams of lanes 1.. (lane 0 is `stream`).
    side_streams: Vec<OwnedStream>,
    options: NetOptions,
}

/// Converts a `crate::RunError` of `node` into a [`NetError`].
fn at(node: &str) -> impl Fn(crate::RunError) -> NetError + '_ {
    move |source| NetError::Run {
        node: node.to_string(),
        source,
    }
}

/// Uploads f32 values as `dtype` (weights) or as FP32 (scales and biases).
fn upload(
    ctx: &Context,
    node: &str,
    dtype: DataType,
    values: &[f32],
) -> Result<DeviceBuffer, NetError> {
    let (bytes, _) = crate::elements::encode(dtype, values);
    let b = ctx
        .device()
        .alloc(bytes.len() as u64)
        .map_err(|e| at(node)(e.into()))?;
    b.upload(&bytes).map_err(|e| at(node)(e.into()))?;
    Ok(b)
}

impl<'c> Network<'c> {
    /// Builds `def` for `batch` samples of `data_type` (FP16, BF16 or FP32; NHWC) on `ctx`:
    /// validates it, resolves every convolution (fused with its batch norm, residual and
    /// activation) and operator, converts and uploads `weights`, allocates the planned
    /// activation memory and captures the forward pass into a graph. Errors name the node.
    pub fn new(
        ctx: &'c Context,
        def: &NetworkDef,
        weights: &Weights,
        batch: u32,
        data_type: DataType,
    ) -> Result<Network<'c>, NetError> {
        Self::with_options(ctx, def, weights, batch, data_type, NetOptions::default())
    }

    /// [`Network::new`], launching as `options` says.
    pub fn with_options(
        ctx: &'c Context,
        def: &NetworkDef,
        weights: &Weights,
        batch: u32,
        data_type: DataType,
        options: NetOptions,
    ) -> Result<Network<'c>, NetError> {
        if batch == 0 {
            return Err(NetError::Definition {
                node: "input".into(),
                reason: "batch must be at least 1".into(),
            });
        }
        if !matches!(data_type, DataType::Fp16 | DataType::Bf16 | DataType::Fp32) {
            return Err(NetError::Definition {
                node: "input".into(),
                reason: format!(
                    "data type {}: networks run in FP16, BF16 or FP32",
                    data_type.name()
                ),
            });
        }
        // Each squeeze-and-excitation multiply folded into the convolution that reads its
        // output, where a solver takes the gate and it saves time.
        let folded = {
            let shapes = def.shapes()?;
            let views = def.concat_views()?;
            def.fold_channel_muls(|node| {
                options.fold_excitation
                    && gate_folds(ctx, node, &shapes, &views, batch, data_type, weights)
            })
        };
        // Each expansion the fused kernel takes folded into its depthwise layer.
        let folded = if options.fused_expansions {
            let shapes = folded.shapes()?;
            let views = folded.concat_views()?;
            let pooled: HashSet<&str> = folded
                .nodes
                .iter()
                .filter(|n| n.op == Op::GlobalAvgPool)
                .map(|n| n.inputs[0].as_str())
                .collect();
            folded.fold_expansions(|e, d| {
                let x = e.inputs[0].as_str();
                let dense = !views.contains_key(x) && !views.contains_key(d.output.as_str());
                dense
                    && !pooled.contains(d.output.as_str())
                    && matches!(
                        expansion_params(e, d, shapes[x].c, data_type, weights),
                        Ok(Some(_))
                    )
            })
        } else {
            folded
        };
        let def = &folded;
        let shapes = def.shapes()?;
        let schedule = Schedule::plan(def, options.lanes)?;
        let plan =
            MemoryPlan::plan_scheduled(def, |s: Shape| s.bytes(batch, data_type), &schedule)?;
        let buffer_of = |t: &str| plan.placement[t];
        // Concatenations' parts written in place: where in their concatenation each lies.
        let views = def.concat_views()?;
        let view_of = |t: &str| views.get(t);
        let mut steps = Vec::with_capacity(def.nodes.len());
        let mut step_node = Vec::with_capacity(def.nodes.len());
        let mut workspace = vec![0u64; schedule.lanes];
        // Per-(n, c) scales and biases of split epilogues and fused pools' partial sums,
        // placed after the activations.
        let mut constants = Constants {
            first: plan.buffers.len(),
            buffers: Vec::new(),
        };
        // The global pools that may end from their convolution's partial sums (the tensor
        // they pool is a convolution's whole output), by the tensor they pool; then, once
        // that convolution took them, where its sums lie.
        let mut pooled = def.pools_of_convolutions(|t| view_of(t).is_some());
        if !options.fold_excitation {
            pooled.clear();
        }
        let mut pool_sums: HashMap<&str, (usize, PoolPartials)> = HashMap::new();
        // Squeeze-and-excitation heads run as one kernel, by their pool's node; their two
        // layers then launch nothing.
        let heads: HashMap<usize, ExcitationHead> = if options.excitation_heads {
            excitation_heads(def, &shapes, &schedule, data_type, weights)?
        } else {
            HashMap::new()
        };
        let absorbed: HashSet<usize> = heads.values().flat_map(|h| [h.squeeze, h.excite]).collect();
        for (index, node) in def.nodes.iter().enumerate() {
            let name = node.name.as_str();
            if absorbed.contains(&index) {
                continue;
            }
            let workspace = &mut workspace[schedule.lane[index]];
            let x = shapes[node.inputs[0].as_str()];
            let y = shapes[node.output.as_str()];
            let conv = NetworkDef::as_conv(node);
            if let Some(e) = conv.as_ref().and_then(|c| c.expand.as_deref()) {
                let buffers = [buffer_of(&node.inputs[0]), buffer_of(&node.output)];
                let step = expansion_step(
                    ctx,
                    e,
                    node,
                    x,
                    batch,
                    data_type,
                    weights,
                    buffers,
                    &mut constants,
                )?;
                steps.push(step);
                step_node.resize(steps.len(), index);
                continue;
            }
            if let Some(c) = conv {
                let buffers = [buffer_of(&node.inputs[0]), buffer_of(&node.output)];
                let residual = c.residual.as_deref().map(buffer_of);
                let slices = [
                    view_of(&node.output),
                    c.residual.as_deref().and_then(view_of),
                ];
                let (conv_steps, sums) = conv_step(
                    ctx,
                    node,
                    &c,
                    node.activation,
                    x,
                    batch,
                    data_type,
                    weights,
                    buffers,
                    residual,
                    slices,
                    pooled.contains(node.output.as_str()),
                    c.x_scale.as_deref().map(buffer_of),
                    &mut constants,
                )?;
                if let Some(sums) = sums {
                    pool_sums.insert(node.output.as_str(), sums);
                }
                for step in conv_steps {
                    *workspace = (*workspace).max(match &step {
                        Step::Conv { inv, .. } => inv.workspace_bytes(),
                        Step::Op { inv, .. } => inv.problem().workspace_bytes(),
                    });
                    steps.push(step);
                }
                step_node.resize(steps.len(), index);
                continue;
            }
            if node.op == Op::Concat {
                // Each part not written in place copied into its channel slice of the output.
                let mut offset = 0;
                for t in &node.inputs {
                    let s = shapes[t.as_str()];
                    let here = offset;
                    offset += s.c;
                    if view_of(t).is_some_and(|v| v.root == node.output) {
                        continue;
                    }
                    let mut p = def.batched_op_problem(node, s, batch, data_type)?;
                    p.y_ld = y.c;
                    let a = input_slice(&mut p, view_of(t));
                    let inv = ctx.prepare_op(&p).map_err(at(name))?;
                    *workspace = (*workspace).max(p.workspace_bytes());
                    steps.push(Step::Op {
                        inv,
                        a: buffer_of(t),
                        b: None,
                        y: buffer_of(&node.output),
                        offsets: ChannelOffsets { a, y: here },
                    });
                }
                step_node.resize(steps.len(), index);
                continue;
            }
            let mut p = def.batched_op_problem(node, x, batch, data_type)?;
            // A global pool whose convolution summed its input: it ends the mean from the
            // convolution's partial sums.
            let summed = (node.op == Op::GlobalAvgPool)
                .then(|| pool_sums.get(node.inputs[0].as_str()).copied())
                .flatten();
            // A squeeze-and-excitation head that reads its convolution's partial sums ends
            // the pool itself; otherwise the pool runs as it is and the head reads its output.
            let head = heads.get(&index);
            if head.is_none() || summed.is_none() {
                let (a_buffer, a) = match summed {
                    Some((sums, partials)) => {
                        p.kind = crate::ops::OpKind::GlobalAveragePoolFinish { partials };
                        (sums, 0)
                    }
                    None => {
                        let start = match node.op {
                            Op::Slice { start, .. } => start,
                            _ => 0,
                        };
                        let a = start + input_slice(&mut p, view_of(&node.inputs[0]));
                        (buffer_of(&node.inputs[0]), a)
                    }
                };
                let y = match view_of(&node.output) {
                    Some(v) => {
                        p.y_ld = v.ld;
                        v.offset
                    }
                    None => 0,
                };
                let inv = ctx.prepare_op(&p).map_err(at(name))?;
                *workspace = (*workspace).max(p.workspace_bytes());
                steps.push(Step::Op {
                    inv,
                    a: a_buffer,
                    b: node.inputs.get(1).map(|t| buffer_of(t)),
                    y: buffer_of(&node.output),
                    offsets: ChannelOffsets { a, y },
                });
            }
            if let Some(head) = head {
                let pooled = summed.map_or(buffer_of(&node.output), |(sums, _)| sums);
                let gate = buffer_of(&def.nodes[head.excite].output);
                steps.push(head_step(
                    ctx,
                    name,
                    def,
                    head,
                    x,
                    batch,
                    data_type,
                    [pooled, gate],
                    summed.map(|(_, p)| p),
                    &mut constants,
                )?);
            }
            step_node.resize(steps.len(), index);
        }
        let mut buffers = Vec::with_capacity(plan.buffers.len() + constants.buffers.len());
        for &b in &plan.buffers {
            buffers.push(
                ctx.device()
                    .alloc(b)
                    .map_err(|e| at("activations")(e.into()))?,
            );
        }
        buffers.append(&mut constants.buffers);
        let workspaces = workspace
            .iter()
            .map(|&n| match n {
                0 => Ok(None),
                n => ctx
                    .device()
                    .alloc(n)
                    .map(Some)
                    .map_err(|e| at("workspace")(e.into())),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let new_stream = || {
            ctx.device()
                .create_stream()
                .map_err(|e| at("stream")(e.into()))
        };
        let stream = new_stream()?;
        let side_streams = (1..schedule.lanes)
            .map(|_| new_stream())
            .collect::<Result<Vec<_>, _>>()?;
        let mut net = Network {
            ctx,
            name: def.name.clone(),
            batch,
            data_type,
            steps,
            step_node,
            schedule,
            buffers,
            workspaces,
            input: (buffer_of(&def.input.0), def.input.1),
            outputs: def
                .outputs
                .iter()
                .map(|t| (buffer_of(t), shapes[t.as_str()]))
                .collect(),
            plan,
            graph: None,
            stream,
            side_streams,
            options,
        };
        // Where the driver captures no graphs (AMD), each run launches the steps back to back.
        if ctx.device().captures_graphs() {
            // The events a capture records must outlive it.
            let mut events = Vec::new();
            let graph = ctx
                .device()
                .capture(&net.stream, |s| net.enqueue_lanes(s, &mut events))?;
            drop(events);
            net.graph = Some(graph);
        }
        Ok(net)
    }

    /// Launches every step on `stream`, in order: the graph's work on one stream (the memory
    /// plan allows any order the schedule allows, this one included).
    pub fn enqueue(&self, stream: &Stream) -> Result<(), NetError> {
        self.enqueue_steps(0..self.steps.len(), stream)
    }

    /// Launches steps `range` on `stream`, in order (a profile times the first `i` steps in
    /// their place so); the steps past the last are none.
    pub fn enqueue_steps(
        &self,
        range: std::ops::Range<usize>,
        stream: &Stream,
    ) -> Result<(), NetError> {
        for i in range.start..range.end.min(self.steps.len()) {
            self.launch_step(i, stream, self.options.programmatic_launch)?;
        }
        Ok(())
    }

    /// Launches every step on its lane: lane 0 on `main`, the others on the network's side
    /// streams, forked from `main` at the start and joined back into it at the end, with an
    /// event wherever a node waits for another lane. `events` keeps the recorded events.
    fn enqueue_lanes(&self, main: &Stream, events: &mut Vec<Event>) -> Result<(), NetError> {
        let device = self.ctx.device();
        let streams: Vec<&Stream> = std::iter::once(main)
            .chain(self.side_streams.iter().map(|s| &**s))
            .collect();
        if streams.len() > 1 {
            let start = device.record_event(main)?;
            for s in &streams[1..] {
                start.wait_on(s)?;
            }
            events.push(start);
        }
        // The event recorded after each node another lane waits for.
        let mut ends: Vec<Option<usize>> = vec![None; self.schedule.lane.len()];
        let mut step = 0;
        for node in 0..self.schedule.lane.len() {
            let stream = streams[self.schedule.lane[node]];
            for &d in &self.schedule.waits[node] {
                let e = ends[d].ok_or_else(|| NetError::Definition {
                    node: self.name.clone(),
                    reason: format!("schedule: node {node} waits for node {d}, not yet run"),
                })?;
                events[e].wait_on(stream)?;
            }
            // Programmatic launch only after a kernel of this lane and nothing else.
            let programmatic = self.options.programmatic_launch
                && self.schedule.waits[node].is_empty()
                && !self.schedule.first_on_lane(node);
            while step < self.steps.len() && self.step_node[step] == node {
                self.launch_step(step, stream, programmatic)?;
                step += 1;
            }
            if self.schedule.is_waited_for(node) {
                events.push(device.record_event(stream)?);
                ends[node] = Some(events.len() - 1);
            }
        }
        for s in &streams[1..] {
            let end = device.record_event(s)?;
            end.wait_on(main)?;
            events.push(end);
        }
        Ok(())
    }

    /// The lanes the graph spreads the network over, and what waits for what.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// What step `i` runs: the convolution's fused problem and solver, or the operator (for
    /// profiles); `None` past the last step.
    pub fn step_name(&self, i: usize) -> Option<String> {
        self.steps.get(i).map(|s| match s {
            Step::Conv { inv, .. } => format!(
                "{} {} [{}]",
                inv.problem.find_db_key(),
                inv.variant.solver.id(),
                inv.variant.params
            ),
            Step::Op { inv, .. } => inv.problem().describe(),
        })
    }

    /// Launches step `i` alone on `stream` (a profile times each step so).
    pub fn enqueue_step(&self, i: usize, stream: &Stream) -> Result<(), NetError> {
        self.launch_step(i, stream, self.options.programmatic_launch)
    }

    /// Launches step `i` alone on `stream` without programmatic dependent launch: after work
    /// that is not one of the network's kernels (a profile's L2 eviction), which it must not
    /// overlap.
    pub fn enqueue_step_in_order(&self, i: usize, stream: &Stream) -> Result<(), NetError> {
        self.launch_step(i, stream, false)
    }

    /// Launches step `i` on `stream`, with programmatic dependent launch where `programmatic`
    /// (`NetOptions::programmatic_launch` says why).
    fn launch_step(&self, i: usize, stream: &Stream, programmatic: bool) -> Result<(), NetError> {
        let workspace = self
            .step_node
            .get(i)
            .and_then(|&n| self.workspaces[self.schedule.lane[n]].as_ref());
        if let Some(step) = self.steps.get(i) {
            match step {
                Step::Conv {
                    inv,
                    x,
                    y,
                    residual,
                    weight,
                    scale,
                    bias,
                    activation_param,
                    y_offset,
                    z_offset,
                    pool,
                    x_scale,
                } => {
                    let args = EpilogueArgs {
                        scale: scale.as_ref(),
                        bias: bias.as_ref(),
                        residual: residual.map(|r| &self.buffers[r]),
                        activation_param: *activation_param,
                        y_channel_offset: *y_offset,
                        z_channel_offset: *z_offset,
                        pool: pool.map(|b| &self.buffers[b]),
                        x_scale: x_scale.map(|b| &self.buffers[b]),
                        ..EpilogueArgs::defaults(&inv.problem)
                    };
                    self.ctx
                        .run_fused_launching(
                            inv,
                            &self.buffers[*x],
                            weight,
                            &self.buffers[*y],
                            workspace,
                            stream,
                            &args,
                            programmatic,
                        )
                        .map_err(at(&inv.problem.find_db_key().to_string()))?;
                }
                Step::Op {
                    inv,
                    a,
                    b,
                    y,
                    offsets,
                } => {
                    self.ctx
                        .run_op_launching(
                            inv,
                            &self.buffers[*a],
                            b.map(|b| &self.buffers[b]),
                            &self.buffers[*y],
                            *offsets,
                            workspace,
                            stream,
                            programmatic,
                        )
                        .map_err(at(&inv.problem().describe()))?;
                }
            }
        }
        Ok(())
    }

    /// Runs the forward pass: the captured graph (where the driver captures none, every
    /// launch back to back), on the network's own stream, waiting for it to finish.
    pub fn run(&self) -> Result<(), NetError> {
        match &self.graph {
            Some(graph) => graph
                .launch(&self.stream)
                .map_err(|e| at("graph")(e.into()))?,
            None => {
                let mut events = Vec::new();
                self.enqueue_lanes(&self.stream, &mut events)?;
                self.ctx
                    .device()
                    .synchronize()
                    .map_err(|e| at("launches")(e.into()))?;
                drop(events);
            }
        }
        self.ctx
            .device()
            .synchronize()
            .map_err(|e| at("graph")(e.into()))
    }

    /// The captured forward pass, to replay or time (`None` where the driver captures no
    /// graphs).
    pub fn graph(&self) -> Option<&Graph> {
        self.graph.as_ref()
    }

    /// The input buffer (`batch x h x w x c`, the network's data type): write images here.
    pub fn input(&self) -> &DeviceBuffer {
        &self.buffers[self.input.0]
    }

    /// How many tensors the network returns.
    pub fn outputs(&self) -> usize {
        self.outputs.len()
    }

    /// Output `i`'s buffer (`batch x h x w x c`, read after [`Network::run`]) and per-sample
    /// shape; `None` past the last.
    pub fn output(&self, i: usize) -> Option<(&DeviceBuffer, Shape)> {
        self.outputs
            .get(i)
            .map(|&(b, shape)| (&self.buffers[b], shape))
    }

    /// Bytes of output `i` (the batch's, in the network's data type); 0 past the last.
    pub fn output_bytes(&self, i: usize) -> u64 {
        self.outputs
            .get(i)
            .map_or(0, |&(_, s)| s.bytes(self.batch, self.data_type))
    }

    /// Every output's bytes, in order (after [`Network::run`]).
    pub fn download_outputs(&self) -> Result<Vec<Vec<u8>>, NetError> {
        (0..self.outputs.len())
            .map(|i| {
                let mut out = vec![0u8; self.output_bytes(i) as usize];
                self.buffers[self.outputs[i].0]
                    .download(&mut out)
                    .map_err(|e| at("output")(e.into()))?;
                Ok(out)
            })
            .collect()
    }

    /// The input's per-sample shape.
    pub fn input_shape(&self) -> Shape {
        self.input.1
    }

    /// Bytes of activation memory (the plan's buffers, input and output included).
    pub fn activation_bytes(&self) -> u64 {
        self.plan.total_bytes()
    }

    /// Launches per forward pass.
    pub fn launches(&self) -> usize {
        self.steps.len()
    }

    /// The batch size.
    pub fn batch(&self) -> u32 {
        self.batch
    }

    /// The data type.
    pub fn data_type(&self) -> DataType {
        self.data_type
    }

    /// Each convolution's solver and perf config, in order (for reports).
    pub fn solvers(&self) -> Vec<(String, &'static str, &'static str)> {
        self.steps
            .iter()
            .filter_map(|s| match s {
                Step::Conv { inv, .. } => Some((
                    inv.problem.find_db_key().to_string(),
                    inv.variant.solver.id(),
                    inv.variant.params,
                )),
                Step::Op { .. } => None,
            })
            .collect()
    }
}

/// Device buffers beside the activations, indexed after them: the constants of split
/// epilogues and the partial sums of pools fused into convolutions.
struct Constants {
    /// The index the first constant takes in the network's buffers.
    first: usize,
    buffers: Vec<DeviceBuffer>,
}

impl Constants {
    /// A buffer of `bytes` the kernels write before they read it; returns its index.
    fn scratch(&mut self, ctx: &Context, node: &str, bytes: u64) -> Result<usize, NetError> {
        let b = ctx.device().alloc(bytes).map_err(|e| at(node)(e.into()))?;
        self.buffers.push(b);
        Ok(self.first + self.buffers.len() - 1)
    }

    /// Uploads `bytes` as they are; returns the buffer's index.
    fn raw(&mut self, ctx: &Context, node: &str, bytes: &[u8]) -> Result<usize, NetError> {
        let b = ctx
            .device()
            .alloc(bytes.len() as u64)
            .map_err(|e| at(node)(e.into()))?;
        b.upload(bytes).map_err(|e| at(node)(e.into()))?;
        self.buffers.push(b);
        Ok(self.first + self.buffers.len() - 1)
    }

    /// Uploads `values` (per channel) repeated for each of `batch` samples, in `dtype`;
    /// returns its buffer index.
    fn per_sample(
        &mut self,
        ctx: &Context,
        node: &str,
        dtype: DataType,
        values: &[f32],
        batch: u32,
    ) -> Result<usize, NetError> {
        let repeated: Vec<f32> = (0..batch).flat_map(|_| values.iter().copied()).collect();
        self.buffers.push(upload(ctx, node, dtype, &repeated)?);
        Ok(self.first + self.buffers.len() - 1)
    }
}

/// Time a standalone operator pass over `bytes` is taken to cost, ms: a launch plus the
/// traffic at a bandwidth every supported GPU reaches (deliberately low, so a split is
/// chosen only when it clearly wins).
fn op_pass_ms(bytes: u64) -> f64 {
    0.004 + bytes as f64 / 1.0e9
}

/// The ranked solution this device can load first, with its invoker.
fn prepare_best(
    ctx: &Context,
    name: &str,
    problem: &crate::ConvProblem,
) -> Result<(Arc<Invoker>, f64), NetError> {
    let plan = ctx.find_solutions(problem).map_err(at(name))?;
    let mut last = None;
    for ranked in plan.iter() {
        match ctx.prepare(problem, &ranked.variant) {
            Ok(i) => return Ok((i, ranked.time_ms)),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => at(name)(e),
        None => NetError::Definition {
            node: name.into(),
            reason: format!("no solver applies to {}", problem.find_db_key()),
        },
    })
}

/// A convolution's steps: its fused problem resolved (the best ranked solution this device
/// can load), its filter converted to KRSC in `dtype`, its norm folded. When the plain
/// convolution's best solver (one that takes no fused epilogue, such as CUTLASS's 3xTF32)
/// plus the epilogue as standalone operator passes (per-channel scale, bias, the residual and
/// activation, in place) ranks clearly faster, that is what runs instead.
#[allow(clippy::too_many_arguments)]
fn conv_step(
    ctx: &Context,
    node: &super::Node,
    c: &Conv,
    activation: Activation,
    x: Shape,
    batch: u32,
    dtype: DataType,
    weights: &Weights,
    [xb, yb]: [usize; 2],
    residual: Option<usize>,
    [y_slice, z_slice]: [Option<&View>; 2],
    pool_wanted: bool,
    gate: Option<usize>,
    constants: &mut Constants,
) -> Result<ConvSteps, NetError> {
    let name = node.name.as_str();
    let (problem, cw) = node_problem(node, c, x, batch, dtype, weights, [y_slice, z_slice])?;
    let sliced = y_slice.is_some() || z_slice.is_some();
    let weight = upload(ctx, name, dtype, &cw.krsc)?;
    let (fused, fused_ms) = prepare_best(ctx, name, &problem)?;
    let plain = problem.without_fusion();
    // FP32 only: there a split's extra roundings (of y between passes, of the scale and bias
    // to the data type) are FP32's, far inside the tolerance; FP16 and BF16 keep the fused
    // epilogue's single rounding. A slice's convolution keeps its fused epilogue (the split's
    // passes write dense tensors), and so does one with a gate (FP16 and BF16 only).
    if plain != problem && dtype == DataType::Fp32 && !sliced && gate.is_none() {
        let (inv, plain_ms) = prepare_best(ctx, name, &plain)?;
        let y_bytes = plain.byte_counts()[2];
        let passes = [cw.scale.is_some(), cw.bias.is_some(), residual.is_some()]
            .iter()
            .filter(|&&p| p)
            .count()
            .max(1);
        let split_ms = plain_ms + passes as f64 * op_pass_ms(2 * y_bytes);
        if inv.variant.solver.id() != fused.variant.solver.id() && split_ms < 0.8 * fused_ms {
            let mut steps = vec![Step::Conv {
                inv,
                x: xb,
                y: yb,
                residual: None,
                weight,
                scale: None,
                bias: None,
                activation_param: 1.0,
                y_offset: 0,
                z_offset: 0,
                pool: None,
                x_scale: None,
            }];
            let [_, oh, ow] = plain.output();
            let y = Shape {
                c: c.out,
                h: oh,
                w: ow,
            };
            // In place on y: each pass reads and writes the same elements.
            let mut pass = |op: crate::ops::EltwiseOp,
                            broadcast: bool,
                            b: Option<usize>,
                            act: Activation|
             -> Result<(), NetError> {
                let mut p = crate::ops::OpProblem::new(
                    crate::ops::OpKind::Eltwise { op, broadcast },
                    batch,
                    y.c,
                    [y.h, y.w],
                    crate::Layout::Nhwc,
                    dtype,
                );
                p.activation = act;
                p.activation_param = act.default_param();
                steps.push(Step::Op {
                    inv: ctx.prepare_op(&p).map_err(at(name))?,
                    a: yb,
                    b,
                    y: yb,
                    offsets: ChannelOffsets::default(),
                });
                Ok(())
            };
            use crate::ops::EltwiseOp::{Add, Copy, Mul};
            let last_act = |is_last: bool| {
                if is_last {
                    activation
                } else {
                    Activation::Identity
                }
            };
            if let Some(s) = &cw.scale {
                let b = constants.per_sample(ctx, name, dtype, s, batch)?;
                pass(
                    Mul,
                    true,
                    Some(b),
                    last_act(cw.bias.is_none() && residual.is_none()),
                )?;
            }
            if let Some(v) = &cw.bias {
                let b = constants.per_sample(ctx, name, dtype, v, batch)?;
                pass(Add, true, Some(b), last_act(residual.is_none()))?;
            }
            if let Some(z) = residual {
                pass(Add, false, Some(z), activation)?;
            }
            if cw.scale.is_none() && cw.bias.is_none() && residual.is_none() {
                pass(Copy, false, None, activation)?;
            }
            return Ok((steps, None));
        }
    }
    // The global pool that reads y ends from the epilogue's partial sums, where the chosen
    // solution writes them (the depthwise kernel); else it reads y itself.
    let (fused, pool) = match pooled_twin(ctx, &problem, &fused, pool_wanted && !sliced) {
        Some((inv, partials)) => {
            let bytes = partials.bytes(problem.n(), problem.k());
            let sums = constants.scratch(ctx, name, bytes)?;
            (inv, Some((sums, partials)))
        }
        None => (fused, None),
    };
    let step = Step::Conv {
        inv: fused,
        x: xb,
        y: yb,
        residual,
        weight,
        scale: cw
            .scale
            .map(|v| upload(ctx, name, DataType::Fp32, &v))
            .transpose()?,
        bias: cw
            .bias
            .map(|v| upload(ctx, name, DataType::Fp32, &v))
            .transpose()?,
        activation_param: activation.default_param(),
        y_offset: y_slice.map_or(0, |v| v.offset),
        z_offset: z_slice.map_or(0, |v| v.offset),
        pool: pool.map(|(b, _)| b),
        x_scale: gate,
    };
    Ok((vec![step], pool))
}

/// A convolution node's fused problem (its norm's scale kept in the epilogue where it does not
/// fold into the filter; y and the residual in their channel slices) and its weights as they
/// are uploaded.
fn node_problem(
    node: &super::Node,
    c: &Conv,
    x: Shape,
    batch: u32,
    dtype: DataType,
    weights: &Weights,
    slices: [Option<&View>; 2],
) -> Result<(crate::ConvProblem, super::weights::ConvWeights), NetError> {
    let name = node.name.as_str();
    let mut cw = weights.of_conv_node(node, c, x.c)?;
    let mut problem = super::conv_problem(name, c, node.activation, x, batch, dtype)?;
    if cw.scale.is_some() && !cw.fold_scale(dtype) {
        problem = super::with_kept_scale(problem, name)?;
    }
    Ok((super::in_slices(problem, name, slices)?, cw))
}

/// A squeeze-and-excitation head that runs as one kernel: its two layers' nodes, its shape
/// (the partial sums filled in where its pool's convolution writes them) and its packed
/// parameters.
struct ExcitationHead {
    squeeze: usize,
    excite: usize,
    kind: crate::ops::SqueezeExcite,
    params: Vec<u8>,
}

/// The step of a squeeze-and-excitation head that reads buffer `pooled` (the pool's output,
/// or its convolution's partial sums where `partials` says how they lie) and writes its gate
/// into buffer `gate`; errors name the node `name` (the head's pool).
#[allow(clippy::too_many_arguments)]
fn head_step(
    ctx: &Context,
    name: &str,
    def: &NetworkDef,
    head: &ExcitationHead,
    x: Shape,
    batch: u32,
    dtype: DataType,
    [pooled, gate]: [usize; 2],
    partials: Option<PoolPartials>,
    constants: &mut Constants,
) -> Result<Step, NetError> {
    let excite = &def.nodes[head.excite];
    let kind = crate::ops::SqueezeExcite {
        partials,
        ..head.kind
    };
    let input = if partials.is_some() {
        [x.h, x.w]
    } else {
        [1, 1]
    };
    let se = crate::ops::OpProblem::new(
        crate::ops::OpKind::SqueezeExcite(kind),
        batch,
        x.c,
        input,
        crate::Layout::Nhwc,
        dtype,
    )
    .with_activation(excite.activation);
    Ok(Step::Op {
        inv: ctx.prepare_op(&se).map_err(at(name))?,
        a: pooled,
        b: Some(constants.raw(ctx, name, &head.params)?),
        y: gate,
        offsets: ChannelOffsets::default(),
    })
}

/// The fused kernel's shape and packed parameters for expansion node `e` (reading `c`
/// channels) and depthwise node `d`; `None` where the kernel does not take them (its sizes,
/// or a scale that does not fold into its weights).
fn expansion_params(
    e: &super::Node,
    d: &super::Node,
    c: u32,
    dtype: DataType,
    weights: &Weights,
) -> Result<Option<(crate::ops::ExpandDepthwise, Vec<u8>)>, NetError> {
    let (Op::Conv(ec), Op::Conv(dc)) = (&e.op, &d.op) else {
        return Ok(None);
    };
    let [f, _] = dc.kernel;
    let kind = crate::ops::ExpandDepthwise {
        expanded: ec.out,
        filter: f,
        stride: dc.stride[0],
        expand_activation: e.activation,
        expand_param_bits: e.activation.default_param().to_bits(),
    };
    let fits = dc.kernel == [f, f]
        && dc.stride == [kind.stride; 2]
        && dc.pad == [kind.pad(); 2]
        && crate::ops::OpProblem::new(
            crate::ops::OpKind::ExpandDepthwise(kind),
            1,
            c,
            [f, f],
            crate::Layout::Nhwc,
            dtype,
        )
        .validate()
        .is_ok();
    if !fits {
        return Ok(None);
    }
    let mut we = weights.of_conv_node(e, ec, c)?;
    let mut wd = weights.of_conv_node(d, dc, ec.out)?;
    if we.scale.is_some() && !we.fold_scale(dtype) || wd.scale.is_some() && !wd.fold_scale(dtype) {
        return Ok(None);
    }
    let zeros = || vec![0.0f32; ec.out as usize];
    let (be, bd) = (
        we.bias.take().unwrap_or_else(zeros),
        wd.bias.take().unwrap_or_else(zeros),
    );
    let params = kind
        .pack(c, dtype, [&we.krsc, &be, &wd.krsc, &bd])
        .map_err(|reason| NetError::Definition {
            node: d.name.clone(),
            reason,
        })?;
    Ok(Some((kind, params)))
}

/// The step of depthwise node `d` with the expansion `e` folded in
/// ([`NetworkDef::fold_expansions`]): one [`crate::ops::OpKind::ExpandDepthwise`] launch from
/// buffer `xb` (the expansion's input, shape `x`) to `yb`.
#[allow(clippy::too_many_arguments)]
fn expansion_step(
    ctx: &Context,
    e: &super::Node,
    d: &super::Node,
    x: Shape,
    batch: u32,
    dtype: DataType,
    weights: &Weights,
    [xb, yb]: [usize; 2],
    constants: &mut Constants,
) -> Result<Step, NetError> {
    let name = d.name.as_str();
    let Some((kind, params)) = expansion_params(e, d, x.c, dtype, weights)? else {
        return Err(NetError::Definition {
            node: name.into(),
            reason: format!("the fused kernel does not take the expansion {}", e.name),
        });
    };
    let p = crate::ops::OpProblem::new(
        crate::ops::OpKind::ExpandDepthwise(kind),
        batch,
        x.c,
        [x.h, x.w],
        crate::Layout::Nhwc,
        dtype,
    )
    .with_activation(d.activation);
    Ok(Step::Op {
        inv: ctx.prepare_op(&p).map_err(at(name))?,
        a: xb,
        b: Some(constants.raw(ctx, name, &params)?),
        y: yb,
        offsets: ChannelOffsets::default(),
    })
}

/// The heads of [`NetworkDef::excitation_heads`] that run as one kernel, by their pool's node:
/// those within the kernel's sizes, whose three nodes share a lane (the head's step stands
/// for all three), and whose layers' scales fold into their weights.
fn excitation_heads(
    def: &NetworkDef,
    shapes: &HashMap<&str, Shape>,
    schedule: &Schedule,
    dtype: DataType,
    weights: &Weights,
) -> Result<HashMap<usize, ExcitationHead>, NetError> {
    let mut out = HashMap::new();
    for [pool, squeeze, excite] in def.excitation_heads() {
        let lane = schedule.lane[pool];
        if schedule.lane[squeeze] != lane || schedule.lane[excite] != lane {
            continue;
        }
        let (a, b) = (&def.nodes[squeeze], &def.nodes[excite]);
        let (Op::Conv(ca), Op::Conv(cb)) = (&a.op, &b.op) else {
            continue;
        };
        let c = shapes[def.nodes[pool].inputs[0].as_str()].c;
        if c > crate::ops::SQUEEZE_EXCITE_MAX_C || ca.out > crate::ops::SQUEEZE_EXCITE_MAX_S {
            continue;
        }
        let mut wa = weights.of_conv_node(a, ca, c)?;
        let mut wb = weights.of_conv_node(b, cb, ca.out)?;
        if wa.scale.is_some() && !wa.fold_scale(dtype)
            || wb.scale.is_some() && !wb.fold_scale(dtype)
        {
            continue;
        }
        let zeros = |n: u32| vec![0.0f32; n as usize];
        let (ba, bb) = (
            wa.bias.take().unwrap_or_else(|| zeros(ca.out)),
            wb.bias.take().unwrap_or_else(|| zeros(cb.out)),
        );
        let kind = crate::ops::SqueezeExcite {
            squeeze: ca.out,
            out: cb.out,
            squeeze_activation: a.activation,
            squeeze_param_bits: a.activation.default_param().to_bits(),
            partials: None,
        };
        let params = kind
            .pack(c, dtype, [&wa.krsc, &ba, &wb.krsc, &bb])
            .map_err(|reason| NetError::Definition {
                node: a.name.clone(),
                reason,
            })?;
        out.insert(
            pool,
            ExcitationHead {
                squeeze,
                excite,
                kind,
                params,
            },
        );
    }
    Ok(out)
}

/// Whether convolution `node` should take the squeeze-and-excitation multiply that writes
/// its input as a gate on x ([`NetworkDef::fold_channel_muls`]): a solution of the gated
/// problem prepares, and its time is within the multiply's pass of the plain one's (the
/// multiply reads and writes x; only some solvers take a gate, so the best plain solution may
/// be another one).
fn gate_folds(
    ctx: &Context,
    node: &super::Node,
    shapes: &HashMap<&str, Shape>,
    views: &HashMap<String, View>,
    batch: u32,
    dtype: DataType,
    weights: &Weights,
) -> bool {
    let Some(c) = NetworkDef::as_conv(node) else {
        return false;
    };
    let Some(&x) = shapes.get(node.inputs[0].as_str()) else {
        return false;
    };
    let gated = Conv {
        x_scale: Some(String::new()),
        ..c.clone()
    };
    let slices = [
        views.get(&node.output),
        c.residual.as_ref().and_then(|r| views.get(r)),
    ];
    let Ok((problem, _)) = node_problem(node, &gated, x, batch, dtype, weights, slices) else {
        return false;
    };
    let Ok(plain) = problem.with_fusion(problem.fusion().without_x_scale()) else {
        return false;
    };
    let Ok((_, gated_ms)) = prepare_best(ctx, &node.name, &problem) else {
        return false;
    };
    let Ok((_, plain_ms)) = prepare_best(ctx, &node.name, &plain) else {
        return false;
    };
    gated_ms <= plain_ms + multiply_pass_ms(2 * x.bytes(batch, dtype))
}

/// Time a squeeze-and-excitation multiply over `bytes` (read and written) takes in a graph,
/// ms: on an H200 EfficientNet-B0's took 0.0147 ms over 2 x 25.7 MB (112x112 maps, N=32) and
/// 0.0024 ms over 2 x 2.1 MB (7x7), about 3.5 TB/s past 2 us
/// (benches/runs/2026-12-04-h200-copy-loop/prof/).
fn multiply_pass_ms(bytes: u64) -> f64 {
    0.002 + bytes as f64 / 3.5e9
}

/// A convolution's launches, and where it wrote a global pool's partial sums (their buffer
/// and layout), when it took the pool's sums.
type ConvSteps = (Vec<Step>, Option<(usize, PoolPartials)>);

/// `fused`'s solution run on `problem` with the global pool's partial sums fused too
/// ([`crate::Fusion::pool`]), when `wanted` and its solver writes them with the same config;
/// `None` keeps `fused` (the pool then reads y).
fn pooled_twin(
    ctx: &Context,
    problem: &crate::ConvProblem,
    fused: &Arc<Invoker>,
    wanted: bool,
) -> Option<(Arc<Invoker>, PoolPartials)> {
    if !wanted {
        return None;
    }
    let twin = problem
        .with_fusion(crate::Fusion {
            pool: true,
            ..problem.fusion()
        })
        .ok()?;
    let inv = ctx.prepare(&twin, &fused.variant).ok()?;
    let partials = inv.pool_partials()?;
    Some((inv, partials))
}

/// Points operator `p`'s first input (the only one that can be a slice) at the channel slice
/// `view` puts it in: sets `a_ld`, returns the slice's first channel (0 when dense).
fn input_slice(p: &mut crate::ops::OpProblem, view: Option<&View>) -> u32 {
    view.map_or(0, |v| {
        p.a_ld = v.ld;
        v.offset
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::models;

    #[test]
    fn the_pools_a_convolution_may_sum_are_found() {
        // EfficientNet-B0: each of its 16 squeeze-and-excitation pools reads a depthwise
        // layer's output, and the classifier's pool the head 1x1 layer's.
        let def = models::efficientnet_b0(1000);
        let pools = def.pools_of_convolutions(|_| false);
        assert_eq!(pools.len(), 17);
        let producers = def.producers();
        let depthwise = pools
            .iter()
            .filter(|t| {
                let node = &def.nodes[producers[**t]];
                NetworkDef::as_conv(node).is_some_and(|c| c.groups > 1)
            })
            .count();
        assert_eq!(depthwise, 16);
        // A tensor that is a slice of a concatenation is left to the standalone pool.
        assert!(def.pools_of_convolutions(|_| true).is_empty());
        // ResNet-50: only the classifier's pool, over the last block's output (its residual
        // add is fused into the block's last convolution).
        let resnet = models::resnet50(1000);
        assert_eq!(resnet.pools_of_convolutions(|_| false).len(), 1);
        // The twins a tuning run measures beside the plain problems: the 16 pooled depthwise
        // layers and the 16 gated projections (FP16; in FP32 no solver takes a gate).
        let twins = def.excitation_twins(32, DataType::Fp16).unwrap();
        let count = |tag: &str| {
            twins
                .iter()
                .filter(|(_, p)| p.find_db_key().as_str().ends_with(tag))
                .count()
        };
        assert_eq!((count("+pool"), count("+gate"), twins.len()), (16, 16, 32));
        assert_eq!(def.excitation_twins(32, DataType::Fp32).unwrap().len(), 16);
        assert!(resnet
            .excitation_twins(1, DataType::Fp16)
            .unwrap()
            .is_empty());
    }
}
