/* SPDX-License-Identifier: MIT */
/* The transfer kernel of bam_array_gather / _read / _write on the GPU: one warp per row
 * (src/core/xfer_kern.h), a grid of warps striding over the rows. */
#include <errno.h>
#include <stdio.h>
#include <cuda_runtime.h>
#include "xfer_kern.h"

#define XFER_BLOCK 256u

__global__ void bam_xfer_kernel(struct bam_xfer_job j)
{
	uint64_t w = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32u;
	uint64_t nw = (uint64_t)gridDim.x * blockDim.x / 32u;
	for (uint64_t k = w; k < j.n_rows; k += nw)
		bam_xfer_do_row(&j, k);
}

static cudaStream_t own_stream;
static int sms;

/* Load the kernel now (under lazy module loading its first launch would otherwise wait
 * for the device to go idle, which it never does while a persistent controller kernel
 * runs): called before any back end starts its workers. */
extern "C" int bam_xfer_gpu_prepare(void)
{
	cudaFuncAttributes fa;
	if (cudaFuncGetAttributes(&fa, bam_xfer_kernel) != cudaSuccess)
		return -EIO;
	if (!own_stream && cudaStreamCreateWithFlags(&own_stream, cudaStreamNonBlocking) != cudaSuccess)
		return -EIO;
	int dev = 0;
	cudaGetDevice(&dev);
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
	return 0;
}

extern "C" int bam_xfer_gpu_run(const struct bam_xfer_job *j, void *stream)
{
	if (!own_stream && bam_xfer_gpu_prepare())
		return -EIO;
	cudaStream_t s = stream ? (cudaStream_t)stream : own_stream;
	/* at most 32 warps per SM in flight (each waits for its row's lines): enough to keep
	 * the queues busy, few enough to leave the GPU to others' kernels */
	uint64_t warps = j->n_rows, cap = (uint64_t)(sms > 0 ? sms : 132) * 8u * 4u;
	if (warps > cap)
		warps = cap;
	unsigned blocks = (unsigned)((warps * 32u + XFER_BLOCK - 1) / XFER_BLOCK);
	bam_xfer_kernel<<<blocks, XFER_BLOCK, 0, s>>>(*j);
	cudaError_t e = cudaGetLastError();
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(s);
	if (e != cudaSuccess) {
		fprintf(stderr, "bam: transfer kernel failed: %s\n", cudaGetErrorString(e));
		return -EIO;
	}
	return 0;
}
