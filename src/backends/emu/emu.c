/* SPDX-License-Identifier: MIT */
/*
 * The "emu" back end: emulated NVMe controllers (the embedded default). Admin commands
 * run synchronously on the host; I/O queues are served by host threads on the CPU
 * target and by GPU-resident workers on the GPU target (emu_gpu.cu), both executing
 * emu_core.h. Back-end string keys: docs/BACKENDS.md.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bam/cache.h" /* bam_mem_available */
#include "../../core/ctx_internal.h"
#include "emu.h"

struct emu_cfg {
	const struct bam_emu_profile *profile;
	uint32_t count;
	uint64_t size;       /* bytes per controller */
	uint32_t lba;        /* LBA size */
	int media_file;
	int media_gpu;       /* media=gpu: the namespace in GPU memory (GPU target only) */
	int media_set;       /* media= given (path= then only with media=file) */
	char path[1024];
	uint32_t workers;
	uint32_t poll_ns;    /* poll_ns=: the GPU workers' longest idle pause */
	int poll_set;
	int size_given;      /* size= was in the string (else the default, or the file's) */
	struct emu_faults f;
	char bad[200];
};

struct emu_host_ctrl {
	struct emu_ctrl h;        /* host mirror (admin state, config) */
	struct emu_ctrl *d;       /* the copy the workers use (== &h on the CPU target) */
	struct nvmet_queue *qh;   /* host mirror of the queue table */
	uint8_t *media;
	uint64_t media_bytes;
	int media_mmapped;        /* 1 = mmap (file or anonymous), 0 = bam_mem_alloc */
	int fd;
	char *created;            /* media=file: the path, if this open created the file */
	dev_t media_dev;          /* media=file: the file (no two controllers on one) */
	ino_t media_ino;
	void *dev_q, *dev_db;     /* GPU allocations */
};

struct emu_worker;
struct emu {
	struct bam_ctx *ctx;
	struct emu_cfg cfg;
	uint32_t n;
	struct emu_host_ctrl *c;
	uint32_t *stop;           /* host word (pinned + mapped on the GPU target) */
	pthread_t *threads;
	struct emu_worker *workers;
	uint32_t n_threads;
	void *gpu;                /* GPU worker handle */
	char desc[1200];
};

/* ---- option parsing ------------------------------------------------------------ */

/* A number written with digits only (or 0x and hex digits), no sign, no spaces,
 * no overflow, at most max. 0 or -EINVAL. */
