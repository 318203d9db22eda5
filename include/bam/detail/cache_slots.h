/* SPDX-License-Identifier: MIT */
/*
 * bam/detail/cache_slots.h - the software cache's machinery under bam/array.h: slot
 * states, the translation table, line fills and their I/O, the clock victim search,
 * eviction, the give-back of slots that timed-out commands hold, and the flush of one
 * slot. Not API: the implementation of bam/array.h, included by it, and it may change
 * in any release; kernels use the functions of bam/array.h. (bam_slot_put is the
 * one named there: the release of a reference bam_array_ref took.) src/core/cache.c
 * and the cache's SPIN model (models/cache_slots.pml) use it directly.
 *
 * Cache: 'n_slots' lines of 'line_size' bytes in GPU memory, allocated at creation.
 * Each slot has one atomic state word: VALID, BUSY (locked for fill or eviction),
 * DIRTY, REF (clock second chance), KEEP (a line of a high-priority array) and a 24-bit
 * reference count. Each array keeps a
 * translation table, one 32-bit entry per line of the array: the slot holding it,
 * BAM_XLAT_NONE, BAM_XLAT_FILLING while one thread reads it in, or the error of its
 * last fill (BAM_XLAT_EIO, _ETIMEDOUT, _EBUSY: not cached).
 *
 *   hit:  take a reference on the slot (one atomic add on its state word), check the
 *         slot is VALID, not BUSY and still holds this line (else give the reference
 *         back), use it, release (one atomic subtract).
 *   miss: CAS the entry NONE -> FILLING (the line lock); pick a victim by clock (the
 *         hand advances; REF set -> cleared, second chance; referenced or BUSY ->
 *         skipped; KEEP -> passed over, up to BAM_KEEP_SKIPS per search; else CAS to
 *         BUSY); write a dirty victim back; unmap it; read the
 *         line; publish VALID with our references, then the entry. A failed read
 *         leaves the slot empty and the entry the fill's error: never published;
 *         the threads that waited for that fill fail with its error, later ones
 *         fill again.
 */
/* array.h defines the types this header works on and includes it after them:
 * included on its own, this header includes array.h, which includes it back. */
#ifndef BAM_ARRAY_H
#include "bam/array.h"
#else
#ifndef BAM_DETAIL_CACHE_SLOTS_H
#define BAM_DETAIL_CACHE_SLOTS_H

#include <errno.h>

#define BAM_XLAT_NONE    0xffffffffu
#define BAM_XLAT_FILLING 0xfffffffeu
/* The line's last fill failed, and why: the threads that waited for that fill return
 * its error (-EIO, -ETIMEDOUT, -EBUSY) instead of reading the line again one after
 * the other (each such read of a controller that stopped answering waited a whole
 * timeout); a thread that comes later reads it again, as from BAM_XLAT_NONE. */
#define BAM_XLAT_EIO       0xfffffffdu
#define BAM_XLAT_ETIMEDOUT 0xfffffffcu
#define BAM_XLAT_EBUSY     0xfffffffbu
#define BAM_XLAT_SLOTS     0xfffffffbu /* entries below this are slots */

#define BAM_SLOT_VALID   (1u << 31)
#define BAM_SLOT_BUSY    (1u << 30)
#define BAM_SLOT_DIRTY   (1u << 29)
#define BAM_SLOT_REF     (1u << 28)
#define BAM_SLOT_PINNED  (1u << 27) /* never evicted: a write-back of it timed out */
#define BAM_SLOT_RETIRE  (1u << 26) /* with BUSY: retired (below) */
#define BAM_SLOT_KEEP    (1u << 25) /* holds a line of a high-priority array (bam_array_opts.priority) */
#define BAM_SLOT_WRITING (1u << 24) /* with VALID: its write-back is in flight (below) */
#define BAM_SLOT_CNT     0x00ffffffu
/*
 * A slot whose fill timed out is retired: BUSY + RETIRE, holding no line; one whose
 * write-back timed out is PINNED to its (dirty) line. Either way the controller may
 * still move data into or out of the slot, so it is not reused: the timed-out command
 * is recorded in pending[slot] (controller, queue pair, CID), and the slot is given
 * back (bam_cache_slot_reclaim) only once that command is known complete: when its
 * CID is no longer ABANDONED, i.e. the CQ head mover has passed its late completion
 * (bam/detail/qpair.h). The victim search and the flush do that as they meet such slots;
 * bam_cache_reclaim (bam/cache.h) does it for the whole cache. A command whose
 * completion never comes (dropped, controller stopped) keeps its slot out of use.
 */
#define BAM_SLOT_RETIRED (BAM_SLOT_BUSY | BAM_SLOT_RETIRE)
/*
 * Asynchronous write-back (BAM_SLOT_WRITING). A thread whose victim is dirty submits
 * the victim's write and does not wait for it: the slot goes from BUSY|DIRTY to
 * WRITING (VALID, unlocked, DIRTY cleared) and stays mapped to its line, so a read of
 * the line meanwhile is a hit on the slot's bytes, the data being written: never the
 * stale media (models/cache_slots.pml, BROKEN_WB_UNMAP, is the variant that unmaps at
 * submission). A store meanwhile sets DIRTY again: the line is written once more later.
 * The victim search passes WRITING slots over (two writes of one line in flight could
 * land in either order). The thread takes another victim for its own fill (one sweep,
 * no wait; when none is free it waits for its write and takes a slot then), submits
 * its read, publishes its line, and only then reaps its write's completion
 * (bam_cache_wb_reap), so the write and the read are in flight together. One write per
 * thread: the reaper is always its submitter, once, within the command's timeout
 * (bounded; nobody else polls the CID). Success: WRITING cleared, the line clean.
 * Error status: DIRTY set back, WRITING cleared, the error recorded (bam_dev.error,
 * the array's errors and writeback_errors): the line is still cached and dirty, written
 * again by a later eviction or the flush, which reports it if it fails again. Timeout:
 * as the synchronous write-back, the slot is PINNED (and DIRTY) with the command in
 * pending[] (WRITING is the lock of pending[] until then). While its own write is
 * unreaped, the thread submits with wait_credit 0 and reaps first on -EAGAIN: its
 * unconsumed CQE may be what holds the queue's CQ head (bam/detail/qpair.h).
 * Replicated lines (several writes) are written back synchronously, as are all lines
 * of a cache whose wb_sync is set (BAM_WB_SYNC=1 in the environment at creation).
 */

