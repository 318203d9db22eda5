/* SPDX-License-Identifier: MIT */
/*
 * emu_core.h - the emulated NVMe controller's command execution, shared by its host
 * threads (CPU target) and its GPU-resident workers (emu_gpu.cu).
 *
 * What it models (NVMe Base 2.0 + NVM Command Set 1.0):
 *  - fetch SQEs from the SQ head up to the tail written to the SQ tail doorbell;
 *  - validate each SQE: opcode (Invalid Command Opcode), NSID (Invalid Namespace or
 *    Format), FUSE/PSDT (Invalid Field), SLBA + NLB inside the namespace (LBA Out of
 *    Range), transfer size against MDTS (Invalid Field), PRP1 dword alignment, PRP2 /
 *    PRP list entries page aligned, list pointer qword aligned (PRP Offset Invalid);
 *  - move data between the media and the PRP addresses (PRP lists chained through
 *    their last entry, Base 4.3.1);
 *  - post a CQE with CID, SQID, SQHD and the phase tag (Base 4.6), never overrunning
 *    the CQ head written to the CQ head doorbell;
 *  - timing: a completion is posted no earlier than max(arrival + latency, the time
 *    a token bucket of the profile's IOPS and bandwidth allows), per controller;
 *  - fault injection: error status on an LBA range or at a rate, added delay, dropped
 *    completions, a controller that stops answering after N commands.
 * DMA addresses are the submitting side's pointers (identity mapping: the emulated
 * device shares the address space of the threads that drive it).
 */
#ifndef BAM_EMU_CORE_H
#define BAM_EMU_CORE_H

#include "bam/defs.h"
#include "bam/atomic.h"
#include "bam/nvme_spec.h"

#define EMU_MAX_QUEUES 1024
#define EMU_MDTS 8 /* 2^8 pages = 1 MiB per command */
#define EMU_POLL_NS 1000 /* default poll_ns= */

/* Controller-side state of one I/O queue pair. */
struct emu_queue {
	struct nvme_sqe *sq;
	struct nvme_cqe *cq;
	uint32_t depth;
	uint32_t sq_head;   /* next SQE to fetch (slot index) */
	uint32_t cq_tail;   /* next CQE slot */
	uint32_t phase;     /* phase tag for the current pass over the CQ */
	uint32_t created;   /* 1 once both Create I/O CQ and SQ succeeded */
	uint32_t sqid;
	uint32_t pad[8];
};

struct emu_timing {
	uint64_t lat_read_ns, lat_write_ns;     /* unloaded latency */
	uint64_t ps_per_cmd_read, ps_per_cmd_write;   /* 1e12 / IOPS (0 = no cap) */
	uint64_t ps_per_byte_read, ps_per_byte_write; /* 1e12 / (bytes/s) (0 = no cap) */
};

struct emu_faults {
	uint64_t err_slba, err_elba;  /* commands touching [err_slba, err_elba) fail */
	uint32_t err_rate_ppm;        /* random failures, per million commands */
	uint32_t delay_rate_ppm;      /* commands delayed by delay_ns */
	uint64_t delay_ns;
	uint32_t drop_rate_ppm;       /* completions never posted */
	uint32_t pad;
	uint64_t stop_after;          /* stop answering after this many commands (0 = never) */
	uint64_t seed;
};

struct emu_counters {
	uint64_t cmds, reads, writes, flushes, bytes_read, bytes_written, errors, injected;
};

