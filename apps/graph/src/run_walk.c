/* SPDX-License-Identifier: MIT */
/*
 * run_walk.c - helpers of bam_graph_run: the CPU target's launches of the walks
 * (graph_kern.h), the run's target memory, the level trace, the walks' failures, the
 * offsets' copy to memory (--offsets=memory) and the BFS scan levels' edge ranges.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bam/dev.h"
#include "bam/nvme_spec.h"
#include "run_internal.h"
#ifdef BAM_HAVE_CUDA
#include "graph_gpu.h"
#endif

/* Bytes each of k controllers needs for the offsets (off_bytes) and edges (edge_bytes)
 * in line-byte lines: each array striped over the controllers, rounded up on each
 * (bam_array_create). */
uint64_t ns_need(uint64_t off_bytes, uint64_t edge_bytes, uint32_t line, uint32_t k)
{
	const uint64_t ol = (off_bytes + line - 1) / line, el = (edge_bytes + line - 1) / line;
	return ((ol + k - 1) / k + (el + k - 1) / k) * line;
}

/* read a byte range of the graph file */
int pread_all(int fd, void *buf, uint64_t len, uint64_t off)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t r = pread(fd, p, len > (1u << 30) ? (1u << 30) : len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		p += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

/* ---- CPU-target launches ---------------------------------------------------------- */

/* one of b (BFS) and c (CC) is set; ranges of per vertices */
struct cpu_walk {
	const struct graph_view *g;
	struct bfs_state *b;
	struct cc_state *c;
	uint64_t per;
	void *dst;            /* cpu_off_copy_fn: where the offsets go */
};
static void cpu_bfs_fn(void *arg, uint64_t w)
{
	struct cpu_walk *c = arg;
	bfs_warp(c->g, c->b, w, 0, 1);
}
static void cpu_range_fn(void *arg, uint64_t t)
{
	struct cpu_walk *c = arg;
	if (c->g->ranges) {
		walk_part(c->g, c->b, c->c, t, 0, 1);
		return;
	}
	uint64_t first = t * c->per, last = first + c->per < c->g->n ? first + c->per : c->g->n;
	if (first < last)
		walk_range(c->g, c->b, c->c, first, last, 0, 1);
}
/* the sweep that fills g->part (graph_kern.h, gv_part_vertex): vertices [t * per, ...) */
static void cpu_part_fn(void *arg, uint64_t t)
{
	struct cpu_walk *c = arg;
	const struct graph_view *g = c->g;
	struct bam_line h = {0};
	h.slot = -1;
	uint64_t s = 0, e = 0;
	for (uint64_t v = t * c->per; v < (t + 1) * c->per && v < g->n; v++) {
		if ((v == t * c->per && gv_off(g, &h, v, &s)) || gv_off(g, &h, v + 1, &e))
			break; /* recorded in g->ctr->error */
		gv_part_vertex(g, v, s, e);
		s = e;
	}
	if (g->bam)
		bam_line_put(g->off_a, &h);
}

/* --offsets=memory: offsets [t * per, ...) copied to c->dst (graph_kern.h, gv_off_copy) */
static void cpu_off_copy_fn(void *arg, uint64_t t)
{
	struct cpu_walk *c = arg;
	const struct graph_view *g = c->g;
	if (gv_failed(g))
		return; /* another range's read failed: the run ends with its error */
	struct bam_line h = {0};
	h.slot = -1;
	for (uint64_t k = t * c->per; k < (t + 1) * c->per && k <= g->n; k++)
		if (gv_off_copy(g, &h, k, c->dst))
			break; /* recorded in g->ctr->error */
	bam_line_put(g->off_a, &h);
}

static void cpu_chunk_fn(void *arg, uint64_t k)
{
	struct cpu_walk *c = arg;
	chunk_warp(c->g, c->b, c->c, k, 0, 1);
}
static void cpu_flatten_fn(void *arg, uint64_t t)
{
	struct cpu_walk *c = arg;
	for (uint64_t v = t * c->per; v < (t + 1) * c->per && v < c->g->n; v++)
		cc_flatten(c->c, v);
}

uint32_t cpu_workers(void)
{
	static uint32_t w; /* sysconf reads /sys each time: once per run, not per level */
	if (!w) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		/* threads block on I/O: more of them than cores keeps the queues busy */
		w = (uint32_t)(n > 0 ? n * 4 : 8);
	}
	return w;
}

