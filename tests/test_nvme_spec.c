/* SPDX-License-Identifier: MIT */
/* NVMe wire format: sizes, offsets, field accessors, status names, PRP list layout. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "bam/nvme_spec.h"
#include "bam/dev.h"

static void test_sizes_and_offsets(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct nvme_sqe), 64);
	assert_int_equal(sizeof(struct nvme_cqe), 16);
	assert_int_equal(sizeof(struct nvme_id_ctrl), 4096);
	assert_int_equal(sizeof(struct nvme_id_ns), 4096);
	assert_int_equal(offsetof(struct nvme_registers, cc), 0x14);
	assert_int_equal(offsetof(struct nvme_registers, csts), 0x1c);
	assert_int_equal(offsetof(struct nvme_registers, acq), 0x30);
	assert_int_equal(NVME_SQ_TDBL(0, 0), 0x1000);
	assert_int_equal(NVME_CQ_HDBL(0, 0), 0x1004);
	assert_int_equal(NVME_SQ_TDBL(3, 1), 0x1000 + 6 * 8);
}

static void test_sqe_fields(void **state)
{
	(void)state;
	struct nvme_sqe s;
	bam_sqe_rw(&s, NVME_CMD_READ, 1, 0x123456789ull, 8, 9, 0x10000, 0);
	assert_int_equal(s.opc, 0x02);
	assert_int_equal(nvme_sqe_slba(&s), 0x123456789ull);
	assert_int_equal(nvme_sqe_nlb(&s), 8);
	assert_int_equal(s.cdw12 & 0xffff, 7); /* NLB is 0's based on the wire */
	uint8_t raw[64];
	memcpy(raw, &s, 64);
	assert_int_equal(raw[0], 0x02);           /* CDW0 7:0 opcode */
	assert_int_equal(raw[40], 0x89);          /* CDW10 = SLBA low, little endian */
	assert_int_equal(s.prp1, 0x10000);
	assert_int_equal(s.prp2, 0);              /* 4 KiB from a page start: PRP1 only */
	bam_sqe_rw(&s, NVME_CMD_WRITE, 1, 0, 8, 9, 0x10200, 0); /* 4 KiB at offset 0x200 */
	assert_int_equal(s.prp2, 0x11000);        /* crosses one page boundary */
}

static void test_cqe_status(void **state)
{
	(void)state;
	uint16_t st = NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_LBA_RANGE);
	assert_int_equal(NVME_STATUS_SCT(st), 0);
	assert_int_equal(NVME_STATUS_SC(st), 0x80);
	assert_string_equal(nvme_status_name(st), "LBA Out of Range");
	assert_string_equal(nvme_status_name(NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_UNRECOVERED_READ)), "Unrecovered Read Error");
	assert_string_equal(nvme_status_name(NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE)), "Invalid Command Opcode");
	assert_string_equal(nvme_status_name(NVME_STATUS(7, 0x55)), "Unknown status");
	assert_string_equal(nvme_sct_name(NVME_SCT_MEDIA), "Media and Data Integrity Errors");
	/* DW3 as the controller writes it: CID low half, phase in bit 16 */
	struct nvme_cqe c;
	memset(&c, 0, sizeof(c));
	c.cid = 0x1234;
	c.status = (uint16_t)(st | NVME_CQE_P);
	uint32_t dw3;
	memcpy(&dw3, (uint8_t *)&c + 12, 4);
	assert_int_equal(dw3 & 0xffff, 0x1234);
	assert_int_equal((dw3 >> 16) & 1, 1);
	assert_int_equal((dw3 >> 16) & NVME_STATUS_MASK, st);
}

static void test_cap_accessors(void **state)
{
	(void)state;
	uint64_t cap = 0x3ffull | (20ull << 24) | (2ull << 32) | NVME_CAP_CSS_NVM | (1ull << 52);
	assert_int_equal(NVME_CAP_MQES(cap), 0x3ff);
	assert_int_equal(NVME_CAP_TO(cap), 20);
	assert_int_equal(NVME_CAP_DSTRD(cap), 2);
	assert_int_equal(NVME_CAP_MPSMIN(cap), 0);
	assert_int_equal(NVME_CAP_MPSMAX(cap), 1);
}

static void test_prp_list(void **state)
{
	(void)state;
	/* 64 KiB buffer at a page boundary: 15 list entries */
	uint64_t list[1024];
	memset(list, 0, sizeof(list));
	assert_int_equal(bam_prp_list_entries(0x100000, 65536), 15);
	bam_prp_list_fill(list, 0x900000, 0x100000, 65536);
	for (int i = 0; i < 15; i++)
		assert_int_equal(list[i], 0x100000 + (uint64_t)(i + 1) * 4096);
	/* 4 MiB: 1023 entries, chained after 511 on the first page */
	uint64_t big[2048];
	memset(big, 0, sizeof(big));
	uint32_t n = bam_prp_list_entries(0, 4u << 20);
	assert_int_equal(n, 1023);
	assert_true(bam_prp_list_bytes(0, 4u << 20) >= 3 * 4096);
	bam_prp_list_fill(big, 0x800000, 0, 4u << 20);
	assert_int_equal(big[510], 511ull * 4096);      /* last data entry of page 0 */
	assert_int_equal(big[511], 0x800000 + 512 * 8); /* chain pointer to the next page */
	assert_int_equal(big[512], 512ull * 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes_and_offsets), cmocka_unit_test(test_sqe_fields),
		cmocka_unit_test(test_cqe_status), cmocka_unit_test(test_cap_accessors),
		cmocka_unit_test(test_prp_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
