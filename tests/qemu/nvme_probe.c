/* SPDX-License-Identifier: MIT */
/*
 * nvme_probe BACKEND [write]: raw commands through bam's queues on the CPU target,
 * for the QEMU tests (tests/qemu/guest.sh) against a real NVMe controller:
 *  - the last LBA of each namespace reads; the LBA after it must complete with the
 *    controller's own LBA Out of Range status (the core does not check raw commands);
 *  - with 'write' (the string must grant allow_write=1): 64 blocks of a pattern written
 *    at LBA 8 with one command (a PRP list), read back with another, compared.
 * Prints what it saw; exit 0 when all held.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bam/bam.h"
#include "bam/dev.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: nvme_probe BACKEND [write]\n");
		return 2;
	}
	const int wr = argc > 2 && !strcmp(argv[2], "write");
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = 2, .queue_depth = 16, .timeout_ns = 5000000000ull};
	struct bam_ctx *ctx;
	char err[512];
	int rc = bam_ctx_open(argv[1], &o, &ctx, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "nvme_probe: %s\n", err);
		return 1;
	}
	printf("opened %s\n", bam_ctx_backend_desc(ctx));
	struct bam_dev *d = bam_ctx_dev(ctx);
	int bad = 0;
	uint8_t *buf = bam_mem_alloc(ctx, BAM_MEM_DEVICE, 64 * 4096);
	uint64_t *prp = bam_mem_alloc(ctx, BAM_MEM_DEVICE, 4096);
	for (uint32_t c = 0; c < bam_ctx_ctrl_count(ctx); c++) {
		struct bam_ns_info ns;
		bam_ctx_ns_info(ctx, c, &ns);
		printf("controller %u: %s, nsid %u, %llu LBAs of %u B, MDTS %u B, MQES %u\n", c, ns.model, ns.nsid,
		       (unsigned long long)ns.nlba, ns.lba_size, ns.mdts_bytes, ns.mqes);
		uint16_t st = 0xffff;
		rc = bam_dev_io(d, c, 0, NVME_CMD_READ, ns.nlba - 1, 1, (uint64_t)(uintptr_t)buf, 0, &st);
		printf("  read LBA %llu (the last): rc %d, status %s\n", (unsigned long long)ns.nlba - 1, rc,
		       nvme_status_name(st));
		bad |= rc || st;
		rc = bam_dev_io(d, c, 0, NVME_CMD_READ, ns.nlba, 1, (uint64_t)(uintptr_t)buf, 0, &st);
		printf("  read LBA %llu (one past the end): rc %d, status %s (SCT %u SC 0x%02x)\n", (unsigned long long)ns.nlba,
		       rc, nvme_status_name(st), NVME_STATUS_SCT(st), NVME_STATUS_SC(st));
		bad |= rc || NVME_STATUS_SCT(st) != NVME_SCT_GENERIC || NVME_STATUS_SC(st) != NVME_SC_LBA_RANGE;
		if (wr) {
			const uint32_t bytes = 64 * 4096, nlb = bytes / ns.lba_size;
			for (uint32_t i = 0; i < bytes; i++)
				buf[i] = (uint8_t)(i * 7 + c + 1);
			bam_prp_list_fill(prp, (uint64_t)(uintptr_t)prp, (uint64_t)(uintptr_t)buf, bytes);
			rc = bam_dev_io(d, c, 1, NVME_CMD_WRITE, 8, nlb, (uint64_t)(uintptr_t)buf, (uint64_t)(uintptr_t)prp, &st);
			printf("  write %u B at LBA 8 (PRP list): rc %d, status %s\n", bytes, rc, nvme_status_name(st));
			bad |= rc || st;
			memset(buf, 0, bytes);
			rc = bam_dev_io(d, c, 2, NVME_CMD_READ, 8, nlb, (uint64_t)(uintptr_t)buf, (uint64_t)(uintptr_t)prp, &st);
			uint32_t diff = 0;
			for (uint32_t i = 0; i < bytes; i++)
				diff += buf[i] != (uint8_t)(i * 7 + c + 1);
			printf("  read back: rc %d, status %s, %u bytes differ\n", rc, nvme_status_name(st), diff);
			bad |= rc || st || diff;
		}
	}
	bam_mem_free(ctx, BAM_MEM_DEVICE, buf);
	bam_mem_free(ctx, BAM_MEM_DEVICE, prp);
	bam_ctx_close(ctx);
	printf("%s\n", bad ? "FAILED" : "ok");
	return bad;
}
