/* SPDX-License-Identifier: MIT */
/* GPU side of bam bfs / bam cc: kernels over graph_kern.h and baseline memory. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cuda_runtime.h>
#include "graph_gpu.h"

static cudaStream_t stream(void)
{
	static cudaStream_t s;
	if (!s)
		cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	return s;
}

static int sm_count(void)
{
	static int n;
	if (!n) {
		int dev = 0;
		cudaGetDevice(&dev);
		cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
	}
	return n;
}

/* The walk kernels keep 2 blocks of 256 threads resident per SM (at most 128 registers
 * per thread; they need about 120). More blocks with fewer registers (and spills) were
 * 3-6% faster through bam on the real graphs, measured while the walks could still
 * hold lines when waiting for others, which many resident warps turned into -EBUSY on
 * a small cache (results/history/graph.md); not measured since. */
#ifndef GV_MIN_BLOCKS /* (a build option for such experiments) */
#define GV_MIN_BLOCKS 2
#endif
#define GV_BOUNDS __launch_bounds__(256, GV_MIN_BLOCKS)

/* the frontier queue b->cur[0, cur_n), one warp per entry, grid-stride */
__device__ __forceinline__ void queue_warps(const struct graph_view *g, struct bfs_state *b)
{
	uint64_t w0 = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	uint64_t stride = ((uint64_t)gridDim.x * blockDim.x) >> 5;
	for (uint64_t w = w0; w < b->cur_n; w += stride)
		bfs_warp(g, b, w, threadIdx.x & 31u, 32);
}

__global__ void GV_BOUNDS bfs_kernel(struct graph_view g, struct bfs_state b)
{
	queue_warps(&g, &b);
}

/* each warp a contiguous range of vertices (graph_kern.h, walk_range), or with
 * g->ranges the next work item not yet taken, one after the other until none is left
 * (walk_part); b or c is NULL */
__device__ __forceinline__ void range_warp(const struct graph_view *g, struct bfs_state *b, struct cc_state *c)
{
	if (g->ranges) {
		const uint32_t lane = threadIdx.x & 31u;
		while (!gv_failed(g)) {
			uint64_t r = 0;
			if (lane == 0)
				r = bam_fetch_add_relaxed_gpu_u64(&g->ctr->range_next, 1);
			r = __shfl_sync(0xffffffffu, r, 0);
			if (r >= g->nranges)
				break;
			walk_part(g, b, c, r, lane, 32);
		}
		return;
	}
	uint64_t w = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	uint64_t nw = ((uint64_t)gridDim.x * blockDim.x) >> 5;
	uint64_t per = (g->n + nw - 1) / nw;
	uint64_t first = w * per, last = first + per < g->n ? first + per : g->n;
	if (first < last)
		walk_range(g, b, c, first, last, threadIdx.x & 31u, 32);
}

__global__ void GV_BOUNDS bfs_scan_kernel(struct graph_view g, struct bfs_state b)
{
	range_warp(&g, &b, NULL);
}

__global__ void GV_BOUNDS cc_kernel(struct graph_view g, struct cc_state c)
{
	range_warp(&g, NULL, &c);
}

/* the chunks of long neighbour lists queued by the kernel before, one warp each; b or
 * c is NULL */
__device__ __forceinline__ void chunks_warp(const struct graph_view *g, struct bfs_state *b, struct cc_state *c)
{
	const uint64_t n = g->ctr ? gv_chunks_queued(g) : 0; /* no counters: graph_gpu_prepare */
	for (uint64_t k = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; k < n;
	     k += ((uint64_t)gridDim.x * blockDim.x) >> 5)
		chunk_warp(g, b, c, k, threadIdx.x & 31u, 32);
}

__global__ void GV_BOUNDS bfs_chunk_kernel(struct graph_view g, struct bfs_state b)
{
	chunks_warp(&g, &b, NULL);
}

__global__ void GV_BOUNDS cc_chunk_kernel(struct graph_view g, struct cc_state c)
{
	chunks_warp(&g, NULL, &c);
}

