/* SPDX-License-Identifier: MIT */
/*
 * cmd_table.c - `bam table import|generate|info` and `bam query`: the command-line face of
 * bam/table.h and bam/table_query.h. Exit status: 0 success (query: and every answer
 * verified when --verify), 1 error, 2 usage error. Progress on stderr (--quiet silences
 * it); results on stdout, as text or with --json one JSON document.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "bam/table.h"
#include "bam/table_query.h"
#include "cli_util.h"
#include "cmds.h"

#define EXIT_USAGE 2

static void table_usage(FILE *f)
{
	fprintf(f, "usage: bam table <command> [options]\n\n"
		   "commands:\n"
		   "  import CSV[.gz] -o T.btab [--schema name:type,...]   CSV to a columnar table file\n"
		   "  generate --like SAMPLE.csv --rows N -o T.btab [--seed S] [--columns a,b]\n"
		   "                 a table of N rows resampled (whole rows, seeded) from a real sample\n"
		   "  info T.btab [--verify]   schema, rows, sizes; --verify checks every column's CRC\n\n"
		   "Queries: bam query T.btab --q N (bam query --help). Format: docs/TABLE-FORMAT.md.\n");
}

static void progress_msg(void *arg, const char *text)
{
	(void)arg;
	cli_eprintf("bam %s\n", text);
}

static int table_import(int argc, char **argv)
{
	static const struct option lo[] = {{"output", required_argument, 0, 'o'}, {"schema", required_argument, 0, 's'},
					   {"quiet", no_argument, 0, 'q'},         {"json", no_argument, 0, 'j'},
					   {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
	int json = cli_json_init("table import", argc, argv, "o:s:qh", lo, 'j');
	const char *out = NULL;
	struct bam_table_import_opts o = {.msg = progress_msg};
	int c;
	while ((c = getopt_long(argc, argv, "o:s:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 's': o.schema = optarg; break;
		case 'q': o.quiet = 1; break;
		case 'j': break;
		case 'h':
			printf("usage: bam table import CSV[.gz] -o T.btab [--schema name:type,...] [--quiet] [--json]\n"
			       "Types: int32 int64 float32 float64 timestamp dict (string), or skip. Columns not named\n"
			       "are inferred from every row (two streaming passes). docs/TABLE-FORMAT.md.\n");
			return 0;
		default: cli_fail_note("bam table import: bad option"); return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc || !out) {
		cli_fail("bam table import: give one input CSV and -o OUTPUT\n");
		return EXIT_USAGE;
	}
	struct bam_table_import_result r;
	char err[1024] = "";
	int rc = bam_table_import(argv[optind], out, &o, &r, err, sizeof(err));
	if (rc) {
		cli_fail("bam table import: %s\n", err);
		return rc == -EEXIST ? EXIT_USAGE : 1;
	}
	const double s = r.pass1_s + r.pass2_s;
	if (json) {
		cJSON *j = cJSON_CreateObject();
		cli_json_add_str(j, "input", argv[optind]);
		cli_json_add_str(j, "output", out);
		cJSON_AddNumberToObject(j, "rows", (double)r.rows);
		cJSON_AddNumberToObject(j, "columns", r.ncols);
		cJSON_AddNumberToObject(j, "input_bytes", (double)r.input_bytes);
		cJSON_AddNumberToObject(j, "output_bytes", (double)r.output_bytes);
		cJSON_AddNumberToObject(j, "pass1_s", r.pass1_s);
		cJSON_AddNumberToObject(j, "pass2_s", r.pass2_s);
		cJSON_AddNumberToObject(j, "rows_per_s", s > 0 ? (double)r.rows / s : 0);
		cli_json_print(j);
	} else {
		printf("imported %s -> %s: %" PRIu64 " rows, %u columns, %.1f MB -> %.1f MB in %.2f s (%.0f rows/s)\n",
		       argv[optind], out, r.rows, r.ncols, (double)r.input_bytes / 1e6, (double)r.output_bytes / 1e6, s,
		       s > 0 ? (double)r.rows / s : 0);
	}
	return 0;
}

static int table_generate(int argc, char **argv)
{
	static const struct option lo[] = {{"like", required_argument, 0, 'l'},    {"rows", required_argument, 0, 'n'},
					   {"output", required_argument, 0, 'o'},  {"seed", required_argument, 0, 'S'},
					   {"schema", required_argument, 0, 's'},  {"columns", required_argument, 0, 'c'},
					   {"threads", required_argument, 0, 't'}, {"quiet", no_argument, 0, 'q'},
					   {"json", no_argument, 0, 'j'},          {"help", no_argument, 0, 'h'},
					   {0, 0, 0, 0}};
	int json = cli_json_init("table generate", argc, argv, "l:n:o:S:s:c:t:qh", lo, 'j');
	struct bam_table_generate_opts o = {.msg = progress_msg};
	const char *out = NULL;
	int c;
	char hint[128];
	while ((c = getopt_long(argc, argv, "l:n:o:S:s:c:t:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'l': o.sample = optarg; break;
		case 'o': out = optarg; break;
		case 's': o.schema = optarg; break;
		case 'c': o.columns = optarg; break;
		case 'q': o.quiet = 1; break;
		case 'j': break;
		case 'n':
			if (cli_u64(optarg, 1, UINT64_MAX / 16, &o.rows)) {
				cli_fail("bam table generate: --rows=%s%s\n", optarg, cli_range_hint(optarg, hint, sizeof(hint)));
				return EXIT_USAGE;
			}
			break;
		case 'S':
			if (cli_u64(optarg, 0, UINT64_MAX, &o.seed)) {
				cli_fail("bam table generate: --seed=%s: a whole number\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 't':
			if (cli_u32(optarg, 1, 256, &o.threads)) {
				cli_fail("bam table generate: --threads=%s%s\n", optarg, cli_range_hint(optarg, hint, sizeof(hint)));
				return EXIT_USAGE;
			}
			break;
		case 'h':
			printf("usage: bam table generate --like SAMPLE.csv[.gz] --rows N -o T.btab [--seed S]\n"
			       "         [--schema name:type,...] [--columns a,b,...] [--threads T] [--quiet] [--json]\n"
			       "Row r of the output is a copy of a sample row chosen by a seeded hash of r (whole rows:\n"
			       "the columns keep their joint distribution). Not real data beyond the sample: it says so.\n");
			return 0;
		default: cli_fail_note("bam table generate: bad option"); return EXIT_USAGE;
		}
	}
	if (optind != argc || !out || !o.sample || !o.rows) {
		cli_fail("bam table generate: give --like SAMPLE, --rows N and -o OUTPUT\n");
		return EXIT_USAGE;
	}
	if (!o.quiet)
		cli_eprintf("bam table generate: %" PRIu64 " rows resampled from the real sample %s (seed %" PRIu64
				"): a synthetic table with the sample's value distributions, not real data\n",
			o.rows, o.sample, o.seed);
	struct bam_table_generate_result r;
	char err[1024] = "";
	int rc = bam_table_generate(out, &o, &r, err, sizeof(err));
	if (rc) {
		cli_fail("bam table generate: %s\n", err);
		return rc == -EEXIST ? EXIT_USAGE : 1;
	}
	if (json) {
		cJSON *j = cJSON_CreateObject();
		cli_json_add_str(j, "output", out);
		cli_json_add_str(j, "sample", o.sample);
		cJSON_AddStringToObject(j, "method", "seeded resampling of whole rows of the sample");
		cJSON_AddNumberToObject(j, "rows", (double)r.rows);
		cJSON_AddNumberToObject(j, "sample_rows", (double)r.sample_rows);
		cJSON_AddNumberToObject(j, "seed", (double)o.seed);
		cJSON_AddNumberToObject(j, "columns", r.ncols);
		cJSON_AddNumberToObject(j, "threads", r.threads);
		cJSON_AddNumberToObject(j, "output_bytes", (double)r.output_bytes);
		cJSON_AddNumberToObject(j, "s", r.s);
		cJSON_AddNumberToObject(j, "rows_per_s", r.s > 0 ? (double)r.rows / r.s : 0);
		cli_json_print(j);
	} else {
		printf("generated %s: %" PRIu64 " rows x %u columns resampled from %" PRIu64
		       " real rows of %s (seed %" PRIu64 "), %.1f MB in %.2f s (%.0f rows/s, %u threads)\n",
		       out, r.rows, r.ncols, r.sample_rows, o.sample, o.seed, (double)r.output_bytes / 1e6, r.s,
		       r.s > 0 ? (double)r.rows / r.s : 0, r.threads);
	}
	return 0;
}

static int table_info(int argc, char **argv)
{
	static const struct option lo[] = {{"verify", no_argument, 0, 'v'}, {"json", no_argument, 0, 'j'},
					   {"help", no_argument, 0, 'h'},   {0, 0, 0, 0}};
	int json = cli_json_init("table info", argc, argv, "vh", lo, 'j');
	int verify = 0, c;
	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		switch (c) {
		case 'v': verify = 1; break;
		case 'j': break;
		case 'h': printf("usage: bam table info T.btab [--verify] [--json]\n"); return 0;
		default: cli_fail_note("bam table info: bad option"); return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_fail("bam table info: give one table file\n");
		return EXIT_USAGE;
	}
	const char *path = argv[optind];
	struct bam_table t;
	char err[1024] = "";
	int rc = bam_table_open(path, &t, err, sizeof(err));
	if (rc) {
		cli_fail("bam table info: %s\n", err);
		return 1;
	}
	int bad = -1;
	int vrc = verify ? bam_table_verify(path, &t, &bad, err, sizeof(err)) : 0;
	if (json) {
		cJSON *j = cJSON_CreateObject();
		cli_json_add_str(j, "table", path);
		cJSON_AddNumberToObject(j, "rows", (double)t.rows);
		cJSON_AddNumberToObject(j, "file_bytes", (double)t.file_bytes);
		cJSON *a = cJSON_AddArrayToObject(j, "columns");
		for (uint32_t k = 0; k < t.ncols; k++) {
			const struct bam_table_col *col = &t.cols[k];
			cJSON *e = cJSON_CreateObject();
			cli_json_add_str(e, "name", col->name);
			cJSON_AddStringToObject(e, "type", bam_col_type_name(col->type));
			cJSON_AddNumberToObject(e, "offset", (double)col->offset);
			cJSON_AddNumberToObject(e, "bytes", (double)col->bytes);
			cJSON_AddNumberToObject(e, "nulls", (double)col->nulls);
			cJSON_AddNumberToObject(e, "min", col->min);
			cJSON_AddNumberToObject(e, "max", col->max);
			if (col->type == BAM_COL_DICT)
				cJSON_AddNumberToObject(e, "dict_count", col->dict_count);
			char crc[16];
			snprintf(crc, sizeof(crc), "%08x", col->crc32);
			cJSON_AddStringToObject(e, "crc32", crc);
			cJSON_AddItemToArray(a, e);
		}
		cJSON_AddStringToObject(j, "verified", !verify ? "no" : vrc ? "failed" : "yes");
		if (vrc)
			cli_json_add_str(j, "verify_error", err);
		cli_json_print(j);
	} else {
		printf("table %s: %" PRIu64 " rows, %u columns, %.1f MB (header %" PRIu64 " bytes)\n", path, t.rows, t.ncols,
		       (double)t.file_bytes / 1e6, t.data_offset);
		printf("  %-24s %-9s %12s %14s %10s %14s %14s  %s\n", "column", "type", "offset", "bytes", "nulls", "min",
		       "max", "crc32");
		for (uint32_t k = 0; k < t.ncols; k++) {
			const struct bam_table_col *col = &t.cols[k];
			printf("  %-24s %-9s %12" PRIu64 " %14" PRIu64 " %10" PRIu64 " %14.6g %14.6g  %08x", col->name,
			       bam_col_type_name(col->type), col->offset, col->bytes, col->nulls, col->min, col->max, col->crc32);
			if (col->type == BAM_COL_DICT) {
				printf("  dict of %u:", col->dict_count);
				for (uint32_t d = 0; d < col->dict_count && d < 6; d++) {
					putchar(' ');
					cli_text_escaped(stdout, col->dict[d]);
				}
				if (col->dict_count > 6)
					printf(" ...");
			}
			putchar('\n');
		}
		if (verify)
			printf("checksums: %s\n", vrc ? "MISMATCH" : "ok (header and every column)");
		else
			printf("checksums: header ok; columns not checked (--verify)\n");
	}
	if (vrc)
		cli_fail("bam table info: %s\n", err);
	bam_table_close(&t);
	if (vrc && json)
		cli_json_printed();
	return vrc ? 1 : 0;
}

int bam_cmd_table(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		table_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	if (!strcmp(argv[1], "import"))
		return table_import(argc - 1, argv + 1);
	if (!strcmp(argv[1], "generate"))
		return table_generate(argc - 1, argv + 1);
	if (!strcmp(argv[1], "info"))
		return table_info(argc - 1, argv + 1);
	cli_fail("bam table: unknown command '%s'\n", argv[1]);
	table_usage(stderr);
	return EXIT_USAGE;
}

/* ---- bam query ---- */

