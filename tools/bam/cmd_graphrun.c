/* SPDX-License-Identifier: MIT */
/*
 * bam bfs / bam cc / bam demo: the main job. Parses the options into a bam_graph_run
 * (apps/graph, bam/graph_run.h), runs it and prints the result (graph_out.c): graph
 * analytics on a CSR file with the arrays read on demand through bam (--mode bam), or
 * from memory for the baselines: gpu, host, uvm.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "bam/bam.h"
#include "bam/backend.h"
#include "bam/graph.h"
#include "bam/graph_run.h"
#include "cli_util.h"
#include "cmds.h"
#include "graph_out.h"

/* The options of a command: the run's, and what only the CLI looks at. */
struct gcli {
	struct bam_graph_run_opts o;
	int json, quiet;
	int nsources_set;     /* --sources given */
	const char *bfs_only; /* the last BFS-only option given (refused by cc) */
	const char *bam_only; /* the last --mode=bam option given (refused by the others) */
	int demo;             /* run by bam demo (its messages say "bam demo: bfs: ...") */
	int work_made;        /* bam demo created .work/ (removed again if it stays empty) */
	const char *values_out; /* --values-out=FILE: per-vertex levels (bfs) / labels (cc) */
};

static const char *const mode_names[] = {"bam", "host", "gpu", "uvm"};
static const char *const frontier_names[] = {"auto", "queue", "scan"};

static void usage(FILE *f, const char *cmd)
{
	fprintf(f,
		"usage: bam %s GRAPH [options]     (GRAPH: a bam CSR file from 'bam graph import')\n"
		"%s"
		"  --mode=M           bam (default), host, gpu, uvm (baselines; gpu/uvm need a GPU)\n"
		"  --backend=STR      storage for --mode=bam (default emu: the emulated NVMe SSD)\n"
		"  --allow-write      let the run place the graph on a real device (nvme), destroying its data\n"
		"  --cache-size=SIZE  --mode=bam: cache bytes (default: 1/8 of the edge array; at\n"
		"                     least 1 MiB, at most what the offsets and edges take)\n"
		"  --line-size=SIZE   --mode=bam: cache line bytes, 512 to 64K (default 4096 for\n"
		"                     bfs, 8192 for cc)\n"
		"%s"
		"  --target=T         gpu, cpu or auto (default)\n"
		"  --verify           check the graph file's array checksums, then the result\n"
		"                     against the CPU reference\n"
		"  --qpairs=N --ctrl-workers=N --timeout-ms=N   --mode=bam: I/O engine settings\n"
		"  --warps=N          GPU: run each walk kernel with at most N warps (8 to 1048576,\n"
		"                     rounded up to blocks of 8; default 16 blocks of 8 per SM)\n"
		"  --offset-bytes=B   width of one offset as every mode stores and reads them: 4, 8\n"
		"                     or auto (default: 4 when the graph has fewer than 2^32 edges;\n"
		"                     the file keeps 8: --mode=bam writes them so onto the storage,\n"
		"                     the other modes narrow them after reading the file, in their\n"
		"                     end-to-end time)\n"
		"  --offsets-priority=P  --mode=bam: the offsets array's cache priority, high or\n"
		"                     normal (default: high for bfs, whose levels read the offsets\n"
		"                     again and again; normal for cc, which reads them once): the\n"
		"                     cache's victim search passes over some high-priority lines\n"
		"                     before it evicts one\n"
		"  --offsets=WHERE    --mode=bam: storage (default: every offset read through the\n"
		"                     cache, as the edges) or memory (copied once per run from the\n"
		"                     storage, through the cache, into GPU memory (CPU target: host\n"
		"                     memory), off_bytes x (n+1) bytes; the copy is in the\n"
		"                     end-to-end time, not in compute: the BaM prototype's BFS keeps\n"
		"                     its vertex array in GPU memory so)\n"
		"  --values-out=FILE  write the per-vertex result to FILE, one line per vertex in\n"
		"                     vertex order: bfs the level from the first source (-1:\n"
		"                     not reached), cc the component label (its smallest vertex)\n"
		"  --json             JSON on stdout (bfs: the sources, with the vertices and levels\n"
		"                     each reached)\n"
		"  --quiet            no progress on stderr\n",
		cmd,
		strcmp(cmd, "bfs") ? "Connected components: weakly connected (arcs taken in both directions).\n"
				   : "Breadth-first search along out-arcs from each source; levels per vertex.\n",
		strcmp(cmd, "bfs") ? "" : "  --sources=N        BFS sources: N random vertices with >= 2 out-neighbours\n"
					  "                     (default 32; 1 to 1048576; fewer if fewer qualify)\n"
					  "  --source=V         one given source vertex\n"
					  "  --seed=N           seed of the source choice (default 1)\n"
					  "  --frontier=F       how a level finds its frontier: queue (the vertices found\n"
					  "                     by the level before, in discovery order), scan (the level\n"
					  "                     array in vertex order: edges read in order, but every level\n"
					  "                     reads all n levels, slow on long thin graphs) or auto\n"
					  "                     (default: scan when the frontier holds >= n/F vertices)\n"
					  "  --scan-fraction=F  auto's threshold above, 1 to 1048576 (default 64)\n"
					  "  --level-trace      per level of the first source: frontier size, how it was\n"
					  "                     found, time and (--mode=bam) line fills, on stderr even\n"
					  "                     with --quiet (JSON: level_trace, level_trace_source); the\n"
					  "                     levels are then driven from the host, and the trace's own\n"
					  "                     work is in the compute time\n"
					  "  --level-loop=L     GPU: device (default: the levels run as one CUDA graph, no\n"
					  "                     host round trip per level) or host (one launch, copy and\n"
					  "                     synchronisation per level); the CPU target always uses host\n"
					  "  --scan-ranges=R    how a scan level is shared out among warps: vertices\n"
					  "                     (default: ranges of n/warps vertices), lines (a work item\n"
					  "                     per line of the edge array, taken one by one) or edges\n"
					  "                     (ranges of about m/(64 x SMs) edges). With lines and\n"
					  "                     edges, a warp whose vertices have long lists gets fewer\n"
					  "                     of them; one sweep over the offsets per run, counted in\n"
					  "                     the compute time, finds where the ranges start (a graph\n"
					  "                     without edges or --frontier=queue: no ranges)\n");
}


