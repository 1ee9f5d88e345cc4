#!/usr/bin/env bash
# On a machine with the GPU: the appliance example (one network embedded; built with
# KILN_MODELS, e.g. `KILN_MODELS=... cargo build --release --no-default-features --features
# cuda,sm_90_132,safetensors --example appliance`, stripped and gzipped to
# out/app/appliance.gz) runs under strace: no file access but the loader's, the image's and the
# vendor driver's (ci/appliance_strace.py). Writes $OUT/appliance-strace.{json,txt}.
set -u
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
gunzip -kf out/app/appliance.gz && chmod +x out/app/appliance
# Without strace there, Debian's (out/app/strace, its libraries in out/app/strace-lib), run
# through the loader so that only strace itself sees those libraries.
tracer=strace
if ! command -v strace >/dev/null; then
  [ -x out/app/strace ] || { echo "no strace on this machine, and none in out/app"; exit 1; }
  tracer="/lib64/ld-linux-x86-64.so.2 --library-path $PWD/out/app/strace-lib $PWD/out/app/strace"
fi
python3 ci/appliance_strace.py out/app/appliance --out "$OUT" --strace "$tracer"
