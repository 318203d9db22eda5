# SPDX-License-Identifier: MIT
"""The ctypes structures of bam._lib against the C layout (tests/py_abi.c, built in
$BAM_BUILD_DIR/tests): every C field declared, at the same offset with the same size,
and the same total size. A structure grown in C without Python fails here."""
import ctypes
import os
import subprocess

import pytest

from bam import _lib

STRUCTS = {
    "bam_ctx_opts": _lib.CtxOpts,
    "bam_cache_opts": _lib.CacheOpts,
    "bam_array_opts": _lib.ArrayOpts,
    "bam_array_counters": _lib.ArrayCounters,
    "bam_array_stats": _lib.ArrayStats,
    "bam_ns_info": _lib.NsInfo,
}


def _c_layout():
    exe = os.path.join(os.environ.get("BAM_BUILD_DIR", ""), "tests", "py_abi")
    if not os.path.exists(exe):
        pytest.skip("no %s (build the tests target)" % exe)
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    layout = {}
    for line in out.splitlines():
        s, f, off, size = line.split()
        layout.setdefault(s, {})[f] = (int(off), int(size))
    return layout


@pytest.mark.parametrize("name", sorted(STRUCTS))
def test_struct_matches_c(name):
    c = _c_layout()[name]
    py = STRUCTS[name]
    assert ctypes.sizeof(py) == c.pop("-")[1], "sizeof(struct %s) differs" % name
    fields = [f[0] for f in py._fields_]
    assert sorted(fields) == sorted(c), "fields of %s: Python %s, C %s" % (name, fields, sorted(c))
    for f, (off, size) in c.items():
        d = getattr(py, f)
        assert (d.offset, d.size) == (off, size), "%s.%s: Python (%d, %d), C (%d, %d)" % (
            name, f, d.offset, d.size, off, size)
