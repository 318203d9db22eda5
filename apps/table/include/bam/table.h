/* SPDX-License-Identifier: MIT */
/*
 * bam/table.h - columnar tables on storage (docs/TABLE-FORMAT.md): the .btab file
 * format, CSV import (plain or gzip, streaming, two passes), the seeded resampling
 * generator and the file's checksums. The queries are bam/table_query.h.
 *
 * A table file holds a header region (magic, version, row count, column directory,
 * dictionaries, one CRC-32 over it) and then each column as one contiguous array of
 * fixed-size elements starting on a 4 KiB (LBA) boundary, with its own CRC-32 (zlib
 * crc32). Nulls are sentinels in the element arrays (docs/TABLE-FORMAT.md, "Nulls").
 * Every function returns 0 or a negative errno and writes a one-line message (prefixed
 * with the file's name, and for bad CSV with its line and column) to err[errlen].
 */
#ifndef BAM_TABLE_H
#define BAM_TABLE_H

#include "bam/defs.h"
#include <stddef.h>
#include <stdint.h>

BAM_EXTERN_C_BEGIN

#define BAM_TABLE_MAGIC "BAMTABLE"
#define BAM_TABLE_VERSION 1u
#define BAM_TABLE_ALIGN 4096u     /* every column starts at a multiple of this */
#define BAM_TABLE_NAME_MAX 47u    /* bytes of a column name (UTF-8, no NUL) */
#define BAM_TABLE_MAX_COLS 1024u
#define BAM_TABLE_DICT_MAX 65536u /* distinct strings of one dictionary column */
#define BAM_TABLE_STR_MAX 1024u   /* bytes of one dictionary string */

/* Column types, as stored (uint32 in the directory). */
enum bam_col_type {
	BAM_COL_INT32 = 1,     /* int32; null = INT32_MIN */
	BAM_COL_INT64 = 2,     /* int64; null = INT64_MIN */
	BAM_COL_FLOAT32 = 3,   /* IEEE binary32; null = NaN */
	BAM_COL_FLOAT64 = 4,   /* IEEE binary64; null = NaN */
	BAM_COL_TIMESTAMP = 5, /* int64 seconds since 1970-01-01T00:00:00Z; null = INT64_MIN */
	BAM_COL_DICT = 6,      /* int32 code into the column's dictionary; null = INT32_MIN */
};
/* "int32", "int64", "float32", "float64", "timestamp", "dict" (NULL otherwise). */
BAM_API const char *bam_col_type_name(uint32_t type);
/* The type of a name above (also "string" for dict, "double"/"float" for float64/32,
 * "int"/"long"); 0 if none. */
BAM_API uint32_t bam_col_type_parse(const char *name);
/* Bytes per element: 4 or 8 (0 for an unknown type). */
BAM_API uint32_t bam_col_type_size(uint32_t type);

/* One column as the directory describes it. */
struct bam_table_col {
	char name[BAM_TABLE_NAME_MAX + 1];
	uint32_t type;          /* enum bam_col_type */
	uint32_t elem_size;     /* 4 or 8 */
	uint64_t offset;        /* byte offset of element 0 in the file (a multiple of 4096) */
	uint64_t bytes;         /* rows * elem_size */
	uint64_t nulls;         /* elements that are null */
	uint32_t crc32;         /* zlib crc32 of the bytes [offset, offset + bytes) */
	uint32_t dict_count;    /* dict: strings in the dictionary (codes 0 .. count-1) */
	double min, max;        /* of the non-null values (dict: of the codes); 0 if none */
	char **dict;            /* dict: the strings, NUL-terminated (bam_table_open) */
};

struct bam_table {
	uint64_t rows;
	uint32_t ncols;
	uint64_t data_offset;   /* first column's offset = bytes of the header region */
	uint64_t file_bytes;    /* size the header records */
	uint32_t header_crc32;
	struct bam_table_col *cols;
};

