#!/usr/bin/env bash
# Call 44a: narrow steps (ConvWgmmaImplicitGemmNarrowFwd, 32- and 64-byte swizzled rows).
# selftest of every wgmma solver (the tensor-map encoder changed for all), memcheck of the new one.
P=$(cd "$(dirname "$0")" && pwd)
[ -x $P/kiln ] || { gunzip -k $P/kiln.gz; chmod +x $P/kiln; }
R=/tmp/r44a; rm -rf $R; mkdir -p $R
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for s in ConvWgmmaImplicitGemmNarrowFwd ConvWgmmaImplicitGemmFwd ConvWgmmaGemm1x1Fwd ConvWgmmaFirstLayerFwd ConvWgmmaImplicitGemmTf32Fwd; do
  timeout 120 $P/kiln selftest --solver $s > $R/selftest-$s.txt 2>&1; echo "exit $?" >> $R/selftest-$s.txt
  echo "== selftest $s"; grep -a "FAIL" $R/selftest-$s.txt | head -5; tail -3 $R/selftest-$s.txt
done
tar -C /tmp -czf $OUT/r44a.tgz r44a
timeout 150 $SAN --tool memcheck --leak-check full $P/kiln selftest --solver ConvWgmmaImplicitGemmNarrowFwd > $R/memcheck-narrow.txt 2>&1; echo "exit $?" >> $R/memcheck-narrow.txt
echo "== memcheck"; grep -a "FAIL" $R/memcheck-narrow.txt | head -5; tail -4 $R/memcheck-narrow.txt
tar -C /tmp -czf $OUT/r44a.tgz r44a
