"""bench/report: the results page and plots from the stored run records.

Reads every record (*.json, one per run, bench/README.md) in the records folder and
writes OUT/index.md and OUT/plots/*.png. The same records give the same page and
plots, byte for byte: nothing here reads the clock, the host or the environment.
Every number on the page is copied or divided from the records' CLI output.
"""
import argparse
import glob
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PNG_META = {"Software": None}


def load(runs_dir):
    recs = []
    for f in sorted(glob.glob(os.path.join(runs_dir, "*.json"))):
        try:
            with open(f) as fh:
                r = json.load(fh)
        except (OSError, ValueError) as e:
            print("bench/report: %s: %s: left out" % (f, e), file=sys.stderr)
            continue
        if not isinstance(r, dict) or r.get("schema") != 1:
            print("bench/report: %s: not a schema-1 record: left out" % f, file=sys.stderr)
            continue
        r["_file"] = os.path.basename(f)
        recs.append(r)
    recs.sort(key=lambda r: (r["invocation"], r.get("seq", 0), r["suite"], r["name"]))
    return recs


def machine_key(m):
    """What makes numbers comparable: the target and the device, not the host name."""
    if m.get("target") == "gpu":
        return "gpu %s" % (m.get("gpu") or "?")
    return "cpu %s x%s" % (m.get("cpu_model") or "?", m.get("cores"))


def slug(s):
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower()


def kind(out):
    if not isinstance(out, dict):
        return "none"
    if "compare" in out and "result" in out:
        return "compare"
    if "result" in out:
        return "io"
    if "pattern" in out and "element_reads_per_s" in out:
        return "array"
    if "algorithm" in out:
        return "graph"
    if "read_ratio" in out and "written_ratio" in out:
        return "vecadd"
    if isinstance(out.get("queries"), list) and "mode" in out:
        return "query"
    if out.get("program") == "gpu-python-gather":
        return "gather"
    return "other"


def g(d, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def num(x, fmt="%.3g"):
    if x is None:
        return "-"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, (int, float)):
        return fmt % x
    return str(x)


def ratio(a, b, fmt="%.2f"):
    if a is None or b is None or not b:
        return "-"
    return fmt % (a / b)


def okcell(r):
    if r.get("ok"):
        return "ok"
    why = []
    if r.get("exit_code") != r.get("expect_exit"):
        why.append("exit %s (expected %s)" % (r.get("exit_code"), r.get("expect_exit")))
    for c in r.get("checks", []):
        if not c.get("pass"):
            why.append("check failed: `%s`" % c.get("expr", "").replace("|", "\\|"))
    return "**FAILED** " + "; ".join(why)


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        out.append("| " + " | ".join(str(c).replace("\n", " ") for c in row) + " |")
    return out


def short(c):
    return (c or "unknown")[:10]


def from_cell(r, mids):
    return "%s @ %s%s" % (mids[machine_key(r["machine"])], short(r.get("commit")), "+" if r.get("dirty") else "")


# --- the tables, one per kind of output

def io_table(rs, mids):
    head = ["run", "IOPS", "MB/s", "p50 us", "p99 us", "baseline MB/s", "bam / baseline (MB/s)",
            "errors / timeouts / verify", "status", "from"]
    rows = []
    for r in rs:
        o, res, b = r["output"], r["output"]["result"], r["output"].get("baseline") or {}
        rows.append([r["name"], num(res.get("iops")), num(res.get("MBps"), "%.0f"), num(res.get("lat_p50_us"), "%.1f"),
                     num(res.get("lat_p99_us"), "%.1f"), num(b.get("MBps"), "%.0f"),
                     num(b.get("ratio_bw"), "%.3f") if b else "-",
                     "%s / %s / %s" % (res.get("errors"), res.get("timeouts"), res.get("verify_failures")),
                     okcell(r), from_cell(r, mids)])
    return table(head, rows)


