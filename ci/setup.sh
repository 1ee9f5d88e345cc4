#!/usr/bin/env bash
# Installs what kiln's builds and tests need on a fresh Debian 12 machine (idempotent).
#   apt:  clang-19 lld-19 clang-tools-19 (AMD code objects), llvm-19 (kiln-emu's decode oracle:
#         llvm-objdump-19, llvm-readobj-19), strace (no-file-access test),
#         gcc, pkg-config, valgrind (the C examples and the C library's leak check),
#         hipcc libamdhip64-dev (the `hip` feature builds and links against them),
#         python3 (plain SQLite client in tests; already on the image)
#   pip:  the wheels of ci/cuda-wheels.txt, pinned by version and sha256 (NVRTC and ptxas
#         12.9, CCCL and CUDA runtime headers, CUTLASS 4.2 headers), into $KILN_TOOLS/cuda-wheels;
#         those of ci/onnx-wheels.txt (onnx, onnxruntime, numpy: the ONNX import's checks) into
#         $KILN_TOOLS/onnx-wheels
# Set KILN_SETUP_SKIP_APT=1 to skip apt (e.g. without root); `ci/setup.sh onnx` installs only
# the onnx wheels (what `make demo` needs beyond cargo).
set -euo pipefail
KILN_TOOLS=${KILN_TOOLS:-$HOME/.cache/kiln-tools}
export DEBIAN_FRONTEND=noninteractive
HERE="$(cd "$(dirname "$0")" && pwd)"

# Pinned wheels into a folder, reinstalled whenever the pins change (the stamp holds the pins
# the folder was made from).
install_pinned() { # pins file, folder
  if ! cmp -s "$1" "$2/.kiln-pins" 2>/dev/null; then
    rm -rf "$2.new"
    python3 -m pip install -q --disable-pip-version-check --no-deps --require-hashes \
      --target "$2.new" -r "$1"
    cp "$1" "$2.new/.kiln-pins"
    rm -rf "$2" && mv "$2.new" "$2"
  fi
}
apt_install() { # packages
  [ "${KILN_SETUP_SKIP_APT:-0}" = 1 ] && return 0
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
# pip installs the pinned wheels (Debian's python3 comes without it).
python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip
# The ONNX import's checks against onnxruntime (ci/onnx_check.py) and the demo's model.
ONNX_WHEELS="$KILN_TOOLS/onnx-wheels"
install_pinned "$HERE/onnx-wheels.txt" "$ONNX_WHEELS"
[ "${1:-}" = onnx ] && exit 0

need_apt=()
command -v clang++-19 >/dev/null || need_apt+=(clang-19 lld-19)
command -v clang-offload-bundler-19 >/dev/null || [ -x /usr/lib/llvm-19/bin/clang-offload-bundler ] || need_apt+=(clang-tools-19)
# kiln-emu's decode oracle: llvm-objdump-19 and llvm-readobj-19.
command -v llvm-objdump-19 >/dev/null || need_apt+=(llvm-19)
command -v strace >/dev/null || need_apt+=(strace)
# The `hip` feature links libamdhip64 (Debian's ROCm 5.2); hipconfig (package hipcc) tells
# hip-runtime-sys where the headers are.
[ -f /usr/include/hip/hip_runtime_api.h ] || need_apt+=(libamdhip64-dev)
command -v hipconfig >/dev/null || need_apt+=(hipcc)
command -v python3 >/dev/null || need_apt+=(python3)
# The C examples: a C compiler, pkg-config for kiln.pc, valgrind for the leak check.
command -v cc >/dev/null || need_apt+=(gcc libc6-dev)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
command -v valgrind >/dev/null || need_apt+=(valgrind)
if [ ${#need_apt[@]} -gt 0 ]; then
  apt_install "${need_apt[@]}"
fi

WHEELS="$KILN_TOOLS/cuda-wheels"
install_pinned "$HERE/cuda-wheels.txt" "$WHEELS"
echo "kiln tools ready: clang++-19 $(clang++-19 --version | head -1 | sed 's/.*version //'), CUDA and CUTLASS wheels in $WHEELS, onnx and onnxruntime in $ONNX_WHEELS"
