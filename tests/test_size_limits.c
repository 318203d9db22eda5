/* SPDX-License-Identifier: MIT */
/*
 * Sizes far above the machine's memory are refused up front, with -ENOMEM and a
 * message naming the size asked and the size available, before anything is allocated:
 * a cache (bam_cache_create, bam_cache_fits) and the emulator's DRAM media
 * (emu:size=, count=). Sizes that fit still work. CPU target.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "bam/cache.h"

#define TIB (1ull << 40)
#define QUICK_NS (2ull * 1000 * 1000 * 1000) /* "up front": far less than touching 1 TiB */

static uint64_t host_avail(void)
{
	uint64_t a = 0;
	assert_int_equal(bam_mem_available(BAM_TARGET_CPU, BAM_MEM_DEVICE, &a), 0);
	return a;
}

static void test_mem_available(void **state)
{
	(void)state;
	uint64_t a = host_avail(), b = 0;
	printf("host memory available: %llu bytes\n", (unsigned long long)a);
	assert_true(a >= (16ull << 20)); /* the tests here need more than that anyway */
	assert_int_equal(bam_mem_available(BAM_TARGET_CPU, BAM_MEM_HOST_PINNED, &b), 0);
	assert_true(b > 0);
	assert_int_equal(bam_mem_available(BAM_TARGET_AUTO, BAM_MEM_DEVICE, &b), -EINVAL);
}

static void test_cache_bytes_and_fits(void **state)
{
	(void)state;
	struct bam_cache_opts o = {.capacity = 64 << 10, .line_size = 4096};
	uint64_t b = bam_cache_bytes(&o);
	assert_true(b >= (64u << 10) + 16u * 20u && b < (64u << 10) + 16u * 20u + 4096u);
	/* lines over two pages carry a PRP list each */
	struct bam_cache_opts big = {.capacity = 1 << 20, .line_size = 65536};
	assert_true(bam_cache_bytes(&big) >= (1u << 20) + 16u * 4096u);
	struct bam_cache_opts bad = {.capacity = 100, .line_size = 4096};
	assert_int_equal(bam_cache_bytes(&bad), 0);
	bad.line_size = 3000;
	assert_int_equal(bam_cache_bytes(&bad), 0);

	char err[256] = "";
	assert_int_equal(bam_cache_fits(BAM_TARGET_CPU, &o, err, sizeof(err)), 0);
	struct bam_cache_opts huge = {.capacity = TIB, .line_size = 4096};
	assert_int_equal(bam_cache_fits(BAM_TARGET_CPU, &huge, err, sizeof(err)), -ENOMEM);
	printf("%s\n", err);
	assert_non_null(strstr(err, "1099511627776 bytes")); /* the size asked */
	assert_non_null(strstr(err, "available"));            /* and what there is */
	assert_int_equal(bam_cache_fits(BAM_TARGET_CPU, &huge, NULL, 0), -ENOMEM);
	assert_int_equal(bam_cache_fits(BAM_TARGET_AUTO, &o, err, sizeof(err)), -EINVAL);
	assert_int_equal(bam_cache_fits(BAM_TARGET_CPU, &bad, err, sizeof(err)), -EINVAL);
}

static void test_cache_create_refuses(void **state)
{
	(void)state;
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = 2, .queue_depth = 16, .quiet = 1};
	struct bam_ctx *ctx;
	char err[256];
	assert_int_equal(bam_ctx_open("emu:size=1M", &o, &ctx, err, sizeof(err)), 0);
	struct bam_cache *c = NULL;
	const struct bam_cache_opts refused[] = {
		{.capacity = TIB, .line_size = 4096},
		{.capacity = 64 * TIB, .line_size = 65536},
		{.capacity = host_avail() / 4096 * 4096 * 2, .line_size = 4096},
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		const struct bam_cache_opts co = refused[i];
		uint64_t t0 = bam_time_ns();
		assert_int_equal(bam_cache_create(ctx, &co, &c), -ENOMEM);
		assert_true(bam_time_ns() - t0 < QUICK_NS);
		assert_null(c);
	}
	/* what fits is still made, and works */
	struct bam_cache_opts co = {.capacity = 1 << 20, .line_size = 4096};
	assert_int_equal(bam_cache_create(ctx, &co, &c), 0);
	struct bam_array *a;
	struct bam_array_opts ao = {.n_elems = 1000, .elem_size = 8};
	assert_int_equal(bam_array_create(c, &ao, &a), 0);
	assert_int_equal(bam_array_write_u64(bam_array_dev(a), 999, 42), 0);
	uint64_t v = 0;
	assert_int_equal(bam_array_read_u64(bam_array_dev(a), 999, &v), 0);
	assert_int_equal(v, 42);
	bam_cache_destroy(c);
	bam_ctx_close(ctx);
}

static void test_emu_media_refused(void **state)
{
	(void)state;
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = 2, .queue_depth = 16, .quiet = 1};
	struct bam_ctx *ctx = NULL;
	char err[256] = "", be[128];
	uint64_t t0 = bam_time_ns();
	assert_int_equal(bam_ctx_open("emu:size=1T", &o, &ctx, err, sizeof(err)), -ENOMEM);
	assert_true(bam_time_ns() - t0 < QUICK_NS);
	printf("%s\n", err);
	assert_non_null(strstr(err, "1099511627776 bytes")); /* the size asked */
	assert_non_null(strstr(err, "available"));            /* and what there is */
	assert_null(ctx);
	/* each controller fits, all of them do not */
	uint64_t per = host_avail() / 2 / 4096 * 4096;
	snprintf(be, sizeof(be), "emu:count=4,size=%llu", (unsigned long long)per);
	assert_int_equal(bam_ctx_open(be, &o, &ctx, err, sizeof(err)), -ENOMEM);
	printf("%s\n", err);
	/* count x size past 2^64 */
	assert_int_equal(bam_ctx_open("emu:count=32,size=1048576T", &o, &ctx, err, sizeof(err)), -ENOMEM);
	/* sizes that fit open as before */
	assert_int_equal(bam_ctx_open("emu:count=2,size=16M", &o, &ctx, err, sizeof(err)), 0);
	bam_ctx_close(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mem_available),
		cmocka_unit_test(test_cache_bytes_and_fits),
		cmocka_unit_test(test_cache_create_refuses),
		cmocka_unit_test(test_emu_media_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
