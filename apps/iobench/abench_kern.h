/* SPDX-License-Identifier: MIT */
/* Kernel body of `bam bench --array`: element reads through the cache and array API,
 * compiled for GPU warps and CPU-target threads. Element i of the array holds
 * abench_value(i); every read is checked. */
#ifndef BAM_ABENCH_KERN_H
#define BAM_ABENCH_KERN_H

#include "bam/array.h"
#include "bench_kern.h" /* bench_mix64 */

enum abench_pattern {
	AB_HOT = 0,    /* a working set that fits the cache, swept warp-contiguously: hits */
	AB_RANDOM = 1, /* one random element per thread per step: mostly misses when n >> cache */
	AB_WARP = 2,   /* a random line per warp, lanes read consecutive elements of it */
	AB_SCAN = 3,   /* hot working set, a warp reads whole lines through line handles */
	AB_RANDWRITE = 4, /* one random element per thread per step written: abench_value(i) + 1 */
	AB_RMW = 5,    /* one random element per thread per step: atomic add of 1 */
};

struct abench_args {
	struct bam_array_dev *a;
	uint64_t n_elems;     /* array elements (u64) */
	uint64_t ws;          /* working-set elements for AB_HOT */
	uint64_t threads;
	uint64_t steps;       /* reads per thread */
	uint64_t seed;
	uint32_t pattern;
	uint32_t coalesce;
	uint64_t *bad;        /* wrong values seen */
	uint64_t *errs;       /* failed reads */
	uint64_t *skipped;    /* reads not attempted: the device had timed out */
};

/* A read on the array's device waited out the timeout: -ETIMEDOUT (no completion) or
 * -EBUSY (no cache slot came free; after timeouts every slot may be retired), its own
 * (rc) or any thread's first error (bam_dev_record_error). Every read after it would
 * wait that long too (a controller that stopped answering cost one timeout per read,
 * minutes under --quiet), so a thread stops at a failed read when this holds, and a
 * thread that starts after one does not begin. */
BAM_HD_INLINE int abench_timed_out(const struct abench_args *g, int rc)
{
	const uint32_t e = bam_load_relaxed_u32(&g->a->io->error);
	return rc == -ETIMEDOUT || rc == -EBUSY || e == ETIMEDOUT || e == EBUSY;
}

BAM_HD_INLINE uint64_t abench_value(uint64_t i)
{
	return i * 0x9e3779b97f4a7c15ull + 12345u;
}

/* One element read of AB_HOT/AB_RANDOM/AB_WARP step k: counts a failed read or a
 * wrong value. Returns the read's result (0 or a negative errno). */
BAM_HD_INLINE int abench_step(const struct abench_args *g, uint64_t tid, uint64_t warp, uint64_t k,
			       uint64_t *bad, uint64_t *errs)
{
	uint64_t i;
	if (g->pattern == AB_HOT) {
		i = (tid + k * g->threads) % g->ws;
	} else if (g->pattern == AB_RANDWRITE || g->pattern == AB_RMW) {
		i = bench_mix64(g->seed ^ (tid << 24) ^ k) % g->n_elems;
		const int rc = g->pattern == AB_RMW ? bam_array_atomic_add_u64(g->a, i, 1, NULL)
			       : g->coalesce      ? bam_array_warp_write_u64(g->a, i, abench_value(i) + 1)
						  : bam_array_write_u64(g->a, i, abench_value(i) + 1);
		if (rc)
			(*errs)++;
		return rc;
	} else if (g->pattern == AB_RANDOM) {
		i = bench_mix64(g->seed ^ (tid << 24) ^ k) % g->n_elems;
	} else {
		uint64_t groups = g->n_elems / 32u;
		i = (bench_mix64(g->seed ^ (warp << 24) ^ k) % groups) * 32u + (tid % 32u);
	}
	uint64_t v;
	int rc = g->coalesce ? bam_array_warp_read_u64(g->a, i, &v) : bam_array_read_u64(g->a, i, &v);
	if (rc)
		(*errs)++;
	else if (v != abench_value(i))
		(*bad)++;
	return rc;
}

/* AB_SCAN: per step the warp takes one line of the working set with one coalesced
 * acquisition (bam_line_warp_get) and its lanes read every element of it, consecutive
 * elements per round of the warp; every value is checked. Line index: consecutive warps take
 * consecutive lines, the whole grid moves on by its warp count each step. */
BAM_HD_INLINE void abench_scan(const struct abench_args *g, uint64_t tid, uint32_t lane, uint32_t wsize,
			       uint64_t *bad, uint64_t *errs, uint64_t *skipped)
{
	const uint64_t per = (uint64_t)g->a->cache->line_size >> g->a->elem_shift;
	const uint64_t ws_lines = (g->ws + per - 1) / per;
	const uint64_t warps = (g->threads + wsize - 1) / wsize, warp = tid / wsize;
	for (uint64_t k = 0; k < g->steps; k++) {
		uint64_t first = ((warp + k * warps) % ws_lines) * per;
		struct bam_line h = {0};
		const int rc = bam_line_warp_get(g->a, &h, first + lane);
		if (rc) {
			(*errs)++;
			if (abench_timed_out(g, rc)) {
				*skipped = g->steps - k - 1;
				return;
			}
			continue;
		}
		const volatile uint64_t *v = (const volatile uint64_t *)h.data;
		uint64_t n = h.end - h.first;
		for (uint64_t e = lane; e < n; e += wsize)
			if (v[e] != abench_value(first + e))
				(*bad)++;
		bam_line_warp_put(g->a, &h);
	}
}

BAM_HD_INLINE void abench_thread(const struct abench_args *g, uint64_t tid, uint32_t lane, uint32_t wsize)
{
	uint64_t warp = tid / wsize;
	uint64_t bad = 0, errs = 0, skipped = 0;
	if (abench_timed_out(g, 0))
		skipped = g->steps;
	else if (g->pattern == AB_SCAN)
		abench_scan(g, tid, lane, wsize, &bad, &errs, &skipped);
	else
		for (uint64_t k = 0; k < g->steps; k++) {
			const int rc = abench_step(g, tid, warp, k, &bad, &errs);
			if (rc && abench_timed_out(g, rc)) {
				skipped = g->steps - k - 1;
				break;
			}
		}
	if (bad)
		bam_fetch_add_relaxed_gpu_u64(g->bad, bad);
	if (errs)
		bam_fetch_add_relaxed_gpu_u64(g->errs, errs);
	if (skipped)
		bam_fetch_add_relaxed_gpu_u64(g->skipped, skipped);
}

#endif
