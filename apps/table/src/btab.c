/* SPDX-License-Identifier: MIT */
/*
 * btab.c - the table file format (docs/TABLE-FORMAT.md): the header region's encoding,
 * reading and checking it (bam_table_open), the columns' checksums (bam_table_verify),
 * and the writer shared by import and generate (a temporary file renamed into place).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "table_internal.h"

static const char *const type_names[] = {NULL, "int32", "int64", "float32", "float64", "timestamp", "dict"};

const char *bam_col_type_name(uint32_t type)
{
	return type >= 1 && type <= 6 ? type_names[type] : NULL;
}

uint32_t bam_col_type_parse(const char *s)
{
	for (uint32_t i = 1; i <= 6; i++)
		if (!strcasecmp(s, type_names[i]))
			return i;
	if (!strcasecmp(s, "string") || !strcasecmp(s, "str"))
		return BAM_COL_DICT;
	if (!strcasecmp(s, "double"))
		return BAM_COL_FLOAT64;
	if (!strcasecmp(s, "float"))
		return BAM_COL_FLOAT32;
	if (!strcasecmp(s, "int"))
		return BAM_COL_INT32;
	if (!strcasecmp(s, "long"))
		return BAM_COL_INT64;
	return 0;
}

uint32_t bam_col_type_size(uint32_t type)
{
	switch (type) {
	case BAM_COL_INT32:
	case BAM_COL_FLOAT32:
	case BAM_COL_DICT:
		return 4;
	case BAM_COL_INT64:
	case BAM_COL_FLOAT64:
	case BAM_COL_TIMESTAMP:
		return 8;
	default:
		return 0;
	}
}

double tb_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void tb_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int bam_table_col_find(const struct bam_table *t, const char *name)
{
	for (uint32_t c = 0; c < t->ncols; c++)
		if (!strcmp(t->cols[c].name, name))
			return (int)c;
	return -1;
}

/* ---- encoding (little-endian) ---- */

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}
static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}
static void putf64(uint8_t *p, double d)
{
	uint64_t v;
	memcpy(&v, &d, 8);
	put64(p, v);
}
static double getf64(const uint8_t *p)
{
	uint64_t v = get64(p);
	double d;
	memcpy(&d, &v, 8);
	return d;
}

static uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

/* bytes of the dictionaries: per string a u16 length and its bytes */
static uint64_t dict_bytes(const struct bam_table_col *c)
{
	uint64_t n = 0;
	if (c->type == BAM_COL_DICT)
		for (uint32_t i = 0; i < c->dict_count; i++)
			n += 2 + strlen(c->dict[i]);
	return n;
}

static uint64_t header_bytes(const struct bam_table *t)
{
	uint64_t n = TB_HDR_FIXED + (uint64_t)TB_DIR_ENTRY * t->ncols;
	for (uint32_t c = 0; c < t->ncols; c++)
		n += dict_bytes(&t->cols[c]);
	return round_up(n, BAM_TABLE_ALIGN);
}

/* the header region: fixed header, directory, dictionaries, zero padding; the header
 * CRC over all of it with its own field zero */
