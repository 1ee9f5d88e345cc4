#!/usr/bin/env bash
# On the GPU machine (device-pack/ carried): the appliance interface end to end.
#   - the C example (static libkiln) and the Rust example on the same ResNet-50 layer and
#     inputs: each checks against its f64 reference; their output hashes must be equal;
#   - the C example with 2 and 8 threads sharing one handle: every output equal to the
#     single-threaded one, bit for bit; and on a CUDA context of the program's own;
#   - `kiln selftest --json`, `kiln devices --json`, `kiln info --json`, and a warning.
# Writes $OUT/examples.txt and the JSON documents; exits non-zero on any mismatch.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
log="$OUT/examples.txt"
fail=0
run() { echo "\$ $*" >>"$log"; "$@" >>"$log" 2>&1; local rc=$?; echo "(exit $rc)" >>"$log"; return $rc; }
hash_of() { grep -o 'y fnv1a64 0x[0-9a-f]*' "$1" | tail -1; }
date -u +"%Y-%m-%dT%H:%MZ" >"$log"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$log" 2>&1
for n in 1 32; do
  ./resnet_layer_c -n "$n" >"$OUT/c-n$n.txt" 2>&1 || fail=1
  ./resnet_layer_rs -n "$n" >"$OUT/rs-n$n.txt" 2>&1 || fail=1
  c=$(hash_of "$OUT/c-n$n.txt"); r=$(hash_of "$OUT/rs-n$n.txt")
  { echo "== N=$n"; cat "$OUT/c-n$n.txt" "$OUT/rs-n$n.txt"; } >>"$log"
  if [ -n "$c" ] && [ "$c" = "$r" ]; then
    echo "N=$n: C and Rust outputs equal bit for bit ($c)" >>"$log"
  else
    echo "N=$n: MISMATCH C '$c' vs Rust '$r'" >>"$log"; fail=1
  fi
  rm -f "$OUT/c-n$n.txt" "$OUT/rs-n$n.txt"
done
run ./resnet_layer_c --threads 2 || fail=1
run ./resnet_layer_c -n 8 --threads 8 || fail=1
run ./resnet_layer_c --adopt-cuda-context --threads 2 || fail=1
# Device memory and API use of the C library: compute-sanitizer over a threaded run.
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -n "$SAN" ]; then
  run "$SAN" --tool memcheck --leak-check full --error-exitcode 9 ./resnet_layer_c --threads 2 || fail=1
fi
./kiln selftest --json >"$OUT/selftest.json" 2>>"$log" || fail=1
./kiln devices --json >"$OUT/devices.json" 2>>"$log" || fail=1
python3 -c 'import json,sys
for f in sys.argv[1:]:
    d = json.load(open(f)); print(f.split("/")[-1], "parses;", "passed" if d.get("passed", True) else "FAILED")' \
  "$OUT/selftest.json" "$OUT/devices.json" >>"$log" 2>&1 || fail=1
# A warning as the appliance prints it: an L40S-class target has no measured find-db.
run ./kiln resolve --target l40s -n 1 -c 64 -k 64 -H 56 -W 56 -y 3 -x 3 -p 1 -q 1 || fail=1
echo "examples: $([ $fail = 0 ] && echo passed || echo FAILED)" >>"$log"
exit $fail
