/* SPDX-License-Identifier: MIT */
/* Host side of the software cache and arrays: allocation up front, placement,
 * provisioning, flush, statistics. The I/O path is in bam/array.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bam/cache.h"
#include "ctx_internal.h"
#include "xfer_kern.h"

/* Say why a call is refused or failed: in the context's last error (bam_ctx_error) and
 * on stderr. */
__attribute__((format(printf, 2, 3))) static void cache_refuse(struct bam_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx->errmsg, sizeof(ctx->errmsg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "bam: %s\n", ctx->errmsg);
}

struct bam_cache {
	struct bam_ctx *ctx;
	struct bam_cache_dev h;      /* host copy */
	struct bam_cache_dev *d;     /* target copy */
	struct bam_array *arrays[BAM_MAX_ARRAYS];
};

struct bam_array {
	struct bam_cache *cache;
	struct bam_array_dev h;
	struct bam_array_dev *d;
	uint64_t bytes_per_ctrl;
	/* GPU target: the transfer kernels' result words (err, pad, bad), target memory,
	 * allocated on the first transfer; xfer_lock serialises transfers on the array */
	uint64_t *xfer_status;
	pthread_mutex_t xfer_lock;
};

#ifdef BAM_HAVE_CUDA
int bam_cache_gpu_flush(struct bam_cache_dev *d, uint64_t n_slots, uint32_t *failures);
int bam_xfer_gpu_run(const struct bam_xfer_job *j, void *stream);
#endif

static int sync_cache(struct bam_cache *c)
{
	return bam_mem_copy(c->ctx, c->d, &c->h, sizeof(c->h));
}

/* "1.5 GiB" / "12.0 MiB" / "512 bytes" */
static const char *human(char *buf, size_t len, uint64_t b)
{
	if (b >= (1ull << 30))
		snprintf(buf, len, "%.1f GiB", (double)b / (double)(1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", (double)b / (double)(1ull << 20));
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)b);
	return buf;
}

uint64_t bam_cache_bytes(const struct bam_cache_opts *o)
{
	uint32_t ls = o->line_size;
	if (ls < 512 || ls > 65536 || (ls & (ls - 1)))
		return 0;
	uint64_t n = o->capacity / ls;
	if (n == 0 || n >= BAM_XLAT_SLOTS)
		return 0;
	/* lines; state, tag, pending; PRP lists for lines over two pages */
	uint64_t per = (uint64_t)ls + 4 + 8 + 8 + (ls > 2 * NVME_PAGE_SIZE ? bam_prp_list_bytes(0, ls) : 0);
	return n * per + sizeof(struct bam_cache_dev);
}

int bam_cache_fits(enum bam_target target, const struct bam_cache_opts *o, char *err, size_t errlen)
{
	uint64_t need = bam_cache_bytes(o), avail = 0;
	if (target == BAM_TARGET_AUTO || need == 0)
		return -EINVAL;
	if (bam_mem_available(target, BAM_MEM_DEVICE, &avail) || need <= avail)
		return 0;
	if (err && errlen) {
		char a[32], b[32], d[32];
		snprintf(err, errlen, "a cache of %llu bytes (%s) needs %s of %s memory, but %s is available",
			 (unsigned long long)o->capacity, human(a, sizeof(a), o->capacity), human(b, sizeof(b), need),
			 target == BAM_TARGET_GPU ? "GPU" : "host", human(d, sizeof(d), avail));
	}
	return -ENOMEM;
}