static int parse_u64(const char *v, uint64_t max, uint64_t *out)
{
	const int hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
	const char *d = hex ? v + 2 : v;
	if (!isxdigit((unsigned char)d[0]) || (!hex && !isdigit((unsigned char)d[0])))
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, hex ? 16 : 10);
	if (errno || *end || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

/* A probability 0..1 as a decimal (no blanks, as for every number: docs/BACKENDS.md;
 * strtod would skip leading ones). */
static int parse_rate(const char *v, uint32_t *ppm)
{
	if (!isdigit((unsigned char)v[0]) && v[0] != '.')
		return -EINVAL;
	char *end;
	double d = strtod(v, &end);
	if (end == v || *end || !(d >= 0 && d <= 1)) /* NaN fails both */
		return -EINVAL;
	*ppm = (uint32_t)(d * 1e6 + 0.5);
	return 0;
}

/* What a known key takes, for the message that refuses a value (docs/BACKENDS.md). */
static const char *emu_key_values(const char *k)
{
	static const char *const kv[][2] = {
		{"count", "controllers, 1 to 32"},
		{"size", "bytes above 0 with an optional K, M, G or T suffix, a multiple of lba"},
		{"lba", "512 or 4096"},
		{"media", "dram, gpu or file"},
		{"workers", "1 to 1024"},
		{"poll_ns", "nanoseconds, 0 to 1000000"},
		{"err_lba", "START-END, LBAs, END above START"},
		{"err_rate", "a fraction, 0 to 1"},
		{"delay_rate", "a fraction, 0 to 1"},
		{"drop_rate", "a fraction, 0 to 1"},
		{"delay_us", "microseconds, at most 3600000000"},
		{"stop_after", "commands, above 0"},
		{"seed", "an unsigned 64-bit integer"},
	};
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		if (!strcmp(k, kv[i][0]))
			return kv[i][1];
	return "see docs/BACKENDS.md";
}

static int emu_kv(void *arg, const char *k, const char *v)
{
	struct emu_cfg *c = arg;
	int rc = 0;
	if (!strcmp(k, "profile")) {
		c->profile = bam_emu_profile_find(v);
		if (!c->profile)
			snprintf(c->bad, sizeof(c->bad), "unknown profile '%s' (known: %s)", v, bam_emu_profile_names());
		return c->profile ? 0 : -EINVAL;
	} else if (!strcmp(k, "count")) {
		uint64_t n = 0;
		rc = parse_u64(v, BAM_MAX_CTRLS, &n);
		if (!rc && n < 1)
			rc = -EINVAL;
		c->count = (uint32_t)n;
	} else if (!strcmp(k, "size")) {
		rc = bam_parse_size(v, &c->size);
		if (!rc && c->size == 0)
			rc = -EINVAL;
	} else if (!strcmp(k, "lba")) {
		uint64_t n = 0;
		rc = parse_u64(v, 4096, &n);
		if (!rc && n != 512 && n != 4096)
			rc = -EINVAL;
		c->lba = (uint32_t)n;
	} else if (!strcmp(k, "media")) {
		c->media_set = 1;
		c->media_gpu = !strcmp(v, "gpu");
		if (!strcmp(v, "dram") || c->media_gpu)
			c->media_file = 0;
		else if (!strcmp(v, "file"))
			c->media_file = 1;
		else
			rc = -EINVAL;
	} else if (!strcmp(k, "path")) {
		if (!*v || strlen(v) >= sizeof(c->path) - 8) { /* room for ".N" */
			if (*v)
				snprintf(c->bad, sizeof(c->bad), "path= is %zu bytes long, at most %zu here", strlen(v),
					 sizeof(c->path) - 9);
			else
				snprintf(c->bad, sizeof(c->bad), "path= names no file");
			return -EINVAL;
		}
		snprintf(c->path, sizeof(c->path), "%s", v);
	} else if (!strcmp(k, "workers")) {
		uint64_t n = 0;
		rc = parse_u64(v, 1024, &n);
		if (!rc && n < 1)
			rc = -EINVAL;
		c->workers = (uint32_t)n;
	} else if (!strcmp(k, "poll_ns")) {
		uint64_t n = 0;
		rc = parse_u64(v, 1000000, &n);
		c->poll_ns = (uint32_t)n;
		c->poll_set = 1;
	} else if (!strcmp(k, "err_lba")) {
		/* START-END (end exclusive) */
		char a_s[32];
		const char *dash = strchr(v, '-');
		uint64_t a = 0, b = 0;
		if (!dash || (size_t)(dash - v) >= sizeof(a_s)) {
			rc = -EINVAL;
		} else {
			memcpy(a_s, v, (size_t)(dash - v));
			a_s[dash - v] = 0;
			rc = parse_u64(a_s, UINT64_MAX, &a) || parse_u64(dash + 1, UINT64_MAX, &b) || b <= a ? -EINVAL : 0;
			c->f.err_slba = a;
			c->f.err_elba = b;
		}
	} else if (!strcmp(k, "err_rate")) {
		rc = parse_rate(v, &c->f.err_rate_ppm);
	} else if (!strcmp(k, "delay_rate")) {
		rc = parse_rate(v, &c->f.delay_rate_ppm);
	} else if (!strcmp(k, "delay_us")) {
		uint64_t n = 0;
		rc = parse_u64(v, 3600000000ull, &n); /* at most an hour */
		c->f.delay_ns = n * 1000ull;
	} else if (!strcmp(k, "drop_rate")) {
		rc = parse_rate(v, &c->f.drop_rate_ppm);
	} else if (!strcmp(k, "stop_after")) {
		uint64_t n = 0;
		rc = parse_u64(v, UINT64_MAX, &n);
		if (!rc && n == 0)
			rc = -EINVAL;
		c->f.stop_after = n;
	} else if (!strcmp(k, "seed")) {
		rc = parse_u64(v, UINT64_MAX, &c->f.seed);
	} else {
		snprintf(c->bad, sizeof(c->bad), "unknown key '%s' (keys: profile, count, size, lba, media, path, workers, poll_ns, err_lba, err_rate, delay_rate, delay_us, drop_rate, stop_after, seed)", k);
		return -EINVAL;
	}
	if (rc && !c->bad[0])
		snprintf(c->bad, sizeof(c->bad), "bad value '%s' for key '%s' (%s)", v, k, emu_key_values(k));
	return rc;
}

/* ---- media --------------------------------------------------------------------- */

/* Controller i's media file of n: path=P itself, or P.i with more than one controller
 * (media_open opens it, emu_media lists it). */
static void media_path(const struct emu_cfg *cfg, uint32_t n, uint32_t i, char *path, size_t len)
{
	if (n > 1)
		snprintf(path, len, "%s.%u", cfg->path, i);
	else
		snprintf(path, len, "%s", cfg->path);
}

static int media_open(struct emu *e, uint32_t i, char *err, size_t errlen)
{
	struct emu_host_ctrl *hc = &e->c[i];
	uint64_t bytes = e->cfg.size;
	hc->fd = -1;
	if (e->cfg.media_file) {
		char path[1040];
		media_path(&e->cfg, e->n, i, path, sizeof(path));
		/* created only when size= says how large: a missing file without it is an
		 * error that leaves nothing behind; a file this open created is removed
		 * again if the open fails (media_forget). O_NONBLOCK, O_NOCTTY: a FIFO or a
		 * device named here is refused below, and opening it must neither wait
		 * nor take a terminal; the flag changes nothing for a regular file, which
		 * is only sized and mapped */
		const int oflags = O_RDWR | O_NONBLOCK | O_NOCTTY;
		/* the errno said is the open's that failed last: the create's when the
		 * file was not there (EROFS, ENOSPC, ...), else the plain open's */
		int creating = e->cfg.size != 0, er = 0;
		hc->fd = creating ? open(path, oflags | O_CREAT | O_EXCL, 0644) : -1;
		if (hc->fd >= 0) {
			hc->created = strdup(path);
		} else if (!creating || errno == EEXIST) {
			creating = 0;
			hc->fd = open(path, oflags);
		}
		if (hc->fd < 0)
			er = errno;
		if (hc->fd < 0 && er == EISDIR) { /* a bad setting, as for the file back end */
			snprintf(err, errlen, "emu: media file %s is a directory", path);
			return -EINVAL;
		}
		if (hc->fd < 0) {
			char hint[1024];
			bam_media_open_hint(path, er, creating, hint, sizeof(hint));
			snprintf(err, errlen, "emu: media file %s: %s%s%s", path, creating ? "cannot create it: " : "",
				 strerror(er), hint);
			return -er;
		}
		struct stat st;
		if (fstat(hc->fd, &st)) {
			int rc = -errno;
			snprintf(err, errlen, "emu: media file %s: fstat: %s", path, strerror(errno));
			return rc;
		}
		/* mapped, sized and allocated: only a regular file does all three (a
		 * character device such as /dev/null would take the writes and lose them) */
		if (!S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "emu: media file %s is %s: give a regular file%s", path,
				 bam_file_kind(st.st_mode),
				 S_ISBLK(st.st_mode) ? " (the file back end takes block devices)" : "");
			return -EINVAL;
		}
		/* each controller's media a file of its own: two names of one file (a hard
		 * link) would overwrite each other's lines */
		hc->media_dev = st.st_dev;
		hc->media_ino = st.st_ino;
		for (uint32_t j = 0; j < i; j++)
			if (e->c[j].fd >= 0 && e->c[j].media_dev == st.st_dev && e->c[j].media_ino == st.st_ino) {
				snprintf(err, errlen, "emu: media files %s.%u and %s are the same file (hard links): give each controller its own",
					 e->cfg.path, j, path);
				return -EINVAL;
			}
		/* one user at a time: a second process (or a second context) mapping the
		 * same media file would overwrite this one's lines */
		int lrc = bam_media_lock(hc->fd, 1, "emu: media file", path, err, errlen);
		if (lrc)
			return lrc;
		if (!e->cfg.size)
			bytes = (uint64_t)st.st_size;
		bytes -= bytes % e->cfg.lba;
		if (bytes == 0) {
			snprintf(err, errlen, "emu: media file %s holds %llu bytes, less than one %u-byte LBA: give size=",
				 path, (unsigned long long)st.st_size, e->cfg.lba);
			return -EINVAL;
		}
		if ((uint64_t)st.st_size < bytes && ftruncate(hc->fd, (off_t)bytes)) {
			int rc = -errno;
			snprintf(err, errlen, "emu: cannot size %s to %llu bytes: %s", path, (unsigned long long)bytes, strerror(errno));
			return rc;
		}
		/* Blocks for the whole namespace now: writes through the mapping to a sparse
		 * file the file system cannot back end in SIGBUS, not in an error. A file
		 * this open lengthened goes back to its size if that fails. */
		int fr = posix_fallocate(hc->fd, 0, (off_t)bytes);
		if (fr) {
			const int restored = (uint64_t)st.st_size >= bytes || ftruncate(hc->fd, st.st_size) == 0;
			snprintf(err, errlen, "emu: cannot allocate %llu bytes for media file %s: %s%s", (unsigned long long)bytes,
				 path, strerror(fr), restored ? "" : " (and its old size could not be restored)");
			return -fr;
		}
		hc->media = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, hc->fd, 0);
		if (hc->media == MAP_FAILED) {
			hc->media = NULL;
			snprintf(err, errlen, "emu: mmap %s: %s", path, strerror(errno));
			return -ENOMEM;
		}
		hc->media_bytes = bytes;
		hc->media_mmapped = 1;
	} else if (e->ctx->target == BAM_TARGET_CPU) {
		/* anonymous mapping: untouched blocks cost no memory and read as zeros */
		hc->media = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (hc->media == MAP_FAILED) {
			hc->media = NULL;
			snprintf(err, errlen, "emu: cannot map %llu bytes of media", (unsigned long long)bytes);
			return -ENOMEM;
		}
		hc->media_mmapped = 1;
	} else {
		const enum bam_mem_kind kind = e->cfg.media_gpu ? BAM_MEM_DEVICE : BAM_MEM_HOST_PINNED;
		hc->media = bam_mem_alloc(e->ctx, kind, bytes);
		if (!hc->media) {
			snprintf(err, errlen, "emu: cannot %s %llu bytes of %s memory for media", e->cfg.media_gpu ? "allocate" : "pin",
				 (unsigned long long)bytes, e->cfg.media_gpu ? "GPU" : "host");
			return -ENOMEM;
		}
	}
