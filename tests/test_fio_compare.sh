#!/usr/bin/env bash
# bench/fio-compare: `bam bench` and fio on the same file with the same flags (CPU
# target): both rows present with I/Os done, reads and a write run with its fsync; the
# file of a read run unchanged. Skipped (passes, says so) without fio.
. "$(dirname "$0")/lib.sh"
if ! command -v fio >/dev/null; then
  echo "skipped: fio is not installed (scripts/setup installs it)"
  test_summary "fio compare"
  exit
fi
bad() { fail=$((fail + 1)); echo "FAIL: $1"; sed 's/^/  | /' "$W/err" "$W/out" 2>/dev/null | tail -30; }
cmp_run() { # description, python condition over rows, args...
  local d=$1 cond=$2; shift 2
  if "$(dirname "$0")/../bench/fio-compare" --bin "$BAM" --file "$W/f.dat" --size 8M --runtime 500ms --numjobs 2 --json "$@" \
    >"$W/out" 2>"$W/err" && python3 -c "import json,sys; rows=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); sys.exit(0 if ($cond) else 1)" "$W/out"; then
    ok "$d"
  else
    bad "$d"
  fi
}
both="sorted(r['tool'] for r in rows) == ['bam bench', 'fio'] and all(r['ios'] > 0 and r['iops'] > 0 and r['clat_mean_us'] > 0 for r in rows)"
cmp_run "randread 4k, O_DIRECT" "$both and all(r['dir'] == 'read' for r in rows)"
sum=$(md5sum <"$W/f.dat")
cmp_run "read 64k, --iodepth=4, page cache" "$both" --rw read --bs 64k --iodepth 4 --direct 0
[ "$(md5sum <"$W/f.dat")" = "$sum" ] && ok "read runs leave the file as it was" || bad "the file changed"
cmp_run "randwrite 4k with the final fsync / Flush" "$both and all(r['dir'] == 'write' for r in rows)" --rw randwrite --direct 0
test_summary "fio compare"
