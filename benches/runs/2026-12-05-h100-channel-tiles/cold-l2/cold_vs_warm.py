# Compares a cold find log (argument) with the committed warm log (run from the repository
# root): per problem, the warm pick, the cold pick, and the cold time of each.
#   python3 benches/runs/2026-12-05-h100-channel-tiles/cold-l2/cold_vs_warm.py <cold find-log.tsv>
import sys, collections, subprocess
cold_path = sys.argv[1]
warm_text = subprocess.run(['zstd','-dcq','data/find-logs/sm_90_132.tsv.zst'],capture_output=True,text=True).stdout
def load(lines):
    d = collections.defaultdict(dict)
    for l in lines:
        f = l.rstrip('\n').split('\t')
        if len(f) != 6 or f[5] != 'true': continue
        d[f[0]][(f[1], f[2])] = float(f[3])
    return d
cold = load(open(cold_path))
warm = load(warm_text.splitlines())
tw = tc = 0
for k in cold:
    c = cold[k]; w = {v:t for v,t in warm.get(k,{}).items() if v in c}
    if not w: continue
    wp = min(w, key=w.get); cp = min(c, key=c.get)
    tw += c[wp]; tc += c[cp]
    flag = '' if wp == cp else '  <-- differs'
    print(f"{k[:50]:50s} warm {w[wp]*1e3:7.2f} cold-of-warm-pick {c[wp]*1e3:7.2f} cold-best {c[cp]*1e3:7.2f} {wp[0][:22]}:{wp[1]} -> {cp[0][:22]}:{cp[1]}{flag}")
print(f"sum over keys: cold time of warm picks {tw*1e3:.2f} us, of cold picks {tc*1e3:.2f} us ({(tc/tw-1)*100:+.1f}%)")