__global__ void cc_flatten_kernel(uint64_t n, struct cc_state c)
{
	for (uint64_t v = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += (uint64_t)gridDim.x * blockDim.x)
		cc_flatten(&c, v);
}

/* g->part from one sweep over the offsets: thread per vertex (graph_kern.h,
 * gv_part_vertex); the lanes of a warp read consecutive offsets, one line access */
__global__ void GV_BOUNDS part_kernel(struct graph_view g)
{
	const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
	for (uint64_t v0 = (uint64_t)blockIdx.x * blockDim.x + (threadIdx.x & ~31u); v0 < g.n; v0 += stride) {
		const uint64_t v = v0 + (threadIdx.x & 31u);
		uint64_t s = 0, e = 0;
		int bad = v <= g.n && gv_off(&g, NULL, v, &s);
		e = __shfl_down_sync(0xffffffffu, s, 1);
		if ((threadIdx.x & 31u) == 31u && v < g.n && !bad)
			bad = gv_off(&g, NULL, v + 1, &e);
		if (__any_sync(0xffffffffu, bad))
			break; /* recorded in g.ctr->error */
		if (v < g.n)
			gv_part_vertex(&g, v, s, e);
	}
}

/* the offsets array copied into dst through bam (graph_kern.h, gv_off_copy): thread
 * per offset, the lanes of a warp on consecutive offsets */
__global__ void GV_BOUNDS off_copy_kernel(struct graph_view g, void *dst)
{
	const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
	for (uint64_t k0 = (uint64_t)blockIdx.x * blockDim.x + (threadIdx.x & ~31u); k0 <= g.n; k0 += stride) {
		if (gv_failed(&g))
			break; /* another warp's read failed */
		const uint64_t k = k0 + (threadIdx.x & 31u);
		const int bad = k <= g.n && gv_off_copy(&g, NULL, k, dst);
		if (__any_sync(0xffffffffu, bad))
			break; /* recorded in g.ctr->error */
	}
}

/* the most blocks of 8 warps a walk kernel runs: --warps, else enough resident warps
 * to keep many I/Os in flight (16 blocks per SM); grid-stride beyond that */
static unsigned max_blocks(const struct graph_view *g)
{
	return g->max_blocks ? g->max_blocks : (unsigned)sm_count() * 16;
}

static unsigned blocks_for(const struct graph_view *g, uint64_t warps)
{
	uint64_t max = max_blocks(g);
	uint64_t b = (warps + 7) / 8;
	return (unsigned)(b < 1 ? 1 : (b > max ? max : b));
}

/* after a level / pass: read its counters back (one copy, one synchronisation) */
static int step_end(cudaStream_t s, struct gv_counters *dev, struct gv_counters *out, const char *what)
{
	cudaMemcpyAsync(out, dev, sizeof(*out), cudaMemcpyDeviceToHost, s);
	cudaError_t e = cudaStreamSynchronize(s);
	if (e != cudaSuccess) {
		fprintf(stderr, "bam: %s kernel failed: %s\n", what, cudaGetErrorString(e));
		return -EIO;
	}
	return 0;
}

/* before a level / pass: reset its counters, but the sticky error */
static void step_begin(cudaStream_t s, struct gv_counters *dev)
{
	/* a copy, not a memset: a device memset may synchronise with the emulator's
	 * persistent kernel (CUDA Programming Guide, "Implicit Synchronization") */
	static const struct gv_counters zero = {0, 0, 0, 0};
	cudaMemcpyAsync(dev, &zero, offsetof(struct gv_counters, error), cudaMemcpyHostToDevice, s);
}

extern "C" int graph_gpu_bfs_level(const struct graph_view *g, struct bfs_state *b, int scan, struct gv_counters *out)
{
	cudaStream_t s = stream();
	step_begin(s, g->ctr);
	if (scan)
		bfs_scan_kernel<<<blocks_for(g, g->ranges ? g->nranges : g->n), 256, 0, s>>>(*g, *b);
	else
		bfs_kernel<<<blocks_for(g, b->cur_n), 256, 0, s>>>(*g, *b);
	bfs_chunk_kernel<<<blocks_for(g, g->m / GV_CHUNK + 1), 256, 0, s>>>(*g, *b);
	return step_end(s, g->ctr, out, "BFS");
}

