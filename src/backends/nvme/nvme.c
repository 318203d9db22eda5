/* SPDX-License-Identifier: MIT */
/*
 * The "nvme" back end: real NVMe controllers (PCI functions bound to vfio-pci) driven
 * from user space, no kernel module of our own. Per controller (Base spec 3.5.1,
 * "Controller initialization"):
 *   CC.EN = 0, wait CSTS.RDY = 0 (bounded by CAP.TO); AQA/ASQ/ACQ; CC (4 KiB pages,
 *   64 B SQEs, 16 B CQEs, NVM command set) with EN = 1, wait CSTS.RDY = 1 (CAP.TO);
 *   Identify Controller (MDTS, NN) and Namespace (LBA format); Set Features Number of
 *   Queues (the context's queue pairs + 1, the last for the provisioning path).
 * Then the core allocates the I/O rings in our DMA arena (mem_alloc: IOVA = virtual
 * address, vfio.c) and sends Create I/O CQ/SQ through 'admin' (polled: no interrupt
 * vectors); the device-side queue code (bam/detail/qpair.h) rings the doorbells at
 * BAR0 + 0x1000 + (2y + c) * (4 << CAP.DSTRD) through 'doorbell' and polls the CQs.
 * Close (also after a failed open, and bam_nvme_emergency_stop from a signal handler)
 * deletes the I/O queues and shuts the controller down (CC.SHN, then CC.EN = 0) so the
 * kernel's nvme driver can take it back.
 *
 * Every wait is bounded; every register poll checks CSTS.CFS (controller fatal
 * status) and reads of all ones (the function is gone). A watcher thread turns the
 * kernel's request to release the device (hot removal: VFIO's REQ eventfd) and a fatal
 * status into a message and a disabled controller: commands in flight then time out
 * (the context's timeout) instead of hanging.
 *
 * Back-end string: "nvme:BDF[,BDF...][,nsid=N][,iommu=type1][,allow_write=1][,dma=SIZE]"
 * (docs/BACKENDS.md). Several BDFs are striped as emu's count= is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef BAM_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#include "bam/backend.h"
#include "bam/dev.h"
#include "bam/nvme.h"
#include "vfio.h"

#define NVME_ADMIN_DEPTH 32
#define NVME_PROV_DEPTH 8
#define NVME_BOUNCE_BYTES (256u << 10)
#define NVME_ADMIN_TIMEOUT_NS (10ull * 1000000000ull)
#define NVME_DEFAULT_DMA (64ull << 30) /* reserved address space, not memory */
#define NVME_FEAT_NUM_QUEUES 0x07
#define NVME_ADMIN_SET_FEATURES 0x09

struct nvme_cfg {
	char bdf[BAM_MAX_CTRLS][32];
	uint32_t n;
	uint32_t nsid;
	int allow_write;
	int test_not_ready; /* test only: a misaligned ASQ, so that the enable fails (CFS, or RDY never 1) */
	uint64_t dma;
	char bad[256];
};

struct nvme_q { /* a queue pair the back end drives itself (admin, provisioning) */
	struct nvme_sqe *sq;
	struct nvme_cqe *cq;
	uint32_t depth, tail, head, phase, qid;
	uint16_t cid;
};

struct nvme_ctrl {
	struct nvme_vfio_dev dev;
	struct nvme_be *be;
	uint64_t cap;
	uint32_t dstrd, to_ms, mqes, vs;
	uint32_t nsid, lba_size, lba_shift, mdts_bytes, nn;
	uint64_t nlba;
	char model[41], serial[21];
	int enabled, ready, io_queues;    /* io_queues: the core created qpairs I/O queue pairs */
	struct nvme_q aq, pq;      /* admin queue, provisioning I/O queue */
	int pq_created;
	uint8_t *dbuf;             /* 4 KiB DMA buffer for admin data */
	uint8_t *bounce;           /* provisioning bounce buffer */
	uint64_t *prp_list;        /* its PRP list */
	pthread_mutex_t lock;      /* admin and provisioning queues */
	int dead;                  /* CFS, all ones or removal seen: no more commands */
	struct bam_ctrl_stats st;
	int registered;            /* in the emergency-stop table */
	volatile uint32_t *gpu_db_registered; /* BAR0 registered with CUDA (GPU target) */
};

struct nvme_be {
	struct bam_ctx *ctx;
	struct nvme_cfg cfg;
	struct nvme_vfio vfio;
	struct nvme_ctrl *c;
	uint32_t n, nq;
	int gpu;
	pthread_t watcher;
	int watching;
	volatile int stop_watch;
	char desc[512];
	char datapath[160];
};

/* ---- emergency stop (signal handlers) ------------------------------------------- */

#define NVME_MAX_LIVE 64
static volatile uint32_t *live_bar[NVME_MAX_LIVE];

static void live_add(struct nvme_ctrl *c)
{
	for (int i = 0; i < NVME_MAX_LIVE; i++)
		if (__sync_bool_compare_and_swap(&live_bar[i], NULL, c->dev.bar0)) {
			c->registered = 1;
			return;
		}
}

static void live_del(struct nvme_ctrl *c)
{
	if (!c->registered)
		return;
	for (int i = 0; i < NVME_MAX_LIVE; i++)
		if (__sync_bool_compare_and_swap(&live_bar[i], c->dev.bar0, NULL))
			break;
	c->registered = 0;
}

