#!/usr/bin/env python3
"""Writes a synthetic MIOpen find-db with N valid, distinct keys (deterministic: same N, same
bytes), for measuring what embedding a large find-db costs. Shapes and solver mixes imitate
gfx90a68.HIP.fdb.txt (60 MB, 193,590 keys): 2-D and 3-D, FP32/FP16/BF16, F/B/W, groups."""
import random
import sys

SOLVERS = [
    ("ConvBinWinogradRxSf3x2", "Winograd"), ("ConvBinWinogradRxSf2x3g1", "Winograd"),
    ("ConvAsmImplicitGemmGTCDynamicFwdXdlopsNHWC", "ImplicitGEMM"), ("GemmFwdRest", "GEMM"),
    ("ConvHipImplicitGemmFwdXdlops", "ImplicitGEMM"), ("ConvDirectNaiveConvFwd", "Direct"),
    ("ConvOclDirectFwd1x1", "Direct"), ("fft", "FFT"),
]
DIRS = {"F": "Fwd", "B": "BwdData", "W": "BwdWeights"}


def out(i, f, p, s, d):
    return (i + 2 * p - d * (f - 1) - 1) // s + 1


def main():
    n = int(sys.argv[1])
    path = sys.argv[2]
    rng = random.Random(20261122)
    seen = set()
    lines = []
    while len(lines) < n:
        three = rng.random() < 0.25
        c = rng.choice([1, 3, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048])
        k = rng.choice([8, 16, 32, 64, 128, 256, 512, 1024])
        b = rng.choice([1, 2, 4, 8, 16, 32, 64, 128, 256])
        f = rng.choice([1, 3, 5, 7])
        p = rng.choice([0, f // 2])
        s = rng.choice([1, 1, 2])
        dil = 1
        dims = 3 if three else 2
        sp = [rng.choice([4, 7, 8, 14, 16, 28, 32, 56, 64, 112, 224]) for _ in range(dims)]
        if any(out(x, f, p, s, dil) < 1 for x in sp):
            continue
        o = [out(x, f, p, s, dil) for x in sp]
        g = rng.choice([1, 1, 1, 2, 4]) if c % 4 == 0 and k % 4 == 0 else 1
        dt = rng.choice(["FP32", "FP16", "BF16"])
        dr = rng.choice("FBW")
        ic, oc, isp, osp = (c, k, sp, o) if dr == "F" else (k, c, o, sp)
        fil = "x".join([str(f)] * dims)
        trip = lambda v: "x".join([str(v)] * dims)
        layout = "NCDHW" if three else "NCHW"
        key = "-".join([str(ic)] + [str(v) for v in isp] + [fil, str(oc)] + [str(v) for v in osp]
                       + [str(b), trip(p), trip(s), trip(dil), "0", layout, dt, dr + (f"_g{g}" if g > 1 else "")])
        if key in seen:
            continue
        seen.add(key)
        items = []
        t = rng.uniform(0.005, 0.2)
        for solver, algo in rng.sample(SOLVERS, rng.randint(1, 4)):
            ws = rng.choice([0, 0, 72, 4936, 15052800, 535040])
            items.append(f"{solver}:{t:.6g},{ws},miopenConvolution{DIRS[dr]}Algo{algo}")
            t *= rng.uniform(1.05, 3.0)
        lines.append(key + "=" + ";".join(items))
    lines.sort()
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


main()
