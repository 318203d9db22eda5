/* SPDX-License-Identifier: MIT */
/*
 * run.c - bam_graph_run (bam/graph_run.h): the checks made before anything is loaded,
 * the set-up of bam mode (back end, cache, arrays, provisioning) and of the baselines
 * (the file read into host, pinned, GPU or managed memory), the walks' state, and the
 * result. The algorithms' loops are in run_algo.c, their helpers in run_walk.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bam/backend.h"
#include "bam/nvme_spec.h"
#include "run_internal.h"
#ifdef BAM_HAVE_CUDA
#include "graph_gpu.h"
#endif

static const char *const mode_names[] = {"bam", "host", "gpu", "uvm"};
static const char *const frontier_names[] = {"auto", "queue", "scan"};

const char *bam_graph_mode_name(enum bam_graph_mode m)
{
	return (unsigned)m < 4 ? mode_names[m] : NULL;
}

const char *bam_graph_frontier_name(enum bam_graph_frontier f)
{
	return (unsigned)f < 3 ? frontier_names[f] : NULL;
}

double run_now(void)
{
	return gr_now();
}

void run_fail(struct run *R, const char *fmt, ...)
{
	if (!R->err || !R->errlen)
		return;
	size_t at = strlen(R->err);
	if (at && at + 1 < R->errlen)
		R->err[at++] = '\n';
	if (at + 1 >= R->errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(R->err + at, R->errlen - at, fmt, ap);
	va_end(ap);
	size_t n = strlen(R->err);
	while (n > at && R->err[n - 1] == '\n') /* the line's own newline */
		R->err[--n] = 0;
}

void run_msg(struct run *R, enum bam_graph_msg kind, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (R->o->msg)
		R->o->msg(R->o->msg_arg, kind, line);
	else
		fprintf(stderr, "%s\n", line);
}

/* ---- what the back-end string asks for (bam_backend_info) ------------------------------ */

/* For a string the back end refuses: one controller and no flags (the open refuses it
 * with the message). */
static struct bam_backend_info backend_info(const char *backend)
{
	struct bam_backend_info info;
	if (bam_backend_info(backend, &info, NULL, 0)) {
		memset(&info, 0, sizeof(info));
		info.n_ctrl = 1;
	}
	return info;
}

static int count_cb(void *arg, const char *path)
{
	(void)path;
	++*(int *)arg;
	return 0;
}

/* The number of media files the string names (0 for a string the back end refuses). */
static int media_count(const char *backend)
{
	int n = 0;
	if (bam_backend_media(backend, count_cb, &n, NULL, 0))
		return 0;
	return n;
}

/* size= added where the back end creates media of a size the caller may choose; a
 * string the back end refuses is copied (the open refuses it with the message).
 * 0, or -EOVERFLOW when that size passes 2^64. */
static int backend_sized(const char *backend, uint64_t total, uint64_t align, char *out, size_t outlen)
{
	const int rc = bam_backend_sized(backend, total, align, out, outlen, NULL, 0);
	if (rc == -EINVAL) {
		snprintf(out, outlen, "%s", backend);
		return 0;
	}
	return rc;
}

/* ---- before anything is loaded ------------------------------------------------------- */

