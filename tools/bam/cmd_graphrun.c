/* SPDX-License-Identifier: MIT */
/*
 * bam bfs / bam cc / bam demo: the main job. Graph analytics on a CSR file with the
 * edge and offset arrays read on demand through bam (--mode bam), or from memory for
 * the baselines in the same binary: gpu (whole graph in GPU memory), host (pinned
 * host memory read zero-copy: the paper's DRAM-only "target"), uvm (managed memory).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "bam/bam.h"
#include "bam/backend.h"
#include "bam/cache.h"
#include "bam/graph.h"
#include "cli_util.h"
#include "cmds.h"
#include "../../apps/graph/src/graph_kern.h" /* (until the run moves to the app) */
#ifdef BAM_HAVE_CUDA
#include "../../apps/graph/src/graph_gpu.h"
extern int bam_gpu_available(void);
#endif

enum gmode { MODE_BAM, MODE_HOST, MODE_GPU, MODE_UVM };
static const char *const mode_names[] = {"bam", "host", "gpu", "uvm"};

struct gopts {
	const char *graph;
	const char *backend;
	enum gmode mode;
	enum bam_target target;
	uint64_t cache_bytes;
	const char *cache_arg; /* --cache-size as given (NULL: the default) */
	uint32_t line;        /* --line-size; 0: the algorithm's default (BFS_LINE_DEFAULT, CC_LINE_DEFAULT) */
	uint32_t nsources;
	uint64_t seed;
	int64_t source;       /* --source V, or -1 */
	int verify, json, quiet;
	uint32_t qpairs, workers;
	uint32_t warps;       /* GPU: --warps, the most warps a walk kernel runs (0: default) */
	uint32_t off_bytes;   /* --offset-bytes: 4 or 8 (0: auto, 4 when the edges fit) */
	int off_prio;         /* --offsets-priority: 1 high, 0 normal, -1 the algorithm's
			       * default (BFS high, CC normal) */
	int off_mem;          /* --offsets=memory: the offsets copied from the storage to
			       * target memory once per run (0: read through the cache) */
	uint64_t timeout_ms;
	int frontier;         /* BFS: FRONTIER_AUTO, _QUEUE or _SCAN */
	uint64_t scan_fraction; /* BFS, auto: scan when the frontier holds >= n/scan_fraction
				 * vertices (--scan-fraction; 0: SCAN_FRACTION) */
	int level_trace;      /* BFS: time and misses of each level of the first source */
	const char *level_loop; /* BFS on the GPU: --level-loop as given, "device" or "host"
				 * (NULL: not given, the device loop) */
	int edge_ranges;      /* BFS --scan-ranges: 0 vertices (default), 1 edges, 2 lines:
			       * scan levels walk ranges of the edge array (lines: one
			       * line's edges each) or ranges of vertices */
	int nsources_set;     /* --sources given */
	const char *bfs_only; /* the last BFS-only option given (refused by cc) */
	const char *bam_only; /* the last --mode=bam option given (refused by the others) */
	int demo;             /* run by bam demo (its messages say "bam demo: bfs: ...") */
};

/* BFS frontier: a queue of vertices in discovery order, or a scan of the level array in
 * vertex order (graph_kern.h, walk_range). auto: scan when the frontier holds at least
 * 1/SCAN_FRACTION of the vertices: reading the level array then costs less than the
 * random order of a queue costs the cache, whose lines are fetched once per frontier
 * vertex instead of about once per level. 64 (--scan-fraction): on the H200, against 256
 * (the default until then), as fast or faster in every mode on cnr-2000,
 * uk-2007-05-100000 and a scale-22 Kronecker graph: through bam 0-2.5%, host mode 0-8%,
 * gpu mode 3-10%; 16 made host and gpu mode faster still on the real graphs but BFS
 * through bam of cnr-2000 8% slower (results/graph.md, sixteenth session). */
enum { FRONTIER_AUTO, FRONTIER_QUEUE, FRONTIER_SCAN };
static const char *const frontier_names[] = {"auto", "queue", "scan"};
#define SCAN_FRACTION 64u

/* One BFS level of the first source (--level-trace). */
struct level_rec {
	uint64_t frontier;    /* vertices expanded */
	int scan;             /* found by scan (1) or queue (0) */
	double s;             /* wall time of the level, host-measured */
	uint64_t off_misses, edge_misses; /* line fills during the level (bam mode) */
};

struct gres {
	double load_s;        /* reading the graph into memory (baselines) or provisioning (bam) */
	uint64_t cache_bytes; /* bam mode: the cache used (after the 1 MiB minimum and the cap
	                       * at the arrays' size) */
	uint32_t line;        /* bam mode: its line size */
	uint32_t off_bytes;   /* width of one offset as the kernels read them (4 or 8) */
	int off_prio;         /* bam mode: the offsets array's cache priority (1 high) */
	double off_copy_s;    /* bam mode, --offsets=memory: copying the offsets from the
			       * storage to target memory (in end-to-end, not in compute) */
	int on_gpu;           /* the kernels ran on the GPU (else the CPU target) */
	double setup_s;       /* cache/array creation or device upload */
	double compute_s;     /* kernels only */
	double e2e_s;
	uint64_t edges_traversed;
	uint32_t levels_max;
	uint32_t levels_scan, levels_queue; /* BFS levels expanded each way, all sources */
	uint64_t chunks;      /* chunks of long neighbour lists walked (graph_kern.h, GV_CHUNK) */
	uint32_t passes;      /* CC: passes over the arcs (1) */
	uint64_t components;
	uint32_t runs;
	int verified;         /* 1 ok, 0 not checked, -1 mismatch */
	int complete;         /* the run ended with results (verified or not) */
	struct bam_array_stats st_off, st_edge;
	char backend_desc[1280];
	struct level_rec *trace; /* --level-trace: the first source's levels */
	uint64_t trace_src;      /* that source */
	const char *level_loop;  /* BFS: "device" or "host" */
	uint32_t trace_n;
	uint64_t nparts, part_edges; /* BFS scan levels: edge ranges and edges per range (0: vertex ranges) */
	uint64_t nranges;        /* their work items (graph_kern.h, GV_RANGE_VERTICES) */
	double part_s;           /* finding the ranges' first vertices (in compute_s) */
};

/* Default cache line bytes (--line-size): BFS 4 KiB (the paper's); CC 8 KiB: its one
 * pass reads the edge array in order, and on the H200 8 KiB lines took 0.85-1.003x the
 * time of 4 KiB (kron26 0.90x with the unlimited profile, the real graphs 0.85-0.86x
 * with 4 emulated Optane devices; results/graph.md, fourteenth session), where BFS of
 * kron26 was 1.11x slower. 0 in gopts.line: the algorithm's default. */
#define BFS_LINE_DEFAULT 4096u
#define CC_LINE_DEFAULT 8192u

static void usage(FILE *f, const char *cmd)
{
	fprintf(f,
		"usage: bam %s GRAPH [options]     (GRAPH: a bam CSR file from 'bam graph import')\n"
		"%s"
		"  --mode=M           bam (default), host, gpu, uvm (baselines; gpu/uvm need a GPU)\n"
		"  --backend=STR      storage for --mode=bam (default emu: the emulated NVMe SSD)\n"
		"  --cache-size=SIZE  --mode=bam: cache bytes (default: 1/8 of the edge array; at\n"
		"                     least 1 MiB, at most what the offsets and edges take)\n"
		"  --line-size=SIZE   --mode=bam: cache line bytes, 512 to 64K (default 4096 for\n"
		"                     bfs, 8192 for cc)\n"
		"%s"
		"  --target=T         gpu, cpu or auto (default)\n"
		"  --verify           check the graph file's array checksums, then the result\n"
		"                     against the CPU reference\n"
		"  --qpairs=N --ctrl-workers=N --timeout-ms=N   --mode=bam: I/O engine settings\n"
		"  --warps=N          GPU: run each walk kernel with at most N warps (8 to 1048576,\n"
		"                     rounded up to blocks of 8; default 16 blocks of 8 per SM)\n"
		"  --offset-bytes=B   width of one offset as every mode stores and reads them: 4, 8\n"
		"                     or auto (default: 4 when the graph has fewer than 2^32 edges;\n"
		"                     the file keeps 8: --mode=bam writes them so onto the storage,\n"
		"                     the other modes narrow them after reading the file, in their\n"
		"                     end-to-end time)\n"
		"  --offsets-priority=P  --mode=bam: the offsets array's cache priority, high or\n"
		"                     normal (default: high for bfs, whose levels read the offsets\n"
		"                     again and again; normal for cc, which reads them once): the\n"
		"                     cache's victim search passes over some high-priority lines\n"
		"                     before it evicts one\n"
		"  --offsets=WHERE    --mode=bam: storage (default: every offset read through the\n"
		"                     cache, as the edges) or memory (copied once per run from the\n"
		"                     storage, through the cache, into GPU memory (CPU target: host\n"
		"                     memory), off_bytes x (n+1) bytes; the copy is in the\n"
		"                     end-to-end time, not in compute: the BaM prototype's BFS keeps\n"
		"                     its vertex array in GPU memory so)\n"
		"  --json             JSON on stdout\n"
		"  --quiet            no progress on stderr\n",
		cmd,
		strcmp(cmd, "bfs") ? "Connected components: weakly connected (arcs taken in both directions).\n"
				   : "Breadth-first search along out-arcs from each source; levels per vertex.\n",
		strcmp(cmd, "bfs") ? "" : "  --sources=N        BFS sources: N random vertices with >= 2 out-neighbours\n"
					  "                     (default 32; 1 to 1048576; fewer if fewer qualify)\n"
					  "  --source=V         one given source vertex\n"
					  "  --seed=N           seed of the source choice (default 1)\n"
					  "  --frontier=F       how a level finds its frontier: queue (the vertices found\n"
					  "                     by the level before, in discovery order), scan (the level\n"
					  "                     array in vertex order: edges read in order, but every level\n"
					  "                     reads all n levels, slow on long thin graphs) or auto\n"
					  "                     (default: scan when the frontier holds >= n/F vertices)\n"
					  "  --scan-fraction=F  auto's threshold above, 1 to 1048576 (default 64)\n"
					  "  --level-trace      per level of the first source: frontier size, how it was\n"
					  "                     found, time and (--mode=bam) line fills, on stderr even\n"
					  "                     with --quiet (JSON: level_trace, level_trace_source); the\n"
					  "                     levels are then driven from the host, and the trace's own\n"
					  "                     work is in the compute time\n"
					  "  --level-loop=L     GPU: device (default: the levels run as one CUDA graph, no\n"
					  "                     host round trip per level) or host (one launch, copy and\n"
					  "                     synchronisation per level); the CPU target always uses host\n"
					  "  --scan-ranges=R    how a scan level is shared out among warps: vertices\n"
					  "                     (default: ranges of n/warps vertices), lines (a work item\n"
					  "                     per line of the edge array, taken one by one) or edges\n"
					  "                     (ranges of about m/(64 x SMs) edges). With lines and\n"
					  "                     edges, a warp whose vertices have long lists gets fewer\n"
					  "                     of them; one sweep over the offsets per run, counted in\n"
					  "                     the compute time, finds where the ranges start (a graph\n"
					  "                     without edges or --frontier=queue: no ranges)\n");
}

