/* SPDX-License-Identifier: MIT */
/*
 * bam/defs.h - compiler portability for code shared by host C11 (gcc/clang) and
 * CUDA C (nvcc). Every inline function that runs on both sides is declared with
 * BAM_HD_INLINE; device-only helpers with BAM_DEVICE_INLINE.
 *
 * The "CPU target": the same shared code compiled by gcc runs on host threads with a
 * warp size of 1 (bam_warp_size() == 1), so warp-level coalescing degenerates to
 * one thread per group. See docs/DESIGN.md.
 */
#ifndef BAM_DEFS_H
#define BAM_DEFS_H

/* The shared inline code uses POSIX clock_gettime, nanosleep and sched_yield on the
 * host: ask for them when the includer compiles as strict ISO C and has not chosen.
 * Every public header includes this one first; it takes effect only if no system
 * header came before (otherwise compile with -std=gnu11 or define _POSIX_C_SOURCE). */
#if !defined(__CUDACC__) && !defined(__cplusplus) && !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdint.h>
#include <stddef.h>

#ifdef __CUDACC__
#define BAM_HD __host__ __device__
#define BAM_HD_INLINE __host__ __device__ static inline
#define BAM_DEVICE_INLINE __device__ static inline
#else
#define BAM_HD
#define BAM_HD_INLINE static inline
#endif

/* True while compiling the device side of a CUDA translation unit. */
#if defined(__CUDA_ARCH__)
#define BAM_ON_GPU 1
#else
#define BAM_ON_GPU 0
#endif

#if defined(__cplusplus)
#define BAM_STATIC_ASSERT(c, msg) static_assert(c, msg)
#define BAM_EXTERN_C_BEGIN extern "C" {
#define BAM_EXTERN_C_END }
#else
#define BAM_STATIC_ASSERT(c, msg) _Static_assert(c, msg)
#define BAM_EXTERN_C_BEGIN
#define BAM_EXTERN_C_END
#endif

#if defined(__GNUC__)
#define BAM_API __attribute__((visibility("default")))
#define BAM_LIKELY(x) __builtin_expect(!!(x), 1)
#define BAM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define BAM_API
#define BAM_LIKELY(x) (x)
#define BAM_UNLIKELY(x) (x)
#endif

/* Round x up to a multiple of a (a > 0). */
#define BAM_ALIGN_UP(x, a) ((((x) + (a) - 1) / (a)) * (a))

#endif /* BAM_DEFS_H */
