#!/usr/bin/env bash
# `make examples`: builds the C example against the static library and the bad-input check
# against the shared one (found through pkg-config), runs both (the check under valgrind:
# no leak, no invalid access), then the Rust example. Without a GPU the examples print the plan
# and the no-device error; on one they run and check the layer (ci/on-device-examples.sh adds
# the thread and C-vs-Rust comparisons).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}  # where cargo builds, as cargo reads it
CC=${CC:-cc}
KILN_C="$target"/kiln-c
PROFILE=${PROFILE:-release} bash ci/capi.sh
bin="$target"/examples
mkdir -p "$bin"
export PKG_CONFIG_PATH="$PWD/$KILN_C/lib/pkgconfig"
cflags="-O2 -Wall -Wextra -Werror -std=c11 -D_POSIX_C_SOURCE=200809L"
# Static: libkiln.a plus what Rust's std needs from the system (kiln.pc's Libs.private).
# shellcheck disable=SC2046
for example in resnet_layer network; do
  $CC $cflags $(pkg-config --cflags kiln) "examples/c/$example.c" -o "$bin/${example}_c" \
    -L"$KILN_C/lib" -Wl,-Bstatic -lkiln -Wl,-Bdynamic \
    $(pkg-config --static --libs-only-l kiln | sed 's/-lkiln//') -lm
done
# Shared, through pkg-config alone (rpath so it runs from the staging tree).
# shellcheck disable=SC2046
$CC $cflags capi/tests/api_check.c -o "$bin/api_check" $(pkg-config --cflags --libs kiln) \
  -lpthread -Wl,-rpath,"$PWD/$KILN_C/lib"
# kiln.pc is relocatable: the staged tree copied elsewhere still builds a program.
moved=$(mktemp -d)
cp -r "$KILN_C" "$moved/kiln"
# shellcheck disable=SC2046
$CC $cflags examples/c/network.c -o "$bin/network_moved" \
  $(PKG_CONFIG_PATH="$moved/kiln/lib/pkgconfig" pkg-config --cflags --libs kiln) \
  -Wl,-rpath,"$moved/kiln/lib"
case "$(PKG_CONFIG_PATH="$moved/kiln/lib/pkgconfig" pkg-config --variable=includedir kiln)" in
  "$moved"/kiln/*) echo "== kiln.pc relocates: includedir under the moved tree" ;;
  *) echo "kiln.pc does not relocate" >&2; exit 1 ;;
esac
"$bin/network_moved" | tail -1
rm -rf "$moved"
echo "== ldd $bin/resnet_layer_c (static libkiln: no libkiln.so)"
ldd "$bin/resnet_layer_c" | sed 's/ (0x.*//'
if ldd "$bin/resnet_layer_c" | grep -q libkiln; then
  echo "resnet_layer_c links libkiln dynamically" >&2; exit 1
fi
echo "== C example"
"$bin/resnet_layer_c"
echo "== C example: a whole network"
"$bin/network_c"
echo "== C library on bad input, under valgrind"
if command -v valgrind >/dev/null; then
  valgrind --quiet --error-exitcode=3 --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --show-leak-kinds=definite,indirect "$bin/api_check"
else
  echo "valgrind is not installed (ci/setup.sh installs it); running without" >&2
  "$bin/api_check"
fi
echo "== Rust example"
release=()
[ "${PROFILE:-release}" = release ] && release=(--release)
${CARGO:-cargo} run --quiet "${release[@]}" --example resnet_layer
echo "== Rust example: a whole network"
${CARGO:-cargo} run --quiet "${release[@]}" --example network
echo "== Rust example: the appliance (an embedded network; none embedded in this build)"
${CARGO:-cargo} run --quiet "${release[@]}" --features safetensors --example appliance
echo "== the appliance with a network embedded (KILN_MODELS), under strace: no file access but the loader's, the image's and the system's"
tiny="$target"/examples/tiny
mkdir -p "$tiny"
python3 ci/tiny_onnx.py "$tiny/tiny.onnx"
${CARGO:-cargo} run --quiet "${release[@]}" -p kiln-tools -- net import "$tiny/tiny.onnx" --out "$tiny" --name tiny
KILN_MODELS="$PWD/$tiny/tiny.txt" ${CARGO:-cargo} build --quiet "${release[@]}" --features safetensors --example appliance
profile_dir=debug
[ "${PROFILE:-release}" = release ] && profile_dir=release
python3 ci/appliance_strace.py "$target/$profile_dir/examples/appliance" --shape 3,32,32 --out "$tiny" --no-device-ok \
  | grep -E '"(ok|other|loader|image|system)"|ready|class'
