/* SPDX-License-Identifier: MIT */
/*
 * bam/detail/qpair.h - one NVMe I/O queue pair (SQ + CQ) driven by many submitting threads at
 * once, with the lock-minimised protocol of the BaM paper (ASPLOS '23, section 4.2;
 * ../docs/DESIGN.md "Queue protocol"). Compiled for GPU threads (nvcc) and for host
 * threads (gcc, the CPU target) from this one header.
 *
 * Submission (per SQ): a thread takes a credit (at most depth-1 commands outstanding,
 * so neither the SQ nor the CQ can overflow: NVMe Base 2.0 section 4.1 "full queue"),
 * a CID, and a ticket from sq_ticket. The ticket indexes a virtual queue of 2^32
 * entries: slot = ticket mod depth, turn = ticket / depth. The thread waits until
 * sq_turn[slot] == 2*turn (slot free for its turn), writes its 64-byte SQE, sets
 * sq_mark[slot] and bumps sq_turn[slot] to odd (in flight). Then move_tail: a thread
 * whose mark is still set tries sq_lock; the winner advances sq_tail over every
 * consecutive marked slot, clears those marks and writes the SQ tail doorbell once
 * for all of them. A thread whose mark was cleared by someone else is done.
 *
 * Completion (per CQ): the waiter scans the CQ from cq_head for a CQE with its CID
 * and the phase tag expected at that position (Base 4.6: the controller inverts the
 * phase on every wrap), without locks, and marks it consumed in cq_consumed. The
 * winner of cq_lock moves cq_head over consecutive consumed CQEs, takes the newest
 * SQHD from them, frees SQ slots up to it (turn counter to even = free for the next
 * turn), frees the CIDs and credits, and rings the CQ head doorbell once.
 *
 * Every wait is bounded by the caller's timeout (nanoseconds). A waiter that times
 * out abandons its CID: if the completion arrives later, the CQ head mover consumes
 * it and counts it in 'late'. docs/RELIABILITY.md and models/qpair.pml (the SPIN
 * model of exactly this code) say what is guaranteed.
 *
 * Depth: a power of two from 2 to 65536 (CAP.MQES + 1 bounds it per controller).
 *
 * Not API: this header is the implementation of the device-side I/O path
 * (bam/dev.h, bam/array.h) and may change in any release; applications use bam/dev.h
 * (bam_dev_io and friends) and bam/array.h. Its counters are in bam/stats.h.
 */
#ifndef BAM_DETAIL_QPAIR_H
#define BAM_DETAIL_QPAIR_H

#include "bam/defs.h"
#include <errno.h>
#include "bam/atomic.h"
#include "bam/nvme_spec.h"
#include "bam/stats.h"

/* CID states (cid_state[]) */
#define BAM_CID_FREE      0u
#define BAM_CID_BUSY      1u /* a thread waits for its completion */
#define BAM_CID_ABANDONED 2u /* its waiter timed out; the CQE is discarded on arrival */

/*
 * The queue pair. Lives in memory the submitting threads and the controller can both
 * reach (GPU memory on the GPU; host memory on the CPU target). Built by the context
 * (src/core/ctx.c) or by hand in tests; the fields are the protocol's state, not an
 * API. Hot counters sit on their own 128-byte lines.
 */
struct bam_qpair {
	struct nvme_sqe *sq;        /* [depth] SQEs */
	struct nvme_cqe *cq;        /* [depth] CQEs */
	uint32_t *sq_doorbell;      /* SQyTDBL: 4-byte store, may be device MMIO */
	uint32_t *cq_doorbell;      /* CQyHDBL */
	uint32_t *sq_turn;          /* [depth] turn counters: 2t free for turn t, 2t+1 in flight */
	uint32_t *sq_mark;          /* [depth/32] bit set: SQE written, tail not yet past it */
	uint32_t *cq_consumed;      /* [depth/32] bit set: CQE consumed, head not yet past it */
	uint32_t *cid_state;        /* [depth] BAM_CID_* */
	uint32_t *progress;         /* NULL, or a word shared by the device's queue pairs,
				     * bumped by every CQ head move: waiters that cannot see
				     * their own queue pair's progress watch it (array.h) */
	uint32_t depth;             /* entries per SQ and per CQ, power of two */
	uint32_t depth_shift;       /* log2(depth) */
	uint32_t qid;               /* SQID = CQID, 1-based as in NVMe */
	uint32_t nsid;              /* namespace the commands go to */
	uint32_t broken;            /* set when a ticket could not be used: submissions fail */
	uint32_t sys_scope;         /* 1: the controller is outside the GPU (DMA engine, host
				     * service): doorbells and CQE reads ordered at system
				     * scope. 0: it runs on this GPU: GPU scope suffices. */
	uint32_t pad0[20];

	uint32_t sq_ticket;         /* next ticket (atomic) */
	uint32_t cid_hint;          /* where CID search starts (atomic) */
	uint32_t credits;           /* outstanding commands, <= depth - 1 (atomic) */
	uint32_t credit_line;       /* next number in the line for credits (atomic) */
	uint32_t credit_served;     /* numbers that left the line: credit or timeout (atomic) */
	uint32_t pad1[27];

	uint32_t sq_lock;           /* move_tail lock */
	uint32_t sq_tail;           /* virtual tail: SQEs made visible (under sq_lock) */
	uint32_t pad2[30];

	uint32_t cq_lock;           /* CQ head move lock */
	uint32_t cq_head;           /* virtual CQ head (written under cq_lock) */
	uint32_t sq_head;           /* virtual SQ head from SQHD (written under cq_lock) */
	uint32_t pad3[29];

	struct bam_qpair_counters cnt;
};

