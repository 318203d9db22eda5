/* SPDX-License-Identifier: MIT */
/* bam vecadd: c = a + b with the vectors on storage (apps/vecadd, bam/vecadd.h): parse,
 * call bam_vecadd_run, print. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "bam/bam.h"
#include "bam/backend.h"
#include "bam/vecadd.h"
#include "cli_util.h"
#include "cmds.h"

static const char *const mode_names[] = {"bam", "tiling", "host", "gpu"};
static const char *const type_names[] = {"u64", "f32"};
static const char *const target_names[] = {"auto", "cpu", "gpu"};

static void progress_msg(void *arg, const char *text)
{
	(void)arg;
	cli_eprintf("bam %s\n", text);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bam vecadd --n N [--type u64|f32] [--mode bam|tiling|host|gpu] [--backend STR]\n"
		   "       [--target auto|cpu|gpu] [--cache-size BYTES] [--line-size BYTES] [--threads N]\n"
		   "       [--tile-size BYTES] [--ctrl-workers N] [--timeout-ms MS] [--quiet] [--json]\n"
		   "c = a + b, each vector N elements on storage; c checked on the media after the run.\n"
		   "Prints time, bytes the controllers read and wrote, and the cache's write counters\n"
		   "(--json: one JSON object; docs/CLI.md). Progress on stderr (phases, and every 2 s\n"
		   "while the kernels run) unless --quiet or --json.\n");
}

int bam_cmd_vecadd(int argc, char **argv)
{
	static const struct option lo[] = {
		{"n", required_argument, 0, 'n'},	  {"type", required_argument, 0, 'T'},
		{"mode", required_argument, 0, 'm'},	  {"backend", required_argument, 0, 'b'},
		{"target", required_argument, 0, 't'},	  {"cache-size", required_argument, 0, 'c'},
		{"line-size", required_argument, 0, 'l'}, {"threads", required_argument, 0, 'j'},
		{"tile-size", required_argument, 0, 'S'}, {"ctrl-workers", required_argument, 0, 'w'},
		{"timeout-ms", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'},
		{"json", no_argument, 0, 'J'},		  {"quiet", no_argument, 0, 'q'},
		{0, 0, 0, 0}};
	const int json = cli_json_init("vecadd", argc, argv, "h", lo, 'J');
	struct bam_vecadd_opts o = {.backend = "emu"};
	int ch, k, quiet = 0;
	uint64_t v;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'n':
			if (cli_u64(optarg, 1, 1ull << 40, &o.n))
				return 2;
			break;
		case 'T':
			if ((k = cli_name_index(type_names, 2, optarg)) < 0) {
				cli_fail("bam vecadd: --type=%s: u64 or f32\n", optarg);
				return 2;
			}
			o.type = (enum bam_vecadd_type)k;
			break;
		case 'm':
			if ((k = cli_name_index(mode_names, 4, optarg)) < 0) {
				cli_fail("bam vecadd: --mode=%s: bam, tiling, host or gpu\n", optarg);
				return 2;
			}
			o.mode = (enum bam_vecadd_mode)k;
			break;
		case 'b':
			o.backend = optarg;
			break;
		case 't':
			if ((k = cli_name_index(target_names, 3, optarg)) < 0) {
				cli_fail("bam vecadd: --target=%s: auto, cpu or gpu\n", optarg);
				return 2;
			}
			o.target = (enum bam_target)k;
			break;
		case 'c':
		case 'S':
			if (bam_parse_size(optarg, &v) || !v) {
				cli_fail("bam vecadd: --%s=%s: a size in bytes (K, M, G suffixes)\n",
					 ch == 'c' ? "cache-size" : "tile-size", optarg);
				return 2;
			}
			if (ch == 'c')
				o.cache_bytes = v;
			else
				o.tile_bytes = v;
			break;
		case 'l':
			if (bam_parse_size(optarg, &v) || v > 65536) {
				cli_fail("bam vecadd: --line-size=%s: 4096 to 65536 bytes, a power of two\n", optarg);
				return 2;
			}
			o.line_size = (uint32_t)v;
			break;
		case 'j':
			if (cli_u64(optarg, 1, 1ull << 24, &o.threads))
				return 2;
			break;
		case 'w':
			if (cli_u32(optarg, 1, 1024, &o.ctrl_workers))
				return 2;
			break;
		case 'o':
			if (cli_u64(optarg, 1, 3600000, &o.timeout_ms))
				return 2;
			break;
		case 'J':
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !o.n) {
		cli_fail("bam vecadd: %s\n", optind < argc ? "unexpected argument" : "--n is required");
		usage(stderr);
		return 2;
	}
	if (!quiet && !json)
		o.msg = progress_msg;
	struct bam_vecadd_result r;
	char err[1024];
	int rc = bam_vecadd_run(&o, &r, err, sizeof(err));
	if (r.backend[0] && json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "mode", mode_names[o.mode]);
		cJSON_AddStringToObject(j, "type", type_names[o.type]);
		cJSON_AddStringToObject(j, "target", r.target == BAM_TARGET_GPU ? "gpu" : "cpu");
		cli_json_add_str(j, "backend", r.backend);
		cJSON_AddNumberToObject(j, "n", (double)o.n);
		cJSON_AddNumberToObject(j, "vector_bytes", (double)r.vector_bytes);
		cJSON_AddNumberToObject(j, "cache_bytes", (double)r.cache_bytes);
		cJSON_AddNumberToObject(j, "seconds", r.seconds);
		cJSON_AddNumberToObject(j, "flush_seconds", r.flush_seconds);
		cJSON_AddNumberToObject(j, "GBps", r.seconds > 0 ? 3.0 * (double)r.vector_bytes / r.seconds / 1e9 : 0);
		cJSON_AddNumberToObject(j, "storage_read", (double)r.storage_read);
		cJSON_AddNumberToObject(j, "storage_written", (double)r.storage_written);
		cJSON_AddNumberToObject(j, "read_ratio", (double)r.storage_read / (2.0 * (double)r.vector_bytes));
		cJSON_AddNumberToObject(j, "written_ratio", (double)r.storage_written / (double)r.vector_bytes);
		cJSON_AddNumberToObject(j, "host_read", (double)r.host_read);
		cJSON_AddNumberToObject(j, "host_written", (double)r.host_written);
		if (o.mode == BAM_VECADD_BAM) {
			cJSON_AddNumberToObject(j, "fills_avoided", (double)r.fills_avoided);
			cJSON_AddNumberToObject(j, "partial_write_fetches", (double)r.partial_write_fetches);
			cJSON_AddNumberToObject(j, "writebacks", (double)r.writebacks);
			cJSON_AddNumberToObject(j, "writeback_errors", (double)r.writeback_errors);
		}
		cJSON_AddNumberToObject(j, "wrong", (double)r.wrong);
		cJSON_AddNumberToObject(j, "errors", (double)r.errors);
		if (rc) {
			cli_fail("bam vecadd: %s\n", err);
			cJSON_AddItemToObject(j, "error", cli_json_error(1));
			cli_json_printed();
		}
		cli_json_print(j);
		return rc ? 1 : 0;
	}
	if (r.backend[0]) {
		printf("vecadd: mode=%s type=%s target=%s n=%llu vector=%.1f MiB cache=%.1f MiB backend=%s\n",
		       mode_names[o.mode], type_names[o.type], r.target == BAM_TARGET_GPU ? "gpu" : "cpu",
		       (unsigned long long)o.n, r.vector_bytes / 1048576.0, r.cache_bytes / 1048576.0, r.backend);
		printf("vecadd: seconds=%.4f (flush %.4f) GBps=%.3f (3 vectors / time)\n", r.seconds, r.flush_seconds,
		       r.seconds > 0 ? 3.0 * (double)r.vector_bytes / r.seconds / 1e9 : 0);
		printf("vecadd: storage read=%llu bytes (%.3fx size(a)+size(b)) written=%llu bytes (%.3fx size(c))\n",
		       (unsigned long long)r.storage_read, (double)r.storage_read / (2.0 * (double)r.vector_bytes),
		       (unsigned long long)r.storage_written, (double)r.storage_written / (double)r.vector_bytes);
		if (r.host_read || r.host_written)
			printf("vecadd: provisioning path (no queues) read=%llu written=%llu bytes\n",
			       (unsigned long long)r.host_read, (unsigned long long)r.host_written);
		if (o.mode == BAM_VECADD_BAM)
			printf("vecadd: whole-line writes (no fetch)=%llu partial-write fetches=%llu write-backs=%llu "
			       "write-back errors=%llu\n",
			       (unsigned long long)r.fills_avoided, (unsigned long long)r.partial_write_fetches,
			       (unsigned long long)r.writebacks, (unsigned long long)r.writeback_errors);
		printf("vecadd: check on the media: %llu wrong, %llu errors\n", (unsigned long long)r.wrong,
		       (unsigned long long)r.errors);
	}
	if (rc) {
		cli_fail("bam vecadd: %s\n", err);
		return 1;
	}
	return 0;
}
