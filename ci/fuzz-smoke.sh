#!/usr/bin/env bash
# Runs every fuzz target of embed/fuzz briefly. cargo-fuzz needs nightly flags; stable rustc
# accepts them with RUSTC_BOOTSTRAP=1 (no other toolchain can be installed here).
set -euo pipefail
SECONDS_PER_TARGET=${1:-20}
cd "$(dirname "$0")/../embed/fuzz"
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz --version 0.13.1 --quiet
export RUSTC_BOOTSTRAP=1
for t in find_db_text perf_db_text problem_keys target_names; do
  mkdir -p "corpus/$t"
  cp corpus_seed/"$t".* "corpus/$t/" 2>/dev/null || true
  echo "fuzzing $t for ${SECONDS_PER_TARGET}s"
  cargo fuzz run "$t" "corpus/$t" -- -max_total_time="$SECONDS_PER_TARGET" -max_len=4096 2>&1 | tail -n 3
done