/* pending[slot]: the command that may still touch a retired or pinned slot, 0 = none.
 * Written only by the thread holding the slot locked (BUSY), before it publishes the
 * RETIRED/PINNED state (release); read under the same lock to decide. */
#define BAM_PEND_VALID   (1ull << 63)
#define BAM_PEND_NOCID   (1ull << 62) /* the submission timed out: queued or not, CID unknown */

#define BAM_TAG_NONE     0xffffffffffffffffull
#define BAM_TAG_LINE_BITS 40

/* BAM_PROF_T(): a time stamp for the profile (0 in other builds); BAM_PROF(a, k, v):
 * add v to profile counter k (nothing in other builds, where the code around folds
 * away) */
#ifdef BAM_PROFILE_FILL
#define BAM_PROF_T() bam_time_ns()
#define BAM_PROF(a, k, v) bam_fetch_add_relaxed_gpu_u64(&(a)->cnt[bam_cnt_shard()].prof[k], (v))
#else
#define BAM_PROF_T() ((uint64_t)0)
#define BAM_PROF(a, k, v) ((void)(v))
#endif


/* Counter shard of the calling thread: its SM on the GPU, 0 on the host. */
BAM_HD_INLINE uint32_t bam_cnt_shard(void)
{
#if BAM_ON_GPU
	uint32_t smid;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
	return smid & (BAM_CNT_SHARDS - 1);
#else
	return 0;
#endif
}
#define BAM_CNT(a) ((a)->cnt[bam_cnt_shard()].c)

/* A pending[] record: command 'cid' on queue pair 'qp' of controller 'ctrl' (indices
 * into bam_dev); 'nocid': a submission that timed out, CID unknown. */
BAM_HD_INLINE uint64_t bam_pend_make(uint32_t ctrl, uint32_t qp, uint32_t cid, int nocid)
{
	return BAM_PEND_VALID | (nocid ? BAM_PEND_NOCID : 0) | ((uint64_t)(ctrl & 0xffu) << 32) |
	       ((uint64_t)(qp & 0xffffu) << 16) | (cid & 0xffffu);
}

/* ---- line placement ------------------------------------------------------------ */

/* Controller (index into io->ctrl) and first LBA of line l; 'rep' picks the replica. */
BAM_HD_INLINE void bam_array_place(const struct bam_array_dev *a, uint64_t l, uint32_t rep,
				   uint32_t *ctrl, uint64_t *lba)
{
	const struct bam_cache_dev *c = a->cache;
	uint64_t lbas_per_line = (uint64_t)c->line_size >> a->lba_shift;
	if (a->layout == BAM_LAYOUT_STRIPE) {
		*ctrl = a->ctrl[l % a->n_ctrl];
		*lba = a->base_lba + (l / a->n_ctrl) * lbas_per_line;
	} else {
		*ctrl = a->ctrl[rep % a->n_ctrl];
		*lba = a->base_lba + l * lbas_per_line;
	}
}

/* Bytes of line l that belong to the array (the last line may be partial). The I/O
 * always moves whole LBAs: the tail is rounded up to the LBA size. */
BAM_HD_INLINE uint32_t bam_array_line_bytes(const struct bam_array_dev *a, uint64_t l)
{
	const struct bam_cache_dev *c = a->cache;
	uint64_t start = l << c->line_shift;
	uint64_t total = a->n_elems << a->elem_shift;
	uint64_t n = total - start < c->line_size ? total - start : c->line_size;
	uint64_t lba = 1ull << a->lba_shift;
	return (uint32_t)((n + lba - 1) & ~(lba - 1));
}

/* A write-back in flight that its submitter reaps (see BAM_SLOT_WRITING). */
struct bam_wb {
	struct bam_io io;
	struct bam_array_dev *a; /* the line's array */
	uint64_t slot;
	uint32_t ctrl;
	uint32_t bytes;
	int live;                /* submitted, not yet reaped */
};

/* Wait for the completion of the caller's write-back w (if live) and settle its slot:
 * clean (WRITING cleared), or dirty again after an error status (and PINNED after a
 * timeout), the error recorded. Returns 0 or the write's error (-EIO, -ETIMEDOUT).
 * Bounded by the command's timeout. */
BAM_HD_INLINE int bam_cache_wb_reap(struct bam_wb *w)
{
	if (!w->live)
		return 0;
	w->live = 0;
	struct bam_array_dev *a = w->a;
	struct bam_cache_dev *c = a->cache;
	const uint64_t s = w->slot;
	uint16_t status = 0;
	int rc = bam_dev_io_wait(&w->io, &status);
	if (!rc && status)
		rc = -EIO;
	uint32_t set = 0;
	if (!rc) {
		bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).writebacks, 1);
		bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).bytes_written, w->bytes);
	} else {
		if (rc == -ETIMEDOUT) {
			/* the controller may still read the slot: pin it (the record first;
			 * the CAS below publishes it) */
			bam_store_relaxed_u64(&c->pending[s], bam_pend_make(w->ctrl, (uint32_t)(w->io.qp - a->io->ctrl[w->ctrl].qps),
									   w->io.cid, 0));
			set = BAM_SLOT_PINNED;
		}
		set |= BAM_SLOT_DIRTY;
		bam_dev_record_error(a->io, rc, status);
		bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).errors, 1);
		bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).writeback_errors, 1);
	}
	/* DIRTY (on error) and the end of WRITING in one step: the slot is never seen
	 * clean and idle with its data not on the media */
	uint32_t st = bam_load_relaxed_u32(&c->state[s]);
	for (;;) {
		const uint32_t seen = bam_cas_acq_rel_gpu_u32(&c->state[s], st, (st | set) & ~BAM_SLOT_WRITING);
		if (seen == st)
			break;
		st = seen;
	}
