/* SPDX-License-Identifier: MIT */
/*
 * fuzz_import_auto.c - libFuzzer harness of bam_graph_import with BAM_GRAPH_FMT_AUTO on a
 * file without a telling extension: format detection by content, then that parser.
 * Input layout and checks: fuzz_import.h.
 */
#include "fuzz_import.h"

static int fz_import_auto_input(const uint8_t *data, size_t size)
{
	return fz_import_one(BAM_GRAPH_FMT_AUTO, "in", data, size);
}

#ifndef BAM_FUZZ_REPLAY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fz_import_auto_input(data, size);
}
#endif