extern "C" int graph_gpu_sms(void)
{
	return sm_count();
}

extern "C" int graph_gpu_part(const struct graph_view *g, struct gv_counters *out)
{
	cudaStream_t s = stream();
	step_begin(s, g->ctr);
	part_kernel<<<blocks_for(g, (g->n + 31) / 32), 256, 0, s>>>(*g);
	return step_end(s, g->ctr, out, "edge-range");
}

extern "C" int graph_gpu_off_copy(const struct graph_view *g, void *dst, struct gv_counters *out)
{
	cudaStream_t s = stream();
	step_begin(s, g->ctr);
	off_copy_kernel<<<blocks_for(g, (g->n + 32) / 32), 256, 0, s>>>(*g, dst);
	return step_end(s, g->ctr, out, "offsets copy");
}

extern "C" int graph_gpu_cc_pass(const struct graph_view *g, struct cc_state *c, struct gv_counters *out)
{
	cudaStream_t s = stream();
	step_begin(s, g->ctr);
	cc_kernel<<<blocks_for(g, g->n), 256, 0, s>>>(*g, *c);
	cc_chunk_kernel<<<blocks_for(g, g->m / GV_CHUNK + 1), 256, 0, s>>>(*g, *c);
	cc_flatten_kernel<<<sm_count() * 8, 256, 0, s>>>(g->n, *c);
	return step_end(s, g->ctr, out, "CC");
}

extern "C" void *bam_gpu_alloc(int kind, uint64_t bytes);
extern "C" void bam_gpu_free(int kind, void *p);
extern "C" void bam_gpu_pause_all(void);
extern "C" void bam_gpu_resume_all(void);

/* ---- the BFS level loop on the device (graph_gpu.h, struct bfs_loop) ---------------- */

/* Two expand kernels, each a no-op on the other's levels: one kernel with both bodies
 * needs the registers of the larger, fewer warps are resident, fewer misses in flight
 * (measured on the H200: BFS of kron26 in GPU memory 0.183 s instead of 0.108 s). */
__global__ void GV_BOUNDS loop_scan_kernel(struct graph_view g, struct bfs_loop *L)
{
	if (!L || L->b.cur_n < L->scan_min)
		return; /* a queue level (or graph_gpu_prepare's empty launch) */
	struct bfs_state b = L->b;
	range_warp(&g, &b, NULL);
}

__global__ void GV_BOUNDS loop_queue_kernel(struct graph_view g, struct bfs_loop *L)
{
	if (!L || L->b.cur_n >= L->scan_min)
		return;
	struct bfs_state b = L->b;
	queue_warps(&g, &b);
}

__global__ void GV_BOUNDS loop_chunk_kernel(struct graph_view g, struct bfs_loop *L)
{
	if (!L)
		return;
	struct bfs_state b = L->b;
	chunks_warp(&g, &b, NULL);
}

/* one thread: count the level, swap the frontiers, reset the counters (but the error),
 * and end the loop after an empty next frontier, an error or max_depth levels */
__global__ void loop_end_kernel(struct graph_view g, struct bfs_loop *L, cudaGraphConditionalHandle h)
{
	if (!L)
		return;
	struct gv_counters *c = g.ctr;
	if (L->b.cur_n >= L->scan_min)
		L->levels_scan++;
	else
		L->levels_queue++;
	L->chunks += c->heavy_n;
	uint64_t *t = L->b.cur;
	L->b.cur = L->b.next;
	L->b.next = t;
	L->b.cur_n = c->next_n;
	L->b.depth++;
	c->next_n = 0;
	c->heavy_n = 0;
	c->range_next = 0;
	if (!L->b.cur_n || c->error || L->b.depth >= L->max_depth)
		cudaGraphSetConditional(h, 0);
}

