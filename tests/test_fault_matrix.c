/* SPDX-License-Identifier: MIT */
/*
 * Fault-injection matrix: each fault the emulated controller can inject (docs/DESIGN.md
 * "Faults": a media error on an LBA range, error status at a rate, completions delayed
 * past the timeout, dropped completions, a controller that stops answering), driven
 * through the cache and array API by many CPU-target threads, next to a healthy
 * controller driven by the same threads. For every fault:
 *  (a) the API reports it, with the errno the contract gives (-EIO for an NVMe error
 *      status; -ETIMEDOUT for a completion that does not come in time; -EBUSY when every
 *      slot stays locked by fills that wait for such completions);
 *  (b) a line whose fill failed is never published: every successful read returns
 *      the value last written (a shadow copy per thread-owned element), during the run
 *      and in a final pass over every element once the injected delays have drained;
 *  (c) nothing hangs: each operation returns within a bound derived from the timeout,
 *      each case within a bound, and afterwards no slot is left locked or referenced;
 *      slots that timed-out commands took out of use (retired, pinned) come back once
 *      the late completions have arrived (bam_cache_reclaim: none held after delays;
 *      the 'held' column counts what dropped or never-answered commands keep);
 *  (d) unrelated data stays intact: outside a faulty LBA range every access succeeds,
 *      and the healthy controller (its own context: the emu back end applies faults to
 *      every controller of a context) keeps serving, with no error, and its media equals
 *      the shadow after a flush.
 * A table (fault, ops, errors reported, wrong values, seconds) goes to stdout.
 * Last, `bam bench` on a faulty back end must report the injected errors and fail.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "bam/cache.h"

/* The bound of each wait (bam_ctx_opts.timeout_ns) on the faulty controller: short
 * where the fault is a missing completion, so that timeouts are cheap; long where no
 * timeout is expected, so that a loaded machine does not turn into one. The healthy
 * controller keeps the default (5 s). */
#define SHORT_TIMEOUT_NS (100ull * 1000 * 1000)
#define LONG_TIMEOUT_NS (2000ull * 1000 * 1000)
#define THREADS 8u
#define LINE 4096u
#define N_ELEMS (64u * LINE / 4u) /* 64 lines of u32 ... */
#define CACHE_LINES 16u           /* ... through 16 slots: misses, evictions, write-backs */
#define RUN_S 2.5                 /* each case issues operations for this long at most */
#define OPS_PER_THREAD 3000u
/* One access waits at most for a victim, a write-back and a fill, each bounded by the
 * timeout; on two shared cores under sanitizers a thread may also be descheduled for a
 * while: allow 4 timeouts and 2 s (op_bound_s). The whole case: the run, the drain, the
 * final pass and the flushes. A hang exceeds both. */
#define CASE_BOUND_S 45.0

enum { E_IO, E_TIMEDOUT, E_BUSY, E_OTHER, E_N };
#define ALLOW(e) (1u << (e))

struct fault_case {
	const char *name;     /* table row */
	const char *faults;   /* appended to the faulty back end string */
	uint64_t timeout_ns;  /* of the faulty side: SHORT_ or LONG_TIMEOUT_NS */
	uint32_t cache_lines; /* slots of the faulty side's cache (0: CACHE_LINES) */
	uint32_t allowed;     /* ALLOW(E_...) errors the faulty side may report */
	int must_fail;        /* the fault must show: errors > 0 */
	int injects;          /* the controller counts it in bam_ctrl_stats.injected (a
			       * stopped controller injects nothing, it just stops) */
	uint64_t bad_lo, bad_hi; /* elements on a faulty LBA range: exactly these fail */
	uint64_t drain_us;    /* wait for injected delays before the final pass */
	int flush_must_work;  /* the faulty side's flush succeeds after retries */
	const char *known_bug; /* a reported, not yet fixed bug this case shows: the case is
				* skipped (and says why) while it still shows; BAM_STRICT=1 in
				* the environment fails it instead */
};

