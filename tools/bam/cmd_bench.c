/* SPDX-License-Identifier: MIT */
/*
 * bam bench: a fio-like benchmark of the I/O engine (and, with --array, of the cache
 * and array API). Flags use fio's names where fio has one. Prints its whole
 * configuration, IOPS, bandwidth, latency percentiles and error counts; --json for
 * machines. Every read is verified against the LBA-derived pattern unless --verify=0.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "bam/bam.h"
#include "bam/backend.h"
#include "bench_file.h"
#include "bench_kern.h"
#include "cli_util.h"
#include "cmds.h"
#ifdef BAM_HAVE_CUDA
#include "bench_gpu.h"
#endif

struct bench_opts {
	const char *backend;
	const char *rw_name;
	enum bench_rw rw;
	uint32_t rwmix_read;
	uint64_t bs, size, number_ios, threads;
	const char *bs_arg;   /* --bs as given (messages), NULL: the default */
	double runtime;
	uint32_t iodepth, qpairs, queue_depth, verify, json, baseline, quiet, workers;
	uint64_t timeout_ms, seed;
	enum bam_target target;
	int array; /* --array: through the cache (cmd_bench_array.c) */
	uint32_t prefill;                 /* write the pattern before verified reads */
	uint32_t compare;                 /* CMP_* bits (--compare) */
	uint32_t posix_threads, uring_threads, uring_qd;
};

/* --compare: CPU-orchestrated reads of the same files (bench_file.h) */
#define CMP_POSIX 1u
#define CMP_URING 2u

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bam bench [options]\n"
		"  --rw=MODE          read, write, randread (default), randwrite, randrw\n"
		"  --rwmixread=PCT    reads in randrw, percent (default 50)\n"
		"  --bs=SIZE          bytes per I/O, 512 to 1M, multiple of the LBA size (default 4k)\n"
		"  --size=SIZE        region tested, over all controllers (default 1G)\n"
		"  --runtime=SEC      run for this long (default: until --number_ios)\n"
		"  --number_ios=N     I/Os in all, rounded up to a multiple of --threads (default\n"
		"                     threads * 64 when no --runtime)\n"
		"  --iodepth=N        I/Os in flight per thread, 1 to %d (default 1)\n"
		"  --threads=N        GPU threads / CPU-target threads (default 65536 GPU, 16 CPU)\n"
		"  --qpairs=N         queue pairs per controller (default 128 GPU, 16 CPU)\n"
		"  --queue-depth=N    entries per queue, power of two up to 32768 (default 1024 GPU,\n"
		"                     256 CPU)\n"
		"  --backend=STR      e.g. emu, emu:profile=optane-p5800x,count=4 (docs/BACKENDS.md)\n"
		"  --target=T         gpu, cpu or auto (default)\n"
		"  --verify=0|1       check every word of every block read (default 1)\n"
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
		"  --prefill=0|1      0: the media already hold the verification pattern (an earlier\n"
		"                     run with the same back end, LBA size and files wrote it): verify\n"
		"                     without rewriting it (default 1)\n"
		"  --timeout-ms=N     bound of each wait for a completion (default 5000)\n"
		"  --ctrl-workers=N   emulated controller workers per controller\n"
		"  --seed=N           random seed (default 1)\n"
		"  --json             JSON on stdout\n"
		"  --quiet            no progress on stderr\n"
		"  --array            through the cache and array API ('bam bench --array --help')\n",
		BENCH_MAX_IODEPTH);
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

static int parse_rw(const char *s, enum bench_rw *rw)
{
	static const char *names[] = {"read", "write", "randread", "randwrite", "randrw"};
	for (int i = 0; i < 5; i++)
		if (!strcmp(s, names[i])) {
			*rw = (enum bench_rw)i;
			return 0;
		}
	return -EINVAL;
}

/* ---- prefill: the media holds the LBA-derived pattern before reads -------------- */

struct prefill {
	struct bam_ctx *ctx;
	struct bench_args *a;
	uint64_t per_ctrl_bytes;
	uint64_t chunk;
	uint64_t nchunks; /* per controller */
	int rc;
};

static void prefill_one(void *arg, uint64_t t)
{
	struct prefill *p = arg;
	uint32_t c = (uint32_t)(t / p->nchunks);
	uint64_t off = (t % p->nchunks) * p->chunk;
	uint64_t len = p->per_ctrl_bytes - off < p->chunk ? p->per_ctrl_bytes - off : p->chunk;
	uint64_t *buf = malloc(len);
	if (!buf) {
		p->rc = -ENOMEM;
		return;
	}
	uint32_t per = (1u << p->a->lba_shift) / 8u;
	uint64_t lba0 = off >> p->a->lba_shift;
	for (uint64_t k = 0; k < len / 8; k++)
		buf[k] = bench_word(c, lba0 + k / per, (uint32_t)(k % per));
	int rc = bam_ctx_media_write(p->ctx, c, off, buf, len);
	if (rc)
		p->rc = rc;
	free(buf);
}

/* fdatasync the files of a file back end (other back ends: nothing to do). 0 or -EIO. */
static int files_sync(const char *desc)
{
	struct bench_files f;
	char err[512];
	if (strncmp(desc, "file:", 5))
		return 0;
	int rc = bench_files_parse(desc, &f, err, sizeof(err));
	if (!rc) {
		rc = bench_files_sync(&f, err, sizeof(err));
		bench_files_free(&f);
	}
	if (rc)
		cli_fail("bam bench: %s\n", err);
	return rc;
}