int bam_cache_create(struct bam_ctx *ctx, const struct bam_cache_opts *o, struct bam_cache **out)
{
	uint32_t ls = o->line_size;
	if (ls < 512 || ls > 65536 || (ls & (ls - 1))) {
		cache_refuse(ctx, "cache line size %u: must be a power of two from 512 to 65536", ls);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < bam_ctx_ctrl_count(ctx); i++) {
		struct bam_ns_info ns;
		bam_ctx_ns_info(ctx, i, &ns);
		if (ls % ns.lba_size) {
			cache_refuse(ctx, "cache line size %u is not a multiple of controller %u's LBA size %u", ls, i, ns.lba_size);
			return -EINVAL;
		}
	}
	uint64_t n = o->capacity / ls;
	if (n == 0 || n >= BAM_XLAT_SLOTS) {
		cache_refuse(ctx, "cache capacity %llu gives %llu lines of %u bytes (1 to 2^32-6 allowed)",
			(unsigned long long)o->capacity, (unsigned long long)n, ls);
		return -EINVAL;
	}
	/* refuse up front what cannot fit: allocating and zeroing it would fail late, or
	 * end with the OOM killer */
	char msg[256];
	if (bam_cache_fits(bam_ctx_target(ctx), o, msg, sizeof(msg)) == -ENOMEM) {
		cache_refuse(ctx, "%s: refused", msg);
		return -ENOMEM;
	}
	struct bam_cache *c = calloc(1, sizeof(*c));
	if (!c) {
		cache_refuse(ctx, "out of host memory for the cache's descriptor");
		return -ENOMEM;
	}
	c->ctx = ctx;
	c->h.line_size = ls;
	while ((1u << c->h.line_shift) < ls)
		c->h.line_shift++;
	c->h.n_slots = n;
	c->h.io = bam_ctx_dev(ctx);
	{
		const char *ws = getenv("BAM_WB_SYNC");
		c->h.wb_sync = ws && ws[0] == '1';
	}
	c->h.lines = bam_mem_alloc(ctx, BAM_MEM_DEVICE, n * ls);
	c->h.state = bam_mem_alloc(ctx, BAM_MEM_DEVICE, n * 4);
	c->h.tag = bam_mem_alloc(ctx, BAM_MEM_DEVICE, n * 8);
	c->h.pending = bam_mem_alloc(ctx, BAM_MEM_DEVICE, n * 8); /* zeroed: no record */
	c->d = bam_mem_alloc(ctx, BAM_MEM_DEVICE, sizeof(struct bam_cache_dev));
	if (!c->h.lines || !c->h.state || !c->h.tag || !c->h.pending || !c->d)
		goto nomem;
	if (bam_mem_set(ctx, c->h.tag, 0xff, n * 8))
		goto nomem;
	if (ls > 2 * NVME_PAGE_SIZE) {
		/* a PRP list per line, built once: no allocation in the I/O path */
		c->h.prp_stride = bam_prp_list_bytes(0, ls);
		c->h.prp = bam_mem_alloc(ctx, BAM_MEM_DEVICE, n * c->h.prp_stride);
		uint64_t *hl = calloc(n, c->h.prp_stride);
		if (!c->h.prp || !hl) {
			free(hl);
			goto nomem;
		}
		for (uint64_t s = 0; s < n; s++)
			bam_prp_list_fill(hl + s * (c->h.prp_stride / 8), (uint64_t)(uintptr_t)(c->h.prp + s * (c->h.prp_stride / 8)),
					  (uint64_t)(uintptr_t)(c->h.lines + s * ls), ls);
		int rc = bam_mem_copy(ctx, c->h.prp, hl, n * c->h.prp_stride);
		free(hl);
		if (rc)
			goto nomem;
	}
	if (sync_cache(c)) {
		cache_refuse(ctx, "copying the cache's descriptor to the target failed");
		bam_cache_destroy(c);
		return -EIO;
	}
	*out = c;
	return 0;
nomem:
	cache_refuse(ctx, "cannot allocate a cache of %llu lines of %u bytes", (unsigned long long)n, ls);
	bam_cache_destroy(c);
	return -ENOMEM;
}

