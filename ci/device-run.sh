#!/usr/bin/env bash
# Packs what the H100 needs into device-pack/ (git-ignored): the release `kiln` (appliance) and
# `kiln-tools` (find, bench) binaries, the GPU test binaries (tests/gpu.rs and the backend
# conformance suite) and the examples (C against libkiln.a, Rust). Everything kiln needs at run time is inside the binary. Then, on
# a machine with the GPU, copy device-pack there and run `bash device-pack/on-device.sh`; results land in $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}  # where cargo builds, as cargo reads it
rm -rf device-pack && mkdir -p device-pack
cargo build --release --quiet -p kiln-cli -p kiln-tools
cp "$target"/release/kiln "$target"/release/kiln-tools device-pack/
test_exe() { # the executable of integration test $1 of the kiln package (release, harness)
  cargo test --release -p kiln --features harness --test "$1" --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]==sys.argv[1] and m.get("executable"): print(m["executable"])' "$1" | tail -1
}
cp "$(test_exe gpu)" device-pack/gpu-tests
cp "$(test_exe backend_conformance)" device-pack/conformance-tests
# The appliance interface: the C example against the static library, the Rust example.
PROFILE=release bash ci/capi.sh >/dev/null
cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I"$target"/kiln-c/include examples/c/resnet_layer.c \
  -o device-pack/resnet_layer_c "$target"/kiln-c/lib/libkiln.a -ldl -lgcc_s -lpthread -lm
cargo build --release --quiet --example resnet_layer
cp "$target"/release/examples/resnet_layer device-pack/resnet_layer_rs
strip device-pack/resnet_layer_c device-pack/resnet_layer_rs
cp ci/on-device-examples.sh ci/on-device-retune.sh ci/on-device.sh ci/on-device-find.sh ci/on-device-bench.sh ci/on-device-tune.sh ci/torch_conv_bench.py device-pack/
ls -la device-pack
