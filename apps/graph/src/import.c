/* SPDX-License-Identifier: MIT */
/*
 * import.c - text graph importers: SNAP edge lists, Matrix Market coordinate files, LAW
 * graph-txt adjacency lists and plain arc lists, plain or gzip (inflated with zlib), into
 * the CSR file format through the chunked builder (builder.c).
 *
 * Every pass re-opens and re-parses the input, so memory never depends on the text
 * size. The parsers are strict: anything they do not understand is an error naming the
 * file and line, because a silently misread graph gives wrong BFS/CC answers much later.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "graph_internal.h"

/* ---------------------------------------------------------------------------------- */
/* A tokenizer over a gzip or plain stream, with line numbers. Lines may be of any      */
/* length (a LAW line lists all successors of a vertex), so nothing assumes a line fits */
/* the buffer.                                                                          */
/* ---------------------------------------------------------------------------------- */

#define RD_BUF (1u << 20)
#define RD_IN_BUF (256u << 10)
#define RD_EOF (-1)
#define RD_ERR (-2)

enum rd_tok { T_NUM, T_WORD, T_EOL, T_EOF, T_ERR };

/* The input is inflated here rather than with gzread, which ignores whatever follows
 * the last gzip member: concatenated members are read on, anything else is an error. */
struct rd {
	int fd;
	int gz;            /* gzip (magic 1f 8b at byte 0), else plain */
	z_stream zs;
	int zs_init;
	int member_end;    /* the last inflate ended a member */
	int trailing;      /* and something other than a member followed */
	unsigned char *in; /* compressed input */
	uint64_t in_off;   /* input bytes read so far (progress) */
	const char *why;   /* the error, for messages */
	const char *path;
	unsigned char *buf;
	size_t len, pos;
	int eof, error;
	uint64_t line;     /* line of the next character, 1-based */
	uint64_t tok_line; /* line of the token last returned */
	int line_has_data; /* a token was seen since the last newline */
	uint64_t file_bytes;
	/* the last token */
	uint64_t num;
	int too_big;
	char word[48];
	int word_cut;      /* the token was longer than word */
};

static void rd_close(struct rd *r)
{
	if (r->zs_init)
		inflateEnd(&r->zs);
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	free(r->in);
	r->buf = r->in = NULL;
	r->zs_init = 0;
	r->fd = -1;
}

