/* SPDX-License-Identifier: MIT */
/* GPU side of `bam bench`: the I/O kernel (bench_kern.h) and the baselines measured in
 * the same run (random chunks of pinned host memory read zero-copy; HBM read). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include "bam/iobench.h"
#include "bench_gpu.h"

#define CUDA_TRY(call, label)                                                                  \
	do {                                                                                   \
		cudaError_t e_ = (call);                                                       \
		if (e_ != cudaSuccess) {                                                       \
			fprintf(stderr, "bam: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
			goto label;                                                            \
		}                                                                              \
	} while (0)

__global__ void bench_kernel(struct bench_args a)
{
	uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (tid < a.threads)
		bench_thread(&a, tid);
}

__global__ void bench_flush_kernel(struct bench_args a)
{
	if (threadIdx.x < a.n_ctrl)
		bench_flush(&a, threadIdx.x);
}

struct bench_gpu {
	cudaStream_t s;
	cudaEvent_t e0, e1, e2; /* start, the I/O kernel's end, the Flush's end */
};

extern "C" int bench_gpu_start(const struct bench_args *a, int flush, void **handle, struct bam_iobench_gpu_use *use)
{
	struct bench_gpu *g = (struct bench_gpu *)calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	CUDA_TRY(cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking), fail);
	CUDA_TRY(cudaEventCreate(&g->e0), fail);
	CUDA_TRY(cudaEventCreate(&g->e1), fail);
	CUDA_TRY(cudaEventCreate(&g->e2), fail);
	{
		const uint32_t tpb = 128;
		uint64_t blocks = (a->threads + tpb - 1) / tpb;
		int dev = 0, nsm = 0, maxt = 0, per = 0;
		cudaGetDevice(&dev);
		cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev);
		cudaDeviceGetAttribute(&maxt, cudaDevAttrMaxThreadsPerMultiProcessor, dev);
		cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, bench_kernel, tpb, 0);
		use->valid = 1;
		use->sms = (uint32_t)nsm;
		use->max_warps_per_sm = (uint32_t)maxt / 32u;
		use->app_blocks = (uint32_t)blocks;
		use->app_threads_per_block = tpb;
		use->app_blocks_per_sm = (uint32_t)per;
		use->app_sms = blocks < (uint64_t)nsm ? (uint32_t)blocks : (uint32_t)nsm;
		cudaEventRecord(g->e0, g->s);
		bench_kernel<<<(unsigned)blocks, tpb, 0, g->s>>>(*a);
		CUDA_TRY(cudaGetLastError(), fail);
		cudaEventRecord(g->e1, g->s);
		if (flush) {
			bench_flush_kernel<<<1, (a->n_ctrl + 31) / 32 * 32, 0, g->s>>>(*a);
			CUDA_TRY(cudaGetLastError(), fail);
		}
		cudaEventRecord(g->e2, g->s);
	}
	*handle = g;
	return 0;
fail:
	free(g);
	return -EIO;
}

extern "C" int bench_gpu_done(void *handle)
{
	struct bench_gpu *g = (struct bench_gpu *)handle;
	cudaError_t e = cudaEventQuery(g->e2);
	if (e == cudaSuccess)
		return 1;
	if (e == cudaErrorNotReady)
		return 0;
	return -EIO;
}

extern "C" int bench_gpu_finish(void *handle, double *ms, double *flush_ms)
{
	struct bench_gpu *g = (struct bench_gpu *)handle;
	int rc = 0;
	float f = 0, fl = 0;
	if (cudaEventSynchronize(g->e2) != cudaSuccess || cudaEventElapsedTime(&f, g->e0, g->e2) != cudaSuccess ||
	    cudaEventElapsedTime(&fl, g->e1, g->e2) != cudaSuccess) {
		fprintf(stderr, "bam: bench kernel failed: %s\n", cudaGetErrorString(cudaGetLastError()));
		rc = -EIO;
	}
	*ms = f;
	*flush_ms = fl;
	cudaEventDestroy(g->e0);
	cudaEventDestroy(g->e1);
	cudaEventDestroy(g->e2);
	cudaStreamDestroy(g->s);
	free(g);
	return rc;
}

extern "C" int bench_gpu_mem_total(uint64_t *bytes)
{
	size_t fr = 0, tot = 0;
	if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
		return -EIO;
	*bytes = tot;
	return 0;
}

