/* SPDX-License-Identifier: MIT */
/*
 * bam/array.h - the software cache and the array API as kernels use them (BaM paper,
 * section 4.3-4.4 "software cache", "warp coalescing", "array abstraction"). Compiled
 * for GPU threads and for CPU-target host threads from this one header.
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
 * Every wait is bounded: by the device's timeout (bam_dev.timeout_ns) -> -ETIMEDOUT;
 * every line referenced for that long -> -EBUSY.
 *
 * Functions named ..._warp_... synchronise the active threads of the calling warp
 * that call them together (__match_any_sync / __shfl_sync); on the CPU target a warp
 * is one thread. All others are per thread.
 */
#ifndef BAM_ARRAY_H
#define BAM_ARRAY_H

#include "bam/defs.h"
#include "bam/dev.h"

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

/* pending[slot]: the command that may still touch a retired or pinned slot, 0 = none.
 * Written only by the thread holding the slot locked (BUSY), before it publishes the
 * RETIRED/PINNED state (release); read under the same lock to decide. */
#define BAM_PEND_VALID   (1ull << 63)
#define BAM_PEND_NOCID   (1ull << 62) /* the submission timed out: queued or not, CID unknown */

#define BAM_MAX_ARRAYS   64
#define BAM_CNT_SHARDS   64
#define BAM_TAG_NONE     0xffffffffffffffffull
#define BAM_TAG_LINE_BITS 40

enum bam_layout {
	BAM_LAYOUT_STRIPE = 0,    /* line l on controller l mod k, consecutive per controller */
	BAM_LAYOUT_REPLICATE = 1, /* every line on all k controllers; reads spread, writes to all */
};

/* Per-array statistics, device-side counters (bytes unless noted). */
struct bam_array_counters {
	uint64_t hits;            /* line lookups served from the cache (per group leader) */
	uint64_t misses;          /* line fills */
	uint64_t evictions;       /* lines of this array evicted */
	uint64_t writebacks;      /* dirty lines of this array written to storage */
	uint64_t bytes_requested; /* bytes the application read/wrote through the API
				   * (= accesses * elem_size: filled in by bam_array_stats) */
	uint64_t bytes_read;      /* bytes read from storage */
	uint64_t bytes_written;   /* bytes written to storage */
	uint64_t errors;          /* failed accesses */
	uint64_t accesses;        /* element accesses (threads) */
};

struct bam_cache_dev;

/* One counter shard, padded to a 128-byte cache line of its own. */
struct bam_cnt_shard {
	struct bam_array_counters c;
	/* built with -DBAM_PROFILE_FILL only (a developer's tool; bam_array_stats prints
	 * them on stderr): ns in the victim search, in the fill's I/O (submission and
	 * completion), in whole fills, waiting for another thread's fill; such waits;
	 * ns in the submissions alone. Each a clock read or two per fill. */
	uint64_t prof[6];
	uint64_t pad[16 - sizeof(struct bam_array_counters) / 8 - 6];
};
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

/* One array as kernels see it. */
struct bam_array_dev {
	struct bam_cache_dev *cache;
	struct bam_dev *io;
	uint32_t *xlat;           /* [n_lines] slot of each line */
	uint64_t n_elems;         /* elements */
	uint64_t n_lines;         /* lines the array spans */
	uint32_t elem_size;       /* bytes per element: 1, 2, 4, 8 */
	uint32_t elem_shift;
	uint32_t id;              /* index in the cache's array table */
	uint32_t layout;          /* enum bam_layout */
	uint32_t n_ctrl;          /* controllers it spans */
	uint32_t ctrl[BAM_MAX_CTRLS];
	uint64_t base_lba;        /* first LBA of the array on each of its controllers */
	uint32_t lba_shift;
	uint32_t priority;        /* 1: its lines are kept before others (BAM_SLOT_KEEP) */
	/* counters, sharded by SM so that concurrent warps do not all hit one address;
	 * bam_array_stats sums them */
	struct bam_cnt_shard cnt[BAM_CNT_SHARDS];
};

