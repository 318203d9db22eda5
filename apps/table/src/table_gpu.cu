/* SPDX-License-Identifier: MIT */
/* GPU side of the table queries: the kernel over table_kern.h, baseline memory and the
 * whole-column loader (CPU reads into pinned staging, asynchronous copies). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include "table_gpu.h"

static cudaStream_t stream(void)
{
	static cudaStream_t s;
	if (!s)
		cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	return s;
}

static int sm_count(void)
{
	static int n;
	if (!n) {
		int dev = 0;
		cudaGetDevice(&dev);
		cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
	}
	return n;
}

/* block-shared slots when they fit (TQ_SHARED_MAX bytes), else the global ones */
#define TQ_SHARED_MAX (40u << 10)

__global__ void __launch_bounds__(256) tq_kernel(struct tq_view q, int use_sh)
{
	extern __shared__ struct tq_slot sh[];
	const uint32_t nslots = q.ngroups * q.ncols;
	if (use_sh) {
		for (uint32_t s = threadIdx.x; s < nslots; s += blockDim.x) {
			sh[s].cnt = 0;
			sh[s].sum = 0;
			sh[s].minkey = ~0ull;
			sh[s].maxinv = ~0ull;
		}
		__syncthreads();
	}
	struct tq_slot *acc = use_sh ? sh : q.acc;
	const uint64_t w0 = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	const uint64_t nw = ((uint64_t)gridDim.x * blockDim.x) >> 5;
	for (uint64_t seg = w0; seg < q.nseg; seg += nw) {
		if (__any_sync(0xffffffffu, *(volatile uint32_t *)q.error != 0))
			break; /* another warp's read failed (the whole warp leaves) */
		tq_segment(&q, seg, threadIdx.x & 31u, 32, acc);
		__syncwarp();
	}
	if (use_sh) {
		__syncthreads();
		for (uint32_t s = threadIdx.x; s < nslots; s += blockDim.x)
			tq_merge(&q.acc[s], &sh[s]);
	}
}

extern "C" int tq_gpu_run(const struct tq_view *q)
{
	cudaStream_t s = stream();
	const uint64_t sh = (uint64_t)q->ngroups * q->ncols * sizeof(struct tq_slot);
	const int use_sh = sh <= TQ_SHARED_MAX;
	uint64_t warps = q->nseg, blocks = (warps + 7) / 8, maxb = (uint64_t)sm_count() * 8;
	if (blocks > maxb)
		blocks = maxb;
	if (blocks < 1)
		blocks = 1;
	tq_kernel<<<(unsigned)blocks, 256, use_sh ? (size_t)sh : 0, s>>>(*q, use_sh);
	cudaError_t e = cudaStreamSynchronize(s);
	if (e == cudaSuccess)
		e = cudaGetLastError();
	if (e != cudaSuccess) {
		fprintf(stderr, "bam: query kernel failed: %s\n", cudaGetErrorString(e));
		return -EIO;
	}
	return 0;
}

extern "C" void *tq_gpu_alloc(int kind, uint64_t bytes)
{
	void *p = NULL;
	cudaError_t e = kind == 0 ? cudaMalloc(&p, bytes) : cudaHostAlloc(&p, bytes, cudaHostAllocMapped);
	if (e != cudaSuccess) {
		fprintf(stderr, "bam: allocating %llu bytes of %s memory failed: %s\n", (unsigned long long)bytes,
			kind == 0 ? "GPU" : "pinned host", cudaGetErrorString(e));
		return NULL;
	}
	return p;
}

extern "C" void tq_gpu_free(int kind, void *p)
{
	if (!p)
		return;
	if (kind == 0)
		cudaFree(p);
	else
		cudaFreeHost(p);
}

extern "C" int tq_gpu_copy(void *dst, const void *src, uint64_t bytes)
{
	cudaStream_t s = stream();
	cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s);
	return cudaStreamSynchronize(s) == cudaSuccess ? 0 : -EIO;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int pread_all(int fd, void *buf, uint64_t len, uint64_t off)
{
	char *p = (char *)buf;
	while (len) {
		ssize_t r = pread(fd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EIO;
		p += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

extern "C" int tq_gpu_load(int fd, uint64_t off, uint64_t bytes, void *dst, uint64_t chunk, double bw)
{
	static void *stage[2];
	static uint64_t stage_bytes;
	static cudaEvent_t ev[2];
	cudaStream_t s = stream();
	if (stage_bytes < chunk) {
		for (int b = 0; b < 2; b++) {
			if (stage[b])
				cudaFreeHost(stage[b]);
			stage[b] = NULL;
			if (cudaHostAlloc(&stage[b], chunk, cudaHostAllocDefault) != cudaSuccess) {
				stage_bytes = 0;
				return -ENOMEM;
			}
		}
		stage_bytes = chunk;
		if (!ev[0]) {
			cudaEventCreateWithFlags(&ev[0], cudaEventDisableTiming);
			cudaEventCreateWithFlags(&ev[1], cudaEventDisableTiming);
		}
	}
	const double t0 = now_s();
	int pending[2] = {0, 0};
	int rc = 0;
	for (uint64_t o = 0, k = 0; o < bytes && !rc; o += chunk, k++) {
		const int b = (int)(k & 1);
		const uint64_t n = bytes - o < chunk ? bytes - o : chunk;
		if (pending[b] && cudaEventSynchronize(ev[b]) != cudaSuccess) /* its last copy is done */
			rc = -EIO;
		if (!rc)
			rc = pread_all(fd, stage[b], n, off + o);
		if (!rc && bw > 0) { /* pace: the bytes so far at bw */
			const double due = t0 + (double)(o + n) / bw, t = now_s();
			if (due > t)
				usleep((useconds_t)((due - t) * 1e6));
		}
		if (!rc) {
			cudaMemcpyAsync((char *)dst + o, stage[b], n, cudaMemcpyHostToDevice, s);
			cudaEventRecord(ev[b], s);
			pending[b] = 1;
		}
	}
	if (cudaStreamSynchronize(s) != cudaSuccess && !rc)
		rc = -EIO;
	return rc;
}

extern "C" int tq_gpu_prepare(void)
{
	struct tq_view q;
	memset(&q, 0, sizeof(q));
	tq_kernel<<<1, 32, 0, stream()>>>(q, 0);
	return cudaStreamSynchronize(stream()) == cudaSuccess ? 0 : -EIO;
}
