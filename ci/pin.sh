#!/usr/bin/env bash
# Re-pins a target's files after they were regenerated (e.g. new find-db and perf-db from
# `kiln find`): rewrites each sha256 under [pins] in targets/<base>/target.toml.
# Usage: bash ci/pin.sh sm_90_132
set -euo pipefail
base=${1:?usage: ci/pin.sh <target basename>}
dir="$(cd "$(dirname "$0")/.." && pwd)/targets/$base"
toml="$dir/target.toml"
[ -f "$toml" ] || { echo "no $toml" >&2; exit 1; }
grep -oE '^"[^"]+" = "[0-9a-f]{64}"' "$toml" | cut -d'"' -f2 | while read -r file; do
  [ -f "$dir/$file" ] || { echo "$toml pins $file, which is not in $dir" >&2; exit 1; }
  sum=$(sha256sum "$dir/$file" | cut -d' ' -f1)
  sed -i "s|^\"$file\" = \"[0-9a-f]*\"|\"$file\" = \"$sum\"|" "$toml"
  echo "$base/$file $sum"
done
