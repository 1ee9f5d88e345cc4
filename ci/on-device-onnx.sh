#!/usr/bin/env bash
# On a machine with the GPU: the four networks exported with torch.onnx.export, imported with
# `kiln-tools net import` (twice: the same bytes), checked against PyTorch and timed beside the
# hand-built networks and PyTorch eager and torch.compile (ci/onnx_net_check.py). MODELS picks
# (default: resnet50 mobilenet_v2 efficientnet_b0 yolov8n). With several GPUs the models are
# dealt out one process per GPU (each network timed on one GPU, its anchors beside it).
# Expects out/kiln.gz and out/kiln-tools.gz (PACK_TOOLS=1 bash ci/pack-kiln.sh); writes
# $OUT/onnx-<model>.json and $OUT/onnx-gpu<i>.txt.
set -u
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
for b in kiln kiln-tools; do gunzip -kf "out/$b.gz" && chmod +x "out/$b"; done
read -r -a models <<< "${MODELS:-resnet50 mobilenet_v2 efficientnet_b0 yolov8n}"
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
[ "$gpus" -ge 1 ] || gpus=1
for ((g = 0; g < gpus; g++)); do
  mine=()
  for ((i = g; i < ${#models[@]}; i += gpus)); do mine+=("${models[$i]}"); done
  [ ${#mine[@]} -gt 0 ] || continue
  CUDA_VISIBLE_DEVICES=$g PYTHONUNBUFFERED=1 timeout "${ONNX_SECONDS:-560}" python3 ci/onnx_net_check.py \
    --kiln out/kiln --tools out/kiln-tools --models "${mine[@]}" --out "$OUT" 2>&1 \
    | grep -v "TracerWarning\|torch.onnx.export\|warnings.warn\|^$" > "$OUT/onnx-gpu$g.txt" &
done
wait
nvidia-smi --query-gpu=index,name --format=csv,noheader
tail -n 60 "$OUT"/onnx-gpu*.txt
