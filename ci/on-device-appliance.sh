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
command -v strace >/dev/null || { echo "strace is not installed on this machine"; exit 1; }
python3 ci/appliance_strace.py out/app/appliance --out "$OUT"
