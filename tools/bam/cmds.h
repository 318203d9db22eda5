/* SPDX-License-Identifier: MIT */
/* Subcommands of the bam CLI; each takes argv with argv[0] = its own name. */
#ifndef BAM_CMDS_H
#define BAM_CMDS_H
int bam_cmd_graph(int argc, char **argv);
int bam_cmd_bench(int argc, char **argv);
int bam_cmd_bfs(int argc, char **argv);
int bam_cmd_cc(int argc, char **argv);
int bam_cmd_demo(int argc, char **argv);
int bam_bench_array(int argc, char **argv);
#endif
