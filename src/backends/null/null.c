/* SPDX-License-Identifier: MIT */
/*
 * The "null" back end: NVMe controllers without media, in the spirit of SPDK's null
 * bdev and Linux's null_blk. Each controller checks every I/O command as a real one
 * does (src/nvmet: opcode, namespace, LBA range, MDTS: an invalid command gets its
 * status) and completes every valid one successfully at once, without moving data:
 *  - a read leaves its buffer untouched (no PRP is followed: the data pointers are
 *    never dereferenced, so it behaves the same on both targets);
 *  - a write is discarded; a flush does nothing.
 * The provisioning path (bam_ctx_media_read/write) agrees: a write is discarded, a read
 * fills the caller's buffer with zeros. What it measures is the cost of the queues, the
 * core and the front end alone, as a controller infinitely fast would leave it.
 *
 * Back-end string: "null[:size=BYTES][,lba=512|4096][,count=N]": size= per controller
 * (default 1G, a multiple of the LBA size), lba= (default 512), count= controllers
 * (default 1). One host thread per controller serves its I/O queues (in pinned host
 * memory, reachable from both targets).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bam/backend.h"
#include "bam/dev.h"
#include "../../nvmet/nvmet.h"

#define NULL_DEFAULT_SIZE (1ull << 30)

struct null_cfg {
	uint64_t size;
	uint32_t lba;
	uint32_t count;
	int size_given;
	char bad[200];
};

struct null_ctrl {
	struct nvmet_ctrl nvmet;  /* namespace, queues, doorbells, counters */
	struct null_be *be;
	pthread_t thread;
	int running;
};

struct null_be {
	struct bam_ctx *ctx;
	struct null_cfg cfg;
	struct null_ctrl *c;
	uint32_t n;
	uint32_t stop;
	char desc[160];
};

static int null_kv(void *arg, const char *k, const char *v)
{
	struct null_cfg *cfg = arg;
	uint64_t x;
	if (!strcmp(k, "size")) {
		if (bam_parse_size(v, &x) || x == 0) {
			snprintf(cfg->bad, sizeof(cfg->bad), "null: size=%s: a positive size (K, M, G, T suffixes)", v);
			return -EINVAL;
		}
		cfg->size = x;
		cfg->size_given = 1;
	} else if (!strcmp(k, "lba")) {
		if (strcmp(v, "512") && strcmp(v, "4096")) {
			snprintf(cfg->bad, sizeof(cfg->bad), "null: lba=%s: 512 or 4096", v);
			return -EINVAL;
		}
		cfg->lba = (uint32_t)atoi(v);
	} else if (!strcmp(k, "count")) {
		char *end;
		x = strtoull(v, &end, 10);
		if (v[0] < '0' || v[0] > '9' || *end || x == 0 || x > BAM_MAX_CTRLS) {
			snprintf(cfg->bad, sizeof(cfg->bad), "null: count=%s: 1 to %u controllers", v, BAM_MAX_CTRLS);
			return -EINVAL;
		}
		cfg->count = (uint32_t)x;
	} else {
		snprintf(cfg->bad, sizeof(cfg->bad), "null: unknown key '%s' (keys: size, lba, count)", k);
		return -EINVAL;
	}
	return 0;
}

static int null_cfg_parse(const char *args, struct null_cfg *cfg, char *err, size_t errlen)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = NULL_DEFAULT_SIZE;
	cfg->lba = 512;
	cfg->count = 1;
	if (bam_kv_parse(args, null_kv, cfg)) {
		snprintf(err, errlen, "%s", cfg->bad[0] ? cfg->bad : "null: out of memory");
		return -EINVAL;
	}
	if (cfg->size % cfg->lba) {
		snprintf(err, errlen, "null: size=%llu is not a multiple of lba=%u", (unsigned long long)cfg->size,
			 cfg->lba);
		return -EINVAL;
	}
	return 0;
}

static int null_check(const char *args, char *err, size_t errlen)
{
	struct null_cfg cfg;
	return null_cfg_parse(args, &cfg, err, errlen);
}

static int null_info(const char *args, struct bam_backend_info *out, char *err, size_t errlen)
{
	struct null_cfg cfg;
	int rc = null_cfg_parse(args, &cfg, err, errlen);
	if (rc)
		return rc;
	out->n_ctrl = cfg.count;
	out->size = cfg.size_given ? cfg.size : 0;
	out->lba_size = cfg.lba;
	out->flags = cfg.size_given ? 0 : BAM_BACKEND_F_SIZABLE; /* no media: nothing to keep */
	return 0;
}

static void null_close(void *priv)
{
	struct null_be *nb = priv;
	if (!nb)
		return;
	for (uint32_t i = 0; i < nb->n; i++) {
		free(nb->c[i].nvmet.q);
		bam_mem_free(nb->ctx, BAM_MEM_HOST_PINNED, nb->c[i].nvmet.db);
	}
	free(nb->c);
	free(nb);
}

