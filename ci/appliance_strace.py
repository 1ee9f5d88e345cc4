"""The appliance example under `strace -f -e trace=%file`, on a machine with the GPU: every
file access is attributed to the dynamic loader (start-up: its cache and shared libraries),
the image the appliance was given, or the vendor driver (libcuda and what it opens: device
nodes, /proc and /sys entries, its own libraries); anything else (a database, a kernel file,
a model or weights file, a cache of kiln's) fails the check. The network, its weights, the
kernels and the tuning databases are inside the binary.

    python3 ci/appliance_strace.py APPLIANCE [--shape 3,224,224] [--out DIR] [--no-device-ok]

Without a GPU (`--no-device-ok`, CI) the appliance stops at the device ("ready, but no
device"); the accesses up to there are checked the same way.
"""

import argparse
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

# The loader at start-up and at the driver's dlopen: its cache, the library directories it
# searches (each hardware-capability subdirectory stat()ed) and the libraries it opens.
LOADER = re.compile(r'/etc/ld\.so\.(cache|preload)|glibc-hwcaps|"(/usr)?/lib(64)?(/[^"]*)?"')
# The C library's and the vendor drivers' own queries: /proc/self (the main thread's stack),
# CPU and NUMA topology, device nodes, the drivers' libraries and files.
SYSTEM = re.compile(r'libcuda|libnvidia|/dev/nvidia|/proc/driver/nvidia|/sys/|/proc/self/|/proc/sys/|'
                    r'/proc/cpuinfo|/proc/meminfo|/proc/stat|/proc/\d+/|/proc/modules|/proc/devices|'
                    r'/dev/shm/cuda|/run/nvidia|/usr/share/nvidia|/etc/nvidia|/dev/dri|'
                    # kiln probes for the other vendor's driver too (HIP): its library and device.
                    r'/opt/rocm|libamdhip64|/dev/kfd')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("appliance")
    ap.add_argument("--out", default=".")
    ap.add_argument("--shape", default="3,224,224", help="the network's input, C,H,W")
    ap.add_argument("--no-device-ok", action="store_true", help="pass when no GPU is found, too")
    a = ap.parse_args()
    c, h, w = (int(v) for v in a.shape.split(","))
    tmp = tempfile.mkdtemp()
    image = os.path.join(tmp, "image.f32")
    rng = random.Random(0)
    with open(image, "wb") as f:
        f.write(struct.pack(f"<{c * h * w}f", *(rng.gauss(0.0, 1.0) for _ in range(c * h * w))))
    trace = os.path.join(tmp, "trace.txt")
    r = subprocess.run(["strace", "-f", "-qq", "-e", "trace=%file", "-o", trace, "--", a.appliance, image],
                       capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
    print(r.stdout + r.stderr, flush=True)
    lines = [l for l in open(trace) if "(" in l]
    kinds = {"loader": 0, "image": 0, "system": 0, "other": []}
    system_paths = set()
    for line in lines:
        call = re.sub(r"^\d+\s+", "", line.strip())
        if call.startswith("execve(") or ('""' in call and "AT_EMPTY_PATH" in call) or LOADER.search(call):
            kinds["loader"] += 1
        elif image in call:
            kinds["image"] += 1
        elif SYSTEM.search(call):
            kinds["system"] += 1
            m = re.search(r'"([^"]*)"', call)
            if m:
                system_paths.add(re.sub(r"\d+", "N", m.group(1)))
        else:
            kinds["other"].append(call)
    ran = "class" in r.stdout
    no_device = "ready, but no device" in r.stdout
    report = {"exit": r.returncode, "ran": ran, "no_device": no_device, "calls": len(lines),
              "loader": kinds["loader"], "image": kinds["image"], "system": kinds["system"],
              "system_paths": sorted(system_paths), "other": kinds["other"]}
    ok = (r.returncode == 0 and (ran or (no_device and a.no_device_ok)) and not kinds["other"]
          and kinds["image"] > 0)
    report["ok"] = ok
    print(json.dumps(report, indent=1))
    with open(os.path.join(a.out, "appliance-strace.json"), "w") as f:
        json.dump(report, f, indent=1)
    os.system(f"cp {trace} {os.path.join(a.out, 'appliance-strace.txt')}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
