//! `kiln-tools net import`: ONNX models (built here with onnx-rs's encoder) become kiln network
//! definitions and weights, with batch norms, residual adds and activations folded into the
//! operators before them; unsupported graphs are refused naming the node, the operator and the
//! attribute, with nothing written.

mod common;

use std::path::Path;

use onnx_rs::ast::*;

fn tools(args: &[&str]) -> (Option<i32>, String, String) {
    common::run_in_repo(env!("CARGO_BIN_EXE_kiln-tools"), args)
}

fn ints<'a>(name: &'a str, v: &[i64]) -> Attribute<'a> {
    Attribute {
        name,
        r#type: AttributeType::Ints,
        ints: v.to_vec(),
        ..Default::default()
    }
}

fn int(name: &str, v: i64) -> Attribute<'_> {
    Attribute {
        name,
        r#type: AttributeType::Int,
        i: v,
        ..Default::default()
    }
}

fn float(name: &str, v: f32) -> Attribute<'_> {
    Attribute {
        name,
        r#type: AttributeType::Float,
        f: v,
        ..Default::default()
    }
}

fn node<'a>(
    name: &'a str,
    op: OpType<'a>,
    input: &[&'a str],
    output: &'a str,
    attribute: Vec<Attribute<'a>>,
) -> Node<'a> {
    Node {
        name,
        op_type: op,
        input: input.to_vec(),
        output: vec![output],
        attribute,
        ..Default::default()
    }
}

