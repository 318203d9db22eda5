/* SPDX-License-Identifier: MIT */
/*
 * bam_arraybench_run (bam/iobench.h): the cache and array API under load. Patterns: hot
 * (a working set inside the cache: hit bandwidth, against the HBM/DRAM read bandwidth
 * measured in the same run), random (one random element per thread per step: miss
 * IOPS), warp (each warp reads 32 consecutive elements of a random line: the case warp
 * coalescing is for; compare coalescing on and off), scan (the hot working set read
 * line by line through line handles).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bam/bam.h"
#include "bam/backend.h"
#include "bam/cache.h"
#include "bam/iobench.h"
#include "abench_kern.h"
#include "engine.h"
#ifdef BAM_HAVE_CUDA
#include "bench_gpu.h"
#endif

_Static_assert((int)BAM_ARRAYBENCH_HOT == (int)AB_HOT && (int)BAM_ARRAYBENCH_RANDOM == (int)AB_RANDOM &&
		       (int)BAM_ARRAYBENCH_WARP == (int)AB_WARP && (int)BAM_ARRAYBENCH_SCAN == (int)AB_SCAN &&
		       (int)BAM_ARRAYBENCH_RANDWRITE == (int)AB_RANDWRITE && (int)BAM_ARRAYBENCH_RMW == (int)AB_RMW,
	       "patterns");

void bam_arraybench_opts_init(struct bam_arraybench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->backend = "emu";
	o->pattern = BAM_ARRAYBENCH_RANDOM;
	o->size = 1ull << 30;
	o->cache_bytes = 64ull << 20;
	o->line_size = 4096;
	o->coalesce = 1;
}

static const char *given_backend(const struct bam_arraybench_opts *o)
{
	return o->backend ? o->backend : "emu";
}

int bam_arraybench_backend(const struct bam_arraybench_opts *o, char *out, size_t outlen, char *err, size_t errlen)
{
	const uint64_t line = o->line_size;
	/* the array and one more line (the cache's rounding) */
	if (o->size > UINT64_MAX - line || ib_backend_sized(given_backend(o), o->size + line, line, out, outlen))
		return ib_fail(err, errlen, -EINVAL,
			       "--size=%llu: too large for the emulated namespaces (their size would pass 2^64 bytes)",
			       (unsigned long long)o->size);
	return 0;
}

static void cpu_ab_fn(void *arg, uint64_t tid)
{
	abench_thread(arg, tid, 0, 1);
}

struct fill {
	struct bam_array *arr;
	uint64_t n, chunk;
	int rc;
};
static void fill_fn(void *arg, uint64_t t)
{
	struct fill *f = arg;
	uint64_t first = t * f->chunk, cnt = f->n - first < f->chunk ? f->n - first : f->chunk;
	uint64_t *b = malloc(cnt * 8);
	if (!b) {
		f->rc = -ENOMEM;
		return;
	}
	for (uint64_t k = 0; k < cnt; k++)
		b[k] = abench_value(first + k);
	int rc = bam_array_media_write(f->arr, first, b, cnt);
	if (rc)
		f->rc = rc;
	free(b);
}

/* After a write pattern's flush: the media, element by element. RANDWRITE: every
 * element abench_value(i) or that + 1 (written); RMW: the increments sum to the adds
 * made ('adds'). Counts what is off in *bad. 0 or the media read's error. */
static int write_check(struct bam_array *arr, uint64_t n, uint32_t pattern, uint64_t adds, uint64_t *bad)
{
	const uint64_t chunk = 1u << 20;
	uint64_t *b = malloc(chunk * 8), sum = 0, off = 0;
	if (!b)
		return -ENOMEM;
	for (uint64_t first = 0; first < n; first += chunk) {
		const uint64_t cnt = n - first < chunk ? n - first : chunk;
		int rc = bam_array_media_read(arr, first, b, cnt);
		if (rc) {
			free(b);
			return rc;
		}
		for (uint64_t k = 0; k < cnt; k++) {
			const uint64_t d = b[k] - abench_value(first + k);
			sum += d;
			off += pattern == AB_RANDWRITE && d > 1;
		}
	}
	free(b);
	if (pattern == AB_RMW && sum != adds)
		off++;
	*bad = off;
	return 0;
}

