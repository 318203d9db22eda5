/* SPDX-License-Identifier: MIT */
/*
 * The software cache and array API on the CPU target: random reads and writes from
 * many threads against a shadow copy; an oversubscribed cache; flush durability with
 * concurrent writers to one line; an I/O error during a fill; the waiters of a fill
 * that times out; a high-priority array's
 * lines outliving a stream of normal ones, and a cache full of them still evicting.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <cmocka.h>
#include "bam/cache.h"

struct env {
	struct bam_ctx *ctx;
	struct bam_cache *cache;
	struct bam_array *arr;
};

/* The bound of every wait: long where a loaded 2-core CI machine must not turn
 * slowness into failures; short (2 s) where the test is about the bound itself. */
static uint64_t env_timeout_ns = 30000000000ull;

/* the context (options o), a cache and one array of n_elems elements of es bytes */
static void open_env_opts(struct env *e, const char *backend, const struct bam_ctx_opts *o, uint64_t cache_bytes,
			  uint32_t line, uint64_t n_elems, uint32_t es, enum bam_layout layout)
{
	char err[256];
	int rc = bam_ctx_open(backend, o, &e->ctx, err, sizeof(err));
	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	struct bam_cache_opts co = {.capacity = cache_bytes, .line_size = line};
	assert_int_equal(bam_cache_create(e->ctx, &co, &e->cache), 0);
	struct bam_array_opts ao = {.n_elems = n_elems, .elem_size = es, .layout = layout};
	assert_int_equal(bam_array_create(e->cache, &ao, &e->arr), 0);
}

/* open_env_opts with 8 queue pairs of depth 64 and the env_timeout_ns bound */
static void open_env(struct env *e, const char *backend, uint64_t cache_bytes, uint32_t line, uint64_t n_elems,
		     uint32_t es, enum bam_layout layout)
{
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = 8, .queue_depth = 64, .timeout_ns = env_timeout_ns};
	open_env_opts(e, backend, &o, cache_bytes, line, n_elems, es, layout);
}

static void close_env(struct env *e)
{
	bam_cache_destroy(e->cache);
	bam_ctx_close(e->ctx);
}

/* ---- many threads, reads and writes, against a shadow copy ---------------------- */

#define N_ELEMS (1u << 18) /* 1 MiB of u32: 4x the cache below */

struct rw_job {
	struct bam_array_dev *a;
	uint32_t *shadow;     /* expected value of each element */
	uint64_t ops;
	uint32_t nthreads;
	int errors, mismatches;
};

static void rw_thread(void *arg, uint64_t tid)
{
	struct rw_job *j = arg;
	uint64_t r = tid * 0x9e3779b97f4a7c15ull + 1;
	for (uint64_t k = 0; k < j->ops; k++) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		/* thread t writes only elements with i % nthreads == t: the shadow stays exact */
		uint64_t i = (r % (N_ELEMS / j->nthreads)) * j->nthreads + tid;
		if (r & (1ull << 40)) {
			uint32_t v = (uint32_t)(r >> 20);
			if (bam_array_write_u32(j->a, i, v)) {
				__atomic_fetch_add(&j->errors, 1, __ATOMIC_RELAXED);
				continue;
			}
			j->shadow[i] = v;
		} else {
			uint32_t v;
			if (bam_array_read_u32(j->a, i, &v)) {
				__atomic_fetch_add(&j->errors, 1, __ATOMIC_RELAXED);
				continue;
			}
			if (v != j->shadow[i])
				__atomic_fetch_add(&j->mismatches, 1, __ATOMIC_RELAXED);
		}
	}
}