/* ---- results ---------------------------------------------------------------------- */

static uint64_t percentile(const struct bench_out *o, double q)
{
	uint64_t total = 0;
	for (int i = 0; i < BENCH_HIST; i++)
		total += o->hist[i];
	if (!total)
		return 0;
	uint64_t want = (uint64_t)(q * (double)total + 0.5), acc = 0;
	if (want == 0)
		want = 1;
	for (int i = 0; i < BENCH_HIST; i++) {
		acc += o->hist[i];
		if (acc >= want)
			return bench_hist_value((uint32_t)i);
	}
	return bench_hist_value(BENCH_HIST - 1);
}

struct progress {
	struct bam_ctx *ctx;
	struct bench_out *dev_out;
	int done; /* atomic: set by the main thread when the run ends */
	uint64_t total_ios;
	double runtime;
	int quiet;
};

static double now_s(void)
{
	return (double)bam_time_ns() / 1e9;
}

static void *progress_main(void *arg)
{
	struct progress *p = arg;
	double t0 = now_s(), last = t0;
	uint64_t last_ios = 0;
	while (!__atomic_load_n(&p->done, __ATOMIC_ACQUIRE)) {
		usleep(100000);
		double t = now_s();
		if (t - last < 2.0 || p->quiet)
			continue;
		struct bench_out o;
		if (bam_mem_copy(p->ctx, &o, p->dev_out, offsetof(struct bench_out, hist)))
			continue;
		double rate = (double)(o.ios - last_ios) / (t - last);
		if (p->total_ios)
			fprintf(stderr, "bam bench: %.0f s, %llu / %llu I/Os (%.1f%%), %.0f IOPS\n", t - t0,
				(unsigned long long)o.ios, (unsigned long long)p->total_ios, 100.0 * o.ios / p->total_ios, rate);
		else
			fprintf(stderr, "bam bench: %.0f / %.0f s, %llu I/Os, %.0f IOPS\n", t - t0, p->runtime,
				(unsigned long long)o.ios, rate);
		last = t;
		last_ios = o.ios;
	}
	return NULL;
}

static void cpu_bench_thread(void *arg, uint64_t tid)
{
	bench_thread(arg, tid);
}

/* CPU-target baseline: host threads copy random bs-byte chunks of a host buffer. */
struct cpu_base {
	uint8_t *src, *dst;
	uint64_t region, bs, per;
};
static void cpu_base_thread(void *arg, uint64_t tid)
{
	struct cpu_base *b = arg;
	uint64_t r = emu_mix64(tid + 99);
	for (uint64_t k = 0; k < b->per; k++) {
		r = emu_mix64(r);
		memcpy(b->dst + tid * b->bs, b->src + (r % (b->region / b->bs)) * b->bs, b->bs);
	}
}

static int cpu_baseline(uint64_t bs, uint64_t threads, double *bps, double *cps)
{
	struct cpu_base b = {.region = 256ull << 20, .bs = bs, .per = (64ull << 20) / bs / (threads ? threads : 1) + 1};
	b.src = malloc(b.region);
	b.dst = malloc(threads * bs);
	if (!b.src || !b.dst) {
		free(b.src);
		free(b.dst);
		return -ENOMEM;
	}
	memset(b.src, 0x5a, b.region);
	double t0 = now_s();
	bam_cpu_launch(threads, (uint32_t)threads, cpu_base_thread, &b);
	double dt = now_s() - t0;
	*cps = (double)(b.per * threads) / dt;
	*bps = *cps * (double)bs;
	free(b.src);
	free(b.dst);
	return 0;
}

/* ---- --compare: the same reads orchestrated by the CPU (bench_file.c) -------------- */

struct cmp_out {
	int ran[2];                   /* [0] posix, [1] uring */
	struct bench_cmp_result r[2];
	uint32_t files, direct_files; /* files read, and of those with O_DIRECT */
};

static const char *const cmp_name[2] = {"posix", "uring"};

static const char *cmp_what(int k, int on_gpu)
{
	if (k == 1)
		return "io_uring readers (liburing, IORING_OP_READ), qd reads in flight per thread, into host memory, no copy";
	return on_gpu ? "host threads: pread of a block into pinned host memory, then cudaMemcpyAsync into GPU memory "
			"and a stream sync, one block at a time per thread"
		      : "host threads: pread of a block into a host buffer, then memcpy into target memory, one block "
			"at a time per thread";
}

/* Open the back end's files (O_DIRECT as the back end had it) and run the asked
 * comparisons one after the other. 0, or -errno when one could not start (said on
 * stderr); the failures of single reads are counted in out->r. */
