# SPDX-License-Identifier: MIT
"""pytest of the Python package on the CPU target (CI), and on the GPU with -k gpu.
Needs libbam.so: BAM_BUILD_DIR=<build folder> (scripts/test's CTest test sets it)."""
import errno
import gzip
import os

import numpy as np
import pytest

import bam
from conftest import REPO

try:
    import torch  # noqa: F811
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="no torch (python3-torch)")
GPU = bam.gpu_available()


@pytest.fixture
def ctx():
    c = bam.Context("emu:size=64M", target="cpu")
    yield c
    c.close()


def test_version():
    v = bam.version()
    assert len(v.split(".")) == 3


def test_slices_and_flush(ctx):
    cache = ctx.cache(capacity=1 << 20, line_size=4096)
    a = cache.array(300001, "int64")  # not a whole number of lines
    v = np.arange(300001, dtype=np.int64) * 3
    a.load(v)
    assert int(a[0]) == 0 and int(a[-1]) == 3 * 300000
    np.testing.assert_array_equal(a[1000:5000], v[1000:5000])
    a[299990:300001] = -np.arange(11, dtype=np.int64)
    np.testing.assert_array_equal(a[299985:300001], np.concatenate([v[299985:299990], -np.arange(11)]))
    assert a.dump(299990, 11)[0] == v[299990]  # not flushed: the media has the old value
    cache.flush()
    np.testing.assert_array_equal(a.dump(299990, 11), -np.arange(11))
    with pytest.raises(IndexError):
        a[300001]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("dim", [1, 3, 128, 1024])
def test_gather_matches_numpy(ctx, dtype, dim):
    rows = 5000 if dim < 1024 else 700
    cache = ctx.cache(capacity=256 << 10)  # smaller than the array: evictions
    a = cache.array(rows * dim, dtype)
    feats = (np.random.default_rng(dim).standard_normal((rows, dim))).astype(dtype)
    a.load(feats.reshape(-1))
    idx = np.random.default_rng(1).integers(0, rows, 4000)
    got = a.gather(idx, row_elems=dim)
    want = feats[idx] if dim != 1 else feats[idx, 0]
    assert isinstance(got, np.ndarray) and got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)
    got32 = a.gather(idx.astype(np.int32), row_elems=dim)
    np.testing.assert_array_equal(got32, want)
    assert a.stats()["misses"] > 0


def test_gather_errors(ctx):
    a = ctx.cache(capacity=1 << 20).array(1000, "float32")
    with pytest.raises(bam.BamError) as e:
        a.gather(np.array([0, 10], dtype=np.int64), row_elems=100)  # 10 rows only
    assert e.value.errno == errno.ERANGE
    with pytest.raises(bam.BamError) as e:
        a.gather(np.array([-1]), row_elems=10)
    assert e.value.errno == errno.ERANGE
    with pytest.raises(bam.BamError) as e:
        a.gather(np.array([0]), row_elems=0)
    assert e.value.errno == errno.EINVAL
    assert len(a.gather(np.array([], dtype=np.int64), row_elems=10)) == 0


def test_open_errors():
    with pytest.raises(bam.BamError) as e:
        bam.Context("nosuch:x=1", target="cpu")
    assert e.value.errno == errno.EINVAL and "nosuch" in e.value.strerror
    if not GPU:
        with pytest.raises(bam.BamError) as e:
            bam.Context("emu:size=1M", target="gpu")
        assert e.value.errno == errno.ENODEV


def test_nvme_status_in_exception():
    # a media error on LBAs 0-7 of the emulated SSD: the read's NVMe status comes back
    c = bam.Context("emu:size=16M,err_lba=0-7", target="cpu", timeout_s=2)
    try:
        a = c.cache(capacity=1 << 20).array(4096, "float32")
        with pytest.raises(bam.BamError) as e:
            a[0:10]
        assert e.value.errno == errno.EIO
        assert e.value.nvme_status != 0 and e.value.nvme_status_name
        assert "NVMe status" in str(e.value)
        np.testing.assert_array_equal(a[2048:2050], np.zeros(2, np.float32))  # other lines read
    finally:
        c.close()


def test_file_backend_reopen(tmp_path):
    p = str(tmp_path / "f.bin")
    feats = np.arange(64 * 100, dtype=np.float32).reshape(100, 64)
    with bam.FeatureStore(p, 100, 64, "float32", target="cpu") as fs:
        fs.write(0, feats)
        fs.flush()
    assert os.path.getsize(p) >= feats.nbytes
    np.testing.assert_array_equal(np.fromfile(p, np.float32, feats.size).reshape(100, 64), feats)
    with bam.FeatureStore(p, 100, 64, "float32", target="cpu") as fs:  # open what is there
        np.testing.assert_array_equal(fs.gather(np.array([99, 0, 7])), feats[[99, 0, 7]])
    with pytest.raises(bam.BamError):
        bam.FeatureStore(p, 1000, 64, "float32", target="cpu")  # the file is too short


