/* SPDX-License-Identifier: MIT */
/*
 * The queue protocol under heavy contention (CPU target): many threads, small queues
 * that wrap many times, over a million commands. Every command writes a block whose
 * content names the command, then reads it back: a lost, duplicated or overwritten
 * command shows up as a timeout, a wrong block, or wrong counts. Run under
 * ThreadSanitizer in CI (label "concurrency").
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "bam/bam.h"
#include "bam/dev.h"
#include "bam/detail/qpair.h"

struct job {
	struct bam_dev *dev;
	uint8_t *bufs;      /* [threads][2][512] */
	uint64_t per_thread;
	uint64_t nlba;
	uint32_t n_ctrl;
	int failures;
	uint64_t bad_data;
};

static void fill(uint8_t *b, uint64_t tag)
{
	for (int i = 0; i < 512; i += 8)
		memcpy(b + i, &(uint64_t){tag ^ (uint64_t)i * 0x9e3779b97f4a7c15ull}, 8);
}

static void worker(void *arg, uint64_t tid)
{
	struct job *j = arg;
	uint8_t *wb = j->bufs + tid * 1024, *rb = wb + 512;
	for (uint64_t k = 0; k < j->per_thread; k++) {
		/* each thread owns the LBAs congruent to its id: no two writers share one */
		uint64_t lba = (tid + 64 * (k % (j->nlba / 64))) % j->nlba;
		uint32_t c = (uint32_t)(k % j->n_ctrl);
		uint64_t tag = (tid << 40) | k;
		uint16_t st = 0;
		fill(wb, tag);
		int rc = bam_dev_io(j->dev, c, tid + k, NVME_CMD_WRITE, lba, 1, (uint64_t)(uintptr_t)wb, 0, &st);
		if (rc || st) {
			__atomic_fetch_add(&j->failures, 1, __ATOMIC_RELAXED);
			return;
		}
		memset(rb, 0, 512);
		rc = bam_dev_io(j->dev, c, tid * 7 + k, NVME_CMD_READ, lba, 1, (uint64_t)(uintptr_t)rb, 0, &st);
		if (rc || st) {
			__atomic_fetch_add(&j->failures, 1, __ATOMIC_RELAXED);
			return;
		}
		if (memcmp(wb, rb, 512))
			__atomic_fetch_add(&j->bad_data, 1, __ATOMIC_RELAXED);
	}
}

static void run(uint32_t threads, uint32_t depth, uint32_t qpairs, uint32_t n_ctrl, uint64_t per_thread)
{
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = qpairs, .queue_depth = depth,
				 .timeout_ns = 120000000000ull}; /* correctness, not the bound: a loaded 2-core machine must not fail it */
	struct bam_ctx *ctx;
	char err[256], spec[64];
	snprintf(spec, sizeof(spec), "emu:count=%u,size=1M", n_ctrl);
	int rc = bam_ctx_open(spec, &o, &ctx, err, sizeof(err));
	assert_int_equal(rc, 0);
	struct job j = {.dev = bam_ctx_dev(ctx), .per_thread = per_thread, .nlba = 2048, .n_ctrl = n_ctrl};
	j.bufs = aligned_alloc(4096, (size_t)threads * 1024);
	assert_non_null(j.bufs);
	assert_int_equal(bam_cpu_launch(threads, threads, worker, &j), 0);
	assert_int_equal(j.failures, 0);
	assert_int_equal(j.bad_data, 0);
	uint64_t total = 0;
	for (uint32_t c = 0; c < n_ctrl; c++) {
		struct bam_ctrl_stats s;
		assert_int_equal(bam_ctx_ctrl_stats(ctx, c, &s), 0);
		total += s.cmds;
		assert_int_equal(s.errors, 0);
		assert_int_equal(s.qp.timeouts, 0);
		assert_int_equal(s.qp.stray, 0);
		assert_int_equal(s.qp.submitted, s.cmds);
		/* batching: never more doorbells than commands */
		assert_true(s.qp.doorbells <= s.qp.submitted);
	}
	/* exactly two commands per iteration reached the controllers: none lost or doubled */
	assert_int_equal(total, 2ull * threads * per_thread);
	free(j.bufs);
	bam_ctx_close(ctx);
}

