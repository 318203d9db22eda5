/* SPDX-License-Identifier: MIT */
/*
 * bam/graph.h - graph I/O: the on-storage CSR file format, importers (SNAP, Matrix
 * Market, LAW graph-txt, arc lists), the Graph500 Kronecker generator, host loading,
 * and the CPU reference algorithms (BFS levels, weakly connected components) that the
 * GPU and CPU-target kernels are verified against. Host-only; not device-callable.
 *
 * The file format is specified in docs/GRAPH-FORMAT.md. In short: a 4096-byte header
 * (struct bam_graph_header), then the offsets array (u64, n_vertices + 1 entries), then
 * the edge array (4- or 8-byte vertex ids), each array starting on a 4096-byte boundary
 * so that both lie on LBA boundaries for 512 B and 4 KiB LBAs and the file can be placed
 * on an NVMe namespace as is. All integers are little-endian; this header and the
 * library require a little-endian host (x86-64, AArch64), as the GPU reads the arrays
 * in place.
 *
 * Conventions of every host function here: returns 0 or a negative errno; `err`
 * (may be NULL when errlen is 0) receives a one-line, NUL-terminated message naming the
 * file and, for text input, the line number whenever the return value is negative.
 */
#ifndef BAM_GRAPH_H
#define BAM_GRAPH_H

#include "bam/defs.h"
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>


#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "bam graph files are little-endian and are read in place: little-endian hosts only"
#endif

BAM_EXTERN_C_BEGIN

/* ---------------------------------------------------------------------------------- */
/* On-storage CSR format, version 1                                                    */
/* ---------------------------------------------------------------------------------- */

#define BAM_GRAPH_MAGIC "BAMCSR\0\0" /* 8 bytes, the two trailing NULs included */
#define BAM_GRAPH_MAGIC_LEN 8
#define BAM_GRAPH_VERSION 1u
#define BAM_GRAPH_HEADER_BYTES 4096u
/* Every array starts on this boundary (a multiple of 512 B and 4 KiB LBAs). */
#define BAM_GRAPH_ALIGN 4096u
#define BAM_GRAPH_SOURCE_LEN 256u

/* Header flags (bam_graph_header.flags). Each bit is a guarantee about the stored arcs. */
#define BAM_GRAPH_F_SYMMETRIC (1u << 0)    /* bit 0: (u,v) stored <=> (v,u) stored */
#define BAM_GRAPH_F_NO_SELF_LOOPS (1u << 1) /* bit 1: self-loops removed: no (v,v) */
#define BAM_GRAPH_F_NO_DUPLICATES (1u << 2) /* bit 2: duplicates removed: lists strictly ascending */
#define BAM_GRAPH_F_ALL (BAM_GRAPH_F_SYMMETRIC | BAM_GRAPH_F_NO_SELF_LOOPS | BAM_GRAPH_F_NO_DUPLICATES)

/*
 * The 4096-byte file header, exactly as stored (little-endian, no bitfields, no
 * implicit padding). Field offsets are asserted below and listed in docs/GRAPH-FORMAT.md.
 * header_crc32 is zlib's crc32 over all 4096 header bytes with header_crc32 itself set to
 * zero. offsets_crc32 / edges_crc32 cover exactly offsets_bytes / edges_bytes bytes
 * (not the zero padding that follows each array).
 */
struct bam_graph_header {
	char magic[8];            /* 0x000 "BAMCSR\0\0" */
	uint32_t version;         /* 0x008 BAM_GRAPH_VERSION */
	uint32_t flags;           /* 0x00c BAM_GRAPH_F_* */
	uint32_t id_bytes;        /* 0x010 4 or 8: width of one vertex id in the edge array */
	uint32_t header_crc32;    /* 0x014 crc32 of the 4096-byte header, this field zeroed */
	uint64_t n_vertices;      /* 0x018 vertices are 0 .. n_vertices-1 */
	uint64_t n_edges;         /* 0x020 stored directed arcs (an undirected edge counts twice) */
	uint64_t offsets_offset;  /* 0x028 byte offset of offsets[] in the file (4096-aligned) */
	uint64_t offsets_bytes;   /* 0x030 = 8 * (n_vertices + 1) */
	uint64_t edges_offset;    /* 0x038 byte offset of edges[] in the file (4096-aligned) */
	uint64_t edges_bytes;     /* 0x040 = id_bytes * n_edges */
	uint32_t offsets_crc32;   /* 0x048 crc32 of the offsets_bytes bytes of offsets[] */
	uint32_t edges_crc32;     /* 0x04c crc32 of the edges_bytes bytes of edges[] */
	char source[BAM_GRAPH_SOURCE_LEN]; /* 0x050 where it came from, NUL-padded, NUL-terminated */
	uint8_t reserved[BAM_GRAPH_HEADER_BYTES - 0x150]; /* 0x150 zero */
};

