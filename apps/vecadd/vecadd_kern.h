/* SPDX-License-Identifier: MIT */
/* Kernel bodies of bam_vecadd_run (bam/vecadd.h), for GPU warps and CPU-target threads
 * (a warp of one). Public API only: bam/array.h and bam/dev.h. */
#ifndef BAM_VECADD_KERN_H
#define BAM_VECADD_KERN_H

#include "bam/array.h"
#include "bam/dev.h"

struct vecadd_args {
	struct bam_array_dev *a, *b, *c; /* bam mode */
	struct bam_dev *io;              /* tiling: raw commands */
	uint64_t n;                      /* elements */
	uint32_t type;                   /* enum bam_vecadd_type */
	uint32_t esize;
	uint32_t line_size;
	uint32_t n_ctrl, lba_shift, pad;
	uint64_t warps;
	uint8_t *scratch;                /* bam: line_size bytes per warp */
	uint64_t base_a, base_b, base_c; /* first LBA of each vector on each controller */
	/* tiling: the tile [first_line, first_line + lines) and its buffers */
	uint64_t first_line, lines;
	uint8_t *ta, *tb;
	uint64_t *errs;
	uint64_t *done;                  /* bam: lines of c stored (the progress report's) */
};

/* The inputs: exact in both types (sums of small halves and quarters in float). */
BAM_HD_INLINE uint64_t vecadd_a_u64(uint64_t i) { return i * 3u + 1u; }
BAM_HD_INLINE uint64_t vecadd_b_u64(uint64_t i) { return i * 0x9e3779b97f4a7c15ull; }
BAM_HD_INLINE float vecadd_a_f32(uint64_t i) { return (float)(i % 1000u) * 0.5f; }
BAM_HD_INLINE float vecadd_b_f32(uint64_t i) { return (float)(i % 777u) * 0.25f; }

/* dst[e] += src[e] for elements [lane, cnt) step wsize */
BAM_HD_INLINE void vecadd_add(uint32_t type, uint8_t *dst, const volatile uint8_t *src, uint64_t cnt, uint32_t lane,
			      uint32_t wsize)
{
	if (type == 0) {
		uint64_t *d = (uint64_t *)dst;
		const volatile uint64_t *s = (const volatile uint64_t *)src;
		for (uint64_t e = lane; e < cnt; e += wsize)
			d[e] += s[e];
	} else {
		float *d = (float *)dst;
		const volatile float *s = (const volatile float *)src;
		for (uint64_t e = lane; e < cnt; e += wsize)
			d[e] += s[e];
	}
}

/* bam mode, one warp: lines warp, warp + warps, ... of c. Per line: a's line copied to
 * the warp's scratch, b's added, c's line taken for a whole-line store and written
 * (one line held at a time: no hold-and-wait). A device that timed out stops it. */
BAM_HD_INLINE void vecadd_bam_warp(const struct vecadd_args *g, uint64_t warp, uint32_t lane, uint32_t wsize)
{
	const uint64_t per = g->line_size / g->esize, n_lines = (g->n + per - 1) / per;
	uint8_t *buf = g->scratch + warp * g->line_size;
	uint64_t errs = 0;
	for (uint64_t L = warp; L < n_lines; L += g->warps) {
		const uint64_t first = L * per, cnt = g->n - first < per ? g->n - first : per;
		struct bam_line h = {0};
		int rc = bam_line_warp_get(g->a, &h, first);
		if (rc)
			goto fail;
		if (g->esize == 8)
			for (uint64_t e = lane; e < cnt; e += wsize)
				((uint64_t *)buf)[e] = ((const volatile uint64_t *)h.data)[e];
		else
			for (uint64_t e = lane; e < cnt; e += wsize)
				((uint32_t *)buf)[e] = ((const volatile uint32_t *)h.data)[e];
		bam_line_warp_put(g->a, &h);
		if ((rc = bam_line_warp_get(g->b, &h, first)))
			goto fail;
		vecadd_add(g->type, buf, h.data, cnt, lane, wsize);
		bam_line_warp_put(g->b, &h);
		if ((rc = bam_line_warp_get_overwrite(g->c, &h, first)))
			goto fail;
		if (g->esize == 8)
			for (uint64_t e = lane; e < cnt; e += wsize)
				((volatile uint64_t *)h.data)[e] = ((uint64_t *)buf)[e];
		else
			for (uint64_t e = lane; e < cnt; e += wsize)
				((volatile uint32_t *)h.data)[e] = ((uint32_t *)buf)[e];
		bam_line_warp_put(g->c, &h); /* marks it dirty */
		if (lane == 0)
			bam_fetch_add_relaxed_gpu_u64(g->done, 1);
		continue;
	fail:
		errs++;
		if (rc == -ETIMEDOUT || rc == -EBUSY || bam_load_relaxed_u32(&g->a->io->error) == ETIMEDOUT)
			break;
	}
	if (errs && lane == 0)
		bam_fetch_add_relaxed_gpu_u64(g->errs, errs);
}

