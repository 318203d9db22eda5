/* SPDX-License-Identifier: MIT */
/*
 * GPU-resident workers of the emulated NVMe controller: one persistent kernel on its
 * own non-blocking stream. Each warp serves a fixed set of I/O queues of one
 * controller: it reads the SQ tail doorbell, fetches up to 32 SQEs (one per lane),
 * validates them and injects faults per lane (emu_core.h), moves each command's data
 * with the whole warp (16-byte accesses; for reads the source is host-pinned media,
 * so the data crosses PCIe as an SSD's DMA would, or with media=gpu GPU memory),
 * then posts the CQEs in order, each no earlier than its profile time. The CPU is
 * not involved.
 *
 * Deadlock freedom: bam_emu_gpu_start() returns only after every worker block has
 * reported that it is resident. Application kernels launched afterwards can only take
 * the SMs' remaining capacity, so the workers always run; they leave when the host
 * sets the stop word.
 *
 * The stop word is in GPU memory, set by a 4-byte copy on a stream of its own: idle
 * workers poll it every round at no cost to the PCIe link. (When it was a host word
 * read over PCIe every 100 us by each of the 64 warps, a lone 4 KiB read took 22 us
 * at p50 but 82 us at p99, and a BFS level with one cache miss 130 us instead of 57:
 * measured on the H200, results/history/io-engine.md.)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include "emu.h"

extern "C" void bam_gpu_pauser_add(void *arg, int (*pause)(void *), int (*resume)(void *));
extern "C" void bam_gpu_pauser_remove(void *arg);
extern "C" void bam_gpu_pause_all(void);
extern "C" void bam_gpu_resume_all(void);

#define EMU_WARPS_PER_BLOCK 4

struct emu_gpu_run {
	cudaStream_t stream;
	cudaStream_t ctl;     /* the stop word's copies (the workers' stream is busy) */
	uint32_t *started;    /* pinned host: one word per block */
	uint32_t nblocks;
	uint32_t *dstop;      /* GPU memory: the stop word the workers poll */
	uint32_t *hval;       /* pinned host: {0, 1}, sources of the stop word's copies */
	struct emu_ctrl **dctrls;
	uint32_t *dnq;
	uint32_t n_ctrl, warps_per_ctrl;
	int running;
};

__device__ static inline void warp_copy(uint8_t *dst, const uint8_t *src, uint32_t len, uint32_t lane)
{
	if ((((uintptr_t)dst | (uintptr_t)src | len) & 15u) == 0) {
		const uint4 *s = (const uint4 *)src;
		uint4 *d = (uint4 *)dst;
		uint32_t n = len >> 4;
		uint32_t i = lane;
		/* 8 independent 16-byte loads in flight per lane before the stores: a
		 * 4 KiB segment in one round trip */
		for (; i + 224 < n; i += 256) {
			uint4 v[8];
#pragma unroll
			for (int r = 0; r < 8; r++)
				v[r] = s[i + 32 * r];
#pragma unroll
			for (int r = 0; r < 8; r++)
				d[i + 32 * r] = v[r];
		}
		for (; i < n; i += 32)
			d[i] = s[i];
	} else {
		for (uint32_t i = lane * 4; i < len; i += 128) {
			uint32_t n = len - i < 4 ? len - i : 4;
			for (uint32_t k = 0; k < n; k++)
				dst[i + k] = src[i + k];
		}
	}
}

/*
 * Copy the data of a batch of n commands (lane j < n holds SQE j, its transfer size
 * and validation status) with the loads of several commands in flight at once: each
 * lane keeps 8 16-byte loads outstanding per round, so a round moves one 4 KiB command
 * or eight 512 B commands at the cost of one PCIe round trip instead of eight. Only
 * when every command of the batch is a valid read or write of the same size B in
 * {512, 1024, 2048, 4096} with a single PRP1 segment (its page offset + B within one
 * memory page, Base spec 4.3) and 16-byte aligned addresses; returns 0 without copying
 * anything otherwise (the caller's per-command loop then handles the batch).
 */
