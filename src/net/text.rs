//! A network definition as text: what an importer writes, a build embeds and a person can read
//! and diff. One line per item, `#` comments:
//!
//! ```text
//! kiln-network 1
//! name resnet50
//! input x 3x224x224
//! node conv1 conv from=x to=conv1 act=relu weight=conv1.weight k=64 kernel=7x7 stride=2x2 pad=3x3 groups=1 bn=bn1 eps=0.00001
//! node pool maxpool ...
//! output fc
//! ```
//!
//! A node line is `node NAME OP key=value...`: `from` (its inputs, comma-separated), `to` (its
//! output) and `act` (its activation) for every operator, then the operator's own keys:
//! - `conv`: `weight`, `k`, `kernel`, `stride`, `pad` (`HxW`), `groups`, and optionally `bias`
//!   (a weight), or `bn` (a batch norm's name prefix) with `eps`, `residual` (a tensor) and
//!   `x-scale` (a `Cx1x1` tensor multiplying the input per channel first);
//! - `linear`: `weight`, `out`, optionally `bias`;
//! - `pool`: `mode` (`max`, `avg`, `avg-exclude-pad`), `window`, `stride`, `pad`, `ceil` (0 or 1);
//! - `resize`: `mode` (`nearest`, `bilinear`), `factor`;
//! - `slice`: `start`, `channels`;
//! - `gap`, `add`, `channel-mul`, `activation`, `softmax`, `concat`: none.
//!
//! Reading checks every line (the error names the line and the key) and then the definition
//! as a whole ([`NetworkDef::shapes`], naming the node and tensor). Names are non-empty and
//! hold no whitespace, `,` or `=`.

use std::fmt;
use std::fmt::Write as _;

use super::{Conv, NetworkDef, Node, Norm, Op, Shape};
use crate::ops::{Pool2d, PoolMode, ResizeMode};
use crate::Activation;

/// The first line of the current form.
const HEADER: &str = "kiln-network 1";

/// Why a text definition cannot be read or written: the line (1-based; 0 for the whole text)
/// and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextError {
    /// The line, 1-based; 0 when no one line is at fault.
    pub line: usize,
    /// What is wrong, naming the key or node.
    pub reason: String,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "line {}: {}", self.line, self.reason)
        }
    }
}

impl std::error::Error for TextError {}

fn valid_name(s: &str) -> bool {
    !s.is_empty() && !s.contains(|c: char| c.is_whitespace() || c == ',' || c == '=')
}

fn pair(v: [u32; 2]) -> String {
    format!("{}x{}", v[0], v[1])
}

fn pool_mode_name(m: PoolMode) -> &'static str {
    match m {
        PoolMode::Max => "max",
        PoolMode::Average => "avg",
        PoolMode::AverageExcludePad => "avg-exclude-pad",
    }
}

fn resize_mode_name(m: ResizeMode) -> &'static str {
    match m {
        ResizeMode::Nearest => "nearest",
        ResizeMode::Bilinear => "bilinear",
    }
}