static void query_usage(FILE *f)
{
	fprintf(f,
		"usage: bam query T.btab (--q N | --where COL:LO:HI [--cols A,B] [--agg LIST] [--group-by COL]) [options]\n\n"
		"  --q N | A-B | all     the paper's taxi queries Q0-Q5: trip_distance in [%g, %g) miles, then\n"
		"                        0-5 of fare_amount, tip_amount, tolls_amount, total_amount,\n"
		"                        passenger_count at the matching rows (Q5 grouped by passenger_count)\n"
		"  --where COL:LO:HI     general form: LO <= COL < HI; --cols: columns read at those rows;\n"
		"  --agg LIST            count,sum,mean,min,max (printed; default all); --group-by COL\n"
		"  --mode M              bam (default: on demand through the cache), whole-column (the CPU\n"
		"                        reads whole columns and copies them over; in e2e), host (pinned\n"
		"                        host memory, zero-copy), gpu (GPU memory)\n"
		"  --backend STR         bam mode's back end (default emu; e.g. emu:profile=optane-p5800x,count=4)\n"
		"  --target cpu|gpu      (default: the GPU when there is one)\n"
		"  --cache-size BYTES    bam mode (default 1/8 of the columns, at most 4 GiB)\n"
		"  --line-size BYTES     bam mode cache line (default 4096)\n"
		"  --read-bw BYTES/S     whole-column: pace the file reads (model storage of that bandwidth)\n"
		"  --verify              compare with the CPU reference (exit 1 on a difference)\n"
		"  --json, --quiet\n",
		BAM_TQ_TAXI_LO, BAM_TQ_TAXI_HI);
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || v < 0)
		return -EINVAL;
	switch (*end) {
	case 0: break;
	case 'k': case 'K': v *= 1024; end++; break;
	case 'm': case 'M': v *= 1 << 20; end++; break;
	case 'g': case 'G': v *= 1 << 30; end++; break;
	default: return -EINVAL;
	}
	if (*end || v >= 1.8e19)
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