/* ---- the run: media files noted for signals, messages, exit status ------------------- */

struct media_hook {
	struct cli_media *media;
	const char *who, *given, *graph;
};

/* bam_graph_run's before_open: note the media files the run creates (removed again if
 * it fails or is interrupted); refuse media that are the graph file itself */
static int note_media(void *arg, const char *backend, char *err, size_t errlen)
{
	struct media_hook *h = arg;
	cli_media_note(h->media, backend);
	if (h->media->incomplete) { /* (more names than any back end takes: it would refuse them) */
		snprintf(err, errlen, "%s: --backend=%s: its media files could not all be listed (more than %d, a path past "
			 "PATH_MAX, or out of memory): at most %d controllers", h->who, h->given, CLI_MEDIA_MAX, CLI_MEDIA_MAX);
		h->media->n = 0;
		return -EINVAL;
	}
	const int fd = open(h->graph, O_RDONLY);
	const char *same = fd >= 0 ? cli_media_same(h->media, fd) : NULL;
	if (fd >= 0)
		close(fd);
	if (same) {
		snprintf(err, errlen, "%s: --backend=%s: %s is the graph file %s itself: its media would overwrite it", h->who,
			 h->given, same, h->graph);
		h->media->n = 0;
		return -EINVAL;
	}
	return 0;
}

/* progress and the level trace on stderr; a verification mismatch kept for --json too */
static void on_msg(void *arg, enum bam_graph_msg kind, const char *text)
{
	(void)arg;
	if (kind == BAM_GRAPH_MSG_VERIFY)
		cli_fail("%s\n", text);
	else
		cli_eprintf("%s\n", text);
}

