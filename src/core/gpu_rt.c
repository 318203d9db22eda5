/* SPDX-License-Identifier: MIT */
/*
 * GPU memory for the GPU target, through the CUDA runtime's C API.
 *
 * While emulated-controller workers run as a persistent kernel, anything that
 * synchronises the whole device would wait for them forever. Device and pinned-host
 * allocations, frees and memsets do that implicitly (CUDA Programming Guide,
 * "Implicit Synchronization"). So every such call here first pauses the registered
 * persistent kernels (they keep their state in memory and simply return), makes the
 * call, and resumes them. Copies use a non-blocking stream of their own and need no
 * pause. Allocate while no application kernel waits for I/O.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "ctx_internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;       /* copy stream, records */
static pthread_mutex_t pause_lock = PTHREAD_MUTEX_INITIALIZER; /* pausing */
static cudaStream_t copy_stream;

#define CUDA_TRY(call, label)                                                                  \
	do {                                                                                   \
		cudaError_t e_ = (call);                                                       \
		if (e_ != cudaSuccess) {                                                       \
			fprintf(stderr, "bam: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
			goto label;                                                            \
		}                                                                              \
	} while (0)

/* ---- persistent kernels to pause --------------------------------------------------- */

struct pauser {
	void *arg;
	int (*pause)(void *arg);
	int (*resume)(void *arg);
	struct pauser *next;
};
static struct pauser *pausers;
static int paused_depth;
/* On-demand workers (bam_gpu_workers_on_demand): the persistent kernels run only while
 * holds > 0, i.e. inside the library calls (and applications' runs) that need them. */
static int on_demand, holds;

static int want_running(void)
{
	return paused_depth == 0 && (!on_demand || holds > 0);
}

static int pause_each(void)
{
	int rc = 0;
	for (struct pauser *p = pausers; p; p = p->next) {
		int r = p->pause(p->arg);
		rc = rc ? rc : r;
	}
	return rc;
}

static int resume_each(void)
{
	int rc = 0;
	for (struct pauser *p = pausers; p; p = p->next) {
		int r = p->resume(p->arg);
		rc = rc ? rc : r;
	}
	return rc;
}

void bam_gpu_pauser_add(void *arg, int (*pause)(void *), int (*resume)(void *))
{
	struct pauser *p = malloc(sizeof(*p));
	if (!p)
		return;
	p->arg = arg;
	p->pause = pause;
	p->resume = resume;
	pthread_mutex_lock(&pause_lock);
	p->next = pausers;
	pausers = p;
	if (!want_running()) /* started while they should be parked */
		p->pause(arg);
	pthread_mutex_unlock(&pause_lock);
}

void bam_gpu_pauser_remove(void *arg)
{
	pthread_mutex_lock(&pause_lock);
	for (struct pauser **pp = &pausers; *pp; pp = &(*pp)->next)
		if ((*pp)->arg == arg) {
			struct pauser *p = *pp;
			*pp = p->next;
			free(p);
			break;
		}
	pthread_mutex_unlock(&pause_lock);
}

void bam_gpu_pause_all(void)
{
	pthread_mutex_lock(&pause_lock);
	if (paused_depth++ == 0)
		pause_each(); /* (each pauser's pause does nothing when it is not running) */
}

void bam_gpu_resume_all(void)
{
	--paused_depth;
	if (want_running())
		resume_each();
	pthread_mutex_unlock(&pause_lock);
}

int bam_gpu_workers_on_demand(int on)
{
	pthread_mutex_lock(&pause_lock);
	on_demand = on != 0;
	int rc = paused_depth ? 0 : want_running() ? resume_each() : pause_each();
	pthread_mutex_unlock(&pause_lock);
	return rc;
}

int bam_gpu_workers_is_on_demand(void)
{
	return on_demand;
}

int bam_gpu_workers_hold(void)
{
	int rc = 0;
	pthread_mutex_lock(&pause_lock);
	if (holds++ == 0 && want_running())
		rc = resume_each();
	pthread_mutex_unlock(&pause_lock);
	return rc;
}

void bam_gpu_workers_release(void)
{
	pthread_mutex_lock(&pause_lock);
	if (holds > 0 && --holds == 0 && on_demand && paused_depth == 0)
		pause_each();
	pthread_mutex_unlock(&pause_lock);
}

/* 1 when the CUDA driver loads modules lazily (CUDA_MODULE_LOADING=LAZY when the
 * driver initialised, in this process, by whichever runtime came first: PyTorch sets
 * LAZY when it initialises CUDA), 0 when eagerly, -1 when it cannot be told. */
int bam_gpu_lazy_loading(void)
{
	typedef int (*get_mode_fn)(int *);
	void *f = NULL;
	enum cudaDriverEntryPointQueryResult q;
	if (cudaGetDriverEntryPointByVersion("cuModuleGetLoadingMode", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
	    !f || q != cudaDriverEntryPointSuccess)
		return -1;
	int mode = 0;
	if (((get_mode_fn)f)(&mode) != 0)
		return -1;
	return mode == 2; /* CU_MODULE_LAZY_LOADING */
}

/* ---- aligned device allocations ------------------------------------------------------ */

/* cudaMalloc aligns to 256 bytes; queue rings, cache lines and PRP targets must be
 * page aligned (NVMe: queue bases and PRP entries after the first are 4 KiB aligned),
 * so device allocations are over-allocated and aligned, the base kept for cudaFree. */
struct aligned_rec {
	void *aligned, *base;
	struct aligned_rec *next;
};
static struct aligned_rec *aligned_recs;

static void *base_of(void *aligned)
{
	for (struct aligned_rec **pp = &aligned_recs; *pp; pp = &(*pp)->next) {
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

/* CUDA loads kernels lazily by default (CUDA_MODULE_LOADING=LAZY): the first launch
 * of a kernel may then wait for the device to go idle, which never happens while the
 * emulator's persistent worker kernel runs. Eager loading avoids that; it must be set
 * before the runtime initialises, so this is the first CUDA call the library makes
 * (an application that set the variable keeps its value). */
int bam_gpu_available(void)
{
	int n = 0;
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	/* Local memory grows when a kernel needs more than any before it, and growing it
	 * waits for every running kernel: with the emulator's persistent kernel running,
	 * forever. Keep it at its largest once grown; applications launch their kernels
	 * once before the emulator starts (bam_gpu_prepare in the tools) to grow it. */
	cudaSetDeviceFlags(cudaDeviceLmemResizeToMax | cudaDeviceMapHost);
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
	/* Both kinds page-aligned: cudaMalloc aligns to 256 bytes, and small pinned
	 * allocations may come from a pool (the file back end's queue rings live there). */
	void *base = NULL, *p = NULL;
	struct aligned_rec *r = malloc(sizeof(*r));
	if (!r)
		return NULL;
	bam_gpu_pause_all();
	cudaError_t e = kind == BAM_MEM_DEVICE ? cudaMalloc(&base, bytes + 4096)
					       : cudaHostAlloc(&base, bytes + 4096, cudaHostAllocMapped | cudaHostAllocPortable);
	if (e != cudaSuccess) {
		fprintf(stderr, "bam: %s(%llu) failed: %s\n", kind == BAM_MEM_DEVICE ? "cudaMalloc" : "cudaHostAlloc",
			(unsigned long long)bytes, cudaGetErrorString(e));
		free(r);
		bam_gpu_resume_all();
		return NULL;
	}
	p = (void *)(((uintptr_t)base + 4095) & ~(uintptr_t)4095);
	pthread_mutex_lock(&lock);
	r->aligned = p;
	r->base = base;
	r->next = aligned_recs;
	aligned_recs = r;
	if (kind == BAM_MEM_DEVICE) {
		cudaMemsetAsync(p, 0, bytes, stream());
		cudaStreamSynchronize(stream());
	} else {
		memset(p, 0, bytes);
	}
	pthread_mutex_unlock(&lock);
	bam_gpu_resume_all();
	return p;
}

void bam_gpu_free(enum bam_mem_kind kind, void *p)
{
	bam_gpu_pause_all();
	pthread_mutex_lock(&lock);
	void *b = base_of(p);
	pthread_mutex_unlock(&lock);
	if (kind == BAM_MEM_DEVICE)
		cudaFree(b);
	else
		cudaFreeHost(b);
	bam_gpu_resume_all();
}

int bam_gpu_copy(void *dst, const void *src, uint64_t bytes)
{
	pthread_mutex_lock(&lock);
	CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream()), fail);
	CUDA_TRY(cudaStreamSynchronize(stream()), fail);
	pthread_mutex_unlock(&lock);
	return 0;
fail:
	pthread_mutex_unlock(&lock);
	return -EIO;
}

void *bam_gpu_stream_new(void)
{
	cudaStream_t s = NULL;
	return cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess ? (void *)s : NULL;
}

int bam_gpu_copy_on(void *stream, void *dst, const void *src, uint64_t bytes)
{
	return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream) == cudaSuccess ? 0 : -EIO;
}

int bam_gpu_stream_wait(void *stream)
{
	return cudaStreamSynchronize((cudaStream_t)stream) == cudaSuccess ? 0 : -EIO;
}

void bam_gpu_stream_free(void *stream)
{
	if (stream)
		cudaStreamDestroy((cudaStream_t)stream);
}

void *bam_gpu_event_new(void)
{
	cudaEvent_t e = NULL;
	return cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess ? (void *)e : NULL;
}

int bam_gpu_event_record(void *ev, void *stream)
{
	return cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)stream) == cudaSuccess ? 0 : -EIO;
}

