/* SPDX-License-Identifier: MIT */
/*
 * The body of `bam bench`'s I/O threads, compiled for GPU threads (bench_gpu.cu) and
 * host threads (iobench.c). Each thread keeps 'iodepth' commands in flight through
 * bam_dev_io_submit/bam_dev_io_wait, checks every word of every block it reads
 * against the pattern derived from the block's LBA, and records latencies in a
 * log-linear histogram.
 */
#ifndef BAM_BENCH_KERN_H
#define BAM_BENCH_KERN_H

#include "bam/dev.h"

/* I/Os in flight per thread kept in the thread's own (local) slots; deeper threads use
 * bench_args.slots (--iodepth up to the queue depth). */
#define BENCH_LOCAL_SLOTS 32
#define BENCH_MAX_IODEPTH 65536

/* splitmix64's finaliser (Steele, Lea, Flood 2014): the random numbers of the bench
 * threads and the verification pattern. The pattern of earlier runs must read back
 * (--prefill=0): do not change it. */
BAM_HD_INLINE uint64_t bench_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

enum bench_rw { BENCH_READ, BENCH_WRITE, BENCH_RANDREAD, BENCH_RANDWRITE, BENCH_RANDRW };

/* Latency histogram, HDR-style log-linear: values below 2^BENCH_HIST_EXP0 ns exactly,
 * then 2^BENCH_HIST_SUBB buckets per power of two up to 2^BENCH_HIST_EXPMAX ns (about
 * 2,200 s; larger values land in the last bucket). A bucket's width is at most 1/64 of
 * its lower bound: a percentile read as the bucket's midpoint is within 0.8%. */
#define BENCH_HIST_SUBB 6
#define BENCH_HIST_EXP0 7
#define BENCH_HIST_EXPMAX 41
#define BENCH_HIST ((1u << BENCH_HIST_EXP0) + (BENCH_HIST_EXPMAX - BENCH_HIST_EXP0) * (1u << BENCH_HIST_SUBB))

enum { BENCH_DIR_READ, BENCH_DIR_WRITE };
/* copies of the exact series, a thread merging into copy tid % BENCH_LAT_STRIPES: a
 * million threads ending at once do not all update one address */
#define BENCH_LAT_STRIPES 32
enum { BENCH_LAT, BENCH_CLAT, BENCH_SLAT }; /* total, completion, submission */

/* min/max/sum/sum of squares of one latency series, merged once per thread */
struct bench_lat {
	uint64_t n, sum, min, max; /* ns */
	double sumsq;              /* ns^2 */
};

/* Verification of reads (bench_args.verify) */
enum { BENCH_VERIFY_OFF, BENCH_VERIFY_PATTERN, BENCH_VERIFY_CONTENT };

struct bench_out {
	uint64_t ios;           /* I/Os completed after the ramp (progress reads it) */
	uint64_t bytes, reads, writes; /* after the ramp */
	uint64_t errors;        /* completions with a non-zero NVMe status */
	uint64_t timeouts;      /* -ETIMEDOUT */
	uint64_t verify_fail;   /* blocks whose content did not match */
	uint32_t first_status;  /* first non-zero NVMe status */
	uint32_t pad;
	uint64_t submit_ns;     /* sum over the I/Os of the time bam_dev_io_submit_ex took */
	uint64_t t_start;       /* the first thread's start (the run's clock; all threads read it) */
	uint64_t t_last;        /* the last completion counted */
	uint64_t ramp_ios;      /* I/Os completed during the ramp (not in the figures) */
	uint64_t verified;      /* blocks checked */
	uint64_t flushes, flush_errors, flush_ns; /* the Flush after writes; flush_ns: the longest */
	struct bench_lat lat[BENCH_LAT_STRIPES][3][2]; /* [tid % stripes][BENCH_LAT..SLAT][direction] */
	uint64_t hist[3][2][BENCH_HIST]; /* the same, histograms */
};

struct bench_slot {
	struct bam_io io;
	uint64_t t0, ts, lba;   /* submit started, submit returned */
	uint32_t c, write;
};