static void test_random_rw_shadow(void **state)
{
	(void)state;
	struct env e;
	open_env(&e, "emu:count=2,size=4M", 256 << 10, 4096, N_ELEMS, 4, BAM_LAYOUT_STRIPE);
	struct rw_job j = {.a = bam_array_dev(e.arr), .ops = 20000, .nthreads = 32};
	j.shadow = calloc(N_ELEMS, 4);
	for (uint32_t i = 0; i < N_ELEMS; i++)
		j.shadow[i] = i * 2654435761u;
	assert_int_equal(bam_array_media_write(e.arr, 0, j.shadow, N_ELEMS), 0);
	assert_int_equal(bam_cpu_launch(32, 32, rw_thread, &j), 0);
	assert_int_equal(j.errors, 0);
	assert_int_equal(j.mismatches, 0);
	/* after a flush the media holds exactly the shadow */
	assert_int_equal(bam_cache_flush(e.cache), 0);
	uint32_t *m = calloc(N_ELEMS, 4);
	assert_int_equal(bam_array_media_read(e.arr, 0, m, N_ELEMS), 0);
	assert_memory_equal(m, j.shadow, (size_t)N_ELEMS * 4);
	struct bam_array_stats s;
	assert_int_equal(bam_array_stats(e.arr, &s), 0);
	assert_true(s.c.misses > 0 && s.c.hits > 0 && s.c.evictions > 0 && s.c.writebacks > 0);
	assert_int_equal(s.c.errors, 0);
	assert_int_equal(s.c.accesses, 32u * 20000u);
	free(m);
	free(j.shadow);
	close_env(&e);
}

/* ---- oversubscription: far more lines than slots, every slot referenced ---------- */

struct hold_job {
	struct bam_array_dev *a;
	pthread_barrier_t all_tried;
	int ok, busy, other;
};

/* each thread holds a line handle on one line; once every thread has tried (the
 * barrier), the holders ask for another line while all slots are referenced */
static void hold_thread(void *arg, uint64_t tid)
{
	struct hold_job *j = arg;
	struct bam_line h1 = {.slot = -1}, h2 = {.slot = -1};
	int rc = bam_line_get(j->a, &h1, tid * 1024);
	pthread_barrier_wait(&j->all_tried);
	if (rc == 0) {
		rc = bam_line_get(j->a, &h2, (tid + 1000) * 1024);
		bam_line_put(j->a, &h2);
	}
	bam_line_put(j->a, &h1);
	if (rc == 0)
		__atomic_fetch_add(&j->ok, 1, __ATOMIC_RELAXED);
	else if (rc == -EBUSY)
		__atomic_fetch_add(&j->busy, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&j->other, 1, __ATOMIC_RELAXED);
}

static void test_oversubscribed_no_hang(void **state)
{
	(void)state;
	struct env e;
	/* 8 slots of 4 KiB; 64 threads each pinning a line then wanting a second one */
	env_timeout_ns = 2000000000ull;
	open_env(&e, "emu:size=16M", 8 * 4096, 4096, 4u << 20, 4, BAM_LAYOUT_STRIPE);
	env_timeout_ns = 30000000000ull;
	struct hold_job j = {.a = bam_array_dev(e.arr)};
	pthread_barrier_init(&j.all_tried, NULL, 64);
	uint64_t t0 = bam_time_ns();
	assert_int_equal(bam_cpu_launch(64, 64, hold_thread, &j), 0);
	double s = (double)(bam_time_ns() - t0) / 1e9;
	/* everyone ends: either served or told -EBUSY after the 2 s bound; never a hang */
	assert_int_equal(j.ok + j.busy + j.other, 64);
	assert_int_equal(j.other, 0);
	/* at most 8 threads could hold a line: the other 56 are refused with -EBUSY after
	 * the bound; of the holders, the first to ask for a second line finds every slot
	 * referenced and is refused too (its release may then serve the others) */
	assert_true(j.busy >= 57);
	assert_true(j.ok <= 7);
	pthread_barrier_destroy(&j.all_tried);
	assert_true(s < 30.0);
	/* the cache still works afterwards: references were all released */
	uint32_t v;
	assert_int_equal(bam_array_read_u32(bam_array_dev(e.arr), 5, &v), 0);
	close_env(&e);
}

