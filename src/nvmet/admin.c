/* SPDX-License-Identifier: MIT */
/*
 * Admin commands of the software controllers (the back ends on the nvmet front end):
 * Identify (Base spec 5.17: CNS 01h controller, 00h namespace), Create I/O CQ (5.4),
 * Create I/O SQ (5.5), Delete I/O SQ/CQ (5.6, 5.7). Executed synchronously on the
 * host, on the controller-side queue table (struct nvmet_queue, index = QID).
 */
#include <stdio.h>
#include <string.h>
#include "nvmet.h"

static void pad_copy(char *dst, size_t n, const char *src)
{
	size_t l = strlen(src);
	memset(dst, ' ', n);
	memcpy(dst, src, l > n ? n : l);
}

uint16_t nvmet_admin_exec(struct nvmet_ctrl *h, uint32_t max_queues, uint8_t mdts, const char *sn,
			  const char *mn, const struct nvme_sqe *s, void *data)
{
	switch (s->opc) {
	case NVME_ADMIN_IDENTIFY: {
		uint8_t cns = s->cdw10 & 0xff;
		if (!data)
			return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR);
		if (cns == NVME_IDENTIFY_CNS_CTRL) {
			struct nvme_id_ctrl *id = data;
			memset(id, 0, sizeof(*id));
			id->vid = 0xbaba;
			pad_copy(id->sn, sizeof(id->sn), sn);
			pad_copy(id->mn, sizeof(id->mn), mn);
			pad_copy(id->fr, sizeof(id->fr), "0.1");
			id->mdts = mdts;
			id->ver = NVME_VS(2, 0, 0);
			id->sqes = 0x66; /* 64-byte SQEs */
			id->cqes = 0x44; /* 16-byte CQEs */
			id->maxcmd = 0xffff;
			id->nn = 1;
			return 0;
		}
		if (cns == NVME_IDENTIFY_CNS_NS) {
			if (s->nsid != 1)
				return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_NS);
			struct nvme_id_ns *id = data;
			memset(id, 0, sizeof(*id));
			id->nsze = id->ncap = id->nuse = h->nlba;
			id->lbaf[0].lbads = (uint8_t)h->lba_shift; /* one format, FLBAS = 0 */
			return 0;
		}
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
	}
	case NVME_ADMIN_CREATE_CQ:
	case NVME_ADMIN_CREATE_SQ: {
		uint32_t qid = s->cdw10 & 0xffff, qsize = (s->cdw10 >> 16) + 1;
		if (qid == 0 || qid > max_queues)
			return NVME_STATUS(NVME_SCT_CMD_SPECIFIC, NVME_SC_QID_INVALID);
		if (qsize < 2 || qsize > 65536)
			return NVME_STATUS(NVME_SCT_CMD_SPECIFIC, NVME_SC_QUEUE_SIZE);
		/* only physically contiguous, page-aligned queues (PC = 1) */
		if (!(s->cdw11 & 1u) || !s->prp1 || (s->prp1 & (NVME_PAGE_SIZE - 1)))
			return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
		struct nvmet_queue *q = &h->q[qid];
		if (s->opc == NVME_ADMIN_CREATE_CQ) {
			q->cq = (struct nvme_cqe *)(uintptr_t)s->prp1;
			q->depth = qsize;
			q->cq_tail = 0;
			q->phase = 1;
			return 0;
		}
		uint32_t cqid = s->cdw11 >> 16;
		if (cqid != qid || !q->cq)
			return NVME_STATUS(NVME_SCT_CMD_SPECIFIC, NVME_SC_CQ_INVALID);
		if (qsize != q->depth)
			return NVME_STATUS(NVME_SCT_CMD_SPECIFIC, NVME_SC_QUEUE_SIZE);
		q->sq = (struct nvme_sqe *)(uintptr_t)s->prp1;
		q->sq_head = 0;
		q->sqid = qid;
		q->created = 1;
		if (qid > h->nq)
			h->nq = qid;
		return 0;
	}
	case NVME_ADMIN_DELETE_SQ:
	case NVME_ADMIN_DELETE_CQ: {
		uint32_t qid = s->cdw10 & 0xffff;
		if (qid == 0 || qid > max_queues || !h->q[qid].cq)
			return NVME_STATUS(NVME_SCT_CMD_SPECIFIC, NVME_SC_QID_INVALID);
		h->q[qid].created = 0;
		if (s->opc == NVME_ADMIN_DELETE_CQ)
			h->q[qid].cq = NULL;
		return 0;
	}
	default:
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE);
	}
}
