#!/usr/bin/env bash
# On a machine with the GPU: the folded squeeze-and-excitation blocks, checked and timed in one
# run. A depthwise layer's epilogue sums y for the global pool that follows it (`+pool`, its
# mean ended by `kiln_global_pool_finish`), and the gate's channel multiply is folded into the
# next 1x1 layer's Hopper kernel as a gate on x (`+gate`). Expects out/kiln.gz (`bash
# ci/pack-kiln.sh`) and, to compare against, out/kiln-base.gz (main's build; BASES names
# others, MODELS the networks); writes to $OUT:
#   selftest.txt   the solvers that take the folding, and the operators (the pool's finish)
#   memcheck.txt   the same under compute-sanitizer memcheck
#   layers.txt     EfficientNet-B0's pooled and gated layers against their twins, GPU-only
#   net.txt, net-efficientnet_b0.json   outputs against PyTorch, times against torch.compile
#   compare.tsv    whole networks: this build folded, this build unfolded, main's build
# Once they pass, a find measures the folded twins (kiln net plan --keys lists them):
#   out/kiln net plan efficientnet_b0 --keys --batch 32 | grep -E '[+](pool|gate)' > twins.txt
#   PROBLEMS=twins.txt bash ci/on-device-netfind.sh
# SELFTEST_SOLVERS narrows the selftest (default: the five solver families above and the
# operators); MEMCHECK_OPERATORS=0 leaves the operators' memcheck out.
# STEPS picks the parts (default "selftest memcheck layers net"; at most 7, 8, 1 and 8
# minutes), so that each call stays within the machine's ten minutes a command.
set -u
STEPS=${STEPS:-selftest memcheck layers net}
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
gunzip -kf out/kiln.gz && chmod +x out/kiln
K=out/kiln
if [[ $STEPS == *selftest* ]]; then
  solvers=${SELFTEST_SOLVERS:-ConvDirectDepthwiseFwd ConvWgmmaGemm1x1Fwd ConvWgmmaImplicitGemmFwd \
    ConvWgmmaGemm1x1GatedFwd ConvWgmmaImplicitGemmGatedFwd operators}
  args=()
  for s in $solvers; do args+=(--solver "$s"); done
  timeout 420 "$K" selftest "${args[@]}" > "$OUT/selftest.txt" 2>&1
  echo "exit $?" >> "$OUT/selftest.txt"
fi
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [[ $STEPS == *memcheck* ]] && [ -n "$SAN" ]; then
  # The pooled and gated problems (one and two images, every config that takes them), then
  # the operators (the pool's finish among them).
  f=NHWC-NHWC-NHWC-FP16-F
  for n in 1 2; do
    printf '%s\n' "1152-7-7-1x1-192-7-7-$n-0x0-1x1-1x1-0-$f+bias+add+gate" \
      "96-56-56-1x1-24-56-56-$n-0x0-1x1-1x1-0-$f+bias+gate" \
      "240-28-28-3x3-240-14-14-$n-1x1-2x2-1x1-0-${f}_g240+bias+silu+pool" \
      "672-14-14-5x5-672-14-14-$n-2x2-1x1-1x1-0-${f}_g672+bias+silu+pool"
  done > "$OUT/memcheck-problems.txt"
  timeout "${MEMCHECK_SECONDS:-300}" "$SAN" --tool memcheck --print-limit 20 "$K" selftest \
    --problems "$OUT/memcheck-problems.txt" > "$OUT/memcheck.txt" 2>&1
  echo "exit $?" >> "$OUT/memcheck.txt"
  if [ "${MEMCHECK_OPERATORS:-1}" != 0 ]; then
    timeout 200 "$SAN" --tool memcheck --print-limit 20 "$K" selftest --solver operators \
      >> "$OUT/memcheck.txt" 2>&1
    echo "exit $?" >> "$OUT/memcheck.txt"
  fi
fi
# Each layer as it is and with `$1` appended to its key, GPU-only.
twins() {
  local extra=$1 layer
  shift
  for layer in "$@"; do
    for key in "$layer" "$layer$extra"; do
      "$K" run "$key" --repeats 50 2>&1 | grep -E "ms GPU-only|rror" | sed "s|^|$key: |"
    done
  done
}
if [[ $STEPS == *layers* ]]; then
  for n in 1 32; do
    twins +pool "144-56-56-5x5-144-28-28-$n-2x2-2x2-1x1-0-NHWC-NHWC-NHWC-FP16-F_g144+bias+silu" \
      "672-14-14-5x5-672-14-14-$n-2x2-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F_g672+bias+silu" \
      "32-112-112-3x3-32-112-112-$n-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F_g32+bias+silu"
    twins +gate "96-56-56-1x1-24-56-56-$n-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F+bias" \
      "480-14-14-1x1-80-14-14-$n-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F+bias+add" \
      "1152-7-7-1x1-192-7-7-$n-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F+bias"
  done > "$OUT/layers.txt" 2>&1
fi
if [[ $STEPS == *net* ]]; then
  # BASES: the other builds to compare (out/<build>.gz; default kiln-base where it is there).
  BASES=${BASES:-}
  [ -z "$BASES" ] && [ -f out/kiln-base.gz ] && BASES=kiln-base
  OUT="$OUT" MODELS="${MODELS:-efficientnet_b0 mobilenet_v2}" NET_CHECK="${NET_CHECK:-1}" \
    COMPARE_BUILDS="kiln:--unfolded-excitation $BASES" ROUNDS="${ROUNDS:-3}" \
    bash ci/on-device-net.sh
fi