#define TIMEOUT_ERRS (ALLOW(E_TIMEDOUT) | ALLOW(E_BUSY))
static const struct fault_case cases[] = {
	{.name = "none", .faults = "", .timeout_ns = LONG_TIMEOUT_NS, .flush_must_work = 1},
	/* err_lba=64-96: LBAs of 512 B -> bytes 32 KiB..48 KiB -> lines 8..11 -> elements
	 * 8192..12287 */
	{.name = "media error, LBA 64-95", .faults = ",err_lba=64-96", .timeout_ns = LONG_TIMEOUT_NS,
	 .allowed = ALLOW(E_IO),
	 .must_fail = 1, .injects = 1, .bad_lo = 8192, .bad_hi = 12288, .flush_must_work = 1},
	{.name = "error status, rate 5%", .faults = ",err_rate=0.05,seed=7", .timeout_ns = LONG_TIMEOUT_NS,
	 .allowed = ALLOW(E_IO), .must_fail = 1, .injects = 1, .flush_must_work = 1},
	{.name = "delay 250 ms > timeout, rate 1%", .faults = ",delay_rate=0.01,delay_us=250000,seed=3",
	 .timeout_ns = SHORT_TIMEOUT_NS, .allowed = TIMEOUT_ERRS, .must_fail = 1, .injects = 1, .drain_us = 300000, .flush_must_work = 1},
	{.name = "dropped completions, rate 1%", .faults = ",drop_rate=0.01,seed=5",
	 .timeout_ns = SHORT_TIMEOUT_NS, .allowed = TIMEOUT_ERRS,
	 .must_fail = 1, .injects = 1},
	{.name = "stops answering after 1500 cmds", .faults = ",stop_after=1500",
	 .timeout_ns = SHORT_TIMEOUT_NS, .allowed = TIMEOUT_ERRS,
	 .must_fail = 1},
	/* fewer slots than threads: fills waiting for answers that never come hold every
	 * slot, so other threads find no victim before the timeout (-EBUSY) */
	{.name = "stops after 1 cmd, 2-slot cache", .faults = ",stop_after=1",
	 .timeout_ns = SHORT_TIMEOUT_NS, .cache_lines = 2, .allowed = TIMEOUT_ERRS, .must_fail = 1},
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* One side: a context with one controller, a cache, an array, the shadow. */
struct side {
	struct bam_ctx *ctx;
	struct bam_cache *cache;
	struct bam_array *arr;
	struct bam_array_dev *a;
	uint32_t *shadow; /* written only by the element's owner thread */
};

struct tally {
	uint64_t ops, ok, err[E_N], wrong, unexpected;
};

struct result {
	struct tally f, h;    /* faulty side, healthy side (run + final pass) */
	double seconds, max_op_s;
	int64_t f_media, h_media; /* after a flush: elements whose media differs from the
				   * shadow, or -1 when no flush succeeded */
	uint64_t held;        /* faulty side's slots still out of use at the end */
	uint64_t injected;
	int done;
};
static struct result results[N_CASES];

static void side_open(struct side *s, const char *backend, uint64_t timeout_ns, uint32_t cache_lines)
{
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = 4, .queue_depth = 32,
				 .timeout_ns = timeout_ns, .quiet = 1};
	char err[256] = "";
	int rc = bam_ctx_open(backend, &o, &s->ctx, err, sizeof(err));
	if (rc)
		fprintf(stderr, "%s: %s\n", backend, err);
	assert_int_equal(rc, 0);
	struct bam_cache_opts co = {.capacity = (uint64_t)(cache_lines ? cache_lines : CACHE_LINES) * LINE,
				    .line_size = LINE};
	assert_int_equal(bam_cache_create(s->ctx, &co, &s->cache), 0);
	struct bam_array_opts ao = {.n_elems = N_ELEMS, .elem_size = 4, .layout = BAM_LAYOUT_STRIPE};
	assert_int_equal(bam_array_create(s->cache, &ao, &s->arr), 0);
	s->a = bam_array_dev(s->arr);
	s->shadow = malloc(N_ELEMS * sizeof(uint32_t));
	assert_non_null(s->shadow);
	for (uint32_t i = 0; i < N_ELEMS; i++)
		s->shadow[i] = i * 2654435761u;
	/* provisioning bypasses the controller's command path, so faults do not apply */
	assert_int_equal(bam_array_media_write(s->arr, 0, s->shadow, N_ELEMS), 0);
}