/* Lane mask for slot s in a 32-bit word bit-vector. */
BAM_HD_INLINE uint32_t bam_qp_bit(uint32_t s) { return 1u << (s & 31u); }

/* The phase tag a current CQE at virtual CQ position p carries: 1 in the first pass
 * over the queue, inverted on every wrap (Base spec 4.6, "Phase Tag"). */
BAM_HD_INLINE uint32_t bam_qp_expected_phase(const struct bam_qpair *qp, uint32_t p)
{
	return ((p >> qp->depth_shift) & 1u) ^ 1u;
}

/* Turn counters compare modulo 2 * (2^32 / depth), the period of 2*turn. */
BAM_HD_INLINE uint32_t bam_qp_turn_mask(const struct bam_qpair *qp)
{
	return qp->depth_shift <= 1 ? 0xffffffffu : ((1u << (33u - qp->depth_shift)) - 1u);
}

BAM_HD_INLINE int bam_qp_deadline_passed(uint64_t deadline)
{
	return bam_time_ns() > deadline;
}

/* The number of consecutive 1 bits of w from bit b up (0 to 32 - b): the run of
 * marked slots (SQ) or consumed entries (CQ) that starts at slot b of a 32-slot
 * bitmap word. */
BAM_HD_INLINE uint32_t bam_qp_run(uint32_t w, uint32_t b)
{
	const uint32_t z = ~(w >> b); /* 0 only when b = 0 and all 32 bits are set */
#if BAM_ON_GPU
	return z ? (uint32_t)(__ffs(z) - 1) : 32u;
#else
	return z ? (uint32_t)__builtin_ctz(z) : 32u;
#endif
}

/* Bits b .. b + n - 1 (n from 1 to 32 - b). */
BAM_HD_INLINE uint32_t bam_qp_bits(uint32_t b, uint32_t n)
{
	return (n >= 32u ? 0xffffffffu : ((1u << n) - 1u)) << b;
}

/* modelled in models/qpair.pml: inline trylock */
BAM_HD_INLINE int bam_qp_trylock(uint32_t *lock)
{
	return bam_load_relaxed_u32(lock) == 0 && bam_cas_acq_rel_gpu_u32(lock, 0, 1) == 0;
}

BAM_HD_INLINE void bam_qp_unlock(uint32_t *lock)
{
	bam_store_release_gpu_u32(lock, 0);
}

/* Read DW3 (CID in bits 15:0, status + phase in 31:16) in one 32-bit access, so that
 * the CID and the phase tag are seen together. The acquire orders the reads of
 * DW0-DW2 (SQHD) after it; the controller writes DW3 last, with release. */
BAM_HD_INLINE uint32_t bam_qp_cqe_dw3(const struct bam_qpair *qp, uint32_t p)
{
	const uint32_t *w = (const uint32_t *)&qp->cq[p & (qp->depth - 1)];
	return qp->sys_scope ? bam_load_acquire_sys_u32(&w[3]) : bam_load_acquire_gpu_u32(&w[3]);
}

/* Fence and doorbell store at the scope the controller needs (sys_scope). A
 * system-scope fence on the GPU waits for the PCIe path; a GPU-resident controller
 * (the emulator) only needs GPU scope. */
BAM_HD_INLINE void bam_qp_fence(const struct bam_qpair *qp)
{
	if (qp->sys_scope)
		bam_fence_acq_rel_sys();
	else
		bam_fence_acq_rel_gpu();
}

BAM_HD_INLINE void bam_qp_ring(const struct bam_qpair *qp, uint32_t *doorbell, uint32_t v)
{
	if (qp->sys_scope)
		bam_store_release_sys_u32(doorbell, v);
	else
		bam_store_release_gpu_u32(doorbell, v);
}

/* Exponential back-off on the GPU: after four polls 256 ns apart, 512 ns doubling to
 * 16 us. For waits whose end is far away or shared by many threads. CPU target:
 * bam_spin_pause. */
BAM_HD_INLINE void bam_qp_backoff(uint32_t iter)
{
#if BAM_ON_GPU
	if (iter >= 4) {
		const uint32_t k = iter - 4 < 5 ? iter - 4 : 5;
		__nanosleep(512u << k);
		return;
	}
#endif
	bam_spin_pause(iter);
}

/* Pause of a thread waiting for a credit of a full queue pair. GPU: bam_qp_backoff.
 * Host threads: after the yields of bam_spin_pause, sleeps doubling from 16 us to
 * 1 ms: a hundred threads in line for one queue pair waking every 20 us took the
 * cores from the controller's own threads (CPU target), so completions came further
 * apart than the timeout. */
BAM_HD_INLINE void bam_qp_credit_pause(uint32_t iter)
{
#if BAM_ON_GPU
	bam_qp_backoff(iter);
#else
	if (iter < 256) {
		bam_spin_pause(iter);
	} else {
		const uint32_t k = iter - 256 < 6 ? iter - 256 : 6;
		bam_host_sleep_ns((long)(16000u << k));
	}
#endif
}

/* Pause between two polls of the CQ by a waiter. A CQ in GPU memory (the emulator)
 * is polled about every 256 ns (bam_spin_pause). A CQ in host memory (sys_scope on
 * the GPU: a host-side service such as the file back end posts the CQEs) costs a PCIe
 * round trip per entry read, and thousands of waiting warps polling it that often
 * load the PCIe link and the host memory so much that the service's own copies into
 * GPU memory crawl: there the waiter backs off (bam_qp_backoff) up to 16 us, short
 * against the tens of microseconds such a service takes per command. */
BAM_HD_INLINE void bam_qp_poll_pause(const struct bam_qpair *qp, uint32_t iter)
{
	if (qp->sys_scope)
		bam_qp_backoff(iter);
	else
		bam_spin_pause(iter);
}