/* Run algo as g says. Returns the exit status: 0; 1 (failed, or a result differs from
 * the reference); 2 (options refused). *complete (may be NULL): the run ended with
 * results (in *r, to free with bam_graph_run_result_free in any case). */
static int graph_allow_write; /* --allow-write */

static int run_graph(const struct gcli *g, enum bam_graph_algo algo, struct bam_graph_run_result *r, int *complete)
{
	static struct cli_media media; /* (128 KiB: not on the stack) */
	static char err[16384];
	char who[24];
	snprintf(who, sizeof(who), "bam %s%s", g->demo ? "demo: " : "", algo == BAM_GRAPH_CC ? "cc" : "bfs");
	memset(r, 0, sizeof(*r)); /* freed by the caller also after a refusal below */
	media.n = 0;
	struct media_hook h = {&media, who, g->o.backend, g->o.graph};
	struct bam_graph_run_opts o = g->o;
	if (graph_allow_write)
		o.backend = cli_allow_write(o.backend);
	o.algo = algo;
	o.prog = who;
	o.quiet = g->quiet || g->json;
	o.msg = on_msg;
	o.before_open = note_media;
	o.before_open_arg = &h;
	uint64_t nv = 0, ne = 0;
	void *values = NULL;
	if (g->values_out && !g->demo) {
		struct stat sg, sv;
		if (!stat(g->o.graph, &sg) && !stat(g->values_out, &sv) && sg.st_dev == sv.st_dev && sg.st_ino == sv.st_ino) {
			cli_fail("%s: --values-out=%s is the graph file: give another file\n", who, g->values_out);
			return 2;
		}
		int src = bam_graph_size(g->o.graph, &nv, &ne, err, sizeof(err));
		if (!src && !(values = calloc(nv ? nv : 1, algo == BAM_GRAPH_CC ? 8 : 4)))
			src = -ENOMEM;
		if (src) {
			cli_fail("%s: %s\n", who, src == -ENOMEM ? "out of memory for --values-out" : err);
			return 1;
		}
		o.values_n = nv;
		if (algo == BAM_GRAPH_CC)
			o.labels_out = values;
		else
			o.levels_out = values;
	}
	const int rc = bam_graph_run(&o, r, err, sizeof(err));
	if (!rc && values && bam_graph_values_write(g->values_out, o.levels_out, o.labels_out, nv, err, sizeof(err))) {
		cli_media_keep(&media); /* the run itself succeeded */
		cli_fail("%s: --values-out: %s\n", who, err);
		free(values);
		return 1;
	}
	free(values);
	if (complete)
		*complete = rc == 0;
	if (rc || r->verified < 0)
		cli_media_forget(&media);
	else
		cli_media_keep(&media);
	if (!rc)
		return r->verified < 0 ? 1 : 0;
	if (err[0] && r->err_said) /* (the library said it on stderr: for the JSON message) */
		cli_fail_note("%s\n", err);
	else if (err[0])
		cli_fail("%s\n", err);
	return r->refused ? 2 : 1;
}

/* The value of a two-valued option --NAME: 0 for a, 1 for b; -1 for anything else (said,
 * as "expected a or b"). */
static int opt_pick2(const char *cmd, const char *name, const char *arg, const char *a, const char *b)
{
	if (!strcmp(arg, a))
		return 0;
	if (!strcmp(arg, b))
		return 1;
	cli_fail("bam %s: --%s=%s: expected %s or %s\n", cmd, name, arg, a, b);
	return -1;
}

