/* SPDX-License-Identifier: MIT */
/*
 * bam/dev.h - the device-side view of a context, and one I/O as GPU (or CPU-target)
 * threads issue it: pick a queue pair, build the NVMe Read/Write/Flush SQE (NVM
 * Command Set 3.2.4/3.2.6, Base 7.1), submit, wait, check the status.
 *
 * Thread contract: any thread, independently; nothing here synchronises a warp.
 */
#ifndef BAM_DEV_H
#define BAM_DEV_H

#include "bam/defs.h"
#include "bam/atomic.h"
#include "bam/nvme_spec.h"
#include "bam/detail/qpair.h"

#define BAM_MAX_CTRLS 32

/* One controller as kernels see it. */
struct bam_dev_ctrl {
	struct bam_qpair *qps;  /* [n_qp] queue pairs, in kernel-reachable memory */
	uint64_t nlba;          /* namespace size, logical blocks */
	uint32_t lba_shift;     /* log2(LBA size in bytes) */
	uint32_t nsid;
	uint32_t max_nlb;       /* largest NLB (1's based) one command may carry (MDTS) */
	uint32_t pad;
};

struct bam_dev {
	uint32_t n_ctrl;
	uint32_t n_qp;          /* queue pairs per controller */
	uint64_t timeout_ns;    /* bound of each wait */
	uint32_t error;         /* sticky: first failure, as a positive errno (0 = none) */
	uint32_t error_status;  /* sticky: first non-zero NVMe status seen (0 = none) */
	uint64_t n_errors;      /* failures recorded */
	uint32_t *progress;     /* bumped by every CQ head move of any queue pair (target
				 * memory; bam_qpair.progress): a wait with no command of its
				 * own in flight is bounded by the device's progress */
	struct bam_dev_ctrl ctrl[BAM_MAX_CTRLS];
};

/* Record a failure: the first one is kept (read back by the host after the kernel). */
BAM_HD_INLINE void bam_dev_record_error(struct bam_dev *d, int err, uint16_t nvme_status)
{
	if (err < 0)
		bam_cas_acq_rel_gpu_u32(&d->error, 0, (uint32_t)-err);
	if (nvme_status)
		bam_cas_acq_rel_gpu_u32(&d->error_status, 0, nvme_status);
	bam_fetch_add_relaxed_gpu_u64(&d->n_errors, 1);
}

/* A queue-pair index that spreads threads over queues: the SM id on the GPU (threads
 * of one SM share queues, so their commands batch behind one doorbell), the caller's
 * hint on the CPU target. */
BAM_HD_INLINE uint32_t bam_dev_queue_pick(const struct bam_dev *d, uint64_t hint)
{
#if BAM_ON_GPU
	uint32_t smid, warp;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
	asm volatile("mov.u32 %0, %%warpid;" : "=r"(warp));
	(void)hint;
	return (smid * 4u + (warp & 3u)) % d->n_qp;
#else
	return (uint32_t)(hint % d->n_qp);
#endif
}

/* Fill the data pointer of an SQE for a buffer 'addr' of 'len' bytes that is contiguous
 * in the controller's DMA address space (Base spec 4.3, PRP): PRP1 = addr; PRP2 = the
 * next page when the transfer crosses exactly one page boundary, else 'prp_list' (the
 * address of a PRP list the caller built with bam_prp_list_fill for this buffer). */
BAM_HD_INLINE void bam_sqe_set_prp(struct nvme_sqe *s, uint64_t addr, uint32_t len, uint64_t prp_list)
{
	uint64_t first = NVME_PAGE_SIZE - (addr & (NVME_PAGE_SIZE - 1));
	s->prp1 = addr;
	if (len <= first)
		s->prp2 = 0;
	else if (len - first <= NVME_PAGE_SIZE)
		s->prp2 = (addr + first) & ~(uint64_t)(NVME_PAGE_SIZE - 1);
	else
		s->prp2 = prp_list;
}

