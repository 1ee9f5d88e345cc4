"""Cross-check of kiln bench's cuDNN column: ResNet-50's 23 unique conv layers and its 53-layer
network through PyTorch
(cudnn.benchmark = True), timed GPU-only the way kiln bench times both runtimes: a CUDA graph of
20 calls (inputs rotated over 3 copies), replayed; median per call over 7 replays. Runs on a
machine with the GPU (PyTorch is there, not in kiln). Prints a Markdown table.
Usage: python3 ci/torch_conv_bench.py > torch-bench.md
       python3 ci/torch_conv_bench.py --keys KEYS.txt   (each key's cuDNN time, tab-separated)

With --kiln-report BENCH_MD (a `kiln-tools bench --problems` report): every layer of every list
section in it is timed through PyTorch the same way (its key's geometry, groups, type, layout and
batch), and each section gets kiln's per-layer geometric mean against PyTorch's cuDNN, beside
the one against the legacy-API cuDNN column of kiln's report."""
import math
import re
import statistics
import sys

import torch
import torch.nn.functional as F

# (C, K, filter, stride, H): torchvision resnet50's distinct conv layers, padding = filter // 2.
LAYERS = [(3, 64, 7, 2, 224), (64, 64, 1, 1, 56), (64, 64, 3, 1, 56), (64, 256, 1, 1, 56),
          (256, 64, 1, 1, 56), (256, 128, 1, 1, 56), (128, 128, 3, 2, 56), (128, 512, 1, 1, 28),
          (256, 512, 1, 2, 56), (512, 128, 1, 1, 28), (128, 128, 3, 1, 28), (512, 256, 1, 1, 28),
          (256, 256, 3, 2, 28), (256, 1024, 1, 1, 14), (512, 1024, 1, 2, 28), (1024, 256, 1, 1, 14),
          (256, 256, 3, 1, 14), (1024, 512, 1, 1, 14), (512, 512, 3, 2, 14), (512, 2048, 1, 1, 7),
          (1024, 2048, 1, 2, 14), (2048, 512, 1, 1, 7), (512, 512, 3, 1, 7)]
# How often each of LAYERS occurs in the network: 53 conv layers in all.
COUNTS = [1, 1, 3, 4, 2, 1, 1, 4, 1, 3, 3, 1, 1, 6, 1, 5, 5, 1, 1, 3, 1, 2, 2]
CASES = [  # name, dtype, channels_last, allow_tf32
    ("FP16 NHWC", torch.float16, True, False),
    ("BF16 NHWC", torch.bfloat16, True, False),
    ("FP32 NCHW (no TF32)", torch.float32, False, False),
    ("FP32 NHWC (no TF32)", torch.float32, True, False),
    ("TF32 NCHW", torch.float32, False, True),
    ("TF32 NHWC", torch.float32, True, True),
]