struct bfs_loop_run {
	struct graph_view g;
	struct bfs_loop *dL;
	cudaGraphConditionalHandle h;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
};

static int add_kernel(cudaGraph_t graph, cudaGraphNode_t *node, const cudaGraphNode_t *dep, void *func, unsigned blocks,
		      unsigned threads, void **args)
{
	cudaGraphNodeParams p = {}; /* (its union has no default constructor) */
	p.type = cudaGraphNodeTypeKernel;
	p.kernel.func = func;
	p.kernel.gridDim = dim3(blocks);
	p.kernel.blockDim = dim3(threads);
	p.kernel.kernelParams = args;
	return cudaGraphAddNode(node, graph, dep, NULL, dep ? 1 : 0, &p) == cudaSuccess ? 0 : -EIO;
}

extern "C" void graph_gpu_bfs_loop_destroy(void *handle)
{
	struct bfs_loop_run *r = (struct bfs_loop_run *)handle;
	if (!r)
		return;
	/* freeing a graph's device resources may wait for the device: pause the emulator */
	bam_gpu_pause_all();
	if (r->exec)
		cudaGraphExecDestroy(r->exec);
	if (r->graph)
		cudaGraphDestroy(r->graph);
	bam_gpu_resume_all();
	if (r->dL)
		bam_gpu_free(0, r->dL);
	free(r);
}

extern "C" int graph_gpu_bfs_loop_create(const struct graph_view *g, void **handle)
{
	struct bfs_loop_run *r = (struct bfs_loop_run *)calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->g = *g;
	if (!(r->dL = (struct bfs_loop *)bam_gpu_alloc(0, sizeof(struct bfs_loop)))) {
		free(r);
		return -ENOMEM;
	}
	/* instantiation and upload allocate device memory: pause the emulator meanwhile */
	bam_gpu_pause_all();
	cudaError_t e = cudaGraphCreate(&r->graph, 0);
	cudaGraphNode_t loop = NULL, n0 = NULL, n1 = NULL, n2 = NULL, n3 = NULL;
	int rc = -EIO;
	if (e == cudaSuccess)
		e = cudaGraphConditionalHandleCreate(&r->h, r->graph, 1, cudaGraphCondAssignDefault);
	if (e == cudaSuccess) {
		cudaGraphNodeParams p = {};
		p.type = cudaGraphNodeTypeConditional;
		p.conditional.handle = r->h;
		p.conditional.type = cudaGraphCondTypeWhile;
		p.conditional.size = 1;
		e = cudaGraphAddNode(&loop, r->graph, NULL, NULL, 0, &p);
		if (e == cudaSuccess) {
			cudaGraph_t body = p.conditional.phGraph_out[0];
			void *a2[] = {&r->g, &r->dL}, *a3[] = {&r->g, &r->dL, &r->h};
			unsigned maxb = max_blocks(g);
			if (!add_kernel(body, &n0, NULL, (void *)loop_scan_kernel, g->ranges ? blocks_for(g, g->nranges) : maxb,
					256, a2) &&
			    !add_kernel(body, &n1, &n0, (void *)loop_queue_kernel, maxb, 256, a2) &&
			    !add_kernel(body, &n2, &n1, (void *)loop_chunk_kernel, blocks_for(g, g->m / GV_CHUNK + 1), 256, a2) &&
			    !add_kernel(body, &n3, &n2, (void *)loop_end_kernel, 1, 1, a3) &&
			    cudaGraphInstantiate(&r->exec, r->graph, 0) == cudaSuccess &&
			    cudaGraphUpload(r->exec, stream()) == cudaSuccess && cudaStreamSynchronize(stream()) == cudaSuccess)
				rc = 0;
		}
	}
	bam_gpu_resume_all();
	if (rc) {
		fprintf(stderr, "bam: building the BFS level loop failed: %s\n",
			cudaGetErrorString(e != cudaSuccess ? e : cudaGetLastError()));
		graph_gpu_bfs_loop_destroy(r);
		return rc;
	}
	*handle = r;
	return 0;
}

