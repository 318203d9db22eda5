#!/usr/bin/env bash
# Figures a storage person can trust (CPU target, small files):
#  - a read run never writes the file: byte-identical before and after (checksums), for
#    randread, read, with --compare and with --direct=0; its reads are checked against the
#    file's own content; --prefill=1 is refused on a file holding other data (unchanged)
#    and --prefill=force writes it;
#  - a write run ends with a Flush (one per controller) whose time is in the reported
#    figure (result.seconds covers flush.seconds; MBps = bytes / seconds), says where the
#    writes were cached (the page cache with direct=0) and does not claim verify=1;
#  - --runtime ends the run at one deadline with more logical threads than host workers
#    (a wall bound generous for a loaded machine: 120 s for 1 s), --ramp_time's I/Os are
#    not counted;
#  - fio's names (--numjobs, --time_based, --filename, --direct, --name,
#    --output-format=json, times with units, --iodepth above 32 up to the queue depth);
#    latency series with min <= percentiles <= max, per direction for randrw; the JSON
#    has the program, its version, a timestamp and the options in effect.
. "$(dirname "$0")/lib.sh"
bad() { fail=$((fail + 1)); echo "FAIL: $1"; sed 's/^/  | /' "$W/err" "$W/out" 2>/dev/null | tail -30; }

# check: description, expected exit code, python condition over the JSON d, args...
check() {
  local d=$1 want=$2 cond=$3; shift 3
  local rc=0
  "$BAM" bench --target=cpu --json --quiet --baseline=0 "$@" >"$W/out" 2>"$W/err" || rc=$?
  if [ "$rc" -ne "$want" ]; then
    bad "$d (exit $rc, expected $want)"
  elif python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($cond) else 1)" "$W/out"; then
    ok "$d"
  else
    bad "$d (condition: $cond)"
  fi
}
same_file() { # description, file, checksum before
  if [ "$(md5sum <"$2")" = "$3" ]; then ok "$1: the file is byte-identical"; else bad "$1: the file changed"; fi
}

# a file of other data (random bytes): every read run leaves it as it was
head -c $((8 << 20)) /dev/urandom >"$W/user.dat"
sum=$(md5sum <"$W/user.dat")
clean="d['result']['errors'] == 0 and d['result']['timeouts'] == 0 and d['result']['verify_failures'] == 0"
content="$clean and d['config']['verify_mode'] == 'content' and d['result']['verified'] == d['result']['ios'] + d['result']['ramp_ios'] and not d['config']['prefilled']"
check "randread of a user's file: checked against its content" 0 "$content and d['result']['ios'] == 3000" \
  --filename="$W/user.dat" --size=8M --number_ios=3000 --threads=4
same_file "randread" "$W/user.dat" "$sum"
check "sequential read, --direct=0 (page cache), 64 KiB" 0 "$content and d['result']['ios'] == 256" \
  --filename="$W/user.dat" --direct=0 --rw=read --bs=64k --size=8M --number_ios=256 --threads=4
same_file "read --direct=0" "$W/user.dat" "$sum"
check "randread with --compare: nothing written, the comparisons verify nothing" 0 \
  "$content and d['compare']['posix']['verified'] == 0 and d['compare']['uring']['ios'] == 1000" \
  --backend="file:$W/user.dat" --size=8M --number_ios=1000 --threads=2 --compare=posix,uring
same_file "--compare" "$W/user.dat" "$sum"
check "--verify=0: not checked, and said so" 0 "$clean and d['config']['verify_mode'] == 'off' and d['config']['verify'] == 0 and '--verify=0' in d['config']['verify_how']" \
  --filename="$W/user.dat" --size=8M --number_ios=500 --verify=0
check "--prefill=1 on a file holding other data: refused" 2 "'holds other data' in d['error']['message'] and 'force' in d['error']['message']" \
  --filename="$W/user.dat" --size=8M --number_ios=100 --prefill=1
same_file "--prefill=1 refused" "$W/user.dat" "$sum"
check "--prefill=force writes the pattern and verifies it" 0 "$clean and d['config']['prefilled'] and d['config']['verify_mode'] == 'pattern'" \
  --filename="$W/user.dat" --size=8M --number_ios=500 --prefill=force
if [ "$(md5sum <"$W/user.dat")" != "$sum" ]; then ok "--prefill=force: the file was written, as asked"; else bad "--prefill=force wrote nothing"; fi
check "--prefill=1 again: the file holds the pattern now, allowed" 0 "$clean and d['config']['prefilled']" \
  --filename="$W/user.dat" --size=8M --number_ios=500 --prefill=1
check "emulated media keep their pattern" 0 "$clean and d['config']['verify_mode'] == 'pattern' and d['config']['prefilled']" \
  --size=4M --number_ios=500