static void side_close(struct side *s)
{
	bam_cache_destroy(s->cache);
	bam_ctx_close(s->ctx);
	free(s->shadow);
}

static int err_index(int rc)
{
	switch (rc) {
	case -EIO:
		return E_IO;
	case -ETIMEDOUT:
		return E_TIMEDOUT;
	case -EBUSY:
		return E_BUSY;
	default:
		return E_OTHER;
	}
}

/* ---- the run: random reads and writes of thread-owned elements on both sides ---- */

struct job {
	const struct fault_case *fc;
	struct side *f, *h;
	uint64_t end_ns;
	struct tally tf[THREADS], th[THREADS];
	double max_op_s[THREADS];
};

static int in_bad(const struct fault_case *fc, uint64_t i)
{
	return i >= fc->bad_lo && i < fc->bad_hi;
}

/* Account one access; 'i' is the element, 'rc' the API's return. */
static void account(const struct fault_case *fc, struct tally *t, int faulty, uint64_t i, int rc)
{
	t->ops++;
	if (rc == 0) {
		t->ok++;
		if (faulty && in_bad(fc, i))
			t->unexpected++; /* a line on the bad range was served */
		return;
	}
	t->err[err_index(rc)]++;
	if (!faulty || (fc->bad_hi && !in_bad(fc, i)) || !(fc->allowed & ALLOW(err_index(rc))))
		t->unexpected++; /* an error where none may be, or the wrong errno */
}

static void run_thread(void *arg, uint64_t tid)
{
	struct job *j = arg;
	uint64_t r = (tid + 1) * 0x9e3779b97f4a7c15ull;
	double worst = 0;
	for (uint32_t k = 0; k < OPS_PER_THREAD && bam_time_ns() < j->end_ns; k++) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		int faulty = (r & 3) != 0; /* 3 of 4 accesses on the faulty side */
		struct side *s = faulty ? j->f : j->h;
		struct tally *t = faulty ? &j->tf[tid] : &j->th[tid];
		/* thread t owns the elements i with i % THREADS == t: its shadow is exact */
		uint64_t i = ((r >> 8) % (N_ELEMS / THREADS)) * THREADS + tid;
		uint64_t t0 = bam_time_ns();
		int rc;
		if ((r >> 40) % 4 == 0) {
			uint32_t v = (uint32_t)(r >> 16);
			rc = bam_array_write_u32(s->a, i, v);
			if (rc == 0)
				s->shadow[i] = v;
		} else {
			uint32_t v = 0;
			rc = bam_array_read_u32(s->a, i, &v);
			if (rc == 0 && v != s->shadow[i])
				t->wrong++;
		}
		double d = (double)(bam_time_ns() - t0) / 1e9;
		if (d > worst)
			worst = d;
		account(j->fc, t, faulty, i, rc);
	}
	j->max_op_s[tid] = worst;
}

/* ---- the final pass: every element of both sides, read once ---------------------- */

struct pass {
	const struct fault_case *fc;
	struct side *s;
	int faulty;
	struct tally t[THREADS];
};

static void pass_thread(void *arg, uint64_t tid)
{
	struct pass *p = arg;
	uint64_t per = (uint64_t)N_ELEMS * 4 / LINE / THREADS; /* lines per thread */
	for (uint64_t l = tid * per; l < (tid + 1) * per; l++) {
		for (uint64_t i = l * (LINE / 4); i < (l + 1) * (LINE / 4); i++) {
			uint32_t v = 0;
			int rc = bam_array_read_u32(p->s->a, i, &v);
			account(p->fc, &p->t[tid], p->faulty, i, rc);
			if (rc) {
				/* the line is unreachable: count the rest of it as not read */
				break;
			}
			if (v != p->s->shadow[i])
				p->t[tid].wrong++;
		}
	}
}

