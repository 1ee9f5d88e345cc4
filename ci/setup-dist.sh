#!/usr/bin/env bash
# Installs what `make dist` needs (idempotent):
#   rustup: the aarch64-unknown-linux-gnu standard library
#   cargo:  cargo-zigbuild (pinned version), which links against a chosen glibc version
#   pip:    zig (ci/dist-wheels.txt, pinned by sha256) into $KILN_TOOLS/zig, with a `zig` wrapper
#   apt:    qemu-user and libc6-arm64-cross (to run the aarch64 binary here), binutils (readelf)
set -euo pipefail
cd "$(dirname "$0")/.."
KILN_TOOLS=${KILN_TOOLS:-$HOME/.cache/kiln-tools}
ZIGBUILD_VERSION=0.24.1
export DEBIAN_FRONTEND=noninteractive
need_apt=()
command -v qemu-aarch64 >/dev/null || need_apt+=(qemu-user)
[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || need_apt+=(libc6-arm64-cross)
command -v readelf >/dev/null || need_apt+=(binutils)
if [ ${#need_apt[@]} -gt 0 ] && [ "${KILN_SETUP_SKIP_APT:-0}" != 1 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
rustup target list --installed | grep -qx aarch64-unknown-linux-gnu \
  || rustup target add aarch64-unknown-linux-gnu
if ! cargo-zigbuild --version 2>/dev/null | grep -q "$ZIGBUILD_VERSION"; then
  cargo install --quiet --locked cargo-zigbuild --version "$ZIGBUILD_VERSION"
fi
ZIG="$KILN_TOOLS/zig"
stamp="$ZIG/.kiln-pins"
if ! cmp -s ci/dist-wheels.txt "$stamp" 2>/dev/null; then
  rm -rf "$ZIG"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --require-hashes \
    --target "$ZIG/site" -r ci/dist-wheels.txt
  mkdir -p "$ZIG/bin"
  printf '#!/bin/sh\nPYTHONPATH="%s/site${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m ziglang "$@"\n' "$ZIG" > "$ZIG/bin/zig"
  chmod +x "$ZIG/bin/zig"
  cp ci/dist-wheels.txt "$stamp"
fi
"$ZIG/bin/zig" version