/* The same without ordering, for scanning many entries: a waiter that finds its CQE
 * issues one acquire fence (bam_qp_fence) before using what it read. One acquire
 * per scanned entry costs far more on the GPU. */
BAM_HD_INLINE uint32_t bam_qp_cqe_dw3_relaxed(const struct bam_qpair *qp, uint32_t p)
{
	const uint32_t *w = (const uint32_t *)&qp->cq[p & (qp->depth - 1)];
	return qp->sys_scope ? bam_load_relaxed_sys_u32(&w[3]) : bam_load_relaxed_gpu_u32(&w[3]);
}

/*
 * Move the CQ head over every consecutive consumed CQE (and over CQEs of abandoned
 * CIDs), free their CIDs, free SQ slots up to the newest SQHD, release the credits and
 * ring the CQ head doorbell once. Caller holds cq_lock. Returns the number passed.
 */
/* modelled in models/qpair.pml: inline move_head */
BAM_HD_INLINE uint32_t bam_qpair_cq_move_head_locked(struct bam_qpair *qp)
{
	const uint32_t mask = qp->depth - 1;
	const uint32_t h0 = bam_load_relaxed_u32(&qp->cq_head);
	uint32_t h = h0;
	uint32_t sqhd = 0, have_sqhd = 0;

	uint32_t freed = 0;
	for (;;) {
		const uint32_t slot = h & mask, b = slot & 31u;
		uint32_t *cw = &qp->cq_consumed[slot >> 5];
		/* (Reading the next run from the clear's old value instead, as move_tail
		 * does, saved a load per head move but its extra live state, inlined into
		 * every fill path, took the graph walk kernels from about 30 to 200 bytes of
		 * register spills: gpu mode 5-8% slower on kron26, results/history/graph.md.) */
		const uint32_t cword = bam_load_acquire_gpu_u32(cw);
		const uint32_t run = bam_qp_run(cword, b);
		if (run > 1) {
			/* A run of consumed CQEs, passed at once: one clear of their bits, the
			 * head published past all of them, then their CIDs freed (each still
			 * after the head passed its CQE, as below). Their waiters saw them, and
			 * the consumed bits' release, acquired above, orders the CQEs' contents
			 * before these relaxed reads; the controller cannot overwrite them before
			 * the CQ head doorbell. The steps of the entry-by-entry path below with
			 * only the CID frees moved after later entries' steps (a CID freed later
			 * is one nobody else could take meanwhile). One pass over a warp's 32
			 * completions instead of 32 rounds of dependent atomics. */
			bam_fetch_and_acq_rel_gpu_u32(cw, ~bam_qp_bits(b, run));
			sqhd = bam_load_relaxed_u32(&((const uint32_t *)&qp->cq[(h + run - 1) & mask])[2]) & 0xffffu;
			have_sqhd = 1;
			bam_store_release_gpu_u32(&qp->cq_head, h + run);
#if BAM_ON_GPU
			/* one fence for the run's frees (GPU only: ThreadSanitizer, on the host,
			 * does not see fences, so host builds keep one release store each) */
			bam_fence_acq_rel_gpu();
			for (uint32_t k = 0; k < run; k++)
				bam_store_relaxed_u32(&qp->cid_state[bam_qp_cqe_dw3_relaxed(qp, h + k) & 0xffffu], BAM_CID_FREE);
#else
			for (uint32_t k = 0; k < run; k++)
				bam_store_release_gpu_u32(&qp->cid_state[bam_qp_cqe_dw3_relaxed(qp, h + k) & 0xffffu], BAM_CID_FREE);
#endif
			freed += run;
			h += run;
			continue;
		}
		const int consumed = run == 1;
		const uint32_t dw3 = bam_qp_cqe_dw3(qp, h);
		const uint32_t cidv = dw3 & 0xffffu;
		if (consumed) {
			bam_fetch_and_acq_rel_gpu_u32(cw, ~bam_qp_bit(slot));
		} else {
			if (((dw3 >> 16) & NVME_CQE_P) != bam_qp_expected_phase(qp, h))
				break; /* not posted yet */
			uint32_t st = cidv <= mask ? bam_load_acquire_gpu_u32(&qp->cid_state[cidv]) : BAM_CID_FREE;
			if (st == BAM_CID_BUSY)
				break; /* posted; its waiter has not seen it yet */
			if (st == BAM_CID_FREE) {
				/* no command has this CID outstanding: a controller bug */
				bam_fetch_add_relaxed_gpu_u64(&qp->cnt.stray, 1);
				h++;
				continue;
			}
			bam_fetch_add_relaxed_gpu_u64(&qp->cnt.late, 1); /* abandoned CID */
		}
		sqhd = bam_load_relaxed_u32(&((const uint32_t *)&qp->cq[slot])[2]) & 0xffffu;
		have_sqhd = 1;
		/* The CQE is passed. Publish the head past it BEFORE its CID can be reused:
		 * a thread that takes the CID (acquiring the FREE store below) then starts its
		 * CQ scan past this CQE. Freeing first let a new owner of the CID take this
		 * old completion as its own (found by the SPIN model, models/README.md bug 1:
		 * wrong data, then a stalled CQ). */
		/* modelled in models/qpair.pml: inline move_head (BROKEN_CID_BEFORE_HEAD drops this store) */
		bam_store_release_gpu_u32(&qp->cq_head, h + 1);
		bam_store_release_gpu_u32(&qp->cid_state[cidv], BAM_CID_FREE);
		freed++;
		h++;
	}
	if (h == h0)
		return 0;

	if (have_sqhd) {
		/* SQ slots from the old head up to SQHD were consumed by the controller: free
		 * them for their next turn (odd -> even) before the credits below are released,
		 * so a thread admitted by a credit finds its slot free. Release adds nobody
		 * waits for (the next turn's writer acquires the turn word; the SQHD that says
		 * the controller is done with the slot was acquired with the CQE above). */
		uint32_t sh = bam_load_relaxed_u32(&qp->sq_head);
		uint32_t nsh = sh + ((sqhd - sh) & mask);
		for (uint32_t s = sh; s != nsh; s++)
			bam_red_add_release_gpu_u32(&qp->sq_turn[s & mask], 1);
		bam_store_release_gpu_u32(&qp->sq_head, nsh);
	}
	bam_store_release_gpu_u32(&qp->cq_head, h);
	if (qp->progress)
		bam_fetch_add_relaxed_gpu_u32(qp->progress, 1);
	bam_fetch_add_relaxed_gpu_u64(&qp->cnt.completed, freed);
	/* the credits back: a release add nobody waits for (the credit taker's acquire
	 * pairs with it) */
	if (freed)
		bam_red_add_release_gpu_u32(&qp->credits, (uint32_t)0 - freed);
	/* CQ head doorbell: releases the CQ slots to the controller. Orders our reads of
	 * the passed CQEs before the controller may overwrite them. */
	bam_qp_ring(qp, qp->cq_doorbell, h & mask);
	return h - h0;
}

