# SPDX-License-Identifier: MIT
"""bam for Python: arrays on NVMe storage read on demand through bam's software cache,
from PyTorch, CuPy or NumPy, on the GPU or (without one) on host threads.

    import bam
    ctx = bam.Context("emu:size=1G")                 # any back end (docs/BACKENDS.md)
    cache = ctx.cache(capacity=64 << 20)             # bytes of cache in target memory
    a = cache.array(1 << 20, "float32")              # elements on the storage
    a.load(values)                                   # provision (bypasses the cache)
    rows = a.gather(idx, row_elems=128)              # [len(idx), 128], no extra copy
    a[10:20]; a[10:20] = x; cache.flush()

    fs = bam.FeatureStore("feat.bin", num_rows, dim, "float16")
    x = fs.gather(ids)                               # [len(ids), dim]

    levels = bam.bfs("graph.bam", source=0)          # per-vertex BFS levels
    labels = bam.cc("graph.bam")                     # per-vertex component labels

Results live in the context's target memory and are handed out without a copy: NumPy
arrays on the CPU target (torch tensors where the inputs are torch tensors, or the
dtype is bfloat16), torch / CuPy tensors on the GPU (the kind of the index tensor), or a
bam.Buffer, which has __cuda_array_interface__ (GPU), __array_interface__ (CPU) and
__dlpack__ (torch.from_dlpack, cupy.from_dlpack, numpy.from_dlpack).

Errors raise bam.BamError (an OSError: .errno; .nvme_status and .nvme_status_name when
the storage returned an NVMe error status). The library's waits run with the GIL
released (ctypes). On the GPU, bam runs the emulated controller's kernel only while one
of its calls runs (on-demand workers, docs/PYTHON.md), so that PyTorch's own
synchronisations, allocations and module loads between calls cannot wait for it.
"""
import ctypes
import errno as _errno
import os
import sys

# The GPU's controller workers run on demand from Python (Context below), which is safe
# under lazy module loading; keep CUDA's (and PyTorch's) default, lazy, rather than
# letting libbam's first CUDA call make the process load every module eagerly.
os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")

from . import _lib
from ._lib import lib as _L
from . import _dlpack

__all__ = ["BamError", "Context", "Cache", "Array", "Buffer", "FeatureStore", "bfs", "cc", "import_graph",
           "gpu_available", "version", "DTYPES"]

TARGETS = {"auto": 0, "cpu": 1, "gpu": 2}
_TARGET_NAMES = {1: "cpu", 2: "gpu"}
MEM_DEVICE = 0
# element types: bytes per element
DTYPES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int8": 1, "uint8": 1, "int16": 2,
          "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8}


def version():
    """The library's version string ("MAJOR.MINOR.PATCH")."""
    return _L.bam_version().decode()


def gpu_available():
    """True when libbam was built with CUDA and a GPU is present."""
    return bool(_L.bam_gpu_available())


class BamError(OSError):
    """A failed bam call: errno (positive), strerror (the library's message), and for
    storage errors nvme_status (SCT << 8 | SC) and nvme_status_name."""

    def __init__(self, err, msg, nvme_status=0):
        super().__init__(err, msg)
        self.nvme_status = nvme_status
        self.nvme_status_name = _L.nvme_status_name(nvme_status).decode() if nvme_status else None

    def __str__(self):
        s = "[Errno %d] %s" % (self.errno, self.strerror)
        if self.nvme_status:
            s += " (NVMe status 0x%03x: %s)" % (self.nvme_status, self.nvme_status_name)
        return s


def _raise(rc, msg, ctx=None):
    status = 0
    if ctx is not None:
        e, st, n = ctypes.c_int(), ctypes.c_uint32(), ctypes.c_uint64()
        if _L.bam_ctx_io_error(ctx, 1, ctypes.byref(e), ctypes.byref(st), ctypes.byref(n)) == 0:
            status = st.value
    raise BamError(-rc, msg or _L.bam_strerror(rc).decode(), status)


