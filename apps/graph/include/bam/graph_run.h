/* SPDX-License-Identifier: MIT */
/*
 * bam/graph_run.h - run BFS or connected components on a graph file (bam/graph.h), with
 * the edge and offset arrays read on demand through bam's cache from a back end
 * (BAM_GRAPH_MODE_BAM), or from memory for the baselines: the whole graph in GPU memory
 * (GPU), in pinned host memory read zero-copy (HOST: the BaM paper's DRAM-only target),
 * in managed memory (UVM). The kernels (src/graph_kern.h) run on the GPU or, on the CPU
 * target, on host threads. What `bam bfs`, `bam cc` and `bam demo` run.
 *
 * One call, bam_graph_run: it reads the header, refuses what cannot work (options that
 * do not go together, memory the machine does not have) before loading anything, loads
 * the graph for the reference and the source choice, places the arrays (onto the back
 * end's media in bam mode, as dd would before a run; into memory for the baselines),
 * runs the algorithm, verifies it against the CPU reference when asked, and returns the
 * measurements. It never exits and prints nothing on stdout; progress, the level trace
 * and verification mismatches go to opts->msg (stderr without one).
 */
#ifndef BAM_GRAPH_RUN_H
#define BAM_GRAPH_RUN_H

#include "bam/bam.h"
#include "bam/cache.h"
#include <stddef.h>
#include <stdint.h>

BAM_EXTERN_C_BEGIN

enum bam_graph_algo { BAM_GRAPH_BFS = 0, BAM_GRAPH_CC };

/* Where the arrays are read from. */
enum bam_graph_mode {
	BAM_GRAPH_MODE_BAM = 0, /* through bam's cache from the back end (opts->backend) */
	BAM_GRAPH_MODE_HOST,    /* host memory (pinned and read zero-copy on the GPU) */
	BAM_GRAPH_MODE_GPU,     /* GPU memory (GPU target only) */
	BAM_GRAPH_MODE_UVM,     /* managed memory (GPU target only) */
};
/* "bam", "host", "gpu", "uvm" (NULL for another value). */
BAM_API const char *bam_graph_mode_name(enum bam_graph_mode m);

/* How a BFS level finds its frontier: AUTO scans the level array when the frontier
 * holds at least n / scan_fraction vertices, else takes the queue of the vertices the
 * level before found (in discovery order). */
enum bam_graph_frontier { BAM_GRAPH_FRONTIER_AUTO = 0, BAM_GRAPH_FRONTIER_QUEUE, BAM_GRAPH_FRONTIER_SCAN };
/* "auto", "queue", "scan". */
BAM_API const char *bam_graph_frontier_name(enum bam_graph_frontier f);
/* The default scan_fraction. A scan reads the whole level array but the edge array in
 * order; a queue reads the lists in discovery order, fetching a line about once per
 * frontier vertex instead of once per level. On the H200, 64 was as fast as 256 or
 * faster in every mode on cnr-2000, uk-2007-05-100000 and a scale-22 Kronecker graph
 * (through bam 0-2.5%, host mode 0-8%, gpu mode 3-10%); 16 made BFS through bam of
 * cnr-2000 8% slower (results/history/graph.md). */
#define BAM_GRAPH_SCAN_FRACTION 64u

/* How a BFS scan level is shared out among warps: ranges of n/warps vertices; ranges of
 * about m/(64 x SMs) edges; or a work item per cache line of the edge array. */
enum bam_graph_scan_ranges { BAM_GRAPH_RANGES_VERTICES = 0, BAM_GRAPH_RANGES_EDGES, BAM_GRAPH_RANGES_LINES };

/* GPU BFS: the levels run as one CUDA graph on the device, or one launch, copy and
 * synchronisation per level from the host (the CPU target always uses the host). */
enum bam_graph_level_loop { BAM_GRAPH_LOOP_DEFAULT = 0, BAM_GRAPH_LOOP_DEVICE, BAM_GRAPH_LOOP_HOST };

