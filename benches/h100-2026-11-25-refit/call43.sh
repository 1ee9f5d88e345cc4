#!/usr/bin/env bash
# Call 43: the held-out bench against PyTorch with the final refit rule (same rows and split),
# run twice to see PyTorch's run-to-run spread.
P=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$P/.." && pwd)
[ -x $P/kiln-tools ] || { gunzip -k $P/kiln-tools.gz; chmod +x $P/kiln-tools; }
R=/tmp/r43; rm -rf $R; mkdir -p $R
for run in a b; do
  OUT=$R/heldout-$run PROBLEM_DIR=$REPO/benches/h100-heldout-find PROBLEM_LISTS="densenet121 efficientnet_b0 googlenet" BENCH_SECONDS=200 TORCH_SECONDS=150 bash $P/on-device-bench.sh > $R/heldout-$run-run.txt 2>&1
  head -12 $R/heldout-$run/torch-lists.md | tail -6 | cut -d'|' -f2-7
  tar -C /tmp -czf $OUT/r43.tgz r43
done
