#!/usr/bin/env bash
# Runs on a machine with the GPU: `kiln selftest` over every solver and perf config (FIRST, so a
# broken kernel is seen before hours of tuning), then the re-tune of sm_90_132 with
# `kiln-tools find --refresh`: every problem whose find-db record lacks a solver that applies
# to it now is measured again (NHWC problems, FP32 ones with TF32 allowed so their records also
# rank the opt-in TF32 solvers). Continues from the DBs and log in the repo; saves after every
# problem, so a stop loses nothing and a second run resumes. Results land in $OUT (<= 8 files).
set -uo pipefail
P=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$P/.." && pwd)
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
if [ "${SKIP_SELFTEST:-0}" != 1 ]; then
  timeout "${SELFTEST_SECONDS:-200}" "$P/kiln" selftest > "$OUT/selftest.txt" 2>&1
  echo "exit $?" >> "$OUT/selftest.txt"
  tail -n 12 "$OUT/selftest.txt"
fi
cp "$REPO"/targets/sm_90_132/sm_90_132.HIP.fdb.txt "$REPO"/targets/sm_90_132/sm_90_132.db.txt "$OUT/"
# $OUT/find-log.tsv gets this run's lines only: ci/append-find-log.sh adds them to the committed log.
# FIND_FLAGS replaces the selection, e.g. "--force --layout NHWC --type FP32 --tf32" to measure
# again every FP32 NHWC problem after a kernel change.
# PROBLEMS (file names under ci/problems/) limits the lists, e.g. "resnet50.txt vae_decoder.txt".
lists=(); for f in ${PROBLEMS:-$(cd "$REPO/ci/problems" && ls *.txt)}; do lists+=("$REPO/ci/problems/$f"); done
timeout "${FIND_SECONDS:-360}" "$P/kiln-tools" find --device cuda:0 --problems "${lists[@]}" \
  --db-dir "$OUT" --log "$OUT/find-log.tsv" ${FIND_FLAGS:---refresh --layout NHWC --tf32} > "$OUT/find-run.txt" 2>&1
echo "exit $?" >> "$OUT/find-run.txt"
grep -v "^\s*$" "$OUT/find-run.txt" | tr '\r' '\n' | tail -n 5
ls -la "$OUT"