/* The limit kernel: each warp keeps K random chunks in flight (every lane one 16-byte
 * load of each, all K issued before any is used), 'steps' rounds. */
template <int K>
__global__ void limit_kernel(const uint4 *src, uint64_t npages, uint64_t stride_words, uint32_t slots, uint32_t words,
			     uint64_t steps, uint64_t seed, unsigned long long *sink)
{
	uint64_t gw = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	uint32_t lane = threadIdx.x & 31u;
	uint64_t r = bench_mix64(seed ^ gw);
	uint32_t acc = 0;
	for (uint64_t st = 0; st < steps; st++) {
		const uint4 *p[K];
#pragma unroll
		for (int k = 0; k < K; k++) {
			r = bench_mix64(r);
			/* a random page of the set, a random chunk among the first 'slots' of it */
			p[k] = src + (r % npages) * stride_words + ((r >> 40) % slots) * words;
		}
		for (uint32_t i = lane; i < words; i += 32) {
			uint4 v[K];
#pragma unroll
			for (int k = 0; k < K; k++)
				v[k] = p[k][i];
#pragma unroll
			for (int k = 0; k < K; k++)
				acc ^= v[k].x ^ v[k].w;
		}
	}
	if (acc == 0x12345678u)
		atomicAdd(sink, 1ull); /* keeps the loads */
}

/* One timed launch of the limit kernel: chunks/s */
static int limit_once(const uint4 *src, uint64_t npages, uint64_t stride, uint32_t slots, uint32_t bs, uint32_t inflight,
		      uint32_t blocks, uint64_t steps, cudaStream_t s, unsigned long long *sink, double *cps)
{
	const uint64_t sw = stride / 16u;
	cudaEvent_t e0, e1;
	float ms = 0;
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	cudaEventRecord(e0, s);
	const uint32_t words = bs / 16u;
	switch (inflight) {
	case 1: limit_kernel<1><<<blocks, 256, 0, s>>>(src, npages, sw, slots, words, steps, 11 + blocks, sink); break;
	case 4: limit_kernel<4><<<blocks, 256, 0, s>>>(src, npages, sw, slots, words, steps, 11 + blocks, sink); break;
	default: limit_kernel<8><<<blocks, 256, 0, s>>>(src, npages, sw, slots, words, steps, 11 + blocks, sink); break;
	}
	cudaEventRecord(e1, s);
	cudaError_t e = cudaEventSynchronize(e1);
	cudaEventElapsedTime(&ms, e0, e1);
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	if (e != cudaSuccess || ms <= 0)
		return -EIO;
	const uint32_t k = inflight == 1 || inflight == 4 ? inflight : 8;
	*cps = (double)blocks * 8.0 * (double)steps * k / (ms / 1e3);
	return 0;
}

extern "C" int bench_gpu_limit_on(const void *buf, uint64_t npages, uint64_t stride, uint32_t slots, uint32_t bs,
				  uint32_t inflight, double *chunks_per_s)
{
	unsigned long long *sink = NULL;
	cudaStream_t s = 0;
	int rc = -EIO, dev = 0, nsm = 0;
	double best = 0;
	cudaGetDevice(&dev);
	cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev);
	CUDA_TRY(cudaMalloc((void **)&sink, 8), out);
	CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), out);
	{
		/* about 2 GiB of chunks per launch, over the grid; the best of three grid sizes */
		const uint32_t k = inflight == 1 || inflight == 4 ? inflight : 8;
		for (int g = 0; g < 3; g++) {
			const uint32_t blocks = (uint32_t)nsm * (4u << (2 * g)); /* 4, 16, 64 blocks per SM */
			const uint64_t warps = (uint64_t)blocks * 8u;
			uint64_t steps = ((2ull << 30) / bs) / (warps * k);
			if (steps < 2)
				steps = 2;
			double cps = 0;
			if (limit_once((const uint4 *)buf, npages, stride, slots, bs, k, blocks, steps / 4 + 1, s, sink, &cps) ||
			    limit_once((const uint4 *)buf, npages, stride, slots, bs, k, blocks, steps, s, sink, &cps))
				goto out;
			if (cps > best)
				best = cps;
		}
	}
	*chunks_per_s = best;
	rc = 0;
out:
	if (s) cudaStreamDestroy(s);
	if (sink) cudaFree(sink);
	return rc;
}

