/* SPDX-License-Identifier: MIT */
/*
 * file_core.h - pure logic of the "file" back end (src/backends/file/file.c), apart so that
 * tests can check it without files: how an errno from the kernel becomes an NVMe
 * status, and the limits the service threads work under. Host only.
 */
#ifndef BAM_FILE_CORE_H
#define BAM_FILE_CORE_H

#include <errno.h>
#include "bam/nvme_spec.h"
#include "../../nvmet/nvmet.h"

#define FILE_MAX_QUEUES NVMET_MAX_QUEUES /* I/O queues per controller */
#define FILE_MDTS NVMET_MDTS             /* 2^8 pages = 1 MiB per command (nvmet_validate checks it) */
#define FILE_MAX_XFER ((uint32_t)NVME_PAGE_SIZE << FILE_MDTS)
/* PRP segments of one command: every page of the largest transfer, plus the first
 * page when PRP1 carries an offset (Base 4.3). */
#define FILE_MAX_SEGS (FILE_MAX_XFER / NVME_PAGE_SIZE + 1)
/* Pages of PRP list copied to the host per command on the staged path. A list for
 * FILE_MAX_XFER needs at most 257 entries, so two pages (the first possibly partial:
 * PRP2 may carry an offset), plus room for a controller that is handed short chained
 * pages; longer chains are refused (Data Transfer Error) instead of walked forever. */
#define FILE_PRP_PAGES 4u

#define FILE_DEFAULT_QD 32u      /* io_uring entries and commands in flight per thread */
#define FILE_DEFAULT_WORKERS 2u  /* service threads per file */

/*
 * The NVMe status reported for a failed read, write or flush whose system call
 * failed with 'err' (a positive errno), as a real controller would report the
 * failure behind it:
 *  - EIO: the media failed. Read: Unrecovered Read Error (SCT 2h, SC 81h); write or
 *    flush (writeback failed): Write Fault (SCT 2h, SC 80h). Base 2.0 Figure 98.
 *  - ENOSPC, EDQUOT: the file could not grow (a sparse file on a full file system):
 *    Capacity Exceeded (generic 81h), what a thin-provisioned namespace reports.
 *  - EROFS, EACCES, EPERM, EBADF on a write or flush (read-only file or mount):
 *    Access Denied (SCT 2h, SC 86h).
 *  - anything else (EINVAL from a misaligned direct I/O, EFAULT, ...): Data
 *    Transfer Error (generic 04h).
 * The core maps every non-zero status to -EIO at the API edge.
 */
static inline uint16_t bam_file_errno_status(uint8_t opc, int err)
{
	const int write = opc == NVME_CMD_WRITE || opc == NVME_CMD_FLUSH;
	switch (err) {
	case EIO:
		return write ? NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_WRITE_FAULT)
			     : NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_UNRECOVERED_READ);
	case ENOSPC:
	case EDQUOT:
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_CAP_EXCEEDED);
	case EROFS:
	case EACCES:
	case EPERM:
	case EBADF:
		if (write)
			return NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_ACCESS_DENIED);
		break;
	default:
		break;
	}
	return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR);
}

#endif /* BAM_FILE_CORE_H */
