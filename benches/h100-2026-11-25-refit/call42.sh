#!/usr/bin/env bash
# Call 42: the fallback's refit (64-column configs -> 32-column tiles on narrow layers). The
# held-out problems whose new pick the log never timed, into a scratch DB, then the held-out
# bench against PyTorch.
P=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$P/.." && pwd)
[ -x $P/kiln-tools ] || { gunzip -k $P/kiln-tools.gz; chmod +x $P/kiln-tools; }
R=/tmp/r42; rm -rf $R; mkdir -p $R/scratch
$P/kiln-tools find --device cuda:0 --force --tf32 --problems $P/untimed4-heldout.txt --db-dir $R/scratch --log $R/heldout-log.tsv > $R/find-heldout.txt 2>&1; echo "exit $?" >> $R/find-heldout.txt
tr '\r' '\n' < $R/find-heldout.txt | grep -a "exit\|problems\|records" | tail -3
tar -C /tmp -czf $OUT/r42.tgz r42
OUT=$R/heldout PROBLEM_DIR=$REPO/benches/h100-heldout-find PROBLEM_LISTS="densenet121 efficientnet_b0 googlenet" BENCH_SECONDS=200 TORCH_SECONDS=150 bash $P/on-device-bench.sh > $R/heldout-run.txt 2>&1
head -12 $R/heldout/torch-lists.md | tail -8
tar -C /tmp -czf $OUT/r42.tgz r42
