#!/usr/bin/env bash
# Call 29: the wgmma kernels run N-fastest tile order where A is past 16 MiB: selftest of the
# four solvers, then find --force over ResNet-50's N=32 NHWC layers (FP16, BF16, FP32 with TF32).
P=$(cd "$(dirname "$0")" && pwd)
[ -x $P/kiln-tools ] || { gunzip -k $P/kiln-tools.gz; chmod +x $P/kiln-tools; }
R=/tmp/r29; rm -rf $R; mkdir -p $R/db
cp $P/db/* $R/db/; cp $P/../benches/h100-find/find-log.tsv $R/db/
timeout 200 $P/kiln selftest --solver ConvWgmmaGemm1x1Fwd --solver ConvWgmmaImplicitGemmFwd --solver ConvWgmmaGemm1x1Tf32Fwd --solver ConvWgmmaImplicitGemmTf32Fwd > $R/selftest.txt 2>&1; echo "exit $?" >> $R/selftest.txt
tail -7 $R/selftest.txt
timeout 330 $P/kiln-tools find --device cuda:0 --force --tf32 --problems $P/resnet-n32-nhwc.txt --db-dir $R/db --log $R/db/find-log.tsv > $R/find.txt 2>&1; echo "exit $?" >> $R/find.txt
tr '\r' '\n' < $R/find.txt | grep -a "exit\|problems\|records" | tail -4
n=$(wc -l < $P/../benches/h100-find/find-log.tsv); tail -n +$((n+1)) $R/db/find-log.tsv > $R/new.tsv
rm $R/db/find-log.tsv
tar -C /tmp -czf $OUT/r29.tgz r29