impl NetworkDef {
    /// The definition as text (the module's form); an error names a tensor, weight or node
    /// name the form cannot hold.
    pub fn to_text(&self) -> Result<String, TextError> {
        let name_ok = |what: &str, s: &str| {
            if valid_name(s) {
                Ok(())
            } else {
                Err(TextError {
                    line: 0,
                    reason: format!(
                        "{what} {s:?}: a name is non-empty and holds no whitespace, ',' or '='"
                    ),
                })
            }
        };
        name_ok("network", &self.name)?;
        name_ok("input", &self.input.0)?;
        let mut out = format!(
            "{HEADER}\nname {}\ninput {} {}\n",
            self.name, self.input.0, self.input.1
        );
        // A folded expansion is written as the node it was.
        for node in self.nodes.iter().flat_map(Node::unfolded) {
            name_ok("node", &node.name)?;
            for t in node.inputs.iter().chain([&node.output]) {
                name_ok("tensor", t)?;
            }
            let op = match &node.op {
                Op::Conv(_) => "conv",
                Op::Linear { .. } => "linear",
                Op::Pool(_) => "pool",
                Op::GlobalAvgPool => "gap",
                Op::Resize { .. } => "resize",
                Op::Add => "add",
                Op::ChannelMul => "channel-mul",
                Op::Activation => "activation",
                Op::Softmax => "softmax",
                Op::Concat => "concat",
                Op::Slice { .. } => "slice",
            };
            let _ = write!(
                out,
                "node {} {op} from={} to={} act={}",
                node.name,
                node.inputs.join(","),
                node.output,
                node.activation.name()
            );
            let mut weight = |key: &str, w: &str| -> Result<(), TextError> {
                name_ok(key, w)?;
                let _ = write!(out, " {key}={w}");
                Ok(())
            };
            match &node.op {
                Op::Conv(c) => {
                    weight("weight", &c.weight)?;
                    match &c.norm {
                        Norm::None => {}
                        Norm::Bias(b) => weight("bias", b)?,
                        Norm::BatchNorm { prefix, .. } => weight("bn", prefix)?,
                    }
                    if let Some(r) = &c.residual {
                        weight("residual", r)?;
                    }
                    if let Some(g) = &c.x_scale {
                        weight("x-scale", g)?;
                    }
                    let _ = write!(
                        out,
                        " k={} kernel={} stride={} pad={} groups={}",
                        c.out,
                        pair(c.kernel),
                        pair(c.stride),
                        pair(c.pad),
                        c.groups
                    );
                    if let Norm::BatchNorm { eps, .. } = c.norm {
                        let _ = write!(out, " eps={eps}");
                    }
                }
                Op::Linear {
                    weight: w,
                    bias,
                    out: features,
                } => {
                    weight("weight", w)?;
                    if let Some(b) = bias {
                        weight("bias", b)?;
                    }
                    let _ = write!(out, " out={features}");
                }
                Op::Pool(p) => {
                    let _ = write!(
                        out,
                        " mode={} window={} stride={} pad={} ceil={}",
                        pool_mode_name(p.mode),
                        pair(p.window),
                        pair(p.stride),
                        pair(p.pad),
                        u8::from(p.ceil_mode)
                    );
                }
                Op::Resize { mode, factor } => {
                    let _ = write!(out, " mode={} factor={factor}", resize_mode_name(*mode));
                }
                Op::Slice { start, channels } => {
                    let _ = write!(out, " start={start} channels={channels}");
                }
                Op::GlobalAvgPool
                | Op::Add
                | Op::ChannelMul
                | Op::Activation
                | Op::Softmax
                | Op::Concat => {}
            }
            out.push('\n');
        }
        for o in &self.outputs {
            name_ok("output", o)?;
            let _ = writeln!(out, "output {o}");
        }
        Ok(out)
    }

