/* SPDX-License-Identifier: MIT */
/* bam bfs / cc / demo: printing a bam_graph_run result (graph_out.c). */
#ifndef BAM_CLI_GRAPH_OUT_H
#define BAM_CLI_GRAPH_OUT_H
#include "bam/graph_run.h"
struct cJSON;
/* The result of the run with options o as a JSON object (the caller owns it). */
struct cJSON *graph_result_json(const struct bam_graph_run_opts *o, const struct bam_graph_run_result *r);
/* The result on stdout, as text or (json) one JSON object; status: the exit status,
 * non-zero (a verification mismatch) only with json, where the results come with the
 * error object (cli_util.h). */
void graph_result_print(const struct bam_graph_run_opts *o, const struct bam_graph_run_result *r, int json, int status);
#endif
