/* SPDX-License-Identifier: MIT */
/*
 * Slots taken out of use by timed-out commands come back once, and only once, those
 * commands are known complete (bam/array.h "retired", bam_cache_reclaim). CPU target,
 * the emulated controller delaying every completion past the timeout:
 *  - fills that time out retire their slots until the cache has none left (-EBUSY);
 *    none comes back before the late completions arrive; once they have, reclaim gives
 *    every slot back, and the whole array reads correctly through the cache again;
 *  - write-backs that time out pin their slots; the victim search itself unpins them
 *    once the completions arrive (no reclaim call), the lines are written back again
 *    and the media holds what was written;
 *  - a submission that timed out for want of a queue credit (CID unknown) is given
 *    back once its queue pair has no abandoned command left;
 *  - completions that never come (dropped) keep their slots out of use for good.
 * The timeout is changed between phases through the device view (host memory on the
 * CPU target), so that one controller both causes timeouts and then serves reads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "bam/cache.h"

#define LINE 4096u
#define SLOTS 16u
#define LINES 32u                       /* the array: twice the cache */
#define PER_LINE (LINE / 4u)            /* u32 elements per line */
#define N_ELEMS (LINES * PER_LINE)
#define DELAY_US 500000ull              /* every completion comes 0.5 s late ... */
#define SHORT_NS (50ull * 1000 * 1000)  /* ... past a 50 ms timeout */
#define LONG_NS (20ull * 1000 * 1000 * 1000)
/* Exact counts of phase 1 hold if it ended before the first late completion could
 * arrive; on a machine so loaded that it did not, only the invariants are checked. */
#define FAST_PHASE_NS (DELAY_US * 1000 * 8 / 10)

struct env {
	struct bam_ctx *ctx;
	struct bam_cache *cache;
	struct bam_array *arr;
	struct bam_array_dev *a;
	uint32_t *shadow;
};

static void env_open(struct env *e, const char *backend, uint32_t qpairs, uint32_t depth, uint64_t timeout_ns)
{
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = qpairs, .queue_depth = depth,
				 .timeout_ns = timeout_ns, .quiet = 1};
	char err[256] = "";
	int rc = bam_ctx_open(backend, &o, &e->ctx, err, sizeof(err));
	if (rc)
		fprintf(stderr, "%s: %s\n", backend, err);
	assert_int_equal(rc, 0);
	struct bam_cache_opts co = {.capacity = (uint64_t)SLOTS * LINE, .line_size = LINE};
	assert_int_equal(bam_cache_create(e->ctx, &co, &e->cache), 0);
	struct bam_array_opts ao = {.n_elems = N_ELEMS, .elem_size = 4};
	assert_int_equal(bam_array_create(e->cache, &ao, &e->arr), 0);
	e->a = bam_array_dev(e->arr);
	e->shadow = malloc(N_ELEMS * 4);
	assert_non_null(e->shadow);
	for (uint32_t i = 0; i < N_ELEMS; i++)
		e->shadow[i] = i * 2654435761u + 17;
	assert_int_equal(bam_array_media_write(e->arr, 0, e->shadow, N_ELEMS), 0);
}

static void env_close(struct env *e)
{
	bam_cache_destroy(e->cache);
	bam_ctx_close(e->ctx);
	free(e->shadow);
}

/* The bound of every later wait (the device view is host memory on the CPU target;
 * set while no thread uses it). */
static void set_timeout(struct env *e, uint64_t ns)
{
	bam_ctx_dev(e->ctx)->timeout_ns = ns;
}

struct census {
	uint64_t retired, pinned, locked, referenced;
};

static struct census count_slots(const struct env *e)
{
	struct census k = {0};
	const struct bam_cache_dev *c = e->a->cache;
	for (uint64_t s = 0; s < c->n_slots; s++) {
		uint32_t st = __atomic_load_n(&c->state[s], __ATOMIC_ACQUIRE);
		if ((st & ~BAM_SLOT_CNT) == BAM_SLOT_RETIRED)
			k.retired++;
		else if (st & BAM_SLOT_BUSY)
			k.locked++;
		if (st & BAM_SLOT_PINNED)
			k.pinned++;
		if (st & BAM_SLOT_CNT)
			k.referenced++;
	}
	return k;
}

static uint64_t late_completions(const struct env *e)
{
	struct bam_ctrl_stats cs;
	assert_int_equal(bam_ctx_ctrl_stats(e->ctx, 0, &cs), 0);
	return cs.qp.late;
}

/* ---- threads ------------------------------------------------------------------------ */

