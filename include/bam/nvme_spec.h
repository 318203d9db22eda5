/* SPDX-License-Identifier: MIT */
/*
 * bam/nvme_spec.h - the NVMe wire format this project uses, and nothing else.
 *
 * Source: NVM Express Base Specification 2.0 (sections cited per item) and the NVM
 * Command Set Specification 1.0 (Read/Write/Flush). Field names follow the
 * specification: SQE, CQE, CID, NSID, SLBA, NLB, PRP1/PRP2, SQHD, SQID, phase tag.
 * No bitfields: fixed-width fields plus _SHIFT/_MASK constants with the bit ranges,
 * so the layout does not depend on the compiler or byte order (x86-64 and GPUs are
 * little-endian, as NVMe is).
 */
#ifndef BAM_NVME_SPEC_H
#define BAM_NVME_SPEC_H

#include "bam/defs.h"

/* ---- Controller registers (Base spec 3.1.3, "Controller Properties") ---------- */

/* Offsets of the memory-mapped controller registers (BAR0). */
#define NVME_REG_CAP   0x00 /* Controller Capabilities, 64 bit */
#define NVME_REG_VS    0x08 /* Version */
#define NVME_REG_INTMS 0x0c /* Interrupt Mask Set */
#define NVME_REG_INTMC 0x10 /* Interrupt Mask Clear */
#define NVME_REG_CC    0x14 /* Controller Configuration */
#define NVME_REG_CSTS  0x1c /* Controller Status */
#define NVME_REG_NSSR  0x20 /* NVM Subsystem Reset */
#define NVME_REG_AQA   0x24 /* Admin Queue Attributes */
#define NVME_REG_ASQ   0x28 /* Admin SQ Base Address, 64 bit */
#define NVME_REG_ACQ   0x30 /* Admin CQ Base Address, 64 bit */
#define NVME_REG_DBS   0x1000 /* first doorbell (SQ0TDBL) */

struct nvme_registers {
	uint64_t cap;   /* 0x00 */
	uint32_t vs;    /* 0x08 */
	uint32_t intms; /* 0x0c */
	uint32_t intmc; /* 0x10 */
	uint32_t cc;    /* 0x14 */
	uint32_t rsvd1; /* 0x18 */
	uint32_t csts;  /* 0x1c */
	uint32_t nssr;  /* 0x20 */
	uint32_t aqa;   /* 0x24 */
	uint64_t asq;   /* 0x28 */
	uint64_t acq;   /* 0x30 */
	uint8_t rsvd2[0x1000 - 0x38];
	/* doorbells follow at 0x1000 with stride (4 << CAP.DSTRD) bytes */
};

/* CAP (3.1.3.1) */
#define NVME_CAP_MQES_SHIFT   0  /* bits 15:0  Maximum Queue Entries Supported, 0's based */
#define NVME_CAP_MQES_MASK    0xffffull
#define NVME_CAP_CQR_SHIFT    16 /* bit 16     Contiguous Queues Required */
#define NVME_CAP_TO_SHIFT     24 /* bits 31:24 Timeout, 500 ms units */
#define NVME_CAP_TO_MASK      0xffull
#define NVME_CAP_DSTRD_SHIFT  32 /* bits 35:32 Doorbell Stride, 2^(2+DSTRD) bytes */
#define NVME_CAP_DSTRD_MASK   0xfull
#define NVME_CAP_CSS_SHIFT    37 /* bits 44:37 Command Sets Supported */
#define NVME_CAP_CSS_NVM      (1ull << 37)
#define NVME_CAP_MPSMIN_SHIFT 48 /* bits 51:48 Memory Page Size Minimum, 2^(12+n) */
#define NVME_CAP_MPSMAX_SHIFT 52 /* bits 55:52 Memory Page Size Maximum */
#define NVME_CAP_MPS_MASK     0xfull

#define NVME_CAP_MQES(cap)   ((uint32_t)(((cap) >> NVME_CAP_MQES_SHIFT) & NVME_CAP_MQES_MASK))
#define NVME_CAP_TO(cap)     ((uint32_t)(((cap) >> NVME_CAP_TO_SHIFT) & NVME_CAP_TO_MASK))
#define NVME_CAP_DSTRD(cap)  ((uint32_t)(((cap) >> NVME_CAP_DSTRD_SHIFT) & NVME_CAP_DSTRD_MASK))
#define NVME_CAP_MPSMIN(cap) ((uint32_t)(((cap) >> NVME_CAP_MPSMIN_SHIFT) & NVME_CAP_MPS_MASK))
#define NVME_CAP_MPSMAX(cap) ((uint32_t)(((cap) >> NVME_CAP_MPSMAX_SHIFT) & NVME_CAP_MPS_MASK))