#ifdef BAM_HAVE_CUDA
	if (hc->media_mmapped && e->ctx->target == BAM_TARGET_GPU) {
		extern int bam_gpu_host_register(void *p, uint64_t bytes);
		if (bam_gpu_host_register(hc->media, bytes)) {
			snprintf(err, errlen, "emu: cannot register file media with the GPU");
			return -EIO;
		}
	}
#endif
	hc->media_bytes = bytes;
	return 0;
}

static void media_close(struct emu *e, struct emu_host_ctrl *hc)
{
	free(hc->created);
	hc->created = NULL;
	if (!hc->media) {
		if (hc->fd >= 0) /* opened, not mapped: media_open failed */
			close(hc->fd);
		hc->fd = -1;
		return;
	}
	if (hc->media_mmapped) {
#ifdef BAM_HAVE_CUDA
		if (e->ctx->target == BAM_TARGET_GPU) {
			extern void bam_gpu_host_unregister(void *p);
			bam_gpu_host_unregister(hc->media);
		}
#endif
		if (hc->fd >= 0)
			msync(hc->media, hc->media_bytes, MS_SYNC);
		munmap(hc->media, hc->media_bytes);
	} else {
		bam_mem_free(e->ctx, e->cfg.media_gpu ? BAM_MEM_DEVICE : BAM_MEM_HOST_PINNED, hc->media);
	}
	if (hc->fd >= 0)
		close(hc->fd);
	hc->media = NULL;
}