/* Number of PRP list entries a buffer needs (pages after the first). */
BAM_HD_INLINE uint32_t bam_prp_list_entries(uint64_t addr, uint64_t len)
{
	uint64_t first = NVME_PAGE_SIZE - (addr & (NVME_PAGE_SIZE - 1));
	if (len <= first)
		return 0;
	return (uint32_t)((len - first + NVME_PAGE_SIZE - 1) / NVME_PAGE_SIZE);
}

/* Write the PRP list for buffer 'addr'/'len' into 'list' (host-writable memory that
 * the controller reads at DMA address 'list_dma'); lists longer than one page chain
 * through their last entry (Base 4.3.1). 'list' must hold bam_prp_list_bytes(). */
BAM_HD_INLINE uint32_t bam_prp_list_bytes(uint64_t addr, uint64_t len)
{
	uint32_t n = bam_prp_list_entries(addr, len);
	/* each page holds 511 data entries + 1 chain entry, except the last: rounding
	 * n up by 511 per page never gives too few pages */
	uint32_t pages = n == 0 ? 1 : (n + 510) / 511;
	return pages * NVME_PAGE_SIZE;
}

BAM_HD_INLINE void bam_prp_list_fill(uint64_t *list, uint64_t list_dma, uint64_t addr, uint64_t len)
{
	uint32_t n = bam_prp_list_entries(addr, len);
	uint64_t page = (addr & ~(uint64_t)(NVME_PAGE_SIZE - 1)) + NVME_PAGE_SIZE;
	uint32_t k = 0; /* index into list[] (spans chained pages) */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t in_page = k & 511u;
		if (in_page == 511u && n - i > 1) {
			/* last slot of a full page chains to the next page */
			list[k] = list_dma + (uint64_t)(k + 1) * 8u;
			k++;
		}
		list[k++] = page;
		page += NVME_PAGE_SIZE;
	}
}

/* Build an NVM Read/Write/Flush SQE (NVM Command Set 3.2.4 Read, 3.2.6 Write, Base
 * 7.1 Flush): 'nlb' blocks, 1's based, of 2^lba_shift bytes at 'slba', buffer at DMA
 * address 'addr' with PRP list 'prp_list' when it spans more than two pages. */
BAM_HD_INLINE void bam_sqe_rw(struct nvme_sqe *s, uint8_t opc, uint32_t nsid, uint64_t slba,
			      uint32_t nlb, uint32_t lba_shift, uint64_t addr, uint64_t prp_list)
{
	uint64_t *w = (uint64_t *)s;
	for (int i = 0; i < 8; i++)
		w[i] = 0;
	s->opc = opc;
	s->nsid = nsid;
	if (opc != NVME_CMD_FLUSH) {
		s->cdw10 = (uint32_t)slba;
		s->cdw11 = (uint32_t)(slba >> 32);
		s->cdw12 = (nlb - 1u) & NVME_RW_NLB_MASK;
		bam_sqe_set_prp(s, addr, nlb << lba_shift, prp_list);
	}
}

/* An I/O in flight: what bam_dev_io_submit returns and bam_dev_io_wait takes. */
struct bam_io {
	struct bam_qpair *qp;
	uint64_t deadline;
	uint32_t cq_pos;        /* bam_dev_io_wait_nohelp: where its CQE was */
	uint32_t cq_lag;        /* and how many CQEs before it the CQ head had not passed */
	uint16_t cid;
};

/* Submit one I/O to controller c without waiting for its completion (see bam_dev_io).
 * wait_credit 0: do not wait for room when the queue pair is full, return -EAGAIN (for
 * a thread that has I/Os of its own in flight on it: it waits for its oldest, then
 * tries again; see bam_qpair_submit_ex). Returns 0,
 * -EINVAL (c out of range), -EIO (queue pair broken), -EAGAIN (wait_credit 0, full) or
 * -ETIMEDOUT (the queue pair stayed full with no completion for d->timeout_ns:
 * bam_qpair_submit). The wait for the completion (bam_dev_io_wait) is bounded by
 * d->timeout_ns from the submission. */