struct bench_args {
	struct bam_dev *dev;
	struct bench_out *out;
	uint8_t *buf;           /* [threads * iodepth * bs] */
	uint64_t *prp;          /* [threads * iodepth * prp_stride/8] PRP lists, or NULL */
	struct bench_slot *slots; /* [threads * iodepth] when iodepth > BENCH_LOCAL_SLOTS */
	const uint8_t *const *ref; /* BENCH_VERIFY_CONTENT: each controller's media, read-only (CPU target) */
	uint32_t prp_stride;    /* bytes per buffer's PRP list */
	uint32_t bs;            /* bytes per I/O */
	uint32_t lba_shift;
	uint32_t n_ctrl;
	uint32_t iodepth;
	uint32_t rwmix_read;    /* percent of reads in randrw */
	uint32_t verify;        /* BENCH_VERIFY_* */
	uint32_t rw;            /* enum bench_rw */
	uint64_t nblocks;       /* bs-sized blocks in the tested region (all controllers) */
	uint64_t threads;
	uint64_t ios_per_thread;/* 0 = run for runtime_ns */
	uint64_t runtime_ns;    /* 0 = no time limit; else the run ends at t_start + ramp + runtime */
	uint64_t ramp_ns;       /* I/Os completing before t_start + ramp_ns are not counted */
	uint64_t seed;
};

/* The 8-byte word at index i of logical block 'lba' of controller c: what the media
 * holds after prefill and what every write stores. */
BAM_HD_INLINE uint64_t bench_word(uint32_t c, uint64_t lba, uint32_t i)
{
	return bench_mix64(((uint64_t)c << 56) ^ (lba << 10) ^ i ^ 0x6261u);
}

BAM_HD_INLINE uint32_t bench_hist_index(uint64_t v)
{
	if (v < (1u << BENCH_HIST_EXP0))
		return (uint32_t)v;
#if BAM_ON_GPU
	uint32_t b = 63u - (uint32_t)__clzll((long long)v);
#else
	uint32_t b = 63u - (uint32_t)__builtin_clzll(v);
#endif
	if (b >= BENCH_HIST_EXPMAX)
		return BENCH_HIST - 1u;
	return (1u << BENCH_HIST_EXP0) + (b - BENCH_HIST_EXP0) * (1u << BENCH_HIST_SUBB) +
	       (uint32_t)((v >> (b - BENCH_HIST_SUBB)) & ((1u << BENCH_HIST_SUBB) - 1u));
}

/* Lower bound of a histogram bucket, ns; its width in *width. */
BAM_HD_INLINE uint64_t bench_hist_value(uint32_t idx, uint64_t *width)
{
	if (idx < (1u << BENCH_HIST_EXP0)) {
		*width = 1;
		return idx;
	}
	uint32_t k = idx - (1u << BENCH_HIST_EXP0);
	uint32_t b = k / (1u << BENCH_HIST_SUBB) + BENCH_HIST_EXP0, sub = k % (1u << BENCH_HIST_SUBB);
	*width = 1ull << (b - BENCH_HIST_SUBB);
	return ((uint64_t)(1u << BENCH_HIST_SUBB) + sub) << (b - BENCH_HIST_SUBB);
}

BAM_HD_INLINE void bench_lat_init(struct bench_lat *l)
{
	l->n = l->sum = l->max = 0;
	l->min = ~0ull;
	l->sumsq = 0;
}

BAM_HD_INLINE void bench_lat_add(struct bench_lat *l, uint64_t v)
{
	l->n++;
	l->sum += v;
	l->sumsq += (double)v * (double)v;
	if (v < l->min)
		l->min = v;
	if (v > l->max)
		l->max = v;
}

BAM_HD_INLINE void bench_fetch_max_u64(uint64_t *p, uint64_t v)
{
#if BAM_ON_GPU
	atomicMax((unsigned long long *)p, (unsigned long long)v);
#else
	uint64_t old = bam_load_relaxed_u64(p);
	while (v > old) {
		uint64_t seen = bam_cas_acq_rel_gpu_u64(p, old, v);
		if (seen == old)
			break;
		old = seen;
	}
#endif
}

