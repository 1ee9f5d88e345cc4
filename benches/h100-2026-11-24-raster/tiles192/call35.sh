#!/usr/bin/env bash
# Call 35: find --force over the list problems whose fallback pick (a 256x64 or 192x64 config,
# added after they were measured) the find log never timed.
P=$(cd "$(dirname "$0")" && pwd)
[ -x $P/kiln-tools ] || { gunzip -k $P/kiln-tools.gz; chmod +x $P/kiln-tools; }
R=/tmp/r35; rm -rf $R; mkdir -p $R/db
cp $P/db/* $R/db/
timeout 420 $P/kiln-tools find --device cuda:0 --force --tf32 --problems $P/untimed.txt --db-dir $R/db --log $R/new.tsv > $R/find.txt 2>&1; echo "exit $?" >> $R/find.txt
tr '\r' '\n' < $R/find.txt | grep -a "exit\|problems\|records" | tail -4
tar -C /tmp -czf $OUT/r35.tgz r35