__device__ static int batch_copy(const struct emu_ctrl *c, const struct nvme_sqe *s, uint32_t bytes, uint16_t st,
				 uint32_t n, uint32_t lane)
{
	const uint32_t full = 0xffffffffu;
	uint64_t src = 0, dst = 0;
	int ok = 1;
	if (lane < n) {
		const uint64_t off = nvme_sqe_slba(s) << c->nvmet.lba_shift;
		ok = !st && (s->opc == NVME_CMD_READ || s->opc == NVME_CMD_WRITE) && s->prp1 &&
		     (s->prp1 & (NVME_PAGE_SIZE - 1)) + bytes <= NVME_PAGE_SIZE && ((s->prp1 | off) & 15u) == 0;
		src = s->opc == NVME_CMD_READ ? (uint64_t)(uintptr_t)(c->media + off) : s->prp1;
		dst = s->opc == NVME_CMD_READ ? s->prp1 : (uint64_t)(uintptr_t)(c->media + off);
	}
	const uint32_t b = __shfl_sync(full, bytes, 0);
	if (!__all_sync(full, ok && (lane >= n || bytes == b)) || (b != 512 && b != 1024 && b != 2048 && b != 4096))
		return 0;
	const uint32_t per = b >> 9; /* 16-byte words per lane per command: 1, 2, 4 or 8 */
	const uint32_t k = 8 / per;  /* commands per round */
	for (uint32_t j0 = 0; j0 < n; j0 += k) {
		uint4 v[8];
#pragma unroll
		for (uint32_t r = 0; r < 8; r++) {
			const uint32_t j = j0 + r / per;
			const uint4 *sp = (const uint4 *)(uintptr_t)__shfl_sync(full, (unsigned long long)src, j & 31u);
			if (j < n)
				v[r] = sp[(r % per) * 32 + lane];
		}
#pragma unroll
		for (uint32_t r = 0; r < 8; r++) {
			const uint32_t j = j0 + r / per;
			uint4 *dp = (uint4 *)(uintptr_t)__shfl_sync(full, (unsigned long long)dst, j & 31u);
			if (j < n)
				dp[(r % per) * 32 + lane] = v[r];
		}
	}
	return 1;
}

