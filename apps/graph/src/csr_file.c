/* SPDX-License-Identifier: MIT */
/*
 * csr_file.c - the graph file format (docs/GRAPH-FORMAT.md): header validation,
 * streaming verification and degree statistics, whole-file loading, and writing a
 * host-memory CSR.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph_internal.h"

/* Size of a regular file or block device (for a device st_size is 0). */
static int gr_file_size(int fd, const struct stat *st, uint64_t *size)
{
	off_t end;

	if (S_ISREG(st->st_mode)) {
		*size = (uint64_t)st->st_size;
		return 0;
	}
	end = lseek(fd, 0, SEEK_END);
	if (end < 0)
		return -errno;
	*size = (uint64_t)end;
	return 0;
}

/* Field checks shared by the reader; file_size bounds the arrays. */
static int gr_header_check(const struct bam_graph_header *h, uint64_t file_size,
			   const char *path, char *err, size_t errlen)
{
	uint64_t n = h->n_vertices, m = h->n_edges;

	if (memcmp(h->magic, BAM_GRAPH_MAGIC, BAM_GRAPH_MAGIC_LEN) != 0) {
		gr_err(err, errlen, "%s: not a bam graph file (bad magic; 'bam graph import' converts edge lists, Matrix Market and LAW graphs)", path);
		return -EINVAL;
	}
	if (h->version != BAM_GRAPH_VERSION) {
		gr_err(err, errlen, "%s: graph format version %u, this library reads version %u",
		       path, h->version, BAM_GRAPH_VERSION);
		return -ENOTSUP;
	}
	if (gr_header_crc(h) != h->header_crc32) {
		gr_err(err, errlen, "%s: header checksum mismatch (stored 0x%08x, computed 0x%08x): header corrupted",
		       path, h->header_crc32, gr_header_crc(h));
		return -EBADMSG;
	}
	if (h->flags & ~BAM_GRAPH_F_ALL) {
		gr_err(err, errlen, "%s: unknown header flags 0x%x", path, h->flags & ~BAM_GRAPH_F_ALL);
		return -EINVAL;
	}
	if (h->id_bytes != 4 && h->id_bytes != 8) {
		gr_err(err, errlen, "%s: vertex id width %u bytes (must be 4 or 8)", path, h->id_bytes);
		return -EINVAL;
	}
	if (h->id_bytes == 4 && n > UINT32_MAX) {
		gr_err(err, errlen, "%s: %llu vertices do not fit 4-byte ids", path,
		       (unsigned long long)n);
		return -EINVAL;
	}
	if (memchr(h->source, 0, sizeof(h->source)) == NULL) {
		gr_err(err, errlen, "%s: source string not NUL-terminated", path);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(h->reserved); i++) {
		if (h->reserved[i]) {
			/* the checksum matched: written so on purpose, by something that is not
			 * this version of the format */
			gr_err(err, errlen, "%s: reserved header byte at 0x%zx is 0x%02x, not zero: not a version %u file as this library writes it",
			       path, offsetof(struct bam_graph_header, reserved) + i, h->reserved[i], BAM_GRAPH_VERSION);
			return -EINVAL;
		}
	}
	/* Sizes first, with overflow guards, then placement. */
	if (n >= (UINT64_MAX / 8) - 1 || h->offsets_bytes != 8 * (n + 1)) {
		gr_err(err, errlen, "%s: offsets_bytes %llu != 8 * (n_vertices + 1) with n_vertices %llu",
		       path, (unsigned long long)h->offsets_bytes, (unsigned long long)n);
		return -EINVAL;
	}
	if (m > UINT64_MAX / h->id_bytes || h->edges_bytes != m * h->id_bytes) {
		gr_err(err, errlen, "%s: edges_bytes %llu != %u * n_edges with n_edges %llu", path,
		       (unsigned long long)h->edges_bytes, h->id_bytes, (unsigned long long)m);
		return -EINVAL;
	}
	/* offsets_offset + offsets_bytes must not wrap past 2^64 (found by fuzz_graph_file) */
	if (h->offsets_offset < BAM_GRAPH_HEADER_BYTES || h->offsets_offset % BAM_GRAPH_ALIGN ||
	    h->edges_offset % BAM_GRAPH_ALIGN || h->offsets_offset > UINT64_MAX - h->offsets_bytes ||
	    h->edges_offset < h->offsets_offset + h->offsets_bytes) {
		gr_err(err, errlen, "%s: arrays misplaced (offsets at %llu, edges at %llu; both must be %u-aligned, in order, after the header)",
		       path, (unsigned long long)h->offsets_offset,
		       (unsigned long long)h->edges_offset, BAM_GRAPH_ALIGN);
		return -EINVAL;
	}
	if (h->edges_offset > UINT64_MAX - h->edges_bytes ||
	    h->edges_offset + h->edges_bytes > file_size) {
		gr_err(err, errlen, "%s: file is %llu bytes but the edge array ends at %llu: truncated",
		       path, (unsigned long long)file_size,
		       (unsigned long long)(h->edges_offset + h->edges_bytes));
		return -EINVAL;
	}
	return 0;
}

