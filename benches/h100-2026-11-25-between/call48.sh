#!/usr/bin/env bash
# Call 48: the held-out bench against PyTorch three more times with the committed DBs and tiles
# (9000745), for the spread of PyTorch's times.
P=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$P/.." && pwd)
[ -x $P/kiln-tools ] || { python3 -c "import lzma,sys; open(sys.argv[2],\"wb\").write(lzma.open(sys.argv[1]).read())" $P/kiln-tools.xz $P/kiln-tools; chmod +x $P/kiln-tools; }
R=/tmp/r48; rm -rf $R; mkdir -p $R
for run in c d e; do
  OUT=$R/heldout-$run PROBLEM_DIR=$REPO/benches/h100-heldout-find PROBLEM_LISTS="densenet121 efficientnet_b0 googlenet" BENCH_SECONDS=200 TORCH_SECONDS=150 bash $P/on-device-bench.sh > $R/heldout-$run-run.txt 2>&1
  head -12 $R/heldout-$run/torch-lists.md | tail -6 | cut -d'|' -f2-7
  tar -C /tmp -czf $OUT/r48.tgz r48
done
