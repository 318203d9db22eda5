/* SPDX-License-Identifier: MIT */
/*
 * builder.c - the chunked CSR builder shared by the importers and the Kronecker
 * generator (protocol in graph_internal.h).
 *
 * Why chunks: the edge array of a large graph does not fit in memory next to anything
 * else, and scattering arcs at random into an mmap'd output larger than RAM thrashes the
 * page cache. Instead the vertices are cut into ranges whose provisional edges fit an
 * in-memory buffer; for each range the input is replayed (re-parsed, or regenerated),
 * the arcs of the range are scattered into the buffer, each list is sorted (and
 * deduplicated), and the range is appended to the output with one sequential write per
 * thread. The output is therefore written once, in order, and memory stays at
 * 8*(n+1) bytes for the offsets plus the buffer.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "graph_internal.h"

#define GR_PROGRESS_SECONDS 2.0

void gr_progress(struct gr_builder *b, int force, const char *fmt, ...)
{
	va_list ap;
	double now;

	if (!b->progress)
		return;
	now = gr_now();
	if (!force && now - b->t_progress < GR_PROGRESS_SECONDS)
		return;
	b->t_progress = now;
	fprintf(b->progress, "%s: [%6.1f s] ", b->what, now - b->t_start);
	va_start(ap, fmt);
	vfprintf(b->progress, fmt, ap);
	va_end(ap);
	fputc('\n', b->progress);
	fflush(b->progress);
}

int gr_builder_init(struct gr_builder *b, const char *output,
		    const struct bam_graph_build_opts *o, const char *what, char *err,
		    size_t errlen)
{
	static const struct bam_graph_build_opts defaults;

	if (!o)
		o = &defaults;
	memset(b, 0, sizeof(*b));
	b->fd = -1;
	b->output = output;
	b->what = what;
	if (o->build_flags & ~(BAM_GRAPH_BUILD_SYMMETRIZE | BAM_GRAPH_BUILD_DROP_SELF_LOOPS |
			       BAM_GRAPH_BUILD_DEDUP)) {
		gr_err(err, errlen, "unknown build flags 0x%x", o->build_flags);
		return -EINVAL;
	}
	if (o->id_bytes != 0 && o->id_bytes != 4 && o->id_bytes != 8) {
		gr_err(err, errlen, "vertex id width must be 4, 8 or auto, not %u", o->id_bytes);
		return -EINVAL;
	}
	b->build_flags = o->build_flags;
	b->id_bytes_req = o->id_bytes;
	b->threads = o->threads ? o->threads : gr_default_threads();
	if (b->threads > GR_MAX_THREADS)
		b->threads = GR_MAX_THREADS;
	b->mem_limit = o->mem_limit ? o->mem_limit : gr_default_mem_limit();
	b->progress = o->progress;
	b->t_start = b->t_progress = gr_now();
	/* refused now rather than after a pass over the input (gr_tmp_create checks again) */
	return gr_output_check(output, err, errlen);
}

int gr_builder_set_n(struct gr_builder *b, uint64_t n, char *err, size_t errlen)
{
	/* calloc of a huge array succeeds lazily and the prefix sum would then meet the OOM
	 * killer: refuse an offsets array larger than this machine's memory up front. */
	if (n >= UINT64_MAX / 8 - 1) {
		gr_err(err, errlen, "%llu vertices: count too large (8 bytes of offsets per vertex exceed 2^64 bytes)",
		       (unsigned long long)n);
		return -ENOMEM;
	}
	if (n >= gr_default_mem_limit() / 2) {
		gr_err(err, errlen, "%llu vertices need %llu MiB of offsets, more than this machine's memory",
		       (unsigned long long)n, (unsigned long long)((n + 1) * 8 >> 20));
		return -ENOMEM;
	}
	if (n >= (SIZE_MAX / 8) - 1 || !(b->arr = calloc((size_t)n + 1, 8))) {
		gr_err(err, errlen, "%s: out of memory for the offsets of %llu vertices", b->output,
		       (unsigned long long)n);
		return -ENOMEM;
	}
	b->n = b->cap = n;
	b->fixed_n = 1;
	return 0;
}

