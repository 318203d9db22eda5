/* SPDX-License-Identifier: MIT */
/*
 * fuzz_import_gz.c - libFuzzer harness of bam_graph_import on gzip input (the importers
 * inflate with zlib; data after the last member is an error): valid streams of fuzzed text, truncated streams, and raw
 * fuzzed bytes behind a .gz name (corrupt headers, bad CRCs, concatenated members).
 *
 * Input layout: byte 0 = build options (fuzz_import.h); byte 1:
 *   bits 0-2  format: 0 auto (file "in.gz": detection by content), 1 snap, 2 mtx,
 *             3 law, 4 arcs (5-7: auto with the format's extension, "in.mtx.gz" ...)
 *   bit  3    1: the rest is text, gzip-compressed here; 0: the rest is the file as is
 *   bit  4    with bit 3: cut the compressed stream short by 1 + (byte 1 >> 5) bytes
 * Checks: those of fuzz_import.h.
 */
#include "fuzz_import.h"

/* gzip-compress src (deflate with a gzip wrapper). Returns the length or 0. */
static size_t fz_gzip(const uint8_t *src, size_t len, uint8_t **out)
{
	z_stream z;
	size_t cap;

	memset(&z, 0, sizeof(z));
	*out = NULL;
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return 0;
	cap = deflateBound(&z, (uLong)len);
	*out = malloc(cap);
	FZ_CHECK(*out != NULL);
	z.next_in = (Bytef *)(uintptr_t)src;
	z.avail_in = (uInt)len;
	z.next_out = *out;
	z.avail_out = (uInt)cap;
	FZ_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
	len = z.total_out;
	deflateEnd(&z);
	return len;
}

static int fz_import_gz_input(const uint8_t *data, size_t size)
{
	static const enum bam_graph_format fmts[8] = {
		BAM_GRAPH_FMT_AUTO, BAM_GRAPH_FMT_SNAP, BAM_GRAPH_FMT_MTX,  BAM_GRAPH_FMT_LAW,
		BAM_GRAPH_FMT_ARCS, BAM_GRAPH_FMT_AUTO, BAM_GRAPH_FMT_AUTO, BAM_GRAPH_FMT_AUTO,
	};
	static const char *const names[8] = {
		"in.gz", "in.gz", "in.gz", "in.gz", "in.gz", "in.mtx.gz", "in.graph-txt.gz", "in.arcs.gz",
	};
	uint8_t *gz = NULL;
	size_t len;
	int rc;

	if (size < 2 || size - 2 > FZ_TEXT_MAX)
		return 0;
	uint8_t sel = data[0], how = data[1];
	unsigned f = how & 7u;
	if (!(how & 8u))
		return fz_import_text(fmts[f], names[f], sel, data + 2, size - 2);
	len = fz_gzip(data + 2, size - 2, &gz);
	if (!len)
		return 0;
	if (how & 16u) {
		size_t cut = 1 + (how >> 5);
		len = len > cut ? len - cut : 0;
	}
	rc = fz_import_text(fmts[f], names[f], sel, gz, len);
	free(gz);
	return rc;
}

#ifndef BAM_FUZZ_REPLAY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fz_import_gz_input(data, size);
}
#endif