BAM_HD_INLINE int bam_dev_io_submit_ex(struct bam_dev *d, uint32_t c, uint64_t hint, uint8_t opc,
				       uint64_t slba, uint32_t nlb, uint64_t addr, uint64_t prp_list,
				       struct bam_io *io, int wait_credit)
{
	if (c >= d->n_ctrl)
		return -EINVAL;
	struct bam_dev_ctrl *ctl = &d->ctrl[c];
	struct nvme_sqe s;
	bam_sqe_rw(&s, opc, ctl->nsid, slba, nlb, ctl->lba_shift, addr, prp_list);
	io->qp = &ctl->qps[bam_dev_queue_pick(d, hint)];
	int rc = bam_qpair_submit_ex(io->qp, &s, bam_time_ns() + d->timeout_ns, &io->cid, wait_credit);
	/* the completion's bound counts from the submission, as an NVMe command
	 * timeout does, not from the start of a wait for queue room */
	io->deadline = bam_time_ns() + d->timeout_ns;
	return rc;
}

/* bam_dev_io_submit_ex that waits for room (wait_credit 1). */
BAM_HD_INLINE int bam_dev_io_submit(struct bam_dev *d, uint32_t c, uint64_t hint, uint8_t opc,
				    uint64_t slba, uint32_t nlb, uint64_t addr, uint64_t prp_list,
				    struct bam_io *io)
{
	return bam_dev_io_submit_ex(d, c, hint, opc, slba, nlb, addr, prp_list, io, 1);
}

/* Wait for an I/O from bam_dev_io_submit: 0 with the NVMe status in *status, or
 * -ETIMEDOUT. */
BAM_HD_INLINE int bam_dev_io_wait(struct bam_io *io, uint16_t *status)
{
	return bam_qpair_wait(io->qp, io->cid, io->deadline, status);
}

/* bam_dev_io_wait that leaves its queue pair's CQ head to the caller: 0 with the NVMe
 * status in *status (the caller must then call bam_dev_io_help(io) once it has
 * published what the data was for), or -ETIMEDOUT (nothing to help). See
 * bam_qpair_wait_pos. */
BAM_HD_INLINE int bam_dev_io_wait_nohelp(struct bam_io *io, uint16_t *status)
{
	return bam_qpair_wait_pos(io->qp, io->cid, io->deadline, status, &io->cq_pos, &io->cq_lag);
}

/* Help io's queue pair's CQ head past io's CQE (after bam_dev_io_wait_nohelp returned
 * 0): a bounded number of tries (bam_qpair_help_head). */
BAM_HD_INLINE void bam_dev_io_help(const struct bam_io *io)
{
	bam_qpair_help_head(io->qp, io->cq_pos);
}

/* The same only when the CQ head lagged far behind io's CQE (bam_qpair_help_lazy):
 * otherwise the CQE is left to the queue pair's next head move. */
BAM_HD_INLINE void bam_dev_io_help_lazy(const struct bam_io *io)
{
	bam_qpair_help_lazy(io->qp, io->cq_pos, io->cq_lag);
}

/*
 * One NVMe I/O from the calling thread: opc = NVME_CMD_READ / WRITE / FLUSH on
 * controller 'c', 'nlb' logical blocks (1's based) from 'slba', to/from the buffer at
 * DMA address 'addr' (bytes = nlb << lba_shift) with PRP list 'prp_list' if needed.
 * Queue pair chosen by bam_dev_queue_pick(hint). Stores the NVMe status (0 = success)
 * in *status. Returns 0 (status may still be non-zero), -EINVAL (c out of range),
 * -ETIMEDOUT (no completion within d->timeout_ns). Does not record errors.
 */
BAM_HD_INLINE int bam_dev_io(struct bam_dev *d, uint32_t c, uint64_t hint, uint8_t opc,
			     uint64_t slba, uint32_t nlb, uint64_t addr, uint64_t prp_list,
			     uint16_t *status)
{
	struct bam_io io;
	int rc = bam_dev_io_submit(d, c, hint, opc, slba, nlb, addr, prp_list, &io);
	if (rc)
		return rc;
	return bam_dev_io_wait(&io, status);
}

#endif /* BAM_DEV_H */
