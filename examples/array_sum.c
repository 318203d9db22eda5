/* SPDX-License-Identifier: MIT */
/*
 * array_sum: the smallest complete bam program. Two u64 arrays of N elements live on
 * an emulated NVMe SSD; a kernel reads every element of 'in' through the software
 * cache, adds them into a total and writes out[i] = 2 * in[i]; the host flushes the
 * cache and checks the total and every element of 'out' on the SSD.
 *
 *   array_sum [--n=N] [--target=cpu|gpu|auto]
 *
 * Exit status 0 only if every check passed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bam/bam.h"
#include "bam/cache.h"
#include "array_sum_kern.h"

#ifdef BAM_HAVE_CUDA /* array_sum_gpu.cu */
int array_sum_gpu_prepare(void);
int array_sum_gpu_run(const struct array_sum_args *a);
#endif

#define LINE_SIZE 4096u           /* bytes per cache line: one NVMe read or write */
#define CACHE_BYTES (8ull << 20)  /* smaller than the two arrays at the default N */
#define CHUNK (1u << 20)          /* elements per host buffer while filling/checking */

/* CPU target: bam_cpu_launch calls this for every logical thread id. */
static void cpu_thread(void *arg, uint64_t tid)
{
	array_sum_thread(arg, tid);
}

static int usage(FILE *f, int status)
{
	fprintf(f, "usage: array_sum [--n=N] [--target=cpu|gpu|auto]\n"
		   "  --n=N       elements per array, 1 to 2^32 (default 1048576)\n"
		   "  --target=T  where the kernel runs (default auto: the GPU if there is one)\n");
	return status;
}

int main(int argc, char **argv)
{
	uint64_t n = 1u << 20;
	enum bam_target target = BAM_TARGET_AUTO;
	for (int k = 1; k < argc; k++) {
		char *end;
		if (!strncmp(argv[k], "--n=", 4)) {
			errno = 0;
			n = strtoull(argv[k] + 4, &end, 10);
			if (errno || *end || argv[k][4] < '0' || argv[k][4] > '9' || n == 0 || n > (1ull << 32)) {
				fprintf(stderr, "array_sum: bad value in '%s': N is a number from 1 to 2^32\n", argv[k]);
				return usage(stderr, 2);
			}
		} else if (!strcmp(argv[k], "--target=cpu")) {
			target = BAM_TARGET_CPU;
		} else if (!strcmp(argv[k], "--target=gpu")) {
			target = BAM_TARGET_GPU;
		} else if (!strcmp(argv[k], "--target=auto")) {
			target = BAM_TARGET_AUTO;
		} else if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
			return usage(stdout, 0);
		} else {
			fprintf(stderr, "array_sum: unknown argument '%s'\n", argv[k]);
			return usage(stderr, 2);
		}
	}

	/* Resolve the target before opening the context. bam_mem_available on the GPU
	 * succeeds only in a CUDA build on a machine with a GPU, and sets the CUDA runtime
	 * up the way the library needs it (eager module loading). */
	uint64_t gpu_mem = 0;
	int have_gpu = target != BAM_TARGET_CPU && bam_mem_available(BAM_TARGET_GPU, BAM_MEM_DEVICE, &gpu_mem) == 0;
	if (target == BAM_TARGET_AUTO)
		target = have_gpu ? BAM_TARGET_GPU : BAM_TARGET_CPU;
	if (target == BAM_TARGET_GPU && !have_gpu) {
		fprintf(stderr, "array_sum: --target=gpu, but %s\n",
#ifdef BAM_HAVE_CUDA
			"no GPU was found"
#else
			"this build has no GPU target (configured without CUDA)"
#endif
		);
		return 1;
	}
#ifdef BAM_HAVE_CUDA
	/* GPU rule 1: launch every kernel of the application once, empty, before the
	 * emulator's persistent kernel starts (in bam_ctx_open). */
	if (target == BAM_TARGET_GPU && array_sum_gpu_prepare())
		return 1;
