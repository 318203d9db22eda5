# SPDX-License-Identifier: MIT
"""ctypes bindings of libbam.so and libbam_graph.so: the functions and structures the
package uses, declared once with their C types (include/bam/bam.h, cache.h,
apps/graph/include/bam/graph_run.h).

Where the libraries come from, first match wins:
  $BAM_LIBRARY / $BAM_GRAPH_LIBRARY   full paths of libbam.so / libbam_graph.so
  $BAM_BUILD_DIR                      a CMake build folder (src/, apps/graph/ under it)
  the install prefix recorded at `cmake --install` (_install.py), then the system's
  library path (ldconfig / LD_LIBRARY_PATH).
ctypes releases the GIL during every foreign call, so the waits for I/O inside the
library never hold up other Python threads.
"""
import ctypes
import ctypes.util
import os

c_u32, c_u64, c_int, c_void_p, c_char_p = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p

SONAME_VERSION = "0.1"


class CtxOpts(ctypes.Structure):
    _fields_ = [("target", c_int), ("qpairs", c_u32), ("queue_depth", c_u32), ("timeout_ns", c_u64),
                ("ctrl_workers", c_u32), ("quiet", c_int)]


class CacheOpts(ctypes.Structure):
    _fields_ = [("capacity", c_u64), ("line_size", c_u32)]


class ArrayOpts(ctypes.Structure):
    _fields_ = [("n_elems", c_u64), ("elem_size", c_u32), ("layout", c_int), ("n_ctrl", c_u32),
                ("first_ctrl", c_u32), ("base_lba", c_u64), ("priority", c_u32), ("read_only", c_u32)]


class ArrayCounters(ctypes.Structure):
    _fields_ = [(n, c_u64) for n in ("hits", "misses", "evictions", "writebacks", "bytes_requested",
                                     "bytes_read", "bytes_written", "errors", "accesses", "fills_avoided",
                                     "partial_write_fetches", "writeback_errors")]


class ArrayStats(ctypes.Structure):
    _fields_ = [("c", ArrayCounters), ("amplification", ctypes.c_double), ("hit_rate", ctypes.c_double)]


class NsInfo(ctypes.Structure):
    _fields_ = [("nlba", c_u64), ("lba_size", c_u32), ("nsid", c_u32), ("mqes", c_u32), ("mdts_bytes", c_u32),
                ("model", ctypes.c_char * 41)]


# void (*msg)(void *arg, enum bam_graph_msg kind, const char *text)
MSG_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_char_p)


def _candidates(name, env):
    p = os.environ.get(env)
    if p:
        yield p
    b = os.environ.get("BAM_BUILD_DIR")
    if b:
        yield os.path.join(b, "src" if name == "bam" else "apps/graph", "lib%s.so" % name)
    try:
        from . import _install  # written by `cmake --install`
        yield os.path.join(_install.LIBDIR, "lib%s.so.%s" % (name, SONAME_VERSION))
    except ImportError:
        pass
    yield "lib%s.so.%s" % (name, SONAME_VERSION)
    f = ctypes.util.find_library(name)
    if f:
        yield f


def _load(name, env):
    errs = []
    for c in _candidates(name, env):
        try:
            return ctypes.CDLL(c)
        except OSError as e:
            errs.append("%s: %s" % (c, e))
    raise ImportError("bam: cannot load lib%s.so (set %s to its path, or BAM_BUILD_DIR to a build folder): %s"
                      % (name, env, "; ".join(errs) or "not found"))


