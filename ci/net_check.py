"""A whole network through kiln against PyTorch, on a machine with the GPU.

Builds the network with random weights (batch-norm statistics calibrated on random batches, so
every layer's activations stay in range): a torchvision classifier, or the YOLO-style detector
of ci/yolo_module.py. Writes its state_dict as safetensors, runs `kiln net run` on random
images (64 for a classifier, 16 for the detector) and compares the outputs (a classifier's
softmax probabilities and top-1 class; the detector's three maps) with PyTorch's, then times
the forward pass GPU-only (CUDA-graph replay) at N=1 and N=32: kiln, PyTorch eager and
torch.compile (Inductor, freezing), like with like (the same data type, channels-last, the
same head). In FP32, kiln computes in FP32 throughout; PyTorch is timed twice: with its
default TF32 convolutions and with TF32 off (FP32 accuracy, kiln's).

    python3 ci/net_check.py --kiln out/kiln --model resnet50 [--dtype fp32] --out $OUT

With `--anchors N [N ...]` it only times PyTorch (eager and torch.compile) at those batch sizes
and prints one JSON line per size: what `kiln-tools bench --net` compares kiln with.
"""

import argparse
import copy
import json
import os
import struct
import subprocess
import sys
import time

import numpy
import torch
import torchvision

from torch_conv_bench import graph_ms  # ci/: the per-layer benchmark's graph timing
import yolo_module  # ci/: the detector

DETECTORS = {"yolov8n": (yolo_module.YoloV8n, 640, 1e-3)}


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
    """The network, random weights, batch norms calibrated (on the GPU), in eval mode; its
    image size."""
    torch.manual_seed(0)
    if name in DETECTORS:
        cls, size, want_eps = DETECTORS[name]
        m = cls()
    else:
        m, size, want_eps = getattr(torchvision.models, name)(weights=None), 224, 1e-5
    # Batch norms: gamma and beta away from 1 and 0, statistics from random batches.
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            with torch.no_grad():
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.normal_(0.0, 0.1)
            mod.momentum = None
    m = m.cuda().train()
    with torch.no_grad():
        for _ in range(4):
            m(torch.randn(16, 3, size, size, device="cuda"))
    m = m.cpu().eval()
    if name not in DETECTORS:
        # A classifier with random weights puts near-equal logits on a few classes, so
        # FP16's rounding (PyTorch's own too) flips the top-1 of some images. A larger gain
        # on the last layer spreads the logits, so that top-1 compares the networks, not the
        # noise.
        last = [mod for mod in m.modules() if isinstance(mod, torch.nn.Linear)][-1]
        with torch.no_grad():
            last.weight.mul_(8.0)
    eps = {mod.eps for mod in m.modules() if isinstance(mod, torch.nn.BatchNorm2d)}
    if eps != {want_eps}:
        raise SystemExit(f"{name}: batch-norm eps {eps}; kiln's definition folds with {want_eps}")
    print(f"{name}: {sum(p.numel() for p in m.parameters())} parameters", flush=True)
    return m, size


