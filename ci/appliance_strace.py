"""The appliance example under `strace -f -k -e trace=%file`, on a machine with the GPU: each
file access is attributed by its call stack to the dynamic loader (start-up, and the vendor
driver's dlopen), the vendor driver (a frame in libcuda, libnvidia-*, libamdhip64, libhsa:
device nodes, /proc and /sys, its per-user profiles and cache), or the appliance's own code
(kiln and the Rust standard library). The appliance's own accesses may only be the image it
was given, the vendor driver's library (kiln finds it and checks its ELF headers before
dlopen), and the standard library's queries of the process itself (/proc/self, CPU counts);
anything else (a database, a kernel file, a model or weights file, a cache of kiln's) fails
the check. The network, its weights, the kernels and the tuning databases are in the binary.

    python3 ci/appliance_strace.py APPLIANCE [--shape 3,224,224] [--out DIR] [--no-device-ok]

Without a GPU (`--no-device-ok`, CI) the appliance stops at the device ("ready, but no
device"); the accesses up to there are checked the same way.
"""

import argparse
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

DRIVER_FRAME = re.compile(r"libcuda|libnvidia|libamdhip64|libhsa|/opt/rocm")
# kiln finds the vendor driver's library itself and checks its ELF headers before dlopen.
DRIVER_LIBRARY = re.compile(r'"[^"]*(libcuda|libamdhip64)[^"]*"')
# What the standard library asks of the process itself (the main thread's stack, CPU count).
OWN_QUERIES = re.compile(r'"/proc/self/|"/sys/devices/system/cpu/|"/sys/fs/cgroup|"/proc/self"')


def records(trace):
    """(call, frames) for each syscall of an `strace -f -k` trace."""
    out = []
    for line in open(trace):
        if line.startswith(" > "):
            if out:
                out[-1][1].append(line[3:].strip())
        elif "(" in line:
            out.append((re.sub(r"^\d+\s+", "", line.strip()), []))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("appliance")
    ap.add_argument("--out", default=".")
    ap.add_argument("--shape", default="3,224,224", help="the network's input, C,H,W")
    ap.add_argument("--no-device-ok", action="store_true", help="pass when no GPU is found, too")
    ap.add_argument("--strace", default="strace", help="the strace command (words split on spaces)")
    a = ap.parse_args()
    c, h, w = (int(v) for v in a.shape.split(","))
    tmp = tempfile.mkdtemp()
    image = os.path.join(tmp, "image.f32")
    rng = random.Random(0)
    with open(image, "wb") as f:
        f.write(struct.pack(f"<{c * h * w}f", *(rng.gauss(0.0, 1.0) for _ in range(c * h * w))))
    trace = os.path.join(tmp, "trace.txt")
    r = subprocess.run(a.strace.split() + ["-f", "-qq", "-k", "-e", "trace=%file", "-o", trace, "--", a.appliance, image],
                       capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
    print(r.stdout + r.stderr, flush=True)
    calls = records(trace)
    kinds = {"loader": 0, "driver": 0, "driver_library": 0, "image": 0, "own_queries": 0, "descriptor_stats": 0,
             "other": []}
    driver_paths = set()
    exe = os.path.realpath(a.appliance)
    for call, frames in calls:
        ours = any(f.startswith(exe + "(") or f.startswith(exe + " ") for f in frames)
        if any(DRIVER_FRAME.search(f) for f in frames):
            kinds["driver"] += 1
            m = re.search(r'"([^"]*)"', call)
            if m:
                driver_paths.add(re.sub(r"\d+", "N", m.group(1)))
        elif call.startswith("execve(") or any("ld-linux" in f for f in frames):
            kinds["loader"] += 1  # start-up, or the loader searching for a driver kiln dlopens
        elif image in call:
            kinds["image"] += 1
        elif '""' in call and "AT_EMPTY_PATH" in call:
            kinds["descriptor_stats"] += 1  # a stat of a file an attributed call opened
        elif DRIVER_LIBRARY.search(call):
            kinds["driver_library"] += 1
        elif OWN_QUERIES.search(call) or not ours:
            kinds["own_queries"] += 1
        else:
            kinds["other"].append(call + "".join("\n    " + f for f in frames[:6]))
    ran = "class" in r.stdout
    no_device = "ready, but no device" in r.stdout
    report = {"exit": r.returncode, "ran": ran, "no_device": no_device, "calls": len(calls),
              "loader": kinds["loader"], "driver": kinds["driver"], "driver_library": kinds["driver_library"],
              "image": kinds["image"], "own_queries": kinds["own_queries"], "descriptor_stats": kinds["descriptor_stats"], "driver_paths": sorted(driver_paths), "other": kinds["other"]}
    ok = (r.returncode == 0 and (ran or (no_device and a.no_device_ok)) and not kinds["other"]
          and kinds["image"] > 0)
    report["ok"] = ok
    print(json.dumps(report, indent=1))
    with open(os.path.join(a.out, "appliance-strace.json"), "w") as f:
        json.dump(report, f, indent=1)
    shutil.copy(trace, os.path.join(a.out, "appliance-strace.txt"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
