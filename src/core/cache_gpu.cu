/* SPDX-License-Identifier: MIT */
/* The flush kernel: one thread per cache slot writes dirty lines back. */
#include <errno.h>
#include <stdio.h>
#include <cuda_runtime.h>
#include "bam/array.h"

extern "C" void bam_gpu_free(int kind, void *p);
extern "C" void *bam_gpu_alloc(int kind, uint64_t bytes);

__global__ void cache_flush_kernel(struct bam_cache_dev *c, uint64_t n, uint32_t *failures)
{
	uint64_t s = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (s >= n)
		return;
	int rc;
	while ((rc = bam_cache_flush_slot(c, s)) == -EAGAIN)
		;
	if (rc)
		atomicAdd(failures, 1u);
}

/* Load the kernel before any persistent kernel runs (lazy module loading would wait for
 * the device to go idle at its first launch). */
extern "C" int bam_cache_gpu_prepare(void)
{
	cudaFuncAttributes fa;
	return cudaFuncGetAttributes(&fa, cache_flush_kernel) == cudaSuccess ? 0 : -EIO;
}

extern "C" int bam_cache_gpu_flush(struct bam_cache_dev *d, uint64_t n_slots, uint32_t *failures)
{
	uint32_t *df = NULL;
	cudaStream_t s;
	int rc = -EIO;
	if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
		return -EIO;
	if (!(df = (uint32_t *)bam_gpu_alloc(0, 4))) /* zeroed; pauses the emulator around cudaMalloc */
		goto out;
	cache_flush_kernel<<<(unsigned)((n_slots + 255) / 256), 256, 0, s>>>(d, n_slots, df);
	if (cudaStreamSynchronize(s) != cudaSuccess) {
		fprintf(stderr, "bam: flush kernel failed: %s\n", cudaGetErrorString(cudaGetLastError()));
		goto out;
	}
	cudaMemcpyAsync(failures, df, 4, cudaMemcpyDeviceToHost, s);
	cudaStreamSynchronize(s);
	rc = 0;
out:
	if (df)
		bam_gpu_free(0, df);
	cudaStreamDestroy(s);
	return rc;
}