/* Serve one queue: at most 32 commands. Returns the number executed. */
/* modelled in models/qpair.pml: proctype Controller (-DCTRL_GPU) */
__device__ static uint32_t serve_queue(struct emu_ctrl *c, uint32_t qid, uint32_t lane, const uint32_t *stop)
{
	struct nvmet_queue *q = &c->nvmet.q[qid];
	if (!q->created)
		return 0;
	const uint32_t depth = q->depth;
	const uint32_t head = q->sq_head;
	/* Lane 0 polls the SQ tail doorbell with a plain (relaxed) load: idle workers
	 * poll continuously, and an acquire per lane per poll costs the whole GPU. Only
	 * when there is work does every lane read both doorbells with acquire itself (so
	 * its SQE reads are ordered after the tail it saw, and its CQE writes after the
	 * submitters' reads of the entries before the CQ head it saw); the batch is the
	 * smallest count any lane saw, the same for the whole warp (a lane-dependent
	 * batch size would desynchronise the warp). GPU scope: the submitters are this
	 * GPU's threads (backend.h, gpu_resident). */
	uint32_t tail = __shfl_sync(0xffffffffu, lane == 0 ? bam_load_relaxed_u32(&c->nvmet.db[2 * qid]) : 0u, 0);
	if (tail >= depth || tail == head)
		return 0;
	tail = bam_load_acquire_gpu_u32(&c->nvmet.db[2 * qid]);
	uint32_t avail = tail < depth ? (tail + depth - head) % depth : 0;
	avail = __reduce_min_sync(0xffffffffu, avail);
	if (avail == 0)
		return 0;
	/* never overrun the CQ: free slots before the CQ head doorbell (the head only
	 * advances, so any value seen is a safe bound) */
	uint32_t cqh = bam_load_acquire_gpu_u32(&c->nvmet.db[2 * qid + 1]);
	uint32_t cfree = __reduce_min_sync(0xffffffffu, (cqh + depth - q->cq_tail - 1) % depth);
	uint32_t n = avail < 32 ? avail : 32;
	n = n < cfree ? n : cfree;
	if (c->f.stop_after) {
		uint64_t done = __shfl_sync(0xffffffffu, (unsigned long long)bam_load_relaxed_u64(&c->nvmet.cnt.cmds), 0);
		if (done >= c->f.stop_after)
			return 0; /* fault: the controller stopped answering */
	}
	if (n == 0)
		return 0;

	struct nvme_sqe s;
	memset(&s, 0, sizeof(s));
	uint16_t st = 0;
	uint32_t bytes = 0;
	int drop = 0;
	uint64_t extra = 0;
	uint64_t now = bam_time_ns();
	if (lane < n) {
		const uint64_t *src = (const uint64_t *)&q->sq[(head + lane) % depth];
		uint64_t *dst = (uint64_t *)&s;
		for (int i = 0; i < 8; i++)
			dst[i] = src[i];
		uint64_t id = ((uint64_t)c->nvmet.index << 56) ^ ((uint64_t)qid << 40) ^ ((uint64_t)(head + lane) << 16) ^ now;
		st = nvmet_validate(&c->nvmet, &s, &bytes);
		if (!st)
			st = emu_inject(c, &s, id, &drop, &extra);
	}
	__syncwarp();
	/* data movement: several small commands at once when the batch allows it, else
	 * one command at a time with the whole warp */
	const uint32_t jfirst = batch_copy(c, &s, bytes, st, n, lane) ? n : 0;
	for (uint32_t j = jfirst; j < n; j++) {
		uint32_t jbytes = __shfl_sync(0xffffffffu, bytes, j);
		uint16_t jst = (uint16_t)__shfl_sync(0xffffffffu, (uint32_t)st, j);
		if (jst || !jbytes)
			continue;
		uint64_t prp1 = __shfl_sync(0xffffffffu, s.prp1, j);
		uint64_t prp2 = __shfl_sync(0xffffffffu, s.prp2, j);
		uint32_t opc = __shfl_sync(0xffffffffu, (uint32_t)s.opc, j);
		uint64_t slba = __shfl_sync(0xffffffffu, lane < n ? nvme_sqe_slba(&s) : 0ull, j);
		struct nvme_sqe t;
		t.prp1 = prp1;
		t.prp2 = prp2;
		struct nvmet_prp_iter it;
		nvmet_prp_begin(&it, &t, jbytes);
		uint64_t off = slba << c->nvmet.lba_shift, addr;
		uint32_t len;
		int r;
		while ((r = nvmet_prp_next(&it, &addr, &len)) > 0) {
			uint8_t *p = (uint8_t *)(uintptr_t)addr;
			if (opc == NVME_CMD_READ)
				warp_copy(p, c->media + off, len, lane);
			else
				warp_copy(c->media + off, p, len, lane);
			off += len;
		}
		if (r < 0 && lane == j)
			st = (uint16_t)-r;
	}
	if (lane < n)
		nvmet_count(&c->nvmet, &s, bytes, st);
	/* timing: one token-bucket reservation for the whole batch, in lane order, so the
	 * completion times rise with the CQ position */
	const struct emu_timing *tm = &c->t;
	int wr = lane < n && s.opc == NVME_CMD_WRITE;
	uint64_t svc = 0;
	if (lane < n && !st) {
		uint64_t pc = wr ? tm->ps_per_cmd_write : tm->ps_per_cmd_read;
		uint64_t pb = (wr ? tm->ps_per_byte_write : tm->ps_per_byte_read) * bytes;
		svc = pc > pb ? pc : pb;
	}
	uint64_t incl = svc; /* inclusive prefix sum over lanes */
	for (int o = 1; o < 32; o <<= 1) {
		uint64_t v = __shfl_up_sync(0xffffffffu, incl, o);
		if ((int)lane >= o)
			incl += v;
	}
	uint64_t total = __shfl_sync(0xffffffffu, incl, 31);
	uint64_t start_ps = 0;
	if (total && lane == 0) {
		uint64_t now_ps = emu_rel_ps(c, now);
		uint64_t old = bam_load_relaxed_u64(&c->vclock_ps);
		for (;;) {
			uint64_t b = old > now_ps ? old : now_ps;
			uint64_t seen = bam_cas_acq_rel_gpu_u64(&c->vclock_ps, old, b + total);
			if (seen == old) {
				start_ps = b;
				break;
			}
			old = seen;
		}
	}
	start_ps = __shfl_sync(0xffffffffu, start_ps, 0);
	uint64_t lat = wr ? tm->lat_write_ns : tm->lat_read_ns;
	uint64_t ready = 0;
	if (lane < n && !st && (total || lat)) {
		uint64_t bucket = (start_ps + incl) / 1000u + bam_load_relaxed_u64(&c->epoch_ns);
		ready = bucket > now + lat ? bucket : now + lat;
	}
	if (extra)
		ready = (ready ? ready : now) + extra;
	/* post in CQ order; lane j posts when its time has come */
	if (lane == 0)
		q->sq_head = (head + n) % depth;
	__syncwarp();
	if (!__any_sync(0xffffffffu, ready != 0)) {
		/* every completion due now (the unlimited profile, no injected delay): all
		 * lanes post at once behind one fence (release pattern: the fence, then the
		 * DW3 stores) instead of one release store after another, each of which
		 * waited for the one before (32 x about 0.5 us per batch on the H200) */
		const uint32_t posting = __ballot_sync(0xffffffffu, lane < n && !drop);
		const uint32_t k = __popc(posting & ((1u << lane) - 1u)); /* CQEs before ours */
		const uint32_t tail = q->cq_tail, phase = q->phase;
		if (posting & (1u << lane)) {
			const uint32_t p = tail + k;
			uint32_t *w = (uint32_t *)&q->cq[p < depth ? p : p - depth];
			bam_store_relaxed_u32(&w[0], 0);
			bam_store_relaxed_u32(&w[1], 0);
			bam_store_relaxed_u32(&w[2], (uint32_t)q->sq_head | ((uint32_t)q->sqid << 16));
			const uint32_t ph = p < depth ? phase : phase ^ 1u;
			bam_fence_acq_rel_gpu();
			bam_store_relaxed_u32(&w[3], (uint32_t)s.cid | ((uint32_t)((st & NVME_STATUS_MASK) | ph) << 16));
		}
		__syncwarp();
		if (lane == 0) {
			const uint32_t p = tail + __popc(posting);
			q->cq_tail = p < depth ? p : p - depth;
			q->phase = p < depth ? phase : phase ^ 1u;
		}
		__syncwarp();
		return n;
	}
	for (uint32_t j = 0; j < n; j++) {
		uint64_t rj = __shfl_sync(0xffffffffu, ready, j);
		uint32_t guard = 0;
		while (rj && bam_time_ns() < rj) {
			if ((++guard & 1023u) == 0 && *(volatile const uint32_t *)stop)
				break;
			__nanosleep(200);
		}
		if (lane == j && !drop)
			nvmet_post_cqe(q, s.cid, st);
		/* lane j advanced cq_tail/phase in memory; __syncwarp orders that before the
		 * next lane's read of them */
		__syncwarp();
	}
	return n;
}

