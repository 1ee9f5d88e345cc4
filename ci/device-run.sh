#!/usr/bin/env bash
# Packs what the H100 needs into device-pack/ (git-ignored): the release kiln binary and the GPU
# test binary. Everything kiln needs at run time is inside the binary. Then, with the device
# tool: carry device-pack and run `bash device-pack/on-device.sh`; results land in $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf device-pack && mkdir -p device-pack
cargo build --release --quiet
cp target/release/kiln device-pack/
exe=$(cargo test --release --test gpu --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="gpu" and m.get("executable"): print(m["executable"])' | tail -1)
cp "$exe" device-pack/gpu-tests
cp ci/on-device.sh ci/on-device-find.sh ci/on-device-bench.sh device-pack/
ls -la device-pack
