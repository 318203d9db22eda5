/* SPDX-License-Identifier: MIT */
/*
 * The "file" back end: real storage. Each file or block device named in the back-end
 * string is one NVMe controller with one namespace (several files = several SSDs:
 * the core's arrays stripe lines over them). Admin commands run synchronously on the
 * host, as in emu; each controller's I/O queues are served by host threads that
 * fetch SQEs from the SQ tail doorbell, check them with nvmet_validate (one set of
 * NVMe rules for every software controller, src/nvmet), and execute them with io_uring, many commands in
 * flight per thread. CQEs are posted as the I/Os complete, in completion order.
 *
 * Data path. CPU target: PRP addresses are host pointers, read into and written from
 * directly (readv/writev on the PRP segments); with O_DIRECT a segment the file's
 * direct-I/O alignment refuses goes through the slot's bounce buffer instead. GPU
 * target: PRP addresses (and PRP lists) are GPU memory, which the kernel cannot DMA
 * to or from here, so every command goes through a pinned staging buffer per slot
 * and a copy on the worker's own non-blocking stream (nothing here synchronises the
 * device); a read's CQE is posted after its copy, the copies of all reads reaped
 * together waited for once (flush_pending).
 * Back-end string: docs/BACKENDS.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "../../core/ctx_internal.h"
#include "file_core.h"

#define ST(sct, sc) NVME_STATUS(sct, sc)
#define FILE_MAX_RETRIES 16 /* -EAGAIN / -EINTR resubmissions of one command */

struct file_cfg {
	char *paths[BAM_MAX_CTRLS];
	uint32_t n_paths;
	uint32_t lba;      /* 0 = the file's default */
	int direct;        /* O_DIRECT (default 1) */
	uint64_t size;     /* namespace bytes per file, 0 = the file's size */
	uint32_t workers;  /* service threads per file, 0 = default */
	uint32_t qd;       /* io_uring depth = commands in flight per thread, 0 = default */
	int stage;         /* the GPU target's staged data path, on the CPU target (tests) */
	char bad[300];
};

struct file_ctrl {
	struct nvmet_ctrl nvmet;  /* the front end: namespace, queues, doorbells, counters */
	uint32_t *qinfl;          /* [FILE_MAX_QUEUES + 1] commands in service per queue */
	const char *path;
	int fd;                   /* I/O (O_DIRECT when 'direct') */
	int fd_buf;               /* provisioning path: buffered (may be == fd) */
	int direct, rdonly, blkdev;
	uint32_t dio_align;       /* direct I/O: alignment of buffers, lengths and offsets */
	uint64_t ns_bytes;
	dev_t dev, rdev;          /* what it is (fstat): no two controllers on one file */
	ino_t ino;
	dev_t back_dev;           /* a loop device: its backing file (else 0) */
	ino_t back_ino;
};

struct file_seg {
	uint64_t addr;            /* target address (host pointer on the CPU target) */
	uint32_t len;
	uint32_t pad;
};

/* One command in service. */
struct file_slot {
	struct nvme_sqe sqe;      /* copy taken at fetch: the SQ slot is free once SQHD passes it */
	struct nvmet_queue *q;
	uint32_t qid;
	uint32_t bytes;           /* transfer size */
	uint32_t done;            /* bytes moved so far: a short read or write goes on from here */
	uint32_t retries;
	uint32_t nseg, niov, iov_first;
	int bounce;               /* data through 'stage' */
	uint64_t off;             /* file offset of SLBA */
	uint8_t *stage;           /* FILE_MAX_XFER bytes, page aligned */
	uint64_t *prp;            /* FILE_PRP_PAGES pages: host copy of the PRP list (staged path) */
	struct file_seg seg[FILE_MAX_SEGS];
	struct iovec iov[FILE_MAX_SEGS];
};

#define FILE_BATCHES 64 /* copy batches in flight per worker */

struct file_be;
struct file_worker {
	struct file_be *fb;
	struct file_ctrl *fc;
	uint32_t w, nw;           /* serves qid = 1 + w + k * nw */
	uint32_t nq_owned, next_q;
	struct io_uring ring;
	int ring_ok;
	struct file_slot *slots;
	uint32_t nslots;
	uint32_t *free_slots, nfree;
	uint8_t *stage;           /* nslots * FILE_MAX_XFER */
	void *cs;                 /* GPU target: this worker's copy stream */
	/* GPU target: reads whose copy-out is queued on cs, CQE not yet posted, in a ring
	 * of nslots slot ids (a slot is in it at most once): [pend_head, pend_tail), as
	 * free-running counters. The entries up to batch_end[k] form batch k, closed by
	 * event ev[k] recorded on cs after its copies; batches in a FIFO of FILE_BATCHES,
	 * [b_head, b_tail). The CQEs of a batch are posted once its event has completed
	 * (polled, never waited for while other work is there), so the worker goes on
	 * fetching and submitting while the copy engine works. */
	uint32_t *pend, pend_head, pend_tail;
	void *ev[FILE_BATCHES];
	uint32_t batch_end[FILE_BATCHES], b_head, b_tail;
	uint64_t *prp;            /* nslots * FILE_PRP_PAGES pages */
	int leak;                 /* I/O still in the kernel at stop: keep its buffers */
	pthread_t th;
	int started;
};

struct file_be {
	struct bam_ctx *ctx;
	struct file_cfg cfg;
	uint32_t n;
	struct file_ctrl *c;
	int staged;               /* GPU target (or stage=1): data via staging + bam_mem_copy */
	uint32_t stop;
	struct file_worker *w;
	uint32_t n_w;
	char desc[1024];
};

/* ---- option parsing ------------------------------------------------------------ */

static int add_path(struct file_cfg *c, const char *p)
{
	if (!*p) {
		snprintf(c->bad, sizeof(c->bad), "empty path");
		return -EINVAL;
	}
	if (c->n_paths == BAM_MAX_CTRLS) {
		snprintf(c->bad, sizeof(c->bad), "more than %u files", BAM_MAX_CTRLS);
		return -EINVAL;
	}
	c->paths[c->n_paths] = strdup(p);
	if (!c->paths[c->n_paths])
		return -ENOMEM;
	c->n_paths++;
	return 0;
}

