#!/usr/bin/env python3
"""Line-size sweep ratios from the JSON of one gpu-check run (kron, sweep and small stages).

Usage: graph-ratios.py OUTDIR
Prints one markdown table per sweep found in OUTDIR: for each line size the compute
time, its ratio to the 4 KiB run of the same sweep (>1 = slower than 4 KiB) and the I/O
amplification, all read from the runs' JSON, and where the same run holds the gpu-mode
run of that algorithm and graph (NAME-gpu.json for a sweep NAME-bam-line*), the ratio to
its compute time (the issue's "within 2x of gpu") (bam bfs/cc --json). The BaM paper's figures
for 4 KiB -> 512 B are 1.41x (BFS) and 2.31x (CC), 4 KiB -> 8 KiB about equal
(../shared/docs/BAM-PAPER.md).
"""
import json, os, re, sys

out = sys.argv[1]
sweeps = {}  # prefix -> {line: json}
pat = re.compile(r"^(.*-line)(512|1k|2k|4k|8k|16k)(-optane4)?\.json$")
for fn in sorted(os.listdir(out)):
    m = pat.match(fn)
    if not m:
        continue
    try:
        with open(os.path.join(out, fn)) as f:
            d = json.load(f)
    except Exception:
        continue
    sweeps.setdefault(m.group(1) + "*" + (m.group(3) or ""), {})[m.group(2)] = d

order = ["512", "1k", "2k", "4k", "8k", "16k"]
for name, runs in sorted(sweeps.items()):
    if len(runs) < 2 or "4k" not in runs:
        continue  # not a sweep: a single line size, or no 4 KiB run to compare with
    base = runs["4k"].get("compute_s")
    gpu = None
    if name.endswith("-bam-line*"):
        try:
            with open(os.path.join(out, name[: -len("-bam-line*")] + "-gpu.json")) as f:
                gpu = json.load(f).get("compute_s")
        except Exception:
            pass
    print("| %s | line | compute s | vs 4k | amplification | vs gpu (%s s) |" % (name, "%.4f" % gpu if gpu else "-"))
    print("| --- | --- | --- | --- | --- | --- |")
    for l in order:
        d = runs.get(l)
        if not d:
            continue
        c = d.get("compute_s")
        r = "%.2f" % (c / base) if c and base else "?"
        rg = "%.2f" % (c / gpu) if c and gpu else "-"
        print("| | %s | %.4f | %s | %.2f | %s |" % (l, c or 0, r, d.get("io_amplification", 0), rg))
    print()