/* vertices per CPU-target range: 16 ranges per worker */
uint64_t cpu_per(uint64_t n)
{
	uint64_t k = (uint64_t)cpu_workers() * 16;
	uint64_t per = (n + k - 1) / k;
	return per ? per : 1;
}

/* One BFS level on the CPU target: the frontier's walks (a scan of vertex or edge
 * ranges, or the queue), then the chunks of long lists they queued. */
void cpu_bfs_level(struct run *R, struct bfs_state *b, int scan)
{
	struct gv_counters *ctr = R->ctr;
	const uint64_t n = R->n;
	ctr->next_n = ctr->heavy_n = ctr->range_next = 0;
	struct cpu_walk c = {&R->gv, b, NULL, cpu_per(n)};
	if (scan)
		bam_cpu_launch(R->gv.ranges ? R->gv.nranges : (n + c.per - 1) / c.per, cpu_workers(), cpu_range_fn, &c);
	else /* at least 8 frontier vertices per host thread: a thread
	      * created per vertex of a small level cost more than it */
		bam_cpu_launch(b->cur_n, b->cur_n / 8 < cpu_workers() ? (uint32_t)(b->cur_n / 8 + 1) : cpu_workers(),
			       cpu_bfs_fn, &c);
	bam_cpu_launch(gv_chunks_queued(&R->gv), cpu_workers(), cpu_chunk_fn, &c);
}

/* The CC pass on the CPU target: union-find over all arcs, the chunks, flattening. */
void cpu_cc_pass(struct run *R, struct cc_state *c)
{
	const uint64_t n = R->n;
	R->ctr->heavy_n = 0;
	uint32_t w = cpu_workers();
	struct cpu_walk cc = {&R->gv, NULL, c, cpu_per(n)};
	bam_cpu_launch((n + cc.per - 1) / cc.per, w, cpu_range_fn, &cc);
	bam_cpu_launch(gv_chunks_queued(&R->gv), w, cpu_chunk_fn, &cc);
	bam_cpu_launch((n + cc.per - 1) / cc.per, w, cpu_flatten_fn, &cc);
}

/* ---- memory of the run (target memory for state) --------------------------------- */

void *state_alloc(struct gmem *m, uint64_t bytes)
{
#ifdef BAM_HAVE_CUDA
	if (m->gpu)
		return graph_gpu_alloc(0, bytes);
#endif
	(void)m;
	return calloc(1, bytes ? bytes : 1);
}
void state_free(struct gmem *m, void *p)
{
#ifdef BAM_HAVE_CUDA
	if (m->gpu) {
		graph_gpu_free(0, p);
		return;
	}
#endif
	(void)m;
	free(p);
}
int state_put(struct gmem *m, void *dst, const void *src, uint64_t n)
{
#ifdef BAM_HAVE_CUDA
	if (m->gpu)
		return graph_gpu_upload(dst, src, n);
#endif
	(void)m;
	memcpy(dst, src, n);
	return 0;
}
int state_get(struct gmem *m, void *dst, const void *src, uint64_t n)
{
	return state_put(m, dst, src, n);
}

/* ---- the walks' failures, the level trace, the offsets' copy, the edge ranges --------- */

/* --level-trace: record one level (t_off/t_edge: the arrays' counters before it) and
 * say it on stderr. Returns -ENOMEM if the record cannot grow. */
int trace_level(struct run *R, uint64_t src, uint64_t frontier, int scan, double s,
		const struct bam_array_stats *t_off, const struct bam_array_stats *t_edge)
{
	struct bam_graph_run_result *r = R->r;
	struct bam_array *aoff = R->aoff, *aedge = R->aedge;
	r->trace_src = src;
	if ((r->trace_n & (r->trace_n - 1)) == 0) { /* 0, 1, 2, 4, ...: double */
		struct bam_graph_level *t = realloc(r->trace, (r->trace_n ? 2 * r->trace_n : 1) * sizeof(*t));
		if (!t) {
			run_fail(R, "%s: out of memory for the level trace", R->who);
			return -ENOMEM;
		}
		r->trace = t;
	}
	struct bam_graph_level *l = &r->trace[r->trace_n++];
	l->frontier = frontier;
	l->scan = scan;
	l->s = s;
	l->off_misses = l->edge_misses = 0;
	if (aoff) {
		struct bam_array_stats a, e;
		bam_array_stats(aoff, &a);
		bam_array_stats(aedge, &e);
		l->off_misses = a.c.misses - t_off->c.misses;
		l->edge_misses = e.c.misses - t_edge->c.misses;
	}
	char fills[96] = "";
	if (aoff)
		snprintf(fills, sizeof(fills), ", line fills: offsets %llu, edges %llu", (unsigned long long)l->off_misses,
			 (unsigned long long)l->edge_misses);
	run_msg(R, BAM_GRAPH_MSG_TRACE, "%s: source %llu, level %u: frontier %llu (%s), %.1f us%s", R->who,
		(unsigned long long)src, r->trace_n - 1, (unsigned long long)frontier, scan ? "scan" : "queue", s * 1e6, fills);
	return 0;
}

