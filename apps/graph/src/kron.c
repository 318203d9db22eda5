/* SPDX-License-Identifier: MIT */
/*
 * kron.c - the Graph500 Kronecker generator (Graph500 specification 3.0, section 3
 * "Graph Generation", and its reference kronecker_generator.m).
 *
 * Arc i (0 <= i < m = edge_factor * 2^scale) is drawn as in the reference: for each of
 * the scale bit levels, the source bit is 1 with probability C+D and the destination bit
 * is 1 with probability B/(A+B) (source bit 0) or D/(C+D) (source bit 1); no noise is
 * added to the initiator (the reference C generator's SPK_NOISE_LEVEL is 0, and the
 * Octave reference has none). Both endpoints are then relabelled by a seeded permutation
 * of 0..n-1: the reference C generator's scramble() (generator/graph_generator.c), a
 * bijection on scale-bit integers built from an add, two odd multiplies and two bit
 * reversals, used there instead of a stored random permutation "because applying it at
 * scale is too expensive" - here too: it needs no memory and no cache miss per arc. The
 * reference's second shuffle, of the arc order, does not matter to a CSR and is not done.
 *
 * Why counter-based: the random bits of arc i are splitmix64 outputs number
 * 64*i + level + 1 of a stream keyed by the seed (a pure function of seed, i and level),
 * so the builder's passes regenerate exactly the same arcs instead of storing them, on
 * any number of threads, and the output does not depend on the thread count.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

#define KRON_GOLDEN 0x9e3779b97f4a7c15ull
#define KRON_BLOCK (1u << 20) /* arcs between progress updates */

struct kron {
	struct gr_builder *b;
	uint32_t scale;
	uint64_t m;
	uint64_t key;
	uint64_t t_ab, t_a, t_c; /* thresholds on 32-bit uniforms */
	uint64_t val0, val1;     /* scramble() keys */
	int pass; /* 0 count, else scatter */
	unsigned threads;
	uint64_t done; /* arcs generated in this pass (atomic; progress only) */
	uint64_t loops[GR_MAX_THREADS];
	uint64_t placed[GR_MAX_THREADS];
};

static inline uint64_t bitrev64(uint64_t x)
{
	x = ((x >> 1) & 0x5555555555555555ull) | ((x & 0x5555555555555555ull) << 1);
	x = ((x >> 2) & 0x3333333333333333ull) | ((x & 0x3333333333333333ull) << 2);
	x = ((x >> 4) & 0x0f0f0f0f0f0f0f0full) | ((x & 0x0f0f0f0f0f0f0f0full) << 4);
	return __builtin_bswap64(x);
}

/* Graph500 reference scramble(): a bijection of [0, 2^scale). The low `scale` bits of
 * (v + c) * odd depend only on the low `scale` bits of v, so each step permutes
 * scale-bit values; a multiply mixes only upwards, so the bits are reversed (and kept
 * at the bottom) between the two multiplies to mix both ways. */
static inline uint64_t kron_scramble(const struct kron *k, uint64_t v)
{
	v += k->val0 + k->val1;
	v *= k->val0 | 0x4519840211493211ull;
	v = bitrev64(v) >> (64 - k->scale);
	v *= k->val1 | 0x3050852102c843a5ull;
	v = bitrev64(v) >> (64 - k->scale);
	return v;
}

static inline void kron_arc(const struct kron *k, uint64_t i, uint64_t *u, uint64_t *v)
{
	uint64_t a = 0, b = 0, ctr = k->key + (i * 64 + 1) * KRON_GOLDEN;

	for (uint32_t l = 0; l < k->scale; l++, ctr += KRON_GOLDEN) {
		uint64_t r = gr_mix64(ctr);
		uint64_t ib = (r >> 32) >= k->t_ab;
		uint64_t jb = (r & 0xffffffffu) >= (ib ? k->t_c : k->t_a);
		a |= ib << l;
		b |= jb << l;
	}
	*u = kron_scramble(k, a);
	*v = kron_scramble(k, b);
}

static void kron_worker(void *arg, unsigned t)
{
	struct kron *k = arg;
	struct gr_builder *b = k->b;
	uint64_t i0 = k->m / k->threads * t + (t < k->m % k->threads ? t : k->m % k->threads);
	uint64_t i1 = i0 + k->m / k->threads + (t < k->m % k->threads ? 1 : 0);
	uint64_t loops = 0, placed = 0, u, v;

	for (uint64_t i = i0; i < i1;) {
		uint64_t start = i, end = i1 - i > KRON_BLOCK ? i + KRON_BLOCK : i1;
		if (k->pass == 0) {
			for (; i < end; i++) {
				kron_arc(k, i, &u, &v);
				gr_count_atomic(b, u, v, &loops);
			}
		} else {
			for (; i < end; i++) {
				kron_arc(k, i, &u, &v);
				gr_scatter_atomic(b, u, v, &placed);
			}
		}
		uint64_t all = __atomic_add_fetch(&k->done, end - start, __ATOMIC_RELAXED);
		if (t == 0) {
			if (k->pass == 0)
				gr_progress(b, 0, "pass 1 (count degrees): %.1f%% of %llu arcs",
					    100.0 * (double)all / (double)k->m, (unsigned long long)k->m);
			else
				gr_progress(b, 0, "pass %d (place arcs, chunk %d/%u): %.1f%%", k->pass + 1,
					    k->pass, b->n_chunks, 100.0 * (double)all / (double)k->m);
		}
	}
	k->loops[t] = loops;
	k->placed[t] = placed;
}