def test_buffer_dlpack_numpy(ctx):
    b = ctx.buffer((3, 4), "float32")
    v = b.numpy()
    v[:] = 7
    assert np.from_dlpack(b).sum() == 84


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_feature_store_torch(dtype):
    tdt = getattr(torch, dtype)
    feats = torch.randn(2000, 96).to(tdt)
    with bam.FeatureStore(None, 2000, 96, dtype, cache_bytes=128 << 10, target="cpu") as fs:
        fs.load(feats.view(torch.int16).numpy() if dtype == "bfloat16" else feats.numpy())
        ids = torch.randint(0, 2000, (3000,))
        got = fs.gather(ids)
        assert isinstance(got, torch.Tensor) and got.dtype == tdt and tuple(got.shape) == (3000, 96)
        assert torch.equal(got, feats[ids])
        # DLPack of a bam Buffer into torch, no copy
        out = fs.ctx.buffer((5, 96), dtype)
        fs.gather(torch.arange(5), out=out)
        t = torch.from_dlpack(out)
        assert t.data_ptr() == out.ptr and torch.equal(t, feats[:5])


def _cnr_graph(tmp_path):
    src = os.path.join(REPO, "data", "cnr-2000.graph-txt.gz")
    dst = str(tmp_path / "cnr.bam")
    n, m = bam.import_graph(src, dst, "law")
    assert (n, m) == (325557, 3216152)
    return dst


def test_bfs_cc_cnr2000(tmp_path):
    g = _cnr_graph(tmp_path)
    lines = []
    levels, lmax = bam.bfs(g, source=0, backend="emu", target="cpu", progress=lines.append)
    assert levels.shape == (325557,) and levels[0] == 0
    reached = levels != 0xFFFFFFFF
    assert lmax == levels[reached].max() + 1
    # every level-k vertex (k > 0) has an in-neighbour at level k-1: check with the arcs
    # of the level-(k-1) vertices, read back from the text file
    with gzip.open(os.path.join(REPO, "data", "cnr-2000.graph-txt.gz"), "rt") as f:
        n = int(f.readline())
        best = np.full(n, 0xFFFFFFFF, dtype=np.uint64)
        for v, line in enumerate(f):
            if levels[v] == 0xFFFFFFFF or not line.strip():
                continue
            nb = np.array(line.split(), dtype=np.int64)
            best[nb] = np.minimum(best[nb], levels[v] + 1)
    want = best.copy()
    want[0] = 0
    np.testing.assert_array_equal(levels.astype(np.uint64)[reached], want[reached])
    assert (want[~reached] == 0xFFFFFFFF).all()
    labels, comps = bam.cc(g, target="cpu")
    assert labels.shape == (325557,) and comps == len(np.unique(labels))
    assert (labels <= np.arange(325557)).all()
    # what BFS reached from 0 is in 0's component, whose label is 0 (its smallest id)
    assert labels[0] == 0 and (labels[reached] == 0).all()


def test_bfs_errors(tmp_path):
    with pytest.raises(bam.BamError):
        bam.bfs(str(tmp_path / "missing.bam"), target="cpu")


def test_graphsage_example(tmp_path):
    import subprocess
    import sys
    ex = os.path.join(REPO, "python", "examples", "graphsage_cnr2000.py")
    r = subprocess.run([sys.executable, ex, "--target=cpu", "--batches=3", "--work", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert r.returncode == 0, r.stderr + r.stdout
    assert "features checked" in r.stdout


# ---- GPU (pytest -k gpu on the GPU machine) --------------------------------------------

gpu_only = pytest.mark.skipif(not GPU or torch is None or not torch.cuda.is_available(), reason="no GPU / torch CUDA")


@gpu_only
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gpu_gather_torch(dtype):
    tdt = getattr(torch, dtype)
    feats = torch.randn(100000, 128).to(tdt)
    with bam.FeatureStore(None, 100000, 128, dtype, cache_bytes=8 << 20, target="gpu") as fs:
        fs.load(feats.view(torch.int16).numpy() if dtype == "bfloat16" else feats.numpy())
        ids = torch.randint(0, 100000, (50000,), device="cuda")
        got = fs.gather(ids)
        assert got.is_cuda and got.dtype == tdt
        assert torch.equal(got.cpu(), feats[ids.cpu()])


@gpu_only
def test_gpu_beside_torch_training():
    """Training steps with allocations, frees, synchronisations and new kernels
    between (and after) gathers: none may hang."""
    feats = torch.randn(200000, 128)
    with bam.FeatureStore(None, 200000, 128, "float32", cache_bytes=16 << 20, target="gpu") as fs:
        fs.load(feats.numpy())
        model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8)).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for step in range(20):
            ids = torch.randint(0, 200000, (4096,), device="cuda")
            x = fs.gather(ids)
            loss = model(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch.cuda.synchronize()  # waits for the whole device
            if step % 5 == 0:
                torch.cuda.empty_cache()  # cudaFree
                big = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")  # cudaMalloc
                del big
            assert torch.equal(x.cpu(), feats[ids.cpu()])


@gpu_only
def test_gpu_cupy_and_dlpack():
    cupy = pytest.importorskip("cupy")
    with bam.FeatureStore(None, 1000, 64, "float32", target="gpu") as fs:
        fs.load(np.arange(64000, dtype=np.float32).reshape(1000, 64))
        x = fs.gather(cupy.arange(10, dtype=cupy.int64))
        assert isinstance(x, cupy.ndarray) and float(x[9, 0]) == 576.0
        b = fs.gather(np.arange(4), like="buffer")
        t = torch.from_dlpack(b)
        assert t.is_cuda and t.data_ptr() == b.ptr and float(t[3, 1]) == 193.0
        assert float(torch.as_tensor(b, device="cuda")[1, 0]) == 64.0
