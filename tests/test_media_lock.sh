#!/usr/bin/env bash
# One user per media file (CPU target): while one bam process runs on a file: or emu
# media file, a second one on the same file is refused, with a message naming the
# holder's pid; once the first has ended, the second runs. Before the lock, the second
# process overwrote the first's data.
. "$(dirname "$0")/lib.sh"
bad() { fail=$((fail + 1)); echo "FAIL: $1"; sed 's/^/  | /' "$W/err" 2>/dev/null | tail -10; }

one() { # description, back-end string of the first (a writer), of the second (a reader)
  local d=$1 be1=$2 be2=$3
  # (--timeout-ms: a write stalled past the default 5 s on a loaded 2-core machine
  # fails the run; this test is of the lock, not of latency)
  "$BAM" bench --target=cpu --quiet --baseline=0 --backend="$be1" --rw=randwrite --size=16M \
    --runtime=15 --threads=2 --timeout-ms=120000 >"$W/out1" 2>"$W/err1" &
  local pid=$! refused=0 ran=0 rc
  # the first process opens the file within a moment; poll until the second is refused
  # or the first has ended
  while kill -0 "$pid" 2>/dev/null; do
    rc=0
    "$BAM" bench --target=cpu --quiet --baseline=0 --backend="$be2" --size=16M --number_ios=64 \
      --threads=2 >"$W/out" 2>"$W/err" || rc=$?
    if [ "$rc" -ne 0 ] && grep -q "is in use by pid $pid (bam)" "$W/err"; then refused=1; break; fi
    [ "$rc" -eq 0 ] && ran=$((ran + 1))
    sleep 0.3
  done
  rc=0; wait "$pid" || rc=$?
  if [ "$refused" = 1 ]; then ok "$d: the second process refused, the holder's pid named"
  else bad "$d: the second process was not refused ($ran runs beside the first)"; fi
  if [ "$rc" -eq 0 ]; then ok "$d: the first process ended well"; else fail=$((fail + 1)); echo "FAIL: $d: the first process exit $rc"; cat "$W/err1"; fi
  rc=0
  "$BAM" bench --target=cpu --quiet --baseline=0 --backend="$be2" --size=16M --number_ios=64 --threads=2 \
    --timeout-ms=120000 >"$W/out" 2>"$W/err" || rc=$?
  if [ "$rc" -eq 0 ]; then ok "$d: after the first ended, the second runs"; else bad "$d: after the first ended (exit $rc)"; fi
}
one "file:" "file:$W/m.img,size=16M" "file:$W/m.img"
one "emu media file" "emu:media=file,path=$W/e.img,size=16M" "emu:media=file,path=$W/e.img"
test_summary "media lock"
