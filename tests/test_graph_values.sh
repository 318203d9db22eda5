#!/usr/bin/env bash
# Results a user can check (CPU target): bfs --json lists the sources it ran with the
# vertices and levels each reached, and --values-out writes the per-vertex levels (bfs)
# and component labels (cc); all compared with an independent BFS / union-find in
# Python over the arc list the graph was imported from.
. "$(dirname "$0")/lib.sh"
bad() { fail=$((fail + 1)); echo "FAIL: $1"; sed 's/^/  | /' "$W/err" 2>/dev/null | tail -10; }
# a directed graph of 3000 vertices: a few components, some vertices unreachable
python3 - "$W/g.arcs" <<'PY'
import random, sys
random.seed(5)
n = 3000
with open(sys.argv[1], "w") as f:
    for v in range(n):
        f.write("%d\t%d\n" % (v, v))  # every id present (self-loops are dropped or kept: harmless)
        if v % 1000 < 900:            # the last 100 of each thousand: leaves only
            for _ in range(3):
                f.write("%d\t%d\n" % (v, (v // 1000) * 1000 + random.randrange(1000)))
PY
"$BAM" graph import "$W/g.arcs" -o "$W/g.bam" -q 2>"$W/err" || bad "import"
for mode in bam host; do
  rc=0
  "$BAM" bfs "$W/g.bam" --target=cpu --mode=$mode --sources=4 --seed=9 --json --quiet --values-out="$W/lv.txt" >"$W/out" 2>"$W/err" || rc=$?
  [ "$rc" -eq 0 ] || bad "bfs --mode=$mode (exit $rc)"
  if python3 - "$W/g.arcs" "$W/out" "$W/lv.txt" <<'PY'
import json, sys
from collections import deque
adj = {}
n = 0
for line in open(sys.argv[1]):
    a, b = map(int, line.split())
    n = max(n, a + 1, b + 1)
    if a != b:
        adj.setdefault(a, []).append(b)
d = json.load(open(sys.argv[2]))
src = d["sources"]
assert len(src) == d["runs"] == 4, (len(src), d["runs"])
def bfs(s):
    lv = [-1] * n; lv[s] = 0; q = deque([s])
    while q:
        v = q.popleft()
        for w in adj.get(v, []):
            if lv[w] < 0:
                lv[w] = lv[v] + 1; q.append(w)
    return lv
for e in src:
    lv = bfs(e["vertex"])
    reached = sum(1 for x in lv if x >= 0)
    assert e["reached"] == reached, (e, reached)
    assert e["levels"] == max(lv) + 1, (e, max(lv) + 1)
assert max(e["levels"] for e in src) == d["max_levels"]
got = [int(x) for x in open(sys.argv[3])]
assert got == bfs(src[0]["vertex"]), "levels file differs"
PY
  then ok "bfs --mode=$mode: sources, reached counts, levels and the levels file equal the reference"
  else bad "bfs --mode=$mode: not equal to the reference"; fi
done
rc=0
"$BAM" cc "$W/g.bam" --target=cpu --quiet --values-out="$W/cc.txt" --json >"$W/out" 2>"$W/err" || rc=$?
[ "$rc" -eq 0 ] || bad "cc (exit $rc)"
if python3 - "$W/g.arcs" "$W/cc.txt" "$W/out" <<'PY'
import json, sys
p = {}
def find(x):
    while p.get(x, x) != x:
        p[x] = p.get(p[x], p[x]); x = p[x]
    return x
n = 0
for line in open(sys.argv[1]):
    a, b = map(int, line.split())
    n = max(n, a + 1, b + 1)
    ra, rb = find(a), find(b)
    if ra != rb:
        p[max(ra, rb)] = min(ra, rb)
ref = [find(v) for v in range(n)]
got = [int(x) for x in open(sys.argv[2])]
assert got == ref, "labels differ"
assert json.load(open(sys.argv[3]))["components"] == len(set(ref))
PY
then ok "cc: the labels file equals the reference"; else bad "cc: labels not equal to the reference"; fi
rc=0; "$BAM" bfs "$W/g.bam" --target=cpu --quiet --values-out="$W/g.bam" >"$W/out" 2>"$W/err" || rc=$?
if [ "$rc" -eq 2 ] && grep -q "is the graph file" "$W/err"; then ok "--values-out onto the graph file: refused"; else bad "--values-out onto the graph file (exit $rc)"; fi
test_summary "graph values"
