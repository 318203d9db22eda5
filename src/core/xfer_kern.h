/* SPDX-License-Identifier: MIT */
/*
 * Row transfers through the cache, shared by both targets: bam_array_gather (rows
 * picked by an index vector) and bam_array_read / bam_array_write (a contiguous range
 * cut into rows). One logical thread (CPU target) or one warp (GPU) moves one row at a
 * time: it takes the line holding the row's next element, copies the part of the row in
 * that line, gives the line back and takes the next (one line held at a time: no
 * hold-and-wait). The GPU's lanes all ask for the same element, so the warp makes one
 * group and one acquisition, and copy the segment together in the widest unit that the
 * addresses and length allow.
 */
#ifndef BAM_XFER_KERN_H
#define BAM_XFER_KERN_H

#include <errno.h>
#include <string.h>
#include "bam/array.h"

struct bam_xfer_job {
	struct bam_array_dev *a;   /* target memory */
	const void *idx;           /* gather: row indices (target memory), idx_size bytes each;
				    * NULL: row k starts at element first + k * row_elems */
	uint32_t idx_size;         /* 4 (int32) or 8 (int64) */
	uint32_t write;            /* 1: buf -> array (the lines become dirty); 0: array -> buf */
	uint64_t first;            /* contiguous: first element */
	uint64_t n_elems;          /* contiguous: elements in all (the last row may be short) */
	uint64_t n_rows;           /* rows to move */
	uint64_t row_elems;        /* elements per row */
	uint64_t src_rows;         /* gather: rows in the array (indices must be below) */
	uint8_t *buf;              /* target memory: n_rows * row_elems elements, packed */
	uint32_t *err;             /* target memory: first failure as a positive errno (0 none) */
	uint64_t *bad;             /* target memory: rows that failed */
};

/* Row k: its first element in the array and its length; -ERANGE for an index outside
 * [0, src_rows). */
BAM_HD_INLINE int bam_xfer_row(const struct bam_xfer_job *j, uint64_t k, uint64_t *start, uint64_t *len)
{
	if (j->idx) {
		int64_t r = j->idx_size == 4 ? (int64_t)((const int32_t *)j->idx)[k] : ((const int64_t *)j->idx)[k];
		if (r < 0 || (uint64_t)r >= j->src_rows)
			return -ERANGE;
		*start = (uint64_t)r * j->row_elems;
		*len = j->row_elems;
		return 0;
	}
	uint64_t off = k * j->row_elems;
	*start = j->first + off;
	*len = j->n_elems - off < j->row_elems ? j->n_elems - off : j->row_elems;
	return 0;
}

BAM_HD_INLINE void bam_xfer_fail(const struct bam_xfer_job *j, int rc)
{
	bam_cas_acq_rel_gpu_u32(j->err, 0, (uint32_t)-rc);
	bam_fetch_add_relaxed_gpu_u64(j->bad, 1);
}

/* Copy n bytes: on the GPU lane 'lane' of 'nl' lanes, in 16-, 8-, 4-, 2- or 1-byte
 * units as the alignment of both addresses and of n allows. */
BAM_HD_INLINE void bam_xfer_copy(uint8_t *dst, const uint8_t *src, uint64_t n, uint32_t lane, uint32_t nl)
{
#if BAM_ON_GPU
	uint64_t m = (uint64_t)(uintptr_t)dst | (uint64_t)(uintptr_t)src | n;
	if (!(m & 15)) {
		for (uint64_t k = lane; k < n / 16; k += nl)
			((uint4 *)dst)[k] = ((const uint4 *)src)[k];
	} else if (!(m & 7)) {
		for (uint64_t k = lane; k < n / 8; k += nl)
			((uint2 *)dst)[k] = ((const uint2 *)src)[k];
	} else if (!(m & 3)) {
		for (uint64_t k = lane; k < n / 4; k += nl)
			((uint32_t *)dst)[k] = ((const uint32_t *)src)[k];
	} else if (!(m & 1)) {
		for (uint64_t k = lane; k < n / 2; k += nl)
			((uint16_t *)dst)[k] = ((const uint16_t *)src)[k];
	} else {
		for (uint64_t k = lane; k < n; k += nl)
			dst[k] = src[k];
	}
#else
	(void)lane;
	(void)nl;
	memcpy(dst, src, n);
#endif
}

/* Move row k. On the GPU the whole warp calls it with the same k (all lanes active).
 * Returns 0 or the row's error (already recorded in the job). */
BAM_HD_INLINE int bam_xfer_do_row(const struct bam_xfer_job *j, uint64_t k)
{
	struct bam_array_dev *a = j->a;
	const uint32_t sh = a->elem_shift;
	const uint64_t per = (uint64_t)a->cache->line_size >> sh; /* elements per line */
#if BAM_ON_GPU
	const uint32_t lane = bam_lane_id(), nl = 32;
#else
	const uint32_t lane = 0, nl = 1;
#endif
	uint64_t start, len;
	int rc = bam_xfer_row(j, k, &start, &len);
	if (rc) {
		if (lane == 0) {
			bam_dev_record_error(a->io, rc, 0);
			bam_xfer_fail(j, rc);
		}
		return rc;
	}
	uint8_t *row = j->buf + ((k * j->row_elems) << sh);
	uint64_t i = start, end = start + len;
	while (i < end) {
		void *p = 0;
		int64_t s;
		uint32_t g = 1, l = 0;
#if BAM_ON_GPU
		s = bam_array_warp_ref_group(a, i, &p, &g, &l);
#else
		s = bam_array_ref(a, i, &p);
#endif
		if (s < 0) {
			if (lane == 0)
				bam_xfer_fail(j, (int)s);
			return (int)s;
		}
		uint64_t line_end = (i & ~(per - 1)) + per;
		uint64_t stop = line_end < end ? line_end : end;
		uint64_t bytes = (stop - i) << sh;
		uint8_t *mine = row + ((i - start) << sh);
		if (j->write)
			bam_xfer_copy((uint8_t *)p, mine, bytes, lane, nl);
		else
			bam_xfer_copy(mine, (const uint8_t *)p, bytes, lane, nl);
		if (lane == l) {
			if (j->write)
				bam_slot_mark_dirty(a->cache, (uint64_t)s);
			/* the ref counted one access per lane of the group */
			if (stop - i > bam_popc(g))
				bam_array_count_accesses(a, (uint32_t)(stop - i - bam_popc(g)));
		}
#if BAM_ON_GPU
		bam_array_warp_put(a, s, g, l); /* after the warp barrier: every lane copied */
#else
		bam_slot_put(a->cache, (uint64_t)s, 1);
#endif
		i = stop;
	}
	return 0;
}

#endif /* BAM_XFER_KERN_H */
