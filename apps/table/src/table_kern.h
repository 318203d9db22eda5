/* SPDX-License-Identifier: MIT */
/*
 * The query kernels, written once for GPU warps and CPU-target threads (warp size 1).
 * A warp takes segments of TQ_K x W consecutive rows (W = 32 on the GPU, 1 on the CPU
 * target). Phase one scans the predicate column over the segment: through bam it holds
 * one line handle for the warp (bam_line_warp_get: one acquisition per cache line,
 * every lane on the same line) and notes the matching rows in a 32-bit mask per lane;
 * the handle is released before phase two (no hold-and-wait). Phase two reads the
 * other columns at the matching rows only: for each of the TQ_K row groups that has a
 * match in the warp, the matching lanes read each column together
 * (bam_array_warp_read_*: lanes on one line share one acquisition, BaM 4.4). Columns in
 * memory (the baselines) are plain loads of the same code.
 *
 * Aggregates: per (group, column) slot a count, a sum (double), and min/max kept as
 * order-preserving 64-bit keys, updated with atomics into acc: block shared memory on
 * the GPU (flushed once per block into the global slots), a per-thread array on the CPU
 * target (merged by the host in thread order).
 */
#ifndef BAM_TABLE_KERN_H
#define BAM_TABLE_KERN_H

#include <string.h>
#include "bam/array.h"

#define TQ_K 32u         /* row groups per segment (the mask's bits) */
#define TQ_MAX_COLS 8u

struct tq_slot {
	uint64_t cnt;
	double sum;
	uint64_t minkey;         /* min of tq_key(v); UINT64_MAX: none */
	uint64_t maxinv;         /* min of ~tq_key(v): the max; UINT64_MAX: none */
};

struct tq_col {
	struct bam_array_dev *a; /* through bam; NULL: p */
	const void *p;           /* in target memory */
	uint32_t type;           /* enum bam_col_type */
	uint32_t es;             /* 4 or 8 */
};

struct tq_view {
	uint64_t rows;
	uint64_t nseg;           /* segments of TQ_K * W rows */
	uint32_t ncols;          /* aggregated columns: col[0] the predicate, then the others */
	uint32_t ngroups;        /* 1 (not grouped) or keys + 1 (the last: null keys) */
	struct tq_col col[TQ_MAX_COLS];
	int32_t gdep;            /* grouped: index in col[] of the group column, or -1: gcol */
	uint32_t grouped;
	struct tq_col gcol;
	int64_t gmin;            /* group index = value - gmin */
	double lo, hi;
	struct tq_slot *acc;     /* [ngroups * ncols] global slots (target memory) */
	uint32_t *error;         /* sticky first error (positive errno), target memory */
};

BAM_HD_INLINE uint64_t tq_key(double v)
{
	uint64_t b;
	memcpy(&b, &v, 8);
	return (b >> 63) ? ~b : (b | (1ull << 63));
}

BAM_HD_INLINE double tq_unkey(uint64_t k)
{
	uint64_t b = (k >> 63) ? (k & ~(1ull << 63)) : ~k;
	double v;
	memcpy(&v, &b, 8);
	return v;
}

BAM_HD_INLINE void tq_fail(const struct tq_view *q, int rc)
{
	if (rc)
		bam_cas_acq_rel_gpu_u32(q->error, 0, (uint32_t)-rc);
}

/* element bits -> value; 1 if null (docs/TABLE-FORMAT.md: INT32_MIN, INT64_MIN, NaN) */
BAM_HD_INLINE int tq_decode(uint32_t type, uint64_t bits, double *v, int64_t *iv)
{
	switch (type) {
	case 1: /* int32 */
	case 6: { /* dict */
		int32_t x = (int32_t)(uint32_t)bits;
		*iv = x;
		*v = (double)x;
		return x == INT32_MIN;
	}
	case 2:
	case 5: {
		int64_t x = (int64_t)bits;
		*iv = x;
		*v = (double)x;
		return x == INT64_MIN;
	}
	case 3: {
		uint32_t w = (uint32_t)bits;
		float f;
		memcpy(&f, &w, 4);
		*v = (double)f;
		*iv = 0;
		return f != f;
	}
	default: {
		double d;
		memcpy(&d, &bits, 8);
		*v = d;
		*iv = 0;
		return d != d;
	}
	}
}

BAM_HD_INLINE uint64_t tq_load(const struct tq_col *c, const void *p)
{
	if (c->es == 4)
		return *(const uint32_t *)p;
	return *(const uint64_t *)p;
}

/* column c at row i by the active lanes together (warp-coalesced through bam) */
BAM_HD_INLINE int tq_read(const struct tq_col *c, uint64_t i, uint64_t *bits)
{
	if (!c->a) {
		*bits = tq_load(c, (const uint8_t *)c->p + i * c->es);
		return 0;
	}
	if (c->es == 4) {
		uint32_t x = 0;
		int rc = bam_array_warp_read_u32(c->a, i, &x);
		*bits = x;
		return rc;
	}
	uint64_t x = 0;
	int rc = bam_array_warp_read_u64(c->a, i, &x);
	*bits = x;
	return rc;
}

BAM_HD_INLINE void tq_add(struct tq_slot *s, double v)
{
	bam_fetch_add_relaxed_gpu_u64(&s->cnt, 1);
	BAM_ATOMIC_ADD_F64(&s->sum, v);
	const uint64_t k = tq_key(v);
	if (k < bam_load_relaxed_u64(&s->minkey))
		bam_fetch_min_relaxed_gpu_u64(&s->minkey, k);
	if (~k < bam_load_relaxed_u64(&s->maxinv))
		bam_fetch_min_relaxed_gpu_u64(&s->maxinv, ~k);
}