#if !BAM_ON_GPU
	/* a slot came free for threads asleep in the victim search */
	if (__atomic_load_n(&c->sleepers, __ATOMIC_SEQ_CST))
		bam_cpu_futex_wake(&c->wake_seq);
#endif
	return rc;
}

/* Submit one command of a line's I/O: while the caller's own write-back 'own' is
 * unreaped, without waiting for a credit, reaping it first when the queue pair is
 * full (its CQE may hold the CQ head). */
BAM_HD_INLINE int bam_line_submit(struct bam_dev *d, uint32_t ctrl, uint64_t hint, uint8_t opc, uint64_t lba,
				  uint32_t nlb, uint64_t addr, uint64_t prp, struct bam_io *io, struct bam_wb *own)
{
	if (own && own->live) {
		int rc = bam_dev_io_submit_ex(d, ctrl, hint, opc, lba, nlb, addr, prp, io, 0);
		if (rc != -EAGAIN)
			return rc;
		bam_cache_wb_reap(own);
	}
	return bam_dev_io_submit(d, ctrl, hint, opc, lba, nlb, addr, prp, io);
}

/* Read (opc READ) or write line l to/from slot s. Writes go to every replica. With
 * 'later' set (a read), a completed command's queue pair is left for the caller to
 * help along (bam_dev_io_help_lazy(later)) once it has published the line; later->qp
 * is NULL when there is nothing to help. */
BAM_HD_INLINE int bam_array_line_io_ex(struct bam_array_dev *a, uint64_t l, uint64_t s, uint8_t opc,
				       uint64_t hint, uint16_t *status, struct bam_io *later, struct bam_wb *own)
{
	if (later)
		later->qp = NULL;
	struct bam_cache_dev *c = a->cache;
	uint32_t bytes = bam_array_line_bytes(a, l);
	uint64_t addr = (uint64_t)(uintptr_t)(c->lines + (s << c->line_shift));
	uint64_t prp = c->prp ? (uint64_t)(uintptr_t)(c->prp + s * (c->prp_stride / 8u)) : 0;
	uint32_t reps = (a->layout == BAM_LAYOUT_REPLICATE && opc == NVME_CMD_WRITE) ? a->n_ctrl : 1;
	uint32_t first = a->layout == BAM_LAYOUT_REPLICATE && opc == NVME_CMD_READ ? (uint32_t)(hint % a->n_ctrl) : 0;
	for (uint32_t r = 0; r < reps; r++) {
		uint32_t ctrl;
		uint64_t lba;
		struct bam_io io;
		bam_array_place(a, l, first + r, &ctrl, &lba);
		const uint64_t ps0 = BAM_PROF_T();
		int rc = bam_line_submit(a->io, ctrl, hint, opc, lba, bytes >> a->lba_shift, addr, prp, &io, own);
		BAM_PROF(a, 5, BAM_PROF_T() - ps0);
		const int queued = rc == 0;
		if (queued && later && reps == 1) {
			rc = bam_dev_io_wait_nohelp(&io, status);
			if (!rc)
				*later = io;
		} else if (queued) {
			rc = bam_dev_io_wait(&io, status);
		}
		if (rc == -ETIMEDOUT) {
			/* The controller may still move data into or out of slot s: record the
			 * command, for the caller retires or pins the slot until it is known
			 * complete. The replicas before this one completed; none after it is sent:
			 * a slot has at most one such command. */
			bam_store_relaxed_u64(&c->pending[s], bam_pend_make(ctrl, (uint32_t)(io.qp - a->io->ctrl[ctrl].qps),
									   queued ? io.cid : 0u, !queued));
		}
		if (rc)
			return rc;
		if (*status)
			return -EIO;
	}
	bam_fetch_add_relaxed_gpu_u64(opc == NVME_CMD_READ ? &BAM_CNT(a).bytes_read : &BAM_CNT(a).bytes_written,
				      (uint64_t)bytes * reps);
	return 0;
}

BAM_HD_INLINE int bam_array_line_io(struct bam_array_dev *a, uint64_t l, uint64_t s, uint8_t opc,
				    uint64_t hint, uint16_t *status)
{
	return bam_array_line_io_ex(a, l, s, opc, hint, status, NULL, NULL);
}

/* ---- slots ------------------------------------------------------------------------ */

/*
 * Whether the command a pending[] record names is known complete, so that the
 * controller will not touch its buffer again. The waiter that timed out left its CID
 * ABANDONED (bam/detail/qpair.h); only the CQ head mover changes that, to FREE, when it passes
 * the command's late CQE, which the controller posts after the data transfer. So a
 * CID seen in any other state (FREE, or BUSY/ABANDONED again for a newer command: the
 * latter reads as "not complete", which only delays the slot) means complete. The
 * caller reads the record after the state that published it (acquire), hence after
 * the ABANDONED store. 'help': first try to move that queue's CQ head (a late CQE that
 * arrived while nobody waits on the queue is passed here). A submission that timed out
 * (NOCID) may have queued its command under a CID it did not return: complete once no
 * CID of the queue pair is ABANDONED; that scans the queue's CIDs, so only when
 * helping.
 */
BAM_HD_INLINE int bam_pend_done(const struct bam_cache_dev *c, uint64_t rec, int help)
{
	if (!(rec & BAM_PEND_VALID))
		return 1;
	struct bam_qpair *qp = &c->io->ctrl[(rec >> 32) & 0xffu].qps[(rec >> 16) & 0xffffu];
	if (help)
		bam_qpair_cq_try_advance(qp);
	if (rec & BAM_PEND_NOCID) {
		if (!help)
			return 0;
		for (uint32_t i = 0; i < qp->depth; i++)
			if (bam_load_acquire_gpu_u32(&qp->cid_state[i]) == BAM_CID_ABANDONED)
				return 0;
		return 1;
	}
	return bam_load_acquire_gpu_u32(&qp->cid_state[rec & 0xffffu]) != BAM_CID_ABANDONED;
}

