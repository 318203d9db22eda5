/* SPDX-License-Identifier: MIT */
/*
 * bam/iobench.h - the benchmark engine behind `bam bench` (apps/iobench), as a library
 * on bam's public API:
 *
 *   bam_iobench_run     the I/O engine under load, fio-like: GPU (or CPU-target) threads
 *                       keep iodepth commands each in flight through bam_dev_io_submit /
 *                       bam_dev_io_wait; blocks read are checked against a pattern
 *                       derived from their LBA (emulated media, or storage the caller
 *                       asked to prefill) or against the file's own content (CPU target),
 *                       never written by a read run unless asked (opts.prefill). Write
 *                       runs end with a Flush, in the time. With the limit of the data's
 *                       path measured in the same run and, for the file back end, the
 *                       same reads orchestrated by the CPU (posix pread + copy, io_uring).
 *   bam_arraybench_run  the cache and array API under load (hit bandwidth, miss IOPS,
 *                       warp coalescing), against the HBM read bandwidth.
 *
 * Both return 0 or a negative errno, with a one-line message in err (several lines,
 * '\n'-separated, for a run that found errors); they never exit and never write to
 * stdout. Errors:
 *   -EINVAL   the options or the back-end string were refused: nothing ran (the message
 *             names the option as the `bam bench` flag of the same name);
 *   -ENODEV   target GPU without a usable GPU;
 *   -ENOMEM   memory for the cache, the media or the buffers is short;
 *   -EIO      the run could not be done, or it was done and found I/O errors, timeouts
 *             or wrong data: then result->complete is 1 and every result field is set;
 *   -ETIMEDOUT with result->stuck: the run hung (a GPU kernel past its watchdog, a
 *             comparison read that never returned): the message went through msg, the
 *             hung work still holds its memory, and the process must end.
 * An error of the back end's open (bam_ctx_open) is returned as it was, its message
 * prefixed with "--backend=STRING: ".
 *
 * Units: sizes in bytes, times in seconds unless the name says _ns/_us/_ms, rates per
 * second, bandwidth in bytes per second unless the name says MBps (10^6 bytes/s).
 */
#ifndef BAM_IOBENCH_H
#define BAM_IOBENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "bam/bam.h"
#include "bam/cache.h"

BAM_EXTERN_C_BEGIN

/* Messages of a run, one line each without a newline, for the caller to print or drop. */
enum bam_iobench_msg_kind {
	BAM_IOBENCH_MSG_NOTE,     /* what the run does next, a note on the options */
	BAM_IOBENCH_MSG_PROGRESS, /* every 2 s while the I/O runs (opts.progress) */
	BAM_IOBENCH_MSG_DEBUG,    /* with BAM_DEBUG set in the environment */
	BAM_IOBENCH_MSG_ERROR,    /* a failure that did not end the call (a comparison that
				   * could not run, its failed reads), or the hang of result.stuck */
};
/* Called from the calling thread, and for PROGRESS from a thread of the run's own. */
typedef void (*bam_iobench_msg_fn)(void *arg, enum bam_iobench_msg_kind kind, const char *text);

/* ---- bam_iobench_run --------------------------------------------------------------- */

#define BAM_IOBENCH_MAX_IODEPTH 65536 /* and at most the queue depth */

enum bam_iobench_rw {
	BAM_IOBENCH_READ,      /* blocks in order, each thread its own stride */
	BAM_IOBENCH_WRITE,
	BAM_IOBENCH_RANDREAD,  /* uniform random blocks */
	BAM_IOBENCH_RANDWRITE,
	BAM_IOBENCH_RANDRW,    /* random blocks, rwmix_read percent of them reads */
};

/* --compare: the same reads orchestrated by the CPU, with the file back end only */
#define BAM_IOBENCH_CMP_POSIX 1u /* host threads: pread, then a copy into target memory */
#define BAM_IOBENCH_CMP_URING 2u /* the disk's ceiling: io_uring readers into host memory */

#define BAM_IOBENCH_BASELINE_AUTO 2 /* opts.baseline: measured for reads only */

/* opts.prefill: whether the verification pattern is written over the region first */
enum bam_iobench_prefill {
	BAM_IOBENCH_PREFILL_NO = 0,    /* the media hold the pattern already (an earlier run
					* wrote it): verify against it, write nothing */
	BAM_IOBENCH_PREFILL_YES = 1,   /* write it: refused (-EINVAL) on a block device and on
					* a file holding other data (neither zeros nor the pattern) */
	BAM_IOBENCH_PREFILL_FORCE = 2, /* write it even there */
	BAM_IOBENCH_PREFILL_AUTO = 3,  /* the default: emulated media (BAM_BACKEND_F_MEDIA_MEMORY,
					* _MAPPED) get the pattern; storage (files, devices) is not
					* written: reads are checked against its content (CPU target,
					* files) or not at all (said in the result) */
};

