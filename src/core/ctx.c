/* SPDX-License-Identifier: MIT */
/*
 * Context: opens a back end, creates the I/O queue pairs the way an NVMe driver does
 * (allocate the rings, Create I/O CQ then Create I/O SQ: Base spec 5.4/5.5), and
 * publishes the device-side view (struct bam_dev) in the target's memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef BAM_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#include "bam/cache.h"
#include "ctx_internal.h"
#include "bam/version.h"

int bam_ctx_io_error(struct bam_ctx *ctx, int clear, int *err, uint32_t *nvme_status, uint64_t *n_errors)
{
	struct {
		uint32_t error, error_status;
		uint64_t n_errors;
	} w;
	BAM_STATIC_ASSERT(offsetof(struct bam_dev, error_status) == offsetof(struct bam_dev, error) + 4 &&
				  offsetof(struct bam_dev, n_errors) == offsetof(struct bam_dev, error) + 8,
			  "the error words are contiguous");
	uint8_t *src = (uint8_t *)ctx->dev + offsetof(struct bam_dev, error);
	int rc = bam_mem_copy(ctx, &w, src, sizeof(w));
	if (rc)
		return rc;
	if (err)
		*err = (int)w.error;
	if (nvme_status)
		*nvme_status = w.error_status;
	if (n_errors)
		*n_errors = w.n_errors;
	if (clear) {
		memset(&w, 0, sizeof(w));
		rc = bam_mem_copy(ctx, src, &w, sizeof(w));
	}
	return rc;
}

const char *bam_version(void)
{
	return BAM_VERSION_STRING;
}

#ifndef BAM_HAVE_CUDA
int bam_gpu_available(void)
{
	return 0;
}
int bam_gpu_workers_on_demand(int on)
{
	(void)on;
	return 0;
}
int bam_gpu_workers_hold(void)
{
	return 0;
}
void bam_gpu_workers_release(void)
{
}
#endif

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- memory of the target ---------------------------------------------------- */

void *bam_mem_alloc(struct bam_ctx *ctx, enum bam_mem_kind kind, uint64_t bytes)
{
	if (bytes == 0)
		bytes = 1;
	if (ctx->ops && ctx->ops->mem_alloc && ctx->priv) {
		void *q = NULL;
		int rc = ctx->ops->mem_alloc(ctx->priv, kind, bytes, &q);
		if (rc != -ENOENT)
			return rc ? NULL : q;
	}
#ifdef BAM_HAVE_CUDA
	if (ctx->target == BAM_TARGET_GPU)
		return bam_gpu_alloc(kind, bytes);
#endif
	void *p = NULL;
	if (posix_memalign(&p, 4096, BAM_ALIGN_UP(bytes, 4096)))
		return NULL;
	memset(p, 0, bytes);
	return p;
}

void bam_mem_free(struct bam_ctx *ctx, enum bam_mem_kind kind, void *p)
{
	if (!p)
		return;
	if (ctx->ops && ctx->ops->mem_free && ctx->priv && ctx->ops->mem_free(ctx->priv, kind, p) == 0)
		return;
#ifdef BAM_HAVE_CUDA
	if (ctx->target == BAM_TARGET_GPU) {
		bam_gpu_free(kind, p);
		return;
	}
#endif
	free(p);
}

int bam_mem_copy(struct bam_ctx *ctx, void *dst, const void *src, uint64_t bytes)
{
#ifdef BAM_HAVE_CUDA
	if (ctx->target == BAM_TARGET_GPU)
		return bam_gpu_copy(dst, src, bytes);
#endif
	memmove(dst, src, bytes);
	return 0;
}

int bam_mem_set(struct bam_ctx *ctx, void *dst, int c, uint64_t bytes)
{
#ifdef BAM_HAVE_CUDA
	if (ctx->target == BAM_TARGET_GPU)
		return bam_gpu_memset(dst, c, bytes);
#endif
	memset(dst, c, bytes);
	return 0;
}

