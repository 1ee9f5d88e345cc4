"""Cross-check of kiln bench's cuDNN column: ResNet-50's 23 unique conv layers through PyTorch
(cudnn.benchmark = True), timed GPU-only the way kiln bench times both runtimes: a CUDA graph of
20 calls (inputs rotated over 3 copies), replayed; median per call over 7 replays. Runs on the
device machine (PyTorch is there, not in kiln). Prints a Markdown table.
Usage: python3 ci/torch_conv_bench.py > torch-bench.md"""
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
CASES = [  # name, dtype, channels_last, allow_tf32
    ("FP16 NHWC", torch.float16, True, False),
    ("BF16 NHWC", torch.bfloat16, True, False),
    ("FP32 NCHW (no TF32)", torch.float32, False, False),
    ("FP32 NHWC (no TF32)", torch.float32, True, False),
    ("TF32 NCHW", torch.float32, False, True),
    ("TF32 NHWC", torch.float32, True, True),
]


def time_layer(c, k, f, s, h, n, dtype, cl):
    fmt = torch.channels_last if cl else torch.contiguous_format
    xs = [torch.randn(n, c, h, h, device="cuda", dtype=dtype).to(memory_format=fmt) for _ in range(3)]
    w = torch.randn(k, c, f, f, device="cuda", dtype=dtype).to(memory_format=fmt)
    run = lambda x: F.conv2d(x, w, stride=s, padding=f // 2)
    for x in xs:  # cudnn.benchmark picks its algorithm on the first calls
        run(x)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        run(xs[0])
        torch.cuda.synchronize()
        with torch.cuda.graph(g, stream=stream):
            for i in range(20):
                run(xs[i % 3])
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(7):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 20)
    return statistics.median(times)


def main():
    torch.backends.cudnn.benchmark = True
    print(f"# PyTorch cross-check: torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name()}\n")
    print("GPU-only: CUDA graph of 20 calls, replayed, median per call over 7 replays; "
          "23 unique ResNet-50 layers, sums in ms.\n")
    print("| case | N | sum of 23 layers, ms |")
    print("|---|---:|---:|")
    for name, dtype, cl, tf32 in CASES:
        torch.backends.cudnn.allow_tf32 = tf32
        for n in (1, 32):
            total = sum(time_layer(c, k, f, s, h, n, dtype, cl) for c, k, f, s, h in LAYERS)
            print(f"| {name} | {n} | {total:.3f} |")
            sys.stdout.flush()


main()