/* ---- ops ----------------------------------------------------------------------- */

static void emu_close(void *priv);

/* emu_open failed with controllers [0, e->n) set up or partly set up: remove the media
 * files this open created (nothing of them was in use yet), then free everything */
static void emu_open_fail(struct emu *e)
{
	for (uint32_t i = 0; i < e->n; i++)
		if (e->c[i].created)
			unlink(e->c[i].created);
	emu_close(e);
}

/* The options in 'args' into *cfg (defaults first), with the checks that need nothing
 * opened: 0, or the error with its message in err. */
static int emu_cfg_parse(const char *args, struct emu_cfg *cfg, char *err, size_t errlen)
{
	cfg->profile = bam_emu_profile_find("unlimited");
	cfg->count = 1;
	cfg->lba = 512;
	cfg->f.seed = 1;
	int rc = bam_kv_parse(args, emu_kv, cfg);
	if (rc) {
		snprintf(err, errlen, "emu: %s", cfg->bad[0] ? cfg->bad : "malformed options");
		return rc;
	}
	if (cfg->path[0] && cfg->media_set && !cfg->media_file) {
		snprintf(err, errlen, "emu: path= names a media file: it goes with media=file, not media=%s",
			 cfg->media_gpu ? "gpu" : "dram");
		return -EINVAL;
	}
	if (cfg->path[0])
		cfg->media_file = 1; /* path= implies media=file */
	if (cfg->media_file && !cfg->path[0]) {
		snprintf(err, errlen, "emu: media=file needs path=FILE");
		return -EINVAL;
	}
	cfg->size_given = cfg->size != 0;
	if (!cfg->size && !cfg->media_file)
		cfg->size = 1ull << 30;
	if (cfg->size % cfg->lba) {
		snprintf(err, errlen, "emu: size %llu is not a multiple of the LBA size %u",
			 (unsigned long long)cfg->size, cfg->lba);
		return -EINVAL;
	}
	return 0;
}

static int emu_check(const char *args, char *err, size_t errlen)
{
	struct emu_cfg cfg;
	memset(&cfg, 0, sizeof(cfg));
	return emu_cfg_parse(args, &cfg, err, errlen);
}

/* media=file: path=P, or P.0 .. P.(count-1) with more than one controller (media_open) */
static int emu_media(const char *args, int (*cb)(void *arg, const char *path), void *arg, char *err, size_t errlen)
{
	struct emu_cfg cfg;
	memset(&cfg, 0, sizeof(cfg));
	int rc = emu_cfg_parse(args, &cfg, err, errlen);
	for (uint32_t i = 0; !rc && cfg.media_file && i < cfg.count; i++) {
		char path[1040];
		media_path(&cfg, cfg.count, i, path, sizeof(path));
		rc = cb(arg, path);
	}
	return rc;
}

static int emu_info(const char *args, struct bam_backend_info *out, char *err, size_t errlen)
{
	struct emu_cfg cfg;
	memset(&cfg, 0, sizeof(cfg));
	int rc = emu_cfg_parse(args, &cfg, err, errlen);
	if (rc)
		return rc;
	out->n_ctrl = cfg.count;
	out->size = cfg.size_given ? cfg.size : 0;
	out->lba_size = cfg.lba;
	out->flags = cfg.media_file ? BAM_BACKEND_F_MEDIA_MAPPED
				    : BAM_BACKEND_F_MEDIA_MEMORY | (cfg.media_gpu ? BAM_BACKEND_F_MEDIA_GPU : 0);
	if (!cfg.size_given && !cfg.media_file)
		out->flags |= BAM_BACKEND_F_SIZABLE;
	return 0;
}