struct bam_cache_dev {
	uint8_t *lines;           /* [n_slots * line_size] */
	uint32_t *state;          /* [n_slots] */
	uint64_t *tag;            /* [n_slots] (array id << 40) | line, or BAM_TAG_NONE */
	uint64_t *prp;            /* [n_slots * prp_stride/8] PRP lists (lines > 8 KiB) */
	uint64_t *pending;        /* [n_slots] BAM_PEND_* record of a retired or pinned slot */
	struct bam_dev *io;       /* the context's device view: queue pairs of pending commands */
	uint32_t prp_stride;
	uint32_t line_size;
	uint32_t line_shift;
	uint32_t sleepers;        /* CPU target: threads asleep in the victim search */
	uint64_t n_slots;
	uint64_t hand;            /* clock hand (atomic) */
	uint32_t wake_seq;        /* CPU target: the sleepers' futex word, bumped by a
				   * reference drop that leaves a slot unreferenced while
				   * any thread sleeps (bam_slot_put) */
	uint32_t pad;
	struct bam_array_dev *arrays[BAM_MAX_ARRAYS];
};

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

/* Read (opc READ) or write line l to/from slot s. Writes go to every replica. With
 * 'later' set (a read), a completed command's queue pair is left for the caller to
 * help along (bam_dev_io_help_lazy(later)) once it has published the line; later->qp
 * is NULL when there is nothing to help. */
BAM_HD_INLINE int bam_array_line_io_ex(struct bam_array_dev *a, uint64_t l, uint64_t s, uint8_t opc,
				       uint64_t hint, uint16_t *status, struct bam_io *later)
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
		int rc = bam_dev_io_submit(a->io, ctrl, hint, opc, lba, bytes >> a->lba_shift, addr, prp, &io);
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
	return bam_array_line_io_ex(a, l, s, opc, hint, status, NULL);
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
 * 2-7% faster than without; 16 kept a few more lines and was slower; results/graph.md.) */
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
 * Retired and pinned slots met on the way are given back when their command is known
 * complete; after a fruitless sweep, helping their queues' CQ heads along. A REF bit
 * the hand passes is cleared by an atomic and nobody waits for (REF is only the
 * second-chance hint; a CAS from the value read cost a round trip per position).
 * Moving the hand several positions per atomic was tried twice and not kept: a
 * search that stops at its victim either skips the rest of its positions or passes
 * them, and either way the hand no longer moves as a one-position clock's does (on
 * the H200: 32 positions, kron26 BFS read 5% more; 4 positions passed, kron22 CC read
 * 8% more; results/graph.md). */
