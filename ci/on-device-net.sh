#!/usr/bin/env bash
# On a machine with the GPU: whole networks through kiln against PyTorch (ci/net_check.py:
# outputs (and a classifier's top-1) on random images, then GPU-only time at N=1 and N=32
# against eager and torch.compile). MODELS lists `model` or `model:fp32` (default FP16).
# NET_FLAGS go to ci/net_check.py (--pdl: kiln also without programmatic dependent launch).
# Expects out/kiln.gz (bash ci/pack-kiln.sh); writes $OUT/net-<model>[-fp32].json and
# $OUT/net.txt. With out/network_c and out/libkiln.so.0.gz (PACK_C=1), first compares the
# C example's outputs with `kiln net run`'s, bit for bit (ci/net_c_check.py), for C_MODELS.
# COMPARE_BUILDS="kiln-old ..." (out/<build>.gz): then each MODELS network through those
# builds and out/kiln, random weights and input, N=1 and 32, alternating builds ROUNDS (3)
# times: $OUT/compare.tsv (GPU-only ms, each build's output bit-identical to out/kiln's). An
# entry `build:--flag` runs out/<build> with that `kiln net run` flag (`kiln:--no-pdl`: the
# same build another way).
# NET_CHECK=0 leaves ci/net_check.py out (the comparison alone).
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
  [ "${NET_CHECK:-1}" = 0 ] && break
  model=${spec%%:*}
  dtype=fp16
  [[ $spec == *:* ]] && dtype=${spec#*:}
  PYTHONUNBUFFERED=1 timeout "${NET_SECONDS:-540}" python3 ci/net_check.py --kiln out/kiln --model "$model" --dtype "$dtype" --out "$OUT" ${NET_FLAGS:-}
  echo "exit $?"
done
} 2>&1 | tee "$OUT/net.txt"
if [ -n "${COMPARE_BUILDS:-}" ]; then
  for b in $COMPARE_BUILDS; do gunzip -kf "out/${b%%:*}.gz" && chmod +x "out/${b%%:*}"; done
  printf 'model\tn\tround\tbuild\tms\tbit_identical_to_kiln\n' > "$OUT/compare.tsv"
  for spec in ${MODELS:-resnet50}; do
    model=${spec%%:*}
    for n in 1 32; do
      for round in $(seq "${ROUNDS:-3}"); do
        for b in kiln $COMPARE_BUILDS; do
          flag=""
          [[ $b == *:* ]] && flag=${b#*:}
          # shellcheck disable=SC2086  # the flag is one word or none
          "out/${b%%:*}" net run "$model" --random-weights --batch "$n" --repeats 100 $flag \
            --output "/tmp/out-$b.bin" > "/tmp/run-$b.txt" 2>&1 || { echo "$b $model $n failed"; cat "/tmp/run-$b.txt"; }
          ms=$(sed -n 's/^forward pass: \([0-9.]*\) ms.*/\1/p' "/tmp/run-$b.txt")
          same=$(cmp -s "/tmp/out-$b.bin" /tmp/out-kiln.bin && echo yes || echo no)
          printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$model" "$n" "$round" "$b" "$ms" "$same" >> "$OUT/compare.tsv"
        done
      done
    done
  done
  cat "$OUT/compare.tsv"
fi