static uint64_t scale(void)
{
	const char *s = getenv("BAM_TEST_SCALE"); /* e.g. 0.1 under ThreadSanitizer */
	double f = s ? atof(s) : 1.0;
	return f > 0 ? (uint64_t)(f * 1000) : 1000;
}

/* 64 threads on one queue pair of depth 4: 256K commands, the queue wrapped ~ 64K
 * times. (Most threads wait in the credit line, whose host-side waiters sleep up to
 * 1 ms: on 2 cores this case runs at a few thousand commands a second.) */
static void test_64_threads_depth4(void **state)
{
	(void)state;
	run(64, 4, 1, 1, 2 * scale());
}

/* 128 threads over 4 queue pairs of depth 8 on 2 controllers: over a million commands */
static void test_128_threads_1M_commands(void **state)
{
	(void)state;
	run(128, 8, 4, 2, 4 * scale());
}

/* depth 64: two 32-slot words of marks and consumed bits, so the word-wise runs of
 * move_tail / move_head end at word boundaries and continue in the next word (64
 * threads: the LBA ownership of worker() holds for ids below 64 on one controller) */
static void test_64_threads_depth64(void **state)
{
	(void)state;
	run(64, 64, 1, 1, 8 * scale());
}

/* the run and bit-range helpers of the word-wise moves, at the edges */
static void test_run_helpers(void **state)
{
	(void)state;
	assert_int_equal(bam_qp_run(0u, 0), 0);
	assert_int_equal(bam_qp_run(1u, 0), 1);
	assert_int_equal(bam_qp_run(0xffffffffu, 0), 32);
	assert_int_equal(bam_qp_run(0xffffffffu, 31), 1);
	assert_int_equal(bam_qp_run(0xffffffffu, 5), 27);
	assert_int_equal(bam_qp_run(0x0000fff0u, 4), 12);
	assert_int_equal(bam_qp_run(0x0000fff0u, 3), 0);
	assert_int_equal(bam_qp_run(0x80000000u, 31), 1);
	assert_int_equal(bam_qp_run(0x7fffffffu, 30), 1);
	assert_int_equal(bam_qp_bits(0, 32), 0xffffffffu);
	assert_int_equal(bam_qp_bits(0, 1), 1u);
	assert_int_equal(bam_qp_bits(31, 1), 0x80000000u);
	assert_int_equal(bam_qp_bits(4, 12), 0x0000fff0u);
	assert_int_equal(bam_qp_bits(5, 27), 0xffffffe0u);
}

/* depth 2: the smallest legal queue, one command in flight */
static void test_depth2(void **state)
{
	(void)state;
	run(16, 2, 1, 1, scale());
}

/* A queue pair in host memory with no controller: the test posts the CQEs itself. */
enum { LZ_DEPTH = 32 };
struct lz {
	struct bam_qpair qp;
	struct nvme_sqe sq[LZ_DEPTH];
	struct nvme_cqe cq[LZ_DEPTH];
	uint32_t turn[LZ_DEPTH], mark[1], consumed[1], cid[LZ_DEPTH], sqdb, cqdb;
};

static struct lz *lz_new(void)
{
	struct lz *z = calloc(1, sizeof(*z));
	assert_non_null(z);
	z->qp.sq = z->sq;
	z->qp.cq = z->cq;
	z->qp.sq_doorbell = &z->sqdb;
	z->qp.cq_doorbell = &z->cqdb;
	z->qp.sq_turn = z->turn;
	z->qp.sq_mark = z->mark;
	z->qp.cq_consumed = z->consumed;
	z->qp.cid_state = z->cid;
	z->qp.depth = LZ_DEPTH;
	z->qp.depth_shift = 5;
	z->qp.qid = 1;
	z->qp.nsid = 1;
	return z;
}

/* submit one read, waiting for a credit: returns bam_qpair_submit_ex's result */
static int lz_submit(struct lz *z, uint16_t *cid, uint64_t dl)
{
	struct nvme_sqe s;
	memset(&s, 0, sizeof(s));
	s.opc = NVME_CMD_READ;
	return bam_qpair_submit_ex(&z->qp, &s, dl, cid, 1);
}

