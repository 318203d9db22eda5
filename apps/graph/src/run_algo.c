/* SPDX-License-Identifier: MIT */
/*
 * run_algo.c - the algorithms of bam_graph_run, after run.c's set-up: BFS from each
 * source (the level loop on the device, or driven from the host level by level) and
 * the CC pass, each result checked against the CPU reference when asked.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "run_internal.h"
#ifdef BAM_HAVE_CUDA
#include "graph_gpu.h"
#endif

/* the BFS state of the walks and its host copies */
struct bfs_run {
	struct bfs_state b;
	uint32_t *lv, *rl;    /* host: the levels found, the reference's */
	void *dloop;          /* the device level loop (graph_gpu.h), or NULL */
	uint64_t scan_min;    /* a level scans when its frontier holds at least this many */
};

/* The host-driven level loop of one source (si: its index). 0 or a negative errno (said). */
static int bfs_host_levels(struct run *R, struct bfs_run *B, uint32_t si, uint64_t src, double t0)
{
	const struct bam_graph_run_opts *o = R->o;
	struct bam_graph_run_result *r = R->r;
	struct bfs_state *b = &B->b;
	double last_progress = t0;
	int rc;
	while (b->cur_n) {
		struct gv_counters cv = {0};
		const int scan = b->cur_n >= B->scan_min;
		const int tr = o->level_trace && si == 0;
		struct bam_array_stats t_off, t_edge;
		double t_l = 0;
		if (tr) {
			if (R->aoff) {
				bam_array_stats(R->aoff, &t_off);
				bam_array_stats(R->aedge, &t_edge);
			}
			t_l = run_now();
		}
		if (scan)
			r->levels_scan++;
		else
			r->levels_queue++;
		if (R->gm.gpu) {
#ifdef BAM_HAVE_CUDA
			if ((rc = graph_gpu_bfs_level(&R->gv, b, scan, &cv)))
				return rc;
#endif
		} else {
			cpu_bfs_level(R, b, scan);
			cv = *R->ctr;
		}
		const uint32_t e = cv.error;
		const uint64_t nn = cv.next_n;
		r->chunks += cv.heavy_n;
		if (e) {
			bfs_walk_fail(R, src, b->depth, e);
			return -(int)e;
		}
		if (tr && (rc = trace_level(R, src, b->cur_n, scan, run_now() - t_l, &t_off, &t_edge)))
			return rc;
		uint64_t *t = b->cur;
		b->cur = b->next;
		b->next = t;
		b->cur_n = nn;
		b->depth++;
		if (!o->quiet && run_now() - last_progress > 2.0) {
			last_progress = run_now();
			run_msg(R, BAM_GRAPH_MSG_PROGRESS, "%s: source %u/%u, level %u done, next frontier %llu vertices, %.1f s",
				R->who, si + 1, R->nsrc, b->depth, (unsigned long long)nn, last_progress - t0);
		}
	}
	return 0;
}

#ifdef BAM_HAVE_CUDA
/* The device level loop of one source. 0 or a negative errno (said). */
static int bfs_device_levels(struct run *R, struct bfs_run *B, uint64_t src)
{
	struct bam_graph_run_result *r = R->r;
	struct bfs_state *b = &B->b;
	const uint64_t n = R->n;
	struct bfs_loop L = {.b = *b, .scan_min = B->scan_min};
	L.max_depth = n < UINT32_MAX ? (uint32_t)n + 1 : UINT32_MAX;
	struct gv_counters cv = {0};
	int rc;
	if ((rc = graph_gpu_bfs_loop_run(B->dloop, &L, &cv)))
		return rc;
	r->levels_scan += L.levels_scan;
	r->levels_queue += L.levels_queue;
	r->chunks += L.chunks;
	*b = L.b; /* the frontier buffers may have swapped */
	if (cv.error) {
		bfs_walk_fail(R, src, b->depth ? b->depth - 1 : 0, cv.error);
		return -(int)cv.error;
	}
	if (b->cur_n) { /* cannot happen: n + 1 levels */
		run_fail(R, "%s: source %llu: the device level loop stopped after %u levels with a frontier left\n",
			 R->who, (unsigned long long)src, b->depth);
		return -EIO;
	}
	return 0;
}
#endif

