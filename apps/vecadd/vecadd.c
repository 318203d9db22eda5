/* SPDX-License-Identifier: MIT */
/* bam_vecadd_run (bam/vecadd.h): setup, the four modes, the check on the media. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bam/bam.h"
#include "bam/backend.h"
#include "bam/cache.h"
#include "bam/vecadd.h"
#include "vecadd_kern.h"
#ifdef BAM_HAVE_CUDA
#include "vecadd_gpu.h"
#endif

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static double now_s(void) { return (double)bam_time_ns() / 1e9; }

__attribute__((format(printf, 2, 3))) static void say(const struct bam_vecadd_opts *o, const char *fmt, ...)
{
	if (!o->msg)
		return;
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	o->msg(o->msg_arg, text);
}

static const char *const mode_names[] = {"bam", "tiling", "host", "gpu"};

static void ctrl_bytes(struct bam_ctx *ctx, uint64_t *rd, uint64_t *wr)
{
	*rd = *wr = 0;
	for (uint32_t i = 0; i < bam_ctx_ctrl_count(ctx); i++) {
		struct bam_ctrl_stats s;
		if (!bam_ctx_ctrl_stats(ctx, i, &s)) {
			*rd += s.bytes_read;
			*wr += s.bytes_written;
		}
	}
}

/* The run's progress every 2 s while its kernel runs: lines of c stored (bam mode) and
 * bytes the controllers moved, read from the target while the kernel runs. */
struct reporter {
	const struct bam_vecadd_opts *o;
	struct bam_ctx *ctx;
	const uint64_t *done_dev; /* NULL: no line count (tiling) */
	uint64_t lines, r0, w0;
	int stop;                 /* atomic */
	pthread_t th;
	int live;
};

static void *reporter_main(void *arg)
{
	struct reporter *p = arg;
	const double t0 = now_s();
	double last = t0;
	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		usleep(100000);
		const double t = now_s();
		if (t - last < 2.0)
			continue;
		last = t;
		uint64_t done = 0, rd, wr;
		if (p->done_dev && bam_mem_copy(p->ctx, &done, p->done_dev, 8))
			continue;
		ctrl_bytes(p->ctx, &rd, &wr);
		if (p->done_dev)
			say(p->o, "vecadd: %.0f s, %llu / %llu lines of c (%.1f%%), storage read %.2f GiB, written %.2f GiB",
			    t - t0, (unsigned long long)done, (unsigned long long)p->lines, 100.0 * (double)done / (double)p->lines,
			    (double)(rd - p->r0) / 1073741824.0, (double)(wr - p->w0) / 1073741824.0);
		else
			say(p->o, "vecadd: %.0f s, storage read %.2f GiB, written %.2f GiB", t - t0,
			    (double)(rd - p->r0) / 1073741824.0, (double)(wr - p->w0) / 1073741824.0);
	}
	return NULL;
}

static void reporter_start(struct reporter *p)
{
	if (p->o->msg && !pthread_create(&p->th, NULL, reporter_main, p))
		p->live = 1;
}

static void reporter_stop(struct reporter *p)
{
	if (!p->live)
		return;
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
	pthread_join(p->th, NULL);
	p->live = 0;
}

/* ---- provisioning and the check, on host threads ---------------------------------- */

struct chunked {
	struct bam_array *a, *b, *c;
	uint64_t n, chunk;
	uint32_t type, esize;
	uint64_t wrong, moved_r, moved_w;
	int rc;
	int compute; /* host mode: c = a + b through the provisioning path */
};

static void gen(uint32_t type, uint64_t first, uint64_t cnt, void *pa, void *pb)
{
	for (uint64_t k = 0; k < cnt; k++) {
		if (type == BAM_VECADD_U64) {
			((uint64_t *)pa)[k] = vecadd_a_u64(first + k);
			((uint64_t *)pb)[k] = vecadd_b_u64(first + k);
		} else {
			((float *)pa)[k] = vecadd_a_f32(first + k);
			((float *)pb)[k] = vecadd_b_f32(first + k);
		}
	}
}

static void fill_fn(void *arg, uint64_t t)
{
	struct chunked *f = arg;
	const uint64_t first = t * f->chunk, cnt = f->n - first < f->chunk ? f->n - first : f->chunk;
	uint8_t *pa = malloc(cnt * f->esize), *pb = malloc(cnt * f->esize);
	int rc = -ENOMEM;
	if (pa && pb) {
		gen(f->type, first, cnt, pa, pb);
		rc = bam_array_media_write(f->a, first, pa, cnt);
		if (!rc)
			rc = bam_array_media_write(f->b, first, pb, cnt);
	}
	if (rc)
		f->rc = rc;
	free(pa);
	free(pb);
}