/* Drop 'n' references of slot s (release: our reads of the line happen before). */
BAM_HD_INLINE void bam_slot_put(struct bam_cache_dev *c, uint64_t s, uint32_t n)
{
#if BAM_ON_GPU
	bam_red_add_release_gpu_u32(&c->state[s], (uint32_t)0 - n);
#else
	/* the last reference gone while threads sleep in the victim search: wake one
	 * (the RMW and the load of sleepers are sequentially consistent, as the sleeper's
	 * increment and its look at the slots: one of the two sees the other) */
	const uint32_t old = __atomic_fetch_add(&c->state[s], (uint32_t)0 - n, __ATOMIC_SEQ_CST);
	if (((old - n) & BAM_SLOT_CNT) == 0 && __atomic_load_n(&c->sleepers, __ATOMIC_SEQ_CST))
		bam_cpu_futex_wake(&c->wake_seq);
#endif
}

/* Take n references on slot s if it is VALID, not BUSY, and holds 'tag'.
 * One atomic add (acquire) takes the references whatever the state; a caller that then
 * finds the slot unusable gives them back. Such a transient count can be present on
 * any slot at any time, so nothing may overwrite a state word wholesale: the fill's
 * publish and retire keep the count (bam_slot_set_flags), the clock only locks a slot
 * whose count is zero (CAS), and a BUSY slot is never used by a reader. */
BAM_HD_INLINE int bam_slot_try_get(struct bam_cache_dev *c, uint64_t s, uint64_t tag, uint32_t n)
{
	uint32_t old = bam_fetch_add_acquire_gpu_u32(&c->state[s], n);
	/* the slot may also have been evicted and refilled with another line between
	 * reading the translation entry and taking the reference: check the tag */
	if ((old & (BAM_SLOT_VALID | BAM_SLOT_BUSY)) != BAM_SLOT_VALID || bam_load_relaxed_u64(&c->tag[s]) != tag) {
		bam_slot_put(c, s, n);
		return 0;
	}
	if (!(old & BAM_SLOT_REF)) /* clock second chance; set once per sweep */
		bam_fetch_or_relaxed_gpu_u32(&c->state[s], BAM_SLOT_REF);
	return 1;
}

/* Replace the flag bits of slot s's state word by 'flags' (+ 'add' references),
 * keeping the reference count (transient references of readers that will give them
 * back). Release: what we wrote into the line before is visible to whoever acquires
 * the new state. */
BAM_HD_INLINE void bam_slot_set_flags(struct bam_cache_dev *c, uint64_t s, uint32_t flags, uint32_t add)
{
	uint32_t st = bam_load_relaxed_u32(&c->state[s]);
	for (;;) {
		uint32_t nw = (((st & BAM_SLOT_CNT) + add) & BAM_SLOT_CNT) | flags;
		uint32_t seen = bam_cas_acq_rel_gpu_u32(&c->state[s], st, nw);
		if (seen == st)
			return;
		st = seen;
	}
}

/*
 * Give slot s back if it is retired or pinned and its recorded command is known
 * complete (bam_pend_done; 'help' as there). A retired slot without references is then
 * locked BUSY for the caller, empty: returns 1 (fill it, or release it with
 * bam_slot_set_flags(c, s, 0, 0)). A pinned slot is unpinned and goes back to the
 * clock, dirty. Returns 0 in every other case. The record decides only while the slot
 * is locked by us (its writers hold that lock too): a slot given back, refilled and
 * retired again between two looks is judged on its new record. Any thread, any time.
 */
BAM_HD_INLINE int bam_cache_slot_reclaim(struct bam_cache_dev *c, uint64_t s, int help)
{
	uint32_t st = bam_load_acquire_gpu_u32(&c->state[s]);
	if ((st & ~BAM_SLOT_CNT) == BAM_SLOT_RETIRED) {
		/* a look without the lock first: most retired slots still wait */
		if ((st & BAM_SLOT_CNT) || !bam_pend_done(c, bam_load_relaxed_u64(&c->pending[s]), help))
			return 0;
		if (bam_cas_acq_rel_gpu_u32(&c->state[s], st, BAM_SLOT_BUSY) != st)
			return 0;
		if (!bam_pend_done(c, bam_load_relaxed_u64(&c->pending[s]), help)) {
			bam_slot_set_flags(c, s, BAM_SLOT_RETIRED, 0); /* back as it was */
			return 0;
		}
		bam_store_relaxed_u64(&c->pending[s], 0);
		return 1;
	}
	if ((st & (BAM_SLOT_PINNED | BAM_SLOT_BUSY)) == BAM_SLOT_PINNED) {
		if (!bam_pend_done(c, bam_load_relaxed_u64(&c->pending[s]), help))
			return 0;
		/* lock it (references may be held: they keep using the line) */
		if (bam_cas_acq_rel_gpu_u32(&c->state[s], st, st | BAM_SLOT_BUSY) != st)
			return 0;
		uint32_t clear = BAM_SLOT_BUSY;
		if (bam_pend_done(c, bam_load_relaxed_u64(&c->pending[s]), help)) {
			bam_store_relaxed_u64(&c->pending[s], 0);
			clear |= BAM_SLOT_PINNED;
		}
		bam_fetch_and_acq_rel_gpu_u32(&c->state[s], ~clear);
	}
	return 0;
}

/* Slots holding lines of high-priority arrays (BAM_SLOT_KEEP) that one victim search
 * passes over once their REF bit is clear (a set one is cleared first, the second chance
 * every line has), before it takes one as any other: so such lines stay
 * cached longer, while a cache full of them still gives victims at once. (BFS's offsets
 * array on the H200: 8 halved its line fills on cnr-2000 and made BFS through bam
 * 2-7% faster than without; 16 kept a few more lines and was slower; results/history/graph.md.) */
#ifndef BAM_KEEP_SKIPS
#define BAM_KEEP_SKIPS 8u
#endif

