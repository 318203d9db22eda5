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

#define BENCH_MAX_IODEPTH 32
#define BENCH_HIST 1024

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

struct bench_out {
	uint64_t ios, bytes, reads, writes;
	uint64_t errors;        /* completions with a non-zero NVMe status */
	uint64_t timeouts;      /* -ETIMEDOUT */
	uint64_t verify_fail;   /* blocks whose content did not match */
	uint32_t first_status;  /* first non-zero NVMe status */
	uint32_t pad;
	uint64_t submit_ns;     /* sum over the I/Os of the time bam_dev_io_submit_ex took */
	uint64_t hist[BENCH_HIST]; /* latency histogram, ns, log-linear */
};

struct bench_args {
	struct bam_dev *dev;
	struct bench_out *out;
	uint8_t *buf;           /* [threads * iodepth * bs] */
	uint64_t *prp;          /* [threads * iodepth * prp_stride/8] PRP lists, or NULL */
	uint32_t prp_stride;    /* bytes per buffer's PRP list */
	uint32_t bs;            /* bytes per I/O */
	uint32_t lba_shift;
	uint32_t n_ctrl;
	uint32_t iodepth;
	uint32_t rwmix_read;    /* percent of reads in randrw */
	uint32_t verify;
	uint32_t rw;            /* enum bench_rw */
	uint64_t nblocks;       /* bs-sized blocks in the tested region (all controllers) */
	uint64_t threads;
	uint64_t ios_per_thread;/* 0 = run for runtime_ns */
	uint64_t runtime_ns;    /* 0 = no time limit */
	uint64_t deadline_ns;   /* absolute end of the run (CPU target), 0 = runtime_ns per thread */
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
	if (v < 32)
		return (uint32_t)v;
#if BAM_ON_GPU
	uint32_t b = 63u - (uint32_t)__clzll((long long)v);
#else
	uint32_t b = 63u - (uint32_t)__builtin_clzll(v);
#endif
	return 32u + (b - 5u) * 16u + (uint32_t)((v >> (b - 4u)) & 15u);
}

/* Lower bound of a histogram bucket, ns. */
BAM_HD_INLINE uint64_t bench_hist_value(uint32_t idx)
{
	if (idx < 32)
		return idx;
	uint32_t b = (idx - 32u) / 16u + 5u, sub = (idx - 32u) % 16u;
	return (uint64_t)(16u + sub) << (b - 4u);
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

struct bench_slot {
	struct bam_io io;
	uint64_t t0, lba;
	uint32_t c, write;
};

/* Returns -ETIMEDOUT when the completion did not come (the thread then stops issuing:
 * a stalled controller costs one timeout per thread, not one per I/O). */
BAM_HD_INLINE int bench_complete(const struct bench_args *a, struct bench_slot *sl, uint8_t *b)
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
	if (!sl->write && a->verify && bench_check(a, b, sl->c, sl->lba))
		bam_fetch_add_relaxed_gpu_u64(&o->verify_fail, 1);
	bam_fetch_add_relaxed_gpu_u64(&o->ios, 1);
	bam_fetch_add_relaxed_gpu_u64(&o->bytes, a->bs);
	bam_fetch_add_relaxed_gpu_u64(sl->write ? &o->writes : &o->reads, 1);
	bam_fetch_add_relaxed_gpu_u64(&o->hist[bench_hist_index(t1 - sl->t0)], 1);
	return 0;
}

/* Wait for the thread's oldest I/O in flight (slots form a ring: the oldest is at
 * next - inflight). Returns nonzero when it timed out (the thread then halts). */
BAM_HD_INLINE int bench_complete_oldest(const struct bench_args *a, struct bench_slot *slots, uint64_t tid,
					uint32_t next, uint32_t *inflight)
{
	const uint32_t depth = a->iodepth;
	const uint32_t oi = (next + depth - *inflight) % depth;
	(*inflight)--;
	return bench_complete(a, &slots[oi], a->buf + ((tid * depth + oi) * (uint64_t)a->bs)) != 0;
}

BAM_HD_INLINE void bench_thread(const struct bench_args *a, uint64_t tid)
{
	struct bench_slot slots[BENCH_MAX_IODEPTH];
	const uint32_t depth = a->iodepth;
	const uint32_t nlb = a->bs >> a->lba_shift;
	uint64_t rng = bench_mix64(a->seed ^ (tid * 0x9e3779b97f4a7c15ull));
	uint64_t start = bam_time_ns();
	uint64_t issued = 0, seq = tid;
	uint32_t inflight = 0, next = 0; /* slots used as a ring: oldest at next - inflight */
	int halted = 0;                  /* a submission timed out: drain, issue no more */

	for (;;) {
		/* stop at whichever limit comes first: the I/O count or the run time */
		int more = !halted && (!a->ios_per_thread || issued < a->ios_per_thread);
		if (more && a->runtime_ns)
			more = a->deadline_ns ? bam_time_ns() < a->deadline_ns : bam_time_ns() - start < a->runtime_ns;
		if (!more && inflight == 0)
			break;
		uint32_t si = next % depth;
		uint8_t *b = a->buf + ((tid * depth + si) * (uint64_t)a->bs);
		if (inflight == depth || !more) {
			if (bench_complete_oldest(a, slots, tid, next, &inflight))
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
			if (bench_complete_oldest(a, slots, tid, next, &inflight))
				halted = 1;
		}
		issued++;
		if (!rc) /* how much of the latency the submission is */
			bam_fetch_add_relaxed_gpu_u64(&a->out->submit_ns, bam_time_ns() - sl->t0);
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
}

#endif /* BAM_BENCH_KERN_H */
