#!/usr/bin/env bash
# On a machine with the GPU: the weights kept in a set-aside part of L2 from one run to the
# next (`kiln net run --weights-l2-mib`), against off, in one process per run, alternating.
# Expects out/kiln.gz (bash ci/pack-kiln.sh); writes to $OUT/r.tgz (folder r/):
#   l2-info-n<batch>.txt  ResNet-50 with the largest set-aside: what the device granted
#   compare.tsv           MODELS at N=1 and 32, each set-aside of SIZES (MiB) and off,
#                         ROUNDS rounds, outputs bit-identical to off's
#   profile-resnet50-n1[-l2].txt  `--profile --profile-in-place` at N=1, off and on
set -u
OUT=${OUT:-/tmp/kiln-out}
R=/tmp/r
mkdir -p "$OUT" "$R"
# Whatever is done comes back even if the call's time runs out.
(sleep "${SAVE_AFTER:-560}"; tar czf "$OUT/r.tgz" -C /tmp r) > /dev/null 2>&1 &
saver=$!
gunzip -kf out/kiln.gz && chmod +x out/kiln
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > "$R/gpu.txt" 2>&1
for n in 1 32; do
  out/kiln net run resnet50 --random-weights --batch "$n" --weights-l2-mib 1000 --repeats 100 \
    > "$R/l2-info-n$n.txt" 2>&1
done
grep -h "weights in L2\|forward pass" "$R"/l2-info-n*.txt
builds=""
for s in ${SIZES:-16 28 1000}; do builds="$builds kiln:--weights-l2-mib=$s"; done
OUT=$R NET_CHECK=0 ROUNDS=${ROUNDS:-3} MODELS="${MODELS:-resnet50 mobilenet_v2 efficientnet_b0 yolov8n}" \
  COMPARE_BUILDS="$builds" timeout "${COMPARE_SECONDS:-330}" bash ci/on-device-net.sh > "$R/compare.log" 2>&1
awk -F'\t' 'NR>1 {k=$1" N="$2" "$4; s[k]+=$5; c[k]++; if ($6!="yes") bad[k]++}
  END {for (k in s) printf "%s %.4f%s\n", k, s[k]/c[k], (k in bad) ? " NOT bit-identical" : ""}' \
  "$R/compare.tsv" | sort
for l2 in 0 1000; do
  tag=""; [ "$l2" = 0 ] || tag=-l2
  timeout "${PROFILE_SECONDS:-100}" out/kiln net run resnet50 --random-weights --batch 1 --lanes 1 \
    --repeats 100 --profile --profile-in-place --verbose --weights-l2-mib "$l2" \
    > "$R/profile-resnet50-n1$tag.txt" 2>&1
done
grep -E "^profile|after an L2|forward pass" "$R"/profile-resnet50-n1*.txt
kill "$saver" 2> /dev/null
tar czf "$OUT/r.tgz" -C /tmp r
