#!/usr/bin/env bash
# On a machine with the GPU: the fused epilogue's checks and its cost, in one run. Expects the
# release `kiln` (built for the sm_90_132 target, gzipped: `bash ci/pack-kiln.sh`) at
# out/kiln.gz; writes to $OUT:
#   selftest.txt       every solver and perf config on the selftest set, plain and fused
#   memcheck.txt       compute-sanitizer memcheck over the fused families' and the standalone
#                      operators' selftest
#   epilogue-cost.txt  ResNet-50 and MobileNetV2 layers (FP16 NHWC) plain and fused, same
#                      solver, GPU-only
set -u
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
gunzip -kf out/kiln.gz && chmod +x out/kiln
K=out/kiln
"$K" devices > "$OUT/devices.txt" 2>&1

timeout 300 "$K" selftest > "$OUT/selftest.txt" 2>&1
echo "exit $?" >> "$OUT/selftest.txt"

# The epilogue's cost: each layer plain, with a folded batch norm and ReLU, and with the
# residual added too (ResNet-50's bottleneck ends), at N=1 and N=32.
{
  for n in 1 32; do
    for layer in "64-56-56-1x1-256-56-56-$n-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F" \
                 "64-56-56-3x3-64-56-56-$n-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F" \
                 "128-28-28-1x1-512-28-28-$n-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F" \
                 "256-14-14-3x3-256-14-14-$n-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F" \
                 "512-7-7-1x1-2048-7-7-$n-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F" \
                 "3-224-224-7x7-64-112-112-$n-3x3-2x2-1x1-0-NHWC-NHWC-NHWC-FP16-F" \
                 "144-56-56-3x3-144-56-56-$n-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F_g144" \
                 "960-7-7-3x3-960-7-7-$n-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F_g960"; do
      for fusion in "" "+scale+bias+relu" "+scale+bias+add+relu" "+bias+silu"; do
        "$K" run "$layer$fusion" --repeats 50 2>&1 | grep -E "ms GPU-only|error" | sed "s|^|$layer$fusion: |"
      done
    done
  done
} > "$OUT/epilogue-cost.txt" 2>&1

SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -n "$SAN" ]; then
  timeout 200 "$SAN" --tool memcheck --error-exitcode 9 "$K" selftest \
    --solver ConvWgmmaImplicitGemmFwd --solver ConvWgmmaGemm1x1Fwd --solver ConvWgmmaFirstLayerFwd \
    --solver ConvDirectDepthwiseFwd --solver ConvDot1x1Fwd --solver ConvMmaNarrowFwd --solver operators \
    > "$OUT/memcheck.txt" 2>&1
  echo "exit $?" >> "$OUT/memcheck.txt"
fi
