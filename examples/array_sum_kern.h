/* SPDX-License-Identifier: MIT */
/* Kernel body of the array_sum example, shared by both targets: compiled by nvcc for
 * GPU threads (array_sum_gpu.cu) and by the C compiler for CPU-target host threads
 * (array_sum.c, through bam_cpu_launch). */
#ifndef ARRAY_SUM_KERN_H
#define ARRAY_SUM_KERN_H

#include "bam/array.h"

struct array_sum_args {
	struct bam_array_dev *in;  /* device-side views of the two arrays (bam_array_dev) */
	struct bam_array_dev *out;
	uint64_t n;                /* elements in each array */
	uint64_t threads;          /* threads in the launch (the grid-stride step) */
	uint64_t *total;           /* target memory (bam_mem_alloc): sum of in[] */
	uint64_t *errors;          /* target memory: failed accesses */
};

/* What the host writes into in[i] before the run. */
BAM_HD_INLINE uint64_t array_sum_value(uint64_t i)
{
	return 3 * i + 1;
}

/* One thread: a grid-stride loop over the elements. Consecutive threads of a GPU warp
 * take consecutive elements, so the warp_ calls coalesce them: the lanes whose elements
 * lie in one cache line share one lookup (and, on a miss, one NVMe read) done by a
 * leader lane. On the CPU target a warp is one thread and they behave like the
 * per-thread bam_array_read_u64 / bam_array_write_u64. */
BAM_HD_INLINE void array_sum_thread(const struct array_sum_args *g, uint64_t tid)
{
	uint64_t sum = 0, errs = 0;
	for (uint64_t i = tid; i < g->n; i += g->threads) {
		uint64_t v;
		/* read in[i] through the cache: a hit reads cache memory, a miss fills the
		 * line from the SSD through the NVMe queues (from this thread, no CPU) */
		if (bam_array_warp_read_u64(g->in, i, &v)) {
			errs++;
			continue;
		}
		sum += v;
		/* write out[i] into the cache: the line becomes dirty and reaches the SSD
		 * when it is evicted or at bam_cache_flush */
		if (bam_array_warp_write_u64(g->out, i, 2 * v))
			errs++;
	}
	/* one atomic per thread into the totals in target memory */
	if (sum)
		bam_fetch_add_relaxed_gpu_u64(g->total, sum);
	if (errs)
		bam_fetch_add_relaxed_gpu_u64(g->errors, errs);
}

#endif