int bam_gpu_event_query(void *ev)
{
	cudaError_t e = cudaEventQuery((cudaEvent_t)ev);
	if (e == cudaSuccess)
		return 0;
	if (e == cudaErrorNotReady)
		return 1;
	return -EIO;
}

int bam_gpu_event_wait(void *ev)
{
	return cudaEventSynchronize((cudaEvent_t)ev) == cudaSuccess ? 0 : -EIO;
}

void bam_gpu_event_free(void *ev)
{
	if (ev)
		cudaEventDestroy((cudaEvent_t)ev);
}

int bam_gpu_memset(void *dst, int c, uint64_t bytes)
{
	int rc = 0;
	bam_gpu_pause_all();
	pthread_mutex_lock(&lock);
	if (cudaMemsetAsync(dst, c, bytes, stream()) != cudaSuccess || cudaStreamSynchronize(stream()) != cudaSuccess)
		rc = -EIO;
	pthread_mutex_unlock(&lock);
	bam_gpu_resume_all();
	return rc;
}

int bam_gpu_host_register(void *p, uint64_t bytes)
{
	int rc = 0;
	bam_gpu_pause_all();
	if (cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable) != cudaSuccess)
		rc = -EIO;
	bam_gpu_resume_all();
	return rc;
}

void bam_gpu_host_unregister(void *p)
{
	bam_gpu_pause_all();
	cudaHostUnregister(p);
	bam_gpu_resume_all();
}