int gr_builder_grow(struct gr_builder *b, uint64_t v, char *err, size_t errlen)
{
	uint64_t cap = b->cap;
	uint64_t *a;

	if (b->fixed_n) {
		/* The parsers check declared ranges; reaching here is a bug. */
		gr_err(err, errlen, "vertex id %llu >= declared n %llu", (unsigned long long)v,
		       (unsigned long long)b->n);
		return -EINVAL;
	}
	if (v >= cap) {
		cap = cap < 1024 ? 1024 : cap;
		while (cap <= v && cap < (1ull << 60))
			cap *= 2;
		if (cap > gr_default_mem_limit() / 2)
			cap = v + 1 > gr_default_mem_limit() / 2 ? v + 1 : gr_default_mem_limit() / 2;
		/* Sparse ids (SNAP) are not relabelled: refuse a degree array larger than RAM
		 * rather than let overcommit and the OOM killer decide. */
		if (v >= gr_default_mem_limit() / 2) {
			/* (v >> 17) + 1: the MiB of 8 * (v + 1) bytes without overflow */
			gr_err(err, errlen, "vertex id %llu too large: its degree array would need %llu MiB, more than this machine's memory",
			       (unsigned long long)v, (unsigned long long)((v >> 17) + 1));
			return -ENOMEM;
		}
		if (cap <= v || cap >= (SIZE_MAX / 8) - 1 ||
		    !(a = realloc(b->arr, ((size_t)cap + 1) * 8))) {
			gr_err(err, errlen, "out of memory for the degrees of %llu vertices (vertex id %llu)",
			       (unsigned long long)(v + 1), (unsigned long long)v);
			return -ENOMEM;
		}
		memset(a + b->cap + (b->arr ? 1 : 0), 0,
		       ((size_t)(cap - b->cap) + (b->arr ? 0 : 1)) * 8);
		b->arr = a;
		b->cap = cap;
	}
	b->n = v + 1;
	return 0;
}