/* the options against the header and the target; 0 or a negative errno (said) */
static int check_opts(struct run *R)
{
	const struct bam_graph_run_opts *o = R->o;
	struct bam_graph_run_result *r = R->r;
	const char *who = R->who;
	const int do_cc = R->do_cc;
	char err[512];
	int rc = bam_graph_header_read(o->graph, &R->hdr, err, sizeof(err));
	if (rc) {
		run_fail(R, "%s: %s\n", who, err);
		return rc;
	}
	const uint64_t n = R->hdr.n_vertices, m = R->hdr.n_edges;
	R->n = n;
	R->m = m;
	r->refused = 1; /* (until the checks of the options pass) */
	if ((o->levels_out || o->labels_out) && o->values_n != n) {
		run_fail(R, "%s: the per-vertex result buffers hold %llu entries, the graph has %llu vertices\n", who,
			 (unsigned long long)o->values_n, (unsigned long long)n);
		return -EINVAL;
	}
	/* offsets 4 bytes wide when every offset (at most m) fits: half the offset lines */
	if (o->off_bytes == 4 && m > UINT32_MAX) {
		run_fail(R, "%s: --offset-bytes=4: %s has %llu edges, more than 4-byte offsets can count (%llu)\n",
			 who, o->graph, (unsigned long long)m, (unsigned long long)UINT32_MAX);
		return -EINVAL;
	}
	R->ob = o->off_bytes ? o->off_bytes : m <= UINT32_MAX ? 4u : 8u;
	R->off_total = (n + 1) * R->ob;
	r->off_bytes = R->ob;
	R->tgt = o->target;
	if (R->tgt == BAM_TARGET_AUTO)
		R->tgt = bam_gpu_available() ? BAM_TARGET_GPU : BAM_TARGET_CPU;
	if (R->tgt == BAM_TARGET_CPU && (o->warps || o->level_loop)) {
		run_fail(R, "%s: %s applies to the GPU target (this run is on the CPU target)\n",
			 who, o->warps ? "--warps" : "--level-loop");
		return -EINVAL;
	}
	if (R->tgt == BAM_TARGET_CPU && (o->mode == BAM_GRAPH_MODE_GPU || o->mode == BAM_GRAPH_MODE_UVM)) {
		run_fail(R, "%s: --mode=%s needs a GPU (this run is on the CPU target); use --mode=bam or host\n",
			 who, mode_names[o->mode]);
		return -ENODEV;
	}
#ifndef BAM_HAVE_CUDA
	if (R->tgt == BAM_TARGET_GPU) {
		run_fail(R, "%s: --target=gpu: this build has no CUDA\n", who);
		return -ENODEV;
	}
#endif
	/* BFS's default sources are vertices of out-degree >= 2 (bam_graph_pick_sources):
	 * a graph of fewer than 2 arcs has none, which the header says. Refused here, in
	 * every mode, before the memory checks and the load of the offsets (8 bytes a
	 * vertex: 16 GiB for 2^31 vertices), not after them */
	if (!do_cc && !o->source_set && m < 2) {
		r->refused = 0;
		run_fail(R, "%s: %s (%s has %llu arc%s)\n", who, NO_SOURCE_MSG, o->graph, (unsigned long long)m, m == 1 ? "" : "s");
		return -EINVAL;
	}
	/* a given source out of range, and a graph of 2 or more arcs without a vertex of
	 * out-degree >= 2, are refused from the header and the offsets too, not after the
	 * load */
	if (!do_cc && o->source_set && o->source >= n) {
		if (n)
			run_fail(R, "%s: --source=%llu: the graph has %llu vertices (ids 0 to %llu)\n", who,
				 (unsigned long long)o->source, (unsigned long long)n, (unsigned long long)(n - 1));
		else
			run_fail(R, "%s: --source=%llu: the graph has no vertices\n", who, (unsigned long long)o->source);
		return -EINVAL;
	}
	r->refused = 0;
	if (!do_cc && !o->source_set) {
		const int any = has_default_source(o->graph, &R->hdr, err, sizeof(err));
		if (any <= 0) {
			if (any < 0)
				run_fail(R, "%s: %s\n", who, err);
			else
				run_fail(R, "%s: %s (no vertex of %s has more than one out-arc)\n", who, NO_SOURCE_MSG, o->graph);
			return any < 0 ? -EIO : -EINVAL;
		}
	}
	return 0;
}

/* the cache of bam mode: sized, and refused before anything is loaded if it cannot fit
 * in the target's memory; 0 or a negative errno (said) */
