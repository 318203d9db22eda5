/* SPDX-License-Identifier: MIT */
/*
 * fuzz_emu_sqe.c - libFuzzer harness of the software controllers' command checks and
 * PRP walker (src/nvmet/nvmet.h: nvmet_validate, nvmet_prp_begin/nvmet_prp_next) and
 * the emulator's fault injection (src/backends/emu/emu_core.h: emu_inject), the code that
 * turns a 64-byte SQE from a submitter into data movement.
 *
 * The emulator takes DMA addresses as pointers (identity mapping), so the harness
 * cannot hand it arbitrary addresses. Instead every address - PRP1, PRP2 and each
 * qword of the arena, where PRP list pages live - is remapped into a harness-owned,
 * page-aligned arena of FZ_ARENA_PAGES pages: 0 stays 0 (an invalid entry), anything
 * else becomes arena + (value mod arena size), which keeps the low 12 bits and so every
 * alignment error the fuzzer writes.
 *
 * Input layout:
 *   bytes 0-63   the SQE (as stored in an SQ slot)
 *   byte  64     controller: bit 0 LBA size (0: 512 B, 1: 4 KiB); bits 1-3 namespace
 *                size in LBAs (fz_nlba[])
 *   bytes 65-68  faults: err LBA range start, end (LBAs), error rate (x 4000 ppm), seed
 *   bytes 69-    the arena contents (PRP lists), zero-padded, then remapped
 * Checks:
 *   - nvmet_validate against a reference written from the spec with 128-bit arithmetic:
 *     the same status (checks in the order the emulator documents), and the transfer
 *     size exactly NLB << LBA shift on success, 0 otherwise;
 *   - the PRP walk ends (segments bounded), every segment is non-empty and lies inside
 *     one arena page, the list reads stay inside the arena (AddressSanitizer), the
 *     error is PRP Offset Invalid or Data Transfer Error; on success the segment count
 *     is what Base 4.3 gives for PRP1's offset, and the lengths sum to the transfer;
 *   - the media range the command moves lies inside the namespace;
 *   - emu_inject fails exactly the commands that touch the error LBA range (or draw
 *     the error rate) with the media status of their direction.
 */
#include <stdlib.h>
#include "fuzz_common.h"
#include "backends/emu/emu_core.h"

#define FZ_ARENA_PAGES 8u
#define FZ_ARENA_BYTES (FZ_ARENA_PAGES * NVME_PAGE_SIZE)
#define FZ_HDR 69u

static const uint64_t fz_nlba[8] = { 1, 2, 7, 8, 64, 255, 256, 512 };

static uint64_t fz_remap(uint64_t v, uint8_t *arena)
{
	return v ? (uint64_t)(uintptr_t)arena + v % FZ_ARENA_BYTES : 0;
}

/* The status nvmet_validate must give, from the spec (NVMe Base 2.0 / NVM Command Set
 * 1.0), computed without any 64-bit overflow. */
static uint16_t fz_ref_validate(const struct nvme_sqe *s, uint64_t nlba, uint32_t lba_shift,
				uint64_t *bytes)
{
	*bytes = 0;
	if (s->opc != NVME_CMD_READ && s->opc != NVME_CMD_WRITE && s->opc != NVME_CMD_FLUSH)
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE);
	if (s->opc == NVME_CMD_FLUSH && s->nsid == 0xffffffffu)
		return 0;
	if (s->nsid != 1)
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_NS);
	if ((s->flags & 0x03u) || (s->flags & 0xc0u))
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
	if (s->opc == NVME_CMD_FLUSH)
		return 0;
	unsigned __int128 slba = (uint64_t)s->cdw10 | ((uint64_t)s->cdw11 << 32);
	unsigned __int128 nlb = (s->cdw12 & 0xffffu) + 1u;
	if (slba + nlb > nlba)
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_LBA_RANGE);
	if ((nlb << lba_shift) > ((unsigned __int128)NVME_PAGE_SIZE << NVMET_MDTS))
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
	*bytes = (uint64_t)(nlb << lba_shift);
	return 0;
}