def _dtype_name(dt):
    """'float32' etc. from a string, NumPy dtype or torch dtype."""
    if isinstance(dt, str):
        name = dt
    else:
        name = str(dt)
        if name.startswith("torch."):
            name = name[6:]
        elif hasattr(dt, "name"):
            name = dt.name
    name = {"half": "float16", "float": "float32", "double": "float64", "long": "int64", "int": "int32"}.get(name, name)
    if name not in DTYPES:
        raise ValueError("dtype %r: bam arrays hold %s" % (dt, ", ".join(DTYPES)))
    return name


def _torch():
    return sys.modules.get("torch") or _try_import("torch")


def _cupy():
    return sys.modules.get("cupy") or _try_import("cupy")


def _try_import(name):
    try:
        return __import__(name)
    except ImportError:
        return None


def _kind(x):
    m = type(x).__module__.split(".")[0]
    if m == "torch":
        return "torch"
    if m == "cupy":
        return "cupy"
    if isinstance(x, Buffer):
        return "buffer"
    if m == "numpy":
        return "numpy"
    return None


def _np():
    import numpy
    return numpy


class Buffer:
    """Memory bam allocated in a context's target memory (GPU memory on the GPU target,
    host memory on the CPU target) holding a C-contiguous tensor. Zero-copy views:
    __cuda_array_interface__ (CuPy, torch.as_tensor on the GPU), __array_interface__
    (NumPy, CPU target), __dlpack__ / __dlpack_device__ (torch.from_dlpack, ...). The
    memory is freed when the Buffer and every view of it are gone."""

    def __init__(self, ctx, shape, dtype):
        self.ctx = ctx
        self.shape = tuple(int(s) for s in shape)
        self.dtype = _dtype_name(dtype)
        n = 1
        for s in self.shape:
            n *= s
        self.nbytes = n * DTYPES[self.dtype]
        self.on_gpu = ctx.target == "gpu"
        self.ptr = _L.bam_mem_alloc(ctx._h, MEM_DEVICE, max(self.nbytes, 1))
        if not self.ptr:
            raise BamError(_errno.ENOMEM, "cannot allocate %d bytes of %s memory" % (self.nbytes, ctx.target))

    def __del__(self):
        if getattr(self, "ptr", None) and self.ctx._h:
            _L.bam_mem_free(self.ctx._h, MEM_DEVICE, self.ptr)
            self.ptr = None

    def _typestr(self):
        if self.dtype == "bfloat16":
            return "<V2"  # no array-interface code for bfloat16
        return _np().dtype(self.dtype).str

    @property
    def __cuda_array_interface__(self):
        if not self.on_gpu:
            raise AttributeError("a CPU-target buffer has no __cuda_array_interface__")
        return {"shape": self.shape, "typestr": self._typestr(), "data": (self.ptr, False), "version": 3,
                "strides": None, "stream": None}

    @property
    def __array_interface__(self):
        if self.on_gpu:
            raise AttributeError("a GPU buffer has no __array_interface__")
        return {"shape": self.shape, "typestr": self._typestr(), "data": (self.ptr, False), "version": 3,
                "strides": None}

    def __dlpack_device__(self):
        return (_dlpack.kDLCUDA, self.ctx.device_id) if self.on_gpu else (_dlpack.kDLCPU, 0)

    def __dlpack__(self, stream=None):
        # bam's calls return after their kernel is complete: nothing to order with the
        # consumer's stream
        return _dlpack.capsule(self, self.ptr, self.shape, self.dtype, self.on_gpu, self.ctx.device_id)

    def numpy(self):
        """A NumPy view (CPU target)."""
        return _np().asarray(self)

    def torch(self):
        """A torch tensor viewing this memory (torch.from_dlpack)."""
        return _torch().from_dlpack(self)