static int parse_common(int argc, char **argv, struct gcli *g, const char *cmd)
{
	struct bam_graph_run_opts *o = &g->o;
	static const struct option lo[] = {
		{"mode", 1, 0, 'M'}, {"backend", 1, 0, 'B'}, {"cache-size", 1, 0, 'C'}, {"line-size", 1, 0, 'L'},
		{"sources", 1, 0, 'n'}, {"source", 1, 0, 's'}, {"seed", 1, 0, 'S'}, {"target", 1, 0, 'g'},
		{"verify", 0, 0, 'v'}, {"json", 0, 0, 'j'}, {"quiet", 0, 0, 'q'}, {"qpairs", 1, 0, 'Q'},
		{"ctrl-workers", 1, 0, 'w'}, {"timeout-ms", 1, 0, 'o'}, {"frontier", 1, 0, 'F'},
		{"scan-fraction", 1, 0, 'x'},
		{"level-trace", 0, 0, 'T'}, {"level-loop", 1, 0, 'P'}, {"warps", 1, 0, 'W'}, {"scan-ranges", 1, 0, 'R'},
		{"offset-bytes", 1, 0, 'O'}, {"offsets-priority", 1, 0, 'y'}, {"offsets", 1, 0, 'Z'},
		{"help", 0, 0, 'h'}, {"allow-write", 0, 0, 1001},
		{"values-out", 1, 0, 1002}, {0, 0, 0, 0}};
	int ch;
	static char who[16]; /* the messages' prefix, "bam bfs"; argv[0] for getopt's messages */
	snprintf(who, sizeof(who), "bam %s", cmd);
	argv[0] = who;
	cli_json_init(cmd, argc, argv, "h", lo, 'j'); /* --json: failures print an error object too */
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		uint64_t v;
		switch (ch) {
		case 'M': {
			int k = cli_name_index(mode_names, 4, optarg);
			if (k < 0) {
				cli_fail("bam %s: --mode=%s: expected bam, host, gpu or uvm\n", cmd, optarg);
				return 2;
			}
			o->mode = (enum bam_graph_mode)k;
			break;
		}
		case 'B':
			if (cli_backend_arg(who, optarg))
				return 2;
			o->backend = optarg;
			g->bam_only = "--backend";
			break;
		case 1001:
			graph_allow_write = 1;
			break;
		case 1002:
			if (!*optarg) {
				cli_fail("%s: --values-out: the file name is empty\n", who);
				return 2;
			}
			g->values_out = optarg;
			break;
		case 'C':
			if (bam_parse_size(optarg, &o->cache_bytes) || !o->cache_bytes) {
				cli_fail("bam %s: --cache-size=%s: a size in bytes with an optional K, M, G or T suffix, above 0\n", cmd, optarg);
				return 2;
			}
			o->cache_arg = optarg;
			g->bam_only = "--cache-size";
			break;
		case 'L':
			if (bam_parse_size(optarg, &v) || v < 512 || v > 65536 || (v & (v - 1))) {
				cli_fail("bam %s: --line-size=%s: a power of two from 512 to 64K\n", cmd, optarg);
				return 2;
			}
			o->line = (uint32_t)v;
			g->bam_only = "--line-size";
			break;
		case 'n':
			if (cli_u32(optarg, 1, 1u << 20, &o->nsources)) {
				cli_fail("bam %s: --sources=%s: a count from 1 to 1048576\n", cmd, optarg);
				return 2;
			}
			g->bfs_only = "--sources";
			g->nsources_set = 1;
			break;
		case 's': if (cli_u64(optarg, 0, INT64_MAX, &o->source)) goto bad; o->source_set = 1; g->bfs_only = "--source"; break;
		case 'S': if (cli_u64(optarg, 0, UINT64_MAX, &o->seed)) goto bad; g->bfs_only = "--seed"; break;
		case 'g':
			if (!strcmp(optarg, "gpu")) o->target = BAM_TARGET_GPU;
			else if (!strcmp(optarg, "cpu")) o->target = BAM_TARGET_CPU;
			else if (!strcmp(optarg, "auto")) o->target = BAM_TARGET_AUTO;
			else goto bad;
			break;
		case 'F': {
			int k = cli_name_index(frontier_names, 3, optarg);
			if (k < 0) {
				cli_fail("bam %s: --frontier=%s: expected auto, queue or scan\n", cmd, optarg);
				return 2;
			}
			o->frontier = (enum bam_graph_frontier)k;
			g->bfs_only = "--frontier";
			break;
		}
		case 'x':
			if (cli_u64(optarg, 1, 1048576, &o->scan_fraction)) goto bad;
			g->bfs_only = "--scan-fraction";
			break;
		case 'T': o->level_trace = 1; g->bfs_only = "--level-trace"; break;
		case 'P': {
			int k;
			if ((k = opt_pick2(cmd, "level-loop", optarg, "device", "host")) < 0)
				return 2;
			o->level_loop = k ? BAM_GRAPH_LOOP_HOST : BAM_GRAPH_LOOP_DEVICE;
			g->bfs_only = "--level-loop";
			break;
		}
		case 'R': {
			if (strcmp(optarg, "vertices") && strcmp(optarg, "lines") && strcmp(optarg, "edges")) {
				cli_fail("bam %s: --scan-ranges=%s: expected vertices, lines or edges\n", cmd, optarg);
				return 2;
			}
			o->scan_ranges = !strcmp(optarg, "lines")   ? BAM_GRAPH_RANGES_LINES
					 : !strcmp(optarg, "edges") ? BAM_GRAPH_RANGES_EDGES
								    : BAM_GRAPH_RANGES_VERTICES;
			g->bfs_only = "--scan-ranges";
			break;
		}
		case 'O':
			if (!strcmp(optarg, "auto"))
				o->off_bytes = 0;
			else if (!strcmp(optarg, "4") || !strcmp(optarg, "8"))
				o->off_bytes = (uint32_t)(optarg[0] - '0');
			else {
				cli_fail("bam %s: --offset-bytes=%s: expected 4, 8 or auto\n", cmd, optarg);
				return 2;
			}
			break;
		case 'y': {
			const int pick = opt_pick2(cmd, "offsets-priority", optarg, "high", "normal");
			if (pick < 0)
				return 2;
			o->off_prio = pick == 0 ? BAM_GRAPH_PRIO_HIGH : BAM_GRAPH_PRIO_NORMAL;
			g->bam_only = "--offsets-priority";
			break;
		}
		case 'Z': {
			const int pick = opt_pick2(cmd, "offsets", optarg, "storage", "memory");
			if (pick < 0)
				return 2;
			o->off_mem = pick == 1;
			g->bam_only = "--offsets";
			break;
		}
		case 'v': o->verify = 1; break;
		case 'j': g->json = 1; break;
		case 'q': g->quiet = 1; break;
		case 'Q': if (cli_u32(optarg, 1, 65535, &o->qpairs)) goto bad; g->bam_only = "--qpairs"; break;
		case 'w': if (cli_u32(optarg, 1, 1024, &o->ctrl_workers)) goto bad; g->bam_only = "--ctrl-workers"; break;
		case 'W':
			if (cli_u32(optarg, 8, 1u << 20, &o->warps)) {
				cli_fail("bam %s: --warps=%s: a count from 8 to 1048576\n", cmd, optarg);
				return 2;
			}
			break;
		case 'o': if (cli_u64(optarg, 1, 3600000, &o->timeout_ms)) goto bad; g->bam_only = "--timeout-ms"; break;
		case 'h': usage(stdout, cmd); return -1;
		default: /* getopt said what is wrong on stderr */
			cli_fail_note("bam %s: bad option '%s': unknown, ambiguous or missing its value (bam %s --help)\n", cmd,
				      argv[optind - 1], cmd);
			/* the one line, not the whole usage: the error would scroll away */
			cli_eprintf("usage: bam %s %s [options]     (all options: bam %s --help)\n", cmd,
				strcmp(cmd, "demo") ? "GRAPH" : "[INPUT]", cmd);
			return 2;
		bad: {
			char hint[96];
			cli_fail("bam %s: bad value '%s' for %s%s\n", cmd, optarg, argv[optind - 1],
				 cli_range_hint(optarg, hint, sizeof(hint)));
			return 2;
		}
		}
	}
	return 0;
}