__global__ void emu_workers_kernel(struct emu_ctrl **ctrls, uint32_t n_ctrl, uint32_t warps_per_ctrl,
				   const uint32_t *nq, uint32_t *stop, uint32_t *started)
{
	if (threadIdx.x == 0)
		bam_store_release_sys_u32(&started[blockIdx.x], 1u);
	const uint32_t lane = threadIdx.x & 31u;
	const uint32_t gw = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	if (gw >= n_ctrl * warps_per_ctrl)
		return;
	struct emu_ctrl *c = ctrls[gw / warps_per_ctrl];
	const uint32_t w = gw % warps_per_ctrl;
	const uint32_t nqueues = nq[gw / warps_per_ctrl];
	const uint32_t pn = c->poll_ns;
	uint32_t idle = 0;
	for (;;) {
		uint32_t did = 0;
		for (uint32_t qid = 1 + w; qid <= nqueues; qid += warps_per_ctrl)
			did += serve_queue(c, qid, lane, stop);
		if (did) {
			idle = 0;
		} else {
			idle++;
			if (pn) /* 100 ns for 16 idle rounds, then poll_ns (default 1 us) */
				__nanosleep(idle < 16 && pn > 100 ? 100 : pn);
		}
		/* the stop word is in GPU memory: one L2 read per round (never poll host
		 * memory here: see the top of this file) */
		if (__shfl_sync(0xffffffffu, lane == 0 ? *(volatile const uint32_t *)stop : 0u, 0))
			return;
	}
}

