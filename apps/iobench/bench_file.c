/* SPDX-License-Identifier: MIT */
/*
 * `bam bench --compare`: the same reads as the bam run, orchestrated by the CPU
 * (bench_file.h says what each of the two does). They run after the bam run, with the
 * context closed, so that no service thread of the back end competes with them for the
 * host's cores, and each is bounded by the bam run's I/O count and run time; a run in
 * which no read completes for 'stall_ns' is given up (-ETIMEDOUT) with its threads left
 * as they are (as the bench's watchdog of the GPU kernel gives up): a read stuck in the
 * kernel cannot be cancelled, so the process must end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bam/bam.h"
#include "bam/backend.h"
#include "bench_file.h"
#include "bench_kern.h" /* bench_check, bench_mix64 */
#ifdef BAM_HAVE_CUDA
#include "bench_gpu.h"
#endif

#define VERIFY_EVERY 64 /* check one block in this many (and each thread's first) */

/* ---- the files of the back end --------------------------------------------------- */

static int files_add(struct bench_files *f, const char *p)
{
	if (f->n == BAM_MAX_CTRLS)
		return -EINVAL;
	if (!(f->path[f->n] = strdup(p)))
		return -ENOMEM;
	f->fd[f->n++] = -1;
	return 0;
}

/* Tokens of the normalised string, read as file.c's parser reads them: KEY=VALUE with
 * a back-end key is an option, anything else a path. */
static int files_kv(void *arg, const char *k, const char *v)
{
	struct bench_files *f = arg;
	if (!strcmp(k, "path"))
		return files_add(f, v);
	if (!strcmp(k, "lba")) {
		f->lba = (uint32_t)strtoul(v, NULL, 10);
		return 0;
	}
	if (!strcmp(k, "direct")) {
		f->direct = !strcmp(v, "0") ? 0 : !strcmp(v, "1") ? 1 : 2;
		return 0;
	}
	if (!strcmp(k, "size") || !strcmp(k, "workers") || !strcmp(k, "qd") || !strcmp(k, "stage"))
		return 0;
	if (!*v)
		return files_add(f, k);
	char p[4096];
	snprintf(p, sizeof(p), "%s=%s", k, v); /* a path with '=' in it */
	return files_add(f, p);
}

int bench_files_parse(const char *desc, struct bench_files *f, char *err, size_t errlen)
{
	memset(f, 0, sizeof(*f));
	f->direct = 1;
	f->lba = 512;
	if (strncmp(desc, "file:", 5)) {
		snprintf(err, errlen, "'%s' is not a file back end", desc);
		return -EINVAL;
	}
	int rc = bam_kv_parse(desc + 5, files_kv, f);
	if (!rc && !f->n)
		rc = -EINVAL;
	if (rc) {
		snprintf(err, errlen, "cannot read the files of '%s'", desc);
		bench_files_free(f);
	}
	return rc;
}

/* O_DIRECT as file.c's open_one decides it: refused when the file system's direct-I/O
 * alignment exceeds the LBA size, when open refuses it, or when a probe read does. */
static int open_direct(const char *path, uint32_t lba)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
	if (fd < 0)
		return -1;
#ifdef STATX_DIOALIGN
	struct statx sx;
	memset(&sx, 0, sizeof(sx));
	if (!statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) && (sx.stx_mask & STATX_DIOALIGN) &&
	    (sx.stx_dio_offset_align > lba || sx.stx_dio_mem_align > lba)) {
		close(fd);
		return -1;
	}
#endif
	void *probe = NULL;
	int bad = 0;
	if (!posix_memalign(&probe, 4096, 4096)) {
		bad = pread(fd, probe, lba, 0) < 0 && errno == EINVAL;
		free(probe);
	}
	if (bad) {
		close(fd);
		return -1;
	}
	return fd;
}

