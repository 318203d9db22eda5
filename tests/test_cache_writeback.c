/* SPDX-License-Identifier: MIT */
/*
 * The cache's write path on the CPU target (bam/detail/cache_slots.h, BAM_SLOT_WRITING):
 * read-only arrays; whole-line stores without a fetch; asynchronous write-back of dirty
 * victims: durability after the flush under concurrent evictions, a read of a line
 * whose write-back is in flight, an injected write error (emu err_lba) that keeps the
 * line dirty and reaches the caller, and every line dirty with slow writes (no hang:
 * ctest's timeout is the bound). No wall-clock assertions.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "bam/cache.h"

#define LINE 4096u
#define PER_LINE (LINE / 4u)

struct env {
	struct bam_ctx *ctx;
	struct bam_cache *cache;
	struct bam_array *arr;
	struct bam_array_dev *a;
	uint32_t n_lines;
	uint32_t *shadow; /* what the media should hold after the flush */
};

static uint32_t initial(uint32_t i) { return i * 2654435761u + 17; }

static void env_open(struct env *e, const char *backend, uint32_t slots, uint32_t lines, int read_only)
{
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = 4, .queue_depth = 32,
				 .timeout_ns = 30ull * 1000 * 1000 * 1000, .quiet = 1};
	char err[256] = "";
	int rc = bam_ctx_open(backend, &o, &e->ctx, err, sizeof(err));
	if (rc)
		fprintf(stderr, "%s: %s\n", backend, err);
	assert_int_equal(rc, 0);
	struct bam_cache_opts co = {.capacity = (uint64_t)slots * LINE, .line_size = LINE};
	assert_int_equal(bam_cache_create(e->ctx, &co, &e->cache), 0);
	struct bam_array_opts ao = {.n_elems = (uint64_t)lines * PER_LINE, .elem_size = 4, .read_only = (uint32_t)read_only};
	assert_int_equal(bam_array_create(e->cache, &ao, &e->arr), 0);
	e->a = bam_array_dev(e->arr);
	e->n_lines = lines;
	e->shadow = malloc((size_t)lines * LINE);
	assert_non_null(e->shadow);
	for (uint32_t i = 0; i < lines * PER_LINE; i++)
		e->shadow[i] = initial(i);
	assert_int_equal(bam_array_media_write(e->arr, 0, e->shadow, (uint64_t)lines * PER_LINE), 0);
}

static void env_close(struct env *e)
{
	bam_cache_destroy(e->cache);
	bam_ctx_close(e->ctx);
	free(e->shadow);
}

static void check_media(struct env *e)
{
	const uint64_t n = (uint64_t)e->n_lines * PER_LINE;
	uint32_t *m = malloc(n * 4);
	assert_non_null(m);
	assert_int_equal(bam_array_media_read(e->arr, 0, m, n), 0);
	uint64_t wrong = 0;
	for (uint64_t i = 0; i < n; i++)
		wrong += m[i] != e->shadow[i];
	free(m);
	assert_int_equal(wrong, 0);
}

static struct bam_array_stats stats(struct env *e)
{
	struct bam_array_stats s;
	assert_int_equal(bam_array_stats(e->arr, &s), 0);
	return s;
}

/* ---- read-only arrays and whole-line stores ------------------------------------------ */

static void test_read_only_refuses_writes(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "emu:size=1M", 4, 16, 1);
	uint32_t v = 0;
	assert_int_equal(bam_array_read_u32(e.a, 5, &v), 0);
	assert_int_equal(v, initial(5));
	assert_int_equal(bam_array_write_u32(e.a, 5, 1), -EPERM);
	assert_int_equal(bam_array_atomic_add_u32(e.a, 6, 1, NULL), -EPERM);
	struct bam_line h = {0};
	assert_int_equal(bam_line_warp_get_overwrite(e.a, &h, 0), -EPERM);
	assert_int_equal(bam_line_warp_get_write(e.a, &h, 0), -EPERM);
	assert_int_equal(bam_ctx_dev(e.ctx)->error, EPERM);
	/* read every line through a cache of 4: evictions, nothing written */
	for (uint32_t i = 0; i < 16 * PER_LINE; i += PER_LINE / 2)
		assert_int_equal(bam_array_read_u32(e.a, i, &v), 0);
	assert_int_equal(bam_cache_flush(e.cache), 0);
	struct bam_array_stats s = stats(&e);
	assert_int_equal(s.c.bytes_written, 0);
	assert_int_equal(s.c.writebacks, 0);
	check_media(&e);
	env_close(&e);
}