static int rd_open(struct rd *r, const char *path, char *err, size_t errlen)
{
	unsigned char magic[2];
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->path = path;
	r->line = 1;
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		int e = errno;
		gr_err(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	if (fstat(r->fd, &st) == 0)
		r->file_bytes = (uint64_t)st.st_size;
	/* a regular file (bam_graph_import checked): peeking at byte 0 moves nothing */
	r->gz = pread(r->fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
	r->buf = malloc(RD_BUF);
	r->in = r->gz ? malloc(RD_IN_BUF) : NULL;
	if (r->buf && r->in && inflateInit2(&r->zs, 16 + MAX_WBITS) == Z_OK)
		r->zs_init = 1;
	if (!r->buf || (r->gz && !r->zs_init)) {
		rd_close(r);
		gr_err(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	return 0;
}

/* read(2) up to len bytes, retrying EINTR; -1 on error. */
static ssize_t rd_read(struct rd *r, void *p, size_t len)
{
	ssize_t got;

	do
		got = read(r->fd, p, len);
	while (got < 0 && errno == EINTR);
	if (got > 0)
		r->in_off += (uint64_t)got;
	return got;
}

/* Inflate into buf: > 0 bytes, 0 at a clean end after the last member, -1 (why set). */
static ssize_t rd_inflate(struct rd *r)
{
	z_stream *z = &r->zs;
	ssize_t got;
	int zrc;

	z->next_out = r->buf;
	z->avail_out = RD_BUF;
	while (z->avail_out == RD_BUF) {
		if (z->avail_in == 0) {
			got = rd_read(r, r->in, RD_IN_BUF);
			if (got < 0) {
				r->why = strerror(errno);
				return -1;
			}
			if (got == 0) {
				r->why = "gzip stream ends early";
				return r->member_end ? 0 : -1;
			}
			z->next_in = r->in;
			z->avail_in = (uInt)got;
		}
		if (r->member_end) {
			/* only another gzip member may follow one */
			if (z->next_in[0] != 0x1f) {
				r->trailing = 1;
				return -1;
			}
			inflateReset(z);
			r->member_end = 0;
		}
		zrc = inflate(z, Z_NO_FLUSH);
		if (zrc == Z_STREAM_END) {
			r->member_end = 1;
		} else if (zrc != Z_OK && zrc != Z_BUF_ERROR) {
			r->why = z->msg ? z->msg : "corrupt gzip data";
			return -1;
		}
	}
	return (ssize_t)(RD_BUF - z->avail_out);
}

static int rd_fill(struct rd *r)
{
	ssize_t got;

	if (r->eof || r->error)
		return r->error ? RD_ERR : RD_EOF;
	got = r->gz ? rd_inflate(r) : rd_read(r, r->buf, RD_BUF);
	if (got > 0) {
		r->len = (size_t)got;
		r->pos = 0;
		return 0;
	}
	/* End of data: a clean end, or a truncated/corrupt gzip stream, or a read error. */
	if (got < 0) {
		if (!r->gz)
			r->why = strerror(errno);
		r->error = 1;
		return RD_ERR;
	}
	r->eof = 1;
	return RD_EOF;
}

static inline int rd_peek(struct rd *r)
{
	if (r->pos == r->len) {
		int rc = rd_fill(r);
		if (rc)
			return rc;
	}
	return r->buf[r->pos];
}

static inline int rd_is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Skip blanks (not newlines); return the next character without consuming it. */
static inline int rd_peek_nonblank(struct rd *r)
{
	int c;

	while (rd_is_blank(c = rd_peek(r)))
		r->pos++;
	return c;
}

/* Consume through the end of the current line (comments, banner lines). */
static void rd_skip_line(struct rd *r)
{
	int c;

	while ((c = rd_peek(r)) >= 0) {
		r->pos++;
		if (c == '\n') {
			r->line++;
			break;
		}
	}
	r->line_has_data = 0;
}

/* Next token: a decimal number (T_NUM, value in num; too_big if > 2^64-1, then
 * T_WORD), another whitespace-free word (T_WORD, first 47 bytes in word), the end of a
 * line (T_EOL; also once at end of file after a last line without newline), the end
 * of the input (T_EOF), or a read/decompression error (T_ERR). */
static enum rd_tok rd_token(struct rd *r)
{
	int c, blanks = 0;
	size_t wl = 0;
	int digits = 1;
	uint64_t v = 0;

	while (rd_is_blank(c = rd_peek(r))) {
		r->pos++;
		blanks = 1;
	}
	r->tok_line = r->line;
	if (c == RD_ERR)
		return T_ERR;
	if (c == RD_EOF) {
		if (r->line_has_data || blanks) {
			/* a last line without '\n' ends like any other, blanks-only too */
			r->line_has_data = 0;
			r->line++;
			return T_EOL;
		}
		return T_EOF;
	}
	if (c == '\n') {
		r->pos++;
		r->line++;
		r->line_has_data = 0;
		return T_EOL;
	}
	r->line_has_data = 1;
	r->too_big = 0;
	r->word_cut = 0;
	while (c >= 0 && c != '\n' && !rd_is_blank(c)) {
		if (c >= '0' && c <= '9') {
			unsigned d = (unsigned)(c - '0');
			if (v > (UINT64_MAX - d) / 10)
				r->too_big = 1;
			v = v * 10 + d;
		} else {
			digits = 0;
		}
		if (wl < sizeof(r->word) - 1)
			r->word[wl++] = isprint(c) ? (char)c : '?';
		else
			r->word_cut = 1;
		r->pos++;
		c = rd_peek(r);
	}
	r->word[wl] = 0;
	if (c == RD_ERR)
		return T_ERR;
	r->num = v;
	return digits && !r->too_big ? T_NUM : T_WORD;
}

/* ---------------------------------------------------------------------------------- */
/* The parsers                                                                          */
/* ---------------------------------------------------------------------------------- */

struct imp {
	struct rd r;
	struct gr_builder *b;
	const char *input;
	enum bam_graph_format fmt;
	int pass;           /* 0: count degrees; >= 1: scatter chunk pass-1 */
	uint64_t n_decl;    /* LAW, MTX */
	int mtx_values;     /* value columns per MTX entry (0, 1 or 2) */
	int mtx_integer;    /* the values are integers (else reals) */
	int mtx_symmetric;
	uint64_t arcs, lines;
	int gz;
	char *err;
	size_t errlen;
};

/* Message for a token that should have been a vertex id (or count). */
static int imp_bad_token(struct imp *c, enum rd_tok t, const char *what)
{
	struct rd *r = &c->r;

	if (t == T_ERR && r->trailing) {
		gr_err(c->err, c->errlen, "%s: line %llu: data after the end of the gzip stream (not another gzip member)",
		       c->input, (unsigned long long)r->tok_line);
	} else if (t == T_ERR) {
		gr_err(c->err, c->errlen, "%s: line %llu: input truncated or corrupt (%s)", c->input,
		       (unsigned long long)r->tok_line, r->why ? r->why : "read error");
	} else if (t == T_WORD && r->word[0] == '-' && r->word[1] >= '0' && r->word[1] <= '9') {
		gr_err(c->err, c->errlen, "%s: line %llu: negative number '%s' where %s was expected",
		       c->input, (unsigned long long)r->tok_line, r->word, what);
	} else if (t == T_WORD && r->too_big) {
		gr_err(c->err, c->errlen, "%s: line %llu: number '%s' too large (expected %s)",
		       c->input, (unsigned long long)r->tok_line, r->word, what);
	} else if (t == T_WORD) {
		gr_err(c->err, c->errlen, "%s: line %llu: expected %s, found '%s'", c->input,
		       (unsigned long long)r->tok_line, what, r->word);
	} else {
		gr_err(c->err, c->errlen, "%s: line %llu: expected %s, found %s", c->input,
		       (unsigned long long)r->tok_line, what,
		       t == T_EOF ? "end of file" : "end of line");
	}
	return -EINVAL;
}

/* Prefix a builder message with the input's name and line; returns rc. */
static int imp_prefix(struct imp *c, uint64_t line, int rc)
{
	char msg[512];

	if (c->err && c->errlen) {
		snprintf(msg, sizeof(msg), "%s", c->err);
		gr_err(c->err, c->errlen, "%s: line %llu: %s", c->input, (unsigned long long)line, msg);
	}
	return rc;
}

static void imp_progress(struct imp *c)
{
	struct gr_builder *b = c->b;
	double pct = 0;

	if (!b->progress)
		return;
	if (c->r.file_bytes)
		pct = 100.0 * (double)c->r.in_off / (double)c->r.file_bytes;
	if (c->pass == 0)
		gr_progress(b, 0, "pass 1 (count degrees): line %llu, %llu arcs, %.0f%% of %s",
			    (unsigned long long)c->r.line, (unsigned long long)c->arcs, pct, c->input);
	else
		gr_progress(b, 0, "pass %d (place arcs, chunk %d/%u): line %llu, %.0f%%", c->pass + 1,
			    c->pass, b->n_chunks, (unsigned long long)c->r.line, pct);
}

static inline int imp_emit(struct imp *c, uint64_t u, uint64_t v)
{
	c->arcs++;
	if ((c->arcs & 0xffff) == 0)
		imp_progress(c);
	if (c->pass == 0)
		return gr_count(c->b, u, v, c->err, c->errlen);
	gr_scatter(c->b, u, v);
	return 0;
}

/* After the last field of a line: the line must end here. */
static int imp_end_of_line(struct imp *c, const char *what)
{
	enum rd_tok t = rd_token(&c->r);

	if (t == T_EOL || t == T_EOF)
		return 0;
	if (t == T_ERR)
		return imp_bad_token(c, t, what);
	gr_err(c->err, c->errlen, "%s: line %llu: unexpected extra field '%s' after %s",
	       c->input, (unsigned long long)c->r.tok_line, c->r.word, what);
	return -EINVAL;
}

/* SNAP edge lists and arc lists: "src dst" per line, '#' comments, blank lines. */
static int imp_edge_list(struct imp *c)
{
	struct rd *r = &c->r;
	enum rd_tok t;
	uint64_t u, v;
	int ch, rc;

	for (;;) {
		ch = rd_peek_nonblank(r);
		if (ch == RD_EOF)
			break;
		if (ch == '#' || ch == '%') {
			rd_skip_line(r);
			continue;
		}
		t = rd_token(r);
		if (t == T_EOL)
			continue; /* blank line */
		if (t != T_NUM)
			return imp_bad_token(c, t, "a source vertex id");
		u = r->num;
		t = rd_token(r);
		if (t != T_NUM) {
			if (t == T_EOL || t == T_EOF) {
				gr_err(c->err, c->errlen, "%s: line %llu: expected 2 vertex ids (src dst), found 1",
				       c->input, (unsigned long long)r->tok_line);
				return -EINVAL;
			}
			return imp_bad_token(c, t, "a destination vertex id");
		}
		v = r->num;
		rc = imp_end_of_line(c, "the destination vertex id");
		if (rc)
			return rc;
		if (u == UINT64_MAX || v == UINT64_MAX) {
			gr_err(c->err, c->errlen, "%s: line %llu: vertex id too large", c->input,
			       (unsigned long long)r->tok_line);
			return -EINVAL;
		}
		rc = imp_emit(c, u, v);
		if (rc)
			return imp_prefix(c, r->tok_line, rc);
	}
	if (r->error)
		return imp_bad_token(c, T_ERR, "");
	c->lines = r->line - 1;
	if (c->pass == 0 && c->arcs == 0) {
		gr_err(c->err, c->errlen, "%s: no arcs found (empty input?)", c->input);
		return -EINVAL;
	}
	return 0;
}

/* LAW graph-txt: n on line 1, then line i+2 lists the successors of vertex i. */
static int imp_law(struct imp *c)
{
	struct rd *r = &c->r;
	enum rd_tok t;
	uint64_t n, i;
	int rc;

	t = rd_token(r);
	if (t == T_EOF) {
		gr_err(c->err, c->errlen, "%s: empty input (LAW graph-txt starts with the number of nodes)",
		       c->input);
		return -EINVAL;
	}
	if (t == T_EOL) {
		gr_err(c->err, c->errlen, "%s: line 1 is blank: LAW graph-txt has the number of nodes on the first line (no blank or comment line before it)",
		       c->input);
		return -EINVAL;
	}
	if (t != T_NUM)
		return imp_bad_token(c, t, "the number of nodes (LAW graph-txt, line 1)");
	n = r->num;
	rc = imp_end_of_line(c, "the number of nodes");
	if (rc)
		return rc;
	if (n == 0) {
		gr_err(c->err, c->errlen, "%s: line 1: the graph declares 0 nodes", c->input);
		return -EINVAL;
	}
	c->n_decl = n;
	if (c->pass == 0) {
		rc = gr_builder_set_n(c->b, n, c->err, c->errlen);
		if (rc)
			return imp_prefix(c, 1, rc);
	}
	for (i = 0; i < n; i++) {
		t = rd_token(r);
		if (t == T_EOF) {
			gr_err(c->err, c->errlen, "%s: line %llu: input ends after %llu of the %llu successor lines declared on line 1 (truncated?)",
			       c->input, (unsigned long long)r->tok_line, (unsigned long long)i,
			       (unsigned long long)n);
			return -EINVAL;
		}
		for (; t != T_EOL; t = rd_token(r)) {
			if (t != T_NUM)
				return imp_bad_token(c, t, "a successor vertex id");
			if (r->num >= n) {
				gr_err(c->err, c->errlen, "%s: line %llu: successor %llu of vertex %llu out of range (the graph has %llu nodes)",
				       c->input, (unsigned long long)r->tok_line,
				       (unsigned long long)r->num, (unsigned long long)i,
				       (unsigned long long)n);
				return -EINVAL;
			}
			rc = imp_emit(c, i, r->num);
			if (rc)
				return rc;
		}
	}
	/* Nothing may follow, not even an empty line: that would be one more vertex. */
	t = rd_token(r);
	if (t == T_ERR)
		return imp_bad_token(c, t, "end of file");
	if (t != T_EOF) {
		gr_err(c->err, c->errlen, "%s: line %llu: %s after the %llu successor lines declared on line 1 (counts disagree)",
		       c->input, (unsigned long long)r->tok_line,
		       t == T_EOL ? "extra empty line" : "data", (unsigned long long)n);
		return -EINVAL;
	}
	c->lines = r->line - 1;
	return 0;
}

/* Skip blank and '%' comment lines; return the next non-blank character. */
static int imp_mtx_skip(struct rd *r)
{
	int ch;

	for (;;) {
		ch = rd_peek_nonblank(r);
		if (ch == '%' || ch == '\n') {
			rd_skip_line(r);
			continue;
		}
		return ch;
	}
}

/* The banner: exactly the 5 tokens "%%MatrixMarket matrix coordinate FIELD SYMMETRY"
 * (any case) on line 1. Read with the tokenizer, so it has no length limit and a
 * sixth token, however far along the line or after a NUL byte, is seen. */
static int imp_mtx_banner(struct imp *c)
{
	struct rd *r = &c->r;
	char tok[5][sizeof(r->word) + 3]; /* a cut token gets "..." */
	enum rd_tok t;
	int nt = 0;

	t = rd_token(r);
	if (t == T_ERR)
		return imp_bad_token(c, t, "the Matrix Market banner");
	if (t == T_EOF) {
		gr_err(c->err, c->errlen, "%s: empty input (a Matrix Market file starts with %%%%MatrixMarket)",
		       c->input);
		return -EINVAL;
	}
	if (t == T_EOL) {
		gr_err(c->err, c->errlen, "%s: line 1 is blank: the %%%%MatrixMarket banner must be the first line",
		       c->input);
		return -EINVAL;
	}
	if (strcasecmp(r->word, "%%MatrixMarket") != 0) {
		gr_err(c->err, c->errlen, "%s: line 1: missing %%%%MatrixMarket banner", c->input);
		return -EINVAL;
	}
	for (; t == T_NUM || t == T_WORD; t = rd_token(r)) {
		if (nt == 5) {
			gr_err(c->err, c->errlen, "%s: line 1: unexpected 6th token '%s%s' in the banner: it has exactly 5 (%%%%MatrixMarket matrix coordinate <field> <symmetry>)",
			       c->input, r->word, r->word_cut ? "..." : "");
			return -EINVAL;
		}
		snprintf(tok[nt++], sizeof(tok[0]), "%s%s", r->word, r->word_cut ? "..." : "");
	}
	if (t == T_ERR)
		return imp_bad_token(c, t, "the Matrix Market banner");
	if (nt != 5 || strcasecmp(tok[1], "matrix") != 0) {
		gr_err(c->err, c->errlen, "%s: line 1: expected '%%%%MatrixMarket matrix coordinate <field> <symmetry>'",
		       c->input);
		return -EINVAL;
	}
	if (strcasecmp(tok[2], "coordinate") != 0) {
		gr_err(c->err, c->errlen, "%s: line 1: '%s' format not supported (a graph needs 'coordinate')",
		       c->input, tok[2]);
		return -EINVAL;
	}
	if (!strcasecmp(tok[3], "pattern"))
		c->mtx_values = 0;
	else if (!strcasecmp(tok[3], "integer") || !strcasecmp(tok[3], "real") ||
		 !strcasecmp(tok[3], "double"))
		c->mtx_values = 1;
	else if (!strcasecmp(tok[3], "complex"))
		c->mtx_values = 2;
	else {
		gr_err(c->err, c->errlen, "%s: line 1: unknown field '%s' (pattern, integer, real, complex)",
		       c->input, tok[3]);
		return -EINVAL;
	}
	c->mtx_integer = !strcasecmp(tok[3], "integer");
	/* Values are ignored, so skew-symmetric and hermitian have a symmetric structure. */
	if (!strcasecmp(tok[4], "general"))
		c->mtx_symmetric = 0;
	else if (!strcasecmp(tok[4], "symmetric") || !strcasecmp(tok[4], "skew-symmetric") ||
		 !strcasecmp(tok[4], "hermitian"))
		c->mtx_symmetric = 1;
	else {
		gr_err(c->err, c->errlen, "%s: line 1: unknown symmetry '%s' (general, symmetric, skew-symmetric, hermitian)",
		       c->input, tok[4]);
		return -EINVAL;
	}
	return 0;
}

/* A value column: ignored, but it must be a number of the banner's field (integer:
 * [+-]digits; real, complex: what strtod reads whole). */
static int imp_mtx_value(struct imp *c)
{
	struct rd *r = &c->r;
	enum rd_tok t = rd_token(r);
	const char *w = r->word;
	char *end;

	if (t == T_NUM)
		return 0;
	if (t != T_WORD)
		return imp_bad_token(c, t, "a value (the banner declares a value column)");
	if (c->mtx_integer) {
		w += *w == '+' || *w == '-';
		if (*w && strspn(w, "0123456789") == strlen(w))
			return 0;
	} else if (!r->word_cut) {
		(void)strtod(w, &end);
		if (end != w && *end == 0)
			return 0;
	}
	gr_err(c->err, c->errlen, "%s: line %llu: value '%s%s' is not %s", c->input,
	       (unsigned long long)r->tok_line, r->word, r->word_cut ? "..." : "",
	       r->word_cut ? "a number of at most 47 characters" :
	       c->mtx_integer ? "an integer (the banner says 'integer')" : "a real number");
	return -EINVAL;
}

/* Matrix Market coordinate: banner, % comments, "rows cols nnz", nnz "i j [value]"
 * lines, 1-based. A symmetric file stores one triangle: (i,j) also gives (j,i), which
 * the builder's symmetrize option does (set by bam_graph_import for such files). */
static int imp_mtx(struct imp *c)
{
	struct rd *r = &c->r;
	uint64_t rows, cols, nnz, k, ij[2];
	enum rd_tok t;
	int rc;

	rc = imp_mtx_banner(c);
	if (rc)
		return rc;
	/* Before the first arc is counted: every pass must see the same arcs. */
	if (c->mtx_symmetric)
		c->b->build_flags |= BAM_GRAPH_BUILD_SYMMETRIZE;
	if (imp_mtx_skip(r) == RD_EOF) {
		gr_err(c->err, c->errlen, "%s: line %llu: input ends before the size line 'rows cols nnz' (truncated?)",
		       c->input, (unsigned long long)r->line);
		return -EINVAL;
	}
	static const char *const what[3] = { "the number of rows", "the number of columns",
					     "the number of entries" };
	uint64_t sz[3];
	for (int f = 0; f < 3; f++) {
		t = rd_token(r);
		if (t != T_NUM)
			return imp_bad_token(c, t, what[f]);
		sz[f] = r->num;
	}
	rows = sz[0];
	cols = sz[1];
	nnz = sz[2];
	rc = imp_end_of_line(c, "the size line 'rows cols nnz'");
	if (rc)
		return rc;
	if (rows != cols) {
		gr_err(c->err, c->errlen, "%s: line %llu: %llu x %llu matrix is not square: not a graph adjacency matrix",
		       c->input, (unsigned long long)r->tok_line, (unsigned long long)rows,
		       (unsigned long long)cols);
		return -EINVAL;
	}
	if (rows == 0) {
		gr_err(c->err, c->errlen, "%s: line %llu: the matrix has 0 rows", c->input,
		       (unsigned long long)r->tok_line);
		return -EINVAL;
	}
	c->n_decl = rows;
	if (c->pass == 0) {
		rc = gr_builder_set_n(c->b, rows, c->err, c->errlen);
		if (rc)
			return imp_prefix(c, r->tok_line, rc);
	}
	for (k = 0; k < nnz; k++) {
		if (imp_mtx_skip(r) == RD_EOF && !r->error) {
			gr_err(c->err, c->errlen, "%s: line %llu: input ends after %llu of the %llu entries declared in the size line (truncated?)",
			       c->input, (unsigned long long)r->line, (unsigned long long)k,
			       (unsigned long long)nnz);
			return -EINVAL;
		}
		for (int f = 0; f < 2; f++) {
			t = rd_token(r);
			if (t != T_NUM)
				return imp_bad_token(c, t, f ? "a column index" : "a row index");
			if (r->num == 0 || r->num > rows) {
				gr_err(c->err, c->errlen, "%s: line %llu: %s %llu out of range 1..%llu (Matrix Market indices are 1-based)",
				       c->input, (unsigned long long)r->tok_line, f ? "column" : "row",
				       (unsigned long long)r->num, (unsigned long long)rows);
				return -EINVAL;
			}
			ij[f] = r->num - 1;
		}
		for (int f = 0; f < c->mtx_values; f++) {
			rc = imp_mtx_value(c);
			if (rc)
				return rc;
		}
		rc = imp_end_of_line(c, "the entry");
		if (rc)
			return rc;
		rc = imp_emit(c, ij[0], ij[1]);
		if (rc)
			return rc;
	}
	if (imp_mtx_skip(r) != RD_EOF || r->error) {
		if (r->error)
			return imp_bad_token(c, T_ERR, "end of file");
		gr_err(c->err, c->errlen, "%s: line %llu: more entries than the %llu declared in the size line (counts disagree)",
		       c->input, (unsigned long long)r->line, (unsigned long long)nnz);
		return -EINVAL;
	}
	c->lines = r->line - 1;
	return 0;
}

static int imp_pass(struct imp *c)
{
	int rc = rd_open(&c->r, c->input, c->err, c->errlen);

	if (rc)
		return rc;
	switch (c->fmt) {
	case BAM_GRAPH_FMT_LAW:
		rc = imp_law(c);
		break;
	case BAM_GRAPH_FMT_MTX:
		rc = imp_mtx(c);
		break;
	default:
		rc = imp_edge_list(c);
		break;
	}
	c->gz = c->r.gz;
	rd_close(&c->r);
	return rc;
}

/* ---------------------------------------------------------------------------------- */
/* Format detection                                                                     */
/* ---------------------------------------------------------------------------------- */

static int ends_with(const char *s, size_t len, const char *suffix)
{
	size_t l = strlen(suffix);

	return len >= l && strncasecmp(s + len - l, suffix, l) == 0;
}

static int imp_detect(const char *input, enum bam_graph_format *fmt, char *err, size_t errlen)
{
	size_t len = strlen(input);
	struct rd r;
	enum rd_tok t;
	int rc, ch, ntok = 0;

	if (ends_with(input, len, ".gz"))
		len -= 3;
	if (ends_with(input, len, ".mtx")) {
		*fmt = BAM_GRAPH_FMT_MTX;
		return 0;
	}
	if (ends_with(input, len, ".graph-txt")) {
		*fmt = BAM_GRAPH_FMT_LAW;
		return 0;
	}
	if (ends_with(input, len, ".arcs")) {
		*fmt = BAM_GRAPH_FMT_ARCS;
		return 0;
	}
	/* By content: the banner, a '#' or other '%' comment (only snap/arcs allow one
	 * before the data), or the token count of the first line. */
	rc = rd_open(&r, input, err, errlen);
	if (rc)
		return rc;
	/* A graph file of ours given back as input: say so (it is binary: the text
	 * detection below would call it an unknown format). Byte 0 on, as rd_open's peek. */
	char m[BAM_GRAPH_MAGIC_LEN];
	if (pread(r.fd, m, sizeof(m), 0) == (ssize_t)sizeof(m) && !memcmp(m, BAM_GRAPH_MAGIC, BAM_GRAPH_MAGIC_LEN)) {
		rd_close(&r);
		gr_err(err, errlen, "%s: already a bam graph file (imported): bam bfs, cc and graph info take it as it is", input);
		return -EINVAL;
	}
	while ((ch = rd_peek_nonblank(&r)) == '\n')
		rd_skip_line(&r);
	if (ch == '%' && rd_token(&r) == T_WORD && !strcasecmp(r.word, "%%MatrixMarket")) {
		*fmt = BAM_GRAPH_FMT_MTX;
	} else if (ch == '#' || ch == '%') {
		*fmt = BAM_GRAPH_FMT_SNAP;
	} else if (ch == RD_EOF) {
		gr_err(err, errlen, "%s: empty input", input);
		rc = -EINVAL;
	} else if (ch == RD_ERR) {
		gr_err(err, errlen, "%s: input truncated or corrupt", input);
		rc = -EINVAL;
	} else {
		while ((t = rd_token(&r)) == T_NUM || t == T_WORD)
			ntok++;
		if (ntok == 1) {
			*fmt = BAM_GRAPH_FMT_LAW;
		} else if (ntok == 2) {
			*fmt = BAM_GRAPH_FMT_SNAP;
		} else {
			gr_err(err, errlen, "%s: cannot tell the format from the first line (%d fields); use --format snap|mtx|law|arcs",
			       input, ntok);
			rc = -EINVAL;
		}
	}
	rd_close(&r);
	return rc;
}

int bam_graph_format_parse(const char *name, enum bam_graph_format *fmt)
{
	static const struct {
		const char *name;
		enum bam_graph_format fmt;
	} tab[] = {
		{ "auto", BAM_GRAPH_FMT_AUTO }, { "snap", BAM_GRAPH_FMT_SNAP },
		{ "mtx", BAM_GRAPH_FMT_MTX },   { "law", BAM_GRAPH_FMT_LAW },
		{ "graph-txt", BAM_GRAPH_FMT_LAW }, { "arcs", BAM_GRAPH_FMT_ARCS },
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		if (!strcasecmp(name, tab[i].name)) {
			*fmt = tab[i].fmt;
			return 0;
		}
	}
	return -EINVAL;
}

const char *bam_graph_format_name(enum bam_graph_format fmt)
{
	switch (fmt) {
	case BAM_GRAPH_FMT_SNAP:
		return "snap";
	case BAM_GRAPH_FMT_MTX:
		return "mtx";
	case BAM_GRAPH_FMT_LAW:
		return "law";
	case BAM_GRAPH_FMT_ARCS:
		return "arcs";
	default:
		return "auto";
	}
}

/* Every pass re-opens the input: a pipe, FIFO or terminal would be empty (or block) on
 * the second. stat, not open: opening a FIFO waits for a writer. */
static int imp_check_input(const char *input, const char *output, char *err, size_t errlen)
{
	struct stat st, so;

	if (stat(input, &st) != 0) {
		int e = errno;
		gr_err(err, errlen, "%s: %s", input, strerror(e));
		return -e;
	}
	if (S_ISDIR(st.st_mode)) {
		gr_err(err, errlen, "%s: is a directory", input);
		return -EISDIR;
	}
	if (!S_ISREG(st.st_mode)) {
		gr_err(err, errlen, "%s: not a regular file: import reads its input twice (save it to a file first)",
		       input);
		return -EINVAL;
	}
	/* the output replaces what is there: never the input itself (under any name) */
	if (stat(output, &so) == 0 && so.st_dev == st.st_dev && so.st_ino == st.st_ino) {
		gr_err(err, errlen, "%s: the output is the input file %s: import would replace its own input", output,
		       input);
		return -EINVAL;
	}
	return 0;
}

int bam_graph_import(const char *input, const char *output, enum bam_graph_format fmt,
		     const struct bam_graph_build_opts *o, struct bam_graph_build_stats *st,
		     char *err, size_t errlen)
{
	struct bam_graph_build_opts opts = { 0 };
	struct gr_builder b;
	struct imp c;
	char source[BAM_GRAPH_SOURCE_LEN];
	const char *base;
	int rc;

	if (st)
		memset(st, 0, sizeof(*st));
	if (!input || !output) {
		gr_err(err, errlen, "input and output paths are required");
		return -EINVAL;
	}
	if (o)
		opts = *o;
	rc = imp_check_input(input, output, err, errlen);
	if (!rc) /* the output said now, before the input is sampled or read */
		rc = gr_output_check(output, err, errlen);
	if (rc)
		return rc;
	if (fmt == BAM_GRAPH_FMT_AUTO) {
		rc = imp_detect(input, &fmt, err, errlen);
		if (rc)
			return rc;
	} else if (fmt != BAM_GRAPH_FMT_SNAP && fmt != BAM_GRAPH_FMT_MTX &&
		   fmt != BAM_GRAPH_FMT_LAW && fmt != BAM_GRAPH_FMT_ARCS) {
		gr_err(err, errlen, "%s: unknown input format %d", input, (int)fmt);
		return -EINVAL;
	}
	rc = gr_builder_init(&b, output, &opts, "import", err, errlen);
	if (rc)
		return rc;
	memset(&c, 0, sizeof(c));
	c.b = &b;
	c.input = input;
	c.fmt = fmt;
	c.err = err;
	c.errlen = errlen;

	/* Pass 1: degrees (and n, and every syntax check). */
	gr_progress(&b, 1, "reading %s as %s", input, bam_graph_format_name(fmt));
	rc = imp_pass(&c);
	if (rc)
		goto out;
	if (st) {
		st->input_arcs = c.arcs;
		st->lines = c.lines;
	}
	rc = gr_plan(&b, err, errlen);
	if (rc)
		goto out_named;
	/* One more pass per chunk: re-parse, keep the chunk's arcs, sort, append. */
	for (uint32_t k = 0; k < b.n_chunks; k++) {
		gr_chunk_begin(&b, k);
		c.pass = (int)k + 1;
		c.arcs = 0;
		rc = imp_pass(&c);
		if (rc)
			goto out;
		rc = gr_chunk_end(&b, err, errlen);
		if (rc)
			goto out_named;
	}
	base = strrchr(input, '/');
	base = base ? base + 1 : input;
	snprintf(source, sizeof(source), "import %s (%s%s%s)", base,
		 fmt == BAM_GRAPH_FMT_LAW ? "law graph-txt" : bam_graph_format_name(fmt),
		 c.mtx_symmetric ? " symmetric" : "", c.gz ? ", gzip" : "");
	rc = gr_finish(&b, 0, source, st, err, errlen);
	if (!rc && st)
		st->passes = 1 + b.n_chunks;
	if (!rc)
		gr_progress(&b, 1, "wrote %s: %llu vertices, %llu arcs", output,
			    (unsigned long long)b.n, (unsigned long long)b.out_edges);
	goto out;
out_named:
	if (err && errlen) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", err);
		gr_err(err, errlen, "%s: %s", input, msg);
	}
out:
	gr_builder_free(&b);
	return rc;
}