/* Say why a walk failed (e: struct gv_counters.error, a positive errno); where is ""
 * or "source S, level L: ". Two are the walks' own checks of what they read: -ERANGE,
 * a neighbour id >= n, and -EBADMSG, offsets out of order or past m (graph_kern.h,
 * gv_offsets_bad). Outside bam mode the data came from the file (whose offsets the
 * loader checked), so the file is damaged; through bam it came from the storage, which
 * may also not hold what the file does (a damaged media, a back end that returns other
 * data). -EIO through bam names the first failed command's NVMe status. */
void walk_fail(struct run *R, const char *where, uint32_t e)
{
	const char *who = R->who, *graph = R->o->graph;
	const uint64_t n = R->n, m = R->m;
	const struct gmem *gm = &R->gm;
	const char *why = gm->ctx ? "the file is damaged ('bam graph info --verify' checks it), or the storage does not hold "
				    "the graph as the file has it (damaged media, or a back end that returns other data)"
				  : "the file is damaged; 'bam graph info --verify' names it";
	if (e == ERANGE) {
		run_fail(R, "%s: %s: %sa neighbour id read is out of range (>= n = %llu): %s\n", who, graph, where,
			 (unsigned long long)n, why);
	} else if (e == EBADMSG) {
		run_fail(R, "%s: %s: %sthe offsets read are out of order or past the arc count (m = %llu): %s\n", who, graph,
			 where, (unsigned long long)m, why);
	} else if (e == EIO && gm->ctx) {
		/* the device's sticky record of the first failed command (struct bam_dev) */
		const uint8_t *d = (const uint8_t *)bam_ctx_dev(gm->ctx);
		uint32_t status = 0;
		uint64_t count = 0;
		const int got = !bam_mem_copy(gm->ctx, &status, d + offsetof(struct bam_dev, error_status), sizeof(status)) &&
				!bam_mem_copy(gm->ctx, &count, d + offsetof(struct bam_dev, n_errors), sizeof(count));
		if (got && status)
			run_fail(R, "%s: %s%s: the first failed command's NVMe status: %s (%llu failures recorded)\n", who, where,
				 bam_strerror(-(int)e), nvme_status_name((uint16_t)status), (unsigned long long)count);
		else
			run_fail(R, "%s: %s%s\n", who, where, bam_strerror(-(int)e));
	} else {
		run_fail(R, "%s: %s%s\n", who, where, bam_strerror(-(int)e));
	}
}

/* walk_fail for BFS source src at level 'level'. */
void bfs_walk_fail(struct run *R, uint64_t src, uint32_t level, uint32_t e)
{
	char where[64];
	snprintf(where, sizeof(where), "source %llu, level %u: ", (unsigned long long)src, level);
	walk_fail(R, where, e);
}

/* --offsets=memory: copy the offsets array from the storage (through the cache, as any
 * read) into target memory, then point the walks at the copy (gv->off_a NULL, off_p
 * the copy, *mem to free). The copy's time goes to r->off_copy_s. Returns 0 or a
 * negative errno (the error said). */
