#!/usr/bin/env bash
# The appliance binary alone, for a machine with the GPU where the transfer is small: release
# `kiln` with the CUDA backend and the sm_90_132 target only, gzipped into out/kiln.gz
# (git-ignored). Run ci/on-device-epilogue.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}  # where cargo builds, as cargo reads it
cargo build --release --quiet -p kiln-cli --no-default-features --features cuda,kiln/sm_90_132
mkdir -p out
strip -o out/kiln "$target"/release/kiln
gzip -9 -f out/kiln
ls -la out/kiln.gz
# PACK_TOOLS=1: kiln-tools too (find, bench), for the same single target, as out/kiln-tools.gz.
if [ "${PACK_TOOLS:-0}" = 1 ]; then
  cargo build --release --quiet -p kiln-tools --no-default-features --features kiln/sm_90_132
  strip -o out/kiln-tools "$target"/release/kiln-tools
  gzip -9 -f out/kiln-tools
  ls -la out/kiln-tools.gz
fi
# PACK_C=1: the C library (shared, the same single target; soname libkiln.so.0) as
# out/libkiln.so.0.gz, and the whole-network C example linked to it (found beside it).
if [ "${PACK_C:-0}" = 1 ]; then
  cargo build --release --quiet -p kiln-c --no-default-features --features cuda,kiln/sm_90_132
  ${CC:-cc} -O2 -Wall -Wextra -Werror -std=c11 -Icapi/include examples/c/network.c -o out/network_c \
    "$target"/release/libkiln_c.so -Wl,-rpath,'$ORIGIN'
  strip -o out/libkiln.so.0 "$target"/release/libkiln_c.so
  gzip -9 -f out/libkiln.so.0
  ls -la out/libkiln.so.0.gz out/network_c
fi
