/* SPDX-License-Identifier: MIT */
/*
 * The emulated controller against the NVMe specification: each kind of invalid SQE
 * gets its status code; PRP lists (including a chained list) move the right bytes;
 * fault injection (media errors, error rate, delays past the timeout, dropped
 * completions, a controller that stops answering) reaches the API as errors, never
 * as a hang; a thread queued behind many others for room in a full queue pair is
 * not timed out while the controller keeps completing commands.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <pthread.h>
#include "bam/bam.h"
#include "bam/backend.h"
#include "bam/dev.h"

static struct bam_ctx *open_ctx_q(const char *spec, uint64_t timeout_ms, uint32_t qpairs, uint32_t depth)
{
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = qpairs, .queue_depth = depth,
				 .timeout_ns = timeout_ms * 1000000ull};
	struct bam_ctx *ctx = NULL;
	char err[256];
	int rc = bam_ctx_open(spec, &o, &ctx, err, sizeof(err));
	if (rc)
		fprintf(stderr, "open %s: %s\n", spec, err);
	assert_int_equal(rc, 0);
	return ctx;
}

static struct bam_ctx *open_ctx(const char *spec, uint64_t timeout_ms)
{
	return open_ctx_q(spec, timeout_ms, 2, 16);
}

/* submit a raw SQE on queue pair 0 of controller 0, return the status */
static int raw(struct bam_ctx *ctx, struct nvme_sqe *s, uint16_t *st)
{
	struct bam_dev *d = bam_ctx_dev(ctx);
	struct bam_qpair *qp = &d->ctrl[0].qps[0];
	uint64_t deadline = bam_time_ns() + d->timeout_ns;
	uint16_t cid;
	int rc = bam_qpair_submit(qp, s, deadline, &cid);
	if (rc)
		return rc;
	return bam_qpair_wait(qp, cid, deadline, st);
}

static uint8_t *page_buf(size_t bytes)
{
	/* C11 aligned_alloc wants the size to be a multiple of the alignment */
	uint8_t *p = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
	memset(p, 0, bytes);
	return p;
}

#define ST(sct, sc) NVME_STATUS(sct, sc)

static void test_invalid_sqes(void **state)
{
	(void)state;
	struct bam_ctx *ctx = open_ctx("emu:size=1M,lba=512", 2000); /* 2048 LBAs */
	uint8_t *b = page_buf(1 << 20);
	struct nvme_sqe s;
	uint16_t st;

	bam_sqe_rw(&s, 0x7f, 1, 0, 1, 9, (uintptr_t)b, 0);
	assert_int_equal(raw(ctx, &s, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE));

	bam_sqe_rw(&s, NVME_CMD_READ, 2, 0, 1, 9, (uintptr_t)b, 0);
	assert_int_equal(raw(ctx, &s, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_GENERIC, NVME_SC_INVALID_NS));

	bam_sqe_rw(&s, NVME_CMD_READ, 1, 2047, 2, 9, (uintptr_t)b, 0); /* last LBA + 1 */
	assert_int_equal(raw(ctx, &s, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_GENERIC, NVME_SC_LBA_RANGE));
	bam_sqe_rw(&s, NVME_CMD_WRITE, 1, 1ull << 40, 1, 9, (uintptr_t)b, 0);
	assert_int_equal(raw(ctx, &s, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_GENERIC, NVME_SC_LBA_RANGE));

	bam_sqe_rw(&s, NVME_CMD_READ, 1, 0, 1, 9, (uintptr_t)b + 2, 0); /* PRP1 not dword aligned */
	assert_int_equal(raw(ctx, &s, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_GENERIC, NVME_SC_INVALID_PRP_OFFSET));

	bam_sqe_rw(&s, NVME_CMD_READ, 1, 0, 16, 9, (uintptr_t)b + 512, 0); /* 8 KiB across 3 pages */
	s.prp2 = (uintptr_t)b + 4096 + 8; /* second page entry with an offset */
	assert_int_equal(raw(ctx, &s, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_GENERIC, NVME_SC_INVALID_PRP_OFFSET));

	bam_sqe_rw(&s, NVME_CMD_READ, 1, 0, 1, 9, (uintptr_t)b, 0);
	s.flags = 1; /* FUSE */
	assert_int_equal(raw(ctx, &s, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD));

	bam_sqe_rw(&s, NVME_CMD_READ, 1, 0, 1, 9, (uintptr_t)b, 0);
	s.flags = 1u << 6; /* PSDT = SGL: not supported */
	assert_int_equal(raw(ctx, &s, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD));

	/* more than MDTS (1 MiB): 2048 LBAs of 512 B + 1 would exceed, use NLB field max */
	bam_sqe_rw(&s, NVME_CMD_READ, 1, 0, 2048, 9, (uintptr_t)b, (uintptr_t)b);
	s.cdw12 = 2047; /* 1 MiB exactly is allowed: check the 1 MiB + 512 case below */
	struct bam_ctx *big = open_ctx("emu:size=4M,lba=512", 2000);
	bam_sqe_rw(&s, NVME_CMD_READ, 1, 0, 2049, 9, (uintptr_t)b, (uintptr_t)b);
	assert_int_equal(raw(big, &s, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD));
	bam_ctx_close(big);

	/* flush: success; flush of all namespaces: success */
	bam_sqe_rw(&s, NVME_CMD_FLUSH, 1, 0, 1, 9, 0, 0);
	assert_int_equal(raw(ctx, &s, &st), 0);
	assert_int_equal(st, 0);
	bam_sqe_rw(&s, NVME_CMD_FLUSH, 0xffffffffu, 0, 1, 9, 0, 0);
	assert_int_equal(raw(ctx, &s, &st), 0);
	assert_int_equal(st, 0);

	struct bam_ctrl_stats cs;
	bam_ctx_ctrl_stats(ctx, 0, &cs);
	assert_int_equal(cs.errors, 8); /* the eight invalid SQEs above */
	assert_int_equal(cs.flushes, 2);
	free(b);
	bam_ctx_close(ctx);
}