static void test_overwrite_skips_fetch(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "emu:size=1M", 4, 16, 0);
	/* whole lines 0..7 through overwrite handles: no read */
	for (uint32_t l = 0; l < 8; l++) {
		struct bam_line h = {0};
		assert_int_equal(bam_line_warp_get_overwrite(e.a, &h, (uint64_t)l * PER_LINE), 0);
		for (uint64_t k = 0; k < h.end - h.first; k++) {
			((volatile uint32_t *)h.data)[k] = (uint32_t)(h.first + k) ^ 0xabcdu;
			e.shadow[h.first + k] = (uint32_t)(h.first + k) ^ 0xabcdu;
		}
		bam_line_warp_put(e.a, &h);
	}
	/* one element of lines 8..11: partial writes, each line fetched */
	for (uint32_t l = 8; l < 12; l++) {
		assert_int_equal(bam_array_write_u32(e.a, (uint64_t)l * PER_LINE + 3, 77u + l), 0);
		e.shadow[l * PER_LINE + 3] = 77u + l;
	}
	assert_int_equal(bam_cache_flush(e.cache), 0);
	struct bam_array_stats s = stats(&e);
	assert_int_equal(s.c.fills_avoided, 8);
	assert_int_equal(s.c.partial_write_fetches, 4);
	assert_int_equal(s.c.bytes_read, 4 * LINE); /* only the partial lines were read */
	assert_int_equal(s.c.bytes_written, 12 * LINE);
	check_media(&e);
	env_close(&e);
}

/* ---- a read of a line whose write-back is in flight --------------------------------- */

/* By hand, deterministically: line 0 dirty in the only slot; its write-back started
 * (WRITING) and not reaped; a read of line 0 is a hit on the new data; the reap makes
 * it clean; the media holds it. The emulator delays every command 20 ms, so the write
 * is still in flight at the read unless the machine stalls the test longer than that
 * (the read's result is checked either way). */