/* Decimal digits only (strtoul alone takes leading blanks, a sign, and wraps '-1'). */
static int parse_u32(const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
	for (const char *p = v; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	char *end;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	if (!*v || *end || errno || n < lo || n > hi)
		return -EINVAL;
	*out = (uint32_t)n;
	return 0;
}

/* "file:PATH[,PATH...][,k=v...]": a token is an option when it is KEY=VALUE with a
 * known key, a path otherwise (path=P names one explicitly, e.g. a path with '='). */
static int file_kv(void *arg, const char *k, const char *v)
{
	struct file_cfg *c = arg;
	int rc = 0;
	if (!strcmp(k, "path")) {
		return add_path(c, v);
	} else if (!strcmp(k, "lba")) {
		uint32_t n = 0;
		rc = parse_u32(v, 512, 4096, &n);
		if (!rc && n != 512 && n != 4096)
			rc = -EINVAL;
		c->lba = n;
	} else if (!strcmp(k, "direct")) {
		if (!strcmp(v, "1"))
			c->direct = 1;
		else if (!strcmp(v, "0"))
			c->direct = 0;
		else
			rc = -EINVAL;
	} else if (!strcmp(k, "size")) {
		rc = bam_parse_size(v, &c->size);
		if (!rc && c->size == 0)
			rc = -EINVAL;
	} else if (!strcmp(k, "workers")) {
		rc = parse_u32(v, 1, 256, &c->workers);
	} else if (!strcmp(k, "qd")) {
		rc = parse_u32(v, 1, 4096, &c->qd);
	} else if (!strcmp(k, "stage")) {
		if (!strcmp(v, "1"))
			c->stage = 1;
		else if (!strcmp(v, "0"))
			c->stage = 0;
		else
			rc = -EINVAL;
	} else if (!*v) {
		return add_path(c, k); /* a bare token: a path */
	} else if (strchr(k, '/')) {
		char p[4096];
		snprintf(p, sizeof(p), "%s=%s", k, v); /* a path with '=' after a '/' */
		return add_path(c, p);
	} else {
		snprintf(c->bad, sizeof(c->bad), "unknown key '%s' (keys: path, lba, direct, size, workers, qd, stage; other tokens are paths)", k);
		return -EINVAL;
	}
	if (rc && !c->bad[0])
		snprintf(c->bad, sizeof(c->bad), "bad value '%s' for key '%s'", v, k);
	return rc;
}

/* ---- opening the files --------------------------------------------------------- */

/* Direct-I/O alignment the kernel reports for fd (statx STATX_DIOALIGN, Linux 6.1),
 * else the logical block size of a block device, else 512. */
static uint32_t dio_alignment(int fd, const struct stat *st)
{
	uint32_t a = 0;
#ifdef STATX_DIOALIGN
	struct statx sx;
	memset(&sx, 0, sizeof(sx));
	if (!statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) && (sx.stx_mask & STATX_DIOALIGN) &&
	    sx.stx_dio_offset_align) {
		a = sx.stx_dio_offset_align;
		if (sx.stx_dio_mem_align > a)
			a = sx.stx_dio_mem_align;
	}
#endif
	if (!a && S_ISBLK(st->st_mode)) {
		int lbs = 0;
		if (!ioctl(fd, BLKSSZGET, &lbs) && lbs > 0)
			a = (uint32_t)lbs;
	}
	return a ? a : 512;
}

struct open_notes {
	const char *nodirect_path;  /* first file that fell back to buffered I/O */
	char nodirect_why[128];
	uint32_t nodirect;
};