int bench_files_open(struct bench_files *f, char *err, size_t errlen)
{
	f->n_direct = 0;
	for (uint32_t i = 0; i < f->n; i++) {
		int fd = f->direct ? open_direct(f->path[i], f->lba) : -1;
		if (fd >= 0)
			f->n_direct++;
		else
			fd = open(f->path[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			snprintf(err, errlen, "%s: %s", f->path[i], strerror(errno));
			return -EIO;
		}
		f->fd[i] = fd;
	}
	return 0;
}

int bench_files_sync(const struct bench_files *f, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < f->n; i++) {
		/* a descriptor of its own: fdatasync acts on the file, whichever fd */
		int fd = open(f->path[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fdatasync(fd)) {
			int e = errno;
			if (fd >= 0)
				close(fd);
			/* devices and files that cannot be synced (EINVAL) need no sync */
			if (e == EINVAL || e == EROFS)
				continue;
			snprintf(err, errlen, "%s: fdatasync: %s", f->path[i], strerror(e));
			return -EIO;
		}
		close(fd);
	}
	return 0;
}

void bench_files_free(struct bench_files *f)
{
	for (uint32_t i = 0; i < f->n; i++) {
		if (f->fd[i] >= 0)
			close(f->fd[i]);
		free(f->path[i]);
		f->fd[i] = -1;
		f->path[i] = NULL;
	}
	f->n = 0;
}

/* ---- what the two runners share ------------------------------------------------- */

struct cmp_thread;
struct cmp_run {
	const struct bench_files *f;
	const struct bench_cmp_cfg *c;
	struct bench_args pat;  /* bs and lba_shift: what bench_check needs */
	uint64_t next;          /* atomic: reads claimed */
	uint64_t done;          /* atomic: reads completed (the watchdog's progress) */
	uint32_t finished;      /* atomic: threads that returned */
	uint64_t deadline_ns;   /* 0: none */
	struct cmp_thread *th;
	/* read buffers: posix (CPU target) [threads * bs], uring [threads * qd * bs]; in a
	 * page-aligned allocation at multiples of bs, itself a multiple of the LBA size:
	 * aligned as O_DIRECT needs whenever the back end could use it */
	uint8_t *host;
	uint8_t *dst;           /* posix, CPU target: target memory [threads * bs] */
	void *gpu;              /* posix, GPU target: bench_gpu_posix handle */
	uint32_t leak;          /* atomic: uring reads still in the kernel, keep 'host' */
};

struct cmp_thread {
	struct cmp_run *r;
	uint32_t t;
	pthread_t th;
	uint64_t ios, errors, verified, verify_fail;
	uint64_t rng;
	uint64_t end_ns;        /* when it returned: the run ends with the last thread */
	char first_error[160];
};

/* The last thing a thread does. */
static void cmp_exit(struct cmp_thread *t)
{
	t->end_ns = bam_time_ns();
	__atomic_fetch_add(&t->r->finished, 1, __ATOMIC_RELEASE);
}

/* Claim the next read: 0 when the run's count or time is spent. */
static int cmp_claim(struct cmp_thread *t, uint64_t *blk)
{
	struct cmp_run *r = t->r;
	uint64_t dl = __atomic_load_n(&r->deadline_ns, __ATOMIC_RELAXED);
	if (dl && bam_time_ns() >= dl)
		return 0;
	uint64_t k = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED);
	if (r->c->total_ios && k >= r->c->total_ios)
		return 0;
	if (r->c->random) {
		t->rng = bench_mix64(t->rng);
		*blk = t->rng % r->c->nblocks;
	} else {
		*blk = k % r->c->nblocks;
	}
	return 1;
}

/* Block b -> file and byte offset, as bench_place stripes blocks over controllers. */
static void cmp_place(const struct cmp_run *r, uint64_t b, uint32_t *file, uint64_t *off)
{
	*file = (uint32_t)(b % r->f->n);
	*off = (b / r->f->n) * r->c->bs;
}

#define NO_FILE UINT32_MAX /* cmp_error: a failure not tied to a read */

