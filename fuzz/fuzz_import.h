/* SPDX-License-Identifier: MIT */
/*
 * fuzz_import.h - the body of the importer harnesses (fuzz_import_*.c): write the
 * fuzz input to a file, import it with bam_graph_import, and check what came out.
 *
 * Input layout: byte 0 selects the build options, the rest is the text file.
 *   bits 0-2  BAM_GRAPH_BUILD_SYMMETRIZE / DROP_SELF_LOOPS / DEDUP
 *   bits 3-4  id_bytes: 0 auto, 1 -> 4, 2 -> 8, 3 auto
 *   bits 5-6  edge buffer (mem_limit): default, 8 B, 64 B, 4 KiB; the small ones force
 *             one input pass per chunk of vertices
 *   bit  7    3 worker threads instead of 1
 * Errors are fine (a malformed input must give a negative errno and a message).
 * On success:
 *   - bam_graph_header_read and bam_graph_verify accept the output (crc32s, offsets
 *     monotonic, ids in range, lists ascending, the flags' guarantees);
 *   - bam_graph_load gives the same graph and every flag holds (symmetry included);
 *   - the statistics agree with the file (n, m, id width, size; arcs accounted for);
 *   - SNAP and arc lists: the graph is exactly the one a simple second parse of the
 *     text gives (n = largest id + 1, every arc, options applied, lists sorted);
 *   - the CPU reference BFS and CC give consistent labellings.
 * On failure: no output and no temporary file is left behind.
 * Inputs that declare or use vertex ids in [2^16, 2^40) are skipped: they are valid
 * but make the importer allocate 8 bytes per vertex up to terabytes (the libFuzzer
 * memory limit would report them). Ids >= 2^40 stay: they must fail cleanly (-ENOMEM
 * or -EINVAL), without an overflowed allocation.
 */
#ifndef BAM_FUZZ_IMPORT_H
#define BAM_FUZZ_IMPORT_H

#include <dirent.h>
#include <sys/stat.h>
#include <zlib.h>
#include "fuzz_graph.h"

#define FZ_ID_SKIP_LO (1ull << 16)
#define FZ_ID_SKIP_HI (1ull << 40)
#define FZ_TEXT_MAX (1u << 20) /* decompressed bytes scanned; larger inputs are skipped */

/* The input as the importer reads it (decompressed), for the oracle. */
static unsigned char fz_text[FZ_TEXT_MAX + 1];
static size_t fz_text_len;

/* Read 'path' through zlib (plain or gzip, as the importer does) into fz_text and
 * reject inputs with a decimal number in [FZ_ID_SKIP_LO, FZ_ID_SKIP_HI) or that
 * inflate to more than FZ_TEXT_MAX bytes. Returns 1 when the input is to be imported. */
static inline int fz_import_wanted(const char *path)
{
	gzFile gz = gzopen(path, "rb");
	uint64_t v = 0;
	int in_num = 0, big = 0, got;

	fz_text_len = 0;
	if (!gz)
		return 1; /* the importer reports it */
	while ((got = gzread(gz, fz_text + fz_text_len, (unsigned)(sizeof(fz_text) - fz_text_len))) > 0) {
		const unsigned char *buf = fz_text + fz_text_len;
		fz_text_len += (size_t)got;
		if (fz_text_len > FZ_TEXT_MAX) {
			gzclose(gz);
			return 0;
		}
		for (int i = 0; i < got; i++) {
			unsigned c = buf[i];
			if (c >= '0' && c <= '9') {
				if (!in_num) {
					in_num = 1;
					v = 0;
					big = 0;
				}
				if (v > (UINT64_MAX - 9) / 10)
					big = 1;
				else
					v = v * 10 + (c - '0');
				continue;
			}
			if (in_num && !big && v >= FZ_ID_SKIP_LO && v < FZ_ID_SKIP_HI) {
				gzclose(gz);
				return 0;
			}
			in_num = 0;
		}
	}
	gzclose(gz);
	return !(in_num && !big && v >= FZ_ID_SKIP_LO && v < FZ_ID_SKIP_HI);
}

/* ---- oracle for edge lists (SNAP, arcs) ------------------------------------------ */

struct fz_arc {
	uint64_t u, v;
};

