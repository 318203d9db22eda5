/* SPDX-License-Identifier: MIT */
/*
 * bam/bam.h - the host API: open storage through a back end, get queue pairs that GPU
 * (or CPU-target) threads drive, move data on and off the media, read statistics.
 *
 * A context ('struct bam_ctx') owns: the target the kernels run on (GPU or host
 * threads), one or more NVMe controllers opened from a back-end string, and for each
 * controller a number of I/O queue pairs (struct bam_qpair, bam/detail/qpair.h) in memory
 * the submitting threads reach. The device-side view of all of it is a 'struct
 * bam_dev' (bam/dev.h) that kernels take as an argument.
 *
 * Errors: every function returning int returns 0 or a negative errno. The message of
 * the last error on a context is in bam_ctx_error().
 */
#ifndef BAM_BAM_H
#define BAM_BAM_H

#include "bam/defs.h"
#include <stdio.h>
#include "bam/nvme_spec.h"
#include "bam/stats.h"

BAM_EXTERN_C_BEGIN

/* Where kernels run: GPU threads (nvcc build on a machine with a GPU) or host threads
 * (the CPU target: always available; what CI runs). */
enum bam_target {
	BAM_TARGET_AUTO = 0, /* GPU when one is present and the build has CUDA, else CPU */
	BAM_TARGET_CPU = 1,
	BAM_TARGET_GPU = 2,
};

/* Options for bam_ctx_open(). Zero-initialise and set what you need; 0 = default. */
struct bam_ctx_opts {
	enum bam_target target;
	uint32_t qpairs;        /* I/O queue pairs per controller; default 16 (CPU), 128 (GPU) */
	uint32_t queue_depth;   /* entries per SQ and CQ, power of two, <= CAP.MQES+1; default 1024 (GPU), 256 (CPU) */
	uint64_t timeout_ns;    /* bound of every wait for a completion; default 5 s */
	uint32_t ctrl_workers;  /* emu/file: controller workers per controller (threads on the
				 * CPU target, warps on the GPU); 0 = back-end default */
	int quiet;              /* no warnings on stderr (a refused or failed call still says
				 * why there, and in bam_ctx_error) */
};

struct bam_ctx;
struct bam_dev;

/* Namespace facts of one controller, from Identify (Base spec 5.17.2.1). */
struct bam_ns_info {
	uint64_t nlba;          /* namespace size, logical blocks */
	uint32_t lba_size;      /* bytes per logical block (512 or 4096) */
	uint32_t nsid;          /* namespace id used (1) */
	uint32_t mqes;          /* CAP.MQES + 1: maximum queue entries */
	uint32_t mdts_bytes;    /* maximum transfer per command, bytes (0 = no limit) */
	char model[41];         /* Identify Controller MN, NUL-terminated */
};

/*
 * Open a context on the storage a back-end string names:
 *   "emu[:k=v,...]"   the emulated NVMe controller (default back end), e.g.
 *                     "emu:profile=optane-p5800x,count=4,size=8G,lba=512,media=dram"
 *                     (docs/BACKENDS.md lists every key)
 *   "file:PATH[,PATH...][,k=v]" files or block devices through io_uring
 * A NULL or empty string means "emu". Returns 0 and *out, or:
 *   -EINVAL  malformed string, unknown back end or key, bad option value;
 *   -ENOMEM  memory for queues or media could not be allocated;
 *   -ENODEV  target GPU asked for but no GPU / no CUDA in this build;
 *   -EIO     a controller failed to initialise (message in *err when err != NULL).
 * 'err' (may be NULL) receives a one-line message of errlen bytes at most.
 */
BAM_API int bam_ctx_open(const char *backend, const struct bam_ctx_opts *opts,
			 struct bam_ctx **out, char *err, size_t errlen);

/* Parse a back-end string ("name[:key=value,...]", docs/BACKENDS.md) as bam_ctx_open
 * would, opening, creating and allocating nothing: for a tool to refuse a bad --backend
 * before long work. Returns 0 or -EINVAL (unknown back end or key, bad value, malformed
 * string; the message bam_ctx_open would give in err, which may be NULL). Checks that need the open (files, memory,
 * the GPU) are bam_ctx_open's. A back end registered without such a check passes. */