class Context:
    """An open context: storage through a back end ("emu[:k=v,...]", "file:PATH,...",
    "null:...": docs/BACKENDS.md) and the target its kernels run on ("auto": the GPU when
    there is one, "cpu", "gpu"). qpairs, queue_depth, ctrl_workers: bam_ctx_opts (0 =
    the defaults); timeout_s: the bound of every wait for a completion (0: 5 s)."""

    def __init__(self, backend="emu", target="auto", qpairs=0, queue_depth=0, timeout_s=0, ctrl_workers=0,
                 quiet=True):
        if target not in TARGETS:
            raise ValueError("target %r: one of %s" % (target, ", ".join(TARGETS)))
        self._h = None
        if target != "cpu" and _lib.HAVE_ON_DEMAND and _L.bam_gpu_available():
            # the emulator's persistent kernel runs only inside bam's calls (docs/PYTHON.md)
            _L.bam_gpu_workers_on_demand(1)
        o = _lib.CtxOpts(TARGETS[target], qpairs, queue_depth, int(timeout_s * 1e9), ctrl_workers, int(bool(quiet)))
        h = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        rc = _L.bam_ctx_open(backend.encode() if backend else None, ctypes.byref(o), ctypes.byref(h), err, len(err))
        if rc:
            _raise(rc, err.value.decode())
        self._h = h.value
        self.target = _TARGET_NAMES[_L.bam_ctx_target(self._h)]
        self.device_id = 0
        if self.target == "gpu":
            t = sys.modules.get("torch")
            if t is not None and t.cuda.is_available():
                self.device_id = t.cuda.current_device()
        self._children = []

    @property
    def backend(self):
        """The back-end string with its defaults filled in."""
        return _L.bam_ctx_backend_desc(self._h).decode()

    def ns_info(self, i=0):
        """Namespace facts of controller i: dict(nlba, lba_size, mqes, mdts_bytes, model)."""
        n = _lib.NsInfo()
        rc = _L.bam_ctx_ns_info(self._h, i, ctypes.byref(n))
        if rc:
            _raise(rc, "controller %d: %s" % (i, _L.bam_strerror(rc).decode()))
        return {"nlba": n.nlba, "lba_size": n.lba_size, "mqes": n.mqes, "mdts_bytes": n.mdts_bytes,
                "model": n.model.decode(errors="replace"), "bytes": n.nlba * n.lba_size}

    @property
    def controllers(self):
        return _L.bam_ctx_ctrl_count(self._h)

    def cache(self, capacity=64 << 20, line_size=4096):
        """A cache of 'capacity' bytes in lines of line_size bytes (bam_cache_create)."""
        return Cache(self, capacity, line_size)

    def buffer(self, shape, dtype="float32"):
        """An uninitialised (zeroed) Buffer in the target's memory."""
        return Buffer(self, shape, dtype)

    def _error(self, rc):
        _raise(rc, _L.bam_ctx_error(self._h).decode(), self._h)

    def close(self):
        """Close the context (caches and arrays made from it first). Idempotent."""
        for c in reversed(self._children):
            c.close()
        self._children = []
        if self._h:
            _L.bam_ctx_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Cache:
    """A software cache in the target's memory; arrays on the storage share it."""

    def __init__(self, ctx, capacity, line_size):
        self.ctx = ctx
        self._h = None
        h = ctypes.c_void_p()
        rc = _L.bam_cache_create(ctx._h, ctypes.byref(_lib.CacheOpts(capacity, line_size)), ctypes.byref(h))
        if rc:
            ctx._error(rc)
        self._h = h.value
        self.line_size = _L.bam_cache_line_size(self._h)
        self.lines = _L.bam_cache_lines(self._h)
        self._arrays = []
        self._next_lba = 0
        ctx._children.append(self)

    def array(self, n_elems, dtype="float32", base_lba=None, layout="stripe", priority=0, read_only=False):
        """An array of n_elems elements on the storage at base_lba on each controller
        (None: after the arrays made before on this cache; 0: the start, to open data
        already there). layout: "stripe" or "replicate". read_only: its lines are never
        dirtied or written back; a write raises BamError (EPERM)."""
        return Array(self, n_elems, dtype, base_lba, layout, priority, read_only)

    def flush(self):
        """Write every dirty line back to the storage (bam_cache_flush)."""
        rc = _L.bam_cache_flush(self._h)
        if rc:
            self.ctx._error(rc)

    def invalidate(self):
        """Drop every clean line (cold runs). BamError(EBUSY) if a line is dirty."""
        rc = _L.bam_cache_invalidate(self._h)
        if rc:
            self.ctx._error(rc)

    def close(self):
        for a in reversed(self._arrays):
            a.close()
        self._arrays = []
        if self._h:
            _L.bam_cache_destroy(self._h)
            self._h = None