/* VS (3.1.3.2): MJR bits 31:16, MNR 15:8, TER 7:0 */
#define NVME_VS(mjr, mnr, ter) (((uint32_t)(mjr) << 16) | ((uint32_t)(mnr) << 8) | (uint32_t)(ter))

/* CC (3.1.3.5) */
#define NVME_CC_EN          (1u << 0)  /* bit 0      Enable */
#define NVME_CC_CSS_SHIFT   4          /* bits 6:4   I/O Command Set Selected */
#define NVME_CC_MPS_SHIFT   7          /* bits 10:7  Memory Page Size, 2^(12+MPS) */
#define NVME_CC_MPS_MASK    0xfu
#define NVME_CC_AMS_SHIFT   11         /* bits 13:11 Arbitration Mechanism */
#define NVME_CC_SHN_SHIFT   14         /* bits 15:14 Shutdown Notification */
#define NVME_CC_SHN_MASK    0x3u
#define NVME_CC_SHN_NORMAL  (1u << 14)
#define NVME_CC_IOSQES_SHIFT 16        /* bits 19:16 I/O SQ entry size, 2^n (6 = 64 B) */
#define NVME_CC_IOCQES_SHIFT 20        /* bits 23:20 I/O CQ entry size, 2^n (4 = 16 B) */

/* CSTS (3.1.3.6) */
#define NVME_CSTS_RDY        (1u << 0) /* bit 0     Ready */
#define NVME_CSTS_CFS        (1u << 1) /* bit 1     Controller Fatal Status */
#define NVME_CSTS_SHST_SHIFT 2         /* bits 3:2  Shutdown Status */
#define NVME_CSTS_SHST_MASK  0x3u
#define NVME_CSTS_SHST_DONE  (2u << 2)

/* AQA (3.1.3.8): ASQS bits 11:0, ACQS bits 27:16, both 0's based */
#define NVME_AQA_ASQS_SHIFT 0
#define NVME_AQA_ACQS_SHIFT 16
#define NVME_AQA_QS_MASK    0xfffu

/* Doorbell offsets (3.1.3.x SQyTDBL / CQyHDBL) for queue y with stride DSTRD. */
#define NVME_SQ_TDBL(y, dstrd) (NVME_REG_DBS + (2u * (y)) * (4u << (dstrd)))
#define NVME_CQ_HDBL(y, dstrd) (NVME_REG_DBS + (2u * (y) + 1u) * (4u << (dstrd)))

/* ---- Submission Queue Entry (Base spec 4.2, Figure 88) ------------------------- */

struct nvme_sqe {
	uint8_t opc;    /* CDW0 bits 7:0   opcode */
	uint8_t flags;  /* CDW0 bits 15:8  FUSE (9:8), PSDT (15:14) */
	uint16_t cid;   /* CDW0 bits 31:16 command identifier */
	uint32_t nsid;  /* CDW1 namespace identifier */
	uint32_t cdw2;
	uint32_t cdw3;
	uint64_t mptr;  /* CDW4-5 metadata pointer */
	uint64_t prp1;  /* CDW6-7 data pointer: PRP entry 1 */
	uint64_t prp2;  /* CDW8-9 data pointer: PRP entry 2 or PRP list pointer */
	uint32_t cdw10;
	uint32_t cdw11;
	uint32_t cdw12;
	uint32_t cdw13;
	uint32_t cdw14;
	uint32_t cdw15;
};

#define NVME_SQE_PSDT_SHIFT 6 /* flags bits 7:6 = CDW0 bits 15:14: 0 = PRPs */
#define NVME_SQE_PSDT_MASK  0x3u
#define NVME_SQE_FUSE_MASK  0x3u

/* NVM Read/Write (NVM Command Set 3.2.4 / 3.2.6):
 * CDW10-11 = SLBA (64 bit), CDW12 bits 15:0 = NLB (0's based), bit 30 = FUA,
 * bit 31 = LR. */
#define NVME_RW_NLB_MASK  0xffffu
#define NVME_RW_FUA       (1u << 30)
#define NVME_RW_LR        (1u << 31)

