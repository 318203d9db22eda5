#!/usr/bin/env bash
# `bam bench --compare=posix,uring` on the CPU target, on small temporary files: the bam
# run through the file back end and both CPU-orchestrated comparisons (posix: pread +
# copy; uring: the io_uring ceiling) read verified data and report positive IOPS in
# their JSON, with O_DIRECT (cold) and through the page cache (warm, direct=0, where no
# comparison may use O_DIRECT), over one file and two striped (new files: --prefill=1
# writes the pattern the comparisons verify); --prefill=0 verifies
# the pattern an earlier run wrote and catches a file without it; a --runtime bounds
# the comparisons too; the flag is refused with a clear error for a back end other
# than file, for writes and for an unknown comparison. With --json, failures (these
# and others: bad values, back-end strings) still print one JSON object, with "error".
# Last: several I/Os in flight per thread on small queue pairs complete without timeouts.
. "$(dirname "$0")/lib.sh"
bad() { fail=$((fail + 1)); echo "FAIL: $1"; sed 's/^/  | /' "$W/err" "$W/out" 2>/dev/null | tail -40; }

# bench: description, expected exit code, python condition over the JSON d, args...
bench() {
  local d=$1 want=$2 cond=$3; shift 3
  json_run "$d" "$want" "$cond" --baseline=0 "$@"
}
# json_run: the same without --baseline=0 (an option bench --array does not have)
json_run() {
  local d=$1 want=$2 cond=$3; shift 3
  local rc=0
  "$BAM" bench --target=cpu --json --quiet "$@" >"$W/out" 2>"$W/err" || rc=$?
  if [ "$rc" -ne "$want" ]; then
    bad "$d (exit $rc, expected $want)"
  elif python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($cond) else 1)" "$W/out"; then
    ok "$d"
  else
    bad "$d (condition: $cond)"
  fi
}

# refused: description, expected stderr text, args...
refused() {
  local d=$1 text=$2; shift 2
  local rc=0
  "$BAM" bench --target=cpu --quiet "$@" >"$W/out" 2>"$W/err" || rc=$?
  if [ "$rc" -eq 2 ] && grep -qF -- "$text" "$W/err"; then
    ok "$d"
  else
    bad "$d (exit $rc, expected 2 and '$text' on stderr)"
  fi
}

clean="d['result']['iops'] > 0 and d['result']['errors'] == 0 and d['result']['timeouts'] == 0 \
and d['result']['verify_failures'] == 0 and d['result']['ios'] == IOS \
and all(d['compare'][k]['iops'] > 0 and d['compare'][k]['MBps'] > 0 and d['compare'][k]['ios'] == IOS \
and d['compare'][k]['errors'] == 0 and d['compare'][k]['verified'] > 0 \
and d['compare'][k]['verify_failures'] == 0 and d['compare'][k]['ratio_iops'] > 0 \
and d['compare'][k]['ratio_bw'] > 0 for k in ('posix', 'uring')) and 'error' not in d"

bench "cold (O_DIRECT where the file system allows it), 4 KiB random reads" 0 "${clean//IOS/4000} and d['compare']['uring']['qd'] == 128" \
  --backend="file:$W/a.dat,size=16M" --size=16M --bs=4k --threads=4 --number_ios=4000 --compare=posix,uring --prefill=1
bench "warm (page cache), two files striped, 64 KiB sequential reads" 0 "${clean//IOS/512} and d['compare']['direct_files'] == 0 and d['compare']['files'] == 2" \
  --backend="file:$W/b.dat,$W/c.dat,size=8M,direct=0" --size=16M --bs=64k --rw=read --threads=4 --number_ios=512 \
  --compare=posix,uring --posix-threads=3 --uring-threads=2 --uring-qd=16 --prefill=1
bench "--prefill=0 verifies what the first run wrote" 0 "${clean//IOS/2000}" \
  --backend="file:$W/a.dat" --size=16M --bs=4k --threads=4 --number_ios=2000 --prefill=0 --compare=posix,uring