static int fz_arc_cmp(const void *a, const void *b)
{
	const struct fz_arc *x = a, *y = b;
	if (x->u != y->u)
		return x->u < y->u ? -1 : 1;
	return x->v < y->v ? -1 : x->v > y->v;
}

static inline int fz_blank(unsigned c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* An import of an edge list succeeded: so every line is blank, a '#'/'%' comment or
 * "u v" (import.c's grammar). Parse fz_text again, this simple way, apply the build
 * options, and compare with the graph the file holds: n, and every neighbour list. */
static inline void fz_oracle_edge_list(const struct bam_graph_build_opts *o, const struct bam_csr *g)
{
	size_t cap = fz_text_len / 2 + 1, m = 0, i = 0;
	struct fz_arc *arcs = malloc(cap * 2 * sizeof(*arcs));
	uint64_t n = 0;

	FZ_CHECK(arcs != NULL);
	while (i < fz_text_len) {
		uint64_t id[2];
		int k = 0;
		while (i < fz_text_len && fz_blank(fz_text[i]))
			i++;
		if (i < fz_text_len && (fz_text[i] == '#' || fz_text[i] == '%')) {
			while (i < fz_text_len && fz_text[i] != '\n')
				i++;
		}
		while (i < fz_text_len && fz_text[i] != '\n') {
			if (fz_blank(fz_text[i])) {
				i++;
				continue;
			}
			FZ_CHECK(k < 2 && fz_text[i] >= '0' && fz_text[i] <= '9');
			id[k] = 0;
			while (i < fz_text_len && fz_text[i] >= '0' && fz_text[i] <= '9')
				id[k] = id[k] * 10 + (uint64_t)(fz_text[i++] - '0');
			k++;
		}
		i++; /* the newline */
		if (k == 0)
			continue;
		FZ_CHECK(k == 2);
		uint64_t mx = id[0] > id[1] ? id[0] : id[1];
		if (mx + 1 > n)
			n = mx + 1; /* every id counts, even in a dropped self-loop */
		if (id[0] == id[1] && (o->build_flags & BAM_GRAPH_BUILD_DROP_SELF_LOOPS))
			continue;
		FZ_CHECK(m + 2 <= 2 * cap);
		arcs[m].u = id[0];
		arcs[m++].v = id[1];
		if (id[0] != id[1] && (o->build_flags & BAM_GRAPH_BUILD_SYMMETRIZE)) {
			arcs[m].u = id[1];
			arcs[m++].v = id[0];
		}
	}
	qsort(arcs, m, sizeof(*arcs), fz_arc_cmp);
	if (o->build_flags & BAM_GRAPH_BUILD_DEDUP) {
		size_t w = 0;
		for (size_t r = 0; r < m; r++)
			if (w == 0 || fz_arc_cmp(&arcs[w - 1], &arcs[r]) != 0)
				arcs[w++] = arcs[r];
		m = w;
	}
	FZ_CHECK(g->n_vertices == n);
	FZ_CHECK(g->n_edges == m);
	for (uint64_t u = 0, e = 0; u < n; u++) {
		for (uint64_t x = g->offsets[u]; x < g->offsets[u + 1]; x++, e++) {
			FZ_CHECK(arcs[e].u == u);
			FZ_CHECK(arcs[e].v == bam_csr_edge(g, x));
		}
	}
	free(arcs);
}

/* No "out.bcsr.tmp.*" may survive an import, whatever its result. */
static inline void fz_check_no_temp_left(void)
{
	DIR *d = opendir(fz_dir());
	struct dirent *e;

	FZ_CHECK(d != NULL);
	while ((e = readdir(d)) != NULL)
		FZ_CHECK(strncmp(e->d_name, "out.bcsr.tmp.", 13) != 0);
	closedir(d);
}

static inline void fz_import_opts(uint8_t sel, struct bam_graph_build_opts *o)
{
	static const uint32_t id_bytes[4] = { 0, 4, 8, 0 };
	static const uint64_t mem[4] = { 0, 8, 64, 4096 };

	memset(o, 0, sizeof(*o));
	o->build_flags = sel & 7u;
	o->id_bytes = id_bytes[(sel >> 3) & 3u];
	o->mem_limit = mem[(sel >> 5) & 3u];
	o->threads = (sel & 0x80u) ? 3 : 1;
}

/* Check the file an import produced. */
static inline void fz_import_check_output(const char *out, enum bam_graph_format fmt,
					  const struct bam_graph_build_opts *o,
					  const struct bam_graph_build_stats *st)
{
	struct bam_graph_header h;
	struct bam_csr g;
	struct stat sb;
	char err[512];

	FZ_CHECK(bam_graph_header_read(out, &h, err, sizeof(err)) == 0);
	if (bam_graph_verify(out, err, sizeof(err)) != 0) {
		fprintf(stderr, "fuzz: verify of the imported graph: %s\n", err);
		FZ_CHECK(!"bam_graph_verify accepts what bam_graph_import wrote");
	}
	FZ_CHECK(h.n_vertices == st->n_vertices && h.n_edges == st->n_edges);
	FZ_CHECK(h.id_bytes == st->id_bytes);
	if (o->id_bytes)
		FZ_CHECK(h.id_bytes == o->id_bytes);
	FZ_CHECK(stat(out, &sb) == 0 && (uint64_t)sb.st_size == st->file_bytes);
	if (o->build_flags & BAM_GRAPH_BUILD_SYMMETRIZE)
		FZ_CHECK(h.flags & BAM_GRAPH_F_SYMMETRIC);
	FZ_CHECK(!!(h.flags & BAM_GRAPH_F_NO_SELF_LOOPS) == !!(o->build_flags & BAM_GRAPH_BUILD_DROP_SELF_LOOPS));
	FZ_CHECK(!!(h.flags & BAM_GRAPH_F_NO_DUPLICATES) == !!(o->build_flags & BAM_GRAPH_BUILD_DEDUP));
	if (!(o->build_flags & BAM_GRAPH_BUILD_DEDUP))
		FZ_CHECK(st->duplicates_dropped == 0);
	if (!(o->build_flags & BAM_GRAPH_BUILD_DROP_SELF_LOOPS))
		FZ_CHECK(st->self_loops_dropped == 0);
	/* every input arc is stored, dropped as a self-loop or dropped as a repeat; a
	 * symmetric graph also stores the reverse of each non-loop arc */
	uint64_t acc = st->n_edges + st->duplicates_dropped + st->self_loops_dropped;
	if (h.flags & BAM_GRAPH_F_SYMMETRIC)
		FZ_CHECK(acc >= st->input_arcs && acc <= 2 * st->input_arcs);
	else
		FZ_CHECK(acc == st->input_arcs);

	FZ_CHECK(bam_graph_load(out, &g, err, sizeof(err)) == 0);
	FZ_CHECK(g.n_vertices == h.n_vertices && g.n_edges == h.n_edges && g.id_bytes == h.id_bytes);
	fz_check_csr_flags(&g, h.flags);
	if (fmt == BAM_GRAPH_FMT_SNAP || fmt == BAM_GRAPH_FMT_ARCS)
		fz_oracle_edge_list(o, &g);
	fz_check_ref(&g);
	bam_csr_free(&g);
}

/* Import 'text' (written to the scratch file 'name') as 'fmt' with options 'sel'. */
static inline int fz_import_text(enum bam_graph_format fmt, const char *name, uint8_t sel,
				 const void *text, size_t len)
{
	struct bam_graph_build_opts o;
	struct bam_graph_build_stats st;
	char in[320], out[320], err[512];
	int rc;

	fz_path(in, sizeof(in), name);
	fz_path(out, sizeof(out), "out.bcsr");
	fz_write_file(in, text, len);
	unlink(out);
	if (!fz_import_wanted(in))
		return 0;
	fz_import_opts(sel, &o);
	err[0] = 0;
	rc = bam_graph_import(in, out, fmt, &o, &st, err, sizeof(err));
	fz_check_no_temp_left();
	if (rc) {
		/* an error: a negative errno with a message, and no output */
		FZ_CHECK(rc < 0);
		FZ_CHECK(err[0] != 0);
		FZ_CHECK(access(out, F_OK) != 0);
		return 0;
	}
	fz_import_check_output(out, fmt, &o, &st);
	return 0;
}

/* The harness body for one format: byte 0 = options, the rest = the file. */
static inline int fz_import_one(enum bam_graph_format fmt, const char *name, const uint8_t *data,
				size_t size)
{
	if (size < 1)
		return 0;
	return fz_import_text(fmt, name, data[0], data + 1, size - 1);
}

#endif /* BAM_FUZZ_IMPORT_H */