def compare_table(rs, mids):
    head = ["run", "bs", "direct", "bam IOPS", "bam MB/s", "posix IOPS", "ceiling IOPS", "bam / posix",
            "bam / ceiling", "errors bam / posix / ceiling", "status", "from"]
    rows = []
    for r in rs:
        o = r["output"]
        res, cp = o["result"], o["compare"]
        px, ur = cp.get("posix") or {}, cp.get("uring") or {}
        rows.append([r["name"], num(g(o, "config", "bs"), "%d"), num(cp.get("direct_files"), "%d"),
                     num(res.get("iops")), num(res.get("MBps"), "%.0f"), num(px.get("iops")), num(ur.get("iops")),
                     num(px.get("ratio_iops"), "%.3f"), num(ur.get("ratio_iops"), "%.3f"),
                     "%s / %s / %s" % (res.get("errors"), px.get("errors"), ur.get("errors")),
                     okcell(r), from_cell(r, mids)])
    return table(head, rows)


def array_table(rs, mids):
    head = ["run", "pattern", "line", "coalesce", "element reads/s", "element writes/s (flush in)", "GB/s",
            "misses/s", "amplification", "HBM GB/s", "ratio to HBM", "wrong / errors", "status", "from"]
    rows = []
    for r in rs:
        o = r["output"]
        rows.append([r["name"], o.get("pattern"), num(o.get("line_size"), "%d"), "on" if o.get("coalesce") else "off",
                     num(o.get("element_reads_per_s")), num(o.get("writes_per_s_with_flush")),
                     num(o.get("requested_GBps"), "%.2f"), num(o.get("miss_iops")),
                     num(o.get("io_amplification"), "%.2f"), num(o.get("hbm_GBps"), "%.0f"),
                     num(o.get("ratio_to_hbm"), "%.3f"), "%s / %s" % (o.get("wrong_values"), o.get("errors")),
                     okcell(r), from_cell(r, mids)])
    return table(head, rows)


def group_baselines(rs):
    """group -> {variant: record} of the group's baseline runs (same invocation)."""
    bases = {}
    for r in rs:
        if r.get("role") == "baseline" and r.get("variant"):
            bases.setdefault(r["group"], {})[r["variant"]] = r
    return bases


def graph_table(rs, mids):
    bases = group_baselines(rs)
    bnames = sorted({v for b in bases.values() for v in b})
    head = ["run", "mode", "compute s", "end-to-end s", "edges/s", "amplification", "verified"]
    head += ["/ %s (compute, e2e)" % b for b in bnames] + ["status", "from"]
    rows = []
    for r in rs:
        o = r["output"]
        row = [r["name"], o.get("mode"), num(o.get("compute_s"), "%.4f"), num(o.get("end_to_end_s"), "%.4f"),
               num(o.get("edges_per_s")), num(o.get("io_amplification"), "%.2f"), o.get("verified", "-")]
        for b in bnames:
            br = bases.get(r["group"], {}).get(b)
            if br is None or br is r or r.get("role") == "baseline" or kind(br.get("output")) != "graph":
                row.append("")
            else:
                bo = br["output"]
                row.append("%s, %s" % (ratio(o.get("compute_s"), bo.get("compute_s")),
                                       ratio(o.get("end_to_end_s"), bo.get("end_to_end_s"))))
        row += [okcell(r), from_cell(r, mids)]
        rows.append(row)
    return table(head, rows)


def group_base(bases, r, k):
    """the one baseline run of r's group with output kind k (None: none, or r is one)"""
    if r.get("role") == "baseline":
        return None
    bs = [b for b in bases.get(r["group"], {}).values() if kind(b.get("output")) == k]
    return bs[0] if len(bs) == 1 else None


def vecadd_table(rs, mids):
    bases = group_baselines(rs)
    head = ["run", "mode", "vector GiB", "cache GiB", "s (flush in it)", "flush s", "GB/s (3 vectors)",
            "read / (a+b)", "written / c", "baseline s / this s", "wrong / errors", "status", "from"]
    rows = []
    for r in rs:
        o, b = r["output"], group_base(bases, r, "vecadd")
        rows.append([r["name"], o.get("mode"), num((o.get("vector_bytes") or 0) / 2 ** 30, "%.2f"),
                     num((o.get("cache_bytes") or 0) / 2 ** 30, "%.2f"), num(o.get("seconds"), "%.3f"),
                     num(o.get("flush_seconds"), "%.3f"), num(o.get("GBps"), "%.2f"), num(o.get("read_ratio"), "%.3f"),
                     num(o.get("written_ratio"), "%.3f"),
                     ratio(b["output"].get("seconds"), o.get("seconds")) if b else "",
                     "%s / %s" % (o.get("wrong"), o.get("errors")), okcell(r), from_cell(r, mids)])
    return table(head, rows)


