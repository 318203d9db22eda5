# scripts/lib/deps.sh - what building and testing bam needs, checked before a build by
# scripts/main-job and scripts/test. Sourced by bash; defines functions only.
#
# deps_missing: print what is missing (commands and pkg-config modules), one a line;
# nothing when all is there. Fast (no package manager): a second run costs milliseconds.
deps_missing() {
	local c m
	for c in cmake make cc pkg-config python3; do
		command -v "$c" >/dev/null 2>&1 || echo "command $c"
	done
	if command -v pkg-config >/dev/null 2>&1; then
		for m in liburing libcjson cmocka zlib; do
			pkg-config --exists "$m" 2>/dev/null || echo "pkg-config module $m"
		done
	fi
}

# deps_ensure WHO: return 0 when everything is there. Otherwise run scripts/setup
# (Debian/Ubuntu: apt-get) where that needs no password: as root, or with sudo that
# does not ask (sudo -n); else say exactly what to run, and return 1.
deps_ensure() {
	local who=$1 root missing
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	missing=$(deps_missing)
	[ -z "$missing" ] && return 0
	echo "$who: missing: $(echo "$missing" | paste -sd, - | sed 's/,/, /g')" >&2
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "$who: no apt-get here: install the packages scripts/setup lists with this system's package manager" >&2
		return 1
	fi
	if [ "$(id -u)" -eq 0 ] || { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; }; then
		echo "$who: installing them: $root/scripts/setup" >&2
		"$root/scripts/setup" || return 1
		missing=$(deps_missing)
		if [ -n "$missing" ]; then
			echo "$who: still missing after scripts/setup: $(echo "$missing" | paste -sd, - | sed 's/,/, /g')" >&2
			return 1
		fi
		return 0
	fi
	echo "$who: installing packages needs root; run this once, then again what you ran:" >&2
	echo "    sudo $root/scripts/setup" >&2
	return 1
}

# deps_qemu_missing: what the nvme back end's QEMU tests (tests/qemu/run) need and this
# machine lacks, one a line (scripts/setup installs them; not needed to build).
deps_qemu_missing() {
	local c
	for c in qemu-system-x86_64 busybox cpio xz; do
		command -v "$c" >/dev/null 2>&1 || echo "command $c"
	done
	ls /boot/vmlinuz-* >/dev/null 2>&1 || echo "a kernel in /boot (linux-image-amd64)"
}
