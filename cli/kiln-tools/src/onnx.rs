//! An ONNX model as a kiln network: its graph mapped onto kiln's operators ([`NetworkDef`]),
//! with each batch norm, residual add and activation folded into the convolution before it
//! where the graph allows, and its weights renamed to what the definition names.
//!
//! Read with `onnx-rs`, a dependency-free reader of ONNX's protobuf form that borrows from the
//! file's bytes. Supported: `Conv` (symmetric padding, no dilation), `BatchNormalization`
//! (after a convolution), `Relu`, `Clip` (0..6), `Sigmoid`, `Tanh`, `HardSigmoid` (PyTorch's),
//! `HardSwish`, `LeakyRelu` (slope 0.01), SiLU as `Mul(x, Sigmoid(x))`, `Add`, `MaxPool`,
//! `AveragePool`, `GlobalAveragePool`, `Flatten`/`Reshape`/`Identity`/`Dropout` where they are
//! layout no-ops (on `C x 1 x 1` tensors), `Gemm` and `MatMul` on a flattened tensor, `Softmax`
//! over channels, `Concat`, `Split` and `Slice` over channels, `Resize` by a whole factor
//! (PyTorch's nearest or bilinear), `Mul` by a `C x 1 x 1` tensor. `Constant` nodes and shape
//! arithmetic on them (`Shape`, `Gather`, integer `Add`/`Sub`/`Mul`/`Div`, ...: how torch.onnx
//! writes `chunk`) are folded at import. Anything else is an error naming the node, its
//! operator and the attribute.

use std::collections::HashMap;

use kiln::net::{Conv, NetworkDef, Node, Norm, Op, Shape};
use kiln::ops::{Pool2d, PoolMode};
use kiln::Activation;
use onnx_rs::ast::{DataType, Dimension, OpType, TensorProto};

/// A weight the network reads: its shape and FP32 values.
pub struct Tensor {
    /// Dimensions, PyTorch's order.
    pub shape: Vec<usize>,
    /// Values.
    pub values: Vec<f32>,
}

/// An imported network: its definition and the weights it names.
pub struct Imported {
    /// The definition.
    pub def: NetworkDef,
    /// The weights by the names the definition uses, in name order.
    pub weights: Vec<(String, Tensor)>,
}

/// An error naming where in the graph.
fn at(node: &str, op: &str, reason: impl std::fmt::Display) -> String {
    format!("node {node:?} ({op}): {reason}")
}

/// A name the definition's text form can hold: whitespace, ',' and '=' become '_'.
fn clean(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_whitespace() || c == ',' || c == '=' {
                '_'
            } else {
                c
            }
        })
        .collect();
    if s.is_empty() {
        "_".into()
    } else {
        s
    }
}

/// The graph being turned into kiln nodes.
struct Builder<'g> {
    init: HashMap<&'g str, &'g TensorProto<'g>>,
    /// How many nodes read each tensor (graph outputs count as readers).
    readers: HashMap<&'g str, usize>,
    /// ONNX tensors that name another (layout no-ops): tensor -> kiln tensor.
    alias: HashMap<String, String>,
    /// Integer tensors folded at import (shape arithmetic); `None` where the batch decides.
    values: HashMap<String, Vec<Option<i64>>>,
    input: (String, Shape),
    nodes: Vec<Node>,
    weights: Vec<(String, Tensor)>,
}

impl<'g> Builder<'g> {
    /// The kiln tensor an ONNX tensor is.
    fn tensor(&self, name: &str) -> String {
        let mut t = clean(name);
        while let Some(a) = self.alias.get(&t) {
            t = a.clone();
        }
        t
    }

    /// The kiln tensor ONNX input `name` of node `node` reads, which the graph's input or an
    /// earlier node must have written (ONNX lists nodes in execution order).
    fn read(&self, node: &str, op: &str, name: &str) -> Result<String, String> {
        let t = self.tensor(name);
        if t == self.input.0 || self.producer(&t).is_some() {
            Ok(t)
        } else {
            Err(at(
                node,
                op,
                format!(
                    "reads tensor {name:?}, which neither the input nor an earlier node writes"
                ),
            ))
        }
    }

    /// The kiln node that writes `tensor`, if one does.
    fn producer(&self, tensor: &str) -> Option<usize> {
        self.nodes.iter().rposition(|n| n.output == tensor)
    }

    /// `tensor`'s per-sample shape (the definition so far, checked).
    fn shape(&self, tensor: &str) -> Result<Shape, String> {
        let def = NetworkDef {
            name: "import".into(),
            input: self.input.clone(),
            nodes: self.nodes.clone(),
            outputs: vec![tensor.to_string()],
        };
        let shapes = def.shapes().map_err(|e| e.to_string())?;
        shapes
            .get(tensor)
            .copied()
            .ok_or_else(|| format!("tensor {tensor} is not written"))
    }

    /// An initializer's FP32 values and dimensions.
    fn initializer(
        &self,
        node: &str,
        op: &str,
        name: &str,
    ) -> Result<(Vec<usize>, Vec<f32>), String> {
        let t = self.init.get(name).ok_or_else(|| {
            at(
                node,
                op,
                format!("input {name:?} is computed, not a constant (an initializer)"),
            )
        })?;
        let dims: Vec<usize> = t
            .dims()
            .iter()
            .map(|&d| {
                usize::try_from(d).map_err(|_| at(node, op, format!("{name}: dimension {d}")))
            })
            .collect::<Result<_, _>>()?;
        let values = match t.data_type() {
            DataType::Float => t.as_f32().map(|v| v.into_owned()),
            DataType::Double => t.as_f64().map(|v| v.iter().map(|&x| x as f32).collect()),
            other => {
                return Err(at(
                    node,
                    op,
                    format!("{name} is {other:?}; kiln reads FP32 weights"),
                ))
            }
        }
        .ok_or_else(|| {
            at(
                node,
                op,
                format!("{name} holds no values (external data is not read)"),
            )
        })?;
        // Each dimension positive and below 2^31 (they become kiln's 32-bit sizes), their
        // product the number of values held.
        if let Some(d) = dims.iter().find(|&&d| d == 0 || d > i32::MAX as usize) {
            return Err(at(node, op, format!("{name}: dimension {d} of {dims:?}")));
        }
        let count = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        if count != Some(values.len()) {
            return Err(at(
                node,
                op,
                format!("{name} holds {} values for dims {dims:?}", values.len()),
            ));
        }
        Ok((dims, values))
    }