static int graph_cmd(int argc, char **argv, int do_cc)
{
	const char *cmd = do_cc ? "cc" : "bfs";
	struct gcli g = {.o = {.backend = "emu", .nsources = BAM_GRAPH_DEFAULT_SOURCES, .seed = 1, .timeout_ms = 10000}};
	int rc = parse_common(argc, argv, &g, cmd);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (optind != argc - 1) {
		cli_fail("bam %s: expected one GRAPH argument, got %d\n", cmd, argc - optind);
		usage(stderr, cmd);
		return 2;
	}
	g.o.graph = argv[optind];
	if (do_cc && g.bfs_only) {
		cli_fail("bam cc: %s applies to bfs only\n", g.bfs_only);
		return 2;
	}
	if (g.o.mode != BAM_GRAPH_MODE_BAM && g.bam_only) {
		cli_fail("bam %s: %s applies to --mode=bam only (--mode=%s reads the graph without the cache or a back end)\n",
			 cmd, g.bam_only, mode_names[g.o.mode]);
		return 2;
	}
	if (g.o.source_set && g.nsources_set) {
		cli_fail("bam bfs: --source=V and --sources=N: give one (a given source, or N random ones)\n");
		return 2;
	}
	struct bam_graph_run_result r;
	g.o.algo = do_cc ? BAM_GRAPH_CC : BAM_GRAPH_BFS;
	int complete;
	rc = run_graph(&g, g.o.algo, &r, &complete);
	/* a verification mismatch has results: with --json they come with the error */
	if (rc == 0 || (g.json && complete))
		graph_result_print(&g.o, &r, g.json, rc);
	bam_graph_run_result_free(&r);
	return rc;
}

