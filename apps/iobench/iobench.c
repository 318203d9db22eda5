/* SPDX-License-Identifier: MIT */
/*
 * bam_iobench_run (bam/iobench.h): a fio-like benchmark of the I/O engine. The options,
 * their checks, the physical baseline (before the back end starts), the prefill of the
 * verification pattern, the run (GPU kernel or CPU-target threads), its statistics and
 * the CPU-orchestrated comparisons of --compare (bench_file.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "bam/bam.h"
#include "bam/backend.h"
#include "bam/iobench.h"
#include "bench_file.h"
#include "bench_kern.h"
#include "engine.h"
#ifdef BAM_HAVE_CUDA
#include "bench_gpu.h"
#endif

_Static_assert(BAM_IOBENCH_MAX_IODEPTH == BENCH_MAX_IODEPTH, "iodepth bound");
_Static_assert((int)BAM_IOBENCH_READ == (int)BENCH_READ && (int)BAM_IOBENCH_WRITE == (int)BENCH_WRITE &&
		       (int)BAM_IOBENCH_RANDREAD == (int)BENCH_RANDREAD &&
		       (int)BAM_IOBENCH_RANDWRITE == (int)BENCH_RANDWRITE && (int)BAM_IOBENCH_RANDRW == (int)BENCH_RANDRW,
	       "rw modes");

#define CMP_POSIX BAM_IOBENCH_CMP_POSIX
#define CMP_URING BAM_IOBENCH_CMP_URING

void bam_iobench_opts_init(struct bam_iobench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->backend = "emu";
	o->rw = BAM_IOBENCH_RANDREAD;
	o->rwmix_read = 50;
	o->bs = 4096;
	o->size = 1ull << 30;
	o->size_auto = 1;
	o->iodepth = 1;
	o->verify = 1;
	o->baseline = BAM_IOBENCH_BASELINE_AUTO;
	o->timeout_ms = 5000;
	o->seed = 1;
	o->prefill = BAM_IOBENCH_PREFILL_AUTO;
	o->uring_qd = 128;
}

static const char *given_backend(const struct bam_iobench_opts *o)
{
	return o->backend ? o->backend : "emu";
}

int bam_iobench_backend(const struct bam_iobench_opts *o, char *out, size_t outlen, char *err, size_t errlen)
{
	/* emu without an explicit size: each emulated namespace sized to its share */
	if (ib_backend_sized(given_backend(o), o->size, o->bs, out, outlen))
		return ib_fail(err, errlen, -EINVAL,
			       "--size=%llu: too large for the emulated namespaces (their size would pass 2^64 bytes)",
			       (unsigned long long)o->size);
	return 0;
}

/* ---- prefill: the media holds the LBA-derived pattern before reads -------------- */

struct prefill {
	struct bam_ctx *ctx;
	struct bench_args *a;
	uint64_t per_ctrl_bytes;
	uint64_t chunk;
	uint64_t nchunks; /* per controller */
	int rc;
};

static void prefill_one(void *arg, uint64_t t)
{
	struct prefill *p = arg;
	uint32_t c = (uint32_t)(t / p->nchunks);
	uint64_t off = (t % p->nchunks) * p->chunk;
	uint64_t len = p->per_ctrl_bytes - off < p->chunk ? p->per_ctrl_bytes - off : p->chunk;
	uint64_t *buf = malloc(len);
	if (!buf) {
		p->rc = -ENOMEM;
		return;
	}
	uint32_t per = (1u << p->a->lba_shift) / 8u;
	uint64_t lba0 = off >> p->a->lba_shift;
	for (uint64_t k = 0; k < len / 8; k++)
		buf[k] = bench_word(c, lba0 + k / per, (uint32_t)(k % per));
	int rc = bam_ctx_media_write(p->ctx, c, off, buf, len);
	if (rc)
		p->rc = rc;
	free(buf);
}

/* fdatasync the files of a file back end (other back ends: nothing to do). 0 or -EIO
 * (message in err). */
static int files_sync(const char *desc, char *err, size_t errlen)
{
	struct bench_files f;
	if (strncmp(desc, "file:", 5))
		return 0;
	int rc = bench_files_parse(desc, &f, err, errlen);
	if (!rc) {
		rc = bench_files_sync(&f, err, errlen);
		bench_files_free(&f);
	}
	return rc;
}

/* ---- results ---------------------------------------------------------------------- */

/* The q-quantile (0..1) of a histogram: the midpoint of the bucket holding it, kept
 * within the series' exact min and max */
static uint64_t percentile(const uint64_t *hist, const struct bench_lat *l, double q)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < BENCH_HIST; i++)
		total += hist[i];
	if (!total)
		return 0;
	uint64_t want = (uint64_t)ceil(q * (double)total), acc = 0, w = 0, v = 0;
	if (want == 0)
		want = 1;
	uint32_t i = 0;
	for (; i < BENCH_HIST; i++) {
		acc += hist[i];
		if (acc >= want)
			break;
	}
	v = bench_hist_value(i < BENCH_HIST ? i : BENCH_HIST - 1, &w);
	v += w / 2;
	if (l->n && v < l->min)
		v = l->min;
	if (l->n && v > l->max)
		v = l->max;
	return v;
}

/* Series k of direction d, its stripes summed */
static struct bench_lat lat_sum(const struct bench_out *o, int k, int d)
{
	struct bench_lat l;
	bench_lat_init(&l);
	for (int i = 0; i < BENCH_LAT_STRIPES; i++) {
		const struct bench_lat *x = &o->lat[i][k][d];
		if (!x->n)
			continue;
		l.n += x->n;
		l.sum += x->sum;
		l.sumsq += x->sumsq;
		l.min = x->min < l.min ? x->min : l.min;
		l.max = x->max > l.max ? x->max : l.max;
	}
	return l;
}

static void lat_result(const struct bench_out *o, int k, int d, struct bam_iobench_lat *r)
{
	static const double pct[BAM_IOBENCH_NPCT] = BAM_IOBENCH_PCT;
	const struct bench_lat ls = lat_sum(o, k, d), *l = &ls;
	memset(r, 0, sizeof(*r));
	if (!l->n)
		return;
	r->n = l->n;
	r->min_ns = l->min;
	r->max_ns = l->max;
	r->mean_ns = (double)l->sum / (double)l->n;
	double var = l->sumsq / (double)l->n - r->mean_ns * r->mean_ns;
	r->stdev_ns = l->n > 1 && var > 0 ? sqrt(var * (double)l->n / (double)(l->n - 1)) : 0;
	for (int i = 0; i < BAM_IOBENCH_NPCT; i++)
		r->pct_ns[i] = percentile(o->hist[k][d], l, pct[i] / 100.0);
}