/* First unsigned number in file 'path' (scaled by 'unit'), 0 if none ("max" etc.). */
static uint64_t read_u64_file(const char *path, const char *key, uint64_t unit)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[256];
	unsigned long long v = 0;
	size_t kl = key ? strlen(key) : 0;
	while (fgets(line, sizeof(line), f)) {
		if (key && strncmp(line, key, kl))
			continue;
		if (sscanf(line + kl, " %llu", &v) != 1)
			v = 0;
		break;
	}
	fclose(f);
	return (uint64_t)v * unit;
}

/* Host memory this process can still take: MemAvailable (the kernel's estimate of
 * what can be allocated without swapping), else the physical memory; capped by a
 * cgroup (v2 or v1) memory limit. 0 if nothing can be told. */
static uint64_t host_mem_available(void)
{
	uint64_t avail = read_u64_file("/proc/meminfo", "MemAvailable:", 1024);
	if (!avail) {
		long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
		avail = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
	}
	uint64_t lim = read_u64_file("/sys/fs/cgroup/memory.max", NULL, 1);
	if (!lim)
		lim = read_u64_file("/sys/fs/cgroup/memory/memory.limit_in_bytes", NULL, 1);
	if (lim && (!avail || lim < avail))
		avail = lim;
	return avail;
}

int bam_mem_available(enum bam_target target, enum bam_mem_kind kind, uint64_t *bytes)
{
	if (target != BAM_TARGET_CPU && target != BAM_TARGET_GPU)
		return -EINVAL;
	if (target == BAM_TARGET_GPU && kind == BAM_MEM_DEVICE) {
#ifdef BAM_HAVE_CUDA
		size_t fr = 0, tot = 0;
		if (!bam_gpu_available())
			return -ENODEV;
		bam_gpu_pause_all(); /* in case the query waits for the device */
		cudaError_t e = cudaMemGetInfo(&fr, &tot);
		bam_gpu_resume_all();
		if (e != cudaSuccess)
			return -ENOSYS;
		*bytes = fr;
		return 0;
#else
		return -ENODEV;
#endif
	}
	uint64_t a = host_mem_available();
	if (!a)
		return -ENOSYS;
	*bytes = a;
	return 0;
}

/* Memory a controller may still move data into or out of (the lines of a cache
 * destroyed while some timed-out command had not completed, bam/array.h "retired"):
 * freed by bam_ctx_close once the controllers have stopped, not before. */
struct deferred_free {
	enum bam_mem_kind kind;
	void *p;
	struct deferred_free *next;
};

/* Free p (from bam_mem_alloc on ctx) in bam_ctx_close, after the controllers have
 * stopped. Used by cache.c. */
void bam_ctx_defer_free(struct bam_ctx *ctx, enum bam_mem_kind kind, void *p)
{
	if (!p)
		return;
	struct deferred_free *d = malloc(sizeof(*d));
	if (!d)
		return; /* left allocated: never freed under a controller's DMA */
	d->kind = kind;
	d->p = p;
	pthread_mutex_lock(&ctx->deferred_lock);
	d->next = ctx->deferred;
	ctx->deferred = d;
	pthread_mutex_unlock(&ctx->deferred_lock);
}

static void free_deferred(struct bam_ctx *ctx)
{
	pthread_mutex_lock(&ctx->deferred_lock);
	while (ctx->deferred) {
		struct deferred_free *d = ctx->deferred;
		ctx->deferred = d->next;
		bam_mem_free(ctx, d->kind, d->p);
		free(d);
	}
	pthread_mutex_unlock(&ctx->deferred_lock);
}

/* ---- queue pairs --------------------------------------------------------------- */

static int admin(struct bam_ctx *ctx, uint32_t c, struct nvme_sqe *sqe, void *data, char *err, size_t errlen)
{
	struct nvme_cqe cqe;
	memset(&cqe, 0, sizeof(cqe));
	int rc = ctx->ops->admin(ctx->priv, c, sqe, data, &cqe);
	if (rc) {
		set_err(err, errlen, "controller %u: admin opcode 0x%02x failed: %s", c, sqe->opc, bam_strerror(rc));
		return rc;
	}
	uint16_t st = cqe.status & NVME_STATUS_MASK;
	if (st) {
		set_err(err, errlen, "controller %u: admin opcode 0x%02x: %s (SCT %u SC 0x%02x)", c, sqe->opc,
			nvme_status_name(st), NVME_STATUS_SCT(st), NVME_STATUS_SC(st));
		return -EIO;
	}
	return 0;
}

