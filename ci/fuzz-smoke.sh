#!/usr/bin/env bash
# Runs every fuzz target of embed/fuzz briefly. cargo-fuzz needs nightly flags; stable rustc
# accepts them with RUSTC_BOOTSTRAP=1 (no other toolchain can be installed here).
set -euo pipefail
SECONDS_PER_TARGET=${1:-20}
cd "$(dirname "$0")/../embed/fuzz"
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz --version 0.13.1 --quiet
export RUSTC_BOOTSTRAP=1
# The text parsers, the flag path into validation and applicability, the kdb and SQLite perf-db
# readers, the embedded-table reader, the ELF checks, target.toml round trips and the
# appliance's problem-list reader.
TARGETS=${FUZZ_TARGETS:-"find_db_text perf_db_text problem_keys target_names conv_flags kdb_reader perf_db_sqlite embedded_table code_object target_toml problem_list"}
for t in $TARGETS; do
  mkdir -p "corpus/$t"
  cp corpus_seed/"$t".* "corpus/$t/" 2>/dev/null || true
  echo "fuzzing $t for ${SECONDS_PER_TARGET}s"
  len=4096; [ "$t" = code_object ] && len=32768   # real code objects are 15-25 KB
  cargo fuzz run "$t" "corpus/$t" -- -max_total_time="$SECONDS_PER_TARGET" -max_len=$len 2>&1 | tail -n 3
done