void bam_cache_destroy(struct bam_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < BAM_MAX_ARRAYS; i++)
		if (c->arrays[i])
			bam_array_destroy(c->arrays[i]);
	/* A slot still retired or pinned may yet be written (or read) by its controller:
	 * the lines and their PRP lists then stay allocated until bam_ctx_close has
	 * stopped the controllers. */
	uint64_t held = 0;
	if (c->h.state && c->d && c->h.pending && (bam_cache_reclaim(c, &held) || held)) {
		bam_ctx_defer_free(c->ctx, BAM_MEM_DEVICE, c->h.lines);
		bam_ctx_defer_free(c->ctx, BAM_MEM_DEVICE, c->h.prp);
		c->h.lines = NULL;
		c->h.prp = NULL;
	}
	bam_mem_free(c->ctx, BAM_MEM_DEVICE, c->h.lines);
	bam_mem_free(c->ctx, BAM_MEM_DEVICE, c->h.state);
	bam_mem_free(c->ctx, BAM_MEM_DEVICE, c->h.tag);
	bam_mem_free(c->ctx, BAM_MEM_DEVICE, c->h.pending);
	bam_mem_free(c->ctx, BAM_MEM_DEVICE, c->h.prp);
	bam_mem_free(c->ctx, BAM_MEM_DEVICE, c->d);
	free(c);
}

uint64_t bam_cache_lines(const struct bam_cache *c) { return c->h.n_slots; }
uint32_t bam_cache_line_size(const struct bam_cache *c) { return c->h.line_size; }

struct flush_job {
	struct bam_cache_dev *d;
	uint32_t failures;
	int first_err;
	uint64_t per;
};

static void flush_thread(void *arg, uint64_t t)
{
	struct flush_job *j = arg;
	for (uint64_t s = t * j->per; s < (t + 1) * j->per && s < j->d->n_slots; s++) {
		int rc;
		while ((rc = bam_cache_flush_slot(j->d, s)) == -EAGAIN)
			;
		if (rc) {
			int zero = 0;
			__atomic_fetch_add(&j->failures, 1, __ATOMIC_RELAXED);
			__atomic_compare_exchange_n(&j->first_err, &zero, rc, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		}
	}
}

int bam_cache_flush(struct bam_cache *c)
{
	uint32_t failures = 0;
	if (bam_ctx_target(c->ctx) == BAM_TARGET_GPU) {
#ifdef BAM_HAVE_CUDA
		int rc = bam_gpu_workers_hold();
		if (!rc)
			rc = bam_cache_gpu_flush(c->d, c->h.n_slots, &failures);
		bam_gpu_workers_release();
		if (rc)
			return rc;
#endif
	} else {
		struct flush_job j = {.d = c->d, .per = (c->h.n_slots + 63) / 64};
		bam_cpu_launch(64, 64, flush_thread, &j);
		failures = j.failures;
		if (failures)
			return j.first_err == -ETIMEDOUT ? -ETIMEDOUT : -EIO;
	}
	return failures ? -EIO : 0;
}

int bam_cache_reclaim(struct bam_cache *c, uint64_t *held)
{
	uint64_t n = c->h.n_slots, k = 0;
	if (bam_ctx_target(c->ctx) == BAM_TARGET_CPU) {
		/* the arrays are host memory: the kernels' own function, atomically (through
		 * the host copy of the view: the same arrays) */
		struct bam_cache_dev *d = &c->h;
		for (uint64_t s = 0; s < n; s++) {
			if (bam_cache_slot_reclaim(d, s, 1))
				bam_slot_set_flags(d, s, 0, 0); /* empty */
			k += (bam_load_acquire_gpu_u32(&d->state[s]) & (BAM_SLOT_RETIRE | BAM_SLOT_PINNED)) != 0;
		}
	} else {
		uint32_t *st = malloc(n * 4);
		if (!st)
			return -ENOMEM;
		int rc = bam_mem_copy(c->ctx, st, c->h.state, n * 4);
		for (uint64_t s = 0; !rc && s < n; s++)
			k += (st[s] & (BAM_SLOT_RETIRE | BAM_SLOT_PINNED)) != 0;
		free(st);
		if (rc)
			return rc;
	}
	if (held)
		*held = k;
	return 0;
}

int bam_cache_invalidate(struct bam_cache *c)
{
	uint64_t n = c->h.n_slots;
	bam_cache_reclaim(c, NULL); /* slots whose timed-out command completed come back first */
	uint32_t *st = malloc(n * 4);
	uint64_t *tag = malloc(n * 8);
	int rc = 0;
	if (!st || !tag) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = bam_mem_copy(c->ctx, st, c->h.state, n * 4)) || (rc = bam_mem_copy(c->ctx, tag, c->h.tag, n * 8)))
		goto out;
	for (uint64_t s = 0; s < n; s++) {
		int retired = st[s] == BAM_SLOT_RETIRED && tag[s] == BAM_TAG_NONE;
		if (!retired && (st[s] & (BAM_SLOT_DIRTY | BAM_SLOT_BUSY | BAM_SLOT_CNT | BAM_SLOT_PINNED | BAM_SLOT_WRITING))) {
			rc = -EBUSY;
			goto out;
		}
		st[s] = retired ? BAM_SLOT_RETIRED : 0; /* retired slots stay out of use */
	}
	/* unmap every line from its array, then empty the slots */
	for (int i = 0; i < BAM_MAX_ARRAYS; i++) {
		struct bam_array *a = c->arrays[i];
		if (a && (rc = bam_mem_set(c->ctx, a->h.xlat, 0xff, a->h.n_lines * 4)))
			goto out;
	}
	if ((rc = bam_mem_copy(c->ctx, c->h.state, st, n * 4)) || (rc = bam_mem_set(c->ctx, c->h.tag, 0xff, n * 8)))
		goto out;