BAM_HD_INLINE uint64_t nvme_sqe_slba(const struct nvme_sqe *s)
{
	return (uint64_t)s->cdw10 | ((uint64_t)s->cdw11 << 32);
}
/* Number of logical blocks, 1's based (NLB field + 1). */
BAM_HD_INLINE uint32_t nvme_sqe_nlb(const struct nvme_sqe *s)
{
	return (s->cdw12 & NVME_RW_NLB_MASK) + 1u;
}

/* ---- Completion Queue Entry (Base spec 4.6, Figure 92) ------------------------- */

struct nvme_cqe {
	uint32_t dw0;   /* command specific */
	uint32_t dw1;   /* reserved / command specific */
	uint16_t sqhd;  /* DW2 bits 15:0  SQ head pointer */
	uint16_t sqid;  /* DW2 bits 31:16 SQ identifier */
	uint16_t cid;   /* DW3 bits 15:0  command identifier */
	uint16_t status;/* DW3 bits 31:16 phase tag (bit 16) + status field */
};

/* The 16-bit 'status' half of DW3 (4.6.1, Figure 93/94): bit 0 = P (phase tag),
 * bits 8:1 = SC, bits 11:9 = SCT, bits 13:12 = CRD, bit 14 = M, bit 15 = DNR. */
#define NVME_CQE_P          0x1u
#define NVME_CQE_SC_SHIFT   1
#define NVME_CQE_SC_MASK    0xffu
#define NVME_CQE_SCT_SHIFT  9
#define NVME_CQE_SCT_MASK   0x7u
#define NVME_CQE_CRD_SHIFT  12
#define NVME_CQE_M          (1u << 14)
#define NVME_CQE_DNR        (1u << 15)

#define NVME_CQE_PHASE(st) ((st) & NVME_CQE_P)
#define NVME_CQE_SC(st)    (((st) >> NVME_CQE_SC_SHIFT) & NVME_CQE_SC_MASK)
#define NVME_CQE_SCT(st)   (((st) >> NVME_CQE_SCT_SHIFT) & NVME_CQE_SCT_MASK)

/* The status field without the phase tag: SCT, SC and DNR, as carried around this
 * project (an nvme_status: 0 = success). */
#define NVME_STATUS(sct, sc) ((uint16_t)((((sct) & 0x7u) << NVME_CQE_SCT_SHIFT) | (((sc) & 0xffu) << NVME_CQE_SC_SHIFT)))
#define NVME_STATUS_MASK     ((uint16_t)0xfffeu)
#define NVME_STATUS_SCT(s)   NVME_CQE_SCT(s)
#define NVME_STATUS_SC(s)    NVME_CQE_SC(s)
#define NVME_STATUS_DNR(s)   (((s) & NVME_CQE_DNR) != 0)

/* Status Code Types (4.6.1.2.x, Figure 95) */
#define NVME_SCT_GENERIC       0x0
#define NVME_SCT_CMD_SPECIFIC  0x1
#define NVME_SCT_MEDIA         0x2
#define NVME_SCT_PATH          0x3
#define NVME_SCT_VENDOR        0x7

/* Generic Command Status (Figure 96) */
#define NVME_SC_SUCCESS              0x00
#define NVME_SC_INVALID_OPCODE       0x01
#define NVME_SC_INVALID_FIELD        0x02
#define NVME_SC_CID_CONFLICT         0x03
#define NVME_SC_DATA_XFER_ERROR      0x04
#define NVME_SC_ABORTED_POWER_LOSS   0x05
#define NVME_SC_INTERNAL             0x06
#define NVME_SC_ABORT_REQ            0x07
#define NVME_SC_INVALID_NS           0x0b
#define NVME_SC_INVALID_PRP_OFFSET   0x13
#define NVME_SC_LBA_RANGE            0x80 /* NVM command set: LBA Out of Range */
#define NVME_SC_CAP_EXCEEDED         0x81
#define NVME_SC_NS_NOT_READY         0x82

/* Command Specific Status (Figure 97) */
#define NVME_SC_CQ_INVALID           0x00 /* Completion Queue Invalid */
#define NVME_SC_QID_INVALID          0x01 /* Invalid Queue Identifier */
#define NVME_SC_QUEUE_SIZE           0x02 /* Invalid Queue Size */
#define NVME_SC_INVALID_QUEUE_DELETE 0x0c

/* Media and Data Integrity Errors (Figure 98 and NVM Command Set) */
#define NVME_SC_WRITE_FAULT          0x80
#define NVME_SC_UNRECOVERED_READ     0x81
#define NVME_SC_GUARD_CHECK          0x82
#define NVME_SC_COMPARE_FAILURE      0x85
#define NVME_SC_ACCESS_DENIED        0x86