BAM_HD_INLINE int64_t bam_cache_pick_victim(struct bam_cache_dev *c, uint64_t deadline, const uint32_t *progress,
					     uint64_t timeout_ns)
{
	uint32_t iter = 0, kept = 0, seen = progress ? bam_load_relaxed_u32(progress) : 0;
	for (;;) {
		/* sweep twice the cache: the first pass may only clear REF bits */
		for (uint64_t k = 0; k < 2 * c->n_slots; k++) {
			uint64_t s = bam_fetch_add_relaxed_gpu_u64(&c->hand, 1) % c->n_slots;
			uint32_t st = bam_load_relaxed_u32(&c->state[s]);
			if ((st & (BAM_SLOT_BUSY | BAM_SLOT_PINNED)) || (st & BAM_SLOT_CNT)) {
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
		 * progress */
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
					(BAM_SLOT_BUSY | BAM_SLOT_PINNED | BAM_SLOT_CNT));
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

/* Evict what slot s (locked BUSY by us) holds: write it back if dirty, unmap it.
 * On a failed write-back the line stays cached and dirty; returns the error. */
BAM_HD_INLINE int bam_cache_evict_locked(struct bam_cache_dev *c, uint64_t s, uint64_t hint)
{
	uint64_t tag = bam_load_relaxed_u64(&c->tag[s]);
	uint32_t st = bam_load_relaxed_u32(&c->state[s]);
	if (tag == BAM_TAG_NONE || !(st & BAM_SLOT_VALID))
		return 0;
	struct bam_array_dev *va = c->arrays[tag >> BAM_TAG_LINE_BITS];
	uint64_t vl = tag & ((1ull << BAM_TAG_LINE_BITS) - 1);
	if (st & BAM_SLOT_DIRTY) {
		uint16_t status = 0;
		int rc = bam_array_line_io(va, vl, s, NVME_CMD_WRITE, hint, &status);
		if (rc) {
			bam_dev_record_error(va->io, rc, status);
			bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(va).errors, 1);
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
 * Get line l of array a into the cache with 'n' references held by the caller.
 * Returns the slot (>= 0) or a negative errno: -ETIMEDOUT, -EBUSY (every line
 * referenced until the timeout), -EIO (the fill's NVMe status was not success; the
 * line is not published). A thread that waited for another thread's fill of l
 * returns that fill's error if it failed, without reading l again (so all of a
 * failed line's waiters fail within one timeout of the fill, not one after another).
 * Per thread; the caller releases with bam_slot_put(n).
 */
BAM_HD_INLINE int64_t bam_array_line_acquire(struct bam_array_dev *a, uint64_t l, uint32_t n, uint64_t hint)
{
	struct bam_cache_dev *c = a->cache;
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
			int64_t s = bam_cache_pick_victim(c, deadline, a->io->progress, a->io->timeout_ns);
			BAM_PROF(a, 0, BAM_PROF_T() - pt0);
			struct bam_io later;
			later.qp = NULL;
			int rc = 0;
			uint16_t status = 0;
			if (s < 0) {
				rc = (int)s;
			} else if ((rc = bam_cache_evict_locked(c, (uint64_t)s, hint)) != 0) {
				bam_fetch_and_acq_rel_gpu_u32(&c->state[s], ~BAM_SLOT_BUSY); /* keep it, dirty */
			} else {
				bam_store_relaxed_u64(&c->tag[s], tag);
				const uint64_t pt2 = BAM_PROF_T();
				rc = bam_array_line_io_ex(a, l, (uint64_t)s, NVME_CMD_READ, hint, &status, &later);
				BAM_PROF(a, 1, BAM_PROF_T() - pt2);
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

/* ---- warp helpers: group the active threads by line ------------------------------ */

BAM_HD_INLINE uint32_t bam_lane_id(void)
{
#if BAM_ON_GPU
	return threadIdx.x & 31u;
#else
	return 0;
#endif
}

/* Threads of the warp that passed the same key (a mask of lanes; on the CPU target
 * just this thread). Synchronises the active threads of the warp. */
BAM_HD_INLINE uint32_t bam_warp_match(uint64_t key)
{
#if BAM_ON_GPU
	return __match_any_sync(__activemask(), (unsigned long long)key);
#else
	(void)key;
	return 1u;
#endif
}

BAM_HD_INLINE uint32_t bam_warp_leader(uint32_t mask)
{
#if BAM_ON_GPU
	return (uint32_t)(__ffs(mask) - 1);
#else
	(void)mask;
	return 0;
#endif
}

BAM_HD_INLINE uint32_t bam_popc(uint32_t mask)
{
#if BAM_ON_GPU
	return (uint32_t)__popc(mask);
#else
	return (uint32_t)__builtin_popcount(mask);
#endif
}

BAM_HD_INLINE int64_t bam_warp_bcast_i64(uint32_t mask, int64_t v, uint32_t leader)
{
#if BAM_ON_GPU
	return (int64_t)__shfl_sync(mask, (long long)v, (int)leader);
#else
	(void)mask;
	(void)leader;
	return v;
#endif
}

BAM_HD_INLINE void bam_warp_sync(uint32_t mask)
{
#if BAM_ON_GPU
	__syncwarp(mask);
#else
	(void)mask;
#endif
}

/* Add n element accesses to a's statistics (bytes requested = accesses * elem_size),
 * for elements read through a line handle beyond the one its get counted. Summed over
 * the active threads of the warp first: one atomic per warp. */
BAM_HD_INLINE void bam_array_count_accesses(struct bam_array_dev *a, uint32_t n)
{
#if BAM_ON_GPU
	uint32_t mask = __activemask();
	uint32_t sum = __reduce_add_sync(mask, n);
	if (sum && bam_lane_id() == (uint32_t)(__ffs(mask) - 1))
		bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).accesses, sum);
#else
	if (n)
		bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).accesses, n);
#endif
}

/* ---- element access ---------------------------------------------------------------- */

/*
 * Pointer to element i with a reference on its line, per thread (no coalescing).
 * Returns the slot (>= 0; release it with bam_slot_put(a->cache, slot, 1)) or a
 * negative errno (-ERANGE if i >= n_elems; see bam_array_line_acquire).
 */
BAM_HD_INLINE int64_t bam_array_ref(struct bam_array_dev *a, uint64_t i, void **p)
{
	if (i >= a->n_elems) {
		bam_dev_record_error(a->io, -ERANGE, 0);
		return -ERANGE;
	}
	struct bam_cache_dev *c = a->cache;
	uint64_t byte = i << a->elem_shift;
	uint64_t l = byte >> c->line_shift;
	int64_t s = bam_array_line_acquire(a, l, 1, i);
	if (s >= 0)
		*p = c->lines + ((uint64_t)s << c->line_shift) + (byte & (c->line_size - 1));
	bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).accesses, 1);
	return s;
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

/*
 * bam_array_ref with warp coalescing (BaM 4.4): active threads of the warp whose elements
 * lie in one line form a group; its leader acquires the line with one reference per
 * member and the slot is broadcast. Synchronises the active threads of the warp.
 */
BAM_HD_INLINE int64_t bam_array_warp_ref_group_ex(struct bam_array_dev *a, uint64_t i, void **p,
						   uint32_t *group, uint32_t *leader_out, int try_only);

BAM_HD_INLINE int64_t bam_array_warp_ref_group(struct bam_array_dev *a, uint64_t i, void **p,
						uint32_t *group, uint32_t *leader_out)
{
	return bam_array_warp_ref_group_ex(a, i, p, group, leader_out, 0);
}

/* try_only: take the line only if it is cached now (bam_array_line_try_acquire), else
 * -EAGAIN for the group; no accesses counted either way (the caller counts the
 * elements it reads through the line) */
BAM_HD_INLINE int64_t bam_array_warp_ref_group_ex(struct bam_array_dev *a, uint64_t i, void **p,
						   uint32_t *group, uint32_t *leader_out, int try_only)
{
	struct bam_cache_dev *c = a->cache;
	int oob = i >= a->n_elems;
	uint64_t byte = i << a->elem_shift;
	/* out-of-range threads form their own group keyed past every line */
	uint64_t l = oob ? ~0ull : byte >> c->line_shift;
	uint32_t mask = bam_warp_match(l);
#if BAM_ON_GPU
	/* lanes passing different arrays with the same line index: split the group by
	 * array (rare; one shuffle and one vote otherwise) */
	unsigned long long a_lead = __shfl_sync(mask, (unsigned long long)(uintptr_t)a, __ffs(mask) - 1);
	if (__any_sync(mask, a_lead != (unsigned long long)(uintptr_t)a))
		mask &= bam_warp_match((uint64_t)(uintptr_t)a);
#endif
	uint32_t leader = bam_warp_leader(mask);
	int64_t s = -ERANGE;
	if (!oob && bam_lane_id() == leader) {
		s = try_only ? bam_array_line_try_acquire(a, l, bam_popc(mask)) : bam_array_line_acquire(a, l, bam_popc(mask), i);
		if (!try_only)
			bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).accesses, bam_popc(mask));
	}
	if (oob && bam_lane_id() == leader)
		bam_dev_record_error(a->io, -ERANGE, 0);
	s = bam_warp_bcast_i64(mask, s, leader);
	/* the members read the line after the leader's acquire: a warp barrier orders
	 * their reads after it (the PTX memory model gives __shfl_sync no ordering) */
	bam_warp_sync(mask);
	if (s >= 0)
		*p = c->lines + ((uint64_t)s << c->line_shift) + (byte & (c->line_size - 1));
	*group = mask;
	*leader_out = leader;
	return s;
}

