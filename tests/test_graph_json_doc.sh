#!/usr/bin/env bash
# docs/GRAPH-RUNS.md's table of `bam bfs`/`bam cc` JSON keys is true of the binary: on a
# small generated graph, on the CPU target, in bam and host mode, with and without the
# options that add keys, and on failures, every key printed (nested ones as k[].x and
# k.x) has a row for that command whose conditions hold for the run, and every row whose
# conditions hold is printed. Rows only the GPU target can print (--warps) are checked
# for their form only. GRAPH_RUNS_DOC overrides the doc's path.
set -euo pipefail
BAM=${BAM_BIN:?BAM_BIN must point to the bam executable}
DOC=${GRAPH_RUNS_DOC:-$(dirname "$0")/../docs/GRAPH-RUNS.md}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$BAM" graph generate --scale 10 --edge-factor 8 --seed 3 -o "$W/k10.bcsr" --quiet

# each run: label|command|conditions|args (conditions: the doc's When tokens that hold)
runs=(
  "bfs-bam|bfs|--mode=bam|--sources=2"
  "bfs-host|bfs||--mode=host --sources=2"
  "bfs-bam-lines|bfs|--mode=bam ranges|--sources=2 --scan-ranges=lines"
  "bfs-host-lines-queue|bfs||--mode=host --sources=2 --scan-ranges=lines --frontier=queue"
  "cc-bam|cc|--mode=bam|"
  "cc-host|cc||--mode=host"
  "bfs-bam-trace-ranges|bfs|--mode=bam --level-trace ranges|--sources=2 --level-trace --scan-ranges=edges --verify"
  "bfs-host-trace-ranges|bfs|--level-trace ranges|--mode=host --sources=2 --level-trace --scan-ranges=edges --verify"
  "cc-bam-verify|cc|--mode=bam|--verify --line-size=512 --cache-size=1M"
  "bfs-bam-offmem|bfs|--mode=bam --offsets=memory ranges|--sources=2 --offsets=memory --scan-ranges=lines"
  "cc-bam-offmem|cc|--mode=bam --offsets=memory|--offsets=memory"
  "bfs-missing|bfs|failure|GRAPH=$W/missing.bcsr"
  "cc-badopt|cc|failure|--sources=2"
  "bfs-host-badopt|bfs|failure|--mode=host --cache-size=1M"
)
: >"$W/runs"
for r in "${runs[@]}"; do
  IFS='|' read -r label cmd cond args <<<"$r"
  g="$W/k10.bcsr"
  case "$args" in GRAPH=*) g=${args#GRAPH=}; args= ;; esac
  rc=0
  # shellcheck disable=SC2086
  "$BAM" "$cmd" "$g" $args --json --quiet --target=cpu >"$W/$label.json" 2>"$W/$label.err" || rc=$?
  printf '%s|%s|%s|%s\n' "$label" "$cmd" "$cond" "$rc" >>"$W/runs"
done

python3 - "$DOC" "$W" <<'EOF'
import json, re, sys
doc, w = sys.argv[1], sys.argv[2]
KNOWN = {"always", "--mode=bam", "--level-trace", "ranges", "--warps", "--offsets=memory", "failure"}
GPU_ONLY = {"--warps"}
fails = []

# the rows between the json-keys markers: | `key` | commands | when | unit | meaning |
rows, inside = {}, False
for line in open(doc, encoding="utf-8"):
    if line.startswith("<!-- json-keys"):
        inside = True
        continue
    if line.startswith("<!-- /json-keys"):
        inside = False
        continue
    m = re.match(r"\|\s*`([^`]+)`\s*\|([^|]*)\|([^|]*)\|", line) if inside else None
    if not m:
        continue
    key = m.group(1)
    cmds = {c.strip() for c in m.group(2).split(",") if c.strip()}
    when = {t.strip().strip("`") for t in m.group(3).split(",") if t.strip()}
    if not cmds or not cmds <= {"bfs", "cc"}:
        fails.append(f"doc: {key}: commands {sorted(cmds)} (expected bfs and/or cc)")
    if not when or not when <= KNOWN or ("always" in when and len(when) > 1):
        fails.append(f"doc: {key}: When {sorted(when)} (expected always, or some of {sorted(KNOWN - {'always'})})")
    when.discard("always")
    if "failure" not in when:
        when.add("results")  # a row of the result object: printed with results only
    for c in cmds:
        if (c, key) in rows:
            fails.append(f"doc: {key}: listed twice for {c}")
        rows[(c, key)] = when
if len(rows) < 10:
    fails.append(f"doc: only {len(rows)} key rows found between the json-keys markers of {doc}")

def paths(d):
    out = set()
    for k, v in d.items():
        out.add(k)
        if isinstance(v, dict):
            out |= {f"{k}.{s}" for s in v}
        elif isinstance(v, list):
            for e in v:
                if isinstance(e, dict):
                    out |= {f"{k}[].{s}" for s in e}
    return out

seen = set()  # doc rows whose conditions held in some run
for line in open(f"{w}/runs"):
    label, cmd, cond, rc = line.rstrip("\n").split("|")
    cond, rc = set(cond.split()), int(rc)
    if "failure" not in cond:
        cond.add("results")
    text = open(f"{w}/{label}.json").read()
    try:
        d = json.loads(text)
    except ValueError:
        fails.append(f"{label}: stdout is not one JSON object (exit {rc}): {text[:200]!r}")
        continue
    if ("failure" in cond) != (rc != 0):
        fails.append(f"{label}: exit status {rc}, expected {'non-zero' if 'failure' in cond else '0'}: {open(f'{w}/{label}.err').read()[:300]}")
    if rc and d.get("error", {}).get("exit_status") != rc:
        fails.append(f"{label}: error.exit_status {d.get('error', {}).get('exit_status')}, the exit status {rc}")
    printed = paths(d)
    for k in sorted(printed):
        if (cmd, k) not in rows:
            fails.append(f"{label}: '{k}' printed by {cmd}, not documented for {cmd}")
        elif not rows[(cmd, k)] <= cond:
            fails.append(f"{label}: '{k}' printed, but the doc says only when {sorted(rows[(cmd, k)] - {'results'})}")
    for (c, k), when in rows.items():
        if c == cmd and when <= cond:
            seen.add((c, k))
            if k not in printed:
                fails.append(f"{label}: '{k}' documented for {cmd} when {sorted(when - {'results'}) or ['always']}, not printed")
for (c, k), when in sorted(rows.items()):
    if (c, k) not in seen and not when & GPU_ONLY:
        fails.append(f"doc: '{k}' for {c} (when {sorted(when - {'results'}) or ['always']}): no run of this test covers it")
for f in fails:
    print("FAIL:", f)
print(f"{len(rows)} documented (command, key) pairs; {len(seen)} checked on the CPU target; {len(fails)} failures")
sys.exit(1 if fails else 0)
EOF
