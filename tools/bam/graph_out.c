/* SPDX-License-Identifier: MIT */
/* bam bfs / cc / demo: a bam_graph_run result as text or as a JSON object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "bam/cache.h"
#include "bam/graph_run.h"
#include "cli_util.h"
#include "graph_out.h"

/* The result as a JSON object (the caller owns it). */
cJSON *graph_result_json(const struct bam_graph_run_opts *o, const struct bam_graph_run_result *r)
{
	const int do_cc = o->algo == BAM_GRAPH_CC;
	const char *alg = do_cc ? "cc" : "bfs";
	double teps = r->compute_s > 0 ? (double)r->edges_traversed / r->compute_s : 0;
	{
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "algorithm", alg);
		cli_json_add_str(j, "graph", o->graph);
		cJSON_AddStringToObject(j, "mode", bam_graph_mode_name(o->mode));
		cJSON_AddStringToObject(j, "target", r->on_gpu ? "gpu" : "cpu");
		cli_json_add_str(j, "storage", r->backend_desc);
		cJSON_AddNumberToObject(j, "runs", r->runs);
		cJSON_AddNumberToObject(j, "compute_s", r->compute_s);
		cJSON_AddNumberToObject(j, "compute_s_per_run", r->runs ? r->compute_s / r->runs : 0);
		cJSON_AddNumberToObject(j, "load_s", r->load_s);
		cJSON_AddNumberToObject(j, "setup_s", r->setup_s);
		cJSON_AddNumberToObject(j, "end_to_end_s", r->e2e_s);
		cJSON_AddNumberToObject(j, "edges_per_s", teps);
		if (o->warps)
			cJSON_AddNumberToObject(j, "warps", (o->warps + 7) / 8 * 8);
		cJSON_AddNumberToObject(j, "offset_bytes", r->off_bytes);
		if (do_cc) {
			cJSON_AddNumberToObject(j, "passes", r->passes);
			cJSON_AddNumberToObject(j, "components", (double)r->components);
		} else {
			cJSON_AddNumberToObject(j, "max_levels", r->levels_max);
			cJSON_AddStringToObject(j, "frontier", bam_graph_frontier_name(o->frontier));
			cJSON_AddNumberToObject(j, "scan_fraction", (double)(o->scan_fraction ? o->scan_fraction : BAM_GRAPH_SCAN_FRACTION));
			cJSON_AddNumberToObject(j, "levels_scan", r->levels_scan);
			cJSON_AddNumberToObject(j, "levels_queue", r->levels_queue);
			cJSON_AddStringToObject(j, "level_loop", r->level_loop ? r->level_loop : "host");
			cJSON_AddStringToObject(j, "scan_ranges", !r->nparts ? "vertices" : o->scan_ranges == BAM_GRAPH_RANGES_LINES ? "lines" : "edges");
			if (r->nparts) {
				cJSON_AddNumberToObject(j, "edge_ranges", (double)r->nparts);
				cJSON_AddNumberToObject(j, "scan_work_items", (double)r->nranges);
				cJSON_AddNumberToObject(j, "edges_per_range", (double)r->part_edges);
				cJSON_AddNumberToObject(j, "edge_ranges_s", r->part_s);
			}
			/* the sources run and what each reached: a user can check them against
			 * another BFS without re-implementing the source choice */
			cJSON *sa = cJSON_AddArrayToObject(j, "sources");
			for (uint32_t k = 0; r->sources && k < r->runs; k++) {
				const struct bam_graph_source *s = &r->sources[k];
				cJSON *e = cJSON_CreateObject();
				cJSON_AddNumberToObject(e, "vertex", (double)s->vertex);
				cJSON_AddNumberToObject(e, "reached", (double)s->reached);
				cJSON_AddNumberToObject(e, "levels", s->levels);
				cJSON_AddNumberToObject(e, "edges", (double)s->edges);
				cJSON_AddNumberToObject(e, "compute_s", s->s);
				cJSON_AddStringToObject(e, "verified", s->verified > 0 ? "yes" : s->verified < 0 ? "MISMATCH" : "not checked");
				cJSON_AddItemToArray(sa, e);
			}
			if (r->trace_n) {
				cJSON_AddNumberToObject(j, "level_trace_source", (double)r->trace_src);
				cJSON *a = cJSON_AddArrayToObject(j, "level_trace");
				for (uint32_t k = 0; k < r->trace_n; k++) {
					cJSON *e = cJSON_CreateObject();
					cJSON_AddNumberToObject(e, "frontier", (double)r->trace[k].frontier);
					cJSON_AddStringToObject(e, "found_by", r->trace[k].scan ? "scan" : "queue");
					cJSON_AddNumberToObject(e, "s", r->trace[k].s);
					if (o->mode == BAM_GRAPH_MODE_BAM) { /* no cache in the other modes */
						cJSON_AddNumberToObject(e, "offset_misses", (double)r->trace[k].off_misses);
						cJSON_AddNumberToObject(e, "edge_misses", (double)r->trace[k].edge_misses);
					}
					cJSON_AddItemToArray(a, e);
				}
			}
		}
		cJSON_AddNumberToObject(j, "long_list_chunks", (double)r->chunks);
		cJSON_AddStringToObject(j, "verified", r->verified > 0 ? "yes" : r->verified < 0 ? "MISMATCH" : "not checked");
		if (o->mode == BAM_GRAPH_MODE_BAM) {
			double req = (double)(r->st_off.c.bytes_requested + r->st_edge.c.bytes_requested);
			double mv = (double)(r->st_off.c.bytes_read + r->st_edge.c.bytes_read);
			cJSON_AddNumberToObject(j, "cache_bytes", (double)r->cache_bytes);
			cJSON_AddNumberToObject(j, "line_size", r->line);
			cJSON_AddStringToObject(j, "offsets_priority", r->off_prio ? "high" : "normal");
			cJSON_AddStringToObject(j, "offsets", o->off_mem ? "memory" : "storage");
			if (o->off_mem)
				cJSON_AddNumberToObject(j, "offsets_copy_s", r->off_copy_s);
			cJSON_AddNumberToObject(j, "io_amplification", req > 0 ? mv / req : 0);
			cJSON_AddNumberToObject(j, "bytes_read", mv);
			cJSON_AddNumberToObject(j, "edge_hits", (double)r->st_edge.c.hits);
			cJSON_AddNumberToObject(j, "edge_misses", (double)r->st_edge.c.misses);
			cJSON_AddNumberToObject(j, "edge_accesses", (double)r->st_edge.c.accesses);
		}
		return j;
	}
}

