/* SPDX-License-Identifier: MIT */
/*
 * BFS and connected components in the BaM paper's style, written once for GPU warps
 * and CPU-target threads (warp size 1). The CSR arrays are read either through bam
 * arrays (on demand from storage, through the cache, warp-coalesced) or through plain
 * pointers (the baselines: GPU memory, pinned host memory read zero-copy, UVM);
 * per-vertex state (levels, labels, frontiers) is in target memory.
 *
 * BFS: level-synchronous; one warp per frontier vertex, its lanes striding over the
 * vertex's neighbour list (paper: "BFS assigns one warp per frontier vertex").
 * CC: min-label propagation over every arc in both directions plus pointer jumping,
 * scanning all vertices each iteration (the paper's more irregular pattern), each warp
 * a contiguous range of vertices; labels
 * converge to the smallest vertex id of each weakly connected component, the
 * convention of bam_ref_cc.
 */
#ifndef BAM_GRAPH_KERN_H
#define BAM_GRAPH_KERN_H

#include "bam/array.h"

struct graph_view {
	uint32_t bam;                 /* 1: through arrays; 0: plain pointers */
	uint32_t id_bytes;            /* 4 or 8 */
	uint64_t n, m;
	struct bam_array_dev *off_a;  /* u64 [n+1] */
	struct bam_array_dev *edge_a; /* u32/u64 [m] */
	const uint64_t *off_p;
	const void *edge_p;
	uint32_t *error;              /* sticky: first negative errno, as positive */
};

struct bfs_state {
	uint32_t *level;              /* [n] */
	uint64_t *cur, *next;         /* frontiers [n] */
	uint64_t *next_n;             /* counter */
	uint64_t cur_n;
	uint32_t depth;               /* level being expanded */
};

struct cc_state {
	uint64_t *label;              /* [n] */
	uint32_t *changed;
};

BAM_HD_INLINE void gv_fail(const struct graph_view *g, int rc)
{
	if (rc)
		bam_cas_acq_rel_gpu_u32(g->error, 0, (uint32_t)-rc);
}

/* Neighbour range of v; every thread of the calling group passes the same v
 * (coalesced into one line access). */
BAM_HD_INLINE int gv_range(const struct graph_view *g, uint64_t v, uint64_t *s, uint64_t *e)
{
	if (!g->bam) {
		*s = g->off_p[v];
		*e = g->off_p[v + 1];
		return 0;
	}
	/* one coalesced line acquisition for both offsets (unless v + 1 starts the next
	 * line) */
	struct bam_line h = {0};
	int rc = bam_line_warp_get(g->off_a, &h, v);
	if (!rc) {
		const volatile uint64_t *o = (const volatile uint64_t *)h.data;
		*s = o[v - h.first];
		int both = v + 1 < h.end;
		if (both)
			*e = o[v + 1 - h.first];
		bam_line_warp_put(g->off_a, &h);
		if (both)
			bam_array_count_accesses(g->off_a, 1);
		else
			rc = bam_array_warp_read_u64(g->off_a, v + 1, e);
	}
	gv_fail(g, rc);
	return rc;
}

/* Edge i (warp-coalesced over the calling threads). */
BAM_HD_INLINE int gv_edge(const struct graph_view *g, uint64_t i, uint64_t *u)
{
	if (!g->bam) {
		*u = g->id_bytes == 4 ? ((const uint32_t *)g->edge_p)[i] : ((const uint64_t *)g->edge_p)[i];
		return 0;
	}
	int rc;
	if (g->id_bytes == 4) {
		uint32_t x = 0;
		rc = bam_array_warp_read_u32(g->edge_a, i, &x);
		*u = x;
	} else {
		rc = bam_array_warp_read_u64(g->edge_a, i, u);
	}
	gv_fail(g, rc);
	return rc;
}

/* Edge i through the calling thread's line handle h on the edge array: a new line is
 * taken (warp-coalesced among the threads that need one) only when i leaves the held
 * line, so a warp scanning a neighbour list probes the cache once per line, not once
 * per 32 edges. *gets counts the lines taken; the caller counts its reads and
 * releases h with gv_edges_done. */
BAM_HD_INLINE int gv_edge_h(const struct graph_view *g, struct bam_line *h, uint64_t i, uint64_t *u, uint32_t *gets)
{
	if (!g->bam)
		return gv_edge(g, i, u);
	if (h->slot < 0 || i < h->first || i >= h->end) {
		bam_line_put(g->edge_a, h);
		int rc = bam_line_warp_get(g->edge_a, h, i);
		if (rc) {
			gv_fail(g, rc);
			return rc;
		}
		(*gets)++;
	}
	if (g->id_bytes == 4)
		*u = ((const volatile uint32_t *)h->data)[i - h->first];
	else
		*u = ((const volatile uint64_t *)h->data)[i - h->first];
	return 0;
}

/* Release the handle; count the n edges read through it (bam_line_warp_get counted
 * one per line taken, 'gets'). */
BAM_HD_INLINE void gv_edges_done(const struct graph_view *g, struct bam_line *h, uint32_t n, uint32_t gets)
{
	if (!g->bam)
		return;
	bam_line_put(g->edge_a, h);
	bam_array_count_accesses(g->edge_a, n - gets);
}