extern "C" int bench_gpu_limit(uint32_t bs, uint64_t region, uint32_t inflight, int in_gpu, double *bytes_per_s,
			       double *chunks_per_s, double *copy_bps)
{
	uint4 *buf = NULL, *dst = NULL;
	cudaStream_t s = 0;
	int rc = -EIO;
	double best = 0;
	if (in_gpu) {
		CUDA_TRY(cudaMalloc((void **)&buf, region), out);
		CUDA_TRY(cudaMemset(buf, 0x5a, region), out);
	} else {
		CUDA_TRY(cudaHostAlloc((void **)&buf, region, cudaHostAllocMapped), out);
		memset(buf, 0x5a, region); /* (every page present and mapped before the run) */
	}
	CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), out);
	if (bench_gpu_limit_on(buf, region / bs, bs, 1, bs, inflight, &best))
		goto out;
	*chunks_per_s = best;
	*bytes_per_s = best * bs;
	if (copy_bps && !in_gpu) {
		const uint64_t n = region < (1ull << 30) ? region : 1ull << 30;
		cudaEvent_t e0, e1;
		float ms = 0, bestms = 0;
		CUDA_TRY(cudaMalloc((void **)&dst, n), out);
		cudaEventCreate(&e0);
		cudaEventCreate(&e1);
		for (int i = 0; i < 3; i++) {
			cudaEventRecord(e0, s);
			cudaMemcpyAsync(dst, buf, n, cudaMemcpyHostToDevice, s);
			cudaEventRecord(e1, s);
			if (cudaEventSynchronize(e1) == cudaSuccess && cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess &&
			    ms > 0 && (bestms == 0 || ms < bestms))
				bestms = ms;
		}
		cudaEventDestroy(e0);
		cudaEventDestroy(e1);
		*copy_bps = bestms > 0 ? (double)n / (bestms / 1e3) : 0;
	}
	rc = 0;
out:
	if (s) cudaStreamDestroy(s);
	/* frees happen before any emulator starts or after it stopped (caller's order) */
	if (buf && in_gpu) cudaFree(buf);
	else if (buf) cudaFreeHost(buf);
	if (dst) cudaFree(dst);
	return rc;
}

/* One warp per chunk: 16-byte coalesced loads of a random chunk of the source buffer
 * (pinned host memory, or GPU memory). */
__global__ void pcie_kernel(const uint4 *src, uint64_t nchunks_region, uint32_t bs, uint4 *dst,
			    uint64_t chunks_per_warp, uint64_t seed, unsigned long long *sink)
{
	uint64_t gw = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	uint32_t lane = threadIdx.x & 31u;
	uint32_t words = bs / 16u;
	uint64_t r = bench_mix64(seed ^ gw);
	uint4 acc = make_uint4(0, 0, 0, 0);
	for (uint64_t k = 0; k < chunks_per_warp; k++) {
		r = bench_mix64(r);
		const uint4 *s = src + (r % nchunks_region) * words;
		uint4 *d = dst + gw * words;
		for (uint32_t i = lane; i < words; i += 32) {
			uint4 v = s[i];
			d[i] = v;
			acc.x ^= v.x;
		}
	}
	if (acc.x == 0x12345678u)
		atomicAdd(sink, 1ull); /* keeps the loads */
}

extern "C" int bench_gpu_chunk_baseline(uint32_t bs, uint64_t region, uint64_t threads, uint64_t chunks, int in_gpu,
					double *bytes_per_s, double *chunks_per_s)
{
	uint4 *host = NULL, *dst = NULL;
	unsigned long long *sink = NULL;
	cudaStream_t s = 0;
	cudaEvent_t e0 = 0, e1 = 0;
	int rc = -EIO;
	uint64_t warps = threads / 32 ? threads / 32 : 1;
	uint64_t per = chunks / warps ? chunks / warps : 1;
	float ms = 0;
	if (in_gpu) {
		CUDA_TRY(cudaMalloc((void **)&host, region), out);
		CUDA_TRY(cudaMemset(host, 0x5a, region), out);
	} else {
		CUDA_TRY(cudaHostAlloc((void **)&host, region, cudaHostAllocMapped), out);
		memset(host, 0x5a, region);
	}
	CUDA_TRY(cudaMalloc((void **)&dst, warps * bs), out);
	CUDA_TRY(cudaMalloc((void **)&sink, 8), out);
	CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), out);
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	/* warm-up, then the timed run */
	pcie_kernel<<<(unsigned)((warps * 32 + 255) / 256), 256, 0, s>>>(host, region / bs, bs, dst, per / 8 + 1, 7, sink);
	cudaEventRecord(e0, s);
	pcie_kernel<<<(unsigned)((warps * 32 + 255) / 256), 256, 0, s>>>(host, region / bs, bs, dst, per, 11, sink);
	cudaEventRecord(e1, s);
	CUDA_TRY(cudaEventSynchronize(e1), out);
	cudaEventElapsedTime(&ms, e0, e1);
	*chunks_per_s = (double)(warps * per) / (ms / 1e3);
	*bytes_per_s = *chunks_per_s * bs;
	rc = 0;
