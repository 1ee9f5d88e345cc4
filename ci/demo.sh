#!/usr/bin/env bash
# `make demo`, part two: an ONNX ResNet-50 embedded in the appliance. ci/resnet50_onnx.py
# writes the model (the graph torch.onnx.export gives torchvision's resnet50, seeded weights),
# `kiln-tools net import` turns it into a definition and FP16 weights, and `kiln` is built with
# it inside (KILN_MODELS). Then `kiln info` lists it, `kiln net plan` resolves every layer on
# every embedded target and checks the code objects, and `kiln net run --check` runs it on the
# GPU against the CPU reference (without one, exit 3 says so and the demo goes on). Last, the
# network's 64-channel 3x3 layer runs on AMD's matrix cores in kiln-emu (MI300X's MFMA and the
# RX 7900 XTX's WMMA kernels), checked against the CPU reference: AMD executed, no AMD GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}  # where cargo builds, as cargo reads it
CARGO=${CARGO:-cargo}
mkdir -p "$target"/demo
demo=$(cd "$target"/demo && pwd)  # absolute: KILN_MODELS is read from build.rs
bash ci/setup.sh onnx
$CARGO build --release --quiet -p kiln-tools
python3 ci/resnet50_onnx.py "$demo/resnet50.onnx"
"$target"/release/kiln-tools net import "$demo/resnet50.onnx" --out "$demo" --name resnet50-onnx --weights-type FP16
KILN_MODELS="$demo/resnet50-onnx.txt" $CARGO build --release --quiet -p kiln-cli
kiln="$target"/release/kiln
echo
$kiln info | sed -n '/embedded networks/,/^$/p'
$kiln net plan resnet50-onnx --brief
echo
set +e
$kiln net run resnet50-onnx --batch 8 --check
rc=$?
set -e
if [ $rc -eq 3 ]; then
  echo "(no GPU here: the embedded network was planned and its code objects checked for every target above; on a GPU it runs and is checked against the CPU reference)"
elif [ $rc -ne 0 ]; then
  exit $rc
fi
echo
layer=64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F
"$target"/release/kiln-tools emulate --target mi300x --problem $layer --solver ConvMfmaImplicitGemmFwd
"$target"/release/kiln-tools emulate --target rx7900xtx --problem $layer --solver ConvWmmaImplicitGemmFwd
