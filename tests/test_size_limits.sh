#!/usr/bin/env bash
# Sizes far above the machine's memory, on the CPU target: `bam bench --array` with
# --cache-size=1T, and emulated DRAM media of 1 TiB (emu:size=1T, or the size= an array
# asks for), or a cache and media that fit only one at a time, each print one line
# naming the size asked and the memory available and exit non-zero, within seconds
# (nothing is allocated); a cache larger than the array is capped; `bam bfs`/`bam cc` cap the cache
# at the graph's size instead, and refuse a graph whose arrays do not fit in host memory
# before loading it; `bam bfs` refuses a huge graph without arcs (no source) from its
# header, one without a vertex of out-degree >= 2 from its offsets, and a --source past
# its vertices from its header. The same commands with sizes that fit still run.
. "$(dirname "$0")/lib.sh"
bad() { fail=$((fail + 1)); echo "FAIL: $1"; sed 's/^/  | /' "$W/out" | tail -20; }

# refused: description, text the one line must hold, command args...
refused() {
  local d=$1 text=$2; shift 2
  local rc=0 t0 t1
  t0=$(date +%s%N)
  "$BAM" "$@" >"$W/out" 2>&1 || rc=$?
  t1=$(date +%s%N)
  local ms=$(((t1 - t0) / 1000000)) lines
  lines=$(wc -l <"$W/out")
  if [ "$rc" -ne 0 ] && [ "$lines" -eq 1 ] && grep -qF -- "$text" "$W/out" && grep -q "available" "$W/out" &&
    [ "$ms" -lt 5000 ]; then
    ok "$d: exit $rc in $ms ms: $(cat "$W/out")"
  else
    bad "$d (exit $rc, $lines lines, $ms ms; expected non-zero, 1 line with '$text' and 'available', < 5 s)"
  fi
}

# runs: description, command args... (must exit 0)
runs() {
  local d=$1; shift
  if "$@" >"$W/out" 2>&1; then ok "$d"; else bad "$d (exit non-zero)"; fi
}

"$BAM" graph generate --scale 10 --edge-factor 8 --seed 3 -o "$W/k10.bcsr" --quiet

# (an array as large, on media in a file, so the cache is not capped below 1 TiB; refused
# before the media file is made)
refused "bench --array --cache-size=1T" "--cache-size=1T" bench --array --target=cpu --cache-size=1T --size=1T \
  --backend=emu:media=file,path="$W/big.img"
if [ -e "$W/big.img" ]; then bad "bench --array --cache-size=1T left its media file"; else ok "bench --array --cache-size=1T: no media file made"; fi
# bfs/cc cap the cache at what the graph's arrays hold (one line more each): a huge
# --cache-size on a small graph runs, and says so
capped() {
  local d=$1; shift
  if "$BAM" "$@" >"$W/out" 2>&1 && grep -q "capped at what the arrays hold" "$W/out" && grep -q "verified: yes" "$W/out"; then
    ok "$d"
  else
    bad "$d (expected exit 0, the cap noted, verified)"
  fi
}
capped "bfs --cache-size=1T on a small graph: capped" bfs "$W/k10.bcsr" --cache-size=1T --target=cpu --sources=1 --verify
capped "cc --cache-size=1T on a small graph: capped" cc "$W/k10.bcsr" --cache-size=1T --target=cpu --verify
refused "bench --array --size=1T (the emulated media it asks for)" "bytes of DRAM media" \
  bench --array --target=cpu --size=1T --cache-size=1M
# the cache and the media each fit in host memory but not together (each 60% of what the
# program says is available): refused up front, not killed for memory later
avail_gib=$("$BAM" bench --array --target=cpu --size=1T --cache-size=1M 2>&1 | sed -n 's/.* in the \([0-9.]*\) GiB of host memory available.*/\1/p' || true)
if [ -n "$avail_gib" ]; then
  half=$(python3 -c "print(int(float('$avail_gib') * 0.6 * 1024))")M
  refused "bench --array --size=$half --cache-size=$half (each fits, not both)" "together" \
    bench --array --target=cpu --size=$half --cache-size=$half
else
  bad "bench --array --size=1T: no 'GiB of host memory available' to size the next check from"
