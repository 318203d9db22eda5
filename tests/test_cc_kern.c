/* SPDX-License-Identifier: MIT */
/*
 * The connected-components kernel's union-find (apps/graph/src/graph_kern.h: cc_union,
 * cc_find, cc_flatten), on host threads (the CPU target compiles the same code):
 *  - flattening a vertex writes its own label only (a flattening that also halved the
 *    paths it walked could store a stale ancestor into a label another thread had
 *    already set to the root: a wrong label, seen on the H200);
 *  - threads flattening disjoint vertex sets of one deep forest at once leave every
 *    label at its root;
 *  - threads joining the arcs of a random graph at once, then flattening, give each
 *    vertex the smallest id of its component, as a sequential union-find does;
 *  - the walks refuse offsets that no CSR has (out of order, past the edge array), as
 *    storage that does not hold the graph returns them: -EBADMSG recorded, no list
 *    walked from them (graph_kern.h, gv_offsets_bad).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "../apps/graph/src/graph_kern.h"

#define THREADS 8u

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* flattening v in a chain 0 <- 1 <- ... <- n-1 sets label[v] to 0 and no other label */
static void flatten_writes_own_label_only(void **state)
{
	(void)state;
	enum { N = 100 };
	uint64_t label[N], before[N];
	for (uint64_t i = 0; i < N; i++)
		label[i] = i ? i - 1 : 0;
	memcpy(before, label, sizeof(label));
	struct cc_state c = {.label = label};
	cc_flatten(&c, N - 1);
	assert_int_equal(label[N - 1], 0);
	for (uint64_t i = 0; i < N - 1; i++)
		assert_int_equal(label[i], before[i]);
	for (uint64_t v = N; v-- > 0;)
		cc_flatten(&c, v);
	for (uint64_t i = 0; i < N; i++)
		assert_int_equal(label[i], 0);
}

struct job {
	uint64_t *label;
	const uint64_t *arcs; /* [m][2] or NULL */
	uint64_t n, m;
	uint32_t t;
	pthread_barrier_t *bar;
};

/* thread t: join arcs t, t+T, ... (if any), wait for all, flatten vertices t, t+T, ... */
static void *worker(void *arg)
{
	struct job *j = arg;
	for (uint64_t k = j->t; k < j->m; k += THREADS)
		cc_union(j->label, j->arcs[2 * k], j->arcs[2 * k + 1]);
	pthread_barrier_wait(j->bar);
	struct cc_state c = {.label = j->label};
	for (uint64_t v = j->t; v < j->n; v += THREADS)
		cc_flatten(&c, v);
	return NULL;
}

static void run_threads(uint64_t *label, const uint64_t *arcs, uint64_t n, uint64_t m)
{
	pthread_t th[THREADS];
	struct job jobs[THREADS];
	pthread_barrier_t bar;
	assert_int_equal(pthread_barrier_init(&bar, NULL, THREADS), 0);
	for (uint32_t t = 0; t < THREADS; t++) {
		jobs[t] = (struct job){.label = label, .arcs = arcs, .n = n, .m = m, .t = t, .bar = &bar};
		assert_int_equal(pthread_create(&th[t], NULL, worker, &jobs[t]), 0);
	}
	for (uint32_t t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&bar);
}

/* a deep random forest (each vertex's parent a smaller id, 1 in 64 a root), flattened
 * by all threads at once: every label is its root */
static void concurrent_flatten_reaches_roots(void **state)
{
	(void)state;
	const uint64_t n = 1u << 18;
	uint64_t *label = malloc(n * 8), *want = malloc(n * 8);
	assert_non_null(label);
	assert_non_null(want);
	uint64_t s = 0x9e3779b97f4a7c15ull;
	for (int round = 0; round < 10; round++) {
		for (uint64_t i = 0; i < n; i++) {
			uint64_t r = rng_next(&s);
			/* mostly a close parent: long chains */
			label[i] = i == 0 || r % 64 == 0 ? i : i - 1 - (r >> 8) % (i < 4 ? i : 4);
		}
		for (uint64_t i = 0; i < n; i++)
			want[i] = label[i] == i ? i : want[label[i]]; /* parents come first */
		run_threads(label, NULL, n, 0);
		for (uint64_t i = 0; i < n; i++)
			if (label[i] != want[i])
				fail_msg("round %d: label of %llu is %llu, its root is %llu", round, (unsigned long long)i,
					 (unsigned long long)label[i], (unsigned long long)want[i]);
	}
	free(label);
	free(want);
}