/* One attempt to move the CQ head (helping whoever waits for credits). */
/* modelled in models/qpair.pml: inline try_advance */
BAM_HD_INLINE void bam_qpair_cq_try_advance(struct bam_qpair *qp)
{
	if (bam_qp_trylock(&qp->cq_lock)) {
		bam_qpair_cq_move_head_locked(qp);
		bam_qp_unlock(&qp->cq_lock);
	}
}

/* move_tail: the caller holds sq_lock. Advances sq_tail over consecutive marked slots,
 * clears their marks, writes the doorbell once. Returns the number made visible, the
 * virtual tail it started from in *from (the SQEs of tickets from .. from + n - 1).
 * A mark word is read once and its run of marked slots cleared with one atomic: only
 * the lock holder clears marks and submitters only set them, so every bit seen set
 * stays set until cleared here, and the run is what slot-by-slot tests at the moment
 * of the load would have found (one load and one clear per 32 slots instead of two
 * dependent atomics per slot: a warp's 32 commands cost 32 us of lock hold on the
 * H200 done slot by slot). */
/* modelled in models/qpair.pml: inline move_tail (the word-wise run as one step) */
BAM_HD_INLINE uint32_t bam_qpair_sq_move_tail_locked(struct bam_qpair *qp, uint32_t *from)
{
	const uint32_t mask = qp->depth - 1;
	const uint32_t t0 = bam_load_relaxed_u32(&qp->sq_tail);
	*from = t0;
	uint32_t t = t0;
	uint32_t w = bam_load_acquire_gpu_u32(&qp->sq_mark[(t0 & mask) >> 5]);
	for (;;) {
		const uint32_t slot = t & mask, b = slot & 31u;
		uint32_t *mw = &qp->sq_mark[slot >> 5];
		const uint32_t run = bam_qp_run(w, b);
		if (!run)
			break;
		/* the clear's old value is the word at that instant (its acquire as the
		 * load's): the next run in this word is read from it, not loaded again */
		w = bam_fetch_and_acq_rel_gpu_u32(mw, ~bam_qp_bits(b, run)) & ~bam_qp_bits(b, run);
		t += run;
		if (((t & mask) & 31u) == 0) /* the run reached the word's end: the next word */
			w = bam_load_acquire_gpu_u32(&qp->sq_mark[(t & mask) >> 5]);
	}
	if (t != t0) {
		/* only lock holders read sq_tail: the lock orders it */
		bam_store_relaxed_u32(&qp->sq_tail, t);
		/* SQ tail doorbell, once for all t - t0 SQEs. Its release (cumulative) orders
		 * the SQE writes, made by other threads and acquired through their marks
		 * above, before the controller's view of the new tail; a controller outside
		 * the GPU gets a system-scope fence first as well. */
		if (qp->sys_scope)
			bam_qp_fence(qp);
		bam_qp_ring(qp, qp->sq_doorbell, t & mask);
		bam_fetch_add_relaxed_gpu_u64(&qp->cnt.submitted, t - t0);
		bam_fetch_add_relaxed_gpu_u64(&qp->cnt.doorbells, 1);
	}
	return t - t0;
}

/*
 * Submit one command. 'sqe' is the caller's command; its CID field is set here. On
 * success *cid receives the CID to wait for with bam_qpair_wait() and *pos the virtual
 * SQ position (for diagnostics). Thread contract: any number of threads at once, each
 * with its own command; no warp or block synchronisation.
 * Returns 0; -ETIMEDOUT when the queue pair is full and, while the thread is behind
 * the credit line's gate, completes no command for (deadline - the time the wait
 * began), or once past the gate gives it no credit within that window (deadline:
 * bam_time_ns() units, an absolute time on the caller's clock), or when no CID frees up or the tail does not pass the
 * command before that (it is then abandoned: its completion is discarded); -EIO when
 * the queue pair is broken (a ticket's slot never freed).
 * wait_credit 0: do not wait for a credit; return -EAGAIN at once (nothing taken)
 * when the queue pair holds depth-1 commands (or, for an instant, seems to: another
 * thread's attempt on a full queue pair is being given back).
 * A thread must not wait for a credit (wait_credit 1) while a command of its own on
 * this queue pair is complete but not yet waited for: that CQE holds the CQ head, so
 * no credit frees up and the wait ends in -ETIMEDOUT. A thread with several commands
 * in flight passes wait_credit 0 and, on -EAGAIN, waits for its oldest first.
 */
