/* SPDX-License-Identifier: MIT */
/*
 * query_ref.c - the CPU reference of a query: a pass over the columns read from the file
 * in chunks with pread (no bam, no kernels), the same null rules. The rows are split into
 * contiguous shares, one host thread each (bam_cpu_launch, tq_cpu_workers); each share sums its
 * rows in row order and the shares are merged in row order.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "query_internal.h"

#define REF_CHUNK ((uint64_t)1 << 16) /* rows per pread of a column (the unit of the shares) */

static void add(struct bam_tq_stat *s, double v)
{
	if (!s->count || v < s->min)
		s->min = v;
	if (!s->count || v > s->max)
		s->max = v;
	s->count++;
	s->sum += v;
}

/* One thread's share: rows [r0, r1), chunk by chunk, into its own statistics. */
struct ref_part {
	int fd;
	const struct bam_table *t;
	const struct tq_plan *p;
	uint64_t r0, r1;
	struct bam_tq_stat *gs;              /* ngroups x ncols */
	double abs_sum[BAM_TQ_MAX_COLS];
	int rc;
	uint64_t bad_row;                    /* with rc == -ERANGE: the row and its group value */
	int64_t bad_val;
};

/* bam_cpu_launch's function: share i of the array of shares at arg */
static void ref_pass(void *arg, uint64_t share)
{
	struct ref_part *P = (struct ref_part *)arg + share;
	const struct bam_table *t = P->t;
	const struct tq_plan *p = P->p;
	const uint32_t nc = p->ncols, ng = p->ngroups;
	uint8_t *buf[BAM_TQ_MAX_COLS + 1] = {0};
	int cols[BAM_TQ_MAX_COLS + 1];
	uint32_t ncr = 0;
	for (uint32_t j = 0; j < nc; j++)
		cols[ncr++] = p->col[j];
	if (p->gcol >= 0)
		cols[ncr++] = p->gcol;
	int rc = 0;
	for (uint32_t k = 0; k < ncr && !rc; k++)
		if (!(buf[k] = malloc(REF_CHUNK * 8)))
			rc = -ENOMEM;
	for (uint64_t r0 = P->r0; r0 < P->r1 && !rc; r0 += REF_CHUNK) {
		const uint64_t n = P->r1 - r0 < REF_CHUNK ? P->r1 - r0 : REF_CHUNK;
		for (uint32_t k = 0; k < ncr && !rc; k++) {
			const struct bam_table_col *c = &t->cols[cols[k]];
			rc = tq_pread(P->fd, buf[k], n * c->elem_size, c->offset + r0 * c->elem_size);
		}
		for (uint64_t i = 0; i < n && !rc; i++) {
			double v[BAM_TQ_MAX_COLS + 1];
			int64_t iv[BAM_TQ_MAX_COLS + 1];
			int nul[BAM_TQ_MAX_COLS + 1] = {0};
			for (uint32_t k = 0; k < ncr; k++) {
				const struct bam_table_col *c = &t->cols[cols[k]];
				uint64_t bits = 0;
				if (c->elem_size == 4) {
					uint32_t w;
					memcpy(&w, buf[k] + i * 4, 4);
					bits = w;
				} else {
					memcpy(&bits, buf[k] + i * 8, 8);
				}
				nul[k] = tq_decode(c->type, bits, &v[k], &iv[k]);
			}
			if (nul[0] || !(v[0] >= p->q->lo && v[0] < p->q->hi))
				continue;
			uint32_t g = 0;
			if (p->gcol >= 0) {
				const uint32_t k = ncr - 1;
				if (nul[k])
					g = ng - 1;
				else if (iv[k] < p->gmin || (uint64_t)(iv[k] - p->gmin) >= ng - 1) {
					rc = -ERANGE;
					P->bad_row = r0 + i;
					P->bad_val = iv[k];
					break;
				} else
					g = (uint32_t)(iv[k] - p->gmin);
			}
			for (uint32_t j = 0; j < nc; j++)
				if (!nul[j]) {
					add(&P->gs[g * nc + j], v[j]);
					P->abs_sum[j] += fabs(v[j]);
				}
		}
	}
	for (uint32_t k = 0; k < ncr; k++)
		free(buf[k]);
	P->rc = rc;
}

int tq_reference(int fd, const struct bam_table *t, const struct tq_plan *p, struct bam_tq_result *ref,
		 double *abs_sum, char *err, size_t errlen)
{
	memset(ref, 0, sizeof(*ref));
	if (errlen)
		err[0] = 0;
	const uint32_t nc = p->ncols, ng = p->ngroups;
	const uint64_t chunks = (t->rows + REF_CHUNK - 1) / REF_CHUNK;
	uint64_t np = tq_cpu_workers();
	if (np > chunks)
		np = chunks ? chunks : 1;
	struct ref_part *part = calloc(np, sizeof(*part));
	struct bam_tq_stat *gs = calloc(np * ng * nc, sizeof(*gs));
	int rc = part && gs ? 0 : -ENOMEM;
	for (uint64_t i = 0; i < np && !rc; i++) {
		struct ref_part *P = &part[i];
		P->fd = fd;
		P->t = t;
		P->p = p;
		P->r0 = chunks * i / np * REF_CHUNK;
		P->r1 = i + 1 == np ? t->rows : chunks * (i + 1) / np * REF_CHUNK;
		P->gs = gs + i * ng * nc;
	}
	if (!rc && (rc = bam_cpu_launch(np, (uint32_t)np, ref_pass, part)))
		snprintf(err, errlen, "could not start %llu host threads", (unsigned long long)np);
	for (uint32_t j = 0; j < nc; j++)
		abs_sum[j] = 0;
	if (!rc) {
		/* the first failed share in row order names the error */
		for (uint64_t i = 0; i < np && !rc; i++)
			if ((rc = part[i].rc) == -ERANGE)
				snprintf(err, errlen, "row %llu: group value %lld outside the directory's range",
					 (unsigned long long)part[i].bad_row, (long long)part[i].bad_val);
		for (uint64_t i = 1; i < np && !rc; i++)
			for (uint64_t k = 0; k < (uint64_t)ng * nc; k++)
				tq_stat_merge(&gs[k], &part[i].gs[k]);
		for (uint64_t i = 0; i < np && !rc; i++)
			for (uint32_t j = 0; j < nc; j++)
				abs_sum[j] += part[i].abs_sum[j];
	}
	free(part);
	if (rc && err[0] == 0)
		snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : "reading the table failed");
	if (!rc) {
		ref->ncols = nc;
		for (uint32_t g = 0; g < ng; g++)
			for (uint32_t j = 0; j < nc; j++)
				tq_stat_merge(&ref->col[j], &gs[g * nc + j]);
		ref->matched = ref->col[0].count;
		ref->rows = t->rows;
		if (p->gcol >= 0) {
			ref->groups = calloc(ng, sizeof(*ref->groups));
			if (!ref->groups)
				rc = -ENOMEM;
			for (uint32_t g = 0; !rc && g < ng; g++) {
				if (!gs[g * nc].count)
					continue;
				struct bam_tq_group *gr = &ref->groups[ref->ngroups++];
				tq_group_label(t, p, g, gr);
				gr->rows = gs[g * nc].count;
				for (uint32_t j = 0; j < nc; j++)
					gr->col[j] = gs[g * nc + j];
			}
		}
	}
	free(gs);
	return rc;
}