void bam_nvme_emergency_stop(void)
{
	/* async-signal-safe: plain MMIO stores. CC.EN = 0 resets the controller, which
	 * deletes its I/O queues and stops all DMA (Base 3.7.2); vfio-pci's release then
	 * resets the function when the process ends. */
	for (int i = 0; i < NVME_MAX_LIVE; i++) {
		volatile uint32_t *b = live_bar[i];
		if (b) {
			uint32_t cc = b[NVME_REG_CC / 4];
			if (cc != 0xffffffffu)
				b[NVME_REG_CC / 4] = cc & ~NVME_CC_EN;
		}
	}
}

/* ---- registers ------------------------------------------------------------------- */

static uint32_t rd32(struct nvme_ctrl *c, uint32_t off)
{
	return c->dev.bar0[off / 4];
}

static void wr32(struct nvme_ctrl *c, uint32_t off, uint32_t v)
{
	c->dev.bar0[off / 4] = v;
}

static uint64_t rd64(struct nvme_ctrl *c, uint32_t off)
{
	uint64_t lo = rd32(c, off), hi = rd32(c, off + 4);
	return lo | hi << 32;
}

static void wr64(struct nvme_ctrl *c, uint32_t off, uint64_t v)
{
	wr32(c, off, (uint32_t)v);
	wr32(c, off + 4, (uint32_t)(v >> 32));
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* CSTS as seen now: -ENODEV for all ones (gone), -EIO for CFS, else 0 with *csts. */
static int csts_check(struct nvme_ctrl *c, uint32_t *csts, char *err, size_t errlen)
{
	uint32_t v = rd32(c, NVME_REG_CSTS);
	if (v == 0xffffffffu) {
		c->dead = 1;
		seterr(err, errlen, "nvme %s: registers read all ones: the device is gone (removed or fallen off the bus)",
		       c->dev.bdf);
		return -ENODEV;
	}
	if (v & NVME_CSTS_CFS) {
		c->dead = 1;
		seterr(err, errlen, "nvme %s: controller fatal status (CSTS.CFS = 1): reset needed", c->dev.bdf);
		return -EIO;
	}
	if (csts)
		*csts = v;
	return 0;
}

/* Wait for CSTS.RDY == rdy, bounded by CAP.TO. */
static int wait_ready(struct nvme_ctrl *c, uint32_t rdy, char *err, size_t errlen)
{
	const uint64_t t0 = now_ns(), lim = (uint64_t)c->to_ms * 1000000ull;
	for (;;) {
		uint32_t csts;
		int rc = csts_check(c, &csts, err, errlen);
		if (rc)
			return rc;
		if ((csts & NVME_CSTS_RDY) == rdy)
			return 0;
		if (now_ns() - t0 > lim) {
			seterr(err, errlen, "nvme %s: CSTS.RDY did not become %u within CAP.TO = %u ms (CSTS = 0x%x)",
			       c->dev.bdf, rdy, c->to_ms, csts);
			return -ETIMEDOUT;
		}
		usleep(1000);
	}
}

static int disable_ctrl(struct nvme_ctrl *c, char *err, size_t errlen)
{
	uint32_t cc = rd32(c, NVME_REG_CC);
	if (cc == 0xffffffffu) {
		c->dead = 1;
		seterr(err, errlen, "nvme %s: registers read all ones: the device is gone", c->dev.bdf);
		return -ENODEV;
	}
	if (cc & NVME_CC_EN)
		wr32(c, NVME_REG_CC, cc & ~NVME_CC_EN);
	c->enabled = c->ready = 0;
	uint32_t csts = rd32(c, NVME_REG_CSTS);
	if (csts == 0xffffffffu)
		return -ENODEV;
	if (csts & NVME_CSTS_CFS && !(cc & NVME_CC_EN))
		return 0; /* fatal and disabled: RDY may stay as it is (3.5.2) */
	const uint64_t t0 = now_ns(), lim = (uint64_t)c->to_ms * 1000000ull;
	while ((rd32(c, NVME_REG_CSTS) & NVME_CSTS_RDY) && now_ns() - t0 <= lim)
		usleep(1000);
	if (rd32(c, NVME_REG_CSTS) & NVME_CSTS_RDY) {
		seterr(err, errlen, "nvme %s: CSTS.RDY stayed 1 for CAP.TO = %u ms after CC.EN = 0", c->dev.bdf, c->to_ms);
		return -ETIMEDOUT;
	}
	return 0;
}

/* ---- polled queues the back end drives itself ----------------------------------- */

static uint32_t *db_addr(struct nvme_ctrl *c, uint32_t qid, int cq)
{
	return (uint32_t *)(uintptr_t)((volatile uint8_t *)c->dev.bar0 + NVME_REG_DBS +
				       (2u * qid + (cq ? 1u : 0u)) * (4u << c->dstrd));
}

/* Submit one command on q and poll its completion (bounded). */
static int q_exec(struct nvme_ctrl *c, struct nvme_q *q, struct nvme_sqe *s, struct nvme_cqe *out, uint64_t timeout_ns,
		  char *err, size_t errlen)
{
	if (c->dead) {
		seterr(err, errlen, "nvme %s: controller unusable (fatal status, removed or gone)", c->dev.bdf);
		return -ENODEV;
	}
	s->cid = q->cid++;
	q->sq[q->tail] = *s;
	q->tail = (q->tail + 1) % q->depth;
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* the SQE before the doorbell */
	*(volatile uint32_t *)db_addr(c, q->qid, 0) = q->tail;
	const uint64_t t0 = now_ns();
	uint32_t spins = 0;
	for (;;) {
		volatile struct nvme_cqe *e = &q->cq[q->head];
		uint16_t st = __atomic_load_n(&e->status, __ATOMIC_ACQUIRE);
		if ((st & NVME_CQE_P) == q->phase) {
			struct nvme_cqe cqe;
			memcpy(&cqe, (const void *)e, sizeof(cqe));
			q->head = (q->head + 1) % q->depth;
			if (!q->head)
				q->phase ^= 1;
			*(volatile uint32_t *)db_addr(c, q->qid, 1) = q->head;
			if (cqe.cid != s->cid)
				continue; /* a stale completion (an earlier timed-out command) */
			*out = cqe;
			return 0;
		}
		if (++spins % 256 == 0) {
			int rc = csts_check(c, NULL, err, errlen);
			if (rc)
				return rc;
			if (now_ns() - t0 > timeout_ns) {
				seterr(err, errlen, "nvme %s: queue %u: no completion for opcode 0x%02x within %llu ms",
				       c->dev.bdf, q->qid, s->opc, (unsigned long long)(timeout_ns / 1000000));
				return -ETIMEDOUT;
			}
			usleep(spins > 100000 ? 200 : 10);
		}
	}
}

static int admin_sync(struct nvme_ctrl *c, struct nvme_sqe *s, struct nvme_cqe *cqe, char *err, size_t errlen)
{
	pthread_mutex_lock(&c->lock);
	int rc = q_exec(c, &c->aq, s, cqe, NVME_ADMIN_TIMEOUT_NS, err, errlen);
	pthread_mutex_unlock(&c->lock);
	if (!rc && (cqe->status & NVME_STATUS_MASK)) {
		uint16_t st = cqe->status & NVME_STATUS_MASK;
		seterr(err, errlen, "nvme %s: admin opcode 0x%02x: %s (SCT %u SC 0x%02x)", c->dev.bdf, s->opc,
		       nvme_status_name(st), NVME_STATUS_SCT(st), NVME_STATUS_SC(st));
		return -EIO;
	}
	return rc;
}

/* ---- configuration ----------------------------------------------------------------- */

static int is_bdf(const char *s)
{
	unsigned d, b, dv, f;
	char tail;
	return sscanf(s, "%4x:%2x:%2x.%1x%c", &d, &b, &dv, &f, &tail) == 4 ||
	       sscanf(s, "%2x:%2x.%1x%c", &b, &dv, &f, &tail) == 3;
}

static int nvme_kv(void *arg, const char *k, const char *v)
{
	struct nvme_cfg *cfg = arg;
	if (!*v && strchr(k, ':') && is_bdf(k)) {
		if (cfg->n == BAM_MAX_CTRLS) {
			snprintf(cfg->bad, sizeof(cfg->bad), "nvme: at most %u controllers", BAM_MAX_CTRLS);
			return -EINVAL;
		}
		unsigned d = 0, b, dv, f;
		if (sscanf(k, "%4x:%2x:%2x.%1x", &d, &b, &dv, &f) != 4) {
			d = 0;
			sscanf(k, "%2x:%2x.%1x", &b, &dv, &f);
		}
		snprintf(cfg->bdf[cfg->n], sizeof(cfg->bdf[0]), "%04x:%02x:%02x.%x", d, b, dv, f);
		for (uint32_t i = 0; i < cfg->n; i++)
			if (!strcmp(cfg->bdf[i], cfg->bdf[cfg->n])) {
				snprintf(cfg->bad, sizeof(cfg->bad), "nvme: %s named twice", k);
				return -EINVAL;
			}
		cfg->n++;
		return 0;
	}
	if (!strcmp(k, "nsid")) {
		char *end;
		unsigned long x = strtoul(v, &end, 10);
		if (!*v || *end || x == 0 || x >= 0xffffffffu) {
			snprintf(cfg->bad, sizeof(cfg->bad), "nvme: nsid=%s: a namespace ID from 1", v);
			return -EINVAL;
		}
		cfg->nsid = (uint32_t)x;
	} else if (!strcmp(k, "iommu")) {
		if (!strcmp(v, "type1"))
			return 0;
		if (!strcmp(v, "noiommu")) {
			snprintf(cfg->bad, sizeof(cfg->bad),
				 "nvme: iommu=noiommu: not supported yet (needs physical addresses in PRPs: a DMA translation "
				 "the device-side code does not apply; docs/BACKENDS.md)");
			return -EINVAL;
		}
		snprintf(cfg->bad, sizeof(cfg->bad), "nvme: iommu=%s: type1 (the default)", v);
		return -EINVAL;
	} else if (!strcmp(k, "allow_write")) {
		if (strcmp(v, "0") && strcmp(v, "1")) {
			snprintf(cfg->bad, sizeof(cfg->bad), "nvme: allow_write=%s: 0 or 1", v);
			return -EINVAL;
		}
		cfg->allow_write = v[0] == '1';
	} else if (!strcmp(k, "dma")) {
		uint64_t x;
		if (bam_parse_size(v, &x) || x < (16ull << 20)) {
			snprintf(cfg->bad, sizeof(cfg->bad), "nvme: dma=%s: the DMA arena's address space, at least 16M", v);
			return -EINVAL;
		}
		cfg->dma = x;
	} else if (!strcmp(k, "test_not_ready")) {
		cfg->test_not_ready = v[0] == '1';
	} else {
		snprintf(cfg->bad, sizeof(cfg->bad),
			 "nvme: unknown key or PCI address '%s' (nvme:BDF[,BDF...][,nsid=N][,iommu=type1][,allow_write=1]"
			 "[,dma=SIZE]; BDF as 0000:01:00.0)", k);
		return -EINVAL;
	}
	return 0;
}

static int nvme_cfg_parse(const char *args, struct nvme_cfg *cfg, char *err, size_t errlen)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nsid = 1;
	cfg->dma = NVME_DEFAULT_DMA;
	if (bam_kv_parse(args, nvme_kv, cfg)) {
		seterr(err, errlen, "%s", cfg->bad[0] ? cfg->bad : "nvme: out of memory");
		return -EINVAL;
	}
	if (!cfg->n) {
		seterr(err, errlen, "nvme: name a controller's PCI address: nvme:0000:01:00.0 (bam nvme list)");
		return -EINVAL;
	}
	return 0;
}

