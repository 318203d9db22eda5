/* SPDX-License-Identifier: MIT */
/*
 * query.c - bam_table_query_run (bam/table_query.h): the queries resolved against the
 * table's directory, the columns placed as the mode says (onto the back end's media
 * through the provisioning path, or into target memory), the kernels (table_kern.h) run
 * per query on the GPU or on host threads, the answers gathered and, with verify,
 * compared with the CPU reference (query_ref.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bam/backend.h"
#include "bam/table_query.h"
#include "query_internal.h"
#ifdef BAM_HAVE_CUDA
#include "table_gpu.h"
#endif

static const char *const mode_names[] = {"bam", "whole-column", "host", "gpu"};

const char *bam_table_mode_name(enum bam_table_mode m)
{
	return (unsigned)m < 4 ? mode_names[m] : NULL;
}

int bam_table_mode_parse(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, mode_names[i]))
			return i;
	if (!strcmp(s, "whole") || !strcmp(s, "whole_column"))
		return BAM_TABLE_MODE_WHOLE_COLUMN;
	return -1;
}

int bam_table_taxi_query(int k, struct bam_table_query *q)
{
	static const char *const dep[] = {"fare_amount", "tip_amount", "tolls_amount", "total_amount", "passenger_count"};
	if (k < 0 || k > 5)
		return -EINVAL;
	memset(q, 0, sizeof(*q));
	snprintf(q->name, sizeof(q->name), "Q%d", k);
	snprintf(q->where, sizeof(q->where), "trip_distance");
	q->lo = BAM_TQ_TAXI_LO;
	q->hi = BAM_TQ_TAXI_HI;
	q->ncols = (uint32_t)k;
	for (int j = 0; j < k; j++)
		snprintf(q->cols[j], sizeof(q->cols[j]), "%s", dep[j]);
	if (k == 5)
		snprintf(q->group_by, sizeof(q->group_by), "passenger_count");
	return 0;
}

struct qrun {
	const struct bam_table_query_opts *o;
	struct bam_table_run_result *r;
	char *err;
	size_t errlen;
	const char *who;
	struct bam_table t;
	int fd;
	enum bam_target tgt;
	int gpu;
	/* per table column: used by some query; where it is */
	uint8_t *need;
	struct bam_array **arr;
	void **mem;              /* host / gpu modes: loaded once */
	struct bam_ctx *ctx;
	struct bam_cache *cache;
	struct tq_slot *acc;     /* target memory */
	uint32_t *error;         /* target memory */
	uint32_t max_slots;
};