static void add_tally(struct tally *dst, const struct tally *src)
{
	dst->ops += src->ops;
	dst->ok += src->ok;
	dst->wrong += src->wrong;
	dst->unexpected += src->unexpected;
	for (int e = 0; e < E_N; e++)
		dst->err[e] += src->err[e];
}

static void final_pass(const struct fault_case *fc, struct side *s, int faulty, struct tally *out)
{
	struct pass *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	p->fc = fc;
	p->s = s;
	p->faulty = faulty;
	assert_int_equal(bam_cpu_launch(THREADS, THREADS, pass_thread, p), 0);
	for (uint32_t t = 0; t < THREADS; t++)
		add_tally(out, &p->t[t]);
	free(p);
}

/* No slot locked or referenced, no line half-filled: every failure path released
 * what it took. The one exception by design: a slot whose fill timed out is retired
 * (BAM_SLOT_RETIRED, holding no line) until its command is known complete, since the
 * controller may still write into it. (CPU target: the cache's state is host memory.) */
static void assert_cache_quiet(struct side *s)
{
	const struct bam_cache_dev *c = s->a->cache;
	for (uint64_t k = 0; k < c->n_slots; k++) {
		uint32_t st = __atomic_load_n(&c->state[k], __ATOMIC_ACQUIRE);
		uint64_t tag = __atomic_load_n(&c->tag[k], __ATOMIC_ACQUIRE);
		if (st == BAM_SLOT_RETIRED && tag == BAM_TAG_NONE)
			continue;
		if (st & (BAM_SLOT_BUSY | BAM_SLOT_CNT))
			fprintf(stderr, "slot %llu left with state 0x%08x\n", (unsigned long long)k, st);
		assert_int_equal(st & (BAM_SLOT_BUSY | BAM_SLOT_CNT), 0);
	}
	for (uint64_t l = 0; l < s->a->n_lines; l++)
		assert_int_not_equal(__atomic_load_n(&s->a->xlat[l], __ATOMIC_ACQUIRE), BAM_XLAT_FILLING);
}

/* Flush (retrying: faults drawn at a rate differ per command) and compare the media
 * with the shadow. Returns the number of elements that differ, or -1 if no flush
 * succeeded. */
static int64_t flush_and_compare(struct side *s, int tries)
{
	int rc = -EIO;
	for (int k = 0; k < tries && rc; k++)
		rc = bam_cache_flush(s->cache);
	if (rc)
		return -1;
	uint32_t *m = malloc(N_ELEMS * sizeof(uint32_t));
	assert_non_null(m);
	assert_int_equal(bam_array_media_read(s->arr, 0, m, N_ELEMS), 0);
	int64_t diff = 0;
	for (uint32_t i = 0; i < N_ELEMS; i++)
		diff += m[i] != s->shadow[i];
	free(m);
	return diff;
}

static void print_row(const char *name, const struct result *r)
{
	char media[32];
	if (r->f_media < 0)
		snprintf(media, sizeof(media), "no flush");
	else
		snprintf(media, sizeof(media), "%lld", (long long)r->f_media);
	printf("| %-32s | %6llu | %5llu %5llu %5llu | %5llu | %6.2f | %6.0f | %6llu %5llu %5llu | %-8s | %4llu |\n", name,
	       (unsigned long long)r->f.ops, (unsigned long long)r->f.err[E_IO],
	       (unsigned long long)r->f.err[E_TIMEDOUT], (unsigned long long)r->f.err[E_BUSY],
	       (unsigned long long)(r->f.wrong + r->h.wrong), r->seconds, r->max_op_s * 1e3,
	       (unsigned long long)r->h.ops, (unsigned long long)(r->h.ops - r->h.ok),
	       (unsigned long long)r->h.wrong, media, (unsigned long long)r->held);
}

static void print_header(void)
{
	printf("| %-32s | %6s | %5s %5s %5s | %5s | %6s | %6s | %6s %5s %5s | %-8s | %4s |\n", "fault (faulty controller)", "ops",
	       "EIO", "ETIME", "EBUSY", "wrong", "sec", "max ms", "h.ops", "h.err", "h.bad", "m.diff", "held");
}