BAM_STATIC_ASSERT(sizeof(struct bam_graph_header) == BAM_GRAPH_HEADER_BYTES, "header is 4096 bytes");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, version) == 0x008, "version at 0x008");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, flags) == 0x00c, "flags at 0x00c");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, id_bytes) == 0x010, "id_bytes at 0x010");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, header_crc32) == 0x014, "header_crc32 at 0x014");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, n_vertices) == 0x018, "n_vertices at 0x018");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, n_edges) == 0x020, "n_edges at 0x020");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, offsets_offset) == 0x028, "offsets_offset at 0x028");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, offsets_bytes) == 0x030, "offsets_bytes at 0x030");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, edges_offset) == 0x038, "edges_offset at 0x038");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, edges_bytes) == 0x040, "edges_bytes at 0x040");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, offsets_crc32) == 0x048, "offsets_crc32 at 0x048");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, edges_crc32) == 0x04c, "edges_crc32 at 0x04c");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, source) == 0x050, "source at 0x050");
BAM_STATIC_ASSERT(offsetof(struct bam_graph_header, reserved) == 0x150, "reserved at 0x150");

/*
 * Read and validate the header of the graph file at `path` into *h: magic, version,
 * header crc32, flags (no unknown bits), id_bytes (4 or 8; 4 only if n_vertices <=
 * 2^32-1), array offsets (4096-aligned, in order, not overlapping the header), array
 * sizes (offsets_bytes == 8*(n+1), edges_bytes == id_bytes*n_edges) and that both arrays
 * lie inside the file. Reads 4096 bytes; does not read the arrays (see bam_graph_verify).
 * `path` may be a regular file or a block device.
 * Errors: -ENOENT/-EACCES/... (open), -EISDIR, -EIO (read), -EINVAL (not a graph file:
 * a FIFO, socket or character device, short file, bad magic, inconsistent fields, arrays past the end of the file), -ENOTSUP
 * (another format version), -EBADMSG (header crc32 mismatch).
 */
BAM_API int bam_graph_header_read(const char *path, struct bam_graph_header *h, char *err,
				  size_t errlen);

/*
 * Check a whole graph file, streaming it with O(1) memory (two 4 MiB buffers): the
 * header (as bam_graph_header_read), the offsets and edges crc32s, offsets[0] == 0,
 * offsets non-decreasing, offsets[n] == n_edges, every neighbour id < n_vertices, each
 * neighbour list ascending (strictly when BAM_GRAPH_F_NO_DUPLICATES), and no (v,v) when
 * BAM_GRAPH_F_NO_SELF_LOOPS. BAM_GRAPH_F_SYMMETRIC is not checked (it needs O(m) memory).
 * Errors: those of bam_graph_header_read, -EBADMSG for an array crc32 mismatch or a broken
 * invariant (err names the vertex), -EIO for a read error.
 */
BAM_API int bam_graph_verify(const char *path, char *err, size_t errlen);

/* Out-degree statistics of a graph file (bam graph info). */
struct bam_graph_degree_stats {
	uint64_t min, max;      /* out-degree; 0/0 for n_vertices == 0 */
	double mean;            /* n_edges / n_vertices */
	uint64_t n_zero;        /* vertices with out-degree 0 */
	uint64_t n_ge2;         /* vertices with out-degree >= 2 (BFS source candidates) */
	uint64_t argmax;        /* a vertex with out-degree max (the smallest such id) */
};

/*
 * Compute out-degree statistics by streaming the offsets array of `path` (the edge
 * array is not read). Errors: those of bam_graph_header_read; -EBADMSG if offsets
 * decrease or offsets[0] != 0 or offsets[n] != n_edges (as bam_graph_load); -EIO.
 */