static void cmp_error(struct cmp_thread *t, const char *what, uint32_t file, uint64_t off, int err)
{
	if (t->errors++)
		return;
	if (file == NO_FILE)
		snprintf(t->first_error, sizeof(t->first_error), "%s: %s", what, strerror(err));
	else
		snprintf(t->first_error, sizeof(t->first_error), "%s of %s at byte %llu: %s", what,
			 t->r->f->path[file], (unsigned long long)off, err ? strerror(err) : "end of file");
}

/* A completed read of a whole block: count it, check one in VERIFY_EVERY. */
static void cmp_done(struct cmp_thread *t, const uint8_t *buf, uint32_t file, uint64_t off)
{
	struct cmp_run *r = t->r;
	if (r->c->verify && t->ios % VERIFY_EVERY == 0) {
		t->verified++;
		if (bench_check(&r->pat, buf, file, off >> r->pat.lba_shift))
			t->verify_fail++;
	}
	t->ios++;
	__atomic_fetch_add(&r->done, 1, __ATOMIC_RELAXED);
}

/* Start fn on every thread, wait for them with the no-progress bound, sum the
 * results. */
static int cmp_launch(struct cmp_run *r, void *(*fn)(void *), const char *name, struct bench_cmp_result *res)
{
	uint32_t n = r->c->threads;
	r->th = calloc(n, sizeof(*r->th));
	if (!r->th)
		return -ENOMEM;
	uint64_t t0 = bam_time_ns();
	if (r->c->runtime > 0)
		r->deadline_ns = t0 + (uint64_t)(r->c->runtime * 1e9);
	uint32_t started = 0;
	for (; started < n; started++) {
		struct cmp_thread *t = &r->th[started];
		t->r = r;
		t->t = started;
		t->rng = bench_mix64(r->c->seed ^ ((started + 1ull) * 0x9e3779b97f4a7c15ull) ^ 0x636d70ull);
		if (pthread_create(&t->th, NULL, fn, t))
			break;
	}
	if (started < n) {
		/* stop those already running at once: no read is claimed past the deadline */
		__atomic_store_n(&r->deadline_ns, 1, __ATOMIC_RELAXED);
		for (uint32_t i = 0; i < started; i++)
			pthread_join(r->th[i].th, NULL);
		free(r->th);
		r->th = NULL;
		return -EAGAIN;
	}
	/* every read is a system call that may never return (a dead device): watch for
	 * progress, and end the process when there is none */
	uint64_t last = 0, last_t = bam_time_ns();
	while (__atomic_load_n(&r->finished, __ATOMIC_ACQUIRE) < n) {
		usleep(2000);
		uint64_t d = __atomic_load_n(&r->done, __ATOMIC_RELAXED), now = bam_time_ns();
		if (d != last) {
			last = d;
			last_t = now;
		} else if (now - last_t > r->c->stall_ns) {
			/* the threads and their buffers stay: a read may still be in the kernel */
			snprintf(res->stalled, sizeof(res->stalled), "%s: no read completed in %.0f s (%llu done): giving up",
				 name, (double)r->c->stall_ns / 1e9, (unsigned long long)d);
			return -ETIMEDOUT;
		}
	}
	uint64_t t1 = t0;
	memset(res, 0, sizeof(*res));
	for (uint32_t i = 0; i < n; i++) {
		struct cmp_thread *t = &r->th[i];
		pthread_join(t->th, NULL);
		if (t->end_ns > t1)
			t1 = t->end_ns;
		res->ios += t->ios;
		res->errors += t->errors;
		res->verified += t->verified;
		res->verify_fail += t->verify_fail;
		if (t->errors && !res->first_error[0])
			snprintf(res->first_error, sizeof(res->first_error), "%s", t->first_error);
	}
	res->bytes = res->ios * r->c->bs;
	res->seconds = (double)(t1 - t0) / 1e9;
	res->threads = n;
	free(r->th);
	r->th = NULL;
	return 0;
}

static void cmp_init(struct cmp_run *r, const struct bench_files *f, const struct bench_cmp_cfg *c)
{
	memset(r, 0, sizeof(*r));
	r->f = f;
	r->c = c;
	r->pat.bs = c->bs;
	r->pat.lba_shift = c->lba_shift;
}