static void test_prp_lists(void **state)
{
	(void)state;
	struct bam_ctx *ctx = open_ctx("emu:size=4M,lba=4096", 2000);
	const uint32_t len = 64 << 10;
	uint8_t *src = page_buf(len), *dst = page_buf(len);
	for (uint32_t i = 0; i < len; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	uint64_t *list = (uint64_t *)page_buf(4096);
	bam_prp_list_fill(list, (uintptr_t)list, (uintptr_t)src, len);
	struct nvme_sqe s;
	uint16_t st;
	bam_sqe_rw(&s, NVME_CMD_WRITE, 1, 10, len / 4096, 12, (uintptr_t)src, (uintptr_t)list);
	assert_int_equal(raw(ctx, &s, &st), 0);
	assert_int_equal(st, 0);
	/* read back through a list placed so that it must chain: start the list at the
	 * last entry of a page (offset 4088): that entry points to the next list page */
	uint64_t *two = (uint64_t *)page_buf(8192);
	two[511] = (uintptr_t)&two[512];
	bam_prp_list_fill(&two[512], (uintptr_t)&two[512], (uintptr_t)dst, len);
	bam_sqe_rw(&s, NVME_CMD_READ, 1, 10, len / 4096, 12, (uintptr_t)dst, (uintptr_t)&two[511]);
	assert_int_equal(raw(ctx, &s, &st), 0);
	assert_int_equal(st, 0);
	assert_memory_equal(src, dst, len);
	/* a list entry with an offset is refused */
	list[3] += 16;
	bam_sqe_rw(&s, NVME_CMD_READ, 1, 10, len / 4096, 12, (uintptr_t)dst, (uintptr_t)list);
	assert_int_equal(raw(ctx, &s, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_GENERIC, NVME_SC_INVALID_PRP_OFFSET));
	/* the media has the data where it should */
	uint8_t *m = page_buf(len);
	assert_int_equal(bam_ctx_media_read(ctx, 0, 10 * 4096, m, len), 0);
	assert_memory_equal(m, src, len);
	free(src);
	free(dst);
	free(list);
	free(two);
	free(m);
	bam_ctx_close(ctx);
}

static void test_fault_media_error(void **state)
{
	(void)state;
	struct bam_ctx *ctx = open_ctx("emu:size=1M,err_lba=100-108", 2000);
	uint8_t *b = page_buf(4096);
	uint16_t st;
	assert_int_equal(bam_dev_io(bam_ctx_dev(ctx), 0, 0, NVME_CMD_READ, 96, 8, (uintptr_t)b, 0, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_MEDIA, NVME_SC_UNRECOVERED_READ));
	assert_int_equal(bam_dev_io(bam_ctx_dev(ctx), 0, 0, NVME_CMD_WRITE, 107, 1, (uintptr_t)b, 0, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_MEDIA, NVME_SC_WRITE_FAULT));
	assert_int_equal(bam_dev_io(bam_ctx_dev(ctx), 0, 0, NVME_CMD_READ, 108, 8, (uintptr_t)b, 0, &st), 0);
	assert_int_equal(st, 0);
	free(b);
	bam_ctx_close(ctx);
}

static void test_fault_error_rate(void **state)
{
	(void)state;
	struct bam_ctx *ctx = open_ctx("emu:size=1M,err_rate=0.25,seed=7", 2000);
	uint8_t *b = page_buf(512);
	int errors = 0;
	for (int i = 0; i < 400; i++) {
		uint16_t st = 0;
		assert_int_equal(bam_dev_io(bam_ctx_dev(ctx), 0, i, NVME_CMD_READ, i, 1, (uintptr_t)b, 0, &st), 0);
		errors += st != 0;
	}
	assert_true(errors > 50 && errors < 150); /* 25% of 400, loosely */
	struct bam_ctrl_stats cs;
	bam_ctx_ctrl_stats(ctx, 0, &cs);
	assert_int_equal(cs.errors, (uint64_t)errors);
	free(b);
	bam_ctx_close(ctx);
}

static void test_fault_timeouts(void **state)
{
	(void)state;
	uint8_t *b = page_buf(512);
	uint16_t st;
	/* dropped completions: the wait gives up at the timeout */
	struct bam_ctx *ctx = open_ctx("emu:size=1M,drop_rate=1", 100);
	uint64_t t0 = bam_time_ns();
	assert_int_equal(bam_dev_io(bam_ctx_dev(ctx), 0, 0, NVME_CMD_READ, 0, 1, (uintptr_t)b, 0, &st), -ETIMEDOUT);
	assert_true(bam_time_ns() - t0 < 2000000000ull);
	struct bam_ctrl_stats cs;
	bam_ctx_ctrl_stats(ctx, 0, &cs);
	assert_int_equal(cs.qp.timeouts, 1);
	bam_ctx_close(ctx);

	/* completions delayed past the timeout: -ETIMEDOUT, then the late CQE is
	 * discarded and the queue keeps working */
	ctx = open_ctx("emu:size=1M,delay_rate=1,delay_us=300000", 100);
	assert_int_equal(bam_dev_io(bam_ctx_dev(ctx), 0, 0, NVME_CMD_READ, 0, 1, (uintptr_t)b, 0, &st), -ETIMEDOUT);
	bam_ctx_close(ctx);

	/* a controller that stops answering after 5 commands */
	ctx = open_ctx("emu:size=1M,stop_after=5", 100);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(bam_dev_io(bam_ctx_dev(ctx), 0, 0, NVME_CMD_READ, i, 1, (uintptr_t)b, 0, &st), 0);
		assert_int_equal(st, 0);
	}
	assert_int_equal(bam_dev_io(bam_ctx_dev(ctx), 0, 0, NVME_CMD_READ, 9, 1, (uintptr_t)b, 0, &st), -ETIMEDOUT);
	bam_ctx_close(ctx);
	free(b);
}