/* One emulated controller, in memory its workers reach. */
struct emu_ctrl {
	uint8_t *media;             /* nlba << lba_shift bytes */
	uint64_t nlba;
	uint32_t lba_shift;
	uint32_t nq;                /* I/O queues created (qid 1..nq) */
	struct emu_queue *q;        /* [EMU_MAX_QUEUES + 1], index = qid */
	uint32_t *db;               /* doorbells: [2*qid] SQ tail, [2*qid+1] CQ head */
	struct emu_timing t;
	struct emu_faults f;
	uint64_t vclock_ps;         /* token bucket: when the device is next free (ps after epoch) */
	uint64_t epoch_ns;          /* time origin of vclock_ps (absolute GPU time in ps would
				     * overflow 64 bits: %globaltimer counts from 1970) */
	uint32_t stop;              /* set by the host: workers return */
	uint32_t index;             /* controller number */
	uint32_t poll_ns;           /* GPU workers: longest pause between rounds while idle */
	uint32_t pad;
	struct emu_counters cnt;
};

/* splitmix64: a counter-based generator, so a fault decision depends only on the
 * seed and the command's identity. */
BAM_HD_INLINE uint64_t emu_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

BAM_HD_INLINE int emu_roll(uint64_t seed, uint64_t id, uint32_t salt, uint32_t ppm)
{
	return ppm && (emu_mix64(seed ^ (id * 0x100000001b3ull) ^ ((uint64_t)salt << 56)) % 1000000u) < ppm;
}

/* PRP walker (Base 4.3.1): segments of a transfer of 'total' bytes. */
struct emu_prp_iter {
	uint64_t prp1, prp2;
	uint32_t remaining;
	uint32_t index;             /* segments produced */
	const uint64_t *list;       /* current PRP list position */
	uint32_t list_left;         /* entries left in this list page */
};

BAM_HD_INLINE void emu_prp_begin(struct emu_prp_iter *it, const struct nvme_sqe *s, uint32_t total)
{
	it->prp1 = s->prp1;
	it->prp2 = s->prp2;
	it->remaining = total;
	it->index = 0;
	it->list = 0;
	it->list_left = 0;
}

/* Next segment: returns 1 with the segment in addr and len, 0 when done, or a negative value whose
 * negation is the NVMe status (PRP Offset Invalid / Invalid Field). */
BAM_HD_INLINE int emu_prp_next(struct emu_prp_iter *it, uint64_t *addr, uint32_t *len)
{
	const uint64_t pmask = NVME_PAGE_SIZE - 1;
	if (it->remaining == 0)
		return 0;
	if (it->index == 0) {
		if (it->prp1 & 3u) /* PRP1 offset must be dword aligned */
			return -(int)NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_PRP_OFFSET);
		if (it->prp1 == 0)
			return -(int)NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR);
		uint32_t first = NVME_PAGE_SIZE - (uint32_t)(it->prp1 & pmask);
		*addr = it->prp1;
		*len = it->remaining < first ? it->remaining : first;
		it->remaining -= *len;
		it->index++;
		if (it->remaining > NVME_PAGE_SIZE) {
			/* PRP2 is a list pointer: qword aligned, may carry an offset */
			if ((it->prp2 & 7u) || it->prp2 == 0)
				return -(int)NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_PRP_OFFSET);
			it->list = (const uint64_t *)(uintptr_t)it->prp2;
			it->list_left = (uint32_t)((NVME_PAGE_SIZE - (it->prp2 & pmask)) / 8);
		}
		return 1;
	}
	uint64_t e;
	if (!it->list) {
		e = it->prp2; /* exactly two pages: PRP2 is the second page */
	} else {
		if (it->list_left == 1 && it->remaining > NVME_PAGE_SIZE) {
			/* last entry of a list page while more than one page remains: chain */
			uint64_t next = it->list[0];
			if ((next & 7u) || next == 0)
				return -(int)NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_PRP_OFFSET);
			it->list = (const uint64_t *)(uintptr_t)next;
			it->list_left = (uint32_t)((NVME_PAGE_SIZE - (next & pmask)) / 8);
		}
		e = it->list[0];
		it->list++;
		it->list_left--;
	}
	if ((e & pmask) || e == 0) /* entries after the first have no offset */
		return -(int)NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_PRP_OFFSET);
	*addr = e;
	*len = it->remaining < NVME_PAGE_SIZE ? it->remaining : NVME_PAGE_SIZE;
	it->remaining -= *len;
	it->index++;
	return 1;
}

