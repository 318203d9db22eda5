/* SPDX-License-Identifier: MIT */
/*
 * bam bench: a fio-like benchmark of the I/O engine (and, with --array, of the cache
 * and array API). Flags use fio's names where fio has one. Prints its whole
 * configuration, IOPS, bandwidth, latency percentiles and error counts; --json for
 * machines. Every read is verified against the LBA-derived pattern unless --verify=0.
 * The engine is bam_iobench_run (apps/iobench, bam/iobench.h): here the options and
 * the output.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "bam/bam.h"
#include "bam/backend.h" /* bam_parse_size */
#include "bam/iobench.h"
#include "cli_util.h"
#include "cmds.h"

/* --compare: CPU-orchestrated reads of the same files */
#define CMP_POSIX BAM_IOBENCH_CMP_POSIX
#define CMP_URING BAM_IOBENCH_CMP_URING

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bam bench [options]     (fio's names where fio has one)\n"
		"  --name=NAME        a name for the run, printed and in the JSON\n"
		"  --rw=MODE          read, write, randread (default), randwrite, randrw\n"
		"  --rwmixread=PCT    reads in randrw, percent (default 50)\n"
		"  --bs=SIZE          bytes per I/O, 512 to 1M, multiple of the LBA size (default 4k)\n"
		"  --size=SIZE        region tested, over all controllers (default 1G; on a GPU with\n"
		"                     emulated media in host memory 2x the GPU's memory, at most half\n"
		"                     the available host memory: storage larger than GPU memory)\n"
		"  --runtime=TIME     run for this long after the ramp: 3, 3s, 500ms, 2m, 1h (default:\n"
		"                     the region once, at least 64 I/Os per thread, at most 10 s)\n"
		"  --time_based       run the whole --runtime (re-reading the region), as fio's; a\n"
		"                     --runtime without --number_ios is always time-based\n"
		"  --ramp_time=TIME   run this long first, not counted in the figures\n"
		"  --number_ios=N     I/Os in all, rounded up to a multiple of --threads\n"
		"  --iodepth=N        I/Os in flight per thread, 1 to the queue depth (default 1)\n"
		"  --threads=N        GPU threads / CPU-target threads (default 65536 GPU, 16 CPU)\n"
		"  --numjobs=N        fio's name for --threads (a job = a thread with --iodepth I/Os)\n"
		"  --filename=PATH    the file back end on PATH (created at --size when missing):\n"
		"                     --backend=file:PATH\n"
		"  --direct=0|1       the file back end's O_DIRECT (direct=; default 1)\n"
		"  --output-format=F  normal (default) or json (= --json)\n"
		"  --qpairs=N         queue pairs per controller (default 128 GPU, 16 CPU)\n"
		"  --queue-depth=N    entries per queue, power of two up to 32768 (default 1024 GPU,\n"
		"                     256 CPU)\n"
		"  --backend=STR      e.g. emu, emu:profile=optane-p5800x,count=4 (docs/BACKENDS.md)\n"
		"  --allow-write      let a run write to a real device (nvme: writes, the prefill)\n"
		"  --target=T         gpu, cpu or auto (default)\n"
		"  --verify=0|1       check the blocks read (default 1): against the pattern on emulated\n"
		"                     media or after --prefill; against the file's own content (CPU\n"
		"                     target) on storage; else not checked (said in the output)\n"
		"  --baseline=0|1     measure the physical limit in the same run (default 1 for reads)\n"
		"  --compare=LIST     with --backend=file:..., after the bam run, read the same files\n"
		"                     the same way (--bs, offsets, I/O count / --runtime, O_DIRECT as\n"
		"                     the back end's direct=) outside bam; LIST is one or both of:\n"
		"                       posix  CPU threads: pread, then a copy of the block into GPU\n"
		"                              memory (cudaMemcpyAsync + sync) or, on the CPU target,\n"
		"                              host memory: GDS compatibility mode / KvikIO's fallback\n"
		"                       uring  the disk's ceiling: io_uring readers into host memory\n"
		"                     prints IOPS, bandwidth and bam/posix, bam/ceiling (docs/BACKENDS.md)\n"
		"  --posix-threads=N  threads of the posix comparison (default: online CPUs, at most 64)\n"
		"  --uring-threads=N  threads of the io_uring ceiling (default 4, at most the CPUs)\n"
		"  --uring-qd=N       reads in flight per ceiling thread (default 128; capped at 64 MiB of\n"
		"                     buffers per thread: 64 at --bs=1M)\n"
		"  --prefill=V        write the verification pattern over the region first: emulated\n"
		"                     media always (unless 0); files and devices only when asked:\n"
		"                     1 (refused on block devices and on files holding other data),\n"
		"                     force (even there); 0: the media hold it from an earlier run\n"
		"  --timeout-ms=N     bound of each wait for a completion (default 5000)\n"
		"  --ctrl-workers=N   emulated controller workers per controller\n"
		"  --seed=N           random seed (default 1)\n"
		"  --json             JSON on stdout\n"
		"  --quiet            no progress on stderr\n"
		"  --array            through the cache and array API ('bam bench --array --help')\n"
		"JSON keys: docs/BENCH-JSON.md\n");
}