static int nvme_check(const char *args, char *err, size_t errlen)
{
	struct nvme_cfg cfg;
	return nvme_cfg_parse(args, &cfg, err, errlen);
}

static int nvme_info(const char *args, struct bam_backend_info *out, char *err, size_t errlen)
{
	struct nvme_cfg cfg;
	int rc = nvme_cfg_parse(args, &cfg, err, errlen);
	if (rc)
		return rc;
	out->n_ctrl = cfg.n;
	out->flags = BAM_BACKEND_F_WRITE_GUARDED | (cfg.allow_write ? BAM_BACKEND_F_WRITE_ALLOWED : 0);
	return 0;
}

/* ---- controller bring-up -------------------------------------------------------------- */

static int q_alloc(struct nvme_be *nb, struct nvme_q *q, uint32_t qid, uint32_t depth)
{
	int rc;
	memset(q, 0, sizeof(*q));
	q->qid = qid;
	q->depth = depth;
	q->phase = 1;
	q->sq = nvme_dma_alloc(&nb->vfio, (uint64_t)depth * sizeof(struct nvme_sqe), &rc);
	q->cq = nvme_dma_alloc(&nb->vfio, (uint64_t)depth * sizeof(struct nvme_cqe), &rc);
	return q->sq && q->cq ? 0 : -ENOMEM;
}