static int identify(struct bam_ctx *ctx, uint32_t c, char *err, size_t errlen)
{
	struct bam_ns_info *ns = &ctx->ns[c];
	struct nvme_id_ctrl *idc = calloc(1, sizeof(*idc));
	struct nvme_id_ns *idn = calloc(1, sizeof(*idn));
	int rc = -ENOMEM;
	uint32_t nsid = 1, mqes = 0;
	if (ctx->ops->ns_params)
		ctx->ops->ns_params(ctx->priv, c, &nsid, &mqes);
	if (!idc || !idn)
		goto out;
	struct nvme_sqe s;
	memset(&s, 0, sizeof(s));
	s.opc = NVME_ADMIN_IDENTIFY;
	s.cdw10 = NVME_IDENTIFY_CNS_CTRL;
	if ((rc = admin(ctx, c, &s, idc, err, errlen)))
		goto out;
	memset(&s, 0, sizeof(s));
	s.opc = NVME_ADMIN_IDENTIFY;
	s.nsid = nsid;
	s.cdw10 = NVME_IDENTIFY_CNS_NS;
	if ((rc = admin(ctx, c, &s, idn, err, errlen)))
		goto out;
	memcpy(ns->model, idc->mn, 40);
	ns->model[40] = 0;
	for (int i = 39; i >= 0 && ns->model[i] == ' '; i--)
		ns->model[i] = 0;
	ns->nsid = nsid;
	ns->nlba = idn->nsze;
	ns->lba_size = 1u << idn->lbaf[idn->flbas & 0xf].lbads;
	ns->mdts_bytes = idc->mdts ? (NVME_PAGE_SIZE << idc->mdts) : 0;
	ns->mqes = mqes ? mqes : idc->maxcmd ? idc->maxcmd : 65536; /* CAP.MQES+1 from the back end */
	rc = 0;
out:
	free(idc);
	free(idn);
	return rc;
}

static void free_queues(struct bam_ctx *ctx)
{
	if (!ctx->qmem)
		return;
	for (uint32_t i = 0; i < ctx->n_ctrl * ctx->opts.qpairs; i++) {
		struct bam_ctx_qmem *m = &ctx->qmem[i];
		bam_mem_free(ctx, ctx->ops->queue_mem, m->sq);
		bam_mem_free(ctx, ctx->ops->queue_mem, m->cq);
		bam_mem_free(ctx, BAM_MEM_DEVICE, m->turn);
		bam_mem_free(ctx, BAM_MEM_DEVICE, m->mark);
		bam_mem_free(ctx, BAM_MEM_DEVICE, m->consumed);
		bam_mem_free(ctx, BAM_MEM_DEVICE, m->cid);
	}
	for (uint32_t c = 0; c < ctx->n_ctrl; c++)
		if (ctx->qps_dev)
			bam_mem_free(ctx, BAM_MEM_DEVICE, ctx->qps_dev[c]);
	if (ctx->host_dev.progress)
		bam_mem_free(ctx, BAM_MEM_DEVICE, ctx->host_dev.progress);
	ctx->host_dev.progress = NULL;
	free(ctx->qmem);
	free(ctx->qps_dev);
	ctx->qmem = NULL;
	ctx->qps_dev = NULL;
}