/* "posix", "uring" or both, comma-separated */
static int parse_compare(const char *s, uint32_t *out)
{
	char buf[64];
	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", s);
	uint32_t m = 0;
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "posix"))
			m |= CMP_POSIX;
		else if (!strcmp(t, "uring"))
			m |= CMP_URING;
		else
			return -EINVAL;
	}
	if (!m)
		return -EINVAL;
	*out = m;
	return 0;
}

static const char *const rw_names[] = {"read", "write", "randread", "randwrite", "randrw"};

/* A time as fio writes it: a number and a unit, us, ms, s (the default), m, h or d.
 * 0 with seconds in *out, or -EINVAL. */
static int parse_time(const char *s, double *out)
{
	static const struct {
		const char *u;
		double k;
	} units[] = {{"", 1}, {"s", 1}, {"sec", 1}, {"us", 1e-6}, {"usec", 1e-6}, {"ms", 1e-3}, {"msec", 1e-3},
		     {"m", 60}, {"min", 60}, {"h", 3600}, {"d", 86400}};
	char *end = NULL;
	double v = strtod(s, &end);
	if (end == s || !(v >= 0))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].u)) {
			*out = v * units[i].k;
			return 0;
		}
	return -EINVAL;
}

/* The keys every `bam bench` JSON object starts with (docs/BENCH-JSON.md): the program,
 * its version and commit, the command, and when it ran. */
void bench_json_head(struct cJSON *j, const char *command)
{
	cJSON *p = cJSON_AddObjectToObject(j, "program");
	cJSON_AddStringToObject(p, "name", "bam");
	cJSON_AddStringToObject(p, "version", BAM_VERSION);
#ifdef BAM_COMMIT
	cJSON_AddStringToObject(p, "commit", BAM_COMMIT);
#endif
	cJSON_AddStringToObject(j, "command", command);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char iso[32];
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
	cJSON_AddNumberToObject(j, "timestamp", (double)ts.tv_sec);
	cJSON_AddStringToObject(j, "time", iso);
}

static int parse_rw(const char *s, enum bam_iobench_rw *rw)
{
	for (int i = 0; i < 5; i++)
		if (!strcmp(s, rw_names[i])) {
			*rw = (enum bam_iobench_rw)i;
			return 0;
		}
	return -EINVAL;
}


/* ---- output ------------------------------------------------------------------------- */

/* The engine's messages on stderr, as "bam bench: TEXT"; failures also kept for --json's
 * error object. */
struct msg_cfg {
	int quiet;
};

static void bench_msg(void *arg, enum bam_iobench_msg_kind kind, const char *text)
{
	const struct msg_cfg *m = arg;
	if (kind == BAM_IOBENCH_MSG_ERROR)
		cli_fail("bam bench: %s\n", text);
	else if (kind != BAM_IOBENCH_MSG_NOTE || !m->quiet)
		cli_eprintf("bam bench: %s\n", text);
}

/* The engine's error message (one or more lines) on stderr and kept, each line prefixed */
static void fail_lines(const char *prefix, const char *msg)
{
	while (*msg) {
		const char *nl = strchr(msg, '\n');
		const int n = nl ? (int)(nl - msg) : (int)strlen(msg);
		cli_fail("%s: %.*s\n", prefix, n, msg);
		msg += n + (nl ? 1 : 0);
	}
}

/* The exit status of a failed run: 2 when the options or the back-end string were
 * refused (and --target=gpu without a GPU), else 1 */
static int fail_status(int rc)
{
	return rc == -EINVAL || rc == -ENODEV ? 2 : 1;
}

static const char *const cmp_name[2] = {"posix", "uring"};

static void cmp_json(cJSON *j, const struct bam_iobench_result *r)
{
	cJSON *o = cJSON_AddObjectToObject(j, "compare");
	cJSON_AddNumberToObject(o, "files", r->compare_files);
	cJSON_AddNumberToObject(o, "direct_files", r->compare_direct_files);
	for (int k = 0; k < 2; k++) {
		const struct bam_iobench_compare *c = &r->compare[k];
		if (!c->ran)
			continue;
		cJSON *b = cJSON_AddObjectToObject(o, cmp_name[k]);
		cJSON_AddStringToObject(b, "what", c->what);
		cJSON_AddNumberToObject(b, "threads", c->threads);
		if (k == 1)
			cJSON_AddNumberToObject(b, "qd", c->qd);
		cJSON_AddNumberToObject(b, "ios", (double)c->ios);
		cJSON_AddNumberToObject(b, "seconds", c->seconds);
		cJSON_AddNumberToObject(b, "iops", c->iops);
		cJSON_AddNumberToObject(b, "MBps", c->MBps);
		cJSON_AddNumberToObject(b, "errors", (double)c->errors);
		cJSON_AddNumberToObject(b, "verified", (double)c->verified);
		cJSON_AddNumberToObject(b, "verify_failures", (double)c->verify_failures);
		/* bam / this: above 1 means bam moved more */
		cJSON_AddNumberToObject(b, "ratio_iops", c->ratio_iops);
		cJSON_AddNumberToObject(b, "ratio_bw", c->ratio_bw);
		if (c->first_error[0])
			cli_json_add_str(b, "first_error", c->first_error);
	}
}

