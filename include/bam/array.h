/* SPDX-License-Identifier: MIT */
/*
 * bam/array.h - arrays on storage as kernels use them, through the software cache
 * (BaM paper, sections 4.3-4.4 "software cache", "warp coalescing", "array
 * abstraction"). Compiled for GPU threads and for CPU-target host threads from this
 * one header. The host creates caches and arrays (bam/cache.h) and passes
 * bam_array_dev(arr) to its kernels.
 *
 * What a kernel calls:
 *   elements:     bam_array_read_T / _write_T / _atomic_add_T (per thread) and
 *                 bam_array_warp_read_T / _warp_write_T (warp-coalesced), T in u32,
 *                 u64, i32, i64, f32, f64;
 *   references:   bam_array_ref / bam_array_warp_ref(_group) + bam_array_warp_put:
 *                 a pointer into the cached line, held until released;
 *   line handles: bam_line_get / _put, bam_line_warp_get / _try_get / _warp_put: one
 *                 line held while a thread walks many of its elements;
 *   statistics:   bam_array_count_accesses (elements read through a handle).
 * Every call returns 0 (or a slot >= 0) or a negative errno: -ERANGE (index past the
 * array), -EIO (the line's read failed: NVMe error status), -ETIMEDOUT (no completion
 * within the device's timeout, bam_dev.timeout_ns), -EBUSY (every cache line
 * referenced with no completion on the device for that long), -EAGAIN (the _try_
 * forms: the line is not cached now). Every wait is bounded; none is a hang.
 *
 * Functions named ..._warp_... synchronise the active threads of the calling warp
 * that call them together (__match_any_sync / __shfl_sync); on the CPU target a warp
 * is one thread. All others are per thread. A thread holding a line (a reference or a
 * handle) must not wait for another line (no hold-and-wait: docs/DESIGN.md,
 * "Applications"); the _try_ forms never wait.
 *
 * The structures below are the device-side descriptors of a cache and an array: a
 * kernel may read an array's geometry (n_elems, elem_size, elem_shift, n_lines) and
 * its cache's line_size / line_shift; every other field is the cache's state, owned by
 * the machinery in bam/detail/cache_slots.h (not API).
 */
#ifndef BAM_ARRAY_H
#define BAM_ARRAY_H

#include "bam/defs.h"
#include "bam/dev.h"
#include "bam/stats.h"

#define BAM_MAX_ARRAYS   64
#define BAM_CNT_SHARDS   64
/* bam_array_dev.flags: opened read-only (bam_array_opts.read_only): its lines are never
 * dirty; every write through it (write, atomic add, write handles) returns -EPERM,
 * recorded in bam_dev.error, and changes nothing. A store through a pointer from
 * bam_array_ref (a read reference) is outside the API: it is not written back. */
#define BAM_ARRAY_F_RDONLY 1u

enum bam_layout {
	BAM_LAYOUT_STRIPE = 0,    /* line l on controller l mod k, consecutive per controller */
	BAM_LAYOUT_REPLICATE = 1, /* every line on all k controllers; reads spread, writes to all */
};

struct bam_cache_dev;

/* One counter shard, padded to two 128-byte cache lines of its own. */
struct bam_cnt_shard {
	struct bam_array_counters c;
	/* built with -DBAM_PROFILE_FILL only (a developer's tool; bam_array_stats prints
	 * them on stderr): ns in the victim search, in the fill's I/O (submission and
	 * completion), in whole fills, waiting for another thread's fill; such waits;
	 * ns in the submissions alone. Each a clock read or two per fill. */
	uint64_t prof[6];
	uint64_t pad[32 - sizeof(struct bam_array_counters) / 8 - 6];
};

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
	uint32_t flags;           /* BAM_ARRAY_F_*: BAM_ARRAY_F_RDONLY (opened read-only) */
	uint32_t flags_pad;
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
	uint32_t wb_sync;         /* 1: dirty victims are written back synchronously
				   * (BAM_WB_SYNC=1 at bam_cache_create; to compare) */
	struct bam_array_dev *arrays[BAM_MAX_ARRAYS];
};