BAM_API int bam_graph_degrees(const char *path, struct bam_graph_degree_stats *s,
			      char *err, size_t errlen);

/* ---------------------------------------------------------------------------------- */
/* Host-memory CSR                                                                    */
/* ---------------------------------------------------------------------------------- */

/*
 * A graph in host memory. Out-neighbours of v are edge ids offsets[v] .. offsets[v+1]-1;
 * offsets has n_vertices + 1 entries, offsets[n_vertices] == n_edges. edges holds
 * n_edges ids of id_bytes (4 or 8) bytes each: read them with bam_csr_edge().
 */
struct bam_csr {
	uint64_t n_vertices, n_edges;
	uint32_t id_bytes;
	uint64_t *offsets;
	void *edges;
};

/* The i-th entry (0 <= i < n_edges) of g's edge array, for either id width. */
static inline uint64_t bam_csr_edge(const struct bam_csr *g, uint64_t i)
{
	if (g->id_bytes == 4)
		return ((const uint32_t *)g->edges)[i];
	return ((const uint64_t *)g->edges)[i];
}

/*
 * Load the whole graph file `path` into host memory (malloc'd arrays; free with
 * bam_csr_free). Validates the header (bam_graph_header_read) and the offsets array
 * (offsets[0] == 0, non-decreasing, offsets[n] == n_edges), so that every index derived
 * from offsets is in bounds; it does not check crc32s or neighbour ids (bam_graph_verify
 * does; the reference algorithms below reject ids >= n). Memory: 8*(n+1) + id_bytes*m.
 * On error *g is zeroed. Errors: those of bam_graph_header_read, -ENOMEM, -EIO,
 * -EBADMSG (bad offsets).
 */
BAM_API int bam_graph_load(const char *path, struct bam_csr *g, char *err, size_t errlen);

/*
 * Check a loaded graph's arrays against the crc32s its file's header `h` stores (the
 * array checks of bam_graph_verify, on memory: offsets_crc32 over the 8*(n+1) bytes of
 * g->offsets, edges_crc32 over the id_bytes*m bytes of g->edges; zlib crc32,
 * docs/GRAPH-FORMAT.md section 1). For a caller that loaded `path` with bam_graph_load
 * and must not answer from a damaged file (bam bfs/cc --verify). `path` names the file
 * in messages. Returns 0; -EINVAL (g does not match h's counts); -EBADMSG (a checksum
 * differs: "PATH: edges checksum mismatch (stored 0x..., computed 0x...)").
 */
BAM_API int bam_graph_check_crcs(const char *path, const struct bam_graph_header *h, const struct bam_csr *g,
				 char *err, size_t errlen);

/* Free the arrays of a graph from bam_graph_load and zero *g. NULL-safe; idempotent. */
BAM_API void bam_csr_free(struct bam_csr *g);

/*
 * Write the host-memory graph *g to `path` in the file format above (written to
 * an unnamed file in `path`'s directory, fsync'd, named and renamed onto `path`; nothing
 * is left behind on error: docs/GRAPH-FORMAT.md, "Import"). `flags`
 * (BAM_GRAPH_F_*) are stored as given after being checked against the data (self-loops,
 * strict order); `source` (may be NULL) is stored truncated to 255 bytes.
 * Errors: -EINVAL (g inconsistent: bad id_bytes, offsets not monotonic or not ending at
 * n_edges, id >= n, a list not ascending, a flag contradicted by the data), -EEXIST
 * (an existing `path` that is not a regular file: not replaced; or `path` ending in
 * '/'), -ENAMETOOLONG (`path` past PATH_MAX, its name past NAME_MAX), -ENOTDIR (its
 * folder is a file), -EACCES etc. (its folder cannot be written in), -errno of
 * open/write/fsync/linkat/rename.
 */
BAM_API int bam_graph_write(const char *path, const struct bam_csr *g, uint32_t flags,
			    const char *source, char *err, size_t errlen);

/* ---------------------------------------------------------------------------------- */
/* CPU reference algorithms (what the kernels are verified against)                  */
/* ---------------------------------------------------------------------------------- */

#define BAM_BFS_UNREACHED UINT32_MAX

