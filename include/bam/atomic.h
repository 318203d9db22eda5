/* SPDX-License-Identifier: MIT */
/*
 * bam/atomic.h - every atomic operation and fence of the project, for host C11 and
 * CUDA, with the memory order and the scope in each name.
 *
 * Scopes (PTX ISA "Scope"): _gpu orders accesses among threads of one GPU (and, on the
 * CPU target, among host threads); _sys additionally orders them against other agents
 * of the system: host threads, and a device that reads memory by DMA or whose
 * registers are written by MMIO (an NVMe controller's doorbell). On the CPU target both
 * scopes compile to the same C11 atomics (__atomic builtins). docs/MEMORY-ORDERING.md
 * says which accesses each use in the queue protocol orders.
 *
 * Orders: _relaxed (atomicity only), _acquire (later accesses stay after), _release
 * (earlier accesses stay before), _acq_rel (both).
 */
#ifndef BAM_ATOMIC_H
#define BAM_ATOMIC_H

#include "bam/defs.h"

/* ---- loads and stores --------------------------------------------------------- */

BAM_HD_INLINE uint32_t bam_load_relaxed_u32(const uint32_t *p)
{
#if BAM_ON_GPU
	return *(const volatile uint32_t *)p;
#else
	return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

BAM_HD_INLINE uint64_t bam_load_relaxed_u64(const uint64_t *p)
{
#if BAM_ON_GPU
	return *(const volatile uint64_t *)p;
#else
	return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

/* Strong relaxed loads at GPU and at system scope (PTX ld.relaxed.SCOPE): a fence
 * after one makes the acquire pattern of the PTX memory model (the load reads from a
 * release, the fence orders what follows after it). Host: C11 relaxed loads. */
BAM_HD_INLINE uint32_t bam_load_relaxed_gpu_u32(const uint32_t *p)
{
#if BAM_ON_GPU
	uint32_t v;
	asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

BAM_HD_INLINE uint32_t bam_load_relaxed_sys_u32(const uint32_t *p)
{
#if BAM_ON_GPU
	uint32_t v;
	asm volatile("ld.relaxed.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

BAM_HD_INLINE uint32_t bam_load_acquire_gpu_u32(const uint32_t *p)
{
#if BAM_ON_GPU
	uint32_t v;
	asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

BAM_HD_INLINE uint32_t bam_load_acquire_sys_u32(const uint32_t *p)
{
#if BAM_ON_GPU
	uint32_t v;
	asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

BAM_HD_INLINE uint64_t bam_load_acquire_gpu_u64(const uint64_t *p)
{
#if BAM_ON_GPU
	uint64_t v;
	asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

BAM_HD_INLINE void bam_store_relaxed_u32(uint32_t *p, uint32_t v)
{
#if BAM_ON_GPU
	*(volatile uint32_t *)p = v;
#else
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

BAM_HD_INLINE void bam_store_relaxed_u64(uint64_t *p, uint64_t v)
{
#if BAM_ON_GPU
	*(volatile uint64_t *)p = v;
#else
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

BAM_HD_INLINE void bam_store_release_gpu_u32(uint32_t *p, uint32_t v)
{
#if BAM_ON_GPU
	asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

BAM_HD_INLINE void bam_store_release_gpu_u64(uint64_t *p, uint64_t v)
{
#if BAM_ON_GPU
	asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/* Store that a device (or host thread) may observe: a doorbell register. The
 * release at system scope orders every earlier write of this thread (the SQEs) before
 * the doorbell as seen by the controller (Linux: wmb() before writel of the SQ tail). */
BAM_HD_INLINE void bam_store_release_sys_u32(uint32_t *p, uint32_t v)
{
#if BAM_ON_GPU
	asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/* ---- read-modify-write -------------------------------------------------------- */

BAM_HD_INLINE uint32_t bam_fetch_add_relaxed_gpu_u32(uint32_t *p, uint32_t v)
{
#if BAM_ON_GPU
	return atomicAdd((unsigned int *)p, v);
#else
	return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

BAM_HD_INLINE uint64_t bam_fetch_add_relaxed_gpu_u64(uint64_t *p, uint64_t v)
{
#if BAM_ON_GPU
	return atomicAdd((unsigned long long *)p, (unsigned long long)v);
#else
	return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

BAM_HD_INLINE uint32_t bam_fetch_add_acq_rel_gpu_u32(uint32_t *p, uint32_t v)
{
#if BAM_ON_GPU
	uint32_t old;
	asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
	return old;
#else
	return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}

/* Acquire-only and release-only adds: the cache's reference count (take a reference:
 * acquire, so the line's data is read after it; drop it: release, so the reads are done
 * before an evictor can see the count fall). */
BAM_HD_INLINE uint32_t bam_fetch_add_acquire_gpu_u32(uint32_t *p, uint32_t v)
{
#if BAM_ON_GPU
	uint32_t old;
	asm volatile("atom.acquire.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
	return old;
#else
	return __atomic_fetch_add(p, v, __ATOMIC_ACQUIRE);
#endif
}

BAM_HD_INLINE uint32_t bam_fetch_add_release_gpu_u32(uint32_t *p, uint32_t v)
{
#if BAM_ON_GPU
	uint32_t old;
	asm volatile("atom.release.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
	return old;
#else
	return __atomic_fetch_add(p, v, __ATOMIC_RELEASE);
#endif
}

/* Release add whose result is not needed (PTX red: the thread does not wait for it). */
BAM_HD_INLINE void bam_red_add_release_gpu_u32(uint32_t *p, uint32_t v)
{
#if BAM_ON_GPU
	asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
	__atomic_fetch_add(p, v, __ATOMIC_RELEASE);
#endif
}

/* Release or whose result is not needed (PTX red: the thread does not wait for it). */
BAM_HD_INLINE void bam_red_or_release_gpu_u32(uint32_t *p, uint32_t v)
{
#if BAM_ON_GPU
	asm volatile("red.release.gpu.global.or.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
	__atomic_fetch_or(p, v, __ATOMIC_RELEASE);
#endif
}

/* Relaxed and whose result is not needed (PTX red: the thread does not wait for it). */
BAM_HD_INLINE void bam_red_and_relaxed_gpu_u32(uint32_t *p, uint32_t v)
{
#if BAM_ON_GPU
	asm volatile("red.relaxed.gpu.global.and.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
	__atomic_fetch_and(p, v, __ATOMIC_RELAXED);
#endif
}

BAM_HD_INLINE uint32_t bam_fetch_or_relaxed_gpu_u32(uint32_t *p, uint32_t v)
{
#if BAM_ON_GPU
	return atomicOr((unsigned int *)p, v);
#else
	return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
#endif
}

BAM_HD_INLINE uint32_t bam_fetch_sub_acq_rel_gpu_u32(uint32_t *p, uint32_t v)
{
	return bam_fetch_add_acq_rel_gpu_u32(p, (uint32_t)0 - v);
}

BAM_HD_INLINE uint32_t bam_fetch_or_acq_rel_gpu_u32(uint32_t *p, uint32_t v)
{
#if BAM_ON_GPU
	uint32_t old;
	asm volatile("atom.acq_rel.gpu.global.or.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
	return old;
#else
	return __atomic_fetch_or(p, v, __ATOMIC_ACQ_REL);
#endif
}

BAM_HD_INLINE uint32_t bam_fetch_and_acq_rel_gpu_u32(uint32_t *p, uint32_t v)
{
#if BAM_ON_GPU
	uint32_t old;
	asm volatile("atom.acq_rel.gpu.global.and.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
	return old;
#else
	return __atomic_fetch_and(p, v, __ATOMIC_ACQ_REL);
#endif
}

/* Compare-and-swap; returns the value found (== expected on success). */
BAM_HD_INLINE uint32_t bam_cas_acq_rel_gpu_u32(uint32_t *p, uint32_t expected, uint32_t desired)
{
#if BAM_ON_GPU
	uint32_t old;
	asm volatile("atom.acq_rel.gpu.global.cas.b32 %0, [%1], %2, %3;"
		     : "=r"(old) : "l"(p), "r"(expected), "r"(desired) : "memory");
	return old;
#else
	__atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return expected;
#endif
}

BAM_HD_INLINE uint64_t bam_cas_acq_rel_gpu_u64(uint64_t *p, uint64_t expected, uint64_t desired)
{
#if BAM_ON_GPU
	uint64_t old;
	asm volatile("atom.acq_rel.gpu.global.cas.b64 %0, [%1], %2, %3;"
		     : "=l"(old) : "l"(p), "l"(expected), "l"(desired) : "memory");
	return old;
#else
	__atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return expected;
#endif
}

/* Atomic min; returns the old value. */
BAM_HD_INLINE uint64_t bam_fetch_min_relaxed_gpu_u64(uint64_t *p, uint64_t v)
{
#if BAM_ON_GPU
	return atomicMin((unsigned long long *)p, (unsigned long long)v);
#else
	uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (v < old && !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return old;
#endif
}

/* ---- fences ------------------------------------------------------------------- */

BAM_HD_INLINE void bam_fence_acq_rel_gpu(void)
{
#if BAM_ON_GPU
	asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_ACQ_REL);
#endif
}

BAM_HD_INLINE void bam_fence_acq_rel_sys(void)
{
#if BAM_ON_GPU
	asm volatile("fence.acq_rel.sys;" ::: "memory");
#elif defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer does not model fences; every use here is followed by a release
	 * store that orders the same accesses on the host. */
#else
	__atomic_thread_fence(__ATOMIC_ACQ_REL);
#endif
}

BAM_HD_INLINE void bam_fence_seq_cst_sys(void)
{
#if BAM_ON_GPU
	asm volatile("fence.sc.sys;" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* ---- time and backoff --------------------------------------------------------- */

#if !BAM_ON_GPU
/* The host side's clock, sleeps and futexes are library functions
 * (src/core/cpu_launch.c), not inline POSIX calls: so that this header needs no
 * feature-test macro and compiles as strict ISO C after any system header. */
BAM_EXTERN_C_BEGIN
/* CLOCK_MONOTONIC in nanoseconds. */
BAM_API uint64_t bam_host_time_ns(void);
/* Sleep ns nanoseconds, 0 <= ns < 10^9 (nanosleep; may return early). */
BAM_API void bam_host_sleep_ns(long ns);
/* Give the core to another thread (sched_yield). */
BAM_API void bam_host_yield(void);
/* CPU target: sleep while *p == val, at most ns nanoseconds, 0 <= ns < 10^9 (a Linux
 * futex; a spurious or early return is harmless: callers re-check what they wait for).
 * src/core/cpu_launch.c. */
BAM_API void bam_cpu_futex_wait(uint32_t *p, uint32_t val, long ns);
/* CPU target: bump *p and wake one thread asleep on it in bam_cpu_futex_wait. */
BAM_API void bam_cpu_futex_wake(uint32_t *p);
BAM_EXTERN_C_END
#endif

/* Monotonic nanoseconds: %globaltimer on the GPU, CLOCK_MONOTONIC on the host. Only
 * differences are meaningful, and only on the side that read them. */
BAM_HD_INLINE uint64_t bam_time_ns(void)
{
#if BAM_ON_GPU
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
#else
	return bam_host_time_ns();
#endif
}

/* Polite spin: on the GPU a short sleep frees issue slots for other warps; on the
 * host a pause hint first, then yields, then short sleeps, so that oversubscribed host
 * threads (CI has 2 cores) let the thread they wait for run. 'iter' is the caller's
 * spin count. */
BAM_HD_INLINE void bam_spin_pause(uint32_t iter)
{
#if BAM_ON_GPU
	__nanosleep(iter < 8 ? 32 : 256);
#else
	if (iter < 16) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	} else if (iter < 256) {
		bam_host_yield();
	} else {
		/* 20 us, then 200 us after 1024 spins: a hundred waiting threads waking every
		 * 20 us kept 2 cores busy in the kernel and starved the threads they waited
		 * for (bam bench --array, 128 CPU threads on a 2-line cache: 141 reads/s) */
		bam_host_sleep_ns(iter < 1024 ? 20000 : 200000);
	}
#endif
}

#endif /* BAM_ATOMIC_H */