static int emu_open(struct bam_ctx *ctx, const char *args, void **priv, uint32_t *n_ctrl, char *err, size_t errlen)
{
	struct emu *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->ctx = ctx;
	int rc = emu_cfg_parse(args, &e->cfg, err, errlen);
	if (rc) {
		free(e);
		return rc;
	}
	if (e->cfg.media_gpu && ctx->target != BAM_TARGET_GPU) {
		snprintf(err, errlen, "emu: media=gpu puts the namespace in GPU memory: it needs the GPU target "
			 "(this context is on the CPU target; use media=dram)");
		free(e);
		return -EINVAL;
	}
	if (!e->cfg.media_file) {
		/* media in memory, refused up front when it cannot fit: GPU media in device
		 * memory, DRAM media in host memory (pinned and zeroed on the GPU target;
		 * mapped lazily on the CPU target, but a run that writes it all would end with
		 * the OOM killer) */
		const int gpu = e->cfg.media_gpu;
		uint64_t avail = 0, total = e->cfg.size * e->cfg.count;
		if (!bam_mem_available(ctx->target, gpu ? BAM_MEM_DEVICE : BAM_MEM_HOST_PINNED, &avail) &&
		    (total / e->cfg.count != e->cfg.size || total > avail)) {
			snprintf(err, errlen, "emu: %u x %llu bytes of %s media (%.1f GiB) do not fit in the %.1f GiB of %s: %s",
				 e->cfg.count, (unsigned long long)e->cfg.size, gpu ? "GPU" : "DRAM",
				 (double)e->cfg.size * e->cfg.count / (double)(1ull << 30), (double)avail / (double)(1ull << 30),
				 gpu ? "GPU memory free" : "host memory available",
				 gpu ? "use a smaller namespace (size=; bam bench sets it from --size) or media=dram"
				     : "use a smaller namespace (size=; bam bench sets it from --size), or media=file,path=FILE");
			free(e);
			return -ENOMEM;
		}
	}
	if (ctx->opts.qpairs > EMU_MAX_QUEUES) {
		snprintf(err, errlen, "emu: %u queue pairs: at most %u", ctx->opts.qpairs, EMU_MAX_QUEUES);
		free(e);
		return -EINVAL;
	}
	if (!e->cfg.workers)
		e->cfg.workers = ctx->opts.ctrl_workers;
	e->n = e->cfg.count;
	e->c = calloc(e->n, sizeof(*e->c));
	e->stop = bam_mem_alloc(ctx, BAM_MEM_HOST_PINNED, 4096);
	if (!e->c || !e->stop) {
		bam_mem_free(ctx, BAM_MEM_HOST_PINNED, e->stop); /* NULL: nothing */
		free(e->c);
		free(e);
		return -ENOMEM;
	}
	*priv = e;
	for (uint32_t i = 0; i < e->n; i++) {
		struct emu_host_ctrl *hc = &e->c[i];
		if ((rc = media_open(e, i, err, errlen))) {
			e->n = i + 1;
			emu_open_fail(e);
			*priv = NULL;
			return rc;
		}
		struct emu_ctrl *h = &hc->h;
		h->media = hc->media;
		h->nvmet.lba_shift = e->cfg.lba == 4096 ? 12 : 9;
		h->nvmet.nlba = hc->media_bytes >> h->nvmet.lba_shift;
		h->nvmet.index = i;
		bam_emu_profile_timing(e->cfg.profile, &h->t);
		h->f = e->cfg.f;
		h->poll_ns = e->cfg.poll_set ? e->cfg.poll_ns : EMU_POLL_NS;
		h->f.seed = emu_mix64(e->cfg.f.seed + i);
		hc->qh = calloc(EMU_MAX_QUEUES + 1, sizeof(struct nvmet_queue));
		if (!hc->qh) {
			e->n = i + 1;
			emu_open_fail(e);
			*priv = NULL;
			return -ENOMEM;
		}
		h->nvmet.q = hc->qh;
		h->nvmet.db = calloc(2 * (EMU_MAX_QUEUES + 1), sizeof(uint32_t));
		if (ctx->target == BAM_TARGET_GPU) {
			/* doorbells and queue table in GPU memory, where the workers poll */
			hc->dev_db = bam_mem_alloc(ctx, BAM_MEM_DEVICE, 2 * (EMU_MAX_QUEUES + 1) * sizeof(uint32_t));
			hc->dev_q = bam_mem_alloc(ctx, BAM_MEM_DEVICE, (EMU_MAX_QUEUES + 1) * sizeof(struct nvmet_queue));
			hc->d = bam_mem_alloc(ctx, BAM_MEM_DEVICE, sizeof(struct emu_ctrl));
			if (!hc->dev_db || !hc->dev_q || !hc->d || !h->nvmet.db) {
				e->n = i + 1;
				emu_open_fail(e);
				*priv = NULL;
				return -ENOMEM;
			}
		} else if (!h->nvmet.db) {
			e->n = i + 1;
			emu_open_fail(e);
			*priv = NULL;
			return -ENOMEM;
		} else {
			hc->d = h;
		}
	}
	snprintf(e->desc, sizeof(e->desc), "emu:profile=%s,count=%u,size=%llu,lba=%u,media=%s%s%s", e->cfg.profile->name,
		 e->n, (unsigned long long)e->c[0].media_bytes, e->cfg.lba, e->cfg.media_file ? "file,path=" : e->cfg.media_gpu ? "gpu" : "dram",
		 e->cfg.media_file ? e->cfg.path : "",
		 (e->cfg.f.err_elba || e->cfg.f.err_rate_ppm || e->cfg.f.delay_rate_ppm || e->cfg.f.drop_rate_ppm || e->cfg.f.stop_after) ? ",inject" : "");
	*n_ctrl = e->n;
	return 0;
}

