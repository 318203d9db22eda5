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