static int size_cache(struct run *R)
{
	const struct bam_graph_run_opts *o = R->o;
	char err[512];
	uint64_t cache_bytes = o->cache_bytes ? o->cache_bytes : R->hdr.edges_bytes / 8;
	if (cache_bytes < (1u << 20))
		cache_bytes = 1u << 20;
	/* no more than the arrays hold (in whole lines): more would only cost set-up */
	const uint64_t data_bytes = (R->off_total + o->line - 1) / o->line * o->line +
				    (R->hdr.edges_bytes + o->line - 1) / o->line * o->line + 2ull * o->line;
	if (cache_bytes > data_bytes)
		cache_bytes = data_bytes > (1u << 20) ? data_bytes : (1u << 20);
	R->cache_bytes = cache_bytes;
	R->data_bytes = data_bytes;
	if (o->mode == BAM_GRAPH_MODE_BAM) {
		/* placing the graph writes it onto the namespaces: on a device whose data a
		 * write destroys, only when the back-end string grants it */
		const uint32_t bfl = backend_info(o->backend).flags;
		if ((bfl & BAM_BACKEND_F_WRITE_GUARDED) && !(bfl & BAM_BACKEND_F_WRITE_ALLOWED)) {
			run_fail(R, "%s: --backend=%s: placing the graph writes %llu bytes to the device, destroying its data: "
				    "pass --allow-write (allow_write=1)\n", R->who, o->backend, (unsigned long long)data_bytes);
			R->r->refused = 1;
			return -EPERM;
		}
		struct bam_cache_opts cop = {.capacity = cache_bytes, .line_size = o->line};
		if (bam_cache_fits(R->tgt, &cop, err, sizeof(err)) == -ENOMEM) {
			run_fail(R, "%s: %s%s: %s\n", R->who, o->cache_arg ? "--cache-size=" : "the default cache size",
				 o->cache_arg ? o->cache_arg : " (1/8 of the edges)", err);
			return -ENOMEM;
		}
	}
	return 0;
}

/* Host memory the run takes before its kernels start, refused up front when more than
 * the machine has available (else the OOM killer ends it partway through loading): the
 * reference copy of the arrays and per-vertex state (always); the baselines' copy read
 * from the file and the narrowed offsets, and in host mode on the GPU the pinned copy
 * as well; bam's namespaces when the emulator keeps them in host memory (emu without
 * media=gpu or media=file; the emulator checks them again when it opens), and on the
 * CPU target bam's cache. 0 or -ENOMEM (said). */
static int check_host_memory(struct run *R)
{
	const struct bam_graph_run_opts *o = R->o;
	const struct bam_graph_header *h = &R->hdr;
	const uint64_t arrays = h->offsets_bytes + h->edges_bytes;
	uint64_t need = arrays + 32 * (R->n + 1), avail = 0;
	if (o->mode != BAM_GRAPH_MODE_BAM) {
		need += arrays + R->off_total +
			(R->gm.gpu && o->mode == BAM_GRAPH_MODE_HOST ? R->off_total + h->edges_bytes : 0);
	} else {
		const uint32_t flags = backend_info(o->backend).flags;
		if ((flags & BAM_BACKEND_F_MEDIA_MEMORY) && !(flags & BAM_BACKEND_F_MEDIA_GPU))
			need += R->data_bytes;
	}
	if (o->mode == BAM_GRAPH_MODE_BAM && !R->gm.gpu) /* the CPU target's cache is host memory, */
		need += R->cache_bytes + (o->off_mem ? R->off_total : 0); /* and --offsets=memory's copy */
	if (!bam_mem_available(BAM_TARGET_CPU, BAM_MEM_HOST_PINNED, &avail) && need > avail) {
		run_fail(R, "%s: %s: --mode=%s needs about %.1f GiB of host memory for this graph (%llu vertices, %llu edges), more than the %.1f GiB available\n",
			 R->who, o->graph, mode_names[o->mode], (double)need / (double)(1ull << 30),
			 (unsigned long long)R->n, (unsigned long long)R->m, (double)avail / (double)(1ull << 30));
		return -ENOMEM;
	}
	return 0;
}

/* the host CSR for the reference, the source choice and degrees (not timed); the
 * array checksums with verify; the BFS sources. 0 or a negative errno (said) */
static int load_reference(struct run *R)
{
	const struct bam_graph_run_opts *o = R->o;
	const char *who = R->who;
	char err[512];
	int rc;
	if ((rc = bam_graph_load(o->graph, &R->ref, err, sizeof(err)))) {
		run_fail(R, "%s: %s\n", who, err);
		return rc;
	}
	/* an answer verified against the reference must come from the file as written:
	 * its array checksums first (the loader checks only the header and offsets) */
	if (o->verify && (rc = bam_graph_check_crcs(o->graph, &R->hdr, &R->ref, err, sizeof(err)))) {
		run_fail(R, "%s: %s: the file is damaged ('bam graph info --verify' checks the whole file)\n",
			 who, err);
		return rc;
	}
	if (R->do_cc)
		return 0;
	uint32_t want = o->source_set ? 1 : o->nsources;
	R->sources = calloc(want, 8);
	if (!R->sources) {
		run_fail(R, "%s: out of memory for %u sources\n", who, want);
		return -ENOMEM;
	}
	if (o->source_set) { /* (checked < n above) */
		R->sources[0] = o->source;
		R->nsrc = 1;
	} else if ((rc = bam_graph_pick_sources(&R->ref, want, o->seed, R->sources, &R->nsrc)) || R->nsrc == 0) {
		run_fail(R, "%s: %s\n", who, NO_SOURCE_MSG);
		return rc ? rc : -EINVAL;
	}
	return 0;
}

