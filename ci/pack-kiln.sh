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
# PACK_TOOLS=1: kiln-tools too (find, bench), for the same single target, as out/kiln-tools.gz.
if [ "${PACK_TOOLS:-0}" = 1 ]; then
  cargo build --release --quiet -p kiln-tools --no-default-features --features kiln/sm_90_132
  strip -o out/kiln-tools target/release/kiln-tools
  gzip -9 -f out/kiln-tools
  ls -la out/kiln-tools.gz
fi
