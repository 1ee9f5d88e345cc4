#!/usr/bin/env bash
# On a machine with the GPU: whole networks through kiln against PyTorch (ci/net_check.py:
# outputs and top-1 on 64 images, then GPU-only time at N=1 and N=32 against eager and
# torch.compile). Expects out/kiln.gz (bash ci/pack-kiln.sh); writes $OUT/net-<model>.json and
# $OUT/net.txt.
set -u
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
gunzip -kf out/kiln.gz && chmod +x out/kiln
for model in ${MODELS:-resnet50}; do
  PYTHONUNBUFFERED=1 timeout "${NET_SECONDS:-540}" python3 ci/net_check.py --kiln out/kiln --model "$model" --out "$OUT"
  echo "exit $?"
done 2>&1 | tee "$OUT/net.txt"
