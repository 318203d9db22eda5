/* SPDX-License-Identifier: MIT */
/*
 * test_graph_import - the importers: each format (plain and gzip) on small crafted files
 * with the resulting offsets/edges checked exactly, the build options, malformed inputs
 * (each an error naming the file, with no output left behind), and, with `--real`, the
 * two real LAW graphs: cnr-2000 from the repository's data/ (exit 77 only if it is
 * missing), uk-2007-05-100000 from shared/data when it is there (else SKIPPED).
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>
#include "tmpdir.h"

#include "bam/graph.h"

static char out_path[512];

static const char *data(const char *name)
{
	static char p[1024];

	snprintf(p, sizeof(p), "%s/%s", BAM_GRAPH_TEST_DATA, name);
	return p;
}


static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	(void)state;
	if (tmpdir_make("bam-graph-import"))
		return -1;
	snprintf(out_path, sizeof(out_path), "%s/out.bamcsr", tmpdir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_remove();
}

/* No output and no temporary file left in the directory. */
static void assert_no_output(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	struct stat st;

	assert_int_not_equal(stat(out_path, &st), 0);
	assert_non_null(d);
	while ((e = readdir(d)))
		assert_null(strstr(e->d_name, ".tmp."));
	closedir(d);
}

/* Import of `in` (default options) refused with rc_want, the message containing `part`
 * and naming `named`, nothing left behind. */
static void import_refused(const char *in, enum bam_graph_format fmt, int rc_want, const char *part,
			   const char *named)
{
	struct bam_graph_build_opts o = { 0 };
	char err[512] = "";
	int rc = bam_graph_import(in, out_path, fmt, &o, NULL, err, sizeof(err));

	assert_int_equal(rc, rc_want);
	if (!strstr(err, part) || !strstr(err, named))
		fail_msg("message: %s", err);
	assert_no_output();
}

static void import_ok(const char *in, enum bam_graph_format fmt, uint32_t flags, uint32_t id_bytes,
		      uint64_t mem, struct bam_graph_build_stats *st)
{
	struct bam_graph_build_opts o = { .build_flags = flags, .id_bytes = id_bytes, .mem_limit = mem };
	char err[512] = "";
	int rc;

	unlink(out_path);
	rc = bam_graph_import(in, out_path, fmt, &o, st, err, sizeof(err));
	if (rc)
		fail_msg("import %s: rc %d: %s", in, rc, err);
	rc = bam_graph_verify(out_path, err, sizeof(err));
	if (rc)
		fail_msg("verify after import %s: %s", in, err);
}

static void check_graph(uint64_t n, const uint64_t *off, uint64_t m, const uint64_t *edges,
			uint32_t id_bytes, uint32_t flags)
{
	struct bam_graph_header h;
	struct bam_csr g;
	char err[512];

	assert_int_equal(bam_graph_header_read(out_path, &h, err, sizeof(err)), 0);
	assert_int_equal(h.flags, flags);
	assert_int_equal(bam_graph_load(out_path, &g, err, sizeof(err)), 0);
	assert_int_equal(g.n_vertices, n);
	assert_int_equal(g.n_edges, m);
	assert_int_equal(g.id_bytes, id_bytes);
	for (uint64_t v = 0; v <= n; v++) {
		if (g.offsets[v] != off[v])
			fail_msg("offsets[%llu] = %llu, expected %llu", (unsigned long long)v,
				 (unsigned long long)g.offsets[v], (unsigned long long)off[v]);
	}
	for (uint64_t i = 0; i < m; i++) {
		if (bam_csr_edge(&g, i) != edges[i])
			fail_msg("edges[%llu] = %llu, expected %llu", (unsigned long long)i,
				 (unsigned long long)bam_csr_edge(&g, i), (unsigned long long)edges[i]);
	}
	bam_csr_free(&g);
}

/* The tiny directed graph of data/tiny.*: 9 arcs on 6 vertices, a duplicate (0,1) and a
 * self-loop (3,3). Expected CSRs worked out by hand. */
static const uint64_t tiny_off[] = { 0, 3, 4, 6, 7, 8, 9 };
static const uint64_t tiny_edges[] = { 1, 1, 2, 3, 0, 1, 3, 5, 4 };