out:
	free(st);
	free(tag);
	return rc;
}

/* ---- arrays ----------------------------------------------------------------------- */

int bam_array_create(struct bam_cache *c, const struct bam_array_opts *o, struct bam_array **out)
{
	struct bam_ctx *ctx = c->ctx;
	uint32_t es = o->elem_size;
	if (es != 1 && es != 2 && es != 4 && es != 8) {
		cache_refuse(ctx, "element size %u: must be 1, 2, 4 or 8 bytes", es);
		return -EINVAL;
	}
	if (o->n_elems == 0) {
		cache_refuse(ctx, "an array needs at least one element");
		return -EINVAL;
	}
	if (o->read_only > 1) {
		cache_refuse(ctx, "array read_only %u: must be 0 (read-write) or 1 (read-only)", o->read_only);
		return -EINVAL;
	}
	if (o->priority > 1) {
		cache_refuse(ctx, "array priority %u: must be 0 (normal) or 1 (high)", o->priority);
		return -EINVAL;
	}
	const uint32_t count = bam_ctx_ctrl_count(ctx);
	if (o->first_ctrl >= count || o->n_ctrl > count - o->first_ctrl) {
		if (o->n_ctrl)
			cache_refuse(ctx, "array on controllers %u..%llu, but the context has %u (0..%u)", o->first_ctrl,
				     (unsigned long long)o->first_ctrl + o->n_ctrl - 1, count, count - 1);
		else
			cache_refuse(ctx, "array from controller %u on, but the context has %u (0..%u)", o->first_ctrl,
				     count, count - 1);
		return -EINVAL;
	}
	const uint32_t nc = o->n_ctrl ? o->n_ctrl : count - o->first_ctrl;
	if (o->n_elems > UINT64_MAX / es) {
		cache_refuse(ctx, "array of %llu elements of %u bytes: more bytes than 64 bits count",
			     (unsigned long long)o->n_elems, es);
		return -EINVAL;
	}
	int id = -1;
	for (int i = 0; i < BAM_MAX_ARRAYS; i++)
		if (!c->arrays[i]) {
			id = i;
			break;
		}
	if (id < 0) {
		cache_refuse(ctx, "a cache holds at most %d arrays", BAM_MAX_ARRAYS);
		return -ENOSPC;
	}
	struct bam_array *a = calloc(1, sizeof(*a));
	if (!a) {
		cache_refuse(ctx, "out of host memory for the array's descriptor");
		return -ENOMEM;
	}
	a->cache = c;
	pthread_mutex_init(&a->xfer_lock, NULL);
	struct bam_array_dev *h = &a->h;
	h->io = bam_ctx_dev(ctx);
	h->n_elems = o->n_elems;
	h->elem_size = es;
	while ((1u << h->elem_shift) < es)
		h->elem_shift++;
	h->id = (uint32_t)id;
	h->layout = o->layout;
	h->priority = o->priority;
	h->flags = o->read_only ? BAM_ARRAY_F_RDONLY : 0u;
	h->n_ctrl = nc;
	h->base_lba = o->base_lba;
	uint32_t lba_size = 0;
	for (uint32_t k = 0; k < nc; k++) {
		struct bam_ns_info ns;
		h->ctrl[k] = o->first_ctrl + k;
		bam_ctx_ns_info(ctx, h->ctrl[k], &ns);
		if (lba_size && ns.lba_size != lba_size) {
			cache_refuse(ctx, "controllers of one array must share an LBA size");
			free(a);
			return -EINVAL;
		}
		lba_size = ns.lba_size;
	}
	while ((1u << h->lba_shift) < lba_size)
		h->lba_shift++;
	uint64_t bytes = o->n_elems * es;
	/* whole lines, counted without the rounding's overflow (bytes near 2^64 wrapped
	 * to an array of no lines that every index passed) */
	h->n_lines = (bytes >> c->h.line_shift) + ((bytes & (c->h.line_size - 1)) != 0);
	if (h->n_lines >= (1ull << BAM_TAG_LINE_BITS)) {
		cache_refuse(ctx, "array of %llu bytes: %llu lines of %u bytes, at most 2^%u - 1 allowed",
			     (unsigned long long)bytes, (unsigned long long)h->n_lines, c->h.line_size, BAM_TAG_LINE_BITS);
		free(a);
		return -EINVAL;
	}
	uint64_t lines_per_ctrl = o->layout == BAM_LAYOUT_STRIPE ? (h->n_lines + nc - 1) / nc : h->n_lines;
	a->bytes_per_ctrl = lines_per_ctrl * c->h.line_size;
	if (o->base_lba % (c->h.line_size / lba_size)) {
		cache_refuse(ctx, "array base LBA %llu is not line aligned", (unsigned long long)o->base_lba);
		free(a);
		return -EINVAL;
	}
	for (uint32_t k = 0; k < nc; k++) {
		struct bam_ns_info ns;
		bam_ctx_ns_info(ctx, h->ctrl[k], &ns);
		uint64_t need = o->base_lba * lba_size + a->bytes_per_ctrl;
		if (need > ns.nlba * ns.lba_size) {
			cache_refuse(ctx,
				     "array of %llu bytes (%llu on each of %u controllers, whole lines) from byte %llu "
				     "would end at byte %llu of controller %u, which has %llu",
				     (unsigned long long)bytes, (unsigned long long)a->bytes_per_ctrl, nc,
				     (unsigned long long)(o->base_lba * lba_size), (unsigned long long)need, h->ctrl[k],
				     (unsigned long long)(ns.nlba * ns.lba_size));
			free(a);
			return -EINVAL;
		}
	}
	h->cache = c->d;
	h->xlat = bam_mem_alloc(ctx, BAM_MEM_DEVICE, h->n_lines * 4);
	a->d = bam_mem_alloc(ctx, BAM_MEM_DEVICE, sizeof(*a->d));
	if (!h->xlat || !a->d || bam_mem_set(ctx, h->xlat, 0xff, h->n_lines * 4) ||
	    bam_mem_copy(ctx, a->d, h, sizeof(*h))) {
		bam_mem_free(ctx, BAM_MEM_DEVICE, h->xlat);
		cache_refuse(ctx, "cannot allocate the translation table of an array of %llu lines",
			     (unsigned long long)h->n_lines);
		bam_mem_free(ctx, BAM_MEM_DEVICE, a->d);
		free(a);
		return -ENOMEM;
	}
	c->arrays[id] = a;
	c->h.arrays[id] = a->d;
	if (sync_cache(c)) {
		cache_refuse(ctx, "copying the cache's descriptor to the target failed");
		bam_array_destroy(a);
		return -EIO;
	}
	*out = a;
	return 0;
}