/* and many threads streaming over many more lines than slots (no holds): completes */
struct stream_job {
	struct bam_array_dev *a;
	int errors;
	uint64_t n;
};
static void stream_thread(void *arg, uint64_t tid)
{
	struct stream_job *j = arg;
	for (uint64_t i = tid; i < j->n; i += 48 * 131) {
		uint64_t v;
		if (bam_array_read_u64(j->a, i, &v) || v != i * 3)
			__atomic_fetch_add(&j->errors, 1, __ATOMIC_RELAXED);
	}
}

/* 8 MiB of u64 (element i = 3i) through a 16 KiB cache of 512-byte lines. Returns the
 * element count. */
static uint64_t open_streaming(struct env *e)
{
	uint64_t n = 1u << 20;
	open_env(e, "emu:size=16M", 16 << 10, 512, n, 8, BAM_LAYOUT_STRIPE);
	uint64_t *buf = malloc(n * 8);
	assert_non_null(buf);
	for (uint64_t i = 0; i < n; i++)
		buf[i] = i * 3;
	assert_int_equal(bam_array_media_write(e->arr, 0, buf, n), 0);
	free(buf);
	return n;
}

static void test_oversubscribed_streaming(void **state)
{
	(void)state;
	struct env e;
	uint64_t n = open_streaming(&e);
	struct stream_job j = {.a = bam_array_dev(e.arr), .n = n};
	assert_int_equal(bam_cpu_launch(48, 48, stream_thread, &j), 0);
	assert_int_equal(j.errors, 0);
	close_env(&e);
}

/* The same through line handles (bam_line_warp_get: on the CPU target a warp is one
 * thread): every element of every line checked, and afterwards no slot still counts a
 * reference (readers' transient references were all given back). */
static void scan_thread(void *arg, uint64_t tid)
{
	struct stream_job *j = arg;
	const uint64_t per = 64; /* u64 per 512-byte line */
	for (uint64_t first = tid * per; first < j->n; first += 48 * per) {
		struct bam_line h = {.slot = -1};
		if (bam_line_warp_get(j->a, &h, first)) {
			__atomic_fetch_add(&j->errors, 1, __ATOMIC_RELAXED);
			continue;
		}
		const uint64_t *v = (const uint64_t *)h.data;
		if (h.first != first || h.end != first + per)
			__atomic_fetch_add(&j->errors, 1, __ATOMIC_RELAXED);
		for (uint64_t e = 0; e < per; e++)
			if (v[e] != (first + e) * 3)
				__atomic_fetch_add(&j->errors, 1, __ATOMIC_RELAXED);
		bam_line_warp_put(j->a, &h);
		if (h.slot != -1)
			__atomic_fetch_add(&j->errors, 1, __ATOMIC_RELAXED);
	}
}

static void test_line_handle_scan(void **state)
{
	(void)state;
	struct env e;
	uint64_t n = open_streaming(&e);
	struct stream_job j = {.a = bam_array_dev(e.arr), .n = n};
	assert_int_equal(bam_cpu_launch(48, 48, scan_thread, &j), 0);
	assert_int_equal(j.errors, 0);
	const struct bam_cache_dev *c = j.a->cache;
	for (uint64_t k = 0; k < c->n_slots; k++)
		assert_int_equal(__atomic_load_n(&c->state[k], __ATOMIC_ACQUIRE) & (BAM_SLOT_BUSY | BAM_SLOT_CNT), 0);
	struct bam_array_stats st;
	assert_int_equal(bam_array_stats(e.arr, &st), 0);
	assert_true(st.c.misses >= n / 64); /* every line was read in at least once */
	close_env(&e);
}

/* ---- flush durability: concurrent writers to different elements of one line ------ */

