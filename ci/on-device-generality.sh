#!/usr/bin/env bash
# On a machine with the GPU: the 3-D (NDHWC and FP32 NCDHW), NCHW 1x1 (batched GEMM), NCHW
# first-layer and NCHW grouped solvers checked, tuned and timed against PyTorch's cuDNN. STEPS picks what runs; each
# step fits one call, and the carry takes two binaries at a time:
#   check    (out/kiln.gz) $OUT/selftest.txt, memcheck.txt: kiln selftest over NEW_SOLVERS,
#            and the same under compute-sanitizer memcheck
#   video    (out/kiln-tools.gz) $OUT/db/find-log.tsv: ci/problems/video_grid.txt measured
#            again where a new solver applies (FIND_FLAGS, default --refresh); $OUT/video.txt
#            and unseen-find.tgz: the video networks' 3-D layers measured with every solver
#            and config into a scratch DB (the fallback's regret)
#   grouped  (out/kiln-tools.gz) $OUT/grouped/db/find-log.tsv: ci/problems/grouped_grid.txt
#            measured again where a new solver applies (find --refresh: the narrow-group
#            tensor-core kernel)
#   mma-grouped (out/kiln-tools.gz) $OUT/mma-grouped/db/find-log.tsv: every solver and config
#            measured again (FIND_FLAGS, default --force) on the listed problems
#            ConvMmaGroupedFwd applies to (problems.txt), after a change to its kernel
#   refresh  (out/kiln-tools.gz) $OUT/refresh/find-log.tsv: the listed FP32 NCHW problems
#            measured again where a new solver applies (find --refresh; resumable);
#            REFRESH_FILTER="" refreshes every listed problem a new solver applies to
#   tiles    (out/kiln.gz, out/kiln-tools.gz) ConvCutlass3dFwd's 64-deep tiles: $OUT/selftest.txt
#            and memcheck.txt over it, then $OUT/tiles/find-log.tsv: ci/problems/video_grid.txt
#            measured again with every solver and config (find --force)
#   profile  (out/kiln.gz) $OUT/profile-resnet50-<n>.txt: `kiln net run --profile --verbose`
#            of ResNet-50 at N=1 and 32, every launch alone (where the network's time goes)
#   ncu      (out/kiln.gz) $OUT/ncu-<key>.txt: Nsight Compute's speed-of-light, memory,
#            occupancy and warp-state sections for one launch of each NCU_KEYS layer's kernel
#            (default: ResNeXt-50's width-4 and width-8 grouped layers and RegNetY's width-16
#            one at N=32, on ConvMmaGroupedFwd: 2.3-2.5x cuDNN), clocks left alone
#   Record the logs here (kiln-tools find --from-log, ci/pin.sh, ci/append-find-log.sh),
#   rebuild out/kiln.gz, and build the one before the change as out/kiln-old.gz, then:
#   compare  (out/kiln-old.gz, out/kiln.gz) through both builds and cuDNN, GPU-only (NCDHW
#            through the new build only):
#            $OUT/video/  the first VIDEO_LAYERS (40) video layers at N=32 (FP16 NDHWC)
#            $OUT/nchw/   ResNet-50's FP32 NCHW layers (N=1 and 32)
#            $OUT/nchw-grouped/  the unseen grouped and depthwise layers as FP32 NCHW, N=1
#            (NCHW_DW32=1: the depthwise ones at N=32 too)
#            $OUT/ncdhw/  the video layers as FP32 NCDHW, N=1
#            $OUT/grouped/  the unseen grouped layers, FP16 NHWC, N=1 and 32
#            (PARTS picks among video, nchw, nchw-grouped, ncdhw and grouped; default the
#            first four;
#            COMPARE_BUILDS the builds, default "kiln-old kiln")
set -u
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
STEPS=${STEPS:-check}
has() { [[ " $STEPS " == *" $1 "* ]]; }
# The solvers (or configs) not yet checked on the GPU: the NCHW batched GEMM's strided layers
# (a pixel copy before the product), the Hopper 3-D im2col kernel, the narrow-group
# tensor-core kernel, and the narrow-K kernel (its tile and pixel indexing now shared with the
# narrow-group one, kernels/nv_shared.h). Checked: the 3-D, NCHW GEMM at stride 1, first-layer,
# grouped NCHW and depthwise NCHW solvers (benches/runs/2026-11-27-h100-generality/,
# 2026-11-27-h100-depthwise-nchw/).
NEW_SOLVERS=${NEW_SOLVERS:-"ConvCutlassNchwGemm3xTf32Fwd ConvWgmmaImplicitGemm3dFwd ConvMmaGroupedFwd ConvMmaNarrowFwd"}

if has check; then
  OUT="$OUT" CLASS=video STEPS=check CHECK_SOLVERS="$NEW_SOLVERS" bash "$HERE/on-device-unseen.sh"
fi

