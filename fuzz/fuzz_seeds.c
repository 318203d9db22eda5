/* SPDX-License-Identifier: MIT */
/*
 * fuzz_seeds.c - small valid inputs to start the fuzzers from (scripts/fuzz runs it).
 *   fuzz_seeds graph OUT_DIR TEXT_FILE...  import each text graph (format by name)
 *                                          and write the .bcsr files as seeds of
 *                                          fuzz_graph_file (option byte 0x03: fix crcs,
 *                                          and 0x00: leave them)
 *   fuzz_seeds sqe OUT_DIR                 valid and invalid SQEs with PRP lists in
 *                                          the layout of fuzz_emu_sqe.c
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "bam/graph.h"
#include "bam/nvme_spec.h"
#include "fuzz_common.h"

#define ARENA_PAGES 8u
#define ARENA_BYTES (ARENA_PAGES * NVME_PAGE_SIZE)
#define HDR 69u

static int read_all(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return -EIO;
	}
	*buf = malloc((size_t)n + 1);
	if (!*buf || fread(*buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(*buf);
		return -EIO;
	}
	fclose(f);
	*len = (size_t)n;
	return 0;
}

static void write_seed(const char *dir, const char *name, uint8_t prefix, const uint8_t *d, size_t n)
{
	char path[1024];
	uint8_t *b = malloc(n + 1);

	if (!b)
		abort();
	b[0] = prefix;
	memcpy(b + 1, d, n);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fz_write_file(path, b, n + 1);
	free(b);
}

static int seeds_graph(const char *dir, int argc, char **argv)
{
	struct bam_graph_build_opts o = { .threads = 1 };
	char out[1024], name[512], err[512];
	int made = 0;

	for (int i = 0; i < argc; i++) {
		const char *base = strrchr(argv[i], '/');
		uint8_t *d;
		size_t n;
		base = base ? base + 1 : argv[i];
		snprintf(out, sizeof(out), "%s/.seed.bcsr", dir);
		for (uint32_t bf = 0; bf < 8; bf += 7) {
			o.build_flags = bf;
			if (bam_graph_import(argv[i], out, BAM_GRAPH_FMT_AUTO, &o, NULL, err, sizeof(err))) {
				fprintf(stderr, "fuzz_seeds: %s\n", err);
				continue;
			}
			if (read_all(out, &d, &n) == 0) {
				snprintf(name, sizeof(name), "%s.f%u.fixed", base, bf);
				write_seed(dir, name, 0x03, d, n);
				snprintf(name, sizeof(name), "%s.f%u.asis", base, bf);
				write_seed(dir, name, 0x00, d, n);
				free(d);
				made++;
			}
			unlink(out);
		}
	}
	printf("fuzz_seeds: %d graph files in %s\n", made, dir);
	return made ? 0 : 1;
}

/* An arena address as fuzz_emu_sqe.c encodes it: any value != 0 is taken mod the
 * arena size, so offset 0 of page 0 is written as ARENA_BYTES. */
static uint64_t at(uint32_t page, uint32_t off)
{
	uint64_t v = (uint64_t)page * NVME_PAGE_SIZE + off;
	return v ? v : ARENA_BYTES;
}

struct seed_sqe {
	uint8_t buf[HDR + ARENA_BYTES];
	size_t len;
};

static void sqe_begin(struct seed_sqe *q, uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb,
		      int lba4k, uint32_t nlba_idx, uint64_t prp1, uint64_t prp2)
{
	struct nvme_sqe s;

	memset(q, 0, sizeof(*q));
	memset(&s, 0, sizeof(s));
	s.opc = opc;
	s.cid = 7;
	s.nsid = nsid;
	s.prp1 = prp1;
	s.prp2 = prp2;
	s.cdw10 = (uint32_t)slba;
	s.cdw11 = (uint32_t)(slba >> 32);
	s.cdw12 = nlb ? nlb - 1 : 0;
	memcpy(q->buf, &s, sizeof(s));
	q->buf[64] = (uint8_t)((lba4k ? 1 : 0) | (nlba_idx << 1));
	q->len = HDR;
}

/* PRP list entry k of a list that starts at arena byte 'list' */
static void sqe_entry(struct seed_sqe *q, uint64_t list, uint32_t k, uint64_t v)
{
	uint64_t off = list % ARENA_BYTES + 8u * k;
	memcpy(q->buf + HDR + off, &v, 8);
	if (HDR + off + 8 > q->len)
		q->len = HDR + off + 8;
}