class Array:
    """Elements on the storage, read and written through a cache. a[i:j] reads a slice,
    a[i:j] = x writes one (through the cache: flush to make it durable); gather() reads
    rows by an index tensor; load()/dump() move data straight to/from the media."""

    def __init__(self, cache, n_elems, dtype, base_lba, layout, priority, read_only=False):
        self.cache, self.ctx = cache, cache.ctx
        self.dtype = _dtype_name(dtype)
        self.elem_size = DTYPES[self.dtype]
        self.n_elems = int(n_elems)
        self._h = None
        if base_lba is None:
            base_lba = cache._next_lba
        o = _lib.ArrayOpts(self.n_elems, self.elem_size, 1 if layout == "replicate" else 0, 0, 0, base_lba, priority,
                           int(bool(read_only)))
        h = ctypes.c_void_p()
        rc = _L.bam_array_create(cache._h, ctypes.byref(o), ctypes.byref(h))
        if rc:
            self.ctx._error(rc)
        self._h = h.value
        self.base_lba = base_lba
        cache._next_lba = max(cache._next_lba, _L.bam_array_end_lba(self._h))
        cache._arrays.append(self)

    def __len__(self):
        return self.n_elems

    def close(self):
        if self._h:
            _L.bam_array_destroy(self._h)
            self._h = None

    # ---- tensors in and out ----------------------------------------------------------

    def _host_view(self, x, dtype=None):
        """(pointer, keepalive) of a C-contiguous host tensor (NumPy or CPU torch)."""
        np = _np()
        k = _kind(x)
        if k == "torch":
            if x.is_cuda:
                x = x.cpu()
            x = x.contiguous()
            return x.data_ptr(), x, x.numel()
        if k == "buffer" and not x.on_gpu:
            return x.ptr, x, x.nbytes // DTYPES[x.dtype]
        a = np.ascontiguousarray(x, dtype=dtype)
        return a.ctypes.data, a, a.size

    def _target_tensor(self, x, dtype_ok):
        """(pointer, keepalive, count, dtype name) of x in target memory, copying it
        there if it is elsewhere. dtype_ok: names accepted as they are."""
        k = _kind(x)
        gpu = self.ctx.target == "gpu"
        if gpu:
            if k == "torch" and x.is_cuda:
                t = x.contiguous()
                return t.data_ptr(), t, t.numel(), _dtype_name(t.dtype)
            if k == "cupy":
                c = _cupy().ascontiguousarray(x)
                return c.data.ptr, c, c.size, c.dtype.name
            if k == "buffer" and x.on_gpu:
                return x.ptr, x, x.nbytes // DTYPES[x.dtype], x.dtype
            ptr, keep, n = self._host_view(x)
            name = _dtype_name(keep.dtype)
            b = Buffer(self.ctx, (n,), name)
            rc = _L.bam_mem_copy(self.ctx._h, b.ptr, ptr, n * DTYPES[name])
            if rc:
                self.ctx._error(rc)
            return b.ptr, b, n, name
        if k == "torch":
            t = x.cpu().contiguous() if x.is_cuda else x.contiguous()
            return t.data_ptr(), t, t.numel(), _dtype_name(t.dtype)
        if k == "buffer":
            return x.ptr, x, x.nbytes // DTYPES[x.dtype], x.dtype
        np = _np()
        a = np.ascontiguousarray(x)
        if a.dtype.name not in dtype_ok:
            a = a.astype(dtype_ok[0])
        return a.ctypes.data, a, a.size, a.dtype.name

    def _out(self, shape, like, out):
        """The result tensor, in target memory: 'out' if given (checked), else a new one
        of the kind 'like' names ("numpy", "torch", "cupy", "buffer"; None: NumPy on the
        CPU target, torch on the GPU when it is there, else CuPy, else a Buffer)."""
        gpu = self.ctx.target == "gpu"
        n = 1
        for s in shape:
            n *= s
        if out is not None:
            ptr, keep, cnt, name = self._target_tensor(out, [self.dtype])
            if keep is not out and _kind(out) != "buffer" and not (_kind(out) == "torch" and keep.data_ptr() == out.data_ptr()):
                raise ValueError("out must be a contiguous tensor in the target's memory")
            if cnt != n or DTYPES[name] != self.elem_size:
                raise ValueError("out holds %d elements of %s; %d of %s needed" % (cnt, name, n, self.dtype))
            return ptr, out
        if like is None:
            if gpu:
                like = "torch" if _torch() is not None else "cupy" if _cupy() is not None else "buffer"
            else:
                like = "numpy" if self.dtype != "bfloat16" else "torch" if _torch() is not None else "buffer"
        if like == "torch":
            t = _torch()
            r = t.empty(shape, dtype=getattr(t, self.dtype), device="cuda:%d" % self.ctx.device_id if gpu else "cpu")
            return r.data_ptr(), r
        if like == "cupy" and gpu:
            r = _cupy().empty(shape, dtype=self.dtype)
            return r.data.ptr, r
        if like == "numpy" and not gpu and self.dtype != "bfloat16":
            r = _np().empty(shape, dtype=self.dtype)
            return r.ctypes.data, r
        b = Buffer(self.ctx, shape, self.dtype)
        return b.ptr, b

    def _stream(self, result):
        if self.ctx.target != "gpu":
            return None
        k = _kind(result)
        if k == "torch":
            return _torch().cuda.current_stream().cuda_stream or None
        if k == "cupy":
            return _cupy().cuda.get_current_stream().ptr or None
        return None

    # ---- operations -------------------------------------------------------------------

    def gather(self, idx, row_elems=1, out=None, like=None):
        """Rows idx[k] of the array seen as rows of row_elems elements: a tensor
        [len(idx), row_elems] (1-D [len(idx)] when row_elems is 1). idx: int32 or int64
        indices in [0, n_elems // row_elems) (NumPy, torch, CuPy or a Buffer; copied to
        the target's memory when elsewhere). The result is written in place by the
        gather kernel: in 'out' when given, else in a new tensor (see _out)."""
        ptr, keep, n, name = self._target_tensor(idx, ["int64", "int32"])
        if name not in ("int32", "int64"):
            raise TypeError("gather: indices of dtype %s; int32 or int64 needed" % name)
        if like is None and _kind(idx) in ("torch", "cupy"):
            like = _kind(idx)
        shape = (n, row_elems) if row_elems != 1 else (n,)
        optr, res = self._out(shape, like, out)
        rc = _L.bam_array_gather(self._h, ptr, DTYPES[name], n, row_elems, optr, self._stream(res))
        if rc:
            self.ctx._error(rc)
        return res

    def read(self, first=0, n=None, out=None, like=None):
        """Elements [first, first + n) through the cache, as a new tensor (or into out)."""
        if n is None:
            n = self.n_elems - first
        optr, res = self._out((n,), like, out)
        rc = _L.bam_array_read(self._h, first, n, optr, self._stream(res))
        if rc:
            self.ctx._error(rc)
        return res

    def write(self, first, values):
        """values into elements [first, first + len) through the cache (lines become
        dirty; Cache.flush writes them to the storage)."""
        ptr, keep, n, name = self._target_tensor(values, [self.dtype])
        if DTYPES[name] != self.elem_size:
            raise TypeError("write: values of %s into an array of %s" % (name, self.dtype))
        rc = _L.bam_array_write(self._h, first, n, ptr, self._stream(keep))
        if rc:
            self.ctx._error(rc)

    def __getitem__(self, key):
        if isinstance(key, int):
            if key < 0:
                key += self.n_elems
            if not 0 <= key < self.n_elems:
                raise IndexError("index %d outside [0, %d)" % (key, self.n_elems))
            r = self.read(key, 1, like="numpy" if self.ctx.target == "cpu" and self.dtype != "bfloat16" else None)
            return r[0]
        if isinstance(key, slice):
            start, stop, step = key.indices(self.n_elems)
            if step != 1:
                raise IndexError("slices with a step: use gather()")
            return self.read(start, max(stop - start, 0))
        raise TypeError("index with an int or a slice; gather() for index tensors")

    def __setitem__(self, key, values):
        if isinstance(key, int):
            key = slice(key, key + 1 if key != -1 else None)
        if not isinstance(key, slice):
            raise TypeError("assign to an int or a slice")
        start, stop, step = key.indices(self.n_elems)
        if step != 1:
            raise IndexError("slices with a step are not supported")
        ptr, keep, n, name = self._target_tensor(values, [self.dtype])
        if n != stop - start:
            raise ValueError("%d values for %d elements" % (n, stop - start))
        self.write(start, keep)

    def load(self, values, first=0, progress=None, chunk_bytes=64 << 20):
        """Write host values to the media at element 'first', bypassing the cache (as
        dd onto an SSD before a run; drop cached lines first with Cache.invalidate if
        the array was read). progress(done_elems, total_elems) is called after each
        chunk of chunk_bytes (None: quiet; True: a line on stderr)."""
        ptr, keep, n = self._host_view(values)
        per = max(chunk_bytes // self.elem_size, 1)
        done = 0
        while done < n:
            k = min(per, n - done)
            rc = _L.bam_array_media_write(self._h, first + done, ptr + done * self.elem_size, k)
            if rc:
                self.ctx._error(rc)
            done += k
            _report(progress, done, n, "load")

    def dump(self, first=0, n=None):
        """Elements [first, first + n) straight from the media (bypassing the cache), as
        a NumPy array (bfloat16: uint16 bit patterns)."""
        np = _np()
        if n is None:
            n = self.n_elems - first
        r = np.empty(n, dtype=self.dtype if self.dtype != "bfloat16" else "uint16")
        rc = _L.bam_array_media_read(self._h, first, r.ctypes.data, n)
        if rc:
            self.ctx._error(rc)
        return r

    def stats(self, reset=False):
        """The array's cache counters: dict(hits, misses, ..., hit_rate, amplification)."""
        s = _lib.ArrayStats()
        rc = _L.bam_array_stats(self._h, ctypes.byref(s))
        if rc:
            self.ctx._error(rc)
        if reset:
            _L.bam_array_stats_reset(self._h)
        d = {f: getattr(s.c, f) for f, _ in _lib.ArrayCounters._fields_}
        d.update(hit_rate=s.hit_rate, amplification=s.amplification)
        return d


def _report(progress, done, total, what):
    if progress is True:
        sys.stderr.write("bam: %s %d/%d (%.0f%%)\n" % (what, done, total, 100.0 * done / max(total, 1)))
    elif progress:
        progress(done, total)


from .features import FeatureStore  # noqa: E402
from .graph import bfs, cc, import_graph  # noqa: E402