    /// Integer tensor `name` as far as the import knows it: a constant, or shape arithmetic
    /// folded here (`None` for a value that depends on the batch size).
    fn integers(&self, name: &str) -> Option<Vec<Option<i64>>> {
        if let Some(v) = self.values.get(name) {
            return Some(v.clone());
        }
        let t = self.init.get(name)?;
        let v = match t.data_type() {
            DataType::Int32 => t.as_i32()?.iter().map(|&x| Some(i64::from(x))).collect(),
            _ => t.as_i64()?.iter().map(|&x| Some(x)).collect(),
        };
        Some(v)
    }

    /// Constant integers `name` (Resize's sizes, Split's sizes, Slice's bounds).
    fn int_list(&self, node: &str, op: &str, name: &str) -> Result<Vec<i64>, String> {
        let v = self.integers(name).ok_or_else(|| {
            at(
                node,
                op,
                format!("input {name:?} is not a constant list of integers"),
            )
        })?;
        v.into_iter().collect::<Option<Vec<i64>>>().ok_or_else(|| {
            at(
                node,
                op,
                format!("input {name:?} depends on the batch size; kiln plans for any batch"),
            )
        })
    }

    /// Shape arithmetic (`Shape`, `Gather`, integer `Add`/`Sub`/`Mul`/`Div`, `Cast`,
    /// `Squeeze`/`Unsqueeze`, `Concat`), folded at import: exporters compute a split's sizes
    /// this way (torch.onnx's `chunk`), and kiln's shapes are fixed but for the batch. Whether
    /// node `n` was folded; an error where its integers cannot be.
    fn fold_integers(&mut self, n: &onnx_rs::ast::Node) -> Result<bool, String> {
        let (name, op) = (n.name, n.op_type.as_str());
        let Some(&out) = n.output.first() else {
            return Ok(false);
        };
        let inputs: Vec<&str> = n.input.iter().copied().filter(|s| !s.is_empty()).collect();
        if n.op_type == OpType::Shape {
            if n.attribute
                .iter()
                .any(|a| a.name == "start" || a.name == "end")
            {
                return Err(at(name, op, "attributes start and end: not supported"));
            }
            let Some(&x) = inputs.first() else {
                return Err(at(name, op, "no input 0"));
            };
            let t = self.read(name, op, x)?;
            let s = self.shape(&t).map_err(|e| at(name, op, e))?;
            let dims = [None, Some(s.c), Some(s.h), Some(s.w)];
            self.values.insert(
                out.to_string(),
                dims.iter().map(|d| d.map(i64::from)).collect(),
            );
            return Ok(true);
        }
        let arithmetic = matches!(
            n.op_type,
            OpType::Add | OpType::Sub | OpType::Mul | OpType::Div
        );
        let folds = arithmetic
            || matches!(
                n.op_type,
                OpType::Gather
                    | OpType::Cast
                    | OpType::Squeeze
                    | OpType::Unsqueeze
                    | OpType::Concat
            );
        // Only nodes on integers fold (a Mul of maps is a multiply; a Squeeze's axes input is
        // integers too, so only its data decides).
        let data: &[&str] = match n.op_type {
            OpType::Squeeze | OpType::Unsqueeze | OpType::Cast => &inputs[..inputs.len().min(1)],
            _ => &inputs,
        };
        if !folds || data.is_empty() {
            return Ok(false);
        }
        let Some(vals) = data
            .iter()
            .map(|i| self.integers(i))
            .collect::<Option<Vec<Vec<Option<i64>>>>>()
        else {
            return Ok(false);
        };
        let result = match n.op_type {
            OpType::Gather => {
                if int(n, "axis", 0) != 0 {
                    return Err(at(name, op, "gathers integers along axis 0 only"));
                }
                let [values, index] = &vals[..] else {
                    return Err(at(name, op, "expects data and indices"));
                };
                index
                    .iter()
                    .map(|i| {
                        let i = i.ok_or_else(|| at(name, op, "index depends on the batch"))?;
                        let at_i = if i < 0 { i + values.len() as i64 } else { i };
                        usize::try_from(at_i)
                            .ok()
                            .and_then(|k| values.get(k).copied())
                            .ok_or_else(|| {
                                at(name, op, format!("index {i} of {} values", values.len()))
                            })
                    })
                    .collect::<Result<Vec<_>, _>>()?
            }
            OpType::Cast => {
                let to = int(n, "to", 0);
                // INT64 (7) and INT32 (6): an integer stays one.
                if to != 7 && to != 6 {
                    return Err(at(
                        name,
                        op,
                        format!("attribute to {to}: shape arithmetic casts to integers only"),
                    ));
                }
                vals[0].clone()
            }
            OpType::Squeeze | OpType::Unsqueeze => vals[0].clone(),
            OpType::Concat => vals.concat(),
            _ => {
                let [x, y] = &vals[..] else {
                    return Err(at(name, op, "expects two inputs"));
                };
                let len = x.len().max(y.len());
                if (x.len() != len && x.len() != 1) || (y.len() != len && y.len() != 1) {
                    return Err(at(
                        name,
                        op,
                        format!("{} and {} values do not broadcast", x.len(), y.len()),
                    ));
                }
                let pick = |v: &Vec<Option<i64>>, i: usize| if v.len() == 1 { v[0] } else { v[i] };
                (0..len)
                    .map(|i| {
                        let (Some(a), Some(b)) = (pick(x, i), pick(y, i)) else {
                            return Ok(None);
                        };
                        let r = match n.op_type {
                            OpType::Add => a.checked_add(b),
                            OpType::Sub => a.checked_sub(b),
                            OpType::Mul => a.checked_mul(b),
                            _ => a.checked_div(b),
                        };
                        r.map(Some).ok_or_else(|| {
                            at(name, op, format!("{a} and {b} overflow or divide by zero"))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?
            }
        };
        self.values.insert(out.to_string(), result);
        Ok(true)
    }

    /// `name` as a weight name no weight has yet, nor starts with followed by '.'.
    fn unused(&self, name: &str) -> String {
        let mut n = clean(name);
        while self.weights.iter().any(|(w, _)| {
            *w == n
                || w.strip_prefix(n.as_str())
                    .is_some_and(|r| r.starts_with('.'))
        }) {
            n.push('_');
        }
        n
    }

    /// A weight under `name` (made unique) for the definition; the name used.
    fn weight(&mut self, name: &str, shape: Vec<usize>, values: Vec<f32>) -> String {
        let n = self.unused(name);
        self.weights.push((n.clone(), Tensor { shape, values }));
        n
    }

    /// A concatenation's inputs with each run of adjacent slices that together are one whole
    /// tensor (torch's `chunk` and then `cat` of the pieces) replaced by that tensor, so the
    /// concatenation copies it once and the slices need not run.
    fn whole_slices(&self, inputs: Vec<String>) -> Vec<String> {
        let slice_of = |t: &str| {
            let n = &self.nodes[self.producer(t)?];
            match n.op {
                Op::Slice { start, channels } => Some((n.inputs[0].clone(), start, channels)),
                _ => None,
            }
        };
        let mut out = Vec::with_capacity(inputs.len());
        let mut i = 0;
        while i < inputs.len() {
            let whole = slice_of(&inputs[i]).and_then(|(source, start, channels)| {
                let c = self.shape(&source).ok()?.c;
                let (mut end, mut j) = (start + channels, i + 1);
                while end < c && j < inputs.len() {
                    match slice_of(&inputs[j]) {
                        Some((s, st, ch)) if s == source && st == end => end += ch,
                        _ => return None,
                    }
                    j += 1;
                }
                (start == 0 && end == c).then_some((source, j))
            });
            match whole {
                Some((source, next)) => {
                    out.push(source);
                    i = next;
                }
                None => {
                    out.push(inputs[i].clone());
                    i += 1;
                }
            }
        }
        out
    }

    /// Appends operator `op` of ONNX node `name`, reading `inputs` and writing `output`, with
    /// no activation yet.
    fn push(&mut self, name: &str, op: Op, inputs: Vec<String>, output: String) {
        self.nodes.push(Node {
            name: clean(name),
            op,
            inputs,
            output,
            activation: Activation::Identity,
        });
    }

    /// Appends activation `act` of ONNX node `name`, or folds it into the node that writes
    /// `input` when that node has no activation yet and its ONNX output `onnx_input` is read
    /// by this activation alone (`readers` ONNX nodes: 2 for SiLU's sigmoid and multiply).
    fn activation(
        &mut self,
        name: &str,
        (input, onnx_input, readers): (&str, &str, usize),
        output: String,
        act: Activation,
    ) {
        if let Some(i) = self.producer(input) {
            let only_reader = self.readers.get(onnx_input).copied() == Some(readers);
            if only_reader && self.nodes[i].activation == Activation::Identity {
                self.nodes[i].activation = act;
                self.nodes[i].output = output;
                return;
            }
        }
        self.nodes.push(Node {
            name: clean(name),
            op: Op::Activation,
            inputs: vec![input.to_string()],
            output,
            activation: act,
        });
    }
}

/// An attribute's integer list (or `default`).
fn ints(n: &onnx_rs::ast::Node, name: &str, default: &[i64]) -> Vec<i64> {
    n.attribute
        .iter()
        .find(|a| a.name == name)
        .map_or_else(|| default.to_vec(), |a| a.ints.clone())
}

/// An attribute's integer (or `default`).
fn int(n: &onnx_rs::ast::Node, name: &str, default: i64) -> i64 {
    n.attribute
        .iter()
        .find(|a| a.name == name)
        .map_or(default, |a| a.i)
}

/// An attribute's float (or `default`).
fn float(n: &onnx_rs::ast::Node, name: &str, default: f32) -> f32 {
    n.attribute
        .iter()
        .find(|a| a.name == name)
        .map_or(default, |a| a.f)
}

/// Refuses attributes outside `known`, naming the first.
fn only(n: &onnx_rs::ast::Node, op: &str, known: &[&str]) -> Result<(), String> {
    match n.attribute.iter().find(|a| !known.contains(&a.name)) {
        Some(a) => Err(at(
            n.name,
            op,
            format!("attribute {:?} is not supported", a.name),
        )),
        None => Ok(()),
    }
}

/// `[h, w]` from an ONNX pair, each in 1..2^31.
fn hw(node: &str, op: &str, what: &str, v: &[i64]) -> Result<[u32; 2], String> {
    match v {
        [h, w]
            if (0..=i64::from(i32::MAX)).contains(h) && (0..=i64::from(i32::MAX)).contains(w) =>
        {
            Ok([*h as u32, *w as u32])
        }
        _ => Err(at(
            node,
            op,
            format!("attribute {what} {v:?} is not two sizes (2-D)"),
        )),
    }
}

/// Symmetric 2-D padding from ONNX's `[top, left, bottom, right]`.
fn pads(n: &onnx_rs::ast::Node, op: &str) -> Result<[u32; 2], String> {
    let p = ints(n, "pads", &[0, 0, 0, 0]);
    if let Some(a) = n.attribute.iter().find(|a| a.name == "auto_pad") {
        if a.s != b"NOTSET" {
            return Err(at(
                n.name,
                op,
                format!(
                    "attribute auto_pad {:?} is not supported (give pads)",
                    String::from_utf8_lossy(a.s)
                ),
            ));
        }
    }
    match p.as_slice() {
        [t, l, b, r] if t == b && l == r => hw(n.name, op, "pads", &[*t, *l]),
        _ => Err(at(
            n.name,
            op,
            format!("attribute pads {p:?}: kiln pads each side alike"),
        )),
    }
}

/// Maps an ONNX model's bytes onto a kiln network named `name`.
pub fn import(bytes: &[u8], name: &str) -> Result<Imported, String> {
    let model = onnx_rs::parse(bytes).map_err(|e| format!("not an ONNX model: {e:?}"))?;
    let graph = model.graph.as_ref().ok_or("the model has no graph")?;
    let mut init: HashMap<&str, &TensorProto> =
        graph.initializer.iter().map(|t| (t.name(), t)).collect();
    // Constants the exporter writes as nodes: `Constant` (a value attribute) and `Identity` of a
    // constant (torch.onnx's way of sharing one initializer under two names) are constants too.
    for n in &graph.node {
        let Some(&out) = n.output.first() else {
            continue;
        };
        match n.op_type {
            OpType::Constant => {
                let value = n.attribute.iter().find(|a| a.name == "value");
                match value.and_then(|a| a.t.as_ref()) {
                    Some(t) => init.insert(out, t),
                    None => {
                        return Err(at(
                            n.name,
                            "Constant",
                            "only a tensor 'value' attribute is read",
                        ))
                    }
                };
            }
            OpType::Identity => {
                if let Some(t) = n.input.first().and_then(|i| init.get(i)).copied() {
                    init.insert(out, t);
                }
            }
            _ => {}
        }
    }
    let inputs = graph.non_init_inputs();
    let [input] = inputs.as_slice() else {
        let names: Vec<&str> = inputs.iter().map(|i| i.name).collect();
        return Err(format!(
            "kiln networks take one input; the graph has {}: {names:?}",
            names.len()
        ));
    };
    if input.tensor_elem_type() != Some(DataType::Float) {
        return Err(format!(
            "input {:?} is not FP32 ({:?})",
            input.name,
            input.tensor_elem_type()
        ));
    }
    let dims: Vec<Option<u32>> = input
        .tensor_shape()
        .map(|s| {
            s.dim
                .iter()
                .map(|d| match d.value {
                    Dimension::Value(v) if v > 0 && v < i64::from(i32::MAX) => Some(v as u32),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let shape = match dims.as_slice() {
        [_, Some(c), Some(h), Some(w)] => Shape {
            c: *c,
            h: *h,
            w: *w,
        },
        _ => {
            return Err(format!(
                "input {:?}: expected N x C x H x W with C, H and W fixed, found {dims:?}",
                input.name
            ))
        }
    };
    let mut readers: HashMap<&str, usize> = HashMap::new();
    // A Shape node reads a tensor's shape, not its values: not a reader that stops a fold.
    for n in graph.node.iter().filter(|n| n.op_type != OpType::Shape) {
        for i in &n.input {
            *readers.entry(*i).or_default() += 1;
        }
    }
    for o in &graph.output {
        *readers.entry(o.name).or_default() += 1;
    }
    let mut b = Builder {
        init,
        readers,
        alias: HashMap::new(),
        values: HashMap::new(),
        input: (clean(input.name), shape),
        nodes: Vec::new(),
        weights: Vec::new(),
    };
    // SiLU: Mul(x, Sigmoid(x)) whose sigmoid has no other reader: the sigmoid is skipped and the
    // multiply becomes the activation.
    let mut silu_sigmoids: Vec<&str> = Vec::new();
    for n in graph.node.iter().filter(|n| n.op_type == OpType::Sigmoid) {
        let (Some(&x), Some(&s)) = (n.input.first(), n.output.first()) else {
            continue;
        };
        let mul = |m: &&onnx_rs::ast::Node| {
            m.op_type == OpType::Mul && m.input.contains(&x) && m.input.contains(&s)
        };
        if b.readers.get(s).copied() == Some(1) && graph.node.iter().any(|m| mul(&m)) {
            silu_sigmoids.push(s);
        }
    }
    for n in &graph.node {
        let constant = n.op_type == OpType::Constant
            || (n.op_type == OpType::Identity
                && n.output.first().is_some_and(|o| b.init.contains_key(o)));
        if constant || b.fold_integers(n)? {
            continue;
        }
        let op = n.op_type.as_str().to_string();
        let (name, op) = (n.name, op.as_str());
        if !n.domain.is_empty() && n.domain != "ai.onnx" {
            return Err(at(name, op, format!("domain {:?} is not ONNX's", n.domain)));
        }
        let arg = |i: usize| -> Result<&str, String> {
            n.input
                .get(i)
                .copied()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| at(name, op, format!("no input {i}")))
        };
        // Input i where the node gives one (ONNX leaves optional inputs out or empty).
        let opt = |i: usize| n.input.get(i).copied().filter(|s| !s.is_empty());
        let out = n
            .output
            .first()
            .copied()
            .ok_or_else(|| at(name, op, "no output"))?;
        let output = clean(out);
        match &n.op_type {
            OpType::Conv => {
                only(
                    n,
                    op,
                    &[
                        "kernel_shape",
                        "strides",
                        "pads",
                        "dilations",
                        "group",
                        "auto_pad",
                    ],
                )?;
                let x = b.read(name, op, arg(0)?)?;
                let (wdims, wvals) = b.initializer(name, op, arg(1)?)?;
                let [k, _, r, s] = wdims[..] else {
                    return Err(at(
                        name,
                        op,
                        format!("weight dims {wdims:?} are not K x C/groups x R x S"),
                    ));
                };
                if ints(n, "dilations", &[1, 1]).iter().any(|&d| d != 1) {
                    return Err(at(
                        name,
                        op,
                        "attribute dilations: kiln's networks take undilated convolutions",
                    ));
                }
                let kernel = hw(
                    name,
                    op,
                    "kernel_shape",
                    &ints(n, "kernel_shape", &[r as i64, s as i64]),
                )?;
                if kernel != [r as u32, s as u32] {
                    return Err(at(
                        name,
                        op,
                        format!("kernel_shape {kernel:?} differs from the weight's {r}x{s}"),
                    ));
                }
                let weight = b.weight(arg(1)?, wdims, wvals);
                let norm = match opt(2) {
                    Some(bias) => {
                        let (bd, bv) = b.initializer(name, op, bias)?;
                        Norm::Bias(b.weight(bias, bd, bv))
                    }
                    None => Norm::None,
                };
                let group = int(n, "group", 1);
                b.push(
                    name,
                    Op::Conv(Conv {
                        weight,
                        out: k as u32,
                        kernel,
                        stride: hw(name, op, "strides", &ints(n, "strides", &[1, 1]))?,
                        pad: pads(n, op)?,
                        groups: u32::try_from(group)
                            .map_err(|_| at(name, op, format!("group {group}")))?,
                        norm,
                        residual: None,
                        x_scale: None,
                        expand: None,
                    }),
                    vec![x],
                    output,
                );
            }
            OpType::BatchNormalization => {
                only(n, op, &["epsilon", "momentum", "training_mode"])?;
                if int(n, "training_mode", 0) != 0 {
                    return Err(at(name, op, "attribute training_mode: inference only"));
                }
                let x = b.read(name, op, arg(0)?)?;
                let conv = b.producer(&x).filter(|&i| {
                    b.readers.get(arg(0).unwrap_or_default()).copied() == Some(1)
                        && matches!(&b.nodes[i].op, Op::Conv(c) if c.residual.is_none() && !matches!(c.norm, Norm::BatchNorm { .. }))
                        && b.nodes[i].activation == Activation::Identity
                });
                let Some(i) = conv else {
                    return Err(at(name, op, "a batch norm folds into the convolution before it; this one follows no convolution it can fold into"));
                };
                let mut t = Vec::new();
                for j in 1..5 {
                    t.push(b.initializer(name, op, arg(j)?)?);
                }
                let Op::Conv(c) = &b.nodes[i].op else {
                    return Err(at(name, op, "the node before is no convolution"));
                };
                // A convolution bias before the batch norm: the mean moves by it.
                let conv_bias = match &c.norm {
                    Norm::Bias(w) => b
                        .weights
                        .iter()
                        .find(|(n, _)| n == w)
                        .map(|(_, t)| t.values.clone()),
                    _ => None,
                };
                let prefix = b.unused(&format!("{name}.bn"));
                let mut mean = t[2].1.clone();
                if let Some(cb) = conv_bias {
                    for (m, c) in mean.iter_mut().zip(cb) {
                        *m -= c;
                    }
                }
                for (suffix, (dims, values)) in [
                    ("weight", (t[0].0.clone(), t[0].1.clone())),
                    ("bias", (t[1].0.clone(), t[1].1.clone())),
                    ("running_mean", (t[2].0.clone(), mean)),
                    ("running_var", (t[3].0.clone(), t[3].1.clone())),
                ] {
                    b.weights.push((
                        format!("{prefix}.{suffix}"),
                        Tensor {
                            shape: dims,
                            values,
                        },
                    ));
                }
                let node = &mut b.nodes[i];
                if let Op::Conv(c) = &mut node.op {
                    if let Norm::Bias(w) = &c.norm {
                        let w = w.clone();
                        b.weights.retain(|(n, _)| *n != w);
                    }
                    c.norm = Norm::BatchNorm {
                        prefix,
                        eps: float(n, "epsilon", 1e-5),
                    };
                }
                b.nodes[i].output = output;
            }
            OpType::Relu
            | OpType::Sigmoid
            | OpType::Tanh
            | OpType::HardSwish
            | OpType::HardSigmoid
            | OpType::LeakyRelu
            | OpType::Clip => {
                if n.op_type == OpType::Sigmoid && silu_sigmoids.contains(&out) {
                    continue;
                }
                let act = match &n.op_type {
                    OpType::Relu => Activation::Relu,
                    OpType::Sigmoid => Activation::Sigmoid,
                    OpType::Tanh => Activation::Tanh,
                    OpType::HardSwish => Activation::HardSwish,
                    OpType::HardSigmoid => {
                        let (alpha, beta) = (float(n, "alpha", 0.2), float(n, "beta", 0.5));
                        if (alpha - 1.0 / 6.0).abs() > 1e-6 || (beta - 0.5).abs() > 1e-6 {
                            return Err(at(name, op, format!("alpha {alpha}, beta {beta}: kiln's hard sigmoid is PyTorch's (1/6, 1/2)")));
                        }
                        Activation::HardSigmoid
                    }
                    OpType::LeakyRelu => {
                        let alpha = float(n, "alpha", 0.01);
                        if (alpha - 0.01).abs() > 1e-7 {
                            return Err(at(
                                name,
                                op,
                                format!(
                                    "attribute alpha {alpha}: kiln's leaky ReLU has slope 0.01"
                                ),
                            ));
                        }
                        Activation::LeakyRelu
                    }
                    _ => {
                        // Clip: bounds from inputs 1 and 2 (opset 11+) or attributes.
                        let bound = |i: usize, attr: &str, default: f32| -> Result<f32, String> {
                            match opt(i) {
                                Some(t) => Ok(b
                                    .initializer(name, op, t)?
                                    .1
                                    .first()
                                    .copied()
                                    .unwrap_or(default)),
                                None => Ok(float(n, attr, default)),
                            }
                        };
                        let (lo, hi) = (bound(1, "min", f32::MIN)?, bound(2, "max", f32::MAX)?);
                        match (lo, hi) {
                            (0.0, 6.0) => Activation::ClippedRelu,
                            (0.0, f32::MAX) => Activation::Relu,
                            _ => {
                                return Err(at(
                                    name,
                                    op,
                                    format!(
                                    "bounds {lo}..{hi}: kiln clips to 0..6 (ReLU6) or 0.. (ReLU)"
                                ),
                                ))
                            }
                        }
                    }
                };
                let x = b.read(name, op, arg(0)?)?;
                b.activation(name, (&x, arg(0)?, 1), output, act);
            }
            OpType::Mul => {
                let (a0, a1) = (arg(0)?, arg(1)?);
                let sig = [a0, a1].into_iter().find(|t| silu_sigmoids.contains(t));
                if let Some(s) = sig {
                    let x = if s == a0 { a1 } else { a0 };
                    // x feeds the sigmoid and the multiply, and folds only if nothing else reads it.
                    let xt = b.read(name, op, x)?;
                    b.activation(name, (&xt, x, 2), output, Activation::Silu);
                    continue;
                }
                // Squeeze-and-excitation: a map times a C x 1 x 1 tensor.
                let (x, y) = (b.read(name, op, a0)?, b.read(name, op, a1)?);
                let (sx, sy) = (
                    b.shape(&x).map_err(|e| at(name, op, e))?,
                    b.shape(&y).map_err(|e| at(name, op, e))?,
                );
                let inputs = match ((sx.h, sx.w), (sy.h, sy.w)) {
                    (_, (1, 1)) if sx.c == sy.c => vec![x, y],
                    ((1, 1), _) if sx.c == sy.c => vec![y, x],
                    _ => return Err(at(name, op, format!("shapes {sx} and {sy}: kiln multiplies a map by a per-channel C x 1 x 1 tensor"))),
                };
                b.push(name, Op::ChannelMul, inputs, output);
            }
            OpType::Add => {
                let (a0, a1) = (arg(0)?, arg(1)?);
                let (x, y) = (b.read(name, op, a0)?, b.read(name, op, a1)?);
                // A residual: folded into the convolution writing one side when its output has
                // no other reader, the first side's by preference (PyTorch's `out + identity`
                // puts the block's last convolution first, which is where kiln's networks fuse
                // it). A convolution written before the other side moves after it: nothing
                // else reads its output, so running it later changes nothing.
                let fold =
                    [(a0, &x, &y), (a1, &y, &x)]
                        .into_iter()
                        .find_map(|(onnx, conv_out, other)| {
                            let i = b.producer(conv_out)?;
                            let ok = b.readers.get(onnx).copied() == Some(1)
                                && b.nodes[i].activation == Activation::Identity
                                && matches!(&b.nodes[i].op, Op::Conv(c) if c.residual.is_none());
                            ok.then(|| (i, other.clone()))
                        });
                match fold {
                    Some((i, other)) => {
                        let mut node = b.nodes.remove(i);
                        if let Op::Conv(c) = &mut node.op {
                            c.residual = Some(other);
                        }
                        node.output = output;
                        b.nodes.push(node);
                    }
                    None => b.push(name, Op::Add, vec![x, y], output),
                }
            }
            OpType::MaxPool | OpType::AveragePool => {
                only(
                    n,
                    op,
                    &[
                        "kernel_shape",
                        "strides",
                        "pads",
                        "ceil_mode",
                        "count_include_pad",
                        "auto_pad",
                        "dilations",
                        "storage_order",
                    ],
                )?;
                if ints(n, "dilations", &[1, 1]).iter().any(|&d| d != 1) {
                    return Err(at(name, op, "attribute dilations: undilated pooling only"));
                }
                if int(n, "storage_order", 0) != 0 {
                    return Err(at(name, op, "attribute storage_order: row-major only"));
                }
                let mode = match (&n.op_type, int(n, "count_include_pad", 0)) {
                    (OpType::MaxPool, _) => PoolMode::Max,
                    (_, 0) => PoolMode::AverageExcludePad,
                    _ => PoolMode::Average,
                };
                let window = hw(name, op, "kernel_shape", &ints(n, "kernel_shape", &[]))?;
                let x = b.read(name, op, arg(0)?)?;
                let pool = Pool2d {
                    mode,
                    window,
                    stride: hw(name, op, "strides", &ints(n, "strides", &[1, 1]))?,
                    pad: pads(n, op)?,
                    ceil_mode: int(n, "ceil_mode", 0) != 0,
                };
                b.push(name, Op::Pool(pool), vec![x], output);
            }
            OpType::GlobalAveragePool => {
                let x = b.read(name, op, arg(0)?)?;
                b.push(name, Op::GlobalAvgPool, vec![x], output);
            }
            OpType::Flatten
            | OpType::Reshape
            | OpType::Identity
            | OpType::Dropout
            | OpType::Squeeze
            | OpType::Unsqueeze => {
                let x = b.read(name, op, arg(0)?)?;
                if matches!(
                    n.op_type,
                    OpType::Flatten | OpType::Reshape | OpType::Squeeze | OpType::Unsqueeze
                ) {
                    let s = b.shape(&x).map_err(|e| at(name, op, e))?;
                    if (s.h, s.w) != (1, 1) {
                        return Err(at(name, op, format!("of a {s} tensor: kiln keeps maps NHWC, so only C x 1 x 1 tensors reshape for free")));
                    }
                }
                b.alias.insert(output, x);
            }
            OpType::Gemm | OpType::MatMul => {
                let x = b.read(name, op, arg(0)?)?;
                let s = b.shape(&x).map_err(|e| at(name, op, e))?;
                if (s.h, s.w) != (1, 1) {
                    return Err(at(name, op, format!("input is {s}: a fully connected layer reads a flattened C x 1 x 1 tensor")));
                }
                if n.op_type == OpType::Gemm {
                    only(n, op, &["alpha", "beta", "transA", "transB"])?;
                    if float(n, "alpha", 1.0) != 1.0
                        || float(n, "beta", 1.0) != 1.0
                        || int(n, "transA", 0) != 0
                    {
                        return Err(at(
                            name,
                            op,
                            "attributes alpha, beta and transA must be 1, 1, 0",
                        ));
                    }
                }
                let (dims, vals) = b.initializer(name, op, arg(1)?)?;
                // kiln's weight is [out, in]: Gemm's with transB, else (and MatMul's) transposed.
                let trans_b = n.op_type == OpType::Gemm && int(n, "transB", 0) != 0;
                let (rows, cols) = match dims[..] {
                    [a, c] => (a, c),
                    _ => return Err(at(name, op, format!("weight dims {dims:?} are not 2-D"))),
                };
                let (outf, inf, w) = if trans_b {
                    (rows, cols, vals)
                } else {
                    let mut t = vec![0.0; vals.len()];
                    for i in 0..rows {
                        for j in 0..cols {
                            t[j * rows + i] = vals[i * cols + j];
                        }
                    }
                    (cols, rows, t)
                };
                if inf != s.c as usize {
                    return Err(at(
                        name,
                        op,
                        format!("weight takes {inf} features, the input has {}", s.c),
                    ));
                }
                let weight = b.weight(arg(1)?, vec![outf, inf], w);
                let bias = match opt(2).filter(|_| n.op_type == OpType::Gemm) {
                    Some(t) => {
                        let (_, bv) = b.initializer(name, op, t)?;
                        if bv.len() != outf {
                            return Err(at(name, op, format!("bias of {} values for {outf} outputs (broadcast biases are not read)", bv.len())));
                        }
                        Some(b.weight(t, vec![outf], bv))
                    }
                    None => None,
                };
                b.push(
                    name,
                    Op::Linear {
                        weight,
                        bias,
                        out: outf as u32,
                    },
                    vec![x],
                    output,
                );
            }
            OpType::Softmax => {
                let x = b.read(name, op, arg(0)?)?;
                let s = b.shape(&x).map_err(|e| at(name, op, e))?;
                let axis = int(
                    n,
                    "axis",
                    if model
                        .opset_import
                        .iter()
                        .any(|o| o.domain.is_empty() && o.version >= 13)
                    {
                        -1
                    } else {
                        1
                    },
                );
                let over_channels = axis == 1 || ((s.h, s.w) == (1, 1) && axis == -1);
                if !over_channels {
                    return Err(at(
                        name,
                        op,
                        format!("attribute axis {axis}: kiln's softmax is over channels"),
                    ));
                }
                b.push(name, Op::Softmax, vec![x], output);
            }
            OpType::Resize => {
                let x = b.read(name, op, arg(0)?)?;
                let shape = b.shape(&x).map_err(|e| at(name, op, e))?;
                let text = |attr: &str, default: &str| {
                    n.attribute
                        .iter()
                        .find(|a| a.name == attr)
                        .map_or(default.to_string(), |a| {
                            String::from_utf8_lossy(a.s).into_owned()
                        })
                };
                // The factor: from scales [1, 1, f, f] or sizes [n, c, f h, f w].
                let factors: Vec<f64> = match (opt(2), opt(3)) {
                    (Some(t), _) => b
                        .initializer(name, op, t)?
                        .1
                        .iter()
                        .map(|&v| f64::from(v))
                        .collect(),
                    (None, Some(t)) => {
                        let sizes = b.int_list(name, op, t)?;
                        match sizes[..] {
                            [_, _, h, w] => vec![
                                1.0,
                                1.0,
                                h as f64 / f64::from(shape.h),
                                w as f64 / f64::from(shape.w),
                            ],
                            _ => {
                                return Err(at(
                                    name,
                                    op,
                                    format!("sizes {sizes:?} are not N x C x H x W"),
                                ))
                            }
                        }
                    }
                    _ => return Err(at(name, op, "neither scales nor sizes given")),
                };
                let factor = match factors[..] {
                    [1.0, 1.0, fh, fw] if fh == fw && fh >= 1.0 && fh.fract() == 0.0 && fh <= 64.0 => fh as u32,
                    _ => return Err(at(name, op, format!("scales {factors:?}: kiln upsamples height and width by one whole factor"))),
                };
                let (mode, transform) = (
                    text("mode", "nearest"),
                    text("coordinate_transformation_mode", "half_pixel"),
                );
                let mode = match (mode.as_str(), transform.as_str(), text("nearest_mode", "round_prefer_floor").as_str()) {
                    ("nearest", "asymmetric", "floor") => kiln::ops::ResizeMode::Nearest,
                    ("linear", "half_pixel" | "pytorch_half_pixel", _) => kiln::ops::ResizeMode::Bilinear,
                    (m, t, nm) => return Err(at(name, op, format!("mode {m:?} with coordinate_transformation_mode {t:?} and nearest_mode {nm:?}: kiln resizes as PyTorch's nearest (asymmetric, floor) or bilinear (half_pixel)"))),
                };
                if int(n, "antialias", 0) != 0 {
                    return Err(at(name, op, "attribute antialias: not supported"));
                }
                b.push(name, Op::Resize { mode, factor }, vec![x], output);
            }
            OpType::Split | OpType::Slice => {
                let x = b.read(name, op, arg(0)?)?;
                let channels = b.shape(&x).map_err(|e| at(name, op, e))?.c;
                let consts = |i: usize| opt(i).map(|t| b.int_list(name, op, t)).transpose();
                // Channel ranges, one per output.
                let ranges: Vec<(u32, u32)> = if n.op_type == OpType::Split {
                    if int(n, "axis", 0) != 1 {
                        return Err(at(
                            name,
                            op,
                            format!(
                                "attribute axis {}: kiln splits channels (axis 1)",
                                int(n, "axis", 0)
                            ),
                        ));
                    }
                    let sizes = match consts(1)? {
                        Some(v) => v,
                        None => match n.attribute.iter().find(|a| a.name == "split") {
                            Some(a) => a.ints.clone(),
                            None => {
                                let parts = n.output.len() as i64;
                                if parts == 0 || i64::from(channels) % parts != 0 {
                                    return Err(at(name, op, format!("{channels} channels do not split into {parts} equal parts")));
                                }
                                vec![i64::from(channels) / parts; parts as usize]
                            }
                        },
                    };
                    if sizes.len() != n.output.len()
                        || sizes.iter().any(|&v| v <= 0)
                        || sizes.iter().sum::<i64>() != i64::from(channels)
                    {
                        return Err(at(
                            name,
                            op,
                            format!(
                                "split {sizes:?} of {channels} channels into {} outputs",
                                n.output.len()
                            ),
                        ));
                    }
                    let mut start = 0u32;
                    sizes
                        .iter()
                        .map(|&v| {
                            let r = (start, v as u32);
                            start += v as u32;
                            r
                        })
                        .collect()
                } else {
                    let (starts, ends) = (
                        consts(1)?.unwrap_or_default(),
                        consts(2)?.unwrap_or_default(),
                    );
                    let axes = consts(3)?.unwrap_or_else(|| vec![0]);
                    let steps = consts(4)?.unwrap_or_else(|| vec![1]);
                    match (&starts[..], &ends[..], &axes[..], &steps[..]) {
                        ([s0], [e0], [1], [1]) => {
                            let c = i64::from(channels);
                            let clamp = |v: i64| if v < 0 { (v + c).max(0) } else { v.min(c) };
                            let (lo, hi) = (clamp(*s0), clamp(*e0));
                            if hi <= lo {
                                return Err(at(name, op, format!("channels {s0}..{e0} of {channels} are empty")));
                            }
                            vec![(lo as u32, (hi - lo) as u32)]
                        }
                        _ => return Err(at(name, op, format!("starts {starts:?}, ends {ends:?}, axes {axes:?}, steps {steps:?}: kiln slices channels (axis 1, step 1)"))),
                    }
                };
                for (i, (start, count)) in ranges.into_iter().enumerate() {
                    let out_i = n.output.get(i).copied().unwrap_or_default();
                    b.push(
                        &format!("{name}.{i}"),
                        Op::Slice {
                            start,
                            channels: count,
                        },
                        vec![x.clone()],
                        clean(out_i),
                    );
                }
            }
            OpType::Concat => {
                if int(n, "axis", 1) != 1 {
                    return Err(at(
                        name,
                        op,
                        format!(
                            "attribute axis {}: kiln concatenates channels (axis 1)",
                            int(n, "axis", 1)
                        ),
                    ));
                }
                let inputs: Vec<String> = n
                    .input
                    .iter()
                    .map(|t| b.read(name, op, t))
                    .collect::<Result<_, _>>()?;
                let inputs = b.whole_slices(inputs);
                b.push(name, Op::Concat, inputs, output);
            }
            _ => return Err(at(name, op, "operator not supported")),
        }
    }
    let outputs: Vec<String> = graph.output.iter().map(|o| b.tensor(o.name)).collect();
    // Nodes nothing reads (a slice a concatenation no longer needs) are dropped, last first.
    let mut nodes = b.nodes;
    while let Some(i) = nodes.iter().rposition(|n| {
        !outputs.contains(&n.output) && !nodes.iter().any(|m| m.reads().any(|t| *t == n.output))
    }) {
        nodes.remove(i);
    }
    let def = NetworkDef {
        name: clean(name),
        input: b.input.clone(),
        nodes,
        outputs,
    };
    def.shapes().map_err(|e| e.to_string())?;
    let mut weights = b.weights;
    weights.sort_by(|x, y| x.0.cmp(&y.0));
    Ok(Imported { def, weights })
}

/// The weights as safetensors bytes, names sorted (the same model gives the same bytes): the
/// filters of convolutions and fully connected layers (tensors of 2 or more dimensions) in
/// `storage` (FP32, FP16 or BF16, rounded to nearest even), per-channel vectors (biases, batch
/// norms) in FP32 always, as they are small and a batch norm's variance needs the range. A
/// filter value FP16 cannot hold (beyond 65504) is an error naming the tensor.
pub fn safetensors_bytes(
    weights: &[(String, Tensor)],
    storage: kiln::DataType,
) -> Result<Vec<u8>, String> {
    let data: Vec<(String, safetensors::Dtype, Vec<u8>, Vec<usize>)> = weights
        .iter()
        .map(|(n, t)| {
            let filter = t.shape.len() >= 2;
            let (dtype, bytes) = match storage {
                kiln::DataType::Fp16 if filter => {
                    if let Some(v) = t.values.iter().find(|v| v.abs() > 65504.0) {
                        return Err(format!(
                            "weight {n}: value {v} is beyond FP16's range; store FP32 or BF16"
                        ));
                    }
                    let b = t
                        .values
                        .iter()
                        .flat_map(|&v| kiln::elements::f32_to_f16(v).to_le_bytes());
                    (safetensors::Dtype::F16, b.collect())
                }
                kiln::DataType::Bf16 if filter => {
                    let b = t
                        .values
                        .iter()
                        .flat_map(|&v| kiln::elements::f32_to_bf16(v).to_le_bytes());
                    (safetensors::Dtype::BF16, b.collect())
                }
                _ => (
                    safetensors::Dtype::F32,
                    t.values.iter().flat_map(|v| v.to_le_bytes()).collect(),
                ),
            };
            Ok((n.clone(), dtype, bytes, t.shape.clone()))
        })
        .collect::<Result<_, String>>()?;
    let views = data
        .iter()
        .map(|(n, dtype, bytes, shape)| {
            safetensors::tensor::TensorView::new(*dtype, shape.clone(), bytes)
                .map(|v| (n.clone(), v))
                .map_err(|e| format!("weight {n}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    safetensors::tensor::serialize(views, None).map_err(|e| format!("writing safetensors: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use onnx_rs::ast::{
        Attribute, AttributeType, Graph, Model, Node, OperatorSetId, TensorProto, TensorShape,
        TensorShapeDimension, TensorTypeProto, TypeProto, TypeValue, ValueInfo,
    };

    fn value<'a>(name: &'a str, dims: &[i64]) -> ValueInfo<'a> {
        let dim = dims
            .iter()
            .map(|&d| TensorShapeDimension {
                value: Dimension::Value(d),
                ..Default::default()
            })
            .collect();
        ValueInfo {
            name,
            r#type: Some(TypeProto {
                value: Some(TypeValue::Tensor(TensorTypeProto {
                    elem_type: DataType::Float,
                    shape: Some(TensorShape { dim }),
                })),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Conv + bias + Relu, max pool, global pool, flatten, Gemm: a valid model's bytes.
    fn small() -> Vec<u8> {
        let ints = |name, v: &[i64]| Attribute {
            name,
            r#type: AttributeType::Ints,
            ints: v.to_vec(),
            ..Default::default()
        };
        let node = |name, op_type, input: &[&'static str], out: &'static str, attribute| Node {
            name,
            op_type,
            input: input.to_vec(),
            output: vec![out],
            attribute,
            ..Default::default()
        };
        onnx_rs::encode(&Model {
            ir_version: 8,
            opset_import: vec![OperatorSetId {
                domain: "",
                version: 17,
            }],
            graph: Some(Graph {
                name: "g",
                node: vec![
                    node(
                        "c",
                        OpType::Conv,
                        &["x", "w", "b"],
                        "c",
                        vec![ints("pads", &[1, 1, 1, 1])],
                    ),
                    node("r", OpType::Relu, &["c"], "r", vec![]),
                    node(
                        "p",
                        OpType::MaxPool,
                        &["r"],
                        "p",
                        vec![ints("kernel_shape", &[2, 2]), ints("strides", &[2, 2])],
                    ),
                    node("g", OpType::GlobalAveragePool, &["p"], "g", vec![]),
                    node("f", OpType::Flatten, &["g"], "f", vec![]),
                    node("fc", OpType::Gemm, &["f", "fw"], "y", vec![]),
                ],
                initializer: vec![
                    TensorProto::from_f32("w", vec![4, 3, 3, 3], vec![0.1; 108]),
                    TensorProto::from_f32("b", vec![4], vec![0.0; 4]),
                    TensorProto::from_f32("fw", vec![4, 5], vec![0.2; 20]),
                ],
                input: vec![value("x", &[1, 3, 8, 8])],
                output: vec![value("y", &[1, 5])],
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    #[test]
    fn a_valid_model_imports_and_damaged_ones_are_errors_never_panics() {
        let good = small();
        let net = import(&good, "small").unwrap();
        assert_eq!(net.def.nodes.len(), 4, "{:?}", net.def.nodes);
        // Truncated at every byte, and 20,000 copies with one to eight random bytes changed: each is
        // imported or refused with an error; none panics (the test would fail) or hangs.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut ok, mut refused) = (0, 0);
        let mut tally = |r: Result<Imported, String>| match r {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(!e.is_empty());
                refused += 1;
            }
        };
        // A sigmoid without an output (the SiLU scan once indexed it).
        let mut m = onnx_rs::parse(&good).unwrap();
        if let Some(g) = m.graph.as_mut() {
            g.node.push(Node {
                name: "s",
                op_type: OpType::Sigmoid,
                input: vec!["y"],
                ..Default::default()
            });
        }
        let e = import(&onnx_rs::encode(&m), "bad").err().unwrap();
        assert!(e.contains("node \"s\" (Sigmoid): no output"), "{e}");
        for cut in 0..good.len() {
            tally(import(&good[..cut], "cut"));
        }
        for _ in 0..20_000 {
            let mut b = good.clone();
            for _ in 0..1 + next() % 8 {
                let i = (next() as usize) % b.len();
                b[i] = next() as u8;
            }
            tally(import(&b, "mutated"));
        }
        assert!(refused > 0 && ok > 0, "{ok} imported, {refused} refused");
    }
}
