/* SPDX-License-Identifier: MIT */
/* Subcommands of the bam CLI; each takes argv with argv[0] = its own name. */
#ifndef BAM_CMDS_H
#define BAM_CMDS_H
#include <getopt.h>
int bam_cmd_graph(int argc, char **argv);
int bam_cmd_bench(int argc, char **argv);
int bam_cmd_bfs(int argc, char **argv);
int bam_cmd_cc(int argc, char **argv);
int bam_cmd_demo(int argc, char **argv);
int bam_cmd_nvme(int argc, char **argv);
int bam_cmd_table(int argc, char **argv);
int bam_cmd_query(int argc, char **argv);
int bam_bench_array(int argc, char **argv);
int bam_cmd_vecadd(int argc, char **argv);
/* The keys every `bam bench` JSON object starts with: program, command, timestamp, time
 * (docs/BENCH-JSON.md). */
struct cJSON;
void bench_json_head(struct cJSON *j, const char *command);
/* the option tables of bam bench and bam bench --array (each names the other's options
 * when one is given to the wrong mode) */
extern const struct option bench_io_options[];
extern const struct option bench_array_options[];
#endif