class Flat(torch.nn.Module):
    """A network whose outputs are flattened as kiln writes them: each output NHWC, in order."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        ys = self.net(x)
        ys = ys if isinstance(ys, (list, tuple)) else [ys[:, :, None, None]]
        return torch.cat([y.permute(0, 2, 3, 1).reshape(y.shape[0], -1) for y in ys], 1)


def gpu_ms(fn, x, repeats=50):
    """Median ms of one call, GPU-only: the call captured in a CUDA graph, replayed."""
    return graph_ms(lambda: fn(x), replays=repeats)


def kiln_run(kiln, model, weights, batch, x, out_dir, tag, dtype, profile=False, flags=()):
    """kiln's outputs for x (flattened per sample, as Flat) and its GPU-only ms; `flags` go to
    `kiln net run` as they are."""
    inp, outp = os.path.join(out_dir, f"in-{tag}.bin"), os.path.join(out_dir, f"out-{tag}.bin")
    x.permute(0, 2, 3, 1).contiguous().cpu().numpy().tofile(inp)
    r = subprocess.run(
        [kiln, "net", "run", model, "--weights", weights, "--batch", str(batch), "--type", dtype.upper(),
         "--input", inp, "--output", outp, "--repeats", "50"] + (["--profile"] if profile else [])
        + list(flags),
        capture_output=True, text=True)
    print(r.stdout + r.stderr, flush=True)
    if r.returncode != 0:
        raise SystemExit(f"kiln net run failed ({r.returncode})")
    ms = float(r.stdout.split("forward pass: ")[1].split(" ms")[0])
    raw = numpy.fromfile(outp, dtype="float16" if dtype == "fp16" else "float32").astype("float32")
    os.remove(inp)
    os.remove(outp)
    # The file holds each output whole (batch x h x w x c), one after another.
    shapes = [tuple(int(v) for v in s.split("x")) for s in r.stdout.split("outputs (NHWC): ")[1].split("\n")[0].split(", ")]
    parts, at = [], 0
    for s in shapes:
        n = int(numpy.prod(s))
        parts.append(torch.from_numpy(raw[at:at + n].reshape(batch, -1)))
        at += n
    return torch.cat(parts, 1), ms


def with_head(m, detector):
    """A copy of the network as kiln runs it: a classifier ends in its softmax."""
    m = copy.deepcopy(m)
    return m if detector else torch.nn.Sequential(m, torch.nn.Softmax(dim=1))


def torch_net(m, detector, tdt):
    """The PyTorch network as kiln runs it, on the GPU in `tdt`, channels-last."""
    return with_head(m, detector).cuda().to(tdt).to(memory_format=torch.channels_last).eval()


def reference_outputs(m, size, detector, tdt):
    """Random images (64 for a classifier, 16 for the detector) and PyTorch's outputs for them,
    flattened as kiln writes them: in `tdt` channels-last, and in FP32 with TF32 off. Returns
    (net in tdt, images, x, y_same_type, y_fp32)."""
    dev = torch.device("cuda")
    net = torch_net(m, detector, tdt)
    ref32 = Flat(with_head(m, detector)).to(dev).float().eval()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(1)
    images = 16 if detector else 64
    x = torch.randn(images, 3, size, size, dtype=tdt)
    with torch.no_grad():
        y_torch = Flat(net)(x.to(dev).to(memory_format=torch.channels_last)).float().cpu()
        y_ref32 = ref32(x.to(dev).float()).cpu()
    return net, images, x, y_torch, y_ref32


def output_agreement(y_kiln, y_torch, y_ref32, detector):
    """kiln's outputs against PyTorch's in the same type and in FP32 (largest differences and,
    for a classifier, top-1 agreement), PyTorch's own type against FP32 beside them."""
    report = {
        "max_abs_error_vs_torch_same_type": float((y_kiln - y_torch).abs().max()),
        "max_abs_error_vs_torch_fp32": float((y_kiln - y_ref32).abs().max()),
        "torch_same_type_max_abs_error_vs_fp32": float((y_torch - y_ref32).abs().max()),
        "max_abs_output_fp32": float(y_ref32.abs().max()),
    }
    if not detector:
        report.update({
            "top1_agree_with_torch_same_type": int((y_kiln.argmax(1) == y_torch.argmax(1)).sum()),
            "top1_agree_with_torch_fp32": int((y_kiln.argmax(1) == y_ref32.argmax(1)).sum()),
            "torch_same_type_top1_agree_with_fp32": int((y_torch.argmax(1) == y_ref32.argmax(1)).sum()),
            "distinct_top1_classes": int(y_ref32.argmax(1).unique().numel()),
        })
    return report


def convolutions_only(net, x):
    """The network's convolutions alone (cuDNN through PyTorch), each on the input it sees in
    the network, as one callable: what the convolutions cost with nothing around them."""
    seen = []
    hooks = [mod.register_forward_hook(lambda mod, inp, out: seen.append((mod, inp[0])))
             for mod in net.modules() if isinstance(mod, torch.nn.Conv2d)]
    with torch.no_grad():
        net(x)
    for h in hooks:
        h.remove()
    return lambda: [mod(inp) for mod, inp in seen]