static int open_one(struct file_be *fb, uint32_t i, struct open_notes *notes, char *err, size_t errlen)
{
	struct file_ctrl *fc = &fb->c[i];
	const struct file_cfg *cfg = &fb->cfg;
	const char *path = cfg->paths[i];
	fc->path = path;
	fc->fd = fc->fd_buf = -1;
	/* O_NONBLOCK: opening a FIFO read-only (the fallback below) would wait for a
	 * writer, and some character devices wait at open too; cleared once it is known
	 * to be a file or a block device (io_uring would fail its I/O with -EAGAIN).
	 * O_NOCTTY: a terminal named here must not become the process's own. */
	const int oflags = O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
	/* The error reported is the first real cause: a create that fails with EROFS,
	 * ENOSPC or EACCES is said so, not hidden behind the read-only fallback's ENOENT
	 * (the file is not there because it could not be created) */
	int fd = open(path, O_RDWR | oflags), e = fd < 0 ? errno : 0, creating = 0;
	if (fd < 0 && e == ENOENT && cfg->size) {
		creating = 1;
		fd = open(path, O_RDWR | oflags | O_CREAT, 0644);
		e = fd < 0 ? errno : 0;
	}
	if (fd < 0 && (e == EACCES || e == EROFS || e == EPERM)) {
		fd = open(path, O_RDONLY | oflags);
		fc->rdonly = fd >= 0;
	}
	if (fd < 0 && e == EISDIR) {
		snprintf(err, errlen, "file: %s is a directory", path);
		return -EINVAL;
	}
	if (fd < 0) {
		char dir[1024];
		bam_media_open_hint(path, e, creating, dir, sizeof(dir));
		snprintf(err, errlen, "file: %s: %s%s%s", path, creating ? "cannot create it: " : "", strerror(e), dir);
		return -EIO; /* bam_ctx_open's "a controller failed to initialise" */
	}
	fc->fd_buf = fd;
	struct stat st;
	if (fstat(fd, &st)) {
		snprintf(err, errlen, "file: %s: fstat: %s", path, strerror(errno));
		return -EIO;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "file: %s is a directory", path);
		return -EINVAL;
	}
	/* A namespace is blocks at fixed offsets that keep what was written. A character
	 * device does not (/dev/null takes every write and reads zeros: a run would
	 * "succeed" with a wrong answer), nor does a FIFO or a socket (no offsets) */
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		snprintf(err, errlen, "file: %s is %s: give a regular file or a block device", path,
			 bam_file_kind(st.st_mode));
		return -EINVAL;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
		snprintf(err, errlen, "file: %s: fcntl: %s", path, strerror(errno));
		return -EIO;
	}
	/* Each controller needs storage of its own: two on one file (or one block device,
	 * under any name) would overwrite each other's lines, and every read would return
	 * what the other wrote */
	fc->dev = st.st_dev;
	fc->ino = st.st_ino;
	fc->rdev = S_ISBLK(st.st_mode) ? st.st_rdev : 0;
	fc->back_dev = 0;
	fc->back_ino = 0;
	struct loop_info64 li;
	if (fc->rdev && ioctl(fd, LOOP_GET_STATUS64, &li) == 0) { /* a loop device: over which file */
		fc->back_dev = (dev_t)li.lo_device;
		fc->back_ino = (ino_t)li.lo_inode;
	}
	for (uint32_t j = 0; j < i; j++) {
		const struct file_ctrl *o = &fb->c[j];
		const int same = (o->dev == fc->dev && o->ino == fc->ino) || (fc->rdev && o->rdev == fc->rdev) ||
				 (fc->back_dev && ((o->dev == fc->back_dev && o->ino == fc->back_ino) ||
						   (o->back_dev == fc->back_dev && o->back_ino == fc->back_ino))) ||
				 (o->back_dev && o->back_dev == fc->dev && o->back_ino == fc->ino);
		if (same) {
			snprintf(err, errlen, "file: %s and %s are the same %s: give each controller its own", o->path, path,
				 fc->back_dev || o->back_dev ? "storage (a loop device over the other)"
				 : fc->rdev		     ? "device"
							     : "file");
			return -EINVAL;
		}
	}
	/* (after the check above, which says more) one user at a time: a second process on the same file or device would
	 * overwrite this one's data (shared among read-only users) */
	int lrc = bam_media_lock(fd, !fc->rdonly, "file", path, err, errlen);
	if (lrc)
		return lrc == -EBUSY ? -EBUSY : -EIO;
	uint64_t have = 0; /* bytes the file or device holds now (0 = unknown) */
	uint32_t lbs = 0;
	fc->blkdev = S_ISBLK(st.st_mode);
	if (fc->blkdev) {
		int s = 0;
		if (ioctl(fd, BLKGETSIZE64, &have) || ioctl(fd, BLKSSZGET, &s)) {
			snprintf(err, errlen, "file: %s: block device size: %s", path, strerror(errno));
			return -EIO;
		}
		lbs = (uint32_t)s;
	} else {
		have = (uint64_t)st.st_size;
	}
	fc->dio_align = dio_alignment(fd, &st);

	/* LBA size: as asked; else a block device's logical block size; else 512, or
	 * the direct-I/O alignment when that is larger (4 KiB-sector disks) */
	uint32_t lba = cfg->lba;
	if (!lba) {
		uint32_t want = lbs ? lbs : (cfg->direct ? fc->dio_align : 512);
		lba = want <= 512 ? 512 : 4096;
		if (want > 4096) {
			snprintf(err, errlen, "file: %s: logical block size %u: only 512 and 4096 are supported", path, want);
			return -EINVAL;
		}
	}
	if (lbs > lba) {
		snprintf(err, errlen, "file: %s: lba=%u is below the device's logical block size %u", path, lba, lbs);
		return -EINVAL;
	}
	fc->nvmet.lba_shift = lba == 4096 ? 12 : 9;

	/* namespace size: size= (the file grows to it), else what the file holds */
	uint64_t ns = cfg->size ? cfg->size : have - have % lba;
	if (cfg->size && cfg->size % lba) {
		snprintf(err, errlen, "file: size %llu is not a multiple of the LBA size %u", (unsigned long long)cfg->size, lba);
		return -EINVAL;
	}
	if (ns == 0) {
		snprintf(err, errlen, "file: %s holds less than one LBA (%u bytes): give size= to size it", path, lba);
		return -EINVAL;
	}
	if (fc->blkdev && ns > have) {
		snprintf(err, errlen, "file: %s: size %llu exceeds the device's %llu bytes", path, (unsigned long long)ns,
			 (unsigned long long)have);
		return -EINVAL;
	}
	if (S_ISREG(st.st_mode) && have < ns) {
		if (fc->rdonly) {
			snprintf(err, errlen, "file: %s is read-only and shorter (%llu bytes) than size=%llu", path,
				 (unsigned long long)have, (unsigned long long)ns);
			return -EINVAL;
		}
		/* grow: the new blocks read as zeros. Files the kernel cannot resize
		 * (procfs, sysfs: EINVAL) are used as they are. */
		if (ftruncate(fd, (off_t)ns) && errno != EINVAL) {
			snprintf(err, errlen, "file: cannot size %s to %llu bytes: %s", path, (unsigned long long)ns, strerror(errno));
			return -EIO;
		}
	}
	fc->ns_bytes = ns;
	fc->nvmet.nlba = ns >> fc->nvmet.lba_shift;

	/* direct I/O: a second descriptor with O_DIRECT; the buffered one stays for the
	 * provisioning path (unaligned offsets). The kernel keeps the two coherent: a
	 * direct read first writes back dirty cached pages of its range. */
	fc->fd = fd;
	if (cfg->direct) {
		const char *why = NULL;
		int dfd = -1;
		if (fc->dio_align > lba) {
			why = "its direct-I/O alignment exceeds lba=";
		} else {
			dfd = open(path, (fc->rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_DIRECT);
			if (dfd < 0) {
				why = strerror(errno);
			} else {
				/* some file systems accept O_DIRECT at open and refuse the I/O */
				void *probe = NULL;
				if (!posix_memalign(&probe, 4096, 4096)) {
					if (pread(dfd, probe, lba, 0) < 0 && errno == EINVAL)
						why = "EINVAL on a direct read";
					free(probe);
				}
				if (why) {
					close(dfd);
					dfd = -1;
				}
			}
		}
		if (dfd >= 0) {
			fc->fd = dfd;
			fc->direct = 1;
		} else {
			if (!notes->nodirect++) {
				notes->nodirect_path = path;
				snprintf(notes->nodirect_why, sizeof(notes->nodirect_why), "%s%s", why,
					 fc->dio_align > lba ? (lba == 512 ? "512" : "4096") : "");
			}
		}
	}
	if (fc->rdonly && !fb->ctx->opts.quiet)
		fprintf(stderr, "bam: file: %s opened read-only: writes complete with Access Denied\n", path);

	fc->nvmet.q = calloc(FILE_MAX_QUEUES + 1, sizeof(struct nvmet_queue));
	fc->qinfl = calloc(FILE_MAX_QUEUES + 1, sizeof(uint32_t));
	/* doorbells: pinned, GPU-mapped host memory on the GPU target, so that GPU
	 * threads store to them and the service threads here poll them */
	fc->nvmet.db = bam_mem_alloc(fb->ctx, BAM_MEM_HOST_PINNED, 2 * (FILE_MAX_QUEUES + 1) * sizeof(uint32_t));
	fc->nvmet.index = i;
	if (!fc->nvmet.q || !fc->qinfl || !fc->nvmet.db)
		return -ENOMEM;
	return 0;
}

static void file_close(void *priv);

/* 'args' into *cfg (zeroed first) with the checks that need nothing opened: 0, or
 * -EINVAL with its message in err. The caller frees cfg->paths either way. */
static int file_cfg_parse(const char *args, struct file_cfg *cfg, char *err, size_t errlen)
{
	memset(cfg, 0, sizeof(*cfg));
	int rc = bam_kv_parse(args, file_kv, cfg);
	if (!rc && !cfg->n_paths) {
		snprintf(cfg->bad, sizeof(cfg->bad), "no file named (file:PATH[,PATH...][,key=value...])");
		rc = -EINVAL;
	}
	/* the LBA size is at least 512 (without lba=, the device's, rounded up to 512) */
	const uint32_t lba = cfg->lba ? cfg->lba : 512;
	if (!rc && cfg->size % lba) {
		snprintf(cfg->bad, sizeof(cfg->bad), "size %llu is not a multiple of the LBA size %u",
			 (unsigned long long)cfg->size, lba);
		rc = -EINVAL;
	}
	if (rc)
		snprintf(err, errlen, "file: %s", cfg->bad[0] ? cfg->bad : "malformed options");
	return rc;
}

static void file_cfg_free(struct file_cfg *cfg)
{
	for (uint32_t i = 0; i < cfg->n_paths; i++)
		free(cfg->paths[i]);
}

static int file_check(const char *args, char *err, size_t errlen)
{
	struct file_cfg cfg;
	int rc = file_cfg_parse(args, &cfg, err, errlen);
	file_cfg_free(&cfg);
	return rc;
}

/* the paths, one controller each, as file_open takes them */
static int file_media(const char *args, int (*cb)(void *arg, const char *path), void *arg, char *err, size_t errlen)
{
	struct file_cfg cfg;
	int rc = file_cfg_parse(args, &cfg, err, errlen);
	for (uint32_t i = 0; !rc && i < cfg.n_paths; i++)
		rc = cb(arg, cfg.paths[i]);
	file_cfg_free(&cfg);
	return rc;
}