/*
 * The credit wait, on a clock the test drives. Its rule is about progress: a thread in
 * line for room in a full queue pair gives up only when no command completes for a
 * whole timeout. On the wall clock, "no completion for 60 ms" also happens when the
 * controller's worker or the owner of the next completion simply gets no core for
 * 60 ms, which a loaded machine does (a build beside the tests on 2 cores: up to half
 * of 48 threads timed out); no timeout makes that impossible. So while these tests
 * run, CLOCK_MONOTONIC, which bam_time_ns() reads on the CPU target (the waits'
 * deadlines and the emulator's completion times alike), is a virtual clock that moves
 * only when the test moves it, in steps it takes when it has seen the progress it
 * waits for. Scheduling then changes how long the test takes, never its outcome.
 */
static atomic_int vclock_on;
static _Atomic uint64_t vclock_ns;

/* Every CLOCK_MONOTONIC read of this program (the library's included): the virtual
 * clock while it is on, the kernel's otherwise. */
int clock_gettime(clockid_t id, struct timespec *ts)
{
	if (id == CLOCK_MONOTONIC && atomic_load(&vclock_on)) {
		const uint64_t t = atomic_load(&vclock_ns);
		ts->tv_sec = (time_t)(t / 1000000000u);
		ts->tv_nsec = (long)(t % 1000000000u);
		return 0;
	}
	return (int)syscall(SYS_clock_gettime, id, ts);
}