/* A graph is read with pread at any offset: only a regular file or a block device
 * will do (a FIFO would block or fail). Clears O_NONBLOCK on success. */
static int gr_file_kind(int fd, struct stat *st, const char *path, char *err, size_t errlen)
{
	int fl;

	if (fstat(fd, st) != 0) {
		fl = errno;
		gr_err(err, errlen, "%s: %s", path, strerror(fl));
		return -fl;
	}
	if (S_ISDIR(st->st_mode)) {
		gr_err(err, errlen, "%s: is a directory, not a graph file", path);
		return -EISDIR;
	}
	if (!S_ISREG(st->st_mode) && !S_ISBLK(st->st_mode)) {
		gr_err(err, errlen, "%s: not a regular file or block device (a FIFO, socket or character device cannot hold a graph file)",
		       path);
		return -EINVAL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		fl = errno;
		gr_err(err, errlen, "%s: fcntl: %s", path, strerror(fl));
		return -fl;
	}
	return 0;
}

/* Open path and read + check its header. On success *fd is open. */
static int gr_open_graph(const char *path, struct bam_graph_header *h, int *fd, char *err,
			 size_t errlen)
{
	struct stat st;
	uint64_t size = 0;
	int rc;

	/* O_NONBLOCK: opening a FIFO must not wait for a writer; cleared once it is known
	 * to be a file or a block device */
	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (*fd < 0) {
		rc = -errno;
		gr_err(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	rc = gr_file_kind(*fd, &st, path, err, errlen);
	if (rc)
		goto fail;
	rc = gr_file_size(*fd, &st, &size);
	if (rc) {
		gr_err(err, errlen, "%s: cannot get size: %s", path, strerror(-rc));
		goto fail;
	}
	if (size < BAM_GRAPH_HEADER_BYTES) {
		gr_err(err, errlen, "%s: %llu bytes, shorter than the %u-byte graph header", path,
		       (unsigned long long)size, BAM_GRAPH_HEADER_BYTES);
		rc = -EINVAL;
		goto fail;
	}
	rc = gr_pread_full(*fd, h, sizeof(*h), 0);
	if (rc) {
		gr_err(err, errlen, "%s: cannot read the graph header: %s", path, strerror(rc < 0 ? -rc : EIO));
		goto fail;
	}
	rc = gr_header_check(h, size, path, err, errlen);
	if (rc)
		goto fail;
	return 0;
fail:
	close(*fd);
	*fd = -1;
	return rc;
}

int bam_graph_header_read(const char *path, struct bam_graph_header *h, char *err,
			  size_t errlen)
{
	int fd, rc;

	rc = gr_open_graph(path, h, &fd, err, errlen);
	if (rc)
		return rc;
	close(fd);
	return 0;
}

/* A forward-only buffered reader over one array of the file, with a running crc. */
struct gr_stream {
	int fd;
	uint64_t pos, end;   /* file offsets: next to fetch, end of array */
	unsigned char *buf;
	size_t len, at;      /* bytes in buf, bytes consumed */
	uint32_t crc;
};

#define GR_STREAM_BUF (4u << 20)

static int gr_stream_open(struct gr_stream *s, int fd, uint64_t off, uint64_t bytes)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->pos = off;
	s->end = off + bytes;
	s->buf = malloc(GR_STREAM_BUF);
	return s->buf ? 0 : -ENOMEM;
}

/* Next w-byte little-endian value (w = 4 or 8). Arrays are multiples of w and the
 * buffer is a multiple of 8, so a value never straddles two fills. */
static int gr_stream_next(struct gr_stream *s, uint32_t w, uint64_t *v)
{
	if (s->at == s->len) {
		uint64_t left = s->end - s->pos;
		size_t want = left > GR_STREAM_BUF ? GR_STREAM_BUF : (size_t)left;
		int rc;

		if (want == 0)
			return -EIO;
		rc = gr_pread_full(s->fd, s->buf, want, s->pos);
		if (rc)
			return rc;
		s->crc = gr_crc32(s->crc, s->buf, want);
		s->pos += want;
		s->len = want;
		s->at = 0;
	}
	if (w == 4) {
		uint32_t x;
		memcpy(&x, s->buf + s->at, 4);
		*v = x;
	} else {
		memcpy(v, s->buf + s->at, 8);
	}
	s->at += w;
	return 0;
}

/* offsets[0] must be 0 and offsets[n] n_edges: the loader's and info's check. */
static int gr_offsets_ends(const char *path, uint64_t first, uint64_t last, uint64_t m,
			   char *err, size_t errlen)
{
	if (first == 0 && last == m)
		return 0;
	gr_err(err, errlen, "%s: offsets[0] = %llu and offsets[n] = %llu, expected 0 and n_edges = %llu",
	       path, (unsigned long long)first, (unsigned long long)last, (unsigned long long)m);
	return -EBADMSG;
}

/* An array checksum test (bam_graph_verify, bam_graph_check_crcs): 0, or -EBADMSG with
 * "PATH: WHAT checksum mismatch (stored 0x..., computed 0x...)". */
static int gr_crc_match(const char *path, const char *what, uint32_t stored, uint32_t computed, char *err,
			size_t errlen)
{
	if (stored == computed)
		return 0;
	gr_err(err, errlen, "%s: %s checksum mismatch (stored 0x%08x, computed 0x%08x)", path, what, stored, computed);
	return -EBADMSG;
}

int bam_graph_verify(const char *path, char *err, size_t errlen)
{
	struct bam_graph_header h;
	struct gr_stream so, se;
	uint64_t n, prev_off, off, i, v, id, last = 0;
	int fd, rc;

	rc = gr_open_graph(path, &h, &fd, err, errlen);
	if (rc)
		return rc;
	n = h.n_vertices;
	rc = gr_stream_open(&so, fd, h.offsets_offset, h.offsets_bytes);
	if (!rc)
		rc = gr_stream_open(&se, fd, h.edges_offset, h.edges_bytes);
	else
		se.buf = NULL;
	if (rc) {
		gr_err(err, errlen, "%s: out of memory", path);
		goto out;
	}
	rc = gr_stream_next(&so, 8, &prev_off);
	if (rc)
		goto io;
	if (prev_off != 0) {
		gr_err(err, errlen, "%s: offsets[0] = %llu, must be 0", path, (unsigned long long)prev_off);
		rc = -EBADMSG;
		goto out;
	}
	i = 0;
	for (v = 0; v < n; v++) {
		rc = gr_stream_next(&so, 8, &off);
		if (rc)
			goto io;
		if (off < prev_off || off > h.n_edges) {
			gr_err(err, errlen, "%s: offsets[%llu] = %llu after offsets[%llu] = %llu (n_edges %llu): offsets not monotonic",
			       path, (unsigned long long)(v + 1), (unsigned long long)off,
			       (unsigned long long)v, (unsigned long long)prev_off,
			       (unsigned long long)h.n_edges);
			rc = -EBADMSG;
			goto out;
		}
		for (; i < off; i++) {
			rc = gr_stream_next(&se, h.id_bytes, &id);
			if (rc)
				goto io;
			if (id >= n) {
				gr_err(err, errlen, "%s: vertex %llu: neighbour id %llu out of range (n_vertices %llu) at edge %llu",
				       path, (unsigned long long)v, (unsigned long long)id,
				       (unsigned long long)n, (unsigned long long)i);
				rc = -EBADMSG;
				goto out;
			}
			if (i > prev_off && (id < last || (id == last && (h.flags & BAM_GRAPH_F_NO_DUPLICATES)))) {
				gr_err(err, errlen, "%s: vertex %llu: neighbour list not %sascending at edge %llu (%llu after %llu)",
				       path, (unsigned long long)v,
				       (h.flags & BAM_GRAPH_F_NO_DUPLICATES) ? "strictly " : "",
				       (unsigned long long)i, (unsigned long long)id,
				       (unsigned long long)last);
				rc = -EBADMSG;
				goto out;
			}
			if (id == v && (h.flags & BAM_GRAPH_F_NO_SELF_LOOPS)) {
				gr_err(err, errlen, "%s: vertex %llu has a self-loop but the header says self-loops were removed",
				       path, (unsigned long long)v);
				rc = -EBADMSG;
				goto out;
			}
			last = id;
		}
		prev_off = off;
	}
	if (prev_off != h.n_edges) {
		gr_err(err, errlen, "%s: offsets[n] = %llu but n_edges = %llu", path,
		       (unsigned long long)prev_off, (unsigned long long)h.n_edges);
		rc = -EBADMSG;
		goto out;
	}
	if (h.edges_bytes == 0)
		se.crc = 0;
	if (!(rc = gr_crc_match(path, "offsets", h.offsets_crc32, so.crc, err, errlen)))
		rc = gr_crc_match(path, "edges", h.edges_crc32, se.crc, err, errlen);
	goto out;
io:
	gr_err(err, errlen, "%s: read error", path);
out:
	free(so.buf);
	free(se.buf);
	close(fd);
	return rc;
}

int bam_graph_degrees(const char *path, struct bam_graph_degree_stats *s, char *err,
			   size_t errlen)
{
	struct bam_graph_header h;
	struct gr_stream so;
	uint64_t first, prev, off, d;
	int fd, rc;

	memset(s, 0, sizeof(*s));
	rc = gr_open_graph(path, &h, &fd, err, errlen);
	if (rc)
		return rc;
	rc = gr_stream_open(&so, fd, h.offsets_offset, h.offsets_bytes);
	if (rc) {
		gr_err(err, errlen, "%s: out of memory", path);
		goto out;
	}
	rc = gr_stream_next(&so, 8, &prev);
	if (rc)
		goto io;
	first = prev;
	s->min = h.n_vertices ? UINT64_MAX : 0;
	for (uint64_t v = 0; v < h.n_vertices; v++) {
		rc = gr_stream_next(&so, 8, &off);
		if (rc)
			goto io;
		if (off < prev) {
			gr_err(err, errlen, "%s: offsets[%llu] < offsets[%llu]: offsets not monotonic",
			       path, (unsigned long long)(v + 1), (unsigned long long)v);
			rc = -EBADMSG;
			goto out;
		}
		d = off - prev;
		if (d < s->min)
			s->min = d;
		if (d > s->max || v == 0) {
			s->max = d;
			s->argmax = v;
		}
		s->n_zero += d == 0;
		s->n_ge2 += d >= 2;
		prev = off;
	}
	rc = gr_offsets_ends(path, first, prev, h.n_edges, err, errlen);
	if (rc)
		goto out;
	s->mean = h.n_vertices ? (double)h.n_edges / (double)h.n_vertices : 0.0;
	rc = 0;
	goto out;
io:
	gr_err(err, errlen, "%s: read error", path);
out:
	free(so.buf);
	close(fd);
	return rc;
}

int bam_graph_load(const char *path, struct bam_csr *g, char *err, size_t errlen)
{
	struct bam_graph_header h;
	int fd, rc;

	memset(g, 0, sizeof(*g));
	rc = gr_open_graph(path, &h, &fd, err, errlen);
	if (rc)
		return rc;
	if (h.offsets_bytes > SIZE_MAX || h.edges_bytes > SIZE_MAX - 8) {
		rc = -ENOMEM;
		goto nomem;
	}
	g->offsets = malloc((size_t)h.offsets_bytes);
	g->edges = malloc((size_t)h.edges_bytes + 8); /* never malloc(0) */
	if (!g->offsets || !g->edges) {
		rc = -ENOMEM;
		goto nomem;
	}
	rc = gr_pread_full(fd, g->offsets, h.offsets_bytes, h.offsets_offset);
	if (!rc)
		rc = gr_pread_full(fd, g->edges, h.edges_bytes, h.edges_offset);
	if (rc) {
		gr_err(err, errlen, "%s: read error", path);
		goto fail;
	}
	g->n_vertices = h.n_vertices;
	g->n_edges = h.n_edges;
	g->id_bytes = h.id_bytes;
	rc = gr_offsets_ends(path, g->offsets[0], g->offsets[h.n_vertices], h.n_edges, err,
			     errlen);
	if (rc)
		goto fail;
	for (uint64_t v = 0; v < h.n_vertices; v++) {
		if (g->offsets[v + 1] < g->offsets[v]) {
			gr_err(err, errlen, "%s: offsets[%llu] < offsets[%llu]: offsets not monotonic",
			       path, (unsigned long long)(v + 1), (unsigned long long)v);
			rc = -EBADMSG;
			goto fail;
		}
	}
	close(fd);
	return 0;
nomem:
	gr_err(err, errlen, "%s: out of memory for %llu + %llu bytes", path,
	       (unsigned long long)h.offsets_bytes, (unsigned long long)h.edges_bytes);
fail:
	close(fd);
	bam_csr_free(g);
	return rc;
}

int bam_graph_check_crcs(const char *path, const struct bam_graph_header *h, const struct bam_csr *g,
			 char *err, size_t errlen)
{
	if (g->n_vertices != h->n_vertices || g->n_edges != h->n_edges || g->id_bytes != h->id_bytes ||
	    h->offsets_bytes != (h->n_vertices + 1) * 8 || h->edges_bytes != h->n_edges * h->id_bytes) {
		gr_err(err, errlen, "%s: the loaded graph does not match the header's counts", path);
		return -EINVAL;
	}
	int rc = gr_crc_match(path, "offsets", h->offsets_crc32, gr_crc32(0, g->offsets, h->offsets_bytes), err, errlen);
	return rc ? rc : gr_crc_match(path, "edges", h->edges_crc32, gr_crc32(0, g->edges, h->edges_bytes), err, errlen);
}

void bam_csr_free(struct bam_csr *g)
{
	if (!g)
		return;
	free(g->offsets);
	free(g->edges);
	memset(g, 0, sizeof(*g));
}

int bam_graph_write(const char *path, const struct bam_csr *g, uint32_t flags,
		    const char *source, char *err, size_t errlen)
{
	struct bam_graph_header h;
	uint64_t n = g->n_vertices, m = g->n_edges, size;
	uint32_t ocrc, ecrc;
	char tmp[PATH_MAX];
	int fd, rc;

	if ((g->id_bytes != 4 && g->id_bytes != 8) || (g->id_bytes == 4 && n > UINT32_MAX) ||
	    !g->offsets || (m && !g->edges) || (flags & ~BAM_GRAPH_F_ALL)) {
		gr_err(err, errlen, "%s: invalid graph (id_bytes %u, n_vertices %llu, flags 0x%x)",
		       path, g->id_bytes, (unsigned long long)n, flags);
		return -EINVAL;
	}
	if (g->offsets[0] != 0 || g->offsets[n] != m) {
		gr_err(err, errlen, "%s: offsets[0] must be 0 and offsets[n] must be n_edges", path);
		return -EINVAL;
	}
	for (uint64_t v = 0; v < n; v++) {
		uint64_t s = g->offsets[v], e = g->offsets[v + 1];
		if (e < s || e > m) {
			gr_err(err, errlen, "%s: offsets not monotonic at vertex %llu", path,
			       (unsigned long long)v);
			return -EINVAL;
		}
		for (uint64_t i = s; i < e; i++) {
			uint64_t id = bam_csr_edge(g, i);
			if (id >= n || (i > s && id < bam_csr_edge(g, i - 1)) ||
			    (i > s && id == bam_csr_edge(g, i - 1) && (flags & BAM_GRAPH_F_NO_DUPLICATES)) ||
			    (id == v && (flags & BAM_GRAPH_F_NO_SELF_LOOPS))) {
				gr_err(err, errlen, "%s: vertex %llu: neighbour %llu out of range, out of order or contradicting flags 0x%x",
				       path, (unsigned long long)v, (unsigned long long)id, flags);
				return -EINVAL;
			}
		}
	}
	memset(&h, 0, sizeof(h));
	size = gr_layout(&h, n, m, g->id_bytes);
	ocrc = gr_crc32(0, g->offsets, h.offsets_bytes);
	ecrc = gr_crc32(0, g->edges, h.edges_bytes);
	gr_header_finish(&h, flags, ocrc, ecrc, source);
	rc = gr_tmp_create(path, tmp, sizeof(tmp), &fd, err, errlen);
	if (rc)
		return rc;
	rc = gr_pwrite_full(fd, &h, sizeof(h), 0);
	if (!rc)
		rc = gr_pwrite_full(fd, g->offsets, h.offsets_bytes, h.offsets_offset);
	if (!rc)
		rc = gr_pwrite_full(fd, g->edges, h.edges_bytes, h.edges_offset);
	if (rc) {
		gr_err(err, errlen, "%s: write error: %s", path, strerror(-rc));
		gr_tmp_abort(fd, tmp);
		return rc;
	}
	return gr_tmp_commit(fd, tmp, path, size, err, errlen);
}
