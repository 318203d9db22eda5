/* SPDX-License-Identifier: MIT */
/*
 * test_graph_cli - `bam graph import|generate|info` in-process (cmd_graph.c is linked
 * into this test): exit status 0 / 1 / 2 (2 also for an -o that is not a regular file),
 * --help for each command, no output left behind on error, --json and --verify of info,
 * the error object of a failed --verify --json, and info's escaping of a crafted source
 * field.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "tmpdir.h"

#include <cjson/cJSON.h>

#include "bam/graph.h"
#include "../../tools/bam/cli_util.h"

int bam_cmd_graph(int argc, char **argv);



static int setup(void **state)
{
	(void)state;
	return tmpdir_make("bam-graph-cli");
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_remove();
}

/* Run `bam graph ARGS...` (NULL-terminated) with stdout captured into out[outlen]. */
static int run(char *out, size_t outlen, ...)
{
	char *argv[32];
	int argc = 0, rc, saved, fd;
	const char *cap = tmp("stdout.txt");
	va_list ap;
	ssize_t n;

	argv[argc++] = "graph";
	va_start(ap, outlen);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	fd = open(cap, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(saved >= 0 && fd >= 0);
	dup2(fd, STDOUT_FILENO);
	close(fd);
	rc = bam_cmd_graph(argc, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	if (out && outlen) {
		fd = open(cap, O_RDONLY);
		n = read(fd, out, outlen - 1);
		out[n > 0 ? n : 0] = 0;
		close(fd);
	}
	unlink(cap);
	return rc;
}

static char *dup_str(const char *s)
{
	static char buf[8][512];
	static int k;

	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s", s);
	return buf[k];
}

static void test_help_and_usage(void **state)
{
	char out[8192];

	(void)state;
	assert_int_equal(run(out, sizeof(out), "--help", NULL), 0);
	assert_non_null(strstr(out, "import"));
	assert_int_equal(run(out, sizeof(out), "import", "--help", NULL), 0);
	assert_non_null(strstr(out, "--symmetrize"));
	assert_int_equal(run(out, sizeof(out), "generate", "--help", NULL), 0);
	assert_non_null(strstr(out, "--edge-factor"));
	assert_int_equal(run(out, sizeof(out), "info", "--help", NULL), 0);
	assert_non_null(strstr(out, "--verify"));

	assert_int_equal(run(NULL, 0, NULL), 2);
	assert_int_equal(run(NULL, 0, "frobnicate", NULL), 2);
	assert_int_equal(run(NULL, 0, "import", dup_str(tmp("x")), NULL), 2);   /* no -o */
	assert_int_equal(run(NULL, 0, "import", "--bogus", "a", "-o", "b", NULL), 2);
	assert_int_equal(run(NULL, 0, "import", "a", "-o", "b", "--format", "csv", NULL), 2);
	assert_int_equal(run(NULL, 0, "import", "a", "-o", "b", "--id-bytes", "3", NULL), 2);
	assert_int_equal(run(NULL, 0, "import", "a", "-o", NULL), 2);
	assert_int_equal(run(NULL, 0, "generate", "-o", "b", NULL), 2);           /* no --scale */
	assert_int_equal(run(NULL, 0, "generate", "--scale", "0", "-o", "b", NULL), 2);
	assert_int_equal(run(NULL, 0, "info", NULL), 2);
}

static void test_import_info(void **state)
{
	char out[8192], in[1024];
	char *o = dup_str(tmp("g.bamcsr"));

	(void)state;
	snprintf(in, sizeof(in), "%s/tiny.graph-txt.gz", BAM_GRAPH_TEST_DATA);
	assert_int_equal(run(NULL, 0, "import", in, "-o", o, "--dedup", "--quiet", NULL), 0);
	assert_int_equal(run(out, sizeof(out), "info", o, "--verify", NULL), 0);
	assert_non_null(strstr(out, "vertices:      6"));
	assert_non_null(strstr(out, "edges:         8 directed arcs"));
	assert_non_null(strstr(out, "verify:        ok"));
	assert_int_equal(run(out, sizeof(out), "info", "--json", o, NULL), 0);
	assert_non_null(strstr(out, "\"n_vertices\": 6"));
	assert_non_null(strstr(out, "\"duplicates_removed\": true"));
	assert_non_null(strstr(out, "\"degree\": {\"min\": 1, \"max\": 2"));

	/* corrupt one edge id: info alone still works, --verify fails with status 1 */
	{
		struct bam_graph_header h;
		char err[256];
		int fd;
		uint32_t id = 5;

		assert_int_equal(bam_graph_header_read(o, &h, err, sizeof(err)), 0);
		fd = open(o, O_WRONLY);
		assert_int_equal(pwrite(fd, &id, 4, (off_t)h.edges_offset), 4);
		close(fd);
	}
	assert_int_equal(run(NULL, 0, "info", o, NULL), 0);
	assert_int_equal(run(out, sizeof(out), "info", o, "--verify", "--json", NULL), 1);
	assert_non_null(strstr(out, "\"ok\": false"));
	/* the failure's error object, as every --json failure has (tools/bam/cli_util.h) */
	assert_non_null(strstr(out, "\"error\": {\"command\":\"graph info\",\"message\":\"bam graph info: "));
	assert_non_null(strstr(out, "\"exit_status\":1}}\n"));
	{
		/* offsets[n] != n_edges (still monotonic): info refuses the file, as the
		 * loader of bfs/cc does, even without --verify */
		struct bam_graph_header h;
		char err[256], *b = dup_str(tmp("b.bamcsr"));
		uint64_t last;
		int fd;

		assert_int_equal(run(NULL, 0, "import", in, "-o", b, "-q", NULL), 0);
		assert_int_equal(bam_graph_header_read(b, &h, err, sizeof(err)), 0);
		fd = open(b, O_RDWR);
		assert_int_equal(pread(fd, &last, 8, (off_t)(h.offsets_offset + h.offsets_bytes - 8)), 8);
		last += 100;
		assert_int_equal(pwrite(fd, &last, 8, (off_t)(h.offsets_offset + h.offsets_bytes - 8)), 8);
		close(fd);
		assert_int_equal(run(out, sizeof(out), "info", b, NULL), 1);
		assert_null(strstr(out, "out-degree:"));
		assert_int_equal(run(out, sizeof(out), "info", b, "--json", NULL), 1);
		assert_null(strstr(out, "\"degree\""));
	}
	assert_int_equal(run(NULL, 0, "info", dup_str(tmp("none")), NULL), 1);
}

/* No file at o and no temporary file left in the directory. */
static void assert_no_output(const char *o)
{
	DIR *d;
	struct dirent *e;

	assert_int_not_equal(access(o, F_OK), 0);
	d = opendir(tmpdir);
	assert_non_null(d);
	while ((e = readdir(d)))
		assert_null(strstr(e->d_name, ".tmp."));
	closedir(d);
}

static void test_import_error_leaves_nothing(void **state)
{
	char *in = dup_str(tmp("bad.graph-txt")), *o = dup_str(tmp("bad.bamcsr"));
	FILE *f = fopen(in, "w");

	(void)state;
	assert_non_null(f);
	fputs("3\n1 2\n0 7\n\n", f);
	fclose(f);
	assert_int_equal(run(NULL, 0, "import", in, "-o", o, "-q", NULL), 1);
	assert_no_output(o);
	assert_int_equal(run(NULL, 0, "import", dup_str(tmp("nope.txt")), "-o", o, NULL), 1);
}

/* A FIFO as the graph of info, or as the input of import: refused at once, naming it
 * (info used to block in open, import in its second pass). */
static void test_fifo(void **state)
{
	char out[8192], in[1024];
	char *f = dup_str(tmp("f")), *o = dup_str(tmp("f.bamcsr"));

	(void)state;
	snprintf(in, sizeof(in), "%s/tiny.snap.txt", BAM_GRAPH_TEST_DATA);
	assert_int_equal(mkfifo(f, 0600), 0);
	alarm(60); /* a regression hangs: fail instead */
	assert_int_equal(run(out, sizeof(out), "info", f, "--json", NULL), 1);
	assert_null(strstr(out, "\"n_vertices\""));
	assert_int_equal(run(NULL, 0, "import", f, "-o", o, "-q", NULL), 1);
	/* a FIFO as the output: a refused -o, exit status 2 (test_output_not_a_file) */
	assert_int_equal(run(NULL, 0, "import", in, "-o", f, "-q", NULL), 2);
	alarm(0);
	assert_no_output(o);
	unlink(f);
}

/* An -o that exists and is not a regular file (a directory, a FIFO) is not replaced: a
 * refused option value, exit status 2 (README, "Machine-readable output"), the same for
 * import and generate (import said 1, generate 2); the directory stays as it was. A
 * missing input is a failure of the run: 1. */
static void test_output_not_a_file(void **state)
{
	char in[1024];
	char *d = dup_str(tmp("outdir")), *f = dup_str(tmp("outfifo"));
	struct stat st;

	(void)state;
	snprintf(in, sizeof(in), "%s/tiny.snap.txt", BAM_GRAPH_TEST_DATA);
	assert_int_equal(mkdir(d, 0700), 0);
	assert_int_equal(mkfifo(f, 0600), 0);
	alarm(60); /* a regression that opens the FIFO hangs: fail instead */
	assert_int_equal(run(NULL, 0, "import", in, "-o", d, "-q", NULL), 2);
	assert_int_equal(run(NULL, 0, "generate", "--scale", "4", "-o", d, "-q", NULL), 2);
	assert_int_equal(run(NULL, 0, "import", in, "-o", f, "-q", NULL), 2);
	assert_int_equal(run(NULL, 0, "generate", "--scale", "4", "-o", f, "-q", NULL), 2);
	alarm(0);
	assert_int_equal(lstat(d, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(lstat(f, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_no_output(dup_str(tmp("nothing-written")));
	/* still 1: a missing input, malformed input */
	assert_int_equal(run(NULL, 0, "import", dup_str(tmp("none.txt")), "-o", dup_str(tmp("o.bamcsr")), "-q", NULL), 1);
	/* still 2: generate's refused parameters */
	assert_int_equal(run(NULL, 0, "generate", "--scale", "4", "--initiator", "0.9,0.9,0.9", "-o",
			     dup_str(tmp("o.bamcsr")), "-q", NULL), 2);
	assert_no_output(dup_str(tmp("o.bamcsr")));
	rmdir(d);
	unlink(f);
}

/* Nothing in out reaches a terminal raw: valid UTF-8 throughout, no control character
 * (C0, DEL, C1) but the line ends. */
static void assert_terminal_safe(const char *out)
{
	for (const unsigned char *p = (const unsigned char *)out; *p;) {
		size_t n = cli_utf8_len(p);
		if (!n || (n == 1 && *p != '\n' && (*p < 0x20 || *p == 0x7f)) || (n == 2 && p[0] == 0xc2 && p[1] < 0xa0))
			fail_msg("byte 0x%02x at offset %td of: %.300s", *p, (const char *)p - out, out);
		p += n;
	}
}

/* A graph file whose source field holds terminal escapes, control characters and bytes
 * that are not UTF-8 (bam_graph_write stores any bytes): `graph info` shows them
 * escaped, \xNN per byte, a backslash as \\, valid printable UTF-8 unchanged; --json
 * gives a valid document whose string has the control characters escaped and each
 * invalid byte as U+FFFD. */
static void test_info_source_escaped(void **state)
{
	/* ESC [2J (clear screen), BEL, DEL, 0xff, 0xc3 '(' (a cut sequence), C1 CSI (c2 9b),
	 * a backslash, then printable UTF-8 (e-acute, check mark) */
	static const char src[] = "a\x1b[2Jb\x07" "c\x7f\xff\xc3(\xc2\x9b" "1m x\\y \xc3\xa9 \xe2\x9c\x93 end";
	/* what info shows: the same, escaped (in C: "\\x1b" is the four characters \x1b) */
	static const char shown[] = "source:        a\\x1b[2Jb\\x07c\\x7f\\xff\\xc3(\\xc2\\x9b1m x\\\\y \xc3\xa9 \xe2\x9c\x93 end\n";
	/* what --json gives back once parsed: each byte that is not UTF-8 as U+FFFD */
	static const char parsed[] = "a\x1b[2Jb\x07" "c\x7f\xef\xbf\xbd\xef\xbf\xbd(\xc2\x9b" "1m x\\y \xc3\xa9 \xe2\x9c\x93 end";
	static const uint64_t off[] = { 0, 1, 2 };
	static uint32_t edges[] = { 1, 0 };
	struct bam_csr g = { .n_vertices = 2, .n_edges = 2, .id_bytes = 4, .offsets = (uint64_t *)off,
			     .edges = edges };
	char out[8192], err[256];
	char *o = dup_str(tmp("src.bamcsr"));
	const char *line;

	(void)state;
	assert_int_equal(bam_graph_write(o, &g, 0, src, err, sizeof(err)), 0);
	assert_int_equal(run(out, sizeof(out), "info", o, "--verify", NULL), 0);
	line = strstr(out, "source:        ");
	assert_non_null(line);
	if (strncmp(line, shown, strlen(shown)))
		fail_msg("source line: %.200s", line);
	assert_terminal_safe(out);

	assert_int_equal(run(out, sizeof(out), "info", o, "--json", NULL), 0);
	assert_terminal_safe(out);
	{
		cJSON *j = cJSON_Parse(out);
		const cJSON *s;

		if (!j)
			fail_msg("not JSON: %.300s", out);
		s = cJSON_GetObjectItemCaseSensitive(j, "source");
		assert_true(cJSON_IsString(s));
		assert_string_equal(s->valuestring, parsed);
		cJSON_Delete(j);
	}
}

static void test_generate(void **state)
{
	char out[8192];
	char *o = dup_str(tmp("k.bamcsr"));

	(void)state;
	assert_int_equal(run(NULL, 0, "generate", "--scale", "9", "--edge-factor", "8", "--seed", "3",
			     "--symmetrize", "--dedup", "--drop-self-loops", "-j", "2", "-q", "-o", o,
			     NULL), 0);
	assert_int_equal(run(out, sizeof(out), "info", o, "--verify", NULL), 0);
	assert_non_null(strstr(out, "vertices:      512"));
	assert_non_null(strstr(out, "symmetric, no self-loops, no duplicates"));
	assert_non_null(strstr(out, "scale=9 edge-factor=8 seed=3"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help_and_usage),
		cmocka_unit_test(test_import_info),
		cmocka_unit_test(test_import_error_leaves_nothing),
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_output_not_a_file),
		cmocka_unit_test(test_info_source_escaped),
		cmocka_unit_test(test_generate),
	};

	return cmocka_run_group_tests_name("graph_cli", tests, setup, teardown) ? 1 : 0;
}
