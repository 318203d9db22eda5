/* SPDX-License-Identifier: MIT */
/* GPU launchers of `bam bench` (bench_gpu.cu); only in CUDA builds. */
#ifndef BAM_BENCH_GPU_H
#define BAM_BENCH_GPU_H
#include "bam/defs.h"
#include "bench_kern.h"
BAM_EXTERN_C_BEGIN
struct bam_iobench_gpu_use;
/* Launch the bench kernel (threads GPU threads, 'a' copied by value), then with 'flush'
 * one Flush per controller (bench_flush) in the same stream. Fills the bench kernel's
 * share of the GPU in *use (the controller's share is the caller's). */
int bench_gpu_start(const struct bench_args *a, int flush, void **handle, struct bam_iobench_gpu_use *use);
/* 1 when the kernels have finished, 0 while they run, <0 on a CUDA error. */
int bench_gpu_done(void *handle);
/* Wait for the kernels; *ms = their duration by CUDA events, *flush_ms the Flush's
 * share of it. 0 or -EIO. */
int bench_gpu_finish(void *handle, double *ms, double *flush_ms);
/* Bytes of memory of the current GPU. 0 or -EIO. */
int bench_gpu_mem_total(uint64_t *bytes);
/* Independent chunk loads each warp keeps in flight in the limit kernel */
#define BENCH_LIMIT_INFLIGHT 8
/* The limit of the data's path for random bs-byte reads over 'region' bytes: a kernel
 * whose warps each keep 'inflight' random chunks in flight (16-byte loads, every lane),
 * over pinned host memory (in_gpu 0) or GPU memory; the best of a few grid sizes.
 * With copy_bps, also the copy engine's rate (cudaMemcpy host to device of up to 1 GiB
 * of the same buffer). Returns 0 with bytes/s and chunks/s. Allocates: call before any
 * persistent kernel runs. */
int bench_gpu_limit(uint32_t bs, uint64_t region, uint32_t inflight, int in_gpu, double *bytes_per_s,
		    double *chunks_per_s, double *copy_bps);
/* The limit kernel over a buffer the caller allocated (GPU-mapped host memory or GPU
 * memory): each read is a random bs chunk among the first 'slots' chunks of a random
 * page of 'npages' pages 'stride' bytes apart (stride and bs multiples of 16; slots *
 * bs <= stride). Dense: stride = bs, slots = 1. 0 with chunks/s, or -EIO. */
int bench_gpu_limit_on(const void *buf, uint64_t npages, uint64_t stride, uint32_t slots, uint32_t bs,
		       uint32_t inflight, double *chunks_per_s);
/* The physical baseline: a plain kernel reading random bs-byte chunks of a buffer of
 * 'region' bytes into GPU memory with 'threads' threads (a warp per chunk), 'chunks'
 * chunks in all; the buffer is pinned host memory (the PCIe link: where an SSD's data
 * and the emulator's default media come from), or GPU memory when in_gpu is set (the
 * emulator's media=gpu). Returns 0 with the achieved bytes/s and chunks/s. */
int bench_gpu_chunk_baseline(uint32_t bs, uint64_t region, uint64_t threads, uint64_t chunks, int in_gpu,
			     double *bytes_per_s, double *chunks_per_s);
/* HBM baseline: read 'bytes' of device memory; returns bytes/s. */
int bench_gpu_hbm_baseline(uint64_t bytes, double *bytes_per_s);
/* The posix comparison (bench_file.c) on the GPU target: for each of 'threads' host
 * threads, a pinned host buffer of bs bytes that it preads into, bs bytes of GPU memory
 * and a non-blocking stream of its own. 0, -ENOMEM or -EIO. Allocates: call while no
 * persistent kernel runs (the file back end has none). */
int bench_gpu_posix_open(uint32_t threads, uint32_t bs, void **handle);
/* Thread t's pinned host buffer, at t * bs in a page-aligned allocation (aligned to the
 * LBA size, so O_DIRECT reads go straight into it). */
void *bench_gpu_posix_buf(void *handle, uint32_t t);
/* Called by host thread t only: cudaMemcpyAsync of its buffer into its GPU memory on
 * its stream, then wait for that stream. 0 or -EIO. */
int bench_gpu_posix_copy(void *handle, uint32_t t);
void bench_gpu_posix_close(void *handle);
BAM_EXTERN_C_END
#include "abench_kern.h"
BAM_EXTERN_C_BEGIN
/* Launch the bench kernels once with no work, before any emulator starts: the
 * driver then sizes local memory for them (growing it later would wait for the
 * emulator's persistent kernel forever). 0 or -EIO. */
int bench_gpu_prepare(void);
/* Debug: how far %globaltimer moves while the SM counts 2e8 cycles (stderr). */
int bench_gpu_clock_check(double *ns);
/* Run the array benchmark kernel; *ms from CUDA events. */
int abench_gpu_run(const struct abench_args *a, double *ms);
BAM_EXTERN_C_END
#endif
