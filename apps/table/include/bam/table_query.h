/* SPDX-License-Identifier: MIT */
/*
 * bam/table_query.h - queries over a table file (bam/table.h) in the BaM paper's shape
 * (data analytics, the NYC taxi queries): one range predicate on a column, then more
 * columns read at the matching rows only, aggregated (count, sum, mean, min, max), with
 * an optional group-by on a small-cardinality column. The kernels (src/table_kern.h) run
 * on GPU warps or, on the CPU target, on host threads, and read the columns either
 *   BAM:          through bam's cache on demand from a back end (the columns are placed
 *                 on its media first, as dd would; not in the end-to-end time),
 *   WHOLE_COLUMN: from target memory after the CPU read every column the query needs in
 *                 full from the file and copied it over (chunked, double-buffered through
 *                 pinned staging buffers): the CPU-centric way (RAPIDS without BaM);
 *                 per query, and its end-to-end time includes that load,
 *   HOST:         from pinned host memory, zero-copy (loaded once, before the queries),
 *   GPU:          from GPU memory (loaded once; GPU target only).
 * Every mode runs the same kernels and must give the same answer; with verify the
 * answers are compared with a CPU reference on host threads (counts, minima and maxima
 * exactly, sums within 1e-9 of the sum of the absolute values: floating-point sums are
 * accumulated in another order on the GPU).
 */
#ifndef BAM_TABLE_QUERY_H
#define BAM_TABLE_QUERY_H

#include "bam/bam.h"
#include "bam/cache.h"
#include "bam/table.h"

BAM_EXTERN_C_BEGIN

#define BAM_TQ_MAX_COLS 8      /* the predicate column and up to 7 more */
#define BAM_TQ_MAX_GROUPS 1024 /* group keys (plus one group for nulls) */

enum bam_table_mode {
	BAM_TABLE_MODE_BAM = 0,
	BAM_TABLE_MODE_WHOLE_COLUMN,
	BAM_TABLE_MODE_HOST,
	BAM_TABLE_MODE_GPU,
};
/* "bam", "whole-column", "host", "gpu" (NULL otherwise); parse: -1 if unknown. */
BAM_API const char *bam_table_mode_name(enum bam_table_mode m);
BAM_API int bam_table_mode_parse(const char *s);

/* Aggregates to report (all are computed; this says which to print). */
#define BAM_TQ_COUNT 1u
#define BAM_TQ_SUM 2u
#define BAM_TQ_MEAN 4u
#define BAM_TQ_MIN 8u
#define BAM_TQ_MAX 16u

struct bam_table_query {
	char name[16];                 /* e.g. "Q3" */
	char where[BAM_TABLE_NAME_MAX + 1]; /* predicate column: lo <= value < hi, nulls never match */
	double lo, hi;
	uint32_t ncols;                /* columns read at the matching rows (0 .. 7) */
	char cols[BAM_TQ_MAX_COLS - 1][BAM_TABLE_NAME_MAX + 1];
	char group_by[BAM_TABLE_NAME_MAX + 1]; /* "" none; int32, int64 or dict with at most
					* BAM_TQ_MAX_GROUPS keys (from the directory's min/max) */
	uint32_t aggs;                 /* BAM_TQ_* to print (0: all) */
};

/* The paper's taxi queries, k = 0..5, over the TLC columns: Q0 filters trip_distance to
 * [BAM_TQ_TAXI_LO, BAM_TQ_TAXI_HI) miles and aggregates it; Qk also reads the first k of
 * fare_amount, tip_amount, tolls_amount, total_amount, passenger_count at the matching
 * rows; Q5 groups by passenger_count (the fifth column: no extra column read). 0 or
 * -EINVAL (k > 5). */
#define BAM_TQ_TAXI_LO 9.0
#define BAM_TQ_TAXI_HI 12.0
BAM_API int bam_table_taxi_query(int k, struct bam_table_query *q);