/* bam_ctx_open refused the back end: the message as the CLI gives it, and for media
 * files to create, how large they must be. Returns rc. */
static int open_failed(struct run *R, const char *backend, int rc, const char *err, uint32_t k)
{
	const struct bam_graph_run_opts *o = R->o;
	if (rc == -ENODEV) /* --target=gpu without one: not the back end's fault */
		run_fail(R, "%s: %s\n", R->who, err);
	else
		run_fail(R, "%s: --backend=%s: %s\n", R->who, o->backend, err);
	R->r->refused = rc == -EINVAL || rc == -ENODEV;
	if (strstr(err, "(give size= to create it)")) {
		/* a media file to create (emu's media=file or the file back end; the
		 * latter says -EIO): say how large, what the check after the open wants */
		const int nm = media_count(backend);
		const uint32_t kk = !strncmp(backend, "file", 4) && nm ? (uint32_t)nm : k;
		const uint64_t per = ns_need(R->off_total, (R->m ? R->m : 1) * R->hdr.id_bytes, o->line, kk);
		run_fail(R, "%s: this graph needs %llu bytes on each of %u controllers (%u-byte lines): "
			 "size=%llu creates the media files at that size\n",
			 R->who, (unsigned long long)per, kk, o->line, (unsigned long long)((per + 4095) / 4096 * 4096));
	}
	return rc;
}

/* Open the back end (size= added where it creates media) and check that each
 * controller holds the arrays. 0 or a negative errno (said). */
static int open_backend(struct run *R)
{
	const struct bam_graph_run_opts *o = R->o;
	const char *who = R->who;
	char err[512];
	const uint32_t k = backend_info(o->backend).n_ctrl;
	uint64_t lines = (R->off_total + o->line - 1) / o->line / k + 1 + (R->hdr.edges_bytes + o->line - 1) / o->line / k + 1;
	char backend[1024];
	if (backend_sized(o->backend, lines * o->line * k, o->line, backend, sizeof(backend))) {
		run_fail(R, "%s: the graph's arrays are too large for emulated namespaces (past 2^64 bytes)\n", who);
		return -EOVERFLOW;
	}
	int rc;
	if (o->before_open && (rc = o->before_open(o->before_open_arg, backend, err, sizeof(err)))) {
		run_fail(R, "%s", err);
		R->r->refused = rc == -EINVAL;
		return rc;
	}
	struct bam_ctx_opts co = {.target = R->tgt, .qpairs = o->qpairs, .timeout_ns = o->timeout_ms * 1000000ull,
				  .ctrl_workers = o->ctrl_workers};
	if ((rc = bam_ctx_open(backend, &co, &R->gm.ctx, err, sizeof(err))))
		return open_failed(R, backend, rc, err, k);
	/* the controller workers run for the whole run where they run on demand */
	R->held = bam_gpu_workers_hold() == 0;
	snprintf(R->r->backend_desc, sizeof(R->r->backend_desc), "%s", bam_ctx_backend_desc(R->gm.ctx));
	/* a size= (or a file) too small for the arrays: said as such, before the
	 * library's own refusal of the array that does not fit. Each array takes its
	 * lines striped over the controllers, rounded up, on each (bam_array_create) */
	const uint32_t nk = bam_ctx_ctrl_count(R->gm.ctx);
	const uint64_t need = ns_need(R->off_total, (R->m ? R->m : 1) * R->hdr.id_bytes, o->line, nk);
	for (uint32_t c = 0; c < nk; c++) {
		struct bam_ns_info ns;
		if (bam_ctx_ns_info(R->gm.ctx, c, &ns) == 0 && ns.nlba * ns.lba_size < need) {
			run_fail(R, "%s: --backend=%s: controller %u holds %llu bytes, but the graph's offsets and edges need %llu on each of %u (%u-byte lines): %s\n",
				 who, o->backend, c, (unsigned long long)(ns.nlba * ns.lba_size),
				 (unsigned long long)need, nk, o->line,
				 strncmp(backend, "emu", 3) ? "give larger files or devices (or size=)"
							    : "give a larger size=, or leave size= out to size the emulated namespaces to the graph");
			R->r->refused = 1;
			return -EINVAL;
		}
	}
	return 0;
}

