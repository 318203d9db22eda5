/* SPDX-License-Identifier: MIT */
/* GPU launches of bam_vecadd_run (vecadd_gpu.cu). Each returns 0 or -EIO. */
#ifndef BAM_VECADD_GPU_H
#define BAM_VECADD_GPU_H
#include "vecadd_kern.h"
#ifdef __cplusplus
extern "C" {
#endif
/* the kernels launched empty, before bam_ctx_open starts the emulator's kernel */
int vecadd_gpu_prepare(void);
int vecadd_gpu_bam(const struct vecadd_args *g);
/* tiling over 'tiles' tiles of tile_lines lines from g (ta/tb of each of the two
 * buffers: bufs[0..3] = ta0, tb0, ta1, tb1), two streams */
int vecadd_gpu_tiling(const struct vecadd_args *g, uint64_t n_lines, uint64_t tile_lines, uint8_t *const bufs[4]);
/* c = a + b over n elements in target memory */
int vecadd_gpu_add(uint32_t type, uint8_t *a, const uint8_t *b, uint64_t n);
#ifdef __cplusplus
}
#endif
#endif