int gr_plan(struct gr_builder *b, char *err, size_t errlen)
{
	uint64_t n = b->n, sum = 0, max = 0, elems, c;
	int rc;

	if (n == 0) {
		gr_err(err, errlen, "graph has no vertices");
		return -EINVAL;
	}
	if (!b->arr) {
		rc = gr_builder_set_n(b, n, err, errlen);
		if (rc)
			return rc;
	}
	if (b->id_bytes_req == 4 && n > UINT32_MAX) {
		gr_err(err, errlen, "%llu vertices need 8-byte ids (--id-bytes 8 or auto)",
		       (unsigned long long)n);
		return -ERANGE;
	}
	b->id_bytes = b->id_bytes_req ? b->id_bytes_req : (n <= UINT32_MAX ? 4 : 8);

	/* Degrees -> provisional offsets (exclusive prefix sum). */
	for (uint64_t v = 0; v < n; v++) {
		uint64_t d = b->arr[v];
		b->arr[v] = sum;
		sum += d;
		if (d > max)
			max = d;
	}
	b->arr[n] = sum;
	b->total = sum;
	b->max_deg = max;

	/* Edge buffer: the memory limit, but at least one whole list and no more than all. */
	elems = b->mem_limit / b->id_bytes;
	if (elems < max)
		elems = max;
	if (elems > sum)
		elems = sum;
	if (elems == 0)
		elems = 1;
	if (elems > SIZE_MAX / b->id_bytes || !(b->buf = malloc((size_t)elems * b->id_bytes))) {
		gr_err(err, errlen, "out of memory for an edge buffer of %llu bytes (lower --mem)",
		       (unsigned long long)elems * b->id_bytes);
		return -ENOMEM;
	}
	b->buf_elems = elems;

	/* Chunk boundaries: greedy, each chunk's provisional edges <= elems. */
	/* Two neighbouring chunks hold more than elems, so there are < 2 sum/elems + 1. */
	c = 2 * (sum / elems) + 3;
	if (c > n + 1)
		c = n + 1;
	b->chunk_lo = malloc((size_t)(c + 1) * 8);
	if (!b->chunk_lo) {
		gr_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	b->n_chunks = 0;
	for (uint64_t lo = 0; lo < n;) {
		/* largest hi with arr[hi] - arr[lo] <= elems (binary search), at least lo+1 */
		uint64_t l = lo + 1, h = n;
		while (l < h) {
			uint64_t mid = l + (h - l + 1) / 2;
			if (b->arr[mid] - b->arr[lo] <= elems)
				l = mid;
			else
				h = mid - 1;
		}
		b->chunk_lo[b->n_chunks++] = lo;
		lo = l;
	}
	b->chunk_lo[b->n_chunks] = n;

	memset(&b->hdr, 0, sizeof(b->hdr));
	gr_layout(&b->hdr, n, 0, b->id_bytes);
	rc = gr_tmp_create(b->output, b->tmp_path, sizeof(b->tmp_path), &b->fd, err, errlen);
	if (rc)
		return rc;
	gr_progress(b, 1, "%llu vertices, %llu arcs to place, %u chunk(s) of <= %.1f MiB, %u thread(s)",
		    (unsigned long long)n, (unsigned long long)sum, b->n_chunks,
		    (double)(elems * b->id_bytes) / (1024.0 * 1024.0), b->threads);
	return 0;
}

void gr_chunk_begin(struct gr_builder *b, uint32_t k)
{
	unsigned T = b->threads;

	b->lo = b->chunk_lo[k];
	b->hi = b->chunk_lo[k + 1];
	b->base = b->arr[b->lo];
	/* arr[hi] is untouched until chunk k+1: still the provisional start of hi. */
	b->chunk_elems = b->arr[b->hi] - b->base;
	b->placed = 0;
	b->overflow = 0;

	/* Split [lo, hi) into T vertex ranges of about equal provisional edges, now, while
	 * arr[] still holds provisional starts (the scatter turns them into ends). */
	if ((uint64_t)T > b->hi - b->lo)
		T = (unsigned)(b->hi - b->lo);
	if (T == 0)
		T = 1;
	b->split_t = T;
	b->split_v[0] = b->lo;
	b->split_p[0] = b->base;
	for (unsigned t = 1; t < T; t++) {
		uint64_t target = b->base + b->chunk_elems * t / T;
		uint64_t l = b->split_v[t - 1], h = b->hi;
		/* first v in [l, hi] with arr[v] >= target */
		while (l < h) {
			uint64_t mid = l + (h - l) / 2;
			if (b->arr[mid] < target)
				l = mid + 1;
			else
				h = mid;
		}
		b->split_v[t] = l;
		b->split_p[t] = b->arr[l];
	}
	b->split_v[T] = b->hi;
	b->split_p[T] = b->arr[b->hi];
}

/* Phase 1 of a chunk's end, per thread: sort and deduplicate each list of the thread's
 * vertex range and compact them to the start of its region; arr[v] := local start. */
static void gr_chunk_sort(void *arg, unsigned t)
{
	struct gr_builder *b = arg;
	uint64_t s = b->split_p[t], w = s, p0 = s;
	int dedup = !!(b->build_flags & BAM_GRAPH_BUILD_DEDUP);
	char *buf = b->buf;

	b->werr[t] = 0;
	for (uint64_t v = b->split_v[t]; v < b->split_v[t + 1]; v++) {
		uint64_t e = b->arr[v], k;
		char *list = buf + (s - b->base) * b->id_bytes;

		k = gr_sort_list(list, b->id_bytes, e - s, dedup);
		if (w != s)
			memmove(buf + (w - b->base) * b->id_bytes, list, k * b->id_bytes);
		b->arr[v] = w - p0;
		w += k;
		s = e;
	}
	/* The last end must meet the next range's start: else the input changed. */
	if (s != b->split_p[t + 1])
		b->werr[t] = -EIO;
	b->kept[t] = w - p0;
}

/* Phase 2, per thread: final offsets, write the compacted range, its crc32. */
static void gr_chunk_write(void *arg, unsigned t)
{
	struct gr_builder *b = arg;
	uint64_t dst = b->out_edges;
	const char *src = (const char *)b->buf + (b->split_p[t] - b->base) * b->id_bytes;

	for (unsigned u = 0; u < t; u++)
		dst += b->kept[u];
	for (uint64_t v = b->split_v[t]; v < b->split_v[t + 1]; v++)
		b->arr[v] += dst;
	b->crc[t] = gr_crc32(0, src, b->kept[t] * b->id_bytes);
	b->werr[t] = gr_pwrite_full(b->fd, src, b->kept[t] * b->id_bytes,
				    b->hdr.edges_offset + dst * b->id_bytes);
}

int gr_chunk_end(struct gr_builder *b, char *err, size_t errlen)
{
	unsigned T = b->split_t;
	uint64_t kept = 0;

	if (b->overflow || b->placed != b->chunk_elems) {
		gr_err(err, errlen, "input changed between passes (chunk %llu..%llu: %llu arcs, %llu counted)",
		       (unsigned long long)b->lo, (unsigned long long)b->hi,
		       (unsigned long long)b->placed, (unsigned long long)b->chunk_elems);
		return -EIO;
	}
	gr_progress(b, 1, "chunk %llu..%llu: %llu arcs placed; sorting%s and writing",
		    (unsigned long long)b->lo, (unsigned long long)b->hi,
		    (unsigned long long)b->placed,
		    (b->build_flags & BAM_GRAPH_BUILD_DEDUP) ? ", deduplicating" : "");
	gr_parallel(T, gr_chunk_sort, b);
	for (unsigned t = 0; t < T; t++) {
		if (b->werr[t]) {
			gr_err(err, errlen, "input changed between passes (vertex range %llu..%llu)",
			       (unsigned long long)b->split_v[t], (unsigned long long)b->split_v[t + 1]);
			return -EIO;
		}
	}
	gr_parallel(T, gr_chunk_write, b);
	for (unsigned t = 0; t < T; t++) {
		if (b->werr[t]) {
			gr_err(err, errlen, "%s: write error: %s", b->output, strerror(-b->werr[t]));
			return b->werr[t];
		}
		/* crc32 of the concatenation, without re-reading: zlib's crc32_combine. */
		b->edges_crc = (uint32_t)crc32_combine(b->edges_crc, b->crc[t],
						       (z_off_t)(b->kept[t] * b->id_bytes));
		kept += b->kept[t];
	}
	b->duplicates += b->chunk_elems - kept;
	b->out_edges += kept;
	return 0;
}

int gr_finish(struct gr_builder *b, uint32_t flags, const char *source,
	      struct bam_graph_build_stats *st, char *err, size_t errlen)
{
	uint64_t n = b->n, size;
	uint32_t ocrc;
	int rc;

	b->arr[n] = b->out_edges;
	if (b->build_flags & BAM_GRAPH_BUILD_SYMMETRIZE)
		flags |= BAM_GRAPH_F_SYMMETRIC;
	if (b->build_flags & BAM_GRAPH_BUILD_DROP_SELF_LOOPS)
		flags |= BAM_GRAPH_F_NO_SELF_LOOPS;
	if (b->build_flags & BAM_GRAPH_BUILD_DEDUP)
		flags |= BAM_GRAPH_F_NO_DUPLICATES;
	size = gr_layout(&b->hdr, n, b->out_edges, b->id_bytes);
	ocrc = gr_crc32(0, b->arr, b->hdr.offsets_bytes);
	gr_header_finish(&b->hdr, flags, ocrc, b->edges_crc, source);
	rc = gr_pwrite_full(b->fd, b->arr, b->hdr.offsets_bytes, b->hdr.offsets_offset);
	if (!rc)
		rc = gr_pwrite_full(b->fd, &b->hdr, sizeof(b->hdr), 0);
	if (rc) {
		gr_err(err, errlen, "%s: write error: %s", b->output, strerror(-rc));
		return rc;
	}
	gr_progress(b, 1, "syncing %llu bytes to %s", (unsigned long long)size, b->output);
	rc = gr_tmp_commit(b->fd, b->tmp_path, b->output, size, err, errlen);
	b->fd = -1;
	if (rc)
		return rc;
	b->tmp_path[0] = 0; /* committed: nothing to remove */
	b->file_size = size;
	if (st) {
		st->n_vertices = n;
		st->n_edges = b->out_edges;
		st->self_loops_dropped = b->self_loops;
		st->duplicates_dropped = b->duplicates;
		st->id_bytes = b->id_bytes;
		st->file_bytes = size;
		st->seconds = gr_now() - b->t_start;
	}
	return 0;
}

void gr_builder_free(struct gr_builder *b)
{
	gr_tmp_abort(b->fd, b->tmp_path);
	b->fd = -1;
	b->tmp_path[0] = 0;
	free(b->arr);
	free(b->buf);
	free(b->chunk_lo);
	b->arr = NULL;
	b->buf = NULL;
	b->chunk_lo = NULL;
}