/* host mode (compute = 1): read a and b, add, write c; check (compute = 0): read c and
 * compare with a + b from the generator */
static void host_fn(void *arg, uint64_t t)
{
	struct chunked *f = arg;
	const uint64_t first = t * f->chunk, cnt = f->n - first < f->chunk ? f->n - first : f->chunk;
	uint8_t *pa = malloc(cnt * f->esize), *pb = malloc(cnt * f->esize);
	uint64_t wrong = 0;
	int rc = -ENOMEM;
	if (!pa || !pb)
		goto out;
	if (f->compute) {
		if ((rc = bam_array_media_read(f->a, first, pa, cnt)) || (rc = bam_array_media_read(f->b, first, pb, cnt)))
			goto out;
		vecadd_add(f->type, pa, pb, cnt, 0, 1);
		rc = bam_array_media_write(f->c, first, pa, cnt);
		__atomic_fetch_add(&f->moved_r, 2 * cnt * f->esize, __ATOMIC_RELAXED);
		__atomic_fetch_add(&f->moved_w, cnt * f->esize, __ATOMIC_RELAXED);
	} else {
		gen(f->type, first, cnt, pa, pb);
		vecadd_add(f->type, pa, pb, cnt, 0, 1);
		if ((rc = bam_array_media_read(f->c, first, pb, cnt)))
			goto out;
		for (uint64_t k = 0; k < cnt; k++)
			wrong += f->esize == 8 ? ((uint64_t *)pa)[k] != ((uint64_t *)pb)[k]
					       : ((uint32_t *)pa)[k] != ((uint32_t *)pb)[k];
		__atomic_fetch_add(&f->wrong, wrong, __ATOMIC_RELAXED);
	}
out:
	if (rc)
		f->rc = rc;
	free(pa);
	free(pb);
}

static uint32_t ncpu(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (uint32_t)n : 2;
}

static int chunked_run(struct chunked *f, void (*fn)(void *, uint64_t))
{
	return bam_cpu_launch((f->n + f->chunk - 1) / f->chunk, ncpu(), fn, f);
}

/* ---- CPU-target kernels --------------------------------------------------------- */

static void cpu_bam_fn(void *arg, uint64_t tid)
{
	vecadd_bam_warp(arg, tid, 0, 1);
}
static void cpu_load_fn(void *arg, uint64_t t) { vecadd_tile_load(arg, t); }
static void cpu_add_fn(void *arg, uint64_t t) { vecadd_tile_add(arg, t); }
static void cpu_store_fn(void *arg, uint64_t t) { vecadd_tile_store(arg, t); }

struct tile_job {
	struct vecadd_args g;
	uint64_t units;
	uint32_t workers;
};
static void *load_thread(void *arg)
{
	struct tile_job *j = arg;
	bam_cpu_launch(j->units, j->workers, cpu_load_fn, &j->g);
	return NULL;
}

/* CPU-target tiling: tile k+1's load (a host thread's workers) while tile k is added
 * and stored (this thread's workers); buffers alternate */
static int cpu_tiling(const struct vecadd_args *g, uint64_t n_lines, uint64_t tile_lines, uint8_t *const bufs[4],
		      uint32_t workers)
{
	const uint64_t upl = g->line_size / VECADD_UNIT;
	struct tile_job cur = {.g = *g, .workers = workers}, next;
	uint64_t first = 0, k = 0;
	cur.g.first_line = 0;
	cur.g.lines = n_lines < tile_lines ? n_lines : tile_lines;
	cur.g.ta = bufs[0];
	cur.g.tb = bufs[1];
	cur.units = cur.g.lines * upl;
	bam_cpu_launch(cur.units, workers, cpu_load_fn, &cur.g);
	for (;;) {
		pthread_t th;
		int have_next = 0;
		first += cur.g.lines;
		k++;
		if (first < n_lines) {
			next = cur;
			next.g.first_line = first;
			next.g.lines = n_lines - first < tile_lines ? n_lines - first : tile_lines;
			next.g.ta = bufs[2 * (k & 1)];
			next.g.tb = bufs[2 * (k & 1) + 1];
			next.units = next.g.lines * upl;
			if (pthread_create(&th, NULL, load_thread, &next))
				return -EAGAIN;
			have_next = 1;
		}
		bam_cpu_launch(cur.units, workers, cpu_add_fn, &cur.g);
		bam_cpu_launch(cur.units, workers, cpu_store_fn, &cur.g);
		if (!have_next)
			break;
		pthread_join(th, NULL);
		cur = next;
	}
	return 0;
}

