/* SPDX-License-Identifier: MIT */
/*
 * bam bench --array: the cache and array API under load. Patterns: hot (a working
 * set inside the cache: hit bandwidth, against the HBM/DRAM read bandwidth measured
 * in the same run), random (one random element per thread per step: miss IOPS),
 * warp (each warp reads 32 consecutive elements of a random line: the case warp
 * coalescing is for; compare --coalesce=on and off). The engine is bam_arraybench_run
 * (apps/iobench, bam/iobench.h): here the options and the output.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "bam/bam.h"
#include "bam/backend.h" /* bam_parse_size */
#include "bam/cache.h"
#include "bam/iobench.h"
#include "cli_util.h"
#include "cmds.h"

static const char *const pat_names[] = {"hot", "random", "warp", "scan", "randwrite", "rmw"};

/* the engine's notes on stderr unless --quiet */
static void array_msg(void *arg, enum bam_iobench_msg_kind kind, const char *text)
{
	if (kind == BAM_IOBENCH_MSG_ERROR)
		cli_fail("bam bench --array: %s\n", text);
	else if (kind != BAM_IOBENCH_MSG_NOTE || !*(const int *)arg)
		cli_eprintf("bam bench --array: %s\n", text);
}

static void print_json(const struct bam_arraybench_opts *o, const struct bam_arraybench_result *r, int failed,
		       const char *fail)
{
	cJSON *j = cJSON_CreateObject();
	bench_json_head(j, "bench --array");
	cJSON_AddStringToObject(j, "pattern", pat_names[o->pattern]);
	cJSON_AddStringToObject(j, "target", r->target == BAM_TARGET_GPU ? "gpu" : "cpu");
	cli_json_add_str(j, "backend", r->backend);
	cJSON_AddNumberToObject(j, "line_size", o->line_size);
	cJSON_AddNumberToObject(j, "cache_bytes", (double)r->cache_bytes);
	cJSON_AddNumberToObject(j, "array_bytes", (double)o->size);
	cJSON_AddNumberToObject(j, "coalesce", o->coalesce);
	cJSON_AddNumberToObject(j, "threads", (double)r->threads);
	cJSON_AddNumberToObject(j, "seconds", r->seconds);
	cJSON_AddNumberToObject(j, "element_reads_per_s", r->element_reads_per_s);
	cJSON_AddNumberToObject(j, "requested_GBps", r->requested_bps / 1e9);
	cJSON_AddNumberToObject(j, "hits", (double)r->stats.c.hits);
	cJSON_AddNumberToObject(j, "misses", (double)r->stats.c.misses);
	cJSON_AddNumberToObject(j, "miss_iops", r->miss_iops);
	if (o->pattern == BAM_ARRAYBENCH_RANDWRITE || o->pattern == BAM_ARRAYBENCH_RMW) {
		cJSON_AddNumberToObject(j, "flush_seconds", r->flush_seconds);
		cJSON_AddNumberToObject(j, "seconds_with_flush", r->seconds_with_flush);
		cJSON_AddNumberToObject(j, "writes_per_s_with_flush", r->writes_per_s);
		cJSON_AddNumberToObject(j, "storage_write_iops", r->storage_write_iops);
		cJSON_AddNumberToObject(j, "storage_bytes_written", (double)r->stats.c.bytes_written);
		cJSON_AddNumberToObject(j, "storage_bytes_read", (double)r->stats.c.bytes_read);
	}
	cJSON_AddNumberToObject(j, "io_amplification", r->stats.amplification);
	cJSON_AddNumberToObject(j, "wrong_values", (double)r->wrong_values);
	cJSON_AddNumberToObject(j, "errors", (double)r->errors);
	cJSON_AddNumberToObject(j, "reads_not_attempted", (double)r->reads_not_attempted);
	if (r->hbm_bps > 0) {
		cJSON_AddNumberToObject(j, "hbm_GBps", r->hbm_bps / 1e9);
		cJSON_AddNumberToObject(j, "ratio_to_hbm", r->requested_bps / r->hbm_bps);
	}
	if (failed) { /* exit status 1: the error object as after any failure */
		cli_fail_note("bam bench --array: %s\n", fail);
		cJSON_AddItemToObject(j, "error", cli_json_error(1));
		cli_json_printed();
	}
	char *s = cJSON_PrintUnformatted(j);
	printf("%s\n", s);
	free(s);
	cJSON_Delete(j);
}

