/* SPDX-License-Identifier: MIT */
/* Internal layout of a context; shared by the core and the back ends in this tree. */
#ifndef BAM_CTX_INTERNAL_H
#define BAM_CTX_INTERNAL_H

#include "bam/bam.h"
#include "bam/backend.h"
#include "bam/dev.h"
#include <pthread.h>

struct deferred_free;

struct bam_ctx_qmem {
	/* host-side record of each queue pair's allocations (device or host memory) */
	void *qp;     /* struct bam_qpair */
	void *sq, *cq, *turn, *mark, *consumed, *cid;
};

struct bam_ctx {
	enum bam_target target;
	struct bam_ctx_opts opts;
	const struct bam_backend_ops *ops;
	void *priv;
	uint32_t n_ctrl;
	struct bam_ns_info ns[BAM_MAX_CTRLS];
	struct bam_ctx_qmem *qmem;       /* [n_ctrl * qpairs] */
	struct bam_qpair **qps_dev;      /* [n_ctrl] arrays of qpairs (target memory) */
	struct bam_dev host_dev;         /* host copy of the device view */
	struct bam_dev *dev;             /* target copy */
	int started;
	char desc[1280];
	char errmsg[512];
	/* memory freed at close, after the controllers stopped (bam_ctx_defer_free) */
	struct deferred_free *deferred;
	pthread_mutex_t deferred_lock;
};

/* Free p (from bam_mem_alloc) in bam_ctx_close, after the controllers have stopped:
 * memory a controller may still write into (a command whose completion never came). */
void bam_ctx_defer_free(struct bam_ctx *ctx, enum bam_mem_kind kind, void *p);

/* What a file of this st_mode (fstat) is, for a message that refuses it: "a
 * character device", "a FIFO", ... (src/core/backend.c). */
const char *bam_file_kind(unsigned mode);
/* What to add to "PATH: strerror(e)" when a media file could not be opened (e: the
 * errno of the open; creating: it was an O_CREAT open, i.e. size= was given and the
 * file did not exist): "" or " (...)" naming the cause and a fix that works, e.g. the
 * missing folder ("create it first") rather than "give size=" (src/core/backend.c). */
/* Take the lock on a media file or block device open as fd (an OFD lock on the whole
 * file, fcntl F_OFD_SETLK: tied to this open file description, so it holds until fd
 * is closed and also keeps out a second open in this process): exclusive (F_WRLCK)
 * when writable, shared (F_RDLCK) when fd is read-only, so two read-only users may
 * share it but never a writer with anyone. 0, or -EBUSY with err saying "PATH is in
 * use by ..." with the pid and name of each other process that has it open (found in
 * /proc/PID/fd; OFD locks report no pid), or another negative errno (src/core/backend.c). */
int bam_media_lock(int fd, int writable, const char *who, const char *path, char *err, size_t errlen);
void bam_media_open_hint(const char *path, int e, int creating, char *buf, size_t len);
/* The back ends: the built-in ones, NULL-terminated, in the order of their folders
 * (backends_builtin.c, generated from src/backends/<name>/backend.cmake), and the name
 * of the one bam_ctx_open takes for NULL or "" (CMake's BAM_DEFAULT_BACKEND). */
extern const struct bam_backend_ops *const bam_backends_builtin[];
extern const char bam_backend_default[];
/* The back ends' names, ", "-separated, built-in ones then those registered at run time
 * in registration order, into buf. */
void bam_backend_names(char *buf, size_t len);

/* GPU runtime hooks (src/core/gpu_rt.c), compiled only with CUDA. Those marked BAM_API
 * are exported from the shared library for the apps' GPU code (apps/graph), which
 * allocates through them so the emulator's workers are paused around the allocation;
 * they are not API (no header under include/ declares them). */
int bam_gpu_available(void);
BAM_API void *bam_gpu_alloc(enum bam_mem_kind kind, uint64_t bytes);
BAM_API void bam_gpu_free(enum bam_mem_kind kind, void *p);
int bam_gpu_copy(void *dst, const void *src, uint64_t bytes);
BAM_API int bam_gpu_memset(void *dst, int c, uint64_t bytes);
/* Copy streams for host services (the file back end's workers): copies queued on a
 * stream of the caller's own (no library lock), one synchronisation per batch. */
void *bam_gpu_stream_new(void);
int bam_gpu_copy_on(void *stream, void *dst, const void *src, uint64_t bytes);
int bam_gpu_stream_wait(void *stream);
void bam_gpu_stream_free(void *stream);
/* Events marking the end of a batch of copies on such a stream: query returns 0 when
 * the copies before the record are complete, 1 while they are not, -EIO on a CUDA
 * error; wait blocks until complete (0 or -EIO). */
void *bam_gpu_event_new(void);
int bam_gpu_event_record(void *ev, void *stream);
int bam_gpu_event_query(void *ev);
int bam_gpu_event_wait(void *ev);
void bam_gpu_event_free(void *ev);
/* Persistent kernels register pause/resume hooks; calls that synchronise the device
 * run between bam_gpu_pause_all() and bam_gpu_resume_all() (nestable). */
void bam_gpu_pauser_add(void *arg, int (*pause)(void *), int (*resume)(void *));
void bam_gpu_pauser_remove(void *arg);
BAM_API void bam_gpu_pause_all(void);
BAM_API void bam_gpu_resume_all(void);
int bam_gpu_workers_is_on_demand(void);
int bam_gpu_lazy_loading(void);
/* the library's kernels, loaded before any persistent kernel starts (xfer_gpu.cu,
 * cache_gpu.cu) */
int bam_xfer_gpu_prepare(void);
int bam_cache_gpu_prepare(void);

#endif
