#!/usr/bin/env bash
# On a machine with the GPU: the network `make demo` embeds, made there the same way
# (ci/resnet50_onnx.py, `kiln-tools net import --weights-type FP16`), run with `kiln net run
# --check` against the CPU reference at N=1, 8 and 32; its pins are printed beside those of
# the build machine's import (target/demo/resnet50-onnx.sha256, when carried) to show whether
# the bytes are the embedded ones. Expects out/kiln.gz and out/kiln-tools.gz
# (PACK_TOOLS=1 bash ci/pack-kiln.sh). Writes $OUT/demo.txt.
set -u
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
for b in kiln kiln-tools; do gunzip -kf "out/$b.gz" && chmod +x "out/$b"; done
demo=/tmp/kiln-demo
mkdir -p "$demo"
{
  python3 ci/resnet50_onnx.py "$demo/resnet50.onnx"
  out/kiln-tools net import "$demo/resnet50.onnx" --out "$demo" --name resnet50-onnx --weights-type FP16
  echo "pins here:"; cat "$demo/resnet50-onnx.sha256"
  for n in 1 8 32; do
    out/kiln net run "$demo/resnet50-onnx.txt" --weights "$demo/resnet50-onnx.safetensors" --batch "$n" --check
    echo "exit $?"
  done
} 2>&1 | tee "$OUT/demo.txt"