BAM_HD_INLINE void bench_add_f64(double *p, double v)
{
#if BAM_ON_GPU
	atomicAdd(p, v);
#else
	union {
		double d;
		uint64_t u;
	} o, n;
	o.u = bam_load_relaxed_u64((uint64_t *)p);
	for (;;) {
		n.d = o.d + v;
		uint64_t seen = bam_cas_acq_rel_gpu_u64((uint64_t *)p, o.u, n.u);
		if (seen == o.u)
			break;
		o.u = seen;
	}
#endif
}

/* Merge a thread's series into the run's (the run's min starts at ~0: host sets it). */
BAM_HD_INLINE void bench_lat_merge(struct bench_lat *dst, const struct bench_lat *l)
{
	if (!l->n)
		return;
	bam_fetch_add_relaxed_gpu_u64(&dst->n, l->n);
	bam_fetch_add_relaxed_gpu_u64(&dst->sum, l->sum);
	bam_fetch_min_relaxed_gpu_u64(&dst->min, l->min);
	bench_fetch_max_u64(&dst->max, l->max);
	bench_add_f64(&dst->sumsq, l->sumsq);
}

/* Block index b of the region -> controller and first LBA (striped block by block). */
BAM_HD_INLINE void bench_place(const struct bench_args *a, uint64_t b, uint32_t *c, uint64_t *lba)
{
	*c = (uint32_t)(b % a->n_ctrl);
	*lba = (b / a->n_ctrl) * ((uint64_t)a->bs >> a->lba_shift);
}

BAM_HD_INLINE void bench_fill(const struct bench_args *a, uint8_t *p, uint32_t c, uint64_t lba)
{
	uint64_t *w = (uint64_t *)p;
	uint32_t per = (1u << a->lba_shift) / 8u;
	for (uint32_t k = 0; k < a->bs / 8u; k++)
		w[k] = bench_word(c, lba + k / per, k % per);
}

BAM_HD_INLINE int bench_check(const struct bench_args *a, const uint8_t *p, uint32_t c, uint64_t lba)
{
	const uint64_t *w = (const uint64_t *)p;
	uint32_t per = (1u << a->lba_shift) / 8u;
	int bad = 0;
	for (uint32_t k = 0; k < a->bs / 8u; k++)
		bad |= w[k] != bench_word(c, lba + k / per, k % per);
	return bad;
}

BAM_HD_INLINE int bench_check_ref(const struct bench_args *a, const uint8_t *p, uint32_t c, uint64_t lba)
{
	const uint64_t *w = (const uint64_t *)p;
	const uint64_t *r = (const uint64_t *)(a->ref[c] + (lba << a->lba_shift));
	int bad = 0;
	for (uint32_t k = 0; k < a->bs / 8u; k++)
		bad |= w[k] != r[k];
	return bad;
}

/* A thread's figures, merged into bench_out once at its end */
struct bench_local {
	struct bench_lat lat[3][2];
	uint64_t reads, writes, verified;
	uint64_t ramp_end;      /* the run's clock: end of the ramp */
	uint64_t last;          /* the thread's last counted completion */
};

/* Returns -ETIMEDOUT when the completion did not come (the thread then stops issuing:
 * a stalled controller costs one timeout per thread, not one per I/O). */
