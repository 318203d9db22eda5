/* SPDX-License-Identifier: MIT */
/*
 * fuzz_import_law.c - libFuzzer harness of bam_graph_import for LAW
 * graph-txt adjacency lists (n, then one successor line per vertex).
 * Input layout and checks: fuzz_import.h.
 */
#include "fuzz_import.h"

static int fz_import_law_input(const uint8_t *data, size_t size)
{
	return fz_import_one(BAM_GRAPH_FMT_LAW, "in.graph-txt", data, size);
}

#ifndef BAM_FUZZ_REPLAY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fz_import_law_input(data, size);
}
#endif