/* One warp (lane, wsize) expands frontier entry w. */
BAM_HD_INLINE void bfs_warp(const struct graph_view *g, struct bfs_state *b, uint64_t w, uint32_t lane, uint32_t wsize)
{
	uint64_t v = b->cur[w], s, e;
	if (gv_range(g, v, &s, &e))
		return;
	const uint32_t nl = b->depth + 1;
	struct bam_line h = {0};
	h.slot = -1;
	uint32_t n = 0, gets = 0;
	for (uint64_t i = s + lane; i < e; i += wsize) {
		uint64_t u;
		if (gv_edge_h(g, &h, i, &u, &gets))
			break;
		n++;
		if (u >= g->n) {
			gv_fail(g, -ERANGE);
			break;
		}
		if (bam_load_relaxed_u32(&b->level[u]) != 0xffffffffu)
			continue;
		if (bam_cas_acq_rel_gpu_u32(&b->level[u], 0xffffffffu, nl) == 0xffffffffu) {
			uint64_t k = bam_fetch_add_relaxed_gpu_u64(b->next_n, 1);
			b->next[k] = u;
		}
	}
	gv_edges_done(g, &h, n, gets);
}

#define CC_BATCH 31u /* vertices per batch: their 32 offsets are read by one warp at once */

/* Offset v into *o: plain, or through the array (warp-coalesced among the calling
 * threads on the GPU; through the thread's handle h on the CPU target). */
BAM_HD_INLINE int gv_off(const struct graph_view *g, struct bam_line *h, uint64_t v, uint64_t *o)
{
	if (!g->bam) {
		*o = g->off_p[v];
		return 0;
	}
#if BAM_ON_GPU
	(void)h;
	int rc = bam_array_warp_read_u64(g->off_a, v, o);
#else
	int rc = bam_line_get(g->off_a, h, v);
	if (!rc) {
		*o = ((const volatile uint64_t *)h->data)[v - h->first];
		if (v != h->first)
			bam_array_count_accesses(g->off_a, 1); /* bam_line_get counted the first */
	}
#endif
	gv_fail(g, rc);
	return rc;
}

/*
 * Connected components: one warp (or one CPU thread, wsize 1) hooks every vertex of
 * [first, last) with all its out-neighbours, both directions. A warp owns a contiguous
 * range, so concurrent warps touch different lines (their misses overlap instead of
 * queueing behind one fill). Per batch of up to CC_BATCH vertices the warp reads the
 * batch's offsets at once (lane k: off[base + k]) and shares them with __shfl_sync;
 * then it walks the batch's neighbour lists through one line handle per thread, so the
 * cache is probed about once per line rather than once per vertex. The handle is
 * dropped before the next batch's offsets are read: a warp never holds a line while it
 * waits for another (no hold-and-wait among warps, so no deadlock when the cache has
 * fewer lines than warps).
 */
BAM_HD_INLINE void cc_range(const struct graph_view *g, struct cc_state *c, uint64_t first, uint64_t last,
			    uint32_t lane, uint32_t wsize)
{
	int changed = 0, bad = 0;
	for (uint64_t base = first; base < last && !bad; base += CC_BATCH) {
		const uint32_t cnt = last - base < CC_BATCH ? (uint32_t)(last - base) : CC_BATCH;
		struct bam_line ho = {0};
		ho.slot = -1;
#if BAM_ON_GPU
		uint64_t ol = 0;
		if (lane <= cnt && gv_off(g, &ho, base + lane, &ol))
			bad = 1;
		if (__any_sync(0xffffffffu, bad))
			break;
#else
		uint64_t ob[CC_BATCH + 1];
		for (uint32_t k = 0; k <= cnt && !bad; k++)
			bad = gv_off(g, &ho, base + k, &ob[k]) != 0;
		bam_line_put(g->off_a, &ho);
		if (bad)
			break;
#endif
		struct bam_line h = {0};
		h.slot = -1;
		uint32_t n = 0, gets = 0;
		for (uint32_t j = 0; j < cnt; j++) {
			const uint64_t v = base + j;
#if BAM_ON_GPU
			const uint64_t s = __shfl_sync(0xffffffffu, ol, j), e = __shfl_sync(0xffffffffu, ol, j + 1);
#else
			const uint64_t s = ob[j], e = ob[j + 1];
#endif
			for (uint64_t i = s + lane; i < e && !bad; i += wsize) {
				uint64_t u;
				if (gv_edge_h(g, &h, i, &u, &gets)) {
					bad = 1;
					break;
				}
				n++;
				if (u >= g->n) {
					gv_fail(g, -ERANGE);
					bad = 1;
					break;
				}
				uint64_t lv = bam_load_relaxed_u64(&c->label[v]), lu = bam_load_relaxed_u64(&c->label[u]);
				if (lu < lv)
					changed |= bam_fetch_min_relaxed_gpu_u64(&c->label[v], lu) > lu;
				else if (lv < lu)
					changed |= bam_fetch_min_relaxed_gpu_u64(&c->label[u], lv) > lv;
			}
		}
		gv_edges_done(g, &h, n, gets);
#if BAM_ON_GPU
		bad = __any_sync(0xffffffffu, bad);
#endif
	}
	if (changed)
		bam_store_relaxed_u32(c->changed, 1);
}

/* Pointer jumping: label[v] = label[label[v]] (labels are vertex ids of the same
 * component, so this only shortens the way to the minimum). */
BAM_HD_INLINE void cc_jump(struct cc_state *c, uint64_t v)
{
	uint64_t l = bam_load_relaxed_u64(&c->label[v]);
	uint64_t ll = bam_load_relaxed_u64(&c->label[l]);
	if (ll < l) {
		bam_fetch_min_relaxed_gpu_u64(&c->label[v], ll);
		bam_store_relaxed_u32(c->changed, 1);
	}
}

#endif /* BAM_GRAPH_KERN_H */