if has video; then
  # --refresh: the grid is in the DBs already; only records a new solver is missing from.
  OUT="$OUT" CLASS=video STEPS=find FIND_SECONDS=${FIND_SECONDS:-240} \
    FIND_FLAGS="${FIND_FLAGS:---refresh}" FIND_PROBLEMS=ci/problems/video_grid.txt \
    bash "$HERE/on-device-unseen.sh"
  python3 ci/gen_problems.py "$OUT" --video-unseen > "$OUT/gen.txt" 2>&1
  OUT="$OUT" CLASS=video STEPS=regret REGRET_SECONDS=${REGRET_SECONDS:-240} \
    bash "$HERE/on-device-unseen.sh"
fi

if has tiles; then
  # The check step covers the 3-D solver already.
  has check || OUT="$OUT" CLASS=video STEPS=check CHECK_SOLVERS=ConvCutlass3dFwd \
    bash "$HERE/on-device-unseen.sh"
  mkdir -p "$OUT/tiles"
  cp targets/sm_90_132/sm_90_132.HIP.fdb.txt targets/sm_90_132/sm_90_132.db.txt "$OUT/tiles/"
  timeout "${FIND_SECONDS:-240}" out/kiln-tools find --device cuda:0 --force \
    --problems ci/problems/video_grid.txt --db-dir "$OUT/tiles" \
    --log "$OUT/tiles/find-log.tsv" > "$OUT/tiles/run.txt" 2>&1
  echo "exit $?" >> "$OUT/tiles/run.txt"
  rm -f "$OUT/tiles/sm_90_132.HIP.fdb.txt" "$OUT/tiles/sm_90_132.db.txt"
  tail -n 3 "$OUT/tiles/run.txt"
fi

if has grouped; then
  mkdir -p "$OUT/grouped"
  OUT="$OUT/grouped" CLASS=grouped STEPS=find FIND_SECONDS=${FIND_SECONDS:-240} \
    FIND_FLAGS="${FIND_FLAGS:---refresh}" bash "$HERE/on-device-unseen.sh"
fi

