#!/usr/bin/env bash
# Call 32: 256x64 im2col tiles (DBs re-found on the 64-channel N=32 layers): ResNet-50 (every
# case), kiln's lists and the held-out networks, against cuDNN and PyTorch.
P=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$P/.." && pwd)
[ -x $P/kiln-tools ] || { gunzip -k $P/kiln-tools.gz; chmod +x $P/kiln-tools; }
R=/tmp/r32; rm -rf $R; mkdir -p $R
OUT=$R/resnet BENCH_SECONDS=300 TORCH_SECONDS=150 bash $P/on-device-bench.sh > $R/resnet-run.txt 2>&1
grep -A14 "^## Summary" $R/resnet/bench.md | tail -12
head -20 $R/resnet/torch-bench.md | tail -14
tar -C /tmp -czf $OUT/r32.tgz r32
OUT=$R/lists PROBLEM_LISTS="mobilenet_v2 vae_decoder yolo_detector mobilenet_v3_se" BENCH_SECONDS=200 TORCH_SECONDS=150 bash $P/on-device-bench.sh > $R/lists-run.txt 2>&1
head -16 $R/lists/torch-lists.md | tail -10
tar -C /tmp -czf $OUT/r32.tgz r32
OUT=$R/heldout PROBLEM_DIR=$REPO/benches/h100-heldout-find PROBLEM_LISTS="densenet121 efficientnet_b0 googlenet" BENCH_SECONDS=200 TORCH_SECONDS=150 bash $P/on-device-bench.sh > $R/heldout-run.txt 2>&1
head -12 $R/heldout/torch-lists.md | tail -8
tar -C /tmp -czf $OUT/r32.tgz r32