static int ctrl_init(struct nvme_be *nb, struct nvme_ctrl *c, uint32_t nq, char *err, size_t errlen)
{
	c->cap = rd64(c, NVME_REG_CAP);
	if (c->cap == ~0ull) {
		seterr(err, errlen, "nvme %s: registers read all ones: the device is gone or not responding", c->dev.bdf);
		return -ENODEV;
	}
	c->vs = rd32(c, NVME_REG_VS);
	c->dstrd = NVME_CAP_DSTRD(c->cap);
	c->to_ms = NVME_CAP_TO(c->cap) * 500u;
	if (!c->to_ms)
		c->to_ms = 500;
	c->mqes = NVME_CAP_MQES(c->cap) + 1;
	if (!(c->cap & NVME_CAP_CSS_NVM)) {
		seterr(err, errlen, "nvme %s: the controller does not support the NVM command set", c->dev.bdf);
		return -ENOTSUP;
	}
	if (NVME_CAP_MPSMIN(c->cap) != 0) {
		seterr(err, errlen, "nvme %s: CAP.MPSMIN = %u: 4 KiB memory pages not supported", c->dev.bdf,
		       NVME_CAP_MPSMIN(c->cap));
		return -ENOTSUP;
	}
	if ((size_t)NVME_REG_DBS + (2u * (nq + 1) + 2) * (4u << c->dstrd) > c->dev.bar0_size) {
		seterr(err, errlen, "nvme %s: BAR0 too small for %u queue pairs' doorbells", c->dev.bdf, nq + 1);
		return -EINVAL;
	}
	int rc = disable_ctrl(c, err, errlen);
	if (rc)
		return rc;
	if ((rc = q_alloc(nb, &c->aq, 0, NVME_ADMIN_DEPTH)))
		goto nomem;
	c->dbuf = nvme_dma_alloc(&nb->vfio, 4096, &rc);
	c->bounce = nvme_dma_alloc(&nb->vfio, NVME_BOUNCE_BYTES, &rc);
	c->prp_list = nvme_dma_alloc(&nb->vfio, 4096, &rc);
	if (!c->dbuf || !c->bounce || !c->prp_list)
		goto nomem;
	wr32(c, NVME_REG_AQA, ((NVME_ADMIN_DEPTH - 1) << NVME_AQA_ACQS_SHIFT) | (NVME_ADMIN_DEPTH - 1));
	wr64(c, NVME_REG_ASQ, (uint64_t)(uintptr_t)c->aq.sq | (nb->cfg.test_not_ready ? 0x200u : 0u));
	wr64(c, NVME_REG_ACQ, (uint64_t)(uintptr_t)c->aq.cq);
	uint32_t cc = (0u << NVME_CC_CSS_SHIFT) | (0u << NVME_CC_MPS_SHIFT) | (0u << NVME_CC_AMS_SHIFT) |
		      (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT);
	wr32(c, NVME_REG_CC, cc);
	wr32(c, NVME_REG_CC, cc | NVME_CC_EN);
	c->enabled = 1;
	if ((rc = wait_ready(c, NVME_CSTS_RDY, err, errlen)))
		return rc;
	c->ready = 1;
	live_add(c);

	/* Identify Controller: model, serial, MDTS, number of namespaces */
	struct nvme_sqe s;
	struct nvme_cqe cqe;
	memset(&s, 0, sizeof(s));
	s.opc = NVME_ADMIN_IDENTIFY;
	s.prp1 = (uint64_t)(uintptr_t)c->dbuf;
	s.cdw10 = NVME_IDENTIFY_CNS_CTRL;
	if ((rc = admin_sync(c, &s, &cqe, err, errlen)))
		return rc;
	const struct nvme_id_ctrl *idc = (const void *)c->dbuf;
	memcpy(c->model, idc->mn, 40);
	for (int i = 39; i >= 0 && (c->model[i] == ' ' || !c->model[i]); i--)
		c->model[i] = 0;
	memcpy(c->serial, idc->sn, 20);
	for (int i = 19; i >= 0 && (c->serial[i] == ' ' || !c->serial[i]); i--)
		c->serial[i] = 0;
	c->mdts_bytes = idc->mdts ? (4096u << idc->mdts) : 0;
	c->nn = idc->nn;
	c->nsid = nb->cfg.nsid;
	if (c->nsid > c->nn) {
		seterr(err, errlen, "nvme %s: nsid=%u: the controller has namespaces 1 to %u", c->dev.bdf, c->nsid, c->nn);
		return -EINVAL;
	}
	memset(&s, 0, sizeof(s));
	s.opc = NVME_ADMIN_IDENTIFY;
	s.nsid = c->nsid;
	s.prp1 = (uint64_t)(uintptr_t)c->dbuf;
	s.cdw10 = NVME_IDENTIFY_CNS_NS;
	if ((rc = admin_sync(c, &s, &cqe, err, errlen)))
		return rc;
	const struct nvme_id_ns *idn = (const void *)c->dbuf;
	if (!idn->nsze) {
		seterr(err, errlen, "nvme %s: namespace %u is not active (size 0)", c->dev.bdf, c->nsid);
		return -ENODEV;
	}
	c->nlba = idn->nsze;
	c->lba_shift = idn->lbaf[idn->flbas & 0xf].lbads;
	c->lba_size = 1u << c->lba_shift;
	if (c->lba_shift < 9 || c->lba_shift > 12 || idn->lbaf[idn->flbas & 0xf].ms) {
		seterr(err, errlen, "nvme %s: namespace %u: LBA format of %u B with %u B metadata: 512 B to 4 KiB without metadata "
		       "supported", c->dev.bdf, c->nsid, c->lba_size, idn->lbaf[idn->flbas & 0xf].ms);
		return -ENOTSUP;
	}

	/* Set Features, Number of Queues (5.27.1.5): nq for the core + 1 provisioning */
	memset(&s, 0, sizeof(s));
	s.opc = NVME_ADMIN_SET_FEATURES;
	s.cdw10 = NVME_FEAT_NUM_QUEUES;
	s.cdw11 = ((nq + 1 - 1) << 16) | (nq + 1 - 1);
	if ((rc = admin_sync(c, &s, &cqe, err, errlen)))
		return rc;
	uint32_t nsqa = (cqe.dw0 & 0xffff) + 1, ncqa = (cqe.dw0 >> 16) + 1;
	if (nsqa < nq + 1 || ncqa < nq + 1) {
		seterr(err, errlen, "nvme %s: the controller grants %u I/O queue pairs; %u asked (qpairs + 1 for provisioning): "
		       "fewer qpairs", c->dev.bdf, nsqa < ncqa ? nsqa : ncqa, nq + 1);
		return -EINVAL;
	}

	/* the provisioning queue pair (media_rw), qid nq + 1 */
	if ((rc = q_alloc(nb, &c->pq, nq + 1, NVME_PROV_DEPTH)))
		goto nomem;
	memset(&s, 0, sizeof(s));
	s.opc = NVME_ADMIN_CREATE_CQ;
	s.prp1 = (uint64_t)(uintptr_t)c->pq.cq;
	s.cdw10 = ((NVME_PROV_DEPTH - 1) << NVME_CREATE_Q_QSIZE_SHIFT) | c->pq.qid;
	s.cdw11 = NVME_CREATE_CQ_PC;
	if ((rc = admin_sync(c, &s, &cqe, err, errlen)))
		return rc;
	memset(&s, 0, sizeof(s));
	s.opc = NVME_ADMIN_CREATE_SQ;
	s.prp1 = (uint64_t)(uintptr_t)c->pq.sq;
	s.cdw10 = ((NVME_PROV_DEPTH - 1) << NVME_CREATE_Q_QSIZE_SHIFT) | c->pq.qid;
	s.cdw11 = (c->pq.qid << NVME_CREATE_SQ_CQID_SHIFT) | NVME_CREATE_SQ_PC;
	if ((rc = admin_sync(c, &s, &cqe, err, errlen)))
		return rc;
	c->pq_created = 1;
	return 0;
nomem:
	seterr(err, errlen, "nvme %s: out of DMA memory for the admin queue", c->dev.bdf);
	return -ENOMEM;
}