/* The offsets array's cache priority in bam mode. DEFAULT: high for BFS (its levels read
 * the offsets again and again), normal for CC (one pass). */
enum bam_graph_prio { BAM_GRAPH_PRIO_DEFAULT = 0, BAM_GRAPH_PRIO_HIGH, BAM_GRAPH_PRIO_NORMAL };

/* Default cache line bytes in bam mode (opts->line 0): BFS 4 KiB (the BaM paper's); CC
 * 8 KiB: its one pass reads the edge array in order, and on the H200 8 KiB lines took
 * 0.85-1.003x the time of 4 KiB, where BFS of a scale-26 Kronecker graph was 1.11x
 * slower (results/history/graph.md). */
#define BAM_GRAPH_BFS_LINE 4096u
#define BAM_GRAPH_CC_LINE 8192u

/* Messages of a run in progress (opts->msg): each one line of text, no newline. */
enum bam_graph_msg {
	BAM_GRAPH_MSG_PROGRESS = 0, /* every ~2 s and per BFS source; not sent with opts->quiet */
	BAM_GRAPH_MSG_TRACE,        /* a BFS level of the first source (opts->level_trace) */
	BAM_GRAPH_MSG_VERIFY,       /* a result differs from the CPU reference (then
				     * res->verified = -1; the run goes on) */
};

/*
 * Options. Zero-initialise and set what you need: every 0 is a default. Sizes in bytes,
 * times in milliseconds.
 */
struct bam_graph_run_opts {
	enum bam_graph_algo algo;
	const char *graph;       /* the graph file (bam/graph.h format) */
	enum bam_graph_mode mode;
	const char *backend;     /* bam mode: the back-end string (NULL: "emu"); size= is added
				  * where the back end creates media of a chosen size */
	enum bam_target target;  /* AUTO: the GPU when there is one, else the CPU target */
	uint64_t cache_bytes;    /* bam mode: 0 = 1/8 of the edge array; at least 1 MiB, at
				  * most what the offsets and edges take in whole lines */
	const char *cache_arg;   /* cache_bytes as the user gave it, for messages (NULL: not given) */
	uint32_t line;           /* bam mode: cache line bytes, a power of two from 512 to 64 Ki;
				  * 0 = BAM_GRAPH_BFS_LINE or BAM_GRAPH_CC_LINE */
	uint32_t nsources;       /* BFS: random sources with out-degree >= 2; 0 =
				  * BAM_GRAPH_DEFAULT_SOURCES (fewer if fewer qualify) */
	uint64_t seed;           /* BFS: seed of the source choice (bam_graph_pick_sources) */
	int source_set;          /* BFS: run from `source` only */
	uint64_t source;
	int verify;              /* check the file's array checksums, then the result against
				  * the CPU reference (bam_ref_bfs, bam_ref_cc) */
	int quiet;               /* no progress messages */
	uint32_t qpairs, ctrl_workers; /* bam mode: bam_ctx_opts (0: the library's defaults) */
	uint64_t timeout_ms;     /* bam mode: bam_ctx_opts.timeout_ns / 10^6 (0: its default) */
	uint32_t warps;          /* GPU: the most warps a walk kernel runs, 8 to 2^20, rounded
				  * up to blocks of 8 (0: 16 blocks of 8 per SM); refused on the CPU target */
	uint32_t off_bytes;      /* width of one offset as the kernels read them: 4 or 8; 0 =
				  * 4 when the graph has fewer than 2^32 edges */
	enum bam_graph_prio off_prio;
	int off_mem;             /* bam mode: copy the offsets from the storage into target
				  * memory once per run (in end-to-end, not in compute) */
	enum bam_graph_frontier frontier;      /* BFS */
	uint64_t scan_fraction;                /* BFS, AUTO frontier: 0 = BAM_GRAPH_SCAN_FRACTION */
	enum bam_graph_scan_ranges scan_ranges; /* BFS */
	enum bam_graph_level_loop level_loop;   /* BFS on the GPU; not DEFAULT on the CPU target: refused */
	int level_trace;         /* BFS: time and line fills of each level of the first source
				  * (res->trace, and BAM_GRAPH_MSG_TRACE); the levels are then
				  * driven from the host */
	const char *prog;        /* prefix of every message, e.g. "bam bfs" (NULL: "bfs" or "cc") */
	/* Messages during the run; NULL: each line on stderr. */
	void (*msg)(void *arg, enum bam_graph_msg kind, const char *text);
	void *msg_arg;
	/* bam mode, optional: called with the back-end string about to be opened (size=
	 * added), before the open creates any media file; 0 to go on, or a negative errno
	 * and a message in err (prefixed with prog) to refuse the run: the run then returns
	 * it (res->refused set for -EINVAL). For a caller that removes the media files a
	 * failed run created, or that must not let the media be the graph file itself. */
	int (*before_open)(void *arg, const char *backend, char *err, size_t errlen);
	void *before_open_arg;
	/* Optional per-vertex results into host buffers of values_n entries (values_n must
	 * be the graph's vertex count, else -EINVAL): BFS: levels_out[v] = the level of v
	 * from the first source run (0 at the source, UINT32_MAX unreached); CC:
	 * labels_out[v] = the smallest vertex id of v's component. NULL: not kept. */
	uint32_t *levels_out;
	uint64_t *labels_out;
	uint64_t values_n;
};

