#!/usr/bin/env bash
# On a machine with the GPU: measure the fused convolution problems of kiln's networks (every
# solver and perf config, `kiln-tools find`) into the sm_90_132 find-db and perf-db. Expects
# out/kiln.gz and out/kiln-tools.gz (PACK_TOOLS=1 bash ci/pack-kiln.sh); resumes from
# out/netfind/ when an earlier run's DBs were put there, else from the committed DBs. Writes
# $OUT/db/ (the DBs and this run's find-log.tsv) and $OUT/find-run.txt. FIND_FLAGS go to
# `kiln-tools find` (--force: measure again after a kernel change); PLAIN=1 measures each
# problem's plain convolution too, so that the log holds both for every perf config.
# PROBLEMS="a.txt b.txt" measures those lists instead of the networks' (ci/problems/...).
set -u
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT/db" "$OUT/problems"
for b in kiln kiln-tools; do gunzip -kf "out/$b.gz" && chmod +x "out/$b"; done
from=targets/sm_90_132
[ -f out/netfind/sm_90_132.HIP.fdb.txt ] && from=out/netfind
cp "$from/sm_90_132.HIP.fdb.txt" "$from/sm_90_132.db.txt" "$OUT/db/"
for n in ${BATCHES:-32 1}; do
  for m in ${MODELS:-resnet50 mobilenet_v2 efficientnet_b0}; do
    out/kiln net plan "$m" --keys --batch "$n" > "$OUT/problems/$m-n$n.txt"
  done
done
lists=(); for n in ${BATCHES:-32 1}; do for m in ${MODELS:-resnet50 mobilenet_v2 efficientnet_b0}; do lists+=("$OUT/problems/$m-n$n.txt"); done; done
[ -n "${PROBLEMS:-}" ] && read -r -a lists <<<"$PROBLEMS"
if [ "${PLAIN:-0}" = 1 ]; then
  sed 's/+.*//' "${lists[@]}" | sort -u > "$OUT/problems/plain.txt"
  lists+=("$OUT/problems/plain.txt")
fi
wc -l "$OUT"/problems/*.txt
timeout "${FIND_SECONDS:-520}" out/kiln-tools find --device cuda:0 --problems "${lists[@]}" \
  --db-dir "$OUT/db" --log "$OUT/db/find-log.tsv" ${FIND_FLAGS:-} > "$OUT/find-run.txt" 2>&1
echo "exit $?" >> "$OUT/find-run.txt"
grep -v "^\s*$" "$OUT/find-run.txt" | tr '\r' '\n' | tail -n 6