static int create_queues(struct bam_ctx *ctx, char *err, size_t errlen)
{
	const uint32_t nq = ctx->opts.qpairs, depth = ctx->opts.queue_depth;
	ctx->qmem = calloc((size_t)ctx->n_ctrl * nq, sizeof(*ctx->qmem));
	ctx->qps_dev = calloc(ctx->n_ctrl, sizeof(*ctx->qps_dev));
	struct bam_qpair *host_qps = calloc(nq, sizeof(*host_qps));
	if (!ctx->qmem || !ctx->qps_dev || !host_qps) {
		free(host_qps);
		return -ENOMEM;
	}
	uint32_t shift = 0;
	while ((1u << shift) < depth)
		shift++;
	/* the device's progress word (bam_dev.progress), zeroed */
	if (!(ctx->host_dev.progress = bam_mem_alloc(ctx, BAM_MEM_DEVICE, sizeof(uint32_t))))
		goto nomem;
	for (uint32_t c = 0; c < ctx->n_ctrl; c++) {
		if (depth > ctx->ns[c].mqes) {
			set_err(err, errlen, "queue depth %u exceeds controller %u's CAP.MQES+1 = %u", depth, c, ctx->ns[c].mqes);
			free(host_qps);
			return -EINVAL;
		}
		ctx->qps_dev[c] = bam_mem_alloc(ctx, BAM_MEM_DEVICE, (uint64_t)nq * sizeof(struct bam_qpair));
		if (!ctx->qps_dev[c])
			goto nomem;
		for (uint32_t q = 0; q < nq; q++) {
			struct bam_ctx_qmem *m = &ctx->qmem[c * nq + q];
			struct bam_qpair *h = &host_qps[q];
			memset(h, 0, sizeof(*h));
			m->sq = bam_mem_alloc(ctx, ctx->ops->queue_mem, (uint64_t)depth * sizeof(struct nvme_sqe));
			m->cq = bam_mem_alloc(ctx, ctx->ops->queue_mem, (uint64_t)depth * sizeof(struct nvme_cqe));
			m->turn = bam_mem_alloc(ctx, BAM_MEM_DEVICE, (uint64_t)depth * 4);
			m->mark = bam_mem_alloc(ctx, BAM_MEM_DEVICE, (uint64_t)(depth + 31) / 32 * 4);
			m->consumed = bam_mem_alloc(ctx, BAM_MEM_DEVICE, (uint64_t)(depth + 31) / 32 * 4);
			m->cid = bam_mem_alloc(ctx, BAM_MEM_DEVICE, (uint64_t)depth * 4);
			if (!m->sq || !m->cq || !m->turn || !m->mark || !m->consumed || !m->cid)
				goto nomem;
			h->sq = m->sq;
			h->cq = m->cq;
			h->sq_turn = m->turn;
			h->sq_mark = m->mark;
			h->cq_consumed = m->consumed;
			h->cid_state = m->cid;
			h->progress = ctx->host_dev.progress;
			h->depth = depth;
			h->depth_shift = shift;
			h->qid = q + 1;
			h->nsid = ctx->ns[c].nsid;
			h->sys_scope = !(ctx->ops->gpu_resident && ctx->target == BAM_TARGET_GPU);
			h->sq_doorbell = ctx->ops->doorbell(ctx->priv, c, q + 1, 0);
			h->cq_doorbell = ctx->ops->doorbell(ctx->priv, c, q + 1, 1);

			/* Create I/O CQ (5.4), then the SQ bound to it (5.5); physically
			 * contiguous rings (PC = 1), no interrupts: completions are polled. */
			struct nvme_sqe s;
			memset(&s, 0, sizeof(s));
			s.opc = NVME_ADMIN_CREATE_CQ;
			s.prp1 = (uint64_t)(uintptr_t)m->cq;
			s.cdw10 = ((depth - 1) << NVME_CREATE_Q_QSIZE_SHIFT) | (q + 1);
			s.cdw11 = NVME_CREATE_CQ_PC;
			int rc = admin(ctx, c, &s, NULL, err, errlen);
			if (rc) {
				free(host_qps);
				return rc;
			}
			memset(&s, 0, sizeof(s));
			s.opc = NVME_ADMIN_CREATE_SQ;
			s.prp1 = (uint64_t)(uintptr_t)m->sq;
			s.cdw10 = ((depth - 1) << NVME_CREATE_Q_QSIZE_SHIFT) | (q + 1);
			s.cdw11 = ((q + 1) << NVME_CREATE_SQ_CQID_SHIFT) | NVME_CREATE_SQ_PC;
			if ((rc = admin(ctx, c, &s, NULL, err, errlen))) {
				free(host_qps);
				return rc;
			}
		}
		if (bam_mem_copy(ctx, ctx->qps_dev[c], host_qps, (uint64_t)nq * sizeof(struct bam_qpair))) {
			free(host_qps);
			return -EIO;
		}
		struct bam_dev_ctrl *dc = &ctx->host_dev.ctrl[c];
		dc->qps = ctx->qps_dev[c];
		dc->nlba = ctx->ns[c].nlba;
		dc->lba_shift = 0;
		while ((1u << dc->lba_shift) < ctx->ns[c].lba_size)
			dc->lba_shift++;
		dc->nsid = ctx->ns[c].nsid;
		dc->max_nlb = ctx->ns[c].mdts_bytes ? ctx->ns[c].mdts_bytes >> dc->lba_shift : 65536;
		if (dc->max_nlb > 65536)
			dc->max_nlb = 65536;
	}
	free(host_qps);
	return 0;
nomem:
	free(host_qps);
	set_err(err, errlen, "out of memory for %u queue pairs of depth %u", nq, depth);
	return -ENOMEM;
}