static uint64_t seq_find(uint64_t *p, uint64_t x)
{
	while (p[x] != x)
		x = p[x] = p[p[x]];
	return x;
}

/* random arcs joined by all threads at once, then flattened: each label is the smallest
 * id of the vertex's component (a sequential union-find's answer) */
static void concurrent_union_matches_sequential(void **state)
{
	(void)state;
	const uint64_t n = 1u << 16, m = 3u << 15; /* 1.5 arcs per vertex: many components */
	uint64_t *arcs = malloc(m * 16), *label = malloc(n * 8), *p = malloc(n * 8);
	assert_non_null(arcs);
	assert_non_null(label);
	assert_non_null(p);
	uint64_t s = 12345;
	for (int round = 0; round < 10; round++) {
		for (uint64_t k = 0; k < m; k++) {
			arcs[2 * k] = rng_next(&s) % n;
			arcs[2 * k + 1] = rng_next(&s) % n;
		}
		for (uint64_t i = 0; i < n; i++)
			label[i] = p[i] = i;
		for (uint64_t k = 0; k < m; k++) {
			uint64_t a = seq_find(p, arcs[2 * k]), b = seq_find(p, arcs[2 * k + 1]);
			if (a != b)
				p[a > b ? a : b] = a > b ? b : a; /* the smaller root stays root */
		}
		run_threads(label, arcs, n, m);
		for (uint64_t i = 0; i < n; i++)
			if (label[i] != seq_find(p, i))
				fail_msg("round %d: label of %llu is %llu, its component's smallest id is %llu", round,
					 (unsigned long long)i, (unsigned long long)label[i],
					 (unsigned long long)seq_find(p, i));
	}
	free(arcs);
	free(label);
	free(p);
}

/* One CC walk (walk_range, one CPU thread) and one BFS neighbour range (gv_range) over
 * a 4-vertex graph with offsets off[] (plain pointers, as the baselines read them):
 * the error recorded, and how many arcs were walked. */
static uint32_t walk_offsets(const uint32_t off[5], uint64_t *arcs, int *range_rc)
{
	static const uint32_t edges[4] = {1, 2, 3, 0};
	struct gv_counters ctr;
	memset(&ctr, 0, sizeof(ctr));
	uint64_t label[4] = {0, 1, 2, 3};
	struct graph_view g;
	memset(&g, 0, sizeof(g));
	g.id_bytes = 4;
	g.off_bytes = 4;
	g.n = 4;
	g.m = 4;
	g.off_p = off;
	g.edge_p = edges;
	g.ctr = &ctr;
	struct cc_state c = {.label = label};
	walk_range(&g, NULL, &c, 0, 4, 0, 1);
	*arcs = 0;
	for (int v = 0; v < 4; v++) /* arcs joined: vertices no longer their own label */
		*arcs += cc_root(label, (uint64_t)v) != (uint64_t)v;
	const uint32_t walk_err = ctr.error;
	ctr.error = 0;
	uint64_t s = 0, e = 0;
	*range_rc = gv_range(&g, 1, &s, &e);
	assert_int_equal(ctr.error, (uint32_t)-*range_rc);
	return walk_err;
}

static void walks_refuse_bad_offsets(void **state)
{
	(void)state;
	uint64_t joined;
	int rc;
	static const uint32_t good[5] = {0, 1, 2, 3, 4}, unordered[5] = {0, 3, 1, 4, 4}, past_m[5] = {0, 1, 2, 3, 9},
			      wrapped[5] = {0, 4, 4, 4, 3};
	assert_int_equal(walk_offsets(good, &joined, &rc), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(joined, 3); /* one component: every vertex but 0 under 0 */
	assert_int_equal(walk_offsets(unordered, &joined, &rc), EBADMSG);
	assert_int_equal(rc, -EBADMSG); /* vertex 1: [3, 1) */
	assert_int_equal(joined, 0);
	assert_int_equal(walk_offsets(past_m, &joined, &rc), EBADMSG);
	assert_int_equal(rc, 0); /* vertex 1's own list [1, 2) is fine */
	assert_int_equal(joined, 0);
	assert_int_equal(walk_offsets(wrapped, &joined, &rc), EBADMSG);
	assert_int_equal(rc, 0);
	assert_int_equal(joined, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(flatten_writes_own_label_only),
		cmocka_unit_test(concurrent_flatten_reaches_roots),
		cmocka_unit_test(concurrent_union_matches_sequential),
		cmocka_unit_test(walks_refuse_bad_offsets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