static uint32_t parse_aggs(const char *s)
{
	static const char *const names[] = {"count", "sum", "mean", "min", "max"};
	uint32_t m = 0;
	char *d = strdup(s), *save = NULL;
	for (char *t = strtok_r(d, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int i = cli_name_index(names, 5, t);
		if (i < 0) {
			free(d);
			return 0;
		}
		m |= 1u << i;
	}
	free(d);
	return m;
}

static cJSON *stat_json(const struct bam_tq_stat *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "count", (double)s->count);
	cJSON_AddNumberToObject(o, "sum", s->sum);
	cJSON_AddNumberToObject(o, "mean", s->count ? s->sum / (double)s->count : 0);
	cJSON_AddNumberToObject(o, "min", s->min);
	cJSON_AddNumberToObject(o, "max", s->max);
	return o;
}

static void print_stat(const char *name, const struct bam_tq_stat *s, uint32_t aggs)
{
	printf("    %-20s", name);
	if (aggs & BAM_TQ_COUNT)
		printf(" count %-10" PRIu64, s->count);
	if (aggs & BAM_TQ_SUM)
		printf(" sum %-16.6f", s->sum);
	if (aggs & BAM_TQ_MEAN)
		printf(" mean %-12.6f", s->count ? s->sum / (double)s->count : 0);
	if (aggs & BAM_TQ_MIN)
		printf(" min %-10.6g", s->min);
	if (aggs & BAM_TQ_MAX)
		printf(" max %-10.6g", s->max);
	putchar('\n');
}

