#!/usr/bin/env bash
# Call 47: 96-, 160- and 192-column tiles and their refit, in the DBs. Benches against PyTorch:
# the problem lists, then the held-out networks twice (PyTorch's run-to-run spread).
P=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$P/.." && pwd)
[ -x $P/kiln-tools ] || { gunzip -k $P/kiln-tools.gz; chmod +x $P/kiln-tools; }
R=/tmp/r47; rm -rf $R; mkdir -p $R
OUT=$R/lists PROBLEM_LISTS="mobilenet_v2 vae_decoder yolo_detector mobilenet_v3_se" BENCH_SECONDS=200 TORCH_SECONDS=150 bash $P/on-device-bench.sh > $R/lists-run.txt 2>&1
head -14 $R/lists/torch-lists.md | tail -8 | cut -d'|' -f2-7
tar -C /tmp -czf $OUT/r47.tgz r47
for run in a b; do
  OUT=$R/heldout-$run PROBLEM_DIR=$REPO/benches/h100-heldout-find PROBLEM_LISTS="densenet121 efficientnet_b0 googlenet" BENCH_SECONDS=200 TORCH_SECONDS=150 bash $P/on-device-bench.sh > $R/heldout-$run-run.txt 2>&1
  head -12 $R/heldout-$run/torch-lists.md | tail -6 | cut -d'|' -f2-7
  tar -C /tmp -czf $OUT/r47.tgz r47
done
