/* SPDX-License-Identifier: MIT */
/*
 * fuzz_graph.h - invariant checks of a loaded graph (struct bam_csr) shared by the
 * importer harnesses and the graph-file harness: the CSR shape, the guarantees the
 * header flags promise, and the CPU reference algorithms run on it.
 */
#ifndef BAM_FUZZ_GRAPH_H
#define BAM_FUZZ_GRAPH_H

#include <stdlib.h>
#include "bam/graph.h"
#include "fuzz_common.h"

/* Graphs larger than this are checked for shape only (the fuzz inputs are small). */
#define FZ_GRAPH_DEEP_MAX (1u << 16)

/* What bam_graph_load promises on any file it accepts: offsets[0] == 0, non-decreasing,
 * offsets[n] == n_edges, so every index derived from offsets is in bounds. Touches
 * every edge entry (an undersized edge buffer shows under AddressSanitizer). */
static inline void fz_check_csr_shape(const struct bam_csr *g)
{
	uint64_t sum = 0;

	FZ_CHECK(g->offsets != NULL && g->edges != NULL);
	FZ_CHECK(g->id_bytes == 4 || g->id_bytes == 8);
	FZ_CHECK(g->offsets[0] == 0);
	FZ_CHECK(g->offsets[g->n_vertices] == g->n_edges);
	for (uint64_t v = 0; v < g->n_vertices; v++)
		FZ_CHECK(g->offsets[v] <= g->offsets[v + 1]);
	for (uint64_t i = 0; i < g->n_edges; i++)
		sum += bam_csr_edge(g, i);
	(void)sum;
}

/* Does u's list hold v? (lists are ascending) */
static inline int fz_has_arc(const struct bam_csr *g, uint64_t u, uint64_t v)
{
	uint64_t lo = g->offsets[u], hi = g->offsets[u + 1];

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2, x = bam_csr_edge(g, mid);
		if (x == v)
			return 1;
		if (x < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* What bam_graph_verify promises on top of the shape: ids < n, lists ascending
 * (strictly with NO_DUPLICATES), no (v,v) with NO_SELF_LOOPS; and, checked here although
 * verify does not, SYMMETRIC: (u,v) stored <=> (v,u) stored. */
static inline void fz_check_csr_flags(const struct bam_csr *g, uint32_t flags)
{
	fz_check_csr_shape(g);
	for (uint64_t v = 0; v < g->n_vertices; v++) {
		for (uint64_t i = g->offsets[v]; i < g->offsets[v + 1]; i++) {
			uint64_t id = bam_csr_edge(g, i);
			FZ_CHECK(id < g->n_vertices);
			if (i > g->offsets[v]) {
				uint64_t prev = bam_csr_edge(g, i - 1);
				FZ_CHECK(prev <= id);
				if (flags & BAM_GRAPH_F_NO_DUPLICATES)
					FZ_CHECK(prev < id);
			}
			if (flags & BAM_GRAPH_F_NO_SELF_LOOPS)
				FZ_CHECK(id != v);
			if ((flags & BAM_GRAPH_F_SYMMETRIC) && g->n_edges <= 4 * FZ_GRAPH_DEEP_MAX)
				FZ_CHECK(fz_has_arc(g, id, v));
		}
	}
}

/* The CPU reference algorithms on a valid graph (ids < n): BFS levels are a shortest-
 * path labelling from the source, CC labels are the smallest vertex of each weakly
 * connected component. */
static inline void fz_check_ref(const struct bam_csr *g)
{
	uint64_t n = g->n_vertices, nc = 0, roots = 0;
	uint32_t nl = 0, maxl = 0;

	if (n == 0 || n > FZ_GRAPH_DEEP_MAX)
		return;
	uint32_t *level = malloc(n * sizeof(*level));
	uint64_t *label = malloc(n * sizeof(*label));
	FZ_CHECK(level && label);
	uint64_t src = g->n_edges % n;
	FZ_CHECK(bam_ref_bfs(g, src, level, &nl) == 0);
	FZ_CHECK(level[src] == 0);
	for (uint64_t u = 0; u < n; u++) {
		if (level[u] == BAM_BFS_UNREACHED)
			continue;
		if (level[u] > maxl)
			maxl = level[u];
		for (uint64_t i = g->offsets[u]; i < g->offsets[u + 1]; i++)
			FZ_CHECK(level[bam_csr_edge(g, i)] <= level[u] + 1);
	}
	FZ_CHECK(nl == maxl + 1);
	FZ_CHECK(bam_ref_cc(g, label, &nc) == 0);
	for (uint64_t v = 0; v < n; v++) {
		FZ_CHECK(label[v] <= v);
		FZ_CHECK(label[label[v]] == label[v]);
		roots += label[v] == v;
		for (uint64_t i = g->offsets[v]; i < g->offsets[v + 1]; i++)
			FZ_CHECK(label[bam_csr_edge(g, i)] == label[v]);
	}
	FZ_CHECK(roots == nc);
	free(level);
	free(label);
}

#endif /* BAM_FUZZ_GRAPH_H */