/* One BFS level of the first source (opts->level_trace). */
struct bam_graph_level {
	uint64_t frontier;                /* vertices expanded */
	int scan;                         /* found by a scan of the level array (1) or the queue (0) */
	double s;                         /* wall time of the level, host-measured */
	uint64_t off_misses, edge_misses; /* line fills during the level (bam mode; else 0) */
};

/* One BFS source. */
struct bam_graph_source {
	uint64_t vertex;  /* the source */
	uint32_t levels;  /* BFS levels expanded (1 + the largest finite level) */
	double s;         /* compute time */
	uint64_t edges;   /* arcs of the vertices reached */
	int verified;     /* 1 equal to the reference, 0 not checked, -1 differs */
	uint64_t reached; /* vertices reached, the source included */
};

/* What a run measured. Times in seconds. */
struct bam_graph_run_result {
	double load_s;        /* reading the file into memory (baselines) or writing the arrays
			       * onto the back end (bam mode: not in end_to_end_s) */
	double setup_s;       /* cache and arrays (bam mode, not in end_to_end_s) or narrowing
			       * and device upload (baselines) */
	double off_copy_s;    /* bam mode, opts->off_mem: copying the offsets to target memory */
	double compute_s;     /* the kernels (and the scan ranges' sweep, part_s), all sources */
	double e2e_s;         /* baselines: load + setup + compute; bam: off_copy + compute */
	uint64_t cache_bytes; /* bam mode: the cache used (after the minimum and the cap) */
	uint32_t line;        /* bam mode: its line bytes */
	uint32_t off_bytes;   /* width of one offset as the kernels read them (4 or 8) */
	int off_prio;         /* bam mode: 1 the offsets' cache priority is high */
	int on_gpu;           /* the kernels ran on the GPU (else the CPU target) */
	uint64_t edges_traversed; /* all sources */
	uint32_t levels_max;  /* BFS: the most levels of a source */
	uint32_t levels_scan, levels_queue; /* BFS levels expanded each way, all sources */
	uint64_t chunks;      /* chunks of long neighbour lists walked */
	uint32_t chunk_edges; /* the lists longer than this many edges are walked in chunks */
	uint32_t passes;      /* CC: passes over the arcs (1) */
	uint64_t components;  /* CC */
	uint32_t runs;        /* BFS sources run (CC: 1) */
	int verified;         /* 1 ok, 0 not checked, -1 a mismatch (said through opts->msg) */
	struct bam_array_stats st_off, st_edge; /* bam mode: the arrays' counters */
	char backend_desc[1280]; /* bam: the back end (bam_ctx_backend_desc); else "MODE memory" */
	const char *level_loop;  /* BFS: "device" or "host" */
	uint64_t nparts, part_edges; /* BFS scan levels by edge ranges: ranges and edges per
				      * range (0: vertex ranges) */
	uint64_t nranges;     /* their work items */
	double part_s;        /* finding the ranges' first vertices (in compute_s) */
	struct bam_graph_level *trace; /* opts->level_trace: trace_n levels of source trace_src */
	uint32_t trace_n;
	uint64_t trace_src;
	struct bam_graph_source *sources; /* BFS: runs entries, in the order run */
	/* On failure: */
	int refused;          /* the options or arguments were refused (a usage error: the CLI's
			       * exit status 2), not a failure of the run */
	int err_said;         /* the library already said the reason on stderr; err sums it up */
};

