#!/usr/bin/env bash
# Builds kiln's C library and stages it as an install tree:
#   target/kiln-c/include/kiln.h
#   target/kiln-c/lib/libkiln.a  libkiln.so (soname libkiln.so.0)  pkgconfig/kiln.pc
#   target/kiln-c/share/doc/kiln/LICENSE  THIRD_PARTY_NOTICES
# PROFILE=release (default) or debug; CARGO_FEATURES adds features (e.g. an NVIDIA-only build:
# CARGO_FEATURES="--no-default-features --features cuda,all-nvidia").
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}  # where cargo builds, as cargo reads it
PROFILE=${PROFILE:-release}
CARGO=${CARGO:-cargo}
flags=()
[ "$PROFILE" = release ] && flags+=(--release)
$CARGO build --quiet -p kiln-c "${flags[@]}" ${CARGO_FEATURES:-}
out="$target"/kiln-c
rm -rf "$out"
mkdir -p "$out/include" "$out/lib/pkgconfig"
cp capi/include/kiln.h "$out/include/"
mkdir -p "$out/share/doc/kiln"
cp LICENSE THIRD_PARTY_NOTICES "$out/share/doc/kiln/"
cp "$target/$PROFILE/libkiln_c.a" "$out/lib/libkiln.a"
cp "$target/$PROFILE/libkiln_c.so" "$out/lib/libkiln.so.0"
ln -sf libkiln.so.0 "$out/lib/libkiln.so"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
sed -e "s|@VERSION@|$version|" capi/kiln.pc.in > "$out/lib/pkgconfig/kiln.pc"
echo "staged $out: $(du -h "$out/lib/libkiln.a" | cut -f1) static, $(du -h "$out/lib/libkiln.so.0" | cut -f1) shared"