static int file_info(const char *args, struct bam_backend_info *out, char *err, size_t errlen)
{
	struct file_cfg cfg;
	int rc = file_cfg_parse(args, &cfg, err, errlen);
	if (!rc) {
		out->n_ctrl = cfg.n_paths;
		out->size = cfg.size;
		out->lba_size = cfg.lba;
		out->flags = 0; /* files and devices that outlive the run */
	}
	file_cfg_free(&cfg);
	return rc;
}

static int file_open(struct bam_ctx *ctx, const char *args, void **priv, uint32_t *n_ctrl, char *err, size_t errlen)
{
	struct file_be *fb = calloc(1, sizeof(*fb));
	if (!fb)
		return -ENOMEM;
	fb->ctx = ctx;
	fb->cfg.direct = 1;
	int rc = bam_kv_parse(args, file_kv, &fb->cfg);
	if (!rc && !fb->cfg.n_paths) {
		snprintf(fb->cfg.bad, sizeof(fb->cfg.bad), "no file named (file:PATH[,PATH...][,key=value...])");
		rc = -EINVAL;
	}
	if (!rc && ctx->opts.qpairs > FILE_MAX_QUEUES) {
		snprintf(fb->cfg.bad, sizeof(fb->cfg.bad), "%u queue pairs: at most %u", ctx->opts.qpairs, FILE_MAX_QUEUES);
		rc = -EINVAL;
	}
	if (rc) {
		snprintf(err, errlen, "file: %s", fb->cfg.bad[0] ? fb->cfg.bad : "malformed options");
		file_close(fb);
		return rc;
	}
	/* io_uring may be disabled (kernel.io_uring_disabled, seccomp): say so here,
	 * not as a failure to start */
	struct io_uring probe;
	if ((rc = io_uring_queue_init(2, &probe, 0))) {
		snprintf(err, errlen, "file: io_uring unavailable: %s", strerror(-rc));
		file_close(fb);
		return rc == -ENOMEM ? -ENOMEM : -EIO;
	}
	io_uring_queue_exit(&probe);
	if (!fb->cfg.workers)
		fb->cfg.workers = ctx->opts.ctrl_workers ? ctx->opts.ctrl_workers : FILE_DEFAULT_WORKERS;
	if (!fb->cfg.qd)
		fb->cfg.qd = FILE_DEFAULT_QD;
	fb->staged = ctx->target == BAM_TARGET_GPU || fb->cfg.stage;
	fb->n = fb->cfg.n_paths;
	fb->c = calloc(fb->n, sizeof(*fb->c));
	if (!fb->c) {
		file_close(fb);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < fb->n; i++)
		fb->c[i].fd = fb->c[i].fd_buf = -1;
	struct open_notes notes;
	memset(&notes, 0, sizeof(notes));
	for (uint32_t i = 0; i < fb->n; i++) {
		if ((rc = open_one(fb, i, &notes, err, errlen))) {
			if (rc == -ENOMEM && !err[0])
				snprintf(err, errlen, "file: out of memory");
			file_close(fb);
			return rc;
		}
	}
	if (notes.nodirect && !ctx->opts.quiet)
		fprintf(stderr, "bam: file: direct I/O refused for %s (%s)%s: buffered I/O through the page cache\n",
			notes.nodirect_path, notes.nodirect_why, notes.nodirect > 1 ? " and other files" : "");

	int n = snprintf(fb->desc, sizeof(fb->desc), "file:");
	for (uint32_t i = 0; i < fb->n && n < (int)sizeof(fb->desc); i++)
		n += snprintf(fb->desc + n, sizeof(fb->desc) - (size_t)n, "%s,", fb->c[i].path);
	if (n < (int)sizeof(fb->desc))
		snprintf(fb->desc + n, sizeof(fb->desc) - (size_t)n, "lba=%u,size=%llu,direct=%s,workers=%u,qd=%u%s",
			 1u << fb->c[0].nvmet.lba_shift, (unsigned long long)fb->c[0].ns_bytes,
			 notes.nodirect == 0 ? (fb->cfg.direct ? "1" : "0") : (notes.nodirect == fb->n ? "0" : "mixed"),
			 fb->cfg.workers, fb->cfg.qd, fb->cfg.stage ? ",stage=1" : "");
	*priv = fb;
	*n_ctrl = fb->n;
	return 0;
}

/* ---- admin (synchronous, nvmet_admin_exec) --------------------------------------- */

static int file_admin(void *priv, uint32_t ci, const struct nvme_sqe *s, void *data, struct nvme_cqe *cqe)
{
	struct file_be *fb = priv;
	struct file_ctrl *fc = &fb->c[ci];
	char sn[21], mn[64];
	snprintf(sn, sizeof(sn), "BAMFILE%04u", ci);
	/* model: the file's name, as an SSD's MN names the device */
	const char *base = strrchr(fc->path, '/');
	base = base && base[1] ? base + 1 : fc->path;
	snprintf(mn, sizeof(mn), "%s %s", fc->blkdev ? "bam block" : "bam file", base);
	memset(cqe, 0, sizeof(*cqe));
	cqe->cid = s->cid;
	cqe->status = nvmet_admin_exec(&fc->nvmet, FILE_MAX_QUEUES, FILE_MDTS, sn, mn, s, data);
	return 0;
}

static uint32_t *file_doorbell(void *priv, uint32_t ci, uint32_t qid, int cq)
{
	struct file_be *fb = priv;
	return &fb->c[ci].nvmet.db[2 * qid + (cq ? 1 : 0)];
}

/* ---- data movement ------------------------------------------------------------------ */

/*
 * Staged path: the PRP list lives in target memory (GPU memory on the GPU target),
 * which nvmet_prp_next cannot read from the host. Copy the list pages it will walk
 * into host pages 'm', at the same offsets, rewrite each chain entry (Base 4.3.1:
 * the last entry of a full list page points to the next page) to the host copy of
 * the next page, and point s->prp2 at the copy. Data entries stay target addresses.
 * Malformed pointers are left for nvmet_prp_next to report (PRP Offset Invalid).
 * Returns 0 or an NVMe status.
 */
static uint16_t prp_mirror(struct bam_ctx *ctx, struct nvme_sqe *s, uint32_t bytes, uint64_t *m)
{
	const uint64_t pmask = NVME_PAGE_SIZE - 1;
	const uint32_t first = NVME_PAGE_SIZE - (uint32_t)(s->prp1 & pmask);
	if (bytes <= first || bytes - first <= NVME_PAGE_SIZE)
		return 0; /* PRP2 unused or the second data page: no list */
	uint32_t need = (bytes - first + NVME_PAGE_SIZE - 1) / NVME_PAGE_SIZE; /* data entries left */
	uint64_t src = s->prp2, host_first = 0;
	uint64_t *chain = NULL;
	if ((src & 7u) || !src)
		return 0;
	for (uint32_t p = 0;; p++) {
		if (p == FILE_PRP_PAGES)
			return ST(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR);
		uint32_t off = (uint32_t)(src & pmask);
		uint32_t room = (NVME_PAGE_SIZE - off) / 8; /* entries up to the end of this page */
		uint32_t take = need <= room ? need : room;
		uint64_t *h = m + (size_t)p * (NVME_PAGE_SIZE / 8) + off / 8;
		if (bam_mem_copy(ctx, h, (const void *)(uintptr_t)src, (uint64_t)take * 8))
			return ST(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR);
		if (chain)
			*chain = (uint64_t)(uintptr_t)h;
		else
			host_first = (uint64_t)(uintptr_t)h;
		if (need <= room)
			break; /* the rest of the list is data entries in this page */
		need -= room - 1; /* room - 1 data entries, then the chain entry */
		chain = &h[room - 1];
		src = *chain;
		if ((src & 7u) || !src)
			break;
	}
	s->prp2 = host_first;
	return 0;
}

