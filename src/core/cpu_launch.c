/* SPDX-License-Identifier: MIT */
/* The CPU target's "kernel launch": logical threads spread over host threads. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "bam/bam.h"
#include "bam/atomic.h"

uint64_t bam_host_time_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void bam_host_sleep_ns(long ns)
{
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

void bam_host_yield(void)
{
	sched_yield();
}

void bam_cpu_futex_wait(uint32_t *p, uint32_t val, long ns)
{
	struct timespec ts = {0, ns};
	syscall(SYS_futex, p, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

void bam_cpu_futex_wake(uint32_t *p)
{
	__atomic_fetch_add(p, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, p, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

struct launch {
	uint64_t nthreads;
	uint32_t nworkers;
	void (*fn)(void *, uint64_t);
	void *arg;
};
struct worker {
	struct launch *l;
	uint32_t w;
};

static void *run(void *p)
{
	struct worker *wk = p;
	struct launch *l = wk->l;
	/* worker w runs tids w, w + nworkers, ... (interleaved, as warps of a grid) */
	for (uint64_t t = wk->w; t < l->nthreads; t += l->nworkers)
		l->fn(l->arg, t);
	return NULL;
}

int bam_cpu_launch(uint64_t nthreads, uint32_t nworkers, void (*fn)(void *arg, uint64_t tid), void *arg)
{
	if (nthreads == 0)
		return 0;
	if (nworkers == 0 || nworkers > nthreads)
		nworkers = nthreads > 1024 ? 1024 : (uint32_t)nthreads;
	struct launch l = {nthreads, nworkers, fn, arg};
	if (nworkers == 1) {
		/* one worker: the calling thread, no thread to create (a BFS level of a long
		 * path is one vertex: creating a thread per level dominated such runs) */
		struct worker w0 = {&l, 0};
		run(&w0);
		return 0;
	}
	pthread_t *th = calloc(nworkers, sizeof(*th));
	struct worker *wk = calloc(nworkers, sizeof(*wk));
	if (!th || !wk) {
		free(th);
		free(wk);
		return -ENOMEM;
	}
	uint32_t started = 0;
	int rc = 0;
	for (; started < nworkers; started++) {
		wk[started].l = &l;
		wk[started].w = started;
		if (pthread_create(&th[started], NULL, run, &wk[started])) {
			rc = -EAGAIN;
			break;
		}
	}
	if (rc) {
		/* run the rest of the work on the threads we have: fold the missing workers'
		 * tids into this thread so nothing is skipped */
		for (uint32_t w = started; w < nworkers; w++) {
			wk[w].l = &l;
			wk[w].w = w;
			run(&wk[w]);
		}
		rc = 0;
	}
	for (uint32_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	free(wk);
	return rc;
}