    /// Reads the text form, then checks the definition as a whole; errors name the line and
    /// key, or the node and tensor.
    pub fn from_text(text: &str) -> Result<NetworkDef, TextError> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        let at = |line: usize, reason: String| TextError { line, reason };
        match lines.next() {
            Some((_, HEADER)) => {}
            Some((n, other)) => {
                return Err(at(n, format!("expected {HEADER:?} first, found {other:?}")))
            }
            None => return Err(at(0, format!("empty: expected {HEADER:?}"))),
        }
        let (mut name, mut input, mut nodes, mut outputs) = (None, None, Vec::new(), Vec::new());
        for (n, line) in lines {
            let words: Vec<&str> = line.split_whitespace().collect();
            let named = |i: usize, what: &str| -> Result<String, TextError> {
                match words.get(i) {
                    Some(w) if valid_name(w) => Ok(w.to_string()),
                    Some(w) => Err(at(n, format!("{what} {w:?} is no valid name"))),
                    None => Err(at(n, format!("no {what}"))),
                }
            };
            let once = |slot: bool, what: &str| {
                if slot {
                    Err(at(n, format!("{what} given twice")))
                } else {
                    Ok(())
                }
            };
            match words[0] {
                "name" if words.len() == 2 => {
                    once(name.is_some(), "name")?;
                    name = Some(named(1, "network name")?);
                }
                "input" if words.len() == 3 => {
                    once(input.is_some(), "input")?;
                    let shape = parse_shape(words[2]).map_err(|r| at(n, format!("input {r}")))?;
                    input = Some((named(1, "input tensor")?, shape));
                }
                "output" if words.len() == 2 => outputs.push(named(1, "output tensor")?),
                "node" if words.len() >= 3 => {
                    nodes.push(parse_node(&words[1..]).map_err(|r| at(n, r))?);
                }
                other => {
                    return Err(at(
                        n,
                        format!("expected name, input, node or output with its fields, found {other:?} ({} words)", words.len()),
                    ))
                }
            }
        }
        let def = NetworkDef {
            name: name.ok_or_else(|| at(0, "no name line".into()))?,
            input: input.ok_or_else(|| at(0, "no input line".into()))?,
            nodes,
            outputs,
        };
        if def.outputs.is_empty() {
            return Err(at(0, "no output line".into()));
        }
        def.shapes().map_err(|e| at(0, e.to_string()))?;
        Ok(def)
    }
}

/// `CxHxW`.
fn parse_shape(s: &str) -> Result<Shape, String> {
    let v: Vec<u32> = s
        .split('x')
        .map(|p| p.parse::<u32>().ok().filter(|&v| v > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("shape {s:?} is not CxHxW of positive numbers"))?;
    match v.as_slice() {
        &[c, h, w] => Ok(Shape { c, h, w }),
        _ => Err(format!("shape {s:?} is not CxHxW of positive numbers")),
    }
}

/// The value of key `k`, which node `node` (operator `op`) must have.
fn need<'a>(node: &str, op: &str, k: &str, v: Option<&'a str>) -> Result<&'a str, String> {
    v.ok_or_else(|| format!("node {node} ({op}): no {k}"))
}