/* bam mode: the back end, the cache and the arrays, and the graph written onto the
 * media. 0 or a negative errno (said). */
static int setup_bam(struct run *R)
{
	const struct bam_graph_run_opts *o = R->o;
	struct bam_graph_run_result *r = R->r;
	const char *who = R->who;
	const uint64_t n = R->n, m = R->m;
	int rc = open_backend(R);
	if (rc)
		return rc;
	struct bam_cache_opts cop = {.capacity = R->cache_bytes, .line_size = o->line};
	/* BFS reads the offsets of every level's frontier: kept before the edges'
	 * lines, which a level mostly reads once (fewer offsets fills on each
	 * level's chain of dependent reads; results/history/graph.md) */
	r->off_prio = o->off_prio != BAM_GRAPH_PRIO_DEFAULT ? o->off_prio == BAM_GRAPH_PRIO_HIGH : !R->do_cc;
	struct bam_array_opts ao = {.n_elems = n + 1, .elem_size = R->ob, .priority = (uint32_t)r->off_prio};
	r->cache_bytes = R->cache_bytes;
	r->line = o->line;
	double tc = run_now();
	if ((rc = bam_cache_create(R->gm.ctx, &cop, &R->cache)) || (rc = bam_array_create(R->cache, &ao, &R->aoff))) {
		/* the library said why on stderr; the message sums it up */
		run_fail(R, "%s: creating the cache and the offsets array failed: %s: %s\n",
			 who, bam_strerror(rc), bam_ctx_error(R->gm.ctx));
		r->err_said = 1;
		/* options that do not go together (--line-size against the back end's LBA
		 * size): refused, as other bad options are */
		r->refused = rc == -EINVAL;
		return rc;
	}
	struct bam_array_opts ae = {.n_elems = m ? m : 1, .elem_size = R->hdr.id_bytes, .base_lba = bam_array_end_lba(R->aoff)};
	if ((rc = bam_array_create(R->cache, &ae, &R->aedge))) {
		run_fail(R, "%s: creating the edge array failed: %s: %s\n", who, bam_strerror(rc), bam_ctx_error(R->gm.ctx));
		r->err_said = 1;
		return rc;
	}
	r->setup_s = run_now() - tc; /* cache and arrays: reported, not in end-to-end */
	/* provisioning: put the arrays on the (emulated) SSDs, as dd would before a
	 * run; not part of the end-to-end time: the data lives on storage */
	double tp = run_now();
	if ((rc = R->ob == 8 ? bam_array_media_write(R->aoff, 0, R->ref.offsets, n + 1)
			     : media_write_off32(R->aoff, R->ref.offsets, n + 1)) ||
	    (m && (rc = bam_array_media_write(R->aedge, 0, R->ref.edges, m)))) {
		/* -ENOSPC: the media could not grow (file: media on a full file system),
		 * said in the words bam bench uses for the NVMe status of the same cause */
		run_fail(R, "%s: writing the graph onto the back end failed: %s\n", who,
			 rc == -ENOSPC ? nvme_status_cause(NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_CAP_EXCEEDED))
				       : bam_strerror(rc));
		return rc;
	}
	r->load_s = run_now() - tp;
	R->gv.bam = 1;
	R->gv.off_a = bam_array_dev(R->aoff);
	R->gv.edge_a = bam_array_dev(R->aedge);
	return 0;
}

/* baselines: the graph file is read into memory first (end-to-end includes it), the
 * offsets narrowed, then placed where the mode says. 0 or a negative errno (said). */