/* BFS from source si: the levels, the reached arcs, the check against the reference.
 * 0 or a negative errno (said; a mismatch is not an error: res->verified -1). */
static int bfs_source(struct run *R, struct bfs_run *B, uint32_t si)
{
	const struct bam_graph_run_opts *o = R->o;
	struct bam_graph_run_result *r = R->r;
	struct bfs_state *b = &B->b;
	const uint64_t n = R->n;
	uint64_t src = R->sources[si];
	int rc = 0;
	memset(B->lv, 0xff, n * 4);
	B->lv[src] = 0;
	state_put(&R->gm, b->level, B->lv, n * 4);
	state_put(&R->gm, b->cur, &src, 8);
	b->cur_n = 1;
	b->depth = 0;
	double t0 = run_now();
#ifdef BAM_HAVE_CUDA
	if (B->dloop && (rc = bfs_device_levels(R, B, src)))
		return rc;
#endif
	if ((rc = bfs_host_levels(R, B, si, src, t0)))
		return rc;
	double dt = run_now() - t0;
	R->compute += dt;
	state_get(&R->gm, B->lv, b->level, n * 4);
	if (si == 0 && o->levels_out)
		memcpy(o->levels_out, B->lv, n * 4);
	uint64_t reached_edges = 0, reached = 0;
	for (uint64_t v = 0; v < n; v++)
		if (B->lv[v] != 0xffffffffu) {
			reached_edges += R->ref.offsets[v + 1] - R->ref.offsets[v];
			reached++;
		}
	r->edges_traversed += reached_edges;
	if (b->depth > r->levels_max)
		r->levels_max = b->depth;
	struct bam_graph_source *s = &r->sources[si];
	*s = (struct bam_graph_source){.vertex = src, .levels = b->depth, .s = dt, .edges = reached_edges,
				       .verified = o->verify ? 1 : 0, .reached = reached};
	if (o->verify) {
		uint32_t nl;
		if ((rc = bam_ref_bfs(&R->ref, src, B->rl, &nl)))
			return rc;
		if (memcmp(B->lv, B->rl, n * 4)) {
			uint64_t bad = 0;
			while (bad < n && B->lv[bad] == B->rl[bad])
				bad++;
			run_msg(R, BAM_GRAPH_MSG_VERIFY, "%s: source %llu: level of vertex %llu is %u, reference says %u",
				R->who, (unsigned long long)src, (unsigned long long)bad, B->lv[bad], B->rl[bad]);
			r->verified = -1;
			s->verified = -1;
		}
	}
	if (!o->quiet && (R->nsrc > 1 && (R->compute > 2.0 || si + 1 == R->nsrc)))
		run_msg(R, BAM_GRAPH_MSG_PROGRESS, "%s: source %u/%u done (vertex %llu: %.3f s, %u levels)", R->who, si + 1,
			R->nsrc, (unsigned long long)src, dt, b->depth);
	r->runs++;
	return 0;
}

