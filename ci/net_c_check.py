"""On a machine with the GPU: the whole-network C example (examples/c/network.c, through
libkiln) against `kiln net run` (the Rust path) for the same network, seeded random weights
(seed 11) and images (the C example's fixed pattern): every output must be equal bit for bit.

    python3 ci/net_c_check.py --kiln out/kiln --network-c out/network_c --model resnet50
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--network-c", required=True)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("-n", type=int, default=1)
    a = ap.parse_args()
    c = subprocess.run([a.network_c, "--model", a.model, "-n", str(a.n)], capture_output=True, text=True)
    print(c.stdout + c.stderr, flush=True)
    if c.returncode != 0:
        return f"network_c failed ({c.returncode})"
    c_hashes = re.findall(r"y(\d+) fnv1a64 0x([0-9a-f]+)", c.stdout)
    shapes = [tuple(map(int, m)) for m in re.findall(r"y\d+: (\d+) x (\d+) x (\d+) x (\d+)", c.stdout)]
    size = 640 if a.model.startswith("yolo") else 224
    i = numpy.arange(a.n * size * size * 3, dtype=numpy.int64)
    images = (((i * 7919) % 2000).astype(numpy.float32) / numpy.float32(1000.0) - numpy.float32(1.0)).astype(numpy.float16)
    with tempfile.TemporaryDirectory() as d:
        inp, outp = os.path.join(d, "in.bin"), os.path.join(d, "out.bin")
        images.tofile(inp)
        r = subprocess.run([a.kiln, "net", "run", a.model, "--random-weights", "--batch", str(a.n), "--input", inp, "--output", outp, "--repeats", "3"],
                           capture_output=True, text=True)
        print(r.stdout + r.stderr, flush=True)
        if r.returncode != 0:
            return f"kiln net run failed ({r.returncode})"
        raw = open(outp, "rb").read()
    at, bad = 0, 0
    for (idx, h), s in zip(c_hashes, shapes):
        n = int(numpy.prod(s)) * 2
        mine = fnv1a64(raw[at:at + n])
        at += n
        same = f"{mine:016x}" == h
        bad += not same
        print(f"{a.model} N={a.n} y{idx}: C 0x{h}, Rust 0x{mine:016x}: {'equal' if same else 'DIFFERENT'}", flush=True)
    if not c_hashes or at != len(raw):
        return f"outputs do not line up: C printed {len(c_hashes)}, kiln wrote {len(raw)} B, {at} B compared"
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