static void cmp_print(const struct bam_iobench_result *r)
{
	const int on_gpu = r->target == BAM_TARGET_GPU;
	printf("  compare (same files, bs, offsets and I/O count / run time; %u of %u files with O_DIRECT):\n",
	       r->compare_direct_files, r->compare_files);
	for (int k = 0; k < 2; k++) {
		const struct bam_iobench_compare *c = &r->compare[k];
		if (!c->ran)
			continue;
		if (k == 0)
			printf("    posix (%u threads: pread, then %s per block):", c->threads,
			       on_gpu ? "cudaMemcpyAsync + sync" : "memcpy");
		else
			printf("    ceiling (io_uring, %u threads x QD %u, host memory):", c->threads, c->qd);
		printf(" ios=%llu in %.3f s, IOPS=%.0f BW=%.1f MB/s, errors=%llu verified=%llu verify_failures=%llu\n",
		       (unsigned long long)c->ios, c->seconds, c->iops, c->MBps, (unsigned long long)c->errors,
		       (unsigned long long)c->verified, (unsigned long long)c->verify_failures);
		printf("      -> bam/%s = %.3f (IOPS), %.3f (bandwidth)\n", k ? "ceiling" : "posix", c->ratio_iops, c->ratio_bw);
	}
}

/* What the CLI adds to the engine's options (fio's names) */
struct cli_extra {
	const char *name;      /* --name */
	int time_based;        /* --time_based */
	const char *filename;  /* --filename */
	int direct;            /* --direct: -1 not given */
	const char *prefill;   /* --prefill as given (NULL: the default) */
	const char *compare;   /* --compare as given */
	const char *target;    /* --target as given */
};

static const char *verify_mode_name(int m)
{
	return m == BAM_IOBENCH_VERIFY_PATTERN ? "pattern" : m == BAM_IOBENCH_VERIFY_CONTENT ? "content" : "off";
}

/* one latency series as fio's JSON has it: min, max, mean, stddev, N, percentile */
static void lat_json(cJSON *o, const char *key, const struct bam_iobench_lat *l)
{
	static const double pct[BAM_IOBENCH_NPCT] = BAM_IOBENCH_PCT;
	cJSON *x = cJSON_AddObjectToObject(o, key);
	cJSON_AddNumberToObject(x, "min", (double)l->min_ns);
	cJSON_AddNumberToObject(x, "max", (double)l->max_ns);
	cJSON_AddNumberToObject(x, "mean", l->mean_ns);
	cJSON_AddNumberToObject(x, "stddev", l->stdev_ns);
	cJSON_AddNumberToObject(x, "N", (double)l->n);
	cJSON *p = cJSON_AddObjectToObject(x, "percentile");
	for (int i = 0; i < BAM_IOBENCH_NPCT; i++) {
		char k[16];
		snprintf(k, sizeof(k), "%.6f", pct[i]);
		cJSON_AddNumberToObject(p, k, l->n ? (double)l->pct_ns[i] : 0);
	}
}

static void dir_json(cJSON *o, const char *key, const struct bam_iobench_dir *d)
{
	cJSON *x = cJSON_AddObjectToObject(o, key);
	cJSON_AddNumberToObject(x, "ios", (double)d->ios);
	cJSON_AddNumberToObject(x, "bytes", (double)d->bytes);
	cJSON_AddNumberToObject(x, "iops", d->iops);
	cJSON_AddNumberToObject(x, "MBps", d->MBps);
	lat_json(x, "slat_ns", &d->slat);
	lat_json(x, "clat_ns", &d->clat);
	lat_json(x, "lat_ns", &d->lat);
}

/* every option in effect, after the defaults, under fio's names where fio has one */
static void options_json(cJSON *j, const struct bam_iobench_opts *o, const char *rw_name,
			 const struct bam_iobench_result *r, const struct cli_extra *x)
{
	cJSON *op = cJSON_AddObjectToObject(j, "options");
	if (x->name)
		cli_json_add_str(op, "name", x->name);
	cJSON_AddStringToObject(op, "rw", rw_name);
	cJSON_AddNumberToObject(op, "rwmixread", o->rwmix_read);
	cJSON_AddNumberToObject(op, "bs", (double)o->bs);
	cJSON_AddNumberToObject(op, "size", (double)r->size);
	cJSON_AddNumberToObject(op, "runtime", r->runtime);
	cJSON_AddBoolToObject(op, "time_based", x->time_based || (o->runtime > 0 && !o->number_ios));
	cJSON_AddNumberToObject(op, "ramp_time", o->ramp_time);
	cJSON_AddNumberToObject(op, "number_ios", (double)r->number_ios);
	cJSON_AddNumberToObject(op, "iodepth", o->iodepth);
	cJSON_AddNumberToObject(op, "numjobs", (double)r->threads);
	cli_json_add_str(op, "backend", o->backend ? o->backend : "emu");
	if (x->filename)
		cli_json_add_str(op, "filename", x->filename);
	if (x->direct >= 0)
		cJSON_AddNumberToObject(op, "direct", x->direct);
	cJSON_AddStringToObject(op, "target", x->target ? x->target : "auto");
	cJSON_AddNumberToObject(op, "qpairs", r->qpairs);
	cJSON_AddNumberToObject(op, "queue_depth", r->queue_depth);
	cJSON_AddNumberToObject(op, "verify", o->verify);
	cJSON_AddStringToObject(op, "prefill", x->prefill ? x->prefill : "auto");
	cJSON_AddNumberToObject(op, "baseline", o->baseline == BAM_IOBENCH_BASELINE_AUTO ? r->baseline : o->baseline);
	cJSON_AddNumberToObject(op, "timeout_ms", (double)o->timeout_ms);
	if (o->ctrl_workers)
		cJSON_AddNumberToObject(op, "ctrl_workers", o->ctrl_workers);
	cJSON_AddNumberToObject(op, "seed", (double)o->seed);
	if (x->compare) {
		cli_json_add_str(op, "compare", x->compare);
		cJSON_AddNumberToObject(op, "posix_threads", o->posix_threads);
		cJSON_AddNumberToObject(op, "uring_threads", o->uring_threads);
		cJSON_AddNumberToObject(op, "uring_qd", o->uring_qd);
	}
	cJSON_AddStringToObject(op, "output_format", "json");
}