int bam_cmd_bfs(int argc, char **argv) { return graph_cmd(argc, argv, 0); }
int bam_cmd_cc(int argc, char **argv) { return graph_cmd(argc, argv, 1); }

/* ---- demo: the main job on a fresh machine ------------------------------------------ */

/* bam demo's refusals before the import (which takes seconds): 0 or the exit status */
static int demo_check(const struct gcli *g)
{
	if (g->o.level_trace || g->o.level_loop) {
		cli_fail("bam demo: %s applies to bam bfs only\n", g->o.level_trace ? "--level-trace" : "--level-loop");
		return 2;
	}
	if (g->o.mode != BAM_GRAPH_MODE_BAM) {
		cli_fail("bam demo: runs through bam only (--mode=%s is for bam bfs and bam cc)\n", mode_names[g->o.mode]);
		return 2;
	}
	if (g->o.source_set && g->nsources_set) {
		cli_fail("bam demo: --source=V and --sources=N: give one (a given source, or N random ones)\n");
		return 2;
	}
	const int gpu_here = g->o.target != BAM_TARGET_CPU && bam_gpu_available();
	if (g->o.warps && !gpu_here) {
		cli_fail("bam demo: --warps applies to the GPU target (this run is on the CPU target)\n");
		return 2;
	}
	return cli_backend_precheck("bam demo", g->o.backend, g->o.backend,
				    gpu_here                        ? NULL
				    : g->o.target == BAM_TARGET_GPU ? "no usable CUDA device was found"
								    : "this run is on the CPU target");
}

/* The input (the default one when NULL) is readable and neither it nor the back end's
 * media are the import's output: fills input (def: its buffer), name and out; 0 or the
 * exit status */