static void test_formats_plain_and_gz(void **state)
{
	static const struct {
		const char *file;
		enum bam_graph_format fmt;
	} cases[] = {
		{ "tiny.snap.txt", BAM_GRAPH_FMT_AUTO },   { "tiny.snap.txt", BAM_GRAPH_FMT_SNAP },
		{ "tiny.snap.txt.gz", BAM_GRAPH_FMT_AUTO }, { "tiny.mtx", BAM_GRAPH_FMT_AUTO },
		{ "tiny.mtx", BAM_GRAPH_FMT_MTX },          { "tiny.graph-txt", BAM_GRAPH_FMT_AUTO },
		{ "tiny.graph-txt.gz", BAM_GRAPH_FMT_AUTO }, { "tiny.graph-txt", BAM_GRAPH_FMT_LAW },
		{ "tiny.arcs", BAM_GRAPH_FMT_AUTO },        { "tiny.arcs", BAM_GRAPH_FMT_ARCS },
	};
	struct bam_graph_build_stats st;
	struct bam_graph_header h;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		import_ok(data(cases[i].file), cases[i].fmt, 0, 0, 0, &st);
		check_graph(6, tiny_off, 9, tiny_edges, 4, 0);
		assert_int_equal(st.input_arcs, 9);
		assert_int_equal(st.n_edges, 9);
		assert_int_equal(st.passes, 2);
		assert_int_equal(bam_graph_header_read(out_path, &h, err, sizeof(err)), 0);
		assert_non_null(strstr(h.source, cases[i].file));
		if (strstr(cases[i].file, ".gz"))
			assert_non_null(strstr(h.source, "gzip"));
	}
}

static void test_options(void **state)
{
	/* dedup: (0,1) once */
	static const uint64_t d_off[] = { 0, 2, 3, 5, 6, 7, 8 };
	static const uint64_t d_edges[] = { 1, 2, 3, 0, 1, 3, 5, 4 };
	/* drop self-loops: (3,3) gone */
	static const uint64_t l_off[] = { 0, 3, 4, 6, 6, 7, 8 };
	static const uint64_t l_edges[] = { 1, 1, 2, 3, 0, 1, 5, 4 };
	/* symmetrize alone: every u != v arc doubled, (3,3) once, repeats kept */
	static const uint64_t s_off[] = { 0, 4, 8, 11, 13, 15, 17 };
	static const uint64_t s_edges[] = { 1, 1, 2, 2, 0, 0, 2, 3, 0, 0, 1, 1, 3, 5, 5, 4, 4 };
	/* all three: the undirected simple graph */
	static const uint64_t a_off[] = { 0, 2, 5, 7, 8, 9, 10 };
	static const uint64_t a_edges[] = { 1, 2, 0, 2, 3, 0, 1, 1, 5, 4 };
	struct bam_graph_build_stats st;

	(void)state;
	import_ok(data("tiny.snap.txt"), BAM_GRAPH_FMT_AUTO, BAM_GRAPH_BUILD_DEDUP, 0, 0, &st);
	check_graph(6, d_off, 8, d_edges, 4, BAM_GRAPH_F_NO_DUPLICATES);
	assert_int_equal(st.duplicates_dropped, 1);
	import_ok(data("tiny.arcs"), BAM_GRAPH_FMT_AUTO, BAM_GRAPH_BUILD_DROP_SELF_LOOPS, 0, 0, &st);
	check_graph(6, l_off, 8, l_edges, 4, BAM_GRAPH_F_NO_SELF_LOOPS);
	assert_int_equal(st.self_loops_dropped, 1);
	import_ok(data("tiny.graph-txt"), BAM_GRAPH_FMT_AUTO, BAM_GRAPH_BUILD_SYMMETRIZE, 0, 0, &st);
	check_graph(6, s_off, 17, s_edges, 4, BAM_GRAPH_F_SYMMETRIC);
	import_ok(data("tiny.mtx"), BAM_GRAPH_FMT_AUTO,
		  BAM_GRAPH_BUILD_SYMMETRIZE | BAM_GRAPH_BUILD_DEDUP | BAM_GRAPH_BUILD_DROP_SELF_LOOPS,
		  0, 0, &st);
	check_graph(6, a_off, 10, a_edges, 4, BAM_GRAPH_F_ALL);
	assert_int_equal(st.self_loops_dropped, 1);
	assert_int_equal(st.duplicates_dropped, 6);
	/* 8-byte ids: same arrays */
	import_ok(data("tiny.snap.txt.gz"), BAM_GRAPH_FMT_AUTO, 0, 8, 0, &st);
	check_graph(6, tiny_off, 9, tiny_edges, 8, 0);
}

static void test_mtx_symmetric(void **state)
{
	/* lower triangle (2,1) (3,1) (3,3) (5,4), 1-based -> both directions, diagonal once */
	static const uint64_t off[] = { 0, 2, 3, 5, 6, 7 };
	static const uint64_t edges[] = { 1, 2, 0, 0, 2, 4, 3 };
	struct bam_graph_build_stats st;

	(void)state;
	import_ok(data("tiny_sym.mtx"), BAM_GRAPH_FMT_AUTO, 0, 0, 0, &st);
	check_graph(5, off, 7, edges, 4, BAM_GRAPH_F_SYMMETRIC);
	assert_int_equal(st.input_arcs, 4);
	/* --symmetrize on a symmetric file changes nothing */
	import_ok(data("tiny_sym.mtx"), BAM_GRAPH_FMT_MTX, BAM_GRAPH_BUILD_SYMMETRIZE, 0, 0, &st);
	check_graph(5, off, 7, edges, 4, BAM_GRAPH_F_SYMMETRIC);
}