def load_rate(o):
    """Whole-column runs: the rate the columns were read at (all queries' bytes read over
    their load time), beside the pace asked for with --read-bw; '-' for other modes."""
    qs = [q for q in o.get("queries", []) if q.get("load_s") and q.get("bytes_read")]
    if o.get("mode") != "whole-column" or not qs:
        return "-"
    rate = sum(q["bytes_read"] for q in qs) / sum(q["load_s"] for q in qs) / 1e9
    pace = o.get("read_bw")
    return "%.1f (%s)" % (rate, "%.1f" % (pace / 1e9) if pace else "unpaced")


def query_table(rs, mids):
    bases = group_baselines(rs)
    qn = []
    for r in rs:
        for q in r["output"]["queries"]:
            if q.get("name") not in qn:
                qn.append(q.get("name"))
    head = ["run", "mode", "rows"] + ["%s e2e s (amplification)" % q for q in qn]
    head += ["baseline e2e / this (%s)" % ", ".join(qn), "column load GB/s (paced at)", "verified", "status", "from"]
    rows = []
    for r in rs:
        o, b = r["output"], group_base(bases, r, "query")
        qs = {q.get("name"): q for q in o["queries"]}
        bq = {q.get("name"): q for q in b["output"]["queries"]} if b else {}
        row = [r["name"], o.get("mode"), num(o.get("rows"), "%.3g")]
        row += ["%s (%s)" % (num(g(qs, q, "e2e_s"), "%.3f"), num(g(qs, q, "amplification"), "%.2f")) if q in qs else ""
                for q in qn]
        row.append(", ".join(ratio(g(bq, q, "e2e_s"), g(qs, q, "e2e_s")) for q in qn) if b else "")
        row.append(load_rate(o))
        vs = {q.get("verified", "-") for q in o["queries"]}
        row += [vs.pop() if len(vs) == 1 else "mixed", okcell(r), from_cell(r, mids)]
        rows.append(row)
    return table(head, rows)


def gather_table(rs, mids):
    head = ["run", "dim", "dtype", "bam rows/s", "bam GB/s", "bam hit rate", "bam / pinned", "bam / mmap",
            "bam / GPU-resident", "status", "from"]
    rows = []
    for r in rs:
        for c in r["output"].get("configs", []):
            m = c.get("methods", {})
            rows.append([r["name"], c.get("dim"), c.get("dtype"), num(g(m, "bam", "rows_per_s")),
                         num(g(m, "bam", "GBps"), "%.2f"), num(c.get("bam_hit_rate"), "%.2f"),
                         num(g(m, "pinned", "bam_ratio"), "%.2f"), num(g(m, "mmap", "bam_ratio"), "%.2f"),
                         num(g(m, "gpu", "bam_ratio"), "%.3f"), okcell(r), from_cell(r, mids)])
    return table(head, rows)


def other_table(rs, mids):
    head = ["run", "command", "exit", "wall s", "status", "from"]
    return table(head, [[r["name"], "`%s`" % " ".join(r.get("command", [])[1:3]), r.get("exit_code"),
                         num(r.get("wall_s"), "%.1f"), okcell(r), from_cell(r, mids)] for r in rs])


TABLES = [("io", io_table, "I/O through the queues; the baseline is the same run's plain copy kernel"),
          ("compare", compare_table, "file back end; posix and the io_uring ceiling measured in the same run"),
          ("array", array_table, "reads through the cache and array API"),
          ("graph", graph_table, "BFS/CC; ratios are time over the same group's baseline run in the same "
                                 "invocation (< 1: faster than the baseline)"),
          ("vecadd", vecadd_table, "vecadd c = a + b through storage; the ratio is the same group's baseline "
                                   "(tiling) time over this run's (> 1: faster than the baseline)"),
          ("query", query_table, "table queries; the ratio per query is the same group's baseline (whole-column) "
                                 "end-to-end time over this run's (> 1: faster than the baseline); a whole-column run whose "
                                 "column load rate stays below its pace favours bam's ratio by that factor"),
          ("gather", gather_table, "Python gather of random feature rows; ratios are bam's rows/s over each "
                                   "method's in the same run (> 1: bam faster)"),
          ("none", other_table, "runs without JSON output"),
          ("other", other_table, "other runs")]


