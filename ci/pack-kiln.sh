#!/usr/bin/env bash
# The appliance binary alone, for a machine with the GPU where the transfer is small: release
# `kiln` with the CUDA backend and the sm_90_132 target only, gzipped into out/kiln.gz
# (git-ignored). Run ci/on-device-epilogue.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p kiln-cli --no-default-features --features cuda,kiln/sm_90_132
mkdir -p out
strip -o out/kiln target/release/kiln
gzip -9 -f out/kiln
ls -la out/kiln.gz
