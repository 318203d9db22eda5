/* SPDX-License-Identifier: MIT */
/* Printable names of NVMe status codes (Base spec 2.0 Figures 95-98; NVM Command Set
 * 1.0 Figure 15 for the NVM-specific generic codes 80h-82h). */
#include "bam/nvme_spec.h"

const char *nvme_sct_name(uint8_t sct)
{
	switch (sct) {
	case NVME_SCT_GENERIC: return "Generic Command Status";
	case NVME_SCT_CMD_SPECIFIC: return "Command Specific Status";
	case NVME_SCT_MEDIA: return "Media and Data Integrity Errors";
	case NVME_SCT_PATH: return "Path Related Status";
	case NVME_SCT_VENDOR: return "Vendor Specific";
	default: return "Reserved";
	}
}

const char *nvme_status_name(uint16_t status)
{
	uint8_t sct = NVME_STATUS_SCT(status), sc = NVME_STATUS_SC(status);
	switch (sct) {
	case NVME_SCT_GENERIC:
		switch (sc) {
		case NVME_SC_SUCCESS: return "Successful Completion";
		case NVME_SC_INVALID_OPCODE: return "Invalid Command Opcode";
		case NVME_SC_INVALID_FIELD: return "Invalid Field in Command";
		case NVME_SC_CID_CONFLICT: return "Command ID Conflict";
		case NVME_SC_DATA_XFER_ERROR: return "Data Transfer Error";
		case NVME_SC_ABORTED_POWER_LOSS: return "Commands Aborted due to Power Loss Notification";
		case NVME_SC_INTERNAL: return "Internal Error";
		case NVME_SC_ABORT_REQ: return "Command Abort Requested";
		case NVME_SC_INVALID_NS: return "Invalid Namespace or Format";
		case NVME_SC_INVALID_PRP_OFFSET: return "PRP Offset Invalid";
		case NVME_SC_LBA_RANGE: return "LBA Out of Range";
		case NVME_SC_CAP_EXCEEDED: return "Capacity Exceeded";
		case NVME_SC_NS_NOT_READY: return "Namespace Not Ready";
		}
		break;
	case NVME_SCT_CMD_SPECIFIC:
		switch (sc) {
		case NVME_SC_CQ_INVALID: return "Completion Queue Invalid";
		case NVME_SC_QID_INVALID: return "Invalid Queue Identifier";
		case NVME_SC_QUEUE_SIZE: return "Invalid Queue Size";
		case NVME_SC_INVALID_QUEUE_DELETE: return "Invalid Queue Deletion";
		}
		break;
	case NVME_SCT_MEDIA:
		switch (sc) {
		case NVME_SC_WRITE_FAULT: return "Write Fault";
		case NVME_SC_UNRECOVERED_READ: return "Unrecovered Read Error";
		case NVME_SC_GUARD_CHECK: return "End-to-end Guard Check Error";
		case NVME_SC_COMPARE_FAILURE: return "Compare Failure";
		case NVME_SC_ACCESS_DENIED: return "Access Denied";
		}
		break;
	}
	return "Unknown status";
}

const char *nvme_status_cause(uint16_t status)
{
	if (NVME_STATUS_SCT(status) == NVME_SCT_GENERIC && NVME_STATUS_SC(status) == NVME_SC_CAP_EXCEEDED)
		return "Capacity Exceeded: no space left on the media (a full file system)";
	if (NVME_STATUS_SCT(status) == NVME_SCT_MEDIA && NVME_STATUS_SC(status) == NVME_SC_ACCESS_DENIED)
		return "Access Denied: the media cannot be written (a read-only file or file system)";
	if (NVME_STATUS_SCT(status) == NVME_SCT_MEDIA && NVME_STATUS_SC(status) == NVME_SC_WRITE_FAULT)
		return "Write Fault: the media failed a write (an I/O error of the file system or device)";
	return nvme_status_name(status);
}