/* Set the workers' stop word (GPU memory) to v: a copy on the control stream, waited
 * for. */
static cudaError_t set_stop(struct emu_gpu_run *r, uint32_t v)
{
	cudaError_t e = cudaMemcpyAsync(r->dstop, &r->hval[v ? 1 : 0], sizeof(uint32_t), cudaMemcpyHostToDevice, r->ctl);
	return e == cudaSuccess ? cudaStreamSynchronize(r->ctl) : e;
}

static int launch_and_wait(struct emu_gpu_run *r)
{
	memset(r->started, 0, r->nblocks * sizeof(uint32_t));
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	cudaError_t e = set_stop(r, 0);
	if (e == cudaSuccess) {
		emu_workers_kernel<<<r->nblocks, EMU_WARPS_PER_BLOCK * 32, 0, r->stream>>>(r->dctrls, r->n_ctrl, r->warps_per_ctrl,
											   r->dnq, r->dstop, r->started);
		e = cudaGetLastError();
	}
	if (e != cudaSuccess) {
		fprintf(stderr, "bam: emulated controller launch failed: %s\n", cudaGetErrorString(e));
		return -EIO;
	}
	/* wait (bounded) until every worker block is resident: only then may application
	 * kernels that wait on these workers be launched */
	uint64_t t0 = bam_time_ns();
	for (;;) {
		uint32_t k = 0;
		for (uint32_t b = 0; b < r->nblocks; b++)
			k += __atomic_load_n(&r->started[b], __ATOMIC_ACQUIRE) ? 1 : 0;
		if (k == r->nblocks)
			return 0;
		if (bam_time_ns() - t0 > 10000000000ull) {
			fprintf(stderr, "bam: only %u of %u emulated-controller worker blocks became resident in 10 s\n", k, r->nblocks);
			set_stop(r, 1);
			cudaStreamSynchronize(r->stream);
			return -EIO;
		}
	}
}

/* pause hook: the workers return; their queue state stays in GPU memory */
static int emu_gpu_pause(void *arg)
{
	struct emu_gpu_run *r = (struct emu_gpu_run *)arg;
	if (!r->running)
		return 0;
	cudaError_t e = set_stop(r, 1);
	cudaError_t e2 = cudaStreamSynchronize(r->stream);
	e = e == cudaSuccess ? e2 : e;
	r->running = 0;
	return e == cudaSuccess ? 0 : -EIO;
}

static int emu_gpu_resume(void *arg)
{
	struct emu_gpu_run *r = (struct emu_gpu_run *)arg;
	if (r->running)
		return 0;
	int rc = launch_and_wait(r);
	r->running = rc == 0;
	return rc;
}

/* Free what start allocated (any part of it); the workers are not running. */
static void run_free(struct emu_gpu_run *r)
{
	bam_gpu_pause_all();
	if (r->stream)
		cudaStreamDestroy(r->stream);
	if (r->ctl)
		cudaStreamDestroy(r->ctl);
	cudaFreeHost(r->started);
	cudaFreeHost(r->hval);
	cudaFree(r->dstop);
	cudaFree(r->dctrls);
	cudaFree(r->dnq);
	bam_gpu_resume_all();
	free(r);
}