/* submit n reads (CIDs in c[]) and post their CQEs in order at CQ positions 0 .. n-1 */
static void lz_submit_complete(struct lz *z, uint16_t *c, uint32_t n, uint64_t dl)
{
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(lz_submit(z, &c[i], dl), 0);
	assert_int_equal(z->sqdb, n); /* every SQE made visible */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t *w = (uint32_t *)&z->cq[i];
		w[2] = i + 1; /* SQHD */
		__atomic_store_n(&w[3], (uint32_t)c[i] | (1u << 16), __ATOMIC_RELEASE); /* phase 1 */
	}
}

/* one line fill's wait and lazy help for the command of CID c, whose CQE is at p */
static void lz_fill(struct lz *z, uint16_t c, uint32_t p, uint64_t dl)
{
	uint16_t st = 1;
	uint32_t pos = 0, lag = 0;
	assert_int_equal(bam_qpair_wait_pos(&z->qp, c, dl, &st, &pos, &lag), 0);
	assert_int_equal(st, 0);
	assert_int_equal(pos, p);
	bam_qpair_help_lazy(&z->qp, pos, lag);
}

/*
 * Line fills that leave their CQEs to the next head move (bam_qpair_help_lazy). The
 * CQE at the head consumed last, after all those behind it (whose waiters could not
 * move the head it held): its fill finds the CQE after its own consumed and helps, so
 * nothing is left held. Then fills in CQ order, each before the next CQE is consumed:
 * they leave theirs (lag below 16, the next not consumed), and the next waiter whose
 * CQE is not there yet passes them all on its first look.
 */
static void test_lazy_help(void **state)
{
	(void)state;
	struct lz *z = lz_new();
	const uint64_t dl = bam_time_ns() + 5000000000ull;
	uint16_t c[LZ_DEPTH];
	const uint32_t n = LZ_DEPTH - 1; /* as many as the queue pair takes */
	lz_submit_complete(z, c, n, dl);
	for (uint32_t i = 1; i < n; i++)
		lz_fill(z, c[i], i, dl);
	assert_int_equal(z->qp.cq_head, 0); /* CQE 0, not consumed yet, holds the head */
	assert_int_equal(z->qp.credits, n);
	lz_fill(z, c[0], 0, dl);
	assert_int_equal(z->qp.cq_head, n); /* passed them all */
	assert_int_equal(z->qp.cnt.completed, n);
	assert_int_equal(z->qp.credits, 0);
	assert_int_equal(z->cqdb, n % LZ_DEPTH); /* the CQ head doorbell rang past them */
	free(z);

	z = lz_new();
	const uint32_t m = 8;
	lz_submit_complete(z, c, m, dl);
	for (uint32_t i = 0; i < m; i++)
		lz_fill(z, c[i], i, dl);
	assert_int_equal(z->qp.cq_head, 0); /* all left: lag below 16, the next not consumed */
	assert_int_equal(z->qp.credits, m);
	assert_int_equal(z->qp.cnt.completed, 0);
	uint16_t more = 0;
	assert_int_equal(lz_submit(z, &more, dl), 0);
	uint16_t st = 0;
	uint32_t pos = 0, lag = 0;
	/* its CQE never comes: the wait times out, after its first look moved the head */
	assert_int_equal(bam_qpair_wait_pos(&z->qp, more, bam_time_ns() + 2000000ull, &st, &pos, &lag), -ETIMEDOUT);
	assert_int_equal(z->qp.cq_head, m);
	assert_int_equal(z->qp.cnt.completed, m);
	assert_int_equal(z->qp.credits, 1); /* the abandoned command's */
	free(z);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lazy_help),
		cmocka_unit_test(test_depth2),
		cmocka_unit_test(test_64_threads_depth4),
		cmocka_unit_test(test_128_threads_1M_commands),
		cmocka_unit_test(test_64_threads_depth64),
		cmocka_unit_test(test_run_helpers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