static void test_law_empty_lines_and_isolated(void **state)
{
	/* vertex 1 and the last two have no successors; CRLF line ends; the last line is
	 * blanks only without '\n' (still a line: vertex 4's) */
	static const char text[] = "5\r\n4 2\r\n\r\n0\r\n\r\n \t";
	static const uint64_t off[] = { 0, 2, 2, 3, 3, 3 };
	static const uint64_t edges[] = { 2, 4, 0 };
	struct bam_graph_build_stats st;

	(void)state;
	write_file(tmp("iso.graph-txt"), text, sizeof(text) - 1);
	import_ok(tmp("iso.graph-txt"), BAM_GRAPH_FMT_AUTO, 0, 0, 0, &st);
	check_graph(5, off, 3, edges, 4, 0);
	assert_int_equal(st.lines, 6);
}

/* Content detection: a '%' line other than the %%MatrixMarket banner is a comment, so
 * the file is an edge list, as with '#'. */
static void test_detect_percent_comment(void **state)
{
	static const struct {
		const char *name, *text, *fmt;
		uint64_t n, m;
	} cases[] = {
		{ "pc.txt", "% comment\n0 1\n", "(snap)", 2, 1 },
		{ "pc2.txt", "%comment\n0 1\n", "(snap)", 2, 1 },
		{ "pc3.txt", "\n%\n%% MatrixMarket is not the banner\n3 1\n1 2\n", "(snap)", 4, 2 },
		{ "hash.txt", "# c\n% c\n0 4\n", "(snap)", 5, 1 },
		{ "mm.txt", "%%MatrixMarket matrix coordinate pattern general\n% c\n3 3 2\n1 2\n3 1\n", "(mtx)", 3, 2 },
		{ "mm2.txt", "%%matrixmarket matrix coordinate pattern general\n2 2 1\n2 1\n", "(mtx)", 2, 1 },
		/* any case, blanks before, between and after the 5 tokens, CR-LF */
		{ "mm3.txt", " \t%%MATRIXMARKET\tMatrix  COORDINATE Pattern GENERAL \t\r\n2 2 1\r\n2 1\r\n", "(mtx)", 2, 1 },
		{ "mm4.txt", "%%MatrixMarket matrix coordinate integer Symmetric\n2 2 1\n2 1 -3\n", "(mtx symmetric)", 2, 2 },
		/* edge lists may start with blank lines (SNAP and arc lists alike) */
		{ "lead.txt", "\n \t\r\n0 1\n", "(snap)", 2, 1 },
		{ "lead2.txt", "\n\n# c\n2\t0\n", "(snap)", 3, 1 },
		{ "lead.arcs", "\r\n\n0\t3\n", "(arcs)", 4, 1 },
	};
	struct bam_graph_build_stats st;
	struct bam_graph_header h;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *in = tmp(cases[i].name);

		write_file(in, cases[i].text, strlen(cases[i].text));
		import_ok(in, BAM_GRAPH_FMT_AUTO, 0, 0, 0, &st);
		assert_int_equal(bam_graph_header_read(out_path, &h, err, sizeof(err)), 0);
		if (!strstr(h.source, cases[i].fmt))
			fail_msg("%s: source '%s', expected %s", cases[i].name, h.source, cases[i].fmt);
		assert_int_equal(st.n_vertices, cases[i].n);
		assert_int_equal(st.n_edges, cases[i].m);
	}
}

/* SNAP: n = largest id + 1 counts ids seen only in a dropped self-loop. */
static void test_snap_n_from_dropped_loop(void **state)
{
	static const char text[] = "0 1\n7 7\n";
	static const uint64_t off[] = { 0, 1, 1, 1, 1, 1, 1, 1, 1 };
	static const uint64_t edges[] = { 1 };
	struct bam_graph_build_stats st;

	(void)state;
	write_file(tmp("loop.txt"), text, sizeof(text) - 1);
	import_ok(tmp("loop.txt"), BAM_GRAPH_FMT_AUTO, BAM_GRAPH_BUILD_DROP_SELF_LOOPS, 0, 0, &st);
	check_graph(8, off, 1, edges, 4, BAM_GRAPH_F_NO_SELF_LOOPS);
	assert_int_equal(st.self_loops_dropped, 1);
}