/* ---- open / close -------------------------------------------------------------- */

/* The back end a back-end string names ("" or NULL: the default, bam_backend_default) and, in *args, the text after
 * its "name:"; NULL with the message in err if none is registered. The caller's err
 * (*err, *errlen) is cleared first, or, when it is NULL, replaced by local[locallen]. */
static const struct bam_backend_ops *backend_of(const char *backend, const char **args, char **err, size_t *errlen,
						char *local, size_t locallen)
{
	if (!*err) {
		*err = local;
		*errlen = locallen;
	}
	(*err)[0] = 0;
	if (!backend || !*backend)
		backend = bam_backend_default;
	const char *colon = strchr(backend, ':');
	size_t nlen = colon ? (size_t)(colon - backend) : strlen(backend);
	const struct bam_backend_ops *ops = bam_backend_find(backend, nlen);
	if (!ops)
	{
		char known[256];
		bam_backend_names(known, sizeof(known));
		set_err(*err, *errlen, "unknown back end '%.*s' (known: %s)", (int)nlen, backend, known);
	}
	*args = colon ? colon + 1 : "";
	return ops;
}

int bam_backend_check(const char *backend, char *err, size_t errlen)
{
	char localerr[512];
	const char *args;
	const struct bam_backend_ops *ops = backend_of(backend, &args, &err, &errlen, localerr, sizeof(localerr));
	if (!ops)
		return -EINVAL;
	return ops->check ? ops->check(args, err, errlen) : 0;
}

int bam_backend_media(const char *backend, int (*cb)(void *arg, const char *path), void *arg, char *err,
		      size_t errlen)
{
	char localerr[512];
	const char *args;
	const struct bam_backend_ops *ops = backend_of(backend, &args, &err, &errlen, localerr, sizeof(localerr));
	if (!ops)
		return -EINVAL;
	return ops->media ? ops->media(args, cb, arg, err, errlen) : 0;
}

