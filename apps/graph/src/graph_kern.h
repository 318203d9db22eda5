/* SPDX-License-Identifier: MIT */
/*
 * BFS and connected components in the BaM paper's style, written once for GPU warps
 * and CPU-target threads (warp size 1). The CSR arrays are read either through bam
 * arrays (on demand from storage, through the cache, warp-coalesced) or through plain
 * pointers (the baselines: GPU memory, pinned host memory read zero-copy, UVM);
 * per-vertex state (levels, labels, frontiers) is in target memory.
 *
 * BFS: level-synchronous. Small frontiers: a queue, one warp per frontier vertex, its
 * lanes striding over the vertex's neighbour list (paper: "BFS assigns one warp per
 * frontier vertex"). Large frontiers: the frontier is read from the level array in
 * vertex order ("scan", as CC), which reads the edge array in order (walk_range).
 * CC: one pass over every vertex and arc (the paper's more irregular pattern), each
 * warp a contiguous range of vertices, joining the two ends of each arc in a lock-free
 * union-find forest (the label array: a vertex's label is a smaller id of its
 * component, a root's is itself; the larger root is linked under the smaller by CAS,
 * paths are halved on the way), then one flattening sweep (a read-only walk to the
 * root per vertex, no halving): every label becomes its root, the smallest vertex id
 * of the weakly connected component, the convention of bam_ref_cc. One pass suffices
 * because every arc joins its ends' trees when it is read; label propagation needed a
 * full pass per iteration plus one to see nothing change (4 on a Kronecker graph of
 * scale 26).
 */
#ifndef BAM_GRAPH_KERN_H
#define BAM_GRAPH_KERN_H

#include "bam/array.h"

/* The counters of one BFS level or CC pass, one block in target memory, so one copy
 * resets them (all but error) and one copy reads them back. */
struct gv_counters {
	uint64_t next_n;              /* BFS: vertices appended to the next frontier */
	uint64_t heavy_n;             /* chunks queued in graph_view.heavy */
	uint64_t range_next;          /* GPU: the next work item a warp takes (walk_part) */
	uint32_t error;               /* sticky: the first negative errno, as positive */
	uint32_t pad;
};

/* A piece of one long neighbour list, [s, e) of the edge array, for vertex v. */
struct gv_chunk {
	uint64_t v, s, e;
};

/* One work item of a BFS scan level: the vertices [first, last), each list cut to the
 * edges [lo, hi) of the edge array (walk_part). */
struct gv_range {
	uint64_t first, last, lo, hi;
};

struct graph_view {
	uint32_t bam;                 /* 1: the edges through edge_a; 0: plain pointers */
	uint32_t id_bytes;            /* 4 or 8 */
	uint64_t n, m;
	struct bam_array_dev *off_a;  /* u32/u64 [n+1] (off_bytes); NULL: the offsets are
				       * off_p (also through bam with --offsets=memory,
				       * which copies them to target memory first) */
	struct bam_array_dev *edge_a; /* u32/u64 [m] */
	const void *off_p;            /* u32/u64 [n+1] (off_bytes), when off_a is NULL */
	const void *edge_p;
	struct gv_counters *ctr;      /* the level's / pass's counters, target memory */
	struct gv_chunk *heavy;       /* chunk queue: [0, ctr->heavy_n), heavy_cap entries */
	uint64_t heavy_cap;
	uint32_t max_blocks;          /* GPU: blocks of 8 warps a walk kernel runs at most
				       * (bam bfs/cc --warps; 0: 16 per SM) */
	uint32_t off_bytes;           /* 4 or 8: width of one offset (bam bfs/cc
				       * --offset-bytes; 4 when m < 2^32) */
	/* BFS scan levels: the edge array cut into nparts ranges of part_edges edges (the
	 * last may be shorter); part[r] (target memory, [nparts + 1], while the ranges are
	 * made) is the vertex whose list holds edge r * part_edges, part[nparts] the vertex
	 * after the one that holds the last edge (gv_part_vertex); the walks take the work
	 * items ranges[0, nranges) (walk_part).
	 * ranges NULL: ranges of vertices (walk_range). */
	uint64_t *part;
	uint64_t nparts, part_edges;
	const struct gv_range *ranges;
	uint64_t nranges;
};

/* Neighbour lists longer than GV_CHUNK edges are not walked by the warp that finds
 * them: it queues them as chunks of at most GV_CHUNK edges (aligned to multiples of
 * GV_CHUNK in the edge array) that a second kernel spreads over all warps, so one
 * high-degree vertex (a Kronecker hub has ~10^6 neighbours) does not leave one warp
 * working after every other warp has finished. */
#ifndef GV_CHUNK /* (a build option for experiments) */
#define GV_CHUNK 4096u
#endif

/* Entries the chunk queue needs for any one level or pass: a list of d > GV_CHUNK
 * edges gives at most d / GV_CHUNK + 2 < 3 d / GV_CHUNK chunks and every vertex is
 * expanded at most once per level, so 3 m / GV_CHUNK + 3 cannot overflow. */
