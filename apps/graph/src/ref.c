/* SPDX-License-Identifier: MIT */
/*
 * ref.c - CPU reference algorithms on a host-memory CSR: BFS levels and weakly
 * connected components, plus the BaM paper's BFS source selection. They favour being
 * obviously right over being fast (single-threaded), since they are the oracle the GPU
 * and CPU-target kernels are checked against; both stay O(n + m).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

static int ref_check(const struct bam_csr *g)
{
	if (!g || (g->id_bytes != 4 && g->id_bytes != 8) || !g->offsets ||
	    (g->n_edges && !g->edges))
		return -EINVAL;
	return 0;
}

int bam_ref_bfs(const struct bam_csr *g, uint64_t source, uint32_t *level, uint32_t *n_levels)
{
	uint64_t n, head = 0, tail = 0, *queue;
	uint32_t max_level = 0;

	if (ref_check(g) || !level || source >= g->n_vertices)
		return -EINVAL;
	n = g->n_vertices;
	queue = malloc((size_t)n * sizeof(*queue));
	if (!queue)
		return -ENOMEM;
	for (uint64_t v = 0; v < n; v++)
		level[v] = BAM_BFS_UNREACHED;
	/* A FIFO queue visits the graph level by level: every vertex of level L is dequeued
	 * before any of level L+1, which gives the same levels as frontier expansion. */
	level[source] = 0;
	queue[tail++] = source;
	while (head < tail) {
		uint64_t u = queue[head++];
		uint32_t next = level[u] + 1;
		for (uint64_t i = g->offsets[u]; i < g->offsets[u + 1]; i++) {
			uint64_t w = bam_csr_edge(g, i);
			if (w >= n) {
				free(queue);
				return -EINVAL;
			}
			if (level[w] == BAM_BFS_UNREACHED) {
				level[w] = next;
				if (next > max_level)
					max_level = next;
				queue[tail++] = w;
			}
		}
	}
	free(queue);
	if (n_levels)
		*n_levels = max_level + 1;
	return 0;
}

/* Union-find root with path halving (Tarjan & van Leeuwen 1984). */
static inline uint64_t uf_find(uint64_t *parent, uint64_t x)
{
	while (parent[x] != x) {
		parent[x] = parent[parent[x]];
		x = parent[x];
	}
	return x;
}

int bam_ref_cc(const struct bam_csr *g, uint64_t *label, uint64_t *n_components)
{
	uint64_t n, *parent, count = 0;
	uint8_t *rank;

	if (ref_check(g) || !label)
		return -EINVAL;
	n = g->n_vertices;
	parent = malloc((size_t)n * sizeof(*parent) + 1);
	rank = calloc((size_t)n + 1, 1);
	if (!parent || !rank) {
		free(parent);
		free(rank);
		return -ENOMEM;
	}
	for (uint64_t v = 0; v < n; v++)
		parent[v] = v;
	/* Union by rank keeps trees O(log n) deep; with path halving, O(m α(n)) in all. */
	for (uint64_t u = 0; u < n; u++) {
		for (uint64_t i = g->offsets[u]; i < g->offsets[u + 1]; i++) {
			uint64_t w = bam_csr_edge(g, i), ru, rw;
			if (w >= n) {
				free(parent);
				free(rank);
				return -EINVAL;
			}
			ru = uf_find(parent, u);
			rw = uf_find(parent, w);
			if (ru == rw)
				continue;
			if (rank[ru] < rank[rw]) {
				parent[ru] = rw;
			} else {
				parent[rw] = ru;
				if (rank[ru] == rank[rw])
					rank[ru]++;
			}
		}
	}
	/* Roots are arbitrary; relabel each component by its smallest vertex. label[]
	 * holds the roots first; parent[] is then reused as root -> smallest vertex, set
	 * by the first (so smallest) v met in ascending order. */
	for (uint64_t v = 0; v < n; v++)
		label[v] = uf_find(parent, v);
	for (uint64_t v = 0; v < n; v++)
		parent[v] = UINT64_MAX;
	for (uint64_t v = 0; v < n; v++) {
		uint64_t r = label[v];
		if (parent[r] == UINT64_MAX) {
			parent[r] = v;
			count++;
		}
		label[v] = parent[r];
	}
	free(parent);
	free(rank);
	if (n_components)
		*n_components = count;
	return 0;
}

/* A small open-addressing set of vertex ids (for distinctness of the draws). */
struct id_set {
	uint64_t *slot; /* UINT64_MAX = empty */
	uint64_t mask;
};

static int id_set_insert(struct id_set *s, uint64_t v)
{
	uint64_t h = gr_mix64(v) & s->mask;

	while (s->slot[h] != UINT64_MAX) {
		if (s->slot[h] == v)
			return 0;
		h = (h + 1) & s->mask;
	}
	s->slot[h] = v;
	return 1;
}

int bam_graph_pick_sources(const struct bam_csr *g, uint32_t count, uint64_t seed,
			   uint64_t *out, uint32_t *n_out)
{
	uint64_t n, eligible = 0, state, size = 2;
	struct id_set set;
	uint32_t got = 0;

	if (ref_check(g) || !out || !n_out || count == 0)
		return -EINVAL;
	*n_out = 0;
	n = g->n_vertices;
	for (uint64_t v = 0; v < n; v++)
		eligible += g->offsets[v + 1] - g->offsets[v] >= 2;
	if (eligible <= count) {
		for (uint64_t v = 0; v < n; v++)
			if (g->offsets[v + 1] - g->offsets[v] >= 2)
				out[got++] = v;
		*n_out = got;
		return 0;
	}
	state = gr_mix64(seed ^ 0x736f757263657321ull); /* "sources!" */
	if (eligible < n / 64) {
		/* Rare candidates: list them and take a seeded partial Fisher-Yates. */
		uint64_t *cand = malloc((size_t)eligible * sizeof(*cand)), k = 0;
		if (!cand)
			return -ENOMEM;
		for (uint64_t v = 0; v < n; v++)
			if (g->offsets[v + 1] - g->offsets[v] >= 2)
				cand[k++] = v;
		for (uint32_t i = 0; i < count; i++) {
			uint64_t j = i + gr_uniform(&state, eligible - i), x = cand[i];
			cand[i] = cand[j];
			cand[j] = x;
			out[i] = cand[i];
		}
		free(cand);
		*n_out = count;
		return 0;
	}
	/* Common case: draw uniform ids, keep new ones with out-degree >= 2 (expected
	 * n/eligible <= 64 draws per source). */
	while (size < 2 * (uint64_t)count)
		size *= 2;
	set.mask = size - 1;
	set.slot = malloc((size_t)size * sizeof(*set.slot));
	if (!set.slot)
		return -ENOMEM;
	memset(set.slot, 0xff, (size_t)size * sizeof(*set.slot));
	while (got < count) {
		uint64_t v = gr_uniform(&state, n);
		if (g->offsets[v + 1] - g->offsets[v] >= 2 && id_set_insert(&set, v))
			out[got++] = v;
	}
	free(set.slot);
	*n_out = got;
	return 0;
}