static int run_compare(const struct bench_opts *o, const char *desc, struct bench_cmp_cfg *cc, struct cmp_out *out)
{
	struct bench_files f;
	char err[512];
	int rc = bench_files_parse(desc, &f, err, sizeof(err));
	if (!rc)
		rc = bench_files_open(&f, err, sizeof(err));
	if (rc) {
		cli_fail("bam bench: --compare: %s\n", err);
		bench_files_free(&f);
		return rc;
	}
	out->files = f.n;
	out->direct_files = f.n_direct;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 1)
		ncpu = 1;
	for (int k = 0; k < 2 && !rc; k++) {
		if (!(o->compare & (k ? CMP_URING : CMP_POSIX)))
			continue;
		if (k == 0) {
			cc->threads = o->posix_threads ? o->posix_threads : (uint32_t)(ncpu > 64 ? 64 : ncpu);
			cc->qd = 1;
		} else {
			cc->threads = o->uring_threads ? o->uring_threads : (uint32_t)(ncpu < 4 ? ncpu : 4);
			cc->qd = o->uring_qd;
		}
		if (!o->quiet)
			fprintf(stderr, "bam bench: compare: %s, %u threads, %s\n", cmp_name[k], cc->threads,
				f.n_direct == f.n ? "O_DIRECT" : f.n_direct ? "O_DIRECT on some files" : "buffered (page cache)");
		rc = k ? bench_uring_run(&f, cc, &out->r[k]) : bench_posix_run(&f, cc, &out->r[k]);
		if (rc)
			cli_fail("bam bench: --compare=%s could not run: %s\n", cmp_name[k], bam_strerror(rc));
		else
			out->ran[k] = 1;
		if (out->r[k].first_error[0])
			cli_fail("bam bench: compare %s: %llu failed reads, the first: %s\n", cmp_name[k],
				(unsigned long long)out->r[k].errors, out->r[k].first_error);
	}
	bench_files_free(&f);
	return rc;
}

static double rate(uint64_t n, double s)
{
	return s > 0 ? (double)n / s : 0;
}

static void cmp_json(cJSON *j, const struct cmp_out *c, int on_gpu, double iops, double mbps)
{
	cJSON *o = cJSON_AddObjectToObject(j, "compare");
	cJSON_AddNumberToObject(o, "files", c->files);
	cJSON_AddNumberToObject(o, "direct_files", c->direct_files);
	for (int k = 0; k < 2; k++) {
		if (!c->ran[k])
			continue;
		const struct bench_cmp_result *r = &c->r[k];
		double ci = rate(r->ios, r->seconds), cm = rate(r->bytes, r->seconds) / 1e6;
		cJSON *b = cJSON_AddObjectToObject(o, cmp_name[k]);
		cJSON_AddStringToObject(b, "what", cmp_what(k, on_gpu));
		cJSON_AddNumberToObject(b, "threads", r->threads);
		if (k == 1)
			cJSON_AddNumberToObject(b, "qd", r->qd);
		cJSON_AddNumberToObject(b, "ios", (double)r->ios);
		cJSON_AddNumberToObject(b, "seconds", r->seconds);
		cJSON_AddNumberToObject(b, "iops", ci);
		cJSON_AddNumberToObject(b, "MBps", cm);
		cJSON_AddNumberToObject(b, "errors", (double)r->errors);
		cJSON_AddNumberToObject(b, "verified", (double)r->verified);
		cJSON_AddNumberToObject(b, "verify_failures", (double)r->verify_fail);
		/* bam / this: above 1 means bam moved more */
		cJSON_AddNumberToObject(b, "ratio_iops", ci > 0 ? iops / ci : 0);
		cJSON_AddNumberToObject(b, "ratio_bw", cm > 0 ? mbps / cm : 0);
		if (r->first_error[0])
			cli_json_add_str(b, "first_error", r->first_error);
	}
}

/* A failed run's reason, one line each, on stderr and kept as the JSON error message
 * (text and --json alike): its I/O errors, timeouts and verification failures, and the
 * comparisons' verification failures (their failed reads were said on stderr). */
static void bench_fail_summary(const struct bench_out *res, const struct cmp_out *cmp)
{
	if (res->errors || res->timeouts || res->verify_fail)
		cli_fail("bam bench: %llu I/O errors, %llu timeouts, %llu verification failures%s%s%s\n",
			 (unsigned long long)res->errors, (unsigned long long)res->timeouts,
			 (unsigned long long)res->verify_fail, res->first_status ? " (first NVMe status: " : "",
			 res->first_status ? nvme_status_name((uint16_t)res->first_status) : "", res->first_status ? ")" : "");
	for (int k = 0; k < 2; k++)
		if (cmp->ran[k] && cmp->r[k].verify_fail)
			cli_fail("bam bench: compare %s: %llu verification failures\n", cmp_name[k],
				 (unsigned long long)cmp->r[k].verify_fail);
}

static void cmp_print(const struct cmp_out *c, int on_gpu, double iops, double mbps)
{
	printf("  compare (same files, bs, offsets and I/O count / run time; %u of %u files with O_DIRECT):\n",
	       c->direct_files, c->files);
	for (int k = 0; k < 2; k++) {
		if (!c->ran[k])
			continue;
		const struct bench_cmp_result *r = &c->r[k];
		double ci = rate(r->ios, r->seconds), cm = rate(r->bytes, r->seconds) / 1e6;
		if (k == 0)
			printf("    posix (%u threads: pread, then %s per block):", r->threads,
			       on_gpu ? "cudaMemcpyAsync + sync" : "memcpy");
		else
			printf("    ceiling (io_uring, %u threads x QD %u, host memory):", r->threads, r->qd);
		printf(" ios=%llu in %.3f s, IOPS=%.0f BW=%.1f MB/s, errors=%llu verified=%llu verify_failures=%llu\n",
		       (unsigned long long)r->ios, r->seconds, ci, cm, (unsigned long long)r->errors,
		       (unsigned long long)r->verified, (unsigned long long)r->verify_fail);
		printf("      -> bam/%s = %.3f (IOPS), %.3f (bandwidth)\n", k ? "ceiling" : "posix", ci > 0 ? iops / ci : 0,
		       cm > 0 ? mbps / cm : 0);
	}
}