/// A node from its words after `node`: name, operator, `key=value`s.
fn parse_node(words: &[&str]) -> Result<Node, String> {
    let name = words[0];
    if !valid_name(name) {
        return Err(format!("node name {name:?} is no valid name"));
    }
    let op = words[1];
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for w in &words[2..] {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| format!("node {name}: {w:?} is not key=value"))?;
        if keys.iter().any(|(seen, _)| *seen == k) {
            return Err(format!("node {name}: {k} given twice"));
        }
        keys.push((k, v));
    }
    let mut used: Vec<&str> = Vec::new();
    let mut get = |k: &'static str| -> Option<&str> {
        used.push(k);
        keys.iter().find(|(key, _)| *key == k).map(|(_, v)| *v)
    };
    let tensor = |k: &str, v: &str| {
        if valid_name(v) {
            Ok(v.to_string())
        } else {
            Err(format!("node {name}: {k} {v:?} is no valid name"))
        }
    };
    let number = |k: &str, v: &str| {
        v.parse::<u32>()
            .map_err(|_| format!("node {name}: {k} {v:?} is not a whole number"))
    };
    let hw = |k: &str, v: &str| -> Result<[u32; 2], String> {
        let (h, w) = v
            .split_once('x')
            .ok_or_else(|| format!("node {name}: {k} {v:?} is not HxW"))?;
        Ok([number(k, h)?, number(k, w)?])
    };
    let inputs = need(name, op, "from", get("from"))?
        .split(',')
        .map(|t| tensor("from", t))
        .collect::<Result<Vec<_>, _>>()?;
    let output = tensor("to", need(name, op, "to", get("to"))?)?;
    let act = need(name, op, "act", get("act"))?;
    let activation = Activation::parse(act)
        .ok_or_else(|| format!("node {name}: act {act:?} is not an activation kiln runs"))?;
    let op = match op {
        "conv" => {
            let norm = match (get("bias"), get("bn"), get("eps")) {
                (None, None, None) => Norm::None,
                (Some(b), None, None) => Norm::Bias(tensor("bias", b)?),
                (None, Some(prefix), Some(eps)) => Norm::BatchNorm {
                    prefix: tensor("bn", prefix)?,
                    eps: eps
                        .parse::<f32>()
                        .ok()
                        .filter(|e| e.is_finite() && *e >= 0.0)
                        .ok_or_else(|| format!("node {name}: eps {eps:?} is not a finite number >= 0"))?,
                },
                _ => return Err(format!("node {name}: give bias, or bn with eps, or neither")),
            };
            Op::Conv(Conv {
                weight: tensor("weight", need(name, op, "weight", get("weight"))?)?,
                out: number("k", need(name, op, "k", get("k"))?)?,
                kernel: hw("kernel", need(name, op, "kernel", get("kernel"))?)?,
                stride: hw("stride", need(name, op, "stride", get("stride"))?)?,
                pad: hw("pad", need(name, op, "pad", get("pad"))?)?,
                groups: number("groups", need(name, op, "groups", get("groups"))?)?,
                norm,
                residual: get("residual").map(|r| tensor("residual", r)).transpose()?,
                x_scale: get("x-scale").map(|g| tensor("x-scale", g)).transpose()?,
                expand: None,
            })
        }
        "linear" => Op::Linear {
            weight: tensor("weight", need(name, op, "weight", get("weight"))?)?,
            bias: get("bias").map(|b| tensor("bias", b)).transpose()?,
            out: number("out", need(name, op, "out", get("out"))?)?,
        },
        "pool" => {
            let mode = need(name, op, "mode", get("mode"))?;
            Op::Pool(Pool2d {
                mode: [PoolMode::Max, PoolMode::Average, PoolMode::AverageExcludePad]
                    .into_iter()
                    .find(|m| pool_mode_name(*m) == mode)
                    .ok_or_else(|| format!("node {name}: pool mode {mode:?} is not max, avg or avg-exclude-pad"))?,
                window: hw("window", need(name, op, "window", get("window"))?)?,
                stride: hw("stride", need(name, op, "stride", get("stride"))?)?,
                pad: hw("pad", need(name, op, "pad", get("pad"))?)?,
                ceil_mode: match need(name, op, "ceil", get("ceil"))? {
                    "0" => false,
                    "1" => true,
                    other => return Err(format!("node {name}: ceil {other:?} is not 0 or 1")),
                },
            })
        }
        "resize" => {
            let mode = need(name, op, "mode", get("mode"))?;
            Op::Resize {
                mode: [ResizeMode::Nearest, ResizeMode::Bilinear]
                    .into_iter()
                    .find(|m| resize_mode_name(*m) == mode)
                    .ok_or_else(|| format!("node {name}: resize mode {mode:?} is not nearest or bilinear"))?,
                factor: number("factor", need(name, op, "factor", get("factor"))?)?,
            }
        }
        "slice" => Op::Slice {
            start: number("start", need(name, op, "start", get("start"))?)?,
            channels: number("channels", need(name, op, "channels", get("channels"))?)?,
        },
        "gap" => Op::GlobalAvgPool,
        "add" => Op::Add,
        "channel-mul" => Op::ChannelMul,
        "activation" => Op::Activation,
        "softmax" => Op::Softmax,
        "concat" => Op::Concat,
        other => {
            return Err(format!(
                "node {name}: operator {other:?} is not one kiln runs (conv, linear, pool, gap, resize, add, channel-mul, activation, softmax, concat, slice)"
            ))
        }
    };
    if let Some((k, _)) = keys.iter().find(|(k, _)| !used.contains(k)) {
        return Err(format!(
            "node {name}: key {k:?} means nothing to this operator"
        ));
    }
    Ok(Node {
        name: name.to_string(),
        op,
        inputs,
        output,
        activation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::models;

    #[test]
    fn every_built_in_network_reads_back_as_written() {
        for name in models::NAMES {
            let def = models::by_name(name).unwrap();
            let text = def.to_text().unwrap();
            assert!(text.starts_with("kiln-network 1\n"), "{text}");
            let back = NetworkDef::from_text(&text).unwrap_or_else(|e| panic!("{}: {e}", def.name));
            assert_eq!(back, def, "{}", def.name);
            // Comments and blank lines are skipped.
            let commented = format!(
                "# {}\n\n{}",
                def.name,
                text.replace("\nnode", "\n\n# a node\nnode")
            );
            assert_eq!(NetworkDef::from_text(&commented).unwrap(), def);
        }
    }

    #[test]
    fn bad_text_is_refused_naming_the_line_and_key() {
        let good = "kiln-network 1\nname n\ninput x 3x8x8\nnode c conv from=x to=y act=relu weight=c.w k=4 kernel=3x3 stride=1x1 pad=1x1 groups=1 bn=c.bn eps=0.001\noutput y\n";
        assert!(NetworkDef::from_text(good).is_ok());
        for (text, line, want) in [
            ("", 0, "empty"),
            ("kiln-network 2\n", 1, "expected \"kiln-network 1\" first"),
            ("kiln-network 1\nname n\nname m\n", 3, "name given twice"),
            ("kiln-network 1\nname n\ninput x 3x8\n", 3, "not CxHxW"),
            ("kiln-network 1\nname n\ninput x 0x8x8\n", 3, "not CxHxW"),
            ("kiln-network 1\nbogus line here\n", 2, "found \"bogus\""),
            ("kiln-network 1\nname n\ninput x 3x8x8\nnode c warp from=x to=y act=relu\n", 4, "operator \"warp\""),
            ("kiln-network 1\nname n\ninput x 3x8x8\nnode c softmax from=x to=y act=glow\n", 4, "act \"glow\""),
            ("kiln-network 1\nname n\ninput x 3x8x8\nnode c softmax from=x to=y\n", 4, "no act"),
            ("kiln-network 1\nname n\ninput x 3x8x8\nnode c softmax from=x to=y act=relu colour=red\n", 4, "key \"colour\""),
            ("kiln-network 1\nname n\ninput x 3x8x8\nnode c softmax from=x from=z to=y act=relu\n", 4, "from given twice"),
            ("kiln-network 1\nname n\ninput x 3x8x8\nnode c conv from=x to=y act=relu weight=w k=four kernel=3x3 stride=1x1 pad=1x1 groups=1\n", 4, "k \"four\""),
            ("kiln-network 1\nname n\ninput x 3x8x8\nnode c conv from=x to=y act=relu weight=w k=4 kernel=3 stride=1x1 pad=1x1 groups=1\n", 4, "kernel \"3\" is not HxW"),
            ("kiln-network 1\nname n\ninput x 3x8x8\nnode c conv from=x to=y act=relu weight=w k=4 kernel=3x3 stride=1x1 pad=1x1 groups=1 bn=b\n", 4, "bn with eps"),
            ("kiln-network 1\nname n\ninput x 3x8x8\nnode c conv from=x to=y act=relu weight=w k=4 kernel=3x3 stride=1x1 pad=1x1 groups=1 bn=b eps=NaN\n", 4, "eps \"NaN\""),
            ("kiln-network 1\nname n\ninput x 3x8x8\nnode c pool from=x to=y act=relu mode=max window=3x3 stride=2x2 pad=1x1 ceil=2\n", 4, "ceil \"2\""),
            ("kiln-network 1\nname n\ninput x 3x8x8\nnode c softmax from=x to=y act=relu\n", 0, "no output line"),
            // The whole: a tensor read before it is written.
            ("kiln-network 1\nname n\ninput x 3x8x8\nnode c softmax from=z to=y act=identity\noutput y\n", 0, "z"),
        ] {
            let e = NetworkDef::from_text(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().contains(want), "{text:?}: {e}");
        }
        // Writing refuses a name the form cannot hold.
        let mut def = NetworkDef::from_text(good).unwrap();
        def.nodes[0].name = "a b".into();
        assert!(def.to_text().unwrap_err().reason.contains("\"a b\""));
    }
}