struct line_job {
	struct bam_array_dev *a;
	int errors;
};
static void line_writer(void *arg, uint64_t tid)
{
	struct line_job *j = arg;
	/* 64 threads, each owning 16 u32 of the same 4 KiB line 3 (elements 3072..4095),
	 * plus atomic adds into a shared counter element of line 0 */
	for (int k = 0; k < 16; k++)
		if (bam_array_write_u32(j->a, 3072 + tid * 16 + k, (uint32_t)(tid * 1000 + k)))
			__atomic_fetch_add(&j->errors, 1, __ATOMIC_RELAXED);
	for (int k = 0; k < 100; k++)
		if (bam_array_atomic_add_u32(j->a, 7, 1, NULL))
			__atomic_fetch_add(&j->errors, 1, __ATOMIC_RELAXED);
}

static void test_flush_durability(void **state)
{
	(void)state;
	struct env e;
	open_env(&e, "emu:size=1M", 64 << 10, 4096, 8192, 4, BAM_LAYOUT_REPLICATE);
	struct line_job j = {.a = bam_array_dev(e.arr)};
	assert_int_equal(bam_cpu_launch(64, 64, line_writer, &j), 0);
	assert_int_equal(j.errors, 0);
	assert_int_equal(bam_cache_flush(e.cache), 0);
	uint32_t *m = calloc(8192, 4);
	assert_int_equal(bam_array_media_read(e.arr, 0, m, 8192), 0);
	assert_int_equal(m[7], 6400);
	for (uint32_t t = 0; t < 64; t++)
		for (uint32_t k = 0; k < 16; k++)
			assert_int_equal(m[3072 + t * 16 + k], t * 1000 + k);
	for (uint32_t i = 0; i < 3072; i++)
		if (i != 7)
			assert_int_equal(m[i], 0);
	/* a second flush writes nothing new */
	struct bam_array_stats s1, s2;
	bam_array_stats(e.arr, &s1);
	assert_int_equal(bam_cache_flush(e.cache), 0);
	bam_array_stats(e.arr, &s2);
	assert_int_equal(s1.c.writebacks, s2.c.writebacks);
	free(m);
	close_env(&e);
}

/* ---- I/O error during a fill: not published, the caller sees the error ---------- */

static void test_fill_error_not_published(void **state)
{
	(void)state;
	struct env e;
	/* LBAs 16..23 (bytes 8192..12287 = line 2 with 4 KiB lines) fail to read */
	open_env(&e, "emu:size=1M,err_lba=16-24", 64 << 10, 4096, 65536, 4, BAM_LAYOUT_STRIPE);
	struct bam_array_dev *a = bam_array_dev(e.arr);
	uint32_t v = 123;
	assert_int_equal(bam_array_read_u32(a, 2048, &v), -EIO); /* element 2048 = byte 8192 */
	assert_int_equal(v, 0);
	/* again: still an error, never a cached stale line */
	assert_int_equal(bam_array_read_u32(a, 2050, &v), -EIO);
	/* neighbours are fine */
	assert_int_equal(bam_array_read_u32(a, 0, &v), 0);
	assert_int_equal(bam_array_read_u32(a, 3072, &v), 0);
	struct bam_array_stats s;
	bam_array_stats(e.arr, &s);
	assert_int_equal(s.c.errors, 2);
	close_env(&e);
}

/* ---- a fill waiter behind a filler that stands in line ---------------------------- */

/* Threads 0..29 read one line each; threads 30..35 read line 30 together, starting
 * 20 ms later, so line 30's filler stands in the queue pair's credit line with most
 * of the others. Every command takes 10 ms and the queue pair holds one at a time, so
 * the 31 lines take about 310 ms, five times the 60 ms timeout. */
struct inline_job {
	struct bam_array_dev *a;
	int errors, wrong;
};