/*
 * Run opts->algo on opts->graph as *opts says; *res receives the measurements (zeroed
 * first; free with bam_graph_run_result_free, whatever the return value).
 * Returns 0 when the run completed (res->verified -1 if a result differed from the
 * reference), or a negative errno with one or more lines (joined by '\n', each
 * prefixed with opts->prog) in err[errlen]: -EINVAL (options refused or do not go
 * together, res->refused; or a file that is not a graph file), -ENOMEM (memory of the
 * host or the target; refused up front when the machine does not have it), -ENODEV
 * (no GPU for the GPU target), -ERANGE / -EBADMSG (the arrays read are not a graph: a
 * damaged file or media), -EIO and the errors of bam_graph_load, bam_ctx_open,
 * bam_cache_create and bam_array_create.
 */
BAM_API int bam_graph_run(const struct bam_graph_run_opts *opts, struct bam_graph_run_result *res, char *err,
			  size_t errlen);

/*
 * The same runs with flat arguments and the per-vertex result, for callers that do not
 * fill the structures (language bindings): BFS from 'source' (or, when source is
 * UINT64_MAX, from the default source choice's first vertex) through bam's cache on
 * 'backend' (NULL: "emu"); CC likewise. levels/labels: n host entries, n = the graph's
 * vertex count (bam_graph_size). cache_bytes 0: the default. msg (may be NULL: stderr):
 * the run's progress and messages, as opts->msg. Returns as bam_graph_run; *levels_max
 * / *components (may be NULL) receive the levels of the source's BFS / the components.
 */
BAM_API int bam_graph_bfs_levels(const char *graph, const char *backend, enum bam_target target, uint64_t source,
				 uint64_t cache_bytes, uint32_t *levels, uint64_t n, uint32_t *levels_max,
				 void (*msg)(void *arg, enum bam_graph_msg kind, const char *text), void *msg_arg,
				 char *err, size_t errlen);
BAM_API int bam_graph_cc_labels(const char *graph, const char *backend, enum bam_target target, uint64_t cache_bytes,
				uint64_t *labels, uint64_t n, uint64_t *components,
				void (*msg)(void *arg, enum bam_graph_msg kind, const char *text), void *msg_arg,
				char *err, size_t errlen);
/* Vertices and arcs of a graph file (its header). 0 or a negative errno (err). */
BAM_API int bam_graph_size(const char *graph, uint64_t *n_vertices, uint64_t *n_edges, char *err, size_t errlen);

/* Write per-vertex results to the file at path (created or replaced), as text, one line
 * per vertex in vertex order: BFS (levels != NULL): the level of vertex v on line v + 1
 * (0 at the source, -1 unreached); CC (labels != NULL): v's component label (the
 * smallest vertex id in it). n: the vertex count. 0 or a negative errno (err names the
 * file and the cause). For bam bfs / cc --values-out. */
BAM_API int bam_graph_values_write(const char *path, const uint32_t *levels, const uint64_t *labels, uint64_t n,
				   char *err, size_t errlen);

/* Free what a result holds (trace, sources) and zero them. NULL-safe. */
BAM_API void bam_graph_run_result_free(struct bam_graph_run_result *res);

BAM_EXTERN_C_END

#endif /* BAM_GRAPH_RUN_H */
