/* SPDX-License-Identifier: MIT */
/*
 * bam_iobench_run (bam/iobench.h): a fio-like benchmark of the I/O engine. The options,
 * their checks, the physical baseline (before the back end starts), the prefill of the
 * verification pattern, the run (GPU kernel or CPU-target threads), its statistics and
 * the CPU-orchestrated comparisons of --compare (bench_file.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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
	o->iodepth = 1;
	o->verify = 1;
	o->baseline = BAM_IOBENCH_BASELINE_AUTO;
	o->timeout_ms = 5000;
	o->seed = 1;
	o->prefill = 1;
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

static uint64_t percentile(const struct bench_out *o, double q)
{
	uint64_t total = 0;
	for (int i = 0; i < BENCH_HIST; i++)
		total += o->hist[i];
	if (!total)
		return 0;
	uint64_t want = (uint64_t)(q * (double)total + 0.5), acc = 0;
	if (want == 0)
		want = 1;
	for (int i = 0; i < BENCH_HIST; i++) {
		acc += o->hist[i];
		if (acc >= want)
			return bench_hist_value((uint32_t)i);
	}
	return bench_hist_value(BENCH_HIST - 1);
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

static int cpu_baseline(uint64_t bs, uint64_t threads, double *bps, double *cps)
{
	struct cpu_base b = {.region = 256ull << 20, .bs = bs, .per = (64ull << 20) / bs / (threads ? threads : 1) + 1};
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
				      res->first_status ? nvme_status_name((uint16_t)res->first_status) : "",
				      res->first_status ? ")" : "");
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
	if (!o.threads)
		o.threads = tgt == BAM_TARGET_GPU ? 65536 : 16;
	if (!o.number_ios && o.runtime <= 0)
		o.number_ios = o.threads * 64;
	if (o.number_ios && o.number_ios < o.threads)
		o.threads = o.number_ios;
	if (want_base) {
		int brc;
#ifdef BAM_HAVE_CUDA
		if (tgt == BAM_TARGET_GPU) {
			brc = bench_gpu_chunk_baseline((uint32_t)o.bs, 4ull << 30, o.threads * 32 > (1u << 20) ? (1u << 20) : o.threads * 32,
						       (16ull << 30) / o.bs, media_gpu, &base_bps, &base_cps);
			if (!brc)
				bench_gpu_hbm_baseline(8ull << 30, &hbm_bps);
		} else
#endif
			brc = cpu_baseline(o.bs, o.threads > 64 ? 64 : o.threads, &base_bps, &base_cps);
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

	struct bench_args a;
	memset(&a, 0, sizeof(a));
	a.dev = bam_ctx_dev(ctx);
	a.bs = (uint32_t)o.bs;
	a.lba_shift = ns.lba_size == 4096 ? 12 : 9;
	a.n_ctrl = n_ctrl;
	a.iodepth = o.iodepth;
	a.rwmix_read = o.rwmix_read;
	a.verify = (uint32_t)o.verify;
	a.rw = (uint32_t)o.rw;
	a.nblocks = nblocks;
	a.threads = o.threads;
	a.ios_per_thread = o.number_ios ? (o.number_ios + o.threads - 1) / o.threads : 0;
	a.runtime_ns = (uint64_t)(o.runtime * 1e9);
	a.seed = o.seed;

	/* prefill the tested region with the pattern (reads verify against it) */
	if (o.verify && o.prefill && o.rw != BAM_IOBENCH_WRITE && o.rw != BAM_IOBENCH_RANDWRITE) {
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
	double t0 = now_s(), elapsed = 0;
	if (bam_ctx_target(ctx) == BAM_TARGET_GPU) {
#ifdef BAM_HAVE_CUDA
		void *h = NULL;
		double ms = 0;
		if (dbg)
			ib_say(o.msg, o.msg_arg, BAM_IOBENCH_MSG_DEBUG, "launching the kernel");
		rc = bench_gpu_start(&a, &h);
		/* watchdog: every wait in the kernel is bounded, so it must end within the run
		 * time plus a few timeouts; if not, say what the queues look like and give up */
		double limit = (o.runtime > 0 ? o.runtime : 60.0) + 4.0 * (double)o.timeout_ms / 1e3 + 30.0;
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
			rc = bench_gpu_finish(h, &ms);
		if (dbg)
			ib_say(o.msg, o.msg_arg, BAM_IOBENCH_MSG_DEBUG, "kernel done (%.3f ms)", ms);
		elapsed = ms / 1e3;
#endif
	} else {
		struct bench_args *ap = &a;
		/* CPU target: logical threads run one after another on the host threads, so
		 * the run time is one deadline for the whole run, not per logical thread */
		if (a.runtime_ns)
			a.deadline_ns = bam_time_ns() + a.runtime_ns;
		rc = bam_cpu_launch(o.threads, (uint32_t)(o.threads > 1024 ? 1024 : o.threads), cpu_bench_thread, ap);
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
	r->ios = res.ios;
	r->reads = res.reads;
	r->writes = res.writes;
	r->bytes = res.bytes;
	r->seconds = elapsed;
	r->iops = elapsed > 0 ? (double)res.ios / elapsed : 0;
	r->MBps = elapsed > 0 ? (double)res.bytes / elapsed / 1e6 : 0;
	r->lat_p50_ns = percentile(&res, 0.50);
	r->lat_p99_ns = percentile(&res, 0.99);
	r->lat_p999_ns = percentile(&res, 0.999);
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
	/* what the baseline read */
	r->baseline_what = !on_gpu ? "host threads copying random bs chunks of host memory"
			   : media_gpu ? "plain kernel reading random bs chunks of GPU memory (where emu:media=gpu keeps the data)"
				       : "plain kernel reading random bs chunks of pinned host memory";
	r->baseline_chunks_per_s = base_cps;
	r->baseline_bps = base_bps;
	r->baseline_ratio_bw = base_bps > 0 ? r->MBps * 1e6 / base_bps : 0;
	r->hbm_bps = hbm_bps;
	int failed = res.errors || res.timeouts || res.verify_fail;
	if (res.timeouts || dbg) {
		if (o.dump)
			bam_ctx_dump(ctx, o.dump);
	}
	bam_mem_free(ctx, BAM_MEM_DEVICE, a.buf);
	bam_mem_free(ctx, BAM_MEM_DEVICE, dout);
	bam_mem_free(ctx, BAM_MEM_DEVICE, a.prp);
	bam_ctx_close(ctx);

	/* the comparisons run now, with the back end's service threads gone */
	struct cmp_out cmp;
	memset(&cmp, 0, sizeof(cmp));
	if (o.compare) {
		struct bench_cmp_cfg cc = {.bs = (uint32_t)o.bs, .lba_shift = a.lba_shift, .nblocks = nblocks,
					   .random = o.rw == BAM_IOBENCH_RANDREAD, .runtime = o.runtime,
					   .total_ios = o.number_ios ? a.ios_per_thread * o.threads : 0,
					   .verify = o.verify, .gpu = on_gpu, .seed = o.seed,
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