static void line_reader(void *arg, uint64_t tid)
{
	struct inline_job *j = arg;
	uint64_t line = tid < 30 ? tid : 30;
	if (tid >= 30) {
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
	}
	uint32_t v = 0;
	const uint64_t i = line * 1024 + tid; /* 1024 u32 per 4 KiB line */
	if (bam_array_read_u32(j->a, i, &v))
		__atomic_fetch_add(&j->errors, 1, __ATOMIC_RELAXED);
	else if (v != (uint32_t)i * 7u)
		__atomic_fetch_add(&j->wrong, 1, __ATOMIC_RELAXED);
}

static void test_fill_waiter_in_line(void **state)
{
	(void)state;
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = 1, .queue_depth = 2, .timeout_ns = 60000000ull};
	struct env e;
	open_env_opts(&e, "emu:size=1M,delay_rate=1,delay_us=10000", &o, 128 << 10, 4096, 32 * 1024, 4, BAM_LAYOUT_STRIPE);
	uint32_t *init = malloc(32 * 1024 * 4);
	for (uint32_t k = 0; k < 32 * 1024; k++)
		init[k] = k * 7u;
	assert_int_equal(bam_array_media_write(e.arr, 0, init, 32 * 1024), 0);
	free(init);
	struct inline_job j = {.a = bam_array_dev(e.arr)};
	assert_int_equal(bam_cpu_launch(36, 36, line_reader, &j), 0);
	/* a waiter's bound restarts with every completion on the device: none times out
	 * (with an absolute bound, those of line 30 failed after 60 ms, unless their
	 * filler happened to get an early credit) */
	assert_int_equal(j.errors, 0);
	assert_int_equal(j.wrong, 0);
	close_env(&e);
}

/* ---- the waiters of a fill that fails ------------------------------------------- */

/* Thread 0 reads line 0 of a controller that has stopped answering; threads 1..8 read
 * the same line 20 ms later, while thread 0's fill waits for its completion. They
 * fail with the fill's error when it times out, without reading the line again
 * themselves. (Before, a waiter that found the line free again read it itself and
 * waited a second timeout: two reads sent, twice the time.) */
struct failwait_job {
	struct bam_array_dev *a;
	int rc[9];
};

static void failwait_reader(void *arg, uint64_t tid)
{
	struct failwait_job *j = arg;
	if (tid) {
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
	}
	uint32_t v = 1;
	j->rc[tid] = bam_array_read_u32(j->a, tid, &v); /* all in line 0 */
}

static uint64_t submitted_of(struct bam_ctx *ctx)
{
	struct bam_ctrl_stats cs;
	assert_int_equal(bam_ctx_ctrl_stats(ctx, 0, &cs), 0);
	return cs.qp.submitted;
}

static void test_fill_failure_fails_its_waiters(void **state)
{
	(void)state;
	const uint64_t timeout = 300000000ull; /* 300 ms */
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = 2, .queue_depth = 16, .timeout_ns = timeout};
	struct env e;
	/* the controller answers one command (the read of line 1 below), then no more */
	open_env_opts(&e, "emu:size=1M,stop_after=1", &o, 64 << 10, 4096, 64 * 1024, 4, BAM_LAYOUT_STRIPE);
	struct bam_array_dev *a = bam_array_dev(e.arr);
	uint32_t v = 1;
	assert_int_equal(bam_array_read_u32(a, 1024, &v), 0); /* line 1: answered */
	const uint64_t sub0 = submitted_of(e.ctx);

	struct failwait_job j = {.a = a};
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(bam_cpu_launch(9, 9, failwait_reader, &j), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int k = 0; k < 9; k++)
		assert_int_equal(j.rc[k], -ETIMEDOUT);
	/* one read was sent for line 0, not nine */
	assert_int_equal(submitted_of(e.ctx) - sub0, 1);
	const double el = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(el < 3.0 * (double)timeout / 1e9); /* a backstop: no hang (one timeout expected) */
	struct bam_array_stats st;
	bam_array_stats(e.arr, &st);
	assert_int_equal(st.c.errors, 9);

	/* a later read of the line is not answered from the failure: it reads again */
	assert_int_equal(bam_array_read_u32(a, 5, &v), -ETIMEDOUT);
	assert_int_equal(submitted_of(e.ctx) - sub0, 2);
	close_env(&e);
}