/* Checks of an I/O SQE that need no data access. Returns the NVMe status (0 = ok) and
 * the transfer size in *bytes. */
BAM_HD_INLINE uint16_t emu_validate(const struct emu_ctrl *c, const struct nvme_sqe *s, uint32_t *bytes)
{
	*bytes = 0;
	if (s->opc != NVME_CMD_READ && s->opc != NVME_CMD_WRITE && s->opc != NVME_CMD_FLUSH)
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE);
	if (s->opc == NVME_CMD_FLUSH && s->nsid == 0xffffffffu)
		return 0; /* flush of all namespaces */
	if (s->nsid != 1)
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_NS);
	if ((s->flags & NVME_SQE_FUSE_MASK) || ((s->flags >> NVME_SQE_PSDT_SHIFT) & NVME_SQE_PSDT_MASK))
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
	if (s->opc == NVME_CMD_FLUSH)
		return 0;
	uint64_t slba = nvme_sqe_slba(s);
	uint32_t nlb = nvme_sqe_nlb(s);
	if (slba >= c->nlba || nlb > c->nlba - slba)
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_LBA_RANGE);
	uint64_t b = (uint64_t)nlb << c->lba_shift;
	if (b > ((uint64_t)NVME_PAGE_SIZE << EMU_MDTS))
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
	*bytes = (uint32_t)b;
	return 0;
}

/* Fault injection decided from the command's identity. Returns the status to report
 * (0 = none) and sets *drop / *extra_ns. */
BAM_HD_INLINE uint16_t emu_inject(struct emu_ctrl *c, const struct nvme_sqe *s, uint64_t id,
				  int *drop, uint64_t *extra_ns)
{
	const struct emu_faults *f = &c->f;
	uint16_t st = 0;
	*drop = 0;
	*extra_ns = 0;
	if (s->opc == NVME_CMD_READ || s->opc == NVME_CMD_WRITE) {
		uint64_t slba = nvme_sqe_slba(s), elba = slba + nvme_sqe_nlb(s);
		if (f->err_elba > f->err_slba && slba < f->err_elba && elba > f->err_slba)
			st = s->opc == NVME_CMD_READ ? NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_UNRECOVERED_READ)
						     : NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_WRITE_FAULT);
	}
	if (!st && emu_roll(f->seed, id, 1, f->err_rate_ppm))
		st = s->opc == NVME_CMD_WRITE ? NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_WRITE_FAULT)
					      : NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_UNRECOVERED_READ);
	if (emu_roll(f->seed, id, 2, f->delay_rate_ppm))
		*extra_ns = f->delay_ns;
	if (emu_roll(f->seed, id, 3, f->drop_rate_ppm))
		*drop = 1;
	if (st || *drop || *extra_ns)
		bam_fetch_add_relaxed_gpu_u64(&c->cnt.injected, 1);
	return st;
}

/* Picoseconds since the controller's epoch (set by the first caller). */
BAM_HD_INLINE uint64_t emu_rel_ps(struct emu_ctrl *c, uint64_t now_ns)
{
	uint64_t e = bam_load_relaxed_u64(&c->epoch_ns);
	if (e == 0) {
		uint64_t seen = bam_cas_acq_rel_gpu_u64(&c->epoch_ns, 0, now_ns);
		e = seen ? seen : now_ns;
	}
	return now_ns > e ? (now_ns - e) * 1000u : 0;
}

/* When a command of 'bytes' arriving at 'now_ns' completes under the profile: the
 * token bucket (vclock) advances by the command's service time; the completion is
 * at max(now + latency, the bucket's time). Returns 0 for the unlimited profile. */