void bam_array_destroy(struct bam_array *a)
{
	if (!a)
		return;
	struct bam_cache *c = a->cache;
	c->arrays[a->h.id] = NULL;
	c->h.arrays[a->h.id] = NULL;
	sync_cache(c);
	bam_mem_free(c->ctx, BAM_MEM_DEVICE, a->h.xlat);
	bam_mem_free(c->ctx, BAM_MEM_DEVICE, a->d);
	if (a->xfer_status)
		bam_mem_free(c->ctx, BAM_MEM_DEVICE, a->xfer_status);
	pthread_mutex_destroy(&a->xfer_lock);
	free(a);
}

struct bam_array_dev *bam_array_dev(struct bam_array *a) { return a->d; }
uint64_t bam_array_bytes_per_ctrl(const struct bam_array *a) { return a->bytes_per_ctrl; }
uint64_t bam_array_end_lba(const struct bam_array *a)
{
	return a->h.base_lba + (a->bytes_per_ctrl >> a->h.lba_shift);
}

static int media_rw(struct bam_array *a, uint64_t first, void *buf, uint64_t n, int write)
{
	/* the array's own view points at the cache in target memory (GPU memory on the
	 * GPU): place lines with the host copy of the cache instead */
	struct bam_array_dev hv = a->h;
	hv.cache = &a->cache->h;
	struct bam_array_dev *h = &hv;
	if (first > h->n_elems || n > h->n_elems - first)
		return -ERANGE;
	uint32_t ls = a->cache->h.line_size;
	uint64_t off = first * h->elem_size, end = off + n * h->elem_size;
	uint8_t *p = buf;
	while (off < end) {
		uint64_t l = off / ls, in = off % ls;
		uint64_t len = ls - in < end - off ? ls - in : end - off;
		uint32_t reps = h->layout == BAM_LAYOUT_REPLICATE && write ? h->n_ctrl : 1;
		for (uint32_t r = 0; r < reps; r++) {
			uint32_t ctrl;
			uint64_t lba;
			bam_array_place(h, l, r, &ctrl, &lba);
			uint64_t moff = (lba << h->lba_shift) + in;
			int rc = write ? bam_ctx_media_write(a->cache->ctx, ctrl, moff, p, len)
				       : bam_ctx_media_read(a->cache->ctx, ctrl, moff, p, len);
			if (rc)
				return rc;
		}
		off += len;
		p += len;
	}
	return 0;
}

