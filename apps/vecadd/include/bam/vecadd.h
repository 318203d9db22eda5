/* SPDX-License-Identifier: MIT */
/*
 * bam/vecadd.h - vectorAdd with the vectors on storage (BaM paper, section 5, its
 * write-heavy experiment): c = a + b, a, b and c arrays of n elements on the context's
 * controllers (striped line by line), each normally larger than the cache. Modes:
 *   BAM_VECADD_BAM     kernels through the cache (bam/array.h): a and b opened
 *                      read-only, c's lines taken for a whole-line store (no fetch),
 *                      dirty lines written back asynchronously; the flush is timed.
 *   BAM_VECADD_TILING  what a careful user writes without the cache: the CPU walks
 *                      tiles of the vectors; per tile a kernel reads a's and b's
 *                      lines into target-memory buffers with raw NVMe commands
 *                      (bam_dev_io), a kernel adds, a kernel writes c's tile; two
 *                      tiles in flight (two streams on the GPU; two host threads on
 *                      the CPU target), so one tile's I/O overlaps the other's.
 *   BAM_VECADD_HOST    the host reads a and b through the provisioning path
 *                      (bam_ctx_media_read: no queues, no device timing), adds, writes
 *                      c: an in-memory reference, not a storage measurement.
 *   BAM_VECADD_GPU     the same with the add on the target (copies to and from
 *                      target memory): the data-in-memory reference.
 * Every mode's c is read back from the media after the run (and the flush) and
 * checked element by element.
 */
#ifndef BAM_VECADD_H
#define BAM_VECADD_H

#include <stddef.h>
#include <stdint.h>
#include "bam/bam.h"

BAM_EXTERN_C_BEGIN

enum bam_vecadd_mode { BAM_VECADD_BAM = 0, BAM_VECADD_TILING = 1, BAM_VECADD_HOST = 2, BAM_VECADD_GPU = 3 };
enum bam_vecadd_type { BAM_VECADD_U64 = 0, BAM_VECADD_F32 = 1 };

struct bam_vecadd_opts {
	const char *backend;     /* back-end string (NULL: "emu"), sized for the 3 vectors */
	enum bam_target target;  /* AUTO: the GPU when there is one */
	uint64_t n;              /* elements per vector (>= 1) */
	enum bam_vecadd_type type;
	enum bam_vecadd_mode mode;
	uint64_t cache_bytes;    /* bam mode's cache (0: 64 MiB, at most the three vectors) */
	uint32_t line_size;      /* cache line and tiling's I/O unit (0: 4096) */
	uint64_t threads;        /* 0: GPU 32 x 4096, CPU 16 */
	uint64_t tile_bytes;     /* tiling: bytes of each vector per tile (0: 64 MiB GPU, 4 MiB CPU) */
	uint32_t ctrl_workers;   /* emu: controller workers (0: default) */
	uint64_t timeout_ms;     /* 0: the library's default */
	void (*msg)(void *arg, const char *text); /* progress (phases; every 2 s while the
						   * kernels run); NULL: none */
	void *msg_arg;
};

struct bam_vecadd_result {
	char backend[512];
	enum bam_target target;
	uint64_t vector_bytes;   /* bytes of each vector */
	uint64_t cache_bytes;    /* bam mode */
	double seconds;          /* the run, flush included (bam), up to c on the media */
	double flush_seconds;    /* bam: the flush alone */
	uint64_t storage_read;   /* bytes the controllers read from the media (commands) */
	uint64_t storage_written;/* bytes the controllers wrote (commands) */
	uint64_t host_read, host_written; /* host/gpu modes: bytes through the provisioning path */
	uint64_t fills_avoided, partial_write_fetches, writebacks, writeback_errors; /* bam: the arrays' counters */
	uint64_t wrong;          /* elements of c that differ from a + b on the media */
	uint64_t errors;         /* failed accesses or commands */
};

/* Run one vectorAdd. Returns 0 (c verified), -EIO (wrong elements or errors: r says
 * how many), -EINVAL (bad options), or the open's / allocation's error; a message in
 * err (errlen bytes) on failure. */
int bam_vecadd_run(const struct bam_vecadd_opts *o, struct bam_vecadd_result *r, char *err, size_t errlen);

BAM_EXTERN_C_END

#endif
