/* SPDX-License-Identifier: MIT */
/*
 * The graph application's entry point, bam_graph_run (apps/graph, bam/graph_run.h), on
 * the CPU target: BFS and CC through bam on the emulated SSD and from host memory,
 * checked against the reference; the result's level trace and per-source data; the
 * refusals (a source out of range, GPU options on the CPU target, a file that is not a
 * graph) come back as negative errnos with the message, never as an exit.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "bam/graph.h"
#include "bam/graph_run.h"
#include "tmpdir.h"

/* 0-1-2-3 a path (both directions), 4-5 an arc each way, 6 isolated: two out-lists of
 * length 2 (vertices 1 and 2) */
static void write_graph(const char *path)
{
	static uint64_t off[] = {0, 1, 3, 5, 6, 7, 8, 8};
	static uint32_t e[] = {1, 0, 2, 1, 3, 2, 5, 4};
	struct bam_csr g = {.n_vertices = 7, .n_edges = 8, .id_bytes = 4, .offsets = off, .edges = e};
	char err[256];
	assert_int_equal(bam_graph_write(path, &g, BAM_GRAPH_F_ALL, "test", err, sizeof(err)), 0);
}

static int nmsg[3];
static void count_msg(void *arg, enum bam_graph_msg kind, const char *text)
{
	(void)arg;
	(void)text;
	nmsg[kind]++;
}

static struct bam_graph_run_opts opts(enum bam_graph_algo algo)
{
	struct bam_graph_run_opts o = {.algo = algo, .graph = tmp("g"), .target = BAM_TARGET_CPU, .verify = 1,
				       .quiet = 1, .msg = count_msg, .prog = "test"};
	return o;
}

static void test_bfs_bam(void **state)
{
	(void)state;
	struct bam_graph_run_opts o = opts(BAM_GRAPH_BFS);
	o.level_trace = 1;
	struct bam_graph_run_result r;
	char err[1024];
	memset(nmsg, 0, sizeof(nmsg));
	assert_int_equal(bam_graph_run(&o, &r, err, sizeof(err)), 0);
	assert_int_equal(r.verified, 1);
	assert_int_equal(r.runs, 2); /* vertices 1 and 2 have two out-neighbours */
	assert_non_null(r.sources);
	assert_int_equal(r.sources[0].verified, 1);
	assert_int_equal(r.sources[0].levels, 3); /* from 1 or 2: levels 0, 1, 2 */
	assert_true(r.trace_n == 3 && nmsg[BAM_GRAPH_MSG_TRACE] == 3);
	assert_int_equal(r.trace[0].frontier, 1);
	assert_int_equal(r.line, BAM_GRAPH_BFS_LINE);
	assert_int_equal(r.off_bytes, 4);
	assert_int_equal(r.edges_traversed, 12); /* 6 arcs of the path, twice */
	assert_true(r.st_edge.c.accesses > 0);
	bam_graph_run_result_free(&r);
}

static void test_cc_host(void **state)
{
	(void)state;
	struct bam_graph_run_opts o = opts(BAM_GRAPH_CC);
	o.mode = BAM_GRAPH_MODE_HOST;
	struct bam_graph_run_result r;
	char err[1024];
	assert_int_equal(bam_graph_run(&o, &r, err, sizeof(err)), 0);
	assert_int_equal(r.verified, 1);
	assert_int_equal(r.components, 3);
	assert_string_equal(r.backend_desc, "host memory");
	bam_graph_run_result_free(&r);
}

static void test_refusals(void **state)
{
	(void)state;
	struct bam_graph_run_result r;
	char err[1024];
	struct bam_graph_run_opts o = opts(BAM_GRAPH_BFS);
	o.source_set = 1;
	o.source = 7;
	assert_int_equal(bam_graph_run(&o, &r, err, sizeof(err)), -EINVAL);
	assert_int_equal(r.refused, 1);
	assert_string_equal(err, "test: --source=7: the graph has 7 vertices (ids 0 to 6)");
	o = opts(BAM_GRAPH_BFS);
	o.warps = 64;
	assert_int_equal(bam_graph_run(&o, &r, err, sizeof(err)), -EINVAL);
	assert_true(r.refused && strstr(err, "--warps applies to the GPU target"));
	o = opts(BAM_GRAPH_CC);
	o.graph = tmp("nothing");
	assert_int_equal(bam_graph_run(&o, &r, err, sizeof(err)), -ENOENT);
	assert_false(r.refused);
	bam_graph_run_result_free(&r);
}

static int setup(void **state)
{
	(void)state;
	if (tmpdir_make("bam-graph-run"))
		return -1;
	write_graph(tmp("g"));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_remove();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bfs_bam),
		cmocka_unit_test(test_cc_host),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