out:
	if (e0) cudaEventDestroy(e0);
	if (e1) cudaEventDestroy(e1);
	if (s) cudaStreamDestroy(s);
	/* frees happen before any emulator starts or after it stopped (caller's order) */
	if (host && in_gpu) cudaFree(host);
	else if (host) cudaFreeHost(host);
	if (dst) cudaFree(dst);
	if (sink) cudaFree(sink);
	return rc;
}

__global__ void hbm_kernel(const uint4 *src, uint64_t n, unsigned long long *sink)
{
	uint4 acc = make_uint4(0, 0, 0, 0);
	for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
		uint4 v = src[i];
		acc.x ^= v.x;
		acc.y ^= v.y;
	}
	if ((acc.x ^ acc.y) == 0x9abcdef1u)
		atomicAdd(sink, 1ull);
}

extern "C" int bench_gpu_hbm_baseline(uint64_t bytes, double *bytes_per_s)
{
	uint4 *d = NULL;
	unsigned long long *sink = NULL;
	cudaEvent_t e0 = 0, e1 = 0;
	cudaStream_t s = 0;
	float ms = 0;
	int rc = -EIO, nsm = 0;
	cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0);
	CUDA_TRY(cudaMalloc((void **)&d, bytes), out);
	CUDA_TRY(cudaMalloc((void **)&sink, 8), out);
	CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), out);
	cudaMemsetAsync(d, 1, bytes, s);
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	hbm_kernel<<<nsm * 8, 256, 0, s>>>(d, bytes / 16, sink);
	cudaEventRecord(e0, s);
	for (int i = 0; i < 5; i++)
		hbm_kernel<<<nsm * 8, 256, 0, s>>>(d, bytes / 16, sink);
	cudaEventRecord(e1, s);
	CUDA_TRY(cudaEventSynchronize(e1), out);
	cudaEventElapsedTime(&ms, e0, e1);
	*bytes_per_s = 5.0 * (double)bytes / (ms / 1e3);
	rc = 0;
out:
	if (e0) cudaEventDestroy(e0);
	if (e1) cudaEventDestroy(e1);
	if (s) cudaStreamDestroy(s);
	if (d) cudaFree(d);
	if (sink) cudaFree(sink);
	return rc;
}

/* posix comparison: what a GPU application reading through the OS does per block
 * (KvikIO's POSIX path: pread into a pinned bounce buffer, cudaMemcpyAsync, sync). */
struct bench_gpu_posix {
	uint32_t threads, bs;
	uint8_t *host, *dev;
	cudaStream_t *s;
};

extern "C" void bench_gpu_posix_close(void *handle)
{
	struct bench_gpu_posix *p = (struct bench_gpu_posix *)handle;
	if (!p)
		return;
	for (uint32_t t = 0; p->s && t < p->threads; t++)
		if (p->s[t])
			cudaStreamDestroy(p->s[t]);
	if (p->host)
		cudaFreeHost(p->host);
	if (p->dev)
		cudaFree(p->dev);
	free(p->s);
	free(p);
}

