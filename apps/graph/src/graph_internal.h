/* SPDX-License-Identifier: MIT */
/*
 * graph_internal.h - helpers shared by the graph I/O sources (not installed): error
 * messages, full pread/pwrite, the temp-file-then-rename output protocol, the file
 * layout, the chunked CSR builder used by the importers and the Kronecker generator,
 * and the splitmix64 generator.
 */
#ifndef BAM_GRAPH_INTERNAL_H
#define BAM_GRAPH_INTERNAL_H

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "bam/graph.h"

#if defined(__GNUC__)
#define GR_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GR_PRINTF(a, b)
#endif

/* Write a formatted message into err[errlen] (no-op when err is NULL or errlen 0). */
void gr_err(char *err, size_t errlen, const char *fmt, ...) GR_PRINTF(3, 4);

/* Monotonic clock in seconds. */
double gr_now(void);

/* pread/pwrite the whole range, looping over short transfers and EINTR.
 * pread: -EIO on a read error or early end of file; pwrite: -errno. */
int gr_pread_full(int fd, void *buf, uint64_t len, uint64_t off);
int gr_pwrite_full(int fd, const void *buf, uint64_t len, uint64_t off);

/* zlib crc32 over a 64-bit length (zlib takes 32-bit lengths). */
uint32_t gr_crc32(uint32_t crc, const void *buf, uint64_t len);

/* Online CPUs (>= 1) and the default edge-buffer size (1/4 of RAM, >= 64 MiB). */
unsigned gr_default_threads(void);
uint64_t gr_default_mem_limit(void);

/* Run fn(arg, t) for t = 0..nthreads-1, t = 0 on the calling thread. */
void gr_parallel(unsigned nthreads, void (*fn)(void *arg, unsigned t), void *arg);

/* Layout of a file with n vertices, m edges, id_bytes: fills the offset/size fields of h
 * and returns the file size (padded to BAM_GRAPH_ALIGN). */
uint64_t gr_layout(struct bam_graph_header *h, uint64_t n, uint64_t m, uint32_t id_bytes);

/* Fill magic/version/flags/crcs/source of h (layout already set) and its header crc. */
void gr_header_finish(struct bam_graph_header *h, uint32_t flags, uint32_t offsets_crc,
		      uint32_t edges_crc, const char *source);

/* crc32 of the header with its header_crc32 field taken as zero. */
uint32_t gr_header_crc(const struct bam_graph_header *h);

/* An existing `output` must be a regular file: the rename would replace a device node,
 * FIFO, socket or symbolic link with a file (and fail on a directory). Also what the
 * rename at the end would refuse: a path past PATH_MAX or a name past NAME_MAX
 * (-ENAMETOOLONG), a name ending in '/' (-EEXIST), a folder we cannot write in (-errno
 * of access). 0 or those. */
int gr_output_check(const char *output, char *err, size_t errlen);
/* The output protocol: create an unnamed file (O_TMPFILE; tmp_path left empty) in
 * output's directory, or where that is not possible a named one, DIR/.tmp.bam.XXXXXX
 * (tmp_path); mode 0666 & ~umask. Calls gr_output_check first. */
int gr_tmp_create(const char *output, char *tmp_path, size_t tmp_len, int *fd, char *err,
		  size_t errlen);
/* Truncate to file_size, fsync, name an unnamed file (linkat through /proc/self/fd),
 * close, rename to output, fsync the directory. On error the temp file is removed. fd
 * is closed in every case. */
int gr_tmp_commit(int fd, const char *tmp_path, const char *output, uint64_t file_size,
		  char *err, size_t errlen);
/* Close fd (if >= 0) and unlink tmp_path (if non-empty). */
void gr_tmp_abort(int fd, const char *tmp_path);

/* splitmix64 (Steele, Lea, Flood 2014): the finaliser and the stream step. */
static inline uint64_t gr_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static inline uint64_t gr_splitmix64(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return gr_mix64(*state);
}
/* Uniform in [0, bound), bound > 0, unbiased (Lemire's multiply-and-reject). */
uint64_t gr_uniform(uint64_t *state, uint64_t bound);