static void kron_run(struct kron *k)
{
	k->done = 0;
	gr_parallel(k->threads, kron_worker, k);
}

static uint64_t kron_threshold(double p)
{
	double x = p * 4294967296.0;

	if (x <= 0)
		return 0;
	if (x >= 4294967296.0)
		return 4294967296ull;
	return (uint64_t)llround(x);
}

int bam_graph_generate_kron(const char *output, const struct bam_kron_params *p,
			    const struct bam_graph_build_opts *o,
			    struct bam_graph_build_stats *st, char *err, size_t errlen)
{
	struct gr_builder b;
	struct kron *k;
	double A, B, C, D;
	char source[BAM_GRAPH_SOURCE_LEN];
	uint64_t n, loops = 0;
	int rc;

	if (st)
		memset(st, 0, sizeof(*st));
	if (!output || !p) {
		gr_err(err, errlen, "output path and parameters are required");
		return -EINVAL;
	}
	if (p->scale < 1 || p->scale > 40) {
		gr_err(err, errlen, "scale %u out of range 1..40", p->scale);
		return -EINVAL;
	}
	if (p->edge_factor < 1 || p->edge_factor >= (1ull << (62 - p->scale))) {
		gr_err(err, errlen, "edge factor %u out of range", p->edge_factor);
		return -EINVAL;
	}
	A = p->a;
	B = p->b;
	C = p->c;
	if (A == 0 && B == 0 && C == 0) {
		A = 0.57;
		B = 0.19;
		C = 0.19;
	}
	D = 1.0 - A - B - C;
	if (!(A > 0 && B >= 0 && C >= 0 && D > -1e-12 && A + B < 1)) {
		gr_err(err, errlen, "initiator A=%g B=%g C=%g D=%g invalid (need A > 0, B, C, D >= 0, A+B < 1, sum 1)",
		       A, B, C, D);
		return -EINVAL;
	}
	if (D < 0)
		D = 0;
	n = 1ull << p->scale;
	if (o && o->id_bytes == 4 && n > UINT32_MAX) {
		gr_err(err, errlen, "scale %u has %llu vertices: needs 8-byte ids", p->scale,
		       (unsigned long long)n);
		return -ERANGE;
	}
	rc = gr_builder_init(&b, output, o, "generate", err, errlen);
	if (rc)
		return rc;
	k = calloc(1, sizeof(*k));
	if (!k) {
		gr_err(err, errlen, "out of memory");
		gr_builder_free(&b);
		return -ENOMEM;
	}
	k->b = &b;
	k->scale = p->scale;
	k->m = (uint64_t)p->edge_factor << p->scale;
	k->key = gr_mix64(p->seed ^ 0x6b726f6e67726170ull); /* "krongrap" */
	k->val0 = gr_mix64(p->seed ^ 0x7065726d75746530ull); /* "permute0" */
	k->val1 = gr_mix64(p->seed ^ 0x7065726d75746531ull); /* "permute1" */
	k->t_ab = kron_threshold(A + B);
	k->t_a = kron_threshold(A / (A + B));
	k->t_c = kron_threshold(C / (C + D));
	k->threads = b.threads;
	if ((uint64_t)k->threads > k->m)
		k->threads = (unsigned)k->m;

	rc = gr_builder_set_n(&b, n, err, errlen);
	if (rc)
		goto out;
	gr_progress(&b, 1, "scale %u, edge factor %u: %llu vertices, %llu arcs, seed %llu, %u thread(s)",
		    p->scale, p->edge_factor, (unsigned long long)n, (unsigned long long)k->m,
		    (unsigned long long)p->seed, k->threads);

	/* Pass 1: degrees. */
	k->pass = 0;
	kron_run(k);
	for (unsigned t = 0; t < k->threads; t++)
		loops += k->loops[t];
	b.self_loops = loops;
	rc = gr_plan(&b, err, errlen);
	if (rc)
		goto out;
	/* One regeneration per chunk. */
	for (uint32_t c = 0; c < b.n_chunks; c++) {
		gr_chunk_begin(&b, c);
		k->pass = (int)c + 1;
		kron_run(k);
		for (unsigned t = 0; t < k->threads; t++)
			b.placed += k->placed[t];
		rc = gr_chunk_end(&b, err, errlen);
		if (rc)
			goto out;
	}
	snprintf(source, sizeof(source),
		 "kron graph500 scale=%u edge-factor=%u seed=%llu A=%.4g B=%.4g C=%.4g D=%.4g noise=0 scrambled",
		 p->scale, p->edge_factor, (unsigned long long)p->seed, A, B, C, D);
	rc = gr_finish(&b, 0, source, st, err, errlen);
	if (!rc && st) {
		st->input_arcs = k->m;
		st->passes = 1 + b.n_chunks;
	}
	if (!rc)
		gr_progress(&b, 1, "wrote %s: %llu vertices, %llu arcs", output,
			    (unsigned long long)n, (unsigned long long)b.out_edges);
out:
	free(k);
	gr_builder_free(&b);
	return rc;
}
