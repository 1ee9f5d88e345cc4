#!/usr/bin/env bash
# Runs on a machine with the GPU, after a kernel change: the measuring half of a re-tune of
# sm_90_132, in steps ordered by what the bars need, each under its own time limit so one slow
# step cannot starve the rest (the DBs are saved after every problem; what a step did not reach
# keeps its older record; a step given 0 seconds is skipped):
#   1. FP32 NHWC problems of ResNet-50 measured again (--force: the 3xTF32 kernels changed),
#      TF32 allowed so their records also rank the opt-in TF32 solvers;
#   2. the first layers (1-4 input channels, every type): new perf configs of known solvers;
#   3. --refresh over every list: records lacking a solver that applies now (a new solver), in
#      layout REFRESH_LAYOUT (default NHWC);
#   4. the other lists' FP32 NHWC problems, as in 1, with the time left.
# Continues from the DBs and log in the repo; results land in $OUT (<= 8 files). The embedded
# DBs change only when these files are committed and the binaries rebuilt.
set -uo pipefail
P=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$P/.." && pwd)
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
cp "$REPO"/targets/sm_90_132/sm_90_132.HIP.fdb.txt "$REPO"/targets/sm_90_132/sm_90_132.db.txt "$OUT/"
# $OUT/find-log.tsv gets this run's lines only: ci/append-find-log.sh adds them to the committed log.
lists() { for f in "$@"; do echo "$REPO/ci/problems/$f"; done; }
step() { # step NAME SECONDS FIND-ARGS... (0 seconds: skipped)
  local name=$1 seconds=$2; shift 2
  [ "$seconds" -gt 0 ] || { echo "== $name: skipped" >> "$OUT/find-run.txt"; return; }
  echo "== $name ($seconds s): $*" >> "$OUT/find-run.txt"
  local t0=$SECONDS
  timeout "$seconds" "$P/kiln-tools" find --device cuda:0 --db-dir "$OUT" --log "$OUT/find-log.tsv" "$@" \
    > "$OUT/step.txt" 2>&1
  echo "exit $? after $((SECONDS - t0)) s" >> "$OUT/find-run.txt"
  grep -v "^\s*$" "$OUT/step.txt" | tr '\r' '\n' | tail -n 3 >> "$OUT/find-run.txt"
}
grep -h -E '^[1-4]-' "$REPO"/ci/problems/*.txt | grep NHWC-NHWC-NHWC | sort -u > "$OUT/first-layers.txt"
step "ResNet-50 FP32 NHWC" "${RESNET_SECONDS:-200}" --force --layout NHWC --type FP32 --tf32 \
  --problems $(lists resnet50.txt)
step "first layers" "${FIRST_SECONDS:-60}" --force --tf32 --problems "$OUT/first-layers.txt"
step "new solvers" "${REFRESH_SECONDS:-150}" --refresh --layout "${REFRESH_LAYOUT:-NHWC}" --tf32 \
  --problems $(lists mobilenet_v2.txt resnet50.txt vae_decoder.txt yolo_detector.txt mobilenet_v3_se.txt)
step "other FP32 NHWC" "${OTHER_SECONDS:-150}" --force --layout NHWC --type FP32 --tf32 \
  --problems $(lists mobilenet_v2.txt vae_decoder.txt yolo_detector.txt)
rm -f "$OUT/step.txt"
cat "$OUT/find-run.txt"
ls -la "$OUT"
