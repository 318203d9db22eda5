# scripts/lib/jobs.sh - background jobs for the check scripts (scripts/model-check,
# models/run-cache-slots, scripts/fuzz). Sourced by bash; defines functions only.

# jobs_default MIB: how many jobs to run at once when the user did not say: the CPU
# count, but no more than the host memory available (MemAvailable) holds jobs of MIB
# MiB each, and at least one.
jobs_default() {
	local n avail
	n=$(nproc 2>/dev/null || echo 1)
	avail=$(awk '/^MemAvailable:/ {print int($2 / 1024); exit}' /proc/meminfo 2>/dev/null)
	if [ -n "$avail" ] && [ "$1" -gt 0 ] && [ $((avail / $1)) -lt "$n" ]; then
		n=$((avail / $1))
	fi
	[ "$n" -ge 1 ] || n=1
	echo "$n"
}

# jobs_wait_slot N: wait until fewer than N of this shell's jobs are running.
jobs_wait_slot() {
	while [ "$(jobs -rp | wc -l)" -ge "$1" ]; do wait -n || true; done
}

# jobs_report REPORT VERDICT: print a finished job's REPORT; status 0 when its VERDICT
# file says ok, 1 otherwise (a job that ended without writing one is named).
jobs_report() {
	cat "$1" 2>/dev/null
	[ "$(cat "$2" 2>/dev/null)" = ok ] && return 0
	[ -f "$2" ] || echo "    ended without a result (see $(dirname "$1"))"
	return 1
}

# jobs_spawn OUT CMD...: run CMD in the background, its output in OUT, as a job in a
# process group of its own (monitor mode only while it starts: no job notices), so that
# jobs_kill_all reaches every process it starts. A command run under timeout(1) there
# needs --foreground, or timeout moves it to a group of its own.
jobs_spawn() {
	local out=$1
	shift
	set -m
	"$@" >"$out" 2>&1 &
	set +m
}

# jobs_kill_all: SIGTERM to the process group of every job of this shell.
jobs_kill_all() {
	local j
	for j in $(jobs -p); do
		kill -TERM -- "-$j" 2>/dev/null || true
	done
}
