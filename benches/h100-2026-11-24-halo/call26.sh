#!/usr/bin/env bash
# Call 26: the halo solvers (ConvWgmmaHaloFwd, ConvWgmmaHaloTf32Fwd): selftest, memcheck, then
# find --force over ResNet-50's stride-1 3x3 layers (N=1 and 32; FP16, BF16, FP32 with TF32).
P=$(cd "$(dirname "$0")" && pwd)
[ -x $P/kiln-tools ] || { gunzip -k $P/kiln-tools.gz; chmod +x $P/kiln-tools; }
R=/tmp/r26; rm -rf $R; mkdir -p $R/db
cp $P/db/* $R/db/; cp $P/../benches/h100-find/find-log.tsv $R/db/
timeout 120 $P/kiln selftest --solver ConvWgmmaHaloFwd --solver ConvWgmmaHaloTf32Fwd > $R/selftest.txt 2>&1; echo "exit $?" >> $R/selftest.txt
tail -5 $R/selftest.txt
grep -i "fail\|error\|mismatch" $R/selftest.txt | head -20
if grep -q "exit 0" $R/selftest.txt; then
  timeout 200 $P/kiln-tools find --device cuda:0 --force --tf32 --problems $P/halo-problems.txt --db-dir $R/db --log $R/db/find-log.tsv > $R/find.txt 2>&1; echo "exit $?" >> $R/find.txt
  tr '\r' '\n' < $R/find.txt | grep -a "exit\|problems\|records" | tail -4
  tail -n 2000 $R/db/find-log.tsv | grep -a "Halo\|ImplicitGemm" | grep -a "NHWC" > $R/halo-lines.tsv
  SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  timeout 150 $SAN --tool memcheck --leak-check full $P/kiln selftest --solver ConvWgmmaHaloFwd > $R/memcheck.txt 2>&1; echo "exit $?" >> $R/memcheck.txt
  tail -4 $R/memcheck.txt
fi
gzip $R/db/find-log.tsv
tar -C /tmp -czf $OUT/r26.tgz r26