int bam_cmd_query(int argc, char **argv)
{
	enum { O_WHERE = 256, O_COLS, O_AGG, O_GROUP, O_MODE, O_BACKEND, O_TARGET, O_CACHE, O_LINE, O_RBW, O_VERIFY, O_Q };
	static const struct option lo[] = {{"q", required_argument, 0, O_Q},          {"where", required_argument, 0, O_WHERE},
					   {"cols", required_argument, 0, O_COLS},    {"agg", required_argument, 0, O_AGG},
					   {"group-by", required_argument, 0, O_GROUP}, {"mode", required_argument, 0, O_MODE},
					   {"backend", required_argument, 0, O_BACKEND}, {"target", required_argument, 0, O_TARGET},
					   {"cache-size", required_argument, 0, O_CACHE}, {"line-size", required_argument, 0, O_LINE},
					   {"read-bw", required_argument, 0, O_RBW},  {"verify", no_argument, 0, O_VERIFY},
					   {"quiet", no_argument, 0, 'q'},            {"json", no_argument, 0, 'j'},
					   {"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};
	int json = cli_json_init("query", argc, argv, "qh", lo, 'j');
	struct bam_table_query_opts o = {.prog = "bam query", .msg = NULL};
	struct bam_table_query qs[6], gq;
	memset(&gq, 0, sizeof(gq));
	int qlo = -1, qhi = -1, general = 0, c;
	uint32_t aggs = 0;
	uint64_t v64;
	while ((c = getopt_long(argc, argv, "qh", lo, NULL)) != -1) {
		switch (c) {
		case O_Q:
			if (!strcmp(optarg, "all")) {
				qlo = 0, qhi = 5;
			} else {
				char *e1, *e2;
				qlo = (int)strtol(optarg, &e1, 10);
				qhi = qlo;
				if (e1 == optarg)
					qlo = -1;
				else if (*e1 == '-')
					qhi = (int)strtol(e1 + 1, &e2, 10), qhi = *e2 || e2 == e1 + 1 ? -1 : qhi;
				else if (*e1)
					qlo = -1;
			}
			if (qhi < 0 || qlo < 0 || qhi > 5 || qlo > qhi) {
				cli_fail("bam query: --q=%s: a query 0 to 5, a range A-B, or all\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case O_WHERE: {
			general = 1;
			char *s = strdup(optarg), *c2 = strrchr(s, ':'), *c1 = NULL;
			if (c2) {
				*c2 = 0;
				c1 = strrchr(s, ':');
			}
			char *e1 = NULL, *e2 = NULL;
			if (c1) {
				*c1 = 0;
				gq.lo = strtod(c1 + 1, &e1);
				gq.hi = strtod(c2 + 1, &e2);
			}
			if (!c1 || !*s || strlen(s) > BAM_TABLE_NAME_MAX || e1 == c1 + 1 || *e1 || e2 == c2 + 1 || *e2) {
				cli_fail("bam query: --where=%s: COLUMN:LO:HI (LO <= value < HI)\n", optarg);
				free(s);
				return EXIT_USAGE;
			}
			snprintf(gq.where, sizeof(gq.where), "%s", s);
			free(s);
			break;
		}
		case O_COLS: {
			general = 1;
			char *d = strdup(optarg), *save = NULL;
			for (char *t = strtok_r(d, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (gq.ncols == BAM_TQ_MAX_COLS - 1 || strlen(t) > BAM_TABLE_NAME_MAX) {
					cli_fail("bam query: --cols: at most %u names of at most %u bytes\n", BAM_TQ_MAX_COLS - 1,
						 BAM_TABLE_NAME_MAX);
					free(d);
					return EXIT_USAGE;
				}
				snprintf(gq.cols[gq.ncols++], sizeof(gq.cols[0]), "%s", t);
			}
			free(d);
			break;
		}
		case O_AGG:
			if (!(aggs = parse_aggs(optarg))) {
				cli_fail("bam query: --agg=%s: a list of count, sum, mean, min, max\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case O_GROUP:
			general = 1;
			if (strlen(optarg) > BAM_TABLE_NAME_MAX) {
				cli_fail("bam query: --group-by=%s: no such column name (too long)\n", optarg);
				return EXIT_USAGE;
			}
			snprintf(gq.group_by, sizeof(gq.group_by), "%s", optarg);
			break;
		case O_MODE: {
			int m = bam_table_mode_parse(optarg);
			if (m < 0) {
				cli_fail("bam query: --mode=%s: bam, whole-column, host or gpu\n", optarg);
				return EXIT_USAGE;
			}
			o.mode = (enum bam_table_mode)m;
			break;
		}
		case O_BACKEND: o.backend = optarg; break;
		case O_TARGET:
			if (!strcmp(optarg, "cpu"))
				o.target = BAM_TARGET_CPU;
			else if (!strcmp(optarg, "gpu"))
				o.target = BAM_TARGET_GPU;
			else if (strcmp(optarg, "auto")) {
				cli_fail("bam query: --target=%s: cpu, gpu or auto\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case O_CACHE:
			if (parse_size(optarg, &o.cache_bytes) || o.cache_bytes < (1u << 20)) {
				cli_fail("bam query: --cache-size=%s: bytes (k, M, G suffixes), at least 1M\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case O_LINE:
			if (parse_size(optarg, &v64) || v64 < 512 || v64 > 65536 || (v64 & (v64 - 1))) {
				cli_fail("bam query: --line-size=%s: a power of two from 512 to 64k\n", optarg);
				return EXIT_USAGE;
			}
			o.line = (uint32_t)v64;
			break;
		case O_RBW: {
			char *e;
			o.read_bw = strtod(optarg, &e);
			if (e == optarg || *e || !(o.read_bw > 0)) {
				cli_fail("bam query: --read-bw=%s: bytes per second (e.g. 7.2e9)\n", optarg);
				return EXIT_USAGE;
			}
			break;
		}
		case O_VERIFY: o.verify = 1; break;
		case 'q': o.quiet = 1; break;
		case 'j': break;
		case 'h': query_usage(stdout); return 0;
		default: cli_fail_note("bam query: bad option"); return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_fail("bam query: give one table file (bam query --help)\n");
		return EXIT_USAGE;
	}
	if (general == (qlo >= 0) || (general && !gq.where[0])) {
		cli_fail("bam query: give --q N, or --where COL:LO:HI (with --cols, --group-by), not both\n");
		return EXIT_USAGE;
	}
	if (o.backend && o.mode != BAM_TABLE_MODE_BAM) {
		cli_fail("bam query: --backend applies to --mode=bam\n");
		return EXIT_USAGE;
	}
	if (o.read_bw > 0 && o.mode != BAM_TABLE_MODE_WHOLE_COLUMN) {
		cli_fail("bam query: --read-bw applies to --mode=whole-column\n");
		return EXIT_USAGE;
	}
	o.table = argv[optind];
	if (general) {
		snprintf(gq.name, sizeof(gq.name), "query");
		gq.aggs = aggs;
		o.q = &gq;
		o.nq = 1;
	} else {
		for (int k = qlo; k <= qhi; k++) {
			bam_table_taxi_query(k, &qs[k - qlo]);
			qs[k - qlo].aggs = aggs;
		}
		o.q = qs;
		o.nq = (uint32_t)(qhi - qlo + 1);
	}
	struct bam_table_run_result r;
	char err[2048] = "";
	int rc = bam_table_query_run(&o, &r, err, sizeof(err));
	if (rc) {
		cli_fail("%s\n", err);
		bam_table_run_result_free(&r);
		return r.refused ? EXIT_USAGE : 1;
	}
	int bad = 0;
	for (uint32_t i = 0; i < r.nq; i++)
		bad |= r.q[i].verified < 0;
	if (json) {
		cJSON *j = cJSON_CreateObject();
		cli_json_add_str(j, "table", o.table);
		cJSON_AddStringToObject(j, "mode", bam_table_mode_name(o.mode));
		cJSON_AddStringToObject(j, "target", r.on_gpu ? "gpu" : "cpu");
		cli_json_add_str(j, "backend", r.backend_desc);
		cJSON_AddNumberToObject(j, "rows", (double)r.rows);
		cJSON_AddNumberToObject(j, "place_s", r.place_s);
		cJSON_AddNumberToObject(j, "setup_s", r.setup_s);
		if (o.mode == BAM_TABLE_MODE_BAM) {
			cJSON_AddNumberToObject(j, "cache_bytes", (double)r.cache_bytes);
			cJSON_AddNumberToObject(j, "line", r.line);
		}
		if (o.read_bw > 0)
			cJSON_AddNumberToObject(j, "read_bw", o.read_bw);
		cJSON *qa = cJSON_AddArrayToObject(j, "queries");
		for (uint32_t i = 0; i < r.nq; i++) {
			const struct bam_tq_result *q = &r.q[i];
			cJSON *e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "name", q->name);
			cli_json_add_str(e, "where", o.q[i].where);
			cJSON_AddNumberToObject(e, "lo", o.q[i].lo);
			cJSON_AddNumberToObject(e, "hi", o.q[i].hi);
			cJSON_AddNumberToObject(e, "matched", (double)q->matched);
			cJSON_AddNumberToObject(e, "selectivity", q->selectivity);
			cJSON_AddNumberToObject(e, "load_s", q->load_s);
			cJSON_AddNumberToObject(e, "compute_s", q->compute_s);
			cJSON_AddNumberToObject(e, "e2e_s", q->e2e_s);
			cJSON_AddNumberToObject(e, "rows_per_s", q->rows_per_s);
			cJSON_AddNumberToObject(e, "bytes_requested", (double)q->bytes_requested);
			cJSON_AddNumberToObject(e, "bytes_read", (double)q->bytes_read);
			cJSON_AddNumberToObject(e, "amplification", q->amplification);
			cJSON_AddStringToObject(e, "verified", q->verified > 0 ? "yes" : q->verified < 0 ? "MISMATCH" : "no");
			cJSON *cs = cJSON_AddObjectToObject(e, "columns");
			for (uint32_t k = 0; k < q->ncols; k++)
				cJSON_AddItemToObject(cs, q->col_name[k], stat_json(&q->col[k]));
			if (o.q[i].group_by[0]) {
				cli_json_add_str(e, "group_by", o.q[i].group_by);
				cJSON *ga = cJSON_AddArrayToObject(e, "groups");
				for (uint32_t g = 0; g < q->ngroups; g++) {
					cJSON *ge = cJSON_CreateObject();
					cli_json_add_str(ge, "key", q->groups[g].label);
					cJSON_AddNumberToObject(ge, "rows", (double)q->groups[g].rows);
					cJSON *gc = cJSON_AddObjectToObject(ge, "columns");
					for (uint32_t k = 0; k < q->ncols; k++)
						cJSON_AddItemToObject(gc, q->col_name[k], stat_json(&q->groups[g].col[k]));
					cJSON_AddItemToArray(ga, ge);
				}
			}
			cJSON_AddItemToArray(qa, e);
		}
		if (bad) {
			cli_fail("bam query: an answer differs from the CPU reference\n");
			cJSON_AddItemToObject(j, "error", cli_json_error(1));
			cli_json_printed();
		}
		cli_json_print(j);
	} else {
		printf("table %s: %" PRIu64 " rows; mode %s on the %s target (%s)", o.table, r.rows,
		       bam_table_mode_name(o.mode), r.on_gpu ? "GPU" : "CPU", r.backend_desc);
		if (o.mode == BAM_TABLE_MODE_BAM)
			printf("; cache %.1f MB, %u-byte lines; columns placed on the media in %.2f s (not in e2e)",
			       (double)r.cache_bytes / 1e6, r.line, r.place_s);
		else if (o.mode != BAM_TABLE_MODE_WHOLE_COLUMN)
			printf("; columns loaded once in %.2f s (not in e2e)", r.place_s);
		printf("\n");
		for (uint32_t i = 0; i < r.nq; i++) {
			const struct bam_tq_result *q = &r.q[i];
			const uint32_t ag = o.q[i].aggs ? o.q[i].aggs : 31u;
			printf("%s: %s in [%g, %g): %" PRIu64 " of %" PRIu64 " rows, selectivity %.4f%%\n", q->name,
			       o.q[i].where, o.q[i].lo, o.q[i].hi, q->matched, q->rows, 100 * q->selectivity);
			printf("  e2e %.4f s (load %.4f + compute %.4f), %.3g rows/s; requested %.1f MB, read from storage %.1f MB, I/O amplification %.2f; verified: %s\n",
			       q->e2e_s, q->load_s, q->compute_s, q->rows_per_s, (double)q->bytes_requested / 1e6,
			       (double)q->bytes_read / 1e6, q->amplification,
			       q->verified > 0 ? "yes" : q->verified < 0 ? "MISMATCH" : "no");
			for (uint32_t k = 0; k < q->ncols; k++)
				print_stat(q->col_name[k], &q->col[k], ag);
			if (o.q[i].group_by[0]) {
				printf("  grouped by %s:\n", o.q[i].group_by);
				for (uint32_t g = 0; g < q->ngroups; g++) {
					printf("   %s = ", o.q[i].group_by);
					cli_text_escaped(stdout, q->groups[g].label);
					printf(": %" PRIu64 " rows\n", q->groups[g].rows);
					for (uint32_t k = 0; k < q->ncols; k++)
						print_stat(q->col_name[k], &q->groups[g].col[k], ag);
				}
			}
		}
		if (bad)
			cli_fail("bam query: an answer differs from the CPU reference\n");
	}
	bam_table_run_result_free(&r);
	return bad ? 1 : 0;
}
