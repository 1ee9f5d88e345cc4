#!/usr/bin/env bash
# Measures what embedding a 200,000-key find-db adds to a release build of kiln: wall time of
# the incremental build (build script + kiln crate) with vs without the extra target, and the
# peak memory of that build. Works on a scratch copy of the repo, where the synthetic data is
# added as target gfx90a68; the repo itself is not touched. Prints a Markdown table row.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
KEYS=${KEYS:-200000}
WORK=$(mktemp -d /tmp/kiln-embed-measure.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
git -C "$REPO" ls-files -z | (cd "$REPO" && xargs -0 cp --parents -t "$WORK")
T="$WORK/targets/gfx90a68"
mkdir -p "$T"
python3 "$REPO/ci/synth_finddb.py" "$KEYS" "$T/gfx90a68.HIP.fdb.txt"
PIN=$(sha256sum "$T/gfx90a68.HIP.fdb.txt" | cut -d' ' -f1)
cat > "$T/target.toml" <<TOML
basename = "gfx90a68"
vendor = "amd"
arch = "gfx90a"
compute_units = 104
code_object = "hsaco"
aliases = []
origin = "synthetic $KEYS-key find-db from ci/synth_finddb.py (build-cost measurement only)"

[files]
find_db = "gfx90a68.HIP.fdb.txt"

[pins]
"gfx90a68.HIP.fdb.txt" = "$PIN"
TOML
sed -i 's/^sm_90_132 = \[\]/sm_90_132 = []\ngfx90a68 = []/' "$WORK/Cargo.toml"
export CARGO_TARGET_DIR="$WORK/target"
cd "$WORK"
cargo build --release --quiet 2>/dev/null            # warm every dependency
run() { touch build.rs; /usr/bin/time -f "%e %M" -o "$WORK/time" cargo build --release --quiet "$@" 2>/dev/null; cat "$WORK/time"; }
read -r base_s base_kb < <(run)
read -r with_s with_kb < <(run --features gfx90a68)
size=$(stat -c %s "$T/gfx90a68.HIP.fdb.txt")
blob=$(stat -c %s "$(ls "$CARGO_TARGET_DIR"/release/build/kiln-*/out/gfx90a68.find-db.kilntab | head -1)")
added=$(python3 -c "print(f'{$with_s - $base_s:.1f}')")
echo "| $KEYS keys, $((size / 1000000)) MB text -> $((blob / 1000)) kB embedded | build without: ${base_s} s | with: ${with_s} s | added: ${added} s | peak RSS: $((with_kb / 1024)) MiB |"