int bam_array_media_write(struct bam_array *a, uint64_t first, const void *buf, uint64_t n)
{
	return media_rw(a, first, (void *)(uintptr_t)buf, n, 1);
}

int bam_array_media_read(struct bam_array *a, uint64_t first, void *buf, uint64_t n)
{
	return media_rw(a, first, buf, n, 0);
}

int bam_array_stats(struct bam_array *a, struct bam_array_stats *out)
{
	struct bam_array_dev tmp;
	int rc = bam_mem_copy(a->cache->ctx, &tmp, a->d, sizeof(tmp));
	if (rc)
		return rc;
	memset(out, 0, sizeof(*out));
	for (int k = 0; k < BAM_CNT_SHARDS; k++) {
		const struct bam_array_counters *c = &tmp.cnt[k].c;
		out->c.hits += c->hits;
		out->c.misses += c->misses;
		out->c.evictions += c->evictions;
		out->c.writebacks += c->writebacks;
		out->c.bytes_read += c->bytes_read;
		out->c.bytes_written += c->bytes_written;
		out->c.errors += c->errors;
		out->c.accesses += c->accesses;
		out->c.fills_avoided += c->fills_avoided;
		out->c.partial_write_fetches += c->partial_write_fetches;
		out->c.writeback_errors += c->writeback_errors;
	}
#ifdef BAM_PROFILE_FILL
	{
		uint64_t pf[6] = {0}, f = 0;
		for (int k = 0; k < BAM_CNT_SHARDS; k++) {
			f += tmp.cnt[k].c.misses;
			for (int j = 0; j < 6; j++)
				pf[j] += tmp.cnt[k].prof[j];
		}
		const double per = f ? 1e3 * (double)f : 1;
		fprintf(stderr, "bam profile: %llu fills, per fill: victim search %.2f us, I/O %.2f us (submission %.2f), "
			"whole fill %.2f us; %llu waits for others' fills, %.2f us each\n", (unsigned long long)f,
			pf[0] / per, pf[1] / per, pf[5] / per, pf[2] / per, (unsigned long long)pf[4],
			pf[4] ? pf[3] / 1e3 / (double)pf[4] : 0);
	}
#endif
	out->c.bytes_requested = out->c.accesses * tmp.elem_size;
	uint64_t moved = out->c.bytes_read + out->c.bytes_written;
	out->amplification = out->c.bytes_requested ? (double)moved / (double)out->c.bytes_requested : 0;
	uint64_t lk = out->c.hits + out->c.misses;
	out->hit_rate = lk ? (double)out->c.hits / (double)lk : 0;
	return 0;
}

