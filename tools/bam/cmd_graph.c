/* SPDX-License-Identifier: MIT */
/*
 * cmd_graph.c - `bam graph import|generate|info`: the command-line face of bam/graph.h.
 * Exit status: 0 success, 1 error, 2 usage error (README: a bad option or option value,
 * also an -o naming something that exists and is not a regular file, which is not
 * replaced: -EEXIST from the library). Progress goes to stderr (--quiet silences it);
 * results go to stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <cjson/cJSON.h>

#include "bam/graph.h"
#include "cli_util.h"
#include "cmds.h"

#define EXIT_USAGE 2

static void graph_usage(FILE *f)
{
	fprintf(f,
		"usage: bam graph <command> [options]\n"
		"\n"
		"commands:\n"
		"  import INPUT -o OUTPUT    convert a text graph (SNAP, Matrix Market, LAW graph-txt,\n"
		"                            arc list; plain or gzip) to a bam CSR graph file\n"
		"  generate --scale S -o OUTPUT\n"
		"                            write a Graph500 Kronecker graph\n"
		"  info GRAPH                describe a graph file (--verify checks it all)\n"
		"\n"
		"Run 'bam graph <command> --help' for its options. File format: docs/GRAPH-FORMAT.md.\n");
}

static void import_usage(FILE *f)
{
	fprintf(f,
		"usage: bam graph import INPUT -o OUTPUT [options]\n"
		"\n"
		"Convert a text graph into a bam CSR graph file (docs/GRAPH-FORMAT.md). The input is\n"
		"read in two streaming passes (plain or gzip); memory is 8 bytes per vertex plus the\n"
		"edge buffer (--mem), whatever the size of the text.\n"
		"\n"
		"options:\n"
		"  -o, --output PATH      output graph file (an unnamed file beside PATH until complete,\n"
		"                         then put in place; nothing is left behind on failure);\n"
		"                         an existing PATH must be a regular file (else exit status 2)\n"
		"  -f, --format FMT       auto (default: by name .mtx/.graph-txt/.arcs[.gz], else by content),\n"
		"                         snap   '#' comments, 'src dst' per line (tab or space), 0-based,\n"
		"                                n = largest id + 1\n"
		"                         mtx    Matrix Market 'coordinate' pattern|integer|real|complex,\n"
		"                                general|symmetric|skew-symmetric|hermitian (the last three\n"
		"                                store one triangle: each entry gives both directions), 1-based\n"
		"                         law    LAW graph-txt: n on line 1, then line i+2 lists the\n"
		"                                successors of vertex i, 0-based\n"
		"                         arcs   'src<TAB>dst' per line, 0-based\n"
		"  -s, --symmetrize       also store (v,u) for every (u,v), u != v\n"
		"  -l, --drop-self-loops  drop every (v,v)\n"
		"  -d, --dedup            keep one copy of repeated arcs\n"
		"      --id-bytes N       4, 8 or auto (default: 4 when n <= 2^32-1)\n"
		"      --mem SIZE         edge buffer size, e.g. 512M, 4G (default: 1/4 of RAM);\n"
		"                         a smaller buffer means more passes over the input\n"
		"  -j, --threads N        threads for sorting (default: online CPUs)\n"
		"  -q, --quiet            no progress or summary on stderr\n"
		"  -h, --help             this text\n");
}

static void generate_usage(FILE *f)
{
	fprintf(f,
		"usage: bam graph generate --scale S -o OUTPUT [options]\n"
		"\n"
		"Write a Graph500 Kronecker graph: n = 2^S vertices, m = E * n arcs drawn with the\n"
		"initiator A=0.57 B=0.19 C=0.19 D=0.05 (no noise), vertex ids relabelled by a seeded\n"
		"permutation (Graph500's scramble). Arcs are stored as generated (u -> v); Graph500\n"
		"and the BaM paper's kron_g500 graphs are undirected: use --symmetrize --dedup\n"
		"--drop-self-loops. Arcs are regenerated on each pass instead of stored, so memory is\n"
		"8 bytes per vertex plus the edge buffer (--mem); the output is identical for any\n"
		"--threads and --mem.\n"
		"\n"
		"options:\n"
		"  -o, --output PATH      output graph file; an existing PATH must be a regular file\n"
		"                         (else exit status 2)\n"
		"      --scale S          log2 of the number of vertices, 1..40 (required)\n"
		"      --edge-factor E    arcs per vertex (default 16, as Graph500)\n"
		"      --seed N           random seed (default 1)\n"
		"      --initiator A,B,C  initiator probabilities (default 0.57,0.19,0.19; D = 1-A-B-C)\n"
		"  -s, --symmetrize       also store (v,u) for every (u,v), u != v\n"
		"  -l, --drop-self-loops  drop every (v,v)\n"
		"  -d, --dedup            keep one copy of repeated arcs\n"
		"      --id-bytes N       4, 8 or auto (default: 4 when n <= 2^32-1)\n"
		"      --mem SIZE         edge buffer size, e.g. 512M, 4G (default: 1/4 of RAM);\n"
		"                         a smaller buffer means more generation passes\n"
		"  -j, --threads N        generator threads (default: online CPUs)\n"
		"  -q, --quiet            no progress or summary on stderr\n"
		"  -h, --help             this text\n");
}

static void info_usage(FILE *f)
{
	fprintf(f,
		"usage: bam graph info GRAPH [--verify] [--json]\n"
		"\n"
		"Print a graph file's header (format version, flags, counts, id width, array\n"
		"placement, source) and out-degree statistics (min, max, mean, zero-degree vertices).\n"
		"In the text, control characters and bytes that are not UTF-8 (in the source field or\n"
		"the path) are shown as \\xNN, a backslash as \\\\.\n"
		"\n"
		"options:\n"
		"  -v, --verify   also read both arrays: crc32s, offsets monotonic and ending at\n"
		"                 n_edges, neighbour ids < n, lists sorted (exit status 1 if not)\n"
		"  -J, --json     one JSON object on stdout instead of text\n"
		"  -h, --help     this text\n");
}

/* "123", "4K", "512M", "4G", "1T" (powers of 1024) -> bytes. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 0:
		break;
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default:
		return -EINVAL;
	}
	if (*end && end[1] && strcasecmp(end + 1, "iB") != 0 && strcasecmp(end + 1, "B") != 0)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_id_bytes(const char *s, uint32_t *out)
{
	if (!strcmp(s, "auto"))
		*out = 0;
	else if (!strcmp(s, "4"))
		*out = 4;
	else if (!strcmp(s, "8"))
		*out = 8;
	else
		return -EINVAL;
	return 0;
}

enum {
	OPT_ID_BYTES = 256,
	OPT_MEM,
	OPT_SCALE,
	OPT_EDGE_FACTOR,
	OPT_SEED,
	OPT_INITIATOR,
};

/* Options common to import and generate; returns 1 if handled, -1 on a bad value. */
static int build_opt(int c, const char *arg, const char *cmd, struct bam_graph_build_opts *o,
		     int *quiet)
{
	uint64_t v;

	switch (c) {
	case 's':
		o->build_flags |= BAM_GRAPH_BUILD_SYMMETRIZE;
		return 1;
	case 'l':
		o->build_flags |= BAM_GRAPH_BUILD_DROP_SELF_LOOPS;
		return 1;
	case 'd':
		o->build_flags |= BAM_GRAPH_BUILD_DEDUP;
		return 1;
	case 'q':
		*quiet = 1;
		return 1;
	case OPT_ID_BYTES:
		if (parse_id_bytes(arg, &o->id_bytes)) {
			cli_eprintf("bam graph %s: --id-bytes must be 4, 8 or auto, not '%s'\n", cmd, arg);
			return -1;
		}
		return 1;
	case OPT_MEM:
		if (parse_size(arg, &o->mem_limit) || o->mem_limit == 0) {
			cli_eprintf("bam graph %s: bad --mem '%s' (e.g. 512M, 4G)\n", cmd, arg);
			return -1;
		}
		if (o->mem_limit < (1u << 20)) { /* (1K took 1196 passes over cnr-2000's text) */
			cli_eprintf("bam graph %s: --mem %s: at least 1M (a smaller edge buffer takes a pass over "
					"the input per few thousand arcs)\n", cmd, arg);
			return -1;
		}
		return 1;
	case 'j':
		if (parse_u64(arg, &v) || v == 0 || v > 256) {
			cli_eprintf("bam graph %s: --threads must be 1..256, not '%s'\n", cmd, arg);
			return -1;
		}
		o->threads = (uint32_t)v;
		return 1;
	}
	return 0;
}