static uint64_t real_ns(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* on: the virtual clock starts at the real time (no step back); off: real time again */
static void vclock_set(int on)
{
	if (on)
		atomic_store(&vclock_ns, real_ns());
	atomic_store(&vclock_on, on);
}

static void vclock_step(uint64_t ns)
{
	atomic_fetch_add(&vclock_ns, ns);
}

/* many threads, one queue pair of depth 2 (one command in flight, one credit) */
struct credit_arg {
	struct bam_ctx *ctx;
	uint32_t i;
	int rc;
	uint16_t st;
	uint64_t waited;   /* virtual ns in bam_dev_io */
	atomic_int *started, *done;
};

static void *credit_thread(void *p)
{
	struct credit_arg *a = p;
	uint8_t *b = aligned_alloc(4096, 4096);
	const uint64_t t0 = bam_time_ns();
	atomic_fetch_add(a->started, 1);
	a->rc = bam_dev_io(bam_ctx_dev(a->ctx), 0, 0, NVME_CMD_READ, a->i, 1, (uintptr_t)b, 0, &a->st);
	a->waited = bam_time_ns() - t0;
	free(b);
	atomic_fetch_add(a->done, 1);
	return NULL;
}

static uint64_t ctrl_cmds(struct bam_ctx *ctx)
{
	struct bam_ctrl_stats cs;
	bam_ctx_ctrl_stats(ctx, 0, &cs);
	return cs.cmds;
}

/* Wait (real time) until what(ctx, arg) is true; a minute without it is a hang. */
static int wait_real(int (*what)(struct bam_ctx *, uint64_t), struct bam_ctx *ctx, uint64_t arg)
{
	const uint64_t end = real_ns() + 60000000000ull;
	while (!what(ctx, arg)) {
		if (real_ns() > end)
			return 0;
		usleep(100);
	}
	return 1;
}

static int fetched(struct bam_ctx *ctx, uint64_t n) /* the controller executed n commands */
{
	return ctrl_cmds(ctx) >= n;
}

static atomic_int credit_started, credit_done; /* threads that began, returned */
static uint32_t credit_head0;  /* the CQ head before the first */

/* the CQ head passed n CQEs, or n threads returned (the last may leave its CQE for a
 * next head move: nobody is left to make it) */
static int passed(struct bam_ctx *ctx, uint64_t n)
{
	struct bam_qpair *qp = &bam_ctx_dev(ctx)->ctrl[0].qps[0];
	return bam_load_relaxed_u32(&qp->cq_head) - credit_head0 >= n || (uint64_t)atomic_load(&credit_done) >= n;
}

static void start_credit_threads(struct bam_ctx *ctx, uint32_t n, pthread_t *th, struct credit_arg *a)
{
	atomic_store(&credit_started, 0);
	atomic_store(&credit_done, 0);
	for (uint32_t i = 0; i < n; i++) {
		a[i] = (struct credit_arg){.ctx = ctx, .i = i, .started = &credit_started, .done = &credit_done};
		assert_int_equal(pthread_create(&th[i], NULL, credit_thread, &a[i]), 0);
	}
}

static int all_started(struct bam_ctx *ctx, uint64_t n)
{
	(void)ctx;
	return (uint64_t)atomic_load(&credit_started) >= n;
}

static void test_credit_wait_bounded_by_progress(void **state)
{
	(void)state;
	enum { N = 24 };
	const uint64_t ms = 1000000, timeout = 60 * ms, delay = 10 * ms;
	pthread_t th[N];
	struct credit_arg a[N];

	/* 24 commands one at a time, each completing 10 ms after the controller takes it:
	 * 240 ms in line for the last thread against a 60 ms timeout. The clock moves 10 ms
	 * once the controller has taken the next command, and not again before the CQ head
	 * has passed its completion: no 60 ms ever pass without progress */
	struct bam_ctx *ctx = open_ctx_q("emu:size=1M,delay_rate=1,delay_us=10000,workers=1", timeout / ms, 1, 2);
	const uint64_t cmds0 = ctrl_cmds(ctx);
	credit_head0 = bam_load_relaxed_u32(&bam_ctx_dev(ctx)->ctrl[0].qps[0].cq_head);
	vclock_set(1);
	start_credit_threads(ctx, N, th, a);
	assert_true(wait_real(all_started, ctx, N)); /* all in line from the same instant */
	for (uint32_t k = 1; k <= N; k++) {
		assert_true(wait_real(fetched, ctx, cmds0 + k));
		vclock_step(delay);
		assert_true(wait_real(passed, ctx, k));
	}
	int ok = 0, to = 0;
	uint64_t longest = 0;
	for (uint32_t i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		ok += a[i].rc == 0 && a[i].st == 0;
		to += a[i].rc == -ETIMEDOUT;
		longest = a[i].waited > longest ? a[i].waited : longest;
	}
	vclock_set(0);
	struct bam_ctrl_stats cs;
	bam_ctx_ctrl_stats(ctx, 0, &cs);
	fprintf(stderr, "progress: %d ok, %d timeouts, longest wait %.0f ms (virtual)\n", ok, to, longest / 1e6);
	assert_true(longest > 3 * timeout); /* the last threads waited past the timeout */
	assert_int_equal(ok, N);
	assert_int_equal(to, 0);
	assert_int_equal(cs.qp.timeouts, 0);
	bam_ctx_close(ctx);

	/* no progress at all: every completion dropped. 1 thread holds the credit and
	 * times out waiting for its CQE; the others find the queue full, see no
	 * completion for the whole timeout, and give up too. The clock moves a timeout
	 * (and 1 ms) at a time until all have: none may give up before a whole timeout.
	 * (How many steps a thread sleeps through before it looks again is the
	 * scheduler's business: the bound on the whole is the real-time minute below.) */
	ctx = open_ctx_q("emu:size=1M,drop_rate=1,workers=1", timeout / ms, 1, 2);
	vclock_set(1);
	start_credit_threads(ctx, 12, th, a);
	assert_true(wait_real(all_started, ctx, 12));
	const uint64_t end = real_ns() + 60000000000ull;
	while (atomic_load(&credit_done) < 12 && real_ns() < end) {
		vclock_step(timeout + ms);
		usleep(2000);
	}
	ok = to = 0;
	uint64_t shortest = UINT64_MAX;
	for (uint32_t i = 0; i < 12; i++) {
		pthread_join(th[i], NULL);
		ok += a[i].rc == 0 && a[i].st == 0;
		to += a[i].rc == -ETIMEDOUT;
		shortest = a[i].waited < shortest ? a[i].waited : shortest;
	}
	vclock_set(0);
	fprintf(stderr, "no progress: %d ok, %d timeouts, shortest wait %.0f ms (virtual), %.0f ms (real)\n", ok, to,
		shortest / 1e6, (real_ns() - (end - 60000000000ull)) / 1e6);
	assert_int_equal(ok, 0);
	assert_int_equal(to, 12);
	assert_true(shortest > timeout); /* none gave up before a whole timeout */
	bam_ctx_close(ctx);
}

static void test_late_completion_discarded(void **state)
{
	(void)state;
	uint8_t *b = page_buf(512);
	uint16_t st;
	/* every command is delayed 150 ms; timeout 50 ms; wait long enough for the late
	 * CQEs, then the queue pair must still deliver fresh completions correctly */
	struct bam_ctx *ctx = open_ctx("emu:size=1M,delay_rate=1,delay_us=150000,workers=1", 50);
	for (int i = 0; i < 3; i++)
		assert_int_equal(bam_dev_io(bam_ctx_dev(ctx), 0, 0, NVME_CMD_READ, i, 1, (uintptr_t)b, 0, &st), -ETIMEDOUT);
	bam_ctx_close(ctx);
	free(b);
}

static void test_bad_backend_strings(void **state)
{
	(void)state;
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU};
	struct bam_ctx *ctx;
	char err[256];
	assert_int_equal(bam_ctx_open("nosuch:x", &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown back end"));
	assert_int_equal(bam_ctx_open("emu:profile=floppy", &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown profile"));
	assert_int_equal(bam_ctx_open("emu:lba=1000", &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_int_equal(bam_ctx_open("emu:colour=blue", &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_int_equal(bam_ctx_open("emu:err_rate=2", &o, &ctx, err, sizeof(err)), -EINVAL);
	/* GPU media on the CPU target: refused by the open, with what to use instead */
	assert_int_equal(bam_ctx_open("emu:size=1M,media=gpu", &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "media=gpu"));
	assert_non_null(strstr(err, "use media=dram"));
	assert_int_equal(bam_ctx_open("emu:size=1M,media=hbm", &o, &ctx, err, sizeof(err)), -EINVAL);
	/* the same strings refused by the parse-only check, with the same messages; good
	 * ones pass it without anything being opened or created */
	assert_int_equal(bam_backend_check("nosuch:x", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown back end 'nosuch'"));
	assert_int_equal(bam_backend_check("emu:profile=floppy", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown profile"));
	assert_int_equal(bam_backend_check("emu:colour=blue", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown key 'colour'"));
	assert_int_equal(bam_backend_check("emu:media=file", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "needs path=FILE"));
	assert_int_equal(bam_backend_check("emu:size=1000,lba=512", err, sizeof(err)), -EINVAL);
	/* path= names a media file: with media=dram or media=gpu it is a contradiction,
	 * whichever comes first */
	assert_int_equal(bam_backend_check("emu:media=gpu,path=/tmp/m.img", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "goes with media=file, not media=gpu"));
	assert_int_equal(bam_backend_check("emu:path=/tmp/m.img,media=dram", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not media=dram"));
	assert_int_equal(bam_backend_check("emu:media=gpu,size=1M", err, sizeof(err)), 0);
	assert_int_equal(bam_backend_check("emu:path=/nonexistent-dir/m.img,media=file,size=1M", err, sizeof(err)), 0);
	assert_int_equal(bam_backend_check("file:", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no file named"));
	assert_int_equal(bam_backend_check("file:/x,qd=0", err, sizeof(err)), -EINVAL);
	/* the file back end's numbers are digits only, as emu's */
	assert_int_equal(bam_backend_check("file:/x,qd=+2", err, sizeof(err)), -EINVAL);
	assert_int_equal(bam_backend_check("file:/x,workers= 2", err, sizeof(err)), -EINVAL);
	assert_int_equal(bam_backend_check("file:/x,workers=-1", err, sizeof(err)), -EINVAL);
	assert_int_equal(bam_backend_check("file:/x,qd=99999999999999999999", err, sizeof(err)), -EINVAL);
	assert_int_equal(bam_backend_check("file:/x,qd=64,workers=2,lba=4096", err, sizeof(err)), 0);
	assert_int_equal(bam_backend_check("file:/x,size=1000", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a multiple of the LBA size 512"));
	assert_int_equal(bam_backend_check("file:/x,size=6K,lba=4096", err, sizeof(err)), -EINVAL);
	assert_int_equal(bam_backend_check(NULL, NULL, 0), 0);
	assert_int_equal(bam_backend_check("emu:profile=optane-p5800x,count=4", err, sizeof(err)), 0);
	assert_int_equal(bam_backend_check("emu:media=file,path=/nonexistent-dir/m.img,size=1M", err, sizeof(err)), 0);
	assert_int_equal(access("/nonexistent-dir/m.img", F_OK), -1);
	assert_int_equal(bam_backend_check("file:/nonexistent-dir/f.img,size=1M", err, sizeof(err)), 0);
	o.queue_depth = 1000;
	assert_int_equal(bam_ctx_open("emu", &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "power of two"));
	o.queue_depth = 0;
	o.target = BAM_TARGET_GPU;
	int rc = bam_ctx_open("emu:size=1M", &o, &ctx, err, sizeof(err));
	if (rc == 0)
		bam_ctx_close(ctx); /* a GPU build on a GPU machine */
	else
		assert_int_equal(rc, -ENODEV);
}

/* bam_backend_media: the files a back-end string's open would take, as its own parser
 * reads the string (a tool's second parser once missed count=0x2 and path tokens with
 * '=', and let the graph file be overwritten as media) */
struct media_list {
	int n;
	char p[8][64];
};

static int media_collect(void *arg, const char *path)
{
	struct media_list *m = arg;
	if (m->n == 8)
		return -ENOSPC;
	snprintf(m->p[m->n++], sizeof(m->p[0]), "%s", path);
	return 0;
}

static void test_backend_media_paths(void **state)
{
	(void)state;
	char err[512];
	struct media_list m;
	memset(&m, 0, sizeof(m));
	assert_int_equal(bam_backend_media("emu:path=web,count=0x3,size=16M", media_collect, &m, err, sizeof(err)), 0);
	assert_int_equal(m.n, 3);
	assert_string_equal(m.p[0], "web.0");
	assert_string_equal(m.p[2], "web.2");
	memset(&m, 0, sizeof(m));
	assert_int_equal(bam_backend_media("emu:media=file,path=one.img,size=1M", media_collect, &m, err, sizeof(err)), 0);
	assert_int_equal(m.n, 1);
	assert_string_equal(m.p[0], "one.img");
	/* in-memory media: no files */
	memset(&m, 0, sizeof(m));
	assert_int_equal(bam_backend_media("emu:count=4", media_collect, &m, err, sizeof(err)), 0);
	assert_int_equal(m.n, 0);
	assert_int_equal(bam_backend_media("emu", media_collect, &m, err, sizeof(err)), 0);
	assert_int_equal(m.n, 0);
	/* the file back end: bare tokens, path=, a token with '=' after a '/', and one
	 * whose value is empty are all paths; options are not */
	memset(&m, 0, sizeof(m));
	assert_int_equal(bam_backend_media("file:a.img,path=b,c=1,./d=3.img,e.img=,size=1M,lba=4096", media_collect, &m,
					   err, sizeof(err)),
			 -EINVAL); /* c=1: an unknown key */
	assert_non_null(strstr(err, "unknown key 'c'"));
	memset(&m, 0, sizeof(m));
	assert_int_equal(bam_backend_media("file:a.img,path=b,./d=3.img,e.img=,size=1M,lba=4096", media_collect, &m, err,
					   sizeof(err)),
			 0);
	assert_int_equal(m.n, 4);
	assert_string_equal(m.p[0], "a.img");
	assert_string_equal(m.p[1], "b");
	assert_string_equal(m.p[2], "./d=3.img");
	assert_string_equal(m.p[3], "e.img");
	/* the callback's refusal stops the walk and is returned */
	memset(&m, 0, sizeof(m));
	m.n = 8;
	assert_int_equal(bam_backend_media("file:a,b", media_collect, &m, err, sizeof(err)), -ENOSPC);
	/* unknown back ends and bad strings as bam_backend_check; err may be NULL */
	assert_int_equal(bam_backend_media("nosuch:x", media_collect, &m, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown back end 'nosuch'"));
	assert_int_equal(bam_backend_media("emu:media=file", media_collect, &m, NULL, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid_sqes),       cmocka_unit_test(test_prp_lists),
		cmocka_unit_test(test_fault_media_error),  cmocka_unit_test(test_fault_error_rate),
		cmocka_unit_test(test_fault_timeouts),     cmocka_unit_test(test_late_completion_discarded),
		cmocka_unit_test(test_bad_backend_strings),
		cmocka_unit_test(test_backend_media_paths),
		cmocka_unit_test(test_credit_wait_bounded_by_progress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