int off_to_memory(struct run *R, void **mem)
{
	struct graph_view *gv = &R->gv;
	struct gmem *gm = &R->gm;
	const char *who = R->who;
	struct bam_graph_run_result *r = R->r;
	const uint64_t bytes = (gv->n + 1) * gv->off_bytes;
	void *dst = state_alloc(gm, bytes);
	if (!dst) {
		run_fail(R, "%s: --offsets=memory: out of %s memory for the offsets (%llu bytes)\n",
			 who, gm->gpu ? "GPU" : "host", (unsigned long long)bytes);
		return -ENOMEM;
	}
	*mem = dst;
	const double t0 = run_now();
	struct gv_counters cv = {0};
	int rc = 0;
	if (gm->gpu) {
#ifdef BAM_HAVE_CUDA
		rc = graph_gpu_off_copy(gv, dst, &cv);
#endif
	} else {
		struct cpu_walk c = {gv, NULL, NULL, cpu_per(gv->n + 1), dst};
		bam_cpu_launch((gv->n + 1 + c.per - 1) / c.per, cpu_workers(), cpu_off_copy_fn, &c);
		cv = *gv->ctr;
	}
	r->off_copy_s = run_now() - t0;
	if (!rc && cv.error) {
		walk_fail(R, "copying the offsets to memory: ", cv.error);
		rc = -(int)cv.error;
	}
	if (rc)
		return rc;
	gv->off_a = NULL;
	gv->off_p = dst;
	return 0;
}

/* Cut the edge array into ranges for BFS scan levels (--scan-ranges=lines and edges;
 * graph_kern.h, walk_part): line_edges edges each (lines: the edges of one
 * cache line, so a work item is one line), else multiples of GV_RANGE_GRANULE edges,
 * about four per warp the device holds at once (GPU: 64 per SM; CPU target: 32 per
 * worker); one sweep over the offsets (through the array in bam mode) finds the vertex
 * where each range starts, and each range's vertices are cut into work items of at most
 * GV_RANGE_VERTICES. The items go to target memory (gv->ranges; the caller frees them).
 * Returns 0 or a negative errno (the error said). */
int part_setup(struct run *R, uint64_t line_edges)
{
	struct graph_view *gv = &R->gv;
	struct gmem *gm = &R->gm;
	const char *who = R->who, *graph = R->o->graph;
	struct bam_graph_run_result *r = R->r;
	const uint64_t m = gv->m, nv = gv->n;
	uint64_t target = (uint64_t)cpu_workers() * 32;
#ifdef BAM_HAVE_CUDA
	if (gm->gpu)
		target = (uint64_t)graph_gpu_sms() * 64;
#endif
	uint64_t E = (m + target - 1) / target;
	E = (E + GV_RANGE_GRANULE - 1) / GV_RANGE_GRANULE * GV_RANGE_GRANULE;
	if (line_edges)
		E = line_edges; /* --scan-ranges=lines: a range per line of the edge array */
	if (!m || !E)
		return 0; /* no edges: vertex ranges (nothing to walk) */
	const double t0 = run_now();
	const uint64_t np = (m + E - 1) / E;
	uint64_t *part = state_alloc(gm, (np + 1) * 8), *hp = malloc((np + 1) * 8);
	struct gv_range *items = NULL;
	int rc = part && hp ? 0 : -ENOMEM;
	gv->part = part;
	gv->nparts = np;
	gv->part_edges = E;
	struct gv_counters cv = {0};
	if (!rc)
		rc = state_put(gm, part + np, &nv, 8);
	if (rc) {
	} else if (gm->gpu) {
#ifdef BAM_HAVE_CUDA
		rc = graph_gpu_part(gv, &cv);
#endif
	} else {
		struct cpu_walk c = {gv, NULL, NULL, cpu_per(nv)};
		bam_cpu_launch((nv + c.per - 1) / c.per, cpu_workers(), cpu_part_fn, &c);
		cv = *gv->ctr;
	}
	if (!rc && cv.error) {
		walk_fail(R, "finding the edge ranges: ", cv.error);
		rc = -(int)cv.error;
	}
	if (!rc)
		rc = state_get(gm, hp, part, (np + 1) * 8);
	uint64_t ni = 0;
	/* range k: from part[k] to part[k + 1], which its list may start in; the last range
	 * up to part[np], the vertex after the last edge's */
#define PART_LAST(k) ((k) + 1 == np ? hp[np] : hp[(k) + 1] + 1)
	for (uint64_t k = 0; !rc && k < np; k++) {
		const uint64_t last = PART_LAST(k);
		if (hp[k] >= last || last > nv) {
			run_fail(R, "%s: %s: the edge ranges are not in order (range %llu starts at vertex %llu, the next at %llu)\n",
				 who, graph, (unsigned long long)k, (unsigned long long)hp[k], (unsigned long long)hp[k + 1]);
			rc = -EINVAL;
		}
		if (!rc)
			ni += (last - hp[k] + GV_RANGE_VERTICES - 1) / GV_RANGE_VERTICES;
	}
	if (!rc && !(items = malloc(ni * sizeof(*items))))
		rc = -ENOMEM;
	uint64_t at = 0;
	for (uint64_t k = 0; !rc && k < np; k++) {
		const uint64_t last = PART_LAST(k), lo = k * E, hi = lo + E < m ? lo + E : m;
		for (uint64_t x = hp[k]; x < last; x += GV_RANGE_VERTICES)
			items[at++] = (struct gv_range){x, last - x > GV_RANGE_VERTICES ? x + GV_RANGE_VERTICES : last, lo, hi};
	}
#undef PART_LAST
	struct gv_range *ti = NULL;
	if (!rc && !(ti = state_alloc(gm, ni * sizeof(*ti))))
		rc = -ENOMEM;
	if (!rc)
		rc = state_put(gm, ti, items, ni * sizeof(*ti));
	if (rc == -ENOMEM)
		run_fail(R, "%s: out of memory for the edge ranges (%llu)\n", who, (unsigned long long)np);
	else if (rc && rc != -EINVAL && !cv.error)
		run_fail(R, "%s: finding the edge ranges: %s\n", who, bam_strerror(rc));
	if (rc && ti) {
		state_free(gm, ti);
		ti = NULL;
	}
	state_free(gm, part);
	free(hp);
	free(items);
	gv->part = NULL;
	gv->ranges = ti;
	gv->nranges = ti ? ni : 0;
	r->part_s = run_now() - t0;
	r->nparts = np;
	r->nranges = gv->nranges;
	r->part_edges = E;
	return rc;
}