static int emu_admin(void *priv, uint32_t ci, const struct nvme_sqe *s, void *data, struct nvme_cqe *cqe)
{
	struct emu *e = priv;
	struct emu_host_ctrl *hc = &e->c[ci];
	char sn[21];
	snprintf(sn, sizeof(sn), "BAMEMU%04u", ci);
	memset(cqe, 0, sizeof(*cqe));
	cqe->cid = s->cid;
	cqe->status = nvmet_admin_exec(&hc->h.nvmet, EMU_MAX_QUEUES, EMU_MDTS, sn, e->cfg.profile->model, s, data);
	return 0;
}

static uint32_t *emu_doorbell(void *priv, uint32_t ci, uint32_t qid, int cq)
{
	struct emu *e = priv;
	struct emu_host_ctrl *hc = &e->c[ci];
	uint32_t *db = e->ctx->target == BAM_TARGET_GPU ? hc->dev_db : hc->h.nvmet.db;
	return &db[2 * qid + (cq ? 1 : 0)];
}

/* ---- CPU-target workers ---------------------------------------------------------- */

struct emu_worker {
	struct emu *e;
	uint32_t ctrl, w, nw;
};

/* A command executed but not yet completed: its CQE waits for the profile's time. */
struct emu_pending {
	uint64_t ready;   /* completion time (bam_time_ns), 0 = now */
	uint32_t qid;
	uint16_t cid, status;
	uint32_t drop;
};
#define EMU_HOST_PENDING 256 /* commands in flight per host worker */

/* Execute one fetched SQE on the host: validate, inject faults, move the data, count.
 * Returns the completion to post (now or later). */
static struct emu_pending emu_exec_host(struct emu_ctrl *c, struct nvmet_queue *q, uint32_t qid,
					const struct nvme_sqe *s)
{
	uint32_t bytes = 0;
	int drop = 0;
	uint64_t extra = 0;
	uint64_t now = bam_time_ns();
	uint64_t id = bam_fetch_add_relaxed_gpu_u64(&c->nvmet.cnt.cmds, 0) ^ ((uint64_t)q->sqid << 40) ^ ((uint64_t)q->sq_head << 20) ^ s->cid;
	uint16_t st = nvmet_validate(&c->nvmet, s, &bytes);
	if (!st)
		st = emu_inject(c, s, id, &drop, &extra);
	if (!st && bytes) {
		struct nvmet_prp_iter it;
		uint64_t addr, off = nvme_sqe_slba(s) << c->nvmet.lba_shift;
		uint32_t len;
		int r;
		nvmet_prp_begin(&it, s, bytes);
		while ((r = nvmet_prp_next(&it, &addr, &len)) > 0) {
			void *p = (void *)(uintptr_t)addr;
			if (s->opc == NVME_CMD_READ)
				memcpy(p, c->media + off, len);
			else
				memcpy(c->media + off, p, len);
			off += len;
		}
		if (r < 0)
			st = (uint16_t)-r;
	}
	nvmet_count(&c->nvmet, s, bytes, st);
	struct emu_pending pd = {0, qid, s->cid, st, (uint32_t)drop};
	pd.ready = st ? 0 : emu_ready_time(c, s->opc == NVME_CMD_WRITE, bytes, now);
	if (extra)
		pd.ready = (pd.ready ? pd.ready : now) + extra;
	return pd;
}

/* Post the completions whose time has come (and whose CQ has room). Returns how many
 * are still pending. */
static uint32_t emu_post_ready(struct emu_ctrl *c, struct emu_pending *pend, uint32_t n, uint64_t *next)
{
	uint64_t now = bam_time_ns();
	uint32_t k = 0;
	*next = UINT64_MAX;
	for (uint32_t i = 0; i < n; i++) {
		struct emu_pending *pd = &pend[i];
		struct nvmet_queue *q = &c->nvmet.q[pd->qid];
		if (pd->drop)
			continue; /* fault: this completion is never posted */
		if (pd->ready <= now && !nvmet_cq_full(&c->nvmet, q, pd->qid)) {
			nvmet_post_cqe(q, pd->cid, pd->status);
			continue;
		}
		if (pd->ready < *next)
			*next = pd->ready;
		pend[k++] = *pd;
	}
	return k;
}

/* modelled in models/qpair.pml: proctype Controller (the model posts each completion
 * right after fetching it; here a worker keeps up to EMU_HOST_PENDING commands in
 * flight so that the profile's latency overlaps, and posts each at its time) */