int bam_backend_info(const char *backend, struct bam_backend_info *out, char *err, size_t errlen)
{
	char localerr[512];
	const char *args;
	const struct bam_backend_ops *ops = backend_of(backend, &args, &err, &errlen, localerr, sizeof(localerr));
	if (!ops)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->n_ctrl = 1;
	int rc = ops->info ? ops->info(args, out, err, errlen) : ops->check ? ops->check(args, err, errlen) : 0;
	snprintf(out->name, sizeof(out->name), "%s", ops->name);
	return rc;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		const uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

int bam_backend_sized(const char *backend, uint64_t total, uint64_t align, char *out, size_t outlen, char *err,
		      size_t errlen)
{
	struct bam_backend_info info;
	if (!backend || !*backend)
		backend = bam_backend_default; /* bam_ctx_open's default */
	int rc = bam_backend_info(backend, &info, err, errlen);
	if (rc)
		return rc;
	int n;
	if (!(info.flags & BAM_BACKEND_F_SIZABLE)) {
		n = snprintf(out, outlen, "%s", backend);
		return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
	}
	const uint64_t count = info.n_ctrl ? info.n_ctrl : 1;
	uint64_t per = total / count + (total % count != 0);
	/* whole units of 'align' and whole 4 KiB blocks (a multiple of any LBA size the
	 * string may ask for, so that a line/LBA mismatch is reported as such): a multiple
	 * of their least common multiple */
	if (!align)
		align = 1;
	const uint64_t g = gcd_u64(align, 4096);
	if (align / g > UINT64_MAX / 4096)
		return -EOVERFLOW;
	const uint64_t unit = align / g * 4096;
	const uint64_t whole = per / unit + (per % unit != 0);
	if (whole > UINT64_MAX / unit)
		return -EOVERFLOW;
	per = whole * unit;
	n = snprintf(out, outlen, "%s%ssize=%llu", backend, strchr(backend, ':') ? "," : ":", (unsigned long long)per);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int bam_ctx_open(const char *backend, const struct bam_ctx_opts *opts, struct bam_ctx **out,
		 char *err, size_t errlen)
{
	char localerr[512];
	const char *args;
	const struct bam_backend_ops *ops = backend_of(backend, &args, &err, &errlen, localerr, sizeof(localerr));
	if (!ops)
		return -EINVAL;
	struct bam_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	if (opts)
		ctx->opts = *opts;
	ctx->ops = ops;
	pthread_mutex_init(&ctx->deferred_lock, NULL);

	enum bam_target t = ctx->opts.target;
#ifdef BAM_HAVE_CUDA
	int have_gpu = t == BAM_TARGET_CPU ? 0 : bam_gpu_available();
#else
	int have_gpu = 0;
#endif
	if (t == BAM_TARGET_AUTO)
		t = have_gpu ? BAM_TARGET_GPU : BAM_TARGET_CPU;
	if (t == BAM_TARGET_GPU && !have_gpu) {
		set_err(err, errlen, "GPU target asked for, but %s",
#ifdef BAM_HAVE_CUDA
			"no usable CUDA device was found"
#else
			"this build has no CUDA (configure on a machine with nvcc)"
#endif
		);
		free(ctx);
		return -ENODEV;
	}
	ctx->target = t;
#ifdef BAM_HAVE_CUDA
	if (t == BAM_TARGET_GPU) {
		/* the library's kernels are loaded before any persistent kernel starts */
		bam_xfer_gpu_prepare();
		bam_cache_gpu_prepare();
		/* Under lazy module loading, the first launch of any kernel not loaded yet
		 * waits for the device to go idle: never, while persistent controller workers
		 * run from open to close. Refused then, unless the workers run on demand (only
		 * inside holds: bam_gpu_workers_on_demand) or the application says it loaded
		 * every kernel it will launch (BAM_ALLOW_LAZY_LOADING=1). */
		if (ops->gpu_resident && !bam_gpu_workers_is_on_demand() && bam_gpu_lazy_loading() == 1 &&
		    !getenv("BAM_ALLOW_LAZY_LOADING")) {
			set_err(err, errlen, "%s: the CUDA driver loads modules lazily (CUDA_MODULE_LOADING=LAZY, which "
				"PyTorch sets when it initialises CUDA first), and this back end's controller kernel "
				"runs from open to close: the first launch of any kernel not yet loaded would wait "
				"for it forever. Set CUDA_MODULE_LOADING=EAGER before CUDA initialises, call "
				"bam_gpu_workers_on_demand(1) first (the Python package does), or set "
				"BAM_ALLOW_LAZY_LOADING=1 once every kernel the process launches has run once",
				ops->name);
			free(ctx);
			return -EDEADLK;
		}
	}
#endif
	if (!ctx->opts.qpairs)
		ctx->opts.qpairs = t == BAM_TARGET_GPU ? 128 : 16;
	if (!ctx->opts.queue_depth)
		ctx->opts.queue_depth = t == BAM_TARGET_GPU ? 1024 : 256;
	if (!ctx->opts.timeout_ns)
		ctx->opts.timeout_ns = 5000000000ull;
	uint32_t d = ctx->opts.queue_depth;
	if (d < 2 || d > 65536 || (d & (d - 1))) {
		set_err(err, errlen, "queue depth %u: must be a power of two from 2 to 65536", d);
		free(ctx);
		return -EINVAL;
	}
	if (ctx->opts.qpairs > 65535) {
		set_err(err, errlen, "%u queue pairs: at most 65535 per controller", ctx->opts.qpairs);
		free(ctx);
		return -EINVAL;
	}

	int rc = ops->open(ctx, args, &ctx->priv, &ctx->n_ctrl, err, errlen);
	if (rc) {
		free(ctx);
		return rc;
	}
	if (ctx->n_ctrl == 0 || ctx->n_ctrl > BAM_MAX_CTRLS) {
		set_err(err, errlen, "back end opened %u controllers (1 to %u supported)", ctx->n_ctrl, BAM_MAX_CTRLS);
		rc = -EINVAL;
		goto fail;
	}
	for (uint32_t c = 0; c < ctx->n_ctrl; c++)
		if ((rc = identify(ctx, c, err, errlen)))
			goto fail;
	ctx->host_dev.n_ctrl = ctx->n_ctrl;
	ctx->host_dev.n_qp = ctx->opts.qpairs;
	ctx->host_dev.timeout_ns = ctx->opts.timeout_ns;
	if ((rc = create_queues(ctx, err, errlen)))
		goto fail;
	ctx->dev = bam_mem_alloc(ctx, BAM_MEM_DEVICE, sizeof(struct bam_dev));
	if (!ctx->dev) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = bam_mem_copy(ctx, ctx->dev, &ctx->host_dev, sizeof(struct bam_dev))))
		goto fail;
	if ((rc = ops->start(ctx->priv))) {
		set_err(err, errlen, "%s: controllers failed to start: %s", ops->name, bam_strerror(rc));
		goto fail;
	}
	ctx->started = 1;
	snprintf(ctx->desc, sizeof(ctx->desc), "%s", ops->desc ? ops->desc(ctx->priv) : ops->name);
	*out = ctx;
	return 0;
fail:
	if (!err[0])
		set_err(err, errlen, "%s", bam_strerror(rc));
	bam_ctx_close(ctx);
	return rc;
}