static int setup_baseline(struct run *R)
{
	const struct bam_graph_run_opts *o = R->o;
	struct bam_graph_run_result *r = R->r;
	const struct bam_graph_header *h = &R->hdr;
	const char *who = R->who;
	double tl = run_now();
	void *hoff = malloc(h->offsets_bytes), *hedge = malloc(h->edges_bytes ? h->edges_bytes : 1);
	if (!hoff || !hedge || pread_all(R->fd, hoff, h->offsets_bytes, h->offsets_offset) ||
	    pread_all(R->fd, hedge, h->edges_bytes, h->edges_offset)) {
		run_fail(R, "%s: reading %s failed\n", who, o->graph);
		free(hoff);
		free(hedge);
		return hoff && hedge ? -EIO : -ENOMEM;
	}
	r->load_s = run_now() - tl;
	double ts = run_now();
	if (R->ob == 4) { /* narrowed (in the set-up time, so in end-to-end) */
		uint32_t *o32 = malloc(R->off_total);
		if (!o32) {
			run_fail(R, "%s: out of memory for the offsets (%llu bytes)\n", who, (unsigned long long)R->off_total);
			free(hoff);
			free(hedge);
			return -ENOMEM;
		}
		off_narrow(o32, hoff, R->n + 1);
		free(hoff);
		hoff = o32;
	}
	if (R->gm.gpu) {
#ifdef BAM_HAVE_CUDA
		R->mem_kind = o->mode == BAM_GRAPH_MODE_GPU ? 0 : o->mode == BAM_GRAPH_MODE_HOST ? 1 : 2;
		R->off_mem = graph_gpu_alloc(R->mem_kind, R->off_total);
		R->edge_mem = graph_gpu_alloc(R->mem_kind, h->edges_bytes ? h->edges_bytes : 1);
		if (!R->off_mem || !R->edge_mem || graph_gpu_upload(R->off_mem, hoff, R->off_total) ||
		    graph_gpu_upload(R->edge_mem, hedge, h->edges_bytes)) {
			run_fail(R, "%s: --mode=%s: cannot place the graph (%llu bytes)\n", who, mode_names[o->mode],
				 (unsigned long long)(R->off_total + h->edges_bytes));
			free(hoff);
			free(hedge);
			return -ENOMEM;
		}
		free(hoff);
		free(hedge);
#endif
	} else {
		R->off_mem = hoff;
		R->edge_mem = hedge;
		R->mem_kind = -2; /* malloc */
	}
	r->setup_s = run_now() - ts;
	R->gv.off_p = R->off_mem;
	R->gv.edge_p = R->edge_mem;
	snprintf(r->backend_desc, sizeof(r->backend_desc), "%s memory", mode_names[o->mode]);
	return 0;
}

/* The walks' counters and chunk queue, the offsets' copy (--offsets=memory) and the
 * scan levels' edge ranges. 0 or a negative errno (said). */
static int setup_walks(struct run *R)
{
	const struct bam_graph_run_opts *o = R->o;
	struct graph_view *gv = &R->gv;
	int rc;
	/* one block of counters per level / iteration (graph_kern.h, struct gv_counters) */
	R->ctr = state_alloc(&R->gm, sizeof(*R->ctr));
	/* the chunk queue of long neighbour lists (graph_kern.h, GV_CHUNK) */
	gv->heavy_cap = gv_heavy_cap(R->m);
	gv->max_blocks = (o->warps + 7) / 8; /* 0: the default */
	gv->heavy = R->s5 = state_alloc(&R->gm, gv->heavy_cap * sizeof(struct gv_chunk));
	if (!gv->heavy || !R->ctr) {
		run_fail(R, "%s: out of memory for per-run state\n", R->who);
		return -ENOMEM;
	}
	static const struct gv_counters zero_ctr;
	state_put(&R->gm, R->ctr, &zero_ctr, sizeof(zero_ctr));
	gv->ctr = R->ctr;

	if (o->mode == BAM_GRAPH_MODE_BAM && o->off_mem && (rc = off_to_memory(R, &R->s7)))
		return rc;
	if (!R->do_cc && o->scan_ranges != BAM_GRAPH_RANGES_VERTICES &&
	    o->frontier != BAM_GRAPH_FRONTIER_QUEUE) { /* (no scan level: no ranges) */
		rc = part_setup(R, o->scan_ranges == BAM_GRAPH_RANGES_LINES ? o->line / gv->id_bytes : 0);
		R->s6 = (void *)gv->ranges;
		if (rc)
			return rc;
		R->compute += R->r->part_s;
	}
	return 0;
}