static void delete_queue(struct nvme_ctrl *c, uint8_t opc, uint32_t qid)
{
	struct nvme_sqe s;
	struct nvme_cqe cqe;
	char e[256];
	memset(&s, 0, sizeof(s));
	s.opc = opc;
	s.cdw10 = qid;
	if (admin_sync(c, &s, &cqe, e, sizeof(e)) && !c->dead)
		fprintf(stderr, "%s\n", e);
}

/* Delete the I/O queues, shut down (CC.SHN normal, bounded), disable. */
static void ctrl_shutdown(struct nvme_be *nb, struct nvme_ctrl *c)
{
	if (!c->dev.bar0 || !c->enabled)
		return;
	if (!c->dead && c->ready) {
		for (uint32_t q = 1; q <= (uint32_t)c->io_queues; q++)
			delete_queue(c, NVME_ADMIN_DELETE_SQ, q);
		if (c->pq_created)
			delete_queue(c, NVME_ADMIN_DELETE_SQ, c->pq.qid);
		for (uint32_t q = 1; q <= (uint32_t)c->io_queues && !c->dead; q++)
			delete_queue(c, NVME_ADMIN_DELETE_CQ, q);
		if (c->pq_created && !c->dead)
			delete_queue(c, NVME_ADMIN_DELETE_CQ, c->pq.qid);
		c->io_queues = 0;
		c->pq_created = 0;
		uint32_t cc = rd32(c, NVME_REG_CC);
		if (cc != 0xffffffffu) {
			wr32(c, NVME_REG_CC, (cc & ~(NVME_CC_SHN_MASK << NVME_CC_SHN_SHIFT)) | NVME_CC_SHN_NORMAL);
			const uint64_t t0 = now_ns();
			while (now_ns() - t0 < (uint64_t)c->to_ms * 1000000ull) {
				uint32_t csts = rd32(c, NVME_REG_CSTS);
				if (csts == 0xffffffffu || (csts & NVME_CSTS_SHST_MASK << NVME_CSTS_SHST_SHIFT) == NVME_CSTS_SHST_DONE ||
				    (csts & NVME_CSTS_CFS))
					break;
				usleep(1000);
			}
		}
	}
	char e[256];
	if (disable_ctrl(c, e, sizeof(e)) && !c->dead)
		fprintf(stderr, "%s\n", e);
	(void)nb;
}