BAM_HD_INLINE uint64_t gv_heavy_cap(uint64_t m)
{
	return 3 * (m / GV_CHUNK) + 3;
}

struct bfs_state {
	uint32_t *level;              /* [n] */
	uint64_t *cur, *next;         /* frontiers [n]; next filled to ctr->next_n */
	uint64_t cur_n;
	uint32_t depth;               /* level being expanded */
};

struct cc_state {
	uint64_t *label;              /* [n] */
};

/* The chunks to walk after a level or pass: those queued, never past the queue's end
 * (heavy_push records -EOVERFLOW there, and ctr->heavy_n counts on past it). */
BAM_HD_INLINE uint64_t gv_chunks_queued(const struct graph_view *g)
{
	const uint64_t q = g->ctr->heavy_n;
	return q < g->heavy_cap ? q : g->heavy_cap;
}

BAM_HD_INLINE void gv_fail(const struct graph_view *g, int rc)
{
	if (rc)
		bam_cas_acq_rel_gpu_u32(&g->ctr->error, 0, (uint32_t)-rc);
}

/* Has this level / pass already failed (an I/O error or timeout recorded by any
 * thread)? Then the callers start no new work: after a dead controller's first
 * timeout, later reads would each wait out their own (on the CPU target one range
 * after another). On the GPU the answer is the same for the whole warp. */
BAM_HD_INLINE int gv_failed(const struct graph_view *g)
{
	int f = g->ctr && bam_load_relaxed_u32(&g->ctr->error) != 0;
#if BAM_ON_GPU
	f = __any_sync(0xffffffffu, f);
#endif
	return f;
}

/* A vertex's list [s, e) that no CSR has: s > e, or past the edge array (e > m). The
 * loader checks the file's offsets, but through bam they come from the storage, which
 * may not hold what the file does (a damaged media, a back end returning other data):
 * a walk that trusted them would wrap e - s or read past the edges (and, with the long
 * lists' chunk count made from it, run for hours). The walks record -EBADMSG. */
BAM_HD_INLINE int gv_offsets_bad(const struct graph_view *g, uint64_t s, uint64_t e)
{
	return s > e || e > g->m;
}

/* Offset k of the plain offsets array (g->off_bytes wide). */
BAM_HD_INLINE uint64_t gv_off_plain(const struct graph_view *g, uint64_t k)
{
	return g->off_bytes == 4 ? (uint64_t)((const uint32_t *)g->off_p)[k] : ((const uint64_t *)g->off_p)[k];
}

/* Offset k of a line of the offsets array whose data is at p (entry 0 = the line's
 * first offset). */
BAM_HD_INLINE uint64_t gv_off_in_line(const struct graph_view *g, const void *p, uint64_t k)
{
	return g->off_bytes == 4 ? (uint64_t)((const volatile uint32_t *)p)[k] : ((const volatile uint64_t *)p)[k];
}

/* Offset k through the offsets array (warp-coalesced among the calling threads). One
 * reference path for both widths, the width only in the load: every path is inlined
 * into the walk kernels, and a second one added register spills (ptxas -v, cc_kernel:
 * 376 bytes of spill stores instead of 208, with 346b70e's qpair.h). */
BAM_HD_INLINE int gv_off_read(const struct graph_view *g, uint64_t k, uint64_t *o)
{
	void *p = 0;
	uint32_t grp, l;
	const int64_t s = bam_array_warp_ref_group(g->off_a, k, &p, &grp, &l);
	*o = s < 0 ? 0 : gv_off_in_line(g, p, 0);
	bam_array_warp_put(g->off_a, s, grp, l);
	return s < 0 ? (int)s : 0;
}

/* gv_range through the offsets array by the calling thread alone. */
BAM_HD_INLINE int gv_range_bam(const struct graph_view *g, uint64_t v, uint64_t *s, uint64_t *e)
{
	/* one line acquisition for both offsets (unless v + 1 starts the next line) */
	struct bam_line h = {0};
	int rc = bam_line_warp_get(g->off_a, &h, v);
	if (!rc) {
		*s = gv_off_in_line(g, h.data, v - h.first);
		int both = v + 1 < h.end;
		if (both)
			*e = gv_off_in_line(g, h.data, v + 1 - h.first);
		bam_line_warp_put(g->off_a, &h);
		if (both)
			bam_array_count_accesses(g->off_a, 1);
		else
			rc = gv_off_read(g, v + 1, e);
		if (!rc && gv_offsets_bad(g, *s, *e))
			rc = -EBADMSG;
	}
	gv_fail(g, rc);
	return rc;
}

/* Neighbour range [*s, *e) of v; every thread of the calling group passes the same v.
 * Through bam arrays on the GPU one lane reads the two offsets and the others take
 * them by shuffle: the array counts the 2 elements needed, where 32 lanes reading each
 * counted 64 accesses and made the I/O amplification's denominator (bytes requested)
 * up to 32 times too large on levels found by queue. */
