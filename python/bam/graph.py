# SPDX-License-Identifier: MIT
"""Graph analytics through bam (apps/graph, libbam_graph.so): import a graph file, BFS
levels and connected-component labels per vertex, the arrays read on demand through
bam's cache from a back end."""
import ctypes
import sys

from . import BamError, _lib


def _msg_fn(progress):
    """The C message callback: progress(text) for each line (True: stderr; None: quiet)."""
    if progress is None or progress is False:
        return _lib.MSG_FN(lambda arg, kind, text: None)
    if progress is True:
        return _lib.MSG_FN(lambda arg, kind, text: sys.stderr.write(text.decode(errors="replace") + "\n"))
    return _lib.MSG_FN(lambda arg, kind, text: progress(text.decode(errors="replace")))


def _fail(rc, err):
    raise BamError(-rc, err.value.decode(errors="replace").strip() or "graph run failed")


def size(graph):
    """(vertices, arcs) of a bam graph file."""
    g = _lib.graph_lib()
    n, m = ctypes.c_uint64(), ctypes.c_uint64()
    err = ctypes.create_string_buffer(2048)
    rc = g.bam_graph_size(graph.encode(), ctypes.byref(n), ctypes.byref(m), err, len(err))
    if rc:
        _fail(rc, err)
    return n.value, m.value


def import_graph(src, dst, fmt="auto"):
    """Convert a graph (LAW graph-txt, SNAP, Matrix Market, arc list; gzip or not) into
    bam's graph file dst. Returns (vertices, arcs)."""
    g = _lib.graph_lib()
    f = ctypes.c_int()
    if g.bam_graph_format_parse(fmt.encode(), ctypes.byref(f)):
        raise ValueError("graph format %r" % fmt)
    opts = (ctypes.c_uint8 * 64)()  # struct bam_graph_build_opts, zeroed: defaults
    err = ctypes.create_string_buffer(4096)
    rc = g.bam_graph_import(src.encode(), dst.encode(), f.value, ctypes.cast(opts, ctypes.c_void_p), None, err,
                            len(err))
    if rc:
        _fail(rc, err)
    return size(dst)


def _out(n, dtype):
    import numpy
    return numpy.empty(n, dtype=dtype)


def bfs(graph, source=None, backend=None, target="auto", cache_bytes=0, progress=None):
    """BFS levels of every vertex from 'source' (None: the run's default choice) with
    the graph's arrays read through bam's cache on 'backend' (None: "emu"). Returns
    (levels, levels_max): levels a NumPy uint32 array of n entries, 0 at the source and
    0xFFFFFFFF for vertices not reached. progress: None, True (stderr) or a function of
    one line of text. Raises BamError."""
    from . import TARGETS
    g = _lib.graph_lib()
    n, _ = size(graph)
    lv = _out(n, "uint32")
    lmax = ctypes.c_uint32()
    err = ctypes.create_string_buffer(4096)
    cb = _msg_fn(progress)
    rc = g.bam_graph_bfs_levels(graph.encode(), backend.encode() if backend else None, TARGETS[target],
                                0xFFFFFFFFFFFFFFFF if source is None else int(source), cache_bytes,
                                lv.ctypes.data, n, ctypes.byref(lmax), cb, None, err, len(err))
    if rc:
        _fail(rc, err)
    return lv, lmax.value


def cc(graph, backend=None, target="auto", cache_bytes=0, progress=None):
    """Connected components (of the arcs taken as undirected): (labels, components),
    labels a NumPy uint64 array of n entries, each the smallest vertex id of its
    component. As bfs() otherwise."""
    from . import TARGETS
    g = _lib.graph_lib()
    n, _ = size(graph)
    lab = _out(n, "uint64")
    comps = ctypes.c_uint64()
    err = ctypes.create_string_buffer(4096)
    cb = _msg_fn(progress)
    rc = g.bam_graph_cc_labels(graph.encode(), backend.encode() if backend else None, TARGETS[target], cache_bytes,
                               lab.ctypes.data, n, ctypes.byref(comps), cb, None, err, len(err))
    if rc:
        _fail(rc, err)
    return lab, comps.value