/* A larger random edge list: a buffer far smaller than the edge array forces many chunks
 * (passes); the file must be byte-identical to the one-chunk import. */
static void test_chunks_identical(void **state)
{
	const char *in = tmp("rand.snap.gz");
	gzFile gz = gzopen(in, "wb");
	uint64_t x = 12345;
	struct bam_graph_build_stats st1, st2;
	FILE *a, *b;
	int ca, cb;

	(void)state;
	assert_non_null(gz);
	gzprintf(gz, "# random graph\n");
	for (int i = 0; i < 20000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		gzprintf(gz, "%u\t%u\n", (unsigned)((x >> 33) % 3000), (unsigned)((x >> 13) % 3001));
	}
	gzclose(gz);
	import_ok(in, BAM_GRAPH_FMT_SNAP, BAM_GRAPH_BUILD_DEDUP | BAM_GRAPH_BUILD_SYMMETRIZE, 0, 0, &st1);
	assert_int_equal(rename(out_path, tmp("one.bamcsr")), 0);
	import_ok(in, BAM_GRAPH_FMT_SNAP, BAM_GRAPH_BUILD_DEDUP | BAM_GRAPH_BUILD_SYMMETRIZE, 0, 4096, &st2);
	assert_int_equal(st1.passes, 2);
	assert_true(st2.passes > 10);
	assert_int_equal(st1.n_edges, st2.n_edges);
	a = fopen(tmp("one.bamcsr"), "rb");
	b = fopen(out_path, "rb");
	assert_non_null(a);
	assert_non_null(b);
	do {
		ca = fgetc(a);
		cb = fgetc(b);
		assert_int_equal(ca, cb);
	} while (ca != EOF);
	fclose(a);
	fclose(b);
}

struct bad_case {
	const char *name; /* file name (selects the format in auto mode) */
	enum bam_graph_format fmt;
	const char *text;
	const char *expect; /* substring of the error message */
};

