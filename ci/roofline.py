#!/usr/bin/env python3
"""Where a network's time goes beyond the memory and tensor-core bounds: reads the profile that
`kiln net run --profile --verbose` prints (one line per launch: ms, then the problem key and
solver, or an operator's description) and, for each convolution, the least time its bytes
(x, w, y, and z where the key adds one, read or written once) and its multiply-adds could take
on the device, then what each launch spends beyond that bound.

    python3 ci/roofline.py PROFILE.txt [--bandwidth TB/s] [--tflops TFLOP/s] [--top N]

Defaults: an H200's HBM3e (4.8 TB/s) and dense FP16 tensor-core peak (989 TFLOP/s). The bound
is optimistic (no launch latency, every byte once, peak rates), so `beyond` is an upper bound
on what a better kernel could save; it ranks where to look, it is not a target. Operators
(pools, multiplies, softmax) are listed with their time only. A profile taken with
`--profile-in-place` is read by its in-place column (what each launch adds to the graph).
"""
import argparse
import re
import signal
from collections import defaultdict

BYTES = {"FP16": 2, "BF16": 2, "FP32": 4, "INT8": 1}


def conv_bound(key):
    """(bytes, multiply-adds) of a find-db key such as
    `96-56-56-1x1-24-56-56-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F+bias+add`."""
    base, _, fusion = key.partition("+")
    fields = base.split("-")
    if len(fields) < 15 or "x" in fields[1]:  # 3-D keys (c-d-h-w-...) are not handled here
        return None
    c, h, w = int(fields[0]), int(fields[1]), int(fields[2])
    r, s = (int(v) for v in fields[3].split("x"))
    k, p, q, n = int(fields[4]), int(fields[5]), int(fields[6]), int(fields[7])
    dtype = next((f for f in fields if f in BYTES), "FP16")
    groups = 1
    m = re.search(r"_g(\d+)", base)
    if m:
        groups = int(m.group(1))
    e = BYTES[dtype]
    x = n * c * h * w * e
    wt = k * (c // groups) * r * s * e
    y = n * k * p * q * e
    z = y if "add" in fusion.split("+") else 0
    macs = n * k * p * q * (c // groups) * r * s
    return x + wt + y + z, macs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("profile")
    ap.add_argument("--bandwidth", type=float, default=4.8, help="TB/s")
    ap.add_argument("--tflops", type=float, default=989.0, help="dense FP16 TFLOP/s")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    rows = []
    line_re = re.compile(r"^\s+([0-9.]+) ms\s+(\S+)(?:\s+(\S+))?")
    # With --profile-in-place: alone, after an L2 eviction, in place, then the launch.
    in_place_re = re.compile(r"^\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+)\s+(\S+)(?:\s+(\S+))?")
    in_profile = False
    for line in open(a.profile):
        if line.startswith("profile:"):
            in_profile = True
            continue
        if not in_profile:
            continue
        mt = line_re.match(line) or in_place_re.match(line)
        if not mt:
            if line.strip() and not line.startswith(" "):
                in_profile = False
            continue
        ms, what, solver = float(mt.group(1)), mt.group(2), mt.group(3) or ""
        bound = conv_bound(what) if "-F" in what else None
        if bound is None:
            rows.append((ms, None, line.strip().split(None, 2)[2], "operator"))
            continue
        nbytes, macs = bound
        least = max(nbytes / (a.bandwidth * 1e9), 2 * macs / (a.tflops * 1e9))  # ms
        rows.append((ms, least, what, solver))
    total = sum(r[0] for r in rows)
    bound_total = sum(r[1] for r in rows if r[1] is not None)
    by_solver = defaultdict(lambda: [0.0, 0.0, 0])
    for ms, least, _, solver in rows:
        b = by_solver[solver]
        b[0] += ms
        b[1] += ms - least if least is not None else ms
        b[2] += 1
    print(f"{len(rows)} launches, {total:.4f} ms; convolutions' bound {bound_total:.4f} ms")
    print("\nby solver: launches, ms, ms beyond the bound (operators: all their time)")
    for solver, (ms, beyond, count) in sorted(by_solver.items(), key=lambda kv: -kv[1][1]):
        print(f"  {solver:32s} {count:4d} {ms:8.4f} {beyond:8.4f}")
    print(f"\nthe {a.top} launches furthest beyond their bound: ms, bound ms, x bound, key, solver")
    convs = [r for r in rows if r[1] is not None]
    for ms, least, what, solver in sorted(convs, key=lambda r: -(r[0] - r[1]))[: a.top]:
        print(f"  {ms:.4f} {least:.4f} {ms / least:5.1f}x  {what} {solver}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    main()