static uint8_t *header_build(struct bam_table *t)
{
	uint8_t *b = calloc(1, t->data_offset);
	if (!b)
		return NULL;
	memcpy(b, BAM_TABLE_MAGIC, 8);
	put32(b + 8, BAM_TABLE_VERSION);
	put32(b + 12, t->ncols);
	put64(b + 16, t->rows);
	put64(b + 24, t->data_offset);
	put64(b + 32, t->file_bytes);
	/* b + 40: header crc (below) */
	uint64_t dpos = TB_HDR_FIXED + (uint64_t)TB_DIR_ENTRY * t->ncols;
	for (uint32_t c = 0; c < t->ncols; c++) {
		const struct bam_table_col *col = &t->cols[c];
		uint8_t *e = b + TB_HDR_FIXED + (uint64_t)TB_DIR_ENTRY * c;
		memcpy(e, col->name, strlen(col->name));
		put32(e + 48, col->type);
		put32(e + 52, col->elem_size);
		put64(e + 56, col->offset);
		put64(e + 64, col->bytes);
		put64(e + 72, col->nulls);
		put32(e + 80, col->crc32);
		put32(e + 84, col->dict_count);
		const uint64_t db = dict_bytes(col);
		put64(e + 88, db ? dpos : 0);
		put64(e + 96, db);
		putf64(e + 104, col->min);
		putf64(e + 112, col->max);
		for (uint32_t i = 0; col->type == BAM_COL_DICT && i < col->dict_count; i++) {
			size_t l = strlen(col->dict[i]);
			b[dpos] = (uint8_t)l;
			b[dpos + 1] = (uint8_t)(l >> 8);
			memcpy(b + dpos + 2, col->dict[i], l);
			dpos += 2 + l;
		}
	}
	put32(b + 40, (uint32_t)crc32(0, b, (uInt)t->data_offset));
	return b;
}