static int run_kernel(struct bam_ctx *ctx, struct abench_args *a, double *secs)
{
	if (bam_ctx_target(ctx) == BAM_TARGET_GPU) {
#ifdef BAM_HAVE_CUDA
		double ms = 0;
		int rc = abench_gpu_run(a, &ms);
		*secs = ms / 1e3;
		return rc;
#else
		return -ENODEV;
#endif
	}
	double t0 = (double)bam_time_ns() / 1e9;
	int rc = bam_cpu_launch(a->threads, (uint32_t)(a->threads > 256 ? 256 : a->threads), cpu_ab_fn, a);
	*secs = (double)bam_time_ns() / 1e9 - t0;
	return rc;
}

/* What the options refuse, and what cannot fit, before anything starts. 0 or -errno. */
static int check_opts(const struct bam_arraybench_opts *o, enum bam_target tgt, uint64_t cache_bytes, int capped,
		      char *err, size_t errlen)
{
	const uint64_t size = o->size, line = o->line_size, ws = o->working_set;
	const char *cache_text = o->cache_text;
	char num[24];
	if (!cache_text) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)o->cache_bytes);
		cache_text = num;
	}
	if (size < 4096 || size % 8)
		return ib_fail(err, errlen, -EINVAL,
			       "--size=%llu: array bytes, a multiple of 8 (u64 elements), at least 4096",
			       (unsigned long long)size);
	if (line < 512 || line > 65536 || (line & (line - 1)) || !o->cache_bytes)
		return ib_fail(err, errlen, -EINVAL, "--line-size=%llu, --cache-size=%s: a line is a power of two from 512 "
			       "to 64K, the cache at least one byte", (unsigned long long)line, cache_text);
	/* a cache that cannot fit in the target's memory: refused before anything starts */
	char e[512];
	struct bam_cache_opts cop = {.capacity = cache_bytes, .line_size = (uint32_t)line};
	if (bam_cache_fits(tgt, &cop, e, sizeof(e)) == -ENOMEM)
		return ib_fail(err, errlen, -ENOMEM, "--cache-size=%s%s: %s", cache_text,
			       capped ? " (capped at the array's lines)" : "", e);
	/* the cache (host memory on the CPU target) and emulated DRAM media in host memory
	 * each fit alone (checked above and when the emulator opens) but may not together:
	 * refused before anything is allocated, instead of being killed for memory later */
	{
		const uint32_t fl = ib_backend_flags(given_backend(o));
		if ((fl & BAM_BACKEND_F_WRITE_GUARDED) && !(fl & BAM_BACKEND_F_WRITE_ALLOWED))
			return ib_fail(err, errlen, -EPERM,
				       "--backend=%s: filling the array writes to the device, destroying its data: pass "
				       "--allow-write (allow_write=1)", given_backend(o));
		const int media_host = (fl & BAM_BACKEND_F_MEDIA_MEMORY) && !(fl & BAM_BACKEND_F_MEDIA_GPU);
		const uint64_t c_host = tgt == BAM_TARGET_CPU ? cache_bytes : 0,
			       m_host = media_host && size <= UINT64_MAX - 2 * line ? size + line : 0;
		uint64_t avail = 0;
		if (c_host && m_host && !bam_mem_available(BAM_TARGET_CPU, BAM_MEM_HOST_PINNED, &avail) &&
		    m_host <= avail && c_host + m_host > avail) /* (media alone: the emulator says) */
			return ib_fail(err, errlen, -ENOMEM,
				       "the cache (%llu bytes) and the emulated media (%llu bytes) need %.1f GiB of host memory together, more than the %.1f GiB available: give a smaller --cache-size or --size",
				       (unsigned long long)c_host, (unsigned long long)m_host,
				       (double)(c_host + m_host) / (double)(1ull << 30), (double)avail / (double)(1ull << 30));
	}
	/* hot and scan (the patterns with a working set) measure hits: one the array or
	 * the cache cannot hold would measure something else under their names */
	if (ws && (o->pattern == BAM_ARRAYBENCH_HOT || o->pattern == BAM_ARRAYBENCH_SCAN)) {
		if (ws > size)
			return ib_fail(err, errlen, -EINVAL, "--working-set=%llu is larger than the array (--size=%llu)",
				       (unsigned long long)ws, (unsigned long long)size);
		if ((ws + line - 1) / line > cache_bytes / line)
			return ib_fail(err, errlen, -EINVAL,
				       "--working-set=%llu is larger than the cache (--cache-size=%llu): --pattern=%s "
				       "measures hits of a working set the cache holds; give a larger cache, or --pattern=random for misses",
				       (unsigned long long)ws, (unsigned long long)cache_bytes,
				       o->pattern == BAM_ARRAYBENCH_HOT ? "hot" : "scan");
	}
	return 0;
}

