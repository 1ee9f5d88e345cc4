#!/usr/bin/env bash
# Call 46b: 96-, 160- and 192-column tiles. find --force over the list problems where they apply
# (into the DBs) and the held-out ones (into a scratch DB).
P=$(cd "$(dirname "$0")" && pwd)
[ -x $P/kiln-tools ] || { gunzip -k $P/kiln-tools.gz; chmod +x $P/kiln-tools; }
R=/tmp/r46b; rm -rf $R; mkdir -p $R/db $R/scratch
cp $P/db/* $R/db/
$P/kiln-tools find --device cuda:0 --force --problems $P/between-train.txt --db-dir $R/db --log $R/list-log.tsv > $R/find-list.txt 2>&1; echo "exit $?" >> $R/find-list.txt
tr '\r' '\n' < $R/find-list.txt | grep -a "exit\|problems\|records" | tail -3
tar -C /tmp -czf $OUT/r46b.tgz r46b
$P/kiln-tools find --device cuda:0 --force --problems $P/between-heldout.txt --db-dir $R/scratch --log $R/heldout-log.tsv > $R/find-heldout.txt 2>&1; echo "exit $?" >> $R/find-heldout.txt
tr '\r' '\n' < $R/find-heldout.txt | grep -a "exit\|problems\|records" | tail -3
tar -C /tmp -czf $OUT/r46b.tgz r46b
