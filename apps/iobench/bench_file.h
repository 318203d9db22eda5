/* SPDX-License-Identifier: MIT */
/*
 * CPU-orchestrated reads of the files behind a `file` back end, measured by `bam bench
 * --compare` in the same process as the bam run (bench_file.c; docs/BACKENDS.md):
 *   posix  a pool of host threads, each: pread() of one block into a host buffer, then
 *          a copy of it into target memory (GPU target: cudaMemcpyAsync from a pinned
 *          buffer and a wait on the thread's stream; CPU target: memcpy), one request
 *          at a time: what GDS's compatibility mode and KvikIO's POSIX fallback do;
 *   uring  the disk's ceiling: a few host threads, each keeping 'qd' reads in flight
 *          through its own io_uring (liburing, plain IORING_OP_READ: fio's io_uring
 *          engine with its defaults), into host memory, no copy.
 * Both read the same files, with the same block size, block placement (block b is on
 * file b mod n at byte (b / n) * bs, as bench_place) and offset pattern as the bam run,
 * with O_DIRECT when the back end uses it.
 */
#ifndef BAM_BENCH_FILE_H
#define BAM_BENCH_FILE_H
#include <stddef.h>
#include <stdint.h>
#include "bam/dev.h" /* BAM_MAX_CTRLS */

/* The files of a `file` back end, in controller order. */
struct bench_files {
	uint32_t n;
	char *path[BAM_MAX_CTRLS];
	uint32_t lba;       /* the back end's LBA size */
	int direct;         /* the back end's direct=: 1, 0, or 2 for "mixed" */
	int fd[BAM_MAX_CTRLS];
	uint32_t n_direct;  /* files opened with O_DIRECT by bench_files_open */
};

/* Fill 'f' from a normalised `file` back-end string (bam_ctx_backend_desc). Returns 0,
 * -EINVAL (not a file back end, or no file in it; message in err) or -ENOMEM. */
int bench_files_parse(const char *desc, struct bench_files *f, char *err, size_t errlen);
/* Open every file read-only, with O_DIRECT when the back end used it for that file:
 * the same checks as the back end (statx direct-I/O alignment not above the LBA size,
 * a probe read), buffered otherwise. Returns 0 or -EIO (message in err). */
int bench_files_open(struct bench_files *f, char *err, size_t errlen);
/* fdatasync every file (after the bench wrote its pattern with buffered writes: a
 * direct read of a dirty range would first wait for its write-back). 0 or -EIO. */
int bench_files_sync(const struct bench_files *f, char *err, size_t errlen);
/* Close the descriptors and free the paths. */
void bench_files_free(struct bench_files *f);

struct bench_cmp_cfg {
	uint32_t bs;          /* bytes per read, a multiple of the LBA size */
	uint32_t lba_shift;   /* of the bam run: the verification pattern depends on it */
	uint64_t nblocks;     /* bs-sized blocks in the tested region, all files */
	int random;           /* 1: uniform random blocks (randread); 0: blocks in order (read) */
	uint64_t total_ios;   /* stop after this many reads (0: no count limit) */
	double runtime;       /* stop after this many seconds (0: no time limit) */
	uint32_t threads;     /* host threads */
	uint32_t qd;          /* uring: reads in flight per thread */
	int verify;           /* check a sample of the blocks read against the pattern */
	int gpu;              /* posix: copy into GPU memory (GPU target) */
	uint64_t seed;
	uint64_t stall_ns;    /* give up (-ETIMEDOUT) when no read completes for this long */
};

struct bench_cmp_result {
	uint64_t ios;         /* reads completed in full */
	uint64_t bytes;
	double seconds;
	uint64_t errors;      /* reads (or copies) that failed */
	uint64_t verified;    /* blocks checked against the pattern */
	uint64_t verify_fail; /* of those, blocks that did not match */
	uint32_t threads, qd; /* as run (qd: uring only, after the memory cap) */
	char first_error[160];
	char stalled[224];    /* the run's -ETIMEDOUT: what made it give up */
};

/* Run the posix baseline over the open files. Returns 0 (with errors counted in *r),
 * -ENOMEM / -EAGAIN / -EIO when it could not start, or -ETIMEDOUT when no read completed
 * for stall_ns (r->stalled says so): its threads are then left blocked in their reads,
 * with their memory, and the process must end. */
int bench_posix_run(const struct bench_files *f, const struct bench_cmp_cfg *c, struct bench_cmp_result *r);
/* Run the io_uring ceiling over the open files; same returns. */
int bench_uring_run(const struct bench_files *f, const struct bench_cmp_cfg *c, struct bench_cmp_result *r);

/* The uring ceiling's buffer memory per thread is capped at this: qd is lowered for
 * large blocks (1 MiB: 64 in flight per thread). */
#define BENCH_URING_MAX_BUF (64u << 20)
#endif
