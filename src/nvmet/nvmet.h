/* SPDX-License-Identifier: MIT */
/*
 * nvmet.h - the NVMe controller front end shared by every software controller of this
 * project (src/backends/emu, file, null), in the spirit of Linux's drivers/nvme/target
 * core beside io-cmd-file and io-cmd-bdev: what a controller does with the queues
 * before and after its back end moves data.
 *
 * What it implements (NVMe Base 2.0 + NVM Command Set 1.0):
 *  - the controller-side state of the I/O queues (struct nvmet_queue: SQ head, CQ tail,
 *    phase tag) and of a controller (struct nvmet_ctrl: namespace 1's size, the queue
 *    table indexed by QID, the doorbells, the command counters);
 *  - I/O SQE validation (nvmet_validate): opcode (Invalid Command Opcode), NSID
 *    (Invalid Namespace or Format), FUSE/PSDT (Invalid Field), SLBA + NLB inside the
 *    namespace (LBA Out of Range), transfer size against MDTS (Invalid Field);
 *  - the PRP walk (nvmet_prp_begin/nvmet_prp_next): PRP1 dword aligned, PRP2 / PRP list
 *    entries page aligned, list pointers qword aligned (PRP Offset Invalid), lists
 *    chained through their last entry (Base 4.3.1);
 *  - CQE posting (nvmet_post_cqe): CID, SQID, SQHD and the phase tag (Base 4.6), never
 *    overrunning the CQ head written to the CQ head doorbell (nvmet_cq_full);
 *  - admin commands (nvmet_admin_exec, admin.c): Identify, Create/Delete I/O CQ/SQ.
 * A back end fetches SQEs at the SQ tail doorbell, calls these, moves the data its own
 * way (memory, io_uring, nothing) and posts the CQE. DMA addresses are the submitting
 * side's pointers (identity mapping: the controller shares the address space of the
 * threads that drive it). The inline functions compile for the host and, through
 * BAM_HD_INLINE, for the GPU (the emulator's GPU-resident workers).
 */
#ifndef BAM_NVMET_H
#define BAM_NVMET_H

#include "bam/defs.h"
#include "bam/atomic.h"
#include "bam/nvme_spec.h"

#define NVMET_MAX_QUEUES 1024 /* I/O queues per controller */
#define NVMET_MDTS 8 /* 2^8 pages = 1 MiB per command */

/* Controller-side state of one I/O queue pair. */
struct nvmet_queue {
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

/* Command counters (nvmet_count; injected: commands a back end's fault injection hit). */
struct nvmet_counters {
	uint64_t cmds, reads, writes, flushes, bytes_read, bytes_written, errors, injected;
};

/* The front end's part of a controller, embedded in each back end's controller. */
struct nvmet_ctrl {
	uint64_t nlba;              /* namespace 1: LBAs */
	uint32_t lba_shift;         /* log2 of the LBA size */
	uint32_t nq;                /* I/O queues created (qid 1..nq) */
	struct nvmet_queue *q;      /* [NVMET_MAX_QUEUES + 1], index = qid */
	uint32_t *db;               /* doorbells: [2*qid] SQ tail, [2*qid+1] CQ head */
	uint32_t index;             /* controller number */
	uint32_t pad;
	struct nvmet_counters cnt;
};

/* PRP walker (Base 4.3.1): segments of a transfer of 'total' bytes. */
struct nvmet_prp_iter {
	uint64_t prp1, prp2;
	uint32_t remaining;
	uint32_t index;             /* segments produced */
	const uint64_t *list;       /* current PRP list position */
	uint32_t list_left;         /* entries left in this list page */
};

BAM_HD_INLINE void nvmet_prp_begin(struct nvmet_prp_iter *it, const struct nvme_sqe *s, uint32_t total)
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
BAM_HD_INLINE int nvmet_prp_next(struct nvmet_prp_iter *it, uint64_t *addr, uint32_t *len)
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
BAM_HD_INLINE uint16_t nvmet_validate(const struct nvmet_ctrl *c, const struct nvme_sqe *s, uint32_t *bytes)
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
	if (b > ((uint64_t)NVME_PAGE_SIZE << NVMET_MDTS))
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
	*bytes = (uint32_t)b;
	return 0;
}

/* Post a CQE at the queue's CQ tail: DW0-DW2 first, DW3 (CID + status + phase tag)
 * last with a system-scope release, so a poller that sees the new phase sees the rest
 * (Base 4.6: the phase tag marks a new entry). Caller owns the queue. */
BAM_HD_INLINE void nvmet_post_cqe(struct nvmet_queue *q, uint16_t cid, uint16_t status)
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
BAM_HD_INLINE int nvmet_cq_full(const struct nvmet_ctrl *c, const struct nvmet_queue *q, uint32_t qid)
{
#if BAM_ON_GPU
	uint32_t head = bam_load_acquire_gpu_u32(&c->db[2 * qid + 1]);
#else
	uint32_t head = bam_load_acquire_sys_u32(&c->db[2 * qid + 1]);
#endif
	uint32_t next = q->cq_tail + 1 == q->depth ? 0 : q->cq_tail + 1;
	return next == head;
}

BAM_HD_INLINE void nvmet_count(struct nvmet_ctrl *c, const struct nvme_sqe *s, uint32_t bytes, uint16_t st)
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

BAM_EXTERN_C_BEGIN
/* Execute one admin command (Identify, Create/Delete I/O CQ/SQ) of a software
 * controller on its queue table c->q[1..max_queues]; returns the NVMe status. 'sn'
 * and 'mn' are the Identify Controller strings, 'mdts' its MDTS field. Host only. */
uint16_t nvmet_admin_exec(struct nvmet_ctrl *c, uint32_t max_queues, uint8_t mdts, const char *sn,
			  const char *mn, const struct nvme_sqe *s, void *data);
BAM_EXTERN_C_END

#endif /* BAM_NVMET_H */