static void run_case(size_t ci)
{
	const struct fault_case *fc = &cases[ci];
	struct result *r = &results[ci];
	struct side f, h;
	char backend[256];
	uint64_t h_held = 0;
	memset(r, 0, sizeof(*r));
	snprintf(backend, sizeof(backend), "emu:size=4M%s", fc->faults);
	side_open(&f, backend, fc->timeout_ns, fc->cache_lines);
	side_open(&h, "emu:size=4M", 0, 0);

	uint64_t t0 = bam_time_ns();
	struct job *j = calloc(1, sizeof(*j));
	assert_non_null(j);
	j->fc = fc;
	j->f = &f;
	j->h = &h;
	j->end_ns = t0 + (uint64_t)(RUN_S * 1e9);
	assert_int_equal(bam_cpu_launch(THREADS, THREADS, run_thread, j), 0);
	for (uint32_t t = 0; t < THREADS; t++) {
		add_tally(&r->f, &j->tf[t]);
		add_tally(&r->h, &j->th[t]);
		if (j->max_op_s[t] > r->max_op_s)
			r->max_op_s = j->max_op_s[t];
	}
	free(j);
	/* late completions of delayed commands land before the final pass looks */
	if (fc->drain_us)
		usleep((useconds_t)fc->drain_us);
	final_pass(fc, &f, 1, &r->f);
	final_pass(fc, &h, 0, &r->h);
	assert_cache_quiet(&f);
	assert_cache_quiet(&h);

	r->h_media = flush_and_compare(&h, 1);
	r->f_media = flush_and_compare(&f, 20);
	/* slots out of use because of timed-out commands: those whose late completions
	 * arrive come back (the final pass may have delayed a few more: wait for them) */
	uint64_t t_held = bam_time_ns();
	for (;;) {
		assert_int_equal(bam_cache_reclaim(f.cache, &r->held), 0);
		if (!r->held || !fc->drain_us || bam_time_ns() - t_held > 5ull * 1000 * 1000 * 1000)
			break;
		usleep(20000);
	}
	if (fc->drain_us)
		assert_int_equal(r->held, 0);
	assert_int_equal(bam_cache_reclaim(h.cache, &h_held), 0);
	assert_int_equal(h_held, 0);
	r->seconds = (double)(bam_time_ns() - t0) / 1e9;
	struct bam_ctrl_stats cs;
	assert_int_equal(bam_ctx_ctrl_stats(f.ctx, 0, &cs), 0);
	r->injected = cs.injected;
	assert_int_equal(bam_ctx_ctrl_stats(h.ctx, 0, &cs), 0);
	assert_int_equal(cs.injected, 0);
	r->done = 1;
	print_header();
	print_row(fc->name, r);
	fflush(stdout);

	/* (a) reported, with the right errno, and only where the fault is */
	assert_int_equal(r->f.unexpected, 0);
	assert_int_equal(r->f.err[E_OTHER], 0);
	if (fc->must_fail) {
		assert_true(r->f.ops > r->f.ok);
		if (fc->injects)
			assert_true(r->injected > 0);
	} else {
		assert_int_equal(r->f.ops, r->f.ok);
	}
	/* (c) bounded */
	assert_true(r->max_op_s < 4.0 * (double)fc->timeout_ns / 1e9 + 2.0);
	assert_true(r->seconds < CASE_BOUND_S);
	/* (d) the healthy controller served throughout, without an error or a wrong value,
	 * and its media holds exactly what was written */
	assert_int_equal(r->h.ops, r->h.ok);
	assert_true(r->h.ops >= N_ELEMS); /* at least the final pass */
	assert_int_equal(r->h.unexpected, 0);
	assert_int_equal(r->h.wrong, 0);
	assert_int_equal(r->h_media, 0);
	if (!fc->flush_must_work)
		assert_true(r->f_media <= 0);

	/* (b) never a wrong value on the faulty controller either: in the cache, and on
	 * its media once a flush gets through */
	int clean = r->f.wrong == 0 && (fc->flush_must_work ? r->f_media == 0 : r->f_media <= 0);
	side_close(&f);
	side_close(&h);
	if (fc->known_bug) {
		if (clean) {
			printf("known bug no longer shows: clear known_bug of \"%s\"\n", fc->name);
		} else {
			const char *strict = getenv("BAM_STRICT");
			printf("KNOWN BUG (reported, not fixed): %s\n", fc->known_bug);
			if (!strict || strcmp(strict, "1"))
				skip();
		}
	}
	assert_int_equal(r->f.wrong, 0);
	if (fc->flush_must_work)
		assert_int_equal(r->f_media, 0);
}