/* --json: one line, as bfs, cc and graph info print; with the error object when the run
 * failed (the summary 'fail' first kept). Keys: docs/BENCH-JSON.md */
static void print_json(const struct bam_iobench_opts *o, const char *rw_name, const struct bam_iobench_result *r,
		       const struct cli_extra *ex, int exit_code, const char *fail)
{
	cJSON *j = cJSON_CreateObject();
	bench_json_head(j, "bench");
	options_json(j, o, rw_name, r, ex);
	cJSON *cfg = cJSON_AddObjectToObject(j, "config");
	cli_json_add_str(cfg, "backend", r->backend);
	cJSON_AddStringToObject(cfg, "target", r->target == BAM_TARGET_GPU ? "gpu" : "cpu");
	cJSON_AddStringToObject(cfg, "rw", rw_name);
	cJSON_AddNumberToObject(cfg, "bs", (double)o->bs);
	cJSON_AddNumberToObject(cfg, "size", (double)r->size);
	cJSON_AddNumberToObject(cfg, "threads", (double)r->threads);
	cJSON_AddNumberToObject(cfg, "iodepth", o->iodepth);
	cJSON_AddNumberToObject(cfg, "controllers", r->controllers);
	cJSON_AddNumberToObject(cfg, "qpairs", r->qpairs);
	cJSON_AddNumberToObject(cfg, "queue_depth", r->queue_depth);
	cJSON_AddNumberToObject(cfg, "verify", r->verify_mode != BAM_IOBENCH_VERIFY_OFF);
	cJSON_AddStringToObject(cfg, "verify_mode", verify_mode_name(r->verify_mode));
	cJSON_AddStringToObject(cfg, "verify_how", r->verify_why);
	cJSON_AddBoolToObject(cfg, "prefilled", r->prefilled);
	if (r->write_cache[0])
		cJSON_AddStringToObject(cfg, "write_cache", r->write_cache);
	cJSON *x = cJSON_AddObjectToObject(j, "result");
	cJSON_AddNumberToObject(x, "ios", (double)r->ios);
	cJSON_AddNumberToObject(x, "seconds", r->seconds);
	cJSON_AddNumberToObject(x, "iops", r->iops);
	cJSON_AddNumberToObject(x, "MBps", r->MBps);
	cJSON_AddNumberToObject(x, "lat_p50_us", r->lat_p50_ns / 1e3);
	cJSON_AddNumberToObject(x, "lat_p99_us", r->lat_p99_ns / 1e3);
	cJSON_AddNumberToObject(x, "lat_p999_us", r->lat_p999_ns / 1e3);
	cJSON_AddNumberToObject(x, "submit_mean_us", r->submit_mean_us);
	cJSON_AddNumberToObject(x, "errors", (double)r->errors);
	cJSON_AddNumberToObject(x, "timeouts", (double)r->timeouts);
	cJSON_AddNumberToObject(x, "verify_failures", (double)r->verify_failures);
	cJSON_AddNumberToObject(x, "verified", (double)r->verified);
	cJSON_AddNumberToObject(x, "doorbells", (double)r->doorbells);
	cJSON_AddNumberToObject(x, "commands", (double)r->commands);
	cJSON_AddNumberToObject(x, "ramp_ios", (double)r->ramp_ios);
	if (r->reads || o->rw == BAM_IOBENCH_READ || o->rw == BAM_IOBENCH_RANDREAD || o->rw == BAM_IOBENCH_RANDRW)
		dir_json(x, "read", &r->dir[0]);
	if (r->writes || o->rw == BAM_IOBENCH_WRITE || o->rw == BAM_IOBENCH_RANDWRITE || o->rw == BAM_IOBENCH_RANDRW)
		dir_json(x, "write", &r->dir[1]);
	if (r->flushes || r->write_cache[0]) {
		cJSON *f = cJSON_AddObjectToObject(x, "flush");
		cJSON_AddNumberToObject(f, "commands", (double)r->flushes);
		cJSON_AddNumberToObject(f, "errors", (double)r->flush_errors);
		cJSON_AddNumberToObject(f, "seconds", r->flush_seconds);
		cJSON_AddBoolToObject(f, "in_seconds", 1);
	}
	if (r->baseline) {
		cJSON *b = cJSON_AddObjectToObject(j, "baseline");
		cJSON_AddStringToObject(b, "what", r->baseline_what);
		cJSON_AddStringToObject(b, "limit", r->baseline_limit);
		cJSON_AddNumberToObject(b, "region", (double)r->baseline_region);
		cJSON_AddNumberToObject(b, "inflight", r->baseline_inflight);
		cJSON_AddNumberToObject(b, "chunks_per_s", r->baseline_chunks_per_s);
		cJSON_AddNumberToObject(b, "MBps", r->baseline_bps / 1e6);
		cJSON_AddNumberToObject(b, "ratio_bw", r->baseline_ratio_bw);
		if (r->copy_engine_bps > 0)
			cJSON_AddNumberToObject(b, "copy_engine_MBps", r->copy_engine_bps / 1e6);
		if (r->hbm_bps > 0)
			cJSON_AddNumberToObject(b, "hbm_MBps", r->hbm_bps / 1e6);
	}
	if (r->gpu.valid) {
		cJSON *g = cJSON_AddObjectToObject(j, "gpu_use");
		cJSON_AddNumberToObject(g, "sms", r->gpu.sms);
		cJSON_AddNumberToObject(g, "max_warps_per_sm", r->gpu.max_warps_per_sm);
		cJSON_AddNumberToObject(g, "app_blocks", r->gpu.app_blocks);
		cJSON_AddNumberToObject(g, "app_threads_per_block", r->gpu.app_threads_per_block);
		cJSON_AddNumberToObject(g, "app_blocks_per_sm", r->gpu.app_blocks_per_sm);
		cJSON_AddNumberToObject(g, "app_sms", r->gpu.app_sms);
		cJSON_AddNumberToObject(g, "ctrl_blocks", r->gpu.ctrl_blocks);
		cJSON_AddNumberToObject(g, "ctrl_warps", r->gpu.ctrl_warps);
		cJSON_AddNumberToObject(g, "ctrl_sms", r->gpu.ctrl_sms);
	}
	if (r->compare[0].ran || r->compare[1].ran)
		cmp_json(j, r);
	if (exit_code) {
		/* the results, and the error object as after any failure (cli_util.h) */
		fail_lines("bam bench", fail);
		cJSON_AddItemToObject(j, "error", cli_json_error(exit_code));
		cli_json_printed();
	}
	char *s = cJSON_PrintUnformatted(j);
	printf("%s\n", s);
	free(s);
	cJSON_Delete(j);
}