/* Sort a neighbour list ascending; return its length after dropping repeats if dedup. */
uint64_t gr_sort_list(void *ids, uint32_t id_bytes, uint64_t len, int dedup);

/* ---------------------------------------------------------------------------------- */
/* The chunked CSR builder                                                             */
/*                                                                                      */
/* Pass 1: every arc of the input goes through gr_count (or gr_count_atomic), which     */
/*   applies the self-loop and symmetrize options and counts out-degrees in arr[].      */
/* gr_plan: prefix sums (arr becomes provisional offsets), id width, chunks of vertices */
/*   whose provisional edges fit the edge buffer, the temp output file.                 */
/* Per chunk k: gr_chunk_begin; the same arcs again through gr_scatter(_atomic), which  */
/*   keeps those whose (possibly reversed) source lies in the chunk; gr_chunk_end sorts */
/*   each list, drops repeats, compacts, and appends the chunk to the edge array.       */
/* gr_finish: offsets array, header, fsync, rename.                                     */
/* ---------------------------------------------------------------------------------- */

#define GR_MAX_THREADS 256

struct gr_builder {
	/* configuration */
	const char *output;
	char tmp_path[PATH_MAX];
	int fd;
	uint32_t build_flags;
	uint32_t id_bytes_req; /* 0, 4 or 8 as requested */
	uint32_t id_bytes;     /* chosen in gr_plan */
	unsigned threads;
	uint64_t mem_limit;
	FILE *progress;
	const char *what; /* "import", "generate": prefix of progress lines */

	/* degree counts, then offsets: arr[0..n] (cap+1 allocated) */
	uint64_t n, cap;
	uint64_t *arr;
	int fixed_n;               /* n declared: ids >= n are the caller's error */
	uint64_t self_loops;       /* dropped in pass 1 */
	uint64_t total;            /* provisional arcs = arr[n] after gr_plan */
	uint64_t max_deg;

	/* chunks: vertex boundaries chunk_lo[0..n_chunks] */
	uint64_t *chunk_lo;
	uint32_t n_chunks;
	uint64_t lo, hi, base, chunk_elems;
	void *buf;
	uint64_t buf_elems;
	uint64_t placed;           /* arcs scattered in this chunk (non-atomic path) */
	int overflow;              /* scatter saw more arcs than counted */
	unsigned split_t;          /* threads used for the chunk's sort phase */
	uint64_t split_v[GR_MAX_THREADS + 1];
	uint64_t split_p[GR_MAX_THREADS + 1];
	uint64_t kept[GR_MAX_THREADS];
	uint32_t crc[GR_MAX_THREADS];
	int werr[GR_MAX_THREADS];

	/* output */
	struct bam_graph_header hdr;
	uint64_t file_size;
	uint64_t out_edges;
	uint32_t edges_crc;
	uint64_t duplicates;
	double t_start, t_progress;
};

int gr_builder_init(struct gr_builder *b, const char *output,
		    const struct bam_graph_build_opts *o, const char *what, char *err,
		    size_t errlen);
/* Declare n (LAW, MTX, Kronecker): allocates arr; ids must then be < n. */
int gr_builder_set_n(struct gr_builder *b, uint64_t n, char *err, size_t errlen);
/* Grow arr so that vertex id v exists (SNAP, arcs). -ENOMEM. */
int gr_builder_grow(struct gr_builder *b, uint64_t v, char *err, size_t errlen);

static inline int gr_count(struct gr_builder *b, uint64_t u, uint64_t v, char *err,
			   size_t errlen)
{
	uint64_t mx = u > v ? u : v;

	/* n covers every id seen, even in a dropped self-loop */
	if (mx >= b->n) {
		int rc = gr_builder_grow(b, mx, err, errlen);
		if (rc)
			return rc;
	}
	if (u == v && (b->build_flags & BAM_GRAPH_BUILD_DROP_SELF_LOOPS)) {
		b->self_loops++;
		return 0;
	}
	b->arr[u]++;
	if (u != v && (b->build_flags & BAM_GRAPH_BUILD_SYMMETRIZE))
		b->arr[v]++;
	return 0;
}