struct bam_table_query_opts {
	const char *table;
	enum bam_table_mode mode;
	enum bam_target target;    /* AUTO: the GPU when there is one */
	const char *backend;       /* BAM mode (NULL: "emu"); size= added where the back end
				    * creates media */
	uint64_t cache_bytes;      /* BAM: 0 = 1/8 of the columns' bytes (at least 1 MiB, at
				    * most 4 GiB, at most the columns in whole lines) */
	uint32_t line;             /* BAM: cache line bytes (0: 4096) */
	uint32_t qpairs, ctrl_workers;
	uint64_t timeout_ms;
	double read_bw;            /* WHOLE_COLUMN: pace the file reads at this many bytes/s
				    * (0: as fast as the file reads), to model storage of
				    * that bandwidth beside the emulated devices of BAM mode */
	uint64_t chunk_bytes;      /* WHOLE_COLUMN / GPU: staging chunk (0: 64 MiB) */
	int verify;                /* compare every answer with the CPU reference */
	int quiet;
	uint32_t nq;
	const struct bam_table_query *q;
	const char *prog;          /* messages' prefix (NULL: "query") */
	bam_table_msg_fn msg;      /* progress and mismatches; NULL: stderr */
	void *msg_arg;
};

/* One column's aggregate over the matching rows (nulls not counted). */
struct bam_tq_stat {
	uint64_t count;
	double sum, min, max;      /* min/max 0 when count is 0 */
};

struct bam_tq_group {
	int64_t key;               /* the group column's value (dict: the code) */
	int null_key;              /* the rows whose group value is null */
	char label[64];            /* the key as text (dict: the string) */
	uint64_t rows;             /* matching rows in the group */
	struct bam_tq_stat col[BAM_TQ_MAX_COLS];
};

struct bam_tq_result {
	char name[16];
	uint32_t ncols;            /* 1 + the query's ncols: col[0] is the predicate column */
	char col_name[BAM_TQ_MAX_COLS][BAM_TABLE_NAME_MAX + 1];
	uint64_t rows, matched;
	double selectivity;        /* matched / rows */
	struct bam_tq_stat col[BAM_TQ_MAX_COLS];
	uint32_t ngroups;          /* groups with matching rows (0: not grouped) */
	struct bam_tq_group *groups;
	double load_s;             /* WHOLE_COLUMN: this query's columns read and copied */
	double compute_s;          /* the kernels and the answer's copy back */
	double e2e_s;              /* WHOLE_COLUMN: load + compute; others: compute */
	double rows_per_s;         /* rows / e2e_s */
	uint64_t bytes_requested;  /* bytes of the elements the kernels read */
	uint64_t bytes_read;       /* bytes read from storage (BAM: the arrays' counters;
				    * WHOLE_COLUMN: whole columns; HOST/GPU: 0) */
	double amplification;      /* bytes_read / bytes_requested */
	uint64_t col_requested[BAM_TQ_MAX_COLS + 1], col_read[BAM_TQ_MAX_COLS + 1]; /* per
				    * column read (the group column last when separate) */
	int verified;              /* 1 equal to the reference, 0 not checked, -1 differs */
};

struct bam_table_run_result {
	uint32_t nq;
	struct bam_tq_result *q;   /* [nq] */
	uint64_t rows;
	double place_s;            /* BAM: writing the columns onto the media; HOST/GPU: loading
				    * them once (not in any e2e_s) */
	double setup_s;            /* BAM: context, cache and arrays */
	uint64_t cache_bytes;
	uint32_t line;
	int on_gpu;
	char backend_desc[1280];
	int refused;               /* a usage error (exit status 2) */
};

/* Run opts->q[0 .. nq) on opts->table; *res is zeroed first (free it with
 * bam_table_run_result_free whatever the return). 0 when every query ran (a result
 * that differs from the reference: verified -1), or a negative errno with the reason in
 * err: -EINVAL (a query or option refused: res->refused), -ENOMEM, -ENODEV, -EIO,
 * -EBADMSG, and the errors of bam_ctx_open, bam_cache_create and the kernels' reads. */
BAM_API int bam_table_query_run(const struct bam_table_query_opts *opts, struct bam_table_run_result *res, char *err,
				size_t errlen);
BAM_API void bam_table_run_result_free(struct bam_table_run_result *res);

BAM_EXTERN_C_END

#endif /* BAM_TABLE_QUERY_H */
