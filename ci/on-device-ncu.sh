#!/usr/bin/env bash
# On a machine with the GPU: Nsight Compute's view of single kiln launches (where a kernel's
# time goes: memory and compute throughput against the peaks, warp stall reasons).
# Expects out/kiln.gz; NCU_KEYS lists `key|kernel-regex` pairs; writes $OUT/ncu-<i>.txt.
set -u
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
gunzip -kf out/kiln.gz && chmod +x out/kiln
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "no ncu on this machine" >&2; exit 1; }
i=0
for pair in ${NCU_KEYS:?NCU_KEYS lists key|kernel-regex pairs}; do
  key=${pair%%|*} kernel=${pair#*|}
  i=$((i + 1))
  {
    echo "# $key ($kernel)"
    timeout 120 "$NCU" --clock-control none -k "regex:$kernel" --launch-skip 3 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section SchedulerStats --section LaunchStats --section Occupancy ${NCU_EXTRA:-} \
      out/kiln run "$key" --repeats 5 2>&1
    echo "exit $?"
  } > "$OUT/ncu-$i.txt" 2>&1
done