def _decl(lib, name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


lib = _load("bam", "BAM_LIBRARY")
P = ctypes.POINTER
_decl(lib, "bam_version", c_char_p)
_decl(lib, "bam_gpu_available", c_int)
_decl(lib, "bam_ctx_open", c_int, c_char_p, P(CtxOpts), P(c_void_p), c_char_p, ctypes.c_size_t)
_decl(lib, "bam_ctx_close", None, c_void_p)
_decl(lib, "bam_ctx_target", c_int, c_void_p)
_decl(lib, "bam_ctx_ctrl_count", c_u32, c_void_p)
_decl(lib, "bam_ctx_ns_info", c_int, c_void_p, c_u32, P(NsInfo))
_decl(lib, "bam_ctx_backend_desc", c_char_p, c_void_p)
_decl(lib, "bam_ctx_error", c_char_p, c_void_p)
_decl(lib, "bam_ctx_io_error", c_int, c_void_p, c_int, P(c_int), P(c_u32), P(c_u64))
_decl(lib, "bam_mem_alloc", c_void_p, c_void_p, c_int, c_u64)
_decl(lib, "bam_mem_free", None, c_void_p, c_int, c_void_p)
_decl(lib, "bam_mem_copy", c_int, c_void_p, c_void_p, c_void_p, c_u64)
_decl(lib, "bam_cache_create", c_int, c_void_p, P(CacheOpts), P(c_void_p))
_decl(lib, "bam_cache_destroy", None, c_void_p)
_decl(lib, "bam_cache_flush", c_int, c_void_p)
_decl(lib, "bam_cache_invalidate", c_int, c_void_p)
_decl(lib, "bam_cache_lines", c_u64, c_void_p)
_decl(lib, "bam_cache_line_size", c_u32, c_void_p)
_decl(lib, "bam_array_create", c_int, c_void_p, P(ArrayOpts), P(c_void_p))
_decl(lib, "bam_array_destroy", None, c_void_p)
_decl(lib, "bam_array_end_lba", c_u64, c_void_p)
_decl(lib, "bam_array_media_write", c_int, c_void_p, c_u64, c_void_p, c_u64)
_decl(lib, "bam_array_media_read", c_int, c_void_p, c_u64, c_void_p, c_u64)
_decl(lib, "bam_array_gather", c_int, c_void_p, c_void_p, c_u32, c_u64, c_u64, c_void_p, c_void_p)
_decl(lib, "bam_array_read", c_int, c_void_p, c_u64, c_u64, c_void_p, c_void_p)
_decl(lib, "bam_array_write", c_int, c_void_p, c_u64, c_u64, c_void_p, c_void_p)
_decl(lib, "bam_array_stats", c_int, c_void_p, P(ArrayStats))
_decl(lib, "bam_array_stats_reset", c_int, c_void_p)
_decl(lib, "bam_strerror", c_char_p, c_int)
_decl(lib, "nvme_status_name", c_char_p, ctypes.c_uint16)
HAVE_ON_DEMAND = hasattr(lib, "bam_gpu_workers_on_demand")
if HAVE_ON_DEMAND:
    _decl(lib, "bam_gpu_workers_on_demand", c_int, c_int)

_graph = None


def graph_lib():
    """libbam_graph.so, loaded on first use (BFS, CC, import)."""
    global _graph
    if _graph is None:
        g = _load("bam_graph", "BAM_GRAPH_LIBRARY")
        _decl(g, "bam_graph_size", c_int, c_char_p, P(c_u64), P(c_u64), c_char_p, ctypes.c_size_t)
        _decl(g, "bam_graph_bfs_levels", c_int, c_char_p, c_char_p, c_int, c_u64, c_u64, c_void_p, c_u64,
              P(c_u32), MSG_FN, c_void_p, c_char_p, ctypes.c_size_t)
        _decl(g, "bam_graph_cc_labels", c_int, c_char_p, c_char_p, c_int, c_u64, c_void_p, c_u64, P(c_u64),
              MSG_FN, c_void_p, c_char_p, ctypes.c_size_t)
        _decl(g, "bam_graph_import", c_int, c_char_p, c_char_p, c_int, c_void_p, c_void_p, c_char_p, ctypes.c_size_t)
        _decl(g, "bam_graph_format_parse", c_int, c_char_p, P(c_int))
        _graph = g
    return _graph