static void sqe_write(const char *dir, const char *name, struct seed_sqe *q)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fz_write_file(path, q->buf, q->len);
}

static int seeds_sqe(const char *dir)
{
	struct seed_sqe q;
	uint64_t list;

	/* one 512 B LBA into page 1 */
	sqe_begin(&q, NVME_CMD_READ, 1, 0, 1, 0, 4, at(1, 0), 0);
	sqe_write(dir, "read-1lba", &q);
	/* 4 KiB from an offset: PRP2 is the second page */
	sqe_begin(&q, NVME_CMD_READ, 1, 8, 8, 0, 4, at(1, 0x200), at(2, 0));
	sqe_write(dir, "read-2pages", &q);
	/* 64 KiB write, 4 KiB LBAs: a PRP list of 15 entries on page 7 */
	list = at(7, 0);
	sqe_begin(&q, NVME_CMD_WRITE, 1, 3, 16, 1, 6, at(1, 0), list);
	for (uint32_t k = 0; k < 15; k++)
		sqe_entry(&q, list, k, at(1 + k % 6, 0));
	sqe_write(dir, "write-list", &q);
	/* 1 MiB (MDTS) read: 255 entries */
	sqe_begin(&q, NVME_CMD_READ, 1, 0, 256, 1, 7, at(2, 0), list);
	for (uint32_t k = 0; k < 255; k++)
		sqe_entry(&q, list, k, at(1 + k % 6, 0));
	sqe_write(dir, "read-mdts", &q);
	/* a list starting 16 bytes before the end of page 7: one data entry, then a chain
	 * pointer to the rest of the list on page 6 */
	list = at(7, NVME_PAGE_SIZE - 16);
	sqe_begin(&q, NVME_CMD_READ, 1, 0, 12, 1, 4, at(1, 0x100), list);
	sqe_entry(&q, list, 0, at(2, 0));
	sqe_entry(&q, list, 1, at(6, 0));
	for (uint32_t k = 0; k < 10; k++)
		sqe_entry(&q, at(6, 0), k, at(3 + k % 3, 0));
	sqe_write(dir, "read-chained", &q);
	/* a misaligned list entry (PRP Offset Invalid) */
	list = at(7, 0);
	sqe_begin(&q, NVME_CMD_READ, 1, 0, 4, 1, 4, at(1, 0), list);
	sqe_entry(&q, list, 0, at(2, 0));
	sqe_entry(&q, list, 1, at(3, 0x10));
	sqe_entry(&q, list, 2, at(4, 0));
	sqe_write(dir, "read-bad-entry", &q);
	/* flushes, a bad opcode, a bad namespace, out of range */
	sqe_begin(&q, NVME_CMD_FLUSH, 1, 0, 0, 0, 0, 0, 0);
	sqe_write(dir, "flush", &q);
	sqe_begin(&q, NVME_CMD_FLUSH, 0xffffffffu, 0, 0, 0, 0, 0, 0);
	sqe_write(dir, "flush-all", &q);
	sqe_begin(&q, 0x7f, 1, 0, 1, 0, 0, at(1, 0), 0);
	sqe_write(dir, "bad-opcode", &q);
	sqe_begin(&q, NVME_CMD_READ, 2, 0, 1, 0, 0, at(1, 0), 0);
	sqe_write(dir, "bad-nsid", &q);
	sqe_begin(&q, NVME_CMD_WRITE, 1, 250, 8, 0, 5, at(1, 0), at(2, 0));
	sqe_write(dir, "lba-range", &q);
	/* with an error LBA range 0..16 and an error rate */
	sqe_begin(&q, NVME_CMD_READ, 1, 4, 1, 0, 4, at(1, 0), 0);
	q.buf[65] = 0;
	q.buf[66] = 16;
	q.buf[67] = 100;
	sqe_write(dir, "read-err-lba", &q);
	printf("fuzz_seeds: 13 SQEs in %s\n", dir);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "graph"))
		return seeds_graph(argv[2], argc - 3, argv + 3);
	if (argc == 3 && !strcmp(argv[1], "sqe"))
		return seeds_sqe(argv[2]);
	fprintf(stderr, "usage: fuzz_seeds graph OUT_DIR TEXT_FILE... | fuzz_seeds sqe OUT_DIR\n");
	return 2;
}
