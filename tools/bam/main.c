/* SPDX-License-Identifier: MIT */
/* bam: one CLI, subcommands (bench, graph, bfs, cc). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli_util.h"
#include "cmds.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: bam COMMAND [options]\n\n"
		   "commands:\n"
		   "  bench         fio-like I/O benchmark through the queues (and the cache with --array)\n"
		   "  graph import  convert a graph file (SNAP, Matrix Market, LAW graph-txt, arc list) to bam CSR\n"
		   "  graph generate  Graph500 Kronecker generator\n"
		   "  graph info    counts, degrees, checksum\n"
		   "  vecadd        c = a + b with the vectors on storage (bam, tiling, host, gpu modes)\n"
		   "  bfs GRAPH     breadth-first search through bam\n"
		   "  cc GRAPH      connected components through bam\n"
		   "  nvme list|bind|unbind  NVMe PCI functions, and giving one to vfio-pci for --backend=nvme:BDF\n"
		   "  table import  convert a CSV (plain or gzip) to a bam columnar table (docs/TABLE-FORMAT.md)\n"
		   "  table generate  a table of N rows resampled from a real sample\n"
		   "  table info    schema, rows, sizes, checksums\n"
		   "  query TABLE   the taxi queries Q0-Q5 or a range query, through bam or a baseline\n"
		   "  demo          the main job: import cnr-2000, BFS + CC through the emulated SSD, verify\n\n"
		   "'bam COMMAND --help' for the options of each; 'bam --version' for the version.\n");
}

static int dispatch(int argc, char **argv);

/* The exit status, after stdout's last buffered bytes are written: results that could
 * not be written (a full disk, a closed pipe) fail the run instead of exiting 0. */
int main(int argc, char **argv)
{
	int status = dispatch(argc, argv);
	errno = 0;
	if ((fflush(stdout) != 0 || ferror(stdout)) && status == 0) {
		cli_eprintf("bam: writing to stdout failed%s%s\n", errno ? ": " : "", errno ? strerror(errno) : "");
		status = 1;
	}
	return status;
}

static int dispatch(int argc, char **argv)
{
	/* before any CUDA call: kernels must be loaded eagerly, since a lazy load while the
	 * emulated controller's persistent kernel runs would wait for it forever */
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *c = argv[1];
	if (!strcmp(c, "--version")) {
		if (argc > 2) {
			cli_eprintf("bam: --version takes no arguments ('%s')\n", argv[2]);
			return 2;
		}
		printf("bam %s (%s target%s)\n", BAM_VERSION,
#ifdef BAM_HAVE_CUDA
		       "GPU and CPU", "s"
#else
		       "CPU", ""
#endif
		);
		return 0;
	}
	/* cli_exit: under --json, a failure's error object on stdout (cli_util.h) */
	if (!strcmp(c, "graph"))
		return cli_exit(bam_cmd_graph(argc - 1, argv + 1));
	if (!strcmp(c, "bench"))
		return cli_exit(bam_cmd_bench(argc - 1, argv + 1));
	if (!strcmp(c, "bfs"))
		return cli_exit(bam_cmd_bfs(argc - 1, argv + 1));
	if (!strcmp(c, "cc"))
		return cli_exit(bam_cmd_cc(argc - 1, argv + 1));
	if (!strcmp(c, "nvme"))
		return bam_cmd_nvme(argc - 1, argv + 1);
	if (!strcmp(c, "table"))
		return cli_exit(bam_cmd_table(argc - 1, argv + 1));
	if (!strcmp(c, "query"))
		return cli_exit(bam_cmd_query(argc - 1, argv + 1));
	if (!strcmp(c, "vecadd"))
		return cli_exit(bam_cmd_vecadd(argc - 1, argv + 1));
	if (!strcmp(c, "demo"))
		return cli_exit(bam_cmd_demo(argc - 1, argv + 1));
	cli_eprintf("bam: unknown command '%s'\n", c);
	usage(stderr);
	return 2;
}
