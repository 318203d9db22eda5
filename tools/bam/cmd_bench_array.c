/* SPDX-License-Identifier: MIT */
/*
 * bam bench --array: the cache and array API under load. Patterns: hot (a working
 * set inside the cache: hit bandwidth, against the HBM/DRAM read bandwidth measured
 * in the same run), random (one random element per thread per step: miss IOPS),
 * warp (each warp reads 32 consecutive elements of a random line: the case warp
 * coalescing is for; compare --coalesce=on and off).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "bam/bam.h"
#include "bam/backend.h"
#include "bam/cache.h"
#include "abench_kern.h"
#include "cli_util.h"
#include "cmds.h"
#ifdef BAM_HAVE_CUDA
#include "bench_gpu.h"
extern int bam_gpu_available(void);
#endif

static const char *const pat_names[] = {"hot", "random", "warp", "scan"};

struct cpu_ab {
	struct abench_args *a;
};
static void cpu_ab_fn(void *arg, uint64_t tid)
{
	abench_thread(arg, tid, 0, 1);
}

struct fill {
	struct bam_array *arr;
	uint64_t n, chunk;
	int rc;
};
static void fill_fn(void *arg, uint64_t t)
{
	struct fill *f = arg;
	uint64_t first = t * f->chunk, cnt = f->n - first < f->chunk ? f->n - first : f->chunk;
	uint64_t *b = malloc(cnt * 8);
	if (!b) {
		f->rc = -ENOMEM;
		return;
	}
	for (uint64_t k = 0; k < cnt; k++)
		b[k] = abench_value(first + k);
	int rc = bam_array_media_write(f->arr, first, b, cnt);
	if (rc)
		f->rc = rc;
	free(b);
}

static int run_kernel(struct bam_ctx *ctx, struct abench_args *a, double *secs)
{
	if (bam_ctx_target(ctx) == BAM_TARGET_GPU) {
#ifdef BAM_HAVE_CUDA
		double ms = 0;
		int rc = abench_gpu_run(a, &ms);
		*secs = ms / 1e3;
		return rc;
#else
		return -ENODEV;
#endif
	}
	double t0 = cli_now();
	int rc = bam_cpu_launch(a->threads, (uint32_t)(a->threads > 256 ? 256 : a->threads), cpu_ab_fn, a);
	*secs = cli_now() - t0;
	return rc;
}

/* bam bench --array's options (bam bench's: bench_io_options) */
const struct option bench_array_options[] = {
	{"array", 0, 0, 'A'}, {"pattern", 1, 0, 'p'}, {"cache-size", 1, 0, 'C'}, {"line-size", 1, 0, 'L'},
	{"coalesce", 1, 0, 'c'}, {"size", 1, 0, 's'}, {"threads", 1, 0, 'T'}, {"steps", 1, 0, 'n'},
	{"working-set", 1, 0, 'W'}, {"backend", 1, 0, 'B'}, {"target", 1, 0, 'g'}, {"json", 0, 0, 'j'},
	{"quiet", 0, 0, 'q'}, {"ctrl-workers", 1, 0, 'w'}, {"timeout-ms", 1, 0, 'o'},
	{"help", 0, 0, 'h'}, {0, 0, 0, 0}};