enum { RC_OK, RC_TIMEDOUT, RC_BUSY, RC_OTHER, RC_N };

struct job {
	struct env *e;
	uint32_t rounds;      /* attempts per thread (phase 1 and B) */
	uint32_t stride;      /* thread t, round k: line first_line + (t + k * stride) % span */
	uint32_t first_line;
	uint32_t span;
	int count[RC_N];
	int wrong;
};

static void tally(struct job *j, int rc)
{
	int k = rc == 0 ? RC_OK : rc == -ETIMEDOUT ? RC_TIMEDOUT : rc == -EBUSY ? RC_BUSY : RC_OTHER;
	__atomic_fetch_add(&j->count[k], 1, __ATOMIC_RELAXED);
}

/* one element of a line per round (see struct job) */
static void read_rounds(void *arg, uint64_t t)
{
	struct job *j = arg;
	for (uint32_t k = 0; k < j->rounds; k++) {
		uint64_t l = j->first_line + (t + (uint64_t)k * j->stride) % j->span;
		uint32_t v = 0;
		int rc = bam_array_read_u32(j->e->a, l * PER_LINE + 5, &v);
		if (rc == 0 && v != j->e->shadow[l * PER_LINE + 5])
			__atomic_fetch_add(&j->wrong, 1, __ATOMIC_RELAXED);
		tally(j, rc);
	}
}

/* every element of lines t, t + stride, ... < LINES, through a line handle */
static void read_lines(void *arg, uint64_t t)
{
	struct job *j = arg;
	for (uint64_t l = j->first_line + t; l < LINES; l += j->stride) {
		struct bam_line h = {.slot = -1};
		int rc = bam_line_get(j->e->a, &h, l * PER_LINE);
		tally(j, rc);
		if (rc)
			continue;
		const uint32_t *v = (const uint32_t *)h.data;
		for (uint32_t i = 0; i < PER_LINE; i++)
			if (v[i] != j->e->shadow[l * PER_LINE + i])
				__atomic_fetch_add(&j->wrong, 1, __ATOMIC_RELAXED);
		bam_line_put(j->e->a, &h);
	}
}

/* write element 7 of line t (a thread per line) */
static void write_lines(void *arg, uint64_t t)
{
	struct job *j = arg;
	uint64_t i = (j->first_line + t) * PER_LINE + 7;
	uint32_t v = (uint32_t)(0xabc00000u + t);
	int rc = bam_array_write_u32(j->e->a, i, v);
	if (rc == 0)
		j->e->shadow[i] = v; /* one writer per element */
	tally(j, rc);
}

/* ---- fills that time out: retired, then all given back by bam_cache_reclaim --------- */

static void test_fill_timeouts_reclaimed(void **state)
{
	(void)state;
	struct env e;
	char be[128];
	snprintf(be, sizeof(be), "emu:size=1M,delay_rate=1,delay_us=%llu", DELAY_US);
	env_open(&e, be, 4, 32, SHORT_NS);

	/* phase 1: 8 threads x 3 fills of distinct lines, each timing out: 16 retire the 16
	 * slots, the other 8 find no slot left (-EBUSY): the defect's end state */
	uint64_t t0 = bam_time_ns();
	struct job j = {.e = &e, .rounds = 3, .stride = 8, .span = LINES};
	assert_int_equal(bam_cpu_launch(8, 8, read_rounds, &j), 0);
	uint64_t t1 = bam_time_ns();
	struct census k = count_slots(&e);
	uint64_t held = 99;
	assert_int_equal(bam_cache_reclaim(e.cache, &held), 0);
	uint64_t t2 = bam_time_ns();
	printf("phase 1: %.3f s: %d timed out, %d busy, %d ok; %llu slots retired, reclaim right after: %llu held\n",
	       (double)(t1 - t0) / 1e9, j.count[RC_TIMEDOUT], j.count[RC_BUSY], j.count[RC_OK],
	       (unsigned long long)k.retired, (unsigned long long)held);
	assert_int_equal(j.count[RC_OTHER], 0);
	assert_int_equal(j.wrong, 0);
	assert_int_equal(k.locked + k.pinned + k.referenced, 0);
	if (t2 - t0 < FAST_PHASE_NS) {
		/* no completion can have come yet: every slot is retired and stays so */
		assert_int_equal(j.count[RC_TIMEDOUT], SLOTS);
		assert_int_equal(j.count[RC_BUSY], 8);
		assert_int_equal(k.retired, SLOTS);
		assert_int_equal(held, SLOTS);
		uint32_t v;
		assert_int_equal(bam_array_read_u32(e.a, 31 * PER_LINE, &v), -EBUSY);
	} else {
		printf("machine too loaded for the exact counts (%.2f s): invariants only\n", (double)(t2 - t0) / 1e9);
	}

	/* the late completions: every slot comes back, and not before they could */
	uint64_t back = 0;
	for (;;) {
		assert_int_equal(bam_cache_reclaim(e.cache, &held), 0);
		if (held == 0) {
			back = bam_time_ns();
			break;
		}
		assert_true(bam_time_ns() - t1 < 10ull * 1000 * 1000 * 1000);
		usleep(20000);
	}
	printf("all slots back %.3f s after phase 1 began (completions are %.1f s late); late CQEs %llu\n",
	       (double)(back - t0) / 1e9, DELAY_US / 1e6, (unsigned long long)late_completions(&e));
	assert_true(back - t0 >= DELAY_US * 1000);
	k = count_slots(&e);
	assert_int_equal(k.retired + k.locked + k.pinned + k.referenced, 0);
	assert_int_equal(late_completions(&e), (uint64_t)j.count[RC_TIMEDOUT]);

	/* phase 2: a normal bound again; the whole array (twice the cache) reads back
	 * exactly, through every slot */
	set_timeout(&e, LONG_NS);
	struct job r = {.e = &e, .stride = SLOTS};
	assert_int_equal(bam_cpu_launch(SLOTS, SLOTS, read_lines, &r), 0);
	assert_int_equal(r.count[RC_OK], LINES);
	assert_int_equal(r.wrong, 0);
	k = count_slots(&e);
	assert_int_equal(k.retired + k.locked + k.pinned + k.referenced, 0);
	assert_int_equal(bam_cache_reclaim(e.cache, &held), 0);
	assert_int_equal(held, 0);
	env_close(&e);
}