/* Clock: lock a victim slot (BUSY). Returns the slot, or -EBUSY: every slot referenced
 * or busy, and no I/O completed on the device (*progress, NULL: none counted) for
 * timeout_ns since *deadline or the last completion seen. Bounded by the device's
 * progress, not absolutely: with many more threads than slots (on the CPU target, 128
 * threads on a cache of 2 lines) a thread can find every slot referenced for longer
 * than a timeout while others fill and release lines, and an absolute bound failed its
 * read (-EBUSY) while the run went on; a cache whose slots stay referenced with no I/O
 * anywhere (every holder waiting) still fails after one timeout.
 * 'once': return -EAGAIN after one fruitless sweep instead of waiting.
 * WRITING slots (write-back in flight) are passed over. Retired and pinned slots met on the way are given back when their command is known
 * complete; after a fruitless sweep, helping their queues' CQ heads along. A REF bit
 * the hand passes is cleared by an atomic and nobody waits for (REF is only the
 * second-chance hint; a CAS from the value read cost a round trip per position).
 * Moving the hand several positions per atomic was tried twice and not kept: a
 * search that stops at its victim either skips the rest of its positions or passes
 * them, and either way the hand no longer moves as a one-position clock's does (on
 * the H200: 32 positions, kron26 BFS read 5% more; 4 positions passed, kron22 CC read
 * 8% more; results/history/graph.md). */
BAM_HD_INLINE int64_t bam_cache_pick_victim(struct bam_cache_dev *c, uint64_t deadline, const uint32_t *progress,
					     uint64_t timeout_ns, int once)
{
	uint32_t iter = 0, kept = 0, seen = progress ? bam_load_relaxed_u32(progress) : 0;
	for (;;) {
		/* sweep twice the cache: the first pass may only clear REF bits */
		for (uint64_t k = 0; k < 2 * c->n_slots; k++) {
			uint64_t s = bam_fetch_add_relaxed_gpu_u64(&c->hand, 1) % c->n_slots;
			uint32_t st = bam_load_relaxed_u32(&c->state[s]);
			if ((st & (BAM_SLOT_BUSY | BAM_SLOT_PINNED | BAM_SLOT_WRITING)) || (st & BAM_SLOT_CNT)) {
				if ((st & (BAM_SLOT_RETIRE | BAM_SLOT_PINNED)) && bam_cache_slot_reclaim(c, s, iter > 0))
					return (int64_t)s;
				continue;
			}
			if (st & BAM_SLOT_REF) {
				bam_red_and_relaxed_gpu_u32(&c->state[s], ~BAM_SLOT_REF);
				continue;
			}
			if ((st & BAM_SLOT_KEEP) && kept++ < BAM_KEEP_SKIPS)
				continue;
			if (bam_cas_acq_rel_gpu_u32(&c->state[s], st, st | BAM_SLOT_BUSY) == st)
				return (int64_t)s;
		}
		/* every slot referenced or busy: wait for releases, bounded by the device's
		 * progress ('once': the caller has a write-back of its own in flight and
		 * reaps it instead) */
		if (once)
			return -EAGAIN;
		const uint32_t pr = progress ? bam_load_relaxed_u32(progress) : 0;
		if (pr != seen) {
			seen = pr;
			deadline = bam_time_ns() + timeout_ns;
		} else if (bam_time_ns() > deadline) {
			return -EBUSY;
		}
#if !BAM_ON_GPU
		if (iter >= 16) {
			/* CPU target: sleep until a reference drop frees a slot (bam_slot_put
			 * wakes one sleeper), at most 1 ms. Spinning and timed sleeps left a
			 * freed slot idle until some thread woke: 128 threads on a 2-line cache
			 * (bam bench --array) made 200-900 reads/s against 97,000 with 16 */
			__atomic_fetch_add(&c->sleepers, 1, __ATOMIC_SEQ_CST);
			const uint32_t seq = __atomic_load_n(&c->wake_seq, __ATOMIC_SEQ_CST);
			int any = 0;
			for (uint64_t k = 0; k < c->n_slots && !any; k++)
				any = !(__atomic_load_n(&c->state[k], __ATOMIC_SEQ_CST) &
					(BAM_SLOT_BUSY | BAM_SLOT_PINNED | BAM_SLOT_WRITING | BAM_SLOT_CNT));
			if (!any)
				bam_cpu_futex_wait(&c->wake_seq, seq, 1000000);
			__atomic_fetch_sub(&c->sleepers, 1, __ATOMIC_SEQ_CST);
			iter++;
			continue;
		}
#endif
		bam_spin_pause(iter++);
	}
}

/* Evict what slot s (locked BUSY by us) holds: write it back if dirty (waiting for
 * the write), unmap it. On a failed write-back the line stays cached and dirty;
 * returns the error. 'own': the caller's write-back in flight (or NULL). */
BAM_HD_INLINE int bam_cache_evict_locked(struct bam_cache_dev *c, uint64_t s, uint64_t hint, struct bam_wb *own)
{
	uint64_t tag = bam_load_relaxed_u64(&c->tag[s]);
	uint32_t st = bam_load_relaxed_u32(&c->state[s]);
	if (tag == BAM_TAG_NONE || !(st & BAM_SLOT_VALID))
		return 0;
	struct bam_array_dev *va = c->arrays[tag >> BAM_TAG_LINE_BITS];
	uint64_t vl = tag & ((1ull << BAM_TAG_LINE_BITS) - 1);
	if (st & BAM_SLOT_DIRTY) {
		uint16_t status = 0;
		int rc = bam_array_line_io_ex(va, vl, s, NVME_CMD_WRITE, hint, &status, NULL, own);
		if (rc) {
			bam_dev_record_error(va->io, rc, status);
			bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(va).errors, 1);
			bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(va).writeback_errors, 1);
			/* The line stays cached and dirty. After a timeout the controller may
			 * still read the slot: pin it to this line (line_io recorded the
			 * command) until that command is known complete. */
			if (rc == -ETIMEDOUT)
				bam_fetch_or_acq_rel_gpu_u32(&c->state[s], BAM_SLOT_PINNED);
			return rc;
		}
		bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(va).writebacks, 1);
	}
	bam_store_release_gpu_u32(&va->xlat[vl], BAM_XLAT_NONE);
	bam_store_relaxed_u64(&c->tag[s], BAM_TAG_NONE);
	bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(va).evictions, 1);
	return 0;
}

