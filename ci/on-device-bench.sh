#!/usr/bin/env bash
# Runs on a machine with the GPU: `kiln-tools bench` (cold start vs NVRTC, lookup cost, every ResNet-50
# layer against cuDNN) and three fresh-process cold starts. cuDNN and NVRTC are not part of kiln:
# they are found in the machine's PyTorch install and loaded at run time. Results land in $OUT.
# PROBLEM_LISTS="mobilenet_v2 vae_decoder yolo_detector": the problem lists instead of ResNet-50
# (read from PROBLEM_DIR, default ci/problems).
set -uo pipefail
P=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null)
lib() { # first match under the PyTorch wheels, else anywhere on the root filesystem
  local f
  f=$(find "$site/nvidia" -name "$1" 2>/dev/null | grep -v builtins | head -1)
  [ -n "$f" ] || f=$(find / -xdev -name "$1" 2>/dev/null | grep -v builtins | head -1)
  echo "$f"
}
cudnn=$(lib 'libcudnn.so.9*')
nvrtc=$(lib 'libnvrtc.so.1[23]*')
echo "cuDNN: ${cudnn:-not found}; NVRTC: ${nvrtc:-not found}" | tee "$OUT/bench-env.txt"
libdirs=$(find "$site/nvidia" -maxdepth 3 -type d -name lib 2>/dev/null | tr '\n' ':')
export LD_LIBRARY_PATH="$(dirname "${cudnn:-/x/x}"):${libdirs}${LD_LIBRARY_PATH:-}"
export KILN_NVRTC=${nvrtc:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >> "$OUT/bench-env.txt" 2>&1
for i in 1 2 3; do "$P/kiln" coldstart; done > "$OUT/coldstart.txt" 2>&1
if [ -n "${PROBLEM_LISTS:-}" ]; then
  # Problem lists (names under ci/problems, without .txt) in FP16 NHWC, then every layer of
  # that report timed through PyTorch: the lists' bar.
  lists=$(for l in $PROBLEM_LISTS; do echo "${PROBLEM_DIR:-$P/../ci/problems}/$l.txt"; done)
  timeout "${BENCH_SECONDS:-420}" "$P/kiln-tools" bench --problems $lists --cases fp16 \
    --out "$OUT/bench-lists.md" ${BENCH_FLAGS:-} > "$OUT/bench-run.txt" 2>&1
  echo "bench exit $?" | tee -a "$OUT/bench-run.txt"
  timeout "${TORCH_SECONDS:-240}" python3 "$P/torch_conv_bench.py" --kiln-report "$OUT/bench-lists.md" \
    > "$OUT/torch-lists.md" 2>&1
  echo "torch exit $?" >> "$OUT/torch-lists.md"
  tail -c 3000 "$OUT/torch-lists.md"
  exit 0
fi
timeout "${BENCH_SECONDS:-420}" "$P/kiln-tools" bench --out "$OUT/bench.md" ${BENCH_FLAGS:-} > "$OUT/bench-run.txt" 2>&1
echo "bench exit $?" | tee -a "$OUT/bench-run.txt"
# The cuDNN column cross-checked through PyTorch (cudnn.benchmark), timed the same way.
if [ "${TORCH_CHECK:-1}" = 1 ]; then
  timeout "${TORCH_SECONDS:-240}" python3 "$P/torch_conv_bench.py" > "$OUT/torch-bench.md" 2>&1
  echo "torch exit $?" >> "$OUT/torch-bench.md"
fi
tail -c 3000 "$OUT/bench-run.txt"