/* ---- write-backs that time out: pinned, then unpinned by the victim search ---------- */

static void test_writeback_timeouts_unpinned(void **state)
{
	(void)state;
	struct env e;
	char be[128];
	snprintf(be, sizeof(be), "emu:size=1M,delay_rate=1,delay_us=%llu", DELAY_US);
	/* the exact counts below are those of synchronous write-backs (an eviction whose
	 * write times out fails its access); the asynchronous write-back's timeouts:
	 * tests/test_cache_writeback.c */
	setenv("BAM_WB_SYNC", "1", 1);
	env_open(&e, be, 4, 32, LONG_NS);
	unsetenv("BAM_WB_SYNC");

	/* phase A: lines 0..15 filled (slowly, within the bound) and dirtied */
	struct job w = {.e = &e};
	assert_int_equal(bam_cpu_launch(SLOTS, SLOTS, write_lines, &w), 0);
	assert_int_equal(w.count[RC_OK], SLOTS);

	/* phase B: a short bound; reads of lines 16..31 must evict dirty lines, whose
	 * write-backs time out: 16 pin the 16 slots, 8 find no slot left */
	set_timeout(&e, SHORT_NS);
	uint64_t t0 = bam_time_ns();
	struct job j = {.e = &e, .rounds = 3, .stride = 8, .first_line = SLOTS, .span = LINES - SLOTS};
	assert_int_equal(bam_cpu_launch(8, 8, read_rounds, &j), 0);
	uint64_t t1 = bam_time_ns();
	struct census k = count_slots(&e);
	printf("phase B: %.3f s: %d timed out, %d busy, %d ok; %llu slots pinned\n", (double)(t1 - t0) / 1e9,
	       j.count[RC_TIMEDOUT], j.count[RC_BUSY], j.count[RC_OK], (unsigned long long)k.pinned);
	assert_int_equal(j.count[RC_OTHER], 0);
	assert_int_equal(j.wrong, 0);
	assert_int_equal(k.retired + k.locked + k.referenced, 0);
	if (t1 - t0 < FAST_PHASE_NS) {
		assert_int_equal(j.count[RC_TIMEDOUT], SLOTS);
		assert_int_equal(j.count[RC_BUSY], 8);
		assert_int_equal(k.pinned, SLOTS);
	} else {
		printf("machine too loaded for the exact counts (%.2f s): invariants only\n", (double)(t1 - t0) / 1e9);
	}

	/* phase C: a normal bound, no reclaim call: the victim search waits for the late
	 * completions of the write-backs, unpins the slots, writes the lines back again
	 * and reads lines 16..31 in */
	set_timeout(&e, LONG_NS);
	struct job r = {.e = &e, .stride = SLOTS, .first_line = SLOTS};
	assert_int_equal(bam_cpu_launch(SLOTS, SLOTS, read_lines, &r), 0);
	uint64_t t2 = bam_time_ns();
	printf("phase C: %.3f s after phase B began; late CQEs %llu\n", (double)(t2 - t0) / 1e9,
	       (unsigned long long)late_completions(&e));
	assert_int_equal(r.count[RC_OK], SLOTS);
	assert_int_equal(r.wrong, 0);
	assert_true(t2 - t0 >= DELAY_US * 1000); /* not before the completions came */
	k = count_slots(&e);
	assert_int_equal(k.retired + k.pinned + k.locked + k.referenced, 0);
	assert_int_equal(late_completions(&e), (uint64_t)j.count[RC_TIMEDOUT]);

	/* the writes of phase A are on the media, the rest untouched */
	assert_int_equal(bam_cache_flush(e.cache), 0);
	uint32_t *m = malloc(N_ELEMS * 4);
	assert_non_null(m);
	assert_int_equal(bam_array_media_read(e.arr, 0, m, N_ELEMS), 0);
	assert_memory_equal(m, e.shadow, N_ELEMS * 4);
	free(m);
	env_close(&e);
}

