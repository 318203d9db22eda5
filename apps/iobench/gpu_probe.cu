/* SPDX-License-Identifier: MIT */
/*
 * bam-gpu-probe: why random 512 B reads of host memory by GPU threads fall with the
 * region's size, measured with the limit kernel of `bam bench` (bench_gpu.cu: each warp
 * keeps 8 random chunks in flight, every lane a 16-byte load of each):
 *   sweep    random 512 B and 4 KiB chunks over footprints from 256 MiB to --max of
 *            pinned host memory (cudaHostAlloc, mapped), and 512 B with 1 chunk in
 *            flight per warp (the old, latency-bound baseline) at 1 GiB and --max;
 *   stride   at F = min(16 GiB, --max): 512 B chunks in the first 4 KiB of pages 64 KiB
 *            and 2 MiB apart over F, beside dense regions with as many 4 KiB pages
 *            (F/16 and F/512 bytes): a rate that follows the pages touched, not the
 *            range, points at 4 KiB translations (GPU TLB or the host IOMMU's IOTLB);
 *            one that follows the range at 2 MiB spacing points at coarser units;
 *   thp      F of transparent-huge-page host memory (madvise, then cudaHostRegister)
 *            against cudaHostAlloc's: if 2 MiB host pages help, translation it is;
 *   hbm      the same kernel over GPU memory (2 MiB pages) at 1 GiB and F;
 *   copy     the copy engine: cudaMemcpy host to device of 1 GiB.
 * Prints one line per measurement ("probe NAME footprint_bytes chunk_bytes GB/s Mchunks/s")
 * and a table last. Usage: bam-gpu-probe [--max=BYTES] (default 64 GiB, at most 3/4 of
 * the available host memory).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cuda_runtime.h>
#include "bam/bam.h"
#include "bam/backend.h"
#include "bench_gpu.h"

struct row {
	char name[48];
	uint64_t footprint, touched;
	uint32_t bs, inflight;
	double gbps, mcps;
};
static struct row rows[64];
static int nrows;

static void add(const char *name, const void *buf, uint64_t footprint, uint64_t npages, uint64_t stride, uint32_t slots,
		uint32_t bs, uint32_t inflight, uint64_t touched)
{
	double cps = 0;
	if (nrows >= 64 || bench_gpu_limit_on(buf, npages, stride, slots, bs, inflight, &cps)) {
		fprintf(stderr, "bam-gpu-probe: %s failed: %s\n", name, cudaGetErrorString(cudaGetLastError()));
		return;
	}
	struct row *r = &rows[nrows++];
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->footprint = footprint;
	r->touched = touched;
	r->bs = bs;
	r->inflight = inflight;
	r->mcps = cps / 1e6;
	r->gbps = cps * bs / 1e9;
	printf("probe %s %llu %u %.2f %.2f\n", name, (unsigned long long)footprint, bs, r->gbps, r->mcps);
	fflush(stdout);
}

static void dense(const char *name, const void *buf, uint64_t f, uint32_t bs, uint32_t inflight)
{
	add(name, buf, f, f / bs, bs, 1, bs, inflight, f);
}

static uint64_t thp_bytes(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	unsigned long long kb = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kb << 10;
}

int main(int argc, char **argv)
{
	uint64_t max = 64ull << 30, avail = 0;
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--max=", 6) && !bam_parse_size(argv[i] + 6, &max))
			continue;
		fprintf(stderr, "usage: bam-gpu-probe [--max=BYTES]\n");
		return 2;
	}
	if (!bam_gpu_available()) {
		fprintf(stderr, "bam-gpu-probe: no usable GPU\n");
		return 1;
	}
	if (!bam_mem_available(BAM_TARGET_CPU, BAM_MEM_HOST_PINNED, &avail) && max > avail / 4 * 3)
		max = (avail / 4 * 3) & ~((1ull << 30) - 1);
	if (max < (1ull << 30))
		max = 1ull << 30;
	const uint64_t F = max < (16ull << 30) ? max : 16ull << 30;
	cudaDeviceProp p;
	cudaGetDeviceProperties(&p, 0);
	printf("probe gpu \"%s\" sms=%d memory=%llu max_footprint=%llu\n", p.name, p.multiProcessorCount,
	       (unsigned long long)p.totalGlobalMem, (unsigned long long)max);

	/* sweep and stride: one pinned buffer of 'max' bytes, footprints are its prefixes */
	void *h = NULL;
	if (cudaHostAlloc(&h, max, cudaHostAllocMapped) != cudaSuccess) {
		fprintf(stderr, "bam-gpu-probe: cudaHostAlloc(%llu) failed\n", (unsigned long long)max);
		return 1;
	}
	memset(h, 0x5a, max);
	for (uint64_t f = 256ull << 20; f <= max; f *= 2) {
		dense("pinned-512", h, f, 512, 8);
		dense("pinned-4k", h, f, 4096, 8);
		if (f * 2 > max && f != max) { /* (a --max that is no power of two: it too) */
			dense("pinned-512", h, max, 512, 8);
			dense("pinned-4k", h, max, 4096, 8);
		}
	}
	dense("pinned-512-1inflight", h, 1ull << 30, 512, 1);
	dense("pinned-512-1inflight", h, max, 512, 1);
	/* stride: chunks in the first 4 KiB (8 slots of 512 B) of pages S apart over F */
	add("stride-64k", h, F, F >> 16, 64 << 10, 8, 512, 8, (F >> 16) * 4096);
	dense("dense-same-4k-pages-as-64k", h, F / 16, 512, 8);
	add("stride-2m", h, F, F >> 21, 2 << 20, 8, 512, 8, (F >> 21) * 4096);
	dense("dense-same-4k-pages-as-2m", h, F / 512, 512, 8);
	dense("dense-F", h, F, 512, 8);
	{
		void *d = NULL;
		const uint64_t n = 1ull << 30;
		cudaEvent_t e0, e1;
		float ms = 0, best = 0;
		if (cudaMalloc(&d, n) == cudaSuccess) {
			cudaEventCreate(&e0);
			cudaEventCreate(&e1);
			for (int i = 0; i < 3; i++) {
				cudaEventRecord(e0);
				cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
				cudaEventRecord(e1);
				cudaEventSynchronize(e1);
				cudaEventElapsedTime(&ms, e0, e1);
				if (ms > 0 && (best == 0 || ms < best))
					best = ms;
			}
			printf("probe copy-engine %llu 0 %.2f 0\n", (unsigned long long)n, best > 0 ? n / (best / 1e3) / 1e9 : 0);
			if (nrows < 64) {
				struct row *r = &rows[nrows++];
				snprintf(r->name, sizeof(r->name), "copy-engine (cudaMemcpy H2D)");
				r->footprint = r->touched = n;
				r->gbps = best > 0 ? n / (best / 1e3) / 1e9 : 0;
			}
			cudaFree(d);
		}
	}
	cudaFreeHost(h);

	/* thp: F bytes of 2 MiB-aligned anonymous memory with huge pages asked for */
	{
		void *t = NULL;
		if (!posix_memalign(&t, 2u << 20, F)) {
			madvise(t, F, MADV_HUGEPAGE);
			memset(t, 0x5a, F);
			const uint64_t huge = thp_bytes();
			void *dp = NULL;
			if (cudaHostRegister(t, F, cudaHostRegisterMapped) == cudaSuccess &&
			    cudaHostGetDevicePointer(&dp, t, 0) == cudaSuccess) {
				printf("probe thp-share %llu of %llu bytes in huge pages\n", (unsigned long long)huge,
				       (unsigned long long)F);
				dense("thp-512", dp, F, 512, 8);
				dense("thp-512-1G", dp, 1ull << 30, 512, 8);
				cudaHostUnregister(t);
			} else {
				fprintf(stderr, "bam-gpu-probe: cudaHostRegister of THP memory failed\n");
				cudaGetLastError();
			}
			free(t);
		}
	}
	/* hbm: the same kernel over GPU memory */
	{
		size_t fr = 0, tot = 0;
		cudaMemGetInfo(&fr, &tot);
		uint64_t g = F < fr / 2 ? F : (fr / 2) & ~((1ull << 30) - 1);
		void *d = NULL;
		if (g >= (1ull << 30) && cudaMalloc(&d, g) == cudaSuccess) {
			cudaMemset(d, 0x5a, g);
			dense("hbm-512-1G", d, 1ull << 30, 512, 8);
			dense("hbm-512", d, g, 512, 8);
			cudaFree(d);
		}
	}

	printf("\n| measurement | footprint GiB | 4 KiB pages touched (GiB of them) | chunk B | in flight/warp | GB/s | M chunks/s |\n");
	printf("|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		printf("| %s | %.2f | %.3f | %u | %u | %.2f | %.2f |\n", r->name, r->footprint / 1073741824.0,
		       r->touched / 1073741824.0, r->bs, r->inflight, r->gbps, r->mcps);
	}
	return 0;
}