/* Thread-safe count for a declared n (ids < n); self-loops dropped are added to *loops. */
static inline void gr_count_atomic(struct gr_builder *b, uint64_t u, uint64_t v,
				   uint64_t *loops)
{
	if (u == v && (b->build_flags & BAM_GRAPH_BUILD_DROP_SELF_LOOPS)) {
		(*loops)++;
		return;
	}
	__atomic_fetch_add(&b->arr[u], 1, __ATOMIC_RELAXED);
	if (u != v && (b->build_flags & BAM_GRAPH_BUILD_SYMMETRIZE))
		__atomic_fetch_add(&b->arr[v], 1, __ATOMIC_RELAXED);
}

int gr_plan(struct gr_builder *b, char *err, size_t errlen);
void gr_chunk_begin(struct gr_builder *b, uint32_t k);

static inline void gr_put(struct gr_builder *b, uint64_t u, uint64_t v)
{
	uint64_t slot = b->arr[u]++ - b->base;
	if (slot >= b->chunk_elems) {
		b->overflow = 1;
		return;
	}
	if (b->id_bytes == 4)
		((uint32_t *)b->buf)[slot] = (uint32_t)v;
	else
		((uint64_t *)b->buf)[slot] = v;
	b->placed++;
}

static inline void gr_scatter(struct gr_builder *b, uint64_t u, uint64_t v)
{
	if (u == v && (b->build_flags & BAM_GRAPH_BUILD_DROP_SELF_LOOPS))
		return;
	if (u - b->lo < b->hi - b->lo)
		gr_put(b, u, v);
	if (u != v && (b->build_flags & BAM_GRAPH_BUILD_SYMMETRIZE) && v - b->lo < b->hi - b->lo)
		gr_put(b, v, u);
}

static inline void gr_put_atomic(struct gr_builder *b, uint64_t u, uint64_t v,
				 uint64_t *placed)
{
	uint64_t slot = __atomic_fetch_add(&b->arr[u], 1, __ATOMIC_RELAXED) - b->base;
	if (slot >= b->chunk_elems) {
		__atomic_store_n(&b->overflow, 1, __ATOMIC_RELAXED);
		return;
	}
	if (b->id_bytes == 4)
		((uint32_t *)b->buf)[slot] = (uint32_t)v;
	else
		((uint64_t *)b->buf)[slot] = v;
	(*placed)++;
}

/* Thread-safe scatter; arcs placed are added to *placed (sum them into b->placed). */
static inline void gr_scatter_atomic(struct gr_builder *b, uint64_t u, uint64_t v,
				     uint64_t *placed)
{
	if (u == v && (b->build_flags & BAM_GRAPH_BUILD_DROP_SELF_LOOPS))
		return;
	if (u - b->lo < b->hi - b->lo)
		gr_put_atomic(b, u, v, placed);
	if (u != v && (b->build_flags & BAM_GRAPH_BUILD_SYMMETRIZE) && v - b->lo < b->hi - b->lo)
		gr_put_atomic(b, v, u, placed);
}

int gr_chunk_end(struct gr_builder *b, char *err, size_t errlen);
/* flags: BAM_GRAPH_F_* derived by the caller from the input (e.g. symmetric MTX);
 * the build options add theirs. */
int gr_finish(struct gr_builder *b, uint32_t flags, const char *source,
	      struct bam_graph_build_stats *st, char *err, size_t errlen);
/* Free memory; remove the temp file unless gr_finish succeeded. */
void gr_builder_free(struct gr_builder *b);
/* Print a progress line if progress is on and ~2 s passed since the last one. */
void gr_progress(struct gr_builder *b, int force, const char *fmt, ...) GR_PRINTF(3, 4);

#endif /* BAM_GRAPH_INTERNAL_H */
