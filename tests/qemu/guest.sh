#!/bin/sh
# Runs inside the QEMU guest (tests/qemu/run), chrooted into the host's / (read-only;
# /tmp is the guest's tmpfs). Binds the NVMe functions to vfio-pci and drives them
# through bam's CPU-target build. Prints "BAMTEST PASS|FAIL name" per test and
# "BAMTEST DONE" at the end.
arg() { sed -n "s/.*bam\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
BUILD=$(arg build)
SRC=$(arg src)
TESTS=$(arg tests | tr , ' ')
BAM=$BUILD/tools/bam/bam
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /tmp || exit 1
A=0000:01:00.0 B=0000:02:00.0 C=0000:03:00.0 D=0000:04:00.0

want() { [ -z "$TESTS" ] && return 0; for t in $TESTS; do [ "$t" = "$1" ] && return 0; done; return 1; }
pass() { echo "BAMTEST PASS $1"; }
fail() { echo "BAMTEST FAIL $1: $2"; }
# run NAME CMD...: the command's output indented, PASS when it exits 0
run() {
	name=$1; shift
	echo "--- $name: $*"
	"$@" > /tmp/out.$$ 2>&1; rc=$?
	sed 's/^/    /' /tmp/out.$$ | tail -40
	if [ $rc = 0 ]; then pass "$name"; else fail "$name" "exit $rc"; fi
	return $rc
}
# refuse NAME PATTERN CMD...: the command must fail (within 'timeout') with PATTERN in its output
refuse() {
	name=$1; pat=$2; shift 2
	echo "--- $name (must fail with '$pat'): $*"
	timeout 120 "$@" > /tmp/out.$$ 2>&1; rc=$?
	sed 's/^/    /' /tmp/out.$$ | tail -20
	if [ $rc = 0 ]; then fail "$name" "succeeded"; elif [ $rc = 124 ]; then fail "$name" "hung (killed after 120 s)";
	elif grep -q "$pat" /tmp/out.$$; then pass "$name"; else fail "$name" "exit $rc without '$pat'"; fi
}

PROBE=$BUILD/tests/nvme_probe
GRAPH=$BUILD/qemu-cnr2000.bamg
CPU="--target=cpu"
echo "guest: $(uname -r), $(nproc) CPUs, build $BUILD"
run list "$BAM" nvme list
if want bind-refuse && [ -e /sys/bus/pci/devices/$D/nvme ]; then
	# D's image starts with an MBR signature (tests/qemu/run): the kernel's nvme driver has it
	refuse bind-refuse "refusing to take it" "$BAM" nvme bind $D
	run bind-force "$BAM" nvme bind $D --force
fi
for f in $A $B $C $D; do "$BAM" nvme bind "$f" >/dev/null || fail bind "$f"; done
run list-bound "$BAM" nvme list

# --- safety: nothing writes without allow_write ---
want write-guard && refuse write-guard "allow-write" "$BAM" bench --backend=nvme:$A $CPU --rw=randwrite --size=1M --number_ios=16
want write-guard && refuse write-guard-graph "allow-write" "$BAM" bfs "$GRAPH" --backend=nvme:$A $CPU
want write-guard && refuse write-guard-probe "Operation not permitted\|allow_write" "$BAM" bench --array --backend=nvme:$A $CPU --size=1M

# --- raw commands: the controller's LBA Out of Range, a PRP-list write read back ---
want probe && run probe-512 "$PROBE" nvme:$A,allow_write=1 write
want probe && run probe-4k "$PROBE" nvme:$B,allow_write=1 write

# --- bench: writes with the pattern, then reads verifying it (read-only: no allow_write) ---
B1="--bs=4k --size=8M --threads=4 --qpairs=4 --quiet"
if want bench; then
	run bench-write-512 "$BAM" bench --backend=nvme:$A --allow-write $CPU --rw=write $B1 --number_ios=2048
	run bench-read-512 "$BAM" bench --backend=nvme:$A $CPU --rw=randread $B1 --number_ios=4000 --prefill=0 --verify=1
	run bench-randrw-512 "$BAM" bench --backend=nvme:$A --allow-write $CPU --rw=randrw $B1 --number_ios=4000 --bs=512
	run bench-write-4k "$BAM" bench --backend=nvme:$B --allow-write $CPU --rw=randwrite $B1 --number_ios=4000
	run bench-read-4k "$BAM" bench --backend=nvme:$B --allow-write $CPU --rw=randread $B1 --number_ios=4000 --bs=16k --iodepth=4
	refuse bench-bs-4k "LBA\|multiple" "$BAM" bench --backend=nvme:$B --allow-write $CPU --rw=randread $B1 --bs=512
	run bench-stripe "$BAM" bench --backend=nvme:$A,$C --allow-write $CPU --rw=randread $B1 --number_ios=4000 --bs=8k
fi
# --- the cache and array API ---
if want array; then
	run array-512 "$BAM" bench --array --backend=nvme:$A --allow-write $CPU --size=8M --cache-size=1M --threads=4 --steps=2000 --quiet
	run array-4k "$BAM" bench --array --backend=nvme:$B --allow-write $CPU --size=8M --cache-size=1M --threads=4 --steps=2000 --quiet
	run array-stripe "$BAM" bench --array --backend=nvme:$A,$C --allow-write $CPU --size=8M --cache-size=1M --threads=4 --steps=2000 --quiet
fi
# --- cnr-2000 on a namespace: BFS and CC verified against the host reference ---
G1="--verify --sources=2 --quiet"
if want graph; then
	run bfs-512 "$BAM" bfs "$GRAPH" --backend=nvme:$A --allow-write $CPU $G1
	run cc-512 "$BAM" cc "$GRAPH" --backend=nvme:$A --allow-write $CPU --verify --quiet
	run bfs-4k "$BAM" bfs "$GRAPH" --backend=nvme:$B --allow-write $CPU $G1
	run cc-stripe "$BAM" cc "$GRAPH" --backend=nvme:$A,$C --allow-write $CPU --verify --quiet
fi
# --- failure paths ---
if want fail; then
	refuse ns-too-small "ut of range\|too small\|larger\|exceeds\|does not fit\|namespace" "$BAM" bfs "$GRAPH" --backend=nvme:$C,nsid=2 --allow-write $CPU --quiet
	refuse bad-nsid "namespace 9" "$PROBE" nvme:$C,nsid=9
	# QEMU answers an enable it cannot start with CSTS.CFS (nvme_start_ctrl fails: here a
	# misaligned ASQ), never with a controller that just stays not ready
	refuse enable-fails "CSTS.CFS" "$PROBE" nvme:$A,test_not_ready=1
	run after-enable-fails "$PROBE" nvme:$A
	refuse noiommu "noiommu: not supported" "$PROBE" nvme:$A,iommu=noiommu
	refuse not-vfio "not vfio-pci\|no such PCI" "$PROBE" nvme:0000:00:1f.0
fi
# --- a device removed while in use (last: D is gone afterwards) ---
if want remove; then
	echo "--- remove: bench on D, then QEMU's device_del nvmeD under it"
	timeout 150 "$BAM" bench --backend=nvme:$D --allow-write $CPU --rw=randread --bs=4k --size=8M --threads=2 --qpairs=2 \
		--runtime=60 --timeout-ms=2000 --quiet > /tmp/rm.out 2>&1 &
	bp=$!
	sleep 8
	echo "BAMTEST REMOVE nvmeD"
	wait $bp; rc=$?
	sed 's/^/    /' /tmp/rm.out | tail -15
	if [ $rc = 124 ]; then fail remove "hung (killed after 150 s)"
	elif [ $rc = 0 ]; then fail remove "the bench succeeded"
	elif grep -q "hot removal\|gone" /tmp/rm.out; then pass remove
	else fail remove "exit $rc without the removal message"; fi
	sleep 3
	[ -e /sys/bus/pci/devices/$D ] && echo "    $D still present" || echo "    $D gone from the guest"
fi
# --- back to the kernel's driver ---
if want unbind && [ -e /sys/bus/pci/drivers/nvme ]; then
	run unbind "$BAM" nvme unbind $A
	run list-after "$BAM" nvme list
fi
echo "BAMTEST DONE"