extern "C" int bam_emu_gpu_start(struct emu_ctrl **ctrls, uint32_t n_ctrl, const uint32_t *nq,
				 uint32_t warps_per_ctrl, void **handle, char *err, size_t errlen)
{
	struct emu_gpu_run *r = (struct emu_gpu_run *)calloc(1, sizeof(*r));
	cudaError_t e = cudaSuccess;
	int dev = 0, nsm = 0, rc, prio_least = 0, prio_greatest = 0;
	if (!r)
		return -ENOMEM;
	cudaGetDevice(&dev);
	cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev);
	if (!warps_per_ctrl) {
		/* default: 16 SMs' worth of worker warps in all (a reserved share of about
		 * an eighth of an H200), split over the controllers */
		uint32_t total = 16u * EMU_WARPS_PER_BLOCK;
		warps_per_ctrl = total / n_ctrl < 4 ? 4 : total / n_ctrl;
	}
	r->n_ctrl = n_ctrl;
	r->warps_per_ctrl = warps_per_ctrl;
	uint32_t nwarps = n_ctrl * warps_per_ctrl;
	r->nblocks = (nwarps + EMU_WARPS_PER_BLOCK - 1) / EMU_WARPS_PER_BLOCK;
	if ((int)r->nblocks > nsm / 2) {
		snprintf(err, errlen, "emu: %u worker blocks would take more than half of the %d SMs", r->nblocks, nsm);
		free(r);
		return -EINVAL;
	}
	/* allocations synchronise the device: pause other contexts' workers meanwhile */
	bam_gpu_pause_all();
	if ((e = cudaHostAlloc((void **)&r->started, r->nblocks * sizeof(uint32_t), cudaHostAllocMapped)) == cudaSuccess &&
	    (e = cudaHostAlloc((void **)&r->hval, 2 * sizeof(uint32_t), cudaHostAllocDefault)) == cudaSuccess &&
	    (e = cudaMalloc((void **)&r->dstop, sizeof(uint32_t))) == cudaSuccess &&
	    /* the workers' blocks are scheduled before other pending blocks at every
	     * (re)launch: the greatest priority */
	    (e = cudaDeviceGetStreamPriorityRange(&prio_least, &prio_greatest)) == cudaSuccess &&
	    (e = cudaStreamCreateWithPriority(&r->stream, cudaStreamNonBlocking, prio_greatest)) == cudaSuccess &&
	    (e = cudaStreamCreateWithFlags(&r->ctl, cudaStreamNonBlocking)) == cudaSuccess &&
	    (e = cudaMalloc((void **)&r->dctrls, n_ctrl * sizeof(*r->dctrls))) == cudaSuccess &&
	    (e = cudaMalloc((void **)&r->dnq, n_ctrl * sizeof(*r->dnq))) == cudaSuccess) {
		cudaMemcpyAsync(r->dctrls, ctrls, n_ctrl * sizeof(*r->dctrls), cudaMemcpyHostToDevice, r->stream);
		cudaMemcpyAsync(r->dnq, nq, n_ctrl * sizeof(*r->dnq), cudaMemcpyHostToDevice, r->stream);
		e = cudaStreamSynchronize(r->stream);
	}
	bam_gpu_resume_all();
	if (e != cudaSuccess) {
		snprintf(err, errlen, "emu: CUDA: %s", cudaGetErrorString(e));
		run_free(r);
		return -EIO;
	}
	r->hval[0] = 0;
	r->hval[1] = 1;
	if ((rc = emu_gpu_resume(r))) {
		snprintf(err, errlen, "emu: the GPU workers did not start (see above)");
		run_free(r);
		return rc;
	}
	bam_gpu_pauser_add(r, emu_gpu_pause, emu_gpu_resume);
	*handle = r;
	return 0;
}

extern "C" int bam_emu_gpu_stop(void *handle)
{
	struct emu_gpu_run *r = (struct emu_gpu_run *)handle;
	bam_gpu_pauser_remove(r);
	int rc = emu_gpu_pause(r);
	if (rc)
		fprintf(stderr, "bam: emulated controller workers ended with an error\n");
	run_free(r);
	return rc;
}