def time_layer(c, k, f, s, h, n, dtype, cl):
    return time_conv(n, c, (h, h), k, (f, f), (f // 2, f // 2), (s, s), (1, 1), 1, dtype, cl)


def time_conv(n, c, hw, k, rs, pad, stride, dil, groups, dtype, cl):
    """`hw` and the filter, pad, stride and dilation tuples have two entries (2-D) or three
    (3-D: depth first)."""
    volume = len(hw) == 3
    last = torch.channels_last_3d if volume else torch.channels_last
    fmt = last if cl else torch.contiguous_format
    xs = [torch.randn(n, c, *hw, device="cuda", dtype=dtype).to(memory_format=fmt) for _ in range(3)]
    w = torch.randn(k, c // groups, *rs, device="cuda", dtype=dtype).to(memory_format=fmt)
    conv = F.conv3d if volume else F.conv2d
    run = lambda x: conv(x, w, stride=stride, padding=pad, dilation=dil, groups=groups)
    for x in xs:  # cudnn.benchmark picks its algorithm on the first calls
        run(x)
    torch.cuda.synchronize()
    return graph_ms(lambda: [run(xs[i % 3]) for i in range(20)]) / 20


def graph_ms(body, replays=7):
    """`body` (already run once, so cudnn.benchmark has chosen) captured in one CUDA graph;
    median ms per replay over `replays` replays, after a warm-up replay."""
    g = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        body()
        torch.cuda.synchronize()
        with torch.cuda.graph(g, stream=stream):
            body()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def time_network(n, dtype, cl):
    """The 53 conv layers of the network back to back (each layer's own input and filter,
    shapes and counts of LAYERS / COUNTS), captured in one CUDA graph; median per replay over 7
    replays, after a warm-up replay. Like kiln bench's network row."""
    fmt = torch.channels_last if cl else torch.contiguous_format
    calls = []
    for (c, k, f, s, h), count in zip(LAYERS, COUNTS):
        for _ in range(count):
            x = torch.randn(n, c, h, h, device="cuda", dtype=dtype).to(memory_format=fmt)
            w = torch.randn(k, c, f, f, device="cuda", dtype=dtype).to(memory_format=fmt)
            calls.append((x, w, s, f // 2))
    run = lambda: [F.conv2d(x, w, stride=s, padding=p) for x, w, s, p in calls]
    run()  # cudnn.benchmark picks each layer's algorithm
    torch.cuda.synchronize()
    return graph_ms(run)


DTYPES = {"FP16": torch.float16, "BF16": torch.bfloat16, "FP32": torch.float32}
ROW = re.compile(r"^\| [^|]* \| `([^`]+)` \| (\d+) \| ([^|]*) \| ([0-9.]+) \| [^|]* \| ([0-9.]+) \|")


def conv_of_key(key):
    """A 2-D find-db key (C-H-W-RxS-K-OH-OW-N-PxP-SxS-DxD-0-L-L-L-T-F[_gG]) or a 3-D one
    (C-D-H-W-TxRxS-K-Z-P-Q-N-pads-strides-dilations-0-L-L-L-T-F[_gG]) as conv arguments."""
    body, _, g = key.partition("_g")
    f = body.split("-")
    pair = lambda v: tuple(int(x) for x in v.split("x"))
    if f[-3] in ("NDHWC", "NCDHW"):
        return dict(c=int(f[0]), hw=(int(f[1]), int(f[2]), int(f[3])), rs=pair(f[4]), k=int(f[5]),
                    n=int(f[9]), pad=pair(f[10]), stride=pair(f[11]), dil=pair(f[12]),
                    groups=int(g or 1), cl=f[-3] == "NDHWC", dtype=DTYPES[f[-2]])
    return dict(c=int(f[0]), hw=(int(f[1]), int(f[2])), rs=pair(f[3]), k=int(f[4]), n=int(f[7]),
                pad=pair(f[8]), stride=pair(f[9]), dil=pair(f[10]), groups=int(g or 1),
                cl=f[12] == "NHWC", dtype=DTYPES[f[-2]])


def cross_check(report):
    """kiln's --problems report against PyTorch's cuDNN, section by section."""
    torch.backends.cudnn.allow_tf32 = False
    print("| list, configuration | layers | geomean kiln / PyTorch cuDNN | geomean kiln / legacy-API cuDNN | sum kiln ms | sum PyTorch ms | worst layer (vs PyTorch) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    section, rows, details = None, [], []

    def flush():
        if not section or not rows:
            return
        logs, legacy, kiln_sum, torch_sum, worst = [], [], 0.0, 0.0, (0.0, "")
        details.append(f"\n### {section}\n\n| problem | kiln solver [params] | kiln us | PyTorch us "
                       f"| ratio |\n|---|---|---:|---:|---:|")
        for key, solver, kiln_us, cudnn_us in rows:
            t_us = time_conv(**conv_of_key(key)) * 1000.0
            details.append(f"| `{key}` | {solver} | {kiln_us:.1f} | {t_us:.1f} | {kiln_us / t_us:.2f} |")
            logs.append(math.log(kiln_us / t_us))
            legacy.append(math.log(kiln_us / cudnn_us))
            kiln_sum += kiln_us
            torch_sum += t_us
            worst = max(worst, (kiln_us / t_us, key))
        gm = lambda v: math.exp(sum(v) / len(v))
        print(f"| {section} | {len(rows)} | {gm(logs):.2f} | {gm(legacy):.2f} | {kiln_sum / 1000:.3f} | "
              f"{torch_sum / 1000:.3f} | {worst[0]:.2f} `{worst[1]}` |")
        sys.stdout.flush()

    for line in open(report):
        if line.startswith("### "):
            flush()
            section, rows = line[4:].strip(), []
        elif m := ROW.match(line):
            rows.append((m.group(1), m.group(3).strip(), float(m.group(4)), float(m.group(5))))
    flush()
    print("\n## Per layer: kiln against PyTorch's cuDNN\n" + "\n".join(details))


def main():
    torch.backends.cudnn.benchmark = True
    if len(sys.argv) == 3 and sys.argv[1] == "--keys":
        # One find-db key a line (plain, 2-D): key, PyTorch's cuDNN ms, tab-separated.
        torch.backends.cudnn.allow_tf32 = False
        print("key\ttorch_ms")
        for key in open(sys.argv[2]).read().split():
            print(f"{key}\t{time_conv(**conv_of_key(key)):.5f}", flush=True)
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--kiln-report":
        print(f"# kiln's problem-list report against PyTorch: torch {torch.__version__}, cuDNN "
              f"{torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}\n")
        print("GPU-only, both: CUDA graph of 20 calls, replayed, median per call over 7 replays. "
              "PyTorch runs each layer of kiln's report (same key: geometry, groups, type, layout, "
              "batch) with cudnn.benchmark.\n")
        cross_check(sys.argv[2])
        return
    print(f"# PyTorch cross-check: torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name()}\n")
    print("GPU-only: each layer a CUDA graph of 20 calls, replayed, median per call over 7 "
          "replays; 23 unique ResNet-50 layers summed, and the 53-layer network as the "
          "count-weighted sum of the same per-layer times and as one CUDA graph of the 53 "
          "layers back to back (median per replay over 7 replays). Times in ms.\n")
    print("| case | N | sum of 23 layers | 53 layers, summed | 53 layers, one graph |")
    print("|---|---:|---:|---:|---:|")
    per_layer = []
    for name, dtype, cl, tf32 in CASES:
        torch.backends.cudnn.allow_tf32 = tf32
        for n in (1, 32):
            times = [time_layer(c, k, f, s, h, n, dtype, cl) for c, k, f, s, h in LAYERS]
            weighted = sum(t * x for t, x in zip(times, COUNTS))
            print(f"| {name} | {n} | {sum(times):.3f} | {weighted:.3f} | "
                  f"{time_network(n, dtype, cl):.3f} |")
            sys.stdout.flush()
            per_layer.append((f"{name} N={n}", times))
    print("\n## Per layer, us (C-K-filter-stride-H; x = count in the network)\n")
    print("| layer | x | " + " | ".join(case for case, _ in per_layer) + " |")
    print("|---|---:|" + "---:|" * len(per_layer))
    for i, ((c, k, f, s, h), count) in enumerate(zip(LAYERS, COUNTS)):
        cells = " | ".join(f"{times[i] * 1000:.1f}" for _, times in per_layer)
        print(f"| {c}-{k}-{f}x{f}-s{s}-{h} | {count} | {cells} |")


if __name__ == "__main__":
    main()