/* Release a group's references: once every member is done with the line (the warp
 * barrier), the leader drops them all with one atomic. */
BAM_HD_INLINE void bam_array_warp_put(struct bam_array_dev *a, int64_t s, uint32_t group, uint32_t leader)
{
	bam_warp_sync(group);
	if (s >= 0 && bam_lane_id() == leader)
		bam_slot_put(a->cache, (uint64_t)s, bam_popc(group));
}

BAM_HD_INLINE int64_t bam_array_warp_ref(struct bam_array_dev *a, uint64_t i, void **p)
{
	uint32_t g, l;
	return bam_array_warp_ref_group(a, i, p, &g, &l);
}

/* Mark a referenced slot dirty (after a store through its pointer). */
BAM_HD_INLINE void bam_slot_mark_dirty(struct bam_cache_dev *c, uint64_t s)
{
	if (!(bam_load_relaxed_u32(&c->state[s]) & BAM_SLOT_DIRTY))
		bam_fetch_or_acq_rel_gpu_u32(&c->state[s], BAM_SLOT_DIRTY);
}

/* Typed element functions, per thread and warp-coalesced:
 *   int bam_array_read_T(a, i, T *out)        int bam_array_warp_read_T(...)
 *   int bam_array_write_T(a, i, T v)          int bam_array_warp_write_T(...)
 *   int bam_array_atomic_add_T(a, i, T v, T *old)   (old may be NULL)
 * for T in u32 (uint32_t), u64 (uint64_t), i32, i64, f32 (float), f64 (double).
 * 'i' is an element index; the array's elem_size must equal sizeof(T).
 * Return 0 or a negative errno (-ERANGE, -ETIMEDOUT, -EBUSY, -EIO); on error *out is 0.
 */
