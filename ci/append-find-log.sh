#!/usr/bin/env bash
# Appends a find run's log (the find-log.tsv a GPU run wrote) to the committed, compressed log
# of the sm_90_132 measurements that `kiln-tools regret` and tests/measured_sm90.rs read.
#   bash ci/append-find-log.sh <out>/find-log.tsv [data/find-logs/sm_90_132.tsv.zst]
set -euo pipefail
new=${1:?usage: append-find-log.sh NEW.tsv [LOG.tsv.zst]}
log=${2:-data/find-logs/sm_90_132.tsv.zst}
tmp=$(mktemp "$log.XXXXXX")
trap 'rm -f "$tmp"' EXIT
{ zstd -dcq "$log"; cat "$new"; } | zstd -19 -q -f -o "$tmp"
mv "$tmp" "$log"
trap - EXIT
echo "$log: $(zstd -dcq "$log" | wc -l) lines"
