#!/usr/bin/env bash
# Call 27: find --force over the other lists' stride-1 3x3 NHWC layers (VAE decoder, YOLO,
# UNet-like): where does the halo kernel win?
P=$(cd "$(dirname "$0")" && pwd)
[ -x $P/kiln-tools ] || { gunzip -k $P/kiln-tools.gz; chmod +x $P/kiln-tools; }
R=/tmp/r27; rm -rf $R; mkdir -p $R/db
cp $P/db/* $R/db/; cp $P/../benches/h100-find/find-log.tsv $R/db/
timeout 480 $P/kiln-tools find --device cuda:0 --force --tf32 --problems $P/halo-lists.txt --db-dir $R/db --log $R/db/find-log.tsv > $R/find.txt 2>&1; echo "exit $?" >> $R/find.txt
tr '\r' '\n' < $R/find.txt | grep -a "exit\|problems\|records" | tail -4
tail -n 8000 $R/db/find-log.tsv > $R/new.tsv
tar -C /tmp -czf $OUT/r27.tgz r27