static int fz_emu_sqe_input(const uint8_t *data, size_t size)
{
	struct emu_ctrl c;
	struct nvme_sqe s;

	if (size < FZ_HDR)
		return 0;
	uint8_t *arena = aligned_alloc(NVME_PAGE_SIZE, FZ_ARENA_BYTES);
	FZ_CHECK(arena != NULL);
	memset(arena, 0, FZ_ARENA_BYTES);
	memcpy(arena, data + FZ_HDR, size - FZ_HDR < FZ_ARENA_BYTES ? size - FZ_HDR : FZ_ARENA_BYTES);
	for (uint32_t k = 0; k < FZ_ARENA_BYTES; k += 8) {
		uint64_t q;
		memcpy(&q, arena + k, 8);
		q = fz_remap(q, arena);
		memcpy(arena + k, &q, 8);
	}
	memcpy(&s, data, sizeof(s));
	s.prp1 = fz_remap(s.prp1, arena);
	s.prp2 = fz_remap(s.prp2, arena);

	memset(&c, 0, sizeof(c));
	c.nvmet.lba_shift = (data[64] & 1u) ? 12 : 9;
	c.nvmet.nlba = fz_nlba[(data[64] >> 1) & 7u];
	c.f.err_slba = data[65];
	c.f.err_elba = data[66];
	c.f.err_rate_ppm = data[67] * 4000u;
	c.f.seed = data[68];
	uint64_t media_bytes = c.nvmet.nlba << c.nvmet.lba_shift;

	/* 1. validation */
	uint32_t bytes = 12345;
	uint64_t ref_bytes;
	uint16_t st = nvmet_validate(&c.nvmet, &s, &bytes);
	uint16_t ref = fz_ref_validate(&s, c.nvmet.nlba, c.nvmet.lba_shift, &ref_bytes);
	FZ_CHECK(st == ref);
	FZ_CHECK(bytes == ref_bytes);
	if (st) {
		free(arena);
		return 0;
	}
	uint64_t slba = nvme_sqe_slba(&s);
	if (s.opc != NVME_CMD_FLUSH)
		FZ_CHECK(bytes > 0 && (slba << c.nvmet.lba_shift) + bytes <= media_bytes);

	/* 2. the PRP walk (emu_exec_host moves each segment as it is produced) */
	if (bytes) {
		struct nvmet_prp_iter it;
		uint64_t addr = 0, total = 0, segs = 0, off = slba << c.nvmet.lba_shift;
		uint64_t lo = (uint64_t)(uintptr_t)arena, hi = lo + FZ_ARENA_BYTES;
		uint32_t len = 0;
		int r;
		nvmet_prp_begin(&it, &s, bytes);
		while ((r = nvmet_prp_next(&it, &addr, &len)) > 0) {
			FZ_CHECK(++segs <= bytes / 4 + 1);
			FZ_CHECK(len > 0 && len <= NVME_PAGE_SIZE);
			FZ_CHECK(addr >= lo && addr < hi && len <= hi - addr);
			/* a segment never crosses a page boundary */
			FZ_CHECK((addr & (NVME_PAGE_SIZE - 1)) + len <= NVME_PAGE_SIZE);
			if (segs > 1)
				FZ_CHECK((addr & (NVME_PAGE_SIZE - 1)) == 0);
			FZ_CHECK(off + len <= media_bytes);
			off += len;
			total += len;
		}
		if (r == 0) {
			uint64_t first = NVME_PAGE_SIZE - (s.prp1 & (NVME_PAGE_SIZE - 1));
			uint64_t want = 1 + (bytes > first ? (bytes - first + NVME_PAGE_SIZE - 1) / NVME_PAGE_SIZE : 0);
			FZ_CHECK(total == bytes);
			FZ_CHECK(segs == want);
		} else {
			uint16_t e = (uint16_t)-r;
			FZ_CHECK(e == NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_PRP_OFFSET) ||
				 e == NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR));
			FZ_CHECK(total < bytes);
		}
	}

	/* 3. fault injection */
	int drop = 7;
	uint64_t extra = 7;
	uint64_t id = fz_le64(data + 8);
	uint16_t fst = emu_inject(&c, &s, id, &drop, &extra);
	FZ_CHECK(drop == 0 && extra == 0); /* no drop or delay configured */
	int in_range = 0;
	if (s.opc != NVME_CMD_FLUSH)
		in_range = c.f.err_elba > c.f.err_slba && slba < c.f.err_elba &&
			   slba + nvme_sqe_nlb(&s) > c.f.err_slba;
	uint16_t media_err = s.opc == NVME_CMD_WRITE ? NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_WRITE_FAULT)
						     : NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_UNRECOVERED_READ);
	if (in_range)
		FZ_CHECK(fst == media_err);
	else
		FZ_CHECK(fst == 0 || (c.f.err_rate_ppm && fst == media_err));
	FZ_CHECK(c.nvmet.cnt.injected == (fst ? 1u : 0u));
	free(arena);
	return 0;
}

#ifndef BAM_FUZZ_REPLAY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fz_emu_sqe_input(data, size);
}
#endif