BAM_API int bam_backend_check(const char *backend, char *err, size_t errlen);

/* Stop the controllers' workers, free every resource. NULL is accepted. */
BAM_API void bam_ctx_close(struct bam_ctx *ctx);

/* Target the context runs kernels on (never BAM_TARGET_AUTO). */
BAM_API enum bam_target bam_ctx_target(const struct bam_ctx *ctx);
/* Number of controllers (e.g. 'count=' of emu, number of files of file:). */
BAM_API uint32_t bam_ctx_ctrl_count(const struct bam_ctx *ctx);
/* Queue pairs per controller and their depth, as opened. */
BAM_API uint32_t bam_ctx_qpairs(const struct bam_ctx *ctx);
BAM_API uint32_t bam_ctx_queue_depth(const struct bam_ctx *ctx);
BAM_API uint64_t bam_ctx_timeout_ns(const struct bam_ctx *ctx);
/* Namespace facts of controller i (0-based). -EINVAL if i is out of range. */
BAM_API int bam_ctx_ns_info(const struct bam_ctx *ctx, uint32_t i, struct bam_ns_info *out);
/* The back-end string, normalised with defaults (e.g. "emu:profile=unlimited,count=1,..."). */
BAM_API const char *bam_ctx_backend_desc(const struct bam_ctx *ctx);
/* Last error message on this context ("" if none). */
BAM_API const char *bam_ctx_error(const struct bam_ctx *ctx);

/* The first failure the context's kernels recorded (bam_dev_record_error: sticky until
 * cleared): *err the positive errno (0: none), *nvme_status the first non-zero NVMe
 * status (Status Code Type << 8 | Status Code, as nvme_status_name takes it; 0: none),
 * *n_errors the failures recorded. Each pointer may be NULL. clear != 0: reset them
 * afterwards (call it while no kernel of the context runs). Returns 0 or -EIO. */
BAM_API int bam_ctx_io_error(struct bam_ctx *ctx, int clear, int *err, uint32_t *nvme_status, uint64_t *n_errors);

/* Device-side view: a pointer valid in kernels of this context's target (device memory
 * on the GPU, host memory on the CPU target). Owned by the context. */
BAM_API struct bam_dev *bam_ctx_dev(struct bam_ctx *ctx);

/*
 * Provisioning path, outside the GPU control path: write/read 'len' bytes at byte
 * offset 'off' of controller i's namespace directly on the media (like dd onto an SSD
 * before a run). Host buffers. 'off' and 'len' need no alignment.
 * Returns 0, -EINVAL (i out of range), -ERANGE (beyond the namespace), -EIO.
 */
BAM_API int bam_ctx_media_write(struct bam_ctx *ctx, uint32_t i, uint64_t off, const void *buf, uint64_t len);
BAM_API int bam_ctx_media_read(struct bam_ctx *ctx, uint32_t i, uint64_t off, void *buf, uint64_t len);

/* Per-controller statistics, summed over its queue pairs and its workers. */
struct bam_ctrl_stats {
	uint64_t cmds;          /* commands the controller executed */
	uint64_t reads, writes, flushes;
	uint64_t bytes_read, bytes_written; /* bytes moved to/from the media */
	uint64_t errors;        /* CQEs with a non-zero status */
	uint64_t injected;      /* faults injected (errors + delays + drops) */
	struct bam_qpair_counters qp; /* host-side queue counters, summed */
};
BAM_API int bam_ctx_ctrl_stats(struct bam_ctx *ctx, uint32_t i, struct bam_ctrl_stats *out);

/* ---- memory of the context's target ---------------------------------------- */

