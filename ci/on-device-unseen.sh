#!/usr/bin/env bash
# On a machine with the GPU: one class of layers off kiln's tuned lists (CLASS: grouped, the
# default, or video: 3-D) checked, tuned and timed against PyTorch's cuDNN. Expects
# out/kiln.gz and out/kiln-tools.gz (PACK_TOOLS=1 bash ci/pack-kiln.sh); STEPS picks what runs:
#   check   $OUT/selftest.txt, $OUT/memcheck.txt: kiln selftest over the class's solvers
#           (CHECK_SOLVERS; "all" for every one) on the built-in problems or the lists
#           CHECK_PROBLEMS names, and the same under compute-sanitizer memcheck (on the
#           MEMCHECK_PROBLEMS lists, when given)
#   find    $OUT/db/: the class's grid (ci/problems/grouped_grid.txt, video_grid.txt; or
#           FIND_PROBLEMS) measured (every solver and perf config) into copies of the sm_90_132
#           DBs, with the find log (recorded here later with `kiln-tools find --from-log`)
#   unseen  $OUT/$CLASS.txt (ci/gen_problems.py --$CLASS-unseen: the class's layers of
#           torchvision networks no kiln list or DB holds; or the keys of the file KEYS names),
#           $OUT/torch-keys.tsv (each through
#           PyTorch's cuDNN) and $OUT/ab-layers.tsv (each through `kiln run`, the resolver's
#           pick, in every build of BUILDS: kiln-old beside kiln)
#   regret  $OUT/unseen-find.tgz: the unseen layers measured with every solver and config into a
#           scratch DB (never recorded): the best kiln solver per layer, for the fallback's regret
set -u
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
STEPS=${STEPS:-check find}
CLASS=${CLASS:-grouped}
case "$CLASS" in
  grouped) default_solvers="ConvWgmmaGroupedFwd ConvMmaGroupedFwd ConvCutlassGroupedFwd ConvDirectGroupedFwd" ;;
  video) default_solvers="ConvCutlass3dFwd ConvCutlass3dScalarOutFwd ConvCutlass3d3xTf32Fwd" ;;
  *) echo "CLASS is grouped or video, not $CLASS" >&2; exit 2 ;;
esac
LIST=${KEYS:-$OUT/$CLASS.txt}
BUILDS=${BUILDS:-kiln}
for b in $BUILDS kiln-tools; do [ -f "out/$b.gz" ] && gunzip -kf "out/$b.gz" && chmod +x "out/$b"; done
solvers=()
if [ "${CHECK_SOLVERS:-}" != all ]; then
  for s in ${CHECK_SOLVERS:-$default_solvers}; do solvers+=(--solver "$s"); done
fi
checked=() memchecked=()
for f in ${CHECK_PROBLEMS:-}; do checked+=(--problems "$f"); done
for f in ${MEMCHECK_PROBLEMS:-${CHECK_PROBLEMS:-}}; do memchecked+=(--problems "$f"); done
has() { [[ " $STEPS " == *" $1 "* ]]; }

if has check; then
  timeout 120 out/kiln selftest "${solvers[@]}" "${checked[@]}" > "$OUT/selftest.txt" 2>&1
  echo "exit $?" >> "$OUT/selftest.txt"
  SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  if [ -n "$SAN" ]; then
    timeout 200 "$SAN" --tool memcheck --error-exitcode 9 out/kiln selftest "${solvers[@]}" \
      "${memchecked[@]}" > "$OUT/memcheck.txt" 2>&1
    echo "exit $?" >> "$OUT/memcheck.txt"
  fi
  tail -n 3 "$OUT/selftest.txt" "$OUT/memcheck.txt"
fi

if has find; then
  mkdir -p "$OUT/db"
  cp targets/sm_90_132/sm_90_132.HIP.fdb.txt targets/sm_90_132/sm_90_132.db.txt "$OUT/db/"
  timeout "${FIND_SECONDS:-300}" out/kiln-tools find --device cuda:0 \
    --problems "${FIND_PROBLEMS:-ci/problems/${CLASS}_grid.txt}" --db-dir "$OUT/db" \
    --log "$OUT/db/find-log.tsv" ${FIND_FLAGS:-} > "$OUT/find-run.txt" 2>&1
  echo "exit $?" >> "$OUT/find-run.txt"
  grep -v "^\s*$" "$OUT/find-run.txt" | tr '\r' '\n' | tail -n 4
fi

if has unseen; then
  if [ -z "${KEYS:-}" ]; then
    python3 ci/gen_problems.py "$OUT" "--$CLASS-unseen" > "$OUT/gen.txt" 2>&1
    cat "$OUT/gen.txt"
  fi
  python3 ci/torch_conv_bench.py --keys "$LIST" > "$OUT/torch-keys.tsv" 2>&1
  {
    printf 'build\tlayer\tsolver\tms\n'
    while read -r key; do
      for b in $BUILDS; do
        r=$("out/$b" run "$key" --repeats 50 2>&1)
        solver=$(grep -oE "Conv[A-Za-z0-9]+" <<<"$r" | head -1)
        ms=$(grep -oE "[0-9.]+ ms GPU-only" <<<"$r" | head -1 | cut -d' ' -f1)
        printf '%s\t%s\t%s\t%s\n' "$b" "$key" "${solver:-?}" "${ms:-error}"
      done
    done < "$LIST"
  } > "$OUT/ab-layers.tsv"
  wc -l "$OUT/ab-layers.tsv" "$OUT/torch-keys.tsv"
fi

if has regret; then
  # Alone, the step takes the unseen list an earlier run wrote (carried as out/$CLASS.txt).
  [ -f "$LIST" ] || cp "out/$CLASS.txt" "$OUT/"
  mkdir -p "$OUT/unseen-find"
  cp targets/sm_90_132/sm_90_132.HIP.fdb.txt targets/sm_90_132/sm_90_132.db.txt "$OUT/unseen-find/"
  timeout "${REGRET_SECONDS:-240}" out/kiln-tools find --device cuda:0 \
    --problems "$LIST" --db-dir "$OUT/unseen-find" \
    --log "$OUT/unseen-find/find-log.tsv" > "$OUT/unseen-find/run.txt" 2>&1
  echo "exit $?" >> "$OUT/unseen-find/run.txt"
  grep -v "^\s*$" "$OUT/unseen-find/run.txt" | tr '\r' '\n' | tail -n 3
  # One file: what comes back from the machine is limited in count.
  tar -C "$OUT" -czf "$OUT/unseen-find.tgz" unseen-find && rm -r "$OUT/unseen-find"
fi
# The scratch DBs are copies; only the find log is needed back.
rm -f "$OUT"/db/*.txt
