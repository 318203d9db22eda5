/* SPDX-License-Identifier: MIT */
/*
 * bam/backend.h - how a storage back end ("controller" provider) plugs in: one
 * const ops table found by name (like SPDK's transports). The back ends built into
 * libbam are one folder each, src/backends/<name>/, whose backend.cmake names its ops
 * table; the build generates the table of built-in back ends from the folders, so
 * adding one touches no core file and a program linking libbam finds them all (no
 * constructors, no whole-archive linking). A program registers back ends of its own
 * with bam_backend_register (docs/BACKENDS.md).
 *
 * The core owns the queue memory (as an NVMe driver does) and talks to each
 * controller through admin commands (Identify, Create I/O CQ/SQ: Base spec 5.4, 5.5,
 * 5.17) and doorbell addresses; the back end owns whatever consumes the SQEs.
 */
#ifndef BAM_BACKEND_H
#define BAM_BACKEND_H

#include "bam/defs.h"
#include "bam/bam.h"

BAM_EXTERN_C_BEGIN

/* What a back-end string asks for, as its back end's own parser reads it, with nothing
 * opened, created or allocated (bam_backend_info). */
struct bam_backend_info {
	char name[16];     /* the back end's registered name, e.g. "emu", "file" */
	uint32_t n_ctrl;   /* controllers the open would create (emu's count=, file's paths) */
	uint64_t size;     /* bytes of each controller's namespace the string fixes (size=);
			    * 0: the open decides (the file's size, or the back end's default) */
	uint32_t lba_size; /* bytes per LBA the string fixes (lba=); 0: the open decides */
	uint32_t flags;    /* BAM_BACKEND_F_* */
};
/* The media live in memory: zero-filled at the open, gone at the close (emu's dram and
 * gpu media). Without it the media are files or devices that outlive the run, and a
 * write reaches them (file, emu media=file). */
#define BAM_BACKEND_F_MEDIA_MEMORY (1u << 0)
/* The media are in GPU memory (emu media=gpu); with BAM_BACKEND_F_MEDIA_MEMORY. */
#define BAM_BACKEND_F_MEDIA_GPU    (1u << 1)
/* The media are memory-mapped files: one cut short under the run raises SIGBUS. */
#define BAM_BACKEND_F_MEDIA_MAPPED (1u << 2)
/* The open creates its media at a size a tool may choose: the string gives no size= and
 * names no existing media, so bam_backend_sized may add size=. */
#define BAM_BACKEND_F_SIZABLE      (1u << 3)
/* The media are a real device whose data a write destroys (nvme): nothing may write
 * unless the string grants it (BAM_BACKEND_F_WRITE_ALLOWED). A tool refuses a workload
 * that writes (bench writes, array writes, placing a graph) without it, and the back
 * end's provisioning path refuses writes with -EPERM. */
#define BAM_BACKEND_F_WRITE_GUARDED (1u << 4)
/* The string grants writes (nvme's allow_write=1; the CLI's --allow-write adds it). */
#define BAM_BACKEND_F_WRITE_ALLOWED (1u << 5)

struct bam_backend_ops {
	const char *name; /* the back-end string's prefix, e.g. "emu" */
	/* Where the core puts the SQ and CQ rings: BAM_MEM_DEVICE (GPU memory: a
	 * controller that reads them by DMA or runs on the GPU) or BAM_MEM_HOST_PINNED
	 * (a host-side service reads SQEs and writes CQEs). */
	enum bam_mem_kind queue_mem;
	/* 1 when, on the GPU target, the controller itself runs on the GPU (the emulator's
	 * persistent kernel): doorbells and CQEs then only need GPU-scope ordering. 0 for
	 * anything outside the GPU (a device's DMA engine, a host service): system scope. */
	uint32_t gpu_resident;
	/* Parse 'args' (the text after "name:", may be ""), create the controllers.
	 * Sets *priv and *n_ctrl. Returns 0 or a negative errno with a message in err. */
	int (*open)(struct bam_ctx *ctx, const char *args, void **priv, uint32_t *n_ctrl,
		    char *err, size_t errlen);
	/* Optional: parse 'args' as open would, touching nothing (no file opened or
	 * created, no memory kept). 0, or -EINVAL with the message open would give. */
	int (*check)(const char *args, char *err, size_t errlen);
	/* Execute one admin command synchronously on controller c (the admin queue of a
	 * real controller; 'data' is a 4096-byte host buffer for Identify). Fills *cqe. */
	int (*admin)(void *priv, uint32_t c, const struct nvme_sqe *sqe, void *data,
		     struct nvme_cqe *cqe);
	/* Address of the SQ tail (cq = 0) or CQ head (cq = 1) doorbell of queue qid,
	 * reachable by the submitting threads. */
	uint32_t *(*doorbell)(void *priv, uint32_t c, uint32_t qid, int cq);
	/* Start consuming commands (after all I/O queues exist). */
	int (*start)(void *priv);
	/* Stop consuming; outstanding commands may be dropped. */
	void (*stop)(void *priv);
	/* Provisioning path (bam_ctx_media_write/read). */
	int (*media_rw)(void *priv, uint32_t c, uint64_t off, void *buf, uint64_t len, int write);
	int (*stats)(void *priv, uint32_t c, struct bam_ctrl_stats *out);
	/* Optional: print the controller-side state of controller c's queues. */
	void (*dump)(void *priv, uint32_t c, FILE *f);
	/* Normalised description of the back end (owned by priv). */
	const char *(*desc)(void *priv);
	void (*close)(void *priv);
	/* Optional: parse 'args' as check does, and call cb once per file or device that
	 * open would take as a controller's media, in controller order (stop at cb's
	 * non-zero return and return it). 0, or -EINVAL with the message open would give.
	 * (Added after the others: a back end built against an older bam/backend.h has no
	 * such field and must be rebuilt.) */
	int (*media)(const char *args, int (*cb)(void *arg, const char *path), void *arg, char *err,
		     size_t errlen);
	/* Optional: parse 'args' as check does and describe what the open would create in
	 * *out (name filled in by the caller). 0, or -EINVAL with the message open would
	 * give. Without it, bam_backend_info reports one controller, sizes 0 and no flags. */
	int (*info)(const char *args, struct bam_backend_info *out, char *err, size_t errlen);
	/* Optional (a controller reached by DMA through an IOMMU, nvme): the memory of the
	 * context's target (bam_mem_alloc) comes from the back end, so that every buffer,
	 * ring and PRP list the core and the applications allocate is in the controller's
	 * DMA address space at the address the device-side code puts in PRPs (its pointer).
	 * mem_alloc: 0 and *out (4 KiB aligned, zeroed), -ENOENT to let the core allocate
	 * as usual, or another negative errno (the allocation fails). mem_free: 0 when p was
	 * the back end's, -ENOENT otherwise. Called only between open and close. */
	int (*mem_alloc)(void *priv, enum bam_mem_kind kind, uint64_t bytes, void **out);
	int (*mem_free)(void *priv, enum bam_mem_kind kind, void *p);
	/* Optional: the namespace the core identifies and uses on controller c (default 1)
	 * and the controller's maximum queue entries (CAP.MQES + 1; default from Identify
	 * Controller's MAXCMD). */
	void (*ns_params)(void *priv, uint32_t c, uint32_t *nsid, uint32_t *mqes);
};