bench "--prefill=0 on a file without the pattern: every reader sees wrong data" 1 \
  "d['result']['verify_failures'] > 0 and d['compare']['posix']['verify_failures'] > 0 and d['compare']['uring']['verify_failures'] > 0 \
and d['error']['command'] == 'bench' and d['error']['exit_status'] == 1 and 'verification failures' in d['error']['message']" \
  --backend="file:$W/z.dat,size=4M" --size=4M --bs=4k --threads=2 --number_ios=500 --prefill=0 --compare=posix,uring
bench "--runtime bounds the comparisons, --compare=posix alone" 0 \
  "'uring' not in d['compare'] and d['compare']['posix']['iops'] > 0 and d['compare']['posix']['seconds'] < 10" \
  --backend="file:$W/a.dat" --size=16M --bs=4k --threads=2 --runtime=0.3 --prefill=0 --compare=posix

refused "--compare with the emu back end" "--compare needs the file back end" --backend=emu --compare=posix,uring
refused "--compare with writes" "--compare measures reads" --backend="file:$W/a.dat" --rw=randwrite --compare=posix
refused "--array --working-set below one element (was SIGFPE)" "a size of at least 8 bytes" --array --pattern=scan --working-set=7
refused "--array hot: a working set larger than the cache" "is larger than the cache" --array --pattern=hot --size=16M --working-set=4M --cache-size=1M
refused "--array: a working set larger than the array" "is larger than the array" --array --pattern=scan --size=16M --working-set=100M --cache-size=1M
refused "--compare=fio (unknown)" "bad value 'fio' for --compare" --backend="file:$W/a.dat" --compare=fio

# with --json, a failure prints one JSON object {"error": {"command", "message" (the text on
# stderr), "exit_status"}} on stdout (README, "Machine-readable output"), exit status unchanged
same="d['error']['command'] == 'bench' and d['error']['message'] == open('$W/err').read().strip()"
bench "--json failure: bad option value" 2 "$same and d['error']['exit_status'] == 2 and 'for --threads=0' in d['error']['message']" \
  --threads=0
bench "--json failure: --compare refused" 2 "$same and d['error']['exit_status'] == 2 and 'needs the file back end' in d['error']['message']" \
  --backend=emu --compare=posix
bench "--json failure: unparsable back-end string" 2 "$same and d['error']['exit_status'] == 2 and \"--backend=emu:bogus=1: emu: unknown key 'bogus'\" in d['error']['message']" \
  --backend=emu:bogus=1 --size=4M
json_run "--json failure: --array, unparsable back-end string" 2 "$same and d['error']['exit_status'] == 2 and \"--backend=emu:bogus=1: emu: unknown key 'bogus'\" in d['error']['message']" \
  --array --backend=emu:bogus=1
json_run "--json failure: --array, bad option value" 2 "$same and d['error']['exit_status'] == 2 and '--pattern=zigzag' in d['error']['message']" \
  --array --pattern=zigzag
bench "--json failure: I/O errors: the results and the error" 1 \
  "d['result']['errors'] > 0 and d['error']['exit_status'] == 1 and 'I/O errors' in d['error']['message']" \
  --backend=emu:err_rate=0.5 --size=4M --threads=2 --number_ios=100

# several I/Os in flight per thread on a small queue pair: a thread whose own completed
# CQE holds the CQ head must not wait for room (it waits for its oldest I/O instead);
# before that fix every one of these runs ended in timeouts on a healthy controller
ioq="d['result']['timeouts'] == 0 and d['result']['errors'] == 0 and d['result']['verify_failures'] == 0"
bench "--iodepth=2, one thread, a queue pair of depth 2" 0 "$ioq and d['result']['ios'] == 100" \
  --size=16M --threads=1 --qpairs=1 --queue-depth=2 --iodepth=2 --number_ios=100 --timeout-ms=2000
