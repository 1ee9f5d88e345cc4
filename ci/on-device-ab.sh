#!/usr/bin/env bash
# On a machine with the GPU: two builds of kiln side by side in one run, for a kernel change.
# Expects out/kiln-old.gz (the build before the change) and out/kiln.gz (after; both from
# `bash ci/pack-kiln.sh`; BUILDS=kiln times one build alone); writes to $OUT:
#   ab-layers.tsv   build, layer + fusion, solver, GPU-only ms: ResNet-50 layers plain, with a
#                   folded batch norm and ReLU, and with the residual added too, N=1 and N=32;
#                   with LAYER_KEYS=<file> instead, each find-db key of the file as written
#                   (its fusion included) and plain
#   torch-keys.tsv  with LAYER_KEYS: each of its keys, plain, through PyTorch's cuDNN
#   ab-nets.tsv     build, network, batch, GPU-only ms of the captured forward pass
#   profile-<build>-<model>.txt   `kiln net run --profile` at N=32 (PROFILE_MODELS)
#   selftest.txt, memcheck.txt    the new build's selftest and compute-sanitizer memcheck over
#                   CHECK_SOLVERS (default: the Hopper kernels and the operators)
# PARTS picks what runs (default: layers nets profile check).
set -u
PARTS=${PARTS:-layers nets profile check}
part() { [[ " $PARTS " == *" $1 "* ]]; }
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
BUILDS=${BUILDS:-kiln-old kiln}
for b in $BUILDS; do gunzip -kf "out/$b.gz" && chmod +x "out/$b"; done
out/kiln devices > "$OUT/devices.txt" 2>&1

layers=(
  "64-56-56-1x1-256-56-56-N-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F"
  "64-56-56-3x3-64-56-56-N-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F"
  "256-56-56-1x1-64-56-56-N-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F"
  "128-28-28-1x1-512-28-28-N-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F"
  "256-14-14-1x1-1024-14-14-N-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F"
  "512-7-7-1x1-2048-7-7-N-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F"
)
time_key() { # build, key: one tsv row
  local r solver ms
  r=$("out/$1" run "$2" --repeats 50 2>&1)
  solver=$(grep -oE "Conv[A-Za-z0-9]+" <<<"$r" | head -1)
  ms=$(grep -oE "[0-9.]+ ms GPU-only" <<<"$r" | head -1 | cut -d' ' -f1)
  check=$(grep -oE "PASS|FAIL" <<<"$r" | tail -1)
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "${solver:-?}" "${ms:-error}" "${check:-none}"
}
if ! part layers; then
  :
elif [ -n "${LAYER_KEYS:-}" ]; then
  {
    printf 'build\tlayer\tsolver\tms\tcheck\n'
    while read -r key; do
      [[ -z $key || $key == \#* ]] && continue
      for k in "$key" "${key%%+*}"; do
        for b in $BUILDS; do time_key "$b" "$k"; done
        [ "$k" = "$key" ] && [[ $key != *+* ]] && break
      done
    done < "$LAYER_KEYS"
  } > "$OUT/ab-layers.tsv" 2>&1
  grep -v '^#' "$LAYER_KEYS" | cut -d+ -f1 | sort -u > /tmp/plain-keys.txt
  python3 ci/torch_conv_bench.py --keys /tmp/plain-keys.txt > "$OUT/torch-keys.tsv" 2>&1
else
{
  printf 'build\tlayer\tsolver\tms\tcheck\n'
  for n in ${BATCHES:-1 32}; do
    for layer in "${layers[@]}"; do
      key=${layer/-N-/-$n-}
      for fusion in "" "+scale+bias+relu" "+scale+bias+add+relu"; do
        for b in $BUILDS; do time_key "$b" "$key$fusion"; done
      done
    done
  done
} > "$OUT/ab-layers.tsv" 2>&1
fi

part nets && {
  printf 'build\tnetwork\tbatch\tms\n'
  for model in ${MODELS:-resnet50 mobilenet_v2 efficientnet_b0 yolov8n}; do
    for n in ${BATCHES:-1 32}; do
      for b in $BUILDS; do
        r=$("out/$b" net run "$model" --random-weights --batch "$n" --repeats 100 2>&1)
        ms=$(grep -oE "forward pass: [0-9.]+" <<<"$r" | grep -oE "[0-9.]+$")
        printf '%s\t%s\t%s\t%s\n' "$b" "$model" "$n" "${ms:-error}"
      done
    done
  done
} > "$OUT/ab-nets.tsv" 2>&1

part profile && for model in ${PROFILE_MODELS:-resnet50}; do
  for b in $BUILDS; do
    "out/$b" net run "$model" --random-weights --batch 32 --profile --verbose > "$OUT/profile-$b-$model.txt" 2>&1
  done
done

part check || exit 0
solvers=()
for s in ${CHECK_SOLVERS:-ConvWgmmaImplicitGemmFwd ConvWgmmaGemm1x1Fwd ConvWgmmaFirstLayerFwd}; do
  solvers+=(--solver "$s")
done
timeout 200 out/kiln selftest "${solvers[@]}" > "$OUT/selftest.txt" 2>&1
echo "exit $?" >> "$OUT/selftest.txt"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -n "$SAN" ] && [ "${MEMCHECK:-1}" = 1 ]; then
  timeout 200 "$SAN" --tool memcheck --error-exitcode 9 out/kiln selftest "${solvers[@]}" \
    > "$OUT/memcheck.txt" 2>&1
  echo "exit $?" >> "$OUT/memcheck.txt"
fi