fi
# --size: whole u64 elements, at least 4096 bytes, said with the rule
for sz in 8 4097; do
  rc=0
  "$BAM" bench --array --target=cpu --size=$sz >"$W/out" 2>&1 || rc=$?
  if [ "$rc" -eq 2 ] && grep -q "a multiple of 8 (u64 elements), at least 4096" "$W/out"; then
    ok "bench --array --size=$sz: refused with the rule, exit 2"
  else
    bad "bench --array --size=$sz (exit $rc; expected 2 and the rule)"
  fi
done
# a cache larger than the array is capped at the array's lines (and said so), not taken:
# 4 GiB asked under a 1 GiB address-space cap (where the binary starts under one: not
# under a sanitizer's shadow memory)
acap=:
if (ulimit -v 1048576 && exec "$BAM" --help) >/dev/null 2>&1; then acap="ulimit -v 1048576"; fi
if ($acap && exec "$BAM" bench --array --target=cpu --size=1M --cache-size=4G --threads=2 --steps=100) >"$W/out" 2>&1 &&
  grep -q "cache=1052672 (capped at the array's lines)" "$W/out"; then
  ok "bench --array --size=1M --cache-size=4G: the cache capped at the array's lines (and only that taken)"
else
  bad "bench --array --size=1M --cache-size=4G (expected exit 0 and the cache capped at 1052672 bytes)"
fi
refused "bfs --backend=emu:size=1T" "1099511627776" bfs "$W/k10.bcsr" --backend=emu:size=1T --target=cpu
refused "bench --backend=emu:size=1T" "1099511627776" bench --target=cpu --backend=emu:size=1T --size=16M

# a graph file whose arrays alone are larger than any machine's memory (4 vertices,
# 2^38 arcs: 1 TiB of edges, a sparse file; header and offsets valid, the edge crc left
# 0: nothing reads the edges before the refusal): bfs/cc refuse up front, in every mode
python3 - "$W/huge.bcsr" <<'PY'
import struct, sys, zlib
n, m = 4, 1 << 38
h = bytearray(4096); h[0:8] = b"BAMCSR\0\0"
ob = 8 * (n + 1); eo = (4096 + ob + 4095) // 4096 * 4096; eb = 4 * m
offs = struct.pack("<Q", 0) + struct.pack("<Q", m) * n
struct.pack_into("<IIIIQQQQQQ", h, 8, 1, 0, 4, 0, n, m, 4096, ob, eo, eb)
struct.pack_into("<II", h, 0x48, zlib.crc32(offs), 0)
struct.pack_into("<I", h, 0x14, zlib.crc32(bytes(h)))
with open(sys.argv[1], "wb") as f:
    f.truncate(eo + eb); f.write(h); f.seek(4096); f.write(offs)
PY
# (bam with a small cache: the default, 1/8 of the edges, is refused first, by its own check)
for mode in host "bam --cache-size=1M"; do
  refused "bfs --mode=$mode on a graph larger than memory" "needs about" bfs "$W/huge.bcsr" --mode=$mode --source=0 --target=cpu
  refused "cc --mode=$mode on a graph larger than memory" "needs about" cc "$W/huge.bcsr" --mode=$mode --target=cpu
done

# 2^31 vertices and no arcs (offsets: 16 GiB of zeros in a sparse file, their crc left
# 0): bfs without --source has no vertex of out-degree >= 2 to start from, which the
# header already says. Refused from it, in every mode, with the message of a graph
# whose degrees rule every vertex out, exit 1: before the memory checks and before
# loading the offsets (every mode used to load them first: up to a minute). Address space
# capped at 1 GiB, so a run that loads them fails otherwise (not where the binary cannot
# start under the cap: a sanitizer's shadow memory); `timeout` only guards against a
# hang.
python3 - "$W/nosrc.bcsr" <<'PY'
import struct, sys, zlib
n, m = 1 << 31, 0
h = bytearray(4096); h[0:8] = b"BAMCSR\0\0"
ob = 8 * (n + 1); eo = (4096 + ob + 4095) // 4096 * 4096
struct.pack_into("<IIIIQQQQQQ", h, 8, 1, 0, 4, 0, n, m, 4096, ob, eo, 0)
struct.pack_into("<II", h, 0x48, 0, zlib.crc32(b""))
struct.pack_into("<I", h, 0x14, zlib.crc32(bytes(h)))
with open(sys.argv[1], "wb") as f:
    f.truncate(eo); f.write(h)