static void *emu_worker_main(void *arg)
{
	struct emu_worker *wk = arg;
	struct emu *e = wk->e;
	struct emu_ctrl *c = &e->c[wk->ctrl].h;
	struct emu_pending *pend = calloc(EMU_HOST_PENDING, sizeof(*pend));
	uint32_t npend = 0, idle = 0;
	if (!pend)
		return NULL;
	while (!bam_load_acquire_gpu_u32(e->stop)) {
		int busy = 0;
		uint64_t next = UINT64_MAX;
		if (npend) {
			uint32_t before = npend;
			npend = emu_post_ready(c, pend, npend, &next);
			busy = npend != before;
		}
		for (uint32_t qid = 1 + wk->w; qid <= c->nvmet.nq && npend < EMU_HOST_PENDING; qid += wk->nw) {
			struct nvmet_queue *q = &c->nvmet.q[qid];
			if (!q->created)
				continue;
			/* doorbell value written by the submitters (release): SQEs before it */
			uint32_t tail = bam_load_acquire_sys_u32(&c->nvmet.db[2 * qid]);
			if (tail >= q->depth)
				continue; /* invalid doorbell write: ignored (Base 4.1: an error) */
			while (q->sq_head != tail && npend < EMU_HOST_PENDING) {
				if (c->f.stop_after && bam_load_relaxed_u64(&c->nvmet.cnt.cmds) >= c->f.stop_after)
					break; /* fault: the controller stopped answering */
				struct nvme_sqe sqe = q->sq[q->sq_head];
				q->sq_head = q->sq_head + 1 == q->depth ? 0 : q->sq_head + 1;
				struct emu_pending pd = emu_exec_host(c, q, qid, &sqe);
				if (!pd.drop && pd.ready == 0 && !nvmet_cq_full(&c->nvmet, q, qid))
					nvmet_post_cqe(q, pd.cid, pd.status); /* no timing: complete now */
				else
					pend[npend++] = pd;
				busy = 1;
			}
		}
		if (busy) {
			idle = 0;
		} else if (npend && next != UINT64_MAX && next > bam_time_ns() + 50000) {
			usleep(20); /* the next completion is far: let the submitters run */
		} else if (npend) {
			bam_spin_pause(idle++ & 15);
		} else if (++idle > 64) {
			usleep(idle > 4096 ? 200 : 20); /* idle controller: do not burn a core */
		} else {
			bam_spin_pause(idle);
		}
	}
	free(pend);
	return NULL;
}

static int emu_start(void *priv)
{
	struct emu *e = priv;
	*e->stop = 0;
	if (e->ctx->target == BAM_TARGET_GPU) {
#ifdef BAM_HAVE_CUDA
		struct emu_ctrl *dctrls[BAM_MAX_CTRLS];
		uint32_t nq[BAM_MAX_CTRLS];
		for (uint32_t i = 0; i < e->n; i++) {
			struct emu_host_ctrl *hc = &e->c[i];
			struct emu_ctrl tmp = hc->h;
			tmp.nvmet.q = hc->dev_q;
			tmp.nvmet.db = hc->dev_db;
			if (bam_mem_copy(e->ctx, hc->dev_q, hc->qh, (EMU_MAX_QUEUES + 1) * sizeof(struct nvmet_queue)) ||
			    bam_mem_copy(e->ctx, hc->d, &tmp, sizeof(tmp)))
				return -EIO;
			dctrls[i] = hc->d;
			nq[i] = hc->h.nvmet.nq;
		}
		uint32_t w = e->cfg.workers ? e->cfg.workers : 0;
		char err[256];
		int rc = bam_emu_gpu_start(dctrls, e->n, nq, w, &e->gpu, err, sizeof(err));
		if (rc)
			snprintf(e->ctx->errmsg, sizeof(e->ctx->errmsg), "%s", err);
		return rc;
#else
		return -ENODEV;
#endif
	}
	uint32_t per = e->cfg.workers ? e->cfg.workers : 2;
	for (uint32_t i = 0; i < e->n; i++)
		if (e->c[i].h.nvmet.nq && per > e->c[i].h.nvmet.nq)
			per = e->c[i].h.nvmet.nq;
	e->threads = calloc((size_t)e->n * per, sizeof(pthread_t));
	e->workers = calloc((size_t)e->n * per, sizeof(*e->workers));
	if (!e->threads || !e->workers)
		return -ENOMEM;
	for (uint32_t i = 0; i < e->n; i++)
		for (uint32_t w = 0; w < per; w++) {
			struct emu_worker *k = &e->workers[i * per + w];
			k->e = e;
			k->ctrl = i;
			k->w = w;
			k->nw = per;
			if (pthread_create(&e->threads[e->n_threads], NULL, emu_worker_main, k)) {
				bam_store_release_sys_u32(e->stop, 1);
				for (uint32_t j = 0; j < e->n_threads; j++)
					pthread_join(e->threads[j], NULL);
				e->n_threads = 0;
				return -EAGAIN;
			}
			e->n_threads++;
		}
	return 0;
}

static void emu_stop(void *priv)
{
	struct emu *e = priv;
	bam_store_release_sys_u32(e->stop, 1);
#ifdef BAM_HAVE_CUDA
	if (e->gpu) {
		bam_emu_gpu_stop(e->gpu);
		e->gpu = NULL;
		/* fetch the counters the GPU workers kept */
		for (uint32_t i = 0; i < e->n; i++) {
			struct emu_ctrl tmp;
			if (!bam_mem_copy(e->ctx, &tmp, e->c[i].d, sizeof(tmp)))
				e->c[i].h.nvmet.cnt = tmp.nvmet.cnt;
		}
	}
#endif
	if (e->threads) {
		for (uint32_t j = 0; j < e->n_threads; j++)
			pthread_join(e->threads[j], NULL);
		free(e->workers);
		e->workers = NULL;
		free(e->threads);
		e->threads = NULL;
		e->n_threads = 0;
	}
}