/* PRP segments of the command, neighbours merged (a cache line's pages are one
 * buffer, so most commands become one segment). Returns 0 or an NVMe status. */
static uint16_t prp_segments(struct file_slot *sl, const struct nvme_sqe *s)
{
	struct nvmet_prp_iter it;
	uint64_t addr;
	uint32_t len;
	int r;
	sl->nseg = 0;
	nvmet_prp_begin(&it, s, sl->bytes);
	while ((r = nvmet_prp_next(&it, &addr, &len)) > 0) {
		struct file_seg *last = sl->nseg ? &sl->seg[sl->nseg - 1] : NULL;
		if (last && last->addr + last->len == addr) {
			last->len += len;
			continue;
		}
		if (sl->nseg == FILE_MAX_SEGS)
			return ST(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR);
		sl->seg[sl->nseg].addr = addr;
		sl->seg[sl->nseg].len = len;
		sl->nseg++;
	}
	return r < 0 ? (uint16_t)-r : 0;
}

/* Move data between the slot's stage and the PRP segments: to the stage before a
 * write (to_stage), from it after a read. CPU target: a plain copy. GPU target: copies
 * queued on the worker's own stream (cs); with 'wait' the worker synchronises with
 * them before returning, else the caller does (flush_pending) before the CQE. */
static uint16_t stage_copy(struct file_worker *wk, struct file_slot *sl, int to_stage, int wait)
{
	uint64_t o = 0;
	for (uint32_t i = 0; i < sl->nseg; i++) {
		void *t = (void *)(uintptr_t)sl->seg[i].addr;
		void *d = to_stage ? (void *)(sl->stage + o) : t;
		const void *s = to_stage ? (const void *)t : (const void *)(sl->stage + o);
		int rc;
#ifdef BAM_HAVE_CUDA
		if (wk->cs)
			rc = bam_gpu_copy_on(wk->cs, d, s, sl->seg[i].len);
		else
#endif
			rc = bam_mem_copy(wk->fb->ctx, d, s, sl->seg[i].len);
		if (rc)
			return ST(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR);
		o += sl->seg[i].len;
	}
#ifdef BAM_HAVE_CUDA
	if (wk->cs && wait && bam_gpu_stream_wait(wk->cs))
		return ST(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR);
#else
	(void)wait;
#endif
	return 0;
}

static int segs_dio_aligned(const struct file_slot *sl, uint32_t a)
{
	for (uint32_t i = 0; i < sl->nseg; i++)
		if ((sl->seg[i].addr | sl->seg[i].len) & (a - 1))
			return 0;
	return 1;
}

/* Queue the (rest of the) slot's I/O on the ring; submitted in a batch later.
 * Returns 0, or Internal Error when the ring has no free entry. */
static uint16_t submit_io(struct file_worker *wk, struct file_slot *sl)
{
	struct io_uring_sqe *u = io_uring_get_sqe(&wk->ring);
	if (!u) {
		/* not expected (ring entries >= slots): flush the ring and retry once */
		io_uring_submit(&wk->ring);
		u = io_uring_get_sqe(&wk->ring);
		if (!u)
			return ST(NVME_SCT_GENERIC, NVME_SC_INTERNAL);
	}
	int fd = wk->fc->fd;
	if (sl->sqe.opc == NVME_CMD_FLUSH) {
		io_uring_prep_fsync(u, fd, IORING_FSYNC_DATASYNC);
	} else {
		const struct iovec *v = &sl->iov[sl->iov_first];
		uint32_t n = sl->niov - sl->iov_first;
		uint64_t off = sl->off + sl->done;
		if (sl->sqe.opc == NVME_CMD_READ) {
			if (n == 1)
				io_uring_prep_read(u, fd, v->iov_base, (unsigned)v->iov_len, off);
			else
				io_uring_prep_readv(u, fd, v, n, off);
		} else {
			if (n == 1)
				io_uring_prep_write(u, fd, v->iov_base, (unsigned)v->iov_len, off);
			else
				io_uring_prep_writev(u, fd, v, n, off);
		}
	}
	io_uring_sqe_set_data64(u, (uint64_t)(sl - wk->slots));
	return 0;
}

/* Set a fetched command going. Returns 0 (I/O queued) or the status to post now. */
static uint16_t start_cmd(struct file_worker *wk, struct file_slot *sl)
{
	struct file_ctrl *fc = wk->fc;
	struct nvme_sqe s = sl->sqe;
	uint32_t bytes = 0;
	uint16_t st = nvmet_validate(&fc->nvmet, &s, &bytes);
	if (st)
		return st;
	sl->bytes = bytes;
	sl->done = 0;
	sl->retries = 0;
	sl->bounce = 0;
	sl->nseg = sl->niov = sl->iov_first = 0;
	if (s.opc == NVME_CMD_FLUSH)
		return submit_io(wk, sl);
	if (s.opc == NVME_CMD_WRITE && fc->rdonly)
		return ST(NVME_SCT_MEDIA, NVME_SC_ACCESS_DENIED);
	sl->off = nvme_sqe_slba(&s) << fc->nvmet.lba_shift;
	if (wk->fb->staged && (st = prp_mirror(wk->fb->ctx, &s, bytes, sl->prp)))
		return st;
	if ((st = prp_segments(sl, &s)))
		return st;
	/* O_DIRECT wants aligned buffers and lengths; the core's are page aligned, but a
	 * PRP1 may carry any dword offset: bounce those */
	sl->bounce = wk->fb->staged || (fc->direct && !segs_dio_aligned(sl, fc->dio_align));
	if (sl->bounce) {
		if (s.opc == NVME_CMD_WRITE && (st = stage_copy(wk, sl, 1, 1)))
			return st;
		sl->iov[0].iov_base = sl->stage;
		sl->iov[0].iov_len = bytes;
		sl->niov = 1;
	} else {
		for (uint32_t i = 0; i < sl->nseg; i++) {
			sl->iov[i].iov_base = (void *)(uintptr_t)sl->seg[i].addr;
			sl->iov[i].iov_len = sl->seg[i].len;
		}
		sl->niov = sl->nseg;
	}
	return submit_io(wk, sl);
}

/* Post the command's CQE and free its slot. */
static void post_cmd(struct file_worker *wk, struct file_slot *sl, uint16_t st)
{
	struct file_ctrl *fc = wk->fc;
	nvmet_count(&fc->nvmet, &sl->sqe, st ? 0 : sl->bytes, st);
	nvmet_post_cqe(sl->q, sl->sqe.cid, st);
	fc->qinfl[sl->qid]--;
	wk->free_slots[wk->nfree++] = (uint32_t)(sl - wk->slots);
}

