/* SPDX-License-Identifier: MIT */
/*
 * fuzz_import_arcs.c - libFuzzer harness of bam_graph_import for arc
 * lists ("src<TAB>dst" per line).
 * Input layout and checks: fuzz_import.h.
 */
#include "fuzz_import.h"

static int fz_import_arcs_input(const uint8_t *data, size_t size)
{
	return fz_import_one(BAM_GRAPH_FMT_ARCS, "in.arcs", data, size);
}

#ifndef BAM_FUZZ_REPLAY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fz_import_arcs_input(data, size);
}
#endif