static void print_summary(const char *cmd, const char *out, const struct bam_graph_build_stats *st)
{
	fprintf(stderr,
		"bam graph %s: wrote %s: %" PRIu64 " vertices, %" PRIu64 " arcs (%u-byte ids), %.1f MiB; "
		"%" PRIu64 " input arcs, %" PRIu64 " self-loops and %" PRIu64 " duplicates dropped; "
		"%u passes, %.2f s\n",
		cmd, out, st->n_vertices, st->n_edges, st->id_bytes, (double)st->file_bytes / 1048576.0,
		st->input_arcs, st->self_loops_dropped, st->duplicates_dropped, st->passes, st->seconds);
}

/* Exit status of a failed import or generate (library error rc): 2 when the -o value is
 * refused (-EEXIST: it exists and is not a regular file, so it is not replaced), as for
 * any refused option value, and when the parameters are (-EINVAL, where params_einval:
 * generate's come from the options; import's -EINVAL is malformed input); 1 otherwise. */
static int build_status(int rc, int params_einval)
{
	return rc == -EEXIST || rc == -ENAMETOOLONG || (params_einval && rc == -EINVAL) ? EXIT_USAGE : 1;
}

static int cmd_import(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "symmetrize", no_argument, NULL, 's' },
		{ "drop-self-loops", no_argument, NULL, 'l' },
		{ "dedup", no_argument, NULL, 'd' },
		{ "id-bytes", required_argument, NULL, OPT_ID_BYTES },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "threads", required_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bam_graph_build_opts o = { 0 };
	struct bam_graph_build_stats st;
	enum bam_graph_format fmt = BAM_GRAPH_FMT_AUTO;
	const char *output = NULL, *input;
	char err[1024];
	int c, quiet = 0, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:f:sldj:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg) {
				cli_eprintf("bam graph: -o: the output file name is empty\n");
				return EXIT_USAGE;
			}
			output = optarg;
			break;
		case 'f':
			if (bam_graph_format_parse(optarg, &fmt)) {
				cli_eprintf("bam graph import: unknown format '%s' (snap, mtx, law, arcs, auto)\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			import_usage(stdout);
			return 0;
		case ':':
			cli_eprintf("bam graph import: option '%s' needs a value\n", argv[optind - 1]);
			return EXIT_USAGE;
		case '?':
			cli_eprintf("bam graph import: unknown option '%s' (see --help)\n", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			rc = build_opt(c, optarg, "import", &o, &quiet);
			if (rc <= 0)
				return EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || !output) {
		cli_eprintf("bam graph import: need one INPUT and -o OUTPUT\n");
		import_usage(stderr);
		return EXIT_USAGE;
	}
	input = argv[optind];
	{
		struct stat si, so;
		if (stat(input, &si) == 0 && stat(output, &so) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
			cli_eprintf("bam graph import: %s: the output is the input file; give another -o\n", output);
			return EXIT_USAGE;
		}
	}
	o.progress = quiet ? NULL : stderr;
	rc = bam_graph_import(input, output, fmt, &o, &st, err, sizeof(err));
	if (rc) {
		cli_eprintf("bam graph import: %s\n", err);
		return build_status(rc, 0);
	}
	if (!quiet)
		print_summary("import", output, &st);
	return 0;
}

static int cmd_generate(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "scale", required_argument, NULL, OPT_SCALE },
		{ "edge-factor", required_argument, NULL, OPT_EDGE_FACTOR },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "initiator", required_argument, NULL, OPT_INITIATOR },
		{ "symmetrize", no_argument, NULL, 's' },
		{ "drop-self-loops", no_argument, NULL, 'l' },
		{ "dedup", no_argument, NULL, 'd' },
		{ "id-bytes", required_argument, NULL, OPT_ID_BYTES },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "threads", required_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bam_graph_build_opts o = { 0 };
	struct bam_graph_build_stats st;
	struct bam_kron_params p = { .scale = 0, .edge_factor = 16, .seed = 1 };
	const char *output = NULL;
	char err[1024];
	int c, quiet = 0, rc;
	uint64_t v;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:sldj:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg) {
				cli_eprintf("bam graph: -o: the output file name is empty\n");
				return EXIT_USAGE;
			}
			output = optarg;
			break;
		case OPT_SCALE:
			if (parse_u64(optarg, &v) || v < 1 || v > 40) {
				cli_eprintf("bam graph generate: --scale must be 1..40, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			p.scale = (uint32_t)v;
			break;
		case OPT_EDGE_FACTOR:
			if (parse_u64(optarg, &v) || v < 1 || v > UINT32_MAX) {
				cli_eprintf("bam graph generate: --edge-factor must be 1..%u, not '%s'\n", UINT32_MAX, optarg);
				return EXIT_USAGE;
			}
			p.edge_factor = (uint32_t)v;
			break;
		case OPT_SEED:
			if (parse_u64(optarg, &p.seed)) {
				cli_eprintf("bam graph generate: bad --seed '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_INITIATOR: {
			char tail;
			if (sscanf(optarg, "%lf,%lf,%lf%c", &p.a, &p.b, &p.c, &tail) != 3) {
				cli_eprintf("bam graph generate: --initiator wants A,B,C, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			/* (0,0,0 means "the default" to the library: given here, it is refused; the
			 * library judges every other initiator) */
			if (p.a == 0 && p.b == 0 && p.c == 0) {
				cli_eprintf("bam graph generate: --initiator=%s: A=B=C=0 is no initiator (need A > 0)\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		}
		case 'h':
			generate_usage(stdout);
			return 0;
		case ':':
			cli_eprintf("bam graph generate: option '%s' needs a value\n", argv[optind - 1]);
			return EXIT_USAGE;
		case '?':
			cli_eprintf("bam graph generate: unknown option '%s' (see --help)\n",
				argv[optind - 1]);
			return EXIT_USAGE;
		default:
			rc = build_opt(c, optarg, "generate", &o, &quiet);
			if (rc <= 0)
				return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_eprintf("bam graph generate: unexpected argument '%s' (it takes options only)\n", argv[optind]);
		generate_usage(stderr);
		return EXIT_USAGE;
	}
	if (!output || p.scale == 0) {
		cli_eprintf("bam graph generate: need --scale S and -o OUTPUT\n");
		generate_usage(stderr);
		return EXIT_USAGE;
	}
	{ /* the output's size (an upper bound with --dedup, near with --drop-self-loops) against the
	   * free space where it goes: a graph that cannot fit is refused now, not after
	   * hours of writing (an edge factor of 2^32 asked for terabytes) */
		const long double n = (long double)(1ull << p.scale),
				  drawn = n * p.edge_factor * ((o.build_flags & BAM_GRAPH_BUILD_SYMMETRIZE) ? 2 : 1),
				  /* (--dedup: no more arcs than vertex pairs) */
				  arcs = (o.build_flags & BAM_GRAPH_BUILD_DEDUP) && n * n < drawn ? n * n : drawn,
				  idb = o.id_bytes ? o.id_bytes : (n <= (long double)UINT32_MAX ? 4 : 8),
				  need = 4096.0L + (n + 1) * 8 + arcs * idb;
		char dir[4096];
		const char *slash = strrchr(output, '/');
		if (slash)
			snprintf(dir, sizeof(dir), "%.*s", (int)(slash - output) + (slash == output), output);
		else
			snprintf(dir, sizeof(dir), ".");
		struct statvfs fs;
		const long double avail = statvfs(dir, &fs) == 0 ? (long double)fs.f_bavail * fs.f_frsize : -1;
		if (avail >= 0 && need > avail) {
			/* (--dedup may remove many arcs; --drop-self-loops few: still refused) */
			const int upper = (o.build_flags & BAM_GRAPH_BUILD_DEDUP) != 0;
			cli_eprintf("bam graph generate: the output needs %s%.3Lg GB (%.3Lg arcs of %d bytes), but %s has %.3Lg GB free%s\n",
				upper ? "up to " : "", need / 1e9, arcs, (int)idb, dir, avail / 1e9,
				upper ? ": going on, as --dedup may make it smaller" : "");
			if (!upper)
				return 1;
		}
	}
	o.progress = quiet ? NULL : stderr;
	rc = bam_graph_generate_kron(output, &p, &o, &st, err, sizeof(err));
	if (rc) {
		cli_eprintf("bam graph generate: %s\n", err);
		return build_status(rc, 1);
	}
	if (!quiet)
		print_summary("generate", output, &st);
	return 0;
}

/* A control character: C0, DEL, or C1 (U+0080..U+009F, UTF-8 c2 80..c2 9f: 0x9b is a
 * terminal's CSI), at p, a valid UTF-8 sequence of n bytes. */
static int is_control(const unsigned char *p, size_t n)
{
	return (n == 1 && (p[0] < 0x20 || p[0] == 0x7f)) || (n == 2 && p[0] == 0xc2 && p[1] < 0xa0);
}


static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		unsigned char ch = *p;
		size_t n = cli_utf8_len(p);
		if (!n) { /* not UTF-8 (a file name's bytes): U+FFFD, as cli_json_add_str */
			fputs("\\ufffd", f);
			p++;
		} else if (ch == '"' || ch == '\\') {
			fprintf(f, "\\%c", ch);
			p++;
		} else if (is_control(p, n)) {
			/* C0 must be escaped (RFC 8259); DEL and C1 need not be, but are, so
			 * that the JSON text shown on a terminal sends it no control either */
			fprintf(f, "\\u%04x", n == 1 ? ch : p[1]);
			p += n;
		} else {
			fwrite(p, 1, n, f);
			p += n;
		}
	}
	fputc('"', f);
}

static void flags_text(uint32_t flags, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s", flags & BAM_GRAPH_F_SYMMETRIC ? "symmetric" : "directed",
		 flags & BAM_GRAPH_F_NO_SELF_LOOPS ? ", no self-loops" : "",
		 flags & BAM_GRAPH_F_NO_DUPLICATES ? ", no duplicates" : "",
		 (flags & ~BAM_GRAPH_F_ALL) ? ", unknown bits" : "");
}

static int cmd_info(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "verify", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bam_graph_header h;
	struct bam_graph_degree_stats ds;
	const char *path;
	char err[1024], verr[1024] = "", ftxt[128];
	int c, verify = 0, json = 0, rc, vrc = 0;

	cli_json_init("graph info", argc, argv, "vJh", lo, 'J'); /* --json: failures print an error object too */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vJh", lo, NULL)) != -1) {
		switch (c) {
		case 'v':
			verify = 1;
			break;
		case 'J':
			json = 1;
			break;
		case 'h':
			info_usage(stdout);
			return 0;
		default:
			cli_fail("bam graph info: unknown option '%s' (see --help)\n", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		cli_fail("bam graph info: expected one GRAPH argument, got %d\n", argc - optind);
		info_usage(stderr);
		return EXIT_USAGE;
	}
	path = argv[optind];
	rc = bam_graph_header_read(path, &h, err, sizeof(err));
	if (!rc)
		rc = bam_graph_degrees(path, &ds, err, sizeof(err));
	if (rc) {
		cli_fail("bam graph info: %s\n", err);
		return 1;
	}
	if (verify)
		vrc = bam_graph_verify(path, verr, sizeof(verr));
	flags_text(h.flags, ftxt, sizeof(ftxt));
	if (vrc && json) /* the message goes into the object's "error" member too */
		cli_fail("bam graph info: %s\n", verr);
	if (json) {
		printf("{\"file\": ");
		json_string(stdout, path);
		printf(", \"version\": %u, \"flags\": %u, \"symmetric\": %s, \"self_loops_removed\": %s, "
		       "\"duplicates_removed\": %s, \"id_bytes\": %u, \"n_vertices\": %" PRIu64
		       ", \"n_edges\": %" PRIu64 ", \"offsets_offset\": %" PRIu64
		       ", \"offsets_bytes\": %" PRIu64 ", \"edges_offset\": %" PRIu64
		       ", \"edges_bytes\": %" PRIu64 ", \"offsets_crc32\": %u, \"edges_crc32\": %u, "
		       "\"source\": ",
		       h.version, h.flags, (h.flags & BAM_GRAPH_F_SYMMETRIC) ? "true" : "false",
		       (h.flags & BAM_GRAPH_F_NO_SELF_LOOPS) ? "true" : "false",
		       (h.flags & BAM_GRAPH_F_NO_DUPLICATES) ? "true" : "false", h.id_bytes,
		       h.n_vertices, h.n_edges, h.offsets_offset, h.offsets_bytes, h.edges_offset,
		       h.edges_bytes, h.offsets_crc32, h.edges_crc32);
		json_string(stdout, h.source);
		printf(", \"degree\": {\"min\": %" PRIu64 ", \"max\": %" PRIu64 ", \"max_vertex\": %" PRIu64
		       ", \"mean\": %.6f, \"zero\": %" PRIu64 ", \"ge2\": %" PRIu64 "}",
		       ds.min, ds.max, ds.argmax, ds.mean, ds.n_zero, ds.n_ge2);
		if (verify) {
			printf(", \"verify\": {\"ok\": %s", vrc ? "false" : "true");
			if (vrc) {
				printf(", \"error\": ");
				json_string(stdout, verr);
			}
			printf("}");
		}
		if (vrc) {
			/* the exit status is 1: the error object as after any failure (cli_util.h) */
			cJSON *e = cli_json_error(1);
			char *es = cJSON_PrintUnformatted(e);
			printf(", \"error\": %s", es ? es : "null");
			free(es);
			cJSON_Delete(e);
			cli_json_printed();
		}
		printf("}\n");
	} else {
		/* the source string comes from the file (and the path may be any bytes):
		 * control characters and invalid UTF-8 are shown escaped, not sent to the
		 * terminal */
		printf("file:          ");
		cli_text_escaped(stdout, path);
		printf("\nformat:        BAMCSR version %u\n", h.version);
		printf("source:        ");
		if (!h.source[0])
			printf("(none)");
		cli_text_escaped(stdout, h.source);
		putchar('\n');
		printf("flags:         0x%x (%s)\n", h.flags, ftxt);
		printf("vertices:      %" PRIu64 "\n", h.n_vertices);
		printf("edges:         %" PRIu64 " directed arcs\n", h.n_edges);
		printf("id bytes:      %u\n", h.id_bytes);
		printf("offsets:       at byte %" PRIu64 ", %" PRIu64 " bytes, crc32 0x%08x\n",
		       h.offsets_offset, h.offsets_bytes, h.offsets_crc32);
		printf("edge array:    at byte %" PRIu64 ", %" PRIu64 " bytes, crc32 0x%08x\n",
		       h.edges_offset, h.edges_bytes, h.edges_crc32);
		if (h.n_vertices)
			printf("out-degree:    min %" PRIu64 ", max %" PRIu64 " (vertex %" PRIu64 "), mean %.3f\n",
			       ds.min, ds.max, ds.argmax, ds.mean);
		else
			printf("out-degree:    none (no vertices)\n");
		printf("zero out-degree vertices: %" PRIu64 "\n", ds.n_zero);
		printf("out-degree >= 2 vertices: %" PRIu64 "\n", ds.n_ge2);
		if (verify)
			printf("verify:        %s%s\n", vrc ? "FAILED: " : "ok (checksums, offsets, ids, order)",
			       vrc ? verr : "");
		else
			printf("verify:        not run (--verify)\n");
	}
	if (vrc) {
		if (!json)
			cli_fail("bam graph info: %s\n", verr);
		return 1;
	}
	return 0;
}

int bam_cmd_graph(int argc, char **argv)
{
	const char *sub;

	if (argc < 2) {
		graph_usage(stderr);
		return EXIT_USAGE;
	}
	sub = argv[1];
	if (!strcmp(sub, "import"))
		return cmd_import(argc - 1, argv + 1);
	if (!strcmp(sub, "generate"))
		return cmd_generate(argc - 1, argv + 1);
	if (!strcmp(sub, "info"))
		return cmd_info(argc - 1, argv + 1);
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
		graph_usage(stdout);
		return 0;
	}
	cli_eprintf("bam graph: unknown command '%s'\n", sub);
	graph_usage(stderr);
	return EXIT_USAGE;
}
