#!/usr/bin/env bash
# On a machine with the GPU: the network runner's fused kernels that are off by default, checked
# and timed in one run: the squeeze-and-excitation head (`kiln_squeeze_excite`, `kiln net run
# --excitation-heads`) and the expansion fused into its depthwise layer
# (`kiln_expand_depthwise`, `--fused-expansions`). Expects out/kiln.gz (bash ci/pack-kiln.sh);
# writes to $OUT:
#   selftest.txt   the operators (both kernels' cases among them) against the CPU reference
#   memcheck.txt   the same under compute-sanitizer memcheck
#   net.txt, net-<model>.json   outputs against PyTorch with and without each, times
#   compare.tsv    whole networks, this build with and without each, GPU-only
#   profile-<model>-n<N>.txt     the networks with both, each launch in its place
# MODELS (default "mobilenet_v2 efficientnet_b0") names the networks; STEPS picks the parts
# (default "selftest memcheck net profile"; at most 4, 4, 8 per model and 3 minutes); BASES
# adds other builds (out/<build>.gz) to the comparison.
set -u
STEPS=${STEPS:-selftest memcheck net profile}
MODELS=${MODELS:-mobilenet_v2 efficientnet_b0}
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
gunzip -kf out/kiln.gz && chmod +x out/kiln
K=out/kiln
if [[ $STEPS == *selftest* ]]; then
  timeout 240 "$K" selftest --solver operators > "$OUT/selftest.txt" 2>&1
  echo "exit $?" >> "$OUT/selftest.txt"
fi
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [[ $STEPS == *memcheck* ]] && [ -n "$SAN" ]; then
  timeout 240 "$SAN" --tool memcheck --print-limit 20 "$K" selftest --solver operators \
    > "$OUT/memcheck.txt" 2>&1
  echo "exit $?" >> "$OUT/memcheck.txt"
fi
if [[ $STEPS == *net* ]]; then
  OUT="$OUT" MODELS="$MODELS" NET_CHECK="${NET_CHECK:-1}" \
    NET_FLAGS="--variant heads=--excitation-heads --variant fused=--fused-expansions" \
    COMPARE_BUILDS="kiln:--excitation-heads kiln:--fused-expansions ${BASES:-}" \
    ROUNDS="${ROUNDS:-3}" bash ci/on-device-net.sh
fi
if [[ $STEPS == *profile* ]]; then
  for m in $MODELS; do
    for n in 1 32; do
      timeout 90 "$K" net run "$m" --batch "$n" --excitation-heads --fused-expansions --profile \
        --profile-in-place --verbose > "$OUT/profile-$m-n$n.txt" 2>&1
      echo "exit $?" >> "$OUT/profile-$m-n$n.txt"
    done
  done
fi
