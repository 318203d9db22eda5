/* SPDX-License-Identifier: MIT */
/* GPU side of bam_vecadd_run: the kernels of vecadd_kern.h launched on streams. */
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <cuda_runtime.h>
#include "vecadd_gpu.h"

__global__ void vecadd_bam_kernel(struct vecadd_args g)
{
	const uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (tid / 32 < g.warps)
		vecadd_bam_warp(&g, tid / 32, threadIdx.x & 31u, 32);
}

__global__ void vecadd_load_kernel(struct vecadd_args g, uint64_t units)
{
	const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (t < units)
		vecadd_tile_load(&g, t);
}

__global__ void vecadd_add_kernel(struct vecadd_args g, uint64_t units)
{
	/* one unit per warp, lanes over its elements */
	const uint64_t t = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
	if (t < units) {
		const uint64_t per = VECADD_UNIT / g.esize;
		vecadd_add(g.type, g.ta + t * VECADD_UNIT, g.tb + t * VECADD_UNIT, per, threadIdx.x & 31u, 32);
	}
}

__global__ void vecadd_store_kernel(struct vecadd_args g, uint64_t units)
{
	const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (t < units)
		vecadd_tile_store(&g, t);
}

__global__ void vecadd_plain_kernel(uint32_t type, uint8_t *a, const uint8_t *b, uint64_t n)
{
	for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
		if (type == 0)
			((uint64_t *)a)[i] += ((const uint64_t *)b)[i];
		else
			((float *)a)[i] += ((const float *)b)[i];
	}
}

/* The kernels run on streams of their own, never the legacy default stream, and each
 * call waits for its own streams only: the emulated controllers' kernel (emu back end)
 * runs until the back end stops it, so a device-wide synchronisation would not return. */
static cudaStream_t stream(void)
{
	static cudaStream_t s;
	if (!s)
		cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	return s;
}

static int check(cudaStream_t s, const char *what)
{
	cudaError_t e = cudaGetLastError();
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(s);
	if (e != cudaSuccess) {
		fprintf(stderr, "bam vecadd: %s failed: %s\n", what, cudaGetErrorString(e));
		return -EIO;
	}
	return 0;
}

extern "C" int vecadd_gpu_bam(const struct vecadd_args *g)
{
	const uint64_t threads = g->warps * 32;
	vecadd_bam_kernel<<<(unsigned)((threads + 255) / 256), 256, 0, stream()>>>(*g);
	return check(stream(), "the vecadd kernel");
}

extern "C" int vecadd_gpu_tiling(const struct vecadd_args *g, uint64_t n_lines, uint64_t tile_lines,
				 uint8_t *const bufs[4])
{
	cudaStream_t s[2];
	for (int k = 0; k < 2; k++)
		if (cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking) != cudaSuccess)
			return -EIO;
	const uint64_t upl = g->line_size / VECADD_UNIT;
	/* tile k on stream k % 2 with buffers k % 2: load, add, store in order on its
	 * stream; the other stream's tile runs meanwhile (double buffering) */
	for (uint64_t first = 0, k = 0; first < n_lines; first += tile_lines, k++) {
		struct vecadd_args t = *g;
		t.first_line = first;
		t.lines = n_lines - first < tile_lines ? n_lines - first : tile_lines;
		t.ta = bufs[2 * (k & 1)];
		t.tb = bufs[2 * (k & 1) + 1];
		const uint64_t units = t.lines * upl;
		cudaStream_t st = s[k & 1];
		vecadd_load_kernel<<<(unsigned)((units + 127) / 128), 128, 0, st>>>(t, units);
		vecadd_add_kernel<<<(unsigned)((units * 32 + 255) / 256), 256, 0, st>>>(t, units);
		vecadd_store_kernel<<<(unsigned)((units + 127) / 128), 128, 0, st>>>(t, units);
	}
	int rc = check(s[0], "the tiling kernels");
	const int rc1 = check(s[1], "the tiling kernels");
	if (!rc)
		rc = rc1;
	cudaStreamDestroy(s[0]);
	cudaStreamDestroy(s[1]);
	return rc;
}

extern "C" int vecadd_gpu_add(uint32_t type, uint8_t *a, const uint8_t *b, uint64_t n)
{
	vecadd_plain_kernel<<<4096, 256, 0, stream()>>>(type, a, b, n);
	return check(stream(), "the add kernel");
}

/* Each kernel launched once with no work, before the emulator's persistent kernel
 * starts: the driver sizes local memory for them now (growing it later would wait for
 * the persistent kernel; docs/DESIGN.md). */
extern "C" int vecadd_gpu_prepare(void)
{
	struct vecadd_args g;
	memset(&g, 0, sizeof(g));
	vecadd_bam_kernel<<<1, 32, 0, stream()>>>(g);
	vecadd_load_kernel<<<1, 32, 0, stream()>>>(g, 0);
	vecadd_add_kernel<<<1, 32, 0, stream()>>>(g, 0);
	vecadd_store_kernel<<<1, 32, 0, stream()>>>(g, 0);
	vecadd_plain_kernel<<<1, 32, 0, stream()>>>(0, NULL, NULL, 0);
	return check(stream(), "the warm-up launch");
}