/* Both directions' histograms of series k merged (the headline latency of a mixed run) */
static uint64_t percentile_all(const struct bench_out *o, int k, double q)
{
	static uint64_t h[BENCH_HIST];
	struct bench_lat l = lat_sum(o, k, 0);
	const struct bench_lat wl = lat_sum(o, k, 1), *w = &wl;
	if (w->n) {
		l.min = l.n && l.min < w->min ? l.min : w->min;
		l.max = l.max > w->max ? l.max : w->max;
		l.n += w->n;
	}
	for (uint32_t i = 0; i < BENCH_HIST; i++)
		h[i] = o->hist[k][0][i] + o->hist[k][1][i];
	return percentile(h, &l, q);
}

struct progress {
	struct bam_ctx *ctx;
	struct bench_out *dev_out;
	int done; /* atomic: set by the main thread when the run ends */
	uint64_t total_ios;
	double runtime;
	int quiet;
	const struct bam_iobench_opts *o;
};

static double now_s(void)
{
	return (double)bam_time_ns() / 1e9;
}

static void *progress_main(void *arg)
{
	struct progress *p = arg;
	double t0 = now_s(), last = t0;
	uint64_t last_ios = 0;
	while (!__atomic_load_n(&p->done, __ATOMIC_ACQUIRE)) {
		usleep(100000);
		double t = now_s();
		if (t - last < 2.0 || p->quiet)
			continue;
		struct bench_out o;
		if (bam_mem_copy(p->ctx, &o, p->dev_out, offsetof(struct bench_out, hist)))
			continue;
		double rate = (double)(o.ios - last_ios) / (t - last);
		if (p->total_ios)
			ib_say(p->o->msg, p->o->msg_arg, BAM_IOBENCH_MSG_PROGRESS, "%.0f s, %llu / %llu I/Os (%.1f%%), %.0f IOPS",
			       t - t0, (unsigned long long)o.ios, (unsigned long long)p->total_ios,
			       100.0 * o.ios / p->total_ios, rate);
		else
			ib_say(p->o->msg, p->o->msg_arg, BAM_IOBENCH_MSG_PROGRESS, "%.0f / %.0f s, %llu I/Os, %.0f IOPS", t - t0,
			       p->runtime, (unsigned long long)o.ios, rate);
		last = t;
		last_ios = o.ios;
	}
	return NULL;
}

static void cpu_bench_thread(void *arg, uint64_t tid)
{
	bench_thread(arg, tid);
}

static void cpu_flush_thread(void *arg, uint64_t c)
{
	bench_flush(arg, (uint32_t)c);
}

/* ---- what reads are checked against; what a write run's writes landed in ---------- */

struct paths {
	uint32_t n;
	char *p[BAM_MAX_CTRLS];
};

static int add_path(void *arg, const char *path)
{
	struct paths *ps = arg;
	if (ps->n >= BAM_MAX_CTRLS)
		return -E2BIG;
	if (!(ps->p[ps->n] = strdup(path)))
		return -ENOMEM;
	ps->n++;
	return 0;
}

static void paths_free(struct paths *ps)
{
	for (uint32_t i = 0; i < ps->n; i++)
		free(ps->p[i]);
	ps->n = 0;
}

/* Whether a prefill may write over the storage's files: 0, or -EINVAL with why in err
 * (a block device; a file whose sampled LBAs hold neither zeros nor the pattern). */
