/* SPDX-License-Identifier: MIT */
/*
 * csv.c - CSV into columns: a streaming RFC 4180 reader over zlib's gz* (plain files
 * read through it unchanged), schema inference (pass one: every row, memory per column
 * only), conversion (pass two) into the file writer (bam_table_import) or into memory
 * (tb_csv_load, generate's sample). Bad input is reported as FILE:LINE:COLUMN (NAME).
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include "table_internal.h"

/* ---- the reader ---- */

struct csv {
	gzFile f;
	const char *path;
	unsigned char *buf;
	size_t blen, bpos;
	int push;          /* a pushed-back char, or -3 */
	uint64_t line;     /* physical line of the reader's position, 1-based */
	uint64_t rec_line; /* first line of the current record */
	char *rec;
	size_t rcap, rlen;
	uint32_t *fofs, *flen;
	uint32_t nf, fcap;
	uint64_t consumed; /* compressed bytes read so far (progress) */
};

#define CSV_EOF (-1)
#define CSV_TRUNC (-2)
#define CSV_IOERR (-4)

static int csv_open(struct csv *r, const char *path, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->path = path;
	r->push = -3;
	r->line = 1;
	r->f = gzopen(path, "rb");
	if (!r->f) {
		int e = errno ? errno : EIO;
		tb_err(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	gzbuffer(r->f, 256u << 10);
	r->buf = malloc(1u << 20);
	r->rcap = 4096;
	r->rec = malloc(r->rcap);
	r->fcap = 64;
	r->fofs = malloc(r->fcap * 4);
	r->flen = malloc(r->fcap * 4);
	if (!r->buf || !r->rec || !r->fofs || !r->flen) {
		tb_err(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	return 0;
}

static void csv_close(struct csv *r)
{
	if (r->f)
		gzclose(r->f);
	free(r->buf);
	free(r->rec);
	free(r->fofs);
	free(r->flen);
	memset(r, 0, sizeof(*r));
}

static int csv_refill(struct csv *r)
{
	int n = gzread(r->f, r->buf, 1u << 20);
	if (n < 0)
		return CSV_IOERR;
	if (n == 0) {
		int e = Z_OK;
		gzerror(r->f, &e);
		return e == Z_BUF_ERROR ? CSV_TRUNC : e != Z_OK ? CSV_IOERR : CSV_EOF;
	}
	r->blen = (size_t)n;
	r->bpos = 0;
	r->consumed += (uint64_t)n;
	return 0;
}

static inline int csv_getc(struct csv *r)
{
	if (r->push != -3) {
		int c = r->push;
		r->push = -3;
		return c;
	}
	if (r->bpos < r->blen)
		return r->buf[r->bpos++];
	int rc = csv_refill(r);
	if (rc)
		return rc;
	return r->buf[r->bpos++];
}

static int rec_put(struct csv *r, int c)
{
	if (r->rlen + 1 >= r->rcap) {
		if (r->rcap >= (64u << 20))
			return -E2BIG;
		char *n = realloc(r->rec, r->rcap * 2);
		if (!n)
			return -ENOMEM;
		r->rec = n;
		r->rcap *= 2;
	}
	r->rec[r->rlen++] = (char)c;
	return 0;
}

static int field_end(struct csv *r, uint32_t start)
{
	if (r->nf == r->fcap) {
		if (r->fcap >= 1u << 20)
			return -E2BIG;
		uint32_t *a = realloc(r->fofs, r->fcap * 8), *b = a ? realloc(r->flen, r->fcap * 8) : NULL;
		if (a)
			r->fofs = a;
		if (!b)
			return -ENOMEM;
		r->flen = b;
		r->fcap *= 2;
	}
	r->fofs[r->nf] = start;
	r->flen[r->nf] = (uint32_t)(r->rlen - start);
	r->nf++;
	return rec_put(r, 0);
}

/* Read the next record (blank lines skipped). 1 a record, 0 the end, or a negative
 * code with a message (FILE:LINE:COL). */
static int csv_record(struct csv *r, char *err, size_t errlen)
{
	int c;
	do {
		r->nf = 0;
		r->rlen = 0;
		r->rec_line = r->line;
		c = csv_getc(r);
		if (c == '\r') {
			c = csv_getc(r);
			if (c != '\n')
				r->push = c, c = '\n';
		}
		if (c == '\n')
			r->line++;
	} while (c == '\n');
	if (c == CSV_EOF)
		return 0;
	for (;;) {
		if (c < 0)
			goto fail;
		uint32_t start = (uint32_t)r->rlen;
		int rc;
		if (c == '"') {
			uint64_t qline = r->line;
			for (;;) {
				c = csv_getc(r);
				if (c == '"') {
					c = csv_getc(r);
					if (c != '"')
						break;
				} else if (c < 0) {
					if (c == CSV_EOF) {
						tb_err(err, errlen, "%s:%llu:%u: a quoted field never ends (opened on line %llu)",
						       r->path, (unsigned long long)r->line, r->nf + 1, (unsigned long long)qline);
						return -EINVAL;
					}
					goto fail;
				} else if (c == '\n') {
					r->line++;
				}
				if ((rc = rec_put(r, c)))
					goto big;
			}
			if (c != ',' && c != '\n' && c != '\r' && c != CSV_EOF) {
				if (c < 0)
					goto fail;
				tb_err(err, errlen, "%s:%llu:%u: text after the closing quote of a field", r->path,
				       (unsigned long long)r->line, r->nf + 1);
				return -EINVAL;
			}
		} else {
			while (c != ',' && c != '\n' && c != '\r' && c >= 0) {
				if ((rc = rec_put(r, c)))
					goto big;
				c = csv_getc(r);
			}
			if (c < 0 && c != CSV_EOF)
				goto fail;
		}
		if ((rc = field_end(r, start)))
			goto big;
		if (c == ',') {
			c = csv_getc(r);
			continue;
		}
		if (c == '\r') {
			int d = csv_getc(r);
			if (d != '\n')
				r->push = d;
		}
		if (c != CSV_EOF)
			r->line++;
		return 1;
	big:
		tb_err(err, errlen, "%s:%llu:%u: %s", r->path, (unsigned long long)r->rec_line, r->nf + 1,
		       rc == -E2BIG ? "record too long (64 MiB or 1M fields)" : "out of memory");
		return rc;
	}
fail:
	if (c == CSV_TRUNC)
		tb_err(err, errlen, "%s:%llu:%u: the gzip stream ends early (truncated file)", r->path,
		       (unsigned long long)r->line, r->nf + 1);
	else
		tb_err(err, errlen, "%s:%llu:%u: read error (%s)", r->path, (unsigned long long)r->line, r->nf + 1,
		       gzerror(r->f, &(int){0}));
	return -EINVAL;
}

/* offset of the first byte of s[0, n) that is not valid UTF-8, or -1 */
static long utf8_bad(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t k;
		uint32_t cp;
		if (c >= 0xc2 && c <= 0xdf)
			k = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			k = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			k = 3, cp = c & 0x07;
		else
			return (long)i;
		if (i + k >= n)
			return (long)i;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return (long)i;
			cp = (cp << 6) | (s[i + j] & 0x3f);
		}
		if ((k == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return (long)i;
		i += k + 1;
	}
	return -1;
}

/* ---- values ---- */

static void trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t'))
		(*s)++, (*n)--;
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* 0, -EINVAL (not an integer), -ERANGE (beyond int64) */
static int parse_i64(const char *s, size_t n, int64_t *out)
{
	trim(&s, &n);
	if (!n)
		return -EINVAL;
	int neg = 0;
	size_t i = 0;
	if (s[0] == '+' || s[0] == '-')
		neg = s[0] == '-', i = 1;
	if (i == n)
		return -EINVAL;
	uint64_t v = 0;
	int over = 0;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			over = 1;
		else
			v = v * 10 + d;
	}
	if (over || v > (uint64_t)INT64_MAX + (uint64_t)neg)
		return -ERANGE;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* 0, -EINVAL, -ERANGE (not finite, or beyond double) */
static int parse_f64(const char *s, size_t n, double *out)
{
	trim(&s, &n);
	if (!n || n > 400)
		return -EINVAL;
	char tmp[416];
	memcpy(tmp, s, n);
	tmp[n] = 0;
	/* decimal numbers only: no hex floats, inf or nan words */
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789+-.eE", tmp[i]))
			return -EINVAL;
	char *end;
	errno = 0;
	double d = strtod(tmp, &end);
	if (end != tmp + n)
		return -EINVAL;
	if (errno == ERANGE && fabs(d) == HUGE_VAL)
		return -ERANGE;
	*out = d;
	return 0;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const unsigned yoe = (unsigned)(y - era * 400);
	const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const char *s, size_t n, unsigned *v)
{
	*v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (unsigned)(s[i] - '0');
	}
	return 0;
}

int bam_table_parse_time(const char *s, size_t n, int64_t *out)
{
	trim(&s, &n);
	unsigned y, mo, d, h = 0, mi = 0, se = 0;
	if (n < 10 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) || s[7] != '-' || digits(s + 8, 2, &d))
		return -EINVAL;
	size_t i = 10;
	if (i < n) {
		if ((s[i] != 'T' && s[i] != ' ') || n < i + 9 || digits(s + i + 1, 2, &h) || s[i + 3] != ':' ||
		    digits(s + i + 4, 2, &mi) || s[i + 6] != ':' || digits(s + i + 7, 2, &se))
			return -EINVAL;
		i += 9;
		if (i < n && s[i] == '.') {
			i++;
			size_t f0 = i;
			while (i < n && s[i] >= '0' && s[i] <= '9')
				i++;
			if (i == f0)
				return -EINVAL;
		}
		if (i < n && s[i] == 'Z')
			i++;
		if (i != n)
			return -EINVAL;
	}
	static const unsigned mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 60)
		return -EINVAL;
	*out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
	return 0;
}

/* ---- dictionaries: open-addressing hash of strings -> code ---- */

struct dict {
	char **str;     /* [count] by code */
	uint32_t count, cap_str;
	uint32_t *slot; /* [nslot] code + 1, 0 empty */
	uint32_t nslot;
};

static uint64_t hash_str(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static void dict_free(struct dict *d)
{
	for (uint32_t i = 0; i < d->count; i++)
		free(d->str[i]);
	free(d->str);
	free(d->slot);
	memset(d, 0, sizeof(*d));
}

/* code of s, added if new; -E2BIG past BAM_TABLE_DICT_MAX, -ENOMEM */
static int64_t dict_code(struct dict *d, const char *s, size_t n)
{
	if (!d->nslot || (uint64_t)d->count * 2 >= d->nslot) {
		uint32_t ns = d->nslot ? d->nslot * 2 : 256;
		uint32_t *sl = calloc(ns, 4);
		if (!sl)
			return -ENOMEM;
		for (uint32_t i = 0; i < d->count; i++) {
			uint64_t h = hash_str(d->str[i], strlen(d->str[i])) & (ns - 1);
			while (sl[h])
				h = (h + 1) & (ns - 1);
			sl[h] = i + 1;
		}
		free(d->slot);
		d->slot = sl;
		d->nslot = ns;
	}
	uint64_t h = hash_str(s, n) & (d->nslot - 1);
	while (d->slot[h]) {
		const char *t = d->str[d->slot[h] - 1];
		if (strlen(t) == n && !memcmp(t, s, n))
			return d->slot[h] - 1;
		h = (h + 1) & (d->nslot - 1);
	}
	if (d->count >= BAM_TABLE_DICT_MAX)
		return -E2BIG;
	if (d->count == d->cap_str) {
		uint32_t nc = d->cap_str ? d->cap_str * 2 : 64;
		char **ns = realloc(d->str, nc * sizeof(char *));
		if (!ns)
			return -ENOMEM;
		d->str = ns;
		d->cap_str = nc;
	}
	char *c = malloc(n + 1);
	if (!c)
		return -ENOMEM;
	memcpy(c, s, n);
	c[n] = 0;
	d->str[d->count] = c;
	d->slot[h] = d->count + 1;
	return d->count++;
}

/* ---- the import ---- */

struct colstate {
	char name[BAM_TABLE_NAME_MAX + 1];
	uint32_t given;       /* type from --schema (0: infer) */
	int skip;
	int can_int, can_float, can_ts;
	int64_t imin, imax;
	uint64_t nonempty;
	uint32_t type;        /* decided after pass one */
	int out;              /* index among the written columns, or -1 */
	struct dict d;
	/* pass two */
	uint8_t *buf;
	uint64_t bufn, written, nulls;
	uLong crc;
	double min, max;
	int any;
};

struct imp {
	const char *path;
	struct csv r;
	uint32_t ncol;        /* fields per record */
	struct colstate *cs;
	uint32_t nout;
	uint64_t rows;
	/* sink */
	struct tw *w;         /* file; or memory: */
	struct tb_mem *mem;
	uint64_t mem_cap;
	char *err;
	size_t errlen;
	int quiet;
	bam_table_msg_fn msg;
	void *msg_arg;
	double t_last;
	uint64_t input_bytes;
};

#define COLBUF (1u << 20)

static void imp_msg(struct imp *I, const char *fmt, ...)
{
	if (I->quiet)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (I->msg)
		I->msg(I->msg_arg, line);
	else
		fprintf(stderr, "%s\n", line);
}

static void progress(struct imp *I, int pass)
{
	double t = tb_now();
	if (t - I->t_last < 2.0)
		return;
	I->t_last = t;
	imp_msg(I, "import: pass %d: %llu rows, %.0f MB of text read", pass, (unsigned long long)I->rows,
		(double)I->r.consumed / 1e6);
}

static int bad_value(struct imp *I, uint32_t c, const char *what)
{
	const char *f = I->r.rec + I->r.fofs[c];
	tb_err(I->err, I->errlen, "%s:%llu:%u (%s): %s: '%.60s'", I->path, (unsigned long long)I->r.rec_line, c + 1,
	       I->cs[c].name, what, f);
	return -EINVAL;
}

static int parse_schema(struct imp *I, const char *schema)
{
	if (!schema || !*schema)
		return 0;
	char *s = strdup(schema), *save = NULL;
	if (!s)
		return -ENOMEM;
	int rc = 0;
	for (char *tok = strtok_r(s, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(tok, ':');
		if (!colon) {
			tb_err(I->err, I->errlen, "--schema: '%s' is not name:type", tok);
			rc = -EINVAL;
			break;
		}
		*colon = 0;
		uint32_t c;
		for (c = 0; c < I->ncol; c++)
			if (!strcmp(I->cs[c].name, tok))
				break;
		if (c == I->ncol) {
			tb_err(I->err, I->errlen, "--schema: %s has no column '%s'", I->path, tok);
			rc = -EINVAL;
		} else if (!strcmp(colon + 1, "skip")) {
			I->cs[c].skip = 1;
		} else if (!(I->cs[c].given = bam_col_type_parse(colon + 1))) {
			tb_err(I->err, I->errlen,
			       "--schema: column %s: unknown type '%s' (int32, int64, float32, float64, timestamp, dict, skip)",
			       tok, colon + 1);
			rc = -EINVAL;
		}
	}
	free(s);
	return rc;
}

static int read_header(struct imp *I, const char *schema)
{
	int rc = csv_record(&I->r, I->err, I->errlen);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		tb_err(I->err, I->errlen, "%s:1:1: empty file (no header line)", I->path);
		return -EINVAL;
	}
	I->ncol = I->r.nf;
	if (I->ncol > BAM_TABLE_MAX_COLS) {
		tb_err(I->err, I->errlen, "%s:1:%u: more than %u columns", I->path, I->ncol, BAM_TABLE_MAX_COLS);
		return -EINVAL;
	}
	I->cs = calloc(I->ncol, sizeof(*I->cs));
	if (!I->cs)
		return -ENOMEM;
	for (uint32_t c = 0; c < I->ncol; c++) {
		const char *f = I->r.rec + I->r.fofs[c];
		size_t n = I->r.flen[c];
		trim(&f, &n);
		if (utf8_bad((const unsigned char *)f, n) >= 0) {
			tb_err(I->err, I->errlen, "%s:1:%u: column name is not valid UTF-8", I->path, c + 1);
			return -EINVAL;
		}
		if (!n || n > BAM_TABLE_NAME_MAX) {
			tb_err(I->err, I->errlen, "%s:1:%u: column name %s", I->path, c + 1,
			       n ? "longer than 47 bytes" : "is empty");
			return -EINVAL;
		}
		memcpy(I->cs[c].name, f, n);
		for (uint32_t k = 0; k < c; k++)
			if (!strcmp(I->cs[k].name, I->cs[c].name)) {
				tb_err(I->err, I->errlen, "%s:1:%u: column name '%s' repeats column %u", I->path, c + 1,
				       I->cs[c].name, k + 1);
				return -EINVAL;
			}
		I->cs[c].can_int = I->cs[c].can_float = I->cs[c].can_ts = 1;
		I->cs[c].imin = INT64_MAX;
		I->cs[c].imax = INT64_MIN;
	}
	return parse_schema(I, schema);
}

/* one record's checks common to both passes: field count, UTF-8 */
static int check_record(struct imp *I)
{
	if (I->r.nf != I->ncol) {
		tb_err(I->err, I->errlen, "%s:%llu:%u: ragged row: %u fields, the header has %u", I->path,
		       (unsigned long long)I->r.rec_line, (I->r.nf < I->ncol ? I->r.nf : I->ncol) + 1, I->r.nf, I->ncol);
		return -EINVAL;
	}
	for (uint32_t c = 0; c < I->ncol; c++) {
		long b = utf8_bad((const unsigned char *)I->r.rec + I->r.fofs[c], I->r.flen[c]);
		if (b >= 0)
			return bad_value(I, c, "not valid UTF-8");
	}
	return 0;
}

static int infer_value(struct imp *I, uint32_t c)
{
	struct colstate *s = &I->cs[c];
	const char *f = I->r.rec + I->r.fofs[c];
	size_t n = I->r.flen[c];
	if (s->skip || n == 0)
		return 0;
	s->nonempty++;
	int64_t iv;
	double dv;
	int rc;
	uint32_t want = s->given;
	if (want == BAM_COL_INT32 || want == BAM_COL_INT64) {
		if ((rc = parse_i64(f, n, &iv)))
			return bad_value(I, c, rc == -ERANGE ? "integer overflow (beyond int64)" : "not an integer");
		if (iv == INT64_MIN || (want == BAM_COL_INT32 && (iv <= INT32_MIN || iv > INT32_MAX)))
			return bad_value(I, c, want == BAM_COL_INT32 ? "integer overflow (int32: -2^31+1 .. 2^31-1; -2^31 is the null)"
								    : "integer overflow (-2^63 is the null)");
		return 0;
	}
	if (want == BAM_COL_FLOAT32 || want == BAM_COL_FLOAT64) {
		if ((rc = parse_f64(f, n, &dv)))
			return bad_value(I, c, rc == -ERANGE ? "number overflow" : "not a number");
		if (want == BAM_COL_FLOAT32 && fabs(dv) > FLT_MAX)
			return bad_value(I, c, "number overflow (beyond float32)");
		return 0;
	}
	if (want == BAM_COL_TIMESTAMP) {
		if (bam_table_parse_time(f, n, &iv))
			return bad_value(I, c, "not a timestamp (YYYY-MM-DD[ HH:MM:SS])");
		return 0;
	}
	if (want == BAM_COL_DICT) {
		if (n > BAM_TABLE_STR_MAX)
			return bad_value(I, c, "string longer than 1024 bytes");
		return 0;
	}
	/* inference */
	if (s->can_int) {
		rc = parse_i64(f, n, &iv);
		if (rc == -ERANGE || (!rc && iv == INT64_MIN))
			return bad_value(I, c, "integer overflow (beyond int64; -2^63 is the null)");
		if (rc)
			s->can_int = 0;
		else {
			if (iv < s->imin)
				s->imin = iv;
			if (iv > s->imax)
				s->imax = iv;
		}
	}
	if (!s->can_int && s->can_float) {
		rc = parse_f64(f, n, &dv);
		if (rc == -ERANGE)
			return bad_value(I, c, "number overflow");
		if (rc)
			s->can_float = 0;
	}
	if (!s->can_int && !s->can_float && s->can_ts && bam_table_parse_time(f, n, &iv))
		s->can_ts = 0;
	if (!s->can_int && !s->can_float && !s->can_ts && n > BAM_TABLE_STR_MAX)
		return bad_value(I, c, "string longer than 1024 bytes");
	return 0;
}

static void decide_types(struct imp *I)
{
	I->nout = 0;
	for (uint32_t c = 0; c < I->ncol; c++) {
		struct colstate *s = &I->cs[c];
		s->out = -1;
		if (s->skip)
			continue;
		if (s->given)
			s->type = s->given;
		else if (!s->nonempty)
			s->type = BAM_COL_FLOAT64;
		else if (s->can_int)
			s->type = s->imin > INT32_MIN && s->imax <= INT32_MAX ? BAM_COL_INT32 : BAM_COL_INT64;
		else if (s->can_float)
			s->type = BAM_COL_FLOAT64;
		else if (s->can_ts)
			s->type = BAM_COL_TIMESTAMP;
		else
			s->type = BAM_COL_DICT;
		s->out = (int)I->nout++;
	}
}

static int flush_col(struct imp *I, struct colstate *s)
{
	if (!s->bufn)
		return 0;
	const uint32_t es = bam_col_type_size(s->type);
	const uint64_t bytes = s->bufn * es;
	if (I->w) {
		s->crc = crc32(s->crc, s->buf, (uInt)bytes);
		int rc = tw_pwrite(I->w, s->buf, bytes, I->w->t.cols[s->out].offset + s->written * es, I->err, I->errlen);
		if (rc)
			return rc;
	} else {
		memcpy((uint8_t *)I->mem->data[s->out] + s->written * es, s->buf, bytes);
	}
	s->written += s->bufn;
	s->bufn = 0;
	return 0;
}

static void stat_value(struct colstate *s, double v)
{
	if (!s->any || v < s->min)
		s->min = v;
	if (!s->any || v > s->max)
		s->max = v;
	s->any = 1;
}

/* pass two: one value into its column's buffer (pass one checked what can fail but a
 * dictionary's size) */
static int convert_value(struct imp *I, uint32_t c)
{
	struct colstate *s = &I->cs[c];
	const char *f = I->r.rec + I->r.fofs[c];
	size_t n = I->r.flen[c];
	const uint32_t es = bam_col_type_size(s->type);
	uint8_t *dst = s->buf + s->bufn * es;
	int64_t iv = 0;
	double dv = 0;
	int null = n == 0;
	switch (s->type) {
	case BAM_COL_INT32: {
		int32_t v = TB_NULL_I32;
		if (!null && !parse_i64(f, n, &iv))
			v = (int32_t)iv, stat_value(s, (double)iv);
		memcpy(dst, &v, 4);
		break;
	}
	case BAM_COL_INT64:
	case BAM_COL_TIMESTAMP: {
		int64_t v = TB_NULL_I64;
		if (!null && !(s->type == BAM_COL_INT64 ? parse_i64(f, n, &iv) : bam_table_parse_time(f, n, &iv)))
			v = iv, stat_value(s, (double)iv);
		memcpy(dst, &v, 8);
		break;
	}
	case BAM_COL_FLOAT32: {
		float v = NAN;
		if (!null && !parse_f64(f, n, &dv))
			v = (float)dv, stat_value(s, (double)v);
		memcpy(dst, &v, 4);
		break;
	}
	case BAM_COL_FLOAT64: {
		double v = NAN;
		if (!null && !parse_f64(f, n, &dv))
			v = dv, stat_value(s, v);
		memcpy(dst, &v, 8);
		break;
	}
	case BAM_COL_DICT: {
		int32_t v = TB_NULL_I32;
		if (!null) {
			int64_t code = dict_code(&s->d, f, n);
			if (code == -E2BIG)
				return bad_value(I, c, "more than 65536 distinct strings in a dictionary column (give the column a numeric type or skip it with --schema)");
			if (code < 0)
				return (int)code;
			v = (int32_t)code;
			stat_value(s, (double)code);
		}
		memcpy(dst, &v, 4);
		break;
	}
	}
	if (null)
		s->nulls++;
	if (++s->bufn * es >= COLBUF)
		return flush_col(I, s);
	return 0;
}

static int pass(struct imp *I, int which)
{
	int rc;
	if ((rc = csv_open(&I->r, I->path, I->err, I->errlen)))
		return rc;
	if ((rc = csv_record(&I->r, I->err, I->errlen)) <= 0) /* the header (read before) */
		return rc < 0 ? rc : -EIO;
	I->rows = 0;
	I->t_last = tb_now();
	while ((rc = csv_record(&I->r, I->err, I->errlen)) == 1) {
		if ((rc = check_record(I)))
			return rc;
		for (uint32_t c = 0; c < I->ncol; c++) {
			if (which == 1)
				rc = infer_value(I, c);
			else if (I->cs[c].out >= 0)
				rc = convert_value(I, c);
			if (rc)
				return rc;
		}
		I->rows++;
		if ((I->rows & 0xffff) == 0)
			progress(I, which);
	}
	return rc;
}

static void imp_free(struct imp *I)
{
	csv_close(&I->r);
	for (uint32_t c = 0; I->cs && c < I->ncol; c++) {
		dict_free(&I->cs[c].d);
		free(I->cs[c].buf);
	}
	free(I->cs);
}

/* the schema after pass one, as a table of I->rows rows (dictionaries not yet known) */
static int make_table(struct imp *I, struct bam_table *t)
{
	memset(t, 0, sizeof(*t));
	t->rows = I->rows;
	t->ncols = I->nout;
	t->cols = calloc(I->nout ? I->nout : 1, sizeof(*t->cols));
	if (!t->cols)
		return -ENOMEM;
	for (uint32_t c = 0; c < I->ncol; c++) {
		struct colstate *s = &I->cs[c];
		if (s->out < 0)
			continue;
		struct bam_table_col *col = &t->cols[s->out];
		snprintf(col->name, sizeof(col->name), "%s", s->name);
		col->type = s->type;
		col->elem_size = bam_col_type_size(s->type);
		s->buf = malloc(COLBUF + 8);
		s->crc = crc32(0, NULL, 0);
		if (!s->buf)
			return -ENOMEM;
	}
	return 0;
}

/* the pass-two facts into the directory */
static void finish_cols(struct imp *I, struct bam_table_col *cols)
{
	for (uint32_t c = 0; c < I->ncol; c++) {
		struct colstate *s = &I->cs[c];
		if (s->out < 0)
			continue;
		struct bam_table_col *col = &cols[s->out];
		col->crc32 = (uint32_t)s->crc;
		col->nulls = s->nulls;
		col->min = s->any ? s->min : 0;
		col->max = s->any ? s->max : 0;
		if (s->type == BAM_COL_DICT) {
			col->dict_count = s->d.count;
			col->dict = s->d.str;
		}
	}
}

static int run_passes(struct imp *I, const char *schema, double *t1, double *t2, struct bam_table *t)
{
	int rc;
	double t0 = tb_now();
	if ((rc = csv_open(&I->r, I->path, I->err, I->errlen)) || (rc = read_header(I, schema)))
		return rc;
	csv_close(&I->r);
	if ((rc = pass(I, 1)))
		return rc;
	csv_close(&I->r);
	if (I->rows == 0) {
		tb_err(I->err, I->errlen, "%s:2:1: no data rows (only a header line)", I->path);
		return -EINVAL;
	}
	decide_types(I);
	if (!I->nout) {
		tb_err(I->err, I->errlen, "--schema: every column of %s is skipped", I->path);
		return -EINVAL;
	}
	*t1 = tb_now() - t0;
	imp_msg(I, "import: pass 1: %llu rows, %u columns inferred in %.2f s", (unsigned long long)I->rows, I->nout, *t1);
	return make_table(I, t);
}

int bam_table_import(const char *csv_path, const char *out_path, const struct bam_table_import_opts *o,
		     struct bam_table_import_result *res, char *err, size_t errlen)
{
	static const struct bam_table_import_opts none;
	if (!o)
		o = &none;
	memset(res, 0, sizeof(*res));
	struct imp I = {.path = csv_path, .err = err, .errlen = errlen, .quiet = o->quiet, .msg = o->msg,
			.msg_arg = o->msg_arg};
	struct stat st;
	if (stat(csv_path, &st)) {
		tb_err(err, errlen, "%s: %s", csv_path, strerror(errno));
		return -errno;
	}
	I.input_bytes = (uint64_t)st.st_size;
	struct bam_table t;
	memset(&t, 0, sizeof(t));
	struct tw w;
	memset(&w, 0, sizeof(w));
	w.fd = -1;
	double t1 = 0;
	int rc = run_passes(&I, o->schema, &t1, &t1, &t);
	if (!rc)
		rc = tw_create(&w, out_path, &t, err, errlen);
	if (!rc) {
		I.w = &w;
		double t0 = tb_now();
		const uint64_t rows1 = I.rows;
		rc = pass(&I, 2);
		for (uint32_t c = 0; !rc && c < I.ncol; c++)
			if (I.cs[c].out >= 0)
				rc = flush_col(&I, &I.cs[c]);
		if (!rc && I.rows != rows1) {
			tb_err(err, errlen, "%s: changed between the two passes (%llu rows, then %llu)", csv_path,
			       (unsigned long long)rows1, (unsigned long long)I.rows);
			rc = -EIO;
		}
		res->pass2_s = tb_now() - t0;
		if (!rc) {
			finish_cols(&I, w.t.cols);
			res->output_bytes = w.t.file_bytes;
			rc = tw_commit(&w, err, errlen);
		} else {
			tw_abort(&w);
		}
	}
	res->pass1_s = t1;
	res->rows = I.rows;
	res->ncols = I.nout;
	res->input_bytes = I.input_bytes;
	free(t.cols);
	imp_free(&I);
	return rc;
}

int tb_csv_load(const char *path, const char *schema, struct tb_mem *m, char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	struct imp I = {.path = path, .err = err, .errlen = errlen, .quiet = 1};
	double t1;
	int rc = run_passes(&I, schema, &t1, &t1, &m->t);
	if (!rc) {
		m->data = calloc(I.nout, sizeof(void *));
		rc = m->data ? 0 : -ENOMEM;
		for (uint32_t c = 0; !rc && c < I.nout; c++)
			if (!(m->data[c] = malloc(I.rows * m->t.cols[c].elem_size + 8)))
				rc = -ENOMEM;
	}
	if (!rc) {
		I.mem = m;
		const uint64_t rows1 = I.rows;
		rc = pass(&I, 2);
		for (uint32_t c = 0; !rc && c < I.ncol; c++)
			if (I.cs[c].out >= 0)
				rc = flush_col(&I, &I.cs[c]);
		if (!rc && I.rows != rows1)
			rc = -EIO;
	}
	if (!rc) {
		finish_cols(&I, m->t.cols);
		for (uint32_t c = 0; c < I.ncol; c++) /* the dictionaries move to m */
			if (I.cs[c].out >= 0 && I.cs[c].type == BAM_COL_DICT) {
				I.cs[c].d.str = NULL;
				I.cs[c].d.count = 0;
			}
	}
	if (rc && rc != -EINVAL && err && !err[0])
		tb_err(err, errlen, "%s: %s", path, strerror(-rc));
	imp_free(&I);
	if (rc)
		tb_mem_free(m);
	return rc;
}

void tb_mem_free(struct tb_mem *m)
{
	for (uint32_t c = 0; m->data && c < m->t.ncols; c++)
		free(m->data[c]);
	free(m->data);
	m->data = NULL;
	bam_table_close(&m->t);
}