/* ---- Opcodes ------------------------------------------------------------------- */

/* Admin commands (Base spec 5, Figure 138) */
#define NVME_ADMIN_DELETE_SQ 0x00
#define NVME_ADMIN_CREATE_SQ 0x01
#define NVME_ADMIN_DELETE_CQ 0x04
#define NVME_ADMIN_CREATE_CQ 0x05
#define NVME_ADMIN_IDENTIFY  0x06

/* NVM I/O commands (NVM Command Set 3, Figure 18) */
#define NVME_CMD_FLUSH 0x00
#define NVME_CMD_WRITE 0x01
#define NVME_CMD_READ  0x02

/* Create I/O CQ (5.4): CDW10 = QSIZE (31:16, 0's based) | QID (15:0);
 * CDW11 = IV (31:16) | IEN (1) | PC (0). PRP1 = queue base. */
#define NVME_CREATE_Q_QSIZE_SHIFT 16
#define NVME_CREATE_CQ_PC         (1u << 0)
#define NVME_CREATE_CQ_IEN        (1u << 1)
/* Create I/O SQ (5.5): CDW11 = CQID (31:16) | QPRIO (2:1) | PC (0). */
#define NVME_CREATE_SQ_CQID_SHIFT 16
#define NVME_CREATE_SQ_PC         (1u << 0)

/* Identify (5.17): CDW10 bits 7:0 = CNS */
#define NVME_IDENTIFY_CNS_NS   0x00
#define NVME_IDENTIFY_CNS_CTRL 0x01

/* ---- Identify data structures (5.17.2.1 namespace, 5.17.2.2 controller) -------- */

struct nvme_lbaf {
	uint16_t ms;    /* metadata size */
	uint8_t lbads;  /* LBA data size, 2^n bytes */
	uint8_t rp;     /* bits 1:0 relative performance */
};

struct nvme_id_ns {
	uint64_t nsze;      /* 0   namespace size, in logical blocks */
	uint64_t ncap;      /* 8   namespace capacity */
	uint64_t nuse;      /* 16  namespace utilization */
	uint8_t nsfeat;     /* 24 */
	uint8_t nlbaf;      /* 25  number of LBA formats, 0's based */
	uint8_t flbas;      /* 26  formatted LBA size: bits 3:0 index into lbaf[] */
	uint8_t mc;         /* 27 */
	uint8_t rsvd28[128 - 28];
	struct nvme_lbaf lbaf[64]; /* 128 */
	uint8_t vs[4096 - 384];
};

struct nvme_id_ctrl {
	uint16_t vid;       /* 0 */
	uint16_t ssvid;     /* 2 */
	char sn[20];        /* 4 */
	char mn[40];        /* 24 */
	char fr[8];         /* 64 */
	uint8_t rab;        /* 72 */
	uint8_t ieee[3];    /* 73 */
	uint8_t cmic;       /* 76 */
	uint8_t mdts;       /* 77  max data transfer size, 2^n min pages (0 = none) */
	uint16_t cntlid;    /* 78 */
	uint32_t ver;       /* 80 */
	uint8_t rsvd84[512 - 84];
	uint8_t sqes;       /* 512 required (3:0) / max (7:4) SQE size, 2^n */
	uint8_t cqes;       /* 513 */
	uint16_t maxcmd;    /* 514 */
	uint32_t nn;        /* 516 number of namespaces */
	uint8_t rsvd520[4096 - 520];
};

/* Size of a memory page for PRPs with CC.MPS = 0 (the only size this project uses). */
#define NVME_PAGE_SIZE  4096u
#define NVME_PAGE_SHIFT 12