/* ---- the watcher: removal requests and fatal status ---------------------------- */

static void *watcher(void *arg)
{
	struct nvme_be *nb = arg;
	struct pollfd pf[BAM_MAX_CTRLS];
	while (!nb->stop_watch) {
		uint32_t np = 0;
		for (uint32_t i = 0; i < nb->n; i++) {
			pf[np].fd = nb->c[i].dev.req_fd;
			pf[np].events = POLLIN;
			pf[np].revents = 0;
			np++;
		}
		poll(pf, np, 100);
		for (uint32_t i = 0; i < nb->n; i++) {
			struct nvme_ctrl *c = &nb->c[i];
			if (c->dead)
				continue;
			if (pf[i].fd >= 0 && (pf[i].revents & POLLIN)) {
				uint64_t x;
				if (read(pf[i].fd, &x, sizeof(x)) < 0)
					x = 0;
				fprintf(stderr,
					"nvme %s: the kernel asks for the device back (hot removal): controller disabled, "
					"commands in flight fail\n", c->dev.bdf);
				c->dead = 1;
				live_del(c);
				uint32_t cc = rd32(c, NVME_REG_CC);
				if (cc != 0xffffffffu)
					wr32(c, NVME_REG_CC, cc & ~NVME_CC_EN);
				c->enabled = c->ready = 0;
				continue;
			}
			char e[256];
			if (csts_check(c, NULL, e, sizeof(e)))
				fprintf(stderr, "%s\n", e);
		}
	}
	return NULL;
}

/* ---- ops ------------------------------------------------------------------------------ */

static void nvme_close(void *priv)
{
	struct nvme_be *nb = priv;
	if (!nb)
		return;
	if (nb->watching) {
		nb->stop_watch = 1;
		pthread_join(nb->watcher, NULL);
		nb->watching = 0;
	}
	for (uint32_t i = 0; i < nb->n; i++) {
		struct nvme_ctrl *c = &nb->c[i];
		ctrl_shutdown(nb, c);
		live_del(c);
#ifdef BAM_HAVE_CUDA
		if (c->gpu_db_registered)
			cudaHostUnregister((void *)(uintptr_t)c->gpu_db_registered);
#endif
		nvme_vfio_dev_close(&c->dev);
		pthread_mutex_destroy(&c->lock);
	}
	nvme_vfio_close(&nb->vfio);
	free(nb->c);
	free(nb);
}

