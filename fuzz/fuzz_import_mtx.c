/* SPDX-License-Identifier: MIT */
/*
 * fuzz_import_mtx.c - libFuzzer harness of bam_graph_import for Matrix
 * Market coordinate files (banner, size line, 1-based entries).
 * Input layout and checks: fuzz_import.h.
 */
#include "fuzz_import.h"

static int fz_import_mtx_input(const uint8_t *data, size_t size)
{
	return fz_import_one(BAM_GRAPH_FMT_MTX, "in.mtx", data, size);
}

#ifndef BAM_FUZZ_REPLAY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fz_import_mtx_input(data, size);
}
#endif
