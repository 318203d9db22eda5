/* SPDX-License-Identifier: MIT */
/*
 * fuzz_graph_file.c - libFuzzer harness of the graph file reader (apps/graph/src/csr_file.c)
 * on arbitrary bytes: a corrupted or hand-made .bcsr file.
 *
 * Input layout: byte 0 says which checksums the harness makes right before writing the
 * rest as the file, so that the fuzzer gets past them to the fields behind:
 *   bit 0  header_crc32 (computed last)
 *   bit 1  offsets_crc32 and edges_crc32, over the ranges the header names (when they
 *          lie inside the input)
 * Then bam_graph_header_read, bam_graph_verify, bam_graph_degrees and
 * bam_graph_load run on the file. Errors are fine; what each accepts must keep its
 * contract (apps/graph/include/bam/graph.h):
 *   - header_read: magic, version, flags, id width, sizes, and both arrays inside the
 *     file, 4096-aligned, in order, after the header;
 *   - verify: all of that, both crc32s (recomputed here), and every graph invariant;
 *     a verified file also loads, and the reference BFS and CC run on it;
 *   - degrees: min <= max, counts <= n; on a verified file min <= mean <= max;
 *   - load: offsets start at 0, never decrease, end at n_edges (bounds of every index).
 */
#include <sys/stat.h>
#include <zlib.h>
#include "fuzz_graph.h"

static uint32_t fz_crc_range(const uint8_t *f, size_t size, uint64_t off, uint64_t len, int *ok)
{
	if (off > size || len > size - off) {
		*ok = 0;
		return 0;
	}
	*ok = 1;
	return (uint32_t)crc32(0, f + off, (uInt)len);
}

/* Everything header_read promises, from the header and the file size alone. */
static void fz_check_header(const struct bam_graph_header *h, uint64_t file_size)
{
	FZ_CHECK(memcmp(h->magic, BAM_GRAPH_MAGIC, BAM_GRAPH_MAGIC_LEN) == 0);
	FZ_CHECK(h->version == BAM_GRAPH_VERSION);
	FZ_CHECK((h->flags & ~BAM_GRAPH_F_ALL) == 0);
	FZ_CHECK(h->id_bytes == 4 || h->id_bytes == 8);
	if (h->id_bytes == 4)
		FZ_CHECK(h->n_vertices <= UINT32_MAX);
	FZ_CHECK(memchr(h->source, 0, sizeof(h->source)) != NULL);
	FZ_CHECK(h->n_vertices < UINT64_MAX / 8 && h->offsets_bytes == 8 * (h->n_vertices + 1));
	FZ_CHECK(h->n_edges <= UINT64_MAX / h->id_bytes && h->edges_bytes == h->id_bytes * h->n_edges);
	FZ_CHECK(h->offsets_offset >= BAM_GRAPH_HEADER_BYTES);
	FZ_CHECK(h->offsets_offset % BAM_GRAPH_ALIGN == 0 && h->edges_offset % BAM_GRAPH_ALIGN == 0);
	/* both arrays inside the file, in order: without wrapping around 2^64 */
	FZ_CHECK(h->offsets_offset <= file_size && h->offsets_bytes <= file_size - h->offsets_offset);
	FZ_CHECK(h->edges_offset >= h->offsets_offset + h->offsets_bytes);
	FZ_CHECK(h->edges_offset <= file_size && h->edges_bytes <= file_size - h->edges_offset);
}

static int fz_graph_file_input(const uint8_t *data, size_t size)
{
	struct bam_graph_header h;
	struct bam_graph_degree_stats ds;
	struct bam_csr g;
	char path[320], err[512];
	int ok_o = 0, ok_e = 0;

	if (size < 1)
		return 0;
	uint8_t fix = data[0];
	size_t fsize = size - 1;
	uint8_t *f = malloc(fsize ? fsize : 1);
	FZ_CHECK(f != NULL);
	memcpy(f, data + 1, fsize);
	if (fsize >= sizeof(h)) {
		memcpy(&h, f, sizeof(h));
		if (fix & 2u) {
			uint32_t c = fz_crc_range(f, fsize, h.offsets_offset, h.offsets_bytes, &ok_o);
			if (ok_o)
				h.offsets_crc32 = c;
			c = fz_crc_range(f, fsize, h.edges_offset, h.edges_bytes, &ok_e);
			if (ok_e)
				h.edges_crc32 = c;
		}
		if (fix & 1u) {
			h.header_crc32 = 0;
			h.header_crc32 = (uint32_t)crc32(0, (const Bytef *)&h, sizeof(h));
		}
		memcpy(f, &h, sizeof(h));
	}
	fz_path(path, sizeof(path), "graph.bcsr");
	fz_write_file(path, f, fsize);

	int rh = bam_graph_header_read(path, &h, err, sizeof(err));
	if (rh == 0)
		fz_check_header(&h, fsize);
	else
		FZ_CHECK(rh < 0 && err[0]);

	int rv = bam_graph_verify(path, err, sizeof(err));
	if (rv == 0) {
		FZ_CHECK(rh == 0);
		/* verify recomputed the crc32s over exactly these ranges */
		int a, b;
		FZ_CHECK(fz_crc_range(f, fsize, h.offsets_offset, h.offsets_bytes, &a) == h.offsets_crc32 && a);
		uint32_t ce = fz_crc_range(f, fsize, h.edges_offset, h.edges_bytes, &b);
		FZ_CHECK(b && (h.edges_bytes == 0 ? h.edges_crc32 == 0 : ce == h.edges_crc32));
	} else {
		FZ_CHECK(rv < 0);
	}

	int rd = bam_graph_degrees(path, &ds, err, sizeof(err));
	if (rd == 0) {
		FZ_CHECK(rh == 0);
		FZ_CHECK(ds.n_zero <= h.n_vertices && ds.n_ge2 <= h.n_vertices);
		if (h.n_vertices)
			FZ_CHECK(ds.min <= ds.max && ds.argmax < h.n_vertices);
		/* the mean is n_edges / n: only a verified file has offsets ending at n_edges */
		if (h.n_vertices && rv == 0)
			FZ_CHECK((double)ds.min <= ds.mean * (1 + 1e-12) && ds.mean <= (double)ds.max * (1 + 1e-12));
	} else if (rv == 0) {
		FZ_CHECK(!"bam_graph_degrees accepts every verified file");
	}

	int rl = bam_graph_load(path, &g, err, sizeof(err));
	if (rl == 0) {
		FZ_CHECK(rh == 0);
		FZ_CHECK(g.n_vertices == h.n_vertices && g.n_edges == h.n_edges && g.id_bytes == h.id_bytes);
		fz_check_csr_shape(&g);
		if (rv == 0) {
			fz_check_csr_flags(&g, h.flags & ~BAM_GRAPH_F_SYMMETRIC); /* not verified */
			fz_check_ref(&g);
		}
		bam_csr_free(&g);
	} else {
		FZ_CHECK(rl < 0 && g.offsets == NULL && g.edges == NULL && g.n_vertices == 0);
		/* a verified file of a few KiB always loads */
		FZ_CHECK(rv != 0);
	}
	free(f);
	return 0;
}

#ifndef BAM_FUZZ_REPLAY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fz_graph_file_input(data, size);
}
#endif
