#!/usr/bin/env bash
# Call 33: 192x64 tiles for the four wgmma solvers: selftest, then find --force over the
# ResNet-50 N=32 layers where 192-row, 64-column tiles fill whole waves.
P=$(cd "$(dirname "$0")" && pwd)
[ -x $P/kiln-tools ] || { gunzip -k $P/kiln-tools.gz; chmod +x $P/kiln-tools; }
R=/tmp/r33; rm -rf $R; mkdir -p $R/db
cp $P/db/* $R/db/
timeout 200 $P/kiln selftest --solver ConvWgmmaGemm1x1Fwd --solver ConvWgmmaImplicitGemmFwd --solver ConvWgmmaGemm1x1Tf32Fwd --solver ConvWgmmaImplicitGemmTf32Fwd > $R/selftest.txt 2>&1; echo "exit $?" >> $R/selftest.txt
tail -7 $R/selftest.txt
timeout 250 $P/kiln-tools find --device cuda:0 --force --tf32 --problems $P/k192.txt --db-dir $R/db --log $R/new.tsv > $R/find.txt 2>&1; echo "exit $?" >> $R/find.txt
tr '\r' '\n' < $R/find.txt | grep -a "exit\|problems\|records" | tail -4
tar -C /tmp -czf $OUT/r33.tgz r33
