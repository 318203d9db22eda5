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
#include "bam/qpair.h"

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

/* 64 threads on one queue pair of depth 4: wraps the queue ~ 250K times */
static void test_64_threads_depth4(void **state)
{
	(void)state;
	run(64, 4, 1, 1, 8 * scale());
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

/*
 * Line fills that leave their CQEs to the next head move (bam_qpair_help_lazy): the
 * worst case, played by one thread that is also the controller. The CQE at the head is
 * consumed last, when nothing before it is unpassed (lag 0), so its fill does not help,
 * and the fills behind it could not pass it: every credit stays held with nothing in
 * flight. Nobody hangs: the next submitter finds the queue pair full, moves the head
 * past all of them and goes on.
 */
static void test_lazy_help_recovers(void **state)
{
	(void)state;
	enum { DEPTH = 32 };
	static struct bam_qpair qp;
	static struct nvme_sqe sq[DEPTH];
	static struct nvme_cqe cq[DEPTH];
	static uint32_t turn[DEPTH], mark[1], consumed[1], cid[DEPTH], sqdb, cqdb;
	memset(&qp, 0, sizeof(qp));
	qp.sq = sq;
	qp.cq = cq;
	qp.sq_doorbell = &sqdb;
	qp.cq_doorbell = &cqdb;
	qp.sq_turn = turn;
	qp.sq_mark = mark;
	qp.cq_consumed = consumed;
	qp.cid_state = cid;
	qp.depth = DEPTH;
	qp.depth_shift = 5;
	qp.qid = 1;
	qp.nsid = 1;
	const uint64_t dl = bam_time_ns() + 5000000000ull;
	struct nvme_sqe s;
	memset(&s, 0, sizeof(s));
	s.opc = NVME_CMD_READ;
	uint16_t c[DEPTH];
	const uint32_t n = DEPTH - 1; /* as many as the queue pair takes */
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(bam_qpair_submit_ex(&qp, &s, dl, &c[i], 1), 0);
	assert_int_equal(sqdb, n); /* every SQE made visible */
	for (uint32_t i = 0; i < n; i++) { /* the controller: CQE i at CQ position i, in order */
		uint32_t *w = (uint32_t *)&cq[i];
		w[2] = i + 1; /* SQHD */
		__atomic_store_n(&w[3], (uint32_t)c[i] | (1u << 16), __ATOMIC_RELEASE); /* phase 1 */
	}
	for (uint32_t k = 0; k < n; k++) { /* fills 1 .. n-1 first, fill 0 (at the head) last */
		const uint32_t i = (k + 1) % n;
		uint16_t st = 1;
		uint32_t p = 0, lag = 0;
		assert_int_equal(bam_qpair_wait_pos(&qp, c[i], dl, &st, &p, &lag), 0);
		assert_int_equal(st, 0);
		assert_int_equal(p, i);
		assert_int_equal(lag, i); /* the head never moved: CQE 0 held it */
		bam_qpair_help_lazy(&qp, p, lag);
	}
	assert_int_equal(qp.cq_head, 0);
	assert_int_equal(qp.credits, n); /* all held, none in flight: the worst case */
	uint16_t more = 0;
	assert_int_equal(bam_qpair_submit_ex(&qp, &s, dl, &more, 0), -EAGAIN); /* looks full */
	assert_int_equal(bam_qpair_submit_ex(&qp, &s, dl, &more, 1), 0);   /* moves the head, goes on */
	assert_int_equal(qp.cq_head, n);
	assert_int_equal(qp.cnt.completed, n);
	assert_int_equal(qp.credits, 1);
	assert_int_equal(cqdb, n); /* the CQ head doorbell rang past all of them */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lazy_help_recovers),
		cmocka_unit_test(test_depth2),
		cmocka_unit_test(test_64_threads_depth4),
		cmocka_unit_test(test_128_threads_1M_commands),
		cmocka_unit_test(test_64_threads_depth64),
		cmocka_unit_test(test_run_helpers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