/* How reads were checked (result.verify_mode) */
enum bam_iobench_verify {
	BAM_IOBENCH_VERIFY_OFF = 0,     /* not checked (result.verify_why says why) */
	BAM_IOBENCH_VERIFY_PATTERN = 1, /* every word against the LBA-derived pattern */
	BAM_IOBENCH_VERIFY_CONTENT = 2, /* every byte against the file's content, mapped read-only */
};

/* Percentiles reported (fio's default list), in result.*.pct_ns order:
 * const double pct[BAM_IOBENCH_NPCT] = BAM_IOBENCH_PCT; */
#define BAM_IOBENCH_NPCT 17
#define BAM_IOBENCH_PCT {1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99}

struct bam_iobench_opts {
	const char *backend;     /* back-end string (NULL: "emu"); one that creates media of
				  * a size the caller may choose gets size= for 'size' bytes */
	enum bam_target target;
	enum bam_iobench_rw rw;
	uint32_t rwmix_read;     /* percent of reads in RANDRW, 0..100 */
	uint64_t bs;             /* bytes per I/O: 512 B to 1 MiB, a multiple of 512 and of the LBA size */
	const char *bs_text;     /* bs as the caller wrote it, for messages (NULL: the number) */
	uint64_t size;           /* bytes of the region tested over all controllers, >= bs */
	uint64_t size_auto;      /* set by bam_iobench_opts_init: size is the default (0: given) */
	double runtime;          /* seconds to run after the ramp (0: until number_ios) */
	double ramp_time;        /* seconds run first and not counted (fio's ramp_time) */
	uint64_t number_ios;     /* I/Os in all (after the ramp), rounded up to a multiple of
				  * threads (0: see BAM_IOBENCH_DEFAULT_RUN when runtime is 0, else
				  * no count limit) */
	uint64_t threads;        /* GPU threads / CPU-target logical threads (0: 65536 GPU, 16 CPU) */
	uint32_t iodepth;        /* I/Os in flight per thread, 1..queue depth */
	uint32_t qpairs, queue_depth, ctrl_workers; /* bam_ctx_opts (0: the defaults) */
	uint64_t timeout_ms;     /* bound of each wait for a completion */
	uint64_t seed;
	int verify;              /* check the blocks read (how: result.verify_mode) */
	int prefill;             /* enum bam_iobench_prefill */
	int baseline;            /* 0, 1 or BAM_IOBENCH_BASELINE_AUTO */
	uint32_t compare;        /* BAM_IOBENCH_CMP_* (reads of the file back end only) */
	uint32_t posix_threads;  /* 0: the online CPUs, at most 64 */
	uint32_t uring_threads;  /* 0: 4, at most the online CPUs */
	uint32_t uring_qd;       /* reads in flight per io_uring thread (capped at 64 MiB of buffers) */
	int progress;            /* BAM_IOBENCH_MSG_PROGRESS every 2 s */
	bam_iobench_msg_fn msg;  /* NULL: messages are dropped */
	void *msg_arg;
	FILE *dump;              /* the queues' state after timeouts, a hang and with BAM_DEBUG
				  * (bam_ctx_dump); NULL: not written */
};

/* `bam bench`'s defaults: emu, randread, 4 KiB, iodepth 1, verify on, prefill AUTO, the
 * baseline for reads, a 5 s timeout, seed 1, 128 reads in flight per uring thread. The
 * region (size, with size_auto set): on the GPU target with emulated media in host
 * memory, 2x the GPU's memory (storage larger than GPU memory: its caches and address
 * translation do not hold it), at most half the available host memory, at least 1 GiB,
 * in whole GiB; else 1 GiB. */
void bam_iobench_opts_init(struct bam_iobench_opts *o);

/* The back-end string the run opens (opts.backend with size= added where it applies), as
 * bam_backend_sized gives it: for a caller that notes the media files the run may
 * create. 0, -EINVAL (the size passes 2^64 bytes; message in err) or -ENAMETOOLONG. */
int bam_iobench_backend(const struct bam_iobench_opts *o, char *out, size_t outlen, char *err, size_t errlen);