enum { DEMO_DEF = 1024, DEMO_NAME = 256, DEMO_OUT = 300 }; /* demo_input's buffers */
static int demo_input(struct gcli *g, const char **inputp, char *def, char *name, char *outbuf)
{
	const char *input = *inputp;
	const int given = input != NULL;
	if (!input) {
		const char *sd = getenv("BAM_SHARED_DATA");
		snprintf(def, DEMO_DEF, "%s/graphs/cnr-2000.graph-txt.gz", sd ? sd : "../shared/data");
		input = def;
	}
	*inputp = input;
	if (access(input, R_OK)) {
		cli_fail("bam demo: cannot read %s: %s%s\n", input, strerror(errno),
			 given ? "" : " (the default input: give a graph as an argument, or set BAM_SHARED_DATA to the folder holding graphs/)");
		return 1;
	}
	g->work_made = mkdir(".work", 0755) == 0;
	/* .work/NAME.bcsr, NAME = the input's file name up to its first dot */
	const char *base = strrchr(input, '/');
	base = base ? base + 1 : input;
	size_t bl = strlen(base) < DEMO_NAME - 1 ? strlen(base) : DEMO_NAME - 1;
	memcpy(name, base, bl);
	name[bl] = 0;
	char *dot = strchr(name, '.');
	if (dot && dot != name)
		*dot = 0;
	snprintf(outbuf, DEMO_OUT, ".work/%s.bcsr", name);
	const char *out = outbuf;
	{ /* the import would replace its own input: refused as graph import refuses it */
		struct stat si, so;
		if (!stat(input, &si) && !stat(out, &so) && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
			cli_fail("bam demo: %s: the input is the file demo imports to (%s): move or rename it\n", input, out);
			return 2;
		}
		/* nor may the back end's media be the input (bfs and cc check them against the
		 * imported graph only) */
		static struct cli_media md; /* (128 KiB: not on the stack) */
		cli_media_note(&md, g->o.backend);
		/* (no media files, nothing to open; O_NONBLOCK, O_NOCTTY: a FIFO or a terminal
		 * named as the input must not block here or become ours; the import refuses
		 * them) */
		const int fd = md.n ? open(input, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) : -1;
		const char *same = fd >= 0 ? cli_media_same(&md, fd) : NULL;
		if (fd >= 0)
			close(fd);
		cli_media_keep(&md); /* (a check only: the runs note their media again) */
		if (same) {
			cli_fail("bam demo: --backend=%s: %s is the input %s itself: its media would overwrite it\n", g->o.backend,
				 same, input);
			return 2;
		}
	}
	return 0;
}

/* bam demo's output: one JSON object (the import, both runs, the verdict) or the text
 * results and a summary line. Returns the exit status. */
static int demo_print(const struct gcli *g, const char *name, const char *input, const struct bam_graph_build_stats *bs,
		      double t_imp, const struct bam_graph_run_result *rb, const struct bam_graph_run_result *rcc)
{
	struct bam_graph_run_opts ob = g->o, oc = g->o;
	ob.algo = BAM_GRAPH_BFS;
	oc.algo = BAM_GRAPH_CC;
	int equal = rb->verified > 0 && rcc->verified > 0;
	if (g->json) {
		cJSON *j = cJSON_CreateObject();
		cli_json_add_str(j, "graph", name);
		cli_json_add_str(j, "input", input);
		cJSON_AddNumberToObject(j, "vertices", (double)bs->n_vertices);
		cJSON_AddNumberToObject(j, "arcs", (double)bs->n_edges);
		cJSON_AddNumberToObject(j, "import_s", t_imp);
		cJSON_AddItemToObject(j, "bfs", graph_result_json(&ob, rb));
		cJSON_AddItemToObject(j, "cc", graph_result_json(&oc, rcc));
		cJSON_AddBoolToObject(j, "equal_to_reference", equal);
		if (!equal) {
			cli_fail_note("bam demo: the results differ from the CPU reference\n");
			cJSON_AddItemToObject(j, "error", cli_json_error(1));
			cli_json_printed();
		}
		char *s = cJSON_PrintUnformatted(j);
		printf("%s\n", s);
		free(s);
		cJSON_Delete(j);
		return equal ? 0 : 1;
	}
	graph_result_print(&oc, rcc, 0, 0);
	printf("\ndemo summary: %s (%llu vertices, %llu arcs) imported in %.2f s; BFS %u source%s %.3f s, "
	       "CC %llu component%s %.3f s; results %s the CPU reference\n",
	       name, (unsigned long long)bs->n_vertices, (unsigned long long)bs->n_edges, t_imp, rb->runs,
	       rb->runs == 1 ? "" : "s", rb->compute_s, (unsigned long long)rcc->components,
	       rcc->components == 1 ? "" : "s", rcc->compute_s, equal ? "EQUAL to" : "DIFFER from");
	return equal ? 0 : 1;
}

