#!/usr/bin/env bash
# `make dist`: release `kiln` binaries for x86_64 and aarch64 Linux with a glibc floor of 2.28
# (cargo-zigbuild links against that glibc version's symbols), into dist/, and for each arch the
# C SDK, dist/kiln-<version>-<arch>-linux.tar.gz: bin/kiln, include/kiln.h, lib/libkiln.a,
# lib/libkiln.so(.0), lib/pkgconfig/kiln.pc (relocatable), share/doc/kiln/ (licences, README).
# Then checks each binary's and library's highest GLIBC symbol version, builds the whole-network
# C example from each unpacked tarball through pkg-config and runs it (aarch64 under qemu-user),
# and runs the aarch64 `kiln` under qemu-user: info, resolve (0 heap allocations per resolve),
# demo without a GPU, and no file access after the loader.
set -euo pipefail
cd "$(dirname "$0")/.."
KILN_TOOLS=${KILN_TOOLS:-$HOME/.cache/kiln-tools}
GLIBC_FLOOR=${GLIBC_FLOOR:-2.28}
bash ci/setup-dist.sh >/dev/null
export PATH="$KILN_TOOLS/zig/bin:$PATH"
rm -rf dist && mkdir -p dist
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
for arch in x86_64 aarch64; do
  triple="$arch-unknown-linux-gnu"
  # One build for the binary and the library: the kiln crate is compiled once per arch.
  CARGO_PROFILE_RELEASE_STRIP=symbols \
    cargo zigbuild --quiet --release -p kiln-cli -p kiln-c --target "$triple.$GLIBC_FLOOR"
  cp "target/$triple/release/kiln" "dist/kiln-$arch-linux-gnu"
  sdk="kiln-$version-$arch-linux"
  root="dist/$sdk"
  mkdir -p "$root/bin" "$root/include" "$root/lib/pkgconfig" "$root/share/doc/kiln"
  cp "target/$triple/release/kiln" "$root/bin/kiln"
  cp capi/include/kiln.h "$root/include/"
  cp "target/$triple/release/libkiln_c.a" "$root/lib/libkiln.a"
  cp "target/$triple/release/libkiln_c.so" "$root/lib/libkiln.so.0"
  ln -s libkiln.so.0 "$root/lib/libkiln.so"
  sed -e "s|@VERSION@|$version|" capi/kiln.pc.in > "$root/lib/pkgconfig/kiln.pc"
  cp LICENSE THIRD_PARTY_NOTICES "$root/share/doc/kiln/"
  sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@GLIBC@|$GLIBC_FLOOR|" \
    ci/sdk-readme.txt > "$root/share/doc/kiln/README"
  tar -C dist -czf "dist/$sdk.tar.gz" "$sdk"
  rm -rf "$root"
done
# The licences travel with the binaries (kiln's and everything they carry).
cp LICENSE THIRD_PARTY_NOTICES dist/
fail=0
# The binaries and the libraries, unpacked from the SDK tarballs.
check_dir=$(mktemp -d)
for t in dist/kiln-"$version"-*-linux.tar.gz; do tar -C "$check_dir" -xzf "$t"; done
for bin in dist/kiln-*-linux-gnu "$check_dir"/*/lib/libkiln.so.0; do
  highest=$(readelf -W --dyn-syms "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  needed=$(readelf -d "$bin" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
  if [ "$(printf '%s\n%s\n' "$highest" "$GLIBC_FLOOR" | sort -V | tail -1)" = "$GLIBC_FLOOR" ]; then
    verdict="<= $GLIBC_FLOOR"
  else
    verdict="ABOVE $GLIBC_FLOOR"; fail=1
  fi
  printf '%s: %s B, highest GLIBC symbol %s (%s), needs: %s\n' \
    "$bin" "$(stat -c %s "$bin")" "$highest" "$verdict" "$needed"
done

# The whole-network C example, built from each unpacked SDK through its pkg-config file and run
# (no GPU here: it lists kiln's networks and says so; aarch64 under qemu-user).
for arch in x86_64 aarch64; do
  sdk="$check_dir/kiln-$version-$arch-linux"
  pc=$(PKG_CONFIG_PATH="$sdk/lib/pkgconfig" pkg-config --cflags --libs kiln)
  if [ "$arch" = x86_64 ]; then
    cc_arch=(cc); run=()
  else
    cc_arch=(zig cc -target "aarch64-linux-gnu.$GLIBC_FLOOR"); run=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
  fi
  # shellcheck disable=SC2086
  if ! "${cc_arch[@]}" -O2 -std=c11 examples/c/network.c -o "$check_dir/network-$arch" $pc \
    -Wl,-rpath,"$sdk/lib"; then
    echo "$arch: the C example does not build from the SDK" >&2; fail=1; continue
  fi
  if "${run[@]}" "$check_dir/network-$arch" | grep -q "kiln's networks: resnet50"; then
    echo "$arch SDK: the C example builds through pkg-config and runs"
  else
    echo "$arch SDK: the C example did not run" >&2; fail=1
  fi
done
rm -rf "$check_dir"

# The aarch64 binary under qemu-user, with Debian's aarch64 glibc as its root; its outputs in a
# private scratch folder.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
a64=dist/kiln-aarch64-linux-gnu
run64() { qemu-aarch64 "$a64" "$@"; }
file "$a64" 2>/dev/null | sed 's/, BuildID.*//' || true
run64 info >"$scratch"/info.txt || fail=1
head -1 "$scratch"/info.txt
run64 resolve --target h100 -n 1 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 --repeat 20000 \
  >"$scratch"/resolve.txt || fail=1
tail -2 "$scratch"/resolve.txt
grep -q ', 0 heap allocations' "$scratch"/resolve.txt \
  || { echo "aarch64: resolve allocated" >&2; fail=1; }
run64 demo >"$scratch"/demo.txt 2>&1 || { cat "$scratch"/demo.txt; fail=1; }
tail -2 "$scratch"/demo.txt
# Guest syscalls (qemu -strace): after the loader's libraries, no file is touched.
qemu-aarch64 -strace "$a64" resolve --target gfx942130 \
  1008-14-14-1x1-192-14-14-16-0x0-1x1-1x1-0-NCHW-FP32-F >/dev/null 2>"$scratch"/strace.txt || fail=1
python3 - "$scratch"/strace.txt <<'PY' || fail=1
import re, sys
lines = open(sys.argv[1]).read().splitlines()
file_call = re.compile(r"\d+ (open|openat|access|faccessat|stat|lstat|newfstatat|statx|readlink|readlinkat)\(")
calls = [i for i, l in enumerate(lines) if file_call.match(l)]
# The dynamic loader searches its directories and opens each library; its last library ends
# start-up. After that kiln itself must touch no file.
last_lib = max((i for i in calls if ".so" in lines[i]), default=-1)
# fstat of an open descriptor (an empty path) reads no file by name: the loader does it for
# each library it mapped.
after = [lines[i] for i in calls if i > last_lib and ',"",' not in lines[i]]
if last_lib < 0:
    print("aarch64: the trace shows no library loads: is qemu -strace working?")
    sys.exit(1)
if after:
    print("aarch64: file access after start-up:\n" + "\n".join(after))
    sys.exit(1)
print(f"aarch64: {len(calls)} file syscalls, all the loader's (none after its last library)")
PY
[ $fail = 0 ] && echo "dist: passed" || { echo "dist: FAILED" >&2; exit 1; }