/* Bytes each of k controllers needs for the offsets (off_bytes) and edges (edge_bytes)
 * in line-byte lines: each array striped over the controllers, rounded up on each
 * (bam_array_create). */
static uint64_t ns_need(uint64_t off_bytes, uint64_t edge_bytes, uint32_t line, uint32_t k)
{
	const uint64_t ol = (off_bytes + line - 1) / line, el = (edge_bytes + line - 1) / line;
	return ((ol + k - 1) / k + (el + k - 1) / k) * line;
}

/* read a byte range of the graph file */
static int pread_all(int fd, void *buf, uint64_t len, uint64_t off)
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

static uint32_t cpu_workers(void)
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
static uint64_t cpu_per(uint64_t n)
{
	uint64_t k = (uint64_t)cpu_workers() * 16;
	uint64_t per = (n + k - 1) / k;
	return per ? per : 1;
}

/* ---- memory of the run (target memory for state) --------------------------------- */

struct gmem {
	int gpu;
	struct bam_ctx *ctx; /* bam mode */
};

static void *state_alloc(struct gmem *m, uint64_t bytes)
{
#ifdef BAM_HAVE_CUDA
	if (m->gpu)
		return graph_gpu_alloc(0, bytes);
#endif
	(void)m;
	return calloc(1, bytes ? bytes : 1);
}
static void state_free(struct gmem *m, void *p)
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
static int state_put(struct gmem *m, void *dst, const void *src, uint64_t n)
{
#ifdef BAM_HAVE_CUDA
	if (m->gpu)
		return graph_gpu_upload(dst, src, n);
#endif
	(void)m;
	memcpy(dst, src, n);
	return 0;
}
static int state_get(struct gmem *m, void *dst, const void *src, uint64_t n)
{
	return state_put(m, dst, src, n);
}

/* ---- the run ------------------------------------------------------------------------- */

/* --level-trace: record one level (t_off/t_edge: the arrays' counters before it) and
 * say it on stderr. Returns -ENOMEM if the record cannot grow. */
static int trace_level(struct gres *r, uint64_t src, uint64_t frontier, int scan, double s, struct bam_array *aoff,
		       struct bam_array *aedge, const struct bam_array_stats *t_off, const struct bam_array_stats *t_edge)
{
	r->trace_src = src;
	if ((r->trace_n & (r->trace_n - 1)) == 0) { /* 0, 1, 2, 4, ...: double */
		struct level_rec *t = realloc(r->trace, (r->trace_n ? 2 * r->trace_n : 1) * sizeof(*t));
		if (!t) {
			cli_fail("bam bfs: out of memory for the level trace\n");
			return -ENOMEM;
		}
		r->trace = t;
	}
	struct level_rec *l = &r->trace[r->trace_n++];
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
	fprintf(stderr, "bam bfs: source %llu, level %u: frontier %llu (%s), %.1f us", (unsigned long long)src, r->trace_n - 1,
		(unsigned long long)frontier, scan ? "scan" : "queue", s * 1e6);
	if (aoff)
		fprintf(stderr, ", line fills: offsets %llu, edges %llu", (unsigned long long)l->off_misses,
			(unsigned long long)l->edge_misses);
	fputc('\n', stderr);
	return 0;
}

/* Say why a walk failed (e: struct gv_counters.error, a positive errno); where is ""
 * or "source S, level L: ". Two are the walks' own checks of what they read: -ERANGE,
 * a neighbour id >= n, and -EBADMSG, offsets out of order or past m (graph_kern.h,
 * gv_offsets_bad). Outside bam mode the data came from the file (whose offsets the
 * loader checked), so the file is damaged; through bam it came from the storage, which
 * may also not hold what the file does (a damaged media, a back end that returns other
 * data). -EIO through bam names the first failed command's NVMe status. */
static void walk_fail(const char *who, const char *graph, const char *where, uint32_t e, uint64_t n, uint64_t m,
		      const struct gmem *gm)
{
	const char *why = gm->ctx ? "the file is damaged ('bam graph info --verify' checks it), or the storage does not hold "
				    "the graph as the file has it (damaged media, or a back end that returns other data)"
				  : "the file is damaged; 'bam graph info --verify' names it";
	if (e == ERANGE) {
		cli_fail("%s: %s: %sa neighbour id read is out of range (>= n = %llu): %s\n", who, graph, where,
			 (unsigned long long)n, why);
	} else if (e == EBADMSG) {
		cli_fail("%s: %s: %sthe offsets read are out of order or past the arc count (m = %llu): %s\n", who, graph,
			 where, (unsigned long long)m, why);
	} else if (e == EIO && gm->ctx) {
		/* the device's sticky record of the first failed command (struct bam_dev) */
		const uint8_t *d = (const uint8_t *)bam_ctx_dev(gm->ctx);
		uint32_t status = 0;
		uint64_t count = 0;
		const int got = !bam_mem_copy(gm->ctx, &status, d + offsetof(struct bam_dev, error_status), sizeof(status)) &&
				!bam_mem_copy(gm->ctx, &count, d + offsetof(struct bam_dev, n_errors), sizeof(count));
		if (got && status)
			cli_fail("%s: %s%s: the first failed command's NVMe status: %s (%llu failures recorded)\n", who, where,
				 bam_strerror(-(int)e), nvme_status_name((uint16_t)status), (unsigned long long)count);
		else
			cli_fail("%s: %s%s\n", who, where, bam_strerror(-(int)e));
	} else {
		cli_fail("%s: %s%s\n", who, where, bam_strerror(-(int)e));
	}
}

/* walk_fail for BFS source src at level 'level'. */
static void bfs_walk_fail(const char *who, const char *graph, uint64_t src, uint32_t level, uint32_t e, uint64_t n,
			  uint64_t m, const struct gmem *gm)
{
	char where[64];
	snprintf(where, sizeof(where), "source %llu, level %u: ", (unsigned long long)src, level);
	walk_fail(who, graph, where, e, n, m, gm);
}

/* --offsets=memory: copy the offsets array from the storage (through the cache, as any
 * read) into target memory, then point the walks at the copy (gv->off_a NULL, off_p
 * the copy, *mem to free). The copy's time goes to r->off_copy_s. Returns 0 or a
 * negative errno (the error said). */
