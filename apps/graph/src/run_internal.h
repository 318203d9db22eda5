/* SPDX-License-Identifier: MIT */
/*
 * run_internal.h - the state of one bam_graph_run (not installed): what run.c sets up,
 * run_walk.c's helpers (CPU-target launches, target memory, failures of the walks, the
 * offsets copy, the scan ranges) and run_algo.c's BFS and CC loops share.
 */
#ifndef BAM_GRAPH_RUN_INTERNAL_H
#define BAM_GRAPH_RUN_INTERNAL_H

#include <stdint.h>

#include "bam/bam.h"
#include "bam/cache.h"
#include "bam/graph.h"
#include "bam/graph_run.h"
#include "graph_internal.h"
#include "graph_kern.h"

/* Memory of the run (target memory for state). */
struct gmem {
	int gpu;
	struct bam_ctx *ctx; /* bam mode */
};

struct run {
	struct bam_graph_run_opts opts; /* the caller's, line resolved */
	const struct bam_graph_run_opts *o; /* = &opts */
	struct bam_graph_run_result *r;
	int do_cc;
	char who[64];  /* the messages' prefix (opts.prog) */
	char *err;     /* the caller's error buffer: failure lines, '\n'-joined */
	size_t errlen;
	struct bam_graph_header hdr;
	uint64_t n, m;
	uint32_t ob;        /* offset bytes as the kernels read them */
	uint64_t off_total; /* bytes of the offsets as the kernels read them */
	enum bam_target tgt;
	struct gmem gm;
	int held;           /* a bam_gpu_workers_hold taken after the open */
	uint64_t cache_bytes, data_bytes;
	int fd;
	struct bam_csr ref; /* the host CSR: reference, source choice, degrees */
	uint64_t *sources;
	uint32_t nsrc;
	void *off_mem, *edge_mem; /* baselines */
	int mem_kind;             /* -1 none, -2 malloc, else graph_gpu_alloc's kind */
	struct bam_cache *cache;
	struct bam_array *aoff, *aedge;
	struct gv_counters *ctr;
	void *s1, *s2, *s3, *s5, *s6, *s7; /* target memory of the walks' state */
	struct graph_view gv;
	double compute;
};

/* Add a failure line (printf format; a trailing newline is dropped) to R->err. */
void run_fail(struct run *R, const char *fmt, ...) GR_PRINTF(2, 3);
/* Send a message line of this kind to opts.msg (stderr without one). */
void run_msg(struct run *R, enum bam_graph_msg kind, const char *fmt, ...) GR_PRINTF(3, 4);
double run_now(void);

/* run_walk.c */
uint64_t ns_need(uint64_t off_bytes, uint64_t edge_bytes, uint32_t line, uint32_t k);
int pread_all(int fd, void *buf, uint64_t len, uint64_t off);
uint32_t cpu_workers(void);
uint64_t cpu_per(uint64_t n);
void *state_alloc(struct gmem *m, uint64_t bytes);
void state_free(struct gmem *m, void *p);
int state_put(struct gmem *m, void *dst, const void *src, uint64_t n);
int state_get(struct gmem *m, void *dst, const void *src, uint64_t n);
int trace_level(struct run *R, uint64_t src, uint64_t frontier, int scan, double s,
		const struct bam_array_stats *t_off, const struct bam_array_stats *t_edge);
void walk_fail(struct run *R, const char *where, uint32_t e);
void bfs_walk_fail(struct run *R, uint64_t src, uint32_t level, uint32_t e);
int off_to_memory(struct run *R, void **mem);
int part_setup(struct run *R, uint64_t line_edges);
void off_narrow(uint32_t *dst, const uint64_t *src, uint64_t n);
int media_write_off32(struct bam_array *a, const uint64_t *off, uint64_t count);
int has_default_source(const char *path, const struct bam_graph_header *h, char *err, size_t errlen);
/* the CPU target's launches of one BFS level and of the CC pass */
void cpu_bfs_level(struct run *R, struct bfs_state *b, int scan);
void cpu_cc_pass(struct run *R, struct cc_state *c);

/* bfs without a given source on a graph without a vertex of out-degree >= 2 */
#define NO_SOURCE_MSG "no vertex with at least two out-neighbours to start from: give one with --source=V"

/* run_algo.c: the algorithm, after the set-up; 0 or a negative errno (said) */
int run_bfs(struct run *R);
int run_cc(struct run *R);

#endif /* BAM_GRAPH_RUN_INTERNAL_H */