static int nvme_open(struct bam_ctx *ctx, const char *args, void **priv, uint32_t *n_ctrl, char *err, size_t errlen)
{
	struct nvme_be *nb = calloc(1, sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	int rc = nvme_cfg_parse(args, &nb->cfg, err, errlen);
	if (rc) {
		free(nb);
		return rc;
	}
	nb->ctx = ctx;
	nb->nq = bam_ctx_qpairs(ctx);
	nb->gpu = bam_ctx_target(ctx) == BAM_TARGET_GPU;
	nb->c = calloc(nb->cfg.n, sizeof(*nb->c));
	if (!nb->c) {
		free(nb);
		return -ENOMEM;
	}
	if ((rc = nvme_vfio_open(&nb->vfio, nb->cfg.dma, err, errlen))) {
		nvme_vfio_close(&nb->vfio);
		free(nb->c);
		free(nb);
		return rc;
	}
	if (nb->gpu) {
#ifdef BAM_HAVE_CUDA
		int dev = 0, uva = 0, hostptr = 0;
		cudaGetDevice(&dev);
		cudaDeviceGetAttribute(&uva, cudaDevAttrUnifiedAddressing, dev);
		cudaDeviceGetAttribute(&hostptr, cudaDevAttrCanUseHostPointerForRegisteredMem, dev);
		if (!uva || !hostptr) {
			seterr(err, errlen, "nvme: the GPU cannot use registered host memory at its host address "
			       "(unified addressing %d, host pointer for registered memory %d)", uva, hostptr);
			nvme_vfio_close(&nb->vfio);
			free(nb->c);
			free(nb);
			return -ENOTSUP;
		}
		nb->vfio.gpu_register = 1;
#endif
		/* No GPU-memory DMA path (P2P through nvidia-peermem or dma-buf) is
		 * implemented: every ring, line and buffer is pinned host memory that the GPU
		 * reaches over PCIe at the same address. */
		snprintf(nb->datapath, sizeof(nb->datapath), "gpu: queues, lines and buffers in pinned host memory "
			 "(no P2P into GPU memory), doorbells mapped into the GPU");
	} else {
		snprintf(nb->datapath, sizeof(nb->datapath), "cpu: DMA arena IOVA = VA");
	}
	nb->n = nb->cfg.n;
	for (uint32_t i = 0; i < nb->n; i++) {
		pthread_mutex_init(&nb->c[i].lock, NULL);
		nb->c[i].dev.fd = nb->c[i].dev.req_fd = nb->c[i].dev.group_fd = -1;
		nb->c[i].be = nb;
	}
	for (uint32_t i = 0; i < nb->n; i++) {
		struct nvme_ctrl *c = &nb->c[i];
		if ((rc = nvme_vfio_dev_open(&nb->vfio, &c->dev, nb->cfg.bdf[i], err, errlen)) ||
		    (rc = ctrl_init(nb, c, nb->nq, err, errlen)))
			goto fail;
		if (i && (c->lba_size != nb->c[0].lba_size)) {
			seterr(err, errlen, "nvme: %s has %u B LBAs, %s %u B: striped controllers need one LBA size",
			       c->dev.bdf, c->lba_size, nb->c[0].dev.bdf, nb->c[0].lba_size);
			rc = -EINVAL;
			goto fail;
		}
#ifdef BAM_HAVE_CUDA
		if (nb->gpu) {
			/* the doorbells, for GPU threads' system-scope stores */
			if (cudaHostRegister((void *)(uintptr_t)c->dev.bar0, c->dev.bar0_size,
					     cudaHostRegisterIoMemory | cudaHostRegisterMapped) != cudaSuccess) {
				seterr(err, errlen, "nvme %s: cudaHostRegister(BAR0, cudaHostRegisterIoMemory) failed: %s",
				       c->dev.bdf, cudaGetErrorString(cudaGetLastError()));
				rc = -ENOTSUP;
				goto fail;
			}
			c->gpu_db_registered = c->dev.bar0;
		}
#endif
	}
	int n = snprintf(nb->desc, sizeof(nb->desc), "nvme:");
	for (uint32_t i = 0; i < nb->n && n < (int)sizeof(nb->desc); i++)
		n += snprintf(nb->desc + n, sizeof(nb->desc) - (size_t)n, "%s,", nb->c[i].dev.bdf);
	if (n < (int)sizeof(nb->desc))
		snprintf(nb->desc + n, sizeof(nb->desc) - (size_t)n, "nsid=%u,allow_write=%d (%s; %s)", nb->cfg.nsid,
			 nb->cfg.allow_write, nb->c[0].model, nb->datapath);
	if (pthread_create(&nb->watcher, NULL, watcher, nb) == 0)
		nb->watching = 1;
	*priv = nb;
	*n_ctrl = nb->n;
	return 0;
fail:
	nvme_close(nb);
	return rc;
}

static void nvme_ns_params(void *priv, uint32_t ci, uint32_t *nsid, uint32_t *mqes)
{
	struct nvme_be *nb = priv;
	*nsid = nb->c[ci].nsid;
	*mqes = nb->c[ci].mqes;
}

static int nvme_admin(void *priv, uint32_t ci, const struct nvme_sqe *sqe, void *data, struct nvme_cqe *cqe)
{
	struct nvme_be *nb = priv;
	struct nvme_ctrl *c = &nb->c[ci];
	struct nvme_sqe s = *sqe;
	if (data)
		s.prp1 = (uint64_t)(uintptr_t)c->dbuf; /* (4 KiB: Identify) */
	char e[256];
	pthread_mutex_lock(&c->lock);
	int rc = q_exec(c, &c->aq, &s, cqe, NVME_ADMIN_TIMEOUT_NS, e, sizeof(e));
	if (!rc && data)
		memcpy(data, c->dbuf, 4096);
	pthread_mutex_unlock(&c->lock);
	if (rc)
		fprintf(stderr, "%s\n", e);
	else if (s.opc == NVME_ADMIN_CREATE_SQ && !(cqe->status & NVME_STATUS_MASK))
		c->io_queues = (int)(s.cdw10 & 0xffff); /* created in order 1..qpairs */
	return rc;
}

static uint32_t *nvme_doorbell(void *priv, uint32_t ci, uint32_t qid, int cq)
{
	struct nvme_be *nb = priv;
	return db_addr(&nb->c[ci], qid, cq);
}

static int nvme_start(void *priv)
{
	(void)priv;
	return 0;
}

static void nvme_stop(void *priv)
{
	struct nvme_be *nb = priv;
	/* The I/O queues go (their memory is freed next, by the core); the controller
	 * stays enabled for the provisioning path until close. */
	for (uint32_t i = 0; i < nb->n; i++) {
		struct nvme_ctrl *c = &nb->c[i];
		if (c->dead || !c->ready)
			continue;
		for (uint32_t q = 1; q <= (uint32_t)c->io_queues; q++)
			delete_queue(c, NVME_ADMIN_DELETE_SQ, q);
		for (uint32_t q = 1; q <= (uint32_t)c->io_queues && !c->dead; q++)
			delete_queue(c, NVME_ADMIN_DELETE_CQ, q);
		c->io_queues = 0;
	}
}

/* One provisioning command: nlb LBAs at slba through the bounce buffer. */
static int prov_io(struct nvme_ctrl *c, uint8_t opc, uint64_t slba, uint32_t nlb)
{
	const uint32_t bytes = nlb << c->lba_shift;
	struct nvme_sqe s;
	memset(&s, 0, sizeof(s));
	const uint64_t addr = (uint64_t)(uintptr_t)c->bounce;
	uint64_t list = 0;
	if (bam_prp_list_entries(addr, bytes) > 1) {
		bam_prp_list_fill(c->prp_list, (uint64_t)(uintptr_t)c->prp_list, addr, bytes);
		list = (uint64_t)(uintptr_t)c->prp_list;
	}
	bam_sqe_rw(&s, opc, c->nsid, slba, nlb, c->lba_shift, addr, list);
	struct nvme_cqe cqe;
	char e[256];
	int rc = q_exec(c, &c->pq, &s, &cqe, NVME_ADMIN_TIMEOUT_NS, e, sizeof(e));
	if (rc) {
		fprintf(stderr, "%s\n", e);
		return rc;
	}
	uint16_t st = cqe.status & NVME_STATUS_MASK;
	if (opc == NVME_CMD_READ)
		c->st.reads++, c->st.bytes_read += st ? 0 : bytes;
	else
		c->st.writes++, c->st.bytes_written += st ? 0 : bytes;
	c->st.cmds++;
	if (st) {
		c->st.errors++;
		fprintf(stderr, "nvme %s: %s of LBAs %llu+%u: %s (SCT %u SC 0x%02x)\n", c->dev.bdf,
			opc == NVME_CMD_READ ? "read" : "write", (unsigned long long)slba, nlb, nvme_status_name(st),
			NVME_STATUS_SCT(st), NVME_STATUS_SC(st));
		return -EIO;
	}
	return 0;
}

static int nvme_media_rw(void *priv, uint32_t ci, uint64_t off, void *buf, uint64_t len, int write)
{
	struct nvme_be *nb = priv;
	struct nvme_ctrl *c = &nb->c[ci];
	if (write && !nb->cfg.allow_write) {
		fprintf(stderr, "nvme %s: refusing to write without allow_write=1 (--allow-write): it destroys the data on "
			"the device\n", c->dev.bdf);
		return -EPERM;
	}
	const uint64_t cap = c->nlba << c->lba_shift;
	if (off > cap || len > cap - off)
		return -ERANGE;
	uint32_t chunk = NVME_BOUNCE_BYTES;
	if (c->mdts_bytes && c->mdts_bytes < chunk)
		chunk = c->mdts_bytes;
	const uint64_t lbs = c->lba_size;
	uint8_t *p = buf;
	int rc = 0;
	pthread_mutex_lock(&c->lock);
	while (len && !rc) {
		const uint64_t slba = off >> c->lba_shift, in = off & (lbs - 1);
		uint64_t n = in + len;
		if (n > chunk)
			n = chunk;
		uint32_t nlb = (uint32_t)((n + lbs - 1) >> c->lba_shift);
		uint64_t take = ((uint64_t)nlb << c->lba_shift) - in;
		if (take > len)
			take = len;
		if (write) {
			if ((in || (in + take) & (lbs - 1)) && (rc = prov_io(c, NVME_CMD_READ, slba, nlb)))
				break; /* read-modify-write of a partial LBA */
			memcpy(c->bounce + in, p, take);
			rc = prov_io(c, NVME_CMD_WRITE, slba, nlb);
		} else if (!(rc = prov_io(c, NVME_CMD_READ, slba, nlb))) {
			memcpy(p, c->bounce + in, take);
		}
		p += take;
		off += take;
		len -= take;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int nvme_stats(void *priv, uint32_t ci, struct bam_ctrl_stats *out)
{
	struct nvme_be *nb = priv;
	*out = nb->c[ci].st; /* the provisioning path's; the I/O queues' counts are the core's */
	return 0;
}

static void nvme_dump(void *priv, uint32_t ci, FILE *f)
{
	struct nvme_be *nb = priv;
	struct nvme_ctrl *c = &nb->c[ci];
	fprintf(f, "nvme %s: %s sn %s, VS %u.%u, CAP 0x%016llx, CC 0x%08x CSTS 0x%08x, nsid %u: %llu x %u B, MDTS %u B%s\n",
		c->dev.bdf, c->model, c->serial, c->vs >> 16, (c->vs >> 8) & 0xff, (unsigned long long)c->cap,
		c->dev.bar0 ? rd32(c, NVME_REG_CC) : 0, c->dev.bar0 ? rd32(c, NVME_REG_CSTS) : 0, c->nsid,
		(unsigned long long)c->nlba, c->lba_size, c->mdts_bytes, c->dead ? " (DEAD)" : "");
}

static const char *nvme_desc(void *priv)
{
	return ((struct nvme_be *)priv)->desc;
}

static int nvme_mem_alloc(void *priv, enum bam_mem_kind kind, uint64_t bytes, void **out)
{
	struct nvme_be *nb = priv;
	(void)kind; /* every kind: the controller may reach any of them (lines, buffers, PRP lists, rings) */
	int rc;
	*out = nvme_dma_alloc(&nb->vfio, bytes, &rc);
	if (!*out)
		fprintf(stderr, "nvme: no DMA memory for %llu bytes: %s (dma=%llu MiB of address space, %llu MiB mapped)\n",
			(unsigned long long)bytes, strerror(-rc), (unsigned long long)(nb->vfio.size >> 20),
			(unsigned long long)(nb->vfio.mapped_bytes >> 20));
	return *out ? 0 : rc;
}

static int nvme_mem_free(void *priv, enum bam_mem_kind kind, void *p)
{
	struct nvme_be *nb = priv;
	(void)kind;
	return nvme_dma_free(&nb->vfio, p);
}

/* in the table of built-in back ends (backend.cmake) */
const struct bam_backend_ops bam_nvme_ops = {
	.name = "nvme",
	.queue_mem = BAM_MEM_HOST_PINNED,
	.gpu_resident = 0,
	.open = nvme_open,
	.check = nvme_check,
	.info = nvme_info,
	.admin = nvme_admin,
	.doorbell = nvme_doorbell,
	.start = nvme_start,
	.stop = nvme_stop,
	.media_rw = nvme_media_rw,
	.stats = nvme_stats,
	.dump = nvme_dump,
	.desc = nvme_desc,
	.close = nvme_close,
	.mem_alloc = nvme_mem_alloc,
	.mem_free = nvme_mem_free,
	.ns_params = nvme_ns_params,
};
