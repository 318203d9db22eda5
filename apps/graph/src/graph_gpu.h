/* SPDX-License-Identifier: MIT */
/* GPU launchers of bfs/cc (graph_gpu.cu) and the baselines' memory. */
#ifndef BAM_GRAPH_GPU_H
#define BAM_GRAPH_GPU_H
#include "bam/defs.h"
#include "graph_kern.h"
BAM_EXTERN_C_BEGIN
/* Expand one BFS level on the GPU: the frontier is b->cur (b->cur_n vertices) or, with
 * scan != 0, the vertices whose level is b->depth; then the chunks of long lists.
 * g->ctr (device memory) is reset (but its error) before and copied to *out after:
 * out->next_n is the size of the next frontier (appended to b->next), out->error the
 * first error of any kernel so far. 0 or -EIO (a CUDA error, printed). */
int graph_gpu_bfs_level(const struct graph_view *g, struct bfs_state *b, int scan, struct gv_counters *out);
/* The GPU's SM count. */
int graph_gpu_sms(void);
/* Fill g->part (g->nparts + 1 entries, the last already n) by one sweep over the
 * offsets (through the array in bam mode); counters as for graph_gpu_bfs_level. */
int graph_gpu_part(const struct graph_view *g, struct gv_counters *out);
/* Copy the offsets array (g->off_a, through bam) into dst (device memory, [n + 1] of
 * g->off_bytes): --offsets=memory; counters as for graph_gpu_bfs_level. */
int graph_gpu_off_copy(const struct graph_view *g, void *dst, struct gv_counters *out);
/* The CC pass: the union-find sweep over all arcs, its chunks of long lists, then the
 * flattening sweep; counters as for graph_gpu_bfs_level. */
int graph_gpu_cc_pass(const struct graph_view *g, struct cc_state *c, struct gv_counters *out);
/* The BFS level loop on the device: one CUDA graph, a WHILE node around one level
 * (expand by scan and expand by queue, one of them a no-op; chunks of long lists; end),
 * so a level costs no launch from the host, no copy and no synchronisation (together
 * 20-30 us per level on the H200: most of a BFS on a graph with many small levels).
 * The state of one source's search, in device memory while the graph runs: */
struct bfs_loop {
	struct bfs_state b;     /* in: level (set: source 0, rest unreached), cur = {source},
				 * cur_n 1, depth 0; out: depth = levels expanded, cur/next
				 * swapped once per level */
	uint64_t scan_min;      /* a level whose frontier has >= scan_min vertices is found by
				 * scan (0: always, UINT64_MAX: never); cmd_graphrun.c's rule */
	uint64_t chunks;        /* out: chunks of long lists walked */
	uint32_t levels_scan, levels_queue; /* out */
	uint32_t max_depth;     /* stop after this many levels (n + 1 is never reached) */
	uint32_t pad;
};
/* Build the graph for views g (copied; g->ctr is reset by the loop itself) and its
 * device state. 0, -ENOMEM or -EIO (a CUDA error, printed). */
int graph_gpu_bfs_loop_create(const struct graph_view *g, void **handle);
/* Run one source's search to its end: *L in, the graph launched once, *L and the level
 * counters (*out: error = the first error, as for graph_gpu_bfs_level) back. 0 or
 * -EIO. The search stops after the level in which an error was recorded. */
int graph_gpu_bfs_loop_run(void *handle, struct bfs_loop *L, struct gv_counters *out);
void graph_gpu_bfs_loop_destroy(void *handle);
/* Memory for the baselines: kind 0 = cudaMalloc, 1 = pinned host (cudaHostAlloc
 * mapped), 2 = cudaMallocManaged (refused if larger than the GPU's free memory). */
void *graph_gpu_alloc(int kind, uint64_t bytes);
void graph_gpu_free(int kind, void *p);
/* Copy host -> any. 0 or -EIO. */
int graph_gpu_upload(void *dst, const void *src, uint64_t bytes);
int graph_gpu_download(void *dst, const void *src, uint64_t bytes);
int graph_gpu_memset(void *dst, int c, uint64_t bytes);
/* Empty launches of the graph kernels before any emulator starts (see bench_gpu.h). */
int graph_gpu_prepare(void);
BAM_EXTERN_C_END
#endif