static int storage_prefill_check(const struct paths *ps, uint32_t lba_size, uint64_t per_ctrl_bytes, char *err,
				 size_t errlen)
{
	uint64_t *buf = malloc(lba_size);
	if (!buf)
		return -ENOMEM;
	int rc = 0;
	for (uint32_t c = 0; c < ps->n && !rc; c++) {
		struct stat st;
		if (stat(ps->p[c], &st))
			continue; /* (not there: the open created nothing to lose) */
		if (S_ISBLK(st.st_mode)) {
			rc = ib_fail(err, errlen, -EINVAL,
				     "--prefill=1 would write the verification pattern over the block device %s: "
				     "refused (--prefill=force to overwrite it; without --prefill reads are not written)",
				     ps->p[c]);
			break;
		}
		int fd = open(ps->p[c], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		const uint64_t nlba = per_ctrl_bytes / lba_size;
		for (uint64_t k = 0; k <= 64 && nlba && !rc; k++) {
			const uint64_t lba = k * (nlba - 1) / 64;
			ssize_t got = pread(fd, buf, lba_size, (off_t)(lba * lba_size));
			if (got <= 0)
				continue;
			int zero = 1, pat = 1;
			for (uint32_t i = 0; i < (uint32_t)got / 8u; i++) {
				zero &= buf[i] == 0;
				pat &= buf[i] == bench_word(c, lba, i);
			}
			if (!zero && !pat)
				rc = ib_fail(err, errlen, -EINVAL,
					     "--prefill=1 would write the verification pattern over %s, which holds other "
					     "data (at byte %llu): refused (--prefill=force to overwrite it; without "
					     "--prefill reads are checked against the file's own content)",
					     ps->p[c], (unsigned long long)(lba * lba_size));
		}
		close(fd);
	}
	free(buf);
	return rc;
}

/* Map each controller's media file read-only for BENCH_VERIFY_CONTENT. 0, or -errno
 * with why in why (then nothing is mapped). */
struct refmap {
	uint32_t n;
	const uint8_t *p[BAM_MAX_CTRLS];
	uint64_t len;
};

static int ref_map(const struct paths *ps, uint32_t n_ctrl, uint64_t len, struct refmap *m, char *why, size_t whylen)
{
	memset(m, 0, sizeof(*m));
	if (ps->n != n_ctrl)
		return ib_fail(why, whylen, -ENOENT, "no media file to compare with");
	m->len = len;
	for (uint32_t c = 0; c < n_ctrl; c++) {
		int fd = open(ps->p[c], O_RDONLY | O_CLOEXEC);
		void *p = fd < 0 ? MAP_FAILED : mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		if (fd >= 0)
			close(fd);
		if (p == MAP_FAILED) {
			for (uint32_t i = 0; i < m->n; i++)
				munmap((void *)m->p[i], len);
			m->n = 0;
			return ib_fail(why, whylen, -errno, "%s could not be mapped to compare with", ps->p[c]);
		}
		m->p[m->n++] = p;
	}
	return 0;
}

static void ref_unmap(struct refmap *m)
{
	for (uint32_t i = 0; i < m->n; i++)
		munmap((void *)m->p[i], m->len);
	m->n = 0;
}

/* Where a write run's writes landed before its Flush, one phrase */
static void write_cache_desc(uint32_t flags, const char *desc, char *out, size_t n)
{
	if (flags & BAM_BACKEND_F_MEDIA_MEMORY) {
		snprintf(out, n, "none: the media are memory");
		return;
	}
	if (flags & BAM_BACKEND_F_MEDIA_MAPPED) {
		snprintf(out, n, "the page cache (memory-mapped media file, written back at the close)");
		return;
	}
	struct bench_files f;
	char e[256];
	if (bench_files_parse(desc, &f, e, sizeof(e))) {
		snprintf(out, n, "the controller's own (if any)");
		return;
	}
	if (bench_files_open(&f, e, sizeof(e)))
		snprintf(out, n, "%s", f.direct == 1 ? "none (O_DIRECT)" : "the page cache (direct=0)");
	else if (f.n_direct == f.n)
		snprintf(out, n, "none (O_DIRECT)");
	else if (f.n_direct == 0)
		snprintf(out, n, "the page cache (%s)", f.direct == 1 ? "O_DIRECT refused by the file system" : "direct=0");
	else
		snprintf(out, n, "the page cache for %u of %u files", f.n - f.n_direct, f.n);
	bench_files_free(&f);
}

/* CPU-target baseline: host threads copy random bs-byte chunks of a host buffer. */
struct cpu_base {
	uint8_t *src, *dst;
	uint64_t region, bs, per;
};
static void cpu_base_thread(void *arg, uint64_t tid)
{
	struct cpu_base *b = arg;
	uint64_t r = bench_mix64(tid + 99);
	for (uint64_t k = 0; k < b->per; k++) {
		r = bench_mix64(r);
		memcpy(b->dst + tid * b->bs, b->src + (r % (b->region / b->bs)) * b->bs, b->bs);
	}
}

static int cpu_baseline(uint64_t bs, uint64_t region, uint64_t threads, double *bps, double *cps)
{
	struct cpu_base b = {.region = region, .bs = bs, .per = (64ull << 20) / bs / (threads ? threads : 1) + 1};
	b.src = malloc(b.region);
	b.dst = malloc(threads * bs);
	if (!b.src || !b.dst) {
		free(b.src);
		free(b.dst);
		return -ENOMEM;
	}
	memset(b.src, 0x5a, b.region);
	double t0 = now_s();
	bam_cpu_launch(threads, (uint32_t)threads, cpu_base_thread, &b);
	double dt = now_s() - t0;
	*cps = (double)(b.per * threads) / dt;
	*bps = *cps * (double)bs;
	free(b.src);
	free(b.dst);
	return 0;
}

/* ---- --compare: the same reads orchestrated by the CPU (bench_file.c) -------------- */

struct cmp_out {
	int ran[2];                   /* [0] posix, [1] uring */
	struct bench_cmp_result r[2];
	uint32_t files, direct_files; /* files read, and of those with O_DIRECT */
};

static const char *const cmp_name[2] = {"posix", "uring"};

static const char *cmp_what(int k, int on_gpu)
{
	if (k == 1)
		return "io_uring readers (liburing, IORING_OP_READ), qd reads in flight per thread, into host memory, no copy";
	return on_gpu ? "host threads: pread of a block into pinned host memory, then cudaMemcpyAsync into GPU memory "
			"and a stream sync, one block at a time per thread"
		      : "host threads: pread of a block into a host buffer, then memcpy into target memory, one block "
			"at a time per thread";
}

/* Open the back end's files (O_DIRECT as the back end had it) and run the asked
 * comparisons one after the other. 0, or -errno when one could not start (said through
 * msg); the failures of single reads are counted in out->r. -ETIMEDOUT: one hung (said
 * through msg; its threads and files are left as they are). */
static int run_compare(const struct bam_iobench_opts *o, const char *desc, struct bench_cmp_cfg *cc,
		       struct cmp_out *out)
{
	struct bench_files f;
	char err[512];
	int rc = bench_files_parse(desc, &f, err, sizeof(err));
	if (!rc)
		rc = bench_files_open(&f, err, sizeof(err));
	if (rc) {
		ib_say(o->msg, o->msg_arg, BAM_IOBENCH_MSG_ERROR, "--compare: %s", err);
		bench_files_free(&f);
		return rc;
	}
	out->files = f.n;
	out->direct_files = f.n_direct;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 1)
		ncpu = 1;
	for (int k = 0; k < 2 && !rc; k++) {
		if (!(o->compare & (k ? CMP_URING : CMP_POSIX)))
			continue;
		if (k == 0) {
			cc->threads = o->posix_threads ? o->posix_threads : (uint32_t)(ncpu > 64 ? 64 : ncpu);
			cc->qd = 1;
		} else {
			cc->threads = o->uring_threads ? o->uring_threads : (uint32_t)(ncpu < 4 ? ncpu : 4);
			cc->qd = o->uring_qd;
		}
		ib_say(o->msg, o->msg_arg, BAM_IOBENCH_MSG_NOTE, "compare: %s, %u threads, %s", cmp_name[k], cc->threads,
		       f.n_direct == f.n ? "O_DIRECT" : f.n_direct ? "O_DIRECT on some files" : "buffered (page cache)");
		rc = k ? bench_uring_run(&f, cc, &out->r[k]) : bench_posix_run(&f, cc, &out->r[k]);
		if (rc == -ETIMEDOUT) {
			ib_say(o->msg, o->msg_arg, BAM_IOBENCH_MSG_ERROR, "%s", out->r[k].stalled);
			return rc; /* (the files stay open: reads of them may still be in the kernel) */
		}
		if (rc)
			ib_say(o->msg, o->msg_arg, BAM_IOBENCH_MSG_ERROR, "--compare=%s could not run: %s", cmp_name[k],
			       bam_strerror(rc));
		else
			out->ran[k] = 1;
		if (out->r[k].first_error[0])
			ib_say(o->msg, o->msg_arg, BAM_IOBENCH_MSG_ERROR, "compare %s: %llu failed reads, the first: %s",
			       cmp_name[k], (unsigned long long)out->r[k].errors, out->r[k].first_error);
	}
	bench_files_free(&f);
	return rc;
}

static double rate(uint64_t n, double s)
{
	return s > 0 ? (double)n / s : 0;
}

/* A failed run's reason, one line each (the message of its -EIO): its I/O errors,
 * timeouts and verification failures, and the comparisons' verification failures
 * (their failed reads were said through msg). */