static void test_read_during_writeback_by_hand(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "emu:size=1M,delay_rate=1,delay_us=20000", 1, 4, 0);
	assert_int_equal(bam_array_write_u32(e.a, 10, 4242), 0);
	e.shadow[10] = 4242;
	struct bam_cache_dev *c = e.a->cache;
	/* lock the slot as the victim search does, start its write-back */
	uint32_t st = __atomic_load_n(&c->state[0], __ATOMIC_ACQUIRE);
	assert_true((st & (BAM_SLOT_VALID | BAM_SLOT_DIRTY)) == (BAM_SLOT_VALID | BAM_SLOT_DIRTY));
	assert_int_equal(st & BAM_SLOT_CNT, 0);
	assert_true(__atomic_compare_exchange_n(&c->state[0], &st, st | BAM_SLOT_BUSY, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	struct bam_wb wb;
	wb.live = 0;
	assert_int_equal(bam_cache_wb_start(c, 0, 0, &wb), 1);
	st = __atomic_load_n(&c->state[0], __ATOMIC_ACQUIRE);
	assert_true(st & BAM_SLOT_WRITING);
	assert_false(st & (BAM_SLOT_DIRTY | BAM_SLOT_BUSY));
	uint32_t v = 0;
	assert_int_equal(bam_array_read_u32(e.a, 10, &v), 0); /* a hit on the slot */
	assert_int_equal(v, 4242);
	assert_int_equal(bam_cache_wb_reap(&wb), 0);
	st = __atomic_load_n(&c->state[0], __ATOMIC_ACQUIRE);
	assert_false(st & (BAM_SLOT_WRITING | BAM_SLOT_DIRTY));
	check_media(&e);
	/* a miss of another line now takes the clean slot without a write */
	assert_int_equal(bam_array_read_u32(e.a, PER_LINE + 1, &v), 0);
	assert_int_equal(v, initial(PER_LINE + 1));
	assert_int_equal(bam_array_read_u32(e.a, 10, &v), 0); /* from the media */
	assert_int_equal(v, 4242);
	assert_int_equal(stats(&e).c.writebacks, 1);
	env_close(&e);
}

/* Concurrently: thread 0 of each pair writes line L then reads another line (evicting
 * L, whose write is slow), thread 1 reads line L over and over meanwhile: every read
 * returns the written value. */
struct race {
	struct env *e;
	uint32_t rounds;
	uint64_t wrong, errs;
};

/* The writer and the reader of a pair access the same element at once: the element
 * itself through atomic loads and stores (the array's accessors use plain ones, and the
 * API leaves the ordering of one element's concurrent accesses to the application), so
 * that ThreadSanitizer judges the cache's protocol around them, not the test's own race
 * on the payload. */
static int elem_store(struct bam_array_dev *a, uint64_t i, uint32_t v)
{
	void *p = NULL;
	const int64_t s = bam_array_ref_ex(a, i, &p, BAM_ACQ_WRITE);
	if (s < 0)
		return (int)s;
	bam_store_relaxed_u32((uint32_t *)p, v);
	bam_slot_mark_dirty(a->cache, (uint64_t)s);
	bam_slot_put(a->cache, (uint64_t)s, 1);
	return 0;
}

static int elem_load(struct bam_array_dev *a, uint64_t i, uint32_t *v)
{
	void *p = NULL;
	const int64_t s = bam_array_ref(a, i, &p);
	*v = 0;
	if (s < 0)
		return (int)s;
	*v = bam_load_relaxed_u32((const uint32_t *)p);
	bam_slot_put(a->cache, (uint64_t)s, 1);
	return 0;
}

static void race_fn(void *arg, uint64_t t)
{
	struct race *r = arg;
	struct bam_array_dev *a = r->e->a;
	const uint32_t pair = (uint32_t)(t / 2), role = (uint32_t)(t % 2);
	const uint64_t idx = (uint64_t)pair * PER_LINE + 5; /* line 'pair' */
	uint64_t wrong = 0, errs = 0;
	for (uint32_t k = 0; k < r->rounds; k++) {
		const uint32_t val = 1000u * pair + k;
		uint32_t v;
		if (role == 0) {
			errs += elem_store(a, idx, val) != 0;
			/* lines past the pairs' own: evictions */
			errs += bam_array_read_u32(a, (uint64_t)(8 + (k + pair) % 8) * PER_LINE, &v) != 0;
		} else {
			/* every read sees a value written by this round or an earlier one of
			 * its writer, never the media's older one */
			if (elem_load(a, idx, &v))
				errs++;
			else if (k > 0 && (v < 1000u * pair || v >= 1000u * pair + r->rounds))
				wrong++;
		}
	}
	__atomic_fetch_add(&r->wrong, wrong, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->errs, errs, __ATOMIC_RELAXED);
}

static void test_read_races_writeback(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "emu:size=1M,delay_rate=0.5,delay_us=500", 4, 16, 0);
	/* the first round: each writer's first value on the line before the readers start */
	for (uint32_t p = 0; p < 4; p++)
		assert_int_equal(bam_array_write_u32(e.a, (uint64_t)p * PER_LINE + 5, 1000u * p), 0);
	struct race r = {.e = &e, .rounds = 200};
	assert_int_equal(bam_cpu_launch(8, 8, race_fn, &r), 0);
	assert_int_equal(r.errs, 0);
	assert_int_equal(r.wrong, 0);
	assert_int_equal(bam_cache_flush(e.cache), 0);
	for (uint32_t p = 0; p < 4; p++)
		e.shadow[p * PER_LINE + 5] = 1000u * p + r.rounds - 1;
	check_media(&e);
	env_close(&e);
}

/* ---- durability after the flush under concurrent evictions -------------------------- */

struct durable {
	struct env *e;
	uint32_t threads, ops;
	uint64_t errs, bad;
};

/* thread t owns the elements i with i % threads == t: it writes them (random order),
 * reads its own back, so every thread's last value is known */
static void durable_fn(void *arg, uint64_t t)
{
	struct durable *d = arg;
	struct bam_array_dev *a = d->e->a;
	const uint64_t n = (uint64_t)d->e->n_lines * PER_LINE, own = n / d->threads;
	uint64_t x = 0x9e3779b97f4a7c15ull * (t + 1), errs = 0, bad = 0;
	for (uint32_t k = 0; k < d->ops; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		const uint64_t i = (x % own) * d->threads + t;
		const uint32_t val = (uint32_t)(x >> 32) | 1u;
		if (k % 3 == 2) {
			uint32_t v;
			if (bam_array_read_u32(a, i, &v))
				errs++;
			else if (v != d->e->shadow[i])
				bad++;
		} else if (bam_array_write_u32(a, i, val)) {
			errs++;
		} else {
			d->e->shadow[i] = val; /* only this thread touches element i */
		}
	}
	__atomic_fetch_add(&d->errs, errs, __ATOMIC_RELAXED);
	__atomic_fetch_add(&d->bad, bad, __ATOMIC_RELAXED);
}