#define BAM_ARRAY_ACCESSORS(SUF, T)                                                              \
	BAM_HD_INLINE int bam_array_read_##SUF(struct bam_array_dev *a, uint64_t i, T *out)      \
	{                                                                                        \
		void *p = 0;                                                                     \
		int64_t s = bam_array_ref(a, i, &p);                                             \
		if (s < 0) {                                                                     \
			*out = (T)0;                                                             \
			return (int)s;                                                           \
		}                                                                                \
		*out = *(volatile T *)p;                                                         \
		bam_slot_put(a->cache, (uint64_t)s, 1);                                          \
		return 0;                                                                        \
	}                                                                                        \
	BAM_HD_INLINE int bam_array_warp_read_##SUF(struct bam_array_dev *a, uint64_t i, T *out) \
	{                                                                                        \
		void *p = 0;                                                                     \
		uint32_t g, l;                                                                   \
		int64_t s = bam_array_warp_ref_group(a, i, &p, &g, &l);                          \
		*out = s < 0 ? (T)0 : *(volatile T *)p;                                          \
		bam_array_warp_put(a, s, g, l);                                                  \
		return s < 0 ? (int)s : 0;                                                       \
	}                                                                                        \
	BAM_HD_INLINE int bam_array_write_##SUF(struct bam_array_dev *a, uint64_t i, T v)        \
	{                                                                                        \
		void *p = 0;                                                                     \
		int64_t s = bam_array_ref(a, i, &p);                                             \
		if (s < 0)                                                                       \
			return (int)s;                                                           \
		*(volatile T *)p = v;                                                            \
		bam_slot_mark_dirty(a->cache, (uint64_t)s);                                      \
		bam_slot_put(a->cache, (uint64_t)s, 1);                                          \
		return 0;                                                                        \
	}                                                                                        \
	BAM_HD_INLINE int bam_array_warp_write_##SUF(struct bam_array_dev *a, uint64_t i, T v)   \
	{                                                                                        \
		void *p = 0;                                                                     \
		uint32_t g, l;                                                                   \
		int64_t s = bam_array_warp_ref_group(a, i, &p, &g, &l);                          \
		if (s >= 0) {                                                                    \
			*(volatile T *)p = v;                                                    \
			if (bam_lane_id() == l)                                                  \
				bam_slot_mark_dirty(a->cache, (uint64_t)s);                      \
		}                                                                                \
		bam_array_warp_put(a, s, g, l);                                                  \
		return s < 0 ? (int)s : 0;                                                       \
	}

BAM_ARRAY_ACCESSORS(u32, uint32_t)
BAM_ARRAY_ACCESSORS(u64, uint64_t)
BAM_ARRAY_ACCESSORS(i32, int32_t)
BAM_ARRAY_ACCESSORS(i64, int64_t)
BAM_ARRAY_ACCESSORS(f32, float)
BAM_ARRAY_ACCESSORS(f64, double)

/* Atomic add on a cached element: the add is atomic among all threads using this
 * cache (GPU scope); the line becomes dirty. */
