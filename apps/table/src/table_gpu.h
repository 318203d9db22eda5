/* SPDX-License-Identifier: MIT */
/* GPU side of the table queries (table_gpu.cu): the kernel's launch, target memory for
 * the baselines and the whole-column loader. */
#ifndef BAM_TABLE_GPU_H
#define BAM_TABLE_GPU_H
#include "bam/defs.h"
#include "table_kern.h"
BAM_EXTERN_C_BEGIN
/* Run the query kernel over q (q->acc and q->error in GPU memory, q->acc initialised).
 * 0 or -EIO (a CUDA error, printed). */
int tq_gpu_run(const struct tq_view *q);
/* kind 0: GPU memory, 1: pinned host memory mapped for the GPU. NULL on failure. */
void *tq_gpu_alloc(int kind, uint64_t bytes);
void tq_gpu_free(int kind, void *p);
int tq_gpu_copy(void *dst, const void *src, uint64_t bytes); /* any direction; 0 or -EIO */
/* Read bytes at off of fd into dst (GPU memory): chunks of chunk bytes read by the CPU
 * into two pinned staging buffers in turn, each copied asynchronously while the next
 * is read; reads paced at bw bytes/s when bw > 0. 0, -EIO (read or CUDA), -ENOMEM. */
int tq_gpu_load(int fd, uint64_t off, uint64_t bytes, void *dst, uint64_t chunk, double bw);
/* Empty launch before any emulator starts (kernels loaded eagerly). */
int tq_gpu_prepare(void);
BAM_EXTERN_C_END
#endif
