#!/usr/bin/env bash
# `make package-check`: kiln as a crate from a registry would be. Packages kiln-format,
# kiln-embed and kiln (`cargo package`, unverified: they are checked below), fails when a
# .crate passes crates.io's 10 MB limit, then builds a downstream crate from the unpacked
# packages alone, offline, against a local target directory, with one target whose databases
# come from KILN_DB_SOURCE (this checkout's targets/), and runs it: it resolves a problem on
# the embedded target.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
LIMIT=$((10 * 1000 * 1000))
$CARGO package --quiet --no-verify --allow-dirty -p kiln-format -p kiln-embed -p kiln
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
for c in kiln-format kiln-embed kiln; do
  crate="target/package/$c-$version.crate"
  size=$(stat -c %s "$crate")
  if [ "$size" -gt "$LIMIT" ]; then
    echo "$crate: $size B, over crates.io's 10 MB" >&2; fail=1
  else
    echo "$crate: $size B ($(tar -tzf "$crate" | wc -l) files)"
  fi
  tar -C "$work" -xzf "$crate"
done
# The downstream crate: kiln with one NVIDIA target, its three crates from the packages.
mkdir -p "$work/downstream/src"
cat > "$work/downstream/Cargo.toml" <<EOF
[package]
name = "downstream"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
kiln = { version = "=$version", default-features = false, features = ["cuda", "sm_90_132"] }

[patch.crates-io]
kiln = { path = "../kiln-$version" }
kiln-format = { path = "../kiln-format-$version" }
kiln-embed = { path = "../kiln-embed-$version" }

[workspace]
EOF
cat > "$work/downstream/src/main.rs" <<'EOF'
//! A program that depends on kiln as a registry crate: resolve ResNet-50's 3x3 layer on the
//! embedded sm_90_132 target.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target = kiln::named_target("sm_90_132")?;
    let p = kiln::ConvProblem::from_find_db_key(
        "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F",
    )?;
    let plan = kiln::resolve::resolve(target, &p)?;
    println!(
        "downstream: {} resolves to {} [{}]",
        target.basename,
        plan.best().variant.solver.id(),
        plan.best().variant.params
    );
    Ok(())
}
EOF
cp Cargo.lock "$work/downstream/Cargo.lock"
# Offline: every third-party crate comes from the local registry cache the workspace's builds
# filled; the target directory is this checkout's, so those crates are not built again (the
# packaged kiln crates are: they have their own paths).
repo=$PWD
if out=$(cd "$work/downstream" && KILN_DB_SOURCE="$repo/targets" CARGO_TARGET_DIR="$repo/target" \
    $CARGO run --quiet --offline 2>&1); then
  echo "$out" | tail -1
  echo "$out" | grep -q "downstream: sm_90_132 resolves to" || fail=1
else
  echo "$out" >&2; fail=1
fi
[ $fail = 0 ] && echo "package-check: passed" || { echo "package-check: FAILED" >&2; exit 1; }