static int emu_media_rw(void *priv, uint32_t ci, uint64_t off, void *buf, uint64_t len, int write)
{
	struct emu *e = priv;
	struct emu_host_ctrl *hc = &e->c[ci];
	if (off > hc->media_bytes || len > hc->media_bytes - off)
		return -ERANGE;
#ifdef BAM_HAVE_CUDA
	if (e->cfg.media_gpu) { /* only ever set on the GPU target */
		return write ? bam_gpu_copy(hc->media + off, buf, len) : bam_gpu_copy(buf, hc->media + off, len);
	}
#endif
	if (write)
		memcpy(hc->media + off, buf, len);
	else
		memcpy(buf, hc->media + off, len);
	return 0;
}

static int emu_stats(void *priv, uint32_t ci, struct bam_ctrl_stats *out)
{
	struct emu *e = priv;
	struct emu_host_ctrl *hc = &e->c[ci];
	/* the workers add to these concurrently: read each with an atomic load */
	struct nvmet_counters k;
	const uint64_t *src = (const uint64_t *)&hc->h.nvmet.cnt;
	uint64_t *dst = (uint64_t *)&k;
	for (size_t i = 0; i < sizeof(k) / 8; i++)
		dst[i] = bam_load_relaxed_u64(&src[i]);
#ifdef BAM_HAVE_CUDA
	if (e->ctx->target == BAM_TARGET_GPU && e->gpu) {
		struct emu_ctrl tmp;
		if (bam_mem_copy(e->ctx, &tmp, hc->d, sizeof(tmp)))
			return -EIO;
		k = tmp.nvmet.cnt;
	}
#endif
	out->cmds = k.cmds;
	out->reads = k.reads;
	out->writes = k.writes;
	out->flushes = k.flushes;
	out->bytes_read = k.bytes_read;
	out->bytes_written = k.bytes_written;
	out->errors = k.errors;
	out->injected = k.injected;
	return 0;
}

static void emu_dump(void *priv, uint32_t ci, FILE *f)
{
	struct emu *e = priv;
	struct emu_host_ctrl *hc = &e->c[ci];
	struct nvmet_queue *qs = hc->qh;
	uint32_t *db = hc->h.nvmet.db;
	struct emu_ctrl k = hc->h;
	struct nvmet_queue *tmpq = NULL;
	uint32_t *tmpdb = NULL;
	if (e->ctx->target == BAM_TARGET_GPU) {
		tmpq = malloc((EMU_MAX_QUEUES + 1) * sizeof(*tmpq));
		tmpdb = malloc(2 * (EMU_MAX_QUEUES + 1) * sizeof(uint32_t));
		if (!tmpq || !tmpdb || bam_mem_copy(e->ctx, tmpq, hc->dev_q, (EMU_MAX_QUEUES + 1) * sizeof(*tmpq)) ||
		    bam_mem_copy(e->ctx, tmpdb, hc->dev_db, 2 * (EMU_MAX_QUEUES + 1) * sizeof(uint32_t)) ||
		    bam_mem_copy(e->ctx, &k, hc->d, sizeof(k))) {
			free(tmpq);
			free(tmpdb);
			return;
		}
		qs = tmpq;
		db = tmpdb;
	}
	fprintf(f, "emu ctrl %u: cmds=%llu reads=%llu writes=%llu errors=%llu nq=%u stop=%u\n", ci,
		(unsigned long long)k.nvmet.cnt.cmds, (unsigned long long)k.nvmet.cnt.reads, (unsigned long long)k.nvmet.cnt.writes,
		(unsigned long long)k.nvmet.cnt.errors, k.nvmet.nq, *e->stop);
	for (uint32_t q = 1; q <= k.nvmet.nq && q <= 4; q++)
		fprintf(f, "  emu q %u: created=%u depth=%u sq_head=%u cq_tail=%u phase=%u db_tail=%u db_cqhead=%u\n", q,
			qs[q].created, qs[q].depth, qs[q].sq_head, qs[q].cq_tail, qs[q].phase, db[2 * q], db[2 * q + 1]);
	free(tmpq);
	free(tmpdb);
}

static const char *emu_desc(void *priv)
{
	return ((struct emu *)priv)->desc;
}

static void emu_close(void *priv)
{
	struct emu *e = priv;
	if (!e)
		return;
	for (uint32_t i = 0; i < e->n; i++) {
		struct emu_host_ctrl *hc = &e->c[i];
		media_close(e, hc);
		if (e->ctx->target == BAM_TARGET_GPU) {
			bam_mem_free(e->ctx, BAM_MEM_DEVICE, hc->dev_db);
			bam_mem_free(e->ctx, BAM_MEM_DEVICE, hc->dev_q);
			bam_mem_free(e->ctx, BAM_MEM_DEVICE, hc->d);
		}
		free(hc->qh);
		free(hc->h.nvmet.db);
	}
	bam_mem_free(e->ctx, BAM_MEM_HOST_PINNED, e->stop);
	free(e->c);
	free(e);
}

/* in the table of built-in back ends (backend.cmake) */
const struct bam_backend_ops bam_emu_ops = {
	.name = "emu",
	.queue_mem = BAM_MEM_DEVICE,
	.gpu_resident = 1,
	.open = emu_open,
	.check = emu_check,
	.media = emu_media,
	.info = emu_info,
	.admin = emu_admin,
	.doorbell = emu_doorbell,
	.start = emu_start,
	.stop = emu_stop,
	.media_rw = emu_media_rw,
	.stats = emu_stats,
	.desc = emu_desc,
	.dump = emu_dump,
	.close = emu_close,
};
