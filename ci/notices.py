#!/usr/bin/env python3
"""THIRD_PARTY_NOTICES: what kiln's shipped binaries (`kiln`, `libkiln`) carry that kiln did
not write, and each part's licence.

    python3 ci/notices.py            # rewrite THIRD_PARTY_NOTICES (needs `bash ci/setup.sh`'s
                                     # wheels for the CUTLASS and CUDA texts)
    python3 ci/notices.py --check    # CI: fail when a shipped crate is missing from the file,
                                     # listed at another version or licence, or under a licence
                                     # not accepted below

The crates are the normal (not build or dev) dependency closure of the `kiln-cli` and `kiln-c`
packages, from `cargo metadata` on the lock file; each one's licence files are copied from its
package source. The parts that are not crates (code compiled into the GPU code objects, MIOpen's
databases, the zstd C library inside zstd-sys) are listed by hand in NON_CRATES.
"""

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "THIRD_PARTY_NOTICES")
SHIPPED = ("kiln-cli", "kiln-c")
WHEELS = os.path.join(os.environ.get("KILN_TOOLS", os.path.expanduser("~/.cache/kiln-tools")), "cuda-wheels")

# Licences whose terms a binary distribution can meet by shipping this file.
ACCEPTED = {
    "MIT", "Apache-2.0", "Apache-2.0 WITH LLVM-exception", "BSD-2-Clause", "BSD-3-Clause",
    "ISC", "Zlib", "Unicode-3.0", "Unicode-DFS-2016", "Unlicense", "0BSD", "CC0-1.0", "BSL-1.0",
}

