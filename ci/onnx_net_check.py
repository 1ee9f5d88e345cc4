"""ONNX-imported networks against the hand-built ones and PyTorch, on a machine with the GPU.

For each network (torchvision ResNet-50, MobileNetV2, EfficientNet-B0 and the YOLO-style
detector of ci/yolo_module.py, random weights built as ci/net_check.py builds them): export it
with torch.onnx.export (a classifier with its softmax, as kiln's hand-built classifiers end),
import it twice with `kiln-tools net import` (the two imports must be byte-identical), run the
imported network through `kiln net run` on random images against PyTorch in the same type and
in FP32, and time it GPU-only at N=1 and N=32 beside the hand-built network (`kiln net run
<model>` with the same weights) and PyTorch eager and torch.compile, all in this run. kiln's
two networks are timed alternately, three runs each (the median is kept), so that drift
between runs falls on both.

    python3 ci/onnx_net_check.py --kiln out/kiln --tools out/kiln-tools --models resnet50 --out $OUT

Writes $OUT/onnx-<model>.json.
"""

import argparse
import filecmp
import json
import os
import statistics
import subprocess
import sys
import time

import torch

import net_check  # ci/: the networks, kiln runs and PyTorch timing


def export(m, size, detector, path):
    """torch.onnx.export of the network as kiln runs it (a classifier with its softmax)."""
    x = torch.randn(1, 3, size, size)
    torch.onnx.export(net_check.with_head(m, detector).eval(), (x,), path, dynamo=False, opset_version=17,
                      input_names=["images"], dynamic_axes={"images": {0: "batch"}})


def import_twice(tools, onnx_path, out_dir, name):
    """`kiln-tools net import` into two folders; the definition and weights of the first, and
    whether the two imports wrote the same bytes."""
    dirs = [os.path.join(out_dir, f"import-{name}-{i}") for i in (0, 1)]
    for d in dirs:
        r = subprocess.run([tools, "net", "import", onnx_path, "--out", d, "--name", name],
                           capture_output=True, text=True)
        print(r.stdout + r.stderr, flush=True)
        if r.returncode != 0:
            raise SystemExit(f"net import of {onnx_path} failed ({r.returncode})")
    files = sorted(os.listdir(dirs[0]))
    same = files == sorted(os.listdir(dirs[1])) and all(
        filecmp.cmp(os.path.join(dirs[0], f), os.path.join(dirs[1], f), shallow=False) for f in files)
    return os.path.join(dirs[0], f"{name}.txt"), os.path.join(dirs[0], f"{name}.safetensors"), same


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--tools", required=True)
    ap.add_argument("--models", nargs="+", default=["resnet50", "mobilenet_v2", "efficientnet_b0", "yolov8n"])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    dev = torch.device("cuda")
    for name in a.models:
        detector = name in net_check.DETECTORS
        m, size = net_check.build(name)
        onnx_path = os.path.join("/tmp", f"{name}.onnx")
        t0 = time.time()
        export(m, size, detector, onnx_path)
        export_s = time.time() - t0
        t0 = time.time()
        definition, imported_weights, same_bytes = import_twice(a.tools, onnx_path, "/tmp", name)
        import_s = (time.time() - t0) / 2
        hand_weights = os.path.join("/tmp", f"{name}-hand.safetensors")
        net_check.save_safetensors(hand_weights, m.state_dict())
        net, images, x, y_torch, y_ref32 = net_check.reference_outputs(m, size, detector, torch.float16)
        y_kiln, _ = net_check.kiln_run(a.kiln, definition, imported_weights, images, x, a.out, f"{name}-check", "fp16")
        report = {
            "model": name, "dtype": "fp16", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "date": time.strftime("%Y-%m-%d"), "onnx_bytes": os.path.getsize(onnx_path),
            "export_s": export_s, "import_s": import_s, "import_reproducible": same_bytes,
            "kiln_nodes": sum(1 for line in open(definition) if line.startswith("node ")),
            "images": images,
            **net_check.output_agreement(y_kiln, y_torch, y_ref32, detector),
        }
        print(json.dumps(report, indent=1), flush=True)

        torch._inductor.config.freezing = True
        rows = []
        for n in (1, 32):
            xn = torch.randn(n, 3, size, size, dtype=torch.float16)
            xd = xn.to(dev).to(memory_format=torch.channels_last)
            imported, hand = [], []
            for _ in range(3):
                imported.append(net_check.kiln_run(a.kiln, definition, imported_weights, n, xn, a.out, f"{name}-i{n}", "fp16")[1])
                hand.append(net_check.kiln_run(a.kiln, name, hand_weights, n, xn, a.out, f"{name}-h{n}", "fp16")[1])
            torch._dynamo.reset()
            compiled = torch.compile(net)
            with torch.no_grad():
                eager = net_check.gpu_ms(net, xd)
                compiled(xd)
                comp = net_check.gpu_ms(compiled, xd)
            row = {"n": n, "imported_ms": statistics.median(imported), "hand_built_ms": statistics.median(hand),
                   "imported_runs_ms": imported, "hand_built_runs_ms": hand, "eager_ms": eager, "compile_ms": comp}
            row["imported_vs_hand_built"] = row["imported_ms"] / row["hand_built_ms"]
            row["imported_vs_compile"] = row["imported_ms"] / comp
            row["imported_vs_eager"] = row["imported_ms"] / eager
            rows.append(row)
            print(json.dumps(row), flush=True)
        report["speed"] = rows
        with open(os.path.join(a.out, f"onnx-{name}.json"), "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