/* Register a back end of the program's own, at run time (ops must outlive its use).
 * Returns 0, -EEXIST (name taken, by a built-in back end or an earlier registration)
 * or -ENOSPC (16 registered already). */
BAM_API int bam_backend_register(const struct bam_backend_ops *ops);
/* Look up by name (the first len bytes of name): the built-in back ends, then the
 * registered ones; NULL if none. */
BAM_API const struct bam_backend_ops *bam_backend_find(const char *name, size_t len);

/* The files and devices the back-end string 'backend' ("name[:key=value,...]", as for
 * bam_ctx_open) names as its controllers' media, parsed by the back end's own parser so
 * a tool sees exactly what the open would write (a tool that must not overwrite its own
 * input checks them before the open): cb(arg, path) once per path, in controller order;
 * a back end without media files (in-memory media, or none registered with this
 * operation) calls it for none. path is a NUL-terminated file name, valid during the
 * call only. Opens and creates nothing. Returns 0, cb's first non-zero return, or
 * -EINVAL (unknown back end, malformed string: the message in err, errlen bytes at most,
 * which may be NULL). Which paths emu and file list: docs/BACKENDS.md. */
BAM_API int bam_backend_media(const char *backend, int (*cb)(void *arg, const char *path), void *arg, char *err,
			      size_t errlen);

/* Describe what the back-end string 'backend' ("name[:key=value,...]", as for
 * bam_ctx_open; NULL or "" = "emu") asks for, parsed by its back end's own parser:
 * controllers, namespace and LBA sizes it fixes, where its media live. Opens and creates
 * nothing. Returns 0, or -EINVAL (unknown back end, malformed string: the message in err,
 * errlen bytes at most; err may be NULL). */
BAM_API int bam_backend_info(const char *backend, struct bam_backend_info *out, char *err, size_t errlen);

/* The back-end string to open for 'total' bytes of data spread over its controllers:
 * 'backend' with ",size=PER" (or ":size=PER") added when its back end creates media of a
 * size the caller may choose (BAM_BACKEND_F_SIZABLE), PER = ceil(total / controllers)
 * rounded up to a whole multiple of both 'align' (a line, a block; 0 = 1) and 4096 bytes
 * (a multiple of any LBA size); otherwise 'backend' unchanged. Written to out (outlen
 * bytes). Returns 0; -EOVERFLOW when PER passes 2^64; -ENAMETOOLONG when out is too
 * short; -EINVAL for a string bam_backend_info refuses (message in err, may be NULL). */
BAM_API int bam_backend_sized(const char *backend, uint64_t total, uint64_t align, char *out, size_t outlen,
			      char *err, size_t errlen);

/* Option parsing helpers for back ends: "k=v,k=v". Calls cb for each pair; stops and
 * returns cb's non-zero return. Keys and values are NUL-terminated copies. */
BAM_API int bam_kv_parse(const char *args, int (*cb)(void *arg, const char *k, const char *v), void *arg);
/* Parse a size with optional suffix K, M, G, T (powers of 1024). -EINVAL if bad. */
BAM_API int bam_parse_size(const char *s, uint64_t *out);

BAM_EXTERN_C_END

#endif /* BAM_BACKEND_H */