int bam_array_stats_reset(struct bam_array *a)
{
	struct bam_cnt_shard z[BAM_CNT_SHARDS];
	memset(z, 0, sizeof(z));
	return bam_mem_copy(a->cache->ctx, (uint8_t *)a->d + offsetof(struct bam_array_dev, cnt), &z, sizeof(z));
}

void bam_array_stats_print(FILE *f, const char *name, const struct bam_array_stats *s)
{
	fprintf(f, "  %s: accesses=%llu hits=%llu misses=%llu (hit rate %.1f%%) evictions=%llu writebacks=%llu errors=%llu\n",
		name, (unsigned long long)s->c.accesses, (unsigned long long)s->c.hits, (unsigned long long)s->c.misses,
		100.0 * s->hit_rate, (unsigned long long)s->c.evictions, (unsigned long long)s->c.writebacks,
		(unsigned long long)s->c.errors);
	if (s->c.fills_avoided || s->c.partial_write_fetches || s->c.writeback_errors)
		fprintf(f, "  %s: whole-line writes (no fetch)=%llu partial-write fetches=%llu write-back errors=%llu\n", name,
			(unsigned long long)s->c.fills_avoided, (unsigned long long)s->c.partial_write_fetches,
			(unsigned long long)s->c.writeback_errors);
	fprintf(f, "  %s: requested=%.1f MB read=%.1f MB written=%.1f MB I/O amplification=%.2fx\n", name,
		s->c.bytes_requested / 1e6, s->c.bytes_read / 1e6, s->c.bytes_written / 1e6, s->amplification);
}

/* ---- transfers through the cache: gather, read, write ---------------------------- */

static void xfer_cpu_thread(void *arg, uint64_t k)
{
	const struct bam_xfer_job *j = arg;
	bam_xfer_do_row(j, k);
}