static void print_text(const struct bam_arraybench_opts *o, const struct bam_arraybench_result *r)
{
	const double secs = r->seconds, bw = r->requested_bps;
	printf("bam bench --array: pattern=%s line=%u cache=%llu%s array=%llu coalesce=%s threads=%llu target=%s\n",
	       pat_names[o->pattern], o->line_size, (unsigned long long)r->cache_bytes,
	       r->capped ? " (capped at the array's lines)" : "", (unsigned long long)o->size, o->coalesce ? "on" : "off",
	       (unsigned long long)r->threads, r->target == BAM_TARGET_GPU ? "gpu" : "cpu");
	printf("  backend: %s\n", r->backend);
	if (o->pattern == BAM_ARRAYBENCH_SCAN)
		printf("  %.3f s: %.3g element reads/s, %.2f GB/s read by threads from whole cached lines "
		       "(the array line below counts one access per thread per line taken), %.3g misses/s\n",
		       secs, r->element_reads_per_s, bw / 1e9, r->miss_iops);
	else
		printf("  %.3f s: %.3g element reads/s, %.2f GB/s requested, %.3g misses/s\n", secs, r->element_reads_per_s,
		       bw / 1e9, r->miss_iops);
	if (o->pattern == BAM_ARRAYBENCH_HOT || o->pattern == BAM_ARRAYBENCH_SCAN)
		printf("  (the working set was read once before the timed run: these are hits)\n");
	if (o->pattern == BAM_ARRAYBENCH_RANDWRITE || o->pattern == BAM_ARRAYBENCH_RMW)
		printf("  with the flush (%.3f s): %.3f s, %.3g element writes/s; storage: %.3g line writes/s, "
		       "%.1f MB written, %.1f MB read (the reads above count element writes)\n",
		       r->flush_seconds, r->seconds_with_flush, r->writes_per_s, r->storage_write_iops,
		       r->stats.c.bytes_written / 1e6, r->stats.c.bytes_read / 1e6);
	bam_array_stats_print(stdout, "array", &r->stats);
	printf("  wrong values=%llu errors=%llu\n", (unsigned long long)r->wrong_values, (unsigned long long)r->errors);
	if (r->reads_not_attempted)
		printf("  a read timed out: the run stopped, %llu reads not attempted (the rates above are not\n"
		       "  a measurement)\n", (unsigned long long)r->reads_not_attempted);
	if (r->hbm_bps > 0)
		printf("  HBM read %.1f GB/s -> cache hits / HBM = %.3f\n", r->hbm_bps / 1e9, bw / r->hbm_bps);
}

/* bam bench --array's options (bam bench's: bench_io_options) */
const struct option bench_array_options[] = {
	{"array", 0, 0, 'A'}, {"pattern", 1, 0, 'p'}, {"cache-size", 1, 0, 'C'}, {"line-size", 1, 0, 'L'},
	{"coalesce", 1, 0, 'c'}, {"size", 1, 0, 's'}, {"threads", 1, 0, 'T'}, {"steps", 1, 0, 'n'},
	{"working-set", 1, 0, 'W'}, {"backend", 1, 0, 'B'}, {"target", 1, 0, 'g'}, {"json", 0, 0, 'j'},
	{"quiet", 0, 0, 'q'}, {"ctrl-workers", 1, 0, 'w'}, {"timeout-ms", 1, 0, 'o'},
	{"help", 0, 0, 'h'}, {"allow-write", 0, 0, 1001}, {0, 0, 0, 0}};

int bam_bench_array(int argc, char **argv)
{
	const char *backend = "emu", *cache_arg = "64M";
	int allow_write = 0;
	uint64_t size = 1ull << 30, cache_bytes = 64ull << 20, threads = 0, steps = 0, ws = 0;
	uint32_t line = 4096, coalesce = 1, pattern = BAM_ARRAYBENCH_RANDOM, json = 0, quiet = 0, workers = 0;
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
		case 1001:
			allow_write = 1;
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
			       "                     a line with one coalesced line handle and reads all of it),\n"
			       "                     randwrite (one random element written per thread per step),\n"
			       "                     rmw (one random element atomically incremented): with the\n"
			       "                     flush timed, the storage writes counted, the media checked\n"
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
			       "  --backend=STR --allow-write --target=gpu|cpu|auto --ctrl-workers=N --json --quiet\n");
			return 0;
		default: /* getopt said what is wrong on stderr */
			cli_fail_note("bam bench --array: bad option '%s': unknown, ambiguous or missing its value "
				      "(bam bench --array --help)\n", argv[optind - 1]);
			if (cli_arg_names(argv[optind - 1], bench_io_options) && !cli_arg_names(argv[optind - 1], lo))
				cli_eprintf("bam bench --array: %s is an option of bam bench without --array\n", argv[optind - 1]);
			cli_eprintf("usage: bam bench --array [options]     (all options: bam bench --array --help)\n");
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
	struct bam_arraybench_opts o;
	bam_arraybench_opts_init(&o);
	o.backend = allow_write ? cli_allow_write(backend) : backend;
	o.target = target;
	o.pattern = (enum bam_arraybench_pattern)pattern;
	o.size = size;
	o.cache_bytes = cache_bytes;
	o.cache_text = cache_arg;
	o.line_size = line;
	o.coalesce = (int)coalesce;
	o.threads = threads;
	o.steps = steps;
	o.working_set = ws;
	o.ctrl_workers = workers;
	o.timeout_ms = timeout_ms;
	o.msg = array_msg;
	o.msg_arg = &quiet;
	static struct cli_media media; /* media files this run creates go again if it fails */
	media.n = 0;
	char be[1024];
	if (!bam_arraybench_backend(&o, be, sizeof(be), NULL, 0))
		cli_media_note(&media, be);
	struct bam_arraybench_result r;
	char err[2048]; /* (a --backend value of up to 960 bytes, and the reason) */
	int rc = bam_arraybench_run(&o, &r, err, sizeof(err));
	if (rc && !r.complete) {
		cli_media_forget(&media);
		if (r.err_on_stderr) { /* the library said why on stderr; the JSON message gets it too */
			cli_fail_note("bam bench --array: %s\n", err);
			return 1;
		}
		if (err[0])
			cli_fail("bam bench --array: %s\n", err);
		return rc == -EINVAL || rc == -ENODEV ? 2 : 1;
	}
	if (json)
		print_json(&o, &r, rc != 0, err);
	else
		print_text(&o, &r);
	if (rc)
		cli_media_forget(&media);
	else
		cli_media_keep(&media);
	return rc ? 1 : 0;
}
