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

echo "guest: $(uname -r), $(nproc) CPUs, build $BUILD"
run list "$BAM" nvme list
for f in $A $B $C $D; do "$BAM" nvme bind "$f" || fail bind "$f"; done
ls /dev/vfio

if want smoke; then
	run smoke "$BAM" bench --backend=nvme:$A,allow_write=1 --target=cpu --rw=randread --bs=4k --size=8M --threads=2 --qpairs=2 --number_ios=2000
fi
echo "BAMTEST DONE"
