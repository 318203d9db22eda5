/* SPDX-License-Identifier: MIT */
/*
 * bam/stats.h - the counters the library keeps on the device side and the host API
 * reads back: per queue pair (summed per controller in bam_ctrl_stats, bam/bam.h) and
 * per array (bam_array_stats, bam/cache.h). Plain data, no functions.
 */
#ifndef BAM_STATS_H
#define BAM_STATS_H

#include "bam/defs.h"

/* Counters kept per queue pair (all monotonic, read by bam_ctx_ctrl_stats). */
struct bam_qpair_counters {
	uint64_t submitted;   /* SQEs made visible to the controller */
	uint64_t completed;   /* CQEs passed by the CQ head (a fill's CQE may wait for the
			       * next head move: bam_qpair_help_lazy) */
	uint64_t doorbells;   /* SQ tail doorbell writes (submitted/doorbells = batching) */
	uint64_t timeouts;    /* waits that gave up (-ETIMEDOUT) */
	uint64_t late;        /* CQEs that arrived for abandoned CIDs */
	uint64_t stray;       /* CQEs whose CID was not outstanding (a controller bug) */
};

/* Per-array statistics, device-side counters (bytes unless noted). */
struct bam_array_counters {
	uint64_t hits;            /* line lookups served from the cache (per group leader) */
	uint64_t misses;          /* line fills */
	uint64_t evictions;       /* lines of this array evicted */
	uint64_t writebacks;      /* dirty lines of this array written to storage */
	uint64_t bytes_requested; /* bytes the application read/wrote through the API
				   * (= accesses * elem_size: filled in by bam_array_stats) */
	uint64_t bytes_read;      /* bytes read from storage */
	uint64_t bytes_written;   /* bytes written to storage */
	uint64_t errors;          /* failed accesses */
	uint64_t accesses;        /* element accesses (threads) */
	uint64_t fills_avoided;   /* line misses for a whole-line store (BAM_ACQ_OVERWRITE):
				   * a slot taken without reading storage */
	uint64_t partial_write_fetches; /* line misses for a store into part of a line:
				   * the line read from storage first */
	uint64_t writeback_errors; /* write-backs that failed (the line kept dirty) */
};

#endif /* BAM_STATS_H */