/* bam bench's options (bam bench --array has its own: bench_array_options) */
const struct option bench_io_options[] = {
	{"rw", 1, 0, 'r'}, {"rwmixread", 1, 0, 'm'}, {"bs", 1, 0, 'b'}, {"size", 1, 0, 's'},
	{"runtime", 1, 0, 't'}, {"number_ios", 1, 0, 'n'}, {"iodepth", 1, 0, 'd'}, {"threads", 1, 0, 'T'},
	{"qpairs", 1, 0, 'q'}, {"queue-depth", 1, 0, 'Q'}, {"backend", 1, 0, 'B'}, {"target", 1, 0, 'g'},
	{"verify", 1, 0, 'v'}, {"baseline", 1, 0, 'L'}, {"timeout-ms", 1, 0, 'o'}, {"seed", 1, 0, 'S'},
	{"json", 0, 0, 'j'}, {"quiet", 0, 0, 'Z'}, {"ctrl-workers", 1, 0, 'w'}, {"help", 0, 0, 'h'},
	{"compare", 1, 0, 'C'}, {"posix-threads", 1, 0, 'P'}, {"uring-threads", 1, 0, 'U'},
	{"uring-qd", 1, 0, 'D'}, {"prefill", 1, 0, 'F'}, {0, 0, 0, 0}};

