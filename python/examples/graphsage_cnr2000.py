#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""GraphSAGE-style mini-batches on the real web graph cnr-2000 (data/), the node
features gathered through bam from storage larger than the cache.

The graph is imported through the graph app (bam.import_graph, which also checks the
file), its neighbour lists sampled on the host (fan-out 10 then 5 per hop, as
GraphSAGE's loader does); the features of every node of a batch's neighbourhood come
from a FeatureStore (an emulated SSD, or --file) with one gather. Each batch's features
are checked against the matrix they were written from.

    python3 python/examples/graphsage_cnr2000.py [--target=auto|cpu|gpu] [--dim=128]
        [--dtype=float32|float16|bfloat16] [--batches=20] [--batch=512] [--file]
"""
import argparse
import gzip
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bam  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def load_csr(path):
    """CSR (offsets, targets) of a LAW graph-txt file (line v+1: v's out-neighbours)."""
    with gzip.open(path, "rt") as f:
        n = int(f.readline())
        lists = [np.array(line.split(), dtype=np.int64) for line in f]
    lists += [np.empty(0, np.int64)] * (n - len(lists))
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=off[1:])
    return off, np.concatenate(lists)


def sample(off, tgt, seeds, fanouts, rng):
    """Nodes of the sampled neighbourhood of seeds: each hop takes up to fanout random
    out-neighbours (with replacement) of the nodes of the hop before."""
    layers = [seeds]
    frontier = seeds
    for k in fanouts:
        deg = off[frontier + 1] - off[frontier]
        has = deg > 0
        f = np.repeat(frontier[has], k)
        pick = off[f] + (rng.random(len(f)) * np.repeat(deg[has], k)).astype(np.int64)
        frontier = np.unique(tgt[pick])
        layers.append(frontier)
    return np.unique(np.concatenate(layers))


def host_bits_dtype(a):
    return {2: np.uint16, 4: np.uint32}[a.itemsize]


def host_bits(x):
    """The gathered tensor's bits in host memory as a NumPy array (torch on the GPU, or
    for bfloat16; NumPy otherwise)."""
    if hasattr(x, "cpu"):  # torch
        import torch
        x = x.cpu()
        x = x.view(torch.int16 if x.element_size() == 2 else torch.int32).numpy()
    x = np.asarray(x)
    return x.view(host_bits_dtype(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="auto")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--file", action="store_true", help="features in a file (file back end) instead of an emulated SSD")
    ap.add_argument("--work", default=None, help="folder for the graph file (default: a temporary one)")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="bam-sage-")
    src = os.path.join(REPO, "data", "cnr-2000.graph-txt.gz")
    t0 = time.time()
    n, m = bam.import_graph(src, os.path.join(work, "cnr-2000.bam"), "law")
    off, tgt = load_csr(src)
    assert off[-1] == m and len(off) == n + 1
    print("cnr-2000: %d vertices, %d arcs (import and CSR %.1f s)" % (n, m, time.time() - t0))

    rng = np.random.default_rng(0)
    feats = rng.standard_normal((n, a.dim), dtype=np.float32)
    if a.dtype == "float16":
        feats = feats.astype(np.float16)
    store_bits = feats
    if a.dtype == "bfloat16":  # the top 16 bits of each float32
        store_bits = (feats.view(np.uint32) >> 16).astype(np.uint16)
    row_bytes = store_bits.itemsize * a.dim
    cache = max(n * row_bytes // 8, 1 << 20)  # an eighth of the features
    path = os.path.join(work, "features.bin") if a.file else None
    with bam.FeatureStore(path, n, a.dim, a.dtype, cache_bytes=cache, target=a.target) as fs:
        fs.load(store_bits)
        print("features: %d x %d %s on %s (%.0f MB), cache %.0f MB, target %s" % (
            n, a.dim, a.dtype, fs.ctx.backend.split(",")[0], n * row_bytes / 1e6, cache / 1e6, fs.target))
        nodes_total, t_gather = 0, 0.0
        for b in range(a.batches):
            seeds = rng.choice(n, a.batch, replace=False)
            nodes = sample(off, tgt, seeds, [10, 5], rng)
            t1 = time.time()
            x = fs.gather(nodes)
            t_gather += time.time() - t1
            want = store_bits[nodes]
            if not np.array_equal(host_bits(x), want.view(host_bits_dtype(want))):
                print("batch %d: the gathered features differ from the matrix" % b, file=sys.stderr)
                return 1
            nodes_total += len(nodes)
        st = fs.stats()
        print("%d batches, %d nodes gathered (%.0f per batch), %.3f s in gather, %.0f rows/s; hit rate %.2f; "
              "features checked" % (a.batches, nodes_total, nodes_total / a.batches, t_gather,
                                    nodes_total / max(t_gather, 1e-9), st["hit_rate"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