/* The cache's machinery (slot states, fills, eviction, flush): not API. */
#include "bam/detail/cache_slots.h"

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
 * Pointer to element i with a reference on its line, per thread (no coalescing);
 * 'mode' as bam_array_line_acquire_ex (BAM_ACQ_WRITE for a store: the caller then
 * marks the slot dirty, bam_slot_mark_dirty). Returns the slot (>= 0; release it with bam_slot_put(a->cache, slot, 1)) or a
 * negative errno (-ERANGE if i >= n_elems; see bam_array_line_acquire).
 */
BAM_HD_INLINE int64_t bam_array_ref_ex(struct bam_array_dev *a, uint64_t i, void **p, uint32_t mode)
{
	if (i >= a->n_elems) {
		bam_dev_record_error(a->io, -ERANGE, 0);
		return -ERANGE;
	}
	struct bam_cache_dev *c = a->cache;
	uint64_t byte = i << a->elem_shift;
	uint64_t l = byte >> c->line_shift;
	int64_t s = bam_array_line_acquire_ex(a, l, 1, i, mode);
	if (s >= 0)
		*p = c->lines + ((uint64_t)s << c->line_shift) + (byte & (c->line_size - 1));
	bam_fetch_add_relaxed_gpu_u64(&BAM_CNT(a).accesses, 1);
	return s;
}

/* bam_array_ref_ex for reading (BAM_ACQ_READ). */
BAM_HD_INLINE int64_t bam_array_ref(struct bam_array_dev *a, uint64_t i, void **p)
{
	return bam_array_ref_ex(a, i, p, BAM_ACQ_READ);
}


/*
 * bam_array_ref with warp coalescing (BaM 4.4): active threads of the warp whose elements
 * lie in one line form a group; its leader acquires the line with one reference per
 * member and the slot is broadcast. Synchronises the active threads of the warp.
 */
BAM_HD_INLINE int64_t bam_array_warp_ref_group_ex(struct bam_array_dev *a, uint64_t i, void **p,
						   uint32_t *group, uint32_t *leader_out, int try_only, uint32_t mode);

BAM_HD_INLINE int64_t bam_array_warp_ref_group(struct bam_array_dev *a, uint64_t i, void **p,
						uint32_t *group, uint32_t *leader_out)
{
	return bam_array_warp_ref_group_ex(a, i, p, group, leader_out, 0, BAM_ACQ_READ);
}

/* try_only: take the line only if it is cached now (bam_array_line_try_acquire), else
 * -EAGAIN for the group; no accesses counted either way (the caller counts the
 * elements it reads through the line). mode: BAM_ACQ_* (not with try_only). */
BAM_HD_INLINE int64_t bam_array_warp_ref_group_ex(struct bam_array_dev *a, uint64_t i, void **p,
						   uint32_t *group, uint32_t *leader_out, int try_only, uint32_t mode)
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
		s = try_only ? bam_array_line_try_acquire(a, l, bam_popc(mask))
			     : bam_array_line_acquire_ex(a, l, bam_popc(mask), i, mode);
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
 * Return 0 or a negative errno (-ERANGE, -ETIMEDOUT, -EBUSY, -EIO; writes: -EPERM on a
 * read-only array); on error *out is 0. A write that misses reads its line first
 * (counted in partial_write_fetches): a whole line is stored without that read through
 * a write handle (bam_line_warp_get_overwrite). (A warp's 32 elements never cover a
 * line: lines are 512 bytes at least.)
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
		int64_t s = bam_array_ref_ex(a, i, &p, BAM_ACQ_WRITE);                           \
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
		int64_t s = bam_array_warp_ref_group_ex(a, i, &p, &g, &l, 0, BAM_ACQ_WRITE);     \
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
		int64_t s = bam_array_ref_ex(a, i, &p, BAM_ACQ_WRITE);                                \
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
	uint32_t write;           /* taken for writing: the put marks the line dirty */
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
	h->write = 0;
	return 0;
}

