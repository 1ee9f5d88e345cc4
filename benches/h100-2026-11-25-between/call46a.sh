#!/usr/bin/env bash
# Call 46a: 96-, 160- and 192-column tiles. selftest of the wgmma FP16/BF16 solvers, memcheck of both.
P=$(cd "$(dirname "$0")" && pwd)
[ -x $P/kiln ] || { gunzip -k $P/kiln.gz; chmod +x $P/kiln; }
R=/tmp/r46a; rm -rf $R; mkdir -p $R
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for s in ConvWgmmaGemm1x1Fwd ConvWgmmaImplicitGemmFwd ConvWgmmaImplicitGemmNarrowFwd; do
  timeout 120 $P/kiln selftest --solver $s > $R/selftest-$s.txt 2>&1; echo "exit $?" >> $R/selftest-$s.txt
  echo "== selftest $s"; grep -a "FAIL" $R/selftest-$s.txt | head -5; tail -3 $R/selftest-$s.txt
done
tar -C /tmp -czf $OUT/r46a.tgz r46a
for s in ConvWgmmaGemm1x1Fwd ConvWgmmaImplicitGemmFwd; do
  timeout 200 $SAN --tool memcheck --leak-check full $P/kiln selftest --solver $s > $R/memcheck-$s.txt 2>&1; echo "exit $?" >> $R/memcheck-$s.txt
  echo "== memcheck $s"; grep -a "FAIL" $R/memcheck-$s.txt | head -5; tail -4 $R/memcheck-$s.txt
done
tar -C /tmp -czf $OUT/r46a.tgz r46a