/*
 * Breadth-first search from `source` along out-edges (the graph is taken as directed;
 * import with --symmetrize for undirected BFS). On return level[v] is the hop distance
 * from source to v (level[source] == 0) or BAM_BFS_UNREACHED, and *n_levels (may be NULL)
 * is 1 + the largest finite level, i.e. the number of frontiers the level-synchronous
 * algorithm expands (1 when source has no out-edges). Shapes: level[n_vertices].
 * Time O(n + m), extra memory 8n bytes (the queue).
 * Errors: -EINVAL (source >= n_vertices, bad id_bytes, a neighbour id >= n_vertices),
 * -ENOMEM.
 */
BAM_API int bam_ref_bfs(const struct bam_csr *g, uint64_t source, uint32_t *level,
			uint32_t *n_levels);

/*
 * Weakly connected components: every arc is taken as an undirected edge. On return
 * label[v] is the smallest vertex id in v's component (so label[v] <= v, label[v] == v
 * exactly for the smallest vertex of each component, and isolated vertices label
 * themselves); *n_components (may be NULL) is the number of components (the number of v
 * with label[v] == v). Union-find with union by rank and path halving: O(m α(n)) time,
 * extra memory 9n bytes. Shapes: label[n_vertices].
 * Errors: -EINVAL (bad id_bytes, a neighbour id >= n_vertices), -ENOMEM.
 */
BAM_API int bam_ref_cc(const struct bam_csr *g, uint64_t *label, uint64_t *n_components);

#define BAM_GRAPH_DEFAULT_SOURCES 32u

/*
 * Pick BFS sources as the BaM paper does (its section on graph analytics: BFS time is
 * averaged over 32 sources with at least 2 neighbours): `count` distinct vertices drawn
 * uniformly at random from those with out-degree >= 2, with a deterministic generator
 * (splitmix64) seeded by `seed`: the same graph, count and seed always give the same
 * list, in the same (drawing) order. When fewer than `count` vertices qualify, all of
 * them are returned in ascending order. Shapes: out[count]; *n_out = number written.
 * Errors: -EINVAL (count == 0), -ENOMEM.
 */
BAM_API int bam_graph_pick_sources(const struct bam_csr *g, uint32_t count, uint64_t seed,
				   uint64_t *out, uint32_t *n_out);

/* ---------------------------------------------------------------------------------- */
/* Building graph files: import and Kronecker generation                              */
/* ---------------------------------------------------------------------------------- */

enum bam_graph_format {
	BAM_GRAPH_FMT_AUTO = 0, /* from the file name, then from the content */
	BAM_GRAPH_FMT_SNAP,     /* "# comment" lines, "src dst" per line, 0-based */
	BAM_GRAPH_FMT_MTX,      /* Matrix Market coordinate, 1-based */
	BAM_GRAPH_FMT_LAW,      /* LAW graph-txt: n, then n successor lines, 0-based */
	BAM_GRAPH_FMT_ARCS,     /* "src<TAB>dst" per line, 0-based */
};

/* Parse "snap", "mtx", "law" (or "graph-txt"), "arcs", "auto"; -EINVAL otherwise. */
BAM_API int bam_graph_format_parse(const char *name, enum bam_graph_format *fmt);
/* The name of a format ("snap", ...). */
BAM_API const char *bam_graph_format_name(enum bam_graph_format fmt);

/* Build options (import and generate). */
#define BAM_GRAPH_BUILD_SYMMETRIZE (1u << 0)       /* also store (v,u) for each (u,v), u != v */
#define BAM_GRAPH_BUILD_DROP_SELF_LOOPS (1u << 1)  /* drop every (v,v) */
#define BAM_GRAPH_BUILD_DEDUP (1u << 2)            /* keep one copy of repeated arcs */

struct bam_graph_build_opts {
	uint32_t build_flags; /* BAM_GRAPH_BUILD_* */
	uint32_t id_bytes;    /* 0 = auto (4 when n <= 2^32-1), 4 or 8 */
	uint64_t mem_limit;   /* bytes for the in-memory edge buffer; 0 = 1/4 of RAM */
	uint32_t threads;     /* worker threads; 0 = online CPUs */
	FILE *progress;       /* progress lines every ~2 s, or NULL for none */
};

