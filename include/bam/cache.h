/* SPDX-License-Identifier: MIT */
/*
 * bam/cache.h - host API of the software cache and of arrays on storage (BaM paper
 * sections 4.3-4.4). Kernels use the device-side view (bam/array.h).
 *
 * A cache holds capacity / line_size lines in the context's target memory (GPU
 * memory on the GPU), all allocated by bam_cache_create. An array is a range of
 * n_elems elements of elem_size bytes laid on one or more controllers' LBAs, striped
 * line by line or replicated; any number of arrays (up to 64) share a cache.
 */
#ifndef BAM_CACHE_H
#define BAM_CACHE_H

#include "bam/defs.h"
#include <stdio.h>
#include "bam/bam.h"
#include "bam/array.h"

BAM_EXTERN_C_BEGIN

struct bam_cache;
struct bam_array;

/* Environment at bam_cache_create: BAM_WB_SYNC=1 makes evictions write dirty lines
 * back synchronously (the thread waits for the write before its read), as before the
 * asynchronous write-back: to compare the two. */
struct bam_cache_opts {
	uint64_t capacity;   /* bytes of cache (rounded down to whole lines); >= 1 line */
	uint32_t line_size;  /* bytes per line: a power of two, 512 B to 64 KiB, a multiple of every controller's LBA size */
};

/* Create a cache on ctx. Returns 0, -EINVAL (line size or capacity invalid), -ENOMEM
 * (the cache does not fit in the target's free memory, bam_cache_fits: refused before
 * allocating, the message naming both sizes; or an allocation failed), -EIO (the
 * descriptor could not be copied to the target). On failure the reason is in
 * bam_ctx_error(ctx) and on stderr. */
BAM_API int bam_cache_create(struct bam_ctx *ctx, const struct bam_cache_opts *o, struct bam_cache **out);
/* Bytes of target memory a cache with these options takes: its lines plus per-line
 * state, tag, pending record and PRP list. 0 if the options are invalid. */
BAM_API uint64_t bam_cache_bytes(const struct bam_cache_opts *o);
/* Whether such a cache fits in the memory 'target' has free now (bam_mem_available):
 * 0 (fits, or the free memory cannot be told), -ENOMEM (it does not: a one-line
 * message naming the bytes asked and the bytes available goes to 'err', errlen bytes
 * at most, when err != NULL), -EINVAL (target BAM_TARGET_AUTO, or invalid options). */
BAM_API int bam_cache_fits(enum bam_target target, const struct bam_cache_opts *o, char *err, size_t errlen);
/* Free the cache (does not flush: call bam_cache_flush first to keep writes). */
BAM_API void bam_cache_destroy(struct bam_cache *c);
/* Lines in the cache and their size. */
BAM_API uint64_t bam_cache_lines(const struct bam_cache *c);
BAM_API uint32_t bam_cache_line_size(const struct bam_cache *c);
/* Write every dirty line of every array back to storage (a kernel on the target;
 * call it when no kernel writes through the cache). After it returns 0 the media
 * holds exactly what was written. Write-backs in flight (asynchronous eviction,
 * bam/detail/cache_slots.h BAM_SLOT_WRITING) are waited for first; a line whose
 * write-back failed is still dirty: written here, its error returned if that fails
 * again. A line whose earlier write-back timed out is written
 * again only once that command has completed: the flush waits for it, up to the
 * context's timeout. Slots given back on the way: as bam_cache_reclaim. Returns 0 or
 * the first error (-EIO, -ETIMEDOUT: a write-back timed out, or an earlier one is
 * still outstanding). */
BAM_API int bam_cache_flush(struct bam_cache *c);
/* Drop every clean line (to measure cold runs). -EBUSY if a line is dirty or in use. */
BAM_API int bam_cache_invalidate(struct bam_cache *c);
/*
 * Give back the slots that timed-out commands took out of use (bam/detail/cache_slots.h: a slot
 * whose fill timed out is retired, one whose write-back timed out is pinned to its
 * line) whose command is now known complete: its late completion has arrived (this
 * call moves the queues' CQ heads past completions that arrived while no thread waited
 * on them). Slots whose command has not completed stay out of use: the controller may
 * still write into them. Kernels do the same as they meet such slots (victim search,
 * bam_cache_flush), so calling this is never needed for correctness; it returns them
 * all at once, e.g. at a quiescent point, and counts what is left.
 * CPU target: any time, from any thread. GPU target: the slots are in GPU memory and
 * only kernels give them back; this call only counts them.
 * *held (may be NULL) receives the number of slots still out of use (retired or
 * pinned). Returns 0, -ENOMEM, -EIO (copy from GPU memory failed).
 */
BAM_API int bam_cache_reclaim(struct bam_cache *c, uint64_t *held);