int bam_bench_array(int argc, char **argv)
{
	const char *backend = "emu", *cache_arg = "64M";
	uint64_t size = 1ull << 30, cache_bytes = 64ull << 20, threads = 0, steps = 0, ws = 0;
	uint32_t line = 4096, coalesce = 1, pattern = AB_RANDOM, json = 0, quiet = 0, workers = 0;
	uint64_t timeout_ms = 0; /* 0: the library's default (bam_ctx_opts.timeout_ns) */
	enum bam_target target = BAM_TARGET_AUTO;
	const struct option *const lo = bench_array_options;
	int ch;
	static char prog[] = "bam bench --array"; /* getopt's messages start with argv[0] */
	argv[0] = prog;
	cli_json_init("bench", argc, argv, "h", lo, 'j'); /* --json: failures print an error object too */
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		uint64_t v;
		switch (ch) {
		case 'A': break;
		case 'p':
			{
				int k = cli_name_index(pat_names, (int)(sizeof(pat_names) / sizeof(pat_names[0])), optarg);
				if (k < 0)
					goto bad;
				pattern = (uint32_t)k;
			}
			break;
		case 'C': if (bam_parse_size(optarg, &cache_bytes) || !cache_bytes) goto bad; cache_arg = optarg; break;
		case 'L': if (bam_parse_size(optarg, &v) || v < 512 || v > 65536 || (v & (v - 1))) goto bad; line = (uint32_t)v; break;
		case 'c':
			if (!strcmp(optarg, "on")) coalesce = 1;
			else if (!strcmp(optarg, "off")) coalesce = 0;
			else goto bad;
			break;
		case 's':
			if (bam_parse_size(optarg, &size) || size < 4096 || size % 8) {
				cli_fail("bam bench --array: --size=%s: array bytes, a multiple of 8 (u64 elements), at least 4096\n",
					 optarg);
				return 2;
			}
			break;
		case 'T': if (cli_u64(optarg, 1, 1ull << 24, &threads)) goto bad; break;
		case 'n': if (cli_u64(optarg, 1, 1ull << 32, &steps)) goto bad; break;
		case 'W':
			if (bam_parse_size(optarg, &ws) || ws < 8) {
				cli_fail("bam bench --array: --working-set=%s: a size of at least 8 bytes (one element)\n", optarg);
				return 2;
			}
			break;
		case 'B':
			if (cli_backend_arg("bam bench --array", optarg))
				return 2;
			backend = optarg;
			break;
		case 'g':
			if (!strcmp(optarg, "gpu")) target = BAM_TARGET_GPU;
			else if (!strcmp(optarg, "cpu")) target = BAM_TARGET_CPU;
			else if (!strcmp(optarg, "auto")) target = BAM_TARGET_AUTO;
			else goto bad;
			break;
		case 'j': json = 1; break;
		case 'q': quiet = 1; break;
		case 'w': if (cli_u32(optarg, 1, 1024, &workers)) goto bad; break;
		case 'o': if (cli_u64(optarg, 1, 3600000, &timeout_ms)) goto bad; break;
		case 'h':
			printf("usage: bam bench --array [options]\n"
			       "  --pattern=P        hot (working set inside the cache: hit bandwidth), random (default:\n"
			       "                     one random element per thread per step: misses), warp (32\n"
			       "                     consecutive elements of a random line per warp: coalescing),\n"
			       "                     scan (the hot working set read line by line: each warp takes\n"
			       "                     a line with one coalesced line handle and reads all of it)\n"
			       "  --cache-size=SIZE  cache bytes (default 64M)\n"
			       "  --line-size=SIZE   cache line bytes, a power of two from 512 to 64K (default 4K)\n"
			       "  --coalesce=on|off  warp coalescing (default on; GPU only: on the CPU target a warp\n"
			       "                     is one thread, so both settings behave the same)\n"
			       "  --size=SIZE        array bytes, u64 elements: a multiple of 8, at least 4096\n"
			       "                     (default 1G)\n"
			       "  --threads=N        default 262144 GPU, 16 CPU\n"
			       "  --steps=N          reads per thread (default 64 GPU, 20000 CPU)\n"
			       "  --working-set=SIZE bytes swept by --pattern=hot (default half the cache)\n"
			       "  --timeout-ms=N     bound of each wait for a completion or a cache line (default\n"
			       "                     5000); reads are not retried: a dead controller costs about\n"
			       "                     one bound per read still to do\n"
			       "  --backend=STR --target=gpu|cpu|auto --ctrl-workers=N --json --quiet\n");
			return 0;
		default: /* getopt said what is wrong on stderr */
			cli_fail_note("bam bench --array: bad option '%s': unknown, ambiguous or missing its value "
				      "(bam bench --array --help)\n", argv[optind - 1]);
			if (cli_arg_names(argv[optind - 1], bench_io_options) && !cli_arg_names(argv[optind - 1], lo))
				fprintf(stderr, "bam bench --array: %s is an option of bam bench without --array\n", argv[optind - 1]);
			fprintf(stderr, "usage: bam bench --array [options]     (all options: bam bench --array --help)\n");
			return 2;
		bad: {
			char hint[96];
			cli_fail("bam bench --array: bad value '%s' for %s%s (bam bench --array --help)\n", optarg, argv[optind - 1],
				 cli_range_hint(optarg, hint, sizeof(hint)));
			return 2;
		}
		}
	}
	if (optind < argc) {
		cli_fail("bam bench --array: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	enum bam_target tgt = target;
#ifdef BAM_HAVE_CUDA
	if (tgt == BAM_TARGET_AUTO)
		tgt = bam_gpu_available() ? BAM_TARGET_GPU : BAM_TARGET_CPU;
#else
	if (tgt == BAM_TARGET_AUTO)
		tgt = BAM_TARGET_CPU;
#endif
	if (!threads)
		threads = tgt == BAM_TARGET_GPU ? 262144 : 16;
	if (!steps) /* enough work that thread start-up does not dominate */
		steps = tgt == BAM_TARGET_GPU ? 64 : 20000;
	/* a cache larger than the array holds nothing more: capped at the array's lines and
	 * one more (no less than 1 MiB), instead of taking memory it cannot use */
	int capped = 0;
	if (size <= UINT64_MAX - 2 * (uint64_t)line) { /* (larger: refused below as too large) */
		const uint64_t whole = (size + line - 1) / line * line + line;
		const uint64_t cap = whole > (1u << 20) ? whole : (1u << 20);
		if (cache_bytes > cap) {
			cache_bytes = cap;
			capped = 1;
		}
	}
	/* a cache that cannot fit in the target's memory: refused before anything starts */
	char err[512];
	struct bam_cache_opts cop = {.capacity = cache_bytes, .line_size = line};
	if (bam_cache_fits(tgt, &cop, err, sizeof(err)) == -ENOMEM) {
		cli_fail("bam bench --array: --cache-size=%s%s: %s\n", cache_arg, capped ? " (capped at the array's lines)" : "",
			 err);
		return 1;
	}
	/* the cache (host memory on the CPU target) and emulated DRAM media in host memory
	 * each fit alone (checked above and when the emulator opens) but may not together:
	 * refused before anything is allocated, instead of being killed for memory later */
	{
		const int media_host = cli_backend_media_in_memory(backend) && !cli_backend_media_gpu(backend);
		const uint64_t c_host = tgt == BAM_TARGET_CPU ? cache_bytes : 0,
			       m_host = media_host && size <= UINT64_MAX - 2 * (uint64_t)line ? size + line : 0;
		uint64_t avail = 0;
		if (c_host && m_host && !bam_mem_available(BAM_TARGET_CPU, BAM_MEM_HOST_PINNED, &avail) &&
		    m_host <= avail && c_host + m_host > avail) { /* (media alone: the emulator says) */
			cli_fail("bam bench --array: the cache (%llu bytes) and the emulated media (%llu bytes) need %.1f GiB of host memory together, more than the %.1f GiB available: give a smaller --cache-size or --size\n",
				 (unsigned long long)c_host, (unsigned long long)m_host,
				 (double)(c_host + m_host) / (double)(1ull << 30), (double)avail / (double)(1ull << 30));
			return 1;
		}
	}
	uint64_t n = size / 8;
	/* hot and scan (the patterns with a working set) measure hits: one the array or
	 * the cache cannot hold would measure something else under their names */
	if (ws && (pattern == AB_HOT || pattern == AB_SCAN)) {
		if (ws > size) {
			cli_fail("bam bench --array: --working-set=%llu is larger than the array (--size=%llu)\n",
				 (unsigned long long)ws, (unsigned long long)size);
			return 2;
		}
		if ((ws + line - 1) / line > cache_bytes / line) {
			cli_fail("bam bench --array: --working-set=%llu is larger than the cache (--cache-size=%llu): --pattern=%s "
				 "measures hits of a working set the cache holds; give a larger cache, or --pattern=random for misses\n",
				 (unsigned long long)ws, (unsigned long long)cache_bytes, pattern == AB_HOT ? "hot" : "scan");
			return 2;
		}
	}
	if (!ws)
		ws = cache_bytes / 2;
	uint64_t ws_elems = ws / 8 < n ? ws / 8 : n;

	char be[1024]; /* the back end, its namespaces sized: refused before the baseline runs */
	if (size > UINT64_MAX - line || cli_backend_sized(backend, size + line, line, be, sizeof(be))) {
		cli_fail("bam bench --array: --size=%llu: too large for the emulated namespaces (their size would pass 2^64 bytes)\n",
			 (unsigned long long)size);
		return 2;
	}
	const int prc = cli_backend_precheck("bam bench --array", backend, be,
					     tgt == BAM_TARGET_GPU ? NULL : "this run is on the CPU target");
	if (prc)
		return prc;

	/* baseline first (the emulator is not running yet) */
	double base_bps = 0;
#ifdef BAM_HAVE_CUDA
	if (tgt == BAM_TARGET_GPU && (pattern == AB_HOT || pattern == AB_SCAN))
		bench_gpu_hbm_baseline(8ull << 30, &base_bps);
#endif
#ifdef BAM_HAVE_CUDA
	if (tgt == BAM_TARGET_GPU)
		bench_gpu_prepare();
#endif
	static struct cli_media media; /* media files this run creates go again if it fails */
	cli_media_note(&media, be);
	struct bam_ctx_opts co = {.target = tgt, .ctrl_workers = workers, .timeout_ns = timeout_ms * 1000000ull};
	struct bam_ctx *ctx;
	int rc = bam_ctx_open(be, &co, &ctx, err, sizeof(err));
	if (rc) {
		cli_media_forget(&media);
		return cli_backend_fail("bam bench --array", backend, rc, err);
	}
	struct bam_cache *cache = NULL;
	struct bam_array *arr = NULL;
	struct bam_array_opts ao = {.n_elems = n, .elem_size = 8};
	if ((rc = bam_cache_create(ctx, &cop, &cache)) || (rc = bam_array_create(cache, &ao, &arr))) {
		/* the library said why on stderr; the JSON message gets it too */
		cli_fail_note("bam bench --array: creating the cache and the array failed: %s: %s\n", bam_strerror(rc),
			      bam_ctx_error(ctx));
		bam_ctx_close(ctx);
		cli_media_forget(&media);
		return 1;
	}
	if (!quiet)
		fprintf(stderr, "bam bench --array: writing %llu MiB of array data to the media\n", (unsigned long long)(size >> 20));
	struct fill f = {.arr = arr, .n = n, .chunk = 1u << 20};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	bam_cpu_launch((n + f.chunk - 1) / f.chunk, (uint32_t)(ncpu > 0 ? ncpu : 2), fill_fn, &f);
	uint64_t *counters = bam_mem_alloc(ctx, BAM_MEM_DEVICE, 24);
	struct abench_args a = {.a = bam_array_dev(arr), .n_elems = n, .ws = ws_elems, .threads = threads, .steps = steps,
				.seed = 42, .pattern = pattern, .coalesce = coalesce, .bad = counters, .errs = counters + 1,
				.skipped = counters + 2};
	double secs = 0;
	if (f.rc || !counters) {
		cli_fail("bam bench --array: setup failed\n");
		rc = -EIO;
		goto out;
	}
	if (pattern == AB_HOT || pattern == AB_SCAN) {
		/* warm the working set, then measure hits only */
		struct abench_args w = a;
		w.pattern = AB_HOT;
		w.steps = (ws_elems + threads - 1) / threads + 1;
		if ((rc = run_kernel(ctx, &w, &secs)))
			goto out;
		bam_array_stats_reset(arr);
	}
	if ((rc = run_kernel(ctx, &a, &secs)))
		goto out;
	uint64_t res[3];
	bam_mem_copy(ctx, res, counters, 24);
	struct bam_array_stats st;
	bam_array_stats(arr, &st);
	double reads = (double)threads * (double)steps;
	double bw = st.c.bytes_requested / secs;
	if (pattern == AB_SCAN) {
		/* every element of each line taken is read and checked by the warp */
		uint64_t wsize = tgt == BAM_TARGET_GPU ? 32 : 1;
		reads = (double)((threads + wsize - 1) / wsize) * (double)steps * (line / 8);
		bw = reads * 8 / secs;
	}
	double miss_iops = st.c.misses / secs;
	if (json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "pattern", pat_names[pattern]);
		cJSON_AddStringToObject(j, "target", tgt == BAM_TARGET_GPU ? "gpu" : "cpu");
		cli_json_add_str(j, "backend", bam_ctx_backend_desc(ctx));
		cJSON_AddNumberToObject(j, "line_size", line);
		cJSON_AddNumberToObject(j, "cache_bytes", (double)cache_bytes);
		cJSON_AddNumberToObject(j, "array_bytes", (double)size);
		cJSON_AddNumberToObject(j, "coalesce", coalesce);
		cJSON_AddNumberToObject(j, "threads", (double)threads);
		cJSON_AddNumberToObject(j, "seconds", secs);
		cJSON_AddNumberToObject(j, "element_reads_per_s", reads / secs);
		cJSON_AddNumberToObject(j, "requested_GBps", bw / 1e9);
		cJSON_AddNumberToObject(j, "hits", (double)st.c.hits);
		cJSON_AddNumberToObject(j, "misses", (double)st.c.misses);
		cJSON_AddNumberToObject(j, "miss_iops", miss_iops);
		cJSON_AddNumberToObject(j, "io_amplification", st.amplification);
		cJSON_AddNumberToObject(j, "wrong_values", (double)res[0]);
		cJSON_AddNumberToObject(j, "errors", (double)res[1]);
		cJSON_AddNumberToObject(j, "reads_not_attempted", (double)res[2]);
		if (base_bps > 0) {
			cJSON_AddNumberToObject(j, "hbm_GBps", base_bps / 1e9);
			cJSON_AddNumberToObject(j, "ratio_to_hbm", bw / base_bps);
		}
		if (res[0] || res[1]) { /* exit status 1: the error object as after any failure */
			cli_fail_note("bam bench --array: %llu wrong values, %llu errors%s\n", (unsigned long long)res[0],
				      (unsigned long long)res[1], res[2] ? " (a read timed out: the run stopped)" : "");
			cJSON_AddItemToObject(j, "error", cli_json_error(1));
			cli_json_printed();
		}
		char *s = cJSON_PrintUnformatted(j);
		printf("%s\n", s);
		free(s);
		cJSON_Delete(j);
	} else {
		printf("bam bench --array: pattern=%s line=%u cache=%llu%s array=%llu coalesce=%s threads=%llu target=%s\n",
		       pat_names[pattern], line, (unsigned long long)cache_bytes,
		       capped ? " (capped at the array's lines)" : "", (unsigned long long)size, coalesce ? "on" : "off",
		       (unsigned long long)threads, tgt == BAM_TARGET_GPU ? "gpu" : "cpu");
		printf("  backend: %s\n", bam_ctx_backend_desc(ctx));
		if (pattern == AB_SCAN)
			printf("  %.3f s: %.3g element reads/s, %.2f GB/s read by threads from whole cached lines "
			       "(the array line below counts one access per thread per line taken), %.3g misses/s\n",
			       secs, reads / secs, bw / 1e9, miss_iops);
		else
			printf("  %.3f s: %.3g element reads/s, %.2f GB/s requested, %.3g misses/s\n", secs, reads / secs,
			       bw / 1e9, miss_iops);
		if (pattern == AB_HOT || pattern == AB_SCAN)
			printf("  (the working set was read once before the timed run: these are hits)\n");
		bam_array_stats_print(stdout, "array", &st);
		printf("  wrong values=%llu errors=%llu\n", (unsigned long long)res[0], (unsigned long long)res[1]);
		if (res[2])
			printf("  a read timed out: the run stopped, %llu reads not attempted (the rates above are not\n"
			       "  a measurement)\n", (unsigned long long)res[2]);
		if (base_bps > 0)
			printf("  HBM read %.1f GB/s -> cache hits / HBM = %.3f\n", base_bps / 1e9, bw / base_bps);
	}
	rc = res[0] || res[1] ? -EIO : 0;
out:
	bam_mem_free(ctx, BAM_MEM_DEVICE, counters);
	bam_cache_destroy(cache);
	bam_ctx_close(ctx);
	if (rc)
		cli_media_forget(&media);
	else
		cli_media_keep(&media);
	return rc ? 1 : 0;
}