static void lat_text(const char *what, const struct bam_iobench_lat *l)
{
	if (!l->n)
		return;
	printf("    %s (us): min=%.2f max=%.2f mean=%.2f stdev=%.2f, p50=%.2f p90=%.2f p99=%.2f p99.9=%.2f p99.99=%.2f\n",
	       what, l->min_ns / 1e3, l->max_ns / 1e3, l->mean_ns / 1e3, l->stdev_ns / 1e3, l->pct_ns[6] / 1e3,
	       l->pct_ns[10] / 1e3, l->pct_ns[12] / 1e3, l->pct_ns[14] / 1e3, l->pct_ns[16] / 1e3);
}

static void print_text(const struct bam_iobench_opts *o, const char *rw_name, const struct bam_iobench_result *r,
		       const struct cli_extra *ex, int exit_code, const char *fail)
{
	if (ex->name)
		printf("%s: (bam bench)\n", ex->name);
	printf("bam bench: rw=%s bs=%llu size=%llu threads=%llu iodepth=%u target=%s\n", rw_name,
	       (unsigned long long)o->bs, (unsigned long long)r->size, (unsigned long long)r->threads, o->iodepth,
	       r->target == BAM_TARGET_GPU ? "gpu" : "cpu");
	printf("  backend: %s\n", r->backend);
	printf("  controllers=%u qpairs=%u queue_depth=%u timeout=%llums verify=%u\n", r->controllers, r->qpairs,
	       r->queue_depth, (unsigned long long)o->timeout_ms, r->verify_mode != BAM_IOBENCH_VERIFY_OFF);
	printf("  verify: %s (%s)\n", verify_mode_name(r->verify_mode), r->verify_why);
	printf("  ios=%llu (read %llu, write %llu) in %.3f s\n", (unsigned long long)r->ios, (unsigned long long)r->reads,
	       (unsigned long long)r->writes, r->seconds);
	if (r->ramp_ios || o->ramp_time > 0)
		printf("  ramp: %.3f s, %llu I/Os not counted\n", o->ramp_time, (unsigned long long)r->ramp_ios);
	printf("  IOPS=%.0f BW=%.1f MB/s\n", r->iops, r->MBps);
	if (r->write_cache[0])
		printf("  writes: cached by %s; then %llu Flush commands (%.3f s, in the time above)%s\n", r->write_cache,
		       (unsigned long long)r->flushes, r->flush_seconds, r->flush_errors ? ": FAILED" : "");
	printf("  lat (us): p50=%.2f p99=%.2f p99.9=%.2f, of which the submission %.2f (mean)\n", r->lat_p50_ns / 1e3,
	       r->lat_p99_ns / 1e3, r->lat_p999_ns / 1e3, r->submit_mean_us);
	for (int d = 0; d < 2; d++) {
		const struct bam_iobench_dir *x = &r->dir[d];
		if (!x->ios)
			continue;
		printf("  %s: IOPS=%.0f BW=%.1f MB/s (%llu I/Os)\n", d ? "write" : "read", x->iops, x->MBps,
		       (unsigned long long)x->ios);
		lat_text("slat", &x->slat);
		lat_text("clat", &x->clat);
		lat_text(" lat", &x->lat);
	}
	printf("  errors=%llu timeouts=%llu verify_failures=%llu", (unsigned long long)r->errors,
	       (unsigned long long)r->timeouts, (unsigned long long)r->verify_failures);
	if (r->first_status)
		printf(" first_status=\"%s\"", nvme_status_name(r->first_status));
	printf("\n  commands=%llu doorbells=%llu (%.1f commands per doorbell) injected=%llu late=%llu\n",
	       (unsigned long long)r->commands, (unsigned long long)r->doorbells,
	       r->doorbells ? (double)r->submitted / r->doorbells : 0.0, (unsigned long long)r->injected,
	       (unsigned long long)r->late);
	if (r->baseline) {
		printf("  baseline (%s): %.0f chunks/s, %.1f MB/s -> bam/baseline = %.3f (bandwidth)\n", r->baseline_what,
		       r->baseline_chunks_per_s, r->baseline_bps / 1e6, r->baseline_ratio_bw);
		printf("    limit: %s, over %.2f GiB, %u chunk%s in flight per %s\n", r->baseline_limit,
		       (double)r->baseline_region / (1ull << 30), r->baseline_inflight, r->baseline_inflight == 1 ? "" : "s",
		       r->target == BAM_TARGET_GPU ? "warp" : "thread");
		if (r->copy_engine_bps > 0)
			printf("    copy engine (cudaMemcpy host to device): %.1f GB/s\n", r->copy_engine_bps / 1e9);
		if (r->hbm_bps > 0)
			printf("  HBM read: %.1f GB/s\n", r->hbm_bps / 1e9);
	}
	if (r->gpu.valid)
		printf("  GPU use: %u SMs; the bench kernel %u blocks x %u threads (%u per SM resident, on %u SMs); the "
		       "emulated controller %u blocks (%u warps) on %u SMs\n",
		       r->gpu.sms, r->gpu.app_blocks, r->gpu.app_threads_per_block, r->gpu.app_blocks_per_sm, r->gpu.app_sms,
		       r->gpu.ctrl_blocks, r->gpu.ctrl_warps, r->gpu.ctrl_sms);
	if (r->compare[0].ran || r->compare[1].ran)
		cmp_print(r);
	if (exit_code) /* the reason on stderr too, for a script that sees only the status */
		fail_lines("bam bench", fail);
}