extern "C" int graph_gpu_bfs_loop_run(void *handle, struct bfs_loop *L, struct gv_counters *out)
{
	struct bfs_loop_run *r = (struct bfs_loop_run *)handle;
	cudaStream_t s = stream();
	step_begin(s, r->g.ctr);
	cudaMemcpyAsync(r->dL, L, sizeof(*L), cudaMemcpyHostToDevice, s);
	cudaError_t e = cudaGraphLaunch(r->exec, s);
	if (e != cudaSuccess) {
		fprintf(stderr, "bam: BFS level loop launch failed: %s\n", cudaGetErrorString(e));
		return -EIO;
	}
	cudaMemcpyAsync(L, r->dL, sizeof(*L), cudaMemcpyDeviceToHost, s);
	return step_end(s, r->g.ctr, out, "BFS");
}

extern "C" void *graph_gpu_alloc(int kind, uint64_t bytes)
{
	void *p = NULL;
	cudaError_t e;
	if (kind == 0) {
		/* through the library: it pauses the emulator's persistent kernel around
		 * cudaMalloc, which would otherwise wait for it */
		p = bam_gpu_alloc(0, bytes);
		return p;
	} else if (kind == 1) {
		e = cudaHostAlloc(&p, bytes, cudaHostAllocMapped);
	} else {
		size_t fr = 0, tot = 0;
		cudaMemGetInfo(&fr, &tot);
		if (bytes > fr) {
			fprintf(stderr, "bam: UVM: %llu bytes asked, %llu free on the GPU: refused\n",
				(unsigned long long)bytes, (unsigned long long)fr);
			return NULL;
		}
		e = cudaMallocManaged(&p, bytes, cudaMemAttachGlobal);
	}
	if (e != cudaSuccess) {
		fprintf(stderr, "bam: allocating %llu bytes failed: %s\n", (unsigned long long)bytes, cudaGetErrorString(e));
		return NULL;
	}
	return p;
}

extern "C" void graph_gpu_free(int kind, void *p)
{
	if (!p)
		return;
	if (kind == 1)
		cudaFreeHost(p);
	else if (kind == 0)
		bam_gpu_free(0, p);
	else
		cudaFree(p);
}

extern "C" int graph_gpu_upload(void *dst, const void *src, uint64_t bytes)
{
	cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream());
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(stream());
	return e == cudaSuccess ? 0 : -EIO;
}

extern "C" int graph_gpu_download(void *dst, const void *src, uint64_t bytes)
{
	return graph_gpu_upload(dst, src, bytes);
}

extern "C" int bam_gpu_memset(void *dst, int c, uint64_t bytes);
extern "C" int graph_gpu_memset(void *dst, int c, uint64_t bytes)
{
	return bam_gpu_memset(dst, c, bytes);
}

extern "C" int graph_gpu_prepare(void)
{
	/* empty launches before the emulator starts: local memory is sized for these
	 * kernels now (growing it later would wait for the persistent kernel) */
	struct graph_view g;
	struct bfs_state b;
	struct cc_state c;
	memset(&g, 0, sizeof(g));
	memset(&b, 0, sizeof(b));
	memset(&c, 0, sizeof(c));
	bfs_kernel<<<1, 32>>>(g, b);
	bfs_scan_kernel<<<1, 32>>>(g, b);
	bfs_chunk_kernel<<<1, 32>>>(g, b);
	cc_kernel<<<1, 32>>>(g, c);
	cc_chunk_kernel<<<1, 32>>>(g, c);
	cc_flatten_kernel<<<1, 32>>>(0, c);
	part_kernel<<<1, 32>>>(g);
	loop_scan_kernel<<<1, 32>>>(g, NULL);
	loop_queue_kernel<<<1, 32>>>(g, NULL);
	loop_chunk_kernel<<<1, 32>>>(g, NULL);
	loop_end_kernel<<<1, 1>>>(g, NULL, 0);
	return cudaDeviceSynchronize() == cudaSuccess ? 0 : -EIO;
}