/*
 * Start the write-back of dirty slot s (locked BUSY by us) without waiting for it
 * (BAM_SLOT_WRITING): 1 (submitted: the slot is WRITING and unlocked, w live; the
 * caller reaps it with bam_cache_wb_reap), 0 (not done: the slot is not dirty, its
 * line is replicated, or the cache writes back synchronously: still locked, evict it
 * as usual), or the submission's error (the slot is still locked and dirty; after a
 * submission timeout PINNED, its unknown command recorded, as bam_array_line_io_ex).
 */
BAM_HD_INLINE int bam_cache_wb_start(struct bam_cache_dev *c, uint64_t s, uint64_t hint, struct bam_wb *w)
{
	const uint64_t tag = bam_load_relaxed_u64(&c->tag[s]);
	const uint32_t st = bam_load_relaxed_u32(&c->state[s]);
	if (c->wb_sync || tag == BAM_TAG_NONE || (st & (BAM_SLOT_VALID | BAM_SLOT_DIRTY)) != (BAM_SLOT_VALID | BAM_SLOT_DIRTY))
		return 0;
	struct bam_array_dev *va = c->arrays[tag >> BAM_TAG_LINE_BITS];
	const uint64_t vl = tag & ((1ull << BAM_TAG_LINE_BITS) - 1);
	if (va->layout == BAM_LAYOUT_REPLICATE && va->n_ctrl > 1)
		return 0;
	uint32_t ctrl;
	uint64_t lba;
	bam_array_place(va, vl, 0, &ctrl, &lba);
	const uint32_t bytes = bam_array_line_bytes(va, vl);
	const uint64_t addr = (uint64_t)(uintptr_t)(c->lines + (s << c->line_shift));
	const uint64_t prp = c->prp ? (uint64_t)(uintptr_t)(c->prp + s * (c->prp_stride / 8u)) : 0;
	int rc = bam_dev_io_submit(va->io, ctrl, hint, NVME_CMD_WRITE, lba, bytes >> va->lba_shift, addr, prp, &w->io);
	if (rc) {
		bam_dev_record_error(va->io, rc, 0);
		bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(va).errors, 1);
		bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(va).writeback_errors, 1);
		if (rc == -ETIMEDOUT) {
			/* queued or not, under a CID we do not know: pinned until no CID of the
			 * queue pair is abandoned (bam_pend_done) */
			bam_store_relaxed_u64(&c->pending[s], bam_pend_make(ctrl, (uint32_t)(w->io.qp - va->io->ctrl[ctrl].qps), 0, 1));
			bam_fetch_or_acq_rel_gpu_u32(&c->state[s], BAM_SLOT_PINNED);
		}
		return rc;
	}
	w->a = va;
	w->slot = s;
	w->ctrl = ctrl;
	w->bytes = bytes;
	w->live = 1;
	/* BUSY|DIRTY -> WRITING: nobody wrote the line since we locked it (the clock locks
	 * only unreferenced slots), and a store from now on sets DIRTY again */
	uint32_t cur = st;
	for (;;) {
		const uint32_t seen = bam_cas_acq_rel_gpu_u32(&c->state[s], cur,
							      (cur & ~(BAM_SLOT_BUSY | BAM_SLOT_DIRTY)) | BAM_SLOT_WRITING);
		if (seen == cur)
			break;
		cur = seen;
	}
	return 1;
}

/* Modes of bam_array_line_acquire_ex: what the caller will do with the line. */
#define BAM_ACQ_READ      0u /* read it */
#define BAM_ACQ_WRITE     1u /* store into part of it: a miss reads it first (counted in
			      * partial_write_fetches); -EPERM on a read-only array */
