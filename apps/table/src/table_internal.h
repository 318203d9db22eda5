/* SPDX-License-Identifier: MIT */
/* Internals of bam_table: the file writer shared by import and generate, the CSV
 * reader, little helpers. Not API. */
#ifndef BAM_TABLE_INTERNAL_H
#define BAM_TABLE_INTERNAL_H
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include "bam/table.h"

#define TB_HDR_FIXED 64u   /* bytes of the fixed header before the directory */
#define TB_DIR_ENTRY 128u  /* bytes of one directory entry */

/* A table file being written: the layout is fixed at tw_create (rows and columns
 * known), the columns are written with pwrite anywhere, the header last. */
struct tw {
	int fd;
	char tmp[PATH_MAX];
	char path[PATH_MAX];
	struct bam_table t; /* cols[].dict borrowed from the caller */
};
/* Lay out t->cols (offsets), create the temporary file beside path at its final size.
 * t is copied (its cols array too). */
int tw_create(struct tw *w, const char *path, const struct bam_table *t, char *err, size_t errlen);
/* Write the header region (the cols' crc32, nulls, min, max as set by now), fsync,
 * rename into place. On failure the temporary file is removed. */
int tw_commit(struct tw *w, char *err, size_t errlen);
void tw_abort(struct tw *w);
int tw_pwrite(struct tw *w, const void *buf, uint64_t len, uint64_t off, char *err, size_t errlen);

/* Null sentinels (docs/TABLE-FORMAT.md). */
#define TB_NULL_I32 INT32_MIN
#define TB_NULL_I64 INT64_MIN

double tb_now(void);
void tb_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- CSV (csv.c) ---- */
/* In-memory columns of a parsed CSV (generate's sample): data[c] holds rows elements of
 * cols[c].elem_size; the dictionaries are owned. */
struct tb_mem {
	struct bam_table t;
	void **data;
};
int tb_csv_load(const char *path, const char *schema, struct tb_mem *m, char *err, size_t errlen);
void tb_mem_free(struct tb_mem *m);
#endif