static void run_free(struct run *R)
{
	if (R->cache)
		bam_cache_destroy(R->cache);
	if (R->held)
		bam_gpu_workers_release();
	R->held = 0;
	if (R->gm.ctx)
		bam_ctx_close(R->gm.ctx);
	state_free(&R->gm, R->s1);
	state_free(&R->gm, R->s2);
	state_free(&R->gm, R->s3);
	state_free(&R->gm, R->s5);
	state_free(&R->gm, R->s6);
	state_free(&R->gm, R->s7);
	state_free(&R->gm, R->ctr);
	if (R->mem_kind == -2) {
		free(R->off_mem);
		free(R->edge_mem);
	}
#ifdef BAM_HAVE_CUDA
	else if (R->mem_kind >= 0) {
		graph_gpu_free(R->mem_kind, R->off_mem);
		graph_gpu_free(R->mem_kind, R->edge_mem);
	}
#endif
	free(R->sources);
	bam_csr_free(&R->ref);
	if (R->fd >= 0)
		close(R->fd);
}

/* everything from the graph file's open to the result; 0 or a negative errno (said) */
static int run_open(struct run *R)
{
	const struct bam_graph_run_opts *o = R->o;
	struct bam_graph_run_result *r = R->r;
	int rc;
	R->fd = open(o->graph, O_RDONLY);
	if (R->fd < 0) {
		rc = -errno;
		run_fail(R, "%s: %s: %s\n", R->who, o->graph, strerror(-rc));
		return rc;
	}
	if ((rc = check_host_memory(R)) || (rc = load_reference(R)))
		return rc;
	memset(&R->gv, 0, sizeof(R->gv));
	R->gv.n = R->n;
	R->gv.m = R->m;
	R->gv.id_bytes = R->hdr.id_bytes;
	R->gv.off_bytes = R->ob;
	if ((rc = o->mode == BAM_GRAPH_MODE_BAM ? setup_bam(R) : setup_baseline(R)))
		return rc;
	if ((rc = setup_walks(R)))
		return rc;
	if ((rc = R->do_cc ? run_cc(R) : run_bfs(R)))
		return rc;
	r->compute_s = R->compute;
	if (o->mode != BAM_GRAPH_MODE_BAM)
		r->e2e_s = r->load_s + r->setup_s + R->compute;
	else
		r->e2e_s = r->off_copy_s + R->compute; /* data already on storage: nothing to load
							* (but the offsets with --offsets=memory) */
	if (R->aoff) {
		bam_array_stats(R->aoff, &r->st_off);
		bam_array_stats(R->aedge, &r->st_edge);
	}
	return 0;
}

int bam_graph_run(const struct bam_graph_run_opts *opts, struct bam_graph_run_result *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->chunk_edges = GV_CHUNK;
	if (err && errlen)
		err[0] = 0;
	struct run *R = calloc(1, sizeof(*R));
	if (!R) {
		if (err && errlen)
			snprintf(err, errlen, "%s: out of memory", opts->prog ? opts->prog : "graph run");
		return -ENOMEM;
	}
	R->opts = *opts;
	R->o = &R->opts;
	R->r = r;
	R->err = err;
	R->errlen = errlen;
	R->fd = -1;
	R->mem_kind = -1;
	R->do_cc = opts->algo == BAM_GRAPH_CC;
	if (!R->opts.line)
		R->opts.line = R->do_cc ? BAM_GRAPH_CC_LINE : BAM_GRAPH_BFS_LINE;
	if (!R->opts.backend)
		R->opts.backend = "emu";
	if (!R->opts.nsources)
		R->opts.nsources = BAM_GRAPH_DEFAULT_SOURCES;
	/* the messages' prefix: "bam bfs" or "bam cc" as the CLI gives it */
	snprintf(R->who, sizeof(R->who), "%s", opts->prog ? opts->prog : R->do_cc ? "cc" : "bfs");
	int rc = check_opts(R);
	if (!rc) {
		R->gm.gpu = R->tgt == BAM_TARGET_GPU;
		r->on_gpu = R->gm.gpu;
#ifdef BAM_HAVE_CUDA
		if (R->gm.gpu)
			graph_gpu_prepare();
#endif
		rc = size_cache(R);
	}
	if (!rc)
		rc = run_open(R);
	run_free(R);
	free(R);
	return rc;
}