static int bench_run(int argc, char **argv, struct cli_media *media)
{
	struct bench_opts o = {.backend = "emu", .rw_name = "randread", .rw = BENCH_RANDREAD, .rwmix_read = 50,
			       .bs = 4096, .size = 1ull << 30, .iodepth = 1, .verify = 1, .baseline = 2,
			       .timeout_ms = 5000, .seed = 1, .prefill = 1, .uring_qd = 128};
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
		char *end = NULL;
		switch (ch) {
		case 'r':
			o.rw_name = optarg;
			if (parse_rw(optarg, &o.rw)) {
				cli_fail("bam bench: --rw=%s: expected read, write, randread, randwrite or randrw\n", optarg);
				return 2;
			}
			break;
		case 'm': if (cli_u32(optarg, 0, 100, &o.rwmix_read)) goto bad; break;
		case 'b': if (bam_parse_size(optarg, &o.bs)) goto bad; o.bs_arg = optarg; break;
		case 's': if (bam_parse_size(optarg, &o.size)) goto bad; break;
		case 't':
			o.runtime = strtod(optarg, &end);
			if (end == optarg || *end || !(o.runtime > 0) || o.runtime > 1e6) {
				cli_fail("bam bench: --runtime=%s: seconds above 0, at most 1000000 (e.g. 0.5 or 10)\n", optarg);
				return 2;
			}
			break;
		case 'n': if (cli_u64(optarg, 1, 1ull << 48, &o.number_ios)) goto bad; break;
		case 'd': if (cli_u32(optarg, 1, BENCH_MAX_IODEPTH, &o.iodepth)) goto bad; break;
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
			break;
		case 'g':
			if (!strcmp(optarg, "gpu")) o.target = BAM_TARGET_GPU;
			else if (!strcmp(optarg, "cpu")) o.target = BAM_TARGET_CPU;
			else if (!strcmp(optarg, "auto")) o.target = BAM_TARGET_AUTO;
			else goto bad;
			break;
		case 'v': if (cli_u32(optarg, 0, 1, &o.verify)) goto bad; break;
		case 'L': if (cli_u32(optarg, 0, 1, &o.baseline)) goto bad; break;
		case 'o': if (cli_u64(optarg, 1, 3600000, &o.timeout_ms)) goto bad; break;
		case 'S': if (cli_u64(optarg, 0, UINT64_MAX, &o.seed)) goto bad; break;
		case 'w': if (cli_u32(optarg, 1, 1024, &o.workers)) goto bad; break;
		case 'C': if (parse_compare(optarg, &o.compare)) goto bad; break;
		case 'P': if (cli_u32(optarg, 1, 1024, &o.posix_threads)) goto bad; break;
		case 'U': if (cli_u32(optarg, 1, 256, &o.uring_threads)) goto bad; break;
		case 'D': if (cli_u32(optarg, 1, 4096, &o.uring_qd)) goto bad; break;
		case 'F': if (cli_u32(optarg, 0, 1, &o.prefill)) goto bad; break;
		case 'j': o.json = 1; break;
		case 'Z': o.quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: /* getopt said what is wrong on stderr */
			cli_fail_note("bam bench: bad option '%s': unknown, ambiguous or missing its value (bam bench --help)\n",
				      argv[optind - 1]);
			if (cli_arg_names(argv[optind - 1], bench_array_options) && !cli_arg_names(argv[optind - 1], lo))
				fprintf(stderr, "bam bench: %s is an option of bam bench --array\n", argv[optind - 1]);
			fprintf(stderr, "usage: bam bench [options]     (all options: bam bench --help)\n");
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
	if (o.bs < 512 || o.bs > (1u << 20) || (o.bs & 511)) {
		cli_fail("bam bench: --bs=%s: %llu bytes; must be 512 B to 1 MiB, a multiple of 512 (and of the LBA size)\n",
			 o.bs_arg ? o.bs_arg : "?", (unsigned long long)o.bs);
		return 2;
	}
	if (o.size < o.bs) {
		cli_fail("bam bench: --size must hold at least one block of --bs\n");
		return 2;
	}
	if (o.compare && (strncmp(o.backend, "file", 4) || (o.backend[4] && o.backend[4] != ':'))) {
		cli_fail("bam bench: --compare needs the file back end (--backend=file:PATH...): it reads the "
				"same files outside bam; the back end here is '%s'\n", o.backend);
		return 2;
	}
	if (o.compare && o.rw != BENCH_READ && o.rw != BENCH_RANDREAD) {
		cli_fail("bam bench: --compare measures reads: use --rw=randread or --rw=read\n");
		return 2;
	}

	if (o.verify && !o.prefill && o.rw != BENCH_WRITE && o.rw != BENCH_RANDWRITE &&
	    cli_backend_media_in_memory(o.backend)) {
		cli_fail("bam bench: --prefill=0 with --backend=%s: the emulator's media in memory start zeroed in "
			 "every run, so no earlier run's pattern is there to verify; use --prefill=1, --verify=0 or "
			 "emu:media=file,path=FILE (kept between runs)\n", o.backend);
		return 2;
	}

	/* emu without an explicit size: size each emulated namespace to its share */
	char backend[1024];
	if (cli_backend_sized(o.backend, o.size, o.bs, backend, sizeof(backend))) {
		cli_fail("bam bench: --size=%llu: too large for the emulated namespaces (their size would pass 2^64 bytes)\n",
			 (unsigned long long)o.size);
		return 2;
	}

	struct bam_ctx_opts co = {.target = o.target, .qpairs = o.qpairs, .queue_depth = o.queue_depth,
				  .timeout_ns = o.timeout_ms * 1000000ull, .ctrl_workers = o.workers};
	struct bam_ctx *ctx = NULL;
	char err[512];

	/* the GPU baseline runs before the emulator starts, so its frees cannot wait
	 * on the persistent worker kernel */
	int want_base = o.baseline == 2 ? (o.rw == BENCH_READ || o.rw == BENCH_RANDREAD) : (int)o.baseline;
	double base_bps = 0, base_cps = 0, hbm_bps = 0;
	/* the baseline reads from where the data lives: GPU memory for emu:media=gpu */
	const int media_gpu = cli_backend_media_gpu(o.backend);
	enum bam_target tgt = o.target;
#ifdef BAM_HAVE_CUDA
	extern int bam_gpu_available(void);
	if (tgt == BAM_TARGET_AUTO)
		tgt = bam_gpu_available() ? BAM_TARGET_GPU : BAM_TARGET_CPU;
	else if (tgt == BAM_TARGET_GPU && !bam_gpu_available()) {
		cli_fail("bam bench: --target=gpu: no usable CUDA device was found (use --target=cpu)\n");
		return 2; /* as bfs, cc and a build without CUDA say it */
	}
#else
	if (tgt == BAM_TARGET_AUTO)
		tgt = BAM_TARGET_CPU;
#endif
	/* what the open would refuse, refused before the baseline (a second or so, and
	 * gigabytes of memory) runs: the string itself, and GPU media off the GPU target */
	const int prc = cli_backend_precheck("bam bench", o.backend, backend,
					     tgt == BAM_TARGET_GPU ? NULL : "this run is on the CPU target");
	if (prc)
		return prc;
	if (!o.threads)
		o.threads = tgt == BAM_TARGET_GPU ? 65536 : 16;
	if (!o.number_ios && o.runtime <= 0)
		o.number_ios = o.threads * 64;
	if (o.number_ios && o.number_ios < o.threads)
		o.threads = o.number_ios;
	if (want_base) {
		int brc;
#ifdef BAM_HAVE_CUDA
		if (tgt == BAM_TARGET_GPU) {
			brc = bench_gpu_chunk_baseline((uint32_t)o.bs, 4ull << 30, o.threads * 32 > (1u << 20) ? (1u << 20) : o.threads * 32,
						       (16ull << 30) / o.bs, media_gpu, &base_bps, &base_cps);
			if (!brc)
				bench_gpu_hbm_baseline(8ull << 30, &hbm_bps);
		} else
#endif
			brc = cpu_baseline(o.bs, o.threads > 64 ? 64 : o.threads, &base_bps, &base_cps);
		if (brc)
			want_base = 0;
	}

	const int dbg = getenv("BAM_DEBUG") != NULL;
#ifdef BAM_HAVE_CUDA
	if (dbg && tgt == BAM_TARGET_GPU) {
		double ns;
		bench_gpu_clock_check(&ns);
	}
#endif
#ifdef BAM_HAVE_CUDA
	if (tgt == BAM_TARGET_GPU)
		bench_gpu_prepare();
#endif
	if (dbg)
		fprintf(stderr, "bam bench: opening %s\n", backend);
	cli_media_note(media, backend);
	int rc = bam_ctx_open(backend, &co, &ctx, err, sizeof(err));
	if (rc)
		return cli_backend_fail("bam bench", o.backend, rc, err);
	if (dbg)
		fprintf(stderr, "bam bench: opened\n");
	struct bam_ns_info ns;
	bam_ctx_ns_info(ctx, 0, &ns);
	uint32_t n_ctrl = bam_ctx_ctrl_count(ctx);
	int exit_code = 0;
	if (o.bs % ns.lba_size) {
		cli_fail("bam bench: --bs=%s is not a multiple of the LBA size %u (--bs: %llu bytes)\n", o.bs_arg ? o.bs_arg : "4k",
			 ns.lba_size, (unsigned long long)o.bs);
		bam_ctx_close(ctx);
		return 2;
	}
	uint64_t nblocks = o.size / o.bs;
	if (o.size % o.bs && !o.quiet)
		fprintf(stderr, "bam bench: note: --size=%llu is not a whole number of %llu-byte blocks: the region tested is its first %llu blocks\n",
			(unsigned long long)o.size, (unsigned long long)o.bs, (unsigned long long)nblocks);
	uint64_t per_ctrl_blocks = (nblocks + n_ctrl - 1) / n_ctrl;
	for (uint32_t c = 0; c < n_ctrl; c++) {
		struct bam_ns_info ni;
		bam_ctx_ns_info(ctx, c, &ni);
		if (per_ctrl_blocks * o.bs > ni.nlba * ni.lba_size) {
			cli_fail("bam bench: --size=%llu needs %llu bytes on each of %u controllers; controller %u has %llu\n",
				(unsigned long long)o.size, (unsigned long long)(per_ctrl_blocks * o.bs), n_ctrl, c,
				(unsigned long long)(ni.nlba * ni.lba_size));
			bam_ctx_close(ctx);
			return 2;
		}
	}

	struct bench_args a;
	memset(&a, 0, sizeof(a));
	a.dev = bam_ctx_dev(ctx);
	a.bs = (uint32_t)o.bs;
	a.lba_shift = ns.lba_size == 4096 ? 12 : 9;
	a.n_ctrl = n_ctrl;
	a.iodepth = o.iodepth;
	a.rwmix_read = o.rwmix_read;
	a.verify = o.verify;
	a.rw = o.rw;
	a.nblocks = nblocks;
	a.threads = o.threads;
	a.ios_per_thread = o.number_ios ? (o.number_ios + o.threads - 1) / o.threads : 0;
	a.runtime_ns = (uint64_t)(o.runtime * 1e9);
	a.seed = o.seed;

	/* prefill the tested region with the pattern (reads verify against it) */
	if (o.verify && o.prefill && o.rw != BENCH_WRITE && o.rw != BENCH_RANDWRITE) {
		struct prefill p = {.ctx = ctx, .a = &a, .per_ctrl_bytes = per_ctrl_blocks * o.bs, .chunk = 4ull << 20};
		p.nchunks = (p.per_ctrl_bytes + p.chunk - 1) / p.chunk;
		if (!o.quiet)
			fprintf(stderr, "bam bench: writing the verification pattern to %.1f MiB of media (%llu blocks of %llu bytes)\n",
				(double)(p.per_ctrl_bytes * n_ctrl) / (1 << 20), (unsigned long long)(per_ctrl_blocks * n_ctrl),
				(unsigned long long)o.bs);
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		bam_cpu_launch(p.nchunks * n_ctrl, (uint32_t)(ncpu > 0 ? ncpu : 2), prefill_one, &p);
		if (p.rc) {
			cli_fail("bam bench: prefill failed: %s\n", bam_strerror(p.rc));
			bam_ctx_close(ctx);
			return 1;
		}
		/* files: the pattern went through the page cache; write it back now, or the
		 * first direct reads of each range would wait for it during the run */
		if ((p.rc = files_sync(bam_ctx_backend_desc(ctx)))) {
			bam_ctx_close(ctx);
			return 1;
		}
	}

	if (dbg)
		fprintf(stderr, "bam bench: prefill done, allocating buffers\n");
	uint64_t nbuf = o.threads * o.iodepth;
	a.buf = bam_mem_alloc(ctx, BAM_MEM_DEVICE, nbuf * o.bs);
	struct bench_out *dout = bam_mem_alloc(ctx, BAM_MEM_DEVICE, sizeof(struct bench_out));
	uint64_t *hlist = NULL;
	if (!a.buf || !dout) {
		cli_fail("bam bench: cannot allocate %llu bytes of I/O buffers\n", (unsigned long long)(nbuf * o.bs));
		bam_ctx_close(ctx);
		return 1;
	}
	a.out = dout;
	if (o.bs > 2 * NVME_PAGE_SIZE) {
		/* PRP lists for every buffer, built once (no allocation in the I/O path) */
		a.prp_stride = bam_prp_list_bytes(0, o.bs);
		a.prp = bam_mem_alloc(ctx, BAM_MEM_DEVICE, nbuf * a.prp_stride);
		hlist = calloc(nbuf, a.prp_stride);
		if (!a.prp || !hlist) {
			cli_fail("bam bench: cannot allocate PRP lists\n");
			free(hlist);
			bam_ctx_close(ctx);
			return 1;
		}
		for (uint64_t i = 0; i < nbuf; i++) {
			uint64_t *l = hlist + i * (a.prp_stride / 8);
			bam_prp_list_fill(l, (uint64_t)(uintptr_t)(a.prp + i * (a.prp_stride / 8)),
					  (uint64_t)(uintptr_t)(a.buf + i * o.bs), o.bs);
		}
		bam_mem_copy(ctx, a.prp, hlist, nbuf * a.prp_stride);
		free(hlist);
	}

	struct progress pr = {.ctx = ctx, .dev_out = dout, .total_ios = a.ios_per_thread * o.threads,
			      .runtime = o.runtime, .quiet = o.quiet || o.json};
	pthread_t pth;
	pthread_create(&pth, NULL, progress_main, &pr);
	double t0 = now_s(), elapsed = 0;
	if (bam_ctx_target(ctx) == BAM_TARGET_GPU) {
#ifdef BAM_HAVE_CUDA
		void *h = NULL;
		double ms = 0;
		if (dbg)
			fprintf(stderr, "bam bench: launching the kernel\n");
		rc = bench_gpu_start(&a, &h);
		/* watchdog: every wait in the kernel is bounded, so it must end within the run
		 * time plus a few timeouts; if not, say what the queues look like and give up */
		double limit = (o.runtime > 0 ? o.runtime : 60.0) + 4.0 * (double)o.timeout_ms / 1e3 + 30.0;
		while (!rc && bench_gpu_done(h) == 0) {
			usleep(10000);
			if (now_s() - t0 > limit) {
				cli_fail("bam bench: the kernel did not finish within %.0f s; queue state:\n", limit);
				bam_ctx_dump(ctx, stderr);
				_exit(cli_exit(1)); /* with --json, the error object first */
			}
		}
		if (!rc)
			rc = bench_gpu_finish(h, &ms);
		if (dbg)
			fprintf(stderr, "bam bench: kernel done (%.3f ms)\n", ms);
		elapsed = ms / 1e3;
#endif
	} else {
		struct bench_args *ap = &a;
		/* CPU target: logical threads run one after another on the host threads, so
		 * the run time is one deadline for the whole run, not per logical thread */
		if (a.runtime_ns)
			a.deadline_ns = bam_time_ns() + a.runtime_ns;
		rc = bam_cpu_launch(o.threads, (uint32_t)(o.threads > 1024 ? 1024 : o.threads), cpu_bench_thread, ap);
		elapsed = now_s() - t0;
	}
	__atomic_store_n(&pr.done, 1, __ATOMIC_RELEASE);
	pthread_join(pth, NULL);

	struct bench_out res;
	memset(&res, 0, sizeof(res));
	if (rc || bam_mem_copy(ctx, &res, dout, sizeof(res))) {
		cli_fail("bam bench: run failed: %s\n", bam_strerror(rc ? rc : -EIO));
		bam_mem_free(ctx, BAM_MEM_DEVICE, a.buf);
		bam_mem_free(ctx, BAM_MEM_DEVICE, dout);
		bam_mem_free(ctx, BAM_MEM_DEVICE, a.prp);
		bam_ctx_close(ctx);
		return 1;
	}
	struct bam_ctrl_stats tot;
	memset(&tot, 0, sizeof(tot));
	for (uint32_t c = 0; c < n_ctrl; c++) {
		struct bam_ctrl_stats s;
		if (bam_ctx_ctrl_stats(ctx, c, &s) == 0) {
			tot.cmds += s.cmds;
			tot.errors += s.errors;
			tot.injected += s.injected;
			tot.qp.submitted += s.qp.submitted;
			tot.qp.doorbells += s.qp.doorbells;
			tot.qp.timeouts += s.qp.timeouts;
			tot.qp.late += s.qp.late;
		}
	}
	double iops = elapsed > 0 ? (double)res.ios / elapsed : 0;
	double mbps = elapsed > 0 ? (double)res.bytes / elapsed / 1e6 : 0;
	uint64_t p50 = percentile(&res, 0.50), p99 = percentile(&res, 0.99), p999 = percentile(&res, 0.999);
	const int on_gpu = bam_ctx_target(ctx) == BAM_TARGET_GPU;
	/* what the baseline read (JSON "what", and the summary line) */
	const char *base_what = !on_gpu ? "host threads copying random bs chunks of host memory"
				: media_gpu ? "plain kernel reading random bs chunks of GPU memory (where emu:media=gpu keeps the data)"
					    : "plain kernel reading random bs chunks of pinned host memory";
	const char *tname = on_gpu ? "gpu" : "cpu";
	char desc[1024];
	snprintf(desc, sizeof(desc), "%s", bam_ctx_backend_desc(ctx));
	const uint32_t qpairs = bam_ctx_qpairs(ctx), qdepth = bam_ctx_queue_depth(ctx);
	if (res.errors || res.timeouts || res.verify_fail)
		exit_code = 1;
	if (res.timeouts || getenv("BAM_DEBUG"))
		bam_ctx_dump(ctx, stderr);
	bam_mem_free(ctx, BAM_MEM_DEVICE, a.buf);
	bam_mem_free(ctx, BAM_MEM_DEVICE, dout);
	bam_mem_free(ctx, BAM_MEM_DEVICE, a.prp);
	bam_ctx_close(ctx);

	/* the comparisons run now, with the back end's service threads gone */
	struct cmp_out cmp;
	memset(&cmp, 0, sizeof(cmp));
	if (o.compare) {
		struct bench_cmp_cfg cc = {.bs = (uint32_t)o.bs, .lba_shift = a.lba_shift, .nblocks = nblocks,
					   .random = o.rw == BENCH_RANDREAD, .runtime = o.runtime,
					   .total_ios = o.number_ios ? a.ios_per_thread * o.threads : 0,
					   .verify = (int)o.verify, .gpu = on_gpu, .seed = o.seed,
					   .stall_ns = (o.timeout_ms < 2500 ? 2500 : o.timeout_ms) * 4000000ull};
		if (run_compare(&o, desc, &cc, &cmp))
			exit_code = 1;
		for (int k = 0; k < 2; k++)
			if (cmp.ran[k] && (cmp.r[k].errors || cmp.r[k].verify_fail))
				exit_code = 1;
	}

	if (o.json) {
		cJSON *j = cJSON_CreateObject(), *cfg = cJSON_AddObjectToObject(j, "config");
		cli_json_add_str(cfg, "backend", desc);
		cJSON_AddStringToObject(cfg, "target", tname);
		cJSON_AddStringToObject(cfg, "rw", o.rw_name);
		cJSON_AddNumberToObject(cfg, "bs", (double)o.bs);
		cJSON_AddNumberToObject(cfg, "size", (double)o.size);
		cJSON_AddNumberToObject(cfg, "threads", (double)o.threads);
		cJSON_AddNumberToObject(cfg, "iodepth", o.iodepth);
		cJSON_AddNumberToObject(cfg, "controllers", n_ctrl);
		cJSON_AddNumberToObject(cfg, "qpairs", qpairs);
		cJSON_AddNumberToObject(cfg, "queue_depth", qdepth);
		cJSON_AddNumberToObject(cfg, "verify", o.verify);
		cJSON *r = cJSON_AddObjectToObject(j, "result");
		cJSON_AddNumberToObject(r, "ios", (double)res.ios);
		cJSON_AddNumberToObject(r, "seconds", elapsed);
		cJSON_AddNumberToObject(r, "iops", iops);
		cJSON_AddNumberToObject(r, "MBps", mbps);
		cJSON_AddNumberToObject(r, "lat_p50_us", p50 / 1e3);
		cJSON_AddNumberToObject(r, "lat_p99_us", p99 / 1e3);
		cJSON_AddNumberToObject(r, "lat_p999_us", p999 / 1e3);
		cJSON_AddNumberToObject(r, "submit_mean_us", res.ios ? res.submit_ns / 1e3 / res.ios : 0);
		cJSON_AddNumberToObject(r, "errors", (double)res.errors);
		cJSON_AddNumberToObject(r, "timeouts", (double)res.timeouts);
		cJSON_AddNumberToObject(r, "verify_failures", (double)res.verify_fail);
		cJSON_AddNumberToObject(r, "doorbells", (double)tot.qp.doorbells);
		cJSON_AddNumberToObject(r, "commands", (double)tot.cmds);
		if (want_base) {
			cJSON *b = cJSON_AddObjectToObject(j, "baseline");
			cJSON_AddStringToObject(b, "what", base_what);
			cJSON_AddNumberToObject(b, "chunks_per_s", base_cps);
			cJSON_AddNumberToObject(b, "MBps", base_bps / 1e6);
			cJSON_AddNumberToObject(b, "ratio_bw", base_bps > 0 ? mbps * 1e6 / base_bps : 0);
			if (hbm_bps > 0)
				cJSON_AddNumberToObject(b, "hbm_MBps", hbm_bps / 1e6);
		}
		if (cmp.ran[0] || cmp.ran[1])
			cmp_json(j, &cmp, on_gpu, iops, mbps);
		if (exit_code) {
			/* the results, and the error object as after any failure (cli_util.h) */
			bench_fail_summary(&res, &cmp);
			cJSON_AddItemToObject(j, "error", cli_json_error(exit_code));
			cli_json_printed();
		}
		char *s = cJSON_PrintUnformatted(j); /* one line, as bfs, cc and graph info print */
		printf("%s\n", s);
		free(s);
		cJSON_Delete(j);
	} else {
		printf("bam bench: rw=%s bs=%llu size=%llu threads=%llu iodepth=%u target=%s\n", o.rw_name,
		       (unsigned long long)o.bs, (unsigned long long)o.size, (unsigned long long)o.threads, o.iodepth, tname);
		printf("  backend: %s\n", desc);
		printf("  controllers=%u qpairs=%u queue_depth=%u timeout=%llums verify=%u\n", n_ctrl, qpairs, qdepth,
		       (unsigned long long)o.timeout_ms, o.verify);
		printf("  ios=%llu (read %llu, write %llu) in %.3f s\n", (unsigned long long)res.ios,
		       (unsigned long long)res.reads, (unsigned long long)res.writes, elapsed);
		printf("  IOPS=%.0f BW=%.1f MB/s\n", iops, mbps);
		printf("  lat (us): p50=%.2f p99=%.2f p99.9=%.2f, of which the submission %.2f (mean)\n", p50 / 1e3,
		       p99 / 1e3, p999 / 1e3, res.ios ? res.submit_ns / 1e3 / res.ios : 0);
		printf("  errors=%llu timeouts=%llu verify_failures=%llu", (unsigned long long)res.errors,
		       (unsigned long long)res.timeouts, (unsigned long long)res.verify_fail);
		if (res.first_status)
			printf(" first_status=\"%s\"", nvme_status_name((uint16_t)res.first_status));
		printf("\n  commands=%llu doorbells=%llu (%.1f commands per doorbell) injected=%llu late=%llu\n",
		       (unsigned long long)tot.cmds, (unsigned long long)tot.qp.doorbells,
		       tot.qp.doorbells ? (double)tot.qp.submitted / tot.qp.doorbells : 0.0,
		       (unsigned long long)tot.injected, (unsigned long long)tot.qp.late);
		if (want_base) {
			printf("  baseline (%s): %.0f chunks/s, %.1f MB/s -> bam/baseline = %.3f (bandwidth)\n", base_what,
			       base_cps, base_bps / 1e6, base_bps > 0 ? mbps * 1e6 / base_bps : 0);
			if (hbm_bps > 0)
				printf("  HBM read: %.1f GB/s\n", hbm_bps / 1e9);
		}
		if (cmp.ran[0] || cmp.ran[1])
			cmp_print(&cmp, on_gpu, iops, mbps);
		if (exit_code) /* the reason on stderr too, for a script that sees only the status */
			bench_fail_summary(&res, &cmp);
	}
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