struct bam_array_opts {
	uint64_t n_elems;       /* elements */
	uint32_t elem_size;     /* bytes: 1, 2, 4 or 8 */
	enum bam_layout layout; /* BAM_LAYOUT_STRIPE (default) or BAM_LAYOUT_REPLICATE */
	uint32_t n_ctrl;        /* controllers used, from first_ctrl (0 = all of the context) */
	uint32_t first_ctrl;
	uint64_t base_lba;      /* first LBA on each controller (a multiple of line_size/LBA) */
	uint32_t priority;      /* 0: normal; 1: high: the victim search passes over up to
				 * BAM_KEEP_SKIPS of this array's cached lines before it evicts one
				 * as any other (bam/detail/cache_slots.h), so they stay cached longer than
				 * normal lines under pressure; for a small array read again and
				 * again (BFS's offsets). Not a pin: a cache full of them still
				 * evicts. Other values: -EINVAL */
	uint32_t read_only;     /* 1: opened read-only (BAM_ARRAY_F_RDONLY, bam/array.h): its
				 * lines are never dirty, never written back; a write through
				 * the array API returns -EPERM (recorded as the device's
				 * error) and changes nothing. 0: read-write. Other values: -EINVAL */
};

/* Create an array in cache c. Returns 0, -EINVAL (bad sizes; does not fit on the
 * controllers, or first_ctrl / n_ctrl outside the context's controllers; priority not 0
 * or 1), -ENOSPC (64
 * arrays already), -ENOMEM, -EIO (the descriptor could not be copied to the target).
 * On failure the reason is in bam_ctx_error() of the cache's context and on stderr. */
BAM_API int bam_array_create(struct bam_cache *c, const struct bam_array_opts *o, struct bam_array **out);
BAM_API void bam_array_destroy(struct bam_array *a);
/* The device-side view to pass to kernels (target memory). */
BAM_API struct bam_array_dev *bam_array_dev(struct bam_array *a);
/* Bytes the array occupies on each controller it uses. */
BAM_API uint64_t bam_array_bytes_per_ctrl(const struct bam_array *a);
/* First LBA after the array on its controllers (to place the next array). */
BAM_API uint64_t bam_array_end_lba(const struct bam_array *a);

/* Provisioning path: write/read elements [first, first + n) directly on the media,
 * bypassing the cache (like dd onto the SSD before a run). 'buf' holds n * elem_size
 * bytes. Returns 0, -ERANGE, -EIO, -ENOSPC (the media could not grow: file: media on a
 * full file system; NVMe's Capacity Exceeded). */
BAM_API int bam_array_media_write(struct bam_array *a, uint64_t first, const void *buf, uint64_t n);
BAM_API int bam_array_media_read(struct bam_array *a, uint64_t first, void *buf, uint64_t n);

/* Geometry of an array as created, and the context it belongs to. */
BAM_API uint64_t bam_array_n_elems(const struct bam_array *a);
BAM_API uint32_t bam_array_elem_size(const struct bam_array *a);
BAM_API struct bam_ctx *bam_array_ctx(const struct bam_array *a);

/*
 * Transfers through the cache: kernels the library runs on the context's target (GPU
 * threads, one warp per row; host threads on the CPU target), reading lines on demand
 * from the storage as any kernel's bam_array_ref would. Buffers are in target memory:
 * GPU memory on the GPU target (bam_mem_alloc(BAM_MEM_DEVICE), or any device pointer of
 * the process, e.g. a PyTorch or CuPy tensor's data), host memory on the CPU target.
 * 'stream' (GPU only; NULL = a stream of the library's own) is the cudaStream_t to run
 * on, so that the kernel follows the work already queued there; the call returns once
 * the kernel is complete either way. Calls on one array are serialised; each returns 0
 * or the first row's error, with a message in bam_ctx_error():
 *   -EINVAL   bad sizes or NULL buffers; -ERANGE an index or range outside the array;
 *   -EIO      a line's read failed (NVMe error status: bam_ctx_io_error);
 *   -ETIMEDOUT, -EBUSY  as bam/array.h says; -ENOMEM, -ENODEV.
 * The rows that did not fail are transferred all the same.
 */
/* Gather rows: out[k] = row idx[k] of the array seen as rows of row_elems elements
 * (row r = elements [r * row_elems, (r + 1) * row_elems)), for k in [0, n). idx: n
 * indices of idx_size bytes (4: int32, 8: int64), each in [0, n_elems / row_elems)
 * (else -ERANGE for that row). out: n * row_elems * elem_size bytes, packed. */
BAM_API int bam_array_gather(struct bam_array *a, const void *idx, uint32_t idx_size, uint64_t n,
			     uint64_t row_elems, void *out, void *stream);
/* Elements [first, first + n) into out (n * elem_size bytes). */
BAM_API int bam_array_read(struct bam_array *a, uint64_t first, uint64_t n, void *out, void *stream);
/* Elements [first, first + n) from in; the lines become dirty: bam_cache_flush writes
 * them to the storage (eviction does earlier for some). */
BAM_API int bam_array_write(struct bam_array *a, uint64_t first, uint64_t n, const void *in, void *stream);

struct bam_array_stats {
	struct bam_array_counters c;
	double amplification;   /* (bytes_read + bytes_written) / bytes_requested */
	double hit_rate;        /* hits / (hits + misses) */
};
BAM_API int bam_array_stats(struct bam_array *a, struct bam_array_stats *out);
/* Zero the counters. */
BAM_API int bam_array_stats_reset(struct bam_array *a);
BAM_API void bam_array_stats_print(FILE *f, const char *name, const struct bam_array_stats *s);

BAM_EXTERN_C_END

#endif /* BAM_CACHE_H */