static void fail_summary(const struct bench_out *res, const struct cmp_out *cmp, char *err, size_t errlen)
{
	size_t n = 0;
	err[0] = 0;
	if (res->errors || res->timeouts || res->verify_fail)
		n += (size_t)snprintf(err, errlen, "%llu I/O errors, %llu timeouts, %llu verification failures%s%s%s",
				      (unsigned long long)res->errors, (unsigned long long)res->timeouts,
				      (unsigned long long)res->verify_fail, res->first_status ? " (first NVMe status: " : "",
				      res->first_status ? nvme_status_cause((uint16_t)res->first_status) : "",
				      res->first_status ? ")" : "");
	if (res->flush_errors && n < errlen)
		n += (size_t)snprintf(err + n, errlen - n, "%s%llu Flush commands failed (the writes may not be on the media)",
				      n ? "\n" : "", (unsigned long long)res->flush_errors);
	for (int k = 0; k < 2; k++)
		if (cmp->ran[k] && cmp->r[k].verify_fail && n < errlen)
			n += (size_t)snprintf(err + n, errlen - n, "%scompare %s: %llu verification failures", n ? "\n" : "",
					      cmp_name[k], (unsigned long long)cmp->r[k].verify_fail);
}

/* ---- the run ------------------------------------------------------------------------ */

/* What the options themselves refuse, before anything starts. 0 or -EINVAL. */
static int check_opts(const struct bam_iobench_opts *o, const char *bs_text, char *err, size_t errlen)
{
	const char *be = given_backend(o);
	if (o->bs < 512 || o->bs > (1u << 20) || (o->bs & 511))
		return ib_fail(err, errlen, -EINVAL,
			       "--bs=%s: %llu bytes; must be 512 B to 1 MiB, a multiple of 512 (and of the LBA size)",
			       bs_text, (unsigned long long)o->bs);
	if (o->size < o->bs)
		return ib_fail(err, errlen, -EINVAL, "--size must hold at least one block of --bs");
	if (o->compare && (strncmp(be, "file", 4) || (be[4] && be[4] != ':')))
		return ib_fail(err, errlen, -EINVAL,
			       "--compare needs the file back end (--backend=file:PATH...): it reads the "
			       "same files outside bam; the back end here is '%s'",
			       be);
	if (o->compare && o->rw != BAM_IOBENCH_READ && o->rw != BAM_IOBENCH_RANDREAD)
		return ib_fail(err, errlen, -EINVAL, "--compare measures reads: use --rw=randread or --rw=read");
	if (o->verify && !o->prefill && o->rw != BAM_IOBENCH_WRITE && o->rw != BAM_IOBENCH_RANDWRITE &&
	    (ib_backend_flags(be) & BAM_BACKEND_F_MEDIA_MEMORY))
		return ib_fail(err, errlen, -EINVAL,
			       "--prefill=0 with --backend=%s: the emulator's media in memory start zeroed in "
			       "every run, so no earlier run's pattern is there to verify; use --prefill=1, --verify=0 or "
			       "emu:media=file,path=FILE (kept between runs)",
			       be);
	return 0;
}