#define BAM_ACQ_OVERWRITE 2u /* store every byte of it before any thread reads it: a miss
			      * takes a slot without reading storage (fills_avoided; the
			      * bytes are undefined until the caller's stores, except the
			      * tail past the array's end, zeroed); -EPERM on a read-only array */

/*
 * Get line l of array a into the cache with 'n' references held by the caller.
 * Returns the slot (>= 0) or a negative errno: -ETIMEDOUT, -EBUSY (every line
 * referenced until the timeout), -EIO (the fill's NVMe status was not success; the
 * line is not published). A thread that waited for another thread's fill of l
 * returns that fill's error if it failed, without reading l again (so all of a
 * failed line's waiters fail within one timeout of the fill, not one after another).
 * -EPERM: a write mode on a read-only array. 'mode': BAM_ACQ_*.
 * A dirty victim is written back asynchronously (BAM_SLOT_WRITING) while this
 * thread reads its line into another slot.
 * Per thread; the caller releases with bam_slot_put(n).
 */
BAM_HD_INLINE int64_t bam_array_line_acquire_ex(struct bam_array_dev *a, uint64_t l, uint32_t n, uint64_t hint,
						 uint32_t mode)
{
	struct bam_cache_dev *c = a->cache;
	if (mode != BAM_ACQ_READ && (a->flags & BAM_ARRAY_F_RDONLY)) {
		bam_dev_record_error(a->io, -EPERM, 0);
		bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).errors, 1);
		return -EPERM;
	}
	const uint64_t tag = ((uint64_t)a->id << BAM_TAG_LINE_BITS) | l;
	uint64_t deadline = 0; /* set on the first slow step: a hit reads no clock */
	uint32_t iter = 0, seen = 0;
	uint64_t waited = 0; /* profile: when this thread began to wait for another's fill */
	int saw_fill = 0;    /* this thread saw another's fill of l in progress */
	for (;;) {
		/* relaxed: the reference's acquire on the slot's state word orders the reads
		 * of the line after the fill's release that published it */
		uint32_t e = bam_load_relaxed_u32(&a->xlat[l]);
		if (e < BAM_XLAT_SLOTS) {
			if (bam_slot_try_get(c, e, tag, n)) {
				bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).hits, 1);
				if (waited) {
					BAM_PROF(a, 3, BAM_PROF_T() - waited);
					BAM_PROF(a, 4, 1);
				}
				return (int64_t)e;
			}
		} else if (e != BAM_XLAT_FILLING && e != BAM_XLAT_NONE && saw_fill) {
			/* the fill we waited for failed: its error (the filler recorded it) */
			bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).errors, 1);
			return e == BAM_XLAT_EIO ? -EIO : e == BAM_XLAT_EBUSY ? -EBUSY : -ETIMEDOUT;
		} else if (e != BAM_XLAT_FILLING && bam_cas_acq_rel_gpu_u32(&a->xlat[l], e, BAM_XLAT_FILLING) == e) {
			/* we hold the line lock: fill it */
			if (!deadline)
				deadline = bam_time_ns() + a->io->timeout_ns;
			const uint64_t pt0 = BAM_PROF_T();
			int64_t s = bam_cache_pick_victim(c, deadline, a->io->progress, a->io->timeout_ns, 0);
			BAM_PROF(a, 0, BAM_PROF_T() - pt0);
			struct bam_io later;
			later.qp = NULL;
			struct bam_wb wb;
			wb.live = 0;
			int rc = 0;
			uint16_t status = 0;
			if (s >= 0) {
				/* a dirty victim: its write goes out now, our fill takes another
				 * slot (one sweep; none free: wait for our write, take a slot then) */
				const int w = bam_cache_wb_start(c, (uint64_t)s, hint, &wb);
				if (w == 1) {
					s = bam_cache_pick_victim(c, deadline, a->io->progress, a->io->timeout_ns, 1);
					if (s == -EAGAIN) {
						bam_cache_wb_reap(&wb);
						s = bam_cache_pick_victim(c, deadline, a->io->progress, a->io->timeout_ns, 0);
					}
				} else if (w < 0) {
					bam_fetch_and_acq_rel_gpu_u32(&c->state[s], ~BAM_SLOT_BUSY); /* keep it, dirty */
					s = w;
				}
			}
			if (s < 0) {
				rc = (int)s;
			} else if ((rc = bam_cache_evict_locked(c, (uint64_t)s, hint, &wb)) != 0) {
				bam_fetch_and_acq_rel_gpu_u32(&c->state[s], ~BAM_SLOT_BUSY); /* keep it, dirty */
			} else if (mode == BAM_ACQ_OVERWRITE) {
				/* the caller stores the whole line: no read. Past the array's end
				 * (its last line) the slot's old bytes would reach the media: zeroed */
				bam_store_relaxed_u64(&c->tag[s], tag);
				const uint64_t start = l << c->line_shift, total = a->n_elems << a->elem_shift;
				if (total - start < c->line_size) {
					uint8_t *p = c->lines + ((uint64_t)s << c->line_shift);
					for (uint64_t k = total - start; k < c->line_size; k++)
						p[k] = 0;
				}
				bam_slot_set_flags(c, (uint64_t)s, BAM_SLOT_VALID | BAM_SLOT_REF | (a->priority ? BAM_SLOT_KEEP : 0u), n);
				bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).misses, 1);
				bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).fills_avoided, 1);
			} else {
				bam_store_relaxed_u64(&c->tag[s], tag);
				const uint64_t pt2 = BAM_PROF_T();
				rc = bam_array_line_io_ex(a, l, (uint64_t)s, NVME_CMD_READ, hint, &status, &later, &wb);
				BAM_PROF(a, 1, BAM_PROF_T() - pt2);
				if (!rc && mode == BAM_ACQ_WRITE)
					bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).partial_write_fetches, 1);
				if (rc) {
					/* Not published. After an error status the slot goes back
					 * empty; after a timeout the controller may still write into
					 * it, so it is retired until its command is known complete
					 * (line_io recorded it; bam_cache_slot_reclaim). */
					bam_store_relaxed_u64(&c->tag[s], BAM_TAG_NONE);
					bam_slot_set_flags(c, (uint64_t)s, rc == -ETIMEDOUT ? BAM_SLOT_RETIRED : 0u, 0);
				} else {
					bam_slot_set_flags(c, (uint64_t)s,
							   BAM_SLOT_VALID | BAM_SLOT_REF | (a->priority ? BAM_SLOT_KEEP : 0u), n);
					bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).misses, 1);
				}
			}
			/* the slot, or the error for this fill's waiters (another error, none
			 * expected here: they read the line again) */
			uint32_t pub = rc == 0		  ? (uint32_t)s
				       : rc == -EIO	  ? BAM_XLAT_EIO
				       : rc == -ETIMEDOUT ? BAM_XLAT_ETIMEDOUT
				       : rc == -EBUSY	  ? BAM_XLAT_EBUSY
							  : BAM_XLAT_NONE;
			bam_store_release_gpu_u32(&a->xlat[l], pub);
			/* only now help the queue pair's CQ head past our completion, and only
			 * if it lags far behind: the readers waiting for this line need not wait
			 * for that, nor, mostly, this warp (bam_qpair_help_lazy) */
			if (later.qp)
				bam_dev_io_help_lazy(&later);
			/* our write-back, in flight beside the read: its outcome settles its
			 * slot (an error is recorded there; this access got its line) */
			bam_cache_wb_reap(&wb);
			BAM_PROF(a, 2, BAM_PROF_T() - pt0);
			if (waited)
				BAM_PROF(a, 3, BAM_PROF_T() - waited);
			if (rc) {
				bam_dev_record_error(a->io, rc, status);
				bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).errors, 1);
				return rc;
			}
			return s;
		}
		/* Someone else fills it, or the slot changed under us: retry, bounded by the
		 * device's progress. The filler may stand in a long line for a queue pair's
		 * credit (bounded by that queue pair's progress, qpair.h), and its command's
		 * wait is bounded; so every CQ head move anywhere on the device restarts
		 * this wait's window, and only a device that completes nothing for a whole
		 * timeout fails it (an absolute bound failed waiters of a line whose filler
		 * was merely in line). */
		saw_fill |= e == BAM_XLAT_FILLING;
		if (!waited)
			waited = BAM_PROF_T();
		const uint32_t pr = a->io->progress ? bam_load_relaxed_u32(a->io->progress) : 0;
		if (!deadline || pr != seen) {
			deadline = bam_time_ns() + a->io->timeout_ns;
			seen = pr;
		} else if (bam_time_ns() > deadline) {
			bam_dev_record_error(a->io, -ETIMEDOUT, 0);
			bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).errors, 1);
			return -ETIMEDOUT;
		}
		bam_spin_pause(iter++);
	}
}