if has mma-grouped; then
  # The listed problems ConvMmaGroupedFwd applies to (C/groups = K/groups of 4, 8, 16 or 24
  # channels, C a multiple of 8, 2-D NHWC FP16/BF16): the grouped grid's and the detector's
  # dense 16-channel layers. After a change to its kernel every solver is measured again there.
  mkdir -p "$OUT/mma-grouped"
  cat ci/problems/*.txt | grep -v '^#' | grep -E -- '-NHWC-NHWC-NHWC-(FP16|BF16)-' | awk -F- '{
      g = 1; if (match($0, /_g[0-9]+/)) g = substr($0, RSTART + 2, RLENGTH - 2) + 0
      c = $1 + 0; k = $5 + 0; w = c / g
      if (NF >= 16 && $4 ~ /^[0-9]+x[0-9]+$/ && c % g == 0 && k % g == 0 && c / g == k / g \
          && c % 8 == 0 && (w == 4 || w == 8 || w == 16 || w == 24)) print }' | sort -u \
    > "$OUT/mma-grouped/problems.txt"
  OUT="$OUT/mma-grouped" CLASS=grouped STEPS=find FIND_SECONDS=${FIND_SECONDS:-240} \
    FIND_FLAGS="${FIND_FLAGS:---force}" FIND_PROBLEMS="$OUT/mma-grouped/problems.txt" \
    bash "$HERE/on-device-unseen.sh"
  rm -f "$OUT"/mma-grouped/db/sm_90_132.*
fi

if has refresh; then
  mkdir -p "$OUT/refresh"
  cp targets/sm_90_132/sm_90_132.HIP.fdb.txt targets/sm_90_132/sm_90_132.db.txt "$OUT/refresh/"
  gunzip -kf out/kiln-tools.gz && chmod +x out/kiln-tools
  timeout "${REFRESH_SECONDS:-500}" out/kiln-tools find --device cuda:0 --refresh \
    --problems ci/problems/*.txt ${REFRESH_FILTER---type FP32 --layout NCHW} --db-dir "$OUT/refresh" \
    --log "$OUT/refresh/find-log.tsv" > "$OUT/refresh/run.txt" 2>&1
  echo "exit $?" >> "$OUT/refresh/run.txt"
  # The DBs are copies; only the log is needed back.
  rm -f "$OUT/refresh/sm_90_132.HIP.fdb.txt" "$OUT/refresh/sm_90_132.db.txt"
  tail -n 3 "$OUT/refresh/run.txt"
fi

if has profile; then
  gunzip -kf out/kiln.gz && chmod +x out/kiln
  for n in 1 32; do
    out/kiln net run resnet50 --random-weights --batch "$n" --profile --verbose \
      > "$OUT/profile-resnet50-$n.txt" 2>&1
    echo "exit $?" >> "$OUT/profile-resnet50-$n.txt"
  done
  grep -h "^profile" "$OUT"/profile-resnet50-*.txt
  # ResNet-50's 1x1 layers at N=32, plain and as the network fuses them (what the epilogue costs).
  for key in 64-56-56-1x1-256-56-56-32 256-56-56-1x1-64-56-56-32 128-28-28-1x1-512-28-28-32 \
    256-14-14-1x1-1024-14-14-32 512-7-7-1x1-2048-7-7-32 64-56-56-3x3-64-56-56-32; do
    pad=0x0; [[ $key == *3x3* ]] && pad=1x1
    for fusion in "" "+scale+bias+relu" "+scale+bias+add+relu"; do
      k="$key-$pad-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F$fusion"
      r=$(out/kiln run "$k" --repeats 50 2>&1)
      printf '%s\t%s\t%s\n' "$k" "$(grep -oE "Conv[A-Za-z0-9]+" <<<"$r" | head -1)" \
        "$(grep -oE "[0-9.]+ ms GPU-only" <<<"$r" | head -1)"
    done
  done > "$OUT/epilogue-cost.tsv" 2>&1
fi

if has ncu; then
  gunzip -kf out/kiln.gz && chmod +x out/kiln
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  for key in ${NCU_KEYS:-128-56-56-3x3-128-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F_g32 \
    256-56-56-3x3-256-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F_g32 \
    320-14-14-3x3-320-14-14-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F_g20}; do
    "$NCU" --clock-control none --launch-count 1 --kernel-name regex:"${NCU_KERNEL:-kiln_mma_grouped}" \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats \
      --section Occupancy --section WarpStateStats --section SchedulerStats \
      out/kiln run "$key" --repeats 1 ${NCU_RUN_FLAGS:-} > "$OUT/ncu-$key.txt" 2>&1
    echo "exit $?" >> "$OUT/ncu-$key.txt"
  done
  tail -n 2 "$OUT"/ncu-*.txt
fi

if has compare; then
  mkdir -p "$OUT/video" "$OUT/nchw" "$OUT/nchw-grouped" "$OUT/ncdhw"
  part() { [[ " ${PARTS:-video nchw nchw-grouped ncdhw} " == *" $1 "* ]]; }
  # The video layers at N=32 (a 3-D key's tenth field), the first VIDEO_LAYERS of them: each
  # `kiln run` checks against a CPU reference, which for a 3-D layer takes seconds.
  python3 ci/gen_problems.py "$OUT/video" --video-unseen > "$OUT/video/gen.txt" 2>&1
  if part video; then
    grep -E '^([^-]*-){9}32-' "$OUT/video/video.txt" | head -n "${VIDEO_LAYERS:-40}" \
      > "$OUT/video/keys.txt"
    v="$OUT/video"
    OUT="$v" KEYS="$v/keys.txt" STEPS=unseen BUILDS="${COMPARE_BUILDS:-kiln-old kiln}" \
      bash "$HERE/on-device-unseen.sh"
  fi
  if part nchw; then
    grep -- "-NCHW-FP32-F" ci/problems/resnet50.txt > "$OUT/nchw/keys.txt"
    r="$OUT/nchw"
    OUT="$r" KEYS="$r/keys.txt" STEPS=unseen BUILDS="${COMPARE_BUILDS:-kiln-old kiln}" \
      bash "$HERE/on-device-unseen.sh"
  fi
  if part nchw-grouped; then
    g="$OUT/nchw-grouped"
    python3 ci/gen_problems.py "$g" --grouped-unseen > "$g/gen.txt" 2>&1
    python3 ci/gen_problems.py "$g" --depthwise-unseen >> "$g/gen.txt" 2>&1
    # The same layers at N=1 (the key's eighth field) as FP32 NCHW.
    cat "$g/grouped.txt" "$g/depthwise.txt" | grep -E '^([^-]*-){7}1-' |
      sed 's/-NHWC-NHWC-NHWC-FP16-F/-NCHW-FP32-F/' > "$g/keys.txt"
    # With NCHW_DW32=1, the depthwise layers at N=32 too.
    [ "${NCHW_DW32:-0}" = 1 ] && grep -E '^([^-]*-){7}32-' "$g/depthwise.txt" |
      sed 's/-NHWC-NHWC-NHWC-FP16-F/-NCHW-FP32-F/' >> "$g/keys.txt"
    OUT="$g" KEYS="$g/keys.txt" STEPS=unseen BUILDS="${COMPARE_BUILDS:-kiln-old kiln}" \
      bash "$HERE/on-device-unseen.sh"
  fi
  if [[ " ${PARTS:-} " == *" grouped "* ]]; then
    mkdir -p "$OUT/grouped"
    OUT="$OUT/grouped" CLASS=grouped STEPS=unseen BUILDS="${COMPARE_BUILDS:-kiln-old kiln}" \
      bash "$HERE/on-device-unseen.sh"
  fi
  if part ncdhw; then
    # The video layers at N=1 (a 3-D key's tenth field) as FP32 NCDHW.
    grep -E '^([^-]*-){9}1-' "$OUT/video/video.txt" |
      sed 's/-NDHWC-NDHWC-NDHWC-FP16-F/-NCDHW-FP32-F/' > "$OUT/ncdhw/keys.txt"
    d="$OUT/ncdhw"
    OUT="$d" KEYS="$d/keys.txt" STEPS=unseen BUILDS=kiln \
      bash "$HERE/on-device-unseen.sh"
  fi
fi