/* out-of-range index: -ERANGE, nothing touched */
static void test_out_of_range(void **state)
{
	(void)state;
	struct env e;
	open_env(&e, "emu:size=1M", 64 << 10, 4096, 1000, 8, BAM_LAYOUT_STRIPE);
	uint64_t v = 5;
	assert_int_equal(bam_array_read_u64(bam_array_dev(e.arr), 1000, &v), -ERANGE);
	assert_int_equal(v, 0);
	assert_int_equal(bam_array_write_u64(bam_array_dev(e.arr), ~0ull, 1), -ERANGE);
	close_env(&e);
}

/* arrays that cannot be: refused with -EINVAL and the reason in bam_ctx_error */
static void test_array_refusals(void **state)
{
	(void)state;
	struct env e;
	open_env(&e, "emu:size=1M", 64 << 10, 4096, 1000, 8, BAM_LAYOUT_STRIPE);
	struct bam_array *x = NULL;
	/* a first controller past the context's one controller (its count wrapped) */
	struct bam_array_opts o1 = {.n_elems = 10, .elem_size = 8, .first_ctrl = 5};
	assert_int_equal(bam_array_create(e.cache, &o1, &x), -EINVAL);
	assert_non_null(strstr(bam_ctx_error(e.ctx), "the context has 1"));
	struct bam_array_opts o2 = {.n_elems = 10, .elem_size = 8, .n_ctrl = 2};
	assert_int_equal(bam_array_create(e.cache, &o2, &x), -EINVAL);
	assert_non_null(strstr(bam_ctx_error(e.ctx), "the context has 1"));
	/* n_elems * elem_size past 2^64 (it wrapped to an array of 0 lines) */
	struct bam_array_opts o3 = {.n_elems = 1ull << 62, .elem_size = 8};
	assert_int_equal(bam_array_create(e.cache, &o3, &x), -EINVAL);
	assert_non_null(strstr(bam_ctx_error(e.ctx), "64 bits"));
	/* more lines than a cache tag can name: the reason, not the previous one */
	struct bam_array_opts o4 = {.n_elems = 1ull << 49, .elem_size = 8};
	assert_int_equal(bam_array_create(e.cache, &o4, &x), -EINVAL);
	assert_non_null(strstr(bam_ctx_error(e.ctx), "lines of 4096 bytes"));
	/* bytes just under 2^64: rounding up to whole lines must not wrap to no lines */
	struct bam_array_opts o5 = {.n_elems = (UINT64_MAX >> 3), .elem_size = 8};
	assert_int_equal(bam_array_create(e.cache, &o5, &x), -EINVAL);
	assert_non_null(strstr(bam_ctx_error(e.ctx), "lines of 4096 bytes"));
	assert_null(x);
	close_env(&e);
}

/* Lines of a high-priority array (bam_array_opts.priority 1) stay cached while a stream
 * of normal lines passes through the cache; at priority 0 the same stream evicts them.
 * One thread, so the clock's order is fixed: a search passes over the 4 kept slots of
 * the 16 at most twice (8 skips: the first sweep may only clear the normal slots' REF
 * bits) before it meets a normal one, so this holds with BAM_KEEP_SKIPS >= 8. */
static uint64_t misses_of(struct bam_array *a)
{
	struct bam_array_stats st;
	assert_int_equal(bam_array_stats(a, &st), 0);
	return st.c.misses;
}