BAM_HD_INLINE int gv_range(const struct graph_view *g, uint64_t v, uint64_t *s, uint64_t *e)
{
	if (!g->off_a) {
		*s = gv_off_plain(g, v);
		*e = gv_off_plain(g, v + 1);
		if (!gv_offsets_bad(g, *s, *e))
			return 0;
		gv_fail(g, -EBADMSG);
		return -EBADMSG;
	}
#if BAM_ON_GPU
	const uint32_t act = __activemask(), first = (uint32_t)(__ffs(act) - 1);
	int rc = 0;
	uint64_t s0 = 0, e0 = 0;
	if ((threadIdx.x & 31u) == first)
		rc = gv_range_bam(g, v, &s0, &e0);
	*s = __shfl_sync(act, s0, first);
	*e = __shfl_sync(act, e0, first);
	return __shfl_sync(act, rc, first);
#else
	return gv_range_bam(g, v, s, e);
#endif
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

/* Edge i from the edge-array line that h holds (h->first <= i < h->end). */
BAM_HD_INLINE uint64_t gv_held_edge(const struct graph_view *g, const struct bam_line *h, uint64_t i)
{
	return g->id_bytes == 4 ? ((const volatile uint32_t *)h->data)[i - h->first]
				: ((const volatile uint64_t *)h->data)[i - h->first];
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
	*u = gv_held_edge(g, h, i);
	return 0;
}

#if BAM_ON_GPU
/* One step of taking lines one after the other: the lanes of *todo whose line l is the
 * line of *todo's first lane, taken out of *todo. Every lane of mask calls it, with
 * the same *todo. */
BAM_HD_INLINE uint32_t gv_next_line_group(uint32_t mask, uint64_t l, uint32_t *todo)
{
	const uint64_t ll = __shfl_sync(mask, l, __ffs(*todo) - 1);
	const uint32_t grp = __ballot_sync(mask, l == ll) & *todo;
	*todo &= ~grp;
	return grp;
}

/*
 * The GPU form of gv_edge_h for bam arrays: all 32 lanes of the warp call it together,
 * lane k for element i (act 0: none). Lines are taken so that the warp never holds a
 * line while it waits for another: lanes that leave their lines first take the new ones
 * only if they are cached now (bam_line_warp_try_get: no waiting, so the other lanes
 * may keep theirs); if one is not, every lane lets go of its line, and the lines
 * needed are taken one after the other, each line's lanes reading their element and
 * letting go before the next line is taken (the last line's lanes keep it for the
 * next call). A warp waiting for a free slot thus holds none,
 * so warps cannot hold every slot of a small cache while each waits for one more
 * (with gv_edge_h, lanes still in their line kept it while the others waited: at 48
 * warps per SM instead of 16, every CC run of cnr-2000 on its 392-line cache failed
 * with -EBUSY; results/history/graph.md). Returns nonzero, the same in every lane, if any
 * lane's line could not be taken (recorded in g->ctr->error).
 */
BAM_HD_INLINE int gv_edge_warp(const struct graph_view *g, struct bam_line *h, uint64_t i, int act, uint64_t *u,
			       uint32_t *gets)
{
	const uint32_t full = 0xffffffffu, lane = threadIdx.x & 31u;
	struct bam_array_dev *a = g->edge_a;
	int rc = 0;
	const int in_h = !act || (h->slot >= 0 && i >= h->first && i < h->end);
	if (__all_sync(full, in_h)) {
		if (act)
			*u = gv_held_edge(g, h, i);
		return 0;
	}
	/* First the lanes that left their lines try to take the new ones if they are
	 * cached now (no waiting: holding the other lanes' lines meanwhile is safe) */
	int got = 1;
	if (!in_h) { /* (a line taken so counts no access: its element is one of the n) */
		bam_line_put(a, h);
		got = bam_line_warp_try_get(a, h, i) == 0;
	}
	if (!__all_sync(full, got)) {
		/* some line must be filled or waited for: let go of every line first */
		bam_line_put(a, h);
		const uint64_t l = act ? bam_array_line_of(a, i) : ~0ull;
		uint32_t todo = __ballot_sync(full, act);
		while (todo) {
			const uint32_t grp = gv_next_line_group(full, l, &todo);
			if ((grp >> lane & 1u) && !(rc = bam_line_warp_get(a, h, i))) {
				(*gets)++;
				if (todo) { /* read it now: the line is let go before the next is taken */
					*u = gv_held_edge(g, h, i);
					bam_line_put(a, h);
					act = 0;
				}
			}
		}
		if (rc)
			gv_fail(g, rc);
		if (__any_sync(full, rc != 0))
			return 1;
	}
	if (act)
		*u = gv_held_edge(g, h, i);
	return 0;
}
#endif

/* Release the handle; count the n edges read through it (bam_line_warp_get counted
 * one per line taken, 'gets'). */
BAM_HD_INLINE void gv_edges_done(const struct graph_view *g, struct bam_line *h, uint32_t n, uint32_t gets)
{
	if (!g->bam)
		return;
	bam_line_put(g->edge_a, h);
	bam_array_count_accesses(g->edge_a, n - gets);
}

/* Root of x in the union-find forest of CC labels (each label a smaller id of the
 * same component, a root's its own), halving the path on the way: a non-root's label
 * is only ever replaced by one of its ancestors, so concurrent finds and links keep
 * the forest valid. */
BAM_HD_INLINE uint64_t cc_find(uint64_t *label, uint64_t x)
{
	for (;;) {
		const uint64_t p = bam_load_relaxed_u64(&label[x]);
		if (p == x)
			return x;
		const uint64_t gp = bam_load_relaxed_u64(&label[p]);
		if (gp == p)
			return p;
		bam_store_relaxed_u64(&label[x], gp);
		x = gp;
	}
}

/* Join the trees of v and u: the larger root is linked under the smaller (CAS on the
 * root's own label, so a root linked meanwhile by another thread is seen and the
 * join retried from the new roots). */
BAM_HD_INLINE void cc_union(uint64_t *label, uint64_t v, uint64_t u)
{
	uint64_t a = cc_find(label, v), b = cc_find(label, u);
	while (a != b) {
		const uint64_t hi = a > b ? a : b, lo = a > b ? b : a;
		const uint64_t old = bam_cas_acq_rel_gpu_u64(&label[hi], hi, lo);
		if (old == hi)
			return;
		a = cc_find(label, old);
		b = cc_find(label, lo);
	}
}

/* The two algorithms' work per arc (v, u), u already checked < n. BFS (b set): an
 * unvisited u gets level depth + 1 and joins the next frontier. CC (c set): join the
 * trees of v and u. */
BAM_HD_INLINE void arc_do(const struct graph_view *g, struct bfs_state *b, struct cc_state *c, uint64_t v,
			  uint64_t u)
{
	if (b) {
		const uint32_t nl = b->depth + 1;
		if (bam_load_relaxed_u32(&b->level[u]) == 0xffffffffu &&
		    bam_cas_acq_rel_gpu_u32(&b->level[u], 0xffffffffu, nl) == 0xffffffffu) {
			uint64_t k = bam_fetch_add_relaxed_gpu_u64(&g->ctr->next_n, 1);
			b->next[k] = u;
		}
		return;
	}
	cc_union(c->label, v, u);
}

#if BAM_ON_GPU
/* The whole warp: the arc (v, u) of each lane that read one (act) is counted in *n,
 * its u checked < n (-ERANGE recorded in g->ctr->error) and walked (arc_do). Returns
 * nonzero, the same in every lane, if any lane's u was out of range. */
BAM_HD_INLINE int arc_warp(const struct graph_view *g, struct bfs_state *b, struct cc_state *c, uint64_t v, uint64_t u,
			   int act, uint32_t *n)
{
	int bad = 0;
	if (act) {
		(*n)++;
		if (u >= g->n) {
			gv_fail(g, -ERANGE);
			bad = 1;
		} else {
			arc_do(g, b, c, v, u);
		}
	}
	return __any_sync(0xffffffffu, bad);
}
#endif

/* Arcs [s, e) of vertex v by the calling warp (lane, wsize), through line handle h
 * (kept across calls, so consecutive lists share line acquisitions). Adds the edges
 * read to *n and the lines taken to *gets. Returns nonzero on error (recorded in
 * g->ctr->error). */
BAM_HD_INLINE int walk_list(const struct graph_view *g, struct bfs_state *b, struct cc_state *c, uint64_t v,
			    uint64_t s, uint64_t e, uint32_t lane, uint32_t wsize, struct bam_line *h, uint32_t *n,
			    uint32_t *gets)
{
#if BAM_ON_GPU
	if (g->bam) { /* the whole warp in step: gv_edge_warp */
		for (uint64_t base = s; base < e; base += wsize) {
			const uint64_t i = base + lane;
			const int act = i < e;
			uint64_t u = 0;
			if (gv_edge_warp(g, h, i, act, &u, gets) || arc_warp(g, b, c, v, u, act, n))
				return 1;
		}
		return 0;
	}
#endif
	for (uint64_t i = s + lane; i < e; i += wsize) {
		uint64_t u;
		if (gv_edge_h(g, h, i, &u, gets))
			return 1;
		(*n)++;
		if (u >= g->n) {
			gv_fail(g, -ERANGE);
			return 1;
		}
		arc_do(g, b, c, v, u);
	}
	return 0;
}

/* Queue the list [s, e) of v as chunks if it is longer than GV_CHUNK (all lanes of the
 * warp call with the same arguments; they write the entries). Returns 1 if queued. */
BAM_HD_INLINE int heavy_push(const struct graph_view *g, uint64_t v, uint64_t s, uint64_t e, uint32_t lane,
			     uint32_t wsize)
{
	if (e - s <= GV_CHUNK || !g->heavy)
		return 0;
	const uint64_t k0 = s / GV_CHUNK, cnt = (e - 1) / GV_CHUNK - k0 + 1;
	uint64_t at = 0;
	if (lane == 0)
		at = bam_fetch_add_relaxed_gpu_u64(&g->ctr->heavy_n, cnt);
#if BAM_ON_GPU
	at = __shfl_sync(0xffffffffu, at, 0);
#endif
	if (at + cnt > g->heavy_cap) {
		/* cannot happen with heavy_cap = gv_heavy_cap(m); walk the list here rather
		 * than lose it, and say so */
		gv_fail(g, -EOVERFLOW);
		return 0;
	}
	for (uint64_t k = lane; k < cnt; k += wsize) {
		struct gv_chunk ch;
		ch.v = v;
		ch.s = (k0 + k) * GV_CHUNK < s ? s : (k0 + k) * GV_CHUNK;
		ch.e = (k0 + k + 1) * GV_CHUNK > e ? e : (k0 + k + 1) * GV_CHUNK;
		g->heavy[at + k] = ch;
	}
	return 1;
}

/* log2 of the edges in one line of the edge array (bam arrays only). */
BAM_HD_INLINE uint32_t gv_edge_line_shift(const struct graph_view *g)
{
	return g->edge_a->cache->line_shift - g->edge_a->elem_shift;
}

/* The first edge of the edge-array line that holds edge i (bam arrays only). */
BAM_HD_INLINE uint64_t gv_edge_line_floor(const struct graph_view *g, uint64_t i)
{
	const uint32_t sh = gv_edge_line_shift(g);
	return i >> sh << sh;
}

/* The part [*cs, *ce) of a long list [s, e) that a walk over a batch of vertices queues
 * as chunks (heavy_push): the list without its pieces in the first and the last line of
 * the edge array it touches, when those lines also hold other lists' edges (through bam
 * arrays; plain pointers: the whole list). The batch walk reads those lines for the lists
 * before and after the long one anyway, so it walks the two pieces itself: when the chunk
 * kernel walked them, later, both lines had mostly been evicted meanwhile and were read
 * twice (kron26 CC on the H200: about 32,500 extra line fills at every line size, 2.7% of
 * the bytes at 4 KiB lines and 5.6% at 8 KiB; results/history/graph.md). A
 * list without a whole line of its own is not cut (*cs = s, *ce = e). */
BAM_HD_INLINE void gv_heavy_cut(const struct graph_view *g, uint64_t s, uint64_t e, uint64_t *cs, uint64_t *ce)
{
	*cs = s;
	*ce = e;
	if (!g->bam)
		return;
	const uint64_t a = gv_edge_line_floor(g, s + ((1ull << gv_edge_line_shift(g)) - 1)),
		       z = gv_edge_line_floor(g, e);
	if (a < z) {
		*cs = a;
		*ce = z;
	}
}

/* One warp (lane, wsize) expands BFS frontier entry w (queue order). */
BAM_HD_INLINE void bfs_warp(const struct graph_view *g, struct bfs_state *b, uint64_t w, uint32_t lane, uint32_t wsize)
{
	uint64_t v = b->cur[w], s = 0, e = 0; /* (set by gv_range; gcc -O3 cannot tell) */
	if (gv_failed(g) || gv_range(g, v, &s, &e) || heavy_push(g, v, s, e, lane, wsize))
		return;
	struct bam_line h = {0};
	h.slot = -1;
	uint32_t n = 0, gets = 0;
	walk_list(g, b, NULL, v, s, e, lane, wsize, &h, &n, &gets);
	gv_edges_done(g, &h, n, gets);
}

/* One warp walks queued chunk k (the second kernel of a level / pass). */
BAM_HD_INLINE void chunk_warp(const struct graph_view *g, struct bfs_state *b, struct cc_state *c, uint64_t k,
			      uint32_t lane, uint32_t wsize)
{
	if (gv_failed(g))
		return;
	const struct gv_chunk ch = g->heavy[k];
	struct bam_line h = {0};
	h.slot = -1;
	uint32_t n = 0, gets = 0;
	walk_list(g, b, c, ch.v, ch.s, ch.e, lane, wsize, &h, &n, &gets);
	gv_edges_done(g, &h, n, gets);
}

#define CC_BATCH 31u /* vertices per batch: their 32 offsets are read by one warp at once */

/* Offset v into *o: plain, or through the array (warp-coalesced among the calling
 * threads on the GPU; through the thread's handle h on the CPU target). */
BAM_HD_INLINE int gv_off(const struct graph_view *g, struct bam_line *h, uint64_t v, uint64_t *o)
{
	if (!g->off_a) {
		*o = gv_off_plain(g, v);
		return 0;
	}
#if BAM_ON_GPU
	/* the calling lanes' lines one after the other, each let go before the next is
	 * taken (no line held while waiting for another: gv_edge_warp) */
	(void)h;
	const uint32_t act = __activemask(), lane = threadIdx.x & 31u;
	const uint64_t l = bam_array_line_of(g->off_a, v);
	uint32_t todo = act;
	int rc = 0;
	while (todo) {
		const uint32_t grp = gv_next_line_group(act, l, &todo);
		if (grp >> lane & 1u)
			rc = gv_off_read(g, v, o);
	}
#else
	/* bam_line_get counts the access when it takes a new line; within the held line
	 * it counts nothing (counting every v but a line's first over-counted the first v
	 * of a range that starts inside a line) */
	const int held = h->slot >= 0 && v >= h->first && v < h->end;
	int rc = bam_line_get(g->off_a, h, v);
	if (!rc) {
		*o = gv_off_in_line(g, h->data, v - h->first);
		if (held)
			bam_array_count_accesses(g->off_a, 1);
	}
#endif
	gv_fail(g, rc);
	return rc;
}

/* Offset k read through the offsets array (g->off_a) and stored into dst (target
 * memory, g->off_bytes wide, [n + 1]): bam bfs/cc --offsets=memory copies the offsets
 * from the storage once per run, the walks then read them from dst. On the GPU the lanes
 * of a warp pass consecutive k (one line access per line, as gv_off). Returns 0 or the
 * read's negative errno (recorded in g->ctr->error). */
BAM_HD_INLINE int gv_off_copy(const struct graph_view *g, struct bam_line *h, uint64_t k, void *dst)
{
	uint64_t o = 0;
	const int rc = gv_off(g, h, k, &o);
	if (!rc) {
		if (g->off_bytes == 4)
			((uint32_t *)dst)[k] = (uint32_t)o;
		else
			((uint64_t *)dst)[k] = o;
	}
	return rc;
}

#if BAM_ON_GPU
/*
 * The lists of one batch of vertices, walked by the whole warp at once: lane j holds
 * the list [s, e) of vertex base + j (empty: nothing to walk). The lists are laid end
 * to end (a prefix sum over the lanes) and the warp walks 32 consecutive positions of
 * that sequence per step, lane k finding the list its position falls in (a binary
 * search over the lanes' sums), so a step reads 32 edges however short the lists are.
 * (One list per step, as walk_list does, took a step per list: a warp whose vertices
 * had short lists took a step, a few dependent memory accesses, for every one of them.)
 * Lists longer than GV_CHUNK go to the chunk queue first, but for their pieces in lines
 * shared with other lists (gv_heavy_cut), walked here. Adds the edges read to *n,
 * the lines taken to *gets; returns nonzero, the same in every lane, on error
 * (recorded in g->ctr->error).
 */
BAM_HD_INLINE int walk_batch_warp(const struct graph_view *g, struct bfs_state *b, struct cc_state *c, uint64_t base,
				  uint64_t s, uint64_t e, uint32_t lane, struct bam_line *h, uint32_t *n, uint32_t *gets)
{
	const uint32_t full = 0xffffffffu;
	/* long lists: queued as chunks, one after the other (each call is warp-wide), but
	 * for their pieces in lines shared with other lists (gv_heavy_cut): lane j of cut
	 * (bit j) walks its list [s, e) without the part [cs, ce) queued (all of it: nothing
	 * to walk), so the piece in the last line comes right after the one in the first */
	uint32_t heavy = __ballot_sync(full, e - s > GV_CHUNK), cut = 0;
	while (heavy) {
		const uint32_t j = (uint32_t)(__ffs(heavy) - 1);
		heavy &= heavy - 1;
		uint64_t cs, ce;
		gv_heavy_cut(g, __shfl_sync(full, s, j), __shfl_sync(full, e, j), &cs, &ce);
		if (heavy_push(g, base + j, cs, ce, lane, 32))
			cut |= 1u << j;
	}
	uint64_t len = e - s;
	if (cut >> lane & 1u) {
		uint64_t cs, ce;
		gv_heavy_cut(g, s, e, &cs, &ce);
		len -= ce - cs;
	}
	uint64_t inc = len; /* inclusive prefix sum of the lengths */
	for (uint32_t o = 1; o < 32; o <<= 1) {
		const uint64_t x = __shfl_up_sync(full, inc, o);
		if (lane >= o)
			inc += x;
	}
	const uint64_t total = __shfl_sync(full, inc, 31), exc = inc - len;
	for (uint64_t t = 0; t < total; t += 32) {
		const uint64_t p = t + lane;
		const int act = p < total;
		uint32_t j = 0; /* the first lane whose sum passes p: the lanes whose sum is <= p */
		for (uint32_t step = 16; step; step >>= 1)
			if (__shfl_sync(full, inc, j + step - 1) <= p)
				j += step;
		const uint64_t sj = __shfl_sync(full, s, j);
		uint64_t q = p - __shfl_sync(full, exc, j); /* position in j's (cut) list */
		if (cut) { /* (the same in every lane) */
			const uint64_t ej = __shfl_sync(full, e, j);
			if (cut >> j & 1u) {
				uint64_t cs, ce;
				gv_heavy_cut(g, sj, ej, &cs, &ce);
				if (q >= cs - sj)
					q += ce - cs;
			}
		}
		const uint64_t i = sj + q;
		uint64_t u = 0;
		if (g->bam) {
			if (gv_edge_warp(g, h, i, act, &u, gets))
				return 1;
		} else if (act) {
			gv_edge(g, i, &u);
		}
		if (arc_warp(g, b, c, base + j, u, act, n))
			return 1;
	}
	return 0;
}
#endif

/*
 * One warp (or one CPU thread, wsize 1) walks the vertices of [first, last) in vertex
 * order, each list cut to the edges of [lo, hi) of the edge array (walk_part; 0 and
 * UINT64_MAX: whole lists, walk_range). CC (c set): every vertex, joined with all its
 * out-neighbours. BFS (b set, "scan" frontier): only the vertices whose level is
 * b->depth, i.e. the frontier, found by reading the level array instead of a frontier
 * queue; in vertex order, the neighbour lists are read in edge-array order, so a line of
 * the edge array is fetched about once per level instead of once per frontier vertex in
 * it (the queue's discovery order is random). A warp owns a contiguous range, so
 * concurrent warps touch different lines (their misses overlap instead of queueing
 * behind one fill). Per batch of up to CC_BATCH vertices the warp reads the batch's
 * offsets at once (lane k: off[base + k]; skipped when no vertex of the batch is
 * wanted); then it walks the wanted neighbour lists through one line handle per thread,
 * so the cache is probed about once per line rather than once per vertex: on the GPU
 * all of them end to end, 32 edges per step (walk_batch_warp), on the CPU target one
 * after the other. Lists longer than GV_CHUNK go to the chunk queue, but for their pieces
 * in lines shared with other lists (gv_heavy_cut). The handle is
 * dropped before the next batch's offsets are read: a warp never holds a line while it
 * waits for another (no hold-and-wait among warps, so no deadlock when the cache has
 * fewer lines than warps).
 */
BAM_HD_INLINE void walk_vertices(const struct graph_view *g, struct bfs_state *b, struct cc_state *c, uint64_t first,
				 uint64_t last, uint64_t lo, uint64_t hi, uint32_t lane, uint32_t wsize)
{
	int bad = 0;
	for (uint64_t base = first; base < last && !bad; base += CC_BATCH) {
		if (gv_failed(g))
			break;
		const uint32_t cnt = last - base < CC_BATCH ? (uint32_t)(last - base) : CC_BATCH;
		struct bam_line ho = {0};
		ho.slot = -1;
#if BAM_ON_GPU
		uint32_t want = (1u << cnt) - 1;
		if (b)
			want = __ballot_sync(0xffffffffu, lane < cnt && bam_load_relaxed_u32(&b->level[base + lane]) == b->depth);
		if (!want)
			continue;
		uint64_t ol = 0;
		if (lane <= cnt && gv_off(g, &ho, base + lane, &ol))
			bad = 1;
		if (__any_sync(0xffffffffu, bad))
			break;
		/* lane j < cnt: vertex base + j's list [ol, the next lane's ol) */
		const uint64_t ol_next = __shfl_down_sync(0xffffffffu, ol, 1);
		if (__any_sync(0xffffffffu, lane < cnt && gv_offsets_bad(g, ol, ol_next))) {
			gv_fail(g, -EBADMSG);
			break;
		}
#else
		uint32_t want = (1u << cnt) - 1;
		if (b) {
			want = 0;
			for (uint32_t k = 0; k < cnt; k++)
				if (bam_load_relaxed_u32(&b->level[base + k]) == b->depth)
					want |= 1u << k;
		}
		if (!want)
			continue;
		uint64_t ob[CC_BATCH + 1];
		for (uint32_t k = 0; k <= cnt && !bad; k++)
			bad = gv_off(g, &ho, base + k, &ob[k]) != 0;
		bam_line_put(g->off_a, &ho);
		for (uint32_t k = 0; k < cnt && !bad; k++)
			if (gv_offsets_bad(g, ob[k], ob[k + 1])) {
				gv_fail(g, -EBADMSG);
				bad = 1;
			}
		if (bad)
			break;
#endif
		struct bam_line h = {0};
		h.slot = -1;
		uint32_t n = 0, gets = 0;
#if BAM_ON_GPU
		{ /* lane j: the part of vertex base + j's list in the edge range, if wanted */
			uint64_t s = ol, e = ol_next;
			s = s > lo ? s : lo;
			e = e < hi ? e : hi;
			if (lane >= cnt || !(want >> lane & 1u) || s > e)
				e = s;
			bad = walk_batch_warp(g, b, c, base, s, e, lane, &h, &n, &gets);
		}
#else
		for (uint32_t j = 0; j < cnt && !bad; j++) {
			if (!(want >> j & 1u))
				continue;
			const uint64_t v = base + j;
			uint64_t s = ob[j], e = ob[j + 1];
			s = s > lo ? s : lo; /* the part of the list in the edge range */
			e = e < hi ? e : hi;
			if (s >= e)
				continue;
			uint64_t cs = s, ce = e; /* long lists: queued but for their pieces in shared lines */
			if (e - s > GV_CHUNK)
				gv_heavy_cut(g, s, e, &cs, &ce);
			if (heavy_push(g, v, cs, ce, lane, wsize))
				bad = walk_list(g, b, c, v, s, cs, lane, wsize, &h, &n, &gets) ||
				      walk_list(g, b, c, v, ce, e, lane, wsize, &h, &n, &gets);
			else
				bad = walk_list(g, b, c, v, s, e, lane, wsize, &h, &n, &gets);
		}
#endif
		gv_edges_done(g, &h, n, gets);
	}
}

/* walk_vertices over whole lists. */
BAM_HD_INLINE void walk_range(const struct graph_view *g, struct bfs_state *b, struct cc_state *c, uint64_t first,
			      uint64_t last, uint32_t lane, uint32_t wsize)
{
	walk_vertices(g, b, c, first, last, 0, UINT64_MAX, lane, wsize);
}

/*
 * Work item k of g->ranges by one warp or one CPU thread (walk_vertices). The items
 * cut the edge array into ranges of at most part_edges edges and each range's vertices
 * into pieces of at most GV_RANGE_VERTICES (cmd_graphrun.c, part_setup): whatever the
 * degrees, no item holds much more work than another (with ranges of n / warps
 * vertices, a warp whose vertices have long lists walks more edges than the others).
 * Not the default: on the H200 it made the BFS of cnr-2000 1.6x faster in host mode
 * and 1.1x in gpu mode, but not through bam, and a Kronecker graph's through bam 1.2x
 * slower (more lines taken at once than a cache of 1/8 of the edges holds;
 * results/history/graph.md).
 */
BAM_HD_INLINE void walk_part(const struct graph_view *g, struct bfs_state *b, struct cc_state *c, uint64_t k,
			     uint32_t lane, uint32_t wsize)
{
	const struct gv_range it = g->ranges[k];
	walk_vertices(g, b, c, it.first, it.last, it.lo, it.hi, lane, wsize);
}

/* Most vertices in one work item of g->ranges: 8 batches (a run of vertices with empty
 * lists costs a warp a level-array read per batch even so). */
#define GV_RANGE_VERTICES (8u * CC_BATCH)
/* Edge ranges are multiples of this many edges (one step of a warp). */
#define GV_RANGE_GRANULE 32u

/* The entries of g->part that vertex v, whose list is [s, e), is the answer for: the
 * ranges that start inside its list (none for an empty list), and part[nparts] = v + 1
 * if its list holds the last edge (the vertices after it have none: the last range
 * ends there). The sweep over all vertices (graph_gpu_part, the CPU target's
 * cpu_part_fn) writes each entry once. */
BAM_HD_INLINE void gv_part_vertex(const struct graph_view *g, uint64_t v, uint64_t s, uint64_t e)
{
	if (gv_offsets_bad(g, s, e)) {
		gv_fail(g, -EBADMSG);
		return;
	}
	const uint64_t E = g->part_edges;
	for (uint64_t r = (s + E - 1) / E; r * E < e && r < g->nparts; r++)
		g->part[r] = v;
	if (s < e && e == g->m)
		g->part[g->nparts] = v + 1;
}

/* Root of x without changing any label: the flattening's find. */
BAM_HD_INLINE uint64_t cc_root(const uint64_t *label, uint64_t x)
{
	for (;;) {
		const uint64_t p = bam_load_relaxed_u64(&label[x]);
		if (p == x)
			return x;
		x = p;
	}
}

/* Flattening, after the pass: label[v] = its root (no links happen any more, so the
 * root found is final). Each thread writes only the labels of its own vertices, so a
 * label once flattened stays flattened. (With cc_find's path halving here, a thread
 * that had read v's old parent could store that parent's parent into label[v] after
 * v's own thread had stored the root: v was left pointing at a non-root. Seen on the
 * H200 as a rare wrong label, about 1 run in 20 of cnr-2000 under some builds and
 * cache sizes; results/history/graph.md.) */
BAM_HD_INLINE void cc_flatten(struct cc_state *c, uint64_t v)
{
	const uint64_t r = cc_root(c->label, v);
	if (bam_load_relaxed_u64(&c->label[v]) != r)
		bam_store_relaxed_u64(&c->label[v], r);
}

#endif /* BAM_GRAPH_KERN_H */