#define CASE_TEST(n)                                  \
	static void test_case_##n(void **state)       \
	{                                             \
		(void)state;                          \
		run_case(n);                          \
	}
CASE_TEST(0)
CASE_TEST(1)
CASE_TEST(2)
CASE_TEST(3)
CASE_TEST(4)
CASE_TEST(5)
CASE_TEST(6)

/* ---- bam bench reports injected faults -------------------------------------------- */

/* Run `bam bench` on 'backend'; returns its exit status and the errors= count of its
 * report (-1 if none was printed). Under a sanitizer build the child's leak check and
 * ThreadSanitizer exit code are turned off: its exit status must be the bench's verdict
 * on the I/O (sanitizer reports still show in the output). */
static int run_bench(const char *bin, const char *backend, long long *errors)
{
	char cmd[1024], line[512];
	snprintf(cmd, sizeof(cmd),
		 "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" "
		 "TSAN_OPTIONS=\"${TSAN_OPTIONS:+$TSAN_OPTIONS:}exitcode=0\" "
		 "'%s' bench --backend=%s --number_ios=20000 --threads=8 --size=16M 2>&1", bin, backend);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	*errors = -1;
	while (fgets(line, sizeof(line), p)) {
		const char *e = strstr(line, "errors=");
		if (e && (e == line || e[-1] == ' '))
			*errors = atoll(e + 7);
		fputs(line, stdout);
	}
	int st = pclose(p);
	assert_true(WIFEXITED(st));
	printf("bam bench --backend=%s: exit status %d, errors=%lld\n", backend, WEXITSTATUS(st), *errors);
	return WEXITSTATUS(st);
}

static void test_bench_reports_faults(void **state)
{
	(void)state;
	const char *bin = getenv("BAM_BIN");
	long long errors;
	if (!bin || access(bin, X_OK) != 0) {
		printf("BAM_BIN not set (run through ctest): bench check skipped\n");
		skip();
	}
	/* the same run without faults passes: the failure below is the faults' */
	assert_int_equal(run_bench(bin, "emu", &errors), 0);
	assert_int_equal(errors, 0);
	assert_int_not_equal(run_bench(bin, "emu:err_rate=0.01", &errors), 0);
	assert_true(errors > 0);
	/* about 1% of 20000: the count is the injected rate, not a side effect */
	assert_true(errors > 20000 / 100 / 4 && errors < 20000 / 100 * 4);
}

static int print_table(void **state)
{
	(void)state;
	printf("\nfault matrix: %u threads; timeout %llu ms (delay, drop, stop) or %llu ms; %u lines "
	       "through %u slots per side; 3/4 of accesses on the faulty controller, 1/4 on a healthy "
	       "one (h.*); ops and errors include the final pass over every element; m.diff: elements "
	       "whose media differs from the shadow after a flush; held: slots still out of use at the "
	       "end (their command's completion never came)\n",
	       THREADS, (unsigned long long)(SHORT_TIMEOUT_NS / 1000000),
	       (unsigned long long)(LONG_TIMEOUT_NS / 1000000), N_ELEMS * 4 / LINE, CACHE_LINES);
	print_header();
	for (size_t i = 0; i < N_CASES; i++)
		if (results[i].done)
			print_row(cases[i].name, &results[i]);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_case_0), cmocka_unit_test(test_case_1), cmocka_unit_test(test_case_2),
		cmocka_unit_test(test_case_3), cmocka_unit_test(test_case_4), cmocka_unit_test(test_case_5),
		cmocka_unit_test(test_case_6),
		cmocka_unit_test(test_bench_reports_faults),
	};
	return cmocka_run_group_tests(tests, NULL, print_table);
}
