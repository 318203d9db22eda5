# Sourced by the shell tests (". tests/lib.sh"): strict mode; $BAM, the bam executable
# (BAM_BIN); $W, a scratch folder removed on exit; pass/fail counters with ok DESCRIPTION
# (each test defines its own bad(), which shows what it needs); test_summary NAME prints
# the counts, and its status (0 only if nothing failed) is the test's when it ends it.
set -euo pipefail
BAM=${BAM_BIN:?BAM_BIN must point to the bam executable}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
test_summary() { echo "$1: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; }
