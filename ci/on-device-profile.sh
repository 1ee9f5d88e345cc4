#!/usr/bin/env bash
# On a machine with the GPU: where a network's graph spends more than its launches alone.
# `kiln net run --profile --profile-in-place --verbose` times every launch alone (ten in a
# graph), alone after an L2 eviction, and in its place (what it adds to a one-stream graph of
# the launches before it), for MODELS (default resnet50) at BATCHES (default "1 32"), on one
# lane (so the in-place times sum to the whole graph's). Expects out/kiln.gz
# (bash ci/pack-kiln.sh); writes $OUT/profile-<model>-n<batch>.txt.
set -u
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
gunzip -kf out/kiln.gz && chmod +x out/kiln
for model in ${MODELS:-resnet50}; do
  for n in ${BATCHES:-1 32}; do
    timeout "${PROFILE_SECONDS:-120}" out/kiln net run "$model" --random-weights --batch "$n" \
      --lanes 1 --repeats 100 --profile --profile-in-place --verbose \
      > "$OUT/profile-$model-n$n.txt" 2>&1
    echo "exit $?" >> "$OUT/profile-$model-n$n.txt"
    grep -E "^profile|after an L2|forward pass" "$OUT/profile-$model-n$n.txt" | sed "s|^|$model N=$n: |"
  done
done