extern "C" int bench_gpu_posix_open(uint32_t threads, uint32_t bs, void **handle)
{
	struct bench_gpu_posix *p = (struct bench_gpu_posix *)calloc(1, sizeof(*p));
	if (!p || !(p->s = (cudaStream_t *)calloc(threads, sizeof(cudaStream_t)))) {
		free(p);
		return -ENOMEM;
	}
	p->threads = threads;
	p->bs = bs;
	CUDA_TRY(cudaHostAlloc((void **)&p->host, (size_t)threads * bs, cudaHostAllocDefault), fail);
	CUDA_TRY(cudaMalloc((void **)&p->dev, (size_t)threads * bs), fail);
	for (uint32_t t = 0; t < threads; t++)
		CUDA_TRY(cudaStreamCreateWithFlags(&p->s[t], cudaStreamNonBlocking), fail);
	/* touch both sides once, so that no first-use cost lands in the timed run */
	memset(p->host, 0, (size_t)threads * bs);
	CUDA_TRY(cudaMemcpy(p->dev, p->host, (size_t)threads * bs, cudaMemcpyHostToDevice), fail);
	*handle = p;
	return 0;
fail:
	bench_gpu_posix_close(p);
	return -EIO;
}

extern "C" void *bench_gpu_posix_buf(void *handle, uint32_t t)
{
	struct bench_gpu_posix *p = (struct bench_gpu_posix *)handle;
	return p->host + (size_t)t * p->bs;
}

extern "C" int bench_gpu_posix_copy(void *handle, uint32_t t)
{
	struct bench_gpu_posix *p = (struct bench_gpu_posix *)handle;
	size_t o = (size_t)t * p->bs;
	if (cudaMemcpyAsync(p->dev + o, p->host + o, p->bs, cudaMemcpyHostToDevice, p->s[t]) != cudaSuccess ||
	    cudaStreamSynchronize(p->s[t]) != cudaSuccess)
		return -EIO;
	return 0;
}

__global__ void abench_kernel(struct abench_args a)
{
	uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (tid < a.threads)
		abench_thread(&a, tid, threadIdx.x & 31u, 32);
}

extern "C" int abench_gpu_run(const struct abench_args *a, double *ms)
{
	cudaStream_t s;
	cudaEvent_t e0, e1;
	float f = 0;
	if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
		return -EIO;
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	cudaEventRecord(e0, s);
	abench_kernel<<<(unsigned)((a->threads + 255) / 256), 256, 0, s>>>(*a);
	cudaEventRecord(e1, s);
	cudaError_t e = cudaEventSynchronize(e1);
	cudaEventElapsedTime(&f, e0, e1);
	*ms = f;
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	cudaStreamDestroy(s);
	if (e != cudaSuccess) {
		fprintf(stderr, "bam: array bench kernel failed: %s\n", cudaGetErrorString(e));
		return -EIO;
	}
	return 0;
}

__global__ void clock_kernel(unsigned long long *out, unsigned long long spin_ns)
{
	unsigned long long t0 = bam_time_ns(), t = t0;
	unsigned long long c0 = clock64();
	while (clock64() - c0 < 200000000ull) /* ~0.1 s of SM cycles */
		t = bam_time_ns();
	out[0] = t0;
	out[1] = t;
	out[2] = clock64() - c0;
	(void)spin_ns;
}

extern "C" int bench_gpu_clock_check(double *ns_per_100ms_cycles)
{
	unsigned long long *d = NULL, h[3] = {0, 0, 0};
	if (cudaMalloc((void **)&d, 24) != cudaSuccess)
		return -EIO;
	clock_kernel<<<1, 1>>>(d, 0);
	cudaMemcpy(h, d, 24, cudaMemcpyDeviceToHost);
	cudaFree(d);
	*ns_per_100ms_cycles = (double)(h[1] - h[0]);
	fprintf(stderr, "bam bench: GPU %%globaltimer advanced %llu ns over %llu SM cycles\n", h[1] - h[0], h[2]);
	return 0;
}

__global__ void bench_warm_kernel(struct bench_args a, struct abench_args b)
{
	/* never true: the launch only makes the driver size local memory for these
	 * kernels' bodies before the emulator's persistent kernel starts */
	if (a.threads == 0xffffffffffffffffull)
		bench_thread(&a, 0);
	if (b.threads == 0xffffffffffffffffull)
		abench_thread(&b, 0, 0, 32);
}

extern "C" int bench_gpu_prepare(void)
{
	struct bench_args a;
	struct abench_args b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	bench_kernel<<<1, 32>>>(a);
	abench_kernel<<<1, 32>>>(b);
	bench_warm_kernel<<<1, 32>>>(a, b);
	return cudaDeviceSynchronize() == cudaSuccess ? 0 : -EIO;
}