bench "--iodepth=4, 16 threads, one queue pair of depth 8" 0 "$ioq and d['result']['ios'] == 4000" \
  --size=16M --threads=16 --qpairs=1 --queue-depth=8 --iodepth=4 --number_ios=4000 --timeout-ms=2000
bench "--iodepth=32, 16 threads, queue pairs of depth 256" 0 "$ioq and d['result']['ios'] == 100000" \
  --size=16M --threads=16 --queue-depth=256 --iodepth=32 --number_ios=100000 --timeout-ms=2000

# bench --array takes --timeout-ms: a controller that stops answering fails the reads
# (errors counted, exit 1) within the bound given
json_run "--array --timeout-ms with a controller that stops answering" 1 \
  "d['errors'] > 0 and d['error']['exit_status'] == 1" \
  --array --backend=emu:stop_after=50 --size=16M --cache-size=1M --steps=20 --threads=4 --timeout-ms=20

# the emulated namespaces sized for the blocks bench stripes over them, whatever --bs
# (a multiple of both --bs and 4 KiB), and for the last of a repeated count=
emu_ok="d['result']['ios'] == 40 and d['result']['errors'] == 0 and d['result']['verify_failures'] == 0"
bench "--bs=3072 over 2 emulated controllers" 0 "$emu_ok" --bs=3072 --size=1M --backend=emu:count=2 --threads=4 --number_ios=40
bench "--bs=3584 over 7 emulated controllers" 0 "$emu_ok" --bs=3584 --size=7M --backend=emu:count=7 --threads=4 --number_ios=40
bench "count=4,count=1: one controller, as the emulator reads it" 0 "$emu_ok and 'count=1,' in d['config']['backend']" \
  --size=1M --backend=emu:count=4,count=1 --threads=4 --number_ios=40
refused "--bs=6144 on 4 KiB LBAs: the block size named" "--bs=6144 is not a multiple of the LBA size 4096" \
  --bs=6144 --size=1M --backend=emu:lba=4096 --baseline=0
refused "--size near 2^64: too large, not a wrapped namespace" "too large for the emulated namespaces" \
  --size=18446744073709551615 --baseline=0
refused "--array --size near 2^64 (whole u64 elements): refused, not a run over an array of no lines" "too large for the emulated namespaces" \
  --array --size=18446744073709551608 --steps=10
refused "GPU media on the CPU target: refused, what to use instead named" "needs the GPU target (this run is on the CPU target; use media=dram)" \
  --backend=emu:media=gpu
refused "--array: GPU media on the CPU target" "needs the GPU target" --array --backend=emu:media=gpu --size=16M
refused "a bad emulator value names what the key takes" "bad value 'GPU' for key 'media' (dram, gpu or file)" \
  --backend=emu:media=GPU --baseline=0
refused "emu poll_ns above its range names what it takes" "bad value '2000000' for key 'poll_ns' (nanoseconds, 0 to 1000000)" \
  --backend=emu:poll_ns=2000000 --baseline=0
# the submission's share of each I/O: a positive mean, below the I/Os' latencies (each
# latency is timed from the same start as its submission; 40 I/Os: p99.9 is the
# largest; twice it for the histogram's bucket rounding)
bench "submit_mean_us: positive, below the latency" 0 \
  "$emu_ok and 0 < d['result']['submit_mean_us'] < 2 * d['result']['lat_p999_us']" \
  --size=1M --backend=emu:poll_ns=0 --threads=1 --number_ios=40
# many more threads than cache lines (128 on 2): every read completes, none times out or
# finds the cache full for a whole timeout (the victim search's wait is bounded by the
# device's progress, not absolutely; the old bound failed reads here after 5 s)
json_run "--array: 128 threads on a 2-line cache, every read done" 0 \
  "d['errors'] == 0 and d['reads_not_attempted'] == 0 and d['wrong_values'] == 0 and d['hits'] + d['misses'] >= 128 * 50" \
  --array --threads=128 --cache-size=8K --size=16M --steps=50

test_summary "bench --compare"