int bam_iobench_run(const struct bam_iobench_opts *opts, struct bam_iobench_result *r, char *err, size_t errlen)
{
	struct bam_iobench_opts o = *opts;
	const char *given = given_backend(&o);
	memset(r, 0, sizeof(*r));
	if (err && errlen)
		err[0] = 0;
	char bs_num[24]; /* --bs in messages: as the caller wrote it, else the number */
	snprintf(bs_num, sizeof(bs_num), "%llu", (unsigned long long)o.bs);
	const char *bs_text = o.bs_text ? o.bs_text : bs_num;
	int rc = check_opts(&o, bs_text, err, errlen);
	if (rc)
		return rc;
	char backend[1024];
	if ((rc = bam_iobench_backend(&o, backend, sizeof(backend), err, errlen)))
		return rc;
	{ /* a device whose data a write destroys: writes only when the string grants them */
		const uint32_t fl = ib_backend_flags(backend);
		const int rd_only = o.rw == BAM_IOBENCH_READ || o.rw == BAM_IOBENCH_RANDREAD;
		if ((fl & BAM_BACKEND_F_WRITE_GUARDED) && !(fl & BAM_BACKEND_F_WRITE_ALLOWED) && (!rd_only || (o.verify && o.prefill)))
			return ib_fail(err, errlen, -EPERM,
				       "--backend=%s: %s writes to the device, destroying its data: pass --allow-write "
				       "(allow_write=1)%s", given, rd_only ? "the prefill of the verification pattern" : "this workload",
				       rd_only ? ", or read without writing: --prefill=0 (the pattern is there from an earlier run) or --verify=0" : "");
	}

	struct bam_ctx_opts co = {.target = o.target, .qpairs = o.qpairs, .queue_depth = o.queue_depth,
				  .timeout_ns = o.timeout_ms * 1000000ull, .ctrl_workers = o.ctrl_workers};
	struct bam_ctx *ctx = NULL;
	char lerr[512];

	/* the GPU baseline runs before the emulator starts, so its frees cannot wait
	 * on the persistent worker kernel */
	int want_base = o.baseline == BAM_IOBENCH_BASELINE_AUTO ? (o.rw == BAM_IOBENCH_READ || o.rw == BAM_IOBENCH_RANDREAD)
								 : !!o.baseline;
	double base_bps = 0, base_cps = 0, hbm_bps = 0;
	/* the baseline reads from where the data lives: GPU memory for emu:media=gpu */
	const int media_gpu = !!(ib_backend_flags(given) & BAM_BACKEND_F_MEDIA_GPU);
	enum bam_target tgt = o.target;
#ifdef BAM_HAVE_CUDA
	if (tgt == BAM_TARGET_GPU && !ib_gpu_available()) /* (as bfs, cc and a build without CUDA say it) */
		return ib_fail(err, errlen, -ENODEV, "--target=gpu: no usable CUDA device was found (use --target=cpu)");
#endif
	tgt = ib_target(tgt);
	/* what the open would refuse, refused before the baseline (a second or so, and
	 * gigabytes of memory) runs: the string itself, and GPU media off the GPU target */
	if ((rc = ib_precheck(given, backend, tgt == BAM_TARGET_GPU ? NULL : "this run is on the CPU target", err, errlen)))
		return rc;
	const uint32_t be_flags = ib_backend_flags(given);
	const int emulated = !!(be_flags & (BAM_BACKEND_F_MEDIA_MEMORY | BAM_BACKEND_F_MEDIA_MAPPED));
	/* the default region: storage larger than GPU memory (bam/iobench.h) */
	if (o.size_auto && tgt == BAM_TARGET_GPU && (be_flags & BAM_BACKEND_F_MEDIA_MEMORY) && !media_gpu &&
	    (be_flags & BAM_BACKEND_F_SIZABLE)) {
#ifdef BAM_HAVE_CUDA
		uint64_t gpu_mem = 0, host = 0;
		if (!bench_gpu_mem_total(&gpu_mem) && !bam_mem_available(BAM_TARGET_CPU, BAM_MEM_HOST_PINNED, &host)) {
			uint64_t want = 2 * gpu_mem;
			if (want > host / 2)
				want = host / 2;
			want &= ~((1ull << 30) - 1);
			o.size = want < (1ull << 30) ? 1ull << 30 : want;
			if ((rc = bam_iobench_backend(&o, backend, sizeof(backend), err, errlen)))
				return rc;
		}
#endif
	}
	if (!o.threads)
		o.threads = tgt == BAM_TARGET_GPU ? 65536 : 16;
	if (!o.number_ios && o.runtime <= 0) {
		/* the default run (bam/iobench.h): the region once, at least 64 I/Os per
		 * thread, at most BAM_IOBENCH_DEFAULT_RUN seconds */
		o.number_ios = o.size / o.bs > o.threads * 64 ? o.size / o.bs : o.threads * 64;
		o.runtime = BAM_IOBENCH_DEFAULT_RUN;
	}
	if (o.number_ios && o.number_ios < o.threads)
		o.threads = o.number_ios;
	uint64_t base_region = 0;
	uint32_t base_inflight = 1;
	double copy_bps = 0;
	if (want_base) {
		int brc;
#ifdef BAM_HAVE_CUDA
		if (tgt == BAM_TARGET_GPU) {
			/* the limit over the run's own region (host memory: at most 3/4 of what is
			 * available; it is freed before the back end's media are allocated) */
			uint64_t avail = 0;
			base_region = o.size;
			if (!bam_mem_available(media_gpu ? BAM_TARGET_GPU : BAM_TARGET_CPU,
					       media_gpu ? BAM_MEM_DEVICE : BAM_MEM_HOST_PINNED, &avail) &&
			    base_region > avail / 4 * 3)
				base_region = avail / 4 * 3;
			base_region -= base_region % o.bs;
			base_inflight = BENCH_LIMIT_INFLIGHT;
			brc = bench_gpu_limit((uint32_t)o.bs, base_region, base_inflight, media_gpu, &base_bps, &base_cps,
					      media_gpu ? NULL : &copy_bps);
			if (!brc)
				bench_gpu_hbm_baseline(8ull << 30, &hbm_bps);
		} else
#endif
		{
			base_region = o.size < (1ull << 30) ? o.size : 1ull << 30;
			base_region -= base_region % o.bs;
			brc = cpu_baseline(o.bs, base_region, o.threads > 64 ? 64 : o.threads, &base_bps, &base_cps);
		}
		if (brc)
			want_base = 0;
	}

	const int dbg = getenv("BAM_DEBUG") != NULL;
#ifdef BAM_HAVE_CUDA
	if (dbg && tgt == BAM_TARGET_GPU) {
		double ns;
		bench_gpu_clock_check(&ns);
	}
	if (tgt == BAM_TARGET_GPU)
		bench_gpu_prepare();
#endif
	if (dbg)
		ib_say(o.msg, o.msg_arg, BAM_IOBENCH_MSG_DEBUG, "opening %s", backend);
	rc = bam_ctx_open(backend, &co, &ctx, lerr, sizeof(lerr));
	if (rc)
		return ib_open_fail(given, rc, lerr, err, errlen);
	if (dbg)
		ib_say(o.msg, o.msg_arg, BAM_IOBENCH_MSG_DEBUG, "opened");
	struct bam_ns_info ns;
	bam_ctx_ns_info(ctx, 0, &ns);
	uint32_t n_ctrl = bam_ctx_ctrl_count(ctx);
	if (o.bs % ns.lba_size) {
		bam_ctx_close(ctx);
		return ib_fail(err, errlen, -EINVAL, "--bs=%s is not a multiple of the LBA size %u (--bs: %llu bytes)",
			       bs_text, ns.lba_size, (unsigned long long)o.bs);
	}
	uint64_t nblocks = o.size / o.bs;
	if (o.size % o.bs)
		ib_say(o.msg, o.msg_arg, BAM_IOBENCH_MSG_NOTE,
		       "note: --size=%llu is not a whole number of %llu-byte blocks: the region tested is its first %llu blocks",
		       (unsigned long long)o.size, (unsigned long long)o.bs, (unsigned long long)nblocks);
	uint64_t per_ctrl_blocks = (nblocks + n_ctrl - 1) / n_ctrl;
	for (uint32_t c = 0; c < n_ctrl; c++) {
		struct bam_ns_info ni;
		bam_ctx_ns_info(ctx, c, &ni);
		if (per_ctrl_blocks * o.bs > ni.nlba * ni.lba_size) {
			bam_ctx_close(ctx);
			return ib_fail(err, errlen, -EINVAL,
				       "--size=%llu needs %llu bytes on each of %u controllers; controller %u has %llu",
				       (unsigned long long)o.size, (unsigned long long)(per_ctrl_blocks * o.bs), n_ctrl, c,
				       (unsigned long long)(ni.nlba * ni.lba_size));
		}
	}

	if (o.iodepth > bam_ctx_queue_depth(ctx)) {
		const uint32_t qd = bam_ctx_queue_depth(ctx);
		bam_ctx_close(ctx);
		return ib_fail(err, errlen, -EINVAL, "--iodepth=%u: above the queue depth %u (--queue-depth)", o.iodepth,
			       qd);
	}
	struct bench_args a;
	memset(&a, 0, sizeof(a));
	a.dev = bam_ctx_dev(ctx);
	a.bs = (uint32_t)o.bs;
	a.lba_shift = ns.lba_size == 4096 ? 12 : 9;
	a.n_ctrl = n_ctrl;
	a.iodepth = o.iodepth;
	a.rwmix_read = o.rwmix_read;
	a.verify = BENCH_VERIFY_OFF;
	a.rw = (uint32_t)o.rw;
	a.nblocks = nblocks;
	a.threads = o.threads;
	a.ios_per_thread = o.number_ios ? (o.number_ios + o.threads - 1) / o.threads : 0;
	a.runtime_ns = (uint64_t)(o.runtime * 1e9);
	a.ramp_ns = (uint64_t)(o.ramp_time * 1e9);
	a.seed = o.seed;

	/* what reads are checked against; whether the pattern is written first. A read run
	 * writes nothing to storage (files, devices) unless the caller asked (prefill) */
	const int reads = o.rw != BAM_IOBENCH_WRITE && o.rw != BAM_IOBENCH_RANDWRITE;
	const int writes = o.rw != BAM_IOBENCH_READ && o.rw != BAM_IOBENCH_RANDREAD;
	int do_prefill = 0;
	struct refmap ref;
	memset(&ref, 0, sizeof(ref));
	const uint64_t per_ctrl_bytes = per_ctrl_blocks * o.bs;
	if (!reads) {
		snprintf(r->verify_why, sizeof(r->verify_why), "nothing read (writes only)");
	} else if (!o.verify) {
		snprintf(r->verify_why, sizeof(r->verify_why), "--verify=0");
	} else if (o.prefill == BAM_IOBENCH_PREFILL_NO) {
		a.verify = BENCH_VERIFY_PATTERN;
		snprintf(r->verify_why, sizeof(r->verify_why), "the pattern an earlier run wrote (--prefill=0)");
	} else if (emulated || o.prefill != BAM_IOBENCH_PREFILL_AUTO) {
		struct paths ps = {0};
		if (!emulated && o.prefill == BAM_IOBENCH_PREFILL_YES) {
			rc = bam_backend_media(bam_ctx_backend_desc(ctx), add_path, &ps, NULL, 0);
			if (!rc)
				rc = storage_prefill_check(&ps, ns.lba_size, per_ctrl_bytes, err, errlen);
			paths_free(&ps);
			if (rc) {
				bam_ctx_close(ctx);
				return rc == -EINVAL ? rc : ib_fail(err, errlen, rc, "--prefill: %s", bam_strerror(rc));
			}
		}
		do_prefill = 1;
		a.verify = BENCH_VERIFY_PATTERN;
		snprintf(r->verify_why, sizeof(r->verify_why), "the pattern written over the region first%s",
			 emulated ? " (emulated media)" : " (--prefill)");
	} else if (writes) {
		snprintf(r->verify_why, sizeof(r->verify_why),
			 "reads mixed with writes over data the run did not write (--prefill=1 to check them)");
	} else if (bam_ctx_target(ctx) == BAM_TARGET_GPU) {
		snprintf(r->verify_why, sizeof(r->verify_why),
			 "storage not written by the run; its content is not checked on the GPU target (--prefill=1 to check a pattern)");
	} else {
		struct paths ps = {0};
		char why[160];
		rc = bam_backend_media(bam_ctx_backend_desc(ctx), add_path, &ps, NULL, 0);
		if (!rc && !ref_map(&ps, n_ctrl, per_ctrl_bytes, &ref, why, sizeof(why))) {
			a.verify = BENCH_VERIFY_CONTENT;
			a.ref = bam_mem_alloc(ctx, BAM_MEM_DEVICE, n_ctrl * sizeof(void *)); /* (host memory here) */
			if (a.ref)
				memcpy((void *)a.ref, ref.p, n_ctrl * sizeof(void *));
			else
				a.verify = BENCH_VERIFY_OFF;
			snprintf(r->verify_why, sizeof(r->verify_why), "the file's own content, mapped read-only");
		} else {
			snprintf(r->verify_why, sizeof(r->verify_why), "storage not written by the run: %s",
				 rc ? "its media could not be listed" : why);
		}
		paths_free(&ps);
		rc = 0;
	}
	r->verify_mode = (int)a.verify;
	if (writes)
		write_cache_desc(be_flags, bam_ctx_backend_desc(ctx), r->write_cache, sizeof(r->write_cache));

	/* prefill the tested region with the pattern (reads verify against it) */
	if (do_prefill) {
		struct prefill p = {.ctx = ctx, .a = &a, .per_ctrl_bytes = per_ctrl_blocks * o.bs, .chunk = 4ull << 20};
		p.nchunks = (p.per_ctrl_bytes + p.chunk - 1) / p.chunk;
		ib_say(o.msg, o.msg_arg, BAM_IOBENCH_MSG_NOTE,
		       "writing the verification pattern to %.1f MiB of media (%llu blocks of %llu bytes)",
		       (double)(p.per_ctrl_bytes * n_ctrl) / (1 << 20), (unsigned long long)(per_ctrl_blocks * n_ctrl),
		       (unsigned long long)o.bs);
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		bam_cpu_launch(p.nchunks * n_ctrl, (uint32_t)(ncpu > 0 ? ncpu : 2), prefill_one, &p);
		if (p.rc) {
			bam_ctx_close(ctx);
			return ib_fail(err, errlen, -EIO, "prefill failed: %s", bam_strerror(p.rc));
		}
		r->prefilled = 1;
		/* files: the pattern went through the page cache; write it back now, or the
		 * first direct reads of each range would wait for it during the run */
		if (files_sync(bam_ctx_backend_desc(ctx), err, errlen)) {
			bam_ctx_close(ctx);
			return -EIO;
		}
	}

	if (dbg)
		ib_say(o.msg, o.msg_arg, BAM_IOBENCH_MSG_DEBUG, "prefill done, allocating buffers");
	uint64_t nbuf = o.threads * o.iodepth;
	a.buf = bam_mem_alloc(ctx, BAM_MEM_DEVICE, nbuf * o.bs);
	struct bench_out *dout = bam_mem_alloc(ctx, BAM_MEM_DEVICE, sizeof(struct bench_out));
	uint64_t *hlist = NULL;
	if (!a.buf || !dout) {
		bam_ctx_close(ctx);
		return ib_fail(err, errlen, -ENOMEM, "cannot allocate %llu bytes of I/O buffers",
			       (unsigned long long)(nbuf * o.bs));
	}
	a.out = dout;
	{
		/* the series' minima start at the largest value */
		struct bench_out *init = calloc(1, sizeof(*init));
		if (!init) {
			bam_ctx_close(ctx);
			return ib_fail(err, errlen, -ENOMEM, "cannot allocate %zu bytes", sizeof(*init));
		}
		for (int i = 0; i < BENCH_LAT_STRIPES; i++)
			for (int k = 0; k < 3; k++)
				init->lat[i][k][0].min = init->lat[i][k][1].min = ~0ull;
		bam_mem_copy(ctx, dout, init, sizeof(*init));
		free(init);
	}
	if (o.iodepth > BENCH_LOCAL_SLOTS) {
		a.slots = bam_mem_alloc(ctx, BAM_MEM_DEVICE, nbuf * sizeof(struct bench_slot));
		if (!a.slots) {
			bam_ctx_close(ctx);
			return ib_fail(err, errlen, -ENOMEM, "cannot allocate %llu bytes for the I/Os in flight",
				       (unsigned long long)(nbuf * sizeof(struct bench_slot)));
		}
	}
	if (o.bs > 2 * NVME_PAGE_SIZE) {
		/* PRP lists for every buffer, built once (no allocation in the I/O path) */
		a.prp_stride = bam_prp_list_bytes(0, o.bs);
		a.prp = bam_mem_alloc(ctx, BAM_MEM_DEVICE, nbuf * a.prp_stride);
		hlist = calloc(nbuf, a.prp_stride);
		if (!a.prp || !hlist) {
			free(hlist);
			bam_ctx_close(ctx);
			return ib_fail(err, errlen, -ENOMEM, "cannot allocate PRP lists");
		}
		for (uint64_t i = 0; i < nbuf; i++) {
			uint64_t *l = hlist + i * (a.prp_stride / 8);
			bam_prp_list_fill(l, (uint64_t)(uintptr_t)(a.prp + i * (a.prp_stride / 8)),
					  (uint64_t)(uintptr_t)(a.buf + i * o.bs), o.bs);
		}
		bam_mem_copy(ctx, a.prp, hlist, nbuf * a.prp_stride);
		free(hlist);
	}

	/* (on the heap: after a hang it is left to the thread, which may be blocked in a copy) */
	struct progress *pr = calloc(1, sizeof(*pr));
	struct bam_iobench_opts *po = malloc(sizeof(*po));
	if (!pr || !po) {
		free(pr);
		free(po);
		bam_ctx_close(ctx);
		return ib_fail(err, errlen, -ENOMEM, "cannot allocate %zu bytes", sizeof(*pr) + sizeof(*po));
	}
	*po = o;
	*pr = (struct progress){.ctx = ctx, .dev_out = dout, .total_ios = a.ios_per_thread * o.threads,
				.runtime = o.runtime, .quiet = !o.progress, .o = po};
	pthread_t pth;
	pthread_create(&pth, NULL, progress_main, pr);
	double t0 = now_s(), elapsed = 0, flush_s = 0;
	if (bam_ctx_target(ctx) == BAM_TARGET_GPU) {
#ifdef BAM_HAVE_CUDA
		void *h = NULL;
		double ms = 0, fms = 0;
		if (dbg)
			ib_say(o.msg, o.msg_arg, BAM_IOBENCH_MSG_DEBUG, "launching the kernel");
		rc = bench_gpu_start(&a, writes, &h, &r->gpu);
		{
			/* the controller's share: a back end whose controllers run on the GPU
			 * (the emulator's persistent kernel), as src/backends/emu/emu_gpu.cu sizes
			 * it: --ctrl-workers warps per controller, else 64 warps in all (at least
			 * 4 per controller), in blocks of 4 warps, one block per SM (launched on
			 * an idle GPU). A workers= in the back-end string is not seen here. */
			const struct bam_backend_ops *ops = bam_backend_find(given, strcspn(given, ":"));
			if (ops && ops->gpu_resident && r->gpu.valid) {
				uint32_t w = o.ctrl_workers ? o.ctrl_workers : (64u / n_ctrl < 4 ? 4 : 64u / n_ctrl);
				r->gpu.ctrl_warps = w * n_ctrl;
				r->gpu.ctrl_blocks = (r->gpu.ctrl_warps + 3) / 4;
				r->gpu.ctrl_sms = r->gpu.ctrl_blocks < r->gpu.sms ? r->gpu.ctrl_blocks : r->gpu.sms;
			}
		}
		/* watchdog: every wait in the kernel is bounded, so it must end within the run
		 * time plus a few timeouts; if not, say what the queues look like and give up */
		double limit = (o.runtime > 0 ? o.runtime + o.ramp_time : 60.0) + 4.0 * (double)o.timeout_ms / 1e3 + 30.0;
		while (!rc && bench_gpu_done(h) == 0) {
			usleep(10000);
			if (now_s() - t0 > limit) {
				ib_fail(err, errlen, -ETIMEDOUT, "the kernel did not finish within %.0f s; queue state:", limit);
				ib_say(o.msg, o.msg_arg, BAM_IOBENCH_MSG_ERROR, "%s", err);
				if (o.dump)
					bam_ctx_dump(ctx, o.dump);
				/* the kernel holds the context: nothing is freed */
				__atomic_store_n(&pr->done, 1, __ATOMIC_RELEASE);
				r->stuck = 1;
				return -ETIMEDOUT;
			}
		}
		if (!rc)
			rc = bench_gpu_finish(h, &ms, &fms);
		if (dbg)
			ib_say(o.msg, o.msg_arg, BAM_IOBENCH_MSG_DEBUG, "kernel done (%.3f ms)", ms);
		elapsed = ms / 1e3; /* (the Flush's kernel included) */
		flush_s = fms / 1e3;
#endif
	} else {
		struct bench_args *ap = &a;
		/* logical threads run one after another on the host threads: the run's end
		 * is one deadline from the first thread's start (bench_thread) */
		rc = bam_cpu_launch(o.threads, (uint32_t)(o.threads > 1024 ? 1024 : o.threads), cpu_bench_thread, ap);
		if (!rc && writes) {
			double f0 = now_s();
			rc = bam_cpu_launch(n_ctrl, n_ctrl, cpu_flush_thread, ap);
			flush_s = now_s() - f0;
		}
		elapsed = now_s() - t0;
	}
	__atomic_store_n(&pr->done, 1, __ATOMIC_RELEASE);
	pthread_join(pth, NULL);
	free(pr);
	free(po);

	struct bench_out res;
	memset(&res, 0, sizeof(res));
	if (rc || bam_mem_copy(ctx, &res, dout, sizeof(res))) {
		ib_fail(err, errlen, -EIO, "run failed: %s", bam_strerror(rc ? rc : -EIO));
		bam_mem_free(ctx, BAM_MEM_DEVICE, a.buf);
		bam_mem_free(ctx, BAM_MEM_DEVICE, dout);
		bam_mem_free(ctx, BAM_MEM_DEVICE, a.prp);
		bam_mem_free(ctx, BAM_MEM_DEVICE, a.slots);
		bam_mem_free(ctx, BAM_MEM_DEVICE, (void *)a.ref);
		ref_unmap(&ref);
		bam_ctx_close(ctx);
		return -EIO;
	}
	struct bam_ctrl_stats tot;
	memset(&tot, 0, sizeof(tot));
	for (uint32_t c = 0; c < n_ctrl; c++) {
		struct bam_ctrl_stats s;
		if (bam_ctx_ctrl_stats(ctx, c, &s) == 0) {
			tot.cmds += s.cmds;
			tot.errors += s.errors;
			tot.injected += s.injected;
			tot.qp.submitted += s.qp.submitted;
			tot.qp.doorbells += s.qp.doorbells;
			tot.qp.timeouts += s.qp.timeouts;
			tot.qp.late += s.qp.late;
		}
	}
	const int on_gpu = bam_ctx_target(ctx) == BAM_TARGET_GPU;
	r->target = bam_ctx_target(ctx);
	r->threads = o.threads;
	r->controllers = n_ctrl;
	r->qpairs = bam_ctx_qpairs(ctx);
	r->queue_depth = bam_ctx_queue_depth(ctx);
	snprintf(r->backend, sizeof(r->backend), "%s", bam_ctx_backend_desc(ctx));
	r->size = o.size;
	r->number_ios = a.ios_per_thread * o.threads;
	r->runtime = o.runtime;
	r->ios = res.ios;
	r->reads = res.reads;
	r->writes = res.writes;
	r->bytes = res.bytes;
	r->ramp_ios = res.ramp_ios;
	r->verified = res.verified;
	r->flushes = res.flushes;
	r->flush_errors = res.flush_errors;
	r->flush_seconds = flush_s; /* (the Flush launch as timed by the host or CUDA events) */
	/* the measured window: with a ramp, from its end to the last completion (the run's
	 * own clock), then the Flush; else the whole run with the Flush */
	if (a.ramp_ns)
		elapsed = res.t_last > res.t_start + a.ramp_ns ? (double)(res.t_last - res.t_start - a.ramp_ns) / 1e9 + flush_s : 0;
	r->seconds = elapsed;
	r->iops = elapsed > 0 ? (double)res.ios / elapsed : 0;
	r->MBps = elapsed > 0 ? (double)res.bytes / elapsed / 1e6 : 0;
	for (int d = 0; d < 2; d++) {
		struct bam_iobench_dir *x = &r->dir[d];
		x->ios = d ? res.writes : res.reads;
		x->bytes = x->ios * o.bs;
		x->iops = rate(x->ios, elapsed);
		x->MBps = rate(x->bytes, elapsed) / 1e6;
		lat_result(&res, BENCH_LAT, d, &x->lat);
		lat_result(&res, BENCH_CLAT, d, &x->clat);
		lat_result(&res, BENCH_SLAT, d, &x->slat);
	}
	r->lat_p50_ns = percentile_all(&res, BENCH_LAT, 0.50);
	r->lat_p99_ns = percentile_all(&res, BENCH_LAT, 0.99);
	r->lat_p999_ns = percentile_all(&res, BENCH_LAT, 0.999);
	r->submit_mean_us = res.ios ? res.submit_ns / 1e3 / res.ios : 0;
	r->errors = res.errors;
	r->timeouts = res.timeouts;
	r->verify_failures = res.verify_fail;
	r->first_status = (uint16_t)res.first_status;
	r->commands = tot.cmds;
	r->submitted = tot.qp.submitted;
	r->doorbells = tot.qp.doorbells;
	r->injected = tot.injected;
	r->late = tot.qp.late;
	r->baseline = want_base;
	r->baseline_region = base_region;
	r->baseline_inflight = base_inflight;
	r->copy_engine_bps = copy_bps;
	r->baseline_limit = !on_gpu ? "host memory read by the CPU"
			    : media_gpu ? "GPU memory (HBM) read by the SMs"
					: "PCIe read of pinned host memory by the SMs (zero-copy loads)";
	/* what the baseline read */
	r->baseline_what = !on_gpu ? "host threads copying random bs chunks of host memory"
			   : media_gpu ? "a kernel, each warp with several random bs chunks of GPU memory in flight (where "
					 "emu:media=gpu keeps the data)"
				       : "a kernel, each warp with several random bs chunks of pinned host memory in flight";
	r->baseline_chunks_per_s = base_cps;
	r->baseline_bps = base_bps;
	r->baseline_ratio_bw = base_bps > 0 ? r->MBps * 1e6 / base_bps : 0;
	r->hbm_bps = hbm_bps;
	int failed = res.errors || res.timeouts || res.verify_fail || res.flush_errors;
	if (res.timeouts || dbg) {
		if (o.dump)
			bam_ctx_dump(ctx, o.dump);
	}
	bam_mem_free(ctx, BAM_MEM_DEVICE, a.buf);
	bam_mem_free(ctx, BAM_MEM_DEVICE, dout);
	bam_mem_free(ctx, BAM_MEM_DEVICE, a.prp);
	bam_mem_free(ctx, BAM_MEM_DEVICE, a.slots);
	bam_mem_free(ctx, BAM_MEM_DEVICE, (void *)a.ref);
	ref_unmap(&ref);
	bam_ctx_close(ctx);

	/* the comparisons run now, with the back end's service threads gone */
	struct cmp_out cmp;
	memset(&cmp, 0, sizeof(cmp));
	if (o.compare) {
		struct bench_cmp_cfg cc = {.bs = (uint32_t)o.bs, .lba_shift = a.lba_shift, .nblocks = nblocks,
					   .random = o.rw == BAM_IOBENCH_RANDREAD, .runtime = o.runtime,
					   .total_ios = o.number_ios ? a.ios_per_thread * o.threads : 0,
					   .verify = a.verify == BENCH_VERIFY_PATTERN, .gpu = on_gpu, .seed = o.seed,
					   .stall_ns = (o.timeout_ms < 2500 ? 2500 : o.timeout_ms) * 4000000ull};
		rc = run_compare(&o, r->backend, &cc, &cmp);
		if (rc == -ETIMEDOUT) {
			for (int k = 0; k < 2; k++)
				if (cmp.r[k].stalled[0])
					ib_fail(err, errlen, rc, "%s", cmp.r[k].stalled);
			r->stuck = 1;
			return rc;
		}
		if (rc)
			failed = 1;
		for (int k = 0; k < 2; k++)
			if (cmp.ran[k] && (cmp.r[k].errors || cmp.r[k].verify_fail))
				failed = 1;
	}
	r->compare_files = cmp.files;
	r->compare_direct_files = cmp.direct_files;
	for (int k = 0; k < 2; k++) {
		struct bam_iobench_compare *c = &r->compare[k];
		const struct bench_cmp_result *x = &cmp.r[k];
		if (!(c->ran = cmp.ran[k]))
			continue;
		c->what = cmp_what(k, on_gpu);
		c->threads = x->threads;
		c->qd = x->qd;
		c->ios = x->ios;
		c->bytes = x->bytes;
		c->seconds = x->seconds;
		c->iops = rate(x->ios, x->seconds);
		c->MBps = rate(x->bytes, x->seconds) / 1e6;
		c->errors = x->errors;
		c->verified = x->verified;
		c->verify_failures = x->verify_fail;
		c->ratio_iops = c->iops > 0 ? r->iops / c->iops : 0;
		c->ratio_bw = c->MBps > 0 ? r->MBps / c->MBps : 0;
		snprintf(c->first_error, sizeof(c->first_error), "%s", x->first_error);
	}
	r->complete = 1;
	if (!failed)
		return 0;
	if (err && errlen)
		fail_summary(&res, &cmp, err, errlen);
	return -EIO;
}
