"""The ONNX import against onnxruntime, on the CPU: small models built with the onnx package
cover each supported operator and attribute combination; each is imported with
`kiln-tools net import`, run through kiln's CPU reference (`kiln-tools net reference`, f64
arithmetic, FP32 tensors) and through onnxruntime on the same random input, and the outputs
compared. The plan is checked too: how many kiln nodes each model becomes (what folded).
Unsupported and malformed models must be refused in one line naming the node, with nothing
written. Wheels: ci/onnx-wheels.txt (installed by ci/setup.sh).

    python3 ci/onnx_check.py [--tools target/debug/kiln-tools]
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("KILN_TOOLS", os.path.expanduser("~/.cache/kiln-tools")), "onnx-wheels"))
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(7)
C, H, W, N = 8, 12, 12, 2


def init(name, shape, scale=0.3, positive=False):
    v = RNG.standard_normal(shape).astype(np.float32) * scale
    if positive:
        v = np.abs(v) + 0.5
    return numpy_helper.from_array(v, name)


def conv(name, x, y, cin, cout, k=3, stride=1, pad=1, group=1, bias=True):
    inits = [init(f"{name}.w", (cout, cin // group, k, k))]
    inputs = [x, f"{name}.w"]
    if bias:
        inits.append(init(f"{name}.b", (cout,)))
        inputs.append(f"{name}.b")
    node = helper.make_node("Conv", inputs, [y], name=name, kernel_shape=[k, k], strides=[stride, stride],
                            pads=[pad] * 4, group=group)
    return [node], inits


def bn(name, x, y, c):
    inits = [init(f"{name}.g", (c,), positive=True), init(f"{name}.beta", (c,)), init(f"{name}.mean", (c,)),
             init(f"{name}.var", (c,), positive=True)]
    return [helper.make_node("BatchNormalization", [x] + [i.name for i in inits], [y], name=name, epsilon=1e-3)], inits


def model(nodes, inits, out, out_shape, in_shape=(N, C, H, W), opset=17):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"] + list(in_shape[1:]))],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["N"] + list(out_shape[1:]))], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def act(kind, x, y, name):
    """An activation node (or two, for SiLU) from x to y, and its initializers."""
    if kind == "silu":
        return [helper.make_node("Sigmoid", [x], [f"{name}.s"], name=f"{name}.sig"),
                helper.make_node("Mul", [x, f"{name}.s"], [y], name=name)], []
    if kind == "clip6":
        lo, hi = numpy_helper.from_array(np.float32(0), f"{name}.lo"), numpy_helper.from_array(np.float32(6), f"{name}.hi")
        return [helper.make_node("Clip", [x, lo.name, hi.name], [y], name=name)], [lo, hi]
    attrs = {"hardsigmoid": {"alpha": 1.0 / 6.0, "beta": 0.5}, "leakyrelu": {"alpha": 0.01}}.get(kind, {})
    op = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "hardswish": "HardSwish",
          "hardsigmoid": "HardSigmoid", "leakyrelu": "LeakyRelu"}[kind]
    return [helper.make_node(op, [x], [y], name=name, **attrs)], []


def cases():
    """(name, model, kiln nodes it must become)."""
    out = []
    # Each activation folded into a convolution with a batch norm (and a conv bias moved into it).
    for kind in ["relu", "clip6", "sigmoid", "tanh", "hardswish", "hardsigmoid", "leakyrelu", "silu"]:
        n1, i1 = conv("c", "x", "c", C, 16)
        n2, i2 = bn("bn", "c", "b", 16)
        n3, i3 = act(kind, "b", "y", "a")
        out.append((f"conv+bn+{kind}", model(n1 + n2 + n3, i1 + i2 + i3, "y", (N, 16, H, W)), 1))
    # Geometry: stride 2 without padding, 1x1, 5x5, depthwise, grouped, no bias.
    for label, kw, cout in [("stride2", dict(stride=2, pad=0), 8), ("1x1", dict(k=1, pad=0), 24),
                            ("5x5", dict(k=5, pad=2), 8), ("depthwise", dict(group=C), C),
                            ("grouped", dict(group=2), 16), ("nobias", dict(bias=False), 8)]:
        n1, i1 = conv("c", "x", "y", C, cout, **kw)
        oh = (H + 2 * kw.get("pad", 1) - kw.get("k", 3)) // kw.get("stride", 1) + 1
        out.append((f"conv-{label}", model(n1, i1, "y", (N, cout, oh, oh)), 1))
    # A residual add folded into the second convolution, then ReLU.
    n1, i1 = conv("c1", "x", "c1", C, C)
    n2, i2 = conv("c2", "c1", "c2", C, C)
    nodes = n1 + n2 + [helper.make_node("Add", ["c2", "x"], ["a"], name="add"), helper.make_node("Relu", ["a"], ["y"], name="r")]
    out.append(("residual", model(nodes, i1 + i2, "y", (N, C, H, W)), 2))
    # An add of two convolutions' outputs (the second written after the first: not folded).
    n1, i1 = conv("c1", "x", "c1", C, C)
    n2, i2 = conv("c2", "x", "c2", C, C)
    out.append(("add", model(n1 + n2 + [helper.make_node("Add", ["c1", "c2"], ["y"], name="add")], i1 + i2, "y", (N, C, H, W)), 2))
    # Pooling: max with ceil mode and padding, average with and without the padding counted.
    for label, op, kw, oh in [("maxpool", "MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1), 7),
                              ("avgpool-pad", "AveragePool", dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1), 12),
                              ("avgpool-nopad", "AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), 6)]:
        out.append((label, model([helper.make_node(op, ["x"], ["y"], name="p", **kw)], [], "y", (N, C, oh, oh)), 1))
    # A classifier head: global pool, flatten, Gemm (transB 1 and 0), MatMul, softmax.
    for label, trans in [("gemm-transB", 1), ("gemm", 0), ("matmul", None)]:
        w = init("fc.w", (10, C) if trans == 1 else (C, 10))
        nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="gap"),
                 helper.make_node("Flatten", ["g"], ["f"], name="flat", axis=1)]
        inits = [w]
        if trans is None:
            nodes.append(helper.make_node("MatMul", ["f", "fc.w"], ["l"], name="fc"))
        else:
            inits.append(init("fc.b", (10,)))
            nodes.append(helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["l"], name="fc", transB=trans))
        nodes.append(helper.make_node("Softmax", ["l"], ["y"], name="sm", axis=1))
        out.append((label, model(nodes, inits, "y", (N, 10)), 3))
    # Squeeze-and-excitation: pool, two 1x1 convolutions (SiLU, sigmoid), channel multiply.
    n1, i1 = conv("se1", "g", "s1", C, 4, k=1, pad=0)
    n1b, _ = act("silu", "s1", "s1a", "se1a")
    n2, i2 = conv("se2", "s1a", "s2", 4, C, k=1, pad=0)
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="gap")] + n1 + n1b + n2 + [
        helper.make_node("Sigmoid", ["s2"], ["s2s"], name="se2a"), helper.make_node("Mul", ["x", "s2s"], ["y"], name="excite")]
    out.append(("squeeze-excite", model(nodes, i1 + i2, "y", (N, C, H, W)), 4))
    # Channel concatenation of two convolutions.
    n1, i1 = conv("c1", "x", "c1", C, 8)
    n2, i2 = conv("c2", "x", "c2", C, 16)
    out.append(("concat", model(n1 + n2 + [helper.make_node("Concat", ["c1", "c2"], ["y"], name="cat", axis=1)], i1 + i2, "y", (N, 24, H, W)), 3))
    # Upsampling by 2: PyTorch's nearest (asymmetric, floor) and bilinear (half-pixel).
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")
    for label, kw in [("resize-nearest", dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")),
                      ("resize-bilinear", dict(mode="linear", coordinate_transformation_mode="half_pixel"))]:
        node = helper.make_node("Resize", ["x", "", "sc"], ["y"], name="up", **kw)
        out.append((label, model([node], [scales], "y", (N, C, 2 * H, 2 * W)), 1))
    # Channel splits (equal, and by sizes) put back together in another order; a channel slice.
    sizes = numpy_helper.from_array(np.array([2, 6], np.int64), "sizes")
    for label, inputs, inits in [("split-equal", ["x"], []), ("split-sizes", ["x", "sizes"], [sizes])]:
        nodes = [helper.make_node("Split", inputs, ["a", "b"], name="split", axis=1),
                 helper.make_node("Concat", ["b", "a"], ["y"], name="cat", axis=1)]
        out.append((label, model(nodes, inits, "y", (N, C, H, W)), 3))
    consts = [numpy_helper.from_array(np.array([v], np.int64), n) for n, v in [("st", 2), ("en", 6), ("ax", 1)]]
    out.append(("slice", model([helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"], name="sl")], consts, "y", (N, 4, H, W)), 1))
    # torch.onnx's chunk(2, 1): the halves' bounds computed from Shape (folded at import); the
    # halves concatenated back in order with a convolution of the second (YOLO's C2f): the
    # concatenation reads the whole tensor and the first half's slice is dropped.
    n1, i1 = conv("c1", "x", "c1", C, C)
    n2, i2 = conv("c2", "h1", "c2", C // 2, C // 2)
    nodes = [helper.make_node("Shape", ["c1"], ["shape"], name="shape"),
             helper.make_node("Constant", [], ["one"], name="k1", value=numpy_helper.from_array(np.array([1], np.int64))),
             helper.make_node("Constant", [], ["two"], name="k2", value=numpy_helper.from_array(np.array([2], np.int64))),
             helper.make_node("Constant", [], ["zero"], name="k0", value=numpy_helper.from_array(np.array([0], np.int64))),
             helper.make_node("Gather", ["shape", "one"], ["c"], name="gather", axis=0),
             helper.make_node("Add", ["c", "one"], ["c1p"], name="plus"),
             helper.make_node("Div", ["c1p", "two"], ["half"], name="div"),
             helper.make_node("Mul", ["half", "two"], ["end"], name="mul"),
             helper.make_node("Slice", ["c1", "zero", "half", "one"], ["h0"], name="lo"),
             helper.make_node("Slice", ["c1", "half", "end", "one"], ["h1"], name="hi")]
    nodes = n1 + nodes + n2 + [helper.make_node("Concat", ["h0", "h1", "c2"], ["y"], name="cat", axis=1)]
    out.append(("chunk-concat", model(nodes, i1 + i2, "y", (N, C + C // 2, H, W)), 4))
    # One weight under two names (torch.onnx's Identity of an initializer), read by two convolutions.
    n1, i1 = conv("c1", "x", "c1", C, C, bias=False)
    n2, _ = conv("c2", "c1", "y", C, C, bias=False)
    n2[0].input[1] = "shared"
    nodes = [helper.make_node("Identity", ["c1.w"], ["shared"], name="alias")] + n1 + n2
    out.append(("shared-weight", model(nodes, i1, "y", (N, C, H, W)), 2))
    return out


def refusals():
    """(name, model, what the one-line error must hold)."""
    out = []
    n1, i1 = conv("c", "x", "y", C, 8)
    n1[0].attribute.append(helper.make_attribute("dilations", [2, 2]))
    out.append(("dilated", model(n1, i1, "y", (N, 8, H - 2, W - 2)), 'node "c" (Conv): attribute dilations'))
    n1, i1 = conv("c", "x", "y", C, 8)
    del n1[0].attribute[:]
    n1[0].attribute.extend([helper.make_attribute("kernel_shape", [3, 3]), helper.make_attribute("pads", [1, 1, 0, 0])])
    out.append(("asymmetric pads", model(n1, i1, "y", (N, 8, H - 1, W - 1)), 'node "c" (Conv): attribute pads'))
    out.append(("lrn", model([helper.make_node("LRN", ["x"], ["y"], name="n", size=3)], [], "y", (N, C, H, W)), 'node "n" (LRN): operator not supported'))
    out.append(("resize cubic", model([helper.make_node("Resize", ["x", "", "sc"], ["y"], name="up", mode="cubic")],
                                      [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")], "y", (N, C, 2 * H, 2 * W)),
                'node "up" (Resize): mode "cubic"'))
    n2, i2 = bn("bn", "x", "y", C)
    out.append(("lone batch norm", model(n2, i2, "y", (N, C, H, W)), 'node "bn" (BatchNormalization): a batch norm folds'))
    out.append(("flatten a map", model([helper.make_node("Flatten", ["x"], ["y"], name="f", axis=1)], [], "y", (N, C * H * W)),
                'node "f" (Flatten): of a 8x12x12 tensor'))
    out.append(("leaky slope", model([helper.make_node("LeakyRelu", ["x"], ["y"], name="l", alpha=0.2)], [], "y", (N, C, H, W)),
                'node "l" (LeakyRelu): attribute alpha'))
    out.append(("clip 0..1", model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="cl")],
                                   [numpy_helper.from_array(np.float32(0), "lo"), numpy_helper.from_array(np.float32(1), "hi")], "y", (N, C, H, W)),
                'node "cl" (Clip): bounds 0..1'))
    out.append(("concat over height", model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat", axis=2)], [], "y", (N, C, 2 * H, W)),
                'node "cat" (Concat): attribute axis 2'))
    out.append(("softmax over width", model([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=3)], [], "y", (N, C, H, W)),
                'node "sm" (Softmax): attribute axis 3'))
    shape = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "i0"], ["n"], name="batch", axis=0),
             helper.make_node("Slice", ["x", "z", "n", "ax"], ["y"], name="sl")]
    ints = [numpy_helper.from_array(np.array([v], np.int64), n) for n, v in [("i0", 0), ("z", 0), ("ax", 1)]]
    out.append(("slice by the batch", model(shape, ints, "y", (N, C, H, W)), 'node "sl" (Slice): input "n" depends on the batch size'))
    return out


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", default="target/debug/kiln-tools")
    a = ap.parse_args()
    failures, worst = [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name, m, nodes in cases():
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(m, path)
            out_dir = os.path.join(tmp, "out-" + name)
            code, out, err = run([a.tools, "net", "import", path, "--out", out_dir, "--name", "m"])
            if code != 0:
                failures.append(f"{name}: import failed: {err.strip()}")
                continue
            text = open(os.path.join(out_dir, "m.txt")).read()
            got_nodes = sum(1 for line in text.splitlines() if line.startswith("node "))
            if got_nodes != nodes:
                failures.append(f"{name}: {got_nodes} kiln nodes, expected {nodes}:\n{text}")
            x = RNG.standard_normal((N, C, H, W)).astype(np.float32)
            want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
            x.transpose(0, 2, 3, 1).tofile(os.path.join(tmp, "in.bin"))
            code, out, err = run([a.tools, "net", "reference", os.path.join(out_dir, "m.txt"), "--weights",
                                  os.path.join(out_dir, "m.safetensors"), "--input", os.path.join(tmp, "in.bin"),
                                  "--batch", str(N), "--out", os.path.join(tmp, "out.bin")])
            if code != 0:
                failures.append(f"{name}: reference failed: {err.strip()}")
                continue
            got = np.fromfile(os.path.join(tmp, "out.bin"), np.float32)
            want_nhwc = want.transpose(0, 2, 3, 1) if want.ndim == 4 else want
            err_abs = float(np.max(np.abs(got - want_nhwc.reshape(-1)))) if got.size == want.size else float("inf")
            scale = max(1.0, float(np.max(np.abs(want))))
            worst = max(worst, err_abs / scale)
            status = "ok" if err_abs <= 1e-4 * scale else "MISMATCH"
            print(f"{name:20s} {got_nodes} kiln node(s)  max |kiln - onnxruntime| {err_abs:.2e}  {status}")
            if status != "ok":
                failures.append(f"{name}: outputs differ by {err_abs:.3e} (scale {scale:.3g})")
            # Filters stored in half precision: the same outputs within the storage's rounding.
            if name not in ("conv+bn+silu", "gemm-transB", "conv-depthwise"):
                continue
            for storage, tol in (("FP16", 2e-3), ("BF16", 2e-2)):
                half_dir = os.path.join(tmp, f"out-{name}-{storage}")
                code, out, err = run([a.tools, "net", "import", path, "--out", half_dir, "--name", "m", "--weights-type", storage])
                if code != 0:
                    failures.append(f"{name} ({storage} weights): import failed: {err.strip()}")
                    continue
                code, out, err = run([a.tools, "net", "reference", os.path.join(half_dir, "m.txt"), "--weights",
                                      os.path.join(half_dir, "m.safetensors"), "--input", os.path.join(tmp, "in.bin"),
                                      "--batch", str(N), "--out", os.path.join(tmp, "out.bin")])
                got_half = np.fromfile(os.path.join(tmp, "out.bin"), np.float32) if code == 0 else np.zeros(0)
                half_err = float(np.max(np.abs(got_half - want_nhwc.reshape(-1)))) if got_half.size == want.size else float("inf")
                ok = half_err <= tol * scale
                print(f"{name + ' ' + storage:20s} weights stored {storage}: max |kiln - onnxruntime| {half_err:.2e}  {'ok' if ok else 'MISMATCH'}")
                if not ok:
                    failures.append(f"{name} ({storage} weights): outputs differ by {half_err:.3e} (scale {scale:.3g})")
        for name, m, want in refusals():
            path = os.path.join(tmp, "bad.onnx")
            onnx.save(m, path)
            out_dir = os.path.join(tmp, "refused")
            code, out, err = run([a.tools, "net", "import", path, "--out", out_dir])
            one_line = len(err.strip().splitlines()) == 1
            if code != 1 or want not in err or not one_line or os.path.exists(out_dir):
                failures.append(f"refusal {name}: exit {code}, stderr {err.strip()!r}, expected one line holding {want!r}, nothing written")
            else:
                print(f"refused {name:18s} {err.strip()}")
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}: {len(cases())} models, "
          f"worst relative difference {worst:.2e}; {len(refusals())} refusals")
    if failures:
        print("\n".join(["FAILED:"] + failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
