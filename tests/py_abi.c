/* SPDX-License-Identifier: MIT */
/*
 * py_abi: the layout of every public structure the Python package declares with ctypes
 * (python/bam/_lib.py), one line per field: "STRUCT FIELD OFFSET SIZE", then
 * "STRUCT - 0 SIZEOF". python/tests/test_abi.py compares these with the ctypes
 * declarations, so a field added in C and not in Python fails a test instead of
 * corrupting memory.
 */
#include <stddef.h>
#include <stdio.h>

#include <bam/bam.h>
#include <bam/cache.h>
#include <bam/stats.h>

#define F(s, f) printf("%s %s %zu %zu\n", #s, #f, offsetof(struct s, f), sizeof(((struct s *)0)->f))
#define S(s) printf("%s - 0 %zu\n", #s, sizeof(struct s))

int main(void)
{
	F(bam_ctx_opts, target); F(bam_ctx_opts, qpairs); F(bam_ctx_opts, queue_depth);
	F(bam_ctx_opts, timeout_ns); F(bam_ctx_opts, ctrl_workers); F(bam_ctx_opts, quiet);
	S(bam_ctx_opts);
	F(bam_cache_opts, capacity); F(bam_cache_opts, line_size);
	S(bam_cache_opts);
	F(bam_array_opts, n_elems); F(bam_array_opts, elem_size); F(bam_array_opts, layout);
	F(bam_array_opts, n_ctrl); F(bam_array_opts, first_ctrl); F(bam_array_opts, base_lba);
	F(bam_array_opts, priority); F(bam_array_opts, read_only);
	S(bam_array_opts);
	F(bam_array_counters, hits); F(bam_array_counters, misses); F(bam_array_counters, evictions);
	F(bam_array_counters, writebacks); F(bam_array_counters, bytes_requested);
	F(bam_array_counters, bytes_read); F(bam_array_counters, bytes_written);
	F(bam_array_counters, errors); F(bam_array_counters, accesses);
	F(bam_array_counters, fills_avoided); F(bam_array_counters, partial_write_fetches);
	F(bam_array_counters, writeback_errors);
	S(bam_array_counters);
	F(bam_array_stats, c); F(bam_array_stats, amplification); F(bam_array_stats, hit_rate);
	S(bam_array_stats);
	F(bam_ns_info, nlba); F(bam_ns_info, lba_size); F(bam_ns_info, nsid); F(bam_ns_info, mqes);
	F(bam_ns_info, mdts_bytes); F(bam_ns_info, model);
	S(bam_ns_info);
	return 0;
}