/* status: the exit status; non-zero (a verification mismatch) only with --json, where the
 * results come with the error object (cli_util.h) */
void graph_result_print(const struct bam_graph_run_opts *o, const struct bam_graph_run_result *r, int json, int status)
{
	const int do_cc = o->algo == BAM_GRAPH_CC;
	const char *alg = do_cc ? "cc" : "bfs";
	double teps = r->compute_s > 0 ? (double)r->edges_traversed / r->compute_s : 0;
	if (json) {
		cJSON *j = graph_result_json(o, r);
		if (status) {
			cJSON_AddItemToObject(j, "error", cli_json_error(status));
			cli_json_printed();
		}
		char *s = cJSON_PrintUnformatted(j);
		printf("%s\n", s);
		free(s);
		cJSON_Delete(j);
		return;
	}
	printf("%s ", alg);
	cli_text_escaped(stdout, o->graph); /* (a file name can hold a terminal's escape sequences) */
	printf(": mode=%s target=%s storage=", bam_graph_mode_name(o->mode), r->on_gpu ? "gpu" : "cpu");
	cli_text_escaped(stdout, r->backend_desc); /* (media paths, as the graph's) */
	printf(" offsets=%u bytes\n", r->off_bytes);
	if (do_cc)
		printf("  components=%llu passes over the arcs=%u compute=%.3f s (%.3g edges/s)\n",
		       (unsigned long long)r->components, r->passes, r->compute_s, teps);
	else
		printf("  sources=%u compute=%.3f s (%.4f s per source) max levels=%u traversed edges/s=%.3g\n"
		       "  frontier=%s: %u levels by scan of the level array, %u by queue (all sources); level loop on the %s\n",
		       r->runs, r->compute_s, r->runs ? r->compute_s / r->runs : 0, r->levels_max, teps,
		       bam_graph_frontier_name(o->frontier), r->levels_scan, r->levels_queue,
		       r->level_loop ? r->level_loop : "host");
	if (!do_cc && r->nparts)
		printf("  scan levels: %llu edge ranges of %llu edges%s, %llu work items (making them: %.4f s, in compute)\n",
		       (unsigned long long)r->nparts, (unsigned long long)r->part_edges, o->scan_ranges == BAM_GRAPH_RANGES_LINES ? " (a line each)" : "",
		       (unsigned long long)r->nranges, r->part_s);
	if (r->chunks)
		printf("  neighbour lists over %u edges: walked as %llu chunks spread over all warps\n", r->chunk_edges,
		       (unsigned long long)r->chunks);
	if (o->mode == BAM_GRAPH_MODE_BAM && o->off_mem)
		printf("  end-to-end=%.3f s (copying the offsets from storage to memory %.4f s + compute; writing the\n"
		       "  graph onto storage took %.3f s and creating the cache and arrays %.3f s, not counted)\n",
		       r->e2e_s, r->off_copy_s, r->load_s, r->setup_s);
	else if (o->mode == BAM_GRAPH_MODE_BAM)
		printf("  end-to-end=%.3f s (the graph lives on storage; writing it there took %.3f s and creating the\n"
		       "  cache and arrays %.3f s, not counted)\n",
		       r->e2e_s, r->load_s, r->setup_s);
	else
		printf("  end-to-end=%.3f s (read file %.3f s + place %.3f s + compute; page cache warm if recently read)\n",
		       r->e2e_s, r->load_s, r->setup_s);
	if (o->mode == BAM_GRAPH_MODE_BAM) {
		printf("  cache: %llu bytes, %u-byte lines%s, offsets %s\n", (unsigned long long)r->cache_bytes,
		       r->line,
		       o->cache_bytes && o->cache_bytes < r->cache_bytes   ? " (raised to the 1 MiB minimum)"
		       : o->cache_bytes && o->cache_bytes > r->cache_bytes ? " (capped at what the arrays hold)"
									   : "",
		       o->off_mem ? "copied to memory (their reads below are the copy's)"
		       : r->off_prio ? "priority high" : "priority normal");
		bam_array_stats_print(stdout, "offsets", &r->st_off);
		bam_array_stats_print(stdout, "edges", &r->st_edge);
		printf("  (accesses: elements read; hits/misses: cache lookups, one per warp group or line taken;\n"
		       "   I/O amplification: bytes read from storage / bytes requested, below 1 when lines are reused)\n");
	}
	printf("  verified: %s\n", r->verified > 0 ? "yes, equal to the CPU reference" : r->verified < 0 ? "NO: MISMATCH" : "not checked (--verify)");
}