static void test_malformed(void **state)
{
	static const struct bad_case cases[] = {
		{ "trunc.graph-txt", BAM_GRAPH_FMT_AUTO, "6\n1 2\n3\n", "line 4: input ends after 2 of the 6" },
		{ "range.graph-txt", BAM_GRAPH_FMT_AUTO, "3\n1 5\n\n\n", "line 2: successor 5 of vertex 0 out of range" },
		{ "extra.graph-txt", BAM_GRAPH_FMT_AUTO, "2\n1\n0\n1\n", "line 4: data after the 2 successor lines" },
		/* an empty line is one more vertex, not padding: the first extra line is named */
		{ "blank.graph-txt", BAM_GRAPH_FMT_AUTO, "5\n1 2\n\n0\n\n\n\n\n\n\n\n", "line 7: extra empty line after the 5 successor lines" },
		{ "blank1.graph-txt", BAM_GRAPH_FMT_AUTO, "2\r\n1\r\n0\r\n\r\n", "line 4: extra empty line after the 2 successor lines" },
		{ "blanks.graph-txt", BAM_GRAPH_FMT_AUTO, "2\n1\n0\n \t\n", "line 4: extra empty line after the 2 successor lines" },
		{ "blanks-nonl.graph-txt", BAM_GRAPH_FMT_AUTO, "2\n1\n0\n  ", "line 4: extra empty line after the 2 successor lines" },
		{ "blank.law", BAM_GRAPH_FMT_LAW, "1\n0\n\n", "line 3: extra empty line after the 1 successor lines" },
		{ "garbage.graph-txt", BAM_GRAPH_FMT_AUTO, "2\n1 x1\n\n", "line 2: expected a successor vertex id, found 'x1'" },
		{ "neg.graph-txt", BAM_GRAPH_FMT_AUTO, "2\n-1\n\n", "line 2: negative" },
		{ "zero.graph-txt", BAM_GRAPH_FMT_AUTO, "0\n", "declares 0 nodes" },
		{ "nonum.graph-txt", BAM_GRAPH_FMT_AUTO, "abc\n", "line 1: expected the number of nodes" },
		/* the number of nodes is the first line: a blank line before it is named as such */
		{ "lead.graph-txt", BAM_GRAPH_FMT_AUTO, "\n3\n1\n2\n\n", "line 1 is blank: LAW graph-txt has the number of nodes on the first line" },
		{ "lead-law.txt", BAM_GRAPH_FMT_AUTO, "\r\n \n3\n1\n2\n\n", "line 1 is blank: LAW graph-txt has the number of nodes on the first line" },
		{ "leadws.law", BAM_GRAPH_FMT_LAW, "  ", "line 1 is blank: LAW graph-txt has the number of nodes on the first line" },
		{ "more.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n2 3\n", "line 4: more entries than the 1 declared" },
		{ "fewer.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n2 3\n", "input ends after 2 of the 3 entries" },
		{ "range.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n4 1\n", "line 3: row 4 out of range 1..3" },
		{ "zero.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 0\n", "line 3: column 0 out of range" },
		{ "rect.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate pattern general\n3 4 1\n1 2\n", "not square" },
		{ "nobanner.mtx", BAM_GRAPH_FMT_AUTO, "3 3 1\n1 2\n", "missing %%MatrixMarket banner" },
		/* the banner has exactly 5 tokens: the first extra one is named */
		{ "tok6.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate pattern general extra\n3 3 2\n1 2\n2 3\n", "line 1: unexpected 6th token 'extra'" },
		{ "tok7.txt", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate real symmetric general 1\n3 3 1\n1 2 1\n", "line 1: unexpected 6th token 'general'" },
		{ "tok6crlf.mtx", BAM_GRAPH_FMT_MTX, "%%MatrixMarket matrix coordinate pattern general %\r\n3 3 1\n1 2\n", "line 1: unexpected 6th token '%'" },
		/* past the 255 bytes the banner used to be cut to, and a token past 47 bytes */
		{ "tokfar.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate pattern general"
		  "                                                                                "
		  "                                                                                "
		  "                                                                                "
		  "                                                                                "
		  " extra\n3 3 1\n1 2\n", "line 1: unexpected 6th token 'extra'" },
		{ "toklong.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate pattern general "
		  "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz\n3 3 1\n1 2\n",
		  "line 1: unexpected 6th token 'abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstu...'" },
		{ "tok4.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate pattern\n3 3 1\n1 2\n", "line 1: expected '%%MatrixMarket matrix coordinate <field> <symmetry>'" },
		/* the banner is the first line: a blank line before it is named as such */
		{ "lead.mtx", BAM_GRAPH_FMT_AUTO, "\n%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n", "line 1 is blank: the %%MatrixMarket banner must be the first line" },
		{ "lead-mtx.txt", BAM_GRAPH_FMT_AUTO, "\n%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n", "line 1 is blank: the %%MatrixMarket banner must be the first line" },
		{ "leadws.mtx", BAM_GRAPH_FMT_MTX, " \t\r\n\n%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n", "line 1 is blank: the %%MatrixMarket banner must be the first line" },
		{ "blankonly.mtx", BAM_GRAPH_FMT_MTX, "\n\n", "line 1 is blank: the %%MatrixMarket banner must be the first line" },
		{ "array.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", "'array' format not supported" },
		{ "noval.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2\n", "line 3: expected a value" },
		{ "val.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 abc\n", "line 3: value 'abc' is not a real number" },
		{ "val2.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.5\n2 3 1.5x\n", "line 4: value '1.5x' is not a real number" },
		{ "ival.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 2 1.5\n", "line 3: value '1.5' is not an integer" },
		{ "cval.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate complex general\n3 3 1\n1 2 1.0 i\n", "line 3: value 'i' is not a real number" },
		{ "extra.mtx", BAM_GRAPH_FMT_AUTO, "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2 5\n", "line 3: unexpected extra field '5'" },
		{ "garbage.txt", BAM_GRAPH_FMT_AUTO, "0 1\n1 2.5\n", "line 2: expected a destination vertex id, found '2.5'" },
		{ "neg.txt", BAM_GRAPH_FMT_AUTO, "# c\n0 1\n-3 1\n", "line 3: negative" },
		{ "one.txt", BAM_GRAPH_FMT_SNAP, "0 1\n1\n", "line 2: expected 2 vertex ids" },
		{ "three.arcs", BAM_GRAPH_FMT_AUTO, "0\t1\n1\t2\t3\n", "line 2: unexpected extra field '3'" },
		{ "big.arcs", BAM_GRAPH_FMT_AUTO, "0\t99999999999999999999999\n", "too large" },
		{ "binary.arcs", BAM_GRAPH_FMT_AUTO, "0\t1\n\x01\x02\x03\n", "line 2: expected a source vertex id" },
		{ "comments.txt", BAM_GRAPH_FMT_SNAP, "# nothing\n# here\n", "no arcs found" },
		{ "empty.txt", BAM_GRAPH_FMT_AUTO, "", "empty input" },
		{ "empty.arcs", BAM_GRAPH_FMT_AUTO, "", "no arcs found" },
		{ "empty.graph-txt", BAM_GRAPH_FMT_AUTO, "", "empty input" },
		{ "empty.mtx", BAM_GRAPH_FMT_AUTO, "", "empty input" },
		{ "odd.txt", BAM_GRAPH_FMT_AUTO, "1 2 3 4\n", "cannot tell the format" },
	};
	struct bam_graph_build_opts o = { 0 };
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *in = tmp(cases[i].name);
		int rc;

		write_file(in, cases[i].text, strlen(cases[i].text));
		unlink(out_path);
		err[0] = 0;
		rc = bam_graph_import(in, out_path, cases[i].fmt, &o, NULL, err, sizeof(err));
		if (rc != -EINVAL)
			fail_msg("%s: expected -EINVAL, got %d (%s)", cases[i].name, rc, err);
		if (!strstr(err, cases[i].expect) || !strstr(err, in))
			fail_msg("%s: message '%s' lacks '%s' or the file name", cases[i].name, err,
				 cases[i].expect);
		assert_no_output();
		unlink(in);
	}
}