static void test_durable_after_flush(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "emu:size=1M,delay_rate=0.2,delay_us=200", 8, 64, 0);
	struct durable d = {.e = &e, .threads = 8, .ops = 3000};
	assert_int_equal(bam_cpu_launch(d.threads, d.threads, durable_fn, &d), 0);
	assert_int_equal(d.errs, 0);
	assert_int_equal(d.bad, 0);
	assert_int_equal(bam_cache_flush(e.cache), 0);
	struct bam_array_stats s = stats(&e);
	printf("durable: writebacks %llu evictions %llu partial-write fetches %llu\n", (unsigned long long)s.c.writebacks,
	       (unsigned long long)s.c.evictions, (unsigned long long)s.c.partial_write_fetches);
	assert_true(s.c.writebacks > 8); /* evictions wrote back (8 slots, 64 lines) */
	assert_int_equal(s.c.writeback_errors, 0);
	check_media(&e);
	env_close(&e);
}

/* ---- every line dirty, every write slow: no hang ------------------------------------ */

static void test_all_dirty_slow_writes(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "emu:size=1M,delay_rate=1,delay_us=2000", 4, 32, 0);
	struct durable d = {.e = &e, .threads = 16, .ops = 60};
	assert_int_equal(bam_cpu_launch(d.threads, d.threads, durable_fn, &d), 0);
	assert_int_equal(d.errs, 0);
	assert_int_equal(d.bad, 0);
	assert_int_equal(bam_cache_flush(e.cache), 0);
	check_media(&e);
	env_close(&e);
}

/* ---- an injected write error: the line stays dirty, the caller hears of it ---------- */

static void test_write_error_keeps_line_dirty(void **state)
{
	(void)state;
	struct env e;
	/* line 0 = LBAs 0..7 (512-byte LBAs): its reads and writes fail */
	env_open(&e, "emu:size=1M,lba=512,err_lba=0-8", 2, 8, 0);
	/* line 0 written whole (no read, which would fail) */
	struct bam_line h = {0};
	assert_int_equal(bam_line_warp_get_overwrite(e.a, &h, 0), 0);
	for (uint64_t k = 0; k < PER_LINE; k++)
		((volatile uint32_t *)h.data)[k] = 5000u + (uint32_t)k;
	bam_line_warp_put(e.a, &h);
	/* reads of lines 1..7 through a cache of 2: line 0 is a victim; its write fails */
	uint32_t v;
	for (uint32_t l = 1; l < 8; l++)
		assert_int_equal(bam_array_read_u32(e.a, (uint64_t)l * PER_LINE, &v), 0);
	struct bam_array_stats s = stats(&e);
	assert_true(s.c.writeback_errors >= 1);
	assert_int_equal(bam_ctx_dev(e.ctx)->error, EIO); /* the device's first error */
	/* still cached and dirty: the written data is there */
	assert_int_equal(bam_array_read_u32(e.a, 7, &v), 0);
	assert_int_equal(v, 5007u);
	const uint32_t x = __atomic_load_n(&e.a->xlat[0], __ATOMIC_ACQUIRE);
	assert_true(x < e.a->cache->n_slots);
	assert_true(__atomic_load_n(&e.a->cache->state[x], __ATOMIC_ACQUIRE) & BAM_SLOT_DIRTY);
	/* the flush tries again and reports it */
	assert_int_equal(bam_cache_flush(e.cache), -EIO);
	assert_true(__atomic_load_n(&e.a->cache->state[x], __ATOMIC_ACQUIRE) & BAM_SLOT_DIRTY);
	check_media(&e); /* the media unchanged (line 0 never written) */
	env_close(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_only_refuses_writes),
		cmocka_unit_test(test_overwrite_skips_fetch),
		cmocka_unit_test(test_read_during_writeback_by_hand),
		cmocka_unit_test(test_read_races_writeback),
		cmocka_unit_test(test_durable_after_flush),
		cmocka_unit_test(test_all_dirty_slow_writes),
		cmocka_unit_test(test_write_error_keeps_line_dirty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
