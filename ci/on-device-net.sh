#!/usr/bin/env bash
# On a machine with the GPU: whole networks through kiln against PyTorch (ci/net_check.py:
# outputs (and a classifier's top-1) on random images, then GPU-only time at N=1 and N=32
# against eager and torch.compile). MODELS lists `model` or `model:fp32` (default FP16).
# NET_FLAGS go to ci/net_check.py (--pdl: kiln also without programmatic dependent launch).
# Expects out/kiln.gz (bash ci/pack-kiln.sh); writes $OUT/net-<model>[-fp32].json and
# $OUT/net.txt. With out/network_c and out/libkiln.so.0.gz (PACK_C=1), first compares the
# C example's outputs with `kiln net run`'s, bit for bit (ci/net_c_check.py), for C_MODELS.
set -u
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
gunzip -kf out/kiln.gz && chmod +x out/kiln
{
if [ -x out/network_c ] && [ -f out/libkiln.so.0.gz ]; then
  gunzip -kf out/libkiln.so.0.gz
  for model in ${C_MODELS:-resnet50 yolov8n}; do
    python3 ci/net_c_check.py --kiln out/kiln --network-c out/network_c --model "$model"
    echo "exit $?"
  done
fi
for spec in ${MODELS:-resnet50}; do
  model=${spec%%:*}
  dtype=fp16
  [[ $spec == *:* ]] && dtype=${spec#*:}
  PYTHONUNBUFFERED=1 timeout "${NET_SECONDS:-540}" python3 ci/net_check.py --kiln out/kiln --model "$model" --dtype "$dtype" --out "$OUT" ${NET_FLAGS:-}
  echo "exit $?"
done
} 2>&1 | tee "$OUT/net.txt"
