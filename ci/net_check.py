"""A whole network through kiln against PyTorch, on a machine with the GPU.

Builds the torchvision network with random weights (batch-norm statistics calibrated on random
batches, so every layer's activations stay in range), writes its state_dict as safetensors,
runs `kiln net run` on 64 random images and compares the output (softmax probabilities) and
the top-1 class with PyTorch's, then times the forward pass GPU-only (CUDA-graph replay) at
N=1 and N=32: kiln, PyTorch eager and torch.compile (Inductor, freezing), like with like (FP16,
channels-last, the same softmax head).

    python3 ci/net_check.py --kiln out/kiln --model resnet50 --out $OUT
"""

import argparse
import copy
import json
import os
import struct
import subprocess
import sys
import time

import torch
import torchvision

from torch_conv_bench import graph_ms  # ci/: the per-layer benchmark's graph timing


def save_safetensors(path, tensors):
    """safetensors' layout: 8-byte header length, JSON header, raw little-endian data."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().to(torch.float32).contiguous().cpu()
        if not t.is_floating_point():
            continue
        data = t.numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)


def build(name):
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)(weights=None)
    # Batch norms: gamma and beta away from 1 and 0, statistics from random batches.
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            with torch.no_grad():
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.normal_(0.0, 0.1)
            mod.momentum = None
    m.train()
    with torch.no_grad():
        for _ in range(4):
            m(torch.randn(16, 3, 224, 224))
    m.eval()
    # A classifier with random weights puts near-equal logits on a few classes, so FP16's
    # rounding (PyTorch's own too) flips the top-1 of some images. A larger gain on the last
    # layer spreads the logits, so that top-1 compares the networks, not the noise.
    last = [mod for mod in m.modules() if isinstance(mod, torch.nn.Linear)][-1]
    with torch.no_grad():
        last.weight.mul_(8.0)
    eps = {mod.eps for mod in m.modules() if isinstance(mod, torch.nn.BatchNorm2d)}
    if eps != {1e-5}:
        raise SystemExit(f"{name}: batch-norm eps {eps}; kiln's definition folds with 1e-5")
    return m


def gpu_ms(fn, x, repeats=50):
    """Median ms of one call, GPU-only: the call captured in a CUDA graph, replayed."""
    return graph_ms(lambda: fn(x), replays=repeats)


def kiln_run(kiln, model, weights, batch, x, out_dir, tag, profile=False):
    inp, outp = os.path.join(out_dir, f"in-{tag}.bin"), os.path.join(out_dir, f"out-{tag}.bin")
    x.permute(0, 2, 3, 1).contiguous().cpu().numpy().tofile(inp)
    r = subprocess.run(
        [kiln, "net", "run", model, "--weights", weights, "--batch", str(batch), "--input", inp, "--output", outp, "--repeats", "50"]
        + (["--profile"] if profile else []),
        capture_output=True, text=True)
    print(r.stdout + r.stderr, flush=True)
    if r.returncode != 0:
        raise SystemExit(f"kiln net run failed ({r.returncode})")
    ms = float(r.stdout.split("forward pass: ")[1].split(" ms")[0])
    y = torch.from_numpy(__import__("numpy").fromfile(outp, dtype="float16").reshape(batch, -1).astype("float32"))
    os.remove(inp)
    os.remove(outp)
    return y, ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    m = build(a.model)
    weights = os.path.join("/tmp", f"{a.model}.safetensors")
    save_safetensors(weights, m.state_dict())
    dev = torch.device("cuda")
    net = torch.nn.Sequential(copy.deepcopy(m), torch.nn.Softmax(dim=1)).to(dev).half()
    net = net.to(memory_format=torch.channels_last).eval()
    ref32 = torch.nn.Sequential(copy.deepcopy(m), torch.nn.Softmax(dim=1)).to(dev).float().eval()

    # Correctness: 64 random images.
    torch.manual_seed(1)
    x = torch.randn(64, 3, 224, 224, dtype=torch.float16)
    with torch.no_grad():
        y_torch = net(x.to(dev).to(memory_format=torch.channels_last)).float().cpu()
        y_ref32 = ref32(x.to(dev).float()).cpu()
    y_kiln, _ = kiln_run(a.kiln, a.model, weights, 64, x, a.out, "check")
    report = {
        "model": a.model,
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d"),
        "max_abs_error_vs_torch_fp16": float((y_kiln - y_torch).abs().max()),
        "max_abs_error_vs_torch_fp32": float((y_kiln - y_ref32).abs().max()),
        "torch_fp16_max_abs_error_vs_fp32": float((y_torch - y_ref32).abs().max()),
        "top1_agree_with_torch_fp16": int((y_kiln.argmax(1) == y_torch.argmax(1)).sum()),
        "top1_agree_with_torch_fp32": int((y_kiln.argmax(1) == y_ref32.argmax(1)).sum()),
        "torch_fp16_top1_agree_with_fp32": int((y_torch.argmax(1) == y_ref32.argmax(1)).sum()),
        "images": 64,
        "distinct_top1_classes": int(y_ref32.argmax(1).unique().numel()),
    }
    print(json.dumps(report, indent=1), flush=True)

    # Speed: GPU-only, same run.
    torch._inductor.config.freezing = True
    compiled = torch.compile(net)
    rows = []
    for n in (1, 32):
        xn = torch.randn(n, 3, 224, 224, dtype=torch.float16)
        xd = xn.to(dev).to(memory_format=torch.channels_last)
        with torch.no_grad():
            eager = gpu_ms(net, xd)
            t0 = time.time()
            compiled(xd)
            compile_s = time.time() - t0
            comp = gpu_ms(compiled, xd)
        _, kiln_ms = kiln_run(a.kiln, a.model, weights, n, xn, a.out, f"n{n}", profile=True)
        rows.append({"n": n, "kiln_ms": kiln_ms, "eager_ms": eager, "compile_ms": comp,
                     "kiln_vs_compile": kiln_ms / comp, "kiln_vs_eager": kiln_ms / eager,
                     "compile_s": compile_s})
        print(json.dumps(rows[-1]), flush=True)
    report["speed"] = rows
    with open(os.path.join(a.out, f"net-{a.model}.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