/* bam_array_line_acquire_ex for reading (BAM_ACQ_READ). */
BAM_HD_INLINE int64_t bam_array_line_acquire(struct bam_array_dev *a, uint64_t l, uint32_t n, uint64_t hint)
{
	return bam_array_line_acquire_ex(a, l, n, hint, BAM_ACQ_READ);
}

/* Line l (a line index, bam_array_line_of) of a, if it is cached now, with n
 * references taken for the caller (release with bam_slot_put(a->cache, slot, n)):
 * returns the slot, or -EAGAIN (not cached, being filled, or evicted meanwhile),
 * without waiting for anything (so it may be called while holding other lines: the
 * no-hold-and-wait rule of docs/DESIGN.md, "Applications"). Counts a hit. */
BAM_HD_INLINE int64_t bam_array_line_try_acquire(struct bam_array_dev *a, uint64_t l, uint32_t n)
{
	struct bam_cache_dev *c = a->cache;
	const uint32_t e = bam_load_relaxed_u32(&a->xlat[l]);
	if (e < BAM_XLAT_SLOTS && bam_slot_try_get(c, e, ((uint64_t)a->id << BAM_TAG_LINE_BITS) | l, n)) {
		bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).hits, 1);
		return (int64_t)e;
	}
	return -EAGAIN;
}

/* ---- flush ------------------------------------------------------------------------ */

/* Write slot s back if it is valid and dirty (called by the flush kernel, one thread
 * per slot, with no concurrent writers). A retired slot is given back if its command
 * is known complete. A pinned slot is written again only once its earlier, timed-out
 * write-back is known complete (two writes of one line in flight could land in either
 * order): waits for that, bounded by the timeout. 0, -EAGAIN (the slot changed: call
 * again), -ETIMEDOUT (the earlier write-back is still outstanding, or this one timed
 * out), -EIO. A write-back in flight (WRITING) is waited for first. */
BAM_HD_INLINE int bam_cache_flush_slot(struct bam_cache_dev *c, uint64_t s)
{
	uint32_t st = bam_load_acquire_gpu_u32(&c->state[s]);
	if (st & BAM_SLOT_RETIRE) {
		if (bam_cache_slot_reclaim(c, s, 1))
			bam_slot_set_flags(c, s, 0, 0); /* empty */
		return 0;
	}
	if (st & BAM_SLOT_PINNED) {
		uint64_t deadline = bam_time_ns() + c->io->timeout_ns;
		for (uint32_t iter = 0; (st = bam_load_acquire_gpu_u32(&c->state[s])) & BAM_SLOT_PINNED; iter++) {
			if (bam_time_ns() > deadline) {
				bam_dev_record_error(c->io, -ETIMEDOUT, 0);
				return -ETIMEDOUT;
			}
			/* the slot may have turned RETIRED meanwhile (unpinned, refilled, the
			 * fill timed out): a reclaim that locks it hands it to us; release
			 * it empty, or it stays BUSY with no owner (found by
			 * models/cache_slots.pml) */
			if (bam_cache_slot_reclaim(c, s, 1))
				bam_slot_set_flags(c, s, 0, 0);
			bam_spin_pause(iter);
		}
	}
	if (st & BAM_SLOT_WRITING) {
		/* a write-back in flight: its submitter reaps it within the timeout; wait
		 * for that, then write the line if it is dirty (again, or after an error) */
		uint64_t deadline = bam_time_ns() + 2 * c->io->timeout_ns;
		for (uint32_t iter = 0; (st = bam_load_acquire_gpu_u32(&c->state[s])) & BAM_SLOT_WRITING; iter++) {
			if (bam_time_ns() > deadline) {
				bam_dev_record_error(c->io, -ETIMEDOUT, 0);
				return -ETIMEDOUT;
			}
			bam_spin_pause(iter);
		}
		return -EAGAIN; /* look again: it may be pinned now */
	}
	if ((st & (BAM_SLOT_VALID | BAM_SLOT_DIRTY | BAM_SLOT_BUSY)) != (BAM_SLOT_VALID | BAM_SLOT_DIRTY))
		return 0;
	if (bam_cas_acq_rel_gpu_u32(&c->state[s], st, st | BAM_SLOT_BUSY) != st)
		return -EAGAIN;
	uint64_t tag = bam_load_relaxed_u64(&c->tag[s]);
	struct bam_array_dev *a = c->arrays[tag >> BAM_TAG_LINE_BITS];
	uint16_t status = 0;
	int rc = bam_array_line_io(a, tag & ((1ull << BAM_TAG_LINE_BITS) - 1), s, NVME_CMD_WRITE, s, &status);
	if (rc) {
		bam_dev_record_error(a->io, rc, status);
		bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).errors, 1);
		if (rc == -ETIMEDOUT) /* the controller may still read it: never reuse */
			bam_fetch_or_acq_rel_gpu_u32(&c->state[s], BAM_SLOT_PINNED);
		bam_fetch_and_acq_rel_gpu_u32(&c->state[s], ~BAM_SLOT_BUSY);
		return rc;
	}
	bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).writebacks, 1);
	bam_fetch_and_acq_rel_gpu_u32(&c->state[s], ~(BAM_SLOT_BUSY | BAM_SLOT_DIRTY));
	return 0;
}

#endif /* BAM_DETAIL_CACHE_SLOTS_H */
#endif /* BAM_ARRAY_H */