/* Read and check the header region of a table file (magic, version, sizes, the header
 * CRC, every column inside the file and 4 KiB-aligned). -ENOENT etc. (the open),
 * -EBADMSG (not a table file or a damaged header), -ENOMEM. Free with bam_table_close. */
BAM_API int bam_table_open(const char *path, struct bam_table *t, char *err, size_t errlen);
BAM_API void bam_table_close(struct bam_table *t);
/* Index of the column named name, or -1. */
BAM_API int bam_table_col_find(const struct bam_table *t, const char *name);
/* Recompute every column's CRC-32 from the file and compare (bad: the first column that
 * differs, its index in *bad_col, or -1). 0, -EBADMSG (a mismatch), -EIO. */
BAM_API int bam_table_verify(const char *path, const struct bam_table *t, int *bad_col, char *err, size_t errlen);
/* Parse a timestamp text (YYYY-MM-DD, optional [T ]HH:MM:SS[.fff][Z]) to seconds since
 * the epoch, UTC. 0 or -EINVAL. */
BAM_API int bam_table_parse_time(const char *s, size_t len, int64_t *out);

/* Messages of a long operation (progress every ~2 s), one line each, no newline. */
typedef void (*bam_table_msg_fn)(void *arg, const char *text);

struct bam_table_import_opts {
	/* "name:type,..." for some or all columns (types as bam_col_type_parse, and "skip"
	 * to leave a column out); the others are inferred from all rows (pass one):
	 * integers -> int32 (int64 when a value needs it), numbers -> float64, timestamps,
	 * else dict (at most BAM_TABLE_DICT_MAX distinct strings), all-empty -> float64. */
	const char *schema;
	int quiet;
	bam_table_msg_fn msg; /* NULL: stderr */
	void *msg_arg;
};

struct bam_table_import_result {
	uint64_t rows, input_bytes, output_bytes;
	uint32_t ncols;
	double pass1_s, pass2_s; /* the inference pass and the writing pass */
};

/* Import CSV (RFC 4180: a header line of column names, commas, "quoted" fields with ""
 * escapes; plain or gzip by content) into a table file at out_path: written to a
 * temporary file beside it and renamed into place only when complete. Bad input:
 * -EINVAL with "FILE:LINE:COLUMN (NAME): what" in err (ragged rows, unparsable or
 * overflowing numbers, bad UTF-8, empty input, a truncated gzip stream, too many
 * distinct strings); nothing is left at out_path. -EEXIST: out_path exists and is not
 * a regular file. Other negative errnos for I/O. */
BAM_API int bam_table_import(const char *csv_path, const char *out_path, const struct bam_table_import_opts *o,
			     struct bam_table_import_result *res, char *err, size_t errlen);

struct bam_table_generate_opts {
	const char *sample;     /* the CSV whose rows are resampled (read into memory) */
	uint64_t rows;          /* rows of the output, >= 1 */
	uint64_t seed;
	const char *schema;     /* as for import, applied to the sample */
	const char *columns;    /* "a,b,c": only these columns, in this order (NULL: all) */
	uint32_t threads;       /* 0: one per online CPU */
	int quiet;
	bam_table_msg_fn msg;
	void *msg_arg;
};

struct bam_table_generate_result {
	uint64_t rows, sample_rows, output_bytes;
	uint32_t ncols, threads;
	double s;               /* writing the output */
};

/* Write a table of o->rows rows, row r being a copy of the sample's row
 * splitmix64(seed, r) mod sample_rows (whole rows: the columns keep their joint
 * distribution; the dictionaries are the sample's). Written in chunks of rows by
 * o->threads threads, every column of a chunk at once, checksums combined per column
 * (crc32_combine); to a temporary file renamed into place. Errors as import (those of
 * the sample's CSV), -ENOSPC, -EIO. */
BAM_API int bam_table_generate(const char *out_path, const struct bam_table_generate_opts *o,
			       struct bam_table_generate_result *res, char *err, size_t errlen);

BAM_EXTERN_C_END

#endif /* BAM_TABLE_H */
