#!/usr/bin/env bash
# Many threads sharing few queue slots (CPU target): 1024 threads on one queue pair of
# depth 2 (one credit) must do their 16,384 reads at a sane rate, or fail with a clear
# error, within a wall bound. Before the credit line (qpair.h step 1), the wait for a
# credit restarted its timeout on every completion and credits went to whoever polled
# at the right moment: this run went at 1-3 IOPS (hours for 16,384 I/Os, 0 timeouts);
# with the line it takes seconds (about 2 s on 2 idle cores, 40 s with both cores
# busy: one I/O at a time, each handed over by a thread wake-up). The bound, 400 s,
# holds on a loaded 2-core machine and is far below the old behaviour's time. The
# other runs (the issue's own, and 4096 threads) check the same bound.
. "$(dirname "$0")/lib.sh"
bad() { fail=$((fail + 1)); echo "FAIL: $1"; tail -20 "$W/err" "$W/out" 2>/dev/null | sed 's/^/  | /'; }

run_bound() { # description, bound in seconds, number of I/Os, bam bench args...
  local d=$1 bound=$2 n=$3; shift 3
  local rc=0 t0 t1
  t0=$(date +%s)
  timeout -k 10 "$bound" "$BAM" bench --target=cpu --json --quiet --baseline=0 "$@" >"$W/out" 2>"$W/err" || rc=$?
  t1=$(date +%s)
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    bad "$d: still running after $bound s"
  elif [ "$rc" -eq 0 ] && python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['result']; sys.exit(0 if r['ios'] == int(sys.argv[2]) and r['errors'] == 0 and r['timeouts'] == 0 else 1)" "$W/out" "$n"; then
    ok "$d: $n I/Os in $((t1 - t0)) s"
  elif [ "$rc" -ne 0 ] && grep -qi 'time' "$W/err" "$W/out"; then
    ok "$d: a clear error in $((t1 - t0)) s"
  else
    bad "$d (exit $rc)"
  fi
}

run_bound "1024 threads, one queue pair of depth 2" 400 16384 \
  --queue-depth=2 --threads=1024 --size=64M --qpairs=1 --number_ios=16384
run_bound "1024 threads, 16 queue pairs of depth 2 (the issue's run)" 400 65536 \
  --queue-depth=2 --threads=1024 --size=64M --number_ios=65536
run_bound "4096 threads, 4 queue pairs of depth 4" 400 32768 \
  --queue-depth=4 --threads=4096 --size=64M --qpairs=4 --number_ios=32768
test_summary "credit wait"
