/* SPDX-License-Identifier: MIT */
/*
 * query_ref.c - the CPU reference of a query: one sequential pass over the columns read
 * from the file in chunks (no bam, no kernels), the same null rules, sums in row order.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "query_internal.h"

static void add(struct bam_tq_stat *s, double v)
{
	if (!s->count || v < s->min)
		s->min = v;
	if (!s->count || v > s->max)
		s->max = v;
	s->count++;
	s->sum += v;
}

int tq_reference(int fd, const struct bam_table *t, const struct tq_plan *p, struct bam_tq_result *ref,
		 double *abs_sum, char *err, size_t errlen)
{
	memset(ref, 0, sizeof(*ref));
	const uint32_t nc = p->ncols, ng = p->ngroups;
	const uint64_t chunk = 1u << 20; /* rows */
	struct bam_tq_stat *gs = calloc((uint64_t)ng * nc, sizeof(*gs));
	uint8_t *buf[BAM_TQ_MAX_COLS + 1] = {0};
	int cols[BAM_TQ_MAX_COLS + 1];
	uint32_t ncr = 0;
	for (uint32_t j = 0; j < nc; j++)
		cols[ncr++] = p->col[j];
	if (p->gcol >= 0)
		cols[ncr++] = p->gcol;
	int rc = gs ? 0 : -ENOMEM;
	for (uint32_t k = 0; k < ncr && !rc; k++)
		if (!(buf[k] = malloc(chunk * 8)))
			rc = -ENOMEM;
	for (uint32_t j = 0; j < nc; j++)
		abs_sum[j] = 0;
	for (uint64_t r0 = 0; r0 < t->rows && !rc; r0 += chunk) {
		const uint64_t n = t->rows - r0 < chunk ? t->rows - r0 : chunk;
		for (uint32_t k = 0; k < ncr && !rc; k++) {
			const struct bam_table_col *c = &t->cols[cols[k]];
			rc = tq_pread(fd, buf[k], n * c->elem_size, c->offset + r0 * c->elem_size);
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
					snprintf(err, errlen, "row %llu: group value %lld outside the directory's range",
						 (unsigned long long)(r0 + i), (long long)iv[k]);
					break;
				} else
					g = (uint32_t)(iv[k] - p->gmin);
			}
			for (uint32_t j = 0; j < nc; j++)
				if (!nul[j]) {
					add(&gs[g * nc + j], v[j]);
					abs_sum[j] += fabs(v[j]);
				}
		}
	}
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
	for (uint32_t k = 0; k < ncr; k++)
		free(buf[k]);
	free(gs);
	return rc;
}