# --- plots, one per suite section

def barh(ax, labels, series, xlabel, log=True):
    n = len(series)
    h = 0.8 / max(n, 1)
    y = list(range(len(labels)))
    for i, (name, vals) in enumerate(series):
        ys = [v + (i - (n - 1) / 2) * h for v in y]
        ax.barh(ys, [v if v else 0 for v in vals], height=h, label=name)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="best")


def plot_section(path, title, rs):
    by = {}
    for r in rs:
        by.setdefault(kind(r.get("output")), []).append(r)
    panels = []
    if by.get("io"):
        io = by["io"]
        s = [("bam", [g(r, "output", "result", "MBps") for r in io])]
        if any(g(r, "output", "baseline", "MBps") for r in io):
            s.append(("same-run baseline", [g(r, "output", "baseline", "MBps") for r in io]))
        panels.append(([r["name"] for r in io], s, "MB/s (log)"))
    if by.get("compare"):
        c = by["compare"]
        panels.append(([r["name"] for r in c], [
            ("bam", [g(r, "output", "result", "iops") for r in c]),
            ("posix (pread + copy)", [g(r, "output", "compare", "posix", "iops") for r in c]),
            ("io_uring ceiling", [g(r, "output", "compare", "uring", "iops") for r in c])], "IOPS (log)"))
    if by.get("array"):
        a = by["array"]
        panels.append(([r["name"] for r in a], [("element reads/s", [g(r, "output", "element_reads_per_s") for r in a])],
                       "element reads/s (log)"))
    if by.get("graph"):
        gr = by["graph"]
        bases = group_baselines(gr)
        bnames = sorted({v for b in bases.values() for v in b})
        subj = [r for r in gr if r.get("role") != "baseline" and bases.get(r["group"])]
        if subj:
            series = []
            for b in bnames:
                vals = []
                for r in subj:
                    br = bases.get(r["group"], {}).get(b)
                    vals.append(g(r, "output", "end_to_end_s") / g(br, "output", "end_to_end_s")
                                if br and g(r, "output", "end_to_end_s") and g(br, "output", "end_to_end_s") else None)
                series.append(("/ " + b, vals))
            panels.append(([r["name"] for r in subj], series, "end-to-end time / baseline's (log; < 1: faster)"))
        else:
            panels.append(([r["name"] for r in gr], [("compute s", [g(r, "output", "compute_s") for r in gr])],
                           "compute s (log)"))
    if not panels:
        return False
    heights = [max(1.6, 0.28 * len(p[0]) * max(1, len(p[1])) ** 0.5 + 1.0) for p in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, sum(heights)), gridspec_kw={"height_ratios": heights},
                             squeeze=False)
    for ax, (labels, series, xl) in zip(axes[:, 0], panels):
        barh(ax, labels, series, xl)
        if "baseline" in xl:
            ax.axvline(1.0, color="k", lw=0.8)
    axes[0, 0].set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata=PNG_META)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description="results page and plots from bench/run records")
    ap.add_argument("--runs", default="results/runs", help="the records folder (default results/runs)")
    ap.add_argument("--out", default="results", help="where index.md and plots/ go (default results)")
    a = ap.parse_args()
    recs = load(a.runs)
    plots = os.path.join(a.out, "plots")
    os.makedirs(plots, exist_ok=True)
    for f in glob.glob(os.path.join(plots, "*.png")):
        os.remove(f)  # only the plots of these records remain

    # machines, numbered by first appearance
    mids, minfo = {}, {}
    for r in recs:
        k = machine_key(r["machine"])
        if k not in mids:
            mids[k] = "M%d" % (len(mids) + 1)
            minfo[k] = r["machine"]
    # invocations
    invs = {}
    for r in recs:
        invs.setdefault(r["invocation"], []).append(r)

    L = ["# Benchmark results", "",
         "Generated by `bench/report` from the %d run records in `%s/` (%d invocations of `bench/run`); "
         "do not edit: run the suites (`bench/run SUITE...`) and `bench/report` again. Record schema, suites and "
         "how to run them: [bench/README.md](../bench/README.md). Earlier lab notes, frozen: [history/](history/)."
         % (len(recs), a.runs.rstrip("/"), len(invs)), "",
         "Each section is the newest invocation that ran the suite on one kind of machine (target and GPU, or "
         "target and CPU; full and `--quick` sizes apart). *from* names the machine and the commit (`+`: the "
         "working tree had changes). Every number is the bam CLI's JSON output in the record; ratios are computed "
         "from numbers of the same invocation.", ""]
    L.append("## Machines")
    L.append("")
    L += table(["id", "target", "GPU", "GPU driver", "CPU", "cores", "hosts"],
               [[mids[k], minfo[k].get("target"), minfo[k].get("gpu") or "-", minfo[k].get("gpu_driver") or "-",
                 minfo[k].get("cpu_model") or "-", minfo[k].get("cores"),
                 ", ".join(sorted({r["machine"].get("hostname", "?") for r in recs if machine_key(r["machine"]) == k}))]
                for k in mids])
    L.append("")
    L.append("## Invocations")
    L.append("")
    L += table(["invocation", "date (UTC)", "commit", "machine", "sizes", "suites", "runs", "not as expected"],
               [[i, min(r["date"] for r in rs), short(rs[0].get("commit")) + ("+" if rs[0].get("dirty") else ""),
                 mids[machine_key(rs[0]["machine"])], "quick" if rs[0].get("quick") else "full",
                 " ".join(sorted({r["suite"] for r in rs})), len(rs), sum(1 for r in rs if not r.get("ok"))]
                for i, rs in sorted(invs.items())])
    L.append("")

    # newest invocation per (suite, machine, quick)
    latest = {}
    for r in recs:
        key = (r["suite"], machine_key(r["machine"]), bool(r.get("quick")))
        if key not in latest or r["invocation"] > latest[key]:
            latest[key] = r["invocation"]
    suite_order = ["smoke", "io", "array", "graph", "file", "check"]
    keys = sorted(latest, key=lambda k: (suite_order.index(k[0]) if k[0] in suite_order else 99, k[0],
                                         mids[k[1]], k[2]))
    for key in keys:
        suite, mk, quick = key
        inv = latest[key]
        rs = [r for r in invs[inv] if r["suite"] == suite]
        r0 = rs[0]
        title = "%s: %s, %s sizes" % (suite, mids[mk], "quick" if quick else "full")
        L.append("## " + title)
        L.append("")
        L.append("Invocation `%s`, %s, commit `%s`%s, machine %s (%s). %d runs, %d not as expected." % (
            inv, min(r["date"] for r in rs), r0.get("commit"), " (with changes)" if r0.get("dirty") else "",
            mids[mk], mk, len(rs), sum(1 for r in rs if not r.get("ok"))))
        L.append("")
        by = {}
        for r in rs:
            by.setdefault(kind(r.get("output")), []).append(r)
        for k, fn, what in TABLES:
            if by.get(k):
                L.append("*%s*" % what)
                L.append("")
                L += fn(by[k], mids)
                L.append("")
        png = "%s-%s-%s.png" % (suite, slug(mids[mk]), "quick" if quick else "full")
        if plot_section(os.path.join(plots, png), "%s (%s); %s @ %s" % (title, mk, inv, short(r0.get("commit"))), rs):
            L.append("![%s](plots/%s)" % (title, png))
            L.append("")
        L.append("Commands (exact):")
        L.append("")
        L.append("```")
        for r in rs:
            L.append("%s: %s" % (r["name"], r.get("command_line", "")))
        L.append("```")
        L.append("")
    with open(os.path.join(a.out, "index.md"), "w") as f:
        f.write("\n".join(L).rstrip("\n") + "\n")
    print("bench/report: %d records, %d sections: %s, %s" % (
        len(recs), len(keys), os.path.join(a.out, "index.md"), plots), file=sys.stderr)


if __name__ == "__main__":
    main()