void bam_ctx_close(struct bam_ctx *ctx)
{
	if (!ctx)
		return;
	if (ctx->started && ctx->ops->stop)
		ctx->ops->stop(ctx->priv);
	free_deferred(ctx); /* no controller runs any more */
	free_queues(ctx);
	if (ctx->dev)
		bam_mem_free(ctx, BAM_MEM_DEVICE, ctx->dev);
	if (ctx->priv && ctx->ops->close)
		ctx->ops->close(ctx->priv);
	pthread_mutex_destroy(&ctx->deferred_lock);
	free(ctx);
}

/* ---- accessors ----------------------------------------------------------------- */

enum bam_target bam_ctx_target(const struct bam_ctx *ctx) { return ctx->target; }
uint32_t bam_ctx_ctrl_count(const struct bam_ctx *ctx) { return ctx->n_ctrl; }
uint32_t bam_ctx_qpairs(const struct bam_ctx *ctx) { return ctx->opts.qpairs; }
uint32_t bam_ctx_queue_depth(const struct bam_ctx *ctx) { return ctx->opts.queue_depth; }
uint64_t bam_ctx_timeout_ns(const struct bam_ctx *ctx) { return ctx->opts.timeout_ns; }
const char *bam_ctx_backend_desc(const struct bam_ctx *ctx) { return ctx->desc; }
const char *bam_ctx_error(const struct bam_ctx *ctx) { return ctx->errmsg; }
struct bam_dev *bam_ctx_dev(struct bam_ctx *ctx) { return ctx->dev; }

int bam_ctx_ns_info(const struct bam_ctx *ctx, uint32_t i, struct bam_ns_info *out)
{
	if (i >= ctx->n_ctrl)
		return -EINVAL;
	*out = ctx->ns[i];
	return 0;
}