/* ---- a submission that timed out (no credit: CID unknown) ---------------------------- */

static void test_submit_timeout_reclaimed(void **state)
{
	(void)state;
	struct env e;
	char be[128];
	snprintf(be, sizeof(be), "emu:size=1M,delay_rate=1,delay_us=%llu", DELAY_US);
	/* one queue pair of depth 2: one command outstanding at most */
	env_open(&e, be, 1, 2, SHORT_NS);
	uint32_t v;
	uint64_t t0 = bam_time_ns();
	/* the first fill's command times out (its CID abandoned); the second fill finds no
	 * credit before the bound: its submission times out, CID unknown */
	assert_int_equal(bam_array_read_u32(e.a, 0, &v), -ETIMEDOUT);
	assert_int_equal(bam_array_read_u32(e.a, PER_LINE, &v), -ETIMEDOUT);
	const struct bam_cache_dev *c = e.a->cache;
	int nocid = 0;
	for (uint64_t s = 0; s < c->n_slots; s++)
		nocid += (__atomic_load_n(&c->pending[s], __ATOMIC_RELAXED) & BAM_PEND_NOCID) != 0;
	assert_int_equal(nocid, 1);
	uint64_t held = 0;
	assert_int_equal(bam_cache_reclaim(e.cache, &held), 0);
	if (bam_time_ns() - t0 < FAST_PHASE_NS)
		assert_int_equal(held, 2);
	/* once the first command's late completion is passed, the queue pair has no
	 * abandoned command: both slots come back */
	while (held) {
		assert_true(bam_time_ns() - t0 < 10ull * 1000 * 1000 * 1000);
		usleep(20000);
		assert_int_equal(bam_cache_reclaim(e.cache, &held), 0);
	}
	assert_true(bam_time_ns() - t0 >= DELAY_US * 1000);
	set_timeout(&e, LONG_NS);
	assert_int_equal(bam_array_read_u32(e.a, PER_LINE + 3, &v), 0);
	assert_int_equal(v, e.shadow[PER_LINE + 3]);
	struct census k = count_slots(&e);
	assert_int_equal(k.retired + k.pinned + k.locked + k.referenced, 0);
	env_close(&e);
}

/* ---- completions that never come: the slots stay out of use ----------------------- */

static void test_dropped_stay_retired(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "emu:size=1M,drop_rate=1", 4, 32, SHORT_NS);
	struct job j = {.e = &e, .rounds = 3, .stride = 8, .span = LINES};
	assert_int_equal(bam_cpu_launch(8, 8, read_rounds, &j), 0);
	assert_int_equal(j.count[RC_OK] + j.count[RC_OTHER], 0);
	assert_int_equal(j.count[RC_TIMEDOUT], SLOTS);
	usleep(200000);
	uint64_t held = 0;
	assert_int_equal(bam_cache_reclaim(e.cache, &held), 0);
	assert_int_equal(held, SLOTS);
	assert_int_equal(count_slots(&e).retired, SLOTS);
	/* a flush has nothing to write and leaves them retired */
	assert_int_equal(bam_cache_flush(e.cache), 0);
	assert_int_equal(bam_cache_reclaim(e.cache, &held), 0);
	assert_int_equal(held, SLOTS);
	env_close(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fill_timeouts_reclaimed),
		cmocka_unit_test(test_writeback_timeouts_unpinned),
		cmocka_unit_test(test_submit_timeout_reclaimed),
		cmocka_unit_test(test_dropped_stay_retired),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