void bam_graph_run_result_free(struct bam_graph_run_result *res)
{
	if (!res)
		return;
	free(res->trace);
	free(res->sources);
	res->trace = NULL;
	res->sources = NULL;
	res->trace_n = 0;
}

int bam_graph_size(const char *graph, uint64_t *n_vertices, uint64_t *n_edges, char *err, size_t errlen)
{
	struct bam_graph_header h;
	int rc = bam_graph_header_read(graph, &h, err, errlen);
	if (rc)
		return rc;
	if (n_vertices)
		*n_vertices = h.n_vertices;
	if (n_edges)
		*n_edges = h.n_edges;
	return 0;
}

static int values_run(struct bam_graph_run_opts *o, char *err, size_t errlen, struct bam_graph_run_result *res)
{
	if (!o->graph || (o->algo == BAM_GRAPH_BFS ? !o->levels_out : !o->labels_out)) {
		memset(res, 0, sizeof(*res));
		snprintf(err, errlen, "%s: no graph file or no result buffer", o->prog);
		return -EINVAL;
	}
	return bam_graph_run(o, res, err, errlen);
}

int bam_graph_bfs_levels(const char *graph, const char *backend, enum bam_target target, uint64_t source,
			 uint64_t cache_bytes, uint32_t *levels, uint64_t n, uint32_t *levels_max,
			 void (*msg)(void *arg, enum bam_graph_msg kind, const char *text), void *msg_arg, char *err,
			 size_t errlen)
{
	struct bam_graph_run_opts o = {.algo = BAM_GRAPH_BFS, .graph = graph, .backend = backend, .target = target,
				       .cache_bytes = cache_bytes, .nsources = 1, .source_set = source != UINT64_MAX,
				       .source = source, .msg = msg, .msg_arg = msg_arg, .levels_out = levels,
				       .values_n = n, .prog = "bfs"};
	struct bam_graph_run_result res;
	int rc = values_run(&o, err, errlen, &res);
	if (!rc && levels_max)
		*levels_max = res.levels_max;
	bam_graph_run_result_free(&res);
	return rc;
}

int bam_graph_cc_labels(const char *graph, const char *backend, enum bam_target target, uint64_t cache_bytes,
			uint64_t *labels, uint64_t n, uint64_t *components,
			void (*msg)(void *arg, enum bam_graph_msg kind, const char *text), void *msg_arg, char *err,
			size_t errlen)
{
	struct bam_graph_run_opts o = {.algo = BAM_GRAPH_CC, .graph = graph, .backend = backend, .target = target,
				       .cache_bytes = cache_bytes, .msg = msg, .msg_arg = msg_arg, .labels_out = labels,
				       .values_n = n, .prog = "cc"};
	struct bam_graph_run_result res;
	int rc = values_run(&o, err, errlen, &res);
	if (!rc && components)
		*components = res.components;
	bam_graph_run_result_free(&res);
	return rc;
}

int bam_graph_values_write(const char *path, const uint32_t *levels, const uint64_t *labels, uint64_t n, char *err,
			   size_t errlen)
{
	if (!path || !*path || (!levels == !labels)) {
		snprintf(err, errlen, "values file: give a path and one of levels, labels");
		return -EINVAL;
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	static char buf[1 << 16];
	setvbuf(f, buf, _IOFBF, sizeof(buf));
	int bad = 0;
	for (uint64_t v = 0; v < n && !bad; v++)
		bad = levels ? (levels[v] == UINT32_MAX ? fputs("-1\n", f) : fprintf(f, "%u\n", levels[v])) < 0
			     : fprintf(f, "%llu\n", (unsigned long long)labels[v]) < 0;
	int e = bad || ferror(f) ? errno : 0;
	if (fclose(f) && !e)
		e = errno;
	if (e || bad) {
		snprintf(err, errlen, "%s: writing failed: %s", path, strerror(e ? e : EIO));
		return -(e ? e : EIO);
	}
	return 0;
}