/* Post the CQEs of pending entries up to 'end' with status st. */
static void post_pending(struct file_worker *wk, uint32_t end, uint16_t st)
{
	for (; wk->pend_head != end; wk->pend_head++)
		post_cmd(wk, &wk->slots[wk->pend[wk->pend_head % wk->nslots]], st);
}

#ifdef BAM_HAVE_CUDA
/* The oldest copy batch (there is one): if its copies are complete (with 'block',
 * once they are), post its CQEs (Data Transfer Error if a copy failed) and return 1;
 * else 0. */
static int retire_oldest(struct file_worker *wk, int block)
{
	const uint32_t k = wk->b_head % FILE_BATCHES;
	int q = block ? bam_gpu_event_wait(wk->ev[k]) : bam_gpu_event_query(wk->ev[k]);
	if (q == 1)
		return 0;
	post_pending(wk, wk->batch_end[k], q ? ST(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR) : 0);
	wk->b_head++;
	return 1;
}
#endif

/* Post the CQEs of the copy batches whose copies are complete, oldest first; with
 * 'block', wait for all of them. The data is in place before each CQE. Returns the
 * number of CQEs posted. */
static uint32_t retire_batches(struct file_worker *wk, int block)
{
	uint32_t n0 = wk->pend_head;
#ifdef BAM_HAVE_CUDA
	while (wk->b_head != wk->b_tail && retire_oldest(wk, block))
		;
#else
	(void)block;
#endif
	return wk->pend_head - n0;
}

/* Close the batch of copy-outs queued since the last one: record its event (its CQEs
 * are posted by retire_batches). With the FIFO full, the oldest batch is waited for
 * first; if the event cannot be recorded, the stream is synchronised instead. */
static void flush_pending(struct file_worker *wk)
{
	const uint32_t open_from = wk->b_head == wk->b_tail ? wk->pend_head
							    : wk->batch_end[(wk->b_tail - 1) % FILE_BATCHES];
	if (wk->pend_tail == open_from)
		return;
#ifdef BAM_HAVE_CUDA
	if (wk->b_tail - wk->b_head == FILE_BATCHES)
		retire_oldest(wk, 1);
	const uint32_t k = wk->b_tail % FILE_BATCHES;
	if (bam_gpu_event_record(wk->ev[k], wk->cs) == 0) {
		wk->batch_end[k] = wk->pend_tail;
		wk->b_tail++;
		return;
	}
	/* no event: the older batches, then this one, by one synchronisation */
	uint16_t st = bam_gpu_stream_wait(wk->cs) ? ST(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR) : 0;
	retire_batches(wk, 1);
	post_pending(wk, wk->pend_tail, st);
#else
	post_pending(wk, wk->pend_tail, 0);
#endif
}

/* A command is done: a successful staged read first copies its data out (GPU target:
 * queued, posted by flush_pending after the batch's copies), then its CQE is posted. */
static void finish_cmd(struct file_worker *wk, struct file_slot *sl, uint16_t st)
{
	if (!st && sl->bounce && sl->sqe.opc == NVME_CMD_READ) {
		st = stage_copy(wk, sl, 0, wk->cs == NULL);
		if (!st && wk->cs) {
			wk->pend[wk->pend_tail++ % wk->nslots] = (uint32_t)(sl - wk->slots);
			return;
		}
	}
	post_cmd(wk, sl, st);
}

/* An io_uring completion for slot sl with result 'res' (bytes or -errno). */
static void io_done(struct file_worker *wk, struct file_slot *sl, int res)
{
	const uint8_t opc = sl->sqe.opc;
	uint16_t st;
	if ((res == -EAGAIN || res == -EINTR) && sl->retries++ < FILE_MAX_RETRIES) {
		if ((st = submit_io(wk, sl)))
			finish_cmd(wk, sl, st);
		return;
	}
	if (res < 0) {
		finish_cmd(wk, sl, bam_file_errno_status(opc, -res));
		return;
	}
	if (opc == NVME_CMD_FLUSH) {
		finish_cmd(wk, sl, 0);
		return;
	}
	uint32_t got = (uint32_t)res > sl->bytes - sl->done ? sl->bytes - sl->done : (uint32_t)res;
	sl->done += got;
	if (sl->done == sl->bytes) {
		finish_cmd(wk, sl, 0);
		return;
	}
	if (got == 0) {
		/* No progress. A write: Write Fault. A read: the end of file inside the
		 * namespace, so the file shrank under us and the blocks past its end are
		 * gone: Unrecovered Read Error, as a drive reports a block it cannot
		 * return. Zeros with success would be a wrong answer (a BFS from a
		 * truncated graph "succeeds"); holes inside the file are not this, the
		 * kernel reads them as zeros */
		finish_cmd(wk, sl, bam_file_errno_status(opc, EIO));
		return;
	}
	/* short transfer: go on with the rest */
	while (got) {
		struct iovec *v = &sl->iov[sl->iov_first];
		if (got >= v->iov_len) {
			got -= (uint32_t)v->iov_len;
			sl->iov_first++;
		} else {
			v->iov_base = (uint8_t *)v->iov_base + got;
			v->iov_len -= got;
			got = 0;
		}
	}
	if ((st = submit_io(wk, sl)))
		finish_cmd(wk, sl, st);
}

/* ---- service threads ---------------------------------------------------------------- */

/* Free CQ entries (head as written to the CQ head doorbell, Base 4.1), or 0 for a
 * doorbell value out of range. */
static uint32_t cq_room(const struct file_ctrl *fc, const struct nvmet_queue *q, uint32_t qid)
{
	uint32_t head = bam_load_acquire_sys_u32(&fc->nvmet.db[2 * qid + 1]);
	if (head >= q->depth)
		return 0;
	return (head + q->depth - q->cq_tail - 1) % q->depth;
}

/* Fetch SQEs from the worker's queues into free slots, round robin over the
 * queues. Returns the number fetched. */
static uint32_t fetch(struct file_worker *wk)
{
	struct file_ctrl *fc = wk->fc;
	uint32_t n = 0;
	for (uint32_t k = 0; k < wk->nq_owned && wk->nfree; k++) {
		uint32_t idx = (wk->next_q + k) % wk->nq_owned;
		uint32_t qid = 1 + wk->w + idx * wk->nw;
		struct nvmet_queue *q = &fc->nvmet.q[qid];
		if (!q->created)
			continue;
		/* doorbell value written by the submitters with release: the SQEs before
		 * it are visible after this acquire */
		uint32_t tail = bam_load_acquire_sys_u32(&fc->nvmet.db[2 * qid]);
		if (tail >= q->depth)
			continue; /* invalid doorbell write: ignored (Base 4.1: an error) */
		while (q->sq_head != tail && wk->nfree) {
			/* every command in service will post one CQE: fetch only while the
			 * CQ has room for all of them (a conforming host never fills it) */
			if (cq_room(fc, q, qid) <= fc->qinfl[qid])
				break;
			struct file_slot *sl = &wk->slots[wk->free_slots[--wk->nfree]];
			sl->sqe = q->sq[q->sq_head];
			q->sq_head = q->sq_head + 1 == q->depth ? 0 : q->sq_head + 1;
			sl->q = q;
			sl->qid = qid;
			fc->qinfl[qid]++;
			uint16_t st = start_cmd(wk, sl);
			if (st)
				finish_cmd(wk, sl, st);
			n++;
		}
	}
	if (wk->nq_owned)
		wk->next_q = (wk->next_q + 1) % wk->nq_owned;
	return n;
}