/* import, BFS and CC (the results printed as they come, the text ones), the output */
static int demo_run(struct gcli *g, const char *input, const char *name, const char *out)
{
	char err[512];
	int rc;
	/* progress on stderr as bfs and cc give it: not with --quiet or --json */
	const int progress = !g->quiet && !g->json;
	struct bam_graph_build_opts bo = {.progress = progress ? stderr : NULL};
	struct bam_graph_build_stats bs;
	double t0 = cli_now();
	if (progress)
		cli_eprintf("bam demo: importing %s -> %s\n", input, out);
	enum bam_graph_format fmt;
	bam_graph_format_parse("auto", &fmt);
	if ((rc = bam_graph_import(input, out, fmt, &bo, &bs, err, sizeof(err)))) {
		cli_fail("bam demo: import failed: %s\n", err);
		return 1;
	}
	double t_imp = cli_now() - t0;
	g->o.graph = out;
	struct bam_graph_run_result rb, rcc;
	const int target_gpu = g->o.target == BAM_TARGET_GPU || (g->o.target == BAM_TARGET_AUTO && bam_gpu_available());
	g->o.nsources = g->o.nsources ? g->o.nsources : (target_gpu ? 32 : 4);
	if (progress)
		cli_eprintf("bam demo: BFS from %u source%s through bam (%s)\n", g->o.nsources,
			g->o.nsources == 1 ? "" : "s", g->o.backend);
	if ((rc = run_graph(g, BAM_GRAPH_BFS, &rb, NULL)))
		goto out_b;
	if (!g->json) {
		g->o.algo = BAM_GRAPH_BFS;
		graph_result_print(&g->o, &rb, 0, 0);
	}
	if (progress)
		cli_eprintf("bam demo: connected components through bam\n");
	if ((rc = run_graph(g, BAM_GRAPH_CC, &rcc, NULL)))
		goto out_c;
	rc = demo_print(g, name, input, &bs, t_imp, &rb, &rcc);
out_c:
	bam_graph_run_result_free(&rcc);
out_b:
	bam_graph_run_result_free(&rb);
	return rc;
}

static void demo_usage(void)
{
	printf("usage: bam demo [INPUT] [options]\n"
	       "The main job: import INPUT (a text graph: SNAP, Matrix Market, LAW graph-txt or arc\n"
	       "list, gzip or not; default $BAM_SHARED_DATA/graphs/cnr-2000.graph-txt.gz, with\n"
	       "BAM_SHARED_DATA defaulting to ../shared/data) into .work/NAME.bcsr, then run BFS\n"
	       "(4 sources on the CPU target, 32 on a GPU) and CC through bam on the emulated SSD,\n"
	       "verify both against the CPU reference and print a summary. Exit 0 only if both match.\n"
	       "Options as for bam bfs: --backend --cache-size --line-size --sources --source --seed\n"
	       "--frontier --scan-fraction --scan-ranges --offset-bytes --offsets-priority --offsets --target --qpairs --ctrl-workers --timeout-ms\n"
	       "--warps --json --quiet\n");
}

int bam_cmd_demo(int argc, char **argv)
{
	struct gcli g = {.o = {.backend = "emu", .seed = 1, .verify = 1, .timeout_ms = 10000}, .demo = 1};
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			demo_usage();
			return 0;
		}
	int rc = parse_common(argc, argv, &g, "demo");
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *input = optind < argc ? argv[optind] : NULL;
	if (optind + 1 < argc) {
		cli_fail("bam demo: unexpected argument '%s' (one INPUT at most)\n", argv[optind + 1]);
		return 2;
	}
	char def[DEMO_DEF], name[DEMO_NAME], out[DEMO_OUT];
	if ((rc = demo_check(&g)) || (rc = demo_input(&g, &input, def, name, out)))
		goto out;
	rc = demo_run(&g, input, name, out);
out:
	/* a failed import leaves .work/ empty: not left behind if this run made it
	 * (rmdir removes only an empty folder) */
	if (rc && g.work_made)
		rmdir(".work");
	return rc;
}