#if BAM_ON_GPU
#define BAM_ATOMIC_ADD_IMPL(T, p, v) atomicAdd((T *)(p), (v))
#define BAM_ATOMIC_ADD_U64(p, v) (uint64_t)atomicAdd((unsigned long long *)(p), (unsigned long long)(v))
#define BAM_ATOMIC_ADD_I64(p, v) (int64_t)atomicAdd((unsigned long long *)(p), (unsigned long long)(v))
#define BAM_ATOMIC_ADD_I32(p, v) atomicAdd((int *)(p), (int)(v))
#define BAM_ATOMIC_ADD_U32(p, v) atomicAdd((unsigned int *)(p), (unsigned int)(v))
#define BAM_ATOMIC_ADD_F32(p, v) atomicAdd((float *)(p), (v))
#define BAM_ATOMIC_ADD_F64(p, v) atomicAdd((double *)(p), (v))
#else
#define BAM_ATOMIC_ADD_U64(p, v) __atomic_fetch_add((uint64_t *)(p), (v), __ATOMIC_RELAXED)
#define BAM_ATOMIC_ADD_I64(p, v) __atomic_fetch_add((int64_t *)(p), (v), __ATOMIC_RELAXED)
#define BAM_ATOMIC_ADD_I32(p, v) __atomic_fetch_add((int32_t *)(p), (v), __ATOMIC_RELAXED)
#define BAM_ATOMIC_ADD_U32(p, v) __atomic_fetch_add((uint32_t *)(p), (v), __ATOMIC_RELAXED)
BAM_HD_INLINE float bam_host_fadd_f32(float *p, float v)
{
	uint32_t *w = (uint32_t *)p, old = __atomic_load_n(w, __ATOMIC_RELAXED), nw;
	float o, n;
	do {
		__builtin_memcpy(&o, &old, 4);
		n = o + v;
		__builtin_memcpy(&nw, &n, 4);
	} while (!__atomic_compare_exchange_n(w, &old, nw, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return o;
}
BAM_HD_INLINE double bam_host_fadd_f64(double *p, double v)
{
	uint64_t *w = (uint64_t *)p, old = __atomic_load_n(w, __ATOMIC_RELAXED), nw;
	double o, n;
	do {
		__builtin_memcpy(&o, &old, 8);
		n = o + v;
		__builtin_memcpy(&nw, &n, 8);
	} while (!__atomic_compare_exchange_n(w, &old, nw, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return o;
}
#define BAM_ATOMIC_ADD_F32(p, v) bam_host_fadd_f32((float *)(p), (v))
#define BAM_ATOMIC_ADD_F64(p, v) bam_host_fadd_f64((double *)(p), (v))
#endif

#define BAM_ARRAY_ATOMIC(SUF, T, OP)                                                                  \
	BAM_HD_INLINE int bam_array_atomic_add_##SUF(struct bam_array_dev *a, uint64_t i, T v, T *old) \
	{                                                                                             \
		void *p = 0;                                                                          \
		int64_t s = bam_array_ref(a, i, &p);                                                  \
		if (s < 0)                                                                            \
			return (int)s;                                                                \
		T o = (T)OP(p, v);                                                                    \
		if (old)                                                                              \
			*old = o;                                                                     \
		bam_slot_mark_dirty(a->cache, (uint64_t)s);                                           \
		bam_slot_put(a->cache, (uint64_t)s, 1);                                               \
		return 0;                                                                             \
	}

BAM_ARRAY_ATOMIC(u32, uint32_t, BAM_ATOMIC_ADD_U32)
BAM_ARRAY_ATOMIC(u64, uint64_t, BAM_ATOMIC_ADD_U64)
BAM_ARRAY_ATOMIC(i32, int32_t, BAM_ATOMIC_ADD_I32)
BAM_ARRAY_ATOMIC(i64, int64_t, BAM_ATOMIC_ADD_I64)
BAM_ARRAY_ATOMIC(f32, float, BAM_ATOMIC_ADD_F32)
BAM_ARRAY_ATOMIC(f64, double, BAM_ATOMIC_ADD_F64)

/* ---- line handle: one line referenced while a thread walks many elements ---------- */

struct bam_line {
	const uint8_t *data;      /* the line's bytes in the cache */
	uint64_t first, end;      /* element range [first, end) held */
	int64_t slot;             /* -1 = none */
	uint32_t group, leader;   /* bam_line_warp_get: lanes that share the acquisition */
};

/* The index of the cache line (line_size bytes, counted from the array's first byte)
 * that element i (an element index, not a byte offset) lies in. No range check. */
BAM_HD_INLINE uint64_t bam_array_line_of(const struct bam_array_dev *a, uint64_t i)
{
	return (i << a->elem_shift) >> a->cache->line_shift;
}

/* Point h at the line of element i, given its slot s and p = &element i. */
BAM_HD_INLINE void bam_line_set(const struct bam_array_dev *a, struct bam_line *h, uint64_t i, int64_t s, const void *p)
{
	uint64_t per = (uint64_t)a->cache->line_size >> a->elem_shift;
	h->first = i & ~(per - 1);
	h->end = h->first + per < a->n_elems ? h->first + per : a->n_elems;
	h->data = (const uint8_t *)p - ((i - h->first) << a->elem_shift);
	h->slot = s;
}

/* Make 'h' hold the line of element i (releasing the line it held, if another).
 * Returns 0 or a negative errno. Per thread. */
BAM_HD_INLINE int bam_line_get(struct bam_array_dev *a, struct bam_line *h, uint64_t i)
{
	if (h->slot >= 0 && i >= h->first && i < h->end)
		return 0;
	if (h->slot >= 0) {
		bam_slot_put(a->cache, (uint64_t)h->slot, 1);
		h->slot = -1;
	}
	void *p = 0;
	int64_t s = bam_array_ref(a, i, &p);
	if (s < 0)
		return (int)s;
	bam_line_set(a, h, i, s, p);
	h->group = 0;
	return 0;
}

BAM_HD_INLINE void bam_line_put(struct bam_array_dev *a, struct bam_line *h)
{
	if (h->slot >= 0)
		bam_slot_put(a->cache, (uint64_t)h->slot, 1);
	h->slot = -1;
}

/*
 * bam_line_get, warp-coalesced (BaM 4.4): the active threads of the warp call it together
 * (each with its own handle, which must not hold a line: fresh or released); threads
 * whose elements lie in one line share one acquisition by the group's leader. Each
 * thread's handle then covers its element's whole line (h->data, [h->first, h->end)):
 * the fast path for a warp scanning a neighbour list or a line of records.
 * Release with bam_line_warp_put by the same threads together (one atomic for the
 * group), or per thread with bam_line_put. Returns 0 or a negative errno
 * (-ERANGE if i >= n_elems; see bam_array_line_acquire); on error h holds nothing.
 */
BAM_HD_INLINE int bam_line_warp_get_ex(struct bam_array_dev *a, struct bam_line *h, uint64_t i, int try_only);

BAM_HD_INLINE int bam_line_warp_get(struct bam_array_dev *a, struct bam_line *h, uint64_t i)
{
	return bam_line_warp_get_ex(a, h, i, 0);
}

/* bam_line_warp_get that takes the line only if it is cached now: -EAGAIN (h holds
 * nothing) if it is not, -ERANGE if i >= n_elems; never waits for a fill or a free
 * slot, so a thread may call it while it holds other lines. Counts a hit, but no
 * element accesses (bam_array_count_accesses is the caller's). */
BAM_HD_INLINE int bam_line_warp_try_get(struct bam_array_dev *a, struct bam_line *h, uint64_t i)
{
	return bam_line_warp_get_ex(a, h, i, 1);
}

BAM_HD_INLINE int bam_line_warp_get_ex(struct bam_array_dev *a, struct bam_line *h, uint64_t i, int try_only)
{
	void *p = 0;
	uint32_t g, l;
	int64_t s = bam_array_warp_ref_group_ex(a, i, &p, &g, &l, try_only);
	h->slot = -1;
	h->group = 0;
	if (s < 0)
		return (int)s;
	bam_line_set(a, h, i, s, p);
	h->group = g;
	h->leader = l;
	return 0;
}

/* Release lines taken by bam_line_warp_get: the threads of each group call it
 * together; after a warp barrier the leader drops every member's reference. */
BAM_HD_INLINE void bam_line_warp_put(struct bam_array_dev *a, struct bam_line *h)
{
	if (h->slot >= 0 && h->group) {
		bam_array_warp_put(a, h->slot, h->group, h->leader);
		h->slot = -1;
		h->group = 0;
	} else {
		bam_line_put(a, h);
	}
}

/* ---- flush ------------------------------------------------------------------------ */

/* Write slot s back if it is valid and dirty (called by the flush kernel, one thread
 * per slot, with no concurrent writers). A retired slot is given back if its command
 * is known complete. A pinned slot is written again only once its earlier, timed-out
 * write-back is known complete (two writes of one line in flight could land in either
 * order): waits for that, bounded by the timeout. 0, -EAGAIN (the slot changed: call
 * again), -ETIMEDOUT (the earlier write-back is still outstanding, or this one timed
 * out), -EIO. */
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

#endif /* BAM_ARRAY_H */