/* ---- options ------------------------------------------------------------------------ */

/* bam bench's options (bam bench --array has its own: bench_array_options) */
const struct option bench_io_options[] = {
	{"rw", 1, 0, 'r'}, {"rwmixread", 1, 0, 'm'}, {"bs", 1, 0, 'b'}, {"size", 1, 0, 's'},
	{"runtime", 1, 0, 't'}, {"number_ios", 1, 0, 'n'}, {"iodepth", 1, 0, 'd'}, {"threads", 1, 0, 'T'},
	{"qpairs", 1, 0, 'q'}, {"queue-depth", 1, 0, 'Q'}, {"backend", 1, 0, 'B'}, {"target", 1, 0, 'g'},
	{"verify", 1, 0, 'v'}, {"baseline", 1, 0, 'L'}, {"timeout-ms", 1, 0, 'o'}, {"seed", 1, 0, 'S'},
	{"json", 0, 0, 'j'}, {"quiet", 0, 0, 'Z'}, {"ctrl-workers", 1, 0, 'w'}, {"help", 0, 0, 'h'},
	{"compare", 1, 0, 'C'}, {"posix-threads", 1, 0, 'P'}, {"uring-threads", 1, 0, 'U'},
	{"uring-qd", 1, 0, 'D'}, {"prefill", 1, 0, 'F'}, {"numjobs", 1, 0, 'N'}, {"time_based", 0, 0, 'E'},
	{"direct", 1, 0, 'I'}, {"filename", 1, 0, 'f'}, {"name", 1, 0, 'a'}, {"output-format", 1, 0, 'O'},
	{"ramp_time", 1, 0, 'R'}, {"allow-write", 0, 0, 1001}, {0, 0, 0, 0}};