static uint32_t reap(struct file_worker *wk)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	/* completions waiting as task work (COOP_TASKRUN): post them to the CQ ring */
	if (IO_URING_READ_ONCE(*wk->ring.sq.kflags) & IORING_SQ_TASKRUN)
		io_uring_get_events(&wk->ring);
	io_uring_for_each_cqe(&wk->ring, head, cqe) {
		n++;
		uint64_t id = io_uring_cqe_get_data64(cqe);
		if (id < wk->nslots)
			io_done(wk, &wk->slots[id], cqe->res);
		/* else: liburing's internal timeout entry (LIBURING_UDATA_TIMEOUT) */
	}
	io_uring_cq_advance(&wk->ring, n);
	flush_pending(wk);
	return n;
}

/* At stop: let the I/O in the kernel finish (bounded), without posting CQEs: the
 * buffers it targets must not be freed under it. */
static void drain(struct file_worker *wk)
{
	uint64_t deadline = bam_time_ns() + 10000000000ull;
	flush_pending(wk);
	retire_batches(wk, 1);
	io_uring_submit(&wk->ring);
	while (wk->nfree < wk->nslots && bam_time_ns() < deadline) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 1000000};
		io_uring_wait_cqe_timeout(&wk->ring, &cqe, &ts);
		unsigned head, n = 0;
		io_uring_for_each_cqe(&wk->ring, head, cqe) {
			n++;
			uint64_t id = io_uring_cqe_get_data64(cqe);
			if (id < wk->nslots)
				wk->free_slots[wk->nfree++] = (uint32_t)id;
		}
		io_uring_cq_advance(&wk->ring, n);
	}
	if (wk->nfree < wk->nslots) {
		wk->leak = 1;
		fprintf(stderr, "bam: file: %s: %u I/Os still in the kernel after 10 s at stop\n", wk->fc->path,
			wk->nslots - wk->nfree);
	}
}

static void *worker_main(void *arg)
{
	struct file_worker *wk = arg;
	struct file_be *fb = wk->fb;
	uint32_t idle = 0;
	while (!bam_load_acquire_gpu_u32(&fb->stop)) {
		uint32_t did = fetch(wk);
		if (io_uring_sq_ready(&wk->ring))
			io_uring_submit(&wk->ring); /* one system call for the batch */
		did += reap(wk);
		did += retire_batches(wk, 0);
		if (did) {
			idle = 0;
			continue;
		}
		idle++;
		if (wk->b_head != wk->b_tail) {
			bam_spin_pause(idle < 16 ? idle : 16); /* copies in flight: poll their events */
		} else if (wk->nfree == 0 || (wk->nfree < wk->nslots && idle > 64)) {
			/* I/O in flight and nothing new: sleep in the kernel until a
			 * completion, bounded so the doorbells and stop are polled */
			struct io_uring_cqe *cqe;
			struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = wk->nfree ? 20000 : 1000000};
			io_uring_wait_cqe_timeout(&wk->ring, &cqe, &ts);
		} else if (wk->nfree == wk->nslots && idle > 64) {
			usleep(idle > 4096 ? 200 : 20); /* idle controller: do not burn a core */
		} else {
			bam_spin_pause(idle);
		}
	}
	drain(wk);
	return NULL;
}

static void worker_free(struct file_be *fb, struct file_worker *wk)
{
	if (wk->ring_ok)
		io_uring_queue_exit(&wk->ring);
	wk->ring_ok = 0;
	if (!wk->leak) {
		if (fb->ctx->target == BAM_TARGET_GPU)
			bam_mem_free(fb->ctx, BAM_MEM_HOST_PINNED, wk->stage);
		else
			free(wk->stage);
		free(wk->prp);
	}
	wk->stage = NULL;
	wk->prp = NULL;
#ifdef BAM_HAVE_CUDA
	for (uint32_t k = 0; k < FILE_BATCHES; k++) {
		bam_gpu_event_free(wk->ev[k]);
		wk->ev[k] = NULL;
	}
	bam_gpu_stream_free(wk->cs);
#endif
	wk->cs = NULL;
	free(wk->slots);
	free(wk->free_slots);
	free(wk->pend);
	wk->slots = NULL;
	wk->free_slots = NULL;
	wk->pend = NULL;
}

static int worker_init(struct file_be *fb, struct file_worker *wk)
{
	uint32_t ns = fb->cfg.qd;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	/* completions need task work in this thread: run it when the thread enters
	 * the kernel instead of interrupting it, and have the kernel flag in the SQ
	 * ring when it is pending (reap() enters then) */
	p.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
	int rc = io_uring_queue_init_params(ns, &wk->ring, &p);
	if (rc == -EINVAL)
		rc = io_uring_queue_init(ns, &wk->ring, 0); /* kernel before 5.19 */
	if (rc)
		return rc;
	wk->ring_ok = 1;
	wk->nslots = ns;
	wk->slots = calloc(ns, sizeof(*wk->slots));
	wk->free_slots = calloc(ns, sizeof(uint32_t));
	wk->pend = calloc(ns, sizeof(uint32_t));
	wk->pend_head = wk->pend_tail = wk->b_head = wk->b_tail = 0;
#ifdef BAM_HAVE_CUDA
	if (fb->ctx->target == BAM_TARGET_GPU) {
		if (!(wk->cs = bam_gpu_stream_new()))
			return -ENOMEM;
		for (uint32_t k = 0; k < FILE_BATCHES; k++)
			if (!(wk->ev[k] = bam_gpu_event_new()))
				return -ENOMEM;
	}
#endif
	if (posix_memalign((void **)&wk->prp, 4096, (size_t)ns * FILE_PRP_PAGES * NVME_PAGE_SIZE))
		wk->prp = NULL;
	uint64_t stage_bytes = (uint64_t)ns * FILE_MAX_XFER;
	if (fb->ctx->target == BAM_TARGET_GPU) {
		/* pinned: the kernel reads and writes it (direct I/O too), the copy
		 * engine moves it to and from GPU memory */
		wk->stage = bam_mem_alloc(fb->ctx, BAM_MEM_HOST_PINNED, stage_bytes);
	} else if (posix_memalign((void **)&wk->stage, 4096, stage_bytes)) {
		/* untouched pages of it cost nothing: only bounced commands use it */
		wk->stage = NULL;
	}
	if (!wk->slots || !wk->free_slots || !wk->pend || !wk->prp || !wk->stage)
		return -ENOMEM;
	for (uint32_t i = 0; i < ns; i++) {
		wk->slots[i].stage = wk->stage + (uint64_t)i * FILE_MAX_XFER;
		wk->slots[i].prp = wk->prp + (size_t)i * FILE_PRP_PAGES * (NVME_PAGE_SIZE / 8);
		wk->free_slots[i] = ns - 1 - i;
	}
	wk->nfree = ns;
	return 0;
}

static void file_stop(void *priv);

