/* SPDX-License-Identifier: MIT */
/*
 * GPU memory for the GPU target, through the CUDA runtime's C API.
 *
 * While emulated-controller workers run as a persistent kernel, anything that
 * synchronises the whole device would wait for them forever. cudaFree and
 * cudaFreeHost may do that, so frees are deferred until no worker kernel runs
 * (bam_gpu_workers_running); copies use a non-blocking stream of their own.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "ctx_internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cudaStream_t copy_stream;
static int workers_running;
struct deferred {
	void *p;
	enum bam_mem_kind kind;
	struct deferred *next;
};
static struct deferred *deferred;

/* cudaMalloc aligns to 256 bytes; queue rings, cache lines and PRP targets must be
 * page aligned (NVMe: PRP entries after the first and queue bases are 4 KiB aligned),
 * so device allocations are over-allocated and aligned here, and the original
 * pointer is remembered for cudaFree. */
struct aligned_rec {
	void *aligned, *base;
	struct aligned_rec *next;
};
static struct aligned_rec *aligned_recs;

static void *base_of(void *aligned)
{
	struct aligned_rec **pp = &aligned_recs;
	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->aligned == aligned) {
			struct aligned_rec *r = *pp;
			void *b = r->base;
			*pp = r->next;
			free(r);
			return b;
		}
	}
	return aligned;
}

#define CUDA_TRY(call, label)                                                                  \
	do {                                                                                   \
		cudaError_t e_ = (call);                                                       \
		if (e_ != cudaSuccess) {                                                       \
			fprintf(stderr, "bam: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
			goto label;                                                            \
		}                                                                              \
	} while (0)

/* CUDA loads kernels lazily by default (CUDA_MODULE_LOADING=LAZY): the first launch
 * of a kernel may then wait for the device to go idle, which never happens while the
 * emulator's persistent worker kernel runs. Eager loading at initialisation avoids
 * that; it must be set before the runtime initialises, so this is the first CUDA
 * call the library makes (an application that set the variable keeps its value). */
int bam_gpu_available(void)
{
	int n = 0;
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	if (cudaGetDeviceCount(&n) != cudaSuccess)
		return 0;
	return n > 0;
}

static cudaStream_t stream(void)
{
	if (!copy_stream)
		cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking);
	return copy_stream;
}

void *bam_gpu_alloc(enum bam_mem_kind kind, uint64_t bytes)
{
	void *p = NULL;
	if (kind == BAM_MEM_DEVICE) {
		void *base = NULL;
		struct aligned_rec *r = malloc(sizeof(*r));
		if (!r)
			goto fail;
		if (cudaMalloc(&base, bytes + 4096) != cudaSuccess) {
			fprintf(stderr, "bam: cudaMalloc(%llu) failed\n", (unsigned long long)bytes);
			free(r);
			goto fail;
		}
		p = (void *)(((uintptr_t)base + 4095) & ~(uintptr_t)4095);
		pthread_mutex_lock(&lock);
		r->aligned = p;
		r->base = base;
		r->next = aligned_recs;
		aligned_recs = r;
		cudaMemsetAsync(p, 0, bytes, stream());
		cudaStreamSynchronize(stream());
		pthread_mutex_unlock(&lock);
	} else {
		CUDA_TRY(cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable), fail);
		memset(p, 0, bytes);
	}
	return p;
fail:
	return NULL;
}

static void free_now(enum bam_mem_kind kind, void *p)
{
	if (kind == BAM_MEM_DEVICE) {
		pthread_mutex_lock(&lock);
		void *b = base_of(p);
		pthread_mutex_unlock(&lock);
		cudaFree(b);
	}
	else
		cudaFreeHost(p);
}

void bam_gpu_free(enum bam_mem_kind kind, void *p)
{
	pthread_mutex_lock(&lock);
	if (workers_running) {
		struct deferred *d = malloc(sizeof(*d));
		if (d) {
			d->p = p;
			d->kind = kind;
			d->next = deferred;
			deferred = d;
		} /* else: leaked rather than risking a device-wide wait */
		pthread_mutex_unlock(&lock);
		return;
	}
	pthread_mutex_unlock(&lock);
	free_now(kind, p);
}

/* Called by the emulator around its persistent kernel. */
void bam_gpu_workers_begin(void)
{
	pthread_mutex_lock(&lock);
	workers_running++;
	pthread_mutex_unlock(&lock);
}

void bam_gpu_workers_end(void)
{
	pthread_mutex_lock(&lock);
	struct deferred *d = NULL;
	if (--workers_running == 0) {
		d = deferred;
		deferred = NULL;
	}
	pthread_mutex_unlock(&lock);
	while (d) {
		struct deferred *n = d->next;
		free_now(d->kind, d->p);
		free(d);
		d = n;
	}
}

int bam_gpu_copy(void *dst, const void *src, uint64_t bytes)
{
	int rc = 0;
	pthread_mutex_lock(&lock);
	CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream()), fail);
	CUDA_TRY(cudaStreamSynchronize(stream()), fail);
	pthread_mutex_unlock(&lock);
	return 0;
fail:
	rc = -EIO;
	pthread_mutex_unlock(&lock);
	return rc;
}

int bam_gpu_memset(void *dst, int c, uint64_t bytes)
{
	int rc = 0;
	pthread_mutex_lock(&lock);
	CUDA_TRY(cudaMemsetAsync(dst, c, bytes, stream()), fail);
	CUDA_TRY(cudaStreamSynchronize(stream()), fail);
	pthread_mutex_unlock(&lock);
	return 0;
fail:
	rc = -EIO;
	pthread_mutex_unlock(&lock);
	return rc;
}

int bam_gpu_host_register(void *p, uint64_t bytes)
{
	CUDA_TRY(cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable), fail);
	return 0;
fail:
	return -EIO;
}

void bam_gpu_host_unregister(void *p)
{
	cudaHostUnregister(p);
}