/* Numbers in the credit line past the gate beyond the depth-1 credits (step 1 below):
 * 16, or depth-1 for deeper queues, at most 64. Measured on the CPU target (2 cores,
 * 4 KiB random reads of the emulator): 0 ran 64 threads on a queue pair of depth 4
 * about 45 times slower than no line; 64 let 64 threads on a queue pair of depth 2
 * starve one another into timeouts (812 of 65,536 I/Os at 1,024 threads on 16 queue
 * pairs); this: 0 timeouts and about 10,000 IOPS in both. */
#ifndef BAM_QP_GATE_SLACK
#define BAM_QP_GATE_SLACK(mask) ((mask) < 16u ? 16u : (mask) < 64u ? (mask) : 64u)
#endif

BAM_HD_INLINE int bam_qpair_submit_ex(struct bam_qpair *qp, const struct nvme_sqe *sqe, uint64_t deadline,
				      uint16_t *cid, int wait_credit)
{
	const uint32_t mask = qp->depth - 1;
	uint32_t iter = 0;

	/* the four loads (these two and the credit line's below) in flight at once: one
	 * round trip (a lone submission takes about fourteen, each about 0.5 us on the
	 * H200: results/history/io-engine.md) */
	const uint32_t broken = bam_load_relaxed_u32(&qp->broken);
	uint32_t cr = bam_load_relaxed_u32(&qp->credits);

	/* modelled in models/qpair.pml: proctype Thread, steps 1-5 */
	/* 1. a credit: at most depth-1 commands outstanding (NVMe full-queue rule).
	 * Fast path: nobody in line (credit_line == credit_served) and room. Otherwise the
	 * thread takes a number in the credit line and may try for a credit only when
	 * fewer than depth-1 + BAM_QP_GATE_SLACK(depth-1) of the numbers before it are
	 * still in line (the "gate", (number - credit_served) < depth-1 + slack: credit_served
	 * counts the numbers that left the line, with a credit or by timeout, so the first
	 * one still in line always passes it). Past the gate, threads compete for the
	 * credits as without a line: the slack keeps a thread that is asleep or not
	 * scheduled from holding up the credits that threads just behind it could take
	 * (with a gate of exactly depth-1 every credit waited for one named thread to
	 * wake). Credits are then handed out in about the order they were asked for, at
	 * most slack places out of order: a thread that just got its completion and asks
	 * again goes to the back instead of taking the credit it freed (without the line,
	 * one thread per queue pair could keep its credit while a thousand others waited
	 * for minutes). The
	 * line is admission only: what keeps the count of outstanding commands at depth-1
	 * is still the fetch_add on 'credits' below, and a waiter that leaves by timeout
	 * counts itself served, so a line is never stuck behind a thread that left.
	 * The wait is bounded by the line's progress: the window (deadline - the time the
	 * thread joined) restarts on every move of the CQ head (a completion, which frees
	 * a credit), behind the gate and past it. A thread is timed out only after a
	 * whole window without a completion on its queue pair, and
	 * a stalled controller fails everyone in line after one window. Past the gate it
	 * competes with fewer than depth-1 + slack others, so it waits for about that
	 * many completions. Host
	 * threads behind the gate sleep in proportion to how far back they are (at the
	 * line's measured pace), so that a thousand of them do not take the cores from
	 * the controller and from the thread whose completion frees the next credit. */
	const uint32_t line0 = bam_load_relaxed_u32(&qp->credit_line);
	const uint32_t served0 = bam_load_relaxed_u32(&qp->credit_served);
	if (broken)
		return -EIO;
	if (line0 == served0 && cr < mask) {
		/* acquire: the CQ head mover's release of the credit (and of the slot and
		 * CID behind it) happens before what we do with it */
		if (bam_fetch_add_acquire_gpu_u32(&qp->credits, 1) < mask)
			goto have_credit;
		/* If there seemed to be room but was none: give it back. One atomic per
		 * thread even when a whole warp asks at once (with a CAS, one lane of the
		 * warp won per round: 32 rounds, about 50 us on the H200). A give-back
		 * pending meanwhile makes others see the queue pair full a little longer,
		 * but never admits one too many. */
		bam_fetch_sub_acq_rel_gpu_u32(&qp->credits, 1);
	}
	if (!wait_credit)
		return -EAGAIN;
	{
		const uint32_t me = bam_fetch_add_relaxed_gpu_u32(&qp->credit_line, 1);
		uint64_t now = bam_time_ns();
		const uint64_t t_join = now;
		const uint64_t window = deadline > now ? deadline - now : 1;
		const uint32_t served_join = bam_load_relaxed_u32(&qp->credit_served);
		uint32_t seen_head = bam_load_relaxed_u32(&qp->cq_head);
		int past_gate = 0;
		for (;;) {
			/* the time now, after the pause below: a new window counts from here (a
			 * time read before a sleep, moved forward by a window, could already be
			 * past on waking: a timeout for a thread that had just come to the gate) */
			now = bam_time_ns();
			const uint32_t served = bam_load_relaxed_u32(&qp->credit_served);
			const int32_t ahead = (int32_t)(me - served); /* at least those before us */
			const int open = ahead < (int32_t)(mask + BAM_QP_GATE_SLACK(mask));
			const uint32_t h = bam_load_relaxed_u32(&qp->cq_head);
			if (open) {
				if (!past_gate) {
					/* past the gate: one window from now to get a credit */
					past_gate = 1;
					deadline = now + window;
					seen_head = h;
				} else if (h != seen_head) {
					/* a completion freed a credit that another thread past the
					 * gate (fewer than depth-1 + slack of them) took: a new window */
					seen_head = h;
					deadline = now + window;
				}
				cr = bam_load_relaxed_u32(&qp->credits);
				if (cr < mask) {
					if (bam_fetch_add_acquire_gpu_u32(&qp->credits, 1) < mask) {
						bam_red_add_release_gpu_u32(&qp->credit_served, 1);
						break;
					}
					bam_fetch_sub_acq_rel_gpu_u32(&qp->credits, 1);
				}
			} else {
				/* behind the gate: a command of the queue pair completed (the CQ head
				 * moved), so the line moves: a new window */
				if (h != seen_head) {
					seen_head = h;
					deadline = now + window;
				}
			}
			/* help move the CQ head: what others consumed frees credits (on the GPU,
			 * with thousands of waiters per queue pair, every fourth poll) */
			if (!BAM_ON_GPU || (iter & 3u) == 0)
				bam_qpair_cq_try_advance(qp);
			if (now > deadline) {
				bam_red_add_release_gpu_u32(&qp->credit_served, 1); /* leave the line */
				bam_fetch_add_relaxed_gpu_u64(&qp->cnt.timeouts, 1);
				return -ETIMEDOUT;
			}
#if BAM_ON_GPU
			(void)t_join;
			(void)served_join;
			bam_qp_credit_pause(iter++);
#else
			if (ahead <= 0) {
				/* first in line: the next credit is ours, poll for it at most 20 us
				 * apart (one such thread per queue pair) */
				bam_spin_pause(iter < 1023u ? iter : 1023u);
				iter++;
			} else if (open) {
				bam_qp_credit_pause(iter++);
			} else {
				/* behind the gate: sleep half the time the line should take to
				 * reach the gate at its pace so far (16 us a place until it has
				 * moved), at least 16 us, at most 50 ms and the deadline */
				const uint32_t moved = served - served_join;
				const uint64_t per = moved ? (now - t_join) / moved : 16000u;
				uint64_t ns = (uint64_t)(uint32_t)(ahead - (int32_t)(mask + BAM_QP_GATE_SLACK(mask)) + 1) *
					      per / 2;
				ns = ns < 16000u ? 16000u : ns > 50000000u ? 50000000u : ns;
				if (ns > deadline - now + 1000u)
					ns = deadline - now + 1000u;
				bam_host_sleep_ns((long)ns);
				iter = 0;
			}
#endif
		}
	}
have_credit:;
	/* 2. a CID: the credit guarantees one is free (CIDs are freed before credits).
	 * The hint is taken only now: CIDs come free about in the order they were
	 * hinted, so the one a credit just freed is near the hint's current value (a hint
	 * taken before a long wait for a credit pointed at busy CIDs and cost 5% of 512 B
	 * reads from 1,048,576 threads on the H200). The hinted CID is then mostly free:
	 * a CAS without a load first; the rest of the search loads before it tries. */
	const uint32_t c0 = bam_fetch_add_relaxed_gpu_u32(&qp->cid_hint, 1);
	uint32_t id = 0;
	for (uint32_t i = 0;; i++) {
		id = (c0 + i) & mask;
		if ((i == 0 || bam_load_relaxed_u32(&qp->cid_state[id]) == BAM_CID_FREE) &&
		    bam_cas_acq_rel_gpu_u32(&qp->cid_state[id], BAM_CID_FREE, BAM_CID_BUSY) == BAM_CID_FREE)
			break;
		if (i > 4 * qp->depth && bam_qp_deadline_passed(deadline)) {
			bam_fetch_sub_acq_rel_gpu_u32(&qp->credits, 1);
			bam_fetch_add_relaxed_gpu_u64(&qp->cnt.timeouts, 1);
			return -ETIMEDOUT;
		}
	}

	/* modelled in models/qpair.pml: step "3. a ticket, and the slot's turn" (CHECK_TURN_NOSPIN) */
	/* 3. a ticket, and the slot's turn */
	uint32_t ticket = bam_fetch_add_relaxed_gpu_u32(&qp->sq_ticket, 1);
	uint32_t slot = ticket & mask;
	uint32_t want = (ticket >> qp->depth_shift) << 1;
	const uint32_t tmask = bam_qp_turn_mask(qp);
	iter = 0;
	while (((bam_load_acquire_gpu_u32(&qp->sq_turn[slot]) - want) & tmask) != 0) {
		/* Not reached while the credit invariant holds (the slot's previous occupant
		 * was freed before our credit was released; models/qpair.pml checks it); kept
		 * as the paper's guard. A ticket cannot be given back: a slot left unwritten
		 * would stop the tail forever. So on timeout the queue pair is marked broken
		 * and every later submission fails at once with -EIO: an error, not a hang. */
		bam_qpair_cq_try_advance(qp);
		if (bam_qp_deadline_passed(deadline)) {
			bam_store_release_gpu_u32(&qp->broken, 1);
			return -EIO;
		}
		bam_spin_pause(iter++);
	}

	/* 4. write the SQE, then mark it (release: SQE before mark) */
	{
		struct nvme_sqe *dst = &qp->sq[slot];
		const uint64_t *s = (const uint64_t *)sqe;
		uint64_t *d = (uint64_t *)dst;
		for (int i = 0; i < 8; i++)
			d[i] = s[i];
		((uint16_t *)dst)[1] = (uint16_t)id; /* CDW0 31:16 = CID */
	}
	/* Neither add waits for its answer (GPU: red). The mark's release orders the SQE
	 * before it; this thread's own loads of the mark word below see it (same
	 * location). The turn's add needs no order: the CQ head mover's add (odd ->
	 * even) can only come after the controller has read the SQE, and should it
	 * reach the word first, the two adds still leave it at the next turn's even
	 * value, which is all the next ticket waits for. */
	bam_red_or_release_gpu_u32(&qp->sq_mark[slot >> 5], bam_qp_bit(slot));
	bam_fetch_add_relaxed_gpu_u32(&qp->sq_turn[slot], 1); /* even -> odd: in flight */

	/* modelled in models/qpair.pml: step "5. move_tail ..." (TIMEOUTS; BROKEN_STEP5_STRAND) */
	/* 5. move_tail until someone (maybe us) has moved the tail past our slot. (Trying
	 * the lock before looking at the mark, and telling from the tail our own move
	 * reached, saved a round trip for a lone submitter but cost 7% of 512 B reads
	 * from 1,048,576 threads on the H200, where most find their mark cleared by
	 * another's move: results/history/io-engine.md.) */
	iter = 0;
	while (bam_load_acquire_gpu_u32(&qp->sq_mark[slot >> 5]) & bam_qp_bit(slot)) {
		const int moved = bam_qp_trylock(&qp->sq_lock);
		if (moved) {
			/* the virtual tail our own move reached: past our ticket, the SQE is
			 * visible (our mark was cleared by us), no need to load the mark again */
			uint32_t from = 0;
			const uint32_t n = bam_qpair_sq_move_tail_locked(qp, &from);
			bam_qp_unlock(&qp->sq_lock);
			if (ticket - from < n)
				break;
		}
		/* The tail stops at an earlier slot whose writer has not marked it yet, or
		 * the lock holder is moving it; those waits end (a writer marks its slot or
		 * fails the queue pair); the deadline is a backstop, checked on every round
		 * (also after a move of our own: with the lock free and the tail stopped at
		 * the slot of a writer that failed the queue pair, the loop never ended).
		 * The SQE is in the queue and will run: abandon its CID so that its
		 * completion is discarded when it comes. */
		if (bam_qp_deadline_passed(deadline)) {
			bam_cas_acq_rel_gpu_u32(&qp->cid_state[id], BAM_CID_BUSY, BAM_CID_ABANDONED);
			bam_fetch_add_relaxed_gpu_u64(&qp->cnt.timeouts, 1);
			return -ETIMEDOUT;
		}
		if (!moved)
			bam_spin_pause(iter++);
	}
	*cid = (uint16_t)id;
	return 0;
}