/* One CPU-orchestrated comparison (BAM_IOBENCH_CMP_*) */
struct bam_iobench_compare {
	int ran;
	const char *what;        /* what it measured, one sentence */
	uint32_t threads, qd;    /* as run (qd: uring only, after the memory cap) */
	uint64_t ios, bytes;
	double seconds, iops, MBps;
	uint64_t errors, verified, verify_failures; /* a sample of the blocks is verified */
	double ratio_iops, ratio_bw; /* bam / this: above 1, bam moved more */
	char first_error[160];   /* "" when no read failed */
};

/* The default length of a run without runtime and number_ios: the region once (size / bs
 * I/Os, fio's size-based default), at least 64 I/Os per thread, and at most this many
 * seconds (a runtime that applies then). */
#define BAM_IOBENCH_DEFAULT_RUN 10.0

/* One latency series, from a log-linear histogram (values within 0.8%) and exact
 * min/max/mean/stdev */
struct bam_iobench_lat {
	uint64_t n, min_ns, max_ns;
	double mean_ns, stdev_ns;
	uint64_t pct_ns[BAM_IOBENCH_NPCT]; /* at BAM_IOBENCH_PCT */
};

/* One direction's figures (reads, writes) */
struct bam_iobench_dir {
	uint64_t ios, bytes;
	double iops, MBps;            /* over result.seconds */
	struct bam_iobench_lat lat;   /* submission start to completion seen */
	struct bam_iobench_lat clat;  /* submission returned to completion seen */
	struct bam_iobench_lat slat;  /* the submission (bam_dev_io_submit_ex) */
};

/* What the I/O path holds of the GPU (GPU target) */
struct bam_iobench_gpu_use {
	int valid;
	uint32_t sms;                 /* the GPU's SMs */
	uint32_t max_warps_per_sm;
	uint32_t app_blocks, app_threads_per_block; /* the bench kernel's launch */
	uint32_t app_blocks_per_sm;   /* resident at once (occupancy) */
	uint32_t app_sms;             /* SMs the bench kernel's blocks occupy at once */
	uint32_t ctrl_blocks, ctrl_warps; /* the emulated controller's persistent kernel (0: none on the GPU) */
	uint32_t ctrl_sms;            /* SMs its blocks sit on (one block per SM, launched on an idle GPU) */
};

struct bam_iobench_result {
	int complete;            /* the run ended and every field below is set */
	int stuck;               /* see -ETIMEDOUT above */
	/* the configuration as run */
	char backend[1024];      /* bam_ctx_backend_desc */
	enum bam_target target;  /* GPU or CPU */
	uint64_t threads;        /* after defaults and the I/O count */
	uint32_t controllers, qpairs, queue_depth;
	uint64_t size;           /* the region, after the default */
	uint64_t number_ios;     /* the I/O count limit (0: none) */
	double runtime;          /* the time limit (0: none), after the default */
	int verify_mode;         /* enum bam_iobench_verify */
	char verify_why[256];    /* how or why not, one phrase */
	int prefilled;           /* the pattern was written over the region */
	char write_cache[160];   /* write runs: where writes landed before the Flush ("" reads) */
	/* the bam run (after the ramp) */
	uint64_t ios, reads, writes, bytes;
	double seconds, iops, MBps; /* seconds: the measured window, the Flush included */
	uint64_t ramp_ios;       /* I/Os of the ramp, not in the figures */
	uint64_t verified;       /* blocks checked */
	struct bam_iobench_dir dir[2]; /* [0] reads, [1] writes */
	uint64_t flushes, flush_errors; /* Flush commands after a write run (one per controller) */
	double flush_seconds;    /* the longest Flush: in seconds (the run's end) */
	uint64_t lat_p50_ns, lat_p99_ns, lat_p999_ns; /* lower bounds of log-linear buckets */
	double submit_mean_us;   /* of the latency, the submission's share (mean) */
	uint64_t errors;         /* completions with a non-zero NVMe status */
	uint64_t timeouts;
	uint64_t verify_failures;
	uint16_t first_status;   /* the first non-zero NVMe status (nvme_status_name) */
	uint64_t commands, submitted, doorbells, injected, late; /* bam_ctrl_stats, summed */
	/* the limit of the data's path, measured in the same run */
	int baseline;            /* 1 when measured */
	const char *baseline_what;  /* what the kernel (or host threads) did */
	const char *baseline_limit; /* the limit's name, e.g. "PCIe read of pinned host memory" */
	uint64_t baseline_region;   /* bytes it read over (random bs chunks) */
	uint32_t baseline_inflight; /* independent loads in flight per thread */
	double baseline_chunks_per_s, baseline_bps, baseline_ratio_bw; /* ratio: bam / baseline */
	double copy_engine_bps;  /* GPU target, host media: cudaMemcpy host to device (0: not measured) */
	double hbm_bps;          /* GPU target: the HBM read bandwidth (0: not measured) */
	struct bam_iobench_gpu_use gpu;
	/* compare[0] posix, compare[1] uring */
	uint32_t compare_files, compare_direct_files; /* files read, of those with O_DIRECT */
	struct bam_iobench_compare compare[2];
};

