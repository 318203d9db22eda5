#!/usr/bin/env bash
# Neighbour lists longer than GV_CHUNK (4096 arcs), split between the walk of a batch of
# vertices (the list's pieces in its first and last line of the edge array, lines shared
# with the lists around it) and the chunk kernel (the whole lines between; graph_kern.h,
# gv_heavy_cut): every arc is read exactly once whatever the list's place relative to
# the line boundaries. Graphs whose hub lists start and end exactly on a line boundary
# (of every line size at once: multiples of 16384 arcs), one arc before or after one,
# or inside a line; hubs at consecutive vertex ids, at the first vertex (arc 0) and at
# the last vertex id; a graph that is one hub; the same with 8-byte ids (half the arcs
# per line); a Kronecker graph. Every arc is a tree arc to a vertex with no other in-arc,
# so an arc not walked changes the components and the BFS levels; CC's edge accesses
# through bam must equal the arcs at every line size, and so must a BFS's from the root
# (every vertex reached, every list read once), in every frontier form.
. "$(dirname "$0")/lib.sh"
bad() { fail=$((fail + 1)); echo "FAIL: $1"; }

# A SNAP edge list from a layout: hD a vertex of degree D; @O vertices of degree <= 7
# so that the next list starts at arc O; eO:D a vertex of degree D whose list ends at
# arc O; fD one vertex of degree D; L: leaves first (the last vertex is the layout's
# last). The layout's vertices take their children breadth-first (each arc goes to the
# next vertex without a parent: the layout's, then leaves of degree 0). Prints the
# root vertex and the arc count on stderr.
cat >"$W/gen.py" <<'PY'
import sys
spec = sys.argv[1].split()
degs, pos = [], 0
def filler(g):
    global pos
    assert g >= 0, (g, pos)
    while g > 0:
        d = min(7, g); degs.append(d); pos += d; g -= d
for it in spec:
    if it == 'L':
        continue
    k, v = it[0], it[1:]
    if k in 'hf':
        degs.append(int(v)); pos += int(v)
    elif k == '@':
        filler(int(v) - pos)
    elif k == 'e':
        o, d = map(int, v.split(':'))
        filler(o - d - pos); degs.append(d); pos += d
K, m = len(degs), sum(degs)
first = m + 1 - K if 'L' in spec else 0
def vid(t):
    return first + t if t < K else (t - K if 'L' in spec else t)
out, nxt = [], 1
for i, d in enumerate(degs):
    for _ in range(d):
        out.append(f"{first + i} {vid(nxt)}\n"); nxt += 1
sys.stdout.write(''.join(out))
sys.stderr.write(f"{first} {m}\n")
PY
layout() { # name, spec, import options...
  local name=$1 spec=$2; shift 2
  python3 "$W/gen.py" "$spec" >"$W/$name.txt" 2>"$W/$name.root"
  "$BAM" graph import "$W/$name.txt" --format=snap -o "$W/$name.bcsr" --quiet "$@"
  rm -f "$W/$name.txt"
}
arcs() { "$BAM" graph info "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["n_edges"])'; }
# run: description, expected edge accesses (- for any), minimum chunks, command...
# (the command gets --verify --json --quiet --target=cpu; a run over 120 s fails: a
# wrong cut can loop over a wrapped range)
run() {
  local d=$1 want=$2 minch=$3; shift 3
  local r
  r=$(timeout 120 "$@" --verify --json --quiet --target=cpu 2>"$W/err" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["verified"], int(d["edge_accesses"]), int(d["long_list_chunks"]))') || r="error $(head -c 300 "$W/err")"
  read -r v acc ch <<<"$r"
  if [ "$v" = yes ] && { [ "$want" = - ] || [ "$acc" = "$want" ]; } && [ "$ch" -ge "$minch" ] 2>/dev/null; then
    ok "$d (edge accesses $acc, chunks $ch)"
  else
    bad "$d: verified, edge accesses, chunks = '$r' (want yes, ${want/-/any}, >= $minch)"
  fi
}

# hubs: at vertex 0 and arc 0, then two more at consecutive ids (4097, 4095, 16385
# arcs); starting on a boundary (4096: also ending on one at lines up to 16 KiB;
# 16384: exactly one 64 KiB line), one arc after and one before a boundary, inside a
# line; ending on a boundary, one after, one before; 100000 arcs; the last vertex
spec="h4097 h4095 h16385 @32768 h4096 @49152 h16384 @65537 h8193 @98303 h20000 @139264 h5000
      e163840:8192 e180225:4097 e212991:16385 @229376 h100000 f3 h8193 L"
layout hubs "$spec"
layout hubs8 "$spec" --id-bytes 8
layout one "h100000"
"$BAM" graph generate --scale 16 --edge-factor 16 --seed 1 -o "$W/kron16.bcsr" --quiet
for g in hubs hubs8; do
  m=$(arcs "$W/$g.bcsr")
  read -r root m2 <"$W/$g.root"
  [ "$m" = "$m2" ] && ok "$g: $m arcs as laid out" || bad "$g: $m arcs, laid out $m2"
  for ls in 512 1K 2K 4K 16K 64K; do
    run "cc $g, $ls lines" "$m" 1 "$BAM" cc "$W/$g.bcsr" --line-size=$ls
  done
  run "cc $g, 512 B lines, 1 MiB cache" "$m" 1 "$BAM" cc "$W/$g.bcsr" --line-size=512 --cache-size=1M
  run "cc $g, 64 KiB lines, 1 MiB cache" "$m" 1 "$BAM" cc "$W/$g.bcsr" --line-size=64K --cache-size=1M
  for ls in 512 64K; do
    for f in "--frontier=scan" "--frontier=queue"; do
      run "bfs $g from the root, $ls lines, $f" "$m" 1 "$BAM" bfs "$W/$g.bcsr" --source="$root" --line-size=$ls $f
    done
    # (edge ranges hold about m / (128 x online CPUs) arcs: fewer than a chunk here, so
    # no list is queued; still every arc once)
    run "bfs $g from the root, $ls lines, --frontier=scan --scan-ranges=edges" "$m" 0 \
      "$BAM" bfs "$W/$g.bcsr" --source="$root" --line-size=$ls --frontier=scan --scan-ranges=edges
  done
  run "bfs $g, 3 sources, scan" - 0 "$BAM" bfs "$W/$g.bcsr" --sources=3 --frontier=scan
done
for ls in 512 4K 64K; do
  run "cc one hub of 100000 arcs, $ls lines" 100000 1 "$BAM" cc "$W/one.bcsr" --line-size=$ls
done
run "bfs one hub of 100000 arcs, 512 B lines" 100000 1 "$BAM" bfs "$W/one.bcsr" --source=0 --line-size=512 --frontier=scan
m=$(arcs "$W/kron16.bcsr")
for ls in 512 64K; do
  run "cc kron16, $ls lines" "$m" 1 "$BAM" cc "$W/kron16.bcsr" --line-size=$ls
done
for f in "--frontier=scan" "--frontier=queue" "--frontier=scan --scan-ranges=edges"; do
  run "bfs kron16, 3 sources, $f" - 0 "$BAM" bfs "$W/kron16.bcsr" --sources=3 $f
done
test_summary "long lists"