static int pread_full(int fd, void *buf, uint64_t len, uint64_t off)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t r = pread(fd, p, len > (1u << 30) ? (1u << 30) : len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		p += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

void bam_table_close(struct bam_table *t)
{
	if (!t)
		return;
	for (uint32_t c = 0; t->cols && c < t->ncols; c++) {
		if (t->cols[c].dict) {
			for (uint32_t i = 0; i < t->cols[c].dict_count; i++)
				free(t->cols[c].dict[i]);
			free(t->cols[c].dict);
		}
	}
	free(t->cols);
	memset(t, 0, sizeof(*t));
}

int bam_table_open(const char *path, struct bam_table *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		int rc = -errno;
		tb_err(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	struct stat st;
	uint8_t fix[TB_HDR_FIXED];
	uint8_t *b = NULL;
	int rc = -EBADMSG;
	if (fstat(fd, &st) || (uint64_t)st.st_size < TB_HDR_FIXED || pread_full(fd, fix, TB_HDR_FIXED, 0) ||
	    memcmp(fix, BAM_TABLE_MAGIC, 8)) {
		tb_err(err, errlen, "%s: not a bam table file (no '%s' magic; docs/TABLE-FORMAT.md)", path, BAM_TABLE_MAGIC);
		goto out;
	}
	if (get32(fix + 8) != BAM_TABLE_VERSION) {
		tb_err(err, errlen, "%s: table format version %u; this bam reads version %u", path, get32(fix + 8),
		       BAM_TABLE_VERSION);
		goto out;
	}
	t->ncols = get32(fix + 12);
	t->rows = get64(fix + 16);
	t->data_offset = get64(fix + 24);
	t->file_bytes = get64(fix + 32);
	t->header_crc32 = get32(fix + 40);
	if (t->ncols == 0 || t->ncols > BAM_TABLE_MAX_COLS || t->data_offset % BAM_TABLE_ALIGN ||
	    t->data_offset < TB_HDR_FIXED + (uint64_t)TB_DIR_ENTRY * t->ncols || t->data_offset > (64u << 20) ||
	    t->data_offset > (uint64_t)st.st_size) {
		tb_err(err, errlen, "%s: damaged header (%u columns, header region of %llu bytes, file of %llu)", path,
		       t->ncols, (unsigned long long)t->data_offset, (unsigned long long)st.st_size);
		goto out;
	}
	if (t->file_bytes != (uint64_t)st.st_size) {
		tb_err(err, errlen, "%s: the header records %llu bytes but the file has %llu (truncated or appended to)",
		       path, (unsigned long long)t->file_bytes, (unsigned long long)st.st_size);
		goto out;
	}
	b = malloc(t->data_offset);
	t->cols = calloc(t->ncols, sizeof(*t->cols));
	if (!b || !t->cols) {
		rc = -ENOMEM;
		tb_err(err, errlen, "%s: out of memory", path);
		goto out;
	}
	if ((rc = pread_full(fd, b, t->data_offset, 0))) {
		tb_err(err, errlen, "%s: read error", path);
		goto out;
	}
	rc = -EBADMSG;
	put32(b + 40, 0);
	uint32_t crc = (uint32_t)crc32(0, b, (uInt)t->data_offset);
	if (crc != t->header_crc32) {
		tb_err(err, errlen, "%s: header checksum mismatch (stored %08x, computed %08x): damaged file", path,
		       t->header_crc32, crc);
		goto out;
	}
	uint64_t prev_end = t->data_offset;
	for (uint32_t c = 0; c < t->ncols; c++) {
		struct bam_table_col *col = &t->cols[c];
		const uint8_t *e = b + TB_HDR_FIXED + (uint64_t)TB_DIR_ENTRY * c;
		memcpy(col->name, e, 47);
		col->name[47] = 0;
		col->type = get32(e + 48);
		col->elem_size = get32(e + 52);
		col->offset = get64(e + 56);
		col->bytes = get64(e + 64);
		col->nulls = get64(e + 72);
		col->crc32 = get32(e + 80);
		col->dict_count = get32(e + 84);
		uint64_t dofs = get64(e + 88), db = get64(e + 96);
		col->min = getf64(e + 104);
		col->max = getf64(e + 112);
		if (!bam_col_type_name(col->type) || col->elem_size != bam_col_type_size(col->type) ||
		    col->offset % BAM_TABLE_ALIGN || col->offset < prev_end ||
		    col->bytes / col->elem_size != t->rows || col->bytes % col->elem_size ||
		    col->offset + col->bytes > t->file_bytes || col->nulls > t->rows ||
		    (col->type == BAM_COL_DICT ? col->dict_count > BAM_TABLE_DICT_MAX || dofs + db > t->data_offset
					       : col->dict_count != 0)) {
			tb_err(err, errlen, "%s: damaged directory entry of column %u", path, c);
			goto out;
		}
		prev_end = col->offset + col->bytes;
		if (col->type == BAM_COL_DICT) {
			col->dict = calloc(col->dict_count ? col->dict_count : 1, sizeof(char *));
			if (!col->dict) {
				rc = -ENOMEM;
				goto out;
			}
			uint64_t p = dofs, end = dofs + db;
			for (uint32_t i = 0; i < col->dict_count; i++) {
				if (p + 2 > end || p + 2 + (b[p] | (b[p + 1] << 8)) > end) {
					tb_err(err, errlen, "%s: damaged dictionary of column %s", path, col->name);
					goto out;
				}
				size_t l = (size_t)(b[p] | (b[p + 1] << 8));
				col->dict[i] = malloc(l + 1);
				if (!col->dict[i]) {
					rc = -ENOMEM;
					goto out;
				}
				memcpy(col->dict[i], b + p + 2, l);
				col->dict[i][l] = 0;
				p += 2 + l;
			}
		}
	}
	rc = 0;
out:
	free(b);
	close(fd);
	if (rc)
		bam_table_close(t);
	return rc;
}

int bam_table_verify(const char *path, const struct bam_table *t, int *bad_col, char *err, size_t errlen)
{
	*bad_col = -1;
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		tb_err(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	const uint64_t chunk = 8u << 20;
	uint8_t *buf = malloc(chunk);
	int rc = buf ? 0 : -ENOMEM;
	for (uint32_t c = 0; !rc && c < t->ncols; c++) {
		const struct bam_table_col *col = &t->cols[c];
		uLong crc = crc32(0, NULL, 0);
		for (uint64_t o = 0; o < col->bytes && !rc; o += chunk) {
			uint64_t n = col->bytes - o < chunk ? col->bytes - o : chunk;
			if ((rc = pread_full(fd, buf, n, col->offset + o)))
				tb_err(err, errlen, "%s: read error in column %s", path, col->name);
			else
				crc = crc32(crc, buf, (uInt)n);
		}
		if (!rc && (uint32_t)crc != col->crc32) {
			*bad_col = (int)c;
			tb_err(err, errlen, "%s: column %s: checksum mismatch (stored %08x, computed %08x): damaged file",
			       path, col->name, col->crc32, (uint32_t)crc);
			rc = -EBADMSG;
		}
	}
	free(buf);
	close(fd);
	return rc;
}

/* ---- the writer ---- */

int tw_create(struct tw *w, const char *path, const struct bam_table *t, char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
	struct stat st;
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		tb_err(err, errlen, "%s: exists and is not a regular file: not replaced", path);
		return -EEXIST;
	}
	w->t = *t;
	w->t.cols = calloc(t->ncols, sizeof(*t->cols));
	if (!w->t.cols)
		return -ENOMEM;
	memcpy(w->t.cols, t->cols, t->ncols * sizeof(*t->cols));
	w->t.data_offset = header_bytes(&w->t);
	uint64_t off = w->t.data_offset;
	for (uint32_t c = 0; c < t->ncols; c++) {
		struct bam_table_col *col = &w->t.cols[c];
		col->elem_size = bam_col_type_size(col->type);
		col->offset = off;
		col->bytes = t->rows * col->elem_size;
		off = round_up(off + col->bytes, BAM_TABLE_ALIGN);
	}
	w->t.file_bytes = off;
	snprintf(w->path, sizeof(w->path), "%s", path);
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *base = strrchr(dir, '/');
	const char *name = base ? base + 1 : dir;
	if (base)
		*base = 0;
	int tl = snprintf(w->tmp, sizeof(w->tmp), "%s/.%s.tmp.XXXXXX", base ? (dir[0] ? dir : "/") : ".", name);
	w->fd = tl > 0 && (size_t)tl < sizeof(w->tmp) ? mkstemp(w->tmp) : (errno = ENAMETOOLONG, -1);
	if (w->fd < 0) {
		int rc = -errno;
		tb_err(err, errlen, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
		free(w->t.cols);
		w->t.cols = NULL;
		return rc;
	}
	fchmod(w->fd, 0644);
	if (ftruncate(w->fd, (off_t)w->t.file_bytes)) {
		int rc = -errno;
		tb_err(err, errlen, "%s: cannot size the output to %llu bytes: %s", path,
		       (unsigned long long)w->t.file_bytes, strerror(errno));
		tw_abort(w);
		return rc;
	}
	return 0;
}

int tw_pwrite(struct tw *w, const void *buf, uint64_t len, uint64_t off, char *err, size_t errlen)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t r = pwrite(w->fd, p, len > (1u << 30) ? (1u << 30) : len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int rc = r < 0 ? -errno : -EIO;
			tb_err(err, errlen, "%s: write failed: %s", w->path, strerror(-rc));
			return rc;
		}
		p += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

void tw_abort(struct tw *w)
{
	if (w->fd >= 0) {
		close(w->fd);
		unlink(w->tmp);
	}
	w->fd = -1;
	free(w->t.cols);
	w->t.cols = NULL;
}

int tw_commit(struct tw *w, char *err, size_t errlen)
{
	uint8_t *h = header_build(&w->t);
	int rc = h ? tw_pwrite(w, h, w->t.data_offset, 0, err, errlen) : -ENOMEM;
	free(h);
	if (!rc && fsync(w->fd)) {
		rc = -errno;
		tb_err(err, errlen, "%s: fsync failed: %s", w->path, strerror(errno));
	}
	if (!rc && rename(w->tmp, w->path)) {
		rc = -errno;
		tb_err(err, errlen, "%s: cannot rename the temporary file into place: %s", w->path, strerror(errno));
	}
	if (rc) {
		tw_abort(w);
		return rc;
	}
	close(w->fd);
	w->fd = -1;
	free(w->t.cols);
	w->t.cols = NULL;
	return 0;
}