/* ---- the run ---------------------------------------------------------------------- */

int bam_vecadd_run(const struct bam_vecadd_opts *o, struct bam_vecadd_result *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	enum bam_target tgt = o->target;
	if (tgt == BAM_TARGET_AUTO)
		tgt = bam_gpu_available() ? BAM_TARGET_GPU : BAM_TARGET_CPU;
	const uint32_t esize = o->type == BAM_VECADD_U64 ? 8 : 4;
	const uint32_t line = o->line_size ? o->line_size : 4096;
	if (o->type != BAM_VECADD_U64 && o->type != BAM_VECADD_F32)
		return fail(err, errlen, -EINVAL, "type: u64 or f32");
	if (o->mode > BAM_VECADD_GPU)
		return fail(err, errlen, -EINVAL, "mode: bam, tiling, host or gpu");
	if (!o->n || o->n > (1ull << 40))
		return fail(err, errlen, -EINVAL, "--n=%llu: 1 to 2^40 elements", (unsigned long long)o->n);
	if (line < VECADD_UNIT || line > 65536 || (line & (line - 1)))
		return fail(err, errlen, -EINVAL, "--line-size=%u: a power of two from 4096 to 65536", line);
	const uint64_t bytes = o->n * esize, vlines = (bytes + line - 1) / line;
	r->vector_bytes = bytes;
	r->target = tgt;
	uint64_t cache_bytes = o->cache_bytes ? o->cache_bytes : 64ull << 20;
	if (cache_bytes > 3 * vlines * line + line)
		cache_bytes = 3 * vlines * line + line;
	/* the three vectors, whole lines on each controller (and one more line each) */
	const char *given = o->backend && *o->backend ? o->backend : "emu";
	struct bam_backend_info bi;
	char be[1024], e[512];
	if (bam_backend_info(given, &bi, e, sizeof(e)))
		return fail(err, errlen, -EINVAL, "--backend=%s: %s", given, e);
	if (bam_backend_sized(given, 3 * (vlines + 2 * BAM_MAX_CTRLS) * (uint64_t)line, line, be, sizeof(be), e, sizeof(e)))
		snprintf(be, sizeof(be), "%s", given);
	struct bam_ctx_opts co = {.target = tgt, .ctrl_workers = o->ctrl_workers, .timeout_ns = o->timeout_ms * 1000000ull};
	struct bam_ctx *ctx = NULL;
#ifdef BAM_HAVE_CUDA
	if (tgt == BAM_TARGET_GPU && vecadd_gpu_prepare())
		return fail(err, errlen, -EIO, "the GPU could not run the vecadd kernels");
#endif
	int rc = bam_ctx_open(be, &co, &ctx, e, sizeof(e));
	if (rc)
		return fail(err, errlen, rc, "--backend=%s: %s", given, e);
	snprintf(r->backend, sizeof(r->backend), "%s", bam_ctx_backend_desc(ctx));
	struct bam_cache *cache = NULL;
	struct bam_array *A = NULL, *B = NULL, *C = NULL;
	uint8_t *scratch = NULL, *bufs[4] = {0};
	uint64_t *counters = NULL;
	struct reporter rep = {.o = o, .ctx = ctx};
	struct bam_cache_opts cop = {.capacity = cache_bytes, .line_size = line};
	struct bam_array_opts ao = {.n_elems = o->n, .elem_size = esize, .read_only = 1};
	if ((rc = bam_cache_create(ctx, &cop, &cache)) || (rc = bam_array_create(cache, &ao, &A))) {
		rc = fail(err, errlen, rc, "creating the cache and arrays: %s", bam_ctx_error(ctx));
		goto out;
	}
	ao.base_lba = bam_array_end_lba(A);
	if ((rc = bam_array_create(cache, &ao, &B))) {
		rc = fail(err, errlen, rc, "creating the arrays: %s", bam_ctx_error(ctx));
		goto out;
	}
	ao.base_lba = bam_array_end_lba(B);
	ao.read_only = 0;
	if ((rc = bam_array_create(cache, &ao, &C))) {
		rc = fail(err, errlen, rc, "creating the arrays: %s", bam_ctx_error(ctx));
		goto out;
	}
	r->cache_bytes = bam_cache_lines(cache) * line;
	/* a and b on the media (not timed) */
	say(o, "vecadd: writing a and b to the media (%.2f GiB), not timed", 2.0 * (double)bytes / 1073741824.0);
	const double p0 = now_s();
	struct chunked f = {.a = A, .b = B, .c = C, .n = o->n, .chunk = (4u << 20) / esize, .type = o->type, .esize = esize};
	if ((rc = chunked_run(&f, fill_fn)) || (rc = f.rc)) {
		rc = fail(err, errlen, rc, "writing a and b to the media failed: %s", bam_strerror(rc));
		goto out;
	}
	say(o, "vecadd: a and b written in %.1f s", now_s() - p0);
	struct bam_ns_info ns;
	bam_ctx_ns_info(ctx, 0, &ns);
	uint32_t lba_shift = 0;
	while ((1u << lba_shift) < ns.lba_size)
		lba_shift++;
	counters = bam_mem_alloc(ctx, BAM_MEM_DEVICE, 64);
	if (!counters) {
		rc = fail(err, errlen, -ENOMEM, "out of target memory");
		goto out;
	}
	const uint64_t threads = o->threads ? o->threads : tgt == BAM_TARGET_GPU ? 32 * 4096 : 16;
	const uint32_t wsize = tgt == BAM_TARGET_GPU ? 32 : 1;
	struct vecadd_args g = {.a = bam_array_dev(A), .b = bam_array_dev(B), .c = bam_array_dev(C), .io = bam_ctx_dev(ctx),
				.n = o->n, .type = o->type, .esize = esize, .line_size = line,
				.n_ctrl = bam_ctx_ctrl_count(ctx), .lba_shift = lba_shift,
				.warps = (threads + wsize - 1) / wsize, .base_a = 0,
				.base_b = bam_array_end_lba(A), .base_c = bam_array_end_lba(B), .errs = counters,
				.done = counters + 1};
	uint64_t r0, w0, r1, w1;
	ctrl_bytes(ctx, &r0, &w0);
	rep.done_dev = o->mode == BAM_VECADD_BAM ? counters + 1 : NULL;
	rep.lines = vlines;
	rep.r0 = r0;
	rep.w0 = w0;
	say(o, "vecadd: %s mode, %llu elements per vector (%.2f GiB each), %s", mode_names[o->mode], (unsigned long long)o->n,
	    (double)bytes / 1073741824.0, r->backend);
	const double t0 = now_s();
	if (o->mode == BAM_VECADD_BAM || o->mode == BAM_VECADD_TILING)
		reporter_start(&rep);
	if (o->mode == BAM_VECADD_BAM) {
		if (g.warps > vlines)
			g.warps = vlines;
		scratch = bam_mem_alloc(ctx, BAM_MEM_DEVICE, g.warps * line);
		if (!scratch) {
			rc = fail(err, errlen, -ENOMEM, "out of target memory for %llu warps' scratch lines",
				  (unsigned long long)g.warps);
			goto out;
		}
		g.scratch = scratch;
		const double k0 = now_s();
		if (tgt == BAM_TARGET_GPU) {
#ifdef BAM_HAVE_CUDA
			rc = vecadd_gpu_bam(&g);
#else
			rc = -ENODEV;
#endif
		} else {
			rc = bam_cpu_launch(g.warps, (uint32_t)(g.warps < 256 ? g.warps : 256), cpu_bam_fn, &g);
		}
		say(o, "vecadd: kernel done in %.2f s; flushing the cache", now_s() - k0);
		const double f0 = now_s();
		int frc = bam_cache_flush(cache);
		r->flush_seconds = now_s() - f0;
		if (!rc && frc)
			rc = fail(err, errlen, frc, "the flush failed: %s", bam_strerror(frc));
		else if (rc)
			rc = fail(err, errlen, rc, "the vecadd kernel failed: %s", bam_strerror(rc));
	} else if (o->mode == BAM_VECADD_TILING) {
		uint64_t tb = o->tile_bytes ? o->tile_bytes : tgt == BAM_TARGET_GPU ? 64ull << 20 : 4ull << 20;
		uint64_t tile_lines = (tb + line - 1) / line;
		if (tile_lines > vlines)
			tile_lines = vlines;
		for (int k = 0; k < 4; k++)
			if (!(bufs[k] = bam_mem_alloc(ctx, BAM_MEM_DEVICE, tile_lines * line))) {
				rc = fail(err, errlen, -ENOMEM, "out of target memory for the tiles (%llu bytes each)",
					  (unsigned long long)(tile_lines * line));
				goto out;
			}
		if (tgt == BAM_TARGET_GPU) {
#ifdef BAM_HAVE_CUDA
			rc = vecadd_gpu_tiling(&g, vlines, tile_lines, bufs);
#else
			rc = -ENODEV;
#endif
		} else {
			const uint32_t wk = (uint32_t)(threads < 256 ? threads : 256);
			rc = cpu_tiling(&g, vlines, tile_lines, bufs, wk / 2 ? wk / 2 : 1);
		}
		if (rc)
			rc = fail(err, errlen, rc, "the tiling run failed: %s", bam_strerror(rc));
	} else if (o->mode == BAM_VECADD_HOST || tgt == BAM_TARGET_CPU) {
		/* (gpu mode on the CPU target: the target is the host) */
		f.compute = 1;
		if ((rc = chunked_run(&f, host_fn)) || (rc = f.rc))
			rc = fail(err, errlen, rc, "the host run failed: %s", bam_strerror(rc));
		r->host_read = f.moved_r;
		r->host_written = f.moved_w;
	} else {
#ifdef BAM_HAVE_CUDA
		/* chunks through GPU memory: media -> host -> GPU, add, GPU -> host -> media */
		const uint64_t chunk = (64ull << 20) / esize;
		uint8_t *ha = malloc(chunk * esize), *hb = malloc(chunk * esize);
		uint8_t *da = bam_mem_alloc(ctx, BAM_MEM_DEVICE, chunk * esize), *db = bam_mem_alloc(ctx, BAM_MEM_DEVICE, chunk * esize);
		rc = ha && hb && da && db ? 0 : -ENOMEM;
		for (uint64_t first = 0; !rc && first < o->n; first += chunk) {
			const uint64_t cnt = o->n - first < chunk ? o->n - first : chunk;
			if ((rc = bam_array_media_read(A, first, ha, cnt)) || (rc = bam_array_media_read(B, first, hb, cnt)) ||
			    (rc = bam_mem_copy(ctx, da, ha, cnt * esize)) || (rc = bam_mem_copy(ctx, db, hb, cnt * esize)) ||
			    (rc = vecadd_gpu_add(o->type, da, db, cnt)) || (rc = bam_mem_copy(ctx, ha, da, cnt * esize)) ||
			    (rc = bam_array_media_write(C, first, ha, cnt)))
				break;
			r->host_read += 2 * cnt * esize;
			r->host_written += cnt * esize;
		}
		free(ha);
		free(hb);
		bam_mem_free(ctx, BAM_MEM_DEVICE, da);
		bam_mem_free(ctx, BAM_MEM_DEVICE, db);
		if (rc)
			rc = fail(err, errlen, rc, "the gpu run failed: %s", bam_strerror(rc));
#endif
	}
	r->seconds = now_s() - t0;
	reporter_stop(&rep);
	ctrl_bytes(ctx, &r1, &w1);
	r->storage_read = r1 - r0;
	r->storage_written = w1 - w0;
	uint64_t errs = 0;
	bam_mem_copy(ctx, &errs, counters, 8);
	r->errors = errs;
	struct bam_array_stats s;
	struct bam_array *arrs[3] = {A, B, C};
	for (int k = 0; k < 3; k++)
		if (!bam_array_stats(arrs[k], &s)) {
			r->fills_avoided += s.c.fills_avoided;
			r->partial_write_fetches += s.c.partial_write_fetches;
			r->writebacks += s.c.writebacks;
			r->writeback_errors += s.c.writeback_errors;
			r->errors += s.c.errors;
		}
	/* c on the media, element by element */
	say(o, "vecadd: run %.2f s; checking c on the media", r->seconds);
	f.compute = 0;
	f.rc = 0;
	int crc = chunked_run(&f, host_fn);
	if (!crc)
		crc = f.rc;
	r->wrong = f.wrong;
	if (!rc && crc)
		rc = fail(err, errlen, crc, "reading c back from the media failed: %s", bam_strerror(crc));
	if (!rc && (r->wrong || r->errors))
		rc = fail(err, errlen, -EIO, "%llu elements of c wrong on the media, %llu errors", (unsigned long long)r->wrong,
			  (unsigned long long)r->errors);
out:
	reporter_stop(&rep);
	for (int k = 0; k < 4; k++)
		bam_mem_free(ctx, BAM_MEM_DEVICE, bufs[k]);
	bam_mem_free(ctx, BAM_MEM_DEVICE, scratch);
	bam_mem_free(ctx, BAM_MEM_DEVICE, counters);
	bam_cache_destroy(cache);
	bam_ctx_close(ctx);
	return rc;
}