fn value<'a>(name: &'a str, dims: &[i64]) -> ValueInfo<'a> {
    ValueInfo {
        name,
        r#type: Some(TypeProto {
            value: Some(TypeValue::Tensor(TensorTypeProto {
                elem_type: DataType::Float,
                shape: Some(TensorShape {
                    dim: dims
                        .iter()
                        .map(|&d| TensorShapeDimension {
                            value: if d < 0 {
                                Dimension::Param("N")
                            } else {
                                Dimension::Value(d)
                            },
                            ..Default::default()
                        })
                        .collect(),
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Values 0.01, 0.02, ... (distinct, small).
fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i % 97) as f32 * 0.01 - 0.3).collect()
}

fn model<'a>(
    nodes: Vec<Node<'a>>,
    init: Vec<TensorProto<'a>>,
    input: ValueInfo<'a>,
    output: &'a str,
) -> Vec<u8> {
    onnx_rs::encode(&Model {
        ir_version: 8,
        opset_import: vec![OperatorSetId {
            domain: "",
            version: 17,
        }],
        graph: Some(Graph {
            name: "g",
            node: nodes,
            initializer: init,
            input: vec![input],
            output: vec![value(output, &[-1, 10])],
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// A small residual classifier: conv + bias + batch norm + ReLU, conv + residual + ReLU, max
/// pool with SiLU (as Mul(x, Sigmoid(x))), global pool, flatten, Gemm, softmax.
fn classifier<'a>(nodes_edit: impl FnOnce(&mut Vec<Node<'a>>)) -> Vec<u8> {
    let pads = ints("pads", &[1, 1, 1, 1]);
    let mut nodes = vec![
        node(
            "conv1",
            OpType::Conv,
            &["x", "w1", "b1"],
            "c1",
            vec![ints("kernel_shape", &[3, 3]), pads.clone()],
        ),
        node(
            "bn1",
            OpType::BatchNormalization,
            &["c1", "g", "beta", "mean", "var"],
            "n1",
            vec![float("epsilon", 1e-3)],
        ),
        node("relu1", OpType::Relu, &["n1"], "r1", vec![]),
        node("conv2", OpType::Conv, &["r1", "w2"], "c2", vec![pads]),
        node("add", OpType::Add, &["c2", "x"], "a", vec![]),
        node("relu2", OpType::Relu, &["a"], "r2", vec![]),
        node(
            "pool",
            OpType::MaxPool,
            &["r2"],
            "p",
            vec![ints("kernel_shape", &[2, 2]), ints("strides", &[2, 2])],
        ),
        node("sig", OpType::Sigmoid, &["p"], "s", vec![]),
        node("silu", OpType::Mul, &["p", "s"], "q", vec![]),
        node("gap", OpType::GlobalAveragePool, &["q"], "g0", vec![]),
        node("flat", OpType::Flatten, &["g0"], "f", vec![int("axis", 1)]),
        node(
            "fc",
            OpType::Gemm,
            &["f", "wf", "bf"],
            "logits",
            vec![int("transB", 1)],
        ),
        node(
            "softmax",
            OpType::Softmax,
            &["logits"],
            "prob",
            vec![int("axis", 1)],
        ),
    ];
    nodes_edit(&mut nodes);
    let init = vec![
        TensorProto::from_f32("w1", vec![8, 8, 3, 3], ramp(576)),
        TensorProto::from_f32("b1", vec![8], ramp(8)),
        TensorProto::from_f32("g", vec![8], vec![1.5; 8]),
        TensorProto::from_f32("beta", vec![8], vec![0.25; 8]),
        TensorProto::from_f32("mean", vec![8], vec![0.1; 8]),
        TensorProto::from_f32("var", vec![8], vec![2.0; 8]),
        TensorProto::from_f32("w2", vec![8, 8, 3, 3], ramp(576)),
        TensorProto::from_f32("wf", vec![10, 8], ramp(80)),
        TensorProto::from_f32("bf", vec![10], ramp(10)),
    ];
    model(nodes, init, value("x", &[-1, 8, 16, 16]), "prob")
}

fn import(dir: &Path, name: &str, bytes: &[u8]) -> (Option<i32>, String, String) {
    let file = dir.join(format!("{name}.onnx"));
    std::fs::write(&file, bytes).unwrap();
    let out = dir.join(format!("out-{name}"));
    tools(&[
        "net",
        "import",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn an_onnx_classifier_becomes_a_kiln_network_with_its_epilogues_folded() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = classifier(|_| {});
    let (code, out, err) = import(dir.path(), "resblock", &bytes);
    assert_eq!(code, Some(0), "{out}{err}");
    let text = std::fs::read_to_string(dir.path().join("out-resblock/resblock.txt")).unwrap();
    let def = kiln::net::NetworkDef::from_text(&text).unwrap();
    let ops: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("node "))
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .collect();
    // Six kiln nodes for thirteen ONNX ones: the batch norm, adds, activations and the
    // flatten are folded away.
    assert_eq!(
        ops,
        [
            "node conv1 conv",
            "node conv2 conv",
            "node pool pool",
            "node gap gap",
            "node fc linear",
            "node softmax softmax"
        ],
        "{text}"
    );
    assert!(text.contains("act=relu weight=w1 bn=bn1.bn"), "{text}");
    assert!(text.contains("eps=0.001"), "{text}");
    assert!(text.contains("residual=x"), "{text}");
    assert!(
        text.contains("node pool pool from=r2 to=q act=silu"),
        "{text}"
    );
    assert_eq!(def.outputs, ["prob"]);
    // The weights kiln reads: the conv bias folded into the batch norm's mean.
    let weights = std::fs::read(dir.path().join("out-resblock/resblock.safetensors")).unwrap();
    let w = kiln::net::Weights::from_safetensors(&weights).unwrap();
    let mean = w.get("t", "bn1.bn.running_mean", &[8]).unwrap();
    let b1 = ramp(8);
    for (m, b) in mean.values.iter().zip(b1) {
        assert!((m - (0.1 - b)).abs() < 1e-6, "{m} vs 0.1 - {b}");
    }
    assert!(
        w.get("t", "b1", &[8]).is_err(),
        "the folded bias is not kept"
    );
    // The same model gives the same bytes.
    let (code, _, err) = import(dir.path(), "again", &bytes);
    assert_eq!(code, Some(0), "{err}");
    let again = std::fs::read(dir.path().join("out-again/again.safetensors")).unwrap();
    assert_eq!(again, weights);
    let again_text = std::fs::read_to_string(dir.path().join("out-again/again.txt")).unwrap();
    assert_eq!(again_text.replace("name again", "name resblock"), text);
}

#[test]
fn unsupported_graphs_are_refused_naming_the_node_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    type Edit = fn(&mut Vec<Node<'static>>);
    let cases: [(&str, Edit, &str); 10] = [
        ("out of order", |n| n.swap(3, 4), "node \"add\" (Add): reads tensor \"c2\", which neither the input nor an earlier node writes"),
        (
            "dilated",
            |n| n[0].attribute.push(ints("dilations", &[2, 2])),
            "node \"conv1\" (Conv): attribute dilations",
        ),
        (
            "asymmetric",
            |n| n[0].attribute[1] = ints("pads", &[1, 1, 0, 0]),
            "node \"conv1\" (Conv): attribute pads [1, 1, 0, 0]",
        ),
        (
            "unknown op",
            |n| n[2].op_type = OpType::Custom("Swoosh"),
            "node \"relu1\" (Swoosh): operator not supported",
        ),
        (
            "unknown attribute",
            |n| n[6].attribute.push(int("spice", 1)),
            "node \"pool\" (MaxPool): attribute \"spice\"",
        ),
        (
            "bn after no conv",
            |n| n[1].input[0] = "x",
            "node \"bn1\" (BatchNormalization): a batch norm folds into the convolution before it",
        ),
        (
            "flatten a map",
            |n| n[10].input = vec!["q"],
            "node \"flat\" (Flatten): of a 8x8x8 tensor",
        ),
        (
            "leaky slope",
            |n| {
                n[2].op_type = OpType::LeakyRelu;
                n[2].attribute.push(float("alpha", 0.2));
            },
            "node \"relu1\" (LeakyRelu): attribute alpha",
        ),
        (
            "gemm transA",
            |n| n[11].attribute.push(int("transA", 1)),
            "node \"fc\" (Gemm): attributes alpha, beta and transA",
        ),
        (
            "softmax axis",
            |n| n[12].attribute[0] = int("axis", 0),
            "node \"softmax\" (Softmax): attribute axis 0",
        ),
    ];
    for (name, edit, want) in cases {
        let bytes = classifier(edit);
        let (code, out, err) = import(dir.path(), &name.replace(' ', "-"), &bytes);
        assert_eq!(code, Some(1), "{name}: {out}{err}");
        assert!(err.contains(want), "{name}: {err}");
        assert!(
            !dir.path()
                .join(format!("out-{}", name.replace(' ', "-")))
                .exists(),
            "{name}: wrote"
        );
    }
    // Not ONNX at all, and an empty file.
    for (name, bytes) in [
        (
            "garbage",
            &b"\x0a\xff\xff\xff\xff\x0f plainly not protobuf"[..],
        ),
        ("empty", &b""[..]),
    ] {
        let (code, _, err) = import(dir.path(), name, bytes);
        assert_eq!(code, Some(1), "{name}: {err}");
        assert!(
            err.contains(name) && err.lines().count() == 1,
            "{name}: {err}"
        );
    }
    // Two inputs.
    let mut two = classifier(|_| {});
    let parsed = onnx_rs::parse(&two).unwrap();
    let mut m = parsed.clone();
    if let Some(g) = m.graph.as_mut() {
        g.input.push(value("y", &[-1, 8, 16, 16]));
    }
    two = onnx_rs::encode(&m);
    let (code, _, err) = import(dir.path(), "two", &two);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("one input; the graph has 2"), "{err}");
    // A weight type kiln does not store: one line naming the flag, nothing written.
    let file = dir.path().join("valid.onnx");
    std::fs::write(&file, classifier(|_| {})).unwrap();
    let out = dir.path().join("out-int8");
    let (code, _, err) = tools(&[
        "net",
        "import",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--weights-type",
        "INT8",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--weights-type \"INT8\"") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!out.exists(), "wrote");
}

/// `find --model` measures exactly a network's convolutions as it runs them (fused), here an
/// imported one, from a log (no GPU).
#[test]
fn find_measures_a_models_own_problems() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = import(dir.path(), "net", &classifier(|_| {}));
    assert_eq!(code, Some(0), "{out}{err}");
    let def_path = dir.path().join("out-net/net.txt");
    let def =
        kiln::net::NetworkDef::from_text(&std::fs::read_to_string(&def_path).unwrap()).unwrap();
    let mut keys: Vec<String> = Vec::new();
    for batch in [1, 4] {
        for (_, p) in def.conv_problems(batch, kiln::DataType::Fp16).unwrap() {
            keys.push(p.find_db_key().to_string());
        }
    }
    keys.sort();
    keys.dedup();
    // Two convolutions and the linear layer, at two batches, each with its fused epilogue.
    assert_eq!(keys.len(), 6, "{keys:?}");
    // The batch norms' scales fold into the filters: their epilogues hold a bias alone.
    assert!(keys.iter().any(|k| k.contains("+bias+relu")), "{keys:?}");
    assert!(!keys.iter().any(|k| k.contains("+scale")), "{keys:?}");
    assert!(keys.iter().any(|k| k.contains("+add+relu")), "{keys:?}");
    let log = dir.path().join("log.tsv");
    let lines: Vec<String> = keys
        .iter()
        .map(|k| format!("{k}\tConvDirectNaiveFwd\t\t0.5\t0.0e0\ttrue"))
        .collect();
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let db = dir.path().join("db");
    let (code, out, err) = tools(&[
        "find",
        "--from-log",
        log.to_str().unwrap(),
        "--target",
        "sm_90_132",
        "--model",
        def_path.to_str().unwrap(),
        "--batch",
        "1,4",
        "--db-dir",
        db.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("6 problems, 0 already measured, 6 to measure"),
        "{out}"
    );
    let fdb = std::fs::read_to_string(db.join("sm_90_132.HIP.fdb.txt")).unwrap();
    let mut recorded: Vec<&str> = fdb.lines().map(|l| l.split('=').next().unwrap()).collect();
    recorded.sort();
    assert_eq!(recorded, keys);
    // A model that is neither built in nor a file.
    let (code, _, err) = tools(&[
        "find",
        "--from-log",
        log.to_str().unwrap(),
        "--target",
        "sm_90_132",
        "--model",
        "vgg",
        "--db-dir",
        db.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--model vgg") && err.contains("resnet50"),
        "{err}"
    );
}
