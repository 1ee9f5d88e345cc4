#!/usr/bin/env bash
# Call 31: 256x64 tiles for the im2col wgmma kernels (FP16/BF16 4 stages, TF32 3): selftest,
# then find --force over the 64-output-channel layers at batch 32 (ResNet-50, VAE decoder).
P=$(cd "$(dirname "$0")" && pwd)
[ -x $P/kiln-tools ] || { gunzip -k $P/kiln-tools.gz; chmod +x $P/kiln-tools; }
R=/tmp/r31; rm -rf $R; mkdir -p $R/db
cp $P/db/* $R/db/
timeout 150 $P/kiln selftest --solver ConvWgmmaImplicitGemmFwd --solver ConvWgmmaImplicitGemmTf32Fwd > $R/selftest.txt 2>&1; echo "exit $?" >> $R/selftest.txt
tail -5 $R/selftest.txt
timeout 380 $P/kiln-tools find --device cuda:0 --force --tf32 --problems $P/k64.txt --db-dir $R/db --log $R/new.tsv > $R/find.txt 2>&1; echo "exit $?" >> $R/find.txt
tr '\r' '\n' < $R/find.txt | grep -a "exit\|problems\|records" | tail -4
tar -C /tmp -czf $OUT/r31.tgz r31