MIOPEN_MIT = """MIT License

Copyright (c) 2017 - 2022 Advanced Micro Devices, Inc. All rights Reserved.

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""

# (name, what it is and where it goes, licence, licence text or a wheel file holding it)
NON_CRATES = [
    ("CUTLASS 4.2.0 (NVIDIA)",
     "C++ templates compiled into the CUTLASS solvers' embedded CUDA code objects "
     "(kernels/nv/cutlass_conv.cu); from the nvidia-cutlass 4.2.0.0 wheel",
     "BSD-3-Clause", ("wheel", "nvidia_cutlass-4.2.0.0.dist-info/licenses/LICENSE.txt")),
    ("CCCL / libcu++ 12.9 (NVIDIA)",
     "headers (cuda/std) CUTLASS includes, compiled into the same code objects; from the "
     "nvidia-cuda-cccl-cu12 12.9.27 wheel, distributed under NVIDIA's CUDA Toolkit EULA, "
     "which permits distributing object code built from it",
     "Apache-2.0 WITH LLVM-exception (CCCL); NVIDIA CUDA Toolkit EULA (the wheel)", None),
    ("CUDA runtime headers 12.9 (NVIDIA)",
     "cuda_fp16.h, cuda_bf16.h and their inline functions, compiled into the embedded CUDA code "
     "objects; from the nvidia-cuda-runtime-cu12 12.9.79 wheel, under NVIDIA's CUDA Toolkit "
     "EULA, which permits distributing object code built from them",
     "NVIDIA CUDA Toolkit EULA", None),
    ("MIOpen's find-db and perf-db for gfx942 (AMD)",
     "targets/gfx942130/ (MI300X, 304 CUs -> 130 in kiln's naming), imported with kiln-tools "
     "db import and embedded in the gfx942130 target's tables",
     "MIT", ("text", MIOPEN_MIT)),
    ("zstd 1.5 C library (Meta)",
     "compiled into every binary through the zstd-sys crate (kdb and table decompression)",
     "BSD-3-Clause", ("crate-file", "zstd-sys", "zstd/LICENSE")),
]


def metadata():
    out = subprocess.run(["cargo", "metadata", "--format-version", "1", "--locked"], cwd=ROOT,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"notices: cargo metadata failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def shipped_crates(m):
    """(name, version, licence, repository, source dir) of every crate the shipped packages
    link, workspace members left out."""
    packages = {p["id"]: p for p in m["packages"]}
    nodes = {n["id"]: n for n in m["resolve"]["nodes"]}
    stack = [p["id"] for p in m["packages"] if p["name"] in SHIPPED]
    seen = set()
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        for d in nodes[i]["deps"]:
            if any(k["kind"] is None for k in d["dep_kinds"]):
                stack.append(d["pkg"])
    members = set(m["workspace_members"])
    crates = []
    for i in seen - members:
        p = packages[i]
        crates.append((p["name"], p["version"], p.get("license") or "(none given)",
                       p.get("repository") or "", os.path.dirname(p["manifest_path"])))
    return sorted(crates, key=lambda c: (c[0], c[1]))


def accepted(expr):
    """Whether an SPDX expression can be met with accepted licences (an OR needs one side)."""
    expr = expr.replace("/", " OR ").strip()
    if expr.startswith("(") and expr.endswith(")") and expr.count("(") == 1:
        expr = expr[1:-1]
    for alternative in re.split(r"\s+OR\s+", expr):
        parts = [p.strip(" ()") for p in re.split(r"\s+AND\s+", alternative)]
        if all(p in ACCEPTED for p in parts):
            return True
    # A parenthesised OR inside an AND: each AND part must be met by one of its alternatives.
    parts = [p.strip() for p in re.split(r"\s+AND\s+", expr)]
    return len(parts) > 1 and all(
        any(a.strip(" ()") in ACCEPTED for a in re.split(r"\s+OR\s+", p.strip("()"))) for p in parts)


def licence_files(directory):
    names = sorted(f for f in os.listdir(directory)
                   if re.match(r"(?i)^(licen[cs]e|copying|notice)", f) and os.path.isfile(os.path.join(directory, f)))
    return [(f, open(os.path.join(directory, f), encoding="utf-8", errors="replace").read().strip()) for f in names]


def table(crates):
    return [f"{name} {version} | {lic} | {repo}" for name, version, lic, repo, _ in crates]


def generate(m, crates):
    version = next(p["version"] for p in m["packages"] if p["name"] == "kiln")
    out = [f"THIRD_PARTY_NOTICES for kiln {version}", "",
           "kiln is MIT-licensed (LICENSE). The `kiln` binary and the `libkiln` C library also carry",
           "the parts below, each under its own licence. Generated by ci/notices.py; CI checks that",
           "every crate the binaries link is listed here.", "",
           "=" * 78, "1. Code compiled into the embedded GPU code objects, and embedded data", "=" * 78, ""]
    crate_dirs = {c[0]: c[4] for c in crates}
    for name, what, lic, text in NON_CRATES:
        out += [f"--- {name}", f"What: {what}", f"Licence: {lic}", ""]
        if text is None:
            continue
        if text[0] == "wheel":
            path = os.path.join(WHEELS, text[1])
            if not os.path.exists(path):
                sys.exit(f"notices: {path} is missing: run `bash ci/setup.sh` first")
            out += [open(path, encoding="utf-8").read().strip(), ""]
        elif text[0] == "text":
            out += [text[1].strip(), ""]
        else:
            path = os.path.join(crate_dirs[text[1]], text[2])
            out += [open(path, encoding="utf-8").read().strip(), ""]
    out += ["=" * 78, "2. Rust crates linked into the binaries (name version | licence | repository)",
            "=" * 78, ""]
    out += table(crates)
    out += ["", "=" * 78, "3. The crates' licence files, as each package ships them", "=" * 78, ""]
    # Identical texts once, naming every crate that ships them.
    texts = {}
    for name, version, lic, _, directory in crates:
        files = licence_files(directory)
        if not files:
            texts.setdefault(f"(no licence file in the package: licence {lic} per its Cargo.toml)",
                             []).append(f"{name} {version}")
        for f, t in files:
            texts.setdefault(t, []).append(f"{name} {version} ({f})")
    for text, users in texts.items():
        out += ["--- " + ", ".join(users), "", text, ""]
    with open(OUT, "w", encoding="utf-8") as f:
        f.write("\n".join(out).rstrip() + "\n")
    print(f"notices: wrote {OUT}: {len(crates)} crates, {len(NON_CRATES)} other parts, {len(texts)} distinct licence texts")


def check(crates):
    problems = [f"{n} {v}: licence '{lic}' is not among the accepted ones (ci/notices.py ACCEPTED)"
                for n, v, lic, _, _ in crates if not accepted(lic)]
    try:
        listed = open(OUT, encoding="utf-8").read().splitlines()
    except OSError as e:
        sys.exit(f"notices: {e}")
    start = next((i for i, l in enumerate(listed) if l.startswith("2. Rust crates")), None)
    if start is None:
        sys.exit(f"notices: {OUT} has no crate table: run python3 ci/notices.py")
    rows = set()
    for line in listed[start + 3:]:
        if line.startswith("====="):
            break
        if line.strip():
            rows.add(line)
    want = set(table(crates))
    problems += [f"not listed in THIRD_PARTY_NOTICES: {r}" for r in sorted(want - rows)]
    problems += [f"listed but no longer linked: {r}" for r in sorted(rows - want)]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(f"notices: {len(problems)} problem(s); run python3 ci/notices.py after bash ci/setup.sh")
    print(f"notices: {len(crates)} crates listed, every licence accepted")


def main():
    m = metadata()
    crates = shipped_crates(m)
    if "--check" in sys.argv[1:]:
        check(crates)
    else:
        generate(m, crates)


if __name__ == "__main__":
    main()