/* dst[0, n) = src[0, n) as 4-byte offsets (the caller checked they fit) */
void off_narrow(uint32_t *dst, const uint64_t *src, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		dst[i] = (uint32_t)src[i];
}

/* Put offsets[0, count) onto the back end as 4-byte entries (array a of elem_size 4),
 * 1 Mi entries at a time. */
int media_write_off32(struct bam_array *a, const uint64_t *off, uint64_t count)
{
	const uint64_t chunk = 1u << 20;
	uint32_t *buf = malloc(chunk * sizeof(uint32_t));
	int rc = buf ? 0 : -ENOMEM;
	for (uint64_t i = 0; !rc && i < count; i += chunk) {
		const uint64_t k = count - i < chunk ? count - i : chunk;
		off_narrow(buf, off + i, k);
		rc = bam_array_media_write(a, i, buf, k);
	}
	free(buf);
	return rc;
}

/* Does the graph file (header h, already checked) have a vertex of out-degree >= 2, a
 * default BFS source (bam_graph_pick_sources)? Reads its offsets array in 1 MiB pieces
 * and stops at the first such vertex, so the usual answer costs one read and only a
 * graph without one is read whole, before anything is loaded. Returns 1 (yes), 0 (no),
 * or -1 with a message in err (a read error or a short file). Offsets that decrease
 * count as a yes here: the load that follows refuses them with its own message. */
int has_default_source(const char *path, const struct bam_graph_header *h, char *err, size_t errlen)
{
	enum { PIECE = 1 << 17 }; /* offsets per read */
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	uint64_t *buf = malloc(PIECE * sizeof(uint64_t));
	int found = 0, rc = 0;
	if (!buf) {
		snprintf(err, errlen, "%s: out of memory reading the offsets", path);
		rc = -1;
	}
	uint64_t prev = 0;
	for (uint64_t k = 0; !rc && !found && k < h->n_vertices + 1; k += PIECE) {
		const uint64_t cnt = h->n_vertices + 1 - k < PIECE ? h->n_vertices + 1 - k : PIECE;
		const ssize_t want = (ssize_t)(cnt * sizeof(uint64_t));
		if (pread(fd, buf, (size_t)want, (off_t)(h->offsets_offset + k * sizeof(uint64_t))) != want) {
			snprintf(err, errlen, "%s: read error in the offsets array", path);
			rc = -1;
			break;
		}
		for (uint64_t j = 0; j < cnt && !found; j++) {
			if (k + j > 0 && buf[j] - prev >= 2)
				found = 1;
			prev = buf[j];
		}
	}
	free(buf);
	close(fd);
	return rc ? rc : found;
}