/* Controller and LBA of byte 'off' of line l of a vector at 'base' (striped, as
 * bam_array_create lays it: line l on controller l mod k, consecutive per controller) */
BAM_HD_INLINE void vecadd_place(const struct vecadd_args *g, uint64_t base, uint64_t l, uint32_t off, uint32_t *ctrl,
				uint64_t *lba)
{
	*ctrl = (uint32_t)(l % g->n_ctrl);
	*lba = base + ((((l / g->n_ctrl) * g->line_size) + off) >> g->lba_shift);
}

/* One 4 KiB unit of a tile's I/O: task t of the tile (units per line = line/4K), for
 * vector at 'base' to/from buffer 'buf' (the tile's lines from first_line). */
#define VECADD_UNIT 4096u
BAM_HD_INLINE int vecadd_unit_io(const struct vecadd_args *g, uint64_t base, uint8_t *buf, uint64_t t, uint8_t opc)
{
	const uint32_t upl = g->line_size / VECADD_UNIT;
	const uint64_t l = g->first_line + t / upl;
	const uint32_t off = (uint32_t)(t % upl) * VECADD_UNIT;
	/* past the vector's end: nothing (its last line is whole on the media) */
	if (l * (uint64_t)g->line_size + off >= g->n * g->esize)
		return 0;
	uint32_t ctrl;
	uint64_t lba;
	vecadd_place(g, base, l, off, &ctrl, &lba);
	uint16_t st = 0;
	const int rc = bam_dev_io(g->io, ctrl, t, opc, lba, VECADD_UNIT >> g->lba_shift,
				  (uint64_t)(uintptr_t)(buf + t * VECADD_UNIT), 0, &st);
	return rc ? rc : st ? -EIO : 0;
}

/* tiling, phase 1: read a's and b's units of the tile (task t: unit t of both) */
BAM_HD_INLINE void vecadd_tile_load(const struct vecadd_args *g, uint64_t t)
{
	int rc = vecadd_unit_io(g, g->base_a, g->ta, t, NVME_CMD_READ);
	if (!rc)
		rc = vecadd_unit_io(g, g->base_b, g->tb, t, NVME_CMD_READ);
	if (rc)
		bam_fetch_add_relaxed_gpu_u64(g->errs, 1);
}

/* tiling, phase 2: ta += tb over the tile's elements, unit t */
BAM_HD_INLINE void vecadd_tile_add(const struct vecadd_args *g, uint64_t t)
{
	const uint64_t per = VECADD_UNIT / g->esize;
	vecadd_add(g->type, g->ta + t * VECADD_UNIT, g->tb + t * VECADD_UNIT, per, 0, 1);
}

/* tiling, phase 3: write ta as c's units */
BAM_HD_INLINE void vecadd_tile_store(const struct vecadd_args *g, uint64_t t)
{
	if (vecadd_unit_io(g, g->base_c, g->ta, t, NVME_CMD_WRITE))
		bam_fetch_add_relaxed_gpu_u64(g->errs, 1);
}

#endif
