# SPDX-License-Identifier: MIT
"""FeatureStore: a [num_rows, dim] feature matrix on storage, rows gathered by id
through bam's cache (GNN training: the features of a sampled neighbourhood)."""
import os

from . import Context, DTYPES, BamError, _dtype_name, _report

FEATURE_DTYPES = ("float32", "float16", "bfloat16")


class FeatureStore:
    """Features of num_rows rows of dim elements (float32, float16 or bfloat16), row
    after row from byte 0 of the storage.

    path: a file holding them (created, zero-filled, when missing), read through the
    file back end ("file:PATH,size=..."); None: an emulated SSD in memory
    ("emu:size=...", fill it with load()). backend: any back-end string instead of both.
    cache_bytes: the cache in target memory (GPU memory on the GPU); line_size: its
    line bytes. target: "auto", "gpu" or "cpu".

    gather(ids) -> [len(ids), dim] in target memory (torch on the GPU, NumPy/torch on
    the CPU target), written in place by one kernel: no copy after it.
    """

    def __init__(self, path, num_rows, dim, dtype="float32", backend=None, cache_bytes=256 << 20, line_size=4096,
                 target="auto", ctx=None, timeout_s=0):
        self.dtype = _dtype_name(dtype)
        if self.dtype not in FEATURE_DTYPES:
            raise ValueError("FeatureStore dtype %s: one of %s" % (self.dtype, ", ".join(FEATURE_DTYPES)))
        self.num_rows, self.dim = int(num_rows), int(dim)
        if self.num_rows <= 0 or self.dim <= 0:
            raise ValueError("FeatureStore of %d rows of %d: both must be positive" % (num_rows, dim))
        self.path = path
        self.row_bytes = self.dim * DTYPES[self.dtype]
        need = self.num_rows * self.row_bytes
        size = -(-need // line_size) * line_size  # whole lines
        if backend is None:
            if path is None:
                backend = "emu:size=%d" % size
            else:
                if os.path.exists(path) and os.path.getsize(path) < need:
                    raise BamError(22, "%s holds %d bytes; %d rows of %d %s need %d" % (
                        path, os.path.getsize(path), self.num_rows, self.dim, self.dtype, need))
                backend = "file:path=%s,size=%d" % (path, max(size, os.path.getsize(path) // 512 * 512
                                                                if os.path.exists(path) else 0))
        self._own = ctx is None
        self.ctx = ctx or Context(backend, target=target, timeout_s=timeout_s)
        try:
            self.cache = self.ctx.cache(capacity=cache_bytes, line_size=line_size)
            self.array = self.cache.array(self.num_rows * self.dim, self.dtype, base_lba=0)
        except BaseException:
            if self._own:
                self.ctx.close()
            raise

    @property
    def target(self):
        return self.ctx.target

    def __len__(self):
        return self.num_rows

    def gather(self, ids, out=None, like=None):
        """Features of rows ids (int32/int64 tensor of any kind): [len(ids), dim]."""
        return self.array.gather(ids, row_elems=self.dim, out=out, like=like)

    def load(self, features, first_row=0, progress=None):
        """Write rows from a host [n, dim] tensor (NumPy or CPU torch, this dtype)
        straight onto the storage at first_row, bypassing the cache (drop cached rows
        with invalidate() if they were read). progress as Array.load."""
        n = len(features)
        if first_row < 0 or first_row + n > self.num_rows:
            raise ValueError("rows [%d, %d) outside the store's %d" % (first_row, first_row + n, self.num_rows))
        self.array.load(features.reshape(-1) if hasattr(features, "reshape") else features,
                        first=first_row * self.dim, progress=progress)

    def write(self, first_row, features):
        """Rows through the cache (durable after flush())."""
        self.array.write(first_row * self.dim, features.reshape(-1))

    def flush(self):
        self.cache.flush()

    def invalidate(self):
        self.cache.invalidate()

    def stats(self, reset=False):
        return self.array.stats(reset)

    def close(self):
        if self._own and self.ctx is not None:
            self.ctx.close()
        self.ctx = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