int bam_ctx_media_write(struct bam_ctx *ctx, uint32_t i, uint64_t off, const void *buf, uint64_t len)
{
	if (i >= ctx->n_ctrl)
		return -EINVAL;
	uint64_t cap = ctx->ns[i].nlba * ctx->ns[i].lba_size;
	if (off > cap || len > cap - off)
		return -ERANGE;
	return ctx->ops->media_rw(ctx->priv, i, off, (void *)(uintptr_t)buf, len, 1);
}

int bam_ctx_media_read(struct bam_ctx *ctx, uint32_t i, uint64_t off, void *buf, uint64_t len)
{
	if (i >= ctx->n_ctrl)
		return -EINVAL;
	uint64_t cap = ctx->ns[i].nlba * ctx->ns[i].lba_size;
	if (off > cap || len > cap - off)
		return -ERANGE;
	return ctx->ops->media_rw(ctx->priv, i, off, buf, len, 0);
}

int bam_ctx_ctrl_stats(struct bam_ctx *ctx, uint32_t i, struct bam_ctrl_stats *out)
{
	if (i >= ctx->n_ctrl)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	int rc = ctx->ops->stats ? ctx->ops->stats(ctx->priv, i, out) : 0;
	if (rc)
		return rc;
	uint32_t nq = ctx->opts.qpairs;
	struct bam_qpair *qps = malloc((size_t)nq * sizeof(*qps));
	if (!qps)
		return -ENOMEM;
	if ((rc = bam_mem_copy(ctx, qps, ctx->qps_dev[i], (uint64_t)nq * sizeof(*qps))) == 0) {
		for (uint32_t q = 0; q < nq; q++) {
			out->qp.submitted += qps[q].cnt.submitted;
			out->qp.completed += qps[q].cnt.completed;
			out->qp.doorbells += qps[q].cnt.doorbells;
			out->qp.timeouts += qps[q].cnt.timeouts;
			out->qp.late += qps[q].cnt.late;
			out->qp.stray += qps[q].cnt.stray;
		}
	}
	free(qps);
	return rc;
}

const char *bam_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case -ETIMEDOUT: return "timed out waiting for the controller";
	case -EIO: return "I/O error (NVMe status not success)";
	case -EINVAL: return "invalid argument";
	case -ENOMEM: return "out of memory";
	case -ENODEV: return "no such device";
	case -ERANGE: return "out of range";
	case -EBUSY: return "busy: every cache line is referenced";
	case -ENOSPC: return "no space";
	case -EAGAIN: return "resource temporarily unavailable";
	default: return strerror(err < 0 ? -err : err);
	}
}

void bam_ctx_dump(struct bam_ctx *ctx, FILE *f)
{
	uint32_t nq = ctx->opts.qpairs;
	struct bam_qpair *qps = malloc((size_t)nq * sizeof(*qps));
	if (!qps)
		return;
	for (uint32_t c = 0; c < ctx->n_ctrl; c++) {
		if (bam_mem_copy(ctx, qps, ctx->qps_dev[c], (uint64_t)nq * sizeof(*qps)))
			break;
		for (uint32_t q = 0; q < nq; q++) {
			struct bam_qpair *p = &qps[q];
			if (!p->sq_ticket && q > 3)
				continue;
			fprintf(f, "ctrl %u qp %u: ticket=%u sq_tail=%u sq_head=%u cq_head=%u credits=%u locks=%u/%u "
				   "submitted=%llu completed=%llu doorbells=%llu timeouts=%llu late=%llu stray=%llu\n",
				c, p->qid, p->sq_ticket, p->sq_tail, p->sq_head, p->cq_head, p->credits, p->sq_lock, p->cq_lock,
				(unsigned long long)p->cnt.submitted, (unsigned long long)p->cnt.completed,
				(unsigned long long)p->cnt.doorbells, (unsigned long long)p->cnt.timeouts,
				(unsigned long long)p->cnt.late, (unsigned long long)p->cnt.stray);
		}
		if (ctx->ops->dump)
			ctx->ops->dump(ctx->priv, c, f);
	}
	free(qps);
}