/* ---- posix: pread, then a copy into target memory, one block at a time ------------ */

/* pread all of [off, off + len): a short read goes on from where it stopped. 0 or an
 * errno (0 bytes at the end of the file: ENODATA). */
static int pread_full(int fd, uint8_t *buf, uint32_t len, uint64_t off)
{
	uint32_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			return ENODATA;
		got += (uint32_t)n;
	}
	return 0;
}

static void *posix_main(void *arg)
{
	struct cmp_thread *t = arg;
	struct cmp_run *r = t->r;
	const uint32_t bs = r->c->bs;
	uint8_t *buf = r->host ? r->host + (uint64_t)t->t * bs : NULL;
#ifdef BAM_HAVE_CUDA
	if (r->gpu)
		buf = bench_gpu_posix_buf(r->gpu, t->t);
#endif
	uint64_t blk, off;
	uint32_t file;
	while (cmp_claim(t, &blk)) {
		cmp_place(r, blk, &file, &off);
		int e = pread_full(r->f->fd[file], buf, bs, off);
		if (e) {
			cmp_error(t, "pread", file, off, e == ENODATA ? 0 : e);
			__atomic_fetch_add(&r->done, 1, __ATOMIC_RELAXED); /* progress all the same */
			continue;
		}
		/* the copy into target memory, per request (what a GPU application reading
		 * through the OS does for each block) */
#ifdef BAM_HAVE_CUDA
		if (r->gpu) {
			if (bench_gpu_posix_copy(r->gpu, t->t)) {
				cmp_error(t, "cudaMemcpyAsync", file, off, EIO);
				break; /* the CUDA context is broken: stop this thread */
			}
		} else
#endif
			memcpy(r->dst + (uint64_t)t->t * bs, buf, bs);
		cmp_done(t, buf, file, off);
	}
	cmp_exit(t);
	return NULL;
}

int bench_posix_run(const struct bench_files *f, const struct bench_cmp_cfg *c, struct bench_cmp_result *res)
{
	struct cmp_run r;
	cmp_init(&r, f, c);
	uint64_t bytes = (uint64_t)c->threads * c->bs;
	int rc = 0;
	if (c->gpu) {
#ifdef BAM_HAVE_CUDA
		rc = bench_gpu_posix_open(c->threads, c->bs, &r.gpu);
#else
		rc = -ENODEV;
#endif
	} else {
		if (posix_memalign((void **)&r.host, 4096, bytes) || posix_memalign((void **)&r.dst, 4096, bytes)) {
			rc = -ENOMEM;
		} else {
			/* touched before the clock starts: no page faults in the run */
			memset(r.host, 0, bytes);
			memset(r.dst, 0, bytes);
		}
	}
	if (!rc)
		rc = cmp_launch(&r, posix_main, "posix baseline", res);
	if (rc == -ETIMEDOUT) /* threads are still reading into the buffers */
		return rc;
#ifdef BAM_HAVE_CUDA
	if (r.gpu)
		bench_gpu_posix_close(r.gpu);
#endif
	free(r.host);
	free(r.dst);
	return rc;
}

/* ---- uring: the disk's ceiling, qd reads in flight per thread --------------------- */

struct uring_slot {
	uint64_t off;
	uint32_t file;
	uint32_t got;     /* bytes read so far (a short read goes on from here) */
	uint32_t retries; /* -EAGAIN / -EINTR resubmissions */
};

static void uring_prep(struct io_uring *ring, const struct cmp_run *r, uint8_t *buf, struct uring_slot *s, uint32_t i)
{
	/* the SQ has room: at most qd reads are ever queued or in flight */
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_prep_read(sqe, r->f->fd[s->file], buf + s->got, r->c->bs - s->got, s->off + s->got);
	io_uring_sqe_set_data64(sqe, i);
}