/* bam_qpair_submit_ex waiting for a credit (wait_credit 1). */
BAM_HD_INLINE int bam_qpair_submit(struct bam_qpair *qp, const struct nvme_sqe *sqe,
				   uint64_t deadline, uint16_t *cid)
{
	return bam_qpair_submit_ex(qp, sqe, deadline, cid, 1);
}

/*
 * Wait for the completion of CID 'cid' (from bam_qpair_submit). On success stores the
 * CQE's status field without the phase tag (0 = success; decode with NVME_STATUS_SCT/
 * NVME_STATUS_SC, name with nvme_status_name) in *status and returns 0. Returns
 * -ETIMEDOUT if no CQE for 'cid' arrives before 'deadline'; the CID is then abandoned
 * and a late CQE for it is discarded (counted in cnt.late).
 */
/* Help the CQ head past virtual CQ position p, the CQE of a command the caller waited
 * for (bam_qpair_wait_pos): a bounded number of tries, as bam_qpair_wait does before it
 * returns. If an earlier CQE is still unconsumed, the head is moved later by its
 * owner (bam_qpair_wait helps always; a line fill, bam_qpair_help_lazy, when it finds
 * the CQE after its own consumed), by a waiter whose CQE is not there yet, or by the
 * next thread short of credits. */