enum bam_mem_kind {
	BAM_MEM_DEVICE = 0,  /* GPU memory (cudaMalloc); host memory on the CPU target */
	BAM_MEM_HOST_PINNED, /* pinned, GPU-mapped host memory; plain host memory on CPU */
};
/* Allocate 'bytes' (aligned to 4096), zero-filled. NULL on failure. */
BAM_API void *bam_mem_alloc(struct bam_ctx *ctx, enum bam_mem_kind kind, uint64_t bytes);
BAM_API void bam_mem_free(struct bam_ctx *ctx, enum bam_mem_kind kind, void *p);
/* Bytes of 'kind' memory (bam_mem_alloc) the target can still allocate, now, in
 * *bytes: BAM_MEM_DEVICE on the GPU target = free GPU memory (cudaMemGetInfo); every
 * other case = host memory: MemAvailable of /proc/meminfo (the physical memory when it
 * has none), capped by the process's cgroup memory limit. Returns 0, -EINVAL (target
 * BAM_TARGET_AUTO), -ENODEV (GPU target without CUDA or GPU), -ENOSYS (cannot be told). */
BAM_API int bam_mem_available(enum bam_target target, enum bam_mem_kind kind, uint64_t *bytes);
/* 1 when this build has CUDA and a usable GPU is present (what BAM_TARGET_AUTO picks),
 * else 0 (always 0 in a build without CUDA: BAM_BUILT_WITH_CUDA in the installed
 * bam/version.h, generated by the build). With
 * CUDA it sets the device flags the library needs: call it before other CUDA work of
 * the application. */
BAM_API int bam_gpu_available(void);
/*
 * GPU target: when the GPU-resident controller workers (the emulated controller's
 * persistent kernel) run. By default they run from bam_ctx_open to bam_ctx_close, and
 * anything that waits for the whole device meanwhile waits for them forever: the
 * library pauses them around its own such calls (allocations), but not around another
 * library's (PyTorch's cudaFree, torch.cuda.synchronize(), lazy module loads).
 * bam_gpu_workers_on_demand(1) (process-wide; the Python package sets it) runs them
 * only while a hold is taken: the library's own kernel calls (bam_array_gather, _read,
 * _write, bam_cache_flush) hold them for their duration, and an application that
 * launches kernels of its own on bam arrays takes a hold around them
 * (bam_gpu_workers_hold / _release, counted). Between holds no bam kernel runs, so any
 * other CUDA call is safe; each hold costs a launch of the workers and their return
 * (tens of microseconds). Without CUDA these do nothing and return 0.
 * Returns 0 or -EIO (the workers could not be started or stopped).
 */
BAM_API int bam_gpu_workers_on_demand(int on);
BAM_API int bam_gpu_workers_hold(void);
BAM_API void bam_gpu_workers_release(void);

/* Copy between host memory and memory from bam_mem_alloc (any direction). 0 or -EIO. */
BAM_API int bam_mem_copy(struct bam_ctx *ctx, void *dst, const void *src, uint64_t bytes);
/* Set bytes. 0 or -EIO. */
BAM_API int bam_mem_set(struct bam_ctx *ctx, void *dst, int c, uint64_t bytes);

/* ---- CPU target "kernels" ------------------------------------------------------ */

/* Run fn(arg, tid) for tid in [0, nthreads) on 'nworkers' host threads (0 = one per
 * logical thread, at most 1024). Each host thread runs its logical threads one after
 * another (with one worker: the calling thread itself); blocks until all return.
 * Returns 0 or -ENOMEM/-EAGAIN (thread creation). */
BAM_API int bam_cpu_launch(uint64_t nthreads, uint32_t nworkers,
			   void (*fn)(void *arg, uint64_t tid), void *arg);

/* Print the state of every queue pair (tail, heads, credits, counters) and of the
 * back end's queues to f: for diagnosing a stalled controller. */
BAM_API void bam_ctx_dump(struct bam_ctx *ctx, FILE *f);

/* The library's version, "MAJOR.MINOR.PATCH" (BAM_VERSION_STRING of the build that made
 * it; a program compiled against other headers can compare). */
BAM_API const char *bam_version(void);

/* Human name of a negative errno as this library uses it ("timed out" etc.). */
BAM_API const char *bam_strerror(int err);

BAM_EXTERN_C_END

#endif /* BAM_BAM_H */
