/* SPDX-License-Identifier: MIT */
/*
 * generate.c - bam_table_generate: a table of any row count made by seeded resampling of
 * whole rows of a real sample (the sample's CSV read into memory). Rows are written in
 * chunks of TG_CHUNK rows; threads take chunks in turn, pick the chunk's sample rows once
 * and write every column's slice of the chunk with pwrite; each chunk's CRC-32, null
 * count, min and max per column are kept and combined in order at the end
 * (crc32_combine), so the file is the same whatever the thread count.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "table_internal.h"

#define TG_CHUNK (1u << 20) /* rows per chunk */

struct chunk_res {
	uint32_t crc;
	uint64_t nulls;
	double min, max;
	int any;
};

struct gen {
	const struct bam_table_generate_opts *o;
	struct tb_mem m;
	uint32_t ncols;
	int *src;                /* [ncols] the sample column of each output column */
	uint8_t **isnull;        /* [ncols][sample rows] */
	double **val;            /* [ncols][sample rows] as double (min/max) */
	struct tw w;
	uint64_t nchunks;
	uint64_t next;           /* next chunk to take (atomic) */
	uint64_t done;           /* chunks written (atomic) */
	struct chunk_res *res;   /* [nchunks][ncols] */
	int rc;                  /* first error (atomic) */
	char err[512];
	pthread_mutex_t lock;
	double t0, t_last;
};

static inline uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void *worker(void *arg)
{
	struct gen *G = arg;
	const uint64_t S = G->m.t.rows, N = G->o->rows;
	uint32_t *idx = malloc(TG_CHUNK * sizeof(uint32_t));
	uint8_t *buf = malloc((uint64_t)TG_CHUNK * 8);
	if (!idx || !buf) {
		__atomic_store_n(&G->rc, -ENOMEM, __ATOMIC_RELAXED);
		free(idx);
		free(buf);
		return NULL;
	}
	const uint64_t key = splitmix64(G->o->seed ^ 0x7461626c65ull); /* "table" */
	for (;;) {
		if (__atomic_load_n(&G->rc, __ATOMIC_RELAXED))
			break;
		uint64_t k = __atomic_fetch_add(&G->next, 1, __ATOMIC_RELAXED);
		if (k >= G->nchunks)
			break;
		const uint64_t r0 = k * TG_CHUNK, n = N - r0 < TG_CHUNK ? N - r0 : TG_CHUNK;
		for (uint64_t i = 0; i < n; i++)
			idx[i] = (uint32_t)(splitmix64(key + r0 + i) % S);
		for (uint32_t c = 0; c < G->ncols; c++) {
			const struct bam_table_col *col = &G->w.t.cols[c];
			const uint32_t es = col->elem_size;
			const uint8_t *src = G->m.data[G->src[c]];
			const uint8_t *isnull = G->isnull[c];
			const double *val = G->val[c];
			struct chunk_res cr = {0};
			if (es == 4) {
				uint32_t *d = (uint32_t *)buf;
				const uint32_t *s = (const uint32_t *)src;
				for (uint64_t i = 0; i < n; i++)
					d[i] = s[idx[i]];
			} else {
				uint64_t *d = (uint64_t *)buf;
				const uint64_t *s = (const uint64_t *)src;
				for (uint64_t i = 0; i < n; i++)
					d[i] = s[idx[i]];
			}
			double mn = INFINITY, mx = -INFINITY;
			for (uint64_t i = 0; i < n; i++) {
				const uint32_t j = idx[i];
				if (isnull[j]) {
					cr.nulls++;
					continue;
				}
				mn = val[j] < mn ? val[j] : mn;
				mx = val[j] > mx ? val[j] : mx;
			}
			cr.any = cr.nulls < n;
			cr.min = mn;
			cr.max = mx;
			cr.crc = (uint32_t)crc32(0, buf, (uInt)(n * es));
			char e[256];
			int rc = tw_pwrite(&G->w, buf, n * es, col->offset + r0 * es, e, sizeof(e));
			if (rc) {
				pthread_mutex_lock(&G->lock);
				if (!G->rc) {
					G->rc = rc;
					snprintf(G->err, sizeof(G->err), "%s", e);
				}
				pthread_mutex_unlock(&G->lock);
				break;
			}
			G->res[k * G->ncols + c] = cr;
		}
		uint64_t d = __atomic_add_fetch(&G->done, 1, __ATOMIC_RELAXED);
		if (!G->o->quiet) {
			double t = tb_now();
			pthread_mutex_lock(&G->lock);
			if (t - G->t_last >= 2.0) {
				G->t_last = t;
				char line[256];
				snprintf(line, sizeof(line), "generate: %llu of %llu rows (%.0f%%), %.1f s",
					 (unsigned long long)(d * TG_CHUNK < N ? d * TG_CHUNK : N), (unsigned long long)N,
					 100.0 * (double)d / (double)G->nchunks, t - G->t0);
				if (G->o->msg)
					G->o->msg(G->o->msg_arg, line);
				else
					fprintf(stderr, "%s\n", line);
			}
			pthread_mutex_unlock(&G->lock);
		}
	}
	free(idx);
	free(buf);
	return NULL;
}

