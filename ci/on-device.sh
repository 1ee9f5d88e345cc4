#!/usr/bin/env bash
# Runs on a machine with the GPU (see ci/device-run.sh). Writes every result under $OUT.
set -uo pipefail
P=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$P/kiln" devices
} > "$OUT/device.txt" 2>&1
"$P/kiln" selftest > "$OUT/selftest.txt" 2>&1; echo "exit $?" >> "$OUT/selftest.txt"
for i in 1 2 3; do "$P/kiln" coldstart; done > "$OUT/coldstart.txt" 2>&1
"$P/gpu-tests" --ignored --test-threads=1 --nocapture > "$OUT/gpu-tests.txt" 2>&1; echo "exit $?" >> "$OUT/gpu-tests.txt"
"$P/conformance-tests" --nocapture --test-threads=1 > "$OUT/conformance.txt" 2>&1; echo "exit $?" >> "$OUT/conformance.txt"
"$P/kiln" resolve --target h100 -n 1 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 --repeat 100000 > "$OUT/resolve.txt" 2>&1
{
  "$P/kiln" demo -n 1 --type FP32 --layout NCHW
  "$P/kiln" demo -n 1 --type FP16 --layout NHWC
  "$P/kiln" demo -n 32 --type FP16 --layout NHWC
} > "$OUT/demo.txt" 2>&1; echo "exit $?" >> "$OUT/demo.txt"
if [ "${KILN_SANITIZE:-1}" = 1 ]; then
  SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  timeout 400 "$SAN" --tool memcheck --leak-check full --error-exitcode 9 "$P/kiln" selftest > "$OUT/memcheck.txt" 2>&1; echo "exit $?" >> "$OUT/memcheck.txt"
fi
tail -n 3 "$OUT"/*.txt
