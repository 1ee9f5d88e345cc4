"""Writes a small ONNX classifier (3x32x32 input: Conv 3->8 with ReLU, global average pool,
flatten, Gemm 8->10, softmax; seeded weights) for the appliance check in `make examples`,
where a network must be embedded but ResNet-50's 50 MB of weights would only slow CI.

    python3 ci/tiny_onnx.py OUT.onnx
"""

import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("KILN_TOOLS", os.path.expanduser("~/.cache/kiln-tools")), "onnx-wheels"))
import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

rng = np.random.default_rng(0)
inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32) * np.float32(k), n)
         for n, s, k in [("conv.weight", (8, 3, 3, 3), 0.3), ("conv.bias", (8,), 0.1),
                         ("fc.weight", (10, 8), 0.5), ("fc.bias", (10,), 0.1)]]
nodes = [helper.make_node("Conv", ["image", "conv.weight", "conv.bias"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1] * 4),
         helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("GlobalAveragePool", ["r"], ["g"], name="pool"),
         helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
         helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["l"], name="fc", transB=1),
         helper.make_node("Softmax", ["l"], ["probabilities"], name="softmax", axis=1)]
graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 32, 32])],
                          [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 10])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
