#!/usr/bin/env python3
"""Turn the JSON files of one gpu-check run into markdown table rows for results/.

Usage: results-rows.py OUTDIR COMMIT MACHINE
Writes OUTDIR/rows-<family>.md (family: io, cache, graph, file); each row carries the date,
commit, machine, the exact command (from OUTDIR/<name>.cmd) and the numbers with the
baseline measured in the same run. Numbers are copied from the JSON, never typed. A run
whose binary is another commit's (gpu-check stage ab) names it in OUTDIR/<name>.commit.
"""
import json, os, sys, datetime

out, run_commit, machine = sys.argv[1], sys.argv[2], sys.argv[3]
date = datetime.date.today().isoformat()
rows = {"io": [], "cache": [], "graph": [], "file": []}

def load(name):
    try:
        with open(os.path.join(out, name + ".json")) as f:
            return json.load(f)
    except Exception:
        return None

def cmd(name):
    try:
        return open(os.path.join(out, name + ".cmd")).read().strip()
    except Exception:
        return "?"

for fn in sorted(os.listdir(out)):
    if not fn.endswith(".json"):
        continue
    name = fn[:-5]
    d = load(name)
    if d is None:
        continue
    c = "`" + cmd(name).replace("|", "\\|") + "`"
    try:
        commit = open(os.path.join(out, name + ".commit")).read().strip() or run_commit
    except OSError:
        commit = run_commit
    if "compare" in d:  # bam bench --compare (scripts/gpu-check-file)
        r, cp = d["result"], d["compare"]
        def side(k):
            x = cp.get(k) or {}
            return "%.4g" % x["iops"] if "iops" in x else "-", "%.3f" % x["ratio_iops"] if "ratio_iops" in x else "-"
        pi, pr = side("posix")
        ui, ur = side("uring")
        rows["file"].append("| %s | %s | %s | %s | %s | %.4g | %.0f | %s | %s | %s | %s | %d/%d/%d |" % (
            date, commit, machine, name, c, r["iops"], r["MBps"], pi, ui, ur, pr, r["errors"], r["timeouts"],
            r["verify_failures"]))
    elif "result" in d:  # bam bench
        r, b = d["result"], d.get("baseline", {})
        base = "%.0f MB/s (%.3g chunks/s)" % (b["MBps"], b["chunks_per_s"]) if b else "-"
        ratio = "%.3f" % b["ratio_bw"] if b else "-"
        rows["io"].append("| %s | %s | %s | %s | %s | %.4g | %.0f | %.1f / %.1f / %.1f | %s | %s | %d/%d/%d |" % (
            date, commit, machine, name, c, r["iops"], r["MBps"], r["lat_p50_us"], r["lat_p99_us"],
            r["lat_p999_us"], base, ratio, r["errors"], r["timeouts"], r["verify_failures"]))
    elif "pattern" in d:  # bench --array
        hbm = "%.0f GB/s" % d["hbm_GBps"] if "hbm_GBps" in d else "-"
        ratio = "%.3f" % d["ratio_to_hbm"] if "ratio_to_hbm" in d else "-"
        rows["cache"].append("| %s | %s | %s | %s | %s | %s | %d | %s | %.4g | %.2f | %.4g | %.2f | %s | %s | %d/%d |" % (
            date, commit, machine, name, c, d["pattern"], d["line_size"], "on" if d["coalesce"] else "off",
            d["element_reads_per_s"], d["requested_GBps"], d["miss_iops"], d["io_amplification"], hbm, ratio,
            d["wrong_values"], d["errors"]))
    elif "algorithm" in d:  # bfs / cc
        rows["graph"].append("| %s | %s | %s | %s | %s | %s | %s | %.4f | %.4f | %.4f | %.3g | %s | %s |" % (
            date, commit, machine, name, c, d["algorithm"], d["mode"], d["compute_s"], d["compute_s_per_run"],
            d["end_to_end_s"], d["edges_per_s"], "%.2f" % d["io_amplification"] if "io_amplification" in d else "-",
            d["verified"]))

for fam, rs in rows.items():
    if rs:
        with open(os.path.join(out, "rows-%s.md" % fam), "w") as f:
            f.write("\n".join(rs) + "\n")
print("rows: " + ", ".join("%s=%d" % (k, len(v)) for k, v in rows.items()))
