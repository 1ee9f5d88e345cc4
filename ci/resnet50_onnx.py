"""Writes ResNet-50 as an ONNX model, the graph torch.onnx.export writes for torchvision's
resnet50 in eval mode with a softmax head (each batch norm folded into its convolution's
weights and bias; Conv, Relu, MaxPool, Add, GlobalAveragePool, Flatten, Gemm, Softmax; node
names as the exporter gives them), with seeded random weights scaled so that activations stay
in range (He-normal filters; each block's last convolution damped, as zero-init-residual
training leaves it) and a classifier calibrated on random images (onnxruntime) so that its
logits differ between images by a few units, as a trained network's do, rather than all
images landing on one class. What `make demo` imports and embeds,
on a machine without PyTorch: it needs only the onnx package (ci/setup.sh installs it).

    python3 ci/resnet50_onnx.py OUT.onnx [--seed 0]
"""

import argparse
import os
import sys

# The pinned onnx and onnxruntime wheels ci/setup.sh installs.
sys.path.insert(0, os.path.join(os.environ.get("KILN_TOOLS", os.path.expanduser("~/.cache/kiln-tools")), "onnx-wheels"))
import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def build(seed):
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def conv(scope, x, cin, cout, k, stride, damp=1.0):
        w = rng.standard_normal((cout, cin, k, k), dtype=np.float32) * np.float32(damp * np.sqrt(2.0 / (cin * k * k)))
        b = rng.standard_normal(cout, dtype=np.float32) * np.float32(0.05)
        wn, bn = f"{scope.strip('/').replace('/', '.')}.weight", f"{scope.strip('/').replace('/', '.')}.bias"
        inits.extend([numpy_helper.from_array(w, wn), numpy_helper.from_array(b, bn)])
        y = f"{scope}/Conv_output_0"
        nodes.append(helper.make_node("Conv", [x, wn, bn], [y], name=f"{scope}/Conv", kernel_shape=[k, k],
                                      strides=[stride, stride], pads=[k // 2] * 4, dilations=[1, 1], group=1))
        return y

    def relu(scope, x):
        y = f"{scope}/Relu_output_0"
        nodes.append(helper.make_node("Relu", [x], [y], name=f"{scope}/Relu"))
        return y

    x = relu("/relu", conv("/conv1", "images", 3, 64, 7, 2))
    nodes.append(helper.make_node("MaxPool", [x], ["/maxpool/MaxPool_output_0"], name="/maxpool/MaxPool",
                                  kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=0))
    x, cin = "/maxpool/MaxPool_output_0", 64
    for layer, (width, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)], 1):
        for b in range(blocks):
            s = stride if b == 0 else 1
            scope = f"/layer{layer}/layer{layer}.{b}"
            y = relu(f"{scope}/relu", conv(f"{scope}/conv1", x, cin, width, 1, 1))
            y = relu(f"{scope}/relu_1", conv(f"{scope}/conv2", y, width, width, 3, s))
            y = conv(f"{scope}/conv3", y, width, 4 * width, 1, 1, damp=0.3)
            identity = conv(f"{scope}/downsample/downsample.0", x, cin, 4 * width, 1, s) if b == 0 else x
            nodes.append(helper.make_node("Add", [y, identity], [f"{scope}/Add_output_0"], name=f"{scope}/Add"))
            x, cin = relu(f"{scope}/relu_2", f"{scope}/Add_output_0"), 4 * width
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["/avgpool/GlobalAveragePool_output_0"],
                                  name="/avgpool/GlobalAveragePool"))
    nodes.append(helper.make_node("Flatten", ["/avgpool/GlobalAveragePool_output_0"], ["/Flatten_output_0"],
                                  name="/Flatten", axis=1))
    w, b = classifier(rng, nodes, inits)
    inits.extend([numpy_helper.from_array(w, "fc.weight"), numpy_helper.from_array(b, "fc.bias")])
    nodes.append(helper.make_node("Gemm", ["/Flatten_output_0", "fc.weight", "fc.bias"], ["/fc/Gemm_output_0"],
                                  name="/fc/Gemm", alpha=1.0, beta=1.0, transB=1))
    nodes.append(helper.make_node("Softmax", ["/fc/Gemm_output_0"], ["output"], name="/Softmax", axis=1))
    graph = helper.make_graph(
        nodes, "main_graph",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="kiln ci/resnet50_onnx.py")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def classifier(rng, nodes, inits):
    """fc.weight and fc.bias: random directions, scaled and centred on the pooled features of
    16 random images (8 uniform, 8 normal) so that each logit varies between images with a
    standard deviation of 3."""
    import onnxruntime as ort
    graph = helper.make_graph(
        nodes, "features", [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("/Flatten_output_0", TensorProto.FLOAT, ["batch", 2048])], inits)
    probe = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    probe.ir_version = 8
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    # Images as `kiln net run` makes them (uniform in [-1, 1)) and normalised ones (N(0, 1)).
    x = np.concatenate([rng.uniform(-1.0, 1.0, (8, 3, 224, 224)).astype(np.float32),
                        rng.standard_normal((8, 3, 224, 224), dtype=np.float32)])
    f = session.run(None, {"images": x})[0].astype(np.float64)
    w = rng.standard_normal((1000, 2048))
    logits = (f - f.mean(0)) @ w.T
    w *= 3.0 / max(logits.std(0).mean(), 1e-12)
    b = -(f.mean(0) @ w.T) + rng.standard_normal(1000) * 0.1
    return w.astype(np.float32), b.astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    onnx.save(build(a.seed), a.out)


if __name__ == "__main__":
    main()