int run_bfs(struct run *R)
{
	const struct bam_graph_run_opts *o = R->o;
	struct bam_graph_run_result *r = R->r;
	const uint64_t n = R->n;
	struct bfs_run B = {0};
	int rc = 0;
	B.b.level = R->s1 = state_alloc(&R->gm, n * 4);
	B.b.cur = R->s2 = state_alloc(&R->gm, n * 8);
	B.b.next = R->s3 = state_alloc(&R->gm, n * 8);
	B.lv = malloc(n * 4);
	B.rl = malloc(n * 4);
	r->sources = calloc(R->nsrc, sizeof(*r->sources));
	if (!B.b.level || !B.b.cur || !B.b.next || !B.lv || !B.rl || !r->sources) {
		run_fail(R, "%s: out of memory for per-vertex state\n", R->who);
		rc = -ENOMEM;
		goto out;
	}
	r->verified = o->verify ? 1 : 0;
	/* GPU: the level loop runs on the device (graph_gpu.h), but with --level-loop=host
	 * or --level-trace (which times each level from the host) */
	B.scan_min = o->frontier == BAM_GRAPH_FRONTIER_SCAN    ? 0
		     : o->frontier == BAM_GRAPH_FRONTIER_QUEUE ? UINT64_MAX
							       : n / (o->scan_fraction ? o->scan_fraction : BAM_GRAPH_SCAN_FRACTION);
#ifdef BAM_HAVE_CUDA
	const int host_loop = o->level_loop == BAM_GRAPH_LOOP_HOST;
	if (R->gm.gpu && !host_loop && !o->level_trace && (rc = graph_gpu_bfs_loop_create(&R->gv, &B.dloop))) {
		run_fail(R, "%s: the device level loop could not be built (see above; --level-loop=host avoids it)\n", R->who);
		goto out;
	}
#endif
	r->level_loop = B.dloop ? "device" : "host";
	for (uint32_t si = 0; si < R->nsrc && !rc; si++)
		rc = bfs_source(R, &B, si);
out:
#ifdef BAM_HAVE_CUDA
	graph_gpu_bfs_loop_destroy(B.dloop);
#endif
	free(B.lv);
	free(B.rl);
	return rc;
}

/* check the CC labels against the reference (res->verified) */
static void cc_verify(struct run *R, const uint64_t *lab)
{
	struct bam_graph_run_result *r = R->r;
	const uint64_t n = R->n;
	uint64_t *rlab = malloc(n * 8);
	uint64_t nc = 0;
	if (!rlab || bam_ref_cc(&R->ref, rlab, &nc)) {
		run_msg(R, BAM_GRAPH_MSG_VERIFY, "%s: reference failed", R->who);
		r->verified = -1;
	} else if (memcmp(lab, rlab, n * 8) || nc != r->components) {
		uint64_t bad = 0;
		while (bad < n && lab[bad] == rlab[bad])
			bad++;
		run_msg(R, BAM_GRAPH_MSG_VERIFY, "%s: label of vertex %llu is %llu, reference says %llu", R->who,
			(unsigned long long)bad, (unsigned long long)(bad < n ? lab[bad] : 0),
			(unsigned long long)(bad < n ? rlab[bad] : 0));
		r->verified = -1;
	}
	free(rlab);
}

int run_cc(struct run *R)
{
	const struct bam_graph_run_opts *o = R->o;
	struct bam_graph_run_result *r = R->r;
	const uint64_t n = R->n, m = R->m;
	struct cc_state c = {0};
	int rc = 0;
	c.label = R->s1 = state_alloc(&R->gm, n * 8);
	uint64_t *lab = malloc(n * 8);
	if (!c.label || !lab) {
		run_fail(R, "%s: out of memory for per-vertex state\n", R->who);
		free(lab);
		return -ENOMEM;
	}
	for (uint64_t v = 0; v < n; v++)
		lab[v] = v;
	state_put(&R->gm, c.label, lab, n * 8);
	double t0 = run_now();
	/* one pass (graph_kern.h: union-find over all arcs, then flattening) */
	do {
		struct gv_counters cv = {0};
		if (R->gm.gpu) {
#ifdef BAM_HAVE_CUDA
			if ((rc = graph_gpu_cc_pass(&R->gv, &c, &cv)))
				break;
#endif
		} else {
			cpu_cc_pass(R, &c);
			cv = *R->ctr;
		}
		const uint32_t e = cv.error;
		r->chunks += cv.heavy_n;
		if (e) {
			walk_fail(R, "", e);
			rc = -(int)e;
			break;
		}
		r->passes++;
	} while (0);
	R->compute = run_now() - t0;
	if (!rc) {
		state_get(&R->gm, lab, c.label, n * 8);
		for (uint64_t v = 0; v < n; v++)
			r->components += lab[v] == v;
		if (o->labels_out)
			memcpy(o->labels_out, lab, n * 8);
		r->edges_traversed = m * r->passes;
		r->runs = 1;
		r->verified = o->verify ? 1 : 0;
		if (o->verify)
			cc_verify(R, lab);
	}
	free(lab);
	return rc;
}