BAM_HD_INLINE void bam_qpair_help_head(struct bam_qpair *qp, uint32_t p)
{
	for (int k = 0; k < 8; k++) {
		if ((int32_t)(bam_load_acquire_gpu_u32(&qp->cq_head) - (p + 1u)) >= 0)
			break;
		bam_qpair_cq_try_advance(qp);
	}
}

/* bam_qpair_wait without the help: returns 0 with the status in *status, in *pos the
 * virtual CQ position (a 32-bit count of CQEs, as cq_head) of the command's CQE and in
 * *lag how many CQEs before it the CQ head had not passed when it was found; or
 * -ETIMEDOUT (the CID abandoned, nothing to help). The caller then calls
 * bam_qpair_help_head(qp, *pos), or bam_qpair_help_lazy(qp, *pos, *lag), once it has
 * done what was waiting for the data. The array publishes a line it filled before
 * helping: the readers waiting for the line do not wait for the head move (a fill's
 * I/O in BFS 27 -> 18 us on the H200). While its CQE is not there yet, the waiter tries
 * to move the CQ head itself (on its first look and every 64th after): what others
 * consumed is passed while the controller works. NVMe Base 2.0 section 4.6 for the
 * phase tag it scans with. */
BAM_HD_INLINE int bam_qpair_wait_pos(struct bam_qpair *qp, uint16_t cid, uint64_t deadline, uint16_t *status,
				     uint32_t *pos, uint32_t *lag);

/* How far behind its CQE the CQ head may be left by a waiter that does not help
 * (bam_qpair_help_lazy): at most this many CQEs before it unpassed. */
#ifndef BAM_QP_LAZY_LAG
#define BAM_QP_LAZY_LAG 16u
#endif

/* The help after bam_qpair_wait_pos, only when the head lags: with fewer than
 * BAM_QP_LAZY_LAG CQEs before the caller's unpassed when it found its own (lag), the
 * caller leaves its CQE to the next thread that moves the head (a waiter whose CQE is
 * not there yet, a thread short of credits, or a later waiter that finds the head
 * lagging), which passes it with the others at once; otherwise, and when the CQE after
 * its own is consumed already (its waiter may have tried in vain to move the head our
 * CQE held), bam_qpair_help_head. A consumed CQE left so holds its credit and CID
 * until then, and so may CQEs consumed behind it (one consumed just after the look):
 * tests/test_qpair_contention.c, test_lazy_help, plays the worst order; the
 * next submitter short of a credit passes whatever is left before it goes on, and
 * cnt.completed counts such CQEs late. Takes a lone fill's head move (about 8 us on
 * the H200) off its path. */