/* the value of sample row j of column col as double, and whether it is null */
static double sample_value(const struct bam_table_col *col, const uint8_t *data, uint64_t j, int *null)
{
	switch (col->type) {
	case BAM_COL_INT32:
	case BAM_COL_DICT: {
		int32_t v;
		memcpy(&v, data + j * 4, 4);
		*null = v == TB_NULL_I32;
		return (double)v;
	}
	case BAM_COL_INT64:
	case BAM_COL_TIMESTAMP: {
		int64_t v;
		memcpy(&v, data + j * 8, 8);
		*null = v == TB_NULL_I64;
		return (double)v;
	}
	case BAM_COL_FLOAT32: {
		float v;
		memcpy(&v, data + j * 4, 4);
		*null = isnan(v);
		return (double)v;
	}
	default: {
		double v;
		memcpy(&v, data + j * 8, 8);
		*null = isnan(v);
		return v;
	}
	}
}

int bam_table_generate(const char *out_path, const struct bam_table_generate_opts *o,
		       struct bam_table_generate_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof(*res));
	if (!o->rows) {
		tb_err(err, errlen, "generate: --rows must be at least 1");
		return -EINVAL;
	}
	struct gen *G = calloc(1, sizeof(*G));
	if (!G)
		return -ENOMEM;
	G->o = o;
	G->w.fd = -1;
	pthread_mutex_init(&G->lock, NULL);
	int rc = tb_csv_load(o->sample, o->schema, &G->m, err, errlen);
	struct bam_table t;
	memset(&t, 0, sizeof(t));
	if (rc)
		goto out;
	if (G->m.t.rows > UINT32_MAX) {
		tb_err(err, errlen, "%s: more than 2^32 sample rows", o->sample);
		rc = -EINVAL;
		goto out;
	}
	/* the output's columns: all, or those named, in that order */
	G->src = calloc(G->m.t.ncols + BAM_TABLE_MAX_COLS, sizeof(int));
	if (!G->src) {
		rc = -ENOMEM;
		goto out;
	}
	if (o->columns && *o->columns) {
		char *s = strdup(o->columns), *save = NULL;
		for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			int c = bam_table_col_find(&G->m.t, tok);
			if (c < 0) {
				tb_err(err, errlen, "--columns: %s has no column '%s'", o->sample, tok);
				rc = -EINVAL;
				break;
			}
			for (uint32_t k = 0; k < G->ncols; k++)
				if (G->src[k] == c) {
					tb_err(err, errlen, "--columns: '%s' named twice", tok);
					rc = -EINVAL;
				}
			if (rc)
				break;
			G->src[G->ncols++] = c;
		}
		free(s);
		if (rc)
			goto out;
	} else {
		for (uint32_t c = 0; c < G->m.t.ncols; c++)
			G->src[G->ncols++] = (int)c;
	}
	t.rows = o->rows;
	t.ncols = G->ncols;
	t.cols = calloc(G->ncols, sizeof(*t.cols));
	G->isnull = calloc(G->ncols, sizeof(*G->isnull));
	G->val = calloc(G->ncols, sizeof(*G->val));
	if (!t.cols || !G->isnull || !G->val) {
		rc = -ENOMEM;
		goto out;
	}
	const uint64_t S = G->m.t.rows;
	for (uint32_t c = 0; c < G->ncols; c++) {
		const struct bam_table_col *sc = &G->m.t.cols[G->src[c]];
		t.cols[c] = *sc;
		G->isnull[c] = malloc(S);
		G->val[c] = malloc(S * sizeof(double));
		if (!G->isnull[c] || !G->val[c]) {
			rc = -ENOMEM;
			goto out;
		}
		for (uint64_t j = 0; j < S; j++) {
			int nl;
			G->val[c][j] = sample_value(sc, G->m.data[G->src[c]], j, &nl);
			G->isnull[c][j] = (uint8_t)nl;
		}
	}
	if ((rc = tw_create(&G->w, out_path, &t, err, errlen)))
		goto out;
	G->nchunks = (o->rows + TG_CHUNK - 1) / TG_CHUNK;
	G->res = calloc(G->nchunks * G->ncols, sizeof(*G->res));
	if (!G->res) {
		rc = -ENOMEM;
		tw_abort(&G->w);
		goto out;
	}
	uint32_t nt = o->threads;
	if (!nt) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		nt = n > 0 ? (uint32_t)n : 1;
	}
	if (nt > G->nchunks)
		nt = (uint32_t)G->nchunks;
	if (nt > 256)
		nt = 256;
	G->t0 = G->t_last = tb_now();
	pthread_t th[256];
	uint32_t started = 0;
	for (; started < nt; started++)
		if (pthread_create(&th[started], NULL, worker, G))
			break;
	if (!started)
		worker(G);
	for (uint32_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	rc = G->rc;
	if (rc) {
		tb_err(err, errlen, "%s", G->err[0] ? G->err : strerror(-rc));
		tw_abort(&G->w);
		goto out;
	}
	for (uint32_t c = 0; c < G->ncols; c++) {
		struct bam_table_col *col = &G->w.t.cols[c];
		uLong crc = crc32(0, NULL, 0);
		uint64_t nulls = 0;
		int any = 0;
		double mn = 0, mx = 0;
		for (uint64_t k = 0; k < G->nchunks; k++) {
			const struct chunk_res *cr = &G->res[k * G->ncols + c];
			const uint64_t rows = k + 1 < G->nchunks ? TG_CHUNK : o->rows - k * TG_CHUNK;
			crc = crc32_combine(crc, cr->crc, (z_off_t)(rows * col->elem_size));
			nulls += cr->nulls;
			if (cr->any) {
				mn = !any || cr->min < mn ? cr->min : mn;
				mx = !any || cr->max > mx ? cr->max : mx;
				any = 1;
			}
		}
		col->crc32 = (uint32_t)crc;
		col->nulls = nulls;
		col->min = mn;
		col->max = mx;
	}
	res->output_bytes = G->w.t.file_bytes;
	rc = tw_commit(&G->w, err, errlen);
	res->s = tb_now() - G->t0;
	res->rows = o->rows;
	res->sample_rows = S;
	res->ncols = G->ncols;
	res->threads = nt;
out:
	for (uint32_t c = 0; c < G->ncols; c++) {
		if (G->isnull)
			free(G->isnull[c]);
		if (G->val)
			free(G->val[c]);
	}
	free(G->isnull);
	free(G->val);
	free(G->src);
	free(G->res);
	free(t.cols);
	tb_mem_free(&G->m);
	pthread_mutex_destroy(&G->lock);
	free(G);
	return rc;
}
