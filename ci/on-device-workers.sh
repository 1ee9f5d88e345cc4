#!/usr/bin/env bash
# On a machine with two or more GPUs: `kiln-tools find --devices` over the ResNet-50 list
# (FP16 NHWC, N=1 and 32) on one GPU, on two and on all, each into a scratch DB: wall time of
# each (the speed-up), and how the find-dbs rank each problem's solutions against the one-GPU
# run (measured times differ run to run; the ranking should agree within noise). Expects
# out/kiln-tools.gz (PACK_TOOLS=1 bash ci/pack-kiln.sh). Writes $OUT/workers.txt (times,
# agreement) and the find-dbs. DEVICES (default all) and PROBLEMS (default ci/problems/resnet50.txt) override.
set -u
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT/one" "$OUT/two" "$OUT/all"
gunzip -kf out/kiln-tools.gz && chmod +x out/kiln-tools
list=${PROBLEMS:-ci/problems/resnet50.txt}
flags=(--problems "$list" --layout NHWC --type FP16)
{
  nvidia-smi --query-gpu=index,name --format=csv,noheader
  for run in one two all; do
    case $run in
      one) devices=cuda:0 ;;
      two) devices=cuda:0,cuda:1 ;;
      all) devices=${DEVICES:-all} ;;
    esac
    start=$(date +%s.%N)
    out/kiln-tools find --devices "$devices" "${flags[@]}" --db-dir "$OUT/$run" --log "$OUT/$run/log.tsv" 2>&1 | tail -n 2
    end=$(date +%s.%N)
    echo "$run ($devices): $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s"
  done
  for run in two all; do
  echo "one against $run:"
  python3 - "$OUT/one/sm_90_132.HIP.fdb.txt" "$OUT/$run/sm_90_132.HIP.fdb.txt" <<'EOF'
import sys
def ranks(path):
    out = {}
    for line in open(path):
        key, _, items = line.strip().partition("=")
        out[key] = [i.split(":")[0] for i in items.split(";")]
    return out
a, b = ranks(sys.argv[1]), ranks(sys.argv[2])
common = sorted(set(a) & set(b))
top = sum(a[k][0] == b[k][0] for k in common)
# The winner of one run within the other's best two: agreement within noise.
near = sum(a[k][0] in b[k][:2] and b[k][0] in a[k][:2] for k in common)
print(f"{len(common)} problems in both; same fastest solver {top}, each one's fastest in the other's best two {near}")
print("keys only in one run:", sorted(set(a) ^ set(b)))
EOF
  done
} > "$OUT/workers.txt" 2>&1
cat "$OUT/workers.txt"