BAM_HD_INLINE void bam_qpair_help_lazy(struct bam_qpair *qp, uint32_t p, uint32_t lag)
{
	/* also when the CQE after ours is consumed already: ours may be what held the
	 * head, and its waiter may have tried to move it in vain (one relaxed load) */
	const uint32_t q = (p + 1u) & (qp->depth - 1u);
	if (lag >= BAM_QP_LAZY_LAG || (bam_load_relaxed_u32(&qp->cq_consumed[q >> 5]) & bam_qp_bit(q)))
		bam_qpair_help_head(qp, p);
}

/* modelled in models/qpair.pml: proctype Thread, block "bam_qpair_wait", label found
 * (bam_qpair_wait_pos and a later bam_qpair_help_head are the same steps with the
 * thread's own work, which touches no queue pair, in between: a slower helper, among
 * the interleavings the model explores) */
BAM_HD_INLINE int bam_qpair_wait(struct bam_qpair *qp, uint16_t cid, uint64_t deadline,
				 uint16_t *status)
{
	uint32_t p = 0, lag = 0;
	int rc = bam_qpair_wait_pos(qp, cid, deadline, status, &p, &lag);
	if (!rc)
		bam_qpair_help_head(qp, p);
	return rc;
}

/* CQEs whose DW3 a waiter's scan loads at once (independent loads in flight
 * together) from a CQ in GPU memory: a scan over n posted CQEs costs about
 * n / BAM_QP_SCAN round trips. */
#define BAM_QP_SCAN 8u

/* The waiter's CQE found at virtual position p by a scan that started at 'start',
 * DW3 read as dw3 (relaxed): order the data the command moved (and the rest of the
 * CQE) after it, pairing with the controller's release of DW3, and mark it consumed.
 * GPU: the scan's strong relaxed load, at the controller's scope, and the fence make
 * that acquire pattern. Host threads re-read DW3 with acquire (ThreadSanitizer does
 * not see fences); the SPIN model asserts the re-read finds the same CQE. */
BAM_HD_INLINE int bam_qp_take_cqe(struct bam_qpair *qp, uint32_t p, uint32_t start, uint32_t dw3,
				  uint16_t *status, uint32_t *pos, uint32_t *lag)
{
#if !BAM_ON_GPU
	dw3 = bam_qp_cqe_dw3(qp, p);
#endif
	bam_qp_fence(qp);
	const uint32_t slot = p & (qp->depth - 1);
	*status = (uint16_t)((dw3 >> 16) & NVME_STATUS_MASK);
	/* consumed: a release nobody waits for (it orders our reads of the CQE before
	 * the head mover's acquire of the bit) */
	bam_red_or_release_gpu_u32(&qp->cq_consumed[slot >> 5], bam_qp_bit(slot));
	*pos = p;
	*lag = p - start;
	return 0;
}

BAM_HD_INLINE int bam_qpair_wait_pos(struct bam_qpair *qp, uint16_t cid, uint64_t deadline, uint16_t *status,
				     uint32_t *pos, uint32_t *lag)
{
	const uint32_t depth = qp->depth;
	uint32_t iter = 0;
	for (;;) {
		const uint32_t start = bam_load_acquire_gpu_u32(&qp->cq_head);
		uint32_t p = start;
		if (!qp->sys_scope && depth >= BAM_QP_SCAN) {
			/* a group of DW3s loaded before any is looked at (a constant count: the
			 * group stays in registers); those past the end of the posted CQEs are
			 * read for nothing */
			int end = 0;
			while (!end) {
				uint32_t w[BAM_QP_SCAN];
				for (uint32_t k = 0; k < BAM_QP_SCAN; k++)
					w[k] = bam_qp_cqe_dw3_relaxed(qp, p + k);
				for (uint32_t k = 0; k < BAM_QP_SCAN; k++, p++) {
					if (p - start >= depth ||
					    ((w[k] >> 16) & NVME_CQE_P) != bam_qp_expected_phase(qp, p)) {
						end = 1; /* end of the posted CQEs */
						break;
					}
					if ((w[k] & 0xffffu) == cid)
						return bam_qp_take_cqe(qp, p, start, w[k], status, pos, lag);
				}
			}
		} else {
			/* one at a time: from a CQ in host memory (sys_scope: each read crosses
			 * PCIe, and waiters polling it load the link the host service needs), or
			 * a queue shallower than a group */
			for (; p - start < depth; p++) {
				const uint32_t dw3 = bam_qp_cqe_dw3_relaxed(qp, p);
				if (((dw3 >> 16) & NVME_CQE_P) != bam_qp_expected_phase(qp, p))
					break; /* end of the posted CQEs */
				if ((dw3 & 0xffffu) == cid)
					return bam_qp_take_cqe(qp, p, start, dw3, status, pos, lag);
			}
		}
		if (bam_qp_deadline_passed(deadline)) {
			if (bam_cas_acq_rel_gpu_u32(&qp->cid_state[cid], BAM_CID_BUSY, BAM_CID_ABANDONED) == BAM_CID_BUSY)
				bam_fetch_add_relaxed_gpu_u64(&qp->cnt.timeouts, 1);
			return -ETIMEDOUT;
		}
		/* not there yet: pass what others consumed while the controller works */
		if ((iter & 63u) == 0)
			bam_qpair_cq_try_advance(qp);
		bam_qp_poll_pause(qp, iter++);
	}
}

#endif /* BAM_DETAIL_QPAIR_H */