BAM_HD_INLINE int bench_complete(const struct bench_args *a, struct bench_local *L, struct bench_slot *sl,
				 uint8_t *b)
{
	uint16_t st = 0;
	int rc = bam_dev_io_wait(&sl->io, &st);
	uint64_t t1 = bam_time_ns();
	struct bench_out *o = a->out;
	if (rc) {
		bam_fetch_add_relaxed_gpu_u64(&o->timeouts, 1);
		bam_dev_record_error(a->dev, rc, 0);
		return rc;
	}
	if (st) {
		bam_fetch_add_relaxed_gpu_u64(&o->errors, 1);
		bam_cas_acq_rel_gpu_u32(&o->first_status, 0, st);
		bam_dev_record_error(a->dev, -EIO, st);
		return 0;
	}
	if (!sl->write && a->verify) {
		int bad = a->verify == BENCH_VERIFY_CONTENT ? bench_check_ref(a, b, sl->c, sl->lba)
							   : bench_check(a, b, sl->c, sl->lba);
		L->verified++;
		if (bad)
			bam_fetch_add_relaxed_gpu_u64(&o->verify_fail, 1);
	}
	if (t1 < L->ramp_end) { /* (the ramp: not in the figures) */
		bam_fetch_add_relaxed_gpu_u64(&o->ramp_ios, 1);
		return 0;
	}
	const uint32_t d = sl->write ? BENCH_DIR_WRITE : BENCH_DIR_READ;
	const uint64_t v[3] = {t1 - sl->t0, t1 - sl->ts, sl->ts - sl->t0};
	bam_fetch_add_relaxed_gpu_u64(&o->ios, 1);
	for (int k = 0; k < 3; k++) {
		bench_lat_add(&L->lat[k][d], v[k]);
		bam_fetch_add_relaxed_gpu_u64(&o->hist[k][d][bench_hist_index(v[k])], 1);
	}
	if (sl->write)
		L->writes++;
	else
		L->reads++;
	L->last = t1;
	return 0;
}

/* Wait for the thread's oldest I/O in flight (slots form a ring: the oldest is at
 * next - inflight). Returns nonzero when it timed out (the thread then halts). */
BAM_HD_INLINE int bench_complete_oldest(const struct bench_args *a, struct bench_local *L, struct bench_slot *slots,
					uint64_t tid, uint32_t next, uint32_t *inflight)
{
	const uint32_t depth = a->iodepth;
	const uint32_t oi = (next + depth - *inflight) % depth;
	(*inflight)--;
	return bench_complete(a, L, &slots[oi], a->buf + ((tid * depth + oi) * (uint64_t)a->bs)) != 0;
}

