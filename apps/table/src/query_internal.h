/* SPDX-License-Identifier: MIT */
/* Internals of the table queries (query.c, query_ref.c). Not API. */
#ifndef BAM_TABLE_QUERY_INTERNAL_H
#define BAM_TABLE_QUERY_INTERNAL_H
#include "bam/table_query.h"
#include "table_kern.h"

/* A query resolved against a table's directory. */
struct tq_plan {
	const struct bam_table_query *q;
	uint32_t ncols;              /* 1 + q->ncols */
	int col[BAM_TQ_MAX_COLS];    /* table column of each aggregated column */
	int gcol;                    /* group column, or -1 */
	int gdep;                    /* its index in col[], or -1 (read separately) */
	int64_t gmin;
	uint32_t ngroups;            /* 1, or keys + 1 (nulls last) */
};
int tq_resolve(const struct bam_table *t, const struct bam_table_query *q, struct tq_plan *p, char *err, size_t errlen);
int tq_pread(int fd, void *buf, uint64_t len, uint64_t off);
/* host threads for CPU-side work: the online CPUs, at most 64 */
uint32_t tq_cpu_workers(void);
void tq_stat_merge(struct bam_tq_stat *d, const struct bam_tq_stat *s);
void tq_group_label(const struct bam_table *t, const struct tq_plan *p, uint32_t g, struct bam_tq_group *gr);
/* The CPU reference: the columns read from the file in chunks by host threads, each
 * summing a contiguous share of the rows in row order, the shares merged in row order
 * (query_ref.c). ref->groups allocated (free it); abs_sum[j]: the sum of |value| of column j
 * over the matching rows (the scale of the sums' tolerance). */
int tq_reference(int fd, const struct bam_table *t, const struct tq_plan *p, struct bam_tq_result *ref,
		 double *abs_sum, char *err, size_t errlen);
#endif