static int off_to_memory(struct graph_view *gv, struct gmem *gm, const char *who, const char *graph, void **mem,
			 struct gres *r)
{
	const uint64_t bytes = (gv->n + 1) * gv->off_bytes;
	void *dst = state_alloc(gm, bytes);
	if (!dst) {
		cli_fail("%s: --offsets=memory: out of %s memory for the offsets (%llu bytes)\n",
			 who, gm->gpu ? "GPU" : "host", (unsigned long long)bytes);
		return -ENOMEM;
	}
	*mem = dst;
	const double t0 = cli_now();
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
	r->off_copy_s = cli_now() - t0;
	if (!rc && cv.error) {
		walk_fail(who, graph, "copying the offsets to memory: ", cv.error, gv->n, gv->m, gm);
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
static int part_setup(struct graph_view *gv, struct gmem *gm, const char *who, const char *graph, struct gres *r,
		      uint64_t line_edges)
{
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
	const double t0 = cli_now();
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
		walk_fail(who, graph, "finding the edge ranges: ", cv.error, nv, m, gm);
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
			cli_fail("%s: %s: the edge ranges are not in order (range %llu starts at vertex %llu, the next at %llu)\n",
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
		cli_fail("%s: out of memory for the edge ranges (%llu)\n", who, (unsigned long long)np);
	else if (rc && rc != -EINVAL && !cv.error)
		cli_fail("%s: finding the edge ranges: %s\n", who, bam_strerror(rc));
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
	r->part_s = cli_now() - t0;
	r->nparts = np;
	r->nranges = gv->nranges;
	r->part_edges = E;
	return rc;
}

/* dst[0, n) = src[0, n) as 4-byte offsets (the caller checked they fit) */
static void off_narrow(uint32_t *dst, const uint64_t *src, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		dst[i] = (uint32_t)src[i];
}

/* Put offsets[0, count) onto the back end as 4-byte entries (array a of elem_size 4),
 * 1 Mi entries at a time. */
static int media_write_off32(struct bam_array *a, const uint64_t *off, uint64_t count)
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

/* bfs without --source on a graph without a vertex of out-degree >= 2 (after "bam bfs: ") */
#define NO_SOURCE_MSG "no vertex with at least two out-neighbours to start from: give one with --source=V"

/* Does the graph file (header h, already checked) have a vertex of out-degree >= 2, a
 * default BFS source (bam_graph_pick_sources)? Reads its offsets array in 1 MiB pieces
 * and stops at the first such vertex, so the usual answer costs one read and only a
 * graph without one is read whole, before anything is loaded. Returns 1 (yes), 0 (no),
 * or -1 with a message in err (a read error or a short file). Offsets that decrease
 * count as a yes here: the load that follows refuses them with its own message. */
static int has_default_source(const char *path, const struct bam_graph_header *h, char *err, size_t errlen)
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

static int run_graph(const struct gopts *given, int do_cc, struct gres *r)
{
	struct gopts opts = *given;
	if (!opts.line)
		opts.line = do_cc ? CC_LINE_DEFAULT : BFS_LINE_DEFAULT;
	const struct gopts *o = &opts;
	/* the messages' prefix: "bam bfs" or "bam cc"; run by bam demo, "bam demo: bfs" or
	 * "bam demo: cc" */
	char who[24];
	snprintf(who, sizeof(who), "bam %s%s", o->demo ? "demo: " : "", do_cc ? "cc" : "bfs");
	char err[512];
	struct bam_graph_header hdr;
	memset(r, 0, sizeof(*r));
	int rc = bam_graph_header_read(o->graph, &hdr, err, sizeof(err));
	if (rc) {
		cli_fail("%s: %s\n", who, err);
		return 1;
	}
	const uint64_t n = hdr.n_vertices, m = hdr.n_edges;
	/* offsets 4 bytes wide when every offset (at most m) fits: half the offset lines */
	if (o->off_bytes == 4 && m > UINT32_MAX) {
		cli_fail("%s: --offset-bytes=4: %s has %llu edges, more than 4-byte offsets can count (%llu)\n",
			 who, o->graph, (unsigned long long)m, (unsigned long long)UINT32_MAX);
		return 2;
	}
	const uint32_t ob = o->off_bytes ? o->off_bytes : m <= UINT32_MAX ? 4u : 8u;
	const uint64_t off_total = (n + 1) * ob; /* bytes of the offsets as the kernels read them */
	r->off_bytes = ob;
	enum bam_target tgt = o->target;
	if (tgt == BAM_TARGET_AUTO) {
#ifdef BAM_HAVE_CUDA
		tgt = bam_gpu_available() ? BAM_TARGET_GPU : BAM_TARGET_CPU;
#else
		tgt = BAM_TARGET_CPU;
#endif
	}
	if (tgt == BAM_TARGET_CPU && (o->warps || o->level_loop)) {
		cli_fail("%s: %s applies to the GPU target (this run is on the CPU target)\n",
			 who, o->warps ? "--warps" : "--level-loop");
		return 2;
	}
	if (tgt == BAM_TARGET_CPU && (o->mode == MODE_GPU || o->mode == MODE_UVM)) {
		cli_fail("%s: --mode=%s needs a GPU (this run is on the CPU target); use --mode=bam or host\n",
			who, mode_names[o->mode]);
		return 2;
	}
#ifndef BAM_HAVE_CUDA
	if (tgt == BAM_TARGET_GPU) {
		cli_fail("%s: --target=gpu: this build has no CUDA\n", who);
		return 2;
	}
#endif
	/* BFS's default sources are vertices of out-degree >= 2 (bam_graph_pick_sources):
	 * a graph of fewer than 2 arcs has none, which the header says. Refused here, in
	 * every mode, before the memory checks and the load of the offsets (8 bytes a
	 * vertex: 16 GiB for 2^31 vertices), not after them */
	if (!do_cc && o->source < 0 && m < 2) {
		cli_fail("%s: %s (%s has %llu arc%s)\n", who, NO_SOURCE_MSG, o->graph, (unsigned long long)m, m == 1 ? "" : "s");
		return 1;
	}
	/* a given source out of range, and a graph of 2 or more arcs without a vertex of
	 * out-degree >= 2, are refused from the header and the offsets too, not after the
	 * load */
	if (!do_cc && o->source >= 0 && (uint64_t)o->source >= n) {
		if (n)
			cli_fail("%s: --source=%lld: the graph has %llu vertices (ids 0 to %llu)\n", who, (long long)o->source,
				 (unsigned long long)n, (unsigned long long)(n - 1));
		else
			cli_fail("%s: --source=%lld: the graph has no vertices\n", who, (long long)o->source);
		return 2;
	}
	if (!do_cc && o->source < 0) {
		const int any = has_default_source(o->graph, &hdr, err, sizeof(err));
		if (any <= 0) {
			if (any < 0)
				cli_fail("%s: %s\n", who, err);
			else
				cli_fail("%s: %s (no vertex of %s has more than one out-arc)\n", who, NO_SOURCE_MSG, o->graph);
			return 1;
		}
	}
	struct gmem gm = {.gpu = tgt == BAM_TARGET_GPU};
	r->on_gpu = gm.gpu;
#ifdef BAM_HAVE_CUDA
	if (gm.gpu)
		graph_gpu_prepare();
#endif
	/* the cache of --mode=bam: refused before anything is loaded if it cannot fit in
	 * the target's memory */
	uint64_t cache_bytes = o->cache_bytes ? o->cache_bytes : hdr.edges_bytes / 8;
	if (cache_bytes < (1u << 20))
		cache_bytes = 1u << 20;
	/* no more than the arrays hold (in whole lines): more would only cost set-up */
	const uint64_t data_bytes = (off_total + o->line - 1) / o->line * o->line +
				    (hdr.edges_bytes + o->line - 1) / o->line * o->line + 2ull * o->line;
	if (cache_bytes > data_bytes)
		cache_bytes = data_bytes > (1u << 20) ? data_bytes : (1u << 20);
	if (o->mode == MODE_BAM) {
		struct bam_cache_opts cop = {.capacity = cache_bytes, .line_size = o->line};
		if (bam_cache_fits(tgt, &cop, err, sizeof(err)) == -ENOMEM) {
			cli_fail("%s: %s%s: %s\n", who, o->cache_arg ? "--cache-size=" : "the default cache size",
				o->cache_arg ? o->cache_arg : " (1/8 of the edges)", err);
			return 1;
		}
	}
	int fd = open(o->graph, O_RDONLY);
	if (fd < 0) {
		cli_fail("%s: %s: %s\n", who, o->graph, strerror(errno));
		return 1;
	}
	int exit_code = 1;
	static struct cli_media media; /* (128 KiB: not on the stack) */
	media.n = 0;
	struct bam_csr ref = {0};
	uint64_t *sources = NULL;
	uint32_t nsrc = 0;
	void *off_mem = NULL, *edge_mem = NULL;
	int mem_kind = -1;
	struct bam_cache *cache = NULL;
	struct bam_array *aoff = NULL, *aedge = NULL;
	struct gv_counters *ctr = NULL;
	void *s1 = NULL, *s2 = NULL, *s3 = NULL, *s5 = NULL, *s6 = NULL, *s7 = NULL;

	/* host memory the run takes before its kernels start, refused up front when more
	 * than the machine has available (else the OOM killer ends it partway through
	 * loading): the reference copy of the arrays and per-vertex state (always); the
	 * baselines' copy read from the file and the narrowed offsets, and in host mode on
	 * the GPU the pinned copy as well; bam's namespaces when the emulator keeps them in
	 * host memory (emu without media=gpu or media=file; the emulator checks them again
	 * when it opens), and on the CPU target bam's cache */
	{
		const uint64_t arrays = hdr.offsets_bytes + hdr.edges_bytes;
		uint64_t need = arrays + 32 * (n + 1), avail = 0;
		if (o->mode != MODE_BAM)
			need += arrays + off_total + (gm.gpu && o->mode == MODE_HOST ? off_total + hdr.edges_bytes : 0);
		else if (cli_backend_media_in_memory(o->backend) && !cli_backend_media_gpu(o->backend))
			need += data_bytes;
		if (o->mode == MODE_BAM && !gm.gpu) /* the CPU target's cache is host memory, */
			need += cache_bytes + (o->off_mem ? off_total : 0); /* and --offsets=memory's copy */
		if (!bam_mem_available(BAM_TARGET_CPU, BAM_MEM_HOST_PINNED, &avail) && need > avail) {
			cli_fail("%s: %s: --mode=%s needs about %.1f GiB of host memory for this graph (%llu vertices, %llu edges), more than the %.1f GiB available\n",
				 who, o->graph, mode_names[o->mode], (double)need / (double)(1ull << 30),
				 (unsigned long long)n, (unsigned long long)m, (double)avail / (double)(1ull << 30));
			goto out;
		}
	}
	/* host CSR for the reference, the source choice and degrees (not timed) */
	if ((rc = bam_graph_load(o->graph, &ref, err, sizeof(err)))) {
		cli_fail("%s: %s\n", who, err);
		goto out;
	}
	/* an answer verified against the reference must come from the file as written:
	 * its array checksums first (the loader checks only the header and offsets) */
	if (o->verify && (rc = bam_graph_check_crcs(o->graph, &hdr, &ref, err, sizeof(err)))) {
		cli_fail("%s: %s: the file is damaged ('bam graph info --verify' checks the whole file)\n",
			 who, err);
		goto out;
	}
	if (!do_cc) {
		uint32_t want = o->source >= 0 ? 1 : o->nsources;
		sources = calloc(want, 8);
		if (!sources) {
			cli_fail("%s: out of memory for %u sources\n", who, want);
			goto out;
		}
		if (o->source >= 0) { /* (checked < n above) */
			sources[0] = (uint64_t)o->source;
			nsrc = 1;
		} else if ((rc = bam_graph_pick_sources(&ref, want, o->seed, sources, &nsrc)) || nsrc == 0) {
			cli_fail("%s: %s\n", who, NO_SOURCE_MSG);
			goto out;
		}
	}

	struct graph_view gv;
	memset(&gv, 0, sizeof(gv));
	gv.n = n;
	gv.m = m;
	gv.id_bytes = hdr.id_bytes;
	gv.off_bytes = ob;
	if (o->mode == MODE_BAM) {
		uint32_t k = cli_backend_count(o->backend);
		uint64_t lines = (off_total + o->line - 1) / o->line / k + 1 + (hdr.edges_bytes + o->line - 1) / o->line / k + 1;
		char backend[1024];
		if (cli_backend_sized(o->backend, lines * o->line * k, o->line, backend, sizeof(backend))) {
			cli_fail("%s: the graph's arrays are too large for emulated namespaces (past 2^64 bytes)\n",
				 who);
			goto out;
		}
		/* the media must not be the graph file (the provisioning would overwrite it);
		 * media files this run creates are removed again if it fails */
		cli_media_note(&media, backend);
		if (media.incomplete) { /* (more names than any back end takes: it would refuse them) */
			cli_fail("%s: --backend=%s: its media files could not all be listed (more than %d, a path past "
				 "PATH_MAX, or out of memory): at most %d controllers\n",
				 who, o->backend, CLI_MEDIA_MAX, CLI_MEDIA_MAX);
			media.n = 0;
			exit_code = 2;
			goto out;
		}
		const char *same = cli_media_same(&media, fd);
		if (same) {
			cli_fail("%s: --backend=%s: %s is the graph file %s itself: its media would overwrite it\n",
				 who, o->backend, same, o->graph);
			media.n = 0;
			exit_code = 2;
			goto out;
		}
		struct bam_ctx_opts co = {.target = tgt, .qpairs = o->qpairs, .timeout_ns = o->timeout_ms * 1000000ull,
					  .ctrl_workers = o->workers};
		if ((rc = bam_ctx_open(backend, &co, &gm.ctx, err, sizeof(err)))) {
			exit_code = cli_backend_fail(who, o->backend, rc, err);
			if (strstr(err, "(give size= to create it)")) {
				/* a media file to create (emu's media=file or the file back end; the
				 * latter says -EIO): say how large, what the check below wants */
				const uint32_t kk = !strncmp(backend, "file", 4) && media.n ? (uint32_t)media.n : k;
				const uint64_t per = ns_need(off_total, (m ? m : 1) * hdr.id_bytes, o->line, kk);
				cli_fail("%s: this graph needs %llu bytes on each of %u controllers (%u-byte lines): "
					 "size=%llu creates the media files at that size\n",
					 who, (unsigned long long)per, kk, o->line,
					 (unsigned long long)((per + 4095) / 4096 * 4096));
			}
			goto out;
		}
		snprintf(r->backend_desc, sizeof(r->backend_desc), "%s", bam_ctx_backend_desc(gm.ctx));
		/* a size= (or a file) too small for the arrays: said as such, before the
		 * library's own refusal of the array that does not fit. Each array takes its
		 * lines striped over the controllers, rounded up, on each (bam_array_create) */
		const uint32_t nk = bam_ctx_ctrl_count(gm.ctx);
		const uint64_t need = ns_need(off_total, (m ? m : 1) * hdr.id_bytes, o->line, nk);
		for (uint32_t c = 0; c < nk; c++) {
			struct bam_ns_info ns;
			if (bam_ctx_ns_info(gm.ctx, c, &ns) == 0 && ns.nlba * ns.lba_size < need) {
				cli_fail("%s: --backend=%s: controller %u holds %llu bytes, but the graph's offsets and edges need %llu on each of %u (%u-byte lines): %s\n",
					 who, o->backend, c, (unsigned long long)(ns.nlba * ns.lba_size),
					 (unsigned long long)need, nk, o->line,
					 strncmp(backend, "emu", 3) ? "give larger files or devices (or size=)"
								    : "give a larger size=, or leave size= out to size the emulated namespaces to the graph");
				exit_code = 2;
				goto out;
			}
		}
		struct bam_cache_opts cop = {.capacity = cache_bytes, .line_size = o->line};
		/* BFS reads the offsets of every level's frontier: kept before the edges'
		 * lines, which a level mostly reads once (fewer offsets fills on each
		 * level's chain of dependent reads; results/graph.md) */
		r->off_prio = o->off_prio >= 0 ? o->off_prio : !do_cc;
		struct bam_array_opts ao = {.n_elems = n + 1, .elem_size = ob, .priority = (uint32_t)r->off_prio};
		r->cache_bytes = cache_bytes;
		r->line = o->line;
		double tc = cli_now();
		if ((rc = bam_cache_create(gm.ctx, &cop, &cache)) || (rc = bam_array_create(cache, &ao, &aoff))) {
			/* the library said why on stderr; the JSON message gets it too */
			cli_fail_note("%s: creating the cache and the offsets array failed: %s: %s\n",
				      who, bam_strerror(rc), bam_ctx_error(gm.ctx));
			if (rc == -EINVAL) /* options that do not go together (--line-size against the
					    * back end's LBA size): refused, as other bad options are */
				exit_code = 2;
			goto out;
		}
		struct bam_array_opts ae = {.n_elems = m ? m : 1, .elem_size = hdr.id_bytes, .base_lba = bam_array_end_lba(aoff)};
		if ((rc = bam_array_create(cache, &ae, &aedge))) {
			cli_fail_note("%s: creating the edge array failed: %s: %s\n",
				      who, bam_strerror(rc), bam_ctx_error(gm.ctx));
			goto out;
		}
		r->setup_s = cli_now() - tc; /* cache and arrays: reported, not in end-to-end */
		/* provisioning: put the arrays on the (emulated) SSDs, as dd would before a
		 * run; not part of the end-to-end time: the data lives on storage */
		double tp = cli_now();
		if ((rc = ob == 8 ? bam_array_media_write(aoff, 0, ref.offsets, n + 1) : media_write_off32(aoff, ref.offsets, n + 1)) ||
		    (m && (rc = bam_array_media_write(aedge, 0, ref.edges, m)))) {
			cli_fail("%s: writing the graph onto the back end failed: %s\n", who, bam_strerror(rc));
			goto out;
		}
		r->load_s = cli_now() - tp;
		gv.bam = 1;
		gv.off_a = bam_array_dev(aoff);
		gv.edge_a = bam_array_dev(aedge);
	} else {
		/* baselines: the graph file is read into memory first (end-to-end includes it) */
		double tl = cli_now();
		void *hoff = malloc(hdr.offsets_bytes), *hedge = malloc(hdr.edges_bytes ? hdr.edges_bytes : 1);
		if (!hoff || !hedge || pread_all(fd, hoff, hdr.offsets_bytes, hdr.offsets_offset) ||
		    pread_all(fd, hedge, hdr.edges_bytes, hdr.edges_offset)) {
			cli_fail("%s: reading %s failed\n", who, o->graph);
			free(hoff);
			free(hedge);
			goto out;
		}
		r->load_s = cli_now() - tl;
		double ts = cli_now();
		if (ob == 4) { /* narrowed (in the set-up time, so in end-to-end) */
			uint32_t *o32 = malloc(off_total);
			if (!o32) {
				cli_fail("%s: out of memory for the offsets (%llu bytes)\n",
					who, (unsigned long long)off_total);
				free(hoff);
				free(hedge);
				goto out;
			}
			off_narrow(o32, hoff, n + 1);
			free(hoff);
			hoff = o32;
		}
		if (gm.gpu) {
#ifdef BAM_HAVE_CUDA
			mem_kind = o->mode == MODE_GPU ? 0 : o->mode == MODE_HOST ? 1 : 2;
			off_mem = graph_gpu_alloc(mem_kind, off_total);
			edge_mem = graph_gpu_alloc(mem_kind, hdr.edges_bytes ? hdr.edges_bytes : 1);
			if (!off_mem || !edge_mem || graph_gpu_upload(off_mem, hoff, off_total) ||
			    graph_gpu_upload(edge_mem, hedge, hdr.edges_bytes)) {
				cli_fail("%s: --mode=%s: cannot place the graph (%llu bytes)\n",
					who, mode_names[o->mode], (unsigned long long)(off_total + hdr.edges_bytes));
				free(hoff);
				free(hedge);
				goto out;
			}
			free(hoff);
			free(hedge);
#endif
		} else {
			off_mem = hoff;
			edge_mem = hedge;
			mem_kind = -2; /* malloc */
		}
		r->setup_s = cli_now() - ts;
		gv.off_p = off_mem;
		gv.edge_p = edge_mem;
		snprintf(r->backend_desc, sizeof(r->backend_desc), "%s memory", mode_names[o->mode]);
	}
	/* one block of counters per level / iteration (graph_kern.h, struct gv_counters) */
	ctr = state_alloc(&gm, sizeof(*ctr));
	/* the chunk queue of long neighbour lists (graph_kern.h, GV_CHUNK) */
	gv.heavy_cap = gv_heavy_cap(m);
	gv.max_blocks = (o->warps + 7) / 8; /* 0: the default */
	gv.heavy = s5 = state_alloc(&gm, gv.heavy_cap * sizeof(struct gv_chunk));
	if (!gv.heavy || !ctr) {
		cli_fail("%s: out of memory for per-run state\n", who);
		goto out;
	}
	static const struct gv_counters zero_ctr;
	state_put(&gm, ctr, &zero_ctr, sizeof(zero_ctr));
	gv.ctr = ctr;

	if (o->mode == MODE_BAM && o->off_mem && (rc = off_to_memory(&gv, &gm, who, o->graph, &s7, r)))
		goto out;
	double compute = 0;
	if (!do_cc && o->edge_ranges && o->frontier != FRONTIER_QUEUE) { /* (no scan level: no ranges) */
		rc = part_setup(&gv, &gm, who, o->graph, r, o->edge_ranges == 2 ? o->line / gv.id_bytes : 0);
		s6 = (void *)gv.ranges;
		if (rc)
			goto out;
		compute += r->part_s;
	}
	if (!do_cc) {
		struct bfs_state b = {0};
		b.level = s1 = state_alloc(&gm, n * 4);
		b.cur = s2 = state_alloc(&gm, n * 8);
		b.next = s3 = state_alloc(&gm, n * 8);
		uint32_t *lv = malloc(n * 4), *rl = malloc(n * 4);
		if (!b.level || !b.cur || !b.next || !lv || !rl) {
			cli_fail("%s: out of memory for per-vertex state\n", who);
			free(lv);
			free(rl);
			goto out;
		}
		r->verified = o->verify ? 1 : 0;
		/* GPU: the level loop runs on the device (graph_gpu.h), but with --level-loop=host
		 * or --level-trace (which times each level from the host) */
		void *dloop = NULL;
		const uint64_t scan_min = o->frontier == FRONTIER_SCAN	    ? 0
					  : o->frontier == FRONTIER_QUEUE ? UINT64_MAX
									  : n / (o->scan_fraction ? o->scan_fraction : SCAN_FRACTION);
#ifdef BAM_HAVE_CUDA
		const int host_loop = o->level_loop && !strcmp(o->level_loop, "host");
		if (gm.gpu && !host_loop && !o->level_trace && (rc = graph_gpu_bfs_loop_create(&gv, &dloop))) {
			cli_fail("%s: the device level loop could not be built (see above; --level-loop=host avoids it)\n", who);
			free(lv);
			free(rl);
			goto out;
		}
#endif
		r->level_loop = dloop ? "device" : "host";
		for (uint32_t si = 0; si < nsrc; si++) {
			uint64_t src = sources[si];
			memset(lv, 0xff, n * 4);
			lv[src] = 0;
			state_put(&gm, b.level, lv, n * 4);
			state_put(&gm, b.cur, &src, 8);
			b.cur_n = 1;
			b.depth = 0;
			double t0 = cli_now(), last_progress = t0;
#ifdef BAM_HAVE_CUDA
			if (dloop) {
				struct bfs_loop L = {.b = b, .scan_min = scan_min};
				L.max_depth = n < UINT32_MAX ? (uint32_t)n + 1 : UINT32_MAX;
				struct gv_counters cv = {0};
				if ((rc = graph_gpu_bfs_loop_run(dloop, &L, &cv)))
					goto out_bfs;
				r->levels_scan += L.levels_scan;
				r->levels_queue += L.levels_queue;
				r->chunks += L.chunks;
				b = L.b; /* the frontier buffers may have swapped */
				if (cv.error) {
					bfs_walk_fail(who, o->graph, src, b.depth ? b.depth - 1 : 0, cv.error, n, m, &gm);
					rc = -(int)cv.error;
					goto out_bfs;
				}
				if (b.cur_n) { /* cannot happen: n + 1 levels */
					cli_fail("%s: source %llu: the device level loop stopped after %u levels with a frontier left\n",
						 who, (unsigned long long)src, b.depth);
					rc = -EIO;
					goto out_bfs;
				}
			}
#endif
			while (b.cur_n) {
				struct gv_counters cv = {0};
				const int scan = b.cur_n >= scan_min;
				const int tr = o->level_trace && si == 0;
				struct bam_array_stats t_off, t_edge;
				double t_l = 0;
				if (tr) {
					if (aoff) {
						bam_array_stats(aoff, &t_off);
						bam_array_stats(aedge, &t_edge);
					}
					t_l = cli_now();
				}
				if (scan)
					r->levels_scan++;
				else
					r->levels_queue++;
				if (gm.gpu) {
#ifdef BAM_HAVE_CUDA
					if ((rc = graph_gpu_bfs_level(&gv, &b, scan, &cv)))
						goto out_bfs;
#endif
				} else {
					ctr->next_n = ctr->heavy_n = ctr->range_next = 0;
					struct cpu_walk c = {&gv, &b, NULL, cpu_per(n)};
					if (scan)
						bam_cpu_launch(gv.ranges ? gv.nranges : (n + c.per - 1) / c.per, cpu_workers(),
							       cpu_range_fn, &c);
					else /* at least 8 frontier vertices per host thread: a thread
					      * created per vertex of a small level cost more than it */
						bam_cpu_launch(b.cur_n, b.cur_n / 8 < cpu_workers() ? (uint32_t)(b.cur_n / 8 + 1) : cpu_workers(),
							       cpu_bfs_fn, &c);
					bam_cpu_launch(gv_chunks_queued(&gv), cpu_workers(), cpu_chunk_fn, &c);
					cv = *ctr;
				}
				const uint32_t e = cv.error;
				const uint64_t nn = cv.next_n;
				r->chunks += cv.heavy_n;
				if (e) {
					bfs_walk_fail(who, o->graph, src, b.depth, e, n, m, &gm);
					rc = -(int)e;
					goto out_bfs;
				}
				if (tr && (rc = trace_level(r, src, b.cur_n, scan, cli_now() - t_l, aoff, aedge, &t_off, &t_edge)))
					goto out_bfs;
				uint64_t *t = b.cur;
				b.cur = b.next;
				b.next = t;
				b.cur_n = nn;
				b.depth++;
				if (!o->quiet && !o->json && cli_now() - last_progress > 2.0) {
					last_progress = cli_now();
					fprintf(stderr, "%s: source %u/%u, level %u done, next frontier %llu vertices, %.1f s\n",
						who, si + 1, nsrc, b.depth, (unsigned long long)nn, last_progress - t0);
				}
			}
			double dt = cli_now() - t0;
			compute += dt;
			state_get(&gm, lv, b.level, n * 4);
			uint64_t reached_edges = 0;
			for (uint64_t v = 0; v < n; v++)
				if (lv[v] != 0xffffffffu)
					reached_edges += ref.offsets[v + 1] - ref.offsets[v];
			r->edges_traversed += reached_edges;
			if (b.depth > r->levels_max)
				r->levels_max = b.depth;
			if (o->verify) {
				uint32_t nl;
				if ((rc = bam_ref_bfs(&ref, src, rl, &nl)))
					goto out_bfs;
				if (memcmp(lv, rl, n * 4)) {
					uint64_t bad = 0;
					while (bad < n && lv[bad] == rl[bad])
						bad++;
					cli_fail("%s: source %llu: level of vertex %llu is %u, reference says %u\n",
						who, (unsigned long long)src, (unsigned long long)bad, lv[bad], rl[bad]);
					r->verified = -1;
				}
			}
			if (!o->quiet && !o->json && (nsrc > 1 && (compute > 2.0 || si + 1 == nsrc)))
				fprintf(stderr, "%s: source %u/%u done (vertex %llu: %.3f s, %u levels)\n", who, si + 1, nsrc,
					(unsigned long long)src, dt, b.depth);
			r->runs++;
		}
		rc = 0;
	out_bfs:
#ifdef BAM_HAVE_CUDA
		graph_gpu_bfs_loop_destroy(dloop);
#endif
		free(lv);
		free(rl);
		if (rc)
			goto out;
	} else {
		struct cc_state c = {0};
		c.label = s1 = state_alloc(&gm, n * 8);
		uint64_t *lab = malloc(n * 8), *rlab = NULL;
		if (!c.label || !lab) {
			cli_fail("%s: out of memory for per-vertex state\n", who);
			free(lab);
			goto out;
		}
		for (uint64_t v = 0; v < n; v++)
			lab[v] = v;
		state_put(&gm, c.label, lab, n * 8);
		double t0 = cli_now();
		/* one pass (graph_kern.h: union-find over all arcs, then flattening) */
		do {
			struct gv_counters cv = {0};
			if (gm.gpu) {
#ifdef BAM_HAVE_CUDA
				if ((rc = graph_gpu_cc_pass(&gv, &c, &cv)))
					break;
#endif
			} else {
				ctr->heavy_n = 0;
				uint32_t w = cpu_workers();
				struct cpu_walk cc = {&gv, NULL, &c, cpu_per(n)};
				bam_cpu_launch((n + cc.per - 1) / cc.per, w, cpu_range_fn, &cc);
				bam_cpu_launch(gv_chunks_queued(&gv), w, cpu_chunk_fn, &cc);
				bam_cpu_launch((n + cc.per - 1) / cc.per, w, cpu_flatten_fn, &cc);
				cv = *ctr;
			}
			const uint32_t e = cv.error;
			r->chunks += cv.heavy_n;
			if (e) {
				walk_fail(who, o->graph, "", e, n, m, &gm);
				rc = -(int)e;
				break;
			}
			r->passes++;
		} while (0);
		compute = cli_now() - t0;
		if (!rc) {
			state_get(&gm, lab, c.label, n * 8);
			for (uint64_t v = 0; v < n; v++)
				r->components += lab[v] == v;
			r->edges_traversed = m * r->passes;
			r->runs = 1;
			r->verified = o->verify ? 1 : 0;
			if (o->verify) {
				rlab = malloc(n * 8);
				uint64_t nc = 0;
				if (!rlab || bam_ref_cc(&ref, rlab, &nc)) {
					cli_fail("%s: reference failed\n", who);
					r->verified = -1;
				} else if (memcmp(lab, rlab, n * 8) || nc != r->components) {
					uint64_t bad = 0;
					while (bad < n && lab[bad] == rlab[bad])
						bad++;
					cli_fail("%s: label of vertex %llu is %llu, reference says %llu\n", who, (unsigned long long)bad,
						(unsigned long long)(bad < n ? lab[bad] : 0), (unsigned long long)(bad < n ? rlab[bad] : 0));
					r->verified = -1;
				}
			}
		}
		free(lab);
		free(rlab);
		if (rc)
			goto out;
	}
	r->compute_s = compute;
	if (o->mode != MODE_BAM)
		r->e2e_s = r->load_s + r->setup_s + compute;
	else
		r->e2e_s = r->off_copy_s + compute; /* data already on storage: nothing to load
						     * (but the offsets with --offsets=memory) */
	if (aoff) {
		bam_array_stats(aoff, &r->st_off);
		bam_array_stats(aedge, &r->st_edge);
	}
	r->complete = 1;
	exit_code = r->verified < 0 ? 1 : 0;
out:
	if (cache)
		bam_cache_destroy(cache);
	if (gm.ctx)
		bam_ctx_close(gm.ctx);
	if (exit_code)
		cli_media_forget(&media);
	else
		cli_media_keep(&media);
	state_free(&gm, s1);
	state_free(&gm, s2);
	state_free(&gm, s3);
	state_free(&gm, s5);
	state_free(&gm, s6);
	state_free(&gm, s7);
	state_free(&gm, ctr);
	if (mem_kind == -2) {
		free(off_mem);
		free(edge_mem);
	}
#ifdef BAM_HAVE_CUDA
	else if (mem_kind >= 0) {
		graph_gpu_free(mem_kind, off_mem);
		graph_gpu_free(mem_kind, edge_mem);
	}
#endif
	free(sources);
	bam_csr_free(&ref);
	close(fd);
	return exit_code;
}

/* The result as a JSON object (the caller owns it). */
static cJSON *result_json(const struct gopts *o, int do_cc, const struct gres *r)
{
	const char *alg = do_cc ? "cc" : "bfs";
	double teps = r->compute_s > 0 ? (double)r->edges_traversed / r->compute_s : 0;
	{
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "algorithm", alg);
		cli_json_add_str(j, "graph", o->graph);
		cJSON_AddStringToObject(j, "mode", mode_names[o->mode]);
		cJSON_AddStringToObject(j, "target", r->on_gpu ? "gpu" : "cpu");
		cli_json_add_str(j, "storage", r->backend_desc);
		cJSON_AddNumberToObject(j, "runs", r->runs);
		cJSON_AddNumberToObject(j, "compute_s", r->compute_s);
		cJSON_AddNumberToObject(j, "compute_s_per_run", r->runs ? r->compute_s / r->runs : 0);
		cJSON_AddNumberToObject(j, "load_s", r->load_s);
		cJSON_AddNumberToObject(j, "setup_s", r->setup_s);
		cJSON_AddNumberToObject(j, "end_to_end_s", r->e2e_s);
		cJSON_AddNumberToObject(j, "edges_per_s", teps);
		if (o->warps)
			cJSON_AddNumberToObject(j, "warps", (o->warps + 7) / 8 * 8);
		cJSON_AddNumberToObject(j, "offset_bytes", r->off_bytes);
		if (do_cc) {
			cJSON_AddNumberToObject(j, "passes", r->passes);
			cJSON_AddNumberToObject(j, "components", (double)r->components);
		} else {
			cJSON_AddNumberToObject(j, "max_levels", r->levels_max);
			cJSON_AddStringToObject(j, "frontier", frontier_names[o->frontier]);
			cJSON_AddNumberToObject(j, "scan_fraction", (double)(o->scan_fraction ? o->scan_fraction : SCAN_FRACTION));
			cJSON_AddNumberToObject(j, "levels_scan", r->levels_scan);
			cJSON_AddNumberToObject(j, "levels_queue", r->levels_queue);
			cJSON_AddStringToObject(j, "level_loop", r->level_loop ? r->level_loop : "host");
			cJSON_AddStringToObject(j, "scan_ranges", !r->nparts ? "vertices" : o->edge_ranges == 2 ? "lines" : "edges");
			if (r->nparts) {
				cJSON_AddNumberToObject(j, "edge_ranges", (double)r->nparts);
				cJSON_AddNumberToObject(j, "scan_work_items", (double)r->nranges);
				cJSON_AddNumberToObject(j, "edges_per_range", (double)r->part_edges);
				cJSON_AddNumberToObject(j, "edge_ranges_s", r->part_s);
			}
			if (r->trace_n) {
				cJSON_AddNumberToObject(j, "level_trace_source", (double)r->trace_src);
				cJSON *a = cJSON_AddArrayToObject(j, "level_trace");
				for (uint32_t k = 0; k < r->trace_n; k++) {
					cJSON *e = cJSON_CreateObject();
					cJSON_AddNumberToObject(e, "frontier", (double)r->trace[k].frontier);
					cJSON_AddStringToObject(e, "found_by", r->trace[k].scan ? "scan" : "queue");
					cJSON_AddNumberToObject(e, "s", r->trace[k].s);
					if (o->mode == MODE_BAM) { /* no cache in the other modes */
						cJSON_AddNumberToObject(e, "offset_misses", (double)r->trace[k].off_misses);
						cJSON_AddNumberToObject(e, "edge_misses", (double)r->trace[k].edge_misses);
					}
					cJSON_AddItemToArray(a, e);
				}
			}
		}
		cJSON_AddNumberToObject(j, "long_list_chunks", (double)r->chunks);
		cJSON_AddStringToObject(j, "verified", r->verified > 0 ? "yes" : r->verified < 0 ? "MISMATCH" : "not checked");
		if (o->mode == MODE_BAM) {
			double req = (double)(r->st_off.c.bytes_requested + r->st_edge.c.bytes_requested);
			double mv = (double)(r->st_off.c.bytes_read + r->st_edge.c.bytes_read);
			cJSON_AddNumberToObject(j, "cache_bytes", (double)r->cache_bytes);
			cJSON_AddNumberToObject(j, "line_size", r->line);
			cJSON_AddStringToObject(j, "offsets_priority", r->off_prio ? "high" : "normal");
			cJSON_AddStringToObject(j, "offsets", o->off_mem ? "memory" : "storage");
			if (o->off_mem)
				cJSON_AddNumberToObject(j, "offsets_copy_s", r->off_copy_s);
			cJSON_AddNumberToObject(j, "io_amplification", req > 0 ? mv / req : 0);
			cJSON_AddNumberToObject(j, "bytes_read", mv);
			cJSON_AddNumberToObject(j, "edge_hits", (double)r->st_edge.c.hits);
			cJSON_AddNumberToObject(j, "edge_misses", (double)r->st_edge.c.misses);
			cJSON_AddNumberToObject(j, "edge_accesses", (double)r->st_edge.c.accesses);
		}
		return j;
	}
}

/* status: the exit status; non-zero (a verification mismatch) only with --json, where the
 * results come with the error object (cli_util.h) */
static void print_result(const struct gopts *o, int do_cc, const struct gres *r, int status)
{
	const char *alg = do_cc ? "cc" : "bfs";
	double teps = r->compute_s > 0 ? (double)r->edges_traversed / r->compute_s : 0;
	if (o->json) {
		cJSON *j = result_json(o, do_cc, r);
		if (status) {
			cJSON_AddItemToObject(j, "error", cli_json_error(status));
			cli_json_printed();
		}
		char *s = cJSON_PrintUnformatted(j);
		printf("%s\n", s);
		free(s);
		cJSON_Delete(j);
		return;
	}
	printf("%s ", alg);
	cli_text_escaped(stdout, o->graph); /* (a file name can hold a terminal's escape sequences) */
	printf(": mode=%s target=%s storage=", mode_names[o->mode], r->on_gpu ? "gpu" : "cpu");
	cli_text_escaped(stdout, r->backend_desc); /* (media paths, as the graph's) */
	printf(" offsets=%u bytes\n", r->off_bytes);
	if (do_cc)
		printf("  components=%llu passes over the arcs=%u compute=%.3f s (%.3g edges/s)\n",
		       (unsigned long long)r->components, r->passes, r->compute_s, teps);
	else
		printf("  sources=%u compute=%.3f s (%.4f s per source) max levels=%u traversed edges/s=%.3g\n"
		       "  frontier=%s: %u levels by scan of the level array, %u by queue (all sources); level loop on the %s\n",
		       r->runs, r->compute_s, r->runs ? r->compute_s / r->runs : 0, r->levels_max, teps,
		       frontier_names[o->frontier], r->levels_scan, r->levels_queue,
		       r->level_loop ? r->level_loop : "host");
	if (!do_cc && r->nparts)
		printf("  scan levels: %llu edge ranges of %llu edges%s, %llu work items (making them: %.4f s, in compute)\n",
		       (unsigned long long)r->nparts, (unsigned long long)r->part_edges, o->edge_ranges == 2 ? " (a line each)" : "",
		       (unsigned long long)r->nranges, r->part_s);
	if (r->chunks)
		printf("  neighbour lists over %u edges: walked as %llu chunks spread over all warps\n", GV_CHUNK,
		       (unsigned long long)r->chunks);
	if (o->mode == MODE_BAM && o->off_mem)
		printf("  end-to-end=%.3f s (copying the offsets from storage to memory %.4f s + compute; writing the\n"
		       "  graph onto storage took %.3f s and creating the cache and arrays %.3f s, not counted)\n",
		       r->e2e_s, r->off_copy_s, r->load_s, r->setup_s);
	else if (o->mode == MODE_BAM)
		printf("  end-to-end=%.3f s (the graph lives on storage; writing it there took %.3f s and creating the\n"
		       "  cache and arrays %.3f s, not counted)\n",
		       r->e2e_s, r->load_s, r->setup_s);
	else
		printf("  end-to-end=%.3f s (read file %.3f s + place %.3f s + compute; page cache warm if recently read)\n",
		       r->e2e_s, r->load_s, r->setup_s);
	if (o->mode == MODE_BAM) {
		printf("  cache: %llu bytes, %u-byte lines%s, offsets %s\n", (unsigned long long)r->cache_bytes,
		       r->line,
		       o->cache_bytes && o->cache_bytes < r->cache_bytes   ? " (raised to the 1 MiB minimum)"
		       : o->cache_bytes && o->cache_bytes > r->cache_bytes ? " (capped at what the arrays hold)"
									   : "",
		       o->off_mem ? "copied to memory (their reads below are the copy's)"
		       : r->off_prio ? "priority high" : "priority normal");
		bam_array_stats_print(stdout, "offsets", &r->st_off);
		bam_array_stats_print(stdout, "edges", &r->st_edge);
		printf("  (accesses: elements read; hits/misses: cache lookups, one per warp group or line taken;\n"
		       "   I/O amplification: bytes read from storage / bytes requested, below 1 when lines are reused)\n");
	}
	printf("  verified: %s\n", r->verified > 0 ? "yes, equal to the CPU reference" : r->verified < 0 ? "NO: MISMATCH" : "not checked (--verify)");
}

/* The value of a two-valued option --NAME: 0 for a, 1 for b; -1 for anything else (said,
 * as "expected a or b"). */
static int opt_pick2(const char *cmd, const char *name, const char *arg, const char *a, const char *b)
{
	if (!strcmp(arg, a))
		return 0;
	if (!strcmp(arg, b))
		return 1;
	cli_fail("bam %s: --%s=%s: expected %s or %s\n", cmd, name, arg, a, b);
	return -1;
}

static int parse_common(int argc, char **argv, struct gopts *o, const char *cmd)
{
	static const struct option lo[] = {
		{"mode", 1, 0, 'M'}, {"backend", 1, 0, 'B'}, {"cache-size", 1, 0, 'C'}, {"line-size", 1, 0, 'L'},
		{"sources", 1, 0, 'n'}, {"source", 1, 0, 's'}, {"seed", 1, 0, 'S'}, {"target", 1, 0, 'g'},
		{"verify", 0, 0, 'v'}, {"json", 0, 0, 'j'}, {"quiet", 0, 0, 'q'}, {"qpairs", 1, 0, 'Q'},
		{"ctrl-workers", 1, 0, 'w'}, {"timeout-ms", 1, 0, 'o'}, {"frontier", 1, 0, 'F'},
		{"scan-fraction", 1, 0, 'x'},
		{"level-trace", 0, 0, 'T'}, {"level-loop", 1, 0, 'P'}, {"warps", 1, 0, 'W'}, {"scan-ranges", 1, 0, 'R'},
		{"offset-bytes", 1, 0, 'O'}, {"offsets-priority", 1, 0, 'y'}, {"offsets", 1, 0, 'Z'},
		{"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	int ch;
	static char who[16]; /* the messages' prefix, "bam bfs"; argv[0] for getopt's messages */
	snprintf(who, sizeof(who), "bam %s", cmd);
	argv[0] = who;
	cli_json_init(cmd, argc, argv, "h", lo, 'j'); /* --json: failures print an error object too */
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		uint64_t v;
		switch (ch) {
		case 'M': {
			int k = cli_name_index(mode_names, 4, optarg);
			if (k < 0) {
				cli_fail("bam %s: --mode=%s: expected bam, host, gpu or uvm\n", cmd, optarg);
				return 2;
			}
			o->mode = (enum gmode)k;
			break;
		}
		case 'B':
			if (cli_backend_arg(who, optarg))
				return 2;
			o->backend = optarg;
			o->bam_only = "--backend";
			break;
		case 'C':
			if (bam_parse_size(optarg, &o->cache_bytes) || !o->cache_bytes) {
				cli_fail("bam %s: --cache-size=%s: a size in bytes with an optional K, M, G or T suffix, above 0\n", cmd, optarg);
				return 2;
			}
			o->cache_arg = optarg;
			o->bam_only = "--cache-size";
			break;
		case 'L':
			if (bam_parse_size(optarg, &v) || v < 512 || v > 65536 || (v & (v - 1))) {
				cli_fail("bam %s: --line-size=%s: a power of two from 512 to 64K\n", cmd, optarg);
				return 2;
			}
			o->line = (uint32_t)v;
			o->bam_only = "--line-size";
			break;
		case 'n':
			if (cli_u32(optarg, 1, 1u << 20, &o->nsources)) {
				cli_fail("bam %s: --sources=%s: a count from 1 to 1048576\n", cmd, optarg);
				return 2;
			}
			o->bfs_only = "--sources";
			o->nsources_set = 1;
			break;
		case 's': if (cli_u64(optarg, 0, INT64_MAX, &v)) goto bad; o->source = (int64_t)v; o->bfs_only = "--source"; break;
		case 'S': if (cli_u64(optarg, 0, UINT64_MAX, &o->seed)) goto bad; o->bfs_only = "--seed"; break;
		case 'g':
			if (!strcmp(optarg, "gpu")) o->target = BAM_TARGET_GPU;
			else if (!strcmp(optarg, "cpu")) o->target = BAM_TARGET_CPU;
			else if (!strcmp(optarg, "auto")) o->target = BAM_TARGET_AUTO;
			else goto bad;
			break;
		case 'F': {
			int k = cli_name_index(frontier_names, 3, optarg);
			if (k < 0) {
				cli_fail("bam %s: --frontier=%s: expected auto, queue or scan\n", cmd, optarg);
				return 2;
			}
			o->frontier = k;
			o->bfs_only = "--frontier";
			break;
		}
		case 'x':
			if (cli_u64(optarg, 1, 1048576, &o->scan_fraction)) goto bad;
			o->bfs_only = "--scan-fraction";
			break;
		case 'T': o->level_trace = 1; o->bfs_only = "--level-trace"; break;
		case 'P':
			if (opt_pick2(cmd, "level-loop", optarg, "device", "host") < 0)
				return 2;
			o->level_loop = optarg;
			o->bfs_only = "--level-loop";
			break;
		case 'R': {
			if (strcmp(optarg, "vertices") && strcmp(optarg, "lines") && strcmp(optarg, "edges")) {
				cli_fail("bam %s: --scan-ranges=%s: expected vertices, lines or edges\n", cmd, optarg);
				return 2;
			}
			o->edge_ranges = !strcmp(optarg, "lines") ? 2 : !strcmp(optarg, "edges");
			o->bfs_only = "--scan-ranges";
			break;
		}
		case 'O':
			if (!strcmp(optarg, "auto"))
				o->off_bytes = 0;
			else if (!strcmp(optarg, "4") || !strcmp(optarg, "8"))
				o->off_bytes = (uint32_t)(optarg[0] - '0');
			else {
				cli_fail("bam %s: --offset-bytes=%s: expected 4, 8 or auto\n", cmd, optarg);
				return 2;
			}
			break;
		case 'y': {
			const int pick = opt_pick2(cmd, "offsets-priority", optarg, "high", "normal");
			if (pick < 0)
				return 2;
			o->off_prio = pick == 0;
			o->bam_only = "--offsets-priority";
			break;
		}
		case 'Z': {
			const int pick = opt_pick2(cmd, "offsets", optarg, "storage", "memory");
			if (pick < 0)
				return 2;
			o->off_mem = pick == 1;
			o->bam_only = "--offsets";
			break;
		}
		case 'v': o->verify = 1; break;
		case 'j': o->json = 1; break;
		case 'q': o->quiet = 1; break;
		case 'Q': if (cli_u32(optarg, 1, 65535, &o->qpairs)) goto bad; o->bam_only = "--qpairs"; break;
		case 'w': if (cli_u32(optarg, 1, 1024, &o->workers)) goto bad; o->bam_only = "--ctrl-workers"; break;
		case 'W':
			if (cli_u32(optarg, 8, 1u << 20, &o->warps)) {
				cli_fail("bam %s: --warps=%s: a count from 8 to 1048576\n", cmd, optarg);
				return 2;
			}
			break;
		case 'o': if (cli_u64(optarg, 1, 3600000, &o->timeout_ms)) goto bad; o->bam_only = "--timeout-ms"; break;
		case 'h': usage(stdout, cmd); return -1;
		default: /* getopt said what is wrong on stderr */
			cli_fail_note("bam %s: bad option '%s': unknown, ambiguous or missing its value (bam %s --help)\n", cmd,
				      argv[optind - 1], cmd);
			/* the one line, not the whole usage: the error would scroll away */
			fprintf(stderr, "usage: bam %s %s [options]     (all options: bam %s --help)\n", cmd,
				strcmp(cmd, "demo") ? "GRAPH" : "[INPUT]", cmd);
			return 2;
		bad: {
			char hint[96];
			cli_fail("bam %s: bad value '%s' for %s%s\n", cmd, optarg, argv[optind - 1],
				 cli_range_hint(optarg, hint, sizeof(hint)));
			return 2;
		}
		}
	}
	return 0;
}

static int graph_cmd(int argc, char **argv, int do_cc)
{
	const char *cmd = do_cc ? "cc" : "bfs";
	struct gopts o = {.backend = "emu", .nsources = BAM_GRAPH_DEFAULT_SOURCES, .seed = 1, .source = -1,
			  .timeout_ms = 10000, .off_prio = -1};
	int rc = parse_common(argc, argv, &o, cmd);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (optind != argc - 1) {
		cli_fail("bam %s: expected one GRAPH argument, got %d\n", cmd, argc - optind);
		usage(stderr, cmd);
		return 2;
	}
	o.graph = argv[optind];
	if (do_cc && o.bfs_only) {
		cli_fail("bam cc: %s applies to bfs only\n", o.bfs_only);
		return 2;
	}
	if (o.mode != MODE_BAM && o.bam_only) {
		cli_fail("bam %s: %s applies to --mode=bam only (--mode=%s reads the graph without the cache or a back end)\n",
			 cmd, o.bam_only, mode_names[o.mode]);
		return 2;
	}
	if (o.source >= 0 && o.nsources_set) {
		cli_fail("bam bfs: --source=V and --sources=N: give one (a given source, or N random ones)\n");
		return 2;
	}
	struct gres r;
	rc = run_graph(&o, do_cc, &r);
	/* a verification mismatch has results: with --json they come with the error */
	if (rc == 0 || (o.json && r.complete))
		print_result(&o, do_cc, &r, rc);
	free(r.trace);
	return rc;
}

int bam_cmd_bfs(int argc, char **argv) { return graph_cmd(argc, argv, 0); }
int bam_cmd_cc(int argc, char **argv) { return graph_cmd(argc, argv, 1); }

/* ---- demo: the main job on a fresh machine ------------------------------------------ */

int bam_cmd_demo(int argc, char **argv)
{
	struct gopts o = {.backend = "emu", .seed = 1, .source = -1, .verify = 1, .timeout_ms = 10000, .off_prio = -1};
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: bam demo [INPUT] [options]\n"
			       "The main job: import INPUT (a text graph: SNAP, Matrix Market, LAW graph-txt or arc\n"
			       "list, gzip or not; default $BAM_SHARED_DATA/graphs/cnr-2000.graph-txt.gz, with\n"
			       "BAM_SHARED_DATA defaulting to ../shared/data) into .work/NAME.bcsr, then run BFS\n"
			       "(4 sources on the CPU target, 32 on a GPU) and CC through bam on the emulated SSD,\n"
			       "verify both against the CPU reference and print a summary. Exit 0 only if both match.\n"
			       "Options as for bam bfs: --backend --cache-size --line-size --sources --source --seed\n"
			       "--frontier --scan-fraction --scan-ranges --offset-bytes --offsets-priority --offsets --target --qpairs --ctrl-workers --timeout-ms\n"
			       "--warps --json --quiet\n");
			return 0;
		}
	o.demo = 1;
	int rc = parse_common(argc, argv, &o, "demo");
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *input = optind < argc ? argv[optind] : NULL;
	if (optind + 1 < argc) {
		cli_fail("bam demo: unexpected argument '%s' (one INPUT at most)\n", argv[optind + 1]);
		return 2;
	}
	if (o.level_trace || o.level_loop) {
		cli_fail("bam demo: %s applies to bam bfs only\n", o.level_trace ? "--level-trace" : "--level-loop");
		return 2;
	}
	if (o.mode != MODE_BAM) {
		cli_fail("bam demo: runs through bam only (--mode=%s is for bam bfs and bam cc)\n", mode_names[o.mode]);
		return 2;
	}
	if (o.source >= 0 && o.nsources_set) {
		cli_fail("bam demo: --source=V and --sources=N: give one (a given source, or N random ones)\n");
		return 2;
	}
	/* what can be refused before the import is (the import takes seconds) */
	int gpu_here = 0;
#ifdef BAM_HAVE_CUDA
	gpu_here = o.target != BAM_TARGET_CPU && bam_gpu_available();
#endif
	if (o.warps && !gpu_here) {
		cli_fail("bam demo: --warps applies to the GPU target (this run is on the CPU target)\n");
		return 2;
	}
	if ((rc = cli_backend_precheck("bam demo", o.backend, o.backend,
				       gpu_here                        ? NULL
				       : o.target == BAM_TARGET_GPU ? "no usable CUDA device was found"
								    : "this run is on the CPU target")))
		return rc;
	char def[1024];
	const int given = input != NULL;
	if (!input) {
		const char *sd = getenv("BAM_SHARED_DATA");
		snprintf(def, sizeof(def), "%s/graphs/cnr-2000.graph-txt.gz", sd ? sd : "../shared/data");
		input = def;
	}
	if (access(input, R_OK)) {
		cli_fail("bam demo: cannot read %s: %s%s\n", input, strerror(errno),
			 given ? "" : " (the default input: give a graph as an argument, or set BAM_SHARED_DATA to the folder holding graphs/)");
		return 1;
	}
	mkdir(".work", 0755);
	/* .work/NAME.bcsr, NAME = the input's file name up to its first dot */
	char name[256], outbuf[300];
	const char *base = strrchr(input, '/');
	base = base ? base + 1 : input;
	size_t bl = strlen(base) < sizeof(name) - 1 ? strlen(base) : sizeof(name) - 1;
	memcpy(name, base, bl);
	name[bl] = 0;
	char *dot = strchr(name, '.');
	if (dot && dot != name)
		*dot = 0;
	snprintf(outbuf, sizeof(outbuf), ".work/%s.bcsr", name);
	const char *out = outbuf;
	{ /* the import would replace its own input: refused as graph import refuses it */
		struct stat si, so;
		if (!stat(input, &si) && !stat(out, &so) && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
			cli_fail("bam demo: %s: the input is the file demo imports to (%s): move or rename it\n", input, out);
			return 2;
		}
		/* nor may the back end's media be the input (bfs and cc check them against the
		 * imported graph only) */
		static struct cli_media md; /* (128 KiB: not on the stack) */
		cli_media_note(&md, o.backend);
		/* (no media files, nothing to open; O_NONBLOCK, O_NOCTTY: a FIFO or a terminal
		 * named as the input must not block here or become ours; the import refuses
		 * them) */
		const int fd = md.n ? open(input, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) : -1;
		const char *same = fd >= 0 ? cli_media_same(&md, fd) : NULL;
		if (fd >= 0)
			close(fd);
		cli_media_keep(&md); /* (a check only: the runs note their media again) */
		if (same) {
			cli_fail("bam demo: --backend=%s: %s is the input %s itself: its media would overwrite it\n", o.backend,
				 same, input);
			return 2;
		}
	}
	char err[512];
	/* progress on stderr as bfs and cc give it: not with --quiet or --json */
	const int progress = !o.quiet && !o.json;
	struct bam_graph_build_opts bo = {.progress = progress ? stderr : NULL};
	struct bam_graph_build_stats bs;
	double t0 = cli_now();
	if (progress)
		fprintf(stderr, "bam demo: importing %s -> %s\n", input, out);
	enum bam_graph_format fmt;
	bam_graph_format_parse("auto", &fmt);
	if ((rc = bam_graph_import(input, out, fmt, &bo, &bs, err, sizeof(err)))) {
		cli_fail("bam demo: import failed: %s\n", err);
		return 1;
	}
	double t_imp = cli_now() - t0;
	o.graph = out;
	struct gres rb, rcc;
	int target_gpu = 0;
#ifdef BAM_HAVE_CUDA
	target_gpu = o.target == BAM_TARGET_GPU || (o.target == BAM_TARGET_AUTO && bam_gpu_available());
#endif
	o.nsources = o.nsources ? o.nsources : (target_gpu ? 32 : 4);
	if (progress)
		fprintf(stderr, "bam demo: BFS from %u source%s through bam (%s)\n", o.nsources, o.nsources == 1 ? "" : "s",
			o.backend);
	if ((rc = run_graph(&o, 0, &rb)))
		return rc;
	if (!o.json)
		print_result(&o, 0, &rb, 0);
	if (progress)
		fprintf(stderr, "bam demo: connected components through bam\n");
	if ((rc = run_graph(&o, 1, &rcc)))
		return rc;
	int equal = rb.verified > 0 && rcc.verified > 0;
	if (o.json) {
		/* one JSON object: the import, both runs, the verdict */
		cJSON *j = cJSON_CreateObject();
		cli_json_add_str(j, "graph", name);
		cli_json_add_str(j, "input", input);
		cJSON_AddNumberToObject(j, "vertices", (double)bs.n_vertices);
		cJSON_AddNumberToObject(j, "arcs", (double)bs.n_edges);
		cJSON_AddNumberToObject(j, "import_s", t_imp);
		cJSON_AddItemToObject(j, "bfs", result_json(&o, 0, &rb));
		cJSON_AddItemToObject(j, "cc", result_json(&o, 1, &rcc));
		cJSON_AddBoolToObject(j, "equal_to_reference", equal);
		if (!equal) {
			cli_fail_note("bam demo: the results differ from the CPU reference\n");
			cJSON_AddItemToObject(j, "error", cli_json_error(1));
			cli_json_printed();
		}
		char *s = cJSON_PrintUnformatted(j);
		printf("%s\n", s);
		free(s);
		cJSON_Delete(j);
		return equal ? 0 : 1;
	}
	print_result(&o, 1, &rcc, 0);
	printf("\ndemo summary: %s (%llu vertices, %llu arcs) imported in %.2f s; BFS %u source%s %.3f s, "
	       "CC %llu component%s %.3f s; results %s the CPU reference\n",
	       name, (unsigned long long)bs.n_vertices, (unsigned long long)bs.n_edges, t_imp, rb.runs, rb.runs == 1 ? "" : "s", rb.compute_s, (unsigned long long)rcc.components, rcc.components == 1 ? "" : "s", rcc.compute_s,
	       equal ? "EQUAL to" : "DIFFER from");
	return equal ? 0 : 1;
}