/* any lane of the warp has a bit set (the CPU target: this thread) */
BAM_HD_INLINE int tq_warp_any(int b)
{
#if BAM_ON_GPU
	return __any_sync(0xffffffffu, b);
#else
	return b;
#endif
}

/* One segment by one warp (all W lanes call it together). acc: the slots to add to. */
BAM_HD_INLINE void tq_segment(const struct tq_view *q, uint64_t seg, uint32_t lane, uint32_t W, struct tq_slot *acc)
{
	const uint64_t base = seg * TQ_K * W, rows = q->rows;
	const struct tq_col *wc = &q->col[0];
	const uint32_t nc = q->ncols;
	uint32_t m = 0;
	/* phase one: the predicate column */
	if (wc->a) {
		struct bam_line h;
		h.slot = -1;
		h.group = 0;
		h.first = h.end = 0;
		h.data = NULL;
		uint32_t valid = 0, gets = 0;
		for (uint32_t k = 0; k < TQ_K; k++) {
			const uint64_t g0 = base + (uint64_t)k * W;
			if (g0 >= rows)
				break;
			const uint64_t i = g0 + lane, ic = i < rows ? i : rows - 1;
			if (h.slot < 0 || ic >= h.end || ic < h.first) { /* the same for every lane */
				if (h.slot >= 0)
					bam_line_warp_put(wc->a, &h);
				int rc = bam_line_warp_get(wc->a, &h, ic);
				if (rc) {
					tq_fail(q, rc);
					return;
				}
				gets++;
			}
			if (i < rows) {
				valid++;
				double v;
				int64_t iv;
				const uint64_t bits = tq_load(wc, h.data + ((ic - h.first) * wc->es));
				if (!tq_decode(wc->type, bits, &v, &iv) && v >= q->lo && v < q->hi) {
					m |= 1u << k;
					if (!q->grouped)
						tq_add(&acc[0], v);
				}
			}
		}
		if (h.slot >= 0)
			bam_line_warp_put(wc->a, &h);
		bam_array_count_accesses(wc->a, valid > gets ? valid - gets : 0);
	} else {
		for (uint32_t k = 0; k < TQ_K; k++) {
			const uint64_t i = base + (uint64_t)k * W + lane;
			if (i >= rows)
				break;
			double v;
			int64_t iv;
			const uint64_t bits = tq_load(wc, (const uint8_t *)wc->p + i * wc->es);
			if (!tq_decode(wc->type, bits, &v, &iv) && v >= q->lo && v < q->hi) {
				m |= 1u << k;
				if (!q->grouped)
					tq_add(&acc[0], v);
			}
		}
	}
	if (nc == 1 && !q->grouped)
		return;
	/* phase two: the other columns at the matching rows (a lane that failed goes on
	 * through the votes, reading nothing) */
	int failed = 0;
	for (uint32_t k = 0; k < TQ_K; k++) {
		const int hit = !failed && ((m >> k) & 1u);
		if (!tq_warp_any(hit))
			continue;
		if (!hit)
			continue;
		const uint64_t i = base + (uint64_t)k * W + lane;
		double val[TQ_MAX_COLS];
		int64_t ival[TQ_MAX_COLS];
		int nul[TQ_MAX_COLS] = {0};
		int rc = 0;
		for (uint32_t j = q->grouped ? 0 : 1; j < nc && !rc; j++) {
			uint64_t bits = 0;
			rc = tq_read(&q->col[j], i, &bits);
			nul[j] = tq_decode(q->col[j].type, bits, &val[j], &ival[j]);
		}
		uint32_t g = 0;
		if (!rc && q->grouped) {
			int gnull;
			int64_t gv;
			if (q->gdep >= 0) {
				gnull = nul[q->gdep];
				gv = ival[q->gdep];
			} else {
				uint64_t bits = 0;
				double d;
				rc = tq_read(&q->gcol, i, &bits);
				gnull = tq_decode(q->gcol.type, bits, &d, &gv);
			}
			if (gnull)
				g = q->ngroups - 1;
			else if (gv < q->gmin || (uint64_t)(gv - q->gmin) >= q->ngroups - 1)
				rc = -ERANGE; /* outside the directory's min/max: a damaged column */
			else
				g = (uint32_t)(gv - q->gmin);
		}
		if (rc) {
			tq_fail(q, rc);
			failed = 1;
			continue;
		}
		for (uint32_t j = q->grouped ? 0 : 1; j < nc; j++)
			if (!nul[j])
				tq_add(&acc[g * nc + j], val[j]);
	}
}

/* add slot s into d (both slot arrays of the same shape) */
BAM_HD_INLINE void tq_merge(struct tq_slot *d, const struct tq_slot *s)
{
	if (!s->cnt)
		return;
	bam_fetch_add_relaxed_gpu_u64(&d->cnt, s->cnt);
	BAM_ATOMIC_ADD_F64(&d->sum, s->sum);
	bam_fetch_min_relaxed_gpu_u64(&d->minkey, s->minkey);
	bam_fetch_min_relaxed_gpu_u64(&d->maxinv, s->maxinv);
}

#endif /* BAM_TABLE_KERN_H */