BAM_HD_INLINE uint64_t emu_ready_time(struct emu_ctrl *c, int write, uint32_t bytes, uint64_t now_ns)
{
	const struct emu_timing *t = &c->t;
	uint64_t lat = write ? t->lat_write_ns : t->lat_read_ns;
	uint64_t pc = write ? t->ps_per_cmd_write : t->ps_per_cmd_read;
	uint64_t pb = (write ? t->ps_per_byte_write : t->ps_per_byte_read) * bytes;
	uint64_t svc = pc > pb ? pc : pb;
	if (!lat && !svc)
		return 0;
	uint64_t now_ps = emu_rel_ps(c, now_ns), done_ps = now_ps;
	if (svc) {
		uint64_t old = bam_load_relaxed_u64(&c->vclock_ps);
		for (;;) {
			uint64_t start = old > now_ps ? old : now_ps;
			uint64_t seen = bam_cas_acq_rel_gpu_u64(&c->vclock_ps, old, start + svc);
			if (seen == old) {
				done_ps = start + svc;
				break;
			}
			old = seen;
		}
	}
	uint64_t r = done_ps / 1000u + c->epoch_ns;
	return r > now_ns + lat ? r : now_ns + lat;
}

/* Post a CQE at the queue's CQ tail: DW0-DW2 first, DW3 (CID + status + phase tag)
 * last with a system-scope release, so a poller that sees the new phase sees the rest
 * (Base 4.6: the phase tag marks a new entry). Caller owns the queue. */
BAM_HD_INLINE void emu_post_cqe(struct emu_queue *q, uint16_t cid, uint16_t status)
{
	struct nvme_cqe *e = &q->cq[q->cq_tail];
	uint32_t *w = (uint32_t *)e;
	bam_store_relaxed_u32(&w[0], 0);
	bam_store_relaxed_u32(&w[1], 0);
	bam_store_relaxed_u32(&w[2], (uint32_t)q->sq_head | ((uint32_t)q->sqid << 16));
	uint32_t dw3 = (uint32_t)cid | ((uint32_t)((status & NVME_STATUS_MASK) | q->phase) << 16);
#if BAM_ON_GPU
	/* the GPU-resident controller serves only this GPU's threads (backend.h
	 * gpu_resident): GPU scope orders the CQE for them */
	bam_store_release_gpu_u32(&w[3], dw3);
#else
	bam_store_release_sys_u32(&w[3], dw3);
#endif
	if (++q->cq_tail == q->depth) {
		q->cq_tail = 0;
		q->phase ^= 1u;
	}
}

/* Is the CQ full? (tail + 1 == head as written to the CQ head doorbell, Base 4.1) */
BAM_HD_INLINE int emu_cq_full(const struct emu_ctrl *c, const struct emu_queue *q, uint32_t qid)
{
#if BAM_ON_GPU
	uint32_t head = bam_load_acquire_gpu_u32(&c->db[2 * qid + 1]);
#else
	uint32_t head = bam_load_acquire_sys_u32(&c->db[2 * qid + 1]);
#endif
	uint32_t next = q->cq_tail + 1 == q->depth ? 0 : q->cq_tail + 1;
	return next == head;
}

BAM_HD_INLINE void emu_count(struct emu_ctrl *c, const struct nvme_sqe *s, uint32_t bytes, uint16_t st)
{
	bam_fetch_add_relaxed_gpu_u64(&c->cnt.cmds, 1);
	if (st) {
		bam_fetch_add_relaxed_gpu_u64(&c->cnt.errors, 1);
		return;
	}
	if (s->opc == NVME_CMD_READ) {
		bam_fetch_add_relaxed_gpu_u64(&c->cnt.reads, 1);
		bam_fetch_add_relaxed_gpu_u64(&c->cnt.bytes_read, bytes);
	} else if (s->opc == NVME_CMD_WRITE) {
		bam_fetch_add_relaxed_gpu_u64(&c->cnt.writes, 1);
		bam_fetch_add_relaxed_gpu_u64(&c->cnt.bytes_written, bytes);
	} else {
		bam_fetch_add_relaxed_gpu_u64(&c->cnt.flushes, 1);
	}
}

#endif /* BAM_EMU_CORE_H */
