#!/usr/bin/env bash
# bam vecadd on the CPU target (apps/vecadd): c = a + b with each vector four times the
# cache, through the cache (bam) and CPU-orchestrated tiles (tiling), u64 and f32; c
# checked on the media by the command itself (wrong, errors) and the bytes through the
# queues: read = size(a) + size(b) (c never fetched: whole-line writes), written =
# size(c) (a and b never written back). Progress on stderr unless --quiet. A bad option:
# exit 2 and one JSON error object.
. "$(dirname "$0")/lib.sh"
bad() { fail=$((fail + 1)); echo "FAIL: $1"; sed 's/^/  | /' "$W/err" 2>/dev/null | tail -10; }
N=1048576 # 8 MiB per u64 vector, 4 MiB per f32 vector; cache 1 MiB
for mode in bam tiling; do
  for type in u64 f32; do
    rc=0
    "$BAM" vecadd --n $N --type $type --mode $mode --cache-size 1M --target=cpu --json >"$W/out" 2>"$W/err" || rc=$?
    [ "$rc" -eq 0 ] || { bad "$mode $type: exit $rc"; continue; }
    # tiling's tiles are whole LBAs: at most one LBA more per tile than the vectors
    if jq -e --arg m $mode '.wrong == 0 and .errors == 0 and .read_ratio >= 1 and .read_ratio < 1.01
        and .written_ratio >= 1 and .written_ratio < 1.01 and .seconds > 0
        and ($m != "bam" or (.partial_write_fetches == 0 and .writeback_errors == 0 and .fills_avoided > 0))' \
        "$W/out" >/dev/null; then
      ok "$mode $type: c verified, read $(jq .read_ratio "$W/out") x (a+b), written $(jq .written_ratio "$W/out") x c"
    else
      cp "$W/out" "$W/err"; bad "$mode $type: counters or check"
    fi
  done
done
# progress on stderr: the phases (and the 2 s reports of a long kernel), none with --quiet
rc=0
"$BAM" vecadd --n $N --cache-size 1M --target=cpu >"$W/out" 2>"$W/err" || rc=$?
if [ "$rc" -eq 0 ] && grep -q '^bam vecadd: writing a and b to the media' "$W/err" && grep -q 'checking c on the media' "$W/err" &&
   grep -q '0 wrong, 0 errors' "$W/out"; then
  ok "progress: the phases on stderr, the result on stdout"
else
  bad "progress: exit $rc, stderr without the phases"
fi
rc=0
"$BAM" vecadd --n $N --cache-size 1M --target=cpu --quiet >"$W/out" 2>"$W/err" || rc=$?
if [ "$rc" -eq 0 ] && [ ! -s "$W/err" ]; then ok "--quiet: nothing on stderr"; else bad "--quiet: exit $rc, stderr not empty"; fi
rc=0
"$BAM" vecadd --n $N --mode nosuch --json >"$W/out" 2>"$W/err" || rc=$?
if [ "$rc" -eq 2 ] && jq -e '.error.command == "vecadd" and .error.exit_status == 2 and (.error.message | test("nosuch"))' "$W/out" >/dev/null; then
  ok "--mode=nosuch: exit 2, the JSON error names the value"
else
  bad "--mode=nosuch: exit $rc, $(cat "$W/out")"
fi
test_summary test_vecadd