# writes: the Flush in the time, the cache named, no verify claimed
flush="$clean and d['config']['verify'] == 0 and d['config']['verify_mode'] == 'off' \
and d['result']['flush']['commands'] == d['config']['controllers'] and d['result']['flush']['errors'] == 0 \
and 0 < d['result']['flush']['seconds'] <= d['result']['seconds'] \
and abs(d['result']['MBps'] * d['result']['seconds'] * 1e6 - d['result']['write']['bytes']) <= 1e-6 * d['result']['write']['bytes'] + 1"
check "write through the page cache (direct=0): Flush (fdatasync) in the time" 0 \
  "$flush and 'page cache' in d['config']['write_cache'] and d['result']['write']['ios'] == 256" \
  --filename="$W/w.dat" --direct=0 --rw=write --bs=128k --size=32M --number_ios=256 --threads=4
check "randwrite over two striped files: a Flush per controller" 0 \
  "$flush and d['config']['controllers'] == 2 and d['result']['write']['ios'] == 400" \
  --backend="file:$W/w1.dat,$W/w2.dat,size=8M,direct=0" --rw=randwrite --size=16M --number_ios=400 --threads=4
check "randwrite on emulated media: no cache, the Flush still counted" 0 \
  "$flush and d['config']['write_cache'].startswith('none')" --rw=randwrite --size=4M --number_ios=400 --threads=4
if "$BAM" bench --target=cpu --quiet --baseline=0 --rw=write --size=4M --number_ios=64 >"$W/out" 2>"$W/err" &&
  grep -q 'verify=0' "$W/out" && grep -q 'Flush' "$W/out"; then
  ok "text output of a write run: verify=0, the Flush named"
else
  bad "text output of a write run"
fi

# --runtime: one deadline for every logical thread (4096 of them on at most 1024 host
# workers), --ramp_time not counted
t0=$(date +%s.%N)
check "--runtime=1 with 4096 threads" 0 "$clean and d['result']['ios'] > 0 and d['options']['runtime'] == 1 and d['options']['time_based']" \
  --size=16M --threads=4096 --runtime=1 --timeout-ms=30000
t1=$(date +%s.%N)
if python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 120 else 1)"; then ok "--runtime=1 ended within 120 s ($(python3 -c "print(round($t1 - $t0, 1))") s)"; else bad "--runtime=1 took $t1 - $t0 s"; fi
check "--ramp_time=300ms --runtime=500ms: the ramp's I/Os apart" 0 \
  "$clean and d['result']['ramp_ios'] > 0 and d['result']['ios'] > 0 and d['options']['ramp_time'] == 0.3 and d['options']['runtime'] == 0.5" \
  --size=16M --threads=4 --ramp_time=300ms --runtime=500ms

# fio's vocabulary and the statistics
lat="(lambda X: all(s['min'] <= s['percentile'][k] <= s['max'] and s['stddev'] >= 0 and s['min'] <= s['mean'] <= s['max'] for s in (X['slat_ns'], X['clat_ns'], X['lat_ns']) for k in s['percentile']) \
and all(X['lat_ns']['percentile'][a] <= X['lat_ns']['percentile'][b] for a, b in zip(list(X['lat_ns']['percentile'])[:-1], list(X['lat_ns']['percentile'])[1:])))"
check "randrw: reads and writes apart, each with its latency series" 0 \
  "$clean and d['result']['read']['ios'] > 0 and d['result']['write']['ios'] > 0 \
and d['result']['read']['ios'] + d['result']['write']['ios'] == d['result']['ios'] == 2000 \
and $lat(d['result']['read']) and $lat(d['result']['write']) and d['result']['read']['lat_ns']['N'] == d['result']['read']['ios']" \
  --rw=randrw --rwmixread=70 --size=8M --number_ios=2000 --threads=4
check "fio's names: --numjobs, --time_based, --name, --output-format=json, --runtime=600ms" 0 \
  "$clean and d['config']['threads'] == 3 and d['options']['name'] == 'job1' and d['options']['time_based'] \
and d['program']['name'] == 'bam' and d['program']['version'] and d['timestamp'] > 1.5e9 and d['command'] == 'bench' \
and d['options']['runtime'] == 0.6 and 'iodepth' in d['options'] and 'backend' in d['options']" \
  --numjobs=3 --time_based --runtime=600ms --name=job1 --output-format=json --size=8M
check "--iodepth=64 (above the old 32) on queues of 256" 0 "$clean and d['result']['ios'] == 4096" \
  --iodepth=64 --threads=2 --queue-depth=256 --size=8M --number_ios=4096
check "--iodepth above the queue depth: refused" 2 "'above the queue depth' in d['error']['message']" \
  --iodepth=64 --queue-depth=32 --size=8M --number_ios=100
check "--time_based without --runtime: refused" 2 "'needs --runtime' in d['error']['message']" --time_based
check "--runtime=3q: refused, the units named" 2 "'500ms' in d['error']['message']" --runtime=3q
check "--direct without a file: refused" 2 "'--direct applies to files' in d['error']['message']" --direct=1
check "the default run: the region once, at least 64 I/Os per thread" 0 "$clean and d['result']['ios'] == 16 * 64 * 4 and d['options']['number_ios'] == 4096" \
  --size=16M --bs=4k --threads=16
test_summary "bench trust"