static int bench_run(int argc, char **argv, struct cli_media *media)
{
	struct bam_iobench_opts o;
	bam_iobench_opts_init(&o);
	const char *rw_name = rw_names[o.rw], *bs_arg = NULL; /* --bs as given (messages), NULL: the default */
	int json = 0, quiet = 0, number_given = 0, backend_given = 0, allow_write = 0;
	uint64_t numjobs = 0;
	uint32_t flag;
	struct cli_extra ex = {.direct = -1};
	const struct option *const lo = bench_io_options;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--array"))
			return bam_bench_array(argc, argv);
	int ch;
	static char prog[] = "bam bench"; /* getopt's messages start with argv[0] */
	argv[0] = prog;
	cli_json_init("bench", argc, argv, "h", lo, 'j'); /* --json: failures print an error object too */
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'r':
			rw_name = optarg;
			if (parse_rw(optarg, &o.rw)) {
				cli_fail("bam bench: --rw=%s: expected read, write, randread, randwrite or randrw\n", optarg);
				return 2;
			}
			break;
		case 'm': if (cli_u32(optarg, 0, 100, &o.rwmix_read)) goto bad; break;
		case 'b': if (bam_parse_size(optarg, &o.bs)) goto bad; bs_arg = optarg; break;
		case 's': if (bam_parse_size(optarg, &o.size)) goto bad; o.size_auto = 0; break;
		case 't':
			if (parse_time(optarg, &o.runtime) || !(o.runtime > 0) || o.runtime > 1e6) {
				cli_fail("bam bench: --runtime=%s: a time above 0, at most 1000000 s: a number of seconds or "
					 "with a unit, e.g. 0.5, 3s, 500ms, 2m, 1h\n",
					 optarg);
				return 2;
			}
			break;
		case 'R':
			if (parse_time(optarg, &o.ramp_time) || o.ramp_time > 1e6) {
				cli_fail("bam bench: --ramp_time=%s: a time from 0 to 1000000 s, e.g. 1, 1s, 500ms\n", optarg);
				return 2;
			}
			break;
		case 'n': if (cli_u64(optarg, 1, 1ull << 48, &o.number_ios)) goto bad; number_given = 1; break;
		case 'd': if (cli_u32(optarg, 1, BAM_IOBENCH_MAX_IODEPTH, &o.iodepth)) goto bad; break;
		case 'N': if (cli_u64(optarg, 1, 1ull << 24, &numjobs)) goto bad; break;
		case 'E': ex.time_based = 1; break;
		case 'I': if (cli_u32(optarg, 0, 1, &flag)) goto bad; ex.direct = (int)flag; break;
		case 'f': ex.filename = optarg; break;
		case 'a': ex.name = optarg; break;
		case 'O':
			if (!strcmp(optarg, "json"))
				json = 1;
			else if (strcmp(optarg, "normal")) {
				cli_fail("bam bench: --output-format=%s: normal or json\n", optarg);
				return 2;
			}
			break;
		case 'T': if (cli_u64(optarg, 1, 1ull << 24, &o.threads)) goto bad; break;
		case 'q': if (cli_u32(optarg, 1, 65535, &o.qpairs)) goto bad; break;
		case 'Q':
			/* (a controller here takes at most 65535 entries per queue: CAP.MQES+1, as
			 * bam_ctx_open checks; so 32768 is the largest power of two) */
			if (cli_u32(optarg, 2, 32768, &o.queue_depth) || (o.queue_depth & (o.queue_depth - 1))) {
				cli_fail("bam bench: --queue-depth=%s: a power of two from 2 to 32768\n", optarg);
				return 2;
			}
			break;
		case 'B':
			if (cli_backend_arg("bam bench", optarg))
				return 2;
			o.backend = optarg;
			backend_given = 1;
			break;
		case 1001:
			allow_write = 1;
			break;
		case 'g':
			ex.target = optarg;
			if (!strcmp(optarg, "gpu")) o.target = BAM_TARGET_GPU;
			else if (!strcmp(optarg, "cpu")) o.target = BAM_TARGET_CPU;
			else if (!strcmp(optarg, "auto")) o.target = BAM_TARGET_AUTO;
			else goto bad;
			break;
		case 'v': if (cli_u32(optarg, 0, 1, &flag)) goto bad; o.verify = (int)flag; break;
		case 'L': if (cli_u32(optarg, 0, 1, &flag)) goto bad; o.baseline = (int)flag; break;
		case 'o': if (cli_u64(optarg, 1, 3600000, &o.timeout_ms)) goto bad; break;
		case 'S': if (cli_u64(optarg, 0, UINT64_MAX, &o.seed)) goto bad; break;
		case 'w': if (cli_u32(optarg, 1, 1024, &o.ctrl_workers)) goto bad; break;
		case 'C': if (parse_compare(optarg, &o.compare)) goto bad; ex.compare = optarg; break;
		case 'P': if (cli_u32(optarg, 1, 1024, &o.posix_threads)) goto bad; break;
		case 'U': if (cli_u32(optarg, 1, 256, &o.uring_threads)) goto bad; break;
		case 'D': if (cli_u32(optarg, 1, 4096, &o.uring_qd)) goto bad; break;
		case 'F':
			ex.prefill = optarg;
			if (!strcmp(optarg, "force"))
				o.prefill = BAM_IOBENCH_PREFILL_FORCE;
			else if (!strcmp(optarg, "1"))
				o.prefill = BAM_IOBENCH_PREFILL_YES;
			else if (!strcmp(optarg, "0"))
				o.prefill = BAM_IOBENCH_PREFILL_NO;
			else {
				cli_fail("bam bench: --prefill=%s: 0, 1 or force\n", optarg);
				return 2;
			}
			break;
		case 'j': json = 1; break;
		case 'Z': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: /* getopt said what is wrong on stderr */
			cli_fail_note("bam bench: bad option '%s': unknown, ambiguous or missing its value (bam bench --help)\n",
				      argv[optind - 1]);
			if (cli_arg_names(argv[optind - 1], bench_array_options) && !cli_arg_names(argv[optind - 1], lo))
				cli_eprintf("bam bench: %s is an option of bam bench --array\n", argv[optind - 1]);
			cli_eprintf("usage: bam bench [options]     (all options: bam bench --help)\n");
			return 2;
		bad: {
			char hint[96];
			cli_fail("bam bench: bad value '%s' for %s%s (bam bench --help)\n", optarg, argv[optind - 1],
				 cli_range_hint(optarg, hint, sizeof(hint)));
			return 2;
		}
		}
	}
	if (optind < argc) {
		cli_fail("bam bench: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	/* fio's names */
	if (numjobs) {
		if (o.threads && o.threads != numjobs) {
			cli_fail("bam bench: --numjobs=%llu and --threads=%llu: give one (a job is a thread)\n",
				 (unsigned long long)numjobs, (unsigned long long)o.threads);
			return 2;
		}
		o.threads = numjobs;
	}
	if (ex.time_based && !(o.runtime > 0)) {
		cli_fail("bam bench: --time_based needs --runtime\n");
		return 2;
	}
	if (ex.time_based && number_given) {
		cli_fail("bam bench: --time_based runs the whole --runtime: drop --number_ios\n");
		return 2;
	}
	char fbackend[1100];
	if (ex.filename) {
		struct stat st;
		if (backend_given) {
			cli_fail("bam bench: --filename and --backend: give one (--filename=PATH is --backend=file:PATH)\n");
			return 2;
		}
		if (!ex.filename[0] || strpbrk(ex.filename, ",=:")) {
			cli_fail("bam bench: --filename=%s: a path without ',', '=' or ':' (else use --backend=file:...)\n",
				 ex.filename);
			return 2;
		}
		const int missing = stat(ex.filename, &st) != 0;
		int n = snprintf(fbackend, sizeof(fbackend), "file:%s", ex.filename);
		if (missing) /* (fio creates the file at --size) */
			n += snprintf(fbackend + n, sizeof(fbackend) - (size_t)n, ",size=%llu", (unsigned long long)o.size);
		if (ex.direct >= 0)
			n += snprintf(fbackend + n, sizeof(fbackend) - (size_t)n, ",direct=%d", ex.direct);
		if ((size_t)n >= sizeof(fbackend)) {
			cli_fail("bam bench: --filename: too long\n");
			return 2;
		}
		if (cli_backend_arg("bam bench", fbackend))
			return 2;
		o.backend = fbackend;
	} else if (ex.direct >= 0) {
		struct bam_backend_info bi;
		if (!backend_given || bam_backend_info(o.backend, &bi, NULL, 0) || strcmp(bi.name, "file")) {
			cli_fail("bam bench: --direct applies to files: use it with --filename or --backend=file:...\n");
			return 2;
		}
		int n = snprintf(fbackend, sizeof(fbackend), "%s%sdirect=%d", o.backend, strchr(o.backend, ':') ? "," : ":",
				 ex.direct);
		if ((size_t)n >= sizeof(fbackend)) {
			cli_fail("bam bench: --backend: too long with --direct\n");
			return 2;
		}
		o.backend = fbackend;
	}
	o.bs_text = bs_arg ? bs_arg : "4k"; /* (for messages: the default is valid) */
	struct msg_cfg mc = {.quiet = quiet};
	o.progress = !(quiet || json);
	o.msg = bench_msg;
	o.msg_arg = &mc;
	o.dump = stderr;
	if (allow_write)
		o.backend = cli_allow_write(o.backend);
	/* the media files the run may create: removed again if it fails */
	char backend[1024];
	if (!bam_iobench_backend(&o, backend, sizeof(backend), NULL, 0))
		cli_media_note(media, backend);
	struct bam_iobench_result r;
	char err[2048]; /* (a --backend value of up to 960 bytes, and the reason) */
	const int rc = bam_iobench_run(&o, &r, err, sizeof(err));
	if (r.stuck) /* the error said, the queues dumped; the hung work cannot be undone */
		_exit(cli_exit(1)); /* with --json, the error object first */
	if (rc && !r.complete) {
		fail_lines("bam bench", err);
		return fail_status(rc);
	}
	const int exit_code = rc ? 1 : 0; /* (the run found errors: its results, then why) */
	if (json)
		print_json(&o, rw_name, &r, &ex, exit_code, err);
	else
		print_text(&o, rw_name, &r, &ex, exit_code, err);
	return exit_code;
}

/* bench_run; media files the run created are removed again if it fails */
int bam_cmd_bench(int argc, char **argv)
{
	static struct cli_media media;
	media.n = 0;
	const int rc = bench_run(argc, argv, &media);
	if (rc)
		cli_media_forget(&media);
	else
		cli_media_keep(&media);
	return rc;
}