/* Run the job on the array's target; the message of a failure in the context. */
static int xfer_run(struct bam_array *a, struct bam_xfer_job *j, void *stream, const char *what)
{
	struct bam_ctx *ctx = a->cache->ctx;
	if (j->n_rows == 0)
		return 0;
	if (!j->buf) {
		cache_refuse(ctx, "%s: no buffer", what);
		return -EINVAL;
	}
	j->a = a->d;
	int rc;
	uint32_t err = 0;
	uint64_t bad = 0;
	if (bam_ctx_target(ctx) == BAM_TARGET_CPU) {
		uint64_t st[2] = {0, 0};
		j->err = (uint32_t *)&st[0];
		j->bad = &st[1];
		/* threads that wait for I/O: more than the cores, fewer than the rows */
		rc = bam_cpu_launch(j->n_rows, j->n_rows < 32 ? (uint32_t)j->n_rows : 32, xfer_cpu_thread, j);
		err = (uint32_t)st[0];
		bad = st[1];
	} else {
#ifdef BAM_HAVE_CUDA
		pthread_mutex_lock(&a->xfer_lock);
		if (!a->xfer_status && !(a->xfer_status = bam_mem_alloc(ctx, BAM_MEM_DEVICE, 2 * sizeof(uint64_t)))) {
			pthread_mutex_unlock(&a->xfer_lock);
			cache_refuse(ctx, "%s: out of GPU memory for the result words", what);
			return -ENOMEM;
		}
		uint64_t st[2] = {0, 0};
		j->err = (uint32_t *)&a->xfer_status[0];
		j->bad = &a->xfer_status[1];
		rc = bam_mem_copy(ctx, a->xfer_status, st, sizeof(st));
		if (!rc && !(rc = bam_gpu_workers_hold()))
			rc = bam_xfer_gpu_run(j, stream);
		bam_gpu_workers_release();
		if (!rc)
			rc = bam_mem_copy(ctx, st, a->xfer_status, sizeof(st));
		pthread_mutex_unlock(&a->xfer_lock);
		err = (uint32_t)st[0];
		bad = st[1];
		if (rc) {
			cache_refuse(ctx, "%s: the GPU kernel failed (%s)", what, bam_strerror(rc));
			return rc;
		}
#else
		(void)stream;
		rc = -ENODEV;
#endif
	}
	if (rc) {
		cache_refuse(ctx, "%s: %s", what, bam_strerror(rc));
		return rc;
	}
	if (err) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg), "%s: %llu of %llu rows failed, the first with %s%s", what,
			 (unsigned long long)bad, (unsigned long long)j->n_rows, bam_strerror(-(int)err),
			 err == ERANGE && j->idx ? " (an index outside the rows)" : "");
		return -(int)err;
	}
	return 0;
}

int bam_array_gather(struct bam_array *a, const void *idx, uint32_t idx_size, uint64_t n, uint64_t row_elems,
		     void *out, void *stream)
{
	struct bam_ctx *ctx = a->cache->ctx;
	if (idx_size != 4 && idx_size != 8) {
		cache_refuse(ctx, "gather: index size %u: must be 4 (int32) or 8 (int64)", idx_size);
		return -EINVAL;
	}
	if (row_elems == 0 || row_elems > a->h.n_elems) {
		cache_refuse(ctx, "gather: %llu elements per row: must be 1 to the array's %llu",
			     (unsigned long long)row_elems, (unsigned long long)a->h.n_elems);
		return -EINVAL;
	}
	if (n && !idx) {
		cache_refuse(ctx, "gather: no index vector");
		return -EINVAL;
	}
	struct bam_xfer_job j = {.idx = idx, .idx_size = idx_size, .n_rows = n, .row_elems = row_elems,
				 .src_rows = a->h.n_elems / row_elems, .buf = out};
	return xfer_run(a, &j, stream, "gather");
}

static int range_xfer(struct bam_array *a, uint64_t first, uint64_t n, void *buf, int write, void *stream)
{
	const char *what = write ? "array write" : "array read";
	if (first > a->h.n_elems || n > a->h.n_elems - first) {
		cache_refuse(a->cache->ctx, "%s: elements [%llu, %llu) are outside the array's %llu", what,
			     (unsigned long long)first, (unsigned long long)(first + n), (unsigned long long)a->h.n_elems);
		return -ERANGE;
	}
	/* rows of one line's worth of elements: a row spans at most two lines */
	uint64_t per = a->cache->h.line_size >> a->h.elem_shift;
	struct bam_xfer_job j = {.write = (uint32_t)write, .first = first, .n_elems = n, .n_rows = (n + per - 1) / per,
				 .row_elems = per, .buf = buf};
	return xfer_run(a, &j, stream, what);
}

int bam_array_read(struct bam_array *a, uint64_t first, uint64_t n, void *out, void *stream)
{
	return range_xfer(a, first, n, out, 0, stream);
}

int bam_array_write(struct bam_array *a, uint64_t first, uint64_t n, const void *in, void *stream)
{
	return range_xfer(a, first, n, (void *)(uintptr_t)in, 1, stream);
}

uint64_t bam_array_n_elems(const struct bam_array *a) { return a->h.n_elems; }
uint32_t bam_array_elem_size(const struct bam_array *a) { return a->h.elem_size; }
struct bam_ctx *bam_array_ctx(const struct bam_array *a) { return a->cache->ctx; }