static void *uring_main(void *arg)
{
	struct cmp_thread *t = arg;
	struct cmp_run *r = t->r;
	const uint32_t bs = r->c->bs, qd = r->c->qd;
	uint8_t *bufs = r->host + (size_t)t->t * qd * bs;
	struct io_uring ring;
	struct uring_slot *slot = calloc(qd, sizeof(*slot));
	uint32_t *free_ = calloc(qd, sizeof(*free_));
	int ring_ok = 0, rc;
	uint32_t nfree = qd, inflight = 0;
	if (!slot || !free_) {
		cmp_error(t, "slots", NO_FILE, 0, ENOMEM);
		goto out;
	}
	if ((rc = io_uring_queue_init(qd, &ring, 0))) {
		cmp_error(t, "io_uring_queue_init", NO_FILE, 0, -rc);
		goto out;
	}
	ring_ok = 1;
	for (uint32_t i = 0; i < qd; i++)
		free_[i] = qd - 1 - i;
	int more = 1;
	for (;;) {
		uint64_t blk;
		while (more && nfree) {
			if (!(more = cmp_claim(t, &blk)))
				break;
			uint32_t i = free_[--nfree];
			struct uring_slot *s = &slot[i];
			cmp_place(r, blk, &s->file, &s->off);
			s->got = 0;
			s->retries = 0;
			uring_prep(&ring, r, bufs + (size_t)i * bs, s, i);
			inflight++;
		}
		if (!inflight)
			break;
		/* submit what was queued and wait for at least one completion, in one system
		 * call; bounded so that a lost completion shows up in the watchdog */
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = {.tv_sec = 1, .tv_nsec = 0};
		rc = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, NULL);
		if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
			cmp_error(t, "io_uring_submit_and_wait", NO_FILE, 0, -rc);
			break; /* reads may be in flight: the buffers are not freed (below) */
		}
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			uint32_t i = (uint32_t)io_uring_cqe_get_data64(cqe);
			struct uring_slot *s = &slot[i];
			int res = cqe->res;
			seen++;
			if ((res == -EAGAIN || res == -EINTR) && s->retries++ < 16) {
				uring_prep(&ring, r, bufs + (size_t)i * bs, s, i);
				continue;
			}
			if (res > 0 && s->got + (uint32_t)res < bs) {
				s->got += (uint32_t)res; /* short read: the rest */
				uring_prep(&ring, r, bufs + (size_t)i * bs, s, i);
				continue;
			}
			if (res <= 0) {
				cmp_error(t, "read", s->file, s->off, res == 0 ? 0 : -res);
				__atomic_fetch_add(&r->done, 1, __ATOMIC_RELAXED);
			} else {
				cmp_done(t, bufs + (size_t)i * bs, s->file, s->off);
			}
			free_[nfree++] = i;
			inflight--;
		}
		io_uring_cq_advance(&ring, seen);
	}
	if (inflight) {
		/* the kernel may still write into bufs: keep them, and the ring */
		__atomic_store_n(&r->leak, 1, __ATOMIC_RELAXED);
		ring_ok = 0;
	}
out:
	if (ring_ok)
		io_uring_queue_exit(&ring);
	free(slot);
	free(free_);
	cmp_exit(t);
	return NULL;
}

int bench_uring_run(const struct bench_files *f, const struct bench_cmp_cfg *c, struct bench_cmp_result *res)
{
	struct bench_cmp_cfg cc = *c;
	if ((uint64_t)cc.qd * cc.bs > BENCH_URING_MAX_BUF)
		cc.qd = BENCH_URING_MAX_BUF / cc.bs;
	if (cc.qd == 0)
		cc.qd = 1;
	struct cmp_run r;
	cmp_init(&r, f, &cc);
	size_t bytes = (size_t)cc.threads * cc.qd * cc.bs;
	if (posix_memalign((void **)&r.host, 4096, bytes))
		return -ENOMEM;
	memset(r.host, 0, bytes); /* touched before the clock starts */
	int rc = cmp_launch(&r, uring_main, "io_uring ceiling", res);
	res->qd = cc.qd;
	if (!r.leak && rc != -ETIMEDOUT)
		free(r.host);
	return rc;
}