static int file_start(void *priv)
{
	struct file_be *fb = priv;
	uint32_t per = fb->cfg.workers;
	for (uint32_t i = 0; i < fb->n; i++)
		if (fb->c[i].nvmet.nq && per > fb->c[i].nvmet.nq)
			per = fb->c[i].nvmet.nq;
	fb->w = calloc((size_t)fb->n * per, sizeof(*fb->w));
	if (!fb->w)
		return -ENOMEM;
	fb->n_w = fb->n * per;
	bam_store_release_sys_u32(&fb->stop, 0);
	int rc = 0;
	for (uint32_t i = 0; i < fb->n && !rc; i++) {
		for (uint32_t w = 0; w < per; w++) {
			struct file_worker *wk = &fb->w[i * per + w];
			wk->fb = fb;
			wk->fc = &fb->c[i];
			wk->w = w;
			wk->nw = per;
			uint32_t nq = fb->c[i].nvmet.nq;
			wk->nq_owned = nq > w ? (nq - 1 - w) / per + 1 : 0;
			if ((rc = worker_init(fb, wk))) {
				snprintf(fb->ctx->errmsg, sizeof(fb->ctx->errmsg), "file: %s: service thread setup: %s",
					 fb->c[i].path, strerror(-rc));
				break;
			}
			if (pthread_create(&wk->th, NULL, worker_main, wk)) {
				rc = -EAGAIN;
				break;
			}
			wk->started = 1;
		}
	}
	if (rc)
		file_stop(fb);
	return rc;
}

static void file_stop(void *priv)
{
	struct file_be *fb = priv;
	bam_store_release_sys_u32(&fb->stop, 1);
	if (!fb->w)
		return;
	for (uint32_t j = 0; j < fb->n_w; j++) {
		struct file_worker *wk = &fb->w[j];
		if (wk->started)
			pthread_join(wk->th, NULL);
		worker_free(fb, wk);
	}
	free(fb->w);
	fb->w = NULL;
	fb->n_w = 0;
}

/* ---- provisioning, statistics, close -------------------------------------------- */

static int file_media_rw(void *priv, uint32_t ci, uint64_t off, void *buf, uint64_t len, int write)
{
	struct file_be *fb = priv;
	struct file_ctrl *fc = &fb->c[ci];
	if (off > fc->ns_bytes || len > fc->ns_bytes - off)
		return -ERANGE;
	uint8_t *p = buf;
	while (len) {
		size_t chunk = len > (1u << 30) ? (1u << 30) : (size_t)len;
		ssize_t r = write ? pwrite(fc->fd_buf, p, chunk, (off_t)off) : pread(fc->fd_buf, p, chunk, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) /* ENOSPC, EROFS, ...: said as the I/O path's status would say it */
			return bam_file_errno_status(write ? NVME_CMD_WRITE : NVME_CMD_READ, errno) ==
					       NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_CAP_EXCEEDED)
				       ? -ENOSPC
				       : -EIO;
		if (r == 0)
			return -EIO; /* the end of the file inside the namespace: as io_done */
		p += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

static int file_stats(void *priv, uint32_t ci, struct bam_ctrl_stats *out)
{
	struct file_be *fb = priv;
	const struct nvmet_counters *k = &fb->c[ci].nvmet.cnt;
	out->cmds = bam_load_relaxed_u64(&k->cmds);
	out->reads = bam_load_relaxed_u64(&k->reads);
	out->writes = bam_load_relaxed_u64(&k->writes);
	out->flushes = bam_load_relaxed_u64(&k->flushes);
	out->bytes_read = bam_load_relaxed_u64(&k->bytes_read);
	out->bytes_written = bam_load_relaxed_u64(&k->bytes_written);
	out->errors = bam_load_relaxed_u64(&k->errors);
	out->injected = 0;
	return 0;
}

/* Diagnostics (bam_ctx_dump, e.g. after a timeout): the controller-side state of the
 * first queues and of the service threads. Read while they run: approximate. */
static void file_dump(void *priv, uint32_t ci, FILE *f)
{
	struct file_be *fb = priv;
	struct file_ctrl *fc = &fb->c[ci];
	const struct nvmet_ctrl *k = &fc->nvmet;
	fprintf(f, "file ctrl %u (%s): cmds=%llu reads=%llu writes=%llu flushes=%llu errors=%llu nq=%u direct=%d stop=%u\n",
		ci, fc->path, (unsigned long long)bam_load_relaxed_u64(&k->cnt.cmds),
		(unsigned long long)bam_load_relaxed_u64(&k->cnt.reads), (unsigned long long)bam_load_relaxed_u64(&k->cnt.writes),
		(unsigned long long)bam_load_relaxed_u64(&k->cnt.flushes), (unsigned long long)bam_load_relaxed_u64(&k->cnt.errors),
		k->nq, fc->direct, bam_load_relaxed_u32(&fb->stop));
	for (uint32_t q = 1; q <= k->nq && q <= 4; q++) {
		const struct nvmet_queue *e = &k->q[q];
		fprintf(f, "  file q %u: created=%u depth=%u sq_head=%u cq_tail=%u phase=%u db_tail=%u db_cqhead=%u in_service=%u\n",
			q, e->created, e->depth, bam_load_relaxed_u32(&e->sq_head), bam_load_relaxed_u32(&e->cq_tail),
			bam_load_relaxed_u32(&e->phase), bam_load_relaxed_u32(&k->db[2 * q]),
			bam_load_relaxed_u32(&k->db[2 * q + 1]), bam_load_relaxed_u32(&fc->qinfl[q]));
	}
	for (uint32_t j = 0; fb->w && j < fb->n_w; j++) {
		struct file_worker *wk = &fb->w[j];
		if (wk->fc == fc)
			fprintf(f, "  file worker %u: queues %u+%u*k, slots in use %u of %u\n", wk->w, 1 + wk->w, wk->nw,
				wk->nslots - bam_load_relaxed_u32(&wk->nfree), wk->nslots);
	}
}

static const char *file_desc(void *priv)
{
	return ((struct file_be *)priv)->desc;
}

static void file_close(void *priv)
{
	struct file_be *fb = priv;
	if (!fb)
		return;
	file_stop(fb);
	for (uint32_t i = 0; fb->c && i < fb->n; i++) {
		struct file_ctrl *fc = &fb->c[i];
		if (fc->fd >= 0 && fc->fd != fc->fd_buf)
			close(fc->fd);
		if (fc->fd_buf >= 0)
			close(fc->fd_buf);
		free(fc->nvmet.q);
		free(fc->qinfl);
		bam_mem_free(fb->ctx, BAM_MEM_HOST_PINNED, fc->nvmet.db);
	}
	for (uint32_t i = 0; i < fb->cfg.n_paths; i++)
		free(fb->cfg.paths[i]);
	free(fb->c);
	free(fb);
}

/* in the table of built-in back ends (backend.cmake) */
const struct bam_backend_ops bam_file_ops = {
	.name = "file",
	.queue_mem = BAM_MEM_HOST_PINNED,
	.open = file_open,
	.check = file_check,
	.media = file_media,
	.info = file_info,
	.admin = file_admin,
	.doorbell = file_doorbell,
	.start = file_start,
	.stop = file_stop,
	.media_rw = file_media_rw,
	.stats = file_stats,
	.dump = file_dump,
	.desc = file_desc,
	.close = file_close,
};