static void test_priority_keeps_lines(void **state)
{
	(void)state;
	for (uint32_t prio = 0; prio <= 1; prio++) {
		struct env e; /* 16 lines of 4 KiB; the normal array: 1024 lines of 512 u64 */
		open_env(&e, "emu:size=8M", 64 << 10, 4096, 1024 * 512, 8, BAM_LAYOUT_STRIPE);
		struct bam_array *hp = NULL;
		struct bam_array_opts ho = {.n_elems = 4 * 512, .elem_size = 8, .base_lba = bam_array_end_lba(e.arr),
					    .priority = prio};
		assert_int_equal(bam_array_create(e.cache, &ho, &hp), 0);
		uint64_t v;
		for (uint64_t l = 0; l < 4; l++)
			assert_int_equal(bam_array_read_u64(bam_array_dev(hp), l * 512, &v), 0);
		assert_int_equal(misses_of(hp), 4);
		for (uint64_t l = 0; l < 1024; l++) /* 64 times the cache */
			assert_int_equal(bam_array_read_u64(bam_array_dev(e.arr), l * 512, &v), 0);
		assert_int_equal(misses_of(e.arr), 1024);
		for (uint64_t l = 0; l < 4; l++)
			assert_int_equal(bam_array_read_u64(bam_array_dev(hp), l * 512 + 7, &v), 0);
		assert_int_equal(misses_of(hp), prio ? 4 : 8);
		close_env(&e);
	}
}

/* A cache holding nothing but high-priority lines still evicts them (a priority is not a
 * pin): 64 lines through 16 slots, twice, each value as written; and a priority other
 * than 0 or 1 is refused. */
static void test_priority_not_a_pin(void **state)
{
	(void)state;
	struct env e;
	open_env(&e, "emu:size=1M", 64 << 10, 4096, 512, 8, BAM_LAYOUT_STRIPE);
	struct bam_array *hp = NULL, *x = NULL;
	struct bam_array_opts bad = {.n_elems = 8, .elem_size = 8, .base_lba = bam_array_end_lba(e.arr), .priority = 2};
	assert_int_equal(bam_array_create(e.cache, &bad, &x), -EINVAL);
	assert_non_null(strstr(bam_ctx_error(e.ctx), "priority 2"));
	assert_null(x);
	struct bam_array_opts ho = {.n_elems = 64 * 512, .elem_size = 8, .base_lba = bam_array_end_lba(e.arr),
				    .priority = 1};
	assert_int_equal(bam_array_create(e.cache, &ho, &hp), 0);
	uint64_t *data = malloc(64 * 512 * sizeof(uint64_t));
	assert_non_null(data);
	for (uint64_t i = 0; i < 64 * 512; i++)
		data[i] = i * 2654435761u;
	assert_int_equal(bam_array_media_write(hp, 0, data, 64 * 512), 0);
	for (int pass = 0; pass < 2; pass++)
		for (uint64_t l = 0; l < 64; l++) {
			uint64_t v = 0, i = l * 512 + (uint64_t)pass * 3;
			assert_int_equal(bam_array_read_u64(bam_array_dev(hp), i, &v), 0);
			assert_int_equal(v, data[i]);
		}
	/* each pass reads 64 lines through 16 slots: at least 48 of them are evicted and
	 * read again (the clock's skips keep a few past their turn) */
	const uint64_t mi = misses_of(hp);
	assert_true(mi >= 64 + 48 && mi <= 128);
	free(data);
	close_env(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_rw_shadow),
		cmocka_unit_test(test_oversubscribed_no_hang),
		cmocka_unit_test(test_oversubscribed_streaming),
		cmocka_unit_test(test_line_handle_scan),
		cmocka_unit_test(test_flush_durability),
		cmocka_unit_test(test_fill_error_not_published),
		cmocka_unit_test(test_fill_waiter_in_line),
		cmocka_unit_test(test_fill_failure_fails_its_waiters),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_array_refusals),
		cmocka_unit_test(test_priority_keeps_lines),
		cmocka_unit_test(test_priority_not_a_pin),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