static int null_open(struct bam_ctx *ctx, const char *args, void **priv, uint32_t *n_ctrl, char *err, size_t errlen)
{
	struct null_be *nb = calloc(1, sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	int rc = null_cfg_parse(args, &nb->cfg, err, errlen);
	if (rc) {
		free(nb);
		return rc;
	}
	if (bam_ctx_qpairs(ctx) > NVMET_MAX_QUEUES) {
		snprintf(err, errlen, "null: %u queue pairs: at most %u", bam_ctx_qpairs(ctx), NVMET_MAX_QUEUES);
		free(nb);
		return -EINVAL;
	}
	nb->ctx = ctx;
	nb->c = calloc(nb->cfg.count, sizeof(*nb->c));
	if (!nb->c) {
		free(nb);
		return -ENOMEM;
	}
	nb->n = nb->cfg.count;
	for (uint32_t i = 0; i < nb->n; i++) {
		struct null_ctrl *nc = &nb->c[i];
		nc->be = nb;
		nc->nvmet.lba_shift = nb->cfg.lba == 4096 ? 12 : 9;
		nc->nvmet.nlba = nb->cfg.size >> nc->nvmet.lba_shift;
		nc->nvmet.index = i;
		nc->nvmet.q = calloc(NVMET_MAX_QUEUES + 1, sizeof(struct nvmet_queue));
		nc->nvmet.db = bam_mem_alloc(ctx, BAM_MEM_HOST_PINNED, 2 * (NVMET_MAX_QUEUES + 1) * sizeof(uint32_t));
		if (!nc->nvmet.q || !nc->nvmet.db) {
			null_close(nb);
			return -ENOMEM;
		}
	}
	snprintf(nb->desc, sizeof(nb->desc), "null:size=%llu,lba=%u,count=%u", (unsigned long long)nb->cfg.size,
		 nb->cfg.lba, nb->n);
	*priv = nb;
	*n_ctrl = nb->n;
	return 0;
}

static int null_admin(void *priv, uint32_t ci, const struct nvme_sqe *s, void *data, struct nvme_cqe *cqe)
{
	struct null_be *nb = priv;
	char sn[21];
	snprintf(sn, sizeof(sn), "BAMNULL%04u", ci);
	memset(cqe, 0, sizeof(*cqe));
	cqe->cid = s->cid;
	cqe->status = nvmet_admin_exec(&nb->c[ci].nvmet, NVMET_MAX_QUEUES, NVMET_MDTS, sn, "bam null", s, data);
	return 0;
}

static uint32_t *null_doorbell(void *priv, uint32_t ci, uint32_t qid, int cq)
{
	struct null_be *nb = priv;
	return &nb->c[ci].nvmet.db[2 * qid + (cq ? 1 : 0)];
}

/* Serve every I/O queue of one controller: fetch each SQE while its CQ has room,
 * check it, complete it at once. */
static void *null_worker(void *arg)
{
	struct null_ctrl *nc = arg;
	struct nvmet_ctrl *c = &nc->nvmet;
	uint32_t idle = 0;
	while (!bam_load_acquire_sys_u32(&nc->be->stop)) {
		int busy = 0;
		for (uint32_t qid = 1; qid <= c->nq; qid++) {
			struct nvmet_queue *q = &c->q[qid];
			if (!q->created)
				continue;
			/* doorbell value written by the submitters (release): SQEs before it */
			uint32_t tail = bam_load_acquire_sys_u32(&c->db[2 * qid]);
			if (tail >= q->depth)
				continue; /* invalid doorbell write: ignored (Base 4.1: an error) */
			while (q->sq_head != tail && !nvmet_cq_full(c, q, qid)) {
				struct nvme_sqe sqe = q->sq[q->sq_head];
				uint32_t bytes;
				q->sq_head = q->sq_head + 1 == q->depth ? 0 : q->sq_head + 1;
				uint16_t st = nvmet_validate(c, &sqe, &bytes);
				nvmet_count(c, &sqe, bytes, st);
				nvmet_post_cqe(q, sqe.cid, st);
				busy = 1;
			}
		}
		if (busy)
			idle = 0;
		else if (++idle > 64)
			usleep(idle > 4096 ? 200 : 20); /* idle controller: do not burn a core */
		else
			bam_spin_pause(idle);
	}
	return NULL;
}

static void null_stop(void *priv)
{
	struct null_be *nb = priv;
	bam_store_release_sys_u32(&nb->stop, 1);
	for (uint32_t i = 0; i < nb->n; i++)
		if (nb->c[i].running) {
			pthread_join(nb->c[i].thread, NULL);
			nb->c[i].running = 0;
		}
}

static int null_start(void *priv)
{
	struct null_be *nb = priv;
	nb->stop = 0;
	for (uint32_t i = 0; i < nb->n; i++) {
		int rc = pthread_create(&nb->c[i].thread, NULL, null_worker, &nb->c[i]);
		if (rc) {
			null_stop(nb);
			return -rc;
		}
		nb->c[i].running = 1;
	}
	return 0;
}

static int null_media_rw(void *priv, uint32_t ci, uint64_t off, void *buf, uint64_t len, int write)
{
	struct null_be *nb = priv;
	if (off > nb->cfg.size || len > nb->cfg.size - off)
		return -EINVAL;
	if (!write)
		memset(buf, 0, len);
	return 0;
}

static int null_stats(void *priv, uint32_t ci, struct bam_ctrl_stats *out)
{
	struct null_be *nb = priv;
	const struct nvmet_counters *k = &nb->c[ci].nvmet.cnt;
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

static const char *null_desc(void *priv)
{
	return ((struct null_be *)priv)->desc;
}

/* in the table of built-in back ends (backend.cmake) */
const struct bam_backend_ops bam_null_ops = {
	.name = "null",
	.queue_mem = BAM_MEM_HOST_PINNED,
	.gpu_resident = 0,
	.open = null_open,
	.check = null_check,
	.info = null_info,
	.admin = null_admin,
	.doorbell = null_doorbell,
	.start = null_start,
	.stop = null_stop,
	.media_rw = null_media_rw,
	.stats = null_stats,
	.desc = null_desc,
	.close = null_close,
};