/* What a build did (may be NULL where accepted). */
struct bam_graph_build_stats {
	uint64_t n_vertices, n_edges; /* as stored */
	uint64_t input_arcs;          /* arcs read or generated, before any option */
	uint64_t lines;               /* input text lines (import) */
	uint64_t self_loops_dropped, duplicates_dropped;
	uint32_t passes;              /* passes over the input (or regenerations) */
	uint32_t id_bytes;
	uint64_t file_bytes;
	double seconds;
};

/*
 * Import the text graph `input` (plain or gzip, read with zlib) into the graph file
 * `output`. `fmt` selects the parser (BAM_GRAPH_FMT_AUTO: by name - .mtx, .graph-txt,
 * .arcs, with an optional .gz - else by content). Vertex ids are used as given
 * (0-based; 1-based for Matrix Market, stored minus 1); n is declared by the input (LAW,
 * MTX) or is the largest id + 1 (SNAP, arcs). Streaming, in two passes over the input
 * (count out-degrees; scatter into an edge buffer of at most o->mem_limit bytes, one
 * more pass per extra buffer-full), so memory is 8*(n+1) bytes plus the buffer,
 * independent of the text size. The result is written to an unnamed file in `output`'s
 * directory, fsync'd, named and renamed onto `output`; on error nothing is left behind. `input` must be a
 * regular file (it is read more than once); an existing `output` must be one too (it is
 * replaced; a device, FIFO, socket, directory or symbolic link there is refused).
 * Errors (err names the file and line): -ENOENT etc. (open input), -EEXIST (an existing
 * `output` that is not a regular file, or one ending in '/'), -ENAMETOOLONG (`output`
 * past PATH_MAX, or its name past NAME_MAX), -ENOTDIR (its folder is a file), -EACCES
 * etc. (its folder cannot be written in; said before the input is read), -EINVAL (input not a regular file; `output` is the input file, under
 * any name; malformed input: garbage token, negative id, id out of the declared range, counts that disagree
 * with the header or size line, truncated input, data after the end of a gzip stream,
 * empty input, unknown format), -ERANGE
 * (n > 2^32-1 with id_bytes 4 forced), -ENOMEM, -EIO and -errno of writes.
 */
BAM_API int bam_graph_import(const char *input, const char *output, enum bam_graph_format fmt,
			     const struct bam_graph_build_opts *o,
			     struct bam_graph_build_stats *st, char *err, size_t errlen);

/* Graph500 Kronecker generator parameters. */
struct bam_kron_params {
	uint32_t scale;       /* n = 2^scale vertices, 1 <= scale <= 40 */
	uint32_t edge_factor; /* m = edge_factor * n generated arcs (Graph500: 16) */
	uint64_t seed;
	double a, b, c;       /* initiator; d = 1 - a - b - c. 0/0/0 = Graph500's 0.57/0.19/0.19 */
};

/*
 * Generate a Graph500 Kronecker graph (Graph500 specification, section 3, and its
 * reference kronecker_generator.m) into `output`: m = edge_factor * 2^scale arcs, arc i
 * drawn bit by bit with the initiator probabilities, without noise, from a
 * counter-based generator (splitmix64 keyed by seed and i, so any pass regenerates the
 * same arcs on any number of threads), then both endpoints relabelled by a seeded
 * permutation of 0..n-1 (the Graph500 reference generator's scramble(), a bijective
 * hash). Arc (u,v) is stored as u -> v; BAM_GRAPH_BUILD_* options as for import. Output
 * is byte-identical for the same parameters and options whatever o->threads and
 * o->mem_limit. Memory: 8*(n+1) bytes plus the edge buffer (o->mem_limit; one more
 * generation pass per extra buffer-full).
 * Errors: -EINVAL (parameters), -EEXIST, -ENAMETOOLONG, -ENOTDIR and -EACCES etc. for
 * `output` as for import, -ERANGE (id_bytes 4 with scale >= 32), -ENOMEM, -errno.
 */
BAM_API int bam_graph_generate_kron(const char *output, const struct bam_kron_params *p,
				    const struct bam_graph_build_opts *o,
				    struct bam_graph_build_stats *st, char *err, size_t errlen);

BAM_EXTERN_C_END

#endif /* BAM_GRAPH_H */