int bam_arraybench_run(const struct bam_arraybench_opts *o, struct bam_arraybench_result *r, char *err, size_t errlen)
{
	const char *given = given_backend(o);
	const uint64_t size = o->size, line = o->line_size;
	const uint32_t pattern = (uint32_t)o->pattern;
	memset(r, 0, sizeof(*r));
	if (err && errlen)
		err[0] = 0;
	const enum bam_target tgt = ib_target(o->target);
	uint64_t threads = o->threads, steps = o->steps, cache_bytes = o->cache_bytes, ws = o->working_set;
	if (!threads)
		threads = tgt == BAM_TARGET_GPU ? 262144 : 16;
	if (!steps) /* enough work that thread start-up does not dominate */
		steps = tgt == BAM_TARGET_GPU ? 64 : 20000;
	/* a cache larger than the array holds nothing more: capped at the array's lines and
	 * one more (no less than 1 MiB), instead of taking memory it cannot use */
	int capped = 0;
	if (size <= UINT64_MAX - 2 * line) { /* (larger: refused below as too large) */
		const uint64_t whole = (size + line - 1) / line * line + line;
		const uint64_t cap = whole > (1u << 20) ? whole : (1u << 20);
		if (cache_bytes > cap) {
			cache_bytes = cap;
			capped = 1;
		}
	}
	int rc = check_opts(o, tgt, cache_bytes, capped, err, errlen);
	if (rc)
		return rc;
	uint64_t n = size / 8;
	if (!ws)
		ws = cache_bytes / 2;
	uint64_t ws_elems = ws / 8 < n ? ws / 8 : n;

	char be[1024]; /* the back end, its namespaces sized: refused before the baseline runs */
	if ((rc = bam_arraybench_backend(o, be, sizeof(be), err, errlen)))
		return rc;
	if ((rc = ib_precheck(given, be, tgt == BAM_TARGET_GPU ? NULL : "this run is on the CPU target", err, errlen)))
		return rc;

	/* baseline first (the emulator is not running yet) */
	double base_bps = 0;
#ifdef BAM_HAVE_CUDA
	if (tgt == BAM_TARGET_GPU && (pattern == AB_HOT || pattern == AB_SCAN))
		bench_gpu_hbm_baseline(8ull << 30, &base_bps);
	if (tgt == BAM_TARGET_GPU)
		bench_gpu_prepare();
#endif
	struct bam_ctx_opts co = {.target = tgt, .ctrl_workers = o->ctrl_workers, .timeout_ns = o->timeout_ms * 1000000ull};
	struct bam_ctx *ctx;
	char e[512];
	rc = bam_ctx_open(be, &co, &ctx, e, sizeof(e));
	if (rc)
		return ib_open_fail(given, rc, e, err, errlen);
	struct bam_cache *cache = NULL;
	struct bam_array *arr = NULL;
	struct bam_array_opts ao = {.n_elems = n, .elem_size = 8};
	struct bam_cache_opts cop = {.capacity = cache_bytes, .line_size = (uint32_t)line};
	if ((rc = bam_cache_create(ctx, &cop, &cache)) || (rc = bam_array_create(cache, &ao, &arr))) {
		/* the library said why on stderr */
		ib_fail(err, errlen, rc, "creating the cache and the array failed: %s: %s", bam_strerror(rc),
			bam_ctx_error(ctx));
		r->err_on_stderr = 1;
		bam_cache_destroy(cache);
		bam_ctx_close(ctx);
		return rc;
	}
	ib_say(o->msg, o->msg_arg, BAM_IOBENCH_MSG_NOTE, "writing %llu MiB of array data to the media",
	       (unsigned long long)(size >> 20));
	struct fill f = {.arr = arr, .n = n, .chunk = 1u << 20};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	bam_cpu_launch((n + f.chunk - 1) / f.chunk, (uint32_t)(ncpu > 0 ? ncpu : 2), fill_fn, &f);
	uint64_t *counters = bam_mem_alloc(ctx, BAM_MEM_DEVICE, 24);
	struct abench_args a = {.a = bam_array_dev(arr), .n_elems = n, .ws = ws_elems, .threads = threads, .steps = steps,
				.seed = 42, .pattern = pattern, .coalesce = (uint32_t)o->coalesce, .bad = counters,
				.errs = counters + 1, .skipped = counters + 2};
	double secs = 0;
	if (f.rc || !counters) {
		rc = ib_fail(err, errlen, -EIO, "setup failed");
		goto out;
	}
	if (pattern == AB_HOT || pattern == AB_SCAN) {
		/* warm the working set, then measure hits only */
		struct abench_args w = a;
		w.pattern = AB_HOT;
		w.steps = (ws_elems + threads - 1) / threads + 1;
		if ((rc = run_kernel(ctx, &w, &secs)))
			goto out; /* (with no message, as the kernel said nothing) */
		bam_array_stats_reset(arr);
	}
	if ((rc = run_kernel(ctx, &a, &secs)))
		goto out;
	const int writes = pattern == AB_RANDWRITE || pattern == AB_RMW;
	double fsecs = 0;
	uint64_t write_bad = 0;
	int frc = 0;
	if (writes) {
		/* the writes are on the media only after the flush: timed with the run */
		const double f0 = (double)bam_time_ns() / 1e9;
		frc = bam_cache_flush(cache);
		fsecs = (double)bam_time_ns() / 1e9 - f0;
		if ((rc = write_check(arr, n, pattern, threads * steps, &write_bad))) {
			rc = ib_fail(err, errlen, rc, "reading the array back from the media failed");
			goto out;
		}
	}
	uint64_t res[3];
	bam_mem_copy(ctx, res, counters, 24);
	bam_array_stats(arr, &r->stats);
	double reads = (double)threads * (double)steps;
	double bw = r->stats.c.bytes_requested / secs;
	if (pattern == AB_SCAN) {
		/* every element of each line taken is read and checked by the warp */
		uint64_t wsize = tgt == BAM_TARGET_GPU ? 32 : 1;
		reads = (double)((threads + wsize - 1) / wsize) * (double)steps * (double)(line / 8);
		bw = reads * 8 / secs;
	}
	snprintf(r->backend, sizeof(r->backend), "%s", bam_ctx_backend_desc(ctx));
	r->target = tgt;
	r->cache_bytes = cache_bytes;
	r->capped = capped;
	r->threads = threads;
	r->steps = steps;
	r->seconds = secs;
	r->element_reads = reads;
	r->element_reads_per_s = reads / secs;
	r->requested_bps = bw;
	r->miss_iops = r->stats.c.misses / secs;
	r->wrong_values = res[0];
	r->errors = res[1];
	r->reads_not_attempted = res[2];
	r->hbm_bps = base_bps;
	if (writes) {
		r->flush_seconds = fsecs;
		r->seconds_with_flush = secs + fsecs;
		r->writes_per_s = reads / r->seconds_with_flush;
		r->storage_write_iops = (double)r->stats.c.writebacks / r->seconds_with_flush;
		r->wrong_values += write_bad;
		res[0] += write_bad;
	}
	r->complete = 1;
	rc = 0;
	if (frc) {
		rc = ib_fail(err, errlen, -EIO, "the flush failed: %s", bam_strerror(frc));
		goto out;
	}
	if (res[0] || res[1])
		rc = ib_fail(err, errlen, -EIO, "%llu wrong values, %llu errors%s", (unsigned long long)res[0],
			     (unsigned long long)res[1], res[2] ? " (a read timed out: the run stopped)" : "");
out:
	bam_mem_free(ctx, BAM_MEM_DEVICE, counters);
	bam_cache_destroy(cache);
	bam_ctx_close(ctx);
	return rc;
}