/* Run the I/O benchmark. 0 or a negative errno (above); err: errlen bytes. */
int bam_iobench_run(const struct bam_iobench_opts *o, struct bam_iobench_result *r, char *err, size_t errlen);

/* ---- bam_arraybench_run -------------------------------------------------------------- */

enum bam_arraybench_pattern {
	BAM_ARRAYBENCH_HOT,    /* a working set inside the cache, swept: hit bandwidth */
	BAM_ARRAYBENCH_RANDOM, /* one random element per thread per step: misses */
	BAM_ARRAYBENCH_WARP,   /* 32 consecutive elements of a random line per warp: coalescing */
	BAM_ARRAYBENCH_SCAN,   /* the hot working set read line by line through line handles */
	BAM_ARRAYBENCH_RANDWRITE, /* one random element written per thread per step (a partial
				   * write: a miss fetches its line); the flush is timed */
	BAM_ARRAYBENCH_RMW,    /* one random element read-modify-written (atomic add) per
				* thread per step; the flush is timed */
};

struct bam_arraybench_opts {
	const char *backend;     /* as bam_iobench_opts.backend, sized to the array and a line */
	enum bam_target target;
	enum bam_arraybench_pattern pattern;
	uint64_t size;           /* array bytes, u64 elements: a multiple of 8, at least 4096 */
	uint64_t cache_bytes;    /* capped at the array's lines and one more (at least 1 MiB) */
	const char *cache_text;  /* cache_bytes as the caller wrote it, for messages (NULL: the number) */
	uint32_t line_size;      /* a power of two, 512..65536 */
	int coalesce;            /* warp coalescing (GPU; a CPU-target warp is one thread) */
	uint64_t threads;        /* 0: 262144 GPU, 16 CPU */
	uint64_t steps;          /* reads per thread (0: 64 GPU, 20000 CPU) */
	uint64_t working_set;    /* bytes swept by HOT and SCAN (0: half the cache) */
	uint32_t ctrl_workers;
	uint64_t timeout_ms;     /* 0: the library's default */
	bam_iobench_msg_fn msg;
	void *msg_arg;
};

/* `bam bench --array`'s defaults: emu, random, 1 GiB array, 64 MiB cache of 4 KiB lines,
 * coalescing on. */
void bam_arraybench_opts_init(struct bam_arraybench_opts *o);

/* The back-end string the run opens, as bam_iobench_backend. */
int bam_arraybench_backend(const struct bam_arraybench_opts *o, char *out, size_t outlen, char *err, size_t errlen);

struct bam_arraybench_result {
	int complete;            /* the run ended and every field below is set */
	char backend[1024];
	enum bam_target target;
	uint64_t cache_bytes;    /* as run */
	int capped;              /* cache_bytes was capped at the array's lines */
	uint64_t threads, steps;
	double seconds;
	double element_reads;    /* SCAN: every element of each line taken */
	double element_reads_per_s;
	double requested_bps;    /* bytes the threads asked for (SCAN: read from whole lines) */
	double miss_iops;
	struct bam_array_stats stats;
	uint64_t wrong_values, errors, reads_not_attempted; /* after a timeout the run stops */
	double hbm_bps;          /* GPU target, HOT and SCAN: HBM read bandwidth (0: not measured) */
	int err_on_stderr;       /* the library already said err's cause on stderr */
	/* RANDWRITE, RMW: the flush after the kernel (in seconds_with_flush), the storage
	 * writes (stats.c.bytes_written, writebacks: evictions and flush), and the writes
	 * through the array per second with the flush counted (never a cache rate) */
	double flush_seconds, seconds_with_flush;
	double writes_per_s;     /* element writes / seconds_with_flush */
	double storage_write_iops; /* line write-backs / seconds_with_flush */
};

/* Run the array benchmark. 0 or a negative errno (above); -EIO with complete set for
 * wrong values or failed reads. */
int bam_arraybench_run(const struct bam_arraybench_opts *o, struct bam_arraybench_result *r, char *err,
		       size_t errlen);

BAM_EXTERN_C_END

#endif /* BAM_IOBENCH_H */