BAM_HD_INLINE void bam_line_put(struct bam_array_dev *a, struct bam_line *h)
{
	if (h->slot >= 0) {
		if (h->write)
			bam_slot_mark_dirty(a->cache, (uint64_t)h->slot);
		bam_slot_put(a->cache, (uint64_t)h->slot, 1);
	}
	h->slot = -1;
	h->write = 0;
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
BAM_HD_INLINE int bam_line_warp_get_ex(struct bam_array_dev *a, struct bam_line *h, uint64_t i, int try_only,
					uint32_t mode);

BAM_HD_INLINE int bam_line_warp_get(struct bam_array_dev *a, struct bam_line *h, uint64_t i)
{
	return bam_line_warp_get_ex(a, h, i, 0, BAM_ACQ_READ);
}

/*
 * Write handles: bam_line_warp_get for storing into the line through
 * (void *)h->data; the put (bam_line_warp_put / bam_line_put) marks the line dirty.
 *   _write:     part of the line: a miss reads it from storage first.
 *   _overwrite: the caller's stores cover every element of [h->first, h->end) before
 *               any thread reads the line: a miss takes a slot without reading storage
 *               (counted in fills_avoided); until those stores, its bytes are undefined.
 * -EPERM on a read-only array; other errors as bam_line_warp_get.
 */
BAM_HD_INLINE int bam_line_warp_get_write(struct bam_array_dev *a, struct bam_line *h, uint64_t i)
{
	return bam_line_warp_get_ex(a, h, i, 0, BAM_ACQ_WRITE);
}
BAM_HD_INLINE int bam_line_warp_get_overwrite(struct bam_array_dev *a, struct bam_line *h, uint64_t i)
{
	return bam_line_warp_get_ex(a, h, i, 0, BAM_ACQ_OVERWRITE);
}

/* bam_line_warp_get that takes the line only if it is cached now: -EAGAIN (h holds
 * nothing) if it is not, -ERANGE if i >= n_elems; never waits for a fill or a free
 * slot, so a thread may call it while it holds other lines. Counts a hit, but no
 * element accesses (bam_array_count_accesses is the caller's). */
BAM_HD_INLINE int bam_line_warp_try_get(struct bam_array_dev *a, struct bam_line *h, uint64_t i)
{
	return bam_line_warp_get_ex(a, h, i, 1, BAM_ACQ_READ);
}

BAM_HD_INLINE int bam_line_warp_get_ex(struct bam_array_dev *a, struct bam_line *h, uint64_t i, int try_only,
					uint32_t mode)
{
	void *p = 0;
	uint32_t g, l;
	int64_t s = bam_array_warp_ref_group_ex(a, i, &p, &g, &l, try_only, mode);
	h->slot = -1;
	h->group = 0;
	h->write = 0;
	if (s < 0)
		return (int)s;
	bam_line_set(a, h, i, s, p);
	h->group = g;
	h->leader = l;
	h->write = mode != BAM_ACQ_READ;
	return 0;
}

/* Release lines taken by bam_line_warp_get: the threads of each group call it
 * together; after a warp barrier the leader drops every member's reference. */
BAM_HD_INLINE void bam_line_warp_put(struct bam_array_dev *a, struct bam_line *h)
{
	if (h->slot >= 0 && h->group) {
		/* the members' stores before the leader's mark: the warp barrier in
		 * bam_array_warp_put orders them; the leader marks, then drops */
		bam_warp_sync(h->group);
		if (h->write && bam_lane_id() == h->leader)
			bam_slot_mark_dirty(a->cache, (uint64_t)h->slot);
		bam_array_warp_put(a, h->slot, h->group, h->leader);
		h->slot = -1;
		h->group = 0;
		h->write = 0;
	} else {
		bam_line_put(a, h);
	}
}

#endif /* BAM_ARRAY_H */