static void fail(struct qrun *R, const char *fmt, ...)
{
	if (!R->err || !R->errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	size_t at = strlen(R->err);
	if (at && at + 2 < R->errlen)
		R->err[at++] = '\n';
	vsnprintf(R->err + at, R->errlen - at, fmt, ap);
	va_end(ap);
}

static void msg(struct qrun *R, const char *fmt, ...)
{
	if (R->o->quiet)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (R->o->msg)
		R->o->msg(R->o->msg_arg, line);
	else
		fprintf(stderr, "%s\n", line);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int tq_pread(int fd, void *buf, uint64_t len, uint64_t off)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t r = pread(fd, p, len > (1u << 30) ? (1u << 30) : len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EIO;
		p += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

/* ---- resolving a query against the directory ---- */

static int numeric(uint32_t type)
{
	return type != BAM_COL_DICT;
}

int tq_resolve(const struct bam_table *t, const struct bam_table_query *q, struct tq_plan *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->q = q;
	if (q->ncols > BAM_TQ_MAX_COLS - 1) {
		snprintf(err, errlen, "%s: at most %u columns besides the predicate's", q->name, BAM_TQ_MAX_COLS - 1);
		return -EINVAL;
	}
	if (!(q->lo < q->hi)) {
		snprintf(err, errlen, "%s: empty range [%g, %g)", q->name, q->lo, q->hi);
		return -EINVAL;
	}
	p->ncols = 1 + q->ncols;
	for (uint32_t j = 0; j < p->ncols; j++) {
		const char *name = j ? q->cols[j - 1] : q->where;
		int c = bam_table_col_find(t, name);
		if (c < 0) {
			snprintf(err, errlen, "%s: the table has no column '%s'", q->name, name);
			return -EINVAL;
		}
		if (!numeric(t->cols[c].type)) {
			snprintf(err, errlen, "%s: column %s is a dictionary of strings: it can only be grouped by", q->name,
				 name);
			return -EINVAL;
		}
		for (uint32_t k = 0; k < j; k++)
			if (p->col[k] == c) {
				snprintf(err, errlen, "%s: column %s named twice", q->name, name);
				return -EINVAL;
			}
		p->col[j] = c;
	}
	p->gcol = -1;
	p->gdep = -1;
	p->ngroups = 1;
	if (q->group_by[0]) {
		int c = bam_table_col_find(t, q->group_by);
		if (c < 0) {
			snprintf(err, errlen, "%s: --group-by: the table has no column '%s'", q->name, q->group_by);
			return -EINVAL;
		}
		const struct bam_table_col *gc = &t->cols[c];
		if (gc->type != BAM_COL_INT32 && gc->type != BAM_COL_INT64 && gc->type != BAM_COL_DICT) {
			snprintf(err, errlen, "%s: --group-by %s: a %s column; group by an int32, int64 or dict column",
				 q->name, q->group_by, bam_col_type_name(gc->type));
			return -EINVAL;
		}
		const double span = gc->nulls == t->rows ? 0 : gc->max - gc->min + 1;
		if (span > BAM_TQ_MAX_GROUPS) {
			snprintf(err, errlen, "%s: --group-by %s: %.0f keys (%g to %g); at most %u", q->name, q->group_by,
				 span, gc->min, gc->max, BAM_TQ_MAX_GROUPS);
			return -EINVAL;
		}
		p->gcol = c;
		p->gmin = gc->nulls == t->rows ? 0 : (int64_t)gc->min;
		p->ngroups = (uint32_t)span + 1;
		for (uint32_t j = 1; j < p->ncols; j++)
			if (p->col[j] == c)
				p->gdep = (int)j;
	}
	return 0;
}

/* ---- target memory ---- */

static void *tmem_alloc(struct qrun *R, uint64_t bytes, int pinned)
{
	if (R->ctx) /* (bam mode: through the library, which minds the emulator's kernel) */
		return bam_mem_alloc(R->ctx, pinned ? BAM_MEM_HOST_PINNED : BAM_MEM_DEVICE, bytes);
#ifdef BAM_HAVE_CUDA
	if (R->gpu)
		return tq_gpu_alloc(pinned, bytes);
#endif
	void *p = NULL;
	if (posix_memalign(&p, 4096, bytes ? bytes : 1))
		return NULL;
	return p;
}

static void tmem_free(struct qrun *R, void *p, int pinned)
{
	if (!p)
		return;
	if (R->ctx) {
		bam_mem_free(R->ctx, pinned ? BAM_MEM_HOST_PINNED : BAM_MEM_DEVICE, p);
		return;
	}
#ifdef BAM_HAVE_CUDA
	if (R->gpu) {
		tq_gpu_free(pinned, p);
		return;
	}
#endif
	free(p);
}

static int tmem_copy(struct qrun *R, void *dst, const void *src, uint64_t bytes)
{
	if (R->ctx)
		return bam_mem_copy(R->ctx, dst, src, bytes);
#ifdef BAM_HAVE_CUDA
	if (R->gpu)
		return tq_gpu_copy(dst, src, bytes);
#endif
	memcpy(dst, src, bytes);
	return 0;
}

/* a column read from the file into target memory (pinned: host memory read zero-copy);
 * whole-column reads are paced at read_bw when given */
static int load_column(struct qrun *R, int c, int pinned, double bw, void **out)
{
	const struct bam_table_col *col = &R->t.cols[c];
	const uint64_t chunk = R->o->chunk_bytes ? R->o->chunk_bytes : (64u << 20);
	void *dst = tmem_alloc(R, col->bytes ? col->bytes : 1, pinned);
	if (!dst) {
		fail(R, "%s: cannot allocate %llu bytes of %s memory for column %s", R->who,
		     (unsigned long long)col->bytes, pinned ? "pinned host" : R->gpu ? "GPU" : "host", col->name);
		return -ENOMEM;
	}
	int rc = 0;
#ifdef BAM_HAVE_CUDA
	if (R->gpu && !pinned)
		rc = tq_gpu_load(R->fd, col->offset, col->bytes, dst, chunk, bw);
	else
#endif
	{
		const double t0 = now_s();
		for (uint64_t o = 0; o < col->bytes && !rc; o += chunk) {
			const uint64_t n = col->bytes - o < chunk ? col->bytes - o : chunk;
			rc = tq_pread(R->fd, (uint8_t *)dst + o, n, col->offset + o);
			if (!rc && bw > 0) {
				const double due = t0 + (double)(o + n) / bw, t = now_s();
				if (due > t)
					usleep((useconds_t)((due - t) * 1e6));
			}
		}
	}
	if (rc) {
		fail(R, "%s: reading column %s of %s failed: %s", R->who, col->name, R->o->table, bam_strerror(rc));
		tmem_free(R, dst, pinned);
		return rc;
	}
	*out = dst;
	return 0;
}

/* ---- bam mode: the back end, the cache, the arrays, the columns on the media ---- */

static int setup_bam(struct qrun *R)
{
	const struct bam_table_query_opts *o = R->o;
	const uint32_t line = o->line ? o->line : 4096;
	char e[512], backend[1024];
	struct bam_backend_info info;
	uint32_t k = 1;
	if (!bam_backend_info(o->backend, &info, NULL, 0) && info.n_ctrl)
		k = info.n_ctrl;
	uint64_t per = 0, total = 0;
	for (uint32_t c = 0; c < R->t.ncols; c++)
		if (R->need[c]) {
			const uint64_t lines = (R->t.cols[c].bytes + line - 1) / line;
			per += ((lines + k - 1) / k + 1) * line;
			total += lines * line;
		}
	int rc = bam_backend_sized(o->backend, per * k, line, backend, sizeof(backend), e, sizeof(e));
	if (rc == -EINVAL)
		snprintf(backend, sizeof(backend), "%s", o->backend);
	else if (rc) {
		fail(R, "%s: --backend=%s: %s", R->who, o->backend, bam_strerror(rc));
		return rc;
	}
	double t0 = now_s();
	struct bam_ctx_opts co = {.target = R->tgt, .qpairs = o->qpairs, .ctrl_workers = o->ctrl_workers,
				  .timeout_ns = o->timeout_ms * 1000000ull, .quiet = o->quiet};
	if ((rc = bam_ctx_open(backend, &co, &R->ctx, e, sizeof(e)))) {
		fail(R, "%s: --backend=%s: %s", R->who, o->backend, e);
		R->r->refused = rc == -EINVAL || rc == -ENODEV;
		return rc;
	}
	snprintf(R->r->backend_desc, sizeof(R->r->backend_desc), "%s", bam_ctx_backend_desc(R->ctx));
	uint64_t cache = o->cache_bytes ? o->cache_bytes : total / 8;
	if (!o->cache_bytes && cache > (4ull << 30))
		cache = 4ull << 30;
	if (cache > total + line)
		cache = total + line;
	if (cache < (1u << 20))
		cache = 1u << 20;
	struct bam_cache_opts cop = {.capacity = cache, .line_size = line};
	if (bam_cache_fits(R->tgt, &cop, e, sizeof(e)) == -ENOMEM) {
		fail(R, "%s: the cache: %s", R->who, e);
		return -ENOMEM;
	}
	if ((rc = bam_cache_create(R->ctx, &cop, &R->cache))) {
		fail(R, "%s: creating the cache failed: %s: %s", R->who, bam_strerror(rc), bam_ctx_error(R->ctx));
		R->r->refused = rc == -EINVAL;
		return rc;
	}
	R->r->cache_bytes = cache;
	R->r->line = line;
	uint64_t base = 0;
	for (uint32_t c = 0; c < R->t.ncols; c++) {
		if (!R->need[c])
			continue;
		struct bam_array_opts ao = {.n_elems = R->t.rows, .elem_size = R->t.cols[c].elem_size, .base_lba = base};
		if ((rc = bam_array_create(R->cache, &ao, &R->arr[c]))) {
			fail(R, "%s: creating the array of column %s failed: %s: %s", R->who, R->t.cols[c].name,
			     bam_strerror(rc), bam_ctx_error(R->ctx));
			return rc;
		}
		base = bam_array_end_lba(R->arr[c]);
	}
	R->r->setup_s = now_s() - t0;
	/* the columns onto the media (as dd would before a run: not in any e2e) */
	t0 = now_s();
	const uint64_t chunk = 64u << 20;
	uint8_t *buf = malloc(chunk);
	if (!buf)
		return -ENOMEM;
	for (uint32_t c = 0; c < R->t.ncols && !rc; c++) {
		if (!R->need[c])
			continue;
		const struct bam_table_col *col = &R->t.cols[c];
		for (uint64_t off = 0; off < col->bytes && !rc; off += chunk) {
			const uint64_t n = col->bytes - off < chunk ? col->bytes - off : chunk;
			if ((rc = tq_pread(R->fd, buf, n, col->offset + off)))
				fail(R, "%s: reading column %s failed", R->who, col->name);
			else if ((rc = bam_array_media_write(R->arr[c], off / col->elem_size, buf, n / col->elem_size)))
				fail(R, "%s: writing column %s onto the back end failed: %s", R->who, col->name,
				     bam_strerror(rc));
		}
		msg(R, "%s: column %s placed on the back end (%.1f MB)", R->who, col->name, (double)col->bytes / 1e6);
	}
	free(buf);
	R->r->place_s = now_s() - t0;
	return rc;
}

/* ---- one query ---- */

struct cpu_job {
	const struct tq_view *v;
	struct tq_slot *local; /* [nt][nslots] */
	uint32_t nslots;
	uint64_t per;          /* segments per logical thread */
};

static void cpu_fn(void *arg, uint64_t tid)
{
	struct cpu_job *J = arg;
	const uint64_t s0 = tid * J->per, s1 = s0 + J->per < J->v->nseg ? s0 + J->per : J->v->nseg;
	struct tq_slot *acc = J->local + tid * J->nslots;
	for (uint64_t s = s0; s < s1; s++) {
		if (__atomic_load_n(J->v->error, __ATOMIC_RELAXED))
			return;
		tq_segment(J->v, s, 0, 1, acc);
	}
}

uint32_t tq_cpu_workers(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (uint32_t)(n > 64 ? 64 : n) : 1;
}

static void slots_init(struct tq_slot *s, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		s[i].cnt = 0;
		s[i].sum = 0;
		s[i].minkey = ~0ull;
		s[i].maxinv = ~0ull;
	}
}

static int run_kernels(struct qrun *R, struct tq_view *v, struct tq_slot *host)
{
	const uint32_t nslots = v->ngroups * v->ncols;
	int rc;
	uint32_t zero = 0;
	if ((rc = tmem_copy(R, R->error, &zero, 4)) || (rc = tmem_copy(R, R->acc, host, nslots * sizeof(*host))))
		return rc;
	v->acc = R->acc;
	v->error = R->error;
	if (R->gpu) {
#ifdef BAM_HAVE_CUDA
		v->nseg = (v->rows + TQ_K * 32 - 1) / (TQ_K * 32);
		if ((rc = tq_gpu_run(v)))
			return rc;
#endif
	} else {
		v->nseg = (v->rows + TQ_K - 1) / TQ_K;
		const uint32_t w = tq_cpu_workers();
		uint64_t nt = (uint64_t)w * 8;
		if (nt > v->nseg)
			nt = v->nseg ? v->nseg : 1;
		struct cpu_job J = {.v = v, .nslots = nslots, .per = (v->nseg + nt - 1) / nt};
		J.local = malloc(nt * nslots * sizeof(struct tq_slot));
		if (!J.local)
			return -ENOMEM;
		slots_init(J.local, nt * nslots);
		rc = bam_cpu_launch(nt, w, cpu_fn, &J);
		/* the threads' slots in thread order: the same sums for the same thread count */
		for (uint64_t t = 0; !rc && t < nt; t++)
			for (uint32_t s = 0; s < nslots; s++)
				tq_merge(&R->acc[s], &J.local[t * nslots + s]);
		free(J.local);
		if (rc)
			return rc;
	}
	uint32_t e = 0;
	if ((rc = tmem_copy(R, &e, R->error, 4)) || (rc = tmem_copy(R, host, R->acc, nslots * sizeof(*host))))
		return rc;
	return e ? -(int)e : 0;
}

static void stat_of(struct bam_tq_stat *st, const struct tq_slot *s)
{
	st->count = s->cnt;
	st->sum = s->sum;
	st->min = s->cnt ? tq_unkey(s->minkey) : 0;
	st->max = s->cnt ? tq_unkey(~s->maxinv) : 0;
}

void tq_stat_merge(struct bam_tq_stat *d, const struct bam_tq_stat *s)
{
	if (!s->count)
		return;
	if (!d->count || s->min < d->min)
		d->min = s->min;
	if (!d->count || s->max > d->max)
		d->max = s->max;
	d->count += s->count;
	d->sum += s->sum;
}

void tq_group_label(const struct bam_table *t, const struct tq_plan *p, uint32_t g, struct bam_tq_group *gr)
{
	gr->null_key = g == p->ngroups - 1;
	gr->key = gr->null_key ? 0 : p->gmin + g;
	const struct bam_table_col *gc = &t->cols[p->gcol];
	if (gr->null_key)
		snprintf(gr->label, sizeof(gr->label), "null");
	else if (gc->type == BAM_COL_DICT && (uint64_t)gr->key < gc->dict_count)
		snprintf(gr->label, sizeof(gr->label), "%s", gc->dict[gr->key]);
	else
		snprintf(gr->label, sizeof(gr->label), "%lld", (long long)gr->key);
}

/* slots (host copy) -> the result's columns and groups */
static int gather(const struct bam_table *t, const struct tq_plan *p, const struct tq_slot *slots, struct bam_tq_result *qr)
{
	const uint32_t nc = p->ncols;
	for (uint32_t g = 0; g < p->ngroups; g++)
		for (uint32_t j = 0; j < nc; j++) {
			struct bam_tq_stat st;
			stat_of(&st, &slots[g * nc + j]);
			tq_stat_merge(&qr->col[j], &st);
		}
	qr->matched = qr->col[0].count;
	if (p->gcol >= 0) {
		qr->groups = calloc(p->ngroups, sizeof(*qr->groups));
		if (!qr->groups)
			return -ENOMEM;
		for (uint32_t g = 0; g < p->ngroups; g++) {
			if (!slots[g * nc].cnt)
				continue;
			struct bam_tq_group *gr = &qr->groups[qr->ngroups++];
			tq_group_label(t, p, g, gr);
			gr->rows = slots[g * nc].cnt;
			for (uint32_t j = 0; j < nc; j++)
				stat_of(&gr->col[j], &slots[g * nc + j]);
		}
	}
	return 0;
}

static int sums_close(double a, double b, double scale)
{
	return fabs(a - b) <= 1e-9 * scale + 1e-9;
}

static int same_stat(const struct bam_tq_stat *a, const struct bam_tq_stat *b, double abs_sum)
{
	return a->count == b->count && a->min == b->min && a->max == b->max && sums_close(a->sum, b->sum, abs_sum);
}

static int verify(struct qrun *R, const struct tq_plan *p, struct bam_tq_result *qr)
{
	struct bam_tq_result ref;
	double abs_sum[BAM_TQ_MAX_COLS];
	char e[256];
	int rc = tq_reference(R->fd, &R->t, p, &ref, abs_sum, e, sizeof(e));
	if (rc) {
		fail(R, "%s: %s: the CPU reference failed: %s", R->who, p->q->name, e);
		return rc;
	}
	int ok = ref.matched == qr->matched && ref.ngroups == qr->ngroups;
	for (uint32_t j = 0; ok && j < p->ncols; j++) {
		if (!same_stat(&ref.col[j], &qr->col[j], abs_sum[j])) {
			ok = 0;
			msg(R, "%s: %s: column %s differs from the CPU reference: count %llu sum %.17g min %.17g max %.17g; reference %llu %.17g %.17g %.17g",
			    R->who, p->q->name, qr->col_name[j], (unsigned long long)qr->col[j].count, qr->col[j].sum,
			    qr->col[j].min, qr->col[j].max, (unsigned long long)ref.col[j].count, ref.col[j].sum,
			    ref.col[j].min, ref.col[j].max);
		}
	}
	for (uint32_t g = 0; ok && g < qr->ngroups; g++) {
		const struct bam_tq_group *a = &qr->groups[g], *b = &ref.groups[g];
		ok = a->key == b->key && a->null_key == b->null_key && a->rows == b->rows;
		for (uint32_t j = 0; ok && j < p->ncols; j++)
			ok = same_stat(&a->col[j], &b->col[j], abs_sum[j]);
		if (!ok)
			msg(R, "%s: %s: group %s differs from the CPU reference", R->who, p->q->name, a->label);
	}
	if (!ok && ref.matched != qr->matched)
		msg(R, "%s: %s: %llu matching rows, the CPU reference %llu", R->who, p->q->name,
		    (unsigned long long)qr->matched, (unsigned long long)ref.matched);
	free(ref.groups);
	qr->verified = ok ? 1 : -1;
	return 0;
}

/* the table columns a query reads, in read order: predicate, others, group (separate) */
static uint32_t query_cols(const struct tq_plan *p, int *cols)
{
	uint32_t n = 0;
	for (uint32_t j = 0; j < p->ncols; j++)
		cols[n++] = p->col[j];
	if (p->gcol >= 0 && p->gdep < 0)
		cols[n++] = p->gcol;
	return n;
}

static struct tq_col col_view(struct qrun *R, int c, void *mem)
{
	struct tq_col v;
	memset(&v, 0, sizeof(v));
	v.type = R->t.cols[c].type;
	v.es = R->t.cols[c].elem_size;
	if (R->arr[c])
		v.a = bam_array_dev(R->arr[c]);
	else
		v.p = mem;
	return v;
}

static int run_query(struct qrun *R, const struct tq_plan *p, struct bam_tq_result *qr)
{
	const struct bam_table_query_opts *o = R->o;
	int rc = 0;
	int cols[BAM_TQ_MAX_COLS + 1];
	const uint32_t ncr = query_cols(p, cols);
	void *wmem[BAM_TQ_MAX_COLS + 1] = {0};
	snprintf(qr->name, sizeof(qr->name), "%s", p->q->name);
	qr->ncols = p->ncols;
	qr->rows = R->t.rows;
	for (uint32_t j = 0; j < p->ncols; j++)
		snprintf(qr->col_name[j], sizeof(qr->col_name[j]), "%s", R->t.cols[p->col[j]].name);
	const double t0 = now_s();
	if (o->mode == BAM_TABLE_MODE_WHOLE_COLUMN) {
		for (uint32_t k = 0; k < ncr && !rc; k++)
			rc = load_column(R, cols[k], 0, o->read_bw, &wmem[k]);
		qr->load_s = now_s() - t0;
	}
	struct tq_view v;
	memset(&v, 0, sizeof(v));
	v.rows = R->t.rows;
	v.ncols = p->ncols;
	v.ngroups = p->ngroups;
	v.grouped = p->gcol >= 0;
	v.gdep = p->gdep;
	v.gmin = p->gmin;
	v.lo = p->q->lo;
	v.hi = p->q->hi;
	for (uint32_t k = 0; k < ncr; k++) {
		void *mem = o->mode == BAM_TABLE_MODE_WHOLE_COLUMN ? wmem[k] : R->mem[cols[k]];
		struct tq_col cv = col_view(R, cols[k], mem);
		if (k < p->ncols)
			v.col[k] = cv;
		else
			v.gcol = cv;
	}
	struct tq_slot *host = malloc((uint64_t)p->ngroups * p->ncols * sizeof(*host));
	if (!host)
		rc = -ENOMEM;
	if (!rc) {
		slots_init(host, (uint64_t)p->ngroups * p->ncols);
		if (R->cache) { /* every query from storage: a cold cache, fresh counters */
			bam_cache_invalidate(R->cache);
			for (uint32_t k = 0; k < ncr; k++)
				bam_array_stats_reset(R->arr[cols[k]]);
		}
		const double tc = now_s();
		rc = run_kernels(R, &v, host);
		qr->compute_s = now_s() - tc;
		if (rc)
			fail(R, "%s: %s: the query kernel failed: %s", R->who, p->q->name, bam_strerror(rc));
	}
	qr->e2e_s = qr->load_s + qr->compute_s;
	for (uint32_t k = 0; k < ncr; k++)
		if (wmem[k])
			tmem_free(R, wmem[k], 0);
	if (!rc)
		rc = gather(&R->t, p, host, qr);
	free(host);
	if (rc)
		return rc;
	qr->selectivity = qr->rows ? (double)qr->matched / (double)qr->rows : 0;
	qr->rows_per_s = qr->e2e_s > 0 ? (double)qr->rows / qr->e2e_s : 0;
	/* bytes the kernels asked for and bytes read from storage, per column */
	for (uint32_t k = 0; k < ncr; k++) {
		const struct bam_table_col *col = &R->t.cols[cols[k]];
		if (R->arr[cols[k]]) {
			struct bam_array_stats st;
			bam_array_stats(R->arr[cols[k]], &st);
			qr->col_requested[k] = st.c.bytes_requested;
			qr->col_read[k] = st.c.bytes_read;
		} else {
			/* the kernels read the predicate column in full and the others at the
			 * matching rows (the predicate again when grouped) */
			const uint64_t n = k == 0 ? qr->rows + (v.grouped ? qr->matched : 0) : qr->matched;
			qr->col_requested[k] = n * col->elem_size;
			qr->col_read[k] = o->mode == BAM_TABLE_MODE_WHOLE_COLUMN ? col->bytes : 0;
		}
		qr->bytes_requested += qr->col_requested[k];
		qr->bytes_read += qr->col_read[k];
	}
	qr->amplification = qr->bytes_requested ? (double)qr->bytes_read / (double)qr->bytes_requested : 0;
	if (o->verify)
		rc = verify(R, p, qr);
	return rc;
}

static void qrun_free(struct qrun *R)
{
	for (uint32_t c = 0; R->mem && c < R->t.ncols; c++)
		if (R->mem[c])
			tmem_free(R, R->mem[c], R->o->mode == BAM_TABLE_MODE_HOST);
	tmem_free(R, R->acc, 0);
	tmem_free(R, R->error, 0);
	for (uint32_t c = 0; R->arr && c < R->t.ncols; c++)
		if (R->arr[c])
			bam_array_destroy(R->arr[c]);
	if (R->cache)
		bam_cache_destroy(R->cache);
	if (R->ctx)
		bam_ctx_close(R->ctx);
	free(R->need);
	free(R->arr);
	free(R->mem);
	if (R->fd >= 0)
		close(R->fd);
	bam_table_close(&R->t);
}

int bam_table_query_run(const struct bam_table_query_opts *o, struct bam_table_run_result *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	if (err && errlen)
		err[0] = 0;
	struct bam_table_query_opts oo = *o;
	if (!oo.backend)
		oo.backend = "emu";
	struct qrun RR, *R = &RR;
	memset(R, 0, sizeof(*R));
	R->o = &oo;
	R->r = r;
	R->err = err;
	R->errlen = errlen;
	R->who = o->prog ? o->prog : "query";
	R->fd = -1;
	char e[512];
	struct tq_plan *plans = NULL;
	int rc = bam_table_open(o->table, &R->t, e, sizeof(e));
	if (rc) {
		fail(R, "%s: %s", R->who, e);
		return rc;
	}
	if (oo.line && (oo.line < 512 || oo.line > 65536 || (oo.line & (oo.line - 1)))) {
		fail(R, "%s: --line-size=%u: a power of two from 512 to 65536", R->who, oo.line);
		r->refused = 1;
		rc = -EINVAL;
		goto out;
	}
	R->tgt = o->target;
	if (R->tgt == BAM_TARGET_AUTO)
		R->tgt = bam_gpu_available() ? BAM_TARGET_GPU : BAM_TARGET_CPU;
#ifndef BAM_HAVE_CUDA
	if (R->tgt == BAM_TARGET_GPU) {
		fail(R, "%s: --target=gpu: this build has no CUDA", R->who);
		r->refused = 1;
		rc = -ENODEV;
		goto out;
	}
#endif
	R->gpu = R->tgt == BAM_TARGET_GPU;
	r->on_gpu = R->gpu;
	if (!R->gpu && o->mode == BAM_TABLE_MODE_GPU) {
		fail(R, "%s: --mode=gpu needs a GPU (this run is on the CPU target); use --mode=host", R->who);
		r->refused = 1;
		rc = -ENODEV;
		goto out;
	}
	plans = calloc(o->nq ? o->nq : 1, sizeof(*plans));
	R->need = calloc(R->t.ncols, 1);
	R->arr = calloc(R->t.ncols, sizeof(*R->arr));
	R->mem = calloc(R->t.ncols, sizeof(*R->mem));
	r->q = calloc(o->nq ? o->nq : 1, sizeof(*r->q));
	if (!plans || !R->need || !R->arr || !R->mem || !r->q) {
		rc = -ENOMEM;
		goto out;
	}
	r->nq = o->nq;
	r->rows = R->t.rows;
	for (uint32_t i = 0; i < o->nq; i++) {
		if ((rc = tq_resolve(&R->t, &o->q[i], &plans[i], e, sizeof(e)))) {
			fail(R, "%s: %s", R->who, e);
			r->refused = 1;
			goto out;
		}
		int cols[BAM_TQ_MAX_COLS + 1];
		uint32_t n = query_cols(&plans[i], cols);
		for (uint32_t k = 0; k < n; k++)
			R->need[cols[k]] = 1;
		const uint32_t ns = plans[i].ngroups * plans[i].ncols;
		if (ns > R->max_slots)
			R->max_slots = ns;
	}
	if ((R->fd = open(o->table, O_RDONLY)) < 0) {
		rc = -errno;
		fail(R, "%s: %s: %s", R->who, o->table, strerror(errno));
		goto out;
	}
#ifdef BAM_HAVE_CUDA
	if (R->gpu)
		tq_gpu_prepare();
#endif
	if (o->mode == BAM_TABLE_MODE_BAM) {
		if ((rc = setup_bam(R)))
			goto out;
	} else {
		snprintf(r->backend_desc, sizeof(r->backend_desc), "%s memory", mode_names[o->mode]);
		if (o->mode != BAM_TABLE_MODE_WHOLE_COLUMN) {
			const double t0 = now_s();
			for (uint32_t c = 0; c < R->t.ncols && !rc; c++)
				if (R->need[c])
					rc = load_column(R, (int)c, o->mode == BAM_TABLE_MODE_HOST, 0, &R->mem[c]);
			r->place_s = now_s() - t0;
			if (rc)
				goto out;
		}
	}
	R->acc = tmem_alloc(R, (uint64_t)R->max_slots * sizeof(struct tq_slot), 0);
	R->error = tmem_alloc(R, 64, 0);
	if (!R->acc || !R->error) {
		fail(R, "%s: out of target memory for the aggregates", R->who);
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < o->nq && !rc; i++) {
		rc = run_query(R, &plans[i], &r->q[i]);
		if (!rc)
			msg(R, "%s: %s: %.3f s, selectivity %.4f", R->who, plans[i].q->name, r->q[i].e2e_s,
			    r->q[i].selectivity);
	}
out:
	free(plans);
	qrun_free(R);
	return rc;
}

void bam_table_run_result_free(struct bam_table_run_result *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; r->q && i < r->nq; i++)
		free(r->q[i].groups);
	free(r->q);
	r->q = NULL;
	r->nq = 0;
}