#endif

	/* The context: the storage (here the emulated NVMe SSD, sized for both arrays),
	 * its NVMe queue pairs in memory the kernel's threads reach, and the target. */
	uint64_t array_bytes = (n * 8 + LINE_SIZE - 1) / LINE_SIZE * LINE_SIZE;
	char backend[64], err[512] = "";
	snprintf(backend, sizeof(backend), "emu:size=%llu", (unsigned long long)(2 * array_bytes));
	struct bam_ctx_opts co = {.target = target};
	struct bam_ctx *ctx = NULL;
	int rc = bam_ctx_open(backend, &co, &ctx, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "array_sum: cannot open '%s': %s (%s)\n", backend, err, bam_strerror(rc));
		return 1;
	}
	printf("array_sum: n=%llu target=%s backend=%s\n", (unsigned long long)n,
	       bam_ctx_target(ctx) == BAM_TARGET_GPU ? "gpu" : "cpu", bam_ctx_backend_desc(ctx));

	int ok = 0;
	uint64_t *buf = NULL, *dev_totals = NULL;
	struct bam_cache *cache = NULL;
	struct bam_array *in = NULL, *out = NULL;

	/* The cache: lines in target memory (GPU memory on the GPU), shared by every array
	 * on it; a miss reads a whole line from the SSD, a dirty line is written back. */
	struct bam_cache_opts cop = {.capacity = CACHE_BYTES, .line_size = LINE_SIZE};
	if ((rc = bam_cache_create(ctx, &cop, &cache))) {
		fprintf(stderr, "array_sum: cannot create a %llu-byte cache: %s\n", (unsigned long long)CACHE_BYTES,
			bam_strerror(rc));
		goto done;
	}
	/* The arrays: n u64 elements each, mapped line by line onto the SSD's LBAs; 'out'
	 * starts where 'in' ends. */
	struct bam_array_opts ao = {.n_elems = n, .elem_size = 8};
	if ((rc = bam_array_create(cache, &ao, &in))) {
		fprintf(stderr, "array_sum: cannot create array 'in': %s\n", bam_strerror(rc));
		goto done;
	}
	ao.base_lba = bam_array_end_lba(in);
	if ((rc = bam_array_create(cache, &ao, &out))) {
		fprintf(stderr, "array_sum: cannot create array 'out': %s\n", bam_strerror(rc));
		goto done;
	}

	/* Provisioning: write 'in' straight onto the media, bypassing the cache (as one
	 * would dd a data set onto an SSD before the run). */
	uint64_t chunk = n < CHUNK ? n : CHUNK, expect = 0;
	if (!(buf = malloc(chunk * 8))) {
		fprintf(stderr, "array_sum: out of host memory\n");
		goto done;
	}
	for (uint64_t first = 0; first < n; first += chunk) {
		uint64_t cnt = n - first < chunk ? n - first : chunk;
		for (uint64_t k = 0; k < cnt; k++) {
			buf[k] = array_sum_value(first + k);
			expect += buf[k];
		}
		if ((rc = bam_array_media_write(in, first, buf, cnt))) {
			fprintf(stderr, "array_sum: writing 'in' to the media failed: %s\n", bam_strerror(rc));
			goto done;
		}
	}

	/* Two counters in target memory, zero-filled. GPU rule 2: allocate only while no
	 * kernel of the application waits for I/O (here: before the kernel runs). */
	if (!(dev_totals = bam_mem_alloc(ctx, BAM_MEM_DEVICE, 2 * sizeof(uint64_t)))) {
		fprintf(stderr, "array_sum: cannot allocate the counters in target memory\n");
		goto done;
	}
	struct array_sum_args a = {.in = bam_array_dev(in), .out = bam_array_dev(out), .n = n,
				   .total = dev_totals, .errors = dev_totals + 1};
	if (target == BAM_TARGET_GPU) {
#ifdef BAM_HAVE_CUDA
		a.threads = n < (1u << 18) ? (n + 31) / 32 * 32 : (1u << 18);
		rc = array_sum_gpu_run(&a);
#endif
	} else {
		a.threads = n < 16 ? n : 16; /* 16 logical threads, each on its own host thread */
		rc = bam_cpu_launch(a.threads, 0, cpu_thread, &a);
		if (rc)
			fprintf(stderr, "array_sum: bam_cpu_launch failed: %s\n", bam_strerror(rc));
	}
	if (rc)
		goto done;

	/* Flush: write every dirty line (the out[] values still in the cache) back to the
	 * SSD. Until then the media may hold only the lines evicted during the run. */
	if ((rc = bam_cache_flush(cache))) {
		fprintf(stderr, "array_sum: bam_cache_flush failed: %s (%s)\n", bam_strerror(rc), bam_ctx_error(ctx));
		goto done;
	}

	uint64_t totals[2];
	if ((rc = bam_mem_copy(ctx, totals, dev_totals, sizeof(totals)))) {
		fprintf(stderr, "array_sum: cannot copy the counters back: %s\n", bam_strerror(rc));
		goto done;
	}
	int good = 1;
	if (totals[1]) {
		fprintf(stderr, "array_sum: %llu accesses failed in the kernel (last error: %s)\n",
			(unsigned long long)totals[1], bam_ctx_error(ctx));
		good = 0;
	}
	if (totals[0] != expect) {
		fprintf(stderr, "array_sum: total %llu, expected %llu\n", (unsigned long long)totals[0],
			(unsigned long long)expect);
		good = 0;
	}
	/* Read 'out' back from the media (not the cache): what the flush left there. */
	uint64_t wrong = 0;
	for (uint64_t first = 0; first < n; first += chunk) {
		uint64_t cnt = n - first < chunk ? n - first : chunk;
		if ((rc = bam_array_media_read(out, first, buf, cnt))) {
			fprintf(stderr, "array_sum: reading 'out' from the media failed: %s\n", bam_strerror(rc));
			goto done;
		}
		for (uint64_t k = 0; k < cnt; k++) {
			if (buf[k] == 2 * array_sum_value(first + k))
				continue;
			if (!wrong++)
				fprintf(stderr, "array_sum: out[%llu] = %llu on the media, expected %llu\n",
					(unsigned long long)(first + k), (unsigned long long)buf[k],
					(unsigned long long)(2 * array_sum_value(first + k)));
		}
	}
	if (wrong) {
		fprintf(stderr, "array_sum: %llu of %llu elements of 'out' are wrong\n", (unsigned long long)wrong,
			(unsigned long long)n);
		good = 0;
	}

	/* Per-array statistics: hits and misses of the cache, evictions, write-backs and
	 * the I/O amplification (bytes moved to/from the SSD per byte the threads asked). */
	struct bam_array_stats st;
	if (!bam_array_stats(in, &st))
		bam_array_stats_print(stdout, "in ", &st);
	if (!bam_array_stats(out, &st))
		bam_array_stats_print(stdout, "out", &st);
	printf("array_sum: total=%llu (expected %llu), out checked on the media: %s\n", (unsigned long long)totals[0],
	       (unsigned long long)expect, wrong ? "WRONG" : "ok");
	ok = good;

done:
	free(buf);
	bam_mem_free(ctx, BAM_MEM_DEVICE, dev_totals);
	bam_array_destroy(out);
	bam_array_destroy(in);
	bam_cache_destroy(cache);
	bam_ctx_close(ctx);
	printf("array_sum: %s\n", ok ? "PASS" : "FAIL");
	return ok ? 0 : 1;
}