/* ---- Static checks: every size and offset (Base spec figures cited above) ------ */
BAM_STATIC_ASSERT(sizeof(struct nvme_sqe) == 64, "SQE is 64 bytes");
BAM_STATIC_ASSERT(sizeof(struct nvme_cqe) == 16, "CQE is 16 bytes");
BAM_STATIC_ASSERT(offsetof(struct nvme_sqe, cid) == 2, "CID in CDW0 31:16");
BAM_STATIC_ASSERT(offsetof(struct nvme_sqe, nsid) == 4, "NSID is CDW1");
BAM_STATIC_ASSERT(offsetof(struct nvme_sqe, mptr) == 16, "MPTR is CDW4-5");
BAM_STATIC_ASSERT(offsetof(struct nvme_sqe, prp1) == 24, "PRP1 is CDW6-7");
BAM_STATIC_ASSERT(offsetof(struct nvme_sqe, prp2) == 32, "PRP2 is CDW8-9");
BAM_STATIC_ASSERT(offsetof(struct nvme_sqe, cdw10) == 40, "CDW10");
BAM_STATIC_ASSERT(offsetof(struct nvme_sqe, cdw15) == 60, "CDW15");
BAM_STATIC_ASSERT(offsetof(struct nvme_cqe, sqhd) == 8, "SQHD is DW2 15:0");
BAM_STATIC_ASSERT(offsetof(struct nvme_cqe, sqid) == 10, "SQID is DW2 31:16");
BAM_STATIC_ASSERT(offsetof(struct nvme_cqe, cid) == 12, "CID is DW3 15:0");
BAM_STATIC_ASSERT(offsetof(struct nvme_cqe, status) == 14, "status is DW3 31:16");
BAM_STATIC_ASSERT(offsetof(struct nvme_registers, cap) == NVME_REG_CAP, "CAP");
BAM_STATIC_ASSERT(offsetof(struct nvme_registers, vs) == NVME_REG_VS, "VS");
BAM_STATIC_ASSERT(offsetof(struct nvme_registers, intms) == NVME_REG_INTMS, "INTMS");
BAM_STATIC_ASSERT(offsetof(struct nvme_registers, intmc) == NVME_REG_INTMC, "INTMC");
BAM_STATIC_ASSERT(offsetof(struct nvme_registers, cc) == NVME_REG_CC, "CC");
BAM_STATIC_ASSERT(offsetof(struct nvme_registers, csts) == NVME_REG_CSTS, "CSTS");
BAM_STATIC_ASSERT(offsetof(struct nvme_registers, nssr) == NVME_REG_NSSR, "NSSR");
BAM_STATIC_ASSERT(offsetof(struct nvme_registers, aqa) == NVME_REG_AQA, "AQA");
BAM_STATIC_ASSERT(offsetof(struct nvme_registers, asq) == NVME_REG_ASQ, "ASQ");
BAM_STATIC_ASSERT(offsetof(struct nvme_registers, acq) == NVME_REG_ACQ, "ACQ");
BAM_STATIC_ASSERT(sizeof(struct nvme_registers) == NVME_REG_DBS, "doorbells at 0x1000");
BAM_STATIC_ASSERT(sizeof(struct nvme_lbaf) == 4, "LBA format is 4 bytes");
BAM_STATIC_ASSERT(sizeof(struct nvme_id_ns) == 4096, "Identify Namespace is 4096 bytes");
BAM_STATIC_ASSERT(offsetof(struct nvme_id_ns, nlbaf) == 25, "NLBAF");
BAM_STATIC_ASSERT(offsetof(struct nvme_id_ns, flbas) == 26, "FLBAS");
BAM_STATIC_ASSERT(offsetof(struct nvme_id_ns, lbaf) == 128, "LBAF0");
BAM_STATIC_ASSERT(sizeof(struct nvme_id_ctrl) == 4096, "Identify Controller is 4096 bytes");
BAM_STATIC_ASSERT(offsetof(struct nvme_id_ctrl, mdts) == 77, "MDTS");
BAM_STATIC_ASSERT(offsetof(struct nvme_id_ctrl, sqes) == 512, "SQES");
BAM_STATIC_ASSERT(offsetof(struct nvme_id_ctrl, nn) == 516, "NN");
BAM_STATIC_ASSERT(NVME_SQ_TDBL(1, 0) == 0x1008 && NVME_CQ_HDBL(1, 0) == 0x100c, "doorbells");

BAM_EXTERN_C_BEGIN
/* Printable name of an NVMe status (SCT and SC of the 16-bit status without the phase
 * tag, as NVME_STATUS() builds it), e.g. "LBA Out of Range". Never NULL; unknown
 * codes give "Unknown status". Source: Base spec Figures 96-98. */
BAM_API const char *nvme_status_name(uint16_t status);
/* The name and, for the statuses the file and emu back ends report for a failed
 * system call (src/backends/file/file_core.h), the cause behind it, e.g. "Capacity
 * Exceeded: no space left on the media (a full file system)". One wording for every
 * command that reports it (bam bench, bfs, cc). Never NULL. */
BAM_API const char *nvme_status_cause(uint16_t status);
/* Printable name of a Status Code Type (Figure 95). */
BAM_API const char *nvme_sct_name(uint8_t sct);
BAM_EXTERN_C_END

#endif /* BAM_NVME_SPEC_H */