PY
cap=:
if (ulimit -v 1048576 && exec "$BAM" --help) >/dev/null 2>&1; then cap="ulimit -v 1048576"; fi
# no_source FILE DESCRIPTION MESSAGE MODE: bfs under the cap exits 1 with MESSAGE alone
no_source() {
  local rc=0
  ($cap && exec timeout 60 "$BAM" bfs "$1" --mode=$4 --target=cpu) >"$W/out" 2>&1 || rc=$?
  if [ "$rc" -eq 1 ] && [ "$(cat "$W/out")" = "$3" ]; then
    ok "bfs --mode=$4, $2: no source, exit 1"
  else
    bad "bfs --mode=$4, $2 (exit $rc; expected 1 and: $3)"
  fi
}
nosrc="bam bfs: no vertex with at least two out-neighbours to start from: give one with --source=V ($W/nosrc.bcsr has 0 arcs)"
for mode in host bam; do
  no_source "$W/nosrc.bcsr" "2^31 vertices without arcs" "$nosrc" $mode
  rc=0
  ($cap && exec timeout 60 "$BAM" bfs "$W/nosrc.bcsr" --mode=$mode --target=cpu --json) >"$W/out" 2>/dev/null || rc=$?
  if [ "$rc" -eq 1 ] && python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["error"]
sys.exit(not (e["exit_status"] == 1 and e["message"] == sys.argv[2]))' "$W/out" "$nosrc"; then
    ok "bfs --mode=$mode --json, 2^31 vertices without arcs: the error object"
  else
    bad "bfs --mode=$mode --json, 2^31 vertices without arcs (exit $rc)"
  fi
done
# 2^28 vertices, 2 arcs (from the last two vertices, one each): no vertex of out-degree
# >= 2, found by reading the offsets (2 GiB, sparse) in pieces, not by loading them
# under the same cap; a --source past the vertices is refused from the header
python3 - "$W/nosrc2.bcsr" <<'PY'
import struct, sys, zlib
n, m = 1 << 28, 2
h = bytearray(4096); h[0:8] = b"BAMCSR\0\0"
ob = 8 * (n + 1); eo = (4096 + ob + 4095) // 4096 * 4096
struct.pack_into("<IIIIQQQQQQ", h, 8, 1, 0, 4, 0, n, m, 4096, ob, eo, 4 * m)
edges = struct.pack("<II", n - 1, n - 2)
struct.pack_into("<II", h, 0x48, 0, zlib.crc32(edges))
struct.pack_into("<I", h, 0x14, zlib.crc32(bytes(h)))
with open(sys.argv[1], "wb") as f:
    f.truncate(eo + 4096); f.write(h)
    f.seek(4096 + 8 * (n - 1)); f.write(struct.pack("<QQ", 1, 2))
    f.seek(eo); f.write(edges)
PY
nosrc2="bam bfs: no vertex with at least two out-neighbours to start from: give one with --source=V (no vertex of $W/nosrc2.bcsr has more than one out-arc)"
for mode in host bam; do
  no_source "$W/nosrc2.bcsr" "2^28 vertices, 2 arcs of different vertices" "$nosrc2" $mode
done
rc=0
($cap && exec timeout 60 "$BAM" bfs "$W/nosrc2.bcsr" --source=268435456 --target=cpu) >"$W/out" 2>&1 || rc=$?
if [ "$rc" -eq 2 ] && [ "$(cat "$W/out")" = "bam bfs: --source=268435456: the graph has 268435456 vertices (ids 0 to 268435455)" ]; then
  ok "bfs --source=2^28 on 2^28 vertices: refused from the header, exit 2"
else
  bad "bfs --source=2^28 on 2^28 vertices (exit $rc; expected 2)"
fi
# a given source still runs on a graph without arcs
printf '3\n\n\n\n' >"$W/noarcs.graph-txt"
"$BAM" graph import "$W/noarcs.graph-txt" -o "$W/noarcs.bcsr" --quiet
runs "bfs --source=1 on a graph without arcs" "$BAM" bfs "$W/noarcs.bcsr" --source=1 --target=cpu --verify --quiet

runs "bench --array with a cache that fits" "$BAM" bench --array --target=cpu --cache-size=1M --size=4M \
  --threads=2 --steps=200 --quiet
runs "bfs with a cache that fits" "$BAM" bfs "$W/k10.bcsr" --cache-size=1M --target=cpu --sources=1 --verify --quiet

test_summary "size limits"
