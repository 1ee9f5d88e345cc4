#!/usr/bin/env bash
# Runs on a machine with the GPU: generates the problem lists from the network definitions
# (PyTorch/torchvision there), then measures them with `kiln-tools find` into $OUT, continuing from
# the sm_90_132 DBs already in the repo (resumable: measured problems are skipped; the DBs are
# saved after every problem, so a stop loses nothing). FIND_SECONDS bounds the measuring.
set -uo pipefail
P=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$P/.." && pwd)
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT/problems"
if ls "$REPO"/ci/problems/*.txt >/dev/null 2>&1; then
  cp "$REPO"/ci/problems/*.txt "$OUT/problems/"
else
  python3 "$REPO/ci/gen_problems.py" "$OUT/problems" || exit 1
fi
# FIND_FRESH=1 measures everything again instead of continuing from the committed DBs and log.
if [ "${FIND_FRESH:-0}" != 1 ]; then
  cp "$REPO"/targets/sm_90_132/sm_90_132.HIP.fdb.txt "$REPO"/targets/sm_90_132/sm_90_132.db.txt "$OUT/" 2>/dev/null
  # $OUT/find-log.tsv gets this run's lines only: ci/append-find-log.sh adds them to the committed log.
fi
timeout "${FIND_SECONDS:-480}" "$P/kiln-tools" find --device cuda:0 --problems "$OUT"/problems/*.txt \
  --db-dir "$OUT" --log "$OUT/find-log.tsv" > "$OUT/find-run.txt" 2>&1
echo "exit $?" >> "$OUT/find-run.txt"
tail -c 2000 "$OUT/find-run.txt"
ls -la "$OUT" "$OUT/problems"