static void test_missing_and_truncated_gz(void **state)
{
	struct bam_graph_build_opts o = { 0 };
	char err[512], *buf;
	const char *in = tmp("cut.graph-txt.gz");
	gzFile gz;
	FILE *f;
	long size;
	int rc;

	(void)state;
	rc = bam_graph_import(tmp("no-such-file.txt"), out_path, BAM_GRAPH_FMT_SNAP, &o, NULL, err,
			      sizeof(err));
	assert_int_equal(rc, -ENOENT);
	assert_non_null(strstr(err, "no-such-file.txt"));
	assert_no_output();

	/* A gzip file cut in half: zlib reports the early end; no output. */
	gz = gzopen(in, "wb");
	assert_non_null(gz);
	gzprintf(gz, "50000\n");
	for (int v = 0; v < 50000; v++)
		gzprintf(gz, "%d %d\n", (v * 7 + 1) % 50000, (v * 13 + 5) % 50000);
	gzclose(gz);
	f = fopen(in, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	buf = malloc((size_t)size);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	write_file(in, buf, (size_t)size / 2);
	free(buf);
	import_refused(in, BAM_GRAPH_FMT_AUTO, -EINVAL, "truncated", in);
}

/* Values of real/integer/complex files are checked, in any form strtod or an integer
 * takes, and otherwise ignored. */
static void test_mtx_values(void **state)
{
	static const char real[] = "%%MatrixMarket matrix coordinate real general\n"
				   "3 3 3\n1 2 -1.5e-3\n2 3 +4\n3 1 .5\n";
	static const char integer[] = "%%MatrixMarket matrix coordinate integer general\n"
				      "3 3 3\n1 2 -7\n2 3 +4\n3 1 99999999999999999999999\n";
	static const char complex[] = "%%MatrixMarket matrix coordinate complex general\n"
				      "3 3 3\n1 2 1 -2.5\n2 3 0 0\n3 1 1e3 -1E-3\n";
	static const uint64_t off[] = { 0, 1, 2, 3 };
	static const uint64_t edges[] = { 1, 2, 0 };
	static const char *const text[] = { real, integer, complex };
	struct bam_graph_build_stats st;

	(void)state;
	for (int i = 0; i < 3; i++) {
		write_file(tmp("v.mtx"), text[i], strlen(text[i]));
		import_ok(tmp("v.mtx"), BAM_GRAPH_FMT_AUTO, 0, 0, 0, &st);
		check_graph(3, off, 3, edges, 4, 0);
	}
}

/* A NUL byte in the banner is data, not its end: nothing after it goes unread. */
static void test_mtx_banner_nul(void **state)
{
	static const char glued[] = "%%MatrixMarket matrix coordinate pattern general\0junk\n3 3 1\n1 2\n";
	static const char apart[] = "%%MatrixMarket matrix coordinate pattern general \0\n3 3 1\n1 2\n";

	(void)state;
	unlink(out_path);
	write_file(tmp("nul1.mtx"), glued, sizeof(glued) - 1);
	import_refused(tmp("nul1.mtx"), BAM_GRAPH_FMT_AUTO, -EINVAL, "line 1: unknown symmetry 'general?junk'",
		       "nul1.mtx");
	write_file(tmp("nul2.mtx"), apart, sizeof(apart) - 1);
	import_refused(tmp("nul2.mtx"), BAM_GRAPH_FMT_AUTO, -EINVAL, "line 1: unexpected 6th token '?'",
		       "nul2.mtx");
}

/* The input is read twice: a FIFO (or a pipe as /dev/stdin) is refused up front, without
 * opening it (that would wait for a writer). An existing output that is not a regular
 * file is not replaced. */
static void test_not_regular_files(void **state)
{
	struct bam_graph_build_opts o = { 0 };
	const char *fifo = tmp("in.fifo"), *lnk = tmp("out.lnk");
	struct stat st;
	char err[512];
	int rc;

	(void)state;
	unlink(out_path);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(60); /* a regression hangs: fail instead */
	import_refused(fifo, BAM_GRAPH_FMT_SNAP, -EINVAL, "not a regular file: import reads its input twice", fifo);
	alarm(0);

	/* a FIFO as the output: refused before the input is read, still a FIFO */
	rc = bam_graph_import(data("tiny.snap.txt"), fifo, BAM_GRAPH_FMT_AUTO, &o, NULL, err, sizeof(err));
	assert_int_equal(rc, -EEXIST);
	if (!strstr(err, "exists and is not a regular file (a FIFO)") || !strstr(err, fifo))
		fail_msg("message: %s", err);
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	/* a symbolic link (here to the FIFO, as it could be to /dev/full): the link stays */
	assert_int_equal(symlink(fifo, lnk), 0);
	rc = bam_graph_import(data("tiny.snap.txt"), lnk, BAM_GRAPH_FMT_AUTO, &o, NULL, err, sizeof(err));
	assert_int_equal(rc, -EEXIST);
	assert_non_null(strstr(err, "a symbolic link"));
	assert_int_equal(lstat(lnk, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	/* a directory as the output: -EEXIST as well (the CLI's exit status 2, a refused -o),
	 * not -EINVAL (malformed input, exit status 1) */
	rc = bam_graph_import(data("tiny.snap.txt"), tmpdir, BAM_GRAPH_FMT_AUTO, &o, NULL, err, sizeof(err));
	assert_int_equal(rc, -EEXIST);
	if (!strstr(err, "exists and is not a regular file (a directory)"))
		fail_msg("message: %s", err);
	/* a directory as the input */
	rc = bam_graph_import(tmpdir, out_path, BAM_GRAPH_FMT_SNAP, &o, NULL, err, sizeof(err));
	assert_int_equal(rc, -EISDIR);
	assert_no_output();
	unlink(lnk);
	unlink(fifo);
	/* the output is the input under another name (a hard link): refused, the input as
	 * it was */
	const char *in = tmp("self.snap"), *self = tmp("self.link");
	FILE *f = fopen(in, "w");
	assert_non_null(f);
	fputs("0 1\n1 2\n", f);
	fclose(f);
	assert_int_equal(link(in, self), 0);
	rc = bam_graph_import(in, self, BAM_GRAPH_FMT_AUTO, &o, NULL, err, sizeof(err));
	assert_int_equal(rc, -EINVAL);
	if (!strstr(err, "the output is the input file"))
		fail_msg("message: %s", err);
	assert_int_equal(stat(in, &st), 0);
	assert_int_equal(st.st_size, 8);
	/* a name past NAME_MAX and one ending in '/': refused before the input is read */
	char longname[600];
	snprintf(longname, sizeof(longname), "%s/%0300d", tmpdir, 7);
	rc = bam_graph_import(in, longname, BAM_GRAPH_FMT_AUTO, &o, NULL, err, sizeof(err));
	assert_int_equal(rc, -ENAMETOOLONG);
	assert_non_null(strstr(err, "past NAME_MAX"));
	char slash[300];
	snprintf(slash, sizeof(slash), "%s/newdir/", tmpdir);
	rc = bam_graph_import(in, slash, BAM_GRAPH_FMT_AUTO, &o, NULL, err, sizeof(err));
	assert_int_equal(rc, -EEXIST);
	assert_non_null(strstr(err, "ends in '/'"));
	unlink(self);
	unlink(in);
}

/* gzip: members may be concatenated (as `cat a.gz b.gz`); anything else after the last
 * member is an error, not silently ignored (zlib's gzread would ignore it). */
static void test_gzip_members_and_tail(void **state)
{
	static const uint64_t off[] = { 0, 1, 2, 3, 3 };
	static const uint64_t edges[] = { 1, 2, 3 };
	const char *in = tmp("m.snap.gz");
	struct bam_graph_build_stats st;
	gzFile gz;
	FILE *f;

	(void)state;
	gz = gzopen(in, "wb");
	assert_non_null(gz);
	gzprintf(gz, "0 1\n1 2\n");
	gzclose(gz);
	gz = gzopen(in, "ab"); /* a second member */
	assert_non_null(gz);
	gzprintf(gz, "2 3\n");
	gzclose(gz);
	import_ok(in, BAM_GRAPH_FMT_AUTO, 0, 0, 0, &st);
	check_graph(4, off, 3, edges, 4, 0);
	assert_int_equal(st.input_arcs, 3);

	f = fopen(in, "ab");
	assert_non_null(f);
	fputs("GARBAGE", f);
	fclose(f);
	unlink(out_path);
	import_refused(in, BAM_GRAPH_FMT_AUTO, -EINVAL, "data after the end of the gzip stream", in);
}

/* A declared count whose offsets array (8 * (n + 1) bytes) exceeds 2^64: said so, not
 * "0 MiB" from an overflowed product. */
static void test_law_count_too_large(void **state)
{
	static const char text[] = "18446744073709551615\n";

	(void)state;
	unlink(out_path);
	write_file(tmp("huge.graph-txt"), text, sizeof(text) - 1);
	import_refused(tmp("huge.graph-txt"), BAM_GRAPH_FMT_AUTO, -ENOMEM,
		       "line 1: 18446744073709551615 vertices: count too large", "huge.graph-txt");
}

static void test_format_names(void **state)
{
	enum bam_graph_format f;

	(void)state;
	assert_int_equal(bam_graph_format_parse("graph-txt", &f), 0);
	assert_int_equal(f, BAM_GRAPH_FMT_LAW);
	assert_int_equal(bam_graph_format_parse("MTX", &f), 0);
	assert_int_equal(f, BAM_GRAPH_FMT_MTX);
	assert_int_equal(bam_graph_format_parse("csv", &f), -EINVAL);
	assert_string_equal(bam_graph_format_name(BAM_GRAPH_FMT_ARCS), "arcs");
}

/* ---------------------------------------------------------------------------------- */
/* Real graphs (README of shared/data: node and arc counts)                            */
/* ---------------------------------------------------------------------------------- */

static const char *shared_data(void)
{
	const char *e = getenv("BAM_SHARED_DATA");

	return e && *e ? e : BAM_GRAPH_SHARED_DATA;
}

static int skipped_cnr;

static void import_real(const char *name, uint64_t n, uint64_t m)
{
	char in[1024], err[512];
	struct bam_graph_build_stats st;
	struct bam_graph_degree_stats ds;
	struct bam_graph_header h;

	/* the repository's data/ first (cnr-2000 ships there), then the shared folder */
	snprintf(in, sizeof(in), "%s/%s", BAM_GRAPH_REPO_DATA, name);
	if (access(in, R_OK) != 0)
		snprintf(in, sizeof(in), "%s/graphs/%s", shared_data(), name);
	if (access(in, R_OK) != 0)
		skip();
	import_ok(in, BAM_GRAPH_FMT_AUTO, 0, 0, 0, &st); /* verifies checksums too */
	print_message("%s: %llu vertices, %llu arcs, %llu lines, %.2f s\n", name,
		      (unsigned long long)st.n_vertices, (unsigned long long)st.n_edges,
		      (unsigned long long)st.lines, st.seconds);
	assert_int_equal(st.n_vertices, n);
	assert_int_equal(st.n_edges, m);
	assert_int_equal(st.input_arcs, m);
	assert_int_equal(bam_graph_header_read(out_path, &h, err, sizeof(err)), 0);
	assert_int_equal(h.n_vertices, n);
	assert_int_equal(h.n_edges, m);
	assert_int_equal(h.id_bytes, 4);
	assert_int_equal(bam_graph_degrees(out_path, &ds, err, sizeof(err)), 0);
	assert_true(ds.max > 0);
}

static void test_real_cnr2000(void **state)
{
	(void)state;
	skipped_cnr = 1; /* until it has been read */
	import_real("cnr-2000.graph-txt.gz", 325557, 3216152);
	skipped_cnr = 0;
}

static void test_real_uk2007(void **state)
{
	(void)state;
	import_real("uk-2007-05-100000.arcs.gz", 100000, 3050615);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formats_plain_and_gz),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_mtx_symmetric),
		cmocka_unit_test(test_law_empty_lines_and_isolated),
		cmocka_unit_test(test_detect_percent_comment),
		cmocka_unit_test(test_snap_n_from_dropped_loop),
		cmocka_unit_test(test_chunks_identical),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_missing_and_truncated_gz),
		cmocka_unit_test(test_mtx_values),
		cmocka_unit_test(test_mtx_banner_nul),
		cmocka_unit_test(test_not_regular_files),
		cmocka_unit_test(test_gzip_members_and_tail),
		cmocka_unit_test(test_law_count_too_large),
		cmocka_unit_test(test_format_names),
	};
	const struct CMUnitTest real[] = {
		cmocka_unit_test(test_real_cnr2000),
		cmocka_unit_test(test_real_uk2007),
	};
	int rc;

	if (argc > 1 && !strcmp(argv[1], "--real")) {
		/* cnr-2000 ships in data/: the test counts as skipped only when it was (the
		 * larger graphs are optional and show as SKIPPED in the output) */
		rc = cmocka_run_group_tests_name("graph_import_real", real, setup, teardown);
		return rc ? 1 : skipped_cnr ? 77 : 0;
	}
	rc = cmocka_run_group_tests_name("graph_import", tests, setup, teardown);
	return rc ? 1 : 0;
}