BAM_HD_INLINE void bench_thread(const struct bench_args *a, uint64_t tid)
{
	struct bench_slot local[BENCH_LOCAL_SLOTS];
	const uint32_t depth = a->iodepth;
	struct bench_slot *slots = depth <= BENCH_LOCAL_SLOTS ? local : a->slots + tid * depth;
	const uint32_t nlb = a->bs >> a->lba_shift;
	uint64_t rng = bench_mix64(a->seed ^ (tid * 0x9e3779b97f4a7c15ull));
	/* one clock for the run: the first thread to start sets it, every thread (of every
	 * block wave) reads it, so that the run ends at one deadline */
	uint64_t start = bam_load_relaxed_u64(&a->out->t_start);
	if (!start) {
		const uint64_t now = bam_time_ns();
		start = bam_cas_acq_rel_gpu_u64(&a->out->t_start, 0, now);
		if (!start)
			start = now;
	}
	struct bench_local L;
	for (int k = 0; k < 3; k++) {
		bench_lat_init(&L.lat[k][0]);
		bench_lat_init(&L.lat[k][1]);
	}
	L.reads = L.writes = L.verified = L.last = 0;
	L.ramp_end = start + a->ramp_ns;
	const uint64_t deadline = a->runtime_ns ? L.ramp_end + a->runtime_ns : 0;
	uint64_t issued = 0, seq = tid;
	uint32_t inflight = 0, next = 0; /* slots used as a ring: oldest at next - inflight */
	int halted = 0;                  /* a submission timed out: drain, issue no more */

	for (;;) {
		/* stop at whichever limit comes first: the I/O count or the deadline */
		int more = !halted && (!a->ios_per_thread || issued < a->ios_per_thread);
		if (more && deadline)
			more = bam_time_ns() < deadline;
		if (!more && inflight == 0)
			break;
		uint32_t si = next % depth;
		uint8_t *b = a->buf + ((tid * depth + si) * (uint64_t)a->bs);
		if (inflight == depth || !more) {
			if (bench_complete_oldest(a, &L, slots, tid, next, &inflight))
				halted = 1;
			continue;
		}
		/* issue one */
		uint64_t blk;
		uint32_t write;
		rng = bench_mix64(rng);
		switch (a->rw) {
		case BENCH_READ: blk = seq % a->nblocks; seq += a->threads; write = 0; break;
		case BENCH_WRITE: blk = seq % a->nblocks; seq += a->threads; write = 1; break;
		case BENCH_RANDREAD: blk = rng % a->nblocks; write = 0; break;
		case BENCH_RANDWRITE: blk = rng % a->nblocks; write = 1; break;
		default: blk = rng % a->nblocks; write = (uint32_t)((rng >> 40) % 100u) >= a->rwmix_read; break;
		}
		struct bench_slot *sl = &slots[si];
		bench_place(a, blk, &sl->c, &sl->lba);
		sl->write = write;
		if (write)
			bench_fill(a, b, sl->c, sl->lba);
		uint64_t prp = 0;
		if (a->prp)
			prp = (uint64_t)(uintptr_t)(a->prp + (tid * depth + si) * (uint64_t)(a->prp_stride / 8u));
		int rc;
		for (;;) {
			/* with I/Os of its own in flight a thread must not wait for room in the
			 * queue pair: its own completed CQEs may be what holds the CQ head
			 * (bam_qpair_submit). It waits for its oldest instead, then tries again. */
			sl->t0 = bam_time_ns();
			rc = bam_dev_io_submit_ex(a->dev, sl->c, tid, write ? NVME_CMD_WRITE : NVME_CMD_READ, sl->lba,
						  nlb, (uint64_t)(uintptr_t)b, prp, &sl->io, inflight == 0);
			if (rc != -EAGAIN)
				break;
			if (bench_complete_oldest(a, &L, slots, tid, next, &inflight))
				halted = 1;
		}
		sl->ts = bam_time_ns();
		if (sl->t0 >= L.ramp_end) /* (the ramp's I/Os do not count against number_ios) */
			issued++;
		if (!rc) /* how much of the latency the submission is */
			bam_fetch_add_relaxed_gpu_u64(&a->out->submit_ns, sl->ts - sl->t0);
		if (rc) {
			bam_fetch_add_relaxed_gpu_u64(&a->out->timeouts, 1);
			bam_dev_record_error(a->dev, rc, 0);
			/* commands already in flight are still waited for below */
			if (rc == -ETIMEDOUT)
				halted = 1;
			continue;
		}
		inflight++;
		next++;
	}
	struct bench_out *o = a->out;
	for (int k = 0; k < 3; k++) {
		bench_lat_merge(&o->lat[tid % BENCH_LAT_STRIPES][k][0], &L.lat[k][0]);
		bench_lat_merge(&o->lat[tid % BENCH_LAT_STRIPES][k][1], &L.lat[k][1]);
	}
	if (L.reads)
		bam_fetch_add_relaxed_gpu_u64(&o->reads, L.reads);
	if (L.writes)
		bam_fetch_add_relaxed_gpu_u64(&o->writes, L.writes);
	if (L.reads + L.writes)
		bam_fetch_add_relaxed_gpu_u64(&o->bytes, (L.reads + L.writes) * a->bs);
	if (L.verified)
		bam_fetch_add_relaxed_gpu_u64(&o->verified, L.verified);
	if (L.last)
		bench_fetch_max_u64(&o->t_last, L.last);
}

/* The Flush after a write run: controller c's volatile write cache (the page cache of
 * a file back end with direct=0) written to its media, as a command through the
 * queues (NVM Command Set: Flush). */
BAM_HD_INLINE void bench_flush(const struct bench_args *a, uint32_t c)
{
	uint16_t st = 0;
	uint64_t t0 = bam_time_ns();
	int rc = bam_dev_io(a->dev, c, c, NVME_CMD_FLUSH, 0, 1, 0, 0, &st);
	uint64_t dt = bam_time_ns() - t0;
	bam_fetch_add_relaxed_gpu_u64(&a->out->flushes, 1);
	if (rc || st) {
		bam_fetch_add_relaxed_gpu_u64(&a->out->flush_errors, 1);
		bam_dev_record_error(a->dev, rc ? rc : -EIO, st);
	}
	bench_fetch_max_u64(&a->out->flush_ns, dt);
}

#endif /* BAM_BENCH_KERN_H */