def anchors(m, size, detector, a):
    """Eager, torch.compile and the convolutions alone, GPU-only, at each batch size: one
    JSON line each."""
    tdt = torch.float16 if a.dtype == "fp16" else torch.float32
    net = torch_net(m, detector, tdt)
    torch._inductor.config.freezing = True
    # FP32 like kiln's: TF32 off (PyTorch's default TF32 convolutions are 1e-3 accurate).
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    for n in a.anchors:
        xd = torch.randn(n, 3, size, size, dtype=tdt, device="cuda").to(memory_format=torch.channels_last)
        torch._dynamo.reset()
        compiled = torch.compile(net)
        with torch.no_grad():
            eager = gpu_ms(net, xd)
            convs = convolutions_only(net, xd)
            convs()
            convs_ms = graph_ms(convs, replays=50)
            compiled(xd)
            comp = gpu_ms(compiled, xd)
        print(json.dumps({"anchor": {"n": n, "eager_ms": eager, "compile_ms": comp, "convs_ms": convs_ms,
                                     "torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}}), flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"])
    ap.add_argument("--out")
    ap.add_argument("--anchors", type=int, nargs="+", help="only time PyTorch at these batch sizes")
    ap.add_argument("--pdl", action="store_true",
                    help="also run kiln without programmatic dependent launch (kiln net run "
                         "--no-pdl): its outputs must equal the default run's bit for bit; its "
                         "time is kiln_no_pdl_ms")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=FLAG,FLAG",
                    help="also run kiln with these `kiln net run` flags, comma-separated (e.g. "
                         "lanes1=--lanes,1): "
                         "the same kernels in another launch order, so its outputs must equal the "
                         "default run's bit for bit (NAME_bit_identical); its time is kiln_NAME_ms")
    a = ap.parse_args()
    variants = [("no_pdl", ["--no-pdl"])] if a.pdl else []
    for v in a.variant:
        name, _, flags = v.partition("=")
        variants.append((name, [f for f in flags.split(",") if f]))
    detector = a.model in DETECTORS
    m, size = build(a.model)
    if a.anchors:
        return anchors(m, size, detector, a)
    if not (a.kiln and a.out):
        raise SystemExit("--kiln and --out are needed (or --anchors)")
    os.makedirs(a.out, exist_ok=True)
    weights = os.path.join("/tmp", f"{a.model}.safetensors")
    save_safetensors(weights, m.state_dict())
    dev = torch.device("cuda")
    tdt = torch.float16 if a.dtype == "fp16" else torch.float32
    # Correctness: random images, against PyTorch in the same type and in FP32 (TF32 off).
    net, images, x, y_torch, y_ref32 = reference_outputs(m, size, detector, tdt)
    y_kiln, _ = kiln_run(a.kiln, a.model, weights, images, x, a.out, "check", a.dtype)
    report = {
        "model": a.model,
        "dtype": a.dtype,
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d"),
        "images": images,
        **output_agreement(y_kiln, y_torch, y_ref32, detector),
    }
    for name, flags in variants:
        # The same kernels launched otherwise: overlap must not change a bit.
        y_alt, _ = kiln_run(a.kiln, a.model, weights, images, x, a.out, f"check-{name}",
                            a.dtype, flags=flags)
        report[f"{name}_bit_identical"] = bool(torch.equal(y_kiln, y_alt))
    print(json.dumps(report, indent=1), flush=True)

    # Speed: GPU-only, same run. FP32 PyTorch is timed with TF32 off (kiln's accuracy) and
    # with its default TF32 convolutions.
    torch._inductor.config.freezing = True
    settings = [("", False)] if a.dtype == "fp16" else [("", False), ("_tf32", True)]
    rows = []
    for n in (1, 32):
        xn = torch.randn(n, 3, size, size, dtype=tdt)
        xd = xn.to(dev).to(memory_format=torch.channels_last)
        _, kiln_ms = kiln_run(a.kiln, a.model, weights, n, xn, a.out, f"n{n}", a.dtype, profile=True)
        row = {"n": n, "kiln_ms": kiln_ms}
        for name, flags in variants:
            _, row[f"kiln_{name}_ms"] = kiln_run(a.kiln, a.model, weights, n, xn, a.out,
                                                 f"n{n}-{name}", a.dtype, flags=flags)
        for suffix, tf32 in settings:
            torch.backends.cudnn.allow_tf32 = tf32
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch._dynamo.reset()
            compiled = torch.compile(net)
            with torch.no_grad():
                eager = gpu_ms(net, xd)
                t0 = time.time()
                compiled(xd)
                compile_s = time.time() - t0
                comp = gpu_ms(compiled, xd)
            row.update({f"eager{suffix}_ms": eager, f"compile{suffix}_ms": comp,
                        f"kiln_vs_compile{suffix}": kiln_ms / comp, f"kiln_vs_eager{suffix}": kiln_ms / eager,
                        f"compile{suffix}_s": compile_s})
        rows.append(row)
        print(json.dumps(rows[-1]), flush=True)
    report["speed"] = rows
    suffix = "" if a.dtype == "fp16" else f"-{a.dtype}"
    with open(os.path.join(a.out, f"net-{a.model}{suffix}.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
