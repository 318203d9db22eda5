/* SPDX-License-Identifier: MIT */
/* GPU launcher of the array_sum example (built only when CUDA is found). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cuda_runtime.h>
#include "array_sum_kern.h"

__global__ void array_sum_kernel(struct array_sum_args a)
{
	uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (tid < a.threads)
		array_sum_thread(&a, tid);
}

/* Launch the kernel once with no work (threads = 0), before bam_ctx_open starts the
 * emulator's persistent kernel: the driver sizes local memory for it now, since growing
 * it later would wait for the persistent kernel forever (docs/DESIGN.md). */
extern "C" int array_sum_gpu_prepare(void)
{
	struct array_sum_args a;
	memset(&a, 0, sizeof(a));
	array_sum_kernel<<<1, 32>>>(a);
	cudaError_t e = cudaDeviceSynchronize();
	if (e != cudaSuccess) {
		fprintf(stderr, "array_sum: warm-up kernel failed: %s\n", cudaGetErrorString(e));
		return -EIO;
	}
	return 0;
}

/* Run the kernel on its own non-blocking stream (the emulator's kernel runs on another
 * one) and wait for it. 0 or -EIO. */
extern "C" int array_sum_gpu_run(const struct array_sum_args *a)
{
	cudaStream_t s;
	cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	if (e == cudaSuccess) {
		const unsigned tpb = 256;
		array_sum_kernel<<<(unsigned)((a->threads + tpb - 1) / tpb), tpb, 0, s>>>(*a);
		e = cudaGetLastError();
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(s);
		cudaStreamDestroy(s);
	}
	if (e != cudaSuccess) {
		fprintf(stderr, "array_sum: kernel failed: %s\n", cudaGetErrorString(e));
		return -EIO;
	}
	return 0;
}
